/* vad_segments.c - speech segments from per-window speech probabilities,
 * as whisper.cpp computes them (whisper_vad_segments_from_probs, itself
 * after Silero's get_speech_timestamps):
 *
 *   1. a segment starts at the first window with p >= threshold and ends
 *      once p < threshold - 0.15 has lasted min_silence; segments not
 *      longer than min_speech are dropped; a segment longer than
 *      max_speech is cut at the start of the last silence of more than
 *      98 ms inside it, or hard at the current window when there is none;
 *   2. neighbours less than 200 ms apart are merged, and what is still
 *      shorter than min_speech is dropped;
 *   3. padding: speech_pad before the first and after the last segment;
 *      between two segments, speech_pad on both sides, or half the gap
 *      each when the gap is shorter than two paddings.
 *
 * Every quirk is kept on purpose, so that the segments (and the
 * centiseconds printed from them) are whisper.cpp's: positions are window
 * starts (512 * i), the audio counts as n_probs * 512 samples, 0 doubles
 * as "none" for the split points, the maximum is truncated to whole
 * seconds, and a maximum shorter than one window plus the paddings means
 * no maximum. tests/test_vad_segments.c compares with whisper.cpp's own
 * output on hand-made sequences. */
#include "lib/speech/vad.h"

#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

void tern_vad_params_default(struct tern_vad_params *p)
{
	*p = (struct tern_vad_params){
		.threshold = 0.5f,
		.min_speech_ms = 250,
		.min_silence_ms = 100,
		.max_speech_s = FLT_MAX,
		.speech_pad_ms = 30,
		.samples_overlap = 0.1f,
	};
}

int64_t tern_vad_samples_to_cs(int64_t samples)
{
	return (int64_t)((double)samples / TERN_VAD_RATE * 100.0 + 0.5);
}

int64_t tern_vad_cs_to_samples(int64_t cs)
{
	return (int64_t)((double)cs / 100.0 * TERN_VAD_RATE + 0.5);
}

/* A growing array of segments. */
struct segs {
	struct tern_vad_segment *s;
	size_t n, cap;
};

static bool push(struct segs *v, int64_t start, int64_t end)
{
	if (v->n == v->cap) {
		size_t cap = v->cap ? 2 * v->cap : 16;
		struct tern_vad_segment *s = realloc(v->s, cap * sizeof *s);
		if (!s)
			return false;
		v->s = s;
		v->cap = cap;
	}
	v->s[v->n++] = (struct tern_vad_segment){start, end};
	return true;
}

static void erase(struct segs *v, size_t i)
{
	memmove(v->s + i, v->s + i + 1, (v->n - i - 1) * sizeof *v->s);
	v->n--;
}

static int check_params(const struct tern_vad_params *p, size_t n_probs, size_t n_samples, tern_err *e)
{
	if (!(p->threshold >= 0 && p->threshold <= 1))
		return tern_errf(e, TERN_EINVAL, "vad: threshold %g outside [0, 1]", (double)p->threshold);
	if (p->min_speech_ms < 0 || p->min_silence_ms < 0 || p->speech_pad_ms < 0)
		return tern_errf(e, TERN_EINVAL, "vad: negative duration (min speech %d ms, min silence %d ms, pad %d ms)",
				 (int)p->min_speech_ms, (int)p->min_silence_ms, (int)p->speech_pad_ms);
	if (!(p->max_speech_s >= 0))
		return tern_errf(e, TERN_EINVAL, "vad: max speech duration %g s", (double)p->max_speech_s);
	if (!(p->samples_overlap >= 0 && p->samples_overlap <= FLT_MAX))
		return tern_errf(e, TERN_EINVAL, "vad: samples overlap %g s", (double)p->samples_overlap);
	if (n_probs > (size_t)INT64_MAX / TERN_VAD_WINDOW - 1)
		return tern_errf(e, TERN_EINVAL, "vad: %zu probabilities", n_probs);
	if (n_samples > n_probs * TERN_VAD_WINDOW || (n_probs && n_samples <= (n_probs - 1) * TERN_VAD_WINDOW))
		return tern_errf(e, TERN_EINVAL, "vad: %zu samples do not make %zu windows of %d", n_samples, n_probs,
				 TERN_VAD_WINDOW);
	return 0;
}

/* The parameters in samples, with whisper.cpp's roundings. */
struct limits {
	int64_t min_silence, min_speech, pad, audio_len, max_speech, min_silence_at_max;
	float threshold, neg_threshold;
};

static struct limits limits_of(const struct tern_vad_params *p, size_t n_probs)
{
	const int64_t rate = TERN_VAD_RATE, win = TERN_VAD_WINDOW;
	struct limits l = {
		.min_silence = rate * p->min_silence_ms / 1000,
		.min_speech = rate * p->min_speech_ms / 1000,
		.pad = rate * p->speech_pad_ms / 1000,
		.audio_len = (int64_t)n_probs * win,
		/* whisper.cpp: "INT_MAX / 2" stands for no limit */
		.max_speech = INT_MAX / 2,
		/* a split point needs a silence of more than 98 ms (Silero's value) */
		.min_silence_at_max = rate * 98 / 1000,
		.threshold = p->threshold,
		.neg_threshold = p->threshold - 0.15f,
	};
	if (p->max_speech_s <= 100000.0f) {
		int64_t t = rate * (int64_t)p->max_speech_s - win - 2 * l.pad;
		if (t >= 0 && t <= INT_MAX)
			l.max_speech = t;
	}
	if (l.neg_threshold < 0.01f)
		l.neg_threshold = 0.01f;
	return l;
}

/* Stage 1: the segments of speech, window by window; false when out of
 * memory. */
static bool find_speech(const float *probs, size_t n_probs, const struct limits *l, struct segs *sp)
{
	const int64_t win = TERN_VAD_WINDOW;
	bool in_speech = false, has_curr = false;
	int64_t temp_end = 0, prev_end = 0, next_start = 0, curr_start = 0;
	bool oom = false;
	for (size_t i = 0; i < n_probs && !oom; i++) {
		float prob = probs[i];
		int64_t curr = win * (int64_t)i;

		if (prob >= l->threshold && temp_end) {
			temp_end = 0;
			if (next_start < prev_end)
				next_start = curr;
		}
		if (prob >= l->threshold && !in_speech) {
			in_speech = true;
			curr_start = curr;
			has_curr = true;
			continue;
		}
		if (in_speech && curr - curr_start > l->max_speech) {
			if (prev_end) {
				oom = !push(sp, curr_start, prev_end);
				has_curr = true;
				if (next_start < prev_end) { /* still in the silence that ended it */
					in_speech = false;
					has_curr = false;
				} else {
					curr_start = next_start;
				}
				prev_end = next_start = temp_end = 0;
			} else {
				oom = !push(sp, curr_start, curr);
				prev_end = next_start = temp_end = 0;
				in_speech = false;
				has_curr = false;
				continue;
			}
		}
		if (prob < l->neg_threshold && in_speech) {
			if (!temp_end)
				temp_end = curr;
			if (curr - temp_end > l->min_silence_at_max)
				prev_end = temp_end;
			if (curr - temp_end < l->min_silence)
				continue;
			if (temp_end - curr_start > l->min_speech)
				oom = !push(sp, curr_start, temp_end);
			prev_end = next_start = temp_end = 0;
			in_speech = false;
			has_curr = false;
		}
	}
	if (!oom && has_curr && l->audio_len - curr_start > l->min_speech)
		oom = !push(sp, curr_start, l->audio_len);
	return !oom;
}

/* Stage 2: neighbours less than 200 ms apart merged, then what is still
 * too short dropped. */
static void merge_close(struct segs *sp, int64_t min_speech)
{
	const int64_t max_merge_gap = TERN_VAD_RATE * 200 / 1000;
	for (size_t i = 0; i + 1 < sp->n;) {
		if (sp->s[i + 1].start - sp->s[i].end < max_merge_gap) {
			sp->s[i].end = sp->s[i + 1].end;
			erase(sp, i + 1);
		} else {
			i++;
		}
	}
	for (size_t i = 0; i < sp->n;) {
		if (sp->s[i].end - sp->s[i].start < min_speech)
			erase(sp, i);
		else
			i++;
	}
}

/* Stage 3: the padding, within the audio. */
static void pad_segments(struct segs *sp, int64_t pad, int64_t audio_len)
{
	for (size_t i = 0; i < sp->n; i++) {
		struct tern_vad_segment *s = &sp->s[i];
		if (i == 0)
			s->start = s->start > pad ? s->start - pad : 0;
		if (i + 1 < sp->n) {
			struct tern_vad_segment *nx = &sp->s[i + 1];
			int64_t gap = nx->start - s->end;
			if (gap < 2 * pad) {
				s->end += gap / 2;
				nx->start = nx->start > gap / 2 ? nx->start - gap / 2 : 0;
			} else {
				s->end = s->end + pad < audio_len ? s->end + pad : audio_len;
				nx->start = nx->start > pad ? nx->start - pad : 0;
			}
		} else {
			s->end = s->end + pad < audio_len ? s->end + pad : audio_len;
		}
	}
}

int tern_vad_segments(const float *probs, size_t n_probs, size_t n_samples, const struct tern_vad_params *p,
		      struct tern_vad_segment **out, size_t *n_out, tern_err *e)
{
	*out = NULL;
	*n_out = 0;
	int rc = check_params(p, n_probs, n_samples, e);
	if (rc)
		return rc;
	const struct limits l = limits_of(p, n_probs);
	struct segs sp = {0};
	if (!find_speech(probs, n_probs, &l, &sp)) {
		free(sp.s);
		return tern_errf(e, TERN_ENOMEM, "vad: out of memory for segments");
	}
	merge_close(&sp, l.min_speech);
	pad_segments(&sp, l.pad, l.audio_len);
	if (sp.n == 0)
		free(sp.s);
	else
		*out = sp.s;
	*n_out = sp.n;
	return 0;
}
