/* llm.c - the forward pass of the decoder-only transformers tern runs
 * (llama, qwen2, qwen3, gemma3, gemma, gemma2, phi2, phi3, qwen2moe,
 * qwen3moe, gpt-oss, deepseek2), written once over the backend operation
 * table (lib/backend.h), with its KV cache and activations.
 *
 * One block, per token of the batch (the architectures differ only in the
 * optional parts, all decided by the model's config):
 *
 *   h  = norm(x) * attn_norm                     (fused with the previous add)
 *   q, k, v = Wq h (+bq), Wk h (+bk), Wv h (+bv)
 *   q, k = norm per head * q_norm / k_norm         (qwen3, gemma3)
 *   q, k = rope(q, k) at the token's position      (the layer's base, scaling;
 *                                                   with the norms one op)
 *   cache[pos] = k, v
 *   a  = attention(q, cache) (causal, GQA, the layer's window)
 *   o  = Wo a (+bo);  o = norm(o) * post_norm      (gemma3)
 *   x += o;  h = norm(x) * ffn_norm                (one fused op)
 *   f  = Wdown (act(Wgate h) * Wup h);  f = norm(f) * post_norm (gemma3)
 *   x += f                                         (fused into the next norm)
 *
 * phi2 differs in two places: the norm is a layer norm with bias, and the
 * block is parallel with a plain FFN: x += o, then f = Wdown gelu(Wup h +
 * bu) + bd from the same h. phi3 rotates with LongRoPE factors (long or
 * short, chosen by the context) and its attention factor.
 *
 * deepseek2's multi-head latent attention replaces the attention part
 * (attn_mla below): its cache keeps one compressed latent and the RoPE
 * dimensions per position, never the heads. A mixture-of-experts layer
 * (is_moe) replaces the FFN (moe_ffn below).
 *
 * then logits = Wout (norm(x) * output_norm) (+ output bias) for the rows
 * kept, with the architecture's final soft-cap. Batches of more than one
 * token go through the products' GEMM path, one token the mat-vec path (the
 * backend's choice: one product entry).
 *
 * What changes from one step to the next (token ids, positions) is
 * uploaded into buffers, so that a GPU backend may record a decode step
 * once and replay it. Nothing here allocates after tern_llm_new.
 *
 * Partial offload (tern_llm_opts.dev): the last layers, each with its
 * weights and KV cache, and the output head when asked, live on a second
 * backend; the token embedding and the other layers on the first. The
 * pass crosses once each way at most (cross(): x and the pending FFN
 * output through host memory), and each backend's part of a decode step
 * is bracketed by its own begin_step / end_step. */
#include "lib/llm/llm.h"

#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "gpu/device.h"
#include "quant/quant.h"

struct layer_bufs {
	struct tern_buf attn_norm, wq, wk, wv, wo, bq, bk, bv, bo, q_norm, k_norm, attn_post_norm;
	struct tern_buf ffn_norm, ffn_gate, ffn_up, ffn_down, ffn_post_norm;
	/* latent attention (deepseek2): wk_b is the file's, or made from
	 * attn_kv_b at load (owned); wv_b the file's, or a view of wkv_b */
	struct tern_buf wq_a, q_a_norm, wq_b, wkv_a, kv_a_norm, wk_b, wv_b, wkv_b;
	struct tern_buf k_cache, v_cache; /* {head_dim, n_head_kv, n_ctx}; MLA: k {n_lora_kv + n_rot, 1, n_ctx}, no v */
	/* mixture of experts (model.h) */
	struct tern_buf attn_sinks, gate_inp, gate_inp_b, exp_probs_b, gate_exps, up_exps, down_exps;
	struct tern_buf gate_exps_b, up_exps_b, down_exps_b, gate_inp_shexp, gate_shexp, up_shexp, down_shexp;
	struct tern_buf gate_up_exps; /* a merged stack (deepseek2); gate_exps and up_exps are then its halves */
	struct tern_buf attn_norm_b, ffn_up_b, ffn_down_b; /* phi2 */
	struct llm_part *p; /* the part (backend) that runs this layer */
};

/* What one backend holds of the forward pass: with partial offload the
 * host's part (the token embedding, the first layers) and the device's
 * (the last layers, the output head), each with a full set of
 * activations; the residual stream crosses between them (cross()). */
struct llm_part {
	struct tern_backend *be;
	struct tern_buf rope_freqs; /* llama3's, or phi3's long/short: every part's layers rotate with it */
	/* activations, [n_ubatch] rows each. x, h, out and ids, pos live
	 * through the whole pass; the others are views of one allocation
	 * (work), one phase's over another's (act_slots): the attention's (q,
	 * k, v, a, mla_*) are dead once it has written out, the FFN's (gate,
	 * up, the experts') once it has, and the logits come after the last
	 * block. */
	struct tern_buf ids, pos;           /* i32 [n_ubatch] */
	struct tern_buf x, h, out;          /* out: a block's attention, then FFN output */
	struct tern_buf work;               /* owns the storage of the views below */
	struct tern_buf q, k, v, a, gate, up;
	struct tern_buf logits;             /* f32 [rows][n_vocab], rows = n_ubatch with logits_all on the output's
	                                     * part, else 1 */
	/* latent attention (deepseek2), [n_ubatch] rows each; see attn_mla */
	struct tern_buf mla_qa;             /* [n_lora_q] */
	struct tern_buf mla_kv;             /* [n_lora_kv + n_rot]: a cache row */
	struct tern_buf mla_lat, mla_pe;    /* [n_lora_kv], [n_rot] */
	struct tern_buf mla_qn, mla_qp;     /* [n_head][nope], [n_head][n_rot] */
	struct tern_buf mla_qx;             /* [n_head][n_lora_kv]: the absorbed query, then the attention's output */
	struct tern_buf mla_qm;             /* [n_head][n_lora_kv + n_rot]: the query over the cache */
	/* mixture of experts, k = n_expert_used (empty for a dense model) */
	struct tern_buf router;             /* f32 [n_ubatch][n_expert] */
	struct tern_buf sel_ids, sel_w;     /* i32, f32 [n_ubatch][k] */
	struct tern_buf eg, eu;             /* f32 [n_ubatch][k][n_ff_exp] */
	struct tern_buf ed;                 /* f32 [n_ubatch][k][n_embd] */
	struct tern_buf sgate;              /* f32 [n_ubatch][1]: the shared expert's gate */
};

struct tern_llm {
	const struct tern_model *m;
	struct tern_llm_opts o;
	/* part[0] is the host's (the backend tern_llm_new was given), part[1]
	 * the device's (opts.dev) when it holds anything */
	struct llm_part part[2];
	int n_parts;
	struct llm_part *out_part;   /* the output head's */
	float *staging;              /* [2][n_ubatch][n_embd]: x and out on their way between parts */
	int32_t n_ctx, n_ubatch, n_past;
	int32_t n_out;          /* logits rows of the last decode (0: none yet) */
	bool greedy;            /* tern_llm_set_greedy: argmax on the device */
	bool out_greedy;        /* the last decode kept greedy_id, not logits */
	int32_t greedy_id;
	int32_t n_last;         /* tokens in the last chunk */
	uint64_t kv_bytes;

	/* weights */
	struct tern_buf token_embd, output_norm, output; /* token_embd on part[0], the others on out_part */
	struct tern_buf output_norm_b, output_b; /* phi2 */
	bool output_is_embd;    /* tied: output shares token_embd's buffer */
	bool loading_products;  /* tern_llm_new's second pass over the weights */
	struct tern_backend *loading_be; /* the backend weight() loads into */
	struct layer_bufs *layers;

	int32_t *host_ids, *host_pos;       /* [n_ubatch] */
	float *host_logits;                 /* [rows][n_vocab] */
	float *host_embd;                   /* opts.embeddings: [n_ubatch][n_embd], else NULL */
};

struct tern_llm_opts tern_llm_opts_default(void)
{
	return (struct tern_llm_opts){.n_ctx = -1, .n_ubatch = 0, .type_k = QT_F16, .type_v = QT_F16};
}

int tern_llm_cache_type(const char *name)
{
	if (!name)
		return -1;
	if (strcmp(name, "f32") == 0)
		return QT_F32;
	if (strcmp(name, "f16") == 0)
		return QT_F16;
	if (strcmp(name, "q8_0") == 0)
		return QT_Q8_0;
	return -1;
}

/* ---- creation ---------------------------------------------------------------- */

int tern_llm_weight(struct tern_backend *be, struct tern_buf *b, const struct tern_tensor_view *t, bool product,
		    bool mapped, tern_err *e)
{
	if (!t)
		return 0;
	int rc;
	if (mapped && !product && t->nbytes <= TERN_LLM_COPY_MAX && t->n_dims >= 1 && t->n_dims <= TERN_MAX_DIMS) {
		int64_t ne[TERN_MAX_DIMS];
		for (uint32_t i = 0; i < t->n_dims; i++)
			ne[i] = (int64_t)t->ne[i];
		rc = be->buf_alloc(be, b, t->type, (int)t->n_dims, ne, e);
		if (!rc) {
			be->upload(be, b, 0, t->data, (size_t)t->nbytes);
			b->flags |= TERN_BUF_READONLY;
		}
	} else {
		rc = be->buf_weight(be, b, t, e);
		if (!rc && mapped)
			b->flags |= TERN_BUF_MAPPED;
	}
	if (!rc && product)
		rc = be->mat_prepare(be, b, e);
	if (rc)
		tern_err_prefixf(e, "tensor '%.*s'", (int)(t->name.len < 96 ? t->name.len : 96), t->name.ptr);
	return rc;
}

/* Weights load in two passes (tern_llm_new): the tensors the products do
 * not take first, then the products, so that no read of the file follows
 * a product's re-laid copy (tern_llm_weight). */
static int weight(struct tern_llm *l, struct tern_buf *b, const struct tern_tensor_view *t, bool product, tern_err *e)
{
	if (product != l->loading_products)
		return 0;
	return tern_llm_weight(l->loading_be, b, t, product, tern_mf_mapped(l->m->mf), e);
}

static int alloc2(struct tern_backend *be, struct tern_buf *b, uint32_t type, int64_t ne0, int64_t ne1, tern_err *e)
{
	int64_t ne[2] = {ne0, ne1};
	return be->buf_alloc(be, b, type, 2, ne, e);
}

static int check_opts(const struct tern_model_config *c, int64_t max_tokens, const struct tern_llm_opts *o,
		      int32_t *n_ctx, int32_t *n_ubatch, tern_err *e)
{
	uint32_t types[2] = {o->type_k, o->type_v};
	uint32_t dims[2] = {c->head_dim, c->head_dim_v};
	if (c->n_lora_kv) { /* one cache: its rows, and the latent V reads from them */
		types[1] = o->type_k;
		dims[0] = c->n_lora_kv + c->n_rot;
		dims[1] = c->n_lora_kv;
	}
	for (int i = 0; i < 2; i++) {
		uint32_t t = types[i];
		if (t != QT_F32 && t != QT_F16 && t != QT_Q8_0)
			return tern_errf(e, TERN_EINVAL, "KV cache type %s is not supported (f32, f16, q8_0)",
					 quant_type_valid(t) ? quant_type_name(t) : "?");
		if (dims[i] % quant_type_info(t)->blck)
			return tern_errf(e, TERN_EINVAL, "a %s %s cache needs a head size that is a multiple of %u, not %u",
					 quant_type_name(t), i ? "V" : "K", quant_type_info(t)->blck, dims[i]);
	}
	int64_t ctx = o->n_ctx;
	if (ctx < 0)
		ctx = c->n_ctx_train && c->n_ctx_train < TERN_LLM_DEFAULT_CTX ? c->n_ctx_train : TERN_LLM_DEFAULT_CTX;
	else if (ctx == 0)
		ctx = c->n_ctx_train ? c->n_ctx_train : TERN_LLM_DEFAULT_CTX;
	if (ctx > INT32_MAX / 2)
		return tern_errf(e, TERN_ERANGE, "context of %lld positions is too large", (long long)ctx);
	int64_t ub = o->n_ubatch;
	if (ub <= 0)
		ub = max_tokens < TERN_LLM_DEFAULT_BATCH ? max_tokens : TERN_LLM_DEFAULT_BATCH;
	if (ub < 1 || ub > max_tokens)
		return tern_errf(e, TERN_EINVAL, "micro-batch of %lld tokens: the backend takes 1..%lld", (long long)ub,
				 (long long)max_tokens);
	/* the attention is causal: no forward pass takes more tokens than
	 * the context holds, so activations for more would never be used
	 * (llama.cpp clamps n_batch, then n_ubatch, to n_ctx alike) */
	if (ub > ctx)
		ub = ctx;
	*n_ctx = (int32_t)ctx;
	*n_ubatch = (int32_t)ub;
	return 0;
}

/* The RoPE frequency factors: llama3's, else phi3's LongRoPE long factors
 * when the context exceeds the original one, else its short factors. As
 * llama.cpp decides it, from the context rounded up to 256 positions (as
 * llama.cpp pads n_ctx), so that the same -c chooses the same factors. */
static const struct tern_tensor_view *rope_factors(const struct tern_model *m, int64_t n_ctx)
{
	if (m->w.rope_freqs || !m->cfg.has_longrope)
		return m->w.rope_freqs;
	int64_t padded = (n_ctx + 255) / 256 * 256;
	return padded > (int64_t)m->cfg.n_ctx_orig ? m->w.rope_long : m->w.rope_short;
}

/* bytes of one layer's K and V caches, or 0 on overflow */
static uint64_t cache_bytes(uint32_t type, uint64_t head_dim, uint64_t n_head_kv, uint64_t n_ctx)
{
	uint64_t row = quant_row_size(type, head_dim, NULL);
	if (!row || n_head_kv > UINT64_MAX / row || n_ctx > UINT64_MAX / (row * n_head_kv))
		return 0;
	return row * n_head_kv * n_ctx;
}

/* bytes of layer il's K and V caches (latent attention: one cache, V is
 * a window of it), or 0 on overflow */
static uint64_t layer_kv_bytes(const struct tern_model_config *c, uint32_t il, uint32_t type_k, uint32_t type_v,
			       uint64_t n_ctx)
{
	if (c->n_lora_kv)
		return cache_bytes(type_k, c->n_lora_kv + c->n_rot, 1, n_ctx);
	uint64_t kb = cache_bytes(type_k, c->head_dim, c->layer[il].n_head_kv, n_ctx);
	uint64_t vb = cache_bytes(type_v, c->head_dim_v, c->layer[il].n_head_kv, n_ctx);
	return kb && vb && kb <= UINT64_MAX - vb ? kb + vb : 0;
}

/* The widest activations over the layers: they size the buffers of one
 * forward pass. */
struct act_widths {
	int64_t nq, nkv, nv, no, nff;
};

static struct act_widths widest(const struct tern_model_config *c)
{
	struct act_widths w = {0};
	for (uint32_t il = 0; il < c->n_layer; il++) {
		const struct tern_model_layer_config *lc = &c->layer[il];
		int64_t q = (int64_t)lc->n_head * c->head_dim, k = (int64_t)lc->n_head_kv * c->head_dim;
		int64_t v = (int64_t)lc->n_head_kv * c->head_dim_v, a = (int64_t)lc->n_head * c->head_dim_v;
		w.nq = q > w.nq ? q : w.nq;
		w.nkv = k > w.nkv ? k : w.nkv;
		w.nv = v > w.nv ? v : w.nv;
		w.no = a > w.no ? a : w.no;
		w.nff = lc->n_ff > w.nff ? lc->n_ff : w.nff;
	}
	/* the shared expert runs in the dense FFN's buffers */
	w.nff = c->moe.n_ff_shexp > w.nff ? c->moe.n_ff_shexp : w.nff;
	return w;
}

/* The activations that share tern_llm.work: each phase's lie side by
 * side (64-byte aligned), the phases over each other. A phase's buffers
 * are written and read within it only (the phases: the attention up to
 * its output projection and post-norm into out; the FFN or mixture of
 * experts, its shared expert included, up to its output into out; the
 * logits), so that the next phase may overwrite them. */
enum { ACT_ATTN, ACT_FFN, ACT_OUT, ACT_PHASES };
#define ACT_SLOTS 24

struct act_slot {
	struct tern_buf *b; /* the view to make (NULL: sizes only) */
	int phase;
	uint32_t type;      /* QT_F32 or QT_I32: 4 bytes each */
	int64_t w, rows;
};

/* The slots of model c at a micro-batch of n_ub and out_rows logits rows,
 * with part P's views (P may be NULL); returns their count. */
static int act_slots(const struct tern_model_config *c, int64_t n_ub, int64_t out_rows, struct llm_part *P,
		     struct act_slot *s)
{
	struct act_widths w = widest(c);
	int n = 0;
#define SLOT(field, ph, ty, width, nrows)                                                                              \
	(s[n++] = (struct act_slot){P ? &P->field : NULL, (ph), (ty), (width), (nrows)})
	SLOT(q, ACT_ATTN, QT_F32, w.nq, n_ub);
	SLOT(k, ACT_ATTN, QT_F32, w.nkv, n_ub);
	SLOT(v, ACT_ATTN, QT_F32, w.nv, n_ub);
	SLOT(a, ACT_ATTN, QT_F32, w.no, n_ub);
	if (c->n_lora_kv) { /* attn_mla */
		int64_t nh = c->n_head, kr = c->n_lora_kv + c->n_rot, nope = (int64_t)c->head_dim - c->n_rot;
		if (c->n_lora_q)
			SLOT(mla_qa, ACT_ATTN, QT_F32, c->n_lora_q, n_ub);
		SLOT(mla_kv, ACT_ATTN, QT_F32, kr, n_ub);
		SLOT(mla_lat, ACT_ATTN, QT_F32, c->n_lora_kv, n_ub);
		SLOT(mla_pe, ACT_ATTN, QT_F32, c->n_rot, n_ub);
		SLOT(mla_qn, ACT_ATTN, QT_F32, nh * nope, n_ub);
		SLOT(mla_qp, ACT_ATTN, QT_F32, nh * c->n_rot, n_ub);
		SLOT(mla_qx, ACT_ATTN, QT_F32, nh * c->n_lora_kv, n_ub);
		SLOT(mla_qm, ACT_ATTN, QT_F32, nh * kr, n_ub);
	}
	SLOT(gate, ACT_FFN, QT_F32, w.nff, n_ub);
	SLOT(up, ACT_FFN, QT_F32, w.nff, n_ub);
	if (c->moe.n_expert) { /* moe_ffn */
		int64_t k = c->moe.n_expert_used;
		SLOT(router, ACT_FFN, QT_F32, c->moe.n_expert, n_ub);
		SLOT(sel_ids, ACT_FFN, QT_I32, k, n_ub);
		SLOT(sel_w, ACT_FFN, QT_F32, k, n_ub);
		SLOT(eg, ACT_FFN, QT_F32, c->moe.n_ff_exp, k * n_ub);
		SLOT(eu, ACT_FFN, QT_F32, c->moe.n_ff_exp, k * n_ub);
		SLOT(ed, ACT_FFN, QT_F32, c->n_embd, k * n_ub);
		SLOT(sgate, ACT_FFN, QT_F32, 1, n_ub);
	}
	SLOT(logits, ACT_OUT, QT_F32, c->n_vocab, out_rows);
#undef SLOT
	return n;
}

/* bytes of one slot in the shared storage, rounded up to 64 (in double:
 * a hostile shape must not wrap) */
static double act_slot_bytes(const struct act_slot *s)
{
	return ceil(4.0 * (double)s->w * (double)s->rows / 64.0) * 64.0;
}

/* bytes of the shared storage: the largest phase */
static double act_work_bytes(const struct act_slot *s, int n)
{
	double ph[ACT_PHASES] = {0}, most = 0;
	for (int i = 0; i < n; i++)
		ph[s[i].phase] += act_slot_bytes(&s[i]);
	for (int p = 0; p < ACT_PHASES; p++)
		most = ph[p] > most ? ph[p] : most;
	return most;
}

/* Allocate P->work and make every slot's view of it (views own nothing:
 * only work is freed). */
static int act_alloc(const struct tern_model_config *c, struct llm_part *P, int64_t n_ub, int64_t out_rows,
		     tern_err *e)
{
	struct act_slot s[ACT_SLOTS];
	int n = act_slots(c, n_ub, out_rows, P, s);
	double bytes = act_work_bytes(s, n);
	if (bytes > (double)((int64_t)1 << 40))
		return tern_errf(e, TERN_ENOMEM, "activations of %.0f bytes", bytes);
	int rc = alloc2(P->be, &P->work, QT_F32, (int64_t)bytes / 4, 1, e);
	if (rc)
		return rc;
	size_t off[ACT_PHASES] = {0};
	for (int i = 0; i < n; i++) {
		struct tern_buf v = P->work;
		v.type = s[i].type;
		v.offset += off[s[i].phase];
		off[s[i].phase] += (size_t)act_slot_bytes(&s[i]);
		*s[i].b = tern_buf_rows2(&v, s[i].w, s[i].rows);
	}
	return 0;
}

uint64_t tern_llm_memory_estimate(const struct tern_model_config *c, int64_t n_ctx, int64_t n_ubatch,
				  uint32_t type_k, uint32_t type_v, bool logits_all, uint64_t *kv)
{
	double cache = 0; /* in double: a hostile size must not wrap */
	for (uint32_t il = 0; il < c->n_layer; il++)
		cache += c->n_lora_kv ? (double)n_ctx * (double)quant_row_size(type_k, c->n_lora_kv + c->n_rot, NULL)
				      : (double)n_ctx * (double)c->layer[il].n_head_kv *
						(double)(quant_row_size(type_k, c->head_dim, NULL) +
							 quant_row_size(type_v, c->head_dim_v, NULL));
	if (n_ubatch > n_ctx) /* as check_opts resolves it */
		n_ubatch = n_ctx;
	/* as tern_llm_new makes them: ids and positions (on the host and the
	 * backend), x, h, out, the phases' shared storage, and the logits'
	 * host copy */
	double rows = logits_all ? (double)n_ubatch : 1;
	struct act_slot slots[ACT_SLOTS];
	int ns = act_slots(c, n_ubatch, (int64_t)rows, NULL, slots);
	double act = (double)n_ubatch * (16.0 + 12.0 * c->n_embd) + act_work_bytes(slots, ns) + 4.0 * rows * c->n_vocab;
	double cap = (double)UINT64_MAX / 2;
	if (kv)
		*kv = cache < cap ? (uint64_t)cache : (uint64_t)cap;
	return cache + act < cap ? (uint64_t)(cache + act) : (uint64_t)cap;
}

/* bytes of a tensor, 0 for none */
static uint64_t view_bytes(const struct tern_tensor_view *t)
{
	return t ? t->nbytes : 0;
}

int tern_llm_offload_sizes(const struct tern_model *m, const struct tern_llm_opts *o, int64_t max_tokens,
			   uint64_t *weights, uint64_t *kv, uint64_t *output, uint64_t *scratch, tern_err *e)
{
	const struct tern_model_config *c = &m->cfg;
	int32_t n_ctx = 0, n_ub = 0;
	int rc = check_opts(c, max_tokens, o, &n_ctx, &n_ub, e);
	if (rc)
		return rc;
	/* a layer's tensors, every field a view pointer: the fused ones
	 * (wqkv, bqkv, ffn_gate_up) are loaded as the views split from them,
	 * which the sum has already */
	_Static_assert(sizeof(struct tern_model_layer) % sizeof(const struct tern_tensor_view *) == 0,
		       "tern_model_layer holds view pointers only");
	const size_t nv = sizeof(struct tern_model_layer) / sizeof(const struct tern_tensor_view *);
	for (uint32_t il = 0; il < c->n_layer; il++) {
		const struct tern_model_layer *w = &m->w.layers[il];
		const struct tern_tensor_view *v[sizeof(struct tern_model_layer) / sizeof(const struct tern_tensor_view *)];
		memcpy(v, w, sizeof v);
		uint64_t b = 0;
		for (size_t i = 0; i < nv; i++)
			if (v[i] != w->wqkv && v[i] != w->bqkv && v[i] != w->ffn_gate_up)
				b += view_bytes(v[i]);
		weights[il] = b;
		kv[il] = layer_kv_bytes(c, il, o->type_k, o->type_v, (uint64_t)n_ctx);
	}
	*output = view_bytes(m->w.output_norm) + view_bytes(m->w.output_norm_b) + view_bytes(m->w.output_b) +
		  view_bytes(c->tied_output ? m->w.token_embd : m->w.output);
	uint64_t all_kv = 0, all = tern_llm_memory_estimate(c, n_ctx, n_ub, o->type_k, o->type_v, o->logits_all, &all_kv);
	*scratch = all - all_kv;
	return 0;
}

/* Older deepseek2 files keep W_kb and W_vb together in attn_kv_b ({kv_lora,
 * n_head * (nope + head_dim_v)}: per head nope rows of W_kb, then
 * head_dim_v of W_vb). W_vb is read in place (a view whose heads are
 * apart); W_kb goes into the query transposed, so it is transposed once
 * here, into f32 (f16 unless the file's is f32), as attn_k_b holds it. */
static int split_kv_b(struct tern_llm *l, uint32_t il, tern_err *e)
{
	const struct tern_model_config *c = &l->m->cfg;
	struct layer_bufs *L = &l->layers[il];
	const struct tern_tensor_view *t = l->m->w.layers[il].wkv_b;
	int64_t nh = c->layer[il].n_head, nope = c->head_dim - c->n_rot, hv = c->head_dim_v, kvr = c->n_lora_kv;
	struct tern_buf v = L->wkv_b;
	v.offset += (size_t)nope * L->wkv_b.nb[1];
	v.ne[1] = hv;
	v.ne[2] = nh;
	v.nb[2] = (size_t)(nope + hv) * L->wkv_b.nb[1];
	v.flags &= ~(unsigned)TERN_BUF_OWNS;
	v.prep = NULL;
	L->wv_b = v;

	uint32_t type = t->type == QT_F32 ? QT_F32 : QT_F16;
	size_t rs = quant_row_size(t->type, (uint64_t)kvr, NULL), ors = quant_row_size(type, (uint64_t)nope, NULL);
	float *row = malloc(sizeof(float) * (size_t)kvr);
	float *tr = malloc(sizeof(float) * (size_t)(kvr * nope));
	uint8_t *out = malloc(ors * (size_t)(kvr * nh));
	int rc = row && tr && out ? 0 : tern_errf(e, TERN_ENOMEM, "out of memory");
	for (int64_t h = 0; !rc && h < nh; h++) {
		for (int64_t i = 0; !rc && i < nope; i++) {
			const uint8_t *src = (const uint8_t *)t->data + rs * (size_t)(h * (nope + hv) + i);
			rc = quant_dequantize_row(t->type, src, row, (uint64_t)kvr);
			for (int64_t r = 0; r < kvr; r++)
				tr[r * nope + i] = row[r];
		}
		for (int64_t r = 0; !rc && r < kvr; r++)
			rc = quant_quantize_row(type, tr + r * nope, out + ors * (size_t)(h * kvr + r), (uint64_t)nope);
	}
	int64_t ne[3] = {nope, kvr, nh};
	struct tern_backend *be = L->p->be;
	if (!rc)
		rc = be->buf_alloc(be, &L->wk_b, type, 3, ne, e);
	if (!rc) {
		be->upload(be, &L->wk_b, 0, out, ors * (size_t)(kvr * nh));
		rc = be->sync(be, e);
	}
	free(row);
	free(tr);
	free(out);
	if (rc)
		tern_err_prefixf(e, "layer %u: W_kb from attn_kv_b", il);
	return rc;
}

/* A merged ffn_gate_up_exps {n_embd, 2 F, E}: the gate and up stacks are
 * views of its buffer, expert e's F gate rows and F up rows, 2 F rows
 * apart from one expert to the next (nb[2]), each prepared as a stack on
 * its own, so that the forward pass runs them as separate ones. */
static int split_gate_up_exps(struct tern_llm *l, uint32_t il, tern_err *e)
{
	struct layer_bufs *L = &l->layers[il];
	const int64_t nf = (int64_t)l->m->cfg.moe.n_ff_exp;
	struct tern_buf half = L->gate_up_exps;
	half.ne[1] = nf;
	half.flags &= ~(unsigned)TERN_BUF_OWNS;
	half.prep = NULL;
	L->gate_exps = half;
	half.offset += (size_t)nf * L->gate_up_exps.nb[1];
	L->up_exps = half;
	struct tern_backend *be = L->p->be;
	int rc = be->mat_prepare(be, &L->gate_exps, e);
	if (!rc)
		rc = be->mat_prepare(be, &L->up_exps, e);
	if (rc)
		tern_err_prefixf(e, "layer %u: ffn_gate_up_exps", il);
	return rc;
}

/* MLA's W_kb made from attn_kv_b, once the products load */
static int after_wkv_b(struct tern_llm *l, uint32_t il, tern_err *e)
{
	return l->m->cfg.mla_kv_b && l->loading_products ? split_kv_b(l, il, e) : 0;
}

/* a merged expert stack's gate and up halves, once the products load */
static int after_gate_up_exps(struct tern_llm *l, uint32_t il, tern_err *e)
{
	return l->m->w.layers[il].ffn_gate_up_exps && l->loading_products ? split_gate_up_exps(l, il, e) : 0;
}

/* The tensors of a block, in loading order: the file's tensor (model.h),
 * the buffer it loads into, whether it is a product's weight (weight():
 * prepared, and loaded in the second pass), and what is made of it once
 * loaded. wk_b is a product, but mat_mul_heads takes it unprepared. */
#define LAYER_WEIGHT(buf, tensor, product, then)                                                             \
	{offsetof(struct layer_bufs, buf), offsetof(struct tern_model_layer, tensor), product, then}
static const struct layer_weight {
	size_t buf, tensor;
	bool product;
	int (*then)(struct tern_llm *l, uint32_t il, tern_err *e);
} layer_weights[] = {
	LAYER_WEIGHT(attn_norm, attn_norm, false, NULL),
	LAYER_WEIGHT(wq, wq, true, NULL),
	LAYER_WEIGHT(wk, wk, true, NULL),
	LAYER_WEIGHT(wv, wv, true, NULL),
	LAYER_WEIGHT(wo, wo, true, NULL),
	LAYER_WEIGHT(bq, bq, false, NULL),
	LAYER_WEIGHT(bk, bk, false, NULL),
	LAYER_WEIGHT(bv, bv, false, NULL),
	LAYER_WEIGHT(bo, bo, false, NULL),
	LAYER_WEIGHT(q_norm, q_norm, false, NULL),
	LAYER_WEIGHT(k_norm, k_norm, false, NULL),
	LAYER_WEIGHT(attn_post_norm, attn_post_norm, false, NULL),
	LAYER_WEIGHT(ffn_norm, ffn_norm, false, NULL),
	LAYER_WEIGHT(ffn_gate, ffn_gate, true, NULL),
	LAYER_WEIGHT(ffn_up, ffn_up, true, NULL),
	LAYER_WEIGHT(ffn_down, ffn_down, true, NULL),
	LAYER_WEIGHT(ffn_post_norm, ffn_post_norm, false, NULL),
	LAYER_WEIGHT(wq_a, wq_a, true, NULL),
	LAYER_WEIGHT(q_a_norm, q_a_norm, false, NULL),
	LAYER_WEIGHT(wq_b, wq_b, true, NULL),
	LAYER_WEIGHT(wkv_a, wkv_a, true, NULL),
	LAYER_WEIGHT(kv_a_norm, kv_a_norm, false, NULL),
	LAYER_WEIGHT(wk_b, wk_b, false, NULL),
	LAYER_WEIGHT(wv_b, wv_b, false, NULL),
	LAYER_WEIGHT(wkv_b, wkv_b, false, after_wkv_b),
	LAYER_WEIGHT(attn_sinks, attn_sinks, false, NULL),
	LAYER_WEIGHT(gate_inp, ffn_gate_inp, true, NULL),
	LAYER_WEIGHT(gate_inp_b, ffn_gate_inp_b, false, NULL),
	LAYER_WEIGHT(exp_probs_b, exp_probs_b, false, NULL),
	LAYER_WEIGHT(gate_exps, ffn_gate_exps, true, NULL),
	LAYER_WEIGHT(up_exps, ffn_up_exps, true, NULL),
	LAYER_WEIGHT(gate_up_exps, ffn_gate_up_exps, false, after_gate_up_exps),
	LAYER_WEIGHT(down_exps, ffn_down_exps, true, NULL),
	LAYER_WEIGHT(gate_exps_b, ffn_gate_exps_b, false, NULL),
	LAYER_WEIGHT(up_exps_b, ffn_up_exps_b, false, NULL),
	LAYER_WEIGHT(down_exps_b, ffn_down_exps_b, false, NULL),
	LAYER_WEIGHT(gate_inp_shexp, ffn_gate_inp_shexp, true, NULL),
	LAYER_WEIGHT(gate_shexp, ffn_gate_shexp, true, NULL),
	LAYER_WEIGHT(up_shexp, ffn_up_shexp, true, NULL),
	LAYER_WEIGHT(down_shexp, ffn_down_shexp, true, NULL),
	LAYER_WEIGHT(attn_norm_b, attn_norm_b, false, NULL),
	LAYER_WEIGHT(ffn_up_b, ffn_up_b, false, NULL),
	LAYER_WEIGHT(ffn_down_b, ffn_down_b, false, NULL),
};
#undef LAYER_WEIGHT

/* A layer's KV cache on its part's backend: MLA keeps the latent and the
 * RoPE dimensions (one row per position), the others keys and values. */
static int layer_cache(struct tern_llm *l, uint32_t il, tern_err *e)
{
	const struct tern_model_config *c = &l->m->cfg;
	const struct tern_model_layer_config *lc = &c->layer[il];
	struct layer_bufs *L = &l->layers[il];
	struct tern_backend *be = L->p->be;
	int rc;
	if (c->n_lora_kv) {
		int64_t ne[3] = {c->n_lora_kv + c->n_rot, 1, l->n_ctx};
		rc = be->buf_alloc(be, &L->k_cache, l->o.type_k, 3, ne, e);
	} else {
		int64_t kne[3] = {c->head_dim, lc->n_head_kv, l->n_ctx};
		int64_t vne[3] = {c->head_dim_v, lc->n_head_kv, l->n_ctx};
		rc = be->buf_alloc(be, &L->k_cache, l->o.type_k, 3, kne, e);
		if (!rc)
			rc = be->buf_alloc(be, &L->v_cache, l->o.type_v, 3, vne, e);
	}
	if (rc)
		tern_err_prefixf(e, "KV cache of layer %u", il);
	return rc;
}

/* One pass of weight() over a block's tensors; the cache comes with the
 * products' pass. */
static int load_layer(struct tern_llm *l, uint32_t il, tern_err *e)
{
	const struct tern_model_layer *w = &l->m->w.layers[il];
	struct layer_bufs *L = &l->layers[il];
	l->loading_be = L->p->be;
	int rc = 0;
	for (size_t i = 0; !rc && i < sizeof layer_weights / sizeof layer_weights[0]; i++) {
		const struct layer_weight *lw = &layer_weights[i];
		struct tern_buf *b = (struct tern_buf *)((char *)L + lw->buf);
		const struct tern_tensor_view *t = *(const struct tern_tensor_view *const *)((const char *)w + lw->tensor);
		rc = weight(l, b, t, lw->product, e);
		if (!rc && lw->then)
			rc = lw->then(l, il, e);
	}
	if (rc || !l->loading_products)
		return rc;
	return layer_cache(l, il, e);
}

/* The KV cache's size, checked for overflow before anything is allocated. */
static int kv_cache_bytes(const struct tern_model_config *c, const struct tern_llm_opts *o, int32_t n_ctx,
			  uint64_t *out, tern_err *e)
{
	uint64_t kv = 0;
	for (uint32_t il = 0; il < c->n_layer; il++) {
		uint64_t b = layer_kv_bytes(c, il, o->type_k, o->type_v, (uint64_t)n_ctx);
		if (!b || kv > UINT64_MAX / 4 - b)
			return tern_errf(e, TERN_ERANGE, "a KV cache of %d positions is too large", n_ctx);
		kv += b;
	}
	if (kv > (uint64_t)SIZE_MAX / 2)
		return tern_errf(e, TERN_ENOMEM, "a KV cache of %d positions needs %llu bytes", n_ctx,
				 (unsigned long long)kv);
	*out = kv;
	return 0;
}

/* The parts: the host's, and the device's when it holds anything, with
 * the output head under dev_output. Set first: tern_llm_free needs them. */
static void place_parts(struct tern_llm *l, struct tern_backend *be)
{
	const struct tern_llm_opts *o = &l->o;
	l->part[0].be = be;
	l->n_parts = 1;
	if (o->dev) {
		l->part[1].be = o->dev;
		l->n_parts = 2;
	}
	l->out_part = &l->part[o->dev && o->dev_output ? 1 : 0];
}

/* the step's transfers, in the backend's host memory (pinned on a GPU) */
static int host_io_alloc(struct tern_llm *l, struct tern_backend *be, int32_t out_rows, tern_err *e)
{
	const struct tern_model_config *c = &l->m->cfg;
	int32_t n_ub = l->n_ubatch;
	int rc = be->host_alloc(be, sizeof(int32_t) * (size_t)n_ub, (void **)&l->host_ids, e);
	if (!rc)
		rc = be->host_alloc(be, sizeof(int32_t) * (size_t)n_ub, (void **)&l->host_pos, e);
	if (!rc)
		rc = be->host_alloc(be, sizeof(float) * (size_t)out_rows * c->n_vocab, (void **)&l->host_logits, e);
	if (!rc && l->o.embeddings)
		rc = be->host_alloc(be, sizeof(float) * (size_t)n_ub * c->n_embd, (void **)&l->host_embd, e);
	if (rc)
		tern_err_prefixf(e, "the logits of %d x %u tokens", out_rows, c->n_vocab);
	return rc;
}

/* weights: views into the file or copies (weight(): two passes). The
 * token embedding stays on the host (llama.cpp's rule: a few rows
 * per token are no work for a device); a tied output head on the
 * device is the same tensor loaded there as a product. */
static int load_weights(struct tern_llm *l, tern_err *e)
{
	const struct tern_model *m = l->m;
	const struct tern_model_config *c = &m->cfg;
	struct llm_part *H = &l->part[0], *O = l->out_part;
	int rc = 0;
	l->output_is_embd = c->tied_output && O == H;
	for (int pass = 0; pass < 2 && !rc; pass++) {
		l->loading_products = pass == 1;
		l->loading_be = H->be;
		rc = weight(l, &l->token_embd, m->w.token_embd, l->output_is_embd, e);
		l->loading_be = O->be;
		if (!rc)
			rc = weight(l, &l->output_norm, m->w.output_norm, false, e);
		if (!rc && !l->output_is_embd)
			rc = weight(l, &l->output, c->tied_output ? m->w.token_embd : m->w.output, true, e);
		if (!rc)
			rc = weight(l, &l->output_norm_b, m->w.output_norm_b, false, e);
		if (!rc)
			rc = weight(l, &l->output_b, m->w.output_b, false, e);
		for (int i = 0; !rc && i < l->n_parts; i++) {
			l->loading_be = l->part[i].be;
			rc = weight(l, &l->part[i].rope_freqs, rope_factors(m, l->n_ctx), false, e);
		}
		for (uint32_t il = 0; !rc && il < c->n_layer; il++)
			rc = load_layer(l, il, e);
	}
	return rc;
}

/* activations on every part (the widest layer decides), the logits'
 * rows on the output's; the staging of the crossings */
static int acts_alloc(struct tern_llm *l, int32_t out_rows, tern_err *e)
{
	const struct tern_model_config *c = &l->m->cfg;
	int32_t n_ub = l->n_ubatch;
	int64_t one[1] = {n_ub};
	int rc = 0;
	for (int i = 0; !rc && i < l->n_parts; i++) {
		struct llm_part *P = &l->part[i];
		rc = rc ? rc : P->be->buf_alloc(P->be, &P->ids, QT_I32, 1, one, e);
		rc = rc ? rc : P->be->buf_alloc(P->be, &P->pos, QT_I32, 1, one, e);
		rc = rc ? rc : alloc2(P->be, &P->x, QT_F32, c->n_embd, n_ub, e);
		rc = rc ? rc : alloc2(P->be, &P->h, QT_F32, c->n_embd, n_ub, e);
		rc = rc ? rc : alloc2(P->be, &P->out, QT_F32, c->n_embd, n_ub, e);
		rc = rc ? rc : act_alloc(c, P, n_ub, P == l->out_part ? out_rows : 1, e);
	}
	if (!rc && l->n_parts > 1 && !(l->staging = malloc(sizeof(float) * 2 * (size_t)n_ub * c->n_embd)))
		rc = tern_errf(e, TERN_ENOMEM, "out of memory for the staging of %d tokens", n_ub);
	return rc;
}

int tern_llm_new(struct tern_llm **out, const struct tern_model *m, struct tern_backend *be,
		 const struct tern_llm_opts *opts, tern_err *e)
{
	*out = NULL;
	const struct tern_model_config *c = &m->cfg;
	struct tern_llm_opts o = opts ? *opts : tern_llm_opts_default();
	int32_t n_ctx = 0, n_ub = 0;
	/* the device takes the last n_dev layers (llama.cpp's -ngl), the
	 * output head with dev_output; nothing placed there: no device */
	if (o.n_dev_layers < 0 || (uint32_t)o.n_dev_layers > c->n_layer)
		return tern_errf(e, TERN_EINVAL, "%d layers offloaded of %u", o.n_dev_layers, c->n_layer);
	if (o.dev == be || (!o.n_dev_layers && !o.dev_output))
		o.dev = NULL;
	int64_t max_tokens = o.dev && o.dev->max_tokens < be->max_tokens ? o.dev->max_tokens : be->max_tokens;
	int rc = check_opts(c, max_tokens, &o, &n_ctx, &n_ub, e);
	uint64_t kv = 0;
	if (!rc)
		rc = kv_cache_bytes(c, &o, n_ctx, &kv, e);
	if (rc)
		return rc;

	struct tern_llm *l = calloc(1, sizeof *l);
	if (!l)
		return tern_errf(e, TERN_ENOMEM, "out of memory");
	l->m = m;
	l->o = o;
	place_parts(l, be);
	/* ggml's rounding only where every backend of the pass takes it
	 * (lib/backend.h, TERN_BACKEND_GGML_NUMERICS); elsewhere the plain ops */
	bool ggml = tern_backend_ggml(be) && (!o.dev || tern_backend_ggml(o.dev));
	l->o.ggml_fa = o.ggml_fa && ggml;
	l->o.ggml_ops = o.ggml_ops && ggml;
	l->n_ctx = n_ctx;
	l->n_ubatch = n_ub;
	l->kv_bytes = kv;
	l->layers = calloc(c->n_layer, sizeof *l->layers);
	if (!l->layers) {
		tern_llm_free(l);
		return tern_errf(e, TERN_ENOMEM, "out of memory");
	}
	int32_t out_rows = o.logits_all ? n_ub : 1;
	rc = host_io_alloc(l, be, out_rows, e);
	/* the device runs the last n_dev_layers blocks (llama.cpp's rule) */
	for (uint32_t il = 0; !rc && il < c->n_layer; il++)
		l->layers[il].p = &l->part[o.dev && il >= c->n_layer - (uint32_t)o.n_dev_layers ? 1 : 0];
	rc = rc ? rc : load_weights(l, e);
	rc = rc ? rc : acts_alloc(l, out_rows, e);
	if (rc) {
		tern_llm_free(l);
		return rc;
	}
	*out = l;
	return 0;
}

void tern_llm_free(struct tern_llm *l)
{
	if (!l)
		return;
	/* the activations' views (act_slots) own nothing: work holds them */
	for (int i = 0; i < l->n_parts; i++) {
		struct llm_part *P = &l->part[i];
		struct tern_buf *act[] = {&P->ids, &P->pos, &P->x, &P->h, &P->out, &P->work, &P->rope_freqs};
		for (size_t k = 0; k < sizeof act / sizeof act[0]; k++)
			P->be->buf_free(P->be, act[k]);
	}
	struct tern_backend *hb = l->part[0].be, *ob = l->out_part->be;
	hb->buf_free(hb, &l->token_embd);
	struct tern_buf *w[] = {&l->output_norm, &l->output, &l->output_norm_b, &l->output_b};
	for (size_t i = 0; i < sizeof w / sizeof w[0]; i++)
		ob->buf_free(ob, w[i]);
	if (l->layers) {
		for (uint32_t il = 0; il < l->m->cfg.n_layer; il++) {
			struct layer_bufs *L = &l->layers[il];
			struct tern_backend *be = L->p ? L->p->be : hb;
			struct tern_buf *b[] = {&L->attn_norm, &L->wq, &L->wk, &L->wv, &L->wo, &L->bq, &L->bk, &L->bv,
						&L->bo, &L->q_norm, &L->k_norm, &L->attn_post_norm, &L->ffn_norm,
						&L->ffn_gate, &L->ffn_up, &L->ffn_down, &L->ffn_post_norm,
						&L->wq_a, &L->q_a_norm, &L->wq_b, &L->wkv_a, &L->kv_a_norm, &L->wk_b,
						&L->wv_b, &L->wkv_b, &L->k_cache, &L->v_cache, &L->attn_sinks, &L->gate_inp,
						&L->gate_inp_b, &L->exp_probs_b, &L->gate_exps, &L->up_exps, &L->down_exps,
						&L->gate_exps_b, &L->up_exps_b, &L->down_exps_b, &L->gate_inp_shexp,
						&L->gate_shexp, &L->up_shexp, &L->down_shexp, &L->attn_norm_b,
						&L->ffn_up_b, &L->ffn_down_b, &L->gate_up_exps};
			for (size_t i = 0; i < sizeof b / sizeof b[0]; i++)
				be->buf_free(be, b[i]);
		}
	}
	free(l->layers);
	free(l->staging);
	hb->host_free(hb, l->host_ids);
	hb->host_free(hb, l->host_pos);
	hb->host_free(hb, l->host_logits);
	hb->host_free(hb, l->host_embd);
	free(l);
}

/* ---- the forward pass --------------------------------------------------------- */


/* the norm of the residual stream: RMS, or layer norm with bias (phi2) */
static struct tern_norm model_norm(const struct tern_llm *l)
{
	const struct tern_model_config *c = &l->m->cfg;
	return (struct tern_norm){c->norm == TERN_MODEL_NORM_LAYER ? TERN_NORM_LAYER : TERN_NORM_RMS, c->norm_eps,
				  l->o.ggml_ops};
}

static int glu_kind(enum tern_model_act a)
{
	return a == TERN_MODEL_ACT_GELU ? TERN_GLU_GEGLU : a == TERN_MODEL_ACT_SWIGLU_OAI ? TERN_GLU_SWIGLU_OAI
										  : TERN_GLU_SWIGLU;
}

/* A layer's RoPE: its base and scale, YaRN's ramp and magnitude for
 * them (model.c's rope_config), the file's attention factor */
static struct tern_rope layer_rope(const struct tern_model_config *c, const struct tern_model_layer_config *lc, int mode,
				   bool ggml)
{
	return (struct tern_rope){
		.ggml = ggml,
		.mode = mode,
		.n_rot = (int)c->n_rot,
		.freq_base = lc->rope_base,
		.freq_scale = lc->rope_scale,
		.ext_factor = c->rope_ext_factor,
		.corr_low = lc->rope_corr_low,
		.corr_high = lc->rope_corr_high,
		.mscale = lc->rope_mscale,
		.attn_factor = c->rope_attn_factor,
	};
}

/* y[i] = w[i] x: the backend's product, or with ggml_ops ggml's rounding
 * of each (mat_mul_ggml) */
static void products(struct tern_llm *l, struct tern_backend *be, int n_w, const struct tern_buf *const *w,
		     const struct tern_buf *x, struct tern_buf *const *y)
{
	if (!l->o.ggml_ops) {
		be->product(be, n_w, w, x, y);
		return;
	}
	for (int i = 0; i < n_w; i++)
		be->mat_mul_ggml(be, w[i], x, y[i]);
}

/* The mixture of experts of block il over n tokens: h the normed input,
 * o the output (llama.cpp's build_moe_ffn, then qwen2moe's shared
 * expert):
 *
 *   r = Wgate_inp h (+ b);  ids, w = route(r)      (top-k, the gating)
 *   g, u = Wgate[e] h (+ b[e]), Wup[e] h (+ b[e])   for each selected e
 *   d = Wdown[e] act(g, u) (+ b[e]);  o = sum w d
 *   o += sigmoid(Wgate_inp_shexp h) * Wdown_s act(Wgate_s h, Wup_s h)
 *        (deepseek2's shared experts have no gate: o += Wdown_s act(...))
 *
 * Only the selected experts' weights are read (mat_mul_id). */
static void moe_ffn(struct tern_llm *l, uint32_t il, int64_t n)
{
	const struct tern_model_config *c = &l->m->cfg;
	const struct tern_model_moe *mc = &c->moe;
	struct layer_bufs *L = &l->layers[il];
	struct llm_part *P = L->p;
	struct tern_backend *be = P->be;
	const int64_t k = mc->n_expert_used, nf = mc->n_ff_exp, ne = c->n_embd;
	struct tern_buf h = tern_buf_rows2(&P->h, ne, n), o = tern_buf_rows2(&P->out, ne, n);
	struct tern_buf r = tern_buf_rows2(&P->router, mc->n_expert, n);
	struct tern_buf ids = tern_buf_rows2(&P->sel_ids, k, n), w = tern_buf_rows2(&P->sel_w, k, n);
	tern_be_mul(be, &L->gate_inp, &h, &r);
	if (tern_buf_opt(&L->gate_inp_b))
		be->add(be, &r, &L->gate_inp_b, &r);
	const struct tern_moe_route rp = {
		.gating = mc->gating == TERN_MODEL_GATING_SIGMOID	 ? TERN_MOE_SIGMOID
			  : mc->gating == TERN_MODEL_GATING_SOFTMAX_TOPK ? TERN_MOE_SOFTMAX_TOPK
									  : TERN_MOE_SOFTMAX,
		.k = (int)k,
		.norm = mc->norm_w,
		.scale = mc->w_scale,
		.n_group = (int)mc->n_group,
		.n_group_used = (int)mc->n_group_used,
	};
	be->moe_route(be, &r, tern_buf_opt(&L->exp_probs_b), &ids, &w, &rp);

	struct tern_buf h3 = tern_buf_rows3(&P->h, ne, 1, n);
	struct tern_buf g = tern_buf_rows3(&P->eg, nf, k, n);
	struct tern_buf u = tern_buf_rows3(&P->eu, nf, k, n);
	struct tern_buf d = tern_buf_rows3(&P->ed, ne, k, n);
	be->mat_mul_id(be, &L->gate_exps, &h3, &ids, tern_buf_opt(&L->gate_exps_b), &g);
	be->mat_mul_id(be, &L->up_exps, &h3, &ids, tern_buf_opt(&L->up_exps_b), &u);
	be->glu(be, &g, &u, &g, glu_kind(mc->act));
	be->mat_mul_id(be, &L->down_exps, &g, &ids, tern_buf_opt(&L->down_exps_b), &d);
	be->moe_combine(be, &d, &w, &o);

	if (!tern_buf_opt(&L->gate_shexp))
		return;
	/* the shared expert, in the dense FFN's buffers; its output into
	 * ed (free again), gated into h (no longer read) where it has a gate
	 * (qwen2moe), added as it is otherwise (deepseek2) */
	const int64_t ns = mc->n_ff_shexp;
	struct tern_buf sg = tern_buf_rows2(&P->gate, ns, n);
	struct tern_buf su = tern_buf_rows2(&P->up, ns, n);
	struct tern_buf sd = tern_buf_rows2(&P->ed, ne, n);
	struct tern_buf gt = tern_buf_rows2(&P->sgate, 1, n);
	const bool gated = tern_buf_opt(&L->gate_inp_shexp) != NULL;
	const struct tern_buf *w3[3] = {&L->gate_shexp, &L->up_shexp, &L->gate_inp_shexp};
	struct tern_buf *y3[3] = {&sg, &su, &gt};
	be->product(be, gated ? 3 : 2, w3, &h, y3);
	be->glu(be, &sg, &su, &sg, TERN_GLU_SWIGLU);
	tern_be_mul(be, &L->down_shexp, &sg, &sd);
	if (!gated) {
		be->add(be, &o, &sd, &o);
		return;
	}
	be->unary(be, &gt, &gt, TERN_UNARY_SIGMOID);
	struct tern_buf sd3 = tern_buf_rows3(&P->ed, ne, 1, n);
	be->moe_combine(be, &sd3, &gt, &h);
	be->add(be, &o, &h, &o);
}

/* Multi-head latent attention (DeepSeek-V2/V3), as llama.cpp's MLA path
 * computes it, over n tokens of layer il; o gets the output projection.
 *
 *   q        = Wq h, or Wq_b norm(Wq_a h)            {nope | rope} per head
 *   [c | kp] = Wkv_a h;  c = norm(c) * kv_a_norm;  kp = rope(kp)
 *   cache[pos] = [c | kp]                               (n_lora_kv + n_rot values)
 *   qm = [W_kb^T q_nope | rope(q_rope)]  per head      (W_kb absorbed into the query)
 *   u  = attention(qm, K = cache, V = cache's first n_lora_kv columns)
 *   a  = W_vb u  per head;  o = Wo a
 *
 * K of head h would be W_kb c and its scores q_nope . W_kb c = (W_kb^T
 * q_nope) . c, V would be W_vb c and sum p V = W_vb sum p c: the heads are
 * never expanded, the cache holds the latent only (one KV head). The row
 * splits and joins are copies between column windows. */
static void attn_mla(struct tern_llm *l, uint32_t il, int64_t n)
{
	const struct tern_model_config *c = &l->m->cfg;
	const struct tern_model_layer_config *lc = &c->layer[il];
	struct layer_bufs *L = &l->layers[il];
	struct llm_part *P = L->p;
	struct tern_backend *be = P->be;
	const int64_t nh = lc->n_head, hd = c->head_dim, nr = c->n_rot, nope = hd - nr, kvr = c->n_lora_kv;
	const struct tern_norm rms = {TERN_NORM_RMS, c->norm_eps, l->o.ggml_ops};
	int64_t n1[1] = {n};
	struct tern_buf pos = tern_buf_reshape(&P->pos, 1, n1);
	struct tern_buf h = tern_buf_rows2(&P->h, c->n_embd, n), o = tern_buf_rows2(&P->out, c->n_embd, n);
	struct tern_buf q = tern_buf_rows2(&P->q, nh * hd, n), kv = tern_buf_rows2(&P->mla_kv, kvr + nr, n);

	/* the query and the compressed KV, both from h */
	struct tern_buf qa = tern_buf_opt(&L->wq_a) ? tern_buf_rows2(&P->mla_qa, c->n_lora_q, n) : q;
	const struct tern_buf *wq = tern_buf_opt(&L->wq_a) ? &L->wq_a : &L->wq;
	const struct tern_buf *w2[2] = {wq, &L->wkv_a};
	struct tern_buf *y2[2] = {&qa, &kv};
	be->product(be, 2, w2, &h, y2);
	if (tern_buf_opt(&L->wq_a)) {
		be->norm(be, &qa, NULL, &L->q_a_norm, NULL, &qa, &rms);
		tern_be_mul(be, &L->wq_b, &qa, &q);
	}
	const struct tern_rope rope = layer_rope(c, lc, TERN_ROPE_NORMAL, l->o.ggml_ops);

	/* the cache row: the normed latent, then the rotated shared key part */
	struct tern_buf lat = tern_buf_rows2(&P->mla_lat, kvr, n), kv_lat = tern_buf_cols(&kv, 0, kvr);
	struct tern_buf pe = tern_buf_rows3(&P->mla_pe, nr, 1, n), kv_pe = tern_buf_cols(&kv, kvr, nr);
	be->copy(be, &kv_lat, &lat);
	be->norm(be, &lat, NULL, &L->kv_a_norm, NULL, &lat, &rms);
	be->copy(be, &lat, &kv_lat);
	be->copy(be, &kv_pe, &pe);
	/* the query's rotated part, turned in the same call as the key's */
	struct tern_buf q3 = tern_buf_rows3(&P->q, hd, nh, n);
	struct tern_buf q_nope = tern_buf_cols(&q3, 0, nope), q_pe = tern_buf_cols(&q3, nope, nr);
	struct tern_buf qn = tern_buf_rows3(&P->mla_qn, nope, nh, n), qp = tern_buf_rows3(&P->mla_qp, nr, nh, n);
	be->copy(be, &q_pe, &qp);
	be->norm_rope(be, &qp, &pe, NULL, NULL, &pos, NULL, NULL, &rope);
	be->copy(be, &pe, &kv_pe);
	struct tern_buf kv3 = tern_buf_rows3(&P->mla_kv, kvr + nr, 1, n);
	be->kv_store(be, &L->k_cache, &kv3, &pos, NULL);

	/* the query over the cache: W_kb^T q_nope beside the rotated q_rope */
	struct tern_buf qx = tern_buf_rows3(&P->mla_qx, kvr, nh, n), qm = tern_buf_rows3(&P->mla_qm, kvr + nr, nh, n);
	be->copy(be, &q_nope, &qn);
	be->mat_mul_heads(be, &L->wk_b, &qn, &qx);
	struct tern_buf qm_lat = tern_buf_cols(&qm, 0, kvr), qm_pe = tern_buf_cols(&qm, kvr, nr);
	be->copy(be, &qx, &qm_lat);
	be->copy(be, &qp, &qm_pe);

	/* one KV head: the latent rows are K, their first kvr values V */
	struct tern_buf v = tern_buf_cols(&L->k_cache, 0, kvr);
	const struct tern_attn at = {.scale = c->attn_scale};
	be->attention(be, &qm, &L->k_cache, &v, &pos, NULL, &qx, &at);
	struct tern_buf a3 = tern_buf_rows3(&P->a, c->head_dim_v, nh, n);
	struct tern_buf a = tern_buf_rows2(&P->a, nh * c->head_dim_v, n);
	be->mat_mul_heads(be, &L->wv_b, &qx, &a3);
	tern_be_mul(be, &L->wo, &a, &o);
}

/* The attention of the other architectures over n tokens of layer il:
 * QKV, their norms and RoPE, the cache, attention, the output projection
 * (and its norm) into o. */
static void attn_mha(struct tern_llm *l, uint32_t il, int64_t n)
{
	const struct tern_model_config *c = &l->m->cfg;
	const struct tern_model_layer_config *lc = &c->layer[il];
	struct layer_bufs *L = &l->layers[il];
	struct llm_part *P = L->p;
	struct tern_backend *be = P->be;
	const int64_t hd = c->head_dim, hdv = c->head_dim_v, nh = lc->n_head, nkv = lc->n_head_kv;
	const struct tern_norm rms = {TERN_NORM_RMS, c->norm_eps, l->o.ggml_ops};

	struct tern_buf h = tern_buf_rows2(&P->h, c->n_embd, n), o = tern_buf_rows2(&P->out, c->n_embd, n);
	struct tern_buf q = tern_buf_rows2(&P->q, nh * hd, n);
	struct tern_buf k = tern_buf_rows2(&P->k, nkv * hd, n);
	struct tern_buf v = tern_buf_rows2(&P->v, nkv * hdv, n);
	struct tern_buf a = tern_buf_rows2(&P->a, nh * hdv, n);
	int64_t n1[1] = {n};
	struct tern_buf pos = tern_buf_reshape(&P->pos, 1, n1); /* the first n */

	/* attention; Q, K and V in one call */
	const struct tern_buf *w3[3] = {&L->wq, &L->wk, &L->wv};
	struct tern_buf *y3[3] = {&q, &k, &v};
	products(l, be, 3, w3, &h, y3);
	if (tern_buf_opt(&L->bq))
		be->add(be, &q, &L->bq, &q);
	if (tern_buf_opt(&L->bk))
		be->add(be, &k, &L->bk, &k);
	if (tern_buf_opt(&L->bv))
		be->add(be, &v, &L->bv, &v);
	struct tern_buf q3 = tern_buf_rows3(&P->q, hd, nh, n);
	struct tern_buf k3 = tern_buf_rows3(&P->k, hd, nkv, n);
	struct tern_buf v3 = tern_buf_rows3(&P->v, hdv, nkv, n);
	struct tern_buf a3 = tern_buf_rows3(&P->a, hdv, nh, n);
	const struct tern_rope rope = layer_rope(c, lc, c->rope == TERN_MODEL_ROPE_NEOX ? TERN_ROPE_NEOX : TERN_ROPE_NORMAL,
						 l->o.ggml_ops);
	/* llama3's per-dimension factors belong to the global RoPE only */
	const struct tern_buf *freqs = lc->is_swa ? NULL : tern_buf_opt(&P->rope_freqs);
	/* the Q/K norms where the model has them, then RoPE: one call */
	be->norm_rope(be, &q3, &k3, tern_buf_opt(&L->q_norm), tern_buf_opt(&L->k_norm), &pos, freqs, &rms, &rope);
	be->kv_store(be, &L->k_cache, &k3, &pos, NULL);
	be->kv_store(be, &L->v_cache, &v3, &pos, NULL);
	/* ggml's flash attention (llama.h: ggml_fa) where the layer allows it */
	const bool ggml_attn = l->o.ggml_fa && L->k_cache.type == QT_F16 && L->v_cache.type == QT_F16 && hd % 16 == 0 &&
			       hd == hdv && !lc->is_swa && !(c->attn_softcap > 0) && !tern_buf_opt(&L->attn_sinks);
	const struct tern_attn at = {
		.scale = c->attn_scale,
		.window = lc->is_swa ? (int32_t)c->n_swa : 0,
		.softcap = c->attn_softcap,
		.sinks = tern_buf_opt(&L->attn_sinks),
		.f16_split = ggml_attn && n < TERN_LLM_GGML_FA_TILE ? 1 : 0,
		.ggml = ggml_attn && l->o.ggml_ops,
	};
	be->attention(be, &q3, &L->k_cache, &L->v_cache, &pos, NULL, &a3, &at);
	products(l, be, 1, (const struct tern_buf *[]){&L->wo}, &a, (struct tern_buf *[]){&o});
	if (tern_buf_opt(&L->bo))
		be->add(be, &o, &L->bo, &o);
}

/* The input of the first block and its norm are made by the caller; this
 * runs block il over n tokens: x is the residual (its pending addition r
 * from the previous block already folded in by the caller's norm), h the
 * normed input. On return o holds the block's FFN output, not yet added
 * to x (the next norm adds it). */
static void block(struct tern_llm *l, uint32_t il, int64_t n)
{
	const struct tern_model_config *c = &l->m->cfg;
	const struct tern_model_layer_config *lc = &c->layer[il];
	struct layer_bufs *L = &l->layers[il];
	struct llm_part *P = L->p;
	struct tern_backend *be = P->be;
	const struct tern_norm rms = {TERN_NORM_RMS, c->norm_eps, l->o.ggml_ops}, nrm = model_norm(l);
	struct tern_buf h = tern_buf_rows2(&P->h, c->n_embd, n);
	struct tern_buf x = tern_buf_rows2(&P->x, c->n_embd, n);
	struct tern_buf o = tern_buf_rows2(&P->out, c->n_embd, n);

	if (c->n_lora_kv)
		attn_mla(l, il, n);
	else
		attn_mha(l, il, n);
	if (tern_buf_opt(&L->attn_post_norm))
		be->norm(be, &o, NULL, &L->attn_post_norm, NULL, &o, &rms);

	if (c->parallel) /* phi2: the FFN reads the same h; the attention joins x now */
		be->add(be, &x, &o, &x);
	else /* x += o; h = norm(x) * ffn_norm */
		be->norm(be, &x, &o, &L->ffn_norm, NULL, &h, &nrm);

	/* feed-forward */
	if (lc->is_moe) {
		moe_ffn(l, il, n);
		if (tern_buf_opt(&L->ffn_post_norm))
			be->norm(be, &o, NULL, &L->ffn_post_norm, NULL, &o, &rms);
		return;
	}
	struct tern_buf g = tern_buf_rows2(&P->gate, lc->n_ff, n), u = tern_buf_rows2(&P->up, lc->n_ff, n);
	if (c->ffn_plain) { /* phi2: down(gelu(up h + b)) + b */
		tern_be_mul(be, &L->ffn_up, &h, &u);
		if (tern_buf_opt(&L->ffn_up_b))
			be->add(be, &u, &L->ffn_up_b, &u);
		be->unary(be, &u, &u, TERN_UNARY_GELU);
		tern_be_mul(be, &L->ffn_down, &u, &o);
		if (tern_buf_opt(&L->ffn_down_b))
			be->add(be, &o, &L->ffn_down_b, &o);
		return;
	}
	const struct tern_buf *w2[2] = {&L->ffn_gate, &L->ffn_up};
	struct tern_buf *y2[2] = {&g, &u};
	products(l, be, 2, w2, &h, y2);
	be->glu(be, &g, &u, &g, glu_kind(c->act));
	products(l, be, 1, (const struct tern_buf *[]){&L->ffn_down}, &g, (struct tern_buf *[]){&o});
	if (tern_buf_opt(&L->ffn_post_norm))
		be->norm(be, &o, NULL, &L->ffn_post_norm, NULL, &o, &rms);
}

/* The residual stream of n tokens from part `from` to part `to`: x, and
 * the pending FFN output (out) once a block has run. A decode step ends
 * on the part it leaves (a GPU closes its recorded step before the copy's
 * sync) and begins anew on the one it enters. */
static int cross(struct tern_llm *l, struct llm_part *from, struct llm_part *to, int64_t n, bool with_out,
		 tern_err *e)
{
	const int64_t ne = l->m->cfg.n_embd;
	if (n == 1)
		from->be->end_step(from->be);
	struct tern_buf fx = tern_buf_rows2(&from->x, ne, n), tx = tern_buf_rows2(&to->x, ne, n);
	int rc = tern_backend_copy(&fx, &tx, l->staging, e);
	if (!rc && with_out) {
		struct tern_buf fo = tern_buf_rows2(&from->out, ne, n), to_o = tern_buf_rows2(&to->out, ne, n);
		rc = tern_backend_copy(&fo, &to_o, l->staging + (size_t)l->n_ubatch * ne, e);
	}
	if (rc) {
		tern_err_prefixf(e, "from %s to %s", from->be->name, to->be->name);
		return rc;
	}
	if (n == 1)
		to->be->begin_step(to->be);
	return 0;
}

/* n tokens (1..n_ubatch) at positions n_past.. through the model: the
 * token embedding on part[0], each block on its layer's part, the output
 * head on out_part, crossing where the parts change */
static int forward(struct tern_llm *l, const int32_t *tokens, int32_t n, bool last_chunk, tern_err *e)
{
	const struct tern_model_config *c = &l->m->cfg;
	struct llm_part *P = &l->part[0];
	struct tern_backend *be = P->be;
	const struct tern_norm nrm = model_norm(l);
	for (int32_t i = 0; i < n; i++) {
		l->host_ids[i] = tokens[i];
		l->host_pos[i] = l->n_past + i;
	}
	if (n == 1)
		be->begin_step(be);
	be->upload(be, &P->ids, 0, l->host_ids, sizeof(int32_t) * (size_t)n);
	for (int i = 0; i < l->n_parts; i++)
		l->part[i].be->upload(l->part[i].be, &l->part[i].pos, 0, l->host_pos, sizeof(int32_t) * (size_t)n);

	int64_t n1[1] = {n};
	struct tern_buf ids = tern_buf_reshape(&P->ids, 1, n1);
	struct tern_buf x = tern_buf_rows2(&P->x, c->n_embd, n);
	be->get_rows(be, &l->token_embd, &ids, &x);
	if (c->embd_scale != 1.0f)
		be->scale(be, &x, &x, c->embd_scale);
	int rc = 0;
	for (uint32_t il = 0; il < c->n_layer; il++) {
		if (l->layers[il].p != P) {
			if ((rc = cross(l, P, l->layers[il].p, n, il > 0, e)) != 0)
				return rc;
			P = l->layers[il].p;
			be = P->be;
		}
		/* the first block's input has nothing to add; the others add
		 * the previous block's FFN output */
		x = tern_buf_rows2(&P->x, c->n_embd, n);
		struct tern_buf h = tern_buf_rows2(&P->h, c->n_embd, n), o = tern_buf_rows2(&P->out, c->n_embd, n);
		be->norm(be, &x, il ? &o : NULL, &l->layers[il].attn_norm, tern_buf_opt(&l->layers[il].attn_norm_b), &h, &nrm);
		block(l, il, n);
	}
	if (l->out_part != P) {
		if ((rc = cross(l, P, l->out_part, n, c->n_layer > 0, e)) != 0)
			return rc;
		P = l->out_part;
		be = P->be;
	}

	/* the output rows: the last token's, or every token's */
	x = tern_buf_rows2(&P->x, c->n_embd, n);
	struct tern_buf h = tern_buf_rows2(&P->h, c->n_embd, n), o = tern_buf_rows2(&P->out, c->n_embd, n);
	int64_t r0 = l->o.logits_all ? 0 : n - 1, nr = l->o.logits_all ? n : 1;
	if (l->o.embeddings) {
		/* every row's final hidden state, no logits */
		be->norm(be, &x, &o, &l->output_norm, tern_buf_opt(&l->output_norm_b), &h, &nrm);
		be->download(be, &h, 0, l->host_embd, sizeof(float) * (size_t)n * c->n_embd);
	} else if (last_chunk || l->o.logits_all) {
		struct tern_buf xr = tern_buf_rows(&x, r0, nr), orr = tern_buf_rows(&o, r0, nr);
		struct tern_buf hr = tern_buf_rows(&h, r0, nr);
		be->norm(be, &xr, &orr, &l->output_norm, tern_buf_opt(&l->output_norm_b), &hr, &nrm);
		struct tern_buf lg = tern_buf_rows2(&P->logits, c->n_vocab, nr);
		tern_be_mul(be, l->output_is_embd ? &l->token_embd : &l->output, &hr, &lg);
		if (tern_buf_opt(&l->output_b))
			be->add(be, &lg, &l->output_b, &lg);
		if (l->greedy && !l->o.logits_all) {
			/* the step's ids were read by its get_rows at the start:
			 * the first slot takes the greedy id at its end (the
			 * soft-cap is monotonic and leaves the argmax alone) */
			int64_t one[1] = {1};
			struct tern_buf gid = tern_buf_reshape(&P->ids, 1, one);
			be->argmax(be, &lg, &gid);
			be->download(be, &gid, 0, l->host_ids, sizeof(int32_t));
		} else {
			be->download(be, &lg, 0, l->host_logits, sizeof(float) * (size_t)nr * c->n_vocab);
		}
	}
	if (n == 1)
		be->end_step(be);
	/* the parts left behind were synced by the crossings */
	rc = be->sync(be, e);
	if (rc)
		return rc;
	l->out_greedy = false;
	if (l->greedy && !l->o.logits_all && !l->o.embeddings && last_chunk) {
		l->out_greedy = true;
		l->greedy_id = l->host_ids[0];
		return 0;
	}
	if (!l->o.embeddings && (last_chunk || l->o.logits_all) && c->final_softcap > 0) {
		float s = c->final_softcap;
		float *lg = l->host_logits;
		for (size_t i = 0; i < (size_t)nr * c->n_vocab; i++)
			lg[i] = s * tanhf(lg[i] / s);
	}
	return 0;
}

int tern_llm_decode(struct tern_llm *l, const int32_t *tokens, int32_t n, tern_err *e)
{
	if (n < 1 || !tokens)
		return tern_errf(e, TERN_EINVAL, "decode: no tokens");
	if ((l->o.logits_all || l->o.embeddings) && n > l->n_ubatch)
		return tern_errf(e, TERN_EINVAL, "decode: %d tokens with every row's %s kept: at most %d per call",
				 n, l->o.embeddings ? "embedding" : "logits", l->n_ubatch);
	if (n > l->n_ctx - l->n_past)
		return tern_errf(e, TERN_ERANGE, "%d more tokens do not fit the context of %d (%d used)", n, l->n_ctx,
				 l->n_past);
	const int32_t n_vocab = (int32_t)l->m->cfg.n_vocab;
	for (int32_t i = 0; i < n; i++)
		if (tokens[i] < 0 || tokens[i] >= n_vocab)
			return tern_errf(e, TERN_EINVAL, "token id %d is outside the vocabulary (0..%d)", tokens[i],
					 n_vocab - 1);
	int32_t start = l->n_past;
	l->n_out = 0;
	for (int32_t done = 0; done < n;) {
		int32_t chunk = n - done < l->n_ubatch ? n - done : l->n_ubatch;
		bool last = done + chunk == n;
		int rc = forward(l, tokens + done, chunk, last, e);
		if (rc) {
			l->n_past = start;
			return rc;
		}
		l->n_past += chunk;
		done += chunk;
		l->n_last = chunk;
	}
	l->n_out = l->o.logits_all ? l->n_last : 1;
	return 0;
}

void tern_llm_set_greedy(struct tern_llm *l, bool on) { l->greedy = on && !l->o.logits_all && !l->o.embeddings; }

bool tern_llm_greedy_id(const struct tern_llm *l, int32_t *id)
{
	*id = l->out_greedy ? l->greedy_id : -1;
	return l->n_out && l->out_greedy;
}

const float *tern_llm_logits(const struct tern_llm *l, int32_t i)
{
	if (!l->n_out || l->o.embeddings || l->out_greedy)
		return NULL;
	if (i < 0 || i == l->n_last - 1)
		return l->host_logits + (size_t)(l->n_out - 1) * l->m->cfg.n_vocab;
	if (!l->o.logits_all || i >= l->n_out)
		return NULL;
	return l->host_logits + (size_t)i * l->m->cfg.n_vocab;
}

const float *tern_llm_embedding(const struct tern_llm *l, int32_t i)
{
	if (!l->host_embd || !l->n_out || i < 0 || i >= l->n_last)
		return NULL;
	return l->host_embd + (size_t)i * l->m->cfg.n_embd;
}

int32_t tern_llm_n_past(const struct tern_llm *l)
{
	return l->n_past;
}

int32_t tern_llm_n_ctx(const struct tern_llm *l)
{
	return l->n_ctx;
}

int32_t tern_llm_n_vocab(const struct tern_llm *l)
{
	return (int32_t)l->m->cfg.n_vocab;
}

const struct tern_model *tern_llm_model(const struct tern_llm *l)
{
	return l->m;
}

int32_t tern_llm_n_ubatch(const struct tern_llm *l)
{
	return l->n_ubatch;
}

uint64_t tern_llm_kv_bytes(const struct tern_llm *l)
{
	return l->kv_bytes;
}

void tern_llm_rewind(struct tern_llm *l, int32_t n_past)
{
	if (n_past >= 0 && n_past <= l->n_past) {
		l->n_past = n_past;
		l->n_out = 0;
	}
}
