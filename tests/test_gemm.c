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

/* ---- the panel layout, byte for byte -------------------------------------
 * The panels of the types that matter most for prefill, built here by plain
 * loops from the layout gemm_avx512.c documents, must equal what the SIMD
 * conversion writes: vals (16 rows interleaved 4 bytes at a time, 64 bytes
 * per group of 4 k), then a float scale per G elements of each row (and a
 * float min). Levels: Q4_0 / Q4_1 keep the file's nibble bytes (a 32 block
 * is 4 chunks: chunk e holds bytes 4e..4e+3 of the 16 qs bytes), Q4_K its
 * nibble bytes per 64 elements (8 chunks of the 32 qs bytes), Q8_0 its
 * signed bytes (8 chunks), Q6_K one byte per element (ql | qh << 4, 8
 * chunks of 4 consecutive elements per 32). */

static float f16(const uint8_t *p) { return quant_fp16_to_f32((uint16_t)(p[0] | p[1] << 8)); }

/* Q4_K: the 6-bit scale and min of sub-block j */
static void k4_sm(const uint8_t *q, int j, int *sc, int *mn)
{
	if (j < 4) {
		*sc = q[j] & 63;
		*mn = q[j + 4] & 63;
	} else {
		*sc = (q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4);
		*mn = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
	}
}

/* the panel of rows w (nr of them, ws apart; the rest zero) as documented */
static void ref_panel(uint32_t t, int64_t cols, const uint8_t *w, size_t ws, int nr, uint8_t *p, size_t ps)
{
	memset(p, 0, ps);
	int lay4 = t == QT_Q4_0 || t == QT_Q4_1 || t == QT_Q4_K;
	int g = t == QT_Q6_K ? 16 : 32, asym = t == QT_Q4_1 || t == QT_Q4_K;
	float *sc = (float *)(p + (size_t)cols * QG_ROWS / (lay4 ? 2 : 1));
	float *mn = sc + (cols / g) * QG_ROWS;
	for (int r = 0; r < nr; r++) {
		const uint8_t *row = w + (size_t)r * ws;
		for (int64_t k = 0; k < cols; k++) {
			/* byte of the panel's vals holding element k of row r, and its
			 * value */
			size_t at;
			uint8_t v;
			if (t == QT_Q4_0 || t == QT_Q4_1) {
				const uint8_t *b = row + (k / 32) * (t == QT_Q4_0 ? 18 : 20) + (t == QT_Q4_0 ? 2 : 4);
				int i = (int)(k % 16); /* elements i and i + 16 share byte i */
				at = (size_t)(k / 32) * 256 + (size_t)(i / 4) * 64 + (size_t)r * 4 + i % 4;
				v = b[i];
			} else if (t == QT_Q8_0) {
				int i = (int)(k % 32);
				at = (size_t)(k / 32) * 512 + (size_t)(i / 4) * 64 + (size_t)r * 4 + i % 4;
				v = row[(k / 32) * 34 + 2 + i];
			} else if (t == QT_Q4_K) {
				const uint8_t *b = row + (k / 256) * 144 + 16 + ((k % 256) / 64) * 32;
				int i = (int)(k % 32); /* elements i and i + 32 of the 64 share byte i */
				at = (size_t)(k / 64) * 512 + (size_t)(i / 4) * 64 + (size_t)r * 4 + i % 4;
				v = b[i];
			} else { /* Q6_K */
				const uint8_t *b = row + (k / 256) * 210;
				int l = (int)(k % 256), n = l / 128, q = (l % 128) / 32, i = l % 32;
				uint8_t lo = b[64 * n + 32 * (q & 1) + i], hi = b[128 + 32 * n + i];
				v = (uint8_t)(((q < 2 ? lo : lo >> 4) & 0xF) | ((hi >> (2 * q)) & 3) << 4);
				at = (size_t)(k / 32) * 512 + (size_t)((k % 32) / 4) * 64 + (size_t)r * 4 + k % 4;
			}
			p[at] = v;
		}
		for (int64_t j = 0; j < cols / g; j++) {
			size_t o = (size_t)j * QG_ROWS + (size_t)r;
			if (t == QT_Q4_0 || t == QT_Q8_0) {
				sc[o] = f16(row + j * (t == QT_Q4_0 ? 18 : 34));
			} else if (t == QT_Q4_1) {
				sc[o] = f16(row + j * 20);
				mn[o] = f16(row + j * 20 + 2);
			} else if (t == QT_Q4_K) {
				const uint8_t *b = row + (j / 8) * 144;
				int s6, m6;
				k4_sm(b + 4, (int)(j % 8), &s6, &m6);
				sc[o] = f16(b) * (float)s6;
				mn[o] = -f16(b + 2) * (float)m6;
			} else {
				const uint8_t *b = row + (j / 16) * 210;
				sc[o] = f16(b + 208) * (float)(int8_t)b[192 + j % 16];
			}
		}
	}
	(void)asym;
}

static void test_gemm_panel_layout(void **state)
{
	(void)state;
	static const uint32_t types[] = {QT_Q4_0, QT_Q4_1, QT_Q8_0, QT_Q4_K, QT_Q6_K};
	for (size_t ti = 0; ti < sizeof types / sizeof *types; ti++) {
		uint32_t t = types[ti];
		if (!quant_gemm_ok(t))
			continue;
		int64_t cols = 512;
		size_t rs = quant_row_size(t, (uint64_t)cols, NULL), ws = rs + 5;
		uint8_t *w = malloc(ws * QG_ROWS), *tmp = malloc(quant_gemm_tmp_size(t, cols));
		qu_seed(t + 11);
		for (int r = 0; r < QG_ROWS; r++)
			qu_make_row(t, w + r * ws, cols, r % 2);
		size_t ps = quant_gemm_panel_size(t, cols);
		uint8_t *got = aligned_alloc(64, ps), *want = malloc(ps);
		for (int nr = 1; nr <= QG_ROWS; nr += 5) {
			memset(got, 0xA5, ps);
			quant_gemm_pack_panel(t, cols, w, ws, nr, got, tmp);
			ref_panel(t, cols, w, ws, nr, want, ps);
			for (size_t i = 0; i < ps; i++)
				if (got[i] != want[i])
					fail_msg("%s, %d rows: panel byte %zu is %02x, the layout says %02x", quant_type_name(t), nr,
						 i, got[i], want[i]);
		}
		free(got);
		free(want);
		free(tmp);
		free(w);
	}
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
		cmocka_unit_test(test_gemm_panel_layout),
		cmocka_unit_test(test_gemm_scalar_isa),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
