/* threadpool.h - persistent worker threads and the threaded matrix products
 * over quantized weights.
 *
 * A pool owns n-1 workers; the calling thread is thread 0 of every job.
 * Workers and the barrier spin briefly, then sleep on a futex, so that the
 * many small jobs of a decode step cost microseconds while an idle pool
 * costs nothing.
 *
 * tp_matmul() multiplies a weight matrix in its GGUF block layout by a batch
 * of f32 activation rows: the activations are quantized once per call to
 * the type the weights pair with (quant_vec_dot_type) into caller-provided
 * scratch, then the threads share the output rows. Nothing is allocated
 * per call. */
#ifndef TERN_THREADPOOL_H
#define TERN_THREADPOOL_H

#include <stddef.h>
#include <stdint.h>

#include "lib/core/error.h"

struct tp_pool;

/* Job body: ith in 0..nth-1. May call tp_barrier(). */
typedef void (*tp_fn)(void *arg, int ith, int nth);

/* Start a pool of n_threads (1..256) threads, counting the caller. */
int tp_new(struct tp_pool **out, int n_threads, tern_err *err);
void tp_free(struct tp_pool *p);
int tp_threads(const struct tp_pool *p);

/* Run fn on every thread of the pool and return when all have finished.
 * Not reentrant: one job at a time per pool. */
void tp_run(struct tp_pool *p, tp_fn fn, void *arg);

/* Inside a job: wait until every thread of the job has arrived. */
void tp_barrier(struct tp_pool *p);

/* Bytes of scratch tp_matmul() on pool p needs for ntok rows of cols
 * activations multiplied by weights of type wtype (0 if none). It covers
 * the packed activations and a panel per thread where the batch goes
 * through the GEMM kernels (quant/gemm.h). */
size_t tp_matmul_scratch_size(const struct tp_pool *p, uint32_t wtype, int64_t cols, int64_t ntok);

/* y[t][r] = dot(w row r, x row t) for r < rows, t < ntok.
 *   w: [rows][cols] of type wtype, rows wstride bytes apart
 *   x: [ntok][cols] f32
 *   y: [ntok][rows] f32
 * cols must be a multiple of the block of wtype and of its paired type.
 * Returns 0, TERN_EINVAL (bad shape, or scratch too small) or
 * TERN_EUNSUPPORTED (a type without a dot). */
int tp_matmul(struct tp_pool *p, uint32_t wtype, const void *w, size_t wstride, int64_t rows,
	      int64_t cols, const float *x, int64_t ntok, float *y, void *scratch, size_t scratch_size,
	      tern_err *err);

/* tp_matmul with one activation row (decode). */
int tp_matvec(struct tp_pool *p, uint32_t wtype, const void *w, size_t wstride, int64_t rows,
	      int64_t cols, const float *x, float *y, void *scratch, size_t scratch_size, tern_err *err);

#endif
