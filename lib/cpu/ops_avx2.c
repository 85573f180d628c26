/* ops_avx2.c - the kernels of lib/cpu/ops_kern.inc on 8 lanes (AVX2, FMA,
 * F16C: the Makefile compiles *_avx2.c with those flags). */
#include "lib/cpu/ops.h"

#define OPS_VW 8
#define OPS_INIT cpu_ops_avx2_init
#include "lib/cpu/ops_kern.inc"
