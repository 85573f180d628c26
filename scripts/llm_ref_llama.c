/* llm_ref_llama.c - reference data for tern's LLM forward pass, produced by
 * llama.cpp (libllama, CPU).  Our own harness: it links against an external,
 * already-built llama.cpp given by path (scripts/llm_ref.sh compiles it) and
 * writes JSON (plus an optional binary logits file) that tests/ compare with.
 *
 *   llm_ref_llama gen   MODEL PROMPT.txt OUT.json [OUT.bin [f16|f32]]
 *       Raw prompt (no chat template; BOS per the file's metadata; special
 *       token text parsed, as llama.cpp does by default), evaluated in one
 *       batch; then N_GEN greedy tokens, decoded one at a time.  For each
 *       generated position: chosen id, its log-probability (log-softmax of
 *       the raw logits, in double) and the top-5.  OUT.bin gets the full
 *       logits of the last prompt position and of the first generated one.
 *   llm_ref_llama synth MODEL IDS OUT.json OUT.bin
 *       IDS is a comma-separated token sequence, evaluated in one batch with
 *       logits at every position; JSON gets the top-5 per position, OUT.bin
 *       every position's full logits (f32).
 *
 * Environment: LLMREF_THREADS (default 2), LLMREF_NGEN (default 64),
 * LLMREF_UBATCH (default 2048; 1 evaluates a batch one token at a time),
 * LLMREF_KV_F32=1 (f32 KV cache instead of llama.cpp's default f16),
 * LLMREF_META: a JSON object body (`"k": v, ...`) copied into the output
 * (the runner puts the model's name, sha256 and the llama.cpp version there).
 *
 * OUT.bin layout (little-endian): "TLGT", u32 version 1, u32 dtype (0 f32,
 * 1 f16), u32 n_vocab, u32 n_rows, then n_rows x { i32 position, i32 token
 * fed at that position }, then n_rows x n_vocab values. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "llama.h"

#define TOPK 5

static void quiet(enum ggml_log_level level, const char *text, void *ud)
{
	(void)ud;
	if (level == GGML_LOG_LEVEL_ERROR)
		fputs(text, stderr);
}

static char *slurp(const char *path, long *len)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fseek(f, 0, SEEK_SET);
	char *s = malloc((size_t)n + 1);
	if (fread(s, 1, (size_t)n, f) != (size_t)n) {
		fclose(f);
		free(s);
		return NULL;
	}
	fclose(f);
	s[n] = 0;
	*len = n;
	return s;
}

static void json_str(FILE *o, const char *s, size_t n)
{
	fputc('"', o);
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c == '"' || c == '\\')
			fprintf(o, "\\%c", c);
		else if (c == '\n')
			fputs("\\n", o);
		else if (c == '\t')
			fputs("\\t", o);
		else if (c < 0x20 || c == 0x7f)
			fprintf(o, "\\u%04x", c);
		else
			fputc(c, o);
	}
	fputc('"', o);
}

/* A piece may be a partial UTF-8 sequence (byte tokens); JSON needs valid
 * UTF-8, so such pieces are written as a list of byte values instead. */
static int valid_utf8(const unsigned char *s, size_t n)
{
	size_t i = 0;
	while (i < n) {
		unsigned char c = s[i];
		size_t k = c < 0x80 ? 0 : (c >> 5) == 6 ? 1 : (c >> 4) == 14 ? 2 : (c >> 3) == 30 ? 3 : 9;
		if (k == 9 || i + k >= n + (k == 0))
			return 0;
		for (size_t j = 1; j <= k; j++)
			if ((s[i + j] & 0xc0) != 0x80)
				return 0;
		i += k + 1;
	}
	return 1;
}

static void json_piece(FILE *o, const struct llama_vocab *v, llama_token t)
{
	char buf[256];
	int n = llama_token_to_piece(v, t, buf, sizeof buf, 0, true);
	if (n < 0)
		n = 0;
	if (valid_utf8((unsigned char *)buf, (size_t)n)) {
		json_str(o, buf, (size_t)n);
		return;
	}
	fputc('[', o);
	for (int i = 0; i < n; i++)
		fprintf(o, "%s%u", i ? "," : "", (unsigned char)buf[i]);
	fputc(']', o);
}

struct scored {
	int32_t id;
	double lp;
};

/* log-softmax of one logit row; top-K by value, ties to the lower id. */
static void rank(const float *x, int32_t nv, struct scored *top)
{
	double mx = -INFINITY, sum = 0;
	for (int32_t i = 0; i < nv; i++)
		mx = x[i] > mx ? x[i] : mx;
	for (int32_t i = 0; i < nv; i++)
		sum += exp((double)x[i] - mx);
	double lse = mx + log(sum);
	for (int k = 0; k < TOPK; k++)
		top[k] = (struct scored){ -1, -INFINITY };
	for (int32_t i = 0; i < nv; i++) {
		double lp = (double)x[i] - lse;
		if (lp <= top[TOPK - 1].lp)
			continue;
		int k = TOPK - 1;
		while (k > 0 && lp > top[k - 1].lp) {
			top[k] = top[k - 1];
			k--;
		}
		top[k] = (struct scored){ i, lp };
	}
}

static void json_top(FILE *o, const struct llama_vocab *v, const struct scored *top)
{
	fputs("[", o);
	for (int k = 0; k < TOPK; k++) {
		fprintf(o, "%s[%d, %.6f, ", k ? ", " : "", top[k].id, top[k].lp);
		json_piece(o, v, top[k].id);
		fputs("]", o);
	}
	fputs("]", o);
}

static uint16_t to_f16(float f)
{
	/* round-to-nearest-even f32 -> f16; logits never reach inf/nan here */
	uint32_t x;
	memcpy(&x, &f, 4);
	uint32_t sign = (x >> 16) & 0x8000;
	int32_t e = (int32_t)((x >> 23) & 0xff) - 127 + 15;
	uint32_t m = x & 0x7fffff;
	if (e >= 31)
		return (uint16_t)(sign | 0x7c00);
	if (e <= 0) {
		if (e < -10)
			return (uint16_t)sign;
		m |= 0x800000;
		uint32_t shift = (uint32_t)(14 - e);
		uint32_t h = m >> shift, rem = m & ((1u << shift) - 1), half = 1u << (shift - 1);
		if (rem > half || (rem == half && (h & 1)))
			h++;
		return (uint16_t)(sign | h);
	}
	uint32_t h = ((uint32_t)e << 10) | (m >> 13), rem = m & 0x1fff;
	if (rem > 0x1000 || (rem == 0x1000 && (h & 1)))
		h++;
	return (uint16_t)(sign | h);
}

struct bin {
	FILE *f;
	int f16;
};

static int bin_open(struct bin *b, const char *path, int f16, int32_t nv, int32_t rows,
		    const int32_t *pos, const int32_t *tok)
{
	b->f = fopen(path, "wb");
	b->f16 = f16;
	if (!b->f)
		return -1;
	uint32_t h[4] = { 1, (uint32_t)f16, (uint32_t)nv, (uint32_t)rows };
	fwrite("TLGT", 1, 4, b->f);
	fwrite(h, 4, 4, b->f);
	for (int32_t r = 0; r < rows; r++) {
		fwrite(&pos[r], 4, 1, b->f);
		fwrite(&tok[r], 4, 1, b->f);
	}
	return 0;
}

static void bin_row(struct bin *b, const float *x, int32_t nv)
{
	if (!b->f16) {
		fwrite(x, 4, (size_t)nv, b->f);
		return;
	}
	for (int32_t i = 0; i < nv; i++) {
		uint16_t h = to_f16(x[i]);
		fwrite(&h, 2, 1, b->f);
	}
}

static int env_int(const char *name, int def)
{
	const char *s = getenv(name);
	return s && *s ? atoi(s) : def;
}

int main(int argc, char **argv)
{
	if (argc < 5 || (strcmp(argv[1], "gen") && strcmp(argv[1], "synth"))) {
		fprintf(stderr, "usage: llm_ref_llama gen MODEL PROMPT OUT.json [OUT.bin [f16|f32]]\n"
				"       llm_ref_llama synth MODEL IDS OUT.json OUT.bin\n");
		return 2;
	}
	int synth = !strcmp(argv[1], "synth");
	int threads = env_int("LLMREF_THREADS", 2), ngen = env_int("LLMREF_NGEN", 64);
	const char *meta = getenv("LLMREF_META");
	llama_log_set(quiet, NULL);
	llama_backend_init();
	struct llama_model_params mp = llama_model_default_params();
	mp.n_gpu_layers = 0;
	struct llama_model *model = llama_model_load_from_file(argv[2], mp);
	if (!model) {
		fprintf(stderr, "cannot load %s\n", argv[2]);
		return 1;
	}
	const struct llama_vocab *v = llama_model_get_vocab(model);
	int32_t nv = llama_vocab_n_tokens(v);

	/* the prompt: text (gen) or ids (synth) */
	char *text = NULL;
	long tlen = 0;
	int32_t cap = 8192, np = 0;
	llama_token *ids = malloc(sizeof *ids * (size_t)cap);
	if (synth) {
		for (char *s = argv[3]; *s && np < cap;) {
			ids[np++] = (llama_token)strtol(s, &s, 10);
			if (*s == ',')
				s++;
		}
	} else {
		text = slurp(argv[3], &tlen);
		if (!text) {
			fprintf(stderr, "cannot read %s\n", argv[3]);
			return 1;
		}
		np = llama_tokenize(v, text, (int32_t)tlen, ids, cap, true, true);
		if (np < 0) {
			fprintf(stderr, "prompt too long\n");
			return 1;
		}
	}

	struct llama_context_params cp = llama_context_default_params();
	cp.n_ctx = 2048;
	cp.n_batch = 2048;
	cp.n_ubatch = (uint32_t)env_int("LLMREF_UBATCH", 2048);
	if (env_int("LLMREF_KV_F32", 0))
		cp.type_k = cp.type_v = GGML_TYPE_F32;
	cp.n_threads = threads;
	cp.n_threads_batch = threads;
	cp.no_perf = true;
	struct llama_context *ctx = llama_init_from_model(model, cp);
	if (!ctx || np + ngen > (int32_t)cp.n_ctx) {
		fprintf(stderr, "cannot create context\n");
		return 1;
	}

	FILE *o = fopen(argv[4], "w");
	if (!o)
		return 1;
	char desc[256];
	llama_model_desc(model, desc, sizeof desc);
	fprintf(o, "{\n");
	if (meta && *meta)
		fprintf(o, "  %s,\n", meta);
	fprintf(o, "  \"model_desc\": ");
	json_str(o, desc, strlen(desc));
	fprintf(o, ",\n  \"n_vocab\": %d,\n", nv);
	fprintf(o, "  \"settings\": {\"mode\": \"%s\", \"n_threads\": %d, \"n_threads_batch\": %d, "
		   "\"n_ctx\": %u, \"n_batch\": %u, \"n_ubatch\": %u, \"flash_attn_type\": \"%s\", "
		   "\"type_k\": \"%s\", \"type_v\": \"%s\", \"swa_full\": %s, %s\"n_gen\": %d},\n",
		argv[1], threads, threads, cp.n_ctx, cp.n_batch, cp.n_ubatch,
		llama_flash_attn_type_name(cp.flash_attn_type), ggml_type_name(cp.type_k),
		ggml_type_name(cp.type_v), cp.swa_full ? "true" : "false",
		synth ? "\"input\": \"token ids as given (no BOS added), one batch, logits at every position\", "
		      : "\"add_special\": true, \"parse_special\": true, \"chat_template\": null, \"sampling\": "
			"\"greedy argmax, ties to the lower id, end-of-generation tokens not special-cased\", ",
		synth ? 0 : ngen);
	fprintf(o, "  \"add_bos\": %s,\n", llama_vocab_get_add_bos(v) ? "true" : "false");
	if (text) {
		fprintf(o, "  \"prompt\": ");
		json_str(o, text, (size_t)tlen);
		fprintf(o, ",\n");
	}
	fprintf(o, "  \"prompt_ids\": [");
	for (int32_t i = 0; i < np; i++)
		fprintf(o, "%s%d", i ? ", " : "", ids[i]);
	fprintf(o, "],\n");

	struct scored top[TOPK];
	if (synth) {
		struct llama_batch b = llama_batch_init(np, 0, 1);
		for (int32_t i = 0; i < np; i++) {
			b.token[i] = ids[i];
			b.pos[i] = i;
			b.n_seq_id[i] = 1;
			b.seq_id[i][0] = 0;
			b.logits[i] = 1;
		}
		b.n_tokens = np;
		if (llama_decode(ctx, b)) {
			fprintf(stderr, "decode failed\n");
			return 1;
		}
		int32_t *pos = malloc(sizeof *pos * (size_t)np);
		for (int32_t i = 0; i < np; i++)
			pos[i] = i;
		struct bin bn;
		if (bin_open(&bn, argv[5], 0, nv, np, pos, ids))
			return 1;
		fprintf(o, "  \"logits_bin_rows\": \"every position 0..%d, f32\",\n", np - 1);
		fprintf(o, "  \"positions\": [\n");
		for (int32_t i = 0; i < np; i++) {
			const float *x = llama_get_logits_ith(ctx, i);
			bin_row(&bn, x, nv);
			rank(x, nv, top);
			fprintf(o, "    {\"pos\": %d, \"top1\": %d, \"top5\": ", i, top[0].id);
			json_top(o, v, top);
			fprintf(o, "}%s\n", i + 1 < np ? "," : "");
		}
		fprintf(o, "  ]\n}\n");
		fclose(bn.f);
		fclose(o);
		llama_batch_free(b);
		llama_free(ctx);
		llama_model_free(model);
		return 0;
	}

	/* gen: the prompt in one batch (logits of its last position only) */
	if (llama_decode(ctx, llama_batch_get_one(ids, np))) {
		fprintf(stderr, "prompt decode failed\n");
		return 1;
	}
	struct bin bn = { 0 };
	int want_bin = argc > 5;
	float *first = NULL;
	fprintf(o, "  \"generated\": [\n");
	llama_token cur = 0;
	for (int g = 0; g < ngen; g++) {
		const float *x = llama_get_logits_ith(ctx, -1);
		if (want_bin && g == 0) {
			first = malloc(sizeof *first * (size_t)nv);
			memcpy(first, x, sizeof *first * (size_t)nv);
		}
		if (want_bin && g == 1) {
			int f16 = argc > 6 && !strcmp(argv[6], "f16");
			int32_t pos[2] = { np - 1, np }, tok[2] = { ids[np - 1], cur };
			if (bin_open(&bn, argv[5], f16, nv, 2, pos, tok))
				return 1;
			bin_row(&bn, first, nv);
			bin_row(&bn, x, nv);
			fclose(bn.f);
		}
		rank(x, nv, top);
		cur = top[0].id;
		fprintf(o, "    {\"step\": %d, \"id\": %d, \"logprob\": %.6f, \"eog\": %s, \"piece\": ",
			g, cur, top[0].lp, llama_vocab_is_eog(v, cur) ? "true" : "false");
		json_piece(o, v, cur);
		fprintf(o, ", \"top5\": ");
		json_top(o, v, top);
		fprintf(o, "}%s\n", g + 1 < ngen ? "," : "");
		if (g + 1 < ngen && llama_decode(ctx, llama_batch_get_one(&cur, 1))) {
			fprintf(stderr, "decode failed at %d\n", g);
			return 1;
		}
	}
	fprintf(o, "  ]\n}\n");
	fclose(o);
	free(first);
	free(text);
	free(ids);
	llama_free(ctx);
	llama_model_free(model);
	return 0;
}
