#version 450
/* norm.comp - lib/backend.h norm: per row of ne0, x += r first when
 * HAS_R (written back), then y = (x - mean) / sqrt(var + eps) (* w) (+ b);
 * RMS: mean 0. One workgroup per row; the statistics are norm.glsl's.
 * Flags: 1 residual, 2 weight, 4 bias, 8 layer norm. */
#include "common.glsl"

layout(binding = 0) buffer X { float x[]; };
layout(binding = 1) readonly buffer R { float r[]; };
layout(binding = 2) readonly buffer W { float w[]; };
layout(binding = 3) readonly buffer B { float b[]; };
layout(binding = 4) writeonly buffer Y { float y[]; };

layout(push_constant) uniform PC {
	uint ne0, nrows, flags;
	float eps;
	uint ox, or_, ow, ob, oy;
} pc;

uint base;

/* element i of the row, the residual added */
float norm_in(uint i)
{
	float v = x[pc.ox + base + i];
	if ((pc.flags & 1u) != 0u)
		v += r[pc.or_ + base + i];
	return v;
}

#include "norm.glsl"

void main()
{
	uint row = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x;
	if (row >= pc.nrows)
		return;
	base = row * pc.ne0;
	float mean = 0.0;
	if ((pc.flags & 8u) != 0u)
		mean = norm_mean(pc.ne0);
	float inv = norm_inv(pc.ne0, mean, pc.eps);
	/* every thread writes only its own elements of x, which it alone
	 * reads from here on: no barrier */
	for (uint i = gl_LocalInvocationID.x; i < pc.ne0; i += gl_WorkGroupSize.x) {
		float v = norm_in(i);
		if ((pc.flags & 1u) != 0u)
			x[pc.ox + base + i] = v;
		v = (v - mean) * inv;
		if ((pc.flags & 2u) != 0u)
			v *= w[pc.ow + i];
		if ((pc.flags & 4u) != 0u)
			v += b[pc.ob + i];
		y[pc.oy + base + i] = v;
	}
}
