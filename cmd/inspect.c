/* inspect.c - tern-inspect: list and validate GGUF and legacy ggml files.
 *
 * Default output is a readable listing (header, metadata, tensors, summary);
 * --json gives the same as one JSON document. Listing reads only the header
 * pages of the mapping, never tensor data, unless --tensor with --values or
 * --raw asks for one tensor's values. Several files are handled one after
 * the other; the exit status is the largest of theirs. The file formats are
 * read through lib/format/modelfile.h and the summary's hyperparameters
 * through lib/format/arch.h, the same code the model loaders use. */
#include <errno.h>
#include <fnmatch.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cmd/common/cli.h"
#include "lib/format/arch.h"
#include "lib/llm/chatfmt.h"
#include "lib/llm/model.h"
#include "lib/format/ggml_legacy.h"
#include "lib/format/gguf.h"
#include "lib/format/modelfile.h"
#include "quant/quant.h"
#include "tokenizer/tok.h"

/* ---- options ---------------------------------------------------------------- */

static bool o_json, o_full, o_no_tensors, o_raw, o_check;
static const char *o_key, *o_tensor;
static int64_t o_values = -1;
static bool o_values_seen;
static const char *o_tok_text, *o_tok_file, *o_detok;
static bool o_add_special, o_parse_special, o_ids;
static struct cli_common common;

/* The modes: listing (text or --json), --tensor, --check and the
 * tokenizer's three. Each mode's option names what it cannot be combined
 * with (the rule holds both ways; --help shows it where it is declared,
 * the man page on both sides). */
#define TOK_MODES "tokenize|tokenize-file|detokenize"
#define LISTING_TEXT "full|no-tensors|key|tensor"
#define LISTING "json|" LISTING_TEXT

static const struct cli_opt opts[] = {
	{.lng = "json", .kind = CLI_FLAG, .dst = &o_json,
	 .help = "print JSON instead of the listing (an array of documents for several files)"},
	{.lng = "full", .kind = CLI_FLAG, .dst = &o_full, .excludes = "tensor",
	 .help = "print every array element (text: no '... N more'; JSON: array values)"},
	{.lng = "no-tensors", .kind = CLI_FLAG, .dst = &o_no_tensors, .excludes = "tensor|key",
	 .help = "leave out the tensor list"},
	{.lng = "key", .kind = CLI_STR, .dst = &o_key, .arg = "GLOB", .excludes = "tensor",
	 .help = "print only metadata keys matching GLOB (e.g. 'llama.*')"},
	{.lng = "tensor", .kind = CLI_STR, .dst = &o_tensor, .arg = "NAME",
	 .help = "print one tensor's details"},
	{.lng = "values", .kind = CLI_INT, .dst = &o_values, .seen = &o_values_seen, .arg = "N", .min = 0, .max = INT64_MAX,
	 .needs = "tensor", .help = "also print the tensor's first N values, decoded to float"},
	{.lng = "raw", .kind = CLI_FLAG, .dst = &o_raw, .needs = "tensor", .excludes = "json|values",
	 .help = "write all the tensor's values as little-endian float32 to stdout (one FILE)"},
	{.lng = "check", .kind = CLI_FLAG, .dst = &o_check, .excludes = LISTING "|" TOK_MODES,
	 .help = "validate placement, alignment, sizes and names; report every problem on stdout; exit 65 if any"},
	{.lng = "tokenize", .kind = CLI_STR, .dst = &o_tok_text, .arg = "TEXT", .excludes = LISTING_TEXT "|tokenize-file|detokenize",
	 .help = "print the tokens of TEXT with the file's vocabulary, one 'id<TAB>piece' line each"},
	{.lng = "tokenize-file", .kind = CLI_FILE, .dst = &o_tok_file, .arg = "PATH", .excludes = LISTING_TEXT "|detokenize",
	 .help = "like --tokenize with the contents of PATH ('-': standard input)"},
	{.lng = "add-special", .kind = CLI_FLAG, .dst = &o_add_special, .needs = "tokenize|tokenize-file",
	 .help = "add BOS/EOS (or CLS/SEP) as the vocabulary's metadata says"},
	{.lng = "parse-special", .kind = CLI_FLAG, .dst = &o_parse_special, .needs = "tokenize|tokenize-file",
	 .help = "control tokens written in the text (e.g. <|im_end|>) become their ids"},
	{.lng = "ids", .kind = CLI_FLAG, .dst = &o_ids, .needs = "tokenize|tokenize-file",
	 .help = "print one line with a JSON array of ids"},
	{.lng = "detokenize", .kind = CLI_STR, .dst = &o_detok, .arg = "IDS", .excludes = LISTING,
	 .help = "print the text of IDS (separated by spaces or commas; control pieces included)"},
	{0},
};

static const struct cli_section sections[] = {
	{"OUTPUT",
	 "The listing has four parts: the header (format, version, alignment, counts, data section); one line per "
	 "metadata key with its type, count and value (strings escaped, arrays cut after a few elements unless --full); "
	 "one line per tensor with name, type, shape (ggml order: row length first), bytes and offset; and a summary "
	 "with the architecture, parameter count, bits per weight, tensor types and the hyperparameters a model "
	 "loader reads (the same code reads them for both). Columns are sized from the data; on a terminal, keys and "
	 "names longer than a column are shortened in the middle ('...') and long strings (chat templates) are cut at "
	 "the end of the line unless --full; piped output is never shortened. With -v "
	 "each tensor line also gives its file offset and the alignment of that offset, and the time taken to open "
	 "and validate the file goes to stderr.\n"
	 "\n"
	 "Offsets: a tensor's offset counts from the start of the data section, whose file offset the header gives "
	 "(data: offset N), for both formats. The data section of a GGUF file follows the tensor infos, aligned; that "
	 "of a legacy ggml file starts at its first tensor record (legacy files interleave tensor headers with data). "
	 "A file without tensors has no data section (data: none; in JSON data_offset is null).\n"
	 "\n"
	 "With --json the same information is one JSON document with the members file, format, version, alignment, "
	 "data_offset, file_size, metadata (an object keyed by key name, each {\"type\", \"value\"}; arrays give "
	 "elem_type and count, and their values only with --full), tensors (an array of {name, type, shape, offset, "
	 "file_offset, bytes}) and summary. These members are always present: with --key, metadata holds the "
	 "matching keys and tensors is empty; with --no-tensors, tensors is empty. Strings are always valid UTF-8: "
	 "each ill-formed byte sequence becomes U+FFFD. Legacy ggml files (whisper.cpp's Whisper and Silero models) "
	 "use the same shape, with their hyperparameters under metadata.\n"
	 "\n"
	 "Several FILEs: the text of each file is headed by a line '==> FILE <==' (as head(1) does), except with "
	 "--check, whose lines start with the file name; with --json the output is one JSON array holding one "
	 "document per file, in order, and a file that cannot be read is {\"file\": FILE, \"error\": MESSAGE} there "
	 "(and a line on stderr)."},
	{"CHECK",
	 "--check validates every file and writes its report on standard output: 'FILE: ok (...)' for a file without "
	 "problems, otherwise one 'FILE: problem' line per problem (tensors that overlap or lie outside the data, "
	 "misaligned offsets, duplicate names, ...) and 'FILE: N problems found'. A file too damaged to be "
	 "read at all gives one error line on stderr instead. The exit status is 65 if any file has a problem."},
	{"TOKENIZER",
	 "--tokenize, --tokenize-file and --detokenize use the vocabulary in the file's tokenizer.ggml.* metadata "
	 "(SPM, byte-level BPE with the pre-tokenizer named by tokenizer.ggml.pre, or WordPiece), or the vocabulary "
	 "of a legacy Whisper file. --tokenize prints one line per token: the id, a tab, and the text the token "
	 "stands for (control bytes and invalid UTF-8 escaped C-style); with --ids one line holding a JSON array "
	 "of the ids instead; with --json one JSON document {\"ids\": [...], \"pieces\": [...], "
	 "\"dropped_bytes\": N} (pieces as JSON strings, invalid UTF-8 as U+FFFD). No BOS/EOS is added and "
	 "control tokens in the text are not recognised unless --add-special / --parse-special say so. Bytes the "
	 "vocabulary cannot encode (no piece, no byte fallback, no unknown token) are dropped with a warning on "
	 "stderr giving their count; the exit status stays 0. --detokenize prints the text of the ids exactly, "
	 "without a newline (on a terminal one ends the line). An unknown pre-tokenizer gives a warning on stderr naming the fallback used."},
	{"STANDARD INPUT",
	 "FILE - reads the model from standard input, up to 4 GiB (a pipe cannot be mapped, so it is read into "
	 "memory). When standard input is a terminal, tern-inspect refuses (exit 2) instead of waiting for a "
	 "model to be typed."},
	{"EXIT STATUS",
	 "0 success; 1 runtime error (cannot open or map the file, out of memory, no such tensor or key); "
	 "2 usage error; 65 malformed input (the file is not a valid GGUF or ggml file, or --check found problems). "
	 "With several files, the largest status of any file.\n"
	 "\n"
	 "Errors are one line on stderr: tern-inspect: PATH: what is wrong (with the offset, key or tensor). With "
	 "colour (see --color) the program name is red in errors and yellow in warnings, 'ok' is green and types "
	 "in the listing are dim."},
	{"EXAMPLES",
	 "  tern-inspect model.gguf\n"
	 "  tern-inspect --json --no-tensors model.gguf | jq .summary\n"
	 "  tern-inspect --key 'llama.*' model.gguf\n"
	 "  tern-inspect --tensor token_embd.weight --values 8 model.gguf\n"
	 "  tern-inspect --tensor output_norm.weight --raw model.gguf > norm.f32\n"
	 "  tern-inspect --check *.gguf *.bin\n"
	 "  tern-inspect --tokenize 'Hello world' model.gguf\n"
	 "  tern-inspect --tokenize-file prompt.txt --add-special --ids model.gguf\n"
	 "  tern-inspect --detokenize '9906 1917' model.gguf\n"
	 "  curl -sL URL | tern-inspect --no-tensors -"},
	{0},
};

static const struct cli_prog prog = {
	.name = "inspect",
	.summary = "show and validate the metadata and tensors of GGUF and legacy ggml model files",
	.usage = "[OPTIONS] FILE...",
	.description =
		"tern-inspect reads GGUF files (version 2 or 3) and legacy ggml files (whisper.cpp's Whisper and "
		"Silero VAD models) and prints their header, metadata, tensors and a summary. Each file is mapped "
		"read-only and validated: every length, count and offset is checked against the file size, so a "
		"truncated or hostile file gives a one-line error, never a crash.\n"
		"\n"
		"Listing a model reads only its header; tensor data is read only for --values and --raw. "
		"FILE - reads a file from standard input.",
	.opts = opts,
	.pos_name = "FILE",
	.pos_ext = "gguf|bin",
	.min_pos = 1,
	.max_pos = -1,
	.sections = sections,
};

/* ---- a source: one open file --------------------------------------------- */

struct src {
	const char *path;
	tern_mf *mf;
	const gguf_file *gf;    /* the readers underneath (one is NULL), for the tokenizer */
	const ggml_legacy *lg;
	uint8_t *mem;           /* [mem_size] the file read from stdin, or NULL */
	size_t mem_size;
};

static const char *json_vtype(uint32_t t)
{
	static const char *const n[GGUF_T_COUNT] = {"uint8", "int8", "uint16", "int16", "uint32", "int32",
		"float32", "bool", "string", "array", "uint64", "int64", "float64"};
	return t < GGUF_T_COUNT ? n[t] : "?";
}

/* Element i of a string array: top-level entries in O(1), else walked. */
static struct tern_str arr_str(const tern_mf *m, const struct tern_mf_kv *top, const struct gguf_value *v, uint64_t i)
{
	if (top)
		return tern_mf_arr_str(m, top, i);
	struct gguf_value e;
	if (gguf_arr_elem(v, i, &e) == 0)
		return e.s;
	return (struct tern_str){0};
}

/* ---- value printing ---------------------------------------------------------- */

static void text_scalar(FILE *f, const struct gguf_value *v)
{
	switch (v->type) {
	case GGUF_T_STRING:
		fputc('"', f);
		cli_text_str(f, v->s.ptr, v->s.len);
		fputc('"', f);
		break;
	case GGUF_T_BOOL:
		fputs(v->p[0] ? "true" : "false", f);
		break;
	case GGUF_T_F32: {
		char b[32];
		cli_fmt_f32(b, sizeof b, (float)gguf_value_f64(v));
		fputs(b, f);
		break;
	}
	case GGUF_T_F64:
		fprintf(f, "%.17g", gguf_value_f64(v));
		break;
	case GGUF_T_U64:
		fprintf(f, "%" PRIu64, gguf_value_u64(v));
		break;
	default:
		fprintf(f, "%" PRId64, gguf_value_i64(v));
	}
}

static void json_value(const tern_mf *m, const struct gguf_value *v, const struct tern_mf_kv *top);

static void json_scalar(const struct gguf_value *v)
{
	switch (v->type) {
	case GGUF_T_STRING: cli_json_str(stdout, v->s.ptr, v->s.len); break;
	case GGUF_T_BOOL: fputs(v->p[0] ? "true" : "false", stdout); break;
	case GGUF_T_F32: cli_json_f32(stdout, (float)gguf_value_f64(v)); break;
	case GGUF_T_F64: cli_json_num(stdout, gguf_value_f64(v)); break;
	case GGUF_T_U64: printf("%" PRIu64, gguf_value_u64(v)); break;
	default: printf("%" PRId64, gguf_value_i64(v));
	}
}

/* An array's elements as JSON; top (the entry holding it) gives O(1) strings. */
static void json_array(const tern_mf *m, const struct gguf_value *v, const struct tern_mf_kv *top)
{
	putchar('[');
	if (v->elem == GGUF_T_STRING && top) {
		for (uint64_t i = 0; i < v->n; i++) {
			struct tern_str s = arr_str(m, top, v, i);
			if (i)
				fputs(", ", stdout);
			cli_json_str(stdout, s.ptr, s.len);
		}
	} else if (gguf_vtype_size(v->elem)) {
		for (uint64_t i = 0; i < v->n; i++) {
			struct gguf_value e;
			gguf_arr_elem(v, i, &e);
			if (i)
				fputs(", ", stdout);
			json_scalar(&e);
		}
	} else {
		/* strings or arrays nested in arrays: walk sequentially */
		struct gguf_value e;
		uint64_t i = 0, pos = 0;
		while (gguf_arr_next(v, &i, &pos, &e) == 0) {
			if (i > 1)
				fputs(", ", stdout);
			json_value(m, &e, NULL);
		}
	}
	putchar(']');
}

static void json_value(const tern_mf *m, const struct gguf_value *v, const struct tern_mf_kv *top)
{
	if (v->type == GGUF_T_ARRAY)
		json_array(m, v, top);
	else
		json_scalar(v);
}

#define TEXT_ARRAY_PREVIEW 8

/* The first lim elements of an array, then "... N more"; nested arrays
 * show the usual preview (all of them with --full). */
static void text_array(FILE *f, const tern_mf *m, const struct gguf_value *v, const struct tern_mf_kv *top,
		       uint64_t lim)
{
	fputc('[', f);
	struct gguf_value e;
	uint64_t i = 0, pos = 0;
	while (i < lim) {
		if (i)
			fputs(", ", f);
		if (v->elem == GGUF_T_STRING && top) { /* legacy vocabularies have no GGUF encoding */
			e = (struct gguf_value){.type = GGUF_T_STRING, .s = arr_str(m, top, v, i++)};
			text_scalar(f, &e);
			continue;
		}
		gguf_arr_next(v, &i, &pos, &e);
		if (e.type == GGUF_T_ARRAY)
			text_array(f, m, &e, NULL, o_full || e.n < TEXT_ARRAY_PREVIEW ? e.n : TEXT_ARRAY_PREVIEW);
		else
			text_scalar(f, &e);
	}
	if (lim < v->n)
		fprintf(f, "%s... %" PRIu64 " more", lim ? ", " : "", v->n - lim);
	fputc(']', f);
}

/* Columns a UTF-8 text takes (one per character: escapes are ASCII). */
static int text_columns(const char *p, size_t n)
{
	int w = 0;
	for (size_t i = 0; i < n; i++)
		w += ((unsigned char)p[i] & 0xc0) != 0x80;
	return w;
}

/* An array's preview on a terminal: as many of the first elements as fit
 * in `room` columns, then "... N more". */
static void text_array_fit(const tern_mf *m, const struct gguf_value *v, const struct tern_mf_kv *top, int room)
{
	uint64_t lim = v->n < TEXT_ARRAY_PREVIEW ? v->n : TEXT_ARRAY_PREVIEW;
	for (;;) {
		char *buf = NULL;
		size_t len = 0;
		FILE *f = open_memstream(&buf, &len);
		if (!f) {
			text_array(stdout, m, v, top, lim);
			return;
		}
		text_array(f, m, v, top, lim);
		fclose(f);
		if (lim == 0 || text_columns(buf, len) <= room) {
			fwrite(buf, 1, len, stdout);
			free(buf);
			return;
		}
		free(buf);
		lim--;
	}
}

/* A list of per-layer integers, cut like arrays unless full. */
static void text_u32s(const uint32_t *a, uint32_t n, bool full)
{
	uint32_t lim = full || n <= TEXT_ARRAY_PREVIEW ? n : TEXT_ARRAY_PREVIEW;
	putchar('[');
	for (uint32_t i = 0; i < lim; i++)
		printf("%s%u", i ? ", " : "", a[i]);
	if (lim < n)
		printf(", ... %u more", n - lim);
	putchar(']');
}

static void human_bytes(uint64_t b, char *buf, size_t cap)
{
	const char *u[] = {"B", "KiB", "MiB", "GiB", "TiB"};
	double v = (double)b;
	int i = 0;
	while (v >= 1024 && i < 4)
		v /= 1024, i++;
	if (i == 0)
		snprintf(buf, cap, "%" PRIu64 " B", b);
	else
		snprintf(buf, cap, "%.2f %s", v, u[i]);
}

static void human_count(uint64_t n, char *buf, size_t cap)
{
	if (n >= 1000000000ull)
		snprintf(buf, cap, "%.2f B", n / 1e9);
	else if (n >= 1000000ull)
		snprintf(buf, cap, "%.2f M", n / 1e6);
	else if (n >= 1000ull)
		snprintf(buf, cap, "%.2f K", n / 1e3);
	else
		snprintf(buf, cap, "%" PRIu64, n);
}

/* ---- errors of one file ------------------------------------------------------ */

/* With several files and --json, a file that fails still gets its element
 * of the array: {"file", "error"}, holding the message that went to stderr. */
static char last_error[TERN_ERR_MSG_MAX + 64];
static bool doc_printed; /* the current file's JSON document (or part) is out */

static int file_error(const char *path, int status, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int file_error(const char *path, int status, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(last_error, sizeof last_error, fmt, ap);
	va_end(ap);
	cli_error("%s: %s", path, last_error);
	return status;
}

static int file_fail(const char *path, int code, const tern_err *e)
{
	snprintf(last_error, sizeof last_error, "%s", e && e->msg[0] ? e->msg : tern_strerror(code));
	return cli_fail(path, code, e);
}

/* ---- summary ------------------------------------------------------------------- */

struct summary {
	uint64_t params, tensor_bytes;
	uint64_t type_count[QT_COUNT];
	enum tern_arch_family fam;
	char arch[TERN_ARCH_NAME_MAX];
	/* the hyperparameters, read by lib/format/arch.c as a loader reads them */
	int rc;
	tern_err err;
	struct tern_arch_llm *llm; /* large (per-layer arrays): on the heap */
	struct tern_arch_whisper whisper;
	struct tern_arch_silero silero;
	const struct tern_arch_field *f; /* the family's field table [nf] */
	size_t nf;
	const void *hp;                  /* the family's struct */
	uint64_t present, per_layer;
	uint32_t n_layer;
	/* language models: whether lib/llm can build this model, and if not why */
	int run_rc;
	tern_err run_err;
};

static void summarise(const struct src *s, struct summary *sm)
{
	memset(sm, 0, sizeof *sm);
	for (uint64_t i = 0; i < tern_mf_n_tensors(s->mf); i++) {
		const struct tern_tensor_view *t = tern_mf_tensor_at(s->mf, i);
		sm->params += tern_tensor_nelements(t);
		sm->tensor_bytes += t->nbytes;
		if (t->type < QT_COUNT)
			sm->type_count[t->type]++;
	}
	sm->fam = tern_arch_family(s->mf, sm->arch, sizeof sm->arch);
	switch (sm->fam) {
	case TERN_ARCH_LLM:
		if (!(sm->llm = malloc(sizeof *sm->llm))) {
			sm->rc = tern_errf(&sm->err, TERN_ENOMEM, "out of memory");
			break;
		}
		sm->rc = tern_arch_llm_read(s->mf, sm->llm, &sm->err);
		sm->f = tern_arch_llm_fields(&sm->nf);
		sm->hp = sm->llm;
		sm->present = sm->llm->present;
		sm->per_layer = sm->llm->per_layer;
		sm->n_layer = sm->llm->n_layer;
		{
			struct tern_model *model = NULL;
			sm->run_rc = tern_model_load(&model, s->mf, &sm->run_err);
			tern_model_free(model);
		}
		break;
	case TERN_ARCH_WHISPER:
		sm->rc = tern_arch_whisper_read(s->mf, &sm->whisper, &sm->err);
		sm->f = tern_arch_whisper_fields(&sm->nf);
		sm->hp = &sm->whisper;
		sm->present = sm->whisper.present;
		break;
	case TERN_ARCH_SILERO:
		sm->rc = tern_arch_silero_read(s->mf, &sm->silero, &sm->err);
		sm->f = tern_arch_silero_fields(&sm->nf);
		sm->hp = &sm->silero;
		sm->present = sm->silero.present;
		break;
	case TERN_ARCH_NONE:
		break;
	}
	if (sm->rc)
		sm->present = sm->per_layer = 0;
}

/* The vocabulary size: the model's (a loader's n_vocab); for files that
 * name no architecture, the length of the token list. */
static bool vocab_size(const struct src *s, const struct summary *sm, uint64_t *n)
{
	if (sm->fam == TERN_ARCH_LLM && !sm->rc && sm->llm->n_vocab) {
		*n = sm->llm->n_vocab;
		return true;
	}
	if (sm->fam == TERN_ARCH_WHISPER && !sm->rc && sm->whisper.n_vocab) {
		*n = sm->whisper.n_vocab;
		return true;
	}
	const struct tern_mf_kv *e = tern_mf_find(s->mf, "tokenizer.ggml.tokens");
	if (!e)
		e = tern_mf_find(s->mf, "tokenizer.tokens");
	if (e && e->v.type == GGUF_T_ARRAY) {
		*n = e->v.n;
		return true;
	}
	return false;
}

/* Whether field i is shown: present in the file; vocab_size is shown apart
 * (it also comes from the token list). */
static bool field_shown(const struct summary *sm, size_t i)
{
	return (sm->present >> i & 1) && strcmp(sm->f[i].json, "vocab_size") != 0;
}

static void field_text(const struct summary *sm, size_t i)
{
	const struct tern_arch_field *f = &sm->f[i];
	const char *p = (const char *)sm->hp + f->offset;
	char b[32];
	switch (f->type) {
	case TERN_ARCH_F32:
		cli_fmt_f32(b, sizeof b, *(const float *)p);
		fputs(b, stdout);
		break;
	case TERN_ARCH_STR:
		cli_text_str(stdout, p, strlen(p));
		break;
	case TERN_ARCH_U32_LAYERS:
		if (sm->per_layer >> i & 1) {
			text_u32s((const uint32_t *)((const char *)sm->hp + f->layers_offset), sm->n_layer, o_full);
			break;
		}
		/* fall through */
	case TERN_ARCH_U32:
		printf("%u", *(const uint32_t *)p);
		break;
	}
}

static void field_json(const struct summary *sm, size_t i)
{
	const struct tern_arch_field *f = &sm->f[i];
	const char *p = (const char *)sm->hp + f->offset;
	switch (f->type) {
	case TERN_ARCH_F32:
		cli_json_f32(stdout, *(const float *)p);
		break;
	case TERN_ARCH_STR:
		cli_json_str(stdout, p, strlen(p));
		break;
	case TERN_ARCH_U32_LAYERS:
		if (sm->per_layer >> i & 1) {
			const uint32_t *a = (const uint32_t *)((const char *)sm->hp + f->layers_offset);
			putchar('[');
			for (uint32_t l = 0; l < sm->n_layer; l++)
				printf("%s%u", l ? ", " : "", a[l]);
			putchar(']');
			break;
		}
		/* fall through */
	case TERN_ARCH_U32:
		printf("%u", *(const uint32_t *)p);
		break;
	}
}

#define LABEL_W 19

static void label(const char *l)
{
	int pad = LABEL_W - (int)strlen(l);
	printf("  %s:%*s", l, pad > 0 ? pad : 1, "");
}

static void print_summary_text(const struct src *s)
{
	struct summary sm;
	summarise(s, &sm);
	char b1[32], b2[32];
	printf("\nsummary:\n");
	label("architecture");
	if (sm.arch[0])
		cli_text_str(stdout, sm.arch, strlen(sm.arch));
	else
		fputs("(unknown)", stdout);
	human_count(sm.params, b1, sizeof b1);
	putchar('\n');
	label("parameters");
	printf("%s (%" PRIu64 ")\n", b1, sm.params);
	human_bytes(tern_mf_file_size(s->mf), b2, sizeof b2);
	label("file size");
	printf("%s (%" PRIu64 " bytes)\n", b2, tern_mf_file_size(s->mf));
	if (sm.params) {
		label("bits per weight");
		printf("%.2f\n", (double)sm.tensor_bytes * 8.0 / (double)sm.params);
	}
	label("tensor types");
	bool any = false;
	for (int t = 0; t < QT_COUNT; t++)
		if (sm.type_count[t]) {
			printf("%s%s %" PRIu64, any ? ", " : "", quant_type_name((uint32_t)t), sm.type_count[t]);
			any = true;
		}
	printf("%s\n", any ? "" : "(none)");
	if (sm.rc && sm.rc != TERN_ENOTFOUND) {
		label("hyperparameters");
		printf("unreadable: %s\n", sm.err.msg);
	}
	for (size_t i = 0; i < sm.nf; i++) {
		if (!field_shown(&sm, i))
			continue;
		label(sm.f[i].label);
		field_text(&sm, i);
		putchar('\n');
	}
	uint64_t nv;
	if (vocab_size(s, &sm, &nv)) {
		label("vocab size");
		printf("%" PRIu64, nv);
		if (sm.fam == TERN_ARCH_WHISPER && !sm.rc)
			printf(" (%u stored in the file, %u special tokens)", sm.whisper.n_vocab_stored,
			       sm.whisper.n_vocab - sm.whisper.n_vocab_stored);
		putchar('\n');
	}
	if (sm.fam == TERN_ARCH_WHISPER && !sm.rc) {
		label("languages");
		if (sm.whisper.multilingual)
			printf("%u\n", sm.whisper.n_languages);
		else
			printf("English only\n");
	}
	if (sm.fam == TERN_ARCH_LLM) {
		label("tern loads it");
		printf("%s%s\n", sm.run_rc ? "no: " : "yes", sm.run_rc ? sm.run_err.msg : "");
	}
	const struct tern_mf_kv *ct = tern_mf_find(s->mf, "tokenizer.chat_template");
	if (s->gf || ct) {
		label("chat template");
		if (ct && ct->v.type == GGUF_T_STRING)
			printf("yes (%" PRIu64 " bytes)\n", ct->v.s.len);
		else
			printf("no\n");
	}
	/* the named ones (tokenizer.chat_template.NAME), which
	 * --chat-template-name picks */
	uint64_t it = 0;
	size_t shown = 0;
	for (struct tern_str name; (name = tern_chat_template_next_name(s->mf, &it)).ptr; shown++) {
		if (shown == 0)
			label("named templates");
		char key[300];
		snprintf(key, sizeof key, "%.*s", (int)(name.len > 200 ? 200 : name.len), name.ptr);
		fputs(shown ? ", " : "", stdout);
		cli_text_str(stdout, name.ptr, name.len);
		printf(" (%" PRIu64 " bytes)", tern_chat_template_of(s->mf, key).len);
	}
	if (shown)
		putchar('\n');
	free(sm.llm);
}

static void print_summary_json(const struct src *s)
{
	struct summary sm;
	summarise(s, &sm);
	printf("\"summary\": {\"architecture\": ");
	if (sm.arch[0])
		cli_json_str(stdout, sm.arch, strlen(sm.arch));
	else
		fputs("null", stdout);
	printf(", \"parameters\": %" PRIu64 ", \"file_size\": %" PRIu64 ", \"tensor_bytes\": %" PRIu64, sm.params,
	       tern_mf_file_size(s->mf), sm.tensor_bytes);
	printf(", \"bits_per_weight\": ");
	if (sm.params)
		printf("%.4f", (double)sm.tensor_bytes * 8.0 / (double)sm.params);
	else
		fputs("null", stdout);
	printf(", \"tensor_types\": {");
	bool any = false;
	for (int t = 0; t < QT_COUNT; t++)
		if (sm.type_count[t]) {
			printf("%s\"%s\": %" PRIu64, any ? ", " : "", quant_type_name((uint32_t)t), sm.type_count[t]);
			any = true;
		}
	putchar('}');
	if (sm.rc && sm.rc != TERN_ENOTFOUND) {
		printf(", \"hyperparameters_error\": ");
		cli_json_str(stdout, sm.err.msg, strlen(sm.err.msg));
	}
	for (size_t i = 0; i < sm.nf; i++) {
		if (!field_shown(&sm, i))
			continue;
		printf(", \"%s\": ", sm.f[i].json);
		field_json(&sm, i);
	}
	uint64_t nv;
	if (vocab_size(s, &sm, &nv))
		printf(", \"vocab_size\": %" PRIu64, nv);
	if (sm.fam == TERN_ARCH_WHISPER && !sm.rc)
		printf(", \"vocab_stored\": %u, \"multilingual\": %s, \"languages\": %u", sm.whisper.n_vocab_stored,
		       sm.whisper.multilingual ? "true" : "false", sm.whisper.n_languages);
	if (sm.fam == TERN_ARCH_LLM) {
		printf(", \"loadable\": %s", sm.run_rc ? "false" : "true");
		if (sm.run_rc) {
			printf(", \"loadable_error\": ");
			cli_json_str(stdout, sm.run_err.msg, strlen(sm.run_err.msg));
		}
	}
	const struct tern_mf_kv *ct = tern_mf_find(s->mf, "tokenizer.chat_template");
	printf(", \"chat_template\": %s, \"chat_template_names\": [", ct && ct->v.type == GGUF_T_STRING ? "true" : "false");
	uint64_t it = 0;
	size_t shown = 0;
	for (struct tern_str n; (n = tern_chat_template_next_name(s->mf, &it)).ptr; shown++) {
		fputs(shown ? ", " : "", stdout);
		cli_json_str(stdout, n.ptr, n.len);
	}
	fputs("]}", stdout);
	free(sm.llm);
}

/* ---- listing ------------------------------------------------------------------- */

static bool key_selected(const struct tern_mf_kv *e)
{
	if (!o_key)
		return true;
	char k[512];
	if (e->key.len >= sizeof k || memchr(e->key.ptr, 0, e->key.len))
		return false;
	memcpy(k, e->key.ptr, e->key.len);
	k[e->key.len] = 0;
	return fnmatch(o_key, k, 0) == 0;
}

static void shape_text(const struct tern_tensor_view *t, char *buf, size_t cap)
{
	size_t n = (size_t)snprintf(buf, cap, "[");
	for (uint32_t d = 0; d < t->n_dims && n < cap; d++)
		n += (size_t)snprintf(buf + n, cap - n, "%s%" PRIu64, d ? ", " : "", t->ne[d]);
	if (n < cap)
		snprintf(buf + n, cap - n, "]");
}

/* Column layout of a listing, sized from the data. On a terminal, names
 * longer than `cap` are shortened in the middle; piped output keeps them
 * whole (a long name then pushes its own line's columns right). */
struct layout {
	bool shorten;
	int cap;             /* widest name column */
	int key, type;       /* metadata: key and type columns */
	int name, ttype, shape, bytes; /* tensors */
};

static int imin(int a, int b) { return a < b ? a : b; }
static int imax(int a, int b) { return a > b ? a : b; }

static void type_text(const struct tern_mf_kv *e, char *ty, size_t cap)
{
	if (e->v.type == GGUF_T_ARRAY)
		snprintf(ty, cap, "arr[%s,%" PRIu64 "]", gguf_vtype_name(e->v.elem), e->v.n);
	else
		snprintf(ty, cap, "%s", gguf_vtype_name(e->v.type));
}

static void plan_layout(const struct src *s, struct layout *L)
{
	memset(L, 0, sizeof *L);
	L->shorten = cli_isatty(stdout);
	L->cap = L->shorten ? imax(24, imin(64, cli_width(stdout) * 2 / 5)) : 48;
	for (uint64_t i = 0; i < tern_mf_n_kv(s->mf); i++) {
		const struct tern_mf_kv *e = tern_mf_kv_at(s->mf, i);
		char ty[48];
		if (!key_selected(e))
			continue;
		type_text(e, ty, sizeof ty);
		L->key = imax(L->key, (int)imin((int)e->key.len, L->cap));
		L->type = imax(L->type, (int)strlen(ty));
	}
	for (uint64_t i = 0; i < tern_mf_n_tensors(s->mf); i++) {
		const struct tern_tensor_view *t = tern_mf_tensor_at(s->mf, i);
		char shape[128], bytes[32];
		shape_text(t, shape, sizeof shape);
		human_bytes(t->nbytes, bytes, sizeof bytes);
		L->name = imax(L->name, (int)imin((int)t->name.len, L->cap));
		L->ttype = imax(L->ttype, (int)strlen(quant_type_name(t->type)));
		L->shape = imax(L->shape, (int)strlen(shape));
		L->bytes = imax(L->bytes, (int)strlen(bytes));
	}
}

/* Print a name in a column of width w: shortened on a terminal, padded. */
static void name_col(const struct layout *L, struct tern_str n, int w)
{
	if (L->shorten && n.len > (uint64_t)w && w > 5) {
		/* head ... tail, never splitting a UTF-8 sequence */
		size_t head = (size_t)(w - 3) / 2, tail = n.len - (size_t)(w - 3 - (int)head);
		while (head > 0 && ((unsigned char)n.ptr[head] & 0xc0) == 0x80)
			head--;
		while (tail < n.len && ((unsigned char)n.ptr[tail] & 0xc0) == 0x80)
			tail++;
		cli_text_str(stdout, n.ptr, head);
		fputs("...", stdout);
		cli_text_str(stdout, n.ptr + tail, n.len - tail);
		printf("%*s", w - (int)(head + 3 + n.len - tail), "");
		return;
	}
	cli_text_str(stdout, n.ptr, n.len);
	printf("%*s", n.len < (uint64_t)w ? w - (int)n.len : 0, "");
}

/* The alignment of a file offset: the largest power of two dividing it
 * (up to 4096). */
static uint64_t alignment_of(uint64_t off)
{
	uint64_t a = 1;
	while (a < 4096 && off % (a * 2) == 0)
		a *= 2;
	return a;
}

static void print_tensor_line(const struct src *s, const struct layout *L, const struct tern_tensor_view *t)
{
	char shape[128], bytes[32];
	shape_text(t, shape, sizeof shape);
	human_bytes(t->nbytes, bytes, sizeof bytes);
	fputs("  ", stdout);
	name_col(L, t->name, L->name);
	printf(" %s%-*s%s %-*s %*s @ %" PRIu64, cli_sgr(stdout, CLI_DIM), L->ttype, quant_type_name(t->type),
	       cli_sgr(stdout, CLI_RESET), L->shape, shape, L->bytes, bytes, t->offset);
	if (common.verbose) {
		uint64_t fo = tern_mf_data_offset(s->mf) + t->offset;
		printf("  (file %" PRIu64 ", aligned to %" PRIu64 ")", fo, alignment_of(fo));
	}
	putchar('\n');
}

/* general.file_type's name as llama-quantize spells it (llama.h's
 * llama_ftype; 1024 is its "guessed" flag), or NULL for a number it does
 * not know */
static const char *ftype_name(int64_t ft)
{
	static const char *const names[] = {
		[0] = "F32",	  [1] = "F16",	      [2] = "Q4_0",	[3] = "Q4_1",	   [7] = "Q8_0",      [8] = "Q5_0",
		[9] = "Q5_1",	  [10] = "Q2_K",      [11] = "Q3_K_S",	[12] = "Q3_K_M",   [13] = "Q3_K_L",   [14] = "Q4_K_S",
		[15] = "Q4_K_M",  [16] = "Q5_K_S",    [17] = "Q5_K_M",	[18] = "Q6_K",	   [19] = "IQ2_XXS",  [20] = "IQ2_XS",
		[21] = "Q2_K_S",  [22] = "IQ3_XS",    [23] = "IQ3_XXS", [24] = "IQ1_S",	   [25] = "IQ4_NL",   [26] = "IQ3_S",
		[27] = "IQ3_M",	  [28] = "IQ2_S",     [29] = "IQ2_M",	[30] = "IQ4_XS",   [31] = "IQ1_M",    [32] = "BF16",
		[36] = "TQ1_0",	  [37] = "TQ2_0",     [38] = "MXFP4_MOE", [39] = "NVFP4", [40] = "Q1_0",
	};
	if (ft >= 1024 && ft < 2048)
		ft -= 1024;
	return ft >= 0 && ft < (int64_t)(sizeof names / sizeof *names) ? names[ft] : NULL;
}

static void print_ent_text(const struct src *s, const struct layout *L, const struct tern_mf_kv *e)
{
	char ty[48];
	type_text(e, ty, sizeof ty);
	fputs("  ", stdout);
	name_col(L, e->key, L->key);
	printf(" %s%-*s%s = ", cli_sgr(stdout, CLI_DIM), L->type, ty, cli_sgr(stdout, CLI_RESET));
	/* On a terminal a long string (a chat template) is cut to the line
	 * unless --full; piped output keeps it whole. */
	int room = cli_width(stdout) - (2 + L->key + 1 + L->type + 3) - 1;
	uint64_t len = e->v.s.len;
	if (e->v.type == GGUF_T_STRING && L->shorten && !o_full && len > (uint64_t)imax(room, 24)) {
		char more[48];
		int n = snprintf(more, sizeof more, "...\" (%" PRIu64 " bytes)", len);
		size_t keep = (size_t)imax(room - n, 8);
		while (keep > 0 && ((unsigned char)e->v.s.ptr[keep] & 0xc0) == 0x80)
			keep--;
		putchar('"');
		cli_text_str(stdout, e->v.s.ptr, keep);
		fputs(more, stdout);
	} else if (e->v.type == GGUF_T_ARRAY && L->shorten && !o_full) {
		text_array_fit(s->mf, &e->v, e, room);
	} else if (e->v.type == GGUF_T_ARRAY) {
		text_array(stdout, s->mf, &e->v, e,
			   o_full || e->v.n < TEXT_ARRAY_PREVIEW ? e->v.n : TEXT_ARRAY_PREVIEW);
	} else {
		text_scalar(stdout, &e->v);
		const char *ft = NULL;
		if (e->v.type != GGUF_T_STRING && e->v.type != GGUF_T_F32 && e->v.type != GGUF_T_F64 &&
		    e->v.type != GGUF_T_BOOL && tern_str_eq(e->key, "general.file_type") && (ft = ftype_name(gguf_value_i64(&e->v))))
			printf(" %s(%s)%s", cli_sgr(stdout, CLI_DIM), ft, cli_sgr(stdout, CLI_RESET));
	}
	putchar('\n');
}

static int list_text(const struct src *s)
{
	struct layout L;
	plan_layout(s, &L);
	const tern_mf *m = s->mf;
	if (o_key) {
		int n = 0;
		for (uint64_t i = 0; i < tern_mf_n_kv(m); i++)
			if (key_selected(tern_mf_kv_at(m, i)))
				print_ent_text(s, &L, tern_mf_kv_at(m, i)), n++;
		if (!n)
			return file_error(s->path, EXIT_RUNTIME, "no key matches '%s'", o_key);
		return EXIT_OK;
	}
	uint64_t n_t = tern_mf_n_tensors(m), data = tern_mf_data_offset(m), size = tern_mf_file_size(m);
	printf("file:        ");
	cli_text_str(stdout, s->path, strlen(s->path));
	if (tern_mf_variant(m))
		printf("\nformat:      ggml legacy (%s), little-endian\n", tern_mf_variant(m));
	else
		printf("\nformat:      GGUF v%u, little-endian\nalignment:   %u\n", tern_mf_version(m), tern_mf_alignment(m));
	printf("keys:        %" PRIu64 "\ntensors:     %" PRIu64 "\n", tern_mf_n_kv(m), n_t);
	if (n_t) {
		char b[32];
		human_bytes(size - data, b, sizeof b);
		printf("data:        offset %" PRIu64 ", %s (tensor offsets count from here)\n", data, b);
	} else {
		printf("data:        none (no tensors)\n");
	}
	printf("\nmetadata:\n");
	for (uint64_t i = 0; i < tern_mf_n_kv(m); i++)
		print_ent_text(s, &L, tern_mf_kv_at(m, i));
	if (!o_no_tensors) {
		printf("\ntensors:\n");
		for (uint64_t i = 0; i < n_t; i++)
			print_tensor_line(s, &L, tern_mf_tensor_at(m, i));
	}
	print_summary_text(s);
	return EXIT_OK;
}

static void json_file_member(const struct src *s);

/* One tensor as a JSON object; close = false leaves it open for more
 * members; with_file starts it with the file's path (--tensor --json). */
static void json_tensor(const struct src *s, const struct tern_tensor_view *t, bool close, bool with_file)
{
	if (with_file) {
		json_file_member(s);
		printf(", \"name\": ");
	} else {
		printf("{\"name\": ");
	}
	cli_json_str(stdout, t->name.ptr, t->name.len);
	printf(", \"type\": \"%s\", \"shape\": [", quant_type_name(t->type));
	for (uint32_t d = 0; d < t->n_dims; d++)
		printf("%s%" PRIu64, d ? ", " : "", t->ne[d]);
	printf("], \"offset\": %" PRIu64 ", \"file_offset\": %" PRIu64 ", \"bytes\": %" PRIu64 "%s", t->offset,
	       tern_mf_data_offset(s->mf) + t->offset, t->nbytes, close ? "}" : "");
}

static void json_file_member(const struct src *s)
{
	printf("{\"file\": ");
	cli_json_str(stdout, s->path, strlen(s->path));
	doc_printed = true;
}

static int list_json(const struct src *s)
{
	const tern_mf *m = s->mf;
	json_file_member(s);
	printf(", \"format\": \"%s\", ", tern_mf_format_name(m));
	if (tern_mf_variant(m))
		printf("\"variant\": \"%s\", \"version\": null, \"alignment\": null, ", tern_mf_variant(m));
	else
		printf("\"version\": %u, \"alignment\": %u, ", tern_mf_version(m), tern_mf_alignment(m));
	if (tern_mf_n_tensors(m))
		printf("\"data_offset\": %" PRIu64, tern_mf_data_offset(m));
	else
		printf("\"data_offset\": null");
	printf(", \"file_size\": %" PRIu64 ",\n\"metadata\": {", tern_mf_file_size(m));
	int matched = 0;
	for (uint64_t i = 0; i < tern_mf_n_kv(m); i++) {
		const struct tern_mf_kv *e = tern_mf_kv_at(m, i);
		if (!key_selected(e))
			continue;
		printf("%s\n  ", matched++ ? "," : "");
		cli_json_str(stdout, e->key.ptr, e->key.len);
		printf(": {\"type\": \"%s\"", json_vtype(e->v.type));
		if (e->v.type == GGUF_T_ARRAY) {
			printf(", \"elem_type\": \"%s\", \"count\": %" PRIu64, json_vtype(e->v.elem), e->v.n);
			if (o_full) {
				printf(", \"value\": ");
				json_array(m, &e->v, e);
			}
		} else {
			printf(", \"value\": ");
			json_scalar(&e->v);
		}
		putchar('}');
	}
	printf("\n},\n\"tensors\": [");
	/* --key selects metadata: the tensor list is then empty, not absent */
	bool tensors = !o_no_tensors && !o_key;
	for (uint64_t i = 0; tensors && i < tern_mf_n_tensors(m); i++) {
		printf("%s\n  ", i ? "," : "");
		json_tensor(s, tern_mf_tensor_at(m, i), true, false);
	}
	printf("\n],\n");
	print_summary_json(s);
	printf("}\n");
	if (o_key && !matched)
		return file_error(s->path, EXIT_RUNTIME, "no key matches '%s'", o_key);
	return EXIT_OK;
}

/* ---- one tensor ----------------------------------------------------------------- */

static int tensor_values(const struct src *s, const struct tern_tensor_view *t, uint64_t want, bool raw)
{
	uint64_t nel = tern_tensor_nelements(t);
	if (want > nel)
		want = nel;
	if (!t->data)
		return file_error(s->path, EXIT_DATAERR, "tensor '%s': data lies outside the file", o_tensor);
	uint64_t row_bytes = t->nbytes / (nel / t->ne[0]);
	float *row = malloc((size_t)t->ne[0] * sizeof *row);
	if (!row)
		return file_error(s->path, EXIT_RUNTIME, "out of memory for a row of %" PRIu64 " values", t->ne[0]);
	int status = EXIT_OK;
	uint64_t done = 0;
	for (uint64_t r = 0; done < want; r++) {
		int rc = quant_dequantize_row(t->type, (const uint8_t *)t->data + r * row_bytes, row, t->ne[0]);
		if (rc) {
			status = file_error(s->path, EXIT_RUNTIME, "tensor '%s': cannot decode type %s", o_tensor,
					    quant_type_name(t->type));
			break;
		}
		uint64_t k = t->ne[0] < want - done ? t->ne[0] : want - done;
		if (raw) {
			if (fwrite(row, sizeof *row, (size_t)k, stdout) != k) {
				status = file_error(s->path, EXIT_RUNTIME, "write error on stdout");
				break;
			}
		} else {
			for (uint64_t i = 0; i < k; i++) {
				if (o_json) {
					printf("%s", done + i ? ", " : "");
					cli_json_f32(stdout, row[i]);
				} else {
					char b[32];
					cli_fmt_f32(b, sizeof b, row[i]);
					printf("%s%c", b, (done + i + 1) % 8 == 0 || done + i + 1 == want ? '\n' : ' ');
				}
			}
		}
		done += k;
	}
	free(row);
	return status;
}

static int show_tensor(const struct src *s)
{
	const struct tern_tensor_view *t = tern_mf_find_tensor(s->mf, o_tensor);
	if (!t) {
		/* the nearest name within a fifth of its length (a typo, a
		 * missing ".weight"), when one is */
		char best[80] = "";
		int best_d = (int)strlen(o_tensor) / 5 + 1;
		for (uint64_t i = 0; i < tern_mf_n_tensors(s->mf); i++) {
			const struct tern_tensor_view *c = tern_mf_tensor_at(s->mf, i);
			char name[80];
			if (c->name.len >= sizeof name)
				continue;
			snprintf(name, sizeof name, "%.*s", (int)c->name.len, c->name.ptr);
			size_t n = strlen(o_tensor);
			if (!strncmp(name, o_tensor, n) && !strcmp(name + n, ".weight")) {
				snprintf(best, sizeof best, "%s", name);
				break;
			}
			int d = cli_distance(o_tensor, name);
			if (d < best_d)
				best_d = d, snprintf(best, sizeof best, "%s", name);
		}
		if (best[0])
			return file_error(s->path, EXIT_RUNTIME, "no tensor named '%s' (did you mean '%s'?)", o_tensor, best);
		return file_error(s->path, EXIT_RUNTIME, "no tensor named '%s'", o_tensor);
	}
	if (o_raw)
		return tensor_values(s, t, UINT64_MAX, true);
	uint64_t nel = tern_tensor_nelements(t);
	uint64_t file_off = tern_mf_data_offset(s->mf) + t->offset;
	if (o_json) {
		json_tensor(s, t, false, true);
		int st = EXIT_OK;
		if (o_values_seen) {
			printf(", \"values\": [");
			st = tensor_values(s, t, (uint64_t)o_values, false);
			printf("]");
		}
		printf("}\n");
		return st;
	}
	char shape[128], b[32];
	shape_text(t, shape, sizeof shape);
	human_bytes(t->nbytes, b, sizeof b);
	printf("name:        ");
	cli_text_str(stdout, t->name.ptr, t->name.len);
	printf("\ntype:        %s\nshape:       %s\nelements:    %" PRIu64 "\nbytes:       %" PRIu64 " (%s)\n",
	       quant_type_name(t->type), shape, nel, t->nbytes, b);
	printf("bits/weight: %.4f\n", (double)t->nbytes * 8.0 / (double)nel);
	printf("offset:      %" PRIu64 " in the data section (file offset %" PRIu64 ", aligned to %" PRIu64 ")\n",
	       t->offset, file_off, alignment_of(file_off));
	if (o_values_seen && o_values > 0) {
		printf("values:\n");
		return tensor_values(s, t, (uint64_t)o_values, false);
	}
	return EXIT_OK;
}

/* ---- check ------------------------------------------------------------------------ */

/* Problems found in lenient mode are the report: stdout. */
struct check_ctx {
	int n;
	const char *path;
};

static void on_problem(void *ud, const char *msg)
{
	struct check_ctx *c = ud;
	c->n++;
	printf("%s: %s%s%s\n", c->path, cli_sgr(stdout, CLI_RED), msg, cli_sgr(stdout, CLI_RESET));
}

static int check_report(const struct src *s, const struct check_ctx *cc)
{
	if (cc->n) {
		printf("%s: %d problem%s found\n", s->path, cc->n, cc->n == 1 ? "" : "s");
		return EXIT_DATAERR;
	}
	if (!common.quiet) {
		const tern_mf *m = s->mf;
		char what[32];
		if (tern_mf_variant(m))
			snprintf(what, sizeof what, "%s", tern_mf_variant(m));
		else
			snprintf(what, sizeof what, "v%u", tern_mf_version(m));
		printf("%s: %sok%s (%s %s, %" PRIu64 " keys, %" PRIu64 " tensors)\n", s->path, cli_sgr(stdout, CLI_GREEN),
		       cli_sgr(stdout, CLI_RESET), tern_mf_format_name(m), what, tern_mf_n_kv(m), tern_mf_n_tensors(m));
	}
	return EXIT_OK;
}

/* ---- opening -------------------------------------------------------------------- */

/* FILE "-": the model comes from stdin (a pipe cannot be mapped), read into
 * memory up to a limit so that a runaway producer cannot exhaust it. */
#define STDIN_LIMIT (4ull << 30)

static int read_stdin(struct src *s, tern_err *e)
{
	size_t cap = 1 << 20, n = 0;
	uint8_t *p = malloc(cap);
	if (!p)
		return tern_errf(e, TERN_ENOMEM, "out of memory");
	for (;;) {
		if (n == cap) {
			if (cap >= STDIN_LIMIT) {
				free(p);
				return tern_errf(e, TERN_ENOMEM, "more than %llu GiB on stdin; pass the file's path instead",
						 STDIN_LIMIT >> 30);
			}
			uint8_t *q = realloc(p, cap * 2);
			if (!q) {
				free(p);
				return tern_errf(e, TERN_ENOMEM, "out of memory reading stdin");
			}
			p = q;
			cap *= 2;
		}
		size_t k = fread(p + n, 1, cap - n, stdin);
		n += k;
		if (k == 0) {
			if (ferror(stdin)) {
				free(p);
				return tern_errf(e, TERN_EIO, "read error on stdin");
			}
			break;
		}
	}
	if (n == 0) {
		free(p);
		return tern_errf(e, TERN_EFORMAT, "empty input, not a GGUF file");
	}
	s->mem = p;
	s->mem_size = n;
	return 0;
}

static int src_open(struct src *s, const struct gguf_open_opts *oo, tern_err *e)
{
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	int rc = strcmp(s->path, "-") == 0 ? read_stdin(s, e) : 0;
	if (!rc)
		rc = s->mem ? tern_mf_open_mem(&s->mf, s->mem, s->mem_size, oo, e) : tern_mf_open(&s->mf, s->path, oo, e);
	if (rc)
		return rc;
	s->gf = tern_mf_gguf(s->mf);
	s->lg = tern_mf_legacy(s->mf);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	if (common.verbose)
		fprintf(stderr, "%s: %s: opened and validated in %.2f ms (%s, %" PRIu64 " bytes)\n", cli_progname(),
			s->path, (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6,
			tern_mf_format_name(s->mf), tern_mf_file_size(s->mf));
	return 0;
}

static void src_close(struct src *s)
{
	tern_mf_close(s->mf);
	free(s->mem);
}

/* ---- tokenizer mode ------------------------------------------------------- */

static char *read_all(const char *path, size_t *len)
{
	FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "rb");
	if (!f)
		return NULL;
	size_t cap = 1 << 16, n = 0;
	char *buf = malloc(cap);
	while (buf) {
		n += fread(buf + n, 1, cap - n, f);
		if (n < cap)
			break;
		char *nb = realloc(buf, cap *= 2);
		if (!nb)
			free(buf);
		buf = nb;
	}
	bool err = ferror(f);
	if (f != stdin)
		fclose(f);
	if (err) {
		free(buf);
		return NULL;
	}
	*len = n;
	return buf;
}

static int vocab_of(const struct src *s, tok_vocab **v, tern_err *e)
{
	if (s->gf)
		return tok_vocab_load(v, s->gf, e);
	if (!s->lg || ggml_legacy_kind(s->lg) != GGML_LEGACY_WHISPER)
		return tern_errf(e, TERN_ENOTFOUND, "the file has no vocabulary");
	uint64_t n = ggml_legacy_n_vocab(s->lg);
	struct tok_piece *p = calloc(n ? (size_t)n : 1, sizeof *p);
	if (!p)
		return tern_errf(e, TERN_ENOMEM, "out of memory");
	for (uint64_t i = 0; i < n; i++) {
		struct tern_str t = ggml_legacy_token(s->lg, i);
		p[i] = (struct tok_piece){t.ptr, (size_t)t.len};
	}
	int rc = tok_vocab_from_pieces(v, p, (size_t)n, e);
	free(p);
	return rc;
}

/* Ids separated by spaces, commas or brackets; the count, or -1 if the
 * text is not such a list. out may be NULL (count only). */
static long parse_ids(const char *p, int32_t *out)
{
	long n = 0;
	while (*p) {
		if (*p == ' ' || *p == ',' || *p == '\t' || *p == '\n' || *p == '[' || *p == ']') {
			p++;
			continue;
		}
		char *end;
		long long x = strtoll(p, &end, 10);
		if (end == p || x < INT32_MIN || x > INT32_MAX)
			return -1;
		if (out)
			out[n] = (int32_t)x;
		n++;
		p = end;
	}
	return n;
}

/* {"ids": [...], "pieces": [...], "dropped_bytes": N}: the pieces are the
 * bytes each id stands for, as JSON strings. */
static void print_tokens_json(const tok_vocab *v, const int32_t *ids, size_t n, const struct tok_encode_stats *st)
{
	fputs("{\"ids\": [", stdout);
	for (size_t i = 0; i < n; i++)
		printf(i ? ", %d" : "%d", ids[i]);
	fputs("], \"pieces\": [", stdout);
	for (size_t i = 0; i < n; i++) {
		struct tok_piece p = tok_token_bytes(v, ids[i]);
		if (i)
			fputs(", ", stdout);
		cli_json_str(stdout, p.ptr, p.len);
	}
	printf("], \"dropped_bytes\": %zu}\n", st->dropped_bytes);
}

static int tokenizer_mode(const struct src *s)
{
	tern_err e = {0};
	tok_vocab *v;
	int rc = vocab_of(s, &v, &e);
	if (rc)
		return cli_fail(s->path, rc, &e);
	if (tok_vocab_warning(v))
		cli_warn("%s: %s", s->path, tok_vocab_warning(v));
	int status = EXIT_OK;
	if (o_detok) {
		size_t n = (size_t)parse_ids(o_detok, NULL);
		int32_t *ids = malloc((n + 1) * sizeof *ids);
		if (ids)
			parse_ids(o_detok, ids);
		size_t len = 0;
		char *text = NULL;
		if (!ids)
			rc = tern_errf(&e, TERN_ENOMEM, "out of memory");
		else if (!(rc = tok_detokenize(v, ids, n, false, NULL, 0, &len, &e)) && !(text = malloc(len + 1)))
			rc = tern_errf(&e, TERN_ENOMEM, "out of memory");
		if (!rc)
			rc = tok_detokenize(v, ids, n, false, text, len, &len, &e);
		if (!rc) {
			fwrite(text, 1, len, stdout);
			/* a terminal gets its prompt on a line of its own; a pipe
			 * the text's bytes exactly */
			if (cli_isatty(stdout) && (len == 0 || text[len - 1] != '\n'))
				fputc('\n', stdout);
		} else
			status = cli_fail(s->path, rc, &e);
		free(text);
		free(ids);
	} else {
		size_t len = 0;
		char *text = NULL;
		if (o_tok_file) {
			if (!(text = read_all(o_tok_file, &len))) {
				cli_error("%s: cannot read: %s", o_tok_file, strerror(errno));
				tok_vocab_free(v);
				return EXIT_RUNTIME;
			}
		} else {
			len = strlen(o_tok_text);
		}
		const char *t = text ? text : o_tok_text;
		size_t n = 0;
		int32_t *ids = NULL;
		struct tok_encode_stats stats = {0};
		rc = tok_tokenize(v, t, len, o_add_special, o_parse_special, NULL, 0, &n, NULL, &e);
		if (!rc && !(ids = malloc((n + 1) * sizeof *ids)))
			rc = tern_errf(&e, TERN_ENOMEM, "out of memory");
		if (!rc)
			rc = tok_tokenize(v, t, len, o_add_special, o_parse_special, ids, n, &n, &stats, &e);
		if (!rc && stats.dropped_bytes)
			cli_warn("%s: %zu byte%s could not be encoded and %s dropped", s->path, stats.dropped_bytes,
				 stats.dropped_bytes == 1 ? "" : "s", stats.dropped_bytes == 1 ? "was" : "were");
		if (rc) {
			status = cli_fail(s->path, rc, &e);
		} else if (o_json) {
			print_tokens_json(v, ids, n, &stats);
		} else if (o_ids) {
			putchar('[');
			for (size_t i = 0; i < n; i++)
				printf(i ? ", %d" : "%d", ids[i]);
			puts("]");
		} else {
			for (size_t i = 0; i < n; i++) {
				struct tok_piece p = tok_token_bytes(v, ids[i]);
				printf("%d\t", ids[i]);
				cli_text_str(stdout, p.ptr, p.len);
				putchar('\n');
			}
		}
		free(ids);
		free(text);
	}
	tok_vocab_free(v);
	return status;
}

/* ---- one file, all files ---------------------------------------------------- */

static int run_file(const char *path)
{
	struct src s = {.path = path};
	tern_err e = {0};
	struct check_ctx cc = {0, path};
	struct gguf_open_opts oo = {.lenient = o_check, .problem = on_problem, .ud = &cc};
	int rc = src_open(&s, &oo, &e);
	if (rc) {
		int st = file_fail(path, rc, &e);
		src_close(&s);
		return st;
	}
	int status;
	if (o_tok_text || o_tok_file || o_detok)
		status = tokenizer_mode(&s);
	else if (o_check)
		status = check_report(&s, &cc);
	else if (o_tensor)
		status = show_tensor(&s);
	else if (o_json)
		status = list_json(&s);
	else
		status = list_text(&s);
	src_close(&s);
	return status;
}

/* What the option table cannot say: rules on the FILE arguments. */
static void check_args(const char **pos, int npos)
{
	int n_stdin = 0;
	for (int i = 0; i < npos; i++)
		n_stdin += strcmp(pos[i], "-") == 0;
	if (n_stdin > 1)
		cli_usage_error("FILE - (standard input) can be given once");
	if (n_stdin && o_tok_file && strcmp(o_tok_file, "-") == 0)
		cli_usage_error("FILE - and --tokenize-file - cannot both read standard input");
	if (n_stdin && isatty(0))
		cli_usage_error("FILE -: standard input is a terminal; pipe a model into it (tern-inspect - < model.gguf)");
	if (o_raw && npos > 1)
		cli_usage_error("--raw writes one tensor: give one FILE");
	if (o_raw && isatty(1))
		cli_usage_error("--raw writes binary float32 data; redirect stdout to a file or pipe");
	if (o_detok && parse_ids(o_detok, NULL) < 0)
		cli_usage_error("--detokenize: '%s' is not a list of ids", o_detok);
}

int main(int argc, char **argv)
{
	const char **pos;
	int npos;
	cli_parse(&prog, argc, argv, &common, &pos, &npos);
	check_args(pos, npos);
	bool many = npos > 1, json_array = many && o_json;
	int worst = EXIT_OK;
	if (json_array)
		printf("[\n");
	for (int i = 0; i < npos; i++) {
		if (many && !o_json && !o_check) {
			printf("%s==> ", i ? "\n" : "");
			cli_text_str(stdout, pos[i], strlen(pos[i]));
			printf(" <==\n");
		}
		if (json_array && i)
			printf(",\n");
		doc_printed = false;
		last_error[0] = 0;
		int st = run_file(pos[i]);
		if (json_array && !doc_printed) {
			printf("{\"file\": ");
			cli_json_str(stdout, pos[i], strlen(pos[i]));
			printf(", \"error\": ");
			cli_json_str(stdout, last_error, strlen(last_error));
			printf("}\n");
		}
		if (st > worst)
			worst = st;
		fflush(stdout);
	}
	if (json_array)
		printf("]\n");
	free(pos);
	if (fflush(stdout) != 0 && worst == EXIT_OK) {
		cli_error("write error on stdout");
		worst = EXIT_RUNTIME;
	}
	return worst;
}
