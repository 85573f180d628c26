/* vs.c - tern-bench --vs PATH: runs the user's llama-bench on one of tern's
 * tests and reads its figures back.
 *
 * llama-bench is started directly (posix_spawnp, never through a shell)
 * with the environment as it is, so that it finds its shared libraries the
 * way it does when the user runs it. Its stdout (the JSON document) is read
 * whole, up to a limit; its stderr only for the message when it fails. Both
 * pipes are drained together: a child blocked on a full stderr pipe would
 * never finish its stdout. The test is given so that llama-bench's test
 * matrix holds exactly one test (-p 0 / -n 0 switch off its defaults), and
 * the one result of its JSON is checked against it field by field. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cmd/bench/bench.h"
#include "cmd/bench/vs.h"

#ifdef TERN_HAVE_JANSSON
#include <jansson.h>

extern char **environ;

enum {
	VS_OUT_MAX = 16 << 20,  /* llama-bench's JSON for one test is a few KiB */
	VS_ERR_TAIL = 8192,     /* the end of its stderr, for the last line */
	VS_ARGC_MAX = 40,
	VS_EXIT_INTERRUPTED = 130,
};

/* ---- the command line ---------------------------------------------------------- */

/* Appends s to buf (of cap, holding *len) quoted for a POSIX shell, for the
 * report: the user can paste the line to run llama-bench alone. */
static void append_quoted(char *buf, size_t cap, size_t *len, const char *s)
{
	bool plain = *s != 0;
	for (const char *p = s; *p; p++)
		if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-+.,/:@%", *p))
			plain = false;
	char tmp[2048];
	size_t n = 0;
	if (plain) {
		snprintf(tmp, sizeof tmp, "%s", s);
	} else {
		tmp[n++] = '\'';
		for (const char *p = s; *p && n + 5 < sizeof tmp; p++) {
			if (*p == '\'') {
				memcpy(tmp + n, "'\\''", 4);
				n += 4;
			} else {
				tmp[n++] = *p;
			}
		}
		tmp[n++] = '\'';
		tmp[n] = 0;
	}
	if (*len >= cap)
		return;
	int w = snprintf(buf + *len, cap - *len, "%s%s", *len ? " " : "", tmp);
	if (w < 0 || (size_t)w >= cap - *len) {
		/* too long for the report: mark the cut */
		if (cap >= 4)
			memcpy(buf + cap - 4, "...", 4);
		*len = cap;
		return;
	}
	*len += (size_t)w;
}

/* pp64, tg16, pp32+tg8, with " @ d64" for a depth: llama-bench's names. */
static void test_name(const struct vs_test *t, char *out, size_t cap)
{
	char d[32] = "";
	if (t->n_depth > 0)
		snprintf(d, sizeof d, " @ d%lld", (long long)t->n_depth);
	if (t->n_gen == 0)
		snprintf(out, cap, "pp%lld%s", (long long)t->n_prompt, d);
	else if (t->n_prompt == 0)
		snprintf(out, cap, "tg%lld%s", (long long)t->n_gen, d);
	else
		snprintf(out, cap, "pp%lld+tg%lld%s", (long long)t->n_prompt, (long long)t->n_gen, d);
}

/* The argument vector for a test: pointers to the test's strings and to
 * the numbers written out in num. */
struct vs_argv {
	const char *v[VS_ARGC_MAX + 1];
	int n;
	char num[16][48];
	int nnum;
};

static void arg_str(struct vs_argv *a, const char *s) { a->v[a->n++] = s; }

static void arg_int(struct vs_argv *a, const char *opt, int64_t v)
{
	char *s = a->num[a->nnum++];
	snprintf(s, sizeof a->num[0], "%lld", (long long)v);
	arg_str(a, opt);
	arg_str(a, s);
}

/* llama-bench's --help names -dev/--device (vs_probe): then the device is
 * passed, spelled as llama.cpp spells it */
static bool vs_has_device;

/* tern's device name as llama-bench's -dev: "none" for the CPU (no GPU
 * device: llama-bench refuses the CPU by name), "Vulkan0" / "CUDA0" for
 * vulkan0 / cuda0; NULL for a device llama.cpp has no name for (test0) */
static const char *llama_device(const char *d, char *buf, size_t cap)
{
	if (!strcmp(d, "cpu"))
		return "none";
	if (!strncmp(d, "vulkan", 6) && d[6])
		snprintf(buf, cap, "Vulkan%s", d + 6);
	else if (!strncmp(d, "cuda", 4) && d[4])
		snprintf(buf, cap, "CUDA%s", d + 4);
	else
		return NULL;
	return buf;
}

static int build_argv(const char *path, const struct vs_test *t, struct vs_argv *a, char *err, size_t cap)
{
	if (!t->model || !*t->model || !t->type_k || !t->type_v) {
		snprintf(err, cap, "--vs: no model or cache type for llama-bench");
		return EXIT_RUNTIME;
	}
	if (strchr(t->model, ',')) {
		/* llama-bench reads -m as a comma-separated list */
		snprintf(err, cap, "--vs: llama-bench splits -m at commas and cannot be given the model path %s",
			 t->model);
		return EXIT_RUNTIME;
	}
	if (t->n_prompt < 0 || t->n_gen < 0 || t->n_prompt + t->n_gen <= 0 || t->n_depth < 0) {
		snprintf(err, cap, "--vs: no test to run (n_prompt %lld, n_gen %lld)", (long long)t->n_prompt,
			 (long long)t->n_gen);
		return EXIT_RUNTIME;
	}
	if (t->reps < 1 || t->reps > VS_MAX_SAMPLES) {
		snprintf(err, cap, "--vs: %lld repetitions (1..%d)", (long long)t->reps, VS_MAX_SAMPLES);
		return EXIT_RUNTIME;
	}
	memset(a, 0, sizeof *a);
	arg_str(a, path);
	arg_str(a, "-m");
	arg_str(a, t->model);
	if (t->n_prompt > 0 && t->n_gen > 0) {
		/* -p and -n default to 512 and 128: zero them so that the pg test
		 * is the only one */
		arg_int(a, "-p", 0);
		arg_int(a, "-n", 0);
		char *s = a->num[a->nnum++];
		snprintf(s, sizeof a->num[0], "%lld,%lld", (long long)t->n_prompt, (long long)t->n_gen);
		arg_str(a, "-pg");
		arg_str(a, s);
	} else {
		arg_int(a, "-p", t->n_prompt);
		arg_int(a, "-n", t->n_gen);
	}
	/* only with a depth: a llama-bench older than -d still runs the rest */
	if (t->n_depth > 0)
		arg_int(a, "-d", t->n_depth);
	arg_int(a, "-t", t->threads);
	arg_int(a, "-b", t->n_batch);
	arg_int(a, "-ub", t->n_ubatch);
	arg_str(a, "-ctk");
	arg_str(a, t->type_k);
	arg_str(a, "-ctv");
	arg_str(a, t->type_v);
	arg_int(a, "-ngl", t->ngl);
	if (vs_has_device && t->device && *t->device) {
		char *s = a->num[a->nnum++];
		const char *d = llama_device(t->device, s, sizeof a->num[0]);
		if (d) {
			arg_str(a, "-dev");
			arg_str(a, d);
		}
	}
	arg_int(a, "-r", t->reps);
	if (t->no_warmup)
		arg_str(a, "--no-warmup");
	arg_str(a, "-o");
	arg_str(a, "json");
	a->v[a->n] = NULL;
	return 0;
}

/* ---- running it ---------------------------------------------------------------- */

struct vs_capture {
	char *out;              /* stdout, NUL-terminated */
	size_t n_out, cap_out;
	bool out_overflow;
	char err[VS_ERR_TAIL];  /* the last bytes of stderr */
	size_t n_err;
	int status;             /* as from waitpid */
};

static void keep_err_tail(struct vs_capture *c, const char *p, size_t n)
{
	if (n >= VS_ERR_TAIL) {
		memcpy(c->err, p + n - VS_ERR_TAIL, VS_ERR_TAIL);
		c->n_err = VS_ERR_TAIL;
		return;
	}
	if (c->n_err + n > VS_ERR_TAIL) {
		size_t drop = c->n_err + n - VS_ERR_TAIL;
		memmove(c->err, c->err + drop, c->n_err - drop);
		c->n_err -= drop;
	}
	memcpy(c->err + c->n_err, p, n);
	c->n_err += n;
}

/* Returns false (out of memory or past the limit) when the output cannot be kept. */
static bool keep_out(struct vs_capture *c, const char *p, size_t n, size_t limit)
{
	if (c->n_out + n > limit) {
		c->out_overflow = true;
		return false;
	}
	if (c->n_out + n + 1 > c->cap_out) {
		size_t cap = c->cap_out ? c->cap_out : 65536;
		while (cap < c->n_out + n + 1)
			cap *= 2;
		char *q = realloc(c->out, cap);
		if (!q)
			return false;
		c->out = q;
		c->cap_out = cap;
	}
	memcpy(c->out + c->n_out, p, n);
	c->n_out += n;
	c->out[c->n_out] = 0;
	return true;
}

/* The last non-empty line of stderr, control characters made visible as
 * '?', into out; "" when there is none. */
static void last_err_line(const struct vs_capture *c, char *out, size_t cap)
{
	size_t end = c->n_err;
	while (end > 0 && strchr(" \t\r\n", c->err[end - 1]))
		end--;
	size_t start = end;
	while (start > 0 && c->err[start - 1] != '\n')
		start--;
	while (start < end && strchr(" \t\r", c->err[start]))
		start++;
	size_t n = 0;
	for (size_t i = start; i < end && n + 1 < cap; i++) {
		unsigned char ch = (unsigned char)c->err[i];
		out[n++] = ch < 0x20 || ch == 0x7f ? '?' : (char)ch;
	}
	if (cap)
		out[n] = 0;
}

/* Spawns argv[0] with stdin from /dev/null and stdout/stderr into c, waits
 * for it. 0 when it ran (c->status), else an exit status and err. */
static int run_child(const char *const *argv, size_t out_limit, struct vs_capture *c, char *err, size_t cap)
{
	int po[2] = {-1, -1}, pe[2] = {-1, -1};
	if (pipe2(po, O_CLOEXEC) != 0 || pipe2(pe, O_CLOEXEC) != 0) {
		snprintf(err, cap, "--vs: pipe: %s", strerror(errno));
		for (int i = 0; i < 2; i++) {
			if (po[i] >= 0)
				close(po[i]);
			if (pe[i] >= 0)
				close(pe[i]);
		}
		return EXIT_RUNTIME;
	}
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_adddup2(&fa, po[1], 1);
	posix_spawn_file_actions_adddup2(&fa, pe[1], 2);
	pid_t pid;
	/* the child stays in our process group: Ctrl-C reaches it too */
	int rc = posix_spawnp(&pid, argv[0], &fa, NULL, (char *const *)argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	close(po[1]);
	close(pe[1]);
	if (rc != 0) {
		close(po[0]);
		close(pe[0]);
		snprintf(err, cap, "--vs: cannot run %s: %s", argv[0], strerror(rc));
		return EXIT_RUNTIME;
	}

	struct pollfd pfd[2] = {{.fd = po[0], .events = POLLIN}, {.fd = pe[0], .events = POLLIN}};
	bool killed = false, nomem = false;
	char buf[65536];
	while (pfd[0].fd >= 0 || pfd[1].fd >= 0) {
		if (!killed && (bench_interrupted || c->out_overflow || nomem)) {
			/* our child: stop it, whatever it was doing */
			kill(pid, SIGKILL);
			killed = true;
			break;
		}
		/* a timeout, so that bench_interrupted is seen even when the
		 * Ctrl-C reached only us */
		int r = poll(pfd, 2, 100);
		if (r < 0 && errno != EINTR)
			break;
		for (int i = 0; r > 0 && i < 2; i++) {
			if (pfd[i].fd < 0 || !(pfd[i].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			ssize_t n = read(pfd[i].fd, buf, sizeof buf);
			if (n < 0 && (errno == EINTR || errno == EAGAIN))
				continue;
			if (n <= 0) {
				close(pfd[i].fd);
				pfd[i].fd = -1;
				continue;
			}
			if (i == 1)
				keep_err_tail(c, buf, (size_t)n);
			else if (!keep_out(c, buf, (size_t)n, out_limit) && !c->out_overflow)
				nomem = true;
		}
	}
	for (int i = 0; i < 2; i++)
		if (pfd[i].fd >= 0)
			close(pfd[i].fd);
	while (waitpid(pid, &c->status, 0) < 0) {
		if (errno == EINTR && bench_interrupted && !killed) {
			kill(pid, SIGKILL);
			killed = true;
		} else if (errno != EINTR) {
			snprintf(err, cap, "--vs: waitpid: %s", strerror(errno));
			return EXIT_RUNTIME;
		}
	}
	if (bench_interrupted) {
		snprintf(err, cap, "--vs: interrupted while llama-bench was running");
		return VS_EXIT_INTERRUPTED;
	}
	if (c->out_overflow) {
		snprintf(err, cap, "--vs: %s wrote more than %zu MiB on stdout (stopped)", argv[0], out_limit >> 20);
		return EXIT_RUNTIME;
	}
	if (nomem) {
		snprintf(err, cap, "--vs: out of memory reading the output of %s", argv[0]);
		return EXIT_RUNTIME;
	}
	return 0;
}

/* A message for a child that did not exit 0; false when it did. */
static bool child_failed(const char *what, const struct vs_capture *c, char *err, size_t cap)
{
	char line[512];
	last_err_line(c, line, sizeof line);
	if (WIFEXITED(c->status) && WEXITSTATUS(c->status) == 0)
		return false;
	char how[96];
	if (WIFEXITED(c->status))
		snprintf(how, sizeof how, "exited %d", WEXITSTATUS(c->status));
	else if (WIFSIGNALED(c->status))
		snprintf(how, sizeof how, "was killed by signal %d (%s)", WTERMSIG(c->status),
			 strsignal(WTERMSIG(c->status)));
	else
		snprintf(how, sizeof how, "ended with status %#x", (unsigned)c->status);
	if (*line)
		snprintf(err, cap, "--vs: %s %s: %s", what, how, line);
	else
		snprintf(err, cap, "--vs: %s %s (nothing on stderr)", what, how);
	return true;
}

/* ---- its JSON ------------------------------------------------------------------ */

static void copy_str(json_t *o, const char *key, char *out, size_t cap)
{
	const char *s = json_string_value(json_object_get(o, key));
	snprintf(out, cap, "%s", s ? s : "");
}

static int64_t get_int_or(json_t *o, const char *key, int64_t dflt)
{
	json_t *v = json_object_get(o, key);
	return json_is_integer(v) ? (int64_t)json_integer_value(v) : dflt;
}

/* The result's own test, named as llama-bench names it, for messages. */
static void result_name(json_t *o, char *out, size_t cap)
{
	struct vs_test t = {
		.n_prompt = get_int_or(o, "n_prompt", -1),
		.n_gen = get_int_or(o, "n_gen", -1),
		.n_depth = get_int_or(o, "n_depth", 0),
	};
	test_name(&t, out, cap);
}

/* Does result o hold test t? When not, the first field that differs is
 * described in why. */
static bool result_matches(json_t *o, const struct vs_test *t, char *why, size_t cap)
{
	const struct {
		const char *key;
		int64_t want;
		bool optional; /* absent: 0 (an older llama-bench without -d) */
	} ints[] = {
		{"n_prompt", t->n_prompt, false}, {"n_gen", t->n_gen, false},     {"n_depth", t->n_depth, true},
		{"n_threads", t->threads, false}, {"n_batch", t->n_batch, false}, {"n_ubatch", t->n_ubatch, false},
		{"n_gpu_layers", t->ngl, false},
	};
	for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++) {
		json_t *v = json_object_get(o, ints[i].key);
		if (!v && ints[i].optional) {
			if (ints[i].want != 0) {
				snprintf(why, cap, "has no \"%s\" (expected %lld)", ints[i].key, (long long)ints[i].want);
				return false;
			}
			continue;
		}
		if (!json_is_integer(v)) {
			snprintf(why, cap, "has no integer \"%s\"", ints[i].key);
			return false;
		}
		if ((int64_t)json_integer_value(v) != ints[i].want) {
			snprintf(why, cap, "has %s %lld, expected %lld", ints[i].key, (long long)json_integer_value(v),
				 (long long)ints[i].want);
			return false;
		}
	}
	const struct {
		const char *key, *want;
	} strs[] = {{"type_k", t->type_k}, {"type_v", t->type_v}};
	for (size_t i = 0; i < 2; i++) {
		const char *s = json_string_value(json_object_get(o, strs[i].key));
		if (!s) {
			snprintf(why, cap, "has no string \"%s\"", strs[i].key);
			return false;
		}
		if (strcmp(s, strs[i].want) != 0) {
			snprintf(why, cap, "has %s %s, expected %s", strs[i].key, s, strs[i].want);
			return false;
		}
	}
	return true;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* The median of n values (the mean of the middle two when n is even). */
static double median_of(const double *v, int n)
{
	double s[VS_MAX_SAMPLES];
	memcpy(s, v, (size_t)n * sizeof *v);
	qsort(s, (size_t)n, sizeof *s, cmp_double);
	return n % 2 ? s[n / 2] : 0.5 * (s[n / 2 - 1] + s[n / 2]);
}

/* Fills r from llama-bench's JSON output (text, n bytes) for test t. */
static int parse_output(const char *text, size_t n, const struct vs_test *t, struct vs_result *r, char *err,
			size_t cap)
{
	char name[64];
	test_name(t, name, sizeof name);
	if (n == 0) {
		snprintf(err, cap, "--vs: llama-bench wrote nothing on stdout for %s", name);
		return EXIT_RUNTIME;
	}
	json_error_t je;
	json_t *root = json_loadb(text, n, 0, &je);
	if (!root) {
		snprintf(err, cap, "--vs: llama-bench's output is not JSON (line %d: %s)", je.line, je.text);
		return EXIT_RUNTIME;
	}
	int rc = EXIT_RUNTIME;
	if (!json_is_array(root)) {
		snprintf(err, cap, "--vs: llama-bench's JSON is not an array of results (-o json)");
		goto out;
	}
	size_t nres = json_array_size(root);
	if (nres != 1) {
		/* name them: a wrong parameter mapping shows up here */
		char list[256] = "";
		size_t len = 0;
		for (size_t i = 0; i < nres && i < 4 && len < sizeof list; i++) {
			char rn[64] = "?";
			if (json_is_object(json_array_get(root, i)))
				result_name(json_array_get(root, i), rn, sizeof rn);
			int w = snprintf(list + len, sizeof list - len, "%s%s", i ? ", " : " (", rn);
			len += w > 0 ? (size_t)w : 0;
		}
		if (nres > 4 && len < sizeof list)
			len += (size_t)snprintf(list + len, sizeof list - len, ", ...");
		if (nres > 0 && len < sizeof list)
			snprintf(list + len, sizeof list - len, ")");
		snprintf(err, cap, "--vs: llama-bench reported %zu results%s, expected one for %s", nres, list, name);
		goto out;
	}
	json_t *o = json_array_get(root, 0);
	if (!json_is_object(o)) {
		snprintf(err, cap, "--vs: llama-bench's result is not a JSON object");
		goto out;
	}
	char why[160];
	if (!result_matches(o, t, why, sizeof why)) {
		char rn[64];
		result_name(o, rn, sizeof rn);
		snprintf(err, cap, "--vs: llama-bench's result (%s) %s, for %s", rn, why, name);
		goto out;
	}
	json_t *samples = json_object_get(o, "samples_ts");
	if (!json_is_array(samples)) {
		snprintf(err, cap, "--vs: llama-bench's result has no \"samples_ts\" array");
		goto out;
	}
	size_t ns = json_array_size(samples);
	if (ns != (size_t)t->reps) {
		snprintf(err, cap, "--vs: llama-bench reported %zu samples, expected %lld (-r)", ns, (long long)t->reps);
		goto out;
	}
	for (size_t i = 0; i < ns; i++) {
		json_t *v = json_array_get(samples, i);
		double x = json_is_number(v) ? json_number_value(v) : NAN;
		if (!(x > 0) || !isfinite(x)) {
			snprintf(err, cap, "--vs: llama-bench's samples_ts[%zu] is not a positive number", i);
			goto out;
		}
		r->ts[i] = x;
	}
	r->n = (int)ns;
	json_t *avg = json_object_get(o, "avg_ts"), *sd = json_object_get(o, "stddev_ts");
	if (!json_is_number(avg) || !json_is_number(sd)) {
		snprintf(err, cap, "--vs: llama-bench's result has no number \"avg_ts\" or \"stddev_ts\"");
		goto out;
	}
	r->avg_ts = json_number_value(avg);
	r->stddev_ts = json_number_value(sd);
	r->median_ts = median_of(r->ts, r->n);
	copy_str(o, "build_commit", r->build_commit, sizeof r->build_commit);
	r->build_number = get_int_or(o, "build_number", 0);
	copy_str(o, "backends", r->backends, sizeof r->backends);
	copy_str(o, "cpu_info", r->cpu_info, sizeof r->cpu_info);
	copy_str(o, "model_type", r->model_type, sizeof r->model_type);
	int64_t sz = get_int_or(o, "model_size", 0), np = get_int_or(o, "model_n_params", 0);
	r->model_size = sz > 0 ? (uint64_t)sz : 0;
	r->model_n_params = np > 0 ? (uint64_t)np : 0;
	rc = 0;
out:
	json_decref(root);
	return rc;
}

/* ---- the interface --------------------------------------------------------------- */

int vs_probe(const char *path, char *err, size_t cap)
{
	const char *argv[] = {path, "--help", NULL};
	struct vs_capture c = {0};
	int rc = run_child(argv, 1 << 20, &c, err, cap);
	if (rc == 0 && child_failed(path, &c, err, cap))
		rc = EXIT_RUNTIME;
	if (rc == 0 && (!c.out || !strstr(c.out, "-pg") || !strstr(c.out, "--n-prompt"))) {
		snprintf(err, cap, "--vs: %s does not look like llama-bench (its --help does not name -pg and "
				   "--n-prompt)", path);
		rc = EXIT_RUNTIME;
	}
	vs_has_device = rc == 0 && strstr(c.out, "--device") != NULL;
	free(c.out);
	return rc;
}

int vs_run(const char *path, const struct vs_test *t, struct vs_result *r, char *err, size_t cap)
{
	memset(r, 0, sizeof *r);
	struct vs_argv a;
	int rc = build_argv(path, t, &a, err, cap);
	if (rc)
		return rc;
	size_t len = 0;
	for (int i = 0; i < a.n; i++)
		append_quoted(r->argv_line, sizeof r->argv_line, &len, a.v[i]);
	if (bench_interrupted) {
		snprintf(err, cap, "--vs: interrupted before llama-bench was run");
		return VS_EXIT_INTERRUPTED;
	}
	struct vs_capture c = {0};
	rc = run_child(a.v, VS_OUT_MAX, &c, err, cap);
	if (rc == 0 && child_failed("llama-bench", &c, err, cap))
		rc = EXIT_RUNTIME;
	if (rc == 0)
		rc = parse_output(c.out ? c.out : "", c.n_out, t, r, err, cap);
	free(c.out);
	return rc;
}

#else /* !TERN_HAVE_JANSSON */

static const char no_jansson[] =
	"--vs: tern-bench was built without jansson (libjansson-dev, installed by make deps), which it needs to "
	"read llama-bench's JSON";

int vs_probe(const char *path, char *err, size_t cap)
{
	(void)path;
	snprintf(err, cap, "%s", no_jansson);
	return EXIT_RUNTIME;
}

int vs_run(const char *path, const struct vs_test *t, struct vs_result *r, char *err, size_t cap)
{
	(void)path;
	(void)t;
	memset(r, 0, sizeof *r);
	snprintf(err, cap, "%s", no_jansson);
	return EXIT_RUNTIME;
}

#endif
