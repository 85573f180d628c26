/* gemm.h - weight x activation products for prompt-sized batches.
 *
 * The per-row dot kernels unpack every weight block once per token tile;
 * for a batch of tokens it pays to convert the weights once instead. The
 * GEMM path works in two steps:
 *
 *   1. the activations of the whole batch are packed once per call into
 *      tiles of a few tokens (quantized to the type the weights pair with,
 *      as the dot kernels see them, then interleaved so that the kernel
 *      broadcasts 4 bytes of each token from one pointer);
 *   2. each thread takes QG_ROWS weight rows at a time, converts them into
 *      a panel in its own scratch (integer levels of 16 rows interleaved
 *      4 bytes at a time, plus a float scale (and min) per 16 or 32
 *      elements of each row), and multiplies that panel, still in cache,
 *      with every token tile.
 *
 * The panel's integer levels times the packed activations give exactly the
 * integer sums of the reference dot; only the float accumulation order
 * differs. Nothing here allocates: the caller provides the activation
 * buffer and one scratch buffer per thread.
 *
 * Step 2 can also be split: quant_gemm_pack_panel() converts 16 rows once
 * (at load time) and quant_gemm_rows_panel() multiplies the stored panel;
 * quant_gemm_rows() is exactly the two in a row, so the results are the
 * same bits.
 *
 * Available only where the chosen ISA has a kernel for the type
 * (quant_gemm_ok); otherwise the caller uses quant_dot_tile. */
#ifndef TERN_QUANT_GEMM_H
#define TERN_QUANT_GEMM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define QG_ROWS 16

/* True if the chosen ISA has a GEMM kernel for weights of type t. */
bool quant_gemm_ok(uint32_t t);

/* Smallest batch for which the GEMM beats the per-row tiles on this
 * machine class (measured with bench --kernels and a crossover sweep):
 * converting 16 weight rows costs about as much as one pass of a dot kernel
 * over them, which a few token tiles repay; the float panels (4 bytes per
 * weight) need more tokens than the integer ones. */
int quant_gemm_min_tokens(uint32_t t);

/* Bytes of the packed activations of ntok tokens of cols elements. */
size_t quant_gemm_act_size(uint32_t t, int64_t cols, int64_t ntok);

/* Bytes of scratch each thread needs (panel plus a row buffer). */
size_t quant_gemm_tmp_size(uint32_t t, int64_t cols);

/* Pack tokens [t0, t1) of x ([ntok][cols] f32) into act. Threads may pack
 * disjoint ranges in parallel; the one call whose range ends at ntok (it
 * may be empty) also clears the padding of the last tile. tmp: this
 * thread's scratch. */
void quant_gemm_pack_act(uint32_t t, int64_t cols, const float *x, int64_t ntok, int64_t t0,
			 int64_t t1, void *act, void *tmp);

/* y[tok * ystride + r] = dot(row r of w, token tok) for r < nr (at most
 * QG_ROWS rows, wstride bytes apart) and every token of act. */
void quant_gemm_rows(uint32_t t, int64_t cols, const uint8_t *w, size_t wstride, int nr,
		     const void *act, int64_t ntok, float *y, size_t ystride, void *tmp);

/* Bytes of one panel of QG_ROWS rows of cols columns, a multiple of 64
 * (0 if the type has no kernel). */
size_t quant_gemm_panel_size(uint32_t t, int64_t cols);

/* Convert nr rows (at most QG_ROWS, wstride bytes apart) into panel
 * (64-byte aligned, quant_gemm_panel_size bytes). tmp: scratch of
 * quant_gemm_tmp_size bytes. */
void quant_gemm_pack_panel(uint32_t t, int64_t cols, const uint8_t *w, size_t wstride, int nr, void *panel,
			   void *tmp);

/* quant_gemm_rows() over a panel made by quant_gemm_pack_panel(). */
void quant_gemm_rows_panel(uint32_t t, int64_t cols, const void *panel, int nr, const void *act, int64_t ntok,
			   float *y, size_t ystride);

#endif
