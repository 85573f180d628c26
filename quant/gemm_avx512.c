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
 *   s    [k/G][GT] int32 c*sum q (offset types), or float sum q for mins
 *                                  (d*sum q, the block's s field, for Q8_1)
 *
 * The kernel keeps 16 rows x GT tokens in registers: per 4 k one 64-byte
 * load of levels, then one vpdpbusd per token with the token's 4 bytes
 * broadcast from memory; per G elements the int32 sums become floats.
 *
 * Where the time goes (Zen 5, measured): vpdpbusd, vmulps and vfmadd share
 * two pipes, the conversions, integer ops and loads run beside them, so
 * the float work per scale block (one multiply and one fma per token, or
 * two fmas for the min types) bounds the kernel at about 80% of the
 * vpdpbusd peak; it reaches 67-73%. The panel conversion and the
 * activation packing (a whole tile quantized in registers) cost a few
 * percent of the products at 128 tokens and more. */
#include "quant/gemm.h"

#include "quant/cpu.h"
#include "quant/iq_grids.h"
#include "quant/qimpl.h"

#if defined(__x86_64__)
#include <immintrin.h>

#define GT 8

typedef void (*kern_fn)(int64_t nb, const uint8_t *vals, const float *sc, const float *mn, const uint8_t *tile,
			int64_t cols, const int8_t *lut, __m512 *acc);

struct gdesc {
	uint8_t g;    /* elements per scale: 16 or 32 */
	uint8_t asym; /* float mins instead of an offset */
	uint8_t c;    /* offset of the levels (offset types) */
	uint8_t lay;  /* layout of the levels in the panel: U8, U4A, U4B, S8 */
	uint32_t at;  /* activation type */
	const int8_t *lut; /* nibble -> signed level (offset by 128 in the panel) */
	/* nr rows of weights -> panel (see pack_impl) */
	void (*pack)(int64_t cols, const uint8_t *w, size_t wstride, int nr, uint8_t *panel, uint8_t *dec);
	kern_fn kern;
};

/* Nibble layouts: the panel holds the file's bytes, transposed 4 at a time,
 * and the kernel splits the nibbles.
 *   U4A: a 32-element block is 16 bytes, low nibbles elements 0..15, high
 *        nibbles 16..31 (Q4_0, Q4_1, IQ4_NL, MXFP4, IQ4_XS): 256 panel
 *        bytes per block, chunk e giving groups e (low) and e + 4 (high).
 *   U4B: two 32-element sub-blocks share 32 bytes, low nibbles the first,
 *        high nibbles the second (Q4_K): 512 panel bytes per pair, chunk e
 *        giving group e of either.
 * S8: the file's signed bytes (Q8_0), transposed like U4B's, made unsigned
 *     (+128) in the kernel. */
enum { U8 = 0, U4A = 1, U4B = 2, S8 = 3 };

/* bytes of levels in a panel of cols columns (the scales follow them) */
static inline size_t vals_bytes(int lay, int64_t cols)
{
	return (size_t)cols * QG_ROWS / (lay == U4A || lay == U4B ? 2 : 1);
}

/* ---- weight blocks -> levels ----------------------------------------------- */

static inline __m256i ld256(const uint8_t *p) { return _mm256_loadu_si256((const __m256i *)p); }
static inline void st256(uint8_t *p, __m256i v) { _mm256_storeu_si256((__m256i *)p, v); }

/* fp16 field -> float (F16C, exact) */
static inline float h2f(const uint8_t *p) { return _cvtsh_ss(qrd16(p)); }

/* 16 bytes of nibbles -> 32 levels: low nibbles, then high nibbles */
static inline __m256i nib32(const uint8_t *q)
{
	__m128i v = _mm_loadu_si128((const __m128i *)q);
	return _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(v, 4), v), _mm256_set1_epi8(0xF));
}

/* bit j of bits -> 0x10 in byte j */
static inline __m256i bit4x32(uint32_t bits) { return _mm256_maskz_mov_epi8(bits, _mm256_set1_epi8(0x10)); }

/* Q4_0, Q8_0, IQ4_NL: one fp16 scale first; the levels stay the file's
 * bytes (U4A, S8) */
static inline __attribute__((always_inline)) void g_d16(const uint8_t *b, uint8_t *u, float *sc, float *mn)
{
	(void)u;
	(void)mn;
	sc[0] = h2f(b);
}

static inline __attribute__((always_inline)) void g_q4_1(const uint8_t *b, uint8_t *u, float *sc, float *mn)
{
	(void)u;
	sc[0] = h2f(b);
	mn[0] = h2f(b + 2);
}

static inline __attribute__((always_inline)) void g_q5_0(const uint8_t *b, uint8_t *u, float *sc, float *mn)
{
	(void)mn;
	sc[0] = h2f(b);
	st256(u, _mm256_or_si256(nib32(b + 6), bit4x32(qrd32(b + 2))));
}

static inline __attribute__((always_inline)) void g_q5_1(const uint8_t *b, uint8_t *u, float *sc, float *mn)
{
	sc[0] = h2f(b);
	mn[0] = h2f(b + 2);
	st256(u, _mm256_or_si256(nib32(b + 8), bit4x32(qrd32(b + 4))));
}

static inline __attribute__((always_inline)) void g_mxfp4(const uint8_t *b, uint8_t *u, float *sc, float *mn)
{
	(void)mn;
	(void)u;
	sc[0] = qe8m0_half(b[0]);
}

/* 8 bytes (two words, 4 per word) -> 8 floats times f */
static inline void bytes8_f32(uint32_t lo, uint32_t hi, float f, float *dst)
{
	__m256i v = _mm256_cvtepu8_epi32(_mm_cvtsi64_si128((long long)((uint64_t)hi << 32 | lo)));
	_mm256_storeu_ps(dst, _mm256_mul_ps(_mm256_cvtepi32_ps(v), _mm256_set1_ps(f)));
}

/* Q4_K / Q5_K: the 6-bit scales and mins of the 12 bytes at b + 4, four at
 * a time (scales 0..3 and mins 0..3 are the low 6 bits of bytes 0..7;
 * 4..7 take their low 4 bits from bytes 8..11 and their top 2 from the
 * top bits of bytes 0..7) */
static inline void k4_scales(const uint8_t *b, float *sc, float *mn)
{
	uint32_t w0 = qrd32(b + 4), w1 = qrd32(b + 8), w2 = qrd32(b + 12);
	const uint32_t m6 = 0x3f3f3f3f, m4 = 0x0f0f0f0f, m2 = 0x03030303;
	bytes8_f32(w0 & m6, (w2 & m4) | ((w0 >> 6) & m2) << 4, h2f(b), sc);
	bytes8_f32(w1 & m6, ((w2 >> 4) & m4) | ((w1 >> 6) & m2) << 4, -h2f(b + 2), mn);
}

static inline __attribute__((always_inline)) void g_q4_k(const uint8_t *b, uint8_t *u, float *sc, float *mn)
{
	(void)u; /* levels: the file's nibbles (U4B) */
	k4_scales(b, sc, mn);
}

/* bit k of each byte of h -> 0x10 */
static inline __m256i hbit(__m256i h, int k)
{
	return _mm256_and_si256(_mm256_slli_epi16(_mm256_srli_epi16(h, k), 4), _mm256_set1_epi8(0x10));
}

static inline __attribute__((always_inline)) void g_q5_k(const uint8_t *b, uint8_t *u, float *sc, float *mn)
{
	k4_scales(b, sc, mn);
	const __m256i m4 = _mm256_set1_epi8(0xF), h = ld256(b + 16);
	for (int i = 0; i < 4; i++) {
		__m256i q = ld256(b + 48 + 32 * i);
		st256(u + 64 * i, _mm256_or_si256(_mm256_and_si256(q, m4), hbit(h, 2 * i)));
		st256(u + 64 * i + 32, _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(q, 4), m4), hbit(h, 2 * i + 1)));
	}
}

static inline __attribute__((always_inline)) void g_q6_k(const uint8_t *b, uint8_t *u, float *sc, float *mn)
{
	(void)mn;
	__m512i s16 = _mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)(b + 192)));
	_mm512_storeu_ps(sc, _mm512_mul_ps(_mm512_cvtepi32_ps(s16), _mm512_set1_ps(h2f(b + 208))));
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

static inline __attribute__((always_inline)) void g_q3_k(const uint8_t *b, uint8_t *u, float *sc, float *mn)
{
	(void)mn;
	/* scale i: low 4 bits from byte i (i < 8) or the top nibble of byte
	 * i - 8; top 2 bits from byte 8 + i % 4, at bit 2 * (i / 4); minus 32 */
	uint32_t w0 = qrd32(b + 96), w1 = qrd32(b + 100), w2 = qrd32(b + 104);
	const uint32_t k4 = 0x0f0f0f0f, m2 = 0x03030303;
	float d = h2f(b + 108);
	__m128i sv = _mm_setr_epi32((int)((w0 & k4) | (w2 & m2) << 4), (int)((w1 & k4) | ((w2 >> 2) & m2) << 4),
				    (int)(((w0 >> 4) & k4) | ((w2 >> 4) & m2) << 4),
				    (int)(((w1 >> 4) & k4) | ((w2 >> 6) & m2) << 4));
	__m512i s16 = _mm512_sub_epi32(_mm512_cvtepu8_epi32(sv), _mm512_set1_epi32(32));
	_mm512_storeu_ps(sc, _mm512_mul_ps(_mm512_cvtepi32_ps(s16), _mm512_set1_ps(d)));
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

static inline __attribute__((always_inline)) void g_q2_k(const uint8_t *b, uint8_t *u, float *sc, float *mn)
{
	__m512i s16 = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)b));
	_mm512_storeu_ps(sc, _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_and_si512(s16, _mm512_set1_epi32(0xF))),
					   _mm512_set1_ps(h2f(b + 80))));
	_mm512_storeu_ps(mn, _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_srli_epi32(s16, 4)), _mm512_set1_ps(-h2f(b + 82))));
	const __m256i m3 = _mm256_set1_epi8(3);
	for (int n = 0; n < 2; n++) {
		__m256i q = ld256(b + 16 + 32 * n);
		for (int j = 0; j < 4; j++, u += 32)
			st256(u, _mm256_and_si256(_mm256_srli_epi16(q, 2 * j), m3));
	}
}

static inline __attribute__((always_inline)) void g_iq4_xs(const uint8_t *b, uint8_t *u, float *sc, float *mn)
{
	(void)u; /* levels: the file's nibbles (U4A) */
	(void)mn;
	float d = h2f(b);
	uint16_t sh = qrd16(b + 2);
	const uint8_t *sl = b + 4;
	for (int ib = 0; ib < 8; ib++) {
		int ls = ((sl[ib / 2] >> (4 * (ib % 2))) & 0xF) | ((sh >> (2 * ib)) & 3) << 4;
		sc[ib] = d * (float)(ls - 32);
	}
}

/* 4 x 8 grid magnitudes with the 32 sign bits s (bit j of byte l for
 * element 8l + j), stored as 64 + level */
static inline void grid32(uint64_t g0, uint64_t g1, uint64_t g2, uint64_t g3, uint32_t s, uint8_t *u)
{
	__m256i g = _mm256_setr_epi64x((long long)g0, (long long)g1, (long long)g2, (long long)g3);
	g = _mm256_mask_sub_epi8(g, s, _mm256_setzero_si256(), g);
	st256(u, _mm256_add_epi8(g, _mm256_set1_epi8(64)));
}

static inline __attribute__((always_inline)) void g_iq2_xxs(const uint8_t *b, uint8_t *u, float *sc, float *mn)
{
	(void)mn;
	float d = h2f(b);
	for (int ib = 0; ib < 8; ib++, u += 32) {
		const uint8_t *g = b + 2 + 8 * ib;
		uint32_t aux = qrd32(g + 4), sg = 0;
		sc[ib] = d * (0.5f + (float)(aux >> 28)) * 0.25f;
		for (int l = 0; l < 4; l++)
			sg |= (uint32_t)quant_ksigns_iq2xs[(aux >> (7 * l)) & 127] << (8 * l);
		grid32(quant_iq2xxs_grid[g[0]], quant_iq2xxs_grid[g[1]], quant_iq2xxs_grid[g[2]], quant_iq2xxs_grid[g[3]],
		       sg, u);
	}
}

static inline __attribute__((always_inline)) void g_iq2_xs(const uint8_t *b, uint8_t *u, float *sc, float *mn)
{
	(void)mn;
	float d = h2f(b);
	const uint8_t *s = b + 66;
	for (int ib = 0; ib < 8; ib++, u += 32) {
		sc[2 * ib] = d * (0.5f + (float)(s[ib] & 0xF)) * 0.25f;
		sc[2 * ib + 1] = d * (0.5f + (float)(s[ib] >> 4)) * 0.25f;
		uint16_t q[4];
		uint32_t sg = 0;
		for (int l = 0; l < 4; l++) {
			q[l] = qrd16(b + 2 + 2 * (4 * ib + l));
			sg |= (uint32_t)quant_ksigns_iq2xs[q[l] >> 9] << (8 * l);
		}
		grid32(quant_iq2xs_grid[q[0] & 511], quant_iq2xs_grid[q[1] & 511], quant_iq2xs_grid[q[2] & 511],
		       quant_iq2xs_grid[q[3] & 511], sg, u);
	}
}

static inline __attribute__((always_inline)) void g_iq2_s(const uint8_t *b, uint8_t *u, float *sc, float *mn)
{
	(void)mn;
	float d = h2f(b);
	const uint8_t *qs = b + 2, *signs = b + 34, *qh = b + 66, *s = b + 74;
	for (int ib = 0; ib < 8; ib++, u += 32) {
		sc[2 * ib] = d * (0.5f + (float)(s[ib] & 0xF)) * 0.25f;
		sc[2 * ib + 1] = d * (0.5f + (float)(s[ib] >> 4)) * 0.25f;
		uint64_t g[4];
		for (int l = 0; l < 4; l++)
			g[l] = quant_iq2s_grid[qs[4 * ib + l] | ((qh[ib] << (8 - 2 * l)) & 0x300)];
		grid32(g[0], g[1], g[2], g[3], qrd32(signs + 4 * ib), u);
	}
}

static inline __attribute__((always_inline)) void g_iq3_xxs(const uint8_t *b, uint8_t *u, float *sc, float *mn)
{
	(void)mn;
	float d = h2f(b);
	const uint8_t *qs = b + 2, *ss = b + 66;
	for (int ib = 0; ib < 8; ib++, u += 32) {
		uint32_t aux = qrd32(ss + 4 * ib), sg = 0;
		sc[ib] = d * (0.5f + (float)(aux >> 28)) * 0.5f;
		uint64_t g[4];
		for (int l = 0; l < 4; l++) {
			g[l] = quant_iq3xxs_grid[qs[8 * ib + 2 * l]] | (uint64_t)quant_iq3xxs_grid[qs[8 * ib + 2 * l + 1]] << 32;
			sg |= (uint32_t)quant_ksigns_iq2xs[(aux >> (7 * l)) & 127] << (8 * l);
		}
		grid32(g[0], g[1], g[2], g[3], sg, u);
	}
}

static inline __attribute__((always_inline)) void g_iq3_s(const uint8_t *b, uint8_t *u, float *sc, float *mn)
{
	(void)mn;
	float d = h2f(b);
	const uint8_t *qs = b + 2, *qh = b + 66, *signs = b + 74, *s = b + 106;
	for (int ib = 0; ib < 8; ib++, u += 32) {
		sc[ib] = d * (float)(1 + 2 * ((s[ib / 2] >> (4 * (ib % 2))) & 0xF));
		uint64_t g[4];
		for (int l = 0; l < 4; l++)
			g[l] = quant_iq3s_grid[qs[8 * ib + 2 * l] | ((qh[ib] << (8 - 2 * l)) & 256)] |
			       (uint64_t)quant_iq3s_grid[qs[8 * ib + 2 * l + 1] | ((qh[ib] << (7 - 2 * l)) & 256)] << 32;
		grid32(g[0], g[1], g[2], g[3], qrd32(signs + 4 * ib), u);
	}
}

/* IQ1_S: w = dl * (g + delta), g in {-1, 0, 1}: levels g + 1 and the
 * constant part dl * (delta - 1) as a min. */
static inline __attribute__((always_inline)) void g_iq1_s(const uint8_t *b, uint8_t *u, float *sc, float *mn)
{
	float d = h2f(b);
	const uint8_t *qs = b + 2;
	for (int ib = 0; ib < 8; ib++, u += 32) {
		uint16_t qh = qrd16(b + 34 + 2 * ib);
		float dl = d * (float)(2 * ((qh >> 12) & 7) + 1);
		sc[ib] = dl;
		mn[ib] = dl * ((qh & 0x8000 ? -0.125f : 0.125f) - 1.0f);
		uint64_t g[4];
		for (int l = 0; l < 4; l++)
			g[l] = quant_iq1s_grid[qs[4 * ib + l] | (((qh >> (3 * l)) & 7) << 8)];
		__m256i v = _mm256_setr_epi64x((long long)g[0], (long long)g[1], (long long)g[2], (long long)g[3]);
		st256(u, _mm256_add_epi8(v, _mm256_set1_epi8(1)));
	}
}

/* ternary: levels q in 0..2 (value q - 1), one scale per 256 */
static inline __attribute__((always_inline)) void g_tq1_0(const uint8_t *b, uint8_t *u, float *sc, float *mn)
{
	(void)mn;
	static const uint8_t pow3[5] = {1, 3, 9, 27, 81};
	float d = h2f(b + 52);
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

static inline __attribute__((always_inline)) void g_tq2_0(const uint8_t *b, uint8_t *u, float *sc, float *mn)
{
	(void)mn;
	float d = h2f(b + 64);
	for (int j = 0; j < 8; j++)
		sc[j] = d;
	for (int j = 0; j < 64; j += 32)
		for (int l = 0; l < 4; l++)
			for (int m = 0; m < 32; m++)
				*u++ = (b[j + m] >> (2 * l)) & 3;
}

static const struct gdesc *desc(uint32_t t);

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
	return vals_bytes(g->lay, cols) +
	       (size_t)(cols / g->g) * QG_ROWS * 4 * (g->asym ? 2 : 1);
}

/* tmp: panel, then the levels, scales and mins of one block column of 16
 * rows, then a quantized activation row; 64 bytes of slack for the
 * alignment */
static size_t tmp_size(uint32_t t, int64_t cols)
{
	const struct gdesc *g = desc(t);
	if (!g)
		return 0;
	const struct quant_type_info *ti = quant_type_info(t);
	return 64 + panel_bytes(g, cols) + (size_t)QG_ROWS * ti->blck + 2 * QG_ROWS * 16 * sizeof(float) +
	       quant_row_size(g->at, (uint64_t)cols, NULL);
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
				float v = g->at == QT_Q8_1 ? ds[0] : (float)sh;
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

/* the small loops of the transposes, unrolled so that their arrays stay in
 * registers */
#define PACK_UNROLL _Pragma("GCC unroll 16")

/* 8 rows of 8 dwords -> 8 columns (r[i] lane j -> r[j] lane i) */
static inline __attribute__((always_inline)) void transpose8x8(__m256i r[8])
{
	__m256i a[8], b[8];
	PACK_UNROLL for (int i = 0; i < 8; i += 2) {
		a[i] = _mm256_unpacklo_epi32(r[i], r[i + 1]);
		a[i + 1] = _mm256_unpackhi_epi32(r[i], r[i + 1]);
	}
	PACK_UNROLL for (int i = 0; i < 8; i += 4) {
		b[i] = _mm256_unpacklo_epi64(a[i], a[i + 2]);
		b[i + 1] = _mm256_unpackhi_epi64(a[i], a[i + 2]);
		b[i + 2] = _mm256_unpacklo_epi64(a[i + 1], a[i + 3]);
		b[i + 3] = _mm256_unpackhi_epi64(a[i + 1], a[i + 3]);
	}
	/* b[i] (rows 0..3) and b[i + 4] (rows 4..7) hold columns i and i + 4
	 * in their low and high halves */
	PACK_UNROLL for (int i = 0; i < 4; i++) {
		r[i] = _mm256_permute2x128_si256(b[i], b[i + 4], 0x20);
		r[i + 4] = _mm256_permute2x128_si256(b[i], b[i + 4], 0x31);
	}
}

/* The offset term of 8 tokens: c * sum (offset types) or the float sum
 * (mins), stored as one row of the tile's s array. */
static inline void put_sums(const struct gdesc *g, __m256i sum, uint8_t *dst)
{
	if (g->asym)
		_mm256_storeu_ps((float *)dst, _mm256_cvtepi32_ps(sum));
	else
		st256(dst, _mm256_mullo_epi32(sum, _mm256_set1_epi32(g->c)));
}

/* 16 floats times m, rounded to nearest even, to int8 with saturation (the
 * quantizers' _mm256_round_ps, cvtps_epi32 and packs give the same bytes);
 * Q8_K also clamps at 127 first, as its quantizer does */
static inline __m128i q8x16(const float *x, __m512 m, const int clamp)
{
	__m512i i = _mm512_cvt_roundps_epi32(_mm512_mul_ps(_mm512_loadu_ps(x), m),
					     _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
	if (clamp)
		i = _mm512_min_epi32(i, _mm512_set1_epi32(127));
	return _mm512_cvtsepi32_epi8(i);
}

/* One 32-element block of the GT tokens of a tile (x[i] + off, factors
 * m[i]) quantized, transposed and stored at q; returns the sums of the
 * codes of each token over the first and the second 16 elements. */
static inline __attribute__((always_inline)) void q8_block(const float *const x[GT], int64_t off, const float *m,
							   const int clamp, uint8_t *q, __m256i sum[2])
{
	__m256i v[8];
	PACK_UNROLL for (int i = 0; i < GT; i++) {
		__m512 mi = _mm512_set1_ps(m[i]);
		v[i] = _mm256_set_m128i(q8x16(x[i] + off + 16, mi, clamp), q8x16(x[i] + off, mi, clamp));
	}
	transpose8x8(v);
	const __m256i ones = _mm256_set1_epi8(1);
	sum[0] = sum[1] = _mm256_setzero_si256();
	PACK_UNROLL for (int e = 0; e < 8; e++) {
		st256(q + e * GT * 4, v[e]);
		sum[e >> 2] = _mm256_dpbusd_epi32(sum[e >> 2], ones, v[e]);
	}
}

/* A whole tile at once from the GT tokens' floats (x, rows cols apart):
 * quantized exactly as quant_quantize_act() does (Q8_0 / Q8_1: scale
 * amax / 127 per 32 rounded to fp16; Q8_K: -max / 127 per 256, max the
 * value of largest magnitude), with the per-block arithmetic done for the
 * 8 tokens in one vector, then laid out as pack_token() does. The bytes
 * are those of the quantizer plus pack_token() for finite inputs. */
static void pack_tile(const struct gdesc *g, int64_t cols, const float *x, uint8_t *tile)
{
	int64_t nb = cols / 32;
	uint8_t *q = tile;
	float *d = (float *)(tile + cols * GT);
	uint8_t *s = tile + cols * GT + nb * GT * 4;
	const float *xr[GT];
	for (int i = 0; i < GT; i++)
		xr[i] = x + i * cols;
	const __m512 absm = _mm512_castsi512_ps(_mm512_set1_epi32(0x7fffffff));
	float m[GT];
	__m256i sum[2];
	if (g->at == QT_Q8_K) {
		const int per = 32 / g->g;
		for (int64_t sb = 0; sb < nb / 8; sb++) {
			float hi[GT], lo[GT];
			for (int i = 0; i < GT; i++) {
				const float *xp = xr[i] + sb * 256;
				__m512 mx = _mm512_loadu_ps(xp), mn = mx;
				for (int k = 16; k < 256; k += 16) {
					__m512 v = _mm512_loadu_ps(xp + k);
					mx = _mm512_max_ps(mx, v);
					mn = _mm512_min_ps(mn, v);
				}
				hi[i] = _mm512_reduce_max_ps(mx);
				lo[i] = _mm512_reduce_min_ps(mn);
			}
			__m256 h = _mm256_loadu_ps(hi), l = _mm256_loadu_ps(lo);
			/* max = hi >= -lo ? hi : lo; a block of zeros gets d = 0 and
			 * codes 0 */
			__m256 mx = _mm256_mask_blend_ps(_mm256_cmp_ps_mask(h, _mm256_sub_ps(_mm256_setzero_ps(), l), _CMP_GE_OQ),
							 l, h);
			__mmask8 zero = _mm256_cmp_ps_mask(mx, _mm256_setzero_ps(), _CMP_EQ_OQ);
			__m256 is = _mm256_div_ps(_mm256_set1_ps(-127.f), mx);
			__m256 dv = _mm256_maskz_mov_ps((__mmask8)~zero, _mm256_div_ps(_mm256_set1_ps(1.f), is));
			_mm256_storeu_ps(m, _mm256_maskz_mov_ps((__mmask8)~zero, is));
			for (int j = 0; j < 8; j++) {
				int64_t b = sb * 8 + j;
				q8_block(xr, 32 * b, m, 1, q + b * 8 * GT * 4, sum);
				_mm256_storeu_ps(d + b * GT, dv);
				if (per == 1) {
					put_sums(g, _mm256_add_epi32(sum[0], sum[1]), s + b * GT * 4);
				} else {
					put_sums(g, sum[0], s + 2 * b * GT * 4);
					put_sums(g, sum[1], s + (2 * b + 1) * GT * 4);
				}
			}
		}
		return;
	}
	/* Q8_0 (offset types, one sum per 32) and Q8_1 (mins: d * sum) */
	for (int64_t b = 0; b < nb; b++) {
		float am[GT];
		for (int i = 0; i < GT; i++) {
			const float *xp = xr[i] + 32 * b;
			am[i] = _mm512_reduce_max_ps(
				_mm512_max_ps(_mm512_and_ps(_mm512_loadu_ps(xp), absm), _mm512_and_ps(_mm512_loadu_ps(xp + 16), absm)));
		}
		__m256 amv = _mm256_loadu_ps(am);
		__m256 dv = _mm256_div_ps(amv, _mm256_set1_ps(127.f));
		__mmask8 nz = _mm256_cmp_ps_mask(amv, _mm256_setzero_ps(), _CMP_NEQ_UQ);
		_mm256_storeu_ps(m, _mm256_maskz_div_ps(nz, _mm256_set1_ps(127.f), amv));
		q8_block(xr, 32 * b, m, 0, q + b * 8 * GT * 4, sum);
		_mm256_storeu_ps(d + b * GT, _mm256_cvtph_ps(_mm256_cvtps_ph(dv, _MM_FROUND_TO_NEAREST_INT)));
		__m256i tot = _mm256_add_epi32(sum[0], sum[1]);
		if (g->asym)
			_mm256_storeu_ps((float *)(s + b * GT * 4),
					 _mm256_cvtph_ps(_mm256_cvtps_ph(_mm256_mul_ps(_mm256_cvtepi32_ps(tot), dv),
									 _MM_FROUND_TO_NEAREST_INT)));
		else
			put_sums(g, tot, s + b * GT * 4);
	}
}

/* A tile whose GT tokens all lie in [t0, t1) is quantized and packed by
 * pack_tile straight from the floats; the tokens of a tile shared with
 * another range are quantized into tmp and packed one by one. Both give
 * the same bytes. */
static void pack_act(uint32_t t, int64_t cols, const float *x, int64_t ntok, int64_t t0, int64_t t1, void *act,
		     void *tmp)
{
	const struct gdesc *g = desc(t);
	size_t tb = tile_bytes(g, cols);
	uint8_t *row = align64(tmp) + (tmp_size(t, cols) - 64 - quant_row_size(g->at, (uint64_t)cols, NULL));
	for (int64_t k0 = t0 - t0 % GT; k0 < t1; k0 += GT) {
		int64_t a = k0 > t0 ? k0 : t0, b = k0 + GT < t1 ? k0 + GT : t1;
		uint8_t *tile = (uint8_t *)act + (size_t)(k0 / GT) * tb;
		if (a == k0 && b == k0 + GT && !(g->at == QT_Q8_0 && g->asym) && !(g->at != QT_Q8_K && g->g != 32)) {
			pack_tile(g, cols, x + k0 * cols, tile);
			continue;
		}
		for (int64_t k = a; k < b; k++) {
			quant_quantize_act(g->at, x + k * cols, row, (uint64_t)cols);
			pack_token(g, cols, row, tile, (int)(k - k0));
		}
	}
	if (t1 == ntok)
		for (int64_t k = ntok; k % GT; k++)
			clear_token(cols, g, (uint8_t *)act + (size_t)(k / GT) * tb, (int)(k % GT));
}

/* ---- weights -> panel --------------------------------------------------------- */

/* 16 rows of 32 bytes (row r at rp[r] + off) -> 8 x 64 bytes, chunk e
 * holding bytes 4e..4e+3 of every row */
static inline __attribute__((always_inline)) void transpose16x32(const uint8_t *const rp[QG_ROWS], size_t off, uint8_t *dst)
{
	__m512i z[8], s[8], u[8];
	PACK_UNROLL for (int i = 0; i < 8; i++)
		z[i] = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)(rp[i] + off))),
					  _mm256_loadu_si256((const __m256i *)(rp[i + 8] + off)), 1);
	PACK_UNROLL for (int i = 0; i < 8; i += 2) {
		s[i] = _mm512_unpacklo_epi32(z[i], z[i + 1]);
		s[i + 1] = _mm512_unpackhi_epi32(z[i], z[i + 1]);
	}
	PACK_UNROLL for (int i = 0; i < 8; i += 4) {
		u[i] = _mm512_unpacklo_epi64(s[i], s[i + 2]);
		u[i + 1] = _mm512_unpackhi_epi64(s[i], s[i + 2]);
		u[i + 2] = _mm512_unpacklo_epi64(s[i + 1], s[i + 3]);
		u[i + 3] = _mm512_unpackhi_epi64(s[i + 1], s[i + 3]);
	}
	/* u[j] (rows 0..3 | 8..11) and u[j+4] (rows 4..7 | 12..15) hold chunks
	 * j and j+4 in their even and odd 128-bit lanes */
	const __m512i lo = _mm512_setr_epi64(0, 1, 8, 9, 4, 5, 12, 13);
	const __m512i hi = _mm512_setr_epi64(2, 3, 10, 11, 6, 7, 14, 15);
	PACK_UNROLL for (int j = 0; j < 4; j++) {
		_mm512_store_si512((__m512i *)(dst + j * 64), _mm512_permutex2var_epi64(u[j], lo, u[j + 4]));
		_mm512_store_si512((__m512i *)(dst + (j + 4) * 64), _mm512_permutex2var_epi64(u[j], hi, u[j + 4]));
	}
}

/* 16 rows of 16 bytes -> 4 x 64 bytes, as above */
static inline __attribute__((always_inline)) void transpose16x16(const uint8_t *const rp[QG_ROWS], size_t off, uint8_t *dst)
{
	__m512i z[4];
	PACK_UNROLL for (int i = 0; i < 4; i++) {
		z[i] = _mm512_castsi128_si512(_mm_loadu_si128((const __m128i *)(rp[i] + off)));
		z[i] = _mm512_inserti32x4(z[i], _mm_loadu_si128((const __m128i *)(rp[i + 4] + off)), 1);
		z[i] = _mm512_inserti32x4(z[i], _mm_loadu_si128((const __m128i *)(rp[i + 8] + off)), 2);
		z[i] = _mm512_inserti32x4(z[i], _mm_loadu_si128((const __m128i *)(rp[i + 12] + off)), 3);
	}
	/* lane k of z[i] is row i + 4k: a 4 x 4 transpose within each lane */
	__m512i a0 = _mm512_unpacklo_epi32(z[0], z[1]), a1 = _mm512_unpackhi_epi32(z[0], z[1]);
	__m512i a2 = _mm512_unpacklo_epi32(z[2], z[3]), a3 = _mm512_unpackhi_epi32(z[2], z[3]);
	_mm512_store_si512((__m512i *)dst, _mm512_unpacklo_epi64(a0, a2));
	_mm512_store_si512((__m512i *)(dst + 64), _mm512_unpackhi_epi64(a0, a2));
	_mm512_store_si512((__m512i *)(dst + 128), _mm512_unpacklo_epi64(a1, a3));
	_mm512_store_si512((__m512i *)(dst + 192), _mm512_unpackhi_epi64(a1, a3));
}

static const uint8_t zero_block[256];

/* blocks to prefetch ahead in each row: about 512 bytes */
#define PF_AHEAD(bsize) (512 / (bsize) + 1)

/* Convert nr rows (the rest of the 16 are zero) of a type into the panel.
 * dec decodes one block of a row: its scales (and mins) and, for U8 types,
 * its levels into a 16-row buffer, transposed afterwards; U4 types
 * transpose the file's nibble bytes (qoff into the block) directly. A
 * 32-element block has one scale, written straight into the panel; a
 * super-block's 8 or 16 go into a row-major buffer and are transposed like
 * the levels. Instantiated per type so that the decoder is inlined. hd:
 * the block holds only an fp16 scale (and min) before the levels the
 * panel takes as they are (Q4_0, Q4_1, Q8_0, IQ4_NL), which the 16 rows
 * gather at once. */
static inline __attribute__((always_inline)) void
pack_impl(void (*dec)(const uint8_t *, uint8_t *, float *, float *), const int hd, const int blck, const int bsize,
	  const int g, const int asym, const int lay, const int qoff, int64_t cols, const uint8_t *w, size_t wstride, int nr,
	  uint8_t *panel, uint8_t *buf)
{
	const int nsb = blck / g;
	uint8_t *vals = panel;
	float *sc = (float *)(panel + vals_bytes(lay, cols));
	float *mn = sc + (cols / g) * QG_ROWS;
	float *srow = (float *)(buf + QG_ROWS * blck), *mrow = srow + QG_ROWS * 16;
	const uint8_t *lv[QG_ROWS], *sr[QG_ROWS], *mr[QG_ROWS];
	for (int r = 0; r < QG_ROWS; r++) {
		lv[r] = buf + r * blck;
		sr[r] = (const uint8_t *)(srow + r * nsb);
		mr[r] = (const uint8_t *)(mrow + r * nsb);
	}
	if (nr < QG_ROWS) {
		memset(buf + nr * blck, 0, (size_t)(QG_ROWS - nr) * blck);
		memset(srow + nr * nsb, 0, sizeof(float) * (size_t)(QG_ROWS - nr) * nsb);
		memset(mrow + nr * nsb, 0, sizeof(float) * (size_t)(QG_ROWS - nr) * nsb);
	}
	/* gather offsets of the 16 rows (hd types), if they fit in 32 bits */
	const bool gidx_ok = hd && wstride <= INT32_MAX / QG_ROWS;
	const __m512i gidx = _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
						_mm512_set1_epi32(gidx_ok ? (int)wstride : 0));
	const __mmask16 rmask = (__mmask16)((1u << nr) - 1);
	for (int64_t blk = 0; blk < cols / blck; blk++, sc += nsb * QG_ROWS, mn += nsb * QG_ROWS) {
		const uint8_t *rp[QG_ROWS];
		for (int r = 0; r < QG_ROWS; r++)
			rp[r] = r < nr ? w + r * wstride + blk * bsize : zero_block;
		/* 16 rows are 16 streams, more than the hardware prefetchers
		 * follow: ask for the lines a few hundred bytes ahead */
		if (blk + PF_AHEAD(bsize) < cols / blck)
			for (int r = 0; r < nr; r++)
				_mm_prefetch((const char *)(rp[r] + PF_AHEAD(bsize) * bsize), _MM_HINT_T0);
		if (hd && gidx_ok) {
			/* the fp16 scale (and min) at the start of the block of the
			 * 16 rows in one gather, converted as h2f does */
			__m512i v = _mm512_mask_i32gather_epi32(_mm512_setzero_si512(), rmask, gidx, w + blk * bsize, 1);
			_mm512_store_ps(sc, _mm512_cvtph_ps(_mm512_cvtepi32_epi16(v)));
			if (asym)
				_mm512_store_ps(mn, _mm512_cvtph_ps(_mm512_cvtepi32_epi16(_mm512_srli_epi32(v, 16))));
		} else if (blck == 32) {
			for (int r = 0; r < nr; r++)
				dec(rp[r], buf + r * blck, sc + r, mn + r);
			for (int r = nr; r < QG_ROWS; r++) {
				sc[r] = 0;
				if (asym)
					mn[r] = 0;
			}
		} else {
			for (int r = 0; r < nr; r++)
				dec(rp[r], buf + r * blck, srow + r * nsb, mrow + r * nsb);
			for (int h = 0; h < nsb / 8; h++) {
				transpose16x32(sr, 32 * (size_t)h, (uint8_t *)(sc + 8 * h * QG_ROWS));
				if (asym)
					transpose16x32(mr, 32 * (size_t)h, (uint8_t *)(mn + 8 * h * QG_ROWS));
			}
		}
		if (lay == U4A)
			for (int s = 0; s < blck / 32; s++)
				transpose16x16(rp, (size_t)(qoff + 16 * s), vals + (blk * blck / 32 + s) * 256);
		else if (lay == S8)
			transpose16x32(rp, (size_t)qoff, vals + blk * 512);
		else if (lay == U4B)
			for (int s = 0; s < blck / 64; s++)
				transpose16x32(rp, (size_t)(qoff + 32 * s), vals + (blk * blck / 64 + s) * 512);
		else
			for (int s = 0; s < blck / 32; s++)
				transpose16x32(lv, 32 * (size_t)s, vals + (blk * blck / 32 + s) * 512);
	}
}

#define DEF_PACK(name, dec, blck, bsize, g, asym, lay, qoff)                                                  \
	static void pack_##name(int64_t cols, const uint8_t *w, size_t wstride, int nr, uint8_t *panel,       \
				uint8_t *buf)                                                                     \
	{                                                                                                     \
		pack_impl(dec, dec == g_d16 || dec == g_q4_1, blck, bsize, g, asym, lay, qoff, cols, w, wstride, \
			  nr, panel, buf);                                                                    \
	}
DEF_PACK(q4_0, g_d16, 32, Q4_0_B, 32, 0, U4A, 2)
DEF_PACK(q4_1, g_q4_1, 32, Q4_1_B, 32, 1, U4A, 4)
DEF_PACK(q5_0, g_q5_0, 32, Q5_0_B, 32, 0, U8, 0)
DEF_PACK(q5_1, g_q5_1, 32, Q5_1_B, 32, 1, U8, 0)
DEF_PACK(q8_0, g_d16, 32, Q8_0_B, 32, 0, S8, 2)
DEF_PACK(iq4_nl, g_d16, 32, IQ4_NL_B, 32, 0, U4A, 2)
DEF_PACK(mxfp4, g_mxfp4, 32, MXFP4_B, 32, 0, U4A, 1)
DEF_PACK(q2_k, g_q2_k, 256, Q2_K_B, 16, 1, U8, 0)
DEF_PACK(q3_k, g_q3_k, 256, Q3_K_B, 16, 0, U8, 0)
DEF_PACK(q4_k, g_q4_k, 256, Q4_K_B, 32, 1, U4B, 16)
DEF_PACK(q5_k, g_q5_k, 256, Q5_K_B, 32, 1, U8, 0)
DEF_PACK(q6_k, g_q6_k, 256, Q6_K_B, 16, 0, U8, 0)
DEF_PACK(iq4_xs, g_iq4_xs, 256, IQ4_XS_B, 32, 0, U4A, 8)
DEF_PACK(iq2_xxs, g_iq2_xxs, 256, 66, 32, 0, U8, 0)
DEF_PACK(iq2_xs, g_iq2_xs, 256, 74, 16, 0, U8, 0)
DEF_PACK(iq2_s, g_iq2_s, 256, 82, 16, 0, U8, 0)
DEF_PACK(iq3_xxs, g_iq3_xxs, 256, 98, 32, 0, U8, 0)
DEF_PACK(iq3_s, g_iq3_s, 256, 110, 32, 0, U8, 0)
DEF_PACK(iq1_s, g_iq1_s, 256, 50, 32, 1, U8, 0)
DEF_PACK(tq1_0, g_tq1_0, 256, 54, 32, 0, U8, 0)
DEF_PACK(tq2_0, g_tq2_0, 256, 66, 32, 0, U8, 0)

/* ---- kernel -------------------------------------------------------------------- */

#define UNROLL _Pragma("GCC unroll 16")

/* Levels of chunk e (groups of 4 k, 0..7) of the current 32-element block:
 * U8 chunks are 64 bytes each; U4A blocks take chunk e & 3, high nibbles
 * for e >= 4; U4B pairs take chunk e, high nibbles for the second block
 * of the pair (hi). A lut maps nibbles to levels. */
static inline __attribute__((always_inline)) __m512i getw(const int lay, const int lut, const uint8_t *v, int e, int hi,
							  __m512i lutv)
{
	if (lay == U8)
		return _mm512_load_si512((const __m512i *)(v + 64 * e));
	if (lay == S8)
		return _mm512_xor_si512(_mm512_load_si512((const __m512i *)(v + 64 * e)), _mm512_set1_epi8((char)0x80));
	__m512i x = _mm512_load_si512((const __m512i *)(v + 64 * (lay == U4A ? (e & 3) : e)));
	int up = lay == U4A ? e >= 4 : hi;
	const __m512i m4 = _mm512_set1_epi8(0xF);
	x = up ? _mm512_and_si512(_mm512_srli_epi16(x, 4), m4) : _mm512_and_si512(x, m4);
	return lut ? _mm512_shuffle_epi8(lutv, x) : x;
}

/* s[e & 1][t] += levels x activations over groups e0..e0+3 of the current
 * block: two sets of accumulators, so that 16 independent chains hide the
 * latency of vpdpbusd (4 cycles at 2 per cycle on Zen 5) */
#define DOT4(e0)                                                                                             \
	UNROLL for (int e = e0; e < e0 + 4; e++)                                                             \
	{                                                                                                    \
		__m512i w = getw(lay, lut != 0, vals, e, k & 1, lutv);                                        \
		UNROLL for (int t = 0; t < GT; t++) s[e & 1][t] =                                             \
			_mm512_dpbusd_epi32(s[e & 1][t], w, _mm512_set1_epi32(aq[GT * e + t]));                \
	}

/* the two sets summed into s[0] (exact: integers), s[1] cleared */
#define MERGE() UNROLL for (int t = 0; t < GT; t++) { s[0][t] = _mm512_add_epi32(s[0][t], s[1][t]); s[1][t] = _mm512_setzero_si512(); }
#define CLEAR() UNROLL for (int t = 0; t < GT; t++) s[0][t] = s[1][t] = _mm512_setzero_si512();

/* bytes of levels per 32-element block (U4B: 512 per pair, after the second) */
#define VALS_STEP(k) (lay == U8 || lay == S8 ? 512 : lay == U4A ? 256 : ((k) & 1) * 512)

/* The int32 sums of one scale block -> floats times the row scales (and
 * the activation scales ad, unless NULL), with the offset (integer, per
 * token) or the mins (float, per token, already scaled) applied. */
static inline __attribute__((always_inline)) void close_block(const int asym, __m512i s[GT], const float *sc,
							      const float *mn, const void *as, const float *ad,
							      __m512 acc[GT])
{
	__m512 scv = _mm512_load_ps(sc);
#define SCALE(t) (ad ? _mm512_mul_ps(scv, _mm512_set1_ps(ad[t])) : scv)
	if (asym) {
		__m512 mnv = _mm512_load_ps(mn);
		UNROLL for (int t = 0; t < GT; t++) {
			acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s[t]), SCALE(t), acc[t]);
			acc[t] = _mm512_fmadd_ps(mnv, _mm512_set1_ps(((const float *)as)[t]), acc[t]);
		}
	} else {
		UNROLL for (int t = 0; t < GT; t++) {
			__m512i v = _mm512_sub_epi32(s[t], _mm512_set1_epi32(((const int32_t *)as)[t]));
			acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(v), SCALE(t), acc[t]);
		}
	}
#undef SCALE
}

/* nb blocks of 32 k. The activation scale multiplies the sum of a span of
 * span32 blocks: 1 for Q8_0 / Q8_1 activations, 8 for Q8_K (one scale per
 * 256), which saves a multiply per scale block. */
static inline __attribute__((always_inline)) void
kern(const int g16, const int asym, const int span32, const int lay, const int8_t *lut, int64_t nb,
     const uint8_t *vals, const float *sc, const float *mn, const uint8_t *tile, int64_t cols, __m512 out[GT])
{
	/* local accumulators: out may alias the float loads, which would keep
	 * them in memory */
	__m512 acc[GT];
	const int32_t *aq = (const int32_t *)tile;
	const float *ad = (const float *)(tile + cols * GT);
	const uint8_t *as = tile + cols * GT + (cols / 32) * GT * 4;
	__m512i lutv = _mm512_setzero_si512();
	if (lut)
		lutv = _mm512_broadcast_i32x4(
			_mm_add_epi8(_mm_loadu_si128((const __m128i *)lut), _mm_set1_epi8((char)0x80)));
	UNROLL for (int t = 0; t < GT; t++) acc[t] = _mm512_setzero_ps();
	if (span32 == 1) {
		for (int64_t k = 0; k < nb; k++) {
			__m512i s[2][GT];
			CLEAR()
			DOT4(0)
			DOT4(4)
			MERGE()
			close_block(asym, s[0], sc, mn, as, ad, acc);
			sc += QG_ROWS;
			mn += QG_ROWS;
			as += GT * 4;
			ad += GT;
			vals += VALS_STEP(k);
			aq += 8 * GT;
		}
		UNROLL for (int t = 0; t < GT; t++) out[t] = acc[t];
		return;
	}
	for (int64_t b = 0; b < nb; b += span32) {
		__m512 part[GT];
		UNROLL for (int t = 0; t < GT; t++) part[t] = _mm512_setzero_ps();
		for (int k = 0; k < span32; k++) {
			__m512i s[2][GT];
			CLEAR()
			DOT4(0)
			if (g16) {
				MERGE()
				close_block(asym, s[0], sc, mn, as, NULL, part);
				sc += QG_ROWS;
				mn += QG_ROWS;
				as += GT * 4;
				UNROLL for (int t = 0; t < GT; t++) s[0][t] = _mm512_setzero_si512();
			}
			DOT4(4)
			MERGE()
			close_block(asym, s[0], sc, mn, as, NULL, part);
			sc += QG_ROWS;
			mn += QG_ROWS;
			as += GT * 4;
			vals += VALS_STEP(k);
			aq += 8 * GT;
		}
		UNROLL for (int t = 0; t < GT; t++) acc[t] = _mm512_fmadd_ps(part[t], _mm512_set1_ps(ad[t]), acc[t]);
		ad += GT * span32;
	}
	UNROLL for (int t = 0; t < GT; t++) out[t] = acc[t];
}

#define KERN_VARIANT(name, g16, asym, span, lay, lut)                                                         \
	static void name(int64_t nb, const uint8_t *vals, const float *sc, const float *mn, const uint8_t *tile, \
			 int64_t cols, const int8_t *lt, __m512 *acc)                                             \
	{                                                                                                         \
		(void)lt;                                                                                         \
		kern(g16, asym, span, lay, lut, nb, vals, sc, mn, tile, cols, acc);                                \
	}
KERN_VARIANT(kern32, 0, 0, 1, U8, NULL)
KERN_VARIANT(kern32m, 0, 1, 1, U8, NULL)
KERN_VARIANT(kern32k, 0, 0, 8, U8, NULL)
KERN_VARIANT(kern32km, 0, 1, 8, U8, NULL)
KERN_VARIANT(kern16k, 1, 0, 8, U8, NULL)
KERN_VARIANT(kern16km, 1, 1, 8, U8, NULL)
KERN_VARIANT(kern32_s8, 0, 0, 1, S8, NULL)
KERN_VARIANT(kern32_4a, 0, 0, 1, U4A, NULL)
KERN_VARIANT(kern32m_4a, 0, 1, 1, U4A, NULL)
KERN_VARIANT(kern32_4al, 0, 0, 1, U4A, lt)
KERN_VARIANT(kern32k_4al, 0, 0, 8, U4A, lt)
KERN_VARIANT(kern32km_4b, 0, 1, 8, U4B, NULL)

static const struct gdesc *desc(uint32_t t)
{
	static const struct gdesc d[QT_COUNT] = {
		[QT_Q4_0] = {32, 0, 8, U4A, QT_Q8_0, NULL, pack_q4_0, kern32_4a},
		[QT_Q4_1] = {32, 1, 0, U4A, QT_Q8_1, NULL, pack_q4_1, kern32m_4a},
		[QT_Q5_0] = {32, 0, 16, U8, QT_Q8_0, NULL, pack_q5_0, kern32},
		[QT_Q5_1] = {32, 1, 0, U8, QT_Q8_1, NULL, pack_q5_1, kern32m},
		[QT_Q8_0] = {32, 0, 128, S8, QT_Q8_0, NULL, pack_q8_0, kern32_s8},
		[QT_IQ4_NL] = {32, 0, 128, U4A, QT_Q8_0, quant_kvalues_iq4nl, pack_iq4_nl, kern32_4al},
		[QT_MXFP4] = {32, 0, 128, U4A, QT_Q8_0, quant_kvalues_mxfp4, pack_mxfp4, kern32_4al},
		[QT_Q2_K] = {16, 1, 0, U8, QT_Q8_K, NULL, pack_q2_k, kern16km},
		[QT_Q3_K] = {16, 0, 4, U8, QT_Q8_K, NULL, pack_q3_k, kern16k},
		[QT_Q4_K] = {32, 1, 0, U4B, QT_Q8_K, NULL, pack_q4_k, kern32km_4b},
		[QT_Q5_K] = {32, 1, 0, U8, QT_Q8_K, NULL, pack_q5_k, kern32km},
		[QT_Q6_K] = {16, 0, 32, U8, QT_Q8_K, NULL, pack_q6_k, kern16k},
		[QT_IQ4_XS] = {32, 0, 128, U4A, QT_Q8_K, quant_kvalues_iq4nl, pack_iq4_xs, kern32k_4al},
		[QT_IQ2_XXS] = {32, 0, 64, U8, QT_Q8_K, NULL, pack_iq2_xxs, kern32k},
		[QT_IQ2_XS] = {16, 0, 64, U8, QT_Q8_K, NULL, pack_iq2_xs, kern16k},
		[QT_IQ2_S] = {16, 0, 64, U8, QT_Q8_K, NULL, pack_iq2_s, kern16k},
		[QT_IQ3_XXS] = {32, 0, 64, U8, QT_Q8_K, NULL, pack_iq3_xxs, kern32k},
		[QT_IQ3_S] = {32, 0, 64, U8, QT_Q8_K, NULL, pack_iq3_s, kern32k},
		[QT_IQ1_S] = {32, 1, 0, U8, QT_Q8_K, NULL, pack_iq1_s, kern32km},
		[QT_TQ1_0] = {32, 0, 1, U8, QT_Q8_K, NULL, pack_tq1_0, kern32k},
		[QT_TQ2_0] = {32, 0, 1, U8, QT_Q8_K, NULL, pack_tq2_0, kern32k},
	};
	return t < QT_COUNT && d[t].pack ? &d[t] : NULL;
}

static size_t panel_size(uint32_t t, int64_t cols)
{
	const struct gdesc *g = desc(t);
	return g ? (panel_bytes(g, cols) + 63) & ~(size_t)63 : 0;
}

static void pack_panel(uint32_t t, int64_t cols, const uint8_t *w, size_t wstride, int nr, void *panel, void *tmp)
{
	const struct gdesc *g = desc(t);
	g->pack(cols, w, wstride, nr, panel, align64(tmp) + panel_bytes(g, cols));
}

static void rows_panel(uint32_t t, int64_t cols, const void *panel, int nr, const void *act, int64_t ntok, float *y,
		       size_t ystride)
{
	const struct gdesc *g = desc(t);
	const uint8_t *pv = panel;
	const float *sc = (const float *)(pv + vals_bytes(g->lay, cols));
	const float *mn = sc + (cols / g->g) * QG_ROWS;
	size_t tb = tile_bytes(g, cols);
	__mmask16 m = (__mmask16)((1u << nr) - 1);
	for (int64_t t0 = 0; t0 < ntok; t0 += GT) {
		__m512 acc[GT];
		g->kern(cols / 32, pv, sc, mn, (const uint8_t *)act + (size_t)(t0 / GT) * tb, cols, g->lut, acc);
		int nt = ntok - t0 < GT ? (int)(ntok - t0) : GT;
		for (int i = 0; i < nt; i++)
			_mm512_mask_storeu_ps(y + (size_t)(t0 + i) * ystride, m, acc[i]);
	}
}

static void rows(uint32_t t, int64_t cols, const uint8_t *w, size_t wstride, int nr, const void *act, int64_t ntok,
		 float *y, size_t ystride, void *tmp)
{
	uint8_t *panel = align64(tmp);
	pack_panel(t, cols, w, wstride, nr, panel, tmp);
	rows_panel(t, cols, panel, nr, act, ntok, y, ystride);
}

const struct quant_gemm_ops quant_gemm_int_avx512 = {
	.ok = ok,
	.act_size = act_size,
	.tmp_size = tmp_size,
	.pack_act = pack_act,
	.rows = rows,
	.panel_size = panel_size,
	.pack_panel = pack_panel,
	.rows_panel = rows_panel,
};

#endif
