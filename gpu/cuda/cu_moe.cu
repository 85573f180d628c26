/* cu_moe.cu - the router of a mixture of experts and the experts' weighted
 * sum (lib/backend.h moe_route, moe_combine), as the Vulkan backend's
 * moe_route.comp and moe_combine.comp compute them: the gating in
 * parallel, the selection by one thread per token (k passes over at most
 * 1024 experts, ties to the lower index). */
#include "gpu/cuda/cu_impl.cuh"

namespace tern_cu {

#define MOE_MAX_EXPERTS 1024

__global__ void k_moe_route(int ne, int k, int64_t ntok, int gating, const float *logit, const float *bias, int *ids,
			    float *wts, bool norm, int n_group, int n_group_used, float scale)
{
	__shared__ float prob[MOE_MAX_EXPERTS], sel[MOE_MAX_EXPERTS];
	__shared__ float sh[32];
	uint64_t t = cu_block_id();
	if (t >= (uint64_t)ntok)
		return;
	const float *l = logit + t * ne;
	float m = -INFINITY;
	for (int e = threadIdx.x; e < ne; e += blockDim.x)
		m = fmaxf(m, l[e]);
	m = block_max(m, sh);
	float s = 0;
	for (int e = threadIdx.x; e < ne; e += blockDim.x)
		s += expf(l[e] - m);
	s = block_sum(s, sh);
	for (int e = threadIdx.x; e < ne; e += blockDim.x) {
		float p = gating == MOE_SOFTMAX ? expf(l[e] - m) / s : gating == MOE_SIGMOID ? 1.0f / (1.0f + expf(-l[e])) : l[e];
		prob[e] = p;
		sel[e] = p + (bias ? bias[e] : 0.0f);
	}
	__syncthreads();
	if (threadIdx.x != 0)
		return;
	int ng = n_group > 1 ? n_group : 1, per = ne / ng;
	if (ng > 1) {
		float gscore[32];
		for (int g = 0; g < ng; g++) {
			float b1 = -INFINITY, b2 = -INFINITY;
			for (int e = g * per; e < (g + 1) * per; e++) {
				if (sel[e] > b1) {
					b2 = b1;
					b1 = sel[e];
				} else if (sel[e] > b2) {
					b2 = sel[e];
				}
			}
			gscore[g] = per > 1 ? b1 + b2 : b1;
		}
		unsigned keep = 0; /* bits of the kept groups: n_group <= 32 */
		for (int u = 0; u < n_group_used; u++) {
			int best = -1;
			for (int g = 0; g < ng; g++)
				if (!(keep >> g & 1u) && (best < 0 || gscore[g] > gscore[best]))
					best = g;
			keep |= 1u << best;
		}
		for (int e = 0; e < ne; e++)
			if (!(keep >> (e / per) & 1u))
				sel[e] = -INFINITY;
	}
	float w[TERN_CU_MOE_MAX_USED];
	const float taken = -3.0e38f; /* below every score, even a dropped group's -inf: never chosen twice */
	for (int i = 0; i < k; i++) {
		int best = -1;
		for (int e = 0; e < ne; e++)
			if (sel[e] != taken && (best < 0 || sel[e] > sel[best]))
				best = e;
		ids[t * k + i] = best;
		w[i] = prob[best];
		sel[best] = taken;
	}
	if (gating == MOE_SOFTMAX_TOPK) {
		float wm = -INFINITY, z = 0;
		for (int i = 0; i < k; i++)
			wm = fmaxf(wm, w[i]);
		for (int i = 0; i < k; i++)
			z += expf(w[i] - wm);
		for (int i = 0; i < k; i++)
			w[i] = expf(w[i] - wm) / z;
	}
	float wsum = 0;
	for (int i = 0; i < k; i++)
		wsum += w[i];
	wsum = fmaxf(wsum, 6.103515625e-5f);
	for (int i = 0; i < k; i++)
		wts[t * k + i] = (norm ? w[i] / wsum : w[i]) * scale;
}

/* y[t][j] = sum over the k slots, in order, of w[t][i] x[t][i][j] */
__global__ void k_moe_combine(int64_t n, int k, int64_t ntok, const float *x, const float *w, float *y)
{
	uint64_t i = cu_block_id() * blockDim.x + threadIdx.x;
	if (i >= (uint64_t)(n * ntok))
		return;
	uint64_t t = i / n, j = i % n;
	float s = 0;
	for (int e = 0; e < k; e++)
		s += w[t * k + e] * x[(t * k + e) * n + j];
	y[i] = s;
}

void cu_run_moe(cuk_ctx *c, const cuk_op *op)
{
	const cuk_t *t = op->t;
	if (op->kind == CUK_MOE_ROUTE) {
		const auto &p = op->u.moe_route;
		int64_t ntok = t[0].ne[1] * t[0].ne[2] * t[0].ne[3];
		CU_LAUNCH(k_moe_route, cu_grid((uint64_t)ntok), dim3(256), 0, c->stream, (int)t[0].ne[0], p.k, ntok, p.gating,
			  (const float *)t[0].p, (const float *)t[1].p, (int *)t[2].p, (float *)t[3].p, p.norm != 0, p.n_group,
			  p.n_group_used, p.scale);
		cu_launched(c, "moe_route");
		return;
	}
	/* CUK_MOE_COMBINE: x {n, k, ntok}, w {k, ntok}, y {n, ntok} */
	const cuk_t &x = t[0];
	uint64_t n = (uint64_t)x.ne[0] * (uint64_t)x.ne[2];
	CU_LAUNCH(k_moe_combine, cu_grid((n + 255) / 256), dim3(256), 0, c->stream, x.ne[0], (int)x.ne[1], x.ne[2],
		  (const float *)x.p, (const float *)t[1].p, (float *)t[2].p);
	cu_launched(c, "moe_combine");
}

} // namespace tern_cu
