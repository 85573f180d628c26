#version 450
// dot types: q4_0 q4_1 q5_0 q5_1 q8_0 iq4_nl mxfp4 q2_k q3_k q4_k q5_k q6_k iq4_xs
// types: f32 f16 bf16 q4_0 q4_1 q5_0 q5_1 q8_0 q2_k q3_k q4_k q5_k q6_k iq4_nl iq4_xs mxfp4 iq2_xxs iq2_xs iq2_s iq3_xxs iq3_s iq1_s iq1_m tq1_0 tq2_0
/* mul_mat_vec_id.comp - the experts' products of a mixture of experts
 * (lib/backend.h mat_mul_id), as mat-vecs: workgroup z is a slot (token t,
 * choice i), x and y a group of RW rows of the expert ids[t][i] selects;
 * the loops are mul_mat_vec.comp's (mat_vec.glsl). Only the selected experts' weights are
 * read. The stack may be bound in pieces (experts e0..e1-1): a slot whose
 * expert lies in another piece does nothing here; an id outside the stack
 * is flagged (ST_EXPERT_ID, by the first piece) and its row of y left.
 * With -DINT_DOT (the "dot types") x is in actq.comp's int form and the
 * blocks are summed as integers (dot_int.glsl), as mul_mat_vec.comp's. */
#include "common.glsl"

#if defined(TYPE_Q4_1) || defined(TYPE_Q5_1)
#define NO_MIN
#endif
#define RW 8u /* rows per workgroup: vk_products.c MV_NR */
#define WBIND 0
#include "weights.glsl"
#include "dequant.glsl"

layout(binding = 1) readonly buffer X { float x[]; };
layout(binding = 1) readonly buffer XI { uint xw[]; }; /* INT_DOT: the levels, 4 a word */
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

#ifdef INT_DOT
#define XW(i) xw[i]
#define XF(i) x[i]
#include "dot_int.glsl"
#endif

uint g_slot, g_id; /* this workgroup's slot and its expert */
void put(uint r, float t)
{
	if (pc.has_bias != 0u)
		t += bias[pc.ob + g_id * pc.rows + r];
	y[pc.oy + g_slot * pc.rows + r] = t;
}
#include "mat_vec.glsl"

void main()
{
	uint slot = gl_WorkGroupID.z, tok = slot / pc.k, i = slot % pc.k;
	uint r0 = (gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x) * RW;
	if (r0 >= pc.rows)
		return;
	uint tid = gl_LocalInvocationID.x;
	int id = ids[pc.oi + slot];
	if (id < 0 || uint(id) >= pc.n_exp) {
		if (pc.e0 == 0u && r0 == 0u && tid == 0u)
			flag_bad(ST_EXPERT_ID, id);
		return;
	}
	if (uint(id) < pc.e0 || uint(id) >= pc.e1)
		return;
	uint xo = pc.ox + (tok * pc.n_x + (pc.n_x == 1u ? 0u : i)) * pc.xstride;
	g_slot = slot;
	g_id = uint(id);
	mat_vec_rows(pc.ow + (uint(id) - pc.e0) * pc.nb2, pc.nb1, r0, min(RW, pc.rows - r0), xo);
}
