/* tok_decode.c - token ids -> text, whole or streamed.
 *
 * Each id stands for the bytes worked out when the vocabulary was built
 * (byte-level decoded for BPE, "▁" -> " " for SPM, <0xXX> -> one byte).
 * Control pieces can be dropped. SPM vocabularies that put a space in front
 * of the text get it removed again from the first piece, as the reference
 * decoders do, so that decoding undoes encoding.
 *
 * The stream decoder is for generation: a token may end in the middle of a
 * UTF-8 sequence (byte fallback pieces, byte-level BPE), and a terminal must
 * never see half a character, so incomplete tails are held back. */
#include "tokenizer/tok_internal.h"
#include "lib/core/utf8.h"

#include <stdlib.h>
#include <string.h>

static bool skip_token(const tok_vocab *v, int32_t id, bool remove_special)
{
	uint8_t t = v->tok[id].type;
	return remove_special && (t == TOK_TYPE_CONTROL || t == TOK_TYPE_UNKNOWN);
}

static bool strips_space(const tok_vocab *v)
{
	return v->model == TOK_MODEL_SPM && v->add_space_prefix;
}

int tok_detokenize(const tok_vocab *v, const int32_t *ids, size_t n, bool remove_special, char *buf, size_t cap,
		   size_t *n_out, tern_err *e)
{
	size_t total = 0;
	bool first = true;
	*n_out = 0;
	for (size_t i = 0; i < n; i++) {
		int32_t id = ids[i];
		if (id < 0 || id >= v->n)
			return tern_errf(e, TERN_ERANGE, "detokenize: id %d at position %zu is outside the vocabulary (%d tokens)",
					 id, i, v->n);
		if (skip_token(v, id, remove_special))
			continue;
		struct tok_piece p = tok_token_bytes(v, id);
		if (first && strips_space(v) && p.len && p.ptr[0] == ' ') {
			p.ptr++;
			p.len--;
		}
		first = false;
		if (buf && total < cap)
			memcpy(buf + total, p.ptr, p.len < cap - total ? p.len : cap - total);
		total += p.len;
	}
	*n_out = total;
	return 0;
}

/* ---- streaming ---------------------------------------------------------- */

struct tok_stream {
	const tok_vocab *v;
	bool remove_special;
	bool started;     /* something came out already */
	unsigned char pend[4];
	size_t npend;
	unsigned char *join; /* [max piece + 4] */
};

int tok_stream_new(tok_stream **out, const tok_vocab *v, bool remove_special, tern_err *e)
{
	tok_stream *s = calloc(1, sizeof *s);
	*out = NULL;
	if (!s || !(s->join = malloc(tok_max_piece_len(v) + 8))) {
		free(s);
		return tern_errf(e, TERN_ENOMEM, "tokenizer: out of memory");
	}
	*out = s;
	s->v = v;
	s->remove_special = remove_special;
	return 0;
}

void tok_stream_free(tok_stream *s)
{
	if (s)
		free(s->join);
	free(s);
}

/* Emit the complete characters of src[0..n); keep an incomplete tail in
 * the stream (final: replace it instead). Returns bytes written. */
static size_t drain(tok_stream *s, const unsigned char *src, size_t n, char *out, bool final)
{
	size_t o = 0, i = 0;
	while (i < n) {
		size_t bad = 0;
		int l = tern_utf8_seq(src + i, n - i, &bad);
		if (l > 0) {
			memcpy(out + o, src + i, (size_t)l);
			o += (size_t)l;
			i += (size_t)l;
		} else if (l == 0 && !final) {
			memcpy(s->pend, src + i, n - i);
			s->npend = n - i;
			return o;
		} else { /* one U+FFFD per maximal ill-formed subpart */
			memcpy(out + o, TERN_UTF8_REPLACEMENT, 3);
			o += 3;
			i += bad;
		}
	}
	s->npend = 0;
	return o;
}

int tok_stream_push(tok_stream *s, int32_t id, char *buf, size_t cap, size_t *n_out, tern_err *e)
{
	const tok_vocab *v = s->v;
	*n_out = 0;
	if (id < 0 || id >= v->n)
		return tern_errf(e, TERN_ERANGE, "detokenize: id %d is outside the vocabulary (%d tokens)", id, v->n);
	if (skip_token(v, id, s->remove_special))
		return 0;
	struct tok_piece p = tok_token_bytes(v, id);
	if (!s->started && strips_space(v) && p.len && p.ptr[0] == ' ') {
		p.ptr++;
		p.len--;
	}
	s->started = true;
	if (p.len == 0)
		return 0;
	size_t need = TOK_STREAM_MAX_OUT(p.len);
	if (cap < need) {
		*n_out = need;
		return tern_errf(e, TERN_ERANGE, "detokenize: stream buffer of %zu bytes, %zu needed", cap, need);
	}
	/* the held bytes and the piece, joined in the stream's buffer (sized
	 * for the longest piece when the stream was made) */
	memcpy(s->join, s->pend, s->npend);
	memcpy(s->join + s->npend, p.ptr, p.len);
	*n_out = drain(s, s->join, s->npend + p.len, buf, false);
	return 0;
}

int tok_stream_flush(tok_stream *s, char *buf, size_t cap, size_t *n_out)
{
	*n_out = 0;
	if (!s->npend)
		return 0;
	if (cap < 3 * s->npend) {
		*n_out = 3 * s->npend;
		return TERN_ERANGE;
	}
	unsigned char tmp[4];
	size_t n = s->npend;
	memcpy(tmp, s->pend, n);
	*n_out = drain(s, tmp, n, buf, true);
	return 0;
}
