/* model.c - load a GGUF language model into a config / weights split.
 *
 * One descriptor per architecture (the `archs` table below) says which
 * tensors a block has, which of them are required, and the few choices
 * that differ between families (norm, activation, RoPE ordering, sliding
 * windows, embedding scale). The loader walks that description: every
 * tensor is looked up by its llama.cpp name, its shape checked against the
 * one the hyperparameters imply and its type against what the products
 * can use. The facts (tensor names, rope types, gemma3's 5 local : 1
 * global pattern and local RoPE base, gemma2's alternating windows and
 * soft-cap defaults, phi2's biases, phi3's fused tensors and LongRoPE,
 * YaRN for every family, deepseek2's latent attention and its YaRN
 * attention scale) follow
 * llama.cpp's llama-arch.cpp, llama-model.cpp, src/models/ (deepseek2.cpp
 * among them) and llama-context.cpp. */
#include "lib/llm/model.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/backend.h"
#include "lib/core/quote.h"
#include "quant/quant.h"

/* ---- the tensors of a block ------------------------------------------------ */

enum slot {
	S_ATTN_NORM, S_WQ, S_WK, S_WV, S_WO, S_BQ, S_BK, S_BV, S_BO, S_Q_NORM, S_K_NORM, S_ATTN_POST_NORM,
	S_FFN_NORM, S_FFN_GATE, S_FFN_UP, S_FFN_DOWN, S_FFN_POST_NORM,
	/* mixture of experts */
	S_ATTN_SINKS, S_FFN_NORM_PA, S_GATE_INP, S_GATE_INP_B, S_EXP_PROBS_B, S_GATE_EXPS, S_UP_EXPS, S_DOWN_EXPS,
	S_GATE_EXPS_B, S_UP_EXPS_B, S_DOWN_EXPS_B, S_GATE_INP_SHEXP, S_GATE_SHEXP, S_UP_SHEXP, S_DOWN_SHEXP,
	/* gemma / phi families */
	S_ATTN_NORM_B, S_FFN_UP_B, S_FFN_DOWN_B, S_WQKV, S_BQKV, S_FFN_GATE_UP,
	/* deepseek2's merged expert gate and up */
	S_GATE_UP_EXPS,
	S_COUNT
};
_Static_assert(S_COUNT <= 64, "slot masks are 64 bits");

/* the sizes a shape is made of, evaluated per layer */
enum dim {
	D_ONE, D_EMBD, D_Q, D_KV, D_V, D_O, D_HEAD, D_FF, D_NHEAD, D_EXP, D_FF_EXP, D_FF_SHEXP, D_QKV, D_FF2, D_FF_EXP2,
	D_COUNT
};

struct slot_info {
	const char *name;   /* after "blk.N." */
	size_t offset;      /* of the pointer in struct tern_model_layer */
	unsigned char ne0, ne1; /* enum dim */
	bool matrix;        /* used in a product (else an f32 vector) */
	unsigned char ne2;  /* enum dim: D_EXP for a stack of experts, else D_ONE */
};

#define SLOT(s, n, field, a, b, m) [s] = {n, offsetof(struct tern_model_layer, field), a, b, m, D_ONE}
#define SLOT3(s, n, field, a, b, c, m) [s] = {n, offsetof(struct tern_model_layer, field), a, b, m, c}
static const struct slot_info slots[S_COUNT] = {
	SLOT(S_ATTN_NORM, "attn_norm.weight", attn_norm, D_EMBD, D_ONE, false),
	SLOT(S_WQ, "attn_q.weight", wq, D_EMBD, D_Q, true),
	SLOT(S_WK, "attn_k.weight", wk, D_EMBD, D_KV, true),
	SLOT(S_WV, "attn_v.weight", wv, D_EMBD, D_V, true),
	SLOT(S_WO, "attn_output.weight", wo, D_O, D_EMBD, true),
	SLOT(S_BQ, "attn_q.bias", bq, D_Q, D_ONE, false),
	SLOT(S_BK, "attn_k.bias", bk, D_KV, D_ONE, false),
	SLOT(S_BV, "attn_v.bias", bv, D_V, D_ONE, false),
	SLOT(S_BO, "attn_output.bias", bo, D_EMBD, D_ONE, false),
	SLOT(S_Q_NORM, "attn_q_norm.weight", q_norm, D_HEAD, D_ONE, false),
	SLOT(S_K_NORM, "attn_k_norm.weight", k_norm, D_HEAD, D_ONE, false),
	SLOT(S_ATTN_POST_NORM, "post_attention_norm.weight", attn_post_norm, D_EMBD, D_ONE, false),
	SLOT(S_FFN_NORM, "ffn_norm.weight", ffn_norm, D_EMBD, D_ONE, false),
	SLOT(S_FFN_GATE, "ffn_gate.weight", ffn_gate, D_EMBD, D_FF, true),
	SLOT(S_FFN_UP, "ffn_up.weight", ffn_up, D_EMBD, D_FF, true),
	SLOT(S_FFN_DOWN, "ffn_down.weight", ffn_down, D_FF, D_EMBD, true),
	SLOT(S_FFN_POST_NORM, "post_ffw_norm.weight", ffn_post_norm, D_EMBD, D_ONE, false),
	SLOT(S_ATTN_SINKS, "attn_sinks.weight", attn_sinks, D_NHEAD, D_ONE, false),
	/* gpt-oss: the norm before the FFN carries the post-attention name */
	SLOT(S_FFN_NORM_PA, "post_attention_norm.weight", ffn_norm, D_EMBD, D_ONE, false),
	SLOT(S_GATE_INP, "ffn_gate_inp.weight", ffn_gate_inp, D_EMBD, D_EXP, true),
	SLOT(S_GATE_INP_B, "ffn_gate_inp.bias", ffn_gate_inp_b, D_EXP, D_ONE, false),
	SLOT(S_EXP_PROBS_B, "exp_probs_b.bias", exp_probs_b, D_EXP, D_ONE, false),
	SLOT3(S_GATE_EXPS, "ffn_gate_exps.weight", ffn_gate_exps, D_EMBD, D_FF_EXP, D_EXP, true),
	SLOT3(S_UP_EXPS, "ffn_up_exps.weight", ffn_up_exps, D_EMBD, D_FF_EXP, D_EXP, true),
	SLOT3(S_DOWN_EXPS, "ffn_down_exps.weight", ffn_down_exps, D_FF_EXP, D_EMBD, D_EXP, true),
	SLOT(S_GATE_EXPS_B, "ffn_gate_exps.bias", ffn_gate_exps_b, D_FF_EXP, D_EXP, false),
	SLOT(S_UP_EXPS_B, "ffn_up_exps.bias", ffn_up_exps_b, D_FF_EXP, D_EXP, false),
	SLOT(S_DOWN_EXPS_B, "ffn_down_exps.bias", ffn_down_exps_b, D_EMBD, D_EXP, false),
	SLOT(S_GATE_INP_SHEXP, "ffn_gate_inp_shexp.weight", ffn_gate_inp_shexp, D_EMBD, D_ONE, true),
	SLOT(S_GATE_SHEXP, "ffn_gate_shexp.weight", ffn_gate_shexp, D_EMBD, D_FF_SHEXP, true),
	SLOT(S_UP_SHEXP, "ffn_up_shexp.weight", ffn_up_shexp, D_EMBD, D_FF_SHEXP, true),
	SLOT(S_DOWN_SHEXP, "ffn_down_shexp.weight", ffn_down_shexp, D_FF_SHEXP, D_EMBD, true),
	SLOT(S_ATTN_NORM_B, "attn_norm.bias", attn_norm_b, D_EMBD, D_ONE, false),
	SLOT(S_FFN_UP_B, "ffn_up.bias", ffn_up_b, D_FF, D_ONE, false),
	SLOT(S_FFN_DOWN_B, "ffn_down.bias", ffn_down_b, D_EMBD, D_ONE, false),
	SLOT(S_WQKV, "attn_qkv.weight", wqkv, D_EMBD, D_QKV, true),
	SLOT(S_BQKV, "attn_qkv.bias", bqkv, D_QKV, D_ONE, false),
	SLOT(S_FFN_GATE_UP, "ffn_up.weight", ffn_gate_up, D_EMBD, D_FF2, true),
	SLOT3(S_GATE_UP_EXPS, "ffn_gate_up_exps.weight", ffn_gate_up_exps, D_EMBD, D_FF_EXP2, D_EXP, true),
};

#define B(s) (1ull << (s))
/* what every pre-norm transformer block with a gated FFN has */
#define BLOCK_BASE                                                                                             \
	(B(S_ATTN_NORM) | B(S_WQ) | B(S_WK) | B(S_WV) | B(S_WO) | B(S_FFN_NORM) | B(S_FFN_GATE) | B(S_FFN_UP) | \
	 B(S_FFN_DOWN))
/* the dense FFN, which a mixture-of-experts layer replaces */
#define FFN_DENSE (B(S_FFN_GATE) | B(S_FFN_UP) | B(S_FFN_DOWN))
/* the router and the experts' stacks */
#define MOE_BASE (B(S_GATE_INP) | B(S_GATE_EXPS) | B(S_UP_EXPS) | B(S_DOWN_EXPS))
#define MOE_SHARED (B(S_GATE_INP_SHEXP) | B(S_GATE_SHEXP) | B(S_UP_SHEXP) | B(S_DOWN_SHEXP))

/* ---- the architectures ----------------------------------------------------- */

/* The router of a family (llama.cpp fixes it per architecture in its
 * graph code, whatever the file's keys say, except where moe_keys). */
struct moe_desc {
	uint64_t required;     /* slots an is_moe block must have (the dense FFN slots are dropped) */
	uint64_t optional;
	enum tern_model_gating gating;
	enum tern_model_act act;
	bool norm_w;
	bool moe_keys;         /* expert_gating_func / expert_weights_scale from the file */
	bool moe_only;         /* every layer is a mixture: expert_count is required */
	bool ff_is_n_ff;       /* an expert's size is feed_forward_length (llama), not the expert key */
	bool gate_up;          /* gate and up may come merged, ffn_gate_up_exps (llama.cpp's
				* create_tensor_gate_up_exps) */
};

struct arch_desc {
	const char *name;
	uint64_t required;     /* slots every block must have */
	uint64_t optional;     /* slots a block may have */
	struct moe_desc moe;   /* with expert_count > 0 (moe.required 0: experts are not supported) */
	enum tern_model_norm norm;
	enum tern_model_act act;
	enum tern_model_rope rope;
	bool rope_freqs;       /* may carry rope_freqs.weight (llama3 scaling) */
	uint32_t swa_period;   /* with a sliding window: layer l is global iff l % period == period - 1 */
	float swa_rope_base;   /* RoPE base of the local layers (their scaling is none); 0: the global base */
	bool embd_scale_sqrt;  /* token embeddings times sqrt(n_embd) */
	bool mla;              /* multi-head latent attention (load_mla); the dense FFN only in the leading layers */
	void (*fixup)(struct tern_model_config *c); /* what a family decides from its sizes */
	/* gemma / phi families */
	uint32_t swa_default;  /* the window when the file gives none (gemma2: 4096) */
	bool swa_rope_global;  /* local layers: base rope.freq_base_swa else the global one, global scaling */
	bool always_tied;      /* the output is the token embedding even if output.weight exists */
	bool output_bias;      /* output.bias (and with NORM_LAYER, the norms' biases) required */
	bool longrope;         /* rope_factors_long / _short, rope.scaling.attn_factor */
	bool ffn_plain;        /* up -> act -> down, no gate */
	bool parallel;         /* attention and FFN from the same norm */
};

/* gemma_pytorch: the 27B model (62 layers) scales queries by
 * 1/sqrt(n_embd/n_head) instead of 1/sqrt(head_dim); llama.cpp does too. */
static void gemma3_fixup(struct tern_model_config *c)
{
	if (c->n_layer == 62)
		c->attn_scale = 1.0f / sqrtf((float)(c->n_embd / c->n_head));
}

#define ATTN_BASE (B(S_ATTN_NORM) | B(S_WQ) | B(S_WK) | B(S_WV) | B(S_WO))

/* llama.cpp's gemma graph scales queries by 1/sqrt(n_embd_head_v) */
static void gemma_fixup(struct tern_model_config *c)
{
	c->attn_scale = 1.0f / sqrtf((float)c->head_dim_v);
}

/* Gemma 2: soft-capping is always on, 50 and 30 when the file says
 * nothing (llama.cpp's defaults); the 27B model (46 layers) scales queries
 * by 1/sqrt(n_embd/n_head) (gemma_pytorch's query_pre_attn_scalar). */
static void gemma2_fixup(struct tern_model_config *c)
{
	if (c->n_layer == 46)
		c->attn_scale = 1.0f / sqrtf((float)(c->n_embd / c->n_head));
	if (!(c->attn_softcap > 0))
		c->attn_softcap = 50.0f;
	if (!(c->final_softcap > 0))
		c->final_softcap = 30.0f;
}

/* what a block may carry besides, as llama.cpp's create_tensor_qkv: Q, K
 * and V biases (separate, or fused with a fused attn_qkv) */
#define QKV_BIAS (B(S_BQ) | B(S_BK) | B(S_BV))

static const struct arch_desc archs[] = {
	{.name = "llama", /* Llama 2/3, Mistral, SmolLM, TinyLlama; with experts Mixtral */
	 .required = BLOCK_BASE,
	 .optional = B(S_BQ) | B(S_BK) | B(S_BV) | B(S_BO),
	 .moe = {.required = MOE_BASE, .gating = TERN_MODEL_GATING_SOFTMAX, .act = TERN_MODEL_ACT_SILU, .norm_w = true,
		 .ff_is_n_ff = true},
	 .act = TERN_MODEL_ACT_SILU, .rope = TERN_MODEL_ROPE_NORMAL, .rope_freqs = true},
	{.name = "qwen2",
	 .required = BLOCK_BASE | B(S_BQ) | B(S_BK) | B(S_BV),
	 .act = TERN_MODEL_ACT_SILU, .rope = TERN_MODEL_ROPE_NEOX},
	{.name = "qwen3",
	 .required = BLOCK_BASE | B(S_Q_NORM) | B(S_K_NORM),
	 .act = TERN_MODEL_ACT_SILU, .rope = TERN_MODEL_ROPE_NEOX},
	{.name = "gemma3",
	 .required = BLOCK_BASE | B(S_Q_NORM) | B(S_K_NORM) | B(S_ATTN_POST_NORM) | B(S_FFN_POST_NORM),
	 .act = TERN_MODEL_ACT_GELU, .rope = TERN_MODEL_ROPE_NEOX,
	 .swa_period = 6, .swa_rope_base = 10000.0f, .embd_scale_sqrt = true, .fixup = gemma3_fixup},
	{.name = "gemma", /* Gemma 1: the converter stores RMS norm weights as 1 + w */
	 .required = BLOCK_BASE,
	 .act = TERN_MODEL_ACT_GELU, .rope = TERN_MODEL_ROPE_NEOX,
	 .embd_scale_sqrt = true, .always_tied = true, .fixup = gemma_fixup},
	{.name = "gemma2", /* even layers local (window), odd layers global */
	 .required = BLOCK_BASE | B(S_ATTN_POST_NORM) | B(S_FFN_POST_NORM),
	 .act = TERN_MODEL_ACT_GELU, .rope = TERN_MODEL_ROPE_NEOX,
	 .swa_period = 2, .swa_default = 4096, .swa_rope_global = true,
	 .embd_scale_sqrt = true, .always_tied = true, .fixup = gemma2_fixup},
	{.name = "phi2", /* one layer norm feeds attention and a plain GELU FFN, biases everywhere */
	 .required = B(S_ATTN_NORM) | B(S_ATTN_NORM_B) | B(S_WQ) | B(S_WK) | B(S_WV) | B(S_WO) | B(S_BO) |
		     B(S_FFN_UP) | B(S_FFN_UP_B) | B(S_FFN_DOWN) | B(S_FFN_DOWN_B),
	 .optional = QKV_BIAS,
	 .norm = TERN_MODEL_NORM_LAYER, .act = TERN_MODEL_ACT_GELU, .rope = TERN_MODEL_ROPE_NEOX,
	 .output_bias = true, .ffn_plain = true, .parallel = true},
	{.name = "phi3", /* gate and up fused in ffn_up; the sliding window is ignored as llama.cpp does */
	 .required = B(S_ATTN_NORM) | B(S_WQ) | B(S_WK) | B(S_WV) | B(S_WO) | B(S_FFN_NORM) | B(S_FFN_GATE_UP) |
		     B(S_FFN_DOWN),
	 .optional = QKV_BIAS,
	 .act = TERN_MODEL_ACT_SILU, .rope = TERN_MODEL_ROPE_NEOX, .longrope = true},
	{.name = "qwen2moe", /* Qwen1.5-MoE, Qwen2-57B-A14B: a shared expert behind a sigmoid gate */
	 .required = ATTN_BASE | B(S_FFN_NORM) | B(S_BQ) | B(S_BK) | B(S_BV),
	 .moe = {.required = MOE_BASE | MOE_SHARED, .gating = TERN_MODEL_GATING_SOFTMAX, .act = TERN_MODEL_ACT_SILU,
		 .moe_only = true},
	 .act = TERN_MODEL_ACT_SILU, .rope = TERN_MODEL_ROPE_NEOX},
	{.name = "qwen3moe", /* Qwen3-30B-A3B, 235B-A22B: norm_topk_prob */
	 .required = ATTN_BASE | B(S_FFN_NORM) | B(S_Q_NORM) | B(S_K_NORM),
	 .moe = {.required = MOE_BASE, .gating = TERN_MODEL_GATING_SOFTMAX, .act = TERN_MODEL_ACT_SILU, .norm_w = true,
		 .moe_only = true},
	 .act = TERN_MODEL_ACT_SILU, .rope = TERN_MODEL_ROPE_NEOX},
	{.name = "gpt-oss", /* attention sinks, biases, clamped SwiGLU, softmax after top-k, 1 local : 1 global */
	 .required = ATTN_BASE | B(S_BO) | B(S_ATTN_SINKS) | B(S_FFN_NORM_PA),
	 .optional = B(S_BQ) | B(S_BK) | B(S_BV),
	 .moe = {.required = MOE_BASE | B(S_GATE_INP_B) | B(S_GATE_EXPS_B) | B(S_UP_EXPS_B) | B(S_DOWN_EXPS_B),
		 .gating = TERN_MODEL_GATING_SOFTMAX_TOPK, .act = TERN_MODEL_ACT_SWIGLU_OAI, .moe_only = true},
	 .act = TERN_MODEL_ACT_SILU, .rope = TERN_MODEL_ROPE_NEOX, .swa_period = 2, .swa_rope_global = true},
	{.name = "deepseek2", /* DeepSeek-V2, V2-Lite, V3: latent attention, shared experts */
	 .required = B(S_ATTN_NORM) | B(S_WO) | B(S_FFN_NORM),
	 .moe = {.required = MOE_BASE, .optional = B(S_EXP_PROBS_B) | B(S_GATE_SHEXP) | B(S_UP_SHEXP) | B(S_DOWN_SHEXP),
		 .gating = TERN_MODEL_GATING_SOFTMAX, .act = TERN_MODEL_ACT_SILU, .moe_keys = true, .gate_up = true},
	 .act = TERN_MODEL_ACT_SILU, .rope = TERN_MODEL_ROPE_NORMAL, .mla = true},
};

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

static const struct arch_desc *find_arch(const char *name)
{
	for (size_t i = 0; i < COUNT(archs); i++)
		if (strcmp(archs[i].name, name) == 0)
			return &archs[i];
	return NULL;
}

const char *tern_model_supported(void)
{
	/* the names of `archs`, in order (a test checks) */
	return "llama, qwen2, qwen3, gemma3, gemma, gemma2, phi2, phi3, qwen2moe, qwen3moe, gpt-oss, deepseek2";
}

bool tern_model_arch_supported(const char *arch)
{
	return arch && find_arch(arch) != NULL;
}

/* ---- tensor checks ----------------------------------------------------------- */

static void fmt_shape(char *buf, size_t cap, const uint64_t *ne, uint32_t n_dims)
{
	size_t n = 0;
	n += (size_t)snprintf(buf, cap, "{");
	for (uint32_t i = 0; i < n_dims && n < cap; i++)
		n += (size_t)snprintf(buf + n, cap - n, "%s%llu", i ? ", " : "", (unsigned long long)ne[i]);
	if (n < cap)
		snprintf(buf + n, cap - n, "}");
}

/* Find `name`, check it is {ne0, ne1, ne2} of a usable type, store it in
 * *out. A missing optional tensor leaves *out NULL. */
static int get_tensor3(const tern_mf *mf, const char *name, uint64_t ne0, uint64_t ne1, uint64_t ne2, bool matrix,
		       bool required, const struct tern_tensor_view **out, tern_err *e)
{
	*out = NULL;
	const struct tern_tensor_view *t = tern_mf_find_tensor(mf, name);
	if (!t) {
		if (required)
			return tern_errf(e, TERN_EFORMAT, "tensor '%s' is missing", name);
		return 0;
	}
	uint64_t want[TERN_MAX_DIMS] = {ne0, ne1, ne2, 1};
	bool same = true;
	for (int i = 0; i < TERN_MAX_DIMS; i++)
		same = same && t->ne[i] == want[i];
	if (!same) {
		char found[96], expect[64];
		fmt_shape(found, sizeof found, t->ne, t->n_dims ? t->n_dims : 1);
		fmt_shape(expect, sizeof expect, want, ne2 > 1 ? 3 : ne1 == 1 ? 1 : 2);
		return tern_errf(e, TERN_EFORMAT, "tensor '%s' has shape %s, expected %s", name, found, expect);
	}
	if (matrix && !quant_is_weight_type(t->type))
		return tern_errf(e, TERN_EUNSUPPORTED, "tensor '%s' has type %s, which no product supports", name,
				 quant_type_name(t->type));
	if (!matrix && t->type != QT_F32)
		return tern_errf(e, TERN_EUNSUPPORTED, "tensor '%s' has type %s, expected f32", name,
				 quant_type_name(t->type));
	if (!t->data) /* a lenient open keeps tensors whose data lies outside the file */
		return tern_errf(e, TERN_EFORMAT, "tensor '%s' has no data in the file", name);
	*out = t;
	return 0;
}

int tern_model_get_tensor(const tern_mf *mf, const char *name, uint64_t ne0, uint64_t ne1, bool matrix, bool required,
			  const struct tern_tensor_view **out, tern_err *e)
{
	return get_tensor3(mf, name, ne0, ne1, 1, matrix, required, out, e);
}

/* ---- config ------------------------------------------------------------------ */

/* llama.cpp's YaRN magnitude for a context stretched by `scale` */
static float yarn_get_mscale(float scale, float m)
{
	return scale <= 1.0f ? 1.0f : 0.1f * m * logf(scale) + 1.0f;
}

/* deepseek2's rope.scaling.yarn_log_multiplier (DeepSeek's mscale_all_dim),
 * which its converter stores times 0.1; the other families' llama.cpp
 * graphs do not read the key (0) */
static float yarn_log_mul(const struct arch_desc *d, const struct tern_arch_llm *hp)
{
	return d->mla ? hp->rope_yarn_log_mul / 0.1f : 0.0f;
}

/* ggml_rope_yarn_corr_dim: the pair whose wavelength turns `beta` times
 * over the original context (in f32, as ggml) */
static float yarn_corr_dim(float n_rot, float orig, float beta, float base)
{
	return n_rot * logf(orig / (beta * 2.0f * (float)M_PI)) / (2.0f * logf(base));
}

/* RoPE scaling as llama.cpp sets it up for every family (llama-model.cpp's
 * hparams, llama-context.cpp's cparams, the graphs' per-layer base and
 * scale, ggml's rope):
 *  - the factor applies to the global layers unless the type is "none";
 *    the sliding-window layers of the families whose local RoPE follows
 *    the global one (gemma2, gpt-oss: swa_rope_global) keep the file's
 *    factor whatever the type, the others' (gemma3) are unscaled;
 *  - rope.scaling.attn_factor multiplies the rotated pairs everywhere;
 *  - YaRN: ext_factor 1, beta_fast 32, beta_slow 1 (the .yarn_* keys are
 *    read only by families tern does not run), the ramp per layer from its
 *    base and the original context, and the magnitude: llama.cpp's
 *    attention factor get_mscale(factor) / (1 + 0.1 ln factor) (from the
 *    global factor; deepseek2's log multiplier changes it), which ggml's
 *    rope multiplies by 1 + 0.1 ln(1 / the layer's scale). For a layer at
 *    scale 1 (gemma3's local layers) the mix changes nothing and the
 *    magnitude is the attention factor alone.
 * A magnitude the rope op cannot take (negative or undefined, where a
 * factor below 1 makes 1 + 0.1 ln factor 0 or less; the keys themselves
 * are finite and positive, arch.c) is refused here rather than at the
 * first decode. */
static int rope_config(const struct arch_desc *d, const struct tern_arch_llm *hp, struct tern_model_config *c,
		       tern_err *e)
{
	const char *a = hp->arch;
	const float train_scale = 1.0f / hp->rope_scaling_factor;
	const bool yarn = hp->rope_scaling == TERN_ROPE_SCALING_YARN;
	c->rope_freq_scale = hp->rope_scaling == TERN_ROPE_SCALING_NONE ? 1.0f : train_scale;
	c->rope_attn_factor = hp->rope_attn_factor;
	c->rope_ext_factor = yarn ? 1.0f : 0.0f;
	float af = 1.0f;
	if (yarn) {
		float factor = 1.0f / c->rope_freq_scale, log_mul = yarn_log_mul(d, hp);
		if (log_mul != 0.0f) /* llama.cpp: mscale 1, except deepseek2's mscale == mscale_all_dim */
			af = yarn_get_mscale(factor, d->mla && log_mul != 1.0f ? log_mul : 1.0f) /
			     yarn_get_mscale(factor, log_mul);
		else
			af = yarn_get_mscale(factor, 1.0f);
		af *= 1.0f / (1.0f + 0.1f * logf(factor));
	}
	/* an original context of 0 means the trained one (llama.cpp's cparams) */
	float orig = (float)(c->n_ctx_orig ? c->n_ctx_orig : c->n_ctx_train), n_rot = (float)c->n_rot;
	for (uint32_t l = 0; l < c->n_layer; l++) {
		struct tern_model_layer_config *lc = &c->layer[l];
		lc->rope_scale = !lc->is_swa ? c->rope_freq_scale : d->swa_rope_global ? train_scale : 1.0f;
		lc->rope_mscale = 1.0f;
		lc->rope_corr_low = lc->rope_corr_high = 0.0f;
		if (!yarn)
			continue;
		lc->rope_mscale = af * (1.0f + 0.1f * logf(1.0f / lc->rope_scale));
		if (!(lc->rope_mscale >= 0) || !isfinite(lc->rope_mscale))
			return tern_errf(e, TERN_EUNSUPPORTED, "'%s.rope.scaling.factor' = %g: YaRN's magnitude is not "
					 "defined for it", a, (double)hp->rope_scaling_factor);
		/* ggml_rope_yarn_corr_dims: floor / ceil, clamped to the pairs;
		 * fminf / fmaxf also keep a degenerate base (1: a division by
		 * 0) finite, where the ramp is all extrapolation either way */
		float lo = floorf(yarn_corr_dim(n_rot, orig, 32.0f, lc->rope_base));
		float hi = ceilf(yarn_corr_dim(n_rot, orig, 1.0f, lc->rope_base));
		lc->rope_corr_low = fminf(fmaxf(lo, 0.0f), n_rot);
		lc->rope_corr_high = fmaxf(fminf(hi, n_rot - 1.0f), -1.0f);
	}
	return 0;
}

/* deepseek2: the latent attention's sizes and the attention scale (from
 * rope_config's YaRN), as llama.cpp derives them (llama-context.cpp,
 * models/deepseek2.cpp) */
static int mla_config(const struct tern_arch_llm *hp, struct tern_model_config *c, tern_err *e)
{
	const char *a = hp->arch;
	if (!hp->n_lora_kv)
		return tern_errf(e, TERN_EFORMAT, "missing key '%s.attention.kv_lora_rank'", a);
	if (hp->n_layer_dense_lead < hp->n_layer && !hp->n_expert)
		return tern_errf(e, TERN_EFORMAT, "'%s.leading_dense_block_count' = %u of %u layers, but no "
				 "'%s.expert_count'", a, hp->n_layer_dense_lead, hp->n_layer, a);
	c->n_lora_q = hp->n_lora_q;
	c->n_lora_kv = hp->n_lora_kv;
	c->n_layer_dense_lead = hp->n_layer_dense_lead < hp->n_layer ? hp->n_layer_dense_lead : hp->n_layer;
	if (hp->n_embd_head_k_mla || hp->n_embd_head_v_mla) {
		/* stored as MQA over the latent: key_length = kv_lora_rank + rope
		 * dims, value_length = kv_lora_rank; the heads are the _mla sizes */
		if (!hp->n_embd_head_k_mla || !hp->n_embd_head_v_mla)
			return tern_errf(e, TERN_EFORMAT, "'%s.attention.key_length_mla' and value_length_mla come together", a);
		if (hp->n_embd_head_k != hp->n_lora_kv + hp->n_rot || hp->n_embd_head_v != hp->n_lora_kv)
			return tern_errf(e, TERN_EFORMAT, "'%s.attention.key_length' = %u / value_length = %u: expected "
					 "kv_lora_rank + rope dims = %u / kv_lora_rank = %u", a, hp->n_embd_head_k,
					 hp->n_embd_head_v, hp->n_lora_kv + hp->n_rot, hp->n_lora_kv);
		c->head_dim = hp->n_embd_head_k_mla;
		c->head_dim_v = hp->n_embd_head_v_mla;
	} else {
		c->mla_kv_b = true; /* older conversions: the heads' own sizes and attn_kv_b */
	}
	if (c->head_dim <= c->n_rot)
		return tern_errf(e, TERN_EFORMAT, "'%s.rope.dimension_count' = %u leaves no unrotated part of the %u "
				 "dimensions of a head", a, c->n_rot, c->head_dim);
	/* the cache row is one head of the attention; the per-head products
	 * take rows of the latent and of the unrotated part */
	if (c->n_lora_kv + c->n_rot > TERN_ATTN_MAX_HEAD_DIM)
		return tern_errf(e, TERN_EUNSUPPORTED, "'%s.attention.kv_lora_rank' = %u with %u rope dims: at most %d "
				 "in all", a, c->n_lora_kv, c->n_rot, TERN_ATTN_MAX_HEAD_DIM);

	/* The scores' scale (models/deepseek2.cpp): llama.cpp undoes its
	 * YaRN adjustment of the attention factor (whatever the type) and
	 * scales by the square of that times DeepSeek's log multiplier
	 * term; rope_config set the rotation itself up. */
	float fs = c->rope_freq_scale, log_mul = hp->rope_yarn_log_mul / 0.1f;
	float af = c->rope_attn_factor * (c->rope_ext_factor > 0 ? c->layer[0].rope_mscale : 1.0f);
	if (c->rope_ext_factor == 0)
		af *= 1.0f + 0.1f * logf(1.0f / fs);
	float ms = af * (1.0f + 0.1f * log_mul * logf(1.0f / fs));
	c->attn_scale = ms * ms / sqrtf((float)c->head_dim);

	/* the experts (moe_config read the router's keys): from
	 * leading_dense_block_count on, beside expert_shared_count experts'
	 * worth of shared expert (llama.cpp's deepseek2 graph) */
	for (uint32_t l = 0; l < hp->n_layer; l++)
		c->layer[l].is_moe = c->moe.n_expert && l >= c->n_layer_dense_lead;
	c->moe.n_ff_shexp = c->moe.n_ff_exp * hp->n_expert_shared;
	return 0;
}

/* deepseek2's expert_weights_norm, a bool (absent: false, as llama.cpp) */
static int mla_weights_norm(const tern_mf *mf, struct tern_model_config *c, tern_err *e)
{
	char key[TERN_ARCH_NAME_MAX + 32];
	snprintf(key, sizeof key, "%s.expert_weights_norm", c->arch);
	const struct tern_mf_kv *kv = tern_mf_find(mf, key);
	if (!kv)
		return 0;
	if (kv->v.type != GGUF_T_BOOL || kv->v.size < 1)
		return tern_errf(e, TERN_ETYPE, "key '%s': %s, want a bool", key, gguf_vtype_name(kv->v.type));
	c->moe.norm_w = kv->v.p[0] != 0;
	return 0;
}

/* The mixture of experts: sizes, the router. As llama.cpp: a family's
 * gating and normalization are fixed by its graph code (moe_keys: the
 * file's keys decide), expert groups come from the file for every family,
 * and an absent expert_feed_forward_length means n_ff / n_expert_used
 * (llama's experts are always feed_forward_length wide). */
static int moe_config(const struct arch_desc *d, const struct tern_arch_llm *hp, struct tern_model_config *c,
		      tern_err *e)
{
	const char *a = hp->arch;
	struct tern_model_moe *m = &c->moe;
	if (!hp->n_expert) {
		if (d->moe.moe_only)
			return tern_errf(e, TERN_EFORMAT, "missing key '%s.expert_count' (%s is a mixture of experts)", a, a);
		return 0;
	}
	if (!d->moe.required)
		return tern_errf(e, TERN_EUNSUPPORTED, "mixture of experts ('%s.expert_count' = %u) is not supported for %s",
				 a, hp->n_expert, a);
	if (hp->n_expert_used > TERN_MOE_MAX_USED || hp->n_expert > 4096)
		return tern_errf(e, TERN_EUNSUPPORTED, "%u of %u experts per token: tern takes at most %d of 4096", 
				 hp->n_expert_used, hp->n_expert, TERN_MOE_MAX_USED);
	m->n_expert = hp->n_expert;
	m->n_expert_used = hp->n_expert_used;
	m->n_ff_exp = d->moe.ff_is_n_ff ? hp->n_ff : hp->n_ff_exp ? hp->n_ff_exp : hp->n_ff / hp->n_expert_used;
	m->n_ff_shexp = d->moe.required & B(S_GATE_SHEXP) ? (hp->n_ff_shexp ? hp->n_ff_shexp : hp->n_ff) : 0;
	if (!m->n_ff_exp)
		return tern_errf(e, TERN_EFORMAT, "missing key '%s.expert_feed_forward_length'", a);
	m->gating = d->moe.gating;
	m->act = d->moe.act;
	m->norm_w = d->moe.norm_w;
	m->w_scale = 1.0f;
	if (d->moe.moe_keys) {
		if (hp->expert_gating_func == 1 || hp->expert_gating_func == 2 || hp->expert_gating_func == 3)
			m->gating = hp->expert_gating_func == 1   ? TERN_MODEL_GATING_SOFTMAX
				    : hp->expert_gating_func == 2 ? TERN_MODEL_GATING_SIGMOID
								  : TERN_MODEL_GATING_SOFTMAX_TOPK;
		else if (hp->expert_gating_func)
			return tern_errf(e, TERN_EUNSUPPORTED, "'%s.expert_gating_func' = %u is not supported", a,
					 hp->expert_gating_func);
		if (hp->expert_weights_scale != 0)
			m->w_scale = hp->expert_weights_scale;
	}
	if (hp->n_expert_group > 1) {
		if (hp->n_expert % hp->n_expert_group || !hp->n_expert_group_used ||
		    hp->n_expert_group_used > hp->n_expert_group ||
		    hp->n_expert_used > hp->n_expert / hp->n_expert_group * hp->n_expert_group_used)
			return tern_errf(e, TERN_EFORMAT, "'%s.expert_group_count' = %u, used %u do not fit %u experts, %u used",
					 a, hp->n_expert_group, hp->n_expert_group_used, hp->n_expert, hp->n_expert_used);
		m->n_group = hp->n_expert_group;
		m->n_group_used = hp->n_expert_group_used;
	}
	return 0;
}

static int build_config(const struct arch_desc *d, const struct tern_arch_llm *hp, struct tern_model_config *c,
			tern_err *e)
{
	const char *a = hp->arch;
	int rc = moe_config(d, hp, c, e);
	if (rc)
		return rc;
	if (hp->rope_scaling == TERN_ROPE_SCALING_LONGROPE && !d->longrope)
		return tern_errf(e, TERN_EUNSUPPORTED, "'%s.rope.scaling.type' = '%s' is not supported for %s (supported: "
				 "none, linear, yarn)", a, hp->rope_scaling_name, a);
	bool layer_norm = d->norm == TERN_MODEL_NORM_LAYER;
	if (!((layer_norm ? hp->norm_eps : hp->norm_rms_eps) > 0))
		return tern_errf(e, TERN_EFORMAT, "missing key '%s.attention.layer_norm%s_epsilon'", a,
				 layer_norm ? "" : "_rms");

	snprintf(c->arch, sizeof c->arch, "%s", a);
	c->n_vocab = hp->n_vocab;
	c->n_ctx_train = hp->n_ctx_train;
	c->n_embd = hp->n_embd;
	c->n_layer = hp->n_layer;
	c->n_head = hp->n_head;
	c->n_head_kv = hp->n_head_kv;
	c->n_ff = hp->n_ff;
	c->head_dim = hp->n_embd_head_k;
	c->head_dim_v = hp->n_embd_head_v;
	c->n_rot = hp->n_rot;
	c->norm = d->norm;
	c->norm_eps = layer_norm ? hp->norm_eps : hp->norm_rms_eps;
	c->act = d->act;
	c->rope = d->rope;
	c->rope_scaling = hp->rope_scaling;
	c->rope_freq_base = hp->rope_freq_base;
	c->n_ctx_orig = hp->n_ctx_orig;
	c->n_swa = d->swa_period ? (hp->n_swa ? hp->n_swa : d->swa_default) : 0;
	c->ffn_plain = d->ffn_plain;
	c->parallel = d->parallel;
	c->embd_scale = d->embd_scale_sqrt ? sqrtf((float)hp->n_embd) : 1.0f;
	c->attn_scale = 1.0f / sqrtf((float)c->head_dim);
	c->attn_softcap = hp->attn_softcap;
	c->final_softcap = hp->final_softcap;
	c->has_qk_norm = (d->required & B(S_Q_NORM)) != 0;
	c->has_post_norms = (d->required & B(S_ATTN_POST_NORM)) != 0;
	c->has_attn_sinks = (d->required & B(S_ATTN_SINKS)) != 0;

	for (uint32_t l = 0; l < hp->n_layer; l++) {
		struct tern_model_layer_config *lc = &c->layer[l];
		lc->n_head = hp->n_head_l[l];
		lc->n_head_kv = hp->n_head_kv_l[l];
		lc->n_ff = hp->n_ff_l[l];
		if (!lc->n_head || !lc->n_head_kv || (!lc->n_ff && !c->moe.n_expert))
			return tern_errf(e, TERN_EFORMAT, "layer %u: '%s.%s' is 0", l, a,
					 !lc->n_head ? "attention.head_count"
					 : !lc->n_head_kv ? "attention.head_count_kv" : "feed_forward_length");
		if (lc->n_head % lc->n_head_kv)
			return tern_errf(e, TERN_EFORMAT, "layer %u: %u kv heads do not divide %u heads", l,
					 lc->n_head_kv, lc->n_head);
		lc->is_swa = c->n_swa && l % d->swa_period != d->swa_period - 1;
		lc->is_moe = c->moe.n_expert > 0;
		/* the local layers' base: the file's, else the family's (llama.cpp) */
		lc->rope_base = !lc->is_swa ? c->rope_freq_base
			      : hp->rope_freq_base_swa > 0 ? hp->rope_freq_base_swa
			      : d->swa_rope_base > 0 ? d->swa_rope_base : c->rope_freq_base;
	}
	rc = rope_config(d, hp, c, e);
	if (rc)
		return rc;
	if (d->mla) {
		rc = mla_config(hp, c, e);
		if (rc)
			return rc;
	}
	if (d->fixup)
		d->fixup(c);
	return 0;
}

/* ---- weights ----------------------------------------------------------------- */

/* deepseek2's latent attention tensors of layer l (llama.cpp's names and
 * shapes; attn_k_b / attn_v_b in files with the _mla keys, the older joint
 * attn_kv_b otherwise) */
static int load_mla(const tern_mf *mf, const struct tern_model_config *c, uint32_t l, struct tern_model_layer *L,
		    tern_err *e)
{
	uint64_t nh = c->layer[l].n_head, nope = c->head_dim - c->n_rot, kvr = c->n_lora_kv, hv = c->head_dim_v;
	char name[64];
	int rc = 0;
#define MLA_T(s) (snprintf(name, sizeof name, "blk.%u.%s", l, s), name)
	if (c->n_lora_q) {
		rc = tern_model_get_tensor(mf, MLA_T("attn_q_a.weight"), c->n_embd, c->n_lora_q, true, true, &L->wq_a, e);
		if (!rc)
			rc = tern_model_get_tensor(mf, MLA_T("attn_q_a_norm.weight"), c->n_lora_q, 1, false, true, &L->q_a_norm, e);
		if (!rc)
			rc = tern_model_get_tensor(mf, MLA_T("attn_q_b.weight"), c->n_lora_q, nh * c->head_dim, true, true, &L->wq_b, e);
	}
	if (!rc)
		rc = tern_model_get_tensor(mf, MLA_T("attn_kv_a_mqa.weight"), c->n_embd, kvr + c->n_rot, true, true, &L->wkv_a, e);
	if (!rc)
		rc = tern_model_get_tensor(mf, MLA_T("attn_kv_a_norm.weight"), kvr, 1, false, true, &L->kv_a_norm, e);
	if (!rc && c->mla_kv_b)
		rc = tern_model_get_tensor(mf, MLA_T("attn_kv_b.weight"), kvr, nh * (nope + hv), true, true, &L->wkv_b, e);
	if (!rc && !c->mla_kv_b)
		rc = get_tensor3(mf, MLA_T("attn_k_b.weight"), nope, kvr, nh, true, true, &L->wk_b, e);
	if (!rc && !c->mla_kv_b)
		rc = get_tensor3(mf, MLA_T("attn_v_b.weight"), kvr, hv, nh, true, true, &L->wv_b, e);
#undef MLA_T
	return rc;
}

/* As llama.cpp's create_tensor_qkv: any block may store Q, K and V as one
 * matrix, blk.N.attn_qkv.weight (the rows of Q, then K, then V), with one
 * fused bias or, without it, the separate ones. Where the file has it, the
 * fused slots replace the separate ones in the masks. */
static void qkv_slots(const tern_mf *mf, uint32_t l, uint64_t *required, uint64_t *optional)
{
	const uint64_t qkv = B(S_WQ) | B(S_WK) | B(S_WV), bias = QKV_BIAS;
	char name[64];
	snprintf(name, sizeof name, "blk.%u.%s", l, slots[S_WQKV].name);
	if (!tern_mf_find_tensor(mf, name)) {
		*required &= ~(B(S_WQKV) | B(S_BQKV));
		*optional &= ~(B(S_WQKV) | B(S_BQKV));
		return;
	}
	if (*required & qkv)
		*required = (*required & ~qkv) | B(S_WQKV);
	*optional &= ~qkv;
	snprintf(name, sizeof name, "blk.%u.%s", l, slots[S_BQKV].name);
	if (tern_mf_find_tensor(mf, name)) {
		*required &= ~bias;
		*optional = (*optional & ~bias) | B(S_BQKV);
	}
}

/* As llama.cpp's create_tensor_gate_up_exps: the experts' gate and up
 * stacks may come as one, blk.N.ffn_gate_up_exps.weight {n_embd, 2 F, E}
 * (per expert its F gate rows, then its F up rows), which then replaces
 * both. Its halves are not contiguous across experts, so they are views
 * of the forward pass's buffers (lib/llm/llm.c), not of the file here. */
static void gate_up_slots(const tern_mf *mf, uint32_t l, uint64_t *required)
{
	char name[64];
	snprintf(name, sizeof name, "blk.%u.%s", l, slots[S_GATE_UP_EXPS].name);
	if (tern_mf_find_tensor(mf, name))
		*required = (*required & ~(B(S_GATE_EXPS) | B(S_UP_EXPS))) | B(S_GATE_UP_EXPS);
}

/* rows [r0, r0 + n) of a matrix, or elements of a vector, as a view of
 * the same mapping (the name stays the file's, for messages) */
static const struct tern_tensor_view *part(struct tern_tensor_view *dst, const struct tern_tensor_view *t,
					   uint64_t r0, uint64_t n)
{
	*dst = *t;
	uint64_t unit;
	if (t->ne[1] > 1) { /* a matrix: whole rows */
		unit = quant_row_size(t->type, t->ne[0], NULL);
		dst->ne[1] = n;
	} else { /* an f32 vector */
		unit = sizeof(float);
		dst->ne[0] = n;
	}
	dst->data = (const uint8_t *)t->data + r0 * unit;
	dst->offset += r0 * unit;
	dst->nbytes = n * unit;
	return dst;
}

/* Split the fused tensors of a layer into the views the forward pass
 * uses (no copies); their shapes were checked against dims. */
static void split_fused(struct tern_model_layer *L, struct tern_tensor_view *parts, const uint64_t *dims)
{
	uint64_t nq = dims[D_Q], nkv = dims[D_KV], nv = dims[D_V], nff = dims[D_FF];
	if (L->wqkv) {
		L->wq = part(&parts[0], L->wqkv, 0, nq);
		L->wk = part(&parts[1], L->wqkv, nq, nkv);
		L->wv = part(&parts[2], L->wqkv, nq + nkv, nv);
	}
	if (L->bqkv) {
		L->bq = part(&parts[3], L->bqkv, 0, nq);
		L->bk = part(&parts[4], L->bqkv, nq, nkv);
		L->bv = part(&parts[5], L->bqkv, nq + nkv, nv);
	}
	if (L->ffn_gate_up) { /* llama.cpp's swiglu of the fused product: gate first */
		L->ffn_gate = part(&parts[6], L->ffn_gate_up, 0, nff);
		L->ffn_up = part(&parts[7], L->ffn_gate_up, nff, nff);
	}
}

static int load_weights(const struct arch_desc *d, const tern_mf *mf, struct tern_model *m, tern_err *e)
{
	struct tern_model_config *c = &m->cfg;
	struct tern_model_weights *w = &m->w;
	int rc = tern_model_get_tensor(mf, "token_embd.weight", c->n_embd, c->n_vocab, true, true, &w->token_embd, e);
	if (!rc)
		rc = tern_model_get_tensor(mf, "output_norm.weight", c->n_embd, 1, false, true, &w->output_norm, e);
	if (!rc && !d->always_tied)
		rc = tern_model_get_tensor(mf, "output.weight", c->n_embd, c->n_vocab, true, d->output_bias, &w->output, e);
	if (!rc && d->output_bias)
		rc = tern_model_get_tensor(mf, "output.bias", c->n_vocab, 1, false, true, &w->output_b, e);
	if (!rc && c->norm == TERN_MODEL_NORM_LAYER)
		rc = tern_model_get_tensor(mf, "output_norm.bias", c->n_embd, 1, false, d->output_bias, &w->output_norm_b, e);
	if (!rc && d->longrope)
		rc = tern_model_get_tensor(mf, "rope_factors_long.weight", c->n_rot / 2, 1, false, false, &w->rope_long, e);
	if (!rc && d->longrope)
		rc = tern_model_get_tensor(mf, "rope_factors_short.weight", c->n_rot / 2, 1, false, false, &w->rope_short, e);
	if (rc)
		return rc;
	c->has_longrope = w->rope_long || w->rope_short;
	c->tied_output = w->output == NULL;
	if (c->tied_output)
		w->output = w->token_embd;
	if (d->rope_freqs) {
		rc = tern_model_get_tensor(mf, "rope_freqs.weight", c->n_rot / 2, 1, false, false, &w->rope_freqs, e);
		if (rc)
			return rc;
		c->has_rope_freqs = w->rope_freqs != NULL;
	}

	for (uint32_t l = 0; l < c->n_layer; l++) {
		const struct tern_model_layer_config *lc = &c->layer[l];
		uint64_t dims[D_COUNT] = {
			[D_ONE] = 1,
			[D_EMBD] = c->n_embd,
			[D_Q] = (uint64_t)lc->n_head * c->head_dim,
			[D_KV] = (uint64_t)lc->n_head_kv * c->head_dim,
			[D_V] = (uint64_t)lc->n_head_kv * c->head_dim_v,
			[D_O] = (uint64_t)lc->n_head * c->head_dim_v,
			[D_HEAD] = c->head_dim,
			[D_FF] = lc->n_ff,
			[D_NHEAD] = lc->n_head,
			[D_EXP] = c->moe.n_expert,
			[D_FF_EXP] = c->moe.n_ff_exp,
			[D_FF_SHEXP] = c->moe.n_ff_shexp,
			[D_FF2] = 2 * (uint64_t)lc->n_ff,
			[D_FF_EXP2] = 2 * (uint64_t)c->moe.n_ff_exp,
		};
		dims[D_QKV] = dims[D_Q] + dims[D_KV] + dims[D_V]; /* Q, K and V fused */
		uint64_t required = d->required, optional = d->optional;
		if (d->mla) { /* a plain attn_q without the Q bottleneck; the dense FFN of the leading layers */
			required |= c->n_lora_q ? 0 : B(S_WQ);
			required |= l < c->n_layer_dense_lead ? FFN_DENSE : 0;
		}
		if (lc->is_moe) {
			required = (required & ~FFN_DENSE) | d->moe.required;
			optional = (optional & ~FFN_DENSE) | d->moe.optional;
			if (d->moe.gate_up)
				gate_up_slots(mf, l, &required);
		}
		qkv_slots(mf, l, &required, &optional);
		for (int s = 0; s < S_COUNT; s++) {
			bool req = (required >> s) & 1, opt = (optional >> s) & 1;
			if (!req && !opt)
				continue;
			const struct slot_info *si = &slots[s];
			char name[64];
			snprintf(name, sizeof name, "blk.%u.%s", l, si->name);
			const struct tern_tensor_view **dst =
				(const struct tern_tensor_view **)((char *)&w->layers[l] + si->offset);
			rc = get_tensor3(mf, name, dims[si->ne0], dims[si->ne1], dims[si->ne2], si->matrix, req, dst, e);
			if (rc)
				return rc;
		}
		if (d->mla) {
			rc = load_mla(mf, c, l, &w->layers[l], e);
			if (rc)
				return rc;
		}
		split_fused(&w->layers[l], m->parts + (size_t)l * TERN_MODEL_PARTS, dims);
		const struct tern_model_layer *L = &w->layers[l];
		c->has_qkv_bias = c->has_qkv_bias || L->bq || L->bk || L->bv;
	}
	return 0;
}

/* ---- load / free ------------------------------------------------------------- */

int tern_model_load(struct tern_model **out, const tern_mf *mf, tern_err *e)
{
	*out = NULL;
	char name[TERN_ARCH_NAME_MAX], q[TERN_QUOTE_MAX]; /* the name is the file's: quoted */
	enum tern_arch_family fam = tern_arch_family(mf, name, sizeof name);
	if (fam != TERN_ARCH_LLM)
		return tern_errf(e, TERN_EUNSUPPORTED, "not a language model: %s%s",
				 name[0] ? tern_quote(q, sizeof q, name, strlen(name)) : "no general.architecture",
				 tern_arch_family_hint(fam));
	const struct arch_desc *d = find_arch(name);
	if (!d)
		return tern_errf(e, TERN_EUNSUPPORTED, "architecture '%s' is not supported (supported: %s)",
				 tern_quote(q, sizeof q, name, strlen(name)), tern_model_supported());

	struct tern_arch_llm *hp = malloc(sizeof *hp); /* ~6 KiB of per-layer arrays */
	struct tern_model *m = calloc(1, sizeof *m);
	if (!hp || !m) {
		free(hp);
		free(m);
		return tern_errf(e, TERN_ENOMEM, "out of memory");
	}
	int rc = tern_arch_llm_load(mf, hp, e);
	if (!rc)
		rc = build_config(d, hp, &m->cfg, e);
	if (!rc && d->mla)
		rc = mla_weights_norm(mf, &m->cfg, e);
	free(hp);
	if (!rc) {
		/* n_layer <= TERN_ARCH_MAX_LAYERS (arch.c): a bounded table */
		m->w.layers = calloc(m->cfg.n_layer, sizeof *m->w.layers);
		m->parts = calloc((size_t)m->cfg.n_layer * TERN_MODEL_PARTS, sizeof *m->parts);
		if (!m->w.layers || !m->parts)
			rc = tern_errf(e, TERN_ENOMEM, "out of memory");
	}
	if (!rc)
		rc = load_weights(d, mf, m, e);
	if (rc) {
		tern_model_free(m);
		return rc;
	}
	m->mf = mf;
	*out = m;
	return 0;
}

int tern_model_open(struct tern_model **out, const char *path, tern_err *e)
{
	*out = NULL;
	tern_mf *mf = NULL;
	int rc = tern_mf_open(&mf, path, NULL, e);
	if (!rc)
		rc = tern_model_load(out, mf, e);
	if (rc) {
		tern_mf_close(mf);
		tern_err_prefix(e, path);
		return rc;
	}
	(*out)->own_mf = mf;
	return 0;
}

void tern_model_free(struct tern_model *m)
{
	if (!m)
		return;
	free(m->w.layers);
	free(m->parts);
	tern_mf_close(m->own_mf);
	free(m);
}
