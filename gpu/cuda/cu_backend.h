/* cu_backend.h - the CUDA backend (gpu/cuda/): the operation table of
 * lib/backend.h over the CUDA runtime, linked statically (it opens the
 * driver, libcuda.so.1, at run time: a binary built with CUDA starts where
 * there is no driver or no device, and cuda_device_count() is then 0).
 *
 * The same sources also build the backend over the CPU emulation of
 * gpu/cuda/emu (the cuemu_* functions, test binaries only: the tests run
 * every kernel on machines without an NVIDIA GPU). */
#ifndef TERN_CU_BACKEND_H
#define TERN_CU_BACKEND_H

#include <stdbool.h>
#include <stdint.h>

#include "gpu/device.h"
#include "lib/backend.h"
#include "lib/core/error.h"

struct cuda_backend_opts {
	int device;         /* index among the devices */
	int64_t max_tokens; /* largest batch of the products, 1..4096 */
	bool no_graphs;     /* steps as plain launches, never captured (TERN_CUDA_GRAPHS=0) */
	bool no_tensor_cores; /* the batched products' GEMM in SIMT f32 even on tensor cores (the
			       * tests run both) */
	bool no_int_dot;      /* the mat-vec of 1..8 tokens sums decoded weights in f32 even where
			       * dp4a is (every sm_61+ device: the integer path by default; the
			       * tests run both) */
};

/* What the steps did (for -v, tern-bench and the tests). */
struct cuda_stats {
	uint64_t steps;            /* end_step calls */
	uint64_t replays;          /* steps that launched the graph captured before */
	uint64_t captures;         /* steps captured into a new or updated graph */
	uint64_t updates;          /* of those, executable graphs updated in place */
	uint64_t capture_failures; /* 1 once a capture failed: plain launches since */
	uint64_t step_launches;    /* kernels of the last captured (or plain) step */
	uint64_t step_ops;         /* op records of the last step */
	bool graphs;               /* steps are captured */
};

/* The CUDA devices: their count (0 without a driver or a device; the
 * reason in err if non-NULL), their facts, a backend on one. */
int cuda_device_count(tern_err *err);
int cuda_device_info(int i, struct tern_device_info *out, tern_err *err);
int cuda_backend_new(struct tern_backend **out, const struct cuda_backend_opts *opts, tern_err *err);
void cuda_get_stats(struct tern_backend *be, struct cuda_stats *out);
/* The device's read bandwidth in GB/s (10^9 bytes), measured by a kernel
 * over a buffer of up to 1 GiB (a quarter of the free memory at most). */
int cuda_read_bandwidth(struct tern_backend *be, double *gbps, tern_err *err);

/* The same over the CPU emulation (test binaries that link it; the
 * emulated device has total bytes of memory when total > 0). */
int cuemu_device_count(tern_err *err);
int cuemu_device_info(int i, struct tern_device_info *out, tern_err *err);
int cuemu_backend_new(struct tern_backend **out, const struct cuda_backend_opts *opts, tern_err *err);
void cuemu_get_stats(struct tern_backend *be, struct cuda_stats *out);
int cuemu_read_bandwidth(struct tern_backend *be, double *gbps, tern_err *err);
void tern_cuemu_reset(size_t total);

#endif
