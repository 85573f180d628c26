/* tok_bench_llama.c - the same measurement with llama.cpp's tokenizer
 * (libllama, vocabulary only): tokenize the whole text R times.
 *   tok_bench_llama VOCAB.gguf TEXT [R] */
#define _POSIX_C_SOURCE 199309L
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "llama.h"

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec * 1e-9;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static void quiet(enum ggml_log_level level, const char *text, void *ud)
{
	(void)level; (void)text; (void)ud;
}

int main(int argc, char **argv)
{
	if (argc < 3)
		return 2;
	int reps = argc > 3 ? atoi(argv[3]) : 5;
	FILE *f = fopen(argv[2], "rb");
	if (!f)
		return 1;
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fseek(f, 0, SEEK_SET);
	char *text = malloc((size_t)n);
	if (fread(text, 1, (size_t)n, f) != (size_t)n)
		return 1;
	fclose(f);
	llama_log_set(quiet, NULL);
	llama_backend_init();
	struct llama_model_params mp = llama_model_default_params();
	mp.vocab_only = true;
	struct llama_model *m = llama_model_load_from_file(argv[1], mp);
	if (!m)
		return 1;
	const struct llama_vocab *v = llama_model_get_vocab(m);
	int32_t cap = (int32_t)n + 16, count = 0;
	llama_token *ids = malloc(sizeof *ids * (size_t)cap);
	double *t = malloc(sizeof *t * (size_t)reps);
	for (int r = 0; r < reps; r++) {
		double t0 = now();
		count = llama_tokenize(v, text, (int32_t)n, ids, cap, false, false);
		t[r] = now() - t0;
	}
	qsort(t, (size_t)reps, sizeof *t, cmp);
	printf("llama %8d tokens  median %7.2f MB/s  best %7.2f MB/s\n", count, n / t[reps / 2] / 1e6, n / t[0] / 1e6);
	llama_model_free(m);
	return 0;
}
