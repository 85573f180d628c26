/* gen_audio_corpus.c - the small audio corpus of tests/data/audio/, made
 * from jfk.wav with libsndfile (writing) and libsamplerate (rate changes),
 * deterministic: the noise comes from a fixed-seed integer generator. The
 * lossy encoders (Vorbis, Opus, MP3) give the same samples on every run;
 * libsndfile gives each Ogg stream a random serial number, so the .ogg and
 * .opus bytes differ between runs, their decoded audio does not.
 *
 *   cc -O2 -std=c11 scripts/gen_audio_corpus.c $(pkg-config --cflags --libs sndfile samplerate) -lm \
 *      -o /tmp/gen_audio_corpus && /tmp/gen_audio_corpus ../shared/data/audio/jfk.wav tests/data/audio
 *
 * What each file is for: tests/data/audio/README.md. */
#define _GNU_SOURCE /* M_PI */
#include <math.h>
#include <samplerate.h>
#include <sndfile.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void die(const char *what, const char *detail)
{
	fprintf(stderr, "gen_audio_corpus: %s: %s\n", what, detail);
	exit(1);
}

static float *xmalloc(size_t n)
{
	float *p = calloc(n ? n : 1, sizeof *p);
	if (!p)
		die("out of memory", "");
	return p;
}

/* splitmix64: a fixed sequence on every machine */
static uint64_t rng_state = 0x7e57a0d10ULL;
static double uniform(void) /* [-1, 1) */
{
	uint64_t z = (rng_state += 0x9e3779b97f4a7c15ULL);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	z ^= z >> 31;
	return (double)(z >> 11) / (double)(1ULL << 52) - 1.0;
}

static float *resample(const float *x, size_t n, int from, int to, size_t *n_out)
{
	double ratio = (double)to / from;
	size_t cap = (size_t)ceil(n * ratio) + 16;
	float *y = xmalloc(cap);
	SRC_DATA d = {.data_in = x, .input_frames = (long)n, .data_out = y, .output_frames = (long)cap,
		      .src_ratio = ratio, .end_of_input = 1};
	int err = src_simple(&d, SRC_SINC_BEST_QUALITY, 1);
	if (err)
		die("resample", src_strerror(err));
	*n_out = (size_t)d.output_frames_gen;
	return y;
}

/* Write frames of ch interleaved channels. */
static void write_file(const char *dir, const char *name, int format, int rate, int ch, const float *x,
		       size_t frames, double level)
{
	char path[1024];
	snprintf(path, sizeof path, "%s/%s", dir, name);
	SF_INFO info = {.samplerate = rate, .channels = ch, .format = format};
	SNDFILE *f = sf_open(path, SFM_WRITE, &info);
	if (!f)
		die(path, sf_strerror(NULL));
	/* lossy formats: libsndfile's compression level (0 best quality .. 1 smallest) */
	if (level >= 0 && !sf_command(f, SFC_SET_COMPRESSION_LEVEL, &level, sizeof level))
		die(path, "cannot set the compression level");
	/* integer formats: clip instead of wrapping */
	sf_command(f, SFC_SET_CLIPPING, NULL, SF_TRUE);
	if (sf_writef_float(f, x, (sf_count_t)frames) != (sf_count_t)frames)
		die(path, sf_strerror(f));
	sf_close(f);
	printf("%s: %zu frames at %d Hz, %d channel(s)\n", path, frames, rate, ch);
}

int main(int argc, char **argv)
{
	if (argc != 3)
		die("usage", "gen_audio_corpus JFK.wav OUTDIR");
	SF_INFO in = {0};
	SNDFILE *f = sf_open(argv[1], SFM_READ, &in);
	if (!f)
		die(argv[1], sf_strerror(NULL));
	if (in.samplerate != 16000 || in.channels != 1)
		die(argv[1], "expected 16 kHz mono");
	size_t n = (size_t)in.frames;
	float *jfk = xmalloc(n);
	if (sf_readf_float(f, jfk, (sf_count_t)n) != (sf_count_t)n)
		die(argv[1], "short read");
	sf_close(f);
	const char *dir = argv[2];

	/* jfk at 44.1 kHz, stereo (left 0.8x, right 0.6x: the mixdown is 0.7x), Ogg/Vorbis */
	size_t n44;
	float *j44 = resample(jfk, n, 16000, 44100, &n44);
	float *st = xmalloc(2 * n44);
	for (size_t i = 0; i < n44; i++)
		st[2 * i] = 0.8f * j44[i], st[2 * i + 1] = 0.6f * j44[i];
	write_file(dir, "jfk_44k_stereo.ogg", SF_FORMAT_OGG | SF_FORMAT_VORBIS, 44100, 2, st, n44, 1.0);

	/* the first 5 s of jfk (two segments) at 8 kHz, unsigned 8-bit WAV */
	size_t n8;
	float *j8 = resample(jfk, 80000, 16000, 8000, &n8);
	write_file(dir, "jfk5_8k_u8.wav", SF_FORMAT_WAV | SF_FORMAT_PCM_U8, 8000, 1, j8, n8, -1);

	/* jfk as Opus (16 kHz mono) */
	write_file(dir, "jfk.opus", SF_FORMAT_OGG | SF_FORMAT_OPUS, 16000, 1, jfk, n, 1.0);

	/* jfk + white noise (uniform, rms 0.01: about 21 dB below the speech), MP3 */
	float *noisy = xmalloc(n);
	for (size_t i = 0; i < n; i++)
		noisy[i] = jfk[i] + (float)(0.01 * sqrt(3.0) * uniform());
	write_file(dir, "jfk_noise.mp3", SF_FORMAT_MPEG | SF_FORMAT_MPEG_LAYER_III, 16000, 1, noisy, n, 0.8);

	/* the first 2.6 s of jfk (its first segment, 0.32-2.27 s) between 1.5 s of
	 * silence on each side, 16 kHz FLAC: lossless, no conversion */
	size_t head = 41600, pad = 24000, np = head + 2 * pad;
	float *padded = xmalloc(np);
	memcpy(padded + pad, jfk, head * sizeof *jfk);
	write_file(dir, "jfk_pad.flac", SF_FORMAT_FLAC | SF_FORMAT_PCM_16, 16000, 1, padded, np, -1);

	/* 3 s of silence; 1 s of white noise at rms 0.1 (16 kHz FLAC) */
	float *sil = xmalloc(48000);
	write_file(dir, "silence.flac", SF_FORMAT_FLAC | SF_FORMAT_PCM_16, 16000, 1, sil, 48000, -1);
	float *noise = xmalloc(16000);
	for (size_t i = 0; i < 16000; i++)
		noise[i] = (float)(0.1 * sqrt(3.0) * uniform());
	write_file(dir, "noise.flac", SF_FORMAT_FLAC | SF_FORMAT_PCM_16, 16000, 1, noise, 16000, -1);

	/* tones for the sample formats: 0.2 s of 440 Hz at amplitude 0.5, in
	 * 24-bit stereo at 22.05 kHz (the right channel at half: the mixdown has
	 * amplitude 0.375) and 0.25 s in float 32-bit at 24 kHz */
	float *t24 = xmalloc(2 * 4410);
	for (size_t i = 0; i < 4410; i++) {
		float v = (float)(0.5 * sin(2 * M_PI * 440.0 * (double)i / 22050));
		t24[2 * i] = v, t24[2 * i + 1] = 0.5f * v;
	}
	write_file(dir, "tone_24bit_stereo.wav", SF_FORMAT_WAV | SF_FORMAT_PCM_24, 22050, 2, t24, 4410, -1);
	float *tf = xmalloc(6000);
	for (size_t i = 0; i < 6000; i++)
		tf[i] = (float)(0.5 * sin(2 * M_PI * 440.0 * (double)i / 24000));
	write_file(dir, "tone_float.wav", SF_FORMAT_WAV | SF_FORMAT_FLOAT, 24000, 1, tf, 6000, -1);

	free(jfk), free(j44), free(st), free(j8), free(noisy), free(padded), free(sil), free(noise), free(t24), free(tf);
	return 0;
}
