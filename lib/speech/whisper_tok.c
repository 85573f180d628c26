/* whisper_tok.c - text to Whisper tokens (whisper_tokenize in
 * whisper_full.h), for initial prompts: whisper.cpp splits with GPT-2's
 * pattern under std::regex's "C" locale classes (so bytes of UTF-8
 * sequences are "other"), then takes longest vocabulary matches from the
 * left of each word - not the BPE merges, which its files do not carry. */
#include "lib/speech/whisper_full.h"

#include <stdlib.h>
#include <string.h>

struct entry {
	const char *s;
	uint32_t len;
	int32_t id;
};

static int entry_cmp(const void *a, const void *b)
{
	const struct entry *x = a, *y = b;
	uint32_t n = x->len < y->len ? x->len : y->len;
	int c = memcmp(x->s, y->s, n);
	if (c)
		return c;
	if (x->len != y->len)
		return x->len < y->len ? -1 : 1;
	return x->id < y->id ? -1 : x->id > y->id;
}

/* the id of the token s[len] (the last of equal strings, as a map
 * assigned in order keeps it), -1 when none */
static int32_t lookup(const struct entry *v, size_t nv, const char *s, uint32_t len)
{
	size_t a = 0, b = nv;
	const struct entry key = {s, len, INT32_MAX};
	while (a < b) { /* the first entry above key */
		size_t mid = a + (b - a) / 2;
		if (entry_cmp(&v[mid], &key) <= 0)
			a = mid + 1;
		else
			b = mid;
	}
	if (a == 0 || v[a - 1].len != len || memcmp(v[a - 1].s, s, len))
		return -1;
	return v[a - 1].id;
}

static bool is_space(unsigned char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
}
static bool is_alpha(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}
static bool is_digit(unsigned char c)
{
	return c >= '0' && c <= '9';
}
static bool is_other(unsigned char c)
{
	return !is_space(c) && !is_alpha(c) && !is_digit(c);
}

/* the length of the word at t[i..n): the pattern's alternatives in order */
static size_t word_len(const unsigned char *t, size_t i, size_t n)
{
	static const char *const contr[] = {"'s", "'t", "'re", "'ve", "'m", "'ll", "'d"};
	for (int k = 0; k < 7; k++) {
		size_t l = strlen(contr[k]);
		if (n - i >= l && !memcmp(t + i, contr[k], l))
			return l;
	}
	bool (*const cls[3])(unsigned char) = {is_alpha, is_digit, is_other};
	for (int k = 0; k < 3; k++) {
		size_t j = i + (t[i] == ' ');
		if (j < n && cls[k](t[j])) {
			while (j < n && cls[k](t[j]))
				j++;
			return j - i;
		}
	}
	/* whitespace: all of it when it ends the text or more than one char
	 * precedes a non-space (which keeps its own space), else one run */
	size_t j = i;
	while (j < n && is_space(t[j]))
		j++;
	if (j == n || j - i == 1)
		return j - i;
	return j - i - 1;
}

int whisper_tokenize(const struct whisper_model *m, const char *text, int32_t **out, int *n_out, tern_err *e)
{
	*out = NULL;
	*n_out = 0;
	const size_t nv = ggml_legacy_n_vocab(m->file);
	struct entry *v = malloc(sizeof(*v) * (nv ? nv : 1));
	const size_t n = strlen(text);
	int32_t *toks = malloc(sizeof(int32_t) * (n ? n : 1)); /* at most one token per byte */
	if (!v || !toks) {
		free(v);
		free(toks);
		return tern_errf(e, TERN_ENOMEM, "out of memory for the tokenizer");
	}
	for (size_t i = 0; i < nv; i++) {
		struct tern_str s = ggml_legacy_token(m->file, i);
		v[i] = (struct entry){s.ptr, (uint32_t)s.len, (int32_t)i};
	}
	qsort(v, nv, sizeof(*v), entry_cmp);
	const unsigned char *t = (const unsigned char *)text;
	int k = 0;
	for (size_t i = 0; i < n;) {
		size_t wl = word_len(t, i, n), end = i + wl;
		while (i < end) {
			size_t j = end;
			int32_t id = -1;
			for (; j > i; j--)
				if ((id = lookup(v, nv, text + i, (uint32_t)(j - i))) >= 0)
					break;
			if (id >= 0) {
				toks[k++] = id;
				i = j;
			} else {
				i++; /* whisper.cpp: "unknown token", skipped */
			}
		}
	}
	free(v);
	*out = toks;
	*n_out = k;
	return 0;
}
