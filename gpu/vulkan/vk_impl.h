/* vk_impl.h - the Vulkan backend's insides, shared by its files:
 * vk_loader.c (the API through a loader opened at run time), vk_backend.c
 * (device, memory, the command list, transfers, steps, sync) and
 * vk_ops.c (the ops: operand checks, push constants, dispatches).
 *
 * How a step runs. Ops do not record into a VkCommandBuffer directly: they
 * append commands (a dispatch with its bindings and push constants, a
 * copy, a barrier) to a host-side list; sync() records the list into a
 * command buffer, submits it once and waits on one fence. Between
 * begin_step() and end_step() the list is compared with the previous
 * step's (lib/backend.h's replay rule: the same calls every step, only
 * uploaded data changes): when it is the same, the command buffer recorded
 * for that step is submitted again without recording anything. Uploads
 * copy their data into a host-visible staging buffer at once (so the
 * caller's memory is free on return) and append a copy from there;
 * downloads append a copy into staging and are finished by sync(). The
 * staging position restarts at every step, so a replayed step finds its
 * uploads where its recording put them.
 *
 * Barriers are inserted as the list grows: a command that reads or writes
 * a range an earlier command since the last barrier wrote, or writes a
 * range one read, gets a barrier before it; independent dispatches (the Q,
 * K and V products) run without one. */
#ifndef TERN_VK_IMPL_H
#define TERN_VK_IMPL_H

#define VK_NO_PROTOTYPES
#include <vulkan/vulkan.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gpu/vulkan/vk_backend.h"
#include "lib/backend_host.h"

/* ---- the API, loaded at run time (vk_loader.c) ---- */

#define VK_GLOBAL_FNS(X)                                                                                         \
	X(vkCreateInstance) X(vkEnumerateInstanceExtensionProperties) X(vkEnumerateInstanceLayerProperties)      \
	X(vkEnumerateInstanceVersion)
#define VK_INSTANCE_FNS(X)                                                                                       \
	X(vkDestroyInstance) X(vkEnumeratePhysicalDevices) X(vkGetPhysicalDeviceProperties)                      \
	X(vkGetPhysicalDeviceProperties2) X(vkGetPhysicalDeviceFeatures2) X(vkGetPhysicalDeviceMemoryProperties) \
	X(vkGetPhysicalDeviceMemoryProperties2) X(vkGetPhysicalDeviceQueueFamilyProperties)                      \
	X(vkEnumerateDeviceExtensionProperties) X(vkCreateDevice) X(vkGetDeviceProcAddr)                        \
	X(vkGetPhysicalDeviceCooperativeMatrixPropertiesNV)
#define VK_DEBUG_FNS(X) X(vkCreateDebugUtilsMessengerEXT) X(vkDestroyDebugUtilsMessengerEXT)
#define VK_DEVICE_FNS(X)                                                                                         \
	X(vkDestroyDevice) X(vkGetDeviceQueue) X(vkCreateBuffer) X(vkDestroyBuffer)                              \
	X(vkGetBufferMemoryRequirements) X(vkAllocateMemory) X(vkFreeMemory) X(vkBindBufferMemory)               \
	X(vkMapMemory) X(vkUnmapMemory) X(vkCreateShaderModule) X(vkDestroyShaderModule)                         \
	X(vkCreateComputePipelines) X(vkDestroyPipeline) X(vkCreatePipelineLayout) X(vkDestroyPipelineLayout)    \
	X(vkCreateDescriptorSetLayout) X(vkDestroyDescriptorSetLayout) X(vkCreateCommandPool)                    \
	X(vkDestroyCommandPool) X(vkAllocateCommandBuffers) X(vkFreeCommandBuffers) X(vkBeginCommandBuffer)      \
	X(vkEndCommandBuffer) X(vkResetCommandBuffer) X(vkCmdBindPipeline) X(vkCmdPushConstants)                 \
	X(vkCmdPushDescriptorSetKHR) X(vkCmdDispatch) X(vkCmdCopyBuffer) X(vkCmdPipelineBarrier)                 \
	X(vkCmdFillBuffer) X(vkQueueSubmit) X(vkCreateFence) X(vkDestroyFence) X(vkWaitForFences)                \
	X(vkResetFences) X(vkDeviceWaitIdle) X(vkCreateQueryPool) X(vkDestroyQueryPool) X(vkCmdResetQueryPool)     \
	X(vkCmdWriteTimestamp) X(vkGetQueryPoolResults)

#define VK_DECLARE(f) extern PFN_##f p_##f;
VK_GLOBAL_FNS(VK_DECLARE)
VK_INSTANCE_FNS(VK_DECLARE)
VK_DEBUG_FNS(VK_DECLARE)
VK_DEVICE_FNS(VK_DECLARE)
#undef VK_DECLARE

/* Open the loader once (thread-safe); 0, or TERN_EUNSUPPORTED with why. */
int vk_load(tern_err *err);
/* The instance functions of inst (the debug ones may stay NULL). */
void vk_load_instance(VkInstance inst);
/* The device functions of dev; 0 or TERN_EUNSUPPORTED naming the missing one. */
int vk_load_device(VkDevice dev, tern_err *err);
/* "VK_ERROR_DEVICE_LOST" ... for messages */
const char *vk_result_str(VkResult r);

/* ---- shaders (generated from gpu/vulkan/shaders by the Makefile) ---- */

struct vk_spirv {
	const char *name; /* the shader's file name without .comp, plus its variant: "add", "mul_mat_vec_q4_0" */
	const uint32_t *code;
	size_t size; /* bytes */
};
extern const struct vk_spirv vk_spirv_table[];
extern const size_t vk_spirv_count;

/* ---- the backend ---- */

/* Storage of one buffer (tern_buf.mem). */
struct vk_mem {
	VkBuffer buf;
	VkDeviceMemory mem;
	VkDeviceSize size;
	uint8_t *map; /* host address where the memory is host-visible and coherent, else NULL */
};

/* Most storage buffers one shader binds, and the push constants' size
 * (the 128 bytes every device gives). */
#define VK_MAX_BINDINGS 8
#define VK_PC_MAX 128

/* One binding of a dispatch: bytes [off, off + size) of a buffer. */
struct vk_range {
	VkBuffer buf;
	VkDeviceSize off, size;
};

enum { VK_CMD_DISPATCH, VK_CMD_COPY, VK_CMD_BARRIER, VK_CMD_FILL };

struct vk_cmd {
	uint32_t kind;   /* VK_CMD_* */
	uint32_t pipe;   /* dispatch: index into vk.pipes */
	uint32_t nbind;
	uint32_t pc_size;
	uint32_t groups[3];
	struct vk_range bind[VK_MAX_BINDINGS]; /* dispatch; copy: [0] src, [1] dst (size of bytes) */
	uint32_t fill;                          /* fill: the 32-bit word */
	uint8_t pc[VK_PC_MAX];
};

/* A download finished by sync(): staging bytes to host memory. */
struct vk_pending_read {
	void *dst;
	VkDeviceSize stage_off;
	size_t n;
};

struct vk_pipe {
	const char *name;  /* shader name (vk_spirv_table) */
	uint32_t wg;       /* local_size_x (specialization constant 0) */
	uint32_t spec[4];  /* specialization constants 1..4 */
	VkPipeline pipeline;
	bool failed;
};

#define VK_MAX_PIPES 256
#define VK_PROF_MAX 4095

struct vk {
	struct tern_host host; /* the deferred error and the operand checks (lib/cpu/host.h) */
	struct tern_backend be;
	struct tern_device_info info;

	VkInstance inst;
	VkDebugUtilsMessengerEXT messenger;
	VkPhysicalDevice phys;
	VkDevice dev;
	VkQueue queue;
	uint32_t queue_family;
	VkPhysicalDeviceMemoryProperties memprops;
	uint32_t mt_device; /* memory type of buffers */
	uint32_t mt_host;   /* memory type of staging: host-visible, coherent (cached where possible) */
	VkDeviceSize max_binding, align; /* maxStorageBufferRange, minStorageBufferOffsetAlignment */
	uint32_t max_groups[3];          /* maxComputeWorkGroupCount */
	uint32_t shared_mem;             /* maxComputeSharedMemorySize */
	bool subgroup_ops;               /* subgroup arithmetic in compute: the shaders' fast reductions */
	bool int_dot;                    /* the one-token mat-vec's integer dot product (vk_products.c) */
	bool fp16;
	bool coop;                       /* the GEMM on cooperative matrices (mul_mm_cm.comp) */

	VkDescriptorSetLayout dsl;
	VkPipelineLayout layout;
	struct vk_pipe pipes[VK_MAX_PIPES];
	uint32_t n_pipes;

	VkCommandPool pool;
	VkCommandBuffer cb;      /* what sync() records outside steps */
	VkCommandBuffer step_cb; /* the recorded step, replayed while the list is the same */
	bool step_valid;         /* step_cb holds step_cmds */
	VkFence fence;

	struct vk_mem stage;     /* host-visible staging */
	VkDeviceSize stage_used;
	struct vk_mem attn_part; /* attention's partials of a split context (vk_ops.c) */
	struct vk_mem status;    /* 16 bytes the shaders flag bad values in (ids, positions) */
	uint32_t status_host[4];

	/* the list being built */
	struct vk_cmd *cmds;
	size_t n_cmds, cap_cmds;
	struct vk_pending_read *reads;
	size_t n_reads, cap_reads;
	/* the previous step's list, for the comparison */
	struct vk_cmd *step_cmds;
	size_t n_step_cmds, cap_step_cmds;
	bool in_step;

	/* hazards since the last barrier */
	struct vk_range *written, *read;
	size_t n_written, n_read, cap_hazard;

	/* the validation layer's first error message (opts.validation) */
	char validation_msg[TERN_ERR_MSG_MAX];
	int validation_errors;

	void *prod; /* vk_products.c's state (the activations' scratch) */

	uint64_t n_submits, n_replays, n_recorded, step_dispatches; /* statistics (vk_get_stats) */

	/* opts.profile: a timestamp after each of the first VK_PROF_MAX
	 * dispatches of a submit (and one before the first); the time between
	 * two is charged to the later dispatch's pipeline */
	VkQueryPool prof_pool;
	double ts_ns;          /* nanoseconds per timestamp tick */
	uint64_t ts_mask;      /* the queue's valid timestamp bits */
	double prof_ns[VK_MAX_PIPES];
	uint64_t prof_calls[VK_MAX_PIPES];
	bool lost;                     /* a fatal device error: every later op is skipped */
	bool idled;                    /* after lost: the device waited idle once before freeing */
};

static inline struct vk *vk_of(struct tern_backend *be) { return (struct vk *)be->impl; }

/* Record a device or driver failure for the next sync. */
void vk_fail(struct vk *v, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The binding of a buffer view: from its first byte, aligned down to the
 * device's offset alignment, to its last (rounded up to 4 bytes); *elem
 * (when non-NULL) gets the skipped bytes divided by unit, which the shader
 * adds to its indices. False (and the violation recorded) when the view
 * does not fit one binding. */
bool vk_range_of(struct vk *v, const struct tern_buf *b, uint32_t unit, struct vk_range *r, uint32_t *elem);
/* The same for a byte range of the buffer's storage */
bool vk_range_bytes(struct vk *v, const struct tern_buf *b, size_t start, size_t n, uint32_t unit,
		    struct vk_range *r, uint32_t *elem);

/* Pipeline id of a shader with a workgroup size and specialization
 * constants (created on first use; UINT32_MAX and the error recorded when
 * the shader is missing or fails to build). */
uint32_t vk_pipe(struct vk *v, const char *name, uint32_t wg, const uint32_t spec[4]);

/* Append a dispatch. write: bit i set when binding i is written. */
void vk_dispatch(struct vk *v, uint32_t pipe, uint32_t nbind, const struct vk_range *bind, uint32_t write,
		 const void *pc, uint32_t pc_size, uint32_t gx, uint32_t gy, uint32_t gz);
/* Append a fill of n bytes (a multiple of 4) with a 32-bit word. */
void vk_fill(struct vk *v, VkBuffer buf, VkDeviceSize off, VkDeviceSize n, uint32_t word);
/* Append a copy of n bytes between two ranges of device buffers. */
void vk_copy_bytes(struct vk *v, VkBuffer src, VkDeviceSize soff, VkBuffer dst, VkDeviceSize doff, VkDeviceSize n);

/* Device memory (host: the staging kind, mapped); released by vk_mem_free. */
int vk_mem_new(struct vk *v, struct vk_mem *m, VkDeviceSize size, bool host, tern_err *err);
void vk_mem_free(struct vk *v, struct vk_mem *m);
/* Submit what is listed and wait (outside the replay of a step). */
void vk_flush_pending(struct vk *v);
/* A grid of (x, y) workgroups, x up to 32768 and the rest in y: `groups`
 * of them (one per row, ...), or enough of wg invocations to cover n
 * (shaders index with common.glsl's flat_id()). */
void vk_groups(uint64_t groups, uint32_t *gx, uint32_t *gy);
void vk_grid(uint64_t n, uint32_t wg, uint32_t *gx, uint32_t *gy);
/* copy from a type the copy shader does not convert (vk_products.c:
 * through the weight decoders) */
void vk_copy_dequant(struct vk *v, const struct tern_buf *src, struct tern_buf *dst);

/* The ops' entries in the table (vk_ops.c). */
void vk_ops_table(struct tern_backend *be);
/* mat_prepare: check the weight and create its product pipelines */
int vk_mat_prepare(struct tern_backend *be, struct tern_buf *w, tern_err *err);
/* The products' entries in the table and their state (vk_products.c),
 * released by vk_products_free before the device goes. */
void vk_products_table(struct tern_backend *be);
void vk_products_free(struct vk *v);
/* With v->coop: the cooperative-matrix GEMM checked against the shader
 * GEMM on a small product; on disagreement (a driver's or this shader's
 * fault) v->coop is cleared and one line says so on stderr. */
void vk_coopmat_check(struct vk *v);

#endif
