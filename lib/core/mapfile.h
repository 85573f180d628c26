/* mapfile.h - read-only mapping of a whole file (model files are views into
 * it; nothing ever writes to the mapping). */
#ifndef TERN_MAPFILE_H
#define TERN_MAPFILE_H

#include <stddef.h>
#include <stdint.h>

#include "lib/core/error.h"

struct tern_map {
	const uint8_t *base; /* [size] NULL for an empty file */
	size_t size;
};

/* Map path read-only (PROT_READ, MAP_PRIVATE). An empty file gives
 * base = NULL, size = 0. Errors: TERN_EIO (cannot open, not a regular
 * file, cannot map) with the reason in e. */
int tern_map_file(struct tern_map *m, const char *path, tern_err *e);
void tern_unmap(struct tern_map *m);

#endif
