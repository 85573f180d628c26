/* test_llm_model.c - lib/llm/model: tiny synthetic models of every
 * architecture written by our GGUF writer (the config must match what the
 * keys say; every tensor removed, mis-shaped or retyped in turn must fail
 * with the right code and a message naming it), tied and untied outputs,
 * hostile hyperparameters, and the two real models of models/ against
 * values read from them with gguf-py. The tensor lists below are written
 * out by hand from llama.cpp's llama-arch.cpp, not from the loader's table. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/llm/model.h"
#include "quant/quant.h"

/* ---- a synthetic model --------------------------------------------------------- */

struct spec {
	const char *arch;
	uint32_t n_layer, n_embd, n_head, n_head_kv, n_ff, n_vocab;
	uint32_t key_length;   /* 0: not written (n_embd / n_head) */
	uint32_t n_swa;        /* gemma3 sliding window (0: key not written) */
	bool untied;           /* write output.weight */
	bool rope_freqs;       /* write rope_freqs.weight */
	const char *scaling;   /* rope.scaling.type, or NULL */
	float factor;          /* rope.scaling.factor, 0: not written */
	/* one change to one tensor */
	const char *skip;      /* not written */
	const char *reshape;   /* last dimension + 1 */
	const char *retype;    /* written as `type` */
	uint32_t type;
	bool llama_bias;       /* llama's optional attention biases (bq, bk, bv, bo) */
	float swa_base;        /* rope.freq_base_swa, 0: not written */
	uint32_t n_ctx_orig;   /* rope.scaling.original_context_length, 0: not written */
	float attn_factor;     /* rope.scaling.attn_factor, 0: not written */
};

struct tdesc {
	char name[48];
	uint64_t ne0, ne1;
	bool matrix;
	bool optional;
};

static struct tdesc tlist[256];
static size_t n_tlist;

static void want(const char *name, uint64_t ne0, uint64_t ne1, bool matrix, bool optional)
{
	struct tdesc *t = &tlist[n_tlist++];
	snprintf(t->name, sizeof t->name, "%s", name);
	t->ne0 = ne0, t->ne1 = ne1, t->matrix = matrix, t->optional = optional;
}

/* The tensors of a model of spec s, as llama.cpp names and shapes them. */
static void list_tensors(const struct spec *s)
{
	n_tlist = 0;
	uint64_t E = s->n_embd, hd = s->key_length ? s->key_length : s->n_embd / s->n_head;
	uint64_t Q = s->n_head * hd, KV = s->n_head_kv * hd, F = s->n_ff;
	bool qwen2 = strcmp(s->arch, "qwen2") == 0, gemma3 = strcmp(s->arch, "gemma3") == 0;
	bool qknorm = gemma3 || strcmp(s->arch, "qwen3") == 0;
	want("token_embd.weight", E, s->n_vocab, true, false);
	want("output_norm.weight", E, 1, false, false);
	if (s->untied)
		want("output.weight", E, s->n_vocab, true, true);
	if (s->rope_freqs)
		want("rope_freqs.weight", hd / 2, 1, false, true);
	for (uint32_t l = 0; l < s->n_layer; l++) {
		char n[48];
#define W(suffix, a, b, m)                                          \
	do {                                                        \
		snprintf(n, sizeof n, "blk.%u." suffix, l);         \
		want(n, a, b, m, false);                            \
	} while (0)
		W("attn_norm.weight", E, 1, false);
		W("attn_q.weight", E, Q, true);
		W("attn_k.weight", E, KV, true);
		W("attn_v.weight", E, KV, true);
		W("attn_output.weight", Q, E, true);
		if (s->llama_bias) {
			W("attn_q.bias", Q, 1, false);
			W("attn_k.bias", KV, 1, false);
			W("attn_v.bias", KV, 1, false);
			W("attn_output.bias", E, 1, false);
			for (int i = 1; i <= 4; i++)
				tlist[n_tlist - i].optional = true;
		}
		if (qwen2) {
			W("attn_q.bias", Q, 1, false);
			W("attn_k.bias", KV, 1, false);
			W("attn_v.bias", KV, 1, false);
		}
		if (qknorm) {
			W("attn_q_norm.weight", hd, 1, false);
			W("attn_k_norm.weight", hd, 1, false);
		}
		if (gemma3)
			W("post_attention_norm.weight", E, 1, false);
		W("ffn_norm.weight", E, 1, false);
		W("ffn_gate.weight", E, F, true);
		W("ffn_up.weight", E, F, true);
		W("ffn_down.weight", F, E, true);
		if (gemma3)
			W("post_ffw_norm.weight", E, 1, false);
#undef W
	}
}

static uint8_t zeros[1 << 20];

static gguf_writer *write_keys(const struct spec *s)
{
	gguf_writer *w = gguf_writer_new();
	char k[96];
#define KEY(name) (snprintf(k, sizeof k, "%s." name, s->arch), k)
	gguf_writer_str(w, "general.architecture", s->arch);
	gguf_writer_u32(w, KEY("context_length"), 256);
	gguf_writer_u32(w, KEY("embedding_length"), s->n_embd);
	gguf_writer_u32(w, KEY("block_count"), s->n_layer);
	gguf_writer_u32(w, KEY("feed_forward_length"), s->n_ff);
	gguf_writer_u32(w, KEY("attention.head_count"), s->n_head);
	gguf_writer_u32(w, KEY("attention.head_count_kv"), s->n_head_kv);
	gguf_writer_f32(w, KEY("attention.layer_norm_rms_epsilon"), 1e-6f);
	gguf_writer_f32(w, KEY("rope.freq_base"), 1e6f);
	gguf_writer_u32(w, KEY("vocab_size"), s->n_vocab);
	if (s->key_length) {
		gguf_writer_u32(w, KEY("attention.key_length"), s->key_length);
		gguf_writer_u32(w, KEY("attention.value_length"), s->key_length);
	}
	if (s->n_swa)
		gguf_writer_u32(w, KEY("attention.sliding_window"), s->n_swa);
	if (s->swa_base)
		gguf_writer_f32(w, KEY("rope.freq_base_swa"), s->swa_base);
	if (s->scaling)
		gguf_writer_str(w, KEY("rope.scaling.type"), s->scaling);
	if (s->factor)
		gguf_writer_f32(w, KEY("rope.scaling.factor"), s->factor);
	if (s->n_ctx_orig)
		gguf_writer_u32(w, KEY("rope.scaling.original_context_length"), s->n_ctx_orig);
	if (s->attn_factor)
		gguf_writer_f32(w, KEY("rope.scaling.attn_factor"), s->attn_factor);
#undef KEY
	return w;
}

static void write_tensors(gguf_writer *w, const struct spec *s)
{
	list_tensors(s);
	for (size_t i = 0; i < n_tlist; i++) {
		const struct tdesc *t = &tlist[i];
		if (s->skip && strcmp(s->skip, t->name) == 0)
			continue;
		uint64_t ne[2] = {t->ne0, t->ne1};
		uint32_t nd = t->ne1 == 1 ? 1 : 2;
		if (s->reshape && strcmp(s->reshape, t->name) == 0)
			ne[nd - 1]++;
		uint32_t type = s->retype && strcmp(s->retype, t->name) == 0 ? s->type : QT_F32;
		bool ok = true;
		size_t nbytes = quant_row_size(type, ne[0], &ok) * ne[1];
		assert_true(ok && nbytes <= sizeof zeros);
		assert_int_equal(gguf_writer_tensor(w, t->name, type, nd, ne, zeros), 0);
	}
}

static void *file_buf;
static size_t file_size;
static tern_mf *file_mf;

static void close_file(void)
{
	tern_mf_close(file_mf);
	free(file_buf);
	file_mf = NULL, file_buf = NULL;
}

/* Write a model to memory and load it: the hyperparameter keys of `keys`,
 * then `edit` (if any) adds keys, then the tensors of `tensors`. The file
 * stays open (for pointer checks) until the next call or close_file(). */
static int load_mixed(const struct spec *keys, void (*edit)(gguf_writer *w), const struct spec *tensors,
		      struct tern_model **m, tern_err *e)
{
	close_file();
	gguf_writer *w = write_keys(keys);
	if (edit)
		edit(w);
	write_tensors(w, tensors);
	tern_err we = {0};
	if (gguf_writer_write_mem(w, &file_buf, &file_size, &we))
		fail_msg("write: %s", we.msg);
	gguf_writer_free(w);
	if (tern_mf_open_mem(&file_mf, file_buf, file_size, NULL, &we))
		fail_msg("open: %s", we.msg);
	*e = (tern_err){0};
	return tern_model_load(m, file_mf, e);
}

static int load_spec(const struct spec *s, struct tern_model **m, tern_err *e)
{
	return load_mixed(s, NULL, s, m, e);
}

static const struct spec llama_spec = {"llama", 2, 64, 4, 2, 96, 128, 0, 0, false, false, NULL, 0, NULL, NULL, NULL, 0,
				       false, 0, 0, 0};
static const struct spec qwen2_spec = {"qwen2", 2, 64, 4, 2, 96, 128, 0, 0, true, false, NULL, 0, NULL, NULL, NULL, 0,
				       false, 0, 0, 0};
static const struct spec qwen3_spec = {"qwen3", 2, 64, 4, 1, 96, 128, 32, 0, false, false, NULL, 0, NULL, NULL, NULL,
				       0, false, 0, 0, 0};
/* 7 layers: locals 0-4 and 6, global 5; head size 32 with n_embd/n_head 16 */
static const struct spec gemma3_spec = {"gemma3", 7, 64, 4, 1, 96, 128, 32, 16, false, false, NULL, 0, NULL, NULL,
					NULL, 0, false, 0, 0, 0};

/* Every weight is a view inside the file's bytes. */
static void assert_in_file(const struct tern_tensor_view *t)
{
	assert_non_null(t);
	const uint8_t *p = t->data, *b = file_buf;
	assert_true(p >= b && p + t->nbytes <= b + file_size);
}

/* The layer pointers named in tlist are non-NULL and carry those names. */
static void assert_layer_tensor(const struct tern_tensor_view *t, uint32_t l, const char *suffix)
{
	char n[64];
	snprintf(n, sizeof n, "blk.%u.%s", l, suffix);
	assert_in_file(t);
	assert_int_equal(t->name.len, strlen(n));
	assert_memory_equal(t->name.ptr, n, t->name.len);
}

/* ---- each architecture loads, config as the keys say ---------------------------- */

static void test_llama(void **state)
{
	(void)state;
	struct tern_model *m;
	tern_err e;
	if (load_spec(&llama_spec, &m, &e))
		fail_msg("%s", e.msg);
	const struct tern_model_config *c = &m->cfg;
	assert_string_equal(c->arch, "llama");
	assert_int_equal(c->n_layer, 2);
	assert_int_equal(c->n_embd, 64);
	assert_int_equal(c->n_vocab, 128);
	assert_int_equal(c->n_ctx_train, 256);
	assert_int_equal(c->head_dim, 16);
	assert_int_equal(c->head_dim_v, 16);
	assert_int_equal(c->n_rot, 16);
	assert_int_equal(c->rope, TERN_MODEL_ROPE_NORMAL);
	assert_int_equal(c->act, TERN_MODEL_ACT_SILU);
	assert_float_equal(c->norm_eps, 1e-6f, 0);
	assert_float_equal(c->embd_scale, 1.0f, 0);
	assert_float_equal(c->attn_scale, 0.25f, 1e-7);
	assert_false(c->has_qk_norm || c->has_post_norms || c->has_qkv_bias || c->has_rope_freqs);
	assert_int_equal(c->n_swa, 0);
	assert_true(c->tied_output);
	assert_ptr_equal(m->w.output, m->w.token_embd);
	assert_null(m->w.rope_freqs);
	for (uint32_t l = 0; l < 2; l++) {
		const struct tern_model_layer_config *lc = &c->layer[l];
		assert_false(lc->is_swa);
		assert_int_equal(lc->n_head, 4);
		assert_int_equal(lc->n_head_kv, 2);
		assert_int_equal(lc->n_ff, 96);
		assert_float_equal(lc->rope_base, 1e6f, 0);
		assert_float_equal(lc->rope_scale, 1.0f, 0);
		const struct tern_model_layer *L = &m->w.layers[l];
		assert_layer_tensor(L->attn_norm, l, "attn_norm.weight");
		assert_layer_tensor(L->wq, l, "attn_q.weight");
		assert_layer_tensor(L->wk, l, "attn_k.weight");
		assert_layer_tensor(L->wv, l, "attn_v.weight");
		assert_layer_tensor(L->wo, l, "attn_output.weight");
		assert_layer_tensor(L->ffn_norm, l, "ffn_norm.weight");
		assert_layer_tensor(L->ffn_gate, l, "ffn_gate.weight");
		assert_layer_tensor(L->ffn_up, l, "ffn_up.weight");
		assert_layer_tensor(L->ffn_down, l, "ffn_down.weight");
		assert_null(L->bq);
		assert_null(L->bo);
		assert_null(L->q_norm);
		assert_null(L->attn_post_norm);
	}
	assert_in_file(m->w.output_norm);
	assert_int_equal(m->w.layers[1].wk->ne[1], 32); /* 2 kv heads of 16 */
	tern_model_free(m);
}

static void test_qwen2(void **state)
{
	(void)state;
	struct tern_model *m;
	tern_err e;
	if (load_spec(&qwen2_spec, &m, &e))
		fail_msg("%s", e.msg);
	const struct tern_model_config *c = &m->cfg;
	assert_int_equal(c->rope, TERN_MODEL_ROPE_NEOX);
	assert_true(c->has_qkv_bias);
	assert_false(c->has_qk_norm);
	assert_false(c->tied_output);
	assert_in_file(m->w.output);
	assert_ptr_not_equal(m->w.output, m->w.token_embd);
	assert_memory_equal(m->w.output->name.ptr, "output.weight", 13);
	for (uint32_t l = 0; l < 2; l++) {
		assert_layer_tensor(m->w.layers[l].bq, l, "attn_q.bias");
		assert_layer_tensor(m->w.layers[l].bk, l, "attn_k.bias");
		assert_layer_tensor(m->w.layers[l].bv, l, "attn_v.bias");
		assert_null(m->w.layers[l].bo);
	}
	tern_model_free(m);
}

static void test_qwen3(void **state)
{
	(void)state;
	struct tern_model *m;
	tern_err e;
	if (load_spec(&qwen3_spec, &m, &e))
		fail_msg("%s", e.msg);
	const struct tern_model_config *c = &m->cfg;
	assert_int_equal(c->rope, TERN_MODEL_ROPE_NEOX);
	assert_true(c->has_qk_norm);
	assert_false(c->has_qkv_bias);
	assert_int_equal(c->head_dim, 32); /* key_length, not 64/4 */
	assert_int_equal(c->n_rot, 32);
	assert_int_equal(c->n_head_kv, 1);
	assert_float_equal(c->attn_scale, 1.0f / sqrtf(32.0f), 1e-7);
	for (uint32_t l = 0; l < 2; l++) {
		assert_layer_tensor(m->w.layers[l].q_norm, l, "attn_q_norm.weight");
		assert_layer_tensor(m->w.layers[l].k_norm, l, "attn_k_norm.weight");
		assert_int_equal(m->w.layers[l].wq->ne[1], 128);
		assert_int_equal(m->w.layers[l].wo->ne[0], 128);
	}
	tern_model_free(m);
}

static void test_gemma3(void **state)
{
	(void)state;
	struct tern_model *m;
	tern_err e;
	struct spec s = gemma3_spec;
	s.scaling = "linear", s.factor = 8.0f;
	if (load_spec(&s, &m, &e))
		fail_msg("%s", e.msg);
	const struct tern_model_config *c = &m->cfg;
	assert_int_equal(c->act, TERN_MODEL_ACT_GELU);
	assert_int_equal(c->rope, TERN_MODEL_ROPE_NEOX);
	assert_true(c->has_qk_norm && c->has_post_norms);
	assert_float_equal(c->embd_scale, 8.0f, 1e-6); /* sqrt(64) */
	assert_float_equal(c->attn_scale, 1.0f / sqrtf(32.0f), 1e-7);
	assert_int_equal(c->n_swa, 16);
	assert_int_equal(c->rope_scaling, TERN_ROPE_SCALING_LINEAR);
	assert_float_equal(c->rope_freq_scale, 0.125f, 0);
	static const bool global[7] = {0, 0, 0, 0, 0, 1, 0};
	for (uint32_t l = 0; l < 7; l++) {
		const struct tern_model_layer_config *lc = &c->layer[l];
		assert_int_equal(lc->is_swa, !global[l]);
		assert_float_equal(lc->rope_base, global[l] ? 1e6f : 1e4f, 0);
		assert_float_equal(lc->rope_scale, global[l] ? 0.125f : 1.0f, 0); /* scaling on global layers only */
		assert_layer_tensor(m->w.layers[l].attn_post_norm, l, "post_attention_norm.weight");
		assert_layer_tensor(m->w.layers[l].ffn_post_norm, l, "post_ffw_norm.weight");
		assert_layer_tensor(m->w.layers[l].q_norm, l, "attn_q_norm.weight");
	}
	tern_model_free(m);

	/* a file that gives the local layers' base */
	s.swa_base = 5e4f;
	if (load_spec(&s, &m, &e))
		fail_msg("%s", e.msg);
	for (uint32_t l = 0; l < 7; l++)
		assert_float_equal(m->cfg.layer[l].rope_base, global[l] ? 1e6f : 5e4f, 0);
	tern_model_free(m);
	s.swa_base = 0;

	/* no sliding_window key: every layer global with the file's base */
	s.n_swa = 0;
	if (load_spec(&s, &m, &e))
		fail_msg("%s", e.msg);
	assert_int_equal(m->cfg.n_swa, 0);
	for (uint32_t l = 0; l < 7; l++) {
		assert_false(m->cfg.layer[l].is_swa);
		assert_float_equal(m->cfg.layer[l].rope_base, 1e6f, 0);
	}
	tern_model_free(m);
}

static void test_llama_rope(void **state)
{
	(void)state;
	struct tern_model *m;
	tern_err e;
	struct spec s = llama_spec;
	s.rope_freqs = true, s.untied = true;
	if (load_spec(&s, &m, &e))
		fail_msg("%s", e.msg);
	assert_true(m->cfg.has_rope_freqs);
	assert_in_file(m->w.rope_freqs);
	assert_int_equal(m->w.rope_freqs->ne[0], 8);
	assert_false(m->cfg.tied_output);
	tern_model_free(m);

	s.rope_freqs = false, s.scaling = "linear", s.factor = 4.0f;
	if (load_spec(&s, &m, &e))
		fail_msg("%s", e.msg);
	assert_int_equal(m->cfg.rope_scaling, TERN_ROPE_SCALING_LINEAR);
	assert_float_equal(m->cfg.layer[1].rope_scale, 0.25f, 0);
	tern_model_free(m);

	/* llama's optional biases: loaded where present, checked like the rest */
	s.scaling = NULL, s.factor = 0, s.llama_bias = true;
	if (load_spec(&s, &m, &e))
		fail_msg("%s", e.msg);
	assert_true(m->cfg.has_qkv_bias);
	assert_layer_tensor(m->w.layers[1].bk, 1, "attn_k.bias");
	assert_layer_tensor(m->w.layers[1].bo, 1, "attn_output.bias");
	assert_int_equal(m->w.layers[1].bk->ne[0], 32);
	tern_model_free(m);
	s.reshape = "blk.1.attn_output.bias";
	assert_int_equal(load_spec(&s, &m, &e), TERN_EFORMAT);
	assert_string_equal(e.msg, "tensor 'blk.1.attn_output.bias' has shape {65}, expected {64}");
	s.reshape = NULL, s.llama_bias = false;

	/* scaling "none" never scales, whatever the factor (llama.cpp) */
	s.scaling = "none", s.factor = 4.0f;
	if (load_spec(&s, &m, &e))
		fail_msg("%s", e.msg);
	assert_int_equal(m->cfg.rope_scaling, TERN_ROPE_SCALING_NONE);
	assert_float_equal(m->cfg.layer[1].rope_scale, 1.0f, 0);
	tern_model_free(m);

	/* LongRoPE is phi3's only */
	s.scaling = "longrope";
	assert_int_equal(load_spec(&s, &m, &e), TERN_EUNSUPPORTED);
	assert_null(m);
	assert_string_equal(e.msg, "'llama.rope.scaling.type' = 'longrope' is not supported for llama (supported: none, "
			    "linear, yarn)");
}

/* ggml_rope_yarn_corr_dims from the YaRN paper's definition, in double:
 * the pair i whose wavelength 2 pi base^(2i / n_rot) fits `turns` times
 * into the original context, floored (beta_fast 32) or ceiled (beta_slow
 * 1), clamped to the pairs */
static double corr_dim(double n_rot, double orig, double turns, double base, bool up)
{
	double i = n_rot * log(orig / (turns * 2 * M_PI)) / (2 * log(base));
	i = up ? ceil(i) : floor(i);
	return up ? fmin(i, n_rot - 1) : fmax(i, 0);
}

/* YaRN in every family, as llama.cpp sets it up: ext_factor 1, the ramp
 * between the corrected pairs of each layer's base, the magnitude 1 + 0.1
 * ln(factor) on the scaled layers only (get_mscale / (1 + 0.1 ln factor),
 * times ggml's own 1 + 0.1 ln(1 / scale)); the file's attention factor
 * apart. */
static void test_yarn(void **state)
{
	(void)state;
	struct tern_model *m;
	tern_err e;
	/* llama: head size 16 = n_rot, base 1e6, original context 256 (the
	 * trained one, no key) */
	struct spec s = llama_spec;
	s.scaling = "yarn", s.factor = 4.0f;
	if (load_spec(&s, &m, &e))
		fail_msg("%s", e.msg);
	const struct tern_model_config *c = &m->cfg;
	assert_int_equal(c->rope_scaling, TERN_ROPE_SCALING_YARN);
	assert_true(c->rope_ext_factor == 1);
	assert_float_equal(c->rope_attn_factor, 1.0f, 0);
	for (uint32_t l = 0; l < 2; l++) {
		assert_float_equal(c->layer[l].rope_scale, 0.25f, 0);
		assert_float_equal(c->layer[l].rope_corr_low, corr_dim(16, 256, 32, 1e6, false), 0);
		assert_float_equal(c->layer[l].rope_corr_high, corr_dim(16, 256, 1, 1e6, true), 0);
		assert_float_equal(c->layer[l].rope_mscale, 1 + 0.1 * log(4.0), 1e-6);
	}
	assert_float_equal(c->layer[0].rope_corr_low, 0, 0);
	assert_float_equal(c->layer[0].rope_corr_high, 3, 0);
	assert_float_equal(c->attn_scale, 0.25f, 0); /* the scores are not touched (deepseek2's are) */
	tern_model_free(m);

	/* a smaller original context moves the ramp; attn_factor multiplies */
	s.n_ctx_orig = 64, s.attn_factor = 1.5f;
	if (load_spec(&s, &m, &e))
		fail_msg("%s", e.msg);
	c = &m->cfg;
	assert_float_equal(c->layer[1].rope_corr_low, 0, 0);
	assert_float_equal(c->layer[1].rope_corr_high, corr_dim(16, 64, 1, 1e6, true), 0);
	assert_float_equal(c->layer[1].rope_corr_high, 2, 0);
	assert_float_equal(c->rope_attn_factor, 1.5f, 0);
	assert_float_equal(c->layer[1].rope_mscale, 1 + 0.1 * log(4.0), 1e-6);
	tern_model_free(m);

	/* gemma3: the global layer (5) scaled at base 1e6, the local ones at
	 * scale 1 and base 5e4: their ramp is their base's, their magnitude 1 */
	s = gemma3_spec;
	s.scaling = "yarn", s.factor = 8.0f, s.n_ctx_orig = 4096, s.swa_base = 5e4f;
	if (load_spec(&s, &m, &e))
		fail_msg("%s", e.msg);
	c = &m->cfg;
	for (uint32_t l = 0; l < 7; l++) {
		const struct tern_model_layer_config *lc = &c->layer[l];
		double base = l == 5 ? 1e6 : 5e4;
		assert_float_equal(lc->rope_scale, l == 5 ? 0.125f : 1.0f, 0);
		assert_float_equal(lc->rope_corr_low, corr_dim(32, 4096, 32, base, false), 0);
		assert_float_equal(lc->rope_corr_high, corr_dim(32, 4096, 1, base, true), 0);
		assert_float_equal(lc->rope_mscale, l == 5 ? 1 + 0.1 * log(8.0) : 1.0, 1e-6);
	}
	assert_true(c->layer[5].rope_corr_low != c->layer[0].rope_corr_low);
	tern_model_free(m);

	/* what the rope op cannot take is refused at load: a factor below 1
	 * makes llama.cpp's attention factor 1 / (1 + 0.1 ln factor) negative,
	 * which the local layers (scale 1) would take as their magnitude */
	s.factor = 1e-5f;
	assert_int_equal(load_spec(&s, &m, &e), TERN_EUNSUPPORTED);
	assert_null(m);
	assert_string_equal(e.msg, "'gemma3.rope.scaling.factor' = 1e-05: YaRN's magnitude is not defined for it");
}

/* Quantized products load; K-quant rows need 256 elements. */
static void test_quant_types(void **state)
{
	(void)state;
	struct tern_model *m;
	tern_err e;
	static const uint32_t types[] = {QT_F16, QT_BF16, QT_Q4_0, QT_Q4_1, QT_Q8_0, QT_Q5_0, QT_IQ4_NL};
	for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
		struct spec s = llama_spec;
		s.retype = "blk.1.ffn_up.weight", s.type = types[i];
		if (load_spec(&s, &m, &e))
			fail_msg("%s: %s", quant_type_name(types[i]), e.msg);
		assert_int_equal(m->w.layers[1].ffn_up->type, types[i]);
		tern_model_free(m);
	}
	struct spec s = llama_spec;
	s.n_embd = 256, s.n_head = 4;
	s.retype = "blk.0.attn_q.weight", s.type = QT_Q4_K;
	if (load_spec(&s, &m, &e))
		fail_msg("%s", e.msg);
	tern_model_free(m);
}

/* ---- every tensor in turn ---------------------------------------------------- */

static void each_tensor(const struct spec *base)
{
	struct spec s = *base;
	s.untied = true, s.rope_freqs = s.llama_bias = strcmp(s.arch, "llama") == 0;
	list_tensors(&s);
	size_t n = n_tlist;
	static struct tdesc all[256];
	memcpy(all, tlist, n * sizeof *all);
	for (size_t i = 0; i < n; i++) {
		const struct tdesc *t = &all[i];
		struct tern_model *m = (struct tern_model *)1;
		tern_err e;
		char shape[256];

		/* removed */
		s.skip = t->name;
		int rc = load_spec(&s, &m, &e);
		s.skip = NULL;
		if (t->optional) {
			if (rc)
				fail_msg("without optional %s: %s", t->name, e.msg);
			if (strcmp(t->name, "output.weight") == 0)
				assert_ptr_equal(m->w.output, m->w.token_embd);
			else if (strcmp(t->name, "rope_freqs.weight") == 0)
				assert_null(m->w.rope_freqs);
			else /* a llama bias of layer 0 or 1 */
				assert_true(m->w.layers[t->name[4] - '0'].bq == NULL || m->w.layers[t->name[4] - '0'].bo == NULL ||
					    m->w.layers[t->name[4] - '0'].bk == NULL || m->w.layers[t->name[4] - '0'].bv == NULL);
			tern_model_free(m);
		} else {
			if (rc != TERN_EFORMAT)
				fail_msg("without %s: rc %d (%s)", t->name, rc, e.msg);
			assert_null(m);
			snprintf(shape, sizeof shape, "tensor '%.47s' is missing", t->name);
			assert_string_equal(e.msg, shape);
		}

		/* mis-shaped: the last dimension one larger */
		s.reshape = t->name;
		rc = load_spec(&s, &m, &e);
		s.reshape = NULL;
		if (rc != TERN_EFORMAT)
			fail_msg("reshaped %s: rc %d (%s)", t->name, rc, e.msg);
		if (t->ne1 == 1)
			snprintf(shape, sizeof shape, "tensor '%.47s' has shape {%llu}, expected {%llu}", t->name,
				 (unsigned long long)t->ne0 + 1, (unsigned long long)t->ne0);
		else
			snprintf(shape, sizeof shape, "tensor '%.47s' has shape {%llu, %llu}, expected {%llu, %llu}", t->name,
				 (unsigned long long)t->ne0, (unsigned long long)t->ne1 + 1, (unsigned long long)t->ne0,
				 (unsigned long long)t->ne1);
		assert_string_equal(e.msg, shape);

		/* a type the loader must refuse: integers for products, anything but f32 for vectors */
		s.retype = t->name, s.type = t->matrix ? QT_I32 : QT_F16;
		rc = load_spec(&s, &m, &e);
		s.retype = NULL;
		if (rc != TERN_EUNSUPPORTED)
			fail_msg("retyped %s: rc %d (%s)", t->name, rc, e.msg);
		assert_non_null(strstr(e.msg, t->name));
		assert_non_null(strstr(e.msg, t->matrix ? "i32" : "f16"));
	}
	close_file();
}

static void test_each_tensor_llama(void **state)
{
	(void)state;
	each_tensor(&llama_spec);
}
static void test_each_tensor_qwen2(void **state)
{
	(void)state;
	each_tensor(&qwen2_spec);
}
static void test_each_tensor_qwen3(void **state)
{
	(void)state;
	each_tensor(&qwen3_spec);
}
static void test_each_tensor_gemma3(void **state)
{
	(void)state;
	each_tensor(&gemma3_spec);
}

/* ---- hostile or unsupported files ----------------------------------------------- */

static void test_unsupported_arch(void **state)
{
	(void)state;
	struct tern_model *m;
	tern_err e;
	struct spec s = llama_spec;
	s.arch = "mamba";
	assert_int_equal(load_spec(&s, &m, &e), TERN_EUNSUPPORTED);
	assert_null(m);
	assert_string_equal(e.msg, "architecture 'mamba' is not supported (supported: llama, qwen2, qwen3, gemma3, gemma, gemma2, phi2, phi3, qwen2moe, qwen3moe, gpt-oss, deepseek2)");
	assert_false(tern_model_arch_supported("mamba"));
	/* the name comes from the file: a newline in it must not forge a second line */
	s.arch = "ma\nmba";
	assert_int_equal(load_spec(&s, &m, &e), TERN_EUNSUPPORTED);
	assert_string_equal(e.msg, "architecture 'ma\\x0amba' is not supported (supported: llama, qwen2, qwen3, gemma3, gemma, gemma2, phi2, phi3, qwen2moe, qwen3moe, gpt-oss, deepseek2)");
	/* the list names exactly the architectures that load */
	char list[128];
	snprintf(list, sizeof list, "%s", tern_model_supported());
	for (char *tok = strtok(list, ", "); tok; tok = strtok(NULL, ", ")) {
		assert_true(tern_model_arch_supported(tok));
		s.arch = tok;
		if (load_spec(&s, &m, &e) == TERN_EUNSUPPORTED)
			fail_msg("%s: %s", tok, e.msg);
		tern_model_free(m);
	}
	close_file();

	/* not a language model at all */
	gguf_writer *w = gguf_writer_new();
	gguf_writer_u32(w, "x", 1);
	void *buf;
	size_t size;
	tern_err we = {0};
	assert_int_equal(gguf_writer_write_mem(w, &buf, &size, &we), 0);
	gguf_writer_free(w);
	tern_mf *mf;
	assert_int_equal(tern_mf_open_mem(&mf, buf, size, NULL, &we), 0);
	assert_int_equal(tern_model_load(&m, mf, &e), TERN_EUNSUPPORTED);
	assert_non_null(strstr(e.msg, "no general.architecture"));
	tern_mf_close(mf);
	free(buf);
}

/* Hyperparameter changes written on top of a good llama file. */
static int load_with(void (*edit)(gguf_writer *w), const struct spec *s, struct tern_model **m, tern_err *e)
{
	return load_mixed(s, edit, s, m, e);
}

/* a mixture of experts (keys the spec does not write) */
static void edit_moe(gguf_writer *w)
{
	gguf_writer_u32(w, "llama.expert_count", 8);
	gguf_writer_u32(w, "llama.expert_used_count", 2);
}

static void test_hostile(void **state)
{
	(void)state;
	struct tern_model *m;
	tern_err e;
	/* a llama file that says it has experts must have their tensors */
	assert_int_equal(load_with(edit_moe, &llama_spec, &m, &e), TERN_EFORMAT);
	assert_string_equal(e.msg, "tensor 'blk.0.ffn_gate_inp.weight' is missing");

	/* absurd sizes are caught by validation or by the tensor shapes, and
	 * nothing is sized from them: a billion layers, a billion-token vocabulary */
	struct spec k = llama_spec, t = llama_spec;
	k.n_layer = 1000000000;
	k.skip = t.skip = NULL;
	assert_int_equal(load_mixed(&k, NULL, &t, &m, &e), TERN_ERANGE);
	assert_non_null(strstr(e.msg, "block_count"));

	k = llama_spec;
	k.n_vocab = 1000000000;
	assert_int_equal(load_mixed(&k, NULL, &llama_spec, &m, &e), TERN_EFORMAT);
	assert_string_equal(e.msg, "tensor 'token_embd.weight' has shape {64, 128}, expected {64, 1000000000}");

	/* zero heads: validation */
	k = llama_spec;
	k.n_head = 0;
	assert_int_equal(load_mixed(&k, NULL, &llama_spec, &m, &e), TERN_EFORMAT);
	assert_non_null(strstr(e.msg, "head_count"));

	/* a head size that the tensors do not have: the first product names it */
	k = llama_spec;
	k.key_length = 24;
	assert_int_equal(load_mixed(&k, NULL, &llama_spec, &m, &e), TERN_EFORMAT);
	assert_string_equal(e.msg, "tensor 'blk.0.attn_q.weight' has shape {64, 64}, expected {64, 96}");
	close_file();
}

/* tern_model_open owns its file and prefixes the path to messages. */
static void test_open_path(void **state)
{
	(void)state;
	char path[] = "/tmp/tern_llm_model_XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	close(fd);
	struct spec s = qwen3_spec;
	gguf_writer *w = write_keys(&s);
	write_tensors(w, &s);
	tern_err e = {0};
	assert_int_equal(gguf_writer_write(w, path, &e), 0);
	gguf_writer_free(w);
	struct tern_model *m;
	if (tern_model_open(&m, path, &e))
		fail_msg("%s", e.msg);
	assert_int_equal(m->cfg.n_layer, 2);
	assert_non_null(m->w.layers[1].k_norm->data);
	tern_model_free(m);

	s.skip = "blk.1.attn_k_norm.weight";
	w = write_keys(&s);
	write_tensors(w, &s);
	assert_int_equal(gguf_writer_write(w, path, &e), 0);
	gguf_writer_free(w);
	assert_int_equal(tern_model_open(&m, path, &e), TERN_EFORMAT);
	char want_msg[128];
	snprintf(want_msg, sizeof want_msg, "%s: tensor 'blk.1.attn_k_norm.weight' is missing", path);
	assert_string_equal(e.msg, want_msg);
	unlink(path);

	assert_int_equal(tern_model_open(&m, "/nonexistent/x.gguf", &e), TERN_EIO);
	assert_null(m);
}

/* ---- the real models -------------------------------------------------------------- */

static const char *models_dir(void)
{
	const char *d = getenv("TERN_MODELS");
	return d && *d ? d : "models";
}

static struct tern_model *open_real(const char *file)
{
	char path[512];
	snprintf(path, sizeof path, "%s/%s", models_dir(), file);
	if (access(path, R_OK) != 0) {
		printf("SKIP: %s absent (make models fetches it)\n", path);
		return NULL;
	}
	struct tern_model *m;
	tern_err e = {0};
	if (tern_model_open(&m, path, &e))
		fail_msg("%s", e.msg);
	return m;
}

/* Values read with gguf-py 0.19.0 from the file (GGUFReader fields and
 * tensor shapes): llama.*, 272 tensors, no output.weight. */
static void test_real_smollm2(void **state)
{
	(void)state;
	struct tern_model *m = open_real("SmolLM2-135M-Instruct.Q4_1.gguf");
	if (!m)
		skip();
	const struct tern_model_config *c = &m->cfg;
	assert_string_equal(c->arch, "llama");
	assert_int_equal(c->n_layer, 30);
	assert_int_equal(c->n_head, 9);
	assert_int_equal(c->n_head_kv, 3);
	assert_int_equal(c->n_embd, 576);
	assert_int_equal(c->n_ff, 1536);
	assert_int_equal(c->n_vocab, 49152);
	assert_int_equal(c->n_ctx_train, 8192);
	assert_int_equal(c->head_dim, 64);
	assert_int_equal(c->n_rot, 64);
	assert_float_equal(c->rope_freq_base, 100000.0f, 0);
	assert_float_equal(c->norm_eps, 1e-5f, 1e-12);
	assert_int_equal(c->rope, TERN_MODEL_ROPE_NORMAL);
	assert_int_equal(c->rope_scaling, TERN_ROPE_SCALING_NONE);
	assert_true(c->tied_output);
	assert_false(c->has_rope_freqs);
	assert_ptr_equal(m->w.output, m->w.token_embd);
	assert_int_equal(m->w.token_embd->type, QT_Q8_0);
	for (uint32_t l = 0; l < 30; l++) {
		assert_false(c->layer[l].is_swa);
		assert_int_equal(c->layer[l].n_head_kv, 3);
		assert_int_equal(m->w.layers[l].wq->type, QT_Q4_1);
		assert_int_equal(m->w.layers[l].wk->ne[1], 192);
		assert_int_equal(m->w.layers[l].ffn_down->ne[0], 1536);
	}
	tern_model_free(m);
}

/* gemma3.*, 236 tensors, no output.weight, no vocab_size key (262144 tokens). */
static void test_real_gemma3(void **state)
{
	(void)state;
	struct tern_model *m = open_real("gemma-3-270m-q4_k_m.gguf");
	if (!m)
		skip();
	const struct tern_model_config *c = &m->cfg;
	assert_string_equal(c->arch, "gemma3");
	assert_int_equal(c->n_layer, 18);
	assert_int_equal(c->n_head, 4);
	assert_int_equal(c->n_head_kv, 1);
	assert_int_equal(c->head_dim, 256);
	assert_int_equal(c->head_dim_v, 256);
	assert_int_equal(c->n_embd, 640);
	assert_int_equal(c->n_ff, 2048);
	assert_int_equal(c->n_vocab, 262144);
	assert_int_equal(c->n_ctx_train, 32768);
	assert_int_equal(c->n_swa, 512);
	assert_float_equal(c->norm_eps, 1e-6f, 1e-12);
	assert_float_equal(c->embd_scale, sqrtf(640.0f), 1e-5);
	assert_float_equal(c->attn_scale, 1.0f / 16.0f, 1e-8);
	assert_true(c->tied_output);
	assert_int_equal(m->w.layers[0].ffn_down->type, QT_Q6_K);
	assert_int_equal(m->w.layers[0].wo->type, QT_Q4_K);
	for (uint32_t l = 0; l < 18; l++) {
		bool global = l == 5 || l == 11 || l == 17;
		assert_int_equal(c->layer[l].is_swa, !global);
		assert_float_equal(c->layer[l].rope_base, global ? 1e6f : 1e4f, 0);
		assert_non_null(m->w.layers[l].ffn_post_norm);
	}
	tern_model_free(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_llama),
		cmocka_unit_test(test_qwen2),
		cmocka_unit_test(test_qwen3),
		cmocka_unit_test(test_gemma3),
		cmocka_unit_test(test_llama_rope),
		cmocka_unit_test(test_yarn),
		cmocka_unit_test(test_quant_types),
		cmocka_unit_test(test_each_tensor_llama),
		cmocka_unit_test(test_each_tensor_qwen2),
		cmocka_unit_test(test_each_tensor_qwen3),
		cmocka_unit_test(test_each_tensor_gemma3),
		cmocka_unit_test(test_unsupported_arch),
		cmocka_unit_test(test_hostile),
		cmocka_unit_test(test_open_path),
		cmocka_unit_test(test_real_smollm2),
		cmocka_unit_test(test_real_gemma3),
	};
	int rc = cmocka_run_group_tests(tests, NULL, NULL);
	close_file();
	return rc;
}
