/* utf8.c - UTF-8 classification and decoding under the named policies
 * (see utf8.h). */
#include "lib/core/utf8.h"

int tern_utf8_seq(const unsigned char *s, size_t n, size_t *bad)
{
	unsigned c = s[0];
	if (c < 0x80)
		return 1;
	size_t len;
	unsigned lo = 0x80, hi = 0xbf; /* allowed range of the second byte */
	if (c >= 0xc2 && c <= 0xdf) {
		len = 2;
	} else if (c >= 0xe0 && c <= 0xef) {
		len = 3;
		if (c == 0xe0)
			lo = 0xa0; /* no overlong forms */
		if (c == 0xed)
			hi = 0x9f; /* no surrogates */
	} else if (c >= 0xf0 && c <= 0xf4) {
		len = 4;
		if (c == 0xf0)
			lo = 0x90;
		if (c == 0xf4)
			hi = 0x8f; /* nothing above U+10FFFF */
	} else {
		*bad = 1;
		return -1;
	}
	for (size_t k = 1; k < len; k++) {
		if (k >= n) {
			*bad = k;
			return 0;
		}
		unsigned b = s[k];
		if (b < (k == 1 ? lo : 0x80) || b > (k == 1 ? hi : 0xbf)) {
			*bad = k;
			return -1;
		}
	}
	return (int)len;
}

/* The value of a sequence of len >= 2 bytes whose structure is checked. */
static uint32_t value(const unsigned char *s, size_t len)
{
	uint32_t v = s[0] & (0x7fu >> len);
	for (size_t i = 1; i < len; i++)
		v = v << 6 | (s[i] & 0x3fu);
	return v;
}

/* TOKENIZER: the length the lead byte asks for if the lead is C2..F4 and
 * that many continuation bytes follow; else 1. */
static size_t structural_len(const unsigned char *s, size_t n)
{
	unsigned c = s[0];
	if (c < 0xc2 || c > 0xf4)
		return 1;
	size_t len = c < 0xe0 ? 2 : c < 0xf0 ? 3 : 4;
	if (len > n)
		return 1;
	for (size_t i = 1; i < len; i++)
		if ((s[i] & 0xc0) != 0x80)
			return 1;
	return len;
}

size_t tern_utf8_decode(const unsigned char *s, size_t n, enum tern_utf8_policy policy, uint32_t *cp)
{
	size_t bad = 0, len;
	uint32_t v = TERN_UTF8_BAD;
	int k = tern_utf8_seq(s, n, &bad);
	if (k > 0) {
		len = (size_t)k;
		v = len == 1 ? s[0] : value(s, len);
	} else if (policy == TERN_UTF8_LOSSY) {
		len = bad;
	} else if (policy == TERN_UTF8_TOKENIZER) {
		len = structural_len(s, n);
		if (len > 1)
			v = value(s, len);
	} else {
		return 0;
	}
	if (cp)
		*cp = v;
	return len;
}

size_t tern_utf8_encode(char *o, uint32_t cp)
{
	if (cp < 0x80) {
		o[0] = (char)cp;
		return 1;
	}
	if (cp < 0x800) {
		o[0] = (char)(0xC0 | (cp >> 6));
		o[1] = (char)(0x80 | (cp & 0x3F));
		return 2;
	}
	if (cp < 0x10000) {
		o[0] = (char)(0xE0 | (cp >> 12));
		o[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
		o[2] = (char)(0x80 | (cp & 0x3F));
		return 3;
	}
	o[0] = (char)(0xF0 | (cp >> 18));
	o[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
	o[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
	o[3] = (char)(0x80 | (cp & 0x3F));
	return 4;
}
