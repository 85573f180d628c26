/* model.c - tern-bench -m MODEL: prefill (pp), decode (tg) and
 * prefill-then-decode (pg) tests over a matrix of models, depths, threads,
 * batch sizes, cache types and backends, with the method of the manual
 * (cmd/bench.c, METHOD; docs/bench.md): the model loaded once, warm-up runs
 * discarded, every run from the same cache state, the median of the runs
 * with its spread, latency percentiles, and decode against a bandwidth
 * probe taken in the same invocation.
 *
 * Results are collected in struct test and written as each test finishes
 * (table, md, csv, jsonl) or as one document at the end (json); out.c
 * holds the writers. */
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cmd/bench/model.h"
#include "cmd/common/device.h"
#include "lib/cpu/threadpool.h"
#include "lib/llm/llm.h"
#include "quant/quant.h"
#include "tokenizer/tok.h"

/* ---- the matrix ----------------------------------------------------------- */

static int64_t *int_list(const struct cli_list *l, const char *opt, int64_t min, int64_t max, int64_t dflt, int *n)
{
	int64_t *v = bench_xmalloc(sizeof *v * 256);
	*n = bench_int_list(l, opt, min, max, v, 256);
	if (!*n)
		v[(*n)++] = dflt;
	return v;
}

static void parse_matrix(const struct bench_opts *o, struct bench_matrix *mx)
{
	mx->n_prompt = int_list(&o->n_prompt, "-p", 0, 1 << 20, 512, &mx->nn_prompt);
	mx->n_gen = int_list(&o->n_gen, "-n", 0, 1 << 20, 128, &mx->nn_gen);
	/* llama-bench: -p and -n default to 512 and 128 only when no test is
	 * named at all; naming one kind leaves the other out */
	bool any = o->n_prompt.n || o->n_gen.n || o->pg.n;
	if (any && !o->n_prompt.n)
		mx->nn_prompt = 0;
	if (any && !o->n_gen.n)
		mx->nn_gen = 0;
	mx->npg = 0;
	for (int i = 0; i < o->pg.n; i++) {
		long long p, n;
		char extra;
		if (sscanf(o->pg.v[i], "%lld,%lld%c", &p, &n, &extra) != 2 || p < 1 || n < 1 || p > 1 << 20 || n > 1 << 20)
			cli_usage_error("-pg: '%s' is not P,N (two positive counts)", o->pg.v[i]);
		if (mx->npg == BENCH_MAX_LIST)
			cli_usage_error("-pg: more than %d tests", BENCH_MAX_LIST);
		mx->pg[mx->npg][0] = p;
		mx->pg[mx->npg++][1] = n;
	}
	mx->depth = int_list(&o->depth, "-d", 0, 1 << 20, 0, &mx->ndepth);
	mx->threads = int_list(&o->threads, "-t", 1, 256, cli_default_threads(), &mx->nthreads);
	mx->batch = int_list(&o->batch, "-b", 1, 1 << 20, 2048, &mx->nbatch);
	mx->ubatch = int_list(&o->ubatch, "-ub", 1, 1 << 20, 512, &mx->nubatch);
	mx->nngl = bench_str_list(&o->ngl, "-ngl", mx->ngl_s, mx->store_ngl, sizeof mx->store_ngl, BENCH_MAX_LIST);
	if (!mx->nngl)
		mx->ngl_s[mx->nngl++] = "auto";
	for (int i = 0; i < mx->nngl; i++) {
		int32_t v;
		if (tern_plan_parse_ngl(mx->ngl_s[i], &v))
			cli_usage_error("-ngl: '%s' is not a layer count, auto or all", mx->ngl_s[i]);
	}
	/* -dev: a comma-separated list, as llama-bench's */
	struct cli_list dl = {0};
	if (dev_o.device)
		dl.v[dl.n++] = dev_o.device;
	mx->ndev = bench_str_list(&dl, "-dev", mx->dev_s, mx->store_dev, sizeof mx->store_dev, BENCH_MAX_LIST);
	if (!mx->ndev)
		mx->dev_s[mx->ndev++] = "auto";
	/* a device that is not there is a mistake in the command, not a test
	 * to skip (one that is there and fails to start is skipped) */
	for (int i = 0; i < mx->ndev; i++) {
		tern_err de = {0};
		if (dev_check(mx->dev_s[i], &de))
			exit(cli_fail(NULL, TERN_ENOTFOUND, &de));
	}
	mx->ntype_k = bench_str_list(&o->type_k, "-ctk", mx->type_k, mx->store_k, sizeof mx->store_k, BENCH_MAX_LIST);
	mx->ntype_v = bench_str_list(&o->type_v, "-ctv", mx->type_v, mx->store_v, sizeof mx->store_v, BENCH_MAX_LIST);
	mx->nbackend = bench_str_list(&o->backend, "--backend", mx->backend, mx->store_b, sizeof mx->store_b,
				      BENCH_MAX_LIST);
	if (!mx->ntype_k)
		mx->type_k[mx->ntype_k++] = "f16";
	if (!mx->ntype_v)
		mx->type_v[mx->ntype_v++] = "f16";
	if (!mx->nbackend)
		mx->backend[mx->nbackend++] = "cpu";
	for (int i = 0; i < mx->ntype_k; i++)
		if (tern_llm_cache_type(mx->type_k[i]) < 0)
			cli_usage_error("-ctk: unknown cache type '%s' (f32, f16 or q8_0)", mx->type_k[i]);
	for (int i = 0; i < mx->ntype_v; i++)
		if (tern_llm_cache_type(mx->type_v[i]) < 0)
			cli_usage_error("-ctv: unknown cache type '%s' (f32, f16 or q8_0)", mx->type_v[i]);
	for (int i = 0; i < mx->nbackend; i++)
		if (strcmp(mx->backend[i], "cpu") && strcmp(mx->backend[i], "ref") && strcmp(mx->backend[i], "cuda") &&
		    strcmp(mx->backend[i], "vulkan"))
			cli_usage_error("--backend: unknown backend '%s' (cpu, ref, cuda or vulkan)", mx->backend[i]);
	if (o->prompt && !*o->prompt)
		cli_usage_error("--prompt: the text is empty");
	int kinds = 0;
	for (int i = 0; i < mx->nn_prompt; i++)
		kinds += mx->n_prompt[i] > 0;
	for (int i = 0; i < mx->nn_gen; i++)
		kinds += mx->n_gen[i] > 0;
	if (!kinds && !mx->npg)
		cli_usage_error("no test: -p and -n are all 0 and there is no -pg");
}

static void matrix_free(struct bench_matrix *mx)
{
	free(mx->n_prompt);
	free(mx->n_gen);
	free(mx->depth);
	free(mx->threads);
	free(mx->batch);
	free(mx->ubatch);
}

/* ---- the machine: the bandwidth probe, in a child --------------------------
 * Right before each measured run of a decode test, so that each run's
 * roofline compares it with the machine as it was a moment before (a
 * shared machine's bandwidth moves by half from one minute to the next,
 * and within a test of several seconds). The probe reads a 256 MiB buffer
 * for PROBE_S seconds: in a forked child, so that neither its memory nor
 * its threads stay in the process whose peak RSS is reported. */

#define PROBE_S 0.3

static double probe_bandwidth(int nth)
{
	int fd[2];
	if (pipe(fd) != 0)
		return 0;
	pid_t pid = fork();
	if (pid < 0) {
		close(fd[0]);
		close(fd[1]);
		return 0;
	}
	if (pid == 0) {
		close(fd[0]);
		double gbs = 0;
		struct tp_pool *p = NULL;
		tern_err e = {0};
		int64_t n = (int64_t)(256u << 20) / 8;
		uint64_t *buf = NULL;
		double *times = malloc(sizeof(double) * BENCH_MAX_CALLS);
		if (!tp_new(&p, nth, &e) && times && posix_memalign((void **)&buf, 64, (size_t)n * 8) == 0) {
			for (int64_t i = 0; i < n; i++)
				buf[i] = (uint64_t)i;
			gbs = bench_bandwidth(p, buf, n, PROBE_S, times);
		}
		if (write(fd[1], &gbs, sizeof gbs) != (ssize_t)sizeof gbs)
			_exit(1);
		_exit(0);
	}
	close(fd[1]);
	double gbs = 0;
	if (read(fd[0], &gbs, sizeof gbs) != (ssize_t)sizeof gbs)
		gbs = 0;
	close(fd[0]);
	int st;
	while (waitpid(pid, &st, 0) < 0)
		;
	return gbs;
}

/* ---- models -------------------------------------------------------------------- */

/* general.file_type as users know it from file names (llama.cpp's
 * llama_ftype numbering), NULL when unknown. */
static const char *ftype_name(uint32_t ft)
{
	static const char *const names[] = {
		[0] = "F32", [1] = "F16", [2] = "Q4_0", [3] = "Q4_1", [7] = "Q8_0", [8] = "Q5_0", [9] = "Q5_1",
		[10] = "Q2_K", [11] = "Q3_K_S", [12] = "Q3_K_M", [13] = "Q3_K_L", [14] = "Q4_K_S", [15] = "Q4_K_M",
		[16] = "Q5_K_S", [17] = "Q5_K_M", [18] = "Q6_K", [19] = "IQ2_XXS", [20] = "IQ2_XS", [21] = "Q2_K_S",
		[22] = "IQ3_XS", [23] = "IQ3_XXS", [24] = "IQ1_S", [25] = "IQ4_NL", [26] = "IQ3_S", [27] = "IQ3_M",
		[28] = "IQ2_S", [29] = "IQ2_M", [30] = "IQ4_XS", [31] = "IQ1_M", [32] = "BF16", [36] = "TQ1_0",
		[37] = "TQ2_0",
	};
	return ft < sizeof names / sizeof *names ? names[ft] : NULL;
}

/* Facts about the file: sizes, parameters, weight types, the bytes a
 * decode step reads; and every page of the weights touched once, so that
 * no test pays for page faults. */
static void describe(struct bench_model *bm, const struct bench_opts *o)
{
	const tern_mf *mf = bm->m->mf;
	const struct tern_model_config *c = &bm->m->cfg;
	bm->file_size = tern_mf_file_size(mf);
	bm->loaded = true;
	snprintf(bm->arch, sizeof bm->arch, "%s", c->arch);
	bm->n_layer = c->n_layer;
	bm->n_embd = c->n_embd;
	bm->n_vocab = c->n_vocab;
	bm->n_ctx_train = c->n_ctx_train;
	volatile uint8_t sink = 0;
	long page = sysconf(_SC_PAGESIZE);
	if (page <= 0)
		page = 4096;
	for (uint64_t i = 0; i < tern_mf_n_tensors(mf); i++) {
		const struct tern_tensor_view *t = tern_mf_tensor_at(mf, i);
		bm->weights_size += t->nbytes;
		bm->n_params += tern_tensor_nelements(t);
		if (t->type < QT_COUNT) {
			bm->type_tensors[t->type]++;
			bm->type_bytes[t->type] += t->nbytes;
		}
		const uint8_t *d = t->data;
		for (uint64_t off = 0; off < t->nbytes; off += (uint64_t)page)
			sink ^= d[off];
	}
	(void)sink;
	/* a decode step reads every tensor once, except the token embedding
	 * (one row) unless it is also the output */
	const struct tern_tensor_view *te = bm->m->w.token_embd;
	bm->step_weight_bytes = bm->weights_size;
	if (te && !c->tied_output && te->ne[1])
		bm->step_weight_bytes -= te->nbytes - te->nbytes / te->ne[1];
	/* and of a mixture's expert stacks, the n_expert_used experts chosen
	 * (scripts/bench_moe_bytes.c measures that a step reads no more) */
	for (uint32_t il = 0; c->moe.n_expert && il < c->n_layer; il++) {
		const struct tern_model_layer *L = &bm->m->w.layers[il];
		const struct tern_tensor_view *st[4] = {L->ffn_gate_exps, L->ffn_up_exps, L->ffn_down_exps,
							 L->ffn_gate_up_exps};
		for (int i = 0; i < 4; i++)
			if (st[i])
				bm->step_weight_bytes -= st[i]->nbytes - st[i]->nbytes / c->moe.n_expert * c->moe.n_expert_used;
	}
	/* the largest type by bytes names the model, as llama-bench's "Q4_K" */
	uint64_t best = 0;
	for (int t = 0; t < QT_COUNT; t++)
		if (bm->type_bytes[t] > best && t != QT_F32) {
			best = bm->type_bytes[t];
			bm->main_type = (uint32_t)t;
		}
	char p[32]; /* "134.52 M" -> "134.52M" */
	bench_fmt_count(p, sizeof p, bm->n_params);
	char *sp = strchr(p, ' ');
	if (sp)
		memmove(sp, sp + 1, strlen(sp));
	/* named by the file's type (Q4_K_M), else by its largest weight type */
	const gguf_file *gf = tern_mf_gguf(mf);
	uint32_t ft = 0;
	tern_err e = {0};
	const char *ftn = gf && gguf_get_u32(gf, "general.file_type", &ft, &e) == 0 ? ftype_name(ft) : NULL;
	snprintf(bm->label, sizeof bm->label, "%s %s %s", c->arch, p,
		 ftn ? ftn : quant_type_name(bm->main_type));
	if (o->hash)
		bench_sha256_file(bm->path, bm->sha256, sizeof bm->sha256);
}

/* KV bytes a decode step reads at context ctx: each layer's K and V rows of
 * the positions it attends to (the window on sliding-window layers); with
 * latent attention (deepseek2) the one latent row per position, V being
 * a window of it. */
static double kv_read_bytes(const struct tern_model_config *c, uint32_t tk, uint32_t tv, double ctx)
{
	double b = 0;
	for (uint32_t il = 0; il < c->n_layer; il++) {
		const struct tern_model_layer_config *lc = &c->layer[il];
		double n = lc->is_swa && c->n_swa && ctx > c->n_swa ? c->n_swa : ctx;
		if (c->n_lora_kv)
			b += n * (double)quant_row_size(tk, (uint64_t)c->n_lora_kv + c->n_rot, NULL);
		else
			b += n * (double)(quant_row_size(tk, (uint64_t)c->head_dim * lc->n_head_kv, NULL) +
					  quant_row_size(tv, (uint64_t)c->head_dim_v * lc->n_head_kv, NULL));
	}
	return b;
}

/* ---- the token streams ---------------------------------------------------------
 * Without --prompt every run's tokens come from one fixed-seed generator:
 * the depth is the stream's first tokens, a prefill the next ones. With
 * --prompt the stream is the prompt's tokens, repeated. */

static uint64_t mix64(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

/* Token i of the stream (the same in every run and every invocation). */
static int32_t stream_at(const struct bench_stream *s, int64_t i)
{
	if (s->prompt)
		return s->prompt[i % s->np];
	return (int32_t)(mix64((uint64_t)i) % (uint64_t)s->n_vocab);
}

static void stream_fill(const struct bench_stream *s, int64_t from, int64_t n, int32_t *out)
{
	for (int64_t i = 0; i < n; i++)
		out[i] = stream_at(s, from + i);
}

static int32_t argmax(const float *x, int32_t n)
{
	int32_t best = 0;
	for (int32_t i = 1; i < n; i++)
		if (x[i] > x[best])
			best = i;
	return best;
}

/* ---- one llm: a backend and a KV cache for one parameter set ----------------- */

struct engine {
	struct dev_ctx dev;
	struct tern_llm *llm;
	int64_t canon; /* positions that hold the stream's first tokens (the depth prefix) */
	int32_t *tok;  /* [cap] scratch for a batch */
	int64_t cap;
};

static void engine_free(struct engine *en)
{
	tern_llm_free(en->llm);
	dev_close(&en->dev);
	free(en->tok);
	*en = (struct engine){0};
}

/* The greedy next token, as tern-run's greedy decode takes it: the
 * argmax made where the logits are (tern_llm_set_greedy, on for the
 * engine's decodes), or of the logits where a decode kept them. */
static int32_t next_token(const struct engine *en)
{
	int32_t id;
	if (tern_llm_greedy_id(en->llm, &id))
		return id < 0 ? 0 : id;
	return argmax(tern_llm_logits(en->llm, -1), tern_llm_n_vocab(en->llm));
}

/* Decode n tokens starting at stream position from, in slices of b. */
static int feed(struct engine *en, const struct bench_stream *s, int64_t from, int64_t n, int64_t b, tern_err *e)
{
	for (int64_t done = 0; done < n;) {
		int64_t k = n - done < b ? n - done : b;
		stream_fill(s, from + done, k, en->tok);
		int rc = tern_llm_decode(en->llm, en->tok, (int32_t)k, e);
		if (rc)
			return rc;
		done += k;
	}
	return 0;
}

/* Bring the cache to the depth prefix of d tokens. */
static int to_depth(struct engine *en, const struct bench_stream *s, int64_t d, int64_t b, tern_err *e)
{
	if (en->canon >= d) {
		tern_llm_rewind(en->llm, (int32_t)d);
		return 0;
	}
	tern_llm_rewind(en->llm, (int32_t)en->canon);
	int rc = feed(en, s, en->canon, d - en->canon, b, e);
	if (rc) {
		tern_llm_rewind(en->llm, 0);
		en->canon = 0;
		return rc;
	}
	en->canon = d;
	return 0;
}

/* One run of test t: from the depth, its prefill (timed), its decode steps
 * (each timed; lat gets n_gen latencies). */
static int run_once(struct engine *en, const struct bench_stream *s, const struct bench_test *t, struct bench_run *r,
		    double *lat, tern_err *e)
{
	int rc = to_depth(en, s, t->depth, t->batch, e);
	if (rc)
		return rc;
	int64_t start = t->n_prompt ? t->n_prompt : s->prompt ? s->np : 1;
	double t0 = bench_now();
	/* a tg test's start (one token, or the --prompt) is not timed as
	 * prefill throughput but gives the time to first token */
	rc = feed(en, s, t->depth, start, t->batch, e);
	if (rc)
		return rc;
	int32_t next = next_token(en);
	double t1 = bench_now();
	r->prefill_s = t1 - t0;
	r->ttft_s = t1 - t0;
	r->decode_s = 0;
	struct tern_step_stats s0 = {0}, s1;
	bool dev_steps = en->dev.dev && tern_backend_step_stats(en->dev.dev, &s0);
	for (int64_t i = 0; i < t->n_gen; i++) {
		if (bench_interrupted)
			return BENCH_CANCELED;
		double a = bench_now();
		rc = tern_llm_decode(en->llm, &next, 1, e);
		double dt = bench_now() - a;
		if (rc)
			return rc;
		lat[i] = dt;
		r->decode_s += dt;
		next = next_token(en);
	}
	if (dev_steps && tern_backend_step_stats(en->dev.dev, &s1)) {
		r->steps = s1.steps - s0.steps;
		r->replays = s1.replays - s0.replays;
		r->step_kernels = s1.launches;
		r->recording = s1.how;
	}
	switch (t->kind) {
	case BENCH_PP:
		r->tps = (double)t->n_prompt / r->prefill_s;
		break;
	case BENCH_TG:
		r->tps = (double)t->n_gen / r->decode_s;
		break;
	case BENCH_PG:
		r->tps = (double)(t->n_prompt + t->n_gen) / (r->prefill_s + r->decode_s);
		break;
	}
	r->total_s = r->prefill_s + r->decode_s;
	return 0;
}

/* Positions test t needs in the cache. */
static int64_t positions(const struct bench_test *t, const struct bench_stream *s)
{
	int64_t start = t->n_prompt ? t->n_prompt : s->prompt ? s->np : 1;
	return t->depth + start + t->n_gen;
}

/* ---- statistics ------------------------------------------------------------------ */

static double pct_sorted(const double *v, int n, double p)
{
	int k = (int)ceil(p / 100.0 * n) - 1;
	return v[k < 0 ? 0 : k >= n ? n - 1 : k];
}

void bench_stats(const double *x, int n, struct bench_stats *st)
{
	*st = (struct bench_stats){0};
	if (n <= 0)
		return;
	double *v = bench_xmalloc(sizeof *v * (size_t)n);
	memcpy(v, x, sizeof *v * (size_t)n);
	qsort(v, (size_t)n, sizeof *v, bench_cmp_double);
	st->n = n;
	st->min = v[0];
	st->max = v[n - 1];
	st->median = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
	double sum = 0, sq = 0;
	for (int i = 0; i < n; i++)
		sum += v[i];
	st->mean = sum / n;
	for (int i = 0; i < n; i++)
		sq += (v[i] - st->mean) * (v[i] - st->mean);
	st->stddev = n > 1 ? sqrt(sq / (n - 1)) : 0;
	st->cv = st->mean > 0 ? st->stddev / st->mean : 0;
	st->p50 = pct_sorted(v, n, 50);
	st->p90 = pct_sorted(v, n, 90);
	st->p99 = pct_sorted(v, n, 99);
	free(v);
}

static void summarize(struct bench_test *t, const struct bench_model *bm, const struct bench_ctx *bc)
{
	int n = t->nruns;
	double *x = bench_xmalloc(sizeof *x * (size_t)(n ? n : 1));
	for (int i = 0; i < n; i++)
		x[i] = t->runs[i].tps;
	bench_stats(x, n, &t->tps);
	for (int i = 0; i < n; i++)
		x[i] = t->runs[i].ttft_s;
	bench_stats(x, n, &t->ttft);
	free(x);
	bench_stats(t->lat, t->nlat, &t->latency);
	if (t->kind == BENCH_TG && n) {
		const struct tern_model_config *c = &bm->m->cfg;
		uint32_t tk = (uint32_t)tern_llm_cache_type(t->type_k), tv = (uint32_t)tern_llm_cache_type(t->type_v);
		int64_t start = bc->stream.prompt ? bc->stream.np : 1;
		/* the mean context over the steps: the cache holds depth + start
		 * tokens at the first step and one more at each next one */
		double ctx = (double)(t->depth + start) + (double)(t->n_gen - 1) / 2 + 1;
		double kv = kv_read_bytes(c, tk, tv, ctx);
		t->bytes_per_token = (double)bm->step_weight_bytes + kv;
		/* the part read from a GPU's memory: its layers' weights (as a
		 * step reads them: the used experts' share), the output head
		 * there, its layers' share of the KV reads */
		const struct tern_plan *pl = &t->plan;
		if (pl->n_dev_layers > 0) {
			double share = bm->weights_size ? (double)bm->step_weight_bytes / (double)bm->weights_size : 1;
			double d = (double)pl->weights * share + (double)pl->output_bytes +
				   kv * pl->n_dev_layers / (bm->n_layer ? bm->n_layer : 1);
			bool all = pl->n_dev_layers >= (int32_t)bm->n_layer && pl->output;
			t->dev_bytes_per_token = all || d > t->bytes_per_token ? t->bytes_per_token : d;
		}
		double cpu_bytes = t->bytes_per_token - t->dev_bytes_per_token;
		/* each run against its own probes: the time its bytes take at
		 * those rates over the run's time per token; the medians */
		double *pg = bench_xmalloc(sizeof *pg * (size_t)n), *pd = bench_xmalloc(sizeof *pd * (size_t)n),
		       *pc = bench_xmalloc(sizeof *pc * (size_t)n);
		int np = 0, ng = 0, nd = 0;
		for (int i = 0; i < n; i++) {
			struct bench_run *r = &t->runs[i];
			if (r->probe_gbs > 0)
				pg[ng++] = r->probe_gbs;
			if (r->probe_dev_gbs > 0)
				pd[nd++] = r->probe_dev_gbs;
			bool cpu_ok = cpu_bytes <= 0 || r->probe_gbs > 0;
			bool dev_ok = t->dev_bytes_per_token <= 0 || r->probe_dev_gbs > 0;
			if (cpu_ok && dev_ok) {
				double s = (cpu_bytes > 0 ? cpu_bytes / (r->probe_gbs * 1e9) : 0) +
					   (t->dev_bytes_per_token > 0 ? t->dev_bytes_per_token / (r->probe_dev_gbs * 1e9) : 0);
				r->roofline_pct = 100 * s * r->tps;
				pc[np++] = r->roofline_pct;
			}
		}
		struct bench_stats st;
		if (ng) {
			bench_stats(pg, ng, &st);
			t->probe_gbs = st.median;
		}
		if (nd) {
			bench_stats(pd, nd, &st);
			t->probe_dev_gbs = st.median;
		}
		if (np) {
			bench_stats(pc, np, &st);
			t->roofline_pct = st.median;
		}
		free(pg);
		free(pd);
		free(pc);
	}
	t->peak_rss = bench_peak_rss();
}

/* ---- the run ------------------------------------------------------------------------ */

static void test_name(struct bench_test *t)
{
	int n = 0;
	if (t->kind == BENCH_PP)
		n = snprintf(t->name, sizeof t->name, "pp%" PRId64, t->n_prompt);
	else if (t->kind == BENCH_TG)
		n = snprintf(t->name, sizeof t->name, "tg%" PRId64, t->n_gen);
	else
		n = snprintf(t->name, sizeof t->name, "pp%" PRId64 "+tg%" PRId64, t->n_prompt, t->n_gen);
	if (t->depth && n > 0 && (size_t)n < sizeof t->name)
		snprintf(t->name + n, sizeof t->name - (size_t)n, " @ d%" PRId64, t->depth);
}

/* Append the tests of one model, in llama-bench's order: each parameter
 * set (backend, ngl, batch, ubatch, K and V types, threads, depth), its pp
 * tests, then tg, then pg. */
static void plan_model(struct bench_ctx *bc, int mi)
{
	const struct bench_matrix *mx = &bc->mx;
	for (int ib = 0; ib < mx->nbackend; ib++)
	for (int idv = 0; idv < mx->ndev; idv++)
	for (int ig = 0; ig < mx->nngl; ig++)
	for (int nb = 0; nb < mx->nbatch; nb++)
	for (int nu = 0; nu < mx->nubatch; nu++)
	for (int ik = 0; ik < mx->ntype_k; ik++)
	for (int iv = 0; iv < mx->ntype_v; iv++)
	for (int it = 0; it < mx->nthreads; it++)
	for (int id = 0; id < mx->ndepth; id++)
	for (int kind = 0; kind < 3; kind++) {
		int cnt = kind == BENCH_PP ? mx->nn_prompt : kind == BENCH_TG ? mx->nn_gen : mx->npg;
		for (int j = 0; j < cnt; j++) {
			struct bench_test t = {.model = mi, .kind = (enum bench_kind)kind, .backend = mx->backend[ib],
					       .ngl_s = mx->ngl_s[ig], .dev_s = mx->dev_s[idv], .batch = mx->batch[nb], .threads = mx->threads[it],
					       .type_k = mx->type_k[ik], .type_v = mx->type_v[iv], .depth = mx->depth[id]};
			t.ubatch = mx->ubatch[nu] < t.batch ? mx->ubatch[nu] : t.batch;
			t.ubatch_given = mx->ubatch[nu];
			if (kind == BENCH_PP) {
				t.n_prompt = mx->n_prompt[j];
				if (!t.n_prompt)
					continue;
			} else if (kind == BENCH_TG) {
				t.n_gen = mx->n_gen[j];
				if (!t.n_gen)
					continue;
			} else {
				t.n_prompt = mx->pg[j][0];
				t.n_gen = mx->pg[j][1];
			}
			test_name(&t);
			if (bc->ntests == bc->captests) {
				bc->captests = bc->captests ? 2 * bc->captests : 64;
				struct bench_test *nt = realloc(bc->tests, sizeof *nt * (size_t)bc->captests);
				if (!nt) {
					cli_error("out of memory");
					exit(EXIT_RUNTIME);
				}
				bc->tests = nt;
			}
			bc->tests[bc->ntests++] = t;
		}
	}
}

static void skip(struct bench_ctx *bc, struct bench_test *t, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void skip(struct bench_ctx *bc, struct bench_test *t, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(t->skipped, sizeof t->skipped, fmt, ap);
	va_end(ap);
	bench_warn(&bc->rp, "%s %s, %" PRId64 " thread%s: skipped: %s", bc->models[t->model].label, t->name,
		   t->threads, t->threads == 1 ? "" : "s", t->skipped);
}

/* Why test t cannot run, whatever the engine (the backend, the context,
 * the memory), in why; false when it can. */
static bool unfit(const struct bench_ctx *bc, const struct bench_test *t, char *why, size_t cap)
{
	const struct bench_model *bm = &bc->models[t->model];
	const struct tern_model_config *c = &bm->m->cfg;
	if (!strcmp(t->backend, "cuda") || !strcmp(t->backend, "vulkan")) {
		snprintf(why, cap, "the %s backend is not in this build", t->backend);
		return true;
	}
	int64_t need = positions(t, &bc->stream);
	if (c->n_ctx_train && need > (int64_t)c->n_ctx_train) {
		snprintf(why, cap, "it needs %" PRId64 " positions and the model's context is %u", need, c->n_ctx_train);
		return true;
	}
	uint32_t tk = (uint32_t)tern_llm_cache_type(t->type_k), tv = (uint32_t)tern_llm_cache_type(t->type_v);
	uint32_t hk = c->n_lora_kv ? c->n_lora_kv + c->n_rot : c->head_dim, hv = c->n_lora_kv ? c->n_lora_kv : c->head_dim_v;
	if (c->n_lora_kv) /* latent attention: one cache, of type_k */
		tv = tk;
	if ((tk == QT_Q8_0 || tv == QT_Q8_0) && (hk % 32 || hv % 32)) {
		snprintf(why, cap, "a q8_0 cache needs a head size that is a multiple of 32 (this model's is %u)", hk);
		return true;
	}
	double bytes = (double)tern_llm_memory_estimate(c, need, t->ubatch, tk, tv, false, NULL);
	uint64_t avail = cli_mem_available();
	if (avail && bytes > (double)avail) {
		snprintf(why, cap, "its KV cache and buffers need %.0f MiB and %.0f MiB are available",
			 bytes / 1048576.0, (double)avail / 1048576.0);
		return true;
	}
	return false;
}

/* Whether tests a and b run on the same engine (a new one is needed when
 * the model, backend, threads, physical batch or cache types change). */
static bool same_engine(const struct bench_test *a, const struct bench_test *b)
{
	return a && a->model == b->model && !strcmp(a->backend, b->backend) && !strcmp(a->ngl_s, b->ngl_s) &&
	       !strcmp(a->dev_s, b->dev_s) &&
	       a->threads == b->threads &&
	       a->ubatch == b->ubatch && !strcmp(a->type_k, b->type_k) && !strcmp(a->type_v, b->type_v);
}

static int make_engine(struct bench_ctx *bc, struct engine *en, int first, tern_err *e)
{
	struct bench_test *t = &bc->tests[first];
	struct bench_model *bm = &bc->models[t->model];
	/* the cache holds the most positions any test of this engine needs
	 * (the tests that follow with the same parameters) */
	int64_t need = 1;
	char why[256];
	int last = first;
	while (last + 1 < bc->ntests && same_engine(t, &bc->tests[last + 1]))
		last++;
	for (int i = first; i <= last; i++)
		if (!unfit(bc, &bc->tests[i], why, sizeof why)) {
			int64_t p = positions(&bc->tests[i], &bc->stream);
			need = p > need ? p : need;
		}
	int64_t batch = 1;
	for (int i = first; i <= last; i++)
		if (bc->tests[i].batch > batch)
			batch = bc->tests[i].batch;
	struct tern_device_opts dopt = {.n_threads = (int)t->threads, .max_tokens = t->ubatch,
					.reference = !strcmp(t->backend, "ref")};
	int rc = dev_open(&en->dev, t->dev_s, t->ngl_s, &dopt, e);
	if (rc)
		return rc;
	struct tern_llm_opts lo = tern_llm_opts_default();
	lo.n_ctx = (int32_t)need;
	lo.n_ubatch = (int32_t)t->ubatch;
	lo.type_k = (uint32_t)tern_llm_cache_type(t->type_k);
	lo.type_v = (uint32_t)tern_llm_cache_type(t->type_v);
	const struct cli_common cc = {.verbose = bc->o->verbose, .quiet = bc->o->quiet};
	rc = dev_llm_new(&en->dev, &cc, bm->m, &lo, &en->llm, e);
	if (rc) {
		engine_free(en);
		return rc;
	}
	tern_llm_set_greedy(en->llm, true); /* the tokens are greedy: no logits leave a GPU */
	/* what the engine's tests ran on */
	for (int i = first; i <= last; i++) {
		struct bench_test *ti = &bc->tests[i];
		snprintf(ti->device, sizeof ti->device, "%s", en->dev.info.name);
		ti->plan = en->dev.plan;
		ti->ngl = en->dev.plan.ngl;
	}
	en->cap = batch;
	en->tok = bench_xmalloc(sizeof *en->tok * (size_t)batch);
	en->canon = 0;
	return 0;
}

/* Run test t on en: warm-ups, then the measured runs. */
static int run_test(struct bench_ctx *bc, struct engine *en, struct bench_test *t, tern_err *e)
{
	const struct bench_opts *o = bc->o;
	int total = (int)(o->warmup + o->reps);
	t->runs = calloc((size_t)o->reps, sizeof *t->runs);
	t->lat = calloc((size_t)(o->reps * t->n_gen + 1), sizeof *t->lat);
	double *lat = calloc((size_t)t->n_gen + 1, sizeof *lat);
	if (!t->runs || !t->lat || !lat) {
		free(lat);
		return tern_errf(e, TERN_ENOMEM, "out of memory for the runs of %s", t->name);
	}
	t->warmup = (int)o->warmup;
	int rc = 0;
	for (int r = 0; r < total && !rc; r++) {
		if (bench_interrupted) {
			rc = BENCH_CANCELED;
			break;
		}
		bool warm = r < o->warmup;
		bench_progress(&bc->rp, "[%d/%d] %s %s, %" PRId64 "t: %s %d/%d", bc->rp.done + 1, bc->rp.total,
			       bc->models[t->model].label, t->name, t->threads, warm ? "warm-up" : "run",
			       warm ? r + 1 : r - (int)o->warmup + 1, warm ? (int)o->warmup : (int)o->reps);
		struct bench_run run = {0};
		if (!warm && t->kind == BENCH_TG && !o->no_probe) {
			bench_progress(&bc->rp, "[%d/%d] %s %s, %" PRId64 "t: probing the read bandwidth before run %d/%d",
				       bc->rp.done + 1, bc->rp.total, bc->models[t->model].label, t->name, t->threads,
				       r - (int)o->warmup + 1, (int)o->reps);
			/* the device's memory where layers are there; the host's
			 * where any is left on the CPU */
			const struct tern_plan *pl = &en->dev.plan;
			if (en->dev.dev && pl->n_dev_layers > 0) {
				tern_err pe = {0};
				if (tern_backend_read_bandwidth(en->dev.dev, &run.probe_dev_gbs, &pe))
					run.probe_dev_gbs = 0;
			}
			if (!en->dev.dev || pl->n_dev_layers < (int32_t)bc->models[t->model].n_layer || !pl->output)
				run.probe_gbs = probe_bandwidth((int)t->threads);
		}
		rc = run_once(en, &bc->stream, t, &run, lat, e);
		if (rc)
			break;
		if (!warm) {
			t->runs[t->nruns++] = run;
			memcpy(t->lat + t->nlat, lat, sizeof *lat * (size_t)t->n_gen);
			t->nlat += (int)t->n_gen;
		}
	}
	free(lat);
	return rc;
}

static void free_models(struct bench_ctx *bc)
{
	for (int i = 0; i < bc->nmodels; i++) {
		tok_vocab_free(bc->models[i].v);
		tern_model_free(bc->models[i].m);
	}
}

/* Tokens of --prompt for model bm (BOS first when its vocabulary adds one). */
static int prompt_tokens(struct bench_ctx *bc, struct bench_model *bm, tern_err *e)
{
	free(bc->prompt_tok);
	bc->prompt_tok = NULL;
	bc->stream = (struct bench_stream){.n_vocab = (int32_t)bm->m->cfg.n_vocab};
	if (!bc->o->prompt)
		return 0;
	const char *p = bc->o->prompt;
	size_t len = strlen(p), n = 0, cap = len + 8;
	bc->prompt_tok = bench_xmalloc(sizeof(int32_t) * cap);
	int rc = tok_tokenize(bm->v, p, len, true, true, bc->prompt_tok, cap, &n, NULL, e);
	if (rc)
		return rc;
	if (n > cap || n == 0)
		return tern_errf(e, TERN_EINVAL, "--prompt: the text gives %zu tokens", n);
	bc->stream.prompt = bc->prompt_tok;
	bc->stream.np = (int64_t)n;
	return 0;
}

static int load_model(struct bench_ctx *bc, int mi, tern_err *e)
{
	struct bench_model *bm = &bc->models[mi];
	bench_progress(&bc->rp, "loading %s", bm->path);
	bench_peak_rss_reset(); /* each model's tests report its own peak */
	int rc = tern_model_open(&bm->m, bm->path, e);
	if (rc)
		return rc;
	const gguf_file *gf = tern_mf_gguf(bm->m->mf);
	rc = gf ? tok_vocab_load(&bm->v, gf, e) : tern_errf(e, TERN_EFORMAT, "%s: not a GGUF file", bm->path);
	if (rc)
		return rc;
	describe(bm, bc->o);
	return 0;
}

/* What must hold before anything is measured: libmd for --hash, a word on
 * -ngl where every device is the CPU, a --vs binary that runs. 0, or the
 * exit status after a message. */
static int bench_check(struct bench_ctx *bc)
{
	const struct bench_opts *o = bc->o;
#ifndef TERN_HAVE_LIBMD
	if (o->hash) {
		cli_error("--hash: this tern-bench was built without libmd (install libmd-dev and rebuild)");
		return EXIT_RUNTIME;
	}
#endif
	for (int i = 0; i < bc->mx.nngl; i++)
		if (strcmp(bc->mx.ngl_s[i], "auto") && strcmp(bc->mx.ngl_s[i], "0")) {
			struct tern_device_opts dopt = {0};
			struct tern_device_info di;
			tern_err de = {0};
			bool all_cpu = true;
			for (int j = 0; j < bc->mx.ndev; j++)
				all_cpu &= !tern_device_find(bc->mx.dev_s[j], &dopt, &di, &de) && tern_device_is_cpu(&di);
			if (all_cpu)
				bench_warn(&bc->rp, "-ngl %s: on the CPU every layer runs on the CPU", bc->mx.ngl_s[i]);
			break;
		}
	if (o->vs) {
		char err[512];
		int rc = bench_vs_probe(o->vs, err, sizeof err);
		if (rc) {
			cli_error("%s", err);
			return rc;
		}
	}
	bc->nmodels = o->models.n;
	bc->models = calloc((size_t)bc->nmodels, sizeof *bc->models);
	if (!bc->models)
		return EXIT_RUNTIME;
	for (int i = 0; i < bc->nmodels; i++) {
		bc->models[i].path = o->models.v[i];
		snprintf(bc->models[i].label, sizeof bc->models[i].label, "%s", o->models.v[i]);
	}
	return 0;
}

/* a model that cannot be loaded: said, its tests never planned */
static void model_failed(struct bench_ctx *bc, struct bench_model *bm, const tern_err *e)
{
	/* the model's messages start with its path; the vocabulary's may not */
	if (strncmp(e->msg, bm->path, strlen(bm->path)) == 0)
		snprintf(bm->error, sizeof bm->error, "%s", e->msg);
	else
		snprintf(bm->error, sizeof bm->error, "%s: %.*s", bm->path, 400, e->msg);
	bench_error(&bc->rp, "%s (model skipped)", bm->error);
	tok_vocab_free(bm->v);
	tern_model_free(bm->m);
	bm->m = NULL;
	bm->v = NULL;
}

/* after a test: its figures, what looks wrong with them, --vs */
static void test_done(struct bench_ctx *bc, struct bench_test *t, bool failed)
{
	const struct bench_model *bm = &bc->models[t->model];
	summarize(t, bm, bc);
	if (!failed && t->nruns && t->tps.cv > 0.05)
		bench_warn(&bc->rp, "%s %s: the runs vary by %.1f%% (coefficient of variation): the machine is busy or "
				    "throttling; try more -r",
			   bm->label, t->name, 100 * t->tps.cv);
	if (!failed && t->roofline_pct > 100)
		bench_warn(&bc->rp, "%s %s: %.0f%% of the bandwidth probed before its runs: the probes read low (the "
				    "machine's bandwidth moved) or the weights were partly cached",
			   bm->label, t->name, t->roofline_pct);
	if (bc->o->vs && !bench_interrupted && !failed && t->nruns)
		bench_vs_test(bc, t);
}

/* One test on en (made again when the test needs another engine; *made_for
 * is the test it was made for): skipped when it cannot run, else its runs.
 * Returns whether it failed with an error. */
static bool test_one(struct bench_ctx *bc, struct engine *en, const struct bench_test **made_for,
		    struct bench_test *t)
{
	const struct bench_model *bm = &bc->models[t->model];
	tern_err e = {0};
	char why[256];
	bench_test_start(&bc->rp);
	if (unfit(bc, t, why, sizeof why)) {
		skip(bc, t, "%s", why);
		return false;
	}
	if (!en->llm || !same_engine(*made_for, t)) {
		engine_free(en);
		*made_for = NULL;
		if (make_engine(bc, en, (int)(t - bc->tests), &e)) {
			skip(bc, t, "%s", e.msg);
			return false;
		}
		*made_for = t;
	}
	int rc = run_test(bc, en, t, &e);
	if (rc == BENCH_CANCELED || (rc && bench_interrupted)) {
		t->interrupted = true;
		rc = 0;
	}
	if (rc) {
		snprintf(t->error, sizeof t->error, "%s", e.msg);
		bench_error(&bc->rp, "%s %s: %s", bm->label, t->name, e.msg);
		/* the cache may be in any state: start it again */
		engine_free(en);
		*made_for = NULL;
	}
	test_done(bc, t, rc != 0);
	return rc != 0;
}

/* Model mi: loaded, its tests planned and run. *status: the first
 * failure's, a test's error overriding (1). */
static void run_model(struct bench_ctx *bc, int mi, int *status)
{
	struct bench_model *bm = &bc->models[mi];
	tern_err e = {0};
	int rc = load_model(bc, mi, &e);
	if (!rc)
		rc = prompt_tokens(bc, bm, &e);
	if (rc) {
		model_failed(bc, bm, &e);
		*status = *status ? *status : cli_exit_status(rc);
		return;
	}
	int first = bc->ntests;
	plan_model(bc, mi);
	bc->rp.total = bc->ntests;
	struct engine en = {0};
	const struct bench_test *made_for = NULL;
	for (int ti = first; ti < bc->ntests && !bench_interrupted; ti++) {
		if (test_one(bc, &en, &made_for, &bc->tests[ti]))
			*status = EXIT_RUNTIME;
		bc->rp.done++;
		bench_out_test(bc, &bc->tests[ti]);
	}
	engine_free(&en);
	/* its mapping would count in the next model's peak RSS */
	tok_vocab_free(bm->v);
	tern_model_free(bm->m);
	bm->v = NULL;
	bm->m = NULL;
}

int bench_models(const struct bench_opts *o)
{
	struct bench_ctx bc = {.o = o, .t_start = bench_now()};
	parse_matrix(o, &bc.mx);
	bc.rp = (struct bench_report){.quiet = o->quiet, .progress = !o->quiet && cli_isatty(stderr)};
	bench_date(bc.date, sizeof bc.date);
	int status = bench_check(&bc);
	if (status) {
		free(bc.models);
		matrix_free(&bc.mx);
		return status;
	}
	/* from here the messages wait for the end: after the table, in the
	 * order they arose, never between its rows or above its header */
	bc.rp.hold = true;
	bench_out_begin(&bc);
	for (int mi = 0; mi < bc.nmodels && !bench_interrupted; mi++)
		run_model(&bc, mi, &status);
	bench_progress_clear(&bc.rp);
	bc.duration_s = bench_now() - bc.t_start;
	bench_out_end(&bc);
	bench_flush(&bc.rp);

	int ran = 0;
	for (int i = 0; i < bc.ntests; i++)
		ran += bc.tests[i].nruns > 0;
	if (bench_interrupted)
		status = 130;
	else if (!ran && !status)
		status = EXIT_RUNTIME; /* every test skipped: nothing was measured */
	for (int i = 0; i < bc.ntests; i++) {
		free(bc.tests[i].runs);
		free(bc.tests[i].lat);
		free(bc.tests[i].vs);
	}
	free(bc.tests);
	free(bc.prompt_tok);
	free_models(&bc);
	free(bc.models);
	matrix_free(&bc.mx);
	return status;
}
