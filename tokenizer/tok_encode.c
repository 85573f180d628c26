/* tok_encode.c - text -> token ids.
 *
 * The input is first cut at special pieces (leftmost-longest, as the
 * reference matches its added tokens); the text between them goes to the
 * vocabulary's algorithm:
 *   SPM: spaces become "▁" (plus one in front where the vocabulary says),
 *        then the adjacent pair whose merged piece scores highest is merged
 *        until none is left; characters without a piece fall back to bytes.
 *   BPE: optional NFC, the pre-tokenizer's split, then per piece the pair
 *        with the lowest merge rank is merged first. Pieces are handled as
 *        raw bytes against byte-decoded vocabulary keys, so the GPT-2 byte
 *        map never has to be applied to the input. A per-call cache
 *        remembers the ids of short pieces, which repeat a lot in text.
 *   WPM: BERT normalisation, whitespace/punctuation split, greedy longest
 *        match with "##" continuations (stored without "##"; word starts
 *        carry "▁" in GGUF files).
 *   RAW: GPT-2 split, greedy longest known piece (Whisper).
 * Every call keeps its state in a local struct, so a vocabulary can be used
 * from several threads at once. */
#include "tokenizer/tok_internal.h"

#include "lib/core/utf8.h"
#include "lib/core/strmap.h"

#include <stdlib.h>
#include <string.h>

#ifdef TERN_HAVE_UTF8PROC
#include <utf8proc.h>
#endif

struct sym {
	int32_t prev, next;
	uint32_t start, len;
	int32_t id;
};

struct bigram {
	uint64_t key;   /* BPE: rank << 32 | left; SPM: ordering encoded below */
	int32_t left, right;
	int32_t lid, rid; /* BPE: ids when queued; SPM: lid = merged length */
	float score;
};

struct cache_ent {
	uint32_t koff, klen; /* key bytes in cache pool */
	uint32_t ioff, n;    /* ids in cache id pool */
};

struct enc {
	const tok_vocab *v;
	tern_err *e;
	int32_t *out;
	size_t n, cap;
	struct sym *sym;
	size_t cap_sym;
	struct bigram *heap;
	size_t nheap, cap_heap;
	char *buf;
	size_t cap_buf;
	void *md;
	/* piece cache: piece -> entry of cent (off when cache.slot is NULL) */
	struct tern_strmap cache;
	struct cache_ent *cent; /* [cache.n] */
	size_t cent_cap;
	char *ckey;
	size_t ckey_n, ckey_cap;
	int32_t *cids;
	size_t cids_n, cids_cap;
};

#define OOM(en) tern_errf((en)->e, TERN_ENOMEM, "tokenizer: out of memory")

static int grow(void **p, size_t *cap, size_t need, size_t elem)
{
	if (need <= *cap)
		return 0;
	size_t c = *cap ? *cap : 64;
	while (c < need)
		c *= 2;
	void *q = realloc(*p, c * elem);
	if (!q)
		return -1;
	*p = q;
	*cap = c;
	return 0;
}

static int emit(struct enc *en, int32_t id)
{
	if (en->n == en->cap && grow((void **)&en->out, &en->cap, en->n + 1, sizeof *en->out))
		return OOM(en);
	en->out[en->n++] = id;
	return 0;
}

/* n bytes that no token stands for. They are written into the output as a
 * negative count rather than added to a counter, so that the per-call
 * cache, which replays a piece's output, replays its drops too;
 * tok_tokenize takes them out (drop_markers). */
static int drop(struct enc *en, size_t n)
{
	for (; n > INT32_MAX; n -= INT32_MAX) {
		int rc = emit(en, -INT32_MAX);
		if (rc)
			return rc;
	}
	return n ? emit(en, -(int32_t)n) : 0;
}

/* Remove the drop counts from out[0..*n); returns the bytes they count. */
static size_t drop_markers(int32_t *out, size_t *n)
{
	size_t k = 0, dropped = 0;
	for (size_t i = 0; i < *n; i++) {
		if (out[i] < 0)
			dropped += (size_t)-(int64_t)out[i];
		else
			out[k++] = out[i];
	}
	*n = k;
	return dropped;
}

/* ---- binary heap of candidate merges ------------------------------------ */

/* a before b? BPE: lower rank, then leftmost. SPM: higher score, then
 * leftmost. Both are encoded so that a smaller key wins, with score ties
 * broken by `left` inside the key. */
static bool heap_less(const struct bigram *a, const struct bigram *b)
{
	return a->key < b->key;
}

static int heap_push(struct enc *en, const struct bigram *b)
{
	if (grow((void **)&en->heap, &en->cap_heap, en->nheap + 1, sizeof *en->heap))
		return OOM(en);
	size_t i = en->nheap++;
	while (i > 0) {
		size_t p = (i - 1) / 2;
		if (!heap_less(b, &en->heap[p]))
			break;
		en->heap[i] = en->heap[p];
		i = p;
	}
	en->heap[i] = *b;
	return 0;
}

static struct bigram heap_pop(struct enc *en)
{
	struct bigram top = en->heap[0];
	struct bigram last = en->heap[--en->nheap];
	size_t i = 0, n = en->nheap;
	for (;;) {
		size_t c = 2 * i + 1;
		if (c >= n)
			break;
		if (c + 1 < n && heap_less(&en->heap[c + 1], &en->heap[c]))
			c++;
		if (!heap_less(&en->heap[c], &last))
			break;
		en->heap[i] = en->heap[c];
		i = c;
	}
	if (n)
		en->heap[i] = last;
	return top;
}

/* Map a float score to a key where higher scores sort first. */
static uint64_t score_key(float s, int32_t left)
{
	uint32_t u;
	memcpy(&u, &s, 4);
	u = (u & 0x80000000u) ? ~u : (u | 0x80000000u); /* ascending order */
	return (uint64_t)(0xffffffffu - u) << 32 | (uint32_t)left;
}

/* ---- SPM ---------------------------------------------------------------- */

static int cached(struct enc *en, const char *p, size_t n, int (*fn)(struct enc *, const char *, size_t));

static int spm_try(struct enc *en, const char *text, int32_t l, int32_t r)
{
	if (l < 0 || r < 0)
		return 0;
	const struct sym *a = &en->sym[l], *b = &en->sym[r];
	uint32_t size = a->len + b->len;
	int32_t id = tok_map_get(&en->v->by_text, text + a->start, size);
	if (id < 0)
		return 0;
	struct bigram bg = {score_key(en->v->tok[id].score, l), l, r, (int32_t)size, 0, 0};
	return heap_push(en, &bg);
}

static int spm_segment(struct enc *en, const char *text, size_t len);

/* Where no piece has "▁" after another character (SentencePiece splits at
 * whitespace), no merge can cross the start of a word, so each word is
 * merged on its own - same result, shorter queues, and repeated words come
 * from the cache. */
static int spm_encode(struct enc *en, const char *text, size_t len)
{
	if (!en->v->spm_word_split)
		return spm_segment(en, text, len);
	size_t start = 0;
	for (size_t i = 3; i + 3 <= len; i++) {
		if (memcmp(text + i, "\xe2\x96\x81", 3) == 0 && memcmp(text + i - 3, "\xe2\x96\x81", 3) != 0) {
			int rc = spm_segment(en, text + start, i - start);
			if (rc)
				return rc;
			start = i;
			i += 2;
		}
	}
	return spm_segment(en, text + start, len - start);
}

static int spm_merge(struct enc *en, const char *text, size_t len);

static int spm_segment(struct enc *en, const char *text, size_t len)
{
	return cached(en, text, len, spm_merge);
}

static int spm_merge(struct enc *en, const char *text, size_t len)
{
	const tok_vocab *v = en->v;
	if (len == 0)
		return 0;
	if (grow((void **)&en->sym, &en->cap_sym, len, sizeof *en->sym))
		return OOM(en);
	/* one symbol per character; an invalid byte is a symbol of its own,
	 * so that it falls back to its byte piece without taking valid text
	 * with it */
	int32_t ns = 0;
	for (size_t off = 0; off < len; ns++) {
		size_t l = tern_utf8_step((const unsigned char *)text + off, len - off, TERN_UTF8_TOKENIZER);
		en->sym[ns] = (struct sym){ns - 1, off + l == len ? -1 : ns + 1, (uint32_t)off, (uint32_t)l, -1};
		off += l;
	}
	en->nheap = 0;
	int rc;
	for (int32_t i = 1; i < ns; i++)
		if ((rc = spm_try(en, text, i - 1, i)))
			return rc;
	while (en->nheap) {
		struct bigram bg = heap_pop(en);
		struct sym *a = &en->sym[bg.left], *b = &en->sym[bg.right];
		if (a->len == 0 || b->len == 0 || a->len + b->len != (uint32_t)bg.lid)
			continue; /* one side changed since this pair was queued */
		a->len += b->len;
		b->len = 0;
		a->next = b->next;
		if (b->next >= 0)
			en->sym[b->next].prev = bg.left;
		if ((rc = spm_try(en, text, a->prev, bg.left)) || (rc = spm_try(en, text, bg.left, a->next)))
			return rc;
	}
	for (int32_t i = 0; i != -1; i = en->sym[i].next) {
		const struct sym *s = &en->sym[i];
		int32_t id = tok_map_get(&v->by_text, text + s->start, s->len);
		if (id >= 0) {
			if ((rc = emit(en, id)))
				return rc;
			continue;
		}
		for (uint32_t j = 0; j < s->len; j++) {
			id = v->byte_tok[(unsigned char)text[s->start + j]];
			if (id < 0)
				id = v->special[TOK_UNK];
			if ((rc = id >= 0 ? emit(en, id) : drop(en, 1)))
				return rc;
		}
	}
	return 0;
}

/* ---- BPE ---------------------------------------------------------------- */

static int bpe_try(struct enc *en, int32_t l, int32_t r)
{
	if (l < 0 || r < 0)
		return 0;
	int32_t res;
	int32_t rank = tok_merge_rank(&en->v->merges, en->sym[l].id, en->sym[r].id, &res);
	if (rank < 0)
		return 0;
	struct bigram bg = {(uint64_t)(uint32_t)rank << 32 | (uint32_t)l, l, r, en->sym[l].id, en->sym[r].id, 0};
	return heap_push(en, &bg);
}

static int bpe_merge(struct enc *en, const char *p, size_t n)
{
	const tok_vocab *v = en->v;
	int rc;
	if (grow((void **)&en->sym, &en->cap_sym, n, sizeof *en->sym))
		return OOM(en);
	for (size_t i = 0; i < n; i++)
		en->sym[i] = (struct sym){(int32_t)i - 1, i + 1 == n ? -1 : (int32_t)i + 1, (uint32_t)i, 1,
					  v->byte_tok[(unsigned char)p[i]]};
	en->nheap = 0;
	for (size_t i = 1; i < n; i++)
		if ((rc = bpe_try(en, (int32_t)i - 1, (int32_t)i)))
			return rc;
	while (en->nheap) {
		struct bigram bg = heap_pop(en);
		struct sym *a = &en->sym[bg.left], *b = &en->sym[bg.right];
		if (a->len == 0 || b->len == 0 || a->next != bg.right || a->id != bg.lid || b->id != bg.rid)
			continue; /* stale */
		int32_t res;
		tok_merge_rank(&v->merges, a->id, b->id, &res);
		a->id = res;
		a->len += b->len;
		b->len = 0;
		a->next = b->next;
		if (b->next >= 0)
			en->sym[b->next].prev = bg.left;
		if ((rc = bpe_try(en, a->prev, bg.left)) || (rc = bpe_try(en, bg.left, a->next)))
			return rc;
	}
	/* a byte the vocabulary has no piece for is dropped, as the
	 * reference does for byte-level vocabularies */
	for (int32_t i = 0; i != -1; i = en->sym[i].next) {
		const struct sym *s = &en->sym[i];
		if ((rc = s->id >= 0 ? emit(en, s->id) : drop(en, s->len)))
			return rc;
	}
	return 0;
}

#define CACHE_MAX_KEY 48
#define CACHE_MAX (1u << 15) /* entries; the map then has 2^16 slots */

static struct tern_str cache_key(const void *ctx, size_t i)
{
	const struct enc *en = ctx;
	const struct cache_ent *c = &en->cent[i];
	return (struct tern_str){en->ckey + c->koff, c->klen};
}

/* Run fn on the piece, or replay its ids from the per-call cache. */
static int cached(struct enc *en, const char *p, size_t n, int (*fn)(struct enc *, const char *, size_t))
{
	bool use = en->cache.slot && n <= CACHE_MAX_KEY;
	if (use) {
		size_t i = tern_strmap_find(&en->cache, p, n);
		if (i != TERN_STRMAP_NONE) {
			const struct cache_ent *c = &en->cent[i];
			if (grow((void **)&en->out, &en->cap, en->n + c->n, sizeof *en->out))
				return OOM(en);
			memcpy(en->out + en->n, en->cids + c->ioff, c->n * sizeof *en->out);
			en->n += c->n;
			return 0;
		}
	}
	size_t first = en->n;
	int rc = fn(en, p, n);
	if (rc || !use || en->cache.n >= en->cache.max)
		return rc;
	size_t k = en->n - first, i = en->cache.n;
	if (grow((void **)&en->ckey, &en->ckey_cap, en->ckey_n + n, 1) ||
	    grow((void **)&en->cids, &en->cids_cap, en->cids_n + k, sizeof *en->cids) ||
	    grow((void **)&en->cent, &en->cent_cap, i + 1, sizeof *en->cent))
		return 0; /* the cache is optional */
	memcpy(en->ckey + en->ckey_n, p, n);
	memcpy(en->cids + en->cids_n, en->out + first, k * sizeof *en->cids);
	en->cent[i] = (struct cache_ent){(uint32_t)en->ckey_n, (uint32_t)n, (uint32_t)en->cids_n, (uint32_t)k};
	if (tern_strmap_add(&en->cache, i, NULL) == 0) {
		en->ckey_n += n;
		en->cids_n += k;
	}
	return 0;
}

static int bpe_piece(void *ud, const char *p, size_t n)
{
	struct enc *en = ud;
	const tok_vocab *v = en->v;
	if (n == 1) {
		int32_t id = v->byte_tok[(unsigned char)p[0]];
		return id >= 0 ? emit(en, id) : drop(en, 1);
	}
	if (v->ignore_merges) {
		int32_t id = tok_map_get(&v->by_bytes, p, n);
		if (id >= 0)
			return emit(en, id);
	}
	return cached(en, p, n, bpe_merge);
}

/* Whisper: the longest known piece from the left, byte by byte. */
static int raw_piece(void *ud, const char *p, size_t n)
{
	struct enc *en = ud;
	const tok_vocab *v = en->v;
	size_t maxl = v->max_plen;
	for (size_t i = 0; i < n;) {
		size_t j = n - i < maxl ? n - i : maxl;
		int32_t id = -1;
		for (; j > 0; j--)
			if ((id = tok_map_get(&v->by_bytes, p + i, j)) >= 0)
				break;
		if (id < 0)
			j = 1; /* a byte no piece covers */
		int rc = id >= 0 ? emit(en, id) : drop(en, 1);
		if (rc)
			return rc;
		i += j;
	}
	return 0;
}

/* NFC where the reference normalises so; invalid bytes pass through. */
static int nfc(struct enc *en, const char *s, size_t n, const char **out, size_t *outn)
{
	*out = s;
	*outn = n;
#ifdef TERN_HAVE_UTF8PROC
	size_t i = 0;
	while (i < n && (unsigned char)s[i] < 0xcc) /* no code point >= U+0300 */
		i++;
	if (i == n)
		return 0;
	size_t o = 0;
	for (i = 0; i < n;) {
		/* longest well-formed run from i (utf8proc_map refuses
		 * anything else) */
		size_t j = i, l;
		while (j < n && (l = tern_utf8_step((const unsigned char *)s + j, n - j, TERN_UTF8_STRICT)))
			j += l;
		if (j > i) {
			utf8proc_uint8_t *m = NULL;
			utf8proc_ssize_t ml = utf8proc_map((const utf8proc_uint8_t *)s + i, (utf8proc_ssize_t)(j - i), &m,
							   UTF8PROC_STABLE | UTF8PROC_COMPOSE);
			if (ml < 0) {
				free(m);
				return tern_errf(en->e, TERN_ENOMEM, "tokenizer: NFC: %s", utf8proc_errmsg(ml));
			}
			if (grow((void **)&en->buf, &en->cap_buf, o + (size_t)ml + 1, 1)) {
				free(m);
				return OOM(en);
			}
			memcpy(en->buf + o, m, (size_t)ml);
			o += (size_t)ml;
			free(m);
			i = j;
		}
		if (i < n) { /* one invalid byte */
			if (grow((void **)&en->buf, &en->cap_buf, o + 1, 1))
				return OOM(en);
			en->buf[o++] = s[i++];
		}
	}
	*out = en->buf;
	*outn = o;
#endif
	return 0;
}

/* ---- WPM ---------------------------------------------------------------- */

#ifdef TERN_HAVE_UTF8PROC
static bool is_chinese(int32_t c)
{
	return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) || (c >= 0x20000 && c <= 0x2A6DF) ||
	       (c >= 0x2A700 && c <= 0x2B73F) || (c >= 0x2B740 && c <= 0x2B81F) || (c >= 0x2B920 && c <= 0x2CEAF) ||
	       (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
}

static bool is_punct(int32_t c)
{
	if (c < 0x80)
		return (c >= 33 && c <= 47) || (c >= 58 && c <= 64) || (c >= 91 && c <= 96) || (c >= 123 && c <= 126);
	utf8proc_category_t k = utf8proc_category(c);
	return k >= UTF8PROC_CATEGORY_PC && k <= UTF8PROC_CATEGORY_PO;
}

static bool is_space(int32_t c)
{
	if (c == ' ' || c == '\t' || c == '\n' || c == '\r')
		return true;
	utf8proc_category_t k = utf8proc_category(c);
	return k == UTF8PROC_CATEGORY_ZS || k == UTF8PROC_CATEGORY_ZL || k == UTF8PROC_CATEGORY_ZP;
}

static bool is_other(int32_t c)
{
	utf8proc_category_t k = utf8proc_category(c);
	return k == UTF8PROC_CATEGORY_CC || k == UTF8PROC_CATEGORY_CF || k == UTF8PROC_CATEGORY_CS ||
	       k == UTF8PROC_CATEGORY_CO || k == UTF8PROC_CATEGORY_CN;
}
#endif

static int wpm_word(struct enc *en, const char *w, size_t n, size_t nchars);

/* One word through the cache (words repeat a lot in long texts). */
static int wpm_word_counted(struct enc *en, const char *w, size_t n)
{
	size_t nchars = 0;
	for (size_t i = 3; i < n; i++)
		nchars += ((unsigned char)w[i] & 0xc0) != 0x80;
	return wpm_word(en, w, n, nchars);
}

/* Greedy longest match of one word (starts with "▁"). */
static int wpm_word(struct enc *en, const char *w, size_t n, size_t nchars)
{
	const tok_vocab *v = en->v;
	size_t first = en->n;
	int rc;
	if (nchars <= 100) { /* the reference's max_input_chars_per_word */
		for (size_t i = 0; i < n;) {
			size_t j = n - i < v->max_len ? n : i + v->max_len;
			int32_t id = -1;
			for (; j > i; j--)
				if ((id = tok_map_get(&v->by_text, w + i, j - i)) >= 0)
					break;
			if (id < 0) {
				en->n = first;
				break;
			}
			if ((rc = emit(en, id)))
				return rc;
			i = j;
		}
	}
	if (en->n > first)
		return 0;
	/* the word without its "▁" when there is no [UNK] to stand for it */
	return v->special[TOK_UNK] >= 0 ? emit(en, v->special[TOK_UNK]) : drop(en, n - 3);
}

#ifdef TERN_HAVE_UTF8PROC
/* wpm_encode gathers each word in en->buf as "▁" and its characters; *wn
 * is its length so far (0: no word). */
static int word_put(struct enc *en, size_t *wn, utf8proc_int32_t c)
{
	if (grow((void **)&en->buf, &en->cap_buf, *wn + 8, 1))
		return OOM(en);
	if (*wn == 0) {
		memcpy(en->buf, "\xe2\x96\x81", 3);
		*wn = 3;
	}
	*wn += (size_t)utf8proc_encode_char(c, (utf8proc_uint8_t *)en->buf + *wn);
	return 0;
}

/* The word is complete: its ids (through the cache: words repeat a lot in
 * long texts). */
static int word_end(struct enc *en, size_t *wn)
{
	int rc = *wn ? cached(en, en->buf, *wn, wpm_word_counted) : 0;
	*wn = 0;
	return rc;
}

/* c with its accents removed where the vocabulary strips them: the
 * canonical decomposition less its nonspacing marks, into d[0..18);
 * returns the count. */
static size_t strip_accents(const tok_vocab *v, utf8proc_int32_t c, utf8proc_int32_t *d)
{
	utf8proc_ssize_t nd = 1;
	d[0] = c;
	if (v->strip_accents) {
		int bc = 0;
		nd = utf8proc_decompose_char(c, d, 18, UTF8PROC_DECOMPOSE, &bc);
		if (nd <= 0 || nd > 18) {
			d[0] = c;
			nd = 1;
		}
	}
	size_t k = 0;
	for (utf8proc_ssize_t i = 0; i < nd; i++)
		if (!v->strip_accents || utf8proc_category(d[i]) != UTF8PROC_CATEGORY_MN)
			d[k++] = d[i];
	return k;
}

/* One normalised code point: CJK ideographs and punctuation are words of
 * their own; anything else goes into the current word, lowercased where
 * the vocabulary says. */
static int wpm_char(struct enc *en, size_t *wn, utf8proc_int32_t x)
{
	const tok_vocab *v = en->v;
	int rc;
	if (is_chinese(x) || is_punct(x)) {
		if (v->lowercase)
			x = utf8proc_tolower(x);
		if ((rc = word_end(en, wn)) || (rc = word_put(en, wn, x)))
			return rc;
		return word_end(en, wn);
	}
	if (v->lowercase && x == 0x130) { /* the one code point whose lowercase is two */
		if ((rc = word_put(en, wn, 'i')))
			return rc;
		x = 0x307;
	} else if (v->lowercase) {
		x = utf8proc_tolower(x);
	}
	return word_put(en, wn, x);
}
#endif

/* BERT's normalisation (drop controls and U+FFFD, split at whitespace,
 * strip accents, lowercase), then each word greedily. */
static int wpm_encode(struct enc *en, const char *s, size_t n)
{
#ifdef TERN_HAVE_UTF8PROC
	size_t wn = 0;
	int rc;
	for (size_t i = 0; i < n;) {
		uint32_t u;
		size_t l = tern_utf8_decode((const unsigned char *)s + i, n - i, TERN_UTF8_LOSSY, &u);
		i += l;
		if (u == TERN_UTF8_BAD) { /* dropped like the U+FFFD it stands for */
			if ((rc = drop(en, l)))
				return rc;
			continue;
		}
		utf8proc_int32_t c = (utf8proc_int32_t)u;
		if (c == 0 || c == 0xFFFD || (c != '\t' && c != '\n' && c != '\r' && is_other(c)))
			continue;
		if (is_space(c)) {
			if ((rc = word_end(en, &wn)))
				return rc;
			continue;
		}
		utf8proc_int32_t d[18];
		size_t nd = strip_accents(en->v, c, d);
		for (size_t k = 0; k < nd; k++)
			if ((rc = wpm_char(en, &wn, d[k])))
				return rc;
	}
	return word_end(en, &wn);
#else
	return tern_errf(en->e, TERN_EUNSUPPORTED, "WPM tokenizer needs utf8proc (built without it)");
#endif
}

/* ---- fragments and specials --------------------------------------------- */

static int encode_text(struct enc *en, const char *s, size_t n, bool after_special)
{
	const tok_vocab *v = en->v;
	switch (v->model) {
	case TOK_MODEL_SPM: {
		/* spaces -> "▁", with one in front where the vocabulary adds it */
		size_t need = 3 * n + 3;
		if (grow((void **)&en->buf, &en->cap_buf, need, 1))
			return OOM(en);
		size_t o = 0;
		if (v->add_space_prefix && after_special) {
			memcpy(en->buf, "\xe2\x96\x81", 3);
			o = 3;
		}
		for (size_t i = 0; i < n; i++) {
			if (s[i] == ' ') {
				memcpy(en->buf + o, "\xe2\x96\x81", 3);
				o += 3;
			} else {
				en->buf[o++] = s[i];
			}
		}
		return spm_encode(en, en->buf, o);
	}
	case TOK_MODEL_BPE: {
		const char *t = s;
		size_t tn = n;
		int rc;
		if (v->nfc && (rc = nfc(en, s, n, &t, &tn)))
			return rc;
		return tok_pre_split(v, en->md, t, tn, bpe_piece, en, en->e);
	}
	case TOK_MODEL_WPM:
		return wpm_encode(en, s, n);
	case TOK_MODEL_RAW:
		return tok_pre_split(v, en->md, s, n, raw_piece, en, en->e);
	default:
		return tern_errf(en->e, TERN_EUNSUPPORTED, "tokenizer: this vocabulary has no tokenizer");
	}
}

static bool allowed(const tok_vocab *v, int32_t id, bool parse_special)
{
	return parse_special || v->tok[id].type == TOK_TYPE_USER_DEFINED;
}

/* Longest special piece starting at s (-1 if none); *len gets its length. */
static int32_t special_at(const tok_vocab *v, const unsigned char *s, size_t n, bool parse_special, size_t *len)
{
	int32_t node = v->trie_root[s[0]], best = -1;
	size_t i = 1;
	for (;;) {
		int32_t id = v->trie[node].id;
		if (id >= 0 && allowed(v, id, parse_special)) {
			best = id;
			*len = i;
		}
		if (i == n)
			break;
		int32_t c = v->trie[node].child;
		while (c >= 0 && v->trie[c].byte != s[i])
			c = v->trie[c].sibling;
		if (c < 0)
			break;
		node = c;
		i++;
	}
	return best;
}

static bool ascii_space(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

static int encode_all(struct enc *en, const char *text, size_t len, bool parse_special)
{
	const tok_vocab *v = en->v;
	const unsigned char *s = (const unsigned char *)text;
	size_t start = 0;
	bool after_special = true;
	int rc;
	for (size_t i = 0; i < len;) {
		size_t ml = 0;
		int32_t id = v->special_first[s[i]] ? special_at(v, s + i, len - i, parse_special, &ml) : -1;
		if (id < 0) {
			i++;
			continue;
		}
		size_t end = i;
		if (v->tok[id].attr & TOK_ATTR_LSTRIP)
			while (end > start && ascii_space(text[end - 1]))
				end--;
		if (end > start && (rc = encode_text(en, text + start, end - start, after_special)))
			return rc;
		if ((rc = emit(en, id)))
			return rc;
		after_special = true;
		i += ml;
		if (v->tok[id].attr & TOK_ATTR_RSTRIP)
			while (i < len && ascii_space(text[i]))
				i++;
		start = i;
	}
	if (len > start && (rc = encode_text(en, text + start, len - start, after_special)))
		return rc;
	return 0;
}

/* The text between the ids add_special asks for: BOS (or CLS) before,
 * EOS and SEP after (SEP only once where it is the EOS id). */
static int encode_framed(struct enc *en, const char *text, size_t len, bool add_special, bool parse_special)
{
	const tok_vocab *v = en->v;
	int32_t bos = add_special && v->add_bos ? v->special[TOK_BOS] : -1;
	int32_t eos = add_special && v->add_eos ? v->special[TOK_EOS] : -1;
	int32_t sep = add_special && v->add_sep && v->special[TOK_SEP] != eos ? v->special[TOK_SEP] : -1;
	int rc = bos >= 0 ? emit(en, bos) : 0;
	if (!rc && len)
		rc = encode_all(en, text, len, parse_special);
	if (!rc && eos >= 0)
		rc = emit(en, eos);
	if (!rc && sep >= 0)
		rc = emit(en, sep);
	return rc;
}

int tok_tokenize(const tok_vocab *v, const char *text, size_t len, bool add_special, bool parse_special,
		 int32_t *ids, size_t cap, size_t *n_out, struct tok_encode_stats *stats, tern_err *e)
{
	*n_out = 0;
	if (stats)
		*stats = (struct tok_encode_stats){0};
	if (!text && len)
		return tern_errf(e, TERN_EINVAL, "tokenize: NULL text");
	if (v->model == TOK_MODEL_NONE)
		return tern_errf(e, TERN_EUNSUPPORTED, "tokenize: the file has no vocabulary");
	struct enc en = {.v = v, .e = e};
	int rc = 0;
	if (v->model == TOK_MODEL_BPE || v->model == TOK_MODEL_RAW) {
		en.md = tok_pre_match_data(v);
#ifdef TERN_HAVE_PCRE2
		if (!en.md)
			return tern_errf(e, TERN_ENOMEM, "tokenizer: out of memory");
#endif
	}
	/* long texts repeat their words: a cache pays for its 512 KiB */
	if (len > 4096 && (v->model == TOK_MODEL_BPE || v->model == TOK_MODEL_WPM ||
			   (v->model == TOK_MODEL_SPM && v->spm_word_split)))
		tern_strmap_init(&en.cache, CACHE_MAX, cache_key, &en); /* on failure: no cache */
	rc = encode_framed(&en, text, len, add_special, parse_special);
	if (!rc) {
		size_t dropped = drop_markers(en.out, &en.n);
		if (stats)
			stats->dropped_bytes = dropped;
		*n_out = en.n;
		if (ids && en.n && cap)
			memcpy(ids, en.out, (en.n < cap ? en.n : cap) * sizeof *ids);
	}
	tok_pre_match_data_free(en.md);
	free(en.out);
	free(en.sym);
	free(en.heap);
	free(en.buf);
	tern_strmap_free(&en.cache);
	free(en.cent);
	free(en.ckey);
	free(en.cids);
	return rc;
}
