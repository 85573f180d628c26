/* mel_spool.h - the spectrogram of audio of any length in bounded memory,
 * for whisper_full_run (a struct whisper_mel_src).
 *
 * Samples are pushed block by block as they are decoded; every frame whose
 * 400 samples have arrived is computed (tern_mel_log over the held tail of
 * the signal) and written, raw, to a temporary file; at the end the frames
 * of the padding follow and the maximum is known. Windows are then read
 * back and normalised on demand. Memory: the tail of the signal (one block
 * plus 480 samples) and one window (n_mel x 3000 floats); the file takes
 * 32 kB per second of audio at 80 filters. The values are those
 * tern_mel_compute gives for the whole signal: a frame is computed from
 * the same samples by the same code. */
#ifndef TERN_MEL_SPOOL_H
#define TERN_MEL_SPOOL_H

#include <stddef.h>
#include <stdint.h>

#include "lib/core/error.h"
#include "lib/speech/mel.h"
#include "lib/speech/whisper_full.h"

struct tern_mel_spool;

/* A spool over mel (borrowed) handing out windows of n_win frames (2
 * n_audio_ctx for Whisper: 3000). Errors: TERN_EIO (no temporary file),
 * TERN_ENOMEM. */
int tern_mel_spool_new(struct tern_mel_spool **out, struct tern_mel *mel, size_t n_win, tern_err *e);
void tern_mel_spool_free(struct tern_mel_spool *s);

/* Append pcm[n] (16 kHz mono). Errors: TERN_EIO, TERN_ENOMEM, TERN_EINVAL
 * after tern_mel_spool_finish. */
int tern_mel_spool_push(struct tern_mel_spool *s, const float *pcm, size_t n, tern_err *e);
/* The end of the signal: the last frames and the padding's. */
int tern_mel_spool_finish(struct tern_mel_spool *s, tern_err *e);

/* Samples pushed; frames written (tern_mel_n_frames of the samples once
 * finished). */
size_t tern_mel_spool_samples(const struct tern_mel_spool *s);
size_t tern_mel_spool_frames(const struct tern_mel_spool *s);

/* The source of a finished spool: windows from the file, normalised with
 * the maximum of the whole spectrogram; frames past its end are zeros (as
 * whisper_encode pads them). */
struct whisper_mel_src tern_mel_spool_src(struct tern_mel_spool *s);

#endif
