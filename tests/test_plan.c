/* test_plan.c - the memory planner (gpu/plan.h) on hand-made sizes whose
 * answers are worked out here by hand, the parsers of -ngl and
 * --gpu-mem-limit, and the device registry (gpu/device.h) on what every
 * machine has: the CPU, and the test device. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "gpu/registry.h"
#include "gpu/plan.h"
#include "lib/cpu/backend.h"
#include "quant/quant.h"

#define MiB ((uint64_t)1 << 20)
#define GiB ((uint64_t)1 << 30)

/* 4 layers of 100 MiB of weights and 10 MiB of cache, an output head of
 * 50 MiB, 20 MiB of activations */
static const uint64_t W4[4] = {100 * MiB, 100 * MiB, 100 * MiB, 100 * MiB};
static const uint64_t KV4[4] = {10 * MiB, 10 * MiB, 10 * MiB, 10 * MiB};

static struct tern_plan_req req4(uint64_t budget, int32_t ngl)
{
	return (struct tern_plan_req){.n_layer = 4, .weights = W4, .kv = KV4, .output = 50 * MiB,
				      .scratch = 20 * MiB, .budget = budget, .ngl = ngl};
}

static void test_margin(void **state)
{
	(void)state;
	assert_int_equal(tern_plan_margin(0), 0);
	assert_int_equal(tern_plan_margin(512 * MiB), 64 * MiB);
	assert_int_equal(tern_plan_margin(2 * GiB), 256 * MiB);
	assert_int_equal(tern_plan_margin(141 * GiB), 256 * MiB);
}

/* llama.cpp's placement: -ngl N puts layers n_layer - N .. n_layer - 1 on
 * the device, the output head from N = n_layer + 1 */
static void test_explicit(void **state)
{
	(void)state;
	struct tern_plan p;
	tern_err e = {0};
	assert_int_equal(tern_plan_make(&(struct tern_plan_req){0}, &p, &e), 0); /* no layers: nothing */
	struct tern_plan_req r = req4(16 * GiB, 0);
	assert_int_equal(tern_plan_make(&r, &p, &e), 0);
	assert_int_equal(p.ngl, 0);
	assert_int_equal(p.n_dev_layers, 0);
	assert_false(p.output);
	assert_int_equal(p.total, 0); /* no layer: no activations either */

	r.ngl = 1;
	assert_int_equal(tern_plan_make(&r, &p, &e), 0);
	assert_int_equal(p.n_dev_layers, 1);
	assert_false(p.output);
	assert_int_equal(p.weights, 100 * MiB);
	assert_int_equal(p.kv, 10 * MiB);
	assert_int_equal(p.total, 130 * MiB);

	r.ngl = 4;
	assert_int_equal(tern_plan_make(&r, &p, &e), 0);
	assert_int_equal(p.n_dev_layers, 4);
	assert_false(p.output);
	assert_int_equal(p.total, 460 * MiB);

	r.ngl = 5;
	assert_int_equal(tern_plan_make(&r, &p, &e), 0);
	assert_int_equal(p.n_dev_layers, 4);
	assert_true(p.output);
	assert_int_equal(p.output_bytes, 50 * MiB);
	assert_int_equal(p.total, 510 * MiB);

	/* all, and any count past it (llama.cpp users write 99 or 999) */
	for (int32_t ngl = TERN_NGL_ALL; ngl <= 999; ngl += ngl == TERN_NGL_ALL ? 1001 : 1) {
		r.ngl = ngl;
		assert_int_equal(tern_plan_make(&r, &p, &e), 0);
		assert_int_equal(p.ngl, 5);
		assert_true(p.output);
	}
	/* the layers placed are the last ones: a heavier first layer does not count at -ngl 3 */
	uint64_t w[4] = {900 * MiB, 100 * MiB, 100 * MiB, 100 * MiB};
	r.weights = w;
	r.ngl = 3;
	assert_int_equal(tern_plan_make(&r, &p, &e), 0);
	assert_int_equal(p.weights, 300 * MiB);
}

static void test_explicit_too_large(void **state)
{
	(void)state;
	struct tern_plan p;
	tern_err e = {0};
	/* 512 MiB less 64 MiB of margin: 448 usable; -ngl 5 takes 510 */
	struct tern_plan_req r = req4(512 * MiB, 5);
	assert_int_equal(tern_plan_make(&r, &p, &e), TERN_ENOMEM);
	assert_int_equal(p.total, 510 * MiB);
	assert_int_equal(p.usable, 448 * MiB);
	char want[64];
	snprintf(want, sizeof want, "needs %llu bytes", (unsigned long long)(510 * MiB));
	assert_non_null(strstr(e.msg, want));
	snprintf(want, sizeof want, "and %llu are available", (unsigned long long)(448 * MiB));
	assert_non_null(strstr(e.msg, want));
	/* -ngl 3 (350) fits */
	r.ngl = 3;
	assert_int_equal(tern_plan_make(&r, &p, &e), 0);
	assert_int_equal(p.total, 350 * MiB);
}

/* auto: the most layers within the usable budget */
static void test_auto(void **state)
{
	(void)state;
	struct tern_plan p;
	tern_err e = {0};
	static const struct {
		uint64_t budget;
		int32_t ngl;
	} t[] = {
		{16 * GiB, 5},  /* everything */
		{583 * MiB, 5}, /* 583 - 72.875 = 510.1: everything, just */
		{582 * MiB, 4}, /* 582 - 72.75 = 509.25: not the output head */
		{512 * MiB, 3}, /* 448: 3 layers (350), not 4 (460) */
		{148 * MiB, 0}, /* 148 - 18.5 = 129.5: not even one layer (130)... */
		{149 * MiB, 1}, /* ...149 - 18.625 = 130.4: one */
		{100 * MiB, 0},
		{0, 0},
	};
	for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
		struct tern_plan_req r = req4(t[i].budget, TERN_NGL_AUTO);
		assert_int_equal(tern_plan_make(&r, &p, &e), 0);
		if (p.ngl != t[i].ngl)
			fail_msg("budget %llu MiB: -ngl auto gave %d, want %d", (unsigned long long)(t[i].budget / MiB),
				 p.ngl, t[i].ngl);
		assert_true(p.total <= p.usable);
	}
}

/* the load after a refused one: what the budget asked again holds, at
 * least step layers fewer, never below 0 (the sizes of req4; the
 * budgets' usable parts as test_auto works them out) */
static void test_retry(void **state)
{
	(void)state;
	static const struct {
		uint64_t budget;
		int32_t failed, step, want;
	} t[] = {
		{16 * GiB, 5, 1, 4},  /* the budget still holds all: one fewer */
		{16 * GiB, 5, 2, 3},  /* the second failure: two fewer */
		{16 * GiB, 4, 8, 0},  /* past the bottom: the CPU */
		{16 * GiB, 1, 1, 0},
		{512 * MiB, 5, 1, 3}, /* another process took memory: 3 fit now, not 4 */
		{148 * MiB, 5, 1, 0}, /* nothing fits any more: straight to the CPU */
		{582 * MiB, 5, 1, 4}, /* both rules give 4 */
	};
	for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
		struct tern_plan_req r = req4(16 * GiB, TERN_NGL_ALL);
		struct tern_plan p = tern_plan_retry(&r, t[i].failed, t[i].budget, t[i].step);
		if (p.ngl != t[i].want)
			fail_msg("budget %llu MiB, -ngl %d refused, step %d: retry with %d, want %d",
				 (unsigned long long)(t[i].budget / MiB), t[i].failed, t[i].step, p.ngl, t[i].want);
		struct tern_plan q = tern_plan_for(&r, t[i].want);
		assert_int_equal(p.n_dev_layers, q.n_dev_layers);
		assert_int_equal(p.output, q.output);
		assert_int_equal(p.total, q.total);
		assert_int_equal(p.budget, t[i].budget); /* the plan says the budget it was made for */
	}
}

static void test_parse(void **state)
{
	(void)state;
	int32_t n = 0;
	assert_int_equal(tern_plan_parse_ngl("auto", &n), 0);
	assert_int_equal(n, TERN_NGL_AUTO);
	assert_int_equal(tern_plan_parse_ngl("all", &n), 0);
	assert_int_equal(n, TERN_NGL_ALL);
	assert_int_equal(tern_plan_parse_ngl("0", &n), 0);
	assert_int_equal(n, 0);
	assert_int_equal(tern_plan_parse_ngl("99", &n), 0);
	assert_int_equal(n, 99);
	static const char *const bad_ngl[] = {"", "-1", "x", "1x", "2147483648", "auto ", " 1"};
	for (size_t i = 0; i < sizeof bad_ngl / sizeof bad_ngl[0]; i++)
		assert_int_equal(tern_plan_parse_ngl(bad_ngl[i], &n), TERN_EINVAL);

	static const struct {
		const char *s;
		uint64_t v;
	} ok[] = {{"512M", 512 * MiB}, {"2G", 2 * GiB}, {"2g", 2 * GiB}, {"1.5GiB", 3 * GiB / 2}, {"4096", 4096},
		  {"64K", 65536}, {"100B", 100}, {"1T", GiB * 1024}, {"8MB", 8 * MiB}};
	for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
		uint64_t v = 0;
		assert_int_equal(tern_plan_parse_size(ok[i].s, &v), 0);
		assert_int_equal(v, ok[i].v);
	}
	static const char *const bad[] = {"", "0", "-1G", "G", "1X", "1GG", "1 G", "nan", "inf", "2000000000T", "0.5"};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		uint64_t v = 0;
		if (tern_plan_parse_size(bad[i], &v) != TERN_EINVAL)
			fail_msg("'%s' parsed as %llu", bad[i], (unsigned long long)v);
	}
}

/* ---- the registry ----------------------------------------------------------------- */

static void test_registry_cpu(void **state)
{
	(void)state;
	struct tern_device_info d[TERN_DEVICE_MAX];
	tern_err e = {0};
	struct tern_device_opts o = {.n_threads = 1, .max_tokens = 8};
	int n = tern_device_list(d, TERN_DEVICE_MAX, &o, &e);
	assert_true(n >= 1);
	assert_string_equal(d[0].name, "cpu");
	assert_true(tern_device_is_cpu(&d[0]));
	assert_true(d[0].mem_total > 0 && d[0].mem_budget > 0 && d[0].mem_budget <= d[0].mem_total);
	for (int i = 1; i < n; i++) /* the GPUs, when a GPU API is compiled in and finds any */
		assert_false(tern_device_is_cpu(&d[i]));
	/* the CPU first, then what the build found */
	const char *bk = tern_device_backends();
	assert_int_equal(strncmp(bk, "cpu", 3), 0);
	const bool vk = strstr(bk, " vulkan") != NULL, cuda = strstr(bk, " cuda") != NULL;
#ifdef TERN_HAVE_VULKAN
	assert_true(vk);
#else
	assert_false(vk);
#endif
#ifdef TERN_HAVE_CUDA
	assert_true(cuda);
#else
	assert_false(cuda);
#endif

	/* the budget: the device's, capped by --gpu-mem-limit */
	assert_int_equal(tern_device_budget(&d[0], 0), d[0].mem_budget);
	assert_int_equal(tern_device_budget(&d[0], 4096), 4096);
	assert_int_equal(tern_device_budget(&d[0], UINT64_MAX), d[0].mem_budget);

	/* cpu by name; auto is a GPU when there is one that is not software
	 * (lavapipe), else the CPU */
	struct tern_device_info f;
	assert_int_equal(tern_device_find("cpu", &o, &f, &e), 0);
	assert_string_equal(f.name, "cpu");
	bool hard = false;
	for (int i = 0; i < n; i++)
		hard = hard || (!tern_device_is_cpu(&d[i]) && !d[i].software);
	assert_int_equal(tern_device_find("auto", &o, &f, &e), 0);
	assert_true(hard ? !tern_device_is_cpu(&f) && !f.software : tern_device_is_cpu(&f));

	/* an absent device is an error that says what is there */
	assert_int_equal(tern_device_find("vulkan9", &o, &f, &e), TERN_ENOTFOUND);
	assert_non_null(strstr(e.msg, "vulkan9"));
	assert_non_null(strstr(e.msg, "present: cpu"));
	struct tern_backend *be = (struct tern_backend *)&f; /* anything not NULL */
	assert_int_equal(tern_backend_open("cuda0", &o, &be, &e), TERN_ENOTFOUND);
	assert_null(be);
	assert_int_equal(tern_backend_open("test0", &o, &be, &e), TERN_ENOTFOUND); /* not without test_mem */

	/* the CPU: the optimized backend, or the reference */
	assert_int_equal(tern_backend_open("cpu", &o, &be, &e), 0);
	assert_string_equal(be->name, "cpu");
	assert_int_equal(be->max_tokens, 8);
	tern_backend_free(be);
	o.reference = true;
	assert_int_equal(tern_backend_open("cpu", &o, &be, &e), 0);
	assert_true(be->caps & TERN_BACKEND_REFERENCE);
	tern_backend_free(be);
}

static void test_registry_test_device(void **state)
{
	(void)state;
	struct tern_device_opts o = {.n_threads = 1, .max_tokens = 4, .test_mem = 3 * GiB};
	struct tern_device_info d[TERN_DEVICE_MAX], f;
	tern_err e = {0};
	int n = tern_device_list(d, TERN_DEVICE_MAX, &o, &e);
	assert_string_equal(d[n - 1].name, "test0");
	assert_int_equal(d[n - 1].mem_budget, 3 * GiB);
	assert_false(tern_device_is_cpu(&d[n - 1]));
	assert_int_equal(tern_device_find("auto", &o, &f, &e), 0);
	assert_false(tern_device_is_cpu(&f));
	/* the cap on what the list returns, not on what it counts */
	assert_int_equal(tern_device_list(d, 1, &o, &e), n);

	/* its limit counts live bytes: 1000 floats fit 4096, a second 1000 do
	 * not, and once the first is freed they do */
	o.test_alloc_limit = 4096;
	struct tern_backend *be = NULL;
	assert_int_equal(tern_backend_open("test0", &o, &be, &e), 0);
	struct tern_buf a = {0}, b = {0};
	int64_t ne[1] = {1000};
	assert_int_equal(be->buf_alloc(be, &a, QT_F32, 1, ne, &e), 0);
	assert_ptr_equal(a.be, be);
	assert_int_equal(be->buf_alloc(be, &b, QT_F32, 1, ne, &e), TERN_ENOMEM);
	assert_non_null(strstr(e.msg, "4096"));
	be->buf_free(be, &a);
	assert_int_equal(be->buf_alloc(be, &b, QT_F32, 1, ne, &e), 0);
	be->buf_free(be, &b);
	tern_backend_free(be);
}

/* tern_backend_copy between two backends: the bytes arrive, the staging
 * is what carried them, and sizes that differ are refused */
static void test_copy(void **state)
{
	(void)state;
	struct tern_backend *x = NULL, *y = NULL;
	tern_err e = {0};
	struct cpu_backend_opts bo = {.n_threads = 1, .max_tokens = 4};
	assert_int_equal(cpu_backend_new(&x, &bo, &e), 0);
	assert_int_equal(cpu_ref_backend_new(&y, &bo, &e), 0);
	struct tern_buf a = {0}, b = {0}, c = {0};
	int64_t ne[2] = {8, 3}, ne2[2] = {8, 2};
	assert_int_equal(x->buf_alloc(x, &a, QT_F32, 2, ne, &e), 0);
	assert_int_equal(y->buf_alloc(y, &b, QT_F32, 2, ne, &e), 0);
	assert_int_equal(y->buf_alloc(y, &c, QT_F32, 2, ne2, &e), 0);
	float src[24], got[24], staging[24];
	for (int i = 0; i < 24; i++)
		src[i] = (float)i * 0.5f - 3.0f;
	x->upload(x, &a, 0, src, sizeof src);
	assert_int_equal(x->sync(x, &e), 0);
	memset(staging, 0, sizeof staging);
	assert_int_equal(tern_backend_copy(&a, &b, staging, &e), 0);
	assert_int_equal(y->sync(y, &e), 0);
	assert_memory_equal(staging, src, sizeof src);
	y->download(y, &b, 0, got, sizeof got);
	assert_int_equal(y->sync(y, &e), 0);
	assert_memory_equal(got, src, sizeof src);
	/* a view of the first 2 rows into c */
	struct tern_buf a2 = tern_buf_rows(&a, 1, 2);
	assert_int_equal(tern_backend_copy(&a2, &c, staging, &e), 0);
	y->download(y, &c, 0, got, 16 * sizeof(float));
	assert_int_equal(y->sync(y, &e), 0);
	assert_memory_equal(got, src + 8, 16 * sizeof(float));
	assert_int_equal(tern_backend_copy(&a, &c, staging, &e), TERN_EINVAL);
	x->buf_free(x, &a);
	y->buf_free(y, &b);
	y->buf_free(y, &c);
	tern_backend_free(x);
	tern_backend_free(y);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_margin),
		cmocka_unit_test(test_explicit),
		cmocka_unit_test(test_explicit_too_large),
		cmocka_unit_test(test_auto),
		cmocka_unit_test(test_retry),
		cmocka_unit_test(test_parse),
		cmocka_unit_test(test_registry_cpu),
		cmocka_unit_test(test_registry_test_device),
		cmocka_unit_test(test_copy),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
