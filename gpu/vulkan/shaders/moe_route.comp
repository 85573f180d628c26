#version 450
/* moe_route.comp - lib/backend.h moe_route for one token per workgroup:
 * the gating (softmax, sigmoid, or the logits for softmax after top-k),
 * the selection scores (plus the bias), the groups' two best, the top k
 * (ties: the lower index) and the weights. The experts' probabilities are
 * computed in parallel; the selection, k passes over at most 1024
 * experts, by the first invocation. */
#include "common.glsl"

layout(binding = 0) readonly buffer L { float logit[]; };
layout(binding = 1) readonly buffer B { float bias[]; };
layout(binding = 2) writeonly buffer I { int ids[]; };
layout(binding = 3) writeonly buffer W { float wts[]; };

layout(push_constant) uniform PC {
	uint ne, k, ntok, gating; /* 0 softmax, 1 sigmoid, 2 softmax of the top k */
	uint has_bias, norm, n_group, n_group_used;
	uint ol, ob, oi, ow;
	float scale;
} pc;

shared float prob[1024], sel[1024];
shared float gscore[64];

void main()
{
	uint t = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x, lid = gl_LocalInvocationID.x;
	if (t >= pc.ntok)
		return;
	uint base = pc.ol + t * pc.ne;
	float m = -1.0 / 0.0;
	for (uint e = lid; e < pc.ne; e += gl_WorkGroupSize.x)
		m = max(m, logit[base + e]);
	m = wg_max(m);
	float s = 0.0;
	for (uint e = lid; e < pc.ne; e += gl_WorkGroupSize.x)
		s += exp(logit[base + e] - m);
	s = wg_sum(s);
	for (uint e = lid; e < pc.ne; e += gl_WorkGroupSize.x) {
		float l = logit[base + e];
		float p = pc.gating == 0u ? exp(l - m) / s : pc.gating == 1u ? 1.0 / (1.0 + exp(-l)) : l;
		prob[e] = p;
		sel[e] = p + (pc.has_bias != 0u ? bias[pc.ob + e] : 0.0);
	}
	barrier();
	if (lid != 0u)
		return;
	uint ng = pc.n_group > 1u ? pc.n_group : 1u, per = pc.ne / ng;
	if (ng > 1u) {
		for (uint g = 0u; g < ng; g++) {
			float b1 = -1.0 / 0.0, b2 = -1.0 / 0.0;
			for (uint e = g * per; e < (g + 1u) * per; e++) {
				if (sel[e] > b1) {
					b2 = b1;
					b1 = sel[e];
				} else if (sel[e] > b2) {
					b2 = sel[e];
				}
			}
			gscore[g] = per > 1u ? b1 + b2 : b1;
		}
		uint keep = 0u; /* bits of kept groups: n_group <= 32 */
		for (uint u = 0u; u < pc.n_group_used; u++) {
			int best = -1;
			for (uint g = 0u; g < ng; g++)
				if ((keep & (1u << g)) == 0u && (best < 0 || gscore[g] > gscore[uint(best)]))
					best = int(g);
			keep |= 1u << uint(best);
		}
		for (uint e = 0u; e < pc.ne; e++)
			if ((keep & (1u << (e / per))) == 0u)
				sel[e] = -1.0 / 0.0;
	}
	float w[64];
	for (uint i = 0u; i < pc.k; i++) {
		int best = -1;
		for (uint e = 0u; e < pc.ne; e++)
			if (sel[e] != -3.0e38 && (best < 0 || sel[e] > sel[uint(best)]))
				best = int(e);
		ids[pc.oi + t * pc.k + i] = best;
		w[i] = prob[uint(best)];
		sel[uint(best)] = -3.0e38; /* taken: below every score, even -inf's group */
	}
	if (pc.gating == 2u) {
		float wm = -1.0 / 0.0, z = 0.0;
		for (uint i = 0u; i < pc.k; i++)
			wm = max(wm, w[i]);
		for (uint i = 0u; i < pc.k; i++)
			z += exp(w[i] - wm);
		for (uint i = 0u; i < pc.k; i++)
			w[i] = exp(w[i] - wm) / z;
	}
	float wsum = 0.0;
	for (uint i = 0u; i < pc.k; i++)
		wsum += w[i];
	wsum = max(wsum, 6.103515625e-5);
	for (uint i = 0u; i < pc.k; i++)
		wts[pc.ow + t * pc.k + i] = (pc.norm != 0u ? w[i] / wsum : w[i]) * pc.scale;
}
