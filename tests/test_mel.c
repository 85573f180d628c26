/* test_mel.c - Whisper's log-mel front end (lib/speech/mel.h) against
 * whisper.cpp's own spectrogram of the same samples, dumped once from
 * whisper.cpp (tests/data/whisper/README.md says how):
 *
 *   jfk.wav whole (176,000 samples: the reflected start, the speech, the
 *   frames that reach into the 30 s of zeros, the global clamp) and its
 *   first 52,817 samples (a length that is no multiple of the hop, so the
 *   last frames straddle the end differently);
 *   frames computed in blocks equal the frames computed at once;
 *   filter banks that are not Whisper's are refused. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/format/ggml_legacy.h"
#include "lib/speech/mel.h"
#include "tests/testutil.h"

/* A test's front end: the filter bank of tiny.en (in the vocab-only file,
 * equal to the real model's). */
static struct tern_mel *tiny_mel(void)
{
	char path[512];
	snprintf(path, sizeof(path), "%s/models/whisper-vocab-only-tiny.en.bin", test_data_dir());
	ggml_legacy *m = NULL;
	tern_err e = {0};
	assert_int_equal(ggml_legacy_open(&m, path, &e), 0);
	uint32_t n_mel = 0, n_fft = 0;
	const void *fb = NULL;
	assert_int_equal(ggml_legacy_mel(m, &n_mel, &n_fft, &fb), 0);
	struct tern_mel *mel = NULL;
	assert_int_equal(tern_mel_new(&mel, n_mel, n_fft, fb, &e), 0);
	ggml_legacy_close(m);
	assert_int_equal(tern_mel_n_mel(mel), 80);
	return mel;
}

static float *jfk(size_t *n)
{
	char path[512];
	snprintf(path, sizeof(path), "%s/audio/jfk.wav", test_data_dir());
	int rate = 0;
	float *pcm = test_read_audio(path, n, &rate);
	assert_non_null(pcm);
	assert_int_equal(rate, 16000);
	return pcm;
}

/* Reference file: "TMEL", n_mel, n_len, n_sel, then n_sel x (frame, f32[n_mel]). */
struct ref {
	uint32_t n_mel, n_len, n_sel;
	const unsigned char *rec;
	char *buf;
};

static struct ref load_ref(const char *name)
{
	struct ref r = {0};
	size_t size = 0;
	char path[256];
	snprintf(path, sizeof(path), "tests/data/whisper/%s", name);
	r.buf = test_read_file(path, &size);
	assert_non_null(r.buf);
	assert_true(size >= 16);
	uint32_t h[4];
	memcpy(h, r.buf, 16);
	assert_int_equal(h[0], 0x4c454d54);
	r.n_mel = h[1], r.n_len = h[2], r.n_sel = h[3];
	assert_int_equal(size, 16 + (size_t)r.n_sel * (4 + 4 * (size_t)r.n_mel));
	r.rec = (const unsigned char *)r.buf + 16;
	return r;
}

/* Largest |ours - whisper.cpp| over the reference frames. */
static double compare(const struct ref *r, const float *mel, size_t n_len)
{
	double worst = 0;
	size_t stride = 4 + 4 * (size_t)r->n_mel;
	for (uint32_t s = 0; s < r->n_sel; s++) {
		uint32_t f;
		memcpy(&f, r->rec + s * stride, 4);
		assert_true(f < n_len);
		for (uint32_t j = 0; j < r->n_mel; j++) {
			float want;
			memcpy(&want, r->rec + s * stride + 4 + 4 * j, 4);
			double d = fabs((double)mel[(size_t)j * n_len + f] - want);
			if (d > worst)
				worst = d;
		}
	}
	return worst;
}

static void check_against(const char *ref_name, size_t n_use)
{
	struct tern_mel *m = tiny_mel();
	size_t n = 0;
	float *pcm = jfk(&n);
	assert_true(n_use <= n);
	struct ref r = load_ref(ref_name);
	float *mel = NULL;
	size_t n_len = 0;
	tern_err e = {0};
	assert_int_equal(tern_mel_compute(m, pcm, n_use, &mel, &n_len, &e), 0);
	assert_int_equal(n_len, r.n_len);
	assert_int_equal(tern_mel_n_frames(n_use), r.n_len);
	assert_int_equal(r.n_mel, 80);
	double worst = compare(&r, mel, n_len);
	print_message("%s: %u frames, max |diff| %.3g\n", ref_name, r.n_sel, worst);
	/* values lie in about [-1, 2]; the two FFTs differ in float rounding
	 * (measured: 1.8e-5 at most); a symmetric instead of a periodic window
	 * moves them by 0.02 to 0.04 */
	assert_true(worst < 5e-5);
	free(mel);
	free(r.buf);
	free(pcm);
	tern_mel_free(m);
}

static void test_jfk(void **state)
{
	(void)state;
	check_against("jfk.mel", 176000);
}

static void test_jfk_prefix(void **state)
{
	(void)state;
	check_against("jfk-52817.mel", 52817);
}

/* tern_mel_log over blocks of frames gives the frames of one call, and the
 * maximum of the blocks is the maximum of the whole. */
static void test_blocks(void **state)
{
	(void)state;
	struct tern_mel *m = tiny_mel();
	size_t n = 0;
	float *pcm = jfk(&n);
	size_t nf = tern_mel_n_frames(n);
	float *whole = malloc(nf * 80 * sizeof(float)), *part = malloc(nf * 80 * sizeof(float));
	assert_non_null(whole);
	assert_non_null(part);
	float max_whole = tern_mel_log(m, pcm, n, 0, nf, whole, nf);
	float max_part = -100;
	for (size_t f0 = 0; f0 < nf; f0 += 333) {
		size_t k = nf - f0 < 333 ? nf - f0 : 333;
		float v = tern_mel_log(m, pcm, n, f0, k, part + f0, nf);
		max_part = v > max_part ? v : max_part;
	}
	assert_true(max_whole == max_part);
	assert_memory_equal(whole, part, nf * 80 * sizeof(float));
	/* frames wholly in the zeros are log10(1e-10) */
	assert_true(whole[nf - 1] == -10.0f);
	free(whole);
	free(part);
	free(pcm);
	tern_mel_free(m);
}

/* A signal shorter than the reflected front (whisper.cpp would read past
 * its end) and an empty one: every value is defined, the clamp holds. */
static void test_short(void **state)
{
	(void)state;
	struct tern_mel *m = tiny_mel();
	float x[50];
	for (int i = 0; i < 50; i++)
		x[i] = sinf((float)i * 0.3f);
	for (size_t n = 0; n <= 50; n += 50) {
		float *mel = NULL;
		size_t n_len = 0;
		tern_err e = {0};
		assert_int_equal(tern_mel_compute(m, x, n, &mel, &n_len, &e), 0);
		assert_int_equal(n_len, 3000 + n / 160);
		float lo = mel[0], hi = mel[0];
		for (size_t i = 0; i < n_len * 80; i++) {
			assert_true(isfinite(mel[i]));
			lo = mel[i] < lo ? mel[i] : lo;
			hi = mel[i] > hi ? mel[i] : hi;
		}
		assert_true(hi - lo <= 2.0f + 1e-6f); /* (max - 8 .. max) / 4 */
		free(mel);
	}
	tern_mel_free(m);
}

static void test_bad_filters(void **state)
{
	(void)state;
	float fb[2 * 201] = {0};
	struct tern_mel *m = NULL;
	tern_err e = {0};
	assert_int_equal(tern_mel_new(&m, 2, 200, fb, &e), TERN_EINVAL);
	assert_null(m);
	assert_int_equal(tern_mel_new(&m, 0, 201, fb, &e), TERN_EINVAL);
	assert_int_equal(tern_mel_new(&m, 1000, 201, fb, &e), TERN_EINVAL);
	fb[300] = NAN;
	assert_int_equal(tern_mel_new(&m, 2, 201, fb, &e), TERN_EINVAL);
	assert_non_null(strstr(e.msg, "filter 1, bin 99"));
	fb[300] = -1;
	assert_int_equal(tern_mel_new(&m, 2, 201, fb, &e), TERN_EINVAL);
	fb[300] = 0.5f;
	assert_int_equal(tern_mel_new(&m, 2, 201, fb, &e), 0);
	tern_mel_free(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_jfk),
		cmocka_unit_test(test_jfk_prefix),
		cmocka_unit_test(test_blocks),
		cmocka_unit_test(test_short),
		cmocka_unit_test(test_bad_filters),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
