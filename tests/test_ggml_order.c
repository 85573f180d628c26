/* test_ggml_order.c - quant/ggml_order.h, the products the embeddings
 * compute in ggml's order (their agreement with llama.cpp is
 * tests/test_embed.c's): the activations' quantizers round as ggml's x86
 * ones (half to even; Q8_K's scale from the first element of largest
 * magnitude, its sign included); a product equals the double-precision dot
 * of the same dequantized levels within f32 rounding; the 4-token and
 * one-token Q4_K sums agree within rounding; and every SIMD variant gives
 * the same bits as the scalar code. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "quant/cpu.h"
#include "quant/ggml_order.h"
#include "quant/quant.h"

#define COLS 512
#define ROWS 24

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static float frand(void) /* uniform in [-1, 1) */
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (float)((rng >> 40) * (2.0 / 16777216.0) - 1.0);
}

/* Q8_0 activations: d = max|x| / 127 in f16, levels x * 127 / max|x|
 * rounded half to even (ggml's _mm256_round_ps; its reference rounds half
 * away from zero) */
static void test_quantize_q8_0(void **state)
{
	(void)state;
	float x[32] = {0};
	x[0] = 127.0f; /* 127 / max = 1: the levels are x itself */
	x[1] = 2.5f;
	x[2] = -3.5f;
	x[3] = 0.5f;
	x[4] = -126.4f;
	uint8_t b[34];
	quant_ggml_quantize(QT_Q4_0, x, b, 32); /* Q4_0 weights take Q8_0 activations */
	uint16_t d;
	memcpy(&d, b, 2);
	assert_int_equal(d, quant_f32_to_fp16(1.0f));
	const int8_t *q = (const int8_t *)(b + 2);
	assert_int_equal(q[0], 127);
	assert_int_equal(q[1], 2);
	assert_int_equal(q[2], -4);
	assert_int_equal(q[3], 0);
	assert_int_equal(q[4], -126);
	assert_int_equal(quant_ggml_act_size(QT_Q8_0, 64), 68);
	assert_int_equal(quant_ggml_act_size(QT_Q4_K, 512), 2 * 292);
	assert_int_equal(quant_ggml_act_size(QT_F32, 512), 0);
}

/* Q8_K: the scale -127 / m of the first element m of largest magnitude
 * (levels at most 127), d = 1 / scale, the sums of each 16 levels */
static void test_quantize_q8_k(void **state)
{
	(void)state;
	float x[256];
	for (int i = 0; i < 256; i++)
		x[i] = 0.01f * (float)(i % 50) - 0.2f;
	x[10] = 2.0f;
	x[20] = -2.0f; /* as large, later: m is x[10] */
	uint8_t b[292];
	quant_ggml_quantize(QT_Q4_K, x, b, 256);
	float d;
	memcpy(&d, b, 4);
	assert_true(d == 1.0f / (-127.0f / 2.0f));
	const int8_t *q = (const int8_t *)(b + 4);
	assert_int_equal(q[10], -127);
	assert_int_equal(q[20], 127);
	for (int j = 0; j < 16; j++) {
		int s = 0;
		for (int i = 0; i < 16; i++)
			s += q[16 * j + i];
		int16_t bs;
		memcpy(&bs, b + 4 + 256 + 2 * j, 2);
		assert_int_equal(bs, s);
	}
	for (int i = 0; i < 256; i++)
		assert_true(fabsf(d * (float)q[i] - x[i]) <= fabsf(d) * 0.5f + 1e-7f);
}

struct prod {
	uint32_t t;
	uint8_t *w, *act;
	size_t wrow, arow;
	int ntok;
};

static void make_prod(struct prod *p, uint32_t t, int ntok)
{
	p->t = t;
	p->ntok = ntok;
	p->wrow = quant_row_size(t, COLS, NULL);
	p->arow = quant_ggml_act_size(t, COLS);
	p->w = malloc(p->wrow * ROWS);
	p->act = malloc(p->arow * (size_t)ntok);
	assert_non_null(p->w);
	assert_non_null(p->act);
	float x[COLS];
	for (int r = 0; r < ROWS; r++) {
		for (int i = 0; i < COLS; i++)
			x[i] = frand();
		assert_int_equal(quant_quantize_row(t, x, p->w + p->wrow * r, COLS), 0);
	}
	for (int k = 0; k < ntok; k++) {
		for (int i = 0; i < COLS; i++)
			x[i] = frand() * (k + 1);
		quant_ggml_quantize(t, x, p->act + p->arow * k, COLS);
	}
}

static void free_prod(struct prod *p)
{
	free(p->w);
	free(p->act);
}

/* y[k][r] for every token k, grouped as the embeddings' backend does */
static void run_prod(const struct prod *p, float *y)
{
	for (int k = 0; k < p->ntok; k++)
		quant_ggml_rows(p->t, COLS, p->w, p->wrow, ROWS, p->act + p->arow * k, y + k * ROWS,
				k < p->ntok - p->ntok % 4);
}

static void test_rows_dot(void **state)
{
	(void)state;
	static const uint32_t types[] = {QT_Q8_0, QT_Q4_0, QT_Q4_K};
	for (size_t ti = 0; ti < sizeof types / sizeof types[0]; ti++) {
		struct prod p;
		make_prod(&p, types[ti], 7);
		float y[7 * ROWS], wf[COLS], af[COLS];
		run_prod(&p, y);
		uint32_t at = types[ti] == QT_Q4_K ? QT_Q8_K : QT_Q8_0;
		for (int k = 0; k < p.ntok; k++) {
			assert_int_equal(quant_dequantize_row(at, p.act + p.arow * k, af, COLS), 0);
			for (int r = 0; r < ROWS; r++) {
				assert_int_equal(quant_dequantize_row(p.t, p.w + p.wrow * r, wf, COLS), 0);
				double e = 0, mag = 0;
				for (int i = 0; i < COLS; i++) {
					e += (double)wf[i] * af[i];
					mag += fabs((double)wf[i] * af[i]);
				}
				/* f32 sums of at most COLS / 4 terms, and the Q4_K levels'
				 * products d * sc * q taken in another order */
				if (!(fabs(y[k * ROWS + r] - e) <= 2e-6 * mag))
					fail_msg("%s token %d row %d: %.9g, the double dot %.9g", quant_type_name(p.t), k, r,
						 (double)y[k * ROWS + r], e);
			}
		}
		/* Q4_K: the one-token sums (per super-block) of the same token */
		if (p.t == QT_Q4_K) {
			float y1[ROWS];
			quant_ggml_rows(p.t, COLS, p.w, p.wrow, ROWS, p.act, y1, false);
			for (int r = 0; r < ROWS; r++)
				assert_true(fabsf(y1[r] - y[r]) <= 1e-5f * (fabsf(y[r]) + 1));
		}
		free_prod(&p);
	}
}

static void test_rows_isa(void **state)
{
	(void)state;
	static const uint32_t types[] = {QT_Q8_0, QT_Q4_0, QT_Q4_K};
	static const char *const isas[] = {"avx2", "avx512", "neon"};
	int others = 0;
	for (size_t ti = 0; ti < sizeof types / sizeof types[0]; ti++) {
		struct prod p;
		make_prod(&p, types[ti], 6);
		float want[6 * ROWS], got[6 * ROWS];
		assert_int_equal(quant_cpu_force("scalar"), 0);
		run_prod(&p, want);
		for (size_t v = 0; v < sizeof isas / sizeof isas[0]; v++) {
			if (quant_cpu_force(isas[v]))
				continue;
			others++;
			run_prod(&p, got);
			if (memcmp(want, got, sizeof want) != 0)
				fail_msg("%s: %s differs from the scalar code", quant_type_name(p.t), isas[v]);
		}
		free_prod(&p);
	}
	assert_int_equal(quant_cpu_force("auto"), 0);
	printf("ggml-order products: %d SIMD variant runs bit-identical to the scalar code\n", others);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_quantize_q8_0),
		cmocka_unit_test(test_quantize_q8_k),
		cmocka_unit_test(test_rows_dot),
		cmocka_unit_test(test_rows_isa),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
