/* llm_synth.h - the synthetic models of tests/data/llm_ref/synth for the
 * LLM tests (test_llm.c, test_llm_alloc.c): scripts/gen_synth_llm.c is
 * compiled into the test (its main renamed) and writes each model into a
 * temporary directory on first use, so that the tests need no build step
 * of their own. tests/check_llm_ref.sh checks that the generator still
 * writes the files whose llama.cpp logits are committed (their sha256).
 *
 * Included by one .c file per test binary: everything here is static. */
#ifndef TERN_TESTS_LLM_SYNTH_H
#define TERN_TESTS_LLM_SYNTH_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define main gen_synth_llm_main
int gen_synth_llm_main(int argc, char **argv);
#include "scripts/gen_synth_llm.c"
#undef main

#include "lib/llm/model.h"

/* sum (a-b)^2 / sum b^2 in double: how far logits a are from b */
static inline double nmse(const float *a, const float *b, size_t n)
{
	double num = 0, den = 0;
	for (size_t i = 0; i < n; i++) {
		double d = (double)a[i] - b[i];
		num += d * d;
		den += (double)b[i] * b[i];
	}
	return den > 0 ? num / den : num;
}

/* a synthetic model: gen_synth_llm's architecture variant and weight type */
struct synth_case {
	const char *arch, *type;
};

static char synth_tmpdir[256];

/* remove the files written and the directory (atexit) */
static void synth_cleanup(void)
{
	if (!synth_tmpdir[0])
		return;
	static const char *const archs[] = {"llama", "llama-linear", "llama-freqs", "qwen2", "qwen3", "gemma3",
					    "gemma", "gemma2", "phi2", "phi3", "phi3-long", "qwen3-yarn", "gemma3-yarn",
					    "mixtral", "qwen2moe", "qwen3moe", "gpt-oss", "gpt-oss-yarn", "deepseek2",
					    "deepseek2-yarn", "deepseek2-gate-up",
					    "deepseek2-kvb", "deepseek2-moe", "deepseek2-v3",
					    "llama-mean", "qwen3-last", "bert", "nomic-bert"};
	static const char *const types[] = {"f32", "q8_0", "q4_0", "q4_k", "mxfp4"};
	char p[512];
	for (size_t a = 0; a < sizeof archs / sizeof archs[0]; a++)
		for (size_t t = 0; t < sizeof types / sizeof types[0]; t++) {
			snprintf(p, sizeof p, "%s/%s-%s.gguf", synth_tmpdir, archs[a], types[t]);
			unlink(p);
		}
	rmdir(synth_tmpdir);
	synth_tmpdir[0] = 0;
}

/* Path of model ARCH-TYPE (written on first use) in buf; NULL on failure. */
static const char *synth_path(const char *arch, const char *type, char *buf, size_t cap)
{
	if (!synth_tmpdir[0]) {
		const char *t = getenv("TMPDIR");
		snprintf(synth_tmpdir, sizeof synth_tmpdir, "%s/tern-llm-XXXXXX", t && *t ? t : "/tmp");
		if (!mkdtemp(synth_tmpdir)) {
			synth_tmpdir[0] = 0;
			return NULL;
		}
		atexit(synth_cleanup);
	}
	snprintf(buf, cap, "%s/%s-%s.gguf", synth_tmpdir, arch, type);
	if (access(buf, R_OK) == 0)
		return buf;
	char *argv[] = {"gen_synth_llm", (char *)arch, (char *)type, buf, NULL};
	return gen_synth_llm_main(4, argv) == 0 ? buf : NULL;
}

/* Open synthetic model ARCH-TYPE; NULL (with a message) on failure. */
static struct tern_model *synth_open(const char *arch, const char *type)
{
	char path[512];
	if (!synth_path(arch, type, path, sizeof path)) {
		fprintf(stderr, "cannot write the synthetic model %s-%s\n", arch, type);
		return NULL;
	}
	struct tern_model *m = NULL;
	tern_err e = {0};
	if (tern_model_open(&m, path, &e)) {
		fprintf(stderr, "%s\n", e.msg);
		return NULL;
	}
	return m;
}

#endif
