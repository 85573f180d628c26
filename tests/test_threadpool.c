/* test_threadpool.c - the thread pool: every thread of a job runs it once,
 * and the barrier holds every thread until all have arrived. The products
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pool_runs_every_thread),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
