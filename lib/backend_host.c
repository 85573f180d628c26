/* backend_host.c - what every backend shares on the host side
 * (lib/backend_host.h): host-memory buffers, transfers and deferred errors
 * of the CPU backends, and the operand checks every backend runs. */
#include "lib/backend_host.h"

#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/core/quote.h"
#include "quant/quant.h"

int tern_host_set_shape(struct tern_buf *b, uint32_t type, int n_dims, const int64_t *ne, tern_err *err)
{
	if (!quant_type_valid(type))
		return tern_errf(err, TERN_EINVAL, "buffer: invalid type %u", type);
	if (n_dims < 1 || n_dims > TERN_MAX_DIMS)
		return tern_errf(err, TERN_EINVAL, "buffer: %d dimensions, 1..%d allowed", n_dims, TERN_MAX_DIMS);
	const struct quant_type_info *ti = quant_type_info(type);
	b->type = type;
	for (int i = 0; i < TERN_MAX_DIMS; i++) {
		b->ne[i] = i < n_dims ? ne[i] : 1;
		if (b->ne[i] < 1 || b->ne[i] > ((int64_t)1 << 40))
			return tern_errf(err, TERN_EINVAL, "buffer: dimension %d of %lld elements", i, (long long)b->ne[i]);
	}
	bool ok = true;
	b->nb[0] = ti->size;
	b->nb[1] = quant_row_size(type, (uint64_t)b->ne[0], &ok);
	if (!ok)
		return tern_errf(err, TERN_EINVAL, "buffer: rows of %lld %s elements (block %u)", (long long)b->ne[0],
				 ti->name, ti->blck);
	for (int i = 2; i < TERN_MAX_DIMS; i++) {
		if (b->nb[i - 1] > SIZE_MAX / 2 / (size_t)b->ne[i - 1])
			return tern_errf(err, TERN_EINVAL, "buffer: size overflows");
		b->nb[i] = b->nb[i - 1] * (size_t)b->ne[i - 1];
	}
	if (b->nb[3] > SIZE_MAX / 2 / (size_t)b->ne[3])
		return tern_errf(err, TERN_EINVAL, "buffer: size overflows");
	return 0;
}

int tern_host_buf_alloc(struct tern_backend *be, struct tern_buf *b, uint32_t type, int n_dims, const int64_t *ne,
		       tern_err *err)
{
	struct tern_buf nb = {.be = be, .flags = TERN_BUF_OWNS};
	*b = (struct tern_buf){0};
	int rc = tern_host_set_shape(&nb, type, n_dims, ne, err);
	if (rc)
		return rc;
	size_t size = nb.nb[3] * (size_t)nb.ne[3];
	nb.mem = aligned_alloc(64, (size + 63) & ~(size_t)63);
	if (!nb.mem)
		return tern_errf(err, TERN_ENOMEM, "buffer: out of memory for %zu bytes", size);
	*b = nb;
	return 0;
}

int tern_host_view_shape(const struct tern_tensor_view *t, struct tern_buf *nb, tern_err *err)
{
	int64_t ne[TERN_MAX_DIMS];
	for (int i = 0; i < TERN_MAX_DIMS; i++)
		ne[i] = t->ne[i] > (uint64_t)INT64_MAX ? -1 : (int64_t)t->ne[i];
	int rc = tern_host_set_shape(nb, t->type, TERN_MAX_DIMS, ne, err);
	if (!rc && (!t->data || nb->nb[3] * (size_t)nb->ne[3] != t->nbytes))
		rc = tern_errf(err, TERN_EINVAL, "buffer: %llu bytes of data for a shape of %zu",
			       (unsigned long long)t->nbytes, nb->nb[3] * (size_t)nb->ne[3]);
	return rc;
}

int tern_host_buf_weight(struct tern_backend *be, struct tern_buf *b, const struct tern_tensor_view *t,
			tern_err *err)
{
	struct tern_buf nb = {.be = be, .flags = TERN_BUF_READONLY};
	*b = (struct tern_buf){0};
	int rc = tern_host_view_shape(t, &nb, err);
	if (rc) {
		char q[TERN_QUOTE_MAX];
		tern_err_prefixf(err, "tensor '%s'", tern_quote_str(q, sizeof q, t->name));
		return rc;
	}
	nb.mem = (void *)(uintptr_t)t->data; /* read-only: TERN_BUF_READONLY */
	*b = nb;
	return 0;
}

void tern_host_buf_release(struct tern_buf *b)
{
	if (b->flags & TERN_BUF_OWNS)
		free(b->mem);
	*b = (struct tern_buf){0};
}

void tern_host_fail(struct tern_backend *be, const char *fmt, ...)
{
	struct tern_host *h = be->impl;
	int expected = 0;
	if (!atomic_compare_exchange_strong(&h->claimed, &expected, 1))
		return;
	va_list ap;
	va_start(ap, fmt);
	h->pending.code = TERN_EINVAL;
	int n = snprintf(h->pending.msg, sizeof h->pending.msg, "%s: ", be->name);
	vsnprintf(h->pending.msg + n, sizeof h->pending.msg - (size_t)n, fmt, ap);
	va_end(ap);
}

bool tern_host_range_ok(struct tern_backend *be, const char *op, const struct tern_buf *b, size_t offset, size_t n)
{
	size_t size = b->be == be ? tern_buf_nbytes(b) : 0;
	if (b->be != be || !b->mem || offset > size || n > size - offset) {
		tern_host_fail(be, "%s of %zu bytes at %zu outside a buffer of %zu", op, n, offset, size);
		return false;
	}
	return true;
}

void tern_host_upload(struct tern_backend *be, struct tern_buf *dst, size_t offset, const void *src, size_t n)
{
	if (dst->flags & TERN_BUF_READONLY) {
		tern_host_fail(be, "upload into a read-only weight");
		return;
	}
	if (tern_host_range_ok(be, "upload", dst, offset, n))
		memcpy((uint8_t *)dst->mem + dst->offset + offset, src, n);
}

void tern_host_download(struct tern_backend *be, const struct tern_buf *src, size_t offset, void *dst, size_t n)
{
	if (tern_host_range_ok(be, "download", src, offset, n))
		memcpy(dst, (const uint8_t *)src->mem + src->offset + offset, n);
}

void tern_host_step(struct tern_backend *be) { (void)be; }

int tern_host_sync(struct tern_backend *be, tern_err *err)
{
	struct tern_host *h = be->impl;
	int rc = h->pending.code;
	if (rc)
		tern_errf(err, rc, "%s", h->pending.msg);
	h->pending = (tern_err){0};
	atomic_store(&h->claimed, 0);
	return rc;
}

static bool contiguous_f32(const struct tern_buf *b)
{
	return b->type == QT_F32 && b->nb[1] == (size_t)b->ne[0] * 4 && b->ne[2] == 1 && b->ne[3] == 1;
}

bool tern_host_mm_args(struct tern_backend *be, const char *op, const struct tern_buf *w, const struct tern_buf *x,
		      const struct tern_buf *y)
{
	if (w->be != be || !w->prep) {
		tern_host_fail(be, "%s: weight not prepared by this backend", op);
		return false;
	}
	int64_t ntok = x->ne[1];
	if (w->ne[2] != 1) {
		tern_host_fail(be, "%s: a stack of %lld experts takes mat_mul_id", op, (long long)w->ne[2]);
		return false;
	}
	if (x->be != be || y->be != be || !contiguous_f32(x) || !contiguous_f32(y) || x->ne[0] != w->ne[0] ||
	    y->ne[0] != w->ne[1] || y->ne[1] != ntok || ntok < 1 || ntok > be->max_tokens) {
		tern_host_fail(be, "%s: operands do not fit a %lld x %lld weight (x %lld x %lld, y %lld x %lld)", op,
			      (long long)w->ne[1], (long long)w->ne[0], (long long)x->ne[1], (long long)x->ne[0],
			      (long long)y->ne[1], (long long)y->ne[0]);
		return false;
	}
	return true;
}

bool tern_host_product_args(struct tern_backend *be, int n_w, const struct tern_buf *const *w,
			   const struct tern_buf *x, struct tern_buf *const *y)
{
	if (n_w < 1 || n_w > TERN_MAT_VEC_N) {
		tern_host_fail(be, "product: %d weights (1..%d)", n_w, TERN_MAT_VEC_N);
		return false;
	}
	for (int i = 0; i < n_w; i++)
		if (!tern_host_mm_args(be, "product", w[i], x, y[i]))
			return false;
	return true;
}

bool tern_host_ggml_ok(struct tern_backend *be, const char *op)
{
	if (tern_backend_ggml(be))
		return true;
	tern_host_fail(be, "%s: ggml's rounding asked of a backend without TERN_BACKEND_GGML_NUMERICS", op);
	return false;
}

int tern_host_weight_shape(struct tern_backend *be, const struct tern_buf *w, tern_err *err)
{
	if (w->be != be || !w->mem)
		return tern_errf(err, TERN_EINVAL, "%s: weight is not a buffer of this backend", be->name);
	if (w->ne[3] != 1)
		return tern_errf(err, TERN_EINVAL, "%s: weight of %lld x %lld x %lld x %lld is not a matrix or a stack of them", be->name,
				 (long long)w->ne[0], (long long)w->ne[1], (long long)w->ne[2], (long long)w->ne[3]);
	return 0;
}

int tern_host_host_alloc(struct tern_backend *be, size_t size, void **ptr, tern_err *err)
{
	size_t n = (size ? size + 63 : 64) & ~(size_t)63; /* aligned_alloc: a multiple of the alignment */
	*ptr = n >= size ? aligned_alloc(64, n) : NULL;
	if (!*ptr)
		return tern_errf(err, TERN_ENOMEM, "%s: out of memory for %zu bytes of host memory", be->name, size);
	return 0;
}

void tern_host_host_free(struct tern_backend *be, void *ptr)
{
	(void)be;
	free(ptr);
}

void tern_host_table(struct tern_backend *be, const char *name, unsigned caps, int64_t max_tokens, void *impl)
{
	*be = (struct tern_backend){
		.name = name,
		.caps = caps | TERN_BACKEND_HOST_MEMORY,
		.max_tokens = max_tokens,
		.buf_alloc = tern_host_buf_alloc,
		.buf_weight = tern_host_buf_weight,
		.host_alloc = tern_host_host_alloc,
		.host_free = tern_host_host_free,
		.upload = tern_host_upload,
		.download = tern_host_download,
		.begin_step = tern_host_step,
		.end_step = tern_host_step,
		.sync = tern_host_sync,
		.impl = impl,
	};
}

/* ---- operands of the other ops ---- */

int64_t tern_host_nrows(const struct tern_buf *b) { return b->ne[1] * b->ne[2] * b->ne[3]; }

/* rows of b follow each other without gaps */
static bool contiguous(const struct tern_buf *b)
{
	if (b->nb[1] != quant_row_size(b->type, (uint64_t)b->ne[0], NULL))
		return false;
	for (int i = 2; i < TERN_MAX_DIMS; i++)
		if (b->ne[i] > 1 && b->nb[i] != b->nb[i - 1] * (size_t)b->ne[i - 1])
			return false;
	return true;
}

/* rows of b do not overlap, with or without gaps between them (a column
 * window, tern_buf_cols) */
static bool rows_apart(const struct tern_buf *b)
{
	if (b->nb[1] < quant_row_size(b->type, (uint64_t)b->ne[0], NULL))
		return false;
	for (int i = 2; i < TERN_MAX_DIMS; i++)
		if (b->ne[i] > 1 && b->nb[i] < b->nb[i - 1] * (size_t)b->ne[i - 1])
			return false;
	return true;
}

static bool mine(struct tern_backend *be, const struct tern_buf *b, uint32_t type)
{
	return b->be == be && b->mem && b->type == type && contiguous(b);
}

static bool writable(const struct tern_buf *b) { return !(b->flags & TERN_BUF_READONLY); }

static bool same_shape(const struct tern_buf *a, const struct tern_buf *b)
{
	return a->ne[0] == b->ne[0] && tern_host_nrows(a) == tern_host_nrows(b);
}

static const char *shape(char *s, size_t n, const struct tern_buf *b)
{
	snprintf(s, n, "%s %lld x %lld x %lld x %lld", quant_type_name(b->type), (long long)b->ne[0],
		 (long long)b->ne[1], (long long)b->ne[2], (long long)b->ne[3]);
	return s;
}

bool tern_host_get_rows_args(struct tern_backend *be, const struct tern_buf *w, const struct tern_buf *ids,
			    const struct tern_buf *y)
{
	char s1[96], s2[96];
	if (w->be != be || !w->mem || !contiguous(w) || w->ne[2] != 1 || w->ne[3] != 1 || !mine(be, ids, QT_I32) ||
	    !mine(be, y, QT_F32) || !writable(y) || y->ne[0] != w->ne[0] || tern_host_nrows(ids) != 1 ||
	    ids->ne[0] != tern_host_nrows(y)) {
		tern_host_fail(be, "get_rows: weight %s, ids and y %s do not fit", shape(s1, sizeof s1, w),
			      shape(s2, sizeof s2, y));
		return false;
	}
	return true;
}

bool tern_host_norm_args(struct tern_backend *be, const struct tern_buf *x, const struct tern_buf *r,
			const struct tern_buf *w, const struct tern_buf *b, const struct tern_buf *y,
			const struct tern_norm *p)
{
	char s1[96], s2[96];
	bool ok = mine(be, x, QT_F32) && mine(be, y, QT_F32) && writable(y) && same_shape(x, y) &&
		  (p->kind == TERN_NORM_RMS || p->kind == TERN_NORM_LAYER) && p->eps >= 0;
	if (ok && r)
		ok = mine(be, r, QT_F32) && same_shape(r, x) && writable(x);
	if (ok && w)
		ok = mine(be, w, QT_F32) && w->ne[0] == x->ne[0] && tern_host_nrows(w) == 1;
	if (ok && b)
		ok = mine(be, b, QT_F32) && b->ne[0] == x->ne[0] && tern_host_nrows(b) == 1;
	if (!ok)
		tern_host_fail(be, "norm: operands do not fit x %s, y %s (kind %d)", shape(s1, sizeof s1, x),
			      shape(s2, sizeof s2, y), p->kind);
	return ok && (!p->ggml || tern_host_ggml_ok(be, "norm"));
}

/* x, pos, freq and p fit rope (nothing recorded) */
static bool rope_fits(struct tern_backend *be, const struct tern_buf *x, const struct tern_buf *pos,
		      const struct tern_buf *freq, const struct tern_rope *p)
{
	int64_t ntok = x->ne[2] * x->ne[3];
	bool ok = mine(be, x, QT_F32) && writable(x) && mine(be, pos, QT_I32) && pos->ne[0] == ntok &&
		  tern_host_nrows(pos) == 1 && (p->mode == TERN_ROPE_NORMAL || p->mode == TERN_ROPE_NEOX) &&
		  p->n_rot >= 2 && p->n_rot % 2 == 0 && p->n_rot <= x->ne[0] && p->freq_base > 0 &&
		  p->freq_scale > 0 && p->ext_factor >= 0 && p->ext_factor <= 1 && p->mscale >= 0 &&
		  isfinite(p->mscale) && isfinite(p->corr_low) && isfinite(p->corr_high) && p->attn_factor >= 0 &&
		  isfinite(p->attn_factor);
	if (ok && freq)
		ok = mine(be, freq, QT_F32) && freq->ne[0] == p->n_rot / 2 && tern_host_nrows(freq) == 1;
	return ok;
}

bool tern_host_rope_args(struct tern_backend *be, const struct tern_buf *x, const struct tern_buf *pos,
			const struct tern_buf *freq, const struct tern_rope *p)
{
	char s1[96];
	bool ok = rope_fits(be, x, pos, freq, p);
	if (!ok)
		tern_host_fail(be, "rope: operands do not fit x %s (n_rot %d, mode %d)", shape(s1, sizeof s1, x),
			      p->n_rot, p->mode);
	return ok && (!p->ggml || tern_host_ggml_ok(be, "rope"));
}

/* the bytes of a and b do not meet (views of one buffer may) */
static bool apart(const struct tern_buf *a, const struct tern_buf *b)
{
	if (a->mem != b->mem)
		return true;
	size_t a0 = a->offset, a1 = a0 + tern_buf_nbytes(a), b0 = b->offset, b1 = b0 + tern_buf_nbytes(b);
	return a1 <= b0 || b1 <= a0;
}

bool tern_host_norm_rope_args(struct tern_backend *be, const struct tern_buf *q, const struct tern_buf *k,
			     const struct tern_buf *qw, const struct tern_buf *kw, const struct tern_buf *pos,
			     const struct tern_buf *freq, const struct tern_norm *n, const struct tern_rope *p)
{
	char s1[96], s2[96];
	bool ok = rope_fits(be, q, pos, freq, p);
	/* k: the same heads' width and tokens, any number of heads; rotated
	 * in place after q, so no byte of it may be q's */
	if (ok && k)
		ok = rope_fits(be, k, pos, freq, p) && k->ne[0] == q->ne[0] && k->ne[2] == q->ne[2] &&
		     k->ne[3] == q->ne[3] && apart(q, k);
	if (ok && (qw || kw))
		ok = n && (n->kind == TERN_NORM_RMS || n->kind == TERN_NORM_LAYER) && n->eps >= 0;
	if (ok && qw)
		ok = mine(be, qw, QT_F32) && qw->ne[0] == q->ne[0] && tern_host_nrows(qw) == 1;
	if (ok && kw)
		ok = k && mine(be, kw, QT_F32) && kw->ne[0] == q->ne[0] && tern_host_nrows(kw) == 1;
	if (!ok)
		tern_host_fail(be, "norm_rope: operands do not fit q %s, k %s (n_rot %d, mode %d)", shape(s1, sizeof s1, q),
			      k ? shape(s2, sizeof s2, k) : "none", p->n_rot, p->mode);
	return ok && (!p->ggml || tern_host_ggml_ok(be, "norm_rope")) &&
	       (!(qw || kw) || !n->ggml || tern_host_ggml_ok(be, "norm_rope"));
}

/* seq: NULL, or i32 [ntok] of be */
static bool seq_ok(struct tern_backend *be, const struct tern_buf *seq, int64_t ntok)
{
	return !seq || (mine(be, seq, QT_I32) && seq->ne[0] == ntok && tern_host_nrows(seq) == 1);
}

bool tern_host_kv_store_args(struct tern_backend *be, const struct tern_buf *cache, const struct tern_buf *x,
			    const struct tern_buf *pos, const struct tern_buf *seq)
{
	char s1[96], s2[96];
	int64_t ntok = x->ne[2] * x->ne[3];
	bool ok = cache->be == be && cache->mem && contiguous(cache) && writable(cache) && seq_ok(be, seq, ntok) &&
		  (cache->type == QT_F32 || quant_can_quantize(cache->type)) && mine(be, x, QT_F32) &&
		  x->ne[0] == cache->ne[0] && x->ne[1] == cache->ne[1] && mine(be, pos, QT_I32) &&
		  pos->ne[0] == ntok && tern_host_nrows(pos) == 1;
	if (!ok)
		tern_host_fail(be, "kv_store: x %s does not fit cache %s", shape(s1, sizeof s1, x),
			      shape(s2, sizeof s2, cache));
	return ok;
}

bool tern_host_attention_args(struct tern_backend *be, const struct tern_buf *q, const struct tern_buf *k,
			     const struct tern_buf *v, const struct tern_buf *pos, const struct tern_buf *seq,
			     const struct tern_buf *y, const struct tern_attn *p)
{
	char s1[96], s2[96];
	int64_t hd = q->ne[0], hdv = v->ne[0], nh = q->ne[1], nkv = k->ne[1];
	bool ok = mine(be, q, QT_F32) && q->ne[3] == 1 && mine(be, y, QT_F32) && writable(y) && y->ne[0] == hdv &&
		  y->ne[1] == nh && y->ne[2] == q->ne[2] && y->ne[3] == 1 && hd <= TERN_ATTN_MAX_HEAD_DIM &&
		  hdv >= 1 && hdv <= TERN_ATTN_MAX_HEAD_DIM && k->be == be && k->mem && contiguous(k) &&
		  v->be == be && v->mem && rows_apart(v) && v->ne[3] == k->ne[3] && k->ne[0] == hd &&
		  seq_ok(be, seq, q->ne[2]) &&
		  v->ne[1] == nkv && v->ne[2] == k->ne[2] && nh % nkv == 0 &&
		  (k->type == QT_F32 || quant_can_quantize(k->type)) &&
		  (v->type == QT_F32 || quant_can_quantize(v->type)) && mine(be, pos, QT_I32) &&
		  pos->ne[0] == q->ne[2] && tern_host_nrows(pos) == 1 && p->window >= 0 && p->softcap >= 0;
	if (ok && p->sinks)
		ok = mine(be, p->sinks, QT_F32) && p->sinks->ne[0] == nh && tern_host_nrows(p->sinks) == 1;
	if (!ok)
		tern_host_fail(be, "attention: q %s does not fit cache %s", shape(s1, sizeof s1, q),
			      shape(s2, sizeof s2, k));
	return ok && ((p->f16_split <= 0 && !p->ggml) || tern_host_ggml_ok(be, "attention"));
}

bool tern_host_heads_args(struct tern_backend *be, const struct tern_buf *w, const struct tern_buf *x,
			 const struct tern_buf *y)
{
	char s1[96], s2[96];
	int64_t cols = w->ne[0], rows = w->ne[1], nh = w->ne[2];
	bool ok = w->be == be && w->mem && rows_apart(w) && w->ne[3] == 1 && quant_is_weight_type(w->type) &&
		  cols % quant_type_info(w->type)->blck == 0 &&
		  cols % quant_type_info(quant_vec_dot_type(w->type))->blck == 0 &&
		  mine(be, x, QT_F32) && mine(be, y, QT_F32) && writable(y) && x->ne[0] == cols && x->ne[1] == nh &&
		  y->ne[0] == rows && y->ne[1] == nh && x->ne[2] == y->ne[2] && x->ne[3] == 1 && y->ne[3] == 1 &&
		  x->ne[2] >= 1 && x->ne[2] <= be->max_tokens;
	if (!ok)
		tern_host_fail(be, "mat_mul_heads: weight %s and x %s do not fit", shape(s1, sizeof s1, w),
			      shape(s2, sizeof s2, x));
	return ok;
}

bool tern_host_eltwise_args(struct tern_backend *be, const char *op, const struct tern_buf *a,
			   const struct tern_buf *b, const struct tern_buf *y, bool b_row)
{
	char s1[96], s2[96];
	bool ok = mine(be, a, QT_F32) && mine(be, y, QT_F32) && writable(y) && same_shape(a, y);
	if (ok && b)
		ok = mine(be, b, QT_F32) && b->ne[0] == a->ne[0] &&
		     (tern_host_nrows(b) == tern_host_nrows(a) || (b_row && tern_host_nrows(b) == 1));
	if (!ok)
		tern_host_fail(be, "%s: operands do not fit (%s, y %s)", op, shape(s1, sizeof s1, a),
			      shape(s2, sizeof s2, y));
	return ok;
}

bool tern_host_argmax_args(struct tern_backend *be, const struct tern_buf *x, const struct tern_buf *ids)
{
	char s1[96], s2[96];
	bool ok = mine(be, x, QT_F32) && contiguous(x) && mine(be, ids, QT_I32) && writable(ids) &&
		  tern_host_nrows(ids) == 1 && ids->ne[0] == tern_host_nrows(x) && x->ne[0] <= INT32_MAX;
	if (!ok)
		tern_host_fail(be, "argmax: operands do not fit (x %s, ids %s)", shape(s1, sizeof s1, x),
			      shape(s2, sizeof s2, ids));
	return ok;
}

void tern_host_argmax_rows(const float *x, int64_t n, int64_t rows, int32_t *ids)
{
	for (int64_t r = 0; r < rows; r++) {
		const float *v = x + r * n;
		int32_t best = -1;
		float bl = -INFINITY;
		/* +inf counts as FLT_MAX (the sampler's sanitised logits): the
		 * first of several wins; NaN and -inf compare below */
		for (int64_t i = 0; i < n; i++) {
			float f = v[i] > FLT_MAX ? FLT_MAX : v[i];
			if (f > bl) {
				best = (int32_t)i;
				bl = f;
			}
		}
		ids[r] = best;
	}
}

bool tern_host_unary_args(struct tern_backend *be, const struct tern_buf *x, const struct tern_buf *y, int kind)
{
	if (kind < TERN_UNARY_GELU || kind > TERN_UNARY_SIGMOID) {
		tern_host_fail(be, "unary: unknown kind %d", kind);
		return false;
	}
	return tern_host_eltwise_args(be, "unary", x, NULL, y, false) &&
	       (kind != TERN_UNARY_GELU_F16 || tern_host_ggml_ok(be, "unary"));
}

bool tern_host_copy_args(struct tern_backend *be, const struct tern_buf *src, const struct tern_buf *dst)
{
	char s1[96], s2[96];
	bool ok = src->be == be && src->mem && rows_apart(src) && dst->be == be && dst->mem && rows_apart(dst) &&
		  writable(dst) && same_shape(src, dst) &&
		  (src->type == dst->type || (src->type == QT_F32 && quant_can_quantize(dst->type)) ||
		   dst->type == QT_F32);
	if (!ok)
		tern_host_fail(be, "copy: %s does not fit %s", shape(s1, sizeof s1, src), shape(s2, sizeof s2, dst));
	return ok;
}

bool tern_host_im2col_args(struct tern_backend *be, const struct tern_buf *x, const struct tern_buf *y,
			  const struct tern_conv *p)
{
	char s1[96], s2[96];
	if (p->k < 1 || p->k > 64 || p->stride < 1 || p->stride > 64 || p->pad < 0 || p->pad >= p->k) {
		tern_host_fail(be, "im2col: kernel %d, stride %d, padding %d", p->k, p->stride, p->pad);
		return false;
	}
	bool ok = x->be == be && x->mem && contiguous(x) && x->type == QT_F32 && y->be == be && y->mem &&
		  contiguous(y) && writable(y) && y->type == QT_F32 && x->ne[2] == 1 && x->ne[3] == 1 &&
		  y->ne[2] == 1 && y->ne[3] == 1 && x->ne[1] + 2 * p->pad >= p->k &&
		  y->ne[0] == x->ne[0] * p->k && y->ne[1] == (x->ne[1] + 2 * p->pad - p->k) / p->stride + 1;
	if (!ok)
		tern_host_fail(be, "im2col: %s does not fit %s (kernel %d, stride %d, padding %d)",
			      shape(s1, sizeof s1, x), shape(s2, sizeof s2, y), p->k, p->stride, p->pad);
	return ok;
}

bool tern_host_pos_ok(struct tern_backend *be, const char *op, int32_t p, int64_t n)
{
	if (p < 0 || p >= n) {
		tern_host_fail(be, "%s: position or id %d outside 0..%lld", op, (int)p, (long long)n - 1);
		return false;
	}
	return true;
}

/* ---- mixture of experts ---- */

bool tern_host_mat_mul_id_args(struct tern_backend *be, const struct tern_buf *w, const struct tern_buf *x,
			      const struct tern_buf *ids, const struct tern_buf *b, const struct tern_buf *y)
{
	char s1[96], s2[96], s3[96];
	if (w->be != be || !w->prep) {
		tern_host_fail(be, "mat_mul_id: weight not prepared by this backend");
		return false;
	}
	int64_t k = ids->ne[0], ntok = ids->ne[1];
	bool ok = mine(be, x, QT_F32) && mine(be, ids, QT_I32) && mine(be, y, QT_F32) && writable(y) &&
		  ids->ne[2] == 1 && ids->ne[3] == 1 && k >= 1 && k <= TERN_MOE_MAX_USED && ntok >= 1 &&
		  ntok <= be->max_tokens && x->ne[0] == w->ne[0] && (x->ne[1] == 1 || x->ne[1] == k) &&
		  x->ne[2] == ntok && x->ne[3] == 1 && y->ne[0] == w->ne[1] && y->ne[1] == k && y->ne[2] == ntok &&
		  y->ne[3] == 1;
	if (ok && b)
		ok = mine(be, b, QT_F32) && b->ne[0] == w->ne[1] && b->ne[1] == w->ne[2] && b->ne[2] == 1 &&
		     b->ne[3] == 1;
	if (!ok)
		tern_host_fail(be, "mat_mul_id: x %s, ids %s, y %s do not fit the experts %lld x %lld x %lld",
			      shape(s1, sizeof s1, x), shape(s2, sizeof s2, ids), shape(s3, sizeof s3, y),
			      (long long)w->ne[2], (long long)w->ne[1], (long long)w->ne[0]);
	return ok;
}

bool tern_host_moe_route_args(struct tern_backend *be, const struct tern_buf *logits, const struct tern_buf *bias,
			     const struct tern_buf *ids, const struct tern_buf *weights, const struct tern_moe_route *p)
{
	char s1[96], s2[96];
	int64_t ne = logits->ne[0], ntok = tern_host_nrows(logits);
	int ng = p->n_group > 1 ? p->n_group : 1;
	bool ok = mine(be, logits, QT_F32) && mine(be, ids, QT_I32) && mine(be, weights, QT_F32) && writable(ids) &&
		  writable(weights) && p->k >= 1 && p->k <= TERN_MOE_MAX_USED && p->k <= ne &&
		  (p->gating == TERN_MOE_SOFTMAX || p->gating == TERN_MOE_SIGMOID ||
		   p->gating == TERN_MOE_SOFTMAX_TOPK) &&
		  ids->ne[0] == p->k && tern_host_nrows(ids) == ntok && weights->ne[0] == p->k &&
		  tern_host_nrows(weights) == ntok && ne % ng == 0 &&
		  (ng == 1 || (p->n_group_used >= 1 && p->n_group_used <= ng && p->k <= ne / ng * p->n_group_used));
	if (ok && bias)
		ok = mine(be, bias, QT_F32) && bias->ne[0] == ne && tern_host_nrows(bias) == 1;
	if (!ok)
		tern_host_fail(be, "moe_route: logits %s, ids %s do not fit (k %d, gating %d, groups %d/%d)",
			      shape(s1, sizeof s1, logits), shape(s2, sizeof s2, ids), p->k, p->gating, p->n_group_used,
			      p->n_group);
	return ok;
}

bool tern_host_moe_combine_args(struct tern_backend *be, const struct tern_buf *x, const struct tern_buf *w,
			       const struct tern_buf *y)
{
	char s1[96], s2[96];
	int64_t n = x->ne[0], k = x->ne[1], ntok = x->ne[2];
	bool ok = mine(be, x, QT_F32) && mine(be, w, QT_F32) && mine(be, y, QT_F32) && writable(y) && x->ne[3] == 1 &&
		  w->ne[0] == k && tern_host_nrows(w) == ntok && y->ne[0] == n && tern_host_nrows(y) == ntok &&
		  apart(x, y);
	if (!ok)
		tern_host_fail(be, "moe_combine: x %s, y %s do not fit", shape(s1, sizeof s1, x), shape(s2, sizeof s2, y));
	return ok;
}
