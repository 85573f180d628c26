/* ggml_order.h - weight x activation products that round as ggml's x86
 * CPU backend does (llama.cpp's defaults: tinyBLAS for Q8_0, the repacked
 * 8x8 kernels for Q4_0 and Q4_K), for the embeddings, which are checked
 * against llama.cpp's (lib/llm/embed.c says why a last-bit difference
 * matters there).
 *
 * The activations are quantized as ggml's x86 code quantizes them; the
 * integer sums are exact in any order, and the float steps are ggml's, in
 * its order:
 *   Q8_0   8 lanes, lane l the integer sum of elements 4l..4l+3 of each
 *          block: acc_l = fma(dw * da, lane sum, acc_l) block after block,
 *          then ((a4 + a0) + (a6 + a2)) + ((a5 + a1) + (a7 + a3));
 *   Q4_0   per block: acc = fma(block sum, dw * da, acc);
 *   Q4_K   acc = fma(sum of scale x sub-block sum, dw * da, acc), accm =
 *          fma(sum of min x bsums, dmin * da, accm), per 64 elements (the
 *          4-token kernel) or per super-block (the one-token kernel);
 *          acc - accm.
 * The results are the same bits whatever SIMD variant runs (the scalar code
 * uses fmaf). Not copied: ggml's product of a single token with Q8_0
 * weights (ggml_vec_dot_q8_0_q8_0, another order; tinyBLAS takes two or
 * more), so a one-token input's Q8_0 products may differ in the last bit. */
#ifndef TERN_QUANT_GGML_ORDER_H
#define TERN_QUANT_GGML_ORDER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* True if weights of type t have such a product (Q8_0, Q4_0, Q4_K). */
bool quant_ggml_ok(uint32_t t);

/* Bytes of one quantized activation row of cols elements for weights of
 * type t (QT_Q8_0 or QT_Q8_K blocks); 0 if !quant_ggml_ok(t). */
size_t quant_ggml_act_size(uint32_t t, int64_t cols);

/* Quantize one row x of cols floats for weights of type t, as ggml's x86
 * quantize_row_q8_0 (d = max|x| / 127 in f16, q = rint(x * 127 / max|x|))
 * or quantize_row_q8_K (q = rint(-127 / m x), m the first element of
 * largest magnitude, d = 1 / (-127 / m)) does. */
void quant_ggml_quantize(uint32_t t, const float *x, void *dst, int64_t cols);

/* y[r] = row r of w (rows wstride bytes apart) . act, r in [0, nrows).
 * grouped: the token is one of ggml's groups of four (its 4-token
 * kernels take the first ntok - ntok % 4 tokens of a product, its
 * one-token kernels the rest), which Q4_K rounds differently. */
void quant_ggml_rows(uint32_t t, int64_t cols, const void *w, size_t wstride, int64_t nrows, const void *act,
		     float *y, bool grouped);

/* The same for ntok tokens: act_size bytes apart (quant_ggml_act_size),
 * token k's results at y + k * ldy, the first ngrouped of them grouped;
 * the same bits as ntok calls of quant_ggml_rows, with each weight row
 * read once for every token. */
void quant_ggml_rows_n(uint32_t t, int64_t cols, const void *w, size_t wstride, int64_t nrows, const void *act,
		       size_t act_size, int64_t ntok, float *y, int64_t ldy, int64_t ngrouped);

#endif
