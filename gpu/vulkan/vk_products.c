/* vk_products.c - the Vulkan backend's products (placeholder while the
 * shaders are written) */
#include "gpu/vulkan/vk_impl.h"
#include "quant/quant.h"

int vk_mat_prepare(struct tern_backend *be, struct tern_buf *w, tern_err *err)
{
	return tern_errf(err, TERN_EUNSUPPORTED, "%s: no products yet", be->name);
}

void vk_copy_dequant(struct vk *v, const struct tern_buf *src, struct tern_buf *dst)
{
	cpu_host_fail(&v->be, "copy: %s to %s is not on this backend yet", quant_type_name(src->type),
		      quant_type_name(dst->type));
}
