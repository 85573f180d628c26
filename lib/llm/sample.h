/* sample.h - choosing the next token from a row of logits.
 *
 * The chain follows llama.cpp's default order (src/llama-sampling.cpp,
 * common/sampling.cpp), each stage working on the candidates the previous
 * one left:
 *
 *   0. Sanitise: a NaN logit counts as -inf, +inf as FLT_MAX. Tokens at
 *      -inf (after the penalties) can never be drawn and are dropped; when
 *      none remain, tern_sample returns TERN_ERANGE.
 *   1. Penalties over the last repeat_last_n accepted tokens, once per
 *      distinct token t that occurs count(t) > 0 times in that window:
 *        logit <= 0 ? logit *= repeat_penalty : logit /= repeat_penalty;
 *        logit -= count(t) * frequency_penalty + presence_penalty.
 *   2. top-k (top_k <= 0: off; larger than the vocabulary: everything):
 *      keep the k highest logits. From here the candidates are sorted by
 *      logit, highest first, ties by the lower id.
 *   3. top-p (top_p >= 1: off): p = softmax of the candidates' logits;
 *      keep the shortest prefix whose cumulative p reaches top_p, and at
 *      least one token (top_p <= 0 keeps only the best).
 *   4. min-p (min_p <= 0: off): keep the tokens with p >= min_p * p_max,
 *      i.e. logit >= logit_max + log(min_p); at least one.
 *   5. Temperature: logits divided by temp. temp <= 0 is greedy: the
 *      argmax of the penalised logits, ties to the lowest id (stages 2-4
 *      cannot change it, so they are skipped).
 *   6. The draw: u uniform in [0,1) from the sampler's own generator
 *      (xoshiro256** seeded through splitmix64 from `seed`), and the first
 *      candidate, in the sorted order, whose cumulative softmax
 *      probability exceeds u.
 * Note that the probabilities of top-p and min-p are taken at temperature
 * 1, before stage 5, as llama.cpp does.
 *
 * Same options, same seed, same accepted tokens and logits: same tokens,
 * on any machine and thread count (the chain is sequential; the draw uses
 * double arithmetic that IEEE fixes).
 *
 * All memory (the penalty window as a ring buffer, per-token counts, the
 * candidate array) is allocated by tern_sampler_new; accepting and
 * sampling never allocate. Sampling sorts the kept candidates: with top-k
 * on this is O(n_vocab log k), with top-k off O(n_vocab log n_vocab). */
#ifndef TERN_SAMPLE_H
#define TERN_SAMPLE_H

#include <stdbool.h>
#include <stdint.h>

#include "lib/core/error.h"

struct tern_sample_opts {
	float temp;              /* 0.8; <= 0: greedy */
	int32_t top_k;           /* 40; <= 0: off */
	float top_p;             /* 0.95; >= 1: off */
	float min_p;             /* 0.05; <= 0: off */
	float repeat_penalty;    /* 1.0 (off); must be > 0 */
	int32_t repeat_last_n;   /* 64; 0: no penalties */
	float frequency_penalty; /* 0 */
	float presence_penalty;  /* 0 */
	uint64_t seed;
};

/* One candidate: a token id and its logit after the stages so far. */
struct tern_sample_cand {
	int32_t id;
	float logit;
};

struct tern_sampler;

/* llama.cpp's defaults (listed above), seed 0. */
struct tern_sample_opts tern_sample_opts_default(void);

/* Create a sampler for n_vocab tokens (n_vocab >= 1). Options that are
 * NaN, a repeat_penalty <= 0 or infinite, a negative repeat_last_n or
 * infinite frequency/presence penalties: TERN_EINVAL. */
int tern_sampler_new(struct tern_sampler **out, int32_t n_vocab,
	const struct tern_sample_opts *opts, tern_err *e);
void tern_sampler_free(struct tern_sampler *s);

/* Empty the penalty window and reseed the generator from opts.seed. */
void tern_sample_reset(struct tern_sampler *s);

/* Push a token (prompt or generated) into the penalty window, evicting
 * the oldest once repeat_last_n are held. An id outside [0, n_vocab):
 * TERN_EINVAL, window unchanged. */
int tern_sample_accept(struct tern_sampler *s, int32_t token);

/* Run stages 0-5 on logits[n_vocab] and point *out at the surviving
 * candidates (owned by the sampler, valid until its next call), sorted by
 * logit, highest first, ties by lower id. Returns their number (>= 1), or
 * TERN_ERANGE when every logit is NaN or -inf. Does not draw or accept. */
int32_t tern_sample_candidates(struct tern_sampler *s, const float *logits,
	const struct tern_sample_cand **out);

/* Move the k best of c[0..n) (1 <= k <= n; by logit, ties to the lower
 * id) to c[0..k), sorted; O(n log k), no allocation. The top-k stage,
 * also used for reporting alternatives. */
void tern_sample_top(struct tern_sample_cand *c, int32_t n, int32_t k);

/* Whether the chain is the greedy argmax alone, whatever tokens it has
 * seen: temp <= 0 and no penalties (the pick a backend's argmax makes:
 * tern_llm_set_greedy). */
bool tern_sample_is_greedy(const struct tern_sampler *s);

/* The whole chain: the chosen token id, or TERN_ERANGE (negative) when
 * every logit is NaN or -inf. Does not accept the token: the caller does,
 * so that prompt and generated tokens go through one path. */
int32_t tern_sample(struct tern_sampler *s, const float *logits);

#endif
