/* convert.c - element conversions (fp16, bf16) and row dequantization for
 * the plain and Q8_0 types. The quant module extends this to every type. */
#include "convert.h"
#include "error.h"

#include <string.h>

float quant_fp16_to_f32(uint16_t h)
{
	uint32_t sign = (uint32_t)(h & 0x8000) << 16;
	uint32_t exp = (h >> 10) & 0x1f;
	uint32_t man = h & 0x3ff;
	uint32_t bits;
	if (exp == 0) {
		if (man == 0) {
			bits = sign;
		} else { /* subnormal: normalise */
			int e = -1;
			do {
				e++;
				man <<= 1;
			} while (!(man & 0x400));
			bits = sign | ((uint32_t)(127 - 15 - e) << 23) | ((man & 0x3ff) << 13);
		}
	} else if (exp == 0x1f) {
		bits = sign | 0x7f800000u | (man << 13);
	} else {
		bits = sign | ((exp + 127 - 15) << 23) | (man << 13);
	}
	float f;
	memcpy(&f, &bits, 4);
	return f;
}

float quant_bf16_to_f32(uint16_t h)
{
	uint32_t bits = (uint32_t)h << 16;
	float f;
	memcpy(&f, &bits, 4);
	return f;
}

static uint16_t rd16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }

int quant_dequantize_row(uint32_t type, const void *src, float *dst, uint64_t n)
{
	const uint8_t *p = src;
	switch (type) {
	case QT_F32:
		memcpy(dst, src, n * 4);
		return 0;
	case QT_F16:
		for (uint64_t i = 0; i < n; i++)
			dst[i] = quant_fp16_to_f32(rd16(p + 2 * i));
		return 0;
	case QT_BF16:
		for (uint64_t i = 0; i < n; i++)
			dst[i] = quant_bf16_to_f32(rd16(p + 2 * i));
		return 0;
	case QT_Q8_0:
		if (n % 32)
			return TERN_EINVAL;
		for (uint64_t b = 0; b < n / 32; b++, p += 34) {
			float d = quant_fp16_to_f32(rd16(p));
			for (int j = 0; j < 32; j++)
				dst[b * 32 + j] = d * (float)(int8_t)p[2 + j];
		}
		return 0;
	}
	return TERN_EUNSUPPORTED;
}
