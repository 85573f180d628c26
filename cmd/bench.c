/* bench.c - tern-bench: the options, the manual, and the choice of mode.
 * The modes live in cmd/bench/ (see bench.h): the model benchmark
 * (-m MODEL, the default), perplexity (--ppl FILE), and the kernel
 * benchmark (--kernels). */
#include <stdlib.h>
#include <string.h>

#include "cmd/bench/bench.h"
#include "cmd/common/cli.h"
#include "cmd/common/device.h"

static struct bench_opts o = {.ops = "matvec,matmul", .min_ms = 100, .reps = 3, .warmup = 1};
static const char *o_output = "table";
static bool o_json, o_no_warmup, o_reps_seen;

static const struct cli_opt opts[] = {
	{.lng = "model", .shrt = 'm', .kind = CLI_LIST, .dst = &o.models, .arg = "FILE", .ext = "gguf|bin",
	 .help = "the model to benchmark; repeat for several (each is loaded once and runs every test)"},
	{.lng = "n-prompt", .shrt = 'p', .kind = CLI_LIST, .dst = &o.n_prompt, .arg = "N[,N...]",
	 .help = "prefill tests of N prompt tokens (default 512 when no test is given; 0 for none)"},
	{.lng = "n-gen", .shrt = 'n', .kind = CLI_LIST, .dst = &o.n_gen, .arg = "N[,N...]",
	 .help = "decode tests of N generated tokens (default 128 when no test is given; 0 for none)"},
	{.lng = "n-prompt-gen", .alias = "pg", .kind = CLI_LIST, .dst = &o.pg, .arg = "P,N",
	 .help = "a test of P prompt tokens then N generated ones, timed together (repeatable)"},
	{.lng = "n-depth", .shrt = 'd', .kind = CLI_LIST, .dst = &o.depth, .arg = "N[,N...]",
	 .help = "run every test with N tokens already in the KV cache (default 0)"},
	{.lng = "threads", .shrt = 't', .kind = CLI_LIST, .dst = &o.threads, .arg = "N[,N...]",
	 .help = "threads (default: the CPUs this process may run on)"},
	{.lng = "batch-size", .shrt = 'b', .kind = CLI_LIST, .dst = &o.batch, .arg = "N[,N...]",
	 .help = "logical batch: prompt tokens handed to the model per call (default 2048, as llama-bench)"},
	{.lng = "ubatch-size", .alias = "ub", .kind = CLI_LIST, .dst = &o.ubatch, .arg = "N[,N...]",
	 .help = "physical batch: prompt tokens per forward pass (default 512)"},
	{.lng = "cache-type-k", .alias = "ctk", .kind = CLI_LIST, .dst = &o.type_k, .arg = "TYPE[,TYPE...]",
	 .help = "K cache type: f32, f16 or q8_0 (default f16)"},
	{.lng = "cache-type-v", .alias = "ctv", .kind = CLI_LIST, .dst = &o.type_v, .arg = "TYPE[,TYPE...]",
	 .help = "V cache type: f32, f16 or q8_0 (default f16)"},
	{.lng = "gpu-layers", .alias = "ngl", .kind = CLI_LIST, .dst = &o.ngl, .arg = "N|auto|all[,...]",
	 .help = "layers on the device: the last N, all (the output head too) or auto, as many as fit "
		 "(default auto; on the CPU every layer runs there); also handed to --vs"},
	{.lng = "backend", .kind = CLI_LIST, .dst = &o.backend, .arg = "NAME[,NAME...]",
	 .help = "the CPU's backend: cpu (the optimized one, default) or ref (the scalar reference)"},
	/* DEV_OPT_DEVICE's entries, -dev taking a list as llama-bench's */
	{.lng = "device", .alias = "dev", .kind = CLI_STR, .dst = &dev_o.device, .arg = "NAME[,NAME...]",
	 .help = "run on device NAME: cpu, vulkan0, vulkan1, ..., or auto, the GPU with the most free memory "
		 "else the CPU (default: auto; --list-devices lists them); each one a parameter set, a device "
		 "not present an error; also handed to --vs"},
	DEV_OPT_LIST_LIMIT,
	{.lng = "repetitions", .shrt = 'r', .kind = CLI_INT, .dst = &o.reps, .arg = "N", .min = 1, .max = 1000,
	 .seen = &o_reps_seen, .help = "measured runs of each test; the median is the figure (default 3)"},
	{.lng = "warmup", .kind = CLI_INT, .dst = &o.warmup, .arg = "N", .min = 0, .max = 100,
	 .help = "runs of each test before the measured ones, discarded (default 1)"},
	{.lng = "no-warmup", .kind = CLI_FLAG, .dst = &o_no_warmup, .excludes = "warmup",
	 .help = "the same as --warmup 0 (llama-bench's spelling)"},
	{.lng = "prompt", .kind = CLI_STR, .dst = &o.prompt, .arg = "TEXT",
	 .help = "tokens from this text instead of random ids: depth and prefill tests take its tokens in order "
		 "(repeated as needed); a decode test starts from the whole text"},
	{.lng = "output", .shrt = 'o', .kind = CLI_CHOICE, .dst = &o_output, .arg = "FORMAT",
	 .choices = "table|md|json|jsonl|csv", .help = "output format (default table)"},
	{.lng = "json", .kind = CLI_FLAG, .dst = &o_json, .excludes = "output", .help = "the same as -o json"},
	{.lng = "no-probe", .kind = CLI_FLAG, .dst = &o.no_probe,
	 .help = "skip the read-bandwidth probe (no % of roofline for decode)"},
	{.lng = "hash", .kind = CLI_FLAG, .dst = &o.hash, .help = "put each model file's sha256 in the output"},
	{.lng = "vs", .kind = CLI_FILE, .dst = &o.vs, .arg = "LLAMA_BENCH", .excludes = "ppl|kernels|prompt",
	 .help = "also run this llama-bench binary on the same model and tests, test by test, and report the "
		 "ratio tern/llama.cpp"},
	{.lng = "ppl", .kind = CLI_FILE, .dst = &o.ppl, .arg = "FILE", .needs = "model",
	 .excludes = "kernels|n-prompt|n-gen|n-prompt-gen|n-depth|prompt|repetitions|warmup|no-warmup|hash|no-probe",
	 .help = "perplexity of the model over a text file, as llama-perplexity computes it"},
	{.lng = "ctx-size", .shrt = 'c', .kind = CLI_INT, .dst = &o.ctx, .arg = "N", .min = 0, .max = 1 << 20,
	 .needs = "ppl",
	 .help = "--ppl: tokens per chunk (default 512; 3 to the model's trained context)"},
	{.lng = "chunks", .kind = CLI_INT, .dst = &o.chunks, .arg = "N", .min = 0, .max = 1 << 30, .needs = "ppl",
	 .help = "--ppl: score only the first N chunks (default: all)"},
	{.lng = "kernels", .kind = CLI_FLAG, .dst = &o.kernels, .excludes = "model",
	 .help = "run the kernel benchmark instead: read bandwidth, then mat-vec and mat-mat of each weight type "
		 "(about 2.5 minutes on 2 cores; --quick: about 5 s)"},
	{.lng = "quick", .kind = CLI_FLAG, .dst = &o.quick, .needs = "kernels",
	 .help = "--kernels: a short run: q4_0, q4_K, q8_0 on 4096x4096, 1 and 128 tokens, --min-ms 50"},
	{.lng = "types", .kind = CLI_STR, .dst = &o.types, .arg = "LIST", .needs = "kernels",
	 .help = "--kernels: comma-separated weight types, e.g. q4_0,q4_K (default: every type with SIMD "
		 "kernels); q8_1, q8_K, i8, i16, i32, i64 and f64 never hold weights and are refused"},
	{.lng = "ops", .kind = CLI_STR, .dst = &o.ops, .arg = "LIST", .needs = "kernels",
	 .help = "--kernels: matvec, matmul or both (default: matvec,matmul)"},
	{.lng = "min-ms", .kind = CLI_INT, .dst = &o.min_ms, .arg = "MS", .min = 1, .max = 600000, .seen = &o.min_ms_seen,
	 .needs = "kernels", .help = "--kernels: least time of each repetition, in milliseconds (default 100)"},
	{0},
};

static const struct cli_section sections[] = {
	{"TESTS",
	 "The options and their meaning are llama-bench's. -p N is a prefill test: N prompt tokens through the "
	 "model, reported as pp<N>. -n N is a decode test: N tokens generated one at a time, reported as tg<N>. "
	 "-pg P,N prefills P tokens then generates N, timed together (pp<P>+tg<N>, llama-bench's figure: all "
	 "tokens over the whole time). -d N runs a test with N tokens already in the KV cache (reported as "
	 "\"@ d<N>\"). Every list option takes comma-separated values and may be repeated, and every combination "
	 "of models, tests, depths, threads, batch sizes and cache types is a test: -p 128,512 -t 1,2 is four "
	 "tests. Without -p, -n and -pg the tests are -p 512 -n 128. A test that does not fit the context or "
	 "the memory is reported as skipped on stderr and the others still run; a model that cannot be loaded "
	 "is reported and skipped the same way."},
	{"METHOD",
	 "Each model is loaded once and every page of its weights is read once before any test. A backend and a "
	 "KV cache are made for each parameter set (backend, threads, -ub, cache types), sized for its largest "
	 "test. Each test runs --warmup times (discarded), then --repetitions times (measured). Each run starts "
	 "from the same state: the depth tokens are put in the cache once per test (untimed) and every run "
	 "rewinds the cache to the depth, so every run sees the same positions and tokens. Prompt and depth "
	 "tokens are ids from a fixed-seed generator (the same in every run and every invocation), or the tokens "
	 "of --prompt, repeated as needed.\n"
	 "\n"
	 "Prefill (pp) is the time from handing the first prompt token to the model (in calls of -b tokens, each "
	 "split in forward passes of -ub tokens) until the logits of the last one are ready; throughput is N over "
	 "that time, and it is also the time to first token (TTFT). Decode (tg) starts after one token (a random "
	 "id, or the whole of --prompt, untimed) and counts from the first generated token to the last: N steps "
	 "of one token, each timed, throughput N over their sum. The token fed back at each step is the greedy "
	 "choice from the logits; picking it is not timed. The per-token latencies P50, P90 and P99 are "
	 "nearest-rank percentiles over every timed step of every measured run.\n"
	 "\n"
	 "The figure reported is the median of the runs' throughputs, with their minimum, maximum and "
	 "coefficient of variation (standard deviation over mean); when the variation exceeds 5% a warning on "
	 "stderr says so (a busy or thermally throttled machine). Decode tests also report the bytes read per "
	 "token: every tensor once (one row of the token embedding, all of it when it is also the output), plus "
	 "the K and V rows each layer attends to, averaged over the steps, and the rate each run makes against the read "
	 "bandwidth probed right before it with the test's thread count (the median of 16 MiB reads over a 256 MiB "
	 "buffer for 0.3 s, in a child process), as a percentage of that roofline; the test reports the median of "
	 "its runs' percentages; above 100% is warned about (the probes read low: a shared machine's bandwidth "
	 "moves). --no-probe skips the probes. docs/bench.md gives the "
	 "method in full.\n"
	 "\n"
	 "With --vs, the llama-bench binary runs right after tern on each test, with the same model, test, "
	 "depth, threads, batch sizes, cache types, repetitions and a warm-up (it is given -r R, and --no-warmup "
	 "when --warmup is 0), and its JSON output is read back; the ratio tern/llama.cpp compares the medians "
	 "(llama-bench reports a mean: the median is taken over its samples_ts).\n"
	 "\n"
	 "Perplexity (--ppl FILE) follows llama-perplexity. The file is read whole (one trailing newline dropped, "
	 "as llama.cpp's -f does; a NUL byte is refused) and tokenized as one text, with the model's BOS token "
	 "first when its vocabulary adds one; special-token text in the file is read as plain text. The tokens "
	 "are cut into non-overlapping chunks of -c tokens (default 512); a remainder shorter than a chunk is "
	 "dropped, and the text must give at least two chunks. --chunks N scores only the first N. Each chunk "
	 "runs from an empty cache, its first token replaced by BOS when the vocabulary adds one, in batches of "
	 "-b tokens (a batch never spans two chunks: values above -c act as -c, where llama-perplexity puts b/c "
	 "chunks side by side, the same sums up to rounding), each split into forward passes of -ub tokens. Only "
	 "the second half is scored: the logits at positions c/2 to c-2 predict the token one further, "
	 "c - c/2 - 1 tokens per chunk (255 for -c 512), each by its negative log-likelihood (log-softmax with "
	 "the maximum subtracted in single precision and the exponentials summed in double, as llama.cpp does). "
	 "The perplexity is exp of the mean over all scored tokens; its uncertainty is the perplexity times the "
	 "standard error of that mean, sqrt((mean of squares - square of mean)/(n - 1)). One model per run; -t, "
	 "-b, -ub, -ctk, -ctv and --backend take one value each."},
	{"OUTPUT",
	 "Results go to stdout, everything else to stderr: a progress line when stderr is a terminal (which "
	 "model, test and run, and an estimate of the time left), then after the results the warnings and "
	 "errors met (skipped tests, runs that vary, models that failed to load), in their order. The table (-o table, the default, or -o md for "
	 "markdown like llama-bench's) has one line per test: model, size, parameters, backend, threads, test, "
	 "and t/s as the median ± the larger distance to the minimum or maximum run; decode lines add the "
	 "P50/P99 latency and the %% of the roofline, pp and pg lines the TTFT; with --vs two columns more: "
	 "llama.cpp's t/s and the ratio. On a terminal the table is no wider than it (COLUMNS, else the "
	 "terminal's width): params, size, TTFT, P99, backend, P50, threads and %% roof are left out in that "
	 "order until it fits, and a line after it names them; in a file or a pipe, and with -o md, every column "
	 "is there. -o csv has one header line and one line per test. -o json is one "
	 "document, described by docs/bench.schema.json: the build (version, commit, compiler, options), the "
	 "machine (CPU model and features, cores, memory, OS and kernel), the date, the probe, each model (path, "
	 "size, sha256 with --hash, architecture, parameter count, weight types), the parameters, and per test "
	 "the median, min, max, CV and every run's raw figures, the peak RSS, and llama-bench's figures with "
	 "--vs. -o jsonl writes one such test object per line as each test finishes.\n"
	 "\n"
	 "Ctrl-C stops the run: the tests finished so far and the one interrupted are printed (a complete "
	 "document with -o json, with \"interrupted\": true; the tests never started are left out, as in the "
	 "other formats) and the exit status is 130.\n"
	 "\n"
	 "With --ppl, stderr gets a line on what runs, then after each chunk the running estimate and its ± over "
	 "the chunks so far, that chunk's own perplexity and its time (\"[3/59] PPL 24.4195 +/- 4.12 (chunk "
	 "16.12, 0.05 s)\"); -q silences them. stdout gets only the result: llama-perplexity's line \"Final "
	 "estimate: PPL = X +/- Y\" (-o table), a markdown table (-o md), a CSV header and line (-o csv), or one "
	 "JSON document (docs/bench-ppl.schema.json; -o jsonl writes the same document on one line) with the "
	 "build, CPU, date, file, "
	 "model, settings, token and chunk counts, the perplexity and its ±, the mean NLL, the time, the peak "
	 "RSS, and per chunk its NLL sum, its own perplexity, the running estimate with its ± and its time. Ctrl-C "
	 "stops after the chunk in progress and prints the estimate over the chunks done (JSON: \"interrupted\": "
	 "true), exit 130."},
	{"DEVICES", DEV_OPTS_TEXT " Each -dev and each -ngl value is a parameter set of its own (devices outermost, after --backend); the table's backend column names the GPU a test ran on; a test reports the device "
		    "(\"device\") and the plan (\"plan\": the layers and bytes placed) in JSON, and the layers placed as "
		    "n_gpu_layers (0 on the CPU)."},
	{"KERNELS",
	 "--kernels measures the read bandwidth, then the quantized mat-vec (one token, decode) and mat-mat (a "
	 "batch of tokens, prompt processing) of each weight type, and reports how close mat-vec comes to the "
	 "bandwidth limit. Weights are spread over enough copies that the working set exceeds the last-level "
	 "cache; a figure is the median of --repetitions repetitions, each the median of the calls made during "
	 "--min-ms. The probe runs with all threads and with one before each type. Mat-vec is measured on "
	 "4096x4096, 5632x2048 and 2048x5632 with 1 thread and all threads; mat-mat on the same shapes with 32, "
	 "128 and 512 tokens. --json (or -o json) writes one document, in pieces as the run goes."},
	{"EXAMPLES",
	 "  tern-bench -m model.gguf\n"
	 "  tern-bench -m model.gguf -p 128,512 -n 64 -t 1,2 -r 5\n"
	 "  tern-bench -m a.gguf -m b.gguf -n 128 -d 0,1024 -o json > results.json\n"
	 "  tern-bench -m model.gguf --vs ~/llama.cpp/build/bin/llama-bench\n"
	 "  tern-bench --ppl wiki.test.raw -m model.gguf -c 512\n"
	 "  tern-bench --kernels --quick"},
	{"EXIT STATUS",
	 "0 on success, including when some tests were skipped (each is reported on stderr and in the output); "
	 "1 when no test could run, on a runtime error (out of memory, a model file that cannot be read) and "
	 "when --vs cannot run llama-bench; 2 on a usage error; 65 when a model or text file is malformed or not "
	 "supported (the other models still run); 130 when interrupted with Ctrl-C. With --ppl: 1 when the text "
	 "cannot be read; 2 also for -c below 3 or above the model's trained context; 65 also for a text with a "
	 "NUL byte or fewer than two chunks."},
	{0},
};

static const struct cli_prog prog = {
	.name = "bench",
	.summary = "benchmark models (prefill, decode, perplexity) and tern's kernels on this machine",
	.usage = "-m MODEL [-p N] [-n N] [-pg P,N] [-d N] [OPTIONS] | --ppl FILE -m MODEL [-c N] | --kernels",
	.description =
		"tern-bench measures how fast a model runs here, with llama-bench's options and a written-down "
		"method: prompt processing (prefill) and generation (decode) throughput, time to first token, "
		"per-token latency percentiles, the median of several runs with its spread, and how close decode "
		"comes to the memory-bandwidth limit. The output is a table, CSV, or a JSON document with the "
		"build, the machine and every raw run, for publishing results others can reproduce. --vs runs "
		"your llama-bench binary side by side; --ppl measures perplexity as llama-perplexity does; "
		"--kernels benchmarks the quantized products alone.",
	.opts = opts,
	.min_pos = 0,
	.max_pos = 0,
	.sections = sections,
};

int main(int argc, char **argv)
{
	struct cli_common common;
	const char **pos;
	int npos;
	cli_parse(&prog, argc, argv, &common, &pos, &npos);
	free(pos);
	o.verbose = common.verbose;
	o.quiet = common.quiet;
	dev_opts_check(&common);
	if (o_no_warmup)
		o.warmup = 0;
	static const char *const outs[] = {"table", "md", "json", "jsonl", "csv"};
	for (int i = 0; i < 5; i++)
		if (strcmp(o_output, outs[i]) == 0)
			o.out = (enum bench_out)i;
	if (o_json)
		o.out = BENCH_OUT_JSON;
	if (o.kernels) {
		if (o.threads.n > 1 || (o.threads.n == 1 && strchr(o.threads.v[0], ',')))
			cli_usage_error("--kernels takes one thread count (-t N)");
		if (o.out != BENCH_OUT_TABLE && o.out != BENCH_OUT_JSON)
			cli_usage_error("--kernels writes a table or JSON (-o json)");
		return bench_kernels(&o);
	}
	if (!o.models.n)
		cli_usage_error("no model: give -m MODEL (or --kernels for the kernel benchmark)");
	bench_catch_sigint();
	if (o.ppl)
		return bench_ppl(&o);
	(void)o_reps_seen;
	return bench_models(&o);
}
