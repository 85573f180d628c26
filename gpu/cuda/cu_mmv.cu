/* cu_mmv.cu - the mat-vec: y = W x for one token and small batches (up
 * to CU_MV_MAX_TOK tokens, each weight row read once for all of them),
 * for up to four weights of one type in one launch (a decode step's Q, K
 * and V, its gate and up), the heads of mat_mul_heads and the selected
 * experts of mat_mul_id (cu_prod.cuh mv_args).
 *
 * A warp per row: its lanes take consecutive units of the row (8 elements
 * of a block type, so that a warp reads 256 consecutive elements, one
 * K-quant super-block, per step: its loads fall in the same few cache
 * lines), decode them straight from the GGUF blocks (cu_quant.cuh) and
 * multiply them with each token's activations; the lanes' sums meet in
 * one warp reduction. No shared memory and no block barrier: a block is
 * 4 independent warps.
 *
 * The integer form (mv_args.ints: the types cu_dot.cuh knows, where the
 * device has dp4a) reads the activations as k_actq's levels and scales: a
 * lane takes 32 elements at a time (a block, a K-quant's sub-blocks of 32;
 * a warp 1024 consecutive elements a step), unpacks the weight's levels
 * once and sums them with each token's in int32 (idot<T>), scaled in f32. */
#include "gpu/cuda/cu_dot.cuh"
#include "gpu/cuda/cu_prod.cuh"

namespace tern_cu {

#define MV_WARPS 4

/* the unit's 8 activations of a block type (rows 16-byte aligned: the
 * scratch's strides are multiples of 4 floats) */
__device__ __forceinline__ float dot8(const float *v, const float *x)
{
	float4 a = *(const float4 *)x, b = *(const float4 *)(x + 4);
	return v[0] * a.x + v[1] * a.y + v[2] * a.z + v[3] * a.w + v[4] * b.x + v[5] * b.y + v[6] * b.z + v[7] * b.w;
}

/* a lane's share of a row's products with ntok tokens at x, into acc:
 * decoded weights times the activations in f32 */
template <int T, int NT>
__device__ __forceinline__ void row_float(const uint8_t *row, const float *x, const mv_args &a, int ntok, unsigned lane,
					  float *acc)
{
	constexpr int U = qt<T>::unit;
	constexpr bool NOMIN = has_min<T>::value;
	for (int64_t e = (int64_t)lane * U; e < a.cols; e += 32 * U) {
		float v[U];
		decu<T, NOMIN>(row, e, v);
		/* the block's minimum times the activations' block sum, once
		 * per block (by the lane that holds its first unit) */
		bool first = NOMIN && e % qt<T>::blck == 0;
		float m = first ? block_min<T>(row + e / qt<T>::blck * qt<T>::bsize) : 0.0f;
		for (int t = 0; t < NT; t++) {
			if (t >= ntok)
				break;
			const float *xt = x + t * a.xs;
			float s;
			if constexpr (U == 8) {
				s = dot8(v, xt + e);
			} else {
				s = v[0] * xt[e];
			}
			if (first)
				s += m * xt[a.sofs + e / qt<T>::blck];
			acc[t] += s;
		}
	}
}

/* the same through the integer dot (cu_dot.cuh), x in the int form: per
 * row cols / 4 words of levels, the block scales, (Q8_1) the block sums */
template <int T, int NT>
__device__ __forceinline__ void row_int(const uint8_t *row, const unsigned *x, const mv_args &a, int ntok,
					unsigned lane, float *acc)
{
	constexpr int BA = qt<T>::blck; /* the activations' block: the weight's, in these types */
	int64_t so = a.cols / 4, ss = so + a.cols / 32;
	for (int64_t e = (int64_t)lane * 32; e < a.cols; e += 32 * 32) {
		idot<T> wd;
		wd.load(row + e / qt<T>::blck * qt<T>::bsize, (int)(e % qt<T>::blck / 32));
		for (int t = 0; t < NT; t++) {
			if (t >= ntok)
				break;
			const unsigned *xt = x + t * a.xs;
			unsigned xv[8];
			xq8(xt, e, xv);
			float xd = __uint_as_float(xt[so + e / BA]);
			float xs = has_min<T>::value ? __uint_as_float(xt[ss + e / 32]) : 0.0f;
			acc[t] += wd.dot(xv, xd, xs);
		}
	}
}

template <int T, int NT, bool I> __global__ void __launch_bounds__(32 * MV_WARPS) k_mv(const mv_args a)
{
	const mv_w &W = a.w[blockIdx.y];
	int64_t r = (int64_t)blockIdx.x * MV_WARPS + threadIdx.x / 32;
	unsigned lane = threadIdx.x % 32;
	if (r >= W.rows)
		return; /* the whole warp */
	const uint8_t *w = W.w;
	const float *x = a.x, *bias = NULL;
	float *y = W.y;
	int ntok = a.ntok;
	unsigned z = blockIdx.z;
	if (a.ids) {
		int e = a.ids[z];
		if (e < 0 || e >= a.n_exp) {
			if (r == 0 && lane == 0)
				cu_flag(a.status, CUK_MAT_MUL_ID, e);
			return; /* the slot's row of y is left as it was */
		}
		w += (int64_t)e * a.wz;
		x += ((int64_t)(z / a.k) * a.n_x + (a.n_x == 1 ? 0 : z % a.k)) * a.xz;
		y += (int64_t)z * a.yz;
		if (a.bias)
			bias = a.bias + (int64_t)e * W.rows;
	} else {
		w += (int64_t)z * a.wz;
		x += (int64_t)z * a.xz;
		y += (int64_t)z * a.yz;
	}
	const uint8_t *row = w + r * W.nb1;
	float acc[NT];
	for (int t = 0; t < NT; t++)
		acc[t] = 0.0f;
	if constexpr (I)
		row_int<T, NT>(row, (const unsigned *)x, a, ntok, lane, acc);
	else
		row_float<T, NT>(row, x, a, ntok, lane, acc);
	for (int t = 0; t < NT; t++)
		acc[t] = warp_sum(acc[t]);
	if (lane == 0)
		for (int t = 0; t < ntok && t < NT; t++)
			y[t * W.ys + r] = bias ? acc[t] + bias[r] : acc[t];
}

template <int T, int NT> static void launch_nt(cuk_ctx *c, const mv_args &a, unsigned nz)
{
	int64_t most = 0;
	for (int i = 0; i < a.n_w; i++)
		most = a.w[i].rows > most ? a.w[i].rows : most;
	dim3 grid((unsigned)((most + MV_WARPS - 1) / MV_WARPS), (unsigned)a.n_w, nz);
	auto kern = k_mv<T, NT, false>;
	if constexpr (cu_int_type(T))
		if (a.ints)
			kern = k_mv<T, NT, true>;
	CU_LAUNCH(kern, grid, dim3(32 * MV_WARPS), 0, c->stream, a);
	cu_launched(c, "k_mv");
}

void cu_mmv_launch(cuk_ctx *c, uint32_t type, const mv_args &a, unsigned nz)
{
	bool ok = with_weight_type(type, [&](auto tt) {
		constexpr int T = decltype(tt)::value;
		/* the token counts by powers of two: fewer kernels, and a
		 * token's sums the same whatever the others are */
		if (a.ntok <= 1)
			launch_nt<T, 1>(c, a, nz);
		else if (a.ntok <= 2)
			launch_nt<T, 2>(c, a, nz);
		else if (a.ntok <= 4)
			launch_nt<T, 4>(c, a, nz);
		else
			launch_nt<T, 8>(c, a, nz);
	});
	if (!ok)
		cu_check(c, cudaErrorInvalidValue, "mat-vec: a weight type without a decoder");
}

} // namespace tern_cu
