/* cu_impl.cuh - the CUDA side's insides, shared by the .cu files: the
 * context, the launchers of each op family and small device helpers
 * (warp and block reductions, the status word). Everything is in namespace
 * tern_cu (tern_cuda on the GPU, tern_cuemu in the CPU emulation:
 * cu_compat.h). */
#ifndef TERN_CU_IMPL_CUH
#define TERN_CU_IMPL_CUH

#include "gpu/cuda/cu_compat.h"
#include "gpu/cuda/cu_kern.h"

#include <stdint.h>

namespace tern_cu {

/* lib/backend.h's enums, repeated here so that the .cu files need not
 * include the C headers (kept equal by cu_backend.c's static asserts) */
enum { NORM_RMS = 0, NORM_LAYER = 1 };
enum { ROPE_NORMAL = 0, ROPE_NEOX = 1 };
enum { GLU_SWIGLU = 0, GLU_GEGLU = 1, GLU_SWIGLU_OAI = 2 };
enum { UNARY_GELU = 0, UNARY_GELU_ERF = 1, UNARY_SILU = 2, UNARY_SIGMOID = 4 };
enum { MOE_SOFTMAX = 0, MOE_SIGMOID = 1, MOE_SOFTMAX_TOPK = 2 };
/* quant types the kernels name (quant/types.h's values) */
enum {
	T_F32 = 0, T_F16 = 1, T_Q4_0 = 2, T_Q4_1 = 3, T_Q5_0 = 6, T_Q5_1 = 7, T_Q8_0 = 8, T_Q8_1 = 9,
	T_Q2_K = 10, T_Q3_K = 11, T_Q4_K = 12, T_Q5_K = 13, T_Q6_K = 14, T_Q8_K = 15, T_IQ2_XXS = 16,
	T_IQ2_XS = 17, T_IQ3_XXS = 18, T_IQ1_S = 19, T_IQ4_NL = 20, T_IQ3_S = 21, T_IQ2_S = 22,
	T_IQ4_XS = 23, T_I8 = 24, T_I16 = 25, T_I32 = 26, T_IQ1_M = 29, T_BF16 = 30, T_TQ1_0 = 34,
	T_TQ2_0 = 35, T_MXFP4 = 39
};
#define TERN_CU_ATTN_MAX_HEAD_DIM 576
#define TERN_CU_MOE_MAX_USED 64


} // namespace tern_cu

namespace tern_cu {

/* the context (cu_kern.h's opaque struct cuk_ctx derives from it: the
 * CUDA types resolve in this namespace, the runtime's or the emulation's) */
struct ctx_fields {
	int dev;
	cudaStream_t stream;
	int *status;      /* device: int[4]: [0] the op kind + 1 of the first violation, [1] its value */
	int *status_host; /* pinned: status read back at sync */
	void *scratch;    /* device memory ops use within one op (quantized activations, attention partials) */
	size_t scratch_size;
	cudaGraphExec_t exec;
	bool have_exec;
	bool capture_broken; /* a capture failed once: steps run as plain launches */
	bool no_tensor_cores; /* the GEMM in SIMT f32 even where tensor cores are (tests) */
	bool int_dot;         /* the mat-vec of the dot types through dp4a (cu_products.cu) */
	int cc;              /* compute capability, 10 major + minor */
	int sms, smem_optin;
	uint64_t launches;   /* kernels launched since creation (the launchers count) */
	struct cuk_stats st;
	char err[320];       /* the first CUDA error since the last sync (a call's name and CUDA's string) */
	bool failed;
};

} // namespace tern_cu

struct cuk_ctx : tern_cu::ctx_fields {
};

namespace tern_cu {

using ::cuk_ctx;

/* Record the first CUDA error of a call (what names it) for the next sync. */
void cu_check(cuk_ctx *c, cudaError_t e, const char *what);
/* After a launch: count it, and record a launch error naming the kernel. */
void cu_launched(cuk_ctx *c, const char *kernel);

/* Scratch of at least n bytes for the op about to run (grown outside a
 * capture only: run_step sizes it before capturing, through
 * cu_op_scratch); NULL and an error recorded when it cannot be had. */
void *cu_scratch(cuk_ctx *c, size_t n);

/* ---- the op families (each .cu file): run one op; the bytes of scratch
 * an op needs ---- */
void cu_run_eltwise(cuk_ctx *c, const cuk_op *op); /* add scale glu unary softmax norm rope norm_rope im2col copy */
void cu_run_products(cuk_ctx *c, const cuk_op *op); /* product mat_mul_heads mat_mul_id get_rows */
void cu_run_attention(cuk_ctx *c, const cuk_op *op); /* kv_store attention */
void cu_run_moe(cuk_ctx *c, const cuk_op *op);       /* moe_route moe_combine */
size_t cu_products_scratch(const cuk_op *op);
/* once at the context's creation: kernels' opt-ins (more shared memory) */
void cu_attention_init(cuk_ctx *c);
size_t cu_attention_scratch(const cuk_op *op);
/* a device copy that converts (copy from a type the eltwise copy does not
 * convert: through the products' block decoders) */
void cu_copy_dequant(cuk_ctx *c, const cuk_op *op);
bool cu_products_type_ok(uint32_t type);
size_t cu_products_scratch_for(uint32_t type, int64_t cols, int64_t ntok);

/* ---- device helpers ---- */

/* flag a bad value (an id, a position, a sequence) for sync: the first wins */
__device__ __forceinline__ void cu_flag(int *status, int kind, int value)
{
	if (atomicCAS(status, 0, kind + 1) == 0)
		status[1] = value;
}

__device__ __forceinline__ float warp_sum(float v)
{
	for (int m = 16; m > 0; m >>= 1)
		v += __shfl_xor_sync(0xffffffffu, v, m);
	return v;
}

__device__ __forceinline__ float warp_max(float v)
{
	for (int m = 16; m > 0; m >>= 1)
		v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, m));
	return v;
}

/* Sum over the block (blockDim.x a multiple of 32, at most 1024); every
 * thread gets the result. sh: 32 floats of shared memory. */
__device__ __forceinline__ float block_sum(float v, float *sh)
{
	v = warp_sum(v);
	unsigned w = threadIdx.x / 32, nw = blockDim.x / 32;
	__syncthreads(); /* sh may hold a previous call's sums */
	if (threadIdx.x % 32 == 0)
		sh[w] = v;
	__syncthreads();
	v = threadIdx.x % 32 < nw ? sh[threadIdx.x % 32] : 0.0f;
	return warp_sum(v);
}

__device__ __forceinline__ float block_max(float v, float *sh)
{
	v = warp_max(v);
	unsigned w = threadIdx.x / 32, nw = blockDim.x / 32;
	__syncthreads();
	if (threadIdx.x % 32 == 0)
		sh[w] = v;
	__syncthreads();
	v = threadIdx.x % 32 < nw ? sh[threadIdx.x % 32] : -INFINITY;
	return warp_max(v);
}

/* a grid of blocks over n items, x up to 65535 * 512 and the rest in y */
static inline dim3 cu_grid(uint64_t blocks)
{
	if (!blocks)
		blocks = 1;
	unsigned gx = blocks < 32768 ? (unsigned)blocks : 32768u;
	return dim3(gx, (unsigned)((blocks + gx - 1) / gx), 1);
}
__device__ __forceinline__ uint64_t cu_block_id() { return (uint64_t)blockIdx.y * gridDim.x + blockIdx.x; }

} // namespace tern_cu

#endif
