/* cu_eltwise.cu - PLACEHOLDER */
#include "gpu/cuda/cu_impl.cuh"

namespace tern_cu {

void cu_run_eltwise(cuk_ctx *c, const cuk_op *op)
{
	(void)op;
	cu_check(c, cudaErrorInvalidValue, "eltwise: not built yet");
}

} // namespace tern_cu
