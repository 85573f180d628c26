/* cu_kern.h - the line between the CUDA backend's two halves: its C side
 * (cu_backend.c: the operation table of lib/backend.h, operand checks,
 * steps) and its CUDA side (the .cu files: device, memory, streams, graphs
 * and the kernels). A C header: plain structs and functions, so the C side
 * compiles with the C compiler and knows nothing of CUDA.
 *
 * An op reaches the CUDA side as a record (struct cuk_op: its kind, its
 * tensors as device addresses with type and shape, its parameters), plain
 * data that memcmp compares: between begin_step and end_step the C side
 * keeps a step's records, and end_step either replays the CUDA graph
 * captured from the same records last time or captures these
 * (cuk_run_step). Outside a step a record runs at once (cuk_run).
 *
 * Both halves are compiled twice: for the GPU (nvcc, the names cuk_*) and
 * for the CPU emulation of the tests (-DTERN_CUEMU, gpu/cuda/emu: the
 * names cuemuk_*), so that one test binary can hold both. */
#ifndef TERN_CU_KERN_H
#define TERN_CU_KERN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#ifdef TERN_CUEMU
#define CUK(f) tern_cuemuk_##f
#define cuk_ctx cuemuk_ctx /* a type of its own: a test binary holds both */
#else
#define CUK(f) tern_cuk_##f
#endif

/* A tensor as kernels see it: the device address of element 0, the type
 * (enum quant_type) and lib/backend.h's shape and byte strides. p == NULL:
 * absent (an optional operand). */
struct cuk_t {
	void *p;
	uint32_t type;
	uint32_t pad_;
	int64_t ne[4];
	int64_t nb[4];
};

enum cuk_kind {
	CUK_NONE,
	CUK_H2D,   /* copy: dst device, src host (pinned staging or host_alloc memory), n */
	CUK_D2H,   /* copy: dst host, src device, n */
	CUK_D2D,   /* copy: device to device, n */
	CUK_FILL,  /* fill: n bytes at dst with the byte value */
	CUK_PRODUCT,
	CUK_MAT_MUL_HEADS,
	CUK_MAT_MUL_ID,
	CUK_MOE_ROUTE,
	CUK_MOE_COMBINE,
	CUK_GET_ROWS,
	CUK_NORM,
	CUK_ROPE,
	CUK_NORM_ROPE,
	CUK_KV_STORE,
	CUK_ATTENTION,
	CUK_IM2COL,
	CUK_GLU,
	CUK_UNARY,
	CUK_ADD,
	CUK_SCALE,
	CUK_SOFTMAX,
	CUK_COPY,
	CUK_ARGMAX, /* t: x, ids */
	CUK_COUNT
};

/* lib/backend.h's parameter structs, without pointers */
struct cuk_rope {
	int32_t mode, n_rot;
	float freq_base, freq_scale, ext_factor, corr_low, corr_high, mscale, attn_factor;
};
struct cuk_norm {
	int32_t kind; /* TERN_NORM_* */
	float eps;
};

/* One op. t[] holds its tensors in the order each kind lists; absent
 * optional ones have p == NULL. */
struct cuk_op {
	uint32_t kind; /* enum cuk_kind */
	uint32_t n_t;  /* tensors used in t[] */
	union {
		struct { void *dst; const void *src; size_t n; int value; } copy; /* H2D D2H D2D FILL */
		struct { int32_t n_w; } product;          /* t: w[0..n_w-1], x, y[0..n_w-1] at 4 + i (i < n_w): t[0..3] w, t[4] x, t[5..8] y */
		struct { int32_t gating, k, norm, n_group, n_group_used; float scale; } moe_route; /* t: logits, bias, ids, weights */
		struct { struct cuk_norm n; } norm;       /* t: x, r, w, b, y */
		struct { struct cuk_rope r; } rope;       /* t: x, pos, freq */
		struct { struct cuk_norm n; struct cuk_rope r; } norm_rope; /* t: q, k, qw, kw, pos, freq */
		struct { float scale, softcap; int32_t window; } attn; /* t: q, k, v, pos, seq, y, sinks */
		struct { int32_t k, stride, pad; } im2col; /* t: x, y */
		struct { int32_t kind; } glu;              /* t: gate, up, y */
		struct { int32_t kind; } unary;            /* t: x, y */
		struct { float s; } scale;                 /* t: x, y */
	} u;
	/* MAT_MUL_HEADS t: w, x, y; MAT_MUL_ID t: w, x, ids, b, y; MOE_COMBINE t: x, w, y;
	 * GET_ROWS t: w, ids, y; KV_STORE t: cache, x, pos, seq; ADD t: a, b, y;
	 * SOFTMAX t: x, y; COPY t: src, dst */
	struct cuk_t t[9];
};

/* What the device is. */
struct cuk_dev {
	char name[256];
	size_t total, free;         /* bytes: cudaMemGetInfo */
	int major, minor;           /* compute capability */
	int sms;
	int smem_optin;             /* shared memory a block may opt into */
	int driver, runtime;        /* versions, 1000 major + 10 minor */
	bool integrated;
	bool emulated;              /* the CPU emulation (tests) */
};

/* Devices present: 0 without a driver or a device (why says which). */
int CUK(device_count)(char *why, size_t cap);
int CUK(device_props)(int dev, struct cuk_dev *out, char *why, size_t cap);

/* A context on a device: its stream, its status word (kernels flag bad
 * ids and positions there: sync reports them), the activations' scratch,
 * the captured step. */
struct cuk_ctx;
/* ctx_new's flags (tests): the GEMM in SIMT f32; the mat-vec in f32, without dp4a */
enum { CUK_NO_TENSOR_CORES = 1, CUK_NO_INT_DOT = 2 };
int CUK(ctx_new)(int dev, unsigned flags, struct cuk_ctx **out, char *why, size_t cap);
void CUK(ctx_free)(struct cuk_ctx *c);

/* Device memory; 0, or -1 and why (out of memory: *oom set). */
int CUK(malloc)(struct cuk_ctx *c, void **p, size_t n, bool *oom, char *why, size_t cap);
void CUK(free)(struct cuk_ctx *c, void *p);
int CUK(host_alloc)(struct cuk_ctx *c, void **p, size_t n, char *why, size_t cap);
void CUK(host_free)(struct cuk_ctx *c, void *p);
/* A blocking copy to the device (loading weights); 0 or -1 and why. */
int CUK(upload_now)(struct cuk_ctx *c, void *dst, const void *src, size_t n, char *why, size_t cap);
/* The products' scratch: at least bytes of device memory (load time). */
int CUK(reserve_scratch)(struct cuk_ctx *c, size_t bytes, char *why, size_t cap);

/* Bytes of scratch the products of a weight of type over cols take for
 * ntok rows of activations. */
size_t CUK(product_scratch)(uint32_t type, int64_t cols, int64_t ntok);

/* Run one op now (enqueued on the stream). */
void CUK(run)(struct cuk_ctx *c, const struct cuk_op *op);
/* Run a step's ops: same (the C side compared them with the previous
 * step's records): launch the graph captured then; else capture these
 * into a graph (updating the executable graph where CUDA can) and launch
 * it; a capture that fails runs them as plain launches, and *fallback
 * says so (the C side then stops capturing). */
void CUK(run_step)(struct cuk_ctx *c, const struct cuk_op *ops, size_t n, bool same, bool *fallback);
/* Wait for the stream. 0; or -1 and why: a CUDA error (naming the call
 * and CUDA's string), or the op kind and value flagged in the status word
 * (*status_kind, *status_value; the C side words the message). */
int CUK(sync)(struct cuk_ctx *c, uint32_t *status_kind, int64_t *status_value, char *why, size_t cap);

/* Launches the last run_step made (plain or replayed: 1 for a graph). */
struct cuk_stats {
	uint64_t launches, graphs_captured, graphs_replayed, graphs_updated, capture_failures;
};
void CUK(get_stats)(struct cuk_ctx *c, struct cuk_stats *out);

/* The device's read bandwidth in GB/s: a kernel reading bytes repeatedly. */
int CUK(read_bandwidth)(struct cuk_ctx *c, size_t bytes, double *gbps, char *why, size_t cap);

/* The weight types the products take (quant types with a device
 * decoder). */
bool CUK(type_ok)(uint32_t type);

#ifdef __cplusplus
}
#endif

#endif
