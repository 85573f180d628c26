/* llm.h - a language model ready to run: the model (lib/llm/model.h), a
 * backend (lib/backend.h) or two (partial offload: opts.dev), the KV
 * cache and the activations of one forward pass. The forward pass is written once, over the backend's
 * operation table; the CPU runs it now, the GPUs will.
 *
 * Memory: everything is sized and allocated by tern_llm_new (the KV cache
 * for n_ctx positions of every layer, the activations of n_ubatch tokens,
 * the logits); tern_llm_decode allocates nothing.
 *
 * The sequence: tern_llm_decode appends tokens at positions n_past ..
 * n_past + n - 1 and computes the logits of the last one (of every one
 * with logits_all). Prompts longer than n_ubatch go through in chunks of
 * n_ubatch tokens (the GEMM path); one token goes through the mat-vec
 * path. The result does not depend on the thread count: every product
 * and reduction sums in an order fixed by the shapes alone. */
#ifndef TERN_LLM_H
#define TERN_LLM_H

#include <stdbool.h>
#include <stdint.h>

#include "lib/backend.h"
#include "lib/core/error.h"
#include "lib/llm/model.h"

/* Small tensors a model reads at every step (norms, biases) that
 * tern_llm_weight copies out of the file's mapping. */
#define TERN_LLM_COPY_MAX ((size_t)1 << 20)

/* Tensor t of a model file (NULL: nothing to do) as the weight buffer b
 * of be, prepared for the products when product; mapped: t's data is the
 * file's mapping (tern_mf_mapped), which the buffer then says
 * (TERN_BUF_MAPPED). Of a mapping, a tensor that is not a product and
 * holds at most TERN_LLM_COPY_MAX bytes is copied into the backend's
 * memory: once the products have their own copies (a re-laid matrix), the
 * file's pages around it are then never read again. The kernel may map a
 * whole large page-cache folio (2 MiB) on one read, bringing back the
 * pages of the products beside it; loaders therefore load these tensors
 * before the products. The models' page-cache policy, not the backends'.
 * Errors name the tensor. */
int tern_llm_weight(struct tern_backend *be, struct tern_buf *b, const struct tern_tensor_view *t, bool product,
		    bool mapped, tern_err *e);

/* the default context when the user does not ask for one */
#define TERN_LLM_DEFAULT_CTX 4096
#define TERN_LLM_DEFAULT_BATCH 512

struct tern_llm_opts {
	int32_t n_ctx;    /* positions; 0: the trained context; < 0: min(trained, TERN_LLM_DEFAULT_CTX) */
	int32_t n_ubatch; /* tokens per forward pass, 1..be->max_tokens; 0: min(512, be->max_tokens);
			   * at most n_ctx in any case (tern_llm_n_ubatch: as resolved) */
	uint32_t type_k;  /* KV cache element types: QT_F32, QT_F16 or QT_Q8_0 */
	uint32_t type_v;
	bool logits_all;  /* keep the logits of every token of a decode call (n_ubatch rows), not only the last */
	bool embeddings;  /* no logits: keep every token's final hidden state (after output_norm), the
			   * embeddings lib/llm/embed.h pools; a decode call then takes at most n_ubatch */
	bool ggml_fa;     /* a micro-batch of fewer than TERN_LLM_GGML_FA_TILE tokens over f16 caches
			   * attends as ggml's CPU flash attention does (struct tern_attn's f16_split
			   * 1: the query rounded to f16, the running sum of V rows kept in f16) where
			   * the layer allows it (head_dim a multiple of 16, K and V heads alike, no
			   * window, soft-cap or sinks); the embeddings set it to agree with
			   * llama.cpp's (lib/llm/embed.c). Else, and by default, the attention sums
			   * in f32. */
	bool ggml_ops;    /* the dense layers' products (the backend's mat_mul_ggml, slower), the RMS
			   * norms and RoPE rounded as ggml's x86 CPU backend rounds them (lib/backend.h:
			   * struct tern_norm's and tern_rope's ggml), the same bits under every SIMD
			   * variant; the embeddings set it. Off by default: generation keeps its own.
			   * ggml_fa and ggml_ops are ggml's CPU rounding: a backend without
			   * TERN_BACKEND_GGML_NUMERICS (a GPU's) runs the plain ops instead */
	/* Partial offload (llama.cpp's -ngl; gpu/plan.h sizes it): the last
	 * n_dev_layers blocks (il >= n_layer - n_dev_layers), each with its KV
	 * cache, and the output head with dev_output, run on dev; the token
	 * embedding and the other blocks on the backend given to tern_llm_new.
	 * The residual stream is copied between them through host memory
	 * where the layers change backend. dev NULL (the default), or nothing
	 * placed on it: everything on the one backend. dev is borrowed. */
	struct tern_backend *dev;
	int32_t n_dev_layers; /* 0..n_layer */
	bool dev_output;
};

/* ggml's flash attention takes the queries of a batch of at least this
 * many tokens in tiles, summing in f32 (GGML_FA_TILE_Q) */
#define TERN_LLM_GGML_FA_TILE 64

/* n_ctx -1, n_ubatch 0, f16 caches, logits of the last token only. */
struct tern_llm_opts tern_llm_opts_default(void);

struct tern_llm;

/* Prepare model m (borrowed: it must outlive the llm) to run on be
 * (borrowed too; be->max_tokens bounds n_ubatch). Errors: TERN_EINVAL for
 * bad options (a cache type other than f32/f16/q8_0, or q8_0 with a head
 * size that is not a multiple of 32), TERN_ENOMEM when the cache and the
 * activations do not fit (the message says how many bytes), what the
 * backend reports for a weight it cannot prepare. */
int tern_llm_new(struct tern_llm **out, const struct tern_model *m, struct tern_backend *be,
		 const struct tern_llm_opts *o, tern_err *e);
void tern_llm_free(struct tern_llm *l);

/* Append n >= 1 tokens and run them through the model. Errors: TERN_ERANGE
 * when n_past + n exceeds n_ctx (nothing is appended), TERN_EINVAL for a
 * token id outside the vocabulary, what the backend's sync reports. On
 * error the cache may hold partial rows past n_past: n_past is unchanged,
 * so the next decode overwrites them. */
int tern_llm_decode(struct tern_llm *l, const int32_t *tokens, int32_t n, tern_err *e);

/* Logits (n_vocab floats, after the final soft-cap where the architecture
 * has one, before any sampling) of token i of the last decode call:
 * i = -1 (or n - 1) is the last token, the only one kept unless
 * logits_all (then 0 <= i < min(n, n_ubatch) of the last chunk: with
 * logits_all a decode call takes at most n_ubatch tokens). NULL before
 * any decode, for an i not kept, and with opts.embeddings (no logits). */
const float *tern_llm_logits(const struct tern_llm *l, int32_t i);

/* Greedy decoding on the device: while on, a decode call that would keep
 * the last token's logits computes their argmax where they are (the
 * backend's argmax: the sampler's greedy rule) and brings back that id
 * alone, not n_vocab floats (a GPU's greedy token costs no logits
 * download); tern_llm_logits is then NULL. Without logits_all and
 * embeddings only (else it does nothing). */
void tern_llm_set_greedy(struct tern_llm *l, bool on);
/* After a greedy decode call: true and *id the last token's argmax (-1
 * when every logit is -inf or NaN); false when the last call kept
 * logits instead (or none yet). */
bool tern_llm_greedy_id(const struct tern_llm *l, int32_t *id);

/* With opts.embeddings: the final hidden state (n_embd floats, after the
 * output norm: llama.cpp's "result_norm") of token i, 0 <= i < n, of the
 * last decode call; NULL otherwise. */
const float *tern_llm_embedding(const struct tern_llm *l, int32_t i);

int32_t tern_llm_n_past(const struct tern_llm *l);
int32_t tern_llm_n_ctx(const struct tern_llm *l);
/* The micro-batch as resolved: tokens per forward pass (<= n_ctx). */
int32_t tern_llm_n_ubatch(const struct tern_llm *l);
int32_t tern_llm_n_vocab(const struct tern_llm *l);
const struct tern_model *tern_llm_model(const struct tern_llm *l);
/* Bytes of the KV cache (for reports and memory checks). */
uint64_t tern_llm_kv_bytes(const struct tern_llm *l);

/* Bytes tern_llm_new allocates for a context of n_ctx positions and
 * forward passes of n_ubatch tokens (both as resolved: > 0; n_ubatch at
 * most n_ctx, as tern_llm_new clamps it), from the
 * shapes alone, so that a caller can refuse what does not fit before
 * anything is allocated: the KV cache (also in *kv when kv is not NULL),
 * the activations and the logits (n_ubatch rows with logits_all). The
 * backend's own scratch is not counted. */
uint64_t tern_llm_memory_estimate(const struct tern_model_config *c, int64_t n_ctx, int64_t n_ubatch,
				  uint32_t type_k, uint32_t type_v, bool logits_all, uint64_t *kv);

/* What the memory planner (gpu/plan.h) weighs, from the shapes and the
 * file's tensor sizes, before anything is allocated, for options o (their
 * n_ctx and n_ubatch resolved as tern_llm_new resolves them, with
 * max_tokens the smaller of the two backends'): per block its weights as
 * stored (weights[n_layer]) and its KV cache (kv[n_layer]); the output
 * head (output norm and matrix, the token embedding when tied); the
 * activations one backend holds. Errors: tern_llm_new's for bad options. */
int tern_llm_offload_sizes(const struct tern_model *m, const struct tern_llm_opts *o, int64_t max_tokens,
			   uint64_t *weights, uint64_t *kv, uint64_t *output, uint64_t *scratch, tern_err *e);

/* Forget positions n_past.. (0 <= n_past <= current): the next decode
 * continues from there (chat reuses a common prefix this way). */
void tern_llm_rewind(struct tern_llm *l, int32_t n_past);

/* A KV cache type by llama.cpp's name ("f32", "f16", "q8_0"): its QT_*
 * value, or -1. */
int tern_llm_cache_type(const char *name);

#endif
