/* threadpool.h - persistent worker threads for the CPU backend.
 *
 * A pool owns n-1 workers; the calling thread is thread 0 of every job.
 * Workers and the barrier spin briefly, then sleep on a futex, so that the
 * many small jobs of a decode step cost microseconds while an idle pool
 * costs nothing; jobs whose work is handed out from a shared counter
 * (tp_run_any) do not wait for a worker that has not started. The products
 * that run on it are in lib/cpu/matmul.h. */
#ifndef TERN_THREADPOOL_H
#define TERN_THREADPOOL_H

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

/* Run fn on the caller (ith 0) and on each worker that starts before the
 * caller's call has returned; return when the caller's call and every
 * worker's that started have returned. fn must take its work from shared
 * counters (any call may do any part, or find none left) and must not
 * call tp_barrier: a worker whose core is busy elsewhere is not waited
 * for. Not reentrant. */
void tp_run_any(struct tp_pool *p, tp_fn fn, void *arg);

/* Inside a job of tp_run: wait until every thread of the job has arrived. */
void tp_barrier(struct tp_pool *p);

#endif
