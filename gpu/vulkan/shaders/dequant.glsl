/* dequant.glsl - one decoder per weight type, in the GGUF block layout,
 * the GLSL twin of quant/ref.c: for the type named by TYPE_<NAME>, decu(row,
 * e, v) writes the UNIT elements e .. e + UNIT - 1 (e a multiple of UNIT)
 * of the row whose first byte is at byte offset row. Block types decode 8
 * elements at a time (every 8 share their scales), the float types 1.
 *
 * The includer defines how bytes are read, so that one decoder serves a
 * shader with one weight binding and one that picks among several:
 *   WB(o)  the byte at byte offset o
 *   WH(o)  the 16-bit word at o (o even)
 *   WW(o)  the 32-bit word at o (o a multiple of 4)
 *   WF(o)  the f32 at o (o a multiple of 4)
 *
 * get_rows must give the reference's bits (tests compare with memcmp):
 * each value is computed in the reference's order of operations, and
 * `precise` keeps the driver from fusing a multiply and an add into one
 * fma (d1 * q - m1 would round once instead of twice).
 *
 * NO_MIN (the products with Q4_1 / Q5_1): the block's minimum is left out
 * of the values, as the reference's dot adds it once per block as m * s,
 * s the activations' fp16 block sum (quant/dot.c); block_min(b) gives m. */

float h2f(uint h) { return unpackHalf2x16(h).x; }

uint rd32(uint o) { return WH(o) | (WH(o + 2u) << 16); } /* o even */

/* 8 consecutive bytes at o as two words, read at the widest width o's
 * alignment allows (a block's payload is 4- or 2-byte aligned in most
 * types: 2 or 4 loads instead of 8) */
uvec2 rd8(uint o)
{
	if ((o & 3u) == 0u)
		return uvec2(WW(o), WW(o + 4u));
	if ((o & 1u) == 0u)
		return uvec2(rd32(o), rd32(o + 4u));
	return uvec2(WB(o) | (WB(o + 1u) << 8) | (WB(o + 2u) << 16) | (WB(o + 3u) << 24),
		     WB(o + 4u) | (WB(o + 5u) << 8) | (WB(o + 6u) << 16) | (WB(o + 7u) << 24));
}
uint byte8(uvec2 w, uint i) { return (w[i >> 2] >> (8u * (i & 3u))) & 255u; }
int sbyte(uint v) { return int(v << 24) >> 24; }

#if defined(TYPE_F32)
#define UNIT 1u
#define BLCK 1u
#define BSIZE 4u
void decu(uint row, uint e, out float v[UNIT]) { v[0] = WF(row + 4u * e); }

#elif defined(TYPE_F16)
#define UNIT 1u
#define BLCK 1u
#define BSIZE 2u
void decu(uint row, uint e, out float v[UNIT]) { v[0] = h2f(WH(row + 2u * e)); }

#elif defined(TYPE_BF16)
#define UNIT 1u
#define BLCK 1u
#define BSIZE 2u
void decu(uint row, uint e, out float v[UNIT]) { v[0] = uintBitsToFloat(WH(row + 2u * e) << 16); }

#else
#define UNIT 8u

#if defined(TYPE_Q4_0)
#define BLCK 32u
#define BSIZE 18u
void dec8(uint b, uint u, out float v[8])
{
	float d = h2f(WH(b));
	uint q0 = b + 2u + 8u * (u & 1u), sh = u >> 1 << 2;
	uvec2 qw = rd8(q0);
	[[unroll]] for (uint i = 0u; i < 8u; i++) {
		precise float r = float(int((byte8(qw, i) >> sh) & 15u) - 8) * d;
		v[i] = r;
	}
}

#elif defined(TYPE_Q4_1)
#define BLCK 32u
#define BSIZE 20u
float block_min(uint b) { return h2f(WH(b + 2u)); }
void dec8(uint b, uint u, out float v[8])
{
	float d = h2f(WH(b));
#ifdef NO_MIN
	float m = 0.0;
#else
	float m = h2f(WH(b + 2u));
#endif
	uint q0 = b + 4u + 8u * (u & 1u), sh = u >> 1 << 2;
	uvec2 qw = rd8(q0);
	[[unroll]] for (uint i = 0u; i < 8u; i++) {
		precise float r = float((byte8(qw, i) >> sh) & 15u) * d + m;
		v[i] = r;
	}
}

#elif defined(TYPE_Q5_0)
#define BLCK 32u
#define BSIZE 22u
void dec8(uint b, uint u, out float v[8])
{
	float d = h2f(WH(b));
	uint qh = rd32(b + 2u) >> (8u * u);
	uint q0 = b + 6u + 8u * (u & 1u), sh = u >> 1 << 2;
	uvec2 qw = rd8(q0);
	[[unroll]] for (uint i = 0u; i < 8u; i++) {
		uint q = ((byte8(qw, i) >> sh) & 15u) | (((qh >> i) & 1u) << 4);
		precise float r = float(int(q) - 16) * d;
		v[i] = r;
	}
}

#elif defined(TYPE_Q5_1)
#define BLCK 32u
#define BSIZE 24u
float block_min(uint b) { return h2f(WH(b + 2u)); }
void dec8(uint b, uint u, out float v[8])
{
	float d = h2f(WH(b));
#ifdef NO_MIN
	float m = 0.0;
#else
	float m = h2f(WH(b + 2u));
#endif
	uint qh = rd32(b + 4u) >> (8u * u);
	uint q0 = b + 8u + 8u * (u & 1u), sh = u >> 1 << 2;
	uvec2 qw = rd8(q0);
	[[unroll]] for (uint i = 0u; i < 8u; i++) {
		uint q = ((byte8(qw, i) >> sh) & 15u) | (((qh >> i) & 1u) << 4);
		precise float r = float(q) * d + m;
		v[i] = r;
	}
}

#elif defined(TYPE_Q8_0)
#define BLCK 32u
#define BSIZE 34u
void dec8(uint b, uint u, out float v[8])
{
	float d = h2f(WH(b));
	uint q0 = b + 2u + 8u * u;
	uvec2 qw = rd8(q0);
	[[unroll]] for (uint i = 0u; i < 8u; i++) {
		precise float r = float(sbyte(byte8(qw, i))) * d;
		v[i] = r;
	}
}

#elif defined(TYPE_Q8_1)
#define BLCK 32u
#define BSIZE 36u
void dec8(uint b, uint u, out float v[8])
{
	float d = h2f(WH(b));
	uint q0 = b + 4u + 8u * u;
	uvec2 qw = rd8(q0);
	[[unroll]] for (uint i = 0u; i < 8u; i++) {
		precise float r = float(sbyte(byte8(qw, i))) * d;
		v[i] = r;
	}
}

#elif defined(TYPE_IQ4_NL) || defined(TYPE_IQ4_XS)
const float kv_iq4nl[16] = float[](-127.0, -104.0, -83.0, -65.0, -49.0, -35.0, -22.0, -10.0, 1.0, 13.0, 25.0,
				   38.0, 53.0, 69.0, 89.0, 113.0);
#if defined(TYPE_IQ4_NL)
#define BLCK 32u
#define BSIZE 18u
void dec8(uint b, uint u, out float v[8])
{
	float d = h2f(WH(b));
	uint q0 = b + 2u + 8u * (u & 1u), sh = u >> 1 << 2;
	uvec2 qw = rd8(q0);
	[[unroll]] for (uint i = 0u; i < 8u; i++) {
		precise float r = d * kv_iq4nl[(byte8(qw, i) >> sh) & 15u];
		v[i] = r;
	}
}
#else
#define BLCK 256u
#define BSIZE 136u
void dec8(uint b, uint u, out float v[8])
{
	uint ib = u >> 2, w = u & 3u;
	float d = h2f(WH(b));
	uint ls = ((WB(b + 4u + (ib >> 1)) >> (4u * (ib & 1u))) & 15u) | (((WH(b + 2u) >> (2u * ib)) & 3u) << 4);
	precise float dl = d * float(int(ls) - 32);
	uint q0 = b + 8u + 16u * ib + 8u * (w & 1u), sh = w >> 1 << 2;
	uvec2 qw = rd8(q0);
	[[unroll]] for (uint i = 0u; i < 8u; i++) {
		precise float r = dl * kv_iq4nl[(byte8(qw, i) >> sh) & 15u];
		v[i] = r;
	}
}
#endif

#elif defined(TYPE_MXFP4)
#define BLCK 32u
#define BSIZE 17u
const float kv_mxfp4[16] = float[](0.0, 1.0, 2.0, 3.0, 4.0, 6.0, 8.0, 12.0, 0.0, -1.0, -2.0, -3.0, -4.0, -6.0,
				   -8.0, -12.0);
void dec8(uint b, uint u, out float v[8])
{
	/* the E8M0 scale halved (the table is stored doubled) */
	uint e = WB(b);
	float d = uintBitsToFloat(e < 2u ? 0x00200000u << e : (e - 1u) << 23);
	uint q0 = b + 1u + 8u * (u & 1u), sh = u >> 1 << 2;
	uvec2 qw = rd8(q0);
	[[unroll]] for (uint i = 0u; i < 8u; i++) {
		precise float r = kv_mxfp4[(byte8(qw, i) >> sh) & 15u] * d;
		v[i] = r;
	}
}

#elif defined(TYPE_Q2_K)
#define BLCK 256u
#define BSIZE 84u
void dec8(uint b, uint u, out float v[8])
{
	/* element e = 8u: half n = e / 128, shift j, 16-group h, element l of it */
	uint n = u >> 4, j = (u >> 2) & 3u, h = (u >> 1) & 1u, l0 = 8u * (u & 1u);
	uint sc = WB(b + 8u * n + 2u * j + h);
	float d = h2f(WH(b + 80u)), dmin = h2f(WH(b + 82u));
	precise float dl = d * float(sc & 15u), ml = dmin * float(sc >> 4);
	uint q0 = b + 16u + 32u * n + 16u * h + l0;
	uvec2 qw = rd8(q0);
	[[unroll]] for (uint i = 0u; i < 8u; i++) {
		precise float r = dl * float((byte8(qw, i) >> (2u * j)) & 3u) - ml;
		v[i] = r;
	}
}

#elif defined(TYPE_Q3_K)
#define BLCK 256u
#define BSIZE 110u
void dec8(uint b, uint u, out float v[8])
{
	uint n = u >> 4, j = (u >> 2) & 3u, h = (u >> 1) & 1u, l0 = 8u * (u & 3u);
	uint is = 8u * n + 2u * j + h;
	uint lo = is < 8u ? WB(b + 96u + is) & 15u : WB(b + 96u + is - 8u) >> 4;
	uint hi = (WB(b + 104u + (is & 3u)) >> (2u * (is >> 2))) & 3u;
	float d = h2f(WH(b + 108u));
	precise float dl = d * float(int(lo | (hi << 4)) - 32);
	uint m = 1u << (4u * n + j);
	uvec2 qw = rd8(b + 32u + 32u * n + l0);
	uvec2 hw = rd8(b + l0);
	[[unroll]] for (uint i = 0u; i < 8u; i++) {
		uint l = l0 + i;
		int q = int((byte8(qw, i) >> (2u * j)) & 3u) - ((byte8(hw, i) & m) != 0u ? 0 : 4);
		precise float r = dl * float(q);
		v[i] = r;
	}
}

#elif defined(TYPE_Q4_K) || defined(TYPE_Q5_K)
/* scale and min j (0..7) of the 12 packed bytes at s */
void k4_scale_min(uint s, uint j, out uint sc, out uint m)
{
	if (j < 4u) {
		sc = WB(s + j) & 63u;
		m = WB(s + j + 4u) & 63u;
	} else {
		sc = (WB(s + j + 4u) & 15u) | ((WB(s + j - 4u) >> 6) << 4);
		m = (WB(s + j + 4u) >> 4) | ((WB(s + j) >> 6) << 4);
	}
}
#if defined(TYPE_Q4_K)
#define BLCK 256u
#define BSIZE 144u
#else
#define BLCK 256u
#define BSIZE 176u
#endif
void dec8(uint b, uint u, out float v[8])
{
	uint is = u >> 2, l0 = 8u * (u & 3u), sc, m;
	k4_scale_min(b + 4u, is, sc, m);
	float d = h2f(WH(b)), dmin = h2f(WH(b + 2u));
	precise float d1 = d * float(sc), m1 = dmin * float(m);
	uint sh = 4u * (is & 1u);
#if defined(TYPE_Q4_K)
	uint q0 = b + 16u + 32u * (is >> 1) + l0;
	uvec2 qw = rd8(q0);
	[[unroll]] for (uint i = 0u; i < 8u; i++) {
		precise float r = d1 * float((byte8(qw, i) >> sh) & 15u) - m1;
		v[i] = r;
	}
#else
	uint q0 = b + 48u + 32u * (is >> 1) + l0;
	uvec2 qw = rd8(q0);
	uvec2 hw = rd8(b + 16u + l0);
	[[unroll]] for (uint i = 0u; i < 8u; i++) {
		uint q = ((byte8(qw, i) >> sh) & 15u) | (((byte8(hw, i) >> is) & 1u) << 4);
		precise float r = d1 * float(q) - m1;
		v[i] = r;
	}
#endif
}

#elif defined(TYPE_Q6_K)
#define BLCK 256u
#define BSIZE 210u
void dec8(uint b, uint u, out float v[8])
{
	/* half n, quarter k of its 128, element l of the quarter's 32 */
	uint n = u >> 4, k = (u >> 2) & 3u, l0 = 8u * (u & 3u);
	float d = h2f(WH(b + 208u));
	precise float ds = d * float(sbyte(WB(b + 192u + 8u * n + (l0 >> 4) + 2u * k)));
	uint ql = b + 64u * n + 32u * (k & 1u) + l0, qh = b + 128u + 32u * n + l0, sh = 4u * (k >> 1);
	uvec2 lw = rd8(ql);
	uvec2 hw = rd8(qh);
	[[unroll]] for (uint i = 0u; i < 8u; i++) {
		uint q = ((byte8(lw, i) >> sh) & 15u) | (((byte8(hw, i) >> (2u * k)) & 3u) << 4);
		precise float r = ds * float(int(q) - 32);
		v[i] = r;
	}
}

#elif defined(TYPE_Q8_K)
#define BLCK 256u
#define BSIZE 292u
void dec8(uint b, uint u, out float v[8])
{
	float d = WF(b);
	uvec2 qw = rd8(b + 4u + 8u * u);
	[[unroll]] for (uint i = 0u; i < 8u; i++) {
		precise float r = d * float(sbyte(byte8(qw, i)));
		v[i] = r;
	}
}

#elif defined(TYPE_TQ1_0)
#define BLCK 256u
#define BSIZE 54u
void dec8(uint b, uint u, out float v[8])
{
	/* 160 elements from 32 bytes (5 trits each), 80 from 16, 16 from 4 */
	float d = h2f(WH(b + 52u));
	[[unroll]] for (uint i = 0u; i < 8u; i++) {
		uint e = 8u * u + i, byte, n;
		if (e < 160u) {
			n = e >> 5;
			byte = e & 31u;
		} else if (e < 240u) {
			n = (e - 160u) >> 4;
			byte = 32u + ((e - 160u) & 15u);
		} else {
			n = (e - 240u) >> 2;
			byte = 48u + ((e - 240u) & 3u);
		}
		uint pow3 = n == 0u ? 1u : n == 1u ? 3u : n == 2u ? 9u : n == 3u ? 27u : 81u;
		uint q = (WB(b + byte) * pow3) & 255u;
		precise float r = float(int((q * 3u) >> 8) - 1) * d;
		v[i] = r;
	}
}

#elif defined(TYPE_TQ2_0)
#define BLCK 256u
#define BSIZE 66u
void dec8(uint b, uint u, out float v[8])
{
	uint j = u >> 4, l = (u >> 2) & 3u, m0 = 8u * (u & 3u);
	float d = h2f(WH(b + 64u));
	uvec2 qw = rd8(b + 32u * j + m0);
	[[unroll]] for (uint i = 0u; i < 8u; i++) {
		precise float r = float(int((byte8(qw, i) >> (2u * l)) & 3u) - 1) * d;
		v[i] = r;
	}
}

#else /* the grid types */
/* The grids of quant/iq_grids.c, uploaded once per device (vk_products.c
 * grid_words: this order, 64-bit entries as low and high words). A storage
 * buffer rather than GLSL constants: lavapipe takes tens of seconds to
 * build a shader whose large constant array is indexed at run time. */
layout(binding = 7) readonly buffer Grids { uint grids[]; };
#define G_IQ2XXS 0u
#define G_IQ2XS 512u
#define G_IQ2S 1536u
#define G_IQ3XXS 3584u
#define G_IQ3S 3840u
#define G_IQ1S 4352u
#define G_KSIGNS 8448u
#define BLCK 256u
float sgn(uint s, uint j) { return ((s >> j) & 1u) != 0u ? -1.0 : 1.0; }
uint gbyte2(const uint lo, const uint hi, uint j) { return ((j < 4u ? lo : hi) >> (8u * (j & 3u))) & 255u; }

#if defined(TYPE_IQ2_XXS)
#define BSIZE 66u
void dec8(uint b, uint u, out float v[8])
{
	uint ib = u >> 2, l = u & 3u, g = b + 2u + 8u * ib;
	uint aux = rd32(g + 4u);
	float d = h2f(WH(b));
	precise float db = d * (0.5 + float(aux >> 28)) * 0.25;
	uint gi = WB(g + l), s = grids[G_KSIGNS + ((aux >> (7u * l)) & 127u)];
	uint lo = grids[G_IQ2XXS + 2u * gi], hi = grids[G_IQ2XXS + 2u * gi + 1u];
	[[unroll]] for (uint j = 0u; j < 8u; j++) {
		precise float r = db * float(gbyte2(lo, hi, j)) * sgn(s, j);
		v[j] = r;
	}
}

#elif defined(TYPE_IQ2_XS)
#define BSIZE 74u
void dec8(uint b, uint u, out float v[8])
{
	uint ib = u >> 2, l = u & 3u;
	float d = h2f(WH(b));
	uint sc = (WB(b + 66u + ib) >> (4u * (l >> 1))) & 15u;
	precise float db = d * (0.5 + float(sc)) * 0.25;
	uint q = WH(b + 2u + 2u * (4u * ib + l));
	uint gi = q & 511u, s = grids[G_KSIGNS + (q >> 9)];
	uint lo = grids[G_IQ2XS + 2u * gi], hi = grids[G_IQ2XS + 2u * gi + 1u];
	[[unroll]] for (uint j = 0u; j < 8u; j++) {
		precise float r = db * float(gbyte2(lo, hi, j)) * sgn(s, j);
		v[j] = r;
	}
}

#elif defined(TYPE_IQ2_S)
#define BSIZE 82u
void dec8(uint b, uint u, out float v[8])
{
	uint ib = u >> 2, l = u & 3u;
	float d = h2f(WH(b));
	uint sc = (WB(b + 74u + ib) >> (4u * (l >> 1))) & 15u;
	precise float db = d * (0.5 + float(sc)) * 0.25;
	uint gi = WB(b + 2u + 4u * ib + l) | ((WB(b + 66u + ib) << (8u - 2u * l)) & 0x300u);
	uint s = WB(b + 34u + 4u * ib + l);
	uint lo = grids[G_IQ2S + 2u * gi], hi = grids[G_IQ2S + 2u * gi + 1u];
	[[unroll]] for (uint j = 0u; j < 8u; j++) {
		precise float r = db * float(gbyte2(lo, hi, j)) * sgn(s, j);
		v[j] = r;
	}
}

#elif defined(TYPE_IQ3_XXS)
#define BSIZE 98u
void dec8(uint b, uint u, out float v[8])
{
	uint ib = u >> 2, l = u & 3u;
	uint aux = rd32(b + 66u + 4u * ib);
	float d = h2f(WH(b));
	precise float db = d * (0.5 + float(aux >> 28)) * 0.5;
	uint s = grids[G_KSIGNS + ((aux >> (7u * l)) & 127u)];
	uint g1 = grids[G_IQ3XXS + WB(b + 2u + 8u * ib + 2u * l)], g2 = grids[G_IQ3XXS + WB(b + 3u + 8u * ib + 2u * l)];
	[[unroll]] for (uint j = 0u; j < 8u; j++) {
		precise float r = db * float(((j < 4u ? g1 : g2) >> (8u * (j & 3u))) & 255u) * sgn(s, j);
		v[j] = r;
	}
}

#elif defined(TYPE_IQ3_S)
#define BSIZE 110u
void dec8(uint b, uint u, out float v[8])
{
	uint ib = u >> 2, l = u & 3u;
	float d = h2f(WH(b));
	precise float db = d * float(1u + 2u * ((WB(b + 106u + (ib >> 1)) >> (4u * (ib & 1u))) & 15u));
	uint qh = WB(b + 66u + ib);
	uint g1 = grids[G_IQ3S + (WB(b + 2u + 8u * ib + 2u * l) | ((qh << (8u - 2u * l)) & 256u))];
	uint g2 = grids[G_IQ3S + (WB(b + 3u + 8u * ib + 2u * l) | ((qh << (7u - 2u * l)) & 256u))];
	uint s = WB(b + 74u + 4u * ib + l);
	[[unroll]] for (uint j = 0u; j < 8u; j++) {
		precise float r = db * float(((j < 4u ? g1 : g2) >> (8u * (j & 3u))) & 255u) * sgn(s, j);
		v[j] = r;
	}
}

#elif defined(TYPE_IQ1_S)
#define BSIZE 50u
void dec8(uint b, uint u, out float v[8])
{
	uint ib = u >> 2, l = u & 3u;
	uint qh = WH(b + 34u + 2u * ib);
	float d = h2f(WH(b));
	precise float dl = d * float(2u * ((qh >> 12) & 7u) + 1u);
	float delta = (qh & 0x8000u) != 0u ? -0.125 : 0.125;
	uint gi = WB(b + 2u + 4u * ib + l) | (((qh >> (3u * l)) & 7u) << 8);
	uint lo = grids[G_IQ1S + 2u * gi], hi = grids[G_IQ1S + 2u * gi + 1u];
	[[unroll]] for (uint j = 0u; j < 8u; j++) {
		precise float r = dl * (float(sbyte(gbyte2(lo, hi, j))) + delta);
		v[j] = r;
	}
}

#elif defined(TYPE_IQ1_M)
#define BSIZE 56u
void dec8(uint b, uint u, out float v[8])
{
	uint ib = u >> 2, l = u & 3u;
	uint s0 = WH(b + 48u), s1 = WH(b + 50u), s2 = WH(b + 52u), s3 = WH(b + 54u);
	uint dh = (s0 >> 12) | ((s1 >> 8) & 0xF0u) | ((s2 >> 4) & 0xF00u) | (s3 & 0xF000u);
	float d = h2f(dh);
	uint scw = WH(b + 48u + 2u * (ib >> 1)), sh = 6u * (ib & 1u) + 3u * (l >> 1);
	precise float dl = d * float(2u * ((scw >> sh) & 7u) + 1u);
	uint h = WB(b + 32u + 2u * ib + (l >> 1));
	uint nib = (l & 1u) != 0u ? h >> 4 : h & 15u;
	float delta = (nib & 8u) != 0u ? -0.125 : 0.125;
	uint gi = WB(b + 4u * ib + l) | ((nib & 7u) << 8);
	uint lo = grids[G_IQ1S + 2u * gi], hi = grids[G_IQ1S + 2u * gi + 1u];
	[[unroll]] for (uint j = 0u; j < 8u; j++) {
		precise float r = dl * (float(sbyte(gbyte2(lo, hi, j))) + delta);
		v[j] = r;
	}
}
#else
#error "dequant.glsl: no TYPE_ defined"
#endif
#endif /* grid types */

void decu(uint row, uint e, out float v[UNIT]) { dec8(row + e / BLCK * BSIZE, e % BLCK / 8u, v); }
#endif
