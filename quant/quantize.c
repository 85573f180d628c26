/* quantize.c - reference quantizers: f32 rows to every type that can be made
 * without an importance matrix.
 *
 * The simple formats round each value against one scale per block. The K
 * formats fit a scale (and, for the asymmetric ones, a min) per sub-block by
 * a small search around the max-based scale, choosing the candidate with
 * the least weighted squared error; the sub-block scales are then quantized
 * themselves and the values re-rounded against the stored scales, so that
 * decoding reproduces exactly what was fitted. */
#include "quant/quant.h"
#include "lib/core/error.h"
#include "quant/qimpl.h"

#include <math.h>

static inline int nearest_int(float f) { return (int)lrintf(f); }
static inline int clampi(int v, int lo, int hi) { return v < lo ? lo : v > hi ? hi : v; }
static inline void wr16(uint8_t *p, uint16_t v) { memcpy(p, &v, 2); }

/* v truncated to an int as ggml's casts to int8/uint8 do on x86. When a
 * block's values are so small (below about 2^-120) that its inverse scale
 * 1/d overflows, v is an infinity or NaN: ggml's cast then keeps the low
 * byte of 0x80000000, i.e. code 0, for every value (gguf-py agrees). The
 * block decodes to zeros either way, its fp16 scale being 0; the code is
 * kept for bit equality, without converting an infinity. */
static inline int code_of(float v)
{
	return v > -2147483520.0f && v < 2147483520.0f ? (int)v : 0;
}

/* value of largest magnitude (with its sign) */
static float signed_absmax(const float *x, int n, float *amax_out)
{
	float amax = 0, max = 0;
	for (int i = 0; i < n; i++) {
		float a = fabsf(x[i]);
		if (a > amax) {
			amax = a;
			max = x[i];
		}
	}
	if (amax_out)
		*amax_out = amax;
	return max;
}

/* ---- 32-element blocks ---------------------------------------------------- */

static void enc_q4_0(const float *x, uint8_t *b)
{
	float max = signed_absmax(x, 32, NULL);
	float d = max / -8, id = d ? 1.0f / d : 0.0f;
	wr16(b, quant_f32_to_fp16(d));
	for (int j = 0; j < 16; j++) {
		int q0 = code_of(x[j] * id + 8.5f), q1 = code_of(x[j + 16] * id + 8.5f);
		b[2 + j] = (uint8_t)(clampi(q0, 0, 15) | clampi(q1, 0, 15) << 4);
	}
}

static void minmax(const float *x, int n, float *mn, float *mx)
{
	*mn = x[0];
	*mx = x[0];
	for (int i = 1; i < n; i++) {
		if (x[i] < *mn)
			*mn = x[i];
		if (x[i] > *mx)
			*mx = x[i];
	}
}

static void enc_q4_1(const float *x, uint8_t *b)
{
	float mn, mx;
	minmax(x, 32, &mn, &mx);
	float d = (mx - mn) / 15, id = d ? 1.0f / d : 0.0f;
	wr16(b, quant_f32_to_fp16(d));
	wr16(b + 2, quant_f32_to_fp16(mn));
	for (int j = 0; j < 16; j++) {
		int q0 = code_of((x[j] - mn) * id + 0.5f), q1 = code_of((x[j + 16] - mn) * id + 0.5f);
		b[4 + j] = (uint8_t)(clampi(q0, 0, 15) | clampi(q1, 0, 15) << 4);
	}
}

static void enc_q5_0(const float *x, uint8_t *b)
{
	float max = signed_absmax(x, 32, NULL);
	float d = max / -16, id = d ? 1.0f / d : 0.0f;
	wr16(b, quant_f32_to_fp16(d));
	uint32_t qh = 0;
	for (int j = 0; j < 16; j++) {
		int q0 = clampi(code_of(x[j] * id + 16.5f), 0, 31);
		int q1 = clampi(code_of(x[j + 16] * id + 16.5f), 0, 31);
		b[6 + j] = (uint8_t)((q0 & 0xF) | (q1 & 0xF) << 4);
		qh |= (uint32_t)(q0 >> 4) << j | (uint32_t)(q1 >> 4) << (j + 16);
	}
	memcpy(b + 2, &qh, 4);
}

static void enc_q5_1(const float *x, uint8_t *b)
{
	float mn, mx;
	minmax(x, 32, &mn, &mx);
	float d = (mx - mn) / 31, id = d ? 1.0f / d : 0.0f;
	wr16(b, quant_f32_to_fp16(d));
	wr16(b + 2, quant_f32_to_fp16(mn));
	uint32_t qh = 0;
	for (int j = 0; j < 16; j++) {
		int q0 = clampi(code_of((x[j] - mn) * id + 0.5f), 0, 31);
		int q1 = clampi(code_of((x[j + 16] - mn) * id + 0.5f), 0, 31);
		b[8 + j] = (uint8_t)((q0 & 0xF) | (q1 & 0xF) << 4);
		qh |= (uint32_t)(q0 >> 4) << j | (uint32_t)(q1 >> 4) << (j + 16);
	}
	memcpy(b + 4, &qh, 4);
}

static void enc_q8_0(const float *x, uint8_t *b)
{
	float amax;
	signed_absmax(x, 32, &amax);
	float d = amax / 127, id = d ? 1.0f / d : 0.0f;
	wr16(b, quant_f32_to_fp16(d));
	for (int j = 0; j < 32; j++)
		b[2 + j] = (uint8_t)(int8_t)code_of(roundf(x[j] * id));
}

static void enc_q8_1(const float *x, uint8_t *b)
{
	float amax;
	signed_absmax(x, 32, &amax);
	float d = amax / 127, id = d ? 1.0f / d : 0.0f;
	int sum = 0;
	for (int j = 0; j < 32; j++) {
		int q = code_of(roundf(x[j] * id));
		b[4 + j] = (uint8_t)(int8_t)q;
		sum += q;
	}
	wr16(b, quant_f32_to_fp16(d));
	wr16(b + 2, quant_f32_to_fp16((float)sum * d));
}

static int best_index(const int8_t *values, int nv, float x)
{
	int best = 0;
	float err = fabsf(x - (float)values[0]);
	for (int i = 1; i < nv; i++) {
		float e = fabsf(x - (float)values[i]);
		if (e < err) {
			err = e;
			best = i;
		}
	}
	return best;
}

/* Scale for a block of n values on the IQ4_NL levels: a search over 15
 * candidate scales, least squares weighted by x^2. Fills L. */
static float iq4nl_fit(const float *x, int n, uint8_t *L)
{
	const int8_t *kv = quant_kvalues_iq4nl;
	float amax, max = signed_absmax(x, n, &amax);
	if (amax == 0) {
		memset(L, 0, (size_t)n);
		return 0;
	}
	float best = -1, d = 0;
	for (int itry = -7; itry <= 7; itry++) {
		float id = ((float)itry + (float)kv[0]) / max;
		float sumqx = 0, sumq2 = 0;
		for (int j = 0; j < n; j++) {
			int l = best_index(kv, 16, id * x[j]);
			float q = (float)kv[l], w = x[j] * x[j];
			sumqx += w * q * x[j];
			sumq2 += w * q * q;
		}
		if (sumq2 > 0 && (best < 0 || sumqx * sumqx > best * sumq2)) {
			d = sumqx / sumq2;
			best = d * sumqx;
		}
	}
	float id = d ? 1.0f / d : 0;
	for (int j = 0; j < n; j++)
		L[j] = (uint8_t)best_index(kv, 16, id * x[j]);
	return d;
}

static void enc_iq4_nl(const float *x, uint8_t *b)
{
	uint8_t L[32];
	float d = iq4nl_fit(x, 32, L);
	wr16(b, quant_f32_to_fp16(d));
	/* re-round against the stored fp16 scale */
	float ds = qrdfp16(b), id = ds ? 1.0f / ds : 0;
	for (int j = 0; j < 32; j++)
		L[j] = (uint8_t)best_index(quant_kvalues_iq4nl, 16, id * x[j]);
	for (int j = 0; j < 16; j++)
		b[2 + j] = (uint8_t)(L[j] | L[j + 16] << 4);
}

static void enc_mxfp4(const float *x, uint8_t *b)
{
	float amax;
	signed_absmax(x, 32, &amax);
	/* The exponent byte as ggml computes it: floor(log2(amax)) - 2 + 127,
	 * at most 252. Below amax = 2^-125 it is negative, and ggml (on x86,
	 * and gguf-py) stores it modulo 256: a huge scale under which every
	 * value takes code 0, so the block decodes to zeros. Kept for bit
	 * equality; an infinite amax gives 0 as it does there. */
	int e = amax > 0 && isfinite(amax) ? (int)floorf(log2f(amax)) - 2 + 127 : 0;
	b[0] = (uint8_t)(e & 0xff);
	float d = qe8m0_half(b[0]);
	uint8_t L[32];
	for (int j = 0; j < 32; j++) {
		int best = 0;
		float err = INFINITY;
		for (int i = 0; i < 16; i++) {
			float er = fabsf(d * (float)quant_kvalues_mxfp4[i] - x[j]);
			if (er < err) {
				err = er;
				best = i;
			}
		}
		L[j] = (uint8_t)best;
	}
	for (int j = 0; j < 16; j++)
		b[1 + j] = (uint8_t)(L[j] | L[j + 16] << 4);
}

/* ---- scale fitting for the K formats ------------------------------------- */

/* Symmetric: levels -nmax..nmax-1. Tries 19 scales around nmax/max and keeps
 * the least-squares optimum weighted by x^2. Returns the scale; L gets
 * level + nmax. */
static float fit_symmetric(int n, int nmax, const float *x, int8_t *L)
{
	float amax, max = signed_absmax(x, n, &amax);
	if (amax < 1e-30f) {
		memset(L, 0, (size_t)n);
		return 0;
	}
	float best = 0, scale = 0;
	int8_t tmp[32];
	for (int is = -9; is <= 9; is++) {
		float iscale = -((float)nmax + 0.1f * (float)is) / max;
		float sumlx = 0, suml2 = 0;
		for (int i = 0; i < n; i++) {
			int l = clampi(nearest_int(iscale * x[i]), -nmax, nmax - 1);
			tmp[i] = (int8_t)(l + nmax);
			float w = x[i] * x[i];
			sumlx += w * x[i] * (float)l;
			suml2 += w * (float)l * (float)l;
		}
		if (suml2 > 0 && (scale == 0 || sumlx * sumlx > best * suml2)) {
			scale = sumlx / suml2;
			best = scale * sumlx;
			memcpy(L, tmp, (size_t)n);
		}
	}
	return scale;
}

/* Asymmetric: x ~ scale * l - min with l in 0..nmax, min >= 0. Tries nstep+1
 * candidate scales; for each, the weighted least-squares scale and min given
 * the levels. Returns the scale, *the_min gets min. */
static float fit_affine(int n, int nmax, const float *x, const float *w, uint8_t *L,
			float *the_min, float rmin, float rdelta, int nstep, int use_mad)
{
	float mn = x[0], mx = x[0], sum_w = w[0], sum_x = w[0] * x[0];
	for (int i = 1; i < n; i++) {
		if (x[i] < mn)
			mn = x[i];
		if (x[i] > mx)
			mx = x[i];
		sum_w += w[i];
		sum_x += w[i] * x[i];
	}
	if (mn > 0)
		mn = 0;
	if (mx == mn) {
		memset(L, 0, (size_t)n);
		*the_min = -mn;
		return 0;
	}
	uint8_t tmp[32];
	float best_err = INFINITY, best_scale = 0, best_min = mn;
	for (int is = -1; is <= nstep; is++) {
		/* is = -1: the plain max/min grid */
		float iscale = is < 0 ? (float)nmax / (mx - mn) : (rmin + rdelta * (float)is + (float)nmax) / (mx - mn);
		float sum_l = 0, sum_l2 = 0, sum_xl = 0;
		for (int i = 0; i < n; i++) {
			int l = clampi(nearest_int(iscale * (x[i] - mn)), 0, nmax);
			tmp[i] = (uint8_t)l;
			sum_l += w[i] * (float)l;
			sum_l2 += w[i] * (float)l * (float)l;
			sum_xl += w[i] * (float)l * x[i];
		}
		float D = sum_w * sum_l2 - sum_l * sum_l;
		float scale, m;
		if (is < 0 || D <= 0) {
			scale = 1.0f / iscale;
			m = mn;
		} else {
			scale = (sum_w * sum_xl - sum_x * sum_l) / D;
			m = (sum_l2 * sum_x - sum_l * sum_xl) / D;
			if (m > 0) {
				m = 0;
				scale = sum_l2 > 0 ? sum_xl / sum_l2 : 0;
			}
		}
		float err = 0;
		for (int i = 0; i < n; i++) {
			float diff = scale * (float)tmp[i] + m - x[i];
			err += w[i] * (use_mad ? fabsf(diff) : diff * diff);
		}
		if (err < best_err) {
			best_err = err;
			best_scale = scale;
			best_min = m;
			memcpy(L, tmp, (size_t)n);
		}
	}
	*the_min = -best_min;
	return best_scale;
}

/* ---- K formats --------------------------------------------------------------- */

static void enc_q2_k(const float *x, uint8_t *b)
{
	uint8_t L[QK_K];
	float w[16], scales[16], mins[16], max_scale = 0, max_min = 0;
	for (int j = 0; j < 16; j++) {
		for (int l = 0; l < 16; l++)
			w[l] = fabsf(x[16 * j + l]);
		scales[j] = fit_affine(16, 3, x + 16 * j, w, L + 16 * j, &mins[j], -0.5f, 0.1f, 15, 1);
		if (scales[j] > max_scale)
			max_scale = scales[j];
		if (mins[j] > max_min)
			max_min = mins[j];
	}
	uint8_t *sc = b, *qs = b + 16;
	float isc = max_scale > 0 ? 15 / max_scale : 0, imn = max_min > 0 ? 15 / max_min : 0;
	for (int j = 0; j < 16; j++)
		sc[j] = (uint8_t)(clampi(nearest_int(isc * scales[j]), 0, 15) |
				  clampi(nearest_int(imn * mins[j]), 0, 15) << 4);
	wr16(b + 80, quant_f32_to_fp16(max_scale / 15));
	wr16(b + 82, quant_f32_to_fp16(max_min / 15));
	float d = qrdfp16(b + 80), dmin = qrdfp16(b + 82);
	for (int j = 0; j < 16; j++) {
		float d1 = d * (float)(sc[j] & 0xF);
		if (!d1)
			continue;
		float dm = dmin * (float)(sc[j] >> 4);
		for (int l = 0; l < 16; l++)
			L[16 * j + l] = (uint8_t)clampi(nearest_int((x[16 * j + l] + dm) / d1), 0, 3);
	}
	for (int j = 0; j < QK_K; j += 128)
		for (int l = 0; l < 32; l++)
			qs[j / 4 + l] = (uint8_t)(L[j + l] | L[j + l + 32] << 2 | L[j + l + 64] << 4 | L[j + l + 96] << 6);
}

static void enc_q3_k(const float *x, uint8_t *b)
{
	int8_t L[QK_K];
	float scales[16];
	for (int j = 0; j < 16; j++)
		scales[j] = fit_symmetric(16, 4, x + 16 * j, L + 16 * j);
	float max_scale = signed_absmax(scales, 16, NULL);
	memset(b, 0, Q3_K_B);
	uint8_t *hm = b, *qs = b + 32, *sc = b + 96;
	if (max_scale) {
		float iscale = -32 / max_scale;
		for (int j = 0; j < 16; j++) {
			int l = clampi(nearest_int(iscale * scales[j]), -32, 31) + 32;
			if (j < 8)
				sc[j] = (uint8_t)(l & 0xF);
			else
				sc[j - 8] |= (uint8_t)((l & 0xF) << 4);
			sc[8 + j % 4] |= (uint8_t)((l >> 4) << (2 * (j / 4)));
		}
		wr16(b + 108, quant_f32_to_fp16(1 / iscale));
	}
	float d = qrdfp16(b + 108);
	for (int j = 0; j < 16; j++) {
		int lo = j < 8 ? sc[j] & 0xF : sc[j - 8] >> 4;
		int s = (lo | ((sc[8 + j % 4] >> (2 * (j / 4))) & 3) << 4) - 32;
		float d1 = d * (float)s;
		for (int l = 0; l < 16; l++)
			L[16 * j + l] = (int8_t)(d1 ? clampi(nearest_int(x[16 * j + l] / d1), -4, 3) + 4 : 4);
	}
	for (int j = 0; j < QK_K; j++) {
		if (L[j] > 3) {
			hm[j % 32] |= (uint8_t)(1u << (j / 32));
			L[j] -= 4;
		}
	}
	for (int j = 0; j < QK_K; j += 128)
		for (int l = 0; l < 32; l++)
			qs[j / 4 + l] = (uint8_t)(L[j + l] | L[j + l + 32] << 2 | L[j + l + 64] << 4 | L[j + l + 96] << 6);
}

/* Shared by Q4_K (nmax 15) and Q5_K (nmax 31): fits 8 sub-blocks of 32 and
 * writes d, dmin and the packed 6-bit scales; L gets the final levels. */
static void enc_k4(const float *x, uint8_t *b, int nmax, uint8_t *L)
{
	float w[32], scales[8], mins[8], max_scale = 0, max_min = 0;
	for (int j = 0; j < 8; j++) {
		const float *xs = x + 32 * j;
		float sum_x2 = 0;
		for (int l = 0; l < 32; l++)
			sum_x2 += xs[l] * xs[l];
		float av_x = sqrtf(sum_x2 / 32);
		for (int l = 0; l < 32; l++)
			w[l] = av_x + fabsf(xs[l]);
		scales[j] = fit_affine(32, nmax, xs, w, L + 32 * j, &mins[j], -1.0f, 0.1f, 20, 0);
		if (scales[j] > max_scale)
			max_scale = scales[j];
		if (mins[j] > max_min)
			max_min = mins[j];
	}
	uint8_t *s = b + 4;
	memset(s, 0, 12);
	float isc = max_scale > 0 ? 63 / max_scale : 0, imn = max_min > 0 ? 63 / max_min : 0;
	for (int j = 0; j < 8; j++) {
		int ls = clampi(nearest_int(isc * scales[j]), 0, 63);
		int lm = clampi(nearest_int(imn * mins[j]), 0, 63);
		if (j < 4) {
			s[j] = (uint8_t)ls;
			s[j + 4] = (uint8_t)lm;
		} else {
			s[j + 4] = (uint8_t)((ls & 0xF) | (lm & 0xF) << 4);
			s[j - 4] |= (uint8_t)((ls >> 4) << 6);
			s[j] |= (uint8_t)((lm >> 4) << 6);
		}
	}
	wr16(b, quant_f32_to_fp16(max_scale / 63));
	wr16(b + 2, quant_f32_to_fp16(max_min / 63));
	float d = qrdfp16(b), dmin = qrdfp16(b + 2);
	for (int j = 0; j < 8; j++) {
		uint8_t sc, m;
		quant_k4_scale_min(s, j, &sc, &m);
		float d1 = d * (float)sc;
		if (!d1)
			continue;
		float dm = dmin * (float)m;
		for (int l = 0; l < 32; l++)
			L[32 * j + l] = (uint8_t)clampi(nearest_int((x[32 * j + l] + dm) / d1), 0, nmax);
	}
}

static void enc_q4_k(const float *x, uint8_t *b)
{
	uint8_t L[QK_K];
	enc_k4(x, b, 15, L);
	uint8_t *q = b + 16;
	for (int j = 0; j < QK_K; j += 64, q += 32)
		for (int l = 0; l < 32; l++)
			q[l] = (uint8_t)(L[j + l] | L[j + l + 32] << 4);
}

static void enc_q5_k(const float *x, uint8_t *b)
{
	uint8_t L[QK_K];
	enc_k4(x, b, 31, L);
	uint8_t *qh = b + 16, *q = b + 48;
	memset(qh, 0, 32);
	for (int j = 0; j < QK_K; j += 64, q += 32) {
		int sub = j / 32;
		for (int l = 0; l < 32; l++) {
			int l1 = L[j + l], l2 = L[j + l + 32];
			q[l] = (uint8_t)((l1 & 0xF) | (l2 & 0xF) << 4);
			qh[l] |= (uint8_t)((l1 >> 4) << sub | (l2 >> 4) << (sub + 1));
		}
	}
}

static void enc_q6_k(const float *x, uint8_t *b)
{
	int8_t L[QK_K];
	float scales[16], amax;
	for (int j = 0; j < 16; j++)
		scales[j] = fit_symmetric(16, 32, x + 16 * j, L + 16 * j);
	float max_scale = signed_absmax(scales, 16, &amax);
	memset(b, 0, Q6_K_B);
	if (!amax)
		return;
	uint8_t *ql = b, *qh = b + 128;
	int8_t *sc = (int8_t *)(b + 192);
	float iscale = -128 / max_scale;
	wr16(b + 208, quant_f32_to_fp16(1 / iscale));
	for (int j = 0; j < 16; j++)
		sc[j] = (int8_t)clampi(nearest_int(iscale * scales[j]), -128, 127);
	float d = qrdfp16(b + 208);
	for (int j = 0; j < 16; j++) {
		float d1 = d * (float)sc[j];
		for (int l = 0; l < 16; l++)
			L[16 * j + l] = (int8_t)(d1 ? clampi(nearest_int(x[16 * j + l] / d1), -32, 31) + 32 : 32);
	}
	for (int j = 0; j < QK_K; j += 128, ql += 64, qh += 32) {
		for (int l = 0; l < 32; l++) {
			int q1 = L[j + l], q2 = L[j + l + 32], q3 = L[j + l + 64], q4 = L[j + l + 96];
			ql[l] = (uint8_t)((q1 & 0xF) | (q3 & 0xF) << 4);
			ql[l + 32] = (uint8_t)((q2 & 0xF) | (q4 & 0xF) << 4);
			qh[l] = (uint8_t)((q1 >> 4) | (q2 >> 4) << 2 | (q3 >> 4) << 4 | (q4 >> 4) << 6);
		}
	}
}

static void enc_q8_k(const float *x, uint8_t *b)
{
	float amax, max = signed_absmax(x, QK_K, &amax);
	memset(b, 0, Q8_K_B);
	if (!amax)
		return;
	float iscale = -127.f / max;
	for (int j = 0; j < QK_K; j++) {
		int v = nearest_int(iscale * x[j]);
		b[4 + j] = (uint8_t)(int8_t)(v > 127 ? 127 : v);
	}
	for (int j = 0; j < 16; j++) {
		int16_t s = 0;
		for (int l = 0; l < 16; l++)
			s = (int16_t)(s + (int8_t)b[4 + 16 * j + l]);
		memcpy(b + 260 + 2 * j, &s, 2);
	}
	float d = 1 / iscale;
	memcpy(b, &d, 4);
}

static void enc_iq4_xs(const float *x, uint8_t *b)
{
	uint8_t L[32];
	float scales[8], amax = 0, max_scale = 0;
	for (int ib = 0; ib < 8; ib++) {
		scales[ib] = iq4nl_fit(x + 32 * ib, 32, L);
		if (fabsf(scales[ib]) > amax) {
			amax = fabsf(scales[ib]);
			max_scale = scales[ib];
		}
	}
	memset(b, 0, IQ4_XS_B);
	if (!amax)
		return;
	float d = -max_scale / 32, id = 1 / d;
	wr16(b, quant_f32_to_fp16(d));
	float ds = qrdfp16(b);
	uint16_t sh = 0;
	uint8_t *sl = b + 4, *q = b + 8;
	for (int ib = 0; ib < 8; ib++, q += 16) {
		int l = clampi(nearest_int(id * scales[ib]), -32, 31);
		float dl = ds * (float)l, idl = dl ? 1 / dl : 0;
		int ls = l + 32;
		sl[ib / 2] |= (uint8_t)((ls & 0xF) << (4 * (ib % 2)));
		sh |= (uint16_t)((ls >> 4) << (2 * ib));
		const float *xs = x + 32 * ib;
		for (int j = 0; j < 32; j++)
			L[j] = (uint8_t)best_index(quant_kvalues_iq4nl, 16, idl * xs[j]);
		for (int j = 0; j < 16; j++)
			q[j] = (uint8_t)(L[j] | L[j + 16] << 4);
	}
	memcpy(b + 2, &sh, 2);
}

/* ---- ternary --------------------------------------------------------------- */

static void ternary_levels(const float *x, uint8_t *L, float *d)
{
	float amax;
	signed_absmax(x, QK_K, &amax);
	float id = amax ? 1 / amax : 0;
	/* amax below 2^-128 makes 1/amax infinite (and the fp16 scale 0):
	 * ggml (on x86, and gguf-py) then stores every trit as 0, which is
	 * what id = 0 gives without converting an infinity to an int. */
	if (isinf(id))
		id = 0;
	for (int j = 0; j < QK_K; j++)
		L[j] = (uint8_t)(clampi((int)roundf(x[j] * id), -1, 1) + 1);
	*d = amax;
}

static uint8_t pack_trits(const uint8_t *L, int stride, int n)
{
	int q = 0;
	for (int i = 0; i < 5; i++)
		q = q * 3 + (i < n ? L[i * stride] : 0);
	return (uint8_t)((q * 256 + 242) / 243);
}

static void enc_tq1_0(const float *x, uint8_t *b)
{
	uint8_t L[QK_K];
	float d;
	ternary_levels(x, L, &d);
	for (int m = 0; m < 32; m++)
		b[m] = pack_trits(L + m, 32, 5);
	for (int m = 0; m < 16; m++)
		b[32 + m] = pack_trits(L + 160 + m, 16, 5);
	for (int m = 0; m < 4; m++)
		b[48 + m] = pack_trits(L + 240 + m, 4, 4);
	wr16(b + 52, quant_f32_to_fp16(d));
}

static void enc_tq2_0(const float *x, uint8_t *b)
{
	uint8_t L[QK_K];
	float d;
	ternary_levels(x, L, &d);
	for (int j = 0; j < 2; j++)
		for (int m = 0; m < 32; m++)
			b[32 * j + m] = (uint8_t)(L[128 * j + m] | L[128 * j + 32 + m] << 2 |
						  L[128 * j + 64 + m] << 4 | L[128 * j + 96 + m] << 6);
	wr16(b + 64, quant_f32_to_fp16(d));
}

/* ---- dispatch -------------------------------------------------------------- */

typedef void (*block_enc)(const float *x, uint8_t *b);

static block_enc encoder(uint32_t t)
{
	switch (t) {
	case QT_Q4_0: return enc_q4_0;
	case QT_Q4_1: return enc_q4_1;
	case QT_Q5_0: return enc_q5_0;
	case QT_Q5_1: return enc_q5_1;
	case QT_Q8_0: return enc_q8_0;
	case QT_Q8_1: return enc_q8_1;
	case QT_Q2_K: return enc_q2_k;
	case QT_Q3_K: return enc_q3_k;
	case QT_Q4_K: return enc_q4_k;
	case QT_Q5_K: return enc_q5_k;
	case QT_Q6_K: return enc_q6_k;
	case QT_Q8_K: return enc_q8_k;
	case QT_IQ4_NL: return enc_iq4_nl;
	case QT_IQ4_XS: return enc_iq4_xs;
	case QT_TQ1_0: return enc_tq1_0;
	case QT_TQ2_0: return enc_tq2_0;
	case QT_MXFP4: return enc_mxfp4;
	}
	return NULL;
}

bool quant_can_quantize(uint32_t t)
{
	return t == QT_F32 || t == QT_F16 || t == QT_BF16 || encoder(t) != NULL;
}

int quant_quantize_row(uint32_t t, const float *src, void *dst, uint64_t n)
{
	uint8_t *p = dst;
	if (!quant_type_valid(t))
		return TERN_EINVAL;
	const struct quant_type_info *ti = quant_type_info(t);
	if (n % ti->blck)
		return TERN_EINVAL;
	switch (t) {
	case QT_F32:
		memcpy(dst, src, n * 4);
		return 0;
	case QT_F16:
		for (uint64_t i = 0; i < n; i++)
			wr16(p + 2 * i, quant_f32_to_fp16(src[i]));
		return 0;
	case QT_BF16:
		for (uint64_t i = 0; i < n; i++)
			wr16(p + 2 * i, quant_f32_to_bf16(src[i]));
		return 0;
	}
	block_enc enc = encoder(t);
	if (!enc)
		return TERN_EUNSUPPORTED;
	for (uint64_t b = 0; b < n / ti->blck; b++)
		enc(src + b * ti->blck, p + b * ti->size);
	return 0;
}
