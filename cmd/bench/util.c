/* util.c - what the modes of tern-bench share: time, memory, facts about
 * the machine, the progress line and warnings on stderr, the read-bandwidth
 * probe, and Ctrl-C. */
#include <errno.h>
#include <math.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "cmd/bench/bench.h"
#include "lib/cpu/threadpool.h"
#include "quant/quant.h"

volatile sig_atomic_t bench_interrupted;

static void on_sigint(int sig)
{
	(void)sig;
	/* a second Ctrl-C while the partial report is written kills at once */
	if (bench_interrupted)
		_exit(130);
	bench_interrupted = 1;
}

void bench_catch_sigint(void)
{
	struct sigaction sa = {0};
	sa.sa_handler = on_sigint;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
}

double bench_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int bench_cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

void *bench_xmalloc(size_t n)
{
	void *p = NULL;
	if (posix_memalign(&p, 64, n ? n : 1) != 0 || !p) {
		cli_error("out of memory (%zu bytes)", n);
		exit(EXIT_RUNTIME);
	}
	return p;
}

void bench_cpu_model(char *out, size_t cap)
{
	snprintf(out, cap, "unknown");
	FILE *f = fopen("/proc/cpuinfo", "r");
	if (!f)
		return;
	char line[256];
	while (fgets(line, sizeof line, f)) {
		if (strncmp(line, "model name", 10) && strncmp(line, "Model", 5) && strncmp(line, "Hardware", 8))
			continue;
		char *v = strchr(line, ':');
		if (!v)
			continue;
		v += strspn(v + 1, " \t") + 1;
		v[strcspn(v, "\n")] = 0;
		if (*v) {
			snprintf(out, cap, "%s", v);
			break;
		}
	}
	fclose(f);
}

/* the largest peak read so far: the kernel's counter catches up with
 * a peak only when memory is unmapped, so a reading taken before the
 * previous model was freed can exceed the counter read after it */
static uint64_t peak_seen;

/* VmHWM from /proc/self/status, in bytes; 0 where there is none */
static uint64_t vm_hwm(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	if (!f)
		return 0;
	char line[256];
	unsigned long long kb = 0;
	while (fgets(line, sizeof line, f))
		if (sscanf(line, "VmHWM: %llu kB", &kb) == 1)
			break;
	fclose(f);
	return (uint64_t)kb * 1024;
}

uint64_t bench_peak_rss(void)
{
	uint64_t v = vm_hwm();
	struct rusage ru;
	if (!v && getrusage(RUSAGE_SELF, &ru) == 0)
		v = (uint64_t)ru.ru_maxrss * 1024; /* kilobytes on Linux */
	if (v > peak_seen)
		peak_seen = v;
	return v;
}

uint64_t bench_peak_rss_run(void)
{
	(void)bench_peak_rss();
	return peak_seen;
}

void bench_peak_rss_reset(void)
{
	(void)bench_peak_rss();
#ifdef __GLIBC__
	malloc_trim(0); /* what the previous model freed goes back first */
#endif
	/* "5": reset the peak resident set (Linux 4.0 and later); where it
	 * cannot be written the peak stays the process's */
	FILE *f = fopen("/proc/self/clear_refs", "w");
	if (f) {
		fputs("5", f);
		fclose(f);
	}
}

void bench_date(char *out, size_t cap)
{
	time_t now = time(NULL);
	struct tm tm;
	gmtime_r(&now, &tm);
	strftime(out, cap, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

void bench_json_strz(const char *s) { cli_json_str(stdout, s, strlen(s)); }

void bench_fmt_count(char *out, size_t cap, uint64_t n)
{
	if (n >= 1000000000ull)
		snprintf(out, cap, "%.2f B", (double)n / 1e9);
	else if (n >= 1000000ull)
		snprintf(out, cap, "%.2f M", (double)n / 1e6);
	else
		snprintf(out, cap, "%.2f K", (double)n / 1e3);
}

/* ---- progress and warnings on stderr ---------------------------------------- */

void bench_progress_clear(struct bench_report *rp)
{
	if (rp->line_shown) {
		fputs("\r\033[K", stderr);
		fflush(stderr);
		rp->line_shown = false;
	}
}

void bench_test_start(struct bench_report *rp)
{
	double now = bench_now();
	if (!rp->done)
		rp->t_first = now;
	rp->t_cur = now;
}

/* One line, overwritten in place; kept under 80 columns so that it never
 * wraps (a wrapped line cannot be taken back with \r). The time left is
 * the finished tests' mean time for each test left, less what the one in
 * progress has taken (but not below the tests after it): it counts down
 * while a test runs, where the time so far over the tests done grew at
 * every run and probe of the test in progress. */
void bench_progress(struct bench_report *rp, const char *fmt, ...)
{
	if (!rp->progress)
		return;
	char msg[128];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	char left[32] = "";
	if (rp->done > 0 && rp->total > rp->done && rp->t_cur >= rp->t_first) {
		const double per = (rp->t_cur - rp->t_first) / rp->done;
		const int after = rp->total - rp->done - 1;
		const double rem = fmax(per * (after + 1) - (bench_now() - rp->t_cur), per * after);
		snprintf(left, sizeof left, ", ~%dm%02ds left", (int)rem / 60, (int)rem % 60);
	}
	fprintf(stderr, "\r\033[K%.60s%s", msg, left);
	fflush(stderr);
	rp->line_shown = true;
}

static void held_add(struct bench_report *rp, bool error, const char *msg)
{
	if (rp->n_held == rp->cap_held) {
		int cap = rp->cap_held ? 2 * rp->cap_held : 8;
		struct bench_held *h = realloc(rp->held, sizeof *h * (size_t)cap);
		if (!h) { /* said at once rather than lost */
			(error ? cli_error : cli_warn)("%s", msg);
			return;
		}
		rp->held = h;
		rp->cap_held = cap;
	}
	rp->held[rp->n_held].error = error;
	snprintf(rp->held[rp->n_held++].msg, sizeof rp->held[0].msg, "%s", msg);
}

void bench_warn(struct bench_report *rp, const char *fmt, ...)
{
	if (rp->quiet)
		return;
	bench_progress_clear(rp);
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	if (rp->hold)
		held_add(rp, false, msg);
	else
		cli_warn("%s", msg);
}

void bench_error(struct bench_report *rp, const char *fmt, ...)
{
	bench_progress_clear(rp);
	char msg[640];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	if (rp->hold)
		held_add(rp, true, msg);
	else
		cli_error("%s", msg);
}

void bench_flush(struct bench_report *rp)
{
	bench_progress_clear(rp);
	fflush(stdout);
	for (int i = 0; i < rp->n_held; i++)
		(rp->held[i].error ? cli_error : cli_warn)("%s", rp->held[i].msg);
	free(rp->held);
	rp->held = NULL;
	rp->n_held = rp->cap_held = 0;
	rp->hold = false;
}

/* ---- bandwidth probe -------------------------------------------------------
 * Measured the way the kernels are: calls that each read a 16 MiB slice
 * (split between the threads), stepping through a large buffer so that
 * nothing is served from the cache, timed per call; the median.
 *
 * Each thread reads its part as BW_STREAMS streams in step, a 64-byte line
 * of each in turn, as a mat-vec reads several weight rows at once: one
 * stream alone leaves a core's memory parallelism unused and reads about
 * half of what it can (on a Zen 3 core, 12 GB/s against 22 with four),
 * so that a q8_0 mat-vec read 119% of it. */

#define BW_STREAMS 4

struct bw_job {
	const uint64_t *buf;
	int64_t n; /* words */
	uint64_t sink[256];
};

static void bw_body(void *arg, int ith, int nth)
{
	struct bw_job *j = arg;
	/* whole lines per stream: a multiple of 8 words each */
	const int64_t per = (j->n / nth / BW_STREAMS) & ~(int64_t)7;
	const uint64_t *s[BW_STREAMS];
	for (int k = 0; k < BW_STREAMS; k++)
		s[k] = j->buf + (int64_t)ith * per * BW_STREAMS + k * per;
	uint64_t acc[BW_STREAMS] = {0};
	for (int64_t i = 0; i < per; i += 8)
		for (int k = 0; k < BW_STREAMS; k++) {
			const uint64_t *q = s[k] + i;
			acc[k] += (q[0] + q[1]) + (q[2] + q[3]) + (q[4] + q[5]) + (q[6] + q[7]);
		}
	uint64_t x = 0;
	for (int k = 0; k < BW_STREAMS; k++)
		x ^= acc[k];
	j->sink[ith & 255] = x;
}

double bench_bandwidth(struct tp_pool *p, const uint64_t *buf, int64_t n, double dur, double *times)
{
	const int64_t slice = (16 << 20) / 8;
	int64_t nslices = n / slice;
	int cnt = 0;
	struct bw_job j = {.buf = buf, .n = slice};
	/* the bytes read: the streams' whole lines */
	const int nth = tp_threads(p);
	const double bytes = (double)(((slice / nth / BW_STREAMS) & ~(int64_t)7) * BW_STREAMS * nth) * 8;
	tp_run(p, bw_body, &j); /* warm up: clocks, threads */
	double start = bench_now();
	for (int64_t k = 0; cnt < BENCH_MAX_CALLS && (cnt < 5 || bench_now() - start < dur); k++) {
		j.buf = buf + (k % nslices) * slice;
		double t0 = bench_now();
		tp_run(p, bw_body, &j);
		times[cnt++] = bench_now() - t0;
	}
	qsort(times, (size_t)cnt, sizeof *times, bench_cmp_double);
	return bytes / times[cnt / 2] / 1e9;
}

/* ---- list options ------------------------------------------------------------ */

int bench_int_list(const struct cli_list *l, const char *opt, int64_t min, int64_t max, int64_t *out, int cap)
{
	int n = 0;
	for (int i = 0; i < l->n; i++) {
		const char *p = l->v[i];
		for (;;) {
			char *end;
			errno = 0;
			long long v = strtoll(p, &end, 10);
			if (end == p || (*end && *end != ',') || errno || v < min || v > max)
				cli_usage_error("%s: '%s' is not a list of integers in %lld..%lld", opt, l->v[i],
						(long long)min, (long long)max);
			if (n == cap)
				cli_usage_error("%s: more than %d values", opt, cap);
			out[n++] = v;
			if (!*end)
				break;
			p = end + 1;
		}
	}
	return n;
}

int bench_str_list(const struct cli_list *l, const char *opt, const char **out, char *store, size_t store_cap,
		   int cap)
{
	int n = 0;
	size_t used = 0;
	for (int i = 0; i < l->n; i++) {
		for (const char *p = l->v[i];;) {
			size_t len = strcspn(p, ",");
			if (!len)
				cli_usage_error("%s: an empty value in '%s'", opt, l->v[i]);
			if (n == cap || used + len + 1 > store_cap)
				cli_usage_error("%s: too many values", opt);
			memcpy(store + used, p, len);
			store[used + len] = 0;
			out[n++] = store + used;
			used += len + 1;
			if (!p[len])
				break;
			p += len + 1;
		}
	}
	return n;
}

/* ---- sha256 (libmd) -------------------------------------------------------------- */

#ifdef TERN_HAVE_LIBMD
#include <sha2.h>
#endif

void bench_sha256_file(const char *path, char *hex, size_t cap)
{
	if (cap)
		hex[0] = 0;
#ifdef TERN_HAVE_LIBMD
	FILE *f = fopen(path, "rb");
	if (!f || cap < 65) {
		if (f)
			fclose(f);
		return;
	}
	SHA2_CTX ctx;
	SHA256Init(&ctx);
	static unsigned char buf[1 << 20];
	size_t n;
	while ((n = fread(buf, 1, sizeof buf, f)) > 0)
		SHA256Update(&ctx, buf, n);
	bool bad = ferror(f);
	fclose(f);
	if (bad)
		return;
	uint8_t d[32];
	SHA256Final(d, &ctx);
	for (int i = 0; i < 32; i++)
		snprintf(hex + 2 * i, 3, "%02x", d[i]);
#else
	(void)path;
#endif
}
