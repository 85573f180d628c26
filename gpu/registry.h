/* registry.h - the devices by name and the backend factory every program
 * goes through: "cpu" (always, first), then "vulkan0", "vulkan1", ...
 * (built with TERN_HAVE_VULKAN: vk_device_count() / vk_device_info() of
 * gpu/vulkan/vk_backend.h), "cuda0", ... (TERN_HAVE_CUDA: gpu/cuda/cu_backend.h); "auto"
 * is the GPU with the largest budget (software renderers excepted), else
 * the CPU. A device that is absent, or whose backend refuses to start, is
 * an error naming it: nothing falls back silently but "auto". Above the
 * backends (it opens them), below the programs; the models never see it:
 * they are handed backends. */
#ifndef TERN_GPU_REGISTRY_H
#define TERN_GPU_REGISTRY_H

#include <stdbool.h>
#include <stdint.h>

#include "gpu/device.h"
#include "lib/backend.h"
#include "lib/core/error.h"

#define TERN_DEVICE_MAX 16

struct tern_device_opts {
	int n_threads;      /* the CPU backend's threads, 1..256 */
	int64_t max_tokens; /* largest mat_mul batch of every backend opened */
	bool reference;     /* "cpu" opens the scalar reference backend (tern-bench --backend ref) */
	bool keep_layout;   /* the CPU backend keeps the file's layout (cpu_backend_opts) */
	bool validation;    /* Vulkan's validation layer (the tests) */
	bool profile;       /* a GPU backend times its dispatches and prints the time per
			     * shader on stderr when freed (TERN_GPU_PROFILE=1: developers) */
	bool no_graphs;     /* CUDA: decode steps as plain launches, not captured into graphs
			     * (TERN_CUDA_GRAPHS=0: developers, measurements) */
	bool int_dot;       /* Vulkan: the integer dot-product mat-vec even where the device
			     * does not call it accelerated (vk_backend_opts.int_dot;
			     * TERN_VK_INT_DOT=1: developers, measurements on lavapipe) */
	/* Tests only (the executables set them from TERN_TEST_DEVICE; the
	 * library reads no environment): with test_mem > 0 a device "test0"
	 * is listed after the GPUs and counts as one for "auto": the
	 * optimized CPU backend in its own instance, reporting test_mem bytes
	 * of memory, so that partial offload, the planner and its retries run
	 * end to end without a GPU. With test_alloc_limit > 0 it refuses
	 * (TERN_ENOMEM) any buffer that would take its live buffers past that
	 * many bytes, as a driver may refuse what its budget promised. */
	uint64_t test_mem;
	uint64_t test_alloc_limit;
	/* Tests only: one more device, listed after the GPUs (the CUDA backend
	 * over its CPU emulation, "cuemu0", which only the test binaries link:
	 * tests/test_offload.c), with its facts and its backend's maker. */
	const struct tern_device_extra *extra;
};

struct tern_device_extra {
	const char *name;
	int (*info)(int i, struct tern_device_info *out, tern_err *err);
	int (*open)(const struct tern_device_opts *o, struct tern_backend **be, tern_err *err);
};

/* The devices present, "cpu" first, into out[cap]; returns their count
 * (at most TERN_DEVICE_MAX) or a negative code. A GPU API that is
 * compiled in but finds no device lists nothing, which is no error. */
int tern_device_list(struct tern_device_info *out, int cap, const struct tern_device_opts *o, tern_err *e);
/* The facts of device name ("auto" resolved: the GPU with the largest
 * mem_budget that is not software, else the CPU). TERN_ENOTFOUND names the devices present. */
int tern_device_find(const char *name, const struct tern_device_opts *o, struct tern_device_info *out, tern_err *e);
/* A backend on device name ("auto" as tern_device_find resolves it); *be
 * is NULL on failure, the message names the device. */
int tern_backend_open(const char *name, const struct tern_device_opts *o, struct tern_backend **be, tern_err *e);
/* The read bandwidth of be's device memory in GB/s (10^9 bytes), measured
 * by a shader reading a large buffer (tern-bench's roofline of a GPU);
 * TERN_EUNSUPPORTED for a backend without the probe (the CPU's is
 * tern-bench's own). */
int tern_backend_read_bandwidth(struct tern_backend *be, double *gbps, tern_err *e);
/* What a GPU backend's decode steps did (lib/backend.h begin_step /
 * end_step): steps run, replayed from a recording (a CUDA graph, a Vulkan
 * command buffer) and recorded, and the kernels (dispatches) of the last
 * step; false for a backend that records no steps (the CPU's). */
struct tern_step_stats {
	uint64_t steps, replays, recorded, launches;
	const char *how;    /* "CUDA graph", "command buffer", "plain launches" (CUDA's graphs off) */
	bool capture_failed; /* CUDA: a capture failed, and the steps run as plain launches since */
};
bool tern_backend_step_stats(struct tern_backend *be, struct tern_step_stats *out);
/* Whether d is the host CPU (its layers need no offload). */
bool tern_device_is_cpu(const struct tern_device_info *d);
/* The bytes a plan may place on d: its mem_budget, capped by limit (> 0:
 * --gpu-mem-limit). */
uint64_t tern_device_budget(const struct tern_device_info *d, uint64_t limit);
/* For -v: why each GPU API built in lists no device ("CUDA: no device
 * (cudaGetDeviceCount: CUDA driver version is insufficient ...)"), "" when
 * each lists one. */
void tern_device_why_none(char *out, size_t cap);
/* The backends compiled in, space-separated: "cpu", "cpu vulkan", ... */
const char *tern_device_backends(void);

#endif
