/* tok_vocab.c - building the vocabulary: tokenizer.ggml.* metadata (or a
 * plain list of pieces) -> token table, O(1) piece and merge lookups, the
 * trie of special pieces, special ids and flags.
 *
 * Defaults follow what the GGUF converters assume when a key is absent
 * (e.g. SPM adds BOS and a space prefix, BERT adds [CLS] ... [SEP]). */
#include "tokenizer/tok_internal.h"

#include "lib/core/quote.h"
#include "lib/core/utf8.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- lookups ------------------------------------------------------------ */

static struct tern_str text_key(const void *ctx, size_t id)
{
	const tok_vocab *v = ctx;
	const struct tok_entry *t = &v->tok[id];
	return (struct tern_str){v->arena + t->off, t->len};
}

static struct tern_str bytes_key(const void *ctx, size_t id)
{
	const tok_vocab *v = ctx;
	return (struct tern_str){tok_bytes(v, (int32_t)id), v->tok[id].plen};
}

int32_t tok_merge_rank(const struct tok_merges *m, int32_t left, int32_t right, int32_t *result)
{
	if (!m->n || left < 0 || right < 0)
		return -1;
	uint64_t key = ((uint64_t)(uint32_t)left << 32 | (uint32_t)right) + 1;
	for (uint64_t i = tern_mix64(key) & m->mask;; i = (i + 1) & m->mask) {
		if (m->key[i] == key) {
			*result = (int32_t)(uint32_t)m->val[i];
			return (int32_t)(m->val[i] >> 32);
		}
		if (!m->key[i])
			return -1;
	}
}

static void merge_put(struct tok_merges *m, int32_t left, int32_t right, uint32_t rank, int32_t result)
{
	uint64_t key = ((uint64_t)(uint32_t)left << 32 | (uint32_t)right) + 1;
	uint64_t i = tern_mix64(key) & m->mask;
	for (; m->key[i]; i = (i + 1) & m->mask)
		if (m->key[i] == key)
			return; /* a repeated pair keeps its first (best) rank */
	m->key[i] = key;
	m->val[i] = (uint64_t)rank << 32 | (uint32_t)result;
	m->n++;
}

/* ---- GPT-2 byte map ----------------------------------------------------- */

/* Byte-level BPE writes every byte as one printable code point: bytes that
 * are printable Latin-1 stand for themselves, the others are moved to
 * U+0100 and up, in byte order. */
static uint32_t byte_to_cp(unsigned b)
{
	if ((b >= 33 && b <= 126) || (b >= 161 && b <= 172) || b >= 174)
		return b;
	unsigned k = 0;
	for (unsigned c = 0; c < b; c++)
		if (!((c >= 33 && c <= 126) || (c >= 161 && c <= 172) || c >= 174))
			k++;
	return 256 + k;
}

static int cp_to_byte(uint32_t cp)
{
	static int16_t inv[324];
	static bool ready;
	if (!ready) { /* idempotent; concurrent first use writes equal values */
		for (unsigned i = 0; i < 324; i++)
			inv[i] = -1;
		for (unsigned b = 0; b < 256; b++)
			inv[byte_to_cp(b)] = (int16_t)b;
		ready = true;
	}
	return cp < 324 ? inv[cp] : -1;
}

/* Byte-level decode of s into out; false if a character is outside the
 * map (the piece is then kept as written). */
static bool bytelevel_decode(const char *s, size_t n, char *out, size_t *outn)
{
	size_t o = 0;
	for (size_t i = 0; i < n;) {
		uint32_t cp;
		size_t l = tern_utf8_decode((const unsigned char *)s + i, n - i, TERN_UTF8_STRICT, &cp);
		int b = l ? cp_to_byte(cp) : -1;
		if (b < 0)
			return false;
		out[o++] = (char)b;
		i += l;
	}
	*outn = o;
	return true;
}

static int hexval(int c)
{
	return c >= '0' && c <= '9' ? c - '0' : c >= 'A' && c <= 'F' ? c - 'A' + 10 : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* "<0xAB>" -> 0xAB, else -1 */
static int byte_piece(const char *s, size_t n)
{
	if (n != 6 || memcmp(s, "<0x", 3) != 0 || s[5] != '>')
		return -1;
	int h = hexval((unsigned char)s[3]), l = hexval((unsigned char)s[4]);
	return h < 0 || l < 0 ? -1 : h * 16 + l;
}

/* ---- building ----------------------------------------------------------- */

static tok_vocab *vocab_alloc(size_t n, size_t text_bytes)
{
	tok_vocab *v = calloc(1, sizeof *v);
	if (!v)
		return NULL;
	v->tok = calloc(n ? n : 1, sizeof *v->tok);
	/* room for the text and the decoded piece of every token (only the
	 * pieces that differ from their text are stored); a decoded piece is
	 * never longer than its text plus one byte */
	v->arena = malloc(2 * text_bytes + n + 16);
	if (!v->tok || !v->arena) {
		free(v->tok);
		free(v->arena);
		free(v);
		return NULL;
	}
	v->n = (int32_t)n;
	for (int i = 0; i < TOK_SPECIAL_COUNT; i++)
		v->special[i] = -1;
	for (int i = 0; i < 256; i++) {
		v->byte_tok[i] = -1;
		v->trie_root[i] = -1;
	}
	return v;
}

static void set_text(tok_vocab *v, int32_t id, const char *s, size_t n)
{
	struct tok_entry *t = &v->tok[id];
	t->off = (uint32_t)v->arena_len;
	t->len = (unsigned)n;
	memcpy(v->arena + v->arena_len, s, n);
	v->arena_len += n;
	if (n > v->max_len)
		v->max_len = n;
}

/* Work out the bytes token id stands for, per algorithm (its text, type
 * and the model set, its text the last in the arena): stored right after
 * the text where they differ from it, else the text is the piece. */
static void make_piece(tok_vocab *v, int32_t id)
{
	struct tok_entry *t = &v->tok[id];
	const char *s = v->arena + t->off;
	char *out = v->arena + v->arena_len;
	size_t o = 0;
	bool same = false; /* the piece is the text as it is */
	int b = t->type == TOK_TYPE_BYTE ? byte_piece(s, t->len) : -1;
	if (b >= 0) {
		out[o++] = (char)b;
	} else if (v->model == TOK_MODEL_BPE) {
		if (bytelevel_decode(s, t->len, out, &o))
			t->pdecoded = 1;
		else
			same = true;
	} else if ((v->model == TOK_MODEL_SPM || v->model == TOK_MODEL_WPM) &&
		   t->type != TOK_TYPE_CONTROL && t->type != TOK_TYPE_UNKNOWN) {
		for (size_t i = 0; i < t->len; i++) {
			if (i + 2 < t->len && memcmp(s + i, "\xe2\x96\x81", 3) == 0) {
				out[o++] = ' ';
				i += 2;
			} else {
				out[o++] = s[i];
			}
		}
	} else {
		same = true;
	}
	if (same)
		o = t->len;
	t->plen = (unsigned)o;
	t->papart = !same && (o != t->len || memcmp(out, s, o) != 0);
	if (t->papart)
		v->arena_len += o;
	if (o > v->max_plen)
		v->max_plen = o;
}

static int trie_add_node(tok_vocab *v, uint8_t byte)
{
	if (v->n_trie == v->cap_trie) {
		int32_t cap = v->cap_trie ? 2 * v->cap_trie : 256;
		struct tok_trie_node *t = realloc(v->trie, (size_t)cap * sizeof *t);
		if (!t)
			return -1;
		v->trie = t;
		v->cap_trie = cap;
	}
	struct tok_trie_node *nd = &v->trie[v->n_trie];
	nd->child = nd->sibling = nd->id = -1;
	nd->byte = byte;
	return v->n_trie++;
}

static int trie_insert(tok_vocab *v, int32_t id)
{
	const unsigned char *s = (const unsigned char *)tok_text(v, id);
	size_t n = v->tok[id].len;
	if (n == 0)
		return 0;
	int32_t node = v->trie_root[s[0]];
	if (node < 0) {
		if ((node = trie_add_node(v, s[0])) < 0)
			return -1;
		v->trie_root[s[0]] = node;
	}
	for (size_t i = 1; i < n; i++) {
		int32_t c = v->trie[node].child;
		while (c >= 0 && v->trie[c].byte != s[i])
			c = v->trie[c].sibling;
		if (c < 0) {
			if ((c = trie_add_node(v, s[i])) < 0)
				return -1;
			v->trie[c].sibling = v->trie[node].child;
			v->trie[node].child = c;
		}
		node = c;
	}
	if (v->trie[node].id < 0)
		v->trie[node].id = id;
	v->special_first[s[0]] = true;
	return 0;
}

static bool is_eog_text(const char *s, size_t n)
{
	static const char *const eog[] = {
		"<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>",
		"<|end_of_text|>", "<EOT>", "_<EOT>", "<\xef\xbd\x9c" "end\xe2\x96\x81of\xe2\x96\x81sentence\xef\xbd\x9c>",
		"<|eom_id|>", "<end_of_utterance>", "<|return|>", "<|call|>",
	};
	for (size_t i = 0; i < sizeof eog / sizeof eog[0]; i++)
		if (strlen(eog[i]) == n && memcmp(eog[i], s, n) == 0)
			return true;
	return false;
}

/* ---- lookups, once texts, types and model are set ----------------------- */

/* Stored text -> id for every vocabulary; for the byte-level ones (BPE,
 * RAW) also decoded bytes -> id and the id of each single byte. */
static int build_maps(tok_vocab *v, tern_err *e)
{
	/* tern_strmap_add keeps the first id of a repeated piece */
	if (tern_strmap_init(&v->by_text, (size_t)v->n, text_key, v))
		return tern_errf(e, TERN_ENOMEM, "tokenizer: out of memory");
	for (int32_t id = 0; id < v->n; id++)
		if (v->tok[id].len)
			tern_strmap_add(&v->by_text, (size_t)id, NULL);
	if (v->model != TOK_MODEL_BPE && v->model != TOK_MODEL_RAW)
		return 0;
	if (tern_strmap_init(&v->by_bytes, (size_t)v->n, bytes_key, v))
		return tern_errf(e, TERN_ENOMEM, "tokenizer: out of memory");
	for (int32_t id = 0; id < v->n; id++)
		if (v->tok[id].plen && (v->model == TOK_MODEL_RAW || v->tok[id].pdecoded))
			tern_strmap_add(&v->by_bytes, (size_t)id, NULL);
	for (int b = 0; b < 256; b++) {
		char c = (char)b;
		v->byte_tok[b] = tok_map_get(&v->by_bytes, &c, 1);
	}
	return 0;
}

/* Does "▁" follow another character in s? (A leading run of them does
 * not count.) */
static bool mark_inside(const char *s, size_t len)
{
	bool prev_mark = true;
	for (size_t i = 0; i < len;) {
		bool mark = i + 3 <= len && memcmp(s + i, "\xe2\x96\x81", 3) == 0;
		if (mark && !prev_mark)
			return true;
		prev_mark = mark;
		i += mark ? 3 : 1;
	}
	return false;
}

/* SPM: whether words can be merged one at a time (no piece has "▁" after
 * another character), and the byte-fallback id of each byte: its <0xXX>
 * piece, else the byte itself as a piece. */
static void spm_tables(tok_vocab *v)
{
	v->spm_word_split = true;
	for (int32_t id = 0; id < v->n && v->spm_word_split; id++)
		if (mark_inside(tok_text(v, id), v->tok[id].len))
			v->spm_word_split = false;
	static const char hex[] = "0123456789ABCDEF";
	for (int b = 0; b < 256; b++) {
		char buf[8] = {'<', '0', 'x', hex[b >> 4], hex[b & 15], '>'};
		int32_t id = tok_map_get(&v->by_text, buf, 6);
		if (id < 0) {
			buf[0] = (char)b;
			id = tok_map_get(&v->by_text, buf, 1);
		}
		v->byte_tok[b] = id;
	}
}

/* The pieces found in text before the algorithm runs: control, unknown
 * and user-defined tokens. */
static int build_trie(tok_vocab *v, tern_err *e)
{
	if (v->model == TOK_MODEL_RAW || v->model == TOK_MODEL_NONE)
		return 0;
	for (int32_t id = 0; id < v->n; id++) {
		uint8_t t = v->tok[id].type;
		if ((t == TOK_TYPE_CONTROL || t == TOK_TYPE_USER_DEFINED || t == TOK_TYPE_UNKNOWN) && trie_insert(v, id))
			return tern_errf(e, TERN_ENOMEM, "tokenizer: out of memory");
	}
	return 0;
}

/* End-of-generation ids: eos/eot/eom plus the usual end-of-turn pieces,
 * which also give eot when the file names none. At most 13 pieces and the
 * three named ids. */
static int build_eog(tok_vocab *v, tern_err *e)
{
	v->eog = malloc(sizeof *v->eog * 16);
	if (!v->eog)
		return tern_errf(e, TERN_ENOMEM, "tokenizer: out of memory");
	for (int32_t id = 0; id < v->n && v->model != TOK_MODEL_RAW; id++) {
		if (!is_eog_text(tok_text(v, id), v->tok[id].len))
			continue;
		if (v->special[TOK_EOT] < 0 && !(v->tok[id].len == 9 && memcmp(tok_text(v, id), "<|eom_id|>", 9) == 0))
			v->special[TOK_EOT] = id;
		if (v->n_eog < 13)
			v->eog[v->n_eog++] = id;
	}
	int32_t sp[3] = {v->special[TOK_EOS], v->special[TOK_EOT], v->special[TOK_EOM]};
	for (int i = 0; i < 3; i++) {
		bool have = sp[i] < 0;
		for (int j = 0; j < v->n_eog && !have; j++)
			have = v->eog[j] == sp[i];
		if (!have)
			v->eog[v->n_eog++] = sp[i];
	}
	return 0;
}

static int finish(tok_vocab *v, tern_err *e)
{
	int rc = build_maps(v, e);
	if (!rc && v->model == TOK_MODEL_SPM)
		spm_tables(v);
	if (!rc)
		rc = build_trie(v, e);
	if (!rc)
		rc = build_eog(v, e);
	return rc;
}

/* ---- from GGUF metadata ------------------------------------------------- */

static bool get_bool(const gguf_file *f, const char *key, bool *out)
{
	const struct gguf_kv *kv = gguf_find(f, key);
	if (!kv)
		return false;
	if (kv->v.type == GGUF_T_BOOL || gguf_value_is_int(&kv->v)) {
		*out = gguf_value_i64(&kv->v) != 0;
		return true;
	}
	return false;
}

static void get_id(const gguf_file *f, const char *key, int32_t n, int32_t *id, tok_vocab *v)
{
	const struct gguf_kv *kv = gguf_find(f, key);
	if (!kv || !gguf_value_is_int(&kv->v))
		return;
	int64_t x = gguf_value_i64(&kv->v);
	if (x >= 0 && x < n) {
		*id = (int32_t)x;
	} else if (x != -1 && !v->warning[0]) {
		snprintf(v->warning, sizeof v->warning, "%s = %lld is outside the vocabulary (%d tokens); ignored",
			 key, (long long)x, n);
	}
}

static void warn(tok_vocab *v, const char *msg)
{
	size_t l = strlen(v->warning);
	if (l && l + 3 < sizeof v->warning)
		strcat(v->warning, "; ");
	strncat(v->warning, msg, sizeof v->warning - strlen(v->warning) - 1);
}

static int read_model(const gguf_file *f, enum tok_model *model, tern_err *e)
{
	struct tern_str s = {0};
	int rc = gguf_get_str(f, "tokenizer.ggml.model", &s, e);
	if (rc)
		return rc;
	if (tern_str_eq(s, "llama"))
		*model = TOK_MODEL_SPM;
	else if (tern_str_eq(s, "gpt2"))
		*model = TOK_MODEL_BPE;
	else if (tern_str_eq(s, "bert"))
		*model = TOK_MODEL_WPM;
	else if (tern_str_eq(s, "no_vocab") || tern_str_eq(s, "none"))
		*model = TOK_MODEL_NONE;
	else {
		char q[TERN_QUOTE_MAX];
		return tern_errf(e, TERN_EUNSUPPORTED, "tokenizer.ggml.model '%s' is not supported",
				 tern_quote_str(q, sizeof q, s));
	}
	return 0;
}

/* The token list and the arrays that run beside it, checked. */
struct token_arrays {
	const struct gguf_kv *tokens;
	const struct gguf_value *scores, *types; /* NULL where absent */
	uint64_t n;
	size_t text_bytes;
};

static int read_token_list(struct token_arrays *ta, tern_err *e)
{
	const struct gguf_kv *tokens = ta->tokens;
	if (!tokens)
		return tern_errf(e, TERN_ENOTFOUND, "tokenizer.ggml.tokens: key not found");
	if (tokens->v.type != GGUF_T_ARRAY || tokens->v.elem != GGUF_T_STRING)
		return tern_errf(e, TERN_ETYPE, "tokenizer.ggml.tokens: not an array of strings");
	ta->n = tokens->v.n;
	if (ta->n == 0 || ta->n > (1u << 30))
		return tern_errf(e, TERN_EFORMAT, "tokenizer.ggml.tokens: %llu tokens", (unsigned long long)ta->n);
	return 0;
}

static int read_scores_types(const gguf_file *f, struct token_arrays *ta, tern_err *e)
{
	const struct gguf_kv *kv;
	if ((kv = gguf_find(f, "tokenizer.ggml.scores"))) {
		if (kv->v.type != GGUF_T_ARRAY || (kv->v.elem != GGUF_T_F32 && kv->v.elem != GGUF_T_I32) ||
		    kv->v.n < ta->n)
			return tern_errf(e, TERN_EFORMAT, "tokenizer.ggml.scores: expected %llu f32 values",
					 (unsigned long long)ta->n);
		ta->scores = &kv->v;
	}
	if ((kv = gguf_find(f, "tokenizer.ggml.token_type"))) {
		if (kv->v.type != GGUF_T_ARRAY || (kv->v.elem != GGUF_T_I32 && kv->v.elem != GGUF_T_U32) ||
		    kv->v.n < ta->n)
			return tern_errf(e, TERN_EFORMAT, "tokenizer.ggml.token_type: expected %llu i32 values",
					 (unsigned long long)ta->n);
		ta->types = &kv->v;
	}
	return 0;
}

/* Total text size, with every piece under 16 MiB and the whole under 2 GiB
 * so that 32-bit arena offsets hold. */
static int measure_text(struct token_arrays *ta, tern_err *e)
{
	size_t bytes = 0;
	for (uint64_t i = 0; i < ta->n; i++) {
		struct tern_str s = gguf_kv_arr_str(ta->tokens, i);
		if (s.len >= (1u << 24))
			return tern_errf(e, TERN_EFORMAT, "tokenizer.ggml.tokens[%llu]: %llu bytes",
					 (unsigned long long)i, (unsigned long long)s.len);
		bytes += s.len;
	}
	if (bytes >= (1ull << 31))
		return tern_errf(e, TERN_EFORMAT, "tokenizer.ggml.tokens: too large");
	ta->text_bytes = bytes;
	return 0;
}

static void fill_tokens(tok_vocab *v, const struct token_arrays *ta)
{
	for (uint64_t i = 0; i < ta->n; i++) {
		struct tern_str s = gguf_kv_arr_str(ta->tokens, i);
		set_text(v, (int32_t)i, s.ptr, (size_t)s.len);
		struct tok_entry *t = &v->tok[i];
		t->type = TOK_TYPE_NORMAL;
		if (ta->types) {
			int32_t ty;
			memcpy(&ty, ta->types->p + 4 * i, 4);
			t->type = ty >= 0 && ty <= 6 ? (uint8_t)ty : TOK_TYPE_UNDEFINED;
		}
		if (ta->scores && ta->scores->elem == GGUF_T_F32) {
			memcpy(&t->score, ta->scores->p + 4 * i, 4);
		} else if (ta->scores) {
			int32_t x;
			memcpy(&x, ta->scores->p + 4 * i, 4);
			t->score = (float)x;
		}
		make_piece(v, (int32_t)i);
	}
}

/* BPE: the pre-tokenizer named by tokenizer.ggml.pre, with a warning
 * naming the fallback when the name is unknown or absent, and the flags
 * that come with it. */
static void choose_pre(tok_vocab *v, const gguf_file *f)
{
	struct tern_str pre = {0};
	bool have_pre = gguf_get_str(f, "tokenizer.ggml.pre", &pre, NULL) == 0;
	char msg[200];
	if (have_pre) {
		v->pre = tok_pre_find(pre.ptr, (size_t)pre.len);
		if (!v->pre) {
			v->pre = tok_pre_find("gpt-2", 5);
			char q[TERN_QUOTE_MAX];
			snprintf(msg, sizeof msg,
				 "unknown pre-tokenizer '%s' (tokenizer.ggml.pre); using 'gpt-2' instead, "
				 "token ids may differ from the model's own tokenizer",
				 tern_quote_str(q, sizeof q, pre));
			warn(v, msg);
		}
	} else {
		struct tern_str arch = {0};
		bool neox = gguf_get_str(f, "general.architecture", &arch, NULL) == 0 && tern_str_eq(arch, "gptneox");
		v->pre = tok_pre_find(neox ? "gpt-neox" : "gpt-2", neox ? 8 : 5);
		snprintf(msg, sizeof msg, "tokenizer.ggml.pre is missing; using '%s'%s", neox ? "gpt-neox" : "gpt-2",
			 neox ? " for architecture gptneox" : "");
		warn(v, msg);
	}
	bool add_bos, no_bos;
	tok_pre_flags(v->pre, &v->ignore_merges, &v->nfc, &add_bos, &no_bos);
	v->add_bos = add_bos;
	if (no_bos)
		v->special[TOK_BOS] = -1;
	if (have_pre && (tern_str_eq(pre, "jina-v1-en") || tern_str_eq(pre, "jina-v2-code") ||
			 tern_str_eq(pre, "roberta-bpe")))
		v->add_sep = true;
	tok_pre_first_name(v->pre, v->pre_name, sizeof v->pre_name);
}

/* What each algorithm assumes when the file does not say. */
static void set_defaults(tok_vocab *v, const gguf_file *f)
{
	switch (v->model) {
	case TOK_MODEL_SPM:
		v->special[TOK_BOS] = 1;
		v->special[TOK_EOS] = 2;
		v->special[TOK_UNK] = 0;
		v->add_space_prefix = true;
		v->add_bos = true;
		break;
	case TOK_MODEL_WPM:
		v->special[TOK_BOS] = 101;
		v->special[TOK_CLS] = 101;
		v->special[TOK_UNK] = 100;
		v->special[TOK_SEP] = 102;
		v->special[TOK_PAD] = 0;
		v->special[TOK_MASK] = 103;
		v->add_bos = true;
		v->add_sep = true;
		v->lowercase = true;
		break;
	case TOK_MODEL_BPE:
		v->special[TOK_BOS] = 11;
		v->special[TOK_EOS] = 11;
		choose_pre(v, f);
		break;
	default:
		break;
	}
	for (int i = 0; i < TOK_SPECIAL_COUNT; i++)
		if (v->special[i] >= v->n)
			v->special[i] = -1;
}

static void read_special_ids(tok_vocab *v, const gguf_file *f)
{
	static const struct { const char *key; enum tok_special which; } ids[] = {
		{"tokenizer.ggml.bos_token_id", TOK_BOS},
		{"tokenizer.ggml.eos_token_id", TOK_EOS},
		{"tokenizer.ggml.eot_token_id", TOK_EOT},
		{"tokenizer.ggml.eom_token_id", TOK_EOM},
		{"tokenizer.ggml.unknown_token_id", TOK_UNK},
		{"tokenizer.ggml.seperator_token_id", TOK_SEP},
		{"tokenizer.ggml.separator_token_id", TOK_SEP},
		{"tokenizer.ggml.padding_token_id", TOK_PAD},
		{"tokenizer.ggml.cls_token_id", TOK_CLS},
		{"tokenizer.ggml.mask_token_id", TOK_MASK},
		{"tokenizer.ggml.fim_pre_token_id", TOK_FIM_PRE},
		{"tokenizer.ggml.fim_suf_token_id", TOK_FIM_SUF},
		{"tokenizer.ggml.fim_mid_token_id", TOK_FIM_MID},
	};
	for (size_t i = 0; i < sizeof ids / sizeof ids[0]; i++)
		get_id(f, ids[i].key, v->n, &v->special[ids[i].which], v);
	if (v->model == TOK_MODEL_WPM && v->special[TOK_CLS] >= 0)
		v->special[TOK_BOS] = v->special[TOK_CLS];
}

static void read_flags(tok_vocab *v, const gguf_file *f)
{
	get_bool(f, "tokenizer.ggml.add_bos_token", &v->add_bos);
	get_bool(f, "tokenizer.ggml.add_eos_token", &v->add_eos);
	get_bool(f, "tokenizer.ggml.add_sep_token", &v->add_sep);
	get_bool(f, "tokenizer.ggml.add_space_prefix", &v->add_space_prefix);
	get_bool(f, "tokenizer.ggml.remove_extra_whitespaces", &v->remove_extra_ws);
	if (v->model == TOK_MODEL_WPM) {
		get_bool(f, "tokenizer.ggml.normalizer.lowercase", &v->lowercase);
		v->strip_accents = v->lowercase;
		get_bool(f, "tokenizer.ggml.normalizer.strip_accents", &v->strip_accents);
	}
}

/* SentencePiece's normalisation table, kept with the vocabulary (nothing
 * reads it yet); ignored when it is not an array of bytes. */
static int read_charsmap(tok_vocab *v, const gguf_file *f, tern_err *e)
{
	const struct gguf_kv *kv = gguf_find(f, "tokenizer.ggml.precompiled_charsmap");
	if (!kv || kv->v.type != GGUF_T_ARRAY || (kv->v.elem != GGUF_T_U8 && kv->v.elem != GGUF_T_I8) || !kv->v.n)
		return 0;
	v->charsmap = malloc((size_t)kv->v.n);
	if (!v->charsmap)
		return tern_errf(e, TERN_ENOMEM, "tokenizer: out of memory");
	memcpy(v->charsmap, kv->v.p, (size_t)kv->v.n);
	v->charsmap_len = (size_t)kv->v.n;
	return 0;
}

/* Phi-3's tokenizer.json strips spaces right of its chat pieces; GGUF has
 * no per-token flags, so go by the model name as the reference runtime
 * does. */
static void phi3_rstrip(tok_vocab *v, const gguf_file *f)
{
	struct tern_str name = {0};
	if (gguf_get_str(f, "general.name", &name, NULL) != 0 || name.len >= 256)
		return;
	char lname[256];
	for (size_t i = 0; i < name.len; i++)
		lname[i] = (char)tolower((unsigned char)name.ptr[i]);
	lname[name.len] = 0;
	if (!strstr(lname, "phi-3") && !strstr(lname, "phi3"))
		return;
	for (int32_t id = 0; id < v->n; id++) {
		uint8_t t = v->tok[id].type;
		if (t == TOK_TYPE_CONTROL || t == TOK_TYPE_USER_DEFINED || t == TOK_TYPE_UNKNOWN)
			v->tok[id].attr |= TOK_ATTR_RSTRIP;
	}
	static const char *const keep[] = {"<unk>", "<s>", "<|endoftext|>"};
	for (size_t i = 0; i < 3; i++) {
		int32_t id = tok_map_get(&v->by_text, keep[i], strlen(keep[i]));
		if (id >= 0)
			v->tok[id].attr &= (uint8_t)~TOK_ATTR_RSTRIP;
	}
}

/* One "left right" line of tokenizer.ggml.merges at rank; skipped unless
 * both sides and their concatenation are pieces. buf holds 2 * max_len. */
static void add_merge(tok_vocab *v, struct tern_str s, uint32_t rank, char *buf)
{
	const char *sp = s.len > 1 ? memchr(s.ptr + 1, ' ', (size_t)s.len - 1) : NULL;
	if (!sp)
		return;
	size_t la = (size_t)(sp - s.ptr), lb = (size_t)s.len - la - 1;
	int32_t a = tok_map_get(&v->by_text, s.ptr, la);
	int32_t b = tok_map_get(&v->by_text, sp + 1, lb);
	if (a < 0 || b < 0 || la + lb > 2 * v->max_len)
		return;
	memcpy(buf, s.ptr, la);
	memcpy(buf + la, sp + 1, lb);
	int32_t r = tok_map_get(&v->by_text, buf, la + lb);
	if (r >= 0)
		merge_put(&v->merges, a, b, rank, r);
}

static int read_merges(tok_vocab *v, const gguf_file *f, tern_err *e)
{
	const struct gguf_kv *m = gguf_find(f, "tokenizer.ggml.merges");
	if (!m || m->v.type != GGUF_T_ARRAY || m->v.elem != GGUF_T_STRING)
		return tern_errf(e, m ? TERN_ETYPE : TERN_ENOTFOUND, "tokenizer.ggml.merges: %s",
				 m ? "not an array of strings" : "key not found");
	uint64_t nm = m->v.n;
	if (nm > (1u << 30))
		return tern_errf(e, TERN_EFORMAT, "tokenizer.ggml.merges: %llu merges", (unsigned long long)nm);
	size_t cap = 16;
	while (cap < 2 * nm + 1)
		cap <<= 1;
	v->merges.key = calloc(cap, sizeof *v->merges.key);
	v->merges.val = calloc(cap, sizeof *v->merges.val);
	v->merges.mask = cap - 1;
	char *buf = malloc(2 * v->max_len + 2);
	if (!v->merges.key || !v->merges.val || !buf) {
		free(buf);
		return tern_errf(e, TERN_ENOMEM, "tokenizer: out of memory for %llu merges", (unsigned long long)nm);
	}
	for (uint64_t i = 0; i < nm; i++)
		add_merge(v, gguf_kv_arr_str(m, i), (uint32_t)i, buf);
	free(buf);
	return 0;
}

/* A file with tokenizer.ggml.model = "no_vocab" and no token list. */
static int ids_only(tok_vocab **out, tern_err *e)
{
	tok_vocab *v = vocab_alloc(0, 0);
	if (!v)
		return tern_errf(e, TERN_ENOMEM, "tokenizer: out of memory");
	v->model = TOK_MODEL_NONE;
	*out = v;
	return 0;
}

int tok_vocab_load(tok_vocab **out, const gguf_file *f, tern_err *e)
{
	*out = NULL;
	enum tok_model model = TOK_MODEL_NONE;
	int rc = read_model(f, &model, e);
	if (rc)
		return rc;
	struct token_arrays ta = {.tokens = gguf_find(f, "tokenizer.ggml.tokens")};
	if (model == TOK_MODEL_NONE && !ta.tokens)
		return ids_only(out, e);
	if ((rc = read_token_list(&ta, e)) || (rc = read_scores_types(f, &ta, e)) || (rc = measure_text(&ta, e)))
		return rc;
	tok_vocab *v = vocab_alloc((size_t)ta.n, ta.text_bytes);
	if (!v)
		return tern_errf(e, TERN_ENOMEM, "tokenizer: out of memory for %llu tokens", (unsigned long long)ta.n);
	/* from here on every failure frees v below */
	v->model = model;
	fill_tokens(v, &ta);
	set_defaults(v, f);
	read_special_ids(v, f);
	read_flags(v, f);
	rc = read_charsmap(v, f, e);
	if (!rc)
		rc = finish(v, e);
	if (!rc)
		phi3_rstrip(v, f);
	if (!rc && model == TOK_MODEL_BPE && !(rc = read_merges(v, f, e)))
		rc = tok_pre_compile(v, e);
	if (rc) {
		tok_vocab_free(v);
		return rc;
	}
	*out = v;
	return 0;
}

/* ---- from raw pieces (Whisper) ------------------------------------------ */

int tok_vocab_from_pieces(tok_vocab **out, const struct tok_piece *pieces, size_t n, tern_err *e)
{
	*out = NULL;
	if (n == 0 || n > (1u << 30))
		return tern_errf(e, TERN_EINVAL, "tokenizer: %zu pieces", n);
	size_t bytes = 0;
	for (size_t i = 0; i < n; i++) {
		if (pieces[i].len >= (1u << 24) || (pieces[i].len && !pieces[i].ptr))
			return tern_errf(e, TERN_EINVAL, "tokenizer: piece %zu is invalid", i);
		bytes += pieces[i].len;
	}
	if (bytes >= (1ull << 31))
		return tern_errf(e, TERN_EINVAL, "tokenizer: pieces too large");
	tok_vocab *v = vocab_alloc(n, bytes);
	if (!v)
		return tern_errf(e, TERN_ENOMEM, "tokenizer: out of memory");
	v->model = TOK_MODEL_RAW;
	for (size_t i = 0; i < n; i++) {
		set_text(v, (int32_t)i, pieces[i].ptr, pieces[i].len);
		v->tok[i].type = TOK_TYPE_NORMAL;
		make_piece(v, (int32_t)i);
	}
	v->pre = tok_pre_find("gpt-2", 5);
	tok_pre_first_name(v->pre, v->pre_name, sizeof v->pre_name);
	int rc = finish(v, e);
	if (!rc)
		rc = tok_pre_compile(v, e);
	if (rc) {
		tok_vocab_free(v);
		return rc;
	}
	*out = v;
	return 0;
}

void tok_vocab_free(tok_vocab *v)
{
	if (!v)
		return;
	tok_pre_release(v);
	free(v->tok);
	free(v->arena);
	tern_strmap_free(&v->by_text);
	tern_strmap_free(&v->by_bytes);
	free(v->merges.key);
	free(v->merges.val);
	free(v->trie);
	free(v->eog);
	free(v->charsmap);
	free(v);
}

/* ---- accessors ---------------------------------------------------------- */

const char *tok_vocab_warning(const tok_vocab *v) { return v->warning[0] ? v->warning : NULL; }
int32_t tok_n_vocab(const tok_vocab *v) { return v->n; }
enum tok_model tok_vocab_model(const tok_vocab *v) { return v->model; }
const char *tok_vocab_pre(const tok_vocab *v) { return v->model == TOK_MODEL_BPE ? v->pre_name : ""; }
bool tok_add_bos(const tok_vocab *v) { return v->add_bos; }
bool tok_add_eos(const tok_vocab *v) { return v->add_eos; }
size_t tok_max_piece_len(const tok_vocab *v) { return v->max_plen > v->max_len ? v->max_plen : v->max_len; }

const char *tok_model_name(enum tok_model m)
{
	switch (m) {
	case TOK_MODEL_SPM: return "spm";
	case TOK_MODEL_BPE: return "bpe";
	case TOK_MODEL_WPM: return "wpm";
	case TOK_MODEL_RAW: return "raw";
	default: return "none";
	}
}

int32_t tok_special_id(const tok_vocab *v, enum tok_special which)
{
	return (unsigned)which < TOK_SPECIAL_COUNT ? v->special[which] : -1;
}

bool tok_is_eog(const tok_vocab *v, int32_t id)
{
	for (int i = 0; i < v->n_eog; i++)
		if (v->eog[i] == id)
			return true;
	return false;
}

bool tok_is_control(const tok_vocab *v, int32_t id)
{
	if (id < 0 || id >= v->n)
		return false;
	return v->tok[id].type == TOK_TYPE_CONTROL || v->tok[id].type == TOK_TYPE_UNKNOWN;
}

enum tok_type tok_token_type(const tok_vocab *v, int32_t id)
{
	return id >= 0 && id < v->n ? (enum tok_type)v->tok[id].type : TOK_TYPE_UNDEFINED;
}

float tok_token_score(const tok_vocab *v, int32_t id)
{
	return id >= 0 && id < v->n ? v->tok[id].score : 0.0f;
}

struct tok_piece tok_token_text(const tok_vocab *v, int32_t id)
{
	struct tok_piece p = {0};
	if (id >= 0 && id < v->n) {
		p.ptr = tok_text(v, id);
		p.len = v->tok[id].len;
	}
	return p;
}

struct tok_piece tok_token_bytes(const tok_vocab *v, int32_t id)
{
	struct tok_piece p = {0};
	if (id < 0 || id >= v->n)
		return p;
	uint8_t t = v->tok[id].type;
	if (t == TOK_TYPE_CONTROL || t == TOK_TYPE_UNKNOWN || t == TOK_TYPE_USER_DEFINED) {
		/* special pieces are written as they are, not decoded */
		p.ptr = tok_text(v, id);
		p.len = v->tok[id].len;
		return p;
	}
	p.ptr = tok_bytes(v, id);
	p.len = v->tok[id].plen;
	return p;
}

int32_t tok_find(const tok_vocab *v, const char *text, size_t len)
{
	return tok_map_get(&v->by_text, text, len);
}
