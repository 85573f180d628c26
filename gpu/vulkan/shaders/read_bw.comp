#version 450
/* read_bw.comp - the device's read bandwidth probe (tern-bench): every
 * invocation sums a strided share of n vec4s and writes one float per
 * workgroup, so that nearly every byte moved is a read. */
#include "common.glsl"

layout(binding = 0) readonly buffer A { vec4 a[]; };
layout(binding = 1) writeonly buffer Y { float y[]; };

layout(push_constant) uniform PC {
	uint n; /* vec4s */
} pc;

void main()
{
	uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
	vec4 s = vec4(0.0);
	for (uint i = gl_GlobalInvocationID.x; i < pc.n; i += stride)
		s += a[i];
	s.x = wg_sum(s.x + s.y + s.z + s.w);
	if (gl_LocalInvocationID.x == 0u)
		y[gl_WorkGroupID.x] = s.x;
}
