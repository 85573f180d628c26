/* vs.h - tern-bench --vs PATH: the user's own llama-bench binary, run on one
 * test at a time with the parameters of tern's test, its JSON output read
 * back (with jansson). Nothing of llama.cpp is built or shipped by tern.
 *
 * What a caller must know about llama-bench (tools/llama-bench):
 *  - It warms up once per test unless --no-warmup: a whole prompt run for
 *    pp and pg tests, then a one-token generation for tg and pg tests; the
 *    depth tokens are prefilled before each measured run (cached between
 *    runs at the same depth), outside the timed part.
 *  - Each sample is the time of one run: for pg, the prompt and the
 *    generation together, and its t/s is (n_prompt + n_gen) over that time.
 *  - avg_ts is the mean of the samples' t/s (not tokens over the mean time),
 *    stddev_ts their sample standard deviation; the median is taken here.
 *  - -m splits at commas: a model path with a comma cannot be passed.
 *  - Its cache types are f16, bf16, q8_0, q4_0, q4_1, q5_0, q5_1, iq4_nl;
 *    another (f32) makes it exit 1 ("invalid parameter for argument: -ctk"). */
#ifndef TERN_BENCH_VS_H
#define TERN_BENCH_VS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define VS_MAX_SAMPLES 1000

/* One of tern's tests, as llama-bench is to run it. */
struct vs_test {
	const char *model;                 /* path as given to tern */
	int64_t n_prompt, n_gen, n_depth;  /* pp: n_gen 0; tg: n_prompt 0; pg: both > 0 */
	int64_t threads, n_batch, n_ubatch, ngl;
	const char *device;                /* tern's device name (cpu, vulkan0, cuda0, ...) or NULL */
	const char *type_k, *type_v;       /* "f16", "q8_0", "f32" */
	int64_t reps;                      /* -r (1..VS_MAX_SAMPLES) */
	bool no_warmup;                    /* tern's --warmup 0 */
};

/* llama-bench's figures for that test. */
struct vs_result {
	int n;                             /* samples (= reps) */
	double ts[VS_MAX_SAMPLES];         /* samples_ts: tokens/s of each run, in run order */
	double avg_ts, stddev_ts;          /* llama-bench's mean and sample standard deviation of ts[] */
	double median_ts;                  /* of ts[] (computed here) */
	char build_commit[64];
	int64_t build_number;
	char backends[64], cpu_info[128], model_type[128];
	uint64_t model_size, model_n_params;
	char argv_line[1024];              /* the command that was run, shell-quoted, for the report */
};

/* Checks once, before any test, that path runs as llama-bench: `path --help`
 * exits 0 and its usage names -pg and --n-prompt. A path without a slash is
 * looked up in $PATH, as a shell would. 0, or an exit status (1) with a
 * one-line message in err. */
int vs_probe(const char *path, char *err, size_t cap);

/* Runs llama-bench at path on the one test t (its stdout read whole, at most
 * 16 MiB; the last line of its stderr kept for the message) and fills r from
 * the one result of its JSON that matches t. 0, or an exit status: 1 with a
 * one-line message in err ("llama-bench exited 1: <last line of its
 * stderr>", output that is not llama-bench's JSON, no result or several, a
 * result for other parameters, a sample count other than reps), or 130 when
 * bench_interrupted was set meanwhile (llama-bench is then stopped). */
int vs_run(const char *path, const struct vs_test *t, struct vs_result *r, char *err, size_t cap);

#endif
