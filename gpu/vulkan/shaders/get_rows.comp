#version 450
// types: f32 f16 bf16 q4_0 q4_1 q5_0 q5_1 q8_0 q8_1 q2_k q3_k q4_k q5_k q6_k q8_k iq4_nl iq4_xs mxfp4 iq2_xxs iq2_xs iq2_s iq3_xxs iq3_s iq1_s iq1_m tq1_0 tq2_0
/* get_rows.comp - y[t] = row ids[t] of W decoded to f32 (lib/backend.h
 * get_rows: embeddings), one invocation per UNIT elements, the reference's
 * bits (dequant.glsl). The matrix may be bound in pieces (rows r0..r1-1):
 * a token whose row lies in another piece is left to that one; an id
 * outside W is flagged (ST_ROW_ID, by the first piece) and its row of y
 * left as it was. */
#include "common.glsl"

#define WBIND 0
#include "weights.glsl"
#include "dequant.glsl"

layout(binding = 1) readonly buffer I { int ids[]; };
layout(binding = 2) writeonly buffer Y { float y[]; };

layout(push_constant) uniform PC {
	uint cols, ntok, ow, nb1;
	uint oi, oy, ystride;
	uint r0, r1, nrows;
} pc;

void main()
{
	uint units = pc.cols / UNIT, id = flat_id(), t = id / units, e = id % units * UNIT;
	if (t >= pc.ntok)
		return;
	int r = ids[pc.oi + t];
	if (r < 0 || uint(r) >= pc.nrows) {
		if (pc.r0 == 0u && e == 0u)
			flag_bad(ST_ROW_ID, r);
		return;
	}
	if (uint(r) < pc.r0 || uint(r) >= pc.r1)
		return;
	float v[UNIT];
	decu(pc.ow + (uint(r) - pc.r0) * pc.nb1, e, v);
	[[unroll]] for (uint j = 0u; j < UNIT; j++)
		y[pc.oy + t * pc.ystride + e + j] = v[j];
}
