/* test_jinja.c - the Jinja engine (lib/jinja/jinja.h).
 *
 * Expectations come from outside the project: tests/data/jinja/cases.txt,
 * made by scripts/gen_jinja_ref.py with Python's jinja2 configured as
 * transformers configures it, for every real template (the shared ones
 * and the one inside the SmolLM2 model) over many conversations, and for
 * small engine cases, one feature each. A rendering must match byte for
 * byte; where jinja2 raised, the engine must fail too, and with
 * raise_exception's message where the template raised. Then hostile
 * templates: every one must fail with a positioned message, within the
 * limits, without crashing. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lib/jinja/jinja.h"
#include "tests/testutil.h"

#define REF "tests/data/jinja/"

/* ---- records: "@KIND k=v ... len=N\n" + N bytes + "\n" ------------------- */
struct rec {
	char head[512];
	char *body; /* [len], NUL-terminated in place */
	size_t len;
};

struct recs {
	char *buf;
	struct rec *r;
	size_t n;
};

static struct recs load_recs(const char *path)
{
	struct recs rs = {0};
	size_t size = 0, cap = 0, pos = 0;
	rs.buf = test_read_file(path, &size);
	if (!rs.buf)
		fail_msg("%s: cannot read (run from the repository root)", path);
	while (pos < size) {
		char *nl = memchr(rs.buf + pos, '\n', size - pos);
		assert_non_null(nl);
		assert_int_equal(rs.buf[pos], '@');
		if (rs.n == cap) {
			cap = cap ? 2 * cap : 512;
			rs.r = realloc(rs.r, cap * sizeof *rs.r);
			assert_non_null(rs.r);
		}
		struct rec *r = &rs.r[rs.n++];
		size_t hl = (size_t)(nl - (rs.buf + pos + 1));
		assert_true(hl < sizeof r->head);
		memcpy(r->head, rs.buf + pos + 1, hl);
		r->head[hl] = 0;
		const char *l = strstr(r->head, " len=");
		assert_non_null(l);
		r->len = strtoull(l + 5, NULL, 10);
		r->body = nl + 1;
		assert_true(r->len + 1 <= size - (size_t)(r->body - rs.buf));
		r->body[r->len] = 0;
		pos = (size_t)(r->body - rs.buf) + r->len + 1;
	}
	return rs;
}

static void free_recs(struct recs *rs)
{
	free(rs->buf);
	free(rs->r);
}

/* value of key k in a header, copied into out */
static const char *field(const char *head, const char *k, char *out, size_t cap)
{
	char pat[32];
	snprintf(pat, sizeof pat, " %s=", k);
	const char *p = strstr(head, pat);
	if (!p)
		return NULL;
	p += strlen(pat);
	size_t n = strcspn(p, " ");
	if (n >= cap)
		n = cap - 1;
	memcpy(out, p, n);
	out[n] = 0;
	return out;
}

static bool kind_is(const struct rec *r, const char *k)
{
	size_t n = strlen(k);
	return !strncmp(r->head, k, n) && r->head[n] == ' ';
}

/* a template file named by a case's src */
static char *load_src(const char *src, size_t *n)
{
	char path[1024];
	if (!strncmp(src, "shared:", 7))
		snprintf(path, sizeof path, "%s/%s", test_data_dir(), src + 7);
	else if (!strncmp(src, "local:", 6))
		snprintf(path, sizeof path, REF "%s", src + 6);
	else
		fail_msg("unknown src %s", src);
	char *t = test_read_file(path, n);
	if (!t)
		fail_msg("%s: cannot read", path);
	return t;
}

static time_t fixed_now;

static int render(const char *tmpl, size_t tn, const char *ctx, size_t cn, const struct tern_jinja_limits *lim,
		  char **out, size_t *on, tern_err *e)
{
	struct tern_jinja *t = NULL;
	*out = NULL;
	*on = 0;
	int rc = tern_jinja_parse(&t, tmpl, tn, e);
	if (rc) {
		assert_null(t);
		return rc;
	}
	struct tern_jinja_opts o = {.limits = lim, .now = fixed_now};
	rc = tern_jinja_render(t, ctx, cn, &o, out, on, e);
	tern_jinja_free(t);
	return rc;
}

/* an error message opens with "line L, column C: " */
static bool positioned(const char *msg)
{
	unsigned l, c;
	int n = 0;
	return sscanf(msg, "line %u, column %u: %n", &l, &c, &n) == 2 && n > 0 && l > 0 && c > 0;
}

/* ---- the reference cases ----------------------------------------------- */
static void test_reference(void **state)
{
	(void)state;
	setenv("TZ", "UTC", 1);
	tzset();
	struct recs rs = load_recs(REF "cases.txt");
	assert_true(rs.n > 0 && kind_is(&rs.r[0], "now"));
	char val[256];
	assert_non_null(field(rs.r[0].head, "t", val, sizeof val));
	fixed_now = (time_t)strtoll(val, NULL, 10);
	size_t n_ok = 0, n_err = 0, n_raise = 0, n_bad = 0, n_real = 0;
	char *cached = NULL, cached_src[300] = "";
	size_t cached_n = 0;
	const char *inline_t = NULL;
	size_t inline_n = 0;
	for (size_t i = 1; i < rs.n; i++) {
		const struct rec *r = &rs.r[i];
		if (kind_is(r, "tmpl")) {
			inline_t = r->body;
			inline_n = r->len;
			continue;
		}
		assert_true(kind_is(r, "case") && i + 2 < rs.n);
		const struct rec *ctx = &rs.r[i + 1], *want = &rs.r[i + 2];
		i += 2;
		char name[256], src[300], status[16], kind[16];
		assert_non_null(field(r->head, "name", name, sizeof name));
		assert_non_null(field(r->head, "src", src, sizeof src));
		assert_non_null(field(r->head, "status", status, sizeof status));
		assert_non_null(field(r->head, "kind", kind, sizeof kind));
		const char *t;
		size_t tn;
		if (!strcmp(src, "inline")) {
			assert_non_null(inline_t);
			t = inline_t;
			tn = inline_n;
			inline_t = NULL;
		} else {
			if (strcmp(src, cached_src)) {
				free(cached);
				cached = load_src(src, &cached_n);
				snprintf(cached_src, sizeof cached_src, "%s", src);
			}
			t = cached;
			tn = cached_n;
			n_real++;
		}
		char *out;
		size_t on;
		tern_err e = {0};
		int rc = render(t, tn, ctx->body, ctx->len, NULL, &out, &on, &e);
		bool good;
		if (!strcmp(status, "ok")) {
			good = rc == 0 && on == want->len && memcmp(out, want->body, on) == 0;
			if (!good && rc)
				print_message("%s: error %d: %s\n", name, rc, e.msg);
			else if (!good) {
				size_t k = 0;
				while (k < on && k < want->len && out[k] == want->body[k])
					k++;
				print_message("%s: differs at byte %zu (got %zu bytes, want %zu)\n  got:  %.60s\n  want: %.60s\n",
					      name, k, on, want->len, out + k, want->body + k);
			}
			n_ok += good;
		} else {
			good = rc != 0 && out == NULL && positioned(e.msg);
			if (good && !strcmp(kind, "raise")) {
				/* raise_exception's own message, whole */
				const char *p = strstr(e.msg, "raise_exception: ");
				good = p && strstr(p, want->body) != NULL;
				n_raise += good;
			}
			if (!good)
				print_message("%s: want an error (%s), got rc %d: %s\n", name, want->body, rc,
					      rc ? e.msg : "(rendered)");
			n_err += good;
		}
		n_bad += !good;
		free(out);
	}
	free(cached);
	print_message("jinja reference: %zu renderings equal, %zu errors as expected (%zu raise_exception), "
		      "%zu on real templates, %zu wrong\n", n_ok, n_err, n_raise, n_real, n_bad);
	assert_int_equal(n_bad, 0);
	assert_true(n_ok > 400 && n_raise > 10 && n_real > 400);
	free_recs(&rs);
}

/* ---- hostile templates --------------------------------------------------- */
static char *repeat(const char *a, size_t n, const char *mid, const char *b)
{
	size_t la = strlen(a), lb = strlen(b), lm = strlen(mid);
	char *s = malloc(n * (la + lb) + lm + 1);
	assert_non_null(s);
	size_t o = 0;
	for (size_t i = 0; i < n; i++, o += la)
		memcpy(s + o, a, la);
	memcpy(s + o, mid, lm);
	o += lm;
	for (size_t i = 0; i < n; i++, o += lb)
		memcpy(s + o, b, lb);
	s[o] = 0;
	return s;
}

static void expect_fail(const char *what, const char *tmpl, size_t tn, const struct tern_jinja_limits *lim,
			int code)
{
	char *out;
	size_t on;
	tern_err e = {0};
	clock_t t0 = clock();
	int rc = render(tmpl, tn, "{}", 2, lim, &out, &on, &e);
	double secs = (double)(clock() - t0) / CLOCKS_PER_SEC;
	if (rc == 0 || !positioned(e.msg) || (code && rc != code))
		fail_msg("%s: want an error %d with a position, got rc %d: %s", what, code, rc, rc ? e.msg : "");
	assert_null(out);
	assert_int_equal(on, 0);
	/* not a timing check: a generous bound against runaway work only */
	if (secs > 20)
		fail_msg("%s: took %.1f s of CPU", what, secs);
}

static void test_hostile(void **state)
{
	(void)state;
	static const struct {
		const char *what, *t;
		int code;
	} cases[] = {
		{"unclosed if", "{% if true %}x", TERN_EFORMAT},
		{"unclosed for", "{% for x in y %}{% if 1 %}{% endif %}", TERN_EFORMAT},
		{"unclosed macro", "{% macro m() %}", TERN_EFORMAT},
		{"unclosed set", "{% set x %}abc", TERN_EFORMAT},
		{"unclosed raw", "{% raw %}abc", TERN_EFORMAT},
		{"unclosed comment", "{# abc", TERN_EFORMAT},
		{"unclosed var", "{{ x", TERN_EFORMAT},
		{"unclosed block", "{% if x", TERN_EFORMAT},
		{"unclosed string", "{{ 'abc }}", TERN_EFORMAT},
		{"unclosed bracket", "{{ [1, 2 }}", TERN_EFORMAT},
		{"stray bracket", "{{ 1) }}", TERN_EFORMAT},
		{"mismatched end", "{% if 1 %}{% endfor %}", TERN_EFORMAT},
		{"unknown tag", "{% include 'x' %}", TERN_EFORMAT},
		{"unknown filter", "{{ x|system }}", TERN_EFORMAT},
		{"unknown test", "{{ x is evil }}", TERN_EFORMAT},
		{"bad char", "{{ x $ y }}", TERN_EFORMAT},
		{"huge int", "{{ 99999999999999999999999 }}", TERN_EFORMAT},
		{"overflow", "{{ 9223372036854775807 + 1 }}", TERN_ERANGE},
		{"pow overflow", "{{ 2 ** 64 }}", TERN_ERANGE},
		{"runaway loop", "{% for i in range(10**9) %}{% endfor %}", TERN_ERANGE},
		{"nested loops", "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}",
		 TERN_ERANGE},
		{"huge repeat", "{{ 'x' * 10**9 }}", TERN_ERANGE},
		{"list repeat", "{{ [1, 2] * 10**12 }}", TERN_ERANGE},
		{"doubling", "{% set ns = namespace(s='xxxxxxxxxxxxxxxx') %}{% for i in range(64) %}"
			     "{% set ns.s = ns.s ~ ns.s %}{% endfor %}{{ ns.s|length }}", TERN_ERANGE},
		{"macro recursion", "{% macro m(n) %}{{ m(n + 1) }}{% endmacro %}{{ m(0) }}", TERN_ERANGE},
		{"mutual recursion", "{% macro a() %}{{ b() }}{% endmacro %}{% macro b() %}{{ a() }}{% endmacro %}{{ a() }}",
		 TERN_ERANGE},
		{"caller recursion", "{% macro m() %}{% call m() %}x{% endcall %}{% endmacro %}{{ m() }}", TERN_ERANGE},
		{"raise", "{{ raise_exception('stop') }}", TERN_EFORMAT},
		{"undefined attr", "{{ a.b.c }}", TERN_EFORMAT},
		{"call undefined", "{{ f() }}", TERN_EFORMAT},
		{"list append", "{% set l = [] %}{{ l.append(1) }}", TERN_EFORMAT},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
		expect_fail(cases[i].what, cases[i].t, strlen(cases[i].t), NULL, cases[i].code);

	/* nesting 10000 deep, of blocks and of expressions */
	char *s = repeat("{% if true %}", 10000, "x", "{% endif %}");
	expect_fail("deep ifs", s, strlen(s), NULL, TERN_ERANGE);
	free(s);
	s = repeat("{% for i in [1] %}", 10000, "x", "{% endfor %}");
	expect_fail("deep fors", s, strlen(s), NULL, TERN_ERANGE);
	free(s);
	s = repeat("(", 10000, "{{ 1", ")");
	char *v = repeat("{{ ", 1, "", "");
	free(v);
	s[0] = '{';
	s[1] = '{';
	memcpy(s + strlen(s) - 2, "}}", 2);
	expect_fail("deep parens", s, strlen(s), NULL, 0);
	free(s);
	s = repeat("[", 10000, "1", "]");
	char *w = malloc(strlen(s) + 7);
	assert_non_null(w);
	sprintf(w, "{{ %s }}", s);
	expect_fail("deep lists", w, strlen(w), NULL, TERN_ERANGE);
	free(w);
	free(s);
	s = repeat("not ", 10000, "1", "");
	w = malloc(strlen(s) + 7);
	assert_non_null(w);
	sprintf(w, "{{ %s }}", s);
	expect_fail("deep not", w, strlen(w), NULL, TERN_ERANGE);
	free(w);
	free(s);
	s = repeat("-", 10000, "1", "");
	w = malloc(strlen(s) + 7);
	assert_non_null(w);
	sprintf(w, "{{ %s }}", s);
	expect_fail("deep minus", w, strlen(w), NULL, TERN_ERANGE);
	free(w);
	free(s);

	/* the caller's limits hold */
	struct tern_jinja_limits small = {.max_depth = 8, .max_steps = 1000, .max_output = 100};
	const char *t = "{% for i in range(1000) %}x{% endfor %}";
	expect_fail("steps limit", t, strlen(t), &small, TERN_ERANGE);
	t = "{{ 'y' * 101 }}";
	expect_fail("output limit", t, strlen(t), &small, TERN_ERANGE);
	t = "{% for i in range(60) %}xx{% endfor %}";
	expect_fail("output limit by pieces", t, strlen(t), &small, TERN_ERANGE);
	t = "{% macro m(n) %}{% if n %}{{ m(n - 1) }}{% endif %}{% endmacro %}{{ m(20) }}";
	expect_fail("depth limit", t, strlen(t), &small, TERN_ERANGE);
	char *out;
	size_t on;
	tern_err e = {0};
	t = "{% macro m(n) %}{% if n %}{{ m(n - 1) }}{% endif %}{% endmacro %}[{{ m(5) }}]";
	assert_int_equal(render(t, strlen(t), "{}", 2, &small, &out, &on, &e), 0);
	assert_string_equal(out, "[]");
	free(out);

	/* bad contexts */
	struct tern_jinja *tj;
	assert_int_equal(tern_jinja_parse(&tj, "x", 1, &e), 0);
	static const char *const bad[] = {"[]", "1", "", "{", "{\"a\": }", "\"s\"", "{\"a\": 1e999999}"};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		int rc = tern_jinja_render(tj, bad[i], strlen(bad[i]), NULL, &out, &on, &e);
		if (rc != TERN_EINVAL)
			fail_msg("context '%s': want TERN_EINVAL, got %d", bad[i], rc);
		assert_null(out);
	}
	tern_jinja_free(tj);
	tern_jinja_free(NULL);
}

/* ---- by hand: the error format, reuse, embedded NULs -------------------- */
static void test_by_hand(void **state)
{
	(void)state;
	char *out;
	size_t on;
	tern_err e = {0};
	const char *t = "line one\n  {{ raise_exception('bad role: ' ~ role) }}";
	assert_int_equal(render(t, strlen(t), "{\"role\": \"robot\"}", 17, NULL, &out, &on, &e), TERN_EFORMAT);
	assert_string_equal(e.msg, "line 2, column 6: raise_exception: bad role: robot");
	t = "{% if x %}\n{% for %}";
	assert_int_equal(render(t, strlen(t), "{}", 2, NULL, &out, &on, &e), TERN_EFORMAT);
	assert_true(!strncmp(e.msg, "line 2, column 8: ", 18));

	/* one parse, many renders, different contexts */
	struct tern_jinja *tj;
	t = "{% for m in messages %}<{{ m.role }}>{{ m.content }}{% endfor %}{{ eos_token }}";
	assert_int_equal(tern_jinja_parse(&tj, t, strlen(t), &e), 0);
	for (int i = 0; i < 3; i++) {
		char ctx[200];
		int n = snprintf(ctx, sizeof ctx, "{\"messages\": [{\"role\": \"user\", \"content\": \"m%d\"}], \"eos_token\": \"</s>\"}", i);
		char want[64];
		snprintf(want, sizeof want, "<user>m%d</s>", i);
		assert_int_equal(tern_jinja_render(tj, ctx, (size_t)n, NULL, &out, &on, &e), 0);
		assert_string_equal(out, want);
		assert_int_equal(on, strlen(want));
		free(out);
	}
	tern_jinja_free(tj);

	/* a NUL inside the context's strings passes through (JSON \u0000) */
	t = "[{{ s }}]";
	assert_int_equal(render(t, strlen(t), "{\"s\": \"a\\u0000b\"}", 17, NULL, &out, &on, &e), 0);
	assert_int_equal(on, 5);
	assert_memory_equal(out, "[a\0b]", 5);
	free(out);

	/* strftime_now formats opts.now */
	setenv("TZ", "UTC", 1);
	tzset();
	fixed_now = 86400 * 365;
	t = "{{ strftime_now('%d %b %Y') }}";
	assert_int_equal(render(t, strlen(t), "{}", 2, NULL, &out, &on, &e), 0);
	assert_string_equal(out, "01 Jan 1971");
	free(out);

	/* an empty template renders to an empty string */
	assert_int_equal(render("", 0, "{}", 2, NULL, &out, &on, &e), 0);
	assert_non_null(out);
	assert_int_equal(on, 0);
	free(out);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_reference),
		cmocka_unit_test(test_hostile),
		cmocka_unit_test(test_by_hand),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
