/* backend.h - the operation table every backend implements (DESIGN.md,
 * "Backends"). The forward passes (LLM, Whisper, Silero) are written once
 * over it; the CPU implements it twice (lib/cpu: a scalar reference, the
 * oracle, and the optimized backend), CUDA and Vulkan next.
 *
 * What exists: buffers, transfers, the quantized products (product)
 * and what a llama / qwen2 / qwen3 / gemma3 forward pass needs
 * besides: embedding rows (get_rows), RMS and layer norm with an optional
 * fused residual add (norm; over a [tokens x heads][head_dim] view it is
 * the Q/K norm), RoPE in both orderings with linear scaling, llama3's
 * frequency factors or LongRoPE's, LongRoPE's attention factor and YaRN
 * (rope), a layer's Q/K norm and RoPE of Q and K fused into one call
 * (norm_rope), the KV cache store in f32, f16 or
 * q8_0 (kv_store), attention over that cache (causal, GQA, sliding
 * window, soft-cap, V heads narrower than K's, V read from a column window
 * of the K cache as multi-head latent attention does; online softmax,
 * memory linear in the prompt), per-head products (mat_mul_heads, MLA's
 * absorbed projections), gated
 * and plain activations (glu, unary), add (with a broadcast bias row),
 * scale, softmax, argmax (a greedy token without downloading the logits)
 * and copy (also between column windows of wider rows,
 * tern_buf_cols); for Whisper's encoder the rows of a 1-D
 * convolution (im2col); for a mixture of experts the router (moe_route),
 * the experts' products over the selected experts only (mat_mul_id) and
 * their weighted sum (moe_combine), and attention sinks (gpt-oss). A new
 * op is one more function pointer below,
 * with the same contract, and one more check in tests/test_backend_ops.c.
 *
 * Shapes: ne[0] is the row; "rows" are everything above it, contiguous
 * (tern_buf_reshape makes such views). Activations are f32. The
 * convention of the attention tensors: q, y [ntok][n_head][head_dim]
 * (ne = {head_dim, n_head, ntok}); a layer's K or V cache [n_ctx]
 * [n_head_kv][head_dim] (ne = {head_dim, n_head_kv, n_ctx}), the row of
 * position p being token p of the sequence (no ring buffer: n_ctx bounds
 * the sequence).
 *
 * Shaped for GPUs:
 *   - tensors passed to ops are backend buffers with a type and a shape,
 *     never host pointers, so that a GPU keeps everything resident;
 *   - ops enqueue and return; sync() waits for them (on the CPU they run
 *     before returning and sync() only reports);
 *   - begin_step() / end_step() bracket one decode step, which a GPU may
 *     capture once and replay (a CUDA graph, a Vulkan command buffer).
 *     The replay rule: between begin_step and end_step the calls and
 *     their arguments are the same every step of a decode loop: the same
 *     ops in the same order, the same buffers (storage, offset, type,
 *     shape), the same parameter structs, the same host memory given to
 *     upload / download (from host_alloc: pinned on a GPU). Only the data
 *     uploaded into device buffers changes (token ids, positions,
 *     lengths, sequence indices), never an argument. A caller that
 *     changes what a step is (another token count, other sequences)
 *     starts another kind of step: a backend that replays compares a
 *     step's calls with its recording and records anew when they differ.
 *     tests/rec_backend.c checks the rule on every forward pass.
 *
 * Contract (who may fail, who owns what):
 *   - Creation, buf_alloc, buf_weight and mat_prepare happen at load time:
 *     they may fail (TERN_E* code and a message naming the tensor) and may
 *     allocate. Everything a step needs (scratch, prepared weights) is
 *     sized and allocated there.
 *   - Per-step ops (transfers, products, begin/end_step) return nothing
 *     and allocate nothing. A call that breaks its preconditions (shapes
 *     that do not match, a weight not prepared) is a bug of the caller: the
 *     op is skipped and the next sync() returns TERN_EINVAL with a message;
 *     a GPU also reports a device fault there. Results are defined only
 *     after a sync() that returned 0.
 *   - The backend owns the storage of the buffers it allocated; buf_free()
 *     releases it and the buffer's prepared form. A weight buffer may be a
 *     view into the model file's mapping (TERN_BACKEND_HOST_MEMORY): the
 *     mapping must then outlive it, and nothing writes to it. Views made by
 *     tern_buf_rows() own nothing and must not outlive their buffer.
 *     A struct copy of a buffer shares its storage and prepared form:
 *     free exactly one of them.
 *   - Host memory given to upload() / download() must stay valid until
 *     the next sync() returns; download()'s destination is filled then.
 *   - One thread drives a backend at a time. */
#ifndef TERN_BACKEND_H
#define TERN_BACKEND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/core/error.h"
#include "lib/format/tensor.h"
#include "quant/types.h"

struct tern_backend;

/* tern_buf.flags */
enum {
	TERN_BUF_OWNS = 1u << 0,     /* allocated by the backend: buf_free() releases it */
	TERN_BUF_READONLY = 1u << 1, /* a weight: never written (it may be the model file) */
	/* a weight whose storage is the model file's mapping (tern_map_file):
	 * a backend that keeps its own copy (a GPU's upload, a re-laid
	 * matrix) may drop its pages from memory (tern_map_drop) */
	TERN_BUF_MAPPED = 1u << 2,
};

/* A tensor in a backend's memory: a handle, a type and a shape. Copying the
 * struct copies the handle, not the data. */
struct tern_buf {
	struct tern_backend *be;   /* the backend whose memory holds it */
	void *mem;                 /* backend's storage handle (CPU: the host address of byte 0) */
	size_t offset;             /* bytes from mem to element 0 */
	uint32_t type;             /* enum quant_type of the elements */
	int64_t ne[TERN_MAX_DIMS]; /* elements per dimension, ne[0] the row length; unused dims are 1 */
	size_t nb[TERN_MAX_DIMS];  /* nb[0]: bytes per block of the type; nb[i]: bytes from index i to i + 1 */
	unsigned flags;            /* TERN_BUF_* */
	void *prep;                /* backend's prepared form of a weight (mat_prepare), or NULL */
};

/* tern_backend.caps */
enum {
	TERN_BACKEND_HOST_MEMORY = 1u << 0, /* buffers are host memory: tern_buf_host() is their address */
	TERN_BACKEND_ASYNC = 1u << 1,       /* ops return before the work is done; sync() waits */
	TERN_BACKEND_GRAPH = 1u << 2,       /* begin_step / end_step record a replayable step */
	TERN_BACKEND_REFERENCE = 1u << 3,   /* the scalar oracle the others are tested against */
	TERN_BACKEND_GGML_NUMERICS = 1u << 4, /* takes ggml's CPU rounding requests: below */
};

/* ggml's CPU rounding, a capability (TERN_BACKEND_GGML_NUMERICS). To agree
 * bit for bit with whisper.cpp's and llama.cpp's CPU numbers (Whisper's
 * transcripts, the embeddings' reference data), a caller may ask an op to
 * round as ggml's CPU backend does:
 *   - tern_norm.ggml, tern_rope.ggml, tern_attn.ggml: as its AVX-512 build;
 *   - tern_attn.f16_split > 0: its f16 flash attention, split as over its
 *     threads (the split is the CPU's thread count, a CPU fact);
 *   - TERN_UNARY_GELU_F16: its f16 table GELU;
 *   - mat_mul_ggml: its quantized products' order.
 * Only a backend with the capability takes them (the CPU backends: the
 * optimized one gives ggml's bits, the reference computes them in its
 * own precision except the f16 roundings, which it reproduces). A backend
 * without it (a GPU's) treats every such request as a contract violation:
 * the op is skipped and the next sync() fails. Callers therefore choose
 * their numerics from the backend they got (lib/speech's Whisper,
 * lib/llm/embed.c, tern_llm_opts' ggml_fa and ggml_ops): with the
 * capability ggml's roundings, without it the plain f32 ops
 * (TERN_UNARY_GELU, no f16_split, no .ggml, product for mat_mul_ggml). */

/* norm: kind */
enum { TERN_NORM_RMS, TERN_NORM_LAYER };

struct tern_norm {
	int kind;  /* TERN_NORM_* */
	float eps;
	bool ggml; /* as ggml's CPU backend (its AVX-512 build) rounds it, the same
		    * bits in every SIMD variant, for the embeddings (lib/llm/embed.c;
		    * TERN_BACKEND_GGML_NUMERICS only):
		    * RMS: the squares summed in double, then f32; layer: the mean
		    * from a double sum, the squares in 16-lane trees added in
		    * double (lib/cpu/ops_kern.inc) */
};

/* rope: the pair (i, i + 1) (TERN_ROPE_NORMAL, llama) or (i, i + n_rot / 2)
 * (TERN_ROPE_NEOX: qwen2, qwen3, gemma3) of the first n_rot dimensions of
 * each head turns by theta_j = freq_scale * e_j, e_j = pos /
 * (freq_base^(2j / n_rot) * freq[j]) for pair j (freq[j] = 1 without
 * factors); dimensions from n_rot on are left alone (and not scaled).
 * YaRN (ext_factor > 0) mixes in the unscaled angle: r_j = ext_factor *
 * (1 - clamp((j - corr_low) / max(0.001, corr_high - corr_low), 0, 1)),
 * theta_j = freq_scale * e_j * (1 - r_j) + e_j * r_j. The turned pair is
 * multiplied by mscale * attn_factor (YaRN's magnitude and LongRoPE's
 * attention factor; 0 stands for 1 in each). As llama.cpp's rope, which
 * takes the product as its one attn_factor and whose own extra factor
 * (1 + 0.1 ln(1 / freq_scale)) with YaRN the caller folds into mscale. */
enum { TERN_ROPE_NORMAL, TERN_ROPE_NEOX };

struct tern_rope {
	int mode;         /* TERN_ROPE_* */
	int n_rot;        /* even, 2..head_dim */
	float freq_base;  /* 10000, 500000, 1e6 ... */
	float freq_scale; /* 1 / the linear scaling factor; 1 without */
	float ext_factor; /* YaRN's extrapolation mix, 0..1; 0: none */
	float corr_low, corr_high; /* YaRN's ramp between these pairs (ggml_rope_yarn_corr_dims) */
	float mscale;     /* magnitude of the turned pairs; 0: 1 */
	float attn_factor; /* multiplies cos and sin of every pair (LongRoPE's attention factor,
			    * as llama.cpp's ggml_rope_ext applies it); 0 is taken as 1 */
	bool ggml;        /* (TERN_BACKEND_GGML_NUMERICS) turn a pair (a, b) as ggml's CPU backend compiles it: (fma(a, c,
			   * -(b s)), fma(a, s, b c)), the same bits in every SIMD variant; for
			   * the embeddings. Else a c - b s, a s + b c, each product rounded */
};

/* attention */
struct tern_attn {
	float scale;    /* usually 1 / sqrt(head_dim) */
	int32_t window; /* sliding window in tokens; 0: none */
	float softcap;  /* logits become softcap * tanh(logit / softcap); 0: none */
	/* > 0 (TERN_BACKEND_GGML_NUMERICS): ggml's CPU flash attention over f16 caches, for whisper.cpp's
	 * numbers (head_dim a multiple of 16, K and V f16, no window or
	 * softcap): the query is rounded to f16; each key's score is its f16
	 * dot times scale; the online softmax's running sum of V rows is kept
	 * in f16, rounded after every rescale and every added row; the cache's
	 * rows are cut into f16_split chunks of ceil(n_ctx / f16_split) rows,
	 * each so summed, and the chunks combined in f32 in order (ggml's split
	 * of one token's keys over its threads). 0: the usual f32 attention. */
	int32_t f16_split;
	/* (TERN_BACKEND_GGML_NUMERICS) With f16 caches, a head of 16k, no window, softcap or sinks: ggml's
	 * CPU flash attention as its AVX-512 build rounds it, the same bits
	 * in every SIMD variant (for the embeddings; whisper keeps
	 * f16_split's own sums). With f16_split (ggml's path below 64 tokens)
	 * the scores' dot summed in ggml_vec_dot_f16's order and every
	 * multiply-add of the sums fused; without (its tiled path, 64 tokens
	 * or more) the query in f32, keys in tiles of 64, the scores and the
	 * weighted sums of V as sequential fused sums, the weights by
	 * ggml_v_expf (lib/cpu/ops_kern.inc). */
	bool ggml;
	/* f32 [n_head] or NULL: per query head a logit (not scaled, not
	 * capped) that joins the softmax's denominator with no value row
	 * (gpt-oss's attention sinks): the weights of the keys then sum to
	 * less than 1 */
	const struct tern_buf *sinks;
};

/* moe_route: how the router's logits become expert probabilities */
enum {
	TERN_MOE_SOFTMAX,      /* softmax over all experts (Mixtral, Qwen-MoE) */
	TERN_MOE_SIGMOID,      /* each expert's sigmoid (DeepSeek-V3) */
	TERN_MOE_SOFTMAX_TOPK, /* select on the logits, softmax over the k selected (gpt-oss) */
};

/* experts one token may select (the slots of mat_mul_id and moe_combine) */
#define TERN_MOE_MAX_USED 64

/* The router of a mixture of experts, per token (llama.cpp's
 * build_moe_ffn): p = gating(logits); the selection scores are p + bias
 * (the bias, DeepSeek-V3's exp_probs_b, only steers the choice); with
 * groups, the n_expert experts form n_group equal groups, a group's score
 * is the sum of its two best selection scores, and only the experts of the
 * n_group_used best groups compete; the k best selection scores win (ties:
 * the lower index), in decreasing order. Their weights are p of the
 * winners (TERN_MOE_SOFTMAX_TOPK: the softmax of their logits), divided by
 * their sum if norm (the sum clamped below at 6.103515625e-5), then times
 * scale. */
struct tern_moe_route {
	int gating;       /* TERN_MOE_* */
	int k;            /* experts per token, 1..min(n_expert, TERN_MOE_MAX_USED) */
	bool norm;        /* normalize the selected weights to sum 1 */
	float scale;      /* multiply the weights (1: none) */
	int n_group;      /* groups of experts; 0 or 1: none */
	int n_group_used; /* groups that compete, 1..n_group */
};

/* im2col: a 1-D convolution's geometry */
struct tern_conv {
	int k;      /* kernel width, 1..64 */
	int stride; /* 1..64 */
	int pad;    /* zeros on each side, 0..k-1 */
};

/* glu: kind. TERN_GLU_SWIGLU_OAI is gpt-oss's clamped SwiGLU:
 * g = min(gate, 7), u = clamp(up, -7, 7), y = g * sigmoid(1.702 g) * (u + 1) */
enum { TERN_GLU_SWIGLU, TERN_GLU_GEGLU, TERN_GLU_SWIGLU_OAI };
/* unary: kind. TERN_UNARY_GELU_F16 (TERN_BACKEND_GGML_NUMERICS) is the tanh GELU as ggml's CPU computes
 * it (whisper.cpp's numbers): x <= -10 gives 0, x >= 10 gives x, else x is
 * rounded to f16 and the f32 GELU of that value, rounded to f16 again, is
 * the result (ggml looks it up in a table of the 65,536 halves). */
enum { TERN_UNARY_GELU, TERN_UNARY_GELU_ERF, TERN_UNARY_SILU, TERN_UNARY_GELU_F16, TERN_UNARY_SIGMOID };

/* weights one product call takes */
#define TERN_MAT_VEC_N 4

/* head dimensions the attention takes (its per-row state is fixed):
 * DeepSeek's MLA attends with kv_lora_rank 512 + 64 RoPE dimensions */
#define TERN_ATTN_MAX_HEAD_DIM 576

struct tern_backend {
	const char *name;   /* "cpu", "cpu-ref", later "cuda", "vulkan" */
	unsigned caps;      /* TERN_BACKEND_* */
	int64_t max_tokens; /* largest batch product() takes, fixed at creation */

	/* Release everything the backend allocated, its buffers excepted
	 * (free those first). */
	void (*free)(struct tern_backend *be);

	/* ---- buffers (load time: may fail, may allocate) ---- */

	/* A new buffer of type and shape (n_dims 1..TERN_MAX_DIMS, ne[0] a
	 * multiple of the type's block), contents undefined. */
	int (*buf_alloc)(struct tern_backend *be, struct tern_buf *b, uint32_t type, int n_dims, const int64_t *ne,
			 tern_err *err);
	/* A read-only buffer holding a model file's tensor: on the CPU a view
	 * of t->data (no copy), on a GPU a copy uploaded once. */
	int (*buf_weight)(struct tern_backend *be, struct tern_buf *b, const struct tern_tensor_view *t,
			  tern_err *err);
	/* Release b (storage if TERN_BUF_OWNS, and the prepared form); b is
	 * left empty. Safe on an empty buffer. */
	void (*buf_free)(struct tern_backend *be, struct tern_buf *b);
	/* Prepare a 2-D weight ([rows][cols], ne[1] rows of ne[0]) for
	 * product, or a 3-D stack of experts ([n_expert][rows]
	 * [cols], ne = {cols, rows, n_expert}, whose experts may lie apart:
	 * nb[2] larger than its rows, the gate or up half of a merged
	 * ffn_gate_up_exps) for mat_mul_id (a 2-D weight
	 * is one expert): check its type and shape, size the backend's
	 * scratch for max_tokens, repack if the backend does.
	 * TERN_EUNSUPPORTED for a type without a product. */
	int (*mat_prepare)(struct tern_backend *be, struct tern_buf *w, tern_err *err);

	/* Host memory of size bytes (64-byte aligned) for a step's transfers
	 * (token ids and positions up, logits down): pinned where the device
	 * copies from it directly (a GPU's page-locked memory, which a
	 * captured step's copies need), an aligned allocation on the CPU.
	 * Load time: may fail. host_free() releases it; NULL is safe. */
	int (*host_alloc)(struct tern_backend *be, size_t size, void **ptr, tern_err *err);
	void (*host_free)(struct tern_backend *be, void *ptr);

	/* ---- transfers (enqueued) ---- */

	/* n bytes from host src to dst at byte offset (from element 0). */
	void (*upload)(struct tern_backend *be, struct tern_buf *dst, size_t offset, const void *src, size_t n);
	/* n bytes of src at byte offset to host dst. */
	void (*download)(struct tern_backend *be, const struct tern_buf *src, size_t offset, void *dst, size_t n);

	/* ---- operations (per step: cannot fail, allocate nothing) ---- */

	/* y[i] = w[i] x for n_w (1..TERN_MAT_VEC_N) prepared weights that
	 * take the same input: x f32 {cols, ntok}, y[i] f32 {rows_i, ntok},
	 * contiguous, ntok = x->ne[1] in 1..max_tokens. The backend chooses
	 * how: the CPU takes one token through its mat-vec path (several
	 * weights in one step: a decode step's Q, K and V, its gate and up,
	 * the activations quantized once and the threads woken once; each y[i]
	 * the bits of its own call), a batch through the GEMM. */
	void (*product)(struct tern_backend *be, int n_w, const struct tern_buf *const *w, const struct tern_buf *x,
			struct tern_buf *const *y);
	/* product of one weight rounded as ggml's x86 CPU backend (llama.cpp's
	 * default) rounds it, where quant/ggml_order.h has the weight's type
	 * (the same bits under every SIMD variant; slower than product), else
	 * product itself; for one token or many. A TERN_BACKEND_GGML_NUMERICS
	 * request (see there). */
	void (*mat_mul_ggml)(struct tern_backend *be, const struct tern_buf *w, const struct tern_buf *x,
			     struct tern_buf *y);
	/* y[t][h] = w[h] x[t][h] for every token t and head h, one matrix
	 * per head: w a 3-D weight {cols, rows, n_head} as buf_weight made
	 * it (any type mat_prepare takes; not prepared), whose heads may lie
	 * apart (nb[2] larger than its rows: the heads of a wider matrix);
	 * x f32 {cols, n_head, ntok}, y f32 {rows, n_head, ntok}, contiguous;
	 * ntok 1..max_tokens. Multi-head
	 * latent attention's absorbed projections (W_kb^T into the query,
	 * W_vb out of the latent). */
	void (*mat_mul_heads)(struct tern_backend *be, const struct tern_buf *w, const struct tern_buf *x,
			      struct tern_buf *y);

	/* The experts' products of a mixture of experts: y[t][i] = w[e] x[t]
	 * [i or 0] (+ b[e]), e = ids[t][i], for the k experts token t
	 * selected. w a prepared stack {cols, rows, n_expert}; x f32 {cols,
	 * n_x, ntok}, n_x = 1 (every slot of a token takes the same input: the
	 * gate and up products) or k (slot i its own: the down product); ids
	 * i32 {k, ntok} (k 1..TERN_MOE_MAX_USED) as moe_route wrote them; b
	 * f32 {rows, n_expert} or NULL (gpt-oss's expert biases); y f32 {rows,
	 * k, ntok}; ntok 1..max_tokens. Only the selected experts' weights are
	 * read: for one token, k mat-vecs; for a batch, the tokens are grouped
	 * by expert so that each selected expert's weights go once through the
	 * GEMM. An id outside 0..n_expert-1 is a violation (its row of y is
	 * left as it was). */
	void (*mat_mul_id)(struct tern_backend *be, const struct tern_buf *w, const struct tern_buf *x,
			   const struct tern_buf *ids, const struct tern_buf *b, struct tern_buf *y);
	/* The router of a mixture of experts (struct tern_moe_route): logits
	 * f32 {n_expert, ntok}; bias f32 {n_expert} or NULL; ids i32 {k, ntok}
	 * and weights f32 {k, ntok} are written. */
	void (*moe_route)(struct tern_backend *be, const struct tern_buf *logits, const struct tern_buf *bias,
			  struct tern_buf *ids, struct tern_buf *weights, const struct tern_moe_route *p);
	/* y[t] = sum over i of w[t][i] x[t][i], summed in slot order: x f32
	 * {n, k, ntok}, w f32 {k, ntok}, y f32 {n, ntok}; y must not overlap
	 * x. */
	void (*moe_combine)(struct tern_backend *be, const struct tern_buf *x, const struct tern_buf *w,
			    struct tern_buf *y);

	/* y[t] = row ids[t] of w, decoded to f32: w [rows][cols] of any
	 * type, ids i32 [ntok], y f32 [ntok][cols]. An id outside w is a
	 * violation (the row is left as it was). */
	void (*get_rows)(struct tern_backend *be, const struct tern_buf *w, const struct tern_buf *ids,
			 struct tern_buf *y);
	/* Per row of x: if r, x += r first (x is written back: the fused
	 * residual add); then y = norm(x) (* w) (+ b), norm TERN_NORM_RMS
	 * (x / sqrt(mean(x^2) + eps)) or TERN_NORM_LAYER ((x - mean) /
	 * sqrt(var + eps)); w, b f32 [ne0] or NULL. x, r, y f32, same shape;
	 * y may be x. */
	void (*norm)(struct tern_backend *be, struct tern_buf *x, const struct tern_buf *r, const struct tern_buf *w,
		     const struct tern_buf *b, struct tern_buf *y, const struct tern_norm *p);
	/* Rotate x in place: x f32 {head_dim, n_head, ntok}, pos i32 [ntok];
	 * see struct tern_rope. freq f32 [n_rot / 2] or NULL (llama3's
	 * rope_freqs: divides the frequencies). */
	void (*rope)(struct tern_backend *be, struct tern_buf *x, const struct tern_buf *pos, const struct tern_buf *freq,
		     const struct tern_rope *p);
	/* A layer's Q and K, each RMS- or layer-normed per head and then
	 * rotated, in one call (Qwen3's, Gemma 3's, OLMo2's Q/K norm; a GPU's
	 * one dispatch where the separate ops take up to four): for x = q,
	 * then x = k, each head of x becomes norm(head) * xw (xw = qw for q,
	 * kw for k; no residual, no bias) when xw is given, then rope(x) as
	 * rope above. q f32 {head_dim, n_head, ntok}; k f32 {head_dim,
	 * n_head_kv, ntok} (any head count: GQA) or NULL (q alone); qw, kw f32
	 * [head_dim] or NULL (that tensor is not normed); pos, freq, p as
	 * rope's; n the norm (kind, eps, ggml) or NULL when neither weight is
	 * given. q and k are rotated in place and must not overlap. Its
	 * result is, bit for bit on each backend, that backend's norm(x, NULL,
	 * xw, NULL, x, n) followed by its rope(x, pos, freq, p) for each of q
	 * and k (a GPU's kernel shares their code: the same operations in the
	 * same order; tests/test_backend_ops.c compares the bits on every
	 * device it runs): the CPU's numbers, checked against llama.cpp's, do
	 * not move, and the ggml flags of n and p mean what they mean there (a
	 * backend without TERN_BACKEND_GGML_NUMERICS declines them). A norm
	 * without a weight is norm's own call. */
	void (*norm_rope)(struct tern_backend *be, struct tern_buf *q, struct tern_buf *k, const struct tern_buf *qw,
			  const struct tern_buf *kw, const struct tern_buf *pos, const struct tern_buf *freq,
			  const struct tern_norm *n, const struct tern_rope *p);
	/* cache row pos[t] of sequence seq[t] = x row t, converted to the
	 * cache's type (f32, f16, q8_0: any type quant/ can encode; head_dim
	 * a multiple of its block): x f32 {head_dim, n_head_kv, ntok}, cache
	 * {head_dim, n_head_kv, n_ctx, n_seq} (one cache per sequence: a
	 * beam, a server's slot), pos i32 [ntok] in 0..n_ctx-1, seq i32
	 * [ntok] in 0..n_seq-1 or NULL (every token of sequence 0). The
	 * sequences are device data, so that one call stores the tokens of
	 * several and a step that does stays replayable. */
	void (*kv_store)(struct tern_backend *be, struct tern_buf *cache, const struct tern_buf *x,
			 const struct tern_buf *pos, const struct tern_buf *seq);
	/* y = softmax(scale * q k^T) v per query and head over the cache
	 * rows the query sees: key p is visible to the query at position
	 * q = pos[t] iff p <= q and (window == 0 or q - p < window); query
	 * head h reads KV head h / (n_head / n_head_kv). q f32 {head_dim,
	 * n_head, ntok}, y f32 {head_dim_v, n_head, ntok}; k cache {head_dim,
	 * n_head_kv, n_ctx, n_seq}, v cache {head_dim_v, n_head_kv, n_ctx,
	 * n_seq} as kv_store wrote them (rows 0..pos[t] of sequence seq[t]
	 * must have been stored; seq as kv_store's: token t sees its own
	 * sequence's rows only, NULL: sequence 0), both
	 * at most TERN_ATTN_MAX_HEAD_DIM; v may be a column window of k
	 * (tern_buf_cols: MLA's latent is the first kv_lora_rank columns of
	 * its one K head). Online softmax: no [ntok][n_ctx] scores anywhere.
	 * With p->sinks, head h's sink logit joins each query's softmax (see
	 * struct tern_attn). Non-causal attention over a sequence of n rows
	 * (an encoder's: lib/llm/embed.c) is this op with k, v the
	 * sequence's own rows {head_dim, n_head_kv, n} and every pos[t] =
	 * n - 1: each query then sees all n keys. */
	void (*attention)(struct tern_backend *be, const struct tern_buf *q, const struct tern_buf *k,
			  const struct tern_buf *v, const struct tern_buf *pos, const struct tern_buf *seq,
			  struct tern_buf *y, const struct tern_attn *p);
	/* The rows of a 1-D convolution's input: y[t][c * k + j] = x[t *
	 * stride + j - pad][c], 0 where that falls outside x; x f32 [len][n_ch]
	 * (ne = {n_ch, len}), y f32 [n_out][n_ch * k] (ne = {n_ch * k, n_out}),
	 * n_out = (len + 2 pad - k) / stride + 1. The convolution is then one
	 * product with the kernel as [out_ch][n_ch * k], k fastest, the layout
	 * of ggml files' conv1d kernels (Whisper's encoder). */
	void (*im2col)(struct tern_backend *be, const struct tern_buf *x, struct tern_buf *y, const struct tern_conv *p);
	/* y = act(gate) * up, act TERN_GLU_SWIGLU (silu) or TERN_GLU_GEGLU
	 * (gelu, tanh form), or TERN_GLU_SWIGLU_OAI (see its enum); f32, same
	 * shapes; y may be gate or up. */
	void (*glu)(struct tern_backend *be, const struct tern_buf *gate, const struct tern_buf *up, struct tern_buf *y,
		    int kind);
	/* y = f(x), f a TERN_UNARY_*; f32, same shapes; y may be x. */
	void (*unary)(struct tern_backend *be, const struct tern_buf *x, struct tern_buf *y, int kind);
	/* y = a + b: b of a's shape, or one row added to every row of a (a
	 * bias); y may be a or b. */
	void (*add)(struct tern_backend *be, const struct tern_buf *a, const struct tern_buf *b, struct tern_buf *y);
	/* y = s * x; y may be x. */
	void (*scale)(struct tern_backend *be, const struct tern_buf *x, struct tern_buf *y, float s);
	/* y = softmax of each row of x; y may be x. */
	void (*softmax)(struct tern_backend *be, const struct tern_buf *x, struct tern_buf *y);
	/* ids[r] = the index of the largest element of row r of x, the lower
	 * index of equal ones; NaN never wins, and a row of -inf and NaN only
	 * gives -1 (the sampler's greedy pick, tern_sample, over its sanitised
	 * logits). x f32 {n, rows} contiguous, ids i32 [rows]. A greedy decode
	 * step's token without the logits leaving the device. */
	void (*argmax)(struct tern_backend *be, const struct tern_buf *x, struct tern_buf *ids);
	/* dst = src, the same number of rows of the same length: the same
	 * type (bytes copied), f32 to any type quant/ can encode, or any type
	 * to f32. Either side may be a column window of wider rows
	 * (tern_buf_cols): rows are then found through nb[1..3], row r being
	 * (r % ne1, r / ne1 % ne2, r / (ne1 ne2)) of each side's own shape. */
	void (*copy)(struct tern_backend *be, const struct tern_buf *src, struct tern_buf *dst);

	/* Bracket one step (a token of decode); see the top of this file. */
	void (*begin_step)(struct tern_backend *be);
	void (*end_step)(struct tern_backend *be);
	/* Wait for every enqueued op; report (and clear) the first error
	 * since the last sync. */
	int (*sync)(struct tern_backend *be, tern_err *err);

	void *impl; /* the backend's own state */
};

static inline void tern_backend_free(struct tern_backend *be)
{
	if (be)
		be->free(be);
}

/* whether be takes ggml's rounding requests (TERN_BACKEND_GGML_NUMERICS) */
static inline bool tern_backend_ggml(const struct tern_backend *be)
{
	return (be->caps & TERN_BACKEND_GGML_NUMERICS) != 0;
}

/* Host address of element 0, or NULL where buffers are device memory. */
static inline void *tern_buf_host(const struct tern_buf *b)
{
	if (!b->be || !(b->be->caps & TERN_BACKEND_HOST_MEMORY))
		return NULL;
	return (uint8_t *)b->mem + b->offset;
}

/* Bytes from element 0 to the end of the last row. */
static inline size_t tern_buf_nbytes(const struct tern_buf *b)
{
	size_t n = quant_row_size(b->type, (uint64_t)b->ne[0], NULL);
	for (int i = 1; i < TERN_MAX_DIMS; i++)
		n += (size_t)(b->ne[i] - 1) * b->nb[i];
	return n;
}

/* View of rows [r0, r0 + n) of a 2-D buffer (dims above 1 are 1): the
 * same storage, not owned, not prepared. */
static inline struct tern_buf tern_buf_rows(const struct tern_buf *b, int64_t r0, int64_t n)
{
	struct tern_buf v = *b;
	v.offset += (size_t)r0 * b->nb[1];
	v.ne[1] = n;
	v.flags &= ~(unsigned)TERN_BUF_OWNS;
	v.prep = NULL;
	return v;
}

/* View of a contiguous buffer under another shape of the same element
 * count (n_dims 1..TERN_MAX_DIMS, ne[0] a multiple of the block): the same
 * storage, not owned, not prepared. The caller checks the count. */
static inline struct tern_buf tern_buf_reshape(const struct tern_buf *b, int n_dims, const int64_t *ne)
{
	struct tern_buf v = *b;
	for (int i = 0; i < TERN_MAX_DIMS; i++)
		v.ne[i] = i < n_dims ? ne[i] : 1;
	v.nb[1] = quant_row_size(b->type, (uint64_t)v.ne[0], NULL);
	for (int i = 2; i < TERN_MAX_DIMS; i++)
		v.nb[i] = v.nb[i - 1] * (size_t)v.ne[i - 1];
	v.flags &= ~(unsigned)TERN_BUF_OWNS;
	v.prep = NULL;
	return v;
}

/* The first n rows of an activation of rows w wide, as {w, n}; and as
 * {hd, nh, n} (heads): tern_buf_reshape's two common cases. */
static inline struct tern_buf tern_buf_rows2(const struct tern_buf *b, int64_t w, int64_t n)
{
	int64_t ne[2] = {w, n};
	return tern_buf_reshape(b, 2, ne);
}

static inline struct tern_buf tern_buf_rows3(const struct tern_buf *b, int64_t hd, int64_t nh, int64_t n)
{
	int64_t ne[3] = {hd, nh, n};
	return tern_buf_reshape(b, 3, ne);
}

/* y = w x, product's one-weight form (only an adapter of its arguments) */
static inline void tern_be_mul(struct tern_backend *be, const struct tern_buf *w, const struct tern_buf *x,
			       struct tern_buf *y)
{
	be->product(be, 1, &w, x, &y);
}

/* b, or NULL when it holds nothing (an optional weight the file lacks) */
static inline const struct tern_buf *tern_buf_opt(const struct tern_buf *b)
{
	return b->mem ? b : NULL;
}

/* View of columns [c0, c0 + n) of every row of b (c0 and n multiples of
 * the type's block): the same storage and row strides, not owned, not
 * prepared; its rows no longer follow each other without gaps, so only
 * the ops that say so take it (copy, attention's v). */
static inline struct tern_buf tern_buf_cols(const struct tern_buf *b, int64_t c0, int64_t n)
{
	struct tern_buf v = *b;
	v.offset += quant_row_size(b->type, (uint64_t)c0, NULL);
	v.ne[0] = n;
	v.flags &= ~(unsigned)TERN_BUF_OWNS;
	v.prep = NULL;
	return v;
}

#endif
