/* cu_moe.cu - PLACEHOLDER until the router lands */
#include "gpu/cuda/cu_impl.cuh"

namespace tern_cu {

void cu_run_moe(cuk_ctx *c, const cuk_op *op)
{
	(void)op;
	cu_check(c, cudaErrorInvalidValue, "moe: not built yet");
}

} // namespace tern_cu
