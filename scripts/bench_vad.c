/* bench_vad.c - how fast is the Silero VAD (lib/speech/vad.h)? On one WAV
 * file (16 kHz mono, read with libsndfile) it times, round after round,
 * the model's load, tern_vad_probs over the whole file (the batched path)
 * and tern_vad_window window after window (the streaming path), and prints
 * the medians and minima, per window too, and the segments (whisper.cpp's defaults,
 * in centiseconds) for a look at the result. One thread: the VAD has no
 * other. Compare with whisper.cpp side by side, e.g. its example
 * whisper-vad-speech-segments -t 2 (its "vad time" line).
 *
 *   cc -O2 -std=c11 -D_GNU_SOURCE -I. scripts/bench_vad.c build/release/libtern.a -lsndfile -lpthread -lm -o /tmp/bench_vad
 *   /tmp/bench_vad MODEL WAV [ROUNDS] [ISA]      defaults: 21 rounds, the best ISA */
#include <sndfile.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lib/speech/vad.h"
#include "quant/cpu.h"

static double now_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e3 + (double)t.tv_nsec * 1e-6;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* Sorts v; returns the median (the minimum is v[0] then). */
static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof *v, cmp);
	return v[n / 2];
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: %s MODEL WAV [ROUNDS] [ISA]\n", argv[0]);
		return 2;
	}
	int rounds = argc > 3 ? atoi(argv[3]) : 21;
	if (rounds < 1 || rounds > 1000)
		rounds = 21;
	if (argc > 4 && quant_cpu_force(argv[4])) {
		fprintf(stderr, "unknown or unsupported ISA %s\n", argv[4]);
		return 2;
	}
	SF_INFO info = {0};
	SNDFILE *f = sf_open(argv[2], SFM_READ, &info);
	if (!f || info.channels != 1 || info.samplerate != TERN_VAD_RATE) {
		fprintf(stderr, "%s: need a 16 kHz mono file\n", argv[2]);
		return 1;
	}
	size_t n = (size_t)info.frames, nw = (n + TERN_VAD_WINDOW - 1) / TERN_VAD_WINDOW;
	float *pcm = calloc(nw * TERN_VAD_WINDOW + 1, sizeof *pcm), *probs = malloc((nw + 1) * sizeof *probs);
	if (!pcm || !probs || sf_readf_float(f, pcm, info.frames) != info.frames) {
		fprintf(stderr, "%s: cannot read\n", argv[2]);
		return 1;
	}
	sf_close(f);

	double *t_load = malloc((size_t)rounds * sizeof(double)), *t_batch = malloc((size_t)rounds * sizeof(double)),
	       *t_stream = malloc((size_t)rounds * sizeof(double));
	tern_err e = {0};
	struct tern_silero *m = NULL;
	struct tern_vad *v = NULL;
	for (int r = 0; r < rounds; r++) {
		tern_silero_free(m);
		double t0 = now_ms();
		if (tern_silero_load(&m, argv[1], &e)) {
			fprintf(stderr, "%s: %s\n", argv[1], e.msg);
			return 1;
		}
		t_load[r] = now_ms() - t0;
	}
	if (tern_vad_new(&v, m, &e)) {
		fprintf(stderr, "%s\n", e.msg);
		return 1;
	}
	for (int r = 0; r < rounds; r++) {
		double t0 = now_ms();
		tern_vad_probs(v, pcm, n, probs, &e);
		double t1 = now_ms();
		tern_vad_reset(v);
		for (size_t w = 0; w < nw; w++) /* the zero-padded tail is in pcm already */
			(void)tern_vad_window(v, pcm + w * TERN_VAD_WINDOW);
		double t2 = now_ms();
		t_batch[r] = t1 - t0;
		t_stream[r] = t2 - t1;
	}
	double ml = median(t_load, rounds), mb = median(t_batch, rounds), ms = median(t_stream, rounds);
	printf("%s: %zu samples, %zu windows, %s, %d rounds: median (min)\n", argv[2], n, nw,
	       quant_isa_name(quant_isa()), rounds);
	printf("  load      %8.3f ms (%.3f)\n", ml, t_load[0]);
	printf("  batched   %8.3f ms (%.3f)  %6.2f us/window (%.2f)\n", mb, t_batch[0], mb * 1e3 / (double)nw,
	       t_batch[0] * 1e3 / (double)nw);
	printf("  streaming %8.3f ms (%.3f)  %6.2f us/window (%.2f)\n", ms, t_stream[0], ms * 1e3 / (double)nw,
	       t_stream[0] * 1e3 / (double)nw);

	struct tern_vad_params p;
	tern_vad_params_default(&p);
	struct tern_vad_segment *s = NULL;
	size_t ns = 0;
	tern_vad_probs(v, pcm, n, probs, &e);
	if (tern_vad_segments(probs, nw, n, &p, &s, &ns, &e) == 0)
		for (size_t i = 0; i < ns; i++)
			printf("  segment %zu: %lld - %lld cs\n", i, (long long)tern_vad_samples_to_cs(s[i].start),
			       (long long)tern_vad_samples_to_cs(s[i].end));
	free(s);
	tern_vad_free(v);
	tern_silero_free(m);
	free(pcm);
	free(probs);
	free(t_load);
	free(t_batch);
	free(t_stream);
	return 0;
}
