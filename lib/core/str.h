/* str.h - length-delimited string views, the one string type every module
 * shares (GGUF keys and values, legacy vocabularies, tensor names). Views
 * point into a mapping and are never NUL-terminated: use the length. */
#ifndef TERN_STR_H
#define TERN_STR_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

struct tern_str {
	const char *ptr; /* [len] */
	uint64_t len;
};

/* Compare a view with a C string. */
static inline bool tern_str_eq(struct tern_str s, const char *c)
{
	size_t n = strlen(c);
	return s.len == n && (n == 0 || memcmp(s.ptr, c, n) == 0);
}

#endif
