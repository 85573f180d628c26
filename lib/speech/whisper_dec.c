/* whisper_dec.c - Whisper's text decoder over the backend operation table
 * (whisper.h). The graph is whisper.cpp's:
 *
 *   x = token_embedding[tok] + positional_embedding[pos]
 *   per block:  x += W_o selfattn(LN(x)) + b_o          (causal, cached)
 *               x += W_xo crossattn(LN(x), audio) + b_xo (every audio position)
 *               x += W_2 gelu(W_1 LN(x) + b_1) + b_2
 *   logits = token_embedding . LN(x)      (the last token only)
 *
 * Keys and values of the audio (W_xk enc, W_xv enc + b_xv) are computed
 * once per window into f16 caches of n_audio_ctx rows; the self-attention
 * keeps f16 caches of n_text_ctx rows, one per sequence (the beams of a
 * beam search; whisper_decoder_copy_seq forks one into another), all of a
 * layer in one buffer {hd, n_head, n_text_ctx, n_seq};
 * whisper_decode_multi runs one token of each of several sequences in one
 * pass, each layer's cache stored and attended in one call with the
 * tokens' sequences in a device buffer (kv_store's and attention's seq).
 * Queries of the cross attention are given the last audio position, so
 * that none of it is masked.
 *
 * In whisper.cpp's numerics (WHISPER_NUMERICS_GGML) the products' inputs
 * are rounded to f16, the GELU is ggml's table, Q and K are scaled by
 * hd^-1/4 each before K is stored, the audio caches are padded with zero
 * rows to a multiple of 256 and seen whole, and below 64 tokens the
 * attention is ggml's f16 flash attention (tern_attn.f16_split), with the
 * audio's keys of a lone token split as ggml splits them over its threads
 * (whisper_decoder_set_split). */
#include "lib/speech/whisper.h"

#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "lib/speech/whisper_impl.h"
#include "quant/quant.h"

struct dec_layer {
	struct whisper_block_bufs self;
	struct tern_buf xln_w, xln_b, xq_w, xq_b, xk_w, xv_w, xv_b, xo_w, xo_b;
	struct tern_buf kc, vc;   /* the self-attention caches {hd, n_head, n_text_ctx, n_seq} f16 */
	struct tern_buf xkc, xvc; /* the audio's {hd, n_head, n_audio_ctx} f16 */
};

struct whisper_decoder {
	const struct whisper_model *m;
	struct tern_backend *be;
	int n_state, n_head, n_text_ctx, n_audio_ctx, n_vocab, n_batch;
	int n_seq; /* self-attention caches per layer: one per sequence (beam) */
	bool gg;   /* whisper_numerics_ggml */
	int64_t n_akv; /* rows of the audio's K, V caches: n_audio_ctx, or whisper.cpp's padding */
	int split;     /* ggml's chunks of the audio's keys for a lone token (whisper_decoder_set_split) */
	struct dec_layer *layers;
	struct tern_buf te, pe, ln_w, ln_b;
	struct tern_buf ids, pos, seq, audio_pos, audio_last; /* seq: each token's sequence */
	struct tern_buf x, y, q, t, a, ff, xt, yl, logits;
	struct tern_buf aud, r16; /* the audio rounded to f16; f16 scratch (GGML numerics) */
	struct tern_buf logits_n; /* {n_vocab, WHISPER_DECODE_MULTI_MAX}: a step's logits */
	int32_t pos_host[448];    /* positions of a prompt (n_text_ctx <= 448) */
	/* the backend's host memory (pinned on a GPU): zeros for the audio
	 * caches and positions at load; a step's token ids [0, n_batch),
	 * positions [n_batch, 2 n_batch) and sequences [2 n_batch, 3 n_batch) */
	int32_t *host;
	float *host_logits; /* [WHISPER_DECODE_MULTI_MAX][n_vocab]: a step's logits */
};

/* The cross-attention's tensors of a block (whisper.h), the buffers they
 * load into, and whether they are a product's weights. */
#define XATTN_WEIGHT(buf, tensor, matrix)                                                                   \
	{offsetof(struct dec_layer, buf), offsetof(struct whisper_dec_layer, tensor), matrix}
static const struct xattn_weight {
	size_t buf, tensor;
	bool matrix;
} xattn_weights[] = {
	XATTN_WEIGHT(xln_w, xattn_ln_w, false), XATTN_WEIGHT(xln_b, xattn_ln_b, false),
	XATTN_WEIGHT(xq_w, xq_w, true), XATTN_WEIGHT(xq_b, xq_b, false),
	XATTN_WEIGHT(xk_w, xk_w, true),
	XATTN_WEIGHT(xv_w, xv_w, true), XATTN_WEIGHT(xv_b, xv_b, false),
	XATTN_WEIGHT(xo_w, xo_w, true), XATTN_WEIGHT(xo_b, xo_b, false),
};
#undef XATTN_WEIGHT

/* Block l: its weights, and the audio's K and V caches, zeroed from
 * d->host (still all zeros) so that the padding rows stay zeros. */
static int load_block(struct whisper_decoder *d, int l, tern_err *e)
{
	struct tern_backend *be = d->be;
	const struct whisper_dec_layer *s = &d->m->dec[l];
	struct dec_layer *L = &d->layers[l];
	const int64_t ns = d->n_state, hd = ns / d->n_head;
	int rc = whisper_block_load(be, &L->self, &s->self, e);
	for (size_t i = 0; !rc && i < sizeof xattn_weights / sizeof xattn_weights[0]; i++) {
		const struct xattn_weight *w = &xattn_weights[i];
		struct tern_buf *b = (struct tern_buf *)((char *)L + w->buf);
		const struct tern_tensor_view *t = *(const struct tern_tensor_view *const *)((const char *)s + w->tensor);
		rc = whisper_buf_weight(be, b, t, w->matrix, e);
	}
	if (!rc) rc = whisper_buf_act(be, &L->xkc, QT_F16, 3, hd, d->n_head, d->n_akv, e);
	if (!rc) rc = whisper_buf_act(be, &L->xvc, QT_F16, 3, hd, d->n_head, d->n_akv, e);
	if (!rc) {
		be->upload(be, &L->xkc, 0, d->host, 2 * (size_t)(ns * d->n_akv));
		be->upload(be, &L->xvc, 0, d->host, 2 * (size_t)(ns * d->n_akv));
		rc = be->sync(be, e);
	}
	return rc;
}

static int load_weights(struct whisper_decoder *d, tern_err *e)
{
	struct tern_backend *be = d->be;
	const struct whisper_model *m = d->m;
	int rc = whisper_buf_weight(be, &d->te, m->d_te, true, e);
	if (!rc) rc = whisper_buf_weight(be, &d->pe, m->d_pe, false, e);
	if (!rc) rc = whisper_buf_weight(be, &d->ln_w, m->d_ln_w, false, e);
	if (!rc) rc = whisper_buf_weight(be, &d->ln_b, m->d_ln_b, false, e);
	for (int l = 0; !rc && l < m->hp.n_text_layer; l++)
		rc = load_block(d, l, e);
	return rc;
}

/* a step's activations, n_batch tokens wide; with whisper.cpp's numerics
 * the audio rounded to f16 and an f16 scratch as wide as the widest input */
static int acts_alloc(struct whisper_decoder *d, tern_err *e)
{
	struct tern_backend *be = d->be;
	const int64_t ns = d->n_state, nb = d->n_batch, na = d->n_audio_ctx;
	int rc = whisper_buf_act(be, &d->ids, QT_I32, 1, nb, 1, 1, e);
	if (!rc) rc = whisper_buf_act(be, &d->pos, QT_I32, 1, nb, 1, 1, e);
	if (!rc) rc = whisper_buf_act(be, &d->seq, QT_I32, 1, nb, 1, 1, e);
	if (!rc) rc = whisper_buf_act(be, &d->audio_pos, QT_I32, 1, na, 1, 1, e);
	if (!rc) rc = whisper_buf_act(be, &d->audio_last, QT_I32, 1, nb, 1, 1, e);
	if (!rc) rc = whisper_buf_act(be, &d->x, QT_F32, 2, ns, nb, 1, e);
	if (!rc) rc = whisper_buf_act(be, &d->y, QT_F32, 2, ns, nb, 1, e);
	if (!rc) rc = whisper_buf_act(be, &d->q, QT_F32, 2, ns, nb, 1, e);
	if (!rc) rc = whisper_buf_act(be, &d->t, QT_F32, 2, ns, nb, 1, e);
	if (!rc) rc = whisper_buf_act(be, &d->a, QT_F32, 2, ns, nb, 1, e);
	if (!rc) rc = whisper_buf_act(be, &d->ff, QT_F32, 2, 4 * ns, nb, 1, e);
	if (!rc) rc = whisper_buf_act(be, &d->xt, QT_F32, 2, ns, na, 1, e);
	if (!rc) rc = whisper_buf_act(be, &d->yl, QT_F32, 1, ns, 1, 1, e);
	if (!rc) rc = whisper_buf_act(be, &d->logits, QT_F32, 1, d->n_vocab, 1, 1, e);
	if (!rc) rc = whisper_buf_act(be, &d->logits_n, QT_F32, 2, d->n_vocab, WHISPER_DECODE_MULTI_MAX, 1, e);
	if (!rc && d->gg) rc = whisper_buf_act(be, &d->aud, QT_F32, 2, ns, na, 1, e);
	if (!rc && d->gg) rc = whisper_buf_act(be, &d->r16, QT_F16, 1, 4 * ns * nb > ns * na ? 4 * ns * nb : ns * na, 1, 1, e);
	return rc;
}

/* What stays put from one step to the next: the audio's positions, and
 * the last of them, which every query is given so that none is masked. */
static int upload_audio_positions(struct whisper_decoder *d, tern_err *e)
{
	struct tern_backend *be = d->be;
	const int64_t nb = d->n_batch, na = d->n_audio_ctx;
	for (int64_t i = 0; i < na; i++)
		d->host[i] = (int32_t)i;
	be->upload(be, &d->audio_pos, 0, d->host, sizeof(int32_t) * (size_t)na);
	int rc = be->sync(be, e);
	if (!rc) {
		for (int64_t i = 0; i < nb; i++)
			d->host[i] = (int32_t)(d->n_akv - 1);
		be->upload(be, &d->audio_last, 0, d->host, sizeof(int32_t) * (size_t)nb);
		rc = be->sync(be, e);
	}
	return rc;
}

int whisper_decoder_new(struct whisper_decoder **out, const struct whisper_model *m, struct tern_backend *be,
			tern_err *e)
{
	*out = NULL;
	struct whisper_decoder *d = calloc(1, sizeof(*d));
	if (!d)
		return tern_errf(e, TERN_ENOMEM, "out of memory for the decoder");
	d->m = m;
	d->be = be;
	d->n_state = m->hp.n_text_state;
	d->n_head = m->hp.n_text_head;
	d->n_text_ctx = m->hp.n_text_ctx;
	d->n_audio_ctx = m->hp.n_audio_ctx;
	d->n_vocab = m->hp.n_vocab;
	d->n_batch = be->max_tokens < d->n_text_ctx ? (int)be->max_tokens : d->n_text_ctx;
	const int64_t ns = d->n_state, nb = d->n_batch, na = d->n_audio_ctx;
	d->gg = whisper_numerics_ggml(m, be);
	d->n_akv = d->gg ? whisper_pad256(na) : na;
	d->split = 1;
	/* int32s: the zeros of an f16 cache, or positions and ids */
	const int64_t nhost = ns * d->n_akv / 2 > 3 * nb ? ns * d->n_akv / 2 : 3 * nb;
	d->layers = calloc((size_t)m->hp.n_text_layer, sizeof(*d->layers));
	if (!d->layers) {
		whisper_decoder_free(d);
		return tern_errf(e, TERN_ENOMEM, "out of memory for the decoder");
	}
	int rc = be->host_alloc(be, sizeof(int32_t) * (size_t)nhost, (void **)&d->host, e);
	if (!rc)
		rc = be->host_alloc(be, sizeof(float) * (size_t)d->n_vocab * WHISPER_DECODE_MULTI_MAX,
				    (void **)&d->host_logits, e);
	if (!rc) {
		memset(d->host, 0, sizeof(int32_t) * (size_t)nhost);
		rc = load_weights(d, e);
	}
	if (!rc) rc = whisper_decoder_set_n_seq(d, 1, e);
	if (!rc) rc = acts_alloc(d, e);
	if (!rc) rc = upload_audio_positions(d, e);
	if (rc) {
		whisper_decoder_free(d);
		return rc;
	}
	*out = d;
	return 0;
}

/* the self-attention caches of every layer */
static void free_caches(struct whisper_decoder *d)
{
	for (int l = 0; d->layers && l < d->m->hp.n_text_layer; l++) {
		struct tern_buf *const cb[] = {&d->layers[l].kc, &d->layers[l].vc};
		whisper_bufs_free(d->be, cb, 2);
	}
	d->n_seq = 0;
}

int whisper_decoder_set_n_seq(struct whisper_decoder *d, int n_seq, tern_err *e)
{
	if (n_seq < 1 || n_seq > 64)
		return tern_errf(e, TERN_EINVAL, "%d decoder sequences (1 to 64)", n_seq);
	if (n_seq == d->n_seq)
		return 0;
	free_caches(d);
	const int64_t ne[4] = {d->n_state / d->n_head, d->n_head, d->n_text_ctx, n_seq};
	for (int l = 0; l < d->m->hp.n_text_layer; l++) {
		struct dec_layer *L = &d->layers[l];
		int rc = d->be->buf_alloc(d->be, &L->kc, QT_F16, 4, ne, e);
		if (!rc)
			rc = d->be->buf_alloc(d->be, &L->vc, QT_F16, 4, ne, e);
		if (rc) {
			free_caches(d);
			return rc;
		}
	}
	d->n_seq = n_seq;
	return 0;
}

void whisper_decoder_set_split(struct whisper_decoder *d, int split)
{
	d->split = split < 1 ? 1 : split > 64 ? 64 : split;
}

int whisper_decoder_n_seq(const struct whisper_decoder *d)
{
	return d->n_seq;
}

/* sequence s of a cache {hd, n_head, n_ctx, n_seq}, as [n_ctx][n_state] */
static struct tern_buf seq_rows(const struct tern_buf *c, int s)
{
	struct tern_buf v = tern_buf_reshape(c, 2, (const int64_t[2]){c->ne[0] * c->ne[1], c->ne[2]});
	v.offset += (size_t)s * c->nb[3];
	return v;
}

int whisper_decoder_copy_seq(struct whisper_decoder *d, int src, int dst, int n, tern_err *e)
{
	if (src < 0 || src >= d->n_seq || dst < 0 || dst >= d->n_seq || n < 0 || n > d->n_text_ctx)
		return tern_errf(e, TERN_ERANGE, "cache copy %d -> %d of %d positions (%d sequences of %d)", src, dst, n,
				 d->n_seq, d->n_text_ctx);
	if (src == dst || n == 0)
		return 0;
	struct tern_backend *be = d->be;
	for (int l = 0; l < d->m->hp.n_text_layer; l++) {
		const struct tern_buf *c[2] = {&d->layers[l].kc, &d->layers[l].vc};
		for (int k = 0; k < 2; k++) {
			struct tern_buf a = seq_rows(c[k], src), b = seq_rows(c[k], dst);
			struct tern_buf ar = tern_buf_rows(&a, 0, n), br = tern_buf_rows(&b, 0, n);
			be->copy(be, &ar, &br);
		}
	}
	return 0;
}

void whisper_decoder_free(struct whisper_decoder *d)
{
	if (!d)
		return;
	struct tern_backend *be = d->be;
	struct tern_buf *const bufs[] = {&d->te,	 &d->pe, &d->ln_w, &d->ln_b, &d->ids,	&d->pos, &d->seq,
					 &d->audio_pos, &d->audio_last, &d->x,  &d->y,	    &d->q,	&d->t,
					 &d->a, &d->ff, &d->xt, &d->yl, &d->logits, &d->aud, &d->r16, &d->logits_n};
	whisper_bufs_free(be, bufs, sizeof(bufs) / sizeof(bufs[0]));
	free_caches(d);
	for (int l = 0; d->layers && l < d->m->hp.n_text_layer; l++) {
		struct dec_layer *L = &d->layers[l];
		whisper_block_free(be, &L->self);
		struct tern_buf *const lb[] = {&L->xln_w, &L->xln_b, &L->xq_w, &L->xq_b, &L->xk_w, &L->xv_w, &L->xv_b,
					       &L->xo_w,  &L->xo_b,  &L->xkc,  &L->xvc};
		whisper_bufs_free(be, lb, sizeof(lb) / sizeof(lb[0]));
	}
	free(d->layers);
	be->host_free(be, d->host);
	be->host_free(be, d->host_logits);
	free(d);
}

int whisper_decoder_set_audio(struct whisper_decoder *d, const struct tern_buf *enc, tern_err *e)
{
	struct tern_backend *be = d->be;
	const int64_t ns = d->n_state, hd = ns / d->n_head, na = d->n_audio_ctx;
	if (enc->ne[0] != ns || enc->ne[1] != na)
		return tern_errf(e, TERN_EINVAL, "audio of %lldx%lld for a decoder of %lldx%lld", (long long)enc->ne[0],
				 (long long)enc->ne[1], (long long)ns, (long long)na);
	const int64_t heads[3] = {hd, d->n_head, na};
	struct tern_buf t3 = tern_buf_reshape(&d->xt, 3, heads);
	if (d->gg) { /* every product with the audio rounds it to f16 */
		be->copy(be, enc, &d->aud);
		whisper_round_f16(be, NULL, &d->aud, &d->r16);
		enc = &d->aud;
	}
	for (int l = 0; l < d->m->hp.n_text_layer; l++) {
		struct dec_layer *L = &d->layers[l];
		whisper_mm(be, &L->xk_w, enc, &d->xt);
		be->kv_store(be, &L->xkc, &t3, &d->audio_pos, NULL);
		whisper_mm(be, &L->xv_w, enc, &d->xt);
		be->add(be, &d->xt, &L->xv_b, &d->xt);
		be->kv_store(be, &L->xvc, &t3, &d->audio_pos, NULL);
	}
	return be->sync(be, e);
}

/* whisper_round_f16 in whisper.cpp's numerics (tmp non-NULL) */
static void round16(struct tern_backend *be, const struct tern_buf *w, struct tern_buf *x, struct tern_buf *tmp)
{
	if (tmp)
		whisper_round_f16(be, w, x, tmp);
}

int whisper_decode(struct whisper_decoder *d, const int32_t *tokens, int n, int n_past, float *logits, tern_err *e)
{
	return whisper_decode_seq(d, 0, tokens, n, n_past, logits, e);
}

/* Feed tokens[n] at positions pos[n]: all of sequence seqs[0] (one == true:
 * a prompt; the logits of the last token into out[0]) or token i of
 * sequence seqs[i] (one == false: a step of several beams; the logits of
 * each into out[i]). Arguments are checked by the callers. */
static int decode(struct whisper_decoder *d, bool one, const int *seqs, const int32_t *tokens, const int32_t *posv,
		  int n, float *const *out, tern_err *e)
{
	struct tern_backend *be = d->be;
	const int64_t ns = d->n_state, hd = ns / d->n_head;
	const struct tern_norm ln = {.kind = TERN_NORM_LAYER, .eps = 1e-5f};
	const struct tern_attn at = {.scale = 1.0f / sqrtf((float)hd)};

	/* views of n tokens */
	struct tern_buf ids = tern_buf_reshape(&d->ids, 1, (int64_t[1]){n});
	struct tern_buf pos = tern_buf_reshape(&d->pos, 1, (int64_t[1]){n});
	struct tern_buf seq = tern_buf_reshape(&d->seq, 1, (int64_t[1]){n});
	struct tern_buf alast = tern_buf_reshape(&d->audio_last, 1, (int64_t[1]){n});
	struct tern_buf x = tern_buf_rows(&d->x, 0, n), y = tern_buf_rows(&d->y, 0, n);
	struct tern_buf q = tern_buf_rows(&d->q, 0, n), t = tern_buf_rows(&d->t, 0, n);
	struct tern_buf a = tern_buf_rows(&d->a, 0, n), ff = tern_buf_rows(&d->ff, 0, n);
	const int64_t heads[3] = {hd, d->n_head, n};
	struct tern_buf q3 = tern_buf_reshape(&q, 3, heads), t3 = tern_buf_reshape(&t, 3, heads);
	struct tern_buf a3 = tern_buf_reshape(&a, 3, heads);

	/* a step of one token per sequence is the same calls every time
	 * (lib/backend.h: replay); the prompts of several are not steps */
	const bool step = !one || n == 1;
	if (step)
		be->begin_step(be);
	/* ids, positions and each token's sequence (the cache it goes to
	 * and reads) are device data */
	int32_t *hid = d->host, *hpos = d->host + d->n_batch, *hseq = d->host + 2 * d->n_batch;
	memcpy(hid, tokens, sizeof(int32_t) * (size_t)n);
	memcpy(hpos, posv, sizeof(int32_t) * (size_t)n);
	for (int i = 0; i < n; i++)
		hseq[i] = seqs[one ? 0 : i];
	be->upload(be, &ids, 0, hid, sizeof(int32_t) * (size_t)n);
	be->upload(be, &pos, 0, hpos, sizeof(int32_t) * (size_t)n);
	be->upload(be, &seq, 0, hseq, sizeof(int32_t) * (size_t)n);
	be->get_rows(be, &d->te, &ids, &x);
	be->get_rows(be, &d->pe, &pos, &y);
	be->add(be, &x, &y, &x);

	/* whisper.cpp scales Q and K by hd^-1/4 each before K is stored */
	const float s4 = d->gg ? powf((float)hd, -0.25f) : 1.0f;
	/* ggml's flash attention: the f16 kernel below 64 query rows (its
	 * tiled f32 kernel from 64 on); a lone token's audio keys in chunks */
	const bool f16k = d->gg && n < 64;
	const struct tern_attn at_self = {.scale = d->gg ? 1.0f : at.scale, .f16_split = f16k ? 1 : 0};
	const struct tern_attn at_x = {.scale = at.scale, .f16_split = f16k ? (n == 1 ? d->split : 1) : 0};
	const int gelu = d->gg ? TERN_UNARY_GELU_F16 : TERN_UNARY_GELU;
	struct tern_buf *r16 = d->gg ? &d->r16 : NULL;
	const struct tern_buf *r = NULL; /* the residual still to add into x */
	for (int l = 0; l < d->m->hp.n_text_layer; l++) {
		struct dec_layer *L = &d->layers[l];
		const struct whisper_block_bufs *S = &L->self;
		/* self-attention, causal over each sequence's cache */
		be->norm(be, &x, r, &S->attn_ln_w, &S->attn_ln_b, &y, &ln);
		round16(be, &S->q_w, &y, r16);
		whisper_mm(be, &S->q_w, &y, &q);
		be->add(be, &q, &S->q_b, &q);
		whisper_mm(be, &S->k_w, &y, &t);
		if (d->gg) {
			be->scale(be, &q, &q, s4);
			be->scale(be, &t, &t, s4);
		}
		be->kv_store(be, &L->kc, &t3, &pos, &seq);
		whisper_mm(be, &S->v_w, &y, &t);
		be->add(be, &t, &S->v_b, &t);
		round16(be, NULL, &q, r16);
		be->kv_store(be, &L->vc, &t3, &pos, &seq);
		be->attention(be, &q3, &L->kc, &L->vc, &pos, &seq, &a3, &at_self);
		round16(be, &S->o_w, &a, r16);
		whisper_mm(be, &S->o_w, &a, &t);
		be->add(be, &t, &S->o_b, &t);
		/* attention over the audio */
		be->norm(be, &x, &t, &L->xln_w, &L->xln_b, &y, &ln);
		round16(be, &L->xq_w, &y, r16);
		whisper_mm(be, &L->xq_w, &y, &q);
		be->add(be, &q, &L->xq_b, &q);
		round16(be, NULL, &q, r16);
		be->attention(be, &q3, &L->xkc, &L->xvc, &alast, NULL, &a3, &at_x);
		round16(be, &L->xo_w, &a, r16);
		whisper_mm(be, &L->xo_w, &a, &t);
		be->add(be, &t, &L->xo_b, &t);
		/* MLP */
		be->norm(be, &x, &t, &S->mlp_ln_w, &S->mlp_ln_b, &y, &ln);
		round16(be, &S->mlp0_w, &y, r16);
		whisper_mm(be, &S->mlp0_w, &y, &ff);
		be->add(be, &ff, &S->mlp0_b, &ff);
		be->unary(be, &ff, &ff, gelu);
		round16(be, &S->mlp2_w, &ff, r16);
		whisper_mm(be, &S->mlp2_w, &ff, &t);
		be->add(be, &t, &S->mlp2_b, &t);
		r = &t;
	}
	if (one) { /* the last token only: its residual, its norm, its logits */
		struct tern_buf xl = tern_buf_rows(&x, n - 1, 1), tl = tern_buf_rows(&t, n - 1, 1);
		be->norm(be, &xl, &tl, &d->ln_w, &d->ln_b, &d->yl, &ln);
		round16(be, &d->te, &d->yl, r16);
		tern_be_mul(be, &d->te, &d->yl, &d->logits);
		be->download(be, &d->logits, 0, d->host_logits, sizeof(float) * (size_t)d->n_vocab);
	} else { /* every token's, through one product with the embedding */
		struct tern_buf ln_n = tern_buf_rows(&d->logits_n, 0, n);
		be->norm(be, &x, &t, &d->ln_w, &d->ln_b, &y, &ln);
		round16(be, &d->te, &y, r16);
		whisper_mm(be, &d->te, &y, &ln_n);
		be->download(be, &ln_n, 0, d->host_logits, sizeof(float) * (size_t)n * (size_t)d->n_vocab);
	}
	if (step)
		be->end_step(be);
	int rc = be->sync(be, e);
	for (int i = 0; !rc && i < (one ? 1 : n); i++)
		memcpy(out[i], d->host_logits + (size_t)i * (size_t)d->n_vocab, sizeof(float) * (size_t)d->n_vocab);
	return rc;
}

int whisper_decode_seq(struct whisper_decoder *d, int seq, const int32_t *tokens, int n, int n_past, float *logits,
		       tern_err *e)
{
	if (seq < 0 || seq >= d->n_seq)
		return tern_errf(e, TERN_ERANGE, "sequence %d of %d", seq, d->n_seq);
	if (n < 1 || n > d->n_batch || n_past < 0 || n_past > d->n_text_ctx - n)
		return tern_errf(e, TERN_ERANGE, "%d tokens at position %d do not fit the text context of %d (%d at once)",
				 n, n_past, d->n_text_ctx, d->n_batch);
	for (int i = 0; i < n; i++)
		if (tokens[i] < 0 || tokens[i] >= d->n_vocab)
			return tern_errf(e, TERN_ERANGE, "token %d is outside the vocabulary of %d", tokens[i],
					 d->n_vocab);
	for (int i = 0; i < n; i++)
		d->pos_host[i] = n_past + i;
	return decode(d, true, &seq, tokens, d->pos_host, n, &logits, e);
}

int whisper_decode_multi(struct whisper_decoder *d, int n, const int *seqs, const int32_t *tokens,
			 const int32_t *n_past, float *const *logits, tern_err *e)
{
	if (n < 1 || n > d->n_seq || n > WHISPER_DECODE_MULTI_MAX)
		return tern_errf(e, TERN_ERANGE, "%d sequences at once (%d, at most %d)", n, d->n_seq,
				 WHISPER_DECODE_MULTI_MAX);
	for (int i = 0; i < n; i++) {
		if (seqs[i] < 0 || seqs[i] >= d->n_seq)
			return tern_errf(e, TERN_ERANGE, "sequence %d of %d", seqs[i], d->n_seq);
		for (int j = 0; j < i; j++)
			if (seqs[j] == seqs[i])
				return tern_errf(e, TERN_EINVAL, "sequence %d twice in one step", seqs[i]);
		if (n_past[i] < 0 || n_past[i] >= d->n_text_ctx)
			return tern_errf(e, TERN_ERANGE, "position %d is outside the text context of %d", n_past[i],
					 d->n_text_ctx);
		if (tokens[i] < 0 || tokens[i] >= d->n_vocab)
			return tern_errf(e, TERN_ERANGE, "token %d is outside the vocabulary of %d", tokens[i],
					 d->n_vocab);
	}
	return decode(d, false, seqs, tokens, n_past, n, logits, e);
}
