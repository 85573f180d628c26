/* embed.c - sentence embeddings (embed.h): the encoders' forward pass
 * (bert, nomic-bert), the decoders' through lib/llm/llm.h, pooling and
 * normalisation.
 *
 * The encoder block, per token of one input (llama.cpp's bert graph,
 * src/models/bert.cpp, is where these facts come from):
 *
 *   x  = tok_embd[id] + token_types[0] + position_embd[pos]   (bert)
 *   x  = tok_embd[id] + token_types[0]                        (nomic-bert)
 *   x  = LayerNorm(x) * w + b
 *   per block:
 *     q, k, v = Wq x + bq, Wk x + bk, Wv x + bv   (nomic-bert: one fused
 *               Wqkv, split here into three row ranges; RoPE NEOX on q, k)
 *     a  = attention over the whole input (not causal), 1/sqrt(head_dim)
 *     x  = LayerNorm(x + Wo a + bo) * w + b          (post-norm)
 *     f  = Wdown gelu(Wup x + bup) + bdown           (bert)
 *     f  = Wdown (silu(Wgate x) * Wup x)             (nomic-bert: llama.cpp
 *          passes no FFN biases for it)
 *     x  = LayerNorm(x + f) * w + b
 *
 * Non-causal attention is the backend's attention op with every query at
 * the last position of the input (lib/backend.h: key p is visible to a
 * query at q iff p <= q): each token then sees all n keys, and the K and
 * V of the input are passed directly, with no cache.
 *
 * The attention and the GELU round as llama.cpp's CPU graph does (its
 * defaults, which llama-embedding runs with): flash attention, which casts
 * K and V to f16, and for an input of fewer than 64 tokens (ggml's query
 * tile) also rounds the query to f16 and keeps the running sum of V rows
 * in f16 (struct tern_attn's f16_split), longer ones in f32 by tiles (below); GELU
 * through ggml's f16 table (TERN_UNARY_GELU_F16). These roundings are
 * small (about 5e-4 relative on the attention's output) but not harmless
 * to copy or not: every product of a quantized file rounds its input to
 * 8-bit levels again, and an input that differs by d moves about d / step
 * of its values to the next level, an error of about sqrt(d * step) that
 * no float rounding reaches. Computed in f32 instead, bert-q4_k's
 * embeddings agreed with llama.cpp's to a cosine of 0.99981, bert-q8_0's
 * to 0.99991; so rounded, 0.99997 and 0.99999. Likewise a product with
 * f16 or bf16 weights reads its input rounded to that type (act_in), as
 * ggml's on x86 does: bf16 files then agree to a median cosine of
 * 0.9999995 instead of 0.999996.
 *
 * The rest rounds as ggml's x86 AVX-512 build (llama.cpp's reference
 * data) does, the same bits under every SIMD variant: the products of
 * Q8_0, Q4_0 and Q4_K weights through the backend's mat_mul_ggml
 * (quant/ggml_order.h: the activations quantized and the float sums taken
 * in ggml's order), the layer norms and the decoders' RMS norms (struct
 * tern_norm's ggml), RoPE (tern_rope's ggml: the first product fused, as
 * GCC compiles ggml's), and the attention (tern_attn's ggml: the scores'
 * dot in ggml_vec_dot_f16's order below 64 tokens, ggml's tiled flash
 * attention from 64). Each was found by comparing llama.cpp's graph node by
 * node with tern's on identical inputs; together they take the quantized
 * files from a worst cosine of 0.99988 to 1.00000000 (tests/test_embed.c).
 * All of these but act_in's copies and the f16 K and V are ggml's CPU
 * rounding, requests only a backend with TERN_BACKEND_GGML_NUMERICS takes
 * (lib/backend.h): on one without (a GPU's) the encoders run the plain f32
 * ops (product, TERN_UNARY_GELU, no f16_split, no .ggml; em->gg).
 *
 * Pooling is done on the host over the downloaded rows (mean in double);
 * the row count is the input's, so the transfer is at most n_ctx rows. */
#include "lib/llm/embed.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/core/quote.h"
#include "lib/llm/llm.h"
#include "lib/llm/model.h"
#include "quant/quant.h"

/* ---- names ---------------------------------------------------------------- */

static const char *const pooling_names[] = {"none", "mean", "cls", "last", "rank"};

const char *tern_pooling_name(int pooling)
{
	if (pooling == TERN_POOLING_UNSPECIFIED)
		return "unspecified";
	if (pooling < 0 || pooling > TERN_POOLING_RANK)
		return "?";
	return pooling_names[pooling];
}

int tern_pooling_by_name(const char *name)
{
	for (int i = 0; name && i <= TERN_POOLING_RANK; i++)
		if (strcmp(name, pooling_names[i]) == 0)
			return i;
	return -2;
}

struct tern_embed_opts tern_embed_opts_default(void)
{
	return (struct tern_embed_opts){
		.pooling = TERN_POOLING_UNSPECIFIED, .n_ctx = -1, .type_k = QT_F16, .type_v = QT_F16};
}

bool tern_embed_is_encoder(const char *arch)
{
	return arch && (strcmp(arch, "bert") == 0 || strcmp(arch, "nomic-bert") == 0);
}

const char *tern_embed_encoders(void)
{
	return "bert, nomic-bert";
}

/* ---- the encoders' weights ------------------------------------------------- */

/* One block. The Q, K, V weights are the file's tensors or row ranges of
 * its fused attn_qkv (then views owned here, in qkv_part). */
struct enc_layer {
	const struct tern_tensor_view *wq, *wk, *wv;     /* {n_embd, n_embd} */
	const struct tern_tensor_view *bq, *bk, *bv;     /* {n_embd} or NULL */
	const struct tern_tensor_view *wo, *bo;          /* {n_embd, n_embd}, {n_embd} or NULL */
	const struct tern_tensor_view *attn_norm, *attn_norm_b;  /* attn_output_norm {n_embd} */
	const struct tern_tensor_view *up, *up_b;        /* {n_embd, n_ff}, {n_ff} or NULL */
	const struct tern_tensor_view *gate;             /* nomic-bert: {n_embd, n_ff} */
	const struct tern_tensor_view *down, *down_b;    /* {n_ff, n_embd}, {n_embd} or NULL */
	const struct tern_tensor_view *out_norm, *out_norm_b;  /* layer_output_norm {n_embd} */
	struct tern_tensor_view qkv_part[6];             /* Q, K, V weights then biases split from attn_qkv */
};

struct enc_config {
	bool nomic;          /* RoPE, fused QKV, SwiGLU, no position table */
	bool causal;         /* {arch}.attention.causal (false for every real file) */
	uint32_t n_embd, n_ff, n_head, head_dim, n_layer, n_vocab, n_ctx_train, n_rot;
	float eps;           /* attention.layer_norm_epsilon */
	float rope_base, rope_scale;
};

struct enc_bufs {
	struct tern_buf wq, wk, wv, bq, bk, bv, wo, bo, attn_norm, attn_norm_b;
	struct tern_buf up, up_b, gate, down, down_b, out_norm, out_norm_b;
};

struct tern_embed {
	struct tern_embed_info info;
	const tern_mf *mf;
	int pooling;          /* resolved by init */
	int32_t n_ctx;
	struct tern_backend *be;
	bool gg; /* the backend takes ggml's rounding (TERN_BACKEND_GGML_NUMERICS) */

	/* decoders */
	struct tern_model *model;
	struct tern_llm *llm;
	int32_t n_ubatch;
	double *acc;                        /* [n_embd]: the mean's sum */

	/* encoders */
	struct enc_config c;
	const struct tern_tensor_view *tok_embd, *type_embd, *pos_embd, *embd_norm, *embd_norm_b;
	struct enc_layer *layers;           /* [n_layer] */
	struct tern_buf b_tok, b_type, b_pos, b_norm, b_norm_b;
	struct enc_bufs *bl;                /* [n_layer] */
	struct tern_buf ids, zeros, pos, apos;  /* i32 [n_ctx] */
	struct tern_buf x, h, q, k, v, a, o, up, gate; /* f32 [n_ctx][width] */
	struct tern_buf k16, v16;           /* f16 [n_ctx][n_embd]: the attention's K and V */
	struct tern_buf r16, rbf;           /* f16, bf16 [n_ctx][max(n_embd, n_ff)] when a product's
					     * weights are: its input rounded (act_in) */
	int32_t *host_ids, *host_pos, *host_apos; /* [n_ctx] */
	float *host_out;                    /* [n_ctx][n_embd] */
};

/* rows [r0, r0 + n) of a 2-D tensor (or elements of a 1-D one) as a view */
static struct tern_tensor_view part_of(const struct tern_tensor_view *t, uint64_t r0, uint64_t n)
{
	struct tern_tensor_view v = *t;
	bool vec = t->ne[1] == 1;
	size_t unit = vec ? quant_row_size(t->type, 1, NULL) : quant_row_size(t->type, t->ne[0], NULL);
	v.data = (const uint8_t *)t->data + unit * r0;
	v.offset += unit * r0;
	if (vec)
		v.ne[0] = n;
	else
		v.ne[1] = n;
	v.nbytes = unit * n;
	return v;
}

static int read_int_key(const tern_mf *mf, const char *arch, const char *k, int64_t *out, tern_err *e)
{
	char key[128];
	snprintf(key, sizeof key, "%s.%s", arch, k);
	const struct tern_mf_kv *kv = tern_mf_find(mf, key);
	if (!kv)
		return 0;
	if (kv->v.type != GGUF_T_BOOL && !gguf_value_is_int(&kv->v))
		return tern_errf(e, TERN_ETYPE, "key '%s': %s, want an integer", key, gguf_vtype_name(kv->v.type));
	*out = gguf_value_i64(&kv->v);
	return 1;
}

static int enc_config(struct tern_embed *em, const struct tern_arch_llm *hp, tern_err *e)
{
	struct enc_config *c = &em->c;
	const char *a = hp->arch;
	c->nomic = strcmp(a, "nomic-bert") == 0;
	c->n_embd = hp->n_embd;
	c->n_ff = hp->n_ff;
	c->n_head = hp->n_head;
	c->head_dim = hp->n_embd_head_k;
	c->n_layer = hp->n_layer;
	c->n_vocab = hp->n_vocab;
	c->n_ctx_train = hp->n_ctx_train;
	c->n_rot = hp->n_rot;
	c->eps = hp->norm_eps;
	c->rope_base = hp->rope_freq_base;
	c->rope_scale = 1.0f / hp->rope_scaling_factor;
	if (!(hp->norm_eps > 0))
		return tern_errf(e, TERN_EFORMAT, "missing key '%s.attention.layer_norm_epsilon'", a);
	if (hp->n_expert)
		return tern_errf(e, TERN_EUNSUPPORTED, "mixture of experts ('%s.expert_count' = %u) is not supported", a,
				 hp->n_expert);
	if (hp->rope_scaling == TERN_ROPE_SCALING_YARN || hp->rope_scaling == TERN_ROPE_SCALING_LONGROPE)
		return tern_errf(e, TERN_EUNSUPPORTED, "'%s.rope.scaling.type' = '%s' is not supported (supported: none, "
				 "linear)", a, hp->rope_scaling_name);
	for (uint32_t l = 0; l < hp->n_layer; l++)
		if (hp->n_head_l[l] != hp->n_head || hp->n_head_kv_l[l] != hp->n_head || hp->n_ff_l[l] != hp->n_ff)
			return tern_errf(e, TERN_EUNSUPPORTED, "layer %u: an encoder with grouped heads or per-layer sizes "
					 "is not supported", l);
	if ((uint64_t)c->n_head * c->head_dim != c->n_embd || hp->n_embd_head_v != c->head_dim)
		return tern_errf(e, TERN_EUNSUPPORTED, "an encoder whose heads (%u x %u) do not make its width %u is not "
				 "supported", c->n_head, c->head_dim, c->n_embd);
	if (c->head_dim > TERN_ATTN_MAX_HEAD_DIM || !c->n_ff)
		return tern_errf(e, TERN_EUNSUPPORTED, "head size %u or feed-forward size %u is not supported",
				 c->head_dim, c->n_ff);
	int64_t causal = 0;
	int rc = read_int_key(em->mf, a, "attention.causal", &causal, e);
	if (rc < 0)
		return rc;
	c->causal = causal != 0;
	return 0;
}

static int enc_weights(struct tern_embed *em, tern_err *e)
{
	const struct enc_config *c = &em->c;
	const tern_mf *mf = em->mf;
	uint64_t d = c->n_embd, ff = c->n_ff;
	int rc = tern_model_get_tensor(mf, "token_embd.weight", d, c->n_vocab, true, true, &em->tok_embd, e);
	/* llama.cpp: token types are optional; the position table is bert's */
	if (!rc) {
		const struct tern_tensor_view *t = tern_mf_find_tensor(mf, "token_types.weight");
		if (t)
			rc = tern_model_get_tensor(mf, "token_types.weight", d, t->ne[1] ? t->ne[1] : 1, true, true, &em->type_embd, e);
	}
	if (!rc && !c->nomic)
		rc = tern_model_get_tensor(mf, "position_embd.weight", d, c->n_ctx_train, true, true, &em->pos_embd, e);
	if (!rc)
		rc = tern_model_get_tensor(mf, "token_embd_norm.weight", d, 1, false, true, &em->embd_norm, e);
	if (!rc)
		rc = tern_model_get_tensor(mf, "token_embd_norm.bias", d, 1, false, true, &em->embd_norm_b, e);
	for (uint32_t l = 0; !rc && l < c->n_layer; l++) {
		struct enc_layer *L = &em->layers[l];
		char n[96];
#define T(s) (snprintf(n, sizeof n, "blk.%u.%s", l, s), n)
		const struct tern_tensor_view *qkv = NULL, *qkv_b = NULL;
		rc = tern_model_get_tensor(mf, T("attn_qkv.weight"), d, 3 * d, true, false, &qkv, e);
		if (!rc && qkv)
			rc = tern_model_get_tensor(mf, T("attn_qkv.bias"), 3 * d, 1, false, false, &qkv_b, e);
		if (!rc && qkv) {
			for (int i = 0; i < 3; i++)
				L->qkv_part[i] = part_of(qkv, (uint64_t)i * d, d);
			L->wq = &L->qkv_part[0];
			L->wk = &L->qkv_part[1];
			L->wv = &L->qkv_part[2];
			if (qkv_b) {
				for (int i = 0; i < 3; i++)
					L->qkv_part[3 + i] = part_of(qkv_b, (uint64_t)i * d, d);
				L->bq = &L->qkv_part[3];
				L->bk = &L->qkv_part[4];
				L->bv = &L->qkv_part[5];
			}
		} else if (!rc) {
			rc = tern_model_get_tensor(mf, T("attn_q.weight"), d, d, true, true, &L->wq, e);
			rc = rc ? rc : tern_model_get_tensor(mf, T("attn_k.weight"), d, d, true, true, &L->wk, e);
			rc = rc ? rc : tern_model_get_tensor(mf, T("attn_v.weight"), d, d, true, true, &L->wv, e);
		}
		if (!rc && !qkv_b) {
			rc = tern_model_get_tensor(mf, T("attn_q.bias"), d, 1, false, false, &L->bq, e);
			rc = rc ? rc : tern_model_get_tensor(mf, T("attn_k.bias"), d, 1, false, false, &L->bk, e);
			rc = rc ? rc : tern_model_get_tensor(mf, T("attn_v.bias"), d, 1, false, false, &L->bv, e);
		}
		rc = rc ? rc : tern_model_get_tensor(mf, T("attn_output.weight"), d, d, true, true, &L->wo, e);
		rc = rc ? rc : tern_model_get_tensor(mf, T("attn_output.bias"), d, 1, false, false, &L->bo, e);
		rc = rc ? rc : tern_model_get_tensor(mf, T("attn_output_norm.weight"), d, 1, false, true, &L->attn_norm, e);
		rc = rc ? rc : tern_model_get_tensor(mf, T("attn_output_norm.bias"), d, 1, false, true, &L->attn_norm_b, e);
		rc = rc ? rc : tern_model_get_tensor(mf, T("ffn_up.weight"), d, ff, true, true, &L->up, e);
		rc = rc ? rc : tern_model_get_tensor(mf, T("ffn_down.weight"), ff, d, true, true, &L->down, e);
		if (c->nomic) {
			rc = rc ? rc : tern_model_get_tensor(mf, T("ffn_gate.weight"), d, ff, true, true, &L->gate, e);
		} else {
			rc = rc ? rc : tern_model_get_tensor(mf, T("ffn_up.bias"), ff, 1, false, false, &L->up_b, e);
			rc = rc ? rc : tern_model_get_tensor(mf, T("ffn_down.bias"), d, 1, false, false, &L->down_b, e);
		}
		rc = rc ? rc : tern_model_get_tensor(mf, T("layer_output_norm.weight"), d, 1, false, true, &L->out_norm, e);
		rc = rc ? rc : tern_model_get_tensor(mf, T("layer_output_norm.bias"), d, 1, false, true, &L->out_norm_b, e);
#undef T
	}
	return rc;
}

/* ---- load / free ------------------------------------------------------------- */

int tern_embed_load(struct tern_embed **out, const tern_mf *mf, tern_err *e)
{
	*out = NULL;
	char name[TERN_ARCH_NAME_MAX], q[TERN_QUOTE_MAX];
	enum tern_arch_family fam = tern_arch_family(mf, name, sizeof name);
	if (fam != TERN_ARCH_LLM)
		return tern_errf(e, TERN_EUNSUPPORTED, "not a language model: %s%s",
				 name[0] ? tern_quote(q, sizeof q, name, strlen(name)) : "no general.architecture",
				 tern_arch_family_hint(fam));
	struct tern_embed *em = calloc(1, sizeof *em);
	if (!em)
		return tern_errf(e, TERN_ENOMEM, "out of memory");
	em->mf = mf;
	em->pooling = TERN_POOLING_UNSPECIFIED;
	struct tern_embed_info *in = &em->info;
	snprintf(in->arch, sizeof in->arch, "%s", name);
	in->encoder = tern_embed_is_encoder(name);
	int64_t pool = TERN_POOLING_NONE;
	int rc = read_int_key(mf, name, "pooling_type", &pool, e);
	if (rc > 0 && (pool < TERN_POOLING_NONE || pool > TERN_POOLING_RANK))
		rc = tern_errf(e, TERN_EFORMAT, "'%s.pooling_type' = %lld is not a pooling type (0..4)", name,
			       (long long)pool);
	in->file_pooling = (int)pool;
	if (rc < 0) {
		free(em);
		return rc;
	}
	rc = 0;
	if (in->encoder) {
		struct tern_arch_llm *hp = malloc(sizeof *hp);
		if (!hp)
			rc = tern_errf(e, TERN_ENOMEM, "out of memory");
		rc = rc ? rc : tern_arch_llm_load(mf, hp, e);
		rc = rc ? rc : enc_config(em, hp, e);
		free(hp);
		if (!rc) {
			em->layers = calloc(em->c.n_layer, sizeof *em->layers);
			rc = em->layers ? enc_weights(em, e) : tern_errf(e, TERN_ENOMEM, "out of memory");
		}
		in->n_embd = em->c.n_embd;
		in->n_layer = em->c.n_layer;
		in->n_vocab = em->c.n_vocab;
		in->n_ctx_train = em->c.n_ctx_train;
	} else {
		rc = tern_model_load(&em->model, mf, e);
		if (!rc) {
			const struct tern_model_config *c = &em->model->cfg;
			in->n_embd = c->n_embd;
			in->n_layer = c->n_layer;
			in->n_vocab = c->n_vocab;
			in->n_ctx_train = c->n_ctx_train;
		}
	}
	if (rc) {
		tern_embed_free(em);
		return rc;
	}
	*out = em;
	return 0;
}

static void free_enc_bufs(struct tern_embed *em)
{
	struct tern_backend *be = em->be;
	if (!be)
		return;
	struct tern_buf *b[] = {&em->b_tok, &em->b_type, &em->b_pos, &em->b_norm, &em->b_norm_b, &em->ids, &em->zeros,
				&em->pos, &em->apos, &em->x, &em->h, &em->q, &em->k, &em->v, &em->a, &em->o,
				&em->up, &em->gate, &em->k16, &em->v16, &em->r16, &em->rbf};
	for (size_t i = 0; i < sizeof b / sizeof b[0]; i++)
		be->buf_free(be, b[i]);
	for (uint32_t l = 0; em->bl && l < em->c.n_layer; l++) {
		struct enc_bufs *L = &em->bl[l];
		struct tern_buf *w[] = {&L->wq, &L->wk, &L->wv, &L->bq, &L->bk, &L->bv, &L->wo, &L->bo, &L->attn_norm,
					&L->attn_norm_b, &L->up, &L->up_b, &L->gate, &L->down, &L->down_b,
					&L->out_norm, &L->out_norm_b};
		for (size_t i = 0; i < sizeof w / sizeof w[0]; i++)
			be->buf_free(be, w[i]);
	}
}

void tern_embed_free(struct tern_embed *em)
{
	if (!em)
		return;
	tern_llm_free(em->llm);
	tern_model_free(em->model);
	free_enc_bufs(em);
	free(em->bl);
	free(em->layers);
	free(em->host_ids);
	free(em->host_pos);
	free(em->host_apos);
	free(em->host_out);
	free(em->acc);
	free(em);
}

const struct tern_embed_info *tern_embed_info(const struct tern_embed *em)
{
	return &em->info;
}

const struct tern_model *tern_embed_model(const struct tern_embed *em)
{
	return em->model;
}

int tern_embed_pooling(const struct tern_embed *em)
{
	return em->pooling;
}

int32_t tern_embed_n_ctx(const struct tern_embed *em)
{
	return em->n_ctx;
}

/* ---- init ---------------------------------------------------------------------- */

int32_t tern_embed_ctx_for(const struct tern_embed *em, const struct tern_embed_opts *o)
{
	int64_t train = em->info.n_ctx_train ? em->info.n_ctx_train : TERN_LLM_DEFAULT_CTX;
	int64_t ctx = o->n_ctx;
	if (ctx < 0)
		ctx = train < TERN_LLM_DEFAULT_CTX ? train : TERN_LLM_DEFAULT_CTX;
	else if (ctx == 0)
		ctx = train;
	return ctx > INT32_MAX / 2 ? INT32_MAX / 2 : (int32_t)ctx;
}

int64_t tern_embed_batch_needed(const struct tern_embed *em, const struct tern_embed_opts *o)
{
	if (em->info.encoder)
		return tern_embed_ctx_for(em, o);
	return o->n_ubatch > 0 ? o->n_ubatch : 0;
}

/* the encoders' weights stay views of the file: not marked as mapped, so
 * tern_llm_weight neither copies nor drops anything (behaviour as before) */
static int weight(struct tern_backend *be, struct tern_buf *b, const struct tern_tensor_view *t, bool product,
		  tern_err *e)
{
	return tern_llm_weight(be, b, t, product, false, e);
}

static int alloc2(struct tern_backend *be, struct tern_buf *b, uint32_t type, int64_t ne0, int64_t ne1, tern_err *e)
{
	int64_t ne[2] = {ne0, ne1};
	return be->buf_alloc(be, b, type, ne1 ? 2 : 1, ne, e);
}

/* The tensors of a block, in loading order: the file's (enc_layer), the
 * buffer it loads into (enc_bufs), and whether a product takes it. */
#define ENC_WEIGHT(name, product) {offsetof(struct enc_bufs, name), offsetof(struct enc_layer, name), product}
static const struct enc_weight {
	size_t buf, tensor;
	bool product;
} enc_block_weights[] = {
	ENC_WEIGHT(wq, true), ENC_WEIGHT(wk, true), ENC_WEIGHT(wv, true),
	ENC_WEIGHT(bq, false), ENC_WEIGHT(bk, false), ENC_WEIGHT(bv, false),
	ENC_WEIGHT(wo, true), ENC_WEIGHT(bo, false),
	ENC_WEIGHT(attn_norm, false), ENC_WEIGHT(attn_norm_b, false),
	ENC_WEIGHT(up, true), ENC_WEIGHT(up_b, false), ENC_WEIGHT(gate, true),
	ENC_WEIGHT(down, true), ENC_WEIGHT(down_b, false),
	ENC_WEIGHT(out_norm, false), ENC_WEIGHT(out_norm_b, false),
};
#undef ENC_WEIGHT

static int enc_load_weights(struct tern_embed *em, tern_err *e)
{
	struct tern_backend *be = em->be;
	int rc = weight(be, &em->b_tok, em->tok_embd, false, e);
	rc = rc ? rc : weight(be, &em->b_type, em->type_embd, false, e);
	rc = rc ? rc : weight(be, &em->b_pos, em->pos_embd, false, e);
	rc = rc ? rc : weight(be, &em->b_norm, em->embd_norm, false, e);
	rc = rc ? rc : weight(be, &em->b_norm_b, em->embd_norm_b, false, e);
	for (uint32_t l = 0; !rc && l < em->c.n_layer; l++) {
		const struct enc_layer *L = &em->layers[l];
		struct enc_bufs *B = &em->bl[l];
		for (size_t i = 0; !rc && i < sizeof enc_block_weights / sizeof enc_block_weights[0]; i++) {
			const struct enc_weight *w = &enc_block_weights[i];
			struct tern_buf *buf = (struct tern_buf *)((char *)B + w->buf);
			const struct tern_tensor_view *t = *(const struct tern_tensor_view *const *)((const char *)L + w->tensor);
			rc = weight(be, buf, t, w->product, e);
		}
	}
	return rc;
}

/* The activations of a context of n tokens. Products with f16 or bf16
 * weights (as loaded) read their input rounded to that type (act_in): a
 * scratch of each type the weights use, as wide as the widest product. */
static int enc_acts_alloc(struct tern_embed *em, int32_t n, tern_err *e)
{
	struct tern_backend *be = em->be;
	const struct enc_config *c = &em->c;
	int64_t one[1] = {n};
	int rc = be->buf_alloc(be, &em->ids, QT_I32, 1, one, e);
	rc = rc ? rc : be->buf_alloc(be, &em->zeros, QT_I32, 1, one, e);
	rc = rc ? rc : be->buf_alloc(be, &em->pos, QT_I32, 1, one, e);
	rc = rc ? rc : be->buf_alloc(be, &em->apos, QT_I32, 1, one, e);
	rc = rc ? rc : alloc2(be, &em->x, QT_F32, c->n_embd, n, e);
	rc = rc ? rc : alloc2(be, &em->h, QT_F32, c->n_embd, n, e);
	rc = rc ? rc : alloc2(be, &em->q, QT_F32, c->n_embd, n, e);
	rc = rc ? rc : alloc2(be, &em->k, QT_F32, c->n_embd, n, e);
	rc = rc ? rc : alloc2(be, &em->v, QT_F32, c->n_embd, n, e);
	rc = rc ? rc : alloc2(be, &em->k16, QT_F16, c->n_embd, n, e);
	rc = rc ? rc : alloc2(be, &em->v16, QT_F16, c->n_embd, n, e);
	bool f16 = false, bf16 = false;
	for (uint32_t l = 0; !rc && l < c->n_layer; l++) {
		const struct enc_bufs *B = &em->bl[l];
		const struct tern_buf *w[] = {&B->wq, &B->wk, &B->wv, &B->wo, &B->up, &B->gate, &B->down};
		for (size_t i = 0; i < sizeof w / sizeof w[0]; i++) {
			f16 |= w[i]->mem && w[i]->type == QT_F16;
			bf16 |= w[i]->mem && w[i]->type == QT_BF16;
		}
	}
	int64_t wmax = c->n_ff > c->n_embd ? c->n_ff : c->n_embd;
	if (!rc && f16)
		rc = alloc2(be, &em->r16, QT_F16, wmax, n, e);
	if (!rc && bf16)
		rc = alloc2(be, &em->rbf, QT_BF16, wmax, n, e);
	rc = rc ? rc : alloc2(be, &em->a, QT_F32, c->n_embd, n, e);
	rc = rc ? rc : alloc2(be, &em->o, QT_F32, c->n_embd, n, e);
	rc = rc ? rc : alloc2(be, &em->up, QT_F32, c->n_ff, n, e);
	if (!rc && c->nomic)
		rc = alloc2(be, &em->gate, QT_F32, c->n_ff, n, e);
	return rc;
}

static int enc_init(struct tern_embed *em, tern_err *e)
{
	struct tern_backend *be = em->be;
	const struct enc_config *c = &em->c;
	int32_t n = em->n_ctx;
	if (!c->nomic && (uint32_t)n > c->n_ctx_train)
		return tern_errf(e, TERN_ERANGE, "a context of %d tokens: this %s model has %u positions", n, em->info.arch,
				 c->n_ctx_train);
	if (n > be->max_tokens)
		return tern_errf(e, TERN_EINVAL, "an encoder runs an input in one pass: the backend takes %lld tokens, the "
				 "context is %d", (long long)be->max_tokens, n);
	em->bl = calloc(c->n_layer, sizeof *em->bl);
	em->host_ids = calloc((size_t)n, sizeof *em->host_ids);
	em->host_pos = calloc((size_t)n, sizeof *em->host_pos);
	em->host_apos = calloc((size_t)n, sizeof *em->host_apos);
	em->host_out = calloc((size_t)n * c->n_embd, sizeof *em->host_out);
	if (!em->bl || !em->host_ids || !em->host_pos || !em->host_apos || !em->host_out)
		return tern_errf(e, TERN_ENOMEM, "out of memory for a context of %d tokens", n);
	int rc = enc_load_weights(em, e);
	rc = rc ? rc : enc_acts_alloc(em, n, e);
	if (rc)
		return rc;
	/* token type 0 for every token, uploaded once (host_ids is still all 0) */
	be->upload(be, &em->zeros, 0, em->host_ids, sizeof(int32_t) * (size_t)n);
	return be->sync(be, e);
}

static int embed_init(struct tern_embed *em, struct tern_backend *be, const struct tern_embed_opts *opts, tern_err *e);

/* what a failed init allocated, released: the init may be tried again (on
 * another backend: a device that refused the memory its budget promised) */
static void init_undo(struct tern_embed *em)
{
	tern_llm_free(em->llm);
	em->llm = NULL;
	free_enc_bufs(em); /* buf_free leaves each buffer empty */
	free(em->bl);
	free(em->host_ids);
	free(em->host_pos);
	free(em->host_apos);
	free(em->host_out);
	free(em->acc);
	em->bl = NULL;
	em->host_ids = em->host_pos = em->host_apos = NULL;
	em->host_out = NULL;
	em->acc = NULL;
	em->be = NULL;
}

int tern_embed_init(struct tern_embed *em, struct tern_backend *be, const struct tern_embed_opts *opts, tern_err *e)
{
	if (em->be)
		return tern_errf(e, TERN_EINVAL, "embed: already initialised");
	int rc = embed_init(em, be, opts, e);
	if (rc)
		init_undo(em);
	return rc;
}

static int embed_init(struct tern_embed *em, struct tern_backend *be, const struct tern_embed_opts *opts, tern_err *e)
{
	struct tern_embed_opts o = opts ? *opts : tern_embed_opts_default();
	int p = o.pooling == TERN_POOLING_UNSPECIFIED ? em->info.file_pooling : o.pooling;
	if (p != TERN_POOLING_MEAN && p != TERN_POOLING_CLS && p != TERN_POOLING_LAST) {
		if (o.pooling == TERN_POOLING_UNSPECIFIED)
			return tern_errf(e, TERN_EINVAL, "the file's pooling is '%s' ('%s.pooling_type' %s): per-token "
					 "embeddings%s are not supported; choose mean, cls or last", tern_pooling_name(p),
					 em->info.arch, p == TERN_POOLING_NONE ? "absent or 0" : "= 4",
					 p == TERN_POOLING_RANK ? " and reranking" : "");
		return tern_errf(e, TERN_EINVAL, "pooling '%s' is not supported (mean, cls, last)", tern_pooling_name(p));
	}
	em->pooling = p;
	em->n_ctx = tern_embed_ctx_for(em, &o);
	em->be = be;
	em->gg = tern_backend_ggml(be);
	if (em->info.encoder)
		return enc_init(em, e);
	struct tern_llm_opts lo = tern_llm_opts_default();
	lo.n_ctx = em->n_ctx;
	lo.n_ubatch = o.n_ubatch;
	lo.type_k = o.type_k;
	lo.type_v = o.type_v;
	lo.embeddings = true;
	lo.ggml_fa = true; /* llama.cpp's attention and products, as the encoders' (top of file) */
	lo.ggml_ops = true;
	em->acc = calloc(em->info.n_embd, sizeof *em->acc);
	if (!em->acc)
		return tern_errf(e, TERN_ENOMEM, "out of memory");
	int rc = tern_llm_new(&em->llm, em->model, be, &lo, e);
	if (rc)
		return rc;
	em->n_ctx = tern_llm_n_ctx(em->llm);
	/* the llm's micro-batch as it resolved it (at most the context): a
	 * decode call takes at most that */
	em->n_ubatch = tern_llm_n_ubatch(em->llm);
	return 0;
}

/* ---- the encoder's forward pass --------------------------------------------------- */


/* x as a product with weights w reads it: ggml's CPU products with f16 or
 * bf16 weights convert the activations to that type first (on x86 its
 * tinyBLAS and vec_dot multiply f16 by f16), so x rounded so, in dst (x
 * itself when x is not needed after); other weights read x as it is */
static const struct tern_buf *act_in(struct tern_embed *em, const struct tern_buf *w, const struct tern_buf *x,
				     struct tern_buf *dst)
{
	if (w->type != QT_F16 && w->type != QT_BF16)
		return x;
	struct tern_buf t = tern_buf_rows2(w->type == QT_F16 ? &em->r16 : &em->rbf, x->ne[0], x->ne[1]);
	struct tern_buf out = tern_buf_rows2(dst, x->ne[0], x->ne[1]);
	em->be->copy(em->be, x, &t);
	em->be->copy(em->be, &t, &out);
	return dst;
}

/* y = W x (+ b, or NULL), rounded as ggml's (top of file) where the
 * backend can */
static void linear(struct tern_embed *em, const struct tern_buf *w, const struct tern_buf *b,
		   const struct tern_buf *x, struct tern_buf *y)
{
	struct tern_backend *be = em->be;
	if (em->gg)
		be->mat_mul_ggml(be, w, x, y);
	else
		tern_be_mul(be, w, x, y);
	if (b && tern_buf_opt(b))
		be->add(be, y, b, y);
}

static void enc_block(struct tern_embed *em, uint32_t il, int64_t n)
{
	const struct enc_config *c = &em->c;
	const struct enc_bufs *L = &em->bl[il];
	struct tern_backend *be = em->be;
	const int64_t d = c->n_embd, hd = c->head_dim, nh = c->n_head;
	const struct tern_norm ln = {TERN_NORM_LAYER, c->eps, em->gg}; /* ggml's rounding */
	int64_t n1[1] = {n};
	struct tern_buf pos = tern_buf_reshape(&em->pos, 1, n1), apos = tern_buf_reshape(&em->apos, 1, n1);
	struct tern_buf x = tern_buf_rows2(&em->x, d, n);
	struct tern_buf o = tern_buf_rows2(&em->o, d, n);
	struct tern_buf a = tern_buf_rows2(&em->a, d, n);
	struct tern_buf q = tern_buf_rows2(&em->q, d, n);
	struct tern_buf k = tern_buf_rows2(&em->k, d, n);
	struct tern_buf v = tern_buf_rows2(&em->v, d, n);

	struct tern_buf h = tern_buf_rows2(&em->h, d, n);
	linear(em, &L->wq, &L->bq, act_in(em, &L->wq, &x, &h), &q);
	linear(em, &L->wk, &L->bk, act_in(em, &L->wk, &x, &h), &k);
	linear(em, &L->wv, &L->bv, act_in(em, &L->wv, &x, &h), &v);
	struct tern_buf q3 = tern_buf_rows3(&em->q, hd, nh, n);
	struct tern_buf k3 = tern_buf_rows3(&em->k, hd, nh, n);
	struct tern_buf v3 = tern_buf_rows3(&em->v, hd, nh, n);
	struct tern_buf a3 = tern_buf_rows3(&em->a, hd, nh, n);
	if (c->nomic) {
		const struct tern_rope rope = {.mode = TERN_ROPE_NEOX, .n_rot = (int)c->n_rot, .ggml = em->gg,
					       .freq_base = c->rope_base, .freq_scale = c->rope_scale};
		be->norm_rope(be, &q3, &k3, NULL, NULL, &pos, NULL, NULL, &rope);
	}
	/* K and V in f16, and the f16 sums below 64 tokens: ggml's flash attention (top of file) */
	struct tern_buf k16 = tern_buf_rows2(&em->k16, d, n), v16 = tern_buf_rows2(&em->v16, d, n);
	be->copy(be, &k, &k16);
	be->copy(be, &v, &v16);
	k3 = tern_buf_rows3(&em->k16, hd, nh, n);
	v3 = tern_buf_rows3(&em->v16, hd, nh, n);
	const struct tern_attn at = {.scale = 1.0f / sqrtf((float)hd),
				     .f16_split = em->gg && n < TERN_LLM_GGML_FA_TILE && hd % 16 == 0 ? 1 : 0,
				     .ggml = em->gg && hd % 16 == 0};
	be->attention(be, &q3, &k3, &v3, c->causal ? &pos : &apos, NULL, &a3, &at);
	linear(em, &L->wo, &L->bo, act_in(em, &L->wo, &a, &a), &o);
	/* x = LayerNorm(x + o) */
	be->norm(be, &x, &o, &L->attn_norm, &L->attn_norm_b, &x, &ln);

	struct tern_buf u = tern_buf_rows2(&em->up, c->n_ff, n);
	if (c->nomic) {
		struct tern_buf g = tern_buf_rows2(&em->gate, c->n_ff, n);
		linear(em, &L->gate, NULL, act_in(em, &L->gate, &x, &h), &g);
		linear(em, &L->up, NULL, act_in(em, &L->up, &x, &h), &u);
		be->glu(be, &g, &u, &u, TERN_GLU_SWIGLU);
	} else {
		linear(em, &L->up, &L->up_b, act_in(em, &L->up, &x, &h), &u);
		be->unary(be, &u, &u, em->gg ? TERN_UNARY_GELU_F16 : TERN_UNARY_GELU);
	}
	linear(em, &L->down, &L->down_b, act_in(em, &L->down, &u, &u), &o);
	be->norm(be, &x, &o, &L->out_norm, &L->out_norm_b, &x, &ln);
}

/* the pooled rows of one input: first (CLS), last, or all (mean) */
static void rows_for(int pooling, int32_t n, int32_t *r0, int32_t *nr)
{
	*r0 = pooling == TERN_POOLING_LAST ? n - 1 : 0;
	*nr = pooling == TERN_POOLING_MEAN ? n : 1;
}

static int enc_run(struct tern_embed *em, const int32_t *ids, int32_t n, float *out, tern_err *e)
{
	const struct enc_config *c = &em->c;
	struct tern_backend *be = em->be;
	const int64_t d = c->n_embd;
	for (int32_t i = 0; i < n; i++) {
		em->host_ids[i] = ids[i];
		em->host_pos[i] = i;
		em->host_apos[i] = n - 1; /* every query sees every key: not causal */
	}
	be->upload(be, &em->ids, 0, em->host_ids, sizeof(int32_t) * (size_t)n);
	be->upload(be, &em->pos, 0, em->host_pos, sizeof(int32_t) * (size_t)n);
	be->upload(be, &em->apos, 0, em->host_apos, sizeof(int32_t) * (size_t)n);
	int64_t n1[1] = {n};
	struct tern_buf idb = tern_buf_reshape(&em->ids, 1, n1), pos = tern_buf_reshape(&em->pos, 1, n1);
	struct tern_buf zeros = tern_buf_reshape(&em->zeros, 1, n1);
	struct tern_buf x = tern_buf_rows2(&em->x, d, n), h = tern_buf_rows2(&em->h, d, n);
	be->get_rows(be, &em->b_tok, &idb, &x);
	if (tern_buf_opt(&em->b_type)) { /* token type 0 ("sentence A") for every token */
		be->get_rows(be, &em->b_type, &zeros, &h);
		be->add(be, &x, &h, &x);
	}
	if (tern_buf_opt(&em->b_pos)) {
		be->get_rows(be, &em->b_pos, &pos, &h);
		be->add(be, &x, &h, &x);
	}
	const struct tern_norm ln = {TERN_NORM_LAYER, c->eps, em->gg}; /* ggml's rounding */
	be->norm(be, &x, NULL, &em->b_norm, &em->b_norm_b, &x, &ln);
	for (uint32_t il = 0; il < c->n_layer; il++)
		enc_block(em, il, n);
	int32_t r0, nr;
	rows_for(em->pooling, n, &r0, &nr);
	be->download(be, &x, (size_t)r0 * (size_t)d * sizeof(float), em->host_out, sizeof(float) * (size_t)nr * d);
	int rc = be->sync(be, e);
	if (rc)
		return rc;
	for (int64_t i = 0; i < d; i++) {
		double s = 0;
		for (int32_t r = 0; r < nr; r++)
			s += em->host_out[(size_t)r * d + i];
		out[i] = (float)(s / nr);
	}
	return 0;
}

/* ---- the decoders ------------------------------------------------------------------ */

static int dec_run(struct tern_embed *em, const int32_t *ids, int32_t n, float *out, tern_err *e)
{
	const int64_t d = em->info.n_embd;
	double *acc = em->acc;
	int32_t r0, nr;
	rows_for(em->pooling, n, &r0, &nr);
	for (int64_t i = 0; i < d; i++)
		acc[i] = 0;
	tern_llm_rewind(em->llm, 0);
	for (int32_t done = 0; done < n;) {
		int32_t chunk = n - done < em->n_ubatch ? n - done : em->n_ubatch;
		int rc = tern_llm_decode(em->llm, ids + done, chunk, e);
		if (rc)
			return rc;
		for (int32_t t = 0; t < chunk; t++) {
			int32_t r = done + t;
			if (r < r0 || r >= r0 + nr)
				continue;
			const float *h = tern_llm_embedding(em->llm, t);
			for (int64_t i = 0; i < d; i++)
				acc[i] += h[i];
		}
		done += chunk;
	}
	for (int64_t i = 0; i < d; i++)
		out[i] = (float)(acc[i] / nr);
	return 0;
}

int tern_embed_run(struct tern_embed *em, const int32_t *ids, int32_t n, float *out, tern_err *e)
{
	if (!em->be)
		return tern_errf(e, TERN_EINVAL, "embed: not initialised");
	if (n < 1 || !ids)
		return tern_errf(e, TERN_EINVAL, "embed: an input of no tokens");
	if (n > em->n_ctx)
		return tern_errf(e, TERN_ERANGE, "an input of %d tokens is longer than the context of %d", n, em->n_ctx);
	for (int32_t i = 0; i < n; i++)
		if (ids[i] < 0 || (uint32_t)ids[i] >= em->info.n_vocab)
			return tern_errf(e, TERN_EINVAL, "token id %d is outside the vocabulary (0..%u)", ids[i],
					 em->info.n_vocab - 1);
	return em->info.encoder ? enc_run(em, ids, n, out, e) : dec_run(em, ids, n, out, e);
}

/* ---- normalisation ---------------------------------------------------------------- */

void tern_embed_normalize(float *v, int32_t n, int mode)
{
	double s = 0;
	if (mode < 0)
		return;
	if (mode == 0) {
		for (int32_t i = 0; i < n; i++)
			s = fabs(v[i]) > s ? fabs(v[i]) : s;
		s /= 32760.0;
	} else if (mode == 1) {
		for (int32_t i = 0; i < n; i++)
			s += fabs(v[i]);
	} else if (mode == 2) {
		for (int32_t i = 0; i < n; i++)
			s += (double)v[i] * v[i];
		s = sqrt(s);
	} else {
		for (int32_t i = 0; i < n; i++)
			s += pow(fabs(v[i]), mode);
		s = pow(s, 1.0 / mode);
	}
	double k = s > 0 ? 1.0 / s : 0;
	for (int32_t i = 0; i < n; i++)
		v[i] = (float)(v[i] * k);
}

double tern_embed_cosine(const float *a, const float *b, int32_t n)
{
	double ab = 0, aa = 0, bb = 0;
	for (int32_t i = 0; i < n; i++) {
		ab += (double)a[i] * b[i];
		aa += (double)a[i] * a[i];
		bb += (double)b[i] * b[i];
	}
	return aa > 0 && bb > 0 ? ab / sqrt(aa * bb) : 0;
}
