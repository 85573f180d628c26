/* compare.c - --vs: the user's llama-bench run on the same test right
 * after tern's runs of it (vs.c runs it and reads its JSON), and the ratio
 * of the two medians. */
#include <stdlib.h>
#include <string.h>

#include "cmd/bench/model.h"
#include "cmd/bench/vs.h"

int bench_vs_probe(const char *path, char *err, size_t cap) { return vs_probe(path, err, cap); }

void bench_vs_test(struct bench_ctx *bc, struct bench_test *t)
{
	const struct bench_model *bm = &bc->models[t->model];
	struct vs_test vt = {.model = bm->path, .n_prompt = t->n_prompt, .n_gen = t->n_gen, .n_depth = t->depth,
			     .threads = t->threads, .n_batch = t->batch, .n_ubatch = t->ubatch_given, .ngl = t->ngl, .device = t->device,
			     .type_k = t->type_k, .type_v = t->type_v, .reps = bc->o->reps,
			     .no_warmup = bc->o->warmup == 0};
	struct vs_result *r = calloc(1, sizeof *r);
	if (!r) {
		snprintf(t->vs_error, sizeof t->vs_error, "out of memory");
		return;
	}
	bench_progress(&bc->rp, "[%d/%d] %s %s: llama-bench", bc->rp.done + 1, bc->rp.total, bm->label, t->name);
	char err[512];
	if (vs_run(bc->o->vs, &vt, r, err, sizeof err)) {
		free(r);
		snprintf(t->vs_error, sizeof t->vs_error, "%s", err);
		bench_warn(&bc->rp, "%s %s: %s", bm->label, t->name, err);
		return;
	}
	t->vs = r;
}

double bench_vs_ratio(const struct bench_test *t)
{
	if (!t->vs || !t->nruns || t->vs->median_ts <= 0)
		return 0;
	return t->tps.median / t->vs->median_ts;
}
