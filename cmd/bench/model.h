/* model.h - the model benchmark's results, shared by the runner (model.c),
 * the writers (out.c) and the llama-bench comparison (compare.c). */
#ifndef TERN_BENCH_MODEL_H
#define TERN_BENCH_MODEL_H

#include <stdbool.h>
#include <stdint.h>

#include "cmd/bench/bench.h"
#include "gpu/plan.h"
#include "lib/llm/model.h"
#include "quant/quant.h"
#include "tokenizer/tok.h"

#define BENCH_MAX_LIST 64
/* a run stopped by Ctrl-C (not a library code) */
#define BENCH_CANCELED 1000

struct vs_result;

struct bench_matrix {
	int64_t *n_prompt, *n_gen, *depth, *threads, *batch, *ubatch, *ngl;
	int nn_prompt, nn_gen, ndepth, nthreads, nbatch, nubatch, nngl;
	int64_t pg[BENCH_MAX_LIST][2];
	int npg;
	const char *type_k[BENCH_MAX_LIST], *type_v[BENCH_MAX_LIST], *backend[BENCH_MAX_LIST];
	int ntype_k, ntype_v, nbackend;
	char store_k[1024], store_v[1024], store_b[1024], store_ngl[1024], store_dev[1024];
	const char *ngl_s[BENCH_MAX_LIST]; /* -ngl as given: N, auto or all */
	const char *dev_s[BENCH_MAX_LIST]; /* -dev as given: auto, cpu, vulkan0, ... */
	int ndev;
};

struct bench_model {
	const char *path;
	struct tern_model *m; /* while its tests run; NULL before and after */
	tok_vocab *v;
	bool loaded;          /* it was loaded (else error says why); the facts below hold */
	char arch[64];
	uint32_t n_layer, n_embd, n_vocab, n_ctx_train;
	char label[160];       /* "llama 134.52M q4_1" */
	char error[512];
	char sha256[65];      /* --hash: hex digest, else "" */
	uint64_t file_size, weights_size, n_params;
	uint64_t step_weight_bytes; /* weights a decode step reads */
	uint32_t main_type;
	uint64_t type_tensors[QT_COUNT], type_bytes[QT_COUNT];
};

struct bench_run {
	double prefill_s; /* the prompt (pp, pg) or the start of a tg test */
	double decode_s;  /* the sum of the decode steps */
	double total_s;
	double ttft_s;    /* time to the first generated token */
	double tps;       /* the test's throughput in this run */
	double probe_gbs; /* tg: the read bandwidth probed right before this run (0: none) */
	double probe_dev_gbs; /* tg with layers on a GPU: its memory's read bandwidth, probed likewise */
	double roofline_pct; /* tg: bytes per token x tps against the probes (0: none) */
	/* the device's decode steps in this run (tern_backend_step_stats):
	 * steps, of those replayed from a recording, kernels of the last */
	uint64_t steps, replays, step_kernels;
	const char *recording; /* "CUDA graph", "command buffer", NULL: no device steps */
};

struct bench_stats {
	int n;
	double median, min, max, mean, stddev, cv;
	double p50, p90, p99;
};

enum bench_kind { BENCH_PP, BENCH_TG, BENCH_PG };

struct bench_test {
	int model;
	enum bench_kind kind;
	char name[64]; /* "pp512", "tg128 @ d1024", "pp512+tg128" */
	const char *backend, *type_k, *type_v;
	int64_t n_prompt, n_gen, depth, threads, batch, ubatch, ubatch_given;
	int64_t ngl;       /* the layers the plan placed on the device (0: all on the CPU) */
	const char *ngl_s; /* -ngl as given: N, auto or all */
	const char *dev_s; /* -dev as given: auto, cpu, vulkan0, ... */
	char device[32];   /* where it ran: cpu, vulkan0, ... ("" until its engine is made) */
	struct tern_plan plan; /* the device's plan (all 0 on the CPU) */
	/* results */
	char skipped[512]; /* why it did not run, or "" */
	char error[512];   /* the error that stopped it, or "" */
	bool interrupted;
	bool reported; /* written as it finished (bench_out_test): it ran, or was skipped */
	int warmup, nruns;
	struct bench_run *runs; /* [nruns] */
	double *lat;            /* [nlat] every decode step of every measured run, seconds */
	int nlat;
	struct bench_stats tps, ttft, latency;
	double bytes_per_token, probe_gbs, roofline_pct; /* tg only (0: none); the medians of the runs' */
	double dev_bytes_per_token, probe_dev_gbs;       /* of those, read from the GPU's memory; its probe */
	uint64_t peak_rss;
	struct vs_result *vs; /* --vs: llama-bench's figures, or NULL */
	char vs_error[512];
};

/* Where the tokens of the tests come from. */
struct bench_stream {
	const int32_t *prompt; /* --prompt's tokens, or NULL: random ids */
	int64_t np;
	int32_t n_vocab;
};

struct bench_ctx {
	const struct bench_opts *o;
	struct bench_matrix mx;
	struct bench_report rp;
	struct bench_model *models;
	int nmodels;
	struct bench_test *tests;
	int ntests, captests;
	struct bench_stream stream;
	int32_t *prompt_tok;
	char date[32];
	double t_start, duration_s;
	/* the writers' state */
	int written;
	bool header_done;
	uint32_t cols; /* the table's columns (a bit per column, out.c) */
};

/* Median, min, max, mean, sample standard deviation, CV and nearest-rank
 * percentiles of x[n]. */
void bench_stats(const double *x, int n, struct bench_stats *st);

/* out.c: the writers. begin before the first test, test as each finishes
 * (or is skipped), end at the end (also after Ctrl-C). */
void bench_out_begin(struct bench_ctx *bc);
void bench_out_test(struct bench_ctx *bc, struct bench_test *t);
void bench_out_end(struct bench_ctx *bc);

/* compare.c: --vs. */
int bench_vs_probe(const char *path, char *err, size_t cap);
void bench_vs_test(struct bench_ctx *bc, struct bench_test *t);
double bench_vs_ratio(const struct bench_test *t); /* tern/llama.cpp medians, 0 when none */

/* util.c: sha256 of a file as hex ("" when it cannot be read). */
void bench_sha256_file(const char *path, char *hex, size_t cap);

#endif
