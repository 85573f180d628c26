/* test_gemm.c - the panel GEMM (quant/gemm.h) of every type it takes, called
 * directly: each output equals the scalar reference dot of the weight row
 * with the token quantized as the dot kernels see it, for 1..16 rows,
 * token counts that do and do not fill a tile, activations packed in
 * several ranges over a dirty buffer (the same bytes whether whole tiles or
 * single tokens are packed), unaligned rows with odd strides; a
 * panel converted once (quant_gemm_pack_panel) gives the same bits. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <cmocka.h>

#include "quant/cpu.h"
#include "quant/gemm.h"
#include "quant/quant.h"
#include "tests/quant_util.h"

/* sum |w_i * a_i| in double: the scale of the rounding a float sum makes */
static double abs_dot(uint32_t t, uint32_t at, int64_t n, const uint8_t *w, const uint8_t *a, const float *x)
{
	float *wv = malloc(sizeof(float) * (size_t)n), *av = malloc(sizeof(float) * (size_t)n);
	quant_dequantize_row(t, w, wv, (uint64_t)n);
	if (at == QT_F32)
		memcpy(av, x, sizeof(float) * (size_t)n);
	else
		quant_dequantize_row(at, a, av, (uint64_t)n);
	double s = 0;
	for (int64_t i = 0; i < n; i++)
		s += fabs((double)wv[i] * av[i]);
	free(wv);
	free(av);
	return s;
}

static void check(uint32_t t, int64_t cols, int nr, int64_t ntok, int random_bytes)
{
	uint32_t at = quant_vec_dot_type(t);
	size_t rs = quant_row_size(t, (uint64_t)cols, NULL);
	size_t ws = rs + 3; /* odd stride, unaligned rows */
	uint8_t *wbuf = malloc(ws * QG_ROWS + 1), *w = wbuf + 1;
	for (int r = 0; r < nr; r++)
		qu_make_row(t, w + r * ws, cols, random_bytes || (r % 3 == 2));
	float *x = malloc(sizeof(float) * (size_t)(cols * ntok));
	for (int64_t i = 0; i < cols * ntok; i++)
		x[i] = qu_normal() * (i % 97 == 5 ? 8.0f : 1.0f);
	/* a block of zeros (scale 0) in the fourth token */
	if (ntok > 3)
		memset(x + 3 * cols, 0, sizeof(float) * (size_t)(cols < 256 ? cols : 256));
	size_t as = quant_gemm_act_size(t, cols, ntok), ts = quant_gemm_tmp_size(t, cols);
	assert_true(as > 0 && ts > 0);
	uint8_t *act = malloc(as), *tmp = malloc(ts);
	memset(act, 0xA5, as); /* every byte a token uses is written by the packer */
	/* three ranges, as three threads would pack them */
	int64_t c1 = ntok / 3, c2 = 2 * ntok / 3;
	quant_gemm_pack_act(t, cols, x, ntok, 0, c1, act, tmp);
	quant_gemm_pack_act(t, cols, x, ntok, c2, ntok, act, tmp);
	quant_gemm_pack_act(t, cols, x, ntok, c1, c2, act, tmp);
	/* whole tiles are packed in registers, tokens of a tile shared between
	 * ranges one by one: both give the same bytes (one range of all the
	 * tokens against one range per token, over different garbage) */
	uint8_t *act1 = malloc(as), *act2 = malloc(as);
	memset(act1, 0x3C, as);
	memset(act2, 0xC3, as);
	quant_gemm_pack_act(t, cols, x, ntok, 0, ntok, act1, tmp);
	for (int64_t k = ntok - 1; k >= 0; k--)
		quant_gemm_pack_act(t, cols, x, ntok, k, k + 1, act2, tmp);
	if (memcmp(act1, act2, as) != 0 || memcmp(act1, act, as) != 0)
		fail_msg("%s cols %lld, %lld tokens: the packed activations depend on the ranges", quant_type_name(t),
			 (long long)cols, (long long)ntok);
	free(act1);
	free(act2);
	size_t ystride = (size_t)nr + 5;
	float *y = malloc(sizeof(float) * ystride * (size_t)ntok);
	for (size_t i = 0; i < ystride * (size_t)ntok; i++)
		y[i] = 12345.0f;
	memset(tmp, 0x5A, ts);
	quant_gemm_rows(t, cols, w, ws, nr, act, ntok, y, ystride, tmp);
	/* the same product in two steps (a panel stored at load time) gives
	 * the same bits and writes the same entries */
	size_t ps = quant_gemm_panel_size(t, cols);
	assert_true(ps > 0 && ps % 64 == 0);
	uint8_t *panel = aligned_alloc(64, ps);
	float *y2 = malloc(sizeof(float) * ystride * (size_t)ntok);
	for (size_t i = 0; i < ystride * (size_t)ntok; i++)
		y2[i] = 12345.0f;
	memset(tmp, 0x5A, ts);
	memset(panel, 0xA5, ps);
	quant_gemm_pack_panel(t, cols, w, ws, nr, panel, tmp);
	memset(tmp, 0x5A, ts);
	quant_gemm_rows_panel(t, cols, panel, nr, act, ntok, y2, ystride);
	if (memcmp(y, y2, sizeof(float) * ystride * (size_t)ntok) != 0)
		fail_msg("%s cols %lld, %d rows: stored panel differs from the per-call one", quant_type_name(t),
			 (long long)cols, nr);
	free(y2);
	free(panel);
	size_t ars = at == QT_F32 ? (size_t)cols * 4 : quant_row_size(at, (uint64_t)cols, NULL);
	uint8_t *a = malloc(ars);
	for (int64_t k = 0; k < ntok; k++) {
		if (at == QT_F32)
			memcpy(a, x + k * cols, ars);
		else
			quant_quantize_act(at, x + k * cols, a, (uint64_t)cols);
		for (int r = 0; r < (int)ystride; r++) {
			float got = y[k * (int64_t)ystride + r];
			if (r >= nr) {
				if (got != 12345.0f)
					fail_msg("%s: wrote past row %d (y[%lld][%d])", quant_type_name(t), nr, (long long)k, r);
				continue;
			}
			float ref = quant_dot_ref(t, cols, w + r * ws, a);
			double tol = 2e-5 * abs_dot(t, at, cols, w + r * ws, a, x + k * cols) + 1e-6;
			if (!(fabs((double)got - ref) <= tol))
				fail_msg("%s cols %lld, %d rows, %lld tokens: y[%lld][%d] = %.7g, reference %.7g (tol %.3g)",
					 quant_type_name(t), (long long)cols, nr, (long long)ntok, (long long)k, r,
					 (double)got, (double)ref, tol);
		}
	}
	free(a);
	free(y);
	free(act);
	free(tmp);
	free(x);
	free(wbuf);
}

static int n_types_checked;

static void test_gemm_types(void **state)
{
	(void)state;
	n_types_checked = 0;
	for (uint32_t t = 0; t < QT_COUNT; t++) {
		/* the float types have their own test (test_gemmf.c) */
		if (!quant_gemm_ok(t) || quant_type_info(t)->blck == 1)
			continue;
		n_types_checked++;
		const struct quant_type_info *ti = quant_type_info(t);
		int64_t cols = ti->blck >= 256 ? 768 : 224;
		qu_seed(t * 7 + 1);
		for (int nr = 1; nr <= QG_ROWS; nr += (nr < 3 ? 1 : 4))
			check(t, cols, nr, 13, 0);
		check(t, cols, QG_ROWS, 8, 0);
		check(t, cols, 16, 1, 1);
		check(t, cols, 7, 24, 1);
		check(t, ti->blck >= 256 ? 256 : 64, 16, 9, 0);
	}
	if (quant_cpu()->avx512vnni && quant_isa() == QUANT_ISA_AVX512 && n_types_checked < 21)
		fail_msg("only %d types have a GEMM kernel on this AVX-512 VNNI CPU", n_types_checked);
	if (!n_types_checked)
		printf("  (no GEMM kernel on this CPU: %s)\n", quant_isa_name(quant_isa()));
}

/* without AVX-512 nothing is offered, so callers keep the tile path */
static void test_gemm_scalar_isa(void **state)
{
	(void)state;
	assert_int_equal(quant_cpu_force("scalar"), 0);
	for (uint32_t t = 0; t < QT_COUNT; t++)
		assert_false(quant_gemm_ok(t));
	assert_int_equal(quant_gemm_act_size(QT_Q4_0, 256, 8), 0);
	quant_cpu_force("auto");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_gemm_types),
		cmocka_unit_test(test_gemm_scalar_isa),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
