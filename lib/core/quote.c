/* quote.c - safe rendering of hostile names for messages (see quote.h). */
#include "lib/core/quote.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "lib/core/utf8.h"

/* Code points that are valid but change how the rest of a line is shown
 * or read: C1 controls, directional marks, embeddings, overrides and
 * isolates, and the Unicode line and paragraph separators. */
static int invisible(uint32_t cp)
{
	return (cp >= 0x80 && cp <= 0x9f) || cp == 0x200e || cp == 0x200f ||
	       (cp >= 0x2028 && cp <= 0x202e) || (cp >= 0x2066 && cp <= 0x2069);
}

static uint32_t decode(const unsigned char *s, int len)
{
	static const unsigned char lead_mask[5] = {0, 0x7f, 0x1f, 0x0f, 0x07};
	uint32_t cp = s[0] & lead_mask[len];
	for (int k = 1; k < len; k++)
		cp = cp << 6 | (s[k] & 0x3f);
	return cp;
}

/* Render the piece of input at s[0..n): writes at most 8 bytes to out,
 * returns their count and sets *used to the input bytes consumed. */
static size_t piece(const unsigned char *s, size_t n, char *out, size_t *used)
{
	size_t bad = 1;
	int len = s[0] < 0x80 ? 1 : tern_utf8_seq(s, n, &bad);
	if (len == 1 && s[0] >= 0x20 && s[0] < 0x7f && s[0] != '\'' && s[0] != '\\') {
		out[0] = (char)s[0];
		*used = 1;
		return 1;
	}
	if (len > 1) {
		*used = (size_t)len;
		uint32_t cp = decode(s, len);
		if (!invisible(cp)) {
			memcpy(out, s, (size_t)len);
			return (size_t)len;
		}
		return (size_t)snprintf(out, 8, "\\u%04x", (unsigned)cp);
	}
	/* ASCII to escape, or the first byte of an ill-formed or cut-short
	 * sequence: that byte alone, so that valid text after it still shows. */
	*used = 1;
	return (size_t)snprintf(out, 8, "\\x%02x", s[0]);
}

const char *tern_quote(char *dst, size_t cap, const char *p, size_t n)
{
	static const char ell[] = "...";
	const unsigned char *s = (const unsigned char *)p;
	char tmp[8];
	size_t used;
	if (!cap)
		return dst;
	/* Does the whole name fit? Stop measuring once it cannot. */
	size_t total = 0;
	for (size_t i = 0; i < n && total < cap; i += used)
		total += piece(s + i, n - i, tmp, &used);
	/* If not, keep room for the ellipsis after the last piece. */
	size_t room = total < cap ? cap - 1 : cap - 1 - (sizeof ell - 1 < cap - 1 ? sizeof ell - 1 : cap - 1);
	size_t o = 0, i = 0;
	while (i < n) {
		size_t pl = piece(s + i, n - i, tmp, &used);
		if (o + pl > room)
			break;
		memcpy(dst + o, tmp, pl);
		o += pl;
		i += used;
	}
	if (i < n) {
		size_t k = sizeof ell - 1 < cap - 1 - o ? sizeof ell - 1 : cap - 1 - o;
		memcpy(dst + o, ell, k);
		o += k;
	}
	dst[o] = 0;
	return dst;
}
