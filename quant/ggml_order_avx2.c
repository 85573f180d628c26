/* ggml_order_avx2.c - quant/ggml_order.inc compiled with AVX2 and FMA
 * (the same bits as the baseline build, in less time). */
#include "quant/ggml_order.h"

#include "quant/quant.h"

#define GO_FN(name) go_avx2_##name
#include "quant/ggml_order.inc"

void quant_ggml_rows_avx2(uint32_t t, int64_t cols, const void *w, size_t wstride, int64_t nrows, const void *act,
			  float *y, bool grouped);

void quant_ggml_rows_avx2(uint32_t t, int64_t cols, const void *w, size_t wstride, int64_t nrows, const void *act,
			  float *y, bool grouped)
{
	go_avx2_rows(t, cols, w, wstride, nrows, act, y, grouped);
}
