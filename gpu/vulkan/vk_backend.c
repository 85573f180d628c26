/* vk_backend.c - the Vulkan backend's device, memory and command stream
 * (how a step runs: gpu/vulkan/vk_impl.h). The ops are in vk_ops.c. */
#include <inttypes.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu/vulkan/vk_impl.h"
#include "lib/core/quote.h"
#include "quant/quant.h"

/* staging: enough for a step's uploads and a large vocabulary's logits;
 * larger transfers go through it in pieces */
#define VK_STAGE_BYTES ((VkDeviceSize)64 << 20)

void vk_fail(struct vk *v, const char *fmt, ...)
{
	struct tern_host *h = &v->host;
	int expected = 0;
	if (!atomic_compare_exchange_strong(&h->claimed, &expected, 1))
		return;
	va_list ap;
	va_start(ap, fmt);
	h->pending.code = TERN_EIO;
	int n = snprintf(h->pending.msg, sizeof h->pending.msg, "%s: ", v->be.name);
	vsnprintf(h->pending.msg + n, sizeof h->pending.msg - (size_t)n, fmt, ap);
	va_end(ap);
}

/* ---- instance and devices ---- */

static VKAPI_ATTR VkBool32 VKAPI_CALL on_validation(VkDebugUtilsMessageSeverityFlagBitsEXT sev,
						      VkDebugUtilsMessageTypeFlagsEXT type,
						      const VkDebugUtilsMessengerCallbackDataEXT *data, void *user)
{
	(void)type;
	struct vk *v = user;
	if (!(sev & (VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT)))
		return VK_FALSE;
	if (!v->validation_errors++)
		snprintf(v->validation_msg, sizeof v->validation_msg, "validation: %s",
			 data && data->pMessage ? data->pMessage : "(no message)");
	return VK_FALSE;
}

static bool has_layer(const char *name)
{
	uint32_t n = 0;
	if (p_vkEnumerateInstanceLayerProperties(&n, NULL) != VK_SUCCESS || !n)
		return false;
	VkLayerProperties *l = calloc(n, sizeof *l);
	bool found = false;
	if (l && p_vkEnumerateInstanceLayerProperties(&n, l) == VK_SUCCESS)
		for (uint32_t i = 0; i < n && !found; i++)
			found = !strcmp(l[i].layerName, name);
	free(l);
	return found;
}

static bool has_instance_ext(const char *name)
{
	uint32_t n = 0;
	if (p_vkEnumerateInstanceExtensionProperties(NULL, &n, NULL) != VK_SUCCESS || !n)
		return false;
	VkExtensionProperties *e = calloc(n, sizeof *e);
	bool found = false;
	if (e && p_vkEnumerateInstanceExtensionProperties(NULL, &n, e) == VK_SUCCESS)
		for (uint32_t i = 0; i < n && !found; i++)
			found = !strcmp(e[i].extensionName, name);
	free(e);
	return found;
}

static bool has_device_ext(VkPhysicalDevice pd, const char *name)
{
	uint32_t n = 0;
	if (p_vkEnumerateDeviceExtensionProperties(pd, NULL, &n, NULL) != VK_SUCCESS || !n)
		return false;
	VkExtensionProperties *e = calloc(n, sizeof *e);
	bool found = false;
	if (e && p_vkEnumerateDeviceExtensionProperties(pd, NULL, &n, e) == VK_SUCCESS)
		for (uint32_t i = 0; i < n && !found; i++)
			found = !strcmp(e[i].extensionName, name);
	free(e);
	return found;
}

/* An instance (with the validation layer and a messenger into v when v is
 * given and asks for it). */
static int make_instance(VkInstance *out, struct vk *v, bool validation, tern_err *err)
{
	int rc = vk_load(err);
	if (rc)
		return rc;
	uint32_t api = VK_API_VERSION_1_0;
	if (p_vkEnumerateInstanceVersion)
		p_vkEnumerateInstanceVersion(&api);
	if (api < VK_API_VERSION_1_2)
		return tern_errf(err, TERN_EUNSUPPORTED, "vulkan: the loader offers Vulkan %u.%u, 1.2 needed",
				 VK_API_VERSION_MAJOR(api), VK_API_VERSION_MINOR(api));
	const char *layers[1], *exts[2];
	uint32_t n_layers = 0, n_exts = 0;
	if (validation) {
		if (!has_layer("VK_LAYER_KHRONOS_validation"))
			return tern_errf(err, TERN_EUNSUPPORTED,
					 "vulkan: the validation layer (VK_LAYER_KHRONOS_validation) is not installed");
		layers[n_layers++] = "VK_LAYER_KHRONOS_validation";
		if (has_instance_ext(VK_EXT_DEBUG_UTILS_EXTENSION_NAME))
			exts[n_exts++] = VK_EXT_DEBUG_UTILS_EXTENSION_NAME;
	}
	const VkApplicationInfo app = {
		.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO,
		.pApplicationName = "tern",
		.pEngineName = "tern",
		.apiVersion = VK_API_VERSION_1_2,
	};
	const VkInstanceCreateInfo ci = {
		.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO,
		.pApplicationInfo = &app,
		.enabledLayerCount = n_layers,
		.ppEnabledLayerNames = layers,
		.enabledExtensionCount = n_exts,
		.ppEnabledExtensionNames = exts,
	};
	VkResult r = p_vkCreateInstance(&ci, NULL, out);
	if (r != VK_SUCCESS)
		return tern_errf(err, TERN_EUNSUPPORTED, "vulkan: vkCreateInstance: %s", vk_result_str(r));
	vk_load_instance(*out);
	if (v && n_exts && p_vkCreateDebugUtilsMessengerEXT) {
		const VkDebugUtilsMessengerCreateInfoEXT mi = {
			.sType = VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT,
			.messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT |
					   VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT,
			.messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT |
				       VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
				       VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT,
			.pfnUserCallback = on_validation,
			.pUserData = v,
		};
		p_vkCreateDebugUtilsMessengerEXT(*out, &mi, NULL, &v->messenger);
	}
	return 0;
}

/* Devices with a compute queue, in the loader's order. */
static int list_devices(VkInstance inst, VkPhysicalDevice *pd, uint32_t max, uint32_t *n, tern_err *err)
{
	uint32_t total = 0;
	VkResult r = p_vkEnumeratePhysicalDevices(inst, &total, NULL);
	if (r != VK_SUCCESS)
		return tern_errf(err, TERN_EUNSUPPORTED, "vulkan: vkEnumeratePhysicalDevices: %s", vk_result_str(r));
	VkPhysicalDevice all[16];
	if (total > 16)
		total = 16;
	r = p_vkEnumeratePhysicalDevices(inst, &total, all);
	if (r != VK_SUCCESS && r != VK_INCOMPLETE)
		return tern_errf(err, TERN_EUNSUPPORTED, "vulkan: vkEnumeratePhysicalDevices: %s", vk_result_str(r));
	*n = 0;
	for (uint32_t i = 0; i < total && *n < max; i++) {
		uint32_t nq = 0;
		p_vkGetPhysicalDeviceQueueFamilyProperties(all[i], &nq, NULL);
		VkQueueFamilyProperties q[16];
		if (nq > 16)
			nq = 16;
		p_vkGetPhysicalDeviceQueueFamilyProperties(all[i], &nq, q);
		for (uint32_t j = 0; j < nq; j++)
			if (q[j].queueFlags & VK_QUEUE_COMPUTE_BIT) {
				pd[(*n)++] = all[i];
				break;
			}
	}
	return 0;
}

/* pd's queue families into q[16]; their count */
static uint32_t queue_families(VkPhysicalDevice pd, VkQueueFamilyProperties q[16])
{
	uint32_t nq = 0;
	p_vkGetPhysicalDeviceQueueFamilyProperties(pd, &nq, NULL);
	if (nq > 16)
		nq = 16;
	p_vkGetPhysicalDeviceQueueFamilyProperties(pd, &nq, q);
	return nq;
}

static uint32_t compute_family(VkPhysicalDevice pd)
{
	VkQueueFamilyProperties q[16];
	uint32_t nq = queue_families(pd, q);
	/* a compute-only family first (a discrete GPU's async compute), else any */
	for (uint32_t j = 0; j < nq; j++)
		if ((q[j].queueFlags & VK_QUEUE_COMPUTE_BIT) && !(q[j].queueFlags & VK_QUEUE_GRAPHICS_BIT))
			return j;
	for (uint32_t j = 0; j < nq; j++)
		if (q[j].queueFlags & VK_QUEUE_COMPUTE_BIT)
			return j;
	return 0;
}

struct dev_facts {
	VkPhysicalDeviceProperties2 p;
	VkPhysicalDeviceSubgroupProperties sg;
	VkPhysicalDeviceMaintenance3Properties m3;
	VkPhysicalDeviceDriverProperties drv;
	VkPhysicalDeviceShaderIntegerDotProductProperties dot;
	VkPhysicalDeviceFeatures2 f;
	VkPhysicalDeviceVulkan11Features f11;
	VkPhysicalDeviceVulkan12Features f12;
	VkPhysicalDeviceShaderIntegerDotProductFeatures fdot;
	VkPhysicalDeviceCooperativeMatrixFeaturesNV cm_nv;
	bool has_dot, has_budget, has_push, has_coop, has_coop_nv;
};

static void device_facts(VkPhysicalDevice pd, struct dev_facts *d)
{
	memset(d, 0, sizeof *d);
	d->has_dot = has_device_ext(pd, VK_KHR_SHADER_INTEGER_DOT_PRODUCT_EXTENSION_NAME);
	d->has_budget = has_device_ext(pd, VK_EXT_MEMORY_BUDGET_EXTENSION_NAME);
	d->has_push = has_device_ext(pd, VK_KHR_PUSH_DESCRIPTOR_EXTENSION_NAME);
	d->has_coop = has_device_ext(pd, "VK_KHR_cooperative_matrix");
	d->has_coop_nv = has_device_ext(pd, VK_NV_COOPERATIVE_MATRIX_EXTENSION_NAME);
	d->dot.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_INTEGER_DOT_PRODUCT_PROPERTIES;
	d->drv.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES;
	d->drv.pNext = d->has_dot ? &d->dot : NULL;
	d->m3.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_3_PROPERTIES;
	d->m3.pNext = &d->drv;
	d->sg.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES;
	d->sg.pNext = &d->m3;
	d->p.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2;
	d->p.pNext = &d->sg;
	p_vkGetPhysicalDeviceProperties2(pd, &d->p);
	/* the features: 1.1, 1.2, then each extension's that is present */
	d->cm_nv.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_NV;
	d->fdot.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_INTEGER_DOT_PRODUCT_FEATURES;
	d->fdot.pNext = d->has_coop_nv ? &d->cm_nv : NULL;
	d->f12.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES;
	d->f12.pNext = d->has_dot ? (void *)&d->fdot : d->has_coop_nv ? (void *)&d->cm_nv : NULL;
	d->f11.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES;
	d->f11.pNext = &d->f12;
	d->f.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2;
	d->f.pNext = &d->f11;
	p_vkGetPhysicalDeviceFeatures2(pd, &d->f);
}

static void fill_info(VkPhysicalDevice pd, int index, const struct dev_facts *d, struct tern_device_info *o)
{
	memset(o, 0, sizeof *o);
	const VkPhysicalDeviceProperties *p = &d->p.properties;
	snprintf(o->name, sizeof o->name, "vulkan%d", index);
	snprintf(o->desc, sizeof o->desc, "%s", p->deviceName);
	if (d->drv.driverName[0])
		snprintf(o->driver, sizeof o->driver, "%.60s %.60s", d->drv.driverName, d->drv.driverInfo);
	else
		snprintf(o->driver, sizeof o->driver, "driver %u", p->driverVersion);
	snprintf(o->api, sizeof o->api, "Vulkan %u.%u.%u", VK_API_VERSION_MAJOR(p->apiVersion),
		 VK_API_VERSION_MINOR(p->apiVersion), VK_API_VERSION_PATCH(p->apiVersion));
	VkPhysicalDeviceMemoryBudgetPropertiesEXT bud = {.sType =
								 VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MEMORY_BUDGET_PROPERTIES_EXT};
	VkPhysicalDeviceMemoryProperties2 mp = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MEMORY_PROPERTIES_2,
						.pNext = d->has_budget ? &bud : NULL};
	p_vkGetPhysicalDeviceMemoryProperties2(pd, &mp);
	uint32_t best = 0;
	for (uint32_t h = 0; h < mp.memoryProperties.memoryHeapCount; h++) {
		const VkMemoryHeap *hp = &mp.memoryProperties.memoryHeaps[h];
		if ((hp->flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT) && hp->size > o->mem_total) {
			o->mem_total = hp->size;
			best = h;
		}
	}
	o->mem_budget = o->mem_total;
	if (d->has_budget && bud.heapBudget[best])
		o->mem_budget = bud.heapBudget[best] > bud.heapUsage[best] ? bud.heapBudget[best] - bud.heapUsage[best] : 0;
	o->max_alloc = d->m3.maxMemoryAllocationSize;
	o->max_binding = p->limits.maxStorageBufferRange;
	o->fp16 = d->f12.shaderFloat16;
	o->int_dot = d->has_dot && d->dot.integerDotProduct4x8BitPackedSignedAccelerated;
	o->coopmat = d->has_coop || (d->has_coop_nv && d->cm_nv.cooperativeMatrix);
	o->uma = p->deviceType == VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU || p->deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU;
	o->software = p->deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU;
	o->subgroup = (int)d->sg.subgroupSize;
}

int vk_device_count(tern_err *err)
{
	VkInstance inst;
	if (make_instance(&inst, NULL, false, err))
		return 0;
	VkPhysicalDevice pd[16];
	uint32_t n = 0;
	list_devices(inst, pd, 16, &n, err);
	if (!n && err && !err->code)
		tern_errf(err, TERN_ENOTFOUND, "vulkan: no device with a compute queue");
	p_vkDestroyInstance(inst, NULL);
	return (int)n;
}

int vk_device_info(int i, struct tern_device_info *out, tern_err *err)
{
	VkInstance inst;
	int rc = make_instance(&inst, NULL, false, err);
	if (rc)
		return rc;
	VkPhysicalDevice pd[16];
	uint32_t n = 0;
	rc = list_devices(inst, pd, 16, &n, err);
	if (!rc && (i < 0 || (uint32_t)i >= n))
		rc = tern_errf(err, TERN_ENOTFOUND, "vulkan%d: no such device (%u found)", i, n);
	if (!rc) {
		struct dev_facts d;
		device_facts(pd[i], &d);
		fill_info(pd[i], i, &d, out);
	}
	p_vkDestroyInstance(inst, NULL);
	return rc;
}

/* ---- memory ---- */

static int find_type(const VkPhysicalDeviceMemoryProperties *mp, uint32_t bits, VkMemoryPropertyFlags want,
		     VkMemoryPropertyFlags avoid)
{
	for (uint32_t i = 0; i < mp->memoryTypeCount; i++)
		if ((bits & (1u << i)) && (mp->memoryTypes[i].propertyFlags & want) == want &&
		    !(mp->memoryTypes[i].propertyFlags & avoid))
			return (int)i;
	return -1;
}

/* A buffer of size bytes in memory of type class host (staging) or device. */
int vk_mem_new(struct vk *v, struct vk_mem *m, VkDeviceSize size, bool host, tern_err *err)
{
	memset(m, 0, sizeof *m);
	size = (size + 15) & ~(VkDeviceSize)15;
	if (size > v->info.max_alloc)
		return tern_errf(err, TERN_ENOMEM, "%s: %" PRIu64 " bytes exceed the device's largest allocation (%" PRIu64 ")",
				 v->be.name, (uint64_t)size, v->info.max_alloc);
	const VkBufferCreateInfo bi = {
		.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
		.size = size,
		.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
			 VK_BUFFER_USAGE_TRANSFER_DST_BIT,
		.sharingMode = VK_SHARING_MODE_EXCLUSIVE,
	};
	VkResult r = p_vkCreateBuffer(v->dev, &bi, NULL, &m->buf);
	if (r != VK_SUCCESS)
		return tern_errf(err, r == VK_ERROR_OUT_OF_DEVICE_MEMORY ? TERN_ENOMEM : TERN_EIO,
				 "%s: vkCreateBuffer of %" PRIu64 " bytes: %s", v->be.name, (uint64_t)size, vk_result_str(r));
	VkMemoryRequirements req;
	p_vkGetBufferMemoryRequirements(v->dev, m->buf, &req);
	uint32_t t = host ? v->mt_host : v->mt_device;
	if (!(req.memoryTypeBits & (1u << t))) {
		int alt = find_type(&v->memprops, req.memoryTypeBits,
				    host ? VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT
					 : VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT, 0);
		if (alt < 0) {
			p_vkDestroyBuffer(v->dev, m->buf, NULL);
			return tern_errf(err, TERN_EUNSUPPORTED, "%s: no memory type for a storage buffer", v->be.name);
		}
		t = (uint32_t)alt;
	}
	const VkMemoryAllocateInfo ai = {
		.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
		.allocationSize = req.size,
		.memoryTypeIndex = t,
	};
	r = p_vkAllocateMemory(v->dev, &ai, NULL, &m->mem);
	if (r != VK_SUCCESS) {
		p_vkDestroyBuffer(v->dev, m->buf, NULL);
		m->buf = VK_NULL_HANDLE;
		return tern_errf(err, r == VK_ERROR_OUT_OF_DEVICE_MEMORY || r == VK_ERROR_OUT_OF_HOST_MEMORY ? TERN_ENOMEM : TERN_EIO,
				 "%s: out of device memory for %" PRIu64 " bytes (%s)", v->be.name, (uint64_t)size,
				 vk_result_str(r));
	}
	p_vkBindBufferMemory(v->dev, m->buf, m->mem, 0);
	m->size = size;
	VkMemoryPropertyFlags fl = v->memprops.memoryTypes[t].propertyFlags;
	if ((fl & VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT) && (fl & VK_MEMORY_PROPERTY_HOST_COHERENT_BIT)) {
		void *p = NULL;
		if (p_vkMapMemory(v->dev, m->mem, 0, VK_WHOLE_SIZE, 0, &p) == VK_SUCCESS)
			m->map = p;
	}
	if (host && !m->map) {
		p_vkDestroyBuffer(v->dev, m->buf, NULL);
		p_vkFreeMemory(v->dev, m->mem, NULL);
		memset(m, 0, sizeof *m);
		return tern_errf(err, TERN_EIO, "%s: cannot map the staging memory", v->be.name);
	}
	return 0;
}

void vk_mem_free(struct vk *v, struct vk_mem *m)
{
	if (m->map)
		p_vkUnmapMemory(v->dev, m->mem);
	if (m->buf)
		p_vkDestroyBuffer(v->dev, m->buf, NULL);
	if (m->mem)
		p_vkFreeMemory(v->dev, m->mem, NULL);
	memset(m, 0, sizeof *m);
}

/* ---- the command list ---- */

static bool overlap(const struct vk_range *a, const struct vk_range *b)
{
	return a->buf == b->buf && a->off < b->off + b->size && b->off < a->off + a->size;
}

static bool hits(const struct vk_range *set, size_t n, const struct vk_range *r)
{
	for (size_t i = 0; i < n; i++)
		if (overlap(&set[i], r))
			return true;
	return false;
}

static struct vk_cmd *push_cmd(struct vk *v)
{
	if (v->n_cmds == v->cap_cmds) {
		size_t cap = v->cap_cmds ? v->cap_cmds * 2 : 256;
		struct vk_cmd *c = realloc(v->cmds, cap * sizeof *c);
		if (!c) {
			vk_fail(v, "out of host memory for the command list");
			return NULL;
		}
		v->cmds = c;
		v->cap_cmds = cap;
	}
	struct vk_cmd *c = &v->cmds[v->n_cmds++];
	memset(c, 0, sizeof *c);
	return c;
}

static bool add_hazard(struct vk *v, bool write, const struct vk_range *r)
{
	if (v->n_written + v->n_read >= v->cap_hazard) {
		size_t cap = v->cap_hazard ? v->cap_hazard * 2 : 64;
		struct vk_range *w = realloc(v->written, cap * sizeof *w);
		if (w)
			v->written = w;
		struct vk_range *rd = realloc(v->read, cap * sizeof *rd);
		if (rd)
			v->read = rd;
		if (!w || !rd) {
			vk_fail(v, "out of host memory for the command list");
			return false;
		}
		v->cap_hazard = cap;
	}
	if (write)
		v->written[v->n_written++] = *r;
	else
		v->read[v->n_read++] = *r;
	return true;
}

/* A barrier before a command touching these ranges when it must wait for an
 * earlier one; then its ranges join the hazard sets. */
static void order(struct vk *v, uint32_t n, const struct vk_range *r, uint32_t write)
{
	bool need = false;
	for (uint32_t i = 0; i < n && !need; i++)
		need = hits(v->written, v->n_written, &r[i]) ||
		       ((write >> i & 1) && hits(v->read, v->n_read, &r[i]));
	if (need) {
		struct vk_cmd *c = push_cmd(v);
		if (c)
			c->kind = VK_CMD_BARRIER;
		v->n_written = v->n_read = 0;
	}
	for (uint32_t i = 0; i < n; i++)
		add_hazard(v, write >> i & 1, &r[i]);
}

void vk_dispatch(struct vk *v, uint32_t pipe, uint32_t nbind, const struct vk_range *bind, uint32_t write,
		 const void *pc, uint32_t pc_size, uint32_t gx, uint32_t gy, uint32_t gz)
{
	if (v->lost || pipe >= v->n_pipes || nbind > VK_MAX_BINDINGS || pc_size > VK_PC_MAX)
		return;
	if (!gx || !gy || !gz)
		return;
	if (gx > v->max_groups[0] || gy > v->max_groups[1] || gz > v->max_groups[2]) {
		vk_fail(v, "%s: %u x %u x %u workgroups exceed the device's limit", v->pipes[pipe].name, gx, gy, gz);
		return;
	}
	order(v, nbind, bind, write);
	struct vk_cmd *c = push_cmd(v);
	if (!c)
		return;
	c->kind = VK_CMD_DISPATCH;
	c->pipe = pipe;
	c->nbind = nbind;
	memcpy(c->bind, bind, nbind * sizeof *bind);
	c->pc_size = pc_size;
	if (pc_size)
		memcpy(c->pc, pc, pc_size);
	c->groups[0] = gx;
	c->groups[1] = gy;
	c->groups[2] = gz;
}

void vk_copy_bytes(struct vk *v, VkBuffer src, VkDeviceSize soff, VkBuffer dst, VkDeviceSize doff, VkDeviceSize n)
{
	if (v->lost || !n)
		return;
	struct vk_range r[2] = {{src, soff, n}, {dst, doff, n}};
	order(v, 2, r, 2);
	struct vk_cmd *c = push_cmd(v);
	if (!c)
		return;
	c->kind = VK_CMD_COPY;
	c->bind[0] = r[0];
	c->bind[1] = r[1];
}

void vk_fill(struct vk *v, VkBuffer buf, VkDeviceSize off, VkDeviceSize n, uint32_t word)
{
	if (v->lost || !n)
		return;
	struct vk_range r = {buf, off, n};
	order(v, 1, &r, 1);
	struct vk_cmd *c = push_cmd(v);
	if (!c)
		return;
	c->kind = VK_CMD_FILL;
	c->bind[0] = r;
	c->fill = word;
}

static void record(struct vk *v, VkCommandBuffer cb)
{
	const VkCommandBufferBeginInfo bi = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
	p_vkResetCommandBuffer(cb, 0);
	p_vkBeginCommandBuffer(cb, &bi);
	const VkMemoryBarrier all = {
		.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
		.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT,
		.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_READ_BIT |
				 VK_ACCESS_TRANSFER_WRITE_BIT,
	};
	const VkPipelineStageFlags stages = VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT;
	uint32_t bound = UINT32_MAX, nts = 0;
	if (v->prof_pool) {
		p_vkCmdResetQueryPool(cb, v->prof_pool, 0, VK_PROF_MAX + 1);
		p_vkCmdWriteTimestamp(cb, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, v->prof_pool, nts++);
	}
	for (size_t i = 0; i < v->n_cmds; i++) {
		const struct vk_cmd *c = &v->cmds[i];
		switch (c->kind) {
		case VK_CMD_BARRIER:
			p_vkCmdPipelineBarrier(cb, stages, stages, 0, 1, &all, 0, NULL, 0, NULL);
			break;
		case VK_CMD_COPY: {
			const VkBufferCopy region = {c->bind[0].off, c->bind[1].off, c->bind[0].size};
			p_vkCmdCopyBuffer(cb, c->bind[0].buf, c->bind[1].buf, 1, &region);
			break;
		}
		case VK_CMD_FILL:
			p_vkCmdFillBuffer(cb, c->bind[0].buf, c->bind[0].off, c->bind[0].size, c->fill);
			break;
		case VK_CMD_DISPATCH: {
			if (bound != c->pipe) {
				p_vkCmdBindPipeline(cb, VK_PIPELINE_BIND_POINT_COMPUTE, v->pipes[c->pipe].pipeline);
				bound = c->pipe;
			}
			VkDescriptorBufferInfo bufs[VK_MAX_BINDINGS + 1];
			VkWriteDescriptorSet wr[VK_MAX_BINDINGS + 1];
			uint32_t n = 0;
			for (uint32_t b = 0; b < c->nbind; b++, n++) {
				bufs[n] = (VkDescriptorBufferInfo){c->bind[b].buf, c->bind[b].off, c->bind[b].size};
				wr[n] = (VkWriteDescriptorSet){
					.sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET,
					.dstBinding = b,
					.descriptorCount = 1,
					.descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
					.pBufferInfo = &bufs[n],
				};
			}
			/* the status word every shader may flag a bad value in */
			bufs[n] = (VkDescriptorBufferInfo){v->status.buf, 0, 16};
			wr[n] = (VkWriteDescriptorSet){
				.sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET,
				.dstBinding = VK_MAX_BINDINGS,
				.descriptorCount = 1,
				.descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
				.pBufferInfo = &bufs[n],
			};
			n++;
			p_vkCmdPushDescriptorSetKHR(cb, VK_PIPELINE_BIND_POINT_COMPUTE, v->layout, 0, n, wr);
			if (c->pc_size)
				p_vkCmdPushConstants(cb, v->layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, c->pc_size, c->pc);
			p_vkCmdDispatch(cb, c->groups[0], c->groups[1], c->groups[2]);
			if (v->prof_pool && nts <= VK_PROF_MAX)
				p_vkCmdWriteTimestamp(cb, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, v->prof_pool, nts++);
			break;
		}
		}
	}
	/* results visible to the host once the fence signals */
	const VkMemoryBarrier to_host = {
		.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
		.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT,
		.dstAccessMask = VK_ACCESS_HOST_READ_BIT,
	};
	p_vkCmdPipelineBarrier(cb, stages, VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &to_host, 0, NULL, 0, NULL);
	p_vkEndCommandBuffer(cb);
}

/* opts.profile: the timestamps of the submit just finished, charged to
 * the dispatches of the list it ran (the same as v->cmds when replayed) */
static void profile_charge(struct vk *v)
{
	uint64_t ts[VK_PROF_MAX + 1];
	uint32_t n = 1;
	for (size_t i = 0; i < v->n_cmds && n <= VK_PROF_MAX; i++)
		n += v->cmds[i].kind == VK_CMD_DISPATCH;
	if (p_vkGetQueryPoolResults(v->dev, v->prof_pool, 0, n, sizeof ts, ts, sizeof ts[0],
				    VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT) != VK_SUCCESS)
		return;
	uint32_t k = 1;
	for (size_t i = 0; i < v->n_cmds && k < n; i++) {
		if (v->cmds[i].kind != VK_CMD_DISPATCH)
			continue;
		uint64_t d = (ts[k] - ts[k - 1]) & v->ts_mask;
		v->prof_ns[v->cmds[i].pipe] += (double)d * v->ts_ns;
		v->prof_calls[v->cmds[i].pipe]++;
		k++;
	}
}

/* The time per pipeline, largest first, on stderr. */
static void profile_print(struct vk *v)
{
	double total = 0;
	uint32_t idx[VK_MAX_PIPES], n = 0;
	for (uint32_t i = 0; i < v->n_pipes; i++)
		if (v->prof_calls[i]) {
			idx[n++] = i;
			total += v->prof_ns[i];
		}
	for (uint32_t i = 1; i < n; i++) /* insertion sort by time, descending */
		for (uint32_t j = i; j > 0 && v->prof_ns[idx[j]] > v->prof_ns[idx[j - 1]]; j--) {
			uint32_t t = idx[j];
			idx[j] = idx[j - 1];
			idx[j - 1] = t;
		}
	fprintf(stderr, "%s profile: %.1f ms in dispatches\n", v->info.name, total / 1e6);
	for (uint32_t i = 0; i < n; i++) {
		const struct vk_pipe *p = &v->pipes[idx[i]];
		fprintf(stderr, "  %-28s spec %u,%u  %8llu calls %10.2f ms %5.1f%% %10.1f us/call\n", p->name, p->spec[0],
			p->spec[1], (unsigned long long)v->prof_calls[idx[i]], v->prof_ns[idx[i]] / 1e6,
			total > 0 ? 100 * v->prof_ns[idx[i]] / total : 0.0,
			v->prof_ns[idx[i]] / 1e3 / (double)v->prof_calls[idx[i]]);
	}
}

static bool same_list(const struct vk *v)
{
	return v->step_valid && v->n_step_cmds == v->n_cmds && !memcmp(v->step_cmds, v->cmds, v->n_cmds * sizeof *v->cmds);
}

/* Submit the list (a step's: replayed when the same as the last), wait,
 * finish the downloads, reset the list and the staging. */
static void flush(struct vk *v, bool step)
{
	if (v->lost) { /* the device failed: nothing more is submitted, the list dropped */
		v->n_cmds = v->n_reads = 0;
		v->n_written = v->n_read = 0;
		v->stage_used = 0;
		return;
	}
	if (!v->n_cmds && !v->n_reads) {
		v->stage_used = 0;
		return;
	}
	VkCommandBuffer cb = v->cb;
	if (step) {
		v->step_dispatches = 0;
		for (size_t i = 0; i < v->n_cmds; i++)
			v->step_dispatches += v->cmds[i].kind == VK_CMD_DISPATCH;
		cb = v->step_cb;
		if (same_list(v)) {
			v->n_replays++;
		} else {
			if (v->cap_step_cmds < v->n_cmds) {
				struct vk_cmd *s = realloc(v->step_cmds, v->n_cmds * sizeof *s);
				if (!s) {
					vk_fail(v, "out of host memory for the recorded step");
					step = false;
					cb = v->cb;
				} else {
					v->step_cmds = s;
					v->cap_step_cmds = v->n_cmds;
				}
			}
			if (step) {
				memcpy(v->step_cmds, v->cmds, v->n_cmds * sizeof *v->cmds);
				v->n_step_cmds = v->n_cmds;
				v->step_valid = false; /* until recorded */
				record(v, cb);
				v->step_valid = true;
				v->n_recorded++;
			} else {
				record(v, cb);
			}
		}
	} else {
		record(v, cb);
	}
	const VkSubmitInfo si = {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO, .commandBufferCount = 1, .pCommandBuffers = &cb};
	VkResult r = p_vkQueueSubmit(v->queue, 1, &si, v->fence);
	if (r == VK_SUCCESS) {
		v->n_submits++;
		/* a device that stops answering is lost, not waited on forever. A
		 * GPU's driver reports a hung submit as VK_ERROR_DEVICE_LOST within
		 * seconds; the limit is for one that never does: 10 minutes, far
		 * beyond any one submit of a model that fits, the compilation
		 * lavapipe (a CPU device) does at a pipeline's first use included */
		r = p_vkWaitForFences(v->dev, 1, &v->fence, VK_TRUE, 600ull * 1000 * 1000 * 1000);
		if (r == VK_SUCCESS)
			p_vkResetFences(v->dev, 1, &v->fence);
	}
	if (r != VK_SUCCESS) {
		vk_fail(v, "%s: %s", r == VK_TIMEOUT ? "a submit did not finish in 10 minutes" : "vkQueueSubmit", vk_result_str(r));
		v->lost = true;
	} else {
		for (size_t i = 0; i < v->n_reads; i++)
			memcpy(v->reads[i].dst, v->stage.map + v->reads[i].stage_off, v->reads[i].n);
		if (v->prof_pool)
			profile_charge(v);
	}
	v->n_cmds = v->n_reads = 0;
	v->n_written = v->n_read = 0;
	v->stage_used = 0;
}

void vk_flush_pending(struct vk *v)
{
	if (v->in_step)
		v->step_valid = false;
	flush(v, false);
}

/* Room for n bytes in the staging (4-byte aligned offset), flushing the
 * list when it is full; n at most the staging's size. */
static VkDeviceSize stage_take(struct vk *v, VkDeviceSize n)
{
	VkDeviceSize off = (v->stage_used + 15) & ~(VkDeviceSize)15;
	if (off + n > v->stage.size) {
		bool step = v->in_step;
		if (step)
			v->step_valid = false; /* a step that needs two submits is not replayed */
		flush(v, false);
		off = 0;
	}
	v->stage_used = off + n;
	return off;
}

/* ---- buffers and transfers ---- */

static int vk_buf_alloc(struct tern_backend *be, struct tern_buf *b, uint32_t type, int n_dims, const int64_t *ne,
			tern_err *err)
{
	struct vk *v = vk_of(be);
	struct tern_buf nb = {.be = be, .flags = TERN_BUF_OWNS};
	*b = (struct tern_buf){0};
	int rc = tern_host_set_shape(&nb, type, n_dims, ne, err);
	if (rc)
		return rc;
	struct vk_mem *m = calloc(1, sizeof *m);
	if (!m)
		return tern_errf(err, TERN_ENOMEM, "%s: out of host memory", be->name);
	rc = vk_mem_new(v, m, nb.nb[3] * (size_t)nb.ne[3], false, err);
	if (rc) {
		free(m);
		return rc;
	}
	nb.mem = m;
	*b = nb;
	return 0;
}

static void upload_bytes(struct vk *v, struct vk_mem *m, size_t off, const void *src, size_t n)
{
	const uint8_t *s = src;
	while (n) {
		VkDeviceSize chunk = n < v->stage.size ? n : v->stage.size;
		VkDeviceSize so = stage_take(v, chunk);
		memcpy(v->stage.map + so, s, chunk);
		vk_copy_bytes(v, v->stage.buf, so, m->buf, off, chunk);
		s += chunk;
		off += chunk;
		n -= chunk;
	}
}

static int vk_buf_weight(struct tern_backend *be, struct tern_buf *b, const struct tern_tensor_view *t, tern_err *err)
{
	struct vk *v = vk_of(be);
	struct tern_buf nb = {0};
	int rc = tern_host_view_shape(t, &nb, err);
	if (!rc)
		rc = vk_buf_alloc(be, b, t->type, TERN_MAX_DIMS, nb.ne, err);
	if (rc) {
		char q[TERN_QUOTE_MAX];
		tern_err_prefixf(err, "tensor '%s'", tern_quote_str(q, sizeof q, t->name));
		return rc;
	}
	struct vk_mem *m = b->mem;
	if (m->map && !v->n_cmds)
		memcpy(m->map, t->data, t->nbytes); /* a fresh buffer no pending command touches */
	else
		upload_bytes(v, m, 0, t->data, t->nbytes);
	b->flags |= TERN_BUF_READONLY;
	return 0;
}

static void vk_buf_free(struct tern_backend *be, struct tern_buf *b)
{
	struct vk *v = vk_of(be);
	if ((b->flags & TERN_BUF_OWNS) && b->mem) {
		/* commands still listed may name it: finish them first; after a
		 * failed wait the device may still be running the submit (a
		 * driver's hung one returns from the idle wait as lost) */
		if (v->n_cmds)
			flush(v, false);
		if (v->lost && !v->idled) {
			p_vkDeviceWaitIdle(v->dev);
			v->idled = true;
		}
		vk_mem_free(v, b->mem);
		free(b->mem);
	}
	*b = (struct tern_buf){0};
}

static void vk_upload(struct tern_backend *be, struct tern_buf *dst, size_t offset, const void *src, size_t n)
{
	struct vk *v = vk_of(be);
	if (dst->flags & TERN_BUF_READONLY) {
		tern_host_fail(be, "upload into a read-only weight");
		return;
	}
	if (!tern_host_range_ok(be, "upload", dst, offset, n) || v->lost)
		return;
	upload_bytes(v, dst->mem, dst->offset + offset, src, n);
}

static void vk_download(struct tern_backend *be, const struct tern_buf *src, size_t offset, void *dst, size_t n)
{
	struct vk *v = vk_of(be);
	if (!tern_host_range_ok(be, "download", src, offset, n) || v->lost)
		return;
	const struct vk_mem *m = src->mem;
	uint8_t *d = dst;
	size_t off = src->offset + offset;
	while (n) {
		VkDeviceSize chunk = n < v->stage.size ? n : v->stage.size;
		VkDeviceSize so = stage_take(v, chunk);
		vk_copy_bytes(v, m->buf, off, v->stage.buf, so, chunk);
		if (v->n_reads == v->cap_reads) {
			size_t cap = v->cap_reads ? v->cap_reads * 2 : 16;
			struct vk_pending_read *r = realloc(v->reads, cap * sizeof *r);
			if (!r) {
				vk_fail(v, "out of host memory for a download");
				return;
			}
			v->reads = r;
			v->cap_reads = cap;
		}
		v->reads[v->n_reads++] = (struct vk_pending_read){d, so, chunk};
		d += chunk;
		off += chunk;
		n -= chunk;
	}
}

bool vk_range_bytes(struct vk *v, const struct tern_buf *b, size_t start, size_t n, uint32_t unit,
		    struct vk_range *r, uint32_t *elem)
{
	const struct vk_mem *m = b->mem;
	VkDeviceSize s = b->offset + start, a = s & ~(v->align - 1);
	VkDeviceSize size = ((s - a + n) + 3) & ~(VkDeviceSize)3;
	if (a + size > m->size)
		size = m->size - a;
	if (size > v->max_binding) {
		tern_host_fail(&v->be, "a view of %zu bytes exceeds the device's binding range (%" PRIu64 " bytes)", n,
			      (uint64_t)v->max_binding);
		return false;
	}
	*r = (struct vk_range){m->buf, a, size ? size : 4};
	if (elem)
		*elem = (uint32_t)((s - a) / (unit ? unit : 1));
	return true;
}

bool vk_range_of(struct vk *v, const struct tern_buf *b, uint32_t unit, struct vk_range *r, uint32_t *elem)
{
	return vk_range_bytes(v, b, 0, tern_buf_nbytes(b), unit, r, elem);
}

/* ---- pipelines ---- */

uint32_t vk_pipe(struct vk *v, const char *name, uint32_t wg, const uint32_t spec[4])
{
	uint32_t sp[4] = {0};
	if (spec)
		memcpy(sp, spec, sizeof sp);
	for (uint32_t i = 0; i < v->n_pipes; i++)
		if (!strcmp(v->pipes[i].name, name) && v->pipes[i].wg == wg && !memcmp(v->pipes[i].spec, sp, sizeof sp))
			return v->pipes[i].failed ? UINT32_MAX : i;
	if (v->n_pipes == VK_MAX_PIPES) {
		vk_fail(v, "more than %d pipelines", VK_MAX_PIPES);
		return UINT32_MAX;
	}
	/* the variant without subgroup operations where the device lacks them */
	char full[96];
	snprintf(full, sizeof full, "%s%s", name, v->subgroup_ops ? "" : "_nosg");
	const struct vk_spirv *code = NULL;
	for (size_t i = 0; i < vk_spirv_count && !code; i++)
		if (!strcmp(vk_spirv_table[i].name, full))
			code = &vk_spirv_table[i];
	for (size_t i = 0; i < vk_spirv_count && !code; i++)
		if (!strcmp(vk_spirv_table[i].name, name))
			code = &vk_spirv_table[i];
	struct vk_pipe *p = &v->pipes[v->n_pipes];
	*p = (struct vk_pipe){.name = code ? code->name : "?", .wg = wg};
	memcpy(p->spec, sp, sizeof sp);
	if (!code) {
		vk_fail(v, "no shader '%s' in this build", name);
		p->failed = true;
		p->name = name;
		v->n_pipes++;
		return UINT32_MAX;
	}
	p->name = name;
	const VkShaderModuleCreateInfo mi = {
		.sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO,
		.codeSize = code->size,
		.pCode = code->code,
	};
	VkShaderModule mod;
	VkResult r = p_vkCreateShaderModule(v->dev, &mi, NULL, &mod);
	if (r == VK_SUCCESS) {
		uint32_t data[5] = {wg, sp[0], sp[1], sp[2], sp[3]};
		VkSpecializationMapEntry ent[5];
		for (uint32_t i = 0; i < 5; i++)
			ent[i] = (VkSpecializationMapEntry){i, i * 4, 4};
		const VkSpecializationInfo si = {5, ent, sizeof data, data};
		const VkComputePipelineCreateInfo ci = {
			.sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO,
			.stage =
				{
					.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO,
					.stage = VK_SHADER_STAGE_COMPUTE_BIT,
					.module = mod,
					.pName = "main",
					.pSpecializationInfo = &si,
				},
			.layout = v->layout,
		};
		r = p_vkCreateComputePipelines(v->dev, VK_NULL_HANDLE, 1, &ci, NULL, &p->pipeline);
		p_vkDestroyShaderModule(v->dev, mod, NULL);
	}
	v->n_pipes++;
	if (r != VK_SUCCESS) {
		p->failed = true;
		vk_fail(v, "shader '%s' failed to build: %s", full, vk_result_str(r));
		return UINT32_MAX;
	}
	return v->n_pipes - 1;
}

/* ---- steps and sync ---- */

static void vk_begin_step(struct tern_backend *be)
{
	struct vk *v = vk_of(be);
	if (v->n_cmds || v->n_reads)
		flush(v, false);
	v->in_step = true;
}

static void vk_end_step(struct tern_backend *be)
{
	struct vk *v = vk_of(be);
	if (!v->in_step)
		return;
	v->in_step = false;
	flush(v, true);
}

static int vk_sync(struct tern_backend *be, tern_err *err)
{
	struct vk *v = vk_of(be);
	if (v->in_step) {
		/* a sync inside a step ends it without recording it for replay */
		v->in_step = false;
	}
	flush(v, false);
	if (!v->host.pending.code && v->status.map) {
		uint32_t st[4];
		memcpy(st, v->status.map, sizeof st);
		if (st[0]) {
			static const char *const ops[] = {"get_rows", "kv_store", "mat_mul_id", "attention"};
			int bit = __builtin_ctz(st[0]);
			memset(v->status.map, 0, 16);
			tern_host_fail(be, "%s: %s %d out of range", bit < 4 ? ops[bit] : "?",
				      st[0] & 16 ? "sequence" : "position or id", (int)st[1]);
		}
	}
	if (!v->host.pending.code && v->validation_errors) {
		v->validation_errors = 0;
		tern_host_fail(be, "%s", v->validation_msg);
	}
	return tern_host_sync(be, err);
}

void vk_get_stats(struct tern_backend *be, struct vk_stats *out)
{
	const struct vk *v = vk_of(be);
	*out = (struct vk_stats){v->n_submits, v->n_replays, v->n_recorded, v->step_dispatches, v->int_dot, v->coop};
}

/* ---- creation ---- */

static void vk_free(struct tern_backend *be)
{
	struct vk *v = vk_of(be);
	if (v->dev) {
		p_vkDeviceWaitIdle(v->dev);
		if (v->prof_pool) {
			profile_print(v);
			p_vkDestroyQueryPool(v->dev, v->prof_pool, NULL);
		}
		vk_products_free(v);
		for (uint32_t i = 0; i < v->n_pipes; i++)
			if (v->pipes[i].pipeline)
				p_vkDestroyPipeline(v->dev, v->pipes[i].pipeline, NULL);
		if (v->layout)
			p_vkDestroyPipelineLayout(v->dev, v->layout, NULL);
		if (v->dsl)
			p_vkDestroyDescriptorSetLayout(v->dev, v->dsl, NULL);
		vk_mem_free(v, &v->stage);
		vk_mem_free(v, &v->attn_part);
		vk_mem_free(v, &v->status);
		if (v->fence)
			p_vkDestroyFence(v->dev, v->fence, NULL);
		if (v->pool)
			p_vkDestroyCommandPool(v->dev, v->pool, NULL);
		p_vkDestroyDevice(v->dev, NULL);
	}
	if (v->messenger && p_vkDestroyDebugUtilsMessengerEXT)
		p_vkDestroyDebugUtilsMessengerEXT(v->inst, v->messenger, NULL);
	if (v->inst)
		p_vkDestroyInstance(v->inst, NULL);
	free(v->cmds);
	free(v->reads);
	free(v->step_cmds);
	free(v->written);
	free(v->read);
	free(v);
}

/* Whether mul_mm_cm.comp can run: VK_NV_cooperative_matrix (Debian 12's
 * glslc, glslang 11, has no GL_KHR_cooperative_matrix) with its feature,
 * 16 x 16 x 16 products of f16 into f32 at subgroup scope, f16 arithmetic,
 * the Vulkan memory model (the extension's scopes are declared through
 * GL_KHR_memory_scope_semantics) and the shader's 38 KiB of shared memory. */
static bool coop_usable(VkPhysicalDevice pd, const struct dev_facts *d)
{
	if (!d->has_coop_nv || !d->cm_nv.cooperativeMatrix || !d->f12.shaderFloat16 || !d->f12.vulkanMemoryModel ||
	    !p_vkGetPhysicalDeviceCooperativeMatrixPropertiesNV ||
	    d->p.properties.limits.maxComputeSharedMemorySize < 40u * 1024 ||
	    !(d->sg.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT))
		return false;
	VkCooperativeMatrixPropertiesNV cp[64];
	uint32_t n = 64;
	for (uint32_t i = 0; i < n; i++)
		cp[i] = (VkCooperativeMatrixPropertiesNV){.sType = VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_PROPERTIES_NV};
	VkResult r = p_vkGetPhysicalDeviceCooperativeMatrixPropertiesNV(pd, &n, cp);
	if (r != VK_SUCCESS && r != VK_INCOMPLETE)
		return false;
	for (uint32_t i = 0; i < n; i++)
		if (cp[i].MSize == 16 && cp[i].NSize == 16 && cp[i].KSize == 16 && cp[i].AType == VK_COMPONENT_TYPE_FLOAT16_NV &&
		    cp[i].BType == VK_COMPONENT_TYPE_FLOAT16_NV && cp[i].CType == VK_COMPONENT_TYPE_FLOAT32_NV &&
		    cp[i].DType == VK_COMPONENT_TYPE_FLOAT32_NV && cp[i].scope == VK_SCOPE_SUBGROUP_NV)
			return true;
	return false;
}

static int create_device(struct vk *v, const struct dev_facts *d, bool coop, tern_err *err)
{
	const char *exts[4];
	uint32_t n_exts = 0;
	exts[n_exts++] = VK_KHR_PUSH_DESCRIPTOR_EXTENSION_NAME;
	if (d->has_budget)
		exts[n_exts++] = VK_EXT_MEMORY_BUDGET_EXTENSION_NAME;
	/* the extension rather than Vulkan 1.3's core feature: the instance
	 * asks for 1.2 */
	if (v->int_dot)
		exts[n_exts++] = VK_KHR_SHADER_INTEGER_DOT_PRODUCT_EXTENSION_NAME;
	VkPhysicalDeviceShaderIntegerDotProductFeatures fdot = {
		.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_INTEGER_DOT_PRODUCT_FEATURES,
		.shaderIntegerDotProduct = VK_TRUE,
	};
	if (coop)
		exts[n_exts++] = VK_NV_COOPERATIVE_MATRIX_EXTENSION_NAME;
	VkPhysicalDeviceCooperativeMatrixFeaturesNV cm = {
		.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_NV,
		.pNext = v->int_dot ? &fdot : NULL,
		.cooperativeMatrix = VK_TRUE,
	};
	const float prio = 1.0f;
	v->queue_family = compute_family(v->phys);
	const VkDeviceQueueCreateInfo qi = {
		.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO,
		.queueFamilyIndex = v->queue_family,
		.queueCount = 1,
		.pQueuePriorities = &prio,
	};
	VkPhysicalDeviceVulkan12Features f12 = {
		.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES,
		.pNext = coop ? (void *)&cm : v->int_dot ? (void *)&fdot : NULL,
		.storageBuffer8BitAccess = VK_TRUE,
		.shaderFloat16 = d->f12.shaderFloat16,
		.shaderInt8 = d->f12.shaderInt8,
		.vulkanMemoryModel = coop,
	};
	VkPhysicalDeviceVulkan11Features f11 = {
		.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES,
		.pNext = &f12,
		.storageBuffer16BitAccess = VK_TRUE,
	};
	VkPhysicalDeviceFeatures2 f = {
		.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2,
		.pNext = &f11,
		.features = {.shaderInt16 = d->f.features.shaderInt16, .shaderInt64 = d->f.features.shaderInt64},
	};
	const VkDeviceCreateInfo ci = {
		.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO,
		.pNext = &f,
		.queueCreateInfoCount = 1,
		.pQueueCreateInfos = &qi,
		.enabledExtensionCount = n_exts,
		.ppEnabledExtensionNames = exts,
	};
	VkResult r = p_vkCreateDevice(v->phys, &ci, NULL, &v->dev);
	if (r != VK_SUCCESS)
		return tern_errf(err, TERN_EUNSUPPORTED, "%s: vkCreateDevice: %s", v->info.name, vk_result_str(r));
	int rc = vk_load_device(v->dev, err);
	if (rc)
		return rc;
	p_vkGetDeviceQueue(v->dev, v->queue_family, 0, &v->queue);
	return 0;
}

static int create_objects(struct vk *v, tern_err *err)
{
	VkDescriptorSetLayoutBinding b[VK_MAX_BINDINGS + 1];
	for (uint32_t i = 0; i <= VK_MAX_BINDINGS; i++)
		b[i] = (VkDescriptorSetLayoutBinding){i, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 1, VK_SHADER_STAGE_COMPUTE_BIT, NULL};
	const VkDescriptorSetLayoutCreateInfo dci = {
		.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO,
		.flags = VK_DESCRIPTOR_SET_LAYOUT_CREATE_PUSH_DESCRIPTOR_BIT_KHR,
		.bindingCount = VK_MAX_BINDINGS + 1,
		.pBindings = b,
	};
	VkResult r = p_vkCreateDescriptorSetLayout(v->dev, &dci, NULL, &v->dsl);
	const VkPushConstantRange pcr = {VK_SHADER_STAGE_COMPUTE_BIT, 0, VK_PC_MAX};
	const VkPipelineLayoutCreateInfo lci = {
		.sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO,
		.setLayoutCount = 1,
		.pSetLayouts = &v->dsl,
		.pushConstantRangeCount = 1,
		.pPushConstantRanges = &pcr,
	};
	if (r == VK_SUCCESS)
		r = p_vkCreatePipelineLayout(v->dev, &lci, NULL, &v->layout);
	const VkCommandPoolCreateInfo pci = {
		.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
		.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT,
		.queueFamilyIndex = v->queue_family,
	};
	if (r == VK_SUCCESS)
		r = p_vkCreateCommandPool(v->dev, &pci, NULL, &v->pool);
	VkCommandBuffer cbs[2];
	const VkCommandBufferAllocateInfo ai = {
		.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
		.commandPool = v->pool,
		.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
		.commandBufferCount = 2,
	};
	if (r == VK_SUCCESS)
		r = p_vkAllocateCommandBuffers(v->dev, &ai, cbs);
	if (r == VK_SUCCESS) {
		v->cb = cbs[0];
		v->step_cb = cbs[1];
	}
	const VkFenceCreateInfo fi = {.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
	if (r == VK_SUCCESS)
		r = p_vkCreateFence(v->dev, &fi, NULL, &v->fence);
	if (r != VK_SUCCESS)
		return tern_errf(err, TERN_EIO, "%s: creating the command objects: %s", v->info.name, vk_result_str(r));
	int rc = vk_mem_new(v, &v->stage, VK_STAGE_BYTES, true, err);
	if (!rc)
		rc = vk_mem_new(v, &v->status, 16, true, err);
	if (!rc)
		memset(v->status.map, 0, 16);
	return rc;
}

static void pick_memory(struct vk *v)
{
	p_vkGetPhysicalDeviceMemoryProperties(v->phys, &v->memprops);
	const VkMemoryPropertyFlags dl = VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT,
				    hv = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
	int t = -1;
	if (v->info.uma)
		t = find_type(&v->memprops, ~0u, dl | hv, 0); /* the same memory: weights are copied in directly */
	if (t < 0)
		t = find_type(&v->memprops, ~0u, dl, 0);
	v->mt_device = t < 0 ? 0 : (uint32_t)t;
	t = find_type(&v->memprops, ~0u, hv | VK_MEMORY_PROPERTY_HOST_CACHED_BIT, 0);
	if (t < 0)
		t = find_type(&v->memprops, ~0u, hv, 0);
	v->mt_host = t < 0 ? 0 : (uint32_t)t;
}

/* opts.profile: the query pool, where the queue has timestamps */
static void profile_open(struct vk *v, const struct dev_facts *d)
{
	VkQueueFamilyProperties q[16];
	uint32_t nq = queue_families(v->phys, q);
	uint32_t bits = v->queue_family < nq ? q[v->queue_family].timestampValidBits : 0;
	if (!bits) {
		fprintf(stderr, "%s: no timestamps on the compute queue: not profiled\n", v->info.name);
		return;
	}
	v->ts_mask = bits >= 64 ? ~0ull : (1ull << bits) - 1;
	v->ts_ns = d->p.properties.limits.timestampPeriod;
	const VkQueryPoolCreateInfo qi = {.sType = VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO,
					  .queryType = VK_QUERY_TYPE_TIMESTAMP,
					  .queryCount = VK_PROF_MAX + 1};
	if (p_vkCreateQueryPool(v->dev, &qi, NULL, &v->prof_pool) != VK_SUCCESS)
		v->prof_pool = VK_NULL_HANDLE;
}

int vk_backend_new(struct tern_backend **out, const struct vk_backend_opts *opts, tern_err *err)
{
	*out = NULL;
	const struct vk_backend_opts o = opts ? *opts : (struct vk_backend_opts){.max_tokens = 512};
	if (o.max_tokens < 1 || o.max_tokens > 4096)
		return tern_errf(err, TERN_EINVAL, "vulkan: batch bound %lld out of range 1..4096", (long long)o.max_tokens);
	struct vk *v = calloc(1, sizeof *v);
	if (!v)
		return tern_errf(err, TERN_ENOMEM, "vulkan: out of memory");
	tern_host_table(&v->be, "vulkan", TERN_BACKEND_ASYNC | TERN_BACKEND_GRAPH, o.max_tokens, v);
	v->be.caps &= ~(unsigned)TERN_BACKEND_HOST_MEMORY;
	int rc = make_instance(&v->inst, v, o.validation, err);
	VkPhysicalDevice pd[16];
	uint32_t n = 0;
	if (!rc)
		rc = list_devices(v->inst, pd, 16, &n, err);
	if (!rc && (o.device < 0 || (uint32_t)o.device >= n))
		rc = tern_errf(err, TERN_ENOTFOUND, "vulkan%d: no such device (%u found)", o.device, n);
	struct dev_facts d;
	if (!rc) {
		v->phys = pd[o.device];
		device_facts(v->phys, &d);
		fill_info(v->phys, o.device, &d, &v->info);
		const VkPhysicalDeviceProperties *p = &d.p.properties;
		/* what the shaders need; anything else has a fallback */
		if (p->apiVersion < VK_API_VERSION_1_2)
			rc = tern_errf(err, TERN_EUNSUPPORTED, "%s (%s): Vulkan %u.%u, 1.2 needed", v->info.name,
				       v->info.desc, VK_API_VERSION_MAJOR(p->apiVersion), VK_API_VERSION_MINOR(p->apiVersion));
		else if (!d.has_push)
			rc = tern_errf(err, TERN_EUNSUPPORTED, "%s (%s): no VK_KHR_push_descriptor", v->info.name, v->info.desc);
		else if (!d.f11.storageBuffer16BitAccess || !d.f12.storageBuffer8BitAccess)
			rc = tern_errf(err, TERN_EUNSUPPORTED, "%s (%s): no 8- and 16-bit storage buffer access",
				       v->info.name, v->info.desc);
		else if (p->limits.maxComputeSharedMemorySize < 16384 || p->limits.maxComputeWorkGroupInvocations < 256)
			rc = tern_errf(err, TERN_EUNSUPPORTED, "%s (%s): compute limits below 16 KiB shared memory / 256 invocations",
				       v->info.name, v->info.desc);
	}
	if (!rc) {
		const VkPhysicalDeviceLimits *lim = &d.p.properties.limits;
		v->max_binding = lim->maxStorageBufferRange;
		v->align = lim->minStorageBufferOffsetAlignment ? lim->minStorageBufferOffsetAlignment : 4;
		for (int i = 0; i < 3; i++)
			v->max_groups[i] = lim->maxComputeWorkGroupCount[i];
		v->shared_mem = lim->maxComputeSharedMemorySize;
		v->subgroup_ops = (d.sg.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT) &&
				  (d.sg.supportedOperations & VK_SUBGROUP_FEATURE_ARITHMETIC_BIT) && d.sg.subgroupSize >= 4 &&
				  !o.no_subgroup;
		/* the integer dot product where the device says the packed
		 * signed 4x8 form (OpSDot, dot_int.glsl) is fast, or forced;
		 * its shaders are built with subgroup arithmetic only */
		v->int_dot = d.has_dot && d.fdot.shaderIntegerDotProduct && v->subgroup_ops &&
			     (d.dot.integerDotProduct4x8BitPackedSignedAccelerated || o.int_dot);
		v->fp16 = d.f12.shaderFloat16;
		bool cm = coop_usable(v->phys, &d);
		v->coop = !o.no_coopmat && (cm || o.try_coopmat);
		if (!v->info.max_alloc)
			v->info.max_alloc = (uint64_t)1 << 30;
		pick_memory(v);
		snprintf(v->info.name, sizeof v->info.name, "vulkan%d", o.device);
		rc = create_device(v, &d, cm && v->coop, err);
	}
	if (!rc)
		rc = create_objects(v, err);
	if (!rc && o.profile)
		profile_open(v, &d);
	if (rc) {
		vk_free(&v->be);
		return rc;
	}
	v->be.name = v->info.name;
	v->be.free = vk_free;
	v->be.buf_alloc = vk_buf_alloc;
	v->be.buf_weight = vk_buf_weight;
	v->be.buf_free = vk_buf_free;
	v->be.upload = vk_upload;
	v->be.download = vk_download;
	v->be.begin_step = vk_begin_step;
	v->be.end_step = vk_end_step;
	v->be.sync = vk_sync;
	v->be.mat_prepare = vk_mat_prepare;
	vk_ops_table(&v->be);
	if (v->coop)
		vk_coopmat_check(v);
	*out = &v->be;
	return 0;
}
