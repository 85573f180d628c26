/* dot_avx512.c - AVX-512 (F, BW, VL, VNNI) dot kernels (compiled with those flags,
 * called only when CPUID reports them). */
#include "qimpl.h"

#if defined(__x86_64__)
#include <immintrin.h>

void quant_kernels_avx512_init(struct quant_kernels *k)
{
	memset(k, 0, sizeof *k);
}
#endif
