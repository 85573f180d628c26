/* ref.c - scalar reference decoders: one block of every GGML type to floats.
 *
 * These define what each format means; the SIMD kernels are tested against
 * them and they are tested against the gguf Python package's decoders
 * (tests/quant_ref/). The order of float operations follows ggml's
 * reference so that results are bit-exact, e.g. (d * sc) * q, not d * (sc * q). */
#include "quant/quant.h"
#include "lib/core/error.h"
#include "quant/iq_grids.h"
#include "quant/qimpl.h"

const int8_t quant_kvalues_iq4nl[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
					1, 13, 25, 38, 53, 69, 89, 113};
const int8_t quant_kvalues_mxfp4[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};

/* ---- 32-element blocks ---------------------------------------------------- */

static void dec_q4_0(const uint8_t *b, float *y)
{
	float d = qrdfp16(b);
	for (int j = 0; j < 16; j++) {
		y[j] = (float)((b[2 + j] & 0xF) - 8) * d;
		y[j + 16] = (float)((b[2 + j] >> 4) - 8) * d;
	}
}

static void dec_q4_1(const uint8_t *b, float *y)
{
	float d = qrdfp16(b), m = qrdfp16(b + 2);
	for (int j = 0; j < 16; j++) {
		y[j] = (float)(b[4 + j] & 0xF) * d + m;
		y[j + 16] = (float)(b[4 + j] >> 4) * d + m;
	}
}

static void dec_q5_0(const uint8_t *b, float *y)
{
	float d = qrdfp16(b);
	uint32_t qh = qrd32(b + 2);
	for (int j = 0; j < 16; j++) {
		int lo = (b[6 + j] & 0xF) | (int)((qh >> j) & 1) << 4;
		int hi = (b[6 + j] >> 4) | (int)((qh >> (j + 16)) & 1) << 4;
		y[j] = (float)(lo - 16) * d;
		y[j + 16] = (float)(hi - 16) * d;
	}
}

static void dec_q5_1(const uint8_t *b, float *y)
{
	float d = qrdfp16(b), m = qrdfp16(b + 2);
	uint32_t qh = qrd32(b + 4);
	for (int j = 0; j < 16; j++) {
		int lo = (b[8 + j] & 0xF) | (int)((qh >> j) & 1) << 4;
		int hi = (b[8 + j] >> 4) | (int)((qh >> (j + 16)) & 1) << 4;
		y[j] = (float)lo * d + m;
		y[j + 16] = (float)hi * d + m;
	}
}

static void dec_q8_0(const uint8_t *b, float *y)
{
	float d = qrdfp16(b);
	for (int j = 0; j < 32; j++)
		y[j] = (float)(int8_t)b[2 + j] * d;
}

static void dec_q8_1(const uint8_t *b, float *y)
{
	float d = qrdfp16(b);
	for (int j = 0; j < 32; j++)
		y[j] = (float)(int8_t)b[4 + j] * d;
}

static void dec_iq4_nl(const uint8_t *b, float *y)
{
	float d = qrdfp16(b);
	for (int j = 0; j < 16; j++) {
		y[j] = d * (float)quant_kvalues_iq4nl[b[2 + j] & 0xF];
		y[j + 16] = d * (float)quant_kvalues_iq4nl[b[2 + j] >> 4];
	}
}

static void dec_mxfp4(const uint8_t *b, float *y)
{
	float d = qe8m0_half(b[0]);
	for (int j = 0; j < 16; j++) {
		y[j] = (float)quant_kvalues_mxfp4[b[1 + j] & 0xF] * d;
		y[j + 16] = (float)quant_kvalues_mxfp4[b[1 + j] >> 4] * d;
	}
}

/* ---- K-quants (256-element super-blocks) ---------------------------------- */

static void dec_q2_k(const uint8_t *b, float *y)
{
	const uint8_t *sc = b, *q = b + 16;
	float d = qrdfp16(b + 80), dmin = qrdfp16(b + 82);
	int is = 0;
	for (int n = 0; n < 2; n++, q += 32) {
		for (int j = 0; j < 4; j++) {
			for (int h = 0; h < 2; h++, is++) {
				float dl = d * (float)(sc[is] & 0xF), ml = dmin * (float)(sc[is] >> 4);
				for (int l = 0; l < 16; l++)
					*y++ = dl * (float)((q[16 * h + l] >> (2 * j)) & 3) - ml;
			}
		}
	}
}

/* The 16 six-bit scales of Q3_K: low nibbles in bytes 0..7, high bit pairs
 * in bytes 8..11. */
static void q3k_scales(const uint8_t *s, int8_t *out)
{
	for (int i = 0; i < 16; i++) {
		int lo = i < 8 ? s[i] & 0xF : s[i - 8] >> 4;
		int hi = (s[8 + (i & 3)] >> (2 * (i >> 2))) & 3;
		out[i] = (int8_t)((lo | hi << 4) - 32);
	}
}

static void dec_q3_k(const uint8_t *b, float *y)
{
	const uint8_t *hm = b, *q = b + 32;
	float d = qrdfp16(b + 108);
	int8_t sc[16];
	q3k_scales(b + 96, sc);
	int is = 0;
	for (int n = 0; n < 2; n++, q += 32) {
		for (int j = 0; j < 4; j++) {
			uint8_t m = (uint8_t)(1u << (4 * n + j));
			for (int h = 0; h < 2; h++, is++) {
				float dl = d * (float)sc[is];
				for (int l = 16 * h; l < 16 * h + 16; l++) {
					int v = ((q[l] >> (2 * j)) & 3) - ((hm[l] & m) ? 0 : 4);
					*y++ = dl * (float)v;
				}
			}
		}
	}
}

/* 8 six-bit scales and mins of Q4_K / Q5_K packed in 12 bytes. */
void quant_k4_scale_min(const uint8_t *s, int j, uint8_t *sc, uint8_t *m)
{
	if (j < 4) {
		*sc = s[j] & 63;
		*m = s[j + 4] & 63;
	} else {
		*sc = (uint8_t)((s[j + 4] & 0xF) | ((s[j - 4] >> 6) << 4));
		*m = (uint8_t)((s[j + 4] >> 4) | ((s[j] >> 6) << 4));
	}
}

static void dec_q4_k(const uint8_t *b, float *y)
{
	float d = qrdfp16(b), dmin = qrdfp16(b + 2);
	const uint8_t *q = b + 16;
	for (int j = 0; j < 8; j += 2, q += 32) {
		uint8_t sc, m;
		quant_k4_scale_min(b + 4, j, &sc, &m);
		float d1 = d * (float)sc, m1 = dmin * (float)m;
		quant_k4_scale_min(b + 4, j + 1, &sc, &m);
		float d2 = d * (float)sc, m2 = dmin * (float)m;
		for (int l = 0; l < 32; l++)
			*y++ = d1 * (float)(q[l] & 0xF) - m1;
		for (int l = 0; l < 32; l++)
			*y++ = d2 * (float)(q[l] >> 4) - m2;
	}
}

static void dec_q5_k(const uint8_t *b, float *y)
{
	float d = qrdfp16(b), dmin = qrdfp16(b + 2);
	const uint8_t *qh = b + 16, *q = b + 48;
	for (int j = 0; j < 8; j += 2, q += 32) {
		uint8_t sc, m;
		quant_k4_scale_min(b + 4, j, &sc, &m);
		float d1 = d * (float)sc, m1 = dmin * (float)m;
		quant_k4_scale_min(b + 4, j + 1, &sc, &m);
		float d2 = d * (float)sc, m2 = dmin * (float)m;
		for (int l = 0; l < 32; l++)
			*y++ = d1 * (float)((q[l] & 0xF) | ((qh[l] >> j) & 1) << 4) - m1;
		for (int l = 0; l < 32; l++)
			*y++ = d2 * (float)((q[l] >> 4) | ((qh[l] >> (j + 1)) & 1) << 4) - m2;
	}
}

static void dec_q6_k(const uint8_t *b, float *y)
{
	const uint8_t *ql = b, *qh = b + 128;
	const int8_t *sc = (const int8_t *)(b + 192);
	float d = qrdfp16(b + 208);
	for (int n = 0; n < 2; n++, ql += 64, qh += 32, sc += 8, y += 128) {
		for (int l = 0; l < 32; l++) {
			int is = l / 16;
			int q1 = ((ql[l] & 0xF) | ((qh[l] >> 0) & 3) << 4) - 32;
			int q2 = ((ql[l + 32] & 0xF) | ((qh[l] >> 2) & 3) << 4) - 32;
			int q3 = ((ql[l] >> 4) | ((qh[l] >> 4) & 3) << 4) - 32;
			int q4 = ((ql[l + 32] >> 4) | ((qh[l] >> 6) & 3) << 4) - 32;
			y[l] = d * (float)sc[is] * (float)q1;
			y[l + 32] = d * (float)sc[is + 2] * (float)q2;
			y[l + 64] = d * (float)sc[is + 4] * (float)q3;
			y[l + 96] = d * (float)sc[is + 6] * (float)q4;
		}
	}
}

static void dec_q8_k(const uint8_t *b, float *y)
{
	float d = qrdf32(b);
	for (int j = 0; j < QK_K; j++)
		y[j] = d * (float)(int8_t)b[4 + j];
}

static void dec_tq1_0(const uint8_t *b, float *y)
{
	static const uint8_t pow3[5] = {1, 3, 9, 27, 81};
	float d = qrdfp16(b + 52);
	for (int n = 0; n < 5; n++)
		for (int m = 0; m < 32; m++) {
			uint8_t q = (uint8_t)(b[m] * pow3[n]);
			*y++ = (float)(((q * 3) >> 8) - 1) * d;
		}
	for (int n = 0; n < 5; n++)
		for (int m = 0; m < 16; m++) {
			uint8_t q = (uint8_t)(b[32 + m] * pow3[n]);
			*y++ = (float)(((q * 3) >> 8) - 1) * d;
		}
	for (int n = 0; n < 4; n++)
		for (int m = 0; m < 4; m++) {
			uint8_t q = (uint8_t)(b[48 + m] * pow3[n]);
			*y++ = (float)(((q * 3) >> 8) - 1) * d;
		}
}

static void dec_tq2_0(const uint8_t *b, float *y)
{
	float d = qrdfp16(b + 64);
	for (int j = 0; j < 64; j += 32)
		for (int l = 0; l < 4; l++)
			for (int m = 0; m < 32; m++)
				*y++ = (float)(((b[j + m] >> (2 * l)) & 3) - 1) * d;
}

static void dec_iq4_xs(const uint8_t *b, float *y)
{
	float d = qrdfp16(b);
	uint16_t sh = qrd16(b + 2);
	const uint8_t *sl = b + 4, *q = b + 8;
	for (int ib = 0; ib < 8; ib++, q += 16, y += 32) {
		int ls = ((sl[ib / 2] >> (4 * (ib % 2))) & 0xF) | ((sh >> (2 * ib)) & 3) << 4;
		float dl = d * (float)(ls - 32);
		for (int j = 0; j < 16; j++) {
			y[j] = dl * (float)quant_kvalues_iq4nl[q[j] & 0xF];
			y[j + 16] = dl * (float)quant_kvalues_iq4nl[q[j] >> 4];
		}
	}
}

/* ---- IQ grids -------------------------------------------------------------- */

static inline uint8_t gbyte(uint64_t g, int j) { return (uint8_t)(g >> (8 * j)); }

static void dec_iq2_xxs(const uint8_t *b, float *y)
{
	float d = qrdfp16(b);
	for (int ib = 0; ib < 8; ib++) {
		const uint8_t *g = b + 2 + 8 * ib;
		uint32_t aux = qrd32(g + 4);
		float db = d * (0.5f + (float)(aux >> 28)) * 0.25f;
		for (int l = 0; l < 4; l++) {
			uint64_t grid = quant_iq2xxs_grid[g[l]];
			uint8_t s = quant_ksigns_iq2xs[(aux >> (7 * l)) & 127];
			for (int j = 0; j < 8; j++)
				*y++ = db * (float)gbyte(grid, j) * ((s >> j) & 1 ? -1.f : 1.f);
		}
	}
}

static void dec_iq2_xs(const uint8_t *b, float *y)
{
	float d = qrdfp16(b);
	const uint8_t *sc = b + 66;
	for (int ib = 0; ib < 8; ib++) {
		float db[2] = {d * (0.5f + (float)(sc[ib] & 0xF)) * 0.25f,
			       d * (0.5f + (float)(sc[ib] >> 4)) * 0.25f};
		for (int l = 0; l < 4; l++) {
			uint16_t q = qrd16(b + 2 + 2 * (4 * ib + l));
			uint64_t grid = quant_iq2xs_grid[q & 511];
			uint8_t s = quant_ksigns_iq2xs[q >> 9];
			for (int j = 0; j < 8; j++)
				*y++ = db[l / 2] * (float)gbyte(grid, j) * ((s >> j) & 1 ? -1.f : 1.f);
		}
	}
}

static void dec_iq2_s(const uint8_t *b, float *y)
{
	float d = qrdfp16(b);
	const uint8_t *qs = b + 2, *signs = b + 34, *qh = b + 66, *sc = b + 74;
	for (int ib = 0; ib < 8; ib++) {
		float db[2] = {d * (0.5f + (float)(sc[ib] & 0xF)) * 0.25f,
			       d * (0.5f + (float)(sc[ib] >> 4)) * 0.25f};
		for (int l = 0; l < 4; l++) {
			uint64_t grid = quant_iq2s_grid[qs[4 * ib + l] | ((qh[ib] << (8 - 2 * l)) & 0x300)];
			uint8_t s = signs[4 * ib + l];
			for (int j = 0; j < 8; j++)
				*y++ = db[l / 2] * (float)gbyte(grid, j) * ((s >> j) & 1 ? -1.f : 1.f);
		}
	}
}

static void dec_iq3_xxs(const uint8_t *b, float *y)
{
	float d = qrdfp16(b);
	const uint8_t *qs = b + 2, *ss = b + 66;
	for (int ib = 0; ib < 8; ib++) {
		uint32_t aux = qrd32(ss + 4 * ib);
		float db = d * (0.5f + (float)(aux >> 28)) * 0.5f;
		for (int l = 0; l < 4; l++) {
			uint8_t s = quant_ksigns_iq2xs[(aux >> (7 * l)) & 127];
			uint32_t g1 = quant_iq3xxs_grid[qs[8 * ib + 2 * l]];
			uint32_t g2 = quant_iq3xxs_grid[qs[8 * ib + 2 * l + 1]];
			for (int j = 0; j < 4; j++) {
				y[j] = db * (float)(uint8_t)(g1 >> (8 * j)) * ((s >> j) & 1 ? -1.f : 1.f);
				y[j + 4] = db * (float)(uint8_t)(g2 >> (8 * j)) * ((s >> (j + 4)) & 1 ? -1.f : 1.f);
			}
			y += 8;
		}
	}
}

static void dec_iq3_s(const uint8_t *b, float *y)
{
	float d = qrdfp16(b);
	const uint8_t *qs = b + 2, *qh = b + 66, *signs = b + 74, *sc = b + 106;
	for (int ib = 0; ib < 8; ib++) {
		float db = d * (float)(1 + 2 * ((sc[ib / 2] >> (4 * (ib % 2))) & 0xF));
		for (int l = 0; l < 4; l++) {
			uint32_t g1 = quant_iq3s_grid[qs[8 * ib + 2 * l] | ((qh[ib] << (8 - 2 * l)) & 256)];
			uint32_t g2 = quant_iq3s_grid[qs[8 * ib + 2 * l + 1] | ((qh[ib] << (7 - 2 * l)) & 256)];
			uint8_t s = signs[4 * ib + l];
			for (int j = 0; j < 4; j++) {
				y[j] = db * (float)(uint8_t)(g1 >> (8 * j)) * ((s >> j) & 1 ? -1.f : 1.f);
				y[j + 4] = db * (float)(uint8_t)(g2 >> (8 * j)) * ((s >> (j + 4)) & 1 ? -1.f : 1.f);
			}
			y += 8;
		}
	}
}

#define IQ1_DELTA 0.125f

static void dec_iq1_s(const uint8_t *b, float *y)
{
	float d = qrdfp16(b);
	const uint8_t *qs = b + 2;
	for (int ib = 0; ib < 8; ib++) {
		uint16_t qh = qrd16(b + 34 + 2 * ib);
		float dl = d * (float)(2 * ((qh >> 12) & 7) + 1);
		float delta = qh & 0x8000 ? -IQ1_DELTA : IQ1_DELTA;
		for (int l = 0; l < 4; l++) {
			uint64_t grid = quant_iq1s_grid[qs[4 * ib + l] | (((qh >> (3 * l)) & 7) << 8)];
			for (int j = 0; j < 8; j++)
				*y++ = dl * ((float)(int8_t)gbyte(grid, j) + delta);
		}
	}
}

static void dec_iq1_m(const uint8_t *b, float *y)
{
	const uint8_t *qs = b, *qh = b + 32;
	uint16_t sc[4];
	for (int i = 0; i < 4; i++)
		sc[i] = qrd16(b + 48 + 2 * i);
	uint16_t dh = (uint16_t)((sc[0] >> 12) | ((sc[1] >> 8) & 0xF0) | ((sc[2] >> 4) & 0xF00) | (sc[3] & 0xF000));
	float d = qfp16(dh);
	for (int ib = 0; ib < 8; ib++) {
		int sh = 6 * (ib % 2);
		float dl[2] = {d * (float)(2 * ((sc[ib / 2] >> sh) & 7) + 1),
			       d * (float)(2 * ((sc[ib / 2] >> (sh + 3)) & 7) + 1)};
		for (int l = 0; l < 4; l++) {
			uint8_t h = qh[2 * ib + l / 2];
			int nib = l % 2 ? h >> 4 : h & 0xF;
			uint64_t grid = quant_iq1s_grid[qs[4 * ib + l] | ((nib & 7) << 8)];
			float delta = nib & 8 ? -IQ1_DELTA : IQ1_DELTA;
			for (int j = 0; j < 8; j++)
				*y++ = dl[l / 2] * ((float)(int8_t)gbyte(grid, j) + delta);
		}
	}
}

/* ---- dispatch -------------------------------------------------------------- */

quant_block_dec quant_block_decoder(uint32_t t)
{
	switch (t) {
	case QT_Q4_0: return dec_q4_0;
	case QT_Q4_1: return dec_q4_1;
	case QT_Q5_0: return dec_q5_0;
	case QT_Q5_1: return dec_q5_1;
	case QT_Q8_0: return dec_q8_0;
	case QT_Q8_1: return dec_q8_1;
	case QT_Q2_K: return dec_q2_k;
	case QT_Q3_K: return dec_q3_k;
	case QT_Q4_K: return dec_q4_k;
	case QT_Q5_K: return dec_q5_k;
	case QT_Q6_K: return dec_q6_k;
	case QT_Q8_K: return dec_q8_k;
	case QT_IQ2_XXS: return dec_iq2_xxs;
	case QT_IQ2_XS: return dec_iq2_xs;
	case QT_IQ2_S: return dec_iq2_s;
	case QT_IQ3_XXS: return dec_iq3_xxs;
	case QT_IQ3_S: return dec_iq3_s;
	case QT_IQ1_S: return dec_iq1_s;
	case QT_IQ1_M: return dec_iq1_m;
	case QT_IQ4_NL: return dec_iq4_nl;
	case QT_IQ4_XS: return dec_iq4_xs;
	case QT_TQ1_0: return dec_tq1_0;
	case QT_TQ2_0: return dec_tq2_0;
	case QT_MXFP4: return dec_mxfp4;
	}
	return NULL;
}

int quant_dequantize_row(uint32_t type, const void *src, float *dst, uint64_t n)
{
	const uint8_t *p = src;
	if (!quant_type_valid(type))
		return TERN_EINVAL;
	const struct quant_type_info *ti = quant_type_info(type);
	if (n % ti->blck)
		return TERN_EINVAL;
	switch (type) {
	case QT_F32:
		memcpy(dst, src, n * 4);
		return 0;
	case QT_F16:
		for (uint64_t i = 0; i < n; i++)
			dst[i] = qfp16(qrd16(p + 2 * i));
		return 0;
	case QT_BF16:
		for (uint64_t i = 0; i < n; i++)
			dst[i] = quant_bf16_to_f32(qrd16(p + 2 * i));
		return 0;
	case QT_F64:
		for (uint64_t i = 0; i < n; i++) {
			double v;
			memcpy(&v, p + 8 * i, 8);
			dst[i] = (float)v;
		}
		return 0;
	case QT_I8:
		for (uint64_t i = 0; i < n; i++)
			dst[i] = (float)(int8_t)p[i];
		return 0;
	case QT_I16:
		for (uint64_t i = 0; i < n; i++)
			dst[i] = (float)(int16_t)qrd16(p + 2 * i);
		return 0;
	case QT_I32:
		for (uint64_t i = 0; i < n; i++)
			dst[i] = (float)(int32_t)qrd32(p + 4 * i);
		return 0;
	case QT_I64:
		for (uint64_t i = 0; i < n; i++) {
			int64_t v;
			memcpy(&v, p + 8 * i, 8);
			dst[i] = (float)v;
		}
		return 0;
	}
	quant_block_dec dec = quant_block_decoder(type);
	if (!dec)
		return TERN_EUNSUPPORTED;
	for (uint64_t b = 0; b < n / ti->blck; b++)
		dec(p + b * ti->size, dst + b * ti->blck);
	return 0;
}
