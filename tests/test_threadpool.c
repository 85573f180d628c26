/* test_threadpool.c - the thread pool: every thread of a job runs it once,
 * and the barrier holds every thread until all have arrived; a job of
 * tp_run_any has each of its work items done exactly once, whichever
 * threads turn up, and is over when tp_run_any returns. The products
 * that run on the pool are tested in test_cpu_matmul.c. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <cmocka.h>

#include "lib/cpu/threadpool.h"

struct count_job {
	struct tp_pool *p;
	_Atomic int hits[8];
	_Atomic int phase_a;
	int bad;
};

static void count_body(void *arg, int ith, int nth)
{
	struct count_job *j = arg;
	atomic_fetch_add(&j->hits[ith], 1);
	atomic_fetch_add(&j->phase_a, 1);
	tp_barrier(j->p);
	/* after the barrier every thread has done phase a */
	if (atomic_load(&j->phase_a) != nth)
		j->bad = 1;
	tp_barrier(j->p);
}

static void test_pool_runs_every_thread(void **state)
{
	(void)state;
	for (int n = 1; n <= 8; n++) {
		struct tp_pool *p;
		assert_int_equal(tp_new(&p, n, NULL), 0);
		assert_int_equal(tp_threads(p), n);
		struct count_job j = {.p = p};
		for (int rep = 0; rep < 200; rep++) {
			atomic_store(&j.phase_a, 0);
			tp_run(p, count_body, &j);
			assert_int_equal(j.bad, 0);
		}
		for (int i = 0; i < n; i++)
			assert_int_equal(atomic_load(&j.hits[i]), 200);
		for (int i = n; i < 8; i++)
			assert_int_equal(atomic_load(&j.hits[i]), 0);
		tp_free(p);
	}
	struct tp_pool *p;
	assert_int_equal(tp_new(&p, 0, NULL), TERN_EINVAL);
}

/* work items from a counter, as tp_run_any requires */
struct any_job {
	_Atomic int next;
	int n;
	_Atomic int *done; /* [n] */
	_Atomic int calls[8];
	_Atomic int running;
	int spin;          /* busy work per item */
};

static void any_body(void *arg, int ith, int nth)
{
	struct any_job *j = arg;
	(void)nth;
	atomic_fetch_add(&j->calls[ith], 1);
	atomic_fetch_add(&j->running, 1);
	for (;;) {
		int k = atomic_fetch_add(&j->next, 1);
		if (k >= j->n)
			break;
		volatile int x = 0;
		for (int i = 0; i < j->spin; i++)
			x += i;
		atomic_fetch_add(&j->done[k], 1);
	}
	atomic_fetch_sub(&j->running, 1);
}

static void test_pool_run_any(void **state)
{
	(void)state;
	for (int n = 1; n <= 8; n += 3) {
		struct tp_pool *p;
		assert_int_equal(tp_new(&p, n, NULL), 0);
		_Atomic int done[64];
		struct any_job j = {.n = 64, .done = done};
		for (int rep = 0; rep < 2000; rep++) {
			atomic_store(&j.next, 0);
			j.spin = rep % 7 * 300;
			for (int i = 0; i < 64; i++)
				atomic_store(&done[i], 0);
			tp_run_any(p, any_body, &j);
			/* over: nobody inside, every item done once */
			assert_int_equal(atomic_load(&j.running), 0);
			for (int i = 0; i < 64; i++)
				assert_int_equal(atomic_load(&done[i]), 1);
			/* a strict job after it still sees every thread once */
			if (rep % 100 == 0) {
				struct count_job c = {.p = p};
				tp_run(p, count_body, &c);
				assert_int_equal(c.bad, 0);
				for (int i = 0; i < n; i++)
					assert_int_equal(atomic_load(&c.hits[i]), 1);
			}
		}
		/* the caller runs every job; a worker at most once per job */
		assert_int_equal(atomic_load(&j.calls[0]), 2000);
		for (int i = 1; i < n; i++)
			assert_true(atomic_load(&j.calls[i]) <= 2000);
		tp_free(p);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pool_runs_every_thread),
		cmocka_unit_test(test_pool_run_any),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
