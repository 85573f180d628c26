/* mel.h - Whisper's log-mel spectrogram, the front end of every Whisper
 * model, computed as whisper.cpp computes it (which follows openai-whisper's
 * audio.py):
 *
 *   - the 16 kHz signal gets 200 samples reflected in front of it (x[200] ..
 *     x[1]) and 30 s plus 200 samples of zeros behind it;
 *   - frames of 400 samples every 160 (n_len = (n + 480000) / 160 frames; the
 *     frames that lie wholly in the zeros are log10(1e-10), computed once);
 *   - a periodic Hann window, a 400-point real FFT (FFTW3, single
 *     precision), the power |X|^2 of the 201 bins;
 *   - the file's filter bank ([n_mel][201]), summed in double, log10 of the
 *     sum clamped at 1e-10;
 *   - over the whole spectrogram: values below (max - 8) raised to it, then
 *     (v + 4) / 4.
 *
 * The last step needs the maximum of everything computed, so it is split
 * out: tern_mel_log computes raw log10 frames for any frame range (a long
 * file can be done in blocks), tern_mel_normalize applies the clamp and the
 * scaling given the maximum. tern_mel_compute does the whole thing for a
 * signal held in memory. */
#ifndef TERN_MEL_H
#define TERN_MEL_H

#include <stddef.h>
#include <stdint.h>

#include "lib/core/error.h"

#define TERN_MEL_RATE 16000
#define TERN_MEL_N_FFT 400 /* samples per frame */
#define TERN_MEL_BINS 201  /* 1 + N_FFT / 2 */
#define TERN_MEL_HOP 160   /* samples between frames */
#define TERN_MEL_PAD_S 30  /* seconds of zeros after the signal */

struct tern_mel; /* filter bank, window and FFT plan; not shared between threads */

/* A front end for n_mel filters of TERN_MEL_BINS bins each, filters being
 * little-endian f32 [n_mel][n_bins] (possibly unaligned, as a legacy file
 * stores them; copied). Errors: TERN_EINVAL (n_bins is not 201, n_mel not in
 * 1..512, a filter value that is not finite or negative), TERN_ENOMEM. */
int tern_mel_new(struct tern_mel **out, uint32_t n_mel, uint32_t n_bins, const void *filters, tern_err *e);
void tern_mel_free(struct tern_mel *m);
uint32_t tern_mel_n_mel(const struct tern_mel *m);

/* Frames of a signal of n samples: (n + 480000) / 160. */
size_t tern_mel_n_frames(size_t n);

/* Raw log10 mel of frames [f0, f0 + nf) of pcm[n] (16 kHz), into
 * out[j * stride + (f - f0)] for filter j. Returns the largest value
 * written (-10 when none is larger). stride >= nf. */
float tern_mel_log(struct tern_mel *m, const float *pcm, size_t n, size_t f0, size_t nf, float *out, size_t stride);

/* Clamp at (max - 8) and scale ((v + 4) / 4), in place over count values. */
void tern_mel_normalize(float *v, size_t count, float max);

/* The whole spectrogram of pcm[n]: *out malloc'd [n_mel][*n_len],
 * normalised. Errors: TERN_ERANGE when n is too long for one buffer (the
 * caller should work in blocks), TERN_ENOMEM. */
int tern_mel_compute(struct tern_mel *m, const float *pcm, size_t n, float **out, size_t *n_len, tern_err *e);

#endif
