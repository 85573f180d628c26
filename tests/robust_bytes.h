/* robust_bytes.h - a tiny little-endian byte builder for hand-made files.
 *
 * The robustness tests build GGUF and legacy ggml files byte by byte with
 * this, independently of the library's writer, so that a bug shared by the
 * writer and the reader cannot hide. Header-only: every function is static. */
#ifndef TERN_TESTS_ROBUST_BYTES_H
#define TERN_TESTS_ROBUST_BYTES_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct bb {
	uint8_t *p;
	size_t n, cap;
};

static inline void bb_raw(struct bb *b, const void *src, size_t n)
{
	if (b->n + n > b->cap) {
		size_t cap = b->cap ? b->cap : 256;
		while (cap < b->n + n)
			cap *= 2;
		uint8_t *np = realloc(b->p, cap);
		if (!np) {
			fprintf(stderr, "bb: out of memory\n");
			abort();
		}
		b->p = np;
		b->cap = cap;
	}
	if (n)
		memcpy(b->p + b->n, src, n);
	b->n += n;
}

static inline void bb_le(struct bb *b, uint64_t v, int bytes)
{
	uint8_t t[8];
	for (int i = 0; i < bytes; i++)
		t[i] = (uint8_t)(v >> (8 * i));
	bb_raw(b, t, (size_t)bytes);
}

static inline void bb_u8(struct bb *b, uint8_t v) { bb_le(b, v, 1); }
static inline void bb_u16(struct bb *b, uint16_t v) { bb_le(b, v, 2); }
static inline void bb_u32(struct bb *b, uint32_t v) { bb_le(b, v, 4); }
static inline void bb_i32(struct bb *b, int32_t v) { bb_le(b, (uint32_t)v, 4); }
static inline void bb_u64(struct bb *b, uint64_t v) { bb_le(b, v, 8); }

static inline void bb_f32(struct bb *b, float f)
{
	uint32_t u;
	memcpy(&u, &f, 4);
	bb_u32(b, u);
}

static inline void bb_zeros(struct bb *b, size_t n)
{
	while (n--)
		bb_u8(b, 0);
}

/* Pad with zeros up to a multiple of align. */
static inline void bb_align(struct bb *b, size_t align)
{
	while (b->n % align)
		bb_u8(b, 0);
}

/* Overwrite bytes already written. */
static inline void bb_put_le(struct bb *b, size_t at, uint64_t v, int bytes)
{
	for (int i = 0; i < bytes; i++)
		b->p[at + (size_t)i] = (uint8_t)(v >> (8 * i));
}

static inline void bb_free(struct bb *b)
{
	free(b->p);
	*b = (struct bb){0};
}

#endif
