/* whisper_jfk.h - jfk.wav made ready for whisper_full_run with a model: the
 * samples, their spectrogram, a 2-thread CPU backend and the decoder state,
 * as the whisper tests (test_whisper_full, test_whisper_synth) share them.
 * Include after cmocka.h and tests/testutil.h. */
#ifndef TERN_TESTS_WHISPER_JFK_H
#define TERN_TESTS_WHISPER_JFK_H

#include <stdio.h>
#include <stdlib.h>

#include "lib/cpu/backend.h"
#include "lib/speech/mel.h"
#include "lib/speech/whisper.h"
#include "lib/speech/whisper_full.h"

struct jfk_run {
	float *pcm;
	size_t n;
	struct tern_mel *mel;
	float *spec;
	size_t n_len;
	struct tern_backend *be;
	struct whisper_full *w;
	struct whisper_mel_mem mm;
	struct whisper_mel_src src; /* points into mm: j must not move while it is used */
};

/* caps_off: capabilities masked off the backend before the decoder state
 * is made (TERN_BACKEND_GGML_NUMERICS: the plain f32 ops a GPU runs) */
static inline void jfk_open_caps(struct jfk_run *j, struct whisper_model *m, unsigned caps_off)
{
	tern_err e = {0};
	char path[512];
	*j = (struct jfk_run){0};
	snprintf(path, sizeof(path), "%s/audio/jfk.wav", test_data_dir());
	j->pcm = test_read_audio(path, &j->n, NULL);
	assert_non_null(j->pcm);
	assert_int_equal(tern_mel_new(&j->mel, m->n_mel_filters, m->n_fft_bins, m->mel_filters, &e), 0);
	assert_int_equal(tern_mel_compute(j->mel, j->pcm, j->n, &j->spec, &j->n_len, &e), 0);
	struct cpu_backend_opts o = {.n_threads = 2, .max_tokens = 512};
	assert_int_equal(cpu_backend_new(&j->be, &o, &e), 0);
	j->be->caps &= ~caps_off;
	if (whisper_full_new(&j->w, m, j->be, &e))
		fail_msg("%s", e.msg);
	j->mm = (struct whisper_mel_mem){j->spec, j->n_len};
	j->src = whisper_mel_src_mem(&j->mm, whisper_n_len_org(j->n));
}

static inline void jfk_open(struct jfk_run *j, struct whisper_model *m)
{
	jfk_open_caps(j, m, 0);
}

static inline void jfk_close(struct jfk_run *j)
{
	whisper_full_free(j->w);
	tern_backend_free(j->be);
	tern_mel_free(j->mel);
	free(j->spec);
	free(j->pcm);
}

#endif
