/* kernels.c - tern-bench --kernels: the machine's read bandwidth, then
 * mat-vec and mat-mat throughput of every weight type with SIMD kernels,
 * reported as GB/s of weights read (mat-vec also as a fraction of the
 * measured bandwidth) and GFLOPS.
 *
 * Weights are spread over enough copies that the working set exceeds the
 * last-level cache, as a model's layers do. Each figure is the median of
 * several repetitions, each the median of the calls made during --min-ms,
 * and the slowest and fastest repetitions are reported beside it. The read
 * bandwidth is probed again before each type, so that a figure is compared
 * with the machine as it was when the figure was taken (a shared machine
 * drifts).
 *
 * Rows are written as they finish (the run takes minutes); progress goes to
 * stderr when it is a terminal. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "cmd/bench/bench.h"
#include "lib/cpu/matmul.h"
#include "lib/cpu/threadpool.h"
#include "quant/cpu.h"
#include "quant/quant.h"

extern const char tern_build_commit[];

static const struct bench_opts *O;

/* ---- what to run ----------------------------------------------------------- */


struct plan {
	uint32_t types[QT_COUNT];
	int ntypes;
	int64_t shapes[3][2];
	int nshapes;
	int64_t toks[4]; /* 1 (mat-vec) and/or the mat-mat batches */
	int ntoks;
	bool mv, mm;
	int nth;
	double min_s;
	int reps;
};

/* Cells of one (type, shape): mat-vec with 1 thread and all threads, each
 * mat-mat batch with all threads. */
static int cells_per_shape(const struct plan *pl)
{
	int n = 0;
	for (int i = 0; i < pl->ntoks; i++)
		n += pl->toks[i] == 1 && pl->nth > 1 ? 2 : 1;
	return n;
}

/* Types that exist only as activations (q8_1, q8_K) or as integer and
 * double tensors: no model stores a weight matrix in them, and the products
 * have no kernel for them. */
static bool never_weights(uint32_t t)
{
	switch (t) {
	case QT_Q8_1: case QT_Q8_K: case QT_I8: case QT_I16: case QT_I32: case QT_I64: case QT_F64:
		return true;
	}
	return false;
}

/* Split a comma-separated list; calls fn on each non-empty item (at most 31
 * bytes, longer items are passed truncated and then fail to match). */
static void each_item(const char *list, void (*fn)(const char *item, void *ctx), void *ctx)
{
	for (const char *p = list; p && *p;) {
		const char *e = strchr(p, ',');
		size_t len = e ? (size_t)(e - p) : strlen(p);
		char item[32];
		if (len) {
			snprintf(item, sizeof item, "%.*s", (int)len, p);
			fn(item, ctx);
		}
		p = e ? e + 1 : NULL;
	}
}

static void add_type(const char *name, void *ctx)
{
	struct plan *pl = ctx;
	int t = quant_type_from_name(name);
	if (t < 0)
		cli_usage_error("--types: unknown type '%s'", name);
	if (never_weights((uint32_t)t))
		cli_usage_error("--types: %s never holds a weight matrix (q8_1, q8_K, i8, i16, i32, i64 and f64 "
				"are activation, integer or double types)",
				quant_type_name((uint32_t)t));
	for (int i = 0; i < pl->ntypes; i++)
		if (pl->types[i] == (uint32_t)t)
			return;
	pl->types[pl->ntypes++] = (uint32_t)t;
}

static void add_op(const char *name, void *ctx)
{
	struct plan *pl = ctx;
	if (strcasecmp(name, "matvec") == 0)
		pl->mv = true;
	else if (strcasecmp(name, "matmul") == 0)
		pl->mm = true;
	else
		cli_usage_error("--ops: unknown operation '%s' (expected matvec, matmul or both)", name);
}

static void make_plan(struct plan *pl, int nth)
{
	static const uint32_t kernel_types[] = {
		QT_Q4_0, QT_Q4_1, QT_Q5_0, QT_Q5_1, QT_Q8_0, QT_Q2_K, QT_Q3_K, QT_Q4_K, QT_Q5_K, QT_Q6_K,
		QT_IQ4_NL, QT_IQ4_XS, QT_IQ3_XXS, QT_IQ2_XXS, QT_F16, QT_BF16, QT_F32,
	};
	static const uint32_t quick_types[] = {QT_Q4_0, QT_Q4_K, QT_Q8_0};
	static const int64_t shapes[][2] = {{4096, 4096}, {5632, 2048}, {2048, 5632}};
	static const int64_t toks[] = {1, 32, 128, 512}, quick_toks[] = {1, 128};

	*pl = (struct plan){.nth = nth};
	each_item(O->ops, add_op, pl);
	if (!pl->mv && !pl->mm)
		cli_usage_error("--ops: expected matvec, matmul or both");
	if (O->types) {
		each_item(O->types, add_type, pl);
		if (!pl->ntypes)
			cli_usage_error("--types: no type in '%s'", O->types);
	} else if (O->quick) {
		for (size_t i = 0; i < sizeof quick_types / sizeof *quick_types; i++)
			pl->types[pl->ntypes++] = quick_types[i];
	} else {
		for (size_t i = 0; i < sizeof kernel_types / sizeof *kernel_types; i++)
			pl->types[pl->ntypes++] = kernel_types[i];
	}
	pl->nshapes = O->quick ? 1 : 3;
	memcpy(pl->shapes, shapes, sizeof pl->shapes);
	const int64_t *tk = O->quick ? quick_toks : toks;
	int ntk = O->quick ? 2 : 4;
	for (int i = 0; i < ntk; i++)
		if ((tk[i] == 1 && pl->mv) || (tk[i] > 1 && pl->mm))
			pl->toks[pl->ntoks++] = tk[i];
	pl->min_s = (double)(O->quick && !O->min_ms_seen ? 50 : O->min_ms) / 1000;
	pl->reps = (int)O->reps;
}

/* ---- progress and warnings on stderr ------------------------------------------ */

struct report {
	struct bench_report b;
	bool json;
	int rows;                   /* rows written so far */
	int over;                   /* mat-vec figures above their probe */
};

struct probe {
	uint32_t before; /* the type measured after it */
	double bw, bw1;  /* GB/s with all threads, with one */
};

/* ---- kernels ----------------------------------------------------------------- */

struct cell {
	uint32_t type;
	int64_t rows, cols, tokens;
	int threads;
	double t[3];   /* seconds per call: fastest, median, slowest repetition */
	int reps;
	long calls;
	double probe;  /* GB/s of the probe with the same threads, before this type */
};

/* Weights: quantized random values where the type has a quantizer, else
 * random blocks with a small fp16 scale in every 2-byte slot that holds
 * one (for the IQ types the scale is at offset 0). */
static void fill_weights(uint32_t t, uint8_t *w, int64_t rows, int64_t cols, size_t rs)
{
	float *x = bench_xmalloc((size_t)cols * sizeof *x);
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

/* The buffers of one (type, shape). */
struct bufs {
	uint8_t *w;    /* copies x [rows][cols] of the type */
	size_t rs, mat;
	int copies;
	struct cpu_mm *mm; /* [copies] each copy prepared for the products */
	float *x, *y;  /* [512][cols], [512][rows] */
	void *scratch; /* the largest scratch_size of the copies */
};

/* Time one cell: reps repetitions, each the median of the calls made
 * during min_s (at least one, after one warm-up call). */
static void time_cell(struct tp_pool *p, const struct bufs *b, struct cell *c, const struct plan *pl,
		      double *times)
{
	int64_t nt = c->tokens;
	cpu_mm_run(&b->mm[0], p, b->x, nt, b->y, b->scratch); /* warm up */
	double rep[100];
	int k = 0;
	c->calls = 0;
	for (int r = 0; r < pl->reps; r++) {
		int n = 0;
		double start = bench_now();
		while (n < BENCH_MAX_CALLS && (n < 1 || bench_now() - start < pl->min_s)) {
			double t0 = bench_now();
			cpu_mm_run(&b->mm[k], p, b->x, nt, b->y, b->scratch);
			times[n++] = bench_now() - t0;
			k = (k + 1) % b->copies;
		}
		qsort(times, (size_t)n, sizeof *times, bench_cmp_double);
		rep[r] = times[n / 2];
		c->calls += n;
	}
	qsort(rep, (size_t)pl->reps, sizeof *rep, bench_cmp_double);
	c->t[0] = rep[0];
	c->t[1] = rep[pl->reps / 2];
	c->t[2] = rep[pl->reps - 1];
	c->reps = pl->reps;
}

/* ---- output ------------------------------------------------------------------- */

/* "41.0 GB/s (2 threads), 35.5 GB/s (1 thread)", or ranges "40.1-42.0 GB/s";
 * the all-threads figure alone when there is one thread. */
static void fmt_bw(char *out, size_t cap, double lo, double hi, double lo1, double hi1, int nth)
{
	char a[32], b[32];
	snprintf(a, sizeof a, lo == hi ? "%.1f" : "%.1f-%.1f", lo, hi);
	snprintf(b, sizeof b, lo1 == hi1 ? "%.1f" : "%.1f-%.1f", lo1, hi1);
	if (nth == 1)
		snprintf(out, cap, "%s GB/s (1 thread)", a);
	else
		snprintf(out, cap, "%s GB/s (%d threads), %s GB/s (1 thread)", a, nth, b);
}

static void print_head(const struct plan *pl, const struct probe *p0, struct report *rp)
{
	const char *isa = quant_isa_name(quant_isa());
	bench_progress_clear(&rp->b);
	if (!rp->json) {
		char bw[160];
		fmt_bw(bw, sizeof bw, p0->bw, p0->bw, p0->bw1, p0->bw1, pl->nth);
		printf("read bandwidth: %s; kernels: %s\n", bw, isa);
		printf("median of %d repetitions of at least %g ms each\n\n", pl->reps, pl->min_s * 1000);
		printf("%-8s %-6s %9s %6s %7s %7s %6s %8s  %s\n", "type", "op", "shape", "tokens", "threads", "GB/s", "%bw",
		       "GFLOPS", "spread");
		fflush(stdout);
		return;
	}
	char model[128], date[32];
	bench_cpu_model(model, sizeof model);
	bench_date(date, sizeof date);
	const char *forced = getenv("TERN_CPU");
	printf("{\"version\": \"%s\", \"commit\": ", TERN_VERSION);
	bench_json_strz(tern_build_commit);
	printf(", \"date\": \"%s\",\n \"cpu\": {\"model\": ", date);
	bench_json_strz(model);
	printf(", \"features\": ");
	bench_json_strz(quant_cpu_features_str());
	printf(", \"kernels\": \"%s\", \"forced\": ", isa);
	if (forced && *forced)
		bench_json_strz(forced);
	else
		printf("null");
	printf("}, \"threads\": %d,\n \"settings\": {\"types\": [", pl->nth);
	for (int i = 0; i < pl->ntypes; i++)
		printf("%s\"%s\"", i ? ", " : "", quant_type_name(pl->types[i]));
	printf("], \"ops\": [%s%s%s], \"shapes\": [", pl->mv ? "\"matvec\"" : "", pl->mv && pl->mm ? ", " : "",
	       pl->mm ? "\"matmul\"" : "");
	for (int i = 0; i < pl->nshapes; i++)
		printf("%s[%" PRId64 ", %" PRId64 "]", i ? ", " : "", pl->shapes[i][0], pl->shapes[i][1]);
	printf("], \"tokens\": [");
	for (int i = 0; i < pl->ntoks; i++)
		printf("%s%" PRId64, i ? ", " : "", pl->toks[i]);
	printf("], \"min_ms\": %g, \"repetitions\": %d, \"quick\": %s},\n", pl->min_s * 1000, pl->reps,
	       O->quick ? "true" : "false");
	printf(" \"isa\": \"%s\", \"bandwidth_gbs\": %.2f, \"bandwidth_1t_gbs\": %.2f,\n \"kernels\": [\n", isa, p0->bw,
	       p0->bw1);
	fflush(stdout);
}

static void print_cell(const struct cell *c, struct report *rp)
{
	bool mv = c->tokens == 1;
	size_t bytes = quant_row_size(c->type, (uint64_t)c->cols, NULL) * (size_t)c->rows;
	double flop = 2.0 * (double)c->rows * (double)c->cols * (double)c->tokens;
	double gbs = (double)bytes / c->t[1] / 1e9, gfl = flop / c->t[1] / 1e9;
	double pct = 100 * gbs / c->probe;
	bool over = mv && pct > 100;
	const char *op = mv ? "matvec" : "matmul";
	char shape[48];
	snprintf(shape, sizeof shape, "%" PRId64 "x%" PRId64, c->rows, c->cols);
	if (over) {
		rp->over++;
		bench_warn(&rp->b, "%s %s, %d thread%s: %.0f%% of the probe (%.1f GB/s)", quant_type_name(c->type), shape,
		     c->threads, c->threads == 1 ? "" : "s", pct, c->probe);
	}
	bench_progress_clear(&rp->b);
	if (rp->json) {
		printf("%s{\"type\": \"%s\", \"op\": \"%s\", \"rows\": %" PRId64 ", \"cols\": %" PRId64
		       ", \"tokens\": %" PRId64 ", \"threads\": %d, \"ms\": %.6g, \"ms_min\": %.6g, \"ms_max\": %.6g"
		       ", \"gbs\": %.2f, \"gbs_min\": %.2f, \"gbs_max\": %.2f, \"gflops\": %.2f, \"gflops_min\": %.2f"
		       ", \"gflops_max\": %.2f, \"probe_gbs\": %.2f, \"bandwidth_pct\": ",
		       rp->rows ? ", " : "  ", quant_type_name(c->type), op, c->rows, c->cols, c->tokens, c->threads,
		       c->t[1] * 1e3, c->t[0] * 1e3, c->t[2] * 1e3, gbs, (double)bytes / c->t[2] / 1e9,
		       (double)bytes / c->t[0] / 1e9, gfl, flop / c->t[2] / 1e9, flop / c->t[0] / 1e9, c->probe);
		if (mv)
			printf("%.1f", pct);
		else
			printf("null");
		printf(", \"over_bandwidth\": %s, \"calls\": %ld}\n", over ? "true" : "false", c->calls);
	} else {
		char pcts[16] = "-", spread[32] = "-";
		if (mv)
			snprintf(pcts, sizeof pcts, "%.0f%%%s", pct, over ? "!" : "");
		/* the slowest and fastest repetitions relative to the median */
		if (c->reps > 1)
			snprintf(spread, sizeof spread, "-%.1f/+%.1f%%", 100 * (1 - c->t[1] / c->t[2]),
				 100 * (c->t[1] / c->t[0] - 1));
		printf("%-8s %-6s %9s %6" PRId64 " %7d %7.1f %6s %8.1f  %s\n", quant_type_name(c->type), op, shape,
		       c->tokens, c->threads, gbs, pcts, gfl, spread);
	}
	rp->rows++;
	fflush(stdout);
}

/* Largest relative distance of a probe from the first one, in percent. */
static double probe_drift(const struct probe *pr, int n, bool one)
{
	double d = 0, ref = one ? pr[0].bw1 : pr[0].bw;
	for (int i = 1; i < n; i++) {
		double v = fabs((one ? pr[i].bw1 : pr[i].bw) / ref - 1) * 100;
		d = v > d ? v : d;
	}
	return d;
}

enum { DRIFT_PCT = 10 };

static void print_tail(const struct plan *pl, const struct probe *pr, int npr, double dur, struct report *rp)
{
	double drift = fmax(probe_drift(pr, npr, false), probe_drift(pr, npr, true));
	bool drifted = drift > DRIFT_PCT;
	if (rp->json) {
		printf("], \"probes\": [");
		for (int i = 0; i < npr; i++)
			printf("%s{\"before\": \"%s\", \"gbs\": %.2f, \"gbs_1t\": %.2f}", i ? ", " : "",
			       quant_type_name(pr[i].before), pr[i].bw, pr[i].bw1);
		printf("],\n \"probe_drift_pct\": %.1f, \"probe_drifted\": %s, \"over_bandwidth\": %d, \"duration_s\": %.1f}\n",
		       drift, drifted ? "true" : "false", rp->over, dur);
	} else {
		double lo = pr[0].bw, hi = lo, lo1 = pr[0].bw1, hi1 = lo1;
		for (int i = 1; i < npr; i++) {
			lo = fmin(lo, pr[i].bw), hi = fmax(hi, pr[i].bw);
			lo1 = fmin(lo1, pr[i].bw1), hi1 = fmax(hi1, pr[i].bw1);
		}
		char bw[160];
		fmt_bw(bw, sizeof bw, lo, hi, lo1, hi1, pl->nth);
		printf("\nread bandwidth, %d probe%s: %s\n", npr, npr == 1 ? "" : "s", bw);
		if (npr > 1)
			printf("the probe %s %.0f%% %s the first\n", drifted ? "drifted by up to" : "was steady: within",
			       drift, drifted ? "from" : "of");
		if (rp->over)
			printf("%d mat-vec figure%s above the probe (marked !)\n", rp->over, rp->over == 1 ? "" : "s");
		printf("%d measurement%s in %.0f s\n", rp->rows, rp->rows == 1 ? "" : "s", dur);
	}
	fflush(stdout);
}

/* ---- the run ------------------------------------------------------------------ */

struct bench {
	struct plan pl;
	struct report rp;
	struct tp_pool *pool1, *pooln;
	double *times;      /* [BENCH_MAX_CALLS] per-call times of one repetition */
	uint64_t *buf;      /* [nbw] the bandwidth probe's buffer */
	int64_t nbw;
	struct probe *pr;   /* [pl.ntypes] one before each type */
	double warned_drift;
	bool verbose;
};

static void bufs_free(struct bufs *b);

/* Weights (enough copies to leave the caches), activations and outputs of
 * one (type, shape), each copy prepared for the products on pooln. */
static int bufs_new(struct bufs *b, struct tp_pool *pooln, uint32_t t, int64_t rows, int64_t cols, tern_err *e)
{
	b->rs = quant_row_size(t, (uint64_t)cols, NULL);
	b->mat = b->rs * (size_t)rows;
	b->copies = (int)((256u << 20) / b->mat) + 1;
	b->w = bench_xmalloc(b->mat * (size_t)b->copies);
	fill_weights(t, b->w, rows, cols, b->rs);
	for (int c = 1; c < b->copies; c++)
		memcpy(b->w + (size_t)c * b->mat, b->w, b->mat);
	b->x = bench_xmalloc((size_t)cols * 512 * sizeof *b->x);
	for (int64_t i = 0; i < cols * 512; i++)
		b->x[i] = sinf((float)i * 0.37f);
	b->y = bench_xmalloc((size_t)rows * 512 * sizeof *b->y);
	b->mm = bench_xmalloc(sizeof *b->mm * (size_t)b->copies);
	struct cpu_mm_opts mo = {.max_tokens = 512};
	size_t ss = 1;
	for (int c = 0; c < b->copies; c++) {
		int rc = cpu_mm_prepare(&b->mm[c], pooln, t, b->w + (size_t)c * b->mat, b->rs, rows, cols, &mo, e);
		if (rc) {
			b->copies = c;
			bufs_free(b);
			return rc;
		}
		ss = b->mm[c].scratch_size > ss ? b->mm[c].scratch_size : ss;
	}
	b->scratch = bench_xmalloc(ss);
	return 0;
}

static void bufs_free(struct bufs *b)
{
	for (int c = 0; c < b->copies; c++)
		cpu_mm_release(&b->mm[c]);
	free(b->mm);
	free(b->scratch);
	free(b->y);
	free(b->x);
	free(b->w);
}

/* Probe the bandwidth before type k; the first probe opens the output,
 * the others are compared with it (-v: each is printed on stderr). */
static void probe(struct bench *b, int k)
{
	const struct plan *pl = &b->pl;
	uint32_t t = pl->types[k];
	struct probe *p = &b->pr[k], *p0 = &b->pr[0];
	double dur = pl->min_s * pl->reps;
	char bw[160];
	bench_progress(&b->rp.b, "probing the read bandwidth before %s", quant_type_name(t));
	p->before = t;
	p->bw = bench_bandwidth(b->pooln, b->buf, b->nbw, dur, b->times);
	/* one thread: the all-threads probe is already the one-thread one */
	p->bw1 = pl->nth == 1 ? p->bw : bench_bandwidth(b->pool1, b->buf, b->nbw, dur, b->times);
	fmt_bw(bw, sizeof bw, p->bw, p->bw, p->bw1, p->bw1, pl->nth);
	if (k == 0)
		print_head(pl, p0, &b->rp);
	/* warned when the drift first passes the threshold, and when it grows */
	double d = fabs(p->bw / p0->bw - 1) * 100, d1 = fabs(p->bw1 / p0->bw1 - 1) * 100;
	bool one = d1 > d;
	if (fmax(d, d1) > fmax(DRIFT_PCT, b->warned_drift)) {
		b->warned_drift = fmax(d, d1);
		bench_warn(&b->rp.b, "probe drifted %.0f%% before %s: %.1f vs %.1f GB/s", b->warned_drift, quant_type_name(t),
		     one ? p->bw1 : p->bw, one ? p0->bw1 : p0->bw);
	} else if (b->verbose) {
		bench_progress_clear(&b->rp.b);
		fprintf(stderr, "%s: read bandwidth before %s: %s\n", cli_progname(), quant_type_name(t), bw);
	}
}

/* Every cell of type k, shape by shape; rows are written as they finish. */
static int run_type(struct bench *bn, int k, tern_err *e)
{
	const struct plan *pl = &bn->pl;
	struct report *rp = &bn->rp;
	uint32_t t = pl->types[k];
	for (int s = 0; s < pl->nshapes; s++) {
		int64_t rows = pl->shapes[s][0], cols = pl->shapes[s][1];
		bench_progress(&rp->b, "[%d/%d] %s: preparing %" PRId64 "x%" PRId64 " weights", rp->b.done + 1, rp->b.total,
			 quant_type_name(t), rows, cols);
		struct bufs b = {0};
		int rc = bufs_new(&b, bn->pooln, t, rows, cols, e);
		if (rc)
			return rc;
		for (int ti = 0; ti < pl->ntoks; ti++) {
			int64_t nt = pl->toks[ti];
			for (int pi = nt == 1 ? 0 : 1; pi < 2; pi++) {
				struct tp_pool *p = pi ? bn->pooln : bn->pool1;
				if (pi && nt == 1 && pl->nth == 1)
					continue;
				int th = tp_threads(p);
				bench_progress(&rp->b, "[%d/%d] %s %s %" PRId64 "x%" PRId64 ", %" PRId64 " token%s, %d thread%s",
					 rp->b.done + 1, rp->b.total, quant_type_name(t), nt == 1 ? "matvec" : "matmul", rows,
					 cols, nt, nt == 1 ? "" : "s", th, th == 1 ? "" : "s");
				bench_test_start(&rp->b);
				struct cell c = {.type = t, .rows = rows, .cols = cols, .tokens = nt, .threads = th,
						 .probe = th == 1 ? bn->pr[k].bw1 : bn->pr[k].bw};
				time_cell(p, &b, &c, pl, bn->times);
				rp->b.done++;
				print_cell(&c, rp);
			}
		}
		bufs_free(&b);
	}
	return 0;
}

/* The kernel benchmark (--kernels). */
int bench_kernels(const struct bench_opts *o)
{
	O = o;
	int64_t t = cli_default_threads();
	bench_int_list(&O->threads, "-t", 1, 256, &t, 1);
	int nth = (int)t;
	struct bench b = {.verbose = o->verbose};
	make_plan(&b.pl, nth < 1 ? 1 : nth);
	b.rp = (struct report){.json = o->out == BENCH_OUT_JSON,
			       .b = {.quiet = o->quiet, .progress = !o->quiet && isatty(2),
				     .total = b.pl.ntypes * b.pl.nshapes * cells_per_shape(&b.pl)}};
	double t_start = bench_now();

	tern_err e = {0};
	int rc = tp_new(&b.pool1, 1, &e);
	if (!rc)
		rc = tp_new(&b.pooln, b.pl.nth, &e);
	if (rc)
		return cli_fail(NULL, rc, &e);
	b.times = bench_xmalloc(sizeof(double) * BENCH_MAX_CALLS);
	b.nbw = (int64_t)(512u << 20) / 8;
	b.buf = bench_xmalloc((size_t)b.nbw * 8);
	for (int64_t i = 0; i < b.nbw; i++)
		b.buf[i] = (uint64_t)i;
	b.pr = bench_xmalloc(sizeof *b.pr * (size_t)b.pl.ntypes);

	for (int k = 0; k < b.pl.ntypes && !rc; k++) {
		probe(&b, k);
		rc = run_type(&b, k, &e);
	}
	bench_progress_clear(&b.rp.b);
	if (rc) {
		cli_fail(NULL, rc, &e);
		rc = EXIT_RUNTIME; /* a kernel that fails is tern's fault, not the input's */
	} else {
		print_tail(&b.pl, b.pr, b.pl.ntypes, bench_now() - t_start, &b.rp);
	}
	free(b.pr);
	free(b.buf);
	free(b.times);
	tp_free(b.pool1);
	tp_free(b.pooln);
	return rc;
}
