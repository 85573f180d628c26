/* embed.h - sentence embeddings: one vector per input sequence, pooled from
 * the hidden states of a model, as llama.cpp's llama-embedding computes
 * them.
 *
 * Two kinds of model:
 *   encoders (bert, nomic-bert): their own forward pass here, over the
 *     backend operation table: token (+ token type 0) (+ learned absolute
 *     position) embeddings, a biased LayerNorm, then post-norm blocks
 *     with non-causal attention (every token sees the whole input) and
 *     a GELU (bert) or SwiGLU (nomic-bert, with RoPE and a fused QKV)
 *     feed-forward; the result is the last block's output;
 *   decoders (every architecture lib/llm/model.h loads): the usual causal
 *     forward pass (lib/llm/llm.h with opts.embeddings); the result is the
 *     final hidden state after output_norm.
 * Pooling over the tokens of one input: the file's {arch}.pooling_type
 * unless the caller chooses (mean, the first token (CLS), the last token);
 * per-token output (none) and rerankers (rank) are not supported.
 *
 * Each input is its own sequence (no attention across inputs); an encoder
 * takes an input in one forward pass, so the backend's max_tokens must
 * hold the context (tern_embed_batch_needed says how much).
 *
 * Memory: tern_embed_init sizes and allocates everything (activations of
 * n_ctx tokens for an encoder; the llm's cache and buffers for a decoder);
 * tern_embed_run allocates nothing. */
#ifndef TERN_LLM_EMBED_H
#define TERN_LLM_EMBED_H

#include <stdbool.h>
#include <stdint.h>

#include "lib/backend.h"
#include "lib/core/error.h"
#include "lib/format/arch.h"
#include "lib/format/modelfile.h"

struct tern_model;

/* llama.cpp's enum llama_pooling_type: the values of {arch}.pooling_type */
enum tern_pooling {
	TERN_POOLING_UNSPECIFIED = -1, /* the file's */
	TERN_POOLING_NONE = 0,         /* one vector per token: not supported */
	TERN_POOLING_MEAN = 1,
	TERN_POOLING_CLS = 2,          /* the first token's */
	TERN_POOLING_LAST = 3,         /* the last token's */
	TERN_POOLING_RANK = 4,         /* a reranker's score: not supported */
};

/* "none", "mean", "cls", "last", "rank" ("unspecified" for -1, "?" else) */
const char *tern_pooling_name(int pooling);
/* the value of a name above, or -2 */
int tern_pooling_by_name(const char *name);

struct tern_embed_info {
	char arch[TERN_ARCH_NAME_MAX];
	bool encoder;         /* bert, nomic-bert: non-causal, own forward pass */
	uint32_t n_embd;      /* floats per embedding */
	uint32_t n_layer;
	uint32_t n_vocab;
	uint32_t n_ctx_train;
	int file_pooling;     /* {arch}.pooling_type, TERN_POOLING_NONE when absent (as llama.cpp) */
};

struct tern_embed_opts {
	int pooling;       /* TERN_POOLING_MEAN / CLS / LAST, or UNSPECIFIED: the file's */
	int32_t n_ctx;     /* longest input in tokens; 0: the trained context; < 0: that, at most 4096 */
	int32_t n_ubatch;  /* decoders: tokens per forward pass (0: min(512, max_tokens)); encoders: n_ctx */
	uint32_t type_k;   /* decoders: KV cache types (QT_F32, QT_F16, QT_Q8_0) */
	uint32_t type_v;
};

/* Pooling of the file, n_ctx -1, n_ubatch 0, f16 caches. */
struct tern_embed_opts tern_embed_opts_default(void);

struct tern_embed;

/* Whether arch is one of the encoders ("bert", "nomic-bert"). */
bool tern_embed_is_encoder(const char *arch);
/* "bert, nomic-bert" */
const char *tern_embed_encoders(void);

/* Load the model of mf (borrowed: it must outlive the embedder): config
 * and weight views, nothing on a backend yet. Errors as
 * tern_model_load's: TERN_EUNSUPPORTED for an architecture or type tern
 * cannot run, TERN_EFORMAT for a missing key or tensor, a wrong shape. */
int tern_embed_load(struct tern_embed **out, const tern_mf *mf, tern_err *e);
void tern_embed_free(struct tern_embed *em);
const struct tern_embed_info *tern_embed_info(const struct tern_embed *em);
/* A decoder's model (lib/llm/model.h: for memory estimates), NULL for an
 * encoder. */
const struct tern_model *tern_embed_model(const struct tern_embed *em);

/* The context o asks for, resolved (> 0), and the max_tokens the backend
 * must take for it (encoders: the context; decoders: the micro-batch, or
 * 0 when any will do). */
int32_t tern_embed_ctx_for(const struct tern_embed *em, const struct tern_embed_opts *o);
int64_t tern_embed_batch_needed(const struct tern_embed *em, const struct tern_embed_opts *o);

/* Prepare to run on be (borrowed; once per embedder). Errors: TERN_EINVAL
 * for a pooling that is not mean / cls / last after the file's choice
 * (the message says what the file declares), a backend whose max_tokens is
 * below what tern_embed_batch_needed says, bad cache types; TERN_ERANGE
 * for a context an encoder cannot take (bert: more than its position
 * table); TERN_ENOMEM; what the backend says about a weight. A failed
 * init releases what it allocated: it may be called again (on the CPU
 * after a device that refused the memory its budget promised). */
int tern_embed_init(struct tern_embed *em, struct tern_backend *be, const struct tern_embed_opts *o, tern_err *e);

int tern_embed_pooling(const struct tern_embed *em); /* as resolved by init */
int32_t tern_embed_n_ctx(const struct tern_embed *em); /* as resolved by init */

/* The pooled embedding (n_embd floats into out, not normalized) of one
 * input of n tokens. Errors: TERN_ERANGE when n exceeds the context (0
 * tokens: TERN_EINVAL), TERN_EINVAL for an id outside the vocabulary,
 * what the backend's sync reports. */
int tern_embed_run(struct tern_embed *em, const int32_t *ids, int32_t n, float *out, tern_err *e);

/* llama.cpp's --embd-normalize: in place over v[n]: -1 none; 0 max
 * absolute value scaled to 32760 (an int16 range); 1 taxicab; 2
 * Euclidean (L2, the default of llama-embedding); p > 2 the p-norm. A
 * zero vector stays zero. */
void tern_embed_normalize(float *v, int32_t n, int mode);

/* cos(a, b) in double; 0 when either is zero */
double tern_embed_cosine(const float *a, const float *b, int32_t n);

#endif
