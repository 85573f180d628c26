/* cu_products.cu - PLACEHOLDER until the products land (helper) */
#include "gpu/cuda/cu_impl.cuh"

namespace tern_cu {

void cu_run_products(cuk_ctx *c, const cuk_op *op)
{
	(void)op;
	cu_check(c, cudaErrorInvalidValue, "products: not built yet");
}
size_t cu_products_scratch(const cuk_op *op) { (void)op; return 0; }
void cu_copy_dequant(cuk_ctx *c, const cuk_op *op) { (void)op; cu_check(c, cudaErrorInvalidValue, "copy_dequant: not built yet"); }
bool cu_products_type_ok(uint32_t type) { return type == T_F32 || type == T_F16; }
size_t cu_products_scratch_for(uint32_t type, int64_t cols, int64_t ntok) { (void)type; (void)cols; (void)ntok; return 0; }

} // namespace tern_cu
