/* tensor.h - a tensor as every model file presents it: GGUF and legacy ggml
 * readers fill the same view, and the model loaders (LLM, Whisper, Silero)
 * read weights through it. The data is a view into the file's mapping. */
#ifndef TERN_TENSOR_H
#define TERN_TENSOR_H

#include <stdint.h>

#include "lib/core/str.h"

#define TERN_MAX_DIMS 4

struct tern_tensor_view {
	struct tern_str name;
	uint32_t n_dims;
	uint64_t ne[TERN_MAX_DIMS]; /* ne[0] is the row length; unused dims are 1 */
	uint32_t type;              /* enum quant_type */
	uint64_t offset;            /* GGUF: from the data section; legacy: from the file start */
	uint64_t nbytes;            /* implied by type and shape */
	uint64_t info_offset;       /* file offset of this tensor's info record */
	const void *data;           /* [nbytes] view into the mapping, possibly unaligned */
};

static inline uint64_t tern_tensor_nelements(const struct tern_tensor_view *t)
{
	return t->ne[0] * t->ne[1] * t->ne[2] * t->ne[3];
}

#endif
