/* quant.h - the CPU's code over GGML tensor types (quant/types.h: the
 * types themselves): the scalar reference encode, decode and dot, the SIMD
 * kernels chosen per ISA, the tiles of the products and the interleaved
 * layout of the one-token product. */
#ifndef TERN_QUANT_H
#define TERN_QUANT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "quant/types.h"

/* ---- encode, decode, dot (quant/ref.c, quant/quantize.c, quant/dot.c) ----
 * Rows are n elements, n a multiple of the type's block; pointers may have
 * any alignment. */

/* Decode n elements of a row of `type` at src (any alignment) into dst.
 * Covers every valid type (integer types are converted to float).
 * n must be a multiple of the type's block. Returns 0 or TERN_EINVAL. */
int quant_dequantize_row(uint32_t type, const void *src, float *dst, uint64_t n);

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
