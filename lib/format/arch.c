/* arch.c - hyperparameter tables, reading with defaults, validation (see
 * arch.h). Key names follow llama.cpp's LLM_KV_* table (src/llama-arch.cpp)
 * and whisper.cpp's legacy header; facts such as the Whisper vocabulary
 * layout come from whisper.cpp's loader. */
#include "lib/format/arch.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define F(key, label, json, type, st, field) {key, label, json, type, offsetof(st, field), 0, false}
#define R(key, label, json, type, st, field) {key, label, json, type, offsetof(st, field), 0, true}
#define L(key, label, json, st, field, arr, req) \
	{key, label, json, TERN_ARCH_U32_LAYERS, offsetof(st, field), offsetof(st, arr), req}

/* Order: the order of inspect's summary. block_count comes before the
 * per-layer fields, whose arrays it sizes. */
static const struct tern_arch_field llm_fields[] = {
	R("context_length", "context length", "context_length", TERN_ARCH_U32, struct tern_arch_llm, n_ctx_train),
	R("embedding_length", "embedding size", "embedding_length", TERN_ARCH_U32, struct tern_arch_llm, n_embd),
	R("block_count", "layers", "block_count", TERN_ARCH_U32, struct tern_arch_llm, n_layer),
	L("attention.head_count", "heads", "head_count", struct tern_arch_llm, n_head, n_head_l, false),
	L("attention.head_count_kv", "kv heads", "head_count_kv", struct tern_arch_llm, n_head_kv, n_head_kv_l, false),
	F("attention.key_length", "key length", "key_length", TERN_ARCH_U32, struct tern_arch_llm, n_embd_head_k),
	F("attention.value_length", "value length", "value_length", TERN_ARCH_U32, struct tern_arch_llm, n_embd_head_v),
	F("attention.key_length_mla", "key length (MLA)", "key_length_mla", TERN_ARCH_U32, struct tern_arch_llm,
	  n_embd_head_k_mla),
	F("attention.value_length_mla", "value length (MLA)", "value_length_mla", TERN_ARCH_U32, struct tern_arch_llm,
	  n_embd_head_v_mla),
	F("attention.q_lora_rank", "q lora rank", "q_lora_rank", TERN_ARCH_U32, struct tern_arch_llm, n_lora_q),
	F("attention.kv_lora_rank", "kv lora rank", "kv_lora_rank", TERN_ARCH_U32, struct tern_arch_llm, n_lora_kv),
	F("leading_dense_block_count", "leading dense layers", "leading_dense_block_count", TERN_ARCH_U32,
	  struct tern_arch_llm, n_layer_dense_lead),
	L("feed_forward_length", "feed-forward size", "feed_forward_length", struct tern_arch_llm, n_ff, n_ff_l, false),
	F("rope.dimension_count", "rope dims", "rope_dimension_count", TERN_ARCH_U32, struct tern_arch_llm, n_rot),
	F("rope.freq_base", "rope base", "rope_freq_base", TERN_ARCH_F32, struct tern_arch_llm, rope_freq_base),
	F("rope.freq_base_swa", "rope base (local)", "rope_freq_base_swa", TERN_ARCH_F32, struct tern_arch_llm,
	  rope_freq_base_swa),
	F("rope.scaling.type", "rope scaling", "rope_scaling_type", TERN_ARCH_STR, struct tern_arch_llm,
	  rope_scaling_name),
	F("rope.scaling.factor", "rope factor", "rope_scaling_factor", TERN_ARCH_F32, struct tern_arch_llm,
	  rope_scaling_factor),
	F("rope.scaling.attn_factor", "rope attn factor", "rope_scaling_attn_factor", TERN_ARCH_F32,
	  struct tern_arch_llm, rope_attn_factor),
	F("rope.scaling.original_context_length", "rope orig. context", "rope_original_context_length",
	  TERN_ARCH_U32, struct tern_arch_llm, n_ctx_orig),
	F("rope.scaling.yarn_log_multiplier", "yarn log multiplier", "rope_yarn_log_multiplier", TERN_ARCH_F32,
	  struct tern_arch_llm, rope_yarn_log_mul),
	F("attention.layer_norm_epsilon", "norm epsilon", "layer_norm_epsilon", TERN_ARCH_F32, struct tern_arch_llm,
	  norm_eps),
	F("attention.layer_norm_rms_epsilon", "rms norm epsilon", "layer_norm_rms_epsilon", TERN_ARCH_F32,
	  struct tern_arch_llm, norm_rms_eps),
	F("attention.sliding_window", "sliding window", "sliding_window", TERN_ARCH_U32, struct tern_arch_llm, n_swa),
	F("expert_count", "experts", "expert_count", TERN_ARCH_U32, struct tern_arch_llm, n_expert),
	F("expert_used_count", "experts used", "expert_used_count", TERN_ARCH_U32, struct tern_arch_llm,
	  n_expert_used),
	F("expert_feed_forward_length", "expert ff size", "expert_feed_forward_length", TERN_ARCH_U32,
	  struct tern_arch_llm, n_ff_exp),
	F("expert_shared_count", "shared experts", "expert_shared_count", TERN_ARCH_U32, struct tern_arch_llm,
	  n_expert_shared),
	F("expert_shared_feed_forward_length", "shared ff size", "expert_shared_feed_forward_length",
	  TERN_ARCH_U32, struct tern_arch_llm, n_ff_shexp),
	F("expert_weights_scale", "expert scale", "expert_weights_scale", TERN_ARCH_F32, struct tern_arch_llm,
	  expert_weights_scale),
	F("expert_gating_func", "expert gating", "expert_gating_func", TERN_ARCH_U32, struct tern_arch_llm,
	  expert_gating_func),
	F("expert_group_count", "expert groups", "expert_group_count", TERN_ARCH_U32, struct tern_arch_llm,
	  n_expert_group),
	F("expert_group_used_count", "expert groups used", "expert_group_used_count", TERN_ARCH_U32,
	  struct tern_arch_llm, n_expert_group_used),
	F("attn_logit_softcapping", "attn softcap", "attn_logit_softcapping", TERN_ARCH_F32, struct tern_arch_llm,
	  attn_softcap),
	F("final_logit_softcapping", "final softcap", "final_logit_softcapping", TERN_ARCH_F32, struct tern_arch_llm,
	  final_softcap),
	/* last: when absent it comes from the tokenizer's token list */
	R("vocab_size", "vocab size", "vocab_size", TERN_ARCH_U32, struct tern_arch_llm, n_vocab),
};

static const struct tern_arch_field whisper_fields[] = {
	R("n_vocab", "vocab size", "vocab_size", TERN_ARCH_U32, struct tern_arch_whisper, n_vocab),
	R("n_audio_ctx", "audio context", "n_audio_ctx", TERN_ARCH_U32, struct tern_arch_whisper, n_audio_ctx),
	R("n_audio_state", "audio width", "n_audio_state", TERN_ARCH_U32, struct tern_arch_whisper, n_audio_state),
	R("n_audio_head", "audio heads", "n_audio_head", TERN_ARCH_U32, struct tern_arch_whisper, n_audio_head),
	R("n_audio_layer", "audio layers", "n_audio_layer", TERN_ARCH_U32, struct tern_arch_whisper, n_audio_layer),
	R("n_text_ctx", "text context", "n_text_ctx", TERN_ARCH_U32, struct tern_arch_whisper, n_text_ctx),
	R("n_text_state", "text width", "n_text_state", TERN_ARCH_U32, struct tern_arch_whisper, n_text_state),
	R("n_text_head", "text heads", "n_text_head", TERN_ARCH_U32, struct tern_arch_whisper, n_text_head),
	R("n_text_layer", "text layers", "n_text_layer", TERN_ARCH_U32, struct tern_arch_whisper, n_text_layer),
	R("n_mels", "mel bands", "n_mels", TERN_ARCH_U32, struct tern_arch_whisper, n_mels),
	R("ftype", "ftype", "ftype", TERN_ARCH_U32, struct tern_arch_whisper, ftype),
};

static const struct tern_arch_field silero_fields[] = {
	R("version_major", "version major", "version_major", TERN_ARCH_U32, struct tern_arch_silero, version_major),
	R("version_minor", "version minor", "version_minor", TERN_ARCH_U32, struct tern_arch_silero, version_minor),
	R("version_patch", "version patch", "version_patch", TERN_ARCH_U32, struct tern_arch_silero, version_patch),
	R("n_window", "window", "n_window", TERN_ARCH_U32, struct tern_arch_silero, n_window),
	R("n_context", "context", "n_context", TERN_ARCH_U32, struct tern_arch_silero, n_context),
	R("n_encoder_layers", "encoder layers", "n_encoder_layers", TERN_ARCH_U32, struct tern_arch_silero,
	  n_encoder_layers),
	R("lstm_input_size", "lstm input", "lstm_input_size", TERN_ARCH_U32, struct tern_arch_silero, lstm_input_size),
	R("lstm_hidden_size", "lstm hidden", "lstm_hidden_size", TERN_ARCH_U32, struct tern_arch_silero,
	  lstm_hidden_size),
	R("final_conv_in", "final conv in", "final_conv_in", TERN_ARCH_U32, struct tern_arch_silero, final_conv_in),
	R("final_conv_out", "final conv out", "final_conv_out", TERN_ARCH_U32, struct tern_arch_silero,
	  final_conv_out),
};

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))
_Static_assert(COUNT(llm_fields) <= 64 && COUNT(whisper_fields) <= 64 && COUNT(silero_fields) <= 64,
	       "`present` has one bit per field");

const struct tern_arch_field *tern_arch_llm_fields(size_t *n) { *n = COUNT(llm_fields); return llm_fields; }
const struct tern_arch_field *tern_arch_whisper_fields(size_t *n) { *n = COUNT(whisper_fields); return whisper_fields; }
const struct tern_arch_field *tern_arch_silero_fields(size_t *n) { *n = COUNT(silero_fields); return silero_fields; }

/* ---- reading one key ---------------------------------------------------- */

static int get_u32(const struct gguf_value *v, const char *key, uint32_t *out, tern_err *e)
{
	if (!gguf_value_is_int(v))
		return tern_errf(e, TERN_ETYPE, "key '%s': %s, want an integer", key, gguf_vtype_name(v->type));
	int64_t i = gguf_value_i64(v);
	uint64_t u = gguf_value_u64(v);
	bool neg = v->type != GGUF_T_U64 && i < 0;
	if (neg || u > UINT32_MAX)
		return tern_errf(e, TERN_ERANGE, "key '%s': %s is out of range (0..4294967295)", key,
				 neg ? "a negative value" : "a value above 2^32");
	*out = (uint32_t)u;
	return 0;
}

static int get_f32(const struct gguf_value *v, const char *key, float *out, tern_err *e)
{
	if (v->type != GGUF_T_F32 && v->type != GGUF_T_F64)
		return tern_errf(e, TERN_ETYPE, "key '%s': %s, want a float", key, gguf_vtype_name(v->type));
	double d = gguf_value_f64(v);
	if (!isfinite(d) || fabs(d) > 3.4e38)
		return tern_errf(e, TERN_ERANGE, "key '%s': %g is not a finite float32", key, d);
	*out = (float)d;
	return 0;
}

/* A per-layer value: a scalar for every layer, or an array of n_layer
 * integers. The scalar field gets the largest (what sizes buffers). */
static int get_layers(const struct gguf_value *v, const char *key, uint32_t n_layer, uint32_t *scalar,
		      uint32_t *arr, bool *is_arr, tern_err *e)
{
	*is_arr = v->type == GGUF_T_ARRAY;
	if (!*is_arr) {
		int rc = get_u32(v, key, scalar, e);
		for (uint32_t l = 0; !rc && l < n_layer; l++)
			arr[l] = *scalar;
		return rc;
	}
	if (!gguf_vtype_size(v->elem) || v->elem == GGUF_T_F32 || v->elem == GGUF_T_F64 || v->elem == GGUF_T_BOOL)
		return tern_errf(e, TERN_ETYPE, "key '%s': array of %s, want integers", key, gguf_vtype_name(v->elem));
	if (v->n != n_layer)
		return tern_errf(e, TERN_EFORMAT, "key '%s': %llu values for %u layers", key,
				 (unsigned long long)v->n, n_layer);
	*scalar = 0;
	for (uint64_t l = 0; l < v->n; l++) {
		struct gguf_value x;
		if (gguf_arr_elem(v, l, &x))
			return tern_errf(e, TERN_EFORMAT, "key '%s': cannot read element %llu", key, (unsigned long long)l);
		int rc = get_u32(&x, key, &arr[l], e);
		if (rc)
			return rc;
		if (arr[l] > *scalar)
			*scalar = arr[l];
	}
	return 0;
}

static int get_str(const struct gguf_value *v, const char *key, char *out, tern_err *e)
{
	if (v->type != GGUF_T_STRING)
		return tern_errf(e, TERN_ETYPE, "key '%s': %s, want a string", key, gguf_vtype_name(v->type));
	if (v->s.len >= TERN_ARCH_NAME_MAX || memchr(v->s.ptr, 0, v->s.len))
		return tern_errf(e, TERN_ERANGE, "key '%s': not a short name (%llu bytes)", key,
				 (unsigned long long)v->s.len);
	memcpy(out, v->s.ptr, v->s.len);
	out[v->s.len] = 0;
	return 0;
}

/* Read every field of a table that the file has, keys "PREFIX.KEY". */
static int read_fields(const tern_mf *m, const char *prefix, const struct tern_arch_field *f, size_t nf,
		       void *base, uint32_t n_layer, uint64_t *present, uint64_t *per_layer, tern_err *e)
{
	char *b = base;
	for (size_t i = 0; i < nf; i++) {
		char key[160];
		snprintf(key, sizeof key, "%s.%s", prefix, f[i].key);
		const struct tern_mf_kv *kv = tern_mf_find(m, key);
		if (!kv)
			continue;
		int rc = 0;
		bool arr = false;
		switch (f[i].type) {
		case TERN_ARCH_U32: rc = get_u32(&kv->v, key, (uint32_t *)(b + f[i].offset), e); break;
		case TERN_ARCH_F32: rc = get_f32(&kv->v, key, (float *)(b + f[i].offset), e); break;
		case TERN_ARCH_STR: rc = get_str(&kv->v, key, b + f[i].offset, e); break;
		case TERN_ARCH_U32_LAYERS:
			rc = get_layers(&kv->v, key, n_layer, (uint32_t *)(b + f[i].offset),
					(uint32_t *)(b + f[i].layers_offset), &arr, e);
			break;
		}
		if (rc)
			return rc;
		*present |= 1ull << i;
		if (arr && per_layer)
			*per_layer |= 1ull << i;
	}
	return 0;
}

static bool has(uint64_t present, const struct tern_arch_field *f, size_t nf, const char *key)
{
	for (size_t i = 0; i < nf; i++)
		if (strcmp(f[i].key, key) == 0)
			return present >> i & 1;
	return false;
}

/* The first required field missing, or NULL. */
static const char *missing(uint64_t present, const struct tern_arch_field *f, size_t nf)
{
	for (size_t i = 0; i < nf; i++)
		if (f[i].required && !(present >> i & 1))
			return f[i].key;
	return NULL;
}

const char *tern_arch_family_hint(enum tern_arch_family f)
{
	return f == TERN_ARCH_WHISPER ? " (tern-transcribe runs it)" : f == TERN_ARCH_SILERO ? " (tern-vad runs it)" : "";
}

enum tern_arch_family tern_arch_family(const tern_mf *m, char *name, size_t cap)
{
	if (cap)
		name[0] = 0;
	const char *variant = tern_mf_variant(m);
	if (variant) {
		snprintf(name, cap, "%s", variant);
		return strcmp(variant, "whisper") == 0 ? TERN_ARCH_WHISPER : TERN_ARCH_SILERO;
	}
	const struct tern_mf_kv *kv = tern_mf_find(m, "general.architecture");
	if (!kv || kv->v.type != GGUF_T_STRING || !kv->v.s.len || kv->v.s.len >= cap ||
	    memchr(kv->v.s.ptr, 0, kv->v.s.len))
		return TERN_ARCH_NONE;
	memcpy(name, kv->v.s.ptr, kv->v.s.len);
	name[kv->v.s.len] = 0;
	return TERN_ARCH_LLM;
}

/* ---- language models ---------------------------------------------------- */

int tern_arch_llm_read(const tern_mf *m, struct tern_arch_llm *hp, tern_err *e)
{
	memset(hp, 0, sizeof *hp);
	if (tern_arch_family(m, hp->arch, sizeof hp->arch) != TERN_ARCH_LLM)
		return tern_errf(e, TERN_ENOTFOUND, "no general.architecture naming a language model");
	/* block_count first: it sizes the per-layer arrays */
	char key[160];
	snprintf(key, sizeof key, "%s.block_count", hp->arch);
	const struct tern_mf_kv *kv = tern_mf_find(m, key);
	if (kv) {
		int rc = get_u32(&kv->v, key, &hp->n_layer, e);
		if (rc)
			return rc;
		if (hp->n_layer > TERN_ARCH_MAX_LAYERS)
			return tern_errf(e, TERN_ERANGE, "key '%s': %u layers, at most %d are supported", key,
					 hp->n_layer, TERN_ARCH_MAX_LAYERS);
	}
	int rc = read_fields(m, hp->arch, llm_fields, COUNT(llm_fields), hp, hp->n_layer, &hp->present,
			     &hp->per_layer, e);
	if (rc)
		return rc;

	/* defaults, as llama.cpp's loader applies them */
	size_t nf = COUNT(llm_fields);
	if (!has(hp->present, llm_fields, nf, "vocab_size")) {
		const struct tern_mf_kv *tok = tern_mf_find(m, "tokenizer.ggml.tokens");
		if (tok && tok->v.type == GGUF_T_ARRAY && tok->v.n <= UINT32_MAX)
			hp->n_vocab = (uint32_t)tok->v.n;
	}
	if (!has(hp->present, llm_fields, nf, "attention.head_count_kv")) {
		hp->n_head_kv = hp->n_head;
		memcpy(hp->n_head_kv_l, hp->n_head_l, sizeof hp->n_head_kv_l);
	}
	if (!has(hp->present, llm_fields, nf, "attention.key_length") && hp->n_head)
		hp->n_embd_head_k = hp->n_embd / hp->n_head;
	if (!has(hp->present, llm_fields, nf, "attention.value_length") && hp->n_head)
		hp->n_embd_head_v = hp->n_embd / hp->n_head;
	if (!has(hp->present, llm_fields, nf, "rope.dimension_count"))
		hp->n_rot = hp->n_embd_head_k;
	if (!has(hp->present, llm_fields, nf, "rope.freq_base"))
		hp->rope_freq_base = 10000.0f;
	if (!has(hp->present, llm_fields, nf, "rope.scaling.factor"))
		hp->rope_scaling_factor = 1.0f;
	if (!has(hp->present, llm_fields, nf, "rope.scaling.attn_factor"))
		hp->rope_attn_factor = 1.0f;
	if (!has(hp->present, llm_fields, nf, "rope.scaling.original_context_length"))
		hp->n_ctx_orig = hp->n_ctx_train;
	if (!hp->rope_scaling_name[0])
		hp->rope_scaling = hp->rope_scaling_factor != 1.0f ? TERN_ROPE_SCALING_LINEAR : TERN_ROPE_SCALING_NONE;
	else if (strcmp(hp->rope_scaling_name, "none") == 0)
		hp->rope_scaling = TERN_ROPE_SCALING_NONE;
	else if (strcmp(hp->rope_scaling_name, "linear") == 0)
		hp->rope_scaling = TERN_ROPE_SCALING_LINEAR;
	else if (strcmp(hp->rope_scaling_name, "yarn") == 0)
		hp->rope_scaling = TERN_ROPE_SCALING_YARN;
	else if (strcmp(hp->rope_scaling_name, "longrope") == 0)
		hp->rope_scaling = TERN_ROPE_SCALING_LONGROPE;
	else
		return tern_errf(e, TERN_EUNSUPPORTED, "key '%s.rope.scaling.type': unknown scaling '%s'", hp->arch,
				 hp->rope_scaling_name);
	return 0;
}

int tern_arch_llm_validate(const struct tern_arch_llm *hp, tern_err *e)
{
	const char *a = hp->arch;
	const char *miss = missing(hp->present, llm_fields, COUNT(llm_fields));
	if (miss && strcmp(miss, "vocab_size") != 0)
		return tern_errf(e, TERN_EFORMAT, "missing key '%s.%s'", a, miss);
	if (!hp->n_vocab)
		return tern_errf(e, TERN_EFORMAT, "no vocabulary size: neither '%s.vocab_size' nor tokenizer.ggml.tokens", a);
	if (!hp->n_ctx_train || !hp->n_embd || !hp->n_layer)
		return tern_errf(e, TERN_EFORMAT, "'%s.%s' is 0", a,
				 !hp->n_ctx_train ? "context_length" : !hp->n_embd ? "embedding_length" : "block_count");
	if (!hp->n_head)
		return tern_errf(e, TERN_EFORMAT, "'%s.attention.head_count' is missing or 0", a);
	for (uint32_t l = 0; l < hp->n_layer; l++) {
		uint32_t h = hp->n_head_l[l], kv = hp->n_head_kv_l[l];
		if (kv && (kv > h || h % kv))
			return tern_errf(e, TERN_EFORMAT, "layer %u: %u kv heads do not divide %u heads "
					 "('%s.attention.head_count_kv')", l, kv, h, a);
	}
	if (!has(hp->present, llm_fields, COUNT(llm_fields), "attention.key_length") && hp->n_embd % hp->n_head)
		return tern_errf(e, TERN_EFORMAT, "embedding size %u is not a multiple of %u heads ('%s.attention.head_count')",
				 hp->n_embd, hp->n_head, a);
	if (!hp->n_embd_head_k || !hp->n_embd_head_v)
		return tern_errf(e, TERN_EFORMAT, "'%s.attention.key_length' / value_length is 0", a);
	if (hp->n_rot > hp->n_embd_head_k || hp->n_rot % 2)
		return tern_errf(e, TERN_EFORMAT, "'%s.rope.dimension_count' = %u: must be even and at most the head size %u",
				 a, hp->n_rot, hp->n_embd_head_k);
	if (!(hp->rope_freq_base > 0))
		return tern_errf(e, TERN_EFORMAT, "'%s.rope.freq_base' = %g: must be positive", a, (double)hp->rope_freq_base);
	if (has(hp->present, llm_fields, sizeof llm_fields / sizeof llm_fields[0], "rope.freq_base_swa") &&
	    !(hp->rope_freq_base_swa > 0))
		return tern_errf(e, TERN_EFORMAT, "'%s.rope.freq_base_swa' = %g: must be positive", a,
				 (double)hp->rope_freq_base_swa);
	if (!(hp->rope_scaling_factor > 0))
		return tern_errf(e, TERN_EFORMAT, "'%s.rope.scaling.factor' = %g: must be positive", a,
				 (double)hp->rope_scaling_factor);
	if (!(hp->rope_attn_factor > 0))
		return tern_errf(e, TERN_EFORMAT, "'%s.rope.scaling.attn_factor' = %g: must be positive", a,
				 (double)hp->rope_attn_factor);
	if (hp->norm_eps < 0 || hp->norm_rms_eps < 0)
		return tern_errf(e, TERN_EFORMAT, "'%s.attention.layer_norm%s_epsilon' is negative", a,
				 hp->norm_eps < 0 ? "" : "_rms");
	if (hp->n_expert_used > hp->n_expert || (hp->n_expert && !hp->n_expert_used))
		return tern_errf(e, TERN_EFORMAT, "'%s.expert_used_count' = %u with %u experts", a, hp->n_expert_used,
				 hp->n_expert);
	if (hp->attn_softcap < 0 || hp->final_softcap < 0)
		return tern_errf(e, TERN_EFORMAT, "'%s.%s_logit_softcapping' is negative", a,
				 hp->attn_softcap < 0 ? "attn" : "final");
	return 0;
}

int tern_arch_llm_load(const tern_mf *m, struct tern_arch_llm *hp, tern_err *e)
{
	int rc = tern_arch_llm_read(m, hp, e);
	return rc ? rc : tern_arch_llm_validate(hp, e);
}

/* ---- Whisper ---------------------------------------------------------------- */

/* whisper.cpp: the vocabulary of the English-only models has 51864 ids,
 * the multilingual ones 51865 or more, with one language id per id beyond
 * 51765 (less the one the multilingual layout adds). */
#define WHISPER_MULTILINGUAL_VOCAB 51865u
#define WHISPER_LANGUAGE_BASE 51765u

int tern_arch_whisper_read(const tern_mf *m, struct tern_arch_whisper *hp, tern_err *e)
{
	memset(hp, 0, sizeof *hp);
	const char *v = tern_mf_variant(m);
	if (!v || strcmp(v, "whisper") != 0)
		return tern_errf(e, TERN_ENOTFOUND, "not a legacy Whisper file");
	int rc = read_fields(m, "whisper", whisper_fields, COUNT(whisper_fields), hp, 0, &hp->present, NULL, e);
	if (rc)
		return rc;
	const struct tern_mf_kv *tok = tern_mf_find(m, "tokenizer.tokens");
	if (tok && tok->v.type == GGUF_T_ARRAY && tok->v.n <= UINT32_MAX)
		hp->n_vocab_stored = (uint32_t)tok->v.n;
	hp->multilingual = hp->n_vocab >= WHISPER_MULTILINGUAL_VOCAB;
	hp->n_languages = hp->multilingual ? hp->n_vocab - WHISPER_LANGUAGE_BASE - 1 : 0;
	return 0;
}

int tern_arch_whisper_validate(const struct tern_arch_whisper *hp, tern_err *e)
{
	const char *miss = missing(hp->present, whisper_fields, COUNT(whisper_fields));
	if (miss)
		return tern_errf(e, TERN_EFORMAT, "missing hyperparameter whisper.%s", miss);
	const struct tern_arch_field *f = whisper_fields;
	for (size_t i = 0; i + 1 < COUNT(whisper_fields); i++) /* all but ftype */
		if (!*(const uint32_t *)((const char *)hp + f[i].offset))
			return tern_errf(e, TERN_EFORMAT, "hyperparameter whisper.%s is 0", f[i].key);
	if (hp->n_audio_state % hp->n_audio_head || hp->n_text_state % hp->n_text_head)
		return tern_errf(e, TERN_EFORMAT, "whisper.n_%s_head = %u does not divide the width %u",
				 hp->n_audio_state % hp->n_audio_head ? "audio" : "text",
				 hp->n_audio_state % hp->n_audio_head ? hp->n_audio_head : hp->n_text_head,
				 hp->n_audio_state % hp->n_audio_head ? hp->n_audio_state : hp->n_text_state);
	if (hp->n_vocab_stored >= hp->n_vocab)
		return tern_errf(e, TERN_EFORMAT, "whisper.n_vocab = %u leaves no room for the special tokens after the "
				 "%u stored ones", hp->n_vocab, hp->n_vocab_stored);
	return 0;
}

int tern_arch_whisper_load(const tern_mf *m, struct tern_arch_whisper *hp, tern_err *e)
{
	int rc = tern_arch_whisper_read(m, hp, e);
	return rc ? rc : tern_arch_whisper_validate(hp, e);
}

/* ---- Silero ------------------------------------------------------------------ */

int tern_arch_silero_read(const tern_mf *m, struct tern_arch_silero *hp, tern_err *e)
{
	memset(hp, 0, sizeof *hp);
	const char *v = tern_mf_variant(m);
	if (!v || strcmp(v, "silero") != 0)
		return tern_errf(e, TERN_ENOTFOUND, "not a legacy Silero file");
	int rc = read_fields(m, "silero", silero_fields, COUNT(silero_fields), hp, 0, &hp->present, NULL, e);
	if (rc)
		return rc;
	if (hp->n_encoder_layers > TERN_ARCH_SILERO_MAX_ENCODERS)
		return tern_errf(e, TERN_ERANGE, "silero.n_encoder_layers = %u, at most %d are supported",
				 hp->n_encoder_layers, TERN_ARCH_SILERO_MAX_ENCODERS);
	static const char *const what[3] = {"in_channels", "out_channels", "kernel_size"};
	for (uint32_t l = 0; l < hp->n_encoder_layers; l++) {
		uint32_t *dst[3] = {&hp->encoder[l].in_channels, &hp->encoder[l].out_channels,
				    &hp->encoder[l].kernel_size};
		for (int k = 0; k < 3; k++) {
			char key[96];
			snprintf(key, sizeof key, "silero.encoder.%u.%s", l, what[k]);
			const struct tern_mf_kv *kv = tern_mf_find(m, key);
			if (!kv)
				return tern_errf(e, TERN_EFORMAT, "missing hyperparameter %s", key);
			if ((rc = get_u32(&kv->v, key, dst[k], e)))
				return rc;
		}
	}
	return 0;
}

int tern_arch_silero_validate(const struct tern_arch_silero *hp, tern_err *e)
{
	const char *miss = missing(hp->present, silero_fields, COUNT(silero_fields));
	if (miss)
		return tern_errf(e, TERN_EFORMAT, "missing hyperparameter silero.%s", miss);
	if (!hp->n_window || !hp->n_encoder_layers || !hp->lstm_hidden_size || !hp->final_conv_out)
		return tern_errf(e, TERN_EFORMAT, "silero: window, encoder layers, LSTM and output sizes must be non-zero");
	for (uint32_t l = 0; l < hp->n_encoder_layers; l++) {
		if (!hp->encoder[l].in_channels || !hp->encoder[l].out_channels || !hp->encoder[l].kernel_size)
			return tern_errf(e, TERN_EFORMAT, "silero.encoder.%u: a size is 0", l);
		if (l && hp->encoder[l].in_channels != hp->encoder[l - 1].out_channels)
			return tern_errf(e, TERN_EFORMAT, "silero.encoder.%u.in_channels = %u, the previous layer gives %u",
					 l, hp->encoder[l].in_channels, hp->encoder[l - 1].out_channels);
	}
	uint32_t last = hp->encoder[hp->n_encoder_layers - 1].out_channels;
	if (hp->lstm_input_size != last)
		return tern_errf(e, TERN_EFORMAT, "silero.lstm_input_size = %u, the encoder gives %u",
				 hp->lstm_input_size, last);
	if (hp->final_conv_in != hp->lstm_hidden_size)
		return tern_errf(e, TERN_EFORMAT, "silero.final_conv_in = %u, the LSTM gives %u", hp->final_conv_in,
				 hp->lstm_hidden_size);
	return 0;
}

int tern_arch_silero_load(const tern_mf *m, struct tern_arch_silero *hp, tern_err *e)
{
	int rc = tern_arch_silero_read(m, hp, e);
	return rc ? rc : tern_arch_silero_validate(hp, e);
}
