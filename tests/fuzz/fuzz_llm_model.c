/* fuzz_llm_model.c - libFuzzer target for lib/llm/model: load any bytes as
 * a language model (GGUF files that parse but have wrong tensor shapes,
 * types or counts, missing keys, absurd hyperparameters). A load either
 * fails with a one-line message and no model, or gives a model whose every
 * weight lies inside the buffer and has the shape the config implies. The
 * loader may allocate only its bounded per-layer table, whatever the file
 * claims (ASan's allocation limit and -rss_limit_mb would catch more).
 *
 * A model that loads is then run: tern_llm_new with a context of 8 and
 * micro-batches of 4 on the reference or the optimized CPU backend (the
 * input's size picks), a prompt of 3 tokens (the batched path) and 2
 * single tokens (mat-vec), ids taken from the input. What that allocates
 * follows the config (activations of 4 tokens, a cache of 8 positions, the
 * logits), so the run is skipped when the config's sizes or the weights'
 * element count exceed bounds that keep one input well under a second and
 * a few MiB; within them, anything the loader accepts must run without a
 * crash, a sanitizer report or an out-of-bounds read (the logits may be
 * NaN: the weights are noise). */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "lib/cpu/backend.h"
#include "lib/llm/llm.h"
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

/* elements of a weight, 0 for none */
static uint64_t elems(const struct tern_tensor_view *t)
{
	if (!t)
		return 0;
	uint64_t n = 1;
	for (uint32_t i = 0; i < t->n_dims && i < TERN_MAX_DIMS; i++)
		n = t->ne[i] && n > UINT64_MAX / t->ne[i] ? UINT64_MAX : n * t->ne[i];
	return n;
}

#define RUN_MAX_DIM (1u << 16)      /* n_embd, n_vocab, n_ff, per-layer q/k/v widths */
#define RUN_MAX_ELEMS (1ull << 22) /* weight elements read per token */

static void run(const struct tern_model *m, const uint8_t *data, size_t size)
{
	const struct tern_model_config *c = &m->cfg;
	uint64_t work = elems(m->w.token_embd) + elems(m->w.output);
	if (c->n_embd > RUN_MAX_DIM || c->n_vocab > RUN_MAX_DIM || c->n_ff > RUN_MAX_DIM ||
	    (uint64_t)c->n_head * c->head_dim > RUN_MAX_DIM || (uint64_t)c->n_head * c->head_dim_v > RUN_MAX_DIM)
		return;
	for (uint32_t l = 0; l < c->n_layer; l++) {
		const struct tern_model_layer *L = &m->w.layers[l];
		work += elems(L->wq) + elems(L->wk) + elems(L->wv) + elems(L->wo) + elems(L->ffn_gate) +
			elems(L->ffn_up) + elems(L->ffn_down);
		if ((uint64_t)c->layer[l].n_head * c->head_dim > RUN_MAX_DIM || c->layer[l].n_ff > RUN_MAX_DIM)
			return;
	}
	if (work > RUN_MAX_ELEMS)
		return;
	tern_err e = {0};
	struct tern_backend *be = NULL;
	struct cpu_backend_opts bo = {.n_threads = size % 4 < 2 ? 1 : 2, .max_tokens = 4};
	if ((size % 2 ? cpu_ref_backend_new : cpu_backend_new)(&be, &bo, &e))
		return;
	struct tern_llm_opts o = tern_llm_opts_default();
	o.n_ctx = 8;
	o.n_ubatch = 4;
	o.logits_all = size % 8 >= 4;
	struct tern_llm *l = NULL;
	if (tern_llm_new(&l, m, be, &o, &e) == 0) {
		int32_t ids[5];
		for (int i = 0; i < 5; i++)
			ids[i] = (int32_t)((size > (size_t)i ? data[size - 1 - (size_t)i] : 0) % c->n_vocab);
		float acc = 0;
		int rc = tern_llm_decode(l, ids, 3, &e);
		for (int i = 3; !rc && i < 5; i++)
			rc = tern_llm_decode(l, &ids[i], 1, &e);
		if (!rc) {
			const float *lg = tern_llm_logits(l, -1);
			if (!lg)
				__builtin_trap();
			acc = lg[0] + lg[c->n_vocab - 1];
		} else if (!e.msg[0]) {
			__builtin_trap();
		}
		/* out of range ids are refused, not read */
		int32_t bad = (int32_t)c->n_vocab;
		if (tern_llm_decode(l, &bad, 1, &e) != TERN_EINVAL)
			__builtin_trap();
		sink += (uint64_t)(acc != acc);
		tern_llm_free(l);
	} else if (l || !e.msg[0]) {
		__builtin_trap();
	}
	tern_backend_free(be);
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
		       touch(m->w.output, data, size) + touch(m->w.rope_freqs, data, size) +
		       touch(m->w.output_norm_b, data, size) + touch(m->w.output_b, data, size) +
		       touch(m->w.rope_long, data, size) + touch(m->w.rope_short, data, size);
	for (uint32_t l = 0; l < c->n_layer; l++) {
		const struct tern_model_layer *L = &m->w.layers[l];
		const struct tern_model_layer_config *lc = &c->layer[l];
		if (!lc->n_head || !lc->n_head_kv || lc->n_head % lc->n_head_kv ||
		    L->wq->ne[1] != (uint64_t)lc->n_head * c->head_dim || L->ffn_down->ne[0] != lc->n_ff)
			__builtin_trap();
		const struct tern_tensor_view *all[] = {L->attn_norm, L->wq, L->wk, L->wv, L->wo, L->bq,
							L->bk, L->bv, L->bo, L->q_norm, L->k_norm, L->attn_post_norm,
							L->ffn_norm, L->ffn_gate, L->ffn_up, L->ffn_down, L->ffn_post_norm,
							L->attn_norm_b, L->ffn_up_b, L->ffn_down_b, L->wqkv, L->bqkv,
							L->ffn_gate_up};
		for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
			acc += touch(all[i], data, size);
	}
	sink = acc;
	run(m, data, size);
	tern_model_free(m);
	tern_mf_close(mf);
	return 0;
}
