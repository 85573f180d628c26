/* norm.glsl - the statistics of one row of lib/backend.h's norm, computed
 * by a workgroup: the layer norm's mean and 1 / sqrt(var + eps). The
 * includer defines float norm_in(uint i), the row's element i (after any
 * residual), before including this. norm.comp and norm_rope.comp share it
 * so that a row's statistics are the same sums, in the same order, in
 * both: norm_rope is norm then rope bit for bit. */

/* mean of the row's n elements (layer norm; RMS takes 0) */
float norm_mean(uint n)
{
	float s = 0.0;
	for (uint i = gl_LocalInvocationID.x; i < n; i += gl_WorkGroupSize.x)
		s += norm_in(i);
	return wg_sum(s) / float(n);
}

/* 1 / sqrt(mean((x - mean)^2) + eps) */
float norm_inv(uint n, float mean, float eps)
{
	float sq = 0.0;
	for (uint i = gl_LocalInvocationID.x; i < n; i += gl_WorkGroupSize.x) {
		float v = norm_in(i);
		sq += (v - mean) * (v - mean);
	}
	return inversesqrt(wg_sum(sq) / float(n) + eps);
}
