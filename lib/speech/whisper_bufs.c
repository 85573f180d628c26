/* whisper_bufs.c - buffers and products shared by the Whisper encoder and
 * decoder (whisper_impl.h). */
#include "lib/speech/whisper_impl.h"

#include "quant/quant.h"

int whisper_buf_weight(struct tern_backend *be, struct tern_buf *b, const struct tern_tensor_view *t, bool matrix,
		       tern_err *e)
{
	struct tern_tensor_view v = *t;
	if (matrix && t->ne[2] > 1) { /* conv kernel {k, in, out}, the tap fastest */
		v.ne[0] = t->ne[0] * t->ne[1];
		v.ne[1] = t->ne[2];
		v.ne[2] = 1;
		v.n_dims = 2;
	} else if (!matrix && t->ne[1] > 1 && t->ne[0] == 1) { /* bias stored {1, n} */
		v.ne[0] = t->ne[1];
		v.ne[1] = 1;
		v.n_dims = 1;
	}
	int rc = be->buf_weight(be, b, &v, e);
	if (!rc && matrix)
		rc = be->mat_prepare(be, b, e);
	if (rc)
		tern_err_prefixf(e, "%.*s", (int)t->name.len, t->name.ptr);
	return rc;
}

int whisper_buf_act(struct tern_backend *be, struct tern_buf *b, uint32_t type, int n_dims, int64_t a0, int64_t a1,
		    int64_t a2, tern_err *e)
{
	int64_t ne[3] = {a0, a1, a2};
	return be->buf_alloc(be, b, type, n_dims, ne, e);
}

void whisper_bufs_free(struct tern_backend *be, struct tern_buf *const *bufs, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (bufs[i]->be)
			be->buf_free(be, bufs[i]);
}

void whisper_mm(struct tern_backend *be, const struct tern_buf *w, const struct tern_buf *x, struct tern_buf *y)
{
	int64_t n = x->ne[1], step = be->max_tokens;
	for (int64_t r = 0; r < n; r += step) {
		int64_t k = n - r < step ? n - r : step;
		struct tern_buf xv = tern_buf_rows(x, r, k), yv = tern_buf_rows(y, r, k);
		tern_be_mul(be, w, &xv, &yv);
	}
}

bool whisper_numerics_ggml(const struct whisper_model *m, const struct tern_backend *be)
{
	return m->numerics == WHISPER_NUMERICS_GGML && tern_backend_ggml(be);
}

void whisper_round_f16(struct tern_backend *be, const struct tern_buf *w, struct tern_buf *x, struct tern_buf *tmp)
{
	if (w && w->type != QT_F16)
		return;
	struct tern_buf t = tern_buf_reshape(tmp, 2, (const int64_t[2]){x->ne[0], x->ne[1] * x->ne[2]});
	struct tern_buf xv = tern_buf_reshape(x, 2, (const int64_t[2]){x->ne[0], x->ne[1] * x->ne[2]});
	be->copy(be, &xv, &t);
	be->copy(be, &t, &xv);
}

int whisper_block_load(struct tern_backend *be, struct whisper_block_bufs *b, const struct whisper_enc_layer *l,
		       tern_err *e)
{
	const struct {
		struct tern_buf *b;
		const struct tern_tensor_view *v;
		bool matrix;
	} ws[] = {{&b->attn_ln_w, l->attn_ln_w, false}, {&b->attn_ln_b, l->attn_ln_b, false},
		  {&b->q_w, l->q_w, true},		{&b->q_b, l->q_b, false},
		  {&b->k_w, l->k_w, true},		{&b->v_w, l->v_w, true},
		  {&b->v_b, l->v_b, false},		{&b->o_w, l->o_w, true},
		  {&b->o_b, l->o_b, false},		{&b->mlp_ln_w, l->mlp_ln_w, false},
		  {&b->mlp_ln_b, l->mlp_ln_b, false},	{&b->mlp0_w, l->mlp0_w, true},
		  {&b->mlp0_b, l->mlp0_b, false},	{&b->mlp2_w, l->mlp2_w, true},
		  {&b->mlp2_b, l->mlp2_b, false}};
	for (size_t i = 0; i < sizeof(ws) / sizeof(ws[0]); i++) {
		int rc = whisper_buf_weight(be, ws[i].b, ws[i].v, ws[i].matrix, e);
		if (rc)
			return rc;
	}
	return 0;
}

void whisper_block_free(struct tern_backend *be, struct whisper_block_bufs *b)
{
	struct tern_buf *const bufs[] = {&b->attn_ln_w, &b->attn_ln_b, &b->q_w,    &b->q_b,	  &b->k_w,
					 &b->v_w,	&b->v_b,       &b->o_w,	   &b->o_b,	  &b->mlp_ln_w,
					 &b->mlp_ln_b,	&b->mlp0_w,    &b->mlp0_b, &b->mlp2_w, &b->mlp2_b};
	whisper_bufs_free(be, bufs, sizeof(bufs) / sizeof(bufs[0]));
}
