/* test_gemmf.c - the AVX-512 panel GEMM for float weights (F32, F16, BF16,
 * quant/gemmf_avx512.c) against a double-precision reference: odd row
 * counts, token counts off the tile, odd and short rows, unaligned weights,
 * activations and buffers, and activations packed in several ranges.
 *
 * F32 / F16 weights meet f32 activations; BF16 weights meet activations
 * rounded to bf16 (nearest even), so BF16 is checked tightly against the
 * bf16-rounded reference and loosely against the f32 one. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <cmocka.h>

#include "quant/cpu.h"
#include "quant/gemm.h"
#include "quant/qimpl.h"
#include "quant/quant.h"
#include "tests/quant_util.h"

#if defined(__x86_64__)
static const float SENTINEL = 12345.0f;

static float bf16_round(float f) { return qbits_f32((uint32_t)quant_f32_to_bf16(f) << 16); }

static float weight(uint32_t t, const uint8_t *row, int64_t k)
{
	switch (t) {
	case QT_F32: return qrdf32(row + 4 * k);
	case QT_F16: return qrdfp16(row + 2 * k);
	default: return qbits_f32((uint32_t)qrd16(row + 2 * k) << 16);
	}
}

/* Pack tokens [0, ntok) in a few ranges, in reverse order. */
static void pack_split(const struct quant_gemm_ops *o, uint32_t t, int64_t cols, const float *x, int64_t ntok,
		       void *act, void *tmp)
{
	int64_t cut[5] = {0, ntok / 3, ntok / 3 + 1, ntok - ntok / 4, ntok};
	for (int i = 3; i >= 0; i--)
		if (cut[i + 1] > cut[i])
			o->pack_act(t, cols, x, ntok, cut[i], cut[i + 1], act, tmp);
}

static void check(uint32_t t, int64_t cols, int64_t ntok, int nr)
{
	const struct quant_gemm_ops *o = &quant_gemm_float_avx512;
	size_t rs = quant_row_size(t, (uint64_t)cols, NULL);
	size_t wstride = rs + 3;
	uint8_t *wbuf = malloc(wstride * (size_t)nr + 1), *w = wbuf + 1;
	float *xbuf = malloc(sizeof(float) * (size_t)(cols * ntok + 1)), *x = xbuf + 1;
	size_t as = o->act_size(t, cols, ntok), ts = o->tmp_size(t, cols);
	/* the two act buffers sit at the same offset from a 64-byte boundary */
	size_t abytes = (as + 3 + 63) / 64 * 64;
	uint8_t *abuf = aligned_alloc(64, abytes), *a1buf = aligned_alloc(64, abytes), *tbuf = malloc(ts + 5);
	size_t ystride = (size_t)nr + 3;
	float *y = malloc(sizeof(float) * ystride * (size_t)(ntok + 1));

	qu_seed((uint64_t)(t * 1000003 + cols * 131 + ntok * 17 + nr));
	for (int r = 0; r < nr; r++)
		qu_random_row(t, w + r * wstride, cols);
	for (int64_t i = 0; i < cols * ntok; i++) {
		float v = qu_normal();
		memcpy(x + i, &v, 4);
	}
	/* two packings over different garbage, in ranges and in one call: every
	 * byte of the packed tiles (from the first 64-byte boundary, act_size
	 * less its 64 bytes of alignment slack), padding included, is written */
	memset(abuf, 0xA5, abytes);
	memset(a1buf, 0x5A, abytes);
	pack_split(o, t, cols, x, ntok, abuf + 3, tbuf + 5);
	o->pack_act(t, cols, x, ntok, 0, ntok, a1buf + 3, tbuf + 5);
	if (memcmp(abuf + 64, a1buf + 64, as - 64) != 0)
		fail_msg("%s cols %lld ntok %lld: packing in ranges differs from one call", quant_type_name(t),
			 (long long)cols, (long long)ntok);
	for (size_t i = 0; i < ystride * (size_t)(ntok + 1); i++)
		y[i] = SENTINEL;
	memset(tbuf, 0x5A, ts + 5);
	o->rows(t, cols, w, wstride, nr, abuf + 3, ntok, y, ystride, tbuf + 5);
	/* a panel stored once (load-time repack) gives the same bits */
	size_t ps = o->panel_size(t, cols);
	float *panel = aligned_alloc(64, ps), *y2 = malloc(sizeof(float) * ystride * (size_t)(ntok + 1));
	for (size_t i = 0; i < ystride * (size_t)(ntok + 1); i++)
		y2[i] = SENTINEL;
	memset(panel, 0xA5, ps);
	o->pack_panel(t, cols, w, wstride, nr, panel, tbuf + 5);
	o->rows_panel(t, cols, panel, nr, abuf + 3, ntok, y2, ystride);
	if (memcmp(y, y2, sizeof(float) * ystride * (size_t)(ntok + 1)) != 0)
		fail_msg("%s cols %lld nr %d: stored panel differs", quant_type_name(t), (long long)cols, nr);
	free(panel);
	free(y2);

	for (int64_t tok = 0; tok < ntok; tok++) {
		for (int r = 0; r < nr; r++) {
			double ref = 0, sabs = 0, ref32 = 0, sabs32 = 0;
			for (int64_t k = 0; k < cols; k++) {
				double wk = weight(t, w + r * wstride, k);
				float xk = x[tok * cols + k];
				double ak = t == QT_BF16 ? bf16_round(xk) : xk;
				ref += wk * ak;
				sabs += fabs(wk * ak);
				ref32 += wk * xk;
				sabs32 += fabs(wk * xk);
			}
			double got = y[(size_t)tok * ystride + (size_t)r];
			if (!(fabs(got - ref) <= 1e-5 * sabs + 1e-30))
				fail_msg("%s cols %lld ntok %lld nr %d: y[%lld][%d] = %.9g, reference %.9g",
					 quant_type_name(t), (long long)cols, (long long)ntok, nr, (long long)tok, r,
					 got, ref);
			if (!(fabs(got - ref32) <= 0x1p-8 * sabs32 + 1e-5 * sabs))
				fail_msg("%s cols %lld ntok %lld nr %d: y[%lld][%d] = %.9g, f32 reference %.9g",
					 quant_type_name(t), (long long)cols, (long long)ntok, nr, (long long)tok, r,
					 got, ref32);
		}
		for (size_t r = (size_t)nr; r < ystride; r++)
			if (y[(size_t)tok * ystride + r] != SENTINEL)
				fail_msg("%s nr %d: y[%lld][%zu] written", quant_type_name(t), nr, (long long)tok, r);
	}
	for (size_t i = 0; i < ystride; i++)
		if (y[(size_t)ntok * ystride + i] != SENTINEL)
			fail_msg("%s ntok %lld: token %lld written", quant_type_name(t), (long long)ntok,
				 (long long)ntok);
	free(wbuf);
	free(xbuf);
	free(abuf);
	free(a1buf);
	free(tbuf);
	free(y);
}

static const uint32_t float_types[] = {QT_F32, QT_F16, QT_BF16};

static bool have_avx512(void) { return quant_isa() == QUANT_ISA_AVX512; }

static void test_ok(void **state)
{
	(void)state;
	if (!have_avx512())
		skip();
	const struct quant_gemm_ops *o = &quant_gemm_float_avx512;
	assert_true(o->ok(QT_F32));
	assert_true(o->ok(QT_F16));
	assert_int_equal(o->ok(QT_BF16), quant_cpu()->avx512bf16);
	assert_false(o->ok(QT_Q4_0));
	assert_false(o->ok(QT_Q8_0));
	assert_false(o->ok(QT_COUNT));
}

static void test_shapes(void **state)
{
	(void)state;
	if (!have_avx512())
		skip();
	static const int64_t cols[] = {1, 2, 3, 15, 16, 17, 31, 32, 33, 100, 257};
	static const int64_t ntoks[] = {1, 3, 7, 15, 16, 17, 22, 33, 67};
	int n = 0;
	for (size_t i = 0; i < sizeof float_types / sizeof *float_types; i++) {
		if (!quant_gemm_float_avx512.ok(float_types[i]))
			continue;
		for (size_t c = 0; c < sizeof cols / sizeof *cols; c++)
			for (size_t k = 0; k < sizeof ntoks / sizeof *ntoks; k++) {
				check(float_types[i], cols[c], ntoks[k], 16);
				check(float_types[i], cols[c], ntoks[k], 1 + n++ % 15);
			}
	}
}

/* Every row count on a longer row (several k blocks and a tail). */
static void test_row_counts(void **state)
{
	(void)state;
	if (!have_avx512())
		skip();
	for (size_t i = 0; i < sizeof float_types / sizeof *float_types; i++) {
		if (!quant_gemm_float_avx512.ok(float_types[i]))
			continue;
		for (int nr = 1; nr <= QG_ROWS; nr++)
			check(float_types[i], 1001, 19, nr);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ok),
		cmocka_unit_test(test_shapes),
		cmocka_unit_test(test_row_counts),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
#else
int main(void) { return 0; }
#endif
