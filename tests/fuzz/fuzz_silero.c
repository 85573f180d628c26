/* fuzz_silero.c - libFuzzer target for the Silero loader: any bytes either
 * load (and then one window runs) or fail with a one-line message and no
 * model. Seed: tests/fuzz/corpus/silero (a cut of the real file, whose
 * hyperparameters and tensor list the fuzzer mutates). */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "lib/speech/vad.h"

static volatile float sink;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct tern_silero *m = NULL;
	tern_err e = {0};
	if (tern_silero_load_mem(&m, data, size, &e) != 0) {
		if (m || !e.msg[0] || memchr(e.msg, '\n', strlen(e.msg)))
			__builtin_trap();
		return 0;
	}
	struct tern_vad *v = NULL;
	if (tern_vad_new(&v, m, &e) == 0) {
		float w[TERN_VAD_WINDOW];
		for (int i = 0; i < TERN_VAD_WINDOW; i++)
			w[i] = (float)((i * 37) % 101 - 50) / 64.0f;
		sink = tern_vad_window(v, w);
		tern_vad_free(v);
	}
	tern_silero_free(m);
	return 0;
}
