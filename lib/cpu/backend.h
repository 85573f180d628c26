/* backend.h - the two CPU implementations of the operation table
 * (lib/backend.h):
 *   cpu_backend_new()      the optimized backend users run: the thread
 *                          pool, the SIMD kernels and the panel GEMM
 *                          (lib/cpu/matmul.h);
 *   cpu_ref_backend_new()  the reference, the oracle of the tests: one
 *                          thread, plain loops over quant/'s scalar
 *                          reference quantizer and dot; slow, readable.
 * Both keep buffers in host memory, 64-byte aligned, and present a model
 * file's weights as views of its mapping (no copy). */
#ifndef TERN_CPU_BACKEND_H
#define TERN_CPU_BACKEND_H

#include <stdint.h>

#include "lib/backend.h"
#include "lib/core/error.h"
#include "lib/cpu/matmul.h"

struct cpu_backend_opts {
	int n_threads;        /* 1..256 (the optimized backend; the reference uses one) */
	int64_t max_tokens;   /* largest batch of mat_mul, 1..CPU_MM_MAX_TOKENS */
	enum cpu_mm_repack repack; /* load-time repack of the weights (see matmul.h); NONE by default */
	bool keep_layout;     /* no interleaved copy for the one-token product (matmul.h, relay) */
};

/* Create a backend; *out is NULL on failure. Free with tern_backend_free(). */
int cpu_backend_new(struct tern_backend **out, const struct cpu_backend_opts *opts, tern_err *err);
int cpu_ref_backend_new(struct tern_backend **out, const struct cpu_backend_opts *opts, tern_err *err);

#endif
