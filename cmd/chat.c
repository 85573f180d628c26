/* chat.c - tern-chat: a conversation with a language model, on a terminal
 * or driven by a script.
 *
 * On a terminal: line editing and history (libedit), multi-line input, the
 * answer streamed as it is generated, slash commands. Through a pipe: one
 * user turn per line (or per --turns-separator), only the answers on
 * stdout, no prompt, banner or colour, the end of input ends the program.
 *
 * The conversation is a JSON array of messages (the format of tern-run
 * --messages and of /save). Every turn renders the whole conversation with
 * the chat template (lib/llm/prompt.h), tokenizes it, keeps the prefix the
 * KV cache already holds and feeds only the rest: a follow-up turn costs
 * its own tokens, not the conversation's. When the context fills up, the
 * oldest exchanges after the system prompt are dropped (and the user told).
 *
 * Signals: Ctrl-C during an answer stops it (the text so far stays in the
 * conversation); on an empty prompt it leaves, on a line being typed it
 * drops the line. */
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#ifdef TERN_HAVE_EDIT
#include <editline/readline.h>
#endif

#include "cmd/common/cli.h"
#include "cmd/common/llm_opts.h"
#include "lib/core/utf8.h"
#include "lib/llm/generate.h"
#include "lib/llm/llm.h"
#include "lib/llm/model.h"
#include "lib/llm/chatfmt.h"
#include "lib/llm/prompt.h"
#include "lib/llm/sample.h"
#include "tokenizer/tok.h"

#define EXIT_INTERRUPTED 130
/* one user turn larger than this is refused: far beyond any context */
#define MAX_TURN_BYTES ((size_t)16 << 20)

/* ---- options ----------------------------------------------------------- */

static const char *o_prompt, *o_system, *o_sep, *o_tools;
static struct cli_common common;

static const struct cli_opt opts[] = {
	LLM_OPTS_MODEL,
	{.lng = "prompt", .shrt = 'p', .kind = CLI_STR, .dst = &o_prompt, .arg = "TEXT",
	 .help = "a first user turn, answered before anything is read"},
	{.lng = "system-prompt", .alias = "sys", .kind = CLI_STR, .dst = &o_system, .arg = "TEXT",
	 .help = "the system prompt (also /system TEXT)"},
	{.lng = "tools", .kind = CLI_FILE, .dst = &o_tools, .arg = "FILE", .ext = "json",
	 .help = "tool definitions (a JSON array) for templates that use them"},
	{.lng = "turns-separator", .kind = CLI_STR, .dst = &o_sep, .arg = "TEXT",
	 .help = "when standard input is not a terminal, user turns are separated by TEXT (default: a newline)"},
	LLM_OPTS_SAMPLING,
	LLM_OPTS_TEMPLATE,
	DEV_OPTS,
	{0},
};

static const struct cli_section sections[] = {
	{"ON A TERMINAL",
	 "A short banner on standard error names the model and the context. Lines are edited with the usual keys "
	 "(arrows, Home/End, Ctrl-A/Ctrl-E, Ctrl-W, ...); the history is kept in "
	 "$XDG_STATE_HOME/tern/chat_history (default ~/.local/state/tern/chat_history). A line that ends with "
	 "a backslash continues on the next line; a line of three double quotes (\"\"\") opens a block that "
	 "the next such line closes. The answer is streamed as it is generated.\n"
	 "\n"
	 "Ctrl-C during an answer stops it: the text so far stays in the conversation. Ctrl-C while a line is "
	 "being typed drops the line; on an empty line, like Ctrl-D or /exit, it leaves. The terminal is "
	 "restored on the way out."},
	{"COMMANDS",
	 "A line that starts with '/' is a command (start it with '//' to send a line that starts with '/'):\n"
	 "  /help              the commands\n"
	 "  /exit              leave (also /quit)\n"
	 "  /clear             a new conversation (the system prompt stays)\n"
	 "  /system [TEXT]     set the system prompt (none: remove it)\n"
	 "  /regen             answer the last message again\n"
	 "  /undo              drop the last exchange\n"
	 "  /save FILE         write the conversation as JSON (the format of tern-run --messages)\n"
	 "  /load FILE         read a conversation written by /save\n"
	 "  /set NAME VALUE    temp, top-k, top-p, min-p, seed or n (tokens per answer, -1: no limit)\n"
	 "  /stats             tokens used of the context; the last answer's prompt and generation speed\n"
	 "  /model             the model, its context and chat template\n"
	 "Commands write to standard error."},
	{"IN A PIPE",
	 "When standard input is not a terminal, each line is a user turn (with --turns-separator TEXT, the "
	 "text between two TEXTs, newlines around it trimmed; empty turns are skipped) and commands work as on "
	 "a terminal. Only the answers go to standard output, each followed by one newline (and with "
	 "--turns-separator TEXT by TEXT and a newline, as an answer may hold newlines itself); there is no "
	 "prompt, banner or colour, and the end of the input ends the program (status 0). A script can keep "
	 "tern-chat running and read each answer as it comes."},
	{"CONTEXT",
	 "Each turn renders the whole conversation, keeps the tokens the KV cache already holds in common "
	 "with it and runs only the rest through the model (/stats and -v show how many). Before a turn, "
	 "when the conversation and room for the answer (-n tokens, else a quarter of the context) do not fit, "
	 "the oldest exchanges after the system prompt are dropped and a line on standard error says so; the "
	 "system prompt is never dropped or cut. A message that does not fit even alone is not sent."},
	{"CHAT TEMPLATES", LLM_OPTS_TEMPLATE_TEXT},
	{"DEVICES", DEV_OPTS_TEXT},
	{"EXIT STATUS",
	 "0 the conversation ended (end of input, Ctrl-D, /exit); 1 runtime error (cannot open the model, not "
	 "enough memory; through a pipe: a turn larger than the context was not sent); 2 usage error (unknown "
	 "option, bad value, no model); 65 the model file is not a valid GGUF file or not one tern can run, or "
	 "its chat template cannot be parsed (through a pipe: or could not render a turn, which was then not "
	 "kept); 130 interrupted by Ctrl-C while reading a pipe. Through a pipe the session goes on after a turn "
	 "that fails (an error line on stderr, no answer on stdout) and ends with that turn's status; on a "
	 "terminal such errors are shown and the chat goes on."},
	{"ENVIRONMENT",
	 "TERN_MODEL: the model when -m is not given. NO_COLOR: no colour (as --color=never). XDG_STATE_HOME: "
	 "where the history is kept."},
	{"EXAMPLES",
	 "  tern-chat -m SmolLM2-135M-Instruct.Q4_1.gguf\n"
	 "  tern-chat -m model.gguf -sys \"Answer in one sentence.\" --temp 0\n"
	 "  printf 'Hi!\\nWhat is the capital of France?\\n' | tern-chat -m model.gguf --temp 0\n"
	 "  tern-chat -m model.gguf --turns-separator '---' < questions.txt"},
	{NULL, NULL},
};

static const struct cli_prog prog = {
	.name = "chat",
	.summary = "chat with a language model on a terminal, or through a pipe",
	.usage = "[OPTIONS]",
	.description =
		"tern-chat loads a GGUF language model and holds a conversation with it: on a terminal with line "
		"editing, history and slash commands; through a pipe one user turn per line and one answer per turn "
		"on standard output. Each turn runs only its new tokens through the model: the KV cache keeps what "
		"the conversation had in common with the previous turn.\n"
		"\n"
		"The options are tern-run's (llama.cpp's spellings and defaults).",
	.opts = opts,
	.pos_name = NULL,
	.min_pos = 0,
	.max_pos = 0,
	.sections = sections,
};

/* ---- small helpers ------------------------------------------------------- */

static _Noreturn void die(int status, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static _Noreturn void die(int status, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	cli_error("%s", msg);
	exit(status);
}

static void oom(void) { die(EXIT_RUNTIME, "out of memory"); }

/* A note for the user on stderr (dim on a terminal); -q silences it. */
static void note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void note(const char *fmt, ...)
{
	if (common.quiet)
		return;
	va_list ap;
	va_start(ap, fmt);
	fputs(cli_sgr(stderr, CLI_DIM), stderr);
	vfprintf(stderr, fmt, ap);
	fputs(cli_sgr(stderr, CLI_RESET), stderr);
	fputc('\n', stderr);
	va_end(ap);
}

#define info(...) cli_info(&common, __VA_ARGS__)

/* A JSON string of s[n], ill-formed UTF-8 replaced by U+FFFD (jansson
 * takes only valid text; model output and typed bytes may not be). */
static json_t *json_text(const char *s, size_t n)
{
	json_t *j = json_stringn(s, n);
	if (j)
		return j;
	struct cli_buf b = {0};
	for (size_t i = 0; i < n;) {
		size_t k = tern_utf8_step((const unsigned char *)s + i, n - i, TERN_UTF8_STRICT);
		bool ok = k ? cli_buf_add(&b, s + i, k) : cli_buf_add(&b, "\xef\xbf\xbd", 3);
		if (!ok)
			oom();
		i += k ? k : 1;
	}
	j = json_stringn(b.p ? b.p : "", b.len);
	free(b.p);
	if (!j)
		oom();
	return j;
}

/* ---- the session ----------------------------------------------------------- */

static const char *model_path;
static volatile sig_atomic_t interrupted;
static bool tty; /* stdin and stdout are a terminal: the interactive mode */

static struct {
	struct tern_model *m;
	tok_vocab *v;
	struct dev_ctx dev;
	struct tern_llm *llm;
	struct tern_sampler *s;
	struct tern_gen *g;
	struct tern_prompt *pr;
	char *tools;
	uint64_t seed;
	double load_ms;
	json_t *conv;        /* the conversation: an array of messages */
	int32_t *cache;      /* the tokens the KV cache holds, n_cache of them */
	int32_t n_cache;
	int32_t *ids;        /* the rendered conversation's tokens */
	size_t ids_cap;
	int32_t *gen_ids;    /* this answer's tokens */
	int32_t n_gen_ids;
	/* the last answer, for /stats */
	struct tern_gen_stats last;
	int32_t last_total, last_reused;
	bool have_last;
} S;

static void on_sigint(int sig)
{
	(void)sig;
	interrupted = 1;
}

static void make_sampler(void)
{
	tern_err e = {0};
	tern_gen_free(S.g);
	S.g = NULL;
	struct tern_sample_opts so = llm_opts_sampling(S.seed);
	struct tern_sampler *s;
	int rc = tern_sampler_new(&s, tern_llm_n_vocab(S.llm), &so, &e);
	if (rc)
		die(cli_exit_status(rc), "%s", e.msg);
	tern_sampler_free(S.s);
	S.s = s;
	static const char *stops[TERN_GEN_MAX_STOP];
	int n_stop = llm_opts_stops(S.pr, stops);
	struct tern_gen_opts go = {
		.n_predict = (int32_t)llm_o.n_predict,
		.n_batch = (int32_t)llm_o.batch,
		.ignore_eos = llm_o.ignore_eos,
		.stop = stops,
		.n_stop = n_stop,
		.n_logprobs = 1, /* the token callback: the ids the cache holds */
		.print_special = llm_o.special,
		.cancel = &interrupted,
	};
	rc = tern_gen_new(&S.g, S.llm, S.v, S.s, &go, &e);
	if (rc)
		die(cli_exit_status(rc), "%s", e.msg);
}

static uint64_t random_seed(void)
{
	uint32_t s = 0;
	FILE *f = fopen("/dev/urandom", "rb");
	if (!f || fread(&s, sizeof s, 1, f) != 1) {
		struct timespec t;
		clock_gettime(CLOCK_REALTIME, &t);
		s = (uint32_t)t.tv_nsec ^ (uint32_t)t.tv_sec ^ ((uint32_t)getpid() << 16);
	}
	if (f)
		fclose(f);
	return s;
}

static char *read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	struct cli_buf b = {0};
	char chunk[65536];
	size_t n;
	bool ok = true;
	while (ok && (n = fread(chunk, 1, sizeof chunk, f)) > 0)
		ok = b.len + n <= MAX_TURN_BYTES && cli_buf_add(&b, chunk, n);
	ok = ok && !ferror(f) && cli_buf_add(&b, "", 0);
	fclose(f);
	if (!ok) {
		free(b.p);
		errno = errno ? errno : EFBIG;
		return NULL;
	}
	*len = b.len;
	return b.p;
}

static void load(void)
{
	tern_err e = {0};
	double t0 = cli_now_ms();
	int rc = tern_model_open(&S.m, model_path, &e);
	if (rc)
		exit(cli_fail(NULL, rc, &e));
	const gguf_file *gf = tern_mf_gguf(S.m->mf);
	rc = gf ? tok_vocab_load(&S.v, gf, &e) : tern_errf(&e, TERN_EFORMAT, "not a GGUF file");
	if (rc)
		exit(cli_fail(model_path, rc, &e));

	char *file_text;
	struct tern_prompt_opts po = llm_opts_prompt(&file_text);
	po.tools = o_tools != NULL;
	rc = tern_prompt_new(&S.pr, S.m->mf, S.v, &po, &e);
	free(file_text);
	if (rc)
		die(cli_exit_status(rc), "%s: %s%s", model_path, e.msg,
		    po.builtin ? "" : " (--chat-template NAME uses a built-in format instead)");
	if (tern_prompt_warning(S.pr) && !common.quiet)
		cli_warn("%s: %s", model_path, tern_prompt_warning(S.pr));
	if (o_tools) {
		size_t n;
		S.tools = read_file(o_tools, &n);
		if (!S.tools)
			die(EXIT_RUNTIME, "%s: cannot read: %s", o_tools, strerror(errno));
		json_error_t je;
		json_t *t = json_loads(S.tools, 0, &je);
		bool arr = json_is_array(t);
		json_decref(t);
		if (!arr)
			die(EXIT_DATAERR, "%s: not a JSON array of tool definitions", o_tools);
	}

	uint32_t tk = (uint32_t)tern_llm_cache_type(llm_o.ctk), tv = (uint32_t)tern_llm_cache_type(llm_o.ctv);
	rc = llm_opts_load(&S.dev, &common, S.m, tk, tv, &S.llm, &e);
	if (rc)
		exit(cli_fail(model_path, rc, &e));
	S.seed = llm_o.seed < 0 ? random_seed() : (uint64_t)llm_o.seed;
	make_sampler();
	int32_t n_ctx = tern_llm_n_ctx(S.llm);
	S.cache = malloc((size_t)n_ctx * sizeof *S.cache);
	S.gen_ids = malloc((size_t)n_ctx * sizeof *S.gen_ids);
	if (!S.cache || !S.gen_ids)
		oom();
	S.load_ms = cli_now_ms() - t0;
	if (tok_vocab_warning(S.v) && !common.quiet)
		cli_warn("%s: %s", model_path, tok_vocab_warning(S.v));
	info("%s: %s, %u layers, context %d, %" PRId64 " threads, seed %" PRIu64 ", chat template %s; loaded in %.1f ms",
	     model_path, S.m->cfg.arch, S.m->cfg.n_layer, n_ctx, llm_o.threads, S.seed, tern_prompt_describe(S.pr),
	     S.load_ms);
	/* the vocabulary, the configuration and the template are taken: the
	 * file's metadata need not stay in memory (a later read maps it back) */
	tern_mf_drop_metadata(S.m->mf);
}

static void unload(void)
{
	json_decref(S.conv);
	free(S.tools);
	free(S.cache);
	free(S.ids);
	free(S.gen_ids);
	tern_prompt_free(S.pr);
	tern_gen_free(S.g);
	tern_sampler_free(S.s);
	tern_llm_free(S.llm);
	dev_close(&S.dev);
	tok_vocab_free(S.v);
	tern_model_free(S.m);
}

/* ---- the conversation --------------------------------------------------------- */

static json_t *message(const char *role, const char *content, size_t n)
{
	json_t *m = json_object();
	if (!m || json_object_set_new(m, "role", json_string(role)) ||
	    json_object_set_new(m, "content", json_text(content, n)))
		oom();
	return m;
}

static const char *role_of(size_t i)
{
	const char *r = json_string_value(json_object_get(json_array_get(S.conv, i), "role"));
	return r ? r : "";
}

static bool has_system(void) { return json_array_size(S.conv) && strcmp(role_of(0), "system") == 0; }

static void set_system(const char *text)
{
	if (has_system())
		json_array_remove(S.conv, 0);
	if (text && *text)
		json_array_insert_new(S.conv, 0, message("system", text, strlen(text)));
}

/* Render the conversation and tokenize it into S.ids; its length, or -1
 * after a message (a template error). */
static int32_t render_tokens(void)
{
	tern_err e = {0};
	char *msgs = json_dumps(S.conv, JSON_COMPACT);
	if (!msgs)
		oom();
	char *text = NULL;
	size_t len = 0;
	int rc = tern_prompt_render(S.pr, msgs, strlen(msgs), S.tools, true, &text, &len, &e);
	free(msgs);
	if (rc) {
		cli_error("%s: %s%s", model_path, e.msg,
			  tern_prompt_kind(S.pr) == TERN_PROMPT_JINJA ? " (--chat-template NAME uses a built-in format instead)" : "");
		return -1;
	}
	size_t n = 0;
	for (;;) {
		rc = tok_tokenize(S.v, text, len, true, true, S.ids, S.ids_cap, &n, NULL, &e);
		if (rc || n <= S.ids_cap)
			break;
		int32_t *p = realloc(S.ids, n * sizeof *p);
		if (!p)
			oom();
		S.ids = p;
		S.ids_cap = n;
	}
	free(text);
	if (rc) {
		cli_error("%s: %s", model_path, e.msg);
		return -1;
	}
	if (n > INT32_MAX) {
		cli_error("the conversation is too long");
		return -1;
	}
	return (int32_t)n;
}

/* Drop the oldest exchange after the system prompt (a user message and
 * what follows it up to the next user message), never the last user
 * message. Returns the messages dropped (0: nothing left to drop). */
static size_t drop_oldest(void)
{
	size_t n = json_array_size(S.conv), first = has_system() ? 1 : 0, last_user = n;
	for (size_t i = n; i-- > first;)
		if (strcmp(role_of(i), "user") == 0) {
			last_user = i;
			break;
		}
	if (last_user == n || last_user <= first)
		return 0;
	size_t end = first + 1;
	while (end < last_user && strcmp(role_of(end), "user") != 0)
		end++;
	for (size_t i = first; i < end; i++)
		json_array_remove(S.conv, first);
	return end - first;
}

/* ---- answering --------------------------------------------------------------- */

/* stdout cannot be written (its reader went away): the chat ends quietly */
static bool stdout_gone;
static bool want_exit;
/* the status a pipe session ends with when a turn could not be answered */
static int failed_status;

struct answer {
	struct cli_buf text;  /* the whole answer, for the conversation */
	size_t held_nl;   /* newlines not written yet (maybe the last) */
	bool started, failed;
};

static int on_text(void *ud, const char *s, size_t len)
{
	struct answer *a = ud;
	if (!cli_buf_add(&a->text, s, len)) {
		a->failed = true;
		return 1;
	}
	/* leading newlines are not shown; trailing ones are held back so that
	 * the answer ends with exactly one */
	size_t i = 0;
	if (!a->started)
		while (i < len && s[i] == '\n')
			i++;
	size_t k = 0;
	while (k < len - i && s[len - 1 - k] == '\n')
		k++;
	if (i + k < len) {
		a->started = true;
		for (; a->held_nl; a->held_nl--)
			fputc('\n', stdout);
		fwrite(s + i, 1, len - i - k, stdout);
	}
	if (a->started)
		a->held_nl += k;
	if (fflush(stdout) || ferror(stdout)) {
		stdout_gone = true; /* a closed pipe: nobody reads the answers */
		return 1;
	}
	return 0;
}

static void on_token(void *ud, const struct tern_gen_token *t)
{
	(void)ud;
	if (S.n_gen_ids < tern_llm_n_ctx(S.llm))
		S.gen_ids[S.n_gen_ids++] = t->id;
}

/* The room an answer needs in the context besides the conversation. */
static int32_t answer_room(int32_t n_ctx)
{
	int32_t q = n_ctx / 4;
	if (llm_o.n_predict >= 0 && llm_o.n_predict < q)
		return (int32_t)llm_o.n_predict + 1;
	return q > 0 ? q : 1;
}

/* Answer the conversation's last message; the answer is added to it.
 * Returns false when nothing was generated (an error was shown). */
static bool answer(void)
{
	int32_t n_ctx = tern_llm_n_ctx(S.llm), n;
	size_t dropped = 0;
	for (;;) {
		n = render_tokens();
		if (n < 0) {
			/* the message that made the template fail is not kept */
			size_t last = json_array_size(S.conv);
			if (last && strcmp(role_of(last - 1), "user") == 0)
				json_array_remove(S.conv, last - 1);
			failed_status = EXIT_DATAERR;
			return false;
		}
		if (n + answer_room(n_ctx) <= n_ctx)
			break;
		size_t d = drop_oldest();
		if (!d)
			break;
		dropped += d;
	}
	if (dropped)
		note("(the context of %d tokens is full: the oldest %zu message%s dropped%s)", n_ctx, dropped,
		     dropped == 1 ? " was" : "s were", has_system() ? "; the system prompt stays" : "");
	if (n >= n_ctx) {
		cli_error("the message does not fit the context (%d tokens with %s, the context holds %d): not sent; "
			  "a larger -c holds more", n, has_system() ? "the system prompt" : "the template", n_ctx);
		json_array_remove(S.conv, json_array_size(S.conv) - 1);
		failed_status = EXIT_RUNTIME;
		return false;
	}
	/* what the cache holds in common with the new text stays; at least
	 * one token is fed, for the logits */
	int32_t k = 0;
	while (k < S.n_cache && k < n && S.cache[k] == S.ids[k])
		k++;
	if (k >= n)
		k = n - 1;
	tern_llm_rewind(S.llm, k);
	S.n_cache = k;
	info("turn: %d prompt tokens, %d reused from the cache, %d processed", n, k, n - k);

	struct answer a = {0};
	struct tern_gen_cb cb = {on_text, on_token, &a};
	struct tern_gen_stats st;
	tern_err e = {0};
	S.n_gen_ids = 0;
	interrupted = 0;
	if (tty && cli_color(stdout))
		fputs(CLI_RESET, stdout);
	int rc = tern_gen_run(S.g, S.ids + k, n - k, &cb, &st, &e);
	bool cancelled = interrupted;
	interrupted = 0;
	fputc('\n', stdout);
	/* in a pipe with --turns-separator the answers are cut the same way
	 * (an answer may hold newlines) */
	if (!tty && o_sep)
		printf("%s\n", o_sep);
	fflush(stdout);

	/* the cache: the prompt, then the generated tokens it decoded */
	int32_t past = tern_llm_n_past(S.llm);
	memcpy(S.cache + k, S.ids + k, (size_t)(n - k) * sizeof *S.cache);
	int32_t known = n + S.n_gen_ids;
	if (known > n_ctx)
		known = n_ctx;
	if (S.n_gen_ids)
		memcpy(S.cache + n, S.gen_ids, (size_t)(known - n) * sizeof *S.cache);
	S.n_cache = past < known ? past : known;
	if (past > S.n_cache)
		tern_llm_rewind(S.llm, S.n_cache);

	if (a.failed)
		oom();
	json_array_append_new(S.conv, message("assistant", a.text.p ? a.text.p : "", a.text.len));
	if (stdout_gone)
		want_exit = true;
	free(a.text.p);
	S.last = st;
	S.last_total = n;
	S.last_reused = k;
	S.have_last = true;
	if (rc) {
		cli_error("%s: %s", model_path, e.msg);
		failed_status = cli_exit_status(rc);
		return false;
	}
	if (cancelled && tty)
		note("(stopped)");
	else if (st.finish == TERN_FINISH_LENGTH && tern_llm_n_past(S.llm) >= n_ctx)
		note("(the context is full: the answer was cut; older exchanges make room on the next turn)");
	info("answer: %d tokens in %.1f ms (%.2f tokens per second), prompt %d tokens in %.1f ms; finish %s", st.n_gen,
	     st.gen_ms, st.gen_ms > 0 ? st.n_gen * 1e3 / st.gen_ms : 0.0, st.n_prompt, st.prompt_ms,
	     tern_finish_name(st.finish));
	return true;
}

/* ---- commands ------------------------------------------------------------------- */

static void cmd_help(void)
{
	fputs("/help              these commands\n"
	      "/exit              leave (also Ctrl-D, or Ctrl-C on an empty line)\n"
	      "/clear             a new conversation (the system prompt stays)\n"
	      "/system [TEXT]     set the system prompt (none: remove it)\n"
	      "/regen             answer the last message again\n"
	      "/undo              drop the last exchange\n"
	      "/save FILE         write the conversation as JSON\n"
	      "/load FILE         read a conversation written by /save\n"
	      "/set NAME VALUE    temp, top-k, top-p, min-p, seed or n\n"
	      "/stats             context used, speed of the last answer\n"
	      "/model             the model and its chat template\n"
	      "A line ending in \\ continues; \"\"\" opens and closes a block of lines.\n",
	      stderr);
}

static void cmd_stats(void)
{
	/* the conversation as the next turn renders it, not the cache, which
	 * keeps what /clear, /undo or /load dropped until that turn */
	int32_t n_ctx = tern_llm_n_ctx(S.llm), used = json_array_size(S.conv) ? render_tokens() : 0;
	if (used < 0)
		used = tern_llm_n_past(S.llm);
	fprintf(stderr, "context: %d of %d tokens used (%.0f%%), %zu messages\n", used, n_ctx,
		100.0 * used / n_ctx, json_array_size(S.conv));
	if (!S.have_last) {
		fputs("no answer yet\n", stderr);
		return;
	}
	const struct tern_gen_stats *st = &S.last;
	fprintf(stderr, "last answer: prompt %d tokens processed (%d reused of %d) in %.1f ms, %.1f tokens/s\n",
		st->n_prompt, S.last_reused, S.last_total, st->prompt_ms,
		st->prompt_ms > 0 ? st->n_prompt * 1e3 / st->prompt_ms : 0.0);
	fprintf(stderr, "last answer: %d tokens generated in %.1f ms, %.1f tokens/s (finish: %s)\n", st->n_gen,
		st->gen_ms, st->gen_ms > 0 ? st->n_gen * 1e3 / st->gen_ms : 0.0, tern_finish_name(st->finish));
}

static void cmd_model(void)
{
	const struct tern_model_config *c = &S.m->cfg;
	fprintf(stderr, "model: %s (%s, %u layers, %u-token vocabulary)\n", model_path, c->arch, c->n_layer,
		c->n_vocab);
	fprintf(stderr, "context: %d tokens (trained %u), %" PRId64 " threads, seed %" PRIu64 "\n",
		tern_llm_n_ctx(S.llm), c->n_ctx_train, llm_o.threads, S.seed);
	fprintf(stderr, "chat template: %s\n", tern_prompt_describe(S.pr));
}

/* FILE of /save and /load with a leading ~/ as the shell reads it ($HOME);
 * buf[cap] holds the result when one is made */
static const char *tilde(const char *path, char *buf, size_t cap)
{
	const char *home = getenv("HOME");
	if (path[0] != '~' || (path[1] != '/' && path[1]) || !home || !*home)
		return path;
	if (snprintf(buf, cap, "%s%s", home, path + 1) >= (int)cap)
		return path;
	return buf;
}

static void cmd_save(const char *arg)
{
	if (!*arg) {
		cli_error("/save needs a FILE");
		return;
	}
	char buf[4096];
	const char *path = tilde(arg, buf, sizeof buf);
	errno = 0;
	if (json_dump_file(S.conv, path, JSON_INDENT(2)) != 0)
		cli_error("%s: cannot write: %s", path, strerror(errno ? errno : EIO));
	else
		note("(saved %zu messages to %s)", json_array_size(S.conv), path);
}

static void cmd_load(const char *arg)
{
	if (!*arg) {
		cli_error("/load needs a FILE");
		return;
	}
	char buf[4096];
	const char *path = tilde(arg, buf, sizeof buf);
	size_t n;
	char *text = read_file(path, &n);
	if (!text) {
		cli_error("%s: cannot read: %s", path, strerror(errno));
		return;
	}
	tern_err e = {0};
	json_t *j = NULL;
	if (!tern_prompt_check_messages(text, n, &e))
		j = json_loadb(text, n, 0, NULL);
	free(text);
	if (!j) {
		cli_error("%s: %s", path, e.msg[0] ? e.msg : "not a conversation");
		return;
	}
	json_decref(S.conv);
	S.conv = j;
	note("(loaded %zu messages from %s)", json_array_size(S.conv), path);
}

static void cmd_set(const char *args)
{
	char name[32] = {0}, value[64] = {0};
	if (sscanf(args, "%31s %63s", name, value) != 2) {
		cli_error("/set NAME VALUE: NAME is temp, top-k, top-p, min-p, seed or n");
		return;
	}
	char *end;
	errno = 0;
	double d = strtod(value, &end);
	if (*end || errno || !isfinite(d)) {
		cli_error("/set %s: '%s' is not a number", name, value);
		return;
	}
	bool integer = d == (double)(int64_t)d;
	if (strcmp(name, "temp") == 0)
		llm_o.temp = d;
	else if (strcmp(name, "top-p") == 0)
		llm_o.top_p = d;
	else if (strcmp(name, "min-p") == 0)
		llm_o.min_p = d;
	else if (strcmp(name, "top-k") == 0 && integer && d >= 0 && d <= INT32_MAX)
		llm_o.top_k = (int64_t)d;
	else if (strcmp(name, "n") == 0 && integer && d >= -1 && d <= INT32_MAX)
		llm_o.n_predict = (int64_t)d;
	else if (strcmp(name, "seed") == 0 && integer && d >= 0 && d < 9007199254740992.0)
		S.seed = (uint64_t)d;
	else {
		cli_error("/set: '%s %s' is not a setting (temp, top-k, top-p, min-p: numbers; seed >= 0; n >= -1)", name,
			  value);
		return;
	}
	make_sampler();
	note("(%s = %s)", name, value);
}

/* Drop the trailing messages from the last one with role `role` on;
 * whether there was one. */
static bool drop_from_last(const char *role)
{
	size_t n = json_array_size(S.conv);
	for (size_t i = n; i-- > 0;)
		if (strcmp(role_of(i), role) == 0) {
			while (json_array_size(S.conv) > i)
				json_array_remove(S.conv, i);
			return true;
		}
	return false;
}

/* A command line (it starts with '/'). */
static void command(const char *line)
{
	const char *sp = strchr(line, ' ');
	size_t len = sp ? (size_t)(sp - line) : strlen(line);
	const char *args = sp ? sp + 1 : "";
	while (*args == ' ')
		args++;
#define IS(name) (len == strlen(name) && memcmp(line, name, len) == 0)
	if (IS("/help") || IS("/?")) {
		cmd_help();
	} else if (IS("/exit") || IS("/quit")) {
		want_exit = true;
	} else if (IS("/clear")) {
		json_t *sys = has_system() ? json_incref(json_array_get(S.conv, 0)) : NULL;
		json_array_clear(S.conv);
		if (sys)
			json_array_append_new(S.conv, sys);
		note("(a new conversation)");
	} else if (IS("/system")) {
		set_system(args);
		note(*args ? "(system prompt set)" : "(no system prompt)");
	} else if (IS("/regen")) {
		size_t n = json_array_size(S.conv);
		if (n && strcmp(role_of(n - 1), "assistant") == 0)
			json_array_remove(S.conv, n - 1);
		if (!json_array_size(S.conv) || strcmp(role_of(json_array_size(S.conv) - 1), "system") == 0)
			cli_error("/regen: no message to answer");
		else
			answer();
	} else if (IS("/undo")) {
		if (!drop_from_last("user"))
			cli_error("/undo: nothing to undo");
		else
			note("(the last exchange was dropped)");
	} else if (IS("/save")) {
		cmd_save(args);
	} else if (IS("/load")) {
		cmd_load(args);
	} else if (IS("/set")) {
		cmd_set(args);
	} else if (IS("/stats")) {
		cmd_stats();
	} else if (IS("/model")) {
		cmd_model();
	} else {
		cli_error("unknown command '%.*s' (/help lists them; '//' starts a message with '/')", (int)len, line);
	}
#undef IS
}

/* A user turn or a command. */
static void turn(const char *text, size_t n)
{
	if (n && text[0] == '/' && !(n > 1 && text[1] == '/')) {
		char *line = strndup(text, n);
		if (!line)
			oom();
		command(line);
		free(line);
		return;
	}
	if (n && text[0] == '/')
		text++, n--;
	json_array_append_new(S.conv, message("user", text, n));
	answer();
}

/* ---- input: a pipe ---------------------------------------------------------------- */

/* Turns separated by sep (a newline by default): each is handled as soon
 * as its separator (or the end of the input) arrives. */
static int pipe_loop(void)
{
	const char *sep = o_sep ? o_sep : "\n";
	size_t ns = strlen(sep), scan = 0;
	struct cli_buf b = {0};
	bool eof = false;
	while (!want_exit) {
		char *hit = NULL;
		if (b.len >= ns && b.len - scan >= ns)
			hit = memmem(b.p + scan, b.len - scan, sep, ns);
		if (!hit && !eof) {
			if (b.len >= ns)
				scan = b.len - ns + 1;
			char chunk[65536];
			ssize_t r = read(0, chunk, sizeof chunk);
			if (r < 0 && errno == EINTR) {
				if (interrupted)
					break;
				continue;
			}
			if (r <= 0)
				eof = true;
			else if (b.len + (size_t)r > MAX_TURN_BYTES || !cli_buf_add(&b, chunk, (size_t)r))
				die(EXIT_RUNTIME, "standard input: a turn larger than %zu MiB", MAX_TURN_BYTES >> 20);
			continue;
		}
		size_t end = hit ? (size_t)(hit - b.p) : b.len;
		/* newlines (and a CR) around a turn are not part of it */
		size_t s = 0, e = end;
		while (s < e && (b.p[s] == '\n' || b.p[s] == '\r'))
			s++;
		while (e > s && (b.p[e - 1] == '\n' || b.p[e - 1] == '\r'))
			e--;
		if (e > s)
			turn(b.p + s, e - s);
		size_t used = hit ? end + ns : b.len;
		memmove(b.p, b.p + used, b.len - used);
		b.len -= used;
		scan = 0;
		if (!hit && eof)
			break;
	}
	free(b.p);
	return interrupted ? EXIT_INTERRUPTED : failed_status;
}

/* ---- input: a terminal --------------------------------------------------------------- */

#ifdef TERN_HAVE_EDIT
static char history_path[4096];

static void history_open(void)
{
	const char *xdg = getenv("XDG_STATE_HOME"), *home = getenv("HOME");
	char dir[4000];
	if (xdg && *xdg)
		snprintf(dir, sizeof dir, "%s/tern", xdg);
	else if (home && *home)
		snprintf(dir, sizeof dir, "%s/.local/state/tern", home);
	else
		return;
	/* mkdir -p: the parents of a default state directory may not exist */
	for (char *p = dir + 1; *p; p++)
		if (*p == '/') {
			*p = 0;
			mkdir(dir, 0700);
			*p = '/';
		}
	mkdir(dir, 0700);
	snprintf(history_path, sizeof history_path, "%s/chat_history", dir);
	using_history();
	stifle_history(1000);
	read_history(history_path);
}

static void history_add(const char *line)
{
	if (!*line)
		return;
	add_history(line);
	if (history_path[0])
		write_history(history_path);
}

/* keys read since the line began: whether Ctrl-C drops a line or leaves */
static int keys_read;

/* libedit reads keys through this: a Ctrl-C (SIGINT, or the byte when
 * the terminal does not turn it into a signal) ends the line. */
static int getc_interruptible(FILE *f)
{
	(void)f;
	for (;;) {
		unsigned char c;
		ssize_t r = read(0, &c, 1);
		if (r == 1) {
			if (c == 3) {
				interrupted = 1;
				return EOF;
			}
			keys_read++;
			return c;
		}
		if (r < 0 && errno == EINTR) {
			if (interrupted)
				return EOF;
			continue;
		}
		return EOF;
	}
}

/* One line from the terminal (malloc'd); NULL for Ctrl-D, or for Ctrl-C
 * (interrupted set; *typed says whether the line had text). */
static char *read_line(const char *prompt, bool *typed)
{
	interrupted = 0;
	keys_read = 0;
	char *line = readline(prompt);
	*typed = keys_read > 0;
	if (interrupted) {
		free(line);
		fputc('\n', stdout);
		return NULL;
	}
	return line;
}

static int tty_loop(void)
{
	/* before libedit initialises (using_history does): it installs the
	 * key reader then */
	rl_catch_signals = 0;
	rl_getc_function = getc_interruptible;
	if (!cli_isatty(stdout))
		rl_outstream = stderr; /* the answers go to the file; the echo stays on the terminal */
	history_open();
	bool color = cli_color(stdout);
	const char *p1 = color ? "\001\033[1;32m\002> \001\033[0m\002" : "> ";
	const char *p2 = color ? "\001\033[2m\002. \001\033[0m\002" : ". ";
	while (!want_exit) {
		struct cli_buf in = {0};
		bool block = false, more = true, first = true, cancelled = false;
		while (more) {
			bool typed = false;
			char *line = read_line(first ? p1 : p2, &typed);
			if (!line) {
				if (interrupted && (typed || !first)) {
					cancelled = true; /* Ctrl-C drops the line being typed */
					break;
				}
				free(in.p);
				if (!interrupted)
					fputc('\n', stdout);
				return EXIT_OK; /* Ctrl-D, or Ctrl-C on an empty line */
			}
			history_add(line);
			size_t n = strlen(line);
			bool ok = true;
			if (strcmp(line, "\"\"\"") == 0) {
				block = !block;
				more = block;
			} else if (block) {
				ok = cli_buf_add(&in, line, n) && cli_buf_add(&in, "\n", 1);
			} else if (n && line[n - 1] == '\\') {
				ok = cli_buf_add(&in, line, n - 1) && cli_buf_add(&in, "\n", 1);
			} else {
				ok = cli_buf_add(&in, line, n);
				more = false;
			}
			free(line);
			if (!ok)
				oom();
			first = false;
		}
		if (!cancelled) {
			size_t n = in.len;
			while (n && in.p[n - 1] == '\n')
				n--;
			if (n)
				turn(in.p, n);
		}
		free(in.p);
	}
	return EXIT_OK;
}
#endif

/* ---- main ------------------------------------------------------------------------------- */

int main(int argc, char **argv)
{
	const char **pos;
	int npos;
	cli_parse(&prog, argc, argv, &common, &pos, &npos);
	free(pos);
	dev_opts_check(&common);
	model_path = llm_opts_model();
	llm_opts_check();
	if (o_sep && !*o_sep)
		cli_usage_error("option '--turns-separator': an empty separator");
	tty = cli_isatty(stdin) && cli_isatty(stdout);
#ifndef TERN_HAVE_EDIT
	if (cli_isatty(stdin))
		die(EXIT_RUNTIME, "this build has no line editing (libedit): give the turns on standard input");
#endif

	signal(SIGPIPE, SIG_IGN);
	struct sigaction sa = {0};
	sa.sa_handler = on_sigint;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);

	if (tty && !common.quiet)
		fprintf(stderr, "%sloading %s...%s", cli_sgr(stderr, CLI_DIM), model_path, cli_sgr(stderr, CLI_RESET));
	load();
	S.conv = json_array();
	if (!S.conv)
		oom();
	set_system(o_system);
	if (tty && !common.quiet) {
		fprintf(stderr, "\r\033[K%s%s%s (%s, context %d tokens, chat template %s)\n%s/help for commands, Ctrl-D to "
			"leave%s\n",
			cli_sgr(stderr, CLI_BOLD), model_path, cli_sgr(stderr, CLI_RESET), S.m->cfg.arch,
			tern_llm_n_ctx(S.llm), tern_prompt_name(S.pr), cli_sgr(stderr, CLI_DIM),
			cli_sgr(stderr, CLI_RESET));
	}
	if (o_prompt)
		turn(o_prompt, strlen(o_prompt));
	int status = EXIT_OK;
	if (!want_exit) {
#ifdef TERN_HAVE_EDIT
		status = cli_isatty(stdin) ? tty_loop() : pipe_loop();
#else
		status = pipe_loop();
#endif
	}
	if (cli_color(stdout))
		fputs(CLI_RESET, stdout);
	fflush(stdout);
	unload();
	return status;
}
