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
 * token (mat_vec) and batches of 2..600 tokens on both sides of the GEMM
 * threshold, every weight type quant/ can dot. */
#include <setjmp.h>
#include <stdarg.h>
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

#define MAX_TOKENS 600

/* ---- backends ------------------------------------------------------------------ */

struct backend_entry {
	const char *name;
	const char *isa; /* CPU kernel variant to force while it runs, or NULL */
	int (*make)(struct tern_backend **out, const struct backend_entry *e, tern_err *err);
	int n_threads;
	enum cpu_mm_repack repack;
};

static int make_cpu(struct tern_backend **out, const struct backend_entry *e, tern_err *err)
{
	struct cpu_backend_opts o = {.n_threads = e->n_threads, .max_tokens = MAX_TOKENS, .repack = e->repack};
	return cpu_backend_new(out, &o, err);
}

static int make_ref(struct tern_backend **out, const struct backend_entry *e, tern_err *err)
{
	(void)e;
	struct cpu_backend_opts o = {.n_threads = 1, .max_tokens = MAX_TOKENS};
	return cpu_ref_backend_new(out, &o, err);
}

static const struct backend_entry backends[] = {
	{"cpu avx512, 3 threads", "avx512", make_cpu, 3, CPU_MM_REPACK_NONE},
	{"cpu avx512, 1 thread, repack", "avx512", make_cpu, 1, CPU_MM_REPACK_BATCH},
	{"cpu avx512, 2 threads, repack all", "avx512", make_cpu, 2, CPU_MM_REPACK_ALL},
	{"cpu avx2, 2 threads", "avx2", make_cpu, 2, CPU_MM_REPACK_NONE},
	{"cpu neon, 2 threads", "neon", make_cpu, 2, CPU_MM_REPACK_NONE},
	{"cpu scalar, 2 threads", "scalar", make_cpu, 2, CPU_MM_REPACK_NONE},
	/* the reference against itself: a second instance, same bits */
	{"cpu-ref", NULL, make_ref, 1, CPU_MM_REPACK_NONE},
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
 * a margin of several orders of magnitude both ways. */
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

/* Run mat_vec (one token) or mat_mul on be; the result in y ([ntok][rows]).
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
	struct tern_buf yv = tern_buf_rows(&yb, 1, in->ntok);
	be->begin_step(be);
	if (in->ntok == 1)
		be->mat_vec(be, &w, &x, &yv);
	else
		be->mat_mul(be, &w, &x, &yv);
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
		n += cpu_mm_type_ok(t);
	return n;
}

/* ---- the op checks ------------------------------------------------------------------ */

static double worst[QT_COUNT];

static void check_products(const struct backend_entry *be_e, struct tern_backend *be, struct tern_backend *ref)
{
	int types = 0;
	for (uint32_t t = 0; t < QT_COUNT; t++) {
		if (!cpu_mm_type_ok(t))
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
			if (!(e <= nmse_max(t)))
				fail_msg("%s: %s %s %lldx%lld, %lld tokens: NMSE %.3g above %.1g", be_e->name,
					 in.ntok == 1 ? "mat_vec" : "mat_mul", quant_type_name(t), (long long)in.rows,
					 (long long)in.cols, (long long)in.ntok, e, nmse_max(t));
			free(y);
			free(yr);
			free_inputs(&in);
		}
	}
	assert_int_equal(types, n_weight_types());
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
		if (b->make(&be, b, &e))
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
		if (cpu_mm_type_ok(t))
			printf(" %s %.1e", quant_type_name(t), worst[t]);
	printf("\n");
}

/* Contract: load-time calls fail with a message; a per-step op given
 * operands that do not fit does nothing and the next sync says why. */
static void check_contract(struct tern_backend *be)
{
	tern_err e = {0};
	uint8_t file[1 + 4 * 18] = {0};
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
	int64_t ne3[3] = {32, 2, 2};
	assert_int_equal(be->buf_alloc(be, &w3, QT_Q4_0, 3, ne3, &e), 0);
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
	be->mat_mul(be, &w, &x, &y);
	assert_int_equal(be->sync(be, &e), TERN_EINVAL);
	assert_non_null(strstr(e.msg, "not prepared"));
	assert_int_equal(be->sync(be, &e), 0); /* reported once */
	assert_int_equal(be->mat_prepare(be, &w, &e), 0);
	/* mat_vec with two tokens; y of the wrong width; only the first error
	 * is kept */
	be->mat_vec(be, &w, &x, &y);
	struct tern_buf y1 = tern_buf_rows(&y, 0, 1);
	y1.ne[0] = 3;
	be->mat_vec(be, &w, &x, &y1);
	assert_int_equal(be->sync(be, &e), TERN_EINVAL);
	assert_non_null(strstr(e.msg, "mat_vec"));
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
	be->mat_mul(be, &w, &x, &y);
	be->download(be, &y, 0, host, sizeof host);
	assert_int_equal(be->sync(be, &e), 0);
	for (int i = 0; i < 8; i++)
		assert_true(host[i] == 0.0f);
	be->buf_free(be, &x);
	be->buf_free(be, &y);
	be->buf_free(be, &w);
	be->buf_free(be, &w); /* empty: safe */
}

static void test_contract(void **state)
{
	(void)state;
	tern_err e = {0};
	for (size_t i = 0; i < sizeof backends / sizeof *backends; i++) {
		const struct backend_entry *b = &backends[i];
		if (b->isa && quant_cpu_force(b->isa) != 0)
			continue;
		struct tern_backend *be;
		assert_int_equal(b->make(&be, b, &e), 0);
		check_contract(be);
		tern_backend_free(be);
		quant_cpu_force("auto");
	}
	struct tern_backend *be;
	struct cpu_backend_opts o = {.n_threads = 1, .max_tokens = 0};
	assert_int_equal(cpu_backend_new(&be, &o, &e), TERN_EINVAL);
	assert_null(be);
	assert_int_equal(cpu_ref_backend_new(&be, &o, &e), TERN_EINVAL);
	o = (struct cpu_backend_opts){.n_threads = 0, .max_tokens = 1};
	assert_int_equal(cpu_backend_new(&be, &o, &e), TERN_EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_products),
		cmocka_unit_test(test_contract),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
