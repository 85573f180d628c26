/* llm_opts.h - the options tern-run and tern-chat share (model, context,
 * threads, sampling, chat template), spelt once: each program includes
 * this header, gets its own `llm_o` with llama.cpp's defaults, and puts
 * LLM_OPTS_MODEL, LLM_OPTS_SAMPLING and LLM_OPTS_TEMPLATE in its option
 * table. Header-only (static), so that a program that does not include it
 * carries none of it. */
#ifndef TERN_CMD_LLM_OPTS_H
#define TERN_CMD_LLM_OPTS_H

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/common/cli.h"
#include "cmd/common/device.h"
#include "lib/llm/chatfmt.h"
#include "lib/llm/generate.h"
#include "lib/llm/llm.h"
#include "lib/llm/model.h"
#include "lib/llm/prompt.h"
#include "lib/llm/sample.h"

static struct llm_opts {
	const char *model, *ctk, *ctv, *tmpl, *tmpl_file, *tmpl_name;
	int64_t n_predict, ctx, threads, batch, ubatch, seed, top_k, last_n;
	double temp, top_p, min_p, repeat, presence, frequency;
	bool ignore_eos, special, jinja, no_jinja;
	struct cli_list stop;
} llm_o = {
	.ctk = "f16", .ctv = "f16", .n_predict = -1, .ctx = -1, .batch = 512, .ubatch = 512, .seed = -1,
	.top_k = 40, .last_n = 64, .temp = 0.8, .top_p = 0.95, .min_p = 0.05, .repeat = 1.0,
};

#define LLM_OPTS_MODEL \
	{.lng = "model", .shrt = 'm', .kind = CLI_FILE, .dst = &llm_o.model, .arg = "FILE", .ext = "gguf", \
	 .help = "the GGUF model to run (default: $TERN_MODEL)"}, \
	{.lng = "n-predict", .shrt = 'n', .kind = CLI_INT, .dst = &llm_o.n_predict, .arg = "N", .min = -1, .max = INT32_MAX, \
	 .help = "generate at most N tokens (default: -1, until the model stops or the context is full)"}, \
	{.lng = "ctx-size", .shrt = 'c', .kind = CLI_INT, .dst = &llm_o.ctx, .arg = "N", .min = 0, .max = INT32_MAX, \
	 .help = "context size in tokens (default: the trained context, at most 4096; 0: the trained context)"}, \
	{.lng = "threads", .shrt = 't', .kind = CLI_INT, .dst = &llm_o.threads, .arg = "N", .min = 1, .max = 256, \
	 .help = "threads (default: the CPUs this process may run on)"}, \
	{.lng = "batch-size", .shrt = 'b', .kind = CLI_INT, .dst = &llm_o.batch, .arg = "N", .min = 1, .max = 1 << 20, \
	 .help = "prompt tokens per decode call (default: 512)"}, \
	{.lng = "ubatch-size", .alias = "ub", .kind = CLI_INT, .dst = &llm_o.ubatch, .arg = "N", .min = 1, .max = 1 << 20, \
	 .help = "prompt tokens per forward pass, at most --batch-size (default: 512)"}

#define LLM_OPTS_SAMPLING \
	{.lng = "seed", .shrt = 's', .kind = CLI_INT, .dst = &llm_o.seed, .arg = "N", .min = -1, .max = INT64_MAX, \
	 .help = "seed of the sampler (default: -1, a random seed, which -v shows)"}, \
	{.lng = "temp", .kind = CLI_FLOAT, .dst = &llm_o.temp, .arg = "X", \
	 .help = "temperature (default: 0.8; 0: greedy, the most likely token every time)"}, \
	{.lng = "top-k", .kind = CLI_INT, .dst = &llm_o.top_k, .arg = "N", .min = 0, .max = INT32_MAX, \
	 .help = "keep the N most likely tokens (default: 40; 0: off)"}, \
	{.lng = "top-p", .kind = CLI_FLOAT, .dst = &llm_o.top_p, .arg = "X", \
	 .help = "keep the most likely tokens up to a probability of X (default: 0.95; 1: off)"}, \
	{.lng = "min-p", .kind = CLI_FLOAT, .dst = &llm_o.min_p, .arg = "X", \
	 .help = "drop tokens less likely than X times the best one (default: 0.05; 0: off)"}, \
	{.lng = "repeat-penalty", .kind = CLI_FLOAT, .dst = &llm_o.repeat, .arg = "X", \
	 .help = "penalise tokens seen in the last --repeat-last-n (default: 1.0, off)"}, \
	{.lng = "repeat-last-n", .kind = CLI_INT, .dst = &llm_o.last_n, .arg = "N", .min = 0, .max = INT32_MAX, \
	 .help = "tokens the penalties look back at (default: 64; 0: no penalties)"}, \
	{.lng = "presence-penalty", .kind = CLI_FLOAT, .dst = &llm_o.presence, .arg = "X", \
	 .help = "subtract X from the logit of every token seen (default: 0)"}, \
	{.lng = "frequency-penalty", .kind = CLI_FLOAT, .dst = &llm_o.frequency, .arg = "X", \
	 .help = "subtract X times its count from the logit of every token seen (default: 0)"}, \
	{.lng = "ignore-eos", .kind = CLI_FLAG, .dst = &llm_o.ignore_eos, \
	 .help = "never end at an end-of-generation token (only -n, --stop or a full context end the answer)"}, \
	{.lng = "stop", .kind = CLI_LIST, .dst = &llm_o.stop, .arg = "TEXT", \
	 .help = "stop when the text contains TEXT (not printed)"}

#define LLM_OPTS_TEMPLATE \
	{.lng = "chat-template", .kind = CLI_STR, .dst = &llm_o.tmpl, .arg = "NAME", \
	 .excludes = "chat-template-file|no-jinja", \
	 .help = "the built-in chat format NAME, or a Jinja template's text (see CHAT TEMPLATES)"}, \
	{.lng = "chat-template-file", .kind = CLI_FILE, .dst = &llm_o.tmpl_file, .arg = "FILE", .ext = "jinja", \
	 .excludes = "no-jinja", .help = "render the conversation with the Jinja template in FILE"}, \
	{.lng = "chat-template-name", .kind = CLI_STR, .dst = &llm_o.tmpl_name, .arg = "NAME", \
	 .excludes = "chat-template|chat-template-file", \
	 .help = "use the file's named template tokenizer.chat_template.NAME (tern-inspect lists them)"}, \
	{.lng = "jinja", .kind = CLI_FLAG, .dst = &llm_o.jinja, .excludes = "no-jinja", \
	 .help = "render the file's chat template with the Jinja engine (the default)"}, \
	{.lng = "no-jinja", .kind = CLI_FLAG, .dst = &llm_o.no_jinja, \
	 .help = "use the built-in format recognised in the file's chat template instead"}, \
	{.lng = "special", .alias = "sp", .kind = CLI_FLAG, .dst = &llm_o.special, \
	 .help = "print control tokens the model generates as their text"}, \
	{.lng = "cache-type-k", .alias = "ctk", .kind = CLI_CHOICE, .dst = &llm_o.ctk, .arg = "TYPE", .choices = "f32|f16|q8_0", \
	 .help = "element type of the K cache (default: f16)"}, \
	{.lng = "cache-type-v", .alias = "ctv", .kind = CLI_CHOICE, .dst = &llm_o.ctv, .arg = "TYPE", .choices = "f32|f16|q8_0", \
	 .help = "element type of the V cache (default: f16)"}

#define LLM_OPTS_TEMPLATE_TEXT \
	"Chat templates: by default the conversation is rendered by the model file's own chat template " \
	"(tokenizer.chat_template) with tern's Jinja engine, as transformers renders it (messages, " \
	"add_generation_prompt, bos_token and eos_token from the vocabulary, tools when given). " \
	"--chat-template NAME picks a built-in format instead (chatml, llama2, llama3, gemma, phi3, mistral-v7, " \
	"... : an unknown NAME is a usage error that lists them all); a value that contains '{{' or '{%' is " \
	"taken as a Jinja template's text, as llama.cpp accepts. --chat-template-file FILE renders with the " \
	"Jinja template in FILE. A file may hold named templates besides its default one " \
	"(tokenizer.chat_template.NAME; tern-inspect lists them): --chat-template-name NAME renders with one " \
	"(default: the unnamed one), " \
	"and with --tools the one named tool_use is used when the file has it, as llama.cpp does. Without " \
	"--tools the template's context has no `tools` at all (as llama.cpp; transformers passes None, which " \
	"some tool-use templates cannot iterate). --no-jinja uses the built-in format recognised in the file's template (an " \
	"unrecognised one is an error); --jinja is the default and is accepted for llama.cpp's users. A file " \
	"without a chat template gets chatml, after a warning. With a built-in format, its end of turn " \
	"(<|im_end|> for chatml, <|eot_id|> for llama3, ...) written by the model as text ends the answer as " \
	"a --stop string would (a base model given chatml does not know the token). A template the engine " \
	"cannot render is an " \
	"error naming its line and column; --chat-template NAME is the way around it. When the rendered text " \
	"starts with the BOS token's text and the tokenizer adds BOS, that text is dropped (one BOS, as " \
	"llama.cpp). The text is tokenized with special-token text parsed."

/* The checks the parser cannot make; usage errors exit 2. */
static void llm_opts_check(void)
{
	struct {
		const char *name;
		double v;
	} f[] = {{"temp", llm_o.temp}, {"top-p", llm_o.top_p}, {"min-p", llm_o.min_p}, {"repeat-penalty", llm_o.repeat},
		 {"presence-penalty", llm_o.presence}, {"frequency-penalty", llm_o.frequency}};
	for (size_t i = 0; i < sizeof f / sizeof f[0]; i++)
		if (!isfinite(f[i].v))
			cli_usage_error("option '--%s': %g is not a finite number", f[i].name, f[i].v);
	if (llm_o.repeat <= 0)
		cli_usage_error("option '--repeat-penalty': must be above 0 (1: off)");
	if (llm_o.stop.n > TERN_GEN_MAX_STOP)
		cli_usage_error("at most %d --stop strings", TERN_GEN_MAX_STOP);
	for (int i = 0; i < llm_o.stop.n; i++) {
		size_t n = strlen(llm_o.stop.v[i]);
		if (n == 0 || n > TERN_GEN_MAX_STOP_LEN)
			cli_usage_error("option '--stop': a stop string has 1..%d bytes", TERN_GEN_MAX_STOP_LEN);
	}
	if (llm_o.tmpl && tern_chat_fmt_by_name(llm_o.tmpl) < 0 && !strstr(llm_o.tmpl, "{{") &&
	    !strstr(llm_o.tmpl, "{%"))
		cli_usage_error("unknown chat template '%.40s' (built-in: %s)", llm_o.tmpl, tern_chat_fmt_names());
	/* llama.cpp: the micro-batch never exceeds the batch */
	if (llm_o.ubatch > llm_o.batch)
		llm_o.ubatch = llm_o.batch;
}

/* The model: -m, else $TERN_MODEL; a usage error when neither. */
static const char *llm_opts_model(void)
{
	if (llm_o.model)
		return llm_o.model;
	const char *env = getenv("TERN_MODEL");
	if (!env || !*env)
		cli_usage_error("no model: give -m FILE or set TERN_MODEL");
	return env;
}

/* -r/--stop, and a built-in format's end of turn (tern_chat_fmt_turn_end;
 * pr NULL: plain text, none): a model that does not know it as a token (a
 * base model given chatml) writes it as text, and the answer ends there
 * rather than printing it. stops[TERN_GEN_MAX_STOP]; returns the count. */
static int llm_opts_stops(const struct tern_prompt *pr, const char **stops)
{
	int n = 0;
	for (int i = 0; i < llm_o.stop.n && n < TERN_GEN_MAX_STOP; i++)
		stops[n++] = llm_o.stop.v[i];
	const char *end = pr && tern_prompt_kind(pr) == TERN_PROMPT_BUILTIN ? tern_chat_fmt_turn_end(tern_prompt_fmt(pr))
									    : NULL;
	if (end && n < TERN_GEN_MAX_STOP)
		stops[n++] = end;
	return n;
}

static struct tern_sample_opts llm_opts_sampling(uint64_t seed)
{
	struct tern_sample_opts so = tern_sample_opts_default();
	so.temp = (float)llm_o.temp;
	so.top_k = (int32_t)llm_o.top_k;
	so.top_p = (float)llm_o.top_p;
	so.min_p = (float)llm_o.min_p;
	so.repeat_penalty = (float)llm_o.repeat;
	so.repeat_last_n = (int32_t)llm_o.last_n;
	so.presence_penalty = (float)llm_o.presence;
	so.frequency_penalty = (float)llm_o.frequency;
	so.seed = seed;
	return so;
}

/* The context the llm will get for -c (its rule: -1 is the trained
 * context up to TERN_LLM_DEFAULT_CTX, 0 the trained context). */
static int64_t llm_opts_context(const struct tern_model_config *c)
{
	int64_t train = c->n_ctx_train ? c->n_ctx_train : TERN_LLM_DEFAULT_CTX;
	if (llm_o.ctx < 0)
		return train < TERN_LLM_DEFAULT_CTX ? train : TERN_LLM_DEFAULT_CTX;
	return llm_o.ctx ? llm_o.ctx : train;
}

/* Whether model m fits in host memory with plan p (dev_llm_plan's), checked
 * before any of the cache is made: the file (mapped: it must be resident to
 * run at speed) less the weights the plan puts on a device, the KV cache
 * of the layers left on the host, and an estimate of the activations and
 * logits. When not: TERN_ENOMEM, e saying so with the numbers and what to
 * change. */
static int llm_opts_check_memory(const struct tern_model *m, const struct dev_ctx *d, uint32_t tk, uint32_t tv,
				 tern_err *e)
{
	int64_t n_ctx = llm_opts_context(&m->cfg);
	uint64_t kvb = 0;
	double all = (double)tern_llm_memory_estimate(&m->cfg, n_ctx, llm_o.ubatch, tk, tv, false, &kvb);
	double kv = (double)kvb, act = all - kv;
	double file = (double)tern_mf_file_size(m->mf);
	double off_w = (double)(d->plan.weights + d->plan.output_bytes), off_kv = (double)d->plan.kv;
	off_w = off_w < file ? off_w : file;
	off_kv = off_kv < kv ? off_kv : kv;
	uint64_t avail = cli_mem_available();
	double need = file - off_w + kv - off_kv + act, mib = 1048576.0;
	if (!avail || need <= (double)avail)
		return 0;
	char dev[160] = "";
	if (d->plan.n_dev_layers || d->plan.output)
		snprintf(dev, sizeof dev, "; less %.0f MiB of weights and %.0f MiB of cache on %s", off_w / mib,
			 off_kv / mib, d->info.name);
	return tern_errf(e, TERN_ENOMEM,
			 "does not fit in memory: it needs %.0f MiB (file %.0f MiB, KV cache %.0f MiB for %" PRId64
			 " positions, buffers %.0f MiB%s) and %.0f MiB are available; try a smaller -c or -ctk q8_0 "
			 "-ctv q8_0%s",
			 need / mib, file / mib, kv / mib, n_ctx, act / mib, dev, (double)avail / mib,
			 d->dev ? " or more layers on the GPU (-ngl)" : "");
}

/* The device (-dev, -ngl, --gpu-mem-limit), the plan, the host memory
 * check (llm_opts_check_memory) and the llm of model m with -c, -ub, the
 * threads (resolved into llm_o.threads) and the cache types tk, tv: the
 * plan's -v line, its retries' warnings. */
static int llm_opts_load(struct dev_ctx *d, const struct cli_common *cc, const struct tern_model *m, uint32_t tk,
			 uint32_t tv, struct tern_llm **out, tern_err *e)
{
	*out = NULL;
	llm_o.threads = llm_o.threads ? llm_o.threads : cli_default_threads();
	struct tern_device_opts dopt = {.n_threads = (int)llm_o.threads, .max_tokens = llm_o.ubatch};
	int rc = dev_open(d, NULL, NULL, &dopt, e);
	if (rc)
		return rc;
	struct tern_llm_opts lo = tern_llm_opts_default();
	lo.n_ctx = llm_o.ctx < 0 ? -1 : (int32_t)llm_o.ctx;
	lo.n_ubatch = (int32_t)llm_o.ubatch;
	lo.type_k = tk;
	lo.type_v = tv;
	if ((rc = dev_llm_plan(d, m, &lo, e)) != 0 || (rc = llm_opts_check_memory(m, d, tk, tv, e)) != 0)
		return rc;
	return dev_llm_new(d, cc, m, &lo, out, e);
}

/* The template choice as prompt.h takes it; *file_text is the
 * --chat-template-file contents (malloc'd) for the caller to free, read
 * here: a file that cannot be read exits 1. */
static struct tern_prompt_opts llm_opts_prompt(char **file_text)
{
	struct tern_prompt_opts po = {.no_jinja = llm_o.no_jinja, .name = llm_o.tmpl_name};
	*file_text = NULL;
	if (llm_o.tmpl && tern_chat_fmt_by_name(llm_o.tmpl) >= 0) {
		po.builtin = llm_o.tmpl;
	} else if (llm_o.tmpl) {
		po.text = llm_o.tmpl;
		po.text_len = strlen(llm_o.tmpl);
		po.text_name = "--chat-template";
	} else if (llm_o.tmpl_file) {
		FILE *f = fopen(llm_o.tmpl_file, "rb");
		char *b = NULL;
		size_t n = 0, cap = 0;
		if (f) {
			for (;;) {
				if (n + 4096 + 1 > cap) {
					cap = cap ? cap * 2 : 8192;
					char *nb = cap > ((size_t)16 << 20) ? NULL : realloc(b, cap);
					if (!nb)
						break;
					b = nb;
				}
				size_t k = fread(b + n, 1, 4096, f);
				n += k;
				if (k < 4096)
					break;
			}
		}
		if (!f || ferror(f) || !b || !feof(f)) {
			int err = errno;
			free(b);
			if (f)
				fclose(f);
			cli_error("%s: cannot read: %s", llm_o.tmpl_file, f ? "not a readable file of at most 16 MiB" : strerror(err));
			exit(EXIT_RUNTIME);
		}
		fclose(f);
		b[n] = 0;
		*file_text = b;
		po.text = b;
		po.text_len = n;
		po.text_name = llm_o.tmpl_file;
	}
	return po;
}

#endif
