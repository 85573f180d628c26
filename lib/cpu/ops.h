/* ops.h - the SIMD kernels of the optimized CPU backend's non-product ops
 * (attention, norms, RoPE, activations, add, scale, softmax), one table per
 * instruction set. The kernels are written once, in lib/cpu/ops_kern.inc,
 * over a small vector layer, and compiled three times: scalar (ops.c),
 * AVX2 + F16C (ops_avx2.c) and AVX-512 (ops_avx512.c); cpu_ops() returns
 * the table of the ISA quant_isa() reports. Internal to lib/cpu.
 *
 * Every kernel's result depends only on its inputs and the ISA, never on
 * how the caller splits the rows over threads: tails of rows go through the
 * same vector code (padded), and reductions run in a fixed order per row. */
#ifndef TERN_CPU_OPS_H
#define TERN_CPU_OPS_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/backend.h"

/* Attention works on units of up to CPU_ATTN_ROWS query rows of one KV
 * head (the group's heads of consecutive tokens, so that each K/V tile is
 * loaded once for all of them) against tiles of CPU_ATTN_TILE keys. The
 * masks compare positions as floats in the query lanes: exact below 2^24,
 * far beyond any context. */
#define CPU_ATTN_ROWS 64
#define CPU_ATTN_TILE 64
#define CPU_ATTN_DEC_ROWS 8
/* floats of one thread's attention workspace */
#define CPU_ATTN_WS_FLOATS                                                                                           \
	(2 * TERN_ATTN_MAX_HEAD_DIM * CPU_ATTN_ROWS + CPU_ATTN_TILE * CPU_ATTN_ROWS +                                \
	 2 * CPU_ATTN_TILE * TERN_ATTN_MAX_HEAD_DIM + 4 * CPU_ATTN_ROWS)

struct cpu_attn_args {
	const float *q;            /* [ntok][nh][hd] */
	float *y;                  /* [ntok][nh][hdv] */
	const uint8_t *k, *v;      /* caches: element 0 */
	size_t k_head, k_pos;      /* bytes from head to head, position to position */
	size_t v_head, v_pos;
	uint32_t ktype, vtype;     /* f32, f16, q8_0, or any type quant/ decodes */
	const int32_t *pos;        /* [ntok]; a token outside 0..n_ctx-1 is skipped */
	int64_t hd, hdv, nh, nkv, ntok, group, n_ctx; /* hd: of Q and K; hdv: of V (MLA: narrower) */
	float scale, softcap;
	int32_t window;
	int64_t unit_rows;         /* query rows (token x group head) per unit */
	int64_t n_row_units;       /* units per KV head */
	/* keys split into chunks (one token only): n_chunks > 1 writes each
	 * chunk's unnormalized state to part, combined by cpu_attn_combine */
	int64_t n_chunks, chunk;
	float *part;
	const float *sinks;        /* [nh] sink logits (struct tern_attn), or NULL */
	bool ggml;                 /* attn_f16acc: struct tern_attn's ggml */
};

/* y = o / l, or with a sink logit s the same with exp(s - m) added to the
 * denominator (o and l are relative to the running maximum m) */
static inline float cpu_attn_inv(const struct cpu_attn_args *a, int64_t h, float m, float l)
{
	if (!a->sinks)
		return 1.0f / l;
	float s = a->sinks[h];
	if (s > m) /* rescale to the sink's maximum: nothing overflows */
		return expf(m - s) / (l * expf(m - s) + 1.0f);
	return 1.0f / (l + expf(s - m));
}

/* flags or-ed into norm_row's kind and rope_head's mode */
enum { CPU_NORM_GGML = 1 << 4, CPU_ROPE_GGML = 1 << 4 };

struct cpu_ops {
	/* Rows [u * unit_rows, ...) of KV head kh against key chunk c
	 * (0 when unsplit); ws: CPU_ATTN_WS_FLOATS floats, 64-byte aligned. */
	void (*attn_unit)(const struct cpu_attn_args *a, int64_t kh, int64_t u, int64_t c, float *ws);
	/* The same for one token (ntok 1) whose group has at most
	 * CPU_ATTN_DEC_ROWS heads, hd and hdv multiples of 16: KV head kh,
	 * chunk c. */
	void (*attn_dec)(const struct cpu_attn_args *a, int64_t kh, int64_t c, float *ws);
	/* Query rows [r0, r1) (row = token * nh + head) in ggml's f16
	 * flash attention (struct tern_attn's f16_split: split chunks), or
	 * with split 0 (f16_split 0 and ggml) as its tiled flash attention
	 * of 64 tokens or more. */
	void (*attn_f16acc)(const struct cpu_attn_args *a, int64_t r0, int64_t r1, int split);
	/* One row: x += r (r may be NULL), then y = norm(x) * w + b (w, b
	 * may be NULL); kind TERN_NORM_*, | CPU_NORM_GGML for struct
	 * tern_norm's ggml. y may be x. */
	void (*norm_row)(float *x, const float *r, const float *w, const float *b, float *y, int64_t n, float eps,
			 int kind);
	/* One head of RoPE: pairs j < half turn by (cs[j], sn[j]); mode
	 * TERN_ROPE_*, | CPU_ROPE_GGML for struct tern_rope's ggml. The
	 * normal ordering also reads ce and so: (cs0, cs0, cs1, cs1, ...) and
	 * (-sn0, sn0, -sn1, sn1, ...), with CPU_ROPE_GGML (cs0, sn0, cs1,
	 * sn1, ...) and (-sn0, cs0, -sn1, cs1, ...). */
	void (*rope_head)(float *x, const float *cs, const float *sn, const float *ce, const float *so, int64_t half,
			  int mode);
	/* y = ggml's f16-table GELU of x (TERN_UNARY_GELU_F16: 0 for x <=
	 * -10, x for x >= 10, else tab[the f16 bits of x]); tab is
	 * cpu_host_gelu_f16_table() */
	void (*gelu_f16)(const float *x, float *y, int64_t n, const float *tab);
	/* y = act(a) * b (b NULL: act(a)), act silu (0) or gelu tanh (1) */
	void (*act)(const float *a, const float *b, float *y, int64_t n, int gelu);
	void (*add)(const float *a, const float *b, float *y, int64_t n);
	void (*scale)(const float *a, float *y, int64_t n, float s);
	void (*softmax_row)(const float *a, float *y, int64_t n);
	/* A row of n elements to or from a type quant/ encodes or decodes:
	 * the same bytes and floats as quant_quantize_row and
	 * quant_dequantize_row (f16 and q8_0 on vectors). */
	void (*encode_row)(uint32_t type, const float *x, uint8_t *dst, int64_t n);
	void (*decode_row)(uint32_t type, const uint8_t *src, float *dst, int64_t n);
};

/* The table of the current quant_isa(); of a given enum quant_isa (one
 * the CPU runs). */
const struct cpu_ops *cpu_ops(void);
const struct cpu_ops *cpu_ops_isa(int isa);

/* Combine the chunks of a split attention (a->n_chunks > 1) in chunk
 * order, rows [h0, h1) of the heads. */
void cpu_attn_combine(const struct cpu_attn_args *a, int64_t h0, int64_t h1);

void cpu_ops_avx2_init(struct cpu_ops *t);
void cpu_ops_avx512_init(struct cpu_ops *t);

#endif
