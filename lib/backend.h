/* backend.h - the operation table every backend implements (DESIGN.md,
 * "Backends"). The forward passes (LLM, Whisper, Silero) are written once
 * over it; the CPU implements it twice (lib/cpu: a scalar reference, the
 * oracle, and the optimized backend), CUDA and Vulkan next.
 *
 * What exists so far: buffers and the quantized products. The language
 * models add embedding rows, norms, RoPE, attention, activations, softmax
 * and copies: each is one more function pointer below, with the same
 * contract, and one more entry in tests/test_backend_ops.c.
 *
 * Shaped for GPUs:
 *   - tensors passed to ops are backend buffers with a type and a shape,
 *     never host pointers, so that a GPU keeps everything resident;
 *   - ops enqueue and return; sync() waits for them (on the CPU they run
 *     before returning and sync() only reports);
 *   - begin_step() / end_step() bracket one decode step, which a GPU may
 *     capture once and replay (a CUDA graph, a Vulkan command buffer):
 *     what changes from token to token (positions, lengths, token ids)
 *     is uploaded into device buffers, never passed as an argument, so
 *     that the recorded step stays valid.
 *
 * Contract (who may fail, who owns what):
 *   - Creation, buf_alloc, buf_weight and mat_prepare happen at load time:
 *     they may fail (TERN_E* code and a message naming the tensor) and may
 *     allocate. Everything a step needs (scratch, prepared weights) is
 *     sized and allocated there.
 *   - Per-step ops (transfers, products, begin/end_step) return nothing
 *     and allocate nothing. A call that breaks its preconditions (shapes
 *     that do not match, a weight not prepared) is a bug of the caller: the
 *     op is skipped and the next sync() returns TERN_EINVAL with a message;
 *     a GPU also reports a device fault there. Results are defined only
 *     after a sync() that returned 0.
 *   - The backend owns the storage of the buffers it allocated; buf_free()
 *     releases it and the buffer's prepared form. A weight buffer may be a
 *     view into the model file's mapping (TERN_BACKEND_HOST_MEMORY): the
 *     mapping must then outlive it, and nothing writes to it. Views made by
 *     tern_buf_rows() own nothing and must not outlive their buffer.
 *     A struct copy of a buffer shares its storage and prepared form:
 *     free exactly one of them.
 *   - Host memory given to upload() / download() must stay valid until
 *     the next sync() returns; download()'s destination is filled then.
 *   - One thread drives a backend at a time. */
#ifndef TERN_BACKEND_H
#define TERN_BACKEND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/core/error.h"
#include "lib/format/tensor.h"
#include "quant/quant.h"

struct tern_backend;

/* tern_buf.flags */
enum {
	TERN_BUF_OWNS = 1u << 0,     /* allocated by the backend: buf_free() releases it */
	TERN_BUF_READONLY = 1u << 1, /* a weight: never written (it may be the model file) */
};

/* A tensor in a backend's memory: a handle, a type and a shape. Copying the
 * struct copies the handle, not the data. */
struct tern_buf {
	struct tern_backend *be;   /* the backend whose memory holds it */
	void *mem;                 /* backend's storage handle (CPU: the host address of byte 0) */
	size_t offset;             /* bytes from mem to element 0 */
	uint32_t type;             /* enum quant_type of the elements */
	int64_t ne[TERN_MAX_DIMS]; /* elements per dimension, ne[0] the row length; unused dims are 1 */
	size_t nb[TERN_MAX_DIMS];  /* nb[0]: bytes per block of the type; nb[i]: bytes from index i to i + 1 */
	unsigned flags;            /* TERN_BUF_* */
	void *prep;                /* backend's prepared form of a weight (mat_prepare), or NULL */
};

/* tern_backend.caps */
enum {
	TERN_BACKEND_HOST_MEMORY = 1u << 0, /* buffers are host memory: tern_buf_host() is their address */
	TERN_BACKEND_ASYNC = 1u << 1,       /* ops return before the work is done; sync() waits */
	TERN_BACKEND_GRAPH = 1u << 2,       /* begin_step / end_step record a replayable step */
	TERN_BACKEND_REFERENCE = 1u << 3,   /* the scalar oracle the others are tested against */
};

struct tern_backend {
	const char *name;   /* "cpu", "cpu-ref", later "cuda", "vulkan" */
	unsigned caps;      /* TERN_BACKEND_* */
	int64_t max_tokens; /* largest batch mat_mul() takes, fixed at creation */

	/* Release everything the backend allocated, its buffers excepted
	 * (free those first). */
	void (*free)(struct tern_backend *be);

	/* ---- buffers (load time: may fail, may allocate) ---- */

	/* A new buffer of type and shape (n_dims 1..TERN_MAX_DIMS, ne[0] a
	 * multiple of the type's block), contents undefined. */
	int (*buf_alloc)(struct tern_backend *be, struct tern_buf *b, uint32_t type, int n_dims, const int64_t *ne,
			 tern_err *err);
	/* A read-only buffer holding a model file's tensor: on the CPU a view
	 * of t->data (no copy), on a GPU a copy uploaded once. */
	int (*buf_weight)(struct tern_backend *be, struct tern_buf *b, const struct tern_tensor_view *t,
			  tern_err *err);
	/* Release b (storage if TERN_BUF_OWNS, and the prepared form); b is
	 * left empty. Safe on an empty buffer. */
	void (*buf_free)(struct tern_backend *be, struct tern_buf *b);
	/* Prepare a 2-D weight ([rows][cols], ne[1] rows of ne[0]) for
	 * mat_vec / mat_mul: check its type and shape, size the backend's
	 * scratch for max_tokens, repack if the backend does. TERN_EUNSUPPORTED
	 * for a type without a product. */
	int (*mat_prepare)(struct tern_backend *be, struct tern_buf *w, tern_err *err);

	/* ---- transfers (enqueued) ---- */

	/* n bytes from host src to dst at byte offset (from element 0). */
	void (*upload)(struct tern_backend *be, struct tern_buf *dst, size_t offset, const void *src, size_t n);
	/* n bytes of src at byte offset to host dst. */
	void (*download)(struct tern_backend *be, const struct tern_buf *src, size_t offset, void *dst, size_t n);

	/* ---- operations (per step: cannot fail, allocate nothing) ---- */

	/* y[r] = dot(w row r, x) for one token: w prepared, x f32 [cols],
	 * y f32 [rows], both contiguous. */
	void (*mat_vec)(struct tern_backend *be, const struct tern_buf *w, const struct tern_buf *x,
			struct tern_buf *y);
	/* y[t][r] = dot(w row r, x row t): x f32 [ntok][cols], y f32
	 * [ntok][rows], contiguous, ntok = x->ne[1] in 1..max_tokens. */
	void (*mat_mul)(struct tern_backend *be, const struct tern_buf *w, const struct tern_buf *x,
			struct tern_buf *y);

	/* Bracket one step (a token of decode); see the top of this file. */
	void (*begin_step)(struct tern_backend *be);
	void (*end_step)(struct tern_backend *be);
	/* Wait for every enqueued op; report (and clear) the first error
	 * since the last sync. */
	int (*sync)(struct tern_backend *be, tern_err *err);

	void *impl; /* the backend's own state */
};

static inline void tern_backend_free(struct tern_backend *be)
{
	if (be)
		be->free(be);
}

/* Host address of element 0, or NULL where buffers are device memory. */
static inline void *tern_buf_host(const struct tern_buf *b)
{
	if (!b->be || !(b->be->caps & TERN_BACKEND_HOST_MEMORY))
		return NULL;
	return (uint8_t *)b->mem + b->offset;
}

/* Bytes from element 0 to the end of the last row. */
static inline size_t tern_buf_nbytes(const struct tern_buf *b)
{
	size_t n = quant_row_size(b->type, (uint64_t)b->ne[0], NULL);
	for (int i = 1; i < TERN_MAX_DIMS; i++)
		n += (size_t)(b->ne[i] - 1) * b->nb[i];
	return n;
}

/* View of rows [r0, r0 + n) of a 2-D buffer (dims above 1 are 1): the
 * same storage, not owned, not prepared. */
static inline struct tern_buf tern_buf_rows(const struct tern_buf *b, int64_t r0, int64_t n)
{
	struct tern_buf v = *b;
	v.offset += (size_t)r0 * b->nb[1];
	v.ne[1] = n;
	v.flags &= ~(unsigned)TERN_BUF_OWNS;
	v.prep = NULL;
	return v;
}

#endif
