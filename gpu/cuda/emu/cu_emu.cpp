/* cu_emu.cpp - the CPU emulation of CUDA that cu_emu.h declares: the block
 * scheduler (threads as fibers switched at barriers), warp exchanges,
 * half conversions, and the runtime API in host memory with stream
 * capture and graph replay. Test infrastructure: it is built only into the
 * test binaries (Makefile, TERN_CUEMU). */
#include "gpu/cuda/emu/cu_emu.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>

#include <vector>

#if !defined(__x86_64__)
#include <ucontext.h>
#endif

namespace tern_cuemu {

thread_local emu_thread *emu_cur;
thread_local emu_block *emu_blk;

/* ---- the sticky error (as a CUDA context's after a kernel fault) ---- */

static char g_err[512];
static bool g_failed;

void emu_error(const char *msg)
{
	if (!g_failed)
		snprintf(g_err, sizeof g_err, "emulated kernel fault: %s", msg);
	g_failed = true;
}

static void emu_errorf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void emu_errorf(const char *fmt, ...)
{
	char m[400];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(m, sizeof m, fmt, ap);
	va_end(ap);
	emu_error(m);
}

/* ---- fibers ---- */

enum { T_READY, T_WAIT, T_DONE };
enum { W_NONE, W_BLOCK, W_WARP };

#define EMU_MAX_THREADS 1024
#define EMU_STACK (256u << 10)

struct block_state {
	emu_thread th[EMU_MAX_THREADS];
	unsigned n, n_exited;
	unsigned bar_count, bar_gen;
	unsigned wcount[32], wgen[32], wmask[32], wexited[32], wlanes[32];
	unsigned wexited_mask[32];
	uint64_t slot[32][32];
	alignas(64) char scratch[32][8192];
	void *sched_sp;
	const std::function<void()> *body;
	uint8_t *stacks;
};

static block_state *g_bs;

#if defined(__x86_64__)
extern "C" void tern_cuemu_switch(void **save_sp, void *to_sp);
extern "C" void tern_cuemu_entry(void);
/* save the callee-saved registers on the current stack, switch stacks,
 * restore the other's: a fiber switch is a function call */
__asm__(".text\n"
	".globl tern_cuemu_switch\n"
	".type tern_cuemu_switch,@function\n"
	"tern_cuemu_switch:\n"
	"\tpushq %rbp\n\tpushq %rbx\n\tpushq %r12\n\tpushq %r13\n\tpushq %r14\n\tpushq %r15\n"
	"\tmovq %rsp, (%rdi)\n"
	"\tmovq %rsi, %rsp\n"
	"\tpopq %r15\n\tpopq %r14\n\tpopq %r13\n\tpopq %r12\n\tpopq %rbx\n\tpopq %rbp\n"
	"\tret\n"
	".size tern_cuemu_switch, .-tern_cuemu_switch\n");

static void to_fiber(emu_thread *t) { tern_cuemu_switch(&g_bs->sched_sp, t->sp); }
static void to_sched(emu_thread *t) { tern_cuemu_switch(&t->sp, g_bs->sched_sp); }
static void *fiber_init(uint8_t *stack_top)
{
	uintptr_t top = (uintptr_t)stack_top & ~(uintptr_t)15;
	uint64_t *sp = (uint64_t *)top;
	*--sp = 0;                              /* the entry's return address: never used */
	*--sp = (uint64_t)(uintptr_t)tern_cuemu_entry; /* where the switch's ret goes */
	for (int i = 0; i < 6; i++)
		*--sp = 0; /* rbp rbx r12 r13 r14 r15 */
	return sp;
}
#else
static thread_local ucontext_t g_sched_uc, g_uc[EMU_MAX_THREADS];
extern "C" void tern_cuemu_entry(void);
static void to_fiber(emu_thread *t) { swapcontext(&g_sched_uc, &g_uc[t->lin]); }
static void to_sched(emu_thread *t) { swapcontext(&g_uc[t->lin], &g_sched_uc); }
#endif

static void yield_to_sched() { to_sched(emu_cur); }

static void thread_exit(emu_thread *t)
{
	block_state *b = g_bs;
	t->state = T_DONE;
	b->n_exited++;
	b->wexited[t->warp]++;
	b->wexited_mask[t->warp] |= 1u << t->lane;
	/* an exited thread counts as arrived at the barriers it will never reach */
	if (b->bar_count && b->bar_count + b->n_exited >= b->n) {
		b->bar_count = 0;
		b->bar_gen++;
	}
}

extern "C" void tern_cuemu_entry(void)
{
	emu_thread *t = emu_cur;
	(*g_bs->body)();
	thread_exit(t);
	to_sched(t);
	abort(); /* never resumed */
}

void __syncthreads()
{
	block_state *b = g_bs;
	emu_thread *t = emu_cur;
	__asm__ volatile("" ::: "memory");
	unsigned g = b->bar_gen;
	if (++b->bar_count + b->n_exited >= b->n) {
		b->bar_count = 0;
		b->bar_gen++;
		return;
	}
	t->wait_kind = W_BLOCK;
	t->wait_gen = g;
	t->state = T_WAIT;
	yield_to_sched();
	__asm__ volatile("" ::: "memory");
}

/* the lanes of mask that exist in t's warp and have not exited */
static unsigned warp_live(block_state *b, unsigned w, unsigned mask)
{
	unsigned present = b->wlanes[w] >= 32 ? 0xffffffffu : (1u << b->wlanes[w]) - 1;
	return mask & present & ~b->wexited_mask[w];
}

static void warp_barrier(unsigned mask)
{
	block_state *b = g_bs;
	emu_thread *t = emu_cur;
	unsigned w = t->warp;
	__asm__ volatile("" ::: "memory");
	if (!(mask >> t->lane & 1))
		emu_errorf("a warp operation by lane %u whose mask 0x%08x leaves it out", t->lane, mask);
	if (b->wcount[w] == 0)
		b->wmask[w] = mask;
	else if (b->wmask[w] != mask)
		emu_errorf("lanes of warp %u in warp operations of different masks (0x%08x, 0x%08x)", w, b->wmask[w], mask);
	if (b->wexited_mask[w] & mask)
		emu_errorf("a warp operation of mask 0x%08x after lanes 0x%08x of warp %u exited", mask,
			   b->wexited_mask[w] & mask, w);
	unsigned g = b->wgen[w];
	if (++b->wcount[w] >= (unsigned)__builtin_popcount(warp_live(b, w, mask))) {
		b->wcount[w] = 0;
		b->wgen[w]++;
		return;
	}
	t->wait_kind = W_WARP;
	t->wait_gen = g;
	t->state = T_WAIT;
	yield_to_sched();
	__asm__ volatile("" ::: "memory");
}

void __syncwarp(unsigned mask) { warp_barrier(mask); }

uint64_t emu_warp_exchange(unsigned mask, uint64_t v, int src)
{
	block_state *b = g_bs;
	emu_thread *t = emu_cur;
	b->slot[t->warp][t->lane] = v;
	warp_barrier(mask);
	uint64_t r = v;
	if (src < 0 || src > 31 || !(warp_live(b, t->warp, mask) >> src & 1))
		emu_errorf("a shuffle from lane %d, not in the mask 0x%08x", src, mask);
	else
		r = b->slot[t->warp][src];
	warp_barrier(mask);
	return r;
}

unsigned emu_warp_ballot(unsigned mask, bool pred)
{
	block_state *b = g_bs;
	emu_thread *t = emu_cur;
	b->slot[t->warp][t->lane] = pred;
	warp_barrier(mask);
	unsigned live = warp_live(b, t->warp, mask), r = 0;
	for (int l = 0; l < 32; l++)
		if ((live >> l & 1) && b->slot[t->warp][l])
			r |= 1u << l;
	warp_barrier(mask);
	return r;
}

namespace nvcuda {
namespace wmma {
void *emu_warp_scratch(size_t bytes)
{
	if (bytes > sizeof g_bs->scratch[0])
		abort();
	return g_bs->scratch[emu_cur->warp];
}
} // namespace wmma
} // namespace nvcuda

void *emu_dyn_smem() { return emu_blk->dyn_smem; }

static bool released(const block_state *b, const emu_thread *t)
{
	if (t->wait_kind == W_BLOCK)
		return b->bar_gen != t->wait_gen;
	return b->wgen[t->warp] != t->wait_gen;
}

/* One block: every thread a fiber, run round robin until all returned. */
static void run_block(block_state *b, unsigned n)
{
	b->n = n;
	b->n_exited = b->bar_count = b->bar_gen = 0;
	for (unsigned w = 0; w < 32; w++) {
		b->wcount[w] = b->wgen[w] = b->wexited[w] = b->wexited_mask[w] = 0;
		b->wlanes[w] = n > w * 32 ? (n - w * 32 < 32 ? n - w * 32 : 32) : 0;
	}
	dim3 bd = emu_blk->bdim;
	for (unsigned i = 0; i < n; i++) {
		emu_thread *t = &b->th[i];
		t->tid = uint3{i % bd.x, i / bd.x % bd.y, i / (bd.x * bd.y)};
		t->lin = i;
		t->lane = i % 32;
		t->warp = i / 32;
		t->state = T_READY;
		t->wait_kind = W_NONE;
#if defined(__x86_64__)
		t->sp = fiber_init(b->stacks + (size_t)(i + 1) * EMU_STACK);
#else
		getcontext(&g_uc[i]);
		g_uc[i].uc_stack.ss_sp = b->stacks + (size_t)i * EMU_STACK;
		g_uc[i].uc_stack.ss_size = EMU_STACK;
		g_uc[i].uc_link = NULL;
		makecontext(&g_uc[i], tern_cuemu_entry, 0);
#endif
	}
	/* every other block runs its threads from the last: a thread that
	 * reads what another writes without a barrier between them sees the
	 * old contents in one order or the other, whichever it depends on */
	bool rev = (emu_blk->bid.x + emu_blk->bid.y + emu_blk->bid.z) & 1;
	while (b->n_exited < n) {
		bool ran = false;
		for (unsigned k = 0; k < n; k++) {
			emu_thread *t = &b->th[rev ? n - 1 - k : k];
			if (t->state == T_DONE || (t->state == T_WAIT && !released(b, t)))
				continue;
			t->state = T_READY;
			t->wait_kind = W_NONE;
			emu_cur = t;
			to_fiber(t);
			ran = true;
		}
		if (!ran) {
			emu_errorf("deadlock in block (%u,%u,%u): threads wait at barriers the others never reach",
				   emu_blk->bid.x, emu_blk->bid.y, emu_blk->bid.z);
			break;
		}
	}
	emu_cur = NULL;
}

static void run_kernel(dim3 grid, dim3 block, size_t smem, const std::function<void()> &body)
{
	unsigned n = block.x * block.y * block.z;
	if (n == 0 || n > EMU_MAX_THREADS || grid.x == 0 || grid.y == 0 || grid.z == 0 || grid.y > 65535 ||
	    grid.z > 65535 || smem > (227u << 10)) {
		emu_errorf("invalid launch: grid (%u,%u,%u), block (%u,%u,%u), %zu bytes of shared memory", grid.x,
			   grid.y, grid.z, block.x, block.y, block.z, smem);
		return;
	}
	if (g_failed)
		return; /* a faulted context runs nothing more */
	if (!g_bs) {
		g_bs = (block_state *)calloc(1, sizeof *g_bs);
		void *st = mmap(NULL, (size_t)EMU_MAX_THREADS * EMU_STACK, PROT_READ | PROT_WRITE,
				MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		if (!g_bs || st == MAP_FAILED) {
			fprintf(stderr, "cu_emu: out of memory for the fibers\n");
			abort();
		}
		g_bs->stacks = (uint8_t *)st;
	}
	std::vector<uint8_t> dyn(smem ? smem : 1, 0xff); /* NaNs: shared memory starts undefined */
	emu_block blk;
	blk.bdim = block;
	blk.gdim = grid;
	blk.dyn_smem = dyn.data();
	emu_block *saved = emu_blk;
	emu_blk = &blk;
	g_bs->body = &body;
	for (unsigned z = 0; z < grid.z && !g_failed; z++)
		for (unsigned y = 0; y < grid.y && !g_failed; y++)
			for (unsigned x = 0; x < grid.x && !g_failed; x++) {
				blk.bid = uint3{x, y, z};
				run_block(g_bs, n);
			}
	emu_blk = saved;
}

/* ---- half ---- */

float emu_h2f(uint16_t h)
{
	uint32_t s = (uint32_t)(h & 0x8000) << 16, e = (h >> 10) & 31, m = h & 1023, u;
	if (e == 31)
		u = s | 0x7f800000u | (m << 13);
	else if (e)
		u = s | ((e + 112) << 23) | (m << 13);
	else if (!m)
		u = s;
	else {
		e = 113;
		while (!(m & 1024)) {
			m <<= 1;
			e--;
		}
		u = s | (e << 23) | ((m & 1023) << 13);
	}
	return __uint_as_float(u);
}

uint16_t emu_f2h(float f)
{
	uint32_t u = __float_as_uint(f), s = (u >> 16) & 0x8000, a = u & 0x7fffffffu;
	if (a > 0x7f800000u)
		return (uint16_t)(s | 0x7e00 | ((a >> 13) & 0x3ff));
	if (a >= 0x477ff000u) /* rounds to infinity */
		return (uint16_t)(s | 0x7c00);
	if (a < 0x38800000u) { /* a subnormal half (or zero): round at 2^-24 */
		float v = __uint_as_float(a) * 16777216.0f; /* exact: a power of two */
		return (uint16_t)(s | (uint32_t)nearbyintf(v));
	}
	uint32_t r = a + 0xfffu + ((a >> 13) & 1);
	return (uint16_t)(s | ((r - 0x38000000u) >> 13));
}

/* ---- the runtime ---- */

struct emu_node {
	int kind; /* 0 kernel, 1 copy, 2 set */
	dim3 grid, block;
	size_t smem;
	std::function<void()> body;
	void *dst;
	const void *src;
	size_t n;
	int value;
};

struct emu_graph {
	std::vector<emu_node> nodes;
};

struct emu_stream {
	bool capturing;
	emu_graph *graph;
};

struct emu_event {
	int dummy;
};

static size_t g_total = (size_t)4 << 30, g_used;
static cudaError_t g_last = cudaSuccess;

static cudaError_t set_last(cudaError_t e)
{
	if (e != cudaSuccess)
		g_last = e;
	return e;
}

static void run_node(const emu_node &n)
{
	if (n.kind == 0)
		run_kernel(n.grid, n.block, n.smem, n.body);
	else if (n.kind == 1 && !g_failed)
		memmove(n.dst, n.src, n.n);
	else if (n.kind == 2 && !g_failed)
		memset(n.dst, n.value, n.n);
}

static cudaError_t submit(cudaStream_t s, emu_node &&n)
{
	if (s && s->capturing) {
		s->graph->nodes.push_back(std::move(n));
		return cudaSuccess;
	}
	run_node(n);
	return cudaSuccess;
}

void emu_launch(dim3 grid, dim3 block, size_t smem, cudaStream_t s, std::function<void()> body)
{
	emu_node n{};
	n.kind = 0;
	n.grid = grid;
	n.block = block;
	n.smem = smem;
	n.body = std::move(body);
	submit(s, std::move(n));
}

cudaError_t cudaGetDeviceCount(int *n)
{
	*n = 1;
	return cudaSuccess;
}

cudaError_t cudaGetDeviceProperties(cudaDeviceProp *p, int dev)
{
	if (dev != 0)
		return set_last(cudaErrorInvalidDevice);
	memset(p, 0, sizeof *p);
	snprintf(p->name, sizeof p->name, "tern CUDA emulator (CPU)");
	p->totalGlobalMem = g_total;
	p->sharedMemPerBlock = 48u << 10;
	p->sharedMemPerBlockOptin = 163u << 10;
	p->warpSize_ = 32;
	p->maxThreadsPerBlock = 1024;
	p->major = 8;
	p->minor = 0;
	p->multiProcessorCount = 4;
	p->maxGridSize[0] = 0x7fffffff;
	p->maxGridSize[1] = p->maxGridSize[2] = 65535;
	p->memoryBusWidth = 64;
	p->l2CacheSize = 1 << 20;
	return cudaSuccess;
}

cudaError_t cudaDeviceGetAttribute(int *v, cudaDeviceAttr a, int dev)
{
	(void)dev;
	*v = a == cudaDevAttrMaxSharedMemoryPerBlockOptin ? 163 << 10 : 1000000;
	return cudaSuccess;
}

cudaError_t cudaSetDevice(int dev) { return dev == 0 ? cudaSuccess : set_last(cudaErrorInvalidDevice); }
cudaError_t cudaDriverGetVersion(int *v) { *v = 13000; return cudaSuccess; }
cudaError_t cudaRuntimeGetVersion(int *v) { *v = 13000; return cudaSuccess; }

cudaError_t cudaMemGetInfo(size_t *free_b, size_t *total)
{
	*free_b = g_total - g_used;
	*total = g_total;
	return cudaSuccess;
}

/* each allocation carries its size in front, for the budget */
cudaError_t cudaMalloc(void **p, size_t n)
{
	*p = NULL;
	if (n > g_total - g_used)
		return set_last(cudaErrorMemoryAllocation);
	void *m = NULL;
	if (posix_memalign(&m, 256, n + 256))
		return set_last(cudaErrorMemoryAllocation);
	*(size_t *)m = n;
	g_used += n;
	*p = (uint8_t *)m + 256;
	return cudaSuccess;
}

cudaError_t cudaFree(void *p)
{
	if (!p)
		return cudaSuccess;
	uint8_t *m = (uint8_t *)p - 256;
	g_used -= *(size_t *)m;
	free(m);
	return cudaSuccess;
}

cudaError_t cudaMallocHost(void **p, size_t n)
{
	*p = NULL;
	if (posix_memalign(p, 64, n ? n : 1))
		return set_last(cudaErrorMemoryAllocation);
	return cudaSuccess;
}

cudaError_t cudaFreeHost(void *p)
{
	free(p);
	return cudaSuccess;
}

cudaError_t cudaMemcpy(void *dst, const void *src, size_t n, cudaMemcpyKind k)
{
	(void)k;
	if (!g_failed)
		memmove(dst, src, n);
	return g_failed ? cudaErrorLaunchFailure : cudaSuccess;
}

cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t n, cudaMemcpyKind k, cudaStream_t s)
{
	(void)k;
	emu_node nd{};
	nd.kind = 1;
	nd.dst = dst;
	nd.src = src;
	nd.n = n;
	return submit(s, std::move(nd));
}

cudaError_t cudaMemsetAsync(void *dst, int v, size_t n, cudaStream_t s)
{
	emu_node nd{};
	nd.kind = 2;
	nd.dst = dst;
	nd.n = n;
	nd.value = v;
	return submit(s, std::move(nd));
}

cudaError_t cudaStreamCreate(cudaStream_t *s)
{
	*s = new emu_stream{false, NULL};
	return cudaSuccess;
}
cudaError_t cudaStreamCreateWithFlags(cudaStream_t *s, unsigned flags)
{
	(void)flags;
	return cudaStreamCreate(s);
}
cudaError_t cudaStreamDestroy(cudaStream_t s)
{
	if (s)
		delete s->graph;
	delete s;
	return cudaSuccess;
}
cudaError_t cudaStreamSynchronize(cudaStream_t s)
{
	(void)s;
	return g_failed ? cudaErrorLaunchFailure : cudaSuccess;
}
cudaError_t cudaDeviceSynchronize() { return cudaStreamSynchronize(NULL); }

cudaError_t cudaStreamBeginCapture(cudaStream_t s, cudaStreamCaptureMode m)
{
	(void)m;
	if (!s || s->capturing)
		return set_last(cudaErrorInvalidValue);
	s->capturing = true;
	s->graph = new emu_graph;
	return cudaSuccess;
}

cudaError_t cudaStreamEndCapture(cudaStream_t s, cudaGraph_t *g)
{
	if (!s || !s->capturing)
		return set_last(cudaErrorInvalidValue);
	s->capturing = false;
	*g = s->graph;
	s->graph = NULL;
	return cudaSuccess;
}

cudaError_t cudaGraphInstantiate(cudaGraphExec_t *e, cudaGraph_t g, unsigned long long flags)
{
	(void)flags;
	*e = new emu_graph(*g);
	return cudaSuccess;
}

/* as CUDA's: only the same topology (here: the same kinds of node in the
 * same order) updates in place */
cudaError_t cudaGraphExecUpdate(cudaGraphExec_t e, cudaGraph_t g, cudaGraphExecUpdateResultInfo *info)
{
	bool same = e->nodes.size() == g->nodes.size();
	for (size_t i = 0; same && i < g->nodes.size(); i++)
		same = e->nodes[i].kind == g->nodes[i].kind;
	if (info)
		info->result = same ? cudaGraphExecUpdateSuccess : cudaGraphExecUpdateError;
	if (!same)
		return set_last(cudaErrorInvalidValue); /* cudaErrorGraphExecUpdateFailure in CUDA */
	e->nodes = g->nodes;
	return cudaSuccess;
}

cudaError_t cudaGraphLaunch(cudaGraphExec_t e, cudaStream_t s)
{
	if (s && s->capturing)
		return set_last(cudaErrorInvalidValue);
	for (const emu_node &n : e->nodes)
		run_node(n);
	return cudaSuccess;
}

cudaError_t cudaGraphDestroy(cudaGraph_t g)
{
	delete g;
	return cudaSuccess;
}
cudaError_t cudaGraphExecDestroy(cudaGraphExec_t e)
{
	delete e;
	return cudaSuccess;
}

cudaError_t cudaEventCreate(cudaEvent_t *e)
{
	*e = new emu_event{0};
	return cudaSuccess;
}
cudaError_t cudaEventDestroy(cudaEvent_t e)
{
	delete e;
	return cudaSuccess;
}
cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s)
{
	(void)e;
	(void)s;
	return cudaSuccess;
}
cudaError_t cudaEventSynchronize(cudaEvent_t e)
{
	(void)e;
	return cudaSuccess;
}
cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t a, cudaEvent_t b)
{
	(void)a;
	(void)b;
	*ms = 0;
	return cudaSuccess;
}

cudaError_t cudaGetLastError()
{
	cudaError_t e = g_failed ? cudaErrorLaunchFailure : g_last;
	g_last = cudaSuccess;
	return e;
}
cudaError_t cudaPeekAtLastError() { return g_failed ? cudaErrorLaunchFailure : g_last; }

const char *cudaGetErrorString(cudaError_t e)
{
	switch (e) {
	case cudaSuccess: return "no error";
	case cudaErrorInvalidValue: return "invalid argument";
	case cudaErrorMemoryAllocation: return "out of memory";
	case cudaErrorNoDevice: return "no CUDA-capable device is detected";
	case cudaErrorInvalidDevice: return "invalid device ordinal";
	case cudaErrorLaunchFailure: return g_failed ? g_err : "unspecified launch failure";
	default: return "unknown error";
	}
}
const char *cudaGetErrorName(cudaError_t e)
{
	switch (e) {
	case cudaSuccess: return "cudaSuccess";
	case cudaErrorInvalidValue: return "cudaErrorInvalidValue";
	case cudaErrorMemoryAllocation: return "cudaErrorMemoryAllocation";
	case cudaErrorLaunchFailure: return "cudaErrorLaunchFailure";
	default: return "cudaErrorUnknown";
	}
}

} // namespace tern_cuemu

/* The emulated device's memory (tests of the planner): total bytes, and
 * the sticky fault cleared (a test that provokes one starts a new one). */
extern "C" void tern_cuemu_reset(size_t total)
{
	if (total)
		tern_cuemu::g_total = total;
	tern_cuemu::g_failed = false;
	tern_cuemu::g_last = tern_cuemu::cudaSuccess;
}
