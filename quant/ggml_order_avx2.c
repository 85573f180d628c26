/* ggml_order_avx2.c - the products of quant/ggml_order.h on AVX2 + FMA:
 * the integer sums on vectors (exact, as in the plain C of
 * ggml_order.inc), the float steps the same operations in the same order,
 * so the same bits as the baseline build, in a fraction of the time. */
#include "quant/ggml_order.h"

#include <immintrin.h>
#include <math.h>
#include <string.h>

#include "quant/qimpl.h"
#include "quant/quant.h"

void quant_ggml_rows_n_avx2(uint32_t t, int64_t cols, const void *w, size_t wstride, int64_t nrows, const void *act,
			    size_t act_size, int64_t ntok, float *y, int64_t ldy, int64_t ngrouped);

/* 8 lanes, lane l the sum of the products of bytes 4l..4l+3 of a and b
 * (signed; |a| <= 127): u8 x s8 pairs, then pairs of those */
static inline __m256i lane_dots(__m256i a, __m256i b)
{
	__m256i p = _mm256_maddubs_epi16(_mm256_sign_epi8(a, a), _mm256_sign_epi8(b, a));
	return _mm256_madd_epi16(p, _mm256_set1_epi16(1));
}

static inline int32_t hsum_i32(__m256i v)
{
	__m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
	s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4E));
	s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xB1));
	return _mm_cvtsi128_si32(s);
}

static void rows_q8_0(int64_t cols, const uint8_t *w, size_t wstride, int64_t nrows, const uint8_t *a, float *y)
{
	int64_t nb = cols / 32;
	for (int64_t r = 0; r < nrows; r++, w += wstride) {
		__m256 acc = _mm256_setzero_ps();
		for (int64_t b = 0; b < nb; b++) {
			const uint8_t *wb = w + b * Q8_0_B, *ab = a + b * Q8_0_B;
			__m256i qw = _mm256_loadu_si256((const __m256i *)(const void *)(wb + 2));
			__m256i qa = _mm256_loadu_si256((const __m256i *)(const void *)(ab + 2));
			float d = _cvtsh_ss(qrd16(wb)) * _cvtsh_ss(qrd16(ab));
			acc = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(lane_dots(qw, qa)), acc);
		}
		/* ((a4 + a0) + (a6 + a2)) + ((a5 + a1) + (a7 + a3)) */
		__m128 s = _mm_add_ps(_mm256_extractf128_ps(acc, 1), _mm256_castps256_ps128(acc));
		s = _mm_add_ps(s, _mm_movehl_ps(s, s));
		s = _mm_add_ss(s, _mm_movehdup_ps(s));
		y[r] = _mm_cvtss_f32(s);
	}
}

static void rows_q4_0(int64_t cols, const uint8_t *w, size_t wstride, int64_t nrows, const uint8_t *a, float *y)
{
	int64_t nb = cols / 32;
	const __m128i m4 = _mm_set1_epi8(0xF);
	const __m256i off = _mm256_set1_epi8(8);
	for (int64_t r = 0; r < nrows; r++, w += wstride) {
		float acc = 0;
		for (int64_t b = 0; b < nb; b++) {
			const uint8_t *wb = w + b * Q4_0_B, *ab = a + b * Q8_0_B;
			__m128i q = _mm_loadu_si128((const __m128i *)(const void *)(wb + 2));
			__m256i qw = _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(q, 4), m4), _mm_and_si128(q, m4));
			qw = _mm256_sub_epi8(qw, off);
			__m256i qa = _mm256_loadu_si256((const __m256i *)(const void *)(ab + 2));
			int32_t s = hsum_i32(lane_dots(qw, qa));
			acc = fmaf((float)s, _cvtsh_ss(qrd16(wb)) * _cvtsh_ss(qrd16(ab)), acc);
		}
		y[r] = acc;
	}
}

#define MAX_SB 512 /* super-blocks of a row whose scales are unpacked once (131072 columns) */


/* Q4_K over every token: a row's scales, mins and f16 scales unpacked once */
static void rows_q4_k(int64_t cols, const uint8_t *w, size_t wstride, int64_t nrows, const uint8_t *act,
		      size_t act_size, int64_t ntok, float *y, int64_t ldy, int64_t ngrouped)
{
	int64_t nb = cols / 256;
	const __m256i m4 = _mm256_set1_epi8(0xF);
	uint8_t sc[MAX_SB][8], mn[MAX_SB][8];
	float dw[MAX_SB], dmw[MAX_SB];
	for (int64_t r = 0; r < nrows; r++, w += wstride) {
		for (int64_t b = 0; b < nb; b++) {
			const uint8_t *wb = w + b * Q4_K_B;
			for (int j = 0; j < 8; j++)
				quant_k4_scale_min(wb + 4, j, &sc[b][j], &mn[b][j]);
			dw[b] = _cvtsh_ss(qrd16(wb));
			dmw[b] = _cvtsh_ss(qrd16(wb + 2));
		}
		for (int64_t k = 0; k < ntok; k++) {
			const uint8_t *a = act + (size_t)k * act_size;
			bool grouped = k < ngrouped;
			float acc = 0, accm = 0;
			for (int64_t b = 0; b < nb; b++) {
				const uint8_t *qw = w + b * Q4_K_B + 16, *ab = a + b * Q8_K_B, *qa = ab + 4;
				float da = qrdf32(ab), dd = dw[b] * da, dm = dmw[b] * da;
				int16_t bs[16];
				memcpy(bs, ab + 4 + 256, sizeof bs);
				int32_t s = 0, m = 0;
				for (int j = 0; j < 8; j += 2, qw += 32, qa += 64) {
					__m256i q = _mm256_loadu_si256((const __m256i *)(const void *)qw);
					__m256i lo = _mm256_and_si256(q, m4), hi = _mm256_and_si256(_mm256_srli_epi16(q, 4), m4);
					__m256i a0 = _mm256_loadu_si256((const __m256i *)(const void *)qa);
					__m256i a1 = _mm256_loadu_si256((const __m256i *)(const void *)(qa + 32));
					/* the scales inside the sum: exact either way */
					__m256i p = _mm256_add_epi32(
						_mm256_madd_epi16(_mm256_maddubs_epi16(lo, a0), _mm256_set1_epi16(sc[b][j])),
						_mm256_madd_epi16(_mm256_maddubs_epi16(hi, a1), _mm256_set1_epi16(sc[b][j + 1])));
					s += hsum_i32(p);
					m += mn[b][j] * (bs[2 * j] + bs[2 * j + 1]) + mn[b][j + 1] * (bs[2 * j + 2] + bs[2 * j + 3]);
					if (grouped) {
						acc = fmaf((float)s, dd, acc);
						accm = fmaf((float)m, dm, accm);
						s = m = 0;
					}
				}
				if (!grouped) {
					acc = fmaf((float)s, dd, acc);
					accm = fmaf((float)m, dm, accm);
				}
			}
			y[k * ldy + r] = acc - accm;
		}
	}
}

/* Q4_K rows of at most MAX_SB super-blocks (quant_ggml_rows_n checks) */
void quant_ggml_rows_n_avx2(uint32_t t, int64_t cols, const void *w, size_t wstride, int64_t nrows, const void *act,
			    size_t act_size, int64_t ntok, float *y, int64_t ldy, int64_t ngrouped)
{
	if (t == QT_Q4_K) {
		rows_q4_k(cols, w, wstride, nrows, act, act_size, ntok, y, ldy, ngrouped);
		return;
	}
	for (int64_t k = 0; k < ntok; k++) {
		const uint8_t *a = (const uint8_t *)act + (size_t)k * act_size;
		if (t == QT_Q8_0)
			rows_q8_0(cols, w, wstride, nrows, a, y + k * ldy);
		else if (t == QT_Q4_0)
			rows_q4_0(cols, w, wstride, nrows, a, y + k * ldy);
	}
}
