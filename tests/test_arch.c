/* test_arch.c - lib/format/arch: typed hyperparameters from GGUF files
 * written by our writer (every key, defaults, per-layer arrays, wrong types,
 * inconsistent values) and from the shared files, against values stated in
 * the files' own headers and in the reference data of tests/data/legacy. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "tests/testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/format/arch.h"

static char *data_path(const char *rel)
{
	static char p[512];
	snprintf(p, sizeof p, "%s/%s", test_data_dir(), rel);
	return p;
}

/* Serialise w and open it; *buf must be freed after tern_mf_close. */
static tern_mf *open_w(gguf_writer *w, void **buf)
{
	size_t size;
	tern_err e = {0};
	assert_int_equal(gguf_writer_write_mem(w, buf, &size, &e), 0);
	gguf_writer_free(w);
	tern_mf *m = NULL;
	if (tern_mf_open_mem(&m, *buf, size, NULL, &e))
		fail_msg("open: %s", e.msg);
	return m;
}

/* The keys a small grouped-query model needs. */
static gguf_writer *base_llama(uint32_t n_layer)
{
	gguf_writer *w = gguf_writer_new();
	gguf_writer_str(w, "general.architecture", "llama");
	gguf_writer_u32(w, "llama.context_length", 4096);
	gguf_writer_u32(w, "llama.embedding_length", 2048);
	gguf_writer_u32(w, "llama.block_count", n_layer);
	gguf_writer_u32(w, "llama.attention.head_count", 32);
	return w;
}

static struct tern_arch_llm hp; /* 6 KB: not on the stack */

static int load(gguf_writer *w, tern_err *e)
{
	void *buf;
	tern_mf *m = open_w(w, &buf);
	int rc = tern_arch_llm_load(m, &hp, e);
	tern_mf_close(m);
	free(buf);
	return rc;
}

static void test_every_key(void **state)
{
	(void)state;
	gguf_writer *w = base_llama(2);
	gguf_writer_u32(w, "llama.attention.head_count_kv", 8);
	gguf_writer_u32(w, "llama.attention.key_length", 64);
	gguf_writer_u32(w, "llama.attention.value_length", 64);
	gguf_writer_u32(w, "llama.attention.key_length_mla", 192);
	gguf_writer_u32(w, "llama.attention.value_length_mla", 128);
	gguf_writer_u32(w, "llama.attention.q_lora_rank", 1536);
	gguf_writer_u32(w, "llama.attention.kv_lora_rank", 512);
	gguf_writer_u32(w, "llama.leading_dense_block_count", 1);
	gguf_writer_f32(w, "llama.rope.scaling.yarn_log_multiplier", 0.0707f);
	gguf_writer_u64(w, "llama.feed_forward_length", 5632); /* any integer type that fits */
	gguf_writer_u32(w, "llama.rope.dimension_count", 32);
	gguf_writer_f32(w, "llama.rope.freq_base", 500000.0f);
	gguf_writer_f32(w, "llama.rope.freq_base_swa", 10000.0f);
	gguf_writer_str(w, "llama.rope.scaling.type", "yarn");
	gguf_writer_f32(w, "llama.rope.scaling.factor", 4.0f);
	gguf_writer_f32(w, "llama.rope.scaling.attn_factor", 1.25f);
	gguf_writer_u32(w, "llama.rope.scaling.original_context_length", 1024);
	gguf_writer_f64(w, "llama.attention.layer_norm_rms_epsilon", 1e-5);
	gguf_writer_u32(w, "llama.attention.sliding_window", 512);
	gguf_writer_u32(w, "llama.expert_count", 8);
	gguf_writer_u32(w, "llama.expert_used_count", 2);
	gguf_writer_u32(w, "llama.expert_feed_forward_length", 1408);
	gguf_writer_u32(w, "llama.expert_shared_count", 1);
	gguf_writer_u32(w, "llama.expert_shared_feed_forward_length", 2816);
	gguf_writer_f32(w, "llama.expert_weights_scale", 2.5f);
	gguf_writer_u32(w, "llama.expert_gating_func", 2);
	gguf_writer_u32(w, "llama.expert_group_count", 4);
	gguf_writer_u32(w, "llama.expert_group_used_count", 2);
	gguf_writer_f32(w, "llama.attn_logit_softcapping", 50.0f);
	gguf_writer_f32(w, "llama.final_logit_softcapping", 30.0f);
	gguf_writer_i32(w, "llama.vocab_size", 32000);
	tern_err e = {0};
	if (load(w, &e))
		fail_msg("%s", e.msg);
	assert_string_equal(hp.arch, "llama");
	assert_int_equal(hp.n_ctx_train, 4096);
	assert_int_equal(hp.n_embd, 2048);
	assert_int_equal(hp.n_layer, 2);
	assert_int_equal(hp.n_head, 32);
	assert_int_equal(hp.n_head_kv, 8);
	assert_int_equal(hp.n_head_kv_l[1], 8);
	assert_int_equal(hp.n_embd_head_k, 64);
	assert_int_equal(hp.n_ff, 5632);
	assert_int_equal(hp.n_ff_l[0], 5632);
	assert_int_equal(hp.n_rot, 32);
	assert_float_equal(hp.rope_freq_base, 500000.0f, 0);
	assert_float_equal(hp.rope_freq_base_swa, 10000.0f, 0);
	assert_int_equal(hp.rope_scaling, TERN_ROPE_SCALING_YARN);
	assert_float_equal(hp.rope_scaling_factor, 4.0f, 0);
	assert_float_equal(hp.rope_attn_factor, 1.25f, 0);
	assert_int_equal(hp.n_ctx_orig, 1024);
	assert_int_equal(hp.n_embd_head_k_mla, 192);
	assert_int_equal(hp.n_embd_head_v_mla, 128);
	assert_int_equal(hp.n_lora_q, 1536);
	assert_int_equal(hp.n_lora_kv, 512);
	assert_int_equal(hp.n_layer_dense_lead, 1);
	assert_float_equal(hp.rope_yarn_log_mul, 0.0707f, 0);
	assert_float_equal(hp.norm_rms_eps, 1e-5f, 1e-12);
	assert_int_equal(hp.n_swa, 512);
	assert_int_equal(hp.n_expert, 8);
	assert_int_equal(hp.n_expert_used, 2);
	assert_int_equal(hp.n_ff_exp, 1408);
	assert_int_equal(hp.n_expert_shared, 1);
	assert_int_equal(hp.n_ff_shexp, 2816);
	assert_float_equal(hp.expert_weights_scale, 2.5f, 0);
	assert_int_equal(hp.expert_gating_func, 2);
	assert_int_equal(hp.n_expert_group, 4);
	assert_int_equal(hp.n_expert_group_used, 2);
	assert_float_equal(hp.attn_softcap, 50.0f, 0);
	assert_float_equal(hp.final_softcap, 30.0f, 0);
	assert_int_equal(hp.n_vocab, 32000);
	/* every field of the table was found, none per layer */
	size_t nf;
	const struct tern_arch_field *f = tern_arch_llm_fields(&nf);
	for (size_t i = 0; i < nf; i++) /* all but the (non-RMS) layer norm epsilon */
		assert_int_equal(hp.present >> i & 1, strcmp(f[i].key, "attention.layer_norm_epsilon") != 0);
	assert_int_equal(hp.per_layer, 0);
}

static void test_defaults(void **state)
{
	(void)state;
	gguf_writer *w = base_llama(3);
	const char *toks[] = {"a", "b", "c", "d", "e"};
	gguf_writer_arr_str(w, "tokenizer.ggml.tokens", toks, 5);
	tern_err e = {0};
	if (load(w, &e))
		fail_msg("%s", e.msg);
	/* llama.cpp's defaults */
	assert_int_equal(hp.n_vocab, 5);              /* the token list */
	assert_int_equal(hp.n_head_kv, 32);           /* n_head: no grouping */
	assert_int_equal(hp.n_head_kv_l[2], 32);
	assert_int_equal(hp.n_embd_head_k, 2048 / 32);
	assert_int_equal(hp.n_embd_head_v, 2048 / 32);
	assert_int_equal(hp.n_rot, 64);               /* the whole head */
	assert_float_equal(hp.rope_freq_base, 10000.0f, 0);
	assert_float_equal(hp.rope_scaling_factor, 1.0f, 0);
	assert_float_equal(hp.rope_attn_factor, 1.0f, 0);
	assert_int_equal(hp.rope_scaling, TERN_ROPE_SCALING_NONE);
	assert_int_equal(hp.n_ctx_orig, 4096);
	assert_int_equal(hp.n_expert, 0);
	assert_int_equal(hp.n_swa, 0);
	size_t nf;
	const struct tern_arch_field *f = tern_arch_llm_fields(&nf);
	for (size_t i = 0; i < nf; i++) {
		bool want = strcmp(f[i].key, "context_length") == 0 || strcmp(f[i].key, "embedding_length") == 0 ||
			    strcmp(f[i].key, "block_count") == 0 || strcmp(f[i].key, "attention.head_count") == 0;
		assert_int_equal(hp.present >> i & 1, want);
	}
}

static void test_per_layer(void **state)
{
	(void)state;
	gguf_writer *w = base_llama(3);
	gguf_writer_u32(w, "llama.vocab_size", 100);
	uint32_t kv[3] = {8, 4, 0}; /* 0: a layer without attention (as in hybrid models) */
	gguf_writer_arr(w, "llama.attention.head_count_kv", GGUF_T_U32, kv, 3);
	int32_t ff[3] = {1000, 3000, 2000};
	gguf_writer_arr(w, "llama.feed_forward_length", GGUF_T_I32, ff, 3);
	tern_err e = {0};
	if (load(w, &e))
		fail_msg("%s", e.msg);
	assert_int_equal(hp.n_head_kv, 8); /* the largest */
	assert_int_equal(hp.n_head_kv_l[0], 8);
	assert_int_equal(hp.n_head_kv_l[1], 4);
	assert_int_equal(hp.n_head_kv_l[2], 0);
	assert_int_equal(hp.n_ff, 3000);
	assert_int_equal(hp.n_ff_l[2], 2000);
	assert_int_equal(hp.n_head_l[1], 32); /* a scalar applies to every layer */
	size_t nf;
	const struct tern_arch_field *f = tern_arch_llm_fields(&nf);
	for (size_t i = 0; i < nf; i++)
		assert_int_equal(hp.per_layer >> i & 1, strcmp(f[i].key, "attention.head_count_kv") == 0 ||
								 strcmp(f[i].key, "feed_forward_length") == 0);

	/* an array of the wrong length */
	w = base_llama(3);
	gguf_writer_arr(w, "llama.feed_forward_length", GGUF_T_I32, ff, 2);
	assert_int_equal(load(w, &e), TERN_EFORMAT);
	assert_non_null(strstr(e.msg, "llama.feed_forward_length"));
	assert_non_null(strstr(e.msg, "2 values for 3 layers"));
	/* an array of floats */
	w = base_llama(2);
	float fl[2] = {1, 2};
	gguf_writer_arr(w, "llama.attention.head_count_kv", GGUF_T_F32, fl, 2);
	assert_int_equal(load(w, &e), TERN_ETYPE);
}

static void test_bad_types(void **state)
{
	(void)state;
	tern_err e = {0};
	gguf_writer *w = base_llama(2);
	gguf_writer_str(w, "llama.rope.dimension_count", "64");
	assert_int_equal(load(w, &e), TERN_ETYPE);
	assert_non_null(strstr(e.msg, "'llama.rope.dimension_count'"));

	w = base_llama(2);
	gguf_writer_i32(w, "llama.expert_count", -1);
	assert_int_equal(load(w, &e), TERN_ERANGE);
	assert_non_null(strstr(e.msg, "llama.expert_count"));

	w = base_llama(2);
	gguf_writer_u64(w, "llama.attention.sliding_window", 1ull << 32);
	assert_int_equal(load(w, &e), TERN_ERANGE);

	w = base_llama(2);
	gguf_writer_u32(w, "llama.rope.freq_base", 10000); /* a float key given as an integer */
	assert_int_equal(load(w, &e), TERN_ETYPE);

	w = base_llama(2);
	gguf_writer_str(w, "llama.rope.scaling.type", "warp");
	assert_int_equal(load(w, &e), TERN_EUNSUPPORTED);
	assert_non_null(strstr(e.msg, "warp"));

	w = base_llama(600);
	assert_int_equal(load(w, &e), TERN_ERANGE);
	assert_non_null(strstr(e.msg, "600 layers"));

	w = gguf_writer_new();
	gguf_writer_u32(w, "llama.context_length", 1);
	assert_int_equal(load(w, &e), TERN_ENOTFOUND);
}

/* Validation: each inconsistency is refused with the key named. */
static void expect_invalid(gguf_writer *w, const char *needle)
{
	tern_err e = {0};
	const char *toks[] = {"a", "b"};
	gguf_writer_arr_str(w, "tokenizer.ggml.tokens", toks, 2);
	int rc = load(w, &e);
	if (rc != TERN_EFORMAT || !strstr(e.msg, needle))
		fail_msg("want TERN_EFORMAT with '%s', got %d: %s", needle, rc, e.msg);
}

static void test_validation(void **state)
{
	(void)state;
	gguf_writer *w = gguf_writer_new();
	gguf_writer_str(w, "general.architecture", "qwen2");
	gguf_writer_u32(w, "qwen2.embedding_length", 64);
	gguf_writer_u32(w, "qwen2.block_count", 1);
	expect_invalid(w, "missing key 'qwen2.context_length'");

	w = base_llama(2);
	gguf_writer_u32(w, "llama.attention.head_count_kv", 5);
	expect_invalid(w, "5 kv heads do not divide 32 heads");

	w = base_llama(2);
	gguf_writer_u32(w, "llama.attention.head_count_kv", 64);
	expect_invalid(w, "head_count_kv");

	w = base_llama(2);
	gguf_writer_u32(w, "llama.rope.dimension_count", 65);
	expect_invalid(w, "rope.dimension_count");

	w = base_llama(2);
	gguf_writer_u32(w, "llama.rope.dimension_count", 128); /* longer than the head (64) */
	expect_invalid(w, "head size 64");

	w = base_llama(2);
	gguf_writer_u32(w, "llama.expert_count", 4);
	gguf_writer_u32(w, "llama.expert_used_count", 5);
	expect_invalid(w, "expert_used_count");

	w = base_llama(2);
	gguf_writer_u32(w, "llama.expert_count", 4);
	expect_invalid(w, "expert_used_count' = 0 with 4 experts");

	w = base_llama(2);
	gguf_writer_f32(w, "llama.rope.freq_base", 0.0f);
	expect_invalid(w, "rope.freq_base");

	w = base_llama(2);
	gguf_writer_f32(w, "llama.rope.scaling.attn_factor", -1.0f);
	expect_invalid(w, "'llama.rope.scaling.attn_factor' = -1: must be positive");

	w = gguf_writer_new();
	gguf_writer_str(w, "general.architecture", "llama");
	gguf_writer_u32(w, "llama.context_length", 16);
	gguf_writer_u32(w, "llama.embedding_length", 100);
	gguf_writer_u32(w, "llama.block_count", 1);
	gguf_writer_u32(w, "llama.attention.head_count", 3);
	expect_invalid(w, "not a multiple of 3 heads");

	w = base_llama(2); /* no vocabulary at all */
	tern_err e = {0};
	assert_int_equal(load(w, &e), TERN_EFORMAT);
	assert_non_null(strstr(e.msg, "no vocabulary size"));
}

/* A real file: the llama-spm vocabulary file keeps its model's header. */
static void test_shared_gguf(void **state)
{
	(void)state;
	tern_mf *m = NULL;
	tern_err e = {0};
	if (tern_mf_open(&m, data_path("vocab/ggml-vocab-llama-spm.gguf"), NULL, &e))
		fail_msg("%s", e.msg);
	char name[TERN_ARCH_NAME_MAX];
	assert_int_equal(tern_arch_family(m, name, sizeof name), TERN_ARCH_LLM);
	assert_string_equal(name, "llama");
	if (tern_arch_llm_load(m, &hp, &e))
		fail_msg("%s", e.msg);
	/* as `gguf-dump` lists the file: Llama 2 7B */
	assert_int_equal(hp.n_ctx_train, 4096);
	assert_int_equal(hp.n_embd, 4096);
	assert_int_equal(hp.n_layer, 32);
	assert_int_equal(hp.n_ff, 11008);
	assert_int_equal(hp.n_head, 32);
	assert_int_equal(hp.n_head_kv, 32);
	assert_int_equal(hp.n_rot, 128);
	assert_int_equal(hp.n_embd_head_k, 128);
	assert_int_equal(hp.n_vocab, 32000);
	assert_float_equal(hp.norm_rms_eps, 1e-5f, 1e-12);
	assert_float_equal(hp.rope_freq_base, 10000.0f, 0);
	struct tern_arch_whisper wh;
	assert_int_equal(tern_arch_whisper_read(m, &wh, &e), TERN_ENOTFOUND);
	tern_mf_close(m);
}

static tern_mf *open_data(const char *rel)
{
	tern_mf *m = NULL;
	tern_err e = {0};
	if (tern_mf_open(&m, data_path(rel), NULL, &e))
		fail_msg("%s: %s", rel, e.msg);
	return m;
}

static void test_whisper(void **state)
{
	(void)state;
	struct tern_arch_whisper w;
	tern_err e = {0};
	tern_mf *m = open_data("models/ggml-tiny.en.bin");
	char name[TERN_ARCH_NAME_MAX];
	assert_int_equal(tern_arch_family(m, name, sizeof name), TERN_ARCH_WHISPER);
	assert_string_equal(name, "whisper");
	if (tern_arch_whisper_load(m, &w, &e))
		fail_msg("%s", e.msg);
	/* tests/data/legacy/whisper-vocab-only-tiny.en.ref (same header) */
	assert_int_equal(w.n_vocab, 51864);
	assert_int_equal(w.n_vocab_stored, 50257);
	assert_int_equal(w.n_audio_ctx, 1500);
	assert_int_equal(w.n_audio_state, 384);
	assert_int_equal(w.n_audio_head, 6);
	assert_int_equal(w.n_audio_layer, 4);
	assert_int_equal(w.n_text_ctx, 448);
	assert_int_equal(w.n_text_layer, 4);
	assert_int_equal(w.n_mels, 80);
	assert_int_equal(w.ftype, 1);
	assert_false(w.multilingual);
	assert_int_equal(w.n_languages, 0);
	/* the vocabulary size is the token embedding's row count */
	const struct tern_tensor_view *emb = tern_mf_find_tensor(m, "decoder.token_embedding.weight");
	assert_non_null(emb);
	assert_int_equal(emb->ne[1], w.n_vocab);
	assert_int_equal(emb->ne[0], w.n_text_state);
	tern_mf_close(m);

	m = open_data("models/whisper-vocab-only-tiny.bin");
	if (tern_arch_whisper_load(m, &w, &e))
		fail_msg("%s", e.msg);
	assert_int_equal(w.n_vocab, 51865);
	assert_true(w.multilingual);
	assert_int_equal(w.n_languages, 99); /* Whisper's 99 languages */
	tern_mf_close(m);

	/* validation catches what a loader could not use */
	struct tern_arch_whisper bad = w;
	bad.n_audio_head = 5;
	assert_int_equal(tern_arch_whisper_validate(&bad, &e), TERN_EFORMAT);
	assert_non_null(strstr(e.msg, "n_audio_head = 5"));
	bad = w;
	bad.n_vocab = 50257;
	assert_int_equal(tern_arch_whisper_validate(&bad, &e), TERN_EFORMAT);
	bad = w;
	bad.present &= ~1ull;
	assert_int_equal(tern_arch_whisper_validate(&bad, &e), TERN_EFORMAT);
	assert_non_null(strstr(e.msg, "whisper.n_vocab"));
}

static void test_silero(void **state)
{
	(void)state;
	struct tern_arch_silero s;
	tern_err e = {0};
	tern_mf *m = open_data("models/silero-v6.2.0-ggml.bin");
	char name[TERN_ARCH_NAME_MAX];
	assert_int_equal(tern_arch_family(m, name, sizeof name), TERN_ARCH_SILERO);
	if (tern_arch_silero_load(m, &s, &e))
		fail_msg("%s", e.msg);
	/* tests/data/legacy/silero-v6.2.0-ggml.ref */
	assert_int_equal(s.version_major, 6);
	assert_int_equal(s.version_minor, 2);
	assert_int_equal(s.n_window, 512);
	assert_int_equal(s.n_context, 64);
	assert_int_equal(s.n_encoder_layers, 4);
	const uint32_t want[4][3] = {{129, 128, 3}, {128, 64, 3}, {64, 64, 3}, {64, 128, 3}};
	for (int l = 0; l < 4; l++) {
		assert_int_equal(s.encoder[l].in_channels, want[l][0]);
		assert_int_equal(s.encoder[l].out_channels, want[l][1]);
		assert_int_equal(s.encoder[l].kernel_size, want[l][2]);
	}
	assert_int_equal(s.lstm_input_size, 128);
	assert_int_equal(s.lstm_hidden_size, 128);
	assert_int_equal(s.final_conv_in, 128);
	assert_int_equal(s.final_conv_out, 1);
	struct tern_arch_llm *none = &hp;
	assert_int_equal(tern_arch_llm_read(m, none, &e), TERN_ENOTFOUND);
	tern_mf_close(m);

	struct tern_arch_silero bad = s;
	bad.encoder[2].in_channels = 65;
	assert_int_equal(tern_arch_silero_validate(&bad, &e), TERN_EFORMAT);
	assert_non_null(strstr(e.msg, "silero.encoder.2.in_channels = 65"));
	bad = s;
	bad.lstm_input_size = 64;
	assert_int_equal(tern_arch_silero_validate(&bad, &e), TERN_EFORMAT);
	bad = s;
	bad.final_conv_in = 1;
	assert_int_equal(tern_arch_silero_validate(&bad, &e), TERN_EFORMAT);
}

/* The field tables are what inspect prints: unique keys and JSON names,
 * offsets inside their structs. */
static void test_tables(void **state)
{
	(void)state;
	size_t n[3];
	const struct tern_arch_field *f[3] = {tern_arch_llm_fields(&n[0]), tern_arch_whisper_fields(&n[1]),
					      tern_arch_silero_fields(&n[2])};
	size_t size[3] = {sizeof(struct tern_arch_llm), sizeof(struct tern_arch_whisper),
			  sizeof(struct tern_arch_silero)};
	for (int k = 0; k < 3; k++) {
		assert_true(n[k] > 0 && n[k] <= 64);
		for (size_t i = 0; i < n[k]; i++) {
			assert_true(f[k][i].offset + 4 <= size[k]);
			for (size_t j = i + 1; j < n[k]; j++) {
				assert_true(strcmp(f[k][i].key, f[k][j].key) != 0);
				assert_true(strcmp(f[k][i].json, f[k][j].json) != 0);
			}
		}
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_key),
		cmocka_unit_test(test_defaults),
		cmocka_unit_test(test_per_layer),
		cmocka_unit_test(test_bad_types),
		cmocka_unit_test(test_validation),
		cmocka_unit_test(test_shared_gguf),
		cmocka_unit_test(test_whisper),
		cmocka_unit_test(test_silero),
		cmocka_unit_test(test_tables),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
