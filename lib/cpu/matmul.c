/* matmul.c - the threaded quantized products (lib/cpu/matmul.h).
 *
 * Three paths, chosen per batch size at prepare time:
 *   - one token: the rows are cut into small chunks, each thread owning a
 *     contiguous range (one long stream for the prefetchers) and stealing
 *     from the others' ranges when its own is done;
 *   - small batches: tiles of rows x tokens through quant_dot_tile;
 *   - from gemm_from tokens on: the panel GEMM of quant/gemm.h, with the
 *     panels converted per call or stored at prepare time (repack).
 * A matrix copied into the interleaved layout (matmul.h, relay) takes
 * quant_mvx_tile for one token; the batch paths read 16 rows at a time
 * back into the file's layout first (relaid_rows). */
#include "lib/cpu/matmul.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "lib/core/mapfile.h"
#include "quant/gemm.h"
#include "quant/quant.h"

#define MV_RANGES 64
/* rows per chunk of one token: cpu_mm_run and cpu_mm_run_vec_n cut the
 * same way, so that they give the same bits */
#define MV_ROW_CHUNK 16

static size_t up64(size_t n) { return (n + 63) & ~(size_t)63; }

static uint8_t *align64(void *p) { return (uint8_t *)(((uintptr_t)p + 63) & ~(uintptr_t)63); }

/* rows read back from the interleaved layout at a time (the tile path's
 * row chunk for such a matrix, the GEMM's panel height) */
#define RELAY_ROWS 16
_Static_assert(QG_ROWS <= RELAY_ROWS && MV_ROW_CHUNK <= RELAY_ROWS, "relay rows");

/* Tile scratch: the quantized activation rows (none for f32 activations). */
static size_t tile_scratch(uint32_t wtype, int64_t cols, int64_t ntok)
{
	uint32_t at = quant_vec_dot_type(wtype);
	if (at == QT_F32)
		return 0;
	return quant_row_size(at, (uint64_t)cols, NULL) * (size_t)ntok;
}

/* Per-thread scratch of the batch paths of an interleaved matrix. */
static size_t relay_scratch(const struct cpu_mm *mm)
{
	return mm->relaid ? up64((size_t)RELAY_ROWS * mm->wstride) : 0;
}

/* One token's activations of an interleaved matrix: the quantized row,
 * then (64-byte aligned) the row prepared for quant_mvx_tile. */
static size_t relay_act_size(uint32_t wtype, int64_t cols)
{
	return 64 + up64(tile_scratch(wtype, cols, 1)) + up64(quant_mvx_act_size(wtype, cols));
}

/* GEMM scratch: the packed activations, then one scratch per thread. */
static size_t gemm_scratch(uint32_t wtype, int64_t cols, int64_t ntok, int nth)
{
	return 64 + up64(quant_gemm_act_size(wtype, cols, ntok)) + (size_t)nth * up64(quant_gemm_tmp_size(wtype, cols));
}

struct mm_job {
	const struct cpu_mm *mm;
	struct tp_pool *pool;
	int64_t ntok;
	const float *x;
	float *y;
	uint8_t *q;      /* [ntok][arow] quantized activations, or NULL */
	uint8_t *gact;   /* GEMM path: packed activations, or NULL */
	uint8_t *gtmp;   /* GEMM path: per-thread scratch, gtmp_size apart */
	size_t gtmp_size;
	const uint8_t *act; /* one token, interleaved matrix: quant_mvx_prep's row */
	uint8_t *rtmp;   /* batches, interleaved matrix: per-thread rows read back, rtmp_size apart */
	size_t rtmp_size;
	size_t arow;     /* bytes per activation row (quantized or f32) */
	int64_t row_chunk, tok_chunk, n_row_chunks, n_chunks;
	_Atomic int64_t next;
	int n_ranges;
	struct {
		_Atomic int64_t next;
		int64_t end;
		char pad[48];
	} range[MV_RANGES];
};

/* Rows r0..r0 + nr (nr <= RELAY_ROWS) in the file's layout: the matrix's
 * own, or read back from the interleaved copy into thread ith's scratch. */
static const uint8_t *rows_at(const struct mm_job *j, int ith, int64_t r0, int nr)
{
	const struct cpu_mm *mm = j->mm;
	const uint8_t *w = mm->w + (size_t)r0 * mm->wstride;
	if (!mm->relaid)
		return w;
	uint8_t *t = j->rtmp + (size_t)ith * j->rtmp_size;
	for (int r = 0; r < nr; r++)
		quant_mvx_unpack(mm->wtype, mm->cols, w + (size_t)r * mm->wstride, t + (size_t)r * mm->wstride);
	return t;
}

/* One token, rows r0..r0 + nr. */
static void vec_rows(const struct mm_job *j, int64_t r0, int nr, const uint8_t *a)
{
	const struct cpu_mm *mm = j->mm;
	if (mm->relaid)
		quant_mvx_tile(mm->wtype, mm->cols, mm->w + (size_t)r0 * mm->wstride, mm->wstride, nr, j->act,
			       j->y + r0);
	else
		quant_dot_tile(mm->wtype, mm->cols, mm->w + (size_t)r0 * mm->wstride, mm->wstride, nr, a, j->arow, 1,
			       j->y + r0, (size_t)mm->rows);
}

static void gemm_body(struct mm_job *j, int ith, int nth)
{
	const struct cpu_mm *mm = j->mm;
	uint8_t *tmp = j->gtmp + (size_t)ith * j->gtmp_size;
	int64_t t0 = j->ntok * ith / nth, t1 = j->ntok * (ith + 1) / nth;
	if (t1 > t0 || ith == nth - 1)
		quant_gemm_pack_act(mm->wtype, mm->cols, j->x, j->ntok, t0, t1, j->gact, tmp);
	tp_barrier(j->pool);
	for (;;) {
		int64_t c = atomic_fetch_add_explicit(&j->next, 1, memory_order_relaxed);
		if (c >= j->n_chunks)
			break;
		int64_t r0 = c * QG_ROWS;
		int nr = (int)(mm->rows - r0 < QG_ROWS ? mm->rows - r0 : QG_ROWS);
		if (mm->panels)
			quant_gemm_rows_panel(mm->wtype, mm->cols, mm->panels + (size_t)c * mm->panel_size, nr, j->gact,
					      j->ntok, j->y + r0, (size_t)mm->rows);
		else
			quant_gemm_rows(mm->wtype, mm->cols, rows_at(j, ith, r0, nr), mm->wstride, nr, j->gact, j->ntok,
					j->y + r0, (size_t)mm->rows, tmp);
	}
}

static void mm_body(void *varg, int ith, int nth)
{
	struct mm_job *j = varg;
	const struct cpu_mm *mm = j->mm;
	if (j->gact) {
		gemm_body(j, ith, nth);
		return;
	}
	const uint8_t *a = j->q ? j->q : (const uint8_t *)j->x;
	if (j->q && j->ntok > 1) {
		const struct quant_type_info *ai = quant_type_info(mm->at);
		int64_t nb = mm->cols / ai->blck;
		for (int64_t t = 0; t < j->ntok; t++) {
			int64_t b0 = nb * ith / nth, b1 = nb * (ith + 1) / nth;
			if (b1 > b0)
				quant_quantize_act(mm->at, j->x + t * mm->cols + b0 * ai->blck,
						   j->q + (size_t)t * j->arow + (size_t)b0 * ai->size,
						   (uint64_t)((b1 - b0) * ai->blck));
		}
		tp_barrier(j->pool);
	}
	if (j->n_ranges) {
		int own = ith % j->n_ranges;
		for (int k = 0; k < j->n_ranges; k++) {
			int rg = (own + k) % j->n_ranges;
			for (;;) {
				int64_t rc = atomic_fetch_add_explicit(&j->range[rg].next, 1, memory_order_relaxed);
				if (rc >= j->range[rg].end)
					break;
				int64_t r0 = rc * j->row_chunk;
				int nr = (int)(mm->rows - r0 < j->row_chunk ? mm->rows - r0 : j->row_chunk);
				vec_rows(j, r0, nr, a);
			}
		}
		return;
	}
	for (;;) {
		int64_t c = atomic_fetch_add_explicit(&j->next, 1, memory_order_relaxed);
		if (c >= j->n_chunks)
			break;
		int64_t tc = c / j->n_row_chunks, rc = c % j->n_row_chunks;
		int64_t r0 = rc * j->row_chunk, t0 = tc * j->tok_chunk;
		int nr = (int)(mm->rows - r0 < j->row_chunk ? mm->rows - r0 : j->row_chunk);
		int nc = (int)(j->ntok - t0 < j->tok_chunk ? j->ntok - t0 : j->tok_chunk);
		if (j->ntok == 1)
			vec_rows(j, r0, nr, a);
		else
			quant_dot_tile(mm->wtype, mm->cols, rows_at(j, ith, r0, nr), mm->wstride, nr,
				       a + (size_t)t0 * j->arow, j->arow, nc, j->y + t0 * mm->rows + r0, (size_t)mm->rows);
	}
}

/* ---- repack ------------------------------------------------------------------ */

struct pack_job {
	const struct cpu_mm *mm;
	uint8_t *tmp;    /* per-thread scratch, tmp_size apart */
	size_t tmp_size;
	_Atomic int64_t next;
	int64_t n;
};

static void pack_body(void *varg, int ith, int nth)
{
	(void)nth;
	struct pack_job *j = varg;
	const struct cpu_mm *mm = j->mm;
	for (;;) {
		int64_t c = atomic_fetch_add_explicit(&j->next, 1, memory_order_relaxed);
		if (c >= j->n)
			break;
		int64_t r0 = c * QG_ROWS;
		int nr = (int)(mm->rows - r0 < QG_ROWS ? mm->rows - r0 : QG_ROWS);
		quant_gemm_pack_panel(mm->wtype, mm->cols, mm->w + (size_t)r0 * mm->wstride, mm->wstride, nr,
				      mm->panels + (size_t)c * mm->panel_size, j->tmp + (size_t)ith * j->tmp_size);
	}
}

static int repack(struct cpu_mm *mm, struct tp_pool *pool, tern_err *err)
{
	int64_t n = (mm->rows + QG_ROWS - 1) / QG_ROWS;
	mm->panel_size = quant_gemm_panel_size(mm->wtype, mm->cols);
	if ((uint64_t)n > SIZE_MAX / 2 / mm->panel_size)
		return tern_errf(err, TERN_EINVAL, "matmul: %lld x %lld panels too large", (long long)mm->rows,
				 (long long)mm->cols);
	int nth = pool ? tp_threads(pool) : 1;
	struct pack_job j = {.mm = mm, .tmp_size = up64(quant_gemm_tmp_size(mm->wtype, mm->cols)), .n = n};
	mm->panels = aligned_alloc(64, (size_t)n * mm->panel_size);
	j.tmp = aligned_alloc(64, j.tmp_size * (size_t)nth);
	if (!mm->panels || !j.tmp) {
		free(j.tmp);
		return tern_errf(err, TERN_ENOMEM, "matmul: out of memory for %zu bytes of panels",
				 (size_t)n * mm->panel_size);
	}
	atomic_init(&j.next, 0);
	if (pool)
		tp_run(pool, pack_body, &j);
	else
		pack_body(&j, 0, 1);
	free(j.tmp);
	return 0;
}

/* ---- the interleaved copy ------------------------------------------------------ */

struct relay_job {
	const uint8_t *src;
	size_t src_stride;
	bool drop;
	struct cpu_mm *mm;
	_Atomic int64_t next;
};

static void relay_body(void *varg, int ith, int nth)
{
	(void)ith;
	(void)nth;
	struct relay_job *j = varg;
	struct cpu_mm *mm = j->mm;
	for (;;) {
		int64_t r0 = atomic_fetch_add_explicit(&j->next, 64, memory_order_relaxed);
		if (r0 >= mm->rows)
			break;
		int64_t r1 = mm->rows - r0 < 64 ? mm->rows : r0 + 64;
		for (int64_t r = r0; r < r1; r++)
			quant_mvx_pack(mm->wtype, mm->cols, j->src + (size_t)r * j->src_stride,
				       mm->relaid + (size_t)r * mm->wstride);
		/* the copied rows' pages: peak memory stays the matrix plus a
		 * few rows, not two matrices (pages shared with the next rows
		 * go with the caller's drop of the whole range) */
		if (j->drop)
			tern_map_drop(j->src + (size_t)r0 * j->src_stride, (size_t)(r1 - r0) * j->src_stride);
	}
}

/* Copy the rows into the interleaved layout (rows of the row size, no
 * gaps) and read the copy from then on. */
static int relay(struct cpu_mm *mm, struct tp_pool *pool, bool drop, tern_err *err)
{
	size_t rs = quant_row_size(mm->wtype, (uint64_t)mm->cols, NULL);
	if ((uint64_t)mm->rows > (SIZE_MAX / 2) / rs)
		return tern_errf(err, TERN_EINVAL, "matmul: %lld x %lld too large", (long long)mm->rows,
				 (long long)mm->cols);
	size_t bytes = up64((size_t)mm->rows * rs);
	mm->relaid = tern_alloc_large(bytes);
	if (!mm->relaid)
		return tern_errf(err, TERN_ENOMEM, "matmul: out of memory for %zu bytes of re-laid weights", bytes);
	struct relay_job j = {.src = mm->w, .src_stride = mm->wstride, .drop = drop, .mm = mm};
	mm->wstride = rs;
	atomic_init(&j.next, 0);
	if (pool)
		tp_run(pool, relay_body, &j);
	else
		relay_body(&j, 0, 1);
	mm->w = mm->relaid;
	return 0;
}

/* ---- prepare / run --------------------------------------------------------------- */

int cpu_mm_prepare(struct cpu_mm *mm, struct tp_pool *pool, uint32_t wtype, const void *w, size_t wstride,
		   int64_t rows, int64_t cols, const struct cpu_mm_opts *opts, tern_err *err)
{
	*mm = (struct cpu_mm){0};
	if (!quant_is_weight_type(wtype))
		return tern_errf(err, TERN_EUNSUPPORTED, "matmul: no product for weights of type %s",
				 quant_type_name(wtype));
	uint32_t at = quant_vec_dot_type(wtype);
	const struct quant_type_info *wi = quant_type_info(wtype), *ai = quant_type_info(at);
	int64_t max_tokens = opts ? opts->max_tokens : 1;
	if (rows <= 0 || cols <= 0 || cols % wi->blck || cols % ai->blck || rows > INT32_MAX || cols > INT32_MAX)
		return tern_errf(err, TERN_EINVAL, "matmul: bad shape %lld x %lld for type %s", (long long)rows,
				 (long long)cols, wi->name);
	if (max_tokens < 1 || max_tokens > CPU_MM_MAX_TOKENS)
		return tern_errf(err, TERN_EINVAL, "matmul: batch bound %lld out of range 1..%d", (long long)max_tokens,
				 CPU_MM_MAX_TOKENS);
	if (!w || wstride < quant_row_size(wtype, (uint64_t)cols, NULL))
		return tern_errf(err, TERN_EINVAL, "matmul: row stride %zu below the row size of %lld %s", wstride,
				 (long long)cols, wi->name);
	int nth = pool ? tp_threads(pool) : 1;
	enum cpu_mm_repack rp = opts ? opts->repack : CPU_MM_REPACK_NONE;
	bool gemm = quant_gemm_ok(wtype);
	int64_t from = gemm ? quant_gemm_min_tokens(wtype) : max_tokens + 1;
	if (gemm && rp == CPU_MM_REPACK_ALL)
		from = 1;
	struct cpu_mm m = {
		.wtype = wtype, .at = at, .w = w, .wstride = wstride, .rows = rows, .cols = cols,
		.max_tokens = max_tokens, .n_threads = nth, .gemm_from = from,
	};
	/* the largest batch of each path decides its scratch */
	size_t ts = tile_scratch(wtype, cols, from - 1 < max_tokens ? from - 1 : max_tokens);
	size_t gs = max_tokens >= from ? gemm_scratch(wtype, cols, max_tokens, nth) : 0;
	m.scratch_size = ts > gs ? ts : gs;
	int rc = 0;
	if (gemm && rp != CPU_MM_REPACK_NONE && max_tokens >= from)
		rc = repack(&m, pool, err);
	else if (opts && opts->relay && rp == CPU_MM_REPACK_NONE && quant_mvx_ok(wtype, cols))
		rc = relay(&m, pool, opts->drop_source, err);
	if (rc) {
		cpu_mm_release(&m);
		return rc;
	}
	if (m.relaid) {
		/* one token: its prepared activations; batches: the rows read
		 * back, per thread, after everything else */
		size_t one = relay_act_size(wtype, cols);
		if (one > m.scratch_size)
			m.scratch_size = one;
		m.scratch_size += 64 + (size_t)nth * relay_scratch(&m);
	}
	*mm = m;
	return 0;
}

void cpu_mm_release(struct cpu_mm *mm)
{
	free(mm->panels);
	mm->panels = NULL;
	free(mm->relaid);
	mm->relaid = NULL;
}

size_t cpu_mm_relaid_bytes(const struct cpu_mm *mm)
{
	return mm->relaid ? (size_t)mm->rows * mm->wstride : 0;
}

size_t cpu_mm_panel_bytes(const struct cpu_mm *mm)
{
	return mm->panels ? (size_t)((mm->rows + QG_ROWS - 1) / QG_ROWS) * mm->panel_size : 0;
}

void cpu_mm_run(const struct cpu_mm *mm, struct tp_pool *pool, const float *x, int64_t ntok, float *y,
		void *scratch)
{
	struct mm_job j = {.mm = mm, .pool = pool, .ntok = ntok, .x = x, .y = y};
	if (mm->relaid) {
		j.rtmp_size = relay_scratch(mm);
		j.rtmp = align64((uint8_t *)scratch + mm->scratch_size - 64 - (size_t)mm->n_threads * j.rtmp_size);
	}
	if (ntok >= mm->gemm_from) {
		j.gact = (uint8_t *)(((uintptr_t)scratch + 63) & ~(uintptr_t)63);
		j.gtmp = j.gact + up64(quant_gemm_act_size(mm->wtype, mm->cols, ntok));
		j.gtmp_size = up64(quant_gemm_tmp_size(mm->wtype, mm->cols));
		j.n_chunks = (mm->rows + QG_ROWS - 1) / QG_ROWS;
		atomic_init(&j.next, 0);
		tp_run(pool, mm_body, &j);
		return;
	}
	if (mm->at != QT_F32) {
		j.q = scratch;
		j.arow = quant_row_size(mm->at, (uint64_t)mm->cols, NULL);
	} else {
		j.arow = (size_t)mm->cols * sizeof(float);
	}
	/* Tiles: a token chunk whose activations stay in L2 while the threads
	 * sweep the rows; small row chunks for one token so that the threads
	 * balance even when one of them is descheduled. */
	j.tok_chunk = ntok < 64 ? ntok : 64;
	j.row_chunk = ntok == 1 ? MV_ROW_CHUNK : mm->relaid ? RELAY_ROWS : 64;
	j.n_row_chunks = (mm->rows + j.row_chunk - 1) / j.row_chunk;
	j.n_chunks = j.n_row_chunks * ((ntok + j.tok_chunk - 1) / j.tok_chunk);
	atomic_init(&j.next, 0);
	int nth = tp_threads(pool);
	if (ntok == 1 && nth > 1) {
		j.n_ranges = nth < MV_RANGES ? nth : MV_RANGES;
		for (int k = 0; k < j.n_ranges; k++) {
			atomic_init(&j.range[k].next, j.n_row_chunks * k / j.n_ranges);
			j.range[k].end = j.n_row_chunks * (k + 1) / j.n_ranges;
		}
	}
	/* One token: quantizing a row takes microseconds, less than waking
	 * the workers for a barrier would; the caller does it alone. */
	if (j.q && ntok == 1)
		quant_quantize_act(mm->at, x, j.q, (uint64_t)mm->cols);
	if (mm->relaid && ntok == 1) {
		uint8_t *act = align64(j.q + up64(j.arow));
		quant_mvx_prep(mm->wtype, mm->cols, j.q, act);
		j.act = act;
	}
	/* without the barrier of the shared quantization every row chunk is
	 * taken from a counter: a late worker is not waited for */
	if (j.q && ntok > 1)
		tp_run(pool, mm_body, &j);
	else
		tp_run_any(pool, mm_body, &j);
}

/* ---- several weights, one token ------------------------------------------------ */

/* One item of the several-weight products: its quantized input, or its
 * prepared one. */
static size_t vec_item_scratch(const struct cpu_mm *mm)
{
	return mm->relaid ? relay_act_size(mm->wtype, mm->cols) : up64(tile_scratch(mm->wtype, mm->cols, 1));
}

size_t cpu_mm_vec_n_scratch(const struct cpu_mm *mm)
{
	return CPU_MM_VEC_N * vec_item_scratch(mm);
}

void cpu_mm_run_vec_n(const struct cpu_mm *const *mm, int n, struct tp_pool *pool, const float *x,
		      float *const *y, void *scratch)
{
	/* the multi-input case with one input: it quantizes x once per
	 * activation type (Q, K and V usually share it), which the scratch of
	 * cpu_mm_vec_n_scratch holds */
	const float *xs[CPU_MM_VEC_N];
	for (int i = 0; i < n; i++)
		xs[i] = x;
	cpu_mm_run_vec_multi(mm, n, pool, xs, y, scratch);
}

/* ---- several weights, one token, each its own input --------------------------- */

struct mv_multi_job {
	const struct cpu_mm *const *mm;
	const uint8_t *a[CPU_MM_MULTI_MAX]; /* the input of item i as its weight pairs with it */
	size_t arow[CPU_MM_MULTI_MAX];
	float *const *y;
	int64_t first[CPU_MM_MULTI_MAX + 1]; /* chunk index where item i starts */
	int n_ranges;
	struct {
		_Atomic int64_t next;
		int64_t end;
		char pad[48];
	} range[MV_RANGES];
};

static void mv_multi_body(void *varg, int ith, int nth)
{
	(void)nth;
	struct mv_multi_job *j = varg;
	int own = ith % j->n_ranges;
	for (int k = 0; k < j->n_ranges; k++) {
		int rg = (own + k) % j->n_ranges;
		int i = 0;
		for (;;) {
			int64_t c = atomic_fetch_add_explicit(&j->range[rg].next, 1, memory_order_relaxed);
			if (c >= j->range[rg].end)
				break;
			while (c >= j->first[i + 1])
				i++;
			const struct cpu_mm *mm = j->mm[i];
			int64_t r0 = (c - j->first[i]) * MV_ROW_CHUNK;
			int nr = (int)(mm->rows - r0 < MV_ROW_CHUNK ? mm->rows - r0 : MV_ROW_CHUNK);
			if (mm->relaid)
				quant_mvx_tile(mm->wtype, mm->cols, mm->w + (size_t)r0 * mm->wstride, mm->wstride, nr,
					       j->a[i], j->y[i] + r0);
			else
				quant_dot_tile(mm->wtype, mm->cols, mm->w + (size_t)r0 * mm->wstride, mm->wstride, nr,
					       j->a[i], j->arow[i], 1, j->y[i] + r0, (size_t)mm->rows);
		}
	}
}

size_t cpu_mm_vec_multi_scratch(const struct cpu_mm *mm)
{
	return CPU_MM_MULTI_MAX * vec_item_scratch(mm);
}

void cpu_mm_run_vec_multi(const struct cpu_mm *const *mm, int n, struct tp_pool *pool, const float *const *x,
			  float *const *y, void *scratch)
{
	for (int i = 0; i < n; i++)
		if (mm[i]->gemm_from <= 1) { /* repacked for decode: cpu_mm_run's own bits */
			for (int k = 0; k < n; k++)
				cpu_mm_run(mm[k], pool, x[k], 1, y[k], scratch);
			return;
		}
	struct mv_multi_job j = {.mm = mm, .y = y};
	uint8_t *q = scratch;
	int64_t chunks = 0;
	for (int i = 0; i < n; i++) {
		j.first[i] = chunks;
		chunks += (mm[i]->rows + MV_ROW_CHUNK - 1) / MV_ROW_CHUNK;
		uint32_t at = mm[i]->at;
		if (at == QT_F32) {
			j.a[i] = (const uint8_t *)x[i];
			j.arow[i] = (size_t)mm[i]->cols * sizeof(float);
			continue;
		}
		j.arow[i] = quant_row_size(at, (uint64_t)mm[i]->cols, NULL);
		/* an input shared by several items (the gate and up products of
		 * the selected experts) is quantized once */
		int same = -1;
		for (int k = 0; k < i && same < 0; k++)
			if (x[k] == x[i] && mm[k]->at == at && mm[k]->cols == mm[i]->cols &&
			    !mm[k]->relaid == !mm[i]->relaid)
				same = k;
		if (same >= 0) {
			j.a[i] = j.a[same];
		} else if (mm[i]->relaid) {
			quant_quantize_act(at, x[i], q, (uint64_t)mm[i]->cols);
			uint8_t *act = align64(q + up64(j.arow[i]));
			quant_mvx_prep(mm[i]->wtype, mm[i]->cols, q, act);
			j.a[i] = act;
			q += relay_act_size(mm[i]->wtype, mm[i]->cols);
		} else {
			quant_quantize_act(at, x[i], q, (uint64_t)mm[i]->cols);
			j.a[i] = q;
			q += up64(j.arow[i]);
		}
	}
	j.first[n] = chunks;
	int nth = tp_threads(pool);
	j.n_ranges = nth < MV_RANGES ? nth : MV_RANGES;
	for (int k = 0; k < j.n_ranges; k++) {
		atomic_init(&j.range[k].next, chunks * k / j.n_ranges);
		j.range[k].end = chunks * (k + 1) / j.n_ranges;
	}
	tp_run_any(pool, mv_multi_body, &j);
}
