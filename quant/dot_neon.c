/* dot_neon.c - ARM64 NEON (+dotprod) dot kernels. */
#include "qimpl.h"

#if defined(__aarch64__)
#include <arm_neon.h>

void quant_kernels_neon_init(struct quant_kernels *k)
{
	memset(k, 0, sizeof *k);
}
#endif
