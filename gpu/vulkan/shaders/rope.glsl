/* rope.glsl - lib/backend.h rope's angle of one pair and its turn, shared
 * by rope.comp and norm_rope.comp so that both give the same bits.
 * theta_j = pos * base^(-2j / n_rot) (/ freq[j]) as llama.cpp computes it in
 * f32 (a product per pair: pow() in GLSL is exp2(y log2 x), far less
 * exact); the angle is reduced to [-pi, pi] before sin and cos, whose
 * accuracy GLSL promises only there. */

struct rope_params {
	float theta_scale, freq_scale, ext_factor, corr_low, corr_high, mag;
};

/* (cos, sin) of pair j at position p, both times the magnitude; fj is
 * freq[j] where has_freq */
vec2 rope_cs(const rope_params rp, int p, uint j, bool has_freq, float fj)
{
	/* base^(-2j / n_rot) by j products, the rounding llama.cpp's loop gives */
	float e = float(p);
	for (uint k = 0u; k < j; k++)
		e *= rp.theta_scale;
	if (has_freq)
		e /= fj;
	float th = rp.freq_scale * e;
	if (rp.ext_factor > 0.0) {
		float y = (float(j) - rp.corr_low) / max(0.001, rp.corr_high - rp.corr_low);
		float r = rp.ext_factor * (1.0 - min(1.0, max(0.0, y)));
		th = th * (1.0 - r) + e * r;
	}
	/* Cody-Waite reduction by 2 pi in two parts */
	float k = round(th * 0.15915494309189535);
	th = (th - k * 6.28125) - k * 0.0019353071795864769;
	return vec2(cos(th) * rp.mag, sin(th) * rp.mag);
}

/* the elements of pair j: (j, j + half) (NEOX) or (2j, 2j + 1) */
uvec2 rope_pair(uint j, uint half_, bool neox) { return neox ? uvec2(j, j + half_) : uvec2(2u * j, 2u * j + 1u); }

/* the pair (a, b) turned by cs */
vec2 rope_turn(float a, float b, vec2 cs) { return vec2(a * cs.x - b * cs.y, a * cs.y + b * cs.x); }
