#version 450
/* copy.comp - lib/backend.h copy of nrows rows of ne0 elements, each side
 * with its own shape and byte strides (a column window of wider rows);
 * SPEC1 the conversion:
 *   0  the same type: words of SPEC2 bytes (4, 2 or 1) of each row
 *   1  f32 -> f32, 2 f32 -> f16, 3 f32 -> bf16 (round to nearest even),
 *   4  f16 -> f32, 5 bf16 -> f32,
 *   6  f32 -> q8_0 (quant/quantize.c's encoding), 7 q8_0 -> f32.
 * One invocation per element (per word, per block of 32 for q8_0). */
#include "common.glsl"

layout(binding = 0) readonly buffer S32 { uint s32[]; };
layout(binding = 0) readonly buffer S16 { uint16_t s16[]; };
layout(binding = 0) readonly buffer S8 { uint8_t s8[]; };
layout(binding = 0) readonly buffer S8i { int8_t s8i[]; };
layout(binding = 1) writeonly buffer D32 { uint d32[]; };
layout(binding = 1) writeonly buffer D16 { uint16_t d16[]; };
layout(binding = 1) writeonly buffer D8 { uint8_t d8[]; };
layout(binding = 1) writeonly buffer D8i { int8_t d8i[]; };

layout(push_constant) uniform PC {
	uint n_per_row, nrows; /* units (elements, words, blocks) per row */
	uint s_ne1, s_ne2, d_ne1, d_ne2;
	uint s_nb1, s_nb2, s_nb3, d_nb1, d_nb2, d_nb3; /* bytes */
	uint os, od;                                   /* bytes */
} pc;

uint row_off(uint r, uint ne1, uint ne2, uint nb1, uint nb2, uint nb3)
{
	return (r % ne1) * nb1 + (r / ne1 % ne2) * nb2 + (r / (ne1 * ne2)) * nb3;
}

void main()
{
	uint i = flat_id();
	if (i >= pc.n_per_row * pc.nrows)
		return;
	uint r = i / pc.n_per_row, e = i % pc.n_per_row;
	uint sb = pc.os + row_off(r, pc.s_ne1, pc.s_ne2, pc.s_nb1, pc.s_nb2, pc.s_nb3);
	uint db = pc.od + row_off(r, pc.d_ne1, pc.d_ne2, pc.d_nb1, pc.d_nb2, pc.d_nb3);
	if (SPEC1 == 0u) {
		if (SPEC2 == 4u)
			d32[db / 4u + e] = s32[sb / 4u + e];
		else if (SPEC2 == 2u)
			d16[db / 2u + e] = s16[sb / 2u + e];
		else
			d8[db + e] = s8[sb + e];
	} else if (SPEC1 == 1u) {
		d32[db / 4u + e] = s32[sb / 4u + e];
	} else if (SPEC1 == 2u) {
		d16[db / 2u + e] = uint16_t(packHalf2x16(vec2(uintBitsToFloat(s32[sb / 4u + e]), 0.0)) & 0xffffu);
	} else if (SPEC1 == 3u) {
		uint u = s32[sb / 4u + e];
		uint o = (u & 0x7fffffffu) > 0x7f800000u ? (u >> 16) | 64u : (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
		d16[db / 2u + e] = uint16_t(o);
	} else if (SPEC1 == 4u) {
		d32[db / 4u + e] = floatBitsToUint(f16_bits(uint(s16[sb / 2u + e])));
	} else if (SPEC1 == 5u) {
		d32[db / 4u + e] = floatBitsToUint(bf16_bits(uint(s16[sb / 2u + e])));
	} else if (SPEC1 == 6u) {
		uint s = sb / 4u + e * 32u;
		float amax = 0.0;
		for (uint j = 0u; j < 32u; j++)
			amax = max(amax, abs(uintBitsToFloat(s32[s + j])));
		float d = amax / 127.0, id = 0.0;
		if (d != 0.0) {
			id = 1.0 / d;
			id = fma(id, fma(-d, id, 1.0), id); /* correctly rounded, as the CPU's 1.0f / d */
		}
		uint b = db + e * 34u;
		d16[b / 2u] = uint16_t(packHalf2x16(vec2(d, 0.0)) & 0xffffu);
		for (uint j = 0u; j < 32u; j++) {
			float v = uintBitsToFloat(s32[s + j]) * id;
			d8i[b + 2u + j] = int8_t(int(sign(v) * floor(abs(v) + 0.5)));
		}
	} else {
		uint b = sb + (e / 32u) * 34u;
		float d = f16_bits(uint(s16[b / 2u]));
		d32[db / 4u + e] = floatBitsToUint(d * float(int(s8i[b + 2u + e % 32u])));
	}
}
