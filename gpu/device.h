/* device.h - what every GPU backend reports about a device, so that device
 * choice (-dev, --list-devices), the memory planner (-ngl auto) and
 * tern-bench describe CUDA and Vulkan devices alike. */
#ifndef TERN_GPU_DEVICE_H
#define TERN_GPU_DEVICE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/backend.h"
#include "lib/core/error.h"

struct tern_device_info {
	char name[32];       /* tern's name for it: "vulkan0", "cuda0", "cpu" */
	char desc[256];      /* the device's own name: "NVIDIA H200", "llvmpipe (LLVM 15.0.7, 256 bits)" */
	char driver[128];    /* driver name and version */
	char api[32];        /* "Vulkan 1.3.239", "CUDA 13.0" */
	uint64_t mem_total;  /* bytes of device-local memory (the largest device-local heap) */
	uint64_t mem_budget; /* bytes this process may still use (VK_EXT_memory_budget, cudaMemGetInfo), else mem_total */
	uint64_t max_alloc;  /* largest single allocation */
	uint64_t max_binding; /* largest range one shader binding may see (Vulkan's maxStorageBufferRange) */
	bool fp16;           /* 16-bit float arithmetic in shaders */
	bool int_dot;        /* an accelerated 8-bit integer dot product */
	bool coopmat;        /* cooperative matrices / tensor cores */
	bool uma;            /* device memory is host memory (an integrated GPU, lavapipe) */
	bool software;       /* the API run by the CPU (lavapipe: VK_PHYSICAL_DEVICE_TYPE_CPU): usable
			      * by name, never chosen by "auto" (the CPU backend is faster) */
	int subgroup;        /* subgroup (warp, wave) size */
};

/* ---- the registry (gpu/device.c) ----------------------------------------
 *
 * Devices by name: "cpu" (always, first), then "vulkan0", "vulkan1", ...
 * (built with TERN_HAVE_VULKAN: vk_device_count() / vk_device_info()),
 * "cuda0", ... later; "auto" is the GPU with the largest budget (software
 * renderers excepted), else the CPU. A device that is absent, or whose backend refuses to start, is an
 * error naming it: nothing falls back silently but "auto". */

#define TERN_DEVICE_MAX 16

struct tern_device_opts {
	int n_threads;      /* the CPU backend's threads, 1..256 */
	int64_t max_tokens; /* largest mat_mul batch of every backend opened */
	bool reference;     /* "cpu" opens the scalar reference backend (tern-bench --backend ref) */
	bool keep_layout;   /* the CPU backend keeps the file's layout (cpu_backend_opts) */
	bool validation;    /* Vulkan's validation layer (the tests) */
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
/* Whether d is the host CPU (its layers need no offload). */
bool tern_device_is_cpu(const struct tern_device_info *d);
/* The bytes a plan may place on d: its mem_budget, capped by limit (> 0:
 * --gpu-mem-limit). */
uint64_t tern_device_budget(const struct tern_device_info *d, uint64_t limit);
/* The backends compiled in, space-separated: "cpu", "cpu vulkan", ... */
const char *tern_device_backends(void);

/* dst = src between buffers of two backends (or one), through host
 * memory: src's contiguous bytes are downloaded into staging (at least
 * tern_buf_nbytes(src) bytes), src's backend synced, then uploaded into
 * dst. staging must stay untouched until dst's backend has synced (upload's
 * contract). Returns what src's sync reports; TERN_EINVAL when the sizes
 * differ. */
int tern_backend_copy(const struct tern_buf *src, struct tern_buf *dst, void *staging, tern_err *e);

#endif
