/* qimpl.h - internals shared by the quant/ sources: block layouts, byte
 * readers, fp16 conversion and the per-ISA kernel tables.
 *
 * Blocks are addressed as bytes: rows of a mapped file need not be aligned,
 * so every multi-byte field is read with memcpy (compiled to one load). */
#ifndef TERN_QUANT_QIMPL_H
#define TERN_QUANT_QIMPL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "quant/quant.h"

/* Bytes per block of every block-quantized type (ggml's block structs,
 * packed). types.c builds its table from these and checks each against
 * the field layout it documents, so the two cannot drift apart. */
enum {
	Q4_0_B = 18, Q4_1_B = 20, Q5_0_B = 22, Q5_1_B = 24, Q8_0_B = 34, Q8_1_B = 36,
	Q2_K_B = 84, Q3_K_B = 110, Q4_K_B = 144, Q5_K_B = 176, Q6_K_B = 210, Q8_K_B = 292,
	IQ2_XXS_B = 66, IQ2_XS_B = 74, IQ3_XXS_B = 98, IQ1_S_B = 50, IQ4_NL_B = 18,
	IQ3_S_B = 110, IQ2_S_B = 82, IQ4_XS_B = 136, IQ1_M_B = 56, TQ1_0_B = 54,
	TQ2_0_B = 66, MXFP4_B = 17,
};

static inline uint16_t qrd16(const uint8_t *p)
{
	uint16_t v;
	memcpy(&v, p, 2);
	return v;
}

static inline uint32_t qrd32(const uint8_t *p)
{
	uint32_t v;
	memcpy(&v, p, 4);
	return v;
}

static inline float qrdf32(const uint8_t *p)
{
	float v;
	memcpy(&v, p, 4);
	return v;
}

static inline float qbits_f32(uint32_t u)
{
	float f;
	memcpy(&f, &u, 4);
	return f;
}

static inline uint32_t qf32_bits(float f)
{
	uint32_t u;
	memcpy(&u, &f, 4);
	return u;
}

/* fp16 -> f32, exact for every input (subnormals, inf, NaN): the exponent
 * is rebiased by a float multiply, subnormals go through a magic bias. */
static inline float qfp16(uint16_t h)
{
	uint32_t w = (uint32_t)h << 16;
	uint32_t sign = w & 0x80000000u;
	uint32_t two_w = w + w;
	float norm = qbits_f32((two_w >> 4) + (0xE0u << 23)) * 0x1.0p-112f;
	float denorm = qbits_f32((two_w >> 17) | (126u << 23)) - 0.5f;
	uint32_t r = two_w < (1u << 27) ? qf32_bits(denorm) : qf32_bits(norm);
	return qbits_f32(sign | r);
}

static inline float qrdfp16(const uint8_t *p) { return qfp16(qrd16(p)); }

/* E8M0 scale of MXFP4, halved (the values table is stored doubled). */
static inline float qe8m0_half(uint8_t e)
{
	return qbits_f32(e < 2 ? 0x00200000u << e : (uint32_t)(e - 1) << 23);
}

/* 6-bit scale and min j (0..7) of the 12 packed bytes of Q4_K / Q5_K. */
void quant_k4_scale_min(const uint8_t *s, int j, uint8_t *sc, uint8_t *m);

extern const int8_t quant_kvalues_iq4nl[16];
extern const int8_t quant_kvalues_mxfp4[16];

/* Decode / encode one block (scalar references, in ref.c / quantize.c). */
typedef void (*quant_block_dec)(const uint8_t *src, float *dst);
quant_block_dec quant_block_decoder(uint32_t t);

/* Dot-product kernels of one ISA: dot[t] is the dot of n weights of type t
 * with activations of type quant_vec_dot_type(t); NULL where the ISA has no
 * kernel (the caller falls back to the scalar reference). mm[t], where
 * present, computes a tile of nr rows x nc activation rows at once:
 * out[c * ostride + r]. */
typedef void (*quant_mm_fn)(int64_t n, const void *w, size_t wstride, int nr,
			      const void *a, size_t astride, int nc, float *out, size_t ostride);
typedef void (*quant_mvx_fn)(int64_t n, const void *w, size_t wstride, int nr, const void *act, float *out);
typedef void (*quant_mvx_prep_fn)(int64_t n, const void *a, void *act);
struct quant_kernels {
	quant_dot_fn dot[QT_COUNT];
	quant_mm_fn mm[QT_COUNT];
	/* one activation row, prepared by mvx_prep (64-byte aligned), against
	 * nr rows in the interleaved layout of quant_mvx_pack, where the ISA
	 * has such a kernel */
	quant_mvx_fn mvx[QT_COUNT];
	quant_mvx_prep_fn mvx_prep[QT_COUNT];
	/* activation quantizer override (f32 row -> Q8_0 / Q8_1 / Q8_K) */
	void (*quantize_q8_0)(const float *x, void *dst, int64_t n);
	void (*quantize_q8_K)(const float *x, void *dst, int64_t n);
	void (*quantize_q8_1)(const float *x, void *dst, int64_t n);
};

/* GEMM kernels behind quant/gemm.h (see there for the contract), one set
 * per ISA and family: integer-level types (gemm_avx512.c) and the float
 * types F32 / F16 / BF16 (gemmf_avx512.c). ok() says whether the set
 * handles type t on the running CPU. */
struct quant_gemm_ops {
	bool (*ok)(uint32_t t);
	size_t (*act_size)(uint32_t t, int64_t cols, int64_t ntok);
	size_t (*tmp_size)(uint32_t t, int64_t cols);
	void (*pack_act)(uint32_t t, int64_t cols, const float *x, int64_t ntok, int64_t t0, int64_t t1,
			 void *act, void *tmp);
	void (*rows)(uint32_t t, int64_t cols, const uint8_t *w, size_t wstride, int nr, const void *act,
		     int64_t ntok, float *y, size_t ystride, void *tmp);
	/* rows() in two steps, for weights converted once at load time */
	size_t (*panel_size)(uint32_t t, int64_t cols);
	void (*pack_panel)(uint32_t t, int64_t cols, const uint8_t *w, size_t wstride, int nr, void *panel,
			   void *tmp);
	void (*rows_panel)(uint32_t t, int64_t cols, const void *panel, int nr, const void *act, int64_t ntok,
			   float *y, size_t ystride);
};
extern const struct quant_gemm_ops quant_gemm_int_avx512;
extern const struct quant_gemm_ops quant_gemm_float_avx512;

void quant_kernels_avx2_init(struct quant_kernels *k);
void quant_kernels_avx512_init(struct quant_kernels *k);
void quant_kernels_neon_init(struct quant_kernels *k);

#endif
