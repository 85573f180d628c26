/* test_vad.c - the Silero model (lib/speech/silero.c) against whisper.cpp:
 * the 344 probabilities and the 4 segments of jfk.wav that whisper.cpp's
 * VAD gives (tests/data/vad/jfk.json, written by the reference tool of
 * /work/ref/whisper, see README's "Layout"), with the AVX2 kernels and the
 * plain C ones; streaming window by window against the batched run; and
 * model files that are truncated, mis-shaped, of another version or kind. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tests/testutil.h"

#include "lib/format/ggml_legacy.h"
#include "lib/speech/vad.h"
#include "quant/cpu.h"
#include "quant/quant.h"

#if defined(TERN_HAVE_SNDFILE)
#include <sndfile.h>
#endif

/* The brief's bound; on x86-64 with glibc the probabilities come out bit
 * for bit (the products sum in ggml's order, the rest is the same libm). */
#define PROB_TOL 1e-4

static const char *model_path(void)
{
	static char path[1024];
	snprintf(path, sizeof path, "%s/models/silero-v6.2.0-ggml.bin", test_data_dir());
	return path;
}

static struct tern_silero *load_model(void)
{
	struct tern_silero *m = NULL;
	tern_err e = {0};
	if (tern_silero_load(&m, model_path(), &e))
		fail_msg("%s: %s", model_path(), e.msg);
	return m;
}

/* ---- the reference: whisper.cpp's output on jfk.wav ------------------------ */

struct ref {
	float probs[400];
	size_t n_probs;
	int64_t seg[8][2];
	size_t n_seg;
	size_t n_samples;
};

/* The numbers after `key` up to the closing bracket. */
static size_t numbers_after(const char *doc, const char *key, double *out, size_t cap)
{
	const char *p = strstr(doc, key);
	if (!p)
		fail_msg("tests/data/vad/jfk.json: no %s", key);
	p = strchr(p, '[');
	const char *end = strchr(p, ']');
	size_t n = 0;
	while (p && p < end) {
		p += strcspn(p, "-0123456789");
		if (p >= end)
			break;
		char *q;
		double v = strtod(p, &q);
		if (q == p)
			break;
		if (n < cap)
			out[n] = v;
		n++;
		p = q;
	}
	return n;
}

static void read_ref(struct ref *r)
{
	size_t size;
	char *doc = test_read_file("tests/data/vad/jfk.json", &size);
	assert_non_null(doc);
	double v[400];
	r->n_probs = numbers_after(doc, "\"probs\"", v, 400);
	assert_int_equal(r->n_probs, 344);
	for (size_t i = 0; i < r->n_probs; i++)
		r->probs[i] = (float)v[i];
	r->n_seg = numbers_after(doc, "\"segments\"", v, 16) / 2;
	assert_int_equal(r->n_seg, 4);
	for (size_t i = 0; i < r->n_seg; i++) {
		r->seg[i][0] = (int64_t)v[2 * i];
		r->seg[i][1] = (int64_t)v[2 * i + 1];
	}
	const char *ns = strstr(doc, "\"n_samples\":");
	assert_non_null(ns);
	r->n_samples = (size_t)strtoull(ns + 12, NULL, 10);
	free(doc);
}

/* jfk.wav as floats (s16 / 32768, as whisper.cpp reads it). */
static float *read_jfk(size_t *n)
{
#if defined(TERN_HAVE_SNDFILE)
	char path[1024];
	snprintf(path, sizeof path, "%s/audio/jfk.wav", test_data_dir());
	SF_INFO info = {0};
	SNDFILE *f = sf_open(path, SFM_READ, &info);
	if (!f)
		fail_msg("%s: %s", path, sf_strerror(NULL));
	assert_int_equal(info.samplerate, TERN_VAD_RATE);
	assert_int_equal(info.channels, 1);
	float *pcm = malloc((size_t)info.frames * sizeof *pcm);
	assert_non_null(pcm);
	assert_int_equal(sf_readf_float(f, pcm, info.frames), info.frames);
	sf_close(f);
	*n = (size_t)info.frames;
	return pcm;
#else
	(void)n;
	return NULL;
#endif
}

static double max_diff(const float *a, const float *b, size_t n, size_t *at)
{
	double m = 0;
	for (size_t i = 0; i < n; i++) {
		double d = fabs((double)a[i] - (double)b[i]);
		if (d > m || isnan(d)) {
			m = isnan(d) ? INFINITY : d;
			if (at)
				*at = i;
		}
	}
	return m;
}

static void probs_of(const struct tern_silero *m, const float *pcm, size_t n, float *probs)
{
	struct tern_vad *v = NULL;
	tern_err e = {0};
	assert_int_equal(tern_vad_new(&v, m, &e), 0);
	assert_int_equal(tern_vad_probs(v, pcm, n, probs, &e), 0);
	tern_vad_free(v);
}

static void test_jfk(void **state)
{
	(void)state;
	size_t n = 0;
	float *pcm = read_jfk(&n);
	if (!pcm)
		skip();
	struct ref r;
	read_ref(&r);
	assert_int_equal(n, r.n_samples);
	struct tern_silero *m = load_model();
	assert_string_equal(tern_silero_version(m), "v6");

	float probs[400];
	size_t nw = (n + TERN_VAD_WINDOW - 1) / TERN_VAD_WINDOW;
	assert_int_equal(nw, r.n_probs);
	probs_of(m, pcm, n, probs);
	size_t at = 0;
	double d = max_diff(probs, r.probs, nw, &at);
	print_message("jfk (%s): max |p - whisper.cpp| = %.3g at window %zu\n", quant_isa_name(quant_isa()), d, at);
	assert_true(d <= PROB_TOL);

	/* the segments, in whisper.cpp's centiseconds */
	struct tern_vad_params p;
	tern_vad_params_default(&p);
	struct tern_vad_segment *seg = NULL;
	size_t ns = 0;
	tern_err e = {0};
	assert_int_equal(tern_vad_segments(probs, nw, n, &p, &seg, &ns, &e), 0);
	assert_int_equal(ns, r.n_seg);
	for (size_t i = 0; i < ns; i++) {
		assert_int_equal(tern_vad_samples_to_cs(seg[i].start), r.seg[i][0]);
		assert_int_equal(tern_vad_samples_to_cs(seg[i].end), r.seg[i][1]);
	}
	free(seg);

	/* the plain C kernels, the reference of the AVX2 ones */
	if (quant_isa() != QUANT_ISA_SCALAR) {
		float sc[400];
		assert_int_equal(quant_cpu_force("scalar"), 0);
		probs_of(m, pcm, n, sc);
		assert_int_equal(quant_cpu_force("auto"), 0);
		double ds = max_diff(sc, r.probs, nw, NULL), dk = max_diff(sc, probs, nw, NULL);
		print_message("jfk (scalar): max |p - whisper.cpp| = %.3g, max |scalar - %s| = %.3g\n", ds,
			      quant_isa_name(quant_isa()), dk);
		assert_true(ds <= PROB_TOL);
		/* the same sums in the same order: the same bits */
		assert_memory_equal(sc, probs, nw * sizeof *sc);
	}
	tern_silero_free(m);
	free(pcm);
}

/* Window by window (streaming) gives what the batched run gives: each
 * token's sums run in the same order whatever the batch. Reset starts
 * over; a second stream on the same model does not disturb the first. */
static void test_streaming(void **state)
{
	(void)state;
	size_t n = 0;
	float *pcm = read_jfk(&n);
	if (!pcm)
		skip();
	struct tern_silero *m = load_model();
	size_t nw = (n + TERN_VAD_WINDOW - 1) / TERN_VAD_WINDOW;
	float batch[400], stream[400];
	probs_of(m, pcm, n, batch);

	struct tern_vad *v = NULL, *other = NULL;
	tern_err e = {0};
	assert_int_equal(tern_vad_new(&v, m, &e), 0);
	assert_int_equal(tern_vad_new(&other, m, &e), 0);
	float noise[TERN_VAD_WINDOW];
	for (int i = 0; i < TERN_VAD_WINDOW; i++)
		noise[i] = (float)((i * 7919 % 211) - 105) / 300.0f;
	for (int pass = 0; pass < 2; pass++) {
		tern_vad_reset(v);
		for (size_t w = 0; w < nw; w++) {
			float win[TERN_VAD_WINDOW] = {0};
			size_t s = w * TERN_VAD_WINDOW, k = n - s < TERN_VAD_WINDOW ? n - s : TERN_VAD_WINDOW;
			memcpy(win, pcm + s, k * sizeof *win);
			stream[w] = tern_vad_window(v, win);
			(void)tern_vad_window(other, noise);
		}
		assert_memory_equal(stream, batch, nw * sizeof *stream);
	}
	/* without a reset the state carries over; after one, the stream starts afresh */
	float carried = tern_vad_window(v, pcm);
	tern_vad_reset(v);
	float fresh = tern_vad_window(v, pcm);
	assert_true(fresh == batch[0]);
	assert_true(carried != fresh);
	tern_vad_free(v);
	tern_vad_free(other);
	tern_silero_free(m);
	free(pcm);
}

/* The last window is zero-padded: n samples and the same n followed by
 * zeros up to the window give the same probabilities; no samples, none. */
static void test_lengths(void **state)
{
	(void)state;
	struct tern_silero *m = load_model();
	enum { N = 3 * TERN_VAD_WINDOW + 100 };
	float pcm[4 * TERN_VAD_WINDOW] = {0}, a[4], b[4];
	for (int i = 0; i < N; i++)
		pcm[i] = sinf((float)i * 0.05f) * 0.3f + sinf((float)i * 0.31f) * 0.2f;
	probs_of(m, pcm, N, a);
	probs_of(m, pcm, 4 * TERN_VAD_WINDOW, b);
	assert_memory_equal(a, b, sizeof a);
	for (int i = 0; i < 4; i++)
		assert_true(a[i] >= 0 && a[i] <= 1);

	struct tern_vad *v = NULL;
	tern_err e = {0};
	assert_int_equal(tern_vad_new(&v, m, &e), 0);
	assert_int_equal(tern_vad_probs(v, NULL, 0, NULL, &e), 0);
	assert_int_equal(tern_vad_probs(v, NULL, 5, a, &e), TERN_EINVAL);
	tern_vad_free(v);
	tern_silero_free(m);
}

/* ---- hostile model files ------------------------------------------------------ */

/* A Silero file rewritten from the real one's tensors, with one change. */
struct mutation {
	const char *drop;          /* tensor left out */
	const char *reshape;       /* tensor given the dims below (same count) */
	uint32_t dims[3];
	const char *retype;        /* f32 tensor stored as f16 */
	bool extra;                /* one more tensor */
	int32_t version;           /* 0: keep */
	int hparam;                /* index of the int32 hparam to change (0: none) */
	int32_t hparam_value;
};

struct buf {
	uint8_t *p;
	size_t n, cap;
};

static void put(struct buf *b, const void *p, size_t n)
{
	if (b->n + n > b->cap) {
		b->cap = (b->n + n) * 2;
		b->p = realloc(b->p, b->cap);
		assert_non_null(b->p);
	}
	memcpy(b->p + b->n, p, n);
	b->n += n;
}

static void put32(struct buf *b, int32_t v)
{
	uint8_t le[4] = {(uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24)};
	put(b, le, 4);
}

static void put_tensor(struct buf *b, const char *name, int n_dims, const uint32_t *ne, uint32_t type,
		       const void *data, size_t nbytes)
{
	put32(b, n_dims);
	put32(b, (int32_t)strlen(name));
	put32(b, (int32_t)type);
	for (int i = 0; i < n_dims; i++)
		put32(b, (int32_t)ne[i]);
	put(b, name, strlen(name));
	put(b, data, nbytes);
}

static struct buf rewrite(const struct mutation *mu)
{
	ggml_legacy *f = NULL;
	tern_err e = {0};
	if (ggml_legacy_open(&f, model_path(), &e))
		fail_msg("%s", e.msg);
	struct buf b = {0};
	put32(&b, (int32_t)GGML_LEGACY_MAGIC);
	put32(&b, 10);
	put(&b, "silero-16k", 10);
	for (size_t i = 0; i < ggml_legacy_n_hparams(f); i++) {
		int32_t v = (int32_t)ggml_legacy_hparam(f, i)->i;
		if (i == 0 && mu->version)
			v = mu->version;
		if (mu->hparam && (int)i == mu->hparam)
			v = mu->hparam_value;
		put32(&b, v);
	}
	for (uint64_t i = 0; i < ggml_legacy_n_tensors(f); i++) {
		const struct tern_tensor_view *t = ggml_legacy_tensor_at(f, i);
		char name[128];
		snprintf(name, sizeof name, "%.*s", (int)t->name.len, t->name.ptr);
		if (mu->drop && !strcmp(name, mu->drop))
			continue;
		uint32_t ne[4] = {(uint32_t)t->ne[0], (uint32_t)t->ne[1], (uint32_t)t->ne[2], (uint32_t)t->ne[3]};
		int nd = (int)t->n_dims;
		if (mu->reshape && !strcmp(name, mu->reshape)) {
			memcpy(ne, mu->dims, sizeof mu->dims);
			nd = 3;
		}
		if (mu->retype && !strcmp(name, mu->retype)) {
			uint64_t cnt = tern_tensor_nelements(t);
			uint16_t *h = calloc(cnt, 2);
			put_tensor(&b, name, nd, ne, QT_F16, h, cnt * 2);
			free(h);
			continue;
		}
		put_tensor(&b, name, nd, ne, t->type, t->data, t->nbytes);
	}
	if (mu->extra) {
		float z[4] = {0};
		uint32_t ne[1] = {4};
		put_tensor(&b, "_model.extra", 1, ne, QT_F32, z, sizeof z);
	}
	ggml_legacy_close(f);
	return b;
}

/* Load the mutated file: expect code, and a message containing `needle`. */
static void expect_load(const struct mutation *mu, int code, const char *needle)
{
	struct buf b = rewrite(mu);
	struct tern_silero *m = (struct tern_silero *)&b; /* must be reset to NULL */
	tern_err e = {0};
	int rc = tern_silero_load_mem(&m, b.p, b.n, &e);
	if (rc != code || (needle && !strstr(e.msg, needle)))
		fail_msg("expected %d with '%s', got %d: %s", code, needle ? needle : "", rc, e.msg);
	if (code == 0) {
		assert_non_null(m);
		tern_silero_free(m);
	} else {
		assert_null(m);
	}
	free(b.p);
}

static void test_rewrite_valid(void **state)
{
	(void)state;
	/* the unchanged rewrite loads and computes what the file computes */
	struct mutation none = {0};
	struct buf b = rewrite(&none);
	struct tern_silero *m = NULL, *ref = load_model();
	tern_err e = {0};
	assert_int_equal(tern_silero_load_mem(&m, b.p, b.n, &e), 0);
	free(b.p); /* the model keeps nothing of the buffer */
	float pcm[2 * TERN_VAD_WINDOW], a[2], r[2];
	for (int i = 0; i < 2 * TERN_VAD_WINDOW; i++)
		pcm[i] = sinf((float)i * 0.11f) * 0.5f;
	probs_of(m, pcm, 2 * TERN_VAD_WINDOW, a);
	probs_of(ref, pcm, 2 * TERN_VAD_WINDOW, r);
	assert_memory_equal(a, r, sizeof a);
	tern_silero_free(m);
	tern_silero_free(ref);

	struct mutation v5 = {.version = 5};
	expect_load(&v5, 0, NULL);
}

static void test_hostile(void **state)
{
	(void)state;
	struct mutation shape = {.reshape = "_model.encoder.1.reparam_conv.weight", .dims = {3, 64, 128}};
	expect_load(&shape, TERN_EFORMAT, "tensor '_model.encoder.1.reparam_conv.weight': shape [3, 64, 128, 1]");
	struct mutation type = {.retype = "_model.decoder.rnn.bias_ih"};
	expect_load(&type, TERN_EFORMAT, "tensor '_model.decoder.rnn.bias_ih': type f16, expected f32");
	struct mutation drop = {.drop = "_model.decoder.decoder.2.bias"};
	expect_load(&drop, TERN_EFORMAT, "tensor '_model.decoder.decoder.2.bias' missing");
	struct mutation drop_basis = {.drop = "_model.stft.forward_basis_buffer"};
	expect_load(&drop_basis, TERN_EFORMAT, "'_model.stft.forward_basis_buffer' missing");
	struct mutation extra = {.extra = true};
	expect_load(&extra, TERN_EFORMAT, "unexpected tensor '_model.extra'");
	struct mutation v4 = {.version = 4};
	expect_load(&v4, TERN_EUNSUPPORTED, "Silero version 4");
	/* hparams in file order: version x3, n_window, n_context, n_layers,
	 * 4 x (in, out, kernel), lstm_input, lstm_hidden, final_in, final_out */
	struct mutation window = {.hparam = 3, .hparam_value = 256};
	expect_load(&window, TERN_EUNSUPPORTED, "n_window = 256");
	struct mutation hidden = {.hparam = 6 + 12 + 1, .hparam_value = 64};
	expect_load(&hidden, TERN_EUNSUPPORTED, "lstm_hidden_size = 64");
	struct mutation kernel = {.hparam = 6 + 3 * 2 + 2, .hparam_value = 5};
	expect_load(&kernel, TERN_EUNSUPPORTED, "encoder.2.kernel_size = 5");
}

/* Every prefix length of the real file (coarsely, and every byte of the
 * header) fails cleanly: an error with a message, no model. */
static void test_truncated(void **state)
{
	(void)state;
	size_t size;
	char *all = test_read_file(model_path(), &size);
	assert_non_null(all);
	for (size_t n = 0; n < size; n += n < 400 ? 1 : 997) {
		struct tern_silero *m = NULL;
		tern_err e = {0};
		int rc = tern_silero_load_mem(&m, all, n, &e);
		if (rc == 0 || m || !e.msg[0])
			fail_msg("%zu bytes: rc %d, message '%s'", n, rc, e.msg);
	}
	/* a cut inside a tensor names it, a cut between tensors names the
	 * first one missing */
	struct tern_silero *m = NULL;
	tern_err e = {0};
	assert_int_equal(tern_silero_load_mem(&m, all, size - 100, &e), TERN_EFORMAT);
	assert_non_null(strstr(e.msg, "_model.stft.forward_basis_buffer"));
	free(all);
}

/* A Whisper file is refused as such, and a missing file is an I/O error. */
static void test_wrong_kind(void **state)
{
	(void)state;
	char path[1024];
	snprintf(path, sizeof path, "%s/models/whisper-vocab-only-tiny.bin", test_data_dir());
	struct tern_silero *m = NULL;
	tern_err e = {0};
	assert_int_equal(tern_silero_load(&m, path, &e), TERN_EFORMAT);
	assert_null(m);
	assert_non_null(strstr(e.msg, "not a Silero VAD model (a whisper model)"));
	e = (tern_err){0};
	assert_int_equal(tern_silero_load(&m, "/nonexistent/silero.bin", &e), TERN_EIO);
	assert_null(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_jfk),
		cmocka_unit_test(test_streaming),
		cmocka_unit_test(test_lengths),
		cmocka_unit_test(test_rewrite_valid),
		cmocka_unit_test(test_hostile),
		cmocka_unit_test(test_truncated),
		cmocka_unit_test(test_wrong_kind),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
