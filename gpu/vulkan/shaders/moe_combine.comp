#version 450
/* moe_combine.comp - lib/backend.h moe_combine: y[t][j] = sum over the k
 * slots i, in order, of w[t][i] x[t][i][j]. One invocation per element. */
#include "common.glsl"

layout(binding = 0) readonly buffer X { float x[]; };
layout(binding = 1) readonly buffer W { float w[]; };
layout(binding = 2) writeonly buffer Y { float y[]; };

layout(push_constant) uniform PC {
	uint n, k, ntok, ox;
	uint ow, oy;
} pc;

void main()
{
	uint i = flat_id();
	if (i >= pc.n * pc.ntok)
		return;
	uint t = i / pc.n, j = i % pc.n;
	float s = 0.0;
	for (uint e = 0u; e < pc.k; e++)
		s += w[pc.ow + t * pc.k + e] * x[pc.ox + (t * pc.k + e) * pc.n + j];
	y[pc.oy + i] = s;
}
