/* ppl.c - perplexity by llama-perplexity's rules (see ppl.h): the chunk
 * run, the per-token score and the estimate with its uncertainty. The
 * arithmetic follows the reference's types (float logits, double sums) so
 * that both tools give the same figure from the same logits. */
#include <math.h>

#include "lib/llm/ppl.h"

int32_t tern_ppl_first(int32_t n_ctx)
{
	return n_ctx / 2;
}

int32_t tern_ppl_scored(int32_t n_ctx)
{
	return n_ctx < TERN_PPL_MIN_CTX ? 0 : n_ctx - n_ctx / 2 - 1;
}

int64_t tern_ppl_n_chunks(int64_t n_tokens, int32_t n_ctx)
{
	if (n_ctx < TERN_PPL_MIN_CTX || n_tokens < 2 * (int64_t)n_ctx)
		return 0;
	return n_tokens / n_ctx;
}

double tern_ppl_nll(const float *logits, int32_t n_vocab, int32_t tok)
{
	float max = logits[0];
	for (int32_t i = 1; i < n_vocab; i++)
		if (logits[i] > max)
			max = logits[i];
	double sum = 0.0;
	for (int32_t i = 0; i < n_vocab; i++)
		sum += expf(logits[i] - max);
	/* the difference is a float, as in the reference; the log a double */
	float d = logits[tok] - max;
	return -((double)d - log(sum));
}

/* the scored rows of the decode call that covered positions p0..p0+n-1 */
static void score_rows(const struct tern_llm *l, const int32_t *tokens, int32_t n_ctx, int32_t p0, int32_t n,
		       struct tern_ppl_sum *s)
{
	const int32_t first = tern_ppl_first(n_ctx), n_vocab = tern_llm_n_vocab(l);
	for (int32_t k = 0; k < n; k++) {
		int32_t pos = p0 + k;
		if (pos < first || pos > n_ctx - 2)
			continue;
		double v = tern_ppl_nll(tern_llm_logits(l, k), n_vocab, tokens[pos + 1]);
		s->nll += v;
		s->nll2 += v * v;
		s->count++;
	}
}

int tern_ppl_chunk(struct tern_llm *l, int32_t *tokens, int32_t n_ctx, int32_t bos, int32_t n_batch,
		   int32_t n_ubatch, struct tern_ppl_sum *s, tern_err *e)
{
	*s = (struct tern_ppl_sum){0};
	if (n_ctx < TERN_PPL_MIN_CTX || n_ctx > tern_llm_n_ctx(l))
		return tern_errf(e, TERN_EINVAL, "perplexity: a chunk of %d tokens (the context holds %d, at least %d)",
				 n_ctx, tern_llm_n_ctx(l), TERN_PPL_MIN_CTX);
	if (n_batch < 1 || n_ubatch < 1)
		return tern_errf(e, TERN_EINVAL, "perplexity: batch %d, micro-batch %d", n_batch, n_ubatch);
	if (bos >= tern_llm_n_vocab(l))
		return tern_errf(e, TERN_EINVAL, "perplexity: BOS id %d is outside the vocabulary", bos);

	tern_llm_rewind(l, 0);
	const int32_t tok0 = tokens[0];
	if (bos >= 0)
		tokens[0] = bos;
	int rc = 0;
	/* logical batches as llama-perplexity makes them, each split into
	 * micro-batches: the split decides which rows go through the GEMM
	 * together, so it is kept even though the sums do not depend on it */
	for (int32_t b0 = 0; b0 < n_ctx && !rc; b0 += n_batch) {
		int32_t b1 = n_ctx - b0 < n_batch ? n_ctx : b0 + n_batch;
		for (int32_t p0 = b0; p0 < b1 && !rc; p0 += n_ubatch) {
			int32_t n = b1 - p0 < n_ubatch ? b1 - p0 : n_ubatch;
			rc = tern_llm_decode(l, tokens + p0, n, e);
			if (!rc)
				score_rows(l, tokens, n_ctx, p0, n, s);
		}
	}
	tokens[0] = tok0;
	if (rc)
		*s = (struct tern_ppl_sum){0};
	return rc;
}

void tern_ppl_add(struct tern_ppl_sum *to, const struct tern_ppl_sum *from)
{
	to->nll += from->nll;
	to->nll2 += from->nll2;
	to->count += from->count;
}

double tern_ppl_value(const struct tern_ppl_sum *s, double *err)
{
	double ppl = s->count > 0 ? exp(s->nll / (double)s->count) : NAN;
	if (err) {
		*err = NAN;
		if (s->count > 1) {
			double mean = s->nll / (double)s->count;
			double var = s->nll2 / (double)s->count - mean * mean;
			if (var > 0)
				*err = sqrt(var / (double)(s->count - 1)) * ppl;
		}
	}
	return ppl;
}
