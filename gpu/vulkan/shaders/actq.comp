#version 450
/* actq.comp - the activations of a quantized product as the reference
 * backend sees them: each row of x quantized to the weight type's
 * activation type (Q8_0, Q8_1, Q8_K: quant/quantize.c, the same scale,
 * the same rounding) and decoded back to f32 (xq = d q). The products then
 * sum w x in f32 and differ from the reference's double sums of the same
 * terms by rounding alone (tests/test_backend_ops.c keeps its thresholds).
 * For Q8_1 the block sums s = fp16(d sum q), which the reference's Q4_1 /
 * Q5_1 dot multiplies by the weight's minimum, follow the row's cols
 * values.
 *
 * The int form (pc.form 1: the mat-vec's integer dot product, the
 * devices that accelerate it, vk_products.c) keeps the levels instead,
 * per row in 32-bit words: the int8 levels 4 to a word (element 4 i + j in
 * byte j of word i), from word cols / 4 the block scales d as f32 (the
 * fp16 value for Q8_0 / Q8_1), and for Q8_1 from word cols / 4 + cols / 32
 * the block sums s (f32 of the fp16 value). One invocation per element, a workgroup of 256 over whole
 * blocks (cols is a multiple of the block, 32 or 256, so a block never
 * straddles rows): each block's largest magnitude and sum come from
 * shared-memory trees, whose max and integer sums are exact, so the
 * result is the serial loop's. */
#include "common.glsl"

layout(binding = 0) readonly buffer X { float x[]; };
layout(binding = 1) writeonly buffer Q { float q[]; };
layout(binding = 1) writeonly buffer Q8 { int8_t q8[]; }; /* the int form's levels */

layout(push_constant) uniform PC {
	uint cols, nrows, ox, oq;
	uint xstride, qstride; /* floats from a row to the next */
	uint kind;             /* 0 Q8_0, 1 Q8_1, 2 Q8_K */
	uint form;             /* 0 decoded f32, 1 levels and scales (the int form) */
} pc;

/* a - c b up to one last rounding, from Dekker's exact product: Vulkan's
 * fma() may be a multiply and an add, so the halves of each factor
 * (Veltkamp's split, 12 bits above) are multiplied exactly instead;
 * `precise` keeps the driver from fusing or reassociating any of it. */
void split(float a, out float hi, out float lo)
{
	precise float t = 4097.0 * a;
	precise float h = t - (t - a);
	precise float l = a - h;
	hi = h;
	lo = l;
}

float resid(float a, float c, float b)
{
	float ch, cl, bh, bl;
	split(c, ch, cl);
	split(b, bh, bl);
	precise float p = c * b;
	precise float e = ((ch * bh - p) + ch * bl + cl * bh) + cl * bl;
	precise float r = (a - p) - e;
	return r;
}

/* a / b correctly rounded: GLSL's division may be off by 2.5 ulp, and the
 * scale must be the reference's to the bit. Of the quotient and its
 * neighbours up to 2 ulp away, the nearest to a / b is the one whose
 * residual a - c b is smallest; a tie goes to the even one. */
float div_rn(float a, float b)
{
	float q = a / b, best = q, rb = abs(resid(a, q, b));
	for (int k = -2; k <= 2; k++) {
		float c = uintBitsToFloat(uint(int(floatBitsToUint(q)) + k));
		float rc = abs(resid(a, c, b));
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

/* element col of row's level c of a block of scale d, in either form */
void put(uint row, uint col, uint bl, int c, float d)
{
	uint r = pc.oq + row * pc.qstride;
	if (pc.form == 0u) {
		q[r + col] = float(c) * d;
		return;
	}
	q8[4u * r + col] = int8_t(c);
	if (col % bl == 0u)
		q[r + pc.cols / 4u + col / bl] = d;
}

shared float red_v[256]; /* the value of largest magnitude so far (with its sign) */
shared uint red_i[256];  /* its column, for the reference's tie rule: the first wins */
shared int red_s[256];   /* Q8_1: the sum of the levels */

void main()
{
	uint bl = pc.kind == 2u ? 256u : 32u, l = gl_LocalInvocationID.x;
	uint g = (gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x) * 256u + l;
	bool live = g < pc.cols * pc.nrows;
	uint row = live ? g / pc.cols : 0u, col = live ? g % pc.cols : 0u;
	float xv = live ? x[pc.ox + row * pc.xstride + col] : 0.0;
	red_v[l] = xv;
	red_i[l] = col;
	barrier();
	/* the trees stay within a block: partners are s apart, s < bl */
	for (uint s = bl / 2u; s > 0u; s >>= 1) {
		if (l % bl < s) {
			float a = red_v[l], b = red_v[l + s];
			if (abs(b) > abs(a) || (abs(b) == abs(a) && red_i[l + s] < red_i[l])) {
				red_v[l] = b;
				red_i[l] = red_i[l + s];
			}
		}
		barrier();
	}
	float mx = red_v[l - l % bl], amax = abs(mx);
	if (pc.kind == 2u) {
		if (!live)
			return;
		if (amax == 0.0) {
			put(row, col, bl, 0, 0.0);
			return;
		}
		float iscale = div_rn(-127.0, mx), d = div_rn(1.0, iscale);
		precise float p = iscale * xv;
		put(row, col, bl, int(min(roundEven(p), 127.0)), d);
		return;
	}
	float d = div_rn(amax, 127.0), id_ = d != 0.0 ? div_rn(1.0, d) : 0.0;
	/* the product rounded before the rounding to a level looks at it: a
	 * driver that fused it into round_away's subtraction would round a
	 * product just below a half (that f32 rounds to the half) down */
	precise float p = xv * id_;
	float v = round_away(p);
	int c = abs(v) < 2147483520.0 ? int(v) : 0;
	if (live)
		put(row, col, bl, c, unpackHalf2x16(f2h(d)).x);
	if (pc.kind != 1u)
		return;
	red_s[l] = live ? c : 0;
	barrier();
	for (uint s = bl / 2u; s > 0u; s >>= 1) {
		if (l % bl < s)
			red_s[l] += red_s[l + s];
		barrier();
	}
	uint so = pc.form == 0u ? pc.cols : pc.cols / 4u + pc.cols / 32u;
	if (live && l % bl == 0u)
		q[pc.oq + row * pc.qstride + so + col / bl] = unpackHalf2x16(f2h(float(red_s[l]) * d)).x;
}
