#version 450
// types: f32 f16 bf16 q4_0 q4_1 q5_0 q5_1 q8_0 q8_1 q2_k q3_k q4_k q5_k q6_k q8_k iq4_nl iq4_xs mxfp4 iq2_xxs iq2_xs iq2_s iq3_xxs iq3_s iq1_s iq1_m tq1_0 tq2_0
/* dequant_copy.comp - lib/backend.h copy from any decodable type into f32:
 * dst row r = src row r decoded (the reference's bits, dequant.glsl), rows
 * found through each side's strides (either may be a column window):
 * row r is (r % ne1, r / ne1 % ne2, r / (ne1 ne2)) of its own shape. One
 * invocation per UNIT elements. */
#include "common.glsl"

#define WBIND 0
#include "weights.glsl"
#include "dequant.glsl"

layout(binding = 1) writeonly buffer Y { float y[]; };

layout(push_constant) uniform PC {
	uint cols, nrows;
	uint os, s_ne1, s_ne2, s_nb1, s_nb2, s_nb3; /* bytes */
	uint od, d_ne1, d_ne2, d_nb1, d_nb2, d_nb3; /* floats */
} pc;

void main()
{
	uint units = pc.cols / UNIT, id = flat_id(), r = id / units, e = id % units * UNIT;
	if (r >= pc.nrows)
		return;
	uint so = pc.os + r % pc.s_ne1 * pc.s_nb1 + r / pc.s_ne1 % pc.s_ne2 * pc.s_nb2 + r / (pc.s_ne1 * pc.s_ne2) * pc.s_nb3;
	uint dq = pc.od + r % pc.d_ne1 * pc.d_nb1 + r / pc.d_ne1 % pc.d_ne2 * pc.d_nb2 + r / (pc.d_ne1 * pc.d_ne2) * pc.d_nb3;
	float v[UNIT];
	decu(so, e, v);
	[[unroll]] for (uint j = 0u; j < UNIT; j++)
		y[dq + e + j] = v[j];
}
