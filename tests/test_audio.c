/* test_audio.c - lib/audio against expectations computed here: WAV files
 * built byte by byte (so the reader is not checked against its own
 * writer), jfk.wav's samples parsed by hand, the mixdown and the rate
 * conversion of sines against their formulas, the corpus of
 * tests/data/audio (scripts/gen_audio_corpus.c), pipes, and bad input. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "tests/testutil.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lib/audio/audio.h"

#define PI 3.14159265358979323846

/* ---- helpers ---------------------------------------------------------------- */

static char *data_path(const char *rel)
{
	static char p[4][512];
	static int k;
	k = (k + 1) % 4;
	snprintf(p[k], sizeof p[k], "%s/%s", test_data_dir(), rel);
	return p[k];
}

static void put16(unsigned char *p, unsigned v)
{
	p[0] = (unsigned char)v, p[1] = (unsigned char)(v >> 8);
}

static void put32(unsigned char *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

/* A canonical 44-byte-header WAV: format tag 1 (PCM) or 3 (float), the
 * given header fields, data_bytes of data copied from data (the data
 * chunk's size field says data_bytes unless size_field is nonzero). */
static unsigned char *wav(int tag, int channels, uint32_t rate, int bits, const void *data, size_t data_bytes,
			  uint32_t size_field, size_t *n)
{
	*n = 44 + data_bytes;
	unsigned char *p = calloc(1, *n);
	assert_non_null(p);
	memcpy(p, "RIFF", 4);
	put32(p + 4, (uint32_t)(36 + data_bytes));
	memcpy(p + 8, "WAVEfmt ", 8);
	put32(p + 16, 16);
	put16(p + 20, (unsigned)tag);
	put16(p + 22, (unsigned)channels);
	put32(p + 24, rate);
	put32(p + 28, rate * (uint32_t)channels * (uint32_t)bits / 8);
	put16(p + 32, (unsigned)(channels * bits / 8));
	put16(p + 34, (unsigned)bits);
	memcpy(p + 36, "data", 4);
	put32(p + 40, size_field ? size_field : (uint32_t)data_bytes);
	if (data_bytes)
		memcpy(p + 44, data, data_bytes);
	return p;
}

/* Every sample of an open source, read n at a time. */
static float *read_all(struct tern_audio *a, size_t step, size_t *n)
{
	size_t cap = 1 << 16, len = 0, got;
	float *buf = malloc(cap * sizeof *buf);
	assert_non_null(buf);
	tern_err e = {0};
	for (;;) {
		if (cap - len < step) {
			cap *= 2;
			buf = realloc(buf, cap * sizeof *buf);
			assert_non_null(buf);
		}
		if (tern_audio_read(a, buf + len, step, &got, &e))
			fail_msg("read: %s", e.msg);
		assert_true(got <= step);
		if (got == 0)
			break;
		len += got;
	}
	*n = len;
	return buf;
}

static float *load_mem(const void *p, size_t n, int rate, size_t *len, struct tern_audio_info *info)
{
	struct tern_audio *a;
	tern_err e = {0};
	if (tern_audio_open_mem(&a, p, n, rate, &e))
		fail_msg("open: %s", e.msg);
	if (info)
		*info = *tern_audio_info(a);
	float *x = read_all(a, 4096, len);
	tern_audio_close(a);
	return x;
}

static float *load(const char *path, int rate, size_t *n)
{
	float *x;
	tern_err e = {0};
	if (tern_audio_load(path, rate, 0, &x, n, &e))
		fail_msg("%s: %s", path, e.msg);
	return x;
}

/* jfk.wav's samples parsed here: 16-bit PCM, little-endian, in its data chunk. */
static float *jfk_by_hand(size_t *n)
{
	size_t size;
	unsigned char *b = (unsigned char *)test_read_file(data_path("audio/jfk.wav"), &size);
	assert_non_null(b);
	size_t off = 12;
	while (off + 8 <= size && memcmp(b + off, "data", 4) != 0)
		off += 8 + (b[off + 4] | b[off + 5] << 8 | b[off + 6] << 16 | (size_t)b[off + 7] << 24);
	assert_true(off + 8 <= size);
	size_t bytes = b[off + 4] | b[off + 5] << 8 | b[off + 6] << 16 | (size_t)b[off + 7] << 24;
	*n = bytes / 2;
	float *x = malloc(*n * sizeof *x);
	for (size_t i = 0; i < *n; i++)
		x[i] = (float)(int16_t)(b[off + 8 + 2 * i] | b[off + 9 + 2 * i] << 8) / 32768.0f;
	free(b);
	return x;
}

static double corr(const float *a, const float *b, size_t n)
{
	double ab = 0, aa = 0, bb = 0;
	for (size_t i = 0; i < n; i++)
		ab += (double)a[i] * b[i], aa += (double)a[i] * a[i], bb += (double)b[i] * b[i];
	return ab / sqrt(aa * bb + 1e-30);
}

/* ---- tests ---------------------------------------------------------------- */

static void test_jfk_passthrough(void **state)
{
	(void)state;
	size_t n, m;
	float *want = jfk_by_hand(&m);
	assert_int_equal(m, 176000);
	struct tern_audio *a;
	tern_err e = {0};
	assert_int_equal(tern_audio_open(&a, data_path("audio/jfk.wav"), 16000, &e), 0);
	const struct tern_audio_info *in = tern_audio_info(a);
	assert_int_equal(in->src_rate, 16000);
	assert_int_equal(in->src_channels, 1);
	assert_int_equal(in->src_frames, 176000);
	assert_int_equal(in->rate, 16000);
	assert_string_equal(in->format, "WAV (PCM 16-bit)");
	float *x = read_all(a, 4096, &n);
	tern_audio_close(a);
	assert_int_equal(n, m);
	/* equal rates: the samples pass unchanged, bit for bit */
	assert_memory_equal(x, want, n * sizeof *x);
	free(x);
	free(want);
}

static void test_mixdown(void **state)
{
	(void)state;
	/* three channels of 16-bit: the mono sample is the mean */
	int16_t s[4][3] = {{1000, -3000, 2000}, {32767, 32767, 32767}, {-32768, -32768, 0}, {1, 2, 4}};
	size_t n, len;
	unsigned char *w = wav(1, 3, 16000, 16, s, sizeof s, 0, &n);
	struct tern_audio_info info;
	float *x = load_mem(w, n, 16000, &len, &info);
	assert_int_equal(len, 4);
	assert_int_equal(info.src_channels, 3);
	for (int i = 0; i < 4; i++) {
		double want = ((double)s[i][0] + s[i][1] + s[i][2]) / 3 / 32768;
		assert_float_equal(x[i], want, 1e-7);
	}
	free(x);
	free(w);

	/* float stereo: NaN and huge values are tamed */
	float f[5][2] = {{0.5f, -0.25f}, {NAN, NAN}, {1e30f, 1e30f}, {-INFINITY, -1}, {2, 4}};
	w = wav(3, 2, 16000, 32, f, sizeof f, 0, &n);
	x = load_mem(w, n, 16000, &len, &info);
	assert_int_equal(len, 5);
	assert_string_equal(info.format, "WAV (float 32-bit)");
	assert_float_equal(x[0], 0.125, 1e-7);
	assert_float_equal(x[1], 0, 0);
	assert_float_equal(x[2], 1000, 0);
	assert_float_equal(x[3], -1000, 0);
	assert_float_equal(x[4], 3, 0);
	free(x);
	free(w);

	/* unsigned 8-bit: 128 is zero, steps of 1/128 */
	unsigned char u[4] = {128, 255, 0, 192};
	w = wav(1, 1, 8000, 8, u, sizeof u, 0, &n);
	x = load_mem(w, n, 8000, &len, &info);
	assert_string_equal(info.format, "WAV (PCM 8-bit unsigned)");
	assert_int_equal(len, 4);
	float want_u[4] = {0, 127 / 128.0f, -1, 0.5f};
	for (int i = 0; i < 4; i++)
		assert_float_equal(x[i], want_u[i], 1e-7);
	free(x);
	free(w);
}

/* A sine at from Hz converted to to Hz keeps its frequency, amplitude and
 * phase: compared sample by sample with the formula, the edges (where the
 * filter sees the signal start and stop) left out. */
static void check_sine(int from, int to, double freq, double amp)
{
	size_t n_in = (size_t)from; /* one second */
	float *s = malloc(n_in * sizeof *s);
	for (size_t i = 0; i < n_in; i++)
		s[i] = (float)(amp * sin(2 * PI * freq * (double)i / from));
	size_t n, len;
	unsigned char *w = wav(3, 1, (uint32_t)from, 32, s, n_in * sizeof *s, 0, &n);
	float *x = load_mem(w, n, to, &len, NULL);
	/* the length scales with the rate (within a sample) */
	assert_true(fabs((double)len - (double)n_in * to / from) <= 1.0);
	double maxerr = 0, peak = 0;
	size_t edge = (size_t)to / 50;
	for (size_t i = edge; i + edge < len; i++) {
		double want = amp * sin(2 * PI * freq * (double)i / to);
		maxerr = fmax(maxerr, fabs(x[i] - want));
		peak = fmax(peak, fabs(x[i]));
	}
	if (maxerr > 1e-3 * amp || fabs(peak - amp) > 2e-3 * amp)
		fail_msg("%d -> %d Hz, %g Hz sine: max error %g, peak %g (amplitude %g)", from, to, freq, maxerr, peak, amp);
	free(x);
	free(w);
	free(s);
}

static void test_resample_sine(void **state)
{
	(void)state;
	check_sine(44100, 16000, 1000, 0.5);
	check_sine(48000, 16000, 3000, 0.8);
	check_sine(8000, 16000, 440, 0.5);
	check_sine(22050, 16000, 2500, 0.25);
	/* above the target's Nyquist frequency: filtered out */
	size_t n_in = 44100, n, len;
	float *s = malloc(n_in * sizeof *s);
	for (size_t i = 0; i < n_in; i++)
		s[i] = (float)(0.5 * sin(2 * PI * 12000.0 * (double)i / 44100));
	unsigned char *w = wav(3, 1, 44100, 32, s, n_in * sizeof *s, 0, &n);
	float *x = load_mem(w, n, 16000, &len, NULL);
	double peak = 0;
	for (size_t i = 1000; i + 1000 < len; i++)
		peak = fmax(peak, fabs(x[i]));
	assert_true(peak < 1e-3);
	free(x);
	free(w);
	free(s);
}

/* Reading in any block size gives what reading the whole does. */
static void test_blocks(void **state)
{
	(void)state;
	for (int f = 0; f < 2; f++) {
		const char *path = f == 0 ? data_path("audio/jfk.wav") : "tests/data/audio/jfk_44k_stereo.ogg";
		size_t n;
		float *whole = load(path, 16000, &n);
		size_t steps[] = {1, 7, 511, 512, 4097, 100000};
		for (size_t k = 0; k < sizeof steps / sizeof steps[0]; k++) {
			if (f == 1 && steps[k] < 7)
				continue; /* resampling sample by sample is slow; 7 tests the same */
			struct tern_audio *a;
			tern_err e = {0};
			assert_int_equal(tern_audio_open(&a, path, 16000, &e), 0);
			size_t m;
			float *x = read_all(a, steps[k], &m);
			tern_audio_close(a);
			assert_int_equal(m, n);
			assert_memory_equal(x, whole, n * sizeof *x);
			free(x);
		}
		free(whole);
	}
	/* tern_audio_load's limit */
	float *x = NULL;
	size_t n = 0;
	tern_err e = {0};
	assert_int_equal(tern_audio_load(data_path("audio/jfk.wav"), 16000, 1000, &x, &n, &e), TERN_ERANGE);
	assert_null(x);
	assert_int_equal(tern_audio_load(data_path("audio/jfk.wav"), 16000, 176000, &x, &n, &e), 0);
	assert_int_equal(n, 176000);
	free(x);
}

/* The corpus: formats named, lossless files exact, lossy ones close to jfk. */
static void test_corpus(void **state)
{
	(void)state;
	size_t nj;
	float *jfk = jfk_by_hand(&nj);
	struct {
		const char *file, *format;
		int rate, channels;
	} c[] = {
		{"jfk_44k_stereo.ogg", "Ogg (Vorbis)", 44100, 2}, {"jfk5_8k_u8.wav", "WAV (PCM 8-bit unsigned)", 8000, 1},
		{"jfk.opus", "Ogg (Opus)", 16000, 1},             {"jfk_noise.mp3", "MPEG (layer III)", 16000, 1},
		{"jfk_pad.flac", "FLAC (PCM 16-bit)", 16000, 1},   {"silence.flac", "FLAC (PCM 16-bit)", 16000, 1},
		{"noise.flac", "FLAC (PCM 16-bit)", 16000, 1},     {"tone_24bit_stereo.wav", "WAV (PCM 24-bit)", 22050, 2},
		{"tone_float.wav", "WAV (float 32-bit)", 24000, 1},
	};
	char path[256];
	for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
		snprintf(path, sizeof path, "tests/data/audio/%s", c[i].file);
		struct tern_audio *a;
		tern_err e = {0};
		if (tern_audio_open(&a, path, 16000, &e))
			fail_msg("%s: %s", path, e.msg);
		const struct tern_audio_info *in = tern_audio_info(a);
		if (strcmp(in->format, c[i].format) != 0 || in->src_rate != c[i].rate || in->src_channels != c[i].channels)
			fail_msg("%s: %s %d Hz %d ch", c[i].file, in->format, in->src_rate, in->src_channels);
		tern_audio_close(a);
	}

	size_t n;
	/* lossless, no conversion: 1.5 s of zeros, jfk's first 2.6 s, 1.5 s of zeros */
	float *x = load("tests/data/audio/jfk_pad.flac", 16000, &n);
	assert_int_equal(n, 89600);
	for (size_t i = 0; i < n; i++) {
		float want = i < 24000 || i >= 65600 ? 0 : jfk[i - 24000];
		if (x[i] != want)
			fail_msg("jfk_pad.flac sample %zu: %g, want %g", i, x[i], want);
	}
	free(x);
	x = load("tests/data/audio/silence.flac", 16000, &n);
	assert_int_equal(n, 48000);
	for (size_t i = 0; i < n; i++)
		assert_true(x[i] == 0);
	free(x);

	/* converted and lossy: the length of jfk, and its waveform (Vorbis keeps
	 * it closely; 0.7 is the mixdown of 0.8 and 0.6) */
	x = load("tests/data/audio/jfk_44k_stereo.ogg", 16000, &n);
	assert_true(n >= 175990 && n <= 176010);
	double r = corr(x + 1000, jfk + 1000, 170000);
	if (r < 0.95)
		fail_msg("jfk_44k_stereo.ogg: correlation %g with jfk.wav", r);
	double e1 = 0, e2 = 0;
	for (size_t i = 0; i < 170000; i++)
		e1 += (double)x[i] * x[i], e2 += (double)jfk[i] * jfk[i];
	assert_float_equal(sqrt(e1 / e2), 0.7, 0.03);
	free(x);
	x = load("tests/data/audio/jfk5_8k_u8.wav", 16000, &n);
	assert_true(n >= 79990 && n <= 80010);
	r = corr(x + 1000, jfk + 1000, 78000);
	if (r < 0.9)
		fail_msg("jfk5_8k_u8.wav: correlation %g with jfk.wav", r);
	free(x);

	/* 24-bit stereo tone at 22.05 kHz read at its own rate: 0.375 sin, within
	 * the 24-bit step; float at 24 kHz: 0.5 sin exactly as written */
	x = load("tests/data/audio/tone_24bit_stereo.wav", 22050, &n);
	assert_int_equal(n, 4410);
	for (size_t i = 0; i < n; i++)
		assert_float_equal(x[i], 0.375 * sin(2 * PI * 440 * (double)i / 22050), 2e-7);
	free(x);
	x = load("tests/data/audio/tone_float.wav", 24000, &n);
	assert_int_equal(n, 6000);
	for (size_t i = 0; i < n; i++)
		assert_float_equal(x[i], (float)(0.5 * sin(2 * PI * 440 * (double)i / 24000)), 0);
	free(x);
	free(jfk);
}

/* A child process writes bytes into a pipe; the parent reads them as audio. */
static int pipe_from(const void *p, size_t n)
{
	int fd[2];
	assert_int_equal(pipe(fd), 0);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		close(fd[0]);
		const char *c = p;
		while (n > 0) {
			ssize_t w = write(fd[1], c, n);
			if (w <= 0)
				_exit(1);
			c += w, n -= (size_t)w;
		}
		_exit(0);
	}
	close(fd[1]);
	return fd[0];
}

static void test_pipes(void **state)
{
	(void)state;
	/* a short Ogg file through a pipe (Ogg seeks to its end for the length) */
	size_t size;
	char *ogg = test_read_file("tests/data/audio/jfk_44k_stereo.ogg", &size);
	assert_non_null(ogg);
	size_t n, m;
	float *want = load("tests/data/audio/jfk_44k_stereo.ogg", 16000, &n);
	int fd = pipe_from(ogg, size);
	struct tern_audio *a;
	tern_err e = {0};
	if (tern_audio_open_fd(&a, fd, 16000, &e))
		fail_msg("pipe: %s", e.msg);
	close(fd);
	wait(NULL);
	float *x = read_all(a, 1000, &m);
	tern_audio_close(a);
	assert_int_equal(m, n);
	assert_memory_equal(x, want, n * sizeof *x);
	free(x);
	free(want);
	free(ogg);

	/* a pipe longer than what is kept in memory (a 12 MB WAV), as "-" */
	size_t ns = 6000000;
	int16_t *s = malloc(ns * sizeof *s);
	for (size_t i = 0; i < ns; i++)
		s[i] = (int16_t)((i * 7919) % 65536 - 32768);
	unsigned char *w = wav(1, 1, 16000, 16, s, ns * sizeof *s, 0, &size);
	fd = pipe_from(w, size);
	int saved = dup(0);
	assert_true(dup2(fd, 0) == 0);
	close(fd);
	int rc = tern_audio_open(&a, "-", 16000, &e);
	dup2(saved, 0);
	close(saved);
	wait(NULL);
	if (rc)
		fail_msg("stdin: %s", e.msg);
	assert_int_equal(tern_audio_info(a)->src_frames, (int64_t)ns);
	x = read_all(a, 65536, &m);
	tern_audio_close(a);
	assert_int_equal(m, ns);
	for (size_t i = 0; i < ns; i++)
		if (x[i] != s[i] / 32768.0f)
			fail_msg("sample %zu: %g, want %g", i, x[i], s[i] / 32768.0f);
	free(x);
	free(w);
	free(s);

	/* an empty pipe */
	fd = pipe_from("", 0);
	assert_int_equal(tern_audio_open_fd(&a, fd, 16000, &e), TERN_EFORMAT);
	assert_string_equal(e.msg, "empty file");
	close(fd);
	wait(NULL);
}

static void expect_open_error(const void *p, size_t n, int code, const char *msg_part)
{
	struct tern_audio *a = (struct tern_audio *)1;
	tern_err e = {0};
	int rc = tern_audio_open_mem(&a, p, n, 16000, &e);
	if (rc == 0) {
		/* some damage shows only while reading; it must end in an error or
		 * at the end, never a crash */
		float buf[4096];
		size_t got;
		do
			rc = tern_audio_read(a, buf, 4096, &got, &e);
		while (rc == 0 && got > 0);
		tern_audio_close(a);
		if (code)
			fail_msg("opened, want %d (%s)", code, msg_part);
		return;
	}
	assert_null(a);
	if (rc != code || !strstr(e.msg, msg_part))
		fail_msg("got %d '%s', want %d '%s'", rc, e.msg, code, msg_part);
	assert_null(strchr(e.msg, '\n'));
}

static void test_errors(void **state)
{
	(void)state;
	tern_err e = {0};
	struct tern_audio *a;
	float *x;
	size_t n;
	assert_int_equal(tern_audio_open(&a, "/nonexistent.wav", 16000, &e), TERN_EIO);
	assert_string_equal(e.msg, "cannot open: No such file or directory");
	assert_int_equal(tern_audio_open(&a, "tests", 16000, &e), TERN_EIO);
	assert_string_equal(e.msg, "cannot read: is a directory");
	assert_int_equal(tern_audio_open(&a, data_path("audio/jfk.wav"), 999, &e), TERN_EINVAL);
	assert_int_equal(tern_audio_open(&a, data_path("audio/jfk.wav"), 384001, &e), TERN_EINVAL);
	assert_int_equal(tern_audio_load("/dev/null", 16000, 0, &x, &n, &e), TERN_EFORMAT);
	assert_string_equal(e.msg, "empty file");
	char tmp[] = "/tmp/tern_audio_XXXXXX";
	int fd = mkstemp(tmp);
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(tern_audio_open(&a, tmp, 16000, &e), TERN_EFORMAT);
	assert_string_equal(e.msg, "empty file");
	unlink(tmp);

	expect_open_error("", 0, TERN_EFORMAT, "empty file");
	char garbage[3000];
	for (size_t i = 0; i < sizeof garbage; i++)
		garbage[i] = (char)(i * 37 + 11);
	expect_open_error(garbage, sizeof garbage, TERN_EFORMAT, "not audio that libsndfile can read");
	expect_open_error("hello, world\n", 13, TERN_EFORMAT, "not audio that libsndfile can read");

	size_t size;
	char *jfk = test_read_file(data_path("audio/jfk.wav"), &size);
	assert_non_null(jfk);
	expect_open_error(jfk, 20, TERN_EFORMAT, "not audio"); /* truncated header */
	expect_open_error(jfk, 78, 0, "");                      /* its header (a LIST chunk in it), no data */
	expect_open_error(jfk, 10001, 0, "");                   /* cut in the data */
	free(jfk);

	int16_t s[64] = {0};
	unsigned char *w;
	struct tern_audio_info info;
	w = wav(1, 1, 16000, 16, NULL, 0, 0, &n); /* no samples: a valid, empty stream */
	x = load_mem(w, n, 16000, &size, &info);
	assert_int_equal(size, 0);
	assert_int_equal(info.src_frames, 0);
	free(x);
	free(w);
	w = wav(1, 0, 16000, 16, s, sizeof s, 0, &n); /* zero channels */
	expect_open_error(w, n, TERN_EFORMAT, "");
	free(w);
	w = wav(1, 1, 0, 16, s, sizeof s, 0, &n); /* rate 0 */
	expect_open_error(w, n, TERN_EFORMAT, "");
	free(w);
	w = wav(1, 1, 500, 16, s, sizeof s, 0, &n); /* rate too low to be audio */
	expect_open_error(w, n, TERN_EFORMAT, "sample rate of 500 Hz is out of range");
	free(w);
	w = wav(1, 1, 0x7fffffff, 16, s, sizeof s, 0, &n); /* absurd rate */
	expect_open_error(w, n, TERN_EFORMAT, "");
	free(w);
	w = wav(1, 65535, 16000, 16, s, sizeof s, 0, &n); /* absurd channel count */
	expect_open_error(w, n, TERN_EFORMAT, "");
	free(w);
	w = wav(1, 1, 16000, 13, s, sizeof s, 0, &n); /* 13-bit samples: libsndfile reads the 16-bit container */
	expect_open_error(w, n, 0, "");
	free(w);
	w = wav(77, 1, 16000, 16, s, sizeof s, 0, &n); /* an unknown format tag */
	expect_open_error(w, n, TERN_EFORMAT, "");
	free(w);

	/* a data size far beyond the file: what is there is read */
	w = wav(1, 1, 16000, 16, s, sizeof s, 0xfffffff0u, &n);
	x = load_mem(w, n, 16000, &size, &info);
	assert_int_equal(size, 64);
	free(x);
	free(w);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_jfk_passthrough), cmocka_unit_test(test_mixdown),
		cmocka_unit_test(test_resample_sine),   cmocka_unit_test(test_blocks),
		cmocka_unit_test(test_corpus),          cmocka_unit_test(test_pipes),
		cmocka_unit_test(test_errors),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
