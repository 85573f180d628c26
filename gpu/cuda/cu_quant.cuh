/* cu_quant.cuh - the device's block decoders, one per weight type in its
 * GGUF block layout: the CUDA twin of quant/ref.c (and of the Vulkan
 * backend's gpu/vulkan/shaders/dequant.glsl, whose element order per unit
 * this follows). Templates on the type, so that every kernel over them
 * specializes at compile time.
 *
 * A row is decoded by units: qt<T>::unit elements that share their
 * scales (8 for the block types, 1 for the float types, whose rows may
 * have any length). decu<T>(row, e, v) writes elements e .. e + unit - 1
 * (e a multiple of unit) of the row whose first byte is at row.
 *
 * get_rows and copy must give the reference's bits (the tests compare
 * with memcmp): every value is computed in the reference's order of
 * operations, and a multiply followed by an add is spelled with the _rn
 * intrinsics, which nvcc never fuses into one fma (d * q - m would round
 * once instead of twice).
 *
 * NO_MIN (the products of Q4_1 / Q5_1): the block's minimum is left out
 * of the values, because the reference's dot adds it once per block as
 * m * s, s the activations' fp16 block sum (quant/dot.c); block_min<T>
 * gives m.
 *
 * Alignment: blocks start at multiples of their size from a row start,
 * and rows start at multiples of the row size from a cudaMalloc'd base
 * (256-byte aligned), so a block is 2-byte aligned in every type except
 * MXFP4 (17 bytes: read by bytes). Wider fields are read at the width
 * their address allows (rd8). */
#ifndef TERN_CU_QUANT_CUH
#define TERN_CU_QUANT_CUH

#include "gpu/cuda/cu_impl.cuh"

namespace tern_cu {

/* ---- the IQ grids: quant/iq_grids.c's tables themselves, included as
 * the default member initializers of one struct (its header's extern
 * declarations skipped by its guard), so that the device copy is built
 * from the same source as the CPU's and no value is written twice ---- */
struct iq_grids_t {
#ifndef TERN_QUANT_IQ_GRIDS_H
#define TERN_QUANT_IQ_GRIDS_H 1
#define TERN_CU_UNDEF_GRIDS_GUARD
#endif
#include "quant/iq_grids.c"
};
#ifdef TERN_CU_UNDEF_GRIDS_GUARD
#undef TERN_QUANT_IQ_GRIDS_H
#undef TERN_CU_UNDEF_GRIDS_GUARD
#endif
/* global memory, not __constant__: the lanes of a warp index the grids
 * at different places, which constant memory would serialize */
__device__ const iq_grids_t g_iq{};

/* quant/ref.c's level tables (format facts) */
__device__ const int8_t g_kv_iq4nl[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};
__device__ const int8_t g_kv_mxfp4[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};

/* ---- byte readers ---- */

__device__ __forceinline__ unsigned rd_b(const uint8_t *p) { return *p; }
/* a 16-bit field (p even) */
__device__ __forceinline__ unsigned rd_h(const uint8_t *p)
{
#if CU_EMULATED
	uint16_t v;
	memcpy(&v, p, 2);
	return v;
#else
	return *(const uint16_t *)p;
#endif
}
/* a 32-bit field at an even address */
__device__ __forceinline__ unsigned rd_w2(const uint8_t *p) { return rd_h(p) | rd_h(p + 2) << 16; }
/* 8 bytes at p, at the widest width p's alignment allows */
__device__ __forceinline__ uint2 rd8(const uint8_t *p)
{
#if CU_EMULATED
	uint2 v;
	memcpy(&v, p, 8);
	return v;
#else
	uintptr_t a = (uintptr_t)p;
	if ((a & 7) == 0)
		return *(const uint2 *)p;
	if ((a & 3) == 0)
		return make_uint2(*(const unsigned *)p, *(const unsigned *)(p + 4));
	if ((a & 1) == 0)
		return make_uint2(rd_w2(p), rd_w2(p + 4));
	return make_uint2(p[0] | p[1] << 8 | p[2] << 16 | (unsigned)p[3] << 24,
			  p[4] | p[5] << 8 | p[6] << 16 | (unsigned)p[7] << 24);
#endif
}
__device__ __forceinline__ unsigned byte8(uint2 w, int i) { return ((i < 4 ? w.x : w.y) >> (8 * (i & 3))) & 255u; }
__device__ __forceinline__ float h2f(unsigned h) { return __half2float(__ushort_as_half((unsigned short)h)); }
__device__ __forceinline__ float bf2f(unsigned h) { return __uint_as_float(h << 16); }
/* products and sums that are never fused (the reference rounds each) */
__device__ __forceinline__ float fmul(float a, float b) { return __fmul_rn(a, b); }
__device__ __forceinline__ float fadd(float a, float b) { return __fadd_rn(a, b); }
__device__ __forceinline__ float fsub(float a, float b) { return __fadd_rn(a, -b); }

/* ---- the types' geometry ---- */

template <int T> struct qt;
#define CU_QT(T_, BLCK_, BSIZE_, UNIT_)                                                                            \
	template <> struct qt<T_> {                                                                                \
		static constexpr int blck = BLCK_, bsize = BSIZE_, unit = UNIT_;                                   \
	};
CU_QT(T_F32, 1, 4, 1)
CU_QT(T_F16, 1, 2, 1)
CU_QT(T_BF16, 1, 2, 1)
CU_QT(T_I32, 1, 4, 1)
CU_QT(T_Q4_0, 32, 18, 8)
CU_QT(T_Q4_1, 32, 20, 8)
CU_QT(T_Q5_0, 32, 22, 8)
CU_QT(T_Q5_1, 32, 24, 8)
CU_QT(T_Q8_0, 32, 34, 8)
CU_QT(T_Q8_1, 32, 36, 8)
CU_QT(T_IQ4_NL, 32, 18, 8)
CU_QT(T_MXFP4, 32, 17, 8)
CU_QT(T_Q2_K, 256, 84, 8)
CU_QT(T_Q3_K, 256, 110, 8)
CU_QT(T_Q4_K, 256, 144, 8)
CU_QT(T_Q5_K, 256, 176, 8)
CU_QT(T_Q6_K, 256, 210, 8)
CU_QT(T_Q8_K, 256, 292, 8)
CU_QT(T_IQ4_XS, 256, 136, 8)
CU_QT(T_TQ1_0, 256, 54, 8)
CU_QT(T_TQ2_0, 256, 66, 8)
CU_QT(T_IQ2_XXS, 256, 66, 8)
CU_QT(T_IQ2_XS, 256, 74, 8)
CU_QT(T_IQ2_S, 256, 82, 8)
CU_QT(T_IQ3_XXS, 256, 98, 8)
CU_QT(T_IQ3_S, 256, 110, 8)
CU_QT(T_IQ1_S, 256, 50, 8)
CU_QT(T_IQ1_M, 256, 56, 8)
#undef CU_QT

/* the types whose products add the block minimum apart (NO_MIN) */
template <int T> struct has_min {
	static constexpr bool value = T == T_Q4_1 || T == T_Q5_1;
};
template <int T> __device__ __forceinline__ float block_min(const uint8_t *b) { return h2f(rd_h(b + 2)); }

/* ---- 8 elements 8u .. 8u + 7 of the block at b ---- */

template <int T, bool NOMIN> struct dec;

template <bool N> struct dec<T_Q4_0, N> {
	static __device__ __forceinline__ void run(const uint8_t *b, int u, float *v)
	{
		float d = h2f(rd_h(b));
		uint2 q = rd8(b + 2 + 8 * (u & 1));
		int sh = u >> 1 << 2;
		for (int i = 0; i < 8; i++)
			v[i] = (float)((int)((byte8(q, i) >> sh) & 15u) - 8) * d;
	}
};

template <bool N> struct dec<T_Q4_1, N> {
	static __device__ __forceinline__ void run(const uint8_t *b, int u, float *v)
	{
		float d = h2f(rd_h(b)), m = N ? 0.0f : h2f(rd_h(b + 2));
		uint2 q = rd8(b + 4 + 8 * (u & 1));
		int sh = u >> 1 << 2;
		for (int i = 0; i < 8; i++) {
			float r = fmul((float)((byte8(q, i) >> sh) & 15u), d);
			v[i] = N ? r : fadd(r, m);
		}
	}
};

template <bool N> struct dec<T_Q5_0, N> {
	static __device__ __forceinline__ void run(const uint8_t *b, int u, float *v)
	{
		float d = h2f(rd_h(b));
		unsigned qh = rd_w2(b + 2) >> (8 * u);
		uint2 q = rd8(b + 6 + 8 * (u & 1));
		int sh = u >> 1 << 2;
		for (int i = 0; i < 8; i++) {
			unsigned c = ((byte8(q, i) >> sh) & 15u) | ((qh >> i) & 1u) << 4;
			v[i] = (float)((int)c - 16) * d;
		}
	}
};

template <bool N> struct dec<T_Q5_1, N> {
	static __device__ __forceinline__ void run(const uint8_t *b, int u, float *v)
	{
		float d = h2f(rd_h(b)), m = N ? 0.0f : h2f(rd_h(b + 2));
		unsigned qh = rd_w2(b + 4) >> (8 * u);
		uint2 q = rd8(b + 8 + 8 * (u & 1));
		int sh = u >> 1 << 2;
		for (int i = 0; i < 8; i++) {
			unsigned c = ((byte8(q, i) >> sh) & 15u) | ((qh >> i) & 1u) << 4;
			float r = fmul((float)c, d);
			v[i] = N ? r : fadd(r, m);
		}
	}
};

template <bool N> struct dec<T_Q8_0, N> {
	static __device__ __forceinline__ void run(const uint8_t *b, int u, float *v)
	{
		float d = h2f(rd_h(b));
		uint2 q = rd8(b + 2 + 8 * u);
		for (int i = 0; i < 8; i++)
			v[i] = (float)(int8_t)byte8(q, i) * d;
	}
};

template <bool N> struct dec<T_Q8_1, N> {
	static __device__ __forceinline__ void run(const uint8_t *b, int u, float *v)
	{
		float d = h2f(rd_h(b));
		uint2 q = rd8(b + 4 + 8 * u);
		for (int i = 0; i < 8; i++)
			v[i] = (float)(int8_t)byte8(q, i) * d;
	}
};

template <bool N> struct dec<T_IQ4_NL, N> {
	static __device__ __forceinline__ void run(const uint8_t *b, int u, float *v)
	{
		float d = h2f(rd_h(b));
		uint2 q = rd8(b + 2 + 8 * (u & 1));
		int sh = u >> 1 << 2;
		for (int i = 0; i < 8; i++)
			v[i] = d * (float)g_kv_iq4nl[(byte8(q, i) >> sh) & 15u];
	}
};

template <bool N> struct dec<T_MXFP4, N> {
	static __device__ __forceinline__ void run(const uint8_t *b, int u, float *v)
	{
		/* the E8M0 scale halved (the table is stored doubled) */
		unsigned e = b[0];
		float d = __uint_as_float(e < 2 ? 0x00200000u << e : (e - 1) << 23);
		const uint8_t *q = b + 1 + 8 * (u & 1);
		int sh = u >> 1 << 2;
		for (int i = 0; i < 8; i++)
			v[i] = (float)g_kv_mxfp4[(q[i] >> sh) & 15u] * d;
	}
};

template <bool N> struct dec<T_Q2_K, N> {
	static __device__ __forceinline__ void run(const uint8_t *b, int u, float *v)
	{
		/* half n of 128, shift j, 16-group h, element l0 of it */
		int n = u >> 4, j = (u >> 2) & 3, h = (u >> 1) & 1, l0 = 8 * (u & 1);
		unsigned sc = b[8 * n + 2 * j + h];
		float d = h2f(rd_h(b + 80)), dmin = h2f(rd_h(b + 82));
		float dl = d * (float)(sc & 15u), ml = dmin * (float)(sc >> 4);
		uint2 q = rd8(b + 16 + 32 * n + 16 * h + l0);
		for (int i = 0; i < 8; i++)
			v[i] = fsub(fmul(dl, (float)((byte8(q, i) >> (2 * j)) & 3u)), ml);
	}
};

template <bool N> struct dec<T_Q3_K, N> {
	static __device__ __forceinline__ void run(const uint8_t *b, int u, float *v)
	{
		int n = u >> 4, j = (u >> 2) & 3, h = (u >> 1) & 1, l0 = 8 * (u & 3);
		int is = 8 * n + 2 * j + h;
		unsigned lo = is < 8 ? b[96 + is] & 15u : b[96 + is - 8] >> 4;
		unsigned hi = (b[104 + (is & 3)] >> (2 * (is >> 2))) & 3u;
		float d = h2f(rd_h(b + 108));
		float dl = d * (float)((int)(lo | hi << 4) - 32);
		unsigned m = 1u << (4 * n + j);
		uint2 q = rd8(b + 32 + 32 * n + l0), hm = rd8(b + l0);
		for (int i = 0; i < 8; i++) {
			int c = (int)((byte8(q, i) >> (2 * j)) & 3u) - ((byte8(hm, i) & m) ? 0 : 4);
			v[i] = dl * (float)c;
		}
	}
};

/* scale and min j (0..7) of Q4_K / Q5_K's 12 packed bytes at s */
__device__ __forceinline__ void k4_scale_min(const uint8_t *s, int j, unsigned &sc, unsigned &m)
{
	if (j < 4) {
		sc = s[j] & 63u;
		m = s[j + 4] & 63u;
	} else {
		sc = (s[j + 4] & 15u) | (s[j - 4] >> 6) << 4;
		m = (s[j + 4] >> 4) | (s[j] >> 6) << 4;
	}
}

template <bool N> struct dec<T_Q4_K, N> {
	static __device__ __forceinline__ void run(const uint8_t *b, int u, float *v)
	{
		int is = u >> 2, l0 = 8 * (u & 3);
		unsigned sc, m;
		k4_scale_min(b + 4, is, sc, m);
		float d = h2f(rd_h(b)), dmin = h2f(rd_h(b + 2));
		float d1 = d * (float)sc, m1 = dmin * (float)m;
		int sh = 4 * (is & 1);
		uint2 q = rd8(b + 16 + 32 * (is >> 1) + l0);
		for (int i = 0; i < 8; i++)
			v[i] = fsub(fmul(d1, (float)((byte8(q, i) >> sh) & 15u)), m1);
	}
};

template <bool N> struct dec<T_Q5_K, N> {
	static __device__ __forceinline__ void run(const uint8_t *b, int u, float *v)
	{
		int is = u >> 2, l0 = 8 * (u & 3);
		unsigned sc, m;
		k4_scale_min(b + 4, is, sc, m);
		float d = h2f(rd_h(b)), dmin = h2f(rd_h(b + 2));
		float d1 = d * (float)sc, m1 = dmin * (float)m;
		int sh = 4 * (is & 1);
		uint2 q = rd8(b + 48 + 32 * (is >> 1) + l0), hw = rd8(b + 16 + l0);
		for (int i = 0; i < 8; i++) {
			unsigned c = ((byte8(q, i) >> sh) & 15u) | ((byte8(hw, i) >> is) & 1u) << 4;
			v[i] = fsub(fmul(d1, (float)c), m1);
		}
	}
};

template <bool N> struct dec<T_Q6_K, N> {
	static __device__ __forceinline__ void run(const uint8_t *b, int u, float *v)
	{
		/* half n, quarter k of its 128, element l0 of the quarter's 32 */
		int n = u >> 4, k = (u >> 2) & 3, l0 = 8 * (u & 3);
		float d = h2f(rd_h(b + 208));
		float ds = d * (float)(int8_t)b[192 + 8 * n + (l0 >> 4) + 2 * k];
		uint2 lw = rd8(b + 64 * n + 32 * (k & 1) + l0), hw = rd8(b + 128 + 32 * n + l0);
		int sh = 4 * (k >> 1);
		for (int i = 0; i < 8; i++) {
			unsigned c = ((byte8(lw, i) >> sh) & 15u) | ((byte8(hw, i) >> (2 * k)) & 3u) << 4;
			v[i] = ds * (float)((int)c - 32);
		}
	}
};

template <bool N> struct dec<T_Q8_K, N> {
	static __device__ __forceinline__ void run(const uint8_t *b, int u, float *v)
	{
		float d = __uint_as_float(rd_w2(b));
		uint2 q = rd8(b + 4 + 8 * u);
		for (int i = 0; i < 8; i++)
			v[i] = d * (float)(int8_t)byte8(q, i);
	}
};

template <bool N> struct dec<T_IQ4_XS, N> {
	static __device__ __forceinline__ void run(const uint8_t *b, int u, float *v)
	{
		int ib = u >> 2, w = u & 3;
		float d = h2f(rd_h(b));
		unsigned ls = ((b[4 + (ib >> 1)] >> (4 * (ib & 1))) & 15u) | ((rd_h(b + 2) >> (2 * ib)) & 3u) << 4;
		float dl = d * (float)((int)ls - 32);
		uint2 q = rd8(b + 8 + 16 * ib + 8 * (w & 1));
		int sh = w >> 1 << 2;
		for (int i = 0; i < 8; i++)
			v[i] = dl * (float)g_kv_iq4nl[(byte8(q, i) >> sh) & 15u];
	}
};

template <bool N> struct dec<T_TQ1_0, N> {
	static __device__ __forceinline__ void run(const uint8_t *b, int u, float *v)
	{
		/* 160 elements from 32 bytes (5 trits each), 80 from 16, 16 from 4 */
		float d = h2f(rd_h(b + 52));
		for (int i = 0; i < 8; i++) {
			int e = 8 * u + i, byte, n;
			if (e < 160) {
				n = e >> 5;
				byte = e & 31;
			} else if (e < 240) {
				n = (e - 160) >> 4;
				byte = 32 + ((e - 160) & 15);
			} else {
				n = (e - 240) >> 2;
				byte = 48 + ((e - 240) & 3);
			}
			unsigned pow3 = n == 0 ? 1u : n == 1 ? 3u : n == 2 ? 9u : n == 3 ? 27u : 81u;
			unsigned q = (b[byte] * pow3) & 255u;
			v[i] = (float)((int)((q * 3u) >> 8) - 1) * d;
		}
	}
};

template <bool N> struct dec<T_TQ2_0, N> {
	static __device__ __forceinline__ void run(const uint8_t *b, int u, float *v)
	{
		int j = u >> 4, l = (u >> 2) & 3, m0 = 8 * (u & 3);
		float d = h2f(rd_h(b + 64));
		uint2 q = rd8(b + 32 * j + m0);
		for (int i = 0; i < 8; i++)
			v[i] = (float)((int)((byte8(q, i) >> (2 * l)) & 3u) - 1) * d;
	}
};

__device__ __forceinline__ float sgn(unsigned s, int j) { return (s >> j) & 1u ? -1.0f : 1.0f; }
__device__ __forceinline__ unsigned gbyte(uint64_t g, int j) { return (unsigned)(g >> (8 * j)) & 255u; }

template <bool N> struct dec<T_IQ2_XXS, N> {
	static __device__ __forceinline__ void run(const uint8_t *b, int u, float *v)
	{
		int ib = u >> 2, l = u & 3;
		const uint8_t *g = b + 2 + 8 * ib;
		unsigned aux = rd_w2(g + 4);
		float d = h2f(rd_h(b));
		float db = d * (0.5f + (float)(aux >> 28)) * 0.25f;
		uint64_t grid = g_iq.quant_iq2xxs_grid[g[l]];
		unsigned s = g_iq.quant_ksigns_iq2xs[(aux >> (7 * l)) & 127u];
		for (int j = 0; j < 8; j++)
			v[j] = db * (float)gbyte(grid, j) * sgn(s, j);
	}
};

template <bool N> struct dec<T_IQ2_XS, N> {
	static __device__ __forceinline__ void run(const uint8_t *b, int u, float *v)
	{
		int ib = u >> 2, l = u & 3;
		float d = h2f(rd_h(b));
		unsigned sc = (b[66 + ib] >> (4 * (l >> 1))) & 15u;
		float db = d * (0.5f + (float)sc) * 0.25f;
		unsigned q = rd_h(b + 2 + 2 * (4 * ib + l));
		uint64_t grid = g_iq.quant_iq2xs_grid[q & 511u];
		unsigned s = g_iq.quant_ksigns_iq2xs[q >> 9];
		for (int j = 0; j < 8; j++)
			v[j] = db * (float)gbyte(grid, j) * sgn(s, j);
	}
};

template <bool N> struct dec<T_IQ2_S, N> {
	static __device__ __forceinline__ void run(const uint8_t *b, int u, float *v)
	{
		int ib = u >> 2, l = u & 3;
		float d = h2f(rd_h(b));
		unsigned sc = (b[74 + ib] >> (4 * (l >> 1))) & 15u;
		float db = d * (0.5f + (float)sc) * 0.25f;
		unsigned gi = b[2 + 4 * ib + l] | ((b[66 + ib] << (8 - 2 * l)) & 0x300u);
		unsigned s = b[34 + 4 * ib + l];
		uint64_t grid = g_iq.quant_iq2s_grid[gi];
		for (int j = 0; j < 8; j++)
			v[j] = db * (float)gbyte(grid, j) * sgn(s, j);
	}
};

template <bool N> struct dec<T_IQ3_XXS, N> {
	static __device__ __forceinline__ void run(const uint8_t *b, int u, float *v)
	{
		int ib = u >> 2, l = u & 3;
		unsigned aux = rd_w2(b + 66 + 4 * ib);
		float d = h2f(rd_h(b));
		float db = d * (0.5f + (float)(aux >> 28)) * 0.5f;
		unsigned s = g_iq.quant_ksigns_iq2xs[(aux >> (7 * l)) & 127u];
		unsigned g1 = g_iq.quant_iq3xxs_grid[b[2 + 8 * ib + 2 * l]];
		unsigned g2 = g_iq.quant_iq3xxs_grid[b[3 + 8 * ib + 2 * l]];
		for (int j = 0; j < 8; j++)
			v[j] = db * (float)(((j < 4 ? g1 : g2) >> (8 * (j & 3))) & 255u) * sgn(s, j);
	}
};

template <bool N> struct dec<T_IQ3_S, N> {
	static __device__ __forceinline__ void run(const uint8_t *b, int u, float *v)
	{
		int ib = u >> 2, l = u & 3;
		float d = h2f(rd_h(b));
		float db = d * (float)(1u + 2u * ((b[106 + (ib >> 1)] >> (4 * (ib & 1))) & 15u));
		unsigned qh = b[66 + ib];
		unsigned g1 = g_iq.quant_iq3s_grid[b[2 + 8 * ib + 2 * l] | ((qh << (8 - 2 * l)) & 256u)];
		unsigned g2 = g_iq.quant_iq3s_grid[b[3 + 8 * ib + 2 * l] | ((qh << (7 - 2 * l)) & 256u)];
		unsigned s = b[74 + 4 * ib + l];
		for (int j = 0; j < 8; j++)
			v[j] = db * (float)(((j < 4 ? g1 : g2) >> (8 * (j & 3))) & 255u) * sgn(s, j);
	}
};

template <bool N> struct dec<T_IQ1_S, N> {
	static __device__ __forceinline__ void run(const uint8_t *b, int u, float *v)
	{
		int ib = u >> 2, l = u & 3;
		unsigned qh = rd_h(b + 34 + 2 * ib);
		float d = h2f(rd_h(b));
		float dl = d * (float)(2u * ((qh >> 12) & 7u) + 1u);
		float delta = qh & 0x8000u ? -0.125f : 0.125f;
		uint64_t grid = g_iq.quant_iq1s_grid[b[2 + 4 * ib + l] | ((qh >> (3 * l)) & 7u) << 8];
		for (int j = 0; j < 8; j++)
			v[j] = dl * ((float)(int8_t)gbyte(grid, j) + delta);
	}
};

template <bool N> struct dec<T_IQ1_M, N> {
	static __device__ __forceinline__ void run(const uint8_t *b, int u, float *v)
	{
		int ib = u >> 2, l = u & 3;
		unsigned s0 = rd_h(b + 48), s1 = rd_h(b + 50), s2 = rd_h(b + 52), s3 = rd_h(b + 54);
		unsigned dh = (s0 >> 12) | ((s1 >> 8) & 0xF0u) | ((s2 >> 4) & 0xF00u) | (s3 & 0xF000u);
		float d = h2f(dh);
		unsigned scw = rd_h(b + 48 + 2 * (ib >> 1));
		int sh = 6 * (ib & 1) + 3 * (l >> 1);
		float dl = d * (float)(2u * ((scw >> sh) & 7u) + 1u);
		unsigned h = b[32 + 2 * ib + (l >> 1)];
		unsigned nib = l & 1 ? h >> 4 : h & 15u;
		float delta = nib & 8u ? -0.125f : 0.125f;
		uint64_t grid = g_iq.quant_iq1s_grid[b[4 * ib + l] | (nib & 7u) << 8];
		for (int j = 0; j < 8; j++)
			v[j] = dl * ((float)(int8_t)gbyte(grid, j) + delta);
	}
};

/* ---- a row's unit e ---- */

template <int T, bool NOMIN = false> __device__ __forceinline__ void decu(const uint8_t *row, int64_t e, float *v)
{
	if constexpr (T == T_F32)
		v[0] = ((const float *)row)[e];
	else if constexpr (T == T_F16)
		v[0] = h2f(rd_h(row + 2 * e));
	else if constexpr (T == T_BF16)
		v[0] = bf2f(rd_h(row + 2 * e));
	else if constexpr (T == T_I32)
		v[0] = (float)((const int *)row)[e];
	else
		dec<T, NOMIN>::run(row + e / qt<T>::blck * qt<T>::bsize, (int)(e % qt<T>::blck / 8), v);
}

/* ---- every type, for the launchers: f(std::integral_constant<int, T>) ---- */

template <int T> struct tc {
	static constexpr int value = T;
};

/* the weight types of the products */
#define CU_WEIGHT_TYPES(X)                                                                                        \
	X(T_F32) X(T_F16) X(T_BF16) X(T_Q4_0) X(T_Q4_1) X(T_Q5_0) X(T_Q5_1) X(T_Q8_0) X(T_Q2_K) X(T_Q3_K)         \
	X(T_Q4_K) X(T_Q5_K) X(T_Q6_K) X(T_IQ4_NL) X(T_IQ4_XS) X(T_MXFP4) X(T_IQ2_XXS) X(T_IQ2_XS) X(T_IQ2_S)       \
	X(T_IQ3_XXS) X(T_IQ3_S) X(T_IQ1_S) X(T_IQ1_M) X(T_TQ1_0) X(T_TQ2_0)
/* and what get_rows and copy decode besides */
#define CU_ROW_TYPES(X) CU_WEIGHT_TYPES(X) X(T_Q8_1) X(T_Q8_K) X(T_I32)

/* f applied to type t's constant; false for a type not in the list */
#define CU_CASE_(T_)                                                                                              \
	case T_:                                                                                                   \
		f(tc<T_>());                                                                                       \
		return true;
template <class F> static inline bool with_weight_type(uint32_t t, F f)
{
	switch (t) {
		CU_WEIGHT_TYPES(CU_CASE_)
	}
	return false;
}
template <class F> static inline bool with_row_type(uint32_t t, F f)
{
	switch (t) {
		CU_ROW_TYPES(CU_CASE_)
	}
	return false;
}
#undef CU_CASE_

} // namespace tern_cu

#endif
