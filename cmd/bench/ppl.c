/* ppl.c - tern-bench --ppl FILE -m MODEL: perplexity over a text file, by
 * llama-perplexity's rules (lib/llm/ppl.h holds them and the arithmetic).
 * This file reads the text, loads the one model, runs the chunks, shows
 * the running estimate on stderr and writes the result on stdout: the
 * "Final estimate" line llama-perplexity prints (-o table), a markdown row
 * (-o md), one CSV line under a header (-o csv), or a JSON document with
 * every chunk (-o json; -o jsonl: the same document on one line, which it
 * always is). */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/bench/bench.h"
#include "cmd/common/device.h"
#include "lib/llm/llm.h"
#include "lib/llm/model.h"
#include "lib/llm/ppl.h"
#include "quant/cpu.h"
#include "tokenizer/tok.h"

extern const char tern_build_commit[];

#define PPL_DEFAULT_CTX 512   /* llama-perplexity's -c */
#define PPL_DEFAULT_BATCH 2048 /* llama.cpp's -b */
#define PPL_DEFAULT_UBATCH 512 /* llama.cpp's -ub */

struct ppl_settings {
	const char *model, *backend, *type_k, *type_v, *ngl;
	int32_t n_ctx, n_batch, n_ubatch;
	int threads;
};

struct chunk_result {
	struct tern_ppl_sum sum; /* this chunk alone */
	double ppl, running, running_err, seconds;
};

/* ---- options --------------------------------------------------------------- */

/* one integer of a list option, or def when it is not given */
static int64_t one_int(const struct cli_list *l, const char *opt, int64_t min, int64_t max, int64_t def)
{
	int64_t v[2];
	int n = bench_int_list(l, opt, min, max, v, 2);
	if (n > 1)
		cli_usage_error("--ppl takes one value of %s", opt);
	return n ? v[0] : def;
}

static const char *one_str(const struct cli_list *l, const char *opt, char *store, size_t cap, const char *def)
{
	const char *v[2];
	int n = bench_str_list(l, opt, v, store, cap, 2);
	if (n > 1)
		cli_usage_error("--ppl takes one value of %s", opt);
	return n ? v[0] : def;
}

static void refuse(const struct cli_list *l, const char *opt)
{
	if (l->n)
		cli_usage_error("--ppl does not take %s (it scores the text of the file)", opt);
}

static void settings_of(const struct bench_opts *o, struct ppl_settings *s)
{
	static char st_be[64], st_k[64], st_v[64], st_ngl[64];
	if (o->models.n > 1)
		cli_usage_error("--ppl takes one model (-m): run it once per model");
	refuse(&o->n_prompt, "-p");
	refuse(&o->n_gen, "-n");
	refuse(&o->pg, "-pg");
	refuse(&o->depth, "-d");
	if (o->prompt)
		cli_usage_error("--ppl does not take --prompt (it scores the text of the file)");
	int32_t ngl;
	s->ngl = one_str(&o->ngl, "-ngl", st_ngl, sizeof st_ngl, "auto");
	if (dev_o.device && strchr(dev_o.device, ','))
		cli_usage_error("--ppl takes one value of -dev");
	if (tern_plan_parse_ngl(s->ngl, &ngl))
		cli_usage_error("-ngl: '%s' is not a layer count, auto or all", s->ngl);
	s->model = o->models.v[0];
	s->n_ctx = o->ctx ? (int32_t)o->ctx : PPL_DEFAULT_CTX;
	if (s->n_ctx < TERN_PPL_MIN_CTX)
		cli_usage_error("-c %d: a chunk of fewer than %d tokens scores none (it scores its second half "
				"after the first token of it)", s->n_ctx, TERN_PPL_MIN_CTX);
	s->threads = (int)one_int(&o->threads, "-t", 1, 256, cli_default_threads());
	s->n_batch = (int32_t)one_int(&o->batch, "-b", 1, 1 << 30, PPL_DEFAULT_BATCH);
	s->n_ubatch = (int32_t)one_int(&o->ubatch, "-ub", 1, 1 << 30, PPL_DEFAULT_UBATCH);
	s->backend = one_str(&o->backend, "--backend", st_be, sizeof st_be, "cpu");
	if (strcmp(s->backend, "cpu") && strcmp(s->backend, "ref"))
		cli_usage_error("--backend '%s': cpu or ref", s->backend);
	s->type_k = one_str(&o->type_k, "-ctk", st_k, sizeof st_k, "f16");
	s->type_v = one_str(&o->type_v, "-ctv", st_v, sizeof st_v, "f16");
	if (tern_llm_cache_type(s->type_k) < 0 || tern_llm_cache_type(s->type_v) < 0)
		cli_usage_error("%s '%s': the cache types are f32, f16 and q8_0",
				tern_llm_cache_type(s->type_k) < 0 ? "-ctk" : "-ctv",
				tern_llm_cache_type(s->type_k) < 0 ? s->type_k : s->type_v);
	/* a logical batch larger than a chunk is one chunk (llama-perplexity
	 * then evaluates several chunks side by side: the same sums) */
	if (s->n_batch > s->n_ctx)
		s->n_batch = s->n_ctx;
	if (s->n_ubatch > s->n_batch)
		s->n_ubatch = s->n_batch;
}

/* ---- the text ----------------------------------------------------------------- */

/* The whole file (NUL-terminated, *len without it), one trailing newline
 * dropped as llama.cpp's -f does; NULL with *status 1 when it cannot be
 * read, 65 when it holds a NUL byte (not text), the message printed. */
static char *read_text(const char *path, size_t *len, uint64_t *file_bytes, int *status)
{
	*status = EXIT_RUNTIME;
	FILE *f = fopen(path, "rb");
	if (!f) {
		cli_error("%s: cannot open: %s", path, strerror(errno));
		return NULL;
	}
	size_t cap = 1 << 16, n = 0;
	char *buf = malloc(cap);
	while (buf) {
		n += fread(buf + n, 1, cap - n - 1, f);
		if (n < cap - 1)
			break;
		cap *= 2;
		char *nb = realloc(buf, cap);
		if (!nb)
			free(buf);
		buf = nb;
	}
	int err = errno;
	bool bad = ferror(f);
	fclose(f);
	if (!buf) {
		cli_error("%s: out of memory reading it", path);
		return NULL;
	}
	if (bad) {
		cli_error("%s: cannot read: %s", path, strerror(err));
		free(buf);
		return NULL;
	}
	const char *nul = memchr(buf, 0, n);
	if (nul) {
		cli_error("%s: a NUL byte at offset %zu: not a text file", path, (size_t)(nul - buf));
		free(buf);
		*status = EXIT_DATAERR;
		return NULL;
	}
	*file_bytes = n;
	if (n && buf[n - 1] == '\n')
		n--;
	buf[n] = 0;
	*len = n;
	*status = EXIT_OK;
	return buf;
}

static int32_t *tokenize(const tok_vocab *v, const char *text, size_t len, size_t *n_out, tern_err *e, int *rc)
{
	size_t cap = len + 8, n = 0;
	int32_t *ids = malloc(cap * sizeof *ids);
	*rc = ids ? tok_tokenize(v, text, len, true, false, ids, cap, &n, NULL, e) : TERN_ENOMEM;
	if (!*rc && n > cap) { /* more ids than bytes: only special pieces could do it */
		free(ids);
		cap = n;
		ids = malloc(cap * sizeof *ids);
		*rc = ids ? tok_tokenize(v, text, len, true, false, ids, cap, &n, NULL, e) : TERN_ENOMEM;
	}
	*n_out = n;
	return ids;
}

/* ---- output --------------------------------------------------------------------- */

struct ppl_run {
	const struct ppl_settings *s;
	const char *path;
	uint64_t file_bytes;
	const struct tern_model *m;
	bool add_bos;
	size_t n_tokens;
	int64_t n_avail, n_chunks, done;
	struct chunk_result *chunks;
	struct tern_ppl_sum total;
	double seconds;
	bool interrupted;
};

static void json_num(double v) { cli_json_num(stdout, v); }

static void print_json(const struct ppl_run *r)
{
	const struct ppl_settings *s = r->s;
	char cpu[128], date[32];
	bench_cpu_model(cpu, sizeof cpu);
	bench_date(date, sizeof date);
	double err, ppl = tern_ppl_value(&r->total, &err);
	printf("{\"mode\": \"perplexity\", \"version\": \"%s\", \"commit\": ", TERN_VERSION);
	bench_json_strz(tern_build_commit);
	printf(", \"date\": \"%s\", \"cpu\": {\"model\": ", date);
	bench_json_strz(cpu);
	printf(", \"features\": ");
	bench_json_strz(quant_cpu_features_str());
	printf("}, \"file\": ");
	bench_json_strz(r->path);
	printf(", \"file_bytes\": %" PRIu64 ", \"model\": {\"path\": ", r->file_bytes);
	bench_json_strz(s->model);
	printf(", \"arch\": ");
	bench_json_strz(r->m->cfg.arch);
	printf(", \"n_vocab\": %u, \"n_ctx_train\": %u, \"add_bos\": %s}", r->m->cfg.n_vocab, r->m->cfg.n_ctx_train,
	       r->add_bos ? "true" : "false");
	printf(", \"settings\": {\"n_ctx\": %d, \"batch\": %d, \"ubatch\": %d, \"threads\": %d, \"backend\": \"%s\", "
	       "\"type_k\": \"%s\", \"type_v\": \"%s\"}",
	       s->n_ctx, s->n_batch, s->n_ubatch, s->threads, s->backend, s->type_k, s->type_v);
	printf(", \"n_tokens\": %zu, \"n_chunks_available\": %" PRId64 ", \"n_chunks\": %" PRId64
	       ", \"scored_per_chunk\": %d, \"n_scored\": %" PRId64,
	       r->n_tokens, r->n_avail, r->done, tern_ppl_scored(s->n_ctx), r->total.count);
	printf(", \"ppl\": ");
	json_num(ppl);
	printf(", \"ppl_err\": ");
	json_num(err);
	printf(", \"nll_mean\": ");
	json_num(r->total.count ? r->total.nll / (double)r->total.count : NAN);
	printf(", \"seconds\": ");
	json_num(r->seconds);
	printf(", \"tokens_per_second\": ");
	json_num(r->seconds > 0 ? (double)(r->done * s->n_ctx) / r->seconds : NAN);
	printf(", \"peak_rss\": %" PRIu64 ", \"chunks\": [", bench_peak_rss());
	for (int64_t i = 0; i < r->done; i++) {
		const struct chunk_result *c = &r->chunks[i];
		printf("%s{\"chunk\": %" PRId64 ", \"ppl\": ", i ? ", " : "", i + 1);
		json_num(c->ppl);
		printf(", \"nll\": ");
		json_num(c->sum.nll);
		printf(", \"running_ppl\": ");
		json_num(c->running);
		printf(", \"running_err\": ");
		json_num(c->running_err);
		printf(", \"seconds\": ");
		json_num(c->seconds);
		printf("}");
	}
	printf("], \"interrupted\": %s}\n", r->interrupted ? "true" : "false");
}

static void print_result(const struct ppl_run *r, enum bench_out out)
{
	double err, ppl = tern_ppl_value(&r->total, &err);
	switch (out) {
	case BENCH_OUT_JSON:
	case BENCH_OUT_JSONL:
		print_json(r);
		break;
	case BENCH_OUT_TABLE:
		if (r->done)
			printf("Final estimate: PPL = %.4f +/- %.5f\n", ppl, err);
		break;
	case BENCH_OUT_MD:
		printf("| model | file | n_ctx | chunks | PPL |\n| --- | --- | ---: | ---: | ---: |\n");
		printf("| %s | %s | %d | %" PRId64 " | %.4f ± %.5f |\n", r->s->model, r->path, r->s->n_ctx, r->done,
		       ppl, err);
		break;
	case BENCH_OUT_CSV:
		printf("model,file,n_ctx,chunks,n_scored,ppl,ppl_err\n");
		printf("\"%s\",\"%s\",%d,%" PRId64 ",%" PRId64 ",%.6f,%.6f\n", r->s->model, r->path, r->s->n_ctx,
		       r->done, r->total.count, ppl, err);
		break;
	}
}

/* ---- the run ---------------------------------------------------------------------- */

/* Everything a run holds, freed on every way out (the sanitizer build
 * counts a leak on an error path as a failure). */
struct ppl_res {
	char *text;
	struct tern_model *m;
	tok_vocab *v;
	int32_t *ids;
	struct dev_ctx dev;
	struct tern_llm *l;
	struct chunk_result *chunks;
};

static int release(struct ppl_res *x, int status)
{
	free(x->chunks);
	tern_llm_free(x->l);
	dev_close(&x->dev);
	free(x->ids);
	tok_vocab_free(x->v);
	tern_model_free(x->m);
	free(x->text);
	return status;
}

int bench_ppl(const struct bench_opts *o)
{
	struct ppl_settings s = {0};
	settings_of(o, &s);
	struct ppl_run r = {.s = &s, .path = o->ppl};
	struct ppl_res x = {0};
	size_t len;
	int status;
	x.text = read_text(o->ppl, &len, &r.file_bytes, &status);
	if (!x.text)
		return status;

	tern_err e = {0};
	int rc = tern_model_open(&x.m, s.model, &e);
	if (rc)
		return release(&x, cli_fail(NULL, rc, &e));
	r.m = x.m;
	const gguf_file *gf = tern_mf_gguf(x.m->mf);
	rc = gf ? tok_vocab_load(&x.v, gf, &e) : tern_errf(&e, TERN_EFORMAT, "not a GGUF file: no vocabulary");
	if (rc)
		return release(&x, cli_fail(s.model, rc, &e));
	if (!o->quiet && tok_vocab_warning(x.v))
		cli_warn("%s: %s", s.model, tok_vocab_warning(x.v));
	if (x.m->cfg.n_ctx_train && (uint32_t)s.n_ctx > x.m->cfg.n_ctx_train) {
		uint32_t train = x.m->cfg.n_ctx_train;
		release(&x, 0);
		cli_usage_error("-c %d: larger than the context the model was trained on (%u)", s.n_ctx, train);
	}
	if (tok_add_eos(x.v)) {
		cli_error("%s: the vocabulary adds EOS to every text: llama-perplexity refuses such models", s.model);
		return release(&x, EXIT_DATAERR);
	}
	r.add_bos = tok_add_bos(x.v);
	int32_t bos = r.add_bos ? tok_special_id(x.v, TOK_BOS) : -1;
	if (r.add_bos && bos < 0) {
		cli_error("%s: the vocabulary adds BOS but names no BOS token", s.model);
		return release(&x, EXIT_DATAERR);
	}

	x.ids = tokenize(x.v, x.text, len, &r.n_tokens, &e, &rc);
	if (rc)
		return release(&x, cli_fail(s.model, rc, &e));
	free(x.text);
	x.text = NULL;
	r.n_avail = tern_ppl_n_chunks((int64_t)r.n_tokens, s.n_ctx);
	if (!r.n_avail) {
		cli_error("%s: %zu tokens with this model's vocabulary; -c %d needs at least %" PRId64
			  " (two chunks)", o->ppl, r.n_tokens, s.n_ctx, 2 * (int64_t)s.n_ctx);
		return release(&x, EXIT_DATAERR);
	}
	r.n_chunks = o->chunks && o->chunks < r.n_avail ? o->chunks : r.n_avail;

	struct tern_device_opts dopt = {.n_threads = s.threads, .max_tokens = s.n_ubatch,
					.reference = !strcmp(s.backend, "ref")};
	rc = dev_open(&x.dev, NULL, s.ngl, &dopt, &e);
	if (!rc) {
		struct tern_llm_opts lo = tern_llm_opts_default();
		lo.n_ctx = s.n_ctx;
		lo.n_ubatch = s.n_ubatch;
		lo.type_k = (uint32_t)tern_llm_cache_type(s.type_k);
		lo.type_v = (uint32_t)tern_llm_cache_type(s.type_v);
		lo.logits_all = true;
		const struct cli_common cc = {.verbose = o->verbose, .quiet = o->quiet};
		rc = dev_llm_new(&x.dev, &cc, x.m, &lo, &x.l, &e);
	}
	if (rc)
		return release(&x, cli_fail(s.model, rc, &e));

	if (!o->quiet)
		fprintf(stderr,
			"perplexity of %s over %s: %zu tokens%s, %" PRId64 " of %" PRId64
			" chunks of %d, %d scored in each; batch %d/%d, %d threads, %s backend, cache %s/%s\n",
			s.model, o->ppl, r.n_tokens, r.add_bos ? " (BOS first)" : "", r.n_chunks, r.n_avail, s.n_ctx,
			tern_ppl_scored(s.n_ctx), s.n_batch, s.n_ubatch, s.threads, s.backend, s.type_k, s.type_v);

	r.chunks = x.chunks = calloc((size_t)r.n_chunks, sizeof *r.chunks);
	if (!r.chunks) {
		cli_error("out of memory");
		return release(&x, EXIT_RUNTIME);
	}
	double t0 = bench_now();
	for (int64_t i = 0; i < r.n_chunks && !bench_interrupted; i++) {
		struct chunk_result *c = &r.chunks[i];
		double tc = bench_now();
		rc = tern_ppl_chunk(x.l, x.ids + i * s.n_ctx, s.n_ctx, bos, s.n_batch, s.n_ubatch, &c->sum, &e);
		if (rc)
			return release(&x, cli_fail(s.model, rc, &e));
		c->seconds = bench_now() - tc;
		tern_ppl_add(&r.total, &c->sum);
		c->ppl = tern_ppl_value(&c->sum, NULL);
		c->running = tern_ppl_value(&r.total, &c->running_err);
		r.done = i + 1;
		if (!o->quiet) {
			fprintf(stderr, "[%" PRId64 "/%" PRId64 "] PPL %.4f +/- %.5f (chunk %.4f, %.2f s)\n", i + 1,
				r.n_chunks, c->running, c->running_err, c->ppl, c->seconds);
			fflush(stderr);
		}
	}
	r.seconds = bench_now() - t0;
	r.interrupted = bench_interrupted != 0;
	if (r.interrupted && !o->quiet)
		fprintf(stderr, "interrupted: the estimate is over the %" PRId64 " chunks done\n", r.done);
	print_result(&r, o->out);
	if (fflush(stdout) || ferror(stdout)) {
		cli_error("standard output: %s", strerror(errno));
		return release(&x, EXIT_RUNTIME);
	}
	return release(&x, r.interrupted ? 130 : EXIT_OK);
}
