/* tok.h - text <-> token ids for every vocabulary a GGUF file can carry.
 *
 * Four algorithms share one vocabulary object:
 *   SPM  (tokenizer.ggml.model = "llama"): score-driven merges over UTF-8
 *        characters, byte fallback through <0xXX> pieces, "▁" for spaces;
 *   BPE  ("gpt2"): byte-level BPE with ranked merges, after a pre-tokenizer
 *        (a sequence of split regexes, chosen by tokenizer.ggml.pre);
 *   WPM  ("bert"): BERT normalisation and greedy longest-match wordpiece;
 *   RAW  (tok_vocab_from_pieces): pieces are raw bytes without merges, as in
 *        Whisper's legacy ggml files; decoding concatenates them.
 * The goal is id-for-id agreement with the Hugging Face tokenizers the
 * models were trained with.
 *
 * A vocabulary is immutable once built and may be shared between threads;
 * every call keeps its scratch state on its own. */
#ifndef TERN_TOK_H
#define TERN_TOK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/core/error.h"
#include "lib/format/gguf.h"

typedef struct tok_vocab tok_vocab;

enum tok_model {
	TOK_MODEL_NONE = 0, /* "no_vocab": ids only */
	TOK_MODEL_SPM,
	TOK_MODEL_BPE,
	TOK_MODEL_WPM,
	TOK_MODEL_RAW,
};

/* tokenizer.ggml.token_type values (as written by the GGUF converters). */
enum tok_type {
	TOK_TYPE_UNDEFINED = 0,
	TOK_TYPE_NORMAL = 1,
	TOK_TYPE_UNKNOWN = 2,
	TOK_TYPE_CONTROL = 3,
	TOK_TYPE_USER_DEFINED = 4,
	TOK_TYPE_UNUSED = 5,
	TOK_TYPE_BYTE = 6,
};

/* Build from the tokenizer.ggml.* metadata of an open file. The vocabulary
 * copies what it needs; the file may be closed afterwards. */
int tok_vocab_load(tok_vocab **out, const gguf_file *f, tern_err *e);

/* A raw-byte vocabulary from n pieces (copied). Used for Whisper, whose
 * legacy files store the decoded bytes of each token and no merges. Decoding
 * concatenates pieces; encoding splits with the GPT-2 expression and takes
 * the longest known piece greedily (what whisper.cpp does). */
struct tok_piece {
	const char *ptr;
	size_t len;
};
int tok_vocab_from_pieces(tok_vocab **out, const struct tok_piece *pieces,
			  size_t n, tern_err *e);

void tok_vocab_free(tok_vocab *v);

/* NULL, or one line the caller should show the user, e.g. that the
 * pre-tokenizer named in the file is unknown and which one is used. */
const char *tok_vocab_warning(const tok_vocab *v);

int32_t tok_n_vocab(const tok_vocab *v);
enum tok_model tok_vocab_model(const tok_vocab *v);
const char *tok_model_name(enum tok_model m);
/* Name of the pre-tokenizer in use ("" for non-BPE vocabularies). */
const char *tok_vocab_pre(const tok_vocab *v);

/* Special ids, -1 where the vocabulary has none. */
enum tok_special {
	TOK_BOS, TOK_EOS, TOK_EOT, TOK_EOM, TOK_UNK, TOK_PAD, TOK_SEP, TOK_CLS,
	TOK_MASK, TOK_NL, TOK_FIM_PRE, TOK_FIM_SUF, TOK_FIM_MID, TOK_SPECIAL_COUNT
};
int32_t tok_special_id(const tok_vocab *v, enum tok_special which);
bool tok_add_bos(const tok_vocab *v);
bool tok_add_eos(const tok_vocab *v);
/* End of generation: eos, eot, eom and the usual end-of-turn pieces. */
bool tok_is_eog(const tok_vocab *v, int32_t id);
/* Control or unknown: not shown when decoding with remove_special. */
bool tok_is_control(const tok_vocab *v, int32_t id);
enum tok_type tok_token_type(const tok_vocab *v, int32_t id);
float tok_token_score(const tok_vocab *v, int32_t id);

/* The piece as stored in the vocabulary (e.g. "Ġthe", "▁the", "<0x0A>"),
 * {NULL, 0} for an id out of range. */
struct tok_piece tok_token_text(const tok_vocab *v, int32_t id);
/* The bytes the id stands for in text (e.g. " the", "\n"); control pieces
 * give their text. {NULL, 0} for an id out of range. */
struct tok_piece tok_token_bytes(const tok_vocab *v, int32_t id);
/* Stored piece -> id in O(1); -1 if absent. */
int32_t tok_find(const tok_vocab *v, const char *text, size_t len);

/* What a tokenize call could not represent. */
struct tok_encode_stats {
	/* Bytes of the text that no id stands for and that were left out:
	 * bytes without a piece in a vocabulary that lacks some single bytes
	 * (Whisper's, for example) and has no <unk> to fall back to; in WPM
	 * also invalid UTF-8 and words without a piece when there is no
	 * [UNK]. Counted in the text the algorithm works on: the input,
	 * except where it is normalised first (NFC, BERT's lowercasing). */
	size_t dropped_bytes;
};

/* Tokenize len bytes of text (any bytes; invalid UTF-8 is kept as bytes).
 * add_special: BOS/EOS (or CLS/SEP) as the vocabulary's metadata says.
 * parse_special: control tokens written in the text become their ids;
 * user-defined tokens are always recognised (as the reference does).
 * Writes up to cap ids; *n_out gets the number needed (call again with a
 * larger buffer if it exceeds cap). stats may be NULL. */
int tok_tokenize(const tok_vocab *v, const char *text, size_t len,
		 bool add_special, bool parse_special, int32_t *ids, size_t cap,
		 size_t *n_out, struct tok_encode_stats *stats, tern_err *e);

/* Concatenate the bytes of n ids. remove_special drops control/unknown
 * pieces (BOS, EOS, ...). For SPM vocabularies with a space prefix the
 * leading space the tokenizer added is removed again, so that
 * detokenize(tokenize(x)) == x. Writes up to cap bytes (no terminator);
 * *n_out gets the number needed. Ids out of range are an error. */
int tok_detokenize(const tok_vocab *v, const int32_t *ids, size_t n,
		   bool remove_special, char *buf, size_t cap, size_t *n_out,
		   tern_err *e);

/* Streaming detokenizer for generation: push ids one at a time and get the
 * text that is complete so far. Bytes of a UTF-8 sequence that is not yet
 * complete are held back until it is; an invalid sequence comes out as
 * U+FFFD. tok_stream_flush emits whatever is held (incomplete -> U+FFFD). */
typedef struct tok_stream tok_stream;
int tok_stream_new(tok_stream **out, const tok_vocab *v, bool remove_special,
		   tern_err *e);
void tok_stream_free(tok_stream *s);
/* Output is at most TOK_STREAM_MAX_OUT(piece length) bytes; with cap too
 * small nothing is consumed and TERN_ERANGE is returned with *n_out set to
 * the size needed. */
#define TOK_STREAM_MAX_OUT(piece_len) (3 * ((piece_len) + 4))
int tok_stream_push(tok_stream *s, int32_t id, char *buf, size_t cap,
		    size_t *n_out, tern_err *e);
int tok_stream_flush(tok_stream *s, char *buf, size_t cap, size_t *n_out);
/* Longest stored piece in bytes (for sizing stream buffers). */
size_t tok_max_piece_len(const tok_vocab *v);

#endif
