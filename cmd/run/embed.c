/* embed.c - tern-run --embedding (embed.h): split the input into lines,
 * tokenize every one of them first (so that an empty or too long input is
 * reported before anything is printed), then embed them one at a time, as
 * separate sequences, and write each vector as soon as it is ready. */
#include "cmd/run/embed.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cmd/common/cli.h"
#include "cmd/common/device.h"
#include "lib/llm/embed.h"
#include "lib/llm/llm.h"
#include "lib/llm/model.h"
#include "quant/quant.h"
#include "tokenizer/tok.h"

struct input {
	size_t off, len;   /* of the text */
	size_t id0;        /* first id in the ids array */
	int32_t n;         /* tokens */
};

struct state {
	const struct embed_cli *c;
	tern_mf *mf;
	tok_vocab *v;
	struct tern_embed *em;
	struct dev_ctx dev;
	struct tern_backend *be; /* dev's host or device: borrowed */
	struct input *in;
	size_t n_in;
	int32_t *ids;
	float *vec;
	bool out_failed;   /* a write error other than a closed pipe */
	bool pipe_closed;
};

static void cleanup(struct state *s)
{
	tern_embed_free(s->em);
	dev_close(&s->dev);
	tok_vocab_free(s->v);
	tern_mf_close(s->mf);
	free(s->in);
	free(s->ids);
	free(s->vec);
}

static int fail(struct state *s, int status, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(struct state *s, int status, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	cli_error("%s", msg);
	cleanup(s);
	return status;
}

/* The inputs: text split at sep, one trailing sep ignored. */
static int split(struct state *s)
{
	const struct embed_cli *c = s->c;
	size_t sl = strlen(c->sep), len = c->len;
	if (len >= sl && memcmp(c->text + len - sl, c->sep, sl) == 0)
		len -= sl;
	size_t cap = 16;
	s->in = malloc(cap * sizeof *s->in);
	for (size_t at = 0;;) {
		const char *p = NULL;
		for (size_t i = at; i + sl <= len && !p; i++)
			if (memcmp(c->text + i, c->sep, sl) == 0)
				p = c->text + i;
		size_t end = p ? (size_t)(p - c->text) : len;
		if (s->in && s->n_in == cap) {
			cap *= 2;
			struct input *n = realloc(s->in, cap * sizeof *n);
			if (!n)
				free(s->in);
			s->in = n;
		}
		if (!s->in)
			return fail(s, EXIT_RUNTIME, "out of memory");
		s->in[s->n_in++] = (struct input){.off = at, .len = end - at};
		if (!p)
			break;
		at = end + sl;
	}
	for (size_t i = 0; i < s->n_in; i++)
		if (s->in[i].len == 0)
			return fail(s, EXIT_DATAERR, "input %zu of %zu is empty: every input must have text (one input per %s)",
				    i + 1, s->n_in, strcmp(c->sep, "\n") == 0 ? "line" : "--embd-separator");
	return 0;
}

static void out(struct state *s, const void *p, size_t n)
{
	if (s->pipe_closed || s->out_failed || !n)
		return;
	if (fwrite(p, 1, n, stdout) != n) {
		if (errno == EPIPE)
			s->pipe_closed = true;
		else
			s->out_failed = true;
	}
}

static void outs(struct state *s, const char *str)
{
	out(s, str, strlen(str));
}

static void out_f32(struct state *s, float v)
{
	char b[32];
	if (v != v || v > 3.4028235e38f || v < -3.4028235e38f)
		snprintf(b, sizeof b, "null");
	else
		cli_fmt_f32(b, sizeof b, v);
	outs(s, b);
}

/* one vector in the chosen format; i: the input's index */
static void write_vec(struct state *s, size_t i, const float *v, int32_t d)
{
	const char *f = s->c->format;
	if (strcmp(f, "f32") == 0) {
		/* little-endian on every host */
		for (int32_t k = 0; k < d; k++) {
			uint32_t u;
			memcpy(&u, &v[k], 4);
			uint8_t b[4] = {(uint8_t)u, (uint8_t)(u >> 8), (uint8_t)(u >> 16), (uint8_t)(u >> 24)};
			out(s, b, 4);
		}
		return;
	}
	bool raw = strcmp(f, "raw") == 0, json = strcmp(f, "json") == 0;
	if (strcmp(f, "array") == 0)
		outs(s, i ? "," : "[");
	if (json) {
		char b[128];
		snprintf(b, sizeof b, "%s\n    {\"object\": \"embedding\", \"index\": %zu, \"tokens\": %d, \"embedding\": ",
			 i ? "," : "", i, s->in[i].n);
		outs(s, b);
	}
	if (!raw)
		outs(s, "[");
	for (int32_t k = 0; k < d; k++) {
		if (k)
			outs(s, raw ? " " : ", ");
		out_f32(s, v[k]);
	}
	if (!raw)
		outs(s, "]");
	if (json)
		outs(s, "}");
	else if (strcmp(f, "array") != 0)
		outs(s, "\n");
}

/* A library error: the message on stderr, after the model's name. */
static int lib_fail(struct state *s, int rc, tern_err *e)
{
	cleanup(s);
	return cli_fail(s->c->model, rc, e);
}

/* The file mapped, its vocabulary and its model read. */
static int load(struct state *s, tern_err *e)
{
	const struct embed_cli *c = s->c;
	int rc = tern_mf_open(&s->mf, c->model, NULL, e);
	if (rc) {
		cleanup(s);
		tern_err_prefix(e, c->model);
		return cli_fail(NULL, rc, e);
	}
	const gguf_file *gf = tern_mf_gguf(s->mf);
	rc = gf ? tok_vocab_load(&s->v, gf, e) : tern_errf(e, TERN_EFORMAT, "not a GGUF file");
	rc = rc ? rc : tern_embed_load(&s->em, s->mf, e);
	return rc ? lib_fail(s, rc, e) : 0;
}

static struct tern_embed_opts embed_opts(const struct embed_cli *c)
{
	struct tern_embed_opts o = tern_embed_opts_default();
	o.pooling = c->pooling ? tern_pooling_by_name(c->pooling) : TERN_POOLING_UNSPECIFIED;
	o.n_ctx = c->ctx < 0 ? -1 : (int32_t)c->ctx;
	o.n_ubatch = (int32_t)c->ubatch;
	o.type_k = (uint32_t)tern_llm_cache_type(c->ctk);
	o.type_v = (uint32_t)tern_llm_cache_type(c->ctv);
	return o;
}

/* A decoder: its KV cache and buffers must fit, as tern-run checks before
 * generating. *whole: the bytes the model needs, for the device's choice. */
static int check_memory(struct state *s, const struct tern_embed_opts *o, uint64_t *whole)
{
	const struct embed_cli *c = s->c;
	const struct tern_model *dm = tern_embed_model(s->em);
	uint64_t avail = cli_mem_available();
	*whole = tern_mf_file_size(s->mf);
	if (dm) {
		uint64_t kvb = 0;
		*whole += tern_llm_memory_estimate(&dm->cfg, tern_embed_ctx_for(s->em, o), c->ubatch, o->type_k,
						   o->type_v, false, &kvb);
	}
	if (!dm || !avail)
		return 0;
	int64_t ctx = tern_embed_ctx_for(s->em, o), kv = 0;
	uint64_t kvb = 0;
	double all = (double)tern_llm_memory_estimate(&dm->cfg, ctx, c->ubatch, o->type_k, o->type_v, false, &kvb);
	double file = (double)tern_mf_file_size(s->mf), mib = 1048576.0;
	kv = (int64_t)kvb;
	if (file + all > (double)avail)
		return fail(s, EXIT_RUNTIME, "%s: does not fit in memory: it needs %.0f MiB (file %.0f MiB, KV cache "
			    "%.0f MiB for %" PRId64 " positions) and %.0f MiB are available; try a smaller -c",
			    c->model, (file + all) / mib, file / mib, (double)kv / mib, ctx, (double)avail / mib);
	return 0;
}

/* The backend chosen and the model's buffers made on it, once more on the
 * host when a device refuses the memory its budget promised. */
static int init_backend(struct state *s, const struct tern_embed_opts *o, uint64_t whole, tern_err *e)
{
	const struct embed_cli *c = s->c;
	int64_t need = tern_embed_batch_needed(s->em, o);
	/* the embeddings' quantized products read the file's rows in ggml's
	 * order (tern_llm_opts.ggml_ops): an interleaved copy for one-token
	 * products would only cost memory */
	struct tern_device_opts dopt = {.n_threads = c->threads, .max_tokens = need > 0 ? need : c->ubatch,
					.keep_layout = true};
	int rc = dev_open(&s->dev, NULL, NULL, &dopt, e);
	rc = rc ? rc : dev_whole(&s->dev, c->common, whole, &s->be, e);
	rc = rc ? rc : tern_embed_init(s->em, s->be, o, e);
	if (rc && dev_whole_retry(&s->dev, rc, &s->be, e))
		rc = tern_embed_init(s->em, s->be, o, e);
	if (rc == TERN_EINVAL && !c->pooling && strstr(e->msg, "pooling"))
		return fail(s, EXIT_DATAERR, "%s: %s (--pooling mean|cls|last)", c->model, e->msg);
	return rc ? lib_fail(s, rc, e) : 0;
}

/* Every input's tokens first: nothing is written for a bad input.
 * *total: the tokens of all of them. */
static int tokenize_all(struct state *s, int32_t n_ctx, size_t *total, tern_err *e)
{
	const struct embed_cli *c = s->c;
	const struct tern_embed_info *info = tern_embed_info(s->em);
	size_t cap_ids = 0, n_ids = 0;
	for (size_t i = 0; i < s->n_in; i++) {
		size_t need_ids = n_ids + (size_t)n_ctx + 1;
		if (need_ids > cap_ids) {
			size_t cap = cap_ids ? cap_ids : 4096;
			while (cap < need_ids)
				cap *= 2;
			int32_t *p = realloc(s->ids, cap * sizeof *p);
			if (!p)
				return fail(s, EXIT_RUNTIME, "out of memory for the tokens of %zu inputs", s->n_in);
			s->ids = p;
			cap_ids = cap;
		}
		size_t n = 0;
		int rc = tok_tokenize(s->v, c->text + s->in[i].off, s->in[i].len, true, c->parse_special, s->ids + n_ids,
				      (size_t)n_ctx + 1, &n, NULL, e);
		if (rc)
			return lib_fail(s, rc, e);
		if (n > (size_t)n_ctx)
			return fail(s, EXIT_RUNTIME, "input %zu is %zu tokens, more than the context of %d: %s", i + 1, n,
				    n_ctx, info->encoder && strcmp(info->arch, "bert") == 0 && (uint32_t)n_ctx >= info->n_ctx_train
				    ? "shorten it (this bert model has no more positions)" : "raise it with -c N or shorten it");
		s->in[i].id0 = n_ids;
		s->in[i].n = (int32_t)n;
		n_ids += n;
		*total += n;
	}
	return 0;
}

/* -v: the model, the settings and the inputs, on stderr */
static void report_setup(const struct state *s, int32_t n_ctx, size_t total, double load_ms)
{
	const struct embed_cli *c = s->c;
	const struct tern_embed_info *info = tern_embed_info(s->em);
	fprintf(stderr, "%s: %s: %s, %u layers, embeddings of %d; pooling %s (%s), normalisation %d; context %d, "
		"%d threads; loaded in %.1f ms\n", cli_progname(), c->model, info->arch, info->n_layer, (int32_t)info->n_embd,
		tern_pooling_name(tern_embed_pooling(s->em)), c->pooling ? "--pooling" : "the file's", c->normalize, n_ctx,
		c->threads, load_ms);
	fprintf(stderr, "%s: %zu inputs, %zu tokens\n", cli_progname(), s->n_in, total);
}

/* --embd-output-format json: the object around the vectors */
static void json_head(struct state *s, int32_t d)
{
	const struct embed_cli *c = s->c;
	outs(s, "{\"object\": \"list\", \"model\": ");
	if (!s->pipe_closed)
		cli_json_str(stdout, c->model, strlen(c->model));
	char b[160];
	snprintf(b, sizeof b, ", \"n_embd\": %d, \"pooling\": \"%s\", \"normalize\": %d,\n  \"data\": [", d,
		 tern_pooling_name(tern_embed_pooling(s->em)), c->normalize);
	outs(s, b);
}

static void output_tail(struct state *s, size_t total)
{
	const char *f = s->c->format;
	if (strcmp(f, "json") == 0) {
		char b[160];
		snprintf(b, sizeof b, "\n  ],\n  \"usage\": {\"prompt_tokens\": %zu, \"total_tokens\": %zu}}\n", total, total);
		outs(s, b);
	} else if (strcmp(f, "array") == 0) {
		outs(s, "]\n");
	}
	if (!s->pipe_closed && !s->out_failed && fflush(stdout)) {
		if (errno == EPIPE)
			s->pipe_closed = true;
		else
			s->out_failed = true;
	}
}

/* One input at a time, each vector written as soon as it is ready, until
 * the reader goes away. */
static int embed_all(struct state *s, int32_t d, tern_err *e)
{
	for (size_t i = 0; i < s->n_in && !s->pipe_closed && !s->out_failed; i++) {
		int rc = tern_embed_run(s->em, s->ids + s->in[i].id0, s->in[i].n, s->vec, e);
		if (rc) {
			fflush(stdout);
			return lib_fail(s, rc, e);
		}
		tern_embed_normalize(s->vec, d, s->c->normalize);
		write_vec(s, i, s->vec, d);
	}
	return 0;
}

int embed_main(const struct embed_cli *c)
{
	struct state s = {.c = c};
	int rc = split(&s);
	if (rc)
		return rc;

	double t0 = cli_now_ms();
	tern_err e = {0};
	if ((rc = load(&s, &e)))
		return rc;
	struct tern_embed_opts o = embed_opts(c);
	uint64_t whole = 0;
	if ((rc = check_memory(&s, &o, &whole)) || (rc = init_backend(&s, &o, whole, &e)))
		return rc;
	if (tok_vocab_warning(s.v) && !c->quiet)
		cli_warn("%s: %s", c->model, tok_vocab_warning(s.v));
	int32_t n_ctx = tern_embed_n_ctx(s.em), d = (int32_t)tern_embed_info(s.em)->n_embd;
	double load_ms = cli_now_ms() - t0;
	size_t total = 0;
	if ((rc = tokenize_all(&s, n_ctx, &total, &e)))
		return rc;
	s.vec = malloc(sizeof(float) * (size_t)d);
	if (!s.vec)
		return fail(&s, EXIT_RUNTIME, "out of memory");
	if (c->verbose && !c->quiet)
		report_setup(&s, n_ctx, total, load_ms);

	if (strcmp(c->format, "json") == 0)
		json_head(&s, d);
	double t1 = cli_now_ms();
	if ((rc = embed_all(&s, d, &e)))
		return rc;
	double run_ms = cli_now_ms() - t1;
	output_tail(&s, total);
	if (s.out_failed)
		return fail(&s, EXIT_RUNTIME, "standard output: %s", strerror(errno ? errno : EIO));
	if (c->verbose && !c->quiet && !s.pipe_closed)
		fprintf(stderr, "%s: embedded %zu inputs (%zu tokens) in %.2f ms (%.2f tokens per second)\n",
			cli_progname(), s.n_in, total, run_ms, run_ms > 0 ? (double)total * 1e3 / run_ms : 0.0);
	cleanup(&s);
	return EXIT_OK;
}
