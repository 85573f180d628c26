/* bench.c - tern-bench. For now its kernel benchmark (--kernels): the
 * machine's read bandwidth, then mat-vec and mat-mat throughput of every
 * weight type with SIMD kernels, reported as GB/s of weights read (and the
 * fraction of the measured bandwidth) and GFLOPS.
 *
 * Weights are spread over enough copies that the working set exceeds the
 * last-level cache, as a model's layers do; each timing is the median of
 * repeated calls. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "cmd/common/cli.h"
#include "quant/cpu.h"
#include "quant/quant.h"
#include "lib/cpu/matmul.h"
#include "lib/cpu/threadpool.h"

static bool o_kernels, o_json;
static int64_t o_threads = 0, o_min_ms = 300;
static const char *o_types, *o_ops = "matvec,matmul";

static const struct cli_opt opts[] = {
	{.lng = "kernels", .kind = CLI_FLAG, .dst = &o_kernels, .help = "run the kernel benchmark (bandwidth, mat-vec, mat-mat per weight type)"},
	{.lng = "json", .kind = CLI_FLAG, .dst = &o_json, .help = "print one JSON document instead of the table"},
	{.lng = "threads", .shrt = 't', .kind = CLI_INT, .dst = &o_threads, .arg = "N", .min = 1, .max = 256,
	 .help = "threads for the all-threads runs (default: the online CPUs)"},
	{.lng = "types", .kind = CLI_STR, .dst = &o_types, .arg = "LIST",
	 .help = "comma-separated weight types, e.g. q4_0,q4_K (default: every type with SIMD kernels)"},
	{.lng = "ops", .kind = CLI_STR, .dst = &o_ops, .arg = "LIST", .help = "matvec, matmul or both (default: matvec,matmul)"},
	{.lng = "min-ms", .kind = CLI_INT, .dst = &o_min_ms, .arg = "MS", .min = 1, .max = 600000,
	 .help = "time spent on each measurement, in milliseconds (default 300)"},
	{0},
};

static const struct cli_section sections[] = {
	{"OUTPUT",
	 "The text form is a table with one line per measurement: weight type, operation, rows x cols, tokens, "
	 "threads, GB/s of weights read, that rate as a percentage of the measured read bandwidth, and GFLOPS "
	 "(2 x rows x cols x tokens per call).\n"
	 "\n"
	 "With --json: {\"bandwidth_gbs\": B, \"bandwidth_1t_gbs\": B1, \"isa\": \"avx512\", \"kernels\": [{\"type\", "
	 "\"op\" (matvec or matmul), \"rows\", \"cols\", \"tokens\", \"threads\", \"gbs\", \"gflops\"}, ...]}."},
	{"METHOD",
	 "The bandwidth probe times calls that each read a 16 MiB slice of a 512 MiB buffer (split between the "
	 "threads), as the kernels are timed, and reports the median. Mat-vec is measured on 4096x4096, 5632x2048 and 2048x5632 with 1 thread and all threads; "
	 "mat-mat on the same shapes with 32, 128 and 512 tokens and all threads. Activations are quantized inside "
	 "each call, as in inference. Each figure is the median over calls made during --min-ms."},
	{"ENVIRONMENT", "TERN_CPU=scalar|avx2|avx512|neon forces a kernel variant."},
	{"EXAMPLES",
	 "  tern-bench --kernels\n"
	 "  tern-bench --kernels --json --types q4_0,q4_K,q8_0\n"
	 "  TERN_CPU=avx2 tern-bench --kernels --ops matvec"},
	{"EXIT STATUS", "0 on success, 1 on a runtime error (out of memory), 2 on a usage error."},
	{0},
};

static const struct cli_prog prog = {
	.name = "bench",
	.summary = "benchmark tern's kernels (and, later, models) on this machine",
	.usage = "--kernels [OPTIONS]",
	.description =
		"tern-bench measures how fast this machine runs tern. With --kernels it measures the read "
		"bandwidth of the memory, then the quantized mat-vec (one token, decode) and mat-mat (a batch of "
		"tokens, prompt processing) of each weight type, and reports how close mat-vec comes to the "
		"bandwidth limit.",
	.opts = opts,
	.min_pos = 0,
	.max_pos = 0,
	.sections = sections,
};

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static void *xmalloc(size_t n)
{
	void *p = NULL;
	if (posix_memalign(&p, 64, n ? n : 1) != 0 || !p) {
		cli_error("out of memory (%zu bytes)", n);
		exit(EXIT_RUNTIME);
	}
	return p;
}

/* ---- bandwidth probe -------------------------------------------------------
 * Measured the way the kernels are: calls that each read a 16 MiB slice
 * (split between the threads), stepping through a 512 MiB buffer so that
 * nothing is served from the cache, timed per call; the median over
 * --min-ms. Each thread's read is the f32 dot of its part with itself: one
 * stream through the widest loads the CPU has. */

struct bw_job {
	const float *buf;
	int64_t n;
	float sink[256];
};

static void bw_body(void *arg, int ith, int nth)
{
	struct bw_job *j = arg;
	int64_t per = (j->n / nth) & ~(int64_t)63;
	int64_t i0 = per * ith, cnt = ith == nth - 1 ? j->n - i0 : per;
	j->sink[ith & 255] = quant_dot(QT_F32, cnt, j->buf + i0, j->buf + i0);
}

static double bandwidth(struct tp_pool *p, const float *buf, int64_t n)
{
	const int64_t slice = (16 << 20) / 4;
	int64_t nslices = n / slice;
	double *times = xmalloc(sizeof(double) * 100000);
	int cnt = 0;
	struct bw_job j = {.buf = buf, .n = slice};
	tp_run(p, bw_body, &j); /* warm up: clocks, threads */
	double start = now_s();
	for (int64_t k = 0; cnt < 100000 && (cnt < 5 || now_s() - start < (double)o_min_ms / 1000); k++) {
		j.buf = buf + (k % nslices) * slice;
		double t0 = now_s();
		tp_run(p, bw_body, &j);
		times[cnt++] = now_s() - t0;
	}
	qsort(times, (size_t)cnt, sizeof *times, cmp_double);
	double gbs = (double)slice * 4 / times[cnt / 2] / 1e9;
	free(times);
	return gbs;
}

/* ---- kernels ----------------------------------------------------------------- */

struct result {
	uint32_t type;
	const char *op;
	int64_t rows, cols, tokens;
	int threads;
	double gbs, gflops;
};

static struct result *results;
static size_t n_results, cap_results;

static void add_result(struct result r)
{
	if (n_results == cap_results) {
		cap_results = cap_results ? 2 * cap_results : 64;
		results = realloc(results, cap_results * sizeof *results);
		if (!results) {
			cli_error("out of memory");
			exit(EXIT_RUNTIME);
		}
	}
	results[n_results++] = r;
}

/* Weights: `copies` matrices (working set beyond the LLC), filled by
 * quantizing random normal values where the type has a quantizer, else with
 * random blocks decoded and re-checked for finiteness. */
static void fill_weights(uint32_t t, uint8_t *w, int64_t rows, int64_t cols, size_t rs)
{
	float *x = xmalloc((size_t)cols * sizeof *x);
	uint64_t s = 88172645463325252ull;
	for (int64_t r = 0; r < rows; r++) {
		for (int64_t i = 0; i < cols; i++) {
			s ^= s << 13;
			s ^= s >> 7;
			s ^= s << 17;
			x[i] = (float)((double)(s >> 11) / 9007199254740992.0 * 2 - 1);
		}
		if (quant_can_quantize(t)) {
			quant_quantize_row(t, x, w + r * rs, (uint64_t)cols);
		} else {
			/* random bytes with a small fp16 scale in every 2-byte slot
			 * that holds one: for the IQ types the scale is at offset 0 */
			for (size_t i = 0; i < rs; i++) {
				s ^= s << 13;
				s ^= s >> 7;
				s ^= s << 17;
				w[r * rs + i] = (uint8_t)s;
			}
			const struct quant_type_info *ti = quant_type_info(t);
			for (size_t b = 0; b < rs / ti->size; b++) {
				uint16_t h = quant_f32_to_fp16(0.01f);
				memcpy(w + r * rs + b * ti->size, &h, 2);
			}
		}
	}
	free(x);
}

static void bench_shape(struct tp_pool *pool1, struct tp_pool *pooln, uint32_t t, int64_t rows, int64_t cols,
			bool do_mv, bool do_mm)
{
	size_t rs = quant_row_size(t, (uint64_t)cols, NULL);
	size_t mat = rs * (size_t)rows;
	int copies = (int)((256u << 20) / mat) + 1;
	uint8_t *w = xmalloc(mat * (size_t)copies);
	fill_weights(t, w, rows, cols, rs);
	for (int c = 1; c < copies; c++)
		memcpy(w + (size_t)c * mat, w, mat);
	static const int64_t toks[] = {1, 32, 128, 512};
	float *x = xmalloc((size_t)cols * 512 * sizeof *x);
	for (int64_t i = 0; i < cols * 512; i++)
		x[i] = sinf((float)i * 0.37f);
	float *y = xmalloc((size_t)rows * 512 * sizeof *y);
	/* one prepared matrix per copy (and pool: the scratch is per thread) */
	struct cpu_mm *mm = xmalloc(sizeof *mm * (size_t)copies);
	struct cpu_mm_opts mo = {.max_tokens = 512};
	size_t ss = 1;
	tern_err e = {0};
	for (int c = 0; c < copies; c++) {
		if (cpu_mm_prepare(&mm[c], pooln, t, w + (size_t)c * mat, rs, rows, cols, &mo, &e)) {
			cli_warn("%s: skipped: %s", quant_type_name(t), e.msg);
			do_mv = do_mm = false;
			copies = c;
			break;
		}
		ss = mm[c].scratch_size > ss ? mm[c].scratch_size : ss;
	}
	void *scratch = xmalloc(ss);
	for (size_t ti = 0; ti < sizeof toks / sizeof *toks; ti++) {
		int64_t nt = toks[ti];
		if ((nt == 1 && !do_mv) || (nt > 1 && !do_mm))
			continue;
		for (int pi = 0; pi < 2; pi++) {
			struct tp_pool *p = pi ? pooln : pool1;
			if (nt > 1 && !pi)
				continue; /* mat-mat: all threads only */
			if (pi && tp_threads(pooln) == 1 && nt == 1)
				continue;
			double *times = xmalloc(sizeof(double) * 100000);
			int n = 0, c = 0;
			double start = now_s();
			cpu_mm_run(&mm[0], p, x, nt, y, scratch); /* warm up */
			while (n < 100000 && (n < 3 || now_s() - start < (double)o_min_ms / 1000)) {
				double t0 = now_s();
				cpu_mm_run(&mm[c], p, x, nt, y, scratch);
				times[n++] = now_s() - t0;
				c = (c + 1) % copies;
			}
			qsort(times, (size_t)n, sizeof *times, cmp_double);
			double med = times[n / 2];
			free(times);
			add_result((struct result){t, nt == 1 ? "matvec" : "matmul", rows, cols, nt, tp_threads(p),
						   (double)mat / med / 1e9, 2.0 * (double)rows * (double)cols * (double)nt / med / 1e9});
		}
	}
	for (int c = 0; c < copies; c++)
		cpu_mm_release(&mm[c]);
	free(mm);
	free(scratch);
	free(y);
	free(x);
	free(w);
}

static bool in_list(const char *list, const char *name)
{
	size_t n = strlen(name);
	for (const char *p = list; p && *p;) {
		const char *e = strchr(p, ',');
		size_t len = e ? (size_t)(e - p) : strlen(p);
		if (len == n && strncasecmp(p, name, n) == 0)
			return true;
		p = e ? e + 1 : NULL;
	}
	return false;
}

static void print_table(double bw, double bw1)
{
	printf("read bandwidth: %.1f GB/s (all threads), %.1f GB/s (1 thread); kernels: %s\n\n", bw, bw1,
	       quant_isa_name(quant_isa()));
	printf("%-8s %-6s %11s %6s %7s %8s %6s %9s\n", "type", "op", "shape", "tokens", "threads", "GB/s", "%bw", "GFLOPS");
	for (size_t i = 0; i < n_results; i++) {
		const struct result *r = &results[i];
		char shape[32];
		snprintf(shape, sizeof shape, "%" PRId64 "x%" PRId64, r->rows, r->cols);
		printf("%-8s %-6s %11s %6" PRId64 " %7d %8.1f %5.0f%% %9.1f\n", quant_type_name(r->type), r->op, shape,
		       r->tokens, r->threads, r->gbs, 100 * r->gbs / (r->threads == 1 ? bw1 : bw), r->gflops);
	}
}

static void print_json(double bw, double bw1)
{
	/* all figures are finite and positive: two decimals are plenty */
	printf("{\"bandwidth_gbs\": %.2f, \"bandwidth_1t_gbs\": %.2f, \"isa\": \"%s\", \"kernels\": [", bw, bw1,
	       quant_isa_name(quant_isa()));
	for (size_t i = 0; i < n_results; i++) {
		const struct result *r = &results[i];
		printf("%s\n  {\"type\": \"%s\", \"op\": \"%s\", \"rows\": %" PRId64 ", \"cols\": %" PRId64
		       ", \"tokens\": %" PRId64 ", \"threads\": %d, \"gbs\": %.2f, \"gflops\": %.2f}",
		       i ? "," : "", quant_type_name(r->type), r->op, r->rows, r->cols, r->tokens, r->threads, r->gbs,
		       r->gflops);
	}
	printf("\n]}\n");
}

int main(int argc, char **argv)
{
	struct cli_common common;
	const char **pos;
	int npos;
	cli_parse(&prog, argc, argv, &common, &pos, &npos);
	free(pos);
	if (!o_kernels)
		cli_usage_error("only the kernel benchmark exists so far: use --kernels");
	bool do_mv = in_list(o_ops, "matvec"), do_mm = in_list(o_ops, "matmul");
	if (!do_mv && !do_mm)
		cli_usage_error("--ops: expected matvec, matmul or both");

	static const uint32_t kernel_types[] = {
		QT_Q4_0, QT_Q4_1, QT_Q5_0, QT_Q5_1, QT_Q8_0, QT_Q2_K, QT_Q3_K, QT_Q4_K, QT_Q5_K, QT_Q6_K,
		QT_IQ4_NL, QT_IQ4_XS, QT_IQ3_XXS, QT_IQ2_XXS, QT_F16, QT_BF16, QT_F32,
	};
	uint32_t types[QT_COUNT];
	int ntypes = 0;
	if (o_types) {
		for (uint32_t t = 0; t < QT_COUNT; t++)
			if (quant_type_valid(t) && in_list(o_types, quant_type_name(t)))
				types[ntypes++] = t;
		if (!ntypes)
			cli_usage_error("--types: no known type in '%s'", o_types);
	} else {
		for (size_t i = 0; i < sizeof kernel_types / sizeof *kernel_types; i++)
			types[ntypes++] = kernel_types[i];
	}

	int nth = o_threads ? (int)o_threads : (int)sysconf(_SC_NPROCESSORS_ONLN);
	if (nth < 1)
		nth = 1;
	struct tp_pool *pool1, *pooln;
	tern_err e = {0};
	int rc = tp_new(&pool1, 1, &e);
	if (!rc)
		rc = tp_new(&pooln, nth, &e);
	if (rc)
		return cli_fail(NULL, rc, &e);

	int64_t nbw = (int64_t)(512u << 20) / 4;
	float *buf = xmalloc((size_t)nbw * 4);
	for (int64_t i = 0; i < nbw; i++)
		buf[i] = 1.0f / (float)(1 + (i & 1023));
	double bw = bandwidth(pooln, buf, nbw), bw1 = bandwidth(pool1, buf, nbw);
	free(buf);
	if (!common.quiet)
		fprintf(stderr, "%s: read bandwidth %.1f GB/s (%d threads), %.1f GB/s (1 thread)\n", cli_progname(), bw, nth,
			bw1);

	static const int64_t shapes[][2] = {{4096, 4096}, {5632, 2048}, {2048, 5632}};
	for (int k = 0; k < ntypes; k++) {
		for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++) {
			bench_shape(pool1, pooln, types[k], shapes[s][0], shapes[s][1], do_mv, do_mm);
			if (common.verbose)
				fprintf(stderr, "%s: %s %" PRId64 "x%" PRId64 " done\n", cli_progname(),
					quant_type_name(types[k]), shapes[s][0], shapes[s][1]);
		}
	}
	if (o_json)
		print_json(bw, bw1);
	else
		print_table(bw, bw1);
	tp_free(pool1);
	tp_free(pooln);
	free(results);
	return 0;
}
