/* cursor.h - a bounded little-endian reader over a byte range, the one
 * every file reader (GGUF, legacy ggml, ...) uses.
 *
 * A cursor is (base, size, offset). Each read checks the bytes that remain
 * before it touches them and, when they are too few, leaves the offset
 * where it was and writes a message naming the offset and the caller's
 * field name ("offset 24: tensor count truncated (needs 8 bytes, 3 left)").
 * Callers add their context in front with tern_err_prefix ("key 'x': ...");
 * the cursor only says what went wrong where. */
#ifndef TERN_CURSOR_H
#define TERN_CURSOR_H

#include <stddef.h>
#include <stdint.h>

#include "lib/core/error.h"
#include "lib/core/str.h"

struct tern_cur {
	const uint8_t *base; /* [size] */
	size_t size;
	size_t off;          /* next byte to read, <= size */
	tern_err *e;         /* where failures are reported (may be NULL) */
};

static inline struct tern_cur tern_cur_init(const void *base, size_t size, tern_err *e)
{
	return (struct tern_cur){(const uint8_t *)base, size, 0, e};
}

static inline size_t tern_cur_left(const struct tern_cur *c)
{
	return c->size - c->off;
}

/* Little-endian loads from memory the caller has already bounded. */
static inline uint16_t tern_le16(const void *q)
{
	const uint8_t *p = q;
	return (uint16_t)(p[0] | p[1] << 8);
}

static inline uint32_t tern_le32(const void *q)
{
	const uint8_t *p = q;
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static inline uint64_t tern_le64(const void *q)
{
	const uint8_t *p = q;
	return (uint64_t)tern_le32(p) | (uint64_t)tern_le32(p + 4) << 32;
}

/* TERN_EFORMAT (with the message) unless n bytes remain at the cursor. */
int tern_cur_need(struct tern_cur *c, size_t n, const char *what);

/* Read one field and advance; 0 or TERN_EFORMAT. */
int tern_cur_u8(struct tern_cur *c, uint8_t *v, const char *what);
int tern_cur_u16(struct tern_cur *c, uint16_t *v, const char *what);
int tern_cur_u32(struct tern_cur *c, uint32_t *v, const char *what);
int tern_cur_u64(struct tern_cur *c, uint64_t *v, const char *what);
int tern_cur_i32(struct tern_cur *c, int32_t *v, const char *what);
int tern_cur_f32(struct tern_cur *c, float *v, const char *what);

/* A view of the next n bytes (n from the file: checked, never trusted). */
int tern_cur_bytes(struct tern_cur *c, uint64_t n, const uint8_t **p, const char *what);

/* A string stored as its length (u32 or u64) then its bytes; the view
 * points into the range. On failure the offset is left at the length. */
int tern_cur_str32(struct tern_cur *c, struct tern_str *s, const char *what);
int tern_cur_str64(struct tern_cur *c, struct tern_str *s, const char *what);

#endif
