/* run.c - tern-run: one-shot text generation for pipes and scripts.
 *
 * The program reads top to bottom in five steps: parse the options, build
 * the prompt text (arguments, -p or -f, then standard input), load the
 * model (file, vocabulary, backend, KV cache, sampler), turn the prompt
 * into tokens (through the model's chat template unless --raw), generate
 * (text streamed to stdout as it becomes final) and report (--json, -v).
 *
 * It is never interactive: with no prompt it fails at once instead of
 * waiting on a terminal. stdout carries only the generated text (or one
 * JSON object); everything else goes to stderr. A closed stdout (`| head`)
 * ends the run quietly with status 0; Ctrl-C stops the generation, keeps
 * what was produced and exits 130. */
#include <errno.h>
#include <poll.h>
#include <jansson.h>
#include <inttypes.h>
#include <math.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cmd/common/cli.h"
#include "cmd/common/device.h"
#include "cmd/common/llm_opts.h"
#include "cmd/run/embed.h"
#include "lib/format/modelfile.h"
#include "lib/llm/prompt.h"
#include "lib/llm/chatfmt.h"
#include "lib/llm/embed.h"
#include "lib/llm/generate.h"
#include "lib/llm/llm.h"
#include "lib/llm/model.h"
#include "lib/llm/sample.h"
#include "quant/quant.h"
#include "tokenizer/tok.h"

/* A prompt (arguments, file or standard input) larger than this is
 * refused: far beyond any context, and it bounds what is read. */
#define MAX_PROMPT_BYTES ((size_t)16 << 20)

/* exit status of a run stopped by Ctrl-C, as a shell reports SIGINT */
#define EXIT_INTERRUPTED 130

/* ---- options ----------------------------------------------------------- */

static const char *o_prompt, *o_file, *o_system, *o_messages, *o_tools;
static int64_t o_logprobs = -1;
static bool o_json, o_raw, o_no_parse_special, o_no_stdin, o_print_prompt;
static bool o_embedding;
static const char *o_pooling, *o_embd_format, *o_embd_sep;
static int64_t o_embd_norm = 2;
static struct cli_common common;

static const struct cli_opt opts[] = {
	LLM_OPTS_MODEL,
	{.lng = "prompt", .shrt = 'p', .kind = CLI_STR, .dst = &o_prompt, .arg = "TEXT", .excludes = "file",
	 .help = "the prompt (instead of PROMPT arguments)"},
	{.lng = "file", .shrt = 'f', .kind = CLI_FILE, .dst = &o_file, .arg = "FILE",
	 .help = "read the prompt from FILE ('-': standard input)"},
	{.lng = "system-prompt", .alias = "sys", .kind = CLI_STR, .dst = &o_system, .arg = "TEXT", .excludes = "raw|messages",
	 .help = "a system turn before the prompt (with a chat template)"},
	{.lng = "messages", .kind = CLI_FILE, .dst = &o_messages, .arg = "FILE", .ext = "json",
	 .excludes = "prompt|file|raw",
	 .help = "the conversation: a JSON array of OpenAI-style messages ('-': standard input)"},
	{.lng = "tools", .kind = CLI_FILE, .dst = &o_tools, .arg = "FILE", .ext = "json", .excludes = "raw",
	 .help = "tool definitions (a JSON array) for templates that use them"},
	{.lng = "print-prompt", .kind = CLI_FLAG, .dst = &o_print_prompt, .excludes = "json",
	 .help = "print the prompt exactly as the model would get it and exit (the weights are not loaded)"},
	LLM_OPTS_SAMPLING,
	{.lng = "json", .kind = CLI_FLAG, .dst = &o_json,
	 .help = "print one JSON object with the text, finish reason, token counts and timings"},
	{.lng = "logprobs", .kind = CLI_INT, .dst = &o_logprobs, .arg = "N", .min = 0, .max = TERN_GEN_MAX_LOGPROBS,
	 .needs = "json", .help = "add each generated token's log-probability and the N most likely alternatives"},
	{.lng = "raw", .kind = CLI_FLAG, .dst = &o_raw,
	 .excludes = "chat-template|chat-template-file|chat-template-name|jinja|no-jinja",
	 .help = "no chat template: the prompt is plain text (BOS as the file says; special-token text is parsed)"},
	{.lng = "no-parse-special", .kind = CLI_FLAG, .dst = &o_no_parse_special,
	 .help = "in a plain-text prompt, special-token text such as <|im_start|> stays text"},
	LLM_OPTS_TEMPLATE,
	DEV_OPTS,
	{.lng = "no-stdin", .kind = CLI_FLAG, .dst = &o_no_stdin,
	 .help = "do not read standard input even when it is not a terminal"},
	{.lng = "embedding", .kind = CLI_FLAG, .dst = &o_embedding,
	 .excludes = "messages|tools|system-prompt|print-prompt|logprobs|chat-template|chat-template-file|"
		     "chat-template-name|jinja|no-jinja|"
		     "raw|stop|ignore-eos",
	 .help = "print the embedding of each input line instead of generating (see EMBEDDINGS)"},
	{.lng = "pooling", .kind = CLI_CHOICE, .dst = &o_pooling, .arg = "TYPE", .choices = "none|mean|cls|last|rank",
	 .needs = "embedding", .help = "pool the tokens' states by TYPE: mean, cls or last (default: the file's)"},
	{.lng = "embd-normalize", .kind = CLI_INT, .dst = &o_embd_norm, .arg = "N", .min = -1, .max = 100,
	 .needs = "embedding",
	 .help = "normalise each embedding: -1 none, 0 int16 range, 1 taxicab, 2 Euclidean (default), N > 2 p-norm"},
	{.lng = "embd-output-format", .kind = CLI_CHOICE, .dst = &o_embd_format, .arg = "FMT",
	 .choices = "jsonl|array|json|raw|f32", .needs = "embedding", .excludes = "json",
	 .help = "jsonl: a JSON array per line (default); array; json; raw: text; f32: binary (see EMBEDDINGS)"},
	{.lng = "embd-separator", .kind = CLI_STR, .dst = &o_embd_sep, .arg = "TEXT", .needs = "embedding",
	 .help = "what separates the inputs (default: a newline)"},
	{0},
};

static const struct cli_section sections[] = {
	{"PROMPT",
	 "The prompt is the PROMPT arguments joined by spaces, or the TEXT of -p, or the contents of the FILE of -f "
	 "(one of the three). When standard input is not a terminal, its text is appended after a blank line "
	 "(\"PROMPT\\n\\nSTDIN\"), or is the whole prompt when no other is given; --no-stdin turns this off. A lone "
	 "'-' (or -f -) reads the prompt from standard input explicitly. The text is used byte for byte (a "
	 "trailing newline of a file or of standard input is kept; escapes such as \\n are not interpreted, "
	 "unlike llama.cpp's default: pass real newlines). With no prompt at all, or an empty one, "
	 "tern-run exits with status 2 at once: it never waits for a prompt to be typed. A prompt larger than "
	 "16 MiB is refused.\n"
	 "\n"
	 "Scripts that loop over lines of standard input (while read ...) should give tern-run --no-stdin or "
	 "</dev/null, or it reads the rest of their input as part of the prompt."},
	{"CHAT TEMPLATES",
	 "The prompt becomes one user turn (after a system turn with -sys TEXT) followed by the opening of the "
	 "assistant's turn; --messages FILE gives a whole conversation instead: a JSON array of OpenAI-style "
	 "messages ({\"role\", \"content\"}, and for templates that use tools \"tool_calls\", \"name\", "
	 "\"tool_call_id\"), the format tern-chat's /save writes; '-' reads it from standard input. --tools FILE "
	 "hands a JSON array of tool definitions to the template as `tools`. --print-prompt prints the text the "
	 "model would get (the BOS the tokenizer adds written as its text, nothing after it) and exits without "
	 "loading the weights: a vocabulary-only GGUF is enough.\n"
	 "\n"
	 LLM_OPTS_TEMPLATE_TEXT "\n"
	 "\n"
	 "A file without a chat template (a base model) and a prompt without --messages or a template option "
	 "gets the prompt as plain text; so does every model with --raw. Plain text is tokenized with BOS as "
	 "the file's metadata says and with special-token text such as <|im_start|> parsed into its token, so "
	 "that a template can be written by hand; --no-parse-special keeps such text as text. A system prompt "
	 "without a chat template is put before the prompt as plain text, after a warning. -v says which "
	 "template was used; --json names it (\"jinja\" or the built-in format's name)."},
	{"OUTPUT",
	 "Standard output carries only the generated text, written and flushed as each piece becomes final "
	 "(never a part of a UTF-8 character, never a part that may still turn out to be a stop string). The "
	 "output always ends with exactly one newline: newlines the model writes at the very end are dropped "
	 "and one is added (--json keeps the text exactly). End-of-generation and other control tokens are not "
	 "printed (--special prints the latter).\n"
	 "\n"
	 "With --json nothing is streamed; at the end one JSON object is printed, followed by a newline: "
	 "\"model\" (the path), \"text\" (exactly as generated; invalid UTF-8 as U+FFFD), \"finish_reason\" "
	 "(\"stop\": an end-of-generation token or a --stop string; \"length\": -n tokens or a full context; "
	 "\"cancel\": interrupted), \"prompt_tokens\", \"generated_tokens\" (counting the end-of-generation "
	 "token that stopped the run, as llama.cpp does), \"seed\", \"n_ctx\", \"chat_template\" (the format's "
	 "name, or null for plain text) and \"timings\": {\"load_ms\", \"prompt_ms\", \"prompt_tokens_per_s\", "
	 "\"gen_ms\", \"gen_tokens_per_s\"} (load_ms: opening the file to a ready KV cache; prompt_ms: running "
	 "the prompt through the model; gen_ms: sampling every generated token and running all but the last "
	 "through the model; a rate is the tokens of its count per second of its time, null when the time is 0). With --logprobs N, "
	 "\"logprobs\" is an array with one object per generated token (the stopping end-of-generation token "
	 "excluded; the tokens that hold a stop string included): {\"id\", \"text\", \"logprob\", \"top\": [{\"id\", \"text\", \"logprob\"} x N]}; "
	 "log-probabilities are the log-softmax of the model's raw logits, before any penalty, top-k, top-p or "
	 "temperature, and the alternatives are sorted by decreasing log-probability.\n"
	 "\n"
	 "Standard error: on a terminal, a 'loading' line while the model loads; warnings (among them: a "
	 "context that fills before -n ends the text; a standard input that is not a terminal and stays silent "
	 "for a second, as a parent's pipe left open does); with -v the model, "
	 "context, cache, threads, seed, chat format and prompt size before generating and a timing summary "
	 "after it (load; prompt eval: tokens, ms, ms per token, tokens per second; eval: the same for the "
	 "generated tokens). -q leaves only errors."},
	{"EMBEDDINGS",
	 "--embedding turns tern-run into an embedding tool, as llama.cpp's llama-embedding: the input (the same "
	 "sources as a prompt: PROMPT arguments, -p, -f, standard input, whose lines follow the others') is split "
	 "into lines, each line is one input (a final newline ends the last line; --embd-separator TEXT splits at "
	 "TEXT instead), and each input is tokenized as plain text (with the vocabulary's special tokens: [CLS] and "
	 "[SEP] for BERT, BOS/EOS as the file says; special-token text parsed unless --no-parse-special) and "
	 "run through the model as its own sequence: inputs never attend to each other. Models: the encoders "
	 "bert (BERT, MiniLM, BGE, ...) and nomic-bert (nomic-embed-text), whose attention sees the whole input, "
	 "and every decoder tern-run generates with (llama, qwen2, qwen3, gemma3, ...: embedding models of those "
	 "families, causal as they were trained), whose embedding is the final hidden state after the output norm.\n"
	 "\n"
	 "The tokens' states are pooled into one vector per input as the file's {arch}.pooling_type says, or as "
	 "--pooling chooses: mean (the average over the input's tokens), cls (the first token's) or last (the last "
	 "token's); a file that declares none (or rank, a reranker) needs --pooling. The vector is then "
	 "normalised by --embd-normalize N, llama.cpp's option: 2 Euclidean (unit length, the default), -1 none, 0 "
	 "scaled so that the largest absolute value is 32760 (an int16 range), 1 taxicab, N > 2 the p-norm.\n"
	 "\n"
	 "Output (--embd-output-format), one vector per input in input order: jsonl (the default): one JSON array of "
	 "n_embd numbers per line; array: one JSON array of those arrays (llama-embedding's array); json (also "
	 "--json): an OpenAI-style object {\"object\": \"list\", \"model\", \"n_embd\", \"pooling\", \"normalize\", "
	 "\"data\": [{\"object\": \"embedding\", \"index\", \"tokens\", \"embedding\": [...]}], \"usage\": "
	 "{\"prompt_tokens\", \"total_tokens\"}}; raw: text, the numbers of one vector separated by spaces, one "
	 "vector per line (llama-embedding's raw); f32: binary, n_embd little-endian IEEE float32 values per input "
	 "and nothing else (refused when standard output is a terminal). Numbers are written in the shortest form "
	 "that reads back to the same float32. Each vector is written as soon as it is computed.\n"
	 "\n"
	 "Every input is tokenized before the first is embedded: an empty input (an empty line) exits with status "
	 "65 and an input longer than the context (-c; by default the trained context, at most 4096; a BERT "
	 "model cannot go beyond its trained positions) with status 1, both naming the input, before anything is "
	 "written. An encoder runs an input in one pass of up to the context's tokens; a decoder in passes of "
	 "-ub tokens with the KV cache of -ctk/-ctv, refused (status 1, with the numbers) when the file, the cache "
	 "and the buffers do not fit in the memory available. An embedding model run without --embedding is a usage error "
	 "(status 2) that says so."},
	{"DEFAULTS",
	 "The sampling defaults are llama.cpp's: --temp 0.8, --top-k 40, --top-p 0.95, --min-p 0.05, "
	 "--repeat-penalty 1.0 (off) over --repeat-last-n 64, no presence or frequency penalty, a random seed. "
	 "The stages run in llama.cpp's order: penalties, top-k, top-p, min-p, temperature, draw. The same seed "
	 "and options give the same text on every run and with any number of threads.\n"
	 "\n"
	 "Memory: before the KV cache is made, the model file plus the cache plus the working buffers, less "
	 "the weights and cache the device plan (-ngl) puts on a GPU, are compared with the memory available "
	 "(MemAvailable in /proc/meminfo); a model that does not fit is refused (status 1) with the numbers "
	 "and a suggestion (a smaller -c, -ctk/-ctv q8_0, more layers on the GPU). The context "
	 "must hold the prompt (status 1 otherwise, with both sizes); a context larger than the trained one "
	 "gets a warning."},
	{"DEVICES", DEV_OPTS_TEXT},
	{"SIGNALS",
	 "A closed standard output (tern-run ... | head -c 20) stops the generation quietly: no message, exit "
	 "status 0. Ctrl-C (SIGINT) stops the generation at the next token: the text produced so far is kept "
	 "and ends with the newline as usual (with --json the object is printed with finish_reason \"cancel\"), "
	 "and the exit status is 130. A second Ctrl-C ends the program at once. Ctrl-C during the model's "
	 "load stops the run once the model is loaded, before the prompt (the output is then empty)."},
	{"EXIT STATUS",
	 "0 success (also when standard output was closed by the reader); 1 runtime error (cannot open or map "
	 "the model, not enough memory, the prompt does not fit the context, a prompt file that cannot be "
	 "read or is larger than 16 MiB, a write error); 2 usage error (unknown option, bad value, no prompt, "
	 "no model, an unknown chat format); 65 the model file is not a valid GGUF file, lacks a tensor or "
	 "key, has a tensor of the wrong shape, or an architecture or type tern cannot run, the prompt "
	 "is not text (a NUL byte, or invalid UTF-8 for a chat template), --messages or --tools is not the "
	 "JSON described above, or the chat template cannot be parsed or rendered, or (--embedding) an input is "
	 "empty or the file declares no pooling and --pooling is not given; 130 interrupted by "
	 "Ctrl-C.\n"
	 "\n"
	 "Errors are one line on stderr: tern-run: PATH: what is wrong."},
	{"ENVIRONMENT",
	 "TERN_MODEL: the model when -m is not given.\n"
	 "\n"
	 "TERN_MEM_AVAILABLE: bytes of memory the memory check assumes instead of MemAvailable; 0 turns the "
	 "check off."},
	{"EXAMPLES",
	 "  tern-run -m SmolLM2-135M-Instruct.Q4_1.gguf \"What is the capital of France?\"\n"
	 "  cat notes.txt | tern-run -m model.gguf \"Summarise:\"\n"
	 "  export TERN_MODEL=model.gguf; tern-run -n 64 --temp 0 -p \"Write a haiku about the sea.\"\n"
	 "  tern-run -m model.gguf --raw --temp 0 -n 32 \"The capital of France is\"\n"
	 "  tern-run -m model.gguf --json --logprobs 3 -n 8 \"Hello\" | jq .text\n"
	 "  tern-run -m model.gguf -sys \"Answer in one word.\" --stop \".\" \"Best colour?\"\n"
	 "  tern-run -m model.gguf -f question.txt -c 8192 -ctk q8_0 -ctv q8_0\n"
	 "  tern-run -m model.gguf --messages chat.json --tools tools.json --print-prompt\n"
	 "  tern-run -m model.gguf --chat-template llama3 \"Hi\"\n"
	 "  tern-run -m bge-small-en-v1.5-f16.gguf --embedding -f sentences.txt > vectors.jsonl\n"
	 "  tern-run -m nomic-embed-text-v1.5.Q8_0.gguf --embedding --embd-output-format f32 -f docs.txt > docs.f32"},
	{NULL, NULL},
};

static const struct cli_prog prog = {
	.name = "run",
	.summary = "generate text with a language model, for pipes and scripts",
	.usage = "[OPTIONS] [PROMPT...]",
	.description =
		"tern-run loads a GGUF language model (architectures llama, qwen2, qwen3, gemma3, gemma, gemma2, "
		"phi2, phi3, qwen2moe, qwen3moe, gpt-oss, deepseek2; llama also with experts, as Mixtral), "
		"gives it one prompt and writes the generated text to standard output, streamed as it is produced; with "
		"--embedding it writes the embeddings of its input lines instead (also for the encoders bert and "
		"nomic-bert; see EMBEDDINGS). It is made for "
		"scripts and pipes: it never asks anything, reads standard input when that is not a terminal, and "
		"reports errors as one line and an exit status.\n"
		"\n"
		"The options are spelt as llama.cpp's llama-cli spells them (-m, -p, -f, -n, -c, -t, -b, -ub, -s, "
		"--temp, --top-k, ...), with its defaults.",
	.opts = opts,
	.pos_name = "PROMPT",
	.min_pos = 0,
	.max_pos = -1,
	.sections = sections,
};

/* ---- small helpers ------------------------------------------------------- */

/* Append everything f holds (at most MAX_PROMPT_BYTES in all). 0, or an
 * errno value (EFBIG when too large). */
/* how long standard input may stay silent before tern-run says it waits */
#define STDIN_HINT_MS 1000

static int read_all(FILE *f, struct cli_buf *b)
{
	char chunk[65536];
	size_t n;
	while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) {
		if (b->len + n > MAX_PROMPT_BYTES)
			return EFBIG;
		if (!cli_buf_add(b, chunk, n))
			return ENOMEM;
	}
	return ferror(f) ? (errno ? errno : EIO) : 0;
}

/* Whether the 'loading' line is on stderr (a terminal), to be erased. */
static bool loading_shown;

static void loading_clear(void)
{
	if (loading_shown)
		fputs("\r\033[K", stderr);
	loading_shown = false;
}

static _Noreturn void die(int status, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static _Noreturn void die(int status, const char *fmt, ...)
{
	loading_clear();
	char msg[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	cli_error("%s", msg);
	exit(status);
}

#define info(...) cli_info(&common, __VA_ARGS__)

#define warning(...) (common.quiet ? (void)0 : cli_warn(__VA_ARGS__))

/* ---- step 1: the options beyond what the parser checks ------------------- */

static const char *model_path;

static void check_options(void)
{
	dev_opts_check(&common);
	model_path = llm_opts_model();
	llm_opts_check();
	if (o_pooling && (strcmp(o_pooling, "none") == 0 || strcmp(o_pooling, "rank") == 0))
		cli_usage_error("--pooling %s: %s are not supported (mean, cls, last)", o_pooling,
				strcmp(o_pooling, "none") == 0 ? "per-token embeddings" : "rerankers");
	if (o_embd_sep && !*o_embd_sep)
		cli_usage_error("--embd-separator: must not be empty");
	if (o_embd_format && strcmp(o_embd_format, "f32") == 0 && cli_isatty(stdout))
		cli_usage_error("--embd-output-format f32 writes binary: redirect standard output to a file or a pipe");
}

/* ---- step 2: the prompt text ------------------------------------------------ */

/* The prompt: arguments, -p or -f, then standard input when it is not a
 * terminal. Usage errors exit 2; a file that cannot be read exits 1. */
/* Standard input's text after the prompt b (a blank line between; a
 * newline for the embeddings' inputs); dash: it was asked for with '-'. */
static void append_stdin(struct cli_buf *bp, bool dash)
{
	struct cli_buf b = *bp, in = {0};
	/* standard input left open by a parent (ssh, a pipe nobody
	 * writes): after a second with nothing to read, say what is
	 * waited for and how not to */
	struct pollfd pfd = {.fd = 0, .events = POLLIN};
	if (!dash && poll(&pfd, 1, STDIN_HINT_MS) == 0)
		warning("reading standard input (not a terminal: its text joins the prompt); end it, or give "
			"--no-stdin or </dev/null when there is none");
	int err = read_all(stdin, &in);
	/* a closed descriptor 0 is no input, not an error */
	if (err == EBADF)
		err = 0;
	if (err) {
		free(in.p);
		free(b.p);
	}
	if (err == EFBIG)
		die(EXIT_RUNTIME, "standard input: larger than the %zu MiB a prompt may have",
		    MAX_PROMPT_BYTES >> 20);
	if (err)
		die(EXIT_RUNTIME, "standard input: cannot read: %s", strerror(err));
	if (in.len) {
		/* embeddings: standard input's lines follow the others' */
		bool ok = (!b.len || (o_embedding ? cli_buf_add(&b, "\n", 1) : cli_buf_add(&b, "\n\n", 2))) &&
			  b.len + in.len <= MAX_PROMPT_BYTES && cli_buf_add(&b, in.p, in.len);
		free(in.p);
		if (!ok) {
			free(b.p);
			die(EXIT_RUNTIME, "the prompt with standard input is larger than the %zu MiB a prompt "
			    "may have", MAX_PROMPT_BYTES >> 20);
		}
	} else {
		free(in.p);
	}
	*bp = b;
}

static void read_prompt(const char **pos, int npos, struct cli_buf *out)
{
	if (o_messages) {
		/* the conversation is the prompt: nothing else is read */
		if (npos)
			cli_usage_error("--messages gives the conversation: no PROMPT arguments too");
		*out = (struct cli_buf){0};
		return;
	}
	if ((o_prompt != NULL) + (o_file != NULL) + (npos > 0) > 1)
		cli_usage_error("give the prompt once: as PROMPT arguments, with -p or with -f");
	for (int i = 0; i < npos && npos > 1; i++)
		if (strcmp(pos[i], "-") == 0)
			cli_usage_error("'-' (the prompt from standard input) cannot be combined with other PROMPT words");
	bool dash = (npos == 1 && strcmp(pos[0], "-") == 0) || (o_file && strcmp(o_file, "-") == 0);
	if (dash)
		o_file = NULL;
	if (dash && o_no_stdin)
		cli_usage_error("'-' reads the prompt from standard input, which --no-stdin turns off");
	bool tty = cli_isatty(stdin);
	if (dash && tty)
		cli_usage_error("'-' reads the prompt from standard input, which is a terminal");

	struct cli_buf b = {0};
	bool ok = true;
	if (o_prompt) {
		ok = strlen(o_prompt) <= MAX_PROMPT_BYTES && cli_buf_add(&b, o_prompt, strlen(o_prompt));
	} else if (o_file) {
		FILE *f = fopen(o_file, "rb");
		if (!f)
			die(EXIT_RUNTIME, "%s: cannot open: %s", o_file, strerror(errno));
		int err = read_all(f, &b);
		fclose(f);
		if (err)
			free(b.p);
		if (err == EFBIG)
			die(EXIT_RUNTIME, "%s: larger than the %zu MiB a prompt may have", o_file, MAX_PROMPT_BYTES >> 20);
		if (err)
			die(EXIT_RUNTIME, "%s: cannot read: %s", o_file, strerror(err));
	} else {
		for (int i = 0; i < npos && !dash && ok; i++)
			ok = (i == 0 || cli_buf_add(&b, " ", 1)) && b.len + strlen(pos[i]) <= MAX_PROMPT_BYTES &&
			     cli_buf_add(&b, pos[i], strlen(pos[i]));
	}
	if (!ok) {
		free(b.p);
		die(EXIT_RUNTIME, "the prompt is larger than the %zu MiB a prompt may have", MAX_PROMPT_BYTES >> 20);
	}

	if (dash || (!tty && !o_no_stdin))
		append_stdin(&b, dash);
	if (!b.len) {
		free(b.p);
		cli_usage_error("no prompt: give it as PROMPT arguments, with -p or -f, or on standard input");
	}
	/* the prompt is text: a NUL byte would silently end it early */
	const char *nul = memchr(b.p, 0, b.len);
	if (nul) {
		size_t at = (size_t)(nul - b.p);
		free(b.p);
		die(EXIT_DATAERR, "the prompt has a NUL byte at offset %zu: it must be text", at);
	}
	*out = b;
}

/* ---- step 3: loading -------------------------------------------------------- */

struct session {
	tern_mf *mf;          /* --print-prompt: the file alone (metadata and vocabulary) */
	struct tern_model *m;
	tok_vocab *v;
	struct dev_ctx dev;
	struct tern_llm *llm;
	struct tern_sampler *s;
	struct tern_gen *g;
	uint64_t seed;
	double load_ms;
};

static double mib(uint64_t b) { return (double)b / (1024.0 * 1024.0); }

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

/* --print-prompt: the metadata and the vocabulary, never the weights (a
 * vocabulary-only GGUF is enough). */
static void load_vocab_only(struct session *ss)
{
	tern_err e = {0};
	int rc = tern_mf_open(&ss->mf, model_path, NULL, &e);
	if (rc)
		exit(cli_fail(NULL, rc, &e));
	const gguf_file *gf = tern_mf_gguf(ss->mf);
	rc = gf ? tok_vocab_load(&ss->v, gf, &e) : tern_errf(&e, TERN_EFORMAT, "not a GGUF file");
	if (rc)
		exit(cli_fail(model_path, rc, &e));
}

/* An embedding model given to generate: say how to run it (exit 2). */
static void encoder_hint(void)
{
	tern_mf *mf = NULL;
	char arch[TERN_ARCH_NAME_MAX];
	tern_err e = {0};
	if (tern_mf_open(&mf, model_path, NULL, &e) == 0 && tern_arch_family(mf, arch, sizeof arch) == TERN_ARCH_LLM &&
	    tern_embed_is_encoder(arch)) {
		tern_mf_close(mf);
		cli_usage_error("%s: %s is an embedding model, it does not generate text: run it with --embedding",
				model_path, arch);
	}
	tern_mf_close(mf);
}

static void load(struct session *ss)
{
	tern_err e = {0};
	double t0 = cli_now_ms();
	if (cli_isatty(stderr) && !common.quiet) {
		fprintf(stderr, "%s: loading %s...", cli_progname(), model_path);
		loading_shown = true;
	}
	int rc = tern_model_open(&ss->m, model_path, &e);
	if (rc) {
		loading_clear();
		if (rc == TERN_EUNSUPPORTED)
			encoder_hint();
		exit(cli_fail(NULL, rc, &e));
	}
	const struct tern_model_config *c = &ss->m->cfg;
	const gguf_file *gf = tern_mf_gguf(ss->m->mf);
	rc = gf ? tok_vocab_load(&ss->v, gf, &e) : tern_errf(&e, TERN_EFORMAT, "not a GGUF file");
	if (rc) {
		loading_clear();
		exit(cli_fail(model_path, rc, &e));
	}

	uint32_t tk = (uint32_t)tern_llm_cache_type(llm_o.ctk), tv = (uint32_t)tern_llm_cache_type(llm_o.ctv);

	rc = llm_opts_load(&ss->dev, &common, ss->m, tk, tv, &ss->llm, &e);
	loading_clear();
	if (rc)
		exit(cli_fail(model_path, rc, &e));

	ss->seed = llm_o.seed < 0 ? random_seed() : (uint64_t)llm_o.seed;
	struct tern_sample_opts so = llm_opts_sampling(ss->seed);
	rc = tern_sampler_new(&ss->s, tern_llm_n_vocab(ss->llm), &so, &e);
	if (rc) /* the options were checked: what is left is memory */
		exit(cli_fail(NULL, rc, &e));
	ss->load_ms = cli_now_ms() - t0;

	if (tok_vocab_warning(ss->v))
		warning("%s: %s", model_path, tok_vocab_warning(ss->v));
	int32_t ctx = tern_llm_n_ctx(ss->llm);
	if (c->n_ctx_train && (uint32_t)ctx > c->n_ctx_train)
		warning("a context of %d is larger than the %u the model was trained on: expect poor text past %u",
		     ctx, c->n_ctx_train, c->n_ctx_train);
	info("%s: %s, %u layers, %u-token vocabulary; loaded in %.1f ms", model_path, c->arch, c->n_layer,
	     c->n_vocab, ss->load_ms);
	info("context %d (trained %u), KV cache %s/%s %.1f MiB, batch %" PRId64 "/%" PRId64 ", %" PRId64
	     " threads, seed %" PRIu64,
	     ctx, c->n_ctx_train, llm_o.ctk, llm_o.ctv, mib(tern_llm_kv_bytes(ss->llm)), llm_o.batch, llm_o.ubatch, llm_o.threads,
	     ss->seed);
}

/* ---- step 4: the prompt as tokens ----------------------------------------- */

/* A JSON text read from FILE ('-': standard input), NUL-terminated;
 * exits 1 when it cannot be read. */
static char *read_json_file(const char *path)
{
	bool in = strcmp(path, "-") == 0;
	if (in && cli_isatty(stdin))
		cli_usage_error("'-' reads JSON from standard input, which is a terminal");
	FILE *f = in ? stdin : fopen(path, "rb");
	if (!f)
		die(EXIT_RUNTIME, "%s: cannot open: %s", path, strerror(errno));
	struct cli_buf b = {0};
	int err = read_all(f, &b);
	if (!in)
		fclose(f);
	if (!err && !cli_buf_add(&b, "", 0))
		err = ENOMEM;
	if (err) {
		free(b.p);
		die(EXIT_RUNTIME, "%s: cannot read: %s", in ? "standard input" : path,
		    err == EFBIG ? "larger than 16 MiB" : strerror(err));
	}
	return b.p;
}

/* The conversation as JSON text: --messages, or -sys and the prompt as
 * a system and a user message. */
static char *conversation(const struct cli_buf *prompt)
{
	if (o_messages) {
		char *m = read_json_file(o_messages);
		tern_err e = {0};
		int rc = tern_prompt_check_messages(m, strlen(m), &e);
		if (rc) {
			free(m);
			die(cli_exit_status(rc), "%s: %s", strcmp(o_messages, "-") ? o_messages : "standard input", e.msg);
		}
		return m;
	}
	json_t *a = json_array(), *u = json_stringn(prompt->p, prompt->len);
	if (!u)
		die(EXIT_DATAERR, "the prompt is not valid UTF-8: a chat template takes text (--raw takes any bytes)");
	if (o_system) {
		json_t *sys = json_string(o_system);
		if (!sys)
			die(EXIT_DATAERR, "the system prompt is not valid UTF-8");
		json_array_append_new(a, json_pack("{s:s,s:o}", "role", "system", "content", sys));
	}
	json_array_append_new(a, json_pack("{s:s,s:o}", "role", "user", "content", u));
	char *t = json_dumps(a, JSON_COMPACT);
	json_decref(a);
	if (!t)
		die(EXIT_RUNTIME, "out of memory");
	return t;
}

/* The text the model sees: the conversation through the chosen chat
 * template, or the plain prompt (--raw; a prompt without --messages for a
 * file without a template, as a base model wants it). *pr_out is the
 * template (NULL: plain text). This is the one place that knows about
 * chat templates. */
static char *render_prompt(const struct session *ss, const struct cli_buf *prompt, struct tern_prompt **pr_out)
{
	const tern_mf *mf = ss->m ? ss->m->mf : ss->mf;
	bool chosen = llm_o.tmpl || llm_o.tmpl_file || llm_o.tmpl_name || llm_o.no_jinja;
	*pr_out = NULL;
	struct cli_buf b = {0};
	if (o_raw || (!o_messages && !chosen && !tern_chat_template_of(mf, NULL).ptr)) {
		if (o_raw)
			info("chat template: none (--raw): the prompt is plain text");
		else
			info("chat template: none (the file has none): the prompt is plain text");
		if (o_tools)
			warning("--tools needs a chat template: ignored");
		if (o_system) {
			warning("no chat template: the system prompt is put before the prompt as plain text");
			if (!cli_buf_add(&b, o_system, strlen(o_system)) || !cli_buf_add(&b, "\n\n", 2))
				die(EXIT_RUNTIME, "out of memory");
		}
		if (!cli_buf_add(&b, prompt->p, prompt->len))
			die(EXIT_RUNTIME, "out of memory");
		return b.p;
	}
	if (o_no_parse_special)
		warning("--no-parse-special applies to plain-text prompts, not to a chat template");
	char *file_text;
	struct tern_prompt_opts po = llm_opts_prompt(&file_text);
	po.tools = o_tools != NULL;
	struct tern_prompt *pr;
	tern_err e = {0};
	int rc = tern_prompt_new(&pr, mf, ss->v, &po, &e);
	free(file_text);
	if (rc)
		die(cli_exit_status(rc), "%s: %s%s", model_path, e.msg,
		    po.builtin ? "" : " (--chat-template NAME uses a built-in format instead)");
	if (tern_prompt_warning(pr))
		warning("%s: %s", model_path, tern_prompt_warning(pr));
	info("chat template: %s", tern_prompt_describe(pr));
	char *msgs = conversation(prompt);
	char *tools = o_tools ? read_json_file(o_tools) : NULL;
	char *out = NULL;
	rc = tern_prompt_render(pr, msgs, strlen(msgs), tools, true, &out, NULL, &e);
	free(msgs);
	free(tools);
	if (rc) {
		/* the message names what was wrong: the template, the tools or the messages */
		bool tmpl = strncmp(e.msg, "chat template", 13) == 0;
		bool jinja = tern_prompt_kind(pr) == TERN_PROMPT_JINJA;
		tern_prompt_free(pr);
		const char *what = tmpl ? model_path
				   : o_tools && strncmp(e.msg, "tools", 5) == 0 ? o_tools
				   : o_messages ? o_messages : model_path;
		die(cli_exit_status(rc), "%s: %s%s", what, e.msg,
		    tmpl && jinja ? " (--chat-template NAME uses a built-in format instead)" : "");
	}
	*pr_out = pr;
	return out;
}

/* Tokenize the prompt into at most n_ctx ids (*ids malloc'd). */
static int32_t tokenize_prompt(const struct session *ss, const char *text, bool templated, int32_t **ids)
{
	tern_err e = {0};
	int32_t n_ctx = tern_llm_n_ctx(ss->llm);
	size_t cap = (size_t)n_ctx + 1, n = 0;
	int32_t *p = malloc(cap * sizeof *p);
	if (!p)
		die(EXIT_RUNTIME, "out of memory for %d prompt tokens", n_ctx);
	/* a chat format's markers are special-token text: always parsed */
	bool parse = templated || !o_no_parse_special;
	int rc = tok_tokenize(ss->v, text, strlen(text), true, parse, p, cap, &n, NULL, &e);
	if (rc || n > (size_t)n_ctx || n == 0)
		free(p);
	if (rc)
		exit(cli_fail(model_path, rc, &e));
	int32_t bos = tok_special_id(ss->v, TOK_BOS);
	if (n <= cap && n >= 2 && bos >= 0 && p[0] == bos && p[1] == bos && tok_add_bos(ss->v)) {
		/* the text began with the BOS text and the tokenizer added one:
		 * a chat format keeps one, as llama.cpp does; by hand it is the
		 * user's choice, with llama.cpp's warning */
		if (templated) {
			memmove(p, p + 1, (n - 1) * sizeof *p);
			n--;
		} else {
			warning("the prompt starts with BOS and the model adds one: it now starts with two");
		}
	}
	if (n > (size_t)n_ctx)
		die(EXIT_RUNTIME, "the prompt is %zu tokens, more than the context of %d: raise it with -c N%s", n,
		    n_ctx, ss->m->cfg.n_ctx_train > (uint32_t)n_ctx ? " (the model was trained on more)" : "");
	if (n == 0)
		cli_usage_error("the prompt gives no tokens");
	*ids = p;
	return (int32_t)n;
}

/* ---- step 5: generation ------------------------------------------------------ */

static volatile sig_atomic_t interrupted;

static void on_sigint(int sig)
{
	(void)sig;
	interrupted = 1; /* SA_RESETHAND: a second Ctrl-C kills at once */
}

/* What the callbacks collect. */
struct output {
	struct cli_buf text;       /* --json: the generated text */
	size_t held_nl;        /* text mode: newlines not written yet (maybe the last) */
	bool pipe_closed;      /* stdout's reader went away */
	int write_errno;       /* another write error */
	/* --logprobs: per token, the chosen one then N alternatives */
	struct tern_gen_alt *lp;
	size_t n_lp, cap_lp;
	int n_top;
	bool oom;
};

static int write_out(struct output *o, const char *s, size_t n)
{
	if (n && fwrite(s, 1, n, stdout) != n) {
		if (errno == EPIPE)
			o->pipe_closed = true;
		else
			o->write_errno = errno ? errno : EIO;
		return 1;
	}
	return 0;
}

static int write_newlines(struct output *o, size_t n)
{
	static const char nl[64] = "\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n"
				   "\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n";
	for (size_t k; n; n -= k) {
		k = n < sizeof nl ? n : sizeof nl;
		if (write_out(o, nl, k))
			return 1;
	}
	return 0;
}

/* Text as it becomes final. Text mode holds trailing newlines back, so
 * that the output ends with exactly one; nonzero stops the generation. */
static int on_text(void *ud, const char *s, size_t len)
{
	struct output *o = ud;
	if (o_json) {
		if (!cli_buf_add(&o->text, s, len)) {
			o->oom = true;
			return 1;
		}
		return 0;
	}
	size_t k = 0;
	while (k < len && s[len - 1 - k] == '\n')
		k++;
	if (k < len) {
		if (write_newlines(o, o->held_nl) || write_out(o, s, len - k))
			return 1;
		o->held_nl = 0;
	}
	o->held_nl += k;
	if (fflush(stdout)) {
		if (errno == EPIPE)
			o->pipe_closed = true;
		else
			o->write_errno = errno ? errno : EIO;
		return 1;
	}
	return 0;
}

static void on_token(void *ud, const struct tern_gen_token *t)
{
	struct output *o = ud;
	size_t need = 1 + (size_t)o->n_top;
	if (o->oom)
		return;
	if (o->n_lp + need > o->cap_lp) {
		size_t cap = o->cap_lp ? o->cap_lp * 2 : 64 * need;
		while (cap < o->n_lp + need)
			cap *= 2;
		struct tern_gen_alt *p = realloc(o->lp, cap * sizeof *p);
		if (!p) {
			o->oom = true;
			return;
		}
		o->lp = p;
		o->cap_lp = cap;
	}
	o->lp[o->n_lp++] = (struct tern_gen_alt){t->id, t->logprob};
	for (int i = 0; i < o->n_top; i++)
		o->lp[o->n_lp++] = i < t->n_top ? t->top[i] : (struct tern_gen_alt){-1, -INFINITY};
}

/* Generate from the prompt's ids; the text goes to the callbacks. */
static int generate(struct session *ss, const struct tern_prompt *pr, const int32_t *ids, int32_t n_ids,
		    struct output *out, struct tern_gen_stats *st, tern_err *e)
{
	const char *stops[TERN_GEN_MAX_STOP];
	struct tern_gen_opts go = {
		.n_predict = (int32_t)llm_o.n_predict,
		.n_batch = (int32_t)llm_o.batch,
		.ignore_eos = llm_o.ignore_eos,
		.stop = stops,
		.n_stop = llm_opts_stops(pr, stops),
		/* the generator reports tokens only when alternatives are asked for */
		.n_logprobs = o_logprobs < 0 ? 0 : o_logprobs ? (int32_t)o_logprobs : 1,
		.print_special = llm_o.special,
		.cancel = &interrupted,
	};
	*st = (struct tern_gen_stats){0};
	int rc = tern_gen_new(&ss->g, ss->llm, ss->v, ss->s, &go, e);
	if (rc)
		return rc;
	struct tern_gen_cb cb = {on_text, o_logprobs >= 0 ? on_token : NULL, out};
	return tern_gen_run(ss->g, ids, n_ids, &cb, st, e);
}

/* ---- reporting -------------------------------------------------------------- */

static double per_s(double n, double ms) { return ms > 0 ? n * 1e3 / ms : NAN; }

/* A time or rate to 3 decimals (null when not finite). */
static void json_fixed(double v)
{
	if (isfinite(v))
		printf("%.3f", v);
	else
		fputs("null", stdout);
}

static void json_key(const char *k)
{
	cli_json_str(stdout, k, strlen(k));
	fputs(": ", stdout);
}

static void json_token(const tok_vocab *v, int32_t id, float logprob)
{
	struct tok_piece p = tok_token_bytes(v, id);
	fputs("{\"id\": ", stdout);
	cli_json_num(stdout, id);
	fputs(", \"text\": ", stdout);
	cli_json_str(stdout, p.ptr ? p.ptr : "", p.ptr ? p.len : 0);
	fputs(", \"logprob\": ", stdout);
	cli_json_f32(stdout, logprob);
}

static void print_json(const struct session *ss, const struct output *o, const struct tern_gen_stats *st,
		       const struct tern_prompt *pr)
{
	fputs("{", stdout);
	json_key("model");
	cli_json_str(stdout, model_path, strlen(model_path));
	fputs(", ", stdout);
	json_key("text");
	cli_json_str(stdout, o->text.p ? o->text.p : "", o->text.len);
	fputs(", ", stdout);
	json_key("finish_reason");
	const char *fin = tern_finish_name(st->finish);
	cli_json_str(stdout, fin, strlen(fin));
	fputs(", \"prompt_tokens\": ", stdout);
	cli_json_num(stdout, st->n_prompt);
	fputs(", \"generated_tokens\": ", stdout);
	cli_json_num(stdout, st->n_gen);
	printf(", \"seed\": %" PRIu64, ss->seed); /* exact: seeds go beyond 2^53 */
	fputs(", \"n_ctx\": ", stdout);
	cli_json_num(stdout, tern_llm_n_ctx(ss->llm));
	fputs(", \"chat_template\": ", stdout);
	if (!pr)
		fputs("null", stdout);
	else
		cli_json_str(stdout, tern_prompt_name(pr), strlen(tern_prompt_name(pr)));
	fputs(",\n \"timings\": {\"load_ms\": ", stdout);
	json_fixed(ss->load_ms);
	fputs(", \"prompt_ms\": ", stdout);
	json_fixed(st->prompt_ms);
	fputs(", \"prompt_tokens_per_s\": ", stdout);
	json_fixed(per_s(st->n_prompt, st->prompt_ms));
	fputs(", \"gen_ms\": ", stdout);
	json_fixed(st->gen_ms);
	fputs(", \"gen_tokens_per_s\": ", stdout);
	json_fixed(per_s(st->n_gen, st->gen_ms));
	fputs("}", stdout);
	if (o_logprobs >= 0) {
		fputs(",\n \"logprobs\": [", stdout);
		size_t step = 1 + (size_t)o->n_top;
		for (size_t i = 0; i + step <= o->n_lp; i += step) {
			fputs(i ? ",\n  " : "\n  ", stdout);
			json_token(ss->v, o->lp[i].id, o->lp[i].logprob);
			fputs(", \"top\": [", stdout);
			for (int k = 0; k < (int)o_logprobs; k++) {
				const struct tern_gen_alt *a = &o->lp[i + 1 + (size_t)k];
				if (a->id < 0)
					break;
				fputs(k ? ", " : "", stdout);
				json_token(ss->v, a->id, a->logprob);
				fputs("}", stdout);
			}
			fputs("]}", stdout);
		}
		fputs(o->n_lp ? "\n ]" : "]", stdout);
	}
	fputs("}\n", stdout);
}

/* llama.cpp's timing summary, with -v. */
static void print_timings(const struct session *ss, const struct tern_gen_stats *st)
{
	if (!common.verbose || common.quiet)
		return;
	const char *p = cli_progname();
	fprintf(stderr, "%s: load        %10.2f ms\n", p, ss->load_ms);
	fprintf(stderr, "%s: prompt eval %10.2f ms / %6d tokens (%8.2f ms per token, %8.2f tokens per second)\n", p,
		st->prompt_ms, st->n_prompt, st->n_prompt ? st->prompt_ms / st->n_prompt : 0.0,
		st->prompt_ms > 0 ? st->n_prompt * 1e3 / st->prompt_ms : 0.0);
	fprintf(stderr, "%s: eval        %10.2f ms / %6d tokens (%8.2f ms per token, %8.2f tokens per second)\n", p,
		st->gen_ms, st->n_gen, st->n_gen ? st->gen_ms / st->n_gen : 0.0,
		st->gen_ms > 0 ? st->n_gen * 1e3 / st->gen_ms : 0.0);
	fprintf(stderr, "%s: total       %10.2f ms / %6d tokens (finish: %s)\n", p,
		ss->load_ms + st->prompt_ms + st->gen_ms, st->n_prompt + st->n_gen, tern_finish_name(st->finish));
	dev_report_steps(&ss->dev, &common);
}

/* The end of the run: the final newline or the JSON object, the -v
 * summary; returns the exit status. */
static int report(const struct session *ss, struct output *out, const struct tern_gen_stats *st,
		  const struct tern_prompt *pr, int rc,
		  const tern_err *e)
{
	int status = EXIT_OK;
	if (rc) {
		if (!o_json && !out->pipe_closed)
			fputc('\n', stdout);
		fflush(stdout);
		status = cli_fail(model_path, rc, e);
	} else if (out->oom) {
		cli_error("out of memory for the generated text");
		status = EXIT_RUNTIME;
	} else if (!out->pipe_closed && !out->write_errno) {
		if (o_json)
			print_json(ss, out, st, pr);
		else
			fputc('\n', stdout);
		if (fflush(stdout) || ferror(stdout)) {
			if (errno == EPIPE)
				out->pipe_closed = true;
			else
				out->write_errno = errno ? errno : EIO;
		}
	}
	if (out->write_errno) {
		cli_error("standard output: %s", strerror(out->write_errno));
		status = EXIT_RUNTIME;
	}
	/* "length" for want of room rather than -n: said, as the text may end
	 * mid-sentence (JSON's finish_reason is "length" either way) */
	int32_t n_ctx = tern_llm_n_ctx(ss->llm);
	if (!rc && st->finish == TERN_FINISH_LENGTH && st->n_prompt + st->n_gen >= n_ctx &&
	    (llm_o.n_predict < 0 || st->n_gen < llm_o.n_predict))
		warning("the context of %d tokens is full: the text stops there (-c sets a larger one)", n_ctx);
	if (!rc)
		print_timings(ss, st);
	if (status == EXIT_OK && interrupted)
		status = EXIT_INTERRUPTED;
	return status;
}

/* --print-prompt: the text the model would get (the BOS the tokenizer
 * adds written as its text), on stdout exactly, from the metadata and the
 * vocabulary alone. */
static void print_prompt(struct session *ss, const struct cli_buf *prompt)
{
	load_vocab_only(ss);
	struct tern_prompt *pr;
	char *text = render_prompt(ss, prompt, &pr);
	int32_t bos = tok_special_id(ss->v, TOK_BOS);
	struct tok_piece bt = bos >= 0 ? tok_token_text(ss->v, bos) : (struct tok_piece){0};
	bool ok = true;
	if (tok_add_bos(ss->v) && bt.ptr)
		ok = fwrite(bt.ptr, 1, bt.len, stdout) == bt.len;
	size_t n = strlen(text);
	ok = ok && fwrite(text, 1, n, stdout) == n;
	if (fflush(stdout) || !ok) {
		if (errno != EPIPE)
			die(EXIT_RUNTIME, "standard output: %s", strerror(errno ? errno : EIO));
	}
	free(text);
	free(prompt->p);
	tern_prompt_free(pr);
	tok_vocab_free(ss->v);
	tern_mf_close(ss->mf);
}

/* ---- main ------------------------------------------------------------------- */

int main(int argc, char **argv)
{
	const char **pos;
	int npos;
	cli_parse(&prog, argc, argv, &common, &pos, &npos);
	check_options();

	struct cli_buf prompt;
	read_prompt(pos, npos, &prompt);
	free(pos);

	/* A closed pipe is an EPIPE from write, not a signal. Ctrl-C from
	 * here on (not while stdin is read) is noted: the run stops before
	 * its next token, or before the prompt when it comes during the load.
	 * The handler is installed even where the shell ignores SIGINT (a
	 * background job): `kill -INT` is how scripts stop a run. */
	signal(SIGPIPE, SIG_IGN);
	struct sigaction sa = {0};
	sa.sa_handler = on_sigint;
	sa.sa_flags = SA_RESETHAND | SA_RESTART;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);

	if (o_embedding) {
		struct embed_cli ec = {
			.model = model_path, .text = prompt.p, .len = prompt.len, .sep = o_embd_sep ? o_embd_sep : "\n",
			.pooling = o_pooling, .normalize = (int)o_embd_norm,
			.format = o_embd_format ? o_embd_format : o_json ? "json" : "jsonl",
			.ctx = llm_o.ctx, .ubatch = llm_o.ubatch,
			.threads = llm_o.threads ? (int)llm_o.threads : cli_default_threads(),
			.ctk = llm_o.ctk, .ctv = llm_o.ctv, .parse_special = !o_no_parse_special,
			.verbose = common.verbose, .quiet = common.quiet, .common = &common,
		};
		int status = embed_main(&ec);
		free(prompt.p);
		return status;
	}

	struct session ss = {0};
	if (o_print_prompt) {
		print_prompt(&ss, &prompt);
		return EXIT_OK;
	}
	load(&ss);

	struct tern_prompt *pr;
	char *text = render_prompt(&ss, &prompt, &pr);
	int32_t *ids;
	int32_t n_ids = tokenize_prompt(&ss, text, pr != NULL, &ids);
	info("prompt: %d tokens", n_ids);
	/* the vocabulary, the configuration and the template are taken: the
	 * file's metadata need not stay in memory (a later read maps it back) */
	tern_mf_drop_metadata(ss.m->mf);

	struct output out = {.n_top = o_logprobs > 0 ? (int)o_logprobs : 0};
	struct tern_gen_stats st;
	tern_err e = {0};
	int rc = generate(&ss, pr, ids, n_ids, &out, &st, &e);
	int status = report(&ss, &out, &st, pr, rc, &e);

	free(out.text.p);
	free(out.lp);
	free(ids);
	free(text);
	free(prompt.p);
	tern_prompt_free(pr);
	tern_gen_free(ss.g);
	tern_sampler_free(ss.s);
	tern_llm_free(ss.llm);
	dev_close(&ss.dev);
	tok_vocab_free(ss.v);
	tern_model_free(ss.m);
	return status;
}
