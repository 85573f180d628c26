/* test_cpu_matmul.c - the CPU's threaded products (lib/cpu/matmul.h):
 * every thread count gives the single-threaded bits, a load-time repack
 * gives the bits of the per-call panels, the result matches the scalar
 * reference dot, and prepare refuses what run could not do; the
 * interleaved copy of Q4_0 (relay) gives the file layout's bits for
 * batches and the reference dot's value for one token, with or without
 * the ISA's kernel. The products
 * of every backend against the reference backend, over many shapes, are
 * in test_backend_ops.c. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <cmocka.h>

#include "lib/cpu/matmul.h"
#include "lib/cpu/threadpool.h"
#include "quant/cpu.h"
#include "quant/gemm.h"
#include "quant/quant.h"
#include "tests/quant_util.h"

static const uint32_t mm_types[] = {QT_Q4_0, QT_Q8_0, QT_Q4_K, QT_Q6_K, QT_Q5_K, QT_Q4_1, QT_Q2_K,
				    QT_IQ4_NL, QT_IQ2_XXS, QT_F16, QT_F32, QT_BF16};

/* run mm on a fresh pool of n threads */
static void run_relay(int n, uint32_t t, const uint8_t *w, size_t rs, int64_t rows, int64_t cols, const float *x,
		      int64_t ntok, float *y, enum cpu_mm_repack rp, bool relay)
{
	struct tp_pool *p;
	assert_int_equal(tp_new(&p, n, NULL), 0);
	struct cpu_mm mm;
	struct cpu_mm_opts o = {.max_tokens = ntok, .repack = rp, .relay = relay};
	tern_err e = {0};
	if (cpu_mm_prepare(&mm, p, t, w, rs, rows, cols, &o, &e))
		fail_msg("%s: %s", quant_type_name(t), e.msg);
	if (rp != CPU_MM_REPACK_NONE && quant_gemm_ok(t) &&
	    (ntok >= quant_gemm_min_tokens(t) || rp == CPU_MM_REPACK_ALL))
		assert_true(cpu_mm_panel_bytes(&mm) >= (size_t)rows * (size_t)cols / 2);
	else
		assert_int_equal(cpu_mm_panel_bytes(&mm), 0);
	/* the copy exactly where the ISA has the kernel */
	assert_int_equal(cpu_mm_relaid_bytes(&mm), relay && rp == CPU_MM_REPACK_NONE && quant_mvx_ok(t, cols) ? rs * (size_t)rows : 0);
	void *scratch = malloc(mm.scratch_size ? mm.scratch_size : 1);
	for (int64_t i = 0; i < rows * ntok; i++)
		y[i] = NAN;
	cpu_mm_run(&mm, p, x, ntok, y, scratch);
	free(scratch);
	cpu_mm_release(&mm);
	tp_free(p);
}

static void run_on(int n, uint32_t t, const uint8_t *w, size_t rs, int64_t rows, int64_t cols, const float *x,
		   int64_t ntok, float *y, enum cpu_mm_repack rp)
{
	run_relay(n, t, w, rs, rows, cols, x, ntok, y, rp, false);
}

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
	size_t ybytes = sizeof(float) * (size_t)(rows * ntok);
	run_on(1, t, w, rs, rows, cols, x, ntok, y1, CPU_MM_REPACK_NONE);
	for (int n = 2; n <= 8; n++) {
		run_on(n, t, w, rs, rows, cols, x, ntok, yn, CPU_MM_REPACK_NONE);
		if (memcmp(y1, yn, ybytes) != 0)
			fail_msg("%s %lldx%lld, %lld tokens: %d threads differ from 1 thread", quant_type_name(t),
				 (long long)rows, (long long)cols, (long long)ntok, n);
	}
	/* stored panels are the per-call panels: the same bits */
	run_on(3, t, w, rs, rows, cols, x, ntok, yn, CPU_MM_REPACK_BATCH);
	if (memcmp(y1, yn, ybytes) != 0)
		fail_msg("%s, %lld tokens: repacked panels differ", quant_type_name(t), (long long)ntok);
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

/* Q4_0 through the interleaved copy: batches give the bits of the file's
 * layout, one token the same bits on every thread count and the reference
 * dot's value; a column count that is not a multiple of 512 gets no copy
 * (run_relay checks where the copy is made). Under the scalar ISA there is
 * no copy; quant_mvx_tile's own fallback is checked on packed rows. */
static void test_relay(void **state)
{
	(void)state;
	static const int64_t colss[] = {512, 1536, 5632, 480};
	static const int64_t ntoks[] = {1, 3, 67};
	for (size_t ci = 0; ci < sizeof colss / sizeof *colss; ci++) {
		int64_t rows = 203, cols = colss[ci];
		size_t rs = quant_row_size(QT_Q4_0, (uint64_t)cols, NULL);
		uint8_t *w = malloc(rs * (size_t)rows);
		qu_seed((uint64_t)cols);
		for (int64_t r = 0; r < rows; r++)
			qu_make_row(QT_Q4_0, w + r * rs, cols, (int)(r % 3 == 0));
		for (size_t ti = 0; ti < sizeof ntoks / sizeof *ntoks; ti++) {
			int64_t ntok = ntoks[ti];
			float *x = malloc(sizeof(float) * (size_t)(cols * ntok));
			float *y0 = malloc(sizeof(float) * (size_t)(rows * ntok));
			float *y1 = malloc(sizeof(float) * (size_t)(rows * ntok));
			float *y3 = malloc(sizeof(float) * (size_t)(rows * ntok));
			for (int64_t i = 0; i < cols * ntok; i++)
				x[i] = qu_normal();
			size_t yb = sizeof(float) * (size_t)(rows * ntok);
			run_on(1, QT_Q4_0, w, rs, rows, cols, x, ntok, y0, CPU_MM_REPACK_NONE);
			run_relay(1, QT_Q4_0, w, rs, rows, cols, x, ntok, y1, CPU_MM_REPACK_NONE, true);
			run_relay(3, QT_Q4_0, w, rs, rows, cols, x, ntok, y3, CPU_MM_REPACK_NONE, true);
			if (memcmp(y1, y3, yb) != 0)
				fail_msg("relay %lld cols, %lld tokens: 3 threads differ from 1", (long long)cols,
					 (long long)ntok);
			if (ntok > 1 && memcmp(y0, y1, yb) != 0)
				fail_msg("relay %lld cols, %lld tokens: batch bits differ from the file layout's",
					 (long long)cols, (long long)ntok);
			if (ntok == 1) {
				size_t ars = quant_row_size(QT_Q8_0, (uint64_t)cols, NULL);
				uint8_t *a = malloc(ars);
				quant_quantize_row(QT_Q8_0, x, a, (uint64_t)cols);
				for (int64_t r = 0; r < rows; r++) {
					float ref = quant_dot_ref(QT_Q4_0, cols, w + r * rs, a);
					if (!(fabsf(y1[r] - ref) <= 1e-4f * (1 + fabsf(ref))))
						fail_msg("relay %lld cols: y[%lld] = %g, reference %g", (long long)cols,
							 (long long)r, (double)y1[r], (double)ref);
				}
				free(a);
			}
			free(x);
			free(y0);
			free(y1);
			free(y3);
		}
		free(w);
	}
}

/* The layout itself: pack and unpack are inverse byte moves, quant_mvx_tile
 * matches the reference dot on every ISA (its kernel, or the read-back
 * fallback of the scalar one). */
static void test_mvx_layout(void **state)
{
	(void)state;
	assert_false(quant_mvx_layout(QT_Q4_0, 480));
	assert_false(quant_mvx_layout(QT_Q8_0, 512));
	assert_true(quant_mvx_layout(QT_Q4_0, 1024));
	int64_t cols = 1024, rows = 9;
	size_t rs = quant_row_size(QT_Q4_0, (uint64_t)cols, NULL), ars = quant_row_size(QT_Q8_0, (uint64_t)cols, NULL);
	uint8_t *w = malloc(rs * (size_t)rows), *p = malloc(rs * (size_t)rows), *u = malloc(rs), *a = malloc(ars);
	float *x = malloc(sizeof(float) * (size_t)cols), y[9];
	qu_seed(7);
	for (int64_t r = 0; r < rows; r++)
		qu_make_row(QT_Q4_0, w + r * rs, cols, (int)(r & 1));
	for (int64_t i = 0; i < cols; i++)
		x[i] = qu_normal();
	quant_quantize_row(QT_Q8_0, x, a, (uint64_t)cols);
	for (int64_t r = 0; r < rows; r++) {
		quant_mvx_pack(QT_Q4_0, cols, w + r * rs, p + r * rs);
		quant_mvx_unpack(QT_Q4_0, cols, p + r * rs, u);
		assert_memory_equal(u, w + r * rs, rs);
	}
	/* block 5 of row 0: its scale first, its level bytes in lane 5 */
	assert_memory_equal(p + 2 * 5, w + 18 * 5, 2);
	assert_memory_equal(p + 32 + 64 * 2 + 4 * 5, w + 18 * 5 + 2 + 8, 4);
	static const char *isas[] = {"auto", "scalar", "avx2"};
	for (size_t k = 0; k < sizeof isas / sizeof *isas; k++) {
		if (quant_cpu_force(isas[k]) != 0)
			continue;
		void *act = aligned_alloc(64, (quant_mvx_act_size(QT_Q4_0, cols) + 63) & ~(size_t)63);
		quant_mvx_prep(QT_Q4_0, cols, a, act);
		quant_mvx_tile(QT_Q4_0, cols, p, rs, (int)rows, act, y);
		for (int64_t r = 0; r < rows; r++) {
			float ref = quant_dot_ref(QT_Q4_0, cols, w + r * rs, a);
			if (!(fabsf(y[r] - ref) <= 1e-4f * (1 + fabsf(ref))))
				fail_msg("%s: mvx row %lld = %g, reference %g", isas[k], (long long)r, (double)y[r],
					 (double)ref);
		}
		free(act);
	}
	quant_cpu_force("auto");
	free(w);
	free(p);
	free(u);
	free(a);
	free(x);
}

/* Q6_K's one-token product gives the dot kernel's bits (which follow
 * ggml's 8-lane order) under every ISA, rows of 1 to 22 super-blocks. */
static void test_q6k_matvec_bits(void **state)
{
	(void)state;
	static const char *isas[] = {"auto", "avx2", "scalar"};
	for (size_t k = 0; k < sizeof isas / sizeof *isas; k++) {
		if (quant_cpu_force(isas[k]) != 0)
			continue;
		for (int64_t nb = 1; nb <= 22; nb += 7) {
			int64_t cols = nb * QK_K, rows = 19;
			size_t rs = quant_row_size(QT_Q6_K, (uint64_t)cols, NULL);
			size_t ars = quant_row_size(QT_Q8_K, (uint64_t)cols, NULL);
			uint8_t *w = malloc(rs * (size_t)rows), *a = malloc(ars);
			float *x = malloc(sizeof(float) * (size_t)cols), y[19];
			qu_seed((uint64_t)nb);
			for (int64_t r = 0; r < rows; r++)
				qu_make_row(QT_Q6_K, w + r * rs, cols, (int)(r & 1));
			for (int64_t i = 0; i < cols; i++)
				x[i] = qu_normal();
			quant_quantize_act(QT_Q8_K, x, a, (uint64_t)cols);
			quant_dot_tile(QT_Q6_K, cols, w, rs, (int)rows, a, ars, 1, y, 1);
			for (int64_t r = 0; r < rows; r++) {
				float d = quant_dot(QT_Q6_K, cols, w + r * rs, a);
				if (memcmp(&d, &y[r], sizeof d) != 0)
					fail_msg("%s: q6_K %lld cols, row %lld: mat-vec %.9g, dot %.9g", isas[k], (long long)cols,
						 (long long)r, (double)y[r], (double)d);
			}
			free(w);
			free(a);
			free(x);
		}
	}
	quant_cpu_force("auto");
}

static void test_prepare_errors(void **state)
{
	(void)state;
	struct tp_pool *p;
	assert_int_equal(tp_new(&p, 2, NULL), 0);
	uint8_t w[4 * 36] = {0};
	struct cpu_mm mm;
	struct cpu_mm_opts o = {.max_tokens = 4};
	tern_err e = {0};
	/* 48 is not a multiple of the block */
	assert_int_equal(cpu_mm_prepare(&mm, p, QT_Q4_0, w, 18, 4, 48, &o, &e), TERN_EINVAL);
	assert_non_null(strstr(e.msg, "48"));
	/* stride below the row size */
	assert_int_equal(cpu_mm_prepare(&mm, p, QT_Q4_0, w, 17, 4, 32, &o, &e), TERN_EINVAL);
	assert_int_equal(cpu_mm_prepare(&mm, p, QT_Q4_0, w, 18, 0, 32, &o, &e), TERN_EINVAL);
	/* a removed id, the activation types, integers: no product */
	assert_int_equal(cpu_mm_prepare(&mm, p, 4, w, 18, 4, 32, &o, &e), TERN_EUNSUPPORTED);
	assert_int_equal(cpu_mm_prepare(&mm, p, QT_Q8_K, w, 292, 1, 256, &o, &e), TERN_EUNSUPPORTED);
	assert_int_equal(cpu_mm_prepare(&mm, p, QT_I32, w, 128, 1, 32, &o, &e), TERN_EUNSUPPORTED);
	assert_non_null(strstr(e.msg, "i32"));
	o.max_tokens = 0;
	assert_int_equal(cpu_mm_prepare(&mm, p, QT_Q4_0, w, 18, 4, 32, &o, &e), TERN_EINVAL);
	o.max_tokens = CPU_MM_MAX_TOKENS + 1;
	assert_int_equal(cpu_mm_prepare(&mm, p, QT_Q4_0, w, 18, 4, 32, &o, &e), TERN_EINVAL);
	cpu_mm_release(&mm); /* empty after a failure: safe */
	o.max_tokens = 1;
	assert_int_equal(cpu_mm_prepare(&mm, p, QT_Q4_0, w, 18, 4, 32, &o, &e), 0);
	float x[32] = {0}, y[4] = {1, 1, 1, 1};
	void *scratch = malloc(mm.scratch_size);
	cpu_mm_run(&mm, p, x, 1, y, scratch);
	for (int i = 0; i < 4; i++)
		assert_true(y[i] == 0.0f);
	free(scratch);
	cpu_mm_release(&mm);
	tp_free(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_matvec_threads),
		cmocka_unit_test(test_matmul_threads),
		cmocka_unit_test(test_relay),
		cmocka_unit_test(test_mvx_layout),
		cmocka_unit_test(test_q6k_matvec_bits),
		cmocka_unit_test(test_prepare_errors),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
