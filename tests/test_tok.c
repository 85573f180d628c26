/* test_tok.c - the tokenizer against the reference ids shipped with the
 * vocab files (../shared/data/vocab, .inp/.out), round trips, special
 * tokens, streaming decode, and the Whisper vocabulary. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "tests/testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/format/ggml_legacy.h"
#include "lib/format/gguf.h"
#include "tokenizer/tok.h"

static tok_vocab *load_vocab(const char *name)
{
	char path[512];
	snprintf(path, sizeof path, "%s/vocab/ggml-vocab-%s.gguf", test_data_dir(), name);
	gguf_file *f;
	tern_err e = {0};
	int rc = gguf_open(&f, path, NULL, &e);
	if (rc)
		fail_msg("%s: %s", path, e.msg);
	tok_vocab *v;
	rc = tok_vocab_load(&v, f, &e);
	gguf_close(f);
	if (rc)
		fail_msg("%s: %s", path, e.msg);
	return v;
}

static int32_t *tokenize(const tok_vocab *v, const char *s, size_t n, bool add, bool parse, size_t *count)
{
	tern_err e = {0};
	size_t need;
	int rc = tok_tokenize(v, s, n, add, parse, NULL, 0, &need, NULL, &e);
	if (rc)
		fail_msg("tokenize: %s", e.msg);
	int32_t *ids = malloc((need + 1) * sizeof *ids);
	assert_non_null(ids);
	assert_int_equal(tok_tokenize(v, s, n, add, parse, ids, need, count, NULL, &e), 0);
	assert_int_equal(*count, need);
	return ids;
}

static char *detokenize(const tok_vocab *v, const int32_t *ids, size_t n, bool remove_special, size_t *len)
{
	tern_err e = {0};
	size_t need;
	assert_int_equal(tok_detokenize(v, ids, n, remove_special, NULL, 0, &need, &e), 0);
	char *s = malloc(need + 1);
	assert_non_null(s);
	assert_int_equal(tok_detokenize(v, ids, n, remove_special, s, need, len, &e), 0);
	s[need] = 0;
	return s;
}

/* ---- the reference cases -------------------------------------------------- */

struct cases {
	char *inp, *out;
	char **text;
	size_t *len;
	char **ids; /* one line of ids per case */
	size_t n;
};

static bool load_cases(const char *name, struct cases *c)
{
	char path[512];
	size_t ni, no;
	memset(c, 0, sizeof *c);
	snprintf(path, sizeof path, "%s/vocab/ggml-vocab-%s.gguf.inp", test_data_dir(), name);
	if (!(c->inp = test_read_file(path, &ni)))
		return false;
	snprintf(path, sizeof path, "%s/vocab/ggml-vocab-%s.gguf.out", test_data_dir(), name);
	c->out = test_read_file(path, &no);
	assert_non_null(c->out);
	static const char sep[] = "\n__ggml_vocab_test__\n";
	size_t cap = 256;
	c->text = malloc(cap * sizeof *c->text);
	c->len = malloc(cap * sizeof *c->len);
	c->ids = malloc(cap * sizeof *c->ids);
	char *p = c->inp, *end = c->inp + ni;
	/* the file ends with a separator: every case is followed by one */
	for (;;) {
		char *q = strstr(p, sep);
		if (!q)
			break;
		assert_true(c->n < cap);
		c->text[c->n] = p;
		c->len[c->n] = (size_t)(q - p);
		c->n++;
		p = q + strlen(sep);
		if (p >= end)
			break;
	}
	char *line = c->out;
	for (size_t i = 0; i < c->n; i++) {
		char *nl = strchr(line, '\n');
		assert_non_null(nl);
		*nl = 0;
		c->ids[i] = line;
		line = nl + 1;
	}
	return true;
}

static void free_cases(struct cases *c)
{
	free(c->inp);
	free(c->out);
	free(c->text);
	free(c->len);
	free(c->ids);
}

static size_t parse_ids(const char *s, int32_t *ids, size_t cap)
{
	size_t n = 0;
	while (*s) {
		char *end;
		long x = strtol(s, &end, 10);
		if (end == s)
			break;
		assert_true(n < cap);
		ids[n++] = (int32_t)x;
		s = end;
	}
	return n;
}

/* Tokenize every case; print the differences; return the pass count. */
static size_t run_cases(const char *name, size_t *total)
{
	struct cases c;
	if (!load_cases(name, &c)) {
		*total = 0;
		return 0;
	}
	tok_vocab *v = load_vocab(name);
	size_t pass = 0;
	for (size_t i = 0; i < c.n; i++) {
		int32_t want[4096];
		size_t nw = parse_ids(c.ids[i], want, 4096), ng;
		int32_t *got = tokenize(v, c.text[i], c.len[i], false, false, &ng);
		if (ng == nw && memcmp(got, want, nw * sizeof *got) == 0) {
			pass++;
		} else {
			printf("%s case %zu: '%.*s'\n  want:", name, i, (int)c.len[i], c.text[i]);
			for (size_t k = 0; k < nw; k++)
				printf(" %d", want[k]);
			printf("\n  got: ");
			for (size_t k = 0; k < ng; k++)
				printf(" %d", got[k]);
			printf("\n");
		}
		free(got);
	}
	printf("%-16s %zu/%zu cases\n", name, pass, c.n);
	*total = c.n;
	tok_vocab_free(v);
	free_cases(&c);
	return pass;
}

static const char *const with_cases[] = {
	"bert-bge", "deepseek-coder", "deepseek-llm", "falcon", "gpt-2",
	"llama-spm", "mpt", "phi-3", "refact", "starcoder",
};

static void test_reference_cases(void **state)
{
	(void)state;
	size_t fails = 0;
	for (size_t i = 0; i < sizeof with_cases / sizeof with_cases[0]; i++) {
		size_t total, pass = run_cases(with_cases[i], &total);
		assert_true(total > 0);
		fails += total - pass;
	}
	assert_int_equal(fails, 0);
}

/* detokenize(tokenize(x)) == x for the lossless vocabularies. */
static void test_roundtrip(void **state)
{
	(void)state;
	static const char *const lossless[] = {
		"gpt-2", "llama-spm", "phi-3", "deepseek-coder", "deepseek-llm", "falcon", "refact", "starcoder",
	};
	static const char extra[] = "  leading and trailing  \n\n\t tabs \xf0\x9f\xa6\x99 \xe4\xbd\xa0\xe5\xa5\xbd ";
	/* invalid UTF-8 survives where the vocabulary has a piece for every
	 * byte (Falcon and StarCoder lack 0xC0, 0xFF, ...; deepseek defines
	 * user pieces for them) */
	static const char invalid[] = "invalid \xff\xfe bytes \xe2\x82 cut \xc0\xaf";
	for (size_t i = 0; i < sizeof lossless / sizeof lossless[0]; i++) {
		struct cases c;
		assert_true(load_cases(lossless[i], &c));
		tok_vocab *v = load_vocab(lossless[i]);
		bool bytes_ok = i < 3;
		for (size_t k = 0; k <= c.n + bytes_ok; k++) {
			const char *s = k < c.n ? c.text[k] : k == c.n ? extra : invalid;
			size_t n = k < c.n ? c.len[k] : k == c.n ? sizeof extra - 1 : sizeof invalid - 1, ni, nt;
			int32_t *ids = tokenize(v, s, n, false, false, &ni);
			char *t = detokenize(v, ids, ni, false, &nt);
			if (nt != n || memcmp(s, t, n) != 0)
				fail_msg("%s: round trip of case %zu '%.*s' gave '%.*s'", lossless[i], k, (int)n, s,
					 (int)nt, t);
			free(ids);
			free(t);
		}
		tok_vocab_free(v);
		free_cases(&c);
	}
}

/* Files without cases load and tokenize. */
static void test_vocab_only(void **state)
{
	(void)state;
	static const char *const names[] = {"baichuan", "gpt-neox"};
	for (size_t i = 0; i < 2; i++) {
		tok_vocab *v = load_vocab(names[i]);
		assert_true(tok_n_vocab(v) > 50000);
		size_t n, nt;
		const char *s = "Hello world! 1234 \xe4\xbd\xa0\xe5\xa5\xbd";
		int32_t *ids = tokenize(v, s, strlen(s), false, false, &n);
		assert_true(n > 3);
		char *t = detokenize(v, ids, n, true, &nt);
		assert_string_equal(t, s);
		free(t);
		free(ids);
		tok_vocab_free(v);
	}
	/* gpt-neox names no pre-tokenizer: the fallback is reported */
	tok_vocab *v = load_vocab("gpt-neox");
	assert_non_null(tok_vocab_warning(v));
	assert_non_null(strstr(tok_vocab_warning(v), "gpt-neox"));
	tok_vocab_free(v);
	v = load_vocab("gpt-2");
	assert_null(tok_vocab_warning(v));
	assert_string_equal(tok_vocab_pre(v), "gpt-2");
	tok_vocab_free(v);
}

static void test_unknown_pre(void **state)
{
	(void)state;
	gguf_writer *w = gguf_writer_new();
	const char *toks[] = {"a", "b", "ab", "Ġ", "<|end|>"};
	int32_t types[] = {1, 1, 1, 1, 3};
	const char *merges[] = {"a b"};
	gguf_writer_str(w, "tokenizer.ggml.model", "gpt2");
	gguf_writer_str(w, "tokenizer.ggml.pre", "no-such-pre");
	gguf_writer_arr_str(w, "tokenizer.ggml.tokens", toks, 5);
	gguf_writer_arr(w, "tokenizer.ggml.token_type", GGUF_T_I32, types, 5);
	gguf_writer_arr_str(w, "tokenizer.ggml.merges", merges, 1);
	void *buf;
	size_t size;
	tern_err e = {0};
	assert_int_equal(gguf_writer_write_mem(w, &buf, &size, &e), 0);
	gguf_writer_free(w);
	gguf_file *f;
	assert_int_equal(gguf_open_mem(&f, buf, size, NULL, &e), 0);
	tok_vocab *v;
	assert_int_equal(tok_vocab_load(&v, f, &e), 0);
	const char *warn = tok_vocab_warning(v);
	assert_non_null(warn);
	assert_non_null(strstr(warn, "no-such-pre"));
	assert_non_null(strstr(warn, "gpt-2"));
	size_t n;
	int32_t *ids = tokenize(v, "ab a<|end|>", 11, false, false, &n);
	/* "ab" merged, " " -> Ġ, "a", then "<" ... are not in this vocabulary */
	assert_true(n >= 3);
	assert_int_equal(ids[0], 2);
	assert_int_equal(ids[1], 3);
	assert_int_equal(ids[2], 0);
	free(ids);
	ids = tokenize(v, "ab<|end|>", 9, false, true, &n);
	assert_int_equal(n, 2);
	assert_int_equal(ids[1], 4);
	free(ids);
	tok_vocab_free(v);
	gguf_close(f);
	free(buf);
}

/* A vocabulary written in memory: model, pieces (all of type normal) and
 * BPE merges; bos/eos/unk ids pointed at nothing where the defaults
 * would name pieces. */
static tok_vocab *memory_vocab(const char *model, const char *const *toks, size_t n, const char *const *merges,
			       size_t nm)
{
	gguf_writer *w = gguf_writer_new();
	gguf_writer_str(w, "tokenizer.ggml.model", model);
	if (strcmp(model, "gpt2") == 0)
		gguf_writer_str(w, "tokenizer.ggml.pre", "gpt-2");
	gguf_writer_arr_str(w, "tokenizer.ggml.tokens", toks, n);
	if (nm)
		gguf_writer_arr_str(w, "tokenizer.ggml.merges", merges, nm);
	void *buf;
	size_t size;
	tern_err e = {0};
	assert_int_equal(gguf_writer_write_mem(w, &buf, &size, &e), 0);
	gguf_writer_free(w);
	gguf_file *f;
	assert_int_equal(gguf_open_mem(&f, buf, size, NULL, &e), 0);
	tok_vocab *v;
	if (tok_vocab_load(&v, f, &e))
		fail_msg("%s", e.msg);
	gguf_close(f);
	free(buf);
	return v;
}

/* Tokenize; the ids must be want[0..nwant) and the dropped count
 * want_dropped, both from the sizing call and from the real one. */
static void expect_dropped(const tok_vocab *v, const char *text, size_t len, const int32_t *want, size_t nwant,
			   size_t want_dropped)
{
	tern_err e = {0};
	struct tok_encode_stats st = {.dropped_bytes = 12345};
	size_t n = 0;
	assert_int_equal(tok_tokenize(v, text, len, false, false, NULL, 0, &n, &st, &e), 0);
	assert_int_equal(n, nwant);
	assert_int_equal(st.dropped_bytes, want_dropped);
	int32_t *ids = malloc((n + 1) * sizeof *ids);
	st.dropped_bytes = 12345;
	assert_int_equal(tok_tokenize(v, text, len, false, false, ids, n, &n, &st, &e), 0);
	assert_int_equal(st.dropped_bytes, want_dropped);
	for (size_t i = 0; i < nwant; i++)
		assert_int_equal(ids[i], want[i]);
	free(ids);
}

/* Bytes without a piece are counted, also when a long text (which turns
 * the per-call piece cache on) repeats the pieces that hold them. */
static void test_dropped_bytes(void **state)
{
	(void)state;
	/* byte-level BPE without pieces for ' ' (Ġ) or 'x' */
	static const char *const bpe[] = {"a", "b", "ab"};
	static const char *const merges[] = {"a b"};
	tok_vocab *v = memory_vocab("gpt2", bpe, 3, merges, 1);
	expect_dropped(v, "abab", 4, (const int32_t[]){2, 2}, 2, 0);
	expect_dropped(v, "x", 1, NULL, 0, 1);
	expect_dropped(v, "abxa b", 6, (const int32_t[]){2, 0, 1}, 3, 2);
	size_t reps = 3000, len = 3 + 4 * reps;
	char *text = malloc(len + 1);
	int32_t *want = malloc((reps + 1) * sizeof *want);
	memcpy(text, "abx", 3);
	want[0] = 2;
	for (size_t i = 0; i < reps; i++) {
		memcpy(text + 3 + 4 * i, " abx", 4); /* one piece: ' ' and 'x' dropped */
		want[i + 1] = 2;
	}
	expect_dropped(v, text, len, want, reps + 1, 1 + 2 * reps);
	tok_vocab_free(v);

	/* WordPiece with no [UNK] (the default id 100 is past the end):
	 * a word without pieces and invalid UTF-8 are dropped */
	static const char *const wpm[] = {"[PAD]", "\xe2\x96\x81hello", "\xe2\x96\x81world", "s"};
	v = memory_vocab("bert", wpm, 4, NULL, 0);
	assert_int_equal(tok_special_id(v, TOK_UNK), -1);
	const char *t = "Hello xyz worlds \xff\xe2\x82";
	expect_dropped(v, t, strlen(t), (const int32_t[]){1, 2, 3}, 3, 6);
	for (size_t i = 0; i < reps; i++)
		memcpy(text + 4 * i, "xyz ", 4);
	expect_dropped(v, text, 4 * reps, NULL, 0, 3 * reps);
	tok_vocab_free(v);
	free(want);
	free(text);
}

static void test_specials(void **state)
{
	(void)state;
	tok_vocab *v = load_vocab("llama-spm");
	size_t n, nt;
	/* BOS from metadata with add_special */
	int32_t *ids = tokenize(v, "Hello", 5, true, false, &n);
	assert_int_equal(ids[0], 1);
	assert_int_equal(n, 2);
	char *t = detokenize(v, ids, n, true, &nt);
	assert_string_equal(t, "Hello");
	free(t);
	t = detokenize(v, ids, n, false, &nt);
	assert_string_equal(t, "<s> Hello");
	free(t);
	free(ids);
	/* control text: parsed only with parse_special */
	ids = tokenize(v, "a</s>b", 6, false, true, &n);
	assert_int_equal(n, 3);
	assert_int_equal(ids[1], 2);
	free(ids);
	ids = tokenize(v, "a</s>b", 6, false, false, &n);
	assert_true(n > 3);
	for (size_t i = 0; i < n; i++)
		assert_int_not_equal(ids[i], 2);
	free(ids);
	assert_int_equal(tok_special_id(v, TOK_EOS), 2);
	assert_true(tok_is_eog(v, 2));
	assert_false(tok_is_eog(v, 1));
	tok_vocab_free(v);

	/* BERT: [CLS] ... [SEP] */
	v = load_vocab("bert-bge");
	ids = tokenize(v, "Hello world", 11, true, false, &n);
	assert_int_equal(n, 4);
	assert_int_equal(ids[0], 101);
	assert_int_equal(ids[3], 102);
	free(ids);
	tok_vocab_free(v);

	/* GPT-2: no BOS unless the metadata says; <|endoftext|> is control */
	v = load_vocab("gpt-2");
	ids = tokenize(v, "x<|endoftext|>", 14, true, true, &n);
	assert_int_equal(n, 2);
	assert_int_equal(ids[1], 50256);
	t = detokenize(v, ids, n, true, &nt);
	assert_string_equal(t, "x");
	free(t);
	free(ids);
	tok_vocab_free(v);

	/* user-defined pieces are always recognised (GPT-NeoX space runs) */
	v = load_vocab("mpt");
	const char *sp = "a                        b";
	ids = tokenize(v, sp, strlen(sp), false, false, &n);
	assert_int_equal(n, 3);
	free(ids);
	tok_vocab_free(v);
}

/* The stream never emits part of a character and adds up to the whole. */
static void stream_check(const tok_vocab *v, const char *s)
{
	size_t n, nt;
	int32_t *ids = tokenize(v, s, strlen(s), false, false, &n);
	char *whole = detokenize(v, ids, n, true, &nt);
	tok_stream *st;
	tern_err e = {0};
	assert_int_equal(tok_stream_new(&st, v, true, &e), 0);
	size_t cap = TOK_STREAM_MAX_OUT(tok_max_piece_len(v));
	char *buf = malloc(cap), *acc = malloc(3 * nt + 16);
	size_t na = 0;
	for (size_t i = 0; i < n; i++) {
		size_t k;
		assert_int_equal(tok_stream_push(st, ids[i], buf, cap, &k, &e), 0);
		/* every chunk is valid UTF-8 on its own */
		for (size_t j = 0; j < k;) {
			unsigned c = (unsigned char)buf[j];
			size_t l = c < 0x80 ? 1 : c < 0xe0 ? 2 : c < 0xf0 ? 3 : 4;
			assert_true(c < 0x80 || c >= 0xc2);
			assert_true(j + l <= k);
			for (size_t m = 1; m < l; m++)
				assert_int_equal((unsigned char)buf[j + m] & 0xc0, 0x80);
			j += l;
		}
		memcpy(acc + na, buf, k);
		na += k;
	}
	size_t k;
	assert_int_equal(tok_stream_flush(st, buf, cap, &k), 0);
	memcpy(acc + na, buf, k);
	na += k;
	assert_int_equal(na, nt);
	assert_memory_equal(acc, whole, nt);
	tok_stream_free(st);
	free(buf);
	free(acc);
	free(whole);
	free(ids);
}

static void test_stream(void **state)
{
	(void)state;
	const char *s = "emoji \xf0\x9f\xa6\x99\xf0\x9f\x98\xb6\xe2\x80\x8d\xf0\x9f\x8c\xab\xef\xb8\x8f, "
			"\xe1\x80\x80\xe1\x80\xad\xe1\x80\xaf and \xe4\xbd\xa0\xe5\xa5\xbd\xe4\xb8\x96\xe7\x95\x8c";
	static const char *const names[] = {"llama-spm", "gpt-2", "phi-3", "deepseek-llm"};
	for (size_t i = 0; i < 4; i++) {
		tok_vocab *v = load_vocab(names[i]);
		stream_check(v, s);
		tok_vocab_free(v);
	}
	/* an incomplete sequence at the end comes out as U+FFFD */
	tok_vocab *v = load_vocab("llama-spm");
	tok_stream *st;
	tern_err e = {0};
	assert_int_equal(tok_stream_new(&st, v, true, &e), 0);
	char buf[64];
	size_t k;
	int32_t id = tok_find(v, "<0xE4>", 6);
	assert_true(id >= 0);
	assert_int_equal(tok_stream_push(st, id, buf, sizeof buf, &k, &e), 0);
	assert_int_equal(k, 0);
	assert_int_equal(tok_stream_flush(st, buf, sizeof buf, &k), 0);
	assert_int_equal(k, 3);
	assert_memory_equal(buf, "\xef\xbf\xbd", 3);
	tok_stream_free(st);
	tok_vocab_free(v);
}

/* Whisper's legacy vocabulary: raw-byte pieces, decoded by concatenation. */
static void test_whisper(void **state)
{
	(void)state;
	char path[512];
	snprintf(path, sizeof path, "%s/models/whisper-vocab-only-tiny.bin", test_data_dir());
	ggml_legacy *m;
	tern_err e = {0};
	if (ggml_legacy_open(&m, path, &e))
		fail_msg("%s: %s", path, e.msg);
	uint64_t n = ggml_legacy_n_vocab(m);
	assert_true(n >= 50257);
	struct tok_piece *p = malloc(n * sizeof *p);
	for (uint64_t i = 0; i < n; i++) {
		struct tern_str s = ggml_legacy_token(m, i);
		p[i].ptr = s.ptr;
		p[i].len = (size_t)s.len;
	}
	tok_vocab *v;
	assert_int_equal(tok_vocab_from_pieces(&v, p, (size_t)n, &e), 0);
	free(p);
	ggml_legacy_close(m);
	const char *s = " And so my fellow Americans, ask not what your country can do for you.";
	size_t ni, nt;
	int32_t *ids = tokenize(v, s, strlen(s), false, false, &ni);
	assert_true(ni > 10 && ni < 30);
	expect_dropped(v, s, strlen(s), ids, ni, 0);
	char *t = detokenize(v, ids, ni, true, &nt);
	assert_string_equal(t, s);
	free(t);
	free(ids);
	/* ids decode to their pieces */
	int32_t hello = tok_find(v, " Hello", 6);
	assert_true(hello > 0);
	struct tok_piece hp = tok_token_bytes(v, hello);
	assert_int_equal(hp.len, 6);
	assert_memory_equal(hp.ptr, " Hello", 6);
	int32_t two[2] = {hello, tok_find(v, " world", 6)};
	assert_true(two[1] > 0);
	t = detokenize(v, two, 2, true, &nt);
	assert_string_equal(t, " Hello world");
	free(t);
	/* the multilingual vocabulary has no piece for these emoji bytes */
	expect_dropped(v, "a\xf0\x9f\x98\x80", 5, (const int32_t[]){tok_find(v, "a", 1)}, 1, 4);
	tok_vocab_free(v);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_reference_cases),
		cmocka_unit_test(test_roundtrip),
		cmocka_unit_test(test_vocab_only),
		cmocka_unit_test(test_unknown_pre),
		cmocka_unit_test(test_dropped_bytes),
		cmocka_unit_test(test_specials),
		cmocka_unit_test(test_stream),
		cmocka_unit_test(test_whisper),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
