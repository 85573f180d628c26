/* vk_products.c - the Vulkan backend's products (placeholder while the
 * shaders are written) */
#include "gpu/vulkan/vk_impl.h"

int vk_mat_prepare(struct tern_backend *be, struct tern_buf *w, tern_err *err)
{
	return tern_errf(err, TERN_EUNSUPPORTED, "%s: no products yet", be->name);
}
