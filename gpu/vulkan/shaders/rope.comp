#version 450
/* rope.comp - lib/backend.h rope, in place over x {hd, nh, ntok}: one
 * invocation per pair of every head of every token; the angle and the
 * turn are rope.glsl's. */
#include "common.glsl"
#include "rope.glsl"

layout(binding = 0) buffer X { float x[]; };
layout(binding = 1) readonly buffer P { int pos[]; };
layout(binding = 2) readonly buffer F { float freq[]; };

layout(push_constant) uniform PC {
	uint hd, nh, ntok, n_rot;
	uint neox, has_freq, ox, opos;
	uint ofreq, n_ctx;
	float theta_scale, freq_scale, ext_factor, corr_low, corr_high, mag;
} pc;

void main()
{
	uint half_ = pc.n_rot / 2u;
	uint i = flat_id();
	if (i >= half_ * pc.nh * pc.ntok)
		return;
	uint j = i % half_, h = (i / half_) % pc.nh, t = i / (half_ * pc.nh);
	int p = pos[pc.opos + t];
	if (pc.n_ctx != 0u && (p < 0 || uint(p) >= pc.n_ctx)) {
		flag_bad(ST_KV_STORE, p);
		return;
	}
	const rope_params rp = rope_params(pc.theta_scale, pc.freq_scale, pc.ext_factor, pc.corr_low, pc.corr_high, pc.mag);
	bool has_freq = pc.has_freq != 0u;
	vec2 cs = rope_cs(rp, p, j, has_freq, has_freq ? freq[pc.ofreq + j] : 1.0);
	uint base = pc.ox + (t * pc.nh + h) * pc.hd;
	uvec2 e = rope_pair(j, half_, pc.neox != 0u);
	vec2 y = rope_turn(x[base + e.x], x[base + e.y], cs);
	x[base + e.x] = y.x;
	x[base + e.y] = y.y;
}
