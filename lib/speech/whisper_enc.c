/* whisper_enc.c - Whisper's audio encoder over the backend operation table
 * (whisper.h). The graph is whisper.cpp's:
 *
 *   x   = gelu(conv2(gelu(conv1(mel) + b1)) + b2) + positional embedding
 *   per block:  y = LN(x);  x += W_o attn(W_q y + b_q, W_k y, W_v y + b_v) + b_o
 *               y = LN(x);  x += W_2 gelu(W_1 y + b_1) + b_2
 *   out = LN(x)
 *
 * A convolution is im2col followed by one product with the kernel seen as
 * [out][in * 3] (ggml stores conv1d kernels with the tap fastest). The
 * attention sees every position: K and V go through kv_store into f16
 * caches of n_audio_ctx rows (whisper.cpp keeps them in f16 too), and every
 * query is given the last position, so that no key is masked. Residual
 * adds ride on the norm's fused add.
 *
 * In whisper.cpp's numerics (WHISPER_NUMERICS_GGML, whisper.h) the inputs
 * of the f16 products are rounded to f16 (ggml converts them: the
 * convolutions' im2col rows too), the GELU is ggml's f16 table, Q is
 * rounded to f16, and the caches have whisper.cpp's 1536 rows (zeros past
 * 1500), all of which every query sees. The attention itself stays ours:
 * ggml's tiled kernel for 64 queries and more sums in f32 as we do. */
#include "lib/speech/whisper.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lib/speech/whisper_impl.h"
#include "quant/quant.h"

struct whisper_encoder {
	const struct whisper_model *m;
	struct tern_backend *be;
	int n_ctx, n_state, n_mels, n_head;
	bool gg;            /* whisper_numerics_ggml */
	int64_t n_kv;       /* rows of the K, V caches: n_ctx, or whisper.cpp's padding */
	float *host_mel;    /* [2 n_ctx][n_mels]: the window, frame-major */
	int32_t *host_pos;  /* [n_ctx] */
	struct tern_buf conv1_w, conv1_b, conv2_w, conv2_b, pe, ln_w, ln_b;
	struct whisper_block_bufs *layers;
	/* activations */
	struct tern_buf mel, col1, h1, col2, x, y, q, t, a, ff, kc, vc, pos, last, out;
	struct tern_buf r16; /* f16 scratch of whisper_round_f16 */
};

int whisper_encoder_new(struct whisper_encoder **out, const struct whisper_model *m, struct tern_backend *be,
			tern_err *e)
{
	*out = NULL;
	struct whisper_encoder *w = calloc(1, sizeof(*w));
	if (!w)
		return tern_errf(e, TERN_ENOMEM, "out of memory for the encoder");
	w->m = m;
	w->be = be;
	w->n_ctx = m->hp.n_audio_ctx;
	w->n_state = m->hp.n_audio_state;
	w->n_mels = m->hp.n_mels;
	w->n_head = m->hp.n_audio_head;
	const int64_t n = w->n_ctx, d = w->n_state, hd = d / w->n_head;
	w->gg = whisper_numerics_ggml(m, be);
	w->n_kv = w->gg ? whisper_pad256(n) : n;
	int64_t n16 = 3 * (int64_t)w->n_mels * 2 * n;
	n16 = n16 > 3 * d * n ? n16 : 3 * d * n;
	n16 = n16 > 4 * d * n ? n16 : 4 * d * n;
	w->layers = calloc((size_t)m->hp.n_audio_layer, sizeof(*w->layers));
	/* the window's upload, in the backend's host memory (pinned on a GPU) */
	int hrc = be->host_alloc(be, sizeof(float) * (size_t)(2 * n * w->n_mels), (void **)&w->host_mel, e);
	if (hrc) {
		whisper_encoder_free(w);
		return hrc;
	}
	w->host_pos = calloc((size_t)(hd * w->n_head * w->n_kv > n ? hd * w->n_head * w->n_kv : n), sizeof(int32_t));
	if (!w->layers || !w->host_pos) {
		whisper_encoder_free(w);
		return tern_errf(e, TERN_ENOMEM, "out of memory for the encoder");
	}
	int rc = whisper_buf_weight(be, &w->conv1_w, m->conv1_w, true, e);
	if (!rc) rc = whisper_buf_weight(be, &w->conv1_b, m->conv1_b, false, e);
	if (!rc) rc = whisper_buf_weight(be, &w->conv2_w, m->conv2_w, true, e);
	if (!rc) rc = whisper_buf_weight(be, &w->conv2_b, m->conv2_b, false, e);
	if (!rc) rc = whisper_buf_weight(be, &w->pe, m->e_pe, false, e);
	if (!rc) rc = whisper_buf_weight(be, &w->ln_w, m->e_ln_w, false, e);
	if (!rc) rc = whisper_buf_weight(be, &w->ln_b, m->e_ln_b, false, e);
	for (int l = 0; !rc && l < m->hp.n_audio_layer; l++)
		rc = whisper_block_load(be, &w->layers[l], &m->enc[l], e);
	if (!rc) rc = whisper_buf_act(be, &w->mel, QT_F32, 2, w->n_mels, 2 * n, 1, e);
	if (!rc) rc = whisper_buf_act(be, &w->col1, QT_F32, 2, 3 * (int64_t)w->n_mels, 2 * n, 1, e);
	if (!rc) rc = whisper_buf_act(be, &w->h1, QT_F32, 2, d, 2 * n, 1, e);
	if (!rc) rc = whisper_buf_act(be, &w->col2, QT_F32, 2, 3 * d, n, 1, e);
	if (!rc) rc = whisper_buf_act(be, &w->x, QT_F32, 2, d, n, 1, e);
	if (!rc) rc = whisper_buf_act(be, &w->y, QT_F32, 2, d, n, 1, e);
	if (!rc) rc = whisper_buf_act(be, &w->q, QT_F32, 2, d, n, 1, e);
	if (!rc) rc = whisper_buf_act(be, &w->t, QT_F32, 2, d, n, 1, e);
	if (!rc) rc = whisper_buf_act(be, &w->a, QT_F32, 2, d, n, 1, e);
	if (!rc) rc = whisper_buf_act(be, &w->ff, QT_F32, 2, 4 * d, n, 1, e);
	if (!rc) rc = whisper_buf_act(be, &w->out, QT_F32, 2, d, n, 1, e);
	if (!rc) rc = whisper_buf_act(be, &w->kc, QT_F16, 3, hd, w->n_head, w->n_kv, e);
	if (!rc) rc = whisper_buf_act(be, &w->vc, QT_F16, 3, hd, w->n_head, w->n_kv, e);
	if (!rc) rc = whisper_buf_act(be, &w->r16, QT_F16, 1, n16, 1, 1, e);
	if (!rc) rc = whisper_buf_act(be, &w->pos, QT_I32, 1, n, 1, 1, e);
	if (!rc) rc = whisper_buf_act(be, &w->last, QT_I32, 1, n, 1, 1, e);
	if (rc) {
		whisper_encoder_free(w);
		return rc;
	}
	/* the caches' padding rows stay zeros (host_pos is zeroed: f16 0 is 0) */
	be->upload(be, &w->kc, 0, w->host_pos, 2 * (size_t)(hd * w->n_head * w->n_kv));
	be->upload(be, &w->vc, 0, w->host_pos, 2 * (size_t)(hd * w->n_head * w->n_kv));
	rc = be->sync(be, e);
	/* positions: 0..n-1 for storing K and V, the last row for every query */
	for (int64_t i = 0; !rc && i < n; i++)
		w->host_pos[i] = (int32_t)i;
	be->upload(be, &w->pos, 0, w->host_pos, sizeof(int32_t) * (size_t)n);
	if (!rc)
		rc = be->sync(be, e);
	for (int64_t i = 0; i < n; i++)
		w->host_pos[i] = (int32_t)(w->n_kv - 1);
	be->upload(be, &w->last, 0, w->host_pos, sizeof(int32_t) * (size_t)n);
	if (!rc)
		rc = be->sync(be, e);
	if (rc) {
		whisper_encoder_free(w);
		return rc;
	}
	*out = w;
	return 0;
}

void whisper_encoder_free(struct whisper_encoder *w)
{
	if (!w)
		return;
	struct tern_backend *be = w->be;
	struct tern_buf *const bufs[] = {&w->conv1_w, &w->conv1_b, &w->conv2_w, &w->conv2_b, &w->pe,	&w->ln_w,
					 &w->ln_b,    &w->mel,	   &w->col1,	&w->h1,	     &w->col2, &w->x,
					 &w->y,	      &w->q,	   &w->t,	&w->a,	     &w->ff,   &w->kc,
					 &w->vc,      &w->pos,	   &w->last,	&w->out,     &w->r16};
	whisper_bufs_free(be, bufs, sizeof(bufs) / sizeof(bufs[0]));
	for (int l = 0; w->layers && l < w->m->hp.n_audio_layer; l++)
		whisper_block_free(be, &w->layers[l]);
	free(w->layers);
	w->be->host_free(w->be, w->host_mel);
	free(w->host_pos);
	free(w);
}

/* whisper_round_f16 in whisper.cpp's numerics (tmp non-NULL) */
static void round16(struct tern_backend *be, const struct tern_buf *w, struct tern_buf *x, struct tern_buf *tmp)
{
	if (tmp)
		whisper_round_f16(be, w, x, tmp);
}

int whisper_encode(struct whisper_encoder *w, const float *mel, size_t n_len, size_t f0, tern_err *e)
{
	struct tern_backend *be = w->be;
	const int64_t n = w->n_ctx, d = w->n_state, hd = d / w->n_head;
	const struct tern_norm ln = {.kind = TERN_NORM_LAYER, .eps = 1e-5f};

	/* the window, frame-major; frames past the spectrogram are zeros */
	for (int64_t f = 0; f < 2 * n; f++) {
		size_t src = f0 + (size_t)f;
		for (int j = 0; j < w->n_mels; j++)
			w->host_mel[f * w->n_mels + j] = src < n_len ? mel[(size_t)j * n_len + src] : 0.0f;
	}
	be->upload(be, &w->mel, 0, w->host_mel, sizeof(float) * (size_t)(2 * n * w->n_mels));

	const int gelu = w->gg ? TERN_UNARY_GELU_F16 : TERN_UNARY_GELU;
	struct tern_buf *r16 = w->gg ? &w->r16 : NULL;
	be->im2col(be, &w->mel, &w->col1, &(struct tern_conv){.k = 3, .stride = 1, .pad = 1});
	round16(be, &w->conv1_w, &w->col1, r16);
	whisper_mm(be, &w->conv1_w, &w->col1, &w->h1);
	be->add(be, &w->h1, &w->conv1_b, &w->h1);
	be->unary(be, &w->h1, &w->h1, gelu);
	be->im2col(be, &w->h1, &w->col2, &(struct tern_conv){.k = 3, .stride = 2, .pad = 1});
	round16(be, &w->conv2_w, &w->col2, r16);
	whisper_mm(be, &w->conv2_w, &w->col2, &w->x);
	be->add(be, &w->x, &w->conv2_b, &w->x);
	be->unary(be, &w->x, &w->x, gelu);
	be->add(be, &w->x, &w->pe, &w->x);

	const int64_t heads[3] = {hd, w->n_head, n};
	struct tern_buf q3 = tern_buf_reshape(&w->q, 3, heads), t3 = tern_buf_reshape(&w->t, 3, heads);
	struct tern_buf a3 = tern_buf_reshape(&w->a, 3, heads);
	const struct tern_attn at = {.scale = 1.0f / sqrtf((float)hd)};
	const struct tern_buf *r = NULL; /* the residual still to add into x */
	for (int l = 0; l < w->m->hp.n_audio_layer; l++) {
		const struct whisper_block_bufs *L = &w->layers[l];
		be->norm(be, &w->x, r, &L->attn_ln_w, &L->attn_ln_b, &w->y, &ln);
		round16(be, &L->q_w, &w->y, r16);
		whisper_mm(be, &L->q_w, &w->y, &w->q);
		be->add(be, &w->q, &L->q_b, &w->q);
		whisper_mm(be, &L->k_w, &w->y, &w->t);
		be->kv_store(be, &w->kc, &t3, &w->pos, NULL);
		whisper_mm(be, &L->v_w, &w->y, &w->t);
		be->add(be, &w->t, &L->v_b, &w->t);
		be->kv_store(be, &w->vc, &t3, &w->pos, NULL);
		round16(be, NULL, &w->q, r16); /* ggml's attention: Q to the caches' f16 */
		be->attention(be, &q3, &w->kc, &w->vc, &w->last, NULL, &a3, &at);
		round16(be, &L->o_w, &w->a, r16);
		whisper_mm(be, &L->o_w, &w->a, &w->t);
		be->add(be, &w->t, &L->o_b, &w->t);
		be->norm(be, &w->x, &w->t, &L->mlp_ln_w, &L->mlp_ln_b, &w->y, &ln);
		round16(be, &L->mlp0_w, &w->y, r16);
		whisper_mm(be, &L->mlp0_w, &w->y, &w->ff);
		be->add(be, &w->ff, &L->mlp0_b, &w->ff);
		be->unary(be, &w->ff, &w->ff, gelu);
		round16(be, &L->mlp2_w, &w->ff, r16);
		whisper_mm(be, &L->mlp2_w, &w->ff, &w->t);
		be->add(be, &w->t, &L->mlp2_b, &w->t);
		r = &w->t;
	}
	be->norm(be, &w->x, r, &w->ln_w, &w->ln_b, &w->out, &ln);
	return be->sync(be, e);
}

const struct tern_buf *whisper_encoder_output(const struct whisper_encoder *w)
{
	return &w->out;
}

double whisper_encoder_flops(const struct whisper_model *m)
{
	const double n = m->hp.n_audio_ctx, d = m->hp.n_audio_state, mels = m->hp.n_mels;
	const double conv = 2 * (2 * n) * d * (3 * mels) + 2 * n * d * (3 * d);
	/* Q, K, V, O: 4 n d^2; MLP: 8 n d^2; QK^T and PV: 2 n^2 d; x2 each */
	const double layer = 2 * (12 * n * d * d + 2 * n * n * d);
	return conv + m->hp.n_audio_layer * layer;
}
