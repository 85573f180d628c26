/* whisper_model.c - load and check a Whisper model (whisper.h).
 *
 * The legacy reader (lib/format/ggml_legacy) has already bounded every
 * count and offset by the file size; this file checks what a model needs
 * on top: hyperparameters in the ranges real models use (so that no size
 * computed from them overflows or asks for absurd memory), every tensor
 * whisper.cpp loads present with the shape the hyperparameters imply and a
 * type the products can use. Tensor names and the special-token layout
 * follow whisper.cpp's loader. */
#include "lib/speech/whisper.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "quant/quant.h"

static int hparam(const ggml_legacy *f, const char *name, int64_t lo, int64_t hi, int32_t *out, tern_err *e)
{
	const struct ggml_legacy_hparam *h = ggml_legacy_find_hparam(f, name);
	if (!h)
		return tern_errf(e, TERN_EFORMAT, "hyperparameter %s is missing", name);
	if (h->is_float || h->i < lo || h->i > hi)
		return tern_errf(e, TERN_EFORMAT, "hyperparameter %s = %lld is outside %lld..%lld", name,
				 (long long)h->i, (long long)lo, (long long)hi);
	*out = (int32_t)h->i;
	return 0;
}

enum kind { VEC, MAT, CONV, EMBD };

/* Tensor `name` (printf-formatted with layer l) of shape {ne0, ne1, ne2}:
 * VEC an f32 vector of ne0 values (a [1][n] bias counts as one), EMBD an
 * f32 matrix, MAT a weight the products take, CONV an f16 or f32 kernel. */
static int tensor(const ggml_legacy *f, const char *fmt, int l, enum kind k, uint64_t ne0, uint64_t ne1,
		  uint64_t ne2, const struct tern_tensor_view **out, tern_err *e)
{
	char name[96];
	snprintf(name, sizeof(name), fmt, l);
	const struct tern_tensor_view *t = ggml_legacy_find_tensor(f, name);
	if (!t)
		return tern_errf(e, TERN_EFORMAT, "tensor '%s' is missing", name);
	bool shape_ok;
	if (k == VEC)
		shape_ok = tern_tensor_nelements(t) == ne0 && (t->ne[0] == ne0 || t->ne[0] == 1);
	else
		shape_ok = t->ne[0] == ne0 && t->ne[1] == ne1 && t->ne[2] == ne2 && t->ne[3] == 1;
	if (!shape_ok)
		return tern_errf(e, TERN_EFORMAT,
				 "tensor '%s' has shape [%llu, %llu, %llu], expected [%llu, %llu, %llu]", name,
				 (unsigned long long)t->ne[0], (unsigned long long)t->ne[1],
				 (unsigned long long)t->ne[2], (unsigned long long)ne0,
				 (unsigned long long)(k == VEC ? 1 : ne1), (unsigned long long)(k == VEC ? 1 : ne2));
	bool type_ok = k == VEC || k == EMBD ? t->type == QT_F32
		     : k == CONV	     ? t->type == QT_F16 || t->type == QT_F32
					     : quant_is_weight_type(t->type);
	if (!type_ok)
		return tern_errf(e, TERN_EFORMAT, "tensor '%s' is %s, which %s", name, quant_type_name(t->type),
				 k == MAT ? "the products cannot use" : k == CONV ? "a convolution cannot be" : "should be f32");
	*out = t;
	return 0;
}

/* the tensors of one attention block: PREFIX "attn" or "cross_attn" */
static int attention(const ggml_legacy *f, const char *sys, const char *prefix, int l, uint64_t n,
		     const struct tern_tensor_view **q_w, const struct tern_tensor_view **q_b,
		     const struct tern_tensor_view **k_w, const struct tern_tensor_view **v_w,
		     const struct tern_tensor_view **v_b, const struct tern_tensor_view **o_w,
		     const struct tern_tensor_view **o_b, tern_err *e)
{
	char fmt[96];
	int rc;
#define T(suffix, kind, a, b, dst)                                                      \
	do {                                                                            \
		snprintf(fmt, sizeof(fmt), "%s.blocks.%%d.%s.%s", sys, prefix, suffix); \
		if ((rc = tensor(f, fmt, l, kind, a, b, 1, dst, e)) != 0)               \
			return rc;                                                      \
	} while (0)
	T("query.weight", MAT, n, n, q_w);
	T("query.bias", VEC, n, 1, q_b);
	T("key.weight", MAT, n, n, k_w);
	T("value.weight", MAT, n, n, v_w);
	T("value.bias", VEC, n, 1, v_b);
	T("out.weight", MAT, n, n, o_w);
	T("out.bias", VEC, n, 1, o_b);
#undef T
	return 0;
}

/* norms and MLP of a block, and its self-attention */
static int block(const ggml_legacy *f, const char *sys, int l, uint64_t n, struct whisper_enc_layer *b,
		 tern_err *e)
{
	char fmt[96];
	int rc = attention(f, sys, "attn", l, n, &b->q_w, &b->q_b, &b->k_w, &b->v_w, &b->v_b, &b->o_w, &b->o_b, e);
	if (rc)
		return rc;
#define T(suffix, kind, a, b_, dst)                                                 \
	do {                                                                        \
		snprintf(fmt, sizeof(fmt), "%s.blocks.%%d.%s", sys, suffix);         \
		if ((rc = tensor(f, fmt, l, kind, a, b_, 1, dst, e)) != 0)          \
			return rc;                                                  \
	} while (0)
	T("attn_ln.weight", VEC, n, 1, &b->attn_ln_w);
	T("attn_ln.bias", VEC, n, 1, &b->attn_ln_b);
	T("mlp_ln.weight", VEC, n, 1, &b->mlp_ln_w);
	T("mlp_ln.bias", VEC, n, 1, &b->mlp_ln_b);
	T("mlp.0.weight", MAT, n, 4 * n, &b->mlp0_w);
	T("mlp.0.bias", VEC, 4 * n, 1, &b->mlp0_b);
	T("mlp.2.weight", MAT, 4 * n, n, &b->mlp2_w);
	T("mlp.2.bias", VEC, n, 1, &b->mlp2_b);
#undef T
	return 0;
}

/* The hyperparameters, each in its range, consistent with one another and
 * with the file's mel filter bank. */
static int check_hparams(struct whisper_model *m, tern_err *e)
{
	const ggml_legacy *f = m->file;
	struct whisper_hparams *hp = &m->hp;
	int rc;
	/* the ranges cover tiny .. large-v3 with room; the products bound n_state
	 * (a multiple of the heads, each head at most 256 wide) */
	if ((rc = hparam(f, "n_vocab", 51864, 51866, &hp->n_vocab, e)) ||
	    (rc = hparam(f, "n_audio_ctx", 1, 1500, &hp->n_audio_ctx, e)) ||
	    (rc = hparam(f, "n_audio_state", 64, 4096, &hp->n_audio_state, e)) ||
	    (rc = hparam(f, "n_audio_head", 1, 64, &hp->n_audio_head, e)) ||
	    (rc = hparam(f, "n_audio_layer", 1, 64, &hp->n_audio_layer, e)) ||
	    (rc = hparam(f, "n_text_ctx", 1, 448, &hp->n_text_ctx, e)) ||
	    (rc = hparam(f, "n_text_state", 64, 4096, &hp->n_text_state, e)) ||
	    (rc = hparam(f, "n_text_head", 1, 64, &hp->n_text_head, e)) ||
	    (rc = hparam(f, "n_text_layer", 1, 64, &hp->n_text_layer, e)) ||
	    (rc = hparam(f, "n_mels", 80, 128, &hp->n_mels, e)) ||
	    (rc = hparam(f, "ftype", 0, 1000000, &hp->ftype, e)))
		return rc;
	if (hp->n_text_state != hp->n_audio_state)
		return tern_errf(e, TERN_EFORMAT, "n_text_state %d differs from n_audio_state %d", hp->n_text_state,
				 hp->n_audio_state);
	for (int s = 0; s < 2; s++) {
		int32_t heads = s ? hp->n_text_head : hp->n_audio_head;
		if (hp->n_audio_state % heads || hp->n_audio_state / heads > 256)
			return tern_errf(e, TERN_EFORMAT, "%s width %d is not a multiple of %d heads of at most 256",
					 s ? "text" : "audio", hp->n_audio_state, heads);
	}
	if (hp->n_mels != 80 && hp->n_mels != 128)
		return tern_errf(e, TERN_EFORMAT, "n_mels is %d; Whisper models have 80 or 128", hp->n_mels);
	if (ggml_legacy_mel(f, &m->n_mel_filters, &m->n_fft_bins, &m->mel_filters) != 0 ||
	    m->n_mel_filters != (uint32_t)hp->n_mels)
		return tern_errf(e, TERN_EFORMAT, "the mel filter bank has %u filters for n_mels %d", m->n_mel_filters,
				 hp->n_mels);
	return 0;
}

/* special tokens, as whisper.cpp lays them out */
static void special_tokens(struct whisper_model *m)
{
	struct whisper_vocab_ids *v = &m->ids;
	v->multilingual = m->hp.n_vocab >= 51865;
	v->n_langs = m->hp.n_vocab - 51765 - (v->multilingual ? 1 : 0);
	int32_t dt = v->multilingual ? v->n_langs - 98 : 0, ml = v->multilingual ? 1 : 0;
	v->eot = 50256 + ml;
	v->sot = 50257 + ml;
	v->lang0 = v->sot + 1;
	v->translate = 50357 + dt;
	v->transcribe = 50358 + dt;
	v->solm = 50359 + dt;
	v->prev = 50360 + dt;
	v->nosp = 50361 + dt;
	v->not_ = 50362 + dt;
	v->beg = 50363 + dt;
}

/* the tensors outside the blocks: the encoder's convolutions, position
 * tables, embeddings and final norms */
static int outer_tensors(struct whisper_model *m, tern_err *e)
{
	const ggml_legacy *f = m->file;
	const struct whisper_hparams *hp = &m->hp;
	const uint64_t na = (uint64_t)hp->n_audio_state, nt = (uint64_t)hp->n_text_state;
	int rc;
	if ((rc = tensor(f, "encoder.positional_embedding", 0, EMBD, na, (uint64_t)hp->n_audio_ctx, 1, &m->e_pe, e)) ||
	    (rc = tensor(f, "encoder.conv1.weight", 0, CONV, 3, (uint64_t)hp->n_mels, na, &m->conv1_w, e)) ||
	    (rc = tensor(f, "encoder.conv1.bias", 0, VEC, na, 1, 1, &m->conv1_b, e)) ||
	    (rc = tensor(f, "encoder.conv2.weight", 0, CONV, 3, na, na, &m->conv2_w, e)) ||
	    (rc = tensor(f, "encoder.conv2.bias", 0, VEC, na, 1, 1, &m->conv2_b, e)) ||
	    (rc = tensor(f, "encoder.ln_post.weight", 0, VEC, na, 1, 1, &m->e_ln_w, e)) ||
	    (rc = tensor(f, "encoder.ln_post.bias", 0, VEC, na, 1, 1, &m->e_ln_b, e)) ||
	    (rc = tensor(f, "decoder.positional_embedding", 0, EMBD, nt, (uint64_t)hp->n_text_ctx, 1, &m->d_pe, e)) ||
	    (rc = tensor(f, "decoder.token_embedding.weight", 0, MAT, nt, (uint64_t)hp->n_vocab, 1, &m->d_te, e)) ||
	    (rc = tensor(f, "decoder.ln.weight", 0, VEC, nt, 1, 1, &m->d_ln_w, e)) ||
	    (rc = tensor(f, "decoder.ln.bias", 0, VEC, nt, 1, 1, &m->d_ln_b, e)))
		return rc;
	return 0;
}

/* the encoder's blocks, and the decoder's with their cross-attention */
static int block_tensors(struct whisper_model *m, tern_err *e)
{
	const ggml_legacy *f = m->file;
	const struct whisper_hparams *hp = &m->hp;
	const uint64_t na = (uint64_t)hp->n_audio_state, nt = (uint64_t)hp->n_text_state;
	int rc;
	m->enc = calloc((size_t)hp->n_audio_layer, sizeof(*m->enc));
	m->dec = calloc((size_t)hp->n_text_layer, sizeof(*m->dec));
	if (!m->enc || !m->dec)
		return tern_errf(e, TERN_ENOMEM, "out of memory for the layer table");
	for (int l = 0; l < hp->n_audio_layer; l++)
		if ((rc = block(f, "encoder", l, na, &m->enc[l], e)) != 0)
			return rc;
	for (int l = 0; l < hp->n_text_layer; l++) {
		struct whisper_dec_layer *d = &m->dec[l];
		if ((rc = block(f, "decoder", l, nt, &d->self, e)) ||
		    (rc = attention(f, "decoder", "cross_attn", l, nt, &d->xq_w, &d->xq_b, &d->xk_w, &d->xv_w, &d->xv_b,
				    &d->xo_w, &d->xo_b, e)) ||
		    (rc = tensor(f, "decoder.blocks.%d.cross_attn_ln.weight", l, VEC, nt, 1, 1, &d->xattn_ln_w, e)) ||
		    (rc = tensor(f, "decoder.blocks.%d.cross_attn_ln.bias", l, VEC, nt, 1, 1, &d->xattn_ln_b, e)))
			return rc;
	}
	return 0;
}

static int check(struct whisper_model *m, tern_err *e)
{
	if (ggml_legacy_kind(m->file) != GGML_LEGACY_WHISPER)
		return tern_errf(e, TERN_EFORMAT, "a %s file, not a Whisper model", ggml_legacy_kind_name(m->file));
	int rc = check_hparams(m, e);
	if (rc)
		return rc;
	special_tokens(m);
	rc = outer_tensors(m, e);
	return rc ? rc : block_tensors(m, e);
}

static int finish(struct whisper_model *m, int rc, struct whisper_model **out)
{
	if (rc) {
		whisper_model_free(m);
		return rc;
	}
	*out = m;
	return 0;
}

int whisper_model_load(struct whisper_model **out, const char *path, tern_err *e)
{
	*out = NULL;
	struct whisper_model *m = calloc(1, sizeof(*m));
	if (!m)
		return tern_errf(e, TERN_ENOMEM, "out of memory");
	int rc = ggml_legacy_open(&m->file, path, e);
	return finish(m, rc ? rc : check(m, e), out);
}

int whisper_model_load_mem(struct whisper_model **out, const void *buf, size_t size, tern_err *e)
{
	*out = NULL;
	struct whisper_model *m = calloc(1, sizeof(*m));
	if (!m)
		return tern_errf(e, TERN_ENOMEM, "out of memory");
	int rc = ggml_legacy_open_mem(&m->file, buf, size, e);
	return finish(m, rc ? rc : check(m, e), out);
}

void whisper_model_free(struct whisper_model *m)
{
	if (!m)
		return;
	free(m->enc);
	free(m->dec);
	ggml_legacy_close(m->file);
	free(m);
}

const char *whisper_model_size_name(const struct whisper_model *m)
{
	static const struct {
		int32_t layers;
		const char *name, *en;
	} sizes[] = {{4, "tiny", "tiny.en"},	   {6, "base", "base.en"},	   {12, "small", "small.en"},
		     {24, "medium", "medium.en"}, {32, "large", "large.en"}};
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
		if (sizes[i].layers == m->hp.n_audio_layer)
			return m->ids.multilingual ? sizes[i].name : sizes[i].en;
	return "unknown";
}
