/* test_whisper_model.c - the Whisper model loader (lib/speech/whisper.h) on
 * the real tiny.en file (hyperparameters and tensors against what `inspect`
 * and whisper.cpp's loader report for it: 4 + 4 layers of width 384, 6
 * heads, 167 tensors; special tokens at whisper.cpp's English-only ids) and
 * on copies of it with one thing broken: each must be refused with a
 * message that names what is wrong. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/speech/whisper.h"
#include "quant/quant.h"
#include "tests/testutil.h"

static char *model_bytes(const char *name, size_t *size)
{
	char path[512];
	snprintf(path, sizeof(path), "%s/models/%s", test_data_dir(), name);
	char *buf = test_read_file(path, size);
	assert_non_null(buf);
	return buf;
}

static void test_tiny_en(void **state)
{
	(void)state;
	char path[512];
	snprintf(path, sizeof(path), "%s/models/ggml-tiny.en.bin", test_data_dir());
	struct whisper_model *m = NULL;
	tern_err e = {0};
	int rc = whisper_model_load(&m, path, &e);
	if (rc)
		fail_msg("%s", e.msg);
	const struct whisper_hparams *hp = &m->hp;
	assert_int_equal(hp->n_vocab, 51864);
	assert_int_equal(hp->n_audio_ctx, 1500);
	assert_int_equal(hp->n_audio_state, 384);
	assert_int_equal(hp->n_audio_head, 6);
	assert_int_equal(hp->n_audio_layer, 4);
	assert_int_equal(hp->n_text_ctx, 448);
	assert_int_equal(hp->n_text_layer, 4);
	assert_int_equal(hp->n_mels, 80);
	assert_int_equal(hp->ftype, 1);
	assert_string_equal(whisper_model_size_name(m), "tiny.en");
	/* whisper.cpp's ids for an English-only vocabulary */
	assert_false(m->ids.multilingual);
	assert_int_equal(m->ids.eot, 50256);
	assert_int_equal(m->ids.sot, 50257);
	assert_int_equal(m->ids.translate, 50357);
	assert_int_equal(m->ids.transcribe, 50358);
	assert_int_equal(m->ids.not_, 50362);
	assert_int_equal(m->ids.beg, 50363);
	assert_int_equal(m->n_mel_filters, 80);
	assert_int_equal(m->n_fft_bins, 201);
	assert_int_equal(m->conv1_w->type, QT_F16);
	assert_int_equal(m->conv1_w->ne[1], 80);
	assert_int_equal(m->d_te->ne[1], 51864);
	assert_true(tern_str_eq(m->dec[3].xattn_ln_b->name, "decoder.blocks.3.cross_attn_ln.bias"));
	assert_true(tern_str_eq(m->enc[2].mlp2_w->name, "encoder.blocks.2.mlp.2.weight"));
	assert_int_equal(m->enc[2].mlp2_w->ne[0], 1536);
	whisper_model_free(m);
}

/* the vocab-only files have the hyperparameters but no tensors */
static void test_vocab_only(void **state)
{
	(void)state;
	size_t size = 0;
	char *buf = model_bytes("whisper-vocab-only-tiny.bin", &size);
	struct whisper_model *m = NULL;
	tern_err e = {0};
	assert_int_equal(whisper_model_load_mem(&m, buf, size, &e), TERN_EFORMAT);
	assert_null(m);
	assert_string_equal(e.msg, "tensor 'encoder.positional_embedding' is missing");
	free(buf);
	buf = model_bytes("silero-v6.2.0-ggml.bin", &size);
	assert_int_equal(whisper_model_load_mem(&m, buf, size, &e), TERN_EFORMAT);
	assert_string_equal(e.msg, "a silero file, not a Whisper model");
	free(buf);
}

static void put32(char *p, int32_t v)
{
	memcpy(p, &v, 4);
}

/* Patch the real file and expect a refusal whose message contains want. */
static void expect_refused(void (*patch)(char *buf, size_t size), const char *want)
{
	size_t size = 0;
	char *buf = model_bytes("ggml-tiny.en.bin", &size);
	patch(buf, size);
	struct whisper_model *m = NULL;
	tern_err e = {0};
	int rc = whisper_model_load_mem(&m, buf, size, &e);
	if (rc == 0 || !strstr(e.msg, want))
		fail_msg("rc %d, message '%s', expected '%s'", rc, e.msg, want);
	assert_null(m);
	free(buf);
}

/* header: magic, then n_vocab, n_audio_ctx, n_audio_state, n_audio_head,
 * n_audio_layer, n_text_ctx, n_text_state, n_text_head, n_text_layer,
 * n_mels, ftype as int32 */
static void wider(char *b, size_t n) { (void)n; put32(b + 12, 768); put32(b + 28, 768); }
static void narrower_text(char *b, size_t n) { (void)n; put32(b + 28, 256); }
static void odd_heads(char *b, size_t n) { (void)n; put32(b + 16, 5); }
static void more_layers(char *b, size_t n) { (void)n; put32(b + 20, 5); }
static void huge_ctx(char *b, size_t n) { (void)n; put32(b + 8, 1 << 30); }
static void vocab(char *b, size_t n) { (void)n; put32(b + 4, 50000); }
static void mels(char *b, size_t n) { (void)n; put32(b + 40, 100); }

static char *find(char *b, size_t n, const char *s)
{
	size_t k = strlen(s);
	for (size_t i = 0; i + k <= n; i++)
		if (!memcmp(b + i, s, k))
			return b + i;
	fail_msg("'%s' not in the file", s);
	return NULL;
}

static void renamed(char *b, size_t n) { find(b, n, "encoder.ln_post.bias")[19] = 'z'; }
static void renamed_dec(char *b, size_t n) { find(b, n, "decoder.blocks.3.cross_attn.key.weight")[20] = 'x'; }

static void test_refused(void **state)
{
	(void)state;
	expect_refused(wider, "tensor 'encoder.positional_embedding' has shape [384, 1500, 1], expected [768, 1500, 1]");
	expect_refused(narrower_text, "n_text_state 256 differs from n_audio_state 384");
	expect_refused(odd_heads, "width 384 is not a multiple of 5 heads");
	expect_refused(more_layers, "tensor 'encoder.blocks.4.attn.query.weight' is missing");
	expect_refused(huge_ctx, "hyperparameter n_audio_ctx = 1073741824 is outside 1..1500");
	expect_refused(vocab, "hyperparameter n_vocab = 50000 is outside");
	expect_refused(mels, "n_mels");
	expect_refused(renamed, "tensor 'encoder.ln_post.bias' is missing");
	expect_refused(renamed_dec, "tensor 'decoder.blocks.3.cross_attn.key.weight' is missing");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_tiny_en),
		cmocka_unit_test(test_vocab_only),
		cmocka_unit_test(test_refused),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
