#version 450
// types: f32 f16 bf16 q4_0 q4_1 q5_0 q5_1 q8_0 q2_k q3_k q4_k q5_k q6_k iq4_nl iq4_xs mxfp4 iq2_xxs iq2_xs iq2_s iq3_xxs iq3_s iq1_s iq1_m tq1_0 tq2_0
/* mul_mat_vec.comp - y = W x for one token, for up to three weights of
 * one type at once (lib/backend.h mat_vec, mat_vec_n): workgroup z picks
 * the weight, x and y the group of NR rows. A workgroup streams its NR
 * rows; each invocation reads its stretch of x once for all NR rows and
 * decodes the weights straight from their GGUF blocks (dequant.glsl); the
 * partial sums meet in wg_sum. x holds the activations as actq.comp left
 * them (for the float types, x itself). */
#include "common.glsl"

#if defined(TYPE_Q4_1) || defined(TYPE_Q5_1)
#define NO_MIN
#endif
#define NR 2u

layout(binding = 0) readonly buffer W0a { uint8_t w0b[]; };
layout(binding = 0) readonly buffer W0b { uint16_t w0h[]; };
layout(binding = 0) readonly buffer W0c { float w0f[]; };
layout(binding = 0) readonly buffer W0d { uint w0w[]; };
layout(binding = 1) readonly buffer W1a { uint8_t w1b[]; };
layout(binding = 1) readonly buffer W1b { uint16_t w1h[]; };
layout(binding = 1) readonly buffer W1c { float w1f[]; };
layout(binding = 1) readonly buffer W1d { uint w1w[]; };
layout(binding = 2) readonly buffer W2a { uint8_t w2b[]; };
layout(binding = 2) readonly buffer W2b { uint16_t w2h[]; };
layout(binding = 2) readonly buffer W2c { float w2f[]; };
layout(binding = 2) readonly buffer W2d { uint w2w[]; };
layout(binding = 3) readonly buffer X { float x[]; };
layout(binding = 4) writeonly buffer Y0 { float y0[]; };
layout(binding = 5) writeonly buffer Y1 { float y1[]; };
layout(binding = 6) writeonly buffer Y2 { float y2[]; };

/* per weight: its rows, the byte offset of row 0 in its binding, the bytes
 * per row and y's offset in floats; sofs: where the Q8_1 block sums of x
 * start (after its cols values) */
layout(push_constant) uniform PC {
	uint cols, ox, sofs;
	uint rows[3], ow[3], nb1[3], oy[3];
} pc;

uint g_w; /* this workgroup's weight: uniform, so the selects below do not diverge */
uint rd_b(uint o) { return g_w == 0u ? uint(w0b[o]) : g_w == 1u ? uint(w1b[o]) : uint(w2b[o]); }
uint rd_h(uint o) { return g_w == 0u ? uint(w0h[o >> 1]) : g_w == 1u ? uint(w1h[o >> 1]) : uint(w2h[o >> 1]); }
uint rd_w(uint o) { return g_w == 0u ? w0w[o >> 2] : g_w == 1u ? w1w[o >> 2] : w2w[o >> 2]; }
float rd_f(uint o) { return g_w == 0u ? w0f[o >> 2] : g_w == 1u ? w1f[o >> 2] : w2f[o >> 2]; }
#define WB(o) rd_b(o)
#define WH(o) rd_h(o)
#define WW(o) rd_w(o)
#define WF(o) rd_f(o)
#include "dequant.glsl"

void main()
{
	g_w = gl_WorkGroupID.z;
	uint rows = pc.rows[g_w], r0 = (gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x) * NR;
	if (r0 >= rows)
		return; /* the whole workgroup */
	uint tid = gl_LocalInvocationID.x, wg = gl_WorkGroupSize.x;
	uint row[NR];
	float acc[NR];
	[[unroll]] for (uint r = 0u; r < NR; r++) {
		row[r] = pc.ow[g_w] + min(r0 + r, rows - 1u) * pc.nb1[g_w];
		acc[r] = 0.0;
	}
	/* two units per pass, both decoded before either is summed: twice the
	 * loads in flight per invocation (a mat-vec waits on memory) */
	for (uint e0 = tid * UNIT; e0 < pc.cols; e0 += 2u * wg * UNIT) {
		float xv[2][UNIT], v[2][NR][UNIT];
		bool two = e0 + wg * UNIT < pc.cols;
		[[unroll]] for (uint h = 0u; h < 2u; h++) {
			uint e = h == 0u || !two ? e0 : e0 + wg * UNIT;
			[[unroll]] for (uint J = 0u; J < UNIT; J++)
				xv[h][J] = x[pc.ox + e + J];
			[[unroll]] for (uint r = 0u; r < NR; r++)
				decu(row[r], e, v[h][r]);
		}
		[[unroll]] for (uint h = 0u; h < 2u; h++) {
			if (h == 1u && !two)
				break;
			[[unroll]] for (uint r = 0u; r < NR; r++)
				[[unroll]] for (uint J = 0u; J < UNIT; J++)
					acc[r] += v[h][r][J] * xv[h][J];
		}
#ifdef NO_MIN
		[[unroll]] for (uint h = 0u; h < 2u; h++) {
			uint e = e0 + h * wg * UNIT;
			if ((h == 0u || two) && e % BLCK == 0u) {
				float s = x[pc.ox + pc.sofs + e / BLCK];
				[[unroll]] for (uint r = 0u; r < NR; r++)
					acc[r] += block_min(row[r] + e / BLCK * BSIZE) * s;
			}
		}
#endif
	}
	[[unroll]] for (uint r = 0u; r < NR; r++) {
		float t = wg_sum(acc[r]);
		if (tid == 0u && r0 + r < rows) {
			uint o = pc.oy[g_w] + r0 + r;
			if (g_w == 0u)
				y0[o] = t;
			else if (g_w == 1u)
				y1[o] = t;
			else
				y2[o] = t;
		}
	}
}
