/* cu_mm.cu - the GEMM of batches above CU_MV_MAX_TOK tokens: products,
 * the heads of mat_mul_heads (grid z) and mat_mul_id's batches (the
 * slots gathered per expert, so that each selected expert's weights go
 * through the tiles once for all its tokens).
 *
 * A block of 256 threads computes a 64-row x 64-token tile of y, each
 * thread 4 x 4 of it. K goes by 32 columns: the weight tile is decoded
 * once into shared memory (a unit of 8 elements per thread for the block
 * types), the activation tile copied beside it, then each thread runs its
 * 4 x 4 outer products over the 32 columns in f32 FMA (SIMT: the tensor
 * cores come later). The same numbers as the mat-vec: decoded weights
 * times the decoded activations summed in f32, Q4_1 / Q5_1's block minima
 * times the activations' block sums added per block of 32. */
#include "gpu/cuda/cu_prod.cuh"
#include "gpu/cuda/cu_quant.cuh"

namespace tern_cu {

#define MM_BM 64
#define MM_BN 64
#define MM_BK 32
#define MM_THREADS 256

/* The tile of rows r0.. for the tokens whose x rows start at xoff[j] and
 * whose outputs go to y + yoff[j] (-1: no token), n of them. */
template <int T>
__device__ __forceinline__ void mm_tile(const mm_args &a, const uint8_t *w, int64_t r0, const int64_t *xoff,
					const int64_t *yoff, const float *bias)
{
	constexpr int U = qt<T>::unit;
	constexpr bool NOMIN = has_min<T>::value;
	__shared__ float ws[MM_BK][MM_BM + 1];
	__shared__ float xs[MM_BK][MM_BN + 1];
	__shared__ float ms[MM_BM], ss[MM_BN];
	unsigned tid = threadIdx.x, tx = tid % 16, ty = tid / 16;
	float acc[4][4];
	for (int i = 0; i < 4; i++)
		for (int j = 0; j < 4; j++)
			acc[i][j] = 0.0f;
	for (int64_t k0 = 0; k0 < a.cols; k0 += MM_BK) {
		for (unsigned i = tid; i < MM_BM * MM_BK / U; i += MM_THREADS) {
			unsigned rr = i / (MM_BK / U), kk = i % (MM_BK / U) * U;
			int64_t gr = r0 + rr, ge = k0 + kk;
			float v[U];
			if (gr < a.rows && ge < a.cols)
				decu<T, NOMIN>(w + gr * a.nb1, ge, v);
			else
				for (int j = 0; j < U; j++)
					v[j] = 0.0f;
			for (int j = 0; j < U; j++)
				ws[kk + j][rr] = v[j];
		}
		for (unsigned i = tid; i < MM_BN * MM_BK; i += MM_THREADS) {
			unsigned jj = i / MM_BK, kk = i % MM_BK;
			int64_t o = xoff[jj];
			xs[kk][jj] = o >= 0 && k0 + kk < a.cols ? a.x[o + k0 + kk] : 0.0f;
		}
		if constexpr (NOMIN) {
			/* blocks of 32: one per step */
			if (tid < MM_BM) {
				int64_t gr = r0 + tid;
				ms[tid] = gr < a.rows ? block_min<T>(w + gr * a.nb1 + k0 / 32 * qt<T>::bsize) : 0.0f;
			} else if (tid < MM_BM + MM_BN) {
				int64_t o = xoff[tid - MM_BM];
				ss[tid - MM_BM] = o >= 0 ? a.x[o + a.sofs + k0 / 32] : 0.0f;
			}
		}
		__syncthreads();
		for (int kk = 0; kk < MM_BK; kk++) {
			float wv[4], xv[4];
			for (int i = 0; i < 4; i++)
				wv[i] = ws[kk][ty + 16 * i];
			for (int j = 0; j < 4; j++)
				xv[j] = xs[kk][tx + 16 * j];
			for (int i = 0; i < 4; i++)
				for (int j = 0; j < 4; j++)
					acc[i][j] += wv[i] * xv[j];
		}
		if constexpr (NOMIN)
			for (int i = 0; i < 4; i++)
				for (int j = 0; j < 4; j++)
					acc[i][j] += ms[ty + 16 * i] * ss[tx + 16 * j];
		__syncthreads();
	}
	for (int j = 0; j < 4; j++) {
		int64_t o = yoff[tx + 16 * j];
		if (o < 0)
			continue;
		for (int i = 0; i < 4; i++) {
			int64_t gr = r0 + ty + 16 * i;
			if (gr < a.rows)
				a.y[o + gr] = bias ? acc[i][j] + bias[gr] : acc[i][j];
		}
	}
}

/* products and heads: grid (row tiles, token tiles, heads) */
template <int T> __global__ void __launch_bounds__(MM_THREADS) k_mm(const mm_args a)
{
	__shared__ int64_t xoff[MM_BN], yoff[MM_BN];
	unsigned z = blockIdx.z;
	int64_t r0 = (int64_t)blockIdx.x * MM_BM, t0 = (int64_t)blockIdx.y * MM_BN;
	if (threadIdx.x < MM_BN) {
		int64_t t = t0 + threadIdx.x;
		xoff[threadIdx.x] = t < a.ntok ? (int64_t)z * a.xz + t * a.xs : -1;
		yoff[threadIdx.x] = t < a.ntok ? (int64_t)z * a.yz + t * a.ys : -1;
	}
	__syncthreads();
	mm_tile<T>(a, a.w + (int64_t)z * a.wz, r0, xoff, yoff, NULL);
}

/* mat_mul_id's batches: grid (row tiles, experts). The block scans the
 * slots in windows of MM_BN, gathers those that chose its expert (in slot
 * order) until a window would overflow the tile, runs the tile, and goes
 * on from that window. The first tile of expert 0 flags ids outside the
 * stack (their rows of y are left as they were). */
template <int T> __global__ void __launch_bounds__(MM_THREADS) k_mm_id(const mm_args a)
{
	__shared__ int64_t xoff[MM_BN], yoff[MM_BN];
	__shared__ int list[MM_BN];
	__shared__ int cnt[2];
	int e = (int)blockIdx.y;
	int64_t r0 = (int64_t)blockIdx.x * MM_BM;
	unsigned tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
	bool checker = e == 0 && blockIdx.x == 0;
	const uint8_t *w = a.w + (int64_t)e * a.wz;
	const float *bias = a.bias ? a.bias + (int64_t)e * a.rows : NULL;
	int64_t cursor = 0;
	while (cursor < a.nslots) {
		int n = 0;
		while (cursor < a.nslots) {
			int64_t s = cursor + tid;
			bool m = false;
			if (tid < MM_BN && s < a.nslots) {
				int id = a.ids[s];
				m = id == e;
				if (checker && (id < 0 || id >= a.n_exp))
					cu_flag(a.status, CUK_MAT_MUL_ID, id);
			}
			unsigned bal = __ballot_sync(0xffffffffu, m);
			if (lane == 0 && warp < 2)
				cnt[warp] = __popc(bal);
			__syncthreads();
			int c0 = cnt[0], total = cnt[0] + cnt[1];
			if (n + total > MM_BN) {
				__syncthreads(); /* cnt is read by all before the next window writes it */
				break;
			}
			if (m)
				list[n + (warp == 1 ? c0 : 0) + __popc(bal & ((1u << lane) - 1u))] = (int)s;
			n += total;
			cursor += MM_BN;
			__syncthreads();
		}
		if (n == 0)
			break;
		if (tid < MM_BN) {
			int64_t s = tid < (unsigned)n ? list[tid] : -1;
			xoff[tid] = s < 0 ? -1 : ((s / a.k) * a.n_x + (a.n_x == 1 ? 0 : s % a.k)) * a.xs;
			yoff[tid] = s < 0 ? -1 : s * a.ys;
		}
		__syncthreads();
		mm_tile<T>(a, w, r0, xoff, yoff, bias);
		__syncthreads(); /* xoff, list are rewritten by the next round */
	}
}

void cu_mm_launch(cuk_ctx *c, uint32_t type, const mm_args &a, unsigned nz)
{
	bool ok = with_weight_type(type, [&](auto tt) {
		constexpr int T = decltype(tt)::value;
		unsigned gx = (unsigned)((a.rows + MM_BM - 1) / MM_BM);
		if (a.ids) {
			auto kern = k_mm_id<T>;
			CU_LAUNCH(kern, dim3(gx, (unsigned)a.n_exp, 1), dim3(MM_THREADS), 0, c->stream, a);
			cu_launched(c, "k_mm_id");
		} else {
			auto kern = k_mm<T>;
			CU_LAUNCH(kern, dim3(gx, (unsigned)((a.ntok + MM_BN - 1) / MM_BN), nz), dim3(MM_THREADS), 0,
				  c->stream, a);
			cu_launched(c, "k_mm");
		}
	});
	if (!ok)
		cu_check(c, cudaErrorInvalidValue, "GEMM: a weight type without a decoder");
}

} // namespace tern_cu
