/* test_sample.c - the sampling chain of lib/llm/sample.h.
 *
 * Expectations are worked out by hand from the semantics written in
 * sample.h (llama.cpp's): each stage on small logit vectors whose
 * surviving sets differ when a stage or the order is wrong; the draw's
 * frequencies against the softmax within 4 sigma; determinism by seed;
 * hostile options and logits. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <float.h>
#include <math.h>

#include "lib/llm/sample.h"

/* Options with every stage off, temperature 1. */
static struct tern_sample_opts plain(void)
{
	struct tern_sample_opts o = tern_sample_opts_default();
	o.temp = 1.0f;
	o.top_k = 0;
	o.top_p = 1.0f;
	o.min_p = 0.0f;
	return o;
}

static struct tern_sampler *make(int32_t n_vocab,
	const struct tern_sample_opts *o)
{
	struct tern_sampler *s = NULL;
	tern_err e = {0};
	int rc = tern_sampler_new(&s, n_vocab, o, &e);
	assert_int_equal(rc, 0);
	assert_non_null(s);
	return s;
}

/* The candidates' ids after the chain, compared with want[n]. */
static void expect_ids(struct tern_sampler *s, const float *logits,
	const int32_t *want, int32_t n)
{
	const struct tern_sample_cand *c = NULL;
	int32_t got = tern_sample_candidates(s, logits, &c);
	assert_int_equal(got, n);
	for (int32_t i = 0; i < n; i++)
		assert_int_equal(c[i].id, want[i]);
}

static void test_defaults(void **state)
{
	(void)state;
	struct tern_sample_opts o = tern_sample_opts_default();
	assert_true(o.temp == 0.8f && o.top_k == 40 && o.top_p == 0.95f &&
		o.min_p == 0.05f && o.repeat_penalty == 1.0f &&
		o.repeat_last_n == 64 && o.frequency_penalty == 0.0f &&
		o.presence_penalty == 0.0f);
}

/* Window [0,1,0,0] after accepting 3,0,1,0,0 with repeat_last_n 4 (3 is
 * evicted). Token 0 (count 3, logit 2 > 0): 2/2 - 3*0.5 - 0.25 = -0.75.
 * Token 1 (count 1, logit -1): -1*2 - 0.5 - 0.25 = -2.75. The others
 * unchanged. */
static void test_penalties(void **state)
{
	(void)state;
	struct tern_sample_opts o = plain();
	o.repeat_penalty = 2.0f;
	o.frequency_penalty = 0.5f;
	o.presence_penalty = 0.25f;
	o.repeat_last_n = 4;
	struct tern_sampler *s = make(5, &o);
	const int32_t acc[] = {3, 0, 1, 0, 0};
	for (size_t i = 0; i < sizeof acc / sizeof acc[0]; i++)
		assert_int_equal(tern_sample_accept(s, acc[i]), 0);
	const float logits[] = {2.0f, -1.0f, 0.5f, 3.0f, 0.0f};
	const struct tern_sample_cand *c = NULL;
	assert_int_equal(tern_sample_candidates(s, logits, &c), 5);
	const int32_t ids[] = {3, 2, 4, 0, 1};
	const float want[] = {3.0f, 0.5f, 0.0f, -0.75f, -2.75f};
	for (int i = 0; i < 5; i++) {
		assert_int_equal(c[i].id, ids[i]);
		assert_float_equal(c[i].logit, want[i], 1e-6);
	}
	/* Penalties read the window, not a copy: a second call with the
	 * same state gives the same values (the counts were restored). */
	assert_int_equal(tern_sample_candidates(s, logits, &c), 5);
	assert_float_equal(c[3].logit, -0.75f, 1e-6);

	/* Greedy sees the penalised logits: without the window 3 wins, and
	 * with 3 penalised hard enough 2 does. */
	tern_sampler_free(s);
	o.temp = 0.0f;
	o.repeat_penalty = 10.0f;
	o.frequency_penalty = 0.0f;
	o.presence_penalty = 0.0f;
	s = make(5, &o);
	assert_int_equal(tern_sample(s, logits), 3);
	assert_int_equal(tern_sample_accept(s, 3), 0);
	assert_int_equal(tern_sample(s, logits), 0); /* 2 > 3/10 */
	tern_sample_reset(s);
	assert_int_equal(tern_sample(s, logits), 3);
	assert_int_equal(tern_sample_accept(s, 5), TERN_EINVAL);
	assert_int_equal(tern_sample_accept(s, -1), TERN_EINVAL);
	tern_sampler_free(s);
}

static void test_top_k(void **state)
{
	(void)state;
	const float logits[] = {1, 5, 3, 5, 2, 4};
	struct tern_sample_opts o = plain();
	o.top_k = 3;
	struct tern_sampler *s = make(6, &o);
	const int32_t k3[] = {1, 3, 5};
	expect_ids(s, logits, k3, 3);
	tern_sampler_free(s);

	o.top_k = 1; /* the tie 5 = 5 goes to the lower id */
	s = make(6, &o);
	const int32_t k1[] = {1};
	expect_ids(s, logits, k1, 1);
	tern_sampler_free(s);

	o.top_k = 1000; /* larger than the vocabulary: all, sorted */
	s = make(6, &o);
	const int32_t all[] = {1, 3, 5, 2, 4, 0};
	expect_ids(s, logits, all, 6);
	tern_sampler_free(s);
}

/* Probabilities 0.1, 0.4, 0.2, 0.3 for ids 0..3. */
static void probs_logits(float *l)
{
	l[0] = logf(0.1f);
	l[1] = logf(0.4f);
	l[2] = logf(0.2f);
	l[3] = logf(0.3f);
}

static void test_top_p(void **state)
{
	(void)state;
	float l[4];
	probs_logits(l);
	struct tern_sample_opts o = plain();
	static const struct {
		float p;
		int32_t n;
		int32_t ids[4];
	} cases[] = {
		{0.35f, 1, {1}},         /* 0.4 >= 0.35 */
		{0.65f, 2, {1, 3}},      /* 0.4, 0.7 */
		{0.75f, 3, {1, 3, 2}},   /* 0.4, 0.7, 0.9 */
		{0.95f, 4, {1, 3, 2, 0}},
		{0.0f, 1, {1}},          /* at least one */
		{-3.0f, 1, {1}},
		{5.0f, 4, {1, 3, 2, 0}}, /* >= 1: off */
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		o.top_p = cases[i].p;
		struct tern_sampler *s = make(4, &o);
		expect_ids(s, l, cases[i].ids, cases[i].n);
		tern_sampler_free(s);
	}
	/* top-k first: over {1,3,2} renormalised (0.444, 0.333, 0.222) the
	 * prefix reaching 0.75 is {1,3}; top-p over all four would keep 2. */
	o.top_k = 3;
	o.top_p = 0.75f;
	struct tern_sampler *s = make(4, &o);
	const int32_t want[] = {1, 3};
	expect_ids(s, l, want, 2);
	tern_sampler_free(s);
}

static void test_min_p(void **state)
{
	(void)state;
	float l[4];
	probs_logits(l);
	struct tern_sample_opts o = plain();
	static const struct {
		float m;
		int32_t n;
		int32_t ids[4];
	} cases[] = {
		{0.6f, 2, {1, 3}},       /* p >= 0.24 */
		{0.4f, 3, {1, 3, 2}},    /* p >= 0.16 */
		{0.2f, 4, {1, 3, 2, 0}}, /* p >= 0.08 */
		{2.0f, 1, {1}},          /* at least one */
		{-1.0f, 4, {1, 3, 2, 0}},/* off */
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		o.min_p = cases[i].m;
		struct tern_sampler *s = make(4, &o);
		expect_ids(s, l, cases[i].ids, cases[i].n);
		tern_sampler_free(s);
	}
	/* min-p before temperature: at temp 2 the ratios would be
	 * sqrt(0.75) and sqrt(0.5), both >= 0.6, keeping three. */
	o.min_p = 0.6f;
	o.temp = 2.0f;
	struct tern_sampler *s = make(4, &o);
	const int32_t want[] = {1, 3};
	expect_ids(s, l, want, 2);
	tern_sampler_free(s);
}

static void test_temperature(void **state)
{
	(void)state;
	struct tern_sample_opts o = plain();
	o.temp = 0.5f;
	struct tern_sampler *s = make(2, &o);
	const float l[] = {1.0f, 2.0f};
	const struct tern_sample_cand *c = NULL;
	assert_int_equal(tern_sample_candidates(s, l, &c), 2);
	assert_int_equal(c[0].id, 1);
	assert_float_equal(c[0].logit, 4.0f, 1e-6);
	assert_int_equal(c[1].id, 0);
	assert_float_equal(c[1].logit, 2.0f, 1e-6);
	tern_sampler_free(s);
}

static void test_greedy(void **state)
{
	(void)state;
	struct tern_sample_opts o = tern_sample_opts_default();
	o.temp = 0.0f;
	struct tern_sampler *s = make(4, &o);
	const float ties[] = {1, 3, 3, 2};
	for (int i = 0; i < 3; i++)
		assert_int_equal(tern_sample(s, ties), 1);
	const float nan_first[] = {NAN, 1, 2, NAN};
	assert_int_equal(tern_sample(s, nan_first), 2);
	const float none[] = {NAN, -INFINITY, NAN, -INFINITY};
	assert_int_equal(tern_sample(s, none), TERN_ERANGE);
	const float infs[] = {1, INFINITY, 2, INFINITY};
	assert_int_equal(tern_sample(s, infs), 1);
	tern_sampler_free(s);

	o.temp = -1.0f; /* negative is greedy too */
	s = make(4, &o);
	assert_int_equal(tern_sample(s, ties), 1);
	tern_sampler_free(s);
}

/* 20000 draws at temp 1 with no truncation from p = 0.1, 0.4, 0.2, 0.3:
 * each count within 4 binomial sigmas of N p. */
static void test_draw_frequencies(void **state)
{
	(void)state;
	struct tern_sample_opts o = plain();
	o.seed = 12345;
	struct tern_sampler *s = make(4, &o);
	float l[4];
	probs_logits(l);
	for (int i = 0; i < 4; i++)
		l[i] += 7.0f; /* a shift must not matter */
	const double p[] = {0.1, 0.4, 0.2, 0.3};
	const int n = 20000;
	int count[4] = {0};
	for (int i = 0; i < n; i++) {
		int32_t t = tern_sample(s, l);
		assert_true(t >= 0 && t < 4);
		count[t]++;
	}
	for (int i = 0; i < 4; i++) {
		double mean = n * p[i], sigma = sqrt(n * p[i] * (1 - p[i]));
		assert_true(fabs(count[i] - mean) <= 4 * sigma);
	}
	tern_sampler_free(s);
}

static void draw_seq(uint64_t seed, int32_t *out, int n)
{
	struct tern_sample_opts o = plain();
	o.seed = seed;
	o.repeat_penalty = 1.1f; /* the window takes part too */
	struct tern_sampler *s = make(8, &o);
	const float l[] = {0.5f, 1, 0, 0.2f, 0.9f, 0.1f, 0.7f, 0.3f};
	for (int i = 0; i < n; i++) {
		out[i] = tern_sample(s, l);
		assert_int_equal(tern_sample_accept(s, out[i]), 0);
	}
	/* reset: the same sequence again */
	tern_sample_reset(s);
	for (int i = 0; i < n; i++) {
		int32_t t = tern_sample(s, l);
		assert_int_equal(t, out[i]);
		assert_int_equal(tern_sample_accept(s, t), 0);
	}
	tern_sampler_free(s);
}

static void test_determinism(void **state)
{
	(void)state;
	enum { N = 200 };
	int32_t a[N], b[N], c[N];
	draw_seq(42, a, N);
	draw_seq(42, b, N);
	draw_seq(43, c, N);
	int same_ab = 1, same_ac = 1;
	for (int i = 0; i < N; i++) {
		same_ab &= a[i] == b[i];
		same_ac &= a[i] == c[i];
	}
	assert_true(same_ab);
	assert_false(same_ac);
}

static void test_hostile(void **state)
{
	(void)state;
	struct tern_sampler *s = NULL;
	tern_err e = {0};
	struct tern_sample_opts o = tern_sample_opts_default();
	assert_int_equal(tern_sampler_new(&s, 0, &o, &e), TERN_EINVAL);
	assert_null(s);
	o.temp = NAN;
	assert_int_equal(tern_sampler_new(&s, 4, &o, &e), TERN_EINVAL);
	o = tern_sample_opts_default();
	o.repeat_penalty = 0.0f;
	assert_int_equal(tern_sampler_new(&s, 4, &o, &e), TERN_EINVAL);
	o = tern_sample_opts_default();
	o.repeat_last_n = -1;
	assert_int_equal(tern_sampler_new(&s, 4, &o, &e), TERN_EINVAL);
	o = tern_sample_opts_default();
	o.presence_penalty = INFINITY;
	assert_int_equal(tern_sampler_new(&s, 4, &o, &e), TERN_EINVAL);
	assert_null(s);

	/* Odd but valid options with odd logits: always a valid id. */
	const float weird[][4] = {
		{NAN, INFINITY, -INFINITY, 0},
		{INFINITY, INFINITY, 1, -1},
		{FLT_MAX, -FLT_MAX, FLT_MAX, 0},
		{NAN, NAN, NAN, 3},
	};
	const float temps[] = {1.0f, 1e-30f, 1e30f, 0.0f};
	const float tops[] = {0.0f, 1.0f, 1e-9f};
	for (size_t t = 0; t < 4; t++) {
		for (size_t p = 0; p < 3; p++) {
			o = tern_sample_opts_default();
			o.temp = temps[t];
			o.top_p = tops[p];
			o.top_k = 1 << 30;
			o.min_p = 1e-30f;
			o.repeat_penalty = 1e-30f;
			o.frequency_penalty = -FLT_MAX;
			o.presence_penalty = FLT_MAX;
			s = make(4, &o);
			assert_int_equal(tern_sample_accept(s, 0), 0);
			assert_int_equal(tern_sample_accept(s, 1), 0);
			for (size_t w = 0; w < 4; w++) {
				int32_t id = tern_sample(s, weird[w]);
				assert_true(id == TERN_ERANGE || (id >= 0 && id < 4));
			}
			tern_sampler_free(s);
		}
	}
	/* The only finite logit wins whatever the options. */
	o = tern_sample_opts_default();
	s = make(4, &o);
	assert_int_equal(tern_sample(s, weird[3]), 3);
	tern_sampler_free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_defaults),
		cmocka_unit_test(test_penalties),
		cmocka_unit_test(test_top_k),
		cmocka_unit_test(test_top_p),
		cmocka_unit_test(test_min_p),
		cmocka_unit_test(test_temperature),
		cmocka_unit_test(test_greedy),
		cmocka_unit_test(test_draw_frequencies),
		cmocka_unit_test(test_determinism),
		cmocka_unit_test(test_hostile),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
