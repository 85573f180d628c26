/* cu_backend.c - the CUDA backend's C side (gpu/cuda/cu_backend.h): the
 * operation table of lib/backend.h. Each op checks its operands as every
 * backend does (lib/backend_host.h) and becomes a record (cu_kern.h's
 * struct cuk_op) that the CUDA side runs.
 *
 * How a step runs. Outside begin_step / end_step a record runs at once
 * (enqueued on the stream). Inside, the records are kept; end_step
 * compares them with the previous step's (lib/backend.h's replay rule:
 * the same calls every step, only uploaded data changes) and either
 * launches the CUDA graph captured from the same records last time, or
 * captures these into one (updating the executable graph in place where
 * CUDA can) and launches it. A decode loop thus costs one graph launch per
 * token after its first. Uploads copy their data at once into pinned
 * staging, whose position restarts at every step, so that a replayed
 * step finds its token ids and positions where its capture read them;
 * downloads into host_alloc memory go there directly, others through
 * staging, finished by sync.
 *
 * Compiled twice: for the CUDA runtime (cuda_*) and, with -DTERN_CUEMU,
 * for the CPU emulation of the tests (cuemu_*). */
#include "gpu/cuda/cu_backend.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu/cuda/cu_kern.h"
#include "lib/backend_host.h"
#include "lib/core/quote.h"
#include "quant/types.h"

#ifdef TERN_CUEMU
#define CU_PUB(f) cuemu_##f
#define CU_DEV "cuemu"
#else
#define CU_PUB(f) cuda_##f
#define CU_DEV "cuda"
#endif

/* the CUDA side repeats these values (gpu/cuda/cu_impl.cuh) */
_Static_assert(TERN_NORM_RMS == 0 && TERN_NORM_LAYER == 1, "norm kinds");
_Static_assert(TERN_ROPE_NORMAL == 0 && TERN_ROPE_NEOX == 1, "rope modes");
_Static_assert(TERN_GLU_SWIGLU == 0 && TERN_GLU_GEGLU == 1 && TERN_GLU_SWIGLU_OAI == 2, "glu kinds");
_Static_assert(TERN_UNARY_GELU == 0 && TERN_UNARY_GELU_ERF == 1 && TERN_UNARY_SILU == 2 && TERN_UNARY_SIGMOID == 4,
	       "unary kinds");
_Static_assert(TERN_MOE_SOFTMAX == 0 && TERN_MOE_SIGMOID == 1 && TERN_MOE_SOFTMAX_TOPK == 2, "gating kinds");
_Static_assert(TERN_ATTN_MAX_HEAD_DIM == 576 && TERN_MOE_MAX_USED == 64, "limits");

#define STAGE_BYTES ((size_t)32 << 20)

struct cu_pinned {
	void *p;
	size_t n;
};

struct cu_read {
	void *dst;
	size_t off, n;
};

struct cu {
	struct tern_host host; /* first: the deferred error */
	struct tern_backend be;
	struct tern_device_info info;
	struct cuk_ctx *ctx;
	bool graphs;

	uint8_t *stage; /* pinned */
	size_t stage_used;
	struct cu_pinned *pinned; /* host_alloc's blocks: downloads land there directly */
	size_t n_pinned, cap_pinned;
	struct cu_read *reads; /* downloads through staging, finished by sync */
	size_t n_reads, cap_reads;

	bool in_step;
	struct cuk_op *ops, *prev; /* this step's records, the previous step's */
	size_t n_ops, cap_ops, n_prev, cap_prev;
	bool prev_valid;
	struct cuda_stats st;
};

static struct cu *cu_of(struct tern_backend *be) { return be->impl; }

static bool grow(void **arr, size_t *cap, size_t need, size_t elem)
{
	if (need <= *cap)
		return true;
	size_t n = *cap ? *cap * 2 : 64;
	while (n < need)
		n *= 2;
	void *p = realloc(*arr, n * elem);
	if (!p)
		return false;
	*arr = p;
	*cap = n;
	return true;
}

static struct cuk_t to_t(const struct tern_buf *b)
{
	struct cuk_t t = {0};
	if (!b || !b->mem)
		return t;
	t.p = (uint8_t *)b->mem + b->offset;
	t.type = b->type;
	for (int i = 0; i < 4; i++) {
		t.ne[i] = b->ne[i];
		t.nb[i] = (int64_t)b->nb[i];
	}
	return t;
}

static void emit(struct cu *c, const struct cuk_op *op)
{
	if (!c->in_step) {
		CUK(run)(c->ctx, op);
		return;
	}
	if (!grow((void **)&c->ops, &c->cap_ops, c->n_ops + 1, sizeof *c->ops)) {
		tern_host_fail(&c->be, "out of host memory for a step's records");
		return;
	}
	c->ops[c->n_ops++] = *op;
}

static struct cuk_op rec(uint32_t kind, int n_t, const struct tern_buf *const *t)
{
	struct cuk_op op;
	memset(&op, 0, sizeof op); /* records are compared bytewise: no stray padding */
	op.kind = kind;
	op.n_t = (uint32_t)n_t;
	for (int i = 0; i < n_t; i++)
		op.t[i] = to_t(t[i]);
	return op;
}

/* ---- staging, sync ---- */

/* Wait for everything enqueued; a failure becomes the next sync's error.
 * Finishes the downloads through staging, which restarts empty. */
static void drain(struct cu *c)
{
	uint32_t kind = 0;
	int64_t value = 0;
	char why[TERN_ERR_MSG_MAX];
	if (CUK(sync)(c->ctx, &kind, &value, why, sizeof why)) {
		if (kind) {
			static const char *const names[CUK_COUNT] = {
				[CUK_GET_ROWS] = "get_rows", [CUK_KV_STORE] = "kv_store", [CUK_MAT_MUL_ID] = "mat_mul_id",
				[CUK_ATTENTION] = "attention", [CUK_MOE_ROUTE] = "moe_route"};
			const char *n = kind < CUK_COUNT && names[kind] ? names[kind] : "an op";
			tern_host_fail(&c->be, "%s: position, sequence or id %lld out of range", n, (long long)value);
		} else {
			tern_host_fail(&c->be, "%s: %s", c->info.name, why);
		}
	}
	for (size_t i = 0; i < c->n_reads; i++)
		memcpy(c->reads[i].dst, c->stage + c->reads[i].off, c->reads[i].n);
	c->n_reads = 0;
	c->stage_used = 0;
}

/* Run a step's records as plain launches (a sync inside a step, staging
 * full inside a step): the step is not captured. */
static void step_abandon(struct cu *c)
{
	c->in_step = false;
	for (size_t i = 0; i < c->n_ops; i++)
		CUK(run)(c->ctx, &c->ops[i]);
	c->n_ops = 0;
	c->prev_valid = false;
}

/* n bytes of staging (n <= STAGE_BYTES), waiting for the stream when full */
static size_t stage_take(struct cu *c, size_t n)
{
	if (c->stage_used + n > STAGE_BYTES) {
		if (c->in_step)
			step_abandon(c);
		drain(c);
	}
	size_t off = c->stage_used;
	c->stage_used = (c->stage_used + n + 255) & ~(size_t)255;
	return off;
}

static bool pinned_range(const struct cu *c, const void *p, size_t n)
{
	for (size_t i = 0; i < c->n_pinned; i++) {
		const uint8_t *b = c->pinned[i].p;
		if ((const uint8_t *)p >= b && (const uint8_t *)p + n <= b + c->pinned[i].n)
			return true;
	}
	return false;
}

/* ---- buffers ---- */

static int cu_buf_alloc(struct tern_backend *be, struct tern_buf *b, uint32_t type, int n_dims, const int64_t *ne,
			tern_err *err)
{
	struct cu *c = cu_of(be);
	struct tern_buf nb = {0};
	int rc = tern_host_set_shape(&nb, type, n_dims, ne, err);
	if (rc)
		return rc;
	size_t bytes = nb.nb[3] * (size_t)nb.ne[3];
	bool oom = false;
	char why[256];
	void *p = NULL;
	if (CUK(malloc)(c->ctx, &p, bytes, &oom, why, sizeof why))
		return tern_errf(err, oom ? TERN_ENOMEM : TERN_EIO, "%s: %zu bytes of device memory: %s", c->info.name,
				 bytes, why);
	nb.be = be;
	nb.mem = p;
	nb.offset = 0;
	nb.flags = TERN_BUF_OWNS;
	*b = nb;
	return 0;
}

static int cu_buf_weight(struct tern_backend *be, struct tern_buf *b, const struct tern_tensor_view *t, tern_err *err)
{
	struct cu *c = cu_of(be);
	struct tern_buf nb = {0};
	int rc = tern_host_view_shape(t, &nb, err);
	if (!rc)
		rc = cu_buf_alloc(be, b, t->type, TERN_MAX_DIMS, nb.ne, err);
	char why[256];
	if (!rc && CUK(upload_now)(c->ctx, b->mem, t->data, t->nbytes, why, sizeof why)) {
		CUK(free)(c->ctx, b->mem);
		*b = (struct tern_buf){0};
		rc = tern_errf(err, TERN_EIO, "%s: %s", c->info.name, why);
	}
	if (rc) {
		char q[TERN_QUOTE_MAX];
		tern_err_prefixf(err, "tensor '%s'", tern_quote_str(q, sizeof q, t->name));
		return rc;
	}
	b->flags |= TERN_BUF_READONLY;
	return 0;
}

static void cu_buf_free(struct tern_backend *be, struct tern_buf *b)
{
	struct cu *c = cu_of(be);
	if ((b->flags & TERN_BUF_OWNS) && b->mem) {
		/* a step's records may name it: they run first */
		if (c->in_step)
			step_abandon(c);
		c->prev_valid = false;
		CUK(free)(c->ctx, b->mem);
	}
	*b = (struct tern_buf){0};
}

static int cu_host_alloc(struct tern_backend *be, size_t size, void **ptr, tern_err *err)
{
	struct cu *c = cu_of(be);
	char why[256];
	*ptr = NULL;
	if (!grow((void **)&c->pinned, &c->cap_pinned, c->n_pinned + 1, sizeof *c->pinned))
		return tern_errf(err, TERN_ENOMEM, "%s: out of host memory", c->info.name);
	if (CUK(host_alloc)(c->ctx, ptr, size, why, sizeof why))
		return tern_errf(err, TERN_ENOMEM, "%s: %zu bytes of pinned host memory: %s", c->info.name, size, why);
	c->pinned[c->n_pinned++] = (struct cu_pinned){*ptr, size};
	return 0;
}

static void cu_host_free(struct tern_backend *be, void *ptr)
{
	struct cu *c = cu_of(be);
	if (!ptr)
		return;
	for (size_t i = 0; i < c->n_pinned; i++)
		if (c->pinned[i].p == ptr) {
			c->pinned[i] = c->pinned[--c->n_pinned];
			break;
		}
	CUK(host_free)(c->ctx, ptr);
}

/* ---- transfers ---- */

static void cu_upload(struct tern_backend *be, struct tern_buf *dst, size_t offset, const void *src, size_t n)
{
	struct cu *c = cu_of(be);
	if (dst->flags & TERN_BUF_READONLY) {
		tern_host_fail(be, "upload into a read-only weight");
		return;
	}
	if (!tern_host_range_ok(be, "upload", dst, offset, n))
		return;
	const uint8_t *s = src;
	uint8_t *d = (uint8_t *)dst->mem + dst->offset + offset;
	while (n) {
		size_t chunk = n < STAGE_BYTES ? n : STAGE_BYTES;
		size_t so = stage_take(c, chunk);
		memcpy(c->stage + so, s, chunk);
		struct cuk_op op = rec(CUK_H2D, 0, NULL);
		op.u.copy.dst = d;
		op.u.copy.src = c->stage + so;
		op.u.copy.n = chunk;
		emit(c, &op);
		s += chunk;
		d += chunk;
		n -= chunk;
	}
}

static void cu_download(struct tern_backend *be, const struct tern_buf *src, size_t offset, void *dst, size_t n)
{
	struct cu *c = cu_of(be);
	if (!tern_host_range_ok(be, "download", src, offset, n))
		return;
	const uint8_t *s = (const uint8_t *)src->mem + src->offset + offset;
	if (pinned_range(c, dst, n)) {
		struct cuk_op op = rec(CUK_D2H, 0, NULL);
		op.u.copy.dst = dst;
		op.u.copy.src = s;
		op.u.copy.n = n;
		emit(c, &op);
		return;
	}
	uint8_t *d = dst;
	while (n) {
		size_t chunk = n < STAGE_BYTES ? n : STAGE_BYTES;
		size_t so = stage_take(c, chunk);
		if (!grow((void **)&c->reads, &c->cap_reads, c->n_reads + 1, sizeof *c->reads)) {
			tern_host_fail(be, "out of host memory for a download");
			return;
		}
		struct cuk_op op = rec(CUK_D2H, 0, NULL);
		op.u.copy.dst = c->stage + so;
		op.u.copy.src = s;
		op.u.copy.n = chunk;
		emit(c, &op);
		c->reads[c->n_reads++] = (struct cu_read){d, so, chunk};
		s += chunk;
		d += chunk;
		n -= chunk;
	}
}

/* ---- steps and sync ---- */

static void cu_begin_step(struct tern_backend *be)
{
	struct cu *c = cu_of(be);
	if (c->in_step)
		step_abandon(c);
	/* staging restarts at 0, where the previous step's capture read it */
	if (c->stage_used || c->n_reads)
		drain(c);
	c->in_step = true;
	c->n_ops = 0;
}

static void cu_end_step(struct tern_backend *be)
{
	struct cu *c = cu_of(be);
	if (!c->in_step)
		return;
	c->in_step = false;
	c->st.steps++;
	c->st.step_ops = c->n_ops;
	if (!c->graphs) {
		for (size_t i = 0; i < c->n_ops; i++)
			CUK(run)(c->ctx, &c->ops[i]);
		c->n_ops = 0;
		return;
	}
	bool same = c->prev_valid && c->n_ops == c->n_prev && !memcmp(c->ops, c->prev, c->n_ops * sizeof *c->ops);
	bool fallback = false;
	CUK(run_step)(c->ctx, c->ops, c->n_ops, same, &fallback);
	struct cuk_stats ks;
	CUK(get_stats)(c->ctx, &ks);
	c->st.replays = ks.graphs_replayed;
	c->st.captures = ks.graphs_captured;
	c->st.updates = ks.graphs_updated;
	c->st.capture_failures = ks.capture_failures;
	c->st.step_launches = ks.launches;
	if (fallback) {
		c->graphs = false;
		c->st.graphs = false;
	}
	/* keep these records for the next step's comparison */
	struct cuk_op *t = c->prev;
	size_t tc = c->cap_prev;
	c->prev = c->ops;
	c->cap_prev = c->cap_ops;
	c->n_prev = c->n_ops;
	c->ops = t;
	c->cap_ops = tc;
	c->n_ops = 0;
	c->prev_valid = true;
}

static int cu_sync(struct tern_backend *be, tern_err *err)
{
	struct cu *c = cu_of(be);
	if (c->in_step)
		step_abandon(c); /* a sync inside a step ends it, not recorded for replay */
	drain(c);
	return tern_host_sync(be, err);
}

/* ---- products ---- */

/* mat_prepare's mark: the kernels read the file's blocks as they are, so
 * the prepared form is a non-NULL token owned by no buffer */
static char prepared[QT_COUNT];

static int cu_mat_prepare(struct tern_backend *be, struct tern_buf *w, tern_err *err)
{
	struct cu *c = cu_of(be);
	int rc = tern_host_weight_shape(be, w, err);
	if (rc)
		return rc;
	if (!quant_is_weight_type(w->type) || !CUK(type_ok)(w->type))
		return tern_errf(err, TERN_EUNSUPPORTED, "%s: no product for weights of type %s", c->info.name,
				 quant_type_name(w->type));
	/* the activations' scratch for a full batch (a stack: its slots) */
	int64_t ntok = be->max_tokens * (w->ne[2] > 1 ? 8 : 1);
	char why[256];
	if (CUK(reserve_scratch)(c->ctx, CUK(product_scratch)(w->type, w->ne[0], ntok), why, sizeof why))
		return tern_errf(err, TERN_ENOMEM, "%s: the products' scratch: %s", c->info.name, why);
	w->prep = &prepared[w->type];
	return 0;
}

static void cu_product(struct tern_backend *be, int n_w, const struct tern_buf *const *w, const struct tern_buf *x,
		       struct tern_buf *const *y)
{
	if (!tern_host_product_args(be, n_w, w, x, y))
		return;
	struct cuk_op op = rec(CUK_PRODUCT, 0, NULL);
	op.n_t = 9;
	op.u.product.n_w = n_w;
	for (int i = 0; i < n_w; i++) {
		op.t[i] = to_t(w[i]);
		op.t[5 + i] = to_t(y[i]);
	}
	op.t[4] = to_t(x);
	emit(cu_of(be), &op);
}

static void cu_mat_mul_ggml(struct tern_backend *be, const struct tern_buf *w, const struct tern_buf *x,
			    struct tern_buf *y)
{
	(void)w, (void)x, (void)y;
	tern_host_ggml_ok(be, "mat_mul_ggml"); /* declined: records the violation */
}

static void cu_mat_mul_heads(struct tern_backend *be, const struct tern_buf *w, const struct tern_buf *x,
			     struct tern_buf *y)
{
	if (!tern_host_heads_args(be, w, x, y))
		return;
	if (!CUK(type_ok)(w->type)) {
		tern_host_fail(be, "mat_mul_heads: weights of type %s", quant_type_name(w->type));
		return;
	}
	const struct tern_buf *t[] = {w, x, y};
	struct cuk_op op = rec(CUK_MAT_MUL_HEADS, 3, t);
	emit(cu_of(be), &op);
}

static void cu_mat_mul_id(struct tern_backend *be, const struct tern_buf *w, const struct tern_buf *x,
			  const struct tern_buf *ids, const struct tern_buf *b, struct tern_buf *y)
{
	if (!tern_host_mat_mul_id_args(be, w, x, ids, b, y))
		return;
	const struct tern_buf *t[] = {w, x, ids, b, y};
	struct cuk_op op = rec(CUK_MAT_MUL_ID, 5, t);
	emit(cu_of(be), &op);
}

static void cu_get_rows(struct tern_backend *be, const struct tern_buf *w, const struct tern_buf *ids,
			struct tern_buf *y)
{
	if (!tern_host_get_rows_args(be, w, ids, y))
		return;
	if (!CUK(type_ok)(w->type) && w->type != QT_F32 && w->type != QT_I32) {
		tern_host_fail(be, "get_rows: rows of type %s", quant_type_name(w->type));
		return;
	}
	const struct tern_buf *t[] = {w, ids, y};
	struct cuk_op op = rec(CUK_GET_ROWS, 3, t);
	emit(cu_of(be), &op);
}

/* ---- the router ---- */

static void cu_moe_route(struct tern_backend *be, const struct tern_buf *logits, const struct tern_buf *bias,
			 struct tern_buf *ids, struct tern_buf *weights, const struct tern_moe_route *p)
{
	if (!tern_host_moe_route_args(be, logits, bias, ids, weights, p))
		return;
	if (logits->ne[0] > 1024 || p->n_group > 32) {
		tern_host_fail(be, "moe_route: %lld experts in %d groups (this backend takes 1024 in 32)",
			       (long long)logits->ne[0], p->n_group);
		return;
	}
	const struct tern_buf *t[] = {logits, bias, ids, weights};
	struct cuk_op op = rec(CUK_MOE_ROUTE, 4, t);
	op.u.moe_route.gating = p->gating;
	op.u.moe_route.k = p->k;
	op.u.moe_route.norm = p->norm;
	op.u.moe_route.n_group = p->n_group;
	op.u.moe_route.n_group_used = p->n_group_used;
	op.u.moe_route.scale = p->scale;
	emit(cu_of(be), &op);
}

static void cu_moe_combine(struct tern_backend *be, const struct tern_buf *x, const struct tern_buf *w,
			   struct tern_buf *y)
{
	if (!tern_host_moe_combine_args(be, x, w, y))
		return;
	const struct tern_buf *t[] = {x, w, y};
	struct cuk_op op = rec(CUK_MOE_COMBINE, 3, t);
	emit(cu_of(be), &op);
}

/* ---- norms, rope, attention ---- */

static struct cuk_norm norm_of(const struct tern_norm *n)
{
	struct cuk_norm o = {0};
	if (n) {
		o.kind = n->kind;
		o.eps = n->eps;
	}
	return o;
}

static struct cuk_rope rope_of(const struct tern_rope *p)
{
	struct cuk_rope r = {p->mode, p->n_rot, p->freq_base, p->freq_scale, p->ext_factor,
			     p->corr_low, p->corr_high, p->mscale, p->attn_factor};
	return r;
}

static void cu_norm(struct tern_backend *be, struct tern_buf *x, const struct tern_buf *r, const struct tern_buf *w,
		    const struct tern_buf *b, struct tern_buf *y, const struct tern_norm *p)
{
	if (!tern_host_norm_args(be, x, r, w, b, y, p))
		return;
	const struct tern_buf *t[] = {x, r, w, b, y};
	struct cuk_op op = rec(CUK_NORM, 5, t);
	op.u.norm.n = norm_of(p);
	emit(cu_of(be), &op);
}

static void cu_rope(struct tern_backend *be, struct tern_buf *x, const struct tern_buf *pos, const struct tern_buf *freq,
		    const struct tern_rope *p)
{
	if (!tern_host_rope_args(be, x, pos, freq, p))
		return;
	const struct tern_buf *t[] = {x, pos, freq};
	struct cuk_op op = rec(CUK_ROPE, 3, t);
	op.u.rope.r = rope_of(p);
	emit(cu_of(be), &op);
}

static void cu_norm_rope(struct tern_backend *be, struct tern_buf *q, struct tern_buf *k, const struct tern_buf *qw,
			 const struct tern_buf *kw, const struct tern_buf *pos, const struct tern_buf *freq,
			 const struct tern_norm *n, const struct tern_rope *p)
{
	if (!tern_host_norm_rope_args(be, q, k, qw, kw, pos, freq, n, p))
		return;
	const struct tern_buf *t[] = {q, k, qw, kw, pos, freq};
	struct cuk_op op = rec(CUK_NORM_ROPE, 6, t);
	op.u.norm_rope.n = norm_of(n);
	op.u.norm_rope.r = rope_of(p);
	emit(cu_of(be), &op);
}

static bool cache_type_ok(uint32_t t) { return t == QT_F32 || t == QT_F16 || t == QT_Q8_0; }

static void cu_kv_store(struct tern_backend *be, struct tern_buf *cache, const struct tern_buf *x,
			const struct tern_buf *pos, const struct tern_buf *seq)
{
	if (!tern_host_kv_store_args(be, cache, x, pos, seq))
		return;
	if (!cache_type_ok(cache->type)) {
		tern_host_fail(be, "kv_store: a %s cache (this backend keeps f32, f16 or q8_0)", quant_type_name(cache->type));
		return;
	}
	const struct tern_buf *t[] = {cache, x, pos, seq};
	struct cuk_op op = rec(CUK_KV_STORE, 4, t);
	emit(cu_of(be), &op);
}

static void cu_attention(struct tern_backend *be, const struct tern_buf *q, const struct tern_buf *k,
			 const struct tern_buf *v, const struct tern_buf *pos, const struct tern_buf *seq,
			 struct tern_buf *y, const struct tern_attn *p)
{
	if (!tern_host_attention_args(be, q, k, v, pos, seq, y, p))
		return;
	if (!cache_type_ok(k->type) || !cache_type_ok(v->type)) {
		tern_host_fail(be, "attention: a %s / %s cache (this backend reads f32, f16 or q8_0)",
			       quant_type_name(k->type), quant_type_name(v->type));
		return;
	}
	const struct tern_buf *t[] = {q, k, v, pos, seq, y, p->sinks};
	struct cuk_op op = rec(CUK_ATTENTION, 7, t);
	op.u.attn.scale = p->scale;
	op.u.attn.softcap = p->softcap;
	op.u.attn.window = p->window;
	emit(cu_of(be), &op);
}

/* ---- element-wise, copy, im2col ---- */

static void cu_im2col(struct tern_backend *be, const struct tern_buf *x, struct tern_buf *y, const struct tern_conv *p)
{
	if (!tern_host_im2col_args(be, x, y, p))
		return;
	const struct tern_buf *t[] = {x, y};
	struct cuk_op op = rec(CUK_IM2COL, 2, t);
	op.u.im2col.k = p->k;
	op.u.im2col.stride = p->stride;
	op.u.im2col.pad = p->pad;
	emit(cu_of(be), &op);
}

static void cu_glu(struct tern_backend *be, const struct tern_buf *gate, const struct tern_buf *up, struct tern_buf *y,
		   int kind)
{
	if (kind != TERN_GLU_SWIGLU && kind != TERN_GLU_GEGLU && kind != TERN_GLU_SWIGLU_OAI) {
		tern_host_fail(be, "glu: unknown kind %d", kind);
		return;
	}
	if (!tern_host_eltwise_args(be, "glu", gate, up, y, false))
		return;
	const struct tern_buf *t[] = {gate, up, y};
	struct cuk_op op = rec(CUK_GLU, 3, t);
	op.u.glu.kind = kind;
	emit(cu_of(be), &op);
}

static void cu_unary(struct tern_backend *be, const struct tern_buf *x, struct tern_buf *y, int kind)
{
	if (!tern_host_unary_args(be, x, y, kind)) /* declines TERN_UNARY_GELU_F16 */
		return;
	const struct tern_buf *t[] = {x, y};
	struct cuk_op op = rec(CUK_UNARY, 2, t);
	op.u.unary.kind = kind;
	emit(cu_of(be), &op);
}

static void cu_add(struct tern_backend *be, const struct tern_buf *a, const struct tern_buf *b, struct tern_buf *y)
{
	if (!tern_host_eltwise_args(be, "add", a, b, y, true))
		return;
	const struct tern_buf *t[] = {a, b, y};
	struct cuk_op op = rec(CUK_ADD, 3, t);
	emit(cu_of(be), &op);
}

static void cu_scale(struct tern_backend *be, const struct tern_buf *x, struct tern_buf *y, float s)
{
	if (!tern_host_eltwise_args(be, "scale", x, NULL, y, false))
		return;
	const struct tern_buf *t[] = {x, y};
	struct cuk_op op = rec(CUK_SCALE, 2, t);
	op.u.scale.s = s;
	emit(cu_of(be), &op);
}

static void cu_softmax(struct tern_backend *be, const struct tern_buf *x, struct tern_buf *y)
{
	if (!tern_host_eltwise_args(be, "softmax", x, NULL, y, false))
		return;
	const struct tern_buf *t[] = {x, y};
	struct cuk_op op = rec(CUK_SOFTMAX, 2, t);
	emit(cu_of(be), &op);
}

static void cu_argmax(struct tern_backend *be, const struct tern_buf *x, struct tern_buf *ids)
{
	if (!tern_host_argmax_args(be, x, ids))
		return;
	const struct tern_buf *t[] = {x, ids};
	struct cuk_op op = rec(CUK_ARGMAX, 2, t);
	emit(cu_of(be), &op);
}

static void cu_copy(struct tern_backend *be, const struct tern_buf *src, struct tern_buf *dst)
{
	if (!tern_host_copy_args(be, src, dst))
		return;
	uint32_t st = src->type, dt = dst->type;
	bool enc = st == QT_F32 && (dt == QT_F32 || dt == QT_F16 || dt == QT_BF16 || dt == QT_Q8_0);
	bool dec = dt == QT_F32 && (st == QT_F16 || st == QT_BF16 || st == QT_Q8_0 || CUK(type_ok)(st));
	if (st != dt && !enc && !dec) {
		tern_host_fail(be, "copy: %s to %s (this backend converts f32 to f16, bf16 or q8_0, and any weight type to f32)",
			       quant_type_name(st), quant_type_name(dt));
		return;
	}
	const struct tern_buf *t[] = {src, dst};
	struct cuk_op op = rec(CUK_COPY, 2, t);
	emit(cu_of(be), &op);
}

/* ---- devices, creation ---- */

static void fill_info(int i, const struct cuk_dev *d, struct tern_device_info *o)
{
	*o = (struct tern_device_info){0};
	snprintf(o->name, sizeof o->name, CU_DEV "%d", i);
	snprintf(o->desc, sizeof o->desc, "%s", d->name);
	snprintf(o->driver, sizeof o->driver, "%s %d.%d", d->emulated ? "emulation" : "NVIDIA driver, CUDA",
		 d->driver / 1000, d->driver % 1000 / 10);
	snprintf(o->api, sizeof o->api, "CUDA %d.%d, sm_%d%d", d->runtime / 1000, d->runtime % 1000 / 10, d->major,
		 d->minor);
	o->mem_total = d->total;
	o->mem_budget = d->free;
	o->max_alloc = d->total;
	o->max_binding = d->total;
	int cc = d->major * 10 + d->minor;
	o->fp16 = cc >= 53;
	o->int_dot = cc >= 61;
	o->coopmat = cc >= 70;
	o->uma = d->integrated;
	o->software = d->emulated;
	o->subgroup = 32;
}

int CU_PUB(device_count)(tern_err *err)
{
	char why[256] = "";
	int n = CUK(device_count)(why, sizeof why);
	if (n <= 0 && err)
		tern_errf(err, TERN_EUNSUPPORTED, "cuda: %s", why[0] ? why : "no device");
	return n > 0 ? n : 0;
}

int CU_PUB(device_info)(int i, struct tern_device_info *out, tern_err *err)
{
	struct cuk_dev d;
	char why[256];
	if (CUK(device_props)(i, &d, why, sizeof why))
		return tern_errf(err, TERN_EIO, CU_DEV "%d: %s", i, why);
	fill_info(i, &d, out);
	return 0;
}

static void cu_free(struct tern_backend *be)
{
	struct cu *c = cu_of(be);
	if (c->ctx) {
		if (c->stage)
			CUK(host_free)(c->ctx, c->stage);
		for (size_t i = 0; i < c->n_pinned; i++)
			CUK(host_free)(c->ctx, c->pinned[i].p);
		CUK(ctx_free)(c->ctx);
	}
	free(c->pinned);
	free(c->reads);
	free(c->ops);
	free(c->prev);
	free(c);
}

static void table(struct cu *c)
{
	struct tern_backend *be = &c->be;
	be->name = c->info.name;
	be->free = cu_free;
	be->buf_alloc = cu_buf_alloc;
	be->buf_weight = cu_buf_weight;
	be->buf_free = cu_buf_free;
	be->mat_prepare = cu_mat_prepare;
	be->host_alloc = cu_host_alloc;
	be->host_free = cu_host_free;
	be->upload = cu_upload;
	be->download = cu_download;
	be->product = cu_product;
	be->mat_mul_ggml = cu_mat_mul_ggml;
	be->mat_mul_heads = cu_mat_mul_heads;
	be->mat_mul_id = cu_mat_mul_id;
	be->moe_route = cu_moe_route;
	be->moe_combine = cu_moe_combine;
	be->get_rows = cu_get_rows;
	be->norm = cu_norm;
	be->rope = cu_rope;
	be->norm_rope = cu_norm_rope;
	be->kv_store = cu_kv_store;
	be->attention = cu_attention;
	be->im2col = cu_im2col;
	be->glu = cu_glu;
	be->unary = cu_unary;
	be->add = cu_add;
	be->scale = cu_scale;
	be->softmax = cu_softmax;
	be->argmax = cu_argmax;
	be->copy = cu_copy;
	be->begin_step = cu_begin_step;
	be->end_step = cu_end_step;
	be->sync = cu_sync;
}

int CU_PUB(backend_new)(struct tern_backend **out, const struct cuda_backend_opts *opts, tern_err *err)
{
	*out = NULL;
	const struct cuda_backend_opts o = opts ? *opts : (struct cuda_backend_opts){.max_tokens = 512};
	if (o.max_tokens < 1 || o.max_tokens > 4096)
		return tern_errf(err, TERN_EINVAL, CU_DEV ": batch bound %lld out of range 1..4096", (long long)o.max_tokens);
	int n = CU_PUB(device_count)(err);
	if (o.device < 0 || o.device >= n)
		return n ? tern_errf(err, TERN_ENOTFOUND, CU_DEV "%d: no such device (%d found)", o.device, n)
			 : TERN_EUNSUPPORTED;
	struct cu *c = calloc(1, sizeof *c);
	if (!c)
		return tern_errf(err, TERN_ENOMEM, CU_DEV ": out of memory");
	tern_host_table(&c->be, CU_DEV, TERN_BACKEND_ASYNC | TERN_BACKEND_GRAPH, o.max_tokens, c);
	c->be.caps &= ~(unsigned)TERN_BACKEND_HOST_MEMORY;
	int rc = CU_PUB(device_info)(o.device, &c->info, err);
	char why[256];
	unsigned flags = (o.no_tensor_cores ? CUK_NO_TENSOR_CORES : 0u) | (o.no_int_dot ? CUK_NO_INT_DOT : 0u);
	if (!rc && CUK(ctx_new)(o.device, flags, &c->ctx, why, sizeof why))
		rc = tern_errf(err, TERN_EIO, "%s (%s): %s", c->info.name, c->info.desc, why);
	if (!rc && CUK(host_alloc)(c->ctx, (void **)&c->stage, STAGE_BYTES, why, sizeof why))
		rc = tern_errf(err, TERN_ENOMEM, "%s: pinned staging: %s", c->info.name, why);
	if (rc) {
		cu_free(&c->be);
		return rc;
	}
	c->graphs = !o.no_graphs;
	c->st.graphs = c->graphs;
	table(c);
	*out = &c->be;
	return 0;
}

void CU_PUB(get_stats)(struct tern_backend *be, struct cuda_stats *out) { *out = cu_of(be)->st; }

int CU_PUB(read_bandwidth)(struct tern_backend *be, double *gbps, tern_err *err)
{
	struct cu *c = cu_of(be);
	uint64_t bytes = (uint64_t)1 << 30;
	if (c->info.mem_budget / 4 < bytes)
		bytes = c->info.mem_budget / 4 & ~(uint64_t)255;
	char why[256];
	if (CUK(read_bandwidth)(c->ctx, (size_t)bytes, gbps, why, sizeof why))
		return tern_errf(err, TERN_EUNSUPPORTED, "%s: %s", c->info.name, why);
	return 0;
}
