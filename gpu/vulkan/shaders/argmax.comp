#version 450
/* argmax.comp - lib/backend.h argmax: ids[r] = the index of the largest
 * element of row r, the lower of equal ones, +inf counted as the largest
 * finite float (the sampler's sanitised logits), NaN and -inf never; -1
 * for a row of those only. One workgroup per row, reduced in shared
 * memory (no subgroup operations: one shader for every device). */
#include "common.glsl"

layout(binding = 0) readonly buffer X { float x[]; };
layout(binding = 1) writeonly buffer I { int ids[]; };

layout(push_constant) uniform PC {
	uint ne0, nrows, ox, oi;
} pc;

shared float bv[256];
shared int bi[256];

void main()
{
	uint row = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x;
	if (row >= pc.nrows)
		return;
	uint l = gl_LocalInvocationID.x, base = pc.ox + row * pc.ne0;
	float best = -1.0 / 0.0;
	int at = -1;
	/* each invocation's elements in increasing order: strictly larger wins */
	for (uint i = l; i < pc.ne0; i += gl_WorkGroupSize.x) {
		/* ordered comparisons: NaN is never larger (min() of a NaN is undefined) */
		float v = x[base + i];
		if (v > 3.4028234663852886e38)
			v = 3.4028234663852886e38;
		if (v > best) {
			best = v;
			at = int(i);
		}
	}
	bv[l] = best;
	bi[l] = at;
	barrier();
	for (uint s = gl_WorkGroupSize.x / 2u; s > 0u; s >>= 1) {
		if (l < s) {
			float ov = bv[l + s];
			int oi = bi[l + s];
			if (oi >= 0 && (bi[l] < 0 || ov > bv[l] || (ov == bv[l] && oi < bi[l]))) {
				bv[l] = ov;
				bi[l] = oi;
			}
		}
		barrier();
	}
	if (l == 0u)
		ids[pc.oi + row] = bi[0];
}
