/* quant_util.h - helpers shared by the quant, GEMM and backend tests:
 * rows of any type (random bytes with finite scale fields, or quantized
 * from random floats) and a seeded generator. Header-only, static. */
#ifndef TERN_TESTS_QUANT_UTIL_H
#define TERN_TESTS_QUANT_UTIL_H

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "quant/quant.h"

static uint64_t qu_state = 0x9E3779B97F4A7C15ull;

static inline void qu_seed(uint64_t s) { qu_state = s * 0x9E3779B97F4A7C15ull + 1; }

static inline uint32_t qu_rand(void)
{
	qu_state ^= qu_state << 13;
	qu_state ^= qu_state >> 7;
	qu_state ^= qu_state << 17;
	return (uint32_t)(qu_state >> 16);
}

static inline float qu_uniform(float lo, float hi)
{
	return lo + (hi - lo) * (float)(qu_rand() & 0xFFFFFF) / (float)0x1000000;
}

static inline float qu_normal(void)
{
	float u = qu_uniform(1e-7f, 1), v = qu_uniform(0, 1);
	return sqrtf(-2 * logf(u)) * cosf(6.2831853f * v);
}

/* Byte offsets of the fp16 scale fields of each block type. */
static inline int qu_f16_fields(uint32_t t, int *off)
{
	switch (t) {
	case QT_Q4_1: case QT_Q5_1: case QT_Q8_1: case QT_Q4_K: case QT_Q5_K:
		off[0] = 0; off[1] = 2; return 2;
	case QT_Q2_K: off[0] = 80; off[1] = 82; return 2;
	case QT_Q3_K: off[0] = 108; return 1;
	case QT_Q6_K: off[0] = 208; return 1;
	case QT_TQ1_0: off[0] = 52; return 1;
	case QT_TQ2_0: off[0] = 64; return 1;
	case QT_Q4_0: case QT_Q5_0: case QT_Q8_0: case QT_IQ2_XXS: case QT_IQ2_XS:
	case QT_IQ2_S: case QT_IQ3_XXS: case QT_IQ3_S: case QT_IQ1_S: case QT_IQ4_NL:
	case QT_IQ4_XS:
		off[0] = 0; return 1;
	}
	return 0;
}

/* Fill a row of n elements of type t with random bytes whose scale fields
 * are finite (so that every decoded value is finite). */
static inline void qu_random_row(uint32_t t, void *dst, int64_t n)
{
	const struct quant_type_info *ti = quant_type_info(t);
	uint8_t *p = dst;
	size_t bytes = quant_row_size(t, (uint64_t)n, NULL);
	if (t == QT_F32) {
		for (int64_t i = 0; i < n; i++) {
			float v = qu_normal();
			memcpy(p + 4 * i, &v, 4);
		}
		return;
	}
	for (size_t i = 0; i < bytes; i++)
		p[i] = (uint8_t)qu_rand();
	if (t == QT_F16 || t == QT_BF16) {
		for (int64_t i = 0; i < n; i++) {
			float v = qu_normal();
			uint16_t h = t == QT_F16 ? quant_f32_to_fp16(v) : quant_f32_to_bf16(v);
			memcpy(p + 2 * i, &h, 2);
		}
		return;
	}
	int off[2];
	int nf = qu_f16_fields(t, off);
	for (int64_t b = 0; b < n / ti->blck; b++) {
		uint8_t *blk = p + b * ti->size;
		for (int f = 0; f < nf; f++) {
			uint16_t h = quant_f32_to_fp16(qu_uniform(-0.05f, 0.05f));
			memcpy(blk + off[f], &h, 2);
		}
		if (t == QT_IQ1_M) {
			uint16_t d = quant_f32_to_fp16(qu_uniform(-0.05f, 0.05f));
			for (int i = 0; i < 4; i++) {
				uint16_t s;
				memcpy(&s, blk + 48 + 2 * i, 2);
				s = (uint16_t)((s & 0x0FFF) | ((d >> (4 * i)) & 0xF) << 12);
				memcpy(blk + 48 + 2 * i, &s, 2);
			}
		}
		if (t == QT_Q8_K) {
			float d = qu_uniform(-0.05f, 0.05f);
			memcpy(blk, &d, 4);
		}
		if (t == QT_MXFP4)
			blk[0] = (uint8_t)(120 + qu_rand() % 8);
	}
}

/* A row of type t: quantized from random normal floats where t has a
 * quantizer, random bytes otherwise (or when force_random). */
static inline void qu_make_row(uint32_t t, void *dst, int64_t n, int force_random)
{
	if (force_random || !quant_can_quantize(t)) {
		qu_random_row(t, dst, n);
		return;
	}
	float *x = malloc((size_t)n * sizeof *x);
	for (int64_t i = 0; i < n; i++)
		x[i] = qu_normal();
	quant_quantize_row(t, x, dst, (uint64_t)n);
	free(x);
}

#endif
