/* sample.c - the sampling chain of sample.h: penalties, top-k, top-p,
 * min-p, temperature and a seeded draw, in llama.cpp's order.
 *
 * Every buffer is sized at creation from n_vocab and repeat_last_n, so the
 * per-token path (tern_sample_accept, tern_sample) never allocates. The
 * generator is our own (xoshiro256**, seeded by splitmix64) rather than
 * rand(), so a seed means the same tokens everywhere. */
#include "lib/llm/sample.h"

#include <float.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>

struct tern_sampler {
	struct tern_sample_opts o;
	int32_t n_vocab;
	/* The penalty window: the last ring_len (<= window) accepted tokens;
	 * ring_head is where the next one goes. window is repeat_last_n, or 0
	 * when the penalties are neutral (1, 0, 0): then no token need be
	 * remembered, and count, ring are not made (count's pages would be
	 * touched by every token accepted, for nothing). */
	int32_t window;
	int32_t *ring;       /* [window] */
	int32_t ring_len;
	int32_t ring_head;
	/* count[t]: occurrences of t in the window. Kept up to date by
	 * accept so the penalty stage walks the window, not the vocabulary. */
	int32_t *count;      /* [n_vocab] when window > 0 */
	struct tern_sample_cand *cand; /* [n_vocab] scratch */
	uint64_t rng[4];     /* xoshiro256** state */
};

/* ---- generator ---------------------------------------------------- */

/* splitmix64 (Steele, Lea, Flood), used only to spread a 64-bit seed over
 * xoshiro's 256-bit state, as xoshiro's authors recommend: an all-zero
 * state would be stuck, and nearby seeds must give unrelated streams. */
static uint64_t splitmix64(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15u);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
	return z ^ (z >> 31);
}

static uint64_t rotl64(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

/* xoshiro256** (Blackman, Vigna): small, fast, passes BigCrush. */
static uint64_t xoshiro_next(uint64_t st[4])
{
	uint64_t result = rotl64(st[1] * 5, 7) * 9;
	uint64_t t = st[1] << 17;
	st[2] ^= st[0];
	st[3] ^= st[1];
	st[1] ^= st[2];
	st[0] ^= st[3];
	st[2] ^= t;
	st[3] = rotl64(st[3], 45);
	return result;
}

static void seed_rng(struct tern_sampler *s)
{
	uint64_t x = s->o.seed;
	for (int i = 0; i < 4; i++)
		s->rng[i] = splitmix64(&x);
}

/* Uniform in [0, 1): the top 53 bits as a double's mantissa. */
static double uniform01(struct tern_sampler *s)
{
	return (double)(xoshiro_next(s->rng) >> 11) * (1.0 / 9007199254740992.0);
}

/* ---- creation ----------------------------------------------------- */

struct tern_sample_opts tern_sample_opts_default(void)
{
	struct tern_sample_opts o = {0};
	o.temp = 0.8f;
	o.top_k = 40;
	o.top_p = 0.95f;
	o.min_p = 0.05f;
	o.repeat_penalty = 1.0f;
	o.repeat_last_n = 64;
	o.frequency_penalty = 0.0f;
	o.presence_penalty = 0.0f;
	o.seed = 0;
	return o;
}

int tern_sampler_new(struct tern_sampler **out, int32_t n_vocab,
	const struct tern_sample_opts *opts, tern_err *e)
{
	*out = NULL;
	const struct tern_sample_opts *o = opts;
	if (n_vocab < 1)
		return tern_errf(e, TERN_EINVAL, "sampler: vocabulary size %d",
			(int)n_vocab);
	if (isnan(o->temp) || isnan(o->top_p) || isnan(o->min_p))
		return tern_errf(e, TERN_EINVAL,
			"sampler: temp, top_p and min_p must be numbers");
	if (!(o->repeat_penalty > 0) || isinf(o->repeat_penalty))
		return tern_errf(e, TERN_EINVAL,
			"sampler: repeat penalty %g must be positive and finite",
			(double)o->repeat_penalty);
	if (!isfinite(o->frequency_penalty) || !isfinite(o->presence_penalty))
		return tern_errf(e, TERN_EINVAL,
			"sampler: frequency and presence penalties must be finite");
	if (o->repeat_last_n < 0)
		return tern_errf(e, TERN_EINVAL,
			"sampler: repeat-last-n %d is negative", (int)o->repeat_last_n);

	struct tern_sampler *s = calloc(1, sizeof *s);
	if (!s)
		return tern_errf(e, TERN_ENOMEM, "sampler: out of memory");
	s->o = *o;
	s->n_vocab = n_vocab;
	bool neutral = o->repeat_penalty == 1.0f && o->frequency_penalty == 0.0f && o->presence_penalty == 0.0f;
	s->window = neutral ? 0 : o->repeat_last_n;
	s->cand = calloc((size_t)n_vocab, sizeof *s->cand);
	if (s->window > 0) {
		s->count = calloc((size_t)n_vocab, sizeof *s->count);
		s->ring = calloc((size_t)s->window, sizeof *s->ring);
	}
	if (!s->cand || (s->window > 0 && (!s->count || !s->ring))) {
		tern_sampler_free(s);
		return tern_errf(e, TERN_ENOMEM,
			"sampler: out of memory for %d tokens", (int)n_vocab);
	}
	seed_rng(s);
	*out = s;
	return 0;
}

void tern_sampler_free(struct tern_sampler *s)
{
	if (!s)
		return;
	free(s->ring);
	free(s->count);
	free(s->cand);
	free(s);
}

void tern_sample_reset(struct tern_sampler *s)
{
	for (int32_t j = 0; j < s->ring_len; j++)
		s->count[s->ring[j]] = 0;
	s->ring_len = 0;
	s->ring_head = 0;
	seed_rng(s);
}

int tern_sample_accept(struct tern_sampler *s, int32_t token)
{
	if (token < 0 || token >= s->n_vocab)
		return TERN_EINVAL;
	int32_t cap = s->window;
	if (cap == 0)
		return 0;
	if (s->ring_len == cap)
		s->count[s->ring[s->ring_head]]--;
	else
		s->ring_len++;
	s->ring[s->ring_head] = token;
	s->count[token]++;
	s->ring_head = (s->ring_head + 1) % cap;
	return 0;
}

/* ---- the chain ---------------------------------------------------- */

/* The candidates' total order: higher logit first, then lower id. */
static bool better(const struct tern_sample_cand *a,
	const struct tern_sample_cand *b)
{
	return a->logit > b->logit || (a->logit == b->logit && a->id < b->id);
}

static int cmp_cand(const void *pa, const void *pb)
{
	const struct tern_sample_cand *a = pa, *b = pb;
	return better(a, b) ? -1 : better(b, a) ? 1 : 0;
}

/* NaN can never be chosen; +inf would make the softmax NaN. */
static float sanitise(float x)
{
	if (isnan(x))
		return -INFINITY;
	if (x > FLT_MAX)
		return FLT_MAX;
	return x;
}

/* Stage 1 on cand[], still indexed by id. Each distinct token of the
 * window is penalised once: its count is negated while it is done and
 * restored afterwards, so no extra per-token memory is needed. */
static void apply_penalties(struct tern_sampler *s)
{
	const struct tern_sample_opts *o = &s->o;
	if (s->ring_len == 0 || (o->repeat_penalty == 1.0f &&
		o->frequency_penalty == 0.0f && o->presence_penalty == 0.0f))
		return;
	for (int32_t j = 0; j < s->ring_len; j++) {
		int32_t t = s->ring[j];
		int32_t c = s->count[t];
		if (c <= 0)
			continue;
		float *l = &s->cand[t].logit;
		if (*l <= 0)
			*l *= o->repeat_penalty;
		else
			*l /= o->repeat_penalty;
		*l -= (float)c * o->frequency_penalty + o->presence_penalty;
		s->count[t] = -c;
	}
	for (int32_t j = 0; j < s->ring_len; j++) {
		int32_t t = s->ring[j];
		if (s->count[t] < 0)
			s->count[t] = -s->count[t];
	}
}

/* Sift the root of a heap whose root is its worst member ("worst" by
 * better()) down to its place. */
static void sift_down(struct tern_sample_cand *h, int32_t n, int32_t i)
{
	for (;;) {
		int32_t w = i, l = 2 * i + 1, r = l + 1;
		if (l < n && better(&h[w], &h[l]))
			w = l;
		if (r < n && better(&h[w], &h[r]))
			w = r;
		if (w == i)
			return;
		struct tern_sample_cand t = h[i];
		h[i] = h[w];
		h[w] = t;
		i = w;
	}
}

/* Stage 2: move the k best of c[0..n) to c[0..k) in order, by a heap of
 * the k best seen so far whose root is the one to beat. */
void tern_sample_top(struct tern_sample_cand *c, int32_t n, int32_t k)
{
	for (int32_t i = k / 2 - 1; i >= 0; i--)
		sift_down(c, k, i);
	for (int32_t i = k; i < n; i++) {
		if (better(&c[i], &c[0])) {
			c[0] = c[i];
			sift_down(c, k, 0);
		}
	}
	qsort(c, (size_t)k, sizeof *c, cmp_cand);
}

int32_t tern_sample_candidates(struct tern_sampler *s, const float *logits,
	const struct tern_sample_cand **out)
{
	const struct tern_sample_opts *o = &s->o;
	struct tern_sample_cand *c = s->cand;
	*out = c;
	for (int32_t i = 0; i < s->n_vocab; i++) {
		c[i].id = i;
		c[i].logit = logits[i];
	}
	apply_penalties(s);

	/* Stage 0 after the penalties (they may overflow to +-inf), dropping
	 * the tokens that cannot be drawn. */
	int32_t n = 0;
	for (int32_t i = 0; i < s->n_vocab; i++) {
		float l = sanitise(c[i].logit);
		if (l == -INFINITY)
			continue;
		c[n].id = c[i].id;
		c[n].logit = l;
		n++;
	}
	if (n == 0)
		return TERN_ERANGE;

	if (!(o->temp > 0)) {
		/* Greedy: truncation always keeps the best, so skip it. */
		int32_t best = 0;
		for (int32_t i = 1; i < n; i++)
			if (better(&c[i], &c[best]))
				best = i;
		c[0] = c[best];
		return 1;
	}

	if (o->top_k > 0 && o->top_k < n) {
		tern_sample_top(c, n, o->top_k);
		n = o->top_k;
	} else {
		qsort(c, (size_t)n, sizeof *c, cmp_cand);
	}

	if (o->top_p < 1.0f) {
		double sum = 0;
		for (int32_t i = 0; i < n; i++)
			sum += exp((double)c[i].logit - c[0].logit);
		double cum = 0, target = (double)o->top_p * sum;
		int32_t keep = n;
		for (int32_t i = 0; i < n; i++) {
			cum += exp((double)c[i].logit - c[0].logit);
			if (cum >= target) {
				keep = i + 1;
				break;
			}
		}
		n = keep;
	}

	if (o->min_p > 0.0f) {
		double floor_logit = (double)c[0].logit + log((double)o->min_p);
		int32_t keep = 1;
		while (keep < n && (double)c[keep].logit >= floor_logit)
			keep++;
		n = keep;
	}

	for (int32_t i = 0; i < n; i++) {
		double l = (double)c[i].logit / o->temp;
		c[i].logit = (float)(l > FLT_MAX ? FLT_MAX :
			l < -FLT_MAX ? -FLT_MAX : l);
	}
	return n;
}

bool tern_sample_is_greedy(const struct tern_sampler *s)
{
	const struct tern_sample_opts *o = &s->o;
	return !(o->temp > 0) && (o->repeat_last_n == 0 || (o->repeat_penalty == 1.0f && o->frequency_penalty == 0.0f &&
							    o->presence_penalty == 0.0f));
}

int32_t tern_sample(struct tern_sampler *s, const float *logits)
{
	const struct tern_sample_opts *o = &s->o;
	bool neutral = s->ring_len == 0 || (o->repeat_penalty == 1.0f && o->frequency_penalty == 0.0f &&
					    o->presence_penalty == 0.0f);
	if (!(o->temp > 0) && neutral) {
		/* greedy without penalties: the argmax of the sanitised logits,
		 * ties to the lower id, as stages 0-5 would give, in one pass
		 * (Gemma's 262144 logits: no candidate array to fill) */
		int32_t best = -1;
		float bl = -INFINITY;
		for (int32_t i = 0; i < s->n_vocab; i++) {
			float l = sanitise(logits[i]);
			if (l != -INFINITY && (best < 0 || l > bl)) {
				best = i;
				bl = l;
			}
		}
		return best < 0 ? TERN_ERANGE : best;
	}
	const struct tern_sample_cand *c;
	int32_t n = tern_sample_candidates(s, logits, &c);
	if (n < 0)
		return n;
	if (n == 1)
		return c[0].id;
	/* Stage 6: softmax relative to the best (c[0]), then inverse CDF. */
	double sum = 0;
	for (int32_t i = 0; i < n; i++)
		sum += exp((double)c[i].logit - c[0].logit);
	double target = uniform01(s) * sum, cum = 0;
	for (int32_t i = 0; i < n; i++) {
		cum += exp((double)c[i].logit - c[0].logit);
		if (cum > target)
			return c[i].id;
	}
	return c[n - 1].id; /* rounding: target within an ulp of sum */
}
