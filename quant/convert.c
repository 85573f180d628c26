/* convert.c - element conversions between f32 and the 16-bit float types
 * (IEEE fp16, bfloat16). Row dequantization of every type is in ref.c. */
#include "quant/quant.h"
#include "quant/qimpl.h"

#include <math.h>

float quant_fp16_to_f32(uint16_t h)
{
	return qfp16(h);
}

float quant_bf16_to_f32(uint16_t h)
{
	return qbits_f32((uint32_t)h << 16);
}

/* Rounding is done by the FPU: scaling by 2^112 then 2^-110 lands the value
 * at the binade where adding a power-of-two bias leaves exactly the fp16
 * mantissa bits, rounded to nearest even (and overflow becomes inf). */
uint16_t quant_f32_to_fp16(float f)
{
	float base = (fabsf(f) * 0x1.0p+112f) * 0x1.0p-110f;
	uint32_t w = qf32_bits(f);
	uint32_t shl1_w = w + w;
	uint32_t sign = w & 0x80000000u;
	uint32_t bias = shl1_w & 0xFF000000u;
	if (bias < 0x71000000u)
		bias = 0x71000000u;
	base = qbits_f32((bias >> 1) + 0x07800000u) + base;
	uint32_t bits = qf32_bits(base);
	uint32_t exp_bits = (bits >> 13) & 0x00007C00u;
	uint32_t mantissa_bits = bits & 0x00000FFFu;
	uint32_t nonsign = exp_bits + mantissa_bits;
	return (uint16_t)((sign >> 16) | (shl1_w > 0xFF000000u ? 0x7E00u : nonsign));
}

uint16_t quant_f32_to_bf16(float f)
{
	uint32_t u = qf32_bits(f);
	if ((u & 0x7fffffffu) > 0x7f800000u)
		return (uint16_t)((u >> 16) | 64);
	return (uint16_t)((u + (0x7fffu + ((u >> 16) & 1))) >> 16);
}
