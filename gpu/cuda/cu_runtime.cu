/* cu_runtime.cu - the CUDA side's runtime half (gpu/cuda/cu_kern.h): the
 * devices, the context (stream, status word, scratch), memory, running an
 * op record, capturing a step into a CUDA graph and replaying it, sync
 * and the read-bandwidth probe. The kernels are in the other .cu files. */
#include "gpu/cuda/cu_impl.cuh"

#include <stdio.h>
#include <string.h>

namespace tern_cu {

static void say(char *why, size_t cap, const char *what, cudaError_t e)
{
	if (why && cap)
		snprintf(why, cap, "%s: %s", what, cudaGetErrorString(e));
}

void cu_check(cuk_ctx *c, cudaError_t e, const char *what)
{
	if (e == cudaSuccess || c->failed)
		return;
	snprintf(c->err, sizeof c->err, "%s: %s (%s)", what, cudaGetErrorString(e), cudaGetErrorName(e));
	c->failed = true;
}

void cu_launched(cuk_ctx *c, const char *kernel)
{
	c->launches++;
	cudaError_t e = cudaGetLastError();
	if (e != cudaSuccess) {
		char what[96];
		snprintf(what, sizeof what, "launch of %s", kernel);
		cu_check(c, e, what);
	}
}

static bool grow_scratch(cuk_ctx *c, size_t n)
{
	if (n <= c->scratch_size)
		return true;
	/* grown by half again, so that a run of growing needs reallocates
	 * rarely; the old one may still be read by enqueued kernels */
	size_t want = n + n / 2;
	cu_check(c, cudaStreamSynchronize(c->stream), "cudaStreamSynchronize");
	if (c->scratch)
		cudaFree(c->scratch);
	c->scratch = NULL;
	c->scratch_size = 0;
	void *p = NULL;
	cudaError_t e = cudaMalloc(&p, want);
	if (e != cudaSuccess) {
		cudaGetLastError();
		cu_check(c, e, "cudaMalloc (scratch)");
		return false;
	}
	c->scratch = p;
	c->scratch_size = want;
	/* a captured step names the old scratch */
	if (c->have_exec) {
		cudaGraphExecDestroy(c->exec);
		c->have_exec = false;
	}
	return true;
}

void *cu_scratch(cuk_ctx *c, size_t n)
{
	if (n > c->scratch_size) {
		cu_check(c, cudaErrorMemoryAllocation, "scratch not reserved for this op");
		return NULL;
	}
	return c->scratch;
}

static size_t op_scratch(const cuk_op *op)
{
	switch (op->kind) {
	case CUK_PRODUCT:
	case CUK_MAT_MUL_HEADS:
	case CUK_MAT_MUL_ID:
	case CUK_GET_ROWS:
	case CUK_COPY:
		return cu_products_scratch(op);
	case CUK_ATTENTION:
		return cu_attention_scratch(op);
	default:
		return 0;
	}
}

static void run_op(cuk_ctx *c, const cuk_op *op)
{
	switch (op->kind) {
	case CUK_H2D:
		cu_check(c, cudaMemcpyAsync(op->u.copy.dst, op->u.copy.src, op->u.copy.n, cudaMemcpyHostToDevice, c->stream),
			 "cudaMemcpyAsync (upload)");
		break;
	case CUK_D2H:
		cu_check(c, cudaMemcpyAsync(op->u.copy.dst, op->u.copy.src, op->u.copy.n, cudaMemcpyDeviceToHost, c->stream),
			 "cudaMemcpyAsync (download)");
		break;
	case CUK_D2D:
		cu_check(c, cudaMemcpyAsync(op->u.copy.dst, op->u.copy.src, op->u.copy.n, cudaMemcpyDeviceToDevice, c->stream),
			 "cudaMemcpyAsync (device)");
		break;
	case CUK_FILL:
		cu_check(c, cudaMemsetAsync(op->u.copy.dst, op->u.copy.value, op->u.copy.n, c->stream), "cudaMemsetAsync");
		break;
	case CUK_PRODUCT:
	case CUK_MAT_MUL_HEADS:
	case CUK_MAT_MUL_ID:
	case CUK_GET_ROWS:
		cu_run_products(c, op);
		break;
	case CUK_KV_STORE:
	case CUK_ATTENTION:
		cu_run_attention(c, op);
		break;
	case CUK_MOE_ROUTE:
	case CUK_MOE_COMBINE:
		cu_run_moe(c, op);
		break;
	default:
		cu_run_eltwise(c, op);
		break;
	}
}

} // namespace tern_cu

using namespace tern_cu;

extern "C" {

int CUK(device_count)(char *why, size_t cap)
{
	int n = 0;
	cudaError_t e = cudaGetDeviceCount(&n);
	if (e != cudaSuccess) {
		/* no driver, no device: CUDA's reason, and nothing listed */
		say(why, cap, "cudaGetDeviceCount", e);
#if !CU_EMULATED
		/* what the runtime says when it finds no libcuda.so.1 at all */
		if (e == cudaErrorInsufficientDriver && why && cap)
			snprintf(why, cap, "no NVIDIA driver (libcuda.so.1) new enough for CUDA %d.%d", CUDART_VERSION / 1000,
				 CUDART_VERSION % 1000 / 10);
#endif
		cudaGetLastError();
		return 0;
	}
	return n;
}

int CUK(device_props)(int dev, struct cuk_dev *out, char *why, size_t cap)
{
	memset(out, 0, sizeof *out);
	cudaDeviceProp p;
	cudaError_t e = cudaGetDeviceProperties(&p, dev);
	if (e == cudaSuccess)
		e = cudaSetDevice(dev);
	size_t fr = 0, tot = 0;
	if (e == cudaSuccess)
		e = cudaMemGetInfo(&fr, &tot);
	if (e != cudaSuccess) {
		say(why, cap, "cudaGetDeviceProperties", e);
		cudaGetLastError();
		return -1;
	}
	snprintf(out->name, sizeof out->name, "%s", p.name);
	out->total = tot ? tot : p.totalGlobalMem;
	out->free = fr;
	out->major = p.major;
	out->minor = p.minor;
	out->sms = p.multiProcessorCount;
	out->smem_optin = (int)p.sharedMemPerBlockOptin;
	out->integrated = p.integrated != 0;
	cudaDriverGetVersion(&out->driver);
	cudaRuntimeGetVersion(&out->runtime);
	out->emulated = CU_EMULATED;
	return 0;
}

int CUK(ctx_new)(int dev, unsigned flags, struct cuk_ctx **out, char *why, size_t cap)
{
	*out = NULL;
	cuk_ctx *c = new cuk_ctx();
	memset(static_cast<ctx_fields *>(c), 0, sizeof(ctx_fields));
	c->dev = dev;
	c->no_tensor_cores = (flags & CUK_NO_TENSOR_CORES) != 0;
	cudaDeviceProp p;
	cudaError_t e = cudaSetDevice(dev);
	const char *what = "cudaSetDevice";
	if (e == cudaSuccess && (e = cudaGetDeviceProperties(&p, dev)) != cudaSuccess)
		what = "cudaGetDeviceProperties";
	if (e == cudaSuccess && (e = cudaStreamCreateWithFlags(&c->stream, cudaStreamNonBlocking)) != cudaSuccess)
		what = "cudaStreamCreate";
	if (e == cudaSuccess && (e = cudaMalloc((void **)&c->status, 16)) != cudaSuccess)
		what = "cudaMalloc (status)";
	if (e == cudaSuccess && (e = cudaMallocHost((void **)&c->status_host, 16)) != cudaSuccess)
		what = "cudaMallocHost (status)";
	if (e == cudaSuccess && (e = cudaMemsetAsync(c->status, 0, 16, c->stream)) != cudaSuccess)
		what = "cudaMemsetAsync (status)";
	if (e == cudaSuccess && (e = cudaStreamSynchronize(c->stream)) != cudaSuccess)
		what = "cudaStreamSynchronize";
	if (e != cudaSuccess) {
		say(why, cap, what, e);
		cudaGetLastError();
		CUK(ctx_free)(c);
		return -1;
	}
	c->cc = p.major * 10 + p.minor;
	c->sms = p.multiProcessorCount;
	c->int_dot = c->cc >= 61 && !(flags & CUK_NO_INT_DOT);
	c->smem_optin = (int)p.sharedMemPerBlockOptin;
	cu_attention_init(c);
	if (c->failed) {
		snprintf(why, cap, "%s", c->err);
		CUK(ctx_free)(c);
		return -1;
	}
	*out = c;
	return 0;
}

void CUK(ctx_free)(struct cuk_ctx *c)
{
	if (!c)
		return;
	if (c->stream)
		cudaStreamSynchronize(c->stream);
	if (c->have_exec)
		cudaGraphExecDestroy(c->exec);
	if (c->scratch)
		cudaFree(c->scratch);
	if (c->status)
		cudaFree(c->status);
	if (c->status_host)
		cudaFreeHost(c->status_host);
	if (c->stream)
		cudaStreamDestroy(c->stream);
	cudaGetLastError();
	delete c;
}

int CUK(malloc)(struct cuk_ctx *c, void **p, size_t n, bool *oom, char *why, size_t cap)
{
	(void)c;
	*oom = false;
	cudaError_t e = cudaMalloc(p, n ? n : 1);
	if (e != cudaSuccess) {
		*p = NULL;
		*oom = e == cudaErrorMemoryAllocation;
		say(why, cap, "cudaMalloc", e);
		cudaGetLastError();
		return -1;
	}
	return 0;
}

void CUK(free)(struct cuk_ctx *c, void *p)
{
	/* kernels enqueued may still read it */
	cudaStreamSynchronize(c->stream);
	cudaFree(p);
	cudaGetLastError();
}

int CUK(host_alloc)(struct cuk_ctx *c, void **p, size_t n, char *why, size_t cap)
{
	(void)c;
	cudaError_t e = cudaMallocHost(p, n ? n : 1);
	if (e != cudaSuccess) {
		*p = NULL;
		say(why, cap, "cudaMallocHost", e);
		cudaGetLastError();
		return -1;
	}
	return 0;
}

void CUK(host_free)(struct cuk_ctx *c, void *p)
{
	if (!p)
		return;
	cudaStreamSynchronize(c->stream);
	cudaFreeHost(p);
}

int CUK(upload_now)(struct cuk_ctx *c, void *dst, const void *src, size_t n, char *why, size_t cap)
{
	cudaError_t e = cudaMemcpyAsync(dst, src, n, cudaMemcpyHostToDevice, c->stream);
	if (e == cudaSuccess)
		e = cudaStreamSynchronize(c->stream);
	if (e != cudaSuccess) {
		say(why, cap, "cudaMemcpy (weights)", e);
		return -1;
	}
	return 0;
}

int CUK(reserve_scratch)(struct cuk_ctx *c, size_t bytes, char *why, size_t cap)
{
	if (grow_scratch(c, bytes))
		return 0;
	snprintf(why, cap, "%s", c->err);
	c->failed = false;
	return -1;
}

void CUK(run)(struct cuk_ctx *c, const struct cuk_op *op)
{
	if (c->failed)
		return;
	if (!grow_scratch(c, op_scratch(op)))
		return;
	run_op(c, op);
}

void CUK(run_step)(struct cuk_ctx *c, const struct cuk_op *ops, size_t n, bool same, bool *fallback)
{
	*fallback = false;
	if (c->failed)
		return;
	if (same && c->have_exec && !c->capture_broken) {
		cu_check(c, cudaGraphLaunch(c->exec, c->stream), "cudaGraphLaunch");
		c->st.graphs_replayed++;
		return;
	}
	size_t need = 0;
	for (size_t i = 0; i < n; i++) {
		size_t s = op_scratch(&ops[i]);
		need = s > need ? s : need;
	}
	if (!grow_scratch(c, need))
		return;
	uint64_t l0 = c->launches;
	if (c->capture_broken) {
		for (size_t i = 0; i < n && !c->failed; i++)
			run_op(c, &ops[i]);
		c->st.launches = c->launches - l0;
		return;
	}
	cudaError_t e = cudaStreamBeginCapture(c->stream, cudaStreamCaptureModeThreadLocal);
	cudaGraph_t g = NULL;
	if (e == cudaSuccess) {
		for (size_t i = 0; i < n && !c->failed; i++)
			run_op(c, &ops[i]);
		cudaError_t e2 = cudaStreamEndCapture(c->stream, &g);
		e = c->failed ? cudaErrorStreamCaptureInvalidated : e2;
	}
	if (e == cudaSuccess && c->have_exec) {
		cudaGraphExecUpdateResultInfo info;
		if (cudaGraphExecUpdate(c->exec, g, &info) == cudaSuccess) {
			c->st.graphs_updated++;
		} else {
			cudaGetLastError();
			cudaGraphExecDestroy(c->exec);
			c->have_exec = false;
		}
	}
	if (e == cudaSuccess && !c->have_exec) {
		e = cudaGraphInstantiate(&c->exec, g, 0);
		c->have_exec = e == cudaSuccess;
	}
	if (g)
		cudaGraphDestroy(g);
	if (e != cudaSuccess) {
		/* once: the steps run as plain launches from now on */
		cudaGetLastError();
		c->failed = false;
		c->err[0] = 0;
		c->capture_broken = true;
		c->st.capture_failures++;
		*fallback = true;
		l0 = c->launches;
		for (size_t i = 0; i < n && !c->failed; i++)
			run_op(c, &ops[i]);
		c->st.launches = c->launches - l0;
		return;
	}
	c->st.launches = c->launches - l0;
	c->st.graphs_captured++;
	cu_check(c, cudaGraphLaunch(c->exec, c->stream), "cudaGraphLaunch");
}

int CUK(sync)(struct cuk_ctx *c, uint32_t *status_kind, int64_t *status_value, char *why, size_t cap)
{
	*status_kind = 0;
	*status_value = 0;
	cu_check(c, cudaStreamSynchronize(c->stream), "cudaStreamSynchronize");
	if (!c->failed) {
		cu_check(c, cudaMemcpy(c->status_host, c->status, 16, cudaMemcpyDeviceToHost), "cudaMemcpy (status)");
		if (!c->failed && c->status_host[0]) {
			*status_kind = (uint32_t)c->status_host[0] - 1;
			*status_value = c->status_host[1];
			cu_check(c, cudaMemsetAsync(c->status, 0, 16, c->stream), "cudaMemsetAsync (status)");
			cu_check(c, cudaStreamSynchronize(c->stream), "cudaStreamSynchronize");
		}
	}
	if (c->failed) {
		snprintf(why, cap, "%s", c->err);
		/* a launch error clears; a device fault stays (CUDA's sticky
		 * errors): every later call reports it again */
		c->failed = false;
		c->err[0] = 0;
		return -1;
	}
	return *status_kind ? -1 : 0;
}

void CUK(get_stats)(struct cuk_ctx *c, struct cuk_stats *out) { *out = c->st; }

bool CUK(type_ok)(uint32_t type) { return cu_products_type_ok(type); }

size_t CUK(product_scratch)(uint32_t type, int64_t cols, int64_t ntok) { return cu_products_scratch_for(type, cols, ntok); }

} // extern "C"

namespace tern_cu {

/* each thread sums its float4s; the sum is written only when it is
 * impossible (so the loads are not removed) */
__global__ void k_read_bw(const float4 *p, size_t n, float *sink)
{
	float s = 0;
	size_t stride = (size_t)gridDim.x * blockDim.x;
	for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
		float4 v = p[i];
		s += v.x + v.y + v.z + v.w;
	}
	if (s == -1.2345f)
		*sink = s;
}

} // namespace tern_cu

extern "C" int CUK(read_bandwidth)(struct cuk_ctx *c, size_t bytes, double *gbps, char *why, size_t cap)
{
	*gbps = 0;
	void *buf = NULL;
	cudaEvent_t a = NULL, b = NULL;
	cudaError_t e = cudaMalloc(&buf, bytes + 256);
	if (e == cudaSuccess)
		e = cudaMemsetAsync(buf, 0, bytes + 256, c->stream);
	if (e == cudaSuccess)
		e = cudaEventCreate(&a);
	if (e == cudaSuccess)
		e = cudaEventCreate(&b);
	float best = 0;
	size_t n = bytes / 16;
	unsigned blocks = (unsigned)(c->sms > 0 ? c->sms * 8 : 64);
	for (int rep = 0; rep < 6 && e == cudaSuccess; rep++) {
		cudaEventRecord(a, c->stream);
		CU_LAUNCH(k_read_bw, dim3(blocks), dim3(512), 0, c->stream, (const float4 *)buf, n, (float *)buf + n * 4);
		cudaEventRecord(b, c->stream);
		e = cudaEventSynchronize(b);
		float ms = 0;
		if (e == cudaSuccess)
			e = cudaEventElapsedTime(&ms, a, b);
		/* the first run warms up; the best of the rest */
		if (rep > 0 && ms > 0 && (best == 0 || ms < best))
			best = ms;
	}
	if (a)
		cudaEventDestroy(a);
	if (b)
		cudaEventDestroy(b);
	if (buf)
		cudaFree(buf);
	if (e != cudaSuccess) {
		say(why, cap, "read bandwidth probe", e);
		cudaGetLastError();
		return -1;
	}
	if (best <= 0) {
		snprintf(why, cap, "read bandwidth probe: no timing (an emulated device)");
		return -1;
	}
	*gbps = (double)bytes / (best * 1e-3) / 1e9;
	return 0;
}
