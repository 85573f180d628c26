/* utf8.c - UTF-8 sequence classification (see utf8.h). */
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
