/* gemm_avx512.c - panel GEMM for the integer-level weight types on AVX-512
 * VNNI (the contract is in gemm.h).
 *
 * Every supported type is written as unsigned 8-bit levels u with a float
 * scale per G = 16 or 32 elements of a row and either
 *   - an integer offset c common to the type (w = scale * (u - c)), or
 *   - a float min per G elements             (w = scale * u + min).
 * Activations come quantized exactly as the dot kernels see them (Q8_0,
 * Q8_1 or Q8_K rows), so the integer sums are those of the reference dot:
 *   dot = sum_G scale * d_act * (sum u*q - c * sum q)        (offset c)
 *   dot = sum_G scale * d_act * sum u*q + min * d_act * sum q (min)
 *
 * Panel (16 rows, cols k), 64-byte aligned:
 *   vals [k/32][8][16 rows][4 bytes]   levels, 4 consecutive k per lane
 *   sc   [k/G][16] float               scales
 *   mn   [k/G][16] float               mins (min types only)
 * Activation tile (GT tokens):
 *   q    [k/32][8][GT][4] int8         4 consecutive k of each token
 *   d    [k/32][GT] float              block scale
 *   s    [k/G][GT] int32 c*sum q (offset types) or float d*sum q (mins)
 *
 * The kernel keeps 16 rows x GT tokens in registers: per 4 k one 64-byte
 * load of levels, then one vpdpbusd per token with the token's 4 bytes
 * broadcast from memory; per G elements the int32 sums become floats. */
#include "gemm.h"

#include "cpu.h"
#include "iq_grids.h"
#include "qimpl.h"

#if defined(__x86_64__)
#include <immintrin.h>

#define GT 8

struct gdesc {
	uint8_t g;    /* elements per scale: 16 or 32 */
	uint8_t asym; /* float mins instead of an offset */
	uint8_t c;    /* offset of the levels (offset types) */
	uint32_t at;  /* activation type */
	/* one weight block -> levels u[blck], scales sc[blck/g], mins mn[blck/g] */
	void (*dec)(const uint8_t *b, uint8_t *u, float *sc, float *mn);
};

/* ---- weight blocks -> levels ----------------------------------------------- */

static inline __m256i ld256(const uint8_t *p) { return _mm256_loadu_si256((const __m256i *)p); }
static inline void st256(uint8_t *p, __m256i v) { _mm256_storeu_si256((__m256i *)p, v); }

/* 16 bytes of nibbles -> 32 levels: low nibbles, then high nibbles */
static inline __m256i nib32(const uint8_t *q)
{
	__m128i v = _mm_loadu_si128((const __m128i *)q);
	return _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(v, 4), v), _mm256_set1_epi8(0xF));
}

/* bit j of bits -> 0x10 in byte j */
static inline __m256i bit4x32(uint32_t bits) { return _mm256_maskz_mov_epi8(bits, _mm256_set1_epi8(0x10)); }

/* table of 16 signed levels, offset by 128, in both 128-bit lanes */
static inline __m256i lut_u8(const int8_t *lut)
{
	__m128i t = _mm_add_epi8(_mm_loadu_si128((const __m128i *)lut), _mm_set1_epi8((char)0x80));
	return _mm256_broadcastsi128_si256(t);
}

static void g_q4_0(const uint8_t *b, uint8_t *u, float *sc, float *mn)
{
	(void)mn;
	sc[0] = qrdfp16(b);
	st256(u, nib32(b + 2));
}

static void g_q4_1(const uint8_t *b, uint8_t *u, float *sc, float *mn)
{
	sc[0] = qrdfp16(b);
	mn[0] = qrdfp16(b + 2);
	st256(u, nib32(b + 4));
}

static void g_q5_0(const uint8_t *b, uint8_t *u, float *sc, float *mn)
{
	(void)mn;
	sc[0] = qrdfp16(b);
	st256(u, _mm256_or_si256(nib32(b + 6), bit4x32(qrd32(b + 2))));
}

static void g_q5_1(const uint8_t *b, uint8_t *u, float *sc, float *mn)
{
	sc[0] = qrdfp16(b);
	mn[0] = qrdfp16(b + 2);
	st256(u, _mm256_or_si256(nib32(b + 8), bit4x32(qrd32(b + 4))));
}

static void g_q8_0(const uint8_t *b, uint8_t *u, float *sc, float *mn)
{
	(void)mn;
	sc[0] = qrdfp16(b);
	st256(u, _mm256_xor_si256(ld256(b + 2), _mm256_set1_epi8((char)0x80)));
}

static void g_iq4_nl(const uint8_t *b, uint8_t *u, float *sc, float *mn)
{
	(void)mn;
	sc[0] = qrdfp16(b);
	st256(u, _mm256_shuffle_epi8(lut_u8(quant_kvalues_iq4nl), nib32(b + 2)));
}

static void g_mxfp4(const uint8_t *b, uint8_t *u, float *sc, float *mn)
{
	(void)mn;
	sc[0] = qe8m0_half(b[0]);
	st256(u, _mm256_shuffle_epi8(lut_u8(quant_kvalues_mxfp4), nib32(b + 1)));
}

static void k4_scales(const uint8_t *b, float *sc, float *mn)
{
	float d = qrdfp16(b), dmin = qrdfp16(b + 2);
	for (int j = 0; j < 8; j++) {
		uint8_t s, m;
		quant_k4_scale_min(b + 4, j, &s, &m);
		sc[j] = d * (float)s;
		mn[j] = -dmin * (float)m;
	}
}

static void g_q4_k(const uint8_t *b, uint8_t *u, float *sc, float *mn)
{
	k4_scales(b, sc, mn);
	const __m256i m4 = _mm256_set1_epi8(0xF);
	for (int i = 0; i < 4; i++) {
		__m256i q = ld256(b + 16 + 32 * i);
		st256(u + 64 * i, _mm256_and_si256(q, m4));
		st256(u + 64 * i + 32, _mm256_and_si256(_mm256_srli_epi16(q, 4), m4));
	}
}

/* bit k of each byte of h -> 0x10 */
static inline __m256i hbit(__m256i h, int k)
{
	return _mm256_and_si256(_mm256_slli_epi16(_mm256_srli_epi16(h, k), 4), _mm256_set1_epi8(0x10));
}

static void g_q5_k(const uint8_t *b, uint8_t *u, float *sc, float *mn)
{
	k4_scales(b, sc, mn);
	const __m256i m4 = _mm256_set1_epi8(0xF), h = ld256(b + 16);
	for (int i = 0; i < 4; i++) {
		__m256i q = ld256(b + 48 + 32 * i);
		st256(u + 64 * i, _mm256_or_si256(_mm256_and_si256(q, m4), hbit(h, 2 * i)));
		st256(u + 64 * i + 32, _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(q, 4), m4), hbit(h, 2 * i + 1)));
	}
}

static void g_q6_k(const uint8_t *b, uint8_t *u, float *sc, float *mn)
{
	(void)mn;
	const int8_t *s = (const int8_t *)(b + 192);
	float d = qrdfp16(b + 208);
	for (int j = 0; j < 16; j++)
		sc[j] = d * (float)s[j];
	const __m256i m4 = _mm256_set1_epi8(0xF), m2 = _mm256_set1_epi8(0x30);
	for (int n = 0; n < 2; n++, u += 128) {
		__m256i l0 = ld256(b + 64 * n), l1 = ld256(b + 64 * n + 32), h = ld256(b + 128 + 32 * n);
		st256(u, _mm256_or_si256(_mm256_and_si256(l0, m4), _mm256_and_si256(_mm256_slli_epi16(h, 4), m2)));
		st256(u + 32, _mm256_or_si256(_mm256_and_si256(l1, m4), _mm256_and_si256(_mm256_slli_epi16(h, 2), m2)));
		st256(u + 64, _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l0, 4), m4), _mm256_and_si256(h, m2)));
		st256(u + 96,
		      _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l1, 4), m4),
				      _mm256_and_si256(_mm256_srli_epi16(h, 2), m2)));
	}
}

static void g_q3_k(const uint8_t *b, uint8_t *u, float *sc, float *mn)
{
	(void)mn;
	const uint8_t *s = b + 96;
	float d = qrdfp16(b + 108);
	for (int i = 0; i < 16; i++) {
		int lo = i < 8 ? s[i] & 0xF : s[i - 8] >> 4;
		int hi = (s[8 + (i & 3)] >> (2 * (i >> 2))) & 3;
		sc[i] = d * (float)((lo | hi << 4) - 32);
	}
	/* level v in -4..3 stored as v + 4: the high bit set means +4 */
	const __m256i m3 = _mm256_set1_epi8(3), m4 = _mm256_set1_epi8(4), hm = ld256(b);
	for (int n = 0; n < 2; n++) {
		__m256i q = ld256(b + 32 + 32 * n);
		for (int j = 0; j < 4; j++, u += 32) {
			__m256i lo = _mm256_and_si256(_mm256_srli_epi16(q, 2 * j), m3);
			int k = 4 * n + j;
			__m256i hb = _mm256_and_si256(k >= 2 ? _mm256_srli_epi16(hm, k - 2) : _mm256_slli_epi16(hm, 2 - k), m4);
			st256(u, _mm256_or_si256(lo, hb));
		}
	}
}

static void g_q2_k(const uint8_t *b, uint8_t *u, float *sc, float *mn)
{
	const uint8_t *s = b;
	float d = qrdfp16(b + 80), dmin = qrdfp16(b + 82);
	for (int i = 0; i < 16; i++) {
		sc[i] = d * (float)(s[i] & 0xF);
		mn[i] = -dmin * (float)(s[i] >> 4);
	}
	const __m256i m3 = _mm256_set1_epi8(3);
	for (int n = 0; n < 2; n++) {
		__m256i q = ld256(b + 16 + 32 * n);
		for (int j = 0; j < 4; j++, u += 32)
			st256(u, _mm256_and_si256(_mm256_srli_epi16(q, 2 * j), m3));
	}
}

static void g_iq4_xs(const uint8_t *b, uint8_t *u, float *sc, float *mn)
{
	(void)mn;
	float d = qrdfp16(b);
	uint16_t sh = qrd16(b + 2);
	const uint8_t *sl = b + 4, *q = b + 8;
	for (int ib = 0; ib < 8; ib++, q += 16, u += 32) {
		int ls = ((sl[ib / 2] >> (4 * (ib % 2))) & 0xF) | ((sh >> (2 * ib)) & 3) << 4;
		sc[ib] = d * (float)(ls - 32);
		st256(u, _mm256_shuffle_epi8(lut_u8(quant_kvalues_iq4nl), nib32(q)));
	}
}

/* 8 grid magnitudes with sign bits s, stored as 64 + level */
static void grid8(uint64_t grid, uint8_t s, uint8_t *u)
{
	for (int j = 0; j < 8; j++) {
		int v = (int)(uint8_t)(grid >> (8 * j));
		u[j] = (uint8_t)(64 + ((s >> j) & 1 ? -v : v));
	}
}

static void g_iq2_xxs(const uint8_t *b, uint8_t *u, float *sc, float *mn)
{
	(void)mn;
	float d = qrdfp16(b);
	for (int ib = 0; ib < 8; ib++) {
		const uint8_t *g = b + 2 + 8 * ib;
		uint32_t aux = qrd32(g + 4);
		sc[ib] = d * (0.5f + (float)(aux >> 28)) * 0.25f;
		for (int l = 0; l < 4; l++, u += 8)
			grid8(quant_iq2xxs_grid[g[l]], quant_ksigns_iq2xs[(aux >> (7 * l)) & 127], u);
	}
}

static void g_iq2_xs(const uint8_t *b, uint8_t *u, float *sc, float *mn)
{
	(void)mn;
	float d = qrdfp16(b);
	const uint8_t *s = b + 66;
	for (int ib = 0; ib < 8; ib++) {
		sc[2 * ib] = d * (0.5f + (float)(s[ib] & 0xF)) * 0.25f;
		sc[2 * ib + 1] = d * (0.5f + (float)(s[ib] >> 4)) * 0.25f;
		for (int l = 0; l < 4; l++, u += 8) {
			uint16_t q = qrd16(b + 2 + 2 * (4 * ib + l));
			grid8(quant_iq2xs_grid[q & 511], quant_ksigns_iq2xs[q >> 9], u);
		}
	}
}

static void g_iq2_s(const uint8_t *b, uint8_t *u, float *sc, float *mn)
{
	(void)mn;
	float d = qrdfp16(b);
	const uint8_t *qs = b + 2, *signs = b + 34, *qh = b + 66, *s = b + 74;
	for (int ib = 0; ib < 8; ib++) {
		sc[2 * ib] = d * (0.5f + (float)(s[ib] & 0xF)) * 0.25f;
		sc[2 * ib + 1] = d * (0.5f + (float)(s[ib] >> 4)) * 0.25f;
		for (int l = 0; l < 4; l++, u += 8)
			grid8(quant_iq2s_grid[qs[4 * ib + l] | ((qh[ib] << (8 - 2 * l)) & 0x300)], signs[4 * ib + l], u);
	}
}

static void g_iq3_xxs(const uint8_t *b, uint8_t *u, float *sc, float *mn)
{
	(void)mn;
	float d = qrdfp16(b);
	const uint8_t *qs = b + 2, *ss = b + 66;
	for (int ib = 0; ib < 8; ib++) {
		uint32_t aux = qrd32(ss + 4 * ib);
		sc[ib] = d * (0.5f + (float)(aux >> 28)) * 0.5f;
		for (int l = 0; l < 4; l++, u += 8) {
			uint64_t g = quant_iq3xxs_grid[qs[8 * ib + 2 * l]] |
				     (uint64_t)quant_iq3xxs_grid[qs[8 * ib + 2 * l + 1]] << 32;
			grid8(g, quant_ksigns_iq2xs[(aux >> (7 * l)) & 127], u);
		}
	}
}

static void g_iq3_s(const uint8_t *b, uint8_t *u, float *sc, float *mn)
{
	(void)mn;
	float d = qrdfp16(b);
	const uint8_t *qs = b + 2, *qh = b + 66, *signs = b + 74, *s = b + 106;
	for (int ib = 0; ib < 8; ib++) {
		sc[ib] = d * (float)(1 + 2 * ((s[ib / 2] >> (4 * (ib % 2))) & 0xF));
		for (int l = 0; l < 4; l++, u += 8) {
			uint64_t g = quant_iq3s_grid[qs[8 * ib + 2 * l] | ((qh[ib] << (8 - 2 * l)) & 256)] |
				     (uint64_t)quant_iq3s_grid[qs[8 * ib + 2 * l + 1] | ((qh[ib] << (7 - 2 * l)) & 256)]
					     << 32;
			grid8(g, signs[4 * ib + l], u);
		}
	}
}

/* IQ1_S: w = dl * (g + delta), g in {-1, 0, 1}: levels g + 1 and the
 * constant part dl * (delta - 1) as a min. */
static void g_iq1_s(const uint8_t *b, uint8_t *u, float *sc, float *mn)
{
	float d = qrdfp16(b);
	const uint8_t *qs = b + 2;
	for (int ib = 0; ib < 8; ib++) {
		uint16_t qh = qrd16(b + 34 + 2 * ib);
		float dl = d * (float)(2 * ((qh >> 12) & 7) + 1);
		sc[ib] = dl;
		mn[ib] = dl * ((qh & 0x8000 ? -0.125f : 0.125f) - 1.0f);
		for (int l = 0; l < 4; l++) {
			uint64_t grid = quant_iq1s_grid[qs[4 * ib + l] | (((qh >> (3 * l)) & 7) << 8)];
			for (int j = 0; j < 8; j++)
				*u++ = (uint8_t)((int8_t)(grid >> (8 * j)) + 1);
		}
	}
}

/* ternary: levels q in 0..2 (value q - 1), one scale per 256 */
static void g_tq1_0(const uint8_t *b, uint8_t *u, float *sc, float *mn)
{
	(void)mn;
	static const uint8_t pow3[5] = {1, 3, 9, 27, 81};
	float d = qrdfp16(b + 52);
	for (int j = 0; j < 8; j++)
		sc[j] = d;
	for (int n = 0; n < 5; n++)
		for (int m = 0; m < 32; m++)
			*u++ = (uint8_t)(((uint8_t)(b[m] * pow3[n]) * 3) >> 8);
	for (int n = 0; n < 5; n++)
		for (int m = 0; m < 16; m++)
			*u++ = (uint8_t)(((uint8_t)(b[32 + m] * pow3[n]) * 3) >> 8);
	for (int n = 0; n < 4; n++)
		for (int m = 0; m < 4; m++)
			*u++ = (uint8_t)(((uint8_t)(b[48 + m] * pow3[n]) * 3) >> 8);
}

static void g_tq2_0(const uint8_t *b, uint8_t *u, float *sc, float *mn)
{
	(void)mn;
	float d = qrdfp16(b + 64);
	for (int j = 0; j < 8; j++)
		sc[j] = d;
	for (int j = 0; j < 64; j += 32)
		for (int l = 0; l < 4; l++)
			for (int m = 0; m < 32; m++)
				*u++ = (b[j + m] >> (2 * l)) & 3;
}

static const struct gdesc *desc(uint32_t t)
{
	static const struct gdesc d[QT_COUNT] = {
		[QT_Q4_0] = {32, 0, 8, QT_Q8_0, g_q4_0},
		[QT_Q4_1] = {32, 1, 0, QT_Q8_1, g_q4_1},
		[QT_Q5_0] = {32, 0, 16, QT_Q8_0, g_q5_0},
		[QT_Q5_1] = {32, 1, 0, QT_Q8_1, g_q5_1},
		[QT_Q8_0] = {32, 0, 128, QT_Q8_0, g_q8_0},
		[QT_IQ4_NL] = {32, 0, 128, QT_Q8_0, g_iq4_nl},
		[QT_MXFP4] = {32, 0, 128, QT_Q8_0, g_mxfp4},
		[QT_Q2_K] = {16, 1, 0, QT_Q8_K, g_q2_k},
		[QT_Q3_K] = {16, 0, 4, QT_Q8_K, g_q3_k},
		[QT_Q4_K] = {32, 1, 0, QT_Q8_K, g_q4_k},
		[QT_Q5_K] = {32, 1, 0, QT_Q8_K, g_q5_k},
		[QT_Q6_K] = {16, 0, 32, QT_Q8_K, g_q6_k},
		[QT_IQ4_XS] = {32, 0, 128, QT_Q8_K, g_iq4_xs},
		[QT_IQ2_XXS] = {32, 0, 64, QT_Q8_K, g_iq2_xxs},
		[QT_IQ2_XS] = {16, 0, 64, QT_Q8_K, g_iq2_xs},
		[QT_IQ2_S] = {16, 0, 64, QT_Q8_K, g_iq2_s},
		[QT_IQ3_XXS] = {32, 0, 64, QT_Q8_K, g_iq3_xxs},
		[QT_IQ3_S] = {32, 0, 64, QT_Q8_K, g_iq3_s},
		[QT_IQ1_S] = {32, 1, 0, QT_Q8_K, g_iq1_s},
		[QT_TQ1_0] = {32, 0, 1, QT_Q8_K, g_tq1_0},
		[QT_TQ2_0] = {32, 0, 1, QT_Q8_K, g_tq2_0},
	};
	return t < QT_COUNT && d[t].dec ? &d[t] : NULL;
}

/* ---- sizes ------------------------------------------------------------------ */

static size_t tile_bytes(const struct gdesc *g, int64_t cols)
{
	return (size_t)cols * GT + (size_t)(cols / 32) * GT * 4 + (size_t)(cols / g->g) * GT * 4;
}

static bool ok(uint32_t t)
{
	const struct quant_cpu *c = quant_cpu();
	return desc(t) && c->avx512f && c->avx512bw && c->avx512vl && c->avx512vnni;
}

static size_t act_size(uint32_t t, int64_t cols, int64_t ntok)
{
	const struct gdesc *g = desc(t);
	return g ? tile_bytes(g, cols) * (size_t)((ntok + GT - 1) / GT) : 0;
}

static size_t panel_bytes(const struct gdesc *g, int64_t cols)
{
	return (size_t)cols * QG_ROWS + (size_t)(cols / g->g) * QG_ROWS * 4 * (g->asym ? 2 : 1);
}

/* tmp: panel, then the decoded blocks of 16 rows (levels, scales, mins),
 * then a quantized activation row; 64 bytes of slack for the alignment */
static size_t tmp_size(uint32_t t, int64_t cols)
{
	const struct gdesc *g = desc(t);
	if (!g)
		return 0;
	const struct quant_type_info *ti = quant_type_info(t);
	size_t dec = (size_t)QG_ROWS * ti->blck + (size_t)QG_ROWS * (ti->blck / g->g) * 8;
	return 64 + panel_bytes(g, cols) + dec + quant_row_size(g->at, (uint64_t)cols, NULL);
}

static uint8_t *align64(void *p) { return (uint8_t *)(((uintptr_t)p + 63) & ~(uintptr_t)63); }

/* ---- activations ------------------------------------------------------------ */

static void pack_token(const struct gdesc *g, int64_t cols, const uint8_t *row, uint8_t *tile, int slot)
{
	int64_t nb = cols / 32;
	int8_t *q = (int8_t *)tile;
	float *d = (float *)(tile + cols * GT);
	uint8_t *s = tile + cols * GT + nb * GT * 4;
	const int per = 32 / g->g; /* sums per 32 */
	for (int64_t b = 0; b < nb; b++) {
		const int8_t *src;
		float db, ds[2] = {0, 0};
		int32_t sum[2] = {0, 0};
		if (g->at == QT_Q8_K) {
			const uint8_t *blk = row + (b / 8) * Q8_K_B;
			db = qrdf32(blk);
			src = (const int8_t *)(blk + 4 + (b % 8) * 32);
			for (int h = 0; h < 2; h++)
				sum[h] = (int16_t)qrd16(blk + 260 + 2 * (2 * (b % 8) + h));
		} else {
			const uint8_t *blk = row + b * (g->at == QT_Q8_1 ? Q8_1_B : Q8_0_B);
			db = qrdfp16(blk);
			src = (const int8_t *)(blk + (g->at == QT_Q8_1 ? 4 : 2));
			for (int j = 0; j < 32; j++)
				sum[j / 16] += src[j];
			if (g->at == QT_Q8_1)
				ds[0] = qrdfp16(blk + 2);
		}
		for (int gi = 0; gi < 8; gi++)
			memcpy(q + ((b * 8 + gi) * GT + slot) * 4, src + 4 * gi, 4);
		d[b * GT + slot] = db;
		for (int h = 0; h < per; h++) {
			int32_t sh = per == 2 ? sum[h] : sum[0] + sum[1];
			uint8_t *dst = s + ((b * per + h) * GT + slot) * 4;
			if (g->asym) {
				float v = g->at == QT_Q8_1 ? ds[0] : db * (float)sh;
				memcpy(dst, &v, 4);
			} else {
				int32_t v = (int32_t)g->c * sh;
				memcpy(dst, &v, 4);
			}
		}
	}
}

static void clear_token(int64_t cols, const struct gdesc *g, uint8_t *tile, int slot)
{
	int64_t nb = cols / 32, ng = cols / g->g;
	for (int64_t k = 0; k < nb * 8; k++)
		memset(tile + (k * GT + slot) * 4, 0, 4);
	float *d = (float *)(tile + cols * GT);
	for (int64_t b = 0; b < nb; b++)
		d[b * GT + slot] = 0;
	uint8_t *s = tile + cols * GT + nb * GT * 4;
	for (int64_t j = 0; j < ng; j++)
		memset(s + (j * GT + slot) * 4, 0, 4);
}

static void pack_act(uint32_t t, int64_t cols, const float *x, int64_t ntok, int64_t t0, int64_t t1, void *act,
		     void *tmp)
{
	const struct gdesc *g = desc(t);
	size_t tb = tile_bytes(g, cols);
	uint8_t *row = align64(tmp) + (tmp_size(t, cols) - 64 - quant_row_size(g->at, (uint64_t)cols, NULL));
	for (int64_t k = t0; k < t1; k++) {
		quant_quantize_act(g->at, x + k * cols, row, (uint64_t)cols);
		pack_token(g, cols, row, (uint8_t *)act + (size_t)(k / GT) * tb, (int)(k % GT));
	}
	if (t1 == ntok)
		for (int64_t k = ntok; k % GT; k++)
			clear_token(cols, g, (uint8_t *)act + (size_t)(k / GT) * tb, (int)(k % GT));
}

/* ---- weights -> panel --------------------------------------------------------- */

/* 16 rows of 32 levels (row r at src + r * stride) -> 8 x 64 bytes, the
 * k-group e holding 4 levels of every row */
static inline void transpose16x32(const uint8_t *src, size_t stride, uint8_t *dst)
{
	__m512i z[8], s[8], u[8];
	for (int i = 0; i < 8; i++)
		z[i] = _mm512_inserti64x4(
			_mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)(src + i * stride))),
			_mm256_loadu_si256((const __m256i *)(src + (i + 8) * stride)), 1);
	for (int i = 0; i < 8; i += 2) {
		s[i] = _mm512_unpacklo_epi32(z[i], z[i + 1]);
		s[i + 1] = _mm512_unpackhi_epi32(z[i], z[i + 1]);
	}
	for (int i = 0; i < 8; i += 4) {
		u[i] = _mm512_unpacklo_epi64(s[i], s[i + 2]);
		u[i + 1] = _mm512_unpackhi_epi64(s[i], s[i + 2]);
		u[i + 2] = _mm512_unpacklo_epi64(s[i + 1], s[i + 3]);
		u[i + 3] = _mm512_unpackhi_epi64(s[i + 1], s[i + 3]);
	}
	/* u[j] (rows 0..3 | 8..11) and u[j+4] (rows 4..7 | 12..15) hold groups
	 * j and j+4 in their even and odd 128-bit lanes */
	const __m512i lo = _mm512_setr_epi64(0, 1, 8, 9, 4, 5, 12, 13);
	const __m512i hi = _mm512_setr_epi64(2, 3, 10, 11, 6, 7, 14, 15);
	for (int j = 0; j < 4; j++) {
		_mm512_store_si512((__m512i *)(dst + j * 64), _mm512_permutex2var_epi64(u[j], lo, u[j + 4]));
		_mm512_store_si512((__m512i *)(dst + (j + 4) * 64), _mm512_permutex2var_epi64(u[j], hi, u[j + 4]));
	}
}

static void pack_panel(uint32_t t, const struct gdesc *g, int64_t cols, const uint8_t *w, size_t wstride, int nr,
		       uint8_t *panel, uint8_t *dec)
{
	const struct quant_type_info *ti = quant_type_info(t);
	const int blck = (int)ti->blck, nsb = blck / g->g;
	uint8_t *vals = panel;
	float *sc = (float *)(panel + cols * QG_ROWS);
	float *mn = sc + (cols / g->g) * QG_ROWS;
	float *dsc = (float *)(dec + QG_ROWS * blck), *dmn = dsc + QG_ROWS * nsb;
	if (nr < QG_ROWS) {
		memset(dec + nr * blck, 0, (size_t)(QG_ROWS - nr) * blck);
		memset(dsc + nr * nsb, 0, sizeof(float) * (size_t)(QG_ROWS - nr) * nsb);
		memset(dmn + nr * nsb, 0, sizeof(float) * (size_t)(QG_ROWS - nr) * nsb);
	}
	for (int64_t blk = 0; blk < cols / blck; blk++) {
		for (int r = 0; r < nr; r++)
			g->dec(w + r * wstride + blk * ti->size, dec + r * blck, dsc + r * nsb, dmn + r * nsb);
		for (int s = 0; s < blck / 32; s++)
			transpose16x32(dec + s * 32, (size_t)blck, vals + (blk * blck / 32 + s) * 512);
		for (int j = 0; j < nsb; j++)
			for (int r = 0; r < QG_ROWS; r++) {
				sc[(blk * nsb + j) * QG_ROWS + r] = dsc[r * nsb + j];
				if (g->asym)
					mn[(blk * nsb + j) * QG_ROWS + r] = dmn[r * nsb + j];
			}
	}
}

/* ---- kernel -------------------------------------------------------------------- */

#define UNROLL _Pragma("GCC unroll 16")

/* 4*ng groups of 4 k (ng = 1 or 2 per 32-block: G = 32 or 16) */
static inline __attribute__((always_inline)) void
kern(const int g16, const int asym, int64_t nb, const uint8_t *vals, const float *sc, const float *mn,
     const uint8_t *tile, int64_t cols, __m512 acc[GT])
{
	const int32_t *aq = (const int32_t *)tile;
	const float *ad = (const float *)(tile + cols * GT);
	const int32_t *as = (const int32_t *)(tile + cols * GT + (cols / 32) * GT * 4);
	UNROLL for (int t = 0; t < GT; t++) acc[t] = _mm512_setzero_ps();
	for (int64_t b = 0; b < nb; b++) {
		for (int h = 0; h < (g16 ? 2 : 1); h++) {
			__m512i s[GT];
			UNROLL for (int t = 0; t < GT; t++) s[t] = _mm512_setzero_si512();
			UNROLL for (int e = 0; e < 4; e++) {
				__m512i w = _mm512_load_si512((const __m512i *)(vals + 64 * e));
				UNROLL for (int t = 0; t < GT; t++)
					s[t] = _mm512_dpbusd_epi32(s[t], w, _mm512_set1_epi32(aq[GT * e + t]));
			}
			vals += 256;
			aq += 4 * GT;
			if (!g16) {
				UNROLL for (int e = 0; e < 4; e++) {
					__m512i w = _mm512_load_si512((const __m512i *)(vals + 64 * e));
					UNROLL for (int t = 0; t < GT; t++)
						s[t] = _mm512_dpbusd_epi32(s[t], w, _mm512_set1_epi32(aq[GT * e + t]));
				}
				vals += 256;
				aq += 4 * GT;
			}
			__m512 scv = _mm512_load_ps(sc);
			sc += QG_ROWS;
			if (asym) {
				__m512 mnv = _mm512_load_ps(mn);
				mn += QG_ROWS;
				UNROLL for (int t = 0; t < GT; t++) {
					acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s[t]), _mm512_mul_ps(scv, _mm512_set1_ps(ad[t])),
								 acc[t]);
					acc[t] = _mm512_fmadd_ps(mnv, _mm512_set1_ps(((const float *)as)[t]), acc[t]);
				}
			} else {
				UNROLL for (int t = 0; t < GT; t++) {
					__m512i v = _mm512_sub_epi32(s[t], _mm512_set1_epi32(as[t]));
					acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(v), _mm512_mul_ps(scv, _mm512_set1_ps(ad[t])),
								 acc[t]);
				}
			}
			as += GT;
		}
		ad += GT;
	}
}

#define KERN_VARIANT(name, g16, asym)                                                                         \
	static void name(int64_t nb, const uint8_t *vals, const float *sc, const float *mn, const uint8_t *tile, \
			 int64_t cols, __m512 acc[GT])                                                            \
	{                                                                                                         \
		kern(g16, asym, nb, vals, sc, mn, tile, cols, acc);                                               \
	}
KERN_VARIANT(kern32, 0, 0)
KERN_VARIANT(kern32m, 0, 1)
KERN_VARIANT(kern16, 1, 0)
KERN_VARIANT(kern16m, 1, 1)

static void rows(uint32_t t, int64_t cols, const uint8_t *w, size_t wstride, int nr, const void *act, int64_t ntok,
		 float *y, size_t ystride, void *tmp)
{
	const struct gdesc *g = desc(t);
	uint8_t *panel = align64(tmp);
	uint8_t *dec = panel + panel_bytes(g, cols);
	pack_panel(t, g, cols, w, wstride, nr, panel, dec);
	const float *sc = (const float *)(panel + cols * QG_ROWS);
	const float *mn = sc + (cols / g->g) * QG_ROWS;
	void (*k)(int64_t, const uint8_t *, const float *, const float *, const uint8_t *, int64_t, __m512 *) =
		g->g == 16 ? (g->asym ? kern16m : kern16) : (g->asym ? kern32m : kern32);
	size_t tb = tile_bytes(g, cols);
	__mmask16 m = (__mmask16)((1u << nr) - 1);
	for (int64_t t0 = 0; t0 < ntok; t0 += GT) {
		__m512 acc[GT];
		k(cols / 32, panel, sc, mn, (const uint8_t *)act + (size_t)(t0 / GT) * tb, cols, acc);
		int nt = ntok - t0 < GT ? (int)(ntok - t0) : GT;
		for (int i = 0; i < nt; i++)
			_mm512_mask_storeu_ps(y + (size_t)(t0 + i) * ystride, m, acc[i]);
	}
}

const struct quant_gemm_ops quant_gemm_int_avx512 = {ok, act_size, tmp_size, pack_act, rows};

#endif
