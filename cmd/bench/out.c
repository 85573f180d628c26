/* out.c - the model benchmark's writers: the table (-o table, md), CSV,
 * JSON lines (one test object per line, as each test finishes) and the
 * JSON document of docs/bench.schema.json (written at the end, also after
 * Ctrl-C). Everything here goes to stdout; warnings went to stderr in
 * model.c. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "cmd/bench/model.h"
#include "cmd/bench/vs.h"
#include "quant/cpu.h"

extern const char tern_build_commit[], tern_build_compiler[], tern_build_flags[];

static void fmt_size(char *out, size_t cap, uint64_t b)
{
	if (b >= (1ull << 30))
		snprintf(out, cap, "%.2f GiB", (double)b / (1ull << 30));
	else
		snprintf(out, cap, "%.2f MiB", (double)b / (1ull << 20));
}

/* The larger distance from the median to the slowest or fastest run. */
static double spread(const struct bench_stats *s)
{
	return fmax(s->median - s->min, s->max - s->median);
}

static bool has_latency(const struct bench_test *t) { return t->kind != BENCH_PP && t->nlat > 0; }
static bool has_ttft(const struct bench_ctx *bc, const struct bench_test *t)
{
	return t->nruns && (t->kind != BENCH_TG || bc->o->prompt);
}

/* ---- the table ---------------------------------------------------------------- */

enum col_id {
	C_MODEL, C_SIZE, C_PARAMS, C_BACKEND, C_THREADS, C_NGL, C_BATCH, C_UBATCH, C_CTK, C_CTV,
	C_TEST, C_TPS, C_TTFT, C_P50, C_P99, C_ROOF, C_LLAMA, C_RATIO, C_COUNT
};

/* drop: on a terminal too narrow for every column, the columns with the
 * highest drop go first (0: kept whatever the width): the facts about the
 * model before the measurements, the tail latency before the median */
struct col {
	const char *name;
	int width;
	bool right;
	int drop;
};

static const struct col cols[C_COUNT] = {
	[C_MODEL] = {"model", 30, false, 0},	  [C_SIZE] = {"size", 10, true, 7},
	[C_PARAMS] = {"params", 10, true, 8},	  [C_BACKEND] = {"backend", 7, false, 4},
	[C_THREADS] = {"threads", 7, true, 2},	  [C_NGL] = {"ngl", 4, true, 0},
	[C_BATCH] = {"n_batch", 7, true, 0},	  [C_UBATCH] = {"n_ubatch", 8, true, 0},
	[C_CTK] = {"type_k", 6, false, 0},	  [C_CTV] = {"type_v", 6, false, 0},
	[C_TEST] = {"test", 16, false, 0},	  [C_TPS] = {"t/s", 18, true, 0},
	[C_TTFT] = {"TTFT ms", 9, true, 6},	  [C_P50] = {"p50 ms", 8, true, 3},
	[C_P99] = {"p99 ms", 8, true, 5},	  [C_ROOF] = {"% roof", 6, true, 1},
	[C_LLAMA] = {"llama.cpp t/s", 18, true, 0}, [C_RATIO] = {"ratio", 6, true, 0},
};

/* The columns the run asks for: the optional ones where the user gave
 * the parameter (llama-bench shows the ones that differ from its
 * defaults) or --vs. */
static uint32_t cols_wanted(const struct bench_ctx *bc)
{
	const struct bench_opts *o = bc->o;
	uint32_t m = (1u << C_COUNT) - 1;
	const struct {
		int id;
		bool on;
	} opt[] = {{C_NGL, o->ngl.n > 0},	   {C_BATCH, o->batch.n > 0}, {C_UBATCH, o->ubatch.n > 0},
		   {C_CTK, o->type_k.n > 0},	   {C_CTV, o->type_v.n > 0},  {C_LLAMA, o->vs != NULL},
		   {C_RATIO, o->vs != NULL}};
	for (size_t i = 0; i < sizeof opt / sizeof *opt; i++)
		if (!opt[i].on)
			m &= ~(1u << opt[i].id);
	return m;
}

/* Those shown: on a terminal (-o table) no more than fit its width (a
 * wrapped table cannot be read), the least important left out; every
 * one in a file, a pipe, or with -o md. */
static uint32_t table_cols(const struct bench_ctx *bc)
{
	uint32_t m = cols_wanted(bc);
	if (bc->o->out != BENCH_OUT_TABLE || !cli_isatty(stdout))
		return m;
	const int width = cli_width(stdout);
	for (;;) {
		int w = 1, worst = -1;
		for (int c = 0; c < C_COUNT; c++)
			if (m & (1u << c)) {
				w += cols[c].width + 3;
				if (cols[c].drop && (worst < 0 || cols[c].drop > cols[worst].drop))
					worst = c;
			}
		if (w <= width || worst < 0)
			return m;
		m &= ~(1u << worst);
	}
}

/* printf pads by bytes: widen by the UTF-8 continuation bytes ("±") */
static void cell(int width, bool right, const char *v)
{
	for (const char *p = v; *p; p++)
		width += ((unsigned char)*p & 0xc0) == 0x80;
	printf(right ? " %*s |" : " %-*s |", width, v);
}

static void table_header(struct bench_ctx *bc)
{
	bc->cols = table_cols(bc);
	printf("|");
	for (int c = 0; c < C_COUNT; c++)
		if (bc->cols & (1u << c))
			printf(cols[c].right ? " %*s |" : " %-*s |", cols[c].width, cols[c].name);
	printf("\n|");
	for (int c = 0; c < C_COUNT; c++) {
		if (!(bc->cols & (1u << c)))
			continue;
		for (int k = 0; k < cols[c].width + 1; k++)
			putchar('-');
		printf(cols[c].right ? ":|" : " |");
	}
	printf("\n");
}

/* the figures of --vs: llama-bench's as tern's (the median ± the larger
 * distance to a run), and their ratio */
static void vs_text(const struct bench_test *t, enum col_id c, char *b, size_t cap)
{
	if (c == C_RATIO) {
		double r = bench_vs_ratio(t);
		snprintf(b, cap, r > 0 ? "%.2f" : "-", r);
	} else if (t->vs) {
		struct bench_stats vst;
		bench_stats(t->vs->ts, t->vs->n, &vst);
		snprintf(b, cap, "%.2f ± %.2f", t->vs->median_ts, spread(&vst));
	} else {
		snprintf(b, cap, "%s", t->nruns ? "error" : "-");
	}
}

static void cell_text(const struct bench_ctx *bc, const struct bench_test *t, enum col_id c, char *b, size_t cap)
{
	const struct bench_model *bm = &bc->models[t->model];
	switch (c) {
	case C_MODEL: snprintf(b, cap, "%s", bm->label); break;
	case C_SIZE: fmt_size(b, cap, bm->weights_size); break;
	case C_PARAMS: bench_fmt_count(b, cap, bm->n_params); break;
	/* where it ran when that is a GPU (vulkan0), else the CPU backend */
	case C_BACKEND: snprintf(b, cap, "%s", t->device[0] && strcmp(t->device, "cpu") ? t->device : t->backend); break;
	case C_THREADS: snprintf(b, cap, "%" PRId64, t->threads); break;
	case C_NGL: snprintf(b, cap, "%" PRId64, t->ngl); break;
	case C_BATCH: snprintf(b, cap, "%" PRId64, t->batch); break;
	case C_UBATCH: snprintf(b, cap, "%" PRId64, t->ubatch); break;
	case C_CTK: snprintf(b, cap, "%s", t->type_k); break;
	case C_CTV: snprintf(b, cap, "%s", t->type_v); break;
	case C_TEST: snprintf(b, cap, "%s", t->name); break;
	case C_TPS:
		if (t->nruns)
			snprintf(b, cap, "%.2f ± %.2f", t->tps.median, spread(&t->tps));
		else
			snprintf(b, cap, "%s", t->skipped[0] ? "skipped" : t->error[0] ? "error" : "interrupted");
		break;
	case C_TTFT: snprintf(b, cap, has_ttft(bc, t) ? "%.2f" : "-", t->ttft.median * 1e3); break;
	case C_P50: snprintf(b, cap, has_latency(t) ? "%.2f" : "-", t->latency.p50 * 1e3); break;
	case C_P99: snprintf(b, cap, has_latency(t) ? "%.2f" : "-", t->latency.p99 * 1e3); break;
	case C_ROOF: snprintf(b, cap, t->roofline_pct > 0 ? "%.0f%%" : "-", t->roofline_pct); break;
	case C_LLAMA:
	case C_RATIO: vs_text(t, c, b, cap); break;
	case C_COUNT: b[0] = 0; break;
	}
}

static void table_row(const struct bench_ctx *bc, const struct bench_test *t)
{
	char b[192];
	printf("|");
	for (int c = 0; c < C_COUNT; c++)
		if (bc->cols & (1u << c)) {
			cell_text(bc, t, (enum col_id)c, b, sizeof b);
			cell(cols[c].width, cols[c].right, b);
		}
	printf("\n");
}

/* after the table: the columns a narrow terminal left out */
static void table_hidden(const struct bench_ctx *bc)
{
	const uint32_t hidden = cols_wanted(bc) & ~bc->cols;
	if (!hidden)
		return;
	printf("left out for the terminal's %d columns:", cli_width(stdout));
	for (int c = 0, n = 0; c < C_COUNT; c++)
		if (hidden & (1u << c))
			printf("%s %s", n++ ? "," : "", cols[c].name);
	printf(" (-o md shows every column)\n");
}

/* ---- CSV ------------------------------------------------------------------------- */

static void csv_str(const char *s)
{
	putchar('"');
	for (; *s; s++) {
		if (*s == '"')
			putchar('"');
		putchar(*s);
	}
	putchar('"');
}

static void csv_header(void)
{
	printf("model,model_type,model_size,model_n_params,backend,n_threads,n_gpu_layers,n_batch,n_ubatch,type_k,"
	       "type_v,n_depth,n_prompt,n_gen,test,status,repetitions,warmup,ts_median,ts_min,ts_max,ts_mean,ts_stddev,"
	       "ts_cv,ttft_ms_median,latency_ms_p50,latency_ms_p90,latency_ms_p99,bytes_per_token,probe_gbs,"
	       "roofline_pct,samples_ts,llama_ts_median,llama_ts_mean,ratio\n");
}

static const char *status_of(const struct bench_test *t)
{
	return t->skipped[0] ? "skipped" : t->error[0] ? "error" : t->interrupted ? "interrupted" : "ok";
}

static void csv_num(double v, bool have)
{
	if (have)
		printf(",%.6g", v);
	else
		printf(",");
}

static void csv_row(const struct bench_ctx *bc, const struct bench_test *t)
{
	const struct bench_model *bm = &bc->models[t->model];
	csv_str(bm->path);
	putchar(',');
	csv_str(bm->label);
	printf(",%" PRIu64 ",%" PRIu64 ",%s,%" PRId64 ",%" PRId64 ",%" PRId64 ",%" PRId64 ",%s,%s,%" PRId64 ",%" PRId64
	       ",%" PRId64 ",",
	       bm->weights_size, bm->n_params, t->backend, t->threads, t->ngl, t->batch, t->ubatch, t->type_k, t->type_v,
	       t->depth, t->n_prompt, t->n_gen);
	csv_str(t->name);
	printf(",%s,%d,%d", status_of(t), t->nruns, t->warmup);
	bool r = t->nruns > 0;
	csv_num(t->tps.median, r);
	csv_num(t->tps.min, r);
	csv_num(t->tps.max, r);
	csv_num(t->tps.mean, r);
	csv_num(t->tps.stddev, r);
	csv_num(t->tps.cv, r);
	csv_num(t->ttft.median * 1e3, has_ttft(bc, t));
	csv_num(t->latency.p50 * 1e3, has_latency(t));
	csv_num(t->latency.p90 * 1e3, has_latency(t));
	csv_num(t->latency.p99 * 1e3, has_latency(t));
	csv_num(t->bytes_per_token, t->bytes_per_token > 0);
	csv_num(t->probe_gbs, t->probe_gbs > 0);
	csv_num(t->roofline_pct, t->roofline_pct > 0);
	printf(",\"");
	for (int i = 0; i < t->nruns; i++)
		printf("%s%.6g", i ? ";" : "", t->runs[i].tps);
	printf("\"");
	csv_num(t->vs ? t->vs->median_ts : 0, t->vs != NULL);
	csv_num(t->vs ? t->vs->avg_ts : 0, t->vs != NULL);
	double ratio = bench_vs_ratio(t);
	csv_num(ratio, ratio > 0);
	printf("\n");
}

/* ---- JSON --------------------------------------------------------------------------- */

static void jnum(double v) { cli_json_num(stdout, v); }
static void jnum_or_null(double v, bool have)
{
	if (have)
		jnum(v);
	else
		printf("null");
}

static void jstats(const struct bench_stats *s, double scale)
{
	printf("{\"median\": ");
	jnum(s->median * scale);
	printf(", \"min\": ");
	jnum(s->min * scale);
	printf(", \"max\": ");
	jnum(s->max * scale);
	printf(", \"mean\": ");
	jnum(s->mean * scale);
	printf(", \"stddev\": ");
	jnum(s->stddev * scale);
	printf(", \"cv\": ");
	jnum(s->cv);
	printf("}");
}

static void jstr_or_null(const char *s)
{
	if (s && *s)
		bench_json_strz(s);
	else
		printf("null");
}

/* each measured run's figures */
static void json_runs(const struct bench_test *t)
{
	for (int i = 0; i < t->nruns; i++) {
		const struct bench_run *r = &t->runs[i];
		printf("%s{\"tokens_per_s\": ", i ? ", " : "");
		jnum(r->tps);
		printf(", \"total_s\": ");
		jnum(r->total_s);
		printf(", \"prefill_s\": ");
		jnum(r->prefill_s);
		printf(", \"decode_s\": ");
		jnum(r->decode_s);
		printf(", \"ttft_s\": ");
		jnum(r->ttft_s);
		printf(", \"probe_gbs\": ");
		jnum_or_null(r->probe_gbs, r->probe_gbs > 0);
		printf(", \"probe_device_gbs\": ");
		jnum_or_null(r->probe_dev_gbs, r->probe_dev_gbs > 0);
		printf(", \"roofline_pct\": ");
		jnum_or_null(r->roofline_pct, r->roofline_pct > 0);
		printf("}");
	}
}

/* --vs: llama-bench's figures and the ratio (null: none) */
static void json_vs(const struct bench_test *t)
{
	if (t->vs) {
		const struct vs_result *v = t->vs;
		printf("{\"tokens_per_s\": {\"median\": ");
		jnum(v->median_ts);
		printf(", \"mean\": ");
		jnum(v->avg_ts);
		printf(", \"stddev\": ");
		jnum(v->stddev_ts);
		printf("}, \"samples_ts\": [");
		for (int i = 0; i < v->n; i++) {
			printf("%s", i ? ", " : "");
			jnum(v->ts[i]);
		}
		printf("], \"build_commit\": ");
		bench_json_strz(v->build_commit);
		printf(", \"build_number\": %" PRId64 ", \"backends\": ", v->build_number);
		bench_json_strz(v->backends);
		printf(", \"model_type\": ");
		bench_json_strz(v->model_type);
		printf(", \"command\": ");
		bench_json_strz(v->argv_line);
		printf("}, \"ratio\": ");
		jnum(bench_vs_ratio(t));
	} else {
		printf("null, \"ratio\": null");
	}
}

/* a GPU's decode steps over the runs: how many were replayed from a
 * recording (a CUDA graph, a command buffer) and the kernels of a step
 * (null: none, the CPU) */
static void json_steps(const struct bench_test *t)
{
	uint64_t steps = 0, replays = 0, kernels = 0;
	const char *how = NULL;
	for (int i = 0; i < t->nruns; i++)
		if (t->runs[i].recording) {
			steps += t->runs[i].steps;
			replays += t->runs[i].replays;
			kernels = t->runs[i].step_kernels;
			how = t->runs[i].recording;
		}
	printf(", \"decode_steps\": ");
	if (!how) {
		printf("null");
		return;
	}
	printf("{\"steps\": %" PRIu64 ", \"replayed\": %" PRIu64 ", \"kernels_per_step\": %" PRIu64 ", \"recording\": ",
	       steps, replays, kernels);
	bench_json_strz(how);
	printf("}");
}

static void json_test(const struct bench_ctx *bc, const struct bench_test *t, bool line)
{
	const struct bench_model *bm = &bc->models[t->model];
	static const char *const kinds[] = {"pp", "tg", "pg"};
	const char *nl = line ? " " : "\n   "; /* a JSON line has no line break */
	printf("{\"model\": %d, ", t->model);
	if (line) {
		/* a JSON line stands alone: what it was measured with */
		printf("\"model_path\": ");
		bench_json_strz(bm->path);
		printf(", \"commit\": ");
		bench_json_strz(tern_build_commit);
		printf(", \"date\": \"%s\", ", bc->date);
	}
	printf("\"name\": ");
	bench_json_strz(t->name);
	printf(", \"kind\": \"%s\", \"n_prompt\": %" PRId64 ", \"n_gen\": %" PRId64 ", \"n_depth\": %" PRId64
	       ", \"backend\": \"%s\", \"n_threads\": %" PRId64 ", \"n_gpu_layers\": %" PRId64 ", \"n_batch\": %" PRId64
	       ", \"n_ubatch\": %" PRId64 ", \"type_k\": \"%s\", \"type_v\": \"%s\",%s\"status\": \"%s\", \"skipped\": ",
	       kinds[t->kind], t->n_prompt, t->n_gen, t->depth, t->backend, t->threads, t->ngl, t->batch, t->ubatch,
	       t->type_k, t->type_v, nl, status_of(t));
	jstr_or_null(t->skipped);
	/* where it ran and the plan that put it there (null: not run, or
	 * nothing planned: the CPU) */
	printf(", \"device\": ");
	jstr_or_null(t->device[0] ? t->device : NULL);
	printf(", \"plan\": ");
	if (t->plan.budget)
		printf("{\"n_gpu_layers\": %d, \"layers\": %d, \"output\": %s, \"weights_bytes\": %" PRIu64
		       ", \"kv_bytes\": %" PRIu64 ", \"output_bytes\": %" PRIu64 ", \"buffers_bytes\": %" PRIu64
		       ", \"total_bytes\": %" PRIu64 ", \"budget_bytes\": %" PRIu64 ", \"usable_bytes\": %" PRIu64 "}",
		       t->plan.ngl, t->plan.n_dev_layers, t->plan.output ? "true" : "false", t->plan.weights, t->plan.kv,
		       t->plan.output_bytes, t->plan.scratch, t->plan.total, t->plan.budget, t->plan.usable);
	else
		printf("null");
	printf(", \"error\": ");
	jstr_or_null(t->error);
	printf(", \"warmup_runs\": %d, \"runs\": [", t->warmup);
	json_runs(t);
	printf("],%s\"tokens_per_s\": ", nl);
	if (t->nruns)
		jstats(&t->tps, 1);
	else
		printf("null");
	printf(", \"ttft_ms\": ");
	if (has_ttft(bc, t))
		jstats(&t->ttft, 1e3);
	else
		printf("null");
	printf(",%s\"latency_ms\": ", nl);
	if (has_latency(t)) {
		printf("{\"n\": %d, \"p50\": ", t->latency.n);
		jnum(t->latency.p50 * 1e3);
		printf(", \"p90\": ");
		jnum(t->latency.p90 * 1e3);
		printf(", \"p99\": ");
		jnum(t->latency.p99 * 1e3);
		printf(", \"min\": ");
		jnum(t->latency.min * 1e3);
		printf(", \"max\": ");
		jnum(t->latency.max * 1e3);
		printf(", \"mean\": ");
		jnum(t->latency.mean * 1e3);
		printf("}");
	} else {
		printf("null");
	}
	printf(", \"bytes_per_token\": ");
	jnum_or_null(t->bytes_per_token, t->bytes_per_token > 0);
	printf(", \"probe_gbs\": ");
	jnum_or_null(t->probe_gbs, t->probe_gbs > 0);
	printf(", \"device_bytes_per_token\": ");
	jnum_or_null(t->dev_bytes_per_token, t->dev_bytes_per_token > 0);
	printf(", \"probe_device_gbs\": ");
	jnum_or_null(t->probe_dev_gbs, t->probe_dev_gbs > 0);
	printf(", \"roofline_pct\": ");
	jnum_or_null(t->roofline_pct, t->roofline_pct > 0);
	json_steps(t);
	printf(", \"peak_rss_bytes\": %" PRIu64 ",%s\"llama_bench\": ", t->peak_rss, nl);
	json_vs(t);
	if (bc->o->vs) {
		printf(", \"llama_bench_error\": ");
		jstr_or_null(t->vs_error);
	}
	printf("}");
}

static void json_model(const struct bench_model *bm, int i)
{
	printf("%s  {\"path\": ", i ? ",\n" : "");
	bench_json_strz(bm->path);
	printf(", \"error\": ");
	jstr_or_null(bm->error);
	if (!bm->loaded) {
		printf("}");
		return;
	}
	printf(", \"file_size\": %" PRIu64 ", \"weights_size\": %" PRIu64 ", \"sha256\": ", bm->file_size,
	       bm->weights_size);
	jstr_or_null(bm->sha256);
	printf(", \"label\": ");
	bench_json_strz(bm->label);
	printf(",\n   \"architecture\": ");
	bench_json_strz(bm->arch);
	printf(", \"n_params\": %" PRIu64 ", \"n_layer\": %u, \"n_embd\": %u, \"n_vocab\": %u, \"n_ctx_train\": %u"
	       ", \"decode_weight_bytes\": %" PRIu64 ",\n   \"weight_types\": {",
	       bm->n_params, bm->n_layer, bm->n_embd, bm->n_vocab, bm->n_ctx_train, bm->step_weight_bytes);
	bool first = true;
	for (int t = 0; t < QT_COUNT; t++)
		if (bm->type_tensors[t]) {
			printf("%s\"%s\": {\"tensors\": %" PRIu64 ", \"bytes\": %" PRIu64 "}", first ? "" : ", ",
			       quant_type_name((uint32_t)t), bm->type_tensors[t], bm->type_bytes[t]);
			first = false;
		}
	printf("}}");
}

/* `PRE"key": [...]`: pre separates it from the previous member */
static void json_int_list(const char *pre, const char *key, const int64_t *v, int n)
{
	printf("%s\"%s\": [", pre, key);
	for (int i = 0; i < n; i++)
		printf("%s%" PRId64, i ? ", " : "", v[i]);
	printf("]");
}

static void json_str_list(const char *pre, const char *key, const char *const *v, int n)
{
	printf("%s\"%s\": [", pre, key);
	for (int i = 0; i < n; i++) {
		printf("%s", i ? ", " : "");
		bench_json_strz(v[i]);
	}
	printf("]");
}

static void os_release(char *out, size_t cap)
{
	snprintf(out, cap, "unknown");
	FILE *f = fopen("/etc/os-release", "r");
	if (!f)
		return;
	char line[256];
	while (fgets(line, sizeof line, f))
		if (strncmp(line, "PRETTY_NAME=", 12) == 0) {
			char *v = line + 12;
			v[strcspn(v, "\n")] = 0;
			size_t n = strlen(v);
			if (n >= 2 && v[0] == '"' && v[n - 1] == '"') {
				v[n - 1] = 0;
				v++;
			}
			snprintf(out, cap, "%s", v);
			break;
		}
	fclose(f);
}

/* "true" when the build defined the feature macro m as 1: the macro
 * expands to 1 before it is turned into a string, an undefined one stays
 * its own name */
#define BUILT_STR(v) #v
#define BUILT(m) (BUILT_STR(m)[0] == '1' ? "true" : "false")

static void json_head(const struct bench_ctx *bc)
{
	const struct bench_opts *o = bc->o;
	const struct bench_matrix *mx = &bc->mx;
	char cpu[128], os[256];
	bench_cpu_model(cpu, sizeof cpu);
	os_release(os, sizeof os);
	struct utsname u = {0};
	uname(&u);
	printf("{\"schema\": \"tern-bench/2\",\n \"tern\": {\"version\": \"%s\", \"commit\": ", TERN_VERSION);
	bench_json_strz(tern_build_commit);
	printf(", \"compiler\": ");
	bench_json_strz(tern_build_compiler);
	printf(", \"build\": ");
	bench_json_strz(tern_build_flags);
	printf(", \"options\": {\"jansson\": %s, \"libmd\": %s, \"cuda\": %s, \"vulkan\": %s}, \"kernels\": \"%s\"},\n",
	       BUILT(TERN_HAVE_JANSSON), BUILT(TERN_HAVE_LIBMD), BUILT(TERN_HAVE_CUDA), BUILT(TERN_HAVE_VULKAN),
	       quant_isa_name(quant_isa()));
	const char *forced = getenv("TERN_CPU");
	printf(" \"date\": \"%s\",\n \"system\": {\"cpu\": ", bc->date);
	bench_json_strz(cpu);
	printf(", \"cpu_features\": ");
	bench_json_strz(quant_cpu_features_str());
	printf(", \"kernels_forced\": ");
	jstr_or_null(forced);
	printf(", \"cores\": %ld, \"threads_available\": %d, \"memory_bytes\": %" PRIu64
	       ", \"memory_available_bytes\": %" PRIu64 ",\n  \"os\": ",
	       sysconf(_SC_NPROCESSORS_ONLN), cli_default_threads(), cli_meminfo("MemTotal"), cli_mem_available());
	bench_json_strz(os);
	printf(", \"kernel\": ");
	char kern[200];
	snprintf(kern, sizeof kern, "%s %s", u.sysname, u.release);
	bench_json_strz(kern);
	printf(", \"machine\": ");
	bench_json_strz(u.machine);
	printf("},\n \"probe\": ");
	if (o->no_probe) {
		printf("null");
	} else {
		printf("[");
		int k = 0;
		for (int i = 0; i < bc->ntests; i++)
			for (int r = 0; r < bc->tests[i].nruns; r++)
				if (bc->tests[i].runs[r].probe_gbs > 0) {
					printf("%s{\"test\": %d, \"run\": %d, \"threads\": %" PRId64 ", \"gbs\": ",
					       k++ ? ", " : "", i, r, bc->tests[i].threads);
					jnum(bc->tests[i].runs[r].probe_gbs);
					printf("}");
				}
		printf("]");
	}
	printf(",\n \"params\": {");
	json_str_list("", "models", o->models.v, o->models.n);
	json_int_list(", ", "n_prompt", mx->n_prompt, mx->nn_prompt);
	json_int_list(", ", "n_gen", mx->n_gen, mx->nn_gen);
	printf(", \"pg\": [");
	for (int i = 0; i < mx->npg; i++)
		printf("%s[%" PRId64 ", %" PRId64 "]", i ? ", " : "", mx->pg[i][0], mx->pg[i][1]);
	printf("]");
	json_int_list(", ", "n_depth", mx->depth, mx->ndepth);
	json_int_list(",\n  ", "n_threads", mx->threads, mx->nthreads);
	json_int_list(", ", "n_batch", mx->batch, mx->nbatch);
	json_int_list(", ", "n_ubatch", mx->ubatch, mx->nubatch);
	json_str_list(", ", "type_k", mx->type_k, mx->ntype_k);
	json_str_list(", ", "type_v", mx->type_v, mx->ntype_v);
	/* -ngl as given: counts as numbers, auto and all as strings */
	printf(", \"n_gpu_layers\": [");
	for (int i = 0; i < mx->nngl; i++) {
		bool word = mx->ngl_s[i][0] < '0' || mx->ngl_s[i][0] > '9';
		printf(word ? "%s\"%s\"" : "%s%s", i ? ", " : "", mx->ngl_s[i]);
	}
	printf("]");
	json_str_list(", ", "backends", mx->backend, mx->nbackend);
	json_str_list(", ", "devices", mx->dev_s, mx->ndev);
	printf(",\n  \"repetitions\": %" PRId64 ", \"warmup\": %" PRId64 ", \"prompt\": ", o->reps, o->warmup);
	jstr_or_null(o->prompt);
	printf(", \"prompt_tokens\": ");
	jnum_or_null((double)bc->stream.np, o->prompt && bc->stream.np);
	printf(", \"probe\": %s, \"hash\": %s, \"vs\": ", o->no_probe ? "false" : "true", o->hash ? "true" : "false");
	jstr_or_null(o->vs);
	printf("},\n");
}

/* ---- the writers -------------------------------------------------------------------- */

void bench_out_begin(struct bench_ctx *bc)
{
	/* the table's header waits for its first row (a run where every model
	 * fails prints none); JSON is written whole at the end */
	if (bc->o->out == BENCH_OUT_CSV)
		csv_header();
	fflush(stdout);
}

void bench_out_test(struct bench_ctx *bc, struct bench_test *t)
{
	t->reported = true;
	bench_progress_clear(&bc->rp);
	switch (bc->o->out) {
	case BENCH_OUT_TABLE:
	case BENCH_OUT_MD:
		if (!bc->header_done) {
			table_header(bc);
			bc->header_done = true;
		}
		table_row(bc, t);
		break;
	case BENCH_OUT_CSV:
		csv_row(bc, t);
		break;
	case BENCH_OUT_JSONL:
		json_test(bc, t, true);
		printf("\n");
		break;
	case BENCH_OUT_JSON:
		break; /* written at the end */
	}
	bc->written++;
	fflush(stdout);
}

void bench_out_end(struct bench_ctx *bc)
{
	const struct bench_opts *o = bc->o;
	if (o->out == BENCH_OUT_JSON) {
		/* the model facts are known only once loaded: the document is
		 * written whole, at the end */
		json_head(bc);
		printf(" \"models\": [\n");
		for (int i = 0; i < bc->nmodels; i++)
			json_model(&bc->models[i], i);
		printf("],\n \"tests\": [\n");
		/* as CSV and JSON lines, the tests written as they finished: not
		 * those Ctrl-C left unstarted (they come last) */
		for (int i = 0; i < bc->ntests && bc->tests[i].reported; i++) {
			printf("%s  ", i ? ",\n" : "");
			json_test(bc, &bc->tests[i], false);
		}
		printf("],\n \"peak_rss_bytes\": %" PRIu64 ", \"device_memory_bytes\": null, \"interrupted\": %s"
		       ", \"duration_s\": ",
		       bench_peak_rss_run(), bench_interrupted ? "true" : "false");
		jnum(bc->duration_s);
		printf("}\n");
	} else if (o->out == BENCH_OUT_TABLE && bc->written) {
		/* what the figures mean, after the table */
		printf("\n");
		/* the probes' range per thread count */
		for (int i = 0; i < bc->ntests; i++) {
			const struct bench_test *t = &bc->tests[i];
			bool seen = false;
			for (int j = 0; j < i; j++)
				seen |= bc->tests[j].probe_gbs > 0 && bc->tests[j].threads == t->threads;
			if (t->probe_gbs <= 0 || seen)
				continue;
			double lo = t->probe_gbs, hi = lo;
			int n = 0;
			for (int j = i; j < bc->ntests; j++)
				for (int r = 0; r < bc->tests[j].nruns && bc->tests[j].threads == t->threads; r++) {
					double g = bc->tests[j].runs[r].probe_gbs;
					if (g > 0) {
						lo = fmin(lo, g);
						hi = fmax(hi, g);
						n++;
					}
				}
			char range[64], a[32], b[32];
			snprintf(a, sizeof a, "%.1f", lo);
			snprintf(b, sizeof b, "%.1f", hi);
			snprintf(range, sizeof range, strcmp(a, b) ? "%s-%s" : "%s", a, b);
			printf("read bandwidth before the decode runs, %" PRId64 " thread%s: %s GB/s (%d probe%s); %% roof: "
			       "the median of the runs' rates against their probes\n",
			       t->threads, t->threads == 1 ? "" : "s", range, n, n == 1 ? "" : "s");
		}
		printf("t/s: median of %" PRId64 " run%s ± the larger distance to the slowest or fastest; %" PRId64
		       " warm-up run%s discarded\n",
		       o->reps, o->reps == 1 ? "" : "s", o->warmup, o->warmup == 1 ? "" : "s");
		table_hidden(bc);
		printf("peak RSS %.1f MiB; tern %s (%s)%s\n", (double)bench_peak_rss_run() / 1048576.0, TERN_VERSION,
		       tern_build_commit, bench_interrupted ? "; interrupted" : "");
	}
	fflush(stdout);
}
