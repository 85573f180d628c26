/* vk_ops.c - the Vulkan backend's ops other than the products (those are in
 * vk_products.c): each checks its operands as the CPU backends do
 * (lib/cpu/host.h), binds its buffers, fills its push constants and
 * appends one or a few dispatches (gpu/vulkan/vk_impl.h). */
#include <inttypes.h>
#include <math.h>
#include <string.h>
#include <time.h>

#include "gpu/vulkan/vk_impl.h"
#include "quant/quant.h"

void vk_groups(uint64_t groups, uint32_t *gx, uint32_t *gy)
{
	if (!groups)
		groups = 1;
	*gx = groups < 32768 ? (uint32_t)groups : 32768;
	*gy = (uint32_t)((groups + *gx - 1) / *gx);
}

void vk_grid(uint64_t n, uint32_t wg, uint32_t *gx, uint32_t *gy) { vk_groups((n + wg - 1) / wg, gx, gy); }

/* ---- element-wise ---- */

enum {
	EW_ADD,
	EW_SCALE,
	EW_SWIGLU,
	EW_GEGLU,
	EW_SWIGLU_OAI,
	EW_GELU,
	EW_GELU_ERF,
	EW_SILU,
	EW_SIGMOID,
};

static void eltwise(struct vk *v, uint32_t op, const struct tern_buf *a, const struct tern_buf *b, struct tern_buf *y,
		    bool b_row, float s)
{
	struct {
		uint32_t op, n, ne0, b_row, oa, ob, oy;
		float s;
	} pc = {.op = op, .ne0 = (uint32_t)a->ne[0], .s = s};
	uint64_t n = (uint64_t)a->ne[0] * (uint64_t)tern_host_nrows(a);
	struct vk_range r[3];
	if (n > UINT32_MAX) {
		tern_host_fail(&v->be, "%" PRIu64 " elements in one op", n);
		return;
	}
	pc.n = (uint32_t)n;
	pc.b_row = b && b_row && tern_host_nrows(b) == 1 && tern_host_nrows(a) > 1;
	if (!vk_range_of(v, a, 4, &r[0], &pc.oa) || !vk_range_of(v, b ? b : a, 4, &r[1], &pc.ob) ||
	    !vk_range_of(v, y, 4, &r[2], &pc.oy))
		return;
	uint32_t p = vk_pipe(v, "eltwise", 256, NULL), gx, gy;
	if (p == UINT32_MAX)
		return;
	vk_grid(n, 256, &gx, &gy);
	vk_dispatch(v, p, 3, r, 4, &pc, sizeof pc, gx, gy, 1);
}

static void vk_add(struct tern_backend *be, const struct tern_buf *a, const struct tern_buf *b, struct tern_buf *y)
{
	if (tern_host_eltwise_args(be, "add", a, b, y, true))
		eltwise(vk_of(be), EW_ADD, a, b, y, true, 0);
}

static void vk_scale(struct tern_backend *be, const struct tern_buf *x, struct tern_buf *y, float s)
{
	if (tern_host_eltwise_args(be, "scale", x, NULL, y, false))
		eltwise(vk_of(be), EW_SCALE, x, NULL, y, false, s);
}

static void vk_glu(struct tern_backend *be, const struct tern_buf *gate, const struct tern_buf *up, struct tern_buf *y,
		   int kind)
{
	if (kind != TERN_GLU_SWIGLU && kind != TERN_GLU_GEGLU && kind != TERN_GLU_SWIGLU_OAI) {
		tern_host_fail(be, "glu: unknown kind %d", kind);
		return;
	}
	if (tern_host_eltwise_args(be, "glu", gate, up, y, false))
		eltwise(vk_of(be), kind == TERN_GLU_SWIGLU ? EW_SWIGLU : kind == TERN_GLU_GEGLU ? EW_GEGLU : EW_SWIGLU_OAI,
			gate, up, y, false, 0);
}

static void vk_unary(struct tern_backend *be, const struct tern_buf *x, struct tern_buf *y, int kind)
{
	static const uint32_t ops[] = {
		[TERN_UNARY_GELU] = EW_GELU,	   [TERN_UNARY_GELU_ERF] = EW_GELU_ERF, [TERN_UNARY_SILU] = EW_SILU,
		[TERN_UNARY_SIGMOID] = EW_SIGMOID,
	};
	/* the check declines TERN_UNARY_GELU_F16: ggml's CPU rounding, and this
	 * backend has no TERN_BACKEND_GGML_NUMERICS */
	if (tern_host_unary_args(be, x, y, kind))
		eltwise(vk_of(be), ops[kind], x, NULL, y, false, 0);
}

static void vk_argmax(struct tern_backend *be, const struct tern_buf *x, struct tern_buf *ids)
{
	struct vk *v = vk_of(be);
	if (!tern_host_argmax_args(be, x, ids))
		return;
	struct {
		uint32_t ne0, nrows, ox, oi;
	} pc = {(uint32_t)x->ne[0], (uint32_t)tern_host_nrows(x), 0, 0};
	struct vk_range r[2];
	if (!vk_range_of(v, x, 4, &r[0], &pc.ox) || !vk_range_of(v, ids, 4, &r[1], &pc.oi))
		return;
	/* the reduction's shared arrays are 256 wide */
	uint32_t p = vk_pipe(v, "argmax", 256, NULL), gx, gy;
	if (p == UINT32_MAX)
		return;
	vk_groups(pc.nrows, &gx, &gy);
	vk_dispatch(v, p, 2, r, 2, &pc, sizeof pc, gx, gy, 1);
}

static void vk_softmax(struct tern_backend *be, const struct tern_buf *x, struct tern_buf *y)
{
	struct vk *v = vk_of(be);
	if (!tern_host_eltwise_args(be, "softmax", x, NULL, y, false))
		return;
	struct {
		uint32_t ne0, nrows, ox, oy;
	} pc = {(uint32_t)x->ne[0], (uint32_t)tern_host_nrows(x), 0, 0};
	struct vk_range r[2];
	if (!vk_range_of(v, x, 4, &r[0], &pc.ox) || !vk_range_of(v, y, 4, &r[1], &pc.oy))
		return;
	uint32_t p = vk_pipe(v, "softmax", 128, NULL), gx, gy;
	if (p == UINT32_MAX)
		return;
	vk_groups(pc.nrows, &gx, &gy);
	vk_dispatch(v, p, 2, r, 2, &pc, sizeof pc, gx, gy, 1);
}

/* ---- norm ---- */

static void vk_norm(struct tern_backend *be, struct tern_buf *x, const struct tern_buf *r, const struct tern_buf *w,
		    const struct tern_buf *b, struct tern_buf *y, const struct tern_norm *p)
{
	struct vk *v = vk_of(be);
	if (!tern_host_norm_args(be, x, r, w, b, y, p))
		return;
	struct {
		uint32_t ne0, nrows, flags;
		float eps;
		uint32_t ox, or_, ow, ob, oy;
	} pc = {(uint32_t)x->ne[0], (uint32_t)tern_host_nrows(x), 0, p->eps, 0, 0, 0, 0, 0};
	pc.flags = (r ? 1u : 0) | (w ? 2u : 0) | (b ? 4u : 0) | (p->kind == TERN_NORM_LAYER ? 8u : 0);
	struct vk_range rg[5];
	if (!vk_range_of(v, x, 4, &rg[0], &pc.ox) || !vk_range_of(v, r ? r : x, 4, &rg[1], &pc.or_) ||
	    !vk_range_of(v, w ? w : x, 4, &rg[2], &pc.ow) || !vk_range_of(v, b ? b : x, 4, &rg[3], &pc.ob) ||
	    !vk_range_of(v, y, 4, &rg[4], &pc.oy))
		return;
	/* a row per workgroup: 64 lanes for a head's Q/K norm, 256 for a model's rows */
	uint32_t wg = x->ne[0] <= 256 ? 64 : 256;
	uint32_t pi = vk_pipe(v, "norm", wg, NULL), gx, gy;
	if (pi == UINT32_MAX)
		return;
	vk_groups(pc.nrows, &gx, &gy);
	vk_dispatch(v, pi, 5, rg, (r ? 1u : 0) | 16u, &pc, sizeof pc, gx, gy, 1);
}

/* ---- rope, the KV cache, attention ---- */

static void vk_rope(struct tern_backend *be, struct tern_buf *x, const struct tern_buf *pos, const struct tern_buf *freq,
		    const struct tern_rope *p)
{
	struct vk *v = vk_of(be);
	if (!tern_host_rope_args(be, x, pos, freq, p))
		return;
	struct {
		uint32_t hd, nh, ntok, n_rot, neox, has_freq, ox, opos, ofreq, n_ctx;
		float theta_scale, freq_scale, ext_factor, corr_low, corr_high, mag;
	} pc = {
		.hd = (uint32_t)x->ne[0], .nh = (uint32_t)x->ne[1], .ntok = (uint32_t)(x->ne[2] * x->ne[3]),
		.n_rot = (uint32_t)p->n_rot, .neox = p->mode == TERN_ROPE_NEOX, .has_freq = freq != NULL,
		.theta_scale = powf(p->freq_base, -2.0f / (float)p->n_rot), .freq_scale = p->freq_scale,
		.ext_factor = p->ext_factor, .corr_low = p->corr_low, .corr_high = p->corr_high,
		.mag = (p->mscale > 0 ? p->mscale : 1.0f) * (p->attn_factor > 0 ? p->attn_factor : 1.0f),
	};
	struct vk_range r[3];
	if (!vk_range_of(v, x, 4, &r[0], &pc.ox) || !vk_range_of(v, pos, 4, &r[1], &pc.opos) ||
	    !vk_range_of(v, freq ? freq : pos, 4, &r[2], &pc.ofreq))
		return;
	uint32_t pi = vk_pipe(v, "rope", 256, NULL), gx, gy;
	if (pi == UINT32_MAX)
		return;
	vk_grid((uint64_t)pc.n_rot / 2 * pc.nh * pc.ntok, 256, &gx, &gy);
	vk_dispatch(v, pi, 3, r, 1, &pc, sizeof pc, gx, gy, 1);
}

/* Q's and K's heads in one dispatch (norm_rope.comp): a workgroup per
 * head, of norm's size so that a head's sums are the ones norm makes */
static void vk_norm_rope(struct tern_backend *be, struct tern_buf *q, struct tern_buf *k, const struct tern_buf *qw,
			 const struct tern_buf *kw, const struct tern_buf *pos, const struct tern_buf *freq,
			 const struct tern_norm *n, const struct tern_rope *p)
{
	struct vk *v = vk_of(be);
	if (!tern_host_norm_rope_args(be, q, k, qw, kw, pos, freq, n, p))
		return;
	struct {
		uint32_t hd, nhq, nhk, ntok, n_rot, flags, oq, ok, oqw, okw, opos, ofreq;
		float eps, theta_scale, freq_scale, ext_factor, corr_low, corr_high, mag;
	} pc = {
		.hd = (uint32_t)q->ne[0], .nhq = (uint32_t)q->ne[1], .nhk = k ? (uint32_t)k->ne[1] : 0,
		.ntok = (uint32_t)(q->ne[2] * q->ne[3]), .n_rot = (uint32_t)p->n_rot,
		.flags = (qw ? 1u : 0) | (kw ? 2u : 0) | (n && n->kind == TERN_NORM_LAYER ? 4u : 0) |
			 (p->mode == TERN_ROPE_NEOX ? 8u : 0) | (freq ? 16u : 0),
		.eps = n ? n->eps : 0, .theta_scale = powf(p->freq_base, -2.0f / (float)p->n_rot),
		.freq_scale = p->freq_scale, .ext_factor = p->ext_factor, .corr_low = p->corr_low,
		.corr_high = p->corr_high,
		.mag = (p->mscale > 0 ? p->mscale : 1.0f) * (p->attn_factor > 0 ? p->attn_factor : 1.0f),
	};
	struct vk_range r[6];
	if (!vk_range_of(v, q, 4, &r[0], &pc.oq) || !vk_range_of(v, k ? k : q, 4, &r[1], &pc.ok) ||
	    !vk_range_of(v, qw ? qw : q, 4, &r[2], &pc.oqw) || !vk_range_of(v, kw ? kw : q, 4, &r[3], &pc.okw) ||
	    !vk_range_of(v, pos, 4, &r[4], &pc.opos) || !vk_range_of(v, freq ? freq : pos, 4, &r[5], &pc.ofreq))
		return;
	uint32_t pi = vk_pipe(v, "norm_rope", q->ne[0] <= 256 ? 64 : 256, NULL), gx, gy;
	if (pi == UINT32_MAX)
		return;
	vk_groups((uint64_t)(pc.nhq + pc.nhk) * pc.ntok, &gx, &gy);
	vk_dispatch(v, pi, 6, r, 1u | (k ? 2u : 0), &pc, sizeof pc, gx, gy, 1);
}

/* the cache types the shaders read and write: 0 f32, 1 f16, 2 q8_0 */
static int cache_kind(uint32_t t)
{
	return t == QT_F32 ? 0 : t == QT_F16 ? 1 : t == QT_Q8_0 ? 2 : -1;
}

static void vk_kv_store(struct tern_backend *be, struct tern_buf *cache, const struct tern_buf *x,
			const struct tern_buf *pos, const struct tern_buf *seq)
{
	struct vk *v = vk_of(be);
	if (!tern_host_kv_store_args(be, cache, x, pos, seq))
		return;
	int kind = cache_kind(cache->type);
	if (kind < 0) {
		tern_host_fail(be, "kv_store: a %s cache (this backend keeps f32, f16 or q8_0)", quant_type_name(cache->type));
		return;
	}
	struct {
		uint32_t hd, nkv, ntok, n_ctx, ox, opos, oc, n_seq, oseq;
	} pc = {(uint32_t)x->ne[0], (uint32_t)x->ne[1], (uint32_t)(x->ne[2] * x->ne[3]), (uint32_t)cache->ne[2], 0, 0, 0,
		seq ? (uint32_t)cache->ne[3] : 0, 0};
	struct vk_range r[4];
	if (!vk_range_of(v, x, 4, &r[0], &pc.ox) || !vk_range_of(v, pos, 4, &r[1], &pc.opos) ||
	    !vk_range_of(v, cache, 1, &r[2], &pc.oc) || !vk_range_of(v, seq ? seq : pos, 4, &r[3], &pc.oseq))
		return;
	uint32_t spec[4] = {(uint32_t)kind};
	uint32_t pi = vk_pipe(v, "kv_store", 64, spec), gx, gy;
	if (pi == UINT32_MAX)
		return;
	uint64_t n = (uint64_t)pc.hd * pc.nkv * pc.ntok / (kind == 2 ? 32 : 1);
	vk_grid(n, 64, &gx, &gy);
	vk_dispatch(v, pi, 4, r, 4, &pc, sizeof pc, gx, gy, 1);
}

/* attention.comp's partials for a split context: grown on first use */
static bool attn_scratch(struct vk *v, size_t bytes)
{
	if (v->attn_part.size >= bytes)
		return true;
	tern_err e = {0};
	if (v->attn_part.buf) {
		if (v->n_cmds)
			vk_flush_pending(v);
		vk_mem_free(v, &v->attn_part);
	}
	if (vk_mem_new(v, &v->attn_part, bytes, false, &e)) {
		tern_host_fail(&v->be, "attention: %s", e.msg);
		return false;
	}
	return true;
}

/* attention_tiled.comp's tiles for head size d (the larger of K's and
 * V's): the most query rows (br) and keys per chunk (bc) whose shared
 * arrays fit the device; false past d = 256 or where none fits. */
static bool tiled_fit(const struct vk *v, uint32_t d, uint32_t *br, uint32_t *bc)
{
	static const uint32_t tiles[][2] = {{16, 32}, {16, 16}, {8, 16}, {8, 8}};
	if (d > 256)
		return false;
	for (size_t i = 0; i < sizeof tiles / sizeof tiles[0]; i++) {
		uint32_t r = tiles[i][0], c = tiles[i][1];
		/* qs, acc, kv, sc; six per-row words; range_s; common.glsl's red_sg */
		uint64_t bytes = 4ull * (2ull * r * d + (uint64_t)c * (d + 1) + (uint64_t)r * c + 6ull * r + 3 + 64);
		if (bytes <= v->shared_mem) {
			*br = r;
			*bc = c;
			return true;
		}
	}
	return false;
}

static void vk_attention(struct tern_backend *be, const struct tern_buf *q, const struct tern_buf *k,
			 const struct tern_buf *vb, const struct tern_buf *pos, const struct tern_buf *seq,
			 struct tern_buf *y, const struct tern_attn *p)
{
	struct vk *v = vk_of(be);
	if (!tern_host_attention_args(be, q, k, vb, pos, seq, y, p))
		return;
	int kk = cache_kind(k->type), vk_ = cache_kind(vb->type);
	if (kk < 0 || vk_ < 0) {
		tern_host_fail(be, "attention: a %s / %s cache (this backend reads f32, f16 or q8_0)",
			      quant_type_name(k->type), quant_type_name(vb->type));
		return;
	}
	const uint32_t WG = 128, MAXQ = 2048, MAXHB = 16;
	uint32_t hd = (uint32_t)q->ne[0], hdv = (uint32_t)vb->ne[0], nh = (uint32_t)q->ne[1];
	uint32_t nkv = (uint32_t)k->ne[1], ntok = (uint32_t)q->ne[2], n_ctx = (uint32_t)k->ne[2];
	uint32_t group = nh / nkv, hb = group < MAXHB ? group : MAXHB;
	while (hb > 1 && (hb * hd > MAXQ || hb * hdv > MAXQ))
		hb--;
	uint32_t nhb = (group + hb - 1) / hb;
	/* a context split over workgroups where few would run otherwise (decode) */
	uint32_t L = n_ctx, nsplit = 1;
	if ((uint64_t)ntok * nkv * nhb < 64 && n_ctx > 512) {
		L = (n_ctx + 63) / 64;
		L = L < 256 ? 256 : (L + 31) / 32 * 32;
		nsplit = (n_ctx + L - 1) / L;
	}
	struct {
		uint32_t hd, hdv, nh, nkv, n_ctx, ntok, hb, L, nsplit, window, flags, oq, ok, ov, v_nb1, v_nb2, opos,
			osink, oy, n_seq, oseq, k_nb3, v_nb3;
		float scale, softcap;
	} pc = {hd, hdv, nh, nkv, n_ctx, ntok, hb, L, nsplit, (uint32_t)p->window, p->sinks ? 1u : 0, 0, 0, 0,
		(uint32_t)vb->nb[1], (uint32_t)vb->nb[2], 0, 0, 0, seq ? (uint32_t)k->ne[3] : 0, 0,
		(uint32_t)k->nb[3], (uint32_t)vb->nb[3], p->scale, p->softcap};
	if (k->ne[3] > 1 && (uint64_t)k->nb[3] * (uint64_t)k->ne[3] > UINT32_MAX) {
		tern_host_fail(be, "attention: caches of %lld sequences beyond 4 GiB", (long long)k->ne[3]);
		return;
	}
	struct vk_range r[7];
	if (!vk_range_of(v, q, 4, &r[0], &pc.oq) || !vk_range_of(v, k, 1, &r[1], &pc.ok) ||
	    !vk_range_of(v, vb, 1, &r[2], &pc.ov) || !vk_range_of(v, pos, 4, &r[3], &pc.opos) ||
	    !vk_range_of(v, p->sinks ? p->sinks : pos, 4, &r[4], &pc.osink) ||
	    !vk_range_of(v, seq ? seq : pos, 4, &r[6], &pc.oseq))
		return;
	if (nsplit == 1) {
		if (!vk_range_of(v, y, 4, &r[5], &pc.oy))
			return;
	} else {
		size_t bytes = (size_t)ntok * nh * nsplit * (hdv + 2) * 4;
		if (!attn_scratch(v, bytes))
			return;
		r[5] = (struct vk_range){v->attn_part.buf, 0, bytes};
	}
	uint32_t spec[4] = {(uint32_t)kk, (uint32_t)vk_};
	uint32_t br, bc, dmax = hd > hdv ? hd : hdv;
	if (nsplit == 1 && ntok >= 4 && tiled_fit(v, dmax, &br, &bc)) {
		/* a batch: K and V read once per br query rows (attention_tiled.comp) */
		spec[2] = br | bc << 8;
		spec[3] = dmax;
		uint32_t pi = vk_pipe(v, "attention_tiled", WG, spec);
		if (pi != UINT32_MAX)
			vk_dispatch(v, pi, 7, r, 1u << 5, &pc, sizeof pc, (ntok + br - 1) / br, nh, 1);
		return;
	}
	uint32_t pi = vk_pipe(v, "attention", WG, spec);
	if (pi == UINT32_MAX)
		return;
	vk_dispatch(v, pi, 7, r, 1u << 5, &pc, sizeof pc, nsplit, nkv * nhb, ntok);
	if (nsplit == 1)
		return;
	struct {
		uint32_t hdv, nh, ntok, nsplit, flags, osink, oy, opos, n_ctx, n_seq, oseq;
	} cc = {hdv, nh, ntok, nsplit, pc.flags, pc.osink, 0, pc.opos, n_ctx, pc.n_seq, pc.oseq};
	struct vk_range c[5] = {r[5], r[4], {0}, r[3], r[6]};
	if (!vk_range_of(v, y, 4, &c[2], &cc.oy))
		return;
	pi = vk_pipe(v, "attn_combine", 64, NULL);
	if (pi != UINT32_MAX)
		vk_dispatch(v, pi, 5, c, 4, &cc, sizeof cc, nh, ntok, 1);
}

/* ---- copy, im2col, the router ---- */

static void vk_copy(struct tern_backend *be, const struct tern_buf *src, struct tern_buf *dst)
{
	struct vk *v = vk_of(be);
	if (!tern_host_copy_args(be, src, dst))
		return;
	uint32_t st = src->type, dt = dst->type, conv, unit = 1;
	int64_t ne0 = src->ne[0], per;
	size_t row = quant_row_size(st, (uint64_t)ne0, NULL);
	if (st == dt && st != QT_F32) {
		conv = 0;
		size_t all = row | src->nb[1] | src->nb[2] | src->nb[3] | dst->nb[1] | dst->nb[2] | dst->nb[3] |
			     src->offset | dst->offset;
		unit = all % 4 == 0 ? 4 : all % 2 == 0 ? 2 : 1;
		per = (int64_t)(row / unit);
	} else if (st == QT_F32 && (dt == QT_F32 || dt == QT_F16 || dt == QT_BF16 || dt == QT_Q8_0)) {
		conv = dt == QT_F32 ? 1 : dt == QT_F16 ? 2 : dt == QT_BF16 ? 3 : 6;
		per = dt == QT_Q8_0 ? ne0 / 32 : ne0;
	} else if (dt == QT_F32 && (st == QT_F16 || st == QT_BF16 || st == QT_Q8_0)) {
		conv = st == QT_F16 ? 4 : st == QT_BF16 ? 5 : 7;
		per = ne0;
	} else {
		vk_copy_dequant(v, src, dst);
		return;
	}
	int64_t nrows = tern_host_nrows(src);
	struct {
		uint32_t n_per_row, nrows, s_ne1, s_ne2, d_ne1, d_ne2, s_nb1, s_nb2, s_nb3, d_nb1, d_nb2, d_nb3, os, od;
	} pc = {(uint32_t)per, (uint32_t)nrows, (uint32_t)src->ne[1], (uint32_t)src->ne[2], (uint32_t)dst->ne[1],
		(uint32_t)dst->ne[2], (uint32_t)src->nb[1], (uint32_t)src->nb[2], (uint32_t)src->nb[3],
		(uint32_t)dst->nb[1], (uint32_t)dst->nb[2], (uint32_t)dst->nb[3], 0, 0};
	struct vk_range r[2];
	if (!vk_range_of(v, src, 1, &r[0], &pc.os) || !vk_range_of(v, dst, 1, &r[1], &pc.od))
		return;
	uint32_t spec[4] = {conv, unit}, gx, gy;
	uint32_t pi = vk_pipe(v, "copy", 256, spec);
	if (pi == UINT32_MAX)
		return;
	vk_grid((uint64_t)per * (uint64_t)nrows, 256, &gx, &gy);
	vk_dispatch(v, pi, 2, r, 2, &pc, sizeof pc, gx, gy, 1);
}

static void vk_im2col(struct tern_backend *be, const struct tern_buf *x, struct tern_buf *y, const struct tern_conv *p)
{
	struct vk *v = vk_of(be);
	if (!tern_host_im2col_args(be, x, y, p))
		return;
	struct {
		uint32_t n_ch, len, n_out, k, stride, pad, ox, oy;
	} pc = {(uint32_t)x->ne[0], (uint32_t)x->ne[1], (uint32_t)y->ne[1], (uint32_t)p->k, (uint32_t)p->stride,
		(uint32_t)p->pad, 0, 0};
	struct vk_range r[2];
	if (!vk_range_of(v, x, 4, &r[0], &pc.ox) || !vk_range_of(v, y, 4, &r[1], &pc.oy))
		return;
	uint32_t pi = vk_pipe(v, "im2col", 256, NULL), gx, gy;
	if (pi == UINT32_MAX)
		return;
	vk_grid((uint64_t)y->ne[0] * (uint64_t)y->ne[1], 256, &gx, &gy);
	vk_dispatch(v, pi, 2, r, 2, &pc, sizeof pc, gx, gy, 1);
}

static void vk_moe_route(struct tern_backend *be, const struct tern_buf *logits, const struct tern_buf *bias,
			 struct tern_buf *ids, struct tern_buf *weights, const struct tern_moe_route *p)
{
	struct vk *v = vk_of(be);
	if (!tern_host_moe_route_args(be, logits, bias, ids, weights, p))
		return;
	if (logits->ne[0] > 1024 || (p->n_group > 1 && p->n_group > 32)) {
		tern_host_fail(be, "moe_route: %lld experts in %d groups (this backend takes 1024 in 32)",
			      (long long)logits->ne[0], p->n_group);
		return;
	}
	struct {
		uint32_t ne, k, ntok, gating, has_bias, norm, n_group, n_group_used, ol, ob, oi, ow;
		float scale;
	} pc = {(uint32_t)logits->ne[0], (uint32_t)p->k, (uint32_t)tern_host_nrows(logits),
		p->gating == TERN_MOE_SOFTMAX ? 0u : p->gating == TERN_MOE_SIGMOID ? 1u : 2u, bias != NULL, p->norm,
		(uint32_t)(p->n_group > 1 ? p->n_group : 1), (uint32_t)p->n_group_used, 0, 0, 0, 0, p->scale};
	struct vk_range r[4];
	if (!vk_range_of(v, logits, 4, &r[0], &pc.ol) || !vk_range_of(v, bias ? bias : logits, 4, &r[1], &pc.ob) ||
	    !vk_range_of(v, ids, 4, &r[2], &pc.oi) || !vk_range_of(v, weights, 4, &r[3], &pc.ow))
		return;
	uint32_t pi = vk_pipe(v, "moe_route", 64, NULL), gx, gy;
	if (pi == UINT32_MAX)
		return;
	vk_groups(pc.ntok, &gx, &gy);
	vk_dispatch(v, pi, 4, r, 12, &pc, sizeof pc, gx, gy, 1);
}

static void vk_moe_combine(struct tern_backend *be, const struct tern_buf *x, const struct tern_buf *w,
			   struct tern_buf *y)
{
	struct vk *v = vk_of(be);
	if (!tern_host_moe_combine_args(be, x, w, y))
		return;
	struct {
		uint32_t n, k, ntok, ox, ow, oy;
	} pc = {(uint32_t)x->ne[0], (uint32_t)x->ne[1], (uint32_t)x->ne[2], 0, 0, 0};
	struct vk_range r[3];
	if (!vk_range_of(v, x, 4, &r[0], &pc.ox) || !vk_range_of(v, w, 4, &r[1], &pc.ow) ||
	    !vk_range_of(v, y, 4, &r[2], &pc.oy))
		return;
	uint32_t pi = vk_pipe(v, "moe_combine", 256, NULL), gx, gy;
	if (pi == UINT32_MAX)
		return;
	vk_grid((uint64_t)pc.n * pc.ntok, 256, &gx, &gy);
	vk_dispatch(v, pi, 3, r, 4, &pc, sizeof pc, gx, gy, 1);
}

/* ---- the bandwidth probe ---- */

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int vk_read_bandwidth(struct tern_backend *be, double *gbps, tern_err *err)
{
	struct vk *v = vk_of(be);
	*gbps = 0;
	/* large against any cache (an H200's L2 is 60 MB), one binding */
	uint64_t bytes = (uint64_t)1 << 30;
	while (bytes > v->max_binding || bytes > v->info.mem_budget / 4 || (v->info.uma && bytes > ((uint64_t)256 << 20)))
		bytes /= 2;
	if (bytes < ((uint64_t)16 << 20))
		return tern_errf(err, TERN_ENOMEM, "%s: too little memory for the bandwidth probe", be->name);
	struct tern_buf a, y;
	int64_t ane[1] = {(int64_t)(bytes / 4)}, yne[1] = {65536};
	int rc = be->buf_alloc(be, &a, QT_F32, 1, ane, err);
	if (rc)
		return rc;
	rc = be->buf_alloc(be, &y, QT_F32, 1, yne, err);
	if (rc) {
		be->buf_free(be, &a);
		return rc;
	}
	struct vk_range r[2];
	const struct vk_mem *am = a.mem, *ym = y.mem;
	r[0] = (struct vk_range){am->buf, 0, bytes};
	r[1] = (struct vk_range){ym->buf, 0, 65536 * 4};
	/* zeros: a fill, not an upload through the staging */
	vk_fill(v, am->buf, 0, bytes, 0);
	uint32_t n = (uint32_t)(bytes / 16), pi = vk_pipe(v, "read_bw", 256, NULL);
	/* enough workgroups to fill any device, few enough for y */
	uint32_t groups = v->info.uma ? 64 : 4096; /* a CPU device: few, long invocations */
	double best = 0, pass_s = 0;
	int passes = 1; /* the first round: one pass, the warm-up (lavapipe compiles there) */
	for (int rep = 0; rep < 4 && pi != UINT32_MAX; rep++) {
		for (int p = 0; p < passes; p++)
			vk_dispatch(v, pi, 2, r, 2, &n, sizeof n, groups, 1, 1);
		double t0 = now_s();
		rc = be->sync(be, err);
		double dt = now_s() - t0;
		if (rc)
			break;
		if (rep && dt > 0 && (double)bytes * passes / dt / 1e9 > best)
			best = (double)bytes * passes / dt / 1e9;
		if (rep == 1 || !pass_s)
			pass_s = dt / passes;
		/* about 50 ms per round: long against a submit, short on a slow device */
		passes = pass_s > 0 ? (int)(0.05 / pass_s) : 1;
		passes = passes < 1 ? 1 : passes > 50 ? 50 : passes;
	}
	if (!rc && pi == UINT32_MAX)
		rc = be->sync(be, err);
	be->buf_free(be, &a);
	be->buf_free(be, &y);
	*gbps = best;
	return rc;
}

void vk_ops_table(struct tern_backend *be)
{
	be->rope = vk_rope;
	be->norm_rope = vk_norm_rope;
	be->kv_store = vk_kv_store;
	be->attention = vk_attention;
	be->copy = vk_copy;
	be->im2col = vk_im2col;
	be->moe_route = vk_moe_route;
	be->moe_combine = vk_moe_combine;
	be->add = vk_add;
	be->scale = vk_scale;
	be->glu = vk_glu;
	be->unary = vk_unary;
	be->softmax = vk_softmax;
	be->argmax = vk_argmax;
	be->norm = vk_norm;
	vk_products_table(be);
}
