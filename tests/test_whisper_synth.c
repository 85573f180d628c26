/* test_whisper_synth.c - Whisper files this suite does not ship, made here:
 *   - a shrunken large-v3 (128 mel bins, the 51,866-token vocabulary whose
 *     extra language "yue" moves every special token up by one from the
 *     multilingual layout), written in whisper.cpp's format with random
 *     weights: the loader's hyperparameters and special ids (those of
 *     large-v3's tokenizer: <|startoftranscript|> 50258, <|translate|> 50359,
 *     <|notimestamps|> 50364, <|0.00|> 50365), the encoder and decoder on it
 *     in both numerics, and the same file quantized (q8_0, q5_1, q4_0 and,
 *     at width 256, the K-quants) against its f16 logits; a tensor missing
 *     from it is named;
 *   - tiny.en quantized as whisper.cpp's quantizer does (every 2-D tensor
 *     but the convolution biases and the positional embeddings, quant/'s
 *     encoders, ftype + 1000 * the quantization version 2): the bytes of
 *     whisper-quantize's q5_0 and q8_0 files (their FNV-1a hashes), and
 *     greedy decoding of jfk.wav gives whisper-cli's transcript of them
 *     (tests/data/whisper/jfk.q5_0.greedy.out, jfk.q8_0.greedy.out). */
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
#include "lib/speech/mel.h"
#include "lib/speech/whisper.h"
#include "lib/speech/whisper_full.h"
#include "quant/quant.h"
#include "tests/testutil.h"
#include "tests/whisper_jfk.h"

/* ---- a ggml Whisper file in memory ------------------------------------- */

struct wbuf {
	char *p;
	size_t n, cap;
};

static void put(struct wbuf *b, const void *src, size_t n)
{
	if (b->n + n > b->cap) {
		b->cap = (b->n + n) * 2;
		b->p = realloc(b->p, b->cap);
		assert_non_null(b->p);
	}
	memcpy(b->p + b->n, src, n);
	b->n += n;
}

static void put_i32(struct wbuf *b, int32_t v) { put(b, &v, 4); }

static uint64_t rng_state;
static float frand(void) /* uniform in [-1, 1) */
{
	rng_state = rng_state * 6364136223846793005ULL + 1442695040888963407ULL;
	return (float)((rng_state >> 40) & 0xffffff) / (float)(1 << 23) - 1.0f;
}

/* tensor name of ne[0] x ne[1] x ne[2] (n_dims dims): type wt from the
 * f32 values x (f32, f16 or a quantized type) */
static void put_tensor(struct wbuf *b, const char *name, uint32_t wt, int nd, const int64_t *ne, const float *x)
{
	int64_t rows = 1;
	for (int i = 1; i < nd; i++)
		rows *= ne[i];
	size_t rs = quant_row_size(wt, (uint64_t)ne[0], NULL);
	char *data = malloc(rs * (size_t)rows);
	assert_non_null(data);
	for (int64_t r = 0; r < rows; r++)
		assert_int_equal(quant_quantize_row(wt, x + r * ne[0], data + (size_t)r * rs, (uint64_t)ne[0]), 0);
	put_i32(b, nd);
	put_i32(b, (int32_t)strlen(name));
	put_i32(b, (int32_t)wt);
	for (int i = 0; i < nd; i++)
		put_i32(b, (int32_t)ne[i]);
	put(b, name, strlen(name));
	put(b, data, rs * (size_t)rows);
	free(data);
}

struct synth {
	int32_t n_vocab, n_ctx, n_state, n_head, n_text_ctx, n_mels;
	uint32_t wt;	  /* the matrices' type */
	const char *skip; /* a tensor left out, or NULL */
};

/* random values scaled for a sane forward pass: kind 'w' a matrix of
 * fan-in ne0, 'g' a norm's gain (about 1), 'b' a bias (small) */
static float *values(int64_t n, int64_t fan_in, char kind)
{
	float *x = malloc(sizeof(float) * (size_t)n);
	assert_non_null(x);
	float a = kind == 'w' ? 1.0f / sqrtf((float)fan_in) : 0.1f;
	for (int64_t i = 0; i < n; i++)
		x[i] = (kind == 'g' ? 1.0f : 0.0f) + a * frand();
	return x;
}

static void tensor(struct wbuf *b, const struct synth *s, const char *name, uint32_t wt, int nd, int64_t a0,
		   int64_t a1, int64_t a2, char kind)
{
	if (s->skip && !strcmp(name, s->skip))
		return;
	int64_t ne[3] = {a0, a1, a2};
	float *x = values(a0 * a1 * a2, a0, kind);
	put_tensor(b, name, wt, nd, ne, x);
	free(x);
}

static void block(struct wbuf *b, const struct synth *s, const char *pre, bool cross)
{
	const int64_t n = s->n_state;
	char name[128];
	const char *att[2] = {"attn", "cross_attn"};
	for (int k = 0; k < (cross ? 2 : 1); k++) {
#define T(suffix, wt, nd, a0, a1, kind)                                              \
	do {                                                                         \
		snprintf(name, sizeof(name), "%s.%s.%s", pre, att[k], suffix);       \
		tensor(b, s, name, wt, nd, a0, a1, 1, kind);                         \
	} while (0)
		T("query.weight", s->wt, 2, n, n, 'w');
		T("query.bias", QT_F32, 1, n, 1, 'b');
		T("key.weight", s->wt, 2, n, n, 'w');
		T("value.weight", s->wt, 2, n, n, 'w');
		T("value.bias", QT_F32, 1, n, 1, 'b');
		T("out.weight", s->wt, 2, n, n, 'w');
		T("out.bias", QT_F32, 1, n, 1, 'b');
#undef T
		snprintf(name, sizeof(name), "%s.%s_ln.weight", pre, att[k]);
		tensor(b, s, name, QT_F32, 1, n, 1, 1, 'g');
		snprintf(name, sizeof(name), "%s.%s_ln.bias", pre, att[k]);
		tensor(b, s, name, QT_F32, 1, n, 1, 1, 'b');
	}
	const struct {
		const char *suffix;
		uint32_t wt;
		int nd;
		int64_t a0, a1;
		char kind;
	} mlp[] = {{"mlp.0.weight", s->wt, 2, n, 4 * n, 'w'}, {"mlp.0.bias", QT_F32, 1, 4 * n, 1, 'b'},
		   {"mlp.2.weight", s->wt, 2, 4 * n, n, 'w'},	{"mlp.2.bias", QT_F32, 1, n, 1, 'b'},
		   {"mlp_ln.weight", QT_F32, 1, n, 1, 'g'},	{"mlp_ln.bias", QT_F32, 1, n, 1, 'b'}};
	for (size_t i = 0; i < sizeof(mlp) / sizeof(mlp[0]); i++) {
		snprintf(name, sizeof(name), "%s.%s", pre, mlp[i].suffix);
		tensor(b, s, name, mlp[i].wt, mlp[i].nd, mlp[i].a0, mlp[i].a1, 1, mlp[i].kind);
	}
}

/* one encoder and one decoder layer of one head of 64 (n_state 64) or
 * more heads of 64 */
static char *synth_file(const struct synth *s, size_t *size)
{
	struct wbuf b = {0};
	rng_state = 12345;
	const int32_t hp[11] = {s->n_vocab, s->n_ctx, s->n_state, s->n_head, 1, s->n_text_ctx,
				s->n_state, s->n_head, 1,	s->n_mels, s->wt == QT_F16 ? 1 : 2000 + 7};
	put_i32(&b, 0x67676d6c);
	put(&b, hp, sizeof(hp));
	put_i32(&b, s->n_mels);
	put_i32(&b, 201);
	for (int i = 0; i < s->n_mels * 201; i++) {
		float f = i % 201 == 3 * (i / 201) % 201 ? 0.02f : 0.0f; /* one bin per filter */
		put(&b, &f, 4);
	}
	/* the text tokens (whisper.cpp adds the special ones itself) */
	put_i32(&b, 50257);
	for (int i = 0; i < 50257; i++) {
		char t[8];
		int n = snprintf(t, sizeof(t), "%c%c", 'a' + i % 26, 'a' + i / 26 % 26);
		put_i32(&b, n);
		put(&b, t, (size_t)n);
	}
	const int64_t n = s->n_state;
	tensor(&b, s, "encoder.positional_embedding", QT_F32, 2, n, s->n_ctx, 1, 'b');
	tensor(&b, s, "encoder.conv1.weight", QT_F16, 3, 3, s->n_mels, n, 'w');
	tensor(&b, s, "encoder.conv1.bias", QT_F32, 2, 1, n, 1, 'b');
	tensor(&b, s, "encoder.conv2.weight", QT_F16, 3, 3, n, n, 'w');
	tensor(&b, s, "encoder.conv2.bias", QT_F32, 2, 1, n, 1, 'b');
	block(&b, s, "encoder.blocks.0", false);
	tensor(&b, s, "encoder.ln_post.weight", QT_F32, 1, n, 1, 1, 'g');
	tensor(&b, s, "encoder.ln_post.bias", QT_F32, 1, n, 1, 1, 'b');
	tensor(&b, s, "decoder.positional_embedding", QT_F32, 2, n, s->n_text_ctx, 1, 'b');
	tensor(&b, s, "decoder.token_embedding.weight", s->wt, 2, n, s->n_vocab, 1, 'w');
	block(&b, s, "decoder.blocks.0", true);
	tensor(&b, s, "decoder.ln.weight", QT_F32, 1, n, 1, 1, 'g');
	tensor(&b, s, "decoder.ln.bias", QT_F32, 1, n, 1, 1, 'b');
	*size = b.n;
	return b.p;
}

/* ---- running a model ------------------------------------------------------ */

/* the logits after the prompt sot, <|en|>, transcribe, notimestamps on
 * the window of the spectrogram mel[n_mels][2 n_ctx] */
static float *run_logits(struct whisper_model *m, int numerics, const float *mel)
{
	tern_err e = {0};
	m->numerics = numerics;
	struct tern_backend *be = NULL;
	struct cpu_backend_opts o = {.n_threads = 2, .max_tokens = 64};
	assert_int_equal(cpu_backend_new(&be, &o, &e), 0);
	struct whisper_encoder *enc = NULL;
	struct whisper_decoder *dec = NULL;
	if (whisper_encoder_new(&enc, m, be, &e) ||
	    whisper_encode(enc, mel, (size_t)(2 * m->hp.n_audio_ctx), 0, &e) || whisper_decoder_new(&dec, m, be, &e) ||
	    whisper_decoder_set_audio(dec, whisper_encoder_output(enc), &e))
		fail_msg("%s", e.msg);
	const int32_t prompt[4] = {m->ids.sot, m->ids.lang0, m->ids.transcribe, m->ids.not_};
	float *l = malloc(sizeof(float) * (size_t)m->hp.n_vocab);
	assert_int_equal(whisper_decode(dec, prompt, 4, 0, l, &e), 0);
	/* and one more token through the cache */
	const int32_t next = 1234;
	assert_int_equal(whisper_decode(dec, &next, 1, 4, l, &e), 0);
	for (int i = 0; i < m->hp.n_vocab; i++)
		assert_true(isfinite(l[i]));
	whisper_decoder_free(dec);
	whisper_encoder_free(enc);
	tern_backend_free(be);
	return l;
}

static double nmse(const float *a, const float *b, int n)
{
	double num = 0, den = 0;
	for (int i = 0; i < n; i++) {
		num += ((double)a[i] - b[i]) * ((double)a[i] - b[i]);
		den += (double)b[i] * b[i];
	}
	return num / den;
}

static void test_large_v3_layout(void **state)
{
	(void)state;
	/* 256 audio positions: whisper.cpp pads its caches to a multiple of
	 * 256 with zero keys, which with fewer would weigh in these random
	 * weights' flat softmax (not in a real model's: 1500 + 36) */
	struct synth s = {.n_vocab = 51866, .n_ctx = 256, .n_state = 64, .n_head = 1, .n_text_ctx = 8, .n_mels = 128,
			  .wt = QT_F16};
	size_t size = 0;
	char *buf = synth_file(&s, &size);
	struct whisper_model *m = NULL;
	tern_err e = {0};
	if (whisper_model_load_mem(&m, buf, size, &e))
		fail_msg("%s", e.msg);
	assert_int_equal(m->hp.n_mels, 128);
	assert_int_equal(m->n_mel_filters, 128);
	assert_true(m->ids.multilingual);
	assert_int_equal(m->ids.n_langs, 100);
	/* large-v3's tokenizer (tokenizer.json of openai/whisper-large-v3) */
	assert_int_equal(m->ids.eot, 50257);
	assert_int_equal(m->ids.sot, 50258);
	assert_int_equal(m->ids.lang0, 50259);
	assert_int_equal(m->ids.translate, 50359);
	assert_int_equal(m->ids.transcribe, 50360);
	assert_int_equal(m->ids.solm, 50361);
	assert_int_equal(m->ids.prev, 50362);
	assert_int_equal(m->ids.nosp, 50363);
	assert_int_equal(m->ids.not_, 50364);
	assert_int_equal(m->ids.beg, 50365);

	float *mel = malloc(sizeof(float) * 128 * 512);
	for (int i = 0; i < 128 * 512; i++)
		mel[i] = 0.5f * frand();
	float *lg = run_logits(m, WHISPER_NUMERICS_GGML, mel), *lf = run_logits(m, WHISPER_NUMERICS_F32, mel);
	double d = nmse(lg, lf, s.n_vocab);
	print_message("large-v3 shape: ggml vs f32 numerics %.3g\n", d);
	assert_true(d > 0 && d < 1e-4); /* f16 roundings, and no more (measured 1.8e-6) */

	/* quantized copies against their f16 file (random weights have no
	 * structure: the errors are the types' own); the K-quants need rows
	 * of 256 */
	const struct {
		uint32_t t;
		int n_state;
		double max;
	} qs[] = {{QT_F16, 64, 0},  {QT_Q8_0, 64, 1e-3},  {QT_Q5_1, 64, 1e-2}, {QT_Q4_0, 64, 5e-2},
		  {QT_F16, 256, 0}, {QT_Q6_K, 256, 1e-2}, {QT_Q4_K, 256, 5e-2}};
	float *ref = NULL;
	for (size_t i = 0; i < sizeof(qs) / sizeof(qs[0]); i++) {
		struct synth q = s;
		q.wt = qs[i].t;
		q.n_state = qs[i].n_state;
		q.n_head = qs[i].n_state / 64;
		size_t qsize = 0;
		char *qbuf = synth_file(&q, &qsize);
		struct whisper_model *qm = NULL;
		if (whisper_model_load_mem(&qm, qbuf, qsize, &e))
			fail_msg("%s: %s", quant_type_name(qs[i].t), e.msg);
		assert_int_equal(qm->d_te->type, qs[i].t);
		assert_int_equal(qm->dec[0].xv_w->type, qs[i].t);
		float *l = run_logits(qm, WHISPER_NUMERICS_GGML, mel);
		if (qs[i].t == QT_F16) {
			free(ref);
			ref = l;
		} else {
			double dq = nmse(l, ref, s.n_vocab);
			print_message("width %d, %s: %.3g from f16\n", qs[i].n_state, quant_type_name(qs[i].t), dq);
			assert_true(dq > 0 && dq < qs[i].max);
			free(l);
		}
		whisper_model_free(qm);
		free(qbuf);
	}
	free(ref);
	free(lg);
	free(lf);
	free(mel);
	whisper_model_free(m);

	/* a tensor left out is named */
	s.skip = "decoder.blocks.0.cross_attn_ln.bias";
	buf = (free(buf), synth_file(&s, &size));
	assert_int_equal(whisper_model_load_mem(&m, buf, size, &e), TERN_EFORMAT);
	assert_string_equal(e.msg, "tensor 'decoder.blocks.0.cross_attn_ln.bias' is missing");
	free(buf);
}

/* ---- tiny.en quantized as whisper.cpp's quantizer does ------------------- */

static int32_t rd32(const char *p)
{
	int32_t v;
	memcpy(&v, p, 4);
	return v;
}

/* src (a ggml Whisper file of f16 / f32 tensors) with its 2-D tensors
 * quantized to qt, whisper-quantize's way */
static char *quantize_file(const char *src, size_t size, uint32_t qt, int ftype, size_t *out_size)
{
	struct wbuf b = {0};
	size_t o = 4 + 44;
	const int32_t nm = rd32(src + o), nf = rd32(src + o + 4);
	o += 8 + 4 * (size_t)nm * (size_t)nf;
	const int32_t nv = rd32(src + o);
	o += 4;
	for (int32_t i = 0; i < nv; i++)
		o += 4 + (size_t)rd32(src + o);
	put(&b, src, o);
	const int32_t ft = 2000 + ftype; /* GGML_QNT_VERSION 2 */
	memcpy(b.p + 4 + 40, &ft, 4);
	static const char *const skip[] = {"encoder.conv1.bias", "encoder.conv2.bias", "encoder.positional_embedding",
					   "decoder.positional_embedding"};
	while (o < size) {
		const int32_t nd = rd32(src + o), nl = rd32(src + o + 4), tt = rd32(src + o + 8);
		int64_t ne[3] = {1, 1, 1}, cnt = 1;
		for (int i = 0; i < nd; i++)
			cnt *= ne[i] = rd32(src + o + 12 + 4 * (size_t)i);
		char name[128] = {0};
		memcpy(name, src + o + 12 + 4 * (size_t)nd, (size_t)nl);
		const char *data = src + o + 12 + 4 * (size_t)nd + (size_t)nl;
		const size_t bytes = (size_t)cnt * (tt == QT_F16 ? 2 : 4);
		bool q = nd == 2;
		for (size_t k = 0; k < sizeof(skip) / sizeof(skip[0]); k++)
			q = q && strcmp(name, skip[k]) != 0;
		if (q) {
			float *x = malloc(sizeof(float) * (size_t)cnt);
			assert_non_null(x);
			assert_int_equal(quant_dequantize_row((uint32_t)tt, data, x, (uint64_t)cnt), 0);
			put_tensor(&b, name, qt, nd, ne, x);
			free(x);
		} else {
			put(&b, src + o, 12 + 4 * (size_t)nd + (size_t)nl + bytes);
		}
		o += 12 + 4 * (size_t)nd + (size_t)nl + bytes;
	}
	*out_size = b.n;
	return b.p;
}

static uint64_t fnv1a(const char *p, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ULL;
	for (size_t i = 0; i < n; i++)
		h = (h ^ (unsigned char)p[i]) * 0x100000001b3ULL;
	return h;
}

/* whisper-cli's stdout for greedy decoding of jfk.wav with m */
static char *greedy_jfk(struct whisper_model *m)
{
	tern_err e = {0};
	struct jfk_run j;
	jfk_open(&j, m);
	struct whisper_full_params p = whisper_full_default_params();
	p.beam_size = 1;
	p.n_threads = 2;
	struct whisper_result r = {0};
	if (whisper_full_run(j.w, &p, &j.src, &r, NULL, NULL, &e))
		fail_msg("%s", e.msg);
	char *got = calloc(1, 4096);
	size_t len = (size_t)snprintf(got, 4096, "\n");
	for (int i = 0; i < r.n_seg; i++) {
		int64_t t[2] = {r.seg[i].t0 * 10, r.seg[i].t1 * 10};
		char ts[2][32];
		for (int k = 0; k < 2; k++)
			snprintf(ts[k], sizeof(ts[k]), "%02d:%02d:%02d.%03d", (int)(t[k] / 3600000), (int)(t[k] / 60000 % 60),
				 (int)(t[k] / 1000 % 60), (int)(t[k] % 1000));
		len += (size_t)snprintf(got + len, 4096 - len, "[%s --> %s]  %s\n", ts[0], ts[1], r.seg[i].text);
	}
	whisper_result_free(&r);
	jfk_close(&j);
	return got;
}

static void test_tiny_quantized(void **state)
{
	(void)state;
	char path[512];
	snprintf(path, sizeof(path), "%s/models/ggml-tiny.en.bin", test_data_dir());
	size_t size = 0;
	char *src = test_read_file(path, &size);
	assert_non_null(src);
	/* whisper-quantize ggml-tiny.en.bin OUT q5_0 / q8_0 (the build of
	 * tests/data/whisper/README.md): FNV-1a 64 of the files */
	const struct {
		uint32_t t;
		int ftype;
		uint64_t fnv;
		size_t size;
		const char *want;
	} qs[] = {{QT_Q5_0, 8, 0x9ec9566d27c38615ULL, 29889227, "jfk.q5_0.greedy.out"},
		  {QT_Q8_0, 7, 0xad9f63675f34103aULL, 43550795, "jfk.q8_0.greedy.out"}};
	for (size_t i = 0; i < sizeof(qs) / sizeof(qs[0]); i++) {
		size_t qsize = 0;
		char *q = quantize_file(src, size, qs[i].t, qs[i].ftype, &qsize);
		assert_int_equal(qsize, qs[i].size);
		assert_true(fnv1a(q, qsize) == qs[i].fnv);
		struct whisper_model *m = NULL;
		tern_err e = {0};
		if (whisper_model_load_mem(&m, q, qsize, &e))
			fail_msg("%s", e.msg);
		assert_int_equal(m->hp.ftype, 2000 + qs[i].ftype);
		assert_int_equal(m->enc[0].q_w->type, qs[i].t);
		assert_int_equal(m->conv1_w->type, QT_F16);
		char *got = greedy_jfk(m);
		snprintf(path, sizeof(path), "tests/data/whisper/%s", qs[i].want);
		size_t wsize = 0;
		char *want = test_read_file(path, &wsize);
		assert_non_null(want);
		print_message("%s greedy:%s", quant_type_name(qs[i].t), got);
		assert_int_equal(strlen(got), wsize);
		assert_memory_equal(got, want, wsize);
		free(want);
		free(got);
		whisper_model_free(m);
		free(q);
	}
	free(src);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_large_v3_layout),
		cmocka_unit_test(test_tiny_quantized),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
