/* fuzz_tok.c - libFuzzer target for the tokenizer.
 *
 * The first byte picks what to do with the rest:
 *   bit 7 set: the rest is a GGUF file; load its vocabulary (hostile
 *              tokenizer.ggml.* metadata) and tokenize a fixed text with it;
 *   otherwise: the rest is text for one of the vocabularies loaded at start
 *              (low bits pick it; bits 4 and 5 are add_special and
 *              parse_special). Every id must be in range, nothing may be
 *              dropped where every byte has a piece, detokenizing must
 *              work, the stream decoder must agree with it on valid UTF-8,
 *              and byte-level GPT-2 must give the text back exactly.
 * The real vocab files come from $TERN_DATA/vocab (default
 * ../shared/data/vocab); a small SPM/BPE/WPM vocabulary written in memory is
 * always there too, so the target works without the data. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/format/gguf.h"
#include "tokenizer/tok.h"

#define MAX_V 8
static tok_vocab *vocabs[MAX_V];
static bool lossless[MAX_V];
static int n_vocabs;

static void add_file(const char *dir, const char *name, bool exact)
{
	char path[1024];
	snprintf(path, sizeof path, "%s/vocab/ggml-vocab-%s.gguf", dir, name);
	gguf_file *f;
	tern_err e = {0};
	if (gguf_open(&f, path, NULL, &e))
		return;
	tok_vocab *v;
	if (tok_vocab_load(&v, f, &e) == 0) {
		lossless[n_vocabs] = exact;
		vocabs[n_vocabs++] = v;
	}
	gguf_close(f);
}

static void add_synthetic(const char *model)
{
	gguf_writer *w = gguf_writer_new();
	const char *toks[] = {"<unk>", "<s>", "</s>", "a", "b", "ab", "\xe2\x96\x81", "\xe2\x96\x81" "a",
			      "<0x41>", "\xc4\xa0", "[UNK]", "[CLS]", "[SEP]", "abab", "<|x|>", "c"};
	int32_t types[16] = {2, 3, 3, 1, 1, 1, 1, 1, 6, 1, 3, 3, 3, 1, 4, 1};
	float scores[16] = {0, 0, 0, -1, -2, -0.5f, -3, -0.25f, 0, -4, 0, 0, 0, -0.1f, 0, -5};
	const char *merges[] = {"a b", "ab ab"};
	gguf_writer_str(w, "tokenizer.ggml.model", model);
	if (strcmp(model, "gpt2") == 0)
		gguf_writer_str(w, "tokenizer.ggml.pre", "llama-bpe");
	gguf_writer_arr_str(w, "tokenizer.ggml.tokens", toks, 16);
	gguf_writer_arr(w, "tokenizer.ggml.token_type", GGUF_T_I32, types, 16);
	gguf_writer_arr(w, "tokenizer.ggml.scores", GGUF_T_F32, scores, 16);
	gguf_writer_arr_str(w, "tokenizer.ggml.merges", merges, 2);
	gguf_writer_u32(w, "tokenizer.ggml.unknown_token_id", 10);
	void *buf;
	size_t size;
	tern_err e = {0};
	gguf_file *f;
	tok_vocab *v;
	if (gguf_writer_write_mem(w, &buf, &size, &e) == 0) {
		if (gguf_open_mem(&f, buf, size, NULL, &e) == 0) {
			if (tok_vocab_load(&v, f, &e) == 0)
				vocabs[n_vocabs++] = v;
			gguf_close(f);
		}
		free(buf);
	}
	gguf_writer_free(w);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	const char *dir = getenv("TERN_DATA");
	if (!dir || !*dir)
		dir = "../shared/data";
	add_file(dir, "gpt-2", true);
	add_file(dir, "llama-spm", false);
	add_file(dir, "bert-bge", false);
	add_file(dir, "deepseek-llm", false);
	add_file(dir, "phi-3", false);
	add_synthetic("llama");
	add_synthetic("gpt2");
	add_synthetic("bert");
	return 0;
}

static void check(const tok_vocab *v, bool exact, const char *text, size_t len, bool add, bool parse)
{
	tern_err e = {0};
	size_t n;
	struct tok_encode_stats st, st2;
	if (tok_tokenize(v, text, len, add, parse, NULL, 0, &n, &st, &e))
		__builtin_trap();
	int32_t *ids = malloc((n + 1) * sizeof *ids);
	size_t n2;
	if (!ids || tok_tokenize(v, text, len, add, parse, ids, n, &n2, &st2, &e) || n2 != n ||
	    st2.dropped_bytes != st.dropped_bytes)
		__builtin_trap();
	if (exact && st.dropped_bytes) /* every byte has a piece in GPT-2 */
		__builtin_trap();
	for (size_t i = 0; i < n; i++)
		if (ids[i] < 0 || ids[i] >= tok_n_vocab(v))
			__builtin_trap();
	size_t tl;
	if (tok_detokenize(v, ids, n, true, NULL, 0, &tl, &e))
		__builtin_trap();
	char *t = malloc(tl + 1);
	if (!t || tok_detokenize(v, ids, n, true, t, tl, &tl, &e))
		__builtin_trap();
	if (exact && !add && !parse && (tl != len || memcmp(t, text, len) != 0))
		__builtin_trap();
	/* the stream gives the same bytes wherever they are valid UTF-8 */
	tok_stream *s;
	if (tok_stream_new(&s, v, true, &e))
		__builtin_trap();
	size_t cap = TOK_STREAM_MAX_OUT(tok_max_piece_len(v));
	char *buf = malloc(cap), *acc = malloc(3 * tl + 16);
	size_t na = 0, k;
	for (size_t i = 0; i < n; i++) {
		if (tok_stream_push(s, ids[i], buf, cap, &k, &e))
			__builtin_trap();
		memcpy(acc + na, buf, k);
		na += k;
	}
	if (tok_stream_flush(s, buf, cap, &k))
		__builtin_trap();
	memcpy(acc + na, buf, k);
	na += k;
	if (na < tl)
		__builtin_trap(); /* replacement never shortens the text */
	tok_stream_free(s);
	free(buf);
	free(acc);
	free(t);
	free(ids);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size == 0 || n_vocabs == 0)
		return 0;
	uint8_t sel = data[0];
	const char *text = (const char *)data + 1;
	size_t len = size - 1;
	if (sel & 0x80) {
		gguf_file *f;
		tern_err e = {0};
		if (gguf_open_mem(&f, data + 1, size - 1, NULL, &e))
			return 0;
		tok_vocab *v;
		if (tok_vocab_load(&v, f, &e) == 0) {
			static const char sample[] = "Hello, world! 123 \xe4\xbd\xa0\xe5\xa5\xbd <s></s> \xff";
			if (tok_vocab_model(v) != TOK_MODEL_NONE)
				check(v, false, sample, sizeof sample - 1, true, true);
			tok_vocab_free(v);
		} else if (!e.msg[0]) {
			__builtin_trap(); /* every failure explains itself */
		}
		gguf_close(f);
		return 0;
	}
	int which = (sel & 7) % n_vocabs;
	check(vocabs[which], lossless[which], text, len, sel & 0x10, sel & 0x20);
	return 0;
}
