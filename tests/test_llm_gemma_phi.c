/* test_llm_gemma_phi.c - what the gemma, gemma2, phi2 and phi3 rows of the
 * architecture table decide, checked on the synthetic models of
 * tests/data/llm_ref/synth (their logits against llama.cpp's are in
 * test_llm.c) and on small files written here:
 *
 *   the config each family gets (norm, soft-caps, the alternating window,
 *   the query scale, LongRoPE), against the values llama.cpp's loader
 *   derives (src/models/{gemma,gemma2,phi2,phi3}.cpp), written out here;
 *
 *   fused tensors (phi3's attn_qkv and gate/up ffn_up, a fused bias) split
 *   into views of the file's bytes at the right rows, for a float and a
 *   block type;
 *
 *   phi3's choice of the long or short RoPE factors at the boundary of the
 *   original context (rounded up to 256 as llama.cpp pads n_ctx): the
 *   logits with a context one position past it are those of phi3-long (the
 *   same weights, whose original context of 16 always picks the long
 *   factors), one position before it those of a small context; and a
 *   context shorter than phi3-long's original 16 still takes the long ones;
 *
 *   gemma2's defaults when the file omits them (soft-caps 50 / 30, window
 *   4096) and gemma's output being its token embedding even where the file
 *   carries an output.weight (llama.cpp ignores it). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/cpu/backend.h"
#include "lib/llm/llm.h"
#include "lib/llm/model.h"
#include "quant/quant.h"
#include "tests/llm_synth.h"

static void test_config(void **state)
{
	(void)state;
	struct tern_model *m = synth_open("gemma", "f32");
	assert_non_null(m);
	const struct tern_model_config *c = &m->cfg;
	assert_int_equal(c->act, TERN_MODEL_ACT_GELU);
	assert_int_equal(c->rope, TERN_MODEL_ROPE_NEOX);
	assert_int_equal(c->norm, TERN_MODEL_NORM_RMS);
	assert_float_equal(c->embd_scale, 16.0f, 0);          /* sqrt(n_embd 256) */
	assert_float_equal(c->attn_scale, 1 / sqrtf(128), 0);  /* 1/sqrt(value_length) */
	assert_true(c->tied_output);
	assert_int_equal(c->n_head_kv, 1);
	assert_int_equal(c->n_swa, 0);
	assert_true(m->w.output == m->w.token_embd);
	tern_model_free(m);

	m = synth_open("gemma2", "q4_k");
	assert_non_null(m);
	c = &m->cfg;
	assert_int_equal(c->n_swa, 4);
	for (uint32_t l = 0; l < c->n_layer; l++) {
		assert_int_equal(c->layer[l].is_swa, l % 2 == 0); /* even layers local */
		assert_float_equal(c->layer[l].rope_base, 10000.0f, 0); /* no freq_base_swa: the global one */
		assert_float_equal(c->layer[l].rope_scale, 1.0f, 0);
	}
	assert_float_equal(c->attn_softcap, 5.0f, 0);
	assert_float_equal(c->final_softcap, 15.0f, 0);
	assert_float_equal(c->attn_scale, 1 / sqrtf(128), 0); /* not the 27B's 1/sqrt(n_embd/n_head) */
	assert_true(c->has_post_norms);
	assert_true(c->tied_output);
	tern_model_free(m);

	m = synth_open("phi2", "q8_0");
	assert_non_null(m);
	c = &m->cfg;
	assert_int_equal(c->norm, TERN_MODEL_NORM_LAYER);
	assert_float_equal(c->norm_eps, 1e-5f, 0);
	assert_true(c->ffn_plain && c->parallel);
	assert_int_equal(c->n_rot, 32);
	assert_int_equal(c->head_dim, 64);
	assert_false(c->tied_output);
	assert_non_null(m->w.output_b);
	assert_non_null(m->w.output_norm_b);
	for (uint32_t l = 0; l < c->n_layer; l++) {
		const struct tern_model_layer *L = &m->w.layers[l];
		assert_true(L->attn_norm_b && L->bq && L->bk && L->bv && L->bo && L->ffn_up_b && L->ffn_down_b);
		assert_null(L->ffn_gate);
		assert_null(L->ffn_norm);
	}
	tern_model_free(m);

	m = synth_open("phi3", "f32");
	assert_non_null(m);
	c = &m->cfg;
	assert_true(c->has_longrope);
	assert_float_equal(c->rope_attn_factor, 1.19024f, 0);
	assert_int_equal(c->n_ctx_orig, 4096);
	assert_int_equal(c->n_swa, 0); /* the file says 8; llama.cpp disables phi3's window */
	assert_false(c->layer[0].is_swa);
	assert_int_equal(c->n_rot, 48);
	assert_int_equal(c->act, TERN_MODEL_ACT_SILU);
	assert_non_null(m->w.rope_long);
	assert_non_null(m->w.rope_short);
	assert_int_equal(m->w.rope_long->ne[0], 24);
	tern_model_free(m);
}

/* the view of rows [r0, r0 + n) of t, as the loader should make it */
static void check_part(const struct tern_tensor_view *v, const struct tern_tensor_view *t, uint64_t r0, uint64_t n)
{
	assert_non_null(v);
	size_t rs = quant_row_size(t->type, t->ne[0], NULL);
	assert_int_equal(v->type, t->type);
	assert_int_equal(v->ne[0], t->ne[0]);
	assert_int_equal(v->ne[1], n);
	assert_ptr_equal(v->data, (const uint8_t *)t->data + r0 * rs);
	assert_int_equal(v->nbytes, n * rs);
}

static void test_fused_views(void **state)
{
	(void)state;
	static const char *const types[] = {"f32", "q4_k"};
	for (int i = 0; i < 2; i++) {
		struct tern_model *m = synth_open("phi3", types[i]);
		assert_non_null(m);
		for (uint32_t l = 0; l < m->cfg.n_layer; l++) {
			const struct tern_model_layer *L = &m->w.layers[l];
			assert_non_null(L->wqkv);
			assert_int_equal(L->wqkv->ne[1], 256 + 128 + 128); /* 4 x 64 query, 2 x 64 key and value */
			check_part(L->wq, L->wqkv, 0, 256);
			check_part(L->wk, L->wqkv, 256, 128);
			check_part(L->wv, L->wqkv, 384, 128);
			assert_non_null(L->ffn_gate_up);
			check_part(L->ffn_gate, L->ffn_gate_up, 0, 512); /* gate first (llama.cpp's swiglu) */
			check_part(L->ffn_up, L->ffn_gate_up, 512, 512);
			assert_null(L->bq);
		}
		tern_model_free(m);
	}
	/* phi2 stores them apart: nothing fused */
	struct tern_model *m = synth_open("phi2", "f32");
	assert_non_null(m);
	assert_null(m->w.layers[0].wqkv);
	assert_null(m->w.layers[0].ffn_gate_up);
	tern_model_free(m);

	/* a fused bias too (the fuzz seed phi2_fused: n_embd 8, 2 heads of 4) */
	tern_err e = {0};
	if (tern_model_open(&m, "tests/fuzz/corpus/llm_model/phi2_fused.gguf", &e))
		fail_msg("%s", e.msg);
	for (uint32_t l = 0; l < m->cfg.n_layer; l++) {
		const struct tern_model_layer *L = &m->w.layers[l];
		check_part(L->wk, L->wqkv, 8, 8);
		assert_non_null(L->bqkv);
		const float *b = L->bqkv->data;
		assert_ptr_equal(L->bq->data, b);
		assert_ptr_equal(L->bk->data, b + 8);
		assert_ptr_equal(L->bv->data, b + 16);
		assert_int_equal(L->bv->ne[0], 8);
		assert_int_equal(L->bv->nbytes, 32);
	}
	tern_model_free(m);
}

/* the logits of the synthetic ids at every position, with a context of n_ctx */
static float *run(const struct tern_model *m, int32_t n_ctx)
{
	static const int32_t ids[] = {1, 263, 104, 300, 72, 265, 119, 281, 259, 45, 318, 200};
	const int32_t n = (int32_t)(sizeof ids / sizeof ids[0]);
	struct tern_backend *be = NULL;
	tern_err e = {0};
	struct cpu_backend_opts bo = {.n_threads = 1, .max_tokens = n};
	if (cpu_backend_new(&be, &bo, &e))
		fail_msg("%s", e.msg);
	struct tern_llm_opts o = tern_llm_opts_default();
	o.n_ctx = n_ctx;
	o.n_ubatch = n;
	o.logits_all = true;
	struct tern_llm *l = NULL;
	if (tern_llm_new(&l, m, be, &o, &e) || tern_llm_decode(l, ids, n, &e))
		fail_msg("%s", e.msg);
	size_t nv = m->cfg.n_vocab;
	float *out = malloc(sizeof(float) * nv * (size_t)n);
	assert_non_null(out);
	for (int32_t i = 0; i < n; i++)
		memcpy(out + i * nv, tern_llm_logits(l, i), sizeof(float) * nv);
	tern_llm_free(l);
	tern_backend_free(be);
	return out;
}

static void test_longrope_choice(void **state)
{
	(void)state;
	struct tern_model *m = synth_open("phi3", "f32"), *ml = synth_open("phi3-long", "f32");
	assert_non_null(m);
	assert_non_null(ml);
	size_t bytes = sizeof(float) * m->cfg.n_vocab * 12;
	float *small = run(m, 32), *at = run(m, 4096), *past = run(m, 3841), *over = run(m, 4097);
	float *lng = run(ml, 32), *tiny = run(ml, 12);
	/* 32 and 4096 round to at most the original 4096: short factors; 3841
	 * rounds to 4096 too; 4097 rounds to 4352 > 4096: long factors */
	assert_memory_equal(small, at, bytes);
	assert_memory_equal(small, past, bytes);
	assert_memory_equal(over, lng, bytes);
	assert_memory_not_equal(small, over, bytes);
	/* phi3-long's original context is 16: a context of 12 rounds to 256,
	 * past it, so llama.cpp (and tern) take the long factors there too */
	assert_memory_equal(tiny, lng, bytes);
	free(small);
	free(at);
	free(past);
	free(over);
	free(lng);
	free(tiny);
	tern_model_free(m);
	tern_model_free(ml);
}

/* A two-layer gemma2 (or gemma) file with only the keys a converter must
 * write, and an output.weight, into path. */
static void write_bare(const char *arch, const char *path)
{
	struct gen g = {.type = QT_F32};
	g.w = gguf_writer_new();
	gguf_writer *w = g.w;
	char k[96], name[64];
	bool g2 = strcmp(arch, "gemma2") == 0;
	gguf_writer_str(w, "general.architecture", arch);
#define KEY(s) (key(k, sizeof k, arch, s), k)
	gguf_writer_u32(w, KEY("context_length"), 64);
	gguf_writer_u32(w, KEY("embedding_length"), 256);
	gguf_writer_u32(w, KEY("block_count"), 2);
	gguf_writer_u32(w, KEY("feed_forward_length"), 256);
	gguf_writer_u32(w, KEY("attention.head_count"), 4);
	gguf_writer_f32(w, KEY("attention.layer_norm_rms_epsilon"), 1e-6f);
	gguf_writer_u32(w, KEY("vocab_size"), 320);
#undef KEY
	int rc = 0;
	rc |= mat(&g, "token_embd.weight", 256, 320, 0.1f);
	rc |= mat(&g, "output.weight", 256, 320, 0.1f);
	rc |= vec(&g, "output_norm.weight", 256, 1, 0);
	for (int l = 0; l < 2; l++) {
#define T(s) (snprintf(name, sizeof name, "blk.%d.%s", l, s), name)
		static const char *const sq[] = {"attn_q.weight", "attn_k.weight", "attn_v.weight", "attn_output.weight",
						 "ffn_gate.weight", "ffn_up.weight", "ffn_down.weight"};
		for (int i = 0; i < 7; i++)
			rc |= mat(&g, T(sq[i]), 256, 256, 0.1f);
		rc |= vec(&g, T("attn_norm.weight"), 256, 1, 0);
		rc |= vec(&g, T("ffn_norm.weight"), 256, 1, 0);
		if (g2) {
			rc |= vec(&g, T("post_attention_norm.weight"), 256, 1, 0);
			rc |= vec(&g, T("post_ffw_norm.weight"), 256, 1, 0);
		}
#undef T
	}
	tern_err e = {0};
	assert_int_equal(rc, 0);
	if (gguf_writer_write(w, path, &e))
		fail_msg("%s", e.msg);
	gguf_writer_free(w);
}

static void test_defaults(void **state)
{
	(void)state;
	char path[600], dir[512];
	if (!synth_path("gemma", "f32", dir, sizeof dir))
		fail_msg("no temporary directory");
	*strrchr(dir, '/') = 0;
	static const char *const archs[] = {"gemma", "gemma2"};
	for (int a = 0; a < 2; a++) {
		snprintf(path, sizeof path, "%s/bare-%s.gguf", dir, archs[a]);
		write_bare(archs[a], path);
		struct tern_model *m = NULL;
		tern_err e = {0};
		if (tern_model_open(&m, path, &e))
			fail_msg("%s", e.msg);
		const struct tern_model_config *c = &m->cfg;
		/* the output is the embedding, whatever the file carries */
		assert_true(c->tied_output);
		assert_true(m->w.output == m->w.token_embd);
		if (a == 1) { /* llama.cpp's gemma2 defaults */
			assert_float_equal(c->attn_softcap, 50.0f, 0);
			assert_float_equal(c->final_softcap, 30.0f, 0);
			assert_int_equal(c->n_swa, 4096);
			assert_true(c->layer[0].is_swa && !c->layer[1].is_swa);
			assert_float_equal(c->attn_scale, 1 / sqrtf(64), 0); /* key_length defaults to 256 / 4 */
		} else {
			assert_float_equal(c->attn_softcap, 0, 0);
			assert_float_equal(c->final_softcap, 0, 0);
		}
		tern_model_free(m);
		unlink(path);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_config),
		cmocka_unit_test(test_fused_views),
		cmocka_unit_test(test_longrope_choice),
		cmocka_unit_test(test_defaults),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
