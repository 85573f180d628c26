/* audio_to_f32.c - decode an audio file with lib/audio (mono, converted to
 * RATE Hz, default 16000) and write the samples to stdout as raw
 * little-endian f32: what tern-vad feeds the model, for reference tools
 * that read raw samples (scripts/gen_vad_ref.sh).
 *
 *   cc -O2 -std=c11 -I. scripts/audio_to_f32.c build/release/libtern.a \
 *      $(pkg-config --libs sndfile samplerate) -lm -o /tmp/audio_to_f32 */
#include <stdio.h>
#include <stdlib.h>

#include "lib/audio/audio.h"

int main(int argc, char **argv)
{
	if (argc < 2 || argc > 3) {
		fprintf(stderr, "usage: audio_to_f32 FILE [RATE] > FILE.f32\n");
		return 2;
	}
	float *x;
	size_t n;
	tern_err e = {0};
	if (tern_audio_load(argv[1], argc == 3 ? atoi(argv[2]) : 16000, 0, &x, &n, &e)) {
		fprintf(stderr, "audio_to_f32: %s: %s\n", argv[1], e.msg);
		return 1;
	}
	int ok = fwrite(x, sizeof *x, n, stdout) == n && fflush(stdout) == 0;
	free(x);
	return ok ? 0 : 1;
}
