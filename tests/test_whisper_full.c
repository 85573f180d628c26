/* test_whisper_full.c - the decoding loop (lib/speech/whisper_full.c):
 *   - tiny.en on jfk.wav, greedy (whisper-cli -bs 1) and beam search 5 /
 *     best of 5 (whisper-cli's defaults): the segments whisper-cli printed
 *     (tests/data/whisper/jfk.greedy.out, jfk.beam.out, -t 2);
 *   - timestamps off: whisper-cli -bs 1 -nt's text;
 *   - the logit filters on hand-made logits (timestamp pairs, the first
 *     timestamp's limit, monotonic timestamps, the timestamp-vs-text rule);
 *   - the entropy of the fallback decision; mt19937 against its
 *     published 10000th output. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/cpu/backend.h"
#include "lib/speech/mel.h"
#include "lib/speech/whisper.h"
#include "lib/speech/whisper_full.h"
#include "tests/testutil.h"

static struct whisper_model *load_model(void)
{
	char path[512];
	tern_err e = {0};
	struct whisper_model *m = NULL;
	snprintf(path, sizeof(path), "%s/models/ggml-tiny.en.bin", test_data_dir());
	if (whisper_model_load(&m, path, &e))
		fail_msg("%s", e.msg);
	return m;
}

/* whisper-cli's line for a segment */
static void seg_line(char *out, size_t cap, const struct whisper_segment *s)
{
	int64_t t[2] = {s->t0, s->t1};
	char ts[2][32];
	for (int k = 0; k < 2; k++) {
		int64_t ms = t[k] * 10;
		snprintf(ts[k], sizeof(ts[k]), "%02d:%02d:%02d.%03d", (int)(ms / 3600000), (int)(ms / 60000 % 60),
			 (int)(ms / 1000 % 60), (int)(ms % 1000));
	}
	snprintf(out, cap, "[%s --> %s]  %s\n", ts[0], ts[1], s->text);
}

static void transcribe(const struct whisper_full_params *p, const char *want_file)
{
	struct whisper_model *m = load_model();
	tern_err e = {0};
	char path[512];
	snprintf(path, sizeof(path), "%s/audio/jfk.wav", test_data_dir());
	size_t n = 0;
	float *pcm = test_read_audio(path, &n, NULL);
	assert_non_null(pcm);
	struct tern_mel *mel = NULL;
	float *spec = NULL;
	size_t n_len = 0;
	assert_int_equal(tern_mel_new(&mel, m->n_mel_filters, m->n_fft_bins, m->mel_filters, &e), 0);
	assert_int_equal(tern_mel_compute(mel, pcm, n, &spec, &n_len, &e), 0);
	struct tern_backend *be = NULL;
	struct cpu_backend_opts o = {.n_threads = 2, .max_tokens = 512};
	assert_int_equal(cpu_backend_new(&be, &o, &e), 0);
	struct whisper_full *w = NULL;
	if (whisper_full_new(&w, m, be, &e))
		fail_msg("%s", e.msg);
	struct whisper_mel_mem mm = {spec, n_len};
	struct whisper_mel_src src = whisper_mel_src_mem(&mm, whisper_n_len_org(n));
	assert_int_equal(src.n_len_org, 1099);
	struct whisper_result r = {0};
	if (whisper_full_run(w, p, &src, &r, NULL, NULL, &e))
		fail_msg("%s", e.msg);

	char got[4096] = {0};
	size_t len = 0;
	if (p->no_timestamps) {
		len = (size_t)snprintf(got, sizeof(got), "\n");
		for (int i = 0; i < r.n_seg; i++)
			len += (size_t)snprintf(got + len, sizeof(got) - len, "%s", r.seg[i].text);
	} else {
		len = (size_t)snprintf(got, sizeof(got), "\n"); /* whisper-cli's first line */
		for (int i = 0; i < r.n_seg; i++)
			seg_line(got + len, sizeof(got) - len, &r.seg[i]), len = strlen(got);
	}
	snprintf(path, sizeof(path), "tests/data/whisper/%s", want_file);
	size_t wsize = 0;
	char *want = test_read_file(path, &wsize);
	assert_non_null(want);
	print_message("%s: %d segments\n%s", want_file, r.n_seg, got);
	assert_int_equal(strlen(got), wsize);
	assert_memory_equal(got, want, wsize);
	/* the tokens carry their probabilities */
	for (int i = 0; i < r.n_seg; i++)
		for (int k = 0; k < r.seg[i].n_tokens; k++) {
			const struct whisper_token_data *t = &r.seg[i].tokens[k];
			assert_true(t->p > 0.0f && t->p <= 1.0f);
			assert_true(fabsf(logf(t->p) - t->plog) < 1e-4f);
		}
	free(want);
	whisper_result_free(&r);
	whisper_full_free(w);
	tern_backend_free(be);
	tern_mel_free(mel);
	free(spec);
	free(pcm);
	whisper_model_free(m);
}

static void test_jfk_greedy(void **state)
{
	(void)state;
	struct whisper_full_params p = whisper_full_default_params();
	p.beam_size = 1;
	transcribe(&p, "jfk.greedy.out");
}

static void test_jfk_greedy_nt(void **state)
{
	(void)state;
	struct whisper_full_params p = whisper_full_default_params();
	p.beam_size = 1;
	p.no_timestamps = true;
	transcribe(&p, "jfk.greedy_nt.out");
}

static void test_jfk_beam(void **state)
{
	(void)state;
	struct whisper_full_params p = whisper_full_default_params();
	transcribe(&p, "jfk.beam.out");
}

/* ---- the filters on hand-made logits ------------------------------------ */

static void filter(const struct whisper_model *m, const struct whisper_full_params *p, const int32_t *toks, int n,
		   bool has_ts, int seek_delta, float *logits, float *lp, float *pr)
{
	const struct whisper_filter_state st = {toks, n, has_ts, seek_delta};
	whisper_full_filter(m, p, 220, &st, 0.0f, logits, lp, pr);
}

static void test_filters(void **state)
{
	(void)state;
	struct whisper_model *m = load_model();
	const struct whisper_vocab_ids *v = &m->ids;
	const int nv = m->hp.n_vocab;
	float *l = malloc(sizeof(float) * (size_t)nv), *lp = malloc(sizeof(float) * (size_t)nv),
	      *pr = malloc(sizeof(float) * (size_t)nv);
	struct whisper_full_params p = whisper_full_default_params();

	/* initial: eot and " " suppressed, specials suppressed, timestamps
	 * up to <|1.00|> allowed; flat logits: the 51 timestamps together
	 * (51 e^0) beat any one text token (e^0), so only they remain - with
	 * the log-probabilities of before the text was masked, as whisper.cpp
	 * keeps them (not renormalised) */
	for (int i = 0; i < nv; i++)
		l[i] = 0.0f;
	filter(m, &p, NULL, 0, false, 3000, l, lp, pr);
	assert_true(isinf(l[v->eot]) && isinf(l[220]) && isinf(l[v->sot]) && isinf(l[v->not_]));
	assert_true(isinf(l[v->nosp]) && isinf(l[v->prev]) && isinf(l[v->solm]));
	assert_true(isinf(l[843])); /* text lost to the timestamps */
	int n_open = 0;
	for (int i = 0; i < nv; i++)
		n_open += !isinf(lp[i]);
	assert_int_equal(n_open, 51);
	/* eot, " ", sot, translate, transcribe, solm, prev, nosp, not, 99
	 * languages and 1500 - 50 timestamps were masked before the softmax */
	const int n_soft = nv - (9 + 99 + 1500 - 50);
	assert_float_equal(pr[v->beg + 50], 1.0f / (float)n_soft, 1e-9);
	assert_float_equal(pr[v->beg + 51], 0.0f, 0.0);

	/* a text token well ahead: text stays, probabilities are the softmax */
	for (int i = 0; i < nv; i++)
		l[i] = 0.0f;
	l[843] = 10.0f;
	filter(m, &p, NULL, 0, false, 3000, l, lp, pr);
	assert_false(isinf(l[843]));
	assert_true(pr[843] > 0.3f);
	assert_float_equal(lp[843], logf(pr[843]), 1e-4);

	/* after text then a timestamp: the next is a timestamp (closing a
	 * pair) or eot; text is masked */
	const int32_t t1[3] = {v->beg, 843, v->beg + 100};
	for (int i = 0; i < nv; i++)
		l[i] = 0.0f;
	l[843] = 50.0f;
	l[v->eot] = 40.0f;
	filter(m, &p, t1, 3, true, 200, l, lp, pr);
	assert_true(isinf(l[843]));
	assert_false(isinf(l[v->eot]));
	/* monotonic: timestamps before seek_delta / 2 are gone */
	assert_true(isinf(l[v->beg + 99]));
	assert_false(isinf(l[v->beg + 100]));

	/* two timestamps in a row: no third */
	const int32_t t2[4] = {v->beg, 843, v->beg + 100, v->beg + 100};
	for (int i = 0; i < nv; i++)
		l[i] = 0.0f;
	l[843] = 10.0f;
	filter(m, &p, t2, 4, true, 200, l, lp, pr);
	for (int i = v->beg; i < nv; i++)
		assert_true(isinf(l[i]));
	assert_false(isinf(l[843]));

	/* no timestamps: all of them suppressed */
	p.no_timestamps = true;
	for (int i = 0; i < nv; i++)
		l[i] = 0.0f;
	filter(m, &p, t1, 2, false, 3000, l, lp, pr);
	for (int i = v->beg; i < nv; i++)
		assert_true(isinf(l[i]) && pr[i] == 0.0f);
	/* temperature divides the logits first */
	p.no_timestamps = false;
	for (int i = 0; i < nv; i++)
		l[i] = 0.0f;
	l[843] = 20.0f;
	const struct whisper_filter_state st = {t2, 2, false, 3000};
	whisper_full_filter(m, &p, 220, &st, 2.0f, l, lp, pr);
	assert_float_equal(l[843], 10.0f, 0.0);
	free(l);
	free(lp);
	free(pr);
	whisper_model_free(m);
}

static void test_entropy_mt(void **state)
{
	(void)state;
	/* 40 tokens: the last 32 are 16 x a, 16 x b -> ln 2 */
	int32_t t[40];
	for (int i = 0; i < 40; i++)
		t[i] = i < 8 ? 7 : (i % 2 ? 1 : 2);
	assert_float_equal(whisper_full_entropy(t, 40), log(2.0), 1e-12);
	for (int i = 0; i < 40; i++)
		t[i] = i;
	assert_float_equal(whisper_full_entropy(t, 40), log(32.0), 1e-12);
	assert_float_equal(whisper_full_entropy(t, 1), 0.0, 0.0);

	/* std::mt19937 default seed 5489: the 10000th output is 4123659995 */
	struct whisper_mt g;
	whisper_mt_seed(&g, 5489);
	uint32_t x = 0;
	for (int i = 0; i < 10000; i++)
		x = whisper_mt_next(&g);
	assert_int_equal(x, 4123659995u);
	/* the discrete distribution: zero weights are never drawn, and the
	 * draws follow the weights */
	const float w[4] = {0.0f, 1.0f, 0.0f, 3.0f};
	double cum[4];
	whisper_mt_discrete_prep(w, 4, cum);
	int count[4] = {0};
	for (int i = 0; i < 4000; i++)
		count[whisper_mt_discrete(&g, cum, 4)]++;
	assert_int_equal(count[0] + count[2], 0);
	assert_true(count[1] > 850 && count[1] < 1150);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_filters),
		cmocka_unit_test(test_entropy_mt),
		cmocka_unit_test(test_jfk_greedy),
		cmocka_unit_test(test_jfk_greedy_nt),
		cmocka_unit_test(test_jfk_beam),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
