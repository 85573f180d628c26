/* test_ppl.c - perplexity by llama-perplexity's rules (lib/llm/ppl.h):
 *
 *   the score of one token against a log-softmax written out here in
 *   double (uniform, known, shifted and extreme logits);
 *   the chunking rule (first scored position, scored count, the two-chunk
 *   minimum) on the figures llama-perplexity prints;
 *   the estimate and its uncertainty on NLLs whose mean and standard error
 *   are worked out by hand;
 *   a chunk on a synthetic model against the model's own logits scored
 *   here (the rows n_ctx/2 .. n_ctx-2, the targets one further), with the
 *   BOS replacement, batch splits and errors.
 *
 * The agreement with llama-perplexity itself on real models is
 * tests/cli_ppl.sh. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lib/cpu/backend.h"
#include "lib/llm/llm.h"
#include "lib/llm/ppl.h"
#include "tests/llm_synth.h"

/* -log softmax(x)[t], in double from the start */
static double nll_ref(const float *x, int n, int t)
{
	double m = x[0];
	for (int i = 1; i < n; i++)
		m = x[i] > m ? x[i] : m;
	double s = 0;
	for (int i = 0; i < n; i++)
		s += exp((double)x[i] - m);
	return -(((double)x[t] - m) - log(s));
}

static void test_nll(void **state)
{
	(void)state;
	float x[1000];
	for (int i = 0; i < 1000; i++)
		x[i] = 0.25f;
	assert_true(fabs(tern_ppl_nll(x, 1000, 7) - log(1000.0)) < 1e-12);

	/* p = (1, 2, 4, 1) / 8: logits ln 1, ln 2, ln 4, ln 1 */
	float y[4] = {0, logf(2), logf(4), 0};
	assert_true(fabs(tern_ppl_nll(y, 4, 2) - log(2.0)) < 1e-6);
	assert_true(fabs(tern_ppl_nll(y, 4, 0) - log(8.0)) < 1e-6);
	assert_true(fabs(tern_ppl_nll(y, 4, 3) - log(8.0)) < 1e-6);

	/* a shift changes nothing, and large logits do not overflow */
	for (int i = 0; i < 4; i++)
		y[i] += 1000.0f;
	assert_true(fabs(tern_ppl_nll(y, 4, 2) - log(2.0)) < 1e-4);
	float z[3] = {-1e30f, 80.0f, 80.0f};
	assert_true(fabs(tern_ppl_nll(z, 3, 1) - log(2.0)) < 1e-12);

	/* random rows against the double reference */
	srand(7);
	for (int r = 0; r < 20; r++) {
		for (int i = 0; i < 1000; i++)
			x[i] = (float)((double)rand() / RAND_MAX * 30.0 - 15.0);
		int t = rand() % 1000;
		assert_true(fabs(tern_ppl_nll(x, 1000, t) - nll_ref(x, 1000, t)) < 1e-5);
	}
}

static void test_rules(void **state)
{
	(void)state;
	/* llama-perplexity: -c 512 scores 255 tokens from position 256 */
	assert_int_equal(tern_ppl_first(512), 256);
	assert_int_equal(tern_ppl_scored(512), 255);
	assert_int_equal(tern_ppl_first(128), 64);
	assert_int_equal(tern_ppl_scored(128), 63);
	assert_int_equal(tern_ppl_scored(129), 64); /* first 64, positions 64..127 */
	assert_int_equal(tern_ppl_scored(3), 1);
	assert_int_equal(tern_ppl_scored(2), 0);
	assert_int_equal(tern_ppl_scored(1), 0);

	/* at least two chunks; a remainder is dropped */
	assert_int_equal(tern_ppl_n_chunks(1023, 512), 0);
	assert_int_equal(tern_ppl_n_chunks(1024, 512), 2);
	assert_int_equal(tern_ppl_n_chunks(1535, 512), 2);
	assert_int_equal(tern_ppl_n_chunks(2471, 128), 19);
	assert_int_equal(tern_ppl_n_chunks(100, 2), 0);
	assert_int_equal(tern_ppl_n_chunks(0, 512), 0);
}

static void test_value(void **state)
{
	(void)state;
	struct tern_ppl_sum s = {0}, a = {1 + 2, 1 + 4, 2}, b = {3, 9, 1};
	double err;
	assert_true(isnan(tern_ppl_value(&s, &err)));
	assert_true(isnan(err));
	/* NLLs 1, 2, 3: mean 2, E[x^2] - mean^2 = 14/3 - 4 = 2/3, standard
	 * error sqrt((2/3) / 2) */
	tern_ppl_add(&s, &a);
	tern_ppl_add(&s, &b);
	assert_int_equal(s.count, 3);
	double ppl = tern_ppl_value(&s, &err);
	assert_true(fabs(ppl - exp(2.0)) < 1e-12);
	assert_true(fabs(err - sqrt(1.0 / 3.0) * exp(2.0)) < 1e-12);
	/* one token: no uncertainty; equal NLLs: none either */
	struct tern_ppl_sum one = {0.5, 0.25, 1}, same = {1.5, 0.75, 3};
	assert_true(fabs(tern_ppl_value(&one, &err) - exp(0.5)) < 1e-12);
	assert_true(isnan(err));
	assert_true(fabs(tern_ppl_value(&same, &err) - exp(0.5)) < 1e-12);
	assert_true(isnan(err) || err < 1e-6);
	assert_true(fabs(tern_ppl_value(&same, NULL) - exp(0.5)) < 1e-12);
}

/* ---- a chunk on a synthetic model ----------------------------------------------------- */

#define CTX 24

struct fixture {
	struct tern_model *m;
	struct tern_backend *be;
	struct tern_llm *l;
};

static void open_fixture(struct fixture *f, int32_t n_ubatch)
{
	f->m = synth_open("llama", "q8_0");
	assert_non_null(f->m);
	tern_err e = {0};
	struct cpu_backend_opts bo = {.n_threads = 2, .max_tokens = 64};
	if (cpu_backend_new(&f->be, &bo, &e))
		fail_msg("backend: %s", e.msg);
	struct tern_llm_opts o = tern_llm_opts_default();
	o.n_ctx = CTX;
	o.n_ubatch = n_ubatch;
	o.logits_all = true;
	if (tern_llm_new(&f->l, f->m, f->be, &o, &e))
		fail_msg("tern_llm_new: %s", e.msg);
}

static void close_fixture(struct fixture *f)
{
	tern_llm_free(f->l);
	tern_backend_free(f->be);
	tern_model_free(f->m);
}

/* the sums scored here from the logits of one decode of all n tokens */
static struct tern_ppl_sum score_here(struct tern_llm *l, const int32_t *tok, int32_t n)
{
	tern_err e = {0};
	tern_llm_rewind(l, 0);
	if (tern_llm_decode(l, tok, n, &e))
		fail_msg("decode: %s", e.msg);
	struct tern_ppl_sum s = {0};
	int32_t nv = tern_llm_n_vocab(l);
	for (int32_t p = n / 2; p + 1 < n; p++) {
		double v = nll_ref(tern_llm_logits(l, p), nv, tok[p + 1]);
		s.nll += v;
		s.nll2 += v * v;
		s.count++;
	}
	return s;
}

static void assert_close_at(const struct tern_ppl_sum *a, const struct tern_ppl_sum *b, double tol, int line)
{
	assert_int_equal(a->count, b->count);
	if (fabs(a->nll - b->nll) > tol * fabs(b->nll) || fabs(a->nll2 - b->nll2) > tol * fabs(b->nll2))
		fail_msg("line %d: nll %.9g vs %.9g, nll2 %.9g vs %.9g", line, a->nll, b->nll, a->nll2, b->nll2);
}
#define assert_close(a, b, tol) assert_close_at(a, b, tol, __LINE__)

static void test_chunk(void **state)
{
	(void)state;
	struct fixture f = {0};
	open_fixture(&f, CTX);
	int32_t tok[CTX], orig[CTX];
	for (int i = 0; i < CTX; i++)
		tok[i] = orig[i] = (int32_t)((i * 37 + 11) % 300) + 3;
	tern_err e = {0};

	/* without BOS: the rows 12..22 score the tokens 13..23 */
	struct tern_ppl_sum s, want = score_here(f.l, tok, CTX);
	assert_int_equal(want.count, 11);
	assert_int_equal(tern_ppl_chunk(f.l, tok, CTX, -1, CTX, CTX, &s, &e), 0);
	assert_close(&s, &want, 1e-7);
	assert_true(s.nll > 0);

	/* with BOS: token 0 is replaced for the run, then restored */
	tok[0] = 1;
	want = score_here(f.l, tok, CTX);
	tok[0] = orig[0];
	assert_int_equal(tern_ppl_chunk(f.l, tok, CTX, 1, CTX, CTX, &s, &e), 0);
	assert_close(&s, &want, 1e-7);
	assert_memory_equal(tok, orig, sizeof tok);
	struct tern_ppl_sum nobos;
	assert_int_equal(tern_ppl_chunk(f.l, tok, CTX, -1, CTX, CTX, &nobos, &e), 0);
	assert_true(fabs(nobos.nll - s.nll) > 1e-6); /* the first token matters */

	/* logical batches of 10 split into micro-batches of 4 (the last of a
	 * batch 2 tokens), and one token at a time: the same sums up to
	 * rounding (the GEMM and the mat-vec paths) */
	struct tern_ppl_sum split, single;
	assert_int_equal(tern_ppl_chunk(f.l, tok, CTX, 1, 10, 4, &split, &e), 0);
	assert_close(&split, &s, 1e-3);
	assert_int_equal(tern_ppl_chunk(f.l, tok, CTX, 1, 1, 1, &single, &e), 0);
	assert_close(&single, &s, 1e-3);

	/* a chunk shorter than the context */
	want = score_here(f.l, tok, 9);
	assert_int_equal(tern_ppl_chunk(f.l, tok, 9, -1, 9, 9, &s, &e), 0);
	assert_int_equal(s.count, 4);
	assert_close(&s, &want, 1e-7);

	/* errors: larger than the context, too small, a micro-batch larger than
	 * the llm's, a BOS outside the vocabulary; the sums are zero */
	assert_int_equal(tern_ppl_chunk(f.l, tok, CTX + 1, -1, 8, 8, &s, &e), TERN_EINVAL);
	assert_int_equal(s.count, 0);
	assert_int_equal(tern_ppl_chunk(f.l, tok, 2, -1, 8, 8, &s, &e), TERN_EINVAL);
	assert_int_equal(tern_ppl_chunk(f.l, tok, CTX, -1, 0, 8, &s, &e), TERN_EINVAL);
	assert_int_equal(tern_ppl_chunk(f.l, tok, CTX, 1 << 20, 8, 8, &s, &e), TERN_EINVAL);
	close_fixture(&f);

	open_fixture(&f, 4);
	assert_int_equal(tern_ppl_chunk(f.l, tok, CTX, 1, CTX, 8, &s, &e), TERN_EINVAL);
	assert_int_equal(s.count, 0);
	assert_memory_equal(tok, orig, sizeof tok);
	tok[5] = 1 << 20; /* a token outside the vocabulary: decode's error */
	assert_int_equal(tern_ppl_chunk(f.l, tok, CTX, 1, CTX, 4, &s, &e), TERN_EINVAL);
	assert_int_equal(tok[0], orig[0]);
	close_fixture(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_nll),
		cmocka_unit_test(test_rules),
		cmocka_unit_test(test_value),
		cmocka_unit_test(test_chunk),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
