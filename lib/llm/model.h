/* model.h - a GGUF language model as the forward pass sees it: a config
 * (every number the pass needs, per layer where layers differ) and the
 * weights (views into the file's mapping, never copies).
 *
 * Architectures are rows of a descriptor table (model.c): which tensors a
 * layer has and which of them are required, the norm, the gated
 * activation, the RoPE ordering, the sliding-window pattern, the embedding
 * scale. The loader walks the row generically, so adding an architecture
 * is one row plus whatever new ops its forward pass needs.
 *
 * Shapes are written in ggml's order, {ne0, ne1}: ne0 is the row length
 * (the input size of a product), ne1 the number of rows (its outputs).
 * "[n_layer] ->" means one such tensor per layer. */
#ifndef TERN_MODEL_H
#define TERN_MODEL_H

#include <stdbool.h>
#include <stdint.h>

#include "lib/core/error.h"
#include "lib/format/arch.h"
#include "lib/format/modelfile.h"
#include "lib/format/tensor.h"

enum tern_model_norm {
	TERN_MODEL_NORM_RMS,   /* x / sqrt(mean(x^2) + eps) * w */
	TERN_MODEL_NORM_LAYER, /* (x - mean) / sqrt(var + eps) * w + b (phi2) */
};

/* The FFN: act(gate(x)) * up(x), then down; with ffn_plain (phi2)
 * act(up(x) + b) then down. */
enum tern_model_act {
	TERN_MODEL_ACT_SILU, /* SwiGLU (llama, qwen) */
	TERN_MODEL_ACT_GELU, /* GeGLU with tanh-approximated GELU (gemma) */
	TERN_MODEL_ACT_SWIGLU_OAI, /* gpt-oss's experts: SwiGLU clamped at 7, alpha 1.702, up + 1 */
};

/* A mixture of experts' router (lib/backend.h, struct tern_moe_route). */
enum tern_model_gating {
	TERN_MODEL_GATING_SOFTMAX,      /* softmax over the experts (Mixtral, Qwen-MoE) */
	TERN_MODEL_GATING_SIGMOID,      /* per-expert sigmoid (DeepSeek-V3) */
	TERN_MODEL_GATING_SOFTMAX_TOPK, /* softmax over the selected experts' logits (gpt-oss) */
};

/* The mixture of experts of the layers whose is_moe is set: the router
 * picks n_expert_used of n_expert experts per token; their outputs,
 * weighted, are summed, plus the shared expert's where the layer has one. */
struct tern_model_moe {
	uint32_t n_expert;        /* experts per layer (0: a dense model) */
	uint32_t n_expert_used;   /* selected per token (1..min(n_expert, TERN_MOE_MAX_USED)) */
	uint32_t n_ff_exp;        /* hidden size of one expert */
	uint32_t n_ff_shexp;      /* hidden size of the shared expert (0: none) */
	enum tern_model_gating gating;
	enum tern_model_act act;  /* the experts' gated activation */
	bool norm_w;              /* the selected weights are divided by their sum */
	float w_scale;            /* then multiplied by this (1: none) */
	uint32_t n_group;         /* group-limited selection: groups (0 or 1: none) */
	uint32_t n_group_used;    /* groups whose experts compete */
};

/* How RoPE pairs the dimensions of a head (llama.cpp's rope types). */
enum tern_model_rope {
	TERN_MODEL_ROPE_NORMAL, /* pairs (2i, 2i+1): llama */
	TERN_MODEL_ROPE_NEOX,   /* pairs (i, i + n_rot/2): qwen2, qwen3, gemma3 */
};

/* Per layer: what differs between layers (gemma3's local and global
 * layers; per-layer head and FFN counts where a file gives arrays). */
struct tern_model_layer_config {
	bool is_swa;        /* attends over the last n_swa positions only */
	float rope_base;    /* theta base of this layer's RoPE */
	float rope_scale;   /* position multiplier: 1 / the scaling factor (1: none) */
	float rope_corr_low, rope_corr_high; /* YaRN's ramp, in pairs, for this layer's base */
	float rope_mscale;  /* YaRN's magnitude of the rotated pairs for this layer's scale (1: none) */
	uint32_t n_head;    /* query heads */
	uint32_t n_head_kv; /* key/value heads (divides n_head) */
	uint32_t n_ff;      /* FFN hidden size */
	bool is_moe;        /* the FFN is the mixture of experts (cfg.moe) */
};

struct tern_model_config {
	char arch[TERN_ARCH_NAME_MAX];    /* general.architecture */
	uint32_t n_vocab;                 /* rows of the token embedding and of the output */
	uint32_t n_ctx_train;             /* trained context length */
	uint32_t n_embd;                  /* residual width */
	uint32_t n_layer;                 /* blocks (at most TERN_ARCH_MAX_LAYERS) */
	uint32_t n_head, n_head_kv, n_ff; /* the largest over the layers (for sizing) */
	uint32_t head_dim;                /* per-head size of Q and K */
	uint32_t head_dim_v;              /* per-head size of V */
	uint32_t n_rot;                   /* rotated dimensions of a head (<= head_dim, even) */
	enum tern_model_norm norm;
	float norm_eps;
	enum tern_model_act act;
	enum tern_model_rope rope;
	enum tern_rope_scaling rope_scaling; /* NONE, LINEAR or YARN; LONGROPE for phi3 (others refuse it) */
	float rope_freq_base;             /* the file's base: the global layers' */
	float rope_freq_scale;            /* 1 / rope.scaling.factor (1 for scaling "none"): the global layers' */
	float rope_attn_factor;           /* rope.scaling.attn_factor: multiplies the rotated pairs (every family) */
	bool has_longrope;                /* phi3: rope_factors_long / _short, chosen by the context (llm.c) */
	uint32_t n_ctx_orig;              /* rope.scaling.original_context_length */
	bool has_rope_freqs;              /* llama3 scaling: per-dimension divisors in rope_freqs.weight */
	float rope_ext_factor;            /* YaRN's extrapolation mix (1 with YaRN, else 0); see struct tern_rope
					   * and the layers' rope_corr_low / high and rope_mscale */
	/* multi-head latent attention (deepseek2; n_lora_kv 0: none): Q from
	 * x (n_lora_q 0) or through a rank-n_lora_q bottleneck; K and V from
	 * one latent of n_lora_kv values per token, which is what the cache
	 * keeps, with n_rot RoPE dimensions beside it; head_dim = nope + n_rot
	 * per query head, head_dim_v per value head once decompressed */
	uint32_t n_lora_q, n_lora_kv;
	bool mla_kv_b;                    /* the file has the older joint attn_kv_b, not attn_k_b / attn_v_b */
	uint32_t n_layer_dense_lead;      /* deepseek2: layers before the first mixture-of-experts one */
	uint32_t n_swa;                   /* sliding window of the is_swa layers (0: none) */
	float embd_scale;                 /* the token embedding is multiplied by this (gemma: sqrt(n_embd)) */
	float attn_scale;                 /* scores are q.k * attn_scale (1/sqrt(head_dim) unless the arch says) */
	float attn_softcap;               /* 0: none */
	float final_softcap;              /* 0: none */
	bool has_qk_norm;                 /* RMS norm over each head of Q and K before RoPE */
	bool has_post_norms;              /* norm of the attention and FFN outputs before the residual add */
	bool has_qkv_bias;                /* some layer has a Q, K or V bias (each is added where non-NULL) */
	bool tied_output;                 /* no output.weight: the token embedding is the output */
	bool has_attn_sinks;              /* per-head sink logits join the attention softmax (gpt-oss) */
	struct tern_model_moe moe;        /* n_expert 0: dense */
	bool ffn_plain;                   /* phi2: no gate; act(up h + b) */
	bool parallel;                    /* phi2: attention and FFN both read norm(x) and both add to x */
	struct tern_model_layer_config layer[TERN_ARCH_MAX_LAYERS]; /* [n_layer] */
};

/* One block's weights. NULL where the architecture has no such tensor or an
 * optional one is absent. All 1-D tensors are f32; products are of a type
 * quant/ can dot (float or one with a Q8 activation type). Below, nq =
 * n_head*head_dim, nkv = n_head_kv*head_dim, nv = n_head_kv*head_dim_v,
 * no = n_head*head_dim_v, all of this layer. */
struct tern_model_layer {
	const struct tern_tensor_view *attn_norm;      /* {n_embd} */
	const struct tern_tensor_view *wq;             /* {n_embd, nq} */
	const struct tern_tensor_view *wk;             /* {n_embd, nkv} */
	const struct tern_tensor_view *wv;             /* {n_embd, nv} */
	const struct tern_tensor_view *wo;             /* {no, n_embd} */
	const struct tern_tensor_view *bq;             /* {nq} qwen2 (llama: optional) */
	const struct tern_tensor_view *bk;             /* {nkv} */
	const struct tern_tensor_view *bv;             /* {nv} */
	const struct tern_tensor_view *bo;             /* {n_embd} llama: optional */
	const struct tern_tensor_view *q_norm;         /* {head_dim} qwen3, gemma3 */
	const struct tern_tensor_view *k_norm;         /* {head_dim} qwen3, gemma3 */
	const struct tern_tensor_view *attn_post_norm; /* {n_embd} gemma3 */
	const struct tern_tensor_view *ffn_norm;       /* {n_embd} */
	const struct tern_tensor_view *ffn_gate;       /* {n_embd, n_ff} */
	const struct tern_tensor_view *ffn_up;         /* {n_embd, n_ff} */
	const struct tern_tensor_view *ffn_down;       /* {n_ff, n_embd} */
	const struct tern_tensor_view *ffn_post_norm;  /* {n_embd} gemma3 */
	/* deepseek2's latent attention (nope = head_dim - n_rot; wq above
	 * when n_lora_q is 0) */
	const struct tern_tensor_view *wq_a;           /* {n_embd, n_lora_q} */
	const struct tern_tensor_view *q_a_norm;       /* {n_lora_q} */
	const struct tern_tensor_view *wq_b;           /* {n_lora_q, nq} */
	const struct tern_tensor_view *wkv_a;          /* {n_embd, n_lora_kv + n_rot} attn_kv_a_mqa */
	const struct tern_tensor_view *kv_a_norm;      /* {n_lora_kv} */
	const struct tern_tensor_view *wk_b;           /* {nope, n_lora_kv, n_head}: W_kb transposed per head */
	const struct tern_tensor_view *wv_b;           /* {n_lora_kv, head_dim_v, n_head} */
	const struct tern_tensor_view *wkv_b;          /* {n_lora_kv, n_head * (nope + head_dim_v)} (mla_kv_b) */
	/* mixture of experts (is_moe layers); E = n_expert, F = n_ff_exp,
	 * S = n_ff_shexp. Expert stacks are 3-D: [E][rows][cols]. */
	const struct tern_tensor_view *attn_sinks;     /* {n_head} gpt-oss */
	const struct tern_tensor_view *ffn_gate_inp;   /* {n_embd, E}: the router */
	const struct tern_tensor_view *ffn_gate_inp_b; /* {E} gpt-oss */
	const struct tern_tensor_view *exp_probs_b;    /* {E} selection bias (DeepSeek-V3) */
	const struct tern_tensor_view *ffn_gate_exps;  /* {n_embd, F, E} */
	const struct tern_tensor_view *ffn_up_exps;    /* {n_embd, F, E} */
	const struct tern_tensor_view *ffn_down_exps;  /* {F, n_embd, E} */
	const struct tern_tensor_view *ffn_gate_exps_b; /* {F, E} gpt-oss */
	const struct tern_tensor_view *ffn_up_exps_b;   /* {F, E} gpt-oss */
	const struct tern_tensor_view *ffn_down_exps_b; /* {n_embd, E} gpt-oss */
	const struct tern_tensor_view *ffn_gate_inp_shexp; /* {n_embd}: the shared expert's sigmoid gate (qwen2moe) */
	const struct tern_tensor_view *ffn_gate_shexp; /* {n_embd, S} */
	const struct tern_tensor_view *ffn_up_shexp;   /* {n_embd, S} */
	const struct tern_tensor_view *ffn_down_shexp; /* {S, n_embd} */
	const struct tern_tensor_view *attn_norm_b;    /* {n_embd} phi2 (layer norm) */
	const struct tern_tensor_view *ffn_up_b;       /* {n_ff} phi2 */
	const struct tern_tensor_view *ffn_down_b;     /* {n_embd} phi2 */
	/* fused forms, as the file stores them; the loader splits them into
	 * views (wq/wk/wv, bq/bk/bv, ffn_gate/ffn_up above), so the forward
	 * pass never sees them */
	const struct tern_tensor_view *wqkv;           /* {n_embd, nq + nkv + nv} phi2, phi3 (any arch) */
	const struct tern_tensor_view *bqkv;           /* {nq + nkv + nv} */
	const struct tern_tensor_view *ffn_gate_up;    /* {n_embd, 2 n_ff} phi3: gate rows, then up rows */
	/* {n_embd, 2 F, E} deepseek2: per expert F gate rows, then F up rows;
	 * ffn_gate_exps / ffn_up_exps are then NULL: the forward pass splits
	 * it into two buffer views whose experts lie apart */
	const struct tern_tensor_view *ffn_gate_up_exps;
};

/* the views one layer's fused tensors split into: q, k, v, bq, bk, bv,
 * gate, up */
#define TERN_MODEL_PARTS 8

struct tern_model_weights {
	const struct tern_tensor_view *token_embd;  /* {n_embd, n_vocab} */
	const struct tern_tensor_view *output_norm; /* {n_embd} */
	const struct tern_tensor_view *output;      /* {n_embd, n_vocab}: token_embd when tied */
	const struct tern_tensor_view *rope_freqs;  /* {n_rot/2} llama3 scaling, or NULL */
	const struct tern_tensor_view *output_norm_b; /* {n_embd} phi2 */
	const struct tern_tensor_view *output_b;    /* {n_vocab} phi2 */
	const struct tern_tensor_view *rope_long;   /* {n_rot/2} phi3 LongRoPE, or NULL */
	const struct tern_tensor_view *rope_short;  /* {n_rot/2} */
	struct tern_model_layer *layers;            /* [n_layer] */
};

struct tern_model {
	struct tern_model_config cfg;
	struct tern_model_weights w;
	const tern_mf *mf; /* the file the views point into */
	struct tern_tensor_view *parts; /* [n_layer][TERN_MODEL_PARTS]: views into fused tensors */
	tern_mf *own_mf;   /* set when tern_model_open opened it */
};

/* Build a model over an open file (borrowed: it must outlive the model).
 * Errors: TERN_EUNSUPPORTED for an architecture, a feature (LongRoPE
 * outside phi3) or a tensor type that tern cannot run, naming it; TERN_EFORMAT
 * for a missing key or tensor and a tensor of the wrong shape (naming the
 * tensor, the expected and the found shape); what tern_arch_llm_load
 * reports for the hyperparameters. Nothing is allocated from sizes the
 * file claims except the per-layer table (at most TERN_ARCH_MAX_LAYERS). */
int tern_model_load(struct tern_model **out, const tern_mf *mf, tern_err *e);
/* Find tensor `name` in mf and check that it is {ne0, ne1} of a usable type
 * (a product's weight type when matrix, else f32) with its data in the
 * file; the error names the tensor, its shape and the one expected. A
 * missing tensor is an error when required, else *out stays NULL. The
 * loaders of lib/llm share it (model.c, embed.c). */
int tern_model_get_tensor(const tern_mf *mf, const char *name, uint64_t ne0, uint64_t ne1, bool matrix, bool required,
			  const struct tern_tensor_view **out, tern_err *e);
/* Open path and load it; the model owns the file. Messages start with path. */
int tern_model_open(struct tern_model **out, const char *path, tern_err *e);
void tern_model_free(struct tern_model *m);

/* The supported architecture names, ", "-separated: "llama, qwen2, ...". */
const char *tern_model_supported(void);
bool tern_model_arch_supported(const char *arch);

#endif
