/* inspect.c - tern-inspect: list and validate GGUF and legacy ggml files.
 *
 * Default output is a readable listing (header, metadata, tensors, summary);
 * --json gives the same as one JSON document. Listing reads only the header
 * pages of the mapping, never tensor data, unless --tensor with --values or
 * --raw asks for one tensor's values. */
#include <errno.h>
#include <fnmatch.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmd/common/cli.h"
#include "lib/format/ggml_legacy.h"
#include "lib/format/gguf.h"
#include "quant/quant.h"
#include "tokenizer/tok.h"

/* ---- options ---------------------------------------------------------------- */

static bool o_json, o_full, o_no_tensors, o_raw, o_check;
static const char *o_key, *o_tensor;
static int64_t o_values = -1;
static bool o_values_seen;
static const char *o_tok_text, *o_tok_file, *o_detok;
static bool o_add_special, o_parse_special, o_ids;

static const struct cli_opt opts[] = {
	{.lng = "json", .kind = CLI_FLAG, .dst = &o_json, .help = "print one JSON document instead of the listing"},
	{.lng = "full", .kind = CLI_FLAG, .dst = &o_full, .help = "print every array element (text: no '... N more'; JSON: array values)"},
	{.lng = "no-tensors", .kind = CLI_FLAG, .dst = &o_no_tensors, .help = "leave out the tensor list"},
	{.lng = "key", .kind = CLI_STR, .dst = &o_key, .arg = "GLOB", .help = "print only metadata keys matching GLOB (e.g. 'llama.*')"},
	{.lng = "tensor", .kind = CLI_STR, .dst = &o_tensor, .arg = "NAME", .help = "print one tensor's details"},
	{.lng = "values", .kind = CLI_INT, .dst = &o_values, .seen = &o_values_seen, .arg = "N", .min = 0, .max = INT64_MAX,
	 .help = "with --tensor: also print its first N values, decoded to float"},
	{.lng = "raw", .kind = CLI_FLAG, .dst = &o_raw, .help = "with --tensor: write all its values as little-endian float32 to stdout"},
	{.lng = "check", .kind = CLI_FLAG, .dst = &o_check,
	 .help = "validate placement, alignment, sizes and names; list every problem; exit 65 if any"},
	{.lng = "tokenize", .kind = CLI_STR, .dst = &o_tok_text, .arg = "TEXT",
	 .help = "print the tokens of TEXT with the file's vocabulary, one 'id<TAB>piece' line each"},
	{.lng = "tokenize-file", .kind = CLI_FILE, .dst = &o_tok_file, .arg = "PATH",
	 .help = "like --tokenize with the contents of PATH ('-': standard input)"},
	{.lng = "add-special", .kind = CLI_FLAG, .dst = &o_add_special,
	 .help = "with --tokenize: add BOS/EOS (or CLS/SEP) as the vocabulary's metadata says"},
	{.lng = "parse-special", .kind = CLI_FLAG, .dst = &o_parse_special,
	 .help = "with --tokenize: control tokens written in the text (e.g. <|im_end|>) become their ids"},
	{.lng = "ids", .kind = CLI_FLAG, .dst = &o_ids, .help = "with --tokenize: print one line with a JSON array of ids"},
	{.lng = "detokenize", .kind = CLI_STR, .dst = &o_detok, .arg = "IDS",
	 .help = "print the text of IDS (separated by spaces or commas; control pieces included)"},
	{0},
};

static const struct cli_section sections[] = {
	{"OUTPUT",
	 "The listing has four parts: the header (format, version, alignment, counts, data offset); one line per "
	 "metadata key with its type, count and value (strings escaped, arrays cut after a few elements unless --full); "
	 "one line per tensor with name, type, shape (ggml order: row length first), bytes and offset in the data section; "
	 "and a summary with the architecture, parameter count, bits per weight, tensor types and the usual "
	 "hyperparameters.\n"
	 "\n"
	 "With --json the same information is one JSON document with the members format, version, alignment, "
	 "data_offset, file_size, metadata (an object keyed by key name, each {\"type\", \"value\"}; arrays give "
	 "elem_type and count, and their values only with --full), tensors (an array of {name, type, shape, offset, "
	 "file_offset, bytes}) and summary. Strings are always valid UTF-8: each ill-formed byte sequence becomes "
	 "U+FFFD. Legacy ggml files (whisper.cpp's Whisper and Silero models) use the same shape, with their "
	 "hyperparameters under metadata."},
	{"TOKENIZER",
	 "--tokenize, --tokenize-file and --detokenize use the vocabulary in the file's tokenizer.ggml.* metadata "
	 "(SPM, byte-level BPE with the pre-tokenizer named by tokenizer.ggml.pre, or WordPiece), or the vocabulary "
	 "of a legacy Whisper file. --tokenize prints one line per token: the id, a tab, and the text the token "
	 "stands for (control bytes and invalid UTF-8 escaped C-style); with --ids one line holding a JSON array "
	 "of the ids instead. No BOS/EOS is added and control tokens in the text are not recognised unless "
	 "--add-special / --parse-special say so. --detokenize prints the text of the ids exactly, without a "
	 "newline. An unknown pre-tokenizer gives a warning on stderr naming the fallback used."},
	{"EXIT STATUS",
	 "0 success; 1 runtime error (cannot open or map the file, out of memory, no such tensor or key); "
	 "2 usage error; 65 malformed input (the file is not a valid GGUF or ggml file, or --check found problems).\n"
	 "\n"
	 "Errors are one line on stderr: tern-inspect: PATH: what is wrong (with the offset, key or tensor)."},
	{"EXAMPLES",
	 "  tern-inspect model.gguf\n"
	 "  tern-inspect --json --no-tensors model.gguf | jq .summary\n"
	 "  tern-inspect --key 'llama.*' model.gguf\n"
	 "  tern-inspect --tensor token_embd.weight --values 8 model.gguf\n"
	 "  tern-inspect --tensor output_norm.weight --raw model.gguf > norm.f32\n"
	 "  tern-inspect --check model.gguf\n"
	 "  tern-inspect --tokenize 'Hello world' model.gguf\n"
	 "  tern-inspect --tokenize-file prompt.txt --add-special --ids model.gguf\n"
	 "  tern-inspect --detokenize '9906 1917' model.gguf"},
	{0},
};

static const struct cli_prog prog = {
	.name = "inspect",
	.summary = "show and validate the metadata and tensors of GGUF and legacy ggml model files",
	.usage = "[OPTIONS] FILE",
	.description =
		"tern-inspect reads a GGUF file (version 2 or 3) or a legacy ggml file (whisper.cpp's Whisper and "
		"Silero VAD models) and prints its header, metadata, tensors and a summary. The file is mapped "
		"read-only and validated: every length, count and offset is checked against the file size, so a "
		"truncated or hostile file gives a one-line error, never a crash.\n"
		"\n"
		"Listing a model reads only its header; tensor data is read only for --values and --raw. "
		"FILE - reads the file from standard input (up to 4 GiB).",
	.opts = opts,
	.pos_name = "FILE",
	.pos_ext = "gguf|bin",
	.min_pos = 1,
	.max_pos = 1,
	.sections = sections,
};

/* ---- a source: what the printers need from a GGUF or legacy file ---------- */

struct ent {
	struct tern_str key;
	struct gguf_value v;
	const struct gguf_kv *kv; /* GGUF: O(1) string-array access; NULL otherwise */
	const ggml_legacy *lg;    /* legacy vocabulary: tokens come from the reader */
};

struct src {
	const char *path;
	const char *format;     /* "gguf" or "ggml" */
	const char *variant;    /* legacy: "whisper" / "silero" */
	uint32_t version, alignment;
	uint64_t data_offset, file_size;
	struct ent *ents;       /* [n_ents] */
	uint64_t n_ents;
	const struct tern_tensor_view **t; /* [n_t] */
	uint64_t n_t;
	gguf_file *gf;
	ggml_legacy *lg;
	uint8_t (*scratch)[8];  /* [n_ents] encoded legacy scalars */
	uint8_t *mem;           /* [mem_size] the file read from stdin, or NULL */
	size_t mem_size;
	char (*names)[96];      /* [n_ents] legacy key names */
};

static const char *json_vtype(uint32_t t)
{
	static const char *const n[GGUF_T_COUNT] = {"uint8", "int8", "uint16", "int16", "uint32", "int32",
		"float32", "bool", "string", "array", "uint64", "int64", "float64"};
	return t < GGUF_T_COUNT ? n[t] : "?";
}

static struct tern_str arr_str(const struct ent *e, uint64_t i)
{
	if (e->kv)
		return gguf_kv_arr_str(e->kv, i);
	if (e->lg)
		return ggml_legacy_token(e->lg, i);
	struct gguf_value v;
	if (gguf_arr_elem(&e->v, i, &v) == 0)
		return v.s;
	return (struct tern_str){0};
}

/* ---- value printing ---------------------------------------------------------- */

static void text_scalar(const struct gguf_value *v)
{
	switch (v->type) {
	case GGUF_T_STRING:
		putchar('"');
		cli_text_str(stdout, v->s.ptr, v->s.len);
		putchar('"');
		break;
	case GGUF_T_BOOL:
		fputs(v->p[0] ? "true" : "false", stdout);
		break;
	case GGUF_T_F32: {
		char b[32];
		cli_fmt_f32(b, sizeof b, (float)gguf_value_f64(v));
		fputs(b, stdout);
		break;
	}
	case GGUF_T_F64:
		printf("%.17g", gguf_value_f64(v));
		break;
	case GGUF_T_U64:
		printf("%" PRIu64, gguf_value_u64(v));
		break;
	default:
		printf("%" PRId64, gguf_value_i64(v));
	}
}

static void json_value(const struct gguf_value *v, const struct ent *top);

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

/* Print an array's elements [0, lim) as JSON; top gives O(1) strings. */
static void json_array(const struct gguf_value *v, const struct ent *top)
{
	putchar('[');
	if (!gguf_vtype_size(v->elem) && v->elem == GGUF_T_STRING && top) {
		for (uint64_t i = 0; i < v->n; i++) {
			struct tern_str s = arr_str(top, i);
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
			json_value(&e, NULL);
		}
	}
	putchar(']');
}

static void json_value(const struct gguf_value *v, const struct ent *top)
{
	if (v->type == GGUF_T_ARRAY)
		json_array(v, top);
	else
		json_scalar(v);
}

#define TEXT_ARRAY_PREVIEW 8

static void text_array(const struct gguf_value *v, const struct ent *top, bool full)
{
	uint64_t lim = full ? v->n : (v->n < TEXT_ARRAY_PREVIEW ? v->n : TEXT_ARRAY_PREVIEW);
	putchar('[');
	struct gguf_value e;
	uint64_t i = 0, pos = 0;
	while (i < lim) {
		if (i)
			fputs(", ", stdout);
		if (v->elem == GGUF_T_STRING && top) { /* legacy vocabularies have no GGUF encoding */
			e = (struct gguf_value){.type = GGUF_T_STRING, .s = arr_str(top, i++)};
			text_scalar(&e);
			continue;
		}
		gguf_arr_next(v, &i, &pos, &e);
		if (e.type == GGUF_T_ARRAY)
			text_array(&e, NULL, full);
		else
			text_scalar(&e);
	}
	if (lim < v->n)
		printf("%s... %" PRIu64 " more", lim ? ", " : "", v->n - lim);
	putchar(']');
}

/* ---- summary ------------------------------------------------------------------- */

struct summary {
	struct tern_str arch;
	uint64_t params, tensor_bytes;
	uint64_t type_count[QT_COUNT];
};

static const struct ent *find_ent(const struct src *s, const char *key)
{
	if (s->gf) {
		const struct gguf_kv *kv = gguf_find(s->gf, key);
		if (!kv)
			return NULL;
		return &s->ents[kv - gguf_kv_at(s->gf, 0)];
	}
	for (uint64_t i = 0; i < s->n_ents; i++)
		if (tern_str_eq(s->ents[i].key, key))
			return &s->ents[i];
	return NULL;
}

static void summarise(const struct src *s, struct summary *sm)
{
	memset(sm, 0, sizeof *sm);
	const struct ent *a = find_ent(s, "general.architecture");
	if (a && a->v.type == GGUF_T_STRING)
		sm->arch = a->v.s;
	else if (s->variant)
		sm->arch = (struct tern_str){s->variant, strlen(s->variant)};
	for (uint64_t i = 0; i < s->n_t; i++) {
		const struct tern_tensor_view *t = s->t[i];
		sm->params += tern_tensor_nelements(t);
		sm->tensor_bytes += t->nbytes;
		if (t->type < QT_COUNT)
			sm->type_count[t->type]++;
	}
}

/* The hyperparameters users look for: (label, key suffix after "ARCH."). */
static const struct { const char *label, *json, *suffix; } hparams[] = {
	{"context length", "context_length", "context_length"},
	{"embedding size", "embedding_length", "embedding_length"},
	{"layers", "block_count", "block_count"},
	{"heads", "head_count", "attention.head_count"},
	{"kv heads", "head_count_kv", "attention.head_count_kv"},
	{"feed-forward size", "feed_forward_length", "feed_forward_length"},
	{"rope base", "rope_freq_base", "rope.freq_base"},
	{"experts", "expert_count", "expert_count"},
};

static const struct ent *arch_ent(const struct src *s, const struct summary *sm, const char *suffix)
{
	char key[256];
	if (!sm->arch.len || sm->arch.len > 128)
		return NULL;
	snprintf(key, sizeof key, "%.*s.%s", (int)sm->arch.len, sm->arch.ptr, suffix);
	return find_ent(s, key);
}

/* Vocabulary size: ARCH.vocab_size, else the token list's length. */
static bool vocab_size(const struct src *s, const struct summary *sm, uint64_t *n)
{
	const struct ent *e = arch_ent(s, sm, "vocab_size");
	if (e && gguf_value_is_int(&e->v)) {
		*n = gguf_value_u64(&e->v);
		return true;
	}
	e = find_ent(s, "tokenizer.ggml.tokens");
	if (!e)
		e = find_ent(s, "tokenizer.tokens");
	if (e && e->v.type == GGUF_T_ARRAY) {
		*n = e->v.n;
		return true;
	}
	return false;
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

static void print_summary_text(const struct src *s)
{
	struct summary sm;
	summarise(s, &sm);
	char b1[32], b2[32];
	printf("\nsummary:\n");
	printf("  %-18s ", "architecture:");
	if (sm.arch.len)
		cli_text_str(stdout, sm.arch.ptr, sm.arch.len);
	else
		fputs("(unknown)", stdout);
	human_count(sm.params, b1, sizeof b1);
	printf("\n  %-18s %s (%" PRIu64 ")\n", "parameters:", b1, sm.params);
	human_bytes(s->file_size, b2, sizeof b2);
	printf("  %-18s %s (%" PRIu64 " bytes)\n", "file size:", b2, s->file_size);
	if (sm.params)
		printf("  %-18s %.2f\n", "bits per weight:", (double)sm.tensor_bytes * 8.0 / (double)sm.params);
	printf("  %-18s", "tensor types:");
	bool any = false;
	for (int t = 0; t < QT_COUNT; t++)
		if (sm.type_count[t]) {
			printf("%s %s %" PRIu64, any ? "," : "", quant_type_name((uint32_t)t), sm.type_count[t]);
			any = true;
		}
	printf("%s\n", any ? "" : " (none)");
	for (size_t i = 0; i < sizeof hparams / sizeof hparams[0]; i++) {
		const struct ent *e = arch_ent(s, &sm, hparams[i].suffix);
		if (!e)
			continue;
		char lab[40];
		snprintf(lab, sizeof lab, "%s:", hparams[i].label);
		printf("  %-18s ", lab);
		if (e->v.type == GGUF_T_ARRAY)
			text_array(&e->v, e, false);
		else
			text_scalar(&e->v);
		putchar('\n');
	}
	uint64_t nv;
	if (vocab_size(s, &sm, &nv))
		printf("  %-18s %" PRIu64 "\n", "vocab size:", nv);
	const struct ent *ct = find_ent(s, "tokenizer.chat_template");
	if (s->gf || ct) {
		if (ct && ct->v.type == GGUF_T_STRING)
			printf("  %-18s yes (%" PRIu64 " bytes)\n", "chat template:", ct->v.s.len);
		else
			printf("  %-18s no\n", "chat template:");
	}
}

static void print_summary_json(const struct src *s)
{
	struct summary sm;
	summarise(s, &sm);
	printf("\"summary\": {\"architecture\": ");
	if (sm.arch.len)
		cli_json_str(stdout, sm.arch.ptr, sm.arch.len);
	else
		fputs("null", stdout);
	printf(", \"parameters\": %" PRIu64 ", \"file_size\": %" PRIu64 ", \"tensor_bytes\": %" PRIu64,
	       sm.params, s->file_size, sm.tensor_bytes);
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
	for (size_t i = 0; i < sizeof hparams / sizeof hparams[0]; i++) {
		const struct ent *e = arch_ent(s, &sm, hparams[i].suffix);
		if (!e)
			continue;
		printf(", \"%s\": ", hparams[i].json);
		json_value(&e->v, e);
	}
	uint64_t nv;
	if (vocab_size(s, &sm, &nv))
		printf(", \"vocab_size\": %" PRIu64, nv);
	const struct ent *ct = find_ent(s, "tokenizer.chat_template");
	printf(", \"chat_template\": %s}", ct && ct->v.type == GGUF_T_STRING ? "true" : "false");
}

/* ---- listing ------------------------------------------------------------------- */

static bool key_selected(const struct ent *e)
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

static void print_tensor_line(const struct tern_tensor_view *t)
{
	char shape[128], bytes[32];
	shape_text(t, shape, sizeof shape);
	human_bytes(t->nbytes, bytes, sizeof bytes);
	fputs("  ", stdout);
	cli_text_str(stdout, t->name.ptr, t->name.len);
	int pad = 40 - (int)(t->name.len < 40 ? t->name.len : 40);
	printf("%*s %-8s %-22s %12s @ %" PRIu64 "\n", pad, "", quant_type_name(t->type), shape, bytes, t->offset);
}

static void print_ent_text(const struct ent *e)
{
	fputs("  ", stdout);
	cli_text_str(stdout, e->key.ptr, e->key.len);
	int pad = 40 - (int)(e->key.len < 40 ? e->key.len : 40);
	char ty[48];
	if (e->v.type == GGUF_T_ARRAY)
		snprintf(ty, sizeof ty, "arr[%s,%" PRIu64 "]", gguf_vtype_name(e->v.elem), e->v.n);
	else
		snprintf(ty, sizeof ty, "%s", gguf_vtype_name(e->v.type));
	printf("%*s %-16s = ", pad, "", ty);
	if (e->v.type == GGUF_T_ARRAY)
		text_array(&e->v, e, o_full);
	else
		text_scalar(&e->v);
	putchar('\n');
}

static int list_text(const struct src *s)
{
	if (o_key) {
		int n = 0;
		for (uint64_t i = 0; i < s->n_ents; i++)
			if (key_selected(&s->ents[i]))
				print_ent_text(&s->ents[i]), n++;
		if (!n) {
			cli_error("%s: no key matches '%s'", s->path, o_key);
			return EXIT_RUNTIME;
		}
		return EXIT_OK;
	}
	char b[32];
	human_bytes(s->file_size > s->data_offset ? s->file_size - s->data_offset : 0, b, sizeof b);
	printf("file:        ");
	cli_text_str(stdout, s->path, strlen(s->path));
	if (s->variant)
		printf("\nformat:      ggml legacy (%s), little-endian\n", s->variant);
	else
		printf("\nformat:      GGUF v%u, little-endian\n", s->version);
	if (!s->variant)
		printf("alignment:   %u\n", s->alignment);
	printf("keys:        %" PRIu64 "\ntensors:     %" PRIu64 "\n", s->n_ents, s->n_t);
	printf("data:        offset %" PRIu64 ", %s\n", s->data_offset, b);
	printf("\nmetadata:\n");
	for (uint64_t i = 0; i < s->n_ents; i++)
		print_ent_text(&s->ents[i]);
	if (!o_no_tensors) {
		printf("\ntensors:\n");
		for (uint64_t i = 0; i < s->n_t; i++)
			print_tensor_line(s->t[i]);
	}
	print_summary_text(s);
	return EXIT_OK;
}

/* One tensor as a JSON object; close = false leaves it open for more members. */
static void json_tensor(const struct src *s, const struct tern_tensor_view *t, bool close)
{
	printf("{\"name\": ");
	cli_json_str(stdout, t->name.ptr, t->name.len);
	printf(", \"type\": \"%s\", \"shape\": [", quant_type_name(t->type));
	for (uint32_t d = 0; d < t->n_dims; d++)
		printf("%s%" PRIu64, d ? ", " : "", t->ne[d]);
	printf("], \"offset\": %" PRIu64 ", \"file_offset\": %" PRIu64 ", \"bytes\": %" PRIu64 "%s",
	       t->offset, s->variant ? t->offset : s->data_offset + t->offset, t->nbytes, close ? "}" : "");
}

static int list_json(const struct src *s)
{
	printf("{\"format\": \"%s\", ", s->format);
	if (s->variant)
		printf("\"variant\": \"%s\", ", s->variant);
	if (s->variant)
		printf("\"version\": null, \"alignment\": null, ");
	else
		printf("\"version\": %u, \"alignment\": %u, ", s->version, s->alignment);
	printf("\"data_offset\": %" PRIu64 ", \"file_size\": %" PRIu64 ",\n\"metadata\": {",
	       s->data_offset, s->file_size);
	bool first = true;
	int matched = 0;
	for (uint64_t i = 0; i < s->n_ents; i++) {
		const struct ent *e = &s->ents[i];
		if (!key_selected(e))
			continue;
		matched++;
		printf("%s\n  ", first ? "" : ",");
		first = false;
		cli_json_str(stdout, e->key.ptr, e->key.len);
		printf(": {\"type\": \"%s\"", json_vtype(e->v.type));
		if (e->v.type == GGUF_T_ARRAY) {
			printf(", \"elem_type\": \"%s\", \"count\": %" PRIu64, json_vtype(e->v.elem), e->v.n);
			if (o_full) {
				printf(", \"value\": ");
				json_array(&e->v, e);
			}
		} else {
			printf(", \"value\": ");
			json_scalar(&e->v);
		}
		putchar('}');
	}
	printf("\n}");
	if (!o_key) {
		printf(",\n\"tensors\": [");
		if (!o_no_tensors)
			for (uint64_t i = 0; i < s->n_t; i++) {
				printf("%s\n  ", i ? "," : "");
				json_tensor(s, s->t[i], true);
			}
		printf("\n],\n");
		print_summary_json(s);
	}
	printf("}\n");
	if (o_key && !matched) {
		cli_error("%s: no key matches '%s'", s->path, o_key);
		return EXIT_RUNTIME;
	}
	return EXIT_OK;
}

/* ---- one tensor ----------------------------------------------------------------- */

static int tensor_values(const struct src *s, const struct tern_tensor_view *t, uint64_t want, bool raw)
{
	uint64_t nel = tern_tensor_nelements(t);
	if (want > nel)
		want = nel;
	if (!t->data) {
		cli_error("%s: tensor '%s': data lies outside the file", s->path, o_tensor);
		return EXIT_DATAERR;
	}
	uint64_t row_bytes = t->nbytes / (nel / t->ne[0]);
	float *row = malloc((size_t)t->ne[0] * sizeof *row);
	if (!row) {
		cli_error("%s: out of memory for a row of %" PRIu64 " values", s->path, t->ne[0]);
		return EXIT_RUNTIME;
	}
	int status = EXIT_OK;
	uint64_t done = 0;
	for (uint64_t r = 0; done < want; r++) {
		int rc = quant_dequantize_row(t->type, (const uint8_t *)t->data + r * row_bytes, row, t->ne[0]);
		if (rc) {
			cli_error("%s: tensor '%s': cannot decode type %s", s->path, o_tensor, quant_type_name(t->type));
			status = EXIT_RUNTIME;
			break;
		}
		uint64_t k = t->ne[0] < want - done ? t->ne[0] : want - done;
		if (raw) {
			if (fwrite(row, sizeof *row, (size_t)k, stdout) != k) {
				cli_error("write error on stdout");
				status = EXIT_RUNTIME;
				break;
			}
		} else {
			for (uint64_t i = 0; i < k; i++) {
				if (o_json)
					printf("%s", done + i ? ", " : ""), cli_json_f32(stdout, row[i]);
				else
				{
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
	const struct tern_tensor_view *t = NULL;
	for (uint64_t i = 0; i < s->n_t && !t; i++)
		if (tern_str_eq(s->t[i]->name, o_tensor))
			t = s->t[i];
	if (!t) {
		cli_error("%s: no tensor named '%s'", s->path, o_tensor);
		return EXIT_RUNTIME;
	}
	if (o_raw) {
		if (isatty(1)) {
			cli_error("--raw writes binary float32 data; redirect stdout to a file or pipe");
			return EXIT_USAGE;
		}
		return tensor_values(s, t, UINT64_MAX, true);
	}
	uint64_t nel = tern_tensor_nelements(t);
	uint64_t file_off = s->variant ? t->offset : s->data_offset + t->offset;
	if (o_json) {
		json_tensor(s, t, false);
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
	printf("offset:      %" PRIu64 " (file offset %" PRIu64 ")\n", t->offset, file_off);
	if (o_values_seen && o_values > 0) {
		printf("values:\n");
		return tensor_values(s, t, (uint64_t)o_values, false);
	}
	return EXIT_OK;
}

/* ---- opening -------------------------------------------------------------------- */

struct check_ctx {
	int n;
	const char *path;
};

static void on_problem(void *ud, const char *msg)
{
	struct check_ctx *c = ud;
	c->n++;
	cli_error("%s: %s", c->path, msg);
}

static int load_gguf(struct src *s, const struct gguf_open_opts *oo, tern_err *e)
{
	int rc = s->mem ? gguf_open_mem(&s->gf, s->mem, s->mem_size, oo, e) : gguf_open(&s->gf, s->path, oo, e);
	if (rc)
		return rc;
	s->format = "gguf";
	s->version = gguf_version(s->gf);
	s->alignment = gguf_alignment(s->gf);
	s->data_offset = gguf_data_offset(s->gf);
	s->file_size = gguf_file_size(s->gf);
	s->n_ents = gguf_n_kv(s->gf);
	s->n_t = gguf_n_tensors(s->gf);
	s->ents = calloc(s->n_ents ? (size_t)s->n_ents : 1, sizeof *s->ents);
	s->t = calloc(s->n_t ? (size_t)s->n_t : 1, sizeof *s->t);
	if (!s->ents || !s->t)
		return tern_errf(e, TERN_ENOMEM, "out of memory");
	for (uint64_t i = 0; i < s->n_ents; i++) {
		const struct gguf_kv *kv = gguf_kv_at(s->gf, i);
		s->ents[i] = (struct ent){.key = kv->key, .v = kv->v, .kv = kv};
	}
	for (uint64_t i = 0; i < s->n_t; i++)
		s->t[i] = gguf_tensor_at(s->gf, i);
	return 0;
}

/* A legacy file as a source: hyperparameters become "KIND.NAME" keys, the
 * mel filter bank and the vocabulary arrays, so every printer works on it. */
static int load_legacy(struct src *s, tern_err *e)
{
	int rc = s->mem ? ggml_legacy_open_mem(&s->lg, s->mem, s->mem_size, e) : ggml_legacy_open(&s->lg, s->path, e);
	if (rc)
		return rc;
	const ggml_legacy *lg = s->lg;
	const char *kind = ggml_legacy_kind_name(lg);
	s->format = "ggml";
	s->variant = kind;
	s->file_size = ggml_legacy_file_size(lg);
	s->n_t = ggml_legacy_n_tensors(lg);
	size_t nh = ggml_legacy_n_hparams(lg);
	size_t cap = nh + 4;
	s->ents = calloc(cap, sizeof *s->ents);
	s->scratch = calloc(cap, sizeof *s->scratch);
	s->names = calloc(cap, sizeof *s->names);
	s->t = calloc(s->n_t ? (size_t)s->n_t : 1, sizeof *s->t);
	if (!s->ents || !s->scratch || !s->names || !s->t)
		return tern_errf(e, TERN_ENOMEM, "out of memory");
	uint64_t n = 0;
	struct tern_str mt = ggml_legacy_model_type(lg);
	if (mt.len) {
		snprintf(s->names[n], sizeof s->names[n], "%s.model_type", kind);
		s->ents[n] = (struct ent){.key = {s->names[n], strlen(s->names[n])},
					  .v = {.type = GGUF_T_STRING, .s = mt}};
		n++;
	}
	for (size_t i = 0; i < nh; i++, n++) {
		const struct ggml_legacy_hparam *h = ggml_legacy_hparam(lg, i);
		snprintf(s->names[n], sizeof s->names[n], "%s.%s", kind, h->name);
		struct ent *en = &s->ents[n];
		en->key = (struct tern_str){s->names[n], strlen(s->names[n])};
		if (h->is_float) {
			memcpy(s->scratch[n], &h->f, 8);
			en->v = (struct gguf_value){.type = GGUF_T_F64, .p = s->scratch[n], .size = 8};
		} else { /* int32 on disk */
			int32_t v = (int32_t)h->i;
			memcpy(s->scratch[n], &v, 4);
			en->v = (struct gguf_value){.type = GGUF_T_I32, .p = s->scratch[n], .size = 4};
		}
	}
	uint32_t n_mel, n_fft;
	const void *mel;
	if (ggml_legacy_mel(lg, &n_mel, &n_fft, &mel) == 0) {
		snprintf(s->names[n], sizeof s->names[n], "%s.mel_filters", kind);
		s->ents[n] = (struct ent){.key = {s->names[n], strlen(s->names[n])},
					  .v = {.type = GGUF_T_ARRAY, .elem = GGUF_T_F32, .n = (uint64_t)n_mel * n_fft,
						.p = mel, .size = (uint64_t)n_mel * n_fft * 4}};
		n++;
	}
	uint64_t nv = ggml_legacy_n_vocab(lg);
	if (nv) {
		snprintf(s->names[n], sizeof s->names[n], "tokenizer.tokens");
		s->ents[n] = (struct ent){.key = {s->names[n], strlen(s->names[n])},
					  .v = {.type = GGUF_T_ARRAY, .elem = GGUF_T_STRING, .n = nv}, .lg = lg};
		n++;
	}
	s->n_ents = n;
	for (uint64_t i = 0; i < s->n_t; i++)
		s->t[i] = ggml_legacy_tensor_at(lg, i);
	s->data_offset = s->n_t ? s->t[0]->info_offset : s->file_size;
	return 0;
}

/* First bytes of the file, to tell GGUF from legacy ggml. */
static bool is_legacy(const struct src *s)
{
	if (s->mem)
		return ggml_legacy_probe(s->mem, s->mem_size);
	unsigned char b[4];
	FILE *f = fopen(s->path, "rb");
	if (!f)
		return false;
	size_t n = fread(b, 1, sizeof b, f);
	fclose(f);
	return ggml_legacy_probe(b, n);
}

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

static void src_close(struct src *s)
{
	free(s->ents);
	free(s->t);
	free(s->scratch);
	free(s->names);
	gguf_close(s->gf);
	ggml_legacy_close(s->lg);
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
		if (!rc)
			fwrite(text, 1, len, stdout);
		else
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
		rc = tok_tokenize(v, t, len, o_add_special, o_parse_special, NULL, 0, &n, &e);
		if (!rc && !(ids = malloc((n + 1) * sizeof *ids)))
			rc = tern_errf(&e, TERN_ENOMEM, "out of memory");
		if (!rc)
			rc = tok_tokenize(v, t, len, o_add_special, o_parse_special, ids, n, &n, &e);
		if (rc) {
			status = cli_fail(s->path, rc, &e);
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

int main(int argc, char **argv)
{
	struct cli_common common;
	const char **pos;
	int npos;
	cli_parse(&prog, argc, argv, &common, &pos, &npos);
	if ((o_raw || o_values_seen) && !o_tensor)
		cli_usage_error("%s needs --tensor NAME", o_raw ? "--raw" : "--values");
	if (o_raw && (o_json || o_values_seen))
		cli_usage_error("--raw cannot be combined with --json or --values");
	if (o_check && (o_tensor || o_key))
		cli_usage_error("--check cannot be combined with --tensor or --key");
	bool tok_mode = o_tok_text || o_tok_file || o_detok;
	if ((o_tok_text != NULL) + (o_tok_file != NULL) + (o_detok != NULL) > 1)
		cli_usage_error("use one of --tokenize, --tokenize-file and --detokenize");
	if (!(o_tok_text || o_tok_file) && (o_add_special || o_parse_special || o_ids))
		cli_usage_error("--add-special, --parse-special and --ids need --tokenize or --tokenize-file");
	if (tok_mode && (o_check || o_tensor || o_json || o_key))
		cli_usage_error("the tokenizer options cannot be combined with --check, --tensor, --json or --key");
	if (o_detok && parse_ids(o_detok, NULL) < 0)
		cli_usage_error("--detokenize: '%s' is not a list of ids", o_detok);

	struct src s = {.path = pos[0]};
	free(pos);
	tern_err e = {0};
	struct check_ctx cc = {0, s.path};
	struct gguf_open_opts oo = {.lenient = o_check, .problem = on_problem, .ud = &cc};
	int rc = strcmp(s.path, "-") == 0 ? read_stdin(&s, &e) : 0;
	if (!rc)
		rc = is_legacy(&s) ? load_legacy(&s, &e) : load_gguf(&s, &oo, &e);
	if (rc) {
		int st = cli_fail(s.path, rc, &e);
		src_close(&s);
		return st;
	}
	int status;
	if (tok_mode) {
		status = tokenizer_mode(&s);
	} else if (o_check) {
		if (cc.n) {
			cli_error("%s: %d problem%s found", s.path, cc.n, cc.n == 1 ? "" : "s");
			status = EXIT_DATAERR;
		} else {
			if (!common.quiet)
				printf("%s: ok (%s %s, %" PRIu64 " keys, %" PRIu64 " tensors)\n", s.path, s.format,
				       s.variant ? s.variant : s.version == 2 ? "v2" : "v3", s.n_ents, s.n_t);
			status = EXIT_OK;
		}
	} else if (o_tensor) {
		status = show_tensor(&s);
	} else if (o_json) {
		status = list_json(&s);
	} else {
		status = list_text(&s);
	}
	if (fflush(stdout) != 0 && status == EXIT_OK) {
		cli_error("write error on stdout");
		status = EXIT_RUNTIME;
	}
	src_close(&s);
	return status;
}
