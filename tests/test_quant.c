/* test_quant.c - the GGML block formats: decoding against an independent
 * implementation (tests/quant_ref/, made by scripts/gen_quant_ref.py with the
 * gguf Python package), the reference quantizers bit for bit against the
 * same package (scripts/gen_quantize_ref.py), round-trip error budgets, every SIMD dot kernel
 * against the scalar reference, and quantized dots against float dots. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <cmocka.h>

#include "quant/cpu.h"
#include "lib/core/error.h"
#include "quant/quant.h"
#include "tests/quant_util.h"

static const uint32_t all_types[] = {
	QT_F32, QT_F16, QT_BF16, QT_Q4_0, QT_Q4_1, QT_Q5_0, QT_Q5_1, QT_Q8_0, QT_Q8_1,
	QT_Q2_K, QT_Q3_K, QT_Q4_K, QT_Q5_K, QT_Q6_K, QT_Q8_K, QT_IQ2_XXS, QT_IQ2_XS,
	QT_IQ2_S, QT_IQ3_XXS, QT_IQ3_S, QT_IQ1_S, QT_IQ1_M, QT_IQ4_NL, QT_IQ4_XS,
	QT_TQ1_0, QT_TQ2_0, QT_MXFP4,
};
#define N_TYPES (sizeof all_types / sizeof all_types[0])

static int tolower_ascii(int c) { return c >= 'A' && c <= 'Z' ? c + 32 : c; }

static const char *ref_dir(void)
{
	const char *d = getenv("TERN_QUANT_REF");
	return d && *d ? d : "tests/quant_ref";
}

static void *read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fseek(f, 0, SEEK_SET);
	void *buf = malloc((size_t)n + 1);
	if (fread(buf, 1, (size_t)n, f) != (size_t)n) {
		free(buf);
		buf = NULL;
	}
	fclose(f);
	*len = (size_t)n;
	return buf;
}

/* Every type decodes to exactly the floats the gguf package computed. */
static void test_dequantize_matches_gguf_py(void **state)
{
	(void)state;
	for (size_t k = 0; k < N_TYPES; k++) {
		uint32_t t = all_types[k];
		const struct quant_type_info *ti = quant_type_info(t);
		char path[512];
		snprintf(path, sizeof path, "%s/%s.bin", ref_dir(), ti->name);
		for (char *c = path + strlen(ref_dir()); *c; c++)
			*c = (char)tolower_ascii(*c);
		size_t len = 0;
		uint8_t *data = read_file(path, &len);
		if (!data)
			fail_msg("cannot read %s", path);
		size_t per = ti->size + 4 * (size_t)ti->blck;
		assert_int_equal(len % per, 0);
		size_t nb = len / per;
		assert_true(nb > 0);
		uint64_t n = nb * ti->blck;
		/* decode from an odd address: rows of a mapping need not be aligned */
		uint8_t *src = malloc(nb * ti->size + 1);
		memcpy(src + 1, data, nb * ti->size);
		float *got = malloc(n * sizeof *got);
		assert_int_equal(quant_dequantize_row(t, src + 1, got, n), 0);
		const uint8_t *want = data + nb * ti->size;
		for (uint64_t i = 0; i < n; i++) {
			uint32_t a, b;
			memcpy(&a, got + i, 4);
			memcpy(&b, want + 4 * i, 4);
			if (a != b) {
				float wf;
				memcpy(&wf, &b, 4);
				fail_msg("%s: element %llu (block %llu): got %.9g (0x%08x), gguf-py %.9g (0x%08x)",
					 ti->name, (unsigned long long)i, (unsigned long long)(i / ti->blck),
					 (double)got[i], a, (double)wf, b);
			}
		}
		free(got);
		free(src);
		free(data);
	}
}

/* ggml's measure of round-trip error: sqrt(sum of squared errors) / n. */
static double total_error(const float *a, const float *b, int n)
{
	double s = 0;
	for (int i = 0; i < n; i++)
		s += ((double)a[i] - b[i]) * ((double)a[i] - b[i]);
	return sqrt(s) / n;
}

static double roundtrip_budget(uint32_t t)
{
	switch (t) {
	case QT_Q2_K: return 0.0075;
	case QT_Q3_K: return 0.0040;
	case QT_TQ1_0: case QT_TQ2_0: return 0.01;
	}
	return 0.002;
}

/* The reference quantizers encode exactly the bytes gguf-py's quantizers
 * do (tests/quant_ref/quantize_*.bin, made by scripts/gen_quantize_ref.py)
 * on rows full of ties, zeros, equal values, extreme magnitudes. Every
 * type gguf-py can quantize is covered. */
static void test_quantize_matches_gguf_py(void **state)
{
	(void)state;
	static const uint32_t types[] = {QT_F16, QT_BF16, QT_Q4_0, QT_Q4_1, QT_Q5_0, QT_Q5_1,
					 QT_Q8_0, QT_TQ1_0, QT_TQ2_0, QT_MXFP4};
	int bad_blocks = 0;
	for (size_t k = 0; k < sizeof types / sizeof types[0]; k++) {
		uint32_t t = types[k];
		const struct quant_type_info *ti = quant_type_info(t);
		char path[512];
		snprintf(path, sizeof path, "%s/quantize_%s.bin", ref_dir(), ti->name);
		for (char *c = path + strlen(ref_dir()); *c; c++)
			*c = (char)tolower_ascii(*c);
		size_t len;
		uint8_t *buf = read_file(path, &len);
		if (!buf)
			fail_msg("cannot read %s (run scripts/gen_quantize_ref.py)", path);
		uint32_t id, n;
		memcpy(&id, buf, 4);
		memcpy(&n, buf + 4, 4);
		assert_int_equal(id, t);
		size_t row = quant_row_size(t, n, NULL);
		assert_int_equal(len, 8 + (size_t)n * 4 + row);
		float *x = malloc((size_t)n * sizeof *x);
		uint8_t *q = malloc(row);
		memcpy(x, buf + 8, (size_t)n * 4);
		assert_int_equal(quant_quantize_row(t, x, q, n), 0);
		const uint8_t *want = buf + 8 + (size_t)n * 4;
		uint32_t bl = ti->blck == 1 ? 32 : ti->blck;
		size_t bsize = quant_row_size(t, bl, NULL);
		for (uint32_t b = 0; b < n / bl; b++) {
			if (memcmp(q + b * bsize, want + b * bsize, bsize) == 0)
				continue;
			if (bad_blocks++ < 20) {
				size_t i = 0;
				while (q[b * bsize + i] == want[b * bsize + i])
					i++;
				print_error("%s block %u: byte %zu is 0x%02x, gguf-py 0x%02x (x[0] = %g)\n", ti->name, b,
					    i, q[b * bsize + i], want[b * bsize + i], (double)x[b * bl]);
			}
		}
		free(x);
		free(q);
		free(buf);
	}
	assert_int_equal(bad_blocks, 0);
}

static void test_roundtrip_error(void **state)
{
	(void)state;
	enum { N = 4096 };
	static float x[N], y[N];
	static uint8_t buf[N * 4 + 64];
	int tested = 0;
	for (size_t k = 0; k < N_TYPES; k++) {
		uint32_t t = all_types[k];
		if (!quant_can_quantize(t))
			continue;
		for (int off = 0; off < 3; off++) {
			for (int i = 0; i < N; i++)
				x[i] = 0.1f + 2 * cosf((float)i + (float)off * 0.37f);
			assert_int_equal(quant_quantize_row(t, x, buf, N), 0);
			assert_int_equal(quant_dequantize_row(t, buf, y, N), 0);
			double e = total_error(x, y, N);
			if (e > roundtrip_budget(t))
				fail_msg("%s: round-trip error %.6f over budget %.4f", quant_type_name(t), e,
					 roundtrip_budget(t));
			/* a quantizer that ignores its input must not pass */
			assert_true(e > 0 || t == QT_F32);
		}
		tested++;
	}
	assert_true(tested >= 19);
}

/* Zero and constant blocks quantize without NaN. */
static void test_quantize_degenerate(void **state)
{
	(void)state;
	enum { N = 512 };
	float x[N], y[N];
	uint8_t buf[N * 4];
	for (size_t k = 0; k < N_TYPES; k++) {
		uint32_t t = all_types[k];
		if (!quant_can_quantize(t))
			continue;
		for (int c = 0; c < 2; c++) {
			for (int i = 0; i < N; i++)
				x[i] = c ? 0.75f : 0.0f;
			assert_int_equal(quant_quantize_row(t, x, buf, N), 0);
			assert_int_equal(quant_dequantize_row(t, buf, y, N), 0);
			for (int i = 0; i < N; i++)
				if (!isfinite(y[i]) || fabsf(y[i] - x[i]) > 0.1f)
					fail_msg("%s: constant %g decodes to %g at %d", quant_type_name(t), (double)x[i],
						 (double)y[i], i);
		}
	}
}

static void test_fp16_conversion(void **state)
{
	(void)state;
	/* every fp16 value round-trips through f32 */
	for (uint32_t h = 0; h < 0x10000; h++) {
		float f = quant_fp16_to_f32((uint16_t)h);
		if (isnan(f))
			continue;
		assert_int_equal(quant_f32_to_fp16(f), h);
	}
	assert_int_equal(quant_f32_to_fp16(65520.f), 0x7c00); /* rounds to inf */
	assert_int_equal(quant_f32_to_fp16(1.0f + 0x1.0p-11f), 0x3c00); /* tie to even */
	assert_int_equal(quant_f32_to_fp16(1.0f + 0x1.8p-11f), 0x3c01);
	assert_int_equal(quant_f32_to_bf16(1.0f + 0x1.0p-8f), 0x3f80);
	assert_true(isnan(quant_fp16_to_f32(quant_f32_to_fp16(NAN))));
}

/* Types that have a dot kernel in some SIMD ISA. */
static int n_blocks_list[] = {1, 3, 7, 33};

static int supported(enum quant_isa isa)
{
	if (quant_cpu_force(quant_isa_name(isa)) != 0)
		return 0;
	quant_cpu_force("auto");
	return 1;
}

static void test_simd_dot_matches_scalar(void **state)
{
	(void)state;
	int checked = 0;
	for (int isa = QUANT_ISA_AVX2; isa <= QUANT_ISA_NEON; isa++) {
		if (!supported((enum quant_isa)isa))
			continue;
		for (size_t k = 0; k < N_TYPES; k++) {
			uint32_t t = all_types[k];
			quant_dot_fn f = quant_dot_kernel(t, isa);
			if (!f)
				continue;
			uint32_t at = quant_vec_dot_type(t);
			int64_t blk = quant_type_info(t)->blck > quant_type_info(at)->blck ? quant_type_info(t)->blck
											   : quant_type_info(at)->blck;
			if (blk < 32)
				blk = 32;
			for (size_t li = 0; li < sizeof n_blocks_list / sizeof *n_blocks_list; li++) {
				for (int rnd = 0; rnd < 2; rnd++) {
					int64_t n = blk * n_blocks_list[li] + (quant_type_info(t)->blck == 1 ? 5 : 0);
					qu_seed((uint64_t)(t * 100 + li * 10 + rnd));
					size_t wb = quant_row_size(t, (uint64_t)n, NULL), ab = quant_row_size(at, (uint64_t)n, NULL);
					uint8_t *w = malloc(wb + 3), *a = malloc(ab + 5);
					float *x = malloc((size_t)n * sizeof *x), *wf = malloc((size_t)n * sizeof *wf);
					qu_make_row(t, w + 3, n, rnd);
					for (int64_t i = 0; i < n; i++)
						x[i] = qu_normal();
					assert_int_equal(quant_quantize_row(at, x, a + 5, (uint64_t)n), 0);
					float ref = quant_dot_ref(t, n, w + 3, a + 5);
					float got = f(n, w + 3, a + 5);
					/* scale of the sum for the tolerance: sum of |w_i a_i| */
					quant_dequantize_row(t, w + 3, wf, (uint64_t)n);
					quant_dequantize_row(at, a + 5, x, (uint64_t)n);
					double mag = 0;
					for (int64_t i = 0; i < n; i++)
						mag += fabs((double)wf[i] * x[i]);
					double tol = 1e-4 * fabs(ref) + 1e-6 * mag;
					if (!(fabs((double)got - ref) <= tol))
						fail_msg("%s %s n=%lld rnd=%d: simd %.9g scalar %.9g (tol %.3g)",
							 quant_isa_name((enum quant_isa)isa), quant_type_name(t), (long long)n, rnd,
							 (double)got, (double)ref, tol);
					checked++;
					free(w);
					free(a);
					free(x);
					free(wf);
				}
			}
		}
	}
	print_message("simd dot checks: %d\n", checked);
#if defined(__x86_64__)
	if (supported(QUANT_ISA_AVX2))
		assert_true(checked > 0);
#endif
}

/* Tile kernels (several rows x several tokens at once) give the dot
 * kernel's results, edges included. */
static void test_dot_tile_matches_dot(void **state)
{
	(void)state;
	const uint32_t types[] = {QT_Q4_0, QT_Q5_0, QT_Q8_0, QT_IQ4_NL, QT_Q4_K, QT_Q5_K, QT_Q6_K, QT_Q2_K, QT_Q3_K,
				  QT_IQ4_XS, QT_Q4_1, QT_Q5_1, QT_F16, QT_F32, QT_BF16, QT_IQ2_XXS, QT_IQ3_XXS};
	int checked = 0;
	for (int isa = QUANT_ISA_SCALAR; isa <= QUANT_ISA_NEON; isa++) {
		if (quant_cpu_force(quant_isa_name((enum quant_isa)isa)) != 0)
			continue;
		for (size_t k = 0; k < sizeof types / sizeof *types; k++) {
			uint32_t t = types[k], at = quant_vec_dot_type(t);
			int64_t n = quant_type_info(t)->blck == QK_K ? 3 * QK_K : 7 * 32;
			int nr = 11, nc = 9;
			size_t ws = quant_row_size(t, (uint64_t)n, NULL) + 3;
			size_t as = (at == QT_F32 ? (size_t)n * 4 : quant_row_size(at, (uint64_t)n, NULL)) + 5;
			uint8_t *w = malloc(ws * (size_t)nr + 1), *a = malloc(as * (size_t)nc + 1);
			float *x = malloc((size_t)n * sizeof *x), out[9 * 13];
			qu_seed(t * 7 + (uint64_t)isa);
			for (int r = 0; r < nr; r++)
				qu_make_row(t, w + 1 + (size_t)r * ws, n, r & 1);
			for (int c = 0; c < nc; c++) {
				for (int64_t i = 0; i < n; i++)
					x[i] = qu_normal();
				if (at == QT_F32)
					memcpy(a + 1 + (size_t)c * as, x, (size_t)n * 4);
				else
					quant_quantize_row(at, x, a + 1 + (size_t)c * as, (uint64_t)n);
			}
			quant_dot_tile(t, n, w + 1, ws, nr, a + 1, as, nc, out, 13);
			for (int c = 0; c < nc; c++)
				for (int r = 0; r < nr; r++) {
					float want = quant_dot(t, n, w + 1 + (size_t)r * ws, a + 1 + (size_t)c * as);
					float got = out[c * 13 + r];
					if (!(fabsf(got - want) <= 1e-4f * (fabsf(want) + 1)))
						fail_msg("%s %s tile[%d][%d] = %g, dot %g", quant_isa_name((enum quant_isa)isa),
							 quant_type_name(t), r, c, (double)got, (double)want);
					checked++;
				}
			free(w);
			free(a);
			free(x);
		}
	}
	quant_cpu_force("auto");
	assert_true(checked > 0);
}

/* Mat-vec (one activation row, the way the thread pool calls the tile
 * kernels for one token) matches the scalar reference: row counts that are
 * not a multiple of the kernels' row groups, lengths with partial groups of
 * blocks and more than one run of prepared activations, unaligned rows. */
static void test_matvec_matches_scalar(void **state)
{
	(void)state;
	const uint32_t types[] = {QT_Q4_0, QT_Q5_0, QT_Q8_0, QT_IQ4_NL, QT_Q4_1, QT_Q5_1, QT_Q4_K, QT_Q5_K, QT_Q6_K};
	const int nblk[] = {1, 3, 4, 5, 8, 13, 300};
	int checked = 0;
	for (int isa = QUANT_ISA_SCALAR; isa <= QUANT_ISA_NEON; isa++) {
		if (quant_cpu_force(quant_isa_name((enum quant_isa)isa)) != 0)
			continue;
		for (size_t k = 0; k < sizeof types / sizeof *types; k++) {
			uint32_t t = types[k], at = quant_vec_dot_type(t);
			int64_t blk = quant_type_info(t)->blck;
			for (size_t li = 0; li < sizeof nblk / sizeof *nblk; li++) {
				int64_t n = blk * (blk == QK_K ? nblk[li] % 40 : nblk[li]);
				int nr = li == sizeof nblk / sizeof *nblk - 1 ? 6 : 19;
				size_t ws = quant_row_size(t, (uint64_t)n, NULL) + 3, as = quant_row_size(at, (uint64_t)n, NULL);
				uint8_t *w = malloc(ws * (size_t)nr + 1), *a = malloc(as + 1);
				float *x = malloc((size_t)n * sizeof *x), *wf = malloc((size_t)n * sizeof *wf);
				float out[19];
				qu_seed(t * 31 + li + 1000u * (unsigned)isa);
				for (int r = 0; r < nr; r++)
					qu_make_row(t, w + 1 + (size_t)r * ws, n, r & 1);
				for (int64_t i = 0; i < n; i++)
					x[i] = qu_normal();
				assert_int_equal(quant_quantize_row(at, x, a + 1, (uint64_t)n), 0);
				quant_dequantize_row(at, a + 1, x, (uint64_t)n);
				for (int r0 = 0; r0 < nr; r0 += 16) {
					int cnt = nr - r0 < 16 ? nr - r0 : 16;
					quant_dot_tile(t, n, w + 1 + (size_t)r0 * ws, ws, cnt, a + 1, as, 1, out + r0, 1);
				}
				for (int r = 0; r < nr; r++) {
					const uint8_t *wr = w + 1 + (size_t)r * ws;
					float ref = quant_dot_ref(t, n, wr, a + 1);
					quant_dequantize_row(t, wr, wf, (uint64_t)n);
					double mag = 0;
					for (int64_t i = 0; i < n; i++)
						mag += fabs((double)wf[i] * x[i]);
					double tol = 1e-4 * fabs(ref) + 1e-6 * mag;
					if (!(fabs((double)out[r] - ref) <= tol))
						fail_msg("%s %s n=%lld row %d of %d: mat-vec %.9g scalar %.9g (tol %.3g)",
							 quant_isa_name((enum quant_isa)isa), quant_type_name(t), (long long)n, r,
							 nr, (double)out[r], (double)ref, tol);
					checked++;
				}
				free(w);
				free(a);
				free(x);
				free(wf);
			}
		}
	}
	quant_cpu_force("auto");
	print_message("mat-vec checks: %d\n", checked);
	assert_true(checked > 0);
}

/* The SIMD activation quantizers agree with the reference to one level, and
 * Q8_K block sums and Q8_1's s = d * sum match the stored codes. */
static void test_simd_quantize_act(void **state)
{
	(void)state;
	enum { N = 2048 };
	static float x[N], y0[N], y1[N];
	static uint8_t r[N * 2], q[N * 2];
	const uint32_t ats[] = {QT_Q8_0, QT_Q8_K, QT_Q8_1};
	for (int isa = QUANT_ISA_SCALAR; isa <= QUANT_ISA_NEON; isa++) {
		if (quant_cpu_force(quant_isa_name((enum quant_isa)isa)) != 0)
			continue;
		for (size_t k = 0; k < sizeof ats / sizeof ats[0]; k++) {
			uint32_t at = ats[k];
			qu_seed(at + 1000u * (unsigned)isa);
			for (int i = 0; i < N; i++)
				x[i] = qu_normal() * (i % 256 < 32 ? 0.0f : 1.0f) * (i % 512 < 256 ? 1.0f : 100.0f);
			assert_int_equal(quant_quantize_row(at, x, r, N), 0);
			assert_int_equal(quant_quantize_act(at, x, q, N), 0);
			quant_dequantize_row(at, r, y0, N);
			quant_dequantize_row(at, q, y1, N);
			int blk = (int)quant_type_info(at)->blck;
			for (int i = 0; i < N; i++) {
				float amax = 0;
				for (int j = i / blk * blk; j < i / blk * blk + blk; j++)
					amax = fmaxf(amax, fabsf(x[j]));
				if (fabsf(y0[i] - y1[i]) > amax / 127 * 1.01f)
					fail_msg("%s %s: element %d: %g vs reference %g", quant_isa_name((enum quant_isa)isa),
						 quant_type_name(at), i, (double)y1[i], (double)y0[i]);
			}
			if (at == QT_Q8_1) {
				for (int b = 0; b < N / 32; b++) {
					const uint8_t *blk8 = q + b * 36;
					uint16_t hd, hs;
					memcpy(&hd, blk8, 2);
					memcpy(&hs, blk8 + 2, 2);
					int sum = 0;
					for (int l = 0; l < 32; l++)
						sum += (int8_t)blk8[4 + l];
					float want = quant_fp16_to_f32(quant_f32_to_fp16((float)sum * quant_fp16_to_f32(hd)));
					/* s is d * sum rounded once: with d the f32 scale before
					 * its own rounding, within one f16 step of this */
					assert_true(fabsf(quant_fp16_to_f32(hs) - want) <= fabsf(want) * 2e-3f + 1e-6f);
				}
			}
			if (at == QT_Q8_K) {
				for (int b = 0; b < N / QK_K; b++) {
					const uint8_t *blk8 = q + b * 292;
					for (int g = 0; g < 16; g++) {
						int sum = 0;
						for (int l = 0; l < 16; l++)
							sum += (int8_t)blk8[4 + 16 * g + l];
						int16_t bs;
						memcpy(&bs, blk8 + 260 + 2 * g, 2);
						assert_int_equal(bs, sum);
					}
				}
			}
		}
	}
	quant_cpu_force("auto");
}

/* A quantized dot (activations quantized to the paired type) stays close to
 * the dot of the decoded weights with the float activations. */
static void test_quant_dot_vs_f32(void **state)
{
	(void)state;
	enum { N = 4096 };
	static float x[N];
	static uint8_t w[N * 4], a[N * 4];
	for (size_t k = 0; k < N_TYPES; k++) {
		uint32_t t = all_types[k];
		uint32_t at = quant_vec_dot_type(t);
		if (t == QT_Q8_1 || t == QT_Q8_K)
			continue;
		qu_seed(t + 7);
		qu_make_row(t, w, N, 0);
		for (int i = 0; i < N; i++)
			x[i] = 0.1f + 2 * cosf((float)i * 0.7f + 1.0f);
		float f = quant_dot_f32(t, N, w, x);
		float q;
		if (at == QT_F32) {
			q = quant_dot(t, N, w, x);
		} else {
			assert_int_equal(quant_quantize_row(at, x, a, N), 0);
			q = quant_dot(t, N, w, a);
		}
		double err = fabs((double)q - f) / N;
		if (err > 0.002)
			fail_msg("%s: quantized dot %.6g vs float dot %.6g (error %.5f per element)",
				 quant_type_name(t), (double)q, (double)f, err);
	}
}

static void test_errors(void **state)
{
	(void)state;
	float y[64];
	uint8_t b[64] = {0};
	assert_int_equal(quant_dequantize_row(QT_Q4_0, b, y, 31), TERN_EINVAL);
	assert_int_equal(quant_dequantize_row(4, b, y, 32), TERN_EINVAL);
	assert_int_equal(quant_quantize_row(QT_IQ2_XXS, y, b, 256), TERN_EUNSUPPORTED);
	assert_int_equal(quant_quantize_row(QT_Q4_0, y, b, 33), TERN_EINVAL);
	assert_int_equal(quant_vec_dot_type(QT_Q4_K), QT_Q8_K);
	assert_int_equal(quant_vec_dot_type(QT_Q4_1), QT_Q8_1);
	assert_int_equal(quant_vec_dot_type(QT_F16), QT_F32);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fp16_conversion),
		cmocka_unit_test(test_dequantize_matches_gguf_py),
		cmocka_unit_test(test_quantize_matches_gguf_py),
		cmocka_unit_test(test_roundtrip_error),
		cmocka_unit_test(test_quantize_degenerate),
		cmocka_unit_test(test_simd_dot_matches_scalar),
		cmocka_unit_test(test_simd_quantize_act),
		cmocka_unit_test(test_dot_tile_matches_dot),
		cmocka_unit_test(test_matvec_matches_scalar),
		cmocka_unit_test(test_quant_dot_vs_f32),
		cmocka_unit_test(test_errors),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
