/* mel_spool.c - the spectrogram in blocks through a temporary file
 * (mel_spool.h).
 *
 * The held signal starts at sample s0, a multiple of the hop, so that
 * frame f of the whole signal is frame f - s0 / 160 of the held part, and
 * tern_mel_log computes it from the same 400 samples. A frame is computed
 * once all its samples are held (its last at f * 160 + 200); the front
 * reflection is only read while s0 is 0. After the frames, the held part
 * is trimmed to start two frames (320 >= 200 samples) before the next. */
#include "lib/speech/mel_spool.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define HALF (TERN_MEL_N_FFT / 2) /* samples of a frame on each side of its centre */
#define BATCH 256		  /* frames computed at once */

struct tern_mel_spool {
	struct tern_mel *mel;
	uint32_t n_mel;
	size_t n_win;
	FILE *f;	  /* raw frames, frame-major: [frame][n_mel] */
	float *held;	  /* [cap] the signal from sample s0 */
	size_t s0, len, cap, n_samples;
	size_t f_next;	  /* the first frame not written */
	bool finished;
	float vmax;
	float *batch, *row; /* [n_mel][BATCH], [BATCH][n_mel] */
	float *win;	    /* [n_mel][n_win] */
};

void tern_mel_spool_free(struct tern_mel_spool *s)
{
	if (!s)
		return;
	if (s->f)
		fclose(s->f);
	free(s->held);
	free(s->batch);
	free(s->row);
	free(s->win);
	free(s);
}

int tern_mel_spool_new(struct tern_mel_spool **out, struct tern_mel *mel, size_t n_win, tern_err *e)
{
	*out = NULL;
	struct tern_mel_spool *s = calloc(1, sizeof(*s));
	if (!s)
		return tern_errf(e, TERN_ENOMEM, "out of memory for the spectrogram");
	s->mel = mel;
	s->n_mel = tern_mel_n_mel(mel);
	s->n_win = n_win;
	s->vmax = -10.0f; /* log10 of the floor */
	s->batch = malloc(sizeof(float) * s->n_mel * BATCH);
	s->row = malloc(sizeof(float) * s->n_mel * BATCH);
	s->win = malloc(sizeof(float) * s->n_mel * (n_win ? n_win : 1));
	if (!s->batch || !s->row || !s->win) {
		tern_mel_spool_free(s);
		return tern_errf(e, TERN_ENOMEM, "out of memory for the spectrogram");
	}
	s->f = tmpfile();
	if (!s->f) {
		tern_mel_spool_free(s);
		return tern_errf(e, TERN_EIO, "cannot create a temporary file for the spectrogram");
	}
	*out = s;
	return 0;
}

/* frames [f_next, f_end) from the held signal, whose own length is n */
static int compute(struct tern_mel_spool *s, size_t f_end, size_t n, tern_err *e)
{
	const size_t base = s->s0 / TERN_MEL_HOP;
	while (s->f_next < f_end) {
		size_t nf = f_end - s->f_next < BATCH ? f_end - s->f_next : BATCH;
		float v = tern_mel_log(s->mel, s->held, n, s->f_next - base, nf, s->batch, nf);
		s->vmax = v > s->vmax ? v : s->vmax;
		for (size_t k = 0; k < nf; k++)
			for (uint32_t j = 0; j < s->n_mel; j++)
				s->row[k * s->n_mel + j] = s->batch[(size_t)j * nf + k];
		if (fwrite(s->row, sizeof(float) * s->n_mel, nf, s->f) != nf)
			return tern_errf(e, TERN_EIO, "cannot write the spectrogram's temporary file");
		s->f_next += nf;
	}
	return 0;
}

int tern_mel_spool_push(struct tern_mel_spool *s, const float *pcm, size_t n, tern_err *e)
{
	if (s->finished)
		return tern_errf(e, TERN_EINVAL, "samples pushed after the end of the spectrogram");
	if (s->len + n > s->cap) {
		size_t cap = (s->len + n) * 2;
		float *h = realloc(s->held, cap * sizeof(float));
		if (!h)
			return tern_errf(e, TERN_ENOMEM, "out of memory for %zu samples", cap);
		s->held = h;
		s->cap = cap;
	}
	memcpy(s->held + s->len, pcm, n * sizeof(float));
	s->len += n;
	s->n_samples += n;
	/* frames whose samples are all held: f * 160 + 200 <= s0 + len, with
	 * one more so that the first frames' reflection (x[200] .. x[1]) is
	 * whole too */
	const size_t end = s->s0 + s->len;
	if (end < HALF + 1)
		return 0;
	size_t f_end = (end - HALF - 1) / TERN_MEL_HOP + 1;
	if (f_end > s->f_next) {
		int rc = compute(s, f_end, s->len, e);
		if (rc)
			return rc;
	}
	/* keep from two frames before the next one */
	size_t keep = s->f_next >= 2 ? (s->f_next - 2) * TERN_MEL_HOP : 0;
	if (keep > s->s0) {
		size_t drop = keep - s->s0;
		memmove(s->held, s->held + drop, (s->len - drop) * sizeof(float));
		s->len -= drop;
		s->s0 = keep;
	}
	return 0;
}

int tern_mel_spool_finish(struct tern_mel_spool *s, tern_err *e)
{
	if (s->finished)
		return 0;
	int rc = compute(s, tern_mel_n_frames(s->n_samples), s->len, e);
	if (!rc && fflush(s->f))
		rc = tern_errf(e, TERN_EIO, "cannot write the spectrogram's temporary file");
	s->finished = !rc;
	free(s->held);
	s->held = NULL;
	s->len = s->cap = 0;
	return rc;
}

size_t tern_mel_spool_samples(const struct tern_mel_spool *s)
{
	return s->n_samples;
}

size_t tern_mel_spool_frames(const struct tern_mel_spool *s)
{
	return s->f_next;
}

static int spool_window(void *ctx, int64_t f0, const float **mel, size_t *stride, int64_t *first, tern_err *e)
{
	struct tern_mel_spool *s = ctx;
	if (!s->finished)
		return tern_errf(e, TERN_EINVAL, "the spectrogram is not finished");
	const size_t nw = s->n_win, nm = s->n_mel;
	size_t have = 0;
	if (f0 >= 0 && (size_t)f0 < s->f_next) {
		have = s->f_next - (size_t)f0 < nw ? s->f_next - (size_t)f0 : nw;
		if (fseeko(s->f, (off_t)((size_t)f0 * nm * sizeof(float)), SEEK_SET))
			return tern_errf(e, TERN_EIO, "cannot read the spectrogram's temporary file");
	}
	for (size_t k = 0; k < have; k += BATCH) {
		size_t nf = have - k < BATCH ? have - k : BATCH;
		if (fread(s->row, sizeof(float) * nm, nf, s->f) != nf)
			return tern_errf(e, TERN_EIO, "cannot read the spectrogram's temporary file");
		tern_mel_normalize(s->row, nf * nm, s->vmax);
		for (size_t i = 0; i < nf; i++)
			for (size_t j = 0; j < nm; j++)
				s->win[j * nw + k + i] = s->row[i * nm + j];
	}
	for (size_t j = 0; j < nm; j++)
		for (size_t i = have; i < nw; i++)
			s->win[j * nw + i] = 0.0f;
	*mel = s->win;
	*stride = nw;
	*first = f0;
	return 0;
}

struct whisper_mel_src tern_mel_spool_src(struct tern_mel_spool *s)
{
	return (struct whisper_mel_src){
		.window = spool_window, .ctx = s, .n_len_org = whisper_n_len_org(s->n_samples)};
}
