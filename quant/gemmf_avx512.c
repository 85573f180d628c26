/* gemmf_avx512.c - AVX-512 panel GEMM (quant/gemm.h) for float weights:
 * F32, F16 and BF16.
 *
 * Register tile: 16 weight rows (the zmm lanes) x GF_T tokens, one
 * accumulator per token, summed over the whole row in registers.
 *
 *   panel (tmp): [K][16] - for F32 / F16 the f32 weights (F16 converted
 *          once, exactly), K = cols; for BF16 dword kp of every row, i.e.
 *          the bf16 pair (2kp, 2kp+1), K = ceil(cols / 2);
 *   act:   [tile][K][GF_T] - f32 activations for F32 / F16 (kept in f32, as
 *          the dot kernels do); for BF16 the activations rounded to bf16
 *          (nearest even) in the same pairs, so that each vdpbf16ps reads
 *          one dword of one token as an embedded broadcast.
 *
 * Every instruction of the inner loop is one FMA (or vdpbf16ps) with a
 * {1to16} operand; the panel (64 bytes per k) is loaded once per k and
 * token tile. Pad rows and pad k of odd-length BF16 rows are zero; a short
 * last tile computes its tokens rounded up to 4, 8 or 16 and stores its own.
 *
 * Measured on Zen 4 (1 thread, 4096 x 4096): 90-95% of the FMA / vdpbf16ps
 * peak at 512 tokens; at 32 tokens building the panel (16 rows read at
 * once, usually 4 KB-aliased, then transposed) costs about as much as one
 * token tile, so small batches reach 55-60%. */
#include "quant/cpu.h"
#include "quant/qimpl.h"

#if defined(__x86_64__)
#include <immintrin.h>

#define GF_T 16		/* tokens per activation tile */
#define GF_ALIGN 64

static bool gf_ok(uint32_t t)
{
	const struct quant_cpu *c = quant_cpu();
	if (!(c->avx512f && c->avx512bw && c->avx512vl && c->avx512dq))
		return false;
	return t == QT_F32 || t == QT_F16 || (t == QT_BF16 && c->avx512bf16);
}

/* k steps of the panel and of one token's packed activations. */
static int64_t gf_ksteps(uint32_t t, int64_t cols) { return t == QT_BF16 ? (cols + 1) / 2 : cols; }

static void *gf_align(const void *p)
{
	return (void *)(((uintptr_t)p + GF_ALIGN - 1) & ~(uintptr_t)(GF_ALIGN - 1));
}

static size_t gf_act_size(uint32_t t, int64_t cols, int64_t ntok)
{
	int64_t tiles = (ntok + GF_T - 1) / GF_T;
	return (size_t)(tiles * gf_ksteps(t, cols) * GF_T) * 4 + GF_ALIGN;
}

static size_t gf_tmp_size(uint32_t t, int64_t cols) { return (size_t)gf_ksteps(t, cols) * 64 + GF_ALIGN; }

static uint16_t gf_bf16(float f)
{
	uint32_t u = qf32_bits(f);
	if ((u & 0x7fffffffu) > 0x7f800000u)
		return (uint16_t)((u >> 16) | 64);
	return (uint16_t)((u + (0x7fffu + ((u >> 16) & 1))) >> 16);
}

/* Activations are read with memcpy: x need not be aligned. The transposed
 * writes go to one tile, GF_T * 4 bytes apart; packing is a small part of
 * the work (cols * ntok elements against 16 * cols * ntok FMA lanes per
 * panel), so it stays scalar. */
static void gf_pack_act(uint32_t t, int64_t cols, const float *x, int64_t ntok, int64_t t0, int64_t t1,
			void *act, void *tmp)
{
	const uint8_t *xb = (const uint8_t *)x;
	int64_t K = gf_ksteps(t, cols);
	uint32_t *a = gf_align(act);
	for (int64_t tok = t0; tok < t1; tok++) {
		uint32_t *d = a + (tok / GF_T) * K * GF_T + tok % GF_T;
		const uint8_t *src = xb + (size_t)tok * (size_t)cols * 4;
		if (t == QT_BF16) {
			for (int64_t k = 0; k < cols / 2; k++) {
				uint32_t lo = gf_bf16(qrdf32(src + 8 * k)), hi = gf_bf16(qrdf32(src + 8 * k + 4));
				d[k * GF_T] = lo | hi << 16;
			}
			if (cols & 1)
				d[(K - 1) * GF_T] = gf_bf16(qrdf32(src + 4 * (cols - 1)));
		} else {
			for (int64_t k = 0; k < cols; k++)
				d[k * GF_T] = qrd32(src + 4 * k);
		}
	}
	if (t1 == ntok && ntok % GF_T) {
		uint32_t *d = a + (ntok / GF_T) * K * GF_T;
		for (int64_t k = 0; k < K; k++)
			for (int64_t i = ntok % GF_T; i < GF_T; i++)
				d[k * GF_T + i] = 0;
	}
}

/* In-place transpose of a 16 x 16 block of dwords: r[i] lane j <-> r[j] lane i.
 * Written out (constant indices only) so that r stays in registers. */
#define GF_UNPACK_PS(i)                                                                                         \
	t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);                                                               \
	t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
/* u[4g + c], 128-bit lane L: column 4L + c of rows 4g .. 4g + 3 */
#define GF_UNPACK_PD(g)                                                                                         \
	u[g] = _mm512_castpd_ps(_mm512_unpacklo_pd(_mm512_castps_pd(t[g]), _mm512_castps_pd(t[g + 2])));         \
	u[g + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(_mm512_castps_pd(t[g]), _mm512_castps_pd(t[g + 2])));     \
	u[g + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(_mm512_castps_pd(t[g + 1]), _mm512_castps_pd(t[g + 3]))); \
	u[g + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(_mm512_castps_pd(t[g + 1]), _mm512_castps_pd(t[g + 3])));
/* 4 x 4 transpose of the 128-bit lanes of u[c], u[4 + c], u[8 + c], u[12 + c] */
#define GF_LANES(c)                                                                                             \
	do {                                                                                                    \
		__m512 v0 = _mm512_shuffle_f32x4(u[c], u[4 + c], 0x88);                                         \
		__m512 v1 = _mm512_shuffle_f32x4(u[c], u[4 + c], 0xdd);                                         \
		__m512 v2 = _mm512_shuffle_f32x4(u[8 + c], u[12 + c], 0x88);                                    \
		__m512 v3 = _mm512_shuffle_f32x4(u[8 + c], u[12 + c], 0xdd);                                    \
		r[c] = _mm512_shuffle_f32x4(v0, v2, 0x88);                                                      \
		r[8 + c] = _mm512_shuffle_f32x4(v0, v2, 0xdd);                                                  \
		r[4 + c] = _mm512_shuffle_f32x4(v1, v3, 0x88);                                                  \
		r[12 + c] = _mm512_shuffle_f32x4(v1, v3, 0xdd);                                                 \
	} while (0)

static inline __attribute__((always_inline)) void gf_transpose16(__m512 r[16])
{
	__m512 t[16], u[16];
	GF_UNPACK_PS(0) GF_UNPACK_PS(2) GF_UNPACK_PS(4) GF_UNPACK_PS(6)
	GF_UNPACK_PS(8) GF_UNPACK_PS(10) GF_UNPACK_PS(12) GF_UNPACK_PS(14)
	GF_UNPACK_PD(0) GF_UNPACK_PD(4) GF_UNPACK_PD(8) GF_UNPACK_PD(12)
	GF_LANES(0);
	GF_LANES(1);
	GF_LANES(2);
	GF_LANES(3);
}

/* 16 k steps (n at the tail) of one row as 16 dwords, zeros past n. */
static inline __attribute__((always_inline)) __m512 gf_load_row(uint32_t t, const uint8_t *p, int64_t n,
								  int64_t e)
{
	__mmask16 m = n >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << n) - 1);
	switch (t) {
	case QT_F32:
		return n >= 16 ? _mm512_loadu_ps(p) : _mm512_maskz_loadu_ps(m, p);
	case QT_F16:
		return _mm512_cvtph_ps(n >= 16 ? _mm256_loadu_si256((const __m256i *)p)
					       : _mm256_maskz_loadu_epi16(m, p));
	default: {
		/* bf16 pairs: e elements left; the last dword of an odd row holds one */
		__mmask32 m2 = e >= 32 ? (__mmask32)0xFFFFFFFFu : (__mmask32)((1u << e) - 1);
		return _mm512_castsi512_ps(n >= 16 ? _mm512_loadu_si512(p) : _mm512_maskz_loadu_epi16(m2, p));
	}
	}
}

/* The 16 row streams are too many for the hardware prefetchers: each row
 * is prefetched GF_PF bytes ahead into L2 (2 KB with T2 beat 512 bytes
 * with T0 by 10-30% from DRAM; prefetches past the row do not fault). */
#define GF_PF 2048
#define GF_LOAD(i)                                                                                              \
	if ((i) < nr) {                                                                                         \
		const uint8_t *p_ = w + (size_t)(i) * wstride + off;                                            \
		_mm_prefetch((const char *)p_ + GF_PF, _MM_HINT_T2);                                            \
		r[i] = gf_load_row(t, p_, n, e);                                                                \
	} else {                                                                                                \
		r[i] = _mm512_setzero_ps();                                                                     \
	}

/* One 16 x 16 block of the panel: k steps k0 .. k0 + n of rows < nr. */
static inline __attribute__((always_inline)) void gf_panel_block(uint32_t t, int64_t cols, const uint8_t *w,
								   size_t wstride, int nr, int64_t k0, int64_t n,
								   float *dst)
{
	size_t off = (size_t)k0 * (t == QT_F16 ? 2 : 4);
	int64_t e = cols - 2 * k0;
	__m512 r[16];
	GF_LOAD(0) GF_LOAD(1) GF_LOAD(2) GF_LOAD(3) GF_LOAD(4) GF_LOAD(5) GF_LOAD(6) GF_LOAD(7)
	GF_LOAD(8) GF_LOAD(9) GF_LOAD(10) GF_LOAD(11) GF_LOAD(12) GF_LOAD(13) GF_LOAD(14) GF_LOAD(15)
	gf_transpose16(r);
	if (n == 16) {
		for (int i = 0; i < 16; i++)
			_mm512_store_ps(dst + 16 * i, r[i]);
	} else {
		for (int i = 0; i < 16; i++)
			if (i < n)
				_mm512_store_ps(dst + 16 * i, r[i]);
	}
}

static inline __attribute__((always_inline)) void gf_pack_panel_t(uint32_t t, int64_t cols, const uint8_t *w,
								    size_t wstride, int nr, float *panel)
{
	int64_t K = gf_ksteps(t, cols), k0 = 0;
	for (; k0 + 16 <= K; k0 += 16)
		gf_panel_block(t, cols, w, wstride, nr, k0, 16, panel + 16 * k0);
	if (k0 < K)
		gf_panel_block(t, cols, w, wstride, nr, k0, K - k0, panel + 16 * k0);
}

static void gf_pack_panel(uint32_t t, int64_t cols, const uint8_t *w, size_t wstride, int nr, float *panel)
{
	switch (t) {
	case QT_F32: gf_pack_panel_t(QT_F32, cols, w, wstride, nr, panel); break;
	case QT_F16: gf_pack_panel_t(QT_F16, cols, w, wstride, nr, panel); break;
	default: gf_pack_panel_t(QT_BF16, cols, w, wstride, nr, panel); break;
	}
}

/* acc[i] += panel[k] * act[k][i] over every k of one token tile; store
 * tokens i < nt (rows r < nr). The accumulators are named, not an array,
 * so that they stay in registers at -O2. */
#define GF_ACC_DECL(s) __m512 c0##s = _mm512_setzero_ps(), c1##s = c0##s, c2##s = c0##s, c3##s = c0##s;
#define GF_STEP4(op, b, s)                                                                                      \
	do {                                                                                                    \
		c0##s = op(c0##s, wv, (b) + 0);                                                                 \
		c1##s = op(c1##s, wv, (b) + 1);                                                                 \
		c2##s = op(c2##s, wv, (b) + 2);                                                                 \
		c3##s = op(c3##s, wv, (b) + 3);                                                                 \
	} while (0)

static inline __m512 gf_fma(__m512 acc, __m512 w, const uint32_t *a)
{
	return _mm512_fmadd_ps(w, _mm512_set1_ps(qbits_f32(*a)), acc);
}

/* GCC does not fold the broadcast into vdpbf16ps (a separate vpbroadcastd
 * per instruction), hence the asm. */
static inline __m512 gf_dpbf16(__m512 acc, __m512 w, const uint32_t *a)
{
	__asm__("vdpbf16ps %2%{1to16%}, %1, %0" : "+v"(acc) : "v"(w), "m"(*a));
	return acc;
}

/* ng groups of 4 tokens (1, 2 or 4: a short last tile skips the rest) */
#define GF_KERNEL(name, op)                                                                                     \
	static inline __attribute__((always_inline)) void name(int64_t K, const float *panel, const uint32_t *a, \
								int nr, int nt, float *y, size_t ystride, int ng)      \
	{                                                                                                       \
		GF_ACC_DECL(a) GF_ACC_DECL(b) GF_ACC_DECL(c) GF_ACC_DECL(d)                                     \
		for (int64_t k = 0; k < K; k++, a += GF_T) {                                                    \
			__m512 wv = _mm512_load_ps(panel + 16 * k);                                             \
			GF_STEP4(op, a, a);                                                                     \
			if (ng > 1)                                                                             \
				GF_STEP4(op, a + 4, b);                                                         \
			if (ng > 2) {                                                                           \
				GF_STEP4(op, a + 8, c);                                                         \
				GF_STEP4(op, a + 12, d);                                                        \
			}                                                                                       \
		}                                                                                               \
		__m512 acc[GF_T] = {c0a, c1a, c2a, c3a, c0b, c1b, c2b, c3b,                                     \
				    c0c, c1c, c2c, c3c, c0d, c1d, c2d, c3d};                                    \
		__mmask16 m = (__mmask16)((1u << nr) - 1);                                                      \
		for (int i = 0; i < nt; i++)                                                                    \
			_mm512_mask_storeu_ps(y + (size_t)i * ystride, m, acc[i]);                              \
	}

GF_KERNEL(gf_tile_f32, gf_fma)
GF_KERNEL(gf_tile_bf16, gf_dpbf16)

static void gf_tile(uint32_t t, int64_t K, const float *panel, const uint32_t *a, int nr, int nt, float *y,
		    size_t ystride)
{
	if (t == QT_BF16) {
		if (nt > 8)
			gf_tile_bf16(K, panel, a, nr, nt, y, ystride, 4);
		else if (nt > 4)
			gf_tile_bf16(K, panel, a, nr, nt, y, ystride, 2);
		else
			gf_tile_bf16(K, panel, a, nr, nt, y, ystride, 1);
	} else {
		if (nt > 8)
			gf_tile_f32(K, panel, a, nr, nt, y, ystride, 4);
		else if (nt > 4)
			gf_tile_f32(K, panel, a, nr, nt, y, ystride, 2);
		else
			gf_tile_f32(K, panel, a, nr, nt, y, ystride, 1);
	}
}

static size_t gf_panel_size(uint32_t t, int64_t cols) { return (size_t)gf_ksteps(t, cols) * 64; }

static void gf_pack_panel_to(uint32_t t, int64_t cols, const uint8_t *w, size_t wstride, int nr, void *panel,
			     void *tmp)
{
	(void)tmp;
	gf_pack_panel(t, cols, w, wstride, nr, panel);
}

static void gf_rows_panel(uint32_t t, int64_t cols, const void *panel, int nr, const void *act, int64_t ntok,
			  float *y, size_t ystride)
{
	int64_t K = gf_ksteps(t, cols);
	const uint32_t *a = gf_align(act);
	for (int64_t t0 = 0; t0 < ntok; t0 += GF_T) {
		int nt = ntok - t0 < GF_T ? (int)(ntok - t0) : GF_T;
		const uint32_t *at = a + (t0 / GF_T) * K * GF_T;
		float *yt = y + (size_t)t0 * ystride;
		gf_tile(t, K, panel, at, nr, nt, yt, ystride);
	}
}

static void gf_rows(uint32_t t, int64_t cols, const uint8_t *w, size_t wstride, int nr, const void *act,
		    int64_t ntok, float *y, size_t ystride, void *tmp)
{
	float *panel = gf_align(tmp);
	gf_pack_panel(t, cols, w, wstride, nr, panel);
	gf_rows_panel(t, cols, panel, nr, act, ntok, y, ystride);
}

const struct quant_gemm_ops quant_gemm_float_avx512 = {
	.ok = gf_ok,
	.act_size = gf_act_size,
	.tmp_size = gf_tmp_size,
	.pack_act = gf_pack_act,
	.rows = gf_rows,
	.panel_size = gf_panel_size,
	.pack_panel = gf_pack_panel_to,
	.rows_panel = gf_rows_panel,
};
#endif
