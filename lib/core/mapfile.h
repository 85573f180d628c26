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
/* Release the pages wholly inside [p, p + n) of a mapping made by
 * tern_map_file from this process (their memory no longer counts for it);
 * a later read maps them back from the file. A reader that keeps its own
 * copy of some of the file's data calls it. Only for such mappings: on
 * other memory it would lose the data. */
void tern_map_drop(const void *p, size_t n);

#endif
