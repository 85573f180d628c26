/* arch.h - the hyperparameters of a model file, typed, with defaults and
 * validation: what the model loaders (LLM, Whisper, Silero) build their
 * config from, and what `tern-inspect` shows in its summary, so that the
 * two cannot drift apart.
 *
 * Language models use llama.cpp's key names, "ARCH.NAME" with ARCH the
 * value of general.architecture (llama.context_length,
 * qwen2.attention.head_count_kv, ...). Legacy ggml files give theirs as
 * "whisper.NAME" / "silero.NAME" entries (lib/format/modelfile.h).
 *
 * Each family has a field table: key, label, JSON name and where the value
 * lives in the struct. Reading fills every field that the file has (bit i
 * of `present` for field i of the table), then the defaults; validation
 * (separate, so that a viewer can show an incomplete file) says whether a
 * model could be built from them. */
#ifndef TERN_ARCH_H
#define TERN_ARCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/core/error.h"
#include "lib/format/modelfile.h"

#define TERN_ARCH_MAX_LAYERS 512 /* as llama.cpp */
#define TERN_ARCH_NAME_MAX 64

enum tern_arch_family {
	TERN_ARCH_NONE,    /* no general.architecture and not a legacy file */
	TERN_ARCH_LLM,     /* a GGUF file naming its architecture */
	TERN_ARCH_WHISPER, /* legacy ggml Whisper */
	TERN_ARCH_SILERO,  /* legacy ggml Silero VAD */
};

/* The family of a file, and its architecture name ("llama", "whisper")
 * in name[cap] (empty for TERN_ARCH_NONE; a name too long or not a string
 * also gives TERN_ARCH_NONE). */
enum tern_arch_family tern_arch_family(const tern_mf *m, char *name, size_t cap);
/* What runs a file of family f, for a message that refuses it elsewhere:
 * " (tern-transcribe runs it)", " (tern-vad runs it)", or "". */
const char *tern_arch_family_hint(enum tern_arch_family f);

enum tern_arch_ftype {
	TERN_ARCH_U32,        /* uint32_t; any integer type in the file whose value fits */
	TERN_ARCH_F32,        /* float; f32 or f64 in the file */
	TERN_ARCH_U32_LAYERS, /* uint32_t scalar, or one value per layer (an array of n_layer):
			       * the scalar field holds the largest, `layers_offset` the array */
	TERN_ARCH_STR,        /* char[TERN_ARCH_NAME_MAX] */
};

struct tern_arch_field {
	const char *key;      /* after "ARCH.": "attention.head_count" */
	const char *label;    /* for people: "heads" */
	const char *json;     /* for machines: "head_count" */
	enum tern_arch_ftype type;
	size_t offset;        /* of the value in the family's struct */
	size_t layers_offset; /* TERN_ARCH_U32_LAYERS: of the uint32_t[TERN_ARCH_MAX_LAYERS] */
	bool required;        /* validation fails without it */
};

enum tern_rope_scaling { TERN_ROPE_SCALING_NONE, TERN_ROPE_SCALING_LINEAR, TERN_ROPE_SCALING_YARN,
			 TERN_ROPE_SCALING_LONGROPE };

/* ---- language models ---------------------------------------------------- */

struct tern_arch_llm {
	char arch[TERN_ARCH_NAME_MAX]; /* general.architecture */
	uint32_t n_vocab;              /* vocab_size, else the length of tokenizer.ggml.tokens */
	uint32_t n_ctx_train;          /* context_length */
	uint32_t n_embd;               /* embedding_length */
	uint32_t n_layer;              /* block_count */
	uint32_t n_ff;                 /* feed_forward_length (largest layer) */
	uint32_t n_head;               /* attention.head_count (largest layer) */
	uint32_t n_head_kv;            /* attention.head_count_kv (largest layer; default n_head) */
	uint32_t n_embd_head_k;        /* attention.key_length (default n_embd / n_head) */
	uint32_t n_embd_head_v;        /* attention.value_length (default n_embd / n_head) */
	/* multi-head latent attention (deepseek2): with the _mla keys the file
	 * stores MLA as MQA over the latent (key_length = kv_lora_rank + rope
	 * dims, value_length = kv_lora_rank) and these give the heads once
	 * decompressed; without them key_length / value_length are those */
	uint32_t n_embd_head_k_mla;    /* attention.key_length_mla (0: absent) */
	uint32_t n_embd_head_v_mla;    /* attention.value_length_mla (0: absent) */
	uint32_t n_lora_q;             /* attention.q_lora_rank (0: absent, a plain attn_q) */
	uint32_t n_lora_kv;            /* attention.kv_lora_rank (0: absent) */
	uint32_t n_layer_dense_lead;   /* leading_dense_block_count: layers before the first MoE one */
	uint32_t n_rot;                /* rope.dimension_count (default n_embd_head_k) */
	float rope_freq_base;          /* rope.freq_base (default 10000) */
	float rope_freq_base_swa;      /* rope.freq_base_swa: of the sliding-window layers (0: absent) */
	char rope_scaling_name[TERN_ARCH_NAME_MAX]; /* rope.scaling.type as in the file */
	enum tern_rope_scaling rope_scaling;        /* ... decoded (default none, linear if a factor is given) */
	float rope_scaling_factor;     /* rope.scaling.factor (default 1) */
	float rope_attn_factor;        /* rope.scaling.attn_factor: LongRoPE's cos/sin multiplier, YaRN's (default 1) */
	uint32_t n_ctx_orig;           /* rope.scaling.original_context_length (default n_ctx_train) */
	float rope_yarn_log_mul;       /* rope.scaling.yarn_log_multiplier as stored (0: absent) */
	float norm_eps;                /* attention.layer_norm_epsilon (0: absent) */
	float norm_rms_eps;            /* attention.layer_norm_rms_epsilon (0: absent) */
	uint32_t n_expert;             /* expert_count (0: dense) */
	uint32_t n_expert_used;        /* expert_used_count */
	uint32_t n_ff_exp;             /* expert_feed_forward_length */
	uint32_t n_expert_shared;      /* expert_shared_count */
	uint32_t n_ff_shexp;           /* expert_shared_feed_forward_length (0: absent) */
	float expert_weights_scale;    /* expert_weights_scale (0: absent) */
	uint32_t expert_gating_func;   /* expert_gating_func: llama.cpp's 1 softmax, 2 sigmoid, 3 softmax
					* of the selected (0: absent, the family decides) */
	uint32_t n_expert_group;       /* expert_group_count (0: absent) */
	uint32_t n_expert_group_used;  /* expert_group_used_count */
	uint32_t n_swa;                /* attention.sliding_window (0: none) */
	float attn_softcap;            /* attn_logit_softcapping (0: none) */
	float final_softcap;           /* final_logit_softcapping (0: none) */
	uint32_t n_ff_l[TERN_ARCH_MAX_LAYERS];      /* [n_layer] */
	uint32_t n_head_l[TERN_ARCH_MAX_LAYERS];    /* [n_layer] */
	uint32_t n_head_kv_l[TERN_ARCH_MAX_LAYERS]; /* [n_layer] */
	uint64_t present;              /* bit i: field i of tern_arch_llm_fields() is in the file */
	uint64_t per_layer;            /* bit i: ... and was given per layer (an array) */
};

const struct tern_arch_field *tern_arch_llm_fields(size_t *n);

/* Fill hp from the file's "ARCH.*" keys and apply the defaults. Fails only
 * when a key has the wrong type or a value out of range (TERN_ETYPE,
 * TERN_ERANGE, TERN_EFORMAT for a per-layer array of the wrong length);
 * TERN_ENOTFOUND when the file names no architecture. Missing keys are
 * for tern_arch_llm_validate to judge. */
int tern_arch_llm_read(const tern_mf *m, struct tern_arch_llm *hp, tern_err *e);
/* Whether a model can be built: required keys present, sizes non-zero and
 * consistent (heads divide, RoPE fits the head, experts). TERN_EFORMAT with
 * a message naming the key. */
int tern_arch_llm_validate(const struct tern_arch_llm *hp, tern_err *e);
/* read + validate: what a model loader calls. */
int tern_arch_llm_load(const tern_mf *m, struct tern_arch_llm *hp, tern_err *e);

/* ---- Whisper (legacy ggml) ------------------------------------------------- */

/* Whisper's token embedding has n_vocab rows: the 50257 text tokens the
 * file stores (n_vocab_stored) followed by special tokens (end of text,
 * start of transcript, the languages, tasks and timestamps) that the file
 * does not store and the loader names. */
struct tern_arch_whisper {
	uint32_t n_vocab;        /* whisper.n_vocab: 51864 English-only, 51865+ multilingual */
	uint32_t n_vocab_stored; /* tokens stored in the file */
	uint32_t n_audio_ctx, n_audio_state, n_audio_head, n_audio_layer;
	uint32_t n_text_ctx, n_text_state, n_text_head, n_text_layer;
	uint32_t n_mels;
	uint32_t ftype;
	bool multilingual;       /* n_vocab >= 51865 (as whisper.cpp and OpenAI's code decide) */
	uint32_t n_languages;    /* multilingual: n_vocab - 51765 - 1; English-only: 0 */
	uint64_t present;        /* bit i: field i of tern_arch_whisper_fields() */
};

const struct tern_arch_field *tern_arch_whisper_fields(size_t *n);
int tern_arch_whisper_read(const tern_mf *m, struct tern_arch_whisper *hp, tern_err *e);
int tern_arch_whisper_validate(const struct tern_arch_whisper *hp, tern_err *e);
int tern_arch_whisper_load(const tern_mf *m, struct tern_arch_whisper *hp, tern_err *e);

/* ---- Silero VAD (legacy ggml) ---------------------------------------------- */

#define TERN_ARCH_SILERO_MAX_ENCODERS 8

struct tern_arch_silero {
	uint32_t version_major, version_minor, version_patch;
	uint32_t n_window;         /* samples per window (512 at 16 kHz) */
	uint32_t n_context;        /* samples of context carried between windows */
	uint32_t n_encoder_layers;
	struct { uint32_t in_channels, out_channels, kernel_size; } encoder[TERN_ARCH_SILERO_MAX_ENCODERS];
	uint32_t lstm_input_size, lstm_hidden_size;
	uint32_t final_conv_in, final_conv_out;
	uint64_t present;          /* bit i: field i of tern_arch_silero_fields() */
};

const struct tern_arch_field *tern_arch_silero_fields(size_t *n);
int tern_arch_silero_read(const tern_mf *m, struct tern_arch_silero *hp, tern_err *e);
int tern_arch_silero_validate(const struct tern_arch_silero *hp, tern_err *e);
int tern_arch_silero_load(const tern_mf *m, struct tern_arch_silero *hp, tern_err *e);

#endif
