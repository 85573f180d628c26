/* test_cuda.c - the CUDA backend's host side (gpu/cuda/cu_backend.c) on
 * the emulated device (gpu/cuda/emu): decode steps captured into a graph
 * and replayed with new uploaded data, a changed step captured again,
 * graphs off, a sync inside a step, out-of-memory as an error, and the
 * bytes a step moves. The ops' numbers are test_backend_ops' business;
 * here the reference backend computes the same steps and the results
 * must agree step by step, so that a replay reading stale data (a
 * per-step value baked into the graph) fails. Built only where the
 * emulation is (not under ASan: tests/run.sh). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "gpu/cuda/cu_backend.h"
#include "lib/backend.h"
#include "lib/cpu/backend.h"

#define HD 64
#define NH 4

struct rig {
	struct tern_backend *be;
	struct tern_buf x, pos, y;
	int32_t *pos_host; /* host_alloc: pinned */
	float *out_host;
};

static void rig_open(struct rig *r, struct tern_backend *be)
{
	tern_err e = {0};
	memset(r, 0, sizeof *r);
	r->be = be;
	int64_t nx[3] = {HD, NH, 1}, np[1] = {1};
	assert_int_equal(be->buf_alloc(be, &r->x, QT_F32, 3, nx, &e), 0);
	assert_int_equal(be->buf_alloc(be, &r->y, QT_F32, 3, nx, &e), 0);
	assert_int_equal(be->buf_alloc(be, &r->pos, QT_I32, 1, np, &e), 0);
	assert_int_equal(be->host_alloc(be, sizeof(int32_t), (void **)&r->pos_host, &e), 0);
	assert_int_equal(be->host_alloc(be, sizeof(float) * HD * NH, (void **)&r->out_host, &e), 0);
}

static void rig_close(struct rig *r)
{
	r->be->host_free(r->be, r->pos_host);
	r->be->host_free(r->be, r->out_host);
	r->be->buf_free(r->be, &r->x);
	r->be->buf_free(r->be, &r->y);
	r->be->buf_free(r->be, &r->pos);
}

/* the step's input: fixed data, so only the position varies */
static const float *input(void)
{
	static float v[HD * NH];
	for (int i = 0; i < HD * NH; i++)
		v[i] = (float)((i * 37) % 101) / 50.0f - 1.0f;
	return v;
}

/* One decode-like step: the position uploaded from pinned memory, x
 * uploaded, rotated, normed into y, scaled; y downloaded. kind 1 adds an
 * op (another kind of step), kind 2 scales by another factor (the same
 * kernels with another argument). */
static void step(struct rig *r, int32_t p, int kind, float *out)
{
	struct tern_backend *be = r->be;
	const struct tern_rope rp = {.mode = TERN_ROPE_NEOX, .n_rot = HD, .freq_base = 10000, .freq_scale = 1};
	const struct tern_norm nm = {.kind = TERN_NORM_RMS, .eps = 1e-6f};
	*r->pos_host = p;
	be->begin_step(be);
	be->upload(be, &r->pos, 0, r->pos_host, sizeof *r->pos_host);
	be->upload(be, &r->x, 0, input(), sizeof(float) * HD * NH);
	be->rope(be, &r->x, &r->pos, NULL, &rp);
	be->norm(be, &r->x, NULL, NULL, NULL, &r->y, &nm);
	be->scale(be, &r->y, &r->y, kind == 2 ? 3.0f : 2.0f);
	if (kind == 1)
		be->unary(be, &r->y, &r->y, TERN_UNARY_SILU);
	be->download(be, &r->y, 0, r->out_host, sizeof(float) * HD * NH);
	be->end_step(be);
	tern_err e = {0};
	int rc = be->sync(be, &e);
	if (rc)
		fail_msg("%s: step at %d: %s", be->name, p, e.msg);
	memcpy(out, r->out_host, sizeof(float) * HD * NH);
}

static struct tern_backend *ref_backend(void)
{
	struct tern_backend *be = NULL;
	tern_err e = {0};
	struct cpu_backend_opts o = {.n_threads = 1, .max_tokens = 8};
	assert_int_equal(cpu_ref_backend_new(&be, &o, &e), 0);
	return be;
}

static struct tern_backend *emu_backend(bool graphs)
{
	struct tern_backend *be = NULL;
	tern_err e = {0};
	tern_cuemu_reset(0);
	struct cuda_backend_opts o = {.device = 0, .max_tokens = 8, .no_graphs = !graphs};
	if (cuemu_backend_new(&be, &o, &e))
		fail_msg("cuemu0: %s", e.msg);
	return be;
}

static void expect_close(const float *a, const float *b, int n, const char *what)
{
	for (int i = 0; i < n; i++)
		if (!(fabsf(a[i] - b[i]) <= 1e-5f * (1 + fabsf(b[i]))))
			fail_msg("%s: element %d: %g, reference %g", what, i, a[i], b[i]);
}

/* every position a new result; the first step captured, the rest replayed */
static void test_replay(void **state)
{
	(void)state;
	struct rig g, rf;
	rig_open(&g, emu_backend(true));
	rig_open(&rf, ref_backend());
	float a[HD * NH], b[HD * NH], prev[HD * NH];
	for (int s = 0; s < 6; s++) {
		int32_t p = 3 + 11 * s;
		step(&g, p, 0, a);
		step(&rf, p, 0, b);
		expect_close(a, b, HD * NH, "replayed step");
		if (s)
			assert_true(memcmp(a, prev, sizeof a) != 0); /* the position reached the replay */
		memcpy(prev, a, sizeof a);
	}
	struct cuda_stats st;
	cuemu_get_stats(g.be, &st);
	assert_true(st.graphs);
	assert_int_equal(st.steps, 6);
	assert_int_equal(st.captures, 1);
	assert_int_equal(st.replays, 5);
	assert_int_equal(st.step_launches, 3); /* rope, norm, scale: the copies are not kernels */
	rig_close(&g);
	rig_close(&rf);
	tern_backend_free(g.be);
	tern_backend_free(rf.be);
}

/* another kind of step is captured again; alternating kinds stay right */
static void test_recapture(void **state)
{
	(void)state;
	struct rig g, rf;
	rig_open(&g, emu_backend(true));
	rig_open(&rf, ref_backend());
	float a[HD * NH], b[HD * NH];
	static const int kinds[] = {0, 0, 1, 1, 1, 0, 2};
	for (int s = 0; s < 7; s++) {
		step(&g, 5 + s, kinds[s], a);
		step(&rf, 5 + s, kinds[s], b);
		expect_close(a, b, HD * NH, "step");
	}
	struct cuda_stats st;
	cuemu_get_stats(g.be, &st);
	assert_int_equal(st.captures, 4); /* the changes: at steps 0, 2, 5, 6 */
	assert_int_equal(st.replays, 3);
	/* another op count is a new graph; the same kernels with another
	 * argument (step 6) update the executable one in place */
	assert_int_equal(st.updates, 1);
	rig_close(&g);
	rig_close(&rf);
	tern_backend_free(g.be);
	tern_backend_free(rf.be);
}

/* graphs off: the same results, nothing captured */
static void test_no_graphs(void **state)
{
	(void)state;
	struct rig g, rf;
	rig_open(&g, emu_backend(false));
	rig_open(&rf, ref_backend());
	float a[HD * NH], b[HD * NH];
	for (int s = 0; s < 3; s++) {
		step(&g, 100 + s, s & 1, a);
		step(&rf, 100 + s, s & 1, b);
		expect_close(a, b, HD * NH, "plain step");
	}
	struct cuda_stats st;
	cuemu_get_stats(g.be, &st);
	assert_false(st.graphs);
	assert_int_equal(st.captures + st.replays, 0);
	rig_close(&g);
	rig_close(&rf);
	tern_backend_free(g.be);
	tern_backend_free(rf.be);
}

/* a sync inside a step runs what was recorded; the step is not kept */
static void test_sync_in_step(void **state)
{
	(void)state;
	struct rig g;
	rig_open(&g, emu_backend(true));
	struct tern_backend *be = g.be;
	tern_err e = {0};
	float out[HD * NH];
	be->begin_step(be);
	be->upload(be, &g.x, 0, input(), sizeof out);
	be->scale(be, &g.x, &g.y, 3.0f);
	be->download(be, &g.y, 0, out, sizeof out); /* not pinned: through staging */
	assert_int_equal(be->sync(be, &e), 0);
	for (int i = 0; i < HD * NH; i++)
		assert_true(out[i] == 3.0f * input()[i]);
	be->end_step(be); /* ends nothing: the sync did */
	struct cuda_stats st;
	cuemu_get_stats(be, &st);
	assert_int_equal(st.captures + st.replays, 0);
	rig_close(&g);
	tern_backend_free(be);
}

/* device memory runs out: an error naming the device and the size, and
 * the backend goes on */
static void test_oom(void **state)
{
	(void)state;
	struct tern_backend *be = NULL;
	tern_err e = {0};
	tern_cuemu_reset(256u << 20);
	struct cuda_backend_opts o = {.device = 0, .max_tokens = 8};
	assert_int_equal(cuemu_backend_new(&be, &o, &e), 0);
	struct tern_buf big, small;
	int64_t ne[2] = {1024, 1024 * 64}; /* 256 MiB of f32 */
	assert_int_equal(be->buf_alloc(be, &big, QT_F32, 2, ne, &e), TERN_ENOMEM);
	assert_non_null(strstr(e.msg, "cuemu0"));
	ne[1] = 16;
	assert_int_equal(be->buf_alloc(be, &small, QT_F32, 2, ne, &e), 0);
	be->buf_free(be, &small);
	struct tern_device_info d;
	assert_int_equal(cuemu_device_info(0, &d, &e), 0);
	assert_true(d.software);
	assert_true(d.mem_total == 256u << 20);
	tern_backend_free(be);
	tern_cuemu_reset((size_t)4 << 30);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_replay),
		cmocka_unit_test(test_recapture),
		cmocka_unit_test(test_no_graphs),
		cmocka_unit_test(test_sync_in_step),
		cmocka_unit_test(test_oom),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
