/* vk_backend.h - the Vulkan backend (gpu/vulkan/): the operation table of
 * lib/backend.h over the Vulkan API, GLSL compute shaders built to SPIR-V
 * by glslc and embedded. The loader (libvulkan.so.1) is opened at run time:
 * a binary built with Vulkan starts where no loader or no device exists,
 * and these functions then say so (vk_device_count() == 0). */
#ifndef TERN_VK_BACKEND_H
#define TERN_VK_BACKEND_H

#include <stdbool.h>
#include <stdint.h>

#include "gpu/device.h"
#include "lib/backend.h"
#include "lib/core/error.h"

struct vk_backend_opts {
	int device;          /* index among vk_device_count()'s devices */
	int64_t max_tokens;  /* largest batch of mat_mul, 1..4096 */
	bool validation;     /* enable the Khronos validation layer: any message it reports
			      * becomes an error of the next sync() (the tests) */
	bool profile;        /* time every dispatch (timestamp queries, where the queue has
			      * them) and print the time per shader on stderr when freed */
	bool no_subgroup;    /* the shaders without subgroup arithmetic (_nosg), as on a
			      * device that lacks it (the tests run both) */
	bool int_dot;        /* the one-token mat-vec's integer dot product wherever the device
			      * has shaderIntegerDotProduct and subgroup arithmetic, even where it
			      * does not call the 4x8-bit packed dot accelerated (by default only
			      * where it does): the tests, and measurements on lavapipe */
	bool no_coopmat;     /* the GEMM in plain shader arithmetic even where the device
			      * has cooperative matrices (mul_mm.comp, not mul_mm_cm.comp) */
	bool try_coopmat;    /* try mul_mm_cm.comp even where the device lacks cooperative
			      * matrices: its check at creation then fails and the backend
			      * falls back to mul_mm.comp (the tests' path through that) */
};

/* Number of usable Vulkan devices (0 without a loader or a device); the
 * reason when 0 in err if non-NULL. */
int vk_device_count(tern_err *err);
/* Facts of device i (0..count-1). */
int vk_device_info(int i, struct tern_device_info *out, tern_err *err);
/* A backend on device opts->device; *out is NULL on failure (a device that
 * lacks what the shaders need is refused with the reason). */
int vk_backend_new(struct tern_backend **out, const struct vk_backend_opts *opts, tern_err *err);

/* What the command stream did (for -v and the tests): submits, steps
 * replayed without recording, steps recorded, and the dispatches of the
 * last step; whether the one-token mat-vec takes the integer dot product
 * (vk_backend_opts.int_dot) and whether the batched products run on
 * cooperative matrices (mul_mm_cm.comp). */
struct vk_stats {
	uint64_t submits, replays, recorded, step_dispatches;
	bool int_dot, coopmat;
};
void vk_get_stats(struct tern_backend *be, struct vk_stats *out);

/* The device's read bandwidth in GB/s (10^9 bytes), measured with a
 * read-only shader over a buffer of up to 1 GiB (a quarter of the budget
 * at most) several times; for tern-bench's roofline. */
int vk_read_bandwidth(struct tern_backend *be, double *gbps, tern_err *err);

#endif
