/* ref_backend.c - the reference CPU backend: the oracle every other
 * backend is compared with (tests/test_backend_ops.c). One thread and
 * plain loops over quant/'s scalar reference code: activations are
 * quantized with the reference quantizer to the type the weights pair with,
 * each output is quant_dot_ref() of a weight row with that. Nothing here is
 * fast, and nothing should be: it is written to be read and trusted. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lib/cpu/backend.h"
#include "lib/cpu/host.h"
#include "lib/cpu/ops.h" /* struct cpu_attn_args: the f16 attention's operand check */
#include "quant/quant.h"

struct ref {
	struct tern_host host; /* first: the shared host state */
	struct tern_backend be;
	uint8_t *act;         /* one quantized activation row, act_size bytes */
	size_t act_size;
};

static const char ref_prepared;

/* the prepared form: nothing to convert, the check is what matters */
static int ref_mat_prepare(struct tern_backend *be, struct tern_buf *w, tern_err *err)
{
	struct ref *r = be->impl;
	int rc = tern_host_weight_shape(be, w, err);
	if (rc)
		return rc;
	/* the same rule as the optimized backend: every type quant/ can dot */
	if (!quant_is_weight_type(w->type))
		return tern_errf(err, TERN_EUNSUPPORTED, "%s: no product for weights of type %s", be->name,
				 quant_type_name(w->type));
	uint32_t at = quant_vec_dot_type(w->type);
	bool ok = true;
	size_t need = quant_row_size(at, (uint64_t)w->ne[0], &ok);
	if (!ok)
		return tern_errf(err, TERN_EINVAL, "%s: rows of %lld do not fit blocks of %s", be->name,
				 (long long)w->ne[0], quant_type_name(at));
	if (need > r->act_size) {
		uint8_t *a = realloc(r->act, need);
		if (!a)
			return tern_errf(err, TERN_ENOMEM, "%s: out of memory", be->name);
		r->act = a;
		r->act_size = need;
	}
	w->prep = (void *)&ref_prepared; /* nothing to own: a mark */
	return 0;
}

static void ref_products(struct tern_backend *be, const struct tern_buf *w, const struct tern_buf *x,
			 struct tern_buf *y)
{
	struct ref *r = be->impl;
	const uint8_t *wd = tern_buf_host(w);
	const float *xd = tern_buf_host(x);
	float *yd = tern_buf_host(y);
	int64_t rows = w->ne[1], cols = w->ne[0];
	uint32_t at = quant_vec_dot_type(w->type);
	for (int64_t t = 0; t < x->ne[1]; t++) {
		const float *xt = xd + t * cols;
		const void *a = xt;
		if (at != QT_F32) {
			quant_quantize_row(at, xt, r->act, (uint64_t)cols);
			a = r->act;
		}
		for (int64_t i = 0; i < rows; i++)
			yd[t * rows + i] = quant_dot_ref(w->type, cols, wd + (size_t)i * w->nb[1], a);
	}
}

/* every weight, every token alike: the oracle has no step to save */
static void ref_product(struct tern_backend *be, int n_w, const struct tern_buf *const *w, const struct tern_buf *x,
			struct tern_buf *const *y)
{
	if (!tern_host_product_args(be, n_w, w, x, y))
		return;
	for (int i = 0; i < n_w; i++)
		ref_products(be, w[i], x, y[i]);
}

/* ggml's order is a rounding of the same sums: the reference's own */
static void ref_mat_mul_ggml(struct tern_backend *be, const struct tern_buf *w, const struct tern_buf *x,
			     struct tern_buf *y)
{
	if (tern_host_ggml_ok(be, "mat_mul_ggml"))
		ref_product(be, 1, &w, x, &y);
}

/* one matrix per head: the activations quantized with the reference
 * quantizer, each output a reference dot, as ref_products */
static void ref_mat_mul_heads(struct tern_backend *be, const struct tern_buf *w, const struct tern_buf *x,
			      struct tern_buf *y)
{
	if (!tern_host_heads_args(be, w, x, y))
		return;
	const uint8_t *wd = tern_buf_host(w);
	const float *xd = tern_buf_host(x);
	float *yd = tern_buf_host(y);
	int64_t cols = w->ne[0], rows = w->ne[1], nh = w->ne[2];
	uint32_t at = quant_vec_dot_type(w->type);
	/* a row of up to 1024 columns quantizes into the stack (a Q8 row takes
	 * at most 1.25 bytes per element: no allocation while decoding), a
	 * longer one into the heap */
	_Alignas(64) uint8_t stack_act[2 * 1024];
	size_t arow = at != QT_F32 ? quant_row_size(at, (uint64_t)cols, NULL) : 0;
	uint8_t *act = stack_act, *heap = NULL;
	if (arow > sizeof stack_act && !(act = heap = malloc(arow))) {
		tern_host_fail(be, "mat_mul_heads: out of memory for a row of %lld columns", (long long)cols);
		return;
	}
	for (int64_t t = 0; t < x->ne[2]; t++)
		for (int64_t h = 0; h < nh; h++) {
			const float *xr = xd + (t * nh + h) * cols;
			const void *a = xr;
			if (at != QT_F32) {
				quant_quantize_row(at, xr, act, (uint64_t)cols);
				a = act;
			}
			for (int64_t r = 0; r < rows; r++)
				yd[(t * nh + h) * rows + r] =
					quant_dot_ref(w->type, cols, wd + (size_t)h * w->nb[2] + (size_t)r * w->nb[1], a);
		}
	if (heap) /* free(NULL) too is an allocator call (test_llm_alloc counts them) */
		free(heap);
}

/* the experts' products: each slot as a one-token product, the weights
 * of its expert and no other read */
static void ref_mat_mul_id(struct tern_backend *be, const struct tern_buf *w, const struct tern_buf *x,
			   const struct tern_buf *ids, const struct tern_buf *b, struct tern_buf *y)
{
	if (!tern_host_mat_mul_id_args(be, w, x, ids, b, y))
		return;
	struct ref *r = be->impl;
	const int32_t *id = tern_buf_host(ids);
	const float *xd = tern_buf_host(x), *bd = b ? tern_buf_host(b) : NULL;
	float *yd = tern_buf_host(y);
	int64_t rows = w->ne[1], cols = w->ne[0], k = ids->ne[0], nx = x->ne[1];
	uint32_t at = quant_vec_dot_type(w->type);
	for (int64_t t = 0; t < ids->ne[1]; t++) {
		for (int64_t i = 0; i < k; i++) {
			int32_t e = id[t * k + i];
			if (!tern_host_pos_ok(be, "mat_mul_id", e, w->ne[2]))
				continue;
			const float *xt = xd + (t * nx + (nx == 1 ? 0 : i)) * cols;
			const void *a = xt;
			if (at != QT_F32) {
				quant_quantize_row(at, xt, r->act, (uint64_t)cols);
				a = r->act;
			}
			const uint8_t *we = (const uint8_t *)tern_buf_host(w) + (size_t)e * w->nb[2];
			float *yt = yd + (t * k + i) * rows;
			for (int64_t j = 0; j < rows; j++)
				yt[j] = quant_dot_ref(w->type, cols, we + (size_t)j * w->nb[1], a) +
					(bd ? bd[e * rows + j] : 0.0f);
		}
	}
}

/* ---- the other ops: plain loops, sums and softmax state in double ---- */

static const uint8_t *row_at(const struct tern_buf *b, int64_t i1, int64_t i2)
{
	return (const uint8_t *)tern_buf_host(b) + (size_t)i1 * b->nb[1] + (size_t)i2 * b->nb[2];
}

/* row r of b (r over every dimension above ne[0]), through its strides */
static const uint8_t *row_n(const struct tern_buf *b, int64_t r)
{
	int64_t i1 = r % b->ne[1], i2 = r / b->ne[1] % b->ne[2], i3 = r / (b->ne[1] * b->ne[2]);
	return (const uint8_t *)tern_buf_host(b) + (size_t)i1 * b->nb[1] + (size_t)i2 * b->nb[2] +
	       (size_t)i3 * b->nb[3];
}

static void ref_get_rows(struct tern_backend *be, const struct tern_buf *w, const struct tern_buf *ids,
			 struct tern_buf *y)
{
	if (!tern_host_get_rows_args(be, w, ids, y))
		return;
	const int32_t *id = tern_buf_host(ids);
	float *yd = tern_buf_host(y);
	for (int64_t t = 0; t < ids->ne[0]; t++)
		if (tern_host_pos_ok(be, "get_rows", id[t], w->ne[1]))
			quant_dequantize_row(w->type, row_at(w, id[t], 0), yd + t * y->ne[0], (uint64_t)w->ne[0]);
}

static void ref_norm(struct tern_backend *be, struct tern_buf *x, const struct tern_buf *r, const struct tern_buf *w,
		     const struct tern_buf *b, struct tern_buf *y, const struct tern_norm *p)
{
	if (!tern_host_norm_args(be, x, r, w, b, y, p))
		return;
	int64_t n = x->ne[0];
	float *xd = tern_buf_host(x), *yd = tern_buf_host(y);
	const float *rd = r ? tern_buf_host(r) : NULL, *wd = w ? tern_buf_host(w) : NULL;
	const float *bd = b ? tern_buf_host(b) : NULL;
	for (int64_t row = 0; row < tern_host_nrows(x); row++) {
		float *xr = xd + row * n, *yr = yd + row * n;
		if (rd)
			for (int64_t i = 0; i < n; i++)
				xr[i] += rd[row * n + i];
		double mean = 0, sq = 0;
		if (p->kind == TERN_NORM_LAYER) {
			for (int64_t i = 0; i < n; i++)
				mean += xr[i];
			mean /= (double)n;
		}
		for (int64_t i = 0; i < n; i++)
			sq += (xr[i] - mean) * (xr[i] - mean);
		double inv = 1.0 / sqrt(sq / (double)n + p->eps);
		for (int64_t i = 0; i < n; i++) {
			double v = (xr[i] - mean) * inv;
			if (wd)
				v *= wd[i];
			if (bd)
				v += bd[i];
			yr[i] = (float)v;
		}
	}
}

static void ref_rope(struct tern_backend *be, struct tern_buf *x, const struct tern_buf *pos, const struct tern_buf *freq,
		     const struct tern_rope *p)
{
	if (!tern_host_rope_args(be, x, pos, freq, p))
		return;
	const int32_t *pd = tern_buf_host(pos);
	const float *ff = freq ? tern_buf_host(freq) : NULL;
	float *xd = tern_buf_host(x);
	int64_t hd = x->ne[0], nh = x->ne[1], half = p->n_rot / 2;
	/* YaRN's mscale and the attention factor both scale the turned pair */
	double mag = (p->mscale > 0 ? p->mscale : 1.0) * (p->attn_factor > 0 ? p->attn_factor : 1.0);
	for (int64_t t = 0; t < pos->ne[0]; t++) {
		for (int64_t h = 0; h < nh; h++) {
			float *xh = xd + (t * nh + h) * hd;
			for (int64_t j = 0; j < half; j++) {
				double e = (double)pd[t] / (pow(p->freq_base, 2.0 * (double)j / p->n_rot) * (ff ? ff[j] : 1.0));
				double theta = p->freq_scale * e;
				if (p->ext_factor > 0) { /* YaRN: the ramp between the corrected pairs */
					double y = ((double)j - p->corr_low) / fmax(0.001, (double)p->corr_high - p->corr_low);
					double r = p->ext_factor * (1.0 - fmin(1.0, fmax(0.0, y)));
					theta = theta * (1.0 - r) + e * r;
				}
				int64_t i0 = p->mode == TERN_ROPE_NEOX ? j : 2 * j;
				int64_t i1 = p->mode == TERN_ROPE_NEOX ? j + half : 2 * j + 1;
				double a = xh[i0], b = xh[i1];
				xh[i0] = (float)(mag * (a * cos(theta) - b * sin(theta)));
				xh[i1] = (float)(mag * (a * sin(theta) + b * cos(theta)));
			}
		}
	}
}

/* the rule itself: norm then rope, q then k, through the two ops above */
static void ref_norm_rope(struct tern_backend *be, struct tern_buf *q, struct tern_buf *k, const struct tern_buf *qw,
			  const struct tern_buf *kw, const struct tern_buf *pos, const struct tern_buf *freq,
			  const struct tern_norm *n, const struct tern_rope *p)
{
	if (!tern_host_norm_rope_args(be, q, k, qw, kw, pos, freq, n, p))
		return;
	struct tern_buf *x[2] = {q, k};
	const struct tern_buf *w[2] = {qw, kw};
	for (int i = 0; i < 2 && x[i]; i++) {
		if (w[i])
			ref_norm(be, x[i], NULL, w[i], NULL, x[i], n);
		ref_rope(be, x[i], pos, freq, p);
	}
}

/* token t's sequence (seq NULL: 0), checked against the caches' n_seq;
 * -1 when out of range (recorded) */
static int64_t seq_of(struct tern_backend *be, const char *op, const struct tern_buf *seq, int64_t t, int64_t n_seq)
{
	if (!seq)
		return 0;
	int32_t s = ((const int32_t *)tern_buf_host(seq))[t];
	return tern_host_pos_ok(be, op, s, n_seq) ? s : -1;
}

/* row (i1, i2) of sequence s of a cache */
static const uint8_t *cache_row(const struct tern_buf *b, int64_t i1, int64_t i2, int64_t s)
{
	return row_at(b, i1, i2) + (size_t)s * b->nb[3];
}

static void ref_kv_store(struct tern_backend *be, struct tern_buf *cache, const struct tern_buf *x,
			 const struct tern_buf *pos, const struct tern_buf *seq)
{
	if (!tern_host_kv_store_args(be, cache, x, pos, seq))
		return;
	const int32_t *pd = tern_buf_host(pos);
	const float *xd = tern_buf_host(x);
	int64_t hd = x->ne[0], nkv = x->ne[1];
	for (int64_t t = 0; t < pos->ne[0]; t++) {
		int64_t s = seq_of(be, "kv_store: sequence", seq, t, cache->ne[3]);
		if (!tern_host_pos_ok(be, "kv_store", pd[t], cache->ne[2]) || s < 0)
			continue;
		for (int64_t h = 0; h < nkv; h++) {
			uint8_t *dst = (uint8_t *)cache_row(cache, h, pd[t], s);
			const float *src = xd + (t * nkv + h) * hd;
			if (cache->type == QT_F32)
				memcpy(dst, src, sizeof(float) * (size_t)hd);
			else
				quant_quantize_row(cache->type, src, dst, (uint64_t)hd);
		}
	}
}

/* f16 for x, back as f32 */
static float f16(float x) { return quant_fp16_to_f32(quant_f32_to_fp16(x)); }

/* ggml's f16 flash attention (struct tern_attn's f16_split), the rule
 * itself in plain loops: the query rounded to f16, a score per key (its
 * dot in double), the online softmax's running sum of V rows rounded to
 * f16 after each rescale and each added row, the keys in f16_split chunks
 * combined in f32 in order. tern_attn.ggml moves only the order of sums
 * and which multiply-adds are fused: not restated. */
static void attention_f16(struct tern_backend *be, const struct tern_buf *q, const struct tern_buf *k,
			  const struct tern_buf *v, const struct tern_buf *pos, const struct tern_buf *seq,
			  struct tern_buf *y, const struct tern_attn *p)
{
	const int32_t *pd = tern_buf_host(pos);
	const float *qd = tern_buf_host(q);
	float *yd = tern_buf_host(y);
	const int64_t hd = q->ne[0], nh = q->ne[1], group = nh / k->ne[1], n_ctx = k->ne[2];
	const int64_t cs = (n_ctx + p->f16_split - 1) / p->f16_split;
	float qh[TERN_ATTN_MAX_HEAD_DIM], kr[TERN_ATTN_MAX_HEAD_DIM], vr[TERN_ATTN_MAX_HEAD_DIM];
	float acc[TERN_ATTN_MAX_HEAD_DIM], fin[TERN_ATTN_MAX_HEAD_DIM];
	for (int64_t t = 0; t < q->ne[2]; t++) {
		int64_t sq = seq_of(be, "attention: sequence", seq, t, k->ne[3]);
		if (!tern_host_pos_ok(be, "attention", pd[t], n_ctx) || sq < 0)
			continue;
		for (int64_t h = 0; h < nh; h++) {
			for (int64_t d = 0; d < hd; d++) {
				qh[d] = f16(qd[(t * nh + h) * hd + d]);
				fin[d] = 0;
			}
			float mf = -INFINITY, sf = 0;
			for (int64_t c0 = 0; c0 < n_ctx; c0 += cs) {
				float m = -INFINITY, sum = 0;
				for (int64_t d = 0; d < hd; d++)
					acc[d] = 0;
				for (int64_t kp = c0; kp < c0 + cs && kp < n_ctx && kp <= pd[t]; kp++) {
					quant_dequantize_row(k->type, cache_row(k, h / group, kp, sq), kr, (uint64_t)hd);
					quant_dequantize_row(v->type, cache_row(v, h / group, kp, sq), vr, (uint64_t)hd);
					double dot = 0;
					for (int64_t d = 0; d < hd; d++)
						dot += (double)kr[d] * qh[d];
					float sc = (float)dot * p->scale, ms = 1, vs = 1;
					if (sc > m) {
						ms = expf(m - sc);
						m = sc;
						for (int64_t d = 0; d < hd; d++)
							acc[d] = f16(acc[d] * ms);
					} else {
						vs = expf(sc - m);
					}
					for (int64_t d = 0; d < hd; d++)
						acc[d] = f16(acc[d] + vr[d] * vs);
					sum = sum * ms + vs;
				}
				if (sum == 0)
					continue;
				float mn = fmaxf(mf, m), so = expf(mf - mn), sn = expf(m - mn);
				for (int64_t d = 0; d < hd; d++)
					fin[d] = fin[d] * so + acc[d] * sn;
				sf = sf * so + sum * sn;
				mf = mn;
			}
			for (int64_t d = 0; d < hd; d++)
				yd[(t * nh + h) * hd + d] = sf == 0 ? 0 : fin[d] / sf;
		}
	}
}

static void ref_attention(struct tern_backend *be, const struct tern_buf *q, const struct tern_buf *k,
			  const struct tern_buf *v, const struct tern_buf *pos, const struct tern_buf *seq,
			  struct tern_buf *y, const struct tern_attn *p)
{
	if (!tern_host_attention_args(be, q, k, v, pos, seq, y, p))
		return;
	if (p->f16_split > 0 || p->ggml) {
		struct cpu_attn_args a; /* only the operands' check */
		if (!cpu_host_attn_f16_args(be, q, k, v, pos, y, p, &a))
			return;
		if (p->f16_split > 0) {
			attention_f16(be, q, k, v, pos, seq, y, p);
			return;
		}
		/* ggml's tiled kernel sums in f32 as this does in double: the
		 * same attention (the caches are f16 already) */
	}
	const int32_t *pd = tern_buf_host(pos);
	const float *qd = tern_buf_host(q);
	float *yd = tern_buf_host(y);
	int64_t hd = q->ne[0], hdv = v->ne[0], nh = q->ne[1], group = nh / k->ne[1];
	float kr[TERN_ATTN_MAX_HEAD_DIM], vr[TERN_ATTN_MAX_HEAD_DIM];
	double acc[TERN_ATTN_MAX_HEAD_DIM];
	for (int64_t t = 0; t < q->ne[2]; t++) {
		int32_t qp = pd[t];
		int64_t sq = seq_of(be, "attention: sequence", seq, t, k->ne[3]);
		if (!tern_host_pos_ok(be, "attention", qp, k->ne[2]) || sq < 0)
			continue;
		int64_t lo = p->window > 0 && qp - (int64_t)p->window + 1 > 0 ? qp - (int64_t)p->window + 1 : 0;
		for (int64_t h = 0; h < nh; h++) {
			const float *qh = qd + (t * nh + h) * hd;
			double m = -INFINITY, l = 0;
			for (int64_t i = 0; i < hdv; i++)
				acc[i] = 0;
			/* the online softmax: a running maximum m, the sum l of
			 * exp(s - m) and the weighted sum of V rows, rescaled
			 * when m grows */
			for (int64_t kp = lo; kp <= qp; kp++) {
				quant_dequantize_row(k->type, cache_row(k, h / group, kp, sq), kr, (uint64_t)hd);
				quant_dequantize_row(v->type, cache_row(v, h / group, kp, sq), vr, (uint64_t)hdv);
				double s = 0;
				for (int64_t i = 0; i < hd; i++)
					s += (double)qh[i] * kr[i];
				s *= p->scale;
				if (p->softcap > 0)
					s = p->softcap * tanh(s / p->softcap);
				if (s > m) {
					double c = exp(m - s);
					l *= c;
					for (int64_t i = 0; i < hdv; i++)
						acc[i] *= c;
					m = s;
				}
				double e = exp(s - m);
				l += e;
				for (int64_t i = 0; i < hdv; i++)
					acc[i] += e * vr[i];
			}
			if (p->sinks) { /* the sink's term: in the denominator only */
				double sk = ((const float *)tern_buf_host(p->sinks))[h];
				if (sk > m) {
					double c = exp(m - sk);
					l *= c;
					for (int64_t i = 0; i < hdv; i++)
						acc[i] *= c;
					m = sk;
				}
				l += exp(sk - m);
			}
			float *yh = yd + (t * nh + h) * hdv;
			for (int64_t i = 0; i < hdv; i++)
				yh[i] = (float)(acc[i] / l);
		}
	}
}

/* A token's gate probabilities (prob) and the scores that select the
 * experts (sel: the probabilities plus the selection bias). */
static void route_scores(const float *lt, const float *bd, int64_t ne, int gating, double *prob, double *sel)
{
	double m = -INFINITY, sum = 0;
	for (int64_t e = 0; e < ne; e++)
		m = lt[e] > m ? lt[e] : m;
	for (int64_t e = 0; e < ne; e++)
		sum += exp(lt[e] - m);
	for (int64_t e = 0; e < ne; e++) {
		prob[e] = gating == TERN_MOE_SOFTMAX   ? exp(lt[e] - m) / sum
			  : gating == TERN_MOE_SIGMOID ? 1.0 / (1.0 + exp(-(double)lt[e]))
						       : lt[e];
		sel[e] = prob[e] + (bd ? bd[e] : 0.0);
	}
}

/* Grouped routing: keep the n_used groups (of ng, per experts each) whose
 * two best scores sum highest; the other groups' experts cannot be
 * selected. */
static void route_groups(double *sel, int64_t ne, int ng, int64_t per, int n_used)
{
	double gscore[1024];
	bool keep[1024] = {false};
	for (int g = 0; g < ng; g++) {
		double b1 = -INFINITY, b2 = -INFINITY;
		for (int64_t e = g * per; e < (g + 1) * per; e++) {
			if (sel[e] > b1) {
				b2 = b1;
				b1 = sel[e];
			} else if (sel[e] > b2) {
				b2 = sel[e];
			}
		}
		gscore[g] = per > 1 ? b1 + b2 : b1;
	}
	for (int u = 0; u < n_used; u++) {
		int best = -1;
		for (int g = 0; g < ng; g++)
			if (!keep[g] && (best < 0 || gscore[g] > gscore[best]))
				best = g;
		keep[best] = true;
	}
	for (int64_t e = 0; e < ne; e++)
		if (!keep[e / per])
			sel[e] = -INFINITY;
}

/* The k best scores in order, the first on ties; w: their probabilities. */
static void route_top_k(const double *sel, const double *prob, int64_t ne, int64_t k, int32_t *it, double *w)
{
	for (int64_t i = 0; i < k; i++) {
		int64_t best = -1;
		for (int64_t e = 0; e < ne; e++) {
			bool taken = false;
			for (int64_t j = 0; j < i; j++)
				taken = taken || it[j] == e;
			if (!taken && (best < 0 || sel[e] > sel[best]))
				best = e;
		}
		it[i] = (int32_t)best;
		w[i] = prob[best];
	}
}

/* The selected experts' weights: with TERN_MOE_SOFTMAX_TOPK the softmax
 * of their logits; divided by their sum (clamped below) if norm; scaled. */
static void route_weights(double *w, int64_t k, const struct tern_moe_route *p, float *wt)
{
	double wsum = 0;
	if (p->gating == TERN_MOE_SOFTMAX_TOPK) {
		double wm = -INFINITY, s = 0;
		for (int64_t i = 0; i < k; i++)
			wm = w[i] > wm ? w[i] : wm;
		for (int64_t i = 0; i < k; i++)
			s += exp(w[i] - wm);
		for (int64_t i = 0; i < k; i++)
			w[i] = exp(w[i] - wm) / s;
	}
	for (int64_t i = 0; i < k; i++)
		wsum += w[i];
	if (wsum < 6.103515625e-5)
		wsum = 6.103515625e-5;
	for (int64_t i = 0; i < k; i++)
		wt[i] = (float)((p->norm ? w[i] / wsum : w[i]) * p->scale);
}

/* the router, one token at a time, in double */
static void ref_moe_route(struct tern_backend *be, const struct tern_buf *logits, const struct tern_buf *bias,
			  struct tern_buf *ids, struct tern_buf *weights, const struct tern_moe_route *p)
{
	if (!tern_host_moe_route_args(be, logits, bias, ids, weights, p))
		return;
	int64_t ne = logits->ne[0], k = p->k;
	int ng = p->n_group > 1 ? p->n_group : 1;
	int64_t per = ne / ng;
	const float *ld = tern_buf_host(logits), *bd = bias ? tern_buf_host(bias) : NULL;
	int32_t *id = tern_buf_host(ids);
	float *wd = tern_buf_host(weights);
	double prob[1024], sel[1024]; /* experts of a token: checked below */
	if (ne > 1024) {
		tern_host_fail(be, "moe_route: %lld experts (the reference takes 1024)", (long long)ne);
		return;
	}
	for (int64_t t = 0; t < tern_host_nrows(logits); t++) {
		double w[TERN_MOE_MAX_USED];
		route_scores(ld + t * ne, bd, ne, p->gating, prob, sel);
		if (ng > 1)
			route_groups(sel, ne, ng, per, p->n_group_used);
		route_top_k(sel, prob, ne, k, id + t * k, w);
		route_weights(w, k, p, wd + t * k);
	}
}

static void ref_moe_combine(struct tern_backend *be, const struct tern_buf *x, const struct tern_buf *w,
			    struct tern_buf *y)
{
	if (!tern_host_moe_combine_args(be, x, w, y))
		return;
	const float *xd = tern_buf_host(x), *wd = tern_buf_host(w);
	float *yd = tern_buf_host(y);
	int64_t n = x->ne[0], k = x->ne[1];
	for (int64_t t = 0; t < x->ne[2]; t++)
		for (int64_t j = 0; j < n; j++) {
			double s = 0;
			for (int64_t i = 0; i < k; i++)
				s += (double)wd[t * k + i] * xd[(t * k + i) * n + j];
			yd[t * n + j] = (float)s;
		}
}

static double gelu_tanh(double x) { return 0.5 * x * (1.0 + tanh(0.7978845608028654 * (x + 0.044715 * x * x * x))); }

static double act(int kind, double x)
{
	switch (kind) {
	case TERN_UNARY_GELU:
		return gelu_tanh(x);
	case TERN_UNARY_GELU_ERF:
		return 0.5 * x * (1.0 + erf(x * 0.7071067811865476));
	case TERN_UNARY_SIGMOID:
		return 1.0 / (1.0 + exp(-x));
	default:
		return x / (1.0 + exp(-x));
	}
}

/* gpt-oss: the gate capped at 7, the up clamped to [-7, 7] and shifted by 1 */
static double swiglu_oai(double g, double u)
{
	g = g < 7.0 ? g : 7.0;
	u = u < -7.0 ? -7.0 : u > 7.0 ? 7.0 : u;
	return g / (1.0 + exp(-1.702 * g)) * (u + 1.0);
}

static void ref_glu(struct tern_backend *be, const struct tern_buf *gate, const struct tern_buf *up,
		    struct tern_buf *y, int kind)
{
	if (kind != TERN_GLU_SWIGLU && kind != TERN_GLU_GEGLU && kind != TERN_GLU_SWIGLU_OAI) {
		tern_host_fail(be, "glu: unknown kind %d", kind);
		return;
	}
	if (!tern_host_eltwise_args(be, "glu", gate, up, y, false))
		return;
	const float *g = tern_buf_host(gate), *u = tern_buf_host(up);
	float *yd = tern_buf_host(y);
	int a = kind == TERN_GLU_GEGLU ? TERN_UNARY_GELU : TERN_UNARY_SILU;
	for (int64_t i = 0; i < gate->ne[0] * tern_host_nrows(gate); i++)
		yd[i] = (float)(kind == TERN_GLU_SWIGLU_OAI ? swiglu_oai(g[i], u[i]) : act(a, g[i]) * u[i]);
}

/* ggml's GELU (TERN_UNARY_GELU_F16): the input rounded to f16, the tanh
 * GELU of that in f32, rounded to f16; the ends as its table's */
static float gelu_f16(float x)
{
	if (x <= -10.0f)
		return 0.0f;
	if (x >= 10.0f)
		return x;
	float h = f16(x);
	return f16(0.5f * h * (1.0f + tanhf(0.79788456080286535587989211986876f * h * (1.0f + 0.044715f * h * h))));
}

static void ref_unary(struct tern_backend *be, const struct tern_buf *x, struct tern_buf *y, int kind)
{
	if (!tern_host_unary_args(be, x, y, kind))
		return;
	const float *xd = tern_buf_host(x);
	float *yd = tern_buf_host(y);
	for (int64_t i = 0; i < x->ne[0] * tern_host_nrows(x); i++)
		yd[i] = kind == TERN_UNARY_GELU_F16 ? gelu_f16(xd[i]) : (float)act(kind, xd[i]);
}

static void ref_add(struct tern_backend *be, const struct tern_buf *a, const struct tern_buf *b, struct tern_buf *y)
{
	if (!tern_host_eltwise_args(be, "add", a, b, y, true))
		return;
	const float *ad = tern_buf_host(a), *bd = tern_buf_host(b);
	float *yd = tern_buf_host(y);
	int64_t n = a->ne[0], bn = tern_host_nrows(b) == 1 ? n : n * tern_host_nrows(a);
	for (int64_t i = 0; i < n * tern_host_nrows(a); i++)
		yd[i] = ad[i] + bd[i % bn];
}

static void ref_im2col(struct tern_backend *be, const struct tern_buf *x, struct tern_buf *y, const struct tern_conv *p)
{
	if (!tern_host_im2col_args(be, x, y, p))
		return;
	const float *xd = tern_buf_host(x);
	float *yd = tern_buf_host(y);
	int64_t n_ch = x->ne[0], len = x->ne[1];
	for (int64_t t = 0; t < y->ne[1]; t++)
		for (int64_t c = 0; c < n_ch; c++)
			for (int j = 0; j < p->k; j++) {
				int64_t s = t * p->stride + j - p->pad;
				yd[(t * n_ch + c) * p->k + j] = s >= 0 && s < len ? xd[s * n_ch + c] : 0.0f;
			}
}

static void ref_scale(struct tern_backend *be, const struct tern_buf *x, struct tern_buf *y, float s)
{
	if (!tern_host_eltwise_args(be, "scale", x, NULL, y, false))
		return;
	const float *xd = tern_buf_host(x);
	float *yd = tern_buf_host(y);
	for (int64_t i = 0; i < x->ne[0] * tern_host_nrows(x); i++)
		yd[i] = xd[i] * s;
}

static void ref_argmax(struct tern_backend *be, const struct tern_buf *x, struct tern_buf *ids)
{
	if (tern_host_argmax_args(be, x, ids))
		tern_host_argmax_rows(tern_buf_host(x), x->ne[0], tern_host_nrows(x), tern_buf_host(ids));
}

static void ref_softmax(struct tern_backend *be, const struct tern_buf *x, struct tern_buf *y)
{
	if (!tern_host_eltwise_args(be, "softmax", x, NULL, y, false))
		return;
	int64_t n = x->ne[0];
	const float *xd = tern_buf_host(x);
	float *yd = tern_buf_host(y);
	for (int64_t r = 0; r < tern_host_nrows(x); r++) {
		double m = -INFINITY, sum = 0;
		for (int64_t i = 0; i < n; i++)
			m = xd[r * n + i] > m ? xd[r * n + i] : m;
		for (int64_t i = 0; i < n; i++)
			sum += exp(xd[r * n + i] - m);
		for (int64_t i = 0; i < n; i++)
			yd[r * n + i] = (float)(exp(xd[r * n + i] - m) / sum);
	}
}

static void ref_copy(struct tern_backend *be, const struct tern_buf *src, struct tern_buf *dst)
{
	if (!tern_host_copy_args(be, src, dst))
		return;
	size_t bytes = quant_row_size(src->type, (uint64_t)src->ne[0], NULL);
	for (int64_t r = 0; r < tern_host_nrows(src); r++) {
		const uint8_t *s = row_n(src, r);
		uint8_t *d = (uint8_t *)row_n(dst, r);
		if (src->type == dst->type)
			memcpy(d, s, bytes);
		else if (src->type == QT_F32)
			quant_quantize_row(dst->type, (const float *)s, d, (uint64_t)src->ne[0]);
		else
			quant_dequantize_row(src->type, s, (float *)d, (uint64_t)src->ne[0]);
	}
}

static void ref_buf_free(struct tern_backend *be, struct tern_buf *b)
{
	(void)be;
	tern_host_buf_release(b);
}

static void ref_free(struct tern_backend *be)
{
	struct ref *r = be->impl;
	free(r->act);
	free(r);
}

int cpu_ref_backend_new(struct tern_backend **out, const struct cpu_backend_opts *opts, tern_err *err)
{
	*out = NULL;
	int64_t max_tokens = opts ? opts->max_tokens : 1;
	if (max_tokens < 1 || max_tokens > CPU_MM_MAX_TOKENS)
		return tern_errf(err, TERN_EINVAL, "cpu-ref: batch bound %lld out of range 1..%d", (long long)max_tokens,
				 CPU_MM_MAX_TOKENS);
	struct ref *r = calloc(1, sizeof *r);
	if (!r)
		return tern_errf(err, TERN_ENOMEM, "cpu-ref: out of memory");
	tern_host_table(&r->be, "cpu-ref", TERN_BACKEND_REFERENCE | TERN_BACKEND_GGML_NUMERICS, max_tokens, r);
	r->be.free = ref_free;
	r->be.buf_free = ref_buf_free;
	r->be.mat_prepare = ref_mat_prepare;
	r->be.product = ref_product;
	r->be.mat_mul_ggml = ref_mat_mul_ggml;
	r->be.mat_mul_heads = ref_mat_mul_heads;
	r->be.mat_mul_id = ref_mat_mul_id;
	r->be.moe_route = ref_moe_route;
	r->be.moe_combine = ref_moe_combine;
	r->be.get_rows = ref_get_rows;
	r->be.norm = ref_norm;
	r->be.rope = ref_rope;
	r->be.norm_rope = ref_norm_rope;
	r->be.kv_store = ref_kv_store;
	r->be.attention = ref_attention;
	r->be.glu = ref_glu;
	r->be.unary = ref_unary;
	r->be.add = ref_add;
	r->be.scale = ref_scale;
	r->be.im2col = ref_im2col;
	r->be.softmax = ref_softmax;
	r->be.argmax = ref_argmax;
	r->be.copy = ref_copy;
	*out = &r->be;
	return 0;
}
