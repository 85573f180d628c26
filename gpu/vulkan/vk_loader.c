/* vk_loader.c - the Vulkan API through the loader (libvulkan.so.1) opened at
 * run time, so that a binary built with Vulkan starts on a machine without
 * it and runs on the CPU there. Function pointers are global: one loader,
 * one set of instance and device functions (a process drives one Vulkan
 * implementation; the pointers of two devices of the same driver are the
 * same dispatch trampolines of the loader). */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>

#include "gpu/vulkan/vk_impl.h"

#define VK_DEFINE(f) PFN_##f p_##f;
VK_GLOBAL_FNS(VK_DEFINE)
VK_INSTANCE_FNS(VK_DEFINE)
VK_DEBUG_FNS(VK_DEFINE)
VK_DEVICE_FNS(VK_DEFINE)
#undef VK_DEFINE

static PFN_vkGetInstanceProcAddr get_instance_proc;
static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static char load_error[256];

static void load(void)
{
	void *lib = dlopen("libvulkan.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!lib)
		lib = dlopen("libvulkan.so", RTLD_NOW | RTLD_LOCAL);
	if (!lib) {
		snprintf(load_error, sizeof load_error, "no Vulkan loader (libvulkan.so.1): %s", dlerror());
		return;
	}
	get_instance_proc = (PFN_vkGetInstanceProcAddr)dlsym(lib, "vkGetInstanceProcAddr");
	if (!get_instance_proc) {
		snprintf(load_error, sizeof load_error, "the Vulkan loader has no vkGetInstanceProcAddr");
		return;
	}
#define VK_LOAD_GLOBAL(f) p_##f = (PFN_##f)get_instance_proc(NULL, #f);
	VK_GLOBAL_FNS(VK_LOAD_GLOBAL)
#undef VK_LOAD_GLOBAL
	if (!p_vkCreateInstance || !p_vkEnumerateInstanceExtensionProperties || !p_vkEnumerateInstanceLayerProperties) {
		snprintf(load_error, sizeof load_error, "the Vulkan loader lacks its global functions");
		get_instance_proc = NULL;
	}
}

int vk_load(tern_err *err)
{
	pthread_once(&load_once, load);
	if (!get_instance_proc)
		return tern_errf(err, TERN_EUNSUPPORTED, "%s", load_error);
	return 0;
}

void vk_load_instance(VkInstance inst)
{
#define VK_LOAD_INSTANCE(f) p_##f = (PFN_##f)get_instance_proc(inst, #f);
	VK_INSTANCE_FNS(VK_LOAD_INSTANCE)
	VK_DEBUG_FNS(VK_LOAD_INSTANCE)
#undef VK_LOAD_INSTANCE
}

int vk_load_device(VkDevice dev, tern_err *err)
{
#define VK_LOAD_DEVICE(f)                                                                                 \
	p_##f = (PFN_##f)p_vkGetDeviceProcAddr(dev, #f);                                                    \
	if (!p_##f)                                                                                         \
		return tern_errf(err, TERN_EUNSUPPORTED, "vulkan: the driver lacks %s", #f);
	VK_DEVICE_FNS(VK_LOAD_DEVICE)
#undef VK_LOAD_DEVICE
	return 0;
}

const char *vk_result_str(VkResult r)
{
	switch (r) {
#define R(x) case x: return #x;
	R(VK_SUCCESS) R(VK_NOT_READY) R(VK_TIMEOUT) R(VK_INCOMPLETE) R(VK_ERROR_OUT_OF_HOST_MEMORY)
	R(VK_ERROR_OUT_OF_DEVICE_MEMORY) R(VK_ERROR_INITIALIZATION_FAILED) R(VK_ERROR_DEVICE_LOST)
	R(VK_ERROR_MEMORY_MAP_FAILED) R(VK_ERROR_LAYER_NOT_PRESENT) R(VK_ERROR_EXTENSION_NOT_PRESENT)
	R(VK_ERROR_FEATURE_NOT_PRESENT) R(VK_ERROR_INCOMPATIBLE_DRIVER) R(VK_ERROR_TOO_MANY_OBJECTS)
	R(VK_ERROR_FORMAT_NOT_SUPPORTED) R(VK_ERROR_FRAGMENTED_POOL) R(VK_ERROR_UNKNOWN)
	R(VK_ERROR_OUT_OF_POOL_MEMORY) R(VK_ERROR_INVALID_EXTERNAL_HANDLE) R(VK_ERROR_FRAGMENTATION)
	R(VK_ERROR_INVALID_SHADER_NV)
#undef R
	default:
		return "VkResult(unknown)";
	}
}
