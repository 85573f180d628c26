/* threadpool.c - persistent workers, a spin-then-sleep barrier, and the
 * threaded mat-vec / mat-mat over quantized weights.
 *
 * Waiting is done in two steps: a short spin on the shared word (a decode
 * step issues hundreds of jobs, each a few microseconds long, and a futex
 * round-trip would cost as much as the job), then FUTEX_WAIT so that an idle
 * pool uses no CPU. A waker issues FUTEX_WAKE only when someone sleeps. */
#include "lib/cpu/threadpool.h"

#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "quant/gemm.h"
#include "quant/quant.h"

/* A pause costs ~50 ns on current x86 cores: workers spin ~50 us for the
 * next job (a decode step issues jobs back to back), the caller spins
 * ~12 us for the last worker before sleeping, so that a worker that was
 * preempted on an oversubscribed machine gets the core back quickly. */
#define SPIN_ITERS 1024
#define SPIN_DONE 256
#define MV_RANGES 64

struct tp_pool {
	int n;
	pthread_t *threads; /* [n - 1] */
	tp_fn fn;
	void *arg;
	_Atomic uint32_t gen;       /* bumped to start a job (futex word) */
	_Atomic uint32_t done;      /* bumped when the last worker finishes (futex word) */
	_Atomic int pending;        /* workers still in the current job */
	_Atomic int sleepers;       /* threads in FUTEX_WAIT on gen or bar_phase */
	_Atomic int main_sleeping;  /* caller in FUTEX_WAIT on done */
	_Atomic int stop;
	_Atomic int bar_count;
	_Atomic uint32_t bar_phase; /* futex word */
};

struct worker_arg {
	struct tp_pool *p;
	int ith;
};

static void futex_wait(_Atomic uint32_t *addr, uint32_t val)
{
	syscall(SYS_futex, (uint32_t *)addr, FUTEX_WAIT_PRIVATE, val, NULL, NULL, 0);
}

static void futex_wake(_Atomic uint32_t *addr)
{
	syscall(SYS_futex, (uint32_t *)addr, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
}

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ volatile("yield");
#endif
}

/* Wait until *addr != val: spin, then sleep. */
static void wait_change(struct tp_pool *p, _Atomic uint32_t *addr, uint32_t val, _Atomic int *sleep_count)
{
	for (int i = 0; i < SPIN_ITERS; i++) {
		if (atomic_load_explicit(addr, memory_order_acquire) != val)
			return;
		cpu_relax();
	}
	(void)p;
	while (atomic_load(addr) == val) {
		atomic_fetch_add(sleep_count, 1);
		futex_wait(addr, val);
		atomic_fetch_sub(sleep_count, 1);
	}
}

static void *worker_main(void *varg)
{
	struct worker_arg *wa = varg;
	struct tp_pool *p = wa->p;
	int ith = wa->ith;
	free(wa);
	uint32_t seen = 0;
	for (;;) {
		wait_change(p, &p->gen, seen, &p->sleepers);
		seen = atomic_load_explicit(&p->gen, memory_order_acquire);
		if (atomic_load(&p->stop))
			break;
		p->fn(p->arg, ith, p->n);
		if (atomic_fetch_sub_explicit(&p->pending, 1, memory_order_acq_rel) == 1) {
			atomic_fetch_add(&p->done, 1);
			if (atomic_load(&p->main_sleeping))
				futex_wake(&p->done);
		}
	}
	return NULL;
}

int tp_new(struct tp_pool **out, int n_threads, tern_err *err)
{
	*out = NULL;
	if (n_threads < 1 || n_threads > 256)
		return tern_errf(err, TERN_EINVAL, "thread count %d out of range 1..256", n_threads);
	struct tp_pool *p = calloc(1, sizeof *p);
	if (!p)
		return tern_errf(err, TERN_ENOMEM, "thread pool: out of memory");
	p->n = n_threads;
	if (n_threads > 1) {
		p->threads = calloc((size_t)n_threads - 1, sizeof *p->threads);
		if (!p->threads) {
			free(p);
			return tern_errf(err, TERN_ENOMEM, "thread pool: out of memory");
		}
	}
	for (int i = 1; i < n_threads; i++) {
		struct worker_arg *wa = malloc(sizeof *wa);
		if (wa) {
			wa->p = p;
			wa->ith = i;
		}
		int rc = wa ? pthread_create(&p->threads[i - 1], NULL, worker_main, wa) : -1;
		if (rc != 0) {
			free(wa);
			p->n = i; /* stop the ones that started */
			tp_free(p);
			return tern_errf(err, TERN_ENOMEM, "thread pool: cannot start thread %d", i);
		}
	}
	*out = p;
	return 0;
}

void tp_free(struct tp_pool *p)
{
	if (!p)
		return;
	if (p->n > 1) {
		atomic_store(&p->stop, 1);
		atomic_fetch_add(&p->gen, 1);
		futex_wake(&p->gen);
		for (int i = 0; i < p->n - 1; i++)
			pthread_join(p->threads[i], NULL);
	}
	free(p->threads);
	free(p);
}

int tp_threads(const struct tp_pool *p) { return p->n; }

void tp_run(struct tp_pool *p, tp_fn fn, void *arg)
{
	if (p->n == 1) {
		fn(arg, 0, 1);
		return;
	}
	p->fn = fn;
	p->arg = arg;
	atomic_store(&p->bar_count, 0);
	atomic_store(&p->pending, p->n - 1);
	atomic_fetch_add(&p->gen, 1);
	if (atomic_load(&p->sleepers))
		futex_wake(&p->gen);
	fn(arg, 0, p->n);
	for (int i = 0; i < SPIN_DONE; i++) {
		if (atomic_load_explicit(&p->pending, memory_order_acquire) == 0)
			return;
		cpu_relax();
	}
	/* Sleep on `done`, but decide on `pending`: a worker of the previous
	 * job may bump `done` late. */
	while (atomic_load(&p->pending) != 0) {
		atomic_store(&p->main_sleeping, 1);
		uint32_t d = atomic_load(&p->done);
		if (atomic_load(&p->pending) != 0)
			futex_wait(&p->done, d);
		atomic_store(&p->main_sleeping, 0);
	}
}

void tp_barrier(struct tp_pool *p)
{
	if (p->n == 1)
		return;
	uint32_t phase = atomic_load_explicit(&p->bar_phase, memory_order_acquire);
	if (atomic_fetch_add_explicit(&p->bar_count, 1, memory_order_acq_rel) == p->n - 1) {
		atomic_store_explicit(&p->bar_count, 0, memory_order_relaxed);
		atomic_fetch_add_explicit(&p->bar_phase, 1, memory_order_release);
		if (atomic_load(&p->sleepers))
			futex_wake(&p->bar_phase);
		return;
	}
	wait_change(p, &p->bar_phase, phase, &p->sleepers);
}

/* ---- matrix products ------------------------------------------------------- */

static size_t up64(size_t n) { return (n + 63) & ~(size_t)63; }

static size_t gemm_scratch(const struct tp_pool *p, uint32_t wtype, int64_t cols, int64_t ntok)
{
	/* batches from quant_gemm_min_tokens() on go through the panel GEMM
	 * (quant/gemm.h) where the CPU has one for the type */
	if (!quant_gemm_ok(wtype) || ntok < quant_gemm_min_tokens(wtype))
		return 0;
	return 64 + up64(quant_gemm_act_size(wtype, cols, ntok)) +
	       (size_t)tp_threads(p) * up64(quant_gemm_tmp_size(wtype, cols));
}

static size_t tile_scratch(uint32_t wtype, int64_t cols, int64_t ntok)
{
	uint32_t at = quant_vec_dot_type(wtype);
	if (at == QT_F32)
		return 0;
	return quant_row_size(at, (uint64_t)cols, NULL) * (size_t)ntok;
}

size_t tp_matmul_scratch_size(const struct tp_pool *p, uint32_t wtype, int64_t cols, int64_t ntok)
{
	if (!quant_type_valid(wtype) || cols <= 0 || ntok <= 0)
		return 0;
	size_t g = gemm_scratch(p, wtype, cols, ntok), t = tile_scratch(wtype, cols, ntok);
	return g > t ? g : t;
}

struct mm_job {
	struct tp_pool *pool;
	uint32_t wtype, at;
	const uint8_t *w;
	size_t wstride;
	int64_t rows, cols, ntok;
	const float *x;
	float *y;
	uint8_t *q;      /* [ntok][arow] quantized activations, or NULL */
	uint8_t *gact;   /* GEMM path: packed activations, or NULL */
	uint8_t *gtmp;   /* GEMM path: per-thread scratch, gtmp_size apart */
	size_t gtmp_size;
	size_t arow;     /* bytes per activation row (quantized or f32) */
	int64_t row_chunk, tok_chunk, n_row_chunks, n_chunks;
	_Atomic int64_t next;
	/* one token: each thread owns a contiguous range of row chunks (one
	 * long stream for the prefetchers) and steals from the others' ranges
	 * when its own is done */
	int n_ranges;
	struct {
		_Atomic int64_t next;
		int64_t end;
		char pad[48];
	} range[MV_RANGES];
};

static void gemm_body(struct mm_job *j, int ith, int nth)
{
	uint8_t *tmp = j->gtmp + (size_t)ith * j->gtmp_size;
	int64_t t0 = j->ntok * ith / nth, t1 = j->ntok * (ith + 1) / nth;
	if (t1 > t0 || ith == nth - 1)
		quant_gemm_pack_act(j->wtype, j->cols, j->x, j->ntok, t0, t1, j->gact, tmp);
	tp_barrier(j->pool);
	for (;;) {
		int64_t c = atomic_fetch_add_explicit(&j->next, 1, memory_order_relaxed);
		if (c >= j->n_chunks)
			break;
		int64_t r0 = c * QG_ROWS;
		int nr = (int)(j->rows - r0 < QG_ROWS ? j->rows - r0 : QG_ROWS);
		quant_gemm_rows(j->wtype, j->cols, j->w + (size_t)r0 * j->wstride, j->wstride, nr, j->gact, j->ntok,
				j->y + r0, (size_t)j->rows, tmp);
	}
}

static void mm_body(void *varg, int ith, int nth)
{
	struct mm_job *j = varg;
	if (j->gact) {
		gemm_body(j, ith, nth);
		return;
	}
	const uint8_t *a = j->q ? j->q : (const uint8_t *)j->x;
	if (j->q && j->ntok > 1) {
		const struct quant_type_info *ai = quant_type_info(j->at);
		int64_t nb = j->cols / ai->blck;
		for (int64_t t = 0; t < j->ntok; t++) {
			int64_t b0 = nb * ith / nth, b1 = nb * (ith + 1) / nth;
			if (b1 > b0)
				quant_quantize_act(j->at, j->x + t * j->cols + b0 * ai->blck,
						   j->q + (size_t)t * j->arow + (size_t)b0 * ai->size,
						   (uint64_t)((b1 - b0) * ai->blck));
		}
		tp_barrier(j->pool);
	}
	if (j->n_ranges) {
		int own = ith % j->n_ranges;
		for (int k = 0; k < j->n_ranges; k++) {
			int rg = (own + k) % j->n_ranges;
			for (;;) {
				int64_t rc = atomic_fetch_add_explicit(&j->range[rg].next, 1, memory_order_relaxed);
				if (rc >= j->range[rg].end)
					break;
				int64_t r0 = rc * j->row_chunk;
				int nr = (int)(j->rows - r0 < j->row_chunk ? j->rows - r0 : j->row_chunk);
				quant_dot_tile(j->wtype, j->cols, j->w + (size_t)r0 * j->wstride, j->wstride, nr, a, j->arow, 1,
					       j->y + r0, (size_t)j->rows);
			}
		}
		return;
	}
	for (;;) {
		int64_t c = atomic_fetch_add_explicit(&j->next, 1, memory_order_relaxed);
		if (c >= j->n_chunks)
			break;
		int64_t tc = c / j->n_row_chunks, rc = c % j->n_row_chunks;
		int64_t r0 = rc * j->row_chunk, t0 = tc * j->tok_chunk;
		int nr = (int)(j->rows - r0 < j->row_chunk ? j->rows - r0 : j->row_chunk);
		int nc = (int)(j->ntok - t0 < j->tok_chunk ? j->ntok - t0 : j->tok_chunk);
		quant_dot_tile(j->wtype, j->cols, j->w + (size_t)r0 * j->wstride, j->wstride, nr,
			       a + (size_t)t0 * j->arow, j->arow, nc, j->y + t0 * j->rows + r0, (size_t)j->rows);
	}
}

int tp_matmul(struct tp_pool *p, uint32_t wtype, const void *w, size_t wstride, int64_t rows,
	      int64_t cols, const float *x, int64_t ntok, float *y, void *scratch, size_t scratch_size,
	      tern_err *err)
{
	if (!quant_type_valid(wtype))
		return tern_errf(err, TERN_EINVAL, "matmul: invalid weight type %u", wtype);
	uint32_t at = quant_vec_dot_type(wtype);
	const struct quant_type_info *wi = quant_type_info(wtype), *ai = quant_type_info(at);
	if (rows <= 0 || cols <= 0 || ntok <= 0 || cols % wi->blck || cols % ai->blck)
		return tern_errf(err, TERN_EINVAL, "matmul: bad shape %lld x %lld (%s), %lld tokens",
				 (long long)rows, (long long)cols, wi->name, (long long)ntok);
	if (wstride < quant_row_size(wtype, (uint64_t)cols, NULL))
		return tern_errf(err, TERN_EINVAL, "matmul: row stride %zu below the row size", wstride);
	/* the GEMM path where the scratch was sized for it (the ISA can be
	 * forced between sizing and use), else the tiles */
	size_t gs = gemm_scratch(p, wtype, cols, ntok);
	bool gemm = gs && scratch_size >= gs;
	if (!gemm && scratch_size < tile_scratch(wtype, cols, ntok))
		return tern_errf(err, TERN_EINVAL, "matmul: scratch of %zu bytes, %zu needed", scratch_size,
				 tp_matmul_scratch_size(p, wtype, cols, ntok));
	struct mm_job j = {
		.pool = p, .wtype = wtype, .at = at, .w = w, .wstride = wstride, .rows = rows,
		.cols = cols, .ntok = ntok, .x = x, .y = y,
	};
	if (gemm) {
		j.gact = (uint8_t *)(((uintptr_t)scratch + 63) & ~(uintptr_t)63);
		j.gtmp = j.gact + up64(quant_gemm_act_size(wtype, cols, ntok));
		j.gtmp_size = up64(quant_gemm_tmp_size(wtype, cols));
		j.n_chunks = (rows + QG_ROWS - 1) / QG_ROWS;
		atomic_init(&j.next, 0);
		tp_run(p, mm_body, &j);
		return 0;
	}
	if (at != QT_F32) {
		j.q = scratch;
		j.arow = quant_row_size(at, (uint64_t)cols, NULL);
	} else {
		j.arow = (size_t)cols * sizeof(float);
	}
	/* Tiles: a token chunk whose activations stay in L2 while the threads
	 * sweep the rows; small row chunks for one token so that the threads
	 * balance even when one of them is descheduled. */
	j.tok_chunk = ntok < 64 ? ntok : 64;
	j.row_chunk = ntok == 1 ? 16 : 64;
	j.n_row_chunks = (rows + j.row_chunk - 1) / j.row_chunk;
	j.n_chunks = j.n_row_chunks * ((ntok + j.tok_chunk - 1) / j.tok_chunk);
	atomic_init(&j.next, 0);
	if (ntok == 1 && tp_threads(p) > 1) {
		int nth = tp_threads(p);
		j.n_ranges = nth < MV_RANGES ? nth : MV_RANGES;
		for (int k = 0; k < j.n_ranges; k++) {
			atomic_init(&j.range[k].next, j.n_row_chunks * k / j.n_ranges);
			j.range[k].end = j.n_row_chunks * (k + 1) / j.n_ranges;
		}
	}
	/* One token: quantizing a row takes microseconds, less than waking
	 * the workers for a barrier would; the caller does it alone. */
	if (j.q && ntok == 1)
		quant_quantize_act(at, x, j.q, (uint64_t)cols);
	tp_run(p, mm_body, &j);
	return 0;
}

int tp_matvec(struct tp_pool *p, uint32_t wtype, const void *w, size_t wstride, int64_t rows,
	      int64_t cols, const float *x, float *y, void *scratch, size_t scratch_size, tern_err *err)
{
	return tp_matmul(p, wtype, w, wstride, rows, cols, x, 1, y, scratch, scratch_size, err);
}
