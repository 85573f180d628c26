/* cu_eltwise.cu - the CUDA backend's ops that are not products or
 * attention: add, scale, the GLUs and activations, softmax, norm (with
 * the fused residual add), rope, norm_rope, im2col and copy. The
 * arithmetic is the Vulkan backend's (gpu/vulkan/shaders: eltwise, norm,
 * rope, norm_rope, copy), f32 throughout, so that both GPU backends hold
 * to the CPU reference's bounds alike; norm_rope shares norm's statistics
 * and rope's angles (the device functions below, the same block size) and
 * so gives their bits. */
#include "gpu/cuda/cu_impl.cuh"

extern "C" {
#include "quant/types.h"
}

namespace tern_cu {

/* ---- element-wise ---- */

enum { EW_ADD, EW_SCALE, EW_SWIGLU, EW_GEGLU, EW_SWIGLU_OAI, EW_GELU, EW_GELU_ERF, EW_SILU, EW_SIGMOID };

/* 0.5 x (1 + tanh u) = x / (1 + e^(-2u)): no cancellation where tanh nears -1 */
__device__ __forceinline__ float gelu_tanh(float x)
{
	float u = 0.7978845608028654f * (x + 0.044715f * x * x * x);
	return x / (1.0f + expf(fminf(-2.0f * u, 88.0f)));
}

__device__ __forceinline__ float act(int op, float x)
{
	switch (op) {
	case EW_GELU:
		return gelu_tanh(x);
	case EW_GELU_ERF:
		return 0.5f * x * (1.0f + erff(x * 0.7071067811865476f));
	case EW_SIGMOID:
		return 1.0f / (1.0f + expf(-x));
	default: /* EW_SILU */
		return x / (1.0f + expf(-x));
	}
}

__global__ void k_eltwise(int op, uint64_t n, uint64_t ne0, bool b_row, const float *a, const float *b, float *y,
			  float s)
{
	uint64_t i = cu_block_id() * blockDim.x + threadIdx.x;
	if (i >= n)
		return;
	float x = a[i], r;
	switch (op) {
	case EW_ADD:
		r = x + b[b_row ? i % ne0 : i];
		break;
	case EW_SCALE:
		r = x * s;
		break;
	case EW_SWIGLU:
		r = act(EW_SILU, x) * b[i];
		break;
	case EW_GEGLU:
		r = gelu_tanh(x) * b[i];
		break;
	case EW_SWIGLU_OAI: {
		float g = fminf(x, 7.0f), u = fminf(fmaxf(b[i], -7.0f), 7.0f);
		r = g / (1.0f + expf(-1.702f * g)) * (u + 1.0f);
		break;
	}
	default:
		r = act(op, x);
		break;
	}
	y[i] = r;
}

static int64_t nrows(const cuk_t &t) { return t.ne[1] * t.ne[2] * t.ne[3]; }

static void eltwise(cuk_ctx *c, int op, const cuk_t &a, const cuk_t *b, const cuk_t &y, float s)
{
	uint64_t n = (uint64_t)a.ne[0] * (uint64_t)nrows(a);
	bool b_row = b && b->p && nrows(*b) == 1 && nrows(a) > 1;
	const float *bp = b && b->p ? (const float *)b->p : (const float *)a.p;
	CU_LAUNCH(k_eltwise, cu_grid((n + 255) / 256), dim3(256), 0, c->stream, op, n, (uint64_t)a.ne[0], b_row,
		  (const float *)a.p, bp, (float *)y.p, s);
	cu_launched(c, "eltwise");
}

/* ---- softmax: a block per row ---- */

__global__ void k_softmax(int64_t ne0, uint64_t rows, const float *x, float *y)
{
	__shared__ float sh[32];
	uint64_t row = cu_block_id();
	if (row >= rows)
		return;
	const float *xr = x + row * ne0;
	float *yr = y + row * ne0;
	float m = -INFINITY;
	for (int64_t i = threadIdx.x; i < ne0; i += blockDim.x)
		m = fmaxf(m, xr[i]);
	m = block_max(m, sh);
	float s = 0;
	for (int64_t i = threadIdx.x; i < ne0; i += blockDim.x)
		s += expf(xr[i] - m);
	s = block_sum(s, sh);
	float inv = 1.0f / s;
	/* y may be x: every thread reads only what it writes from here on */
	for (int64_t i = threadIdx.x; i < ne0; i += blockDim.x)
		yr[i] = expf(xr[i] - m) * inv;
}

/* ---- argmax: a block per row ---- */

/* (value, index) a over b: larger, or equal and lower; index -1 is none */
__device__ __forceinline__ bool am_better(float bv, int bi, float av, int ai)
{
	return bi >= 0 && (ai < 0 || bv > av || (bv == av && bi < ai));
}

/* ids[r]: lib/backend.h's rule (+inf as the largest finite float, NaN and
 * -inf never win, the lower index of equals; -1 for none) */
__global__ void k_argmax(int64_t ne0, uint64_t rows, const float *x, int *ids)
{
	__shared__ float sv[32];
	__shared__ int si[32];
	uint64_t row = cu_block_id();
	if (row >= rows)
		return;
	const float *xr = x + row * ne0;
	float best = -INFINITY;
	int at = -1;
	for (int64_t i = threadIdx.x; i < ne0; i += blockDim.x) {
		float v = xr[i];
		if (v > 3.402823466e38f)
			v = 3.402823466e38f;
		if (v > best) { /* NaN compares false */
			best = v;
			at = (int)i;
		}
	}
	for (int m = 16; m > 0; m >>= 1) {
		float ov = __shfl_xor_sync(0xffffffffu, best, m);
		int oi = __shfl_xor_sync(0xffffffffu, at, m);
		if (am_better(ov, oi, best, at)) {
			best = ov;
			at = oi;
		}
	}
	if (threadIdx.x % 32 == 0) {
		sv[threadIdx.x / 32] = best;
		si[threadIdx.x / 32] = at;
	}
	__syncthreads();
	if (threadIdx.x >= 32)
		return;
	unsigned nw = blockDim.x / 32;
	best = threadIdx.x < nw ? sv[threadIdx.x] : -INFINITY;
	at = threadIdx.x < nw ? si[threadIdx.x] : -1;
	for (int m = 16; m > 0; m >>= 1) {
		float ov = __shfl_xor_sync(0xffffffffu, best, m);
		int oi = __shfl_xor_sync(0xffffffffu, at, m);
		if (am_better(ov, oi, best, at)) {
			best = ov;
			at = oi;
		}
	}
	if (threadIdx.x == 0)
		ids[row] = at;
}

/* ---- norm: the statistics of a row, shared with norm_rope ---- */

/* The row's mean (layer norm) and 1 / sqrt(var + eps), summed by the
 * block in one fixed order: ld(i) is element i (after any residual). */
template <class L> __device__ __forceinline__ float2 norm_stats(const L &ld, int64_t n, bool layer, float eps, float *sh)
{
	float mean = 0;
	if (layer) {
		float s = 0;
		for (int64_t i = threadIdx.x; i < n; i += blockDim.x)
			s += ld(i);
		mean = block_sum(s, sh) / (float)n;
	}
	float sq = 0;
	for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
		float v = ld(i) - mean;
		sq += v * v;
	}
	float inv = rsqrtf(block_sum(sq, sh) / (float)n + eps);
	return make_float2(mean, inv);
}

/* a row's block: 64 threads for a head's Q/K norm, 256 for a model's rows */
static unsigned norm_threads(int64_t ne0) { return ne0 <= 256 ? 64u : 256u; }

struct row_in {
	const float *x, *r;
	__device__ float operator()(int64_t i) const { return r ? x[i] + r[i] : x[i]; }
};

__global__ void k_norm(int64_t ne0, uint64_t rows, float *x, const float *r, const float *w, const float *b, float *y,
		       bool layer, float eps)
{
	__shared__ float sh[32];
	uint64_t row = cu_block_id();
	if (row >= rows)
		return;
	float *xr = x + row * ne0, *yr = y + row * ne0;
	const float *rr = r ? r + row * ne0 : nullptr;
	row_in ld = {xr, rr};
	float2 st = norm_stats(ld, ne0, layer, eps, sh);
	/* each thread writes only its own elements, which it alone reads from here on */
	for (int64_t i = threadIdx.x; i < ne0; i += blockDim.x) {
		float v = ld(i);
		if (rr)
			xr[i] = v;
		v = (v - st.x) * st.y;
		if (w)
			v *= w[i];
		if (b)
			v += b[i];
		yr[i] = v;
	}
}

/* ---- rope: the angle of a pair and its turn, shared with norm_rope ---- */

struct rope_k {
	float theta_scale, freq_scale, ext_factor, corr_low, corr_high, mag;
	int n_rot;
	bool neox;
};

static rope_k rope_of(const cuk_rope &r)
{
	rope_k k;
	k.theta_scale = powf(r.freq_base, -2.0f / (float)r.n_rot);
	k.freq_scale = r.freq_scale;
	k.ext_factor = r.ext_factor;
	k.corr_low = r.corr_low;
	k.corr_high = r.corr_high;
	k.mag = (r.mscale > 0 ? r.mscale : 1.0f) * (r.attn_factor > 0 ? r.attn_factor : 1.0f);
	k.n_rot = r.n_rot;
	k.neox = r.mode == ROPE_NEOX;
	return k;
}

/* (cos, sin) of pair j at position p, times the magnitude: the angle as
 * llama.cpp computes it in f32 (pos * theta_scale^j by j products), reduced
 * to [-pi, pi] (Cody-Waite, 2 pi in two parts) before sin and cos */
__device__ __forceinline__ float2 rope_cs(const rope_k &rp, int p, int j, const float *freq)
{
	float e = (float)p;
	for (int k = 0; k < j; k++)
		e *= rp.theta_scale;
	if (freq)
		e /= freq[j];
	float th = rp.freq_scale * e;
	if (rp.ext_factor > 0.0f) {
		float y = ((float)j - rp.corr_low) / fmaxf(0.001f, rp.corr_high - rp.corr_low);
		float r = rp.ext_factor * (1.0f - fminf(1.0f, fmaxf(0.0f, y)));
		th = th * (1.0f - r) + e * r;
	}
	float k = rintf(th * 0.15915494309189535f);
	th = (th - k * 6.28125f) - k * 0.0019353071795864769f;
	return make_float2(cosf(th) * rp.mag, sinf(th) * rp.mag);
}

__device__ __forceinline__ int2 rope_pair(int j, int half_, bool neox)
{
	return neox ? make_int2(j, j + half_) : make_int2(2 * j, 2 * j + 1);
}

__global__ void k_rope(int64_t hd, int64_t nh, int64_t ntok, rope_k rp, float *x, const int *pos, const float *freq)
{
	int half_ = rp.n_rot / 2;
	uint64_t i = cu_block_id() * blockDim.x + threadIdx.x;
	if (i >= (uint64_t)half_ * nh * ntok)
		return;
	int j = (int)(i % half_);
	uint64_t h = i / half_ % nh, t = i / ((uint64_t)half_ * nh);
	float2 cs = rope_cs(rp, pos[t], j, freq);
	float *xh = x + (t * nh + h) * hd;
	int2 e = rope_pair(j, half_, rp.neox);
	float a = xh[e.x], b = xh[e.y];
	xh[e.x] = a * cs.x - b * cs.y;
	xh[e.y] = a * cs.y + b * cs.x;
}

/* Q's heads of token t, then its K heads: a block per head, norm's block
 * size for norm's sums */
struct head_in {
	const float *h;
	__device__ float operator()(int64_t i) const { return h[i]; }
};

__global__ void k_norm_rope(int64_t hd, int64_t nhq, int64_t nhk, int64_t ntok, float *q, float *k, const float *qw,
			    const float *kw, const int *pos, const float *freq, bool layer, float eps, rope_k rp)
{
	__shared__ float sh[32];
	int64_t nh = nhq + nhk;
	uint64_t g = cu_block_id();
	if (g >= (uint64_t)(nh * ntok))
		return;
	int64_t t = (int64_t)(g / nh), h = (int64_t)(g % nh);
	bool is_k = h >= nhq;
	float *x = is_k ? k + (t * nhk + h - nhq) * hd : q + (t * nhq + h) * hd;
	const float *w = is_k ? kw : qw;
	float mean = 0, inv = 1;
	if (w) { /* the same for the whole block */
		head_in ld = {x};
		float2 st = norm_stats(ld, hd, layer, eps, sh);
		mean = st.x;
		inv = st.y;
		/* the pairs below are not the elements each thread summed:
		 * every read of the row is done before any write */
		__syncthreads();
	}
	int half_ = rp.n_rot / 2, p = pos[t];
	for (int j = threadIdx.x; j < half_; j += blockDim.x) {
		int2 e = rope_pair(j, half_, rp.neox);
		float a = x[e.x], b = x[e.y];
		if (w) { /* as k_norm's y: (x - mean) * inv * w */
			a = (a - mean) * inv;
			a *= w[e.x];
			b = (b - mean) * inv;
			b *= w[e.y];
		}
		float2 cs = rope_cs(rp, p, j, freq);
		x[e.x] = a * cs.x - b * cs.y;
		x[e.y] = a * cs.y + b * cs.x;
	}
	/* the dimensions past the rotated ones: normed only */
	if (w)
		for (int64_t i = rp.n_rot + threadIdx.x; i < hd; i += blockDim.x) {
			float v = (x[i] - mean) * inv;
			v *= w[i];
			x[i] = v;
		}
}

/* ---- im2col ---- */

__global__ void k_im2col(int64_t n_ch, int64_t len, int64_t n_out, int k, int stride, int pad, const float *x, float *y)
{
	int64_t row = n_ch * k;
	uint64_t i = cu_block_id() * blockDim.x + threadIdx.x;
	if (i >= (uint64_t)(row * n_out))
		return;
	int64_t t = (int64_t)(i / row), ch = (int64_t)(i % row) / k, j = (int64_t)(i % k);
	int64_t s = t * stride + j - pad;
	y[i] = s >= 0 && s < len ? x[s * n_ch + ch] : 0.0f;
}

/* ---- copy ---- */

enum { CP_BYTES, CP_F32, CP_F32_F16, CP_F32_BF16, CP_F16_F32, CP_BF16_F32, CP_F32_Q8_0, CP_Q8_0_F32 };

struct cp_geom {
	int64_t per, rows; /* units per row (elements, bytes, q8_0 blocks), rows */
	int64_t s_ne1, s_ne2, d_ne1, d_ne2;
	int64_t s_nb1, s_nb2, s_nb3, d_nb1, d_nb2, d_nb3;
};

__device__ __forceinline__ int64_t row_off(int64_t r, int64_t ne1, int64_t ne2, int64_t nb1, int64_t nb2, int64_t nb3)
{
	return (r % ne1) * nb1 + (r / ne1 % ne2) * nb2 + (r / (ne1 * ne2)) * nb3;
}

/* f32 -> bf16, round to nearest even, NaN kept quiet (quant/'s rule) */
__device__ __forceinline__ uint16_t f2bf(float f)
{
	uint32_t u = __float_as_uint(f);
	return (u & 0x7fffffffu) > 0x7f800000u ? (uint16_t)((u >> 16) | 64u) : (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

__device__ __forceinline__ float h2f(uint16_t h) { return __half2float(__ushort_as_half(h)); }

__global__ void k_copy(int conv, cp_geom g, const uint8_t *src, uint8_t *dst)
{
	uint64_t i = cu_block_id() * blockDim.x + threadIdx.x;
	if (i >= (uint64_t)(g.per * g.rows))
		return;
	int64_t r = (int64_t)(i / g.per), e = (int64_t)(i % g.per);
	const uint8_t *s = src + row_off(r, g.s_ne1, g.s_ne2, g.s_nb1, g.s_nb2, g.s_nb3);
	uint8_t *d = dst + row_off(r, g.d_ne1, g.d_ne2, g.d_nb1, g.d_nb2, g.d_nb3);
	switch (conv) {
	case CP_BYTES:
		d[e] = s[e];
		break;
	case CP_F32:
		((float *)d)[e] = ((const float *)s)[e];
		break;
	case CP_F32_F16:
		((__half *)d)[e] = __float2half_rn(((const float *)s)[e]);
		break;
	case CP_F32_BF16:
		((uint16_t *)d)[e] = f2bf(((const float *)s)[e]);
		break;
	case CP_F16_F32:
		((float *)d)[e] = h2f(((const uint16_t *)s)[e]);
		break;
	case CP_BF16_F32:
		((float *)d)[e] = __uint_as_float((uint32_t)((const uint16_t *)s)[e] << 16);
		break;
	case CP_F32_Q8_0: { /* quant/quantize.c's encoding of block e */
		const float *x = (const float *)s + e * 32;
		float amax = 0;
		for (int j = 0; j < 32; j++)
			amax = fmaxf(amax, fabsf(x[j]));
		float dd = amax / 127.0f, id = dd != 0.0f ? 1.0f / dd : 0.0f;
		uint8_t *b = d + e * 34;
		__half hd = __float2half_rn(dd);
		memcpy(b, &hd, 2);
		for (int j = 0; j < 32; j++)
			b[2 + j] = (uint8_t)(int8_t)roundf(x[j] * id);
		break;
	}
	default: { /* CP_Q8_0_F32 */
		const uint8_t *b = s + (e / 32) * 34;
		uint16_t hd;
		memcpy(&hd, b, 2);
		((float *)d)[e] = h2f(hd) * (float)(int8_t)b[2 + e % 32];
		break;
	}
	}
}

static void copy(cuk_ctx *c, const cuk_op *op)
{
	const cuk_t &s = op->t[0], &d = op->t[1];
	uint32_t st = s.type, dt = d.type;
	int conv;
	int64_t ne0 = s.ne[0], per;
	if (st == dt && st != T_F32) {
		conv = CP_BYTES;
		per = (int64_t)quant_row_size(st, (uint64_t)ne0, nullptr);
	} else if (st == T_F32 && dt == T_F32) {
		conv = CP_F32, per = ne0;
	} else if (st == T_F32 && dt == T_F16) {
		conv = CP_F32_F16, per = ne0;
	} else if (st == T_F32 && dt == T_BF16) {
		conv = CP_F32_BF16, per = ne0;
	} else if (st == T_F32 && dt == T_Q8_0) {
		conv = CP_F32_Q8_0, per = ne0 / 32;
	} else if (dt == T_F32 && st == T_F16) {
		conv = CP_F16_F32, per = ne0;
	} else if (dt == T_F32 && st == T_BF16) {
		conv = CP_BF16_F32, per = ne0;
	} else if (dt == T_F32 && st == T_Q8_0) {
		conv = CP_Q8_0_F32, per = ne0;
	} else {
		cu_copy_dequant(c, op);
		return;
	}
	cp_geom g = {per, nrows(s), s.ne[1], s.ne[2], d.ne[1], d.ne[2], s.nb[1], s.nb[2], s.nb[3], d.nb[1], d.nb[2], d.nb[3]};
	uint64_t n = (uint64_t)per * (uint64_t)g.rows;
	CU_LAUNCH(k_copy, cu_grid((n + 255) / 256), dim3(256), 0, c->stream, conv, g, (const uint8_t *)s.p, (uint8_t *)d.p);
	cu_launched(c, "copy");
}

/* ---- the family's entry ---- */

void cu_run_eltwise(cuk_ctx *c, const cuk_op *op)
{
	const cuk_t *t = op->t;
	switch (op->kind) {
	case CUK_ADD:
		eltwise(c, EW_ADD, t[0], &t[1], t[2], 0);
		break;
	case CUK_SCALE:
		eltwise(c, EW_SCALE, t[0], nullptr, t[1], op->u.scale.s);
		break;
	case CUK_GLU:
		eltwise(c, op->u.glu.kind == GLU_SWIGLU ? EW_SWIGLU : op->u.glu.kind == GLU_GEGLU ? EW_GEGLU : EW_SWIGLU_OAI,
			t[0], &t[1], t[2], 0);
		break;
	case CUK_UNARY: {
		int k = op->u.unary.kind;
		eltwise(c, k == UNARY_GELU ? EW_GELU : k == UNARY_GELU_ERF ? EW_GELU_ERF : k == UNARY_SILU ? EW_SILU : EW_SIGMOID,
			t[0], nullptr, t[1], 0);
		break;
	}
	case CUK_SOFTMAX: {
		uint64_t rows = (uint64_t)nrows(t[0]);
		CU_LAUNCH(k_softmax, cu_grid(rows), dim3(256), 0, c->stream, t[0].ne[0], rows, (const float *)t[0].p,
			  (float *)t[1].p);
		cu_launched(c, "softmax");
		break;
	}
	case CUK_NORM: {
		uint64_t rows = (uint64_t)nrows(t[0]);
		CU_LAUNCH(k_norm, cu_grid(rows), dim3(norm_threads(t[0].ne[0])), 0, c->stream, t[0].ne[0], rows, (float *)t[0].p,
			  (const float *)t[1].p, (const float *)t[2].p, (const float *)t[3].p, (float *)t[4].p,
			  op->u.norm.n.kind == NORM_LAYER, op->u.norm.n.eps);
		cu_launched(c, "norm");
		break;
	}
	case CUK_ROPE: {
		rope_k rp = rope_of(op->u.rope.r);
		int64_t ntok = t[0].ne[2] * t[0].ne[3];
		uint64_t n = (uint64_t)(rp.n_rot / 2) * (uint64_t)t[0].ne[1] * (uint64_t)ntok;
		CU_LAUNCH(k_rope, cu_grid((n + 255) / 256), dim3(256), 0, c->stream, t[0].ne[0], t[0].ne[1], ntok, rp,
			  (float *)t[0].p, (const int *)t[1].p, (const float *)t[2].p);
		cu_launched(c, "rope");
		break;
	}
	case CUK_NORM_ROPE: {
		const cuk_t &q = t[0], &k = t[1];
		rope_k rp = rope_of(op->u.norm_rope.r);
		int64_t ntok = q.ne[2] * q.ne[3], nhk = k.p ? k.ne[1] : 0;
		CU_LAUNCH(k_norm_rope, cu_grid((uint64_t)((q.ne[1] + nhk) * ntok)), dim3(norm_threads(q.ne[0])), 0, c->stream,
			  q.ne[0], q.ne[1], nhk, ntok, (float *)q.p, (float *)k.p, (const float *)t[2].p,
			  (const float *)t[3].p, (const int *)t[4].p, (const float *)t[5].p,
			  op->u.norm_rope.n.kind == NORM_LAYER, op->u.norm_rope.n.eps, rp);
		cu_launched(c, "norm_rope");
		break;
	}
	case CUK_IM2COL: {
		const cuk_t &x = t[0], &y = t[1];
		uint64_t n = (uint64_t)y.ne[0] * (uint64_t)y.ne[1];
		CU_LAUNCH(k_im2col, cu_grid((n + 255) / 256), dim3(256), 0, c->stream, x.ne[0], x.ne[1], y.ne[1], op->u.im2col.k,
			  op->u.im2col.stride, op->u.im2col.pad, (const float *)x.p, (float *)y.p);
		cu_launched(c, "im2col");
		break;
	}
	case CUK_COPY:
		copy(c, op);
		break;
	case CUK_ARGMAX: {
		uint64_t rows = (uint64_t)nrows(t[0]);
		CU_LAUNCH(k_argmax, cu_grid(rows), dim3(256), 0, c->stream, t[0].ne[0], rows, (const float *)t[0].p, (int *)t[1].p);
		cu_launched(c, "argmax");
		break;
	}
	default:
		cu_check(c, cudaErrorInvalidValue, "an op of no family");
		break;
	}
}

} // namespace tern_cu
