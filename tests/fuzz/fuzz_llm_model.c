/* fuzz_llm_model.c - libFuzzer target for lib/llm/model: load any bytes as
 * a language model (GGUF files that parse but have wrong tensor shapes,
 * types or counts, missing keys, absurd hyperparameters). A load either
 * fails with a one-line message and no model, or gives a model whose every
 * weight lies inside the buffer and has the shape the config implies. The
 * loader may allocate only its bounded per-layer table, whatever the file
 * claims (ASan's allocation limit and -rss_limit_mb would catch more). */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "lib/llm/model.h"

static volatile uint64_t sink;

static uint64_t touch(const struct tern_tensor_view *t, const uint8_t *data, size_t size)
{
	if (!t)
		return 0;
	const uint8_t *p = t->data;
	if (!p || p < data || t->nbytes > size || p + t->nbytes > data + size)
		__builtin_trap();
	return t->nbytes ? (uint64_t)p[0] + p[t->nbytes - 1] : 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	tern_mf *mf = NULL;
	tern_err e = {0};
	struct gguf_open_opts oo = {.lenient = size % 2 == 1};
	if (tern_mf_open_mem(&mf, data, size, &oo, &e) != 0)
		return 0;
	struct tern_model *m = (struct tern_model *)&e; /* must be reset to NULL on failure */
	int rc = tern_model_load(&m, mf, &e);
	if (rc) {
		if (m || !e.msg[0] || memchr(e.msg, '\n', strlen(e.msg)))
			__builtin_trap();
		tern_mf_close(mf);
		return 0;
	}
	const struct tern_model_config *c = &m->cfg;
	if (!c->n_layer || c->n_layer > TERN_ARCH_MAX_LAYERS || m->w.token_embd->ne[1] != c->n_vocab ||
	    m->w.token_embd->ne[0] != c->n_embd)
		__builtin_trap();
	uint64_t acc = touch(m->w.token_embd, data, size) + touch(m->w.output_norm, data, size) +
		       touch(m->w.output, data, size) + touch(m->w.rope_freqs, data, size);
	for (uint32_t l = 0; l < c->n_layer; l++) {
		const struct tern_model_layer *L = &m->w.layers[l];
		const struct tern_model_layer_config *lc = &c->layer[l];
		if (!lc->n_head || !lc->n_head_kv || lc->n_head % lc->n_head_kv ||
		    L->wq->ne[1] != (uint64_t)lc->n_head * c->head_dim || L->ffn_down->ne[0] != lc->n_ff)
			__builtin_trap();
		const struct tern_tensor_view *all[] = {L->attn_norm, L->wq, L->wk, L->wv, L->wo, L->bq,
							L->bk, L->bv, L->bo, L->q_norm, L->k_norm, L->attn_post_norm,
							L->ffn_norm, L->ffn_gate, L->ffn_up, L->ffn_down, L->ffn_post_norm};
		for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
			acc += touch(all[i], data, size);
	}
	sink = acc;
	tern_model_free(m);
	tern_mf_close(mf);
	return 0;
}
