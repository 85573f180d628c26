/* bench_repack.c - does a load-time repack of the weights into the GEMM's
 * panel layout (lib/cpu/matmul.h, enum cpu_mm_repack) beat the per-call
 * conversion? For each type, shape and batch size it times the product
 * prepared without a repack (A) and with one (B: the stored panels; for one
 * token, CPU_MM_REPACK_ALL, i.e. decode through the panels too), the two
 * interleaved round by round (A B B A ...), and prints the median per-call
 * time of each, B / A, the repack's one-off cost and its memory.
 *
 * Weights are spread over enough copies that the working set exceeds the
 * last-level cache, as a model's layers do.
 *
 *   cc -O2 -std=c11 -D_GNU_SOURCE -I. scripts/bench_repack.c build/release/libtern.a -lpthread -lm -o /tmp/bench_repack
 *   /tmp/bench_repack [THREADS] [ROUNDS] [TYPES]      defaults: 2 9 q4_0,q8_0,q4_K,q6_K */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lib/cpu/matmul.h"
#include "lib/cpu/threadpool.h"
#include "quant/cpu.h"
#include "quant/gemm.h"
#include "quant/quant.h"
#include "tests/quant_util.h"

static double now_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof *v, cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

#define MAX_ROUNDS 64

struct side {
	struct cpu_mm *mm; /* [copies] */
	double t[MAX_ROUNDS];
};

/* one round: calls products over the copies; returns seconds per call */
static double round_time(struct side *s, int copies, struct tp_pool *p, const float *x, int64_t nt, float *y,
			 void *scratch, int calls)
{
	double t0 = now_s();
	for (int i = 0; i < calls; i++)
		cpu_mm_run(&s->mm[i % copies], p, x, nt, y, scratch);
	return (now_s() - t0) / calls;
}

int main(int argc, char **argv)
{
	int nth = argc > 1 ? atoi(argv[1]) : 2;
	int rounds = argc > 2 ? atoi(argv[2]) : 9;
	const char *types = argc > 3 ? argv[3] : "q4_0,q8_0,q4_K,q6_K";
	if (nth < 1 || rounds < 1 || rounds > MAX_ROUNDS) {
		fprintf(stderr, "usage: bench_repack [THREADS] [ROUNDS 1..%d] [TYPES]\n", MAX_ROUNDS);
		return 2;
	}
	struct tp_pool *pool;
	tern_err e = {0};
	if (tp_new(&pool, nth, &e)) {
		fprintf(stderr, "%s\n", e.msg);
		return 1;
	}
	static const int64_t shapes[][2] = {{4096, 4096}, {2048, 5632}};
	static const int64_t toks[] = {1, 32, 128, 512};
	printf("threads %d, rounds %d, isa %s; A = per-call panels (file rows for 1 token), B = stored panels\n", nth,
	       rounds, quant_isa_name(quant_isa()));
	printf("%-6s %10s %5s %11s %11s %7s %12s %12s\n", "type", "rows x cols", "tok", "A ms", "B ms", "B/A",
	       "repack ms", "panels/file");
	char *list = strdup(types);
	for (char *tok = strtok(list, ","); tok; tok = strtok(NULL, ",")) {
		int t = quant_type_from_name(tok);
		if (t < 0 || !quant_gemm_ok((uint32_t)t)) {
			fprintf(stderr, "%s: no GEMM kernel here\n", tok);
			continue;
		}
		for (size_t si = 0; si < sizeof shapes / sizeof *shapes; si++) {
			int64_t rows = shapes[si][0], cols = shapes[si][1];
			size_t rs = quant_row_size((uint32_t)t, (uint64_t)cols, NULL), mat = rs * (size_t)rows;
			int copies = (int)((256u << 20) / mat) + 1;
			uint8_t *w = malloc(mat * (size_t)copies);
			qu_seed(1);
			for (int64_t r = 0; r < rows; r++)
				qu_random_row((uint32_t)t, w + (size_t)r * rs, cols);
			for (int c = 1; c < copies; c++)
				memcpy(w + (size_t)c * mat, w, mat);
			float *x = malloc(sizeof(float) * (size_t)cols * 512), *y = malloc(sizeof(float) * (size_t)rows * 512);
			for (int64_t i = 0; i < cols * 512; i++)
				x[i] = qu_normal();
			struct side a = {0}, b = {0};
			a.mm = calloc((size_t)copies, sizeof *a.mm);
			b.mm = calloc((size_t)copies, sizeof *b.mm);
			struct cpu_mm_opts oa = {.max_tokens = 512}, ob = {.max_tokens = 512, .repack = CPU_MM_REPACK_ALL};
			size_t ss = 0;
			double rp0 = now_s();
			for (int c = 0; c < copies; c++)
				if (cpu_mm_prepare(&b.mm[c], pool, (uint32_t)t, w + (size_t)c * mat, rs, rows, cols, &ob, &e))
					goto fail;
			double rp_ms = (now_s() - rp0) * 1e3 / copies;
			for (int c = 0; c < copies; c++) {
				if (cpu_mm_prepare(&a.mm[c], pool, (uint32_t)t, w + (size_t)c * mat, rs, rows, cols, &oa, &e))
					goto fail;
				size_t m = a.mm[c].scratch_size > b.mm[c].scratch_size ? a.mm[c].scratch_size : b.mm[c].scratch_size;
				ss = m > ss ? m : ss;
			}
			void *scratch = malloc(ss);
			for (size_t ti = 0; ti < sizeof toks / sizeof *toks; ti++) {
				int64_t nt = toks[ti];
				/* about 60 ms of work per side and round */
				double est = round_time(&a, copies, pool, x, nt, y, scratch, 2);
				int calls = (int)(0.06 / est) + 1;
				if (calls < copies && nt == 1)
					calls = copies; /* decode: every call from memory */
				for (int r = 0; r < rounds; r++) {
					if (r % 2 == 0) {
						a.t[r] = round_time(&a, copies, pool, x, nt, y, scratch, calls);
						b.t[r] = round_time(&b, copies, pool, x, nt, y, scratch, calls);
					} else {
						b.t[r] = round_time(&b, copies, pool, x, nt, y, scratch, calls);
						a.t[r] = round_time(&a, copies, pool, x, nt, y, scratch, calls);
					}
				}
				double ma = median(a.t, rounds), mb = median(b.t, rounds);
				printf("%-6s %5lldx%-5lld %4lld %11.3f %11.3f %7.3f %12.1f %12.2f\n", tok, (long long)rows,
				       (long long)cols, (long long)nt, ma * 1e3, mb * 1e3, mb / ma, rp_ms,
				       (double)cpu_mm_panel_bytes(&b.mm[0]) / (double)mat);
				fflush(stdout);
			}
			free(scratch);
			for (int c = 0; c < copies; c++) {
				cpu_mm_release(&a.mm[c]);
				cpu_mm_release(&b.mm[c]);
			}
			free(a.mm);
			free(b.mm);
			free(x);
			free(y);
			free(w);
		}
	}
	free(list);
	tp_free(pool);
	return 0;
fail:
	fprintf(stderr, "%s\n", e.msg);
	return 1;
}
