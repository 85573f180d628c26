/* backend_host.h - what every backend shares on the host side: the error
 * a per-step op records for the next sync() (struct tern_host, first in a
 * backend's impl), the operand checks of every op, buffer shapes; and for
 * the CPU backends, buffers in host memory (weights as views of the model
 * file's mapping) and transfers as memcpy. */
#ifndef TERN_BACKEND_HOST_H
#define TERN_BACKEND_HOST_H

#include <stdbool.h>

#include "lib/backend.h"

/* State every backend starts with (its impl points here first). */
struct tern_host {
	tern_err pending;     /* first contract violation since the last sync */
	_Atomic int claimed;  /* set by the one that writes pending: ops check
			       * values of device buffers (ids, positions) on
			       * the pool's threads, which may fail together */
};

/* Fill the table's name, caps, batch bound and the host entries (buffers,
 * transfers, steps, sync); the caller sets the products, buf_free and
 * free. */
void tern_host_table(struct tern_backend *be, const char *name, unsigned caps, int64_t max_tokens, void *impl);

/* Type, shape and byte strides of a contiguous buffer (any backend's
 * buf_alloc): TERN_EINVAL for an invalid type, shape or size. */
int tern_host_set_shape(struct tern_buf *b, uint32_t type, int n_dims, const int64_t *ne, tern_err *err);

/* A weight's type, shape and strides from its tensor view into nb, and
 * its data's size checked against them (every backend's buf_weight; the
 * caller names the tensor in the error). */
int tern_host_view_shape(const struct tern_tensor_view *t, struct tern_buf *nb, tern_err *err);

int tern_host_buf_alloc(struct tern_backend *be, struct tern_buf *b, uint32_t type, int n_dims, const int64_t *ne,
		       tern_err *err);
int tern_host_buf_weight(struct tern_backend *be, struct tern_buf *b, const struct tern_tensor_view *t,
			tern_err *err);
/* Frees the storage; the caller frees b->prep first. */
void tern_host_buf_release(struct tern_buf *b);
/* host memory: 64-byte aligned malloc (the CPU has nothing to pin) */
int tern_host_host_alloc(struct tern_backend *be, size_t size, void **ptr, tern_err *err);
void tern_host_host_free(struct tern_backend *be, void *ptr);
/* A transfer's range: n bytes at offset within b, a buffer of be; else the
 * violation is recorded (op names the transfer). */
bool tern_host_range_ok(struct tern_backend *be, const char *op, const struct tern_buf *b, size_t offset, size_t n);
void tern_host_upload(struct tern_backend *be, struct tern_buf *dst, size_t offset, const void *src, size_t n);
void tern_host_download(struct tern_backend *be, const struct tern_buf *src, size_t offset, void *dst, size_t n);
void tern_host_step(struct tern_backend *be);
int tern_host_sync(struct tern_backend *be, tern_err *err);

/* Record a contract violation for the next sync (the first one wins). */
void tern_host_fail(struct tern_backend *be, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Check the operands of a product: w a prepared 2-D weight of this
 * backend, x f32 [ntok][cols] and y f32 [ntok][rows] contiguous, ntok in
 * 1..max_tokens. Records the violation and returns false when they do
 * not fit. */
bool tern_host_mm_args(struct tern_backend *be, const char *op, const struct tern_buf *w, const struct tern_buf *x,
		      const struct tern_buf *y);
/* product's operands: n_w in 1..TERN_MAT_VEC_N, each weight as above */
bool tern_host_product_args(struct tern_backend *be, int n_w, const struct tern_buf *const *w,
			   const struct tern_buf *x, struct tern_buf *const *y);
/* A ggml rounding request (lib/backend.h, TERN_BACKEND_GGML_NUMERICS): true
 * where be has the capability, else the violation is recorded. */
bool tern_host_ggml_ok(struct tern_backend *be, const char *op);

/* Check a weight for mat_prepare: a 2-D or 3-D buffer of this backend. */
int tern_host_weight_shape(struct tern_backend *be, const struct tern_buf *w, tern_err *err);

/* ---- operands of the other ops (lib/backend.h): each records the
 * violation and returns false when they do not fit ---- */

/* Rows of b: the product of its dimensions above ne[0]. */
int64_t tern_host_nrows(const struct tern_buf *b);

bool tern_host_get_rows_args(struct tern_backend *be, const struct tern_buf *w, const struct tern_buf *ids,
			    const struct tern_buf *y);
bool tern_host_norm_args(struct tern_backend *be, const struct tern_buf *x, const struct tern_buf *r,
			const struct tern_buf *w, const struct tern_buf *b, const struct tern_buf *y,
			const struct tern_norm *p);
bool tern_host_rope_args(struct tern_backend *be, const struct tern_buf *x, const struct tern_buf *pos,
			const struct tern_buf *freq, const struct tern_rope *p);
/* norm_rope's: q, k (or NULL) rope's x each, of one head_dim and token
 * count, apart; their weights f32 [head_dim] or NULL; n given where a
 * weight is */
bool tern_host_norm_rope_args(struct tern_backend *be, const struct tern_buf *q, const struct tern_buf *k,
			     const struct tern_buf *qw, const struct tern_buf *kw, const struct tern_buf *pos,
			     const struct tern_buf *freq, const struct tern_norm *n, const struct tern_rope *p);
/* kv_store, attention: seq NULL or i32 [ntok]; its values are checked as
 * the ops read them (tern_host_pos_ok against the caches' ne[3]) */
bool tern_host_kv_store_args(struct tern_backend *be, const struct tern_buf *cache, const struct tern_buf *x,
			    const struct tern_buf *pos, const struct tern_buf *seq);
bool tern_host_attention_args(struct tern_backend *be, const struct tern_buf *q, const struct tern_buf *k,
			     const struct tern_buf *v, const struct tern_buf *pos, const struct tern_buf *seq,
			     const struct tern_buf *y, const struct tern_attn *p);
/* mat_mul_heads: w a 3-D weight of this backend, x, y f32 (lib/backend.h) */
bool tern_host_heads_args(struct tern_backend *be, const struct tern_buf *w, const struct tern_buf *x,
			 const struct tern_buf *y);
/* glu (b: up), add (b: the same shape or one row), unary, scale,
 * softmax (b NULL): f32 operands of y's shape. */
bool tern_host_eltwise_args(struct tern_backend *be, const char *op, const struct tern_buf *a,
			   const struct tern_buf *b, const struct tern_buf *y, bool b_row);
/* argmax: x f32 {n, rows} contiguous, ids i32 [rows] */
bool tern_host_argmax_args(struct tern_backend *be, const struct tern_buf *x, const struct tern_buf *ids);
/* argmax of each row on the host (the CPU backends): lib/backend.h's rule */
void tern_host_argmax_rows(const float *x, int64_t n, int64_t rows, int32_t *ids);
/* unary: a TERN_UNARY_* kind (GELU_F16 a ggml request), x and y as eltwise */
bool tern_host_unary_args(struct tern_backend *be, const struct tern_buf *x, const struct tern_buf *y, int kind);
/* im2col: x, y f32 2-D of the shapes lib/backend.h gives; *n_out set */
bool tern_host_im2col_args(struct tern_backend *be, const struct tern_buf *x, const struct tern_buf *y,
			  const struct tern_conv *p);
bool tern_host_copy_args(struct tern_backend *be, const struct tern_buf *src, const struct tern_buf *dst);

/* mat_mul_id, moe_route, moe_combine: the shapes lib/backend.h gives */
bool tern_host_mat_mul_id_args(struct tern_backend *be, const struct tern_buf *w, const struct tern_buf *x,
			      const struct tern_buf *ids, const struct tern_buf *b, const struct tern_buf *y);
bool tern_host_moe_route_args(struct tern_backend *be, const struct tern_buf *logits, const struct tern_buf *bias,
			     const struct tern_buf *ids, const struct tern_buf *weights, const struct tern_moe_route *p);
bool tern_host_moe_combine_args(struct tern_backend *be, const struct tern_buf *x, const struct tern_buf *w,
			       const struct tern_buf *y);

/* A position read from a device buffer at run time: in 0..n-1, else the
 * violation is recorded and false returned. */
bool tern_host_pos_ok(struct tern_backend *be, const char *op, int32_t p, int64_t n);

#endif
