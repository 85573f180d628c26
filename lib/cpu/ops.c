/* ops.c - the scalar instantiation of the kernels of lib/cpu/ops_kern.inc
 * (one lane: the same algorithms as the SIMD tables, for CPUs without
 * them), the choice of table by quant_isa(), and the combine of a decode
 * attention split over key chunks. */
#include "lib/cpu/ops.h"

#include <pthread.h>
#include <stdbool.h>

#include "quant/cpu.h"

#define OPS_VW 1
#define OPS_INIT ops_scalar_init
static void ops_scalar_init(struct cpu_ops *t);
#include "lib/cpu/ops_kern.inc"

static struct cpu_ops tables[QUANT_ISA_NEON + 1];
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void init_tables(void)
{
	for (int i = 0; i <= QUANT_ISA_NEON; i++)
		ops_scalar_init(&tables[i]);
#if defined(__x86_64__)
	/* the initializers are compiled for their ISA: the compiler may store
	 * the table with its vector instructions, which fault on a CPU
	 * without them (an AVX2 machine ran into AVX-512 stores here) */
	const struct quant_cpu *f = quant_cpu();
	if (f->avx2 && f->fma && f->f16c)
		cpu_ops_avx2_init(&tables[QUANT_ISA_AVX2]);
	if (f->avx512f && f->avx512bw && f->avx512vl && f->avx512dq && f->avx512vnni)
		cpu_ops_avx512_init(&tables[QUANT_ISA_AVX512]);
#endif
}

const struct cpu_ops *cpu_ops(void) { return cpu_ops_isa(quant_isa()); }

const struct cpu_ops *cpu_ops_isa(int isa)
{
	pthread_once(&once, init_tables);
	return &tables[isa];
}

void cpu_attn_combine(const struct cpu_attn_args *a, int64_t h0, int64_t h1)
{
	int64_t hd = a->hdv, nc = a->n_chunks;
	for (int64_t h = h0; h < h1; h++) {
		const float *pp = a->part + h * nc * (hd + 2);
		float m = -INFINITY, l = 0;
		for (int64_t c = 0; c < nc; c++)
			m = pp[c * (hd + 2)] > m ? pp[c * (hd + 2)] : m;
		float *y = a->y + h * hd;
		for (int64_t d = 0; d < hd; d++)
			y[d] = 0;
		for (int64_t c = 0; c < nc; c++) {
			const float *cp = pp + c * (hd + 2);
			if (cp[0] == -INFINITY)
				continue;
			float w = expf(cp[0] - m);
			l += w * cp[1];
			for (int64_t d = 0; d < hd; d++)
				y[d] += w * cp[2 + d];
		}
		float inv = cpu_attn_inv(a, h, m, l);
		for (int64_t d = 0; d < hd; d++)
			y[d] *= inv;
	}
}
