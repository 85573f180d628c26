#version 450
/* rope.comp - lib/backend.h rope, in place over x {hd, nh, ntok}: one
 * invocation per pair of every head of every token. theta_j = pos *
 * base^(-2j / n_rot) (/ freq[j]) as llama.cpp computes it in f32 (a
 * product per pair: pow() in GLSL is exp2(y log2 x), far less exact); the angle
 * is reduced to [-pi, pi] before sin and cos, whose accuracy GLSL promises
 * only there. */
#include "common.glsl"

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
	/* base^(-2j / n_rot) by j products, the rounding llama.cpp's loop gives */
	float e = float(p);
	for (uint k = 0u; k < j; k++)
		e *= pc.theta_scale;
	if (pc.has_freq != 0u)
		e /= freq[pc.ofreq + j];
	float th = pc.freq_scale * e;
	if (pc.ext_factor > 0.0) {
		float y = (float(j) - pc.corr_low) / max(0.001, pc.corr_high - pc.corr_low);
		float r = pc.ext_factor * (1.0 - min(1.0, max(0.0, y)));
		th = th * (1.0 - r) + e * r;
	}
	/* Cody-Waite reduction by 2 pi in two parts */
	float k = round(th * 0.15915494309189535);
	th = (th - k * 6.28125) - k * 0.0019353071795864769;
	float c = cos(th) * pc.mag, s = sin(th) * pc.mag;
	uint base = pc.ox + (t * pc.nh + h) * pc.hd;
	uint i0 = pc.neox != 0u ? j : 2u * j, i1 = pc.neox != 0u ? j + half_ : 2u * j + 1u;
	float a = x[base + i0], b = x[base + i1];
	x[base + i0] = a * c - b * s;
	x[base + i1] = a * s + b * c;
}
