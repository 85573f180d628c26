/* cpu_backend.c - the optimized CPU backend: the operation table over the
 * thread pool and the threaded products of lib/cpu/matmul.h. A weight's
 * prepared form is its struct cpu_mm; one scratch, grown by mat_prepare to
 * the largest any weight needs at max_tokens, serves every product, so
 * that a step allocates nothing. Ops run before they return. */
#include <stdlib.h>

#include "lib/cpu/backend.h"
#include "lib/cpu/host.h"
#include "lib/cpu/threadpool.h"

struct cpu {
	struct cpu_host host; /* first: the shared host state */
	struct tern_backend be;
	struct tp_pool *pool;
	enum cpu_mm_repack repack;
	void *scratch;        /* scratch_size bytes, 64-byte aligned */
	size_t scratch_size;
};

static int cpu_mat_prepare(struct tern_backend *be, struct tern_buf *w, tern_err *err)
{
	struct cpu *c = be->impl;
	int rc = cpu_host_weight_shape(be, w, err);
	if (rc)
		return rc;
	struct cpu_mm *mm = calloc(1, sizeof *mm);
	if (!mm)
		return tern_errf(err, TERN_ENOMEM, "%s: out of memory", be->name);
	struct cpu_mm_opts o = {.max_tokens = be->max_tokens, .repack = c->repack};
	rc = cpu_mm_prepare(mm, c->pool, w->type, tern_buf_host(w), w->nb[1], w->ne[1], w->ne[0], &o, err);
	if (!rc && mm->scratch_size > c->scratch_size) {
		void *s = aligned_alloc(64, (mm->scratch_size + 63) & ~(size_t)63);
		if (s) {
			free(c->scratch);
			c->scratch = s;
			c->scratch_size = mm->scratch_size;
		} else {
			rc = tern_errf(err, TERN_ENOMEM, "%s: out of memory for %zu bytes of scratch", be->name,
				       mm->scratch_size);
		}
	}
	if (rc) {
		cpu_mm_release(mm);
		free(mm);
		return rc;
	}
	if (w->prep) { /* a second prepare replaces the first */
		cpu_mm_release(w->prep);
		free(w->prep);
	}
	w->prep = mm;
	return 0;
}

static void cpu_mat_vec(struct tern_backend *be, const struct tern_buf *w, const struct tern_buf *x,
			struct tern_buf *y)
{
	struct cpu *c = be->impl;
	if (cpu_host_mm_args(be, "mat_vec", w, x, y, true))
		cpu_mm_run(w->prep, c->pool, tern_buf_host(x), 1, tern_buf_host(y), c->scratch);
}

static void cpu_mat_mul(struct tern_backend *be, const struct tern_buf *w, const struct tern_buf *x,
			struct tern_buf *y)
{
	struct cpu *c = be->impl;
	if (cpu_host_mm_args(be, "mat_mul", w, x, y, false))
		cpu_mm_run(w->prep, c->pool, tern_buf_host(x), x->ne[1], tern_buf_host(y), c->scratch);
}

static void cpu_buf_free(struct tern_backend *be, struct tern_buf *b)
{
	(void)be;
	if (b->prep) {
		cpu_mm_release(b->prep);
		free(b->prep);
	}
	cpu_host_buf_release(b);
}

static void cpu_free(struct tern_backend *be)
{
	struct cpu *c = be->impl;
	tp_free(c->pool);
	free(c->scratch);
	free(c);
}

int cpu_backend_new(struct tern_backend **out, const struct cpu_backend_opts *opts, tern_err *err)
{
	*out = NULL;
	struct cpu_backend_opts o = opts ? *opts : (struct cpu_backend_opts){.n_threads = 1, .max_tokens = 1};
	if (o.max_tokens < 1 || o.max_tokens > CPU_MM_MAX_TOKENS)
		return tern_errf(err, TERN_EINVAL, "cpu: batch bound %lld out of range 1..%d", (long long)o.max_tokens,
				 CPU_MM_MAX_TOKENS);
	if (o.repack < CPU_MM_REPACK_NONE || o.repack > CPU_MM_REPACK_ALL)
		return tern_errf(err, TERN_EINVAL, "cpu: unknown repack mode %d", (int)o.repack);
	struct cpu *c = calloc(1, sizeof *c);
	if (!c)
		return tern_errf(err, TERN_ENOMEM, "cpu: out of memory");
	int rc = tp_new(&c->pool, o.n_threads, err);
	if (rc) {
		free(c);
		return rc;
	}
	c->repack = o.repack;
	cpu_host_table(&c->be, "cpu", 0, o.max_tokens, c);
	c->be.free = cpu_free;
	c->be.buf_free = cpu_buf_free;
	c->be.mat_prepare = cpu_mat_prepare;
	c->be.mat_vec = cpu_mat_vec;
	c->be.mat_mul = cpu_mat_mul;
	*out = &c->be;
	return 0;
}
