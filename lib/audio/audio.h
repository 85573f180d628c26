/* audio.h - audio input for the speech models: any file libsndfile reads
 * (WAV of every sample format, FLAC, Ogg/Vorbis, Opus, MP3 where the
 * installed libsndfile decodes it), from a path or from stdin ("-"), mixed
 * down to mono and resampled (libsamplerate, best quality) to the rate the
 * model wants, as f32 samples.
 *
 * Reading is in blocks: a consumer that works in windows (VAD, Whisper's
 * 30 s chunks) keeps memory bounded for hours of audio. Errors name the
 * reason in one line (the caller prefixes the path): unreadable or
 * unsupported file, empty file, zero channels, an absurd header.
 *
 * A pipe (stdin, a FIFO) cannot be seeked, which libsndfile needs for most
 * headers: it is read whole first, into memory up to 8 MiB and into an
 * unlinked temporary file (tmpfile(3)) beyond that, so memory stays
 * bounded for long inputs too.
 *
 * Samples: integer formats are scaled to [-1, 1) (16-bit: x / 32768, as
 * libsndfile and whisper.cpp's reader do); the mono sample is the mean of
 * the channels; a NaN sample becomes 0 and samples are clamped to
 * [-1000, 1000] (a float file may hold anything; far beyond full scale, but
 * no later sum can overflow). The rate conversion is libsamplerate's
 * SRC_SINC_BEST_QUALITY, time-aligned (no added delay); with equal rates
 * the samples pass unchanged. */
#ifndef TERN_AUDIO_H
#define TERN_AUDIO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/core/error.h"

struct tern_audio; /* an open source */

struct tern_audio_info {
	int src_rate;      /* the file's sample rate, Hz */
	int src_channels;
	int64_t src_frames; /* frames in the file at src_rate; -1 when the file does not say */
	int rate;          /* the rate samples are delivered at */
	char format[64];   /* "WAV (PCM 16-bit)", "FLAC (PCM 24-bit)", ... */
};

/* Open path ("-": standard input) for reading mono f32 at rate Hz.
 * Errors: TERN_EIO (cannot open/read), TERN_EFORMAT (not audio libsndfile
 * can decode, empty, zero channels, absurd header), TERN_EUNSUPPORTED,
 * TERN_EINVAL (rate out of 1000..384000), TERN_ENOMEM. */
int tern_audio_open(struct tern_audio **out, const char *path, int rate, tern_err *e);
/* The same from an open descriptor (not closed; a pipe is read to its end
 * before this returns), and from size bytes in memory (not copied: they
 * must outlive the source; the fuzz target's entry). */
int tern_audio_open_fd(struct tern_audio **out, int fd, int rate, tern_err *e);
int tern_audio_open_mem(struct tern_audio **out, const void *data, size_t size, int rate, tern_err *e);
const struct tern_audio_info *tern_audio_info(const struct tern_audio *a);

/* Read up to n samples into dst; *got is how many (fewer than n only at
 * the end, 0 once it is reached). Errors: TERN_EFORMAT (the data cannot be
 * decoded past some point: a truncated or corrupt file). */
int tern_audio_read(struct tern_audio *a, float *dst, size_t n, size_t *got, tern_err *e);
void tern_audio_close(struct tern_audio *a);

/* The whole file at once (tests, short clips): *out malloc'd, *n samples.
 * TERN_ERANGE when it would hold more than max_samples (0: no limit). */
int tern_audio_load(const char *path, int rate, size_t max_samples, float **out, size_t *n, tern_err *e);

#endif
