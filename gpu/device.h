/* device.h - what every GPU backend reports about a device, so that device
 * choice (-dev, --list-devices: gpu/registry.h), the memory planner (-ngl
 * auto: gpu/plan.h) and tern-bench describe CUDA and Vulkan devices alike;
 * and the copy that carries activations between two backends (partial
 * offload, lib/llm). Below the backends: they include it. */
#ifndef TERN_GPU_DEVICE_H
#define TERN_GPU_DEVICE_H

#include <stdbool.h>
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

/* dst = src between buffers of two backends (or one), through host
 * memory: src's contiguous bytes are downloaded into staging (at least
 * tern_buf_nbytes(src) bytes), src's backend synced, then uploaded into
 * dst. staging must stay untouched until dst's backend has synced (upload's
 * contract). Returns what src's sync reports; TERN_EINVAL when the sizes
 * differ. */
int tern_backend_copy(const struct tern_buf *src, struct tern_buf *dst, void *staging, tern_err *e);

#endif
