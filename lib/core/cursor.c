/* cursor.c - bounded little-endian reads with messages (see cursor.h). */
#include "lib/core/cursor.h"

#include <string.h>

int tern_cur_need(struct tern_cur *c, size_t n, const char *what)
{
	if (n <= tern_cur_left(c))
		return 0;
	return tern_errf(c->e, TERN_EFORMAT, "offset %zu: %s truncated (needs %zu bytes, %zu left)",
			 c->off, what, n, tern_cur_left(c));
}

/* Bound-checked view of the next n bytes, advancing past them. */
static const uint8_t *take(struct tern_cur *c, size_t n, const char *what)
{
	if (tern_cur_need(c, n, what))
		return NULL;
	const uint8_t *p = c->base + c->off;
	c->off += n;
	return p;
}

int tern_cur_u8(struct tern_cur *c, uint8_t *v, const char *what)
{
	const uint8_t *p = take(c, 1, what);
	if (!p)
		return TERN_EFORMAT;
	*v = p[0];
	return 0;
}

int tern_cur_u16(struct tern_cur *c, uint16_t *v, const char *what)
{
	const uint8_t *p = take(c, 2, what);
	if (!p)
		return TERN_EFORMAT;
	*v = tern_le16(p);
	return 0;
}

int tern_cur_u32(struct tern_cur *c, uint32_t *v, const char *what)
{
	const uint8_t *p = take(c, 4, what);
	if (!p)
		return TERN_EFORMAT;
	*v = tern_le32(p);
	return 0;
}

int tern_cur_u64(struct tern_cur *c, uint64_t *v, const char *what)
{
	const uint8_t *p = take(c, 8, what);
	if (!p)
		return TERN_EFORMAT;
	*v = tern_le64(p);
	return 0;
}

int tern_cur_i32(struct tern_cur *c, int32_t *v, const char *what)
{
	const uint8_t *p = take(c, 4, what);
	if (!p)
		return TERN_EFORMAT;
	*v = (int32_t)tern_le32(p);
	return 0;
}

int tern_cur_f32(struct tern_cur *c, float *v, const char *what)
{
	const uint8_t *p = take(c, 4, what);
	if (!p)
		return TERN_EFORMAT;
	uint32_t u = tern_le32(p);
	memcpy(v, &u, 4);
	return 0;
}

int tern_cur_bytes(struct tern_cur *c, uint64_t n, const uint8_t **p, const char *what)
{
	if (n > tern_cur_left(c))
		return tern_errf(c->e, TERN_EFORMAT,
				 "offset %zu: %s of %llu bytes runs past the end of the file (%zu bytes left)",
				 c->off, what, (unsigned long long)n, tern_cur_left(c));
	*p = c->base + c->off;
	c->off += (size_t)n;
	return 0;
}

/* The length at `at` (already read) is checked against what follows it. */
static int str_body(struct tern_cur *c, size_t at, uint64_t n, struct tern_str *s, const char *what)
{
	if (n > tern_cur_left(c)) {
		int rc = tern_errf(c->e, TERN_EFORMAT,
				   "offset %zu: %s length %llu runs past the end of the file (%zu bytes left)",
				   at, what, (unsigned long long)n, tern_cur_left(c));
		c->off = at;
		return rc;
	}
	s->ptr = (const char *)c->base + c->off;
	s->len = n;
	c->off += (size_t)n;
	return 0;
}

int tern_cur_str32(struct tern_cur *c, struct tern_str *s, const char *what)
{
	size_t at = c->off;
	uint32_t n;
	int rc = tern_cur_u32(c, &n, what);
	return rc ? rc : str_body(c, at, n, s, what);
}

int tern_cur_str64(struct tern_cur *c, struct tern_str *s, const char *what)
{
	size_t at = c->off;
	uint64_t n;
	int rc = tern_cur_u64(c, &n, what);
	return rc ? rc : str_body(c, at, n, s, what);
}
