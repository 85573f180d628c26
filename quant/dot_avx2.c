/* dot_avx2.c - AVX2 + FMA + F16C dot kernels: simd_x86.inc compiled with
 * those flags. Called only when CPUID reports them. */
#include "quant/qimpl.h"

#if defined(__x86_64__)
#define KSUFFIX avx2
#include "quant/simd_x86.inc"

void quant_kernels_avx2_init(struct quant_kernels *k)
{
	fill_kernels_avx2(k);
}
#endif
