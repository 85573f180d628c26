/* iq_grids.h - lookup grids of the IQ formats (data in iq_grids.c, generated
 * by scripts/gen_iq_grids.py). */
#ifndef TERN_QUANT_IQ_GRIDS_H
#define TERN_QUANT_IQ_GRIDS_H

#include <stdint.h>

extern const uint64_t quant_iq2xxs_grid[256]; /* 8 values in {8, 25, 43} */
extern const uint64_t quant_iq2xs_grid[512];
extern const uint64_t quant_iq2s_grid[1024];
extern const uint32_t quant_iq3xxs_grid[256]; /* 4 values in {4..62} */
extern const uint32_t quant_iq3s_grid[512];   /* 4 odd values 1..15 */
extern const uint64_t quant_iq1s_grid[2048];  /* 8 int8 values in {-1, 0, 1} */
extern const uint8_t quant_ksigns_iq2xs[128]; /* 7 sign bits + parity bit */

#endif
