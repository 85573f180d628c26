/* cpu_backend.c - the optimized CPU backend: the operation table over the
 * thread pool and the threaded products of lib/cpu/matmul.h. A weight's
 * prepared form is its struct cpu_mm; one scratch, grown by mat_prepare to
 * the largest any weight needs at max_tokens, serves every product, so
 * that a step allocates nothing. Ops run before they return.
 *
 * The other ops split their rows (tokens, or token x head for RoPE and
 * attention) over the pool when there is enough work to pay for waking it,
 * and sum in f32; decode's attention is split over heads. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lib/cpu/backend.h"
#include "lib/cpu/host.h"
#include "lib/cpu/threadpool.h"
#include "quant/quant.h"

struct cpu {
	struct cpu_host host; /* first: the shared host state */
	struct tern_backend be;
	struct tp_pool *pool;
	enum cpu_mm_repack repack;
	void *scratch;        /* scratch_size bytes, 64-byte aligned */
	size_t scratch_size;
};

static int cpu_mat_prepare(struct tern_backend *be, struct tern_buf *w, tern_err *err)
{
	struct cpu *c = be->impl;
	int rc = cpu_host_weight_shape(be, w, err);
	if (rc)
		return rc;
	struct cpu_mm *mm = calloc(1, sizeof *mm);
	if (!mm)
		return tern_errf(err, TERN_ENOMEM, "%s: out of memory", be->name);
	struct cpu_mm_opts o = {.max_tokens = be->max_tokens, .repack = c->repack};
	rc = cpu_mm_prepare(mm, c->pool, w->type, tern_buf_host(w), w->nb[1], w->ne[1], w->ne[0], &o, err);
	if (!rc && mm->scratch_size > c->scratch_size) {
		void *s = aligned_alloc(64, (mm->scratch_size + 63) & ~(size_t)63);
		if (s) {
			free(c->scratch);
			c->scratch = s;
			c->scratch_size = mm->scratch_size;
		} else {
			rc = tern_errf(err, TERN_ENOMEM, "%s: out of memory for %zu bytes of scratch", be->name,
				       mm->scratch_size);
		}
	}
	if (rc) {
		cpu_mm_release(mm);
		free(mm);
		return rc;
	}
	if (w->prep) { /* a second prepare replaces the first */
		cpu_mm_release(w->prep);
		free(w->prep);
	}
	w->prep = mm;
	return 0;
}

static void cpu_mat_vec(struct tern_backend *be, const struct tern_buf *w, const struct tern_buf *x,
			struct tern_buf *y)
{
	struct cpu *c = be->impl;
	if (cpu_host_mm_args(be, "mat_vec", w, x, y, true))
		cpu_mm_run(w->prep, c->pool, tern_buf_host(x), 1, tern_buf_host(y), c->scratch);
}

static void cpu_mat_mul(struct tern_backend *be, const struct tern_buf *w, const struct tern_buf *x,
			struct tern_buf *y)
{
	struct cpu *c = be->impl;
	if (cpu_host_mm_args(be, "mat_mul", w, x, y, false))
		cpu_mm_run(w->prep, c->pool, tern_buf_host(x), x->ne[1], tern_buf_host(y), c->scratch);
}

/* ---- the other ops ---- */

/* A job over rows [0, n): fn(arg, r0, r1) on contiguous slices. */
typedef void (*rows_fn)(void *arg, int64_t r0, int64_t r1);

struct par {
	rows_fn fn;
	void *arg;
	int64_t n;
};

static void par_body(void *arg, int ith, int nth)
{
	struct par *p = arg;
	int64_t r0 = p->n * ith / nth, r1 = p->n * (ith + 1) / nth;
	if (r1 > r0)
		p->fn(p->arg, r0, r1);
}

/* Below this many elements of work a job runs on the caller: waking the
 * workers costs a few microseconds, as much as the work. */
#define PAR_MIN_WORK 16384

static void par_rows(struct tern_backend *be, rows_fn fn, void *arg, int64_t n, int64_t work)
{
	struct cpu *c = be->impl;
	if (work < PAR_MIN_WORK || n < 2 || tp_threads(c->pool) == 1) {
		fn(arg, 0, n);
		return;
	}
	struct par p = {fn, arg, n};
	tp_run(c->pool, par_body, &p);
}

struct ops_args {
	struct tern_backend *be;
	const struct tern_buf *a, *b, *c, *d;
	struct tern_buf *x, *y;
	const void *p;
	int kind;
	float s;
};

static const uint8_t *row_at(const struct tern_buf *b, int64_t i1, int64_t i2)
{
	return (const uint8_t *)tern_buf_host(b) + (size_t)i1 * b->nb[1] + (size_t)i2 * b->nb[2];
}

static void get_rows_rows(void *arg, int64_t r0, int64_t r1)
{
	struct ops_args *o = arg;
	const int32_t *id = tern_buf_host(o->b);
	float *yd = tern_buf_host(o->y);
	for (int64_t t = r0; t < r1; t++)
		if (cpu_host_pos_ok(o->be, "get_rows", id[t], o->a->ne[1]))
			quant_dequantize_row(o->a->type, row_at(o->a, id[t], 0), yd + t * o->y->ne[0],
					     (uint64_t)o->a->ne[0]);
}

static void cpu_get_rows(struct tern_backend *be, const struct tern_buf *w, const struct tern_buf *ids,
			 struct tern_buf *y)
{
	if (!cpu_host_get_rows_args(be, w, ids, y))
		return;
	struct ops_args o = {.be = be, .a = w, .b = ids, .y = y};
	par_rows(be, get_rows_rows, &o, ids->ne[0], ids->ne[0] * w->ne[0]);
}

static void norm_rows(void *arg, int64_t r0, int64_t r1)
{
	struct ops_args *o = arg;
	const struct tern_norm *p = o->p;
	int64_t n = o->x->ne[0];
	float *xd = tern_buf_host(o->x), *yd = tern_buf_host(o->y);
	const float *rd = o->a ? tern_buf_host(o->a) : NULL, *wd = o->b ? tern_buf_host(o->b) : NULL;
	const float *bd = o->c ? tern_buf_host(o->c) : NULL;
	for (int64_t row = r0; row < r1; row++) {
		float *xr = xd + row * n, *yr = yd + row * n;
		float sum = 0, sq = 0, mean = 0;
		if (rd)
			for (int64_t i = 0; i < n; i++)
				xr[i] += rd[row * n + i];
		if (p->kind == TERN_NORM_LAYER) {
			for (int64_t i = 0; i < n; i++)
				sum += xr[i];
			mean = sum / (float)n;
		}
		for (int64_t i = 0; i < n; i++)
			sq += (xr[i] - mean) * (xr[i] - mean);
		float inv = 1.0f / sqrtf(sq / (float)n + p->eps);
		for (int64_t i = 0; i < n; i++) {
			float v = (xr[i] - mean) * inv;
			if (wd)
				v *= wd[i];
			if (bd)
				v += bd[i];
			yr[i] = v;
		}
	}
}

static void cpu_norm(struct tern_backend *be, struct tern_buf *x, const struct tern_buf *r, const struct tern_buf *w,
		     const struct tern_buf *b, struct tern_buf *y, const struct tern_norm *p)
{
	if (!cpu_host_norm_args(be, x, r, w, b, y, p))
		return;
	struct ops_args o = {.be = be, .x = x, .a = r, .b = w, .c = b, .y = y, .p = p};
	par_rows(be, norm_rows, &o, cpu_host_nrows(x), cpu_host_nrows(x) * x->ne[0]);
}

/* rows: token x head */
static void rope_rows(void *arg, int64_t r0, int64_t r1)
{
	struct ops_args *o = arg;
	const struct tern_rope *p = o->p;
	const int32_t *pd = tern_buf_host(o->a);
	const float *ff = o->b ? tern_buf_host(o->b) : NULL;
	int64_t hd = o->x->ne[0], nh = o->x->ne[1], half = p->n_rot / 2;
	/* as llama.cpp: theta_j = pos * base^(-2j/n_rot), by repeated
	 * products in f32 */
	float theta_scale = powf(p->freq_base, -2.0f / (float)p->n_rot);
	for (int64_t r = r0; r < r1; r++) {
		float *xh = (float *)tern_buf_host(o->x) + r * hd;
		float theta = (float)pd[r / nh];
		for (int64_t j = 0; j < half; j++, theta *= theta_scale) {
			float th = p->freq_scale * (ff ? theta / ff[j] : theta);
			float cs = cosf(th), sn = sinf(th);
			int64_t i0 = p->mode == TERN_ROPE_NEOX ? j : 2 * j;
			int64_t i1 = p->mode == TERN_ROPE_NEOX ? j + half : 2 * j + 1;
			float a = xh[i0], b = xh[i1];
			xh[i0] = a * cs - b * sn;
			xh[i1] = a * sn + b * cs;
		}
	}
}

static void cpu_rope(struct tern_backend *be, struct tern_buf *x, const struct tern_buf *pos, const struct tern_buf *freq,
		     const struct tern_rope *p)
{
	if (!cpu_host_rope_args(be, x, pos, freq, p))
		return;
	struct ops_args o = {.be = be, .x = x, .a = pos, .b = freq, .p = p};
	int64_t n = pos->ne[0] * x->ne[1];
	par_rows(be, rope_rows, &o, n, n * p->n_rot * 8);
}

static void kv_store_rows(void *arg, int64_t r0, int64_t r1)
{
	struct ops_args *o = arg;
	const int32_t *pd = tern_buf_host(o->a);
	const float *xd = tern_buf_host(o->b);
	struct tern_buf *cache = o->x;
	int64_t hd = cache->ne[0], nkv = cache->ne[1];
	for (int64_t t = r0; t < r1; t++) {
		if (!cpu_host_pos_ok(o->be, "kv_store", pd[t], cache->ne[2]))
			continue;
		uint8_t *dst = (uint8_t *)row_at(cache, 0, pd[t]);
		if (cache->type == QT_F32)
			memcpy(dst, xd + t * nkv * hd, sizeof(float) * (size_t)(nkv * hd));
		else
			for (int64_t h = 0; h < nkv; h++)
				quant_quantize_row(cache->type, xd + (t * nkv + h) * hd, dst + (size_t)h * cache->nb[1],
						   (uint64_t)hd);
	}
}

static void cpu_kv_store(struct tern_backend *be, struct tern_buf *cache, const struct tern_buf *x,
			 const struct tern_buf *pos)
{
	if (!cpu_host_kv_store_args(be, cache, x, pos))
		return;
	struct ops_args o = {.be = be, .x = cache, .b = x, .a = pos};
	par_rows(be, kv_store_rows, &o, pos->ne[0], pos->ne[0] * x->ne[0] * x->ne[1] * 4);
}

/* A cache row as f32: the row itself when the cache is f32, else decoded
 * into buf. */
static const float *cache_row(const struct tern_buf *c, int64_t h, int64_t p, float *buf)
{
	const uint8_t *r = row_at(c, h, p);
	if (c->type == QT_F32)
		return (const float *)(const void *)r;
	quant_dequantize_row(c->type, r, buf, (uint64_t)c->ne[0]);
	return buf;
}

/* Dot of n floats in 8 independent sums: one chain of n dependent adds
 * is latency-bound (4 cycles each); 8 lanes let the compiler vectorize. */
static float dot8(const float *a, const float *b, int64_t n)
{
	float s[8] = {0};
	int64_t i = 0;
	for (; i + 8 <= n; i += 8)
		for (int j = 0; j < 8; j++)
			s[j] += a[i + j] * b[i + j];
	for (; i < n; i++)
		s[0] += a[i] * b[i];
	return ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]));
}

/* q . row kp of K head kh for one query head: an f16 row through quant/'s
 * f16 x f32 dot kernel (no decode), the others as f32 rows. A KV group
 * (below) decodes each row once for all its heads instead. Decode
 * attention of 4 heads of 256 over 512 f16 keys, 2 threads, best of 15,
 * A/B interleaved on a busy machine: about 1.1 ms decoding the rows, 0.65 ms
 * so; f32 rows stay with dot8 (0.23-0.26 ms, 0.30 through quant_dot). */
static float key_dot(const struct tern_buf *k, int64_t kh, int64_t kp, const float *q, float *buf)
{
	if (k->type == QT_F16)
		return quant_dot(QT_F16, k->ne[0], row_at(k, kh, kp), q);
	return dot8(q, cache_row(k, kh, kp, buf), k->ne[0]);
}

/* rows: token x head, one online softmax each */
static void attention_rows(void *arg, int64_t r0, int64_t r1)
{
	struct ops_args *o = arg;
	const struct tern_attn *p = o->p;
	const struct tern_buf *q = o->a, *k = o->b, *v = o->c;
	const int32_t *pd = tern_buf_host(o->d);
	int64_t hd = q->ne[0], nh = q->ne[1], group = nh / k->ne[1];
	float kb[TERN_ATTN_MAX_HEAD_DIM], vb[TERN_ATTN_MAX_HEAD_DIM], acc[TERN_ATTN_MAX_HEAD_DIM];
	for (int64_t r = r0; r < r1; r++) {
		int64_t t = r / nh, h = r % nh, kh = h / group;
		int32_t qp = pd[t];
		if (!cpu_host_pos_ok(o->be, "attention", qp, k->ne[2]))
			continue;
		int64_t lo = p->window > 0 && qp - (int64_t)p->window + 1 > 0 ? qp - (int64_t)p->window + 1 : 0;
		const float *qh = (const float *)tern_buf_host(q) + r * hd;
		float m = -INFINITY, l = 0;
		memset(acc, 0, sizeof(float) * (size_t)hd);
		for (int64_t kp = lo; kp <= qp; kp++) {
			float s = key_dot(k, kh, kp, qh, kb) * p->scale;
			if (p->softcap > 0)
				s = p->softcap * tanhf(s / p->softcap);
			if (s > m) {
				float c = expf(m - s);
				l *= c;
				for (int64_t i = 0; i < hd; i++)
					acc[i] *= c;
				m = s;
			}
			float e = expf(s - m);
			l += e;
			const float *vr = cache_row(v, kh, kp, vb);
			for (int64_t i = 0; i < hd; i++)
				acc[i] += e * vr[i];
		}
		float *yh = (float *)tern_buf_host(o->y) + r * hd, inv = 1.0f / l;
		for (int64_t i = 0; i < hd; i++)
			yh[i] = acc[i] * inv;
	}
}

/* The heads of a KV group at once: rows are token x KV head, and each
 * cache row is decoded once for the group's query heads (a group of 8
 * decodes 8 times less). Used when there are enough such rows to keep
 * the threads busy; decode with few KV heads takes the rows above. */
#define ATTN_MAX_GROUP 16

static void attention_group_rows(void *arg, int64_t r0, int64_t r1)
{
	struct ops_args *o = arg;
	const struct tern_attn *p = o->p;
	const struct tern_buf *q = o->a, *k = o->b, *v = o->c;
	const int32_t *pd = tern_buf_host(o->d);
	int64_t hd = q->ne[0], nh = q->ne[1], nkv = k->ne[1], group = nh / nkv;
	float kb[TERN_ATTN_MAX_HEAD_DIM], vb[TERN_ATTN_MAX_HEAD_DIM];
	float acc[ATTN_MAX_GROUP][TERN_ATTN_MAX_HEAD_DIM], m[ATTN_MAX_GROUP], l[ATTN_MAX_GROUP], e[ATTN_MAX_GROUP];
	for (int64_t r = r0; r < r1; r++) {
		int64_t t = r / nkv, kh = r % nkv;
		int32_t qp = pd[t];
		if (!cpu_host_pos_ok(o->be, "attention", qp, k->ne[2]))
			continue;
		int64_t lo = p->window > 0 && qp - (int64_t)p->window + 1 > 0 ? qp - (int64_t)p->window + 1 : 0;
		/* the group's query heads are consecutive */
		const float *qg = (const float *)tern_buf_host(q) + (t * nh + kh * group) * hd;
		for (int64_t g = 0; g < group; g++) {
			m[g] = -INFINITY;
			l[g] = 0;
			memset(acc[g], 0, sizeof(float) * (size_t)hd);
		}
		for (int64_t kp = lo; kp <= qp; kp++) {
			const float *kr = cache_row(k, kh, kp, kb);
			for (int64_t g = 0; g < group; g++) {
				const float *qh = qg + g * hd;
				float s = dot8(qh, kr, hd) * p->scale;
				if (p->softcap > 0)
					s = p->softcap * tanhf(s / p->softcap);
				if (s > m[g]) {
					float c = expf(m[g] - s);
					l[g] *= c;
					for (int64_t i = 0; i < hd; i++)
						acc[g][i] *= c;
					m[g] = s;
				}
				e[g] = expf(s - m[g]);
				l[g] += e[g];
			}
			const float *vr = cache_row(v, kh, kp, vb);
			for (int64_t g = 0; g < group; g++)
				for (int64_t i = 0; i < hd; i++)
					acc[g][i] += e[g] * vr[i];
		}
		float *yg = (float *)tern_buf_host(o->y) + (t * nh + kh * group) * hd;
		for (int64_t g = 0; g < group; g++) {
			float inv = 1.0f / l[g];
			for (int64_t i = 0; i < hd; i++)
				yg[g * hd + i] = acc[g][i] * inv;
		}
	}
}

static void cpu_attention(struct tern_backend *be, const struct tern_buf *q, const struct tern_buf *k,
			  const struct tern_buf *v, const struct tern_buf *pos, struct tern_buf *y,
			  const struct tern_attn *p)
{
	if (!cpu_host_attention_args(be, q, k, v, pos, y, p))
		return;
	struct cpu *c = be->impl;
	struct ops_args o = {.be = be, .a = q, .b = k, .c = v, .d = pos, .y = y, .p = p};
	int64_t groups = q->ne[2] * k->ne[1], group = q->ne[1] / k->ne[1];
	/* the work grows with the positions: always worth the pool */
	if (group > 1 && group <= ATTN_MAX_GROUP && groups >= tp_threads(c->pool))
		par_rows(be, attention_group_rows, &o, groups, PAR_MIN_WORK);
	else
		par_rows(be, attention_rows, &o, q->ne[2] * q->ne[1], PAR_MIN_WORK);
}

/* 0.5 x (1 + tanh(z)) written as x sigmoid(2z): the same function without
 * the cancellation of 1 + tanh(z) for negative z */
static float gelu_tanh(float x)
{
	return x / (1.0f + expf(-1.5957691216f * (x + 0.044715f * x * x * x)));
}

static float act(int kind, float x)
{
	switch (kind) {
	case TERN_UNARY_GELU:
		return gelu_tanh(x);
	case TERN_UNARY_GELU_ERF:
		return 0.5f * x * (1.0f + erff(x * 0.70710678f));
	default:
		return x / (1.0f + expf(-x));
	}
}

/* element-wise ops: rows of ne[0]; kind selects the op */
/* EW_UNARY + a TERN_UNARY_* kind: the unary ops, last */
enum { EW_GLU_SILU, EW_GLU_GELU, EW_ADD, EW_SCALE, EW_SOFTMAX, EW_UNARY };

static void eltwise_rows(void *arg, int64_t r0, int64_t r1)
{
	struct ops_args *o = arg;
	int64_t n = o->a->ne[0];
	const float *a = (const float *)tern_buf_host(o->a) + r0 * n;
	const float *b = o->b ? tern_buf_host(o->b) : NULL;
	bool brow = b && cpu_host_nrows(o->b) == 1;
	if (b && !brow)
		b += r0 * n;
	float *y = (float *)tern_buf_host(o->y) + r0 * n;
	int64_t len = (r1 - r0) * n;
	switch (o->kind) {
	case EW_GLU_SILU:
		for (int64_t i = 0; i < len; i++)
			y[i] = act(TERN_UNARY_SILU, a[i]) * b[i];
		break;
	case EW_GLU_GELU:
		for (int64_t i = 0; i < len; i++)
			y[i] = gelu_tanh(a[i]) * b[i];
		break;
	case EW_ADD:
		for (int64_t i = 0; i < len; i++)
			y[i] = a[i] + b[brow ? i % n : i];
		break;
	case EW_SCALE:
		for (int64_t i = 0; i < len; i++)
			y[i] = a[i] * o->s;
		break;
	case EW_SOFTMAX:
		for (int64_t r = 0; r < r1 - r0; r++) {
			const float *ar = a + r * n;
			float *yr = y + r * n, m = -INFINITY, sum = 0;
			for (int64_t i = 0; i < n; i++)
				m = ar[i] > m ? ar[i] : m;
			for (int64_t i = 0; i < n; i++) {
				yr[i] = expf(ar[i] - m);
				sum += yr[i];
			}
			for (int64_t i = 0; i < n; i++)
				yr[i] /= sum;
		}
		break;
	default: /* EW_UNARY + the unary kind */
		for (int64_t i = 0; i < len; i++)
			y[i] = act(o->kind - EW_UNARY, a[i]);
	}
}

static void eltwise(struct tern_backend *be, const struct tern_buf *a, const struct tern_buf *b, struct tern_buf *y,
		    int kind, float s, int cost)
{
	struct ops_args o = {.be = be, .a = a, .b = b, .y = y, .kind = kind, .s = s};
	par_rows(be, eltwise_rows, &o, cpu_host_nrows(a), cpu_host_nrows(a) * a->ne[0] * cost);
}

static void cpu_glu(struct tern_backend *be, const struct tern_buf *gate, const struct tern_buf *up,
		    struct tern_buf *y, int kind)
{
	if (kind != TERN_GLU_SWIGLU && kind != TERN_GLU_GEGLU) {
		cpu_host_fail(be, "glu: unknown kind %d", kind);
		return;
	}
	if (cpu_host_eltwise_args(be, "glu", gate, up, y, false))
		eltwise(be, gate, up, y, kind == TERN_GLU_GEGLU ? EW_GLU_GELU : EW_GLU_SILU, 0, 8);
}

static void cpu_unary(struct tern_backend *be, const struct tern_buf *x, struct tern_buf *y, int kind)
{
	if (kind < TERN_UNARY_GELU || kind > TERN_UNARY_SILU) {
		cpu_host_fail(be, "unary: unknown kind %d", kind);
		return;
	}
	if (cpu_host_eltwise_args(be, "unary", x, NULL, y, false))
		eltwise(be, x, NULL, y, EW_UNARY + kind, 0, 8);
}

static void cpu_add(struct tern_backend *be, const struct tern_buf *a, const struct tern_buf *b, struct tern_buf *y)
{
	if (cpu_host_eltwise_args(be, "add", a, b, y, true))
		eltwise(be, a, b, y, EW_ADD, 0, 1);
}

static void cpu_scale(struct tern_backend *be, const struct tern_buf *x, struct tern_buf *y, float s)
{
	if (cpu_host_eltwise_args(be, "scale", x, NULL, y, false))
		eltwise(be, x, NULL, y, EW_SCALE, s, 1);
}

static void cpu_softmax(struct tern_backend *be, const struct tern_buf *x, struct tern_buf *y)
{
	if (cpu_host_eltwise_args(be, "softmax", x, NULL, y, false))
		eltwise(be, x, NULL, y, EW_SOFTMAX, 0, 8);
}

static void copy_rows(void *arg, int64_t r0, int64_t r1)
{
	struct ops_args *o = arg;
	const struct tern_buf *src = o->a;
	struct tern_buf *dst = o->y;
	if (src->type == dst->type) {
		memcpy((uint8_t *)tern_buf_host(dst) + (size_t)r0 * dst->nb[1],
		       (const uint8_t *)tern_buf_host(src) + (size_t)r0 * src->nb[1], (size_t)(r1 - r0) * src->nb[1]);
		return;
	}
	for (int64_t r = r0; r < r1; r++) {
		const uint8_t *s = (const uint8_t *)tern_buf_host(src) + (size_t)r * src->nb[1];
		uint8_t *d = (uint8_t *)tern_buf_host(dst) + (size_t)r * dst->nb[1];
		if (src->type == QT_F32)
			quant_quantize_row(dst->type, (const float *)(const void *)s, d, (uint64_t)src->ne[0]);
		else
			quant_dequantize_row(src->type, s, (float *)(void *)d, (uint64_t)src->ne[0]);
	}
}

static void cpu_copy(struct tern_backend *be, const struct tern_buf *src, struct tern_buf *dst)
{
	if (!cpu_host_copy_args(be, src, dst))
		return;
	struct ops_args o = {.be = be, .a = src, .y = dst};
	par_rows(be, copy_rows, &o, cpu_host_nrows(src), cpu_host_nrows(src) * src->ne[0] * 2);
}

static void cpu_buf_free(struct tern_backend *be, struct tern_buf *b)
{
	(void)be;
	if (b->prep) {
		cpu_mm_release(b->prep);
		free(b->prep);
	}
	cpu_host_buf_release(b);
}

static void cpu_free(struct tern_backend *be)
{
	struct cpu *c = be->impl;
	tp_free(c->pool);
	free(c->scratch);
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
	c->repack = o.repack;
	cpu_host_table(&c->be, "cpu", 0, o.max_tokens, c);
	c->be.free = cpu_free;
	c->be.buf_free = cpu_buf_free;
	c->be.mat_prepare = cpu_mat_prepare;
	c->be.mat_vec = cpu_mat_vec;
	c->be.mat_mul = cpu_mat_mul;
	c->be.get_rows = cpu_get_rows;
	c->be.norm = cpu_norm;
	c->be.rope = cpu_rope;
	c->be.kv_store = cpu_kv_store;
	c->be.attention = cpu_attention;
	c->be.glu = cpu_glu;
	c->be.unary = cpu_unary;
	c->be.add = cpu_add;
	c->be.scale = cpu_scale;
	c->be.softmax = cpu_softmax;
	c->be.copy = cpu_copy;
	*out = &c->be;
	return 0;
}
