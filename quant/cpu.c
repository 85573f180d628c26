/* cpu.c - CPUID / hwcap feature detection and SIMD variant selection. */
#include "quant/cpu.h"
#include "lib/core/error.h"

#include <pthread.h>
#include <stddef.h>
#include <string.h>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif
#if defined(__aarch64__)
#include <sys/auxv.h>
#ifndef HWCAP_ASIMDDP
#define HWCAP_ASIMDDP (1 << 20)
#endif
#endif

static struct quant_cpu cpu;
static char features[256];
static pthread_once_t detect_once = PTHREAD_ONCE_INIT;
static int forced = -1;

#if defined(__x86_64__) || defined(__i386__)
static unsigned long long xgetbv0(void)
{
	unsigned int lo, hi;
	__asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
	return ((unsigned long long)hi << 32) | lo;
}
#endif

static void detect(void)
{
	memset(&cpu, 0, sizeof cpu);
#if defined(__x86_64__) || defined(__i386__)
	unsigned a, b, c, d;
	if (__get_cpuid(1, &a, &b, &c, &d)) {
		bool osxsave = c & (1u << 27);
		unsigned long long xcr0 = osxsave ? xgetbv0() : 0;
		bool ymm = (xcr0 & 6) == 6;
		bool zmm = (xcr0 & 0xe6) == 0xe6;
		cpu.fma = ymm && (c & (1u << 12));
		cpu.f16c = ymm && (c & (1u << 29));
		if (__get_cpuid_count(7, 0, &a, &b, &c, &d)) {
			cpu.avx2 = ymm && (b & (1u << 5));
			cpu.avx512f = zmm && (b & (1u << 16));
			cpu.avx512dq = zmm && (b & (1u << 17));
			cpu.avx512bw = zmm && (b & (1u << 30));
			cpu.avx512vl = zmm && (b & (1u << 31));
			cpu.avx512vnni = zmm && (c & (1u << 11));
		}
		if (__get_cpuid_count(7, 1, &a, &b, &c, &d))
			cpu.avx512bf16 = zmm && (a & (1u << 5));
	}
#elif defined(__aarch64__)
	cpu.neon = true;
	cpu.dotprod = (getauxval(AT_HWCAP) & HWCAP_ASIMDDP) != 0;
#endif
	static const struct { const char *name; size_t off; } names[] = {
#define F(x) {#x, offsetof(struct quant_cpu, x)}
		F(avx2), F(fma), F(f16c), F(avx512f), F(avx512bw), F(avx512vl),
		F(avx512dq), F(avx512vnni), F(avx512bf16), F(neon), F(dotprod),
#undef F
	};
	features[0] = 0;
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
		if (*(const bool *)((const char *)&cpu + names[i].off)) {
			if (features[0])
				strcat(features, " ");
			strcat(features, names[i].name);
		}
	}
	if (!features[0])
		strcpy(features, "none");
}

/* Detection runs once, whichever thread asks first. */
const struct quant_cpu *quant_cpu(void)
{
	pthread_once(&detect_once, detect);
	return &cpu;
}

const char *quant_cpu_features_str(void)
{
	quant_cpu();
	return features;
}

bool quant_isa_supported(enum quant_isa isa)
{
	const struct quant_cpu *c = quant_cpu();
	switch (isa) {
	case QUANT_ISA_SCALAR: return true;
	case QUANT_ISA_AVX2: return c->avx2 && c->fma && c->f16c;
	case QUANT_ISA_AVX512:
		return c->avx512f && c->avx512bw && c->avx512vl && c->avx512dq &&
		       c->avx512vnni && quant_isa_supported(QUANT_ISA_AVX2);
	case QUANT_ISA_NEON: return c->neon;
	}
	return false;
}

enum quant_isa quant_isa(void)
{
	if (forced >= 0)
		return (enum quant_isa)forced;
	if (quant_isa_supported(QUANT_ISA_AVX512))
		return QUANT_ISA_AVX512;
	if (quant_isa_supported(QUANT_ISA_AVX2))
		return QUANT_ISA_AVX2;
	if (quant_isa_supported(QUANT_ISA_NEON))
		return QUANT_ISA_NEON;
	return QUANT_ISA_SCALAR;
}

const char *quant_isa_name(enum quant_isa isa)
{
	switch (isa) {
	case QUANT_ISA_SCALAR: return "scalar";
	case QUANT_ISA_AVX2: return "avx2";
	case QUANT_ISA_AVX512: return "avx512";
	case QUANT_ISA_NEON: return "neon";
	}
	return "?";
}

int quant_cpu_force(const char *name)
{
	if (!name || !*name || strcmp(name, "auto") == 0) {
		forced = -1;
		return 0;
	}
	for (int i = QUANT_ISA_SCALAR; i <= QUANT_ISA_NEON; i++) {
		if (strcmp(name, quant_isa_name((enum quant_isa)i)) == 0) {
			if (!quant_isa_supported((enum quant_isa)i))
				return TERN_EUNSUPPORTED;
			forced = i;
			return 0;
		}
	}
	return TERN_EINVAL;
}
