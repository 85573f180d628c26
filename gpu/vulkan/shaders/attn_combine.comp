#version 450
/* attn_combine.comp - merges attention.comp's partials of the splits of
 * one (token, head): y = sum_s acc_s e^(m_s - M) / sum_s l_s e^(m_s - M)
 * with the sink, if any, in the denominator. One workgroup per (head,
 * token). */
#include "common.glsl"

layout(binding = 0) readonly buffer Pt { float part[]; };
layout(binding = 1) readonly buffer S { float sinks[]; };
layout(binding = 2) writeonly buffer Y { float y[]; };
layout(binding = 3) readonly buffer P { int pos[]; };
layout(binding = 4) readonly buffer Sq { int seq[]; };

layout(push_constant) uniform PC {
	uint hdv, nh, ntok, nsplit;
	uint flags, osink, oy, opos;
	uint n_ctx, n_seq, oseq;
} pc;

void main()
{
	uint h = gl_WorkGroupID.x, t = gl_WorkGroupID.y, lid = gl_LocalInvocationID.x;
	int qp = pos[pc.opos + t];
	int sv = pc.n_seq != 0u ? seq[pc.oseq + t] : 0;
	if (qp < 0 || uint(qp) >= pc.n_ctx || sv < 0 || (pc.n_seq != 0u && uint(sv) >= pc.n_seq))
		return; /* attention.comp flagged it and wrote no partials */
	uint rec = pc.hdv + 2u, base = (t * pc.nh + h) * pc.nsplit * rec;
	float M = -1.0 / 0.0;
	for (uint s = 0u; s < pc.nsplit; s++)
		M = max(M, part[base + s * rec]);
	float sk = (pc.flags & 1u) != 0u ? sinks[pc.osink + h] : -1.0 / 0.0;
	M = max(M, sk);
	float l = sk == -1.0 / 0.0 ? 0.0 : exp(sk - M);
	for (uint s = 0u; s < pc.nsplit; s++) {
		float m = part[base + s * rec];
		if (m != -1.0 / 0.0)
			l += part[base + s * rec + 1u] * exp(m - M);
	}
	for (uint d = lid; d < pc.hdv; d += gl_WorkGroupSize.x) {
		float a = 0.0;
		for (uint s = 0u; s < pc.nsplit; s++) {
			float m = part[base + s * rec];
			if (m != -1.0 / 0.0)
				a += part[base + s * rec + 2u + d] * exp(m - M);
		}
		y[pc.oy + (t * pc.nh + h) * pc.hdv + d] = a / l;
	}
}
