/* dot.c - dot products of a weight row with an activation row: the pairing
 * of weight and activation types, the scalar reference, and the choice of
 * SIMD kernel (made once, from the ISA quant_isa() reports).
 *
 * The reference decodes both operands block by block and accumulates in
 * double: it is slow but plainly right, and the SIMD kernels (which work on
 * the integer levels) are tested against it. */
#include "quant/quant.h"
#include "quant/cpu.h"
#include "lib/core/error.h"
#include "quant/qimpl.h"

#include <pthread.h>
#include <string.h>

uint32_t quant_vec_dot_type(uint32_t t)
{
	switch (t) {
	case QT_Q4_0: case QT_Q5_0: case QT_Q8_0: case QT_IQ4_NL: case QT_MXFP4:
		return QT_Q8_0;
	case QT_Q4_1: case QT_Q5_1:
		return QT_Q8_1;
	case QT_Q2_K: case QT_Q3_K: case QT_Q4_K: case QT_Q5_K: case QT_Q6_K:
	case QT_IQ2_XXS: case QT_IQ2_XS: case QT_IQ2_S: case QT_IQ3_XXS: case QT_IQ3_S:
	case QT_IQ1_S: case QT_IQ1_M: case QT_IQ4_XS: case QT_TQ1_0: case QT_TQ2_0:
		return QT_Q8_K;
	}
	return QT_F32;
}

bool quant_is_weight_type(uint32_t t)
{
	if (t == QT_F32 || t == QT_F16 || t == QT_BF16)
		return true;
	uint32_t at = quant_vec_dot_type(t);
	return quant_type_valid(t) && (at == QT_Q8_0 || at == QT_Q8_1 || at == QT_Q8_K);
}

/* Decode elements [i0, i0 + cnt) of a row of type t into out; i0 and cnt
 * are multiples of the block of t. */
static void decode_range(uint32_t t, const uint8_t *row, int64_t i0, int cnt, float *out)
{
	const struct quant_type_info *ti = quant_type_info(t);
	if (ti->blck == 1) {
		quant_dequantize_row(t, row + i0 * ti->size, out, (uint64_t)cnt);
		return;
	}
	quant_block_dec dec = quant_block_decoder(t);
	for (int j = 0; j < cnt; j += (int)ti->blck)
		dec(row + (i0 + j) / ti->blck * ti->size, out + j);
}

/* Q4_1 / Q5_1 with Q8_1: the activation block carries s = d * sum(q) in
 * fp16, and the weight min multiplies s, as in ggml (the rounding of s is
 * part of the format's result). */
static float dot_q41_q51_ref(uint32_t t, int64_t n, const uint8_t *w, const uint8_t *a)
{
	double sum = 0;
	int bs = t == QT_Q4_1 ? Q4_1_B : Q5_1_B;
	for (int64_t b = 0; b < n / 32; b++, w += bs, a += Q8_1_B) {
		uint32_t qh = t == QT_Q5_1 ? qrd32(w + 4) : 0;
		const uint8_t *qs = w + (t == QT_Q5_1 ? 8 : 4);
		int sumi = 0;
		for (int j = 0; j < 16; j++) {
			int lo = (qs[j] & 0xF) | (int)((qh >> j) & 1) << 4;
			int hi = (qs[j] >> 4) | (int)((qh >> (j + 16)) & 1) << 4;
			sumi += lo * (int8_t)a[4 + j] + hi * (int8_t)a[4 + j + 16];
		}
		sum += (double)qrdfp16(w) * qrdfp16(a) * sumi + (double)qrdfp16(w + 2) * qrdfp16(a + 2);
	}
	return (float)sum;
}

float quant_dot_ref(uint32_t t, int64_t n, const void *w, const void *a)
{
	if (t == QT_Q4_1 || t == QT_Q5_1)
		return dot_q41_q51_ref(t, n, w, a);
	uint32_t at = quant_vec_dot_type(t);
	int step = QK_K;
	float wv[QK_K], av[QK_K];
	double sum = 0;
	for (int64_t i = 0; i < n; i += step) {
		int cnt = (int)(n - i < step ? n - i : step);
		decode_range(t, w, i, cnt, wv);
		decode_range(at, a, i, cnt, av);
		for (int j = 0; j < cnt; j++)
			sum += (double)wv[j] * av[j];
	}
	return (float)sum;
}

float quant_dot_f32(uint32_t t, int64_t n, const void *w, const float *x)
{
	if (t == QT_F32) {
		const uint8_t *p = w;
		float s = 0;
		for (int64_t i = 0; i < n; i++)
			s += qrdf32(p + 4 * i) * qrdf32((const uint8_t *)x + 4 * i);
		return s;
	}
	float wv[QK_K];
	float sum = 0;
	int step = QK_K;
	for (int64_t i = 0; i < n; i += step) {
		int cnt = (int)(n - i < step ? n - i : step);
		decode_range(t, w, i, cnt, wv);
		float s = 0;
		for (int j = 0; j < cnt; j++)
			s += wv[j] * qrdf32((const uint8_t *)x + 4 * (i + j));
		sum += s;
	}
	return sum;
}

/* The path for types without a kernel of their own: decode a weight block
 * to floats and multiply it with the activations in float (the compiler
 * vectorizes the inner loop). Q8_K / Q8_0 activations are used as int8
 * levels times their block scale. */
static float dot_decoded(uint32_t t, int64_t n, const void *vw, const void *va)
{
	uint32_t at = quant_vec_dot_type(t);
	const struct quant_type_info *ti = quant_type_info(t);
	quant_block_dec dec = quant_block_decoder(t);
	if (!dec || ti->blck < 32 || (at != QT_Q8_K && at != QT_Q8_0))
		return t == QT_F32 || at == QT_F32 ? quant_dot_f32(t, n, vw, va) : quant_dot_ref(t, n, vw, va);
	const uint8_t *w = vw, *a = va;
	const int ablk = at == QT_Q8_K ? QK_K : 32, asize = at == QT_Q8_K ? Q8_K_B : Q8_0_B;
	float wv[QK_K];
	float sum = 0;
	for (int64_t b = 0; b < n / ti->blck; b++, w += ti->size) {
		dec(w, wv);
		for (int j = 0; j < (int)ti->blck; j += ablk, a += asize) {
			const int8_t *q = (const int8_t *)(a + (at == QT_Q8_K ? 4 : 2));
			float d = at == QT_Q8_K ? qrdf32(a) : qrdfp16(a);
			/* 8 partial sums: no serial dependency, and vectorizable */
			float s[8] = {0};
			for (int i = 0; i < ablk; i += 8)
				for (int k = 0; k < 8; k++)
					s[k] += wv[j + i + k] * (float)q[i + k];
			sum += d * (((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7])));
		}
	}
	return sum;
}

/* ---- kernel tables ------------------------------------------------------- */

static struct quant_kernels tables[QUANT_ISA_NEON + 1];
static pthread_once_t tables_once = PTHREAD_ONCE_INIT;

static void tables_init(void)
{
#if defined(__x86_64__)
	quant_kernels_avx2_init(&tables[QUANT_ISA_AVX2]);
	quant_kernels_avx512_init(&tables[QUANT_ISA_AVX512]);
#elif defined(__aarch64__)
	quant_kernels_neon_init(&tables[QUANT_ISA_NEON]);
#endif
}

quant_dot_fn quant_dot_kernel(uint32_t t, int isa)
{
	if (t >= QT_COUNT || isa < 0 || isa > QUANT_ISA_NEON)
		return NULL;
	pthread_once(&tables_once, tables_init);
	return tables[isa].dot[t];
}

static const struct quant_kernels *current(void)
{
	pthread_once(&tables_once, tables_init);
	return &tables[quant_isa()];
}

int quant_quantize_act(uint32_t at, const float *src, void *dst, uint64_t n)
{
	const struct quant_kernels *k = current();
	if (at == QT_Q8_0 && k->quantize_q8_0 && n % 32 == 0) {
		k->quantize_q8_0(src, dst, (int64_t)n);
		return 0;
	}
	if (at == QT_Q8_1 && k->quantize_q8_1 && n % 32 == 0) {
		k->quantize_q8_1(src, dst, (int64_t)n);
		return 0;
	}
	if (at == QT_Q8_K && k->quantize_q8_K && n % QK_K == 0) {
		k->quantize_q8_K(src, dst, (int64_t)n);
		return 0;
	}
	return quant_quantize_row(at, src, dst, n);
}

float quant_dot(uint32_t t, int64_t n, const void *w, const void *a)
{
	quant_dot_fn f = t < QT_COUNT ? current()->dot[t] : NULL;
	return f ? f(n, w, a) : dot_decoded(t, n, w, a);
}

void quant_dot_tile(uint32_t t, int64_t n, const void *w, size_t wstride, int nr,
		    const void *a, size_t astride, int nc, float *out, size_t ostride)
{
	const struct quant_kernels *k = current();
	if (k->mm[t]) {
		k->mm[t](n, w, wstride, nr, a, astride, nc, out, ostride);
		return;
	}
	quant_dot_fn f = k->dot[t];
	for (int c = 0; c < nc; c++)
		for (int r = 0; r < nr; r++) {
			const void *wr = (const uint8_t *)w + (size_t)r * wstride;
			const void *ar = (const uint8_t *)a + (size_t)c * astride;
			out[(size_t)c * ostride + r] = f ? f(n, wr, ar) : dot_decoded(t, n, wr, ar);
		}
}

/* ---- interleaved layout ------------------------------------------------------ */

#define MVX_CHUNK 512 /* elements of a chunk: 16 blocks of 32 */

bool quant_mvx_layout(uint32_t t, int64_t n)
{
	return t == QT_Q4_0 && n > 0 && n % MVX_CHUNK == 0;
}

bool quant_mvx_ok(uint32_t t, int64_t n)
{
	return quant_mvx_layout(t, n) && current()->mvx[t] != NULL;
}

/* Block i of a chunk: its scale (2 bytes) at 2i, level bytes 4g..4g+3 at
 * 32 + 64g + 4i. pack: file layout -> interleaved; else the reverse. */
static void mvx_move(int64_t n, const uint8_t *src, uint8_t *dst, bool pack)
{
	/* copies of constant size, which compile to moves (batches read the
	 * copy back through this: with a size chosen at run time it was a
	 * library call per 2 or 4 bytes, 10% of a Q4_0 prefill) */
	for (int64_t c = 0; c < n / MVX_CHUNK; c++, src += 16 * Q4_0_B, dst += 16 * Q4_0_B)
		for (int i = 0; i < 16; i++) {
			size_t f = (size_t)i * Q4_0_B, x = 2 * (size_t)i; /* the scale */
			memcpy(dst + (pack ? x : f), src + (pack ? f : x), 2);
			for (int g = 0; g < 4; g++) { /* level bytes 4g..4g+3 */
				f = (size_t)(i * Q4_0_B + 2 + 4 * g);
				x = (size_t)(32 + 64 * g + 4 * i);
				memcpy(dst + (pack ? x : f), src + (pack ? f : x), 4);
			}
		}
}

void quant_mvx_pack(uint32_t t, int64_t n, const void *src, void *dst)
{
	(void)t;
	mvx_move(n, src, dst, true);
}

void quant_mvx_unpack(uint32_t t, int64_t n, const void *src, void *dst)
{
	(void)t;
	mvx_move(n, src, dst, false);
}

size_t quant_mvx_act_size(uint32_t t, int64_t n)
{
	/* the ISA's chunks: 8 level vectors, the offsets, the scales */
	if (current()->mvx_prep[t])
		return (size_t)(n / MVX_CHUNK) * 10 * 64;
	return quant_row_size(quant_vec_dot_type(t), (uint64_t)n, NULL);
}

void quant_mvx_prep(uint32_t t, int64_t n, const void *a, void *act)
{
	quant_mvx_prep_fn f = current()->mvx_prep[t];
	if (f)
		f(n, a, act);
	else
		memcpy(act, a, quant_mvx_act_size(t, n));
}

void quant_mvx_tile(uint32_t t, int64_t n, const void *w, size_t wstride, int nr, const void *act, float *out)
{
	quant_mvx_fn f = current()->mvx[t];
	if (f) {
		f(n, w, wstride, nr, act, out);
		return;
	}
	size_t ab = quant_row_size(quant_vec_dot_type(t), MVX_CHUNK, NULL);
	for (int r = 0; r < nr; r++) {
		const uint8_t *wr = (const uint8_t *)w + (size_t)r * wstride;
		float s = 0.0f;
		for (int64_t c = 0; c < n / MVX_CHUNK; c++) {
			uint8_t blk[16 * Q4_0_B];
			mvx_move(MVX_CHUNK, wr + (size_t)c * sizeof blk, blk, false);
			s += quant_dot(t, MVX_CHUNK, blk, (const uint8_t *)act + (size_t)c * ab);
		}
		out[r] = s;
	}
}
