/* dot_int.glsl - the integer dot products of the one-token mat-vec
 * (-DINT_DOT: the devices that accelerate VK_KHR_shader_integer_dot_product,
 * vk_products.c): for the type named by TYPE_<NAME>, dot32(row, e, xo) is
 * the product of the 32 elements e .. e + 31 (e a multiple of 32) of the
 * row whose first byte is at byte offset row with the activations in
 * actq.comp's int form at word xo. The weight's integer levels are packed
 * 4 to a word as int8 and summed against the activations' levels with
 * OpSDot, exactly; the sums are then scaled in float as quant/'s SIMD dots
 * scale them: the weight's and the activations' block scales, the K-quant
 * sub-block scales and mins multiplied in as integers first.
 *
 * The includer has included dequant.glsl (rd8, h2f and the types'
 * tables) and defines XW(i) (the activations' word i) and XF(i) (the
 * same word as f32), and pc.cols. */
#extension GL_EXT_spirv_intrinsics : require

/* OpSDot (SPV_KHR_integer_dot_product), the last operand 0: both words
 * are 4 packed int8 (PackedVectorFormat4x8Bit). glslang 11 has no
 * GL_EXT_integer_dot_product, hence the intrinsic; capabilities
 * DotProduct (6019) and DotProductInput4x8BitPacked (6018). */
spirv_instruction(extensions = ["SPV_KHR_integer_dot_product"], capabilities = [6019, 6018], id = 4450)
int sdot4x8(uint a, uint b, spirv_literal int fmt);

/* four int8 levels of 0 .. 15 (0 .. 31, 0 .. 63, 0 .. 7) less 8 (16,
 * 32, 4), bytewise: the add never carries out of a byte, the xor flips
 * each byte's top bit */
uint less8(uint q) { return (q + 0x78787878u) ^ 0x80808080u; }
uint less16(uint q) { return (q + 0x70707070u) ^ 0x80808080u; }
uint less32(uint q) { return (q + 0x60606060u) ^ 0x80808080u; }
uint less4(uint q) { return (q + 0x7C7C7C7Cu) ^ 0x80808080u; }

/* bits 0..3 of h to bit 0 of bytes 0..3 */
uint spread4(uint h) { return (h & 1u) | ((h & 2u) << 7) | ((h & 4u) << 14) | ((h & 8u) << 21); }

/* 16 and 32 bytes at o as words */
void rd16b(uint o, out uint w[4])
{
	uvec2 a = rd8(o), b = rd8(o + 8u);
	w[0] = a.x;
	w[1] = a.y;
	w[2] = b.x;
	w[3] = b.y;
}
void rd32b(uint o, out uint w[8])
{
	uint a[4], b[4];
	rd16b(o, a);
	rd16b(o + 16u, b);
	[[unroll]] for (uint i = 0u; i < 4u; i++) {
		w[i] = a[i];
		w[4u + i] = b[i];
	}
}

/* the activations' 8 words of levels for elements e .. e + 31 */
void xq8(uint xo, uint e, out uint x[8])
{
	[[unroll]] for (uint i = 0u; i < 8u; i++)
		x[i] = XW(xo + e / 4u + i);
}

/* sum of words i0 .. i0 + 3 of w and x as levels */
int sdot16(const uint w[8], const uint x[8], uint i0)
{
	return sdot4x8(w[i0], x[i0], 0) + sdot4x8(w[i0 + 1u], x[i0 + 1u], 0) + sdot4x8(w[i0 + 2u], x[i0 + 2u], 0) +
	       sdot4x8(w[i0 + 3u], x[i0 + 3u], 0);
}
int sdot32(const uint w[8], const uint x[8]) { return sdot16(w, x, 0u) + sdot16(w, x, 4u); }
/* the sum of x's levels in words i0 .. i0 + 3 (the K-quants' mins) */
int xsum16(const uint x[8], uint i0)
{
	return sdot4x8(0x01010101u, x[i0], 0) + sdot4x8(0x01010101u, x[i0 + 1u], 0) +
	       sdot4x8(0x01010101u, x[i0 + 2u], 0) + sdot4x8(0x01010101u, x[i0 + 3u], 0);
}

#if defined(TYPE_Q2_K) || defined(TYPE_Q3_K) || defined(TYPE_Q4_K) || defined(TYPE_Q5_K) || defined(TYPE_Q6_K) || \
	defined(TYPE_IQ4_XS)
/* the activations' Q8_K scale */
float xscale(uint xo, uint e) { return XF(xo + pc.cols / 4u + e / 256u); }
#else
/* the activations' Q8_0 / Q8_1 block scale and (Q8_1) block sum */
float xscale(uint xo, uint e) { return XF(xo + pc.cols / 4u + e / 32u); }
float xbsum(uint xo, uint e) { return XF(xo + pc.cols / 4u + pc.cols / 32u + e / 32u); }
#endif

/* 16 bytes of nibbles as the 32 levels: the low nibbles are elements 0..15 */
void nibbles(const uint q[4], out uint w[8])
{
	[[unroll]] for (uint i = 0u; i < 4u; i++) {
		w[i] = q[i] & 0x0F0F0F0Fu;
		w[4u + i] = (q[i] >> 4) & 0x0F0F0F0Fu;
	}
}

/* four nibbles through a table of int8 values, packed */
uint lut4(uint q, const int kv[16])
{
	return (uint(kv[q & 15u]) & 255u) | ((uint(kv[(q >> 8) & 15u]) & 255u) << 8) |
	       ((uint(kv[(q >> 16) & 15u]) & 255u) << 16) | ((uint(kv[(q >> 24) & 15u]) & 255u) << 24);
}

#if defined(TYPE_Q8_0)
float dot32(uint row, uint e, uint xo)
{
	uint b = row + e / BLCK * BSIZE, w[8], x[8];
	rd32b(b + 2u, w);
	xq8(xo, e, x);
	return h2f(WH(b)) * xscale(xo, e) * float(sdot32(w, x));
}

#elif defined(TYPE_Q4_0) || defined(TYPE_Q4_1)
float dot32(uint row, uint e, uint xo)
{
	uint b = row + e / BLCK * BSIZE, q[4], w[8], x[8];
#if defined(TYPE_Q4_0)
	rd16b(b + 2u, q);
	nibbles(q, w);
	[[unroll]] for (uint i = 0u; i < 8u; i++)
		w[i] = less8(w[i]);
#else
	rd16b(b + 4u, q);
	nibbles(q, w);
#endif
	xq8(xo, e, x);
	float t = h2f(WH(b)) * xscale(xo, e) * float(sdot32(w, x));
#if defined(TYPE_Q4_1)
	t += h2f(WH(b + 2u)) * xbsum(xo, e); /* the minimum times the fp16 block sum */
#endif
	return t;
}

#elif defined(TYPE_Q5_0) || defined(TYPE_Q5_1)
float dot32(uint row, uint e, uint xo)
{
	uint b = row + e / BLCK * BSIZE, q[4], w[8], x[8];
#if defined(TYPE_Q5_0)
	uint qh = rd32(b + 2u);
	rd16b(b + 6u, q);
#else
	uint qh = rd32(b + 4u);
	rd16b(b + 8u, q);
#endif
	nibbles(q, w);
	[[unroll]] for (uint i = 0u; i < 8u; i++) {
		w[i] |= spread4(qh >> (4u * i)) << 4;
#if defined(TYPE_Q5_0)
		w[i] = less16(w[i]);
#endif
	}
	xq8(xo, e, x);
	float t = h2f(WH(b)) * xscale(xo, e) * float(sdot32(w, x));
#if defined(TYPE_Q5_1)
	t += h2f(WH(b + 2u)) * xbsum(xo, e);
#endif
	return t;
}

#elif defined(TYPE_IQ4_NL)
const int kv_iq4nl_i[16] = int[](-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113);
float dot32(uint row, uint e, uint xo)
{
	uint b = row + e / BLCK * BSIZE, q[4], w[8], x[8];
	rd16b(b + 2u, q);
	[[unroll]] for (uint i = 0u; i < 4u; i++) {
		w[i] = lut4(q[i], kv_iq4nl_i);
		w[4u + i] = lut4(q[i] >> 4, kv_iq4nl_i);
	}
	xq8(xo, e, x);
	return h2f(WH(b)) * xscale(xo, e) * float(sdot32(w, x));
}

#elif defined(TYPE_MXFP4)
/* the values doubled (integers), the scale halved, as dequant.glsl */
const int kv_mxfp4_i[16] = int[](0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12);
float dot32(uint row, uint e, uint xo)
{
	uint b = row + e / BLCK * BSIZE, q[4], w[8], x[8];
	uint ee = WB(b);
	float d = uintBitsToFloat(ee < 2u ? 0x00200000u << ee : (ee - 1u) << 23);
	rd16b(b + 1u, q);
	[[unroll]] for (uint i = 0u; i < 4u; i++) {
		w[i] = lut4(q[i], kv_mxfp4_i);
		w[4u + i] = lut4(q[i] >> 4, kv_mxfp4_i);
	}
	xq8(xo, e, x);
	return d * xscale(xo, e) * float(sdot32(w, x));
}

#elif defined(TYPE_Q4_K) || defined(TYPE_Q5_K)
/* sub-block j (0..7) of 32: its scale and minimum, the sum of its levels
 * times the scale less the activations' sum times the minimum */
float dot32(uint row, uint e, uint xo)
{
	uint b = row + e / BLCK * BSIZE, j = e % BLCK / 32u, sc, m, w[8], x[8];
	k4_scale_min(b + 4u, j, sc, m);
	uint sh = 4u * (j & 1u);
#if defined(TYPE_Q4_K)
	rd32b(b + 16u + 32u * (j >> 1), w);
	[[unroll]] for (uint i = 0u; i < 8u; i++)
		w[i] = (w[i] >> sh) & 0x0F0F0F0Fu;
#else
	uint h[8];
	rd32b(b + 48u + 32u * (j >> 1), w);
	rd32b(b + 16u, h);
	[[unroll]] for (uint i = 0u; i < 8u; i++)
		w[i] = ((w[i] >> sh) & 0x0F0F0F0Fu) | (((h[i] >> j) & 0x01010101u) << 4);
#endif
	xq8(xo, e, x);
	int s = int(sc) * sdot32(w, x), mn = int(m) * (xsum16(x, 0u) + xsum16(x, 4u));
	return xscale(xo, e) * (h2f(WH(b)) * float(s) - h2f(WH(b + 2u)) * float(mn));
}

#elif defined(TYPE_Q6_K)
/* 32 elements of one half n and quarter k: two sub-blocks of 16 */
float dot32(uint row, uint e, uint xo)
{
	uint b = row + e / BLCK * BSIZE, j = e % BLCK / 32u, n = j >> 2, k = j & 3u, w[8], h[8], x[8];
	rd32b(b + 64u * n + 32u * (k & 1u), w);
	rd32b(b + 128u + 32u * n, h);
	uint sh = 4u * (k >> 1);
	[[unroll]] for (uint i = 0u; i < 8u; i++)
		w[i] = less32(((w[i] >> sh) & 0x0F0F0F0Fu) | (((h[i] >> (2u * k)) & 0x03030303u) << 4));
	xq8(xo, e, x);
	int sc0 = sbyte(WB(b + 192u + 8u * n + 2u * k)), sc1 = sbyte(WB(b + 193u + 8u * n + 2u * k));
	return h2f(WH(b + 208u)) * xscale(xo, e) * float(sc0 * sdot16(w, x, 0u) + sc1 * sdot16(w, x, 4u));
}

#elif defined(TYPE_Q2_K)
/* 32 elements of one half n at one shift: two sub-blocks of 16, each a
 * 4-bit scale and a 4-bit minimum */
float dot32(uint row, uint e, uint xo)
{
	uint b = row + e / BLCK * BSIZE, j = e % BLCK / 32u, n = j >> 2, s = j & 3u, w[8], x[8];
	rd32b(b + 16u + 32u * n, w);
	[[unroll]] for (uint i = 0u; i < 8u; i++)
		w[i] = (w[i] >> (2u * s)) & 0x03030303u;
	xq8(xo, e, x);
	uint sc0 = WB(b + 8u * n + 2u * s), sc1 = WB(b + 8u * n + 2u * s + 1u);
	int sm = int(sc0 & 15u) * sdot16(w, x, 0u) + int(sc1 & 15u) * sdot16(w, x, 4u);
	int mn = int(sc0 >> 4) * xsum16(x, 0u) + int(sc1 >> 4) * xsum16(x, 4u);
	return xscale(xo, e) * (h2f(WH(b + 80u)) * float(sm) - h2f(WH(b + 82u)) * float(mn));
}

#elif defined(TYPE_Q3_K)
int q3_scale(uint b, uint is)
{
	uint lo = is < 8u ? WB(b + 96u + is) & 15u : WB(b + 96u + is - 8u) >> 4;
	uint hi = (WB(b + 104u + (is & 3u)) >> (2u * (is >> 2))) & 3u;
	return int(lo | (hi << 4)) - 32;
}
/* 32 elements of one half n at one shift s: two sub-blocks of 16; a level
 * is its 2 low bits, less 4 where the high mask bit is clear */
float dot32(uint row, uint e, uint xo)
{
	uint b = row + e / BLCK * BSIZE, j = e % BLCK / 32u, n = j >> 2, s = j & 3u, w[8], h[8], x[8];
	rd32b(b + 32u + 32u * n, w);
	rd32b(b, h);
	[[unroll]] for (uint i = 0u; i < 8u; i++)
		w[i] = less4(((w[i] >> (2u * s)) & 0x03030303u) | (((h[i] >> (4u * n + s)) & 0x01010101u) << 2));
	xq8(xo, e, x);
	int sm = q3_scale(b, 8u * n + 2u * s) * sdot16(w, x, 0u) + q3_scale(b, 8u * n + 2u * s + 1u) * sdot16(w, x, 4u);
	return h2f(WH(b + 108u)) * xscale(xo, e) * float(sm);
}

#elif defined(TYPE_IQ4_XS)
const int kv_iq4nl_i[16] = int[](-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113);
float dot32(uint row, uint e, uint xo)
{
	uint b = row + e / BLCK * BSIZE, ib = e % BLCK / 32u, q[4], w[8], x[8];
	uint ls = ((WB(b + 4u + (ib >> 1)) >> (4u * (ib & 1u))) & 15u) | (((WH(b + 2u) >> (2u * ib)) & 3u) << 4);
	rd16b(b + 8u + 16u * ib, q);
	[[unroll]] for (uint i = 0u; i < 4u; i++) {
		w[i] = lut4(q[i], kv_iq4nl_i);
		w[4u + i] = lut4(q[i] >> 4, kv_iq4nl_i);
	}
	xq8(xo, e, x);
	return h2f(WH(b)) * xscale(xo, e) * float((int(ls) - 32) * sdot32(w, x));
}

#else
#error "dot_int.glsl: no integer dot for this TYPE_"
#endif
