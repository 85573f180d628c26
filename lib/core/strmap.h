/* strmap.h - name -> index hash map over names the caller already holds
 * (GGUF keys and tensor names, legacy tensor names, a tokenizer's piece
 * cache).
 *
 * The map stores indexes only; the name of entry i is asked from the
 * caller's key function, so that names stay views into a mapping (or into
 * a buffer the caller may move). Capacity is fixed when the map is made,
 * from the number of entries it may hold, which the caller bounds by the
 * size of its input: nothing grows with what a file claims. Open
 * addressing at a load of at most one half; lookups are O(1). */
#ifndef TERN_STRMAP_H
#define TERN_STRMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/core/str.h"

#define TERN_STRMAP_NONE SIZE_MAX /* "not found" */
#define TERN_STRMAP_LIMIT 0xfffffffeu /* most entries a map can hold */

/* A 64-bit finalizer (every output bit depends on every input bit), for
 * tables keyed by integers, such as the tokenizer's merge pairs. */
static inline uint64_t tern_mix64(uint64_t h)
{
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdull;
	h ^= h >> 33;
	h *= 0xc4ceb9fe1a85ec53ull;
	h ^= h >> 33;
	return h;
}

/* Name of entry i (ctx is the caller's, passed back unchanged). */
typedef struct tern_str (*tern_strmap_key)(const void *ctx, size_t i);

/* Maps for at most this many entries keep 32-bit slots (an 8-bit hash
 * tag beside index + 1 in 24 bits: a 262144-token vocabulary's map takes
 * 2 MiB, not 4); larger ones 64-bit slots (a 32-bit tag). */
#define TERN_STRMAP_NARROW ((1u << 24) - 2)

struct tern_strmap {
	void *slot;      /* [mask + 1] tag << 24 | (index + 1) in uint32_t, or, wide, tag << 32 | (index
			  * + 1) in uint64_t; 0 = empty */
	bool wide;       /* max > TERN_STRMAP_NARROW */
	size_t mask;
	size_t n, max;   /* entries held, entries allowed */
	tern_strmap_key key;
	const void *ctx;
};

/* Make an empty map for up to max entries. Returns 0, TERN_ENOMEM, or
 * TERN_ERANGE when max exceeds TERN_STRMAP_LIMIT. */
int tern_strmap_init(struct tern_strmap *m, size_t max, tern_strmap_key key, const void *ctx);
void tern_strmap_free(struct tern_strmap *m);

/* Add entry i under its name. Returns 0 when added; 1 when the name is
 * already held (i is not added; *first, if non-NULL, gets the index that
 * holds it, so the caller can report the duplicate); TERN_ERANGE when the
 * map holds max entries already, or i is past what its slots hold
 * (TERN_STRMAP_NARROW, TERN_STRMAP_LIMIT). */
int tern_strmap_add(struct tern_strmap *m, size_t i, size_t *first);

/* Index of the entry named (p, n), or TERN_STRMAP_NONE. */
size_t tern_strmap_find(const struct tern_strmap *m, const char *p, size_t n);

#endif
