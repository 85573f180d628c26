/* vs.h - the llama-bench runner behind --vs (placeholder interface; the
 * runner is being written). */
#ifndef TERN_BENCH_VS_H
#define TERN_BENCH_VS_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#define VS_MAX_SAMPLES 1000
struct vs_test {
	const char *model;
	int64_t n_prompt, n_gen, n_depth;
	int64_t threads, n_batch, n_ubatch, ngl;
	const char *type_k, *type_v;
	int64_t reps;
	bool no_warmup;
};
struct vs_result {
	int n;
	double ts[VS_MAX_SAMPLES];
	double avg_ts, stddev_ts;
	double median_ts;
	char build_commit[64];
	int64_t build_number;
	char backends[64], cpu_info[128], model_type[128];
	uint64_t model_size, model_n_params;
	char argv_line[1024];
};
int vs_probe(const char *path, char *err, size_t cap);
int vs_run(const char *path, const struct vs_test *t, struct vs_result *r, char *err, size_t cap);
#endif
