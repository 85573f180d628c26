/* generate.c - the generation loop (generate.h): prompt in batches, then
 * sample, stream through tok_stream, hold back what may begin a stop
 * string, stop.
 *
 * Text flow of one token: tok_stream turns the id into whole UTF-8
 * characters (held back while a character is incomplete); they are
 * appended to `pend`; a stop string found in `pend` ends the loop (the
 * text before it is emitted, the rest dropped); otherwise everything but
 * the longest tail of `pend` that is a proper prefix of some stop string
 * is emitted. pend therefore never holds more than the longest stop
 * string plus one token's text, and is sized for that at creation. */
#include "lib/llm/generate.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lib/core/utf8.h"

struct tern_gen {
	struct tern_llm *llm;
	const tok_vocab *v;
	struct tern_sampler *s;
	struct tern_gen_opts o;
	int32_t n_vocab;

	char stop[TERN_GEN_MAX_STOP][TERN_GEN_MAX_STOP_LEN];
	size_t stop_len[TERN_GEN_MAX_STOP];
	size_t max_stop;

	tok_stream *stream;
	char *piece;            /* one token's stream output */
	size_t piece_cap;
	char *pend;             /* text not emitted yet */
	size_t pend_len, pend_cap;

	float *masked;          /* ignore_eos: the logits with every EOG at -inf */
	int32_t *eog;           /* the EOG ids */
	int32_t n_eog;
	struct tern_gen_alt *top; /* n_logprobs: the report's alternatives */
	struct tern_sample_cand *cand; /* n_vocab, to select them */
};

const char *tern_finish_name(enum tern_finish f)
{
	switch (f) {
	case TERN_FINISH_STOP: return "stop";
	case TERN_FINISH_LENGTH: return "length";
	case TERN_FINISH_CANCEL: return "cancel";
	default: return "none";
	}
}

static double now_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

void tern_gen_free(struct tern_gen *g)
{
	if (!g)
		return;
	tok_stream_free(g->stream);
	free(g->piece);
	free(g->pend);
	free(g->masked);
	free(g->eog);
	free(g->top);
	free(g->cand);
	free(g);
}

int tern_gen_new(struct tern_gen **out, struct tern_llm *llm, const tok_vocab *v, struct tern_sampler *s,
		 const struct tern_gen_opts *o, tern_err *e)
{
	*out = NULL;
	if (o->n_stop < 0 || o->n_stop > TERN_GEN_MAX_STOP)
		return tern_errf(e, TERN_EINVAL, "at most %d stop strings, not %d", TERN_GEN_MAX_STOP, o->n_stop);
	if (o->n_logprobs < 0 || o->n_logprobs > TERN_GEN_MAX_LOGPROBS)
		return tern_errf(e, TERN_EINVAL, "logprobs: 0..%d alternatives, not %d", TERN_GEN_MAX_LOGPROBS,
				 o->n_logprobs);
	if (tok_n_vocab(v) != tern_llm_n_vocab(llm))
		return tern_errf(e, TERN_EFORMAT, "the vocabulary has %d tokens, the model %d", tok_n_vocab(v),
				 tern_llm_n_vocab(llm));
	struct tern_gen *g = calloc(1, sizeof *g);
	if (!g)
		return tern_errf(e, TERN_ENOMEM, "out of memory");
	g->llm = llm;
	g->v = v;
	g->s = s;
	g->o = *o;
	g->o.stop = NULL;
	g->n_vocab = tern_llm_n_vocab(llm);
	for (int i = 0; i < o->n_stop; i++) {
		size_t n = o->stop[i] ? strlen(o->stop[i]) : 0;
		if (n == 0 || n > TERN_GEN_MAX_STOP_LEN) {
			tern_gen_free(g);
			return tern_errf(e, TERN_EINVAL, "a stop string must have 1..%d bytes, not %zu",
					 TERN_GEN_MAX_STOP_LEN, n);
		}
		memcpy(g->stop[i], o->stop[i], n);
		g->stop_len[i] = n;
		g->max_stop = n > g->max_stop ? n : g->max_stop;
	}
	int rc = tok_stream_new(&g->stream, v, !o->print_special, e);
	if (rc) {
		tern_gen_free(g);
		return rc;
	}
	g->piece_cap = TOK_STREAM_MAX_OUT(tok_max_piece_len(v)) + 8; /* + the flush's U+FFFD */
	g->pend_cap = g->piece_cap + g->max_stop + 8;
	g->piece = malloc(g->piece_cap);
	g->pend = malloc(g->pend_cap);
	if (o->n_logprobs) {
		g->top = calloc((size_t)o->n_logprobs, sizeof *g->top);
		g->cand = malloc(sizeof *g->cand * (size_t)g->n_vocab);
	}
	if (o->ignore_eos) {
		g->masked = malloc(sizeof(float) * (size_t)g->n_vocab);
		for (int32_t id = 0; id < g->n_vocab; id++)
			g->n_eog += tok_is_eog(v, id);
		g->eog = malloc(sizeof(int32_t) * (size_t)(g->n_eog ? g->n_eog : 1));
		if (g->eog) {
			int32_t k = 0;
			for (int32_t id = 0; id < g->n_vocab; id++)
				if (tok_is_eog(v, id))
					g->eog[k++] = id;
		}
	}
	if (!g->piece || !g->pend || (o->n_logprobs && (!g->top || !g->cand)) || (o->ignore_eos && (!g->masked || !g->eog))) {
		tern_gen_free(g);
		return tern_errf(e, TERN_ENOMEM, "out of memory");
	}
	*out = g;
	return 0;
}

/* ---- log-probabilities ------------------------------------------------------- */

/* the chosen token's log-softmax and the n best alternatives */
static void logprobs(struct tern_gen *g, const float *lg, int32_t id, struct tern_gen_token *t)
{
	float mx = -INFINITY;
	for (int32_t i = 0; i < g->n_vocab; i++)
		mx = lg[i] > mx ? lg[i] : mx;
	double sum = 0;
	for (int32_t i = 0; i < g->n_vocab; i++)
		sum += exp((double)lg[i] - mx);
	double lse = (double)mx + log(sum);
	int32_t n = g->o.n_logprobs < g->n_vocab ? g->o.n_logprobs : g->n_vocab;
	for (int32_t i = 0; i < g->n_vocab; i++)
		g->cand[i] = (struct tern_sample_cand){i, lg[i]};
	tern_sample_top(g->cand, g->n_vocab, n); /* the best logits are the best log-probabilities */
	for (int32_t i = 0; i < n; i++)
		g->top[i] = (struct tern_gen_alt){g->cand[i].id, (float)((double)g->cand[i].logit - lse)};
	t->id = id;
	t->logprob = (float)((double)lg[id] - lse);
	t->top = g->top;
	t->n_top = n;
	struct tok_piece p = tok_token_bytes(g->v, id);
	t->piece = p.ptr;
	t->piece_len = p.len;
}

/* ---- text ----------------------------------------------------------------- */

/* where a stop string starts in pend, or -1 */
static int64_t find_stop(const struct tern_gen *g)
{
	int64_t best = -1;
	for (int i = 0; i < g->o.n_stop; i++) {
		size_t n = g->stop_len[i];
		for (size_t at = 0; at + n <= g->pend_len; at++) {
			if (memcmp(g->pend + at, g->stop[i], n) == 0) {
				if (best < 0 || (int64_t)at < best)
					best = (int64_t)at;
				break;
			}
		}
	}
	return best;
}

/* length of pend's head that cannot be part of a stop string */
static size_t safe_len(const struct tern_gen *g)
{
	size_t keep = 0; /* the longest tail that is a proper prefix of a stop string */
	for (int i = 0; i < g->o.n_stop; i++) {
		size_t n = g->stop_len[i];
		size_t lim = n - 1 < g->pend_len ? n - 1 : g->pend_len;
		for (size_t k = lim; k > keep; k--)
			if (memcmp(g->pend + g->pend_len - k, g->stop[i], k) == 0) {
				keep = k;
				break;
			}
	}
	size_t cut = g->pend_len - keep;
	/* never split a character (a stop string that starts inside one) */
	while (cut > 0 && cut < g->pend_len && ((unsigned char)g->pend[cut] & 0xC0) == 0x80)
		cut--;
	return cut;
}

/* hand n bytes of pend to the callback and drop them; nonzero: stop */
static int emit(struct tern_gen *g, const struct tern_gen_cb *cb, size_t n)
{
	int stop = 0;
	if (n && cb && cb->text)
		stop = cb->text(cb->ud, g->pend, n);
	memmove(g->pend, g->pend + n, g->pend_len - n);
	g->pend_len -= n;
	return stop;
}

/* append a token's text; emit what is final. Returns the finish reason
 * it caused (NONE to go on). */
static enum tern_finish add_text(struct tern_gen *g, const struct tern_gen_cb *cb, const char *s, size_t n,
				 bool last)
{
	memcpy(g->pend + g->pend_len, s, n);
	g->pend_len += n;
	int64_t at = find_stop(g);
	if (at >= 0) {
		g->pend_len = (size_t)at;
		emit(g, cb, (size_t)at);
		g->pend_len = 0;
		return TERN_FINISH_STOP;
	}
	size_t cut = last ? g->pend_len : safe_len(g);
	return emit(g, cb, cut) ? TERN_FINISH_CANCEL : TERN_FINISH_NONE;
}

/* ---- the loop ----------------------------------------------------------------- */

static bool cancelled(const struct tern_gen *g)
{
	return g->o.cancel && *g->o.cancel;
}

/* The next token: the device's greedy pick where the last decode made one
 * (tern_llm_set_greedy), else the sampler's over the logits lg (the EOGs
 * masked with ignore_eos); TERN_ERANGE when every logit is -inf or NaN. */
static int32_t pick(struct tern_gen *g, const float *lg)
{
	int32_t id;
	if (!lg) {
		if (!tern_llm_greedy_id(g->llm, &id))
			return TERN_ERANGE; /* tern_gen_run checked that the last decode kept one or the other */
		return id < 0 ? TERN_ERANGE : id;
	}
	const float *choose = lg;
	if (g->masked) {
		memcpy(g->masked, lg, sizeof(float) * (size_t)g->n_vocab);
		for (int32_t i = 0; i < g->n_eog; i++)
			g->masked[g->eog[i]] = -INFINITY;
		choose = g->masked;
	}
	return tern_sample(g->s, choose);
}

int tern_gen_run(struct tern_gen *g, const int32_t *prompt, int32_t n_prompt, const struct tern_gen_cb *cb,
		 struct tern_gen_stats *st, tern_err *e)
{
	*st = (struct tern_gen_stats){0};
	struct tern_llm *l = g->llm;
	int32_t n_ctx = tern_llm_n_ctx(l), n_past = tern_llm_n_past(l), gid;
	/* a greedy chain with nothing that needs the logits (no EOG mask, no
	 * log-probabilities): the argmax is taken on the device */
	tern_llm_set_greedy(l, tern_sample_is_greedy(g->s) && !g->masked && !g->o.n_logprobs);
	if (n_prompt < 0 || (n_prompt == 0 && !tern_llm_logits(l, -1) && !tern_llm_greedy_id(l, &gid)))
		return tern_errf(e, TERN_EINVAL, "generate: an empty prompt");
	if (n_prompt > n_ctx - n_past)
		return tern_errf(e, TERN_ERANGE, "the prompt of %d tokens does not fit the context of %d%s", n_prompt,
				 n_ctx, n_past ? " (with what came before)" : "");
	g->pend_len = 0;
	double t0 = now_ms();
	int32_t nb = g->o.n_batch > 0 ? g->o.n_batch : TERN_LLM_DEFAULT_BATCH;
	for (int32_t i = 0; i < n_prompt; i += nb) {
		if (cancelled(g)) {
			st->finish = TERN_FINISH_CANCEL;
			st->n_prompt = i;
			st->prompt_ms = now_ms() - t0;
			return 0;
		}
		int32_t n = n_prompt - i < nb ? n_prompt - i : nb;
		int rc = tern_llm_decode(l, prompt + i, n, e);
		if (rc)
			return rc;
	}
	for (int32_t i = 0; i < n_prompt; i++)
		tern_sample_accept(g->s, prompt[i]);
	st->n_prompt = n_prompt;
	double t1 = now_ms();
	st->prompt_ms = t1 - t0;

	enum tern_finish fin = g->o.n_predict == 0 ? TERN_FINISH_LENGTH : TERN_FINISH_NONE;
	size_t n_piece = 0;
	while (fin == TERN_FINISH_NONE) {
		if (cancelled(g)) {
			fin = TERN_FINISH_CANCEL;
			break;
		}
		const float *lg = tern_llm_logits(l, -1);
		int32_t id = pick(g, lg);
		if (id < 0) {
			st->gen_ms = now_ms() - t1;
			return tern_errf(e, TERN_ERANGE, "generate: every logit is -inf or NaN");
		}
		st->n_gen++;
		if (tok_is_eog(g->v, id) && !g->o.ignore_eos) {
			fin = TERN_FINISH_STOP;
			break;
		}
		tern_sample_accept(g->s, id);
		if (g->o.n_logprobs && cb && cb->token) {
			struct tern_gen_token t;
			logprobs(g, lg, id, &t);
			cb->token(cb->ud, &t);
		}
		int rc = tok_stream_push(g->stream, id, g->piece, g->piece_cap, &n_piece, e);
		if (rc) {
			st->gen_ms = now_ms() - t1;
			return rc;
		}
		fin = add_text(g, cb, g->piece, n_piece, false);
		if (fin != TERN_FINISH_NONE)
			break;
		if ((g->o.n_predict >= 0 && st->n_gen >= g->o.n_predict) || tern_llm_n_past(l) >= n_ctx) {
			fin = TERN_FINISH_LENGTH;
			break;
		}
		rc = tern_llm_decode(l, &id, 1, e);
		if (rc) {
			st->gen_ms = now_ms() - t1;
			return rc;
		}
	}
	/* what the stream and the stop-string check still hold: released
	 * unless a stop string matched or the callback refused more text */
	bool refused = fin == TERN_FINISH_CANCEL && !cancelled(g);
	if (tok_stream_flush(g->stream, g->piece, g->piece_cap, &n_piece) == 0 && fin != TERN_FINISH_STOP &&
	    !refused) {
		enum tern_finish f2 = add_text(g, cb, g->piece, n_piece, true);
		if (f2 == TERN_FINISH_STOP)
			fin = f2;
	}
	g->pend_len = 0;
	st->finish = fin;
	st->gen_ms = now_ms() - t1;
	return 0;
}
