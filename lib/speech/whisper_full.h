/* whisper_full.h - transcription with a Whisper model: the decoding loop
 * of whisper.cpp's whisper_full (which follows openai-whisper's
 * decoding.py and transcribe.py) over a spectrogram, window by window.
 *
 * Per 30 s window: the encoder; the prompt (<|startofprev|> and the
 * previous windows' tokens when conditioning, <|startoftranscript|>, the
 * language and task tokens of multilingual models, <|notimestamps|> when
 * timestamps are off); then greedy decoding, best-of-N sampling or beam
 * search under the logit filters (whisper_full_filter), with temperature
 * fallback when the result looks wrong (average log-probability, entropy
 * of the last tokens, optionally the text's compression ratio); segments cut at timestamp tokens
 * and the window advanced to the last timestamp.
 *
 * Times are in centiseconds (10 ms, a spectrogram frame), as whisper.cpp
 * counts them. */
#ifndef TERN_WHISPER_FULL_H
#define TERN_WHISPER_FULL_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/backend.h"
#include "lib/core/error.h"
#include "lib/speech/whisper.h"

#define WHISPER_FULL_MAX_DECODERS 16

struct whisper_energy;
struct whisper_time_map;

struct whisper_full_params {
	int beam_size;	 /* > 1: beam search of that width at temperature 0; else greedy */
	int best_of;	 /* samples drawn at temperature > 0 (and decoders in greedy) */
	float temperature;	 /* the first temperature */
	float temperature_inc; /* fallback steps up to 1.0; 0: no fallback */
	float entropy_thold;	 /* a result of > 32 tokens fails below this entropy (2.4) */
	float logprob_thold;	 /* ... or below this average log-probability (-1.0) */
	float no_speech_thold; /* <|nospeech|> probability above which silence is declared (0.6) */
	float compression_ratio_thold; /* a result whose text zlib compresses more than this fails
					* (openai-whisper: 2.4); <= 0: off, as in whisper.cpp. When on,
					* a window that fails at every temperature gives no text */
	float max_initial_ts;	       /* seconds: the latest first timestamp (1.0) */
	float length_penalty;	       /* <= 0: the score is the average log-probability */
	bool translate, no_timestamps, suppress_blank, suppress_nst;
	int lang_id;		   /* index into whisper_lang_code(); multilingual models only */
	int n_max_text_ctx;	   /* tokens of the previous text to condition on (16384); 0: none */
	const int32_t *prompt;	   /* initial prompt tokens (borrowed), or NULL */
	int n_prompt;
	int64_t offset_cs, duration_cs; /* the part of the audio to transcribe; duration 0: to the end */
	uint32_t seed;			/* the first decoder's generator (whisper.cpp: 0; decoder j: j) */
	int n_threads; /* whisper.cpp's thread count, which its numbers depend on
			* (whisper_decoder_set_split); whisper-cli's default min(4, CPUs) */

	/* token-level timestamps (whisper.cpp's token_timestamps): each
	 * segment's tokens get t0/t1 from the timestamp probabilities and the
	 * signal's energy (whisper_full_token_times) */
	bool token_timestamps;
	float thold_pt, thold_ptsum; /* a token's timestamp counts above these (0.01, 0.01) */
	const struct whisper_energy *energy; /* the signal energy the token times use; NULL: none */
	/* > 0: split segments longer than max_len characters (needs token
	 * timestamps), at a word's start with split_on_word */
	int max_len;
	bool split_on_word;
	/* processed-to-original times (--vad): segment times are mapped
	 * through it when a segment is made; token times are not, as in
	 * whisper.cpp. NULL: none */
	const struct whisper_time_map *time_map;
	/* called after each window with the frame reached (may be NULL) */
	void (*progress)(void *ctx, int64_t seek, int64_t seek_end);
	void *progress_ctx;
	/* checked before each window and each decoding step (may be NULL):
	 * once nonzero (Ctrl-C) the run stops, the window in progress
	 * dropped, and the segments made so far are the result */
	volatile sig_atomic_t *cancel;
};

/* The signal energy whisper.cpp's token timestamps look at: the mean
 * absolute value of the 65 samples around each sample. Only the first
 * n_have values are kept (whisper.cpp indexes it by the time from the
 * segment's start, so only the first ~30 s are ever read); n is the
 * signal's length in samples. */
struct whisper_energy {
	const float *e;
	size_t n_have;
	int64_t n;
};
/* e[i] for i < n_out (n_out <= n) of a signal of n samples of which
 * pcm[n_pcm] are the first (n_pcm >= n_out + 32 unless n_pcm == n). */
void whisper_signal_energy(const float *pcm, size_t n_pcm, size_t n, float *e, size_t n_out);

/* A piecewise-linear map from the time in the transcribed (speech only)
 * audio to the original's, both in centiseconds: points sorted by
 * processed time, no two equal; before the first and after the last the
 * end points' original times. whisper.cpp's map_processed_to_original_time. */
struct whisper_time_point {
	int64_t processed, original;
};
struct whisper_time_map {
	const struct whisper_time_point *pt;
	int n;
};
int64_t whisper_time_map_apply(const struct whisper_time_map *m, int64_t t);

/* whisper-cli's defaults (beam 5, best of 5, fallback 0.2, thresholds
 * 2.4 / -1.0 / 0.6, English, timestamps). */
struct whisper_full_params whisper_full_default_params(void);

struct whisper_token_data {
	int32_t id;
	int32_t tid;	  /* the likeliest timestamp at that step */
	float p, plog;	  /* probability and log-probability of id */
	float pt, ptsum;  /* tid's share of the timestamps' probability, their sum */
	int64_t t0, t1;	  /* token-level timestamps in centiseconds of the transcribed audio; -1: none */
	float vlen;	  /* whisper.cpp's voice length of the token's text */
};

struct whisper_segment {
	int64_t t0, t1; /* centiseconds from the start of the audio */
	char *text;	/* the text tokens' bytes, NUL-terminated */
	struct whisper_token_data *tokens;
	int n_tokens;
	float no_speech_prob;
	/* the window's decoding: its best result's average log-probability,
	 * its text's compression ratio and the temperature it was drawn at */
	float avg_logprob, compression_ratio, temperature;
};

struct whisper_full_stats {
	double t_encode_s, t_decode_s, t_sample_s;
	int n_encode, n_decode, n_fallback_p, n_fallback_h;
	int n_dropped; /* windows dropped as loops (compression_ratio_thold > 0) */
};

struct whisper_result {
	struct whisper_segment *seg;
	int n_seg, cap;
	int lang_id;
	struct whisper_full_stats stats;
	bool cancelled; /* the run stopped through *cancel before the end */
};
void whisper_result_free(struct whisper_result *r);

struct whisper_full; /* encoder, decoder and the decoding buffers */

/* A transcriber of m (borrowed) on be (borrowed). Errors: what
 * whisper_encoder_new and whisper_decoder_new report, TERN_ENOMEM. */
int whisper_full_new(struct whisper_full **out, const struct whisper_model *m, struct tern_backend *be,
		     tern_err *e);
void whisper_full_free(struct whisper_full *w);

/* Where the windows come from: a normalised spectrogram of n_len frames
 * (n_len_org frames of real audio; whisper.cpp's 1 + (n + 200 - 400) / 160
 * for n samples) in mel[n_mels][n_len]. frame0 is the frame mel[.][0]
 * holds: a caller working in blocks supplies a part of a longer
 * spectrogram each time, through the callback. */
struct whisper_mel_src {
	/* Make frames [f0, f0 + 2 n_audio_ctx) available (frames past the
	 * real audio are the padding's): set *mel, *stride (frames per mel
	 * row) and *first (the frame *mel starts at, <= f0). */
	int (*window)(void *ctx, int64_t f0, const float **mel, size_t *stride, int64_t *first, tern_err *e);
	void *ctx;
	int64_t n_len_org;
};

/* The spectrogram in memory: a source over mel[n_mels][n_len]. */
struct whisper_mel_mem {
	const float *mel;
	size_t n_len;
};
struct whisper_mel_src whisper_mel_src_mem(struct whisper_mel_mem *m, int64_t n_len_org);

/* Frames of real audio in n samples, as whisper.cpp counts them. */
int64_t whisper_n_len_org(size_t n_samples);

/* Called with each new segment (may be NULL); a nonzero return (a TERN_E*
 * code, with its message in e) stops the transcription with that code. */
typedef int (*whisper_segment_cb)(void *ctx, const struct whisper_result *r, int i_seg, tern_err *e);

/* Transcribe: segments are appended to *res (zeroed by the caller, or the
 * result of an earlier call to continue after). A stop through p->cancel
 * is no error: 0 with res->cancelled set. Errors: TERN_EINVAL (bad
 * parameters), what the model's passes report, what cb returns. */
int whisper_full_run(struct whisper_full *w, const struct whisper_full_params *p, const struct whisper_mel_src *src,
		     struct whisper_result *res, whisper_segment_cb cb, void *cb_ctx, tern_err *e);

/* Detect the language of the window at frame f0 (multilingual models):
 * the id of the likeliest language token; probs[n_langs] (may be NULL)
 * their probabilities. */
int whisper_full_detect_language(struct whisper_full *w, const struct whisper_mel_src *src, int64_t f0,
				 float *probs, int *lang_id, tern_err *e);

/* whisper.cpp's language probabilities from the logits after
 * <|startoftranscript|> (logits[n_vocab]): softmax over the language
 * tokens into probs[n_langs]; returns the likeliest. */
int whisper_full_lang_probs(const struct whisper_model *m, const float *logits, float *probs);

/* A token's text as whisper.cpp shows it: the file's bytes, or for the
 * special tokens past the file's vocabulary a name such as "[_BEG_]" or
 * "[_TT_150]" written into buf. */
struct tern_str whisper_token_str(const struct whisper_model *m, int32_t id, char buf[32]);

/* Token-level timestamps of seg's tokens (whisper.cpp's
 * whisper_exp_compute_token_level_timestamps): t0/t1 where a token's
 * likeliest timestamp is confident enough (pt > thold_pt, ptsum >
 * thold_ptsum) and moves forward, the rest split by voice length, then
 * moved to where the energy rises and falls. *t_beg, *t_last, *tid_last
 * carry from segment to segment (0 at the start). */
void whisper_full_token_times(const struct whisper_model *m, struct whisper_segment *seg, float thold_pt,
			      float thold_ptsum, const struct whisper_energy *en, int64_t *t_beg, int64_t *t_last,
			      int32_t *tid_last);

/* Split the last segment of r into pieces of at most max_len characters
 * (UTF-8 characters of the text tokens; a piece that starts with a longer
 * token is longer), at a token that starts with a space when
 * split_on_word, each piece starting at its first token's t0: whisper.cpp's
 * whisper_wrap_segment. Returns the number of segments it became (>= 1),
 * or a negative TERN_E* code. */
int whisper_full_wrap_segment(const struct whisper_model *m, struct whisper_result *r, int max_len,
			      bool split_on_word, tern_err *e);

/* The language codes whisper.cpp knows, in token order ("en", "zh", ...,
 * "yue"): index i is the token sot + 1 + i. NULL past the end. */
const char *whisper_lang_code(int i);
/* The index of a code ("fr") or a name ("french", any case, as
 * whisper.cpp's -l takes it), -1 when unknown. */
int whisper_lang_find(const char *code);

/* Text to tokens as whisper.cpp's whisper_tokenize does it (for an
 * initial prompt): GPT-2's word split with ASCII character classes
 * ('s 't 're 've 'm 'll 'd, letters, digits and other runs each with an
 * optional leading space, whitespace), then each word as the longest
 * vocabulary tokens from its left; a byte no token starts with is skipped.
 * *out malloc'd, *n tokens. Errors: TERN_ENOMEM. */
int whisper_tokenize(const struct whisper_model *m, const char *text, int32_t **out, int *n, tern_err *e);

/* ---- the pieces, exposed for tests --------------------------------------- */

/* The decoding state of one sequence that the logit filters look at. */
struct whisper_filter_state {
	const int32_t *tokens; /* the sampled tokens so far (no prompt) */
	int n_tokens;
	bool has_ts;	/* a timestamp was sampled */
	int seek_delta; /* frames up to the last timestamp */
};

/* whisper.cpp's logit filters on logits[n_vocab] (scaled by 1/temperature
 * first when temperature > 0), then log-softmax into logprobs and
 * probabilities into probs (both [n_vocab]); blank_id is the " " token
 * (-1: none). Suppressed entries end as -inf logits, -inf logprobs and 0
 * probabilities. */
void whisper_full_filter(const struct whisper_model *m, const struct whisper_full_params *p, int32_t blank_id,
			 const struct whisper_filter_state *st, float temperature, float *logits, float *logprobs,
			 float *probs);

/* The fallback rules, in whisper.cpp's order. A decoder's result of more
 * than 32 tokens whose last 32 have an entropy below entropy_thold is a
 * repetition loop: it fails. Then the best result is retried at the next
 * temperature when it failed, or when its average log-probability is
 * below logprob_thold unless the window is silence (no-speech probability
 * at or above no_speech_thold). A window is silence, and gives no text,
 * when the no-speech probability is above no_speech_thold and the average
 * log-probability below logprob_thold. */
bool whisper_full_repetitive(const struct whisper_full_params *p, int result_len, double entropy);
bool whisper_full_needs_fallback(const struct whisper_full_params *p, bool failed, double avg_logprob,
				 float no_speech_prob);
bool whisper_full_is_no_speech(const struct whisper_full_params *p, double avg_logprob, float no_speech_prob);

/* openai-whisper's compression ratio: len / the zlib-compressed length
 * (level 6) of text[len]; 0 for no text. */
double whisper_full_compression_ratio(const char *text, size_t len);

/* The entropy of the token counts of the last 32 of tokens[n]. */
double whisper_full_entropy(const int32_t *tokens, int n);

/* std::mt19937 and libstdc++'s std::discrete_distribution<int> over float
 * weights, so that sampling draws what whisper.cpp draws from the same
 * seed. */
struct whisper_mt {
	uint32_t s[624];
	int i;
};
void whisper_mt_seed(struct whisper_mt *g, uint32_t seed);
uint32_t whisper_mt_next(struct whisper_mt *g);
/* The cumulative distribution of weights w[n] (not all zero) into
 * cum[n]; then draws from it. */
void whisper_mt_discrete_prep(const float *w, int n, double *cum);
int whisper_mt_discrete(struct whisper_mt *g, const double *cum, int n);

#endif
