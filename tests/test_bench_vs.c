/* test_bench_vs.c - tern-bench --vs (cmd/bench/vs.c, included here: the test
 * binaries link libtern.a only). llama-bench is played by
 * tests/data/bench/fake-llama-bench, which logs the arguments it was given
 * and prints llama-bench's JSON, a recorded output of the real llama-bench
 * on SmolLM2 (tests/data/bench/real-*.json), or a failure on request.
 *
 * Checked: the options each kind of test is given (pp, tg, pg, depth, cache
 * types, --no-warmup), the figures read from the real outputs (the numbers
 * in the files), the median, and that every way llama-bench can fail (exit
 * status, signal, not JSON, no result or two, other parameters, missing or
 * bad samples, too much output, a missing or non-executable binary, Ctrl-C)
 * is an error with a one-line message.
 *
 * VS_REAL_LLAMA_BENCH=/path/to/llama-bench VS_REAL_MODEL=model.gguf also
 * runs the real one (pp64, tg16, pp64+tg16, -r 2, -t VS_REAL_THREADS or 2)
 * and prints its figures. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "cmd/bench/vs.c"
#include "tests/testutil.h"

volatile sig_atomic_t bench_interrupted;

#define FAKE "tests/data/bench/fake-llama-bench"
#define DATA "tests/data/bench/"

#ifdef TERN_HAVE_JANSSON

static char log_path[64];

static int setup(void **state)
{
	(void)state;
	snprintf(log_path, sizeof log_path, "/tmp/tern-vs-log-XXXXXX");
	int fd = mkstemp(log_path);
	if (fd < 0)
		return -1;
	close(fd);
	setenv("FAKE_LLAMA_BENCH_LOG", log_path, 1);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	unlink(log_path);
	return 0;
}

/* A fresh environment for the fake: no mode, no fixture, no samples. */
static void fake_env(const char *mode, const char *fixture, const char *ts)
{
	mode ? setenv("FAKE_LLAMA_BENCH_MODE", mode, 1) : unsetenv("FAKE_LLAMA_BENCH_MODE");
	fixture ? setenv("FAKE_LLAMA_BENCH_FIXTURE", fixture, 1) : unsetenv("FAKE_LLAMA_BENCH_FIXTURE");
	ts ? setenv("FAKE_LLAMA_BENCH_TS", ts, 1) : unsetenv("FAKE_LLAMA_BENCH_TS");
	bench_interrupted = 0;
}

static struct vs_test base_test(void)
{
	return (struct vs_test){
		.model = "models/SmolLM2-135M-Instruct.Q4_1.gguf",
		.threads = 2,
		.n_batch = 2048,
		.n_ubatch = 512,
		.ngl = 0,
		.type_k = "f16",
		.type_v = "f16",
		.reps = 3,
	};
}

/* The arguments the fake was given, joined with single spaces. */
static void logged_args(char *out, size_t cap)
{
	size_t n = 0;
	char *text = test_read_file(log_path, &n);
	assert_non_null(text);
	for (size_t i = 0; i < n; i++)
		if (text[i] == '\n')
			text[i] = i + 1 == n ? 0 : ' ';
	snprintf(out, cap, "%s", text);
	free(text);
}

static struct vs_result res; /* big: not on the stack */

static void expect_args(const struct vs_test *t, const char *want)
{
	char err[512] = "", got[1024];
	fake_env(NULL, NULL, NULL);
	int rc = vs_run(FAKE, t, &res, err, sizeof err);
	assert_string_equal(err, "");
	assert_int_equal(rc, 0);
	logged_args(got, sizeof got);
	assert_string_equal(got, want);
	/* the fake's default samples: 100, 101, ... */
	assert_int_equal(res.n, t->reps);
	for (int i = 0; i < res.n; i++)
		assert_true(res.ts[i] == 100.0 + i);
}

static void test_args(void **state)
{
	(void)state;
	struct vs_test t = base_test();
	t.n_prompt = 64;
	expect_args(&t, "-m models/SmolLM2-135M-Instruct.Q4_1.gguf -p 64 -n 0 -t 2 -b 2048 -ub 512 -ctk f16 "
			"-ctv f16 -ngl 0 -r 3 -o json");
	assert_string_equal(res.argv_line, FAKE " -m models/SmolLM2-135M-Instruct.Q4_1.gguf -p 64 -n 0 -t 2 -b 2048 "
					   "-ub 512 -ctk f16 -ctv f16 -ngl 0 -r 3 -o json");

	t = base_test();
	t.n_gen = 16;
	t.threads = 1;
	t.ngl = 99;
	t.reps = 5;
	expect_args(&t, "-m models/SmolLM2-135M-Instruct.Q4_1.gguf -p 0 -n 16 -t 1 -b 2048 -ub 512 -ctk f16 "
			"-ctv f16 -ngl 99 -r 5 -o json");

	/* pg: -p 0 -n 0, or llama-bench's default pp512 and tg128 would run too */
	t = base_test();
	t.n_prompt = 32;
	t.n_gen = 8;
	expect_args(&t, "-m models/SmolLM2-135M-Instruct.Q4_1.gguf -p 0 -n 0 -pg 32,8 -t 2 -b 2048 -ub 512 "
			"-ctk f16 -ctv f16 -ngl 0 -r 3 -o json");

	t = base_test();
	t.n_gen = 16;
	t.n_depth = 64;
	t.n_batch = 256;
	t.n_ubatch = 128;
	t.type_k = "q8_0";
	t.type_v = "q4_0";
	t.reps = 2;
	t.no_warmup = true;
	expect_args(&t, "-m models/SmolLM2-135M-Instruct.Q4_1.gguf -p 0 -n 16 -d 64 -t 2 -b 256 -ub 128 "
			"-ctk q8_0 -ctv q4_0 -ngl 0 -r 2 --no-warmup -o json");

	/* a path that needs quoting, in the report's command line */
	t = base_test();
	t.model = "my models/it's.gguf";
	t.n_prompt = 8;
	t.reps = 1;
	expect_args(&t, "-m my models/it's.gguf -p 8 -n 0 -t 2 -b 2048 -ub 512 -ctk f16 -ctv f16 -ngl 0 -r 1 -o json");
	assert_string_equal(res.argv_line, FAKE " -m 'my models/it'\\''s.gguf' -p 8 -n 0 -t 2 -b 2048 -ub 512 -ctk f16 "
					   "-ctv f16 -ngl 0 -r 1 -o json");
}

/* The device: passed as llama-bench spells it (-dev none for the CPU:
 * llama-bench refuses the CPU by name) where its --help names --device;
 * never to a llama-bench without it, nor a device llama.cpp has no name for */
static void test_device_arg(void **state)
{
	(void)state;
	char err[512] = "", got[1024];
	static const struct {
		const char *dev, *want;
	} cases[] = {{"vulkan0", " -dev Vulkan0"}, {"vulkan12", " -dev Vulkan12"}, {"cuda1", " -dev CUDA1"},
		     {"cpu", " -dev none"},	     {"test0", ""},		     {NULL, ""}};
	for (int with = 0; with < 2; with++) {
		fake_env(with ? "devices" : NULL, NULL, NULL);
		assert_int_equal(vs_probe(FAKE, err, sizeof err), 0);
		for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
			struct vs_test t = base_test();
			t.n_gen = 4;
			t.ngl = 31;
			t.device = cases[i].dev;
			fake_env(with ? "devices" : NULL, NULL, NULL);
			assert_int_equal(vs_run(FAKE, &t, &res, err, sizeof err), 0);
			assert_string_equal(err, "");
			logged_args(got, sizeof got);
			char want[512];
			snprintf(want, sizeof want,
				 "-m models/SmolLM2-135M-Instruct.Q4_1.gguf -p 0 -n 4 -t 2 -b 2048 -ub 512 -ctk f16 "
				 "-ctv f16 -ngl 31%s -r 3 -o json",
				 with ? cases[i].want : "");
			assert_string_equal(got, want);
		}
	}
	fake_env(NULL, NULL, NULL);
	assert_int_equal(vs_probe(FAKE, err, sizeof err), 0);
}

/* ---- the recorded outputs of the real llama-bench --------------------------------- */

static void check_common(const struct vs_result *r)
{
	assert_string_equal(r->build_commit, "0c1e570");
	assert_int_equal(r->build_number, 1);
	assert_string_equal(r->backends, "CPU");
	assert_string_equal(r->cpu_info, "AMD EPYC");
	assert_string_equal(r->model_type, "llama 256M Q4_1");
	assert_int_equal(r->model_size, 96576768);
	assert_int_equal(r->model_n_params, 134515008);
}

static void run_fixture(const char *file, const struct vs_test *t)
{
	char err[512] = "";
	fake_env(NULL, file, NULL);
	int rc = vs_run(FAKE, t, &res, err, sizeof err);
	assert_string_equal(err, "");
	assert_int_equal(rc, 0);
	check_common(&res);
}

static void test_real_outputs(void **state)
{
	(void)state;
	struct vs_test t = base_test();
	t.n_prompt = 64;
	run_fixture(DATA "real-pp64.json", &t);
	assert_int_equal(res.n, 3);
	assert_true(res.ts[0] == 468.252 && res.ts[1] == 468.319 && res.ts[2] == 468.065);
	assert_true(res.avg_ts == 468.211641 && res.stddev_ts == 0.131713);
	assert_true(res.median_ts == 468.252);

	t = base_test();
	t.n_gen = 16;
	run_fixture(DATA "real-tg16.json", &t);
	assert_int_equal(res.n, 3);
	assert_true(res.ts[0] == 169.252 && res.ts[1] == 175.577 && res.ts[2] == 175.914);
	assert_true(res.avg_ts == 173.580825 && res.stddev_ts == 3.752781);
	assert_true(res.median_ts == 175.577);

	t = base_test();
	t.n_prompt = 32;
	t.n_gen = 8;
	run_fixture(DATA "real-pg32-8.json", &t);
	assert_int_equal(res.n, 3);
	assert_true(res.ts[0] == 333.782 && res.ts[1] == 328.68 && res.ts[2] == 336.362);
	assert_true(res.avg_ts == 332.941222 && res.stddev_ts == 3.908915);
	assert_true(res.median_ts == 333.782);

	/* two samples: the median is the mean of both */
	t = base_test();
	t.n_gen = 16;
	t.n_depth = 64;
	t.n_batch = 256;
	t.n_ubatch = 128;
	t.type_k = t.type_v = "q8_0";
	t.reps = 2;
	t.no_warmup = true;
	run_fixture(DATA "real-tg16-d64-q8.json", &t);
	assert_int_equal(res.n, 2);
	assert_true(res.ts[0] == 156.835 && res.ts[1] == 164.677);
	assert_true(res.avg_ts == 160.755728 && res.stddev_ts == 5.545196);
	assert_true(fabs(res.median_ts - (156.835 + 164.677) / 2) < 1e-9);

	/* llama-bench escapes each byte of a non-ASCII path as "\\uffff" and
	 * a stray character (a signed char through "%04x"): the document is still
	 * JSON, and the model file's name is not among the fields compared */
	t = base_test();
	t.model = "/tmp/vs-\xc3\xbc/m.gguf";
	t.n_prompt = 8;
	t.threads = 1;
	t.ngl = -1;
	t.reps = 1;
	run_fixture(DATA "real-pp8-nonascii-path.json", &t);
	assert_int_equal(res.n, 1);
	assert_true(res.ts[0] == 189.234 && res.median_ts == 189.234);
	assert_true(res.avg_ts == 189.233763 && res.stddev_ts == 0);
}

static void test_median(void **state)
{
	(void)state;
	struct {
		const char *ts;
		int reps;
		double median;
	} cases[] = {
		{"300,100,200", 3, 200}, {"300,100,200,50", 4, 150}, {"5,1,4,2,3", 5, 3}, {"42", 1, 42}, {"7,9", 2, 8},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		struct vs_test t = base_test();
		t.n_gen = 4;
		t.reps = cases[i].reps;
		char err[512] = "";
		fake_env(NULL, NULL, cases[i].ts);
		assert_int_equal(vs_run(FAKE, &t, &res, err, sizeof err), 0);
		assert_int_equal(res.n, cases[i].reps);
		assert_true(res.median_ts == cases[i].median);
		/* the samples stay in run order */
		assert_true(res.ts[0] == atof(cases[i].ts));
	}
}

/* ---- failures ----------------------------------------------------------------------- */

static void expect_error(int rc, int want_rc, const char *err, const char *want)
{
	if (!strstr(err, want))
		fail_msg("error \"%s\" does not contain \"%s\"", err, want);
	assert_int_equal(rc, want_rc);
	assert_null(strchr(err, '\n'));
}

static void expect_mode_error(const char *mode, const char *fixture, const struct vs_test *t, const char *want)
{
	char err[512] = "";
	fake_env(mode, fixture, NULL);
	expect_error(vs_run(FAKE, t, &res, err, sizeof err), EXIT_RUNTIME, err, want);
}

static void test_failures(void **state)
{
	(void)state;
	struct vs_test t = base_test();
	t.n_prompt = 64;
	expect_mode_error("fail", NULL, &t,
			  "llama-bench exited 1: main: error: failed to load model "
			  "'models/SmolLM2-135M-Instruct.Q4_1.gguf'");
	expect_mode_error("signal", NULL, &t, "llama-bench was killed by signal 11");
	expect_mode_error("garbage", NULL, &t, "llama-bench's output is not JSON (line 1:");
	expect_mode_error("empty", NULL, &t, "llama-bench wrote nothing on stdout for pp64");
	expect_mode_error("object", NULL, &t, "not an array");
	expect_mode_error("zero", NULL, &t, "llama-bench reported 0 results, expected one for pp64");
	expect_mode_error("two", NULL, &t, "llama-bench reported 2 results (pp64, pp64), expected one for pp64");
	expect_mode_error("fewer", NULL, &t, "llama-bench reported 2 samples, expected 3");
	expect_mode_error("badts", NULL, &t, "samples_ts[0] is not a positive number");
	expect_mode_error("nots", NULL, &t, "no \"samples_ts\" array");
	expect_mode_error("huge", NULL, &t, "wrote more than 16 MiB on stdout");

	/* a real output with two tests, and one for other parameters */
	t = base_test();
	t.n_prompt = 16;
	t.reps = 2;
	expect_mode_error(NULL, DATA "real-two.json", &t,
			  "llama-bench reported 2 results (pp16, tg4), expected one for pp16");
	t = base_test();
	t.n_prompt = 64;
	t.n_batch = 512;
	expect_mode_error(NULL, DATA "real-pp64.json", &t,
			  "llama-bench's result (pp64) has n_batch 2048, expected 512, for pp64");
	t.n_batch = 2048;
	t.n_depth = 128;
	expect_mode_error(NULL, DATA "real-pp64.json", &t, "has n_depth 0, expected 128, for pp64 @ d128");
	t.n_depth = 0;
	t.type_v = "q8_0";
	expect_mode_error(NULL, DATA "real-pp64.json", &t, "has type_v f16, expected q8_0");

	/* llama-bench refuses the cache type: its own message */
	t = base_test();
	t.n_gen = 4;
	t.type_k = "f32";
	expect_mode_error(NULL, NULL, &t, "llama-bench exited 1: error: invalid parameter for argument: -ctk");

	/* a model path llama-bench would split */
	t = base_test();
	t.n_gen = 4;
	t.model = "a,b.gguf";
	expect_mode_error(NULL, NULL, &t, "splits -m at commas");

	/* a megabyte on stderr does not block the run */
	t = base_test();
	t.n_gen = 4;
	char err[512] = "";
	fake_env("stderr", NULL, NULL);
	assert_int_equal(vs_run(FAKE, &t, &res, err, sizeof err), 0);
	assert_int_equal(res.n, 3);

	/* binaries that cannot run */
	fake_env(NULL, NULL, NULL);
	expect_error(vs_run("tests/data/bench/no-such-llama-bench", &t, &res, err, sizeof err), EXIT_RUNTIME, err,
		     "cannot run tests/data/bench/no-such-llama-bench: No such file or directory");
	expect_error(vs_run(DATA "real-pp64.json", &t, &res, err, sizeof err), EXIT_RUNTIME, err,
		     "cannot run " DATA "real-pp64.json: Permission denied");
	expect_error(vs_run("tests/data/bench", &t, &res, err, sizeof err), EXIT_RUNTIME, err,
		     "cannot run tests/data/bench: Permission denied");
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void on_alarm(int sig)
{
	(void)sig;
	bench_interrupted = 1;
}

/* Ctrl-C (bench_interrupted, set here by an alarm) while llama-bench runs:
 * it is stopped, not waited for (the fake sleeps 60 s), and vs_run says so. */
static void expect_interrupted(const char *mode)
{
	struct vs_test t = base_test();
	t.n_gen = 4;
	char err[512] = "";
	fake_env(mode, NULL, NULL);
	struct sigaction sa = {0}, old;
	sa.sa_handler = on_alarm;
	sigaction(SIGALRM, &sa, &old);
	alarm(1);
	double t0 = now_s();
	int rc = vs_run(FAKE, &t, &res, err, sizeof err);
	double dt = now_s() - t0;
	alarm(0);
	sigaction(SIGALRM, &old, NULL);
	expect_error(rc, 130, err, "interrupted while llama-bench was running");
	assert_true(dt < 30);
	bench_interrupted = 0;
}

static void test_interrupted(void **state)
{
	(void)state;
	expect_interrupted("sleep");
	/* its pipes closed: vs_run is waiting for it to exit */
	expect_interrupted("detach");

	/* interrupted before: llama-bench is not started */
	struct vs_test t = base_test();
	t.n_gen = 4;
	char err[512] = "";
	fake_env(NULL, NULL, NULL);
	FILE *f = fopen(log_path, "w");
	assert_non_null(f);
	fclose(f);
	bench_interrupted = 1;
	expect_error(vs_run(FAKE, &t, &res, err, sizeof err), 130, err, "interrupted before llama-bench was run");
	bench_interrupted = 0;
	size_t n = 1;
	free(test_read_file(log_path, &n));
	assert_int_equal(n, 0);
}

static void test_probe(void **state)
{
	(void)state;
	char err[512] = "";
	fake_env(NULL, NULL, NULL);
	assert_int_equal(vs_probe(FAKE, err, sizeof err), 0);
	char got[256];
	logged_args(got, sizeof got);
	assert_string_equal(got, "--help");
	fake_env("nohelp", NULL, NULL);
	expect_error(vs_probe(FAKE, err, sizeof err), EXIT_RUNTIME, err, FAKE " exited 1 (nothing on stderr)");
	fake_env(NULL, NULL, NULL);
	expect_error(vs_probe("/bin/true", err, sizeof err), EXIT_RUNTIME, err,
		     "/bin/true does not look like llama-bench");
	expect_error(vs_probe("tests/data/bench/no-such-llama-bench", err, sizeof err), EXIT_RUNTIME, err,
		     "No such file or directory");
}

/* Not a test: the real llama-bench, when the environment names one. */
static void test_real_llama_bench(void **state)
{
	(void)state;
	const char *bin = getenv("VS_REAL_LLAMA_BENCH"), *model = getenv("VS_REAL_MODEL");
	if (!bin || !model)
		skip();
	char err[512] = "";
	assert_int_equal(vs_probe(bin, err, sizeof err), 0);
	for (int k = 0; k < 3; k++) {
		struct vs_test t = base_test();
		t.model = model;
		if (getenv("VS_REAL_THREADS"))
			t.threads = atoi(getenv("VS_REAL_THREADS"));
		t.n_prompt = k != 1 ? 64 : 0;
		t.n_gen = k != 0 ? 16 : 0;
		t.reps = 2;
		int rc = vs_run(bin, &t, &res, err, sizeof err);
		if (rc)
			fail_msg("%s", err);
		printf("%s\n  -> n %d median %.3f avg %.3f sd %.3f  samples", res.argv_line, res.n, res.median_ts,
		       res.avg_ts, res.stddev_ts);
		for (int i = 0; i < res.n; i++)
			printf(" %.3f", res.ts[i]);
		printf("  (%s, build %s/%lld, %s)\n", res.model_type, res.build_commit, (long long)res.build_number,
		       res.cpu_info);
	}
}

#else /* !TERN_HAVE_JANSSON */

/* Built without jansson, --vs says so and runs nothing. */
static void test_no_jansson(void **state)
{
	(void)state;
	static struct vs_result r;
	struct vs_test t = {.model = "m.gguf", .n_gen = 4, .threads = 1, .n_batch = 1, .n_ubatch = 1,
			    .type_k = "f16", .type_v = "f16", .reps = 1};
	char err[512] = "";
	assert_int_equal(vs_probe(FAKE, err, sizeof err), EXIT_RUNTIME);
	assert_non_null(strstr(err, "built without jansson"));
	err[0] = 0;
	assert_int_equal(vs_run(FAKE, &t, &r, err, sizeof err), EXIT_RUNTIME);
	assert_non_null(strstr(err, "built without jansson"));
}

#endif

int main(void)
{
#ifndef TERN_HAVE_JANSSON
	const struct CMUnitTest tests[] = {cmocka_unit_test(test_no_jansson)};
	return cmocka_run_group_tests(tests, NULL, NULL);
#else
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_args),         cmocka_unit_test(test_real_outputs),
		cmocka_unit_test(test_median),       cmocka_unit_test(test_failures),
		cmocka_unit_test(test_interrupted),  cmocka_unit_test(test_probe), cmocka_unit_test(test_device_arg),
		cmocka_unit_test(test_real_llama_bench),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
#endif
}
