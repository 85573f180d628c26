/* dot_avx2.c - AVX2 + FMA + F16C dot kernels (compiled with those flags,
 * called only when CPUID reports them). */
#include "qimpl.h"

#if defined(__x86_64__)
#include <immintrin.h>

void quant_kernels_avx2_init(struct quant_kernels *k)
{
	memset(k, 0, sizeof *k);
}
#endif
