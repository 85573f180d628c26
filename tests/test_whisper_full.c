/* test_whisper_full.c - the decoding loop (lib/speech/whisper_full.c):
 *   - tiny.en on jfk.wav, greedy (whisper-cli -bs 1) and beam search 5 /
 *     best of 5 (whisper-cli's defaults): the segments whisper-cli printed
 *     (tests/data/whisper/jfk.greedy.out, jfk.beam.out, -t 2);
 *   - timestamps off: whisper-cli -bs 1 -nt's text;
 *   - the logit filters on hand-made logits (timestamp pairs, the first
 *     timestamp's limit, monotonic timestamps, the timestamp-vs-text rule);
 *   - the entropy of the fallback decision; mt19937 against its
 *     published 10000th output. */
#include <ctype.h>
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
#include "lib/speech/mel_spool.h"
#include "lib/speech/whisper.h"
#include "lib/speech/whisper_full.h"
#include "tests/rec_backend.h"
#include "tests/testutil.h"
#include "tests/whisper_jfk.h"

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

/* timestamps of got within tol centiseconds of want's, the rest of
 * each line equal */
static void same_within(const char *got, const char *want, int tol)
{
	int n = 0;
	while (*want) {
		int h0, m0, s0, ms0, h1, m1, s1, ms1, g[8], used = 0, gused = 0;
		if (sscanf(want, "[%d:%d:%d.%d --> %d:%d:%d.%d]%n", &h0, &m0, &s0, &ms0, &h1, &m1, &s1, &ms1, &used) == 8) {
			assert_int_equal(sscanf(got, "[%d:%d:%d.%d --> %d:%d:%d.%d]%n", &g[0], &g[1], &g[2], &g[3], &g[4],
						&g[5], &g[6], &g[7], &gused),
					 8);
			long w0 = ((h0 * 60L + m0) * 60 + s0) * 1000 + ms0, w1 = ((h1 * 60L + m1) * 60 + s1) * 1000 + ms1;
			long g0 = ((g[0] * 60L + g[1]) * 60 + g[2]) * 1000 + g[3];
			long g1 = ((g[4] * 60L + g[5]) * 60 + g[6]) * 1000 + g[7];
			assert_true(labs(g0 - w0) <= tol * 10 && labs(g1 - w1) <= tol * 10);
			want += used, got += gused;
			n++;
		}
		const char *we = strchr(want, '\n'), *ge = strchr(got, '\n');
		assert_non_null(we);
		assert_non_null(ge);
		assert_int_equal(we - want, ge - got);
		assert_memory_equal(want, got, (size_t)(we - want));
		want = we + 1, got = ge + 1;
	}
	assert_string_equal(got, "");
	assert_true(n > 0);
}

/* jfk.wav through p on a CPU backend with caps_off masked off; the
 * whisper-cli output want_file, timestamps within tol centiseconds */
static void transcribe_caps(const struct whisper_full_params *p, const char *want_file, int tol, unsigned caps_off)
{
	struct whisper_model *m = load_model();
	tern_err e = {0};
	char path[512];
	struct jfk_run j;
	jfk_open_caps(&j, m, caps_off);
	assert_int_equal(j.src.n_len_org, 1099);
	struct whisper_result r = {0};
	if (whisper_full_run(j.w, p, &j.src, &r, NULL, NULL, &e))
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
	if (tol == 0) {
		assert_int_equal(strlen(got), wsize);
		assert_memory_equal(got, want, wsize);
	} else {
		same_within(got, want, tol);
	}
	/* the tokens carry their probabilities */
	for (int i = 0; i < r.n_seg; i++)
		for (int k = 0; k < r.seg[i].n_tokens; k++) {
			const struct whisper_token_data *t = &r.seg[i].tokens[k];
			assert_true(t->p > 0.0f && t->p <= 1.0f);
			assert_true(fabsf(logf(t->p) - t->plog) < 1e-4f);
		}
	free(want);
	whisper_result_free(&r);
	jfk_close(&j);
	whisper_model_free(m);
}

static void transcribe(const struct whisper_full_params *p, const char *want_file, int tol)
{
	transcribe_caps(p, want_file, tol, 0);
}

static void test_fallback_rules(void **state)
{
	(void)state;
	const struct whisper_full_params p = whisper_full_default_params();
	/* entropy: only past 32 tokens, strictly below 2.4 */
	assert_true(whisper_full_repetitive(&p, 33, 2.39));
	assert_false(whisper_full_repetitive(&p, 32, 0.0));
	assert_false(whisper_full_repetitive(&p, 100, 2.41));
	/* a failed decoder always falls back */
	assert_true(whisper_full_needs_fallback(&p, true, 0.0, 0.0f));
	/* a poor average log-probability falls back, unless it is silence */
	assert_true(whisper_full_needs_fallback(&p, false, -1.01, 0.59f));
	assert_false(whisper_full_needs_fallback(&p, false, -1.01, 0.6f));
	assert_false(whisper_full_needs_fallback(&p, false, -1.0, 0.0f));
	/* silence: no-speech above 0.6 and a poor log-probability */
	assert_true(whisper_full_is_no_speech(&p, -1.01, 0.61f));
	assert_false(whisper_full_is_no_speech(&p, -1.01, 0.6f));
	assert_false(whisper_full_is_no_speech(&p, -0.5, 0.99f));
	/* compression ratios, as Python's len(t) / len(zlib.compress(t))
	 * gives them: 106 / 78 and 112 / 15 */
	const char *speech = " And so my fellow Americans ask not what your country can do for you ask what you can do "
			     "for your country.";
	char loop_text[200] = {0};
	for (int i = 0; i < 28; i++)
		strcat(loop_text, " the");
	assert_float_equal(whisper_full_compression_ratio(speech, strlen(speech)), 106.0 / 78.0, 1e-12);
	assert_float_equal(whisper_full_compression_ratio(loop_text, strlen(loop_text)), 112.0 / 15.0, 1e-12);
	assert_float_equal(whisper_full_compression_ratio("", 0), 0.0, 0.0);
	/* a repetition loop's entropy, as the decoder computes it */
	int32_t loop[40];
	for (int i = 0; i < 40; i++)
		loop[i] = 100 + i % 4; /* 4 tokens repeated: ln 4 = 1.39 */
	assert_true(whisper_full_repetitive(&p, 40, whisper_full_entropy(loop, 40)));
}

/* a log-probability threshold nothing meets: every temperature is tried
 * (0, 0.5, 1.0: two fallbacks), the last one's samples are used, and the
 * seeded generators make it repeatable */
static void test_jfk_fallback(void **state)
{
	(void)state;
	struct whisper_model *m = load_model();
	tern_err e = {0};
	struct jfk_run j;
	jfk_open(&j, m);
	struct whisper_full_params p = whisper_full_default_params();
	p.beam_size = 1;
	p.best_of = 3;
	p.temperature_inc = 0.5f;
	p.logprob_thold = 0.5f; /* above any average log-probability */
	struct whisper_result r[2] = {{0}, {0}};
	for (int k = 0; k < 2; k++)
		if (whisper_full_run(j.w, &p, &j.src, &r[k], NULL, NULL, &e))
			fail_msg("%s", e.msg);
	print_message("fallbacks %d p / %d h, %d segments, first: '%s'\n", r[0].stats.n_fallback_p,
		      r[0].stats.n_fallback_h, r[0].n_seg, r[0].n_seg ? r[0].seg[0].text : "");
	assert_int_equal(r[0].stats.n_fallback_p, 2 * r[0].stats.n_encode);
	/* a compression ratio threshold below any text's: every decoder fails
	 * by it, at each temperature */
	p.logprob_thold = -1.0f;
	p.compression_ratio_thold = 0.5f;
	struct whisper_result rc = {0};
	if (whisper_full_run(j.w, &p, &j.src, &rc, NULL, NULL, &e))
		fail_msg("%s", e.msg);
	assert_int_equal(rc.stats.n_fallback_h, 1 + 3 + 3); /* greedy at 0, 3 samples at 0.5 and 1.0 */
	whisper_result_free(&rc);
	assert_true(r[0].n_seg > 0);
	assert_int_equal(r[0].n_seg, r[1].n_seg);
	for (int i = 0; i < r[0].n_seg; i++) {
		assert_string_equal(r[0].seg[i].text, r[1].seg[i].text);
		assert_true(r[0].seg[i].t0 == r[1].seg[i].t0 && r[0].seg[i].t1 == r[1].seg[i].t1);
	}
	whisper_result_free(&r[0]);
	whisper_result_free(&r[1]);
	jfk_close(&j);
	whisper_model_free(m);
}

static void test_jfk_greedy(void **state)
{
	(void)state;
	struct whisper_full_params p = whisper_full_default_params();
	p.beam_size = 1;
	transcribe(&p, "jfk.greedy.out", 0);
}

static void test_jfk_greedy_nt(void **state)
{
	(void)state;
	struct whisper_full_params p = whisper_full_default_params();
	p.beam_size = 1;
	p.no_timestamps = true;
	transcribe(&p, "jfk.greedy_nt.out", 0);
}

/* s lower-cased, letters and single spaces only, no spaces at the ends */
static void words_of(const char *s, char *out, size_t cap)
{
	size_t n = 0;
	for (; *s && n + 1 < cap; s++) {
		char c = (char)tolower((unsigned char)*s);
		if (c >= 'a' && c <= 'z')
			out[n++] = c;
		else if (c == ' ' && n > 0 && out[n - 1] != ' ')
			out[n++] = ' ';
	}
	while (n > 0 && out[n - 1] == ' ')
		n--;
	out[n] = 0;
}

static void test_jfk_beam(void **state)
{
	(void)state;
	/* whisper.cpp's beam search draws its candidates at random from the
	 * distribution (with the same generators as ours, test_entropy_mt),
	 * so its result depends on where a draw falls between two cumulative
	 * probabilities. Here one of its 720 draws lies closer to such a
	 * boundary than two correct builds agree on the probabilities (ours
	 * on an AVX2 machine: step 1's top probability 0.665292, whisper.cpp
	 * built there 0.665365; draw 36 picks token 350 where whisper.cpp
	 * picks 355), and the hypothesis kept is then either whisper-cli's
	 * (two segments) or the nearly as likely lower-case single segment
	 * (whisper-cli's own for the CTranslate2 conversion of the model).
	 * Both say whisper-cli's words; tests/cli_whisper_models.sh compares
	 * whole beam transcripts where the draws are stable (jfk3.wav, base). */
	struct whisper_model *m = load_model();
	tern_err e = {0};
	struct jfk_run j;
	jfk_open(&j, m);
	struct whisper_full_params p = whisper_full_default_params();
	struct whisper_result r = {0};
	if (whisper_full_run(j.w, &p, &j.src, &r, NULL, NULL, &e))
		fail_msg("%s", e.msg);
	char text[1024] = {0}, got[1024], want[1024];
	size_t len = 0;
	for (int i = 0; i < r.n_seg; i++)
		len += (size_t)snprintf(text + len, sizeof(text) - len, "%s", r.seg[i].text);
	words_of(text, got, sizeof got);
	size_t wsize = 0;
	char *ref = test_read_file("tests/data/whisper/jfk.beam.out", &wsize);
	assert_non_null(ref);
	/* the segments' text follows "]  " */
	len = 0;
	text[0] = 0;
	for (const char *q = strstr(ref, "]  "); q; q = strstr(q, "]  ")) {
		q += 3;
		const char *nl = strchr(q, '\n');
		len += (size_t)snprintf(text + len, sizeof(text) - len, "%.*s ", (int)(nl ? nl - q : (long)strlen(q)), q);
	}
	words_of(text, want, sizeof want);
	print_message("beam: %d segments: '%s'\n", r.n_seg, got);
	assert_true(r.n_seg >= 1 && r.n_seg <= 2);
	assert_string_equal(got, want);
	assert_true(strlen(want) > 80);
	for (int i = 0; i < r.n_seg; i++)
		assert_true(r.seg[i].t0 < r.seg[i].t1 && (i == 0 || r.seg[i - 1].t1 <= r.seg[i].t0));
	free(ref);
	whisper_result_free(&r);
	jfk_close(&j);
	whisper_model_free(m);
}

/* On a backend without ggml's rounding (TERN_BACKEND_GGML_NUMERICS masked
 * off the CPU's, as a GPU's lacks it) Whisper runs its f32 numerics (no
 * ggml request reaches the backend: its sync would fail) and transcribes
 * jfk.wav as whisper-cli does, word for word, greedy and with timestamps.
 * The f32 numerics move the logits by about 1e-2 from whisper.cpp's
 * (test_whisper: logits NMSE 9e-4), which may move a segment's end by a
 * timestamp token of 2 cs (here they came out the same), never the text:
 * tol 2. */
static void test_jfk_plain_numerics(void **state)
{
	(void)state;
	struct whisper_full_params p = whisper_full_default_params();
	p.beam_size = 1;
	transcribe_caps(&p, "jfk.greedy.out", 2, TERN_BACKEND_GGML_NUMERICS);
	p.no_timestamps = true;
	transcribe_caps(&p, "jfk.greedy_nt.out", 0, TERN_BACKEND_GGML_NUMERICS);
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

/* whisper_tokenize: the words std::regex finds with whisper.cpp's pattern
 * (a C++ program printed [Hello][,][  ][ world][ ][ --][ it]['s][ 42][ o]
 * ['][clock][;][ don]['t][ panic][!][ ][ ok][?]), each as the longest
 * tokens from its left ("  " is not a token: two " ") */
static void test_tokenize(void **state)
{
	(void)state;
	struct whisper_model *m = load_model();
	tern_err e = {0};
	int32_t *t = NULL;
	int n = 0;
	assert_int_equal(whisper_tokenize(m, "Hello,   world  -- it's 42 o'clock; don't panic!  ok?", &t, &n, &e), 0);
	static const int32_t want[] = {15496, 11,  220, 220, 995, 220, 1377,  340,   338,   5433, 267,
				       6,     15750, 26, 836, 470, 13619, 0,    220,   12876, 30};
	const char *const text[] = {"Hello", ",", " ", " ", " world", " ", " --", " it", "'s", " 42", " o",
				    "'", "clock", ";", " don", "'t", " panic", "!", " ", " ok", "?"};
	assert_int_equal(n, 21);
	for (int i = 0; i < n; i++) {
		struct tern_str s = ggml_legacy_token(m->file, (uint64_t)t[i]);
		assert_int_equal(s.len, strlen(text[i]));
		assert_memory_equal(s.ptr, text[i], s.len);
		assert_int_equal(t[i], want[i]);
	}
	free(t);
	assert_int_equal(whisper_tokenize(m, "", &t, &n, &e), 0);
	assert_int_equal(n, 0);
	free(t);
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

	/* the draws of std::discrete_distribution<> (libstdc++) over these
	 * 1000 float weights with std::mt19937(s), s = 0, 1, 2: printed by a
	 * small C++ program (g++ 13) */
	static const int want[3][6] = {
		{590, 845, 859, 848, 620, 383}, {994, 929, 127, 997, 236, 397}, {182, 929, 946, 484, 319, 152}};
	float *wt = malloc(sizeof(float) * 1000);
	double *c = malloc(sizeof(double) * 1000);
	for (int i = 0; i < 1000; i++)
		wt[i] = (float)((i * 7919) % 1000) / 1000.0f * (i % 3 == 0 ? 0 : 1);
	whisper_mt_discrete_prep(wt, 1000, c);
	for (int s = 0; s < 3; s++) {
		whisper_mt_seed(&g, (uint32_t)s);
		for (int k = 0; k < 6; k++)
			assert_int_equal(whisper_mt_discrete(&g, c, 1000), want[s][k]);
	}
	free(wt);
	free(c);
}

/* a sequence forked with whisper_decoder_copy_seq continues as the
 * original would: the logits after prefix + token on the copy equal those
 * of the same calls on a sequence of its own */
static void test_cache_copy(void **state)
{
	(void)state;
	struct whisper_model *m = load_model();
	tern_err e = {0};
	struct tern_backend *be = NULL;
	struct cpu_backend_opts o = {.n_threads = 2, .max_tokens = 512};
	assert_int_equal(cpu_backend_new(&be, &o, &e), 0);
	struct whisper_encoder *enc = NULL;
	struct whisper_decoder *dec = NULL;
	size_t n_len = 3000;
	float *mel = calloc(80 * n_len, sizeof(float));
	for (size_t i = 0; i < 80 * n_len; i++)
		mel[i] = (float)((i * 2654435761u) % 1000) / 1000.0f - 0.5f;
	if (whisper_encoder_new(&enc, m, be, &e) || whisper_encode(enc, mel, n_len, 0, &e) ||
	    whisper_decoder_new(&dec, m, be, &e) || whisper_decoder_set_audio(dec, whisper_encoder_output(enc), &e))
		fail_msg("%s", e.msg);
	assert_int_equal(whisper_decoder_n_seq(dec), 1);
	assert_int_equal(whisper_decoder_set_n_seq(dec, 3, &e), 0);
	const int32_t toks[6] = {m->ids.sot, m->ids.beg, 843, 370, 452, 7403};
	float *a = malloc(sizeof(float) * 51864), *b = malloc(sizeof(float) * 51864);
	/* a different history in sequence 2, then sequence 0's copied over it */
	assert_int_equal(whisper_decode_seq(dec, 2, toks + 2, 4, 0, a, &e), 0);
	assert_int_equal(whisper_decode_seq(dec, 0, toks, 5, 0, a, &e), 0);
	assert_int_equal(whisper_decoder_copy_seq(dec, 0, 2, 5, &e), 0);
	assert_int_equal(whisper_decode_seq(dec, 2, toks + 5, 1, 5, a, &e), 0);
	/* the same path on sequence 1, without the copy: the same bits */
	assert_int_equal(whisper_decode_seq(dec, 1, toks, 5, 0, b, &e), 0);
	assert_int_equal(whisper_decode_seq(dec, 1, toks + 5, 1, 5, b, &e), 0);
	assert_memory_equal(a, b, sizeof(float) * 51864);
	/* errors */
	assert_int_equal(whisper_decoder_copy_seq(dec, 0, 3, 5, &e), TERN_ERANGE);
	assert_int_equal(whisper_decode_seq(dec, 3, toks, 1, 0, a, &e), TERN_ERANGE);
	assert_int_equal(whisper_decoder_set_n_seq(dec, 0, &e), TERN_EINVAL);
	free(a);
	free(b);
	free(mel);
	whisper_decoder_free(dec);
	whisper_encoder_free(enc);
	tern_backend_free(be);
	whisper_model_free(m);
}

/* lib/backend.h's replay rule in Whisper's decoder: through the
 * recording backend (tests/rec_backend.h), one-token steps of one
 * sequence (greedy), then steps of three sequences at once (a beam
 * search's), each kind the same calls every step (the recorder's sync
 * fails otherwise); their logits the plain backend's, bit for bit. */
static void test_replay(void **state)
{
	(void)state;
	enum { STEPS = 4, NV = 51864 };
	struct whisper_model *m = load_model();
	tern_err e = {0};
	struct tern_backend *be = NULL, *rb = NULL;
	struct cpu_backend_opts o = {.n_threads = 2, .max_tokens = 512};
	assert_int_equal(cpu_backend_new(&be, &o, &e), 0);
	assert_int_equal(rec_backend_new(&rb, be, &e), 0);
	size_t n_len = 3000;
	float *mel = calloc(80 * n_len, sizeof(float));
	for (size_t i = 0; i < 80 * n_len; i++)
		mel[i] = (float)((i * 2654435761u) % 1000) / 1000.0f - 0.5f;
	const int32_t toks[2 + 3 * 2 * STEPS] = {m->ids.sot, m->ids.beg, 843, 370, 452, 7403, 11, 262, 1242, 318,
						 4171, 257, 3303, 13, 383, 3290, 318, 845, 2068, 1101, 588, 340, 3619, 50};
	float *lg[2];
	for (int k = 0; k < 2; k++) {
		struct tern_backend *b = k ? be : rb;
		struct whisper_encoder *enc = NULL;
		struct whisper_decoder *dec = NULL;
		if (whisper_encoder_new(&enc, m, b, &e) || whisper_encode(enc, mel, n_len, 0, &e) ||
		    whisper_decoder_new(&dec, m, b, &e) || whisper_decoder_set_audio(dec, whisper_encoder_output(enc), &e) ||
		    whisper_decoder_set_n_seq(dec, 3, &e))
			fail_msg("%s", e.msg);
		lg[k] = malloc(sizeof(float) * NV * 4 * STEPS);
		float *out = lg[k];
		for (int s = 0; s < 3; s++)
			assert_int_equal(whisper_decode_seq(dec, s, toks, 2, 0, out, &e), 0);
		/* greedy: one token of sequence 0 per step */
		for (int i = 0; i < STEPS; i++, out += NV)
			if (whisper_decode_seq(dec, 0, toks + 2 + i, 1, 2 + i, out, &e))
				fail_msg("greedy step %d: %s", i, e.msg);
		if (k == 0) {
			assert_int_equal(rec_backend_steps(rb), STEPS - 1);
			rec_backend_reset(rb); /* another kind of step */
		}
		/* beams: a token of each of three sequences per step */
		const int seqs[3] = {1, 2, 0};
		for (int i = 0; i < STEPS; i++, out += 3 * NV) {
			const int32_t past[3] = {2 + i, 2 + i, 2 + STEPS + i};
			float *const outs[3] = {out, out + NV, out + 2 * NV};
			if (whisper_decode_multi(dec, 3, seqs, toks + 2 + STEPS + 3 * i, past, outs, &e))
				fail_msg("beam step %d: %s", i, e.msg);
		}
		whisper_decoder_free(dec);
		whisper_encoder_free(enc);
	}
	assert_int_equal(rec_backend_steps(rb), STEPS - 1);
	if (memcmp(lg[0], lg[1], sizeof(float) * NV * 4 * STEPS))
		fail_msg("the recorded run's logits differ from the backend's own");
	free(lg[0]);
	free(lg[1]);
	free(mel);
	tern_backend_free(rb);
	tern_backend_free(be);
	whisper_model_free(m);
}

/* the spooled spectrogram, pushed in blocks of every awkward size, gives
 * tern_mel_compute's windows bit for bit (jfk.wav, and 70 s of a
 * synthetic signal for several windows and the end) */
static void spool_check(struct tern_mel *mel, const float *pcm, size_t n, const size_t *blocks, int n_blocks)
{
	tern_err e = {0};
	float *full = NULL;
	size_t n_len = 0;
	assert_int_equal(tern_mel_compute(mel, pcm, n, &full, &n_len, &e), 0);
	struct tern_mel_spool *sp = NULL;
	assert_int_equal(tern_mel_spool_new(&sp, mel, 3000, &e), 0);
	for (size_t at = 0, k = 0; at < n; k++) {
		size_t b = blocks[k % (size_t)n_blocks];
		b = b < n - at ? b : n - at;
		assert_int_equal(tern_mel_spool_push(sp, pcm + at, b, &e), 0);
		at += b;
	}
	assert_int_equal(tern_mel_spool_finish(sp, &e), 0);
	assert_int_equal(tern_mel_spool_frames(sp), n_len);
	assert_int_equal(tern_mel_spool_push(sp, pcm, 1, &e), TERN_EINVAL);
	struct whisper_mel_src src = tern_mel_spool_src(sp);
	assert_int_equal(src.n_len_org, whisper_n_len_org(n));
	const int64_t f0s[] = {0, 1, 1099, 3000, 4321, (int64_t)n_len - 3000, (int64_t)n_len - 10};
	for (size_t q = 0; q < sizeof(f0s) / sizeof(f0s[0]); q++) {
		int64_t f0 = f0s[q];
		if (f0 < 0 || f0 >= (int64_t)n_len)
			continue;
		const float *w = NULL;
		size_t stride = 0;
		int64_t first = -1;
		assert_int_equal(src.window(src.ctx, f0, &w, &stride, &first, &e), 0);
		assert_true(first <= f0);
		for (int j = 0; j < 80; j++)
			for (int64_t f = f0; f < f0 + 3000; f++) {
				float want = f < (int64_t)n_len ? full[(size_t)j * n_len + (size_t)f] : 0.0f;
				float got = w[(size_t)j * stride + (size_t)(f - first)];
				if (memcmp(&want, &got, sizeof got))
					fail_msg("frame %lld filter %d: %.9g, want %.9g", (long long)f, j, got, want);
			}
	}
	tern_mel_spool_free(sp);
	free(full);
}

static void test_mel_spool(void **state)
{
	(void)state;
	struct whisper_model *m = load_model();
	tern_err e = {0};
	struct tern_mel *mel = NULL;
	assert_int_equal(tern_mel_new(&mel, m->n_mel_filters, m->n_fft_bins, m->mel_filters, &e), 0);
	char path[512];
	snprintf(path, sizeof(path), "%s/audio/jfk.wav", test_data_dir());
	size_t n = 0;
	float *pcm = test_read_audio(path, &n, NULL);
	assert_non_null(pcm);
	const size_t odd[] = {1, 7, 159, 160, 161, 199, 200, 201, 401, 1000, 4097};
	spool_check(mel, pcm, n, odd, 11);
	const size_t big[] = {65536};
	spool_check(mel, pcm, n, big, 1);
	const size_t edge[] = {200, 13}; /* blocks ending where the first frame does */
	spool_check(mel, pcm, n, edge, 2);
	free(pcm);
	/* 70 s: chirps and noise */
	n = 70 * 16000;
	pcm = malloc(n * sizeof(float));
	uint32_t x = 1;
	for (size_t i = 0; i < n; i++) {
		x = x * 1664525u + 1013904223u;
		pcm[i] = 0.3f * sinf(0.0001f * (float)i * (float)(i % 50000) / 50000.0f) +
			 0.01f * ((float)(x >> 8) / 16777216.0f - 0.5f);
	}
	const size_t mid[] = {3333, 16000, 777};
	spool_check(mel, pcm, n, mid, 3);
	spool_check(mel, pcm, 40000, edge, 2);
	/* shorter than one frame */
	spool_check(mel, pcm, 150, odd, 11);
	free(pcm);
	tern_mel_free(mel);
	whisper_model_free(m);
}

/* ---- token times, -ml, the VAD time map, language probabilities ------------
 * Expected values worked out by hand from whisper.cpp's rules (see each). */

static struct whisper_token_data tok(int32_t id, int32_t tid, float pt)
{
	return (struct whisper_token_data){.id = id, .tid = tid, .p = 0.5f, .pt = pt, .ptsum = pt, .t0 = -1, .t1 = -1};
}

static void test_token_times(void **state)
{
	(void)state;
	struct whisper_model *m = load_model();
	const int32_t beg = m->ids.beg;
	/* [BEG] " And"(sure of 2.20 s) " so"(a timestamp going back) " my"(unsure) <|2.00|> over 1.00..3.00 s */
	struct whisper_token_data t[5] = {tok(beg, beg, 1.0f), tok(843, beg + 60, 0.5f), tok(523, beg + 10, 0.9f),
					  tok(616, beg + 70, 0.005f), tok(beg + 100, beg + 100, 1.0f)};
	struct whisper_token_data t2[5];
	memcpy(t2, t, sizeof t);
	struct whisper_segment s = {.t0 = 100, .t1 = 300, .tokens = t, .n_tokens = 5};
	const int64_t n = 160000;
	float *zero = calloc((size_t)n, sizeof(float)), *burst = calloc((size_t)n, sizeof(float));
	assert_non_null(zero);
	assert_non_null(burst);
	struct whisper_energy ez = {.e = zero, .n_have = (size_t)n, .n = n};
	int64_t t_beg = 0, t_last = 0;
	int32_t tid_last = 0;
	whisper_full_token_times(m, &s, 0.01f, 0.01f, &ez, &t_beg, &t_last, &tid_last);
	/* BEG to the first sure time; " so" and " my" have none: 2.20..3.00 s
	 * is split by voice length, " And" 3.01, " so" 2.01, " my" 2.01 of
	 * 7.03: 220 + 80 * 3.01 / 7.03 = 254.25, + 80 * 2.01 / 7.03 = 276.9;
	 * silence everywhere moves nothing */
	const int64_t want[5][2] = {{100, 220}, {220, 254}, {254, 276}, {276, 300}, {300, 300}};
	for (int i = 0; i < 5; i++) {
		assert_int_equal(t[i].t0, want[i][0]);
		assert_int_equal(t[i].t1, want[i][1]);
	}
	assert_int_equal(t_beg, 100);
	assert_int_equal(t_last, 300);
	assert_int_equal(tid_last, beg + 100);

	/* the next segment starts where the last ended; its "." is sure of
	 * t_beg + 2 * 150 = 4.00 s */
	struct whisper_token_data u[2] = {tok(523, beg + 5, 1.0f), tok(13, beg + 150, 1.0f)};
	struct whisper_segment s2 = {.t0 = 300, .t1 = 400, .tokens = u, .n_tokens = 2};
	whisper_full_token_times(m, &s2, 0.01f, 0.01f, &ez, &t_beg, &t_last, &tid_last);
	assert_int_equal(u[0].t0, 300);
	assert_int_equal(u[0].t1, 400);
	assert_int_equal(u[1].t0, 400);
	assert_int_equal(u[1].t1, 400);

	/* energy 1 from sample 20800 to 32000 (1.30 to 2.00 s after the
	 * segment's start, as whisper.cpp reads it): " And" starts where the
	 * energy rises above half its mean around the token (2.30 s) and
	 * would end where it falls (3.00 s) but for " so" at 2.54; " so"
	 * cannot start before " And" ends; " my" ends at the last loud
	 * sample, 100 * 31999 / 16000 = 199 after 1.00 s */
	for (int64_t k = 20800; k < 32000; k++)
		burst[k] = 1.0f;
	struct whisper_energy eb = {.e = burst, .n_have = (size_t)n, .n = n};
	s.tokens = t2;
	t_beg = t_last = 0;
	tid_last = 0;
	whisper_full_token_times(m, &s, 0.01f, 0.01f, &eb, &t_beg, &t_last, &tid_last);
	const int64_t want2[3][2] = {{230, 254}, {254, 276}, {276, 299}};
	for (int i = 0; i < 3; i++) {
		assert_int_equal(t2[i + 1].t0, want2[i][0]);
		assert_int_equal(t2[i + 1].t1, want2[i][1]);
	}
	/* without the energy's head: read as silence past what is kept */
	struct whisper_energy eh = {.e = burst, .n_have = 1000, .n = n};
	memcpy(t2, t, sizeof t);
	t2[1].t0 = t2[1].t1 = -1;
	s.tokens = t;
	memcpy(t, (struct whisper_token_data[5]){tok(beg, beg, 1.0f), tok(843, beg + 60, 0.5f), tok(523, beg + 10, 0.9f),
						  tok(616, beg + 70, 0.005f), tok(beg + 100, beg + 100, 1.0f)},
	       sizeof t);
	t_beg = t_last = 0;
	tid_last = 0;
	whisper_full_token_times(m, &s, 0.01f, 0.01f, &eh, &t_beg, &t_last, &tid_last);
	for (int i = 0; i < 5; i++)
		assert_int_equal(t[i].t1, want[i][1]);

	/* the energy: the mean of |x| over 65 samples, those inside the signal */
	float x[100], en[100];
	for (int i = 0; i < 100; i++)
		x[i] = -1.0f;
	whisper_signal_energy(x, 100, 100, en, 100);
	assert_float_equal(en[0], 33.0f / 65.0f, 1e-6);
	assert_float_equal(en[50], 1.0f, 1e-6);
	assert_float_equal(en[99], 33.0f / 65.0f, 1e-6);
	/* the first 100 samples of 200: full windows up to 67 */
	whisper_signal_energy(x, 100, 200, en, 68);
	assert_float_equal(en[67], 1.0f, 1e-6);
	assert_float_equal(en[10], 43.0f / 65.0f, 1e-6);
	free(zero);
	free(burst);
	whisper_model_free(m);
}

static void test_wrap(void **state)
{
	(void)state;
	struct whisper_model *m = load_model();
	const int32_t beg = m->ids.beg;
	for (int sow = 0; sow < 2; sow++) {
		struct whisper_result r = {0};
		r.cap = 1;
		r.n_seg = 1;
		r.seg = calloc(1, sizeof(*r.seg));
		assert_non_null(r.seg);
		struct whisper_segment *s = &r.seg[0];
		s->t0 = 0, s->t1 = 100;
		s->text = strdup(" And so my.");
		s->n_tokens = 6;
		s->tokens = calloc(6, sizeof(*s->tokens));
		assert_non_null(s->tokens);
		const int32_t ids[6] = {beg, 843, 523, 616, 13, beg + 50};
		const int64_t t0s[6] = {0, 32, 40, 69, 90, 100};
		for (int i = 0; i < 6; i++)
			s->tokens[i] = (struct whisper_token_data){.id = ids[i], .t0 = t0s[i], .t1 = i < 5 ? t0s[i + 1] : 100};
		tern_err e = {0};
		/* at most 6 characters: " And" (4) + " so" (3) is too long, cut
		 * before " so"; " so" + " my" is 6, then "." makes 7: cut before
		 * it, unless only a word's start may be cut */
		int n = whisper_full_wrap_segment(m, &r, 6, sow, &e);
		if (sow) {
			assert_int_equal(n, 2);
			assert_int_equal(r.n_seg, 2);
			assert_string_equal(r.seg[0].text, " And");
			assert_string_equal(r.seg[1].text, " so my.");
			assert_int_equal(r.seg[0].n_tokens, 2);
			assert_int_equal(r.seg[1].n_tokens, 4);
			assert_int_equal(r.seg[0].t1, 40);
			assert_int_equal(r.seg[1].t0, 40);
			assert_int_equal(r.seg[1].t1, 100);
		} else {
			assert_int_equal(n, 3);
			assert_int_equal(r.n_seg, 3);
			assert_string_equal(r.seg[0].text, " And");
			assert_string_equal(r.seg[1].text, " so my");
			assert_string_equal(r.seg[2].text, ".");
			assert_int_equal(r.seg[1].t0, 40);
			assert_int_equal(r.seg[1].t1, 90);
			assert_int_equal(r.seg[2].t0, 90);
			assert_int_equal(r.seg[2].t1, 100);
			assert_int_equal(r.seg[2].tokens[1].id, beg + 50);
		}
		whisper_result_free(&r);
	}
	whisper_model_free(m);
}

static void test_time_map_langs(void **state)
{
	(void)state;
	/* speech at 3.00-5.00 s and 8.00-10.00 s of the file, cut out with
	 * 0.10 s between them */
	const struct whisper_time_point pt[4] = {{0, 300}, {200, 500}, {210, 800}, {400, 1000}};
	const struct whisper_time_map map = {.pt = pt, .n = 4};
	assert_int_equal(whisper_time_map_apply(&map, -5), 300);
	assert_int_equal(whisper_time_map_apply(&map, 0), 300);
	assert_int_equal(whisper_time_map_apply(&map, 100), 400);
	assert_int_equal(whisper_time_map_apply(&map, 205), 650);
	assert_int_equal(whisper_time_map_apply(&map, 210), 800);
	assert_int_equal(whisper_time_map_apply(&map, 300), 894); /* 800 + 90 * 200 / 190, truncated */
	assert_int_equal(whisper_time_map_apply(&map, 400), 1000);
	assert_int_equal(whisper_time_map_apply(&map, 5000), 1000);
	assert_int_equal(whisper_time_map_apply(NULL, 123), 123);

	/* language probabilities: a softmax over the language tokens only */
	struct whisper_model fake = {0};
	fake.ids.multilingual = true;
	fake.ids.n_langs = 3;
	fake.ids.lang0 = 10;
	float logits[20] = {0}, probs[3];
	logits[9] = 100.0f; /* not a language */
	logits[13] = 100.0f;
	logits[10] = 1.0f, logits[11] = 3.0f, logits[12] = 2.0f;
	assert_int_equal(whisper_full_lang_probs(&fake, logits, probs), 1);
	const double z = exp(-2.0) + 1.0 + exp(-1.0);
	assert_float_equal(probs[0], exp(-2.0) / z, 1e-6);
	assert_float_equal(probs[1], 1.0 / z, 1e-6);
	assert_float_equal(probs[2], exp(-1.0) / z, 1e-6);
	assert_string_equal(whisper_lang_code(1), "zh");
	/* -l takes a code or a name, as whisper.cpp does (the names of
	 * Whisper's tokenizer, in its order) */
	assert_int_equal(whisper_lang_find("fr"), 6);
	assert_int_equal(whisper_lang_find("french"), 6);
	assert_int_equal(whisper_lang_find("German"), 2);
	assert_int_equal(whisper_lang_find("haitian creole"), whisper_lang_find("ht"));
	assert_int_equal(whisper_lang_find("cantonese"), whisper_lang_find("yue"));
	assert_string_equal(whisper_lang_code(whisper_lang_find("javanese")), "jw");
	assert_int_equal(whisper_lang_find("xx"), -1);
	assert_int_equal(whisper_lang_find("fren"), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_filters),
		cmocka_unit_test(test_token_times),
		cmocka_unit_test(test_wrap),
		cmocka_unit_test(test_time_map_langs),
		cmocka_unit_test(test_entropy_mt),
		cmocka_unit_test(test_tokenize),
		cmocka_unit_test(test_cache_copy),
		cmocka_unit_test(test_replay),
		cmocka_unit_test(test_mel_spool),
		cmocka_unit_test(test_fallback_rules),
		cmocka_unit_test(test_jfk_fallback),
		cmocka_unit_test(test_jfk_greedy),
		cmocka_unit_test(test_jfk_greedy_nt),
		cmocka_unit_test(test_jfk_beam),
		cmocka_unit_test(test_jfk_plain_numerics),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
