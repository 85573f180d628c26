/* matmul.h - the CPU's threaded products of a quantized weight matrix with
 * a batch of f32 activation rows (mat-vec for one token, mat-mat for a
 * prompt batch), split into a load-time prepare and a run that cannot fail.
 *
 * cpu_mm_prepare() checks everything that can be wrong (weight type, as
 * quant_is_weight_type() says; shape, row stride, batch bound), chooses the
 * path of every batch size (per-row dot tiles, or from
 * quant_gemm_min_tokens() on the panel GEMM of quant/gemm.h where the CPU
 * has one), sizes the scratch and, when asked, converts the weights once
 * into GEMM panels. cpu_mm_run() then only computes: it checks nothing,
 * allocates nothing and returns nothing.
 *
 * Activations are quantized once per call to the type the weights pair
 * with (quant_vec_dot_type) into the caller's scratch; the threads of the
 * pool share the output rows. The result does not depend on the thread
 * count. The kernel choice (quant_isa()) is read at prepare time and must
 * not be forced to another ISA while a prepared matrix is in use. */
#ifndef TERN_CPU_MATMUL_H
#define TERN_CPU_MATMUL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/core/error.h"
#include "lib/cpu/threadpool.h"

/* Load-time conversion of the weights into the GEMM's panel layout
 * (quant/gemm.h), which costs a second copy of the matrix in memory:
 *   NONE   every call converts 16 rows at a time into a per-thread panel
 *          (the conversion is repaid by the tokens of the batch);
 *   BATCH  batches that take the GEMM read the stored panels, one token
 *          still reads the file's rows (both copies stay resident);
 *   ALL    every product reads the panels, one token included (the
 *          file's pages are no longer touched and may be dropped).
 * Measured with scripts/bench_repack.c (numbers in README, "Layout"): BATCH
 * pays for short batches (20-49% at 32 tokens), hardly at 512; ALL makes
 * one token 2-3x slower (the GEMM kernel fills one of its 8 token lanes and
 * the panels are larger than the file's rows). NONE is the default. */
enum cpu_mm_repack { CPU_MM_REPACK_NONE = 0, CPU_MM_REPACK_BATCH, CPU_MM_REPACK_ALL };

/* The interleaved layout (quant_mvx_ok: Q4_0 rows of a multiple of 512
 * elements, AVX-512 VNNI): with relay set and no repack, the matrix is
 * copied once into it and every product reads the copy. One token goes
 * through quant_mvx_tile (1.65-1.9x the file layout's rate in L2, 2
 * threads; decode of Q4_0 is then bound by memory, not by the kernel);
 * batches read the copy back into the file's layout 16 rows at a time,
 * into per-thread scratch, with the same bits as without it. The file's
 * rows are no longer read, so the caller may drop their pages. */
struct cpu_mm_opts {
	int64_t max_tokens;        /* largest batch cpu_mm_run() gets, 1..CPU_MM_MAX_TOKENS */
	enum cpu_mm_repack repack;
	bool relay;                /* allow the interleaved copy */
	bool drop_source;          /* w is a model file's mapping (tern_map_file): drop its pages as the
				    * interleaved copy takes the rows over (tern_map_drop) */
};

#define CPU_MM_MAX_TOKENS (1 << 20)

/* A weight matrix prepared for the products. Fields are read-only after
 * cpu_mm_prepare(); the weights stay the caller's (e.g. a view into the
 * model file's mapping) and must outlive the matrix. */
struct cpu_mm {
	uint32_t wtype, at;     /* weight type; activation type it pairs with */
	const uint8_t *w;       /* [rows][wstride] weights in their block layout */
	size_t wstride;
	int64_t rows, cols;
	int64_t max_tokens;
	int n_threads;          /* threads the scratch was sized for */
	int64_t gemm_from;      /* batches of at least this many tokens take the GEMM */
	uint8_t *panels;        /* [ceil(rows / QG_ROWS)][panel_size] (owned), or NULL */
	uint8_t *relaid;        /* the rows in the interleaved layout (owned; w points to it), or NULL */
	size_t panel_size;
	size_t scratch_size;    /* bytes of scratch cpu_mm_run() needs */
};

/* Prepare w ([rows][cols] of type wtype, rows wstride bytes apart) for
 * batches of up to opts->max_tokens tokens on pool (NULL: one thread; a
 * pool with more threads must not run it later). The repack, if asked,
 * uses the pool. Returns 0, TERN_EUNSUPPORTED (a type without a product),
 * TERN_EINVAL (shape, stride, batch bound) or TERN_ENOMEM (panels). On
 * failure *mm is left empty (cpu_mm_release() is still safe). */
int cpu_mm_prepare(struct cpu_mm *mm, struct tp_pool *pool, uint32_t wtype, const void *w, size_t wstride,
		   int64_t rows, int64_t cols, const struct cpu_mm_opts *opts, tern_err *err);

/* Free what cpu_mm_prepare() allocated (the panels); safe on an empty or
 * released matrix. */
void cpu_mm_release(struct cpu_mm *mm);

/* Bytes of the repacked panels (0 without a repack). */
size_t cpu_mm_panel_bytes(const struct cpu_mm *mm);

/* Bytes of the interleaved copy (0 without one). */
size_t cpu_mm_relaid_bytes(const struct cpu_mm *mm);

/* y[t][r] = dot(w row r, x row t) for r < rows, t < ntok.
 *   x: [ntok][cols] f32, y: [ntok][rows] f32 (need not be aligned)
 *   scratch: mm->scratch_size bytes, not shared with a concurrent call
 * Requires 1 <= ntok <= max_tokens and a pool of at most n_threads threads
 * (the prepare's); nothing is checked here. */
void cpu_mm_run(const struct cpu_mm *mm, struct tp_pool *pool, const float *x, int64_t ntok, float *y,
		void *scratch);

/* One token through n (1..CPU_MM_VEC_N) weights that share the input x
 * ([cols] of each, the same cols): y[i] = w[i] x, the same bits as n calls
 * of cpu_mm_run(mm[i], ..., 1, ...), in one pool job with the input
 * quantized once per activation type (a decode step's Q, K and V, its
 * gate and up). scratch: cpu_mm_vec_n_scratch() bytes of the widest. */
#define CPU_MM_VEC_N 4
size_t cpu_mm_vec_n_scratch(const struct cpu_mm *mm);
void cpu_mm_run_vec_n(const struct cpu_mm *const *mm, int n, struct tp_pool *pool, const float *x,
		      float *const *y, void *scratch);

/* One token through n (1..CPU_MM_MULTI_MAX) weights, each with its own
 * input x[i] ([cols] of weight i): y[i] = w[i] x[i], the same bits as n
 * calls of cpu_mm_run(mm[i], ..., 1, ...), in one pool job; inputs that
 * are the same pointer are quantized once (the selected experts of a
 * mixture, which read the same token). scratch:
 * cpu_mm_vec_multi_scratch() bytes of the widest. */
#define CPU_MM_MULTI_MAX 64
size_t cpu_mm_vec_multi_scratch(const struct cpu_mm *mm);
void cpu_mm_run_vec_multi(const struct cpu_mm *const *mm, int n, struct tp_pool *pool, const float *const *x,
			  float *const *y, void *scratch);

#endif
