/* quote.h - hostile names (keys, tensor names, tokens read from a file)
 * made safe to put in a one-line message.
 *
 * A name from a file may hold control bytes (a terminal escape, a newline
 * that forges a second log line), bidirectional overrides that reorder what
 * a reader sees, invalid UTF-8, or be megabytes long. tern_quote keeps
 * printable ASCII and valid UTF-8 as they are, writes everything else as
 * \xHH (bytes) or \uHHHH (invisible formatting code points), escapes the
 * quote and backslash so the result can sit between '', and cuts a name
 * that does not fit with "..." (never inside an escape or a character). */
#ifndef TERN_QUOTE_H
#define TERN_QUOTE_H

#include <stddef.h>

#include "lib/core/str.h"

/* A buffer size that fits a typical name (about 90 printable bytes) and
 * keeps a message to one line. */
#define TERN_QUOTE_MAX 96

/* Render the n bytes at p into dst (cap >= 4 bytes, NUL-terminated) and
 * return dst, so that it can be an argument of a printf-style call. */
const char *tern_quote(char *dst, size_t cap, const char *p, size_t n);

static inline const char *tern_quote_str(char *dst, size_t cap, struct tern_str s)
{
	return tern_quote(dst, cap, s.ptr, (size_t)s.len);
}

#endif
