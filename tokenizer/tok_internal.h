/* tok_internal.h - the vocabulary's layout, shared by the tokenizer's
 * files (not part of the public API). */
#ifndef TERN_TOK_INTERNAL_H
#define TERN_TOK_INTERNAL_H

#include "lib/core/strmap.h"
#include "tokenizer/tok.h"

#include <stdint.h>

#define TOK_ATTR_LSTRIP 1u /* strip whitespace left of this special */
#define TOK_ATTR_RSTRIP 2u /* strip whitespace right of this special */

/* 16 bytes a token (a 262144-token vocabulary is resident the whole run):
 * a text is under 16 MiB (measure_text, tok_vocab_from_pieces) and its
 * decoded piece never longer (a byte token's is 1 byte of 6), so both
 * lengths take 24 bits; the piece is the text itself unless it differs,
 * then it follows the text in the arena (tok_bytes). */
struct tok_entry {
	uint32_t off;            /* stored text in arena */
	unsigned len : 24;       /* of the text */
	unsigned type : 8;       /* enum tok_type */
	unsigned plen : 24;      /* of the decoded bytes */
	unsigned attr : 2;       /* TOK_ATTR_* */
	unsigned pdecoded : 1;   /* BPE: piece is byte-level decoded (in the raw map) */
	unsigned papart : 1;     /* the piece differs from the text: at off + len */
	float score;
};
_Static_assert(sizeof(struct tok_entry) == 16, "struct tok_entry: 16 bytes a token");


/* Merge table for BPE: (left id, right id) -> rank and result id. */
struct tok_merges {
	uint64_t *key;  /* [mask + 1]: (left << 32 | right) + 1, 0 empty */
	uint64_t *val;  /* [mask + 1]: rank << 32 | result id */
	uint64_t mask;
	uint32_t n;
};

/* Trie of special pieces for the leftmost-longest scan of the input. */
struct tok_trie_node {
	int32_t child;   /* first child, -1 none */
	int32_t sibling; /* next sibling, -1 none */
	int32_t id;      /* token ending here, -1 none */
	uint8_t byte;
};

struct tok_pre; /* tok_pretok.c */

#define TOK_MAX_REGEX 8

struct tok_vocab {
	enum tok_model model;
	int32_t n;
	struct tok_entry *tok; /* [n] */
	char *arena;
	size_t arena_len;
	size_t max_len;        /* longest stored text */
	size_t max_plen;       /* longest decoded piece */

	struct tern_strmap by_text;  /* stored text -> id */
	struct tern_strmap by_bytes; /* BPE/RAW: decoded bytes -> id */
	struct tok_merges merges;
	int32_t byte_tok[256];   /* BPE: id of each single byte; SPM: <0xXX> */

	int32_t special[TOK_SPECIAL_COUNT];
	bool add_bos, add_eos, add_sep;
	bool add_space_prefix, remove_extra_ws, ignore_merges;
	bool nfc;                /* NFC-normalise before pre-tokenizing */
	bool spm_word_split;     /* SPM: no piece has "▁" after another character */
	bool lowercase, strip_accents; /* WPM */

	/* the pre-tokenizer (BPE and RAW) */
	const struct tok_pre *pre;
	char pre_name[64];
	void *re[TOK_MAX_REGEX]; /* pcre2_code * */
	int n_re;

	/* specials found in text: control/unknown (parse_special) and
	 * user-defined (always) */
	struct tok_trie_node *trie;
	int32_t n_trie, cap_trie;
	int32_t trie_root[256];
	bool special_first[256];

	int32_t *eog;            /* ids that end generation */
	int n_eog;

	uint8_t *charsmap;       /* tokenizer.ggml.precompiled_charsmap (kept) */
	size_t charsmap_len;

	char warning[512];
};

static inline const char *tok_text(const tok_vocab *v, int32_t id)
{
	return v->arena + v->tok[id].off;
}

static inline const char *tok_bytes(const tok_vocab *v, int32_t id)
{
	const struct tok_entry *t = &v->tok[id];
	return v->arena + t->off + (t->papart ? t->len : 0);
}

/* Id of the piece (s, len) in a vocabulary map (by_text, by_bytes), -1 if
 * none. Where several ids share a piece, the first one holds it. */
static inline int32_t tok_map_get(const struct tern_strmap *m, const char *s, size_t len)
{
	size_t i = tern_strmap_find(m, s, len);
	return i == TERN_STRMAP_NONE ? -1 : (int32_t)i;
}
/* Rank of merging left and right (-1 if none); *result gets the new id. */
int32_t tok_merge_rank(const struct tok_merges *m, int32_t left, int32_t right,
		       int32_t *result);

/* tok_pretok.c */
const struct tok_pre *tok_pre_find(const char *name, size_t len);
void tok_pre_first_name(const struct tok_pre *p, char *buf, size_t cap);
int tok_pre_compile(tok_vocab *v, tern_err *e);
void tok_pre_release(tok_vocab *v);
/* Flags a pre-tokenizer entry implies. */
void tok_pre_flags(const struct tok_pre *p, bool *ignore_merges, bool *nfc,
		   bool *add_bos, bool *no_bos);

/* Split text[0..len) with the vocabulary's expressions and call fn on each
 * piece in order. Returns 0 or the first nonzero value of fn or an error. */
typedef int (*tok_piece_fn)(void *ud, const char *p, size_t n);
int tok_pre_split(const tok_vocab *v, void *match_data, const char *text,
		  size_t len, tok_piece_fn fn, void *ud, tern_err *e);
void *tok_pre_match_data(const tok_vocab *v);
void tok_pre_match_data_free(void *md);

#endif
