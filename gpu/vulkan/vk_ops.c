/* vk_ops.c - the Vulkan backend's ops other than the products (those are in
 * vk_products.c): each checks its operands as the CPU backends do
 * (lib/cpu/host.h), binds its buffers, fills its push constants and
 * appends one or a few dispatches (gpu/vulkan/vk_impl.h). */
#include <inttypes.h>
#include <math.h>
#include <string.h>

#include "gpu/vulkan/vk_impl.h"
#include "quant/quant.h"

/* A workgroup grid covering n invocations of wg each: x up to 32768,
 * the rest in y (shaders index with flat_id()). */
void vk_grid(uint64_t n, uint32_t wg, uint32_t *gx, uint32_t *gy)
{
	uint64_t groups = (n + wg - 1) / wg;
	if (!groups)
		groups = 1;
	*gx = groups < 32768 ? (uint32_t)groups : 32768;
	*gy = (uint32_t)((groups + *gx - 1) / *gx);
}

/* One workgroup per row: rows over x and y. */
static void row_grid(uint64_t rows, uint32_t *gx, uint32_t *gy) { vk_grid(rows, 1, gx, gy); }

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
	EW_GELU_F16,
};

static void eltwise(struct vk *v, uint32_t op, const struct tern_buf *a, const struct tern_buf *b, struct tern_buf *y,
		    bool b_row, float s)
{
	struct {
		uint32_t op, n, ne0, b_row, oa, ob, oy;
		float s;
	} pc = {.op = op, .ne0 = (uint32_t)a->ne[0], .s = s};
	uint64_t n = (uint64_t)a->ne[0] * (uint64_t)cpu_host_nrows(a);
	struct vk_range r[3];
	if (n > UINT32_MAX) {
		cpu_host_fail(&v->be, "%" PRIu64 " elements in one op", n);
		return;
	}
	pc.n = (uint32_t)n;
	pc.b_row = b && b_row && cpu_host_nrows(b) == 1 && cpu_host_nrows(a) > 1;
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
	if (cpu_host_eltwise_args(be, "add", a, b, y, true))
		eltwise(vk_of(be), EW_ADD, a, b, y, true, 0);
}

static void vk_scale(struct tern_backend *be, const struct tern_buf *x, struct tern_buf *y, float s)
{
	if (cpu_host_eltwise_args(be, "scale", x, NULL, y, false))
		eltwise(vk_of(be), EW_SCALE, x, NULL, y, false, s);
}

static void vk_glu(struct tern_backend *be, const struct tern_buf *gate, const struct tern_buf *up, struct tern_buf *y,
		   int kind)
{
	if (kind != TERN_GLU_SWIGLU && kind != TERN_GLU_GEGLU && kind != TERN_GLU_SWIGLU_OAI) {
		cpu_host_fail(be, "glu: unknown kind %d", kind);
		return;
	}
	if (cpu_host_eltwise_args(be, "glu", gate, up, y, false))
		eltwise(vk_of(be), kind == TERN_GLU_SWIGLU ? EW_SWIGLU : kind == TERN_GLU_GEGLU ? EW_GEGLU : EW_SWIGLU_OAI,
			gate, up, y, false, 0);
}

static void vk_unary(struct tern_backend *be, const struct tern_buf *x, struct tern_buf *y, int kind)
{
	static const uint32_t ops[] = {
		[TERN_UNARY_GELU] = EW_GELU,	   [TERN_UNARY_GELU_ERF] = EW_GELU_ERF, [TERN_UNARY_SILU] = EW_SILU,
		[TERN_UNARY_GELU_F16] = EW_GELU_F16, [TERN_UNARY_SIGMOID] = EW_SIGMOID,
	};
	if (kind < TERN_UNARY_GELU || kind > TERN_UNARY_SIGMOID) {
		cpu_host_fail(be, "unary: unknown kind %d", kind);
		return;
	}
	if (cpu_host_eltwise_args(be, "unary", x, NULL, y, false))
		eltwise(vk_of(be), ops[kind], x, NULL, y, false, 0);
}

static void vk_softmax(struct tern_backend *be, const struct tern_buf *x, struct tern_buf *y)
{
	struct vk *v = vk_of(be);
	if (!cpu_host_eltwise_args(be, "softmax", x, NULL, y, false))
		return;
	struct {
		uint32_t ne0, nrows, ox, oy;
	} pc = {(uint32_t)x->ne[0], (uint32_t)cpu_host_nrows(x), 0, 0};
	struct vk_range r[2];
	if (!vk_range_of(v, x, 4, &r[0], &pc.ox) || !vk_range_of(v, y, 4, &r[1], &pc.oy))
		return;
	uint32_t p = vk_pipe(v, "softmax", 128, NULL), gx, gy;
	if (p == UINT32_MAX)
		return;
	row_grid(pc.nrows, &gx, &gy);
	vk_dispatch(v, p, 2, r, 2, &pc, sizeof pc, gx, gy, 1);
}

/* ---- norm ---- */

static void vk_norm(struct tern_backend *be, struct tern_buf *x, const struct tern_buf *r, const struct tern_buf *w,
		    const struct tern_buf *b, struct tern_buf *y, const struct tern_norm *p)
{
	struct vk *v = vk_of(be);
	if (!cpu_host_norm_args(be, x, r, w, b, y, p))
		return;
	if (p->ggml) {
		cpu_host_fail(be, "norm: ggml's CPU rounding is not available on this backend");
		return;
	}
	struct {
		uint32_t ne0, nrows, flags;
		float eps;
		uint32_t ox, or_, ow, ob, oy;
	} pc = {(uint32_t)x->ne[0], (uint32_t)cpu_host_nrows(x), 0, p->eps, 0, 0, 0, 0, 0};
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
	row_grid(pc.nrows, &gx, &gy);
	vk_dispatch(v, pi, 5, rg, (r ? 1u : 0) | 16u, &pc, sizeof pc, gx, gy, 1);
}

void vk_ops_table(struct tern_backend *be)
{
	be->add = vk_add;
	be->scale = vk_scale;
	be->glu = vk_glu;
	be->unary = vk_unary;
	be->softmax = vk_softmax;
	be->norm = vk_norm;
	vk_products_table(be);
}
