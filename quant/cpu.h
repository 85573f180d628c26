/* cpu.h - CPU feature detection and the choice of SIMD kernel variant.
 * Detection runs once; the variant can be forced (tests, benchmarks) through
 * quant_cpu_force(), which the executables call for TERN_CPU. */
#ifndef TERN_QUANT_CPU_H
#define TERN_QUANT_CPU_H

#include <stdbool.h>

struct quant_cpu {
	bool avx2, fma, f16c;
	bool avx512f, avx512bw, avx512vl, avx512dq, avx512vnni, avx512bf16;
	bool neon, dotprod;
};

enum quant_isa { QUANT_ISA_SCALAR = 0, QUANT_ISA_AVX2, QUANT_ISA_AVX512, QUANT_ISA_NEON };

/* Features of the running CPU (detected once, thread-safe after first call). */
const struct quant_cpu *quant_cpu(void);

/* Whether this CPU runs variant isa. */
bool quant_isa_supported(enum quant_isa isa);

/* Best variant this CPU runs, or the forced one. */
enum quant_isa quant_isa(void);

/* Force a variant by name ("scalar", "avx2", "avx512", "neon", "auto").
 * Returns 0, or TERN_EINVAL for an unknown name, or TERN_EUNSUPPORTED if the
 * CPU cannot run it. */
int quant_cpu_force(const char *name);

const char *quant_isa_name(enum quant_isa isa);

/* Space-separated feature list, e.g. "avx2 fma f16c avx512f ...". */
const char *quant_cpu_features_str(void);

#endif
