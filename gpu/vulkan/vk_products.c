/* vk_products.c - the Vulkan backend's products: mat_prepare, the one-token
 * mat-vec (one weight or several at once), the batched GEMM, the per-head
 * products (mat_mul_heads), the experts' products (mat_mul_id) and
 * get_rows, over every weight type in its GGUF block layout (the decoders
 * are gpu/vulkan/shaders/dequant.glsl; no type is converted at load time).
 *
 * The activations. The reference backend quantizes x to the weight type's
 * activation type (Q8_0, Q8_1, Q8_K: quant_vec_dot_type) and sums the
 * products of the decoded values in double. Here actq.comp quantizes x the
 * same way (the same scales, the same rounding) and decodes it back to f32
 * into a scratch buffer; the product shaders then sum decoded weights times
 * those values in f32. The results differ from the reference's by the f32
 * sums alone (NMSE ~1e-13), so that tests/test_backend_ops.c holds this
 * backend to the thresholds it holds the CPU to. The float types (F32,
 * F16, BF16) take x itself.
 *
 * The integer dot product. Where the device accelerates
 * VK_KHR_shader_integer_dot_product (v->int_dot: vk_backend.c; forced by
 * vk_backend_opts.int_dot for the tests), the one-token mat-vec of the
 * types dot_int.glsl knows (int_type) takes the activations in actq.comp's
 * int form instead: per row, the int8 levels 4 to a 32-bit word, then the
 * block scales as f32, then (Q8_1) the block sums. mul_mat_vec_dot_TYPE
 * packs the weight's levels the same way, sums each block (a K-quant's
 * sub-blocks) as integers with OpSDot and scales the sums in float, as
 * quant/'s SIMD dots do: exact integer sums, so no further from the
 * reference than the float path; mul_mat_vec_id_dot_TYPE the same for
 * the experts of one token. The GEMMs and the other types keep the float
 * form.
 *
 * Bindings. A binding covers at most maxStorageBufferRange bytes (128 MiB
 * on lavapipe; a 262144 x 2048 f16 output matrix is 1 GiB): weights are
 * bound in pieces of whole rows (whole experts for a stack), the tokens of
 * a batch in runs that keep x, y and the scratch within a binding, and
 * each piece is one dispatch.
 *
 * Every product is products(): n weights (1..TERN_MAT_VEC_N) that take the
 * same x, any number of tokens (the table's product entry). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu/vulkan/vk_impl.h"
#include "quant/iq_grids.h"
#include "quant/quant.h"

/* the rows one mat-vec workgroup takes (mul_mat_vec.comp and
 * mul_mat_vec_id.comp RW) and its size */
#define MV_NR 8
#define MV_WG 64
/* the GEMM's tile of y (mul_mm.comp BM x BN) and workgroup; the same
 * tile on cooperative matrices (mul_mm_cm.comp) takes 128 invocations and
 * MM_CM_SPLIT products per 16 x 16 x 16 step (3: each f16 operand split
 * into a high and a low half, f32-grade sums; 1: plain f16) */
#define MM_BM 64
#define MM_WG 256
#define MM_CM_WG 128
#define MM_CM_SPLIT 3
/* weights one mat-vec dispatch takes (mul_mat_vec.comp binds three:
 * 3 weights, x and 3 outputs fill VK_MAX_BINDINGS but one) */
#define MV_MAX_W 3
/* the scratch: at least this much from creation (the per-head products
 * need it without a mat_prepare), at most this much however large a batch */
#define SCRATCH_MIN ((size_t)4 << 20)
#define SCRATCH_MAX ((size_t)256 << 20)

struct vk_products {
	struct tern_buf scratch; /* f32: activations as actq.comp leaves them */
	size_t cap;              /* its floats */
	struct tern_buf grids;   /* the IQ grids (grid_words), binding 7 of their shaders */
};

/* The IQ grids as the shaders read them (dequant.glsl G_*): the tables of
 * quant/iq_grids.c one after another, 64-bit entries as low and high words. */
#define GRID_WORDS (512 + 1024 + 2048 + 256 + 512 + 4096 + 128)
static void grid_words(uint32_t *g)
{
	size_t n = 0;
	memcpy(g + n, quant_iq2xxs_grid, sizeof quant_iq2xxs_grid);
	n += sizeof quant_iq2xxs_grid / 4;
	memcpy(g + n, quant_iq2xs_grid, sizeof quant_iq2xs_grid);
	n += sizeof quant_iq2xs_grid / 4;
	memcpy(g + n, quant_iq2s_grid, sizeof quant_iq2s_grid);
	n += sizeof quant_iq2s_grid / 4;
	memcpy(g + n, quant_iq3xxs_grid, sizeof quant_iq3xxs_grid);
	n += sizeof quant_iq3xxs_grid / 4;
	memcpy(g + n, quant_iq3s_grid, sizeof quant_iq3s_grid);
	n += sizeof quant_iq3s_grid / 4;
	memcpy(g + n, quant_iq1s_grid, sizeof quant_iq1s_grid);
	n += sizeof quant_iq1s_grid / 4;
	for (size_t i = 0; i < sizeof quant_ksigns_iq2xs; i++)
		g[n + i] = quant_ksigns_iq2xs[i];
}
_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "grid_words: the low word of a 64-bit entry first");

/* mat_prepare's mark: nothing is converted, so the prepared form is a
 * pointer that says "checked, pipelines made" (one per type, never freed) */
static char prepared[QT_COUNT];

/* ---- helpers ---- */

static struct vk_products *prod_of(struct vk *v) { return v->prod; }

/* "q4_k": a shader's type suffix (gen.sh lower-cases the types line) */
static const char *suffix(uint32_t t, char *buf, size_t n)
{
	const char *s = quant_type_name(t);
	size_t i = 0;
	for (; s[i] && i + 1 < n; i++)
		buf[i] = (char)(s[i] >= 'A' && s[i] <= 'Z' ? s[i] - 'A' + 'a' : s[i]);
	buf[i] = 0;
	return buf;
}

/* The pipeline of shader's variant for type t. vk_pipe keeps the name it
 * is given, so the name passed is the shader table's own (static) copy. */
static uint32_t pipe_spec(struct vk *v, const char *shader, uint32_t t, uint32_t wg, const uint32_t spec[4])
{
	char name[64], s[16];
	snprintf(name, sizeof name, "%s_%s", shader, suffix(t, s, sizeof s));
	for (size_t i = 0; i < vk_spirv_count; i++)
		if (!strcmp(vk_spirv_table[i].name, name))
			return vk_pipe(v, vk_spirv_table[i].name, wg, spec);
	vk_fail(v, "no shader '%s' in this build", name);
	return UINT32_MAX;
}

static uint32_t pipe_of(struct vk *v, const char *shader, uint32_t t, uint32_t wg)
{
	return pipe_spec(v, shader, t, wg, NULL);
}

/* the GEMM's tile width in tokens for a batch: 16 TN (mul_mm.comp) */
static uint32_t mm_tn(int64_t ntok) { return ntok <= 16 ? 1 : ntok <= 32 ? 2 : 4; }

/* bytes a binding may cover, the alignment slack taken off */
static size_t bind_max(const struct vk *v) { return (size_t)(v->max_binding - v->align); }

static bool quantized(uint32_t t) { return quant_vec_dot_type(t) != QT_F32; }

/* the types with an integer dot mat-vec (mul_mat_vec.comp's "dot types") */
static bool int_type(uint32_t t)
{
	switch (t) {
	case QT_Q4_0: case QT_Q4_1: case QT_Q5_0: case QT_Q5_1: case QT_Q8_0: case QT_IQ4_NL: case QT_MXFP4:
	case QT_Q2_K: case QT_Q3_K: case QT_Q4_K: case QT_Q5_K: case QT_Q6_K: case QT_IQ4_XS:
		return true;
	}
	return false;
}

/* one token of type t through the integer dot product */
static bool use_int(const struct vk *v, uint32_t t) { return v->int_dot && int_type(t); }

/* the activation kinds a one-token step may need side by side */
enum { ACT_Q8_0, ACT_Q8_1, ACT_Q8_K, ACT_F32, ACT_KINDS };
static int act_kind(uint32_t t)
{
	uint32_t at = quant_vec_dot_type(t);
	return at == QT_Q8_0 ? ACT_Q8_0 : at == QT_Q8_1 ? ACT_Q8_1 : at == QT_Q8_K ? ACT_Q8_K : ACT_F32;
}

/* words per scratch row of cols: the values (the float form) or the levels
 * 4 a word and the block scales (the int form), then for Q8_1 the block
 * sums */
static size_t act_stride(uint32_t t, int64_t cols, bool ints)
{
	uint32_t at = quant_vec_dot_type(t);
	size_t c = (size_t)cols, sums = at == QT_Q8_1 ? c / 32 : 0;
	return ints ? c / 4 + c / (at == QT_Q8_K ? 256 : 32) + sums : c + sums;
}

static bool grid_type(uint32_t t)
{
	return t == QT_IQ2_XXS || t == QT_IQ2_XS || t == QT_IQ2_S || t == QT_IQ3_XXS || t == QT_IQ3_S ||
	       t == QT_IQ1_S || t == QT_IQ1_M;
}

/* The bindings of a dispatch of type t's shader, b[0..n) given: for the
 * grid types, the grids at binding 7 and the gaps before it filled (a
 * push descriptor per binding the shader declares). The count, or 0 (the
 * violation recorded) without grids. */
static uint32_t with_grids(struct vk *v, uint32_t t, struct vk_range *b, uint32_t n)
{
	if (!grid_type(t))
		return n;
	struct vk_products *p = prod_of(v);
	if (!p || !p->grids.mem || !vk_range_of(v, &p->grids, 4, &b[7], NULL)) {
		tern_host_fail(&v->be, "products: no IQ grids on this device");
		return 0;
	}
	for (uint32_t i = n; i < 7; i++)
		b[i] = b[7];
	return 8;
}

/* ---- the scratch ---- */

static int scratch_reserve(struct vk *v, size_t floats, tern_err *err)
{
	struct vk_products *p = prod_of(v);
	if (!p)
		return tern_errf(err, TERN_ENOMEM, "%s: no state for the products", v->be.name);
	if (floats <= p->cap)
		return 0;
	int64_t ne[1] = {(int64_t)floats};
	struct tern_buf nb;
	int rc = v->be.buf_alloc(&v->be, &nb, QT_F32, 1, ne, err);
	if (rc)
		return rc;
	if (p->scratch.mem)
		v->be.buf_free(&v->be, &p->scratch);
	p->scratch = nb;
	p->cap = floats;
	return 0;
}

/* ---- the activations ---- */

/* Where a product reads x: a binding, the word offset of token 0 in it,
 * the words between tokens, where a token's Q8_1 sums start (the float
 * form), and whether it is the int form. */
struct act {
	struct vk_range r;
	uint32_t o, stride, sofs;
	bool ints;
};

/* x rows [row0, row0 + n) of cols, as the products of type t read them:
 * quantized into the scratch at word offset at (actq.comp; ints: its int
 * form), or x itself for the float types. False (the violation recorded)
 * when it cannot be bound. */
static bool act_of(struct vk *v, uint32_t t, const struct tern_buf *x, int64_t row0, int64_t n, int64_t cols,
		   size_t at, bool ints, struct act *a)
{
	size_t rb = (size_t)cols * 4;
	struct vk_range xr;
	uint32_t ox;
	if (!vk_range_bytes(v, x, (size_t)row0 * rb, (size_t)n * rb, 4, &xr, &ox))
		return false;
	if (!quantized(t)) {
		*a = (struct act){xr, ox, (uint32_t)cols, 0, false};
		return true;
	}
	struct vk_products *p = prod_of(v);
	size_t qs = act_stride(t, cols, ints);
	if (!p || !p->scratch.mem || at + (size_t)n * qs > p->cap) {
		tern_host_fail(&v->be, "products: %lld activation rows of %lld exceed the scratch (%zu floats)",
			      (long long)n, (long long)cols, p ? p->cap : 0);
		return false;
	}
	struct vk_range qr;
	uint32_t oq;
	if (!vk_range_bytes(v, &p->scratch, at * 4, (size_t)n * qs * 4, 4, &qr, &oq))
		return false;
	uint32_t at_t = quant_vec_dot_type(t);
	struct {
		uint32_t cols, nrows, ox, oq, xstride, qstride, kind, form;
	} pc = {(uint32_t)cols, (uint32_t)n, ox, oq, (uint32_t)cols, (uint32_t)qs,
		at_t == QT_Q8_0 ? 0u : at_t == QT_Q8_1 ? 1u : 2u, ints ? 1u : 0u};
	uint32_t pi = vk_pipe(v, "actq", 256, NULL), gx, gy;
	if (pi == UINT32_MAX)
		return false;
	vk_groups(((uint64_t)n * (uint64_t)cols + 255) / 256, &gx, &gy);
	struct vk_range b[2] = {xr, qr};
	vk_dispatch(v, pi, 2, b, 2, &pc, sizeof pc, gx, gy, 1);
	*a = (struct act){qr, oq, (uint32_t)qs, (uint32_t)cols, ints};
	return true;
}

/* tokens per run: x, y and the scratch of a run each fit one binding */
static int64_t token_run(struct vk *v, uint32_t t, int64_t cols, int64_t rows_y, int64_t ntok, size_t x_rows_per_tok)
{
	int64_t run = ntok;
	size_t xb = (size_t)cols * 4 * x_rows_per_tok, yb = (size_t)rows_y * 4;
	if (xb && (int64_t)(bind_max(v) / xb) < run)
		run = (int64_t)(bind_max(v) / xb);
	if (yb && (int64_t)(bind_max(v) / yb) < run)
		run = (int64_t)(bind_max(v) / yb);
	if (quantized(t)) {
		struct vk_products *p = prod_of(v);
		size_t per = act_stride(t, cols, false) * x_rows_per_tok;
		int64_t fit = p ? (int64_t)(p->cap / per) : 0;
		if (fit < run)
			run = fit;
	}
	return run;
}

/* ---- mat-vec: one token ---- */

/* y[i] = w[i] x for n (1..MV_MAX_W) weights of one type, rows [r0, r0 +
 * nr[i]) of each, in one dispatch */
static void mv_dispatch(struct vk *v, int n, const struct tern_buf *const *w, const int64_t *r0, const int64_t *nr,
			const struct act *a, struct tern_buf *const *y)
{
	struct {
		uint32_t cols, ox, sofs;
		uint32_t rows[3], ow[3], nb1[3], oy[3];
	} pc = {(uint32_t)w[0]->ne[0], a->o, a->sofs, {0}, {0}, {0}, {0}};
	struct vk_range b[VK_MAX_BINDINGS];
	int64_t most = 0;
	for (int i = 0; i < MV_MAX_W; i++) {
		int j = i < n ? i : 0;
		if (!vk_range_bytes(v, w[j], (size_t)r0[j] * w[j]->nb[1], (size_t)nr[j] * w[j]->nb[1], 1, &b[i], &pc.ow[i]) ||
		    !vk_range_bytes(v, y[j], (size_t)r0[j] * 4, (size_t)nr[j] * 4, 4, &b[4 + i], &pc.oy[i]))
			return;
		pc.rows[i] = i < n ? (uint32_t)nr[i] : 0;
		pc.nb1[i] = (uint32_t)w[j]->nb[1];
		most = nr[j] > most ? nr[j] : most;
	}
	b[3] = a->r;
	uint32_t spec[4] = {(uint32_t)n, 0, 0, 0};
	uint32_t pi = pipe_spec(v, a->ints ? "mul_mat_vec_dot" : "mul_mat_vec", w[0]->type, MV_WG, spec), gx, gy;
	if (pi == UINT32_MAX)
		return;
	vk_groups((uint64_t)(most + MV_NR - 1) / MV_NR, &gx, &gy);
	uint32_t write = 1u << 4 | (n > 1 ? 1u << 5 : 0) | (n > 2 ? 1u << 6 : 0);
	uint32_t nb = with_grids(v, w[0]->type, b, 7);
	if (nb)
		vk_dispatch(v, pi, nb, b, write, &pc, sizeof pc, gx, gy, (uint32_t)n);
}

/* one weight whose rows do not fit one binding: a dispatch per piece */
static void mv_pieces(struct vk *v, const struct tern_buf *w, const struct act *a, struct tern_buf *y)
{
	int64_t per = (int64_t)(bind_max(v) / w->nb[1]);
	per -= per % MV_NR;
	if (per < 1) {
		tern_host_fail(&v->be, "products: a row of %zu bytes exceeds the device's binding range", w->nb[1]);
		return;
	}
	for (int64_t r0 = 0; r0 < w->ne[1]; r0 += per) {
		int64_t nr = w->ne[1] - r0 < per ? w->ne[1] - r0 : per;
		const struct tern_buf *wp[1] = {w};
		struct tern_buf *yp[1] = {y};
		mv_dispatch(v, 1, wp, &r0, &nr, a, yp);
	}
}

/* ---- GEMM: a batch ---- */

/* y = w x for rows [r0, r0 + nr) of w and the tokens a binds; heads > 1:
 * workgroup z walks the heads, wz bytes of w, xz floats of x and yz of y
 * apart */
static void mm_dispatch(struct vk *v, const struct tern_buf *w, size_t wstart, size_t wbytes, int64_t nr,
			const struct act *a, int64_t ntok, const struct tern_buf *y, size_t ystart, size_t ybytes,
			uint32_t ystride, uint32_t heads, uint32_t wz, uint32_t xz, uint32_t yz)
{
	struct {
		uint32_t rows, cols, ntok, ow, nb1, ox, xstride, oy, ystride, sofs, wz, xz, yz;
	} pc = {(uint32_t)nr, (uint32_t)w->ne[0], (uint32_t)ntok, 0, (uint32_t)w->nb[1], a->o, a->stride, 0,
		ystride, a->sofs, wz, xz, yz};
	struct vk_range b[VK_MAX_BINDINGS];
	if (!vk_range_bytes(v, w, wstart, wbytes, 1, &b[0], &pc.ow) ||
	    !vk_range_bytes(v, y, ystart, ybytes, 4, &b[2], &pc.oy))
		return;
	b[1] = a->r;
	uint32_t tn = mm_tn(ntok), spec[4] = {tn, v->coop ? MM_CM_SPLIT : 0, 0, 0};
	uint32_t pi = v->coop ? pipe_spec(v, "mul_mm_cm", w->type, MM_CM_WG, spec)
			      : pipe_spec(v, "mul_mm", w->type, MM_WG, spec);
	if (pi == UINT32_MAX)
		return;
	uint32_t nb = with_grids(v, w->type, b, 3);
	if (nb)
		vk_dispatch(v, pi, nb, b, 4, &pc, sizeof pc, (uint32_t)((nr + MM_BM - 1) / MM_BM),
			    (uint32_t)((ntok + 16 * tn - 1) / (16 * tn)), heads);
}

/* y (tokens [0, ntok) of rows w->ne[1]) = w x for a run of tokens whose
 * activations a binds, the weight in pieces that fit a binding */
static void mm_run(struct vk *v, const struct tern_buf *w, const struct act *a, int64_t ntok, const struct tern_buf *y,
		   int64_t t0)
{
	int64_t rows = w->ne[1];
	int64_t per = (int64_t)(bind_max(v) / w->nb[1]);
	per -= per % MM_BM;
	if (per < 1) {
		tern_host_fail(&v->be, "products: a row of %zu bytes exceeds the device's binding range", w->nb[1]);
		return;
	}
	for (int64_t r0 = 0; r0 < rows; r0 += per) {
		int64_t nr = rows - r0 < per ? rows - r0 : per;
		size_t ys = ((size_t)t0 * (size_t)rows + (size_t)r0) * 4;
		size_t yn = ((size_t)(ntok - 1) * (size_t)rows + (size_t)nr) * 4;
		mm_dispatch(v, w, (size_t)r0 * w->nb[1], (size_t)nr * w->nb[1], nr, a, ntok, y, ys, yn, (uint32_t)rows,
			    1, 0, 0, 0);
	}
}

/* ---- every product ---- */

/* y[i] = w[i] x for n prepared weights sharing x (f32 [ntok][cols]),
 * operands checked */
static void products(struct vk *v, int n, const struct tern_buf *const *w, const struct tern_buf *x,
		     struct tern_buf *const *y)
{
	int64_t cols = x->ne[0], ntok = x->ne[1];
	if (v->lost)
		return;
	if (ntok == 1) {
		/* one scratch row per activation type and form: Q, K and V of
		 * mixed types each find theirs (and mat_vec_n's bits are
		 * mat_vec's); the float forms' three rows first, then the int
		 * forms' (mat_prepare reserves four float rows) */
		struct act acts[ACT_KINDS][2];
		bool have[ACT_KINDS][2] = {{false}};
		size_t qrow = act_stride(QT_Q4_1, cols, false), irow = act_stride(QT_Q4_1, cols, true);
		for (int i = 0; i < n; i++) {
			int k = act_kind(w[i]->type), f = use_int(v, w[i]->type);
			size_t at = f ? 3 * qrow + (size_t)k * irow : (size_t)k * qrow;
			if (!have[k][f] && !act_of(v, w[i]->type, x, 0, 1, cols, at, f, &acts[k][f]))
				return;
			have[k][f] = true;
		}
		bool done[TERN_MAT_VEC_N] = {false};
		for (int i = 0; i < n; i++) {
			if (done[i])
				continue;
			const struct act *a = &acts[act_kind(w[i]->type)][use_int(v, w[i]->type)];
			if (w[i]->nb[1] * (size_t)w[i]->ne[1] > bind_max(v)) {
				mv_pieces(v, w[i], a, y[i]);
				done[i] = true;
				continue;
			}
			/* the weights of this type that fit a binding: one dispatch */
			const struct tern_buf *gw[MV_MAX_W];
			struct tern_buf *gy[MV_MAX_W];
			int64_t r0[MV_MAX_W] = {0}, nr[MV_MAX_W];
			int g = 0;
			for (int j = i; j < n && g < MV_MAX_W; j++)
				if (!done[j] && w[j]->type == w[i]->type &&
				    w[j]->nb[1] * (size_t)w[j]->ne[1] <= bind_max(v)) {
					gw[g] = w[j];
					gy[g] = y[j];
					nr[g++] = w[j]->ne[1];
					done[j] = true;
				}
			mv_dispatch(v, g, gw, r0, nr, a, gy);
		}
		return;
	}
	for (int i = 0; i < n; i++) {
		int64_t run = token_run(v, w[i]->type, cols, w[i]->ne[1], ntok, 1);
		if (run < 1) {
			tern_host_fail(&v->be, "mat_mul: a token of %lld columns does not fit the device's bindings",
				      (long long)cols);
			return;
		}
		for (int64_t t0 = 0; t0 < ntok; t0 += run) {
			int64_t nt = ntok - t0 < run ? ntok - t0 : run;
			struct act a;
			if (!act_of(v, w[i]->type, x, t0, nt, cols, 0, false, &a))
				return;
			mm_run(v, w[i], &a, nt, y[i], t0);
		}
	}
}

static void vk_product(struct tern_backend *be, int n_w, const struct tern_buf *const *w, const struct tern_buf *x,
		       struct tern_buf *const *y)
{
	if (tern_host_product_args(be, n_w, w, x, y))
		products(vk_of(be), n_w, w, x, y);
}

/* ggml's CPU order of the products: not this backend's (lib/backend.h,
 * TERN_BACKEND_GGML_NUMERICS) */
static void vk_mat_mul_ggml(struct tern_backend *be, const struct tern_buf *w, const struct tern_buf *x,
			    struct tern_buf *y)
{
	(void)w, (void)x, (void)y;
	tern_host_ggml_ok(be, "mat_mul_ggml");
}

/* ---- per head (MLA) ---- */

static void vk_mat_mul_heads(struct tern_backend *be, const struct tern_buf *w, const struct tern_buf *x,
			     struct tern_buf *y)
{
	struct vk *v = vk_of(be);
	if (!tern_host_heads_args(be, w, x, y) || v->lost)
		return;
	int64_t cols = w->ne[0], rows = w->ne[1], nh = w->ne[2], ntok = x->ne[2];
	size_t wbytes = (size_t)(nh - 1) * w->nb[2] + (size_t)rows * w->nb[1];
	int64_t run = token_run(v, w->type, cols, rows * nh, ntok, (size_t)nh);
	if (run < 1 || wbytes > bind_max(v)) {
		tern_host_fail(be, "mat_mul_heads: %lld heads of %lld x %lld do not fit the device's bindings",
			      (long long)nh, (long long)rows, (long long)cols);
		return;
	}
	for (int64_t t0 = 0; t0 < ntok; t0 += run) {
		int64_t nt = ntok - t0 < run ? ntok - t0 : run;
		struct act a;
		/* token t's head h is activation row t nh + h */
		if (!act_of(v, w->type, x, t0 * nh, nt * nh, cols, 0, false, &a))
			return;
		uint32_t xz = a.stride;
		a.stride *= (uint32_t)nh;
		size_t ys = (size_t)(t0 * nh * rows) * 4, yn = (size_t)(nt * nh * rows) * 4;
		mm_dispatch(v, w, 0, wbytes, rows, &a, nt, y, ys, yn, (uint32_t)(nh * rows), (uint32_t)nh,
			    (uint32_t)w->nb[2], xz, (uint32_t)rows);
	}
}

/* ---- the experts (MoE) ---- */

/* tokens of a batch one mul_mm_id dispatch gathers per expert (its
 * MAX_SLOTS: a token selects an expert at most once) */
#define MM_ID_MAX_SLOTS 1024

/* A batch: per run of tokens, per piece of the stack, a workgroup per
 * (tile of 64 rows, expert) that gathers the expert's slots and multiplies
 * them as a GEMM (mul_mm_id.comp). */
static void mm_id(struct vk *v, const struct tern_buf *w, const struct tern_buf *x, const struct tern_buf *ids,
		  const struct tern_buf *b, struct tern_buf *y, int64_t per, int64_t run)
{
	int64_t cols = w->ne[0], rows = w->ne[1], n_exp = w->ne[2], k = ids->ne[0], ntok = ids->ne[1];
	int64_t n_x = x->ne[1];
	size_t ebytes = (size_t)(rows - 1) * w->nb[1] + quant_row_size(w->type, (uint64_t)cols, NULL);
	for (int64_t t0 = 0; t0 < ntok; t0 += run) {
		int64_t nt = ntok - t0 < run ? ntok - t0 : run;
		struct act a;
		if (!act_of(v, w->type, x, t0 * n_x, nt * n_x, cols, 0, false, &a))
			return;
		/* the tile width for the tokens an expert takes on average */
		uint32_t tn = mm_tn((nt * k + n_exp - 1) / n_exp), spec[4] = {tn, 0, 0, 0};
		uint32_t pi = pipe_spec(v, "mul_mm_id", w->type, MM_WG, spec);
		if (pi == UINT32_MAX)
			return;
		struct {
			uint32_t rows, cols, k, n_x, nslots, ow, nb1, nb2, ox, xstride, sofs, oi, ob, oy, e0, n_exp, has_bias;
		} pc = {(uint32_t)rows, (uint32_t)cols, (uint32_t)k, (uint32_t)n_x, (uint32_t)(nt * k), 0, (uint32_t)w->nb[1],
			(uint32_t)w->nb[2], a.o, a.stride, a.sofs, 0, 0, 0, 0, (uint32_t)n_exp, b ? 1u : 0u};
		struct vk_range r[VK_MAX_BINDINGS];
		r[1] = a.r;
		if (!vk_range_bytes(v, ids, (size_t)(t0 * k) * 4, (size_t)(nt * k) * 4, 4, &r[2], &pc.oi) ||
		    !vk_range_of(v, b ? b : ids, 4, &r[3], &pc.ob) ||
		    !vk_range_bytes(v, y, (size_t)(t0 * k * rows) * 4, (size_t)(nt * k * rows) * 4, 4, &r[4], &pc.oy))
			return;
		for (int64_t e0 = 0; e0 < n_exp; e0 += per) {
			int64_t ne = n_exp - e0 < per ? n_exp - e0 : per;
			if (!vk_range_bytes(v, w, (size_t)e0 * w->nb[2], (size_t)(ne - 1) * w->nb[2] + ebytes, 1, &r[0],
					    &pc.ow))
				return;
			pc.e0 = (uint32_t)e0;
			uint32_t nb = with_grids(v, w->type, r, 5);
			if (!nb)
				return;
			vk_dispatch(v, pi, nb, r, 1u << 4, &pc, sizeof pc, (uint32_t)((rows + MM_BM - 1) / MM_BM), 1,
				    (uint32_t)ne);
		}
	}
}

static void vk_mat_mul_id(struct tern_backend *be, const struct tern_buf *w, const struct tern_buf *x,
			  const struct tern_buf *ids, const struct tern_buf *b, struct tern_buf *y)
{
	struct vk *v = vk_of(be);
	if (!tern_host_mat_mul_id_args(be, w, x, ids, b, y) || v->lost)
		return;
	int64_t cols = w->ne[0], rows = w->ne[1], n_exp = w->ne[2], k = ids->ne[0], ntok = ids->ne[1];
	int64_t n_x = x->ne[1];
	/* experts per piece of the stack */
	size_t ebytes = (size_t)(rows - 1) * w->nb[1] + quant_row_size(w->type, (uint64_t)cols, NULL);
	int64_t per = ebytes > bind_max(v) ? 0 : 1 + (int64_t)((bind_max(v) - ebytes) / w->nb[2]);
	int64_t run = token_run(v, w->type, cols, rows * k, ntok, (size_t)n_x);
	if (per < 1 || run < 1) {
		tern_host_fail(be, "mat_mul_id: experts of %lld x %lld do not fit the device's bindings", (long long)rows,
			      (long long)cols);
		return;
	}
	if (ntok > 1) {
		mm_id(v, w, x, ids, b, y, per, run < MM_ID_MAX_SLOTS ? run : MM_ID_MAX_SLOTS);
		return;
	}
	/* one token: k mat-vecs, workgroup z the slot */
	bool ints = use_int(v, w->type);
	uint32_t pi = pipe_of(v, ints ? "mul_mat_vec_id_dot" : "mul_mat_vec_id", w->type, MV_WG), gx, gy;
	if (pi == UINT32_MAX)
		return;
	vk_groups((uint64_t)(rows + MV_NR - 1) / MV_NR, &gx, &gy);
	for (int64_t t0 = 0; t0 < ntok; t0 += run) {
		int64_t nt = ntok - t0 < run ? ntok - t0 : run;
		struct act a;
		if (!act_of(v, w->type, x, t0 * n_x, nt * n_x, cols, 0, ints, &a))
			return;
		struct {
			uint32_t cols, rows, k, n_x, ow, nb1, nb2, ox, xstride, sofs, oi, ob, oy, e0, e1, n_exp, has_bias;
		} pc = {(uint32_t)cols, (uint32_t)rows, (uint32_t)k, (uint32_t)n_x, 0, (uint32_t)w->nb[1], (uint32_t)w->nb[2],
			a.o, a.stride, a.sofs, 0, 0, 0, 0, 0, (uint32_t)n_exp, b ? 1u : 0u};
		struct vk_range r[VK_MAX_BINDINGS];
		r[1] = a.r;
		if (!vk_range_bytes(v, ids, (size_t)(t0 * k) * 4, (size_t)(nt * k) * 4, 4, &r[2], &pc.oi) ||
		    !vk_range_of(v, b ? b : ids, 4, &r[3], &pc.ob) ||
		    !vk_range_bytes(v, y, (size_t)(t0 * k * rows) * 4, (size_t)(nt * k * rows) * 4, 4, &r[4], &pc.oy))
			return;
		for (int64_t e0 = 0; e0 < n_exp; e0 += per) {
			int64_t ne = n_exp - e0 < per ? n_exp - e0 : per;
			size_t wb = (size_t)(ne - 1) * w->nb[2] + ebytes;
			if (!vk_range_bytes(v, w, (size_t)e0 * w->nb[2], wb, 1, &r[0], &pc.ow))
				return;
			pc.e0 = (uint32_t)e0;
			pc.e1 = (uint32_t)(e0 + ne);
			uint32_t nb = with_grids(v, w->type, r, 5);
			if (!nb)
				return;
			vk_dispatch(v, pi, nb, r, 1u << 4, &pc, sizeof pc, gx, gy, (uint32_t)(nt * k));
		}
	}
}

/* ---- get_rows ---- */

static void vk_get_rows(struct tern_backend *be, const struct tern_buf *w, const struct tern_buf *ids,
			struct tern_buf *y)
{
	struct vk *v = vk_of(be);
	if (!tern_host_get_rows_args(be, w, ids, y) || v->lost)
		return;
	uint32_t t = w->type;
	const struct quant_type_info *ti = quant_type_info(t);
	if (t == QT_I8 || t == QT_I16 || t == QT_I32 || t == QT_I64 || t == QT_F64 || ti->blck > 256) {
		tern_host_fail(be, "get_rows: no decoder for %s on this backend", quant_type_name(t));
		return;
	}
	int64_t cols = w->ne[0], nrows = w->ne[1], ntok = ids->ne[0];
	uint32_t unit = ti->blck == 1 ? 1 : 8;
	int64_t per = (int64_t)(bind_max(v) / w->nb[1]);
	if (per < 1 || (size_t)(cols * ntok) * 4 > bind_max(v)) {
		tern_host_fail(be, "get_rows: %lld rows of %lld do not fit the device's bindings", (long long)ntok,
			      (long long)cols);
		return;
	}
	uint32_t pi = pipe_of(v, "get_rows", t, 64), gx, gy;
	if (pi == UINT32_MAX)
		return;
	struct {
		uint32_t cols, ntok, ow, nb1, oi, oy, ystride, r0, r1, nrows;
	} pc = {(uint32_t)cols, (uint32_t)ntok, 0, (uint32_t)w->nb[1], 0, 0, (uint32_t)cols, 0, 0, (uint32_t)nrows};
	struct vk_range r[VK_MAX_BINDINGS];
	if (!vk_range_of(v, ids, 4, &r[1], &pc.oi) || !vk_range_of(v, y, 4, &r[2], &pc.oy))
		return;
	vk_groups(((uint64_t)ntok * (uint64_t)(cols / unit) + 63) / 64, &gx, &gy);
	for (int64_t r0 = 0; r0 < nrows; r0 += per) {
		int64_t nr = nrows - r0 < per ? nrows - r0 : per;
		if (!vk_range_bytes(v, w, (size_t)r0 * w->nb[1], (size_t)nr * w->nb[1], 1, &r[0], &pc.ow))
			return;
		pc.r0 = (uint32_t)r0;
		pc.r1 = (uint32_t)(r0 + nr);
		uint32_t nb = with_grids(v, t, r, 3);
		if (!nb)
			return;
		vk_dispatch(v, pi, nb, r, 4, &pc, sizeof pc, gx, gy, 1);
	}
}

/* ---- copy into f32 ---- */

/* What the copy shader does not convert (vk_ops.c vk_copy, its operands
 * checked): any type the decoders know into f32, through them. */
void vk_copy_dequant(struct vk *v, const struct tern_buf *src, struct tern_buf *dst)
{
	uint32_t t = src->type;
	const struct quant_type_info *ti = quant_type_info(t);
	if (v->lost)
		return;
	if (dst->type != QT_F32 || t == QT_I8 || t == QT_I16 || t == QT_I32 || t == QT_I64 || t == QT_F64 ||
	    ti->blck > 256) {
		tern_host_fail(&v->be, "copy: %s to %s is not on this backend", quant_type_name(t),
			      quant_type_name(dst->type));
		return;
	}
	int64_t cols = src->ne[0], nrows = src->ne[1] * src->ne[2] * src->ne[3];
	uint32_t unit = ti->blck == 1 ? 1 : 8;
	struct {
		uint32_t cols, nrows, os, s_ne1, s_ne2, s_nb1, s_nb2, s_nb3, od, d_ne1, d_ne2, d_nb1, d_nb2, d_nb3;
	} pc = {(uint32_t)cols, (uint32_t)nrows, 0, (uint32_t)src->ne[1], (uint32_t)src->ne[2], (uint32_t)src->nb[1],
		(uint32_t)src->nb[2], (uint32_t)src->nb[3], 0, (uint32_t)dst->ne[1], (uint32_t)dst->ne[2],
		(uint32_t)(dst->nb[1] / 4), (uint32_t)(dst->nb[2] / 4), (uint32_t)(dst->nb[3] / 4)};
	struct vk_range r[VK_MAX_BINDINGS];
	if (!vk_range_of(v, src, 1, &r[0], &pc.os) || !vk_range_of(v, dst, 4, &r[1], &pc.od))
		return;
	uint32_t pi = pipe_of(v, "dequant_copy", t, 64), gx, gy, nb = with_grids(v, t, r, 2);
	if (pi == UINT32_MAX || !nb)
		return;
	vk_groups(((uint64_t)nrows * (uint64_t)(cols / unit) + 63) / 64, &gx, &gy);
	vk_dispatch(v, pi, nb, r, 2, &pc, sizeof pc, gx, gy, 1);
}

/* ---- load time ---- */

int vk_mat_prepare(struct tern_backend *be, struct tern_buf *w, tern_err *err)
{
	struct vk *v = vk_of(be);
	int rc = tern_host_weight_shape(be, w, err);
	if (rc)
		return rc;
	if (!quant_is_weight_type(w->type))
		return tern_errf(err, TERN_EUNSUPPORTED, "%s: no product for weights of type %s", be->name,
				 quant_type_name(w->type));
	uint32_t at = quant_vec_dot_type(w->type);
	bool ok = true;
	quant_row_size(at, (uint64_t)w->ne[0], &ok);
	if (!ok || w->ne[0] > INT32_MAX / 2)
		return tern_errf(err, TERN_EINVAL, "%s: rows of %lld do not fit blocks of %s", be->name,
				 (long long)w->ne[0], quant_type_name(at));
	if (w->nb[1] > bind_max(v))
		return tern_errf(err, TERN_EUNSUPPORTED, "%s: a row of %zu bytes exceeds the device's binding range",
				 be->name, w->nb[1]);
	/* the scratch: a batch of max_tokens (a stack: one token's slots at
	 * least; one token: four rows, products' three float forms and the
	 * int forms), within a binding; larger batches run in pieces */
	if (quantized(w->type)) {
		size_t row = act_stride(QT_Q4_1, w->ne[0], false);
		size_t need = row * (size_t)(be->max_tokens > 4 ? be->max_tokens : 4);
		if (w->ne[2] > 1 && need < row * TERN_MOE_MAX_USED)
			need = row * TERN_MOE_MAX_USED;
		size_t most = (bind_max(v) < SCRATCH_MAX ? bind_max(v) : SCRATCH_MAX) / 4;
		if (need > most)
			need = most > 4 * row ? most : 4 * row;
		rc = scratch_reserve(v, need, err);
		if (rc)
			return rc;
	}
	/* the pipelines, made now rather than at the first step (the GEMM's
	 * narrowest and widest tiles; the middle one at its first use) */
	const uint32_t spec1[4] = {1, 0, 0, 0}, spec4[4] = {4, 0, 0, 0};
	const uint32_t cm1[4] = {1, MM_CM_SPLIT, 0, 0}, cm4[4] = {4, MM_CM_SPLIT, 0, 0};
	bool built = vk_pipe(v, "actq", 256, NULL) != UINT32_MAX &&
		     pipe_spec(v, "mul_mat_vec", w->type, MV_WG, spec1) != UINT32_MAX &&
		     (!use_int(v, w->type) || pipe_spec(v, "mul_mat_vec_dot", w->type, MV_WG, spec1) != UINT32_MAX) &&
		     (v->coop ? pipe_spec(v, "mul_mm_cm", w->type, MM_CM_WG, cm1) != UINT32_MAX &&
				      pipe_spec(v, "mul_mm_cm", w->type, MM_CM_WG, cm4) != UINT32_MAX
			      : pipe_spec(v, "mul_mm", w->type, MM_WG, spec1) != UINT32_MAX &&
					pipe_spec(v, "mul_mm", w->type, MM_WG, spec4) != UINT32_MAX) &&
		     (w->ne[2] == 1 || (pipe_of(v, "mul_mat_vec_id", w->type, MV_WG) != UINT32_MAX &&
					  (!use_int(v, w->type) ||
					   pipe_of(v, "mul_mat_vec_id_dot", w->type, MV_WG) != UINT32_MAX) &&
					  pipe_spec(v, "mul_mm_id", w->type, MM_WG, spec1) != UINT32_MAX));
	if (!built)
		return tern_errf(err, TERN_EIO, "%s: the %s products' shaders failed to build", be->name,
				 quant_type_name(w->type));
	w->prep = &prepared[w->type];
	return 0;
}

/* ---- the cooperative-matrix GEMM's check ---- */

/* NMSE of y against ref over n values */
static double nmse_of(const float *y, const float *ref, size_t n)
{
	double num = 0, den = 0;
	for (size_t i = 0; i < n; i++) {
		double d = (double)y[i] - ref[i];
		num += d * d;
		den += (double)ref[i] * ref[i];
	}
	return den > 0 ? num / den : num;
}

/* One Q4_1 weight of 80 rows (a partial tile) by 256 columns: its
 * decoding, the block minima's path and the tiles' edges; 37 tokens (the
 * widest tile, partly filled) and 5 (the narrowest). The threshold is the
 * op test's for the block types (tests/test_backend_ops.c nmse_max): the
 * split products agree with the shader's f32 sums to ~1e-12; a wrong
 * layout or a broken driver gives 1e-2 and more. */
void vk_coopmat_check(struct vk *v)
{
	struct tern_backend *be = &v->be;
	enum { COLS = 256, ROWS = 80, NT = 37 };
	size_t rs = quant_row_size(QT_Q4_1, COLS, NULL);
	float *wf = malloc(sizeof(float) * COLS * ROWS), *xf = malloc(sizeof(float) * COLS * NT);
	float *y[2] = {malloc(sizeof(float) * ROWS * NT), malloc(sizeof(float) * ROWS * NT)};
	uint8_t *wq = malloc(rs * ROWS);
	struct tern_buf w = {0}, x = {0}, yb = {0};
	tern_err e = {0};
	const char *why = NULL;
	double worst = 0;
	if (!wf || !xf || !y[0] || !y[1] || !wq) {
		why = "out of memory";
		goto out;
	}
	uint32_t s = 12345;
	for (size_t i = 0; i < (size_t)COLS * ROWS; i++) {
		s = s * 1664525u + 1013904223u;
		wf[i] = (float)((int)(s >> 8) % 2001 - 1000) * 1e-5f; /* -0.01 .. 0.01, as real weights */
	}
	for (size_t i = 0; i < (size_t)COLS * NT; i++) {
		s = s * 1664525u + 1013904223u;
		xf[i] = (float)((int)(s >> 8) % 2001 - 1000) * 2e-3f;
	}
	for (int r = 0; r < ROWS; r++)
		quant_quantize_row(QT_Q4_1, wf + (size_t)r * COLS, wq + (size_t)r * rs, COLS);
	struct tern_tensor_view tv = {.n_dims = 2, .ne = {COLS, ROWS, 1, 1}, .type = QT_Q4_1, .nbytes = rs * ROWS,
				      .data = wq};
	int64_t xne[2] = {COLS, NT}, yne[2] = {ROWS, NT};
	if (be->buf_weight(be, &w, &tv, &e) || be->mat_prepare(be, &w, &e) ||
	    be->buf_alloc(be, &x, QT_F32, 2, xne, &e) || be->buf_alloc(be, &yb, QT_F32, 2, yne, &e)) {
		why = e.msg;
		goto out;
	}
	be->upload(be, &x, 0, xf, sizeof(float) * COLS * NT);
	static const int64_t tokens[2] = {NT, 5};
	for (int c = 0; c < 2 && !why; c++) {
		struct tern_buf xv = tern_buf_rows(&x, 0, tokens[c]), yv = tern_buf_rows(&yb, 0, tokens[c]);
		const struct tern_buf *wp[1] = {&w};
		struct tern_buf *yp[1] = {&yv};
		for (int k = 0; k < 2; k++) {
			v->coop = k == 0;
			be->product(be, 1, wp, &xv, yp);
			be->download(be, &yv, 0, y[k], sizeof(float) * ROWS * (size_t)tokens[c]);
			if (be->sync(be, &e)) {
				why = e.msg;
				break;
			}
		}
		double d = why ? 0 : nmse_of(y[0], y[1], (size_t)ROWS * (size_t)tokens[c]);
		worst = d > worst || d != d ? d : worst;
	}
	char msg[96];
	if (!why && !(worst <= 1e-8)) {
		snprintf(msg, sizeof msg, "NMSE %.3g against the shader GEMM", worst);
		why = msg;
	}
out:
	v->coop = !why;
	if (why) {
		fprintf(stderr, "%s: the cooperative-matrix GEMM is not used: %s\n", v->info.name, why);
		/* the failure's errors are this check's, not the caller's: the
		 * first sync reports the op's, the next the validation layer's */
		for (int i = 0; i < 3; i++) {
			tern_err gone = {0};
			if (!be->sync(be, &gone))
				break;
		}
	}
	be->buf_free(be, &w);
	be->buf_free(be, &x);
	be->buf_free(be, &yb);
	free(wf);
	free(xf);
	free(y[0]);
	free(y[1]);
	free(wq);
}

void vk_products_free(struct vk *v)
{
	struct vk_products *p = prod_of(v);
	if (!p)
		return;
	if (p->scratch.mem)
		v->be.buf_free(&v->be, &p->scratch);
	if (p->grids.mem)
		v->be.buf_free(&v->be, &p->grids);
	free(p);
	v->prod = NULL;
}

void vk_products_table(struct tern_backend *be)
{
	struct vk *v = vk_of(be);
	struct vk_products *p = calloc(1, sizeof *p);
	v->prod = p;
	if (p) {
		/* a failure here leaves the products to report it at their first call */
		tern_err e = {0};
		scratch_reserve(v, SCRATCH_MIN / 4, &e);
		int64_t ne[1] = {GRID_WORDS};
		uint32_t *g = malloc(GRID_WORDS * 4);
		if (g && !be->buf_alloc(be, &p->grids, QT_I32, 1, ne, &e)) {
			grid_words(g);
			be->upload(be, &p->grids, 0, g, GRID_WORDS * 4);
			p->grids.flags |= TERN_BUF_READONLY;
		}
		free(g);
	}
	be->product = vk_product;
	be->mat_mul_ggml = vk_mat_mul_ggml;
	be->mat_mul_heads = vk_mat_mul_heads;
	be->mat_mul_id = vk_mat_mul_id;
	be->get_rows = vk_get_rows;
}
