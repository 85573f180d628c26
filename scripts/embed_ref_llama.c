/* embed_ref_llama.c - reference data for tern's embeddings (lib/llm/embed.h),
 * produced by llama.cpp (libllama, CPU) the way its llama-embedding tool
 * computes them. Our own harness: it links against an external,
 * already-built llama.cpp given by path (scripts/embed_ref_synth.sh
 * compiles it) and writes JSON that tests/test_embed.c compares with.
 *
 *   embed_ref_llama MODEL INPUTS.txt OUT.json POOLING...
 *
 * INPUTS.txt: one input per line (as llama-embedding splits its prompt);
 * each is tokenized with llama_tokenize(add_special = true, parse_special
 * = true), as common_tokenize does there. POOLING: "file" (the model's
 * own {arch}.pooling_type, llama-embedding's default), "mean", "cls" or
 * "last" (its --pooling). For each pooling, a context with embeddings on,
 * n_ctx = n_batch = n_ubatch = 512, and every input decoded as its own
 * sequence (seq 0, positions 0..n-1, the memory cleared before each):
 * llama_get_embeddings_seq(ctx, 0), the pooled embedding before any
 * normalisation (llama-embedding's --embd-normalize -1).
 *
 * Environment: EMBREF_THREADS (default 2); EMBREF_META: a JSON object body
 * (`"k": v, ...`) copied into the output (model name, sha256, version).
 *
 * Output: {META..., "n_embd", "file_pooling", "settings", "inputs": [{"text",
 * "ids"}], "embeddings": {POOLING: [[n_embd floats] per input]}}; floats
 * with 9 significant digits (exact for f32). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "llama.h"

#define MAX_INPUTS 64
#define MAX_IDS 512

static void quiet(enum ggml_log_level level, const char *text, void *ud)
{
	(void)ud;
	if (level == GGML_LOG_LEVEL_ERROR)
		fputs(text, stderr);
}

static void json_str(FILE *o, const char *s, size_t n)
{
	fputc('"', o);
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c == '"' || c == '\\')
			fprintf(o, "\\%c", c);
		else if (c < 0x20 || c == 0x7f)
			fprintf(o, "\\u%04x", c);
		else
			fputc(c, o);
	}
	fputc('"', o);
}

static const char *pooling_name(enum llama_pooling_type p)
{
	switch (p) {
	case LLAMA_POOLING_TYPE_NONE: return "none";
	case LLAMA_POOLING_TYPE_MEAN: return "mean";
	case LLAMA_POOLING_TYPE_CLS: return "cls";
	case LLAMA_POOLING_TYPE_LAST: return "last";
	case LLAMA_POOLING_TYPE_RANK: return "rank";
	default: return "unspecified";
	}
}

int main(int argc, char **argv)
{
	if (argc < 5) {
		fprintf(stderr, "usage: embed_ref_llama MODEL INPUTS.txt OUT.json file|mean|cls|last...\n");
		return 2;
	}
	const char *env = getenv("EMBREF_THREADS");
	int threads = env && *env ? atoi(env) : 2;
	llama_log_set(quiet, NULL);
	llama_backend_init();
	struct llama_model *model = llama_model_load_from_file(argv[1], llama_model_default_params());
	if (!model) {
		fprintf(stderr, "cannot load %s\n", argv[1]);
		return 1;
	}
	const struct llama_vocab *v = llama_model_get_vocab(model);
	int n_embd = llama_model_n_embd(model);

	/* the inputs: one per line, the last newline ending the last line */
	static char lines[MAX_INPUTS][1024];
	static llama_token ids[MAX_INPUTS][MAX_IDS];
	int n_ids[MAX_INPUTS], n_in = 0;
	FILE *f = fopen(argv[2], "rb");
	if (!f) {
		fprintf(stderr, "cannot open %s\n", argv[2]);
		return 1;
	}
	while (n_in < MAX_INPUTS && fgets(lines[n_in], sizeof lines[n_in], f)) {
		size_t len = strlen(lines[n_in]);
		if (len && lines[n_in][len - 1] == '\n')
			lines[n_in][--len] = 0;
		n_ids[n_in] = llama_tokenize(v, lines[n_in], (int32_t)len, ids[n_in], MAX_IDS, true, true);
		if (n_ids[n_in] <= 0) {
			fprintf(stderr, "cannot tokenize input %d\n", n_in);
			return 1;
		}
		n_in++;
	}
	fclose(f);

	FILE *o = fopen(argv[3], "w");
	if (!o) {
		fprintf(stderr, "cannot write %s\n", argv[3]);
		return 1;
	}
	const char *meta = getenv("EMBREF_META");
	fputs("{\n", o);
	if (meta && *meta)
		fprintf(o, "  %s,\n", meta);
	fprintf(o, "  \"n_embd\": %d,\n", n_embd);
	fprintf(o, "  \"settings\": \"llama_tokenize(add_special, parse_special); embeddings on, n_ctx = n_batch = "
		   "n_ubatch = 512, each input its own sequence (seq 0, positions 0..n-1, memory cleared), "
		   "llama_get_embeddings_seq, no normalisation; %d threads\",\n", threads);
	fputs("  \"inputs\": [\n", o);
	for (int i = 0; i < n_in; i++) {
		fputs("    {\"text\": ", o);
		json_str(o, lines[i], strlen(lines[i]));
		fputs(", \"ids\": [", o);
		for (int j = 0; j < n_ids[i]; j++)
			fprintf(o, "%s%d", j ? ", " : "", ids[i][j]);
		fprintf(o, "]}%s\n", i + 1 < n_in ? "," : "");
	}
	fputs("  ],\n  \"embeddings\": {", o);

	float *emb = malloc(sizeof(float) * (size_t)n_embd);
	for (int pi = 4; pi < argc; pi++) {
		struct llama_context_params cp = llama_context_default_params();
		cp.embeddings = true;
		cp.n_ctx = cp.n_batch = cp.n_ubatch = 512;
		cp.n_threads = cp.n_threads_batch = threads;
		cp.no_perf = true;
		const char *pn = argv[pi];
		cp.pooling_type = !strcmp(pn, "mean") ? LLAMA_POOLING_TYPE_MEAN
				  : !strcmp(pn, "cls") ? LLAMA_POOLING_TYPE_CLS
				  : !strcmp(pn, "last") ? LLAMA_POOLING_TYPE_LAST : LLAMA_POOLING_TYPE_UNSPECIFIED;
		struct llama_context *ctx = llama_init_from_model(model, cp);
		if (!ctx) {
			fprintf(stderr, "cannot make a context\n");
			return 1;
		}
		if (pi == 4 && !strcmp(pn, "file"))
			fprintf(o, "\n    \"file_pooling\": \"%s\",", pooling_name(llama_pooling_type(ctx)));
		fprintf(o, "%s\n    \"%s\": [", pi > 4 ? "," : "", pn);
		for (int i = 0; i < n_in; i++) {
			struct llama_batch b = llama_batch_init(n_ids[i], 0, 1);
			for (int j = 0; j < n_ids[i]; j++) {
				b.token[j] = ids[i][j];
				b.pos[j] = j;
				b.n_seq_id[j] = 1;
				b.seq_id[j][0] = 0;
				b.logits[j] = 1;
			}
			b.n_tokens = n_ids[i];
			llama_memory_clear(llama_get_memory(ctx), true);
			if (llama_decode(ctx, b)) {
				fprintf(stderr, "decode failed (input %d)\n", i);
				return 1;
			}
			const float *e = llama_get_embeddings_seq(ctx, 0);
			if (!e) {
				fprintf(stderr, "no sequence embedding (pooling %s)\n", pn);
				return 1;
			}
			memcpy(emb, e, sizeof(float) * (size_t)n_embd);
			fputs(i ? ",\n      [" : "\n      [", o);
			for (int j = 0; j < n_embd; j++)
				fprintf(o, "%s%.9g", j ? ", " : "", (double)emb[j]);
			fputs("]", o);
			llama_batch_free(b);
		}
		fputs("\n    ]", o);
		llama_free(ctx);
	}
	fputs("\n  }\n}\n", o);
	fclose(o);
	free(emb);
	llama_model_free(model);
	llama_backend_free();
	return 0;
}
