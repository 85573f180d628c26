/* vad.h - Silero voice activity detection (v5 and v6 layouts of
 * whisper.cpp's legacy ggml file) and the speech-timestamp algorithm that
 * turns its probabilities into segments, computed as whisper.cpp does.
 *
 * The model takes 16 kHz mono audio in windows of 512 samples and carries
 * an LSTM state from window to window; it returns one speech probability
 * per window. As in whisper.cpp (whisper_vad_detect_speech), each window
 * is taken on its own: it is reflection-padded by 64 samples on both sides
 * inside the model, and no context from the window before is prepended
 * (Silero's Python wrapper prepends 64 samples; the file's n_context says
 * so, but whisper.cpp does not use it, and neither do we). The weights are
 * copied once into f32 panels (1.25 MB) and the file is closed. */
#ifndef TERN_VAD_H
#define TERN_VAD_H

#include <stddef.h>
#include <stdint.h>

#include "lib/core/error.h"

#define TERN_VAD_RATE 16000
#define TERN_VAD_WINDOW 512

struct tern_silero; /* the model, immutable once loaded */
struct tern_vad;    /* one stream's state (LSTM state, context samples) */

/* Load a Silero ggml file. Errors: TERN_EIO, TERN_EFORMAT (not a Silero
 * file, a missing or mis-shaped tensor, named), TERN_EUNSUPPORTED. */
int tern_silero_load(struct tern_silero **out, const char *path, tern_err *e);
/* The same from a file's bytes in memory (not kept after the call). */
int tern_silero_load_mem(struct tern_silero **out, const void *buf, size_t size, tern_err *e);
void tern_silero_free(struct tern_silero *m);
const char *tern_silero_version(const struct tern_silero *m); /* "v5", "v6" */

int tern_vad_new(struct tern_vad **out, const struct tern_silero *m, tern_err *e);
void tern_vad_reset(struct tern_vad *v);   /* a new stream: zero state and context */
void tern_vad_free(struct tern_vad *v);

/* The speech probability of the next window of 512 samples (streaming:
 * the state carries on from the window before). */
float tern_vad_window(struct tern_vad *v, const float window[TERN_VAD_WINDOW]);

/* Probabilities of n samples from the start of a stream (resets v):
 * ceil(n / 512) windows into probs, the last one zero-padded, as
 * whisper.cpp does. The same values as tern_vad_window window after
 * window up to the order of float sums (the windows are batched here).
 * Errors: TERN_EINVAL (n > 0 without pcm or probs). */
int tern_vad_probs(struct tern_vad *v, const float *pcm, size_t n, float *probs, tern_err *e);

/* The segment parameters, spelled and defaulted as whisper.cpp's. */
struct tern_vad_params {
	float threshold;          /* 0.5; the negative threshold is threshold - 0.15 */
	int32_t min_speech_ms;    /* 250 */
	int32_t min_silence_ms;   /* 100 */
	float max_speech_s;       /* no limit: FLT_MAX */
	int32_t speech_pad_ms;    /* 30 */
	float samples_overlap;    /* 0.1 s, used when segments are cut out for transcription */
};
void tern_vad_params_default(struct tern_vad_params *p);

struct tern_vad_segment {
	int64_t start, end; /* samples at 16 kHz, end exclusive */
};

/* Segments from probs[n_probs] of a stream of n_samples samples: *out
 * malloc'd (NULL when none), *n_out of them, in order, not overlapping.
 * whisper.cpp's algorithm (whisper_vad_segments_from_probs), step for
 * step: it measures the audio as n_probs * 512 samples (the zero-padded
 * last window included), so the end of a segment that runs to the end of
 * the audio may lie up to 511 samples past n_samples: clamp when cutting.
 * n_samples must be one that gives n_probs windows: (n_probs - 1) * 512 <
 * n_samples <= n_probs * 512 (0 with no probabilities).
 * Errors: TERN_EINVAL for parameters out of range (a threshold outside
 * [0, 1], a negative or NaN duration, an n_samples that does not match),
 * TERN_ENOMEM. */
int tern_vad_segments(const float *probs, size_t n_probs, size_t n_samples, const struct tern_vad_params *p,
		      struct tern_vad_segment **out, size_t *n_out, tern_err *e);

/* whisper.cpp's conversions between samples and centiseconds (it reports
 * segments in centiseconds, rounded half up: samples / 160 + 0.5). */
int64_t tern_vad_samples_to_cs(int64_t samples);
int64_t tern_vad_cs_to_samples(int64_t cs);

#endif
