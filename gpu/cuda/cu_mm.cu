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

/* One K step's operands for a tile, shared by both tiles: the weights of
 * rows r0 .. r0 + MM_BM - 1 decoded (put_w(row, k, value)), the
 * activations of the tile's tokens (put_x(token, k, value)), zeros past
 * the matrix; for Q4_1 / Q5_1 the rows' block minima (ms) and the tokens'
 * block sums (ss) of this step's block of 32. */
template <int T, class PW, class PX>
__device__ __forceinline__ void mm_load(const mm_args &a, const uint8_t *w, int64_t r0, int64_t k0,
					const int64_t *xoff, float *ms, float *ss, const PW &put_w, const PX &put_x)
{
	constexpr int U = qt<T>::unit;
	constexpr bool NOMIN = has_min<T>::value;
	unsigned tid = threadIdx.x;
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
			put_w(rr, kk + j, v[j]);
	}
	for (unsigned i = tid; i < MM_BN * MM_BK; i += MM_THREADS) {
		unsigned jj = i / MM_BK, kk = i % MM_BK;
		int64_t o = xoff[jj];
		put_x(jj, kk, o >= 0 && k0 + kk < a.cols ? a.x[o + k0 + kk] : 0.0f);
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
}

/* The tile of rows r0.. for the tokens whose x rows start at xoff[j] and
 * whose outputs go to y + yoff[j] (-1: no token), n of them. */
template <int T>
__device__ __forceinline__ void mm_tile(const mm_args &a, const uint8_t *w, int64_t r0, const int64_t *xoff,
					const int64_t *yoff, const float *bias)
{
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
		mm_load<T>(a, w, r0, k0, xoff, ms, ss, [&](unsigned r, unsigned k, float v) { ws[k][r] = v; },
			   [&](unsigned t, unsigned k, float v) { xs[k][t] = v; });
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

/* The same tile on tensor cores (nvcuda::wmma, 16 x 16 x 16 f16 products
 * with f32 sums): f16 holds 11 bits where a decoded weight or activation
 * needs f32's 24, so each operand is split into a high and a low half (v =
 * hi + lo, both f16) and a step sums hi.hi + hi.lo + lo.hi: products good
 * to about 2^-22, as the f32 tile's (the Vulkan backend's mul_mm_cm does
 * the same). A block type's weights are scaled by 2^8 before the split
 * (exact) so that the low halves of small weights stay above f16's
 * subnormals, and the sums by 2^-8 after. An activation above 65504
 * overflows f16, as in llama.cpp's f16 GEMMs. The 8 warps each take 16
 * rows by 32 tokens; the Q4_1 / Q5_1 minima terms (one per block of 32)
 * are summed beside them in f32 by each thread, for the 4 x 4 of y it
 * writes; the products go through shared memory to be added to them. */
#define TC_LD (MM_BK + 8) /* halves: wmma wants a multiple of 8 (16 bytes) */

template <int T>
__device__ __forceinline__ void mm_tile_tc(const mm_args &a, const uint8_t *w, int64_t r0, const int64_t *xoff,
					   const int64_t *yoff, const float *bias)
{
	using namespace nvcuda;
	constexpr bool NOMIN = has_min<T>::value;
	constexpr bool BLOCKS = T != T_F32 && T != T_F16 && T != T_BF16;
	const float wscale = BLOCKS ? 256.0f : 1.0f, unscale = BLOCKS ? 1.0f / 256.0f : 1.0f;
	__shared__ __align__(32) half wh[MM_BM * TC_LD], wl[MM_BM * TC_LD];
	__shared__ __align__(32) half xh[MM_BN * TC_LD], xl[MM_BN * TC_LD];
	__shared__ __align__(32) float cs[MM_BM * (MM_BN + 4)];
	__shared__ float ms[MM_BM], ss[MM_BN];
	unsigned tid = threadIdx.x, tx = tid % 16, ty = tid / 16, warp = tid / 32;
	unsigned wr = (warp % 4) * 16, wt = (warp / 4) * 32; /* the warp's rows and tokens in the tile */
	wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[2];
	wmma::fill_fragment(acc[0], 0.0f);
	wmma::fill_fragment(acc[1], 0.0f);
	float macc[4][4]; /* the minima terms of this thread's 4 x 4 */
	for (int i = 0; i < 4; i++)
		for (int j = 0; j < 4; j++)
			macc[i][j] = 0.0f;
	for (int64_t k0 = 0; k0 < a.cols; k0 += MM_BK) {
		/* each value split into its high and low f16 halves */
		mm_load<T>(
			a, w, r0, k0, xoff, ms, ss,
			[&](unsigned r, unsigned k, float v) {
				float f = v * wscale;
				half h = __float2half_rn(f);
				wh[r * TC_LD + k] = h;
				wl[r * TC_LD + k] = __float2half_rn(f - __half2float(h));
			},
			[&](unsigned t, unsigned k, float f) {
				half h = __float2half_rn(f);
				xh[t * TC_LD + k] = h;
				xl[t * TC_LD + k] = __float2half_rn(f - __half2float(h));
			});
		__syncthreads();
		for (int kk = 0; kk < MM_BK; kk += 16) {
			wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> ah, al;
			wmma::load_matrix_sync(ah, wh + wr * TC_LD + kk, TC_LD);
			wmma::load_matrix_sync(al, wl + wr * TC_LD + kk, TC_LD);
			for (int j = 0; j < 2; j++) {
				wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::col_major> bh, bl;
				wmma::load_matrix_sync(bh, xh + (wt + 16 * j) * TC_LD + kk, TC_LD);
				wmma::load_matrix_sync(bl, xl + (wt + 16 * j) * TC_LD + kk, TC_LD);
				wmma::mma_sync(acc[j], al, bh, acc[j]);
				wmma::mma_sync(acc[j], ah, bl, acc[j]);
				wmma::mma_sync(acc[j], ah, bh, acc[j]);
			}
		}
		if constexpr (NOMIN)
			for (int i = 0; i < 4; i++)
				for (int j = 0; j < 4; j++)
					macc[i][j] += ms[ty + 16 * i] * ss[tx + 16 * j];
		__syncthreads();
	}
	for (int j = 0; j < 2; j++) {
		for (int e = 0; e < acc[j].num_elements; e++)
			acc[j].x[e] *= unscale; /* every element alike: the lane order does not matter */
		wmma::store_matrix_sync(cs + wr * (MM_BN + 4) + wt + 16 * j, acc[j], MM_BN + 4, wmma::mem_row_major);
	}
	__syncthreads();
	for (int j = 0; j < 4; j++) {
		int64_t o = yoff[tx + 16 * j];
		if (o < 0)
			continue;
		for (int i = 0; i < 4; i++) {
			int64_t gr = r0 + ty + 16 * i;
			float v = cs[(ty + 16 * i) * (MM_BN + 4) + tx + 16 * j] + macc[i][j];
			if (gr < a.rows)
				a.y[o + gr] = bias ? v + bias[gr] : v;
		}
	}
}

template <int T, bool TC>
__device__ __forceinline__ void mm_tile_any(const mm_args &a, const uint8_t *w, int64_t r0, const int64_t *xoff,
					    const int64_t *yoff, const float *bias)
{
	if constexpr (TC)
		mm_tile_tc<T>(a, w, r0, xoff, yoff, bias);
	else
		mm_tile<T>(a, w, r0, xoff, yoff, bias);
}

/* products and heads: grid (row tiles, token tiles, heads) */
template <int T, bool TC> __global__ void __launch_bounds__(MM_THREADS) k_mm(const mm_args a)
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
	mm_tile_any<T, TC>(a, a.w + (int64_t)z * a.wz, r0, xoff, yoff, NULL);
}

/* mat_mul_id's batches: grid (row tiles, experts). The block scans the
 * slots in windows of MM_BN, gathers those that chose its expert (in slot
 * order) until a window would overflow the tile, runs the tile, and goes
 * on from that window. The first tile of expert 0 flags ids outside the
 * stack (their rows of y are left as they were). */
template <int T, bool TC> __global__ void __launch_bounds__(MM_THREADS) k_mm_id(const mm_args a)
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
		mm_tile_any<T, TC>(a, w, r0, xoff, yoff, bias);
		__syncthreads(); /* xoff, list are rewritten by the next round */
	}
}

void cu_mm_launch(cuk_ctx *c, uint32_t type, const mm_args &a, unsigned nz)
{
	bool ok = with_weight_type(type, [&](auto tt) {
		constexpr int T = decltype(tt)::value;
		unsigned gx = (unsigned)((a.rows + MM_BM - 1) / MM_BM);
		/* tensor cores from Volta on (every target CUDA 13 builds) */
		bool tc = c->cc >= 70 && !c->no_tensor_cores;
		if (a.ids) {
			auto kern = tc ? k_mm_id<T, true> : k_mm_id<T, false>;
			CU_LAUNCH(kern, dim3(gx, (unsigned)a.n_exp, 1), dim3(MM_THREADS), 0, c->stream, a);
			cu_launched(c, "k_mm_id");
		} else {
			auto kern = tc ? k_mm<T, true> : k_mm<T, false>;
			CU_LAUNCH(kern, dim3(gx, (unsigned)((a.ntok + MM_BN - 1) / MM_BN), nz), dim3(MM_THREADS), 0,
				  c->stream, a);
			cu_launched(c, "k_mm");
		}
	});
	if (!ok)
		cu_check(c, cudaErrorInvalidValue, "GEMM: a weight type without a decoder");
}

} // namespace tern_cu
