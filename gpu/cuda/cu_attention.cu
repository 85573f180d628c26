/* cu_attention.cu - lib/backend.h's kv_store and attention on the GPU: the
 * Vulkan backend's algorithms (gpu/vulkan/shaders/kv_store.comp,
 * attention.comp, attn_combine.comp, attention_tiled.comp) in warps of 32.
 *
 *   k_kv_store      one thread per element; a q8_0 block is one warp (its
 *                   maximum by shuffles), encoded as quant/quantize.c does
 *   k_attn_decode   few query tokens: a block takes one token, one KV head
 *                   and the query heads of its group that read it (each K
 *                   and V row read once for them all), and one split of
 *                   the context; each warp runs its own online softmax over
 *                   chunks of 32 keys, the warps merge at the end; with
 *                   several splits the block writes partials (max, sum,
 *                   weighted V) to scratch and k_attn_combine merges them
 *   k_attn_tiled    a batch: a block takes a tile of 32 (token, head) query
 *                   rows of one KV head; the keys go in chunks of 32 whose K
 *                   and then V rows are staged in shared memory (as f32)
 *                   and reused by every row of the tile
 *
 * Numbers: f32 scores, f32 online softmax, f32 sums, expf and tanhf. The
 * positions and sequences are read from device memory (a captured step
 * replays with new ones); the grids are sized by the cache's capacity and
 * blocks past a query's keys exit early. */
#include "gpu/cuda/cu_impl.cuh"

#include <math.h>

/* the loops over a thread's register arrays unrolled (indices known at
 * compile time keep the arrays in registers); the emulation's compiler
 * does not know the pragma */
#if CU_EMULATED
#define UNROLL
#else
#define UNROLL _Pragma("unroll")
#endif

namespace tern_cu {

/* ---- cache rows ---- */

/* element i of a cache row (row: its first byte) of type f32, f16 or q8_0
 * (blocks of 34 bytes: the f16 scale, 32 int8 codes) */
__device__ __forceinline__ float cache_at(const uint8_t *row, uint32_t type, int i)
{
	if (type == T_F32)
		return ((const float *)row)[i];
	if (type == T_F16)
		return __half2float(((const __half *)row)[i]);
	const uint8_t *b = row + (i / 32) * 34;
	return __half2float(*(const __half *)b) * (float)(signed char)b[2 + i % 32];
}

/* f32 to f16 bits, rounded to nearest even, a NaN as 0x7e00 with its sign:
 * quant/convert.c's quant_f32_to_fp16 bit for bit (the hardware's
 * conversion differs on NaNs; integer steps are the same on both sides) */
__device__ __forceinline__ uint16_t f16_bits(float f)
{
	uint32_t u = __float_as_uint(f), s = (u >> 16) & 0x8000u, a = u & 0x7fffffffu;
	if (a > 0x7f800000u)
		return (uint16_t)(s | 0x7e00u);
	if (a >= 0x477ff000u) /* 65520 and up round to infinity */
		return (uint16_t)(s | 0x7c00u);
	if (a >= 0x38800000u) { /* a normal half: rebias, round off 13 bits */
		uint32_t r = a - 0x38000000u;
		return (uint16_t)(s | ((r + 0xfffu + ((r >> 13) & 1u)) >> 13));
	}
	if (a < 0x33000000u) /* below 2^-25 (2^-25 itself ties to 0 below) */
		return (uint16_t)s;
	/* a subnormal half: the value in units of 2^-24, rounded to even */
	uint32_t m = (a & 0x7fffffu) | 0x800000u, sh = 126u - (a >> 23);
	uint32_t q = m >> sh, rem = m & ((1u << sh) - 1u), half = 1u << (sh - 1u);
	q += rem > half || (rem == half && (q & 1u));
	return (uint16_t)(s | q);
}

/* ---- kv_store ---- */

struct kv_args {
	uint8_t *c;       /* the cache {hd, nkv, n_ctx, n_seq}, contiguous */
	const uint8_t *x; /* f32 {hd, nkv, x_ne2, ...} */
	const int *pos, *seq; /* seq NULL: sequence 0 */
	int64_t c_nb1, c_nb2, c_nb3, x_nb1, x_nb2, x_nb3;
	int64_t ntok;
	int hd, nkv, n_ctx, n_seq, x_ne2;
	uint32_t type;
};

/* Element e of the tokens' rows to its cache cell. A q8_0 block is the 32
 * lanes of one warp (head_dim is a multiple of 32 and the stride of the
 * loop one of 32: a warp never straddles two blocks or two tokens, so its
 * exits are the whole warp's). */
__global__ void __launch_bounds__(256) k_kv_store(kv_args a, int *status)
{
	int64_t per_tok = (int64_t)a.hd * a.nkv, n = per_tok * a.ntok;
	int64_t stride = (int64_t)gridDim.x * gridDim.y * blockDim.x;
	for (int64_t e = (int64_t)cu_block_id() * blockDim.x + threadIdx.x; e < n; e += stride) {
		int64_t t = e / per_tok, r = e % per_tok;
		int h = (int)(r / a.hd), d = (int)(r % a.hd);
		int p = a.pos[t], sq = a.seq ? a.seq[t] : 0;
		if (p < 0 || p >= a.n_ctx) {
			cu_flag(status, CUK_KV_STORE, p);
			continue;
		}
		if (sq < 0 || sq >= a.n_seq) {
			cu_flag(status, CUK_KV_STORE, sq);
			continue;
		}
		const uint8_t *xr = a.x + (t % a.x_ne2) * a.x_nb2 + (t / a.x_ne2) * a.x_nb3 + h * a.x_nb1;
		float v = ((const float *)xr)[d];
		uint8_t *row = a.c + sq * a.c_nb3 + (int64_t)p * a.c_nb2 + h * a.c_nb1;
		if (a.type == T_F32) {
			((float *)row)[d] = v;
		} else if (a.type == T_F16) {
			((uint16_t *)row)[d] = f16_bits(v);
		} else {
			/* enc_q8_0: amax over |x| (a NaN never wins), d = amax / 127,
			 * codes round(x / d) half away from zero, a code that is no
			 * int (1/d overflowed) 0 */
			float ax = fabsf(v);
			float amax = warp_max(ax > 0.0f ? ax : 0.0f);
			float dd = amax / 127.0f, id = dd != 0.0f ? 1.0f / dd : 0.0f;
			float qv = roundf(v * id);
			int code = qv > -2147483520.0f && qv < 2147483520.0f ? (int)qv : 0;
			uint8_t *b = row + (d / 32) * 34;
			if (d % 32 == 0)
				*(uint16_t *)b = f16_bits(dd);
			b[2 + d % 32] = (uint8_t)(signed char)code;
		}
	}
}

static void run_kv_store(cuk_ctx *c, const cuk_op *op)
{
	const cuk_t &ct = op->t[0], &x = op->t[1];
	kv_args a;
	a.c = (uint8_t *)ct.p;
	a.x = (const uint8_t *)x.p;
	a.pos = (const int *)op->t[2].p;
	a.seq = (const int *)op->t[3].p;
	a.c_nb1 = ct.nb[1];
	a.c_nb2 = ct.nb[2];
	a.c_nb3 = ct.nb[3];
	a.x_nb1 = x.nb[1];
	a.x_nb2 = x.nb[2];
	a.x_nb3 = x.nb[3];
	a.ntok = x.ne[2] * x.ne[3];
	a.hd = (int)ct.ne[0];
	a.nkv = (int)ct.ne[1];
	a.n_ctx = (int)ct.ne[2];
	a.n_seq = (int)ct.ne[3];
	a.x_ne2 = (int)x.ne[2];
	a.type = ct.type;
	uint64_t n = (uint64_t)a.hd * a.nkv * a.ntok;
	if (!n)
		return;
	/* enough blocks to fill a large GPU; each thread loops beyond */
	uint64_t blocks = (n + 255) / 256;
	CU_LAUNCH(k_kv_store, cu_grid(blocks < 1024 ? blocks : 1024), dim3(256), 0, c->stream, a, c->status);
	cu_launched(c, "k_kv_store");
}

/* ---- attention ---- */

#define AW 4         /* warps of an attention block */
#define AT (AW * 32) /* its threads */
#define TBR 32       /* k_attn_tiled: query rows of a tile, (token, head) pairs */
#define TBC 32       /* k_attn_tiled: keys of a chunk */
#define TRW (TBR / AW) /* k_attn_tiled: rows of a warp */
#define ATTN_QMAX 4096 /* k_attn_decode: floats of its heads' queries in shared memory */
#define TILED_MAX_D 256 /* k_attn_tiled: head sizes its registers and shared memory hold */
#define TILED_MAX_SMEM (99u << 10) /* the opt-in every sm_80..sm_90 device grants (sm_86, sm_89: 99 KiB) */

struct attn_args {
	const uint8_t *q, *k, *v; /* q f32 {hd, nh, ntok}; caches {hd|hdv, nkv, n_ctx, n_seq} */
	const int *pos, *seq;     /* seq NULL: sequence 0 */
	const float *sinks;       /* [nh] or NULL */
	uint8_t *y;               /* f32 {hdv, nh, ntok} */
	float *part;              /* split decode: [ntok][nh][nsplit] records of (max, sum, acc[hdv]) */
	int64_t q_nb1, q_nb2, k_nb1, k_nb2, k_nb3, v_nb1, v_nb2, v_nb3, y_nb1, y_nb2;
	uint32_t kt, vt;
	int hd, hdv, nh, nkv, n_ctx, n_seq, ntok, window;
	float scale, softcap;
	int hb, nhb; /* query heads of a block (of a group), blocks per group */
	int L, nsplit; /* decode: keys per split, splits */
	int bt;        /* tiled: tokens per tile */
};

/* the query's position and sequence checked; false for a bad one */
__device__ __forceinline__ bool query_ok(const attn_args &a, int t, int *qp, int *sq)
{
	*qp = a.pos[t];
	*sq = a.seq ? a.seq[t] : 0;
	return *qp >= 0 && *qp < a.n_ctx && *sq >= 0 && *sq < a.n_seq;
}

__device__ __forceinline__ void flag_query(const attn_args &a, int *status, int qp, int sq)
{
	cu_flag(status, CUK_ATTENTION, qp < 0 || qp >= a.n_ctx ? qp : sq);
}

/* scale, then the soft cap */
__device__ __forceinline__ float score_of(const attn_args &a, float dot)
{
	float s = dot * a.scale;
	return a.softcap > 0.0f ? a.softcap * tanhf(s / a.softcap) : s;
}

/* One block: token blockIdx.z, KV head g with its query heads h0 ..
 * h0 + hn - 1, keys [k0, k1] of split blockIdx.x. NI: V's columns per lane
 * (hdv <= 32 NI); a lane keeps MH x NI accumulators (at most 32).
 *
 * A warp takes chunks of 32 keys in turn. Scores: 8 lanes per key (4 keys
 * at a time), each over every 8th element of the K row, summed by 3
 * shuffles, written to the warp's scores in shared memory; the online
 * softmax then has lane j on key j; V: every lane adds its columns of each
 * key's row for all hn heads, so that each row of K and V is read once for
 * the whole group. Shared memory: the queries [hb][hd], the warps' scores
 * [AW][hb][32], then the warps' states for the merge: max and sum
 * [AW][hb] each, acc [AW][hb][hdv]. */
/* the keys [k0, k1] split s of the query at qp sees; false when none */
__device__ __forceinline__ bool decode_keys(const attn_args &a, int s, int qp, int *k0, int *k1)
{
	int lo = a.window > 0 ? max(0, qp - a.window + 1) : 0;
	*k0 = max(lo, s * a.L);
	*k1 = min(qp, min((s + 1) * a.L, a.n_ctx) - 1);
	return *k0 <= *k1;
}

/* A chunk's scores: keys c0 .. c0 + nj - 1 against the block's hn query
 * heads, 8 lanes per key (4 keys at a time), each over every 8th element
 * of the K row, summed by 3 shuffles, into the warp's scores scw[h][j]. */
template <int MH>
__device__ __forceinline__ void decode_scores(const attn_args &a, const float *qs, const uint8_t *kb, int c0, int nj,
					      int hn, float *scw)
{
	int lane = (int)threadIdx.x % 32, grp = lane / 8, sl = lane % 8;
	for (int j0 = 0; j0 < 32; j0 += 4) {
		int j = j0 + grp;
		float part[MH];
		UNROLL
		for (int h = 0; h < MH; h++)
			part[h] = 0.0f;
		if (j < nj) {
			const uint8_t *kr = kb + (int64_t)(c0 + j) * a.k_nb2;
			for (int x = sl; x < a.hd; x += 8) {
				float kx = cache_at(kr, a.kt, x);
				UNROLL
				for (int h = 0; h < MH; h++)
					if (h < hn)
						part[h] += qs[h * a.hd + x] * kx;
			}
		}
		UNROLL
		for (int h = 0; h < MH; h++)
			if (h < hn) { /* hn is the warp's: every lane shuffles */
				float d = part[h];
				d += __shfl_xor_sync(0xffffffffu, d, 1);
				d += __shfl_xor_sync(0xffffffffu, d, 2);
				d += __shfl_xor_sync(0xffffffffu, d, 4);
				if (sl == 0)
					scw[h * 32 + j] = j < nj ? score_of(a, d) : -INFINITY;
			}
	}
}

/* The online softmax over a chunk: lane j on key j; the scores become
 * the keys' weights, the sums and accumulators rescaled to the new max. */
template <int MH, int NI>
__device__ __forceinline__ void decode_softmax(int hn, float *scw, float (&m)[MH], float (&l)[MH], float (&acc)[MH][NI])
{
	int lane = (int)threadIdx.x % 32;
	UNROLL
	for (int h = 0; h < MH; h++)
		if (h < hn) {
			float sj = scw[h * 32 + lane];
			float mx = warp_max(fmaxf(m[h], sj));
			float wj = sj == -INFINITY ? 0.0f : expf(sj - mx);
			float corr = m[h] == -INFINITY ? 0.0f : expf(m[h] - mx);
			l[h] = l[h] * corr + warp_sum(wj);
			m[h] = mx;
			scw[h * 32 + lane] = wj;
			UNROLL
			for (int i = 0; i < NI; i++)
				acc[h][i] *= corr;
		}
}

/* V: every lane adds its columns of each key's row for all hn heads */
template <int MH, int NI>
__device__ __forceinline__ void decode_values(const attn_args &a, const uint8_t *vb, int c0, int nj, int hn,
					      const float *scw, float (&acc)[MH][NI])
{
	int lane = (int)threadIdx.x % 32;
	for (int j = 0; j < nj; j++) {
		const uint8_t *vr = vb + (int64_t)(c0 + j) * a.v_nb2;
		UNROLL
		for (int i = 0; i < NI; i++) {
			int d = lane + 32 * i;
			float vv = d < a.hdv ? cache_at(vr, a.vt, d) : 0.0f;
			UNROLL
			for (int h = 0; h < MH; h++)
				if (h < hn)
					acc[h][i] += scw[h * 32 + j] * vv;
		}
	}
}

/* The warps' states merged (M the largest max, each warp's sums rescaled
 * to it; a warp without keys has max -inf: left out), then y, or the
 * split's partial record for k_attn_combine. */
template <int MH, int NI>
__device__ __forceinline__ void decode_finish(const attn_args &a, float *wm, float *wl, float *wacc, int hn, int h0,
					      int t, int s, const float (&m)[MH], const float (&l)[MH],
					      const float (&acc)[MH][NI])
{
	int lane = (int)threadIdx.x % 32, w = (int)threadIdx.x / 32;
	UNROLL
	for (int h = 0; h < MH; h++)
		if (h < hn) {
			if (lane == 0) {
				wm[w * a.hb + h] = m[h];
				wl[w * a.hb + h] = l[h];
			}
			UNROLL
			for (int i = 0; i < NI; i++) {
				int d = lane + 32 * i;
				if (d < a.hdv)
					wacc[(w * a.hb + h) * a.hdv + d] = acc[h][i];
			}
		}
	__syncthreads();
	int rec = a.hdv + 2;
	for (int idx = (int)threadIdx.x; idx < hn * a.hdv; idx += AT) {
		int h = idx / a.hdv, d = idx % a.hdv;
		float M = -INFINITY;
		for (int u = 0; u < AW; u++)
			M = fmaxf(M, wm[u * a.hb + h]);
		float L = 0.0f, A = 0.0f;
		for (int u = 0; u < AW; u++) {
			float mu = wm[u * a.hb + h];
			if (mu != -INFINITY) {
				float f = expf(mu - M);
				L += wl[u * a.hb + h] * f;
				A += wacc[(u * a.hb + h) * a.hdv + d] * f;
			}
		}
		if (a.nsplit == 1) {
			if (a.sinks) { /* the sink joins the denominator only */
				float sk = a.sinks[h0 + h], mx = fmaxf(M, sk), f = expf(M - mx);
				L = L * f + expf(sk - mx);
				A *= f;
			}
			*(float *)(a.y + t * a.y_nb2 + (h0 + h) * a.y_nb1 + (int64_t)d * 4) = A / L;
		} else {
			float *r = a.part + (((int64_t)t * a.nh + h0 + h) * a.nsplit + s) * rec;
			r[2 + d] = A;
			if (d == 0) {
				r[0] = M;
				r[1] = L;
			}
		}
	}
}

/* One block: token blockIdx.z, KV head g with its query heads h0 ..
 * h0 + hn - 1, keys [k0, k1] of split blockIdx.x. NI: V's columns per lane
 * (hdv <= 32 NI); a lane keeps MH x NI accumulators (at most 32).
 *
 * A warp takes chunks of 32 keys in turn: their scores (decode_scores),
 * the online softmax with lane j on key j (decode_softmax), V (every lane
 * adds its columns of each key's row for all hn heads: decode_values), so
 * that each row of K and V is read once for the whole group; then the
 * warps' states are merged (decode_finish). Shared memory: the queries
 * [hb][hd], the warps' scores [AW][hb][32], then the warps' states for the
 * merge: max and sum [AW][hb] each, acc [AW][hb][hdv]. */
template <int NI> __global__ void __launch_bounds__(AT) k_attn_decode(attn_args a, int *status)
{
	constexpr int MH = 32 / NI < 16 ? 32 / NI : 16;
	CU_DYN_SMEM(float, sm);
	int s = (int)blockIdx.x, g = (int)blockIdx.y / a.nhb, hbi = (int)blockIdx.y % a.nhb, t = (int)blockIdx.z;
	int group = a.nh / a.nkv, h0 = g * group + hbi * a.hb, hn = min(a.hb, group - hbi * a.hb);
	int w = (int)threadIdx.x / 32;
	int qp, sq, k0, k1;
	if (!query_ok(a, t, &qp, &sq)) { /* the whole block; y keeps what it held */
		if (threadIdx.x == 0 && s == 0 && blockIdx.y == 0)
			flag_query(a, status, qp, sq);
		return;
	}
	if (!decode_keys(a, s, qp, &k0, &k1))
		return; /* none of the query's keys: k_attn_combine skips this split */

	float *qs = sm, *sc = qs + a.hb * a.hd, *wm = sc + AW * a.hb * 32, *wl = wm + AW * a.hb, *wacc = wl + AW * a.hb;
	for (int i = (int)threadIdx.x; i < hn * a.hd; i += AT)
		qs[i] = *(const float *)(a.q + t * a.q_nb2 + (h0 + i / a.hd) * a.q_nb1 + (int64_t)(i % a.hd) * 4);
	__syncthreads();

	float m[MH], l[MH], acc[MH][NI];
	UNROLL
	for (int h = 0; h < MH; h++) {
		m[h] = -INFINITY;
		l[h] = 0.0f;
		UNROLL
		for (int i = 0; i < NI; i++)
			acc[h][i] = 0.0f;
	}
	const uint8_t *kb = a.k + sq * a.k_nb3 + g * a.k_nb1, *vb = a.v + sq * a.v_nb3 + g * a.v_nb1;
	float *scw = sc + w * a.hb * 32;
	for (int c0 = k0 + 32 * w; c0 <= k1; c0 += 32 * AW) {
		int nj = min(32, k1 - c0 + 1);
		decode_scores<MH>(a, qs, kb, c0, nj, hn, scw);
		__syncwarp();
		decode_softmax<MH, NI>(hn, scw, m, l, acc);
		__syncwarp();
		decode_values<MH, NI>(a, vb, c0, nj, hn, scw, acc);
		__syncwarp(); /* the scores are the next chunk's */
	}
	decode_finish<MH, NI>(a, wm, wl, wacc, hn, h0, t, s, m, l, acc);
}

/* y of (head blockIdx.x, token blockIdx.y) from the partials of the splits
 * that hold its keys: y = sum_s acc_s e^(m_s - M) / sum_s l_s e^(m_s - M),
 * with the sink, if any, in the denominator. */
__global__ void __launch_bounds__(AT) k_attn_combine(attn_args a)
{
	int h = (int)blockIdx.x, t = (int)blockIdx.y, qp, sq;
	if (!query_ok(a, t, &qp, &sq))
		return; /* k_attn_decode flagged it and wrote no partials */
	int lo = a.window > 0 ? max(0, qp - a.window + 1) : 0, s0 = lo / a.L, s1 = qp / a.L, rec = a.hdv + 2;
	const float *base = a.part + ((int64_t)t * a.nh + h) * a.nsplit * rec;
	float M = -INFINITY;
	for (int s = s0; s <= s1; s++)
		M = fmaxf(M, base[s * rec]);
	float sk = a.sinks ? a.sinks[h] : -INFINITY;
	M = fmaxf(M, sk);
	float L = a.sinks ? expf(sk - M) : 0.0f;
	for (int s = s0; s <= s1; s++)
		L += base[s * rec + 1] * expf(base[s * rec] - M);
	for (int d = (int)threadIdx.x; d < a.hdv; d += (int)blockDim.x) {
		float A = 0.0f;
		for (int s = s0; s <= s1; s++)
			A += base[s * rec + 2 + d] * expf(base[s * rec] - M);
		*(float *)(a.y + t * a.y_nb2 + h * a.y_nb1 + (int64_t)d * 4) = A / L;
	}
}

/* One block: a tile of TBR query rows, row r being token t0 + r / hb and
 * head h0 + r % hb of KV head g's group (GQA: the tile's rows share K and
 * V); warp w owns rows w TRW .. w TRW + TRW - 1 and keeps their softmax
 * states and accumulators (NI columns of V per lane, hdv <= 32 NI).
 *
 * The chunks of TBC keys cover the union of the rows' key ranges (causal:
 * up to the last row's position; windows: from the first row's start);
 * a key outside a row's own range scores -inf. Per chunk: its K rows of
 * the tile's sequence (the first valid row's) into shared memory; lane j
 * scores key j against its warp's rows and each row's softmax is updated
 * across the warp; the chunk's V rows replace the K rows; every lane adds
 * its columns. A row of another sequence (a batch mixing a server's
 * slots) reads its keys and values from the cache directly: slower, the
 * same result. Shared memory: the queries [TBR][hd], the chunk's rows
 * [TBC][max(ks, hdv)], the weights [TBR][TBC], the rows' positions. */
/* The tile's rows (threads < TBR): row r is token t0 + r / hb, query head
 * h0 + r % hb; its position (-1: no output, y keeps what it held), its
 * window's first key and its sequence, checked; then (thread 0) the keys
 * the tile covers and the first valid row's sequence in range[3]. */
__device__ __forceinline__ void tiled_rows(const attn_args &a, int t0, int hn, int *qp_s, int *lo_s, int *sq_s,
					   int *range, int *status)
{
	if (threadIdx.x < TBR) {
		int r = (int)threadIdx.x, tt = t0 + r / a.hb, hi = r % a.hb, qp = -1, sq = -1, lo = 0;
		if (r < a.bt * a.hb && tt < a.ntok && hi < hn) {
			if (query_ok(a, tt, &qp, &sq)) {
				lo = a.window > 0 ? max(0, qp - a.window + 1) : 0;
			} else {
				if (hi == 0 && blockIdx.y == 0)
					flag_query(a, status, qp, sq);
				qp = -1;
			}
		}
		qp_s[r] = qp;
		lo_s[r] = lo;
		sq_s[r] = sq;
	}
	__syncthreads();
	if (threadIdx.x == 0) {
		int k0 = a.n_ctx, k1 = -1, s0 = -1;
		for (int r = 0; r < TBR; r++)
			if (qp_s[r] >= 0) {
				k0 = min(k0, lo_s[r]);
				k1 = max(k1, qp_s[r]);
				if (s0 < 0)
					s0 = sq_s[r];
			}
		range[0] = k0;
		range[1] = k1;
		range[2] = s0;
	}
}

/* A row's state: its position, window start, sequence, and its online
 * softmax (max, sum, V accumulators: lane's columns) */
template <int NI> struct tiled_row {
	int qp, lo, sq;
	float m, l, acc[NI];
};

/* The chunk's K rows (kv) scored by lane j against the warp's rows and
 * each row's softmax updated across the warp; the weights go to ps. A key
 * outside a row's range scores -inf; a row of another sequence than the
 * tile's (s0) reads its keys from the cache. */
template <int NI>
__device__ __forceinline__ void tiled_scores(const attn_args &a, const float *qs, const float *kv, int ks, float *ps,
					     int c0, int nj, int g, int s0, tiled_row<NI> (&rw)[TRW])
{
	int lane = (int)threadIdx.x % 32, w = (int)threadIdx.x / 32;
	float dot[TRW];
	UNROLL
	for (int k = 0; k < TRW; k++)
		dot[k] = 0.0f;
	if (lane < nj)
		for (int x = 0; x < a.hd; x++) {
			float kx = kv[lane * ks + x];
			UNROLL
			for (int k = 0; k < TRW; k++)
				dot[k] += qs[(w * TRW + k) * a.hd + x] * kx;
		}
	int p = c0 + lane;
	UNROLL
	for (int k = 0; k < TRW; k++) {
		tiled_row<NI> &R = rw[k];
		int r = w * TRW + k;
		float sv = -INFINITY;
		if (lane < nj && R.qp >= 0 && p >= R.lo && p <= R.qp) {
			float d = dot[k];
			if (R.sq != s0) {
				const uint8_t *kr = a.k + (int64_t)R.sq * a.k_nb3 + (int64_t)p * a.k_nb2 + g * a.k_nb1;
				d = 0.0f;
				for (int x = 0; x < a.hd; x++)
					d += qs[r * a.hd + x] * cache_at(kr, a.kt, x);
			}
			sv = score_of(a, d);
		}
		float mx = warp_max(fmaxf(R.m, sv));
		float wj = sv == -INFINITY ? 0.0f : expf(sv - mx);
		float corr = R.m == -INFINITY ? 0.0f : expf(R.m - mx);
		R.l = R.l * corr + warp_sum(wj);
		R.m = mx;
		ps[r * TBC + lane] = wj;
		UNROLL
		for (int i = 0; i < NI; i++)
			R.acc[i] *= corr;
	}
}

/* The chunk's V rows (kv) weighted into each row's accumulators: only the
 * row's own keys (another row's may be cache rows never written, whose
 * NaN a zero weight would not cancel); a row of another sequence reads
 * its values from the cache. */
template <int NI>
__device__ __forceinline__ void tiled_values(const attn_args &a, const float *kv, const float *ps, int c0, int nj,
					     int g, int s0, tiled_row<NI> (&rw)[TRW])
{
	int lane = (int)threadIdx.x % 32, w = (int)threadIdx.x / 32;
	for (int j = 0; j < nj; j++) {
		int pj = c0 + j;
		float vv[NI];
		UNROLL
		for (int i = 0; i < NI; i++) {
			int d = lane + 32 * i;
			vv[i] = d < a.hdv ? kv[j * a.hdv + d] : 0.0f;
		}
		UNROLL
		for (int k = 0; k < TRW; k++) {
			tiled_row<NI> &R = rw[k];
			if (R.qp < 0 || pj < R.lo || pj > R.qp)
				continue;
			float wgt = ps[(w * TRW + k) * TBC + j];
			if (R.sq == s0) {
				UNROLL
				for (int i = 0; i < NI; i++)
					R.acc[i] += wgt * vv[i];
				continue;
			}
			const uint8_t *vr = a.v + (int64_t)R.sq * a.v_nb3 + (int64_t)pj * a.v_nb2 + g * a.v_nb1;
			UNROLL
			for (int i = 0; i < NI; i++) {
				int d = lane + 32 * i;
				if (d < a.hdv)
					R.acc[i] += wgt * cache_at(vr, a.vt, d);
			}
		}
	}
}

/* y of the warp's rows, the sink (if any) in the denominator */
template <int NI>
__device__ __forceinline__ void tiled_write(const attn_args &a, int t0, int h0, const tiled_row<NI> (&rw)[TRW])
{
	int lane = (int)threadIdx.x % 32, w = (int)threadIdx.x / 32;
	UNROLL
	for (int k = 0; k < TRW; k++) {
		const tiled_row<NI> &R = rw[k];
		if (R.qp < 0)
			continue;
		int r = w * TRW + k, tt = t0 + r / a.hb, h = h0 + r % a.hb;
		float L = R.l, f = 1.0f;
		if (a.sinks) {
			float sk = a.sinks[h], mx = fmaxf(R.m, sk);
			f = expf(R.m - mx);
			L = L * f + expf(sk - mx);
		}
		float *yr = (float *)(a.y + (int64_t)tt * a.y_nb2 + h * a.y_nb1);
		UNROLL
		for (int i = 0; i < NI; i++) {
			int d = lane + 32 * i;
			if (d < a.hdv)
				yr[d] = R.acc[i] * f / L;
		}
	}
}

template <int NI> __global__ void __launch_bounds__(AT) k_attn_tiled(attn_args a, int *status)
{
	CU_DYN_SMEM(float, sm);
	int w = (int)threadIdx.x / 32;
	int g = (int)blockIdx.y / a.nhb, hbi = (int)blockIdx.y % a.nhb;
	int group = a.nh / a.nkv, h0 = g * group + hbi * a.hb, hn = min(a.hb, group - hbi * a.hb);
	int t0 = (int)blockIdx.x * a.bt;
	/* K's row stride in the tile: odd, so that the lanes reading one
	 * element of 32 keys hit 32 banks */
	int ks = a.hd % 2 ? a.hd : a.hd + 1, kvs = max(ks, a.hdv);
	float *qs = sm, *kv = qs + TBR * a.hd, *ps = kv + TBC * kvs;
	int *qp_s = (int *)(ps + TBR * TBC), *lo_s = qp_s + TBR, *sq_s = lo_s + TBR, *range_s = sq_s + TBR;

	tiled_rows(a, t0, hn, qp_s, lo_s, sq_s, range_s, status);
	for (int i = (int)threadIdx.x; i < TBR * a.hd; i += AT) {
		int r = i / a.hd, x = i % a.hd;
		qs[i] = qp_s[r] >= 0 ? *(const float *)(a.q + (int64_t)(t0 + r / a.hb) * a.q_nb2 +
							(h0 + r % a.hb) * a.q_nb1 + (int64_t)x * 4)
				     : 0.0f;
	}
	__syncthreads();
	int k0 = range_s[0], k1 = range_s[1], s0 = range_s[2];

	tiled_row<NI> rw[TRW];
	UNROLL
	for (int k = 0; k < TRW; k++) {
		rw[k].qp = qp_s[w * TRW + k];
		rw[k].lo = lo_s[w * TRW + k];
		rw[k].sq = sq_s[w * TRW + k];
		rw[k].m = -INFINITY;
		rw[k].l = 0.0f;
		UNROLL
		for (int i = 0; i < NI; i++)
			rw[k].acc[i] = 0.0f;
	}
	const uint8_t *kb = a.k + (int64_t)max(s0, 0) * a.k_nb3 + g * a.k_nb1;
	const uint8_t *vb = a.v + (int64_t)max(s0, 0) * a.v_nb3 + g * a.v_nb1;
	for (int c0 = k0; c0 <= k1; c0 += TBC) {
		int nj = min(TBC, k1 - c0 + 1);
		/* the chunk's K rows of the tile's sequence (past its last written
		 * row where a row of another sequence reaches further: never
		 * scored) */
		for (int i = (int)threadIdx.x; i < TBC * a.hd; i += AT) {
			int j = i / a.hd, x = i % a.hd;
			kv[j * ks + x] = j < nj ? cache_at(kb + (int64_t)(c0 + j) * a.k_nb2, a.kt, x) : 0.0f;
		}
		__syncthreads();
		tiled_scores<NI>(a, qs, kv, ks, ps, c0, nj, g, s0, rw);
		__syncthreads(); /* every warp is done with the K rows */
		for (int i = (int)threadIdx.x; i < TBC * a.hdv; i += AT) {
			int j = i / a.hdv, x = i % a.hdv;
			kv[j * a.hdv + x] = j < nj ? cache_at(vb + (int64_t)(c0 + j) * a.v_nb2, a.vt, x) : 0.0f;
		}
		__syncthreads();
		tiled_values<NI>(a, kv, ps, c0, nj, g, s0, rw);
		__syncthreads(); /* the next chunk's K rows overwrite these */
	}
	tiled_write<NI>(a, t0, h0, rw);
}

/* How an attention op runs: the kernel, its block shape, its splits. A
 * function of the op alone (not of the device): cu_attention_scratch
 * sizes the partials before a capture with the same plan. */
struct attn_plan {
	bool tiled;
	int ni;        /* the kernel's NI */
	int hb, nhb, bt;
	int L, nsplit;
	size_t smem;   /* dynamic shared memory, bytes */
	size_t scratch; /* partials, bytes */
};

static int ni_of(int hdv, bool tiled)
{
	int n = (hdv + 31) / 32;
	if (n <= 1)
		return 1;
	if (n <= 2)
		return 2;
	if (n <= 4)
		return 4;
	if (n <= 8 || tiled)
		return 8;
	return n <= 16 ? 16 : 18;
}

static size_t tiled_smem(int hd, int hdv)
{
	int ks = hd % 2 ? hd : hd + 1, kvs = ks > hdv ? ks : hdv;
	return 4 * ((size_t)TBR * hd + (size_t)TBC * kvs + (size_t)TBR * TBC + 3 * TBR + 3);
}

static attn_plan plan_attention(const cuk_op *op)
{
	const cuk_t &q = op->t[0], &k = op->t[1], &v = op->t[2];
	int hd = (int)q.ne[0], hdv = (int)v.ne[0], nh = (int)q.ne[1], nkv = (int)k.ne[1];
	int ntok = (int)q.ne[2], n_ctx = (int)k.ne[2], group = nh / nkv;
	attn_plan p = {};
	p.nsplit = 1;
	p.L = n_ctx;
	/* a batch: K and V read once per tile of rows */
	if (ntok >= 4 && hd <= TILED_MAX_D && hdv <= TILED_MAX_D && tiled_smem(hd, hdv) <= TILED_MAX_SMEM) {
		p.tiled = true;
		p.ni = ni_of(hdv, true);
		p.hb = group < TBR ? group : TBR;
		p.bt = TBR / p.hb;
		p.nhb = (group + p.hb - 1) / p.hb;
		p.smem = tiled_smem(hd, hdv);
		return p;
	}
	p.ni = ni_of(hdv, false);
	int mh = 32 / p.ni < 16 ? 32 / p.ni : 16;
	int hb = group < mh ? group : mh;
	while (hb > 1 && hb * hd > ATTN_QMAX)
		hb--;
	p.nhb = (group + hb - 1) / hb;
	p.hb = (group + p.nhb - 1) / p.nhb; /* the group's heads spread evenly */
	p.smem = 4 * ((size_t)p.hb * hd + (size_t)AW * p.hb * 32 + 2 * (size_t)AW * p.hb + (size_t)AW * p.hb * hdv);
	/* a long context split over blocks where few would run otherwise
	 * (decode): about 512 blocks at a full cache (a few per SM), each at
	 * least 128 keys (a chunk per warp); the grid follows the capacity, so
	 * a query early in a large cache has fewer blocks at work */
	int64_t base = (int64_t)ntok * nkv * p.nhb;
	if (base < 128 && n_ctx > 256) {
		int64_t want = (512 + base - 1) / base;
		int64_t L = (n_ctx + want - 1) / want;
		L = (L + 31) / 32 * 32;
		p.L = (int)(L < 128 ? 128 : L);
		p.nsplit = (n_ctx + p.L - 1) / p.L;
	}
	if (p.nsplit > 1)
		p.scratch = (size_t)ntok * nh * p.nsplit * (hdv + 2) * sizeof(float);
	return p;
}

template <int NI> static void launch_decode(cuk_ctx *c, const attn_plan &p, const attn_args &a)
{
	dim3 grid((unsigned)p.nsplit, (unsigned)(a.nkv * p.nhb), (unsigned)a.ntok);
	CU_LAUNCH(k_attn_decode<NI>, grid, dim3(AT), p.smem, c->stream, a, c->status);
	cu_launched(c, "k_attn_decode");
}

/* The tiled kernels' opt-in to more than 48 KiB of shared memory, up to
 * the most a plan asks: once, when the context is made (setting it may
 * synchronize, which a step being captured into a graph must not). */
template <int NI> static void opt_in(cuk_ctx *c, int most)
{
	cu_check(c, cudaFuncSetAttribute(k_attn_tiled<NI>, cudaFuncAttributeMaxDynamicSharedMemorySize, most),
		 "cudaFuncSetAttribute (k_attn_tiled)");
}

void cu_attention_init(cuk_ctx *c)
{
	int most = c->smem_optin < (int)TILED_MAX_SMEM ? c->smem_optin : (int)TILED_MAX_SMEM;
	if (most <= (48 << 10))
		return;
	opt_in<1>(c, most);
	opt_in<2>(c, most);
	opt_in<4>(c, most);
	opt_in<8>(c, most);
}

template <int NI> static void launch_tiled(cuk_ctx *c, const attn_plan &p, const attn_args &a)
{
	/* past the default 48 KiB the kernel opted in at the context's creation (cu_attention_init) */
	dim3 grid((unsigned)((a.ntok + p.bt - 1) / p.bt), (unsigned)(a.nkv * p.nhb), 1);
	CU_LAUNCH(k_attn_tiled<NI>, grid, dim3(AT), p.smem, c->stream, a, c->status);
	cu_launched(c, "k_attn_tiled");
}

static void run_attn(cuk_ctx *c, const cuk_op *op)
{
	const cuk_t &q = op->t[0], &k = op->t[1], &v = op->t[2], &y = op->t[5];
	attn_args a;
	a.q = (const uint8_t *)q.p;
	a.k = (const uint8_t *)k.p;
	a.v = (const uint8_t *)v.p;
	a.pos = (const int *)op->t[3].p;
	a.seq = (const int *)op->t[4].p;
	a.sinks = (const float *)op->t[6].p;
	a.y = (uint8_t *)y.p;
	a.part = NULL;
	a.q_nb1 = q.nb[1];
	a.q_nb2 = q.nb[2];
	a.k_nb1 = k.nb[1];
	a.k_nb2 = k.nb[2];
	a.k_nb3 = k.nb[3];
	a.v_nb1 = v.nb[1];
	a.v_nb2 = v.nb[2];
	a.v_nb3 = v.nb[3];
	a.y_nb1 = y.nb[1];
	a.y_nb2 = y.nb[2];
	a.kt = k.type;
	a.vt = v.type;
	a.hd = (int)q.ne[0];
	a.hdv = (int)v.ne[0];
	a.nh = (int)q.ne[1];
	a.nkv = (int)k.ne[1];
	a.n_ctx = (int)k.ne[2];
	a.n_seq = (int)k.ne[3];
	a.ntok = (int)q.ne[2];
	a.window = op->u.attn.window;
	a.scale = op->u.attn.scale;
	a.softcap = op->u.attn.softcap;
	if (a.ntok <= 0 || a.n_ctx <= 0)
		return;
	attn_plan p = plan_attention(op);
	a.hb = p.hb;
	a.nhb = p.nhb;
	a.bt = p.bt;
	a.L = p.L;
	a.nsplit = p.nsplit;
	if (p.tiled) {
		switch (p.ni) {
		case 1: launch_tiled<1>(c, p, a); break;
		case 2: launch_tiled<2>(c, p, a); break;
		case 4: launch_tiled<4>(c, p, a); break;
		default: launch_tiled<8>(c, p, a); break;
		}
		return;
	}
	if (p.nsplit > 1) {
		a.part = (float *)cu_scratch(c, p.scratch);
		if (!a.part)
			return;
	}
	switch (p.ni) {
	case 1: launch_decode<1>(c, p, a); break;
	case 2: launch_decode<2>(c, p, a); break;
	case 4: launch_decode<4>(c, p, a); break;
	case 8: launch_decode<8>(c, p, a); break;
	case 16: launch_decode<16>(c, p, a); break;
	default: launch_decode<18>(c, p, a); break;
	}
	if (p.nsplit > 1) {
		CU_LAUNCH(k_attn_combine, dim3((unsigned)a.nh, (unsigned)a.ntok), dim3(AT), 0, c->stream, a);
		cu_launched(c, "k_attn_combine");
	}
}

void cu_run_attention(cuk_ctx *c, const cuk_op *op)
{
	if (op->kind == CUK_KV_STORE)
		run_kv_store(c, op);
	else
		run_attn(c, op);
}

size_t cu_attention_scratch(const cuk_op *op)
{
	return op->kind == CUK_ATTENTION ? plan_attention(op).scratch : 0;
}

} // namespace tern_cu
