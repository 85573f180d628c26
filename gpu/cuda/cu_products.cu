/* cu_products.cu - the products (lib/backend.h product, mat_mul_heads,
 * mat_mul_id), get_rows and the decoding copy, over every weight type in
 * its GGUF block layout (the decoders: cu_quant.cuh; nothing is converted
 * at load time).
 *
 * How a product runs: x is quantized to the weight type's activation
 * type on the device (k_actq, exactly as quant/quantize.c: the same
 * scales, the same rounding; decoded back to f32 in the scratch), then
 * up to CU_MV_MAX_TOK tokens go through the mat-vec (cu_mmv.cu: each
 * weight row read once for all of them, several weights of one type in
 * one launch), larger batches through the tiled GEMM (cu_mm.cu). Both sum
 * decoded weights times decoded activations in f32, the Vulkan backend's
 * numerics (gpu/vulkan/vk_products.c): they differ from the reference's
 * double sums by rounding alone, so the tests hold this backend to the
 * CPU's thresholds. Weights of different activation types in one call
 * take turns with one scratch region (the activations quantized again
 * for each kind), so that the scratch is one kind's rows.
 *
 * The integer dot. Where the device has dp4a (sm_61 and up: every device
 * the build targets; cuda_backend_opts.no_int_dot declines it for the
 * tests), the mat-vec of the types cu_dot.cuh knows (cu_int_type) takes
 * the activations in k_actq's int form instead (their int8 levels 4 to a
 * word, the block scales, Q8_1's block sums: cu_prod.cuh) and sums each
 * block, or K-quant sub-block, exactly in int32 before scaling it in f32,
 * as quant/'s SIMD dots do (and the Vulkan backend's dot_int.glsl): no
 * further from the reference than the float path, a quarter of the
 * activations' bytes and a fraction of the arithmetic. The GEMM and the
 * other types keep the float form; a kind's two forms take turns in the
 * scratch as two kinds do. */
#include "gpu/cuda/cu_dot.cuh"
#include "gpu/cuda/cu_prod.cuh"

namespace tern_cu {

/* ---- the activation types ---- */

enum act_kind { ACT_NONE = -1, ACT_Q8_0 = 0, ACT_Q8_1 = 1, ACT_Q8_K = 2 };

/* quant_vec_dot_type (quant/dot.c) */
static int act_of(uint32_t t)
{
	switch (t) {
	case T_Q4_0: case T_Q5_0: case T_Q8_0: case T_IQ4_NL: case T_MXFP4:
		return ACT_Q8_0;
	case T_Q4_1: case T_Q5_1:
		return ACT_Q8_1;
	case T_Q2_K: case T_Q3_K: case T_Q4_K: case T_Q5_K: case T_Q6_K: case T_IQ2_XXS: case T_IQ2_XS:
	case T_IQ2_S: case T_IQ3_XXS: case T_IQ3_S: case T_IQ1_S: case T_IQ1_M: case T_IQ4_XS: case T_TQ1_0:
	case T_TQ2_0:
		return ACT_Q8_K;
	}
	return ACT_NONE;
}

/* words per scratch row of cols: the values (the float form) or the
 * levels 4 a word and the block scales (the int form), then Q8_1's block
 * sums; a multiple of 4, so that rows stay 16-byte aligned for the
 * mat-vec's vector loads */
static int64_t act_stride(int kind, int64_t cols, bool ints = false)
{
	int64_t sums = kind == ACT_Q8_1 ? cols / 32 : 0;
	int64_t n = ints ? cols / 4 + cols / (kind == ACT_Q8_K ? 256 : 32) + sums : cols + sums;
	return (n + 3) & ~(int64_t)3;
}

/* the mat-vec of type t through the integer dot */
static bool use_int(const cuk_ctx *c, uint32_t t) { return c->int_dot && cu_int_type(t); }

/* a quantized value's code as quant/quantize.c's code_of: an infinity
 * or NaN (a block so small that 1/d overflows) is code 0 */
__device__ __forceinline__ int code_of(float v) { return v > -2147483520.0f && v < 2147483520.0f ? (int)v : 0; }

__device__ __forceinline__ int warp_sum_i(int v)
{
	for (int m = 16; m > 0; m >>= 1)
		v += __shfl_xor_sync(0xffffffffu, v, m);
	return v;
}

/* A warp per block of activations (32 values for Q8_0 / Q8_1, 256 for
 * Q8_K), 8 warps a launch block: rows of cols at x (xs floats apart)
 * into rows of act_stride at q, in the float form or (I) the int form. */
template <int K, bool I>
__global__ void __launch_bounds__(256) k_actq(const float *x, int64_t xs, int64_t nrows, int64_t cols, float *q,
					      int64_t qs)
{
	constexpr int BL = K == ACT_Q8_K ? 256 : 32;
	int64_t nb = cols / BL, gw = (int64_t)cu_block_id() * 8 + threadIdx.x / 32;
	unsigned lane = threadIdx.x % 32;
	if (gw >= nrows * nb)
		return; /* the whole warp */
	int64_t row = gw / nb, blk = gw % nb;
	const float *xb = x + row * xs + blk * BL;
	float *qr = q + row * qs, *qb = qr + blk * BL;
	/* the int form: the levels' words, the scales, the sums */
	unsigned *qw = (unsigned *)qr + blk * BL / 4;
	float *qd = qr + cols / 4, *qsum = qd + cols / 32;
	if constexpr (K != ACT_Q8_K) {
		float v = xb[lane];
		float amax = warp_max(fabsf(v));
		float d = amax / 127.0f, id = d != 0.0f ? 1.0f / d : 0.0f;
		int c = (int)(int8_t)code_of(roundf(v * id));
		float dh = __half2float(__float2half_rn(d));
		if constexpr (I) {
			/* lanes 4 i .. 4 i + 3 into word i: disjoint bytes, so the
			 * xors put them together */
			unsigned b = ((unsigned)c & 255u) << (8 * (lane & 3));
			b |= __shfl_xor_sync(0xffffffffu, b, 1);
			b |= __shfl_xor_sync(0xffffffffu, b, 2);
			if (lane % 4 == 0)
				qw[lane / 4] = b;
			if (lane == 0)
				qd[blk] = dh;
		} else {
			qb[lane] = (float)c * dh;
		}
		if constexpr (K == ACT_Q8_1) {
			int sum = warp_sum_i(c);
			if (lane == 0)
				(I ? qsum : qr + cols)[blk] = __half2float(__float2half_rn((float)sum * d));
		}
	} else {
		/* the value of largest magnitude with its sign, the first of
		 * equals (quant/quantize.c signed_absmax): lane l holds 8
		 * consecutive values */
		float v[8], am = 0.0f, mx = 0.0f;
		int idx = 1 << 30;
		for (int j = 0; j < 8; j++) {
			v[j] = xb[8 * lane + j];
			if (fabsf(v[j]) > am) {
				am = fabsf(v[j]);
				mx = v[j];
				idx = 8 * (int)lane + j;
			}
		}
		for (int m = 16; m > 0; m >>= 1) {
			float oam = __shfl_xor_sync(0xffffffffu, am, m), omx = __shfl_xor_sync(0xffffffffu, mx, m);
			int oidx = __shfl_xor_sync(0xffffffffu, idx, m);
			if (oam > am || (oam == am && oidx < idx)) {
				am = oam;
				mx = omx;
				idx = oidx;
			}
		}
		if (am == 0.0f) {
			if constexpr (I) {
				qw[2 * lane] = qw[2 * lane + 1] = 0u;
				if (lane == 0)
					qd[blk] = 0.0f;
			} else {
				for (int j = 0; j < 8; j++)
					qb[8 * lane + j] = 0.0f;
			}
			return;
		}
		float iscale = -127.0f / mx, d = 1.0f / iscale;
		unsigned wq[2] = {0u, 0u};
		for (int j = 0; j < 8; j++) {
			int c = (int)rintf(iscale * v[j]);
			c = c > 127 ? 127 : c;
			if constexpr (I)
				wq[j / 4] |= ((unsigned)c & 255u) << (8 * (j % 4));
			else
				qb[8 * lane + j] = d * (float)(int8_t)c;
		}
		if constexpr (I) {
			/* lane l's 8 levels are words 2 l and 2 l + 1 of the block */
			qw[2 * lane] = wq[0];
			qw[2 * lane + 1] = wq[1];
			if (lane == 0)
				qd[blk] = d;
		}
	}
}

/* rows [0, nrows) of x (xs floats apart) quantized for kind into the
 * scratch (stride act_stride), in the float form or the int form */
template <bool I> static void actq_form(cuk_ctx *c, int kind, const float *x, int64_t xs, int64_t nrows, int64_t cols,
					float *q)
{
	int64_t warps = nrows * (cols / (kind == ACT_Q8_K ? 256 : 32));
	dim3 grid = cu_grid((uint64_t)(warps + 7) / 8);
	int64_t qs = act_stride(kind, cols, I);
	auto kern = kind == ACT_Q8_0   ? k_actq<ACT_Q8_0, I>
		    : kind == ACT_Q8_1 ? k_actq<ACT_Q8_1, I>
				       : k_actq<ACT_Q8_K, I>;
	CU_LAUNCH(kern, grid, dim3(256), 0, c->stream, x, xs, nrows, cols, q, qs);
	cu_launched(c, "k_actq");
}

static void actq(cuk_ctx *c, int kind, bool ints, const float *x, int64_t xs, int64_t nrows, int64_t cols, float *q)
{
	if (ints)
		actq_form<true>(c, kind, x, xs, nrows, cols, q);
	else
		actq_form<false>(c, kind, x, xs, nrows, cols, q);
}

/* ---- get_rows and the decoding copy: a thread per unit ---- */

template <int T>
__global__ void __launch_bounds__(256) k_get_rows(const uint8_t *w, int64_t nb1, int64_t nrows, int64_t cols,
						  const int32_t *ids, int64_t ntok, float *y, int64_t ys, int *status)
{
	constexpr int U = qt<T>::unit;
	int64_t units = cols / U, g = (int64_t)cu_block_id() * blockDim.x + threadIdx.x;
	if (g >= ntok * units)
		return;
	int64_t t = g / units, e = g % units * U;
	int r = ids[t];
	if (r < 0 || r >= nrows) {
		if (e == 0)
			cu_flag(status, CUK_GET_ROWS, r);
		return; /* the row of y is left as it was */
	}
	float v[U];
	decu<T>(w + r * nb1, e, v);
	for (int j = 0; j < U; j++)
		y[t * ys + e + j] = v[j];
}

/* src rows (r % ne1, r / ne1 % ne2, r / (ne1 ne2)) through their byte
 * strides, dst likewise: either side may be a column window */
struct copy_args {
	const uint8_t *s;
	uint8_t *d;
	int64_t cols, nrows, ne1, ne2;
	int64_t snb1, snb2, snb3, dnb1, dnb2, dnb3;
};

template <int T> __global__ void __launch_bounds__(256) k_copy_dequant(const copy_args a)
{
	constexpr int U = qt<T>::unit;
	int64_t units = a.cols / U, g = (int64_t)cu_block_id() * blockDim.x + threadIdx.x;
	if (g >= a.nrows * units)
		return;
	int64_t r = g / units, e = g % units * U;
	int64_t i1 = r % a.ne1, i2 = r / a.ne1 % a.ne2, i3 = r / (a.ne1 * a.ne2);
	float v[U];
	decu<T>(a.s + i1 * a.snb1 + i2 * a.snb2 + i3 * a.snb3, e, v);
	float *d = (float *)(a.d + i1 * a.dnb1 + i2 * a.dnb2 + i3 * a.dnb3);
	for (int j = 0; j < U; j++)
		d[e + j] = v[j];
}

static void get_rows(cuk_ctx *c, const cuk_op *op)
{
	const cuk_t &w = op->t[0], &ids = op->t[1], &y = op->t[2];
	int64_t cols = w.ne[0], ntok = ids.ne[0];
	bool ok = with_row_type(w.type, [&](auto tt) {
		constexpr int T = decltype(tt)::value;
		uint64_t n = (uint64_t)(ntok * (cols / qt<T>::unit));
		auto kern = k_get_rows<T>;
		CU_LAUNCH(kern, cu_grid((n + 255) / 256), dim3(256), 0, c->stream, (const uint8_t *)w.p, w.nb[1],
			  w.ne[1] * w.ne[2] * w.ne[3], cols, (const int32_t *)ids.p, ntok, (float *)y.p, y.nb[1] / 4,
			  c->status);
		cu_launched(c, "k_get_rows");
	});
	if (!ok)
		cu_check(c, cudaErrorInvalidValue, "get_rows: a type without a decoder");
}

/* ---- the products ---- */

/* The activations of nrows rows of x (xs floats apart) as products of
 * weight type t read them: the scratch after k_actq (the int form when
 * ints), or x itself for the float types. NULL when the scratch is
 * missing (recorded). */
static const float *activations(cuk_ctx *c, uint32_t t, bool ints, const float *x, int64_t xs, int64_t nrows,
				int64_t cols, int64_t *stride)
{
	int kind = act_of(t);
	if (kind == ACT_NONE) {
		*stride = xs;
		return x;
	}
	*stride = act_stride(kind, cols, ints);
	float *q = (float *)cu_scratch(c, (size_t)(nrows * *stride) * 4);
	if (q)
		actq(c, kind, ints, x, xs, nrows, cols, q);
	return q;
}

static void product(cuk_ctx *c, const cuk_op *op)
{
	int n_w = op->u.product.n_w;
	const cuk_t &x = op->t[4];
	int64_t cols = x.ne[0], ntok = x.ne[1];
	bool done[4] = {false, false, false, false};
	bool mv = ntok <= CU_MV_MAX_TOK;
	for (int i = 0; i < n_w; i++) {
		if (done[i])
			continue;
		/* the weights of this one's activation kind and form: quantized
		 * once; in the mat-vec, those of one type in one launch */
		int kind = act_of(op->t[i].type);
		bool ints = mv && use_int(c, op->t[i].type);
		int64_t xs;
		const float *a = activations(c, op->t[i].type, ints, (const float *)x.p, x.nb[1] / 4, ntok, cols, &xs);
		if (!a)
			return;
		for (int j = i; j < n_w; j++) {
			if (done[j] || act_of(op->t[j].type) != kind || (mv && use_int(c, op->t[j].type)) != ints)
				continue;
			const cuk_t &w = op->t[j];
			if (mv) {
				mv_args m;
				memset(&m, 0, sizeof m);
				m.ntok = (int)ntok;
				m.cols = cols;
				m.x = a;
				m.xs = xs;
				m.sofs = cols;
				m.ints = ints;
				for (int g = j; g < n_w && m.n_w < 4; g++) {
					if (done[g] || op->t[g].type != w.type)
						continue;
					const cuk_t &y = op->t[5 + g];
					m.w[m.n_w++] = mv_w{(const uint8_t *)op->t[g].p, (float *)y.p, op->t[g].ne[1],
							    op->t[g].nb[1], y.nb[1] / 4};
					done[g] = true;
				}
				cu_mmv_launch(c, w.type, m, 1);
			} else {
				const cuk_t &y = op->t[5 + j];
				mm_args m;
				memset(&m, 0, sizeof m);
				m.w = (const uint8_t *)w.p;
				m.rows = w.ne[1];
				m.cols = cols;
				m.nb1 = w.nb[1];
				m.x = a;
				m.xs = xs;
				m.sofs = cols;
				m.y = (float *)y.p;
				m.ys = y.nb[1] / 4;
				m.ntok = ntok;
				cu_mm_launch(c, w.type, m, 1);
				done[j] = true;
			}
		}
	}
}

/* y[t][h] = w[h] x[t][h]: x {cols, nh, ntok}, y {rows, nh, ntok} */
static void mat_mul_heads(cuk_ctx *c, const cuk_op *op)
{
	const cuk_t &w = op->t[0], &x = op->t[1], &y = op->t[2];
	int64_t cols = w.ne[0], rows = w.ne[1], nh = w.ne[2], ntok = x.ne[2];
	int64_t xs;
	bool mv = ntok <= CU_MV_MAX_TOK, ints = mv && use_int(c, w.type);
	/* token t's head h is activation row t nh + h */
	const float *a = activations(c, w.type, ints, (const float *)x.p, x.nb[1] / 4, ntok * nh, cols, &xs);
	if (!a)
		return;
	if (mv) {
		mv_args m;
		memset(&m, 0, sizeof m);
		m.ints = ints;
		m.n_w = 1;
		m.w[0] = mv_w{(const uint8_t *)w.p, (float *)y.p, rows, w.nb[1], nh * rows};
		m.ntok = (int)ntok;
		m.cols = cols;
		m.x = a;
		m.xs = nh * xs;
		m.sofs = cols;
		m.wz = w.nb[2];
		m.xz = xs;
		m.yz = rows;
		cu_mmv_launch(c, w.type, m, (unsigned)nh);
		return;
	}
	mm_args m;
	memset(&m, 0, sizeof m);
	m.w = (const uint8_t *)w.p;
	m.rows = rows;
	m.cols = cols;
	m.nb1 = w.nb[1];
	m.x = a;
	m.xs = nh * xs;
	m.sofs = cols;
	m.y = (float *)y.p;
	m.ys = nh * rows;
	m.ntok = ntok;
	m.wz = w.nb[2];
	m.xz = xs;
	m.yz = rows;
	cu_mm_launch(c, w.type, m, (unsigned)nh);
}

/* y[t][i] = w[ids[t][i]] x[t][i or 0] (+ b[e]): w {cols, rows, n_exp}, x
 * {cols, n_x, ntok}, ids {k, ntok}, y {rows, k, ntok} */
static void mat_mul_id(cuk_ctx *c, const cuk_op *op)
{
	const cuk_t &w = op->t[0], &x = op->t[1], &ids = op->t[2], &b = op->t[3], &y = op->t[4];
	int64_t cols = w.ne[0], rows = w.ne[1], n_exp = w.ne[2], n_x = x.ne[1], k = ids.ne[0], ntok = ids.ne[1];
	int64_t xs;
	bool mv = ntok <= CU_MV_MAX_TOK, ints = mv && use_int(c, w.type);
	const float *a = activations(c, w.type, ints, (const float *)x.p, x.nb[1] / 4, ntok * n_x, cols, &xs);
	if (!a)
		return;
	if (mv) {
		/* a mat-vec per slot (grid z) */
		mv_args m;
		memset(&m, 0, sizeof m);
		m.ints = ints;
		m.n_w = 1;
		m.w[0] = mv_w{(const uint8_t *)w.p, (float *)y.p, rows, w.nb[1], 0};
		m.ntok = 1;
		m.cols = cols;
		m.x = a;
		m.sofs = cols;
		m.wz = w.nb[2];
		m.xz = xs;
		m.yz = y.nb[1] / 4;
		m.ids = (const int32_t *)ids.p;
		m.k = (int)k;
		m.n_x = (int)n_x;
		m.n_exp = (int)n_exp;
		m.bias = (const float *)b.p;
		m.status = c->status;
		cu_mmv_launch(c, w.type, m, (unsigned)(k * ntok));
		return;
	}
	mm_args m;
	memset(&m, 0, sizeof m);
	m.w = (const uint8_t *)w.p;
	m.rows = rows;
	m.cols = cols;
	m.nb1 = w.nb[1];
	m.x = a;
	m.xs = xs;
	m.sofs = cols;
	m.y = (float *)y.p;
	m.ys = y.nb[1] / 4;
	m.wz = w.nb[2];
	m.ids = (const int32_t *)ids.p;
	m.k = (int)k;
	m.n_x = (int)n_x;
	m.n_exp = (int)n_exp;
	m.nslots = k * ntok;
	m.bias = (const float *)b.p;
	m.status = c->status;
	cu_mm_launch(c, w.type, m, 1);
}

void cu_run_products(cuk_ctx *c, const cuk_op *op)
{
	switch (op->kind) {
	case CUK_PRODUCT:
		product(c, op);
		break;
	case CUK_MAT_MUL_HEADS:
		mat_mul_heads(c, op);
		break;
	case CUK_MAT_MUL_ID:
		mat_mul_id(c, op);
		break;
	case CUK_GET_ROWS:
		get_rows(c, op);
		break;
	default:
		cu_check(c, cudaErrorInvalidValue, "products: not a product");
	}
}

size_t cu_products_scratch(const cuk_op *op)
{
	switch (op->kind) {
	case CUK_PRODUCT: {
		/* the kinds take turns: the largest one's rows */
		size_t most = 0;
		for (int i = 0; i < op->u.product.n_w; i++) {
			size_t s = cu_products_scratch_for(op->t[i].type, op->t[4].ne[0], op->t[4].ne[1]);
			most = s > most ? s : most;
		}
		return most;
	}
	case CUK_MAT_MUL_HEADS:
		return cu_products_scratch_for(op->t[0].type, op->t[0].ne[0], op->t[1].ne[1] * op->t[1].ne[2]);
	case CUK_MAT_MUL_ID:
		return cu_products_scratch_for(op->t[0].type, op->t[0].ne[0], op->t[1].ne[1] * op->t[1].ne[2]);
	default:
		return 0;
	}
}

size_t cu_products_scratch_for(uint32_t type, int64_t cols, int64_t ntok)
{
	int kind = act_of(type);
	return kind == ACT_NONE ? 0 : (size_t)(act_stride(kind, cols) * ntok) * 4;
}

void cu_copy_dequant(cuk_ctx *c, const cuk_op *op)
{
	const cuk_t &s = op->t[0], &d = op->t[1];
	copy_args a = {(const uint8_t *)s.p, (uint8_t *)d.p, s.ne[0], s.ne[1] * s.ne[2] * s.ne[3], s.ne[1], s.ne[2],
		       s.nb[1], s.nb[2], s.nb[3], d.nb[1], d.nb[2], d.nb[3]};
	bool ok = d.type == T_F32 && with_row_type(s.type, [&](auto tt) {
			  constexpr int T = decltype(tt)::value;
			  uint64_t n = (uint64_t)(a.nrows * (a.cols / qt<T>::unit));
			  auto kern = k_copy_dequant<T>;
			  CU_LAUNCH(kern, cu_grid((n + 255) / 256), dim3(256), 0, c->stream, a);
			  cu_launched(c, "k_copy_dequant");
		  });
	if (!ok)
		cu_check(c, cudaErrorInvalidValue, "copy: a type without a decoder");
}

bool cu_products_type_ok(uint32_t type)
{
	/* the weight types, and what get_rows and copy decode besides
	 * (Q8_1, Q8_K: cu_backend.c's get_rows asks this; mat_prepare
	 * asks quant_is_weight_type first) */
	return with_row_type(type, [](auto) {}) && type != T_I32;
}

} // namespace tern_cu
