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

/* Memory for a large copy that is streamed over and over (re-laid
 * weights): 64-byte aligned; from 2 MiB up aligned to 2 MiB, with
 * transparent huge pages asked for every whole 2 MiB of it (advice: where
 * the system gives none it is ordinary memory). Page-cache mappings of the
 * model file get huge pages from the kernel; an anonymous copy in 4 KiB
 * pages missed the TLB enough to stream slower than the file it replaced
 * (measured: Q4_0 decode 87-91% of the roofline at a 64 GB/s probe).
 * Release with free(); NULL when out of memory. */
void *tern_alloc_large(size_t n);

#endif
