/* cu_emu.h - the CUDA subset gpu/cuda's kernels are written in, run on the
 * CPU: the tests' second way to execute them (no machine here has an
 * NVIDIA GPU, and CI must run every kernel). The same .cu files compile
 * with nvcc for the GPU and, with -DTERN_CUEMU, with the host C++ compiler
 * against this header (gpu/cuda/cu_compat.h chooses).
 *
 * How a launch runs: the blocks one after another; the threads of a block
 * as fibers (each its own stack) switched cooperatively. A thread runs
 * until it reaches a barrier (__syncthreads, __syncwarp, a shuffle, a
 * vote, a warp matrix operation) or returns; the scheduler then runs the
 * next one, in thread order in even blocks and backwards in odd ones. So
 * a kernel that reads shared memory another thread has not yet written
 * (a missing __syncthreads) reads the old contents here too,
 * a warp operation some lanes never reach is a reported deadlock, and a
 * thread's registers (locals) are its own. __shared__ is a static: one
 * instance, shared by the block's threads, because blocks never overlap.
 * What this does not model: several blocks at once (a kernel that waits
 * for another block deadlocks on a GPU and is not written here), memory
 * ordering between blocks, timing.
 *
 * The runtime API (cudaMalloc ... graphs) is emulated in host memory,
 * including stream capture: a captured launch is kept as a closure (its
 * arguments' values at capture time, as a CUDA graph keeps them) and a
 * graph launch runs them again, so a per-step value passed as an argument
 * instead of read from device memory shows as a wrong replay here too.
 *
 * Everything lives in namespace tern_cuemu: its cudaMalloc is not the CUDA
 * runtime's, and a test binary links both. */
#ifndef TERN_CU_EMU_H
#define TERN_CU_EMU_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <functional>
#include <type_traits>

namespace tern_cuemu {

/* ---- launch geometry ---- */

struct dim3 {
	unsigned x, y, z;
	constexpr dim3(unsigned x_ = 1, unsigned y_ = 1, unsigned z_ = 1) : x(x_), y(y_), z(z_) {}
};
struct uint3 {
	unsigned x, y, z;
};

/* one emulated thread (a fiber) */
struct emu_thread {
	uint3 tid;
	unsigned lin;  /* linear index in the block */
	unsigned lane; /* lin % 32 */
	unsigned warp; /* lin / 32 */
	void *sp;      /* saved stack pointer while switched out */
	int state;     /* emu.cpp's */
	unsigned wait_gen; /* the barrier generation it waits to pass */
	int wait_kind;     /* 0 none, 1 block, 2 warp */
};

struct emu_block {
	uint3 bid;
	dim3 bdim, gdim;
	void *dyn_smem;
};

extern thread_local emu_thread *emu_cur;
extern thread_local emu_block *emu_blk;

#define threadIdx (::tern_cuemu::emu_cur->tid)
#define blockIdx (::tern_cuemu::emu_blk->bid)
#define blockDim (::tern_cuemu::emu_blk->bdim)
#define gridDim (::tern_cuemu::emu_blk->gdim)
static const int warpSize = 32;

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline __attribute__((always_inline))
#define __noinline__ __attribute__((noinline))
#define __restrict__ __restrict
#define __launch_bounds__(...)
#define __shared__ static
#define __constant__ static const
#define __align__(n) __attribute__((aligned(n)))

/* ---- barriers and warp operations ---- */

void __syncthreads();
void __syncwarp(unsigned mask = 0xffffffffu);
/* all lanes of mask exchange 8 bytes: out[lane] = what lane src(lane) gave */
uint64_t emu_warp_exchange(unsigned mask, uint64_t v, int src_lane);
/* the lanes of mask that gave a true predicate */
unsigned emu_warp_ballot(unsigned mask, bool pred);
/* the block's dynamic shared memory (the launch's smem bytes) */
void *emu_dyn_smem();
/* flag a misuse of the emulated API (shown by the next stream sync) */
void emu_error(const char *msg);
/* a load of a V from global memory through a V pointer: an address not a
 * multiple of V's size is a fault, as on the GPU (a reported one here) */
template <class V> static inline V emu_load(const void *p)
{
	V v;
	if ((uintptr_t)p % sizeof(V))
		emu_error("a misaligned vector load");
	memcpy(&v, p, sizeof v);
	return v;
}

template <class T> static inline uint64_t emu_bits(T v)
{
	static_assert(sizeof(T) <= 8, "shuffle of more than 8 bytes");
	uint64_t u = 0;
	memcpy(&u, &v, sizeof v);
	return u;
}
template <class T> static inline T emu_from_bits(uint64_t u)
{
	T v;
	memcpy(&v, &u, sizeof v);
	return v;
}
template <class T> static inline T __shfl_sync(unsigned mask, T v, int src, int width = 32)
{
	int lane = (int)emu_cur->lane;
	int base = lane & ~(width - 1);
	return emu_from_bits<T>(emu_warp_exchange(mask, emu_bits(v), base + (src & (width - 1))));
}
template <class T> static inline T __shfl_xor_sync(unsigned mask, T v, int m, int width = 32)
{
	int lane = (int)emu_cur->lane;
	int src = lane ^ m;
	if ((src & ~(width - 1)) != (lane & ~(width - 1)))
		src = lane;
	return emu_from_bits<T>(emu_warp_exchange(mask, emu_bits(v), src));
}
template <class T> static inline T __shfl_down_sync(unsigned mask, T v, unsigned d, int width = 32)
{
	int lane = (int)emu_cur->lane;
	int src = lane + (int)d;
	if ((src & ~(width - 1)) != (lane & ~(width - 1)))
		src = lane;
	return emu_from_bits<T>(emu_warp_exchange(mask, emu_bits(v), src));
}
template <class T> static inline T __shfl_up_sync(unsigned mask, T v, unsigned d, int width = 32)
{
	int lane = (int)emu_cur->lane;
	int src = lane - (int)d;
	if (src < (lane & ~(width - 1)))
		src = lane;
	return emu_from_bits<T>(emu_warp_exchange(mask, emu_bits(v), src));
}
static inline unsigned __ballot_sync(unsigned mask, int pred) { return emu_warp_ballot(mask, pred != 0); }
static inline int __any_sync(unsigned mask, int pred) { return emu_warp_ballot(mask, pred != 0) != 0; }
static inline int __all_sync(unsigned mask, int pred) { return emu_warp_ballot(mask, pred != 0) == (emu_warp_ballot(mask, true)); }
static inline unsigned __activemask() { return emu_warp_ballot(0xffffffffu, true); }

/* ---- atomics: blocks run one at a time and threads switch only at
 * barriers, so a read-modify-write is atomic as it is ---- */

template <class T> static inline T atomicAdd(T *p, T v) { T o = *p; *p = o + v; return o; }
template <class T> static inline T atomicSub(T *p, T v) { T o = *p; *p = o - v; return o; }
template <class T> static inline T atomicMax(T *p, T v) { T o = *p; if (v > o) *p = v; return o; }
template <class T> static inline T atomicMin(T *p, T v) { T o = *p; if (v < o) *p = v; return o; }
template <class T> static inline T atomicOr(T *p, T v) { T o = *p; *p = o | v; return o; }
template <class T> static inline T atomicAnd(T *p, T v) { T o = *p; *p = o & v; return o; }
template <class T> static inline T atomicExch(T *p, T v) { T o = *p; *p = v; return o; }
template <class T> static inline T atomicCAS(T *p, T cmp, T v) { T o = *p; if (o == cmp) *p = v; return o; }
static inline void __threadfence() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
static inline void __threadfence_block() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }

/* ---- integer and float intrinsics ---- */

static inline int __dp4a(int a, int b, int c)
{
	for (int i = 0; i < 4; i++)
		c += (int)(int8_t)(a >> (8 * i)) * (int)(int8_t)(b >> (8 * i));
	return c;
}
static inline unsigned __dp4a(unsigned a, unsigned b, unsigned c)
{
	for (int i = 0; i < 4; i++)
		c += ((a >> (8 * i)) & 255u) * ((b >> (8 * i)) & 255u);
	return c;
}
static inline int __popc(unsigned x) { return __builtin_popcount(x); }
static inline int __popcll(unsigned long long x) { return __builtin_popcountll(x); }
static inline int __clz(int x) { return x ? __builtin_clz((unsigned)x) : 32; }
static inline int __ffs(int x) { return __builtin_ffs(x); }
static inline unsigned __byte_perm(unsigned x, unsigned y, unsigned s)
{
	uint64_t v = ((uint64_t)y << 32) | x;
	unsigned r = 0;
	for (int i = 0; i < 4; i++)
		r |= (unsigned)((v >> (8 * ((s >> (4 * i)) & 7))) & 255u) << (8 * i);
	return r;
}
static inline float __int_as_float(int i) { float f; memcpy(&f, &i, 4); return f; }
static inline int __float_as_int(float f) { int i; memcpy(&i, &f, 4); return i; }
static inline float __uint_as_float(unsigned i) { float f; memcpy(&f, &i, 4); return f; }
static inline unsigned __float_as_uint(float f) { unsigned i; memcpy(&i, &f, 4); return i; }
static inline float rsqrtf(float x) { return 1.0f / sqrtf(x); }
static inline float __expf(float x) { return expf(x); }
static inline float __logf(float x) { return logf(x); }
static inline float __sinf(float x) { return sinf(x); }
static inline float __cosf(float x) { return cosf(x); }
static inline float __fdividef(float a, float b) { return a / b; }
static inline float __saturatef(float x) { return x < 0 ? 0 : x > 1 ? 1 : x; }
static inline float __fmaf_rn(float a, float b, float c) { return fmaf(a, b, c); }
static inline float __fmul_rn(float a, float b) { return a * b; }
static inline float __fadd_rn(float a, float b) { return a + b; }
static inline void sincosf_(float x, float *s, float *c) { *s = sinf(x); *c = cosf(x); }
template <class T> static inline T __ldg(const T *p) { return *p; }
static inline int max(int a, int b) { return a > b ? a : b; }
static inline int min(int a, int b) { return a < b ? a : b; }
static inline unsigned max(unsigned a, unsigned b) { return a > b ? a : b; }
static inline unsigned min(unsigned a, unsigned b) { return a < b ? a : b; }
static inline int64_t max(int64_t a, int64_t b) { return a > b ? a : b; }
static inline int64_t min(int64_t a, int64_t b) { return a < b ? a : b; }
static inline float max(float a, float b) { return fmaxf(a, b); }
static inline float min(float a, float b) { return fminf(a, b); }

/* ---- half and bfloat16: storage types with IEEE round-to-nearest-even
 * conversions (cu_emu.cpp) ---- */

float emu_h2f(uint16_t h);
uint16_t emu_f2h(float f);
struct __half {
	uint16_t x;
	__half() = default;
	__half(float f) : x(emu_f2h(f)) {}
	operator float() const { return emu_h2f(x); }
};
struct __half2 {
	__half x, y;
};
struct __nv_bfloat16 {
	uint16_t x;
	__nv_bfloat16() = default;
	__nv_bfloat16(float f)
	{
		uint32_t u = __float_as_uint(f);
		x = (u & 0x7fffffffu) > 0x7f800000u ? (uint16_t)((u >> 16) | 64) : (uint16_t)((u + 0x7fffu + ((u >> 16) & 1)) >> 16);
	}
	operator float() const { return __uint_as_float((uint32_t)x << 16); }
};
typedef __half half;
static inline float __half2float(__half h) { return emu_h2f(h.x); }
static inline __half __float2half(float f) { __half h; h.x = emu_f2h(f); return h; }
static inline __half __float2half_rn(float f) { return __float2half(f); }
static inline float __bfloat162float(__nv_bfloat16 h) { return (float)h; }
static inline __nv_bfloat16 __float2bfloat16(float f) { return __nv_bfloat16(f); }
static inline unsigned short __half_as_ushort(__half h) { return h.x; }
static inline __half __ushort_as_half(unsigned short u) { __half h; h.x = u; return h; }
static inline __half2 __floats2half2_rn(float a, float b) { return {__float2half(a), __float2half(b)}; }
static inline float __low2float(__half2 h) { return __half2float(h.x); }
static inline float __high2float(__half2 h) { return __half2float(h.y); }

/* ---- vector types ---- */

struct alignas(8) int2 { int x, y; };
struct alignas(16) int4 { int x, y, z, w; };
struct alignas(8) uint2 { unsigned x, y; };
struct alignas(16) uint4 { unsigned x, y, z, w; };
struct alignas(8) float2 { float x, y; };
struct alignas(16) float4 { float x, y, z, w; };
struct char4 { signed char x, y, z, w; };
struct uchar4 { unsigned char x, y, z, w; };
static inline float2 make_float2(float x, float y) { return {x, y}; }
static inline float4 make_float4(float x, float y, float z, float w) { return {x, y, z, w}; }
static inline int2 make_int2(int x, int y) { return {x, y}; }
static inline int4 make_int4(int x, int y, int z, int w) { return {x, y, z, w}; }
static inline uint2 make_uint2(unsigned x, unsigned y) { return {x, y}; }
static inline uint4 make_uint4(unsigned x, unsigned y, unsigned z, unsigned w) { return {x, y, z, w}; }

/* ---- warp matrix operations (nvcuda::wmma): the shapes 16x16x16 with
 * half or bfloat16 inputs and float accumulators, or signed char inputs
 * and int accumulators. A fragment's elements are spread over the warp's
 * lanes in an order of this emulation's own: a kernel may only fill them,
 * scale them all alike, load, store and multiply them (as CUDA's
 * documentation allows), so it works on the GPU whatever the hardware's
 * order is. ---- */
namespace nvcuda {
namespace wmma {
struct matrix_a {};
struct matrix_b {};
struct accumulator {};
struct row_major {};
struct col_major {};
enum layout_t { mem_row_major, mem_col_major };
typedef __nv_bfloat16 emu_bf16;

template <class Use, int M, int N, int K, class T, class Layout = void> struct fragment {
	static constexpr int rows = std::is_same<Use, matrix_b>::value ? K : M;
	static constexpr int cols = std::is_same<Use, matrix_a>::value ? K : N;
	static constexpr int num_elements = rows * cols / 32;
	T x[num_elements];
};

/* lane l holds the row-major elements [l * E, (l + 1) * E) */
template <class Use, int M, int N, int K, class T, class L>
static inline void fill_fragment(fragment<Use, M, N, K, T, L> &f, T v)
{
	for (int i = 0; i < f.num_elements; i++)
		f.x[i] = v;
}
template <class Use, int M, int N, int K, class T, class L, class P>
static inline void emu_load(fragment<Use, M, N, K, T, L> &f, const P *p, unsigned ldm, bool colmajor)
{
	typedef fragment<Use, M, N, K, T, L> F;
	for (int i = 0; i < F::num_elements; i++) {
		int e = (int)emu_cur->lane * F::num_elements + i, r = e / F::cols, c = e % F::cols;
		f.x[i] = colmajor ? p[(size_t)c * ldm + r] : p[(size_t)r * ldm + c];
	}
	__syncwarp();
}
template <class Use, int M, int N, int K, class T, class P>
static inline void load_matrix_sync(fragment<Use, M, N, K, T, row_major> &f, const P *p, unsigned ldm)
{
	emu_load(f, p, ldm, false);
}
template <class Use, int M, int N, int K, class T, class P>
static inline void load_matrix_sync(fragment<Use, M, N, K, T, col_major> &f, const P *p, unsigned ldm)
{
	emu_load(f, p, ldm, true);
}
template <int M, int N, int K, class T, class P>
static inline void load_matrix_sync(fragment<accumulator, M, N, K, T, void> &f, const P *p, unsigned ldm, layout_t l)
{
	emu_load(f, p, ldm, l == mem_col_major);
}
template <int M, int N, int K, class T, class P>
static inline void store_matrix_sync(P *p, const fragment<accumulator, M, N, K, T, void> &f, unsigned ldm, layout_t l)
{
	typedef fragment<accumulator, M, N, K, T, void> F;
	for (int i = 0; i < F::num_elements; i++) {
		int e = (int)emu_cur->lane * F::num_elements + i, r = e / N, c = e % N;
		p[l == mem_col_major ? (size_t)c * ldm + r : (size_t)r * ldm + c] = (P)f.x[i];
	}
	__syncwarp();
}
/* d = a b + c over the whole warp: every lane's share of a and b gathered
 * through the warp's scratch (cu_emu.cpp), exact products summed in order */
void *emu_warp_scratch(size_t bytes);
template <int M, int N, int K, class TA, class LA, class LB, class TC>
static inline void mma_sync(fragment<accumulator, M, N, K, TC, void> &d, const fragment<matrix_a, M, N, K, TA, LA> &a,
			    const fragment<matrix_b, M, N, K, TA, LB> &b, const fragment<accumulator, M, N, K, TC, void> &c)
{
	typedef fragment<matrix_a, M, N, K, TA, LA> FA;
	typedef fragment<matrix_b, M, N, K, TA, LB> FB;
	typedef fragment<accumulator, M, N, K, TC, void> FC;
	TC *sa = (TC *)emu_warp_scratch(sizeof(TC) * (M * K + K * N));
	TC *sb = sa + M * K;
	unsigned lane = emu_cur->lane;
	for (int i = 0; i < FA::num_elements; i++)
		sa[lane * FA::num_elements + i] = (TC)(float)a.x[i];
	for (int i = 0; i < FB::num_elements; i++)
		sb[lane * FB::num_elements + i] = (TC)(float)b.x[i];
	__syncwarp();
	FC out;
	for (int i = 0; i < FC::num_elements; i++) {
		int e = (int)lane * FC::num_elements + i, r = e / N, col = e % N;
		TC s = c.x[i];
		for (int k = 0; k < K; k++)
			s += sa[r * K + k] * sb[k * N + col];
		out.x[i] = s;
	}
	__syncwarp();
	d = out;
}
template <int M, int N, int K, class LA, class LB>
static inline void mma_sync(fragment<accumulator, M, N, K, int, void> &d, const fragment<matrix_a, M, N, K, signed char, LA> &a,
			    const fragment<matrix_b, M, N, K, signed char, LB> &b, const fragment<accumulator, M, N, K, int, void> &c)
{
	typedef fragment<matrix_a, M, N, K, signed char, LA> FA;
	typedef fragment<matrix_b, M, N, K, signed char, LB> FB;
	typedef fragment<accumulator, M, N, K, int, void> FC;
	int *sa = (int *)emu_warp_scratch(sizeof(int) * (M * K + K * N));
	int *sb = sa + M * K;
	unsigned lane = emu_cur->lane;
	for (int i = 0; i < FA::num_elements; i++)
		sa[lane * FA::num_elements + i] = a.x[i];
	for (int i = 0; i < FB::num_elements; i++)
		sb[lane * FB::num_elements + i] = b.x[i];
	__syncwarp();
	FC out;
	for (int i = 0; i < FC::num_elements; i++) {
		int e = (int)lane * FC::num_elements + i, r = e / N, col = e % N;
		int s = c.x[i];
		for (int k = 0; k < K; k++)
			s += sa[r * K + k] * sb[k * N + col];
		out.x[i] = s;
	}
	__syncwarp();
	d = out;
}
} // namespace wmma
} // namespace nvcuda

/* ---- the runtime API, in host memory ---- */

enum cudaError_t {
	cudaSuccess = 0,
	cudaErrorInvalidValue = 1,
	cudaErrorMemoryAllocation = 2,
	cudaErrorNoDevice = 100,
	cudaErrorInvalidDevice = 101,
	cudaErrorLaunchFailure = 719,
	cudaErrorStreamCaptureInvalidated = 901,
	cudaErrorUnknown = 999,
};
enum cudaMemcpyKind {
	cudaMemcpyHostToHost,
	cudaMemcpyHostToDevice,
	cudaMemcpyDeviceToHost,
	cudaMemcpyDeviceToDevice,
	cudaMemcpyDefault
};
enum cudaStreamCaptureMode { cudaStreamCaptureModeGlobal, cudaStreamCaptureModeThreadLocal, cudaStreamCaptureModeRelaxed };
enum cudaGraphExecUpdateResult { cudaGraphExecUpdateSuccess, cudaGraphExecUpdateError };
struct emu_stream;
struct emu_graph;
typedef emu_stream *cudaStream_t;
typedef emu_graph *cudaGraph_t;
typedef emu_graph *cudaGraphExec_t;
typedef struct emu_event *cudaEvent_t;
struct cudaGraphExecUpdateResultInfo {
	cudaGraphExecUpdateResult result;
};

struct cudaDeviceProp {
	char name[256];
	size_t totalGlobalMem;
	size_t sharedMemPerBlock;
	size_t sharedMemPerBlockOptin;
	int warpSize_;
	int maxThreadsPerBlock;
	int major, minor;
	int multiProcessorCount;
	int maxGridSize[3];
	int memoryBusWidth;
	int integrated;
	int l2CacheSize;
};
enum cudaDeviceAttr { cudaDevAttrMemoryClockRate, cudaDevAttrMaxSharedMemoryPerBlockOptin, cudaDevAttrClockRate };
enum cudaFuncAttribute { cudaFuncAttributeMaxDynamicSharedMemorySize };

cudaError_t cudaGetDeviceCount(int *n);
cudaError_t cudaGetDeviceProperties(cudaDeviceProp *p, int dev);
cudaError_t cudaDeviceGetAttribute(int *v, cudaDeviceAttr a, int dev);
cudaError_t cudaSetDevice(int dev);
cudaError_t cudaDriverGetVersion(int *v);
cudaError_t cudaRuntimeGetVersion(int *v);
cudaError_t cudaMemGetInfo(size_t *free_b, size_t *total);
cudaError_t cudaMalloc(void **p, size_t n);
cudaError_t cudaFree(void *p);
cudaError_t cudaMallocHost(void **p, size_t n);
cudaError_t cudaFreeHost(void *p);
cudaError_t cudaMemcpy(void *dst, const void *src, size_t n, cudaMemcpyKind k);
cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t n, cudaMemcpyKind k, cudaStream_t s);
cudaError_t cudaMemsetAsync(void *dst, int v, size_t n, cudaStream_t s);
cudaError_t cudaStreamCreate(cudaStream_t *s);
cudaError_t cudaStreamCreateWithFlags(cudaStream_t *s, unsigned flags);
cudaError_t cudaStreamDestroy(cudaStream_t s);
cudaError_t cudaStreamSynchronize(cudaStream_t s);
cudaError_t cudaDeviceSynchronize();
cudaError_t cudaStreamBeginCapture(cudaStream_t s, cudaStreamCaptureMode m);
cudaError_t cudaStreamEndCapture(cudaStream_t s, cudaGraph_t *g);
cudaError_t cudaGraphInstantiate(cudaGraphExec_t *e, cudaGraph_t g, unsigned long long flags);
cudaError_t cudaGraphExecUpdate(cudaGraphExec_t e, cudaGraph_t g, cudaGraphExecUpdateResultInfo *info);
cudaError_t cudaGraphLaunch(cudaGraphExec_t e, cudaStream_t s);
cudaError_t cudaGraphDestroy(cudaGraph_t g);
cudaError_t cudaGraphExecDestroy(cudaGraphExec_t e);
cudaError_t cudaEventCreate(cudaEvent_t *e);
cudaError_t cudaEventDestroy(cudaEvent_t e);
cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s);
cudaError_t cudaEventSynchronize(cudaEvent_t e);
cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t a, cudaEvent_t b);
cudaError_t cudaGetLastError();
cudaError_t cudaPeekAtLastError();
const char *cudaGetErrorString(cudaError_t e);
const char *cudaGetErrorName(cudaError_t e);
template <class F> static inline cudaError_t cudaFuncSetAttribute(F, cudaFuncAttribute, int) { return cudaSuccess; }
#define cudaStreamNonBlocking 1u
#define cudaHostAllocDefault 0u
#define cudaGraphInstantiateFlagAutoFreeOnLaunch 1ull

/* A kernel launch (CU_LAUNCH): run now, or kept by a capturing stream. */
void emu_launch(dim3 grid, dim3 block, size_t smem, cudaStream_t s, std::function<void()> body);

} // namespace tern_cuemu

#endif
