/* dot_neon.c - ARM64 NEON dot kernels using the int8 dot product (SDOT,
 * armv8.2 dotprod). The integer kernels are installed only when the CPU
 * reports dotprod; the float ones always.
 *
 * Levels are unpacked to signed bytes (offsets subtracted, signs applied),
 * multiplied with the int8 activations four at a time into int32 lanes, and
 * scaled to float per block or sub-block, as in the x86 kernels. */
#include "quant/qimpl.h"

#if defined(__aarch64__)
#include <arm_neon.h>

#include "quant/cpu.h"
#include "quant/iq_grids.h"

static inline int32x4_t dot16(int32x4_t acc, int8x16_t a, int8x16_t b)
{
	return vdotq_s32(acc, a, b);
}

/* 16 bytes of nibbles -> low nibbles, high nibbles (unsigned) */
static inline void nib16(const uint8_t *p, int8x16_t *lo, int8x16_t *hi)
{
	uint8x16_t q = vld1q_u8(p);
	*lo = vreinterpretq_s8_u8(vandq_u8(q, vdupq_n_u8(0x0F)));
	*hi = vreinterpretq_s8_u8(vshrq_n_u8(q, 4));
}

static const uint8_t bitmask16[16] = {1, 2, 4, 8, 16, 32, 64, 128, 1, 2, 4, 8, 16, 32, 64, 128};

/* 16 bits -> 16 bytes of 0x10 where the bit is set */
static inline int8x16_t bits16_x10(uint32_t bits)
{
	uint8x16_t b = vcombine_u8(vdup_n_u8((uint8_t)bits), vdup_n_u8((uint8_t)(bits >> 8)));
	uint8x16_t t = vtstq_u8(b, vld1q_u8(bitmask16));
	return vreinterpretq_s8_u8(vandq_u8(t, vdupq_n_u8(0x10)));
}

/* y negated where the sign bit (one byte of bits per 8 elements) is set */
static inline int8x16_t apply_signs16(int8x16_t y, uint8_t s0, uint8_t s1)
{
	uint8x16_t b = vcombine_u8(vdup_n_u8(s0), vdup_n_u8(s1));
	uint8x16_t neg = vtstq_u8(b, vld1q_u8(bitmask16));
	return vbslq_s8(neg, vnegq_s8(y), y);
}

static inline int8x16_t ld8(const uint8_t *p) { return vld1q_s8((const int8_t *)p); }

/* ---- 32-element formats ---------------------------------------------------- */

static float dot_q8_0(int64_t n, const void *vw, const void *va)
{
	const uint8_t *w = vw, *a = va;
	float32x4_t acc = vdupq_n_f32(0);
	for (int64_t i = 0; i < n / 32; i++, w += Q8_0_B, a += Q8_0_B) {
		int32x4_t p = dot16(dot16(vdupq_n_s32(0), ld8(w + 2), ld8(a + 2)), ld8(w + 18), ld8(a + 18));
		acc = vmlaq_n_f32(acc, vcvtq_f32_s32(p), qrdfp16(w) * qrdfp16(a));
	}
	return vaddvq_f32(acc);
}

static float dot_q4_0(int64_t n, const void *vw, const void *va)
{
	const uint8_t *w = vw, *a = va;
	const int8x16_t off = vdupq_n_s8(8);
	float32x4_t acc = vdupq_n_f32(0);
	for (int64_t i = 0; i < n / 32; i++, w += Q4_0_B, a += Q8_0_B) {
		int8x16_t lo, hi;
		nib16(w + 2, &lo, &hi);
		int32x4_t p = dot16(dot16(vdupq_n_s32(0), vsubq_s8(lo, off), ld8(a + 2)), vsubq_s8(hi, off), ld8(a + 18));
		acc = vmlaq_n_f32(acc, vcvtq_f32_s32(p), qrdfp16(w) * qrdfp16(a));
	}
	return vaddvq_f32(acc);
}

static float dot_q4_1(int64_t n, const void *vw, const void *va)
{
	const uint8_t *w = vw, *a = va;
	float32x4_t acc = vdupq_n_f32(0);
	float summ = 0;
	for (int64_t i = 0; i < n / 32; i++, w += Q4_1_B, a += Q8_1_B) {
		int8x16_t lo, hi;
		nib16(w + 4, &lo, &hi);
		int32x4_t p = dot16(dot16(vdupq_n_s32(0), lo, ld8(a + 4)), hi, ld8(a + 20));
		acc = vmlaq_n_f32(acc, vcvtq_f32_s32(p), qrdfp16(w) * qrdfp16(a));
		summ += qrdfp16(w + 2) * qrdfp16(a + 2);
	}
	return vaddvq_f32(acc) + summ;
}

static float dot_q5_0(int64_t n, const void *vw, const void *va)
{
	const uint8_t *w = vw, *a = va;
	const int8x16_t off = vdupq_n_s8(16);
	float32x4_t acc = vdupq_n_f32(0);
	for (int64_t i = 0; i < n / 32; i++, w += Q5_0_B, a += Q8_0_B) {
		uint32_t qh = qrd32(w + 2);
		int8x16_t lo, hi;
		nib16(w + 6, &lo, &hi);
		lo = vsubq_s8(vorrq_s8(lo, bits16_x10(qh)), off);
		hi = vsubq_s8(vorrq_s8(hi, bits16_x10(qh >> 16)), off);
		int32x4_t p = dot16(dot16(vdupq_n_s32(0), lo, ld8(a + 2)), hi, ld8(a + 18));
		acc = vmlaq_n_f32(acc, vcvtq_f32_s32(p), qrdfp16(w) * qrdfp16(a));
	}
	return vaddvq_f32(acc);
}

static float dot_q5_1(int64_t n, const void *vw, const void *va)
{
	const uint8_t *w = vw, *a = va;
	float32x4_t acc = vdupq_n_f32(0);
	float summ = 0;
	for (int64_t i = 0; i < n / 32; i++, w += Q5_1_B, a += Q8_1_B) {
		uint32_t qh = qrd32(w + 4);
		int8x16_t lo, hi;
		nib16(w + 8, &lo, &hi);
		lo = vorrq_s8(lo, bits16_x10(qh));
		hi = vorrq_s8(hi, bits16_x10(qh >> 16));
		int32x4_t p = dot16(dot16(vdupq_n_s32(0), lo, ld8(a + 4)), hi, ld8(a + 20));
		acc = vmlaq_n_f32(acc, vcvtq_f32_s32(p), qrdfp16(w) * qrdfp16(a));
		summ += qrdfp16(w + 2) * qrdfp16(a + 2);
	}
	return vaddvq_f32(acc) + summ;
}

static float dot_iq4_nl(int64_t n, const void *vw, const void *va)
{
	const uint8_t *w = vw, *a = va;
	const int8x16_t kv = vld1q_s8(quant_kvalues_iq4nl);
	float32x4_t acc = vdupq_n_f32(0);
	for (int64_t i = 0; i < n / 32; i++, w += IQ4_NL_B, a += Q8_0_B) {
		int8x16_t lo, hi;
		nib16(w + 2, &lo, &hi);
		lo = vqtbl1q_s8(kv, vreinterpretq_u8_s8(lo));
		hi = vqtbl1q_s8(kv, vreinterpretq_u8_s8(hi));
		int32x4_t p = dot16(dot16(vdupq_n_s32(0), lo, ld8(a + 2)), hi, ld8(a + 18));
		acc = vmlaq_n_f32(acc, vcvtq_f32_s32(p), qrdfp16(w) * qrdfp16(a));
	}
	return vaddvq_f32(acc);
}

/* ---- K formats (activations Q8_K) ------------------------------------------ */

static inline float q8k_d(const uint8_t *a) { return qrdf32(a); }
static inline int8x16_t q8k_y(const uint8_t *a, int off) { return ld8(a + 4 + off); }
static inline int16_t q8k_bsum(const uint8_t *a, int k) { return (int16_t)qrd16(a + 260 + 2 * k); }

static float dot_q4_k(int64_t n, const void *vw, const void *va)
{
	const uint8_t *w = vw, *a = va;
	float sum = 0;
	for (int64_t i = 0; i < n / QK_K; i++, w += Q4_K_B, a += Q8_K_B) {
		float dy = q8k_d(a);
		int summ = 0, sumi = 0;
		const uint8_t *q = w + 16;
		for (int j = 0; j < 8; j += 2, q += 32) {
			uint8_t s0, m0, s1, m1;
			quant_k4_scale_min(w + 4, j, &s0, &m0);
			quant_k4_scale_min(w + 4, j + 1, &s1, &m1);
			summ += m0 * (q8k_bsum(a, 2 * j) + q8k_bsum(a, 2 * j + 1)) +
				m1 * (q8k_bsum(a, 2 * j + 2) + q8k_bsum(a, 2 * j + 3));
			int8x16_t l0, h0, l1, h1;
			nib16(q, &l0, &h0);
			nib16(q + 16, &l1, &h1);
			int32x4_t p0 = dot16(dot16(vdupq_n_s32(0), l0, q8k_y(a, 32 * j)), l1, q8k_y(a, 32 * j + 16));
			int32x4_t p1 = dot16(dot16(vdupq_n_s32(0), h0, q8k_y(a, 32 * j + 32)), h1, q8k_y(a, 32 * j + 48));
			sumi += s0 * vaddvq_s32(p0) + s1 * vaddvq_s32(p1);
		}
		sum += dy * (qrdfp16(w) * (float)sumi - qrdfp16(w + 2) * (float)summ);
	}
	return sum;
}

static float dot_q5_k(int64_t n, const void *vw, const void *va)
{
	const uint8_t *w = vw, *a = va;
	float sum = 0;
	const uint8x16_t x10 = vdupq_n_u8(0x10);
	for (int64_t i = 0; i < n / QK_K; i++, w += Q5_K_B, a += Q8_K_B) {
		float dy = q8k_d(a);
		int summ = 0, sumi = 0;
		uint8x16_t qh0 = vld1q_u8(w + 16), qh1 = vld1q_u8(w + 32);
		const uint8_t *q = w + 48;
		for (int j = 0; j < 8; j += 2, q += 32) {
			uint8_t s0, m0, s1, m1;
			quant_k4_scale_min(w + 4, j, &s0, &m0);
			quant_k4_scale_min(w + 4, j + 1, &s1, &m1);
			summ += m0 * (q8k_bsum(a, 2 * j) + q8k_bsum(a, 2 * j + 1)) +
				m1 * (q8k_bsum(a, 2 * j + 2) + q8k_bsum(a, 2 * j + 3));
			int8x16_t l0, h0, l1, h1;
			nib16(q, &l0, &h0);
			nib16(q + 16, &l1, &h1);
			const uint8x16_t b0 = vdupq_n_u8((uint8_t)(1u << j)), b1 = vdupq_n_u8((uint8_t)(2u << j));
			l0 = vorrq_s8(l0, vreinterpretq_s8_u8(vandq_u8(vtstq_u8(qh0, b0), x10)));
			l1 = vorrq_s8(l1, vreinterpretq_s8_u8(vandq_u8(vtstq_u8(qh1, b0), x10)));
			h0 = vorrq_s8(h0, vreinterpretq_s8_u8(vandq_u8(vtstq_u8(qh0, b1), x10)));
			h1 = vorrq_s8(h1, vreinterpretq_s8_u8(vandq_u8(vtstq_u8(qh1, b1), x10)));
			int32x4_t p0 = dot16(dot16(vdupq_n_s32(0), l0, q8k_y(a, 32 * j)), l1, q8k_y(a, 32 * j + 16));
			int32x4_t p1 = dot16(dot16(vdupq_n_s32(0), h0, q8k_y(a, 32 * j + 32)), h1, q8k_y(a, 32 * j + 48));
			sumi += s0 * vaddvq_s32(p0) + s1 * vaddvq_s32(p1);
		}
		sum += dy * (qrdfp16(w) * (float)sumi - qrdfp16(w + 2) * (float)summ);
	}
	return sum;
}

static float dot_q6_k(int64_t n, const void *vw, const void *va)
{
	const uint8_t *w = vw, *a = va;
	float sum = 0;
	const uint8x16_t m4 = vdupq_n_u8(0x0F), m3 = vdupq_n_u8(3);
	const int8x16_t off = vdupq_n_s8(32);
	for (int64_t i = 0; i < n / QK_K; i++, w += Q6_K_B, a += Q8_K_B) {
		const int8_t *sc = (const int8_t *)(w + 192);
		const uint8_t *ql = w, *qh = w + 128;
		int sumi = 0;
		for (int h = 0; h < 2; h++, ql += 64, qh += 32, sc += 8) {
			for (int half = 0; half < 2; half++) {
				/* columns l = 16 * half .. + 15 of this 128-element half */
				int o = 16 * half;
				uint8x16_t l0 = vld1q_u8(ql + o), l1 = vld1q_u8(ql + 32 + o), hh = vld1q_u8(qh + o);
				int8x16_t q1 = vsubq_s8(vreinterpretq_s8_u8(vorrq_u8(vandq_u8(l0, m4), vshlq_n_u8(vandq_u8(hh, m3), 4))), off);
				int8x16_t q2 = vsubq_s8(vreinterpretq_s8_u8(vorrq_u8(vandq_u8(l1, m4),
										   vshlq_n_u8(vandq_u8(vshrq_n_u8(hh, 2), m3), 4))), off);
				int8x16_t q3 = vsubq_s8(vreinterpretq_s8_u8(vorrq_u8(vshrq_n_u8(l0, 4),
										   vshlq_n_u8(vandq_u8(vshrq_n_u8(hh, 4), m3), 4))), off);
				int8x16_t q4 = vsubq_s8(vreinterpretq_s8_u8(vorrq_u8(vshrq_n_u8(l1, 4),
										   vshlq_n_u8(vshrq_n_u8(hh, 6), 4))), off);
				int yo = 128 * h + o;
				sumi += sc[half] * vaddvq_s32(dot16(vdupq_n_s32(0), q1, q8k_y(a, yo)));
				sumi += sc[2 + half] * vaddvq_s32(dot16(vdupq_n_s32(0), q2, q8k_y(a, yo + 32)));
				sumi += sc[4 + half] * vaddvq_s32(dot16(vdupq_n_s32(0), q3, q8k_y(a, yo + 64)));
				sumi += sc[6 + half] * vaddvq_s32(dot16(vdupq_n_s32(0), q4, q8k_y(a, yo + 96)));
			}
		}
		sum += qrdfp16(w + 208) * q8k_d(a) * (float)sumi;
	}
	return sum;
}

static float dot_q2_k(int64_t n, const void *vw, const void *va)
{
	const uint8_t *w = vw, *a = va;
	float sum = 0;
	const uint8x16_t m3 = vdupq_n_u8(3);
	for (int64_t i = 0; i < n / QK_K; i++, w += Q2_K_B, a += Q8_K_B) {
		const uint8_t *sc = w;
		int summ = 0, sumi = 0;
		for (int k = 0; k < 16; k++)
			summ += (sc[k] >> 4) * q8k_bsum(a, k);
		for (int h = 0; h < 2; h++) {
			for (int half = 0; half < 2; half++) {
				uint8x16_t q = vld1q_u8(w + 16 + 32 * h + 16 * half);
				for (int j = 0; j < 4; j++) {
					int8x16_t v = vreinterpretq_s8_u8(vandq_u8(vshlq_u8(q, vdupq_n_s8((int8_t)(-2 * j))), m3));
					int k = 8 * h + 2 * j + half;
					sumi += (sc[k] & 0xF) * vaddvq_s32(dot16(vdupq_n_s32(0), v, q8k_y(a, 128 * h + 32 * j + 16 * half)));
				}
			}
		}
		float dy = q8k_d(a);
		sum += dy * (qrdfp16(w + 80) * (float)sumi - qrdfp16(w + 82) * (float)summ);
	}
	return sum;
}

static float dot_q3_k(int64_t n, const void *vw, const void *va)
{
	const uint8_t *w = vw, *a = va;
	float sum = 0;
	const uint8x16_t m3 = vdupq_n_u8(3);
	for (int64_t i = 0; i < n / QK_K; i++, w += Q3_K_B, a += Q8_K_B) {
		const uint8_t *s = w + 96;
		int sc[16];
		for (int k = 0; k < 16; k++) {
			int lo = k < 8 ? s[k] & 0xF : s[k - 8] >> 4;
			sc[k] = (lo | ((s[8 + (k & 3)] >> (2 * (k >> 2))) & 3) << 4) - 32;
		}
		int sumi = 0;
		for (int h = 0; h < 2; h++) {
			for (int half = 0; half < 2; half++) {
				uint8x16_t q = vld1q_u8(w + 32 + 32 * h + 16 * half);
				uint8x16_t hm = vld1q_u8(w + 16 * half);
				for (int j = 0; j < 4; j++) {
					uint8x16_t v = vandq_u8(vshlq_u8(q, vdupq_n_s8((int8_t)(-2 * j))), m3);
					uint8x16_t hb = vtstq_u8(hm, vdupq_n_u8((uint8_t)(1u << (4 * h + j))));
					/* level = v - 4 where the high bit is clear */
					int8x16_t lv = vsubq_s8(vreinterpretq_s8_u8(v), vreinterpretq_s8_u8(vbicq_u8(vdupq_n_u8(4), hb)));
					int k = 8 * h + 2 * j + half;
					sumi += sc[k] * vaddvq_s32(dot16(vdupq_n_s32(0), lv, q8k_y(a, 128 * h + 32 * j + 16 * half)));
				}
			}
		}
		sum += qrdfp16(w + 108) * q8k_d(a) * (float)sumi;
	}
	return sum;
}

static float dot_iq4_xs(int64_t n, const void *vw, const void *va)
{
	const uint8_t *w = vw, *a = va;
	const int8x16_t kv = vld1q_s8(quant_kvalues_iq4nl);
	float sum = 0;
	for (int64_t i = 0; i < n / QK_K; i++, w += IQ4_XS_B, a += Q8_K_B) {
		uint16_t sh = qrd16(w + 2);
		int sumi = 0;
		for (int ib = 0; ib < 8; ib++) {
			int ls = ((w[4 + ib / 2] >> (4 * (ib % 2))) & 0xF) | ((sh >> (2 * ib)) & 3) << 4;
			int8x16_t lo, hi;
			nib16(w + 8 + 16 * ib, &lo, &hi);
			lo = vqtbl1q_s8(kv, vreinterpretq_u8_s8(lo));
			hi = vqtbl1q_s8(kv, vreinterpretq_u8_s8(hi));
			int32x4_t p = dot16(dot16(vdupq_n_s32(0), lo, q8k_y(a, 32 * ib)), hi, q8k_y(a, 32 * ib + 16));
			sumi += (ls - 32) * vaddvq_s32(p);
		}
		sum += qrdfp16(w) * q8k_d(a) * (float)sumi;
	}
	return sum;
}

static inline int8x16_t grid2x8(uint64_t g0, uint64_t g1)
{
	return vreinterpretq_s8_u64(vcombine_u64(vcreate_u64(g0), vcreate_u64(g1)));
}

static float dot_iq2_xxs(int64_t n, const void *vw, const void *va)
{
	const uint8_t *w = vw, *a = va;
	float sum = 0;
	for (int64_t i = 0; i < n / QK_K; i++, w += 66, a += Q8_K_B) {
		int sumi = 0;
		for (int ib = 0; ib < 8; ib++) {
			const uint8_t *g = w + 2 + 8 * ib;
			uint32_t aux = qrd32(g + 4);
			int8x16_t g01 = grid2x8(quant_iq2xxs_grid[g[0]], quant_iq2xxs_grid[g[1]]);
			int8x16_t g23 = grid2x8(quant_iq2xxs_grid[g[2]], quant_iq2xxs_grid[g[3]]);
			int8x16_t y0 = apply_signs16(q8k_y(a, 32 * ib), quant_ksigns_iq2xs[aux & 127],
						     quant_ksigns_iq2xs[(aux >> 7) & 127]);
			int8x16_t y1 = apply_signs16(q8k_y(a, 32 * ib + 16), quant_ksigns_iq2xs[(aux >> 14) & 127],
						     quant_ksigns_iq2xs[(aux >> 21) & 127]);
			int32x4_t p = dot16(dot16(vdupq_n_s32(0), g01, y0), g23, y1);
			sumi += (int)(2 * (aux >> 28) + 1) * vaddvq_s32(p);
		}
		sum += qrdfp16(w) * q8k_d(a) * 0.125f * (float)sumi;
	}
	return sum;
}

static float dot_iq3_xxs(int64_t n, const void *vw, const void *va)
{
	const uint8_t *w = vw, *a = va;
	float sum = 0;
	for (int64_t i = 0; i < n / QK_K; i++, w += 98, a += Q8_K_B) {
		const uint8_t *qs = w + 2, *ss = w + 66;
		int sumi = 0;
		for (int ib = 0; ib < 8; ib++, qs += 8) {
			uint32_t aux = qrd32(ss + 4 * ib);
			uint32_t g[8];
			for (int k = 0; k < 8; k++)
				g[k] = quant_iq3xxs_grid[qs[k]];
			int8x16_t g0 = vreinterpretq_s8_u32(vld1q_u32(g)), g1 = vreinterpretq_s8_u32(vld1q_u32(g + 4));
			int8x16_t y0 = apply_signs16(q8k_y(a, 32 * ib), quant_ksigns_iq2xs[aux & 127],
						     quant_ksigns_iq2xs[(aux >> 7) & 127]);
			int8x16_t y1 = apply_signs16(q8k_y(a, 32 * ib + 16), quant_ksigns_iq2xs[(aux >> 14) & 127],
						     quant_ksigns_iq2xs[(aux >> 21) & 127]);
			int32x4_t p = dot16(dot16(vdupq_n_s32(0), g0, y0), g1, y1);
			sumi += (int)(2 * (aux >> 28) + 1) * vaddvq_s32(p);
		}
		sum += qrdfp16(w) * q8k_d(a) * 0.25f * (float)sumi;
	}
	return sum;
}

/* ---- float weights ----------------------------------------------------------- */

static float dot_f32(int64_t n, const void *vw, const void *va)
{
	const uint8_t *w = vw;
	const float *x = va;
	float32x4_t a0 = vdupq_n_f32(0), a1 = vdupq_n_f32(0);
	int64_t i = 0;
	for (; i + 8 <= n; i += 8) {
		a0 = vfmaq_f32(a0, vreinterpretq_f32_u8(vld1q_u8(w + 4 * i)), vld1q_f32(x + i));
		a1 = vfmaq_f32(a1, vreinterpretq_f32_u8(vld1q_u8(w + 4 * i + 16)), vld1q_f32(x + i + 4));
	}
	float s = vaddvq_f32(vaddq_f32(a0, a1));
	for (; i < n; i++)
		s += qrdf32(w + 4 * i) * qrdf32((const uint8_t *)va + 4 * i);
	return s;
}

static float dot_f16(int64_t n, const void *vw, const void *va)
{
	const uint8_t *w = vw;
	const float *x = va;
	float32x4_t a0 = vdupq_n_f32(0), a1 = vdupq_n_f32(0);
	int64_t i = 0;
	for (; i + 8 <= n; i += 8) {
		float16x8_t h = vreinterpretq_f16_u8(vld1q_u8(w + 2 * i));
		a0 = vfmaq_f32(a0, vcvt_f32_f16(vget_low_f16(h)), vld1q_f32(x + i));
		a1 = vfmaq_f32(a1, vcvt_f32_f16(vget_high_f16(h)), vld1q_f32(x + i + 4));
	}
	float s = vaddvq_f32(vaddq_f32(a0, a1));
	for (; i < n; i++)
		s += qrdfp16(w + 2 * i) * qrdf32((const uint8_t *)va + 4 * i);
	return s;
}

static float dot_bf16(int64_t n, const void *vw, const void *va)
{
	const uint8_t *w = vw;
	const float *x = va;
	float32x4_t a0 = vdupq_n_f32(0), a1 = vdupq_n_f32(0);
	int64_t i = 0;
	for (; i + 8 <= n; i += 8) {
		uint16x8_t h = vreinterpretq_u16_u8(vld1q_u8(w + 2 * i));
		a0 = vfmaq_f32(a0, vreinterpretq_f32_u32(vshll_n_u16(vget_low_u16(h), 16)), vld1q_f32(x + i));
		a1 = vfmaq_f32(a1, vreinterpretq_f32_u32(vshll_n_u16(vget_high_u16(h), 16)), vld1q_f32(x + i + 4));
	}
	float s = vaddvq_f32(vaddq_f32(a0, a1));
	for (; i < n; i++)
		s += qbits_f32((uint32_t)qrd16(w + 2 * i) << 16) * qrdf32((const uint8_t *)va + 4 * i);
	return s;
}

void quant_kernels_neon_init(struct quant_kernels *k)
{
	memset(k, 0, sizeof *k);
	k->dot[QT_F32] = dot_f32;
	k->dot[QT_F16] = dot_f16;
	k->dot[QT_BF16] = dot_bf16;
	if (!quant_cpu()->dotprod)
		return;
	k->dot[QT_Q8_0] = dot_q8_0;
	k->dot[QT_Q4_0] = dot_q4_0;
	k->dot[QT_Q4_1] = dot_q4_1;
	k->dot[QT_Q5_0] = dot_q5_0;
	k->dot[QT_Q5_1] = dot_q5_1;
	k->dot[QT_IQ4_NL] = dot_iq4_nl;
	k->dot[QT_Q2_K] = dot_q2_k;
	k->dot[QT_Q3_K] = dot_q3_k;
	k->dot[QT_Q4_K] = dot_q4_k;
	k->dot[QT_Q5_K] = dot_q5_k;
	k->dot[QT_Q6_K] = dot_q6_k;
	k->dot[QT_IQ4_XS] = dot_iq4_xs;
	k->dot[QT_IQ2_XXS] = dot_iq2_xxs;
	k->dot[QT_IQ3_XXS] = dot_iq3_xxs;
}
#endif
