/* gemm.c - choice of GEMM kernel set (quant/gemm.h) for the running CPU:
 * the first set whose ok() accepts the type, under the chosen ISA. */
#include "quant/gemm.h"

#include "quant/cpu.h"
#include "quant/qimpl.h"

static const struct quant_gemm_ops *ops_for(uint32_t t)
{
#if defined(__x86_64__)
	if (quant_isa() == QUANT_ISA_AVX512) {
		static const struct quant_gemm_ops *const sets[] = {&quant_gemm_int_avx512, &quant_gemm_float_avx512};
		for (size_t i = 0; i < sizeof sets / sizeof *sets; i++)
			if (sets[i]->ok(t))
				return sets[i];
	}
#endif
	(void)t;
	return NULL;
}

bool quant_gemm_ok(uint32_t t) { return t < QT_COUNT && ops_for(t) != NULL; }

int quant_gemm_min_tokens(uint32_t t)
{
	switch (t) {
	case QT_F32: case QT_F16:
		return 64;
	case QT_BF16:
		return 16;
	default:
		return 8;
	}
}

size_t quant_gemm_act_size(uint32_t t, int64_t cols, int64_t ntok)
{
	const struct quant_gemm_ops *o = ops_for(t);
	return o ? o->act_size(t, cols, ntok) : 0;
}

size_t quant_gemm_tmp_size(uint32_t t, int64_t cols)
{
	const struct quant_gemm_ops *o = ops_for(t);
	return o ? o->tmp_size(t, cols) : 0;
}

void quant_gemm_pack_act(uint32_t t, int64_t cols, const float *x, int64_t ntok, int64_t t0, int64_t t1,
			 void *act, void *tmp)
{
	const struct quant_gemm_ops *o = ops_for(t);
	if (o)
		o->pack_act(t, cols, x, ntok, t0, t1, act, tmp);
}

void quant_gemm_rows(uint32_t t, int64_t cols, const uint8_t *w, size_t wstride, int nr, const void *act,
		     int64_t ntok, float *y, size_t ystride, void *tmp)
{
	const struct quant_gemm_ops *o = ops_for(t);
	if (o)
		o->rows(t, cols, w, wstride, nr, act, ntok, y, ystride, tmp);
}

size_t quant_gemm_panel_size(uint32_t t, int64_t cols)
{
	const struct quant_gemm_ops *o = ops_for(t);
	return o ? o->panel_size(t, cols) : 0;
}

void quant_gemm_pack_panel(uint32_t t, int64_t cols, const uint8_t *w, size_t wstride, int nr, void *panel,
			   void *tmp)
{
	const struct quant_gemm_ops *o = ops_for(t);
	if (o)
		o->pack_panel(t, cols, w, wstride, nr, panel, tmp);
}

void quant_gemm_rows_panel(uint32_t t, int64_t cols, const void *panel, int nr, const void *act, int64_t ntok,
			   float *y, size_t ystride)
{
	const struct quant_gemm_ops *o = ops_for(t);
	if (o)
		o->rows_panel(t, cols, panel, nr, act, ntok, y, ystride);
}
