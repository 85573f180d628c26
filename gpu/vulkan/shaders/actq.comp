#version 450
/* actq.comp - the activations of a quantized product as the reference
 * backend sees them: each row of x quantized to the weight type's
 * activation type (Q8_0, Q8_1, Q8_K: quant/quantize.c, the same scale,
 * the same rounding) and decoded back to f32 (xq = d q). The products then
 * sum w x in f32 and differ from the reference's double sums of the same
 * terms by rounding alone (tests/test_backend_ops.c keeps its thresholds).
 * For Q8_1 the block sums s = fp16(d sum q), which the reference's Q4_1 /
 * Q5_1 dot multiplies by the weight's minimum, follow the row's cols
 * values. One invocation per block. */
#include "common.glsl"

layout(binding = 0) readonly buffer X { float x[]; };
layout(binding = 1) writeonly buffer Q { float q[]; };

layout(push_constant) uniform PC {
	uint cols, nrows, ox, oq;
	uint xstride, qstride; /* floats from a row to the next */
	uint kind;             /* 0 Q8_0, 1 Q8_1, 2 Q8_K */
} pc;

/* a / b correctly rounded: GLSL's division may be off by 2.5 ulp, and the
 * scale must be the reference's to the bit. Of the quotient and its
 * neighbours up to 2 ulp away, the nearest to a / b is the one whose exact
 * residual a - c b (one fma) is smallest; a tie goes to the even one. */
float div_rn(float a, float b)
{
	float q = a / b, best = q, rb = abs(fma(-q, b, a));
	for (int k = -2; k <= 2; k++) {
		float c = uintBitsToFloat(uint(int(floatBitsToUint(q)) + k));
		float rc = abs(fma(-c, b, a));
		if (rc < rb || (rc == rb && (floatBitsToUint(c) & 1u) == 0u)) {
			best = c;
			rb = rc;
		}
	}
	return best;
}

/* f32 to fp16 bits, round to nearest even (quant_f32_to_fp16) */
uint f2h(float f)
{
	uint u = floatBitsToUint(f), sign = (u >> 16) & 0x8000u, a = u & 0x7FFFFFFFu;
	if (a >= 0x7F800000u)
		return sign | (a > 0x7F800000u ? 0x7E00u : 0x7C00u);
	if (a >= 0x47800000u)
		return sign | 0x7C00u;
	if (a < 0x38800000u) /* a subnormal half: a multiple of 2^-24, exactly scaled */
		return sign | uint(roundEven(uintBitsToFloat(a) * 16777216.0));
	uint h = (((a >> 23) - 112u) << 10) | ((a >> 13) & 0x3FFu), rem = a & 0x1FFFu;
	if (rem > 0x1000u || (rem == 0x1000u && (h & 1u) != 0u))
		h++;
	return sign | h;
}

/* roundf: halves away from zero (v - trunc(v) is exact) */
float round_away(float v)
{
	float t = trunc(v);
	return abs(v - t) >= 0.5 ? t + sign(v) : t;
}

void main()
{
	uint bl = pc.kind == 2u ? 256u : 32u, nblk = pc.cols / bl;
	uint id = flat_id();
	if (id >= nblk * pc.nrows)
		return;
	uint row = id / nblk, blk = id % nblk;
	uint xi = pc.ox + row * pc.xstride + blk * bl, qi = pc.oq + row * pc.qstride + blk * bl;
	/* the value of largest magnitude, the first one on ties */
	float amax = 0.0, mx = 0.0;
	for (uint i = 0u; i < bl; i++) {
		float v = x[xi + i];
		if (abs(v) > amax) {
			amax = abs(v);
			mx = v;
		}
	}
	if (pc.kind == 2u) {
		if (amax == 0.0) {
			for (uint i = 0u; i < bl; i++)
				q[qi + i] = 0.0;
			return;
		}
		float iscale = div_rn(-127.0, mx), d = div_rn(1.0, iscale);
		for (uint i = 0u; i < bl; i++) {
			float v = min(roundEven(iscale * x[xi + i]), 127.0);
			q[qi + i] = d * v;
		}
		return;
	}
	float d = div_rn(amax, 127.0), id_ = d != 0.0 ? div_rn(1.0, d) : 0.0;
	float dh = unpackHalf2x16(f2h(d)).x;
	int sum = 0;
	for (uint i = 0u; i < bl; i++) {
		float v = round_away(x[xi + i] * id_);
		int c = abs(v) < 2147483520.0 ? int(v) : 0;
		sum += c;
		q[qi + i] = float(c) * dh;
	}
	if (pc.kind == 1u)
		q[pc.oq + row * pc.qstride + pc.cols + blk] = unpackHalf2x16(f2h(float(sum) * d)).x;
}
