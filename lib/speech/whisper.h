/* whisper.h - a Whisper model from whisper.cpp's legacy ggml file: the
 * hyperparameters, the mel filter bank, the vocabulary's special tokens and
 * every weight as a view into the file's mapping, checked against the
 * shapes the hyperparameters imply.
 *
 * Sizes: tiny (4 layers, width 384) to large-v3 and large-v3-turbo (32
 * encoder layers, 4 decoder layers in turbo, width 1280, 128 mel bins).
 * The 2-D weights may be f32, f16 or any quantized type quant/ can dot
 * (whisper.cpp's quantizer writes q4_0 ... q8_0 and the K-quants); biases,
 * norms and positional embeddings are f32, the convolutions f16 or f32.
 *
 * Special tokens are placed as whisper.cpp places them: from the end of the
 * 50,256 text tokens of the English-only vocabulary (n_vocab 51864) or the
 * 50,257 of the multilingual one (51865; large-v3: 51866 with one more
 * language), so <|endoftext|>, <|startoftranscript|>, the languages, the
 * task tokens, <|notimestamps|> and the first timestamp <|0.00|> follow. */
#ifndef TERN_WHISPER_H
#define TERN_WHISPER_H

#include <stdbool.h>
#include <stdint.h>

#include "lib/backend.h"
#include "lib/core/error.h"
#include "lib/format/ggml_legacy.h"
#include "lib/format/tensor.h"

struct whisper_hparams {
	int32_t n_vocab;
	int32_t n_audio_ctx, n_audio_state, n_audio_head, n_audio_layer;
	int32_t n_text_ctx, n_text_state, n_text_head, n_text_layer;
	int32_t n_mels;
	int32_t ftype; /* as stored: the weight type (and a quantization version * 1000) */
};

/* The special token ids of the model's vocabulary. */
struct whisper_vocab_ids {
	bool multilingual;
	int32_t n_langs; /* languages with a token: 99 (100 for large-v3) */
	int32_t eot, sot, translate, transcribe, solm, prev, nosp, not_, beg;
	int32_t lang0; /* <|en|>, the first language token (sot + 1) */
};

struct whisper_enc_layer {
	const struct tern_tensor_view *attn_ln_w, *attn_ln_b;
	const struct tern_tensor_view *q_w, *q_b, *k_w, *v_w, *v_b, *o_w, *o_b;
	const struct tern_tensor_view *mlp_ln_w, *mlp_ln_b;
	const struct tern_tensor_view *mlp0_w, *mlp0_b, *mlp2_w, *mlp2_b;
};

struct whisper_dec_layer {
	struct whisper_enc_layer self; /* the same tensors as an encoder block */
	const struct tern_tensor_view *xattn_ln_w, *xattn_ln_b;
	const struct tern_tensor_view *xq_w, *xq_b, *xk_w, *xv_w, *xv_b, *xo_w, *xo_b;
};

/* How the encoder and decoder round, read when they are created:
 *   WHISPER_NUMERICS_GGML (the default): as whisper.cpp's CPU graph does
 *     where the backend takes ggml's rounding (TERN_BACKEND_GGML_NUMERICS,
 *     lib/backend.h; on one without it, as WHISPER_NUMERICS_F32),
 *     so that its transcripts and beam-search draws come out the same:
 *     activations rounded to f16 before every product with f16 weights
 *     (ggml converts them to the weights' type), ggml's f16-table GELU,
 *     queries rounded to f16 for the f16 caches, the decoder's Q and K
 *     scaled by head_dim^-1/4 each before K is stored, and attention over
 *     the audio seeing whisper.cpp's zero rows that pad its caches to a
 *     multiple of 256 (1536 for 1500 positions: 36 keys of score 0 in every
 *     softmax);
 *   WHISPER_NUMERICS_F32: f32 activations throughout, the closest to the
 *     float64 model (tests/test_whisper.c measures both). */
enum { WHISPER_NUMERICS_GGML = 0, WHISPER_NUMERICS_F32 = 1 };

struct whisper_model {
	ggml_legacy *file; /* owned; every view below points into its mapping */
	int numerics;      /* WHISPER_NUMERICS_*; the loader sets GGML */
	struct whisper_hparams hp;
	struct whisper_vocab_ids ids;
	uint32_t n_mel_filters, n_fft_bins;
	const void *mel_filters; /* LE f32 [n_mel_filters][n_fft_bins], possibly unaligned */

	const struct tern_tensor_view *e_pe;           /* f32 [n_audio_ctx][n_audio_state] */
	const struct tern_tensor_view *conv1_w, *conv1_b; /* [n_audio_state][n_mels][3], [n_audio_state] */
	const struct tern_tensor_view *conv2_w, *conv2_b; /* [n_audio_state][n_audio_state][3] */
	const struct tern_tensor_view *e_ln_w, *e_ln_b;
	struct whisper_enc_layer *enc; /* [n_audio_layer] */

	const struct tern_tensor_view *d_pe; /* f32 [n_text_ctx][n_text_state] */
	const struct tern_tensor_view *d_te; /* [n_vocab][n_text_state], also the output projection */
	const struct tern_tensor_view *d_ln_w, *d_ln_b;
	struct whisper_dec_layer *dec; /* [n_text_layer] */
};

/* Open and check a Whisper file. Errors: TERN_EIO, TERN_EFORMAT (not a
 * Whisper file; a hyperparameter out of range; a tensor missing or of the
 * wrong shape or type, named), TERN_EUNSUPPORTED, TERN_ENOMEM. The caller
 * prefixes the path. */
int whisper_model_load(struct whisper_model **out, const char *path, tern_err *e);
/* The same over a caller-owned buffer (kept, not copied): the fuzz entry. */
int whisper_model_load_mem(struct whisper_model **out, const void *buf, size_t size, tern_err *e);
void whisper_model_free(struct whisper_model *m);

/* "tiny", "base", "small", "medium", "large" (by the encoder's layer
 * count, as whisper.cpp names them), with ".en" for English-only models. */
const char *whisper_model_size_name(const struct whisper_model *m);

/* ---- the encoder ----------------------------------------------------------
 * Two convolutions with GELU (kernel 3; stride 1, then 2: 2 n_audio_ctx
 * mel frames become n_audio_ctx positions), the positional embedding,
 * n_audio_layer pre-norm blocks (layer norm, attention over every position,
 * layer norm, GELU MLP) and a last layer norm, as whisper.cpp's graph
 * computes them, over the backend operation table. */
struct whisper_encoder;

/* An encoder of m (borrowed) on be (borrowed): the weights become backend
 * buffers, and everything a window needs is allocated here. Errors: what
 * the backend reports (a weight type it cannot multiply), TERN_ENOMEM. */
int whisper_encoder_new(struct whisper_encoder **out, const struct whisper_model *m, struct tern_backend *be,
			tern_err *e);
void whisper_encoder_free(struct whisper_encoder *enc);

/* Encode the window of 2 n_audio_ctx frames that starts at frame f0 of a
 * normalised spectrogram mel[n_mels][n_len] (lib/speech/mel.h); frames
 * past n_len are zeros, as whisper.cpp pads them. The result stays on the
 * backend: whisper_encoder_output(), f32 {n_audio_state, n_audio_ctx}.
 * Errors: what the backend's sync reports. */
int whisper_encode(struct whisper_encoder *enc, const float *mel, size_t n_len, size_t f0, tern_err *e);
const struct tern_buf *whisper_encoder_output(const struct whisper_encoder *enc);
/* The floating-point operations of one whisper_encode of m (multiply-adds
 * count 2): the convolutions, the projections and MLPs, and attention's
 * two products over every position; for the GFLOPS that -v reports. */
double whisper_encoder_flops(const struct whisper_model *m);

/* ---- the decoder ----------------------------------------------------------
 * Token and positional embeddings, n_text_layer blocks (layer norm, causal
 * self-attention over the sequence's cache, layer norm, attention over the
 * window's audio, layer norm, GELU MLP), a last layer norm and the logits
 * through the token embedding, as whisper.cpp computes them. The audio's
 * keys and values are computed once per window (whisper_decoder_set_audio);
 * each sequence's self-attention cache holds up to n_text_ctx tokens. */
struct whisper_decoder;

/* A decoder of m (borrowed) on be (borrowed); everything it needs is
 * allocated here (be->max_tokens bounds the tokens of one call). */
int whisper_decoder_new(struct whisper_decoder **out, const struct whisper_model *m, struct tern_backend *be,
			tern_err *e);
void whisper_decoder_free(struct whisper_decoder *dec);

/* Cross-attention keys and values of a window: enc is an encoder's output
 * {n_audio_state, n_audio_ctx} on the same backend. */
int whisper_decoder_set_audio(struct whisper_decoder *dec, const struct tern_buf *enc, tern_err *e);

/* Feed tokens[n] at positions n_past .. n_past + n - 1 (the cache keeps
 * positions below n_past; n_past + n <= n_text_ctx, n <= the backend's
 * max_tokens) and write the logits of the last one into logits[n_vocab].
 * Errors: TERN_ERANGE (past the text context or the batch, an id outside
 * the vocabulary), what the backend's sync reports. */
int whisper_decode(struct whisper_decoder *dec, const int32_t *tokens, int n, int n_past, float *logits,
		   tern_err *e);

/* Sequences: the decoder keeps one self-attention cache per sequence
 * (1 after whisper_decoder_new). Setting a different count reallocates
 * them (their contents are lost). Errors: TERN_EINVAL (not 1..64),
 * TERN_ENOMEM, what the backend reports. */
int whisper_decoder_set_n_seq(struct whisper_decoder *dec, int n_seq, tern_err *e);
/* whisper.cpp's numerics only: when one decode call of whisper.cpp carries
 * a single token in all (greedy decoding, a prompt of one token, the last
 * live beam; not the several beams of a step, which it batches), ggml cuts
 * the audio's keys into as many chunks as it has threads, which moves the
 * last bits of the result. whisper_decode calls of one token use `split`
 * chunks (1..64) until the next call of this: the caller passes
 * whisper.cpp's thread count when the step decodes one token, else 1. */
void whisper_decoder_set_split(struct whisper_decoder *dec, int split);
int whisper_decoder_n_seq(const struct whisper_decoder *dec);
/* whisper_decode on sequence seq's cache. */
int whisper_decode_seq(struct whisper_decoder *dec, int seq, const int32_t *tokens, int n, int n_past,
		       float *logits, tern_err *e);
/* One token of each of n sequences (1..WHISPER_DECODE_MULTI_MAX; a step of
 * beam search or best-of sampling): token i at position n_past[i] of
 * sequence seqs[i] (all different), its logits into logits[i][n_vocab].
 * The products read the weights once for all of them, as whisper.cpp
 * batches its decoders. Errors: TERN_ERANGE, TERN_EINVAL (a sequence
 * twice), what the backend's sync reports. */
#define WHISPER_DECODE_MULTI_MAX 16
int whisper_decode_multi(struct whisper_decoder *dec, int n, const int *seqs, const int32_t *tokens,
			 const int32_t *n_past, float *const *logits, tern_err *e);
/* Queue a copy of positions [0, n) of sequence src's cache into dst's (a
 * beam taking over another's history); the next decode sees it. Errors:
 * TERN_ERANGE. */
int whisper_decoder_copy_seq(struct whisper_decoder *dec, int src, int dst, int n, tern_err *e);

#endif
