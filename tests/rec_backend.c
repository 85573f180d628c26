/* rec_backend.c - the recording test backend (rec_backend.h). Each call
 * inside a step appends its op and its arguments to the step's log as
 * 64-bit words; a step's log must equal the first step's word for word. */
#include "tests/rec_backend.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct rec_log {
	uint64_t *w;   /* the words */
	size_t n, cap;
	size_t *call;  /* [n_call]: where each call's words start */
	size_t n_call, cap_call;
};

struct rec {
	struct tern_backend be;
	struct tern_backend *in;
	struct rec_log first, cur;
	bool in_step, have_first, oom;
	int steps;
	tern_err pending; /* the first difference, for the next sync */
};

/* the ops, in the order of the words that name them */
enum {
	OP_UPLOAD = 1, OP_DOWNLOAD, OP_PRODUCT, OP_MAT_MUL_GGML, OP_MAT_MUL_HEADS, OP_MAT_MUL_ID, OP_MOE_ROUTE,
	OP_MOE_COMBINE, OP_GET_ROWS, OP_NORM, OP_ROPE, OP_NORM_ROPE, OP_KV_STORE, OP_ATTENTION, OP_IM2COL, OP_GLU, OP_UNARY, OP_ADD,
	OP_SCALE, OP_SOFTMAX, OP_COPY, OP_ARGMAX, OP_SYNC, OP_COUNT
};
static const char *const op_names[OP_COUNT] = {
	"?",	 "upload",    "download", "product", "mat_mul_ggml", "mat_mul_heads", "mat_mul_id", "moe_route",
	"moe_combine", "get_rows", "norm", "rope", "norm_rope", "kv_store", "attention", "im2col", "glu", "unary", "add",
	"scale", "softmax", "copy", "argmax", "sync",
};

static bool grow(void **p, size_t *cap, size_t need, size_t elem)
{
	if (need <= *cap)
		return true;
	size_t c = *cap ? *cap * 2 : 256;
	while (c < need)
		c *= 2;
	void *q = realloc(*p, c * elem);
	if (!q)
		return false;
	*p = q;
	*cap = c;
	return true;
}

static void put(struct rec *r, uint64_t v)
{
	if (!r->in_step || r->oom)
		return;
	struct rec_log *l = &r->cur;
	if (!grow((void **)&l->w, &l->cap, l->n + 1, sizeof *l->w)) {
		r->oom = true;
		return;
	}
	l->w[l->n++] = v;
}

static void put_f(struct rec *r, float f)
{
	uint32_t u;
	memcpy(&u, &f, sizeof u);
	put(r, u);
}

static void put_p(struct rec *r, const void *p) { put(r, (uint64_t)(uintptr_t)p); }

/* a buffer: where its storage is and how it is seen */
static void put_buf(struct rec *r, const struct tern_buf *b)
{
	put(r, b != NULL);
	if (!b)
		return;
	put_p(r, b->mem);
	put(r, b->offset);
	put(r, b->type);
	for (int i = 0; i < TERN_MAX_DIMS; i++) {
		put(r, (uint64_t)b->ne[i]);
		put(r, b->nb[i]);
	}
	put_p(r, b->prep);
}

static void begin_call(struct rec *r, int op)
{
	if (!r->in_step || r->oom)
		return;
	struct rec_log *l = &r->cur;
	if (!grow((void **)&l->call, &l->cap_call, l->n_call + 1, sizeof *l->call)) {
		r->oom = true;
		return;
	}
	l->call[l->n_call++] = l->n;
	put(r, (uint64_t)op);
}

/* ---- the recorded ops: record, then forward ---- */

#define REC(be) struct rec *r = (be)->impl

static void rec_upload(struct tern_backend *be, struct tern_buf *dst, size_t offset, const void *src, size_t n)
{
	REC(be);
	begin_call(r, OP_UPLOAD);
	put_buf(r, dst);
	put(r, offset);
	put_p(r, src);
	put(r, n);
	r->in->upload(r->in, dst, offset, src, n);
}

static void rec_download(struct tern_backend *be, const struct tern_buf *src, size_t offset, void *dst, size_t n)
{
	REC(be);
	begin_call(r, OP_DOWNLOAD);
	put_buf(r, src);
	put(r, offset);
	put_p(r, dst);
	put(r, n);
	r->in->download(r->in, src, offset, dst, n);
}

static void rec_product(struct tern_backend *be, int n_w, const struct tern_buf *const *w, const struct tern_buf *x,
			struct tern_buf *const *y)
{
	REC(be);
	begin_call(r, OP_PRODUCT);
	put(r, (uint64_t)n_w);
	for (int i = 0; i < n_w && i < TERN_MAT_VEC_N; i++) {
		put_buf(r, w[i]);
		put_buf(r, y[i]);
	}
	put_buf(r, x);
	r->in->product(r->in, n_w, w, x, y);
}

/* the ops of three buffers and no parameters */
static void rec3(struct rec *r, int op, const struct tern_buf *a, const struct tern_buf *b, const struct tern_buf *c)
{
	begin_call(r, op);
	put_buf(r, a);
	put_buf(r, b);
	put_buf(r, c);
}

static void rec_mat_mul_ggml(struct tern_backend *be, const struct tern_buf *w, const struct tern_buf *x,
			     struct tern_buf *y)
{
	REC(be);
	rec3(r, OP_MAT_MUL_GGML, w, x, y);
	r->in->mat_mul_ggml(r->in, w, x, y);
}

static void rec_mat_mul_heads(struct tern_backend *be, const struct tern_buf *w, const struct tern_buf *x,
			      struct tern_buf *y)
{
	REC(be);
	rec3(r, OP_MAT_MUL_HEADS, w, x, y);
	r->in->mat_mul_heads(r->in, w, x, y);
}

static void rec_mat_mul_id(struct tern_backend *be, const struct tern_buf *w, const struct tern_buf *x,
			   const struct tern_buf *ids, const struct tern_buf *b, struct tern_buf *y)
{
	REC(be);
	rec3(r, OP_MAT_MUL_ID, w, x, ids);
	put_buf(r, b);
	put_buf(r, y);
	r->in->mat_mul_id(r->in, w, x, ids, b, y);
}

static void rec_moe_route(struct tern_backend *be, const struct tern_buf *logits, const struct tern_buf *bias,
			  struct tern_buf *ids, struct tern_buf *weights, const struct tern_moe_route *p)
{
	REC(be);
	rec3(r, OP_MOE_ROUTE, logits, bias, ids);
	put_buf(r, weights);
	put(r, (uint64_t)p->gating);
	put(r, (uint64_t)p->k);
	put(r, p->norm);
	put_f(r, p->scale);
	put(r, (uint64_t)p->n_group);
	put(r, (uint64_t)p->n_group_used);
	r->in->moe_route(r->in, logits, bias, ids, weights, p);
}

static void rec_moe_combine(struct tern_backend *be, const struct tern_buf *x, const struct tern_buf *w,
			    struct tern_buf *y)
{
	REC(be);
	rec3(r, OP_MOE_COMBINE, x, w, y);
	r->in->moe_combine(r->in, x, w, y);
}

static void rec_get_rows(struct tern_backend *be, const struct tern_buf *w, const struct tern_buf *ids,
			 struct tern_buf *y)
{
	REC(be);
	rec3(r, OP_GET_ROWS, w, ids, y);
	r->in->get_rows(r->in, w, ids, y);
}

static void rec_norm(struct tern_backend *be, struct tern_buf *x, const struct tern_buf *res, const struct tern_buf *w,
		     const struct tern_buf *b, struct tern_buf *y, const struct tern_norm *p)
{
	REC(be);
	rec3(r, OP_NORM, x, res, w);
	put_buf(r, b);
	put_buf(r, y);
	put(r, (uint64_t)p->kind);
	put_f(r, p->eps);
	put(r, p->ggml);
	r->in->norm(r->in, x, res, w, b, y, p);
}

/* every field of a rope's parameters */
static void put_rope(struct rec *r, const struct tern_rope *p)
{
	put(r, (uint64_t)p->mode);
	put(r, (uint64_t)p->n_rot);
	const float f[] = {p->freq_base, p->freq_scale, p->ext_factor, p->corr_low, p->corr_high, p->mscale, p->attn_factor};
	for (size_t i = 0; i < sizeof f / sizeof *f; i++)
		put_f(r, f[i]);
	put(r, p->ggml);
}

static void rec_rope(struct tern_backend *be, struct tern_buf *x, const struct tern_buf *pos,
		     const struct tern_buf *freq, const struct tern_rope *p)
{
	REC(be);
	rec3(r, OP_ROPE, x, pos, freq);
	put_rope(r, p);
	r->in->rope(r->in, x, pos, freq, p);
}

static void rec_norm_rope(struct tern_backend *be, struct tern_buf *q, struct tern_buf *k, const struct tern_buf *qw,
			  const struct tern_buf *kw, const struct tern_buf *pos, const struct tern_buf *freq,
			  const struct tern_norm *n, const struct tern_rope *p)
{
	REC(be);
	rec3(r, OP_NORM_ROPE, q, k, qw);
	put_buf(r, kw);
	put_buf(r, pos);
	put_buf(r, freq);
	put(r, n != NULL);
	if (n) {
		put(r, (uint64_t)n->kind);
		put_f(r, n->eps);
		put(r, n->ggml);
	}
	put_rope(r, p);
	r->in->norm_rope(r->in, q, k, qw, kw, pos, freq, n, p);
}

static void rec_kv_store(struct tern_backend *be, struct tern_buf *cache, const struct tern_buf *x,
			 const struct tern_buf *pos, const struct tern_buf *seq)
{
	REC(be);
	rec3(r, OP_KV_STORE, cache, x, pos);
	put_buf(r, seq);
	r->in->kv_store(r->in, cache, x, pos, seq);
}

static void rec_attention(struct tern_backend *be, const struct tern_buf *q, const struct tern_buf *k,
			  const struct tern_buf *v, const struct tern_buf *pos, const struct tern_buf *seq,
			  struct tern_buf *y, const struct tern_attn *p)
{
	REC(be);
	rec3(r, OP_ATTENTION, q, k, v);
	put_buf(r, pos);
	put_buf(r, seq);
	put_buf(r, y);
	put_f(r, p->scale);
	put(r, (uint64_t)p->window);
	put_f(r, p->softcap);
	put(r, (uint64_t)p->f16_split);
	put(r, p->ggml);
	put_buf(r, p->sinks);
	r->in->attention(r->in, q, k, v, pos, seq, y, p);
}

static void rec_im2col(struct tern_backend *be, const struct tern_buf *x, struct tern_buf *y, const struct tern_conv *p)
{
	REC(be);
	rec3(r, OP_IM2COL, x, y, NULL);
	put(r, (uint64_t)p->k);
	put(r, (uint64_t)p->stride);
	put(r, (uint64_t)p->pad);
	r->in->im2col(r->in, x, y, p);
}

static void rec_glu(struct tern_backend *be, const struct tern_buf *gate, const struct tern_buf *up, struct tern_buf *y,
		    int kind)
{
	REC(be);
	rec3(r, OP_GLU, gate, up, y);
	put(r, (uint64_t)kind);
	r->in->glu(r->in, gate, up, y, kind);
}

static void rec_unary(struct tern_backend *be, const struct tern_buf *x, struct tern_buf *y, int kind)
{
	REC(be);
	rec3(r, OP_UNARY, x, y, NULL);
	put(r, (uint64_t)kind);
	r->in->unary(r->in, x, y, kind);
}

static void rec_add(struct tern_backend *be, const struct tern_buf *a, const struct tern_buf *b, struct tern_buf *y)
{
	REC(be);
	rec3(r, OP_ADD, a, b, y);
	r->in->add(r->in, a, b, y);
}

static void rec_scale(struct tern_backend *be, const struct tern_buf *x, struct tern_buf *y, float s)
{
	REC(be);
	rec3(r, OP_SCALE, x, y, NULL);
	put_f(r, s);
	r->in->scale(r->in, x, y, s);
}

static void rec_softmax(struct tern_backend *be, const struct tern_buf *x, struct tern_buf *y)
{
	REC(be);
	rec3(r, OP_SOFTMAX, x, y, NULL);
	r->in->softmax(r->in, x, y);
}

static void rec_argmax(struct tern_backend *be, const struct tern_buf *x, struct tern_buf *ids)
{
	REC(be);
	rec3(r, OP_ARGMAX, x, ids, NULL);
	r->in->argmax(r->in, x, ids);
}

static void rec_copy(struct tern_backend *be, const struct tern_buf *src, struct tern_buf *dst)
{
	REC(be);
	rec3(r, OP_COPY, src, dst, NULL);
	r->in->copy(r->in, src, dst);
}

/* ---- steps ---- */

static void rec_begin_step(struct tern_backend *be)
{
	REC(be);
	if (r->in_step && !r->pending.code)
		tern_errf(&r->pending, TERN_EINVAL, "rec: begin_step inside a step");
	r->in_step = true;
	r->cur.n = r->cur.n_call = 0;
	r->in->begin_step(r->in);
}

/* words [a, b) of log l */
static bool same_words(const struct rec_log *x, size_t xa, size_t xb, const struct rec_log *y, size_t ya, size_t yb)
{
	return xb - xa == yb - ya && !memcmp(x->w + xa, y->w + ya, (xb - xa) * sizeof *x->w);
}

static size_t call_end(const struct rec_log *l, size_t i) { return i + 1 < l->n_call ? l->call[i + 1] : l->n; }

static void rec_end_step(struct tern_backend *be)
{
	REC(be);
	r->in->end_step(r->in);
	if (!r->in_step) {
		if (!r->pending.code)
			tern_errf(&r->pending, TERN_EINVAL, "rec: end_step outside a step");
		return;
	}
	r->in_step = false;
	if (r->oom) {
		if (!r->pending.code)
			tern_errf(&r->pending, TERN_ENOMEM, "rec: out of memory for the step's log");
		return;
	}
	if (!r->have_first) { /* the step every later one must repeat */
		struct rec_log t = r->first;
		r->first = r->cur;
		r->cur = t;
		r->have_first = true;
		return;
	}
	r->steps++;
	const struct rec_log *a = &r->first, *b = &r->cur;
	size_t n = a->n_call < b->n_call ? a->n_call : b->n_call;
	for (size_t i = 0; i < n; i++) {
		if (same_words(a, a->call[i], call_end(a, i), b, b->call[i], call_end(b, i)))
			continue;
		int oa = (int)a->w[a->call[i]], ob = (int)b->w[b->call[i]];
		if (!r->pending.code)
			tern_errf(&r->pending, TERN_EINVAL,
				  "rec: step %d, call %zu (%s) differs from the first step's (%s): a replayed step "
				  "would not do it",
				  r->steps + 1, i, op_names[ob > 0 && ob < OP_COUNT ? ob : 0],
				  op_names[oa > 0 && oa < OP_COUNT ? oa : 0]);
		return;
	}
	if (a->n_call != b->n_call && !r->pending.code)
		tern_errf(&r->pending, TERN_EINVAL, "rec: step %d makes %zu calls, the first step %zu", r->steps + 1,
			  b->n_call, a->n_call);
}

static int rec_sync(struct tern_backend *be, tern_err *err)
{
	REC(be);
	begin_call(r, OP_SYNC);
	int rc = r->in->sync(r->in, err);
	if (rc)
		return rc;
	if (r->pending.code) {
		rc = tern_errf(err, r->pending.code, "%s", r->pending.msg);
		r->pending = (tern_err){0};
	}
	return rc;
}

/* ---- load time: forwarded ---- */

static int rec_buf_alloc(struct tern_backend *be, struct tern_buf *b, uint32_t type, int n_dims, const int64_t *ne,
			 tern_err *err)
{
	REC(be);
	return r->in->buf_alloc(r->in, b, type, n_dims, ne, err);
}

static int rec_buf_weight(struct tern_backend *be, struct tern_buf *b, const struct tern_tensor_view *t, tern_err *err)
{
	REC(be);
	return r->in->buf_weight(r->in, b, t, err);
}

static void rec_buf_free(struct tern_backend *be, struct tern_buf *b)
{
	REC(be);
	r->in->buf_free(r->in, b);
}

static int rec_mat_prepare(struct tern_backend *be, struct tern_buf *w, tern_err *err)
{
	REC(be);
	return r->in->mat_prepare(r->in, w, err);
}

static int rec_host_alloc(struct tern_backend *be, size_t size, void **ptr, tern_err *err)
{
	REC(be);
	return r->in->host_alloc(r->in, size, ptr, err);
}

static void rec_host_free(struct tern_backend *be, void *ptr)
{
	REC(be);
	r->in->host_free(r->in, ptr);
}

static void log_free(struct rec_log *l)
{
	free(l->w);
	free(l->call);
}

static void rec_free(struct tern_backend *be)
{
	REC(be);
	log_free(&r->first);
	log_free(&r->cur);
	free(r);
}

int rec_backend_new(struct tern_backend **out, struct tern_backend *inner, tern_err *err)
{
	struct rec *r = calloc(1, sizeof *r);
	if (!r)
		return tern_errf(err, TERN_ENOMEM, "rec: out of memory");
	r->in = inner;
	r->be = (struct tern_backend){
		.name = inner->name,
		.caps = inner->caps,
		.max_tokens = inner->max_tokens,
		.free = rec_free,
		.buf_alloc = rec_buf_alloc,
		.buf_weight = rec_buf_weight,
		.buf_free = rec_buf_free,
		.mat_prepare = rec_mat_prepare,
		.host_alloc = rec_host_alloc,
		.host_free = rec_host_free,
		.upload = rec_upload,
		.download = rec_download,
		.product = rec_product,
		.mat_mul_ggml = rec_mat_mul_ggml,
		.mat_mul_heads = rec_mat_mul_heads,
		.mat_mul_id = rec_mat_mul_id,
		.moe_route = rec_moe_route,
		.moe_combine = rec_moe_combine,
		.get_rows = rec_get_rows,
		.norm = rec_norm,
		.rope = rec_rope,
		.norm_rope = rec_norm_rope,
		.kv_store = rec_kv_store,
		.attention = rec_attention,
		.im2col = rec_im2col,
		.glu = rec_glu,
		.unary = rec_unary,
		.add = rec_add,
		.scale = rec_scale,
		.softmax = rec_softmax,
		.argmax = rec_argmax,
		.copy = rec_copy,
		.begin_step = rec_begin_step,
		.end_step = rec_end_step,
		.sync = rec_sync,
		.impl = r,
	};
	*out = &r->be;
	return 0;
}

int rec_backend_steps(const struct tern_backend *be)
{
	const struct rec *r = be->impl;
	return r->steps;
}

void rec_backend_reset(struct tern_backend *be)
{
	REC(be);
	r->have_first = false;
	r->steps = 0;
}
