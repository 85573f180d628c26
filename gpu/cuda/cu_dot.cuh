/* cu_dot.cuh - the integer dot products of the mat-vec (cu_mmv.cu, its
 * integer form): the CUDA twin of gpu/vulkan/shaders/dot_int.glsl, for the
 * types it knows (cu_int_type). The activations come in k_actq's int form
 * (cu_prod.cuh); a lane takes 32 elements of a row at a time (a block of
 * the 32-element types, a K-quant's sub-blocks of 32 or two of 16):
 * idot<T>::load packs the weight's integer levels 4 to a 32-bit word as
 * int8 (element 4 i + j in byte j of word i, as the activations), and
 * idot<T>::dot sums them against one token's levels with __dp4a, exactly
 * in int32, then scales the sums in f32 as quant/'s SIMD dots scale them:
 * the weight's and the activations' block scales, a K-quant's sub-block
 * scales and minima multiplied in as integers first, Q4_1 / Q5_1's
 * minimum times the activations' fp16 block sum. Where a sum with the
 * minimum's term follows a product, the two are one fma (written, so that
 * the emulation rounds as the GPU does): the terms of a K-quant's
 * sub-block, d s - dmin m, may nearly cancel. The weights' levels are
 * unpacked once for every token of the launch.
 *
 * Loads: a block is 2-byte aligned (cu_quant.cuh), MXFP4's 17 bytes
 * byte-aligned; rd16 reads 16 bytes at the widest loads the address
 * allows (a 16-byte vector for the 144-byte Q4_K blocks, words and two
 * halves for the 18-byte Q4_0 ones) and never a byte outside them. */
#ifndef TERN_CU_DOT_CUH
#define TERN_CU_DOT_CUH

#include "gpu/cuda/cu_quant.cuh"

namespace tern_cu {

/* the types with an integer dot (dot_int.glsl's) */
__host__ __device__ constexpr bool cu_int_type(uint32_t t)
{
	switch (t) {
	case T_Q4_0: case T_Q4_1: case T_Q5_0: case T_Q5_1: case T_Q8_0: case T_IQ4_NL: case T_MXFP4:
	case T_Q2_K: case T_Q3_K: case T_Q4_K: case T_Q5_K: case T_Q6_K: case T_IQ4_XS:
		return true;
	}
	return false;
}

/* ---- loads ---- */

/* a V at p, p a multiple of V's size (on the emulation a fault if not) */
template <class V> __device__ __forceinline__ V ldv(const uint8_t *p)
{
#if CU_EMULATED
	return emu_load<V>(p);
#else
	return *(const V *)p;
#endif
}

/* 16 bytes at p (p even) as 4 words */
__device__ __forceinline__ uint4 rd16(const uint8_t *p)
{
	uintptr_t a = (uintptr_t)p;
	if ((a & 15) == 0)
		return ldv<uint4>(p);
	if ((a & 7) == 0) {
		uint2 u = ldv<uint2>(p), v = ldv<uint2>(p + 8);
		return make_uint4(u.x, u.y, v.x, v.y);
	}
	if ((a & 3) == 0)
		return make_uint4(ldv<unsigned>(p), ldv<unsigned>(p + 4), ldv<unsigned>(p + 8), ldv<unsigned>(p + 12));
	/* 2 mod 4: a half, three words, a half */
	unsigned h0 = ldv<uint16_t>(p), w0 = ldv<unsigned>(p + 2), w1 = ldv<unsigned>(p + 6),
		 w2 = ldv<unsigned>(p + 10), h1 = ldv<uint16_t>(p + 14);
	return make_uint4(h0 | w0 << 16, w0 >> 16 | w1 << 16, w1 >> 16 | w2 << 16, w2 >> 16 | h1 << 16);
}

__device__ __forceinline__ void put4(uint4 v, unsigned *w)
{
	w[0] = v.x;
	w[1] = v.y;
	w[2] = v.z;
	w[3] = v.w;
}

/* 32 bytes at p (p even) as 8 words */
__device__ __forceinline__ void rd32b(const uint8_t *p, unsigned *w)
{
	put4(rd16(p), w);
	put4(rd16(p + 16), w + 4);
}

/* one token's 8 words of levels for elements e .. e + 31 of its row at x
 * (16-byte aligned: the scratch's rows are) */
__device__ __forceinline__ void xq8(const unsigned *x, int64_t e, unsigned *v)
{
	const uint8_t *p = (const uint8_t *)(x + e / 4);
	put4(ldv<uint4>(p), v);
	put4(ldv<uint4>(p + 16), v + 4);
}

/* ---- levels ---- */

/* four levels of 0 .. 15 (0 .. 31, 0 .. 63, 0 .. 7) less 8 (16, 32, 4),
 * bytewise: the add never carries out of a byte, the xor flips each
 * byte's top bit */
__device__ __forceinline__ unsigned less8(unsigned q) { return (q + 0x78787878u) ^ 0x80808080u; }
__device__ __forceinline__ unsigned less16(unsigned q) { return (q + 0x70707070u) ^ 0x80808080u; }
__device__ __forceinline__ unsigned less32(unsigned q) { return (q + 0x60606060u) ^ 0x80808080u; }
__device__ __forceinline__ unsigned less4(unsigned q) { return (q + 0x7C7C7C7Cu) ^ 0x80808080u; }

/* bits 0..3 of h to bit 0 of bytes 0..3 (bit i times 2^(7 k) lands on a
 * byte's bit 0 only for k = i, and no two terms meet) */
__device__ __forceinline__ unsigned spread4(unsigned h) { return ((h & 15u) * 0x00204081u) & 0x01010101u; }

/* four int8 packed into a word */
__host__ __device__ constexpr unsigned pk4(int a, int b, int c, int d)
{
	return ((unsigned)a & 255u) | ((unsigned)b & 255u) << 8 | ((unsigned)c & 255u) << 16 |
	       ((unsigned)d & 255u) << 24;
}

/* a table of 16 int8 values, 4 to a word */
struct lut16 {
	unsigned t0, t1, t2, t3;
	/* four indices (one a byte, 0..15) to their values: byte_perm picks
	 * from the first half and from the second by the low 3 bits, bit 3
	 * chooses */
	__device__ __forceinline__ unsigned operator()(unsigned q) const
	{
		unsigned l = q & 0x07070707u, u = l | l >> 4, s = (u & 0xFFu) | ((u >> 8) & 0xFF00u);
		unsigned lo = __byte_perm(t0, t1, s), hi = __byte_perm(t2, t3, s);
		unsigned m = ((q >> 3) & 0x01010101u) * 0xFFu;
		return (lo & ~m) | (hi & m);
	}
};
/* quant/ref.c's IQ4_NL levels, and MXFP4's doubled (cu_quant.cuh's g_kv_*) */
__device__ __forceinline__ lut16 lut_iq4nl()
{
	return lut16{pk4(-127, -104, -83, -65), pk4(-49, -35, -22, -10), pk4(1, 13, 25, 38), pk4(53, 69, 89, 113)};
}
__device__ __forceinline__ lut16 lut_mxfp4()
{
	return lut16{pk4(0, 1, 2, 3), pk4(4, 6, 8, 12), pk4(0, -1, -2, -3), pk4(-4, -6, -8, -12)};
}

/* 16 bytes of nibbles as 32 levels: the low nibbles are elements 0..15 */
__device__ __forceinline__ void nibbles(uint4 q, unsigned *w)
{
	unsigned v[4] = {q.x, q.y, q.z, q.w};
	for (int i = 0; i < 4; i++) {
		w[i] = v[i] & 0x0F0F0F0Fu;
		w[4 + i] = (v[i] >> 4) & 0x0F0F0F0Fu;
	}
}

/* the sum of words i0 .. i0 + n - 1 of w and x as int8 levels */
template <int I0, int N> __device__ __forceinline__ int sdot(const unsigned *w, const unsigned *x)
{
	int s = 0;
	for (int i = I0; i < I0 + N; i++)
		s = __dp4a((int)w[i], (int)x[i], s);
	return s;
}
/* the sum of x's levels in words i0 .. i0 + n - 1 (the K-quants' minima) */
template <int I0, int N> __device__ __forceinline__ int xsum(const unsigned *x)
{
	int s = 0;
	for (int i = I0; i < I0 + N; i++)
		s = __dp4a(0x01010101, (int)x[i], s);
	return s;
}

/* ---- the types: load(b, j) the 32 elements 32 j .. 32 j + 31 of the
 * block at b; dot(x, xd, xs) their product with one token's levels x,
 * its block scale xd and (Q8_1) block sum xs ---- */

template <int T> struct idot;

template <> struct idot<T_Q8_0> {
	unsigned w[8];
	float d;
	__device__ __forceinline__ void load(const uint8_t *b, int)
	{
		d = h2f(rd_h(b));
		rd32b(b + 2, w);
	}
	__device__ __forceinline__ float dot(const unsigned *x, float xd, float) const
	{
		return d * xd * (float)sdot<0, 8>(w, x);
	}
};

template <> struct idot<T_Q4_0> {
	unsigned w[8];
	float d;
	__device__ __forceinline__ void load(const uint8_t *b, int)
	{
		d = h2f(rd_h(b));
		nibbles(rd16(b + 2), w);
		for (int i = 0; i < 8; i++)
			w[i] = less8(w[i]);
	}
	__device__ __forceinline__ float dot(const unsigned *x, float xd, float) const
	{
		return d * xd * (float)sdot<0, 8>(w, x);
	}
};

template <> struct idot<T_Q4_1> {
	unsigned w[8];
	float d, m;
	__device__ __forceinline__ void load(const uint8_t *b, int)
	{
		d = h2f(rd_h(b));
		m = h2f(rd_h(b + 2));
		nibbles(rd16(b + 4), w);
	}
	/* the minimum times the activations' fp16 block sum */
	__device__ __forceinline__ float dot(const unsigned *x, float xd, float xs) const
	{
		return __fmaf_rn(d * xd, (float)sdot<0, 8>(w, x), m * xs);
	}
};

/* Q5_0 and Q5_1: the fifth bits from qh (element i's in bit i) */
template <int T> struct idot5 {
	static constexpr bool one = T == T_Q5_1;
	unsigned w[8];
	float d, m;
	__device__ __forceinline__ void load(const uint8_t *b, int)
	{
		d = h2f(rd_h(b));
		m = one ? h2f(rd_h(b + 2)) : 0.0f;
		unsigned qh = rd_w2(b + (one ? 4 : 2));
		nibbles(rd16(b + (one ? 8 : 6)), w);
		for (int i = 0; i < 8; i++) {
			unsigned v = w[i] | spread4(qh >> (4 * i)) << 4;
			w[i] = one ? v : less16(v);
		}
	}
	__device__ __forceinline__ float dot(const unsigned *x, float xd, float xs) const
	{
		return one ? __fmaf_rn(d * xd, (float)sdot<0, 8>(w, x), m * xs) : d * xd * (float)sdot<0, 8>(w, x);
	}
};
template <> struct idot<T_Q5_0> : idot5<T_Q5_0> {};
template <> struct idot<T_Q5_1> : idot5<T_Q5_1> {};

template <> struct idot<T_IQ4_NL> {
	unsigned w[8];
	float d;
	__device__ __forceinline__ void load(const uint8_t *b, int)
	{
		d = h2f(rd_h(b));
		nibbles(rd16(b + 2), w);
		lut16 kv = lut_iq4nl();
		for (int i = 0; i < 8; i++)
			w[i] = kv(w[i]);
	}
	__device__ __forceinline__ float dot(const unsigned *x, float xd, float) const
	{
		return d * xd * (float)sdot<0, 8>(w, x);
	}
};

template <> struct idot<T_MXFP4> {
	unsigned w[8];
	float d;
	/* 17 bytes: at an odd block the levels are even, at an even one the
	 * block's first 16 bytes shifted by one and its last byte */
	__device__ __forceinline__ void load(const uint8_t *b, int)
	{
		unsigned e;
		uint4 q;
		if ((uintptr_t)b & 1) {
			e = b[0];
			q = rd16(b + 1);
		} else {
			uint4 t = rd16(b);
			unsigned last = b[16];
			e = t.x & 255u;
			q = make_uint4(t.x >> 8 | t.y << 24, t.y >> 8 | t.z << 24, t.z >> 8 | t.w << 24,
				       t.w >> 8 | last << 24);
		}
		/* the values doubled (integers), the E8M0 scale halved, as dec<T_MXFP4> */
		d = __uint_as_float(e < 2 ? 0x00200000u << e : (e - 1) << 23);
		nibbles(q, w);
		lut16 kv = lut_mxfp4();
		for (int i = 0; i < 8; i++)
			w[i] = kv(w[i]);
	}
	__device__ __forceinline__ float dot(const unsigned *x, float xd, float) const
	{
		return d * xd * (float)sdot<0, 8>(w, x);
	}
};

/* Q4_K and Q5_K: sub-block j of 32, its 6-bit scale and minimum: the sum
 * of its levels times the scale less the activations' sum times the
 * minimum */
template <int T> struct idot45k {
	unsigned w[8];
	int sc, mn;
	float d, dmin;
	__device__ __forceinline__ void load(const uint8_t *b, int j)
	{
		unsigned s, m;
		k4_scale_min(b + 4, j, s, m);
		sc = (int)s;
		mn = (int)m;
		d = h2f(rd_h(b));
		dmin = h2f(rd_h(b + 2));
		int sh = 4 * (j & 1);
		if constexpr (T == T_Q4_K) {
			rd32b(b + 16 + 32 * (j >> 1), w);
			for (int i = 0; i < 8; i++)
				w[i] = (w[i] >> sh) & 0x0F0F0F0Fu;
		} else {
			unsigned h[8];
			rd32b(b + 48 + 32 * (j >> 1), w);
			rd32b(b + 16, h);
			for (int i = 0; i < 8; i++)
				w[i] = ((w[i] >> sh) & 0x0F0F0F0Fu) | ((h[i] >> j) & 0x01010101u) << 4;
		}
	}
	__device__ __forceinline__ float dot(const unsigned *x, float xd, float) const
	{
		int s = sc * sdot<0, 8>(w, x), m = mn * xsum<0, 8>(x);
		return xd * __fmaf_rn(d, (float)s, -(dmin * (float)m));
	}
};
template <> struct idot<T_Q4_K> : idot45k<T_Q4_K> {};
template <> struct idot<T_Q5_K> : idot45k<T_Q5_K> {};

/* 32 elements of one half n and quarter k: two sub-blocks of 16 */
template <> struct idot<T_Q6_K> {
	unsigned w[8];
	int sc0, sc1;
	float d;
	__device__ __forceinline__ void load(const uint8_t *b, int j)
	{
		int n = j >> 2, k = j & 3;
		unsigned h[8];
		rd32b(b + 64 * n + 32 * (k & 1), w);
		rd32b(b + 128 + 32 * n, h);
		int sh = 4 * (k >> 1);
		for (int i = 0; i < 8; i++)
			w[i] = less32(((w[i] >> sh) & 0x0F0F0F0Fu) | ((h[i] >> (2 * k)) & 0x03030303u) << 4);
		sc0 = (int8_t)b[192 + 8 * n + 2 * k];
		sc1 = (int8_t)b[193 + 8 * n + 2 * k];
		d = h2f(rd_h(b + 208));
	}
	__device__ __forceinline__ float dot(const unsigned *x, float xd, float) const
	{
		return d * xd * (float)(sc0 * sdot<0, 4>(w, x) + sc1 * sdot<4, 4>(w, x));
	}
};

/* 32 elements of one half n at one shift s: two sub-blocks of 16, each a
 * 4-bit scale and a 4-bit minimum */
template <> struct idot<T_Q2_K> {
	unsigned w[8], sc0, sc1;
	float d, dmin;
	__device__ __forceinline__ void load(const uint8_t *b, int j)
	{
		int n = j >> 2, s = j & 3;
		rd32b(b + 16 + 32 * n, w);
		for (int i = 0; i < 8; i++)
			w[i] = (w[i] >> (2 * s)) & 0x03030303u;
		sc0 = b[8 * n + 2 * s];
		sc1 = b[8 * n + 2 * s + 1];
		d = h2f(rd_h(b + 80));
		dmin = h2f(rd_h(b + 82));
	}
	__device__ __forceinline__ float dot(const unsigned *x, float xd, float) const
	{
		int s = (int)(sc0 & 15u) * sdot<0, 4>(w, x) + (int)(sc1 & 15u) * sdot<4, 4>(w, x);
		int m = (int)(sc0 >> 4) * xsum<0, 4>(x) + (int)(sc1 >> 4) * xsum<4, 4>(x);
		return xd * __fmaf_rn(d, (float)s, -(dmin * (float)m));
	}
};

/* 32 elements of one half n at one shift s: two sub-blocks of 16; a level
 * is its 2 low bits, less 4 where the high mask bit is clear */
template <> struct idot<T_Q3_K> {
	unsigned w[8];
	int sc0, sc1;
	float d;
	static __device__ __forceinline__ int scale(const uint8_t *b, int is)
	{
		unsigned lo = is < 8 ? b[96 + is] & 15u : b[96 + is - 8] >> 4;
		unsigned hi = (b[104 + (is & 3)] >> (2 * (is >> 2))) & 3u;
		return (int)(lo | hi << 4) - 32;
	}
	__device__ __forceinline__ void load(const uint8_t *b, int j)
	{
		int n = j >> 2, s = j & 3;
		unsigned h[8];
		rd32b(b + 32 + 32 * n, w);
		rd32b(b, h);
		for (int i = 0; i < 8; i++)
			w[i] = less4(((w[i] >> (2 * s)) & 0x03030303u) | ((h[i] >> (4 * n + s)) & 0x01010101u) << 2);
		sc0 = scale(b, 8 * n + 2 * s);
		sc1 = scale(b, 8 * n + 2 * s + 1);
		d = h2f(rd_h(b + 108));
	}
	__device__ __forceinline__ float dot(const unsigned *x, float xd, float) const
	{
		return d * xd * (float)(sc0 * sdot<0, 4>(w, x) + sc1 * sdot<4, 4>(w, x));
	}
};

template <> struct idot<T_IQ4_XS> {
	unsigned w[8];
	int ls;
	float d;
	__device__ __forceinline__ void load(const uint8_t *b, int ib)
	{
		unsigned l = ((b[4 + (ib >> 1)] >> (4 * (ib & 1))) & 15u) | ((rd_h(b + 2) >> (2 * ib)) & 3u) << 4;
		ls = (int)l - 32;
		d = h2f(rd_h(b));
		nibbles(rd16(b + 8 + 16 * ib), w);
		lut16 kv = lut_iq4nl();
		for (int i = 0; i < 8; i++)
			w[i] = kv(w[i]);
	}
	__device__ __forceinline__ float dot(const unsigned *x, float xd, float) const
	{
		return d * xd * (float)(ls * sdot<0, 8>(w, x));
	}
};

} // namespace tern_cu

#endif
