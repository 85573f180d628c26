#version 450
// types: f32 f16 bf16 q4_0 q4_1 q5_0 q5_1 q8_0 q2_k q3_k q4_k q5_k q6_k iq4_nl iq4_xs mxfp4 iq2_xxs iq2_xs iq2_s iq3_xxs iq3_s iq1_s iq1_m tq1_0 tq2_0
/* mul_mat_vec_id.comp - the experts' products of a mixture of experts
 * (lib/backend.h mat_mul_id), as mat-vecs: workgroup z is a slot (token t,
 * choice i), x and y a group of NR rows of the expert ids[t][i] selects;
 * the loop is mul_mat_vec.comp's. Only the selected experts' weights are
 * read. The stack may be bound in pieces (experts e0..e1-1): a slot whose
 * expert lies in another piece does nothing here; an id outside the stack
 * is flagged (ST_EXPERT_ID, by the first piece) and its row of y left. */
#include "common.glsl"

#if defined(TYPE_Q4_1) || defined(TYPE_Q5_1)
#define NO_MIN
#endif
#define NR 2u
#define WBIND 0
#include "weights.glsl"
#include "dequant.glsl"

layout(binding = 1) readonly buffer X { float x[]; };
layout(binding = 2) readonly buffer I { int ids[]; };
layout(binding = 3) readonly buffer B { float bias[]; };
layout(binding = 4) writeonly buffer Y { float y[]; };

layout(push_constant) uniform PC {
	uint cols, rows, k, n_x;
	uint ow, nb1, nb2;    /* bytes: expert e0's row 0 in the binding, a row, an expert */
	uint ox, xstride, sofs; /* floats */
	uint oi, ob, oy;      /* elements */
	uint e0, e1, n_exp, has_bias;
} pc;

void main()
{
	uint slot = gl_WorkGroupID.z, tok = slot / pc.k, i = slot % pc.k;
	uint r0 = (gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x) * NR;
	if (r0 >= pc.rows)
		return;
	uint tid = gl_LocalInvocationID.x, wg = gl_WorkGroupSize.x;
	int id = ids[pc.oi + slot];
	if (id < 0 || uint(id) >= pc.n_exp) {
		if (pc.e0 == 0u && r0 == 0u && tid == 0u)
			flag_bad(ST_EXPERT_ID, id);
		return;
	}
	if (uint(id) < pc.e0 || uint(id) >= pc.e1)
		return;
	uint xo = pc.ox + (tok * pc.n_x + (pc.n_x == 1u ? 0u : i)) * pc.xstride;
	uint row[NR];
	float acc[NR];
	[[unroll]] for (uint r = 0u; r < NR; r++) {
		row[r] = pc.ow + (uint(id) - pc.e0) * pc.nb2 + min(r0 + r, pc.rows - 1u) * pc.nb1;
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
				xv[h][J] = x[xo + e + J];
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
				float s = x[xo + pc.sofs + e / BLCK];
				[[unroll]] for (uint r = 0u; r < NR; r++)
					acc[r] += block_min(row[r] + e / BLCK * BSIZE) * s;
			}
		}
#endif
	}
	[[unroll]] for (uint r = 0u; r < NR; r++) {
		float t = wg_sum(acc[r]);
		if (tid == 0u && r0 + r < pc.rows) {
			if (pc.has_bias != 0u)
				t += bias[pc.ob + uint(id) * pc.rows + r0 + r];
			y[pc.oy + slot * pc.rows + r0 + r] = t;
		}
	}
}
