/* gen_synth_llm.c - tiny synthetic LLMs for the forward-pass tests, written
 * with tern's own GGUF writer: fixed seeds, so the same command writes the
 * same bytes on every machine (the weights come from an integer generator
 * and exact float arithmetic only, no libm), and llama.cpp's logits for
 * them are committed as test data (tests/data/llm_ref/synth/).
 *
 *   gen_synth_llm ARCH TYPE OUT.gguf
 *     ARCH: llama | qwen2 | qwen3 | gemma3, or llama-linear / llama-freqs:
 *           the llama model (same weights) with linear RoPE scaling of
 *           factor 4 / with a rope_freqs.weight tensor (Llama 3 style),
 *           or qwen3-yarn / gemma3-yarn: the qwen3 / gemma3 models (same
 *           weights) with YaRN of factor 4 / 8 over an original context of
 *           256 (context_length factor times that, as Qwen3's 128K files
 *           declare 4 x 32768): at base 1e6 and 128 rotated dimensions
 *           pair 0 keeps its angle, pairs 1..18 are mixed, the rest scaled,
 *           so that 24 positions show it (gemma3's local layers stay
 *           unscaled, as llama.cpp runs them),
 *           or tinyllama: a llama of TinyLlama-1.1B's shape (n_embd 2048,
 *           22 layers, 32 heads over 4 KV heads, n_ff 5632, 32000 tokens)
 *           for speed comparisons, not reference data; bench-1b and
 *           bench-7b: TinyLlama's and Llama-2-7B's shapes (4096, 32
 *           layers, 32 heads of 128, n_ff 11008, context 4096) with
 *           random blocks of the quantized types (fast_blocks: seconds
 *           for 7B), for
 *           scripts/gpu_check.sh's speed runs only; or gemma | gemma2 |
 *           phi2 | phi3 | phi3-long (see gen_gemma_phi below)
 *           Embedding models (lib/llm/embed.h): bert, nomic-bert (see
 *           gen_encoder below), and llama-mean / qwen3-last: the llama /
 *           qwen3 models (same weights) with {arch}.pooling_type mean /
 *           last, as embedding files of those families declare it
 *     TYPE: f32 | q8_0 | q4_0 | q4_k  (every 2-D weight, token_embd and
 *           output included; norms and biases stay F32), or q4_k_m:
 *           llama.cpp's Q4_K_M mix (Q4_K, with Q6_K for output.weight and
 *           for attn_v / ffn_down of the first and last eighth of the layers
 *           and every third layer between)
 *
 * Shapes (multiples of 256 so that Q4_K applies everywhere): n_embd 256,
 * n_ff 512, 4 query heads over 2 KV heads (GQA 2).  llama / qwen2: head
 * dim 64, 2 layers, untied output (llama) / tied (qwen2).  qwen3 / gemma3:
 * head dim 128 (4 x 128 != n_embd, as in the real models), tied output
 * (qwen3) / untied (gemma3: the real Gemma 3 270M covers tied gemma3;
 * tied with the sqrt(n_embd) scale, a tiny model only repeats its input);
 * gemma3 has 6 layers (5 sliding-window layers of window 4, then one
 * global; RoPE bases 1e6 global, 10000 local by llama.cpp's default since
 * the real files omit rope.freq_base_swa), pre and post norms, GeGLU and
 * the sqrt(n_embd) embedding scale.
 *
 * deepseek2 (multi-head latent attention, DeepSeek-V2/V3's layout as
 * llama.cpp's converter writes it): n_embd 256, 4 heads of 32 unrotated +
 * 32 RoPE dimensions (key_length_mla 64), value heads of 64, a KV latent of
 * kv_lora_rank 64 (the cache row: 64 + 32), 2 dense layers
 * (leading_dense_block_count 2), untied output. Variants:
 *   deepseek2        V2-Lite style: q_lora_rank 0 (a plain attn_q), no
 *                    RoPE scaling, attn_k_b / attn_v_b (the _mla keys);
 *   deepseek2-yarn   V3 style: the query through q_lora_rank 128
 *                    (attn_q_a, attn_q_a_norm, attn_q_b) and YaRN (factor
 *                    40 over 4096 positions, yarn_log_multiplier 0.0707 as
 *                    V2's files carry);
 *   deepseek2-kvb    older conversions: no _mla keys, key_length 64 /
 *                    value_length 64 over 4 KV heads and the joint
 *                    attn_kv_b (llama.cpp runs it without absorption, as
 *                    plain multi-head attention: an independent check);
 *   deepseek2-moe    V2-Lite's mixture of experts: 3 layers, the first
 *                    dense, then 8 experts of 128 (3 used, softmax router,
 *                    weights neither normalized nor scaled) and 2 shared;
 *   deepseek2-gate-up deepseek2-moe's weights with each layer's gate and
 *                    up stacks merged into one ffn_gate_up_exps {256, 2 x
 *                    128, 8} (per expert its gate rows, then its up rows),
 *                    the layout llama.cpp also reads;
 *   deepseek2-v3     V3's: q_lora_rank 128, YaRN with yarn_log_multiplier
 *                    0.1 (mscale_all_dim 1), 16 experts in 4 groups (the 2
 *                    best groups compete, 4 experts used), sigmoid router
 *                    with the selection bias exp_probs_b, weights
 *                    normalized then scaled by 2.5, 1 shared expert;
 *   deepseek2-big    for speed, not reference data: DeepSeek-V2-Lite's
 *                    attention (16 heads of 128 + 64 RoPE dims, values of
 *                    128, kv_lora_rank 512), n_embd 2048, 8 dense layers of
 *                    5632, 32000 tokens.
 * Types f32, q8_0, q4_0 (the per-head matrices have rows of 32); the
 * router (ffn_gate_inp) and exp_probs_b stay f32 as converted files keep
 * them.
 *
 * Vocabulary: a 320-token SentencePiece ("llama") vocabulary: <unk> <s>
 * </s>, the 256 byte tokens, then 61 word pieces, BOS added.  It exists so
 * that llama.cpp loads the file; the tests feed token ids directly.
 *
 * "Realistic norms": norm weights near 1, projections scaled so that
 * attention scores and logits have a spread of a few units (logits are
 * far from flat, so a wrong forward pass changes the top-1). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/format/gguf.h"
#include "quant/quant.h"

/* the tiny models' shape; "tinyllama" replaces it (main) */
static uint32_t N_EMBD = 256, N_FF = 512, N_HEAD = 4, N_HEAD_KV = 2, N_VOCAB = 320;

static uint64_t rng_state;

static uint64_t rng_next(void)
{
	/* splitmix64 */
	uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* approximately N(0,1): the sum of 4 uniforms on [-1,1) times sqrt(3/4),
 * exact float arithmetic so every platform draws the same values */
static float gauss(void)
{
	float s = 0;
	for (int i = 0; i < 4; i++)
		s += (float)(rng_next() >> 40) * (2.0f / 16777216.0f) - 1.0f;
	return s * 0.8660254f;
}

struct gen {
	gguf_writer *w;
	uint32_t type;
	int q4_k_m; /* llama.cpp's Q4_K_M mix: Q6_K for output and some layers */
	int fast;   /* bench-1b / bench-7b: random blocks, nothing quantized */
};

/* A quantized matrix of random blocks whose scales are small and finite,
 * written without quantizing anything: a 7B model's 6.7 billion weights
 * would take minutes through the quantizers, and a speed measurement
 * does not look at the values. The f16 scale fields of each block type
 * are set to d = 2^-10 (and Q4_K's dmin to 2^-12). */
static int fast_blocks(struct gen *g, uint32_t type, const char *name, uint64_t cols, uint64_t rows)
{
	bool ok = true;
	size_t rs = quant_row_size(type, cols, &ok), n = rs * rows;
	uint8_t *q = malloc(n + 8);
	if (!ok || !q) {
		free(q);
		return -1;
	}
	uint64_t x = 0x9e3779b97f4a7c15ull ^ n;
	for (size_t i = 0; i < n; i += 8) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		memcpy(q + i, &x, 8);
	}
	const struct quant_type_info *ti = quant_type_info(type);
	const uint16_t d = 0x1400, dmin = 0x0c00; /* 2^-10, 2^-12 in f16 */
	for (size_t b = 0; b < n; b += ti->size) {
		if (type == QT_Q6_K) {
			memcpy(q + b + 208, &d, 2);
		} else if (type == QT_F16) {
			continue;
		} else {
			memcpy(q + b, &d, 2);
			if (type == QT_Q4_K || type == QT_Q5_K || type == QT_Q4_1 || type == QT_Q5_1)
				memcpy(q + b + 2, &dmin, 2);
		}
	}
	uint64_t ne[2] = { cols, rows };
	int rc = type == QT_F16 || type == QT_F32 ? -1 : gguf_writer_tensor(g->w, name, type, 2, ne, q);
	free(q);
	return rc;
}

static void fill(float *x, size_t n, float mean, float sd)
{
	for (size_t i = 0; i < n; i++)
		x[i] = mean + sd * gauss();
}

/* A 2-D weight {cols, rows} (ggml order: ne0 = cols, the dot length). */
static int mat_t(struct gen *g, uint32_t type, const char *name, uint64_t cols, uint64_t rows, float sd)
{
	if (g->fast && type != QT_F32)
		return fast_blocks(g, type, name, cols, rows);
	float *x = malloc(sizeof *x * cols * rows);
	if (!x)
		return -1;
	fill(x, cols * rows, 0, sd);
	uint64_t ne[2] = { cols, rows };
	int rc;
	if (type == QT_F32) {
		rc = gguf_writer_tensor(g->w, name, QT_F32, 2, ne, x);
	} else {
		bool ok = true;
		size_t rs = quant_row_size(type, cols, &ok);
		uint8_t *q = malloc(rs * rows);
		rc = ok && q ? 0 : -1;
		for (uint64_t r = 0; r < rows && !rc; r++)
			rc = quant_quantize_row(type, x + r * cols, q + r * rs, cols);
		if (!rc)
			rc = gguf_writer_tensor(g->w, name, type, 2, ne, q);
		free(q);
	}
	free(x);
	return rc;
}

static int mat(struct gen *g, const char *name, uint64_t cols, uint64_t rows, float sd)
{
	return mat_t(g, g->type, name, cols, rows, sd);
}

/* llama.cpp's Q4_K_M rule for attn_v / ffn_down of layer i of n: more bits
 * in the first and last eighth and every third layer between */
static uint32_t more_bits(const struct gen *g, uint32_t i, uint32_t n)
{
	if (!g->q4_k_m)
		return g->type;
	return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2 ? QT_Q6_K : QT_Q4_K;
}

static int vec(struct gen *g, const char *name, uint64_t n, float mean, float sd)
{
	float *x = malloc(sizeof *x * n);
	fill(x, n, mean, sd);
	int rc = gguf_writer_tensor(g->w, name, QT_F32, 1, &n, x);
	free(x);
	return rc;
}

static void key(char *buf, size_t n, const char *arch, const char *k)
{
	snprintf(buf, n, "%s.%s", arch, k);
}

#define SP "\xe2\x96\x81" /* U+2581, SentencePiece's space */

/* Write w to out unless rc says building it failed; free it. 0, or 1 with
 * a line on stderr. */
static int finish(gguf_writer *w, int rc, const char *out)
{
	tern_err e = { 0 };
	if (!rc)
		rc = gguf_writer_write(w, out, &e);
	if (rc)
		fprintf(stderr, "gen_synth_llm: %s\n", e.msg[0] ? e.msg : "cannot build the file");
	gguf_writer_free(w);
	return rc ? 1 : 0;
}

static void vocab(gguf_writer *w)
{
	static const char *words[] = {
		SP "the", SP "a", SP "of", SP "and", SP "to",
		SP "in", SP "is", SP "it", SP "that", SP "was",
		SP "for", SP "on", SP "with", SP "as", SP "he",
		SP "she", SP "at", SP "by", SP "this", SP "be",
		SP, "e", "t", "a", "o", "i", "n", "s", "r", "h", "l", "d", "c", "u", "m", "f",
		"p", "g", "w", "y", "b", "v", "k", "x", "j", "q", "z", ".", ",", "!", "?", "th", "he",
		"in", "er", "an", "re", "on", "at", "en", "nd",
	};
	const size_t nw = sizeof words / sizeof *words;
	const char **tok = malloc(sizeof *tok * N_VOCAB);
	static char bytes[256][8];
	float *score = malloc(sizeof *score * N_VOCAB);
	int32_t *type = malloc(sizeof *type * N_VOCAB);
	char *extra = malloc(16 * (size_t)N_VOCAB);
	tok[0] = "<unk>";
	tok[1] = "<s>";
	tok[2] = "</s>";
	type[0] = 2; /* unknown */
	type[1] = type[2] = 3; /* control */
	score[0] = score[1] = score[2] = 0;
	for (int b = 0; b < 256; b++) {
		snprintf(bytes[b], sizeof bytes[b], "<0x%02X>", b);
		tok[3 + b] = bytes[b];
		type[3 + b] = 6; /* byte */
		score[3 + b] = 0;
	}
	for (size_t i = 0; 259 + i < N_VOCAB; i++) {
		if (i < nw) {
			tok[259 + i] = words[i];
		} else { /* filler for the large vocabulary of "tinyllama" */
			snprintf(extra + 16 * i, 16, "<x%u>", (unsigned)i);
			tok[259 + i] = extra + 16 * i;
		}
		type[259 + i] = 1;
		score[259 + i] = -(float)i;
	}
	gguf_writer_str(w, "tokenizer.ggml.model", "llama");
	gguf_writer_arr_str(w, "tokenizer.ggml.tokens", tok, N_VOCAB);
	gguf_writer_arr(w, "tokenizer.ggml.scores", GGUF_T_F32, score, N_VOCAB);
	gguf_writer_arr(w, "tokenizer.ggml.token_type", GGUF_T_I32, type, N_VOCAB);
	gguf_writer_u32(w, "tokenizer.ggml.bos_token_id", 1);
	gguf_writer_u32(w, "tokenizer.ggml.eos_token_id", 2);
	gguf_writer_u32(w, "tokenizer.ggml.unknown_token_id", 0);
	gguf_writer_bool(w, "tokenizer.ggml.add_bos_token", true);
	gguf_writer_bool(w, "tokenizer.ggml.add_eos_token", false);
	free(tok);
	free(score);
	free(type);
	free(extra);
}

static int mat3(struct gen *g, uint32_t type, const char *name, uint64_t cols, uint64_t rows, uint64_t n_exp,
		float sd);
static int mat3_gate_up(struct gen *g, uint32_t type, const char *name, uint64_t cols, uint64_t rows,
			uint64_t n_exp, float sd);

/* deepseek2's keys and tensors (see the top of the file); 0 or -1 */
static int deepseek2(struct gen *g, int yarn, int kvb, int moe, int v3, int big, int gate_up)
{
	gguf_writer *w = g->w;
	const uint32_t nh = big ? 16 : 4, nope = big ? 128 : 32, nrot = big ? 64 : 32, hv = big ? 128 : 64;
	const uint32_t kvr = big ? 512 : 64, qr = yarn || v3 ? 128 : 0;
	const uint32_t n_layer = big ? 8 : moe || v3 ? 3 : 2, lead = moe || v3 ? 1 : n_layer;
	const uint32_t n_exp = v3 ? 16 : 8, n_used = v3 ? 4 : 3, n_shared = v3 ? 1 : 2, n_ff_exp = 128;
	char name[64];
	gguf_writer_u32(w, "deepseek2.context_length", 256);
	gguf_writer_u32(w, "deepseek2.embedding_length", N_EMBD);
	gguf_writer_u32(w, "deepseek2.block_count", n_layer);
	gguf_writer_u32(w, "deepseek2.feed_forward_length", N_FF);
	gguf_writer_u32(w, "deepseek2.attention.head_count", nh);
	gguf_writer_u32(w, "deepseek2.attention.head_count_kv", kvb ? nh : 1);
	gguf_writer_f32(w, "deepseek2.attention.layer_norm_rms_epsilon", 1e-6f);
	gguf_writer_f32(w, "deepseek2.rope.freq_base", 10000.0f);
	gguf_writer_u32(w, "deepseek2.rope.dimension_count", nrot);
	gguf_writer_u32(w, "deepseek2.leading_dense_block_count", lead);
	/* llama.cpp reads q_lora_rank unless it takes the file for V2-Lite (by
	 * its layer count): 0 means a plain attn_q */
	gguf_writer_u32(w, "deepseek2.attention.q_lora_rank", qr);
	gguf_writer_u32(w, "deepseek2.attention.kv_lora_rank", kvr);
	if (kvb) {
		gguf_writer_u32(w, "deepseek2.attention.key_length", nope + nrot);
		gguf_writer_u32(w, "deepseek2.attention.value_length", hv);
	} else {
		gguf_writer_u32(w, "deepseek2.attention.key_length", kvr + nrot);
		gguf_writer_u32(w, "deepseek2.attention.value_length", kvr);
		gguf_writer_u32(w, "deepseek2.attention.key_length_mla", nope + nrot);
		gguf_writer_u32(w, "deepseek2.attention.value_length_mla", hv);
	}
	gguf_writer_u32(w, "deepseek2.expert_feed_forward_length", moe || v3 ? n_ff_exp : N_FF);
	gguf_writer_u32(w, "deepseek2.expert_shared_count", moe || v3 ? n_shared : 0);
	if (moe || v3) {
		gguf_writer_u32(w, "deepseek2.expert_count", n_exp);
		gguf_writer_u32(w, "deepseek2.expert_used_count", n_used);
		gguf_writer_f32(w, "deepseek2.expert_weights_scale", v3 ? 2.5f : 1.0f);
	}
	if (v3) {
		gguf_writer_bool(w, "deepseek2.expert_weights_norm", true);
		gguf_writer_u32(w, "deepseek2.expert_gating_func", 2); /* llama.cpp's sigmoid */
		gguf_writer_u32(w, "deepseek2.expert_group_count", 4);
		gguf_writer_u32(w, "deepseek2.expert_group_used_count", 2);
	}
	if (yarn || v3) {
		gguf_writer_str(w, "deepseek2.rope.scaling.type", "yarn");
		gguf_writer_f32(w, "deepseek2.rope.scaling.factor", 40.0f);
		gguf_writer_u32(w, "deepseek2.rope.scaling.original_context_length", 4096);
		gguf_writer_f32(w, "deepseek2.rope.scaling.yarn_log_multiplier", v3 ? 0.1f : 0.0707f);
	}
	vocab(w);
	int rc = 0;
	rc |= mat(g, "token_embd.weight", N_EMBD, N_VOCAB, 1.0f);
	rc |= vec(g, "output_norm.weight", N_EMBD, 1.0f, 0.1f);
	rc |= mat(g, "output.weight", N_EMBD, N_VOCAB, 0.5f);
	/* q, the shared RoPE key: ~1.5 per value (in_sd as the other models);
	 * the latent is normed (~1), W_kb and W_vb ~1/sqrt(kv_lora_rank) */
	const float in_sd = big ? 1.5f / 45.254834f : 1.5f / 16.0f, lat_sd = big ? 1.0f / 22.627417f : 0.125f;
	const float o_sd = big ? 4.0f / 45.254834f : 4.0f / 16.0f, ff_sd = big ? 1.0f / 45.254834f : 1.0f / 16.0f;
	const float down_sd = big ? 4.0f / 75.04665f : 4.0f / 22.627417f;
	for (uint32_t l = 0; l < n_layer; l++) {
#define T(s) (snprintf(name, sizeof name, "blk.%u.%s", l, s), name)
		rc |= vec(g, T("attn_norm.weight"), N_EMBD, 1.0f, 0.1f);
		if (qr) {
			rc |= mat(g, T("attn_q_a.weight"), N_EMBD, qr, 1.0f / 16.0f);
			rc |= vec(g, T("attn_q_a_norm.weight"), qr, 1.0f, 0.1f);
			rc |= mat(g, T("attn_q_b.weight"), qr, nh * (nope + nrot), 1.5f / 11.3137085f /* sqrt(128) */);
		} else {
			rc |= mat(g, T("attn_q.weight"), N_EMBD, nh * (nope + nrot), in_sd);
		}
		rc |= mat(g, T("attn_kv_a_mqa.weight"), N_EMBD, kvr + nrot, in_sd);
		rc |= vec(g, T("attn_kv_a_norm.weight"), kvr, 1.0f, 0.1f);
		if (kvb) {
			rc |= mat(g, T("attn_kv_b.weight"), kvr, nh * (nope + hv), lat_sd);
		} else {
			rc |= mat3(g, g->type, T("attn_k_b.weight"), nope, kvr, nh, lat_sd);
			rc |= mat3(g, g->type, T("attn_v_b.weight"), kvr, hv, nh, lat_sd);
		}
		rc |= mat(g, T("attn_output.weight"), nh * hv, N_EMBD, o_sd);
		rc |= vec(g, T("ffn_norm.weight"), N_EMBD, 1.0f, 0.1f);
		if (l < lead) {
			rc |= mat(g, T("ffn_gate.weight"), N_EMBD, N_FF, ff_sd);
			rc |= mat(g, T("ffn_up.weight"), N_EMBD, N_FF, ff_sd);
			rc |= mat(g, T("ffn_down.weight"), N_FF, N_EMBD, down_sd);
			continue;
		}
		/* the router's logits spread ~3: the choice is rarely a near tie */
		rc |= mat_t(g, QT_F32, T("ffn_gate_inp.weight"), N_EMBD, n_exp, 3.0f / 16.0f);
		if (v3)
			rc |= vec(g, T("exp_probs_b.bias"), n_exp, 0, 0.3f);
		if (gate_up) {
			rc |= mat3_gate_up(g, g->type, T("ffn_gate_up_exps.weight"), N_EMBD, n_ff_exp, n_exp, 1.0f / 16.0f);
		} else {
			rc |= mat3(g, g->type, T("ffn_gate_exps.weight"), N_EMBD, n_ff_exp, n_exp, 1.0f / 16.0f);
			rc |= mat3(g, g->type, T("ffn_up_exps.weight"), N_EMBD, n_ff_exp, n_exp, 1.0f / 16.0f);
		}
		rc |= mat3(g, g->type, T("ffn_down_exps.weight"), n_ff_exp, N_EMBD, n_exp, 4.0f / 11.3137085f);
		rc |= mat(g, T("ffn_gate_shexp.weight"), N_EMBD, n_ff_exp * n_shared, 1.0f / 16.0f);
		rc |= mat(g, T("ffn_up_shexp.weight"), N_EMBD, n_ff_exp * n_shared, 1.0f / 16.0f);
		rc |= mat(g, T("ffn_down_shexp.weight"), n_ff_exp * n_shared, N_EMBD,
			  4.0f / (n_shared == 2 ? 16.0f : 11.3137085f));
#undef T
	}
	return rc ? -1 : 0;
}

/* ---- mixtures of experts --------------------------------------------------------
 *
 *   gen_synth_llm mixtral|qwen2moe|qwen3moe|gpt-oss TYPE OUT.gguf
 *     mixtral: a llama file with 8 experts, 2 used (llama.cpp: softmax,
 *       selected weights normalized); qwen2moe: 8 experts, 4 used, and a
 *       shared expert (512 wide) behind its sigmoid gate, Q/K/V biases;
 *       qwen3moe: 8 experts, 3 used, Q/K norms, head dim 128; gpt-oss: 8
 *       experts, 2 used, softmax over the selected logits, attention sinks,
 *       biases on Q/K/V/O, the router and every expert, the clamped SwiGLU
 *       (gate and up drawn wide enough that some values pass the clamp at
 *       7), layers alternating sliding window 4 / global; gpt-oss-yarn:
 *       the same weights with YaRN as gpt-oss's files declare it (factor
 *       32, beta_fast 32, beta_slow 1) over an original context of 512
 *       instead of 4096, so that at base 150000 and 64 rotated dimensions
 *       pairs 0..1 keep their angles, 2..12 are mixed and the rest scaled
 *       (local layers too, as llama.cpp runs them).
 *     TYPE: f32 | q8_0 | q4_k for every matrix, or mxfp4 (gpt-oss as
 *       published: the experts MXFP4, the other matrices Q8_0). The
 *       router (ffn_gate_inp) stays F32, as llama.cpp's quantizer leaves it.
 *   Shapes: n_embd 256, 4 heads over 2 KV heads, 2 layers, experts 256
 *   wide, untied output.
 *
 *   gen_synth_llm mixtral-big TYPE OUT.gguf: for speed (not reference
 *   data): n_embd 2048, 32 heads over 8 KV heads, 4 layers, 8 experts of
 *   5632 (TinyLlama's FFN), 2 used, 32000 tokens. */

/* n rows of cols drawn in order (sd around 0), quantized to type, into q */
static int draw_rows(uint32_t type, uint8_t *q, size_t rs, uint64_t cols, uint64_t n, float sd)
{
	float *x = malloc(sizeof *x * cols);
	int rc = x ? 0 : -1;
	for (uint64_t r = 0; r < n && !rc; r++) {
		fill(x, cols, 0, sd);
		if (type == QT_F32)
			memcpy(q + r * rs, x, rs);
		else
			rc = quant_quantize_row(type, x, q + r * rs, cols);
	}
	free(x);
	return rc;
}

/* A stack of n_exp matrices {cols, rows} as one 3-D tensor {cols, rows, n_exp}. */
static int mat3(struct gen *g, uint32_t type, const char *name, uint64_t cols, uint64_t rows, uint64_t n_exp,
		float sd)
{
	bool ok = true;
	size_t rs = type == QT_F32 ? cols * 4 : quant_row_size(type, cols, &ok);
	uint8_t *q = malloc(rs * rows * n_exp);
	int rc = ok && q ? draw_rows(type, q, rs, cols, rows * n_exp, sd) : -1;
	uint64_t ne[3] = { cols, rows, n_exp };
	if (!rc)
		rc = gguf_writer_tensor(g->w, name, type, 3, ne, q);
	free(q);
	return rc;
}

/* The gate and up stacks mat3 would write (the same draws: all of gate,
 * then all of up) merged as llama.cpp's ffn_gate_up_exps {cols, 2 rows,
 * n_exp}: per expert its gate rows, then its up rows. */
static int mat3_gate_up(struct gen *g, uint32_t type, const char *name, uint64_t cols, uint64_t rows,
			uint64_t n_exp, float sd)
{
	bool ok = true;
	size_t rs = type == QT_F32 ? cols * 4 : quant_row_size(type, cols, &ok), m = rs * rows;
	uint8_t *gu[2] = { malloc(m * n_exp), malloc(m * n_exp) }, *q = malloc(2 * m * n_exp);
	int rc = ok && gu[0] && gu[1] && q ? 0 : -1;
	for (int i = 0; i < 2 && !rc; i++)
		rc = draw_rows(type, gu[i], rs, cols, rows * n_exp, sd);
	for (uint64_t e = 0; e < n_exp && !rc; e++) {
		memcpy(q + 2 * e * m, gu[0] + e * m, m);
		memcpy(q + (2 * e + 1) * m, gu[1] + e * m, m);
	}
	uint64_t ne[3] = { cols, 2 * rows, n_exp };
	if (!rc)
		rc = gguf_writer_tensor(g->w, name, type, 3, ne, q);
	free(gu[0]);
	free(gu[1]);
	free(q);
	return rc;
}

static int moe_main(const char *name_arg, const char *type_arg, const char *out)
{
	int mixtral = !strcmp(name_arg, "mixtral"), big = !strcmp(name_arg, "mixtral-big");
	int qwen2moe = !strcmp(name_arg, "qwen2moe"), qwen3moe = !strcmp(name_arg, "qwen3moe");
	int oss_yarn = !strcmp(name_arg, "gpt-oss-yarn"), oss = !strcmp(name_arg, "gpt-oss") || oss_yarn;
	const char *arch = mixtral || big ? "llama" : oss ? "gpt-oss" : name_arg;
	struct gen g = { 0 };
	uint32_t xtype = 999; /* the experts' type */
	g.type = !strcmp(type_arg, "f32") ? QT_F32 : !strcmp(type_arg, "q8_0") ? QT_Q8_0
		 : !strcmp(type_arg, "q4_0") ? QT_Q4_0 : !strcmp(type_arg, "q4_k") ? QT_Q4_K
		 : !strcmp(type_arg, "mxfp4") && oss ? QT_Q8_0 : 999;
	xtype = !strcmp(type_arg, "mxfp4") ? QT_MXFP4 : g.type;
	if (g.type == 999) {
		fprintf(stderr, "gen_synth_llm: unknown type for %s\n", name_arg);
		return 2;
	}
	rng_state = 0x7465726eull * 1000003u + (uint64_t)(mixtral || big ? 11 : qwen2moe ? 12 : qwen3moe ? 13 : 18);
	uint32_t n_layer = 2, head_dim = qwen3moe ? 128 : 64, n_exp = 8, n_used = qwen2moe ? 4 : qwen3moe ? 3 : 2;
	uint32_t n_ff_exp = 256, n_ff_sh = 512;
	float sq_embd = 16.0f, sq_ffx = 16.0f; /* sqrt(n_embd), sqrt(n_ff_exp) */
	if (big) {
		N_EMBD = 2048, N_HEAD = 32, N_HEAD_KV = 8, N_VOCAB = 32000;
		n_layer = 4, n_ff_exp = 5632;
		sq_embd = 45.254834f, sq_ffx = 75.04665f;
	}
	uint32_t nq = N_HEAD * head_dim, nkv = N_HEAD_KV * head_dim;
	g.w = gguf_writer_new();
	gguf_writer *w = g.w;
	char k[96], name[64];
	gguf_writer_str(w, "general.architecture", arch);
	gguf_writer_str(w, "general.name", "tern synthetic moe");
	gguf_writer_u32(w, "general.file_type", g.type == QT_F32 ? 0 : xtype == QT_MXFP4 ? 38 : g.type == QT_Q8_0 ? 7
					 : g.type == QT_Q4_0 ? 2 : 14);
	gguf_writer_u32(w, "general.quantization_version", 2);
#define KEY(s) (key(k, sizeof k, arch, s), k)
	gguf_writer_u32(w, KEY("context_length"), big ? 2048 : oss_yarn ? 32 * 512 : 256);
	gguf_writer_u32(w, KEY("embedding_length"), N_EMBD);
	gguf_writer_u32(w, KEY("block_count"), n_layer);
	/* llama's experts are feed_forward_length wide; the others' have their key */
	gguf_writer_u32(w, KEY("feed_forward_length"), mixtral || big ? n_ff_exp : 512);
	if (!mixtral && !big)
		gguf_writer_u32(w, KEY("expert_feed_forward_length"), n_ff_exp);
	if (qwen2moe)
		gguf_writer_u32(w, KEY("expert_shared_feed_forward_length"), n_ff_sh);
	gguf_writer_u32(w, KEY("expert_count"), n_exp);
	gguf_writer_u32(w, KEY("expert_used_count"), n_used);
	gguf_writer_u32(w, KEY("attention.head_count"), N_HEAD);
	gguf_writer_u32(w, KEY("attention.head_count_kv"), N_HEAD_KV);
	gguf_writer_f32(w, KEY("attention.layer_norm_rms_epsilon"), 1e-5f);
	gguf_writer_f32(w, KEY("rope.freq_base"), oss ? 150000.0f : mixtral || big ? 1000000.0f : 10000.0f);
	if (qwen3moe || oss) {
		gguf_writer_u32(w, KEY("attention.key_length"), head_dim);
		gguf_writer_u32(w, KEY("attention.value_length"), head_dim);
	}
	if (oss)
		gguf_writer_u32(w, KEY("attention.sliding_window"), 4);
	if (oss_yarn) { /* the keys llama.cpp's converter writes for it (llama.cpp reads no beta for gpt-oss) */
		gguf_writer_str(w, KEY("rope.scaling.type"), "yarn");
		gguf_writer_f32(w, KEY("rope.scaling.factor"), 32.0f);
		gguf_writer_u32(w, KEY("rope.scaling.original_context_length"), 512);
		gguf_writer_f32(w, KEY("rope.scaling.yarn_beta_fast"), 32.0f);
		gguf_writer_f32(w, KEY("rope.scaling.yarn_beta_slow"), 1.0f);
	}
	if (mixtral || big)
		gguf_writer_u32(w, KEY("rope.dimension_count"), head_dim);
	vocab(w);

	int rc = 0;
	rc |= mat(&g, "token_embd.weight", N_EMBD, N_VOCAB, 1.0f);
	rc |= vec(&g, "output_norm.weight", N_EMBD, 1.0f, 0.1f);
	rc |= mat(&g, "output.weight", N_EMBD, N_VOCAB, 0.5f);
	const float in_sd = 1.5f / sq_embd, res_gain = 4.0f;
	/* gpt-oss: gate and up 4x wider, so that the clamp at 7 matters; its
	 * down product 4x smaller to keep the residual's scale */
	const float xin = oss ? 4.0f / sq_embd : 1.0f / sq_embd, xout = res_gain / sq_ffx / (oss ? 4.0f : 1.0f);
	for (uint32_t l = 0; l < n_layer; l++) {
#define T(s) (snprintf(name, sizeof name, "blk.%u.%s", l, s), name)
		rc |= vec(&g, T("attn_norm.weight"), N_EMBD, 1.0f, 0.1f);
		rc |= mat(&g, T("attn_q.weight"), N_EMBD, nq, in_sd);
		rc |= mat(&g, T("attn_k.weight"), N_EMBD, nkv, in_sd);
		rc |= mat(&g, T("attn_v.weight"), N_EMBD, nkv, 1.0f / sq_embd);
		if (qwen2moe || oss) {
			rc |= vec(&g, T("attn_q.bias"), nq, 0, 0.2f);
			rc |= vec(&g, T("attn_k.bias"), nkv, 0, 0.5f);
			rc |= vec(&g, T("attn_v.bias"), nkv, 0, 0.1f);
		}
		if (qwen3moe) {
			rc |= vec(&g, T("attn_q_norm.weight"), head_dim, 1.5f, 0.2f);
			rc |= vec(&g, T("attn_k_norm.weight"), head_dim, 1.5f, 0.2f);
		}
		rc |= mat(&g, T("attn_output.weight"), nq, N_EMBD,
			  res_gain / (nq == N_EMBD ? sq_embd : 22.627417f /* nq 512 */));
		if (oss) {
			rc |= vec(&g, T("attn_output.bias"), N_EMBD, 0, 0.1f);
			/* sinks near the scores' own scale: a visible share of the softmax */
			rc |= vec(&g, T("attn_sinks.weight"), N_HEAD, 1.0f, 1.0f);
			rc |= vec(&g, T("post_attention_norm.weight"), N_EMBD, 1.0f, 0.1f);
		} else {
			rc |= vec(&g, T("ffn_norm.weight"), N_EMBD, 1.0f, 0.1f);
		}
		/* router logits spread ~3: clear choices, weights not all on one */
		rc |= mat_t(&g, QT_F32, T("ffn_gate_inp.weight"), N_EMBD, n_exp, 3.0f / sq_embd);
		if (oss)
			rc |= vec(&g, T("ffn_gate_inp.bias"), n_exp, 0, 0.5f);
		rc |= mat3(&g, xtype, T("ffn_gate_exps.weight"), N_EMBD, n_ff_exp, n_exp, xin);
		rc |= mat3(&g, xtype, T("ffn_up_exps.weight"), N_EMBD, n_ff_exp, n_exp, xin);
		rc |= mat3(&g, xtype, T("ffn_down_exps.weight"), n_ff_exp, N_EMBD, n_exp, xout);
		if (oss) {
			rc |= mat_t(&g, QT_F32, T("ffn_gate_exps.bias"), n_ff_exp, n_exp, 0.5f);
			rc |= mat_t(&g, QT_F32, T("ffn_up_exps.bias"), n_ff_exp, n_exp, 0.5f);
			rc |= mat_t(&g, QT_F32, T("ffn_down_exps.bias"), N_EMBD, n_exp, 0.2f);
		}
		if (qwen2moe) {
			rc |= vec(&g, T("ffn_gate_inp_shexp.weight"), N_EMBD, 0, 2.0f / sq_embd);
			rc |= mat(&g, T("ffn_gate_shexp.weight"), N_EMBD, n_ff_sh, 1.0f / sq_embd);
			rc |= mat(&g, T("ffn_up_shexp.weight"), N_EMBD, n_ff_sh, 1.0f / sq_embd);
			rc |= mat(&g, T("ffn_down_shexp.weight"), n_ff_sh, N_EMBD, res_gain / 22.627417f);
		}
#undef T
	}
#undef KEY
	return finish(w, rc, out);
}

/* ---- the gemma and phi families ------------------------------------------------
 *
 *   gemma:  Gemma 1, 2 layers, head dim 128 (4 x 128 != n_embd), one KV
 *           head (multi-query, as Gemma 2B), GeGLU, sqrt(n_embd) scale;
 *   gemma2: 4 layers alternating local (window 4, even layers) and global,
 *           post-attention and post-FFN norms, attention soft-cap 5 and final
 *           soft-cap 15 (small, so that both act on these logits);
 *   phi2:   parallel attention and plain GELU FFN under one biased layer
 *           norm, separate Q/K/V with biases, n_ff 1024, partial rotary
 *           (32 of 64 dims), untied output with a bias;
 *   phi3:   fused attn_qkv and fused gate/up ffn_up {256, 1024}, GQA 2,
 *           partial rotary 48 of 64 with LongRoPE factors (24 long, 24
 *           short) and attention factor 1.19024, a sliding window of 8 that
 *           llama.cpp ignores for phi3; original context 4096 (llama.cpp's
 *           2048 and tern's 256-rounded contexts are below: short factors);
 *   phi3-long: the same weights with original context 16 and rope.scaling
 *           .type "longrope": every context is above it, the long factors.
 *
 * Gemma's output is always its token embedding (llama.cpp ignores an
 * output.weight), and the embedding is multiplied by sqrt(n_embd) = 16 on
 * the way in: with embeddings of sd 1/64 the stream starts like qwen2's
 * (sd 0.25) and the output norm's weights near 16 give logits of a few
 * units (gemma stores norm weights as 1 + w, so any value is a real one). */
static int gen_gemma_phi(struct gen *g, const char *variant, const char *out)
{
	int gemma = !strcmp(variant, "gemma"), gemma2 = !strcmp(variant, "gemma2");
	int phi2 = !strcmp(variant, "phi2"), long_ctx = !strcmp(variant, "phi3-long");
	int phi3 = !strcmp(variant, "phi3") || long_ctx;
	const char *arch = long_ctx ? "phi3" : variant;
	rng_state = 0x7465726eull * 1000003u + (uint64_t)(gemma ? 5 : gemma2 ? 6 : phi2 ? 7 : 8);
	uint32_t n_layer = gemma2 ? 4 : 2, head_dim = gemma || gemma2 ? 128 : 64;
	uint32_t n_head = 4, n_head_kv = gemma ? 1 : phi2 ? 4 : 2, n_ff = phi2 ? 1024 : 512;
	uint32_t n_rot = phi2 ? 32 : phi3 ? 48 : head_dim;
	uint32_t nq = n_head * head_dim, nkv = n_head_kv * head_dim;
	const float in_sd = 1.5f / 16, res = 4.0f, sq_nq = gemma || gemma2 ? 22.627417f : 16.0f;
	const float sq_ff = phi2 ? 32.0f : 22.627417f;
	g->w = gguf_writer_new();
	gguf_writer *w = g->w;
	char k[96], name[64];
	gguf_writer_str(w, "general.architecture", arch);
	gguf_writer_str(w, "general.name", "tern synthetic");
	gguf_writer_u32(w, "general.file_type", g->type == QT_F32 ? 0 : g->type == QT_Q8_0 ? 7
					 : g->type == QT_Q4_0 ? 2 : 14);
	gguf_writer_u32(w, "general.quantization_version", 2);
#define KEY(s) (key(k, sizeof k, arch, s), k)
	gguf_writer_u32(w, KEY("context_length"), phi3 ? (long_ctx ? 512 : 8192) : 256);
	gguf_writer_u32(w, KEY("embedding_length"), N_EMBD);
	gguf_writer_u32(w, KEY("block_count"), n_layer);
	gguf_writer_u32(w, KEY("feed_forward_length"), n_ff);
	gguf_writer_u32(w, KEY("attention.head_count"), n_head);
	gguf_writer_u32(w, KEY("attention.head_count_kv"), n_head_kv);
	if (phi2)
		gguf_writer_f32(w, KEY("attention.layer_norm_epsilon"), 1e-5f);
	else
		gguf_writer_f32(w, KEY("attention.layer_norm_rms_epsilon"), gemma || gemma2 ? 1e-6f : 1e-5f);
	if (gemma || gemma2) {
		gguf_writer_u32(w, KEY("attention.key_length"), head_dim);
		gguf_writer_u32(w, KEY("attention.value_length"), head_dim);
	}
	if (phi2 || phi3)
		gguf_writer_u32(w, KEY("rope.dimension_count"), n_rot);
	gguf_writer_f32(w, KEY("rope.freq_base"), 10000.0f);
	if (gemma2) {
		gguf_writer_u32(w, KEY("attention.sliding_window"), 4);
		gguf_writer_f32(w, KEY("attn_logit_softcapping"), 5.0f);
		gguf_writer_f32(w, KEY("final_logit_softcapping"), 15.0f);
	}
	if (phi3) {
		gguf_writer_u32(w, KEY("attention.sliding_window"), 8);
		gguf_writer_u32(w, KEY("rope.scaling.original_context_length"), long_ctx ? 16 : 4096);
		gguf_writer_f32(w, KEY("rope.scaling.attn_factor"), 1.19024f);
		if (long_ctx)
			gguf_writer_str(w, KEY("rope.scaling.type"), "longrope");
	}
	vocab(w);

	int rc = 0;
	rc |= mat(g, "token_embd.weight", N_EMBD, N_VOCAB, gemma || gemma2 ? 1.0f / 64 : 1.0f);
	rc |= vec(g, "output_norm.weight", N_EMBD, gemma || gemma2 ? 16.0f : 1.0f, gemma || gemma2 ? 1.6f : 0.1f);
	if (phi2)
		rc |= vec(g, "output_norm.bias", N_EMBD, 0, 0.1f);
	if (phi2 || phi3)
		rc |= mat(g, "output.weight", N_EMBD, N_VOCAB, 0.5f);
	if (phi2)
		rc |= vec(g, "output.bias", N_VOCAB, 0, 0.5f);
	if (phi3) {
		/* LongRoPE divisors per rotated pair: short ones near 1, long
		 * ones a ramp to 8 (both exact in float), so that they differ
		 * within 24 positions */
		float lf[32], sf[32];
		uint64_t n = n_rot / 2;
		for (uint64_t i = 0; i < n; i++) {
			lf[i] = 1.0f + 7.0f * (float)i / (float)(n - 1);
			sf[i] = 1.0f + 0.5f * (float)i / (float)(n - 1);
		}
		rc |= gguf_writer_tensor(w, "rope_factors_long.weight", QT_F32, 1, &n, lf);
		rc |= gguf_writer_tensor(w, "rope_factors_short.weight", QT_F32, 1, &n, sf);
	}
	for (uint32_t l = 0; l < n_layer; l++) {
#define T(s) (snprintf(name, sizeof name, "blk.%u.%s", l, s), name)
		rc |= vec(g, T("attn_norm.weight"), N_EMBD, 1.0f, 0.1f);
		if (phi2)
			rc |= vec(g, T("attn_norm.bias"), N_EMBD, 0, 0.1f);
		if (phi3) { /* Phi-3's qkv_proj: the rows of Q, then K, then V */
			rc |= mat(g, T("attn_qkv.weight"), N_EMBD, nq + 2 * nkv, in_sd);
		} else {
			rc |= mat(g, T("attn_q.weight"), N_EMBD, nq, in_sd);
			rc |= mat(g, T("attn_k.weight"), N_EMBD, nkv, in_sd);
			rc |= mat(g, T("attn_v.weight"), N_EMBD, nkv, 1.0f / 16);
		}
		if (phi2) {
			rc |= vec(g, T("attn_q.bias"), nq, 0, 0.2f);
			rc |= vec(g, T("attn_k.bias"), nkv, 0, 0.5f);
			rc |= vec(g, T("attn_v.bias"), nkv, 0, 0.1f);
		}
		rc |= mat(g, T("attn_output.weight"), nq, N_EMBD, res / sq_nq);
		if (phi2)
			rc |= vec(g, T("attn_output.bias"), N_EMBD, 0, 0.1f);
		if (gemma2)
			rc |= vec(g, T("post_attention_norm.weight"), N_EMBD, 1.0f, 0.1f);
		if (!phi2)
			rc |= vec(g, T("ffn_norm.weight"), N_EMBD, 1.0f, 0.1f);
		if (phi3) { /* gate rows, then up rows */
			rc |= mat(g, T("ffn_up.weight"), N_EMBD, 2 * n_ff, 1.0f / 16);
		} else {
			if (!phi2)
				rc |= mat(g, T("ffn_gate.weight"), N_EMBD, n_ff, 1.0f / 16);
			rc |= mat(g, T("ffn_up.weight"), N_EMBD, n_ff, 1.0f / 16);
		}
		if (phi2)
			rc |= vec(g, T("ffn_up.bias"), n_ff, 0, 0.2f);
		rc |= mat(g, T("ffn_down.weight"), n_ff, N_EMBD, res / sq_ff);
		if (phi2)
			rc |= vec(g, T("ffn_down.bias"), N_EMBD, 0, 0.1f);
		if (gemma2)
			rc |= vec(g, T("post_ffw_norm.weight"), N_EMBD, 1.0f, 0.1f);
#undef T
	}
#undef KEY
	return finish(w, rc, out);
}

static int gen_encoder(const char *arch, const char *type, const char *out);

int main(int argc, char **argv)
{
	if (argc == 4 && (!strcmp(argv[1], "bert") || !strcmp(argv[1], "nomic-bert")))
		return gen_encoder(argv[1], argv[2], argv[3]);
	if (argc != 4) {
		fprintf(stderr, "usage: gen_synth_llm llama|llama-linear|llama-freqs|qwen2|qwen3|gemma3|qwen3-yarn|gemma3-yarn|tinyllama|bench-1b|bench-7b"
				"|gemma|gemma2|phi2|phi3|phi3-long|llama-mean|qwen3-last|bert|nomic-bert "
				"f32|q8_0|q4_0|q4_k|q4_k_m OUT.gguf\n"
				"       gen_synth_llm mixtral|qwen2moe|qwen3moe|gpt-oss|gpt-oss-yarn|mixtral-big f32|q8_0|q4_0|q4_k|mxfp4 "
				"OUT.gguf\n"
				"       gen_synth_llm deepseek2|deepseek2-yarn|deepseek2-kvb|deepseek2-moe|deepseek2-gate-up|deepseek2-v3|"
				"deepseek2-big f32|q8_0|q4_0 OUT.gguf\n");
		return 2;
	}
	if (!strcmp(argv[1], "mixtral") || !strcmp(argv[1], "mixtral-big") || !strcmp(argv[1], "qwen2moe") ||
	    !strcmp(argv[1], "qwen3moe") || !strcmp(argv[1], "gpt-oss") || !strcmp(argv[1], "gpt-oss-yarn"))
		return moe_main(argv[1], argv[2], argv[3]);
	int ds = !strncmp(argv[1], "deepseek2", 9);
	if (ds) {
		int yarn = !strcmp(argv[1], "deepseek2-yarn"), kvb = !strcmp(argv[1], "deepseek2-kvb");
		int gate_up = !strcmp(argv[1], "deepseek2-gate-up"); /* deepseek2-moe's weights, gate and up merged */
		int moe = !strcmp(argv[1], "deepseek2-moe") || gate_up, v3 = !strcmp(argv[1], "deepseek2-v3");
		int dbig = !strcmp(argv[1], "deepseek2-big");
		if (dbig) /* DeepSeek-V2-Lite's attention, 8 dense layers: for speed, not reference data */
			N_EMBD = 2048, N_FF = 5632, N_VOCAB = 32000;
		struct gen dg = { 0 };
		dg.type = !strcmp(argv[2], "f32") ? QT_F32 : !strcmp(argv[2], "q8_0") ? QT_Q8_0
			  : !strcmp(argv[2], "q4_0") ? QT_Q4_0 : 999;
		if ((!yarn && !kvb && !moe && !v3 && !dbig && strcmp(argv[1], "deepseek2")) || dg.type == 999) {
			fprintf(stderr, "gen_synth_llm: unknown deepseek2 variant or type\n");
			return 2;
		}
		rng_state = 0x7465726eull * 1000003u + (uint64_t)(5 + yarn + 2 * kvb + 3 * moe + 4 * v3);
		dg.w = gguf_writer_new();
		gguf_writer_str(dg.w, "general.architecture", "deepseek2");
		gguf_writer_str(dg.w, "general.name", "tern synthetic");
		gguf_writer_u32(dg.w, "general.file_type", dg.type == QT_F32 ? 0 : dg.type == QT_Q8_0 ? 7 : 2);
		gguf_writer_u32(dg.w, "general.quantization_version", 2);
		return finish(dg.w, deepseek2(&dg, yarn, kvb, moe, v3, dbig, gate_up), argv[3]);
	}
	int linear = !strcmp(argv[1], "llama-linear"), freqs = !strcmp(argv[1], "llama-freqs");
	int big7 = !strcmp(argv[1], "bench-7b"), fast = big7 || !strcmp(argv[1], "bench-1b");
	int big = !strcmp(argv[1], "tinyllama") || fast;
	int qwen3_yarn = !strcmp(argv[1], "qwen3-yarn"), gemma3_yarn = !strcmp(argv[1], "gemma3-yarn");
	/* embedding variants: the same weights, a pooling type (llama.cpp's values) */
	int pooling = !strcmp(argv[1], "llama-mean") ? 1 : !strcmp(argv[1], "qwen3-last") ? 3 : 0;
	const char *arch = linear || freqs || big || pooling == 1 ? "llama"
			   : pooling == 3 || qwen3_yarn ? "qwen3" : gemma3_yarn ? "gemma3" : argv[1];
	int llama = !strcmp(arch, "llama"), qwen2 = !strcmp(arch, "qwen2");
	int qwen3 = !strcmp(arch, "qwen3"), gemma3 = !strcmp(arch, "gemma3");
	struct gen g = { 0 };
	g.type = !strcmp(argv[2], "f32") ? QT_F32 : !strcmp(argv[2], "q8_0") ? QT_Q8_0
		 : !strcmp(argv[2], "q4_0") ? QT_Q4_0 : !strcmp(argv[2], "q4_k") ? QT_Q4_K
		 : !strcmp(argv[2], "q4_k_m") ? QT_Q4_K : 999;
	g.q4_k_m = !strcmp(argv[2], "q4_k_m");
	static const char *const gemma_phi[] = {"gemma", "gemma2", "phi2", "phi3", "phi3-long"};
	for (size_t i = 0; i < sizeof gemma_phi / sizeof *gemma_phi; i++)
		if (!strcmp(argv[1], gemma_phi[i]) && g.type != 999 && !g.q4_k_m)
			return gen_gemma_phi(&g, argv[1], argv[3]);
	if (!(llama || qwen2 || qwen3 || gemma3) || g.type == 999) {
		fprintf(stderr, "gen_synth_llm: unknown architecture or type\n");
		return 2;
	}
	/* one seed per architecture; the type does not change the float weights */
	rng_state = 0x7465726eull * 1000003u + (uint64_t)(llama ? 1 : qwen2 ? 2 : qwen3 ? 3 : 4);
	uint32_t n_layer = gemma3 ? 6 : 2, head_dim = (qwen3 || gemma3) ? 128 : 64;
	/* 1/sqrt(n_embd), 1/sqrt(n_ff) as exact constants (no libm) */
	float sq_embd = 16.0f, sq_ff = 22.627417f;
	if (big) { /* TinyLlama-1.1B's shape, for speed measurements */
		N_EMBD = 2048, N_FF = 5632, N_HEAD = 32, N_HEAD_KV = 4, N_VOCAB = 32000;
		n_layer = 22;
		sq_embd = 45.254834f, sq_ff = 75.04665f;
	}
	if (big7) { /* Llama-2-7B's shape */
		N_EMBD = 4096, N_FF = 11008, N_HEAD = 32, N_HEAD_KV = 32, N_VOCAB = 32000;
		n_layer = 32, head_dim = 128; /* 32 x 128 = n_embd, as in the real model */
		sq_embd = 64.0f, sq_ff = 104.92855f;
	}
	g.fast = fast;
	uint32_t nq = N_HEAD * head_dim, nkv = N_HEAD_KV * head_dim;
	int tied = qwen2 || qwen3;
	g.w = gguf_writer_new();
	gguf_writer *w = g.w;
	char k[96], name[64];
	gguf_writer_str(w, "general.architecture", arch);
	gguf_writer_str(w, "general.name", "tern synthetic");
	gguf_writer_u32(w, "general.file_type", g.type == QT_F32 ? 0 : g.type == QT_Q8_0 ? 7
					 : g.type == QT_Q4_0 ? 2 : g.q4_k_m ? 15 : 14 /* Q4_K_S: all Q4_K */);
	gguf_writer_u32(w, "general.quantization_version", 2);
#define KEY(s) (key(k, sizeof k, arch, s), k)
	gguf_writer_u32(w, KEY("context_length"), big7 ? 4096 : big ? 2048 : qwen3_yarn ? 1024 : gemma3_yarn ? 2048 : 256);
	gguf_writer_u32(w, KEY("embedding_length"), N_EMBD);
	gguf_writer_u32(w, KEY("block_count"), n_layer);
	gguf_writer_u32(w, KEY("feed_forward_length"), N_FF);
	gguf_writer_u32(w, KEY("attention.head_count"), N_HEAD);
	gguf_writer_u32(w, KEY("attention.head_count_kv"), N_HEAD_KV);
	gguf_writer_f32(w, KEY("attention.layer_norm_rms_epsilon"), gemma3 ? 1e-6f : 1e-5f);
	gguf_writer_f32(w, KEY("rope.freq_base"), llama ? 10000.0f : 1000000.0f);
	if (qwen3 || gemma3) {
		gguf_writer_u32(w, KEY("attention.key_length"), head_dim);
		gguf_writer_u32(w, KEY("attention.value_length"), head_dim);
	}
	if (llama)
		gguf_writer_u32(w, KEY("rope.dimension_count"), head_dim);
	if (linear) {
		gguf_writer_str(w, KEY("rope.scaling.type"), "linear");
		gguf_writer_f32(w, KEY("rope.scaling.factor"), 4.0f);
	}
	if (qwen3_yarn || gemma3_yarn) {
		gguf_writer_str(w, KEY("rope.scaling.type"), "yarn");
		gguf_writer_f32(w, KEY("rope.scaling.factor"), qwen3_yarn ? 4.0f : 8.0f);
		gguf_writer_u32(w, KEY("rope.scaling.original_context_length"), 256);
	}
	if (gemma3)
		gguf_writer_u32(w, KEY("attention.sliding_window"), 4);
	if (pooling)
		gguf_writer_u32(w, KEY("pooling_type"), (uint32_t)pooling);
	vocab(w);

	/* residual-stream scale: gemma3 scales embeddings by sqrt(n_embd) = 16 */
	float emb_sd = gemma3 ? 1.0f / 16 : 1.0f;
	/* logits spread ~ sd * sqrt(256) = 8 untied, 4 tied.  A tied model
	 * favours repeating its input token by about 16 * sd * sqrt(n_embd) /
	 * rms(residual) standard deviations, so its layers write 4x larger
	 * outputs into the residual stream (as trained models' do) and its
	 * embeddings are smaller: otherwise every top-1 is the input token. */
	float out_sd = tied ? 0.25f : 0.5f, res_gain = gemma3 ? 1.0f : 4.0f;
	int rc = 0;
	rc |= mat(&g, "token_embd.weight", N_EMBD, N_VOCAB, tied ? out_sd : emb_sd);
	rc |= vec(&g, "output_norm.weight", N_EMBD, 1.0f, 0.1f);
	if (!tied)
		rc |= mat_t(&g, g.q4_k_m ? QT_Q6_K : g.type, "output.weight", N_EMBD, N_VOCAB, out_sd);
	if (freqs) {
		/* per-dimension frequency divisors, as Llama 3 files carry them;
		 * a ramp from 1 to 8 (not Llama 3's values, which only touch
		 * wavelengths beyond 2048 positions) so that they show in 24 */
		float f[32];
		uint64_t n = head_dim / 2;
		for (uint64_t i = 0; i < n; i++)
			f[i] = 1.0f + 7.0f * (float)i / (float)(n - 1);
		rc |= gguf_writer_tensor(w, "rope_freqs.weight", QT_F32, 1, &n, f);
	}
	const float in_sd = 1.5f / sq_embd; /* 1.5 / sqrt(n_embd): q.k spread of a few units */
	for (uint32_t l = 0; l < n_layer; l++) {
#define T(s) (snprintf(name, sizeof name, "blk.%u.%s", l, s), name)
		rc |= vec(&g, T("attn_norm.weight"), N_EMBD, 1.0f, 0.1f);
		rc |= mat(&g, T("attn_q.weight"), N_EMBD, nq, in_sd);
		rc |= mat(&g, T("attn_k.weight"), N_EMBD, nkv, in_sd);
		rc |= mat_t(&g, more_bits(&g, l, n_layer), T("attn_v.weight"), N_EMBD, nkv, 1.0f / sq_embd);
		if (qwen2) {
			rc |= vec(&g, T("attn_q.bias"), nq, 0, 0.2f);
			rc |= vec(&g, T("attn_k.bias"), nkv, 0, 0.5f);
			rc |= vec(&g, T("attn_v.bias"), nkv, 0, 0.1f);
		}
		if (qwen3 || gemma3) {
			rc |= vec(&g, T("attn_q_norm.weight"), head_dim, 1.5f, 0.2f);
			rc |= vec(&g, T("attn_k_norm.weight"), head_dim, 1.5f, 0.2f);
		}
		rc |= mat(&g, T("attn_output.weight"), nq, N_EMBD,
			  res_gain / (nq == N_EMBD ? sq_embd : 22.627417f /* nq 512 */));
		if (gemma3)
			rc |= vec(&g, T("post_attention_norm.weight"), N_EMBD, 1.0f, 0.1f);
		rc |= vec(&g, T("ffn_norm.weight"), N_EMBD, 1.0f, 0.1f);
		rc |= mat(&g, T("ffn_gate.weight"), N_EMBD, N_FF, 1.0f / sq_embd);
		rc |= mat(&g, T("ffn_up.weight"), N_EMBD, N_FF, 1.0f / sq_embd);
		rc |= mat_t(&g, more_bits(&g, l, n_layer), T("ffn_down.weight"), N_FF, N_EMBD, res_gain / sq_ff);
		if (gemma3)
			rc |= vec(&g, T("post_ffw_norm.weight"), N_EMBD, 1.0f, 0.1f);
#undef T
	}
#undef KEY
	return finish(w, rc, argv[3]);
}

/* ---- embedding encoders ---------------------------------------------------------
 * bert: BERT / MiniLM / BGE's layout (llama.cpp's names): token, token-type
 * (2 rows, row 0 used) and learned position embeddings (128 rows: the
 * trained context), a biased LayerNorm after them, then post-norm blocks
 * with separate Q/K/V/O weights and biases, a GELU FFN with biases, the
 * attention and output LayerNorms with biases; pooling CLS (as BGE).
 * nomic-bert: nomic-embed-text's layout: no position table (RoPE NEOX,
 * base 1000), one fused attn_qkv without bias, no output bias, a SwiGLU
 * FFN (gate, up, down) without biases; pooling mean.
 * Both: n_embd 256, 4 heads of 64, n_ff 512, 2 layers, non-causal
 * (attention.causal false), layer_norm_epsilon 1e-12 (as the real
 * files), and a 320-token WordPiece vocabulary laid out as BERT's: [PAD]
 * 0, [unused0..98], [UNK] 100, [CLS] 101, [SEP] 102, [MASK] 103, then
 * pieces in the GGUF converter's form ("\u2581word" starts a word, "ing"
 * continues one), so that text of lowercase words, digits and common
 * punctuation tokenizes without [UNK]. */
static void wpm_vocab(gguf_writer *w)
{
	static const char *words[] = {
		"the", "of", "and", "to", "in", "is", "it", "that", "was", "for", "on", "with", "as", "he",
		"she", "at", "by", "this", "be", "cat", "dog", "sat", "mat", "hello", "world", "red", "blue", "green",
		"small", "big", "fast", "slow", "sea", "sky", "sun", "moon", "tree", "house", "car", "book", "read",
		"write", "run", "walk", "water", "fire", "stone", "paris", "france", "capital", "city", "river",
		"music", "song", "night", "day", "time", "year", "good", "bad", "new", "old", "one", "two",
		"three", "man", "woman", "child", "king", "queen", "bird", "fish", "food", "eat", "drink",
	};
	static const char *suffixes[] = {"ing", "ed", "er", "ly", "est", "tion", "ness"};
	static const char *punct = ".,!?'-:;()\"";
	const size_t nw = sizeof words / sizeof *words, ns = sizeof suffixes / sizeof *suffixes;
	char (*text)[24] = calloc(N_VOCAB, sizeof *text);
	const char **tok = malloc(sizeof *tok * N_VOCAB);
	float *score = calloc(N_VOCAB, sizeof *score);
	int32_t *type = malloc(sizeof *type * N_VOCAB);
	uint32_t n = 0;
#define ADD(t, ...) (snprintf(text[n], sizeof text[n], __VA_ARGS__), type[n++] = (t))
	ADD(3, "[PAD]");
	for (int i = 0; i < 99; i++)
		ADD(1, "[unused%d]", i);
	ADD(3, "[UNK]");
	ADD(3, "[CLS]");
	ADD(3, "[SEP]");
	ADD(3, "[MASK]");
	for (char c = 'a'; c <= 'z'; c++)
		ADD(1, SP "%c", c);
	for (char c = 'a'; c <= 'z'; c++)
		ADD(1, "%c", c);
	for (char c = '0'; c <= '9'; c++)
		ADD(1, SP "%c", c);
	for (char c = '0'; c <= '9'; c++)
		ADD(1, "%c", c);
	for (const char *p = punct; *p; p++)
		ADD(1, SP "%c", *p);
	for (size_t i = 0; i < ns; i++)
		ADD(1, "%s", suffixes[i]);
	for (size_t i = 0; i < nw && n < N_VOCAB; i++)
		ADD(1, SP "%s", words[i]);
	for (int i = 99; n < N_VOCAB; i++)
		ADD(1, "[unused%d]", i);
#undef ADD
	for (uint32_t i = 0; i < N_VOCAB; i++)
		tok[i] = text[i];
	gguf_writer_str(w, "tokenizer.ggml.model", "bert");
	gguf_writer_str(w, "tokenizer.ggml.pre", "bert-bge");
	gguf_writer_u32(w, "tokenizer.ggml.token_type_count", 2);
	gguf_writer_arr_str(w, "tokenizer.ggml.tokens", tok, N_VOCAB);
	gguf_writer_arr(w, "tokenizer.ggml.scores", GGUF_T_F32, score, N_VOCAB);
	gguf_writer_arr(w, "tokenizer.ggml.token_type", GGUF_T_I32, type, N_VOCAB);
	gguf_writer_u32(w, "tokenizer.ggml.unknown_token_id", 100);
	gguf_writer_u32(w, "tokenizer.ggml.seperator_token_id", 102);
	gguf_writer_u32(w, "tokenizer.ggml.padding_token_id", 0);
	gguf_writer_u32(w, "tokenizer.ggml.cls_token_id", 101);
	gguf_writer_u32(w, "tokenizer.ggml.mask_token_id", 103);
	free(text);
	free(tok);
	free(score);
	free(type);
}

static int gen_encoder(const char *arch, const char *type, const char *out)
{
	int nomic = !strcmp(arch, "nomic-bert");
	struct gen g = { 0 };
	g.type = !strcmp(type, "f32") ? QT_F32 : !strcmp(type, "q8_0") ? QT_Q8_0 : !strcmp(type, "q4_0") ? QT_Q4_0
		 : !strcmp(type, "q4_k") ? QT_Q4_K : 999;
	if (g.type == 999) {
		fprintf(stderr, "gen_synth_llm: unknown type\n");
		return 2;
	}
	rng_state = 0x7465726eull * 1000003u + (nomic ? 6 : 5);
	const uint32_t n_layer = 2, n_ctx = nomic ? 256 : 128;
	const float sq_embd = 16.0f, sq_ff = 22.627417f; /* sqrt(256), sqrt(512) */
	g.w = gguf_writer_new();
	gguf_writer *w = g.w;
	char k[96], name[64];
	gguf_writer_str(w, "general.architecture", arch);
	gguf_writer_str(w, "general.name", "tern synthetic");
	gguf_writer_u32(w, "general.file_type", g.type == QT_F32 ? 0 : g.type == QT_Q8_0 ? 7 : g.type == QT_Q4_0 ? 2 : 14);
	gguf_writer_u32(w, "general.quantization_version", 2);
#define KEY(s) (key(k, sizeof k, arch, s), k)
	gguf_writer_u32(w, KEY("context_length"), n_ctx);
	gguf_writer_u32(w, KEY("embedding_length"), N_EMBD);
	gguf_writer_u32(w, KEY("block_count"), n_layer);
	gguf_writer_u32(w, KEY("feed_forward_length"), N_FF);
	gguf_writer_u32(w, KEY("attention.head_count"), N_HEAD);
	gguf_writer_f32(w, KEY("attention.layer_norm_epsilon"), 1e-12f);
	gguf_writer_bool(w, KEY("attention.causal"), false);
	gguf_writer_u32(w, KEY("pooling_type"), nomic ? 1 : 2);
	if (nomic)
		gguf_writer_f32(w, KEY("rope.freq_base"), 1000.0f);
#undef KEY
	wpm_vocab(w);

	const float in_sd = 1.5f / sq_embd;
	int rc = 0;
	rc |= mat(&g, "token_embd.weight", N_EMBD, N_VOCAB, 1.0f);
	rc |= mat_t(&g, QT_F32, "token_types.weight", N_EMBD, 2, 0.5f);
	if (!nomic)
		rc |= mat_t(&g, QT_F32, "position_embd.weight", N_EMBD, n_ctx, 0.5f);
	rc |= vec(&g, "token_embd_norm.weight", N_EMBD, 1.0f, 0.1f);
	rc |= vec(&g, "token_embd_norm.bias", N_EMBD, 0, 0.1f);
	for (uint32_t l = 0; l < n_layer; l++) {
#define T(s) (snprintf(name, sizeof name, "blk.%u.%s", l, s), name)
		if (nomic) {
			rc |= mat(&g, T("attn_qkv.weight"), N_EMBD, 3 * N_EMBD, in_sd);
		} else {
			rc |= mat(&g, T("attn_q.weight"), N_EMBD, N_EMBD, in_sd);
			rc |= vec(&g, T("attn_q.bias"), N_EMBD, 0, 0.2f);
			rc |= mat(&g, T("attn_k.weight"), N_EMBD, N_EMBD, in_sd);
			rc |= vec(&g, T("attn_k.bias"), N_EMBD, 0, 0.2f);
			rc |= mat(&g, T("attn_v.weight"), N_EMBD, N_EMBD, 1.0f / sq_embd);
			rc |= vec(&g, T("attn_v.bias"), N_EMBD, 0, 0.1f);
		}
		rc |= mat(&g, T("attn_output.weight"), N_EMBD, N_EMBD, 1.0f / sq_embd);
		if (!nomic)
			rc |= vec(&g, T("attn_output.bias"), N_EMBD, 0, 0.1f);
		rc |= vec(&g, T("attn_output_norm.weight"), N_EMBD, 1.0f, 0.1f);
		rc |= vec(&g, T("attn_output_norm.bias"), N_EMBD, 0, 0.1f);
		if (nomic)
			rc |= mat(&g, T("ffn_gate.weight"), N_EMBD, N_FF, 1.0f / sq_embd);
		rc |= mat(&g, T("ffn_up.weight"), N_EMBD, N_FF, 1.0f / sq_embd);
		if (!nomic)
			rc |= vec(&g, T("ffn_up.bias"), N_FF, 0, 0.2f);
		rc |= mat(&g, T("ffn_down.weight"), N_FF, N_EMBD, 1.0f / sq_ff);
		if (!nomic)
			rc |= vec(&g, T("ffn_down.bias"), N_EMBD, 0, 0.1f);
		rc |= vec(&g, T("layer_output_norm.weight"), N_EMBD, 1.0f, 0.1f);
		rc |= vec(&g, T("layer_output_norm.bias"), N_EMBD, 0, 0.1f);
#undef T
	}
	return finish(w, rc, out);
}
