/* strmap.c - name -> index hash map (see strmap.h). */
#include "lib/core/strmap.h"

#include <stdlib.h>
#include <string.h>

#include "lib/core/error.h"

/* Eight bytes at a time (names and tokenizer pieces are short, and the
 * tokenizer looks up every candidate piece), then a 64-bit finalizer so that
 * both the low bits (the slot) and the high bits (the tag kept in the slot)
 * depend on every byte. */
static uint64_t hash(const char *p, size_t n)
{
	uint64_t h = 0x9e3779b97f4a7c15ull ^ (n * 0x100000001b3ull);
	while (n >= 8) {
		uint64_t w;
		memcpy(&w, p, 8);
		h = (h ^ w) * 0xbf58476d1ce4e5b9ull;
		h ^= h >> 29;
		p += 8;
		n -= 8;
	}
	uint64_t w = 0;
	if (n)
		memcpy(&w, p, n);
	return tern_mix64(h ^ w);
}

int tern_strmap_init(struct tern_strmap *m, size_t max, tern_strmap_key key, const void *ctx)
{
	memset(m, 0, sizeof *m);
	if (max > TERN_STRMAP_LIMIT)
		return TERN_ERANGE;
	size_t cap = 16;
	while (cap < 2 * max)
		cap *= 2;
	m->wide = max > TERN_STRMAP_NARROW;
	m->slot = calloc(cap, m->wide ? sizeof(uint64_t) : sizeof(uint32_t));
	if (!m->slot)
		return TERN_ENOMEM;
	m->mask = cap - 1;
	m->max = max;
	m->key = key;
	m->ctx = ctx;
	return 0;
}

void tern_strmap_free(struct tern_strmap *m)
{
	free(m->slot);
	memset(m, 0, sizeof *m);
}

/* Slot s as tag << 32 | (index + 1), whatever its width; 0 = empty. */
static uint64_t slot_at(const struct tern_strmap *m, size_t s)
{
	if (m->wide)
		return ((const uint64_t *)m->slot)[s];
	uint32_t e = ((const uint32_t *)m->slot)[s];
	return (uint64_t)(e >> 24) << 32 | (e & 0xffffffu);
}

/* The tag of hash h as a slot keeps it: the bits the slot's position
 * does not use (its low bits) */
static uint64_t tag_of(const struct tern_strmap *m, uint64_t h)
{
	return m->wide ? h >> 32 : h >> 56;
}

/* The slot holding (p, n), or the empty slot where it would go. */
static size_t probe(const struct tern_strmap *m, const char *p, size_t n, uint64_t h)
{
	uint64_t tag = tag_of(m, h);
	for (size_t s = (size_t)h & m->mask;; s = (s + 1) & m->mask) {
		uint64_t e = slot_at(m, s);
		if (!e)
			return s;
		if (e >> 32 == tag) {
			struct tern_str k = m->key(m->ctx, (size_t)(uint32_t)e - 1);
			if (k.len == n && (n == 0 || memcmp(k.ptr, p, n) == 0))
				return s;
		}
	}
}

int tern_strmap_add(struct tern_strmap *m, size_t i, size_t *first)
{
	if (m->n >= m->max || i > (m->wide ? TERN_STRMAP_LIMIT : TERN_STRMAP_NARROW))
		return TERN_ERANGE;
	struct tern_str k = m->key(m->ctx, i);
	uint64_t h = hash(k.ptr, (size_t)k.len);
	size_t s = probe(m, k.ptr, (size_t)k.len, h);
	uint64_t e = slot_at(m, s);
	if (e) {
		if (first)
			*first = (size_t)(uint32_t)e - 1;
		return 1;
	}
	if (m->wide)
		((uint64_t *)m->slot)[s] = tag_of(m, h) << 32 | (uint64_t)(i + 1);
	else
		((uint32_t *)m->slot)[s] = (uint32_t)(tag_of(m, h) << 24 | (uint64_t)(i + 1));
	m->n++;
	return 0;
}

size_t tern_strmap_find(const struct tern_strmap *m, const char *p, size_t n)
{
	if (!m->slot)
		return TERN_STRMAP_NONE;
	uint64_t e = slot_at(m, probe(m, p, n, hash(p, n)));
	return e ? (size_t)(uint32_t)e - 1 : TERN_STRMAP_NONE;
}
