#version 450
/* softmax.comp - y = softmax of each row of x (ne0 wide); one workgroup
 * per row, rows over (x, y) workgroups. */
#include "common.glsl"

layout(binding = 0) readonly buffer X { float x[]; };
layout(binding = 1) writeonly buffer Y { float y[]; };

layout(push_constant) uniform PC {
	uint ne0, nrows, ox, oy;
} pc;

void main()
{
	uint row = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x;
	if (row >= pc.nrows)
		return;
	uint l = gl_LocalInvocationID.x, base = row * pc.ne0;
	float m = -1.0 / 0.0;
	for (uint i = l; i < pc.ne0; i += gl_WorkGroupSize.x)
		m = max(m, x[pc.ox + base + i]);
	m = wg_max(m);
	float s = 0.0;
	for (uint i = l; i < pc.ne0; i += gl_WorkGroupSize.x)
		s += exp(x[pc.ox + base + i] - m);
	s = wg_sum(s);
	float inv = 1.0 / s;
	for (uint i = l; i < pc.ne0; i += gl_WorkGroupSize.x)
		y[pc.oy + base + i] = exp(x[pc.ox + base + i] - m) * inv;
}
