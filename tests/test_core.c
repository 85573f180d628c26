/* test_core.c - the shared primitives of lib/core: the bounded byte cursor
 * (values and messages), the hostile-name quoting, and the name -> index
 * map. Expected values are written out by hand from the byte layouts. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/core/cursor.h"
#include "lib/core/mapfile.h"
#include "lib/core/quote.h"
#include "lib/core/strmap.h"

/* ---- cursor ------------------------------------------------------------- */

static void test_cursor_values(void **state)
{
	(void)state;
	static const uint8_t b[] = {
		0x7f,                               /* u8 127 */
		0x34, 0x12,                         /* u16 0x1234 */
		0x78, 0x56, 0x34, 0x12,             /* u32 0x12345678 */
		0xef, 0xcd, 0xab, 0x89, 0x67, 0x45, 0x23, 0x01, /* u64 */
		0xfe, 0xff, 0xff, 0xff,             /* i32 -2 */
		0x00, 0x00, 0xc0, 0x3f,             /* f32 1.5 */
		0x02, 0x00, 0x00, 0x00, 'h', 'i',   /* str32 "hi" */
		0x03, 0, 0, 0, 0, 0, 0, 0, 'a', 'b', 'c', /* str64 "abc" */
	};
	tern_err e = {0};
	struct tern_cur c = tern_cur_init(b, sizeof b, &e);
	uint8_t u8;
	uint16_t u16;
	uint32_t u32;
	uint64_t u64;
	int32_t i32;
	float f;
	struct tern_str s;
	assert_int_equal(tern_cur_u8(&c, &u8, "a"), 0);
	assert_int_equal(u8, 127);
	assert_int_equal(tern_cur_u16(&c, &u16, "b"), 0);
	assert_int_equal(u16, 0x1234);
	assert_int_equal(tern_cur_u32(&c, &u32, "c"), 0);
	assert_int_equal(u32, 0x12345678u);
	assert_int_equal(tern_cur_u64(&c, &u64, "d"), 0);
	assert_true(u64 == 0x0123456789abcdefull);
	assert_int_equal(tern_cur_i32(&c, &i32, "e"), 0);
	assert_int_equal(i32, -2);
	assert_int_equal(tern_cur_f32(&c, &f, "f"), 0);
	assert_true(f == 1.5f);
	assert_int_equal(tern_cur_str32(&c, &s, "g"), 0);
	assert_true(tern_str_eq(s, "hi"));
	assert_ptr_equal(s.ptr, b + 27);
	assert_int_equal(tern_cur_str64(&c, &s, "h"), 0);
	assert_true(tern_str_eq(s, "abc"));
	assert_int_equal(c.off, sizeof b);
	assert_int_equal(tern_cur_left(&c), 0);
	assert_int_equal(e.code, 0);
}

static void test_cursor_truncation(void **state)
{
	(void)state;
	static const uint8_t b[7] = {1, 2, 3, 4, 5, 6, 7};
	tern_err e = {0};
	struct tern_cur c = tern_cur_init(b, sizeof b, &e);
	uint32_t u32;
	uint64_t u64;
	c.off = 4;
	assert_int_equal(tern_cur_u64(&c, &u64, "tensor count"), TERN_EFORMAT);
	assert_int_equal(e.code, TERN_EFORMAT);
	assert_string_equal(e.msg, "offset 4: tensor count truncated (needs 8 bytes, 3 left)");
	assert_int_equal(c.off, 4); /* a failed read consumes nothing */
	assert_int_equal(tern_cur_u32(&c, &u32, "x"), TERN_EFORMAT);
	c.off = 3;
	assert_int_equal(tern_cur_u32(&c, &u32, "x"), 0);
	assert_int_equal(u32, 0x07060504u);

	/* a NULL error sink is allowed */
	struct tern_cur q = tern_cur_init(b, 0, NULL);
	uint8_t u8;
	assert_int_equal(tern_cur_u8(&q, &u8, "byte"), TERN_EFORMAT);
}

static void test_cursor_lengths(void **state)
{
	(void)state;
	uint8_t b[16] = {0};
	tern_err e = {0};
	struct tern_str s;
	const uint8_t *p;

	/* length 9 with 4 bytes after it: refused, offset back at the length */
	b[2] = 9;
	struct tern_cur c = tern_cur_init(b, 10, &e);
	c.off = 2;
	assert_int_equal(tern_cur_str32(&c, &s, "token 5"), TERN_EFORMAT);
	assert_string_equal(e.msg, "offset 2: token 5 length 9 runs past the end of the file (4 bytes left)");
	assert_int_equal(c.off, 2);

	/* lengths near 2^64 must not wrap the bound check */
	memset(b, 0xff, 8);
	c = tern_cur_init(b, sizeof b, &e);
	assert_int_equal(tern_cur_str64(&c, &s, "key 0"), TERN_EFORMAT);
	assert_non_null(strstr(e.msg, "length 18446744073709551615"));
	assert_int_equal(tern_cur_bytes(&c, UINT64_MAX, &p, "data"), TERN_EFORMAT);
	assert_string_equal(e.msg, "offset 0: data of 18446744073709551615 bytes runs past the end of the file (16 bytes left)");
	assert_int_equal(tern_cur_bytes(&c, 16, &p, "data"), 0);
	assert_ptr_equal(p, b);
	assert_int_equal(tern_cur_bytes(&c, 0, &p, "nothing"), 0);
	assert_int_equal(tern_cur_bytes(&c, 1, &p, "one more"), TERN_EFORMAT);

	/* the loads themselves are little-endian whatever the host */
	static const uint8_t le[8] = {1, 2, 3, 4, 5, 6, 7, 8};
	assert_int_equal(tern_le16(le), 0x0201);
	assert_int_equal(tern_le32(le), 0x04030201u);
	assert_true(tern_le64(le) == 0x0807060504030201ull);
}

/* ---- quoting ------------------------------------------------------------ */

static const char *q(char *buf, size_t cap, const char *s, size_t n)
{
	memset(buf, '#', cap);
	const char *r = tern_quote(buf, cap, s, n);
	assert_ptr_equal(r, buf);
	assert_true(strlen(buf) < cap);
	return r;
}

#define Q(s) q(buf, sizeof buf, s, sizeof s - 1)

static void test_quote_escapes(void **state)
{
	(void)state;
	char buf[TERN_QUOTE_MAX];
	assert_string_equal(Q("blk.0.attn_q.weight"), "blk.0.attn_q.weight");
	assert_string_equal(Q(""), "");
	assert_string_equal(Q("a\nb\x1b[31m\x7f"), "a\\x0ab\\x1b[31m\\x7f");
	assert_string_equal(Q("it's a\\b"), "it\\x27s a\\x5cb");
	assert_string_equal(Q("a\0b"), "a\\x00b");
	/* valid UTF-8 stays readable */
	assert_string_equal(Q("caf\xc3\xa9 \xe2\x96\x81x \xf0\x9f\xa6\x80"), "caf\xc3\xa9 \xe2\x96\x81x \xf0\x9f\xa6\x80");
	/* invalid UTF-8: one escape per byte, valid text after it kept */
	assert_string_equal(Q("\xff\xc3(\xed\xa0\x80z"), "\\xff\\xc3(\\xed\\xa0\\x80z");
	assert_string_equal(Q("ok\xe2\x82"), "ok\\xe2\\x82"); /* cut short at the end */
	assert_string_equal(Q("\xc0\xaf"), "\\xc0\\xaf");     /* overlong */
	/* valid but invisible code points that reorder or split a line */
	assert_string_equal(Q("a\xe2\x80\xae" "b"), "a\\u202eb");   /* RLO */
	assert_string_equal(Q("\xc2\x9b" "1m"), "\\u009b1m");       /* C1 CSI */
	assert_string_equal(Q("x\xe2\x80\xa8y"), "x\\u2028y");      /* line separator */
	assert_string_equal(Q("\xe2\x81\xa6z"), "\\u2066z");        /* LRI */
	assert_string_equal(Q("\xe2\x80\x8d"), "\xe2\x80\x8d");     /* ZWJ is ordinary */
	/* a view is quoted by its length, not up to a NUL */
	struct tern_str v = {"tok.embd\nX", 8};
	assert_string_equal(tern_quote_str(buf, sizeof buf, v), "tok.embd");
}

static void test_quote_truncates(void **state)
{
	(void)state;
	char buf[16];
	char in[300];
	memset(in, 'a', sizeof in);
	/* 15 bytes fit exactly; 16 do not: 12 kept + "..." */
	assert_string_equal(q(buf, sizeof buf, in, 15), "aaaaaaaaaaaaaaa");
	assert_string_equal(q(buf, sizeof buf, in, 16), "aaaaaaaaaaaa...");
	assert_string_equal(q(buf, sizeof buf, in, sizeof in), "aaaaaaaaaaaa...");
	/* never inside an escape: 3 escapes (12 bytes) + "..." */
	assert_string_equal(q(buf, sizeof buf, "\x01\x02\x03\x04\x05", 5), "\\x01\\x02\\x03...");
	/* never inside a character: 4 x "é" (8 bytes) + "é" would leave no
	 * room for "..." after it */
	const char *e6 = "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9";
	assert_string_equal(q(buf, sizeof buf, e6, 16), "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9...");
	/* tiny buffers stay terminated */
	char t[4];
	assert_string_equal(q(t, sizeof t, "abcdef", 6), "...");
	assert_string_equal(q(t, sizeof t, "abc", 3), "abc");
	char u[2];
	assert_string_equal(q(u, sizeof u, "abc", 3), ".");
}

/* ---- name map ----------------------------------------------------------- */

struct names {
	char (*s)[16];
	size_t n;
};

static struct tern_str name_at(const void *ctx, size_t i)
{
	const struct names *nm = ctx;
	return (struct tern_str){nm->s[i], strlen(nm->s[i])};
}

static void test_strmap_basic(void **state)
{
	(void)state;
	char s[][16] = {"a", "ab", "", "b", "ab", "tok.embd", "a"};
	struct names nm = {s, 7};
	struct tern_strmap m;
	assert_int_equal(tern_strmap_init(&m, nm.n, name_at, &nm), 0);
	size_t first = 99;
	assert_int_equal(tern_strmap_add(&m, 0, &first), 0);
	assert_int_equal(tern_strmap_add(&m, 1, &first), 0);
	assert_int_equal(tern_strmap_add(&m, 2, &first), 0);
	assert_int_equal(tern_strmap_add(&m, 3, &first), 0);
	assert_int_equal(first, 99);
	assert_int_equal(tern_strmap_add(&m, 4, &first), 1); /* "ab" again */
	assert_int_equal(first, 1);
	assert_int_equal(tern_strmap_add(&m, 5, NULL), 0);
	assert_int_equal(tern_strmap_add(&m, 6, &first), 1); /* "a" again */
	assert_int_equal(first, 0);
	assert_int_equal(m.n, 5);
	assert_int_equal(tern_strmap_find(&m, "a", 1), 0);
	assert_int_equal(tern_strmap_find(&m, "ab", 2), 1);
	assert_int_equal(tern_strmap_find(&m, "", 0), 2);
	assert_int_equal(tern_strmap_find(&m, "b", 1), 3);
	assert_int_equal(tern_strmap_find(&m, "tok.embd", 8), 5);
	assert_int_equal(tern_strmap_find(&m, "abc", 2), 1); /* by (ptr, len) */
	assert_true(tern_strmap_find(&m, "abc", 3) == TERN_STRMAP_NONE);
	assert_true(tern_strmap_find(&m, "tok.emb", 7) == TERN_STRMAP_NONE);
	/* names are asked for at lookup time: the caller may rewrite them */
	strcpy(s[5], "moved");
	assert_int_equal(tern_strmap_find(&m, "tok.embd", 8), TERN_STRMAP_NONE);
	tern_strmap_free(&m);
	assert_true(tern_strmap_find(&m, "a", 1) == TERN_STRMAP_NONE);
}

static void test_strmap_bounds(void **state)
{
	(void)state;
	enum { N = 20000 };
	char(*s)[16] = malloc(N * sizeof *s);
	assert_non_null(s);
	for (size_t i = 0; i < N; i++)
		snprintf(s[i], sizeof s[i], "blk.%zu.w", i);
	struct names nm = {s, N};
	struct tern_strmap m;
	/* capacity is what the caller allows, not what it adds */
	assert_int_equal(tern_strmap_init(&m, 3, name_at, &nm), 0);
	for (size_t i = 0; i < 3; i++)
		assert_int_equal(tern_strmap_add(&m, i, NULL), 0);
	assert_int_equal(tern_strmap_add(&m, 3, NULL), TERN_ERANGE);
	assert_true(m.mask + 1 <= 16);
	tern_strmap_free(&m);

	assert_int_equal(tern_strmap_init(&m, N, name_at, &nm), 0);
	assert_true(m.mask + 1 <= 4 * (size_t)N);
	for (size_t i = 0; i < N; i++)
		assert_int_equal(tern_strmap_add(&m, i, NULL), 0);
	for (size_t i = 0; i < N; i++)
		assert_int_equal(tern_strmap_find(&m, s[i], strlen(s[i])), i);
	assert_true(tern_strmap_find(&m, "blk.20000.w", 11) == TERN_STRMAP_NONE);
	tern_strmap_free(&m);
	free(s);

	assert_int_equal(tern_strmap_init(&m, (size_t)TERN_STRMAP_LIMIT + 1, name_at, &nm), TERN_ERANGE);
	assert_null(m.slot);
}

/* names of a few far-apart indexes */
struct far {
	size_t idx[4];
	const char *name[4];
};

static struct tern_str far_name(const void *ctx, size_t i)
{
	const struct far *f = ctx;
	for (int k = 0; k < 4; k++)
		if (f->idx[k] == i)
			return (struct tern_str){f->name[k], strlen(f->name[k])};
	return (struct tern_str){"?", 1};
}

/* 32-bit slots up to TERN_STRMAP_NARROW entries (indexes up to it),
 * 64-bit past it; both find what they hold (the maps' slots are
 * allocated, never touched but for the few entries). */
static void test_strmap_widths(void **state)
{
	(void)state;
	struct far f = {{0, 5, TERN_STRMAP_NARROW, (size_t)TERN_STRMAP_NARROW + 1}, {"a", "b", "c", "d"}};
	struct tern_strmap m;
	assert_int_equal(tern_strmap_init(&m, TERN_STRMAP_NARROW, far_name, &f), 0);
	assert_false(m.wide);
	for (int k = 0; k < 3; k++)
		assert_int_equal(tern_strmap_add(&m, f.idx[k], NULL), 0);
	assert_int_equal(tern_strmap_add(&m, f.idx[3], NULL), TERN_ERANGE); /* no room in 24 bits */
	for (int k = 0; k < 3; k++)
		assert_int_equal(tern_strmap_find(&m, f.name[k], 1), f.idx[k]);
	assert_true(tern_strmap_find(&m, "d", 1) == TERN_STRMAP_NONE);
	size_t first = 0;
	f.idx[3] = 7;
	f.name[3] = "c";
	assert_int_equal(tern_strmap_add(&m, 7, &first), 1);
	assert_int_equal(first, TERN_STRMAP_NARROW);
	tern_strmap_free(&m);

	struct far g = {{0, 5, TERN_STRMAP_NARROW, (size_t)TERN_STRMAP_LIMIT}, {"a", "b", "c", "d"}};
	assert_int_equal(tern_strmap_init(&m, (size_t)TERN_STRMAP_NARROW + 1, far_name, &g), 0);
	assert_true(m.wide);
	for (int k = 0; k < 4; k++)
		assert_int_equal(tern_strmap_add(&m, g.idx[k], NULL), 0);
	for (int k = 0; k < 4; k++)
		assert_int_equal(tern_strmap_find(&m, g.name[k], 1), g.idx[k]);
	tern_strmap_free(&m);
}

/* The VmFlags line of the mapping that holds p, from /proc/self/smaps
 * ("" when there is none to read). */
static void vm_flags_of(const void *p, char *out, size_t cap)
{
	out[0] = 0;
	FILE *f = fopen("/proc/self/smaps", "r");
	if (!f)
		return;
	char line[512];
	bool in = false;
	uintptr_t a = (uintptr_t)p;
	while (fgets(line, sizeof line, f)) {
		unsigned long lo, hi;
		if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2 && strchr(line, '-') < strchr(line, ' ')) {
			in = a >= lo && a < hi;
			continue;
		}
		if (in && strncmp(line, "VmFlags:", 8) == 0) {
			snprintf(out, cap, "%s", line + 8);
			break;
		}
	}
	fclose(f);
}

/* tern_alloc_large: aligned, writable, and from 2 MiB up asking for huge
 * pages (VmFlags "hg") where the kernel has transparent huge pages. */
static void test_alloc_large(void **state)
{
	(void)state;
	const size_t small[] = {0, 1, 100, 1u << 20, (2u << 20) - 1};
	for (size_t i = 0; i < sizeof small / sizeof small[0]; i++) {
		uint8_t *p = tern_alloc_large(small[i]);
		assert_non_null(p);
		assert_int_equal((uintptr_t)p % 64, 0);
		memset(p, 0x5a, small[i]);
		free(p);
	}
	const size_t large[] = {2u << 20, (5u << 20) + 123};
	FILE *thp = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
	char mode[128] = "";
	if (thp) {
		if (!fgets(mode, sizeof mode, thp))
			mode[0] = 0;
		fclose(thp);
	}
	for (size_t i = 0; i < sizeof large / sizeof large[0]; i++) {
		uint8_t *p = tern_alloc_large(large[i]);
		assert_non_null(p);
		assert_int_equal((uintptr_t)p % (2u << 20), 0);
		memset(p, 0xa5, large[i]);
		assert_int_equal(p[large[i] - 1], 0xa5);
		char flags[512];
		vm_flags_of(p, flags, sizeof flags);
		if (mode[0] && !strstr(mode, "[never]") && flags[0])
			assert_non_null(strstr(flags, " hg"));
		free(p);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cursor_values),
		cmocka_unit_test(test_cursor_truncation),
		cmocka_unit_test(test_cursor_lengths),
		cmocka_unit_test(test_quote_escapes),
		cmocka_unit_test(test_quote_truncates),
		cmocka_unit_test(test_strmap_basic),
		cmocka_unit_test(test_strmap_bounds),
		cmocka_unit_test(test_strmap_widths),
		cmocka_unit_test(test_alloc_large),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
