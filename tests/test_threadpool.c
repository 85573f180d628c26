/* test_threadpool.c - the thread pool (jobs, barrier) and the threaded
 * mat-vec / mat-mat: every thread count gives the single-threaded result,
 * and that result matches the scalar reference dot. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <cmocka.h>

#include "quant/quant.h"
#include "tests/quant_util.h"
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

static const uint32_t mm_types[] = {QT_Q4_0, QT_Q8_0, QT_Q4_K, QT_Q6_K, QT_Q5_K, QT_Q4_1, QT_Q2_K,
				    QT_IQ4_NL, QT_IQ2_XXS, QT_F16, QT_F32, QT_BF16};

static void check_matmul(uint32_t t, int64_t rows, int64_t cols, int64_t ntok)
{
	size_t rs = quant_row_size(t, (uint64_t)cols, NULL);
	uint8_t *w = malloc(rs * (size_t)rows);
	float *x = malloc(sizeof(float) * (size_t)(cols * ntok));
	float *y1 = malloc(sizeof(float) * (size_t)(rows * ntok));
	float *yn = malloc(sizeof(float) * (size_t)(rows * ntok));
	qu_seed((uint64_t)(t * 31 + ntok));
	for (int64_t r = 0; r < rows; r++)
		qu_make_row(t, w + r * rs, cols, (int)(r & 1));
	for (int64_t i = 0; i < cols * ntok; i++)
		x[i] = qu_normal();
	/* sized for the largest pool used below */
	struct tp_pool *p0;
	assert_int_equal(tp_new(&p0, 8, NULL), 0);
	size_t ss = tp_matmul_scratch_size(p0, t, cols, ntok);
	tp_free(p0);
	void *scratch = malloc(ss ? ss : 1);
	for (int n = 1; n <= 8; n++) {
		struct tp_pool *p;
		assert_int_equal(tp_new(&p, n, NULL), 0);
		float *y = n == 1 ? y1 : yn;
		for (int64_t i = 0; i < rows * ntok; i++)
			y[i] = NAN;
		int rc = ntok == 1 ? tp_matvec(p, t, w, rs, rows, cols, x, y, scratch, ss, NULL)
				   : tp_matmul(p, t, w, rs, rows, cols, x, ntok, y, scratch, ss, NULL);
		assert_int_equal(rc, 0);
		if (n > 1 && memcmp(y1, yn, sizeof(float) * (size_t)(rows * ntok)) != 0)
			fail_msg("%s %lldx%lld, %lld tokens: %d threads differ from 1 thread", quant_type_name(t),
				 (long long)rows, (long long)cols, (long long)ntok, n);
		tp_free(p);
	}
	/* and the result is right: compare some entries with the reference dot */
	uint32_t at = quant_vec_dot_type(t);
	size_t ars = at == QT_F32 ? (size_t)cols * 4 : quant_row_size(at, (uint64_t)cols, NULL);
	uint8_t *a = malloc(ars);
	for (int64_t tk = 0; tk < ntok; tk += (ntok > 3 ? ntok / 3 : 1)) {
		if (at == QT_F32)
			memcpy(a, x + tk * cols, ars);
		else
			quant_quantize_row(at, x + tk * cols, a, (uint64_t)cols);
		/* BF16 batches may round the activations to bf16 (the GEMM path,
		 * as llama.cpp does): either reference is right */
		float *xb = NULL;
		if (t == QT_BF16) {
			xb = malloc(ars);
			for (int64_t i = 0; i < cols; i++) {
				uint32_t u = (uint32_t)quant_f32_to_bf16(x[tk * cols + i]) << 16;
				memcpy(xb + i, &u, 4);
			}
		}
		for (int64_t r = 0; r < rows; r += 7) {
			float ref = quant_dot_ref(t, cols, w + r * rs, a);
			float got = y1[tk * rows + r];
			if (xb && !(fabsf(got - ref) <= 1e-3f * (1 + fabsf(ref))))
				ref = quant_dot_ref(t, cols, w + r * rs, xb);
			if (!(fabsf(got - ref) <= 1e-3f * (1 + fabsf(ref))))
				fail_msg("%s: y[%lld][%lld] = %g, reference %g", quant_type_name(t), (long long)tk,
					 (long long)r, (double)got, (double)ref);
		}
		free(xb);
	}
	free(a);
	free(scratch);
	free(w);
	free(x);
	free(y1);
	free(yn);
}

static void test_matvec_threads(void **state)
{
	(void)state;
	for (size_t k = 0; k < sizeof mm_types / sizeof *mm_types; k++)
		check_matmul(mm_types[k], 203, 512, 1);
}

static void test_matmul_threads(void **state)
{
	(void)state;
	for (size_t k = 0; k < sizeof mm_types / sizeof *mm_types; k++)
		check_matmul(mm_types[k], 131, 768, 67);
}

static void test_matmul_errors(void **state)
{
	(void)state;
	struct tp_pool *p;
	assert_int_equal(tp_new(&p, 2, NULL), 0);
	float x[64] = {0}, y[4];
	uint8_t w[4 * 36] = {0}, scratch[256];
	tern_err e = {0};
	assert_int_equal(tp_matvec(p, QT_Q4_0, w, 18, 4, 48, x, y, scratch, sizeof scratch, &e), TERN_EINVAL);
	assert_int_equal(tp_matvec(p, QT_Q4_0, w, 18, 4, 32, x, y, scratch, 1, &e), TERN_EINVAL);
	assert_int_equal(tp_matvec(p, 4, w, 18, 4, 32, x, y, scratch, sizeof scratch, &e), TERN_EINVAL);
	assert_int_equal(tp_matvec(p, QT_Q4_0, w, 18, 4, 32, x, y, scratch, sizeof scratch, &e), 0);
	tp_free(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pool_runs_every_thread),
		cmocka_unit_test(test_matvec_threads),
		cmocka_unit_test(test_matmul_threads),
		cmocka_unit_test(test_matmul_errors),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
