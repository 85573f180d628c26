/* quant.h - GGML tensor types: ids, block geometry and row sizes.
 *
 * The id numbering is fixed by the GGUF format (ggml's enum ggml_type).
 * Ids that ggml once used and later removed stay reserved: files that use
 * them are refused. */
#ifndef TERN_QUANT_H
#define TERN_QUANT_H

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

/* ---- encode, decode, dot (quant/ref.c, quant/quantize.c, quant/dot.c) ----
 * Rows are n elements, n a multiple of the type's block; pointers may have
 * any alignment. */

/* Decode n elements of a row of `type` at src (any alignment) into dst.
 * Covers every valid type (integer types are converted to float).
 * n must be a multiple of the type's block. Returns 0 or TERN_EINVAL. */
int quant_dequantize_row(uint32_t type, const void *src, float *dst, uint64_t n);

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

/* Encode n floats as type t (reference quantizer, no importance matrix).
 * Returns 0, TERN_EINVAL (bad n) or TERN_EUNSUPPORTED. */
int quant_quantize_row(uint32_t t, const float *src, void *dst, uint64_t n);

/* Quantize a row of activations to at (QT_Q8_0, QT_Q8_1, QT_Q8_K) with the
 * chosen ISA's quantizer where it has one (rounding ties may differ from
 * quant_quantize_row), else the reference. */
int quant_quantize_act(uint32_t at, const float *src, void *dst, uint64_t n);

/* Dot of n weights of type t with n activations of type
 * quant_vec_dot_type(t): the signature of every dot kernel, reference or
 * SIMD. */
typedef float (*quant_dot_fn)(int64_t n, const void *w, const void *a);

/* Scalar reference dot (always available). */
float quant_dot_ref(uint32_t t, int64_t n, const void *w, const void *a);

/* Kernel of a given ISA (enum quant_isa in cpu.h), or NULL if that ISA has
 * no kernel of its own for t or is not compiled in. */
quant_dot_fn quant_dot_kernel(uint32_t t, int isa);

/* Dot through the kernel chosen for quant_isa() (scalar if none). */
float quant_dot(uint32_t t, int64_t n, const void *w, const void *a);

/* Dot of n weights of type t with f32 activations x (decode then multiply);
 * x need not be aligned. */
float quant_dot_f32(uint32_t t, int64_t n, const void *w, const float *x);

/* Tile of dots: out[c * ostride + r] = dot(row r of w, row c of a) for
 * r < nr, c < nc; w rows are wstride bytes apart, a rows astride bytes.
 * Uses the chosen ISA's tile kernel where there is one. */
void quant_dot_tile(uint32_t t, int64_t n, const void *w, size_t wstride, int nr,
		    const void *a, size_t astride, int nc, float *out, size_t ostride);

/* ---- the interleaved layout of the one-token product (quant/dot.c) -------
 * Rows re-laid once at load time for a faster mat-vec where the chosen ISA
 * has a kernel over them: Q4_0 with AVX-512 VNNI, in chunks of 16 blocks
 * (512 elements, 288 bytes: the 16 scales, then 4 x 64 level bytes where
 * bytes 4i..4i+3 of part g are bytes 4g..4g+3 of block i's levels). A row
 * keeps its size (quant_row_size); only the bytes of each chunk move. */

/* True if type t has the layout for rows of n elements (n a multiple of
 * 512). */
bool quant_mvx_layout(uint32_t t, int64_t n);

/* True if, besides, the chosen ISA has a kernel over it (quant_mvx_tile is
 * then faster than quant_dot_tile on the file's rows). */
bool quant_mvx_ok(uint32_t t, int64_t n);

/* One row of n elements between the file's layout and the interleaved one
 * (quant_mvx_layout(t, n) must hold; src and dst do not overlap). */
void quant_mvx_pack(uint32_t t, int64_t n, const void *src, void *dst);
void quant_mvx_unpack(uint32_t t, int64_t n, const void *src, void *dst);

/* Bytes of one activation row of n elements prepared for quant_mvx_tile,
 * and the preparation: a one row of quant_vec_dot_type(t), act 64-byte
 * aligned. Done once per product, shared by every row. */
size_t quant_mvx_act_size(uint32_t t, int64_t n);
void quant_mvx_prep(uint32_t t, int64_t n, const void *a, void *act);

/* out[r] = dot(row r of w, the prepared activations) for r < nr: w rows in
 * the interleaved layout, wstride bytes apart. The ISA's kernel where there
 * is one, else the rows are read back chunk by chunk into the file's layout
 * for quant_dot (the sums taken chunk by chunk). */
void quant_mvx_tile(uint32_t t, int64_t n, const void *w, size_t wstride, int nr, const void *act, float *out);

#endif
