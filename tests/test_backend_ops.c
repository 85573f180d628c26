/* test_backend_ops.c - every op of every compiled backend against the
 * reference backend (lib/cpu/ref_backend.c), in the spirit of ggml's
 * test-backend-ops: the same inputs go through both, the outputs are
 * compared by NMSE with a threshold per weight type, and the output sits
 * between sentinel rows that no op may touch.
 *
 * A backend is one entry of `backends` below: the optimized CPU backend
 * under each kernel variant the CPU runs, with 1 and 3 threads and with
 * the load-time repack; CUDA and Vulkan will add one entry each. An op is
 * one check function run over the cases of `cases`: odd row counts, one
 * token (product's mat-vec path) and batches of 2..600 tokens on both sides of the GEMM
 * threshold, every weight type quant/ can dot. test_threads then runs
 * every op case and the products on 1, 2, 3 and 4 threads of the
 * optimized backend and wants the same bits from each. */
#include <float.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <cmocka.h>

#include "lib/backend.h"
#include "lib/cpu/backend.h"
#include "quant/cpu.h"
#include "quant/gemm.h"
#include "quant/quant.h"
#include "tests/quant_util.h"
#include "tests/rec_backend.h"
#if defined(TERN_HAVE_CUDA) || defined(TERN_HAVE_CUEMU)
#include "gpu/cuda/cu_backend.h"
#endif
#ifdef TERN_HAVE_VULKAN
#include "gpu/vulkan/vk_backend.h"
#endif

#define MAX_TOKENS 600

/* ---- backends ------------------------------------------------------------------ */

struct backend_entry {
	const char *name;
	const char *isa; /* CPU kernel variant to force while it runs, or NULL */
	int (*make)(struct tern_backend **out, const struct backend_entry *e, tern_err *err);
	int n_threads;
	enum cpu_mm_repack repack;
	bool nosg;   /* Vulkan: the shaders without subgroup arithmetic (CUDA: the GEMM without tensor cores) */
	bool dot;    /* Vulkan: the integer dot-product mat-vec, forced */
	bool nodot;  /* CUDA: the mat-vec in f32, its integer dot (dp4a, the default) declined */
};

/* The GPU device this run tests (TERN_TEST_DEVICE=vulkan0: tests/run.sh
 * runs this binary once for the CPU backends and once per GPU device), or
 * NULL. */
static const char *test_device(void)
{
	const char *d = getenv("TERN_TEST_DEVICE");
	return d && *d ? d : NULL;
}

#define MAKE_SKIP 1

static int make_cpu(struct tern_backend **out, const struct backend_entry *e, tern_err *err)
{
	if (test_device())
		return MAKE_SKIP; /* a device's run: the CPU backends had theirs */
	struct cpu_backend_opts o = {.n_threads = e->n_threads, .max_tokens = MAX_TOKENS, .repack = e->repack};
	return cpu_backend_new(out, &o, err);
}

static int make_ref(struct tern_backend **out, const struct backend_entry *e, tern_err *err)
{
	(void)e;
	struct cpu_backend_opts o = {.n_threads = 1, .max_tokens = MAX_TOKENS};
	return cpu_ref_backend_new(out, &o, err);
}

/* MAKE_SKIP: a maker's answer when its device is not on this machine or
 * not this run's: the entry is skipped (one line says so), not failed. */

#ifdef TERN_HAVE_VULKAN
/* Vulkan device 0 (lavapipe in CI), under the validation layer where it is
 * installed (its messages become errors of sync); skipped without a device. */
static int make_vulkan(struct tern_backend **out, const struct backend_entry *e, tern_err *err)
{
	static bool said;
	tern_err why = {0};
	if (!test_device() || strncmp(e->name, test_device(), strlen(test_device())) ||
	    (e->name[strlen(test_device())] && e->name[strlen(test_device())] != ' '))
		return MAKE_SKIP;
	if (vk_device_count(&why) == 0) {
		if (!said)
			printf("  %s: no Vulkan device, skipped\n", e->name);
		said = true;
		return MAKE_SKIP;
	}
	struct vk_backend_opts o = {.device = 0, .max_tokens = MAX_TOKENS, .validation = true,
				    .no_subgroup = e->nosg, .int_dot = e->dot};
	int rc = vk_backend_new(out, &o, err);
	if (rc == TERN_EUNSUPPORTED && strstr(err->msg, "validation layer")) {
		o.validation = false;
		rc = vk_backend_new(out, &o, err);
	}
	struct vk_stats st;
	if (!rc && e->dot) {
		vk_get_stats(*out, &st);
		if (!st.int_dot) {
			printf("  %s: no shaderIntegerDotProduct on this device, skipped\n", e->name);
			tern_backend_free(*out);
			*out = NULL;
			return MAKE_SKIP;
		}
	}
	return rc;
}
#endif

#if defined(TERN_HAVE_CUDA) || defined(TERN_HAVE_CUEMU)
/* The CUDA backend: "cuda0" on an NVIDIA GPU (skipped without one), or
 * "cuemu0", its kernels under the CPU emulation of gpu/cuda/emu (every
 * machine: make test runs it). Captured steps are tested by the model
 * tests; here every op runs as launched. */
static int make_cuda(struct tern_backend **out, const struct backend_entry *e, tern_err *err)
{
	static bool said;
	/* "cuemu0 simt" and "cuemu0 float" run in cuemu0's run: the GEMM
	 * without tensor cores, the mat-vec without the integer dot */
	if (!test_device() || strncmp(e->name, test_device(), strlen(test_device())) ||
	    (e->name[strlen(test_device())] && e->name[strlen(test_device())] != ' '))
		return MAKE_SKIP;
	struct cuda_backend_opts o = {.device = 0, .max_tokens = MAX_TOKENS, .no_tensor_cores = e->nosg,
				      .no_int_dot = e->nodot};
	bool emu = !strncmp(e->name, "cuemu", 5);
#ifdef TERN_HAVE_CUEMU
	if (emu)
		return cuemu_backend_new(out, &o, err);
#endif
#ifdef TERN_HAVE_CUDA
	tern_err why = {0};
	if (!emu && cuda_device_count(&why) > 0)
		return cuda_backend_new(out, &o, err);
	if (!emu && !said)
		printf("  %s: no CUDA device (%s), skipped\n", e->name, why.msg);
#else
	if (!emu && !said)
		printf("  %s: not built with CUDA, skipped\n", e->name);
#endif
	said = true;
	return MAKE_SKIP;
}
#endif

static const struct backend_entry backends[] = {
	{"cpu avx512, 3 threads", "avx512", make_cpu, 3, CPU_MM_REPACK_NONE, false, false, false},
	{"cpu avx512, 1 thread, repack", "avx512", make_cpu, 1, CPU_MM_REPACK_BATCH, false, false, false},
	{"cpu avx512, 2 threads, repack all", "avx512", make_cpu, 2, CPU_MM_REPACK_ALL, false, false, false},
	{"cpu avx2, 2 threads", "avx2", make_cpu, 2, CPU_MM_REPACK_NONE, false, false, false},
	{"cpu neon, 2 threads", "neon", make_cpu, 2, CPU_MM_REPACK_NONE, false, false, false},
	{"cpu scalar, 2 threads", "scalar", make_cpu, 2, CPU_MM_REPACK_NONE, false, false, false},
	/* the reference against itself: a second instance, same bits */
	{"cpu-ref", NULL, make_ref, 1, CPU_MM_REPACK_NONE, false, false, false},
#ifdef TERN_HAVE_VULKAN
	/* the products hold to the CPU's thresholds: actq.comp quantizes the
	 * activations as the reference does and only the f32 sums differ
	 * (gpu/vulkan/vk_products.c) */
	{"vulkan0", NULL, make_vulkan, 1, CPU_MM_REPACK_NONE, false, false, false},
	/* its shaders for devices without subgroup arithmetic (the
	 * reductions in shared memory): the same device told to use them;
	 * then the one-token mat-vec through the integer dot product
	 * (dot_int.glsl), which lavapipe has but does not call accelerated:
	 * forced. Not under ASan, whose run checks our host code (the same
	 * for all three) */
#if !defined(__SANITIZE_ADDRESS__)
	{"vulkan0 nosg", NULL, make_vulkan, 1, CPU_MM_REPACK_NONE, true, false, false},
	{"vulkan0 dot", NULL, make_vulkan, 1, CPU_MM_REPACK_NONE, false, true, false},
#endif
#endif
#ifdef TERN_HAVE_CUDA
	{"cuda0", NULL, make_cuda, 1, CPU_MM_REPACK_NONE, false, false, false},
	/* the mat-vec's float path beside the integer dot the GPU takes */
	{"cuda0 float", NULL, make_cuda, 1, CPU_MM_REPACK_NONE, false, false, true},
#endif
#ifdef TERN_HAVE_CUEMU
	{"cuemu0", NULL, make_cuda, 1, CPU_MM_REPACK_NONE, false, false, false},
	/* the GEMM's SIMT tile, the one devices before Volta would take (nosg: no tensor cores) */
	{"cuemu0 simt", NULL, make_cuda, 1, CPU_MM_REPACK_NONE, true, false, false},
	/* the mat-vec's float path (decoded weights times decoded activations
	 * in f32), where cuemu0 itself takes the integer dot (cu_dot.cuh) */
	{"cuemu0 float", NULL, make_cuda, 1, CPU_MM_REPACK_NONE, false, false, true},
#endif
};

/* ---- NMSE thresholds --------------------------------------------------------------
 * What may differ from the reference, for the same weights and f32 inputs:
 *   - the float sums: the reference sums in double, the kernels in f32 in
 *     another order: a relative error of about 1e-7 per sum, NMSE ~1e-13;
 *   - the activation quantizer: the kernels use the ISA's quantizer, whose
 *     rounding of exact ties and of the scale (1/d vs /d) may move an int8
 *     level by one in a rare element: an error of d (max|x| / 127) in
 *     one element in thousands, NMSE well below 1e-8;
 *   - BF16 weights through the GEMM: the activations are rounded to bf16
 *     (as llama.cpp does), a relative error up to 2^-8 per element; for a
 *     dot of random terms NMSE is about E[delta^2] = 2^-16 / 3 ~ 5e-6,
 *     and a case with a single output whose terms cancel (1 x 37) was
 *     measured at 1.1e-5: 1e-4 leaves room for such cancellation.
 * A real bug (a block skipped, a wrong scale, a row shifted) gives NMSE
 * of 1e-3 and more, so thresholds ten times above what is expected leave
 * a margin of several orders of magnitude both ways.
 * The Vulkan backend holds to the same thresholds: it quantizes the
 * activations on the device as the reference does (actq.comp: the same
 * scales to the bit, its divisions corrected to the nearest float, the
 * same ties), decodes the weights to the reference's bits (get_rows
 * checks them with memcmp) and sums their products in f32 (BF16 too: its
 * GEMM does not round x to bf16); measured 1e-13 to 3e-12 on lavapipe,
 * every type. */
static double nmse_max(uint32_t t)
{
	if (t == QT_BF16)
		return 1e-4;
	if (t == QT_F32 || t == QT_F16)
		return 1e-10;
	return 1e-8;
}

/* ---- cases ----------------------------------------------------------------------------- */

struct mm_case {
	int64_t rows, cols_mul; /* cols = cols_mul x the type's column unit */
	int64_t ntok;
};

static const struct mm_case cases[] = {
	{1, 1, 1},   {17, 2, 1},  {203, 3, 1}, {33, 1, 2},  {19, 3, 7},  {16, 2, 8},
	{31, 1, 9},  {45, 2, 33}, {21, 1, 64}, {67, 1, 65}, {17, 1, 600},
	/* 16 units: Q4_0's 1536 columns take the interleaved copy (matmul.h) */
	{37, 16, 1}, {19, 16, 5}, {23, 16, 40},
};

/* The smallest column count every path takes: a multiple of the block of
 * the weights and of their activation type; odd for the float types (the
 * BF16 panel pairs columns). */
static int64_t col_unit(uint32_t t)
{
	uint32_t bw = quant_type_info(t)->blck, ba = quant_type_info(quant_vec_dot_type(t))->blck;
	int64_t u = bw > ba ? bw : ba;
	return u == 1 ? 37 : (u == 32 ? 96 : u);
}

struct inputs {
	uint32_t t;
	int64_t rows, cols, ntok;
	uint8_t *file;   /* weights at file + 1: an unaligned view, as a mapping gives */
	float *x;        /* [ntok][cols] */
};

static void make_inputs(struct inputs *in, uint32_t t, const struct mm_case *c)
{
	in->t = t;
	in->rows = c->rows;
	in->cols = c->cols_mul * col_unit(t);
	in->ntok = c->ntok;
	size_t rs = quant_row_size(t, (uint64_t)in->cols, NULL);
	in->file = malloc(rs * (size_t)in->rows + 1);
	qu_seed((uint64_t)(t * 1009 + c->rows * 31 + c->ntok));
	for (int64_t r = 0; r < in->rows; r++)
		qu_make_row(t, in->file + 1 + (size_t)r * rs, in->cols, (int)(r % 5 == 4));
	in->x = malloc(sizeof(float) * (size_t)(in->cols * in->ntok));
	for (int64_t i = 0; i < in->cols * in->ntok; i++)
		in->x[i] = qu_normal() * (i % 61 == 7 ? 6.0f : 1.0f);
}

static void free_inputs(struct inputs *in)
{
	free(in->file);
	free(in->x);
}

static const float SENTINEL = -7.25e30f;

/* Run product on be (one token or a batch); the result in y ([ntok][rows]).
 * The output buffer has a sentinel token row before and after the view the
 * op writes; they must come back untouched. */
static void run_op(struct tern_backend *be, const char *bname, const struct inputs *in, float *y)
{
	tern_err e = {0};
	size_t rs = quant_row_size(in->t, (uint64_t)in->cols, NULL);
	struct tern_tensor_view tv = {
		.name = {"blk.0.ffn_up.weight", 19}, .n_dims = 2, .ne = {(uint64_t)in->cols, (uint64_t)in->rows, 1, 1},
		.type = in->t, .nbytes = rs * (uint64_t)in->rows, .data = in->file + 1,
	};
	struct tern_buf w, x, yb;
	if (be->buf_weight(be, &w, &tv, &e) || be->mat_prepare(be, &w, &e))
		fail_msg("%s: %s: %s", bname, quant_type_name(in->t), e.msg);
	int64_t xne[2] = {in->cols, in->ntok}, yne[2] = {in->rows, in->ntok + 2};
	if (be->buf_alloc(be, &x, QT_F32, 2, xne, &e) || be->buf_alloc(be, &yb, QT_F32, 2, yne, &e))
		fail_msg("%s: %s", bname, e.msg);
	size_t ybytes = sizeof(float) * (size_t)(in->rows * (in->ntok + 2));
	float *host = malloc(ybytes);
	for (size_t i = 0; i < ybytes / sizeof(float); i++)
		host[i] = SENTINEL;
	be->upload(be, &yb, 0, host, ybytes);
	be->upload(be, &x, 0, in->x, sizeof(float) * (size_t)(in->cols * in->ntok));
	if (be->sync(be, &e)) /* host is written below: the uploads must have read it */
		fail_msg("%s: %s", bname, e.msg);
	struct tern_buf yv = tern_buf_rows(&yb, 1, in->ntok);
	be->begin_step(be);
	tern_be_mul(be, &w, &x, &yv);
	be->end_step(be);
	memset(host, 0, ybytes);
	be->download(be, &yb, 0, host, ybytes);
	if (be->sync(be, &e))
		fail_msg("%s: %s: %s", bname, quant_type_name(in->t), e.msg);
	for (int64_t r = 0; r < in->rows; r++)
		if (host[r] != SENTINEL || host[(in->ntok + 1) * in->rows + r] != SENTINEL)
			fail_msg("%s: %s %lldx%lld, %lld tokens: wrote outside the output (row %lld)", bname,
				 quant_type_name(in->t), (long long)in->rows, (long long)in->cols, (long long)in->ntok,
				 (long long)r);
	memcpy(y, host + in->rows, sizeof(float) * (size_t)(in->rows * in->ntok));
	free(host);
	be->buf_free(be, &x);
	be->buf_free(be, &yb);
	be->buf_free(be, &w);
}

static double nmse(const float *y, const float *ref, size_t n)
{
	double num = 0, den = 0;
	for (size_t i = 0; i < n; i++) {
		if (!isfinite(y[i]))
			return INFINITY;
		num += ((double)y[i] - ref[i]) * ((double)y[i] - ref[i]);
		den += (double)ref[i] * ref[i];
	}
	return num / (den > 1e-30 ? den : 1e-30);
}

static int n_weight_types(void)
{
	int n = 0;
	for (uint32_t t = 0; t < QT_COUNT; t++)
		n += quant_is_weight_type(t);
	return n;
}

/* ---- the op checks ------------------------------------------------------------------ */

static double worst[QT_COUNT];

static void check_products(const struct backend_entry *be_e, struct tern_backend *be, struct tern_backend *ref)
{
	int types = 0;
	double one[QT_COUNT] = {0}; /* this backend's worst of the one-token cases (the mat-vec) */
	for (uint32_t t = 0; t < QT_COUNT; t++) {
		if (!quant_is_weight_type(t))
			continue;
		types++;
		for (size_t ci = 0; ci < sizeof cases / sizeof *cases; ci++) {
			struct inputs in;
			make_inputs(&in, t, &cases[ci]);
			size_t n = (size_t)(in.rows * in.ntok);
			float *y = malloc(sizeof(float) * n), *yr = malloc(sizeof(float) * n);
			run_op(ref, "cpu-ref", &in, yr);
			run_op(be, be_e->name, &in, y);
			double e = nmse(y, yr, n);
			if (e > worst[t])
				worst[t] = e;
			if (in.ntok == 1 && e > one[t])
				one[t] = e;
			if (!(e <= nmse_max(t)))
				fail_msg("%s: product %s %lldx%lld, %lld tokens: NMSE %.3g above %.1g", be_e->name,
					 quant_type_name(t), (long long)in.rows,
					 (long long)in.cols, (long long)in.ntok, e, nmse_max(t));
			free(y);
			free(yr);
			free_inputs(&in);
		}
	}
	assert_int_equal(types, n_weight_types());
	printf("  %s, worst one-token NMSE:", be_e->name);
	for (uint32_t t = 0; t < QT_COUNT; t++)
		if (quant_is_weight_type(t))
			printf(" %s %.1e", quant_type_name(t), one[t]);
	printf("\n");
}

static void test_products(void **state)
{
	(void)state;
	/* every type quant/ can dot, the float types and the K / IQ families */
	assert_true(n_weight_types() == 25);
	tern_err e = {0};
	struct tern_backend *ref;
	assert_int_equal(make_ref(&ref, NULL, &e), 0);
	int ran = 0;
	for (size_t i = 0; i < sizeof backends / sizeof *backends; i++) {
		const struct backend_entry *b = &backends[i];
		if (b->isa && quant_cpu_force(b->isa) != 0)
			continue; /* not this CPU */
		struct tern_backend *be;
		int rc = b->make(&be, b, &e);
		if (rc == MAKE_SKIP)
			continue;
		if (rc)
			fail_msg("%s: %s", b->name, e.msg);
		check_products(b, be, ref);
		tern_backend_free(be);
		quant_cpu_force("auto");
		ran++;
	}
	tern_backend_free(ref);
	assert_true(ran >= 2); /* a SIMD variant and the scalar one at least */
	printf("  worst NMSE per type:");
	for (uint32_t t = 0; t < QT_COUNT; t++)
		if (quant_is_weight_type(t))
			printf(" %s %.1e", quant_type_name(t), worst[t]);
	printf("\n");
}

/* Every entry of a backend's table is set: a forward pass calls any of
 * them without asking (lib/backend.h), so a backend that lacks an op must
 * still give an entry that reports the violation. The list below names
 * them; its size must be the table's, so that an entry added to
 * lib/backend.h without being listed here fails the test. */
#define ENTRY(f) {#f, be->f == NULL}
static void check_table(const struct tern_backend *be, const char *bname)
{
	const struct {
		const char *name;
		bool null;
	} entries[] = {
		ENTRY(free),	      ENTRY(buf_alloc),	  ENTRY(buf_weight), ENTRY(buf_free),  ENTRY(mat_prepare),
		ENTRY(host_alloc),    ENTRY(host_free),	  ENTRY(upload),     ENTRY(download),  ENTRY(product),
		ENTRY(mat_mul_ggml),  ENTRY(mat_mul_heads), ENTRY(mat_mul_id), ENTRY(moe_route), ENTRY(moe_combine),
		ENTRY(get_rows),      ENTRY(norm),	  ENTRY(rope),	     ENTRY(norm_rope), ENTRY(kv_store),
		ENTRY(attention),
		ENTRY(im2col),	      ENTRY(glu),	  ENTRY(unary),	     ENTRY(add),       ENTRY(scale),
		ENTRY(softmax),	      ENTRY(argmax),   ENTRY(copy),	  ENTRY(begin_step), ENTRY(end_step),  ENTRY(sync),
	};
	size_t n = sizeof entries / sizeof *entries;
	/* the entries lie between max_tokens and impl */
	size_t span = offsetof(struct tern_backend, impl) - offsetof(struct tern_backend, free);
	if (n * sizeof(void (*)(void)) != span)
		fail_msg("%zu entries listed, the table has %zu", n, span / sizeof(void (*)(void)));
	for (size_t i = 0; i < n; i++)
		if (entries[i].null)
			fail_msg("%s: table entry %s is not set", bname, entries[i].name);
	assert_non_null(be->name);
	assert_true(be->max_tokens >= 1);
}
#undef ENTRY

/* fn on each backend of `backends` this CPU runs (its kernel variant
 * forced meanwhile) */
static void each_backend(void (*fn)(struct tern_backend *be, const char *name))
{
	tern_err e = {0};
	for (size_t i = 0; i < sizeof backends / sizeof *backends; i++) {
		const struct backend_entry *b = &backends[i];
		if (b->isa && quant_cpu_force(b->isa) != 0)
			continue;
		struct tern_backend *be;
		int rc = b->make(&be, b, &e);
		if (rc == MAKE_SKIP)
			continue;
		if (rc)
			fail_msg("%s: %s", b->name, e.msg);
		fn(be, b->name);
		tern_backend_free(be);
		quant_cpu_force("auto");
	}
}

/* the table, and host memory: 64-byte aligned, writable, freed; NULL freed */
static void check_table_host(struct tern_backend *be, const char *name)
{
	tern_err e = {0};
	check_table(be, name);
	void *h = NULL;
	assert_int_equal(be->host_alloc(be, 100, &h, &e), 0);
	assert_true(((uintptr_t)h & 63) == 0);
	memset(h, 0x5a, 100);
	be->host_free(be, h);
	be->host_free(be, NULL);
}

static void test_table(void **state)
{
	(void)state;
	each_backend(check_table_host);
}

/* Contract: load-time calls fail with a message; a per-step op given
 * operands that do not fit does nothing and the next sync says why. */
static void check_contract(struct tern_backend *be)
{
	tern_err e = {0};
	/* room for the largest view below (the i32 one): a GPU copies what a
	 * view says it holds */
	uint8_t file[1 + 4 * 32 * 4] = {0};
	struct tern_tensor_view tv = {.name = {"w", 1}, .n_dims = 2, .ne = {32, 4, 1, 1}, .type = QT_Q4_0,
				      .nbytes = 4 * 18, .data = file + 1};
	struct tern_buf w, x, y, w3;
	assert_int_equal(be->buf_weight(be, &w, &tv, &e), 0);
	/* a weight of a type without a product, of three dimensions, too short */
	struct tern_tensor_view bad = tv;
	bad.type = QT_I32;
	bad.nbytes = 4 * 32 * 4;
	struct tern_buf wi;
	assert_int_equal(be->buf_weight(be, &wi, &bad, &e), 0);
	assert_int_equal(be->mat_prepare(be, &wi, &e), TERN_EUNSUPPORTED);
	assert_non_null(strstr(e.msg, "i32"));
	be->buf_free(be, &wi);
	bad = tv;
	bad.nbytes = 4 * 18 - 1;
	assert_int_equal(be->buf_weight(be, &wi, &bad, &e), TERN_EINVAL);
	assert_non_null(strstr(e.msg, "tensor 'w'"));
	bad = tv;
	bad.ne[0] = 48;
	assert_int_equal(be->buf_weight(be, &wi, &bad, &e), TERN_EINVAL);
	/* a stack of experts prepares (for mat_mul_id); four dimensions do not */
	int64_t ne3[3] = {32, 2, 2}, ne4[4] = {32, 2, 2, 2};
	assert_int_equal(be->buf_alloc(be, &w3, QT_Q4_0, 3, ne3, &e), 0);
	assert_int_equal(be->mat_prepare(be, &w3, &e), 0);
	be->buf_free(be, &w3);
	assert_int_equal(be->buf_alloc(be, &w3, QT_Q4_0, 4, ne4, &e), 0);
	assert_int_equal(be->mat_prepare(be, &w3, &e), TERN_EINVAL);
	be->buf_free(be, &w3);
	int64_t nx[2] = {32, 2}, ny[2] = {4, 2}, big[2] = {1, (int64_t)1 << 41};
	assert_int_equal(be->buf_alloc(be, &x, QT_F32, 2, big, &e), TERN_EINVAL);
	assert_int_equal(be->buf_alloc(be, &x, QT_F32, 0, nx, &e), TERN_EINVAL);
	assert_int_equal(be->buf_alloc(be, &x, QT_F32, 2, nx, &e), 0);
	assert_int_equal(be->buf_alloc(be, &y, QT_F32, 2, ny, &e), 0);
	float zero[64] = {0}, host[8], marks[8] = {1, 2, 3, 4, 5, 6, 7, 8};
	be->upload(be, &x, 0, zero, sizeof zero);
	be->upload(be, &y, 0, marks, sizeof marks);
	assert_int_equal(be->sync(be, &e), 0);
	/* not prepared */
	tern_be_mul(be, &w, &x, &y);
	assert_int_equal(be->sync(be, &e), TERN_EINVAL);
	assert_non_null(strstr(e.msg, "not prepared"));
	assert_int_equal(be->sync(be, &e), 0); /* reported once */
	assert_int_equal(be->mat_prepare(be, &w, &e), 0);
	/* y of the wrong width; of a different token count; no weight: only
	 * the first error is kept */
	struct tern_buf y1 = y;
	y1.ne[0] = 3;
	tern_be_mul(be, &w, &x, &y1);
	y1 = tern_buf_rows(&y, 0, 1);
	tern_be_mul(be, &w, &x, &y1);
	be->product(be, 0, (const struct tern_buf *[]){&w}, &x, (struct tern_buf *[]){&y});
	assert_int_equal(be->sync(be, &e), TERN_EINVAL);
	assert_non_null(strstr(e.msg, "4 x 32 weight (x 2 x 32, y 2 x 3)"));
	be->download(be, &y, 0, host, sizeof host);
	assert_int_equal(be->sync(be, &e), 0);
	assert_memory_equal(host, marks, sizeof marks); /* nothing was written */
	/* transfers out of range, into a weight */
	be->upload(be, &y, 4, marks, sizeof marks);
	assert_int_equal(be->sync(be, &e), TERN_EINVAL);
	be->upload(be, &w, 0, marks, 4);
	assert_int_equal(be->sync(be, &e), TERN_EINVAL);
	assert_non_null(strstr(e.msg, "read-only"));
	/* and the right call works */
	tern_be_mul(be, &w, &x, &y);
	be->download(be, &y, 0, host, sizeof host);
	assert_int_equal(be->sync(be, &e), 0);
	for (int i = 0; i < 8; i++)
		assert_true(host[i] == 0.0f);
	be->buf_free(be, &x);
	be->buf_free(be, &y);
	be->buf_free(be, &w);
	be->buf_free(be, &w); /* empty: safe */
}

static void check_contract_on(struct tern_backend *be, const char *name)
{
	(void)name;
	check_contract(be);
}

static void test_contract(void **state)
{
	(void)state;
	tern_err e = {0};
	each_backend(check_contract_on);
	struct tern_backend *be;
	struct cpu_backend_opts o = {.n_threads = 1, .max_tokens = 0};
	assert_int_equal(cpu_backend_new(&be, &o, &e), TERN_EINVAL);
	assert_null(be);
	assert_int_equal(cpu_ref_backend_new(&be, &o, &e), TERN_EINVAL);
	o = (struct cpu_backend_opts){.n_threads = 0, .max_tokens = 1};
	assert_int_equal(cpu_backend_new(&be, &o, &e), TERN_EINVAL);
}

/* ---- the forward-pass ops --------------------------------------------------------------
 * Each op is a case function: case ci builds its inputs from a seed that
 * depends on ci only (the same bytes on every backend), runs the op and
 * returns the outputs as f32; false past the last case. The outputs sit
 * between two sentinel rows. The driver runs every case on the reference
 * and on each backend and compares by NMSE (thresholds at `op_checks`). */

typedef bool (*op_case_fn)(struct tern_backend *be, int ci, float **out, size_t *n, char *desc, size_t dn);

static const uint8_t SENTINEL_BYTE = 0xA5;

static struct tern_buf in_buf(struct tern_backend *be, uint32_t type, int n_dims, const int64_t *ne, const void *host)
{
	tern_err e = {0};
	struct tern_buf b;
	if (be->buf_alloc(be, &b, type, n_dims, ne, &e))
		fail_msg("%s: %s", be->name, e.msg);
	be->upload(be, &b, 0, host, tern_buf_nbytes(&b));
	/* the caller may free or reuse host: an asynchronous backend reads it
	 * until the next sync */
	if (be->sync(be, &e))
		fail_msg("%s: %s", be->name, e.msg);
	return b;
}

/* An output (or in-place operand) of type with rows of ne0: a buffer of
 * nrows + 2 rows whose first and last are sentinels, the middle from init
 * (bytes of that type) or sentinels; *view is the middle under shape ne. */
static void out_buf(struct tern_backend *be, struct tern_buf *whole, struct tern_buf *view, uint32_t type, int64_t ne0,
		    int64_t nrows, int n_dims, const int64_t *ne, const void *init)
{
	int64_t wne[2] = {ne0, nrows + 2};
	tern_err e = {0};
	if (be->buf_alloc(be, whole, type, 2, wne, &e))
		fail_msg("%s: %s", be->name, e.msg);
	size_t rs = whole->nb[1], total = rs * (size_t)(nrows + 2);
	uint8_t *h = malloc(total);
	memset(h, SENTINEL_BYTE, total);
	if (init)
		memcpy(h + rs, init, rs * (size_t)nrows);
	be->upload(be, whole, 0, h, total);
	if (be->sync(be, &e)) /* before h is freed */
		fail_msg("%s: %s", be->name, e.msg);
	free(h);
	struct tern_buf mid = tern_buf_rows(whole, 1, nrows);
	*view = tern_buf_reshape(&mid, n_dims, ne);
}

/* Sync, check the sentinels, return the middle rows as f32 (malloc'ed). */
static float *take_out(struct tern_backend *be, struct tern_buf *whole, const char *desc)
{
	tern_err e = {0};
	size_t rs = whole->nb[1];
	int64_t nrows = whole->ne[1] - 2, ne0 = whole->ne[0];
	size_t total = rs * (size_t)(nrows + 2);
	uint8_t *h = malloc(total);
	be->download(be, whole, 0, h, total);
	if (be->sync(be, &e))
		fail_msg("%s: %s: %s", be->name, desc, e.msg);
	for (size_t i = 0; i < rs; i++)
		if (h[i] != SENTINEL_BYTE || h[total - rs + i] != SENTINEL_BYTE)
			fail_msg("%s: %s: wrote outside the output (byte %zu)", be->name, desc, i);
	float *out = malloc(sizeof(float) * (size_t)(ne0 * nrows));
	for (int64_t r = 0; r < nrows; r++)
		quant_dequantize_row(whole->type, h + rs * (size_t)(r + 1), out + r * ne0, (uint64_t)ne0);
	free(h);
	be->buf_free(be, whole);
	return out;
}

static float *normals(size_t n, float sd)
{
	float *x = malloc(sizeof(float) * (n ? n : 1));
	for (size_t i = 0; i < n; i++)
		x[i] = qu_normal() * sd;
	return x;
}

/* get_rows: every type with rows, ids with repeats */
static bool case_get_rows(struct tern_backend *be, int ci, float **out, size_t *n, char *desc, size_t dn)
{
	static const int64_t ntoks[] = {1, 5, 300};
	uint32_t t = (uint32_t)(ci / 3);
	if (t >= QT_COUNT)
		return false;
	int64_t ntok = ntoks[ci % 3], rows = 37, cols = 256;
	if (!quant_type_valid(t) || quant_type_info(t)->blck > 256 || t == QT_I8 || t == QT_I16 || t == QT_I32 ||
	    t == QT_I64 || t == QT_F64) {
		*n = 0; /* not a weight type */
		return true;
	}
	snprintf(desc, dn, "get_rows %s, %lld tokens", quant_type_name(t), (long long)ntok);
	qu_seed((uint64_t)ci + 11);
	size_t rs = quant_row_size(t, (uint64_t)cols, NULL);
	uint8_t *wh = malloc(rs * (size_t)rows);
	for (int64_t r = 0; r < rows; r++)
		qu_make_row(t, wh + rs * (size_t)r, cols, 0);
	int32_t *ids = malloc(sizeof(int32_t) * (size_t)ntok);
	for (int64_t i = 0; i < ntok; i++)
		ids[i] = (int32_t)(qu_rand() % (uint32_t)rows);
	int64_t wne[2] = {cols, rows}, ine[1] = {ntok}, yne[2] = {cols, ntok};
	struct tern_buf w = in_buf(be, t, 2, wne, wh), ib = in_buf(be, QT_I32, 1, ine, ids), whole, y;
	out_buf(be, &whole, &y, QT_F32, cols, ntok, 2, yne, NULL);
	be->get_rows(be, &w, &ib, &y);
	*out = take_out(be, &whole, desc);
	*n = (size_t)(cols * ntok);
	/* independent: the rows as quant/ decodes them */
	float *row = malloc(sizeof(float) * (size_t)cols);
	for (int64_t i = 0; i < ntok; i++) {
		quant_dequantize_row(t, wh + rs * (size_t)ids[i], row, (uint64_t)cols);
		if (memcmp(row, *out + i * cols, sizeof(float) * (size_t)cols) != 0)
			fail_msg("%s: %s: token %lld is not row %d", be->name, desc, (long long)i, ids[i]);
	}
	free(row);
	free(wh);
	free(ids);
	be->buf_free(be, &w);
	be->buf_free(be, &ib);
	return true;
}

/* norm: RMS and layer norm, with and without the residual, weight, bias,
 * and in place; odd widths and the Q/K-norm shape (rows of head_dim) */
static bool case_norm(struct tern_backend *be, int ci, float **out, size_t *n, char *desc, size_t dn)
{
	static const int64_t shapes[][2] = {{1, 1}, {7, 3}, {64, 1}, {576, 5}, {2048, 2}, {128, 8 * 13}, {33, 300}};
	int ns = (int)(sizeof shapes / sizeof *shapes);
	if (ci >= ns * 16)
		return false;
	int64_t ne0 = shapes[ci / 16][0], rows = shapes[ci / 16][1];
	int v = ci % 16;
	struct tern_norm p = {.kind = v & 1 ? TERN_NORM_LAYER : TERN_NORM_RMS, .eps = (v & 8) ? 1e-6f : 1e-5f};
	bool use_r = v & 2, use_w = v & 4, use_b = (v & 8) && p.kind == TERN_NORM_LAYER, inplace = (v & 12) == 12;
	snprintf(desc, dn, "norm %s %lldx%lld%s%s%s%s", p.kind ? "layer" : "rms", (long long)ne0, (long long)rows,
		 use_r ? " +residual" : "", use_w ? " *w" : "", use_b ? " +b" : "", inplace ? " in place" : "");
	qu_seed((uint64_t)ci + 101);
	size_t cnt = (size_t)(ne0 * rows);
	float *x = normals(cnt, 3), *r = normals(cnt, 1), *w = normals((size_t)ne0, 1), *b = normals((size_t)ne0, 1);
	for (size_t i = 0; i < cnt; i++)
		x[i] += 0.5f; /* a mean for the layer norm to remove */
	int64_t ne[2] = {ne0, rows}, vne[1] = {ne0};
	struct tern_buf xw, xv, yw, yv, rb = {0}, wb = {0}, bb = {0};
	out_buf(be, &xw, &xv, QT_F32, ne0, rows, 2, ne, x);
	if (!inplace)
		out_buf(be, &yw, &yv, QT_F32, ne0, rows, 2, ne, NULL);
	if (use_r)
		rb = in_buf(be, QT_F32, 2, ne, r);
	if (use_w)
		wb = in_buf(be, QT_F32, 1, vne, w);
	if (use_b)
		bb = in_buf(be, QT_F32, 1, vne, b);
	be->norm(be, &xv, use_r ? &rb : NULL, use_w ? &wb : NULL, use_b ? &bb : NULL, inplace ? &xv : &yv, &p);
	float *xo = take_out(be, &xw, desc), *yo = inplace ? xo : take_out(be, &yw, desc);
	/* out: y, then x when the residual was added to it */
	*n = cnt * (use_r && !inplace ? 2 : 1);
	*out = malloc(sizeof(float) * *n);
	memcpy(*out, yo, sizeof(float) * cnt);
	if (use_r && !inplace)
		memcpy(*out + cnt, xo, sizeof(float) * cnt);
	/* independent: without weight or bias the rows have mean square 1
	 * (RMS) or mean 0 and variance 1 (layer), up to eps */
	if (!use_w && !use_b && ne0 >= 64) {
		for (int64_t row = 0; row < rows; row++) {
			double m = 0, sq = 0;
			for (int64_t i = 0; i < ne0; i++)
				m += yo[row * ne0 + i];
			m /= (double)ne0;
			for (int64_t i = 0; i < ne0; i++)
				sq += (yo[row * ne0 + i] - (p.kind ? m : 0)) * (yo[row * ne0 + i] - (p.kind ? m : 0));
			if (fabs(sq / (double)ne0 - 1) > 1e-3 || (p.kind && fabs(m) > 1e-4))
				fail_msg("%s: %s: row %lld has mean %g, mean square %g", be->name, desc, (long long)row, m,
					 sq / (double)ne0);
		}
	}
	if (yo != xo)
		free(yo);
	free(xo);
	free(x);
	free(r);
	free(w);
	free(b);
	be->buf_free(be, &rb);
	be->buf_free(be, &wb);
	be->buf_free(be, &bb);
	return true;
}

struct rope_case {
	int64_t hd, nh, ntok;
	int n_rot, mode;
	float base, scale;
	bool factors;
	int32_t pos0; /* positions pos0 + t, or random in 0..5000 when < 0 */
	float ext, low, high, mscale; /* YaRN (DeepSeek's files); 0: none */
	float attn_factor;            /* 0: not set (1) */
};

static const struct rope_case rope_cases[] = {
	{64, 1, 1, 64, TERN_ROPE_NORMAL, 10000, 1, false, 0, 0, 0, 0, 0, 0},
	{64, 3, 7, 64, TERN_ROPE_NEOX, 10000, 1, false, 13, 0, 0, 0, 0, 0},
	{80, 5, 3, 80, TERN_ROPE_NEOX, 1e6f, 1, false, -1, 0, 0, 0, 0, 0},
	{80, 2, 4, 40, TERN_ROPE_NORMAL, 10000, 0.25f, false, 4090, 0, 0, 0, 0, 0},
	{128, 8, 300, 128, TERN_ROPE_NORMAL, 500000, 1, true, 0, 0, 0, 0, 0, 0},
	{128, 4, 9, 128, TERN_ROPE_NEOX, 1e6f, 1, true, -1, 0, 0, 0, 0, 0},
	{128, 2, 5, 64, TERN_ROPE_NEOX, 10000, 1, false, 100, 0, 0, 0, 0, 0},
	{256, 4, 33, 256, TERN_ROPE_NEOX, 1e6f, 0.125f, false, -1, 0, 0, 0, 0, 0},
	{256, 1, 2, 256, TERN_ROPE_NORMAL, 10000, 1, false, 3000, 0, 0, 0, 0, 0},
	{2, 1, 1, 2, TERN_ROPE_NORMAL, 10000, 1, false, 7, 0, 0, 0, 0, 0},
	/* YaRN: the ramp inside the rotated pairs, past them, a magnitude */
	{64, 1, 9, 64, TERN_ROPE_NORMAL, 10000, 0.025f, false, 100, 1, 4, 20, 1.37f, 0},
	{192, 4, 5, 64, TERN_ROPE_NORMAL, 10000, 0.25f, false, -1, 1, 11, 27, 0, 0},
	{32, 16, 3, 32, TERN_ROPE_NEOX, 1e6f, 0.5f, true, 4000, 0.5f, 2, 3, 0.8f, 0},
	{576, 2, 4, 576, TERN_ROPE_NORMAL, 10000, 0.1f, false, 30, 1, 40, 200, 1.1f, 0},
	/* phi3's LongRoPE: factors and an attention factor, partial (phi-4-mini)
	 * and full rotation, and a rotation wider than the CPU's angle table */
	{96, 3, 11, 64, TERN_ROPE_NEOX, 10000, 1, true, -1, 0, 0, 0, 0, 1.1902f},
	{96, 2, 5, 96, TERN_ROPE_NEOX, 10000, 1, true, 40, 0, 0, 0, 0, 0.75f},
	{80, 2, 4, 32, TERN_ROPE_NEOX, 10000, 1, false, 4090, 0, 0, 0, 0, 1.5f},
	{1024, 1, 3, 1024, TERN_ROPE_NORMAL, 10000, 1, false, 17, 0, 0, 0, 0, 1.25f},
	/* both magnitudes: YaRN's mscale times the attention factor */
	{64, 2, 5, 64, TERN_ROPE_NORMAL, 10000, 0.025f, false, 60, 1, 4, 20, 1.37f, 0.9f},
	{1024, 1, 2, 1024, TERN_ROPE_NORMAL, 10000, 0.1f, false, 30, 1, 40, 200, 1.1f, 1.25f},
};

static bool case_rope(struct tern_backend *be, int ci, float **out, size_t *n, char *desc, size_t dn)
{
	if (ci >= (int)(sizeof rope_cases / sizeof *rope_cases))
		return false;
	const struct rope_case *c = &rope_cases[ci];
	snprintf(desc, dn, "rope %s hd %lld n_rot %d, %lld heads, %lld tokens%s%s, attn factor %g",
		 c->mode ? "neox" : "normal", (long long)c->hd, c->n_rot, (long long)c->nh, (long long)c->ntok,
		 c->factors ? ", factors" : "", c->ext > 0 ? ", yarn" : "", (double)c->attn_factor);
	qu_seed((uint64_t)ci + 201);
	size_t cnt = (size_t)(c->hd * c->nh * c->ntok);
	float *x = normals(cnt, 1), *ff = malloc(sizeof(float) * (size_t)c->n_rot / 2);
	int32_t *pos = malloc(sizeof(int32_t) * (size_t)c->ntok);
	for (int64_t t = 0; t < c->ntok; t++)
		pos[t] = c->pos0 >= 0 ? c->pos0 + (int32_t)t : (int32_t)(qu_rand() % 5001);
	for (int j = 0; j < c->n_rot / 2; j++)
		ff[j] = j < c->n_rot / 8 ? 1.0f : qu_uniform(1, 8); /* as llama3: 1 at high frequencies */
	int64_t ne[3] = {c->hd, c->nh, c->ntok}, pne[1] = {c->ntok}, fne[1] = {c->n_rot / 2};
	struct tern_buf xw, xv, pb = in_buf(be, QT_I32, 1, pne, pos), fb = {0};
	if (c->factors)
		fb = in_buf(be, QT_F32, 1, fne, ff);
	out_buf(be, &xw, &xv, QT_F32, c->hd, c->nh * c->ntok, 3, ne, x);
	struct tern_rope p = {.mode = c->mode, .n_rot = c->n_rot, .freq_base = c->base, .freq_scale = c->scale,
			      .ext_factor = c->ext, .corr_low = c->low, .corr_high = c->high, .mscale = c->mscale,
			      .attn_factor = c->attn_factor};
	be->rope(be, &xv, &pb, c->factors ? &fb : NULL, &p);
	*out = take_out(be, &xw, desc);
	*n = cnt;
	/* independent: each pair is a complex number turned by theta, from
	 * the published formula theta_j = scale * pos / (base^(2j/n_rot) ff_j);
	 * the angle in f32 may be off by ~pos * 2^-24 rad on the optimized
	 * backend, hence the tolerance growing with the position */
	int half = c->n_rot / 2;
	for (int64_t t = 0; t < c->ntok; t++)
		for (int64_t h = 0; h < c->nh; h++) {
			const float *xi = x + (t * c->nh + h) * c->hd, *yo = *out + (t * c->nh + h) * c->hd;
			for (int j = 0; j < half; j++) {
				int i0 = c->mode ? j : 2 * j, i1 = c->mode ? j + half : 2 * j + 1;
				double ex = pos[t] / pow(c->base, 2.0 * j / c->n_rot) / (c->factors ? ff[j] : 1);
				double th = c->scale * ex;
				/* both magnitudes multiply the turned pair */
				double mag = (c->mscale > 0 ? c->mscale : 1) * (c->attn_factor > 0 ? c->attn_factor : 1);
				if (c->ext > 0) { /* YaRN (arXiv:2309.00071): a linear ramp between the pairs */
					double ramp = j <= c->low ? 1 : j >= c->high ? 0 : 1 - (j - c->low) / (c->high - c->low);
					th = th * (1 - c->ext * ramp) + ex * c->ext * ramp;
				}
				double re = mag * (xi[i0] * cos(th) - xi[i1] * sin(th));
				double im = mag * (xi[i0] * sin(th) + xi[i1] * cos(th));
				double tol = (1e-5 + 4e-7 * pos[t] * (fabs(xi[i0]) + fabs(xi[i1]))) * fmax(mag, 1);
				if (fabs(re - yo[i0]) > tol || fabs(im - yo[i1]) > tol)
					fail_msg("%s: %s: token %lld head %lld pair %d: (%g, %g), expected (%g, %g)",
						 be->name, desc, (long long)t, (long long)h, j, yo[i0], yo[i1], re, im);
			}
			for (int64_t i = c->n_rot; i < c->hd; i++)
				if (yo[i] != xi[i])
					fail_msg("%s: %s: dimension %lld past n_rot moved", be->name, desc, (long long)i);
		}
	free(x);
	free(ff);
	free(pos);
	be->buf_free(be, &pb);
	be->buf_free(be, &fb);
	return true;
}

/* norm_rope: Q and K of one layer, each with or without its norm's
 * weight, K absent or with fewer heads (GQA); the rope cases' modes,
 * partial rotations, factors, YaRN and magnitudes; odd and wide heads
 * (the CPU's table and its wider path, Vulkan's two workgroup sizes). */
struct norm_rope_case {
	int64_t hd, nhq, nhk, ntok; /* nhk 0: k NULL */
	int n_rot, mode;
	float base, scale;
	bool factors;
	int32_t pos0;                 /* as rope_case's */
	float ext, low, high, mscale, attn_factor;
	bool qw, kw, layer;           /* weights; a layer norm instead of RMS */
};

static const struct norm_rope_case norm_rope_cases[] = {
	/* Qwen3: 128 wide, 16 Q and 8 K heads; Gemma 3 270m: 256 wide, 4 and 1 */
	{128, 16, 8, 7, 128, TERN_ROPE_NEOX, 1e6f, 1, false, -1, 0, 0, 0, 0, 0, true, true, false},
	{128, 16, 8, 1, 128, TERN_ROPE_NEOX, 1e6f, 1, false, 4000, 0, 0, 0, 0, 0, true, true, false},
	{256, 4, 1, 1, 256, TERN_ROPE_NEOX, 10000, 1, false, 17, 0, 0, 0, 0, 0, true, true, false},
	{256, 4, 1, 33, 256, TERN_ROPE_NEOX, 1e6f, 0.125f, false, -1, 0, 0, 0, 0, 0, true, true, false},
	/* one weight, none, K absent */
	{64, 3, 0, 5, 64, TERN_ROPE_NORMAL, 10000, 1, false, 13, 0, 0, 0, 0, 0, true, false, false},
	{64, 4, 2, 3, 64, TERN_ROPE_NORMAL, 10000, 1, false, -1, 0, 0, 0, 0, 0, false, false, false},
	{80, 5, 1, 4, 80, TERN_ROPE_NEOX, 1e6f, 1, false, -1, 0, 0, 0, 0, 0, false, true, false},
	{80, 2, 0, 4, 40, TERN_ROPE_NORMAL, 10000, 0.25f, false, 4090, 0, 0, 0, 0, 0, false, false, false},
	/* llama3's factors over a batch; LongRoPE's with an attention factor,
	 * partial rotation, a layer norm */
	{128, 8, 2, 300, 128, TERN_ROPE_NORMAL, 500000, 1, true, 0, 0, 0, 0, 0, 0, true, true, false},
	{96, 3, 3, 11, 32, TERN_ROPE_NEOX, 10000, 1, true, -1, 0, 0, 0, 0, 1.1902f, true, true, true},
	/* YaRN, with both magnitudes */
	{64, 2, 2, 9, 64, TERN_ROPE_NORMAL, 10000, 0.025f, false, 100, 1, 4, 20, 1.37f, 0.9f, true, true, false},
	{192, 4, 1, 5, 64, TERN_ROPE_NORMAL, 10000, 0.25f, false, -1, 1, 11, 27, 0, 0, true, true, true},
	/* odd heads (a rotation of their even part), the narrowest, a head past
	 * norm's 256 and past the CPU's angle table */
	{33, 3, 1, 2, 32, TERN_ROPE_NEOX, 10000, 1, false, 7, 0, 0, 0, 0, 0, true, true, false},
	{75, 2, 2, 3, 74, TERN_ROPE_NORMAL, 10000, 1, false, -1, 0, 0, 0, 0, 0, true, false, false},
	{2, 1, 1, 1, 2, TERN_ROPE_NORMAL, 10000, 1, false, 7, 0, 0, 0, 0, 0, true, true, false},
	{576, 2, 1, 4, 576, TERN_ROPE_NORMAL, 10000, 0.1f, false, 30, 1, 40, 200, 1.1f, 0, true, true, false},
	{1024, 1, 1, 3, 1024, TERN_ROPE_NORMAL, 10000, 1, false, 17, 0, 0, 0, 0, 1.25f, true, true, false},
	{1024, 2, 1, 2, 512, TERN_ROPE_NEOX, 1e6f, 1, false, -1, 0, 0, 0, 0, 0, false, true, true},
};

/* The case's q (and k) through norm_rope, and again through the same
 * backend's norm and rope, which must give the same bits (the op's
 * contract); out: q then k from norm_rope. */
static bool case_norm_rope(struct tern_backend *be, int ci, float **out, size_t *n, char *desc, size_t dn)
{
	if (ci >= (int)(sizeof norm_rope_cases / sizeof *norm_rope_cases))
		return false;
	const struct norm_rope_case *c = &norm_rope_cases[ci];
	snprintf(desc, dn, "norm_rope %s hd %lld n_rot %d, %lld/%lld heads, %lld tokens%s%s%s%s%s, attn factor %g",
		 c->mode ? "neox" : "normal", (long long)c->hd, c->n_rot, (long long)c->nhq, (long long)c->nhk,
		 (long long)c->ntok, c->qw ? ", q norm" : "", c->kw ? ", k norm" : "", c->layer ? " (layer)" : "",
		 c->factors ? ", factors" : "", c->ext > 0 ? ", yarn" : "", (double)c->attn_factor);
	qu_seed((uint64_t)ci + 301);
	size_t nq = (size_t)(c->hd * c->nhq * c->ntok), nk = (size_t)(c->hd * c->nhk * c->ntok);
	float *xq = normals(nq, 3), *xk = normals(nk, 3), *wq = normals((size_t)c->hd, 1),
	      *wk = normals((size_t)c->hd, 1), *ff = malloc(sizeof(float) * (size_t)c->n_rot / 2);
	for (size_t i = 0; i < nq; i++)
		xq[i] += 0.5f; /* a mean for the layer norm to remove */
	int32_t *pos = malloc(sizeof(int32_t) * (size_t)c->ntok);
	for (int64_t t = 0; t < c->ntok; t++)
		pos[t] = c->pos0 >= 0 ? c->pos0 + (int32_t)t : (int32_t)(qu_rand() % 5001);
	for (int j = 0; j < c->n_rot / 2; j++)
		ff[j] = j < c->n_rot / 8 ? 1.0f : qu_uniform(1, 8);
	int64_t qne[3] = {c->hd, c->nhq, c->ntok}, kne[3] = {c->hd, c->nhk, c->ntok}, pne[1] = {c->ntok},
		fne[1] = {c->n_rot / 2}, wne[1] = {c->hd};
	struct tern_buf pb = in_buf(be, QT_I32, 1, pne, pos), fb = {0}, qwb = {0}, kwb = {0};
	if (c->factors)
		fb = in_buf(be, QT_F32, 1, fne, ff);
	if (c->qw)
		qwb = in_buf(be, QT_F32, 1, wne, wq);
	if (c->kw)
		kwb = in_buf(be, QT_F32, 1, wne, wk);
	const struct tern_norm nrm = {.kind = c->layer ? TERN_NORM_LAYER : TERN_NORM_RMS, .eps = 1e-6f};
	const struct tern_rope p = {.mode = c->mode, .n_rot = c->n_rot, .freq_base = c->base, .freq_scale = c->scale,
				    .ext_factor = c->ext, .corr_low = c->low, .corr_high = c->high, .mscale = c->mscale,
				    .attn_factor = c->attn_factor};
	/* [0] fused, [1] the separate ops */
	struct tern_buf qall[2], qv[2], kall[2] = {{0}}, kv[2]; /* whole buffers (sentinels), views */
	float *got[2][2] = {{NULL}};
	for (int s = 0; s < 2; s++) {
		out_buf(be, &qall[s], &qv[s], QT_F32, c->hd, c->nhq * c->ntok, 3, qne, xq);
		if (c->nhk)
			out_buf(be, &kall[s], &kv[s], QT_F32, c->hd, c->nhk * c->ntok, 3, kne, xk);
	}
	be->norm_rope(be, &qv[0], c->nhk ? &kv[0] : NULL, c->qw ? &qwb : NULL, c->kw ? &kwb : NULL, &pb,
		      c->factors ? &fb : NULL, c->qw || c->kw ? &nrm : NULL, &p);
	if (c->qw)
		be->norm(be, &qv[1], NULL, &qwb, NULL, &qv[1], &nrm);
	be->rope(be, &qv[1], &pb, c->factors ? &fb : NULL, &p);
	if (c->nhk) {
		if (c->kw)
			be->norm(be, &kv[1], NULL, &kwb, NULL, &kv[1], &nrm);
		be->rope(be, &kv[1], &pb, c->factors ? &fb : NULL, &p);
	}
	for (int s = 0; s < 2; s++) {
		got[s][0] = take_out(be, &qall[s], desc);
		if (c->nhk)
			got[s][1] = take_out(be, &kall[s], desc);
	}
	if (memcmp(got[0][0], got[1][0], sizeof(float) * nq) || (nk && memcmp(got[0][1], got[1][1], sizeof(float) * nk)))
		fail_msg("%s: %s: not the bits of its norm and rope", be->name, desc);
	*n = nq + nk;
	*out = malloc(sizeof(float) * *n);
	memcpy(*out, got[0][0], sizeof(float) * nq);
	if (nk)
		memcpy(*out + nq, got[0][1], sizeof(float) * nk);
	for (int s = 0; s < 2; s++)
		for (int i = 0; i < 2; i++)
			free(got[s][i]);
	free(xq);
	free(xk);
	free(wq);
	free(wk);
	free(ff);
	free(pos);
	be->buf_free(be, &pb);
	be->buf_free(be, &fb);
	be->buf_free(be, &qwb);
	be->buf_free(be, &kwb);
	return true;
}

static const uint32_t cache_types[] = {QT_F32, QT_F16, QT_Q8_0};

/* kv_store: every cache type, tokens written at scattered positions of a
 * cache whose other rows keep their contents */
static bool case_kv_store(struct tern_backend *be, int ci, float **out, size_t *n, char *desc, size_t dn)
{
	static const int64_t shapes[][3] = {{64, 1, 1}, {128, 2, 7}, {256, 8, 300}, {80, 3, 33}, {64, 4, 2}};
	if (ci >= 15)
		return false;
	uint32_t t = cache_types[ci % 3];
	int64_t hd = shapes[ci / 3][0], nkv = shapes[ci / 3][1], ntok = shapes[ci / 3][2], n_ctx = 400;
	if (hd % quant_type_info(t)->blck) {
		*n = 0; /* a q8_0 cache needs head_dim a multiple of 32 */
		return true;
	}
	snprintf(desc, dn, "kv_store %s hd %lld, %lld kv heads, %lld tokens", quant_type_name(t), (long long)hd,
		 (long long)nkv, (long long)ntok);
	qu_seed((uint64_t)ci + 301);
	float *x = normals((size_t)(hd * nkv * ntok), 2), *old = normals((size_t)(hd * nkv * n_ctx), 1);
	int32_t *pos = malloc(sizeof(int32_t) * (size_t)ntok);
	int32_t start = (int32_t)(qu_rand() % (uint32_t)(n_ctx - ntok + 1));
	for (int64_t i = 0; i < ntok; i++) /* a batch is consecutive; decode scatters */
		pos[i] = start + (int32_t)i;
	size_t rs = quant_row_size(t, (uint64_t)hd, NULL);
	uint8_t *init = malloc(rs * (size_t)(nkv * n_ctx));
	for (int64_t r = 0; r < nkv * n_ctx; r++)
		quant_quantize_row(t, old + r * hd, init + rs * (size_t)r, (uint64_t)hd);
	int64_t cne[3] = {hd, nkv, n_ctx}, xne[3] = {hd, nkv, ntok}, pne[1] = {ntok};
	struct tern_buf cw, cv, xb = in_buf(be, QT_F32, 3, xne, x), pb = in_buf(be, QT_I32, 1, pne, pos);
	out_buf(be, &cw, &cv, t, hd, nkv * n_ctx, 3, cne, init);
	be->kv_store(be, &cv, &xb, &pb, NULL);
	*out = take_out(be, &cw, desc);
	*n = (size_t)(hd * nkv * n_ctx);
	/* independent: the stored rows are x through quant/'s encoder, the
	 * others untouched */
	float *row = malloc(sizeof(float) * (size_t)hd);
	uint8_t *q = malloc(rs);
	for (int64_t p = 0; p < n_ctx; p++)
		for (int64_t h = 0; h < nkv; h++) {
			const float *src = p >= start && p < start + ntok ? x + ((p - start) * nkv + h) * hd : NULL;
			if (src)
				quant_quantize_row(t, src, q, (uint64_t)hd);
			quant_dequantize_row(t, src ? q : init + rs * (size_t)(p * nkv + h), row, (uint64_t)hd);
			if (memcmp(row, *out + (p * nkv + h) * hd, sizeof(float) * (size_t)hd) != 0)
				fail_msg("%s: %s: cache row %lld head %lld", be->name, desc, (long long)p, (long long)h);
		}
	free(row);
	free(q);
	free(x);
	free(old);
	free(init);
	free(pos);
	be->buf_free(be, &xb);
	be->buf_free(be, &pb);
	return true;
}

struct attn_case {
	int64_t hd, nh, nkv, ntok;
	int32_t n_past; /* the batch sits at positions n_past.. */
	int32_t window;
	float softcap;
	int reversed; /* 1: positions n_past + ntok - 1 - t; 2: every query at n_past + ntok - 1 */
	int sinks;    /* per-head sink logits (gpt-oss) */
};

static const struct attn_case attn_cases[] = {
	{64, 1, 1, 1, 0, 0, 0, 0, 0},       {64, 4, 1, 1, 37, 0, 0, 0, 0},     {80, 3, 1, 5, 3, 0, 0, 0, 0},
	{128, 8, 1, 1, 200, 0, 0, 0, 0},    {128, 8, 2, 17, 40, 0, 0, 0, 0},   {256, 4, 1, 1, 99, 16, 0, 0, 0},
	{256, 4, 4, 9, 10, 8, 0, 0, 0},     {64, 12, 4, 300, 0, 0, 0, 0, 0},   {128, 6, 2, 300, 5, 64, 0, 0, 0},
	{64, 8, 8, 2, 63, 64, 0, 0, 0},     {64, 8, 8, 2, 64, 64, 30.f, 0, 0}, {80, 9, 3, 40, 1, 5, 50.f, 0, 0},
	{128, 16, 2, 1, 330, 128, 0, 0, 0}, {32, 3, 3, 12, 0, 1, 0, 0, 0},
	/* one token over a long context (the optimized backend splits the
	 * keys into chunks), Gemma 3's shape, a group wider than a unit */
	{64, 8, 2, 1, 700, 0, 0, 0, 0},     {256, 4, 1, 1, 600, 512, 0, 0, 0}, {64, 9, 3, 1, 1000, 0, 20.f, 0, 0},
	{32, 80, 1, 3, 70, 0, 0, 0, 0},     {256, 4, 1, 40, 3, 16, 30.f, 0, 0},
	/* a batch whose positions run backwards: masks per row, not per tile */
	{64, 8, 2, 70, 20, 0, 0, 1, 0},   {128, 4, 4, 33, 0, 16, 0, 1, 0},
	/* every query at the last position: an encoder's non-causal
	 * attention (lib/llm/embed.c), each token sees every key */
	{64, 4, 4, 9, 0, 0, 0, 2, 0},   {64, 12, 12, 130, 0, 0, 0, 2, 0}, {64, 4, 4, 1, 0, 0, 0, 2, 0},
	/* attention sinks: decode (split and not), batches, a window */
	{64, 8, 2, 1, 30, 0, 0, 0, 1},   {64, 8, 2, 1, 700, 0, 0, 0, 1}, {64, 4, 2, 24, 0, 4, 0, 0, 1},
	{64, 12, 4, 300, 0, 128, 0, 0, 1}, {80, 3, 1, 5, 3, 0, 0, 0, 1},
};

/* Fill a cache with n_ctx rows of random K or V through kv_store (the
 * rows the query may see, and more), positions 0..n_ctx-1. */
static struct tern_buf make_cache(struct tern_backend *be, uint32_t t, int64_t hd, int64_t nkv, int64_t n_ctx,
				  const float *rows)
{
	tern_err e = {0};
	int64_t cne[3] = {hd, nkv, n_ctx}, xne[3] = {hd, nkv, n_ctx}, pne[1] = {n_ctx};
	struct tern_buf c;
	if (be->buf_alloc(be, &c, t, 3, cne, &e))
		fail_msg("%s", e.msg);
	int32_t *pos = malloc(sizeof(int32_t) * (size_t)n_ctx);
	for (int64_t i = 0; i < n_ctx; i++)
		pos[i] = (int32_t)i;
	struct tern_buf xb = in_buf(be, QT_F32, 3, xne, rows), pb = in_buf(be, QT_I32, 1, pne, pos);
	be->kv_store(be, &c, &xb, &pb, NULL);
	if (be->sync(be, &e))
		fail_msg("%s", e.msg);
	be->buf_free(be, &xb);
	be->buf_free(be, &pb);
	free(pos);
	return c;
}

/* softmax(q k^T) v the quadratic way: every score of the row, masked,
 * then normalized; k, v as f32 [n_ctx][nkv][hd] */
static void naive_attention(const struct attn_case *c, const float *q, const float *k, const float *v,
			    const int32_t *pos, int64_t n_ctx, float scale, const float *sinks, double *y)
{
	double *s = malloc(sizeof(double) * (size_t)n_ctx);
	for (int64_t t = 0; t < c->ntok; t++)
		for (int64_t h = 0; h < c->nh; h++) {
			int64_t kh = h * c->nkv / c->nh;
			double mx = -INFINITY, sum = 0;
			for (int64_t p = 0; p < n_ctx; p++) {
				bool vis = p <= pos[t] && (c->window == 0 || pos[t] - p < c->window);
				double d = 0;
				for (int64_t i = 0; i < c->hd; i++)
					d += (double)q[(t * c->nh + h) * c->hd + i] * k[(p * c->nkv + kh) * c->hd + i];
				d *= scale;
				if (c->softcap > 0)
					d = c->softcap * tanh(d / c->softcap);
				s[p] = vis ? d : -INFINITY;
				mx = s[p] > mx ? s[p] : mx;
			}
			if (sinks) /* the sink: one more term of the denominator */
				mx = sinks[h] > mx ? sinks[h] : mx;
			for (int64_t p = 0; p < n_ctx; p++) {
				s[p] = exp(s[p] - mx);
				sum += s[p];
			}
			if (sinks)
				sum += exp(sinks[h] - mx);
			for (int64_t i = 0; i < c->hd; i++) {
				double a = 0;
				for (int64_t p = 0; p < n_ctx; p++)
					a += s[p] * v[(p * c->nkv + kh) * c->hd + i];
				y[(t * c->nh + h) * c->hd + i] = a / sum;
			}
		}
	free(s);
}

static bool case_attention(struct tern_backend *be, int ci, float **out, size_t *n, char *desc, size_t dn)
{
	int na = (int)(sizeof attn_cases / sizeof *attn_cases);
	if (ci >= na * 5)
		return false;
	/* -ctk and -ctv are independent: the same types, and mixed pairs */
	static const uint32_t kv_types[][2] = {
		{QT_F32, QT_F32}, {QT_F16, QT_F16}, {QT_Q8_0, QT_Q8_0}, {QT_F16, QT_Q8_0}, {QT_Q8_0, QT_F32},
	};
	const struct attn_case *c = &attn_cases[ci / 5];
	uint32_t tk = kv_types[ci % 5][0], tv = kv_types[ci % 5][1];
	if (c->hd % 32 && (tk == QT_Q8_0 || tv == QT_Q8_0)) {
		*n = 0;
		return true;
	}
	snprintf(desc, dn, "attention K %s V %s hd %lld, %lld/%lld heads, %lld tokens from %d, window %d, cap %g%s",
		 quant_type_name(tk), quant_type_name(tv), (long long)c->hd, (long long)c->nh, (long long)c->nkv,
		 (long long)c->ntok, c->n_past, c->window, (double)c->softcap, c->sinks ? ", sinks" : "");
	qu_seed((uint64_t)ci + 401);
	int64_t n_ctx = c->n_past + c->ntok + 3; /* rows past the last position: must stay unseen */
	size_t qn = (size_t)(c->hd * c->nh * c->ntok), kn = (size_t)(c->hd * c->nkv * n_ctx);
	float *q = normals(qn, 1), *k = normals(kn, 1), *v = normals(kn, 1);
	for (size_t i = 0; i < kn; i += 7)
		k[i] *= 4; /* some large scores: the running maximum must move */
	int32_t *pos = malloc(sizeof(int32_t) * (size_t)c->ntok);
	for (int64_t t = 0; t < c->ntok; t++)
		pos[t] = c->n_past + (int32_t)(c->reversed == 2 ? c->ntok - 1 : c->reversed ? c->ntok - 1 - t : t);
	struct tern_buf kb = make_cache(be, tk, c->hd, c->nkv, n_ctx, k), vb = make_cache(be, tv, c->hd, c->nkv, n_ctx, v);
	int64_t qne[3] = {c->hd, c->nh, c->ntok}, pne[1] = {c->ntok};
	struct tern_buf qb = in_buf(be, QT_F32, 3, qne, q), pb = in_buf(be, QT_I32, 1, pne, pos), yw, yv;
	out_buf(be, &yw, &yv, QT_F32, c->hd, c->nh * c->ntok, 3, qne, NULL);
	/* sinks around the scores' own scale: some above every score, some below */
	float *sk = c->sinks ? normals((size_t)c->nh, 3) : NULL;
	int64_t sne[1] = {c->nh};
	struct tern_buf sb = {0};
	if (sk)
		sb = in_buf(be, QT_F32, 1, sne, sk);
	struct tern_attn p = {.scale = 1.0f / sqrtf((float)c->hd), .window = c->window, .softcap = c->softcap,
			      .sinks = sk ? &sb : NULL};
	be->attention(be, &qb, &kb, &vb, &pb, NULL, &yv, &p);
	*out = take_out(be, &yw, desc);
	*n = qn;
	/* independent, on the reference: the quadratic softmax over the f32
	 * cache (the other caches are the same math over decoded rows) */
	if ((be->caps & TERN_BACKEND_REFERENCE) && tk == QT_F32 && tv == QT_F32) {
		double *y = malloc(sizeof(double) * qn);
		naive_attention(c, q, k, v, pos, n_ctx, p.scale, sk, y);
		double num = 0, den = 0;
		for (size_t i = 0; i < qn; i++) {
			num += (y[i] - (*out)[i]) * (y[i] - (*out)[i]);
			den += y[i] * y[i];
		}
		if (!(num / den < 1e-9))
			fail_msg("%s: %s: NMSE %.3g against the quadratic softmax", be->name, desc, num / den);
		free(y);
	}
	free(q);
	free(k);
	free(v);
	free(pos);
	free(sk);
	if (sb.mem)
		be->buf_free(be, &sb);
	be->buf_free(be, &kb);
	be->buf_free(be, &vb);
	be->buf_free(be, &qb);
	be->buf_free(be, &pb);
	return true;
}

/* ggml's f16 flash attention (tern_attn.f16_split, whisper.cpp's numbers):
 * f16 caches, heads of 64 in groups, 1..5 tokens, 1..3 chunks of keys,
 * against a plain restatement of its rule on the reference backend: Q to
 * f16, a score per key, the running V sum rounded to f16 after each
 * rescale and each added row, chunks combined in f32 in order. With
 * tern_attn.ggml (the embeddings'): the same rule in ggml's order of sums
 * with fused multiply-adds, and without f16_split ggml's tiled kernel, an
 * f32 attention over the f16 caches (the query not rounded), restated as
 * a plain attention in double. */
static const struct {
	int64_t nh, nkv, ntok, n_ctx;
	int n_past, split;
	bool ggml;
} f16a_cases[] = {{2, 2, 1, 40, 30, 1, false},	   {4, 2, 3, 60, 50, 1, false},	  {2, 1, 1, 600, 599, 2, false},
		  {6, 6, 1, 1536, 1535, 3, false}, {2, 2, 5, 300, 295, 1, false}, {2, 2, 1, 100, 10, 2, false},
		  {4, 2, 3, 60, 50, 1, true},	   {2, 2, 5, 300, 295, 1, true},  {4, 2, 70, 100, 99, 0, true},
		  {2, 1, 5, 300, 295, 0, true}};

static bool case_attention_f16(struct tern_backend *be, int ci, float **out, size_t *n, char *desc, size_t dn)
{
	if (ci >= (int)(sizeof f16a_cases / sizeof *f16a_cases))
		return false;
	if (!tern_backend_ggml(be)) { /* ggml's rounding: the CPU's alone */
		*n = 0;
		return true;
	}
	const int64_t hd = 64, nh = f16a_cases[ci].nh, nkv = f16a_cases[ci].nkv, ntok = f16a_cases[ci].ntok;
	const int64_t n_ctx = f16a_cases[ci].n_ctx;
	const int split = f16a_cases[ci].split;
	const bool gg = f16a_cases[ci].ggml;
	snprintf(desc, dn, "attention f16 %lld/%lld heads, %lld tokens from %d of %lld, split %d%s", (long long)nh,
		 (long long)nkv, (long long)ntok, f16a_cases[ci].n_past, (long long)n_ctx, split, gg ? ", ggml" : "");
	qu_seed((uint64_t)ci + 901);
	size_t qn = (size_t)(hd * nh * ntok), kn = (size_t)(hd * nkv * n_ctx);
	float *q = normals(qn, 1), *k = normals(kn, 1), *v = normals(kn, 1);
	for (size_t i = 0; i < kn; i += 7)
		k[i] *= 4;
	int32_t *pos = malloc(sizeof(int32_t) * (size_t)ntok);
	for (int64_t t = 0; t < ntok; t++)
		pos[t] = f16a_cases[ci].n_past + (int32_t)t - (int32_t)(ntok - 1) * (f16a_cases[ci].n_past >= ntok);
	struct tern_buf kb = make_cache(be, QT_F16, hd, nkv, n_ctx, k), vb = make_cache(be, QT_F16, hd, nkv, n_ctx, v);
	int64_t qne[3] = {hd, nh, ntok}, pne[1] = {ntok};
	struct tern_buf qb = in_buf(be, QT_F32, 3, qne, q), pb = in_buf(be, QT_I32, 1, pne, pos), yw, yv;
	out_buf(be, &yw, &yv, QT_F32, hd, nh * ntok, 3, qne, NULL);
	struct tern_attn p = {.scale = 0.125f, .f16_split = split, .ggml = gg};
	be->attention(be, &qb, &kb, &vb, &pb, NULL, &yv, &p);
	*out = take_out(be, &yw, desc);
	*n = qn;
	if (be->caps & TERN_BACKEND_REFERENCE) {
#define H(x) quant_fp16_to_f32(quant_f32_to_fp16(x))
		const int64_t cs = split ? (n_ctx + split - 1) / split : n_ctx;
		double num = 0, den = 0;
		for (int64_t t = 0; t < ntok; t++)
			for (int64_t h = 0; h < nh; h++) {
				const float *qr = q + (t * nh + h) * hd;
				const int64_t kh = h / (nh / nkv);
				float fin[64] = {0}, mf = -INFINITY, sf = 0;
				for (int64_t c0 = 0; c0 < n_ctx; c0 += cs) {
					float acc[64] = {0}, m = -INFINITY, s = 0;
					for (int64_t j = c0; j < c0 + cs && j < n_ctx && j <= pos[t]; j++) {
						const float *kr = k + (j * nkv + kh) * hd, *vr = v + (j * nkv + kh) * hd;
						float sc = 0;
						for (int64_t d = 0; d < hd; d++)
							sc += H(kr[d]) * H(qr[d]);
						sc *= p.scale;
						float ms = 1, vs = 1;
						if (sc > m) {
							ms = expf(m - sc);
							m = sc;
							for (int64_t d = 0; d < hd; d++)
								acc[d] = H(acc[d] * ms);
						} else {
							vs = expf(sc - m);
						}
						for (int64_t d = 0; d < hd; d++)
							acc[d] = H(acc[d] + H(vr[d]) * vs);
						s = s * ms + vs;
					}
					if (s == 0)
						continue;
					float mn = fmaxf(mf, m), so = expf(mf - mn), sn = expf(m - mn);
					for (int64_t d = 0; d < hd; d++)
						fin[d] = fin[d] * so + acc[d] * sn;
					sf = sf * so + s * sn;
					mf = mn;
				}
				double plain[64] = {0}, pm = -INFINITY, ps = 0;
				if (!split) { /* the tiled kernel: softmax in double over the f16 keys */
					for (int64_t j = 0; j < n_ctx && j <= pos[t]; j++) {
						double sc = 0;
						for (int64_t d = 0; d < hd; d++)
							sc += (double)H(k[(j * nkv + kh) * hd + d]) * qr[d];
						pm = fmax(pm, sc * p.scale);
					}
					for (int64_t j = 0; j < n_ctx && j <= pos[t]; j++) {
						double sc = 0;
						for (int64_t d = 0; d < hd; d++)
							sc += (double)H(k[(j * nkv + kh) * hd + d]) * qr[d];
						double w = exp(sc * p.scale - pm);
						ps += w;
						for (int64_t d = 0; d < hd; d++)
							plain[d] += w * H(v[(j * nkv + kh) * hd + d]);
					}
				}
				for (int64_t d = 0; d < hd; d++) {
					double e = split ? fin[d] / sf : plain[d] / ps, g = (*out)[(t * nh + h) * hd + d];
					num += (e - g) * (e - g);
					den += e * e;
				}
			}
#undef H
		/* the sums' order and fused multiply-adds move an f16 rounding
		 * now and then: ~1e-7; the f32 attention is ~1e-5 away. The
		 * tiled kernel, f32 against double: ~1e-13 */
		if (!(num / den < (split ? 1e-6 : 1e-10)))
			fail_msg("%s: %s: NMSE %.3g against the restated rule", be->name, desc, num / den);
	}
	free(q);
	free(k);
	free(v);
	free(pos);
	be->buf_free(be, &kb);
	be->buf_free(be, &vb);
	be->buf_free(be, &qb);
	be->buf_free(be, &pb);
	return true;
}

static const int64_t ew_shapes[][2] = {{1, 1}, {7, 3}, {4096, 2}, {100, 300}, {2048, 1}};
#define N_EW_SHAPES ((int)(sizeof ew_shapes / sizeof *ew_shapes))

/* glu, unary, add (full and a bias row), scale, softmax; kinds x shapes,
 * some in place */
static bool case_eltwise(struct tern_backend *be, int ci, float **out, size_t *n, char *desc, size_t dn)
{
	enum { K_SWIGLU, K_GEGLU, K_GELU, K_GELU_ERF, K_SILU, K_GELU_F16, K_ADD, K_BIAS, K_SCALE, K_SOFTMAX, K_OAI, K_SIGMOID, K_N };
	static const char *names[] = {"swiglu", "geglu",   "gelu",       "gelu_erf", "silu",   "gelu_f16",
				      "add", "add bias", "scale", "softmax", "swiglu_oai", "sigmoid"};
	if (ci >= K_N * N_EW_SHAPES * 2)
		return false;
	int kind = ci / (N_EW_SHAPES * 2), si = ci / 2 % N_EW_SHAPES;
	bool inplace = ci % 2;
	if (kind == K_GELU_F16 && !tern_backend_ggml(be)) { /* ggml's f16 table: the CPU's alone */
		*n = 0;
		return true;
	}
	int64_t ne0 = ew_shapes[si][0], rows = ew_shapes[si][1];
	snprintf(desc, dn, "%s %lldx%lld%s", names[kind], (long long)ne0, (long long)rows, inplace ? " in place" : "");
	qu_seed((uint64_t)ci + 501);
	size_t cnt = (size_t)(ne0 * rows);
	/* swiglu_oai: an up wide enough to pass its clamp at 7 too */
	float *a = normals(cnt, 3), *b = normals(cnt, kind == K_OAI ? 5 : 2);
	int64_t ne[2] = {ne0, rows}, bne[2] = {ne0, kind == K_BIAS ? 1 : rows};
	struct tern_buf aw, av, yw, yv, bb = in_buf(be, QT_F32, 2, bne, b);
	out_buf(be, &aw, &av, QT_F32, ne0, rows, 2, ne, a);
	struct tern_buf *y = &av;
	if (!inplace) {
		out_buf(be, &yw, &yv, QT_F32, ne0, rows, 2, ne, NULL);
		y = &yv;
	}
	switch (kind) {
	case K_SWIGLU:
		be->glu(be, &av, &bb, y, TERN_GLU_SWIGLU);
		break;
	case K_GEGLU:
		be->glu(be, &av, &bb, y, TERN_GLU_GEGLU);
		break;
	case K_GELU:
	case K_GELU_ERF:
	case K_SILU:
		be->unary(be, &av, y, kind == K_GELU ? TERN_UNARY_GELU : kind == K_SILU ? TERN_UNARY_SILU : TERN_UNARY_GELU_ERF);
		break;
	case K_GELU_F16:
		be->unary(be, &av, y, TERN_UNARY_GELU_F16);
		break;
	case K_ADD:
	case K_BIAS:
		be->add(be, &av, &bb, y);
		break;
	case K_OAI:
		be->glu(be, &av, &bb, y, TERN_GLU_SWIGLU_OAI);
		break;
	case K_SIGMOID:
		be->unary(be, &av, y, TERN_UNARY_SIGMOID);
		break;
	case K_SCALE:
		be->scale(be, &av, y, 33.94f);
		break;
	default:
		be->softmax(be, &av, y);
	}
	float *ao = take_out(be, &aw, desc);
	*out = inplace ? ao : take_out(be, &yw, desc);
	if (!inplace)
		free(ao);
	*n = cnt;
	/* independent: the formulas, in double, per element */
	for (int64_t r = 0; r < rows; r++) {
		double m = -INFINITY, sum = 0;
		for (int64_t i = 0; i < ne0; i++)
			m = a[r * ne0 + i] > m ? a[r * ne0 + i] : m;
		for (int64_t i = 0; i < ne0; i++)
			sum += exp(a[r * ne0 + i] - m);
		for (int64_t i = 0; i < ne0; i++) {
			double x = a[r * ne0 + i], g = b[r * ne0 + i], e;
			double gt = 0.5 * x * (1 + tanh(sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
			switch (kind) {
			case K_SWIGLU: e = x / (1 + exp(-x)) * g; break;
			case K_GEGLU: e = gt * g; break;
			case K_GELU: e = gt; break;
			case K_GELU_ERF: e = 0.5 * x * (1 + erf(x / sqrt(2))); break;
			case K_SILU: e = x / (1 + exp(-x)); break;
			case K_GELU_F16: { /* ggml's: f16 in, the tanh GELU in float, f16 out */
				float h = quant_fp16_to_f32(quant_f32_to_fp16((float)x));
				float gh = 0.5f * h * (1.0f + tanhf(0.7978845608f * h * (1.0f + 0.044715f * h * h)));
				e = x <= -10 ? 0 : x >= 10 ? x : quant_fp16_to_f32(quant_f32_to_fp16(gh));
				if ((*out)[r * ne0 + i] != (float)e)
					fail_msg("%s: %s: element %lld,%lld is %.9g, expected %.9g", be->name, desc,
						 (long long)r, (long long)i, (*out)[r * ne0 + i], e);
				break;
			}
			case K_ADD: e = x + g; break;
			case K_BIAS: e = x + b[i]; break;
			case K_SCALE: e = x * 33.94f; break;
			case K_OAI: /* the gate capped at 7, the up clamped to +-7 and shifted */
				e = fmin(x, 7) / (1 + exp(-1.702 * fmin(x, 7))) * (fmax(fmin(g, 7), -7) + 1);
				break;
			case K_SIGMOID: e = 1 / (1 + exp(-x)); break;
			default: e = exp(x - m) / sum;
			}
			double got = (*out)[r * ne0 + i];
			if (fabs(got - e) > 1e-5 * (1 + fabs(e)))
				fail_msg("%s: %s: element %lld,%lld is %g, expected %g", be->name, desc, (long long)r,
					 (long long)i, got, e);
		}
	}
	free(a);
	free(b);
	be->buf_free(be, &bb);
	return true;
}

/* copy: the same type, f32 to f16 / q8_0 / bf16 and back */
static bool case_copy(struct tern_backend *be, int ci, float **out, size_t *n, char *desc, size_t dn)
{
	static const uint32_t pairs[][2] = {{QT_F32, QT_F32}, {QT_F32, QT_F16}, {QT_F32, QT_Q8_0}, {QT_F16, QT_F32},
					    {QT_Q8_0, QT_F32}, {QT_F16, QT_F16}, {QT_F32, QT_BF16}, {QT_Q4_K, QT_F32}};
	static const int64_t shapes[][2] = {{256, 1}, {512, 3}, {4096, 2}, {256, 300}};
	if (ci >= 8 * 4)
		return false;
	uint32_t ts = pairs[ci / 4][0], td = pairs[ci / 4][1];
	int64_t ne0 = shapes[ci % 4][0], rows = shapes[ci % 4][1];
	snprintf(desc, dn, "copy %s to %s %lldx%lld", quant_type_name(ts), quant_type_name(td), (long long)ne0,
		 (long long)rows);
	qu_seed((uint64_t)ci + 601);
	size_t rs = quant_row_size(ts, (uint64_t)ne0, NULL);
	uint8_t *src = malloc(rs * (size_t)rows);
	for (int64_t r = 0; r < rows; r++)
		qu_make_row(ts, src + rs * (size_t)r, ne0, 0);
	int64_t ne[2] = {ne0, rows};
	struct tern_buf sb = in_buf(be, ts, 2, ne, src), dw, dv;
	out_buf(be, &dw, &dv, td, ne0, rows, 2, ne, NULL);
	be->copy(be, &sb, &dv);
	*out = take_out(be, &dw, desc);
	*n = (size_t)(ne0 * rows);
	/* independent: quant/'s decoder (and encoder) row by row */
	float *f = malloc(sizeof(float) * (size_t)ne0), *g = malloc(sizeof(float) * (size_t)ne0);
	uint8_t *d = malloc(quant_row_size(td, (uint64_t)ne0, NULL));
	for (int64_t r = 0; r < rows; r++) {
		quant_dequantize_row(ts, src + rs * (size_t)r, f, (uint64_t)ne0);
		quant_quantize_row(td, f, d, (uint64_t)ne0);
		quant_dequantize_row(td, d, g, (uint64_t)ne0);
		if (memcmp(g, *out + r * ne0, sizeof(float) * (size_t)ne0) != 0)
			fail_msg("%s: %s: row %lld", be->name, desc, (long long)r);
	}
	free(f);
	free(g);
	free(d);
	free(src);
	be->buf_free(be, &sb);
	return true;
}

/* im2col: rows of a convolution's input over channels, lengths and
 * geometries (Whisper's two: kernel 3, stride 1 and 2, padding 1), against
 * the definition written out here */
static bool case_im2col(struct tern_backend *be, int ci, float **out, size_t *n, char *desc, size_t dn)
{
	static const int geoms[][5] = {/* n_ch, len, k, stride, pad */
				       {80, 300, 3, 1, 1}, {384, 101, 3, 2, 1}, {7, 11, 3, 2, 1}, {13, 50, 5, 3, 2},
				       {1, 1, 1, 1, 0},    {5, 4, 3, 1, 2},    {3, 2, 3, 5, 1},   {64, 9, 4, 2, 0}};
	if (ci >= (int)(sizeof geoms / sizeof *geoms))
		return false;
	const int *c = geoms[ci];
	struct tern_conv p = {.k = c[2], .stride = c[3], .pad = c[4]};
	int64_t n_ch = c[0], len = c[1], n_out = (len + 2 * p.pad - p.k) / p.stride + 1, rl = n_ch * p.k;
	snprintf(desc, dn, "im2col %lldx%lld k%d s%d p%d", (long long)n_ch, (long long)len, p.k, p.stride, p.pad);
	float *x = malloc(sizeof(float) * (size_t)(n_ch * len));
	for (int64_t i = 0; i < n_ch * len; i++)
		x[i] = (float)(i % 1000) * 0.25f - 100;
	int64_t xne[2] = {n_ch, len}, yne[2] = {rl, n_out};
	struct tern_buf xb = in_buf(be, QT_F32, 2, xne, x), yw, yv;
	out_buf(be, &yw, &yv, QT_F32, rl, n_out, 2, yne, NULL);
	be->im2col(be, &xb, &yv, &p);
	*out = take_out(be, &yw, desc);
	*n = (size_t)(rl * n_out);
	for (int64_t t = 0; t < n_out; t++)
		for (int64_t ch = 0; ch < n_ch; ch++)
			for (int j = 0; j < p.k; j++) {
				int64_t src = t * p.stride + j - p.pad;
				float want = src >= 0 && src < len ? x[src * n_ch + ch] : 0.0f;
				if ((*out)[t * rl + ch * p.k + j] != want)
					fail_msg("%s: %s: row %lld, channel %lld, tap %d", be->name, desc, (long long)t,
						 (long long)ch, j);
			}
	free(x);
	be->buf_free(be, &xb);
	return true;
}

/* attention with V narrower than K (multi-head latent attention): one K
 * head of dk = kv_lora_rank + rope dims shared by every query head, V the
 * first dv columns of that same cache (a column window, no copy), or a
 * cache of its own */
struct mla_case {
	int64_t dk, dv, nh, ntok;
	int32_t n_past;
	bool own_v; /* V in a cache of its own, not a window of K */
};

static const struct mla_case mla_cases[] = {
	{96, 64, 4, 1, 20, false},  {96, 64, 4, 24, 0, false},   {576, 512, 16, 1, 300, false},
	{576, 512, 8, 40, 5, false}, {48, 32, 3, 7, 2, false},    {48, 16, 5, 1, 9, false},
	{96, 64, 2, 1, 500, true},   {160, 128, 6, 30, 11, true},
};

static bool case_attention_mla(struct tern_backend *be, int ci, float **out, size_t *n, char *desc, size_t dn)
{
	int na = (int)(sizeof mla_cases / sizeof *mla_cases);
	if (ci >= na * 3)
		return false;
	const struct mla_case *c = &mla_cases[ci / 3];
	uint32_t t = cache_types[ci % 3];
	if ((c->dk % 32 || c->dv % 32) && t == QT_Q8_0) {
		*n = 0;
		return true;
	}
	snprintf(desc, dn, "attention (latent) %s dk %lld dv %lld%s, %lld heads, %lld tokens from %d", quant_type_name(t),
		 (long long)c->dk, (long long)c->dv, c->own_v ? " own V" : "", (long long)c->nh, (long long)c->ntok,
		 c->n_past);
	qu_seed((uint64_t)ci + 451);
	int64_t n_ctx = c->n_past + c->ntok + 2;
	size_t qn = (size_t)(c->dk * c->nh * c->ntok), yn = (size_t)(c->dv * c->nh * c->ntok);
	size_t kn = (size_t)(c->dk * n_ctx), vn = (size_t)(c->dv * n_ctx);
	float *q = normals(qn, 1), *k = normals(kn, 1), *vo = normals(vn, 1);
	for (size_t i = 0; i < kn; i += 5)
		k[i] *= 4;
	int32_t *pos = malloc(sizeof(int32_t) * (size_t)c->ntok);
	for (int64_t i = 0; i < c->ntok; i++)
		pos[i] = c->n_past + (int32_t)i;
	struct tern_buf kb = make_cache(be, t, c->dk, 1, n_ctx, k), vcache = {0}, vb;
	if (c->own_v) {
		vcache = make_cache(be, t, c->dv, 1, n_ctx, vo);
		vb = vcache;
	} else {
		vb = tern_buf_cols(&kb, 0, c->dv);
	}
	int64_t qne[3] = {c->dk, c->nh, c->ntok}, yne[3] = {c->dv, c->nh, c->ntok}, pne[1] = {c->ntok};
	struct tern_buf qb = in_buf(be, QT_F32, 3, qne, q), pb = in_buf(be, QT_I32, 1, pne, pos), yw, yv;
	out_buf(be, &yw, &yv, QT_F32, c->dv, c->nh * c->ntok, 3, yne, NULL);
	struct tern_attn p = {.scale = 1.0f / sqrtf((float)c->dk)};
	be->attention(be, &qb, &kb, &vb, &pb, NULL, &yv, &p);
	*out = take_out(be, &yw, desc);
	*n = yn;
	/* independent, on the reference's f32 cache: the quadratic softmax,
	 * V's rows being the first dv values of K's (or their own) */
	if ((be->caps & TERN_BACKEND_REFERENCE) && t == QT_F32) {
		double num = 0, den = 0, *s = malloc(sizeof(double) * (size_t)n_ctx);
		for (int64_t ti = 0; ti < c->ntok; ti++)
			for (int64_t h = 0; h < c->nh; h++) {
				double mx = -INFINITY, sum = 0;
				for (int64_t pp = 0; pp <= pos[ti]; pp++) {
					double d = 0;
					for (int64_t i = 0; i < c->dk; i++)
						d += (double)q[(ti * c->nh + h) * c->dk + i] * k[pp * c->dk + i];
					s[pp] = d * p.scale;
					mx = s[pp] > mx ? s[pp] : mx;
				}
				for (int64_t pp = 0; pp <= pos[ti]; pp++)
					sum += (s[pp] = exp(s[pp] - mx));
				for (int64_t i = 0; i < c->dv; i++) {
					double a = 0;
					for (int64_t pp = 0; pp <= pos[ti]; pp++)
						a += s[pp] * (c->own_v ? vo[pp * c->dv + i] : k[pp * c->dk + i]);
					double got = (*out)[(ti * c->nh + h) * c->dv + i];
					num += (a / sum - got) * (a / sum - got);
					den += (a / sum) * (a / sum);
				}
			}
		if (!(num / den < 1e-9))
			fail_msg("%s: %s: NMSE %.3g against the quadratic softmax", be->name, desc, num / den);
		free(s);
	}
	free(q);
	free(k);
	free(vo);
	free(pos);
	be->buf_free(be, &kb);
	be->buf_free(be, &vcache);
	be->buf_free(be, &qb);
	be->buf_free(be, &pb);
	return true;
}

/* copy between column windows (tern_buf_cols): a window of wide rows into
 * a packed buffer, and a packed buffer into a window of rows whose other
 * columns must keep their values (MLA splits and joins heads this way) */
static bool case_copy_cols(struct tern_backend *be, int ci, float **out, size_t *n, char *desc, size_t dn)
{
	static const int64_t geo[][4] = {/* wide ne0, c0, width, rows */
					 {96, 64, 32, 5}, {96, 0, 64, 5}, {192, 128, 64, 12}, {576, 0, 512, 3}, {64, 32, 32, 300}};
	if (ci >= 5 * 4)
		return false;
	const int64_t *g = geo[ci / 4];
	int mode = ci % 4; /* 0: window -> packed f32; 1: packed -> window; 2: f32 window -> f16; 3: both windows, 3-D */
	int64_t wide = g[0], c0 = g[1], w = g[2], rows = g[3];
	snprintf(desc, dn, "copy columns %lld..%lld of %lld, %lld rows, mode %d", (long long)c0, (long long)(c0 + w),
		 (long long)wide, (long long)rows, mode);
	qu_seed((uint64_t)ci + 651);
	float *a = normals((size_t)(wide * rows), 1), *b = normals((size_t)(wide * rows), 1);
	int64_t wne[2] = {wide, rows}, pne[2] = {w, rows};
	struct tern_buf ow, ov;
	if (mode == 1 || mode == 3) {
		/* the destination: wide rows, initialized from b, a window written */
		int64_t srcne[3] = {mode == 3 ? wide : w, rows, 1};
		struct tern_buf sb = in_buf(be, QT_F32, 2, srcne, a);
		out_buf(be, &ow, &ov, QT_F32, wide, rows, 2, wne, b);
		struct tern_buf src = mode == 3 ? tern_buf_cols(&sb, c0, w) : sb;
		struct tern_buf dst = tern_buf_cols(&ov, mode == 3 ? 0 : c0, w);
		if (mode == 3) { /* the same rows seen as {w, 1, rows}: strides in dims 1 and 2 */
			src.ne[1] = 1, src.ne[2] = rows, src.nb[2] = src.nb[1];
			dst.ne[1] = 1, dst.ne[2] = rows, dst.nb[2] = dst.nb[1];
		}
		be->copy(be, &src, &dst);
		be->buf_free(be, &sb);
		*out = take_out(be, &ow, desc);
		*n = (size_t)(wide * rows);
		int64_t d0 = mode == 3 ? 0 : c0, s0 = mode == 3 ? c0 : 0, sw = mode == 3 ? wide : w;
		for (int64_t r = 0; r < rows; r++)
			for (int64_t i = 0; i < wide; i++) {
				float want = i >= d0 && i < d0 + w ? a[r * sw + s0 + i - d0] : b[r * wide + i];
				if ((*out)[r * wide + i] != want)
					fail_msg("%s: %s: row %lld column %lld", be->name, desc, (long long)r, (long long)i);
			}
	} else {
		uint32_t td = mode == 2 ? QT_F16 : QT_F32;
		struct tern_buf sb = in_buf(be, QT_F32, 2, wne, a), src = tern_buf_cols(&sb, c0, w);
		out_buf(be, &ow, &ov, td, w, rows, 2, pne, NULL);
		be->copy(be, &src, &ov);
		be->buf_free(be, &sb);
		*out = take_out(be, &ow, desc);
		*n = (size_t)(w * rows);
		for (int64_t r = 0; r < rows; r++)
			for (int64_t i = 0; i < w; i++) {
				float want = a[r * wide + c0 + i];
				if (td == QT_F16)
					want = quant_fp16_to_f32(quant_f32_to_fp16(want));
				if ((*out)[r * w + i] != want)
					fail_msg("%s: %s: row %lld column %lld", be->name, desc, (long long)r, (long long)i);
			}
	}
	free(a);
	free(b);
	return true;
}

/* mat_mul_heads: one matrix per head over the weight types DeepSeek files
 * use, one token and batches; independent: each head's product with
 * dequantized weights in double (the activations' Q8 rounding allows
 * ~1e-4 relative) */
static bool case_heads(struct tern_backend *be, int ci, float **out, size_t *n, char *desc, size_t dn)
{
	static const uint32_t types[] = {QT_F32, QT_F16, QT_Q8_0, QT_Q4_0, QT_Q4_K, QT_Q6_K};
	static const int64_t geo[][4] = {/* cols, rows, heads, tokens */
					 {256, 40, 3, 1}, {256, 64, 4, 20}, {512, 128, 2, 3}, {1024, 16, 5, 9}, {256, 7, 16, 1},
					 /* longer rows than the CPU's stack buffer: no limit in the contract */
					 {1536, 24, 3, 10}};
	int nt = (int)(sizeof types / sizeof *types);
	if (ci >= nt * (int)(sizeof geo / sizeof *geo))
		return false;
	uint32_t t = types[ci % nt];
	const int64_t *g = geo[ci / nt];
	int64_t cols = g[0], rows = g[1], nh = g[2], ntok = g[3];
	snprintf(desc, dn, "mat_mul_heads %s %lldx%lld, %lld heads, %lld tokens", quant_type_name(t), (long long)rows,
		 (long long)cols, (long long)nh, (long long)ntok);
	qu_seed((uint64_t)ci + 701);
	size_t rs = quant_row_size(t, (uint64_t)cols, NULL);
	uint8_t *wq = malloc(rs * (size_t)(rows * nh));
	float *wf = malloc(sizeof(float) * (size_t)(cols * rows * nh));
	for (int64_t r = 0; r < rows * nh; r++) {
		qu_make_row(t, wq + rs * (size_t)r, cols, 0);
		quant_dequantize_row(t, wq + rs * (size_t)r, wf + r * cols, (uint64_t)cols);
	}
	float *x = normals((size_t)(cols * nh * ntok), 1);
	struct tern_tensor_view tv = {.type = t, .n_dims = 3, .ne = {(uint64_t)cols, (uint64_t)rows, (uint64_t)nh, 1},
				      .data = wq, .nbytes = rs * (size_t)(rows * nh)};
	tern_err e = {0};
	struct tern_buf wb;
	if (be->buf_weight(be, &wb, &tv, &e))
		fail_msg("%s: %s", be->name, e.msg);
	int64_t xne[3] = {cols, nh, ntok}, yne[3] = {rows, nh, ntok};
	struct tern_buf xb = in_buf(be, QT_F32, 3, xne, x), yw, yv;
	out_buf(be, &yw, &yv, QT_F32, rows, nh * ntok, 3, yne, NULL);
	be->mat_mul_heads(be, &wb, &xb, &yv);
	*out = take_out(be, &yw, desc);
	*n = (size_t)(rows * nh * ntok);
	double num = 0, den = 0;
	for (int64_t ti = 0; ti < ntok; ti++)
		for (int64_t h = 0; h < nh; h++)
			for (int64_t r = 0; r < rows; r++) {
				double d = 0;
				for (int64_t i = 0; i < cols; i++)
					d += (double)wf[(h * rows + r) * cols + i] * x[(ti * nh + h) * cols + i];
				double got = (*out)[(ti * nh + h) * rows + r];
				num += (d - got) * (d - got);
				den += d * d;
			}
	if (!(num / den < (t == QT_F32 || t == QT_F16 ? 1e-10 : 1e-4)))
		fail_msg("%s: %s: NMSE %.3g against the dequantized product", be->name, desc, num / den);
	free(wq);
	free(wf);
	free(x);
	be->buf_free(be, &wb);
	be->buf_free(be, &xb);
	return true;
}

/* NMSE of each op against the reference, which sums in double:
 *   - get_rows, kv_store, copy: the same decoder and encoder: exact (0);
 *   - im2col moves values: exact;
 *   - element-wise, norm, softmax: f32 arithmetic and libm's f32
 *     functions, a relative error of a few 1e-7 per element: NMSE ~1e-13;
 *     a sum of 4096 f32 terms in a norm adds ~1e-6 relative at worst;
 *   - rope: the angle of pair j is built in f32 by j products, as
 *     llama.cpp does: an error of ~pos x j x 2^-24 rad, 1e-4 at pos 5000:
 *     NMSE up to ~1e-8 for the slow pairs; 1e-6;
 *   - norm_rope: a norm (~1e-13) then rope: rope's 1e-6 (and each
 *     backend's own norm and rope, bit for bit);
 *   - attention: f32 scores and online softmax in f32 over up to 1000
 *     keys (with the SIMD exp, ~1 ulp): ~1e-6 relative: NMSE ~1e-11; 1e-9;
 *     the same for the latent (MLA) form;
 *   - mat_mul_heads: the products' tolerance, but the optimized backend
 *     quantizes activations with the ISA's quantizer, whose rounding of
 *     ties differs from the reference's: one Q8 step here and there,
 *     measured up to 1.1e-8 (q4_0); 1e-7.
 * A real bug (a pair swapped, a key off the window, a head of the wrong
 * group, the residual not added) gives 1e-3 and more. */
/* ---- mixture of experts ---- */

/* k distinct experts of n_exp per token (ids[ntok][k]), drawn from the
 * first n_use (so that some experts are never chosen) */
static void draw_ids(int32_t *ids, int64_t ntok, int64_t k, int64_t n_use)
{
	for (int64_t t = 0; t < ntok; t++)
		for (int64_t i = 0; i < k; i++) {
			int32_t e;
			bool taken;
			do {
				e = (int32_t)(qu_rand() % (uint32_t)n_use);
				taken = false;
				for (int64_t j = 0; j < i; j++)
					taken = taken || ids[t * k + j] == e;
			} while (taken);
			ids[t * k + i] = e;
		}
}

struct id_case {
	int64_t n_exp, rows, cols_mul, k, ntok;
	int per_slot; /* x has one row per slot (the down product), else one per token */
	int bias;
};

static const struct id_case id_cases[] = {
	{8, 17, 2, 2, 1, 0, 0},  {8, 33, 1, 2, 1, 1, 1},   {4, 19, 3, 3, 7, 0, 1},  {16, 64, 1, 4, 65, 1, 0},
	{8, 21, 2, 2, 130, 0, 0}, {2, 16, 1, 1, 40, 1, 1}, {64, 9, 1, 8, 1, 0, 1},  {64, 9, 1, 8, 33, 1, 0},
	{3, 5, 1, 3, 600, 0, 0},
};
static const uint32_t id_types[] = {QT_F32, QT_F16, QT_Q8_0, QT_Q4_0, QT_Q4_K, QT_MXFP4, QT_IQ4_XS};
#define N_ID_CASES ((int)(sizeof id_cases / sizeof *id_cases))
#define N_ID_TYPES ((int)(sizeof id_types / sizeof *id_types))

/* mat_mul_id: every type x shape (one token, batches on both sides of the
 * GEMM threshold, inputs per token or per slot, biases) */
static bool case_mat_mul_id(struct tern_backend *be, int ci, float **out, size_t *n, char *desc, size_t dn)
{
	if (ci >= N_ID_CASES * N_ID_TYPES)
		return false;
	const struct id_case *c = &id_cases[ci % N_ID_CASES];
	uint32_t t = id_types[ci / N_ID_CASES];
	int64_t cols = c->cols_mul * col_unit(t), nx = c->per_slot ? c->k : 1, nw = c->n_exp * c->rows;
	snprintf(desc, dn, "mat_mul_id %s %lld experts of %lldx%lld, %lld of them for %lld tokens, x per %s%s",
		 quant_type_name(t), (long long)c->n_exp, (long long)c->rows, (long long)cols, (long long)c->k,
		 (long long)c->ntok, c->per_slot ? "slot" : "token", c->bias ? ", biases" : "");
	qu_seed((uint64_t)ci + 901);
	size_t rs = quant_row_size(t, (uint64_t)cols, NULL);
	uint8_t *file = malloc(rs * (size_t)nw + 1);
	for (int64_t r = 0; r < nw; r++)
		qu_make_row(t, file + 1 + (size_t)r * rs, cols, (int)(r % 5 == 4));
	size_t xn = (size_t)(cols * nx * c->ntok), yn = (size_t)(c->rows * c->k * c->ntok);
	float *x = normals(xn, 1), *bias = normals((size_t)nw, 1);
	int32_t *ids = malloc(sizeof(int32_t) * (size_t)(c->k * c->ntok));
	/* the last expert unused where k leaves room for that */
	draw_ids(ids, c->ntok, c->k, c->n_exp > c->k ? c->n_exp - 1 : c->n_exp);
	struct tern_tensor_view tv = {
		.name = {"blk.0.ffn_up_exps.weight", 24}, .n_dims = 3,
		.ne = {(uint64_t)cols, (uint64_t)c->rows, (uint64_t)c->n_exp, 1}, .type = t,
		.nbytes = rs * (uint64_t)nw, .data = file + 1,
	};
	tern_err e = {0};
	struct tern_buf w;
	if (be->buf_weight(be, &w, &tv, &e) || be->mat_prepare(be, &w, &e))
		fail_msg("%s: %s: %s", be->name, desc, e.msg);
	int64_t xne[3] = {cols, nx, c->ntok}, ine[2] = {c->k, c->ntok}, bne[2] = {c->rows, c->n_exp};
	int64_t yne[3] = {c->rows, c->k, c->ntok};
	struct tern_buf xb = in_buf(be, QT_F32, 3, xne, x), ib = in_buf(be, QT_I32, 2, ine, ids);
	struct tern_buf bb = in_buf(be, QT_F32, 2, bne, bias), yw, yv;
	out_buf(be, &yw, &yv, QT_F32, c->rows, c->k * c->ntok, 3, yne, NULL);
	be->mat_mul_id(be, &w, &xb, &ib, c->bias ? &bb : NULL, &yv);
	*out = take_out(be, &yw, desc);
	*n = yn;
	/* independent, on the reference: the decoded weights of each chosen
	 * expert times the unquantized input, in double; what differs is the
	 * activation's quantization (NMSE ~1e-5 for Q8), a wrong expert, row
	 * or input is ~1 */
	if (be->caps & TERN_BACKEND_REFERENCE) {
		float *wr = malloc(sizeof(float) * (size_t)cols);
		double num = 0, den = 0;
		for (int64_t tok = 0; tok < c->ntok; tok++)
			for (int64_t i = 0; i < c->k; i++) {
				int32_t ex = ids[tok * c->k + i];
				const float *xt = x + (tok * nx + (c->per_slot ? i : 0)) * cols;
				for (int64_t r = 0; r < c->rows; r++) {
					quant_dequantize_row(t, file + 1 + (size_t)(ex * c->rows + r) * rs, wr, (uint64_t)cols);
					double d = c->bias ? bias[ex * c->rows + r] : 0;
					for (int64_t j = 0; j < cols; j++)
						d += (double)wr[j] * xt[j];
					double got = (*out)[(tok * c->k + i) * c->rows + r];
					num += (got - d) * (got - d);
					den += d * d;
				}
			}
		double lim = t == QT_F32 || t == QT_F16 ? 1e-10 : 1e-3;
		if (!(num / den < lim))
			fail_msg("%s: %s: NMSE %.3g against the decoded experts", be->name, desc, num / den);
		free(wr);
	}
	free(file);
	free(x);
	free(bias);
	free(ids);
	struct tern_buf *bufs[] = {&w, &xb, &ib, &bb};
	for (size_t i = 0; i < sizeof bufs / sizeof *bufs; i++)
		be->buf_free(be, bufs[i]);
	return true;
}

struct route_case {
	int64_t n_exp, ntok;
	int k, gating, norm, bias, n_group, n_group_used;
	float scale;
};

static const struct route_case route_cases[] = {
	{8, 1, 2, TERN_MOE_SOFTMAX, 1, 0, 0, 0, 1},        {8, 24, 2, TERN_MOE_SOFTMAX, 0, 0, 0, 0, 1},
	{60, 7, 4, TERN_MOE_SOFTMAX, 0, 0, 0, 0, 1},       {128, 33, 8, TERN_MOE_SOFTMAX, 1, 0, 0, 0, 1},
	{32, 5, 4, TERN_MOE_SOFTMAX_TOPK, 0, 0, 0, 0, 1},  {8, 40, 2, TERN_MOE_SOFTMAX_TOPK, 0, 1, 0, 0, 1},
	{64, 9, 6, TERN_MOE_SIGMOID, 1, 1, 8, 4, 2.5f},    {256, 3, 8, TERN_MOE_SIGMOID, 1, 1, 8, 4, 2.5f},
	{160, 6, 6, TERN_MOE_SOFTMAX, 0, 0, 8, 3, 16.0f},  {4, 3, 4, TERN_MOE_SIGMOID, 0, 0, 0, 0, 1},
	{16, 11, 3, TERN_MOE_SIGMOID, 1, 0, 4, 2, 1},      {1, 2, 1, TERN_MOE_SOFTMAX, 1, 0, 0, 0, 1},
};

/* moe_route: the chosen ids (as floats) then the weights */
static bool case_moe_route(struct tern_backend *be, int ci, float **out, size_t *n, char *desc, size_t dn)
{
	if (ci >= (int)(sizeof route_cases / sizeof *route_cases))
		return false;
	const struct route_case *c = &route_cases[ci];
	snprintf(desc, dn, "moe_route %lld experts, %lld tokens, top %d, gating %d, norm %d, bias %d, groups %d/%d",
		 (long long)c->n_exp, (long long)c->ntok, c->k, c->gating, c->norm, c->bias, c->n_group_used,
		 c->n_group);
	qu_seed((uint64_t)ci + 1201);
	float *lg = normals((size_t)(c->n_exp * c->ntok), 2), *bias = normals((size_t)c->n_exp, 0.3f);
	int64_t lne[2] = {c->n_exp, c->ntok}, bne[1] = {c->n_exp}, one[2] = {c->k, c->ntok};
	struct tern_buf lb = in_buf(be, QT_F32, 2, lne, lg), bb = in_buf(be, QT_F32, 1, bne, bias);
	struct tern_buf iw, iv, ww, wv;
	out_buf(be, &iw, &iv, QT_I32, c->k, c->ntok, 2, one, NULL);
	out_buf(be, &ww, &wv, QT_F32, c->k, c->ntok, 2, one, NULL);
	struct tern_moe_route p = {.gating = c->gating, .k = c->k, .norm = c->norm, .scale = c->scale,
				   .n_group = c->n_group, .n_group_used = c->n_group_used};
	be->moe_route(be, &lb, c->bias ? &bb : NULL, &iv, &wv, &p);
	/* the ids come back as i32: take_out decodes f32 rows, so read them here */
	tern_err e = {0};
	size_t rs = iw.nb[1], cnt = (size_t)(c->k * c->ntok);
	int32_t *ih = malloc(rs * (size_t)(c->ntok + 2));
	be->download(be, &iw, 0, ih, rs * (size_t)(c->ntok + 2));
	if (be->sync(be, &e))
		fail_msg("%s: %s: %s", be->name, desc, e.msg);
	be->buf_free(be, &iw);
	float *wts = take_out(be, &ww, desc);
	*out = malloc(sizeof(float) * 2 * cnt);
	for (size_t i = 0; i < cnt; i++) {
		(*out)[i] = (float)ih[(size_t)c->k + i]; /* after the sentinel row */
		(*out)[cnt + i] = wts[i];
	}
	*n = 2 * cnt;
	free(ih);
	free(wts);
	free(lg);
	free(bias);
	be->buf_free(be, &lb);
	be->buf_free(be, &bb);
	return true;
}

/* argmax: rows of n; what each row holds besides normals (a repeated
 * maximum, NaNs, infinities) */
static const struct argmax_case {
	int64_t n, rows;
	int what; /* 0 normals, 1 the maximum twice, 2 NaNs and the maximum, 3 +inf twice, 4 -inf and NaN only, 5 one -inf row */
} argmax_cases[] = {{1, 1, 0},     {7, 3, 0},     {1000, 2, 1},   {49152, 1, 2}, {262144, 1, 1},
		    {300, 4, 3},   {100, 2, 4},   {513, 3, 5},    {33, 17, 1}};

/* the expectation written apart from the backends' loops: the largest of
 * the row's values (+inf taken as the largest finite, NaN and -inf
 * skipped), then the first index holding it */
static int32_t argmax_expect(const float *v, int64_t n)
{
	double m = -INFINITY;
	for (int64_t i = 0; i < n; i++)
		if (!isnan(v[i]) && fmin(v[i], FLT_MAX) > m)
			m = fmin(v[i], FLT_MAX);
	if (m == -INFINITY)
		return -1;
	for (int64_t i = 0; i < n; i++)
		if (!isnan(v[i]) && fmin(v[i], FLT_MAX) == m)
			return (int32_t)i;
	return -1;
}

static bool case_argmax(struct tern_backend *be, int ci, float **out, size_t *n, char *desc, size_t dn)
{
	if (ci >= (int)(sizeof argmax_cases / sizeof *argmax_cases))
		return false;
	const struct argmax_case *c = &argmax_cases[ci];
	snprintf(desc, dn, "argmax %lld x %lld rows, kind %d", (long long)c->n, (long long)c->rows, c->what);
	qu_seed((uint64_t)ci + 1401);
	float *x = normals((size_t)(c->n * c->rows), 3);
	for (int64_t r = 0; r < c->rows; r++) {
		float *v = x + r * c->n;
		int64_t a = (r * 7919 + 13) % c->n, b = (r * 104729 + 5) % c->n;
		if (c->what == 1 || c->what == 2) { /* the maximum at two places: the lower wins */
			v[a] = v[b] = 50.0f;
			if (c->what == 2)
				for (int64_t i = 0; i < c->n; i += 97)
					if (i != a && i != b)
						v[i] = NAN;
		} else if (c->what == 3) {
			v[a] = v[b] = INFINITY;
		} else if (c->what == 4) {
			for (int64_t i = 0; i < c->n; i++)
				v[i] = i % 3 ? -INFINITY : NAN;
		} else if (c->what == 5 && r == 1) {
			for (int64_t i = 0; i < c->n; i++)
				v[i] = -INFINITY;
		}
	}
	int64_t xne[2] = {c->n, c->rows}, ine[1] = {c->rows};
	struct tern_buf xb = in_buf(be, QT_F32, 2, xne, x), iw, iv;
	out_buf(be, &iw, &iv, QT_I32, c->rows, 1, 1, ine, NULL);
	be->argmax(be, &xb, &iv);
	tern_err e = {0};
	size_t rs = iw.nb[1];
	int32_t *ih = malloc(rs * 3);
	be->download(be, &iw, 0, ih, rs * 3);
	if (be->sync(be, &e))
		fail_msg("%s: %s: %s", be->name, desc, e.msg);
	be->buf_free(be, &iw);
	*out = malloc(sizeof(float) * (size_t)c->rows);
	for (int64_t r = 0; r < c->rows; r++) {
		int32_t got = ih[c->rows + r], want = argmax_expect(x + r * c->n, c->n);
		if (got != want)
			fail_msg("%s: %s: row %lld: %d, expected %d", be->name, desc, (long long)r, got, want);
		(*out)[r] = (float)got;
	}
	const uint8_t *hb = (const uint8_t *)ih;
	for (size_t i = 0; i < rs; i++) /* the sentinel rows stay */
		if (hb[i] != SENTINEL_BYTE || hb[2 * rs + i] != SENTINEL_BYTE)
			fail_msg("%s: %s: wrote outside the output", be->name, desc);
	*n = (size_t)c->rows;
	free(ih);
	free(x);
	be->buf_free(be, &xb);
	return true;
}

static const int64_t combine_shapes[][3] = {{7, 1, 3}, {256, 2, 5}, {4096, 8, 2}, {100, 3, 300}, {33, 64, 1}};

/* moe_combine: the weighted sum of the slots, against the sum in double */
static bool case_moe_combine(struct tern_backend *be, int ci, float **out, size_t *n, char *desc, size_t dn)
{
	if (ci >= (int)(sizeof combine_shapes / sizeof *combine_shapes))
		return false;
	int64_t ne = combine_shapes[ci][0], k = combine_shapes[ci][1], ntok = combine_shapes[ci][2];
	snprintf(desc, dn, "moe_combine %lld x %lld slots x %lld tokens", (long long)ne, (long long)k, (long long)ntok);
	qu_seed((uint64_t)ci + 1301);
	float *x = normals((size_t)(ne * k * ntok), 1), *w = normals((size_t)(k * ntok), 1);
	int64_t xne[3] = {ne, k, ntok}, wne[2] = {k, ntok}, yne[2] = {ne, ntok};
	struct tern_buf xb = in_buf(be, QT_F32, 3, xne, x), wb = in_buf(be, QT_F32, 2, wne, w), yw, yv;
	out_buf(be, &yw, &yv, QT_F32, ne, ntok, 2, yne, NULL);
	be->moe_combine(be, &xb, &wb, &yv);
	*out = take_out(be, &yw, desc);
	*n = (size_t)(ne * ntok);
	for (int64_t t = 0; t < ntok; t++)
		for (int64_t j = 0; j < ne; j++) {
			double e = 0;
			for (int64_t i = 0; i < k; i++)
				e += (double)w[t * k + i] * x[(t * k + i) * ne + j];
			double got = (*out)[t * ne + j];
			if (fabs(got - e) > 1e-5 * (1 + fabs(e)))
				fail_msg("%s: %s: element %lld,%lld is %g, expected %g", be->name, desc, (long long)t,
					 (long long)j, got, e);
		}
	free(x);
	free(w);
	be->buf_free(be, &xb);
	be->buf_free(be, &wb);
	return true;
}

static const struct op_check {
	const char *name;
	op_case_fn fn;
	double max_nmse;
	const char *needs; /* the table entries it calls (has_entries), or NULL for the name */
} op_checks[] = {
	{"get_rows", case_get_rows, 0, NULL},
	{"norm", case_norm, 1e-10, NULL},
	{"rope", case_rope, 1e-6, NULL},
	{"norm_rope", case_norm_rope, 1e-6, "norm_rope norm rope"},
	{"kv_store", case_kv_store, 0, NULL},
	{"attention", case_attention, 1e-9, "attention kv_store"},
	{"eltwise", case_eltwise, 1e-10, "add scale glu unary softmax"},
	{"copy", case_copy, 0, NULL},
	{"im2col", case_im2col, 0, NULL},
	{"attention f16", case_attention_f16, 1e-6, "attention kv_store"},
	{"attention (latent)", case_attention_mla, 1e-9, "attention kv_store copy"},
	{"copy columns", case_copy_cols, 0, "copy"},
	{"mat_mul_heads", case_heads, 1e-7, NULL},
	/* mat_mul_id: the products' activation quantizers (see nmse_max); its
	 * batches put an expert's 1..600 gathered tokens through whichever
	 * path that count takes, and one int8 level moved by the rounding of
	 * the scale in one element of a 21-row output was measured at 1.4e-8
	 * (MXFP4, GEMM): 1e-6, while a wrong expert, row or input is ~1. The
	 * router and the sums: f32 against double. */
	{"mat_mul_id", case_mat_mul_id, 1e-6, NULL},
	{"moe_route", case_moe_route, 1e-10, NULL},
	{"moe_combine", case_moe_combine, 1e-12, NULL},
	{"argmax", case_argmax, 0, NULL},
};

/* Whether be's table has every entry named in the space-separated list:
 * a backend still being written (Vulkan) skips the checks of the ops it
 * does not have yet. */
static bool has_entries(const struct tern_backend *be, const char *list)
{
	char buf[96];
	snprintf(buf, sizeof buf, "%s", list);
	for (char *save = NULL, *n = strtok_r(buf, " ", &save); n; n = strtok_r(NULL, " ", &save)) {
		bool has = !strcmp(n, "get_rows") ? be->get_rows != NULL
			   : !strcmp(n, "norm") ? be->norm != NULL
			   : !strcmp(n, "rope") ? be->rope != NULL
			   : !strcmp(n, "norm_rope") ? be->norm_rope != NULL
			   : !strcmp(n, "kv_store") ? be->kv_store != NULL
			   : !strcmp(n, "attention") ? be->attention != NULL
			   : !strcmp(n, "add") ? be->add != NULL
			   : !strcmp(n, "scale") ? be->scale != NULL
			   : !strcmp(n, "glu") ? be->glu != NULL
			   : !strcmp(n, "unary") ? be->unary != NULL
			   : !strcmp(n, "softmax") ? be->softmax != NULL
			   : !strcmp(n, "copy") ? be->copy != NULL
			   : !strcmp(n, "im2col") ? be->im2col != NULL
			   : !strcmp(n, "mat_mul_heads") ? be->mat_mul_heads != NULL
			   : !strcmp(n, "mat_mul_id") ? be->mat_mul_id != NULL
			   : !strcmp(n, "moe_route") ? be->moe_route != NULL
			   : !strcmp(n, "moe_combine") ? be->moe_combine != NULL
			   : !strcmp(n, "argmax") ? be->argmax != NULL
			   : false;
		if (!has)
			return false;
	}
	return true;
}

static void test_ops(void **state)
{
	(void)state;
	tern_err e = {0};
	struct tern_backend *ref, *bes[sizeof backends / sizeof *backends];
	const struct backend_entry *ents[sizeof backends / sizeof *backends];
	int nb = 0;
	assert_int_equal(make_ref(&ref, NULL, &e), 0);
	/* the ops do not depend on the kernel variant (quant/'s own tests
	 * cover its decoders) nor on the repack: one backend per thread count
	 * and variant without repack */
	for (size_t i = 0; i < sizeof backends / sizeof *backends; i++) {
		const struct backend_entry *b = &backends[i];
		if (b->repack != CPU_MM_REPACK_NONE || (b->isa && quant_cpu_force(b->isa) != 0))
			continue;
		quant_cpu_force("auto");
		ents[nb] = b;
		int rc = b->make(&bes[nb], b, &e);
		if (rc == MAKE_SKIP)
			continue;
		if (rc)
			fail_msg("%s: %s", b->name, e.msg);
		nb++;
	}
	for (size_t oi = 0; oi < sizeof op_checks / sizeof *op_checks; oi++) {
		const struct op_check *oc = &op_checks[oi];
		double op_worst = 0;
		int n_cases = 0, n_declined = 0;
		char desc[200];
		float *yr, *y;
		size_t nr, n;
		bool skip[sizeof backends / sizeof *backends];
		for (int bi = 0; bi < nb; bi++) {
			skip[bi] = !has_entries(bes[bi], oc->needs ? oc->needs : oc->name);
			if (skip[bi])
				printf("  %s: %s: not in its table yet, skipped\n", ents[bi]->name, oc->name);
		}
		for (int ci = 0; oc->fn(ref, ci, &yr, &nr, desc, sizeof desc); ci++) {
			if (!nr)
				continue;
			for (int bi = 0; bi < nb; bi++) {
				if (skip[bi])
					continue;
				if (ents[bi]->isa)
					quant_cpu_force(ents[bi]->isa);
				assert_true(oc->fn(bes[bi], ci, &y, &n, desc, sizeof desc));
				quant_cpu_force("auto");
				if (n == 0 && !tern_backend_ggml(bes[bi])) {
					n_declined++; /* a ggml rounding case, declined by a GPU */
					continue;
				}
				assert_int_equal(n, nr);
				double err = nmse(y, yr, n);
				if (!(err <= oc->max_nmse))
					fail_msg("%s: %s: NMSE %.3g above %.1g", ents[bi]->name, desc, err, oc->max_nmse);
				op_worst = err > op_worst ? err : op_worst;
				n_cases++;
				free(y);
			}
			free(yr);
		}
		assert_true(n_cases > 0 || n_declined > 0);
		printf("  %s: %d cases, worst NMSE %.1e", oc->name, n_cases, op_worst);
		printf(n_declined ? " (%d of ggml's rounding not asked of a backend without it)\n" : "\n", n_declined);
	}
	for (int bi = 0; bi < nb; bi++)
		tern_backend_free(bes[bi]);
	tern_backend_free(ref);
}

/* The new ops keep the contract: operands that do not fit are reported by
 * the next sync and the op writes nothing; values of device buffers (ids,
 * positions) out of range are reported too, the other tokens done. */
static void expect_fail(struct tern_backend *be, const char *what)
{
	tern_err e = {0};
	assert_int_equal(be->sync(be, &e), TERN_EINVAL);
	if (!strstr(e.msg, what))
		fail_msg("%s: expected a message naming %s, got: %s", be->name, what, e.msg);
	assert_int_equal(be->sync(be, &e), 0);
}

static void check_ops_contract(struct tern_backend *be)
{
	tern_err e = {0};
	float x[64 * 15] = {0}, y[64 * 4], w[64 * 3]; /* x fills the largest buffer, c3 */
	for (int i = 0; i < 64 * 15; i++)
		x[i] = (float)(i % 13) - 6;
	for (int i = 0; i < 64 * 3; i++)
		w[i] = (float)i;
	int32_t bad_pos[2] = {0, 5}, good_pos[2] = {0, 1};
	int64_t xne[3] = {64, 2, 2}, wne[2] = {64, 3}, cne[3] = {64, 1, 5}, pne[1] = {2}, k3[3] = {64, 3, 5};
	struct tern_buf xb = in_buf(be, QT_F32, 3, xne, x), yb = in_buf(be, QT_F32, 3, xne, x);
	struct tern_buf wb = in_buf(be, QT_F32, 2, wne, w), pb = in_buf(be, QT_I32, 1, pne, bad_pos);
	struct tern_buf cb = in_buf(be, QT_F16, 3, cne, x), c3 = in_buf(be, QT_F32, 3, k3, x);
	assert_int_equal(be->sync(be, &e), 0);
	/* an id past the weight's rows (ids {0, 5}: 3 rows) */
	int64_t gne[2] = {64, 2};
	struct tern_buf g = tern_buf_reshape(&yb, 2, gne);
	be->get_rows(be, &wb, &pb, &g);
	expect_fail(be, "get_rows");
	/* positions past the cache: the first token is stored, not the second */
	struct tern_buf x1 = tern_buf_reshape(&xb, 3, (int64_t[3]){64, 1, 2});
	be->kv_store(be, &cb, &x1, &pb, NULL);
	expect_fail(be, "kv_store");
	be->attention(be, &xb, &cb, &cb, &pb, NULL, &yb, &(struct tern_attn){.scale = 1});
	expect_fail(be, "attention");
	/* the valid tokens of those were done: y from here on must not move */
	be->upload(be, &yb, 0, x, sizeof y);
	/* 2 query heads over 3 KV heads; a window below zero */
	be->upload(be, &pb, 0, good_pos, sizeof good_pos);
	be->attention(be, &xb, &c3, &c3, &pb, NULL, &yb, &(struct tern_attn){.scale = 1});
	expect_fail(be, "attention");
	be->attention(be, &xb, &cb, &cb, &pb, NULL, &yb, &(struct tern_attn){.scale = 1, .window = -1});
	expect_fail(be, "attention");
	/* rope: n_rot past the head, odd, a factor vector of the wrong length */
	be->rope(be, &xb, &pb, NULL, &(struct tern_rope){.n_rot = 66, .freq_base = 1e4f, .freq_scale = 1});
	expect_fail(be, "rope");
	be->rope(be, &xb, &pb, NULL, &(struct tern_rope){.n_rot = 7, .freq_base = 1e4f, .freq_scale = 1});
	expect_fail(be, "rope");
	struct tern_buf f = tern_buf_rows(&wb, 0, 1);
	be->rope(be, &xb, &pb, &f, &(struct tern_rope){.n_rot = 64, .freq_base = 1e4f, .freq_scale = 1});
	expect_fail(be, "rope");
	/* norm_rope: k over q, k of another head width, a weight of k
	 * without k, of two rows, a weight without the norm */
	const struct tern_rope r64 = {.n_rot = 64, .freq_base = 1e4f, .freq_scale = 1};
	const struct tern_norm rms = {.kind = TERN_NORM_RMS, .eps = 1e-6f};
	struct tern_buf w0 = tern_buf_rows(&wb, 0, 1), x2 = tern_buf_reshape(&yb, 3, (int64_t[3]){32, 4, 2});
	be->norm_rope(be, &xb, &xb, NULL, NULL, &pb, NULL, NULL, &r64);
	expect_fail(be, "norm_rope");
	be->norm_rope(be, &xb, &x2, NULL, NULL, &pb, NULL, NULL, &r64);
	expect_fail(be, "norm_rope");
	be->norm_rope(be, &xb, NULL, NULL, &w0, &pb, NULL, &rms, &r64);
	expect_fail(be, "norm_rope");
	be->norm_rope(be, &xb, &yb, &g, NULL, &pb, NULL, &rms, &r64);
	expect_fail(be, "norm_rope");
	be->norm_rope(be, &xb, &yb, &w0, NULL, &pb, NULL, NULL, &r64);
	expect_fail(be, "norm_rope");
	/* norm into a read-only weight, element-wise ops of other shapes */
	be->norm(be, &xb, NULL, NULL, NULL, &wb, &(struct tern_norm){.kind = TERN_NORM_RMS});
	expect_fail(be, "norm");
	be->add(be, &xb, &wb, &yb);
	expect_fail(be, "add");
	be->glu(be, &xb, &yb, &yb, 7);
	expect_fail(be, "glu");
	be->copy(be, &cb, &wb);
	expect_fail(be, "copy");
	/* im2col: a padding as wide as the kernel, an output of the wrong length */
	be->im2col(be, &wb, &yb, &(struct tern_conv){.k = 3, .stride = 1, .pad = 3});
	expect_fail(be, "im2col");
	struct tern_buf y2 = tern_buf_reshape(&yb, 2, (int64_t[2]){64, 4});
	be->im2col(be, &wb, &y2, &(struct tern_conv){.k = 1, .stride = 1, .pad = 0});
	expect_fail(be, "im2col");
	/* nothing above wrote to y */
	be->download(be, &yb, 0, y, sizeof y);
	assert_int_equal(be->sync(be, &e), 0);
	assert_memory_equal(y, x, sizeof y);
	/* and the right calls work */
	be->kv_store(be, &cb, &x1, &pb, NULL);
	be->attention(be, &xb, &cb, &cb, &pb, NULL, &yb, &(struct tern_attn){.scale = 0.125f});
	be->norm_rope(be, &xb, &yb, &w0, &w0, &pb, NULL, &rms, &r64);
	assert_int_equal(be->sync(be, &e), 0);
	struct tern_buf *bufs[] = {&xb, &yb, &wb, &pb, &cb, &c3};
	for (size_t i = 0; i < sizeof bufs / sizeof *bufs; i++)
		be->buf_free(be, bufs[i]);
}

/* The mixture-of-experts ops: an expert id past the stack (the other
 * slots done), a stack given to product, x of neither 1 nor k rows per
 * token, k above the experts, groups that do not divide them, a combine
 * whose output overlaps its input, sinks of the wrong length. */
static void check_moe_contract(struct tern_backend *be)
{
	tern_err e = {0};
	float w[64 * 4 * 3], x[64 * 6], y[4 * 4 * 3] = {0}, yk[4 * 4 * 3]; /* x fills xb2, the largest */
	for (int i = 0; i < 64 * 4 * 3; i++)
		w[i] = (float)(i % 7) - 3;
	for (int i = 0; i < 64 * 6; i++)
		x[i] = (float)(i % 5) - 2;
	struct tern_tensor_view tv = {
		.name = {"w", 1}, .n_dims = 3, .ne = {64, 4, 3, 1}, .type = QT_F32, .nbytes = sizeof w, .data = w,
	};
	struct tern_buf wb;
	assert_int_equal(be->buf_weight(be, &wb, &tv, &e), 0);
	assert_int_equal(be->mat_prepare(be, &wb, &e), 0);
	int32_t ids[4] = {0, 2, 1, 3}; /* 2 tokens x 2 slots; 3 is past the 3 experts */
	int64_t xne[3] = {64, 1, 2}, ine[2] = {2, 2}, yne[3] = {4, 2, 2}, x2[3] = {64, 3, 2};
	struct tern_buf xb = in_buf(be, QT_F32, 3, xne, x), ib = in_buf(be, QT_I32, 2, ine, ids);
	struct tern_buf yb = in_buf(be, QT_F32, 3, yne, y), xb2 = in_buf(be, QT_F32, 3, x2, x);
	be->mat_mul_id(be, &wb, &xb, &ib, NULL, &yb);
	expect_fail(be, "mat_mul_id");
	/* the slots with good ids were done: token 1 slot 1 (expert 3) not */
	be->download(be, &yb, 0, yk, sizeof(float) * 16);
	assert_int_equal(be->sync(be, &e), 0);
	for (int i = 0; i < 4; i++) {
		double d = 0; /* token 0, slot 0: expert 0 row i */
		for (int j = 0; j < 64; j++)
			d += (double)w[i * 64 + j] * x[j];
		assert_float_equal(yk[i], d, 1e-3);
		assert_float_equal(yk[12 + i], 0, 0);
	}
	be->mat_mul_id(be, &wb, &xb2, &ib, NULL, &yb);
	expect_fail(be, "mat_mul_id");
	struct tern_buf x1 = tern_buf_reshape(&xb, 2, (int64_t[2]){64, 1}), y1 = tern_buf_reshape(&yb, 2, (int64_t[2]){4, 1});
	tern_be_mul(be, &wb, &x1, &y1);
	expect_fail(be, "product");
	/* the router */
	float lg[16] = {0};
	int64_t lne[2] = {8, 2}, one[2] = {2, 2};
	struct tern_buf lb = in_buf(be, QT_F32, 2, lne, lg), ob = in_buf(be, QT_I32, 2, one, ids);
	struct tern_buf wt = in_buf(be, QT_F32, 2, one, lg);
	be->moe_route(be, &lb, NULL, &ob, &wt, &(struct tern_moe_route){.k = 9, .scale = 1});
	expect_fail(be, "moe_route");
	be->moe_route(be, &lb, NULL, &ob, &wt, &(struct tern_moe_route){.k = 2, .scale = 1, .n_group = 3, .n_group_used = 1});
	expect_fail(be, "moe_route");
	be->moe_route(be, &lb, NULL, &ob, &wt, &(struct tern_moe_route){.k = 2, .scale = 1, .gating = 7});
	expect_fail(be, "moe_route");
	/* combine into its own input */
	struct tern_buf yo = tern_buf_reshape(&yb, 2, (int64_t[2]){4, 2}), wts = tern_buf_reshape(&yb, 2, (int64_t[2]){2, 2});
	be->moe_combine(be, &yb, &wts, &yo);
	expect_fail(be, "moe_combine");
	/* argmax: ids must be i32, one per row */
	be->argmax(be, &yb, &wts);
	expect_fail(be, "argmax");
	/* sinks: one per query head */
	int32_t pos[1] = {0};
	int64_t qne[3] = {64, 2, 1}, cne[3] = {64, 1, 4}, pne[1] = {1}, sne[1] = {3};
	struct tern_buf qb = in_buf(be, QT_F32, 3, qne, x), cb = in_buf(be, QT_F32, 3, cne, x);
	struct tern_buf pb = in_buf(be, QT_I32, 1, pne, pos), sb = in_buf(be, QT_F32, 1, sne, x), ab = in_buf(be, QT_F32, 3, qne, x);
	be->attention(be, &qb, &cb, &cb, &pb, NULL, &ab, &(struct tern_attn){.scale = 1, .sinks = &sb});
	expect_fail(be, "attention");
	struct tern_buf *bufs[] = {&wb, &xb, &ib, &yb, &xb2, &lb, &ob, &wt, &qb, &cb, &pb, &sb, &ab};
	for (size_t i = 0; i < sizeof bufs / sizeof *bufs; i++)
		be->buf_free(be, bufs[i]);
}

/* The router on cases worked out by hand. */
static void check_moe_route_known(struct tern_backend *be)
{
	tern_err e = {0};
	/* token 0: logits 1 3 2 0; token 1: 0 0 5 -1 */
	float lg[8] = {1, 3, 2, 0, 0, 0, 5, -1}, bias[4] = {0, 0, -10, 0};
	int64_t lne[2] = {4, 2}, one[2] = {2, 2}, bne[1] = {4};
	struct tern_buf lb = in_buf(be, QT_F32, 2, lne, lg), bb = in_buf(be, QT_F32, 1, bne, bias);
	int32_t ids[4] = {0};
	float wts[4] = {0};
	struct tern_buf ib = in_buf(be, QT_I32, 2, one, ids), wb = in_buf(be, QT_F32, 2, one, wts);
	/* softmax, normalized: experts 1, 2 with e^3 : e^2; token 1: 2, then 0 (the lower of a tie) */
	be->moe_route(be, &lb, NULL, &ib, &wb, &(struct tern_moe_route){.gating = TERN_MOE_SOFTMAX, .k = 2, .norm = true, .scale = 1});
	be->download(be, &ib, 0, ids, sizeof ids);
	be->download(be, &wb, 0, wts, sizeof wts);
	assert_int_equal(be->sync(be, &e), 0);
	assert_int_equal(ids[0], 1);
	assert_int_equal(ids[1], 2);
	assert_int_equal(ids[2], 2);
	assert_int_equal(ids[3], 0);
	assert_float_equal(wts[0], exp(3) / (exp(3) + exp(2)), 1e-6);
	assert_float_equal(wts[1], exp(2) / (exp(3) + exp(2)), 1e-6);
	assert_float_equal(wts[2], exp(5) / (exp(5) + 1), 1e-6);
	/* softmax without the normalization: the full softmax's values, scaled */
	be->moe_route(be, &lb, NULL, &ib, &wb, &(struct tern_moe_route){.gating = TERN_MOE_SOFTMAX, .k = 2, .scale = 2});
	be->download(be, &wb, 0, wts, sizeof wts);
	assert_int_equal(be->sync(be, &e), 0);
	double s0 = exp(1) + exp(3) + exp(2) + exp(0);
	assert_float_equal(wts[0], 2 * exp(3) / s0, 1e-6);
	assert_float_equal(wts[1], 2 * exp(2) / s0, 1e-6);
	/* sigmoid with a bias that only steers: expert 2 loses its place, its
	 * weight would have been sigmoid(2); the weights stay unbiased */
	be->moe_route(be, &lb, &bb, &ib, &wb, &(struct tern_moe_route){.gating = TERN_MOE_SIGMOID, .k = 2, .scale = 1});
	be->download(be, &ib, 0, ids, sizeof ids);
	be->download(be, &wb, 0, wts, sizeof wts);
	assert_int_equal(be->sync(be, &e), 0);
	assert_int_equal(ids[0], 1);
	assert_int_equal(ids[1], 0);
	assert_float_equal(wts[0], 1 / (1 + exp(-3)), 1e-6);
	assert_float_equal(wts[1], 1 / (1 + exp(-1)), 1e-6);
	assert_int_equal(ids[2], 0); /* 5 - 10 falls below 0, 0 and -1: experts 0 and 1 */
	assert_int_equal(ids[3], 1);
	/* softmax over the selected logits (gpt-oss) */
	be->moe_route(be, &lb, NULL, &ib, &wb, &(struct tern_moe_route){.gating = TERN_MOE_SOFTMAX_TOPK, .k = 2, .scale = 1});
	be->download(be, &wb, 0, wts, sizeof wts);
	assert_int_equal(be->sync(be, &e), 0);
	assert_float_equal(wts[0], 1 / (1 + exp(-1)), 1e-6);
	assert_float_equal(wts[1], 1 / (1 + exp(1)), 1e-6);
	/* groups of 2: token 0's groups score 1+3 and 2+0, only the first
	 * competes: experts 1 and 0 */
	be->moe_route(be, &lb, NULL, &ib, &wb,
		      &(struct tern_moe_route){.gating = TERN_MOE_SOFTMAX_TOPK, .k = 2, .scale = 1, .n_group = 2, .n_group_used = 1});
	be->download(be, &ib, 0, ids, sizeof ids);
	assert_int_equal(be->sync(be, &e), 0);
	assert_int_equal(ids[0], 1);
	assert_int_equal(ids[1], 0);
	assert_int_equal(ids[2], 2); /* token 1: 0+0 against 5-1 */
	assert_int_equal(ids[3], 3);
	struct tern_buf *bufs[] = {&lb, &bb, &ib, &wb};
	for (size_t i = 0; i < sizeof bufs / sizeof *bufs; i++)
		be->buf_free(be, bufs[i]);
}

/* The recording backend (tests/rec_backend.h) that the model tests run
 * their decode steps through: the same step twice passes; a step whose
 * parameter, buffer view or transfer's host memory differs from the first
 * fails at sync, naming the call; reset starts a new recording. */
static void test_rec_backend(void **state)
{
	(void)state;
	tern_err e = {0};
	struct tern_backend *in, *be;
	struct cpu_backend_opts o = {.n_threads = 1, .max_tokens = 4};
	assert_int_equal(cpu_backend_new(&in, &o, &e), 0);
	assert_int_equal(rec_backend_new(&be, in, &e), 0);
	check_table(be, "rec");
	float x[8] = {1, 2, 3, 4, 5, 6, 7, 8}, h1[8], h2[8];
	int64_t ne[2] = {4, 2};
	struct tern_buf xb = in_buf(be, QT_F32, 2, ne, x), yb = in_buf(be, QT_F32, 2, ne, x);
	assert_int_equal(be->sync(be, &e), 0);
	for (int variant = 0; variant < 4; variant++) {
		rec_backend_reset(be);
		for (int step = 0; step < 2; step++) {
			bool other = step == 1 && variant > 0;
			int64_t rows = other && variant == 2 ? 1 : 2; /* the same op on other views */
			struct tern_buf xv = tern_buf_rows(&xb, 0, rows), yv = tern_buf_rows(&yb, 0, rows);
			be->begin_step(be);
			be->upload(be, &xb, 0, x, sizeof x);
			be->scale(be, &xv, &yv, other && variant == 1 ? 3.0f : 2.0f);
			be->download(be, &yb, 0, other && variant == 3 ? h2 : h1, sizeof h1);
			be->end_step(be);
			int rc = be->sync(be, &e);
			if (!other) {
				assert_int_equal(rc, 0);
				continue;
			}
			static const char *const want[] = {NULL, "call 1 (scale)", "call 1 (scale)", "call 2 (download)"};
			assert_int_equal(rc, TERN_EINVAL);
			if (!strstr(e.msg, want[variant]))
				fail_msg("variant %d: expected %s, got: %s", variant, want[variant], e.msg);
		}
		assert_int_equal(rec_backend_steps(be), 1);
	}
	be->buf_free(be, &xb);
	be->buf_free(be, &yb);
	tern_backend_free(be);
	tern_backend_free(in);
}

/* ggml's rounding requests (lib/backend.h, TERN_BACKEND_GGML_NUMERICS):
 * taken by a backend with the capability; each one a violation (skipped,
 * reported at sync, the output untouched) on a backend without it, as a
 * GPU's: its CPU stand-in is the backend with the bit masked off. */
static void check_ggml_cap(struct tern_backend *be)
{
	tern_err e = {0};
	float x[32 * 4], w[32 * 2];
	for (int i = 0; i < 32 * 4; i++)
		x[i] = (float)(i % 9) * 0.25f - 1;
	for (int i = 0; i < 32 * 2; i++)
		w[i] = (float)(i % 5) * 0.5f - 1;
	int32_t pos[2] = {0, 1};
	int64_t ne_x[3] = {32, 2, 2}, ne_p[1] = {2}, ne_w[2] = {32, 2}, ne_x2[2] = {32, 2}, ne_y2[2] = {2, 2};
	struct tern_buf xb = in_buf(be, QT_F32, 3, ne_x, x), yb = in_buf(be, QT_F32, 3, ne_x, x);
	struct tern_buf pb = in_buf(be, QT_I32, 1, ne_p, pos), cache, wb = in_buf(be, QT_F32, 2, ne_w, w);
	struct tern_buf x2 = tern_buf_reshape(&xb, 2, ne_x2), y2;
	assert_int_equal(be->buf_alloc(be, &cache, QT_F16, 3, (int64_t[3]){32, 2, 4}, &e), 0);
	assert_int_equal(be->buf_alloc(be, &y2, QT_F32, 2, ne_y2, &e), 0);
	assert_int_equal(be->mat_prepare(be, &wb, &e), 0);
	be->kv_store(be, &cache, &xb, &pb, NULL);
	assert_int_equal(be->sync(be, &e), 0);
	const struct tern_norm norm = {.kind = TERN_NORM_LAYER, .eps = 1e-5f, .ggml = true};
	const struct tern_rope rope = {.mode = TERN_ROPE_NEOX, .n_rot = 32, .freq_base = 10000, .freq_scale = 1, .ggml = true};
	const struct tern_rope rope_f32 = {.mode = TERN_ROPE_NEOX, .n_rot = 32, .freq_base = 10000, .freq_scale = 1};
	const struct tern_buf w0 = tern_buf_rows(&wb, 0, 1);
	const struct tern_attn split = {.scale = 0.125f, .f16_split = 1}, gattn = {.scale = 0.125f, .ggml = true};
	/* a backend without the capability (a GPU's) is only asked masked */
	for (int masked = tern_backend_ggml(be) ? 0 : 1; masked < 2; masked++) {
		unsigned caps = be->caps;
		if (masked)
			be->caps &= ~(unsigned)TERN_BACKEND_GGML_NUMERICS;
		float before[32 * 4], after[32 * 4];
		be->download(be, &yb, 0, before, sizeof before);
		assert_int_equal(be->sync(be, &e), 0);
		for (int op = 0; op < 8; op++) {
			static const char *const names[] = {"norm",  "rope",	     "attention", "attention",
							    "unary", "mat_mul_ggml", "norm_rope", "norm_rope"};
			if (op == 0)
				be->norm(be, &xb, NULL, NULL, NULL, &yb, &norm);
			else if (op == 1)
				be->rope(be, &yb, &pb, NULL, &rope);
			else if (op == 2)
				be->attention(be, &xb, &cache, &cache, &pb, NULL, &yb, &split);
			else if (op == 3)
				be->attention(be, &xb, &cache, &cache, &pb, NULL, &yb, &gattn);
			else if (op == 4)
				be->unary(be, &xb, &yb, TERN_UNARY_GELU_F16);
			else if (op == 5)
				be->mat_mul_ggml(be, &wb, &x2, &y2);
			else if (op == 6) /* the norm's request, then the rope's */
				be->norm_rope(be, &yb, NULL, &w0, NULL, &pb, NULL, &norm, &rope_f32);
			else
				be->norm_rope(be, &yb, NULL, NULL, NULL, &pb, NULL, NULL, &rope);
			if (!masked) {
				if (be->sync(be, &e))
					fail_msg("%s: %s with ggml's rounding: %s", be->name, names[op], e.msg);
				be->upload(be, &yb, 0, x, sizeof x); /* the next op's input again */
				continue;
			}
			expect_fail(be, "TERN_BACKEND_GGML_NUMERICS");
			be->download(be, &yb, 0, after, sizeof after);
			assert_int_equal(be->sync(be, &e), 0);
			if (memcmp(before, after, sizeof before))
				fail_msg("%s without the capability: %s wrote its output", be->name, names[op]);
		}
		be->caps = caps;
	}
	struct tern_buf *bufs[] = {&xb, &yb, &pb, &cache, &wb, &y2};
	for (size_t i = 0; i < sizeof bufs / sizeof *bufs; i++)
		be->buf_free(be, bufs[i]);
}

static void test_ops_contract(void **state)
{
	(void)state;
	tern_err e = {0};
	struct tern_backend *be;
	if (!test_device()) {
		assert_int_equal(make_ref(&be, NULL, &e), 0);
		check_ops_contract(be);
		check_ggml_cap(be);
		check_moe_contract(be);
		check_moe_route_known(be);
		tern_backend_free(be);
		struct cpu_backend_opts o = {.n_threads = 3, .max_tokens = 8};
		assert_int_equal(cpu_backend_new(&be, &o, &e), 0);
		check_ops_contract(be);
		check_ggml_cap(be);
		check_moe_contract(be);
		check_moe_route_known(be);
		tern_backend_free(be);
		return;
	}
	/* a GPU device's run: its entries (the others skip) */
	for (size_t i = 0; i < sizeof backends / sizeof *backends; i++) {
		const struct backend_entry *b = &backends[i];
		if (b->make == make_ref)
			continue;
		int rc = b->make(&be, b, &e);
		if (rc == MAKE_SKIP)
			continue;
		if (rc)
			fail_msg("%s: %s", b->name, e.msg);
		check_ops_contract(be);
		check_ggml_cap(be);
		check_moe_contract(be);
		check_moe_route_known(be);
		tern_backend_free(be);
	}
}

/* product of several weights sharing an input gives the bits of a
 * product of each alone, on every backend, for one token (the CPU's one
 * mat-vec step) and a batch (weights of mixed types and activation types,
 * rows not a multiple of the chunks); n_w out of range is a violation
 * reported at sync. */
static void test_product_n(void **state)
{
	(void)state;
	const uint32_t types[TERN_MAT_VEC_N] = {QT_Q4_K, QT_Q6_K, QT_Q8_0, QT_F32};
	const int64_t rows[TERN_MAT_VEC_N] = {37, 256, 19, 5};
	const int64_t cols = 512;
	for (size_t bi = 0; bi < sizeof backends / sizeof backends[0]; bi++) {
		const struct backend_entry *be_e = &backends[bi];
		if (be_e->isa && quant_cpu_force(be_e->isa) != 0)
			continue;
		struct tern_backend *be;
		tern_err e = {0};
		int rc = be_e->make(&be, be_e, &e);
		if (rc == MAKE_SKIP)
			continue;
		if (rc)
			fail_msg("%s: %s", be_e->name, e.msg);
		struct tern_buf w[TERN_MAT_VEC_N], y1[TERN_MAT_VEC_N], yn[TERN_MAT_VEC_N];
		const int64_t ntok = 3;
		float *xs = normals((size_t)(cols * ntok), 1.0f);
		int64_t xne[2] = {cols, ntok};
		struct tern_buf xall = in_buf(be, QT_F32, 2, xne, xs);
		for (int i = 0; i < TERN_MAT_VEC_N; i++) {
			float *wf = normals((size_t)(rows[i] * cols), 0.5f);
			size_t rs = quant_row_size(types[i], (uint64_t)cols, NULL);
			uint8_t *wq = malloc(rs * (size_t)rows[i]);
			for (int64_t r = 0; r < rows[i]; r++)
				quant_quantize_row(types[i], wf + r * cols, wq + rs * (size_t)r, (uint64_t)cols);
			int64_t wne[2] = {cols, rows[i]}, yne[2] = {rows[i], ntok};
			w[i] = in_buf(be, types[i], 2, wne, wq);
			if (be->mat_prepare(be, &w[i], &e))
				fail_msg("%s: %s", be_e->name, e.msg);
			assert_int_equal(be->buf_alloc(be, &y1[i], QT_F32, 2, yne, &e), 0);
			assert_int_equal(be->buf_alloc(be, &yn[i], QT_F32, 2, yne, &e), 0);
			free(wf);
			free(wq);
		}
		for (int nt = 1; nt <= ntok; nt += (int)ntok - 1)
			for (int n = 1; n <= TERN_MAT_VEC_N; n++) {
				const struct tern_buf *wp[TERN_MAT_VEC_N];
				struct tern_buf *yp[TERN_MAT_VEC_N];
				struct tern_buf x = tern_buf_rows(&xall, 0, nt), ya[TERN_MAT_VEC_N], yb[TERN_MAT_VEC_N];
				for (int i = 0; i < n; i++) {
					ya[i] = tern_buf_rows(&y1[i], 0, nt);
					yb[i] = tern_buf_rows(&yn[i], 0, nt);
					wp[i] = &w[i];
					yp[i] = &yb[i];
					tern_be_mul(be, &w[i], &x, &ya[i]);
				}
				be->product(be, n, wp, &x, yp);
				if (be->sync(be, &e))
					fail_msg("%s: %s", be_e->name, e.msg);
				for (int i = 0; i < n; i++) {
					size_t nb = sizeof(float) * (size_t)(rows[i] * nt);
					float *a = malloc(nb), *b = malloc(nb);
					be->download(be, &ya[i], 0, a, nb);
					be->download(be, &yb[i], 0, b, nb);
					assert_int_equal(be->sync(be, &e), 0);
					if (memcmp(a, b, nb))
						fail_msg("%s: product of %d, %d tokens: weight %d (%s) differs from its own",
							 be_e->name, n, nt, i, quant_type_name(types[i]));
					free(a);
					free(b);
				}
			}
		struct tern_buf x = tern_buf_rows(&xall, 0, 1);
		const struct tern_buf *wp[1] = {&w[0]};
		struct tern_buf y0 = tern_buf_rows(&yn[0], 0, 1), *yp[1] = {&y0};
		be->product(be, 0, wp, &x, yp);
		assert_int_equal(be->sync(be, &e), TERN_EINVAL);
		be->product(be, TERN_MAT_VEC_N + 1, wp, &x, yp);
		assert_int_equal(be->sync(be, &e), TERN_EINVAL);
		for (int i = 0; i < TERN_MAT_VEC_N; i++) {
			be->buf_free(be, &w[i]);
			be->buf_free(be, &y1[i]);
			be->buf_free(be, &yn[i]);
		}
		be->buf_free(be, &xall);
		free(xs);
		tern_backend_free(be);
		quant_cpu_force("auto");
	}
}

/* Several sequences in one call (kv_store's and attention's seq): a
 * cache of n_seq sequences, each token stored into and attending over its
 * own sequence's rows, against one cache per sequence and each token's
 * own call without seq, on every backend (f32 and f16 caches; runs of a
 * sequence's tokens of 1 and 2): the caches byte for byte, the outputs
 * within the attention's f32 sums (a run of 2 tokens takes the batch
 * path). A sequence out of range or a seq of the wrong length is a
 * violation. */
static void check_seq(struct tern_backend *be, uint32_t ct)
{
	enum { HD = 64, NKV = 2, NH = 4, NCTX = 16, NSEQ = 3, NT = 5 };
	tern_err e = {0};
	const int64_t cne[4] = {HD, NKV, NCTX, NSEQ}, one[3] = {HD, NKV, NCTX};
	struct tern_buf big, sep[NSEQ];
	assert_int_equal(be->buf_alloc(be, &big, ct, 4, cne, &e), 0);
	for (int s = 0; s < NSEQ; s++)
		assert_int_equal(be->buf_alloc(be, &sep[s], ct, 3, one, &e), 0);
	qu_seed(77 + ct);
	/* rows never written hold NaN (all bits set, f32 and f16 alike): an
	 * attention that reads one, even with a zero weight, gives NaN */
	size_t cbytes = (size_t)big.nb[3] * NSEQ;
	uint8_t *nan = malloc(cbytes);
	assert_non_null(nan);
	memset(nan, 0xff, cbytes);
	be->upload(be, &big, 0, nan, cbytes);
	for (int s = 0; s < NSEQ; s++)
		be->upload(be, &sep[s], 0, nan, (size_t)sep[s].nb[2] * NCTX);
	assert_int_equal(be->sync(be, &e), 0);
	free(nan);
	/* the sequences' histories: 6, 7 and 8 rows */
	for (int s = 0; s < NSEQ; s++) {
		const int64_t n = 6 + s, xne[3] = {HD, NKV, n}, pne[1] = {n};
		float *x = normals((size_t)(HD * NKV * n), 1);
		int32_t pos[8], sq[8];
		for (int i = 0; i < n; i++)
			pos[i] = i, sq[i] = s;
		struct tern_buf xb = in_buf(be, QT_F32, 3, xne, x), pb = in_buf(be, QT_I32, 1, pne, pos);
		struct tern_buf sb = in_buf(be, QT_I32, 1, pne, sq);
		be->kv_store(be, &big, &xb, &pb, &sb);
		be->kv_store(be, &sep[s], &xb, &pb, NULL);
		assert_int_equal(be->sync(be, &e), 0);
		struct tern_buf *bufs[] = {&xb, &pb, &sb};
		for (int i = 0; i < 3; i++)
			be->buf_free(be, bufs[i]);
		free(x);
	}
	/* a step: tokens of sequences 2, 2, 0, 1, 0 at their next positions */
	const int32_t seq[NT] = {2, 2, 0, 1, 0}, pos[NT] = {8, 9, 6, 7, 7};
	const int64_t xne[3] = {HD, NKV, NT}, qne[3] = {HD, NH, NT}, pne[1] = {NT};
	float *x = normals(HD * NKV * NT, 1), *q = normals(HD * NH * NT, 1);
	float got[HD * NH * NT], want[HD * NH * NT];
	struct tern_buf xb = in_buf(be, QT_F32, 3, xne, x), qb = in_buf(be, QT_F32, 3, qne, q);
	struct tern_buf pb = in_buf(be, QT_I32, 1, pne, pos), sb = in_buf(be, QT_I32, 1, pne, seq), yb;
	assert_int_equal(be->buf_alloc(be, &yb, QT_F32, 3, qne, &e), 0);
	const struct tern_attn at = {.scale = 0.125f};
	be->kv_store(be, &big, &xb, &pb, &sb);
	be->attention(be, &qb, &big, &big, &pb, &sb, &yb, &at);
	be->download(be, &yb, 0, got, sizeof got);
	if (be->sync(be, &e))
		fail_msg("%s: %s", be->name, e.msg);
	for (int t = 0; t < NT; t++) { /* each token alone, over its sequence's own cache */
		struct tern_buf xt = tern_buf_reshape(&xb, 3, (int64_t[3]){HD, NKV, 1});
		struct tern_buf qt = tern_buf_reshape(&qb, 3, (int64_t[3]){HD, NH, 1});
		struct tern_buf yt = tern_buf_reshape(&yb, 3, (int64_t[3]){HD, NH, 1});
		struct tern_buf pt = tern_buf_reshape(&pb, 1, (int64_t[1]){1});
		xt.offset += (size_t)t * xb.nb[2];
		qt.offset += (size_t)t * qb.nb[2];
		yt.offset += (size_t)t * yb.nb[2];
		pt.offset += (size_t)t * 4;
		be->kv_store(be, &sep[seq[t]], &xt, &pt, NULL);
		be->attention(be, &qt, &sep[seq[t]], &sep[seq[t]], &pt, NULL, &yt, &at);
	}
	be->download(be, &yb, 0, want, sizeof want);
	assert_int_equal(be->sync(be, &e), 0);
	double num = 0, den = 0;
	for (int i = 0; i < HD * NH * NT; i++) {
		num += ((double)got[i] - want[i]) * ((double)got[i] - want[i]);
		den += (double)want[i] * want[i];
	}
	if (!(num / den < 1e-12))
		fail_msg("%s: %s caches: sequences in one call vs apart: NMSE %.3g", be->name, quant_type_name(ct),
			 num / den);
	size_t rs = quant_row_size(ct, HD, NULL) * NKV, cs = rs * NCTX;
	uint8_t *hb = malloc(cs * NSEQ), *hs = malloc(cs);
	be->download(be, &big, 0, hb, cs * NSEQ);
	assert_int_equal(be->sync(be, &e), 0);
	for (int s = 0; s < NSEQ; s++) {
		be->download(be, &sep[s], 0, hs, cs);
		assert_int_equal(be->sync(be, &e), 0);
		assert_memory_equal(hb + cs * (size_t)s, hs, rs * (size_t)(s == 0 ? 8 : s == 1 ? 8 : 10));
	}
	/* violations: a sequence past the caches, a seq of the wrong length */
	const int32_t bad[NT] = {0, 3, 0, 0, 0};
	be->upload(be, &sb, 0, bad, sizeof bad);
	be->kv_store(be, &big, &xb, &pb, &sb);
	expect_fail(be, "sequence");
	be->attention(be, &qb, &big, &big, &pb, &sb, &yb, &at);
	expect_fail(be, "sequence");
	struct tern_buf s2 = tern_buf_reshape(&sb, 1, (int64_t[1]){2});
	be->kv_store(be, &big, &xb, &pb, &s2);
	expect_fail(be, "kv_store");
	struct tern_buf *bufs[] = {&xb, &qb, &pb, &sb, &yb, &big, &sep[0], &sep[1], &sep[2]};
	for (size_t i = 0; i < sizeof bufs / sizeof *bufs; i++)
		be->buf_free(be, bufs[i]);
	free(hb);
	free(hs);
	free(x);
	free(q);
}

static void check_seq_types(struct tern_backend *be, const char *name)
{
	(void)name;
	check_seq(be, QT_F32);
	check_seq(be, QT_F16);
}

static void test_seq(void **state)
{
	(void)state;
	each_backend(check_seq_types);
}

/* Results do not depend on the thread count: every op case and the
 * products of several weight types on 1, 2, 3 and 4 threads, under each
 * kernel variant the CPU runs, must give the same bits. */
static void test_threads(void **state)
{
	(void)state;
	static const char *isas[] = {"avx512", "avx2", "neon", "scalar"};
	static const uint32_t types[] = {QT_F32, QT_F16, QT_BF16, QT_Q4_0, QT_Q8_0, QT_Q4_K, QT_Q6_K, QT_IQ4_XS};
	tern_err e = {0};
	int compared = 0;
	for (size_t ii = 0; ii < sizeof isas / sizeof *isas; ii++) {
		if (quant_cpu_force(isas[ii]) != 0)
			continue;
		struct tern_backend *bes[4];
		for (int i = 0; i < 4; i++) {
			struct cpu_backend_opts o = {.n_threads = i + 1, .max_tokens = MAX_TOKENS};
			if (cpu_backend_new(&bes[i], &o, &e))
				fail_msg("%s", e.msg);
		}
		for (size_t oi = 0; oi < sizeof op_checks / sizeof *op_checks; oi++) {
			const struct op_check *oc = &op_checks[oi];
			char desc[200];
			float *y1, *y;
			size_t n1, n;
			for (int ci = 0; oc->fn(bes[0], ci, &y1, &n1, desc, sizeof desc); ci++) {
				if (!n1)
					continue;
				for (int i = 1; i < 4; i++) {
					assert_true(oc->fn(bes[i], ci, &y, &n, desc, sizeof desc));
					assert_int_equal(n, n1);
					if (memcmp(y, y1, sizeof(float) * n) != 0)
						fail_msg("%s: %s: %d threads differ from 1", isas[ii], desc, i + 1);
					free(y);
					compared++;
				}
				free(y1);
			}
		}
		for (size_t ti = 0; ti < sizeof types / sizeof *types; ti++)
			for (size_t ci = 0; ci < sizeof cases / sizeof *cases; ci++) {
				struct inputs in;
				make_inputs(&in, types[ti], &cases[ci]);
				size_t n = (size_t)(in.rows * in.ntok);
				float *y1 = malloc(sizeof(float) * n), *y = malloc(sizeof(float) * n);
				run_op(bes[0], "1 thread", &in, y1);
				for (int i = 1; i < 4; i++) {
					run_op(bes[i], "threads", &in, y);
					if (memcmp(y, y1, sizeof(float) * n) != 0)
						fail_msg("%s: %s %lldx%lld, %lld tokens: %d threads differ from 1", isas[ii],
							 quant_type_name(types[ti]), (long long)in.rows, (long long)in.cols,
							 (long long)in.ntok, i + 1);
					compared++;
				}
				free(y1);
				free(y);
				free_inputs(&in);
			}
		for (int i = 0; i < 4; i++)
			tern_backend_free(bes[i]);
	}
	quant_cpu_force("auto");
	assert_true(compared > 0);
	printf("  %d results compared bit for bit\n", compared);
}

#ifdef TERN_HAVE_VULKAN
/* The cooperative-matrix GEMM (mul_mm_cm.comp) tried on this device: where
 * the device has cooperative matrices it passes its check at creation and
 * takes the batched products; where it has not (lavapipe), its pipelines
 * fail to build, the check says so on stderr and the backend falls back
 * to mul_mm.comp. Either way the products hold to the reference's
 * thresholds and no error is left for the caller's first sync. */
static void test_vk_coopmat(void **state)
{
	(void)state;
	if (!test_device() || strncmp(test_device(), "vulkan", 6))
		skip();
	tern_err e = {0};
	struct vk_backend_opts o = {.device = atoi(test_device() + 6), .max_tokens = MAX_TOKENS, .validation = true,
				    .try_coopmat = true};
	struct tern_backend *be = NULL, *ref = NULL;
	int rc = vk_backend_new(&be, &o, &e);
	if (rc == TERN_EUNSUPPORTED && strstr(e.msg, "validation layer")) {
		o.validation = false;
		rc = vk_backend_new(&be, &o, &e);
	}
	if (rc)
		fail_msg("%s", e.msg);
	struct vk_stats st;
	vk_get_stats(be, &st);
	printf("  %s: the GEMM on cooperative matrices: %s\n", test_device(), st.coopmat ? "used" : "fell back");
	struct cpu_backend_opts ro = {.n_threads = 1, .max_tokens = MAX_TOKENS};
	assert_int_equal(cpu_ref_backend_new(&ref, &ro, &e), 0);
	static const struct mm_case cc[] = {{45, 2, 33}, {19, 3, 7}, {67, 1, 65}};
	static const uint32_t types[] = {QT_Q4_1, QT_Q4_K, QT_F16, QT_Q8_0};
	for (size_t ti = 0; ti < sizeof types / sizeof *types; ti++)
		for (size_t ci = 0; ci < sizeof cc / sizeof *cc; ci++) {
			struct inputs in;
			make_inputs(&in, types[ti], &cc[ci]);
			size_t n = (size_t)(in.rows * in.ntok);
			float *y = malloc(sizeof(float) * n), *yr = malloc(sizeof(float) * n);
			run_op(ref, "cpu-ref", &in, yr);
			run_op(be, test_device(), &in, y);
			double err = nmse(y, yr, n);
			if (!(err <= nmse_max(types[ti])))
				fail_msg("%s (coopmat tried): product %s %lldx%lld, %lld tokens: NMSE %.3g", test_device(),
					 quant_type_name(types[ti]), (long long)in.rows, (long long)in.cols,
					 (long long)in.ntok, err);
			free(y);
			free(yr);
			free_inputs(&in);
		}
	tern_backend_free(be);
	tern_backend_free(ref);
}
#else
static void test_vk_coopmat(void **state)
{
	(void)state;
	skip();
}
#endif

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_table),
		cmocka_unit_test(test_rec_backend),
		cmocka_unit_test(test_products),
		cmocka_unit_test(test_contract),
		cmocka_unit_test(test_ops),
		cmocka_unit_test(test_ops_contract),
		cmocka_unit_test(test_threads),
		cmocka_unit_test(test_product_n),
		cmocka_unit_test(test_seq),
	};
	/* a GPU device's run: the tests of the CPU's threads are the CPU's */
	const struct CMUnitTest device_tests[] = {
		cmocka_unit_test(test_table),	     cmocka_unit_test(test_products), cmocka_unit_test(test_contract),
		cmocka_unit_test(test_ops),	     cmocka_unit_test(test_ops_contract), cmocka_unit_test(test_product_n),
		cmocka_unit_test(test_seq),	     cmocka_unit_test(test_vk_coopmat),
	};
	if (test_device())
		return cmocka_run_group_tests_name(test_device(), device_tests, NULL, NULL);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
