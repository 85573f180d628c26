/* dot_avx512.c - AVX-512 (F, BW, VL, DQ, VNNI) dot kernels: simd_x86.inc
 * with the VNNI dot product and mask registers, compiled with AVX-512
 * flags. Called only when CPUID reports them. */
#include "quant/qimpl.h"

#if defined(__x86_64__)
#define KSUFFIX avx512
#define QX_VNNI 1
#include "quant/simd_x86.inc"

void quant_kernels_avx512_init(struct quant_kernels *k)
{
	fill_kernels_avx512(k);
}
#endif
