/* tok_bench_tern.c - time tern's tokenizer on one file: load the vocabulary
 * once, tokenize the whole text R times, print the median and best MB/s.
 *   tok_bench_tern VOCAB.gguf TEXT [R] */
#define _POSIX_C_SOURCE 199309L
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "lib/format/gguf.h"
#include "tokenizer/tok.h"

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
	tern_err e = {0};
	gguf_file *g;
	tok_vocab *v;
	if (gguf_open(&g, argv[1], NULL, &e) || tok_vocab_load(&v, g, &e)) {
		fprintf(stderr, "%s\n", e.msg);
		return 1;
	}
	size_t cap = (size_t)n + 16, count = 0;
	int32_t *ids = malloc(cap * sizeof *ids);
	double *t = malloc(sizeof *t * (size_t)reps);
	for (int r = 0; r < reps; r++) {
		double t0 = now();
		if (tok_tokenize(v, text, (size_t)n, false, false, ids, cap, &count, NULL, &e)) {
			fprintf(stderr, "%s\n", e.msg);
			return 1;
		}
		t[r] = now() - t0;
	}
	qsort(t, (size_t)reps, sizeof *t, cmp);
	printf("tern  %8zu tokens  median %7.2f MB/s  best %7.2f MB/s\n", count, n / t[reps / 2] / 1e6, n / t[0] / 1e6);
	tok_vocab_free(v);
	gguf_close(g);
	return 0;
}
