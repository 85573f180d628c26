/* bench.h - what the parts of tern-bench share: the options as parsed by
 * cmd/bench.c, the progress line and warnings on stderr, the read-bandwidth
 * probe, facts about the machine, and the entry point of each mode:
 *
 *   kernels.c  --kernels: mat-vec / mat-mat throughput of every weight type
 *   model.c    -m MODEL: prefill and decode tests (the default mode)
 *   vs.c       --vs PATH: the user's llama-bench, run test by test
 *   ppl.c      --ppl FILE: perplexity over a text file
 *
 * Every mode returns the process exit status (cmd/common/cli.h). */
#ifndef TERN_BENCH_H
#define TERN_BENCH_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cmd/common/cli.h"

struct tp_pool;

enum bench_out { BENCH_OUT_TABLE, BENCH_OUT_MD, BENCH_OUT_JSON, BENCH_OUT_JSONL, BENCH_OUT_CSV };

struct bench_opts {
	/* --kernels */
	bool kernels, quick, min_ms_seen;
	const char *types, *ops;
	int64_t min_ms;

	/* the model tests; every list is llama-bench's: repeatable options,
	 * each a comma-separated list, all combining into a test matrix */
	struct cli_list models;       /* -m */
	struct cli_list n_prompt;     /* -p */
	struct cli_list n_gen;        /* -n */
	struct cli_list pg;           /* -pg P,N (one pair per option) */
	struct cli_list depth;        /* -d */
	struct cli_list threads;      /* -t */
	struct cli_list batch;        /* -b */
	struct cli_list ubatch;       /* -ub */
	struct cli_list type_k;       /* -ctk */
	struct cli_list type_v;       /* -ctv */
	struct cli_list ngl;          /* -ngl */
	struct cli_list backend;      /* --backend */
	int64_t reps;                 /* -r */
	int64_t warmup;               /* --warmup */
	const char *prompt;           /* --prompt TEXT */
	enum bench_out out;           /* -o */
	bool no_probe, hash;
	const char *vs;               /* --vs PATH (llama-bench) */

	/* perplexity */
	const char *ppl;              /* --ppl FILE */
	int64_t ctx;                  /* -c (0: 512 as llama-perplexity) */
	int64_t chunks;               /* --chunks (0: all) */

	bool verbose, quiet;
};

int bench_kernels(const struct bench_opts *o);
int bench_models(const struct bench_opts *o);
int bench_ppl(const struct bench_opts *o);

/* Set by SIGINT (bench_catch_sigint): the modes stop at the next point
 * where a partial result can be reported, report it and exit 130. */
extern volatile sig_atomic_t bench_interrupted;
void bench_catch_sigint(void);

/* ---- small helpers (util.c) ---- */
double bench_now(void);                      /* monotonic seconds */
int bench_cmp_double(const void *a, const void *b);
void *bench_xmalloc(size_t n);               /* 64-byte aligned; exits 1 when out of memory */
/* "model name" (x86) or "Model"/"Hardware" (Arm) from /proc/cpuinfo. */
void bench_cpu_model(char *out, size_t cap);
/* Peak resident set of this process in bytes: since the last
 * bench_peak_rss_reset() (where Linux lets the peak be reset: VmHWM after
 * /proc/self/clear_refs), and over the whole run. */
uint64_t bench_peak_rss(void);
uint64_t bench_peak_rss_run(void);
void bench_peak_rss_reset(void);
/* Date as ISO 8601 UTC. */
void bench_date(char *out, size_t cap);
void bench_json_strz(const char *s); /* a JSON string on stdout */
/* A count as llama-bench prints parameters: "134.52 M", "1.10 B". */
void bench_fmt_count(char *out, size_t cap, uint64_t n);

/* The values of a list option (comma-separated, repeatable): integers in
 * min..max, or non-empty strings (copied into store); a usage error (exit 2)
 * otherwise or past cap values. Returns the count. */
int bench_int_list(const struct cli_list *l, const char *opt, int64_t min, int64_t max, int64_t *out, int cap);
int bench_str_list(const struct cli_list *l, const char *opt, const char **out, char *store, size_t store_cap,
		   int cap);

/* Progress on stderr (when it is a terminal and no -q), warnings and
 * errors. */
struct bench_held {
	bool error;
	char msg[640];
};
struct bench_report {
	bool quiet, progress;  /* progress: stderr is a terminal and no -q */
	bool line_shown;       /* a progress line is on the terminal */
	int done, total;       /* for the time left */
	double t_first;        /* when the first test started */
	double t_cur;          /* when the test in progress started */
	/* hold: messages kept until bench_flush, so that they come after the
	 * results rather than between (or above) a table's rows */
	bool hold;
	struct bench_held *held;
	int n_held, cap_held;
};
void bench_progress_clear(struct bench_report *rp);
void bench_progress(struct bench_report *rp, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void bench_warn(struct bench_report *rp, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void bench_error(struct bench_report *rp, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void bench_flush(struct bench_report *rp); /* the messages held, in their order; hold ends */
void bench_test_start(struct bench_report *rp); /* a test (a progress step) starts */

/* The read bandwidth in GB/s: calls that each read a 16 MiB slice (split
 * between the pool's threads, each reading its part as a few streams at
 * once, as the kernels do), stepping through buf (n words, at least
 * 16 MiB), timed per call for dur seconds; the median. times holds
 * BENCH_MAX_CALLS doubles. */
enum { BENCH_MAX_CALLS = 100000 };
double bench_bandwidth(struct tp_pool *p, const uint64_t *buf, int64_t n, double dur, double *times);

#endif
