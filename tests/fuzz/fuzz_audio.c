/* fuzz_audio.c - libFuzzer target for lib/audio: the input is the bytes of
 * an audio file, opened from memory (libsndfile's virtual I/O) and read to
 * its end at 16 kHz, so that every decoder libsndfile picks, the mixdown
 * and the resampler see hostile data. Opening may fail (with a one-line
 * message); reading must end, by the end of the data or an error; nothing
 * may crash, leak or read out of bounds. The samples handed out must be
 * finite and within the documented clamp. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lib/audio/audio.h"

/* Enough for a minute of audio; beyond that a file only costs time. */
#define MAX_SAMPLES (60 * 16000)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
const char *__lsan_default_suppressions(void);

/* Debian 12's libsndfile 1.2.0 leaks the vorbis_info of an Ogg/Vorbis
 * stream whose headers are cut short (its open fails before clearing it):
 * not ours to fix, and only that allocation site is excused. */
const char *__lsan_default_suppressions(void)
{
	return "leak:vorbis_info_init\n";
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct tern_audio *a = NULL;
	tern_err e = {0};
	if (tern_audio_open_mem(&a, data, size, 16000, &e)) {
		if (a || !e.msg[0] || strchr(e.msg, '\n'))
			abort();
		return 0;
	}
	const struct tern_audio_info *in = tern_audio_info(a);
	if (in->src_channels < 1 || in->rate != 16000 || !in->format[0])
		abort();
	static float buf[4096];
	size_t total = 0, got;
	while (total < MAX_SAMPLES) {
		int rc = tern_audio_read(a, buf, 4096, &got, &e);
		if (rc) {
			if (!e.msg[0])
				abort();
			break;
		}
		if (got == 0)
			break;
		for (size_t i = 0; i < got; i++)
			if (!isfinite(buf[i]) || fabsf(buf[i]) > 1000.0f)
				abort();
		total += got;
	}
	tern_audio_close(a);
	return 0;
}
