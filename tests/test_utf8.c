/* test_utf8.c - the UTF-8 module under each named policy.
 *
 * LOSSY must replace ill-formed input the way Python's
 * bytes.decode("utf-8", "replace") does: the expected strings and unit
 * lengths below were produced by Python (the unit of an error is
 * UnicodeDecodeError's start..end). STRICT must accept exactly the
 * encodings of the Unicode scalar values, checked by counting against an
 * encoder. TOKENIZER's expectations follow its definition in utf8.h (the
 * lead byte's length when the continuation bytes are there, else one
 * byte), written out by hand. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "lib/core/utf8.h"

/* Decode like Python with the classifier: valid sequences copied, each
 * maximal ill-formed subpart (including an incomplete tail) replaced by
 * U+FFFD. */
static void lossy_seq(const char *in, size_t n, char *out)
{
	const unsigned char *s = (const unsigned char *)in;
	size_t o = 0;
	for (size_t i = 0; i < n;) {
		size_t bad = 0;
		int k = tern_utf8_seq(s + i, n - i, &bad);
		if (k > 0) {
			memcpy(out + o, s + i, (size_t)k);
			o += (size_t)k;
			i += (size_t)k;
		} else {
			memcpy(out + o, TERN_UTF8_REPLACEMENT, 3);
			o += 3;
			i += bad;
		}
	}
	out[o] = 0;
}

/* The same with tern_utf8_decode(TERN_UTF8_LOSSY). */
static void lossy_decode(const char *in, size_t n, char *out)
{
	const unsigned char *s = (const unsigned char *)in;
	size_t o = 0;
	for (size_t i = 0; i < n;) {
		uint32_t cp;
		size_t k = tern_utf8_decode(s + i, n - i, TERN_UTF8_LOSSY, &cp);
		assert_true(k >= 1 && k <= n - i);
		if (cp == TERN_UTF8_BAD) {
			memcpy(out + o, TERN_UTF8_REPLACEMENT, 3);
			o += 3;
		} else {
			memcpy(out + o, s + i, k);
			o += k;
		}
		i += k;
	}
	out[o] = 0;
}

#define R "\xef\xbf\xbd"

static void test_python_replace(void **state)
{
	(void)state;
	static const struct { const char *in, *want; } cases[] = {
		{"\xe2\x82", R},
		{"\xe2\x28\xa1", R "(" R},
		{"\xf0\x90\x80", R},
		{"\xed\xa0\x80", R R R},
		{"\xc0\xaf", R R},
		{"\xf4\x90\x80\x80", R R R R},
		{"\xf0\x9f\xa6\x80x", "\xf0\x9f\xa6\x80x"},
		{"\x80\x80", R R},
		{"a\xff" "b", "a" R "b"},
		{"\xe0\x80\x80", R R R},
		{"\xf8\x88\x80\x80\x80", R R R R R},
		{"\xe1\x80\xe1\x80\x80", R "\xe1\x80\x80"},
		{"plain ascii", "plain ascii"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char out[64];
		lossy_seq(cases[i].in, strlen(cases[i].in), out);
		assert_string_equal(out, cases[i].want);
		lossy_decode(cases[i].in, strlen(cases[i].in), out);
		assert_string_equal(out, cases[i].want);
	}
}

static void test_incomplete_is_held(void **state)
{
	(void)state;
	size_t bad = 0;
	assert_int_equal(tern_utf8_seq((const unsigned char *)"\xf0\x9f\xa6", 3, &bad), 0);
	assert_int_equal(bad, 3);
	assert_int_equal(tern_utf8_seq((const unsigned char *)"\xf0\x9f\xa6\x80", 4, &bad), 4);
	assert_int_equal(tern_utf8_seq((const unsigned char *)"\xf0\x28", 2, &bad), -1);
	assert_int_equal(bad, 1);
}

/* The units of s under policy as "len:cp" (hex) or "len:bad", separated by
 * spaces; STRICT stops at the first refusal with "refused". */
static void units(const char *in, enum tern_utf8_policy policy, char *out, size_t cap)
{
	/* continuation bytes past the end: a decoder that reads beyond n
	 * finds sequences there and gives other units */
	unsigned char s[64];
	size_t n = strlen(in), o = 0;
	assert_true(n + 4 <= sizeof s);
	memcpy(s, in, n);
	memset(s + n, 0x80, 4);
	out[0] = 0;
	for (size_t i = 0; i < n;) {
		uint32_t cp = 0x12345678;
		size_t k = tern_utf8_decode(s + i, n - i, policy, &cp);
		assert_true(k <= n - i);
		assert_int_equal(k, tern_utf8_step(s + i, n - i, policy));
		if (k == 0) {
			assert_int_equal(policy, TERN_UTF8_STRICT);
			assert_int_equal(cp, 0x12345678); /* untouched */
			o += (size_t)snprintf(out + o, cap - o, "%srefused", o ? " " : "");
			return;
		}
		if (cp == TERN_UTF8_BAD)
			o += (size_t)snprintf(out + o, cap - o, "%s%zu:bad", o ? " " : "", k);
		else
			o += (size_t)snprintf(out + o, cap - o, "%s%zu:%x", o ? " " : "", k, (unsigned)cp);
		i += k;
	}
}

static void test_policies(void **state)
{
	(void)state;
	static const struct { const char *what, *in, *strict, *lossy, *tokenizer; } cases[] = {
		{"overlong 2-byte", "\xc0\xaf", "refused", "1:bad 1:bad", "1:bad 1:bad"},
		{"overlong 3-byte", "\xe0\x80\xaf", "refused", "1:bad 1:bad 1:bad", "3:2f"},
		{"overlong 4-byte", "\xf0\x80\x80\xaf", "refused", "1:bad 1:bad 1:bad 1:bad", "4:2f"},
		{"surrogate", "\xed\xa0\x80", "refused", "1:bad 1:bad 1:bad", "3:d800"},
		{"last surrogate", "\xed\xbf\xbf", "refused", "1:bad 1:bad 1:bad", "3:dfff"},
		{"above U+10FFFF", "\xf4\x90\x80\x80", "refused", "1:bad 1:bad 1:bad 1:bad", "4:110000"},
		{"F5 lead", "\xf5\x80\x80\x80", "refused", "1:bad 1:bad 1:bad 1:bad", "1:bad 1:bad 1:bad 1:bad"},
		{"truncated at the end", "\xe2\x82", "refused", "2:bad", "1:bad 1:bad"},
		{"truncated 4-byte", "\xf0\x9f\xa6", "refused", "3:bad", "1:bad 1:bad 1:bad"},
		{"truncated, then text", "\xe2\x82" "A", "refused", "2:bad 1:41", "1:bad 1:bad 1:41"},
		{"text, then truncated", "A\xc2", "1:41 refused", "1:41 1:bad", "1:41 1:bad"},
		{"stray continuations", "\x80\xbf", "refused", "1:bad 1:bad", "1:bad 1:bad"},
		{"5-byte lead", "\xf8\x88\x80\x80\x80", "refused", "1:bad 1:bad 1:bad 1:bad 1:bad",
		 "1:bad 1:bad 1:bad 1:bad 1:bad"},
		{"6-byte lead", "\xfc\x84\x80\x80\x80\x80", "refused", "1:bad 1:bad 1:bad 1:bad 1:bad 1:bad",
		 "1:bad 1:bad 1:bad 1:bad 1:bad 1:bad"},
		{"FE FF", "\xfe\xff", "refused", "1:bad 1:bad", "1:bad 1:bad"},
		{"bad byte before text", "\xff" "ab", "refused", "1:bad 1:61 1:62", "1:bad 1:61 1:62"},
		{"cut sequence, then a whole one", "\xe1\x80\xe1\x80\x80", "refused", "2:bad 3:1000", "1:bad 1:bad 3:1000"},
		{"4-byte", "\xf0\x9f\xa6\x80", "4:1f980", "4:1f980", "4:1f980"},
		{"2-byte", "\xc3\xa9", "2:e9", "2:e9", "2:e9"},
		{"U+FFFD itself", "\xef\xbf\xbd", "3:fffd", "3:fffd", "3:fffd"},
		{"U+10FFFF", "\xf4\x8f\xbf\xbf", "4:10ffff", "4:10ffff", "4:10ffff"},
		{"U+D7FF and U+E000", "\xed\x9f\xbf\xee\x80\x80", "3:d7ff 3:e000", "3:d7ff 3:e000", "3:d7ff 3:e000"},
	};
	static const char *const name[] = {"STRICT", "LOSSY", "TOKENIZER"};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		const char *want[] = {cases[i].strict, cases[i].lossy, cases[i].tokenizer};
		for (int p = TERN_UTF8_STRICT; p <= TERN_UTF8_TOKENIZER; p++) {
			char got[256];
			units(cases[i].in, (enum tern_utf8_policy)p, got, sizeof got);
			if (strcmp(got, want[p]) != 0)
				fail_msg("%s under %s: got '%s', want '%s'", cases[i].what, name[p], got, want[p]);
		}
	}
}

static size_t encode(uint32_t c, unsigned char *b)
{
	if (c < 0x80) {
		b[0] = (unsigned char)c;
		return 1;
	}
	if (c < 0x800) {
		b[0] = (unsigned char)(0xc0 | c >> 6);
		b[1] = (unsigned char)(0x80 | (c & 0x3f));
		return 2;
	}
	if (c < 0x10000) {
		b[0] = (unsigned char)(0xe0 | c >> 12);
		b[1] = (unsigned char)(0x80 | (c >> 6 & 0x3f));
		b[2] = (unsigned char)(0x80 | (c & 0x3f));
		return 3;
	}
	b[0] = (unsigned char)(0xf0 | c >> 18);
	b[1] = (unsigned char)(0x80 | (c >> 12 & 0x3f));
	b[2] = (unsigned char)(0x80 | (c >> 6 & 0x3f));
	b[3] = (unsigned char)(0x80 | (c & 0x3f));
	return 4;
}

/* Every scalar value decodes back under every policy; STRICT accepts as
 * many strings of each length as there are scalar values of that length
 * (all 1-, 2- and 3-byte strings tried; 4-byte ones for every lead F0..FF
 * and second and third byte, with both ends of the continuation range and
 * both neighbours outside it as the last byte), so it accepts nothing
 * else. */
static void test_every_code_point(void **state)
{
	(void)state;
	for (uint32_t c = 0; c <= 0x10ffff; c++) {
		if (c >= 0xd800 && c <= 0xdfff)
			continue;
		unsigned char b[4];
		size_t n = encode(c, b);
		char o[4];
		if (tern_utf8_encode(o, c) != n || memcmp(o, b, n))
			fail_msg("U+%04X: tern_utf8_encode differs from the test's encoder", (unsigned)c);
		for (int p = TERN_UTF8_STRICT; p <= TERN_UTF8_TOKENIZER; p++) {
			uint32_t got = TERN_UTF8_BAD;
			size_t k = tern_utf8_decode(b, n, (enum tern_utf8_policy)p, &got);
			if (k != n || got != c)
				fail_msg("U+%04X under policy %d: length %zu, value %x", (unsigned)c, p, k, (unsigned)got);
		}
	}
	size_t accepted[5] = {0};
	for (uint32_t x = 0; x < (1u << 24); x++) {
		unsigned char b[3] = {(unsigned char)(x >> 16), (unsigned char)(x >> 8), (unsigned char)x};
		if (x < (1u << 8) && tern_utf8_decode(b + 2, 1, TERN_UTF8_STRICT, NULL) == 1)
			accepted[1]++;
		if (x < (1u << 16) && tern_utf8_decode(b + 1, 2, TERN_UTF8_STRICT, NULL) == 2)
			accepted[2]++;
		if (tern_utf8_decode(b, 3, TERN_UTF8_STRICT, NULL) == 3)
			accepted[3]++;
		static const unsigned char last[] = {0x7f, 0x80, 0xbf, 0xc0};
		for (size_t i = 0; x >= 0xf00000 && i < 4; i++) {
			unsigned char b4[4] = {b[0], b[1], b[2], last[i]};
			if (tern_utf8_decode(b4, 4, TERN_UTF8_STRICT, NULL) == 4)
				accepted[4]++;
		}
	}
	assert_int_equal(accepted[1], 0x80);
	assert_int_equal(accepted[2], 0x800 - 0x80);
	assert_int_equal(accepted[3], 0x10000 - 0x800 - 0x800); /* less the surrogates */
	assert_int_equal(accepted[4], 2 * (0x110000 - 0x10000) / 64);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_python_replace),
		cmocka_unit_test(test_incomplete_is_held),
		cmocka_unit_test(test_policies),
		cmocka_unit_test(test_every_code_point),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
