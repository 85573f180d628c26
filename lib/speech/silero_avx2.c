/* silero_avx2.c - the Silero kernels (silero_kern.h) on 8 lanes: AVX2,
 * FMA and F16C (the Makefile compiles *_avx2.c with those flags; silero.c
 * picks this table when quant_isa() allows it).
 *
 * gemm: rows in the lanes (a 16-row panel block is two ymm), one token at
 * a time, so that ggml's tree over the 64 partial sums of each dot becomes
 * vertical adds of whole vectors. A pass computes the four partials that
 * one leaf s[l] of the tree adds up (m = l, l + 16, l + 32, l + 48): eight
 * independent FMA chains over the panel. The result is bit for bit the
 * plain C kernel's (silero.c), which tests/test_vad.c checks. */
#include "lib/speech/silero_kern.h"

#if defined(__x86_64__)
#include <immintrin.h>

/* s[base] over 16 rows: (p[b] + p[b+32]) + (p[b+16] + p[b+48]). */
static inline __attribute__((always_inline)) void leaf(const float *w, int ni, const float *x, int base, __m256 *s0,
						       __m256 *s1)
{
	__m256 a[4][2];
	for (int q = 0; q < 4; q++)
		a[q][0] = a[q][1] = _mm256_setzero_ps();
	for (int i = 0; i < ni; i++) {
		for (int q = 0; q < 4; q++) {
			size_t k = (size_t)(SILERO_DOT_PARTS * i + base + 16 * q);
			__m256 b = _mm256_broadcast_ss(x + k);
			a[q][0] = _mm256_fmadd_ps(_mm256_load_ps(w + 16 * k), b, a[q][0]);
			a[q][1] = _mm256_fmadd_ps(_mm256_load_ps(w + 16 * k + 8), b, a[q][1]);
		}
	}
	*s0 = _mm256_add_ps(_mm256_add_ps(a[0][0], a[2][0]), _mm256_add_ps(a[1][0], a[3][0]));
	*s1 = _mm256_add_ps(_mm256_add_ps(a[0][1], a[2][1]), _mm256_add_ps(a[1][1], a[3][1]));
}

/* The ggml dots of one token with the 16 rows of a panel block. */
static void block(const float *w, int cols, const float *x, float *y)
{
	int np = cols & ~(SILERO_DOT_PARTS - 1), ni = np / SILERO_DOT_PARTS;
	__m256 t[8][2];
	for (int l = 0; l < 8; l++) {
		__m256 lo0, lo1, hi0, hi1;
		leaf(w, ni, x, l, &lo0, &lo1);
		leaf(w, ni, x, l + 8, &hi0, &hi1);
		t[l][0] = _mm256_add_ps(lo0, hi0);
		t[l][1] = _mm256_add_ps(lo1, hi1);
	}
	__m256 r[2];
	for (int h = 0; h < 2; h++) {
		__m256 u0 = _mm256_add_ps(t[0][h], t[4][h]), u1 = _mm256_add_ps(t[1][h], t[5][h]);
		__m256 u2 = _mm256_add_ps(t[2][h], t[6][h]), u3 = _mm256_add_ps(t[3][h], t[7][h]);
		r[h] = _mm256_add_ps(_mm256_add_ps(u0, u2), _mm256_add_ps(u1, u3));
	}
	if (np == cols) {
		_mm256_storeu_ps(y, r[0]);
		_mm256_storeu_ps(y + 8, r[1]);
		return;
	}
	/* the tail in double, each product rounded to float first */
	__m256d d[4] = {_mm256_cvtps_pd(_mm256_castps256_ps128(r[0])), _mm256_cvtps_pd(_mm256_extractf128_ps(r[0], 1)),
			_mm256_cvtps_pd(_mm256_castps256_ps128(r[1])), _mm256_cvtps_pd(_mm256_extractf128_ps(r[1], 1))};
	for (int k = np; k < cols; k++) {
		__m256 b = _mm256_broadcast_ss(x + k);
		__m256 p0 = _mm256_mul_ps(_mm256_load_ps(w + 16 * (size_t)k), b);
		__m256 p1 = _mm256_mul_ps(_mm256_load_ps(w + 16 * (size_t)k + 8), b);
		d[0] = _mm256_add_pd(d[0], _mm256_cvtps_pd(_mm256_castps256_ps128(p0)));
		d[1] = _mm256_add_pd(d[1], _mm256_cvtps_pd(_mm256_extractf128_ps(p0, 1)));
		d[2] = _mm256_add_pd(d[2], _mm256_cvtps_pd(_mm256_castps256_ps128(p1)));
		d[3] = _mm256_add_pd(d[3], _mm256_cvtps_pd(_mm256_extractf128_ps(p1, 1)));
	}
	for (int i = 0; i < 4; i++)
		_mm_storeu_ps(y + 4 * i, _mm256_cvtpd_ps(d[i]));
}

static void gemm_avx2(const float *panel, int nblk, int cols, const float *const *x, int n, float *y, size_t ldy)
{
	for (int b = 0; b < nblk; b++) {
		const float *w = panel + (size_t)b * cols * SILERO_PANEL;
		for (int j = 0; j < n; j++)
			block(w, cols, x[j], y + (size_t)j * ldy + (size_t)b * SILERO_PANEL);
	}
}

static void round_f16_avx2(float *x, size_t n)
{
	size_t i = 0;
	for (; i + 8 <= n; i += 8) {
		__m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT);
		_mm256_storeu_ps(x + i, _mm256_cvtph_ps(h));
	}
	for (; i < n; i++) {
		__m128i h = _mm_cvtps_ph(_mm_set_ss(x[i]), _MM_FROUND_TO_NEAREST_INT);
		x[i] = _mm_cvtss_f32(_mm_cvtph_ps(h));
	}
}

const struct silero_kern silero_kern_avx2 = {
	.gemm = gemm_avx2,
	.round_f16 = round_f16_avx2,
};

#endif
