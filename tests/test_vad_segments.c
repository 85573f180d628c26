/* test_vad_segments.c - the speech-timestamp algorithm (lib/speech/
 * vad_segments.c) on hand-made probability sequences, against the
 * segments whisper.cpp itself gives for them (tests/data/vad/segments.txt,
 * written by the reference tool of /work/ref/whisper: speech at the very
 * start and end, the minimum speech and silence, both thresholds exactly
 * and just past, merges of close neighbours, the maximum duration split at
 * a silence and hard, padding that overlaps a neighbour or the ends, no
 * speech and only speech); then parameter checks and the sample positions
 * of a few cases worked out by hand. */
#include <float.h>
#include <math.h>
#include <setjmp.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tests/testutil.h"

#include "lib/speech/vad.h"

#define MAX_PROBS 1024
#define MAX_SEGS 64

struct vcase {
	char name[64];
	struct tern_vad_params p;
	float probs[MAX_PROBS];
	size_t n_probs;
	int64_t seg[MAX_SEGS][2]; /* centiseconds */
	size_t n_seg;
};

/* Numbers after the first word of line into out (at most cap). */
static size_t numbers(const char *line, double *out, size_t cap)
{
	const char *p = line + strcspn(line, " ");
	size_t n = 0;
	for (;;) {
		char *q;
		double v = strtod(p, &q);
		if (q == p)
			break;
		if (n >= cap)
			fail_msg("more than %zu numbers in '%.40s'", cap, line);
		out[n++] = v;
		p = q;
	}
	return n;
}

/* The cases of tests/data/vad/segments.txt; returns their count. */
static size_t read_cases(struct vcase **out)
{
	size_t size;
	char *doc = test_read_file("tests/data/vad/segments.txt", &size);
	assert_non_null(doc);
	struct vcase *c = calloc(128, sizeof *c);
	assert_non_null(c);
	size_t n = 0;
	static double v[MAX_PROBS + 8];
	for (char *save = NULL, *line = strtok_r(doc, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		if (line[0] == '#')
			continue;
		if (!strncmp(line, "case ", 5)) {
			assert_true(n < 128);
			struct vcase *k = &c[n++];
			assert_int_equal(sscanf(line, "case %63s", k->name), 1);
			const char *rest = line + 5 + strlen(k->name);
			double d[6];
			assert_int_equal(numbers(rest, d, 6), 6);
			k->p = (struct tern_vad_params){(float)d[0], (int32_t)d[1], (int32_t)d[2], (float)d[3], (int32_t)d[4],
							(float)d[5]};
		} else if (!strncmp(line, "probs", 5)) {
			assert_true(n > 0);
			size_t np = numbers(line, v, MAX_PROBS);
			for (size_t i = 0; i < np; i++)
				c[n - 1].probs[i] = (float)v[i];
			c[n - 1].n_probs = np;
		} else if (!strncmp(line, "segments", 8)) {
			assert_true(n > 0);
			size_t ns = numbers(line, v, 2 * MAX_SEGS);
			assert_int_equal(ns % 2, 0);
			for (size_t i = 0; i < ns; i++)
				c[n - 1].seg[i / 2][i % 2] = (int64_t)v[i];
			c[n - 1].n_seg = ns / 2;
		}
	}
	free(doc);
	*out = c;
	return n;
}

static void test_against_whisper(void **state)
{
	(void)state;
	struct vcase *c;
	size_t n = read_cases(&c);
	assert_true(n >= 40);
	size_t total_segs = 0;
	for (size_t i = 0; i < n; i++) {
		struct vcase *k = &c[i];
		struct tern_vad_segment *s = NULL;
		size_t ns = 99;
		tern_err e = {0};
		int rc = tern_vad_segments(k->probs, k->n_probs, k->n_probs * TERN_VAD_WINDOW, &k->p, &s, &ns, &e);
		if (rc)
			fail_msg("%s: %s", k->name, e.msg);
		bool same = ns == k->n_seg;
		for (size_t j = 0; same && j < ns; j++)
			same = tern_vad_samples_to_cs(s[j].start) == k->seg[j][0] &&
			       tern_vad_samples_to_cs(s[j].end) == k->seg[j][1];
		if (!same) {
			print_message("%s: whisper.cpp %zu segments, we %zu:\n", k->name, k->n_seg, ns);
			for (size_t j = 0; j < ns || j < k->n_seg; j++)
				print_message("  %lld-%lld  vs  %lld-%lld\n", j < k->n_seg ? (long long)k->seg[j][0] : -1,
					      j < k->n_seg ? (long long)k->seg[j][1] : -1,
					      j < ns ? (long long)tern_vad_samples_to_cs(s[j].start) : -1,
					      j < ns ? (long long)tern_vad_samples_to_cs(s[j].end) : -1);
			fail_msg("%s differs from whisper.cpp", k->name);
		}
		for (size_t j = 0; j < ns; j++) {
			assert_true(s[j].start < s[j].end);
			assert_true(s[j].start >= 0 && s[j].end <= (int64_t)(k->n_probs * TERN_VAD_WINDOW));
			if (j)
				assert_true(s[j - 1].end <= s[j].start);
		}
		assert_true(ns > 0 || s == NULL);
		total_segs += ns;
		free(s);
	}
	assert_true(total_segs > 50); /* the cases exercise something */
	free(c);
}

static void segs(const float *probs, size_t n, const struct tern_vad_params *p, struct tern_vad_segment *out,
		 size_t *n_out)
{
	struct tern_vad_segment *s = NULL;
	tern_err e = {0};
	if (tern_vad_segments(probs, n, n * TERN_VAD_WINDOW, p, &s, n_out, &e))
		fail_msg("%s", e.msg);
	assert_true(*n_out <= 8);
	if (*n_out)
		memcpy(out, s, *n_out * sizeof *s);
	free(s);
}

/* Sample positions worked out from the rules (not from the code): a
 * segment starts at the first window at or over the threshold and ends at
 * the first window under threshold - 0.15 once min silence has passed,
 * then is padded. */
static void test_by_hand(void **state)
{
	(void)state;
	struct tern_vad_params p;
	tern_vad_params_default(&p);
	float pr[64];
	struct tern_vad_segment s[8];
	size_t n;

	/* windows 10..29 speech, then silence: [10 * 512 - 480, 30 * 512 + 480) */
	for (int i = 0; i < 64; i++)
		pr[i] = i >= 10 && i < 30 ? 0.8f : 0.1f;
	segs(pr, 64, &p, s, &n);
	assert_int_equal(n, 1);
	assert_int_equal(s[0].start, 10 * 512 - 480);
	assert_int_equal(s[0].end, 30 * 512 + 480);

	/* no padding, speech to the end: the end is the whole (padded) audio */
	p.speech_pad_ms = 0;
	for (int i = 0; i < 64; i++)
		pr[i] = i >= 40 ? 0.8f : 0.1f;
	segs(pr, 64, &p, s, &n);
	assert_int_equal(n, 1);
	assert_int_equal(s[0].start, 40 * 512);
	assert_int_equal(s[0].end, 64 * 512);

	/* everything speech, padded: clipped to [0, audio) */
	tern_vad_params_default(&p);
	for (int i = 0; i < 64; i++)
		pr[i] = 1.0f;
	segs(pr, 64, &p, s, &n);
	assert_int_equal(n, 1);
	assert_int_equal(s[0].start, 0);
	assert_int_equal(s[0].end, 64 * 512);

	/* nothing reaches the threshold */
	for (int i = 0; i < 64; i++)
		pr[i] = 0.4999f;
	segs(pr, 64, &p, s, &n);
	assert_int_equal(n, 0);

	/* two segments 12 windows (6144 samples) apart, 150 ms padding: two
	 * pads (4800) fit in the gap, each side gets its full pad */
	p.speech_pad_ms = 150;
	for (int i = 0; i < 64; i++)
		pr[i] = (i >= 5 && i < 20) || (i >= 32 && i < 50) ? 0.9f : 0.0f;
	segs(pr, 64, &p, s, &n);
	assert_int_equal(n, 2);
	assert_int_equal(s[0].start, 5 * 512 - 2400);
	assert_int_equal(s[0].end, 20 * 512 + 2400);
	assert_int_equal(s[1].start, 32 * 512 - 2400);
	assert_int_equal(s[1].end, 50 * 512 + 2400);

	/* 250 ms padding: 5000 each side > half of the gap: split in the middle */
	p.speech_pad_ms = 250;
	segs(pr, 64, &p, s, &n);
	assert_int_equal(n, 2);
	assert_int_equal(s[0].end, 20 * 512 + 12 * 512 / 2);
	assert_int_equal(s[1].start, 32 * 512 - 12 * 512 / 2);
	assert_int_equal(s[0].start, 0); /* 5 * 512 - 4000 < 0 */
}

static void test_params(void **state)
{
	(void)state;
	struct tern_vad_params d, p;
	tern_vad_params_default(&d);
	assert_true(d.threshold == 0.5f && d.min_speech_ms == 250 && d.min_silence_ms == 100 &&
		    d.max_speech_s == FLT_MAX && d.speech_pad_ms == 30 && d.samples_overlap == 0.1f);
	float pr[4] = {0.9f, 0.9f, 0.9f, 0.9f};
	struct tern_vad_segment *s = NULL;
	size_t n = 7;
	tern_err e = {0};
	p = d, p.threshold = NAN;
	assert_int_equal(tern_vad_segments(pr, 4, 2048, &p, &s, &n, &e), TERN_EINVAL);
	p = d, p.threshold = 1.5f;
	assert_int_equal(tern_vad_segments(pr, 4, 2048, &p, &s, &n, &e), TERN_EINVAL);
	p = d, p.threshold = -0.1f;
	assert_int_equal(tern_vad_segments(pr, 4, 2048, &p, &s, &n, &e), TERN_EINVAL);
	p = d, p.min_speech_ms = -1;
	assert_int_equal(tern_vad_segments(pr, 4, 2048, &p, &s, &n, &e), TERN_EINVAL);
	p = d, p.min_silence_ms = -1;
	assert_int_equal(tern_vad_segments(pr, 4, 2048, &p, &s, &n, &e), TERN_EINVAL);
	p = d, p.speech_pad_ms = -1;
	assert_int_equal(tern_vad_segments(pr, 4, 2048, &p, &s, &n, &e), TERN_EINVAL);
	p = d, p.max_speech_s = -1;
	assert_int_equal(tern_vad_segments(pr, 4, 2048, &p, &s, &n, &e), TERN_EINVAL);
	p = d, p.max_speech_s = NAN;
	assert_int_equal(tern_vad_segments(pr, 4, 2048, &p, &s, &n, &e), TERN_EINVAL);
	p = d, p.samples_overlap = -0.1f;
	assert_int_equal(tern_vad_segments(pr, 4, 2048, &p, &s, &n, &e), TERN_EINVAL);
	assert_non_null(strstr(e.msg, "overlap"));
	assert_null(s);
	assert_int_equal(n, 0);
	/* n_samples must make n_probs windows */
	assert_int_equal(tern_vad_segments(pr, 4, 1536, &d, &s, &n, &e), TERN_EINVAL);
	assert_int_equal(tern_vad_segments(pr, 4, 2049, &d, &s, &n, &e), TERN_EINVAL);
	p = d, p.min_speech_ms = 0;
	assert_int_equal(tern_vad_segments(pr, 4, 1537, &p, &s, &n, &e), 0);
	assert_int_equal(n, 1);
	assert_int_equal(s[0].end, 2048); /* the padded window counts */
	free(s);
	assert_int_equal(tern_vad_segments(NULL, 0, 0, &d, &s, &n, &e), 0);
	assert_int_equal(n, 0);
	assert_null(s);
	assert_int_equal(tern_vad_segments(NULL, 0, 1, &d, &s, &n, &e), TERN_EINVAL);
}

/* whisper.cpp's rounding of centiseconds: half up. */
static void test_cs(void **state)
{
	(void)state;
	assert_int_equal(tern_vad_samples_to_cs(0), 0);
	assert_int_equal(tern_vad_samples_to_cs(79), 0);
	assert_int_equal(tern_vad_samples_to_cs(80), 1);
	assert_int_equal(tern_vad_samples_to_cs(176000), 1100);
	assert_int_equal(tern_vad_samples_to_cs(4640), 29);
	assert_int_equal(tern_vad_cs_to_samples(32), 5120);
	assert_int_equal(tern_vad_cs_to_samples(1062), 169920);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_against_whisper),
		cmocka_unit_test(test_by_hand),
		cmocka_unit_test(test_params),
		cmocka_unit_test(test_cs),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
