#version 450
/* norm_rope.comp - lib/backend.h norm_rope: a layer's Q heads and K heads
 * in one dispatch, a workgroup per head of a token (Q's heads of token t,
 * then its K heads). A head whose tensor has a weight is normed first with
 * norm.glsl's statistics, then its pairs are turned with rope.glsl's
 * angles, the normed values kept in registers: the arithmetic of
 * norm.comp followed by rope.comp, the same workgroup size as norm's for
 * the same sums. Flags: 1 Q's weight, 2 K's weight, 4 layer norm, 8 NEOX,
 * 16 frequency factors. */
#include "common.glsl"
#include "rope.glsl"

layout(binding = 0) buffer Q { float q[]; };
layout(binding = 1) buffer K { float k[]; };
layout(binding = 2) readonly buffer QW { float qw[]; };
layout(binding = 3) readonly buffer KW { float kw[]; };
layout(binding = 4) readonly buffer P { int pos[]; };
layout(binding = 5) readonly buffer F { float freq[]; };

layout(push_constant) uniform PC {
	uint hd, nhq, nhk, ntok;
	uint n_rot, flags, oq, ok;
	uint oqw, okw, opos, ofreq;
	float eps, theta_scale, freq_scale, ext_factor, corr_low, corr_high, mag;
} pc;

/* the head this workgroup turns: of K or of Q, its first element */
bool is_k;
uint base;

float ld(uint i) { return is_k ? k[base + i] : q[base + i]; }
void st(uint i, float v)
{
	if (is_k)
		k[base + i] = v;
	else
		q[base + i] = v;
}
float weight(uint i) { return is_k ? kw[pc.okw + i] : qw[pc.oqw + i]; }

float norm_in(uint i) { return ld(i); }

#include "norm.glsl"

void main()
{
	uint nh = pc.nhq + pc.nhk;
	uint g = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x;
	if (g >= nh * pc.ntok)
		return;
	uint t = g / nh, h = g % nh;
	is_k = h >= pc.nhq;
	base = is_k ? pc.ok + (t * pc.nhk + h - pc.nhq) * pc.hd : pc.oq + (t * pc.nhq + h) * pc.hd;
	bool normed = (pc.flags & (is_k ? 2u : 1u)) != 0u; /* the same for the whole workgroup */
	float mean = 0.0, inv = 1.0;
	if (normed) {
		if ((pc.flags & 4u) != 0u)
			mean = norm_mean(pc.hd);
		inv = norm_inv(pc.hd, mean, pc.eps);
		/* the pairs below are not the elements each thread summed:
		 * every read of the row is done before any write */
		barrier();
	}
	uint l = gl_LocalInvocationID.x, half_ = pc.n_rot / 2u;
	const rope_params rp = rope_params(pc.theta_scale, pc.freq_scale, pc.ext_factor, pc.corr_low, pc.corr_high, pc.mag);
	bool has_freq = (pc.flags & 16u) != 0u, neox = (pc.flags & 8u) != 0u;
	int p = pos[pc.opos + t];
	for (uint j = l; j < half_; j += gl_WorkGroupSize.x) {
		uvec2 e = rope_pair(j, half_, neox);
		float a = ld(e.x), b = ld(e.y);
		if (normed) { /* as norm.comp's y: (x - mean) * inv * w */
			a = (a - mean) * inv;
			a *= weight(e.x);
			b = (b - mean) * inv;
			b *= weight(e.y);
		}
		vec2 y = rope_turn(a, b, rope_cs(rp, p, j, has_freq, has_freq ? freq[pc.ofreq + j] : 1.0));
		st(e.x, y.x);
		st(e.y, y.y);
	}
	/* the dimensions past the rotated ones: normed only */
	if (normed)
		for (uint i = pc.n_rot + l; i < pc.hd; i += gl_WorkGroupSize.x) {
			float v = (ld(i) - mean) * inv;
			v *= weight(i);
			st(i, v);
		}
}
