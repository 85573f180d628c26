/* types.h - GGML tensor types: the facts every backend needs (ids, block
 * geometry, row sizes, element conversions, which types the products and
 * the encoder take). The CPU's kernels over them are quant/quant.h's.
 *
 * The id numbering is fixed by the GGUF format (ggml's enum ggml_type).
 * Ids that ggml once used and later removed stay reserved: files that use
 * them are refused. */
#ifndef TERN_QUANT_TYPES_H
#define TERN_QUANT_TYPES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum quant_type {
	QT_F32 = 0,
	QT_F16 = 1,
	QT_Q4_0 = 2,
	QT_Q4_1 = 3,
	/* 4, 5: Q4_2, Q4_3 (removed) */
	QT_Q5_0 = 6,
	QT_Q5_1 = 7,
	QT_Q8_0 = 8,
	QT_Q8_1 = 9,
	QT_Q2_K = 10,
	QT_Q3_K = 11,
	QT_Q4_K = 12,
	QT_Q5_K = 13,
	QT_Q6_K = 14,
	QT_Q8_K = 15,
	QT_IQ2_XXS = 16,
	QT_IQ2_XS = 17,
	QT_IQ3_XXS = 18,
	QT_IQ1_S = 19,
	QT_IQ4_NL = 20,
	QT_IQ3_S = 21,
	QT_IQ2_S = 22,
	QT_IQ4_XS = 23,
	QT_I8 = 24,
	QT_I16 = 25,
	QT_I32 = 26,
	QT_I64 = 27,
	QT_F64 = 28,
	QT_IQ1_M = 29,
	QT_BF16 = 30,
	/* 31..33: Q4_0_4_4, Q4_0_4_8, Q4_0_8_8 (removed) */
	QT_TQ1_0 = 34,
	QT_TQ2_0 = 35,
	/* 36..38: IQ4_NL_4_4, IQ4_NL_4_8, IQ4_NL_8_8 (removed) */
	QT_MXFP4 = 39,
	QT_COUNT = 40,
};

#define QK_K 256

struct quant_type_info {
	const char *name;   /* ggml's lower-case name, e.g. "q4_K" */
	uint32_t blck;      /* elements per block */
	uint32_t size;      /* bytes per block */
	bool removed;       /* id reserved by ggml, no longer a valid type */
};

/* Geometry of type id t, or NULL if t is outside 0..QT_COUNT-1.
 * Removed ids return an entry with removed = true. */
const struct quant_type_info *quant_type_info(uint32_t t);

/* True if t names a type a tensor may have. */
bool quant_type_valid(uint32_t t);

/* Name of t ("q4_K"); "removed(N)" style names for removed ids, "?" for
 * unknown ones. Never NULL. */
const char *quant_type_name(uint32_t t);

/* Type id for a name (case-insensitive), or -1. */
int quant_type_from_name(const char *name);

/* Bytes of a row of n elements of type t. Returns 0 (and sets *ok = false
 * when ok is non-NULL) if t is invalid, n is not a multiple of the block or
 * the size overflows. */
size_t quant_row_size(uint32_t t, uint64_t n, bool *ok);

/* ---- element conversions (quant/convert.c) ------------------------------ */

float quant_fp16_to_f32(uint16_t h);
float quant_bf16_to_f32(uint16_t h);
uint16_t quant_f32_to_fp16(float f); /* round to nearest even (as numpy and F16C) */
uint16_t quant_f32_to_bf16(float f); /* round to nearest even, NaN kept quiet (ggml's rule) */

/* ---- what the products and the encoder take (quant/dot.c, quant/quantize.c) ---- */

/* Type the activations take in a dot with weights of type t: QT_Q8_0,
 * QT_Q8_1, QT_Q8_K, or QT_F32 for the float types and the types that
 * decode a block to floats first. */
uint32_t quant_vec_dot_type(uint32_t t);

/* True if t can be a weight matrix of the products (every backend's
 * mat_prepare, lib/cpu's matmul, the model loaders' checks): the float
 * types, and the block types that dot with Q8 activations. */
bool quant_is_weight_type(uint32_t t);

/* True if quant_quantize_row() can encode type t. */
bool quant_can_quantize(uint32_t t);

#endif
