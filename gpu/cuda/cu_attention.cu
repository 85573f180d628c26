/* cu_attention.cu - PLACEHOLDER until attention lands (helper) */
#include "gpu/cuda/cu_impl.cuh"

namespace tern_cu {

void cu_run_attention(cuk_ctx *c, const cuk_op *op)
{
	(void)op;
	cu_check(c, cudaErrorInvalidValue, "attention: not built yet");
}
size_t cu_attention_scratch(const cuk_op *op) { (void)op; return 0; }

} // namespace tern_cu
