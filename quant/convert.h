/* convert.h - scalar element conversions and row dequantization. */
#ifndef TERN_QUANT_CONVERT_H
#define TERN_QUANT_CONVERT_H

#include <stdint.h>

#include "quant/quant.h"

float quant_fp16_to_f32(uint16_t h);
float quant_bf16_to_f32(uint16_t h);
uint16_t quant_f32_to_fp16(float f); /* round to nearest even */
uint16_t quant_f32_to_bf16(float f); /* round to nearest even, NaN stays NaN */

/* Decode n elements of a row of `type` at src (any alignment) into dst.
 * Covers every valid type (integer types are converted to float).
 * n must be a multiple of the type's block. Returns 0 or TERN_EINVAL. */
int quant_dequantize_row(uint32_t type, const void *src, float *dst, uint64_t n);

#endif
