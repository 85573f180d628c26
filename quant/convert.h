/* convert.h - scalar element conversions and row dequantization. */
#ifndef TERN_QUANT_CONVERT_H
#define TERN_QUANT_CONVERT_H

#include <stdint.h>

#include "quant.h"

float quant_fp16_to_f32(uint16_t h);
float quant_bf16_to_f32(uint16_t h);

/* Decode n elements of a row of `type` at src (any alignment) into dst.
 * n must be a multiple of the type's block. Returns 0, TERN_EINVAL or
 * TERN_EUNSUPPORTED for a type that has no decoder. */
int quant_dequantize_row(uint32_t type, const void *src, float *dst, uint64_t n);

#endif
