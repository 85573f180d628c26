/* ggml_order.c - the products of ggml_order.h: the activations' quantizers
 * (ggml's x86 rounding) and the choice between the baseline and the AVX2
 * build of ggml_order.inc (the same bits). */
#include "quant/ggml_order.h"

#include <math.h>
#include <string.h>

#include "quant/cpu.h"
#include "quant/quant.h"

#define GO_FN(name) go_base_##name
#include "quant/ggml_order.inc"

#if defined(__x86_64__)
void quant_ggml_rows_n_avx2(uint32_t t, int64_t cols, const void *w, size_t wstride, int64_t nrows, const void *act,
			    size_t act_size, int64_t ntok, float *y, int64_t ldy, int64_t ngrouped);
#endif

bool quant_ggml_ok(uint32_t t) { return t == QT_Q8_0 || t == QT_Q4_0 || t == QT_Q4_K; }

size_t quant_ggml_act_size(uint32_t t, int64_t cols)
{
	if (!quant_ggml_ok(t))
		return 0;
	return t == QT_Q4_K ? (size_t)(cols / 256) * Q8_K_B : (size_t)(cols / 32) * Q8_0_B;
}

/* quantize_row_q8_0 of ggml's x86 code: d = amax / 127 (stored in f16),
 * q = round-half-even(x * (127 / amax)) */
static void quantize_q8_0(const float *x, uint8_t *dst, int64_t cols)
{
	for (int64_t b = 0; b < cols / 32; b++, x += 32, dst += Q8_0_B) {
		float amax = 0;
		for (int i = 0; i < 32; i++)
			amax = fabsf(x[i]) > amax ? fabsf(x[i]) : amax;
		uint16_t h = quant_f32_to_fp16(amax / 127.f);
		memcpy(dst, &h, 2);
		float id = amax != 0.0f ? 127.f / amax : 0.0f;
		for (int i = 0; i < 32; i++)
			dst[2 + i] = (uint8_t)(int8_t)rintf(x[i] * id);
	}
}

/* quantize_row_q8_K_ref: the scale from the first element of largest
 * magnitude m, q = min(127, round-half-even(-127 / m x)), d = 1 / (-127 / m),
 * the sums of each 16 */
static void quantize_q8_k(const float *x, uint8_t *dst, int64_t cols)
{
	for (int64_t b = 0; b < cols / 256; b++, x += 256, dst += Q8_K_B) {
		float amax = 0, max = 0;
		for (int i = 0; i < 256; i++)
			if (fabsf(x[i]) > amax) {
				amax = fabsf(x[i]);
				max = x[i];
			}
		memset(dst, 0, Q8_K_B);
		if (amax == 0)
			continue;
		float iscale = -127.f / max, d = 1 / iscale;
		memcpy(dst, &d, 4);
		int8_t *q = (int8_t *)(dst + 4);
		for (int i = 0; i < 256; i++) {
			float v = rintf(iscale * x[i]);
			q[i] = (int8_t)(v > 127 ? 127 : v);
		}
		for (int j = 0; j < 16; j++) {
			int16_t s = 0;
			for (int i = 0; i < 16; i++)
				s = (int16_t)(s + q[16 * j + i]);
			memcpy(dst + 4 + 256 + 2 * j, &s, 2);
		}
	}
}

void quant_ggml_quantize(uint32_t t, const float *x, void *dst, int64_t cols)
{
	if (t == QT_Q4_K)
		quantize_q8_k(x, dst, cols);
	else if (quant_ggml_ok(t))
		quantize_q8_0(x, dst, cols);
}

void quant_ggml_rows_n(uint32_t t, int64_t cols, const void *w, size_t wstride, int64_t nrows, const void *act,
		       size_t act_size, int64_t ntok, float *y, int64_t ldy, int64_t ngrouped)
{
#if defined(__x86_64__)
	/* (the vectors' Q4_K unpacks a row's scales on the stack: up to 512 super-blocks) */
	if ((quant_isa() == QUANT_ISA_AVX2 || quant_isa() == QUANT_ISA_AVX512) && !(t == QT_Q4_K && cols > 512 * 256)) {
		quant_ggml_rows_n_avx2(t, cols, w, wstride, nrows, act, act_size, ntok, y, ldy, ngrouped);
		return;
	}
#endif
	for (int64_t k = 0; k < ntok; k++)
		go_base_rows(t, cols, w, wstride, nrows, (const uint8_t *)act + (size_t)k * act_size, y + k * ldy,
			     k < ngrouped);
}

void quant_ggml_rows(uint32_t t, int64_t cols, const void *w, size_t wstride, int64_t nrows, const void *act,
		     float *y, bool grouped)
{
	quant_ggml_rows_n(t, cols, w, wstride, nrows, act, quant_ggml_act_size(t, cols), 1, y, 0, grouped ? 1 : 0);
}
