/* ppl.h - perplexity over a text, computed the way llama-perplexity does
 * so that the two can be compared number for number.
 *
 * The rules (llama.cpp tools/perplexity, the default mode):
 *   - the text is tokenized once, with the vocabulary's BOS first when it
 *     adds one, and cut into non-overlapping chunks of n_ctx tokens; a
 *     remainder shorter than a chunk is dropped, and the text must give at
 *     least two chunks;
 *   - each chunk runs from an empty cache, its first token replaced by BOS
 *     when the vocabulary adds one;
 *   - only the second half is scored: the logits at positions
 *     first = n_ctx/2 .. n_ctx-2 predict the tokens at first+1 .. n_ctx-1,
 *     n_ctx - n_ctx/2 - 1 tokens per chunk (the first half is context);
 *   - each score is the negative log-likelihood -log softmax(logits)[tok],
 *     with the maximum subtracted in float and the exponentials summed in
 *     double;
 *   - the perplexity is exp(mean NLL); its uncertainty is the standard
 *     error of that mean, sqrt((E[nll^2] - E[nll]^2) / (count - 1)),
 *     carried through exp (times the perplexity). */
#ifndef TERN_LLM_PPL_H
#define TERN_LLM_PPL_H

#include <stdint.h>

#include "lib/core/error.h"
#include "lib/llm/llm.h"

/* The smallest chunk that scores a token: n_ctx - n_ctx/2 - 1 >= 1. */
#define TERN_PPL_MIN_CTX 3

/* Sums over scored tokens; sums of several chunks add up. */
struct tern_ppl_sum {
	double nll;    /* sum of -log p(token) */
	double nll2;   /* sum of its squares */
	int64_t count; /* tokens scored */
};

/* The first position whose logits are scored (n_ctx/2) and how many
 * tokens one chunk scores (0 when n_ctx < TERN_PPL_MIN_CTX). */
int32_t tern_ppl_first(int32_t n_ctx);
int32_t tern_ppl_scored(int32_t n_ctx);

/* Chunks of n_ctx tokens in a text of n_tokens (BOS included): the whole
 * chunks, or 0 when there are fewer than two (llama-perplexity's
 * minimum of 2 * n_ctx tokens) or n_ctx < TERN_PPL_MIN_CTX. */
int64_t tern_ppl_n_chunks(int64_t n_tokens, int32_t n_ctx);

/* -log softmax(logits)[tok] over n_vocab logits, as llama-perplexity
 * computes it: the maximum subtracted in float, expf of each difference
 * summed in double in index order. */
double tern_ppl_nll(const float *logits, int32_t n_vocab, int32_t tok);

/* Score one chunk: tokens[0..n_ctx) through l from an empty cache (l is
 * rewound to 0 first), in logical batches of n_batch tokens, each decoded
 * in calls of at most n_ubatch tokens. l must have been made with
 * logits_all, n_ubatch no larger than its own and n_ctx no larger than its
 * context. bos >= 0 replaces tokens[0] for the run (restored before
 * returning); -1 keeps it. *s receives this chunk's sums (not added to
 * what it held). Errors: TERN_EINVAL for arguments out of range, what
 * tern_llm_decode reports (*s is then zero). */
int tern_ppl_chunk(struct tern_llm *l, int32_t *tokens, int32_t n_ctx, int32_t bos, int32_t n_batch,
		   int32_t n_ubatch, struct tern_ppl_sum *s, tern_err *e);

void tern_ppl_add(struct tern_ppl_sum *to, const struct tern_ppl_sum *from);

/* The perplexity exp(nll / count) (NaN without a scored token) and, in
 * *err when err is not NULL, its uncertainty (NaN when count < 2 or the
 * variance is not positive: llama-perplexity then prints an error). */
double tern_ppl_value(const struct tern_ppl_sum *s, double *err);

#endif
