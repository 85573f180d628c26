/* whisper_impl.h - what the Whisper encoder and decoder share (internal to
 * lib/speech): weights as backend buffers and batched products. */
#ifndef TERN_WHISPER_IMPL_H
#define TERN_WHISPER_IMPL_H

#include <stdbool.h>

#include "lib/backend.h"
#include "lib/core/error.h"
#include "lib/format/tensor.h"
#include "lib/speech/whisper.h"

/* t as a buffer of be: a matrix is prepared for the products (a conv
 * kernel {k, in, out} seen as [out][in * k]); a vector stored as [1][n] is
 * seen as [n]. Errors name the tensor. */
int whisper_buf_weight(struct tern_backend *be, struct tern_buf *b, const struct tern_tensor_view *t, bool matrix,
		       tern_err *e);

/* An f32 (or other type) activation buffer {a0, a1, a2} of n_dims dims. */
int whisper_buf_act(struct tern_backend *be, struct tern_buf *b, uint32_t type, int n_dims, int64_t a0, int64_t a1,
		    int64_t a2, tern_err *e);

/* Free each non-empty buffer of bufs[n]. */
void whisper_bufs_free(struct tern_backend *be, struct tern_buf *const *bufs, size_t n);

/* The buffers of a transformer block's self-attention, norms and MLP (an
 * encoder block, or the self part of a decoder block). */
struct whisper_block_bufs {
	struct tern_buf attn_ln_w, attn_ln_b, q_w, q_b, k_w, v_w, v_b, o_w, o_b;
	struct tern_buf mlp_ln_w, mlp_ln_b, mlp0_w, mlp0_b, mlp2_w, mlp2_b;
};
int whisper_block_load(struct tern_backend *be, struct whisper_block_bufs *b, const struct whisper_enc_layer *l,
		       tern_err *e);
void whisper_block_free(struct tern_backend *be, struct whisper_block_bufs *b);

/* y = w x over x's rows, in batches of at most be->max_tokens. */
void whisper_mm(struct tern_backend *be, const struct tern_buf *w, const struct tern_buf *x, struct tern_buf *y);

/* whisper.cpp's numerics: asked for (m->numerics) and taken by the
 * backend (TERN_BACKEND_GGML_NUMERICS); else the f32 numerics */
bool whisper_numerics_ggml(const struct whisper_model *m, const struct tern_backend *be);

/* Round the f32 values of x to f16 (whisper.cpp's numerics: ggml converts
 * the activations of a product with f16 weights to f16) through tmp, an f16
 * buffer of at least as many elements; when w (may be NULL) is given, only
 * if w is f16. */
void whisper_round_f16(struct tern_backend *be, const struct tern_buf *w, struct tern_buf *x, struct tern_buf *tmp);

/* GGML_PAD(n, 256): whisper.cpp's attention caches over the audio have
 * this many rows, zeros past n. */
static inline int64_t whisper_pad256(int64_t n)
{
	return (n + 255) / 256 * 256;
}

#endif
