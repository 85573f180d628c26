/* test_utf8.c - the shared UTF-8 classifier replaces ill-formed input the way
 * Python's bytes.decode("utf-8", "replace") does (expected strings below were
 * produced by Python), and holds back incomplete sequences. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "lib/core/utf8.h"

/* Decode like Python: valid sequences copied, each maximal ill-formed
 * subpart (including an incomplete tail) replaced by U+FFFD. */
static void lossy(const char *in, size_t n, char *out)
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
		{"plain ascii", "plain ascii"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char out[64];
		lossy(cases[i].in, strlen(cases[i].in), out);
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_python_replace),
		cmocka_unit_test(test_incomplete_is_held),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
