/* ops_avx512.c - the kernels of lib/cpu/ops_kern.inc on 16 lanes
 * (AVX-512F/BW/VL: the Makefile compiles *_avx512.c with those flags). */
#include "lib/cpu/ops.h"

#define OPS_VW 16
#define OPS_INIT cpu_ops_avx512_init
#include "lib/cpu/ops_kern.inc"
