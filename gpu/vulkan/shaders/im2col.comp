#version 450
/* im2col.comp - lib/backend.h im2col: y[t][c k + j] = x[t stride + j -
 * pad][c], 0 outside x. One invocation per element of y. */
#include "common.glsl"

layout(binding = 0) readonly buffer X { float x[]; };
layout(binding = 1) writeonly buffer Y { float y[]; };

layout(push_constant) uniform PC {
	uint n_ch, len, n_out, k;
	uint stride, pad, ox, oy;
} pc;

void main()
{
	uint i = flat_id();
	uint row = pc.n_ch * pc.k;
	if (i >= row * pc.n_out)
		return;
	uint t = i / row, c = (i % row) / pc.k, j = i % pc.k;
	int s = int(t * pc.stride + j) - int(pc.pad);
	y[pc.oy + i] = s >= 0 && s < int(pc.len) ? x[pc.ox + uint(s) * pc.n_ch + c] : 0.0;
}
