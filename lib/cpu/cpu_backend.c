/* cpu_backend.c - the optimized CPU backend: the operation table over the
 * thread pool and the threaded products of lib/cpu/matmul.h. A weight's
 * prepared form is its struct cpu_mm; one scratch, grown by mat_prepare to
 * the largest any weight needs at max_tokens, serves every product, so
 * that a step allocates nothing. Ops run before they return.
 *
 * The other ops run the SIMD kernels of lib/cpu/ops.h over their rows
 * (tokens; KV head x block of query rows x, in decode, chunk of keys for
 * attention), handed out from a shared counter (tp_run_any) when there is
 * enough work to pay for waking the pool, and on the caller otherwise. A
 * row's result never depends on the thread that computed it: every op
 * gives the same bits on any number of threads (tests/test_backend_ops.c,
 * test_threads). */
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "lib/core/mapfile.h"
#include "lib/cpu/backend.h"
#include "lib/cpu/host.h"
#include "lib/cpu/ops.h"
#include "lib/cpu/threadpool.h"
#include "quant/cpu.h"
#include "quant/ggml_order.h"
#include "quant/quant.h"

/* experts moe_route takes (its per-token state lives on the stack) */
#define CPU_MOE_MAX_EXPERTS 1024

struct cpu {
	struct tern_host host; /* first: the shared host state */
	struct tern_backend be;
	struct tp_pool *pool;
	enum cpu_mm_repack repack;
	bool keep_layout;
	void *scratch;        /* scratch_size bytes, 64-byte aligned */
	size_t scratch_size;
	float *attn_ws;       /* [n_threads][CPU_ATTN_WS_FLOATS] */
	float *attn_part;     /* [ATTN_PART_FLOATS]: a split decode attention's chunks */
};

static size_t up64(size_t n) { return (n + 63) & ~(size_t)63; }

/* mat_mul_id of a batch: the GEMM's scratch, then the gathered inputs
 * [max_tokens][cols] and outputs [max_tokens][rows] of one expert and the
 * list of its (token, slot) pairs */
static size_t id_gather_offset(const struct cpu_mm *mm) { return up64(mm->scratch_size); }

static size_t id_scratch(const struct cpu_mm *mm)
{
	size_t n = (size_t)mm->max_tokens;
	return id_gather_offset(mm) + up64(n * (size_t)mm->cols * 4) + up64(n * (size_t)mm->rows * 4) + up64(n * 8);
}

static void release_experts(struct cpu_mm *mm, int64_t n)
{
	for (int64_t e = 0; e < n; e++)
		cpu_mm_release(&mm[e]);
	free(mm);
}

/* The prepared form of a weight: one struct cpu_mm per expert (a 2-D
 * weight is one), so that product reads the first as before. */
static int cpu_mat_prepare(struct tern_backend *be, struct tern_buf *w, tern_err *err)
{
	struct cpu *c = be->impl;
	int rc = tern_host_weight_shape(be, w, err);
	if (rc)
		return rc;
	int64_t n_exp = w->ne[2];
	struct cpu_mm *mm = calloc((size_t)n_exp, sizeof *mm);
	if (!mm)
		return tern_errf(err, TERN_ENOMEM, "%s: out of memory", be->name);
	struct cpu_mm_opts o = {.max_tokens = be->max_tokens, .repack = c->repack, .relay = !c->keep_layout && n_exp == 1,
				.drop_source = (w->flags & TERN_BUF_MAPPED) != 0};
	for (int64_t e = 0; e < n_exp && !rc; e++)
		rc = cpu_mm_prepare(&mm[e], c->pool, w->type, (const uint8_t *)tern_buf_host(w) + (size_t)e * w->nb[2],
				    w->nb[1], w->ne[1], w->ne[0], &o, err);
	if (rc && n_exp > 1)
		tern_err_prefixf(err, "%s: expert stack", be->name);
	size_t need = rc ? 0 : mm->scratch_size;
	if (!rc && cpu_mm_vec_n_scratch(mm) > need)
		need = cpu_mm_vec_n_scratch(mm);
	if (!rc && n_exp > 1 && cpu_mm_vec_multi_scratch(mm) > need)
		need = cpu_mm_vec_multi_scratch(mm);
	if (!rc && n_exp > 1 && id_scratch(mm) > need)
		need = id_scratch(mm);
	/* mat_mul_ggml's quantized activations */
	if (!rc && n_exp == 1 && (size_t)be->max_tokens * quant_ggml_act_size(w->type, w->ne[0]) > need)
		need = (size_t)be->max_tokens * quant_ggml_act_size(w->type, w->ne[0]);
	if (!rc && need > c->scratch_size) {
		void *s = aligned_alloc(64, (need + 63) & ~(size_t)63);
		if (s) {
			free(c->scratch);
			c->scratch = s;
			c->scratch_size = need;
		} else {
			rc = tern_errf(err, TERN_ENOMEM, "%s: out of memory for %zu bytes of scratch", be->name, need);
		}
	}
	if (rc) {
		release_experts(mm, n_exp);
		return rc;
	}
	if (w->prep) /* a second prepare replaces the first */
		release_experts(w->prep, n_exp);
	w->prep = mm;
	/* the products read the interleaved copy from now on: the file's
	 * pages of the matrix need not stay in memory beside it */
	if (mm->relaid && (w->flags & TERN_BUF_MAPPED))
		tern_map_drop(tern_buf_host(w), (size_t)w->ne[1] * w->nb[1]);
	return 0;
}

_Static_assert(TERN_MAT_VEC_N <= CPU_MM_VEC_N, "product's weights in one mat-vec step");

/* One token: the mat-vec path, several weights in one step (the input
 * quantized once, the threads woken once; each result the bits of its own
 * call); a batch: the GEMM of each weight. */
static void cpu_product(struct tern_backend *be, int n_w, const struct tern_buf *const *w, const struct tern_buf *x,
			struct tern_buf *const *y)
{
	struct cpu *c = be->impl;
	if (!tern_host_product_args(be, n_w, w, x, y))
		return;
	if (x->ne[1] > 1 || n_w == 1) {
		for (int i = 0; i < n_w; i++)
			cpu_mm_run(w[i]->prep, c->pool, tern_buf_host(x), x->ne[1], tern_buf_host(y[i]), c->scratch);
		return;
	}
	const struct cpu_mm *mm[TERN_MAT_VEC_N];
	float *yd[TERN_MAT_VEC_N];
	for (int i = 0; i < n_w; i++) {
		mm[i] = w[i]->prep;
		yd[i] = tern_buf_host(y[i]);
	}
	cpu_mm_run_vec_n(mm, n_w, c->pool, tern_buf_host(x), yd, c->scratch);
}

/* ---- the other ops ---- */

/* A job over rows [0, n): fn(arg, r0, r1) on contiguous slices. */
typedef void (*rows_fn)(void *arg, int64_t r0, int64_t r1);

struct par {
	rows_fn fn;
	void *arg;
	int64_t n, n_tasks;
	_Atomic int64_t next;
};

/* Tasks from a shared counter: a row's result does not depend on which
 * thread computes it, and a worker that never starts (its core busy
 * elsewhere) leaves its tasks to the others (tp_run_any). */
static void par_body(void *arg, int ith, int nth)
{
	(void)ith;
	(void)nth;
	struct par *p = arg;
	for (;;) {
		int64_t k = atomic_fetch_add_explicit(&p->next, 1, memory_order_relaxed);
		if (k >= p->n_tasks)
			break;
		int64_t r0 = p->n * k / p->n_tasks, r1 = p->n * (k + 1) / p->n_tasks;
		if (r1 > r0)
			p->fn(p->arg, r0, r1);
	}
}

/* Below this many elements of work a job runs on the caller: waking the
 * workers costs a few microseconds, as much as the work. */
#define PAR_MIN_WORK 16384

static void par_rows(struct tern_backend *be, rows_fn fn, void *arg, int64_t n, int64_t work)
{
	struct cpu *c = be->impl;
	int nth = tp_threads(c->pool);
	if (work < PAR_MIN_WORK || n < 2 || nth == 1) {
		fn(arg, 0, n);
		return;
	}
	/* a few tasks per thread: the threads that run take up the slack of
	 * one that is late */
	int64_t tasks = 4 * (int64_t)nth;
	struct par p = {.fn = fn, .arg = arg, .n = n, .n_tasks = tasks < n ? tasks : n};
	atomic_init(&p.next, 0);
	tp_run_any(c->pool, par_body, &p);
}

struct ops_args {
	struct tern_backend *be;
	const struct tern_buf *a, *b, *c, *d;
	struct tern_buf *x, *y;
	const void *p;
	int kind;
	float s;
};

/* ---- products in ggml's order (quant/ggml_order.h) ----
 * The activations quantized once into the scratch (mat_prepare sized it),
 * then slices of weight rows, each over every token. */
struct ggml_mm_job {
	uint32_t type;
	int64_t cols, rows;
	size_t act_size, wstride;
	const uint8_t *w;
	const float *x;
	float *y;
	uint8_t *act;
	int64_t ntok;
};

static void ggml_act_rows(void *arg, int64_t t0, int64_t t1)
{
	struct ggml_mm_job *j = arg;
	for (int64_t t = t0; t < t1; t++)
		quant_ggml_quantize(j->type, j->x + t * j->cols, j->act + (size_t)t * j->act_size, j->cols);
}

static void ggml_mm_rows(void *arg, int64_t r0, int64_t r1)
{
	struct ggml_mm_job *j = arg;
	quant_ggml_rows_n(j->type, j->cols, j->w + (size_t)r0 * j->wstride, j->wstride, r1 - r0, j->act, j->act_size,
			  j->ntok, j->y + r0, j->rows, j->ntok - j->ntok % 4);
}

static void cpu_mat_mul_ggml(struct tern_backend *be, const struct tern_buf *w, const struct tern_buf *x,
			     struct tern_buf *y)
{
	struct cpu *c = be->impl;
	if (!tern_host_ggml_ok(be, "mat_mul_ggml"))
		return;
	if (!quant_ggml_ok(w->type) || w->ne[2] != 1) {
		cpu_product(be, 1, &w, x, &y);
		return;
	}
	if (!tern_host_mm_args(be, "mat_mul_ggml", w, x, y))
		return;
	struct ggml_mm_job j = {.type = w->type, .cols = w->ne[0], .rows = w->ne[1], .wstride = w->nb[1],
				.w = tern_buf_host(w), .x = tern_buf_host(x), .y = tern_buf_host(y), .act = c->scratch,
				.ntok = x->ne[1]};
	j.act_size = quant_ggml_act_size(w->type, j.cols);
	par_rows(be, ggml_act_rows, &j, j.ntok, j.ntok * j.cols * 4);
	par_rows(be, ggml_mm_rows, &j, j.rows, j.rows * j.ntok * j.cols);
}

/* ---- one matrix per head (MLA) ----
 * Units: a head x a block of HEADS_TOK tokens, from a shared counter; each
 * quantizes its block's activations (on its stack) and takes one tile of
 * dots, so that a unit's result does not depend on the thread. */
#define HEADS_TOK 8
/* rows up to this long quantize into the stack; longer ones into the heap */
#define HEADS_STACK_COLS 1024

static void heads_rows(void *arg, int64_t u0, int64_t u1)
{
	struct ops_args *o = arg;
	const struct tern_buf *w = o->a, *x = o->b;
	struct tern_buf *y = o->y;
	int64_t cols = w->ne[0], rows = w->ne[1], nh = w->ne[2], ntok = x->ne[2];
	int64_t nblk = (ntok + HEADS_TOK - 1) / HEADS_TOK;
	uint32_t at = quant_vec_dot_type(w->type);
	size_t arow = quant_row_size(at, (uint64_t)cols, NULL);
	_Alignas(64) uint8_t stack_act[HEADS_TOK * 2 * HEADS_STACK_COLS]; /* Q8: at most 1.25 bytes per element */
	uint8_t *act = stack_act, *heap = NULL;
	if (at != QT_F32 && (size_t)HEADS_TOK * arow > sizeof stack_act) {
		heap = aligned_alloc(64, ((size_t)HEADS_TOK * arow + 63) & ~(size_t)63);
		if (!heap) {
			tern_host_fail(o->be, "mat_mul_heads: out of memory for rows of %lld columns", (long long)cols);
			return;
		}
		act = heap;
	}
	const float *xd = tern_buf_host(x);
	float *yd = tern_buf_host(y);
	for (int64_t u = u0; u < u1; u++) {
		int64_t h = u / nblk, t0 = u % nblk * HEADS_TOK;
		int nt = (int)(ntok - t0 < HEADS_TOK ? ntok - t0 : HEADS_TOK);
		const float *xr = xd + (t0 * nh + h) * cols;
		const void *a = xr;
		size_t astride = sizeof(float) * (size_t)(nh * cols);
		if (at != QT_F32) {
			for (int i = 0; i < nt; i++)
				quant_quantize_act(at, xr + (size_t)i * (size_t)(nh * cols), act + (size_t)i * arow,
						   (uint64_t)cols);
			a = act;
			astride = arow;
		}
		quant_dot_tile(w->type, cols, (const uint8_t *)tern_buf_host(w) + (size_t)h * w->nb[2], w->nb[1],
			       (int)rows, a, astride, nt, yd + (t0 * nh + h) * rows, (size_t)(nh * rows));
	}
	if (heap) /* free(NULL) too is an allocator call (test_llm_alloc counts them) */
		free(heap);
}

static void cpu_mat_mul_heads(struct tern_backend *be, const struct tern_buf *w, const struct tern_buf *x,
			      struct tern_buf *y)
{
	if (!tern_host_heads_args(be, w, x, y))
		return;
	struct ops_args o = {.be = be, .a = w, .b = x, .y = y};
	int64_t units = w->ne[2] * ((x->ne[2] + HEADS_TOK - 1) / HEADS_TOK);
	par_rows(be, heads_rows, &o, units, w->ne[0] * w->ne[1] * w->ne[2] * x->ne[2]);
}

static const uint8_t *row_at(const struct tern_buf *b, int64_t i1, int64_t i2)
{
	return (const uint8_t *)tern_buf_host(b) + (size_t)i1 * b->nb[1] + (size_t)i2 * b->nb[2];
}

static void get_rows_rows(void *arg, int64_t r0, int64_t r1)
{
	struct ops_args *o = arg;
	const int32_t *id = tern_buf_host(o->b);
	float *yd = tern_buf_host(o->y);
	const struct cpu_ops *k = cpu_ops();
	for (int64_t t = r0; t < r1; t++)
		if (tern_host_pos_ok(o->be, "get_rows", id[t], o->a->ne[1]))
			k->decode_row(o->a->type, row_at(o->a, id[t], 0), yd + t * o->y->ne[0], o->a->ne[0]);
}

static void cpu_get_rows(struct tern_backend *be, const struct tern_buf *w, const struct tern_buf *ids,
			 struct tern_buf *y)
{
	if (!tern_host_get_rows_args(be, w, ids, y))
		return;
	struct ops_args o = {.be = be, .a = w, .b = ids, .y = y};
	par_rows(be, get_rows_rows, &o, ids->ne[0], ids->ne[0] * w->ne[0]);
}

static void norm_rows(void *arg, int64_t r0, int64_t r1)
{
	struct ops_args *o = arg;
	const struct tern_norm *p = o->p;
	const struct cpu_ops *k = cpu_ops();
	int64_t n = o->x->ne[0];
	float *xd = tern_buf_host(o->x), *yd = tern_buf_host(o->y);
	const float *rd = o->a ? tern_buf_host(o->a) : NULL, *wd = o->b ? tern_buf_host(o->b) : NULL;
	const float *bd = o->c ? tern_buf_host(o->c) : NULL;
	for (int64_t row = r0; row < r1; row++)
		k->norm_row(xd + row * n, rd ? rd + row * n : NULL, wd, bd, yd + row * n, n, p->eps,
			    p->kind | (p->ggml ? CPU_NORM_GGML : 0));
}

static void cpu_norm(struct tern_backend *be, struct tern_buf *x, const struct tern_buf *r, const struct tern_buf *w,
		     const struct tern_buf *b, struct tern_buf *y, const struct tern_norm *p)
{
	if (!tern_host_norm_args(be, x, r, w, b, y, p))
		return;
	struct ops_args o = {.be = be, .x = x, .a = r, .b = w, .c = b, .y = y, .p = p};
	par_rows(be, norm_rows, &o, tern_host_nrows(x), tern_host_nrows(x) * x->ne[0]);
}

/* rows: tokens; the angles of a token are computed once for all its
 * heads, as llama.cpp does: theta_j = pos * base^(-2j/n_rot) by repeated
 * products in f32 */
#define ROPE_MAX_PAIRS (TERN_ATTN_MAX_HEAD_DIM / 2)

/* cos and sin of pair j whose unscaled angle is e (pos / base^(2j/n_rot)
 * / freq[j]): linear scaling and YaRN's ramp (lib/backend.h), both times
 * mag (rope_mag: YaRN's mscale times the attention factor), in f32 as
 * llama.cpp */
static inline void rope_angle(const struct tern_rope *p, int64_t j, float e, float mag, float *cs, float *sn)
{
	float th = p->freq_scale * e;
	if (p->ext_factor > 0) {
		float y = ((float)j - p->corr_low) / fmaxf(0.001f, p->corr_high - p->corr_low);
		float r = p->ext_factor * (1.0f - fminf(1.0f, fmaxf(0.0f, y)));
		th = th * (1.0f - r) + e * r;
	}
	sincosf(th, sn, cs);
	*sn *= mag;
	*cs *= mag;
}

/* YaRN's mscale and the attention factor both scale cos and sin (llama.cpp
 * passes one product as ggml_rope_ext's attn_factor); 0 stands for 1 in each */
static inline float rope_mag(const struct tern_rope *p)
{
	return (p->mscale > 0 ? p->mscale : 1.0f) * (p->attn_factor > 0 ? p->attn_factor : 1.0f);
}

/* The angle tables of one token at position pos for rope_head: cs, sn
 * [half], ce, so [2 half] (lib/cpu/ops.h) */
static void rope_tables(const struct tern_rope *p, int32_t pos, const float *ff, float *cs, float *sn, float *ce,
			float *so)
{
	float theta_scale = powf(p->freq_base, -2.0f / (float)p->n_rot);
	float ms = rope_mag(p), theta = (float)pos;
	for (int64_t j = 0; j < p->n_rot / 2; j++, theta *= theta_scale) {
		rope_angle(p, j, ff ? theta / ff[j] : theta, ms, &cs[j], &sn[j]);
		ce[2 * j] = cs[j];
		ce[2 * j + 1] = p->ggml ? sn[j] : cs[j];
		so[2 * j] = -sn[j];
		so[2 * j + 1] = p->ggml ? cs[j] : sn[j];
	}
}

static void rope_rows(void *arg, int64_t r0, int64_t r1)
{
	struct ops_args *o = arg;
	const struct tern_rope *p = o->p;
	const struct cpu_ops *k = cpu_ops();
	const int32_t *pd = tern_buf_host(o->a);
	const float *ff = o->b ? tern_buf_host(o->b) : NULL;
	int64_t hd = o->x->ne[0], nh = o->x->ne[1], half = p->n_rot / 2;
	float cs[ROPE_MAX_PAIRS], sn[ROPE_MAX_PAIRS], ce[2 * ROPE_MAX_PAIRS], so[2 * ROPE_MAX_PAIRS];
	for (int64_t t = r0; t < r1; t++) {
		rope_tables(p, pd[t], ff, cs, sn, ce, so);
		for (int64_t h = 0; h < nh; h++)
			k->rope_head((float *)tern_buf_host(o->x) + (t * nh + h) * hd, cs, sn, ce, so, half,
				     p->mode | (p->ggml ? CPU_ROPE_GGML : 0));
	}
}

/* one head at position pos, for rotations wider than the tables above:
 * each angle as it is needed */
static void rope_wide_head(const struct tern_rope *p, float *xh, int32_t pos, const float *ff)
{
	int64_t half = p->n_rot / 2;
	float theta_scale = powf(p->freq_base, -2.0f / (float)p->n_rot);
	float ms = rope_mag(p), theta = (float)pos;
	for (int64_t j = 0; j < half; j++, theta *= theta_scale) {
		float cs, sn;
		rope_angle(p, j, ff ? theta / ff[j] : theta, ms, &cs, &sn);
		int64_t i0 = p->mode == TERN_ROPE_NEOX ? j : 2 * j;
		int64_t i1 = p->mode == TERN_ROPE_NEOX ? j + half : 2 * j + 1;
		float a = xh[i0], b = xh[i1];
		xh[i0] = p->ggml ? fmaf(a, cs, -(b * sn)) : a * cs - b * sn; /* as the kernels' rope_head */
		xh[i1] = p->ggml ? fmaf(a, sn, b * cs) : a * sn + b * cs;
	}
}

/* rows: token x head */
static void rope_wide_rows(void *arg, int64_t r0, int64_t r1)
{
	struct ops_args *o = arg;
	const int32_t *pd = tern_buf_host(o->a);
	const float *ff = o->b ? tern_buf_host(o->b) : NULL;
	int64_t hd = o->x->ne[0], nh = o->x->ne[1];
	for (int64_t r = r0; r < r1; r++)
		rope_wide_head(o->p, (float *)tern_buf_host(o->x) + r * hd, pd[r / nh], ff);
}

static void cpu_rope(struct tern_backend *be, struct tern_buf *x, const struct tern_buf *pos, const struct tern_buf *freq,
		     const struct tern_rope *p)
{
	if (!tern_host_rope_args(be, x, pos, freq, p))
		return;
	struct ops_args o = {.be = be, .x = x, .a = pos, .b = freq, .p = p};
	int64_t ntok = pos->ne[0], nh = x->ne[1];
	/* a sincos costs ~20 rotations */
	int64_t work = ntok * (p->n_rot / 2) * (20 + nh);
	if (p->n_rot / 2 <= ROPE_MAX_PAIRS)
		par_rows(be, rope_rows, &o, ntok, work);
	else
		par_rows(be, rope_wide_rows, &o, ntok * nh, work);
}

/* norm_rope: a token's Q heads, then its K heads, each normed (with its
 * weight) and turned while it is in cache; the angles once per token for
 * both. Each head gets the very calls norm and rope give it (norm_row in
 * place, then rope_head or rope_wide_head): the same bits. */
struct norm_rope_args {
	struct tern_buf *x[2];       /* q, k (or NULL) */
	const struct tern_buf *w[2]; /* their norms' weights, or NULL */
	const struct tern_buf *pos, *freq;
	const struct tern_norm *n;
	const struct tern_rope *p;
};

/* one head normed in place with its weight, as norm_rows does a row; w
 * NULL: not normed */
static void head_norm(const struct norm_rope_args *a, float *xh, const float *w, int64_t hd)
{
	if (w)
		cpu_ops()->norm_row(xh, NULL, w, NULL, xh, hd, a->n->eps, a->n->kind | (a->n->ggml ? CPU_NORM_GGML : 0));
}

/* rows: tokens */
static void norm_rope_rows(void *arg, int64_t r0, int64_t r1)
{
	const struct norm_rope_args *a = arg;
	const struct tern_rope *p = a->p;
	const struct cpu_ops *k = cpu_ops();
	const int32_t *pd = tern_buf_host(a->pos);
	const float *ff = a->freq ? tern_buf_host(a->freq) : NULL;
	int64_t hd = a->x[0]->ne[0], half = p->n_rot / 2;
	float cs[ROPE_MAX_PAIRS], sn[ROPE_MAX_PAIRS], ce[2 * ROPE_MAX_PAIRS], so[2 * ROPE_MAX_PAIRS];
	for (int64_t t = r0; t < r1; t++) {
		rope_tables(p, pd[t], ff, cs, sn, ce, so);
		for (int i = 0; i < 2 && a->x[i]; i++) {
			int64_t nh = a->x[i]->ne[1];
			const float *w = a->w[i] ? tern_buf_host(a->w[i]) : NULL;
			for (int64_t h = 0; h < nh; h++) {
				float *xh = (float *)tern_buf_host(a->x[i]) + (t * nh + h) * hd;
				head_norm(a, xh, w, hd);
				k->rope_head(xh, cs, sn, ce, so, half, p->mode | (p->ggml ? CPU_ROPE_GGML : 0));
			}
		}
	}
}

/* rows: token x head of q, then of k, for rotations wider than the tables */
static void norm_rope_wide_rows(void *arg, int64_t r0, int64_t r1)
{
	const struct norm_rope_args *a = arg;
	const int32_t *pd = tern_buf_host(a->pos);
	const float *ff = a->freq ? tern_buf_host(a->freq) : NULL;
	int64_t hd = a->x[0]->ne[0], nq = tern_host_nrows(a->x[0]);
	for (int64_t r = r0; r < r1; r++) {
		int i = r < nq ? 0 : 1;
		int64_t rr = i ? r - nq : r, nh = a->x[i]->ne[1];
		float *xh = (float *)tern_buf_host(a->x[i]) + rr * hd;
		head_norm(a, xh, a->w[i] ? tern_buf_host(a->w[i]) : NULL, hd);
		rope_wide_head(a->p, xh, pd[rr / nh], ff);
	}
}

static void cpu_norm_rope(struct tern_backend *be, struct tern_buf *q, struct tern_buf *k, const struct tern_buf *qw,
			  const struct tern_buf *kw, const struct tern_buf *pos, const struct tern_buf *freq,
			  const struct tern_norm *n, const struct tern_rope *p)
{
	if (!tern_host_norm_rope_args(be, q, k, qw, kw, pos, freq, n, p))
		return;
	struct norm_rope_args a = {.x = {q, k}, .w = {qw, kw}, .pos = pos, .freq = freq, .n = n, .p = p};
	int64_t ntok = pos->ne[0], nh = q->ne[1] + (k ? k->ne[1] : 0), hd = q->ne[0];
	int64_t nw = (qw ? q->ne[1] : 0) + (kw ? k->ne[1] : 0);
	/* rope's estimate, and a norm's three passes over each normed head */
	int64_t work = ntok * ((p->n_rot / 2) * (20 + nh) + 3 * nw * hd);
	if (p->n_rot / 2 <= ROPE_MAX_PAIRS)
		par_rows(be, norm_rope_rows, &a, ntok, work);
	else
		par_rows(be, norm_rope_wide_rows, &a, ntok * nh, work);
}

static void kv_store_rows(void *arg, int64_t r0, int64_t r1)
{
	struct ops_args *o = arg;
	const int32_t *pd = tern_buf_host(o->a);
	const float *xd = tern_buf_host(o->b);
	struct tern_buf *cache = o->x;
	const struct cpu_ops *k = cpu_ops();
	int64_t hd = cache->ne[0], nkv = cache->ne[1];
	const int32_t *sd = o->c ? tern_buf_host(o->c) : NULL;
	for (int64_t t = r0; t < r1; t++) {
		if (!tern_host_pos_ok(o->be, "kv_store", pd[t], cache->ne[2]) ||
		    (sd && !tern_host_pos_ok(o->be, "kv_store: sequence", sd[t], cache->ne[3])))
			continue;
		uint8_t *dst = (uint8_t *)row_at(cache, 0, pd[t]) + (sd ? (size_t)sd[t] * cache->nb[3] : 0);
		if (cache->type == QT_F32)
			memcpy(dst, xd + t * nkv * hd, sizeof(float) * (size_t)(nkv * hd));
		else
			for (int64_t h = 0; h < nkv; h++)
				k->encode_row(cache->type, xd + (t * nkv + h) * hd, dst + (size_t)h * cache->nb[1], hd);
	}
}

static void cpu_kv_store(struct tern_backend *be, struct tern_buf *cache, const struct tern_buf *x,
			 const struct tern_buf *pos, const struct tern_buf *seq)
{
	if (!tern_host_kv_store_args(be, cache, x, pos, seq))
		return;
	struct ops_args o = {.be = be, .x = cache, .b = x, .a = pos, .c = seq};
	par_rows(be, kv_store_rows, &o, pos->ne[0], pos->ne[0] * x->ne[0] * x->ne[1] * 4);
}

/* ---- mixture of experts ---- */

/* One token: the k selected experts' rows in one pool job. A batch: per
 * expert, the (token, slot) pairs that chose it are gathered into one
 * block of inputs, which goes through that expert's product (the GEMM
 * from quant_gemm_min_tokens on) once, and the outputs are scattered
 * back. An expert no token chose is not read. */
static void cpu_mat_mul_id(struct tern_backend *be, const struct tern_buf *w, const struct tern_buf *x,
			   const struct tern_buf *ids, const struct tern_buf *b, struct tern_buf *y)
{
	struct cpu *c = be->impl;
	if (!tern_host_mat_mul_id_args(be, w, x, ids, b, y))
		return;
	const struct cpu_mm *mm = w->prep;
	int64_t k = ids->ne[0], ntok = ids->ne[1], nx = x->ne[1], n_exp = w->ne[2];
	int64_t rows = w->ne[1], cols = w->ne[0];
	const int32_t *id = tern_buf_host(ids);
	const float *xd = tern_buf_host(x), *bd = b ? tern_buf_host(b) : NULL;
	float *yd = tern_buf_host(y);
	if (ntok * k > 1 && c->scratch_size < id_scratch(mm)) {
		tern_host_fail(be, "mat_mul_id: weight of one expert not prepared as a stack");
		return;
	}
	if (ntok == 1) {
		const struct cpu_mm *sel[TERN_MOE_MAX_USED];
		const float *xs[TERN_MOE_MAX_USED];
		float *ys[TERN_MOE_MAX_USED];
		int n = 0;
		for (int64_t i = 0; i < k; i++) {
			if (!tern_host_pos_ok(be, "mat_mul_id", id[i], n_exp))
				continue;
			sel[n] = &mm[id[i]];
			xs[n] = xd + (nx == 1 ? 0 : i) * cols;
			ys[n] = yd + i * rows;
			n++;
		}
		if (n)
			cpu_mm_run_vec_multi(sel, n, c->pool, xs, ys, c->scratch);
		for (int i = 0; bd && i < n; i++) {
			const float *be_ = bd + (sel[i] - mm) * rows;
			for (int64_t r = 0; r < rows; r++)
				ys[i][r] += be_[r];
		}
		return;
	}
	for (int64_t t = 0; t < ntok; t++)
		for (int64_t i = 0; i < k; i++)
			tern_host_pos_ok(be, "mat_mul_id", id[t * k + i], n_exp);
	uint8_t *base = c->scratch;
	float *gx = (float *)(void *)(base + id_gather_offset(mm));
	float *gy = gx + up64((size_t)mm->max_tokens * (size_t)cols * 4) / 4;
	int32_t *list = (int32_t *)(void *)(gy + up64((size_t)mm->max_tokens * (size_t)rows * 4) / 4);
	for (int64_t e = 0; e < n_exp; e++) {
		int64_t cnt = 0, pair = 0, total = ntok * k;
		while (pair < total) {
			/* a block of up to max_tokens pairs (more only with repeated ids) */
			for (; pair < total && cnt < mm->max_tokens; pair++) {
				if (id[pair] != e)
					continue;
				int64_t t = pair / k, i = pair % k;
				memcpy(gx + cnt * cols, xd + (t * nx + (nx == 1 ? 0 : i)) * cols, sizeof(float) * (size_t)cols);
				list[cnt++] = (int32_t)pair;
			}
			if (!cnt)
				break;
			cpu_mm_run(&mm[e], c->pool, gx, cnt, gy, c->scratch);
			for (int64_t r = 0; r < cnt; r++) {
				float *dst = yd + (int64_t)list[r] * rows;
				const float *src = gy + r * rows;
				if (bd)
					for (int64_t j = 0; j < rows; j++)
						dst[j] = src[j] + bd[e * rows + j];
				else
					memcpy(dst, src, sizeof(float) * (size_t)rows);
			}
			cnt = 0;
		}
	}
}

/* the router, token by token on the caller: a few experts' worth of work */
static void cpu_moe_route(struct tern_backend *be, const struct tern_buf *logits, const struct tern_buf *bias,
			  struct tern_buf *ids, struct tern_buf *weights, const struct tern_moe_route *p)
{
	if (!tern_host_moe_route_args(be, logits, bias, ids, weights, p))
		return;
	int64_t ne = logits->ne[0], k = p->k;
	int ng = p->n_group > 1 ? p->n_group : 1;
	int64_t per = ne / ng;
	if (ne > CPU_MOE_MAX_EXPERTS) {
		tern_host_fail(be, "moe_route: %lld experts (at most %d)", (long long)ne, CPU_MOE_MAX_EXPERTS);
		return;
	}
	const float *ld = tern_buf_host(logits), *bd = bias ? tern_buf_host(bias) : NULL;
	int32_t *id = tern_buf_host(ids);
	float *wd = tern_buf_host(weights);
	float prob[CPU_MOE_MAX_EXPERTS], sel[CPU_MOE_MAX_EXPERTS];
	for (int64_t t = 0; t < tern_host_nrows(logits); t++) {
		const float *lt = ld + t * ne;
		if (p->gating == TERN_MOE_SOFTMAX) {
			float m = -INFINITY, sum = 0;
			for (int64_t e = 0; e < ne; e++)
				m = fmaxf(m, lt[e]);
			for (int64_t e = 0; e < ne; e++)
				sum += prob[e] = expf(lt[e] - m);
			for (int64_t e = 0; e < ne; e++)
				prob[e] /= sum;
		} else {
			for (int64_t e = 0; e < ne; e++)
				prob[e] = p->gating == TERN_MOE_SIGMOID ? 1.0f / (1.0f + expf(-lt[e])) : lt[e];
		}
		for (int64_t e = 0; e < ne; e++)
			sel[e] = bd ? prob[e] + bd[e] : prob[e];
		if (ng > 1) {
			float gs[CPU_MOE_MAX_EXPERTS];
			for (int g = 0; g < ng; g++) {
				float b1 = -INFINITY, b2 = -INFINITY;
				for (int64_t e = g * per; e < (g + 1) * per; e++) {
					float v = sel[e];
					b2 = v > b1 ? b1 : fmaxf(b2, v);
					b1 = fmaxf(b1, v);
				}
				gs[g] = per > 1 ? b1 + b2 : b1;
			}
			/* a group survives when fewer than n_group_used groups beat it */
			bool keep[CPU_MOE_MAX_EXPERTS];
			for (int g = 0; g < ng; g++) {
				int better = 0;
				for (int h = 0; h < ng; h++)
					better += gs[h] > gs[g] || (gs[h] == gs[g] && h < g);
				keep[g] = better < p->n_group_used;
			}
			for (int64_t e = 0; e < ne; e++)
				if (!keep[e / per])
					sel[e] = -INFINITY;
		}
		/* top-k by insertion into a sorted list (k is small) */
		int32_t *it = id + t * k;
		float top[TERN_MOE_MAX_USED];
		int64_t nt = 0;
		for (int64_t e = 0; e < ne; e++) {
			float v = sel[e];
			if (nt == k && !(v > top[k - 1]))
				continue;
			int64_t j = nt < k ? nt++ : k - 1;
			for (; j > 0 && v > top[j - 1]; j--) {
				top[j] = top[j - 1];
				it[j] = it[j - 1];
			}
			top[j] = v;
			it[j] = (int32_t)e;
		}
		float *wt = wd + t * k, sum = 0;
		for (int64_t i = 0; i < k; i++)
			wt[i] = prob[it[i]];
		if (p->gating == TERN_MOE_SOFTMAX_TOPK) {
			float m = -INFINITY, s = 0;
			for (int64_t i = 0; i < k; i++)
				m = fmaxf(m, wt[i]);
			for (int64_t i = 0; i < k; i++)
				s += wt[i] = expf(wt[i] - m);
			for (int64_t i = 0; i < k; i++)
				wt[i] /= s;
		}
		for (int64_t i = 0; i < k; i++)
			sum += wt[i];
		float inv = p->norm ? 1.0f / fmaxf(sum, 6.103515625e-5f) : 1.0f;
		for (int64_t i = 0; i < k; i++)
			wt[i] = wt[i] * inv * p->scale;
	}
}

static void combine_rows(void *arg, int64_t r0, int64_t r1)
{
	struct ops_args *o = arg;
	int64_t n = o->a->ne[0], k = o->a->ne[1];
	const float *xd = tern_buf_host(o->a), *wd = tern_buf_host(o->b);
	float *yd = tern_buf_host(o->y);
	for (int64_t t = r0; t < r1; t++) {
		float *yt = yd + t * n;
		const float *xt = xd + t * k * n, *wt = wd + t * k;
		for (int64_t j = 0; j < n; j++)
			yt[j] = wt[0] * xt[j];
		for (int64_t i = 1; i < k; i++)
			for (int64_t j = 0; j < n; j++)
				yt[j] += wt[i] * xt[i * n + j];
	}
}

static void cpu_moe_combine(struct tern_backend *be, const struct tern_buf *x, const struct tern_buf *w,
			    struct tern_buf *y)
{
	if (!tern_host_moe_combine_args(be, x, w, y))
		return;
	struct ops_args o = {.be = be, .a = x, .b = w, .y = y};
	par_rows(be, combine_rows, &o, x->ne[2], x->ne[0] * x->ne[1] * x->ne[2]);
}

/* ---- attention ----
 * Units of work (lib/cpu/ops.h): a KV head x a block of up to
 * CPU_ATTN_ROWS query rows (the group's heads of consecutive tokens) x,
 * for one token over a long context, a chunk of ATTN_CHUNK keys. Units are
 * taken from a shared counter, the heaviest (the last tokens of a causal
 * prompt) first; each writes its own rows, and the chunks of a split are
 * combined in chunk order afterwards, so that no result depends on which
 * thread ran what, nor on how many there are. */
#define ATTN_CHUNK 128
#define ATTN_PART_FLOATS (256 * 1024)

struct attn_job {
	const struct cpu_ops *k;
	struct cpu_attn_args a;
	float *ws;
	int64_t n_units;
	bool dec;       /* one token: attn_dec */
	_Atomic int64_t next;
};

static void attn_body(void *arg, int ith, int nth)
{
	(void)nth;
	struct attn_job *j = arg;
	const struct cpu_attn_args *a = &j->a;
	float *ws = j->ws + (size_t)ith * CPU_ATTN_WS_FLOATS;
	for (;;) {
		int64_t u = atomic_fetch_add_explicit(&j->next, 1, memory_order_relaxed);
		if (u >= j->n_units)
			break;
		if (j->dec) {
			j->k->attn_dec(a, u / a->n_chunks, u % a->n_chunks, ws);
			continue;
		}
		int64_t per_ru = a->nkv * a->n_chunks;
		int64_t ru = a->n_row_units - 1 - u / per_ru, kh = u % per_ru / a->n_chunks, c = u % a->n_chunks;
		j->k->attn_unit(a, kh, ru, c, ws);
	}
}

struct attn_f16_job {
	const struct cpu_ops *k;
	struct cpu_attn_args a;
	int split;
};

static void attn_f16_rows(void *arg, int64_t r0, int64_t r1)
{
	struct attn_f16_job *j = arg;
	j->k->attn_f16acc(&j->a, r0, r1, j->split);
}

/* The attention of tokens of one sequence: k and v that sequence's cache
 * (operands checked by the caller) */
static void attention_seq(struct tern_backend *be, const struct tern_buf *q, const struct tern_buf *k,
			  const struct tern_buf *v, const struct tern_buf *pos, struct tern_buf *y,
			  const struct tern_attn *p)
{
	struct cpu *c = be->impl;
	const int32_t *pd = tern_buf_host(pos);
	int64_t ntok = q->ne[2], n_ctx = k->ne[2], keys = 0;
	if (p->f16_split > 0 || p->ggml) {
		struct attn_f16_job j = {.k = cpu_ops(), .split = p->f16_split};
		if (!cpu_host_attn_f16_args(be, q, k, v, pos, y, p, &j.a))
			return;
		for (int64_t t = 0; t < ntok; t++)
			if (!tern_host_pos_ok(be, "attention", pd[t], n_ctx))
				return;
		par_rows(be, attn_f16_rows, &j, ntok * q->ne[1], ntok * q->ne[1] * n_ctx * q->ne[0] * 4);
		return;
	}
	for (int64_t t = 0; t < ntok; t++) {
		if (!tern_host_pos_ok(be, "attention", pd[t], n_ctx))
			continue;
		int64_t lo = p->window > 0 && pd[t] - (int64_t)p->window + 1 > 0 ? pd[t] - (int64_t)p->window + 1 : 0;
		keys += pd[t] - lo + 1;
	}
	struct attn_job j = {.k = cpu_ops(), .ws = c->attn_ws};
	struct cpu_attn_args *a = &j.a;
	*a = (struct cpu_attn_args){
		.q = tern_buf_host(q), .y = tern_buf_host(y), .k = tern_buf_host(k), .v = tern_buf_host(v),
		.k_head = k->nb[1], .k_pos = k->nb[2], .v_head = v->nb[1], .v_pos = v->nb[2],
		.ktype = k->type, .vtype = v->type, .pos = pd, .hd = q->ne[0], .hdv = v->ne[0], .nh = q->ne[1],
		.nkv = k->ne[1],
		.ntok = ntok, .n_ctx = n_ctx, .scale = p->scale, .softcap = p->softcap, .window = p->window,
		.n_chunks = 1, .part = c->attn_part, .sinks = p->sinks ? tern_buf_host(p->sinks) : NULL,
	};
	a->group = a->nh / a->nkv;
	a->unit_rows = a->group <= CPU_ATTN_ROWS ? a->group * (CPU_ATTN_ROWS / a->group) : CPU_ATTN_ROWS;
	a->n_row_units = (ntok * a->group + a->unit_rows - 1) / a->unit_rows;
	/* one token over a long context: chunks of keys, as many as the
	 * partials' space holds (a rule of the shapes alone) */
	if (ntok == 1 && keys >= 2 * ATTN_CHUNK) {
		int64_t cap = ATTN_PART_FLOATS / (a->nh * (a->hdv + 2));
		int64_t nc = (keys + ATTN_CHUNK - 1) / ATTN_CHUNK;
		nc = nc < cap ? nc : cap;
		if (nc > 1) {
			a->chunk = (keys + nc - 1) / nc;
			a->n_chunks = (keys + a->chunk - 1) / a->chunk;
		}
	}
	j.dec = ntok == 1 && a->group <= CPU_ATTN_DEC_ROWS && a->hd % 16 == 0 && a->hdv % 16 == 0;
	j.n_units = a->nkv * (j.dec ? 1 : a->n_row_units) * a->n_chunks;
	atomic_init(&j.next, 0);
	/* work: scores and weighted sums, ~4 flops per key and dimension */
	if (keys * a->nh * (a->hd + a->hdv) < PAR_MIN_WORK * 16 || j.n_units < 2 || tp_threads(c->pool) == 1)
		attn_body(&j, 0, 1);
	else
		tp_run_any(c->pool, attn_body, &j);
	if (a->n_chunks > 1)
		cpu_attn_combine(a, 0, a->nh);
}

/* b's indices [i0, i0 + n) of dimension dim, as a view */
static struct tern_buf dim_view(const struct tern_buf *b, int dim, int64_t i0, int64_t n)
{
	struct tern_buf v = *b;
	v.offset += (size_t)i0 * b->nb[dim];
	v.ne[dim] = n;
	v.flags &= ~(unsigned)TERN_BUF_OWNS;
	v.prep = NULL;
	return v;
}

/* Each run of consecutive tokens of one sequence over that sequence's
 * cache: the kernels see one sequence at a time, as before (a run's
 * results are those of a call with its tokens alone). */
static void cpu_attention(struct tern_backend *be, const struct tern_buf *q, const struct tern_buf *k,
			  const struct tern_buf *v, const struct tern_buf *pos, const struct tern_buf *seq,
			  struct tern_buf *y, const struct tern_attn *p)
{
	if (!tern_host_attention_args(be, q, k, v, pos, seq, y, p))
		return;
	const int32_t *sd = seq ? tern_buf_host(seq) : NULL;
	const int64_t ntok = q->ne[2];
	for (int64_t t = 0; sd && t < ntok; t++)
		if (!tern_host_pos_ok(be, "attention: sequence", sd[t], k->ne[3]))
			return;
	for (int64_t t0 = 0, t1; t0 < ntok; t0 = t1) {
		int32_t s = sd ? sd[t0] : 0;
		for (t1 = t0 + 1; sd && t1 < ntok && sd[t1] == s;)
			t1++;
		if (!sd)
			t1 = ntok;
		struct tern_buf ks = dim_view(k, 3, s, 1), vs = dim_view(v, 3, s, 1);
		struct tern_buf qr = dim_view(q, 2, t0, t1 - t0), yr = dim_view(y, 2, t0, t1 - t0);
		struct tern_buf pr = dim_view(pos, 0, t0, t1 - t0);
		attention_seq(be, &qr, &ks, &vs, &pr, &yr, p);
	}
}

/* element-wise ops: rows of ne[0]; kind selects the op */
/* EW_UNARY + a TERN_UNARY_* kind: the unary ops, last */
enum { EW_GLU_SILU, EW_GLU_GELU, EW_GLU_OAI, EW_ADD, EW_SCALE, EW_SOFTMAX, EW_UNARY };

static float gelu_erf(float x) { return 0.5f * x * (1.0f + erff(x * 0.70710678f)); }

static void eltwise_rows(void *arg, int64_t r0, int64_t r1)
{
	struct ops_args *o = arg;
	const struct cpu_ops *k = cpu_ops();
	int64_t n = o->a->ne[0];
	const float *a = (const float *)tern_buf_host(o->a) + r0 * n;
	const float *b = o->b ? tern_buf_host(o->b) : NULL;
	bool brow = b && tern_host_nrows(o->b) == 1;
	if (b && !brow)
		b += r0 * n;
	float *y = (float *)tern_buf_host(o->y) + r0 * n;
	int64_t len = (r1 - r0) * n;
	switch (o->kind) {
	case EW_GLU_SILU:
	case EW_GLU_GELU:
		k->act(a, b, y, len, o->kind == EW_GLU_GELU);
		break;
	case EW_ADD:
		if (brow)
			for (int64_t r = 0; r < r1 - r0; r++)
				k->add(a + r * n, b, y + r * n, n);
		else
			k->add(a, b, y, len);
		break;
	case EW_SCALE:
		k->scale(a, y, len, o->s);
		break;
	case EW_SOFTMAX:
		for (int64_t r = 0; r < r1 - r0; r++)
			k->softmax_row(a + r * n, y + r * n, n);
		break;
	case EW_UNARY + TERN_UNARY_GELU:
	case EW_UNARY + TERN_UNARY_SILU:
		k->act(a, NULL, y, len, o->kind == EW_UNARY + TERN_UNARY_GELU);
		break;
	case EW_UNARY + TERN_UNARY_GELU_F16:
		k->gelu_f16(a, y, len, cpu_host_gelu_f16_table());
		break;
	case EW_GLU_OAI: /* gpt-oss's clamped SwiGLU (lib/backend.h) */
		for (int64_t i = 0; i < len; i++) {
			float g = fminf(a[i], 7.0f), u = fminf(fmaxf(b[i], -7.0f), 7.0f);
			y[i] = g / (1.0f + expf(-1.702f * g)) * (u + 1.0f);
		}
		break;
	case EW_UNARY + TERN_UNARY_SIGMOID:
		for (int64_t i = 0; i < len; i++)
			y[i] = 1.0f / (1.0f + expf(-a[i]));
		break;
	default: /* gelu with erf: libm's erff */
		for (int64_t i = 0; i < len; i++)
			y[i] = gelu_erf(a[i]);
	}
}

static void eltwise(struct tern_backend *be, const struct tern_buf *a, const struct tern_buf *b, struct tern_buf *y,
		    int kind, float s, int cost)
{
	struct ops_args o = {.be = be, .a = a, .b = b, .y = y, .kind = kind, .s = s};
	par_rows(be, eltwise_rows, &o, tern_host_nrows(a), tern_host_nrows(a) * a->ne[0] * cost);
}

static void cpu_glu(struct tern_backend *be, const struct tern_buf *gate, const struct tern_buf *up,
		    struct tern_buf *y, int kind)
{
	if (kind != TERN_GLU_SWIGLU && kind != TERN_GLU_GEGLU && kind != TERN_GLU_SWIGLU_OAI) {
		tern_host_fail(be, "glu: unknown kind %d", kind);
		return;
	}
	if (tern_host_eltwise_args(be, "glu", gate, up, y, false))
		eltwise(be, gate, up, y,
			kind == TERN_GLU_GEGLU ? EW_GLU_GELU : kind == TERN_GLU_SWIGLU ? EW_GLU_SILU : EW_GLU_OAI, 0,
			kind == TERN_GLU_SWIGLU_OAI ? 8 : 2);
}

static void cpu_unary(struct tern_backend *be, const struct tern_buf *x, struct tern_buf *y, int kind)
{
	if (tern_host_unary_args(be, x, y, kind))
		eltwise(be, x, NULL, y, EW_UNARY + kind, 0,
			kind == TERN_UNARY_GELU_ERF || kind == TERN_UNARY_SIGMOID ? 8 : kind == TERN_UNARY_GELU_F16 ? 4 : 2);
}

static void cpu_add(struct tern_backend *be, const struct tern_buf *a, const struct tern_buf *b, struct tern_buf *y)
{
	if (tern_host_eltwise_args(be, "add", a, b, y, true))
		eltwise(be, a, b, y, EW_ADD, 0, 1);
}

static void cpu_scale(struct tern_backend *be, const struct tern_buf *x, struct tern_buf *y, float s)
{
	if (tern_host_eltwise_args(be, "scale", x, NULL, y, false))
		eltwise(be, x, NULL, y, EW_SCALE, s, 1);
}

/* one pass over the row: a greedy step's one row, on the calling thread */
static void cpu_argmax(struct tern_backend *be, const struct tern_buf *x, struct tern_buf *ids)
{
	if (tern_host_argmax_args(be, x, ids))
		tern_host_argmax_rows(tern_buf_host(x), x->ne[0], tern_host_nrows(x), tern_buf_host(ids));
}

static void cpu_softmax(struct tern_backend *be, const struct tern_buf *x, struct tern_buf *y)
{
	if (tern_host_eltwise_args(be, "softmax", x, NULL, y, false))
		eltwise(be, x, NULL, y, EW_SOFTMAX, 0, 2);
}

/* output rows t0..t1: for each, the k source rows it reads are gathered
 * channel by channel (the destination is written in order) */
static void im2col_rows(void *arg, int64_t t0, int64_t t1)
{
	struct ops_args *o = arg;
	const struct tern_conv *p = o->p;
	const float *xd = tern_buf_host(o->a);
	float *yd = tern_buf_host(o->y);
	int64_t n_ch = o->a->ne[0], len = o->a->ne[1];
	for (int64_t t = t0; t < t1; t++) {
		float *row = yd + t * n_ch * p->k;
		for (int j = 0; j < p->k; j++) {
			int64_t s = t * p->stride + j - p->pad;
			const float *src = s >= 0 && s < len ? xd + s * n_ch : NULL;
			for (int64_t c = 0; c < n_ch; c++)
				row[c * p->k + j] = src ? src[c] : 0.0f;
		}
	}
}

static void cpu_im2col(struct tern_backend *be, const struct tern_buf *x, struct tern_buf *y, const struct tern_conv *p)
{
	if (!tern_host_im2col_args(be, x, y, p))
		return;
	struct ops_args o = {.be = be, .a = x, .y = y, .p = p};
	par_rows(be, im2col_rows, &o, y->ne[1], y->ne[1] * y->ne[0]);
}

/* row r of b (r over every dimension above ne[0]), through its strides:
 * either side of a copy may be a column window (tern_buf_cols) */
static const uint8_t *row_n(const struct tern_buf *b, int64_t r)
{
	int64_t i1 = r % b->ne[1], i2 = r / b->ne[1] % b->ne[2], i3 = r / (b->ne[1] * b->ne[2]);
	return (const uint8_t *)tern_buf_host(b) + (size_t)i1 * b->nb[1] + (size_t)i2 * b->nb[2] +
	       (size_t)i3 * b->nb[3];
}

static bool packed(const struct tern_buf *b)
{
	size_t row = quant_row_size(b->type, (uint64_t)b->ne[0], NULL);
	return b->nb[1] == row && b->nb[2] == row * (size_t)b->ne[1] && b->nb[3] == b->nb[2] * (size_t)b->ne[2];
}

static void copy_rows(void *arg, int64_t r0, int64_t r1)
{
	struct ops_args *o = arg;
	const struct tern_buf *src = o->a;
	struct tern_buf *dst = o->y;
	size_t bytes = quant_row_size(src->type, (uint64_t)src->ne[0], NULL);
	if (src->type == dst->type && packed(src) && packed(dst)) {
		memcpy((uint8_t *)tern_buf_host(dst) + (size_t)r0 * bytes,
		       (const uint8_t *)tern_buf_host(src) + (size_t)r0 * bytes, (size_t)(r1 - r0) * bytes);
		return;
	}
	const struct cpu_ops *k = cpu_ops();
	for (int64_t r = r0; r < r1; r++) {
		const uint8_t *s = row_n(src, r);
		uint8_t *d = (uint8_t *)row_n(dst, r);
		if (src->type == dst->type)
			memcpy(d, s, bytes);
		else if (src->type == QT_F32)
			k->encode_row(dst->type, (const float *)(const void *)s, d, src->ne[0]);
		else
			k->decode_row(src->type, s, (float *)(void *)d, src->ne[0]);
	}
}

static void cpu_copy(struct tern_backend *be, const struct tern_buf *src, struct tern_buf *dst)
{
	if (!tern_host_copy_args(be, src, dst))
		return;
	struct ops_args o = {.be = be, .a = src, .y = dst};
	par_rows(be, copy_rows, &o, tern_host_nrows(src), tern_host_nrows(src) * src->ne[0] * 2);
}

static void cpu_buf_free(struct tern_backend *be, struct tern_buf *b)
{
	(void)be;
	if (b->prep)
		release_experts(b->prep, b->ne[2]);
	tern_host_buf_release(b);
}

static void cpu_free(struct tern_backend *be)
{
	struct cpu *c = be->impl;
	tp_free(c->pool);
	free(c->scratch);
	free(c->attn_ws);
	free(c->attn_part);
	free(c);
}

int cpu_backend_new(struct tern_backend **out, const struct cpu_backend_opts *opts, tern_err *err)
{
	*out = NULL;
	struct cpu_backend_opts o = opts ? *opts : (struct cpu_backend_opts){.n_threads = 1, .max_tokens = 1};
	if (o.max_tokens < 1 || o.max_tokens > CPU_MM_MAX_TOKENS)
		return tern_errf(err, TERN_EINVAL, "cpu: batch bound %lld out of range 1..%d", (long long)o.max_tokens,
				 CPU_MM_MAX_TOKENS);
	if (o.repack < CPU_MM_REPACK_NONE || o.repack > CPU_MM_REPACK_ALL)
		return tern_errf(err, TERN_EINVAL, "cpu: unknown repack mode %d", (int)o.repack);
	struct cpu *c = calloc(1, sizeof *c);
	if (!c)
		return tern_errf(err, TERN_ENOMEM, "cpu: out of memory");
	int rc = tp_new(&c->pool, o.n_threads, err);
	if (rc) {
		free(c);
		return rc;
	}
	c->attn_ws = aligned_alloc(64, sizeof(float) * CPU_ATTN_WS_FLOATS * (size_t)o.n_threads);
	c->attn_part = aligned_alloc(64, sizeof(float) * ATTN_PART_FLOATS);
	if (!c->attn_ws || !c->attn_part) {
		free(c->attn_ws);
		free(c->attn_part);
		tp_free(c->pool);
		free(c);
		return tern_errf(err, TERN_ENOMEM, "cpu: out of memory for the attention's workspace");
	}
	c->repack = o.repack;
	c->keep_layout = o.keep_layout;
	tern_host_table(&c->be, "cpu", TERN_BACKEND_GGML_NUMERICS, o.max_tokens, c);
	c->be.free = cpu_free;
	c->be.buf_free = cpu_buf_free;
	c->be.mat_prepare = cpu_mat_prepare;
	c->be.product = cpu_product;
	c->be.mat_mul_ggml = cpu_mat_mul_ggml;
	c->be.mat_mul_heads = cpu_mat_mul_heads;
	c->be.mat_mul_id = cpu_mat_mul_id;
	c->be.moe_route = cpu_moe_route;
	c->be.moe_combine = cpu_moe_combine;
	c->be.get_rows = cpu_get_rows;
	c->be.norm = cpu_norm;
	c->be.rope = cpu_rope;
	c->be.norm_rope = cpu_norm_rope;
	c->be.kv_store = cpu_kv_store;
	c->be.attention = cpu_attention;
	c->be.glu = cpu_glu;
	c->be.unary = cpu_unary;
	c->be.add = cpu_add;
	c->be.scale = cpu_scale;
	c->be.im2col = cpu_im2col;
	c->be.softmax = cpu_softmax;
	c->be.argmax = cpu_argmax;
	c->be.copy = cpu_copy;
	*out = &c->be;
	return 0;
}
