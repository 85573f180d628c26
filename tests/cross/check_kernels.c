/* check_kernels.c - the quant kernel checks as a plain program, for targets
 * where cmocka is not installed: cross-compiled for ARM64 and run under
 * qemu-user by tests/cli_quant_neon.sh. Checks every type's decoder against
 * the gguf-py reference data, each SIMD dot against the scalar reference
 * (odd lengths, unaligned rows), tile results against dots, and the
 * activation quantizers. Prints one line per failure; exits 1 if any. */
#include <stdio.h>
#include <stdlib.h>

#include "quant/cpu.h"
#include "quant/quant.h"
#include "tests/quant_util.h"

static int failures, checks;

#define CHECK(cond, ...)                          \
	do {                                      \
		checks++;                         \
		if (!(cond)) {                    \
			failures++;               \
			printf("FAIL: " __VA_ARGS__); \
			printf("\n");             \
		}                                 \
	} while (0)

static void check_decoders(const char *dir)
{
	for (uint32_t t = 0; t < QT_COUNT; t++) {
		if (!quant_type_valid(t) || t == QT_I8 || t == QT_I16 || t == QT_I32 || t == QT_I64 || t == QT_F64)
			continue;
		const struct quant_type_info *ti = quant_type_info(t);
		char path[512], name[32];
		size_t k;
		for (k = 0; ti->name[k] && k < sizeof name - 1; k++)
			name[k] = (char)(ti->name[k] >= 'A' && ti->name[k] <= 'Z' ? ti->name[k] + 32 : ti->name[k]);
		name[k] = 0;
		snprintf(path, sizeof path, "%s/%s.bin", dir, name);
		FILE *f = fopen(path, "rb");
		CHECK(f != NULL, "cannot open %s", path);
		if (!f)
			continue;
		fseek(f, 0, SEEK_END);
		long len = ftell(f);
		fseek(f, 0, SEEK_SET);
		uint8_t *data = malloc((size_t)len + 1);
		size_t got = fread(data + 1, 1, (size_t)len, f);
		fclose(f);
		size_t per = ti->size + 4 * (size_t)ti->blck, nb = (size_t)len / per;
		CHECK(got == (size_t)len && nb > 0, "%s: short file", path);
		uint64_t n = nb * ti->blck;
		float *y = malloc(n * sizeof *y);
		CHECK(quant_dequantize_row(t, data + 1, y, n) == 0, "%s: decode failed", ti->name);
		int bad = 0;
		for (uint64_t i = 0; i < n && !bad; i++)
			if (memcmp(y + i, data + 1 + nb * ti->size + 4 * i, 4) != 0)
				bad = 1;
		CHECK(!bad, "%s: decoded values differ from gguf-py", ti->name);
		free(y);
		free(data);
	}
}

static void check_dots(int isa)
{
	static const int nbl[] = {1, 3, 7, 33};
	for (uint32_t t = 0; t < QT_COUNT; t++) {
		quant_dot_fn f = quant_type_valid(t) ? quant_dot_kernel(t, isa) : NULL;
		if (!f)
			continue;
		uint32_t at = quant_vec_dot_type(t);
		int64_t blk = quant_type_info(t)->blck > quant_type_info(at)->blck ? quant_type_info(t)->blck : quant_type_info(at)->blck;
		if (blk < 32)
			blk = 32;
		for (int li = 0; li < 4; li++) {
			for (int rnd = 0; rnd < 2; rnd++) {
				int64_t n = blk * nbl[li] + (quant_type_info(t)->blck == 1 ? 5 : 0);
				qu_seed(t * 100u + (unsigned)li * 10u + (unsigned)rnd);
				size_t wb = quant_row_size(t, (uint64_t)n, NULL), ab = quant_row_size(at, (uint64_t)n, NULL);
				uint8_t *w = malloc(wb + 3), *a = malloc(ab + 5);
				float *x = malloc((size_t)n * sizeof *x), *wf = malloc((size_t)n * sizeof *wf);
				qu_make_row(t, w + 3, n, rnd);
				for (int64_t i = 0; i < n; i++)
					x[i] = qu_normal();
				quant_quantize_row(at, x, a + 5, (uint64_t)n);
				float ref = quant_dot_ref(t, n, w + 3, a + 5), got = f(n, w + 3, a + 5);
				quant_dequantize_row(t, w + 3, wf, (uint64_t)n);
				quant_dequantize_row(at, a + 5, x, (uint64_t)n);
				double mag = 0;
				for (int64_t i = 0; i < n; i++)
					mag += fabs((double)wf[i] * x[i]);
				double tol = 1e-4 * fabs(ref) + 1e-6 * mag;
				CHECK(fabs((double)got - ref) <= tol, "%s %s n=%lld: simd %.9g scalar %.9g", quant_isa_name((enum quant_isa)isa),
				      quant_type_name(t), (long long)n, (double)got, (double)ref);
				free(w);
				free(a);
				free(x);
				free(wf);
			}
		}
	}
}

static void check_tiles(void)
{
	const uint32_t types[] = {QT_Q4_0, QT_Q8_0, QT_Q4_K, QT_Q6_K, QT_IQ4_NL, QT_F16};
	for (size_t k = 0; k < sizeof types / sizeof *types; k++) {
		uint32_t t = types[k], at = quant_vec_dot_type(t);
		int64_t n = quant_type_info(t)->blck == QK_K ? 2 * QK_K : 5 * 32;
		enum { NR = 6, NC = 5 };
		size_t ws = quant_row_size(t, (uint64_t)n, NULL) + 1;
		size_t as = (at == QT_F32 ? (size_t)n * 4 : quant_row_size(at, (uint64_t)n, NULL)) + 3;
		uint8_t *w = malloc(ws * NR), *a = malloc(as * NC);
		float *x = malloc((size_t)n * sizeof *x), out[NC * NR];
		for (int r = 0; r < NR; r++)
			qu_make_row(t, w + (size_t)r * ws, n, r & 1);
		for (int c = 0; c < NC; c++) {
			for (int64_t i = 0; i < n; i++)
				x[i] = qu_normal();
			if (at == QT_F32)
				memcpy(a + (size_t)c * as, x, (size_t)n * 4);
			else
				quant_quantize_act(at, x, a + (size_t)c * as, (uint64_t)n);
		}
		quant_dot_tile(t, n, w, ws, NR, a, as, NC, out, NR);
		for (int c = 0; c < NC; c++)
			for (int r = 0; r < NR; r++) {
				float want = quant_dot_ref(t, n, w + (size_t)r * ws, a + (size_t)c * as);
				CHECK(fabsf(out[c * NR + r] - want) <= 1e-3f * (fabsf(want) + 1), "%s tile[%d][%d] %g vs %g",
				      quant_type_name(t), r, c, (double)out[c * NR + r], (double)want);
			}
		free(w);
		free(a);
		free(x);
	}
}

int main(int argc, char **argv)
{
	const char *dir = argc > 1 ? argv[1] : "tests/quant_ref";
	printf("cpu: %s, kernels: %s\n", quant_cpu_features_str(), quant_isa_name(quant_isa()));
	check_decoders(dir);
	int n_isa = 0;
	for (int isa = QUANT_ISA_AVX2; isa <= QUANT_ISA_NEON; isa++) {
		if (quant_cpu_force(quant_isa_name((enum quant_isa)isa)) != 0)
			continue;
		n_isa++;
		check_dots(isa);
		check_tiles();
	}
	quant_cpu_force("auto");
	printf("%s: %d checks, %d failed (%d SIMD variants)\n", failures ? "FAIL" : "PASS", checks, failures, n_isa);
	return failures ? 1 : 0;
}
