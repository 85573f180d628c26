/* threadpool.c - persistent workers and a spin-then-sleep barrier.
 *
 * Waiting is done in two steps: a short spin on the shared word (a decode
 * step issues hundreds of jobs, each a few microseconds long, and a futex
 * round-trip would cost as much as the job), then FUTEX_WAIT so that an idle
 * pool uses no CPU. A waker issues FUTEX_WAKE only when someone sleeps.
 *
 * tp_run_any does not wait for workers that have not started: on a machine
 * where another process holds a worker's core, the caller takes the work
 * the absent worker would have done (the job hands out its work from a
 * shared counter) instead of waiting a scheduler tick for it, many times
 * per token. */
#include "lib/cpu/threadpool.h"

#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

/* A pause costs ~45 ns on current x86 cores (measured 42-52 ns here).
 * How long a worker spins for the next job before it sleeps adapts, per
 * pool, between SPIN_MIN (~6 us) and SPIN_MAX (~180 us): a decode step's
 * jobs come every few to a hundred microseconds, and a worker asleep at
 * the next one costs a futex wake-up (tens of microseconds on a VM), many
 * times per token; but a worker that spins while another process wants
 * its core uses up its share and is preempted inside jobs. So tp_run_any
 * watches each job: a worker that was asleep when the job was published
 * and missed it doubles the spin (the gaps are longer than it); one that
 * was awake and still missed it (preempted: the core is contended) halves
 * it. Measured, SmolLM2-135M decode, 2 threads, quiet / with `taskset -c
 * 1 yes` (tok/s): fixed 128 spins 313 / 230-240, fixed 1024 332 / 186-213,
 * fixed 4096 381 / 152-163. The caller spins ~12 us for the last worker. */
#define SPIN_MIN 128
#define SPIN_MAX 4096
#define SPIN_ITERS 128 /* the barrier */
#define SPIN_DONE 256

/* The join word of the current job: which job it is, whether the caller
 * has closed it (tp_run_any), how many workers are inside it and how many
 * have entered it. A worker enters only the job whose generation it read,
 * and only while it is open, with one compare-and-swap: a worker that
 * wakes late cannot enter a job that has moved on, and the caller of
 * tp_run_any waits only for the workers that did enter. */
#define J_ACTIVE 1ull                   /* bits 0-15: workers inside */
#define J_JOINED (1ull << 16)           /* bits 16-31: workers that entered */
#define J_CLOSED (1ull << 32)
#define J_GEN_SHIFT 33                  /* bits 33-63: the job's generation */
#define J_ACTIVE_OF(w) ((w) & 0xFFFF)
#define J_JOINED_OF(w) (((w) >> 16) & 0xFFFF)
#define J_TAG(g) ((uint64_t)(g) << J_GEN_SHIFT)
#define J_TAG_MASK (~0ull << J_GEN_SHIFT)

struct worker_arg {
	struct tp_pool *p;
	int ith;
};

struct tp_pool {
	int n;
	pthread_t *threads; /* [n - 1] */
	struct worker_arg *args; /* [n - 1], owned by the pool: a worker that
				  * freed its own would call the allocator
				  * whenever it first runs, possibly in the
				  * middle of a decode loop */
	tp_fn fn;
	void *arg;
	_Atomic uint32_t gen;       /* bumped to start a job (futex word) */
	_Atomic uint32_t done;      /* bumped when a worker leaves a job the caller waits on (futex word) */
	_Atomic uint64_t join;      /* J_*: the current job's membership */
	_Atomic int sleepers;       /* threads in FUTEX_WAIT on gen or bar_phase */
	_Atomic int main_sleeping;  /* caller in FUTEX_WAIT on done */
	_Atomic int stop;
	_Atomic int bar_count;
	_Atomic uint32_t bar_phase; /* futex word */
	_Atomic int spin;           /* a worker's spins before it sleeps: SPIN_MIN..SPIN_MAX */
	bool woke;                  /* the current job found a worker asleep */
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

/* Wait until *addr != val: spin `spins` times, then sleep. */
static void wait_change(_Atomic uint32_t *addr, uint32_t val, _Atomic int *sleep_count, int spins)
{
	for (int i = 0; i < spins; i++) {
		if (atomic_load_explicit(addr, memory_order_acquire) != val)
			return;
		cpu_relax();
	}
	while (atomic_load(addr) == val) {
		atomic_fetch_add(sleep_count, 1);
		futex_wait(addr, val);
		atomic_fetch_sub(sleep_count, 1);
	}
}

/* Enter job g if it is still open; the job's fn and arg are stable while
 * this worker is inside. */
static bool enter(struct tp_pool *p, uint32_t g)
{
	uint64_t w = atomic_load(&p->join);
	for (;;) {
		if ((w & J_TAG_MASK) != J_TAG(g & 0x7FFFFFFFu) || (w & J_CLOSED))
			return false;
		if (atomic_compare_exchange_weak(&p->join, &w, w + J_ACTIVE + J_JOINED))
			return true;
	}
}

static void *worker_main(void *varg)
{
	struct worker_arg *wa = varg;
	struct tp_pool *p = wa->p;
	int ith = wa->ith;
	uint32_t seen = 0;
	for (;;) {
		wait_change(&p->gen, seen, &p->sleepers, atomic_load_explicit(&p->spin, memory_order_relaxed));
		seen = atomic_load(&p->gen);
		if (atomic_load(&p->stop))
			break;
		if (!enter(p, seen))
			continue;
		p->fn(p->arg, ith, p->n);
		atomic_fetch_sub(&p->join, J_ACTIVE);
		atomic_fetch_add(&p->done, 1);
		if (atomic_load(&p->main_sleeping))
			futex_wake(&p->done);
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
	atomic_init(&p->join, J_CLOSED); /* generation 0: no job */
	atomic_init(&p->spin, SPIN_MIN);
	if (n_threads > 1) {
		p->threads = calloc((size_t)n_threads - 1, sizeof *p->threads);
		p->args = calloc((size_t)n_threads - 1, sizeof *p->args);
		if (!p->threads || !p->args) {
			free(p->threads);
			free(p->args);
			free(p);
			return tern_errf(err, TERN_ENOMEM, "thread pool: out of memory");
		}
	}
	for (int i = 1; i < n_threads; i++) {
		struct worker_arg *wa = &p->args[i - 1];
		wa->p = p;
		wa->ith = i;
		int rc = pthread_create(&p->threads[i - 1], NULL, worker_main, wa);
		if (rc != 0) {
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
	free(p->args);
	free(p);
}

int tp_threads(const struct tp_pool *p) { return p->n; }

/* Publish a job and run the caller's share. */
static void start(struct tp_pool *p, tp_fn fn, void *arg)
{
	p->fn = fn;
	p->arg = arg;
	atomic_store(&p->bar_count, 0);
	uint32_t g = atomic_load(&p->gen) + 1;
	atomic_store(&p->join, J_TAG(g & 0x7FFFFFFFu));
	atomic_store(&p->gen, g);
	p->woke = atomic_load(&p->sleepers) > 0;
	if (p->woke)
		futex_wake(&p->gen);
	fn(arg, 0, p->n);
}

/* Wait until the join word satisfies `all` (every worker entered and left)
 * or, without it, until no worker is inside: spin, then sleep on `done`. */
static bool finished(uint64_t w, bool all, int n)
{
	return J_ACTIVE_OF(w) == 0 && (!all || J_JOINED_OF(w) == (uint64_t)(n - 1));
}

/* Returns whether the caller had to sleep (a worker took long: preempted). */
static bool wait_workers(struct tp_pool *p, bool all)
{
	for (int i = 0; i < SPIN_DONE; i++) {
		if (finished(atomic_load(&p->join), all, p->n))
			return false;
		cpu_relax();
	}
	bool slept = false;
	while (!finished(atomic_load(&p->join), all, p->n)) {
		atomic_store(&p->main_sleeping, 1);
		uint32_t d = atomic_load(&p->done);
		if (!finished(atomic_load(&p->join), all, p->n)) {
			futex_wait(&p->done, d);
			slept = true;
		}
		atomic_store(&p->main_sleeping, 0);
	}
	return slept;
}

void tp_run(struct tp_pool *p, tp_fn fn, void *arg)
{
	if (p->n == 1) {
		fn(arg, 0, 1);
		return;
	}
	start(p, fn, arg);
	wait_workers(p, true);
	atomic_fetch_or(&p->join, J_CLOSED);
}

void tp_run_any(struct tp_pool *p, tp_fn fn, void *arg)
{
	if (p->n == 1) {
		fn(arg, 0, 1);
		return;
	}
	start(p, fn, arg);
	uint64_t w = atomic_fetch_or(&p->join, J_CLOSED);
	bool missed = J_JOINED_OF(w) < (uint64_t)(p->n - 1);
	bool late = wait_workers(p, false);
	/* adapt the workers' spin: a worker asleep at a job it then missed
	 * spins longer; one that was awake and missed it, or that the caller
	 * had to wait for, was preempted: spin less */
	if (missed || late) {
		int s = atomic_load_explicit(&p->spin, memory_order_relaxed);
		s = missed && p->woke && !late ? (s * 2 < SPIN_MAX ? s * 2 : SPIN_MAX)
					      : (s / 2 > SPIN_MIN ? s / 2 : SPIN_MIN);
		atomic_store_explicit(&p->spin, s, memory_order_relaxed);
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
	wait_change(&p->bar_phase, phase, &p->sleepers, SPIN_ITERS);
}
