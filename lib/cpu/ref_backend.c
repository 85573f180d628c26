/* ref_backend.c - the reference CPU backend: the oracle every other
 * backend is compared with (tests/test_backend_ops.c). One thread and
 * plain loops over quant/'s scalar reference code: activations are
 * quantized with the reference quantizer to the type the weights pair with,
 * each output is quant_dot_ref() of a weight row with that. Nothing here is
 * fast, and nothing should be: it is written to be read and trusted. */
#include <stdlib.h>
#include <string.h>

#include "lib/cpu/backend.h"
#include "lib/cpu/host.h"
#include "quant/quant.h"

struct ref {
	struct cpu_host host; /* first: the shared host state */
	struct tern_backend be;
	uint8_t *act;         /* one quantized activation row, act_size bytes */
	size_t act_size;
};

static const char ref_prepared;

/* the prepared form: nothing to convert, the check is what matters */
static int ref_mat_prepare(struct tern_backend *be, struct tern_buf *w, tern_err *err)
{
	struct ref *r = be->impl;
	int rc = cpu_host_weight_shape(be, w, err);
	if (rc)
		return rc;
	/* the same rule as the optimized backend: every type quant/ can dot */
	if (!cpu_mm_type_ok(w->type))
		return tern_errf(err, TERN_EUNSUPPORTED, "%s: no product for weights of type %s", be->name,
				 quant_type_name(w->type));
	uint32_t at = quant_vec_dot_type(w->type);
	bool ok = true;
	size_t need = quant_row_size(at, (uint64_t)w->ne[0], &ok);
	if (!ok)
		return tern_errf(err, TERN_EINVAL, "%s: rows of %lld do not fit blocks of %s", be->name,
				 (long long)w->ne[0], quant_type_name(at));
	if (need > r->act_size) {
		uint8_t *a = realloc(r->act, need);
		if (!a)
			return tern_errf(err, TERN_ENOMEM, "%s: out of memory", be->name);
		r->act = a;
		r->act_size = need;
	}
	w->prep = (void *)&ref_prepared; /* nothing to own: a mark */
	return 0;
}

static void ref_products(struct tern_backend *be, const struct tern_buf *w, const struct tern_buf *x,
			 struct tern_buf *y)
{
	struct ref *r = be->impl;
	const uint8_t *wd = tern_buf_host(w);
	const float *xd = tern_buf_host(x);
	float *yd = tern_buf_host(y);
	int64_t rows = w->ne[1], cols = w->ne[0];
	uint32_t at = quant_vec_dot_type(w->type);
	for (int64_t t = 0; t < x->ne[1]; t++) {
		const float *xt = xd + t * cols;
		const void *a = xt;
		if (at != QT_F32) {
			quant_quantize_row(at, xt, r->act, (uint64_t)cols);
			a = r->act;
		}
		for (int64_t i = 0; i < rows; i++)
			yd[t * rows + i] = quant_dot_ref(w->type, cols, wd + (size_t)i * w->nb[1], a);
	}
}

static void ref_mat_vec(struct tern_backend *be, const struct tern_buf *w, const struct tern_buf *x,
			struct tern_buf *y)
{
	if (cpu_host_mm_args(be, "mat_vec", w, x, y, true))
		ref_products(be, w, x, y);
}

static void ref_mat_mul(struct tern_backend *be, const struct tern_buf *w, const struct tern_buf *x,
			struct tern_buf *y)
{
	if (cpu_host_mm_args(be, "mat_mul", w, x, y, false))
		ref_products(be, w, x, y);
}

static void ref_buf_free(struct tern_backend *be, struct tern_buf *b)
{
	(void)be;
	cpu_host_buf_release(b);
}

static void ref_free(struct tern_backend *be)
{
	struct ref *r = be->impl;
	free(r->act);
	free(r);
}

int cpu_ref_backend_new(struct tern_backend **out, const struct cpu_backend_opts *opts, tern_err *err)
{
	*out = NULL;
	int64_t max_tokens = opts ? opts->max_tokens : 1;
	if (max_tokens < 1 || max_tokens > CPU_MM_MAX_TOKENS)
		return tern_errf(err, TERN_EINVAL, "cpu-ref: batch bound %lld out of range 1..%d", (long long)max_tokens,
				 CPU_MM_MAX_TOKENS);
	struct ref *r = calloc(1, sizeof *r);
	if (!r)
		return tern_errf(err, TERN_ENOMEM, "cpu-ref: out of memory");
	cpu_host_table(&r->be, "cpu-ref", TERN_BACKEND_REFERENCE, max_tokens, r);
	r->be.free = ref_free;
	r->be.buf_free = ref_buf_free;
	r->be.mat_prepare = ref_mat_prepare;
	r->be.mat_vec = ref_mat_vec;
	r->be.mat_mul = ref_mat_mul;
	*out = &r->be;
	return 0;
}
