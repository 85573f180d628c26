/* test_offload.c - partial offload in lib/llm (llm.h: opts.dev,
 * n_dev_layers, dev_output) without a GPU: the "device" layers run on one
 * CPU backend instance, the host's on another, on the synthetic models of
 * every architecture family (tests/llm_synth.h), at every split llama.cpp's
 * -ngl makes of them (1 layer .. all layers and the output head).
 *
 *   two optimized backends: the logits must be bit-identical to one
 *   backend's, batched and token by token. Both instances run the same
 *   kernels in the same order on the same data, so the only thing that can
 *   differ is what the split adds: the crossing of the residual stream and
 *   the pending FFN output, each layer's weights and cache on its own
 *   backend, the positions on both, the tied output head loaded on the
 *   device. A row or a position lost at the boundary moves logits by far
 *   more than one bit;
 *
 *   the reference backend as the host, the optimized one as the device:
 *   within the bounds test_llm.c sets between the two backends
 *   (NMSE_PATHS_F32 / NMSE_PATHS_Q), against the optimized backend alone
 *   and against the reference alone;
 *
 *   a device that refuses an allocation half-way through the load
 *   (gpu/device.h's test device): TERN_ENOMEM, everything freed (ASan's
 *   leak check under SANITIZE=1), and the same host backend loads the
 *   model again with fewer layers.
 *
 * With TERN_TEST_DEVICE=vulkan0 (tests/run.sh, where the build has Vulkan)
 * the device is that GPU and the host the optimized CPU backend: half the
 * layers, then every layer and the output head, batched and token by token,
 * within the bounds between two backends (NMSE_PATHS_*) of the CPU alone,
 * and the same top-1 wherever the CPU's top-2 gap is clear. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(TERN_HAVE_CUEMU)
#include "gpu/cuda/cu_backend.h"
#endif
#include "gpu/registry.h"
#include "lib/cpu/backend.h"
#include "lib/format/gguf.h"
#include "lib/llm/llm.h"
#include "lib/llm/model.h"
#include "quant/quant.h"
#include "tests/llm_synth.h"
#include "tests/testutil.h"

#define N_POS 24
/* test_llm.c's bounds between the reference and the optimized backend */
#define NMSE_PATHS_F32 1e-7
#define NMSE_PATHS_Q 1.5e-3

static struct tern_backend *backend(bool ref)
{
	struct tern_backend *be = NULL;
	tern_err e = {0};
	struct cpu_backend_opts bo = {.n_threads = 2, .max_tokens = N_POS};
	if ((ref ? cpu_ref_backend_new : cpu_backend_new)(&be, &bo, &e))
		fail_msg("backend: %s", e.msg);
	return be;
}

/* The logits of every one of ids[N_POS] into out[N_POS][n_vocab], in
 * decode calls of `step` tokens, with the last n_dev layers (and the
 * output head when output) on dev (NULL: all on host). */
static struct tern_llm_opts offload(int32_t step, struct tern_backend *dev, int32_t n_dev, bool output)
{
	struct tern_llm_opts o = tern_llm_opts_default();
	o.n_ctx = 32;
	o.n_ubatch = step;
	o.logits_all = true;
	o.dev = dev;
	o.n_dev_layers = n_dev;
	o.dev_output = output;
	return o;
}

static void run(const struct tern_model *m, struct tern_backend *host, struct tern_backend *dev, int32_t n_dev,
		bool output, int32_t step, const int32_t *ids, float *out)
{
	struct tern_llm_opts o = offload(step, dev, n_dev, output);
	struct tern_llm *l = NULL;
	tern_err e = {0};
	if (tern_llm_new(&l, m, host, &o, &e))
		fail_msg("tern_llm_new (-ngl %d%s): %s", n_dev, output ? " + output" : "", e.msg);
	const int32_t nv = tern_llm_n_vocab(l);
	for (int32_t i = 0; i < N_POS; i += step) {
		if (tern_llm_decode(l, ids + i, step, &e))
			fail_msg("decode: %s", e.msg);
		for (int32_t j = 0; j < step; j++)
			memcpy(out + (size_t)(i + j) * nv, tern_llm_logits(l, j), sizeof(float) * (size_t)nv);
	}
	tern_llm_free(l);
}

/* every family of lib/llm: dense (llama with llama3's frequency factors,
 * qwen2 tied, qwen3 with QK norms, gemma3's sliding windows, gemma,
 * gemma2's soft-caps, phi2's parallel block and layer norm, phi3 and its
 * LongRoPE factors), the mixtures of experts, and multi-head latent
 * attention in its three layouts */
static const struct synth_case cases[] = {
	{"llama", "q8_0"},     {"llama-freqs", "f32"}, {"qwen2", "f32"},    {"qwen2", "q4_k"},
	{"qwen3", "q8_0"},     {"gemma3", "f32"},      {"gemma", "q4_0"},   {"gemma2", "q8_0"},
	{"phi2", "f32"},       {"phi3", "q8_0"},       {"phi3-long", "f32"}, {"mixtral", "q8_0"},
	{"qwen2moe", "f32"},   {"qwen3moe", "q4_k"},   {"gpt-oss", "mxfp4"}, {"deepseek2", "q8_0"},
	{"deepseek2-kvb", "f32"}, {"deepseek2-gate-up", "q8_0"}, {"deepseek2-moe", "f32"},
};

static void test_offload_synth(void **state)
{
	(void)state;
	struct tern_backend *opt = backend(false), *opt2 = backend(false), *ref = backend(true);
	int32_t ids[N_POS];
	for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
		struct tern_model *m = synth_open(cases[c].arch, cases[c].type);
		assert_non_null(m);
		const int32_t nv = (int32_t)m->cfg.n_vocab, nl = (int32_t)m->cfg.n_layer;
		const size_t nlog = (size_t)N_POS * nv;
		for (int32_t i = 0; i < N_POS; i++)
			ids[i] = (int32_t)((i * 37 + 11) % nv);
		float *one_b = malloc(sizeof(float) * nlog), *one_t = malloc(sizeof(float) * nlog);
		float *ref_b = malloc(sizeof(float) * nlog), *got = malloc(sizeof(float) * nlog);
		assert_true(one_b && one_t && ref_b && got);
		run(m, opt, NULL, 0, false, N_POS, ids, one_b);
		run(m, opt, NULL, 0, false, 1, ids, one_t);
		run(m, ref, NULL, 0, false, N_POS, ids, ref_b);
		const bool f32 = !strcmp(cases[c].type, "f32");
		const double bound = f32 ? NMSE_PATHS_F32 : NMSE_PATHS_Q;
		double worst = 0;
		/* llama.cpp's -ngl 1 .. n_layer + 1 (the last: the output head too) */
		for (int32_t ngl = 1; ngl <= nl + 1; ngl++) {
			int32_t n_dev = ngl < nl ? ngl : nl;
			bool output = ngl > nl;
			run(m, opt, opt2, n_dev, output, N_POS, ids, got);
			if (memcmp(got, one_b, sizeof(float) * nlog))
				fail_msg("%s-%s -ngl %d, batched: two optimized backends differ from one (NMSE %.2e)",
					 cases[c].arch, cases[c].type, ngl, nmse(got, one_b, nlog));
			run(m, opt, opt2, n_dev, output, 1, ids, got);
			if (memcmp(got, one_t, sizeof(float) * nlog))
				fail_msg("%s-%s -ngl %d, token by token: two optimized backends differ from one (NMSE %.2e)",
					 cases[c].arch, cases[c].type, ngl, nmse(got, one_t, nlog));
			run(m, ref, opt2, n_dev, output, N_POS, ids, got);
			double e_opt = nmse(got, one_b, nlog), e_ref = nmse(got, ref_b, nlog);
			if (e_opt >= bound || e_ref >= bound)
				fail_msg("%s-%s -ngl %d: reference host + optimized device: NMSE %.2e vs the optimized "
					 "backend, %.2e vs the reference (bound %.1e)",
					 cases[c].arch, cases[c].type, ngl, e_opt, e_ref, bound);
			worst = e_opt > worst ? e_opt : worst;
			worst = e_ref > worst ? e_ref : worst;
		}
		printf("%-17s %-5s %d layers: -ngl 1..%d bit-identical on two optimized backends (batched and token "
		       "by token); reference host + optimized device within %.1e of each alone\n",
		       cases[c].arch, cases[c].type, nl, nl + 1, worst);
		free(one_b);
		free(one_t);
		free(ref_b);
		free(got);
		tern_model_free(m);
	}
	tern_backend_free(opt);
	tern_backend_free(opt2);
	tern_backend_free(ref);
}

/* The test device refuses what would take it past its limit: the load
 * fails cleanly at every limit below what the full offload takes, and
 * one that fits loads and runs as the plain backend does. */
static void test_offload_alloc_failure(void **state)
{
	(void)state;
	struct tern_model *m = synth_open("gemma3", "q8_0");
	assert_non_null(m);
	const int32_t nl = (int32_t)m->cfg.n_layer, nv = (int32_t)m->cfg.n_vocab;
	struct tern_backend *host = backend(false);
	int32_t ids[N_POS];
	for (int32_t i = 0; i < N_POS; i++)
		ids[i] = (int32_t)((i * 37 + 11) % nv);
	float *want = malloc(sizeof(float) * (size_t)N_POS * nv), *got = malloc(sizeof(float) * (size_t)N_POS * nv);
	assert_true(want && got);
	run(m, host, NULL, 0, false, N_POS, ids, want);

	uint64_t w[64], kv[64], out = 0, scratch = 0;
	assert_true(nl <= 64);
	struct tern_llm_opts so = offload(N_POS, NULL, 0, false);
	tern_err e = {0};
	assert_int_equal(tern_llm_offload_sizes(m, &so, N_POS, w, kv, &out, &scratch, &e), 0);
	/* the weights the planner counts are the file's tensors: each
	 * layer's are the "blk.N." ones, the output head's output.weight and
	 * output_norm.weight (this model is untied) */
	const gguf_file *gf = tern_mf_gguf(m->mf);
	uint64_t want_w[64] = {0}, want_out = 0;
	for (uint64_t i = 0; i < gguf_n_tensors(gf); i++) {
		const struct tern_tensor_view *t = gguf_tensor_at(gf, i);
		char name[96];
		snprintf(name, sizeof name, "%.*s", (int)t->name.len, t->name.ptr);
		int il = -1;
		if (sscanf(name, "blk.%d.", &il) == 1 && il >= 0 && il < nl)
			want_w[il] += t->nbytes;
		else if (!strcmp(name, "output.weight") || !strcmp(name, "output_norm.weight"))
			want_out += t->nbytes;
	}
	uint64_t all = out + scratch;
	for (int32_t il = 0; il < nl; il++) {
		assert_int_equal(w[il], want_w[il]);
		/* f16 K and V rows of head_dim for each KV head, 32 positions */
		assert_int_equal(kv[il], 2ull * 2 * m->cfg.head_dim * m->cfg.layer[il].n_head_kv * 32);
		all += w[il] + kv[il];
	}
	assert_int_equal(out, want_out);
	assert_true(scratch > 0);
	/* a limit of 1/4 of everything cannot hold the full offload */
	struct tern_device_opts dopt = {.n_threads = 1, .max_tokens = N_POS, .test_mem = (uint64_t)1 << 30,
					.test_alloc_limit = all / 4};
	struct tern_backend *dev = NULL;
	if (tern_backend_open("test0", &dopt, &dev, &e))
		fail_msg("test0: %s", e.msg);
	struct tern_llm_opts o = offload(N_POS, dev, nl, true);
	struct tern_llm *l = NULL;
	assert_int_equal(tern_llm_new(&l, m, host, &o, &e), TERN_ENOMEM);
	assert_null(l);
	assert_non_null(strstr(e.msg, "test0"));
	/* the same device, now empty again, takes one layer */
	run(m, host, dev, 1, false, N_POS, ids, got);
	assert_memory_equal(got, want, sizeof(float) * (size_t)N_POS * nv);
	tern_backend_free(dev);
	tern_backend_free(host);
	free(want);
	free(got);
	tern_model_free(m);
}

#ifdef TERN_HAVE_CUEMU
/* "cuemu0": the CUDA backend over its CPU emulation, a device of the
 * registry through its test hook */
static int cuemu_open(const struct tern_device_opts *o, struct tern_backend **be, tern_err *e)
{
	struct cuda_backend_opts co = {.device = 0, .max_tokens = o->max_tokens, .no_graphs = o->no_graphs};
	return cuemu_backend_new(be, &co, e);
}
static const struct tern_device_extra cuemu_dev = {"cuemu0", cuemu_device_info, cuemu_open};
#endif

/* the GPU of TERN_TEST_DEVICE as the device, the optimized CPU as the host */
static void test_offload_device(void **state)
{
	(void)state;
	const char *name = getenv("TERN_TEST_DEVICE");
	struct tern_backend *cpu = backend(false), *gpu = NULL;
	tern_err e = {0};
	struct tern_device_opts bo = {.n_threads = 2, .max_tokens = N_POS, .validation = true};
#ifdef TERN_HAVE_CUEMU
	bo.extra = &cuemu_dev;
#endif
	if (tern_backend_open(name, &bo, &gpu, &e))
		fail_msg("%s: %s", name, e.msg);
	int32_t ids[N_POS];
	for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
		struct tern_model *m = synth_open(cases[c].arch, cases[c].type);
		assert_non_null(m);
		const int32_t nv = (int32_t)m->cfg.n_vocab, nl = (int32_t)m->cfg.n_layer;
		const size_t nlog = (size_t)N_POS * nv;
		for (int32_t i = 0; i < N_POS; i++)
			ids[i] = (int32_t)((i * 37 + 11) % nv);
		float *one = malloc(sizeof(float) * nlog), *got = malloc(sizeof(float) * nlog);
		assert_true(one && got);
		run(m, cpu, NULL, 0, false, N_POS, ids, one);
		const bool f32 = !strcmp(cases[c].type, "f32");
		const double bound = f32 ? NMSE_PATHS_F32 : NMSE_PATHS_Q, margin = f32 ? 0.05 : 0.5;
		double worst = 0;
		for (int k = 0; k < 3; k++) {
			/* half the layers batched; all and the output head, batched and token by token */
			int32_t n_dev = k == 0 ? nl / 2 : nl, step = k == 2 ? 1 : N_POS;
			run(m, cpu, gpu, n_dev, k > 0, step, ids, got);
			double err = nmse(got, one, nlog);
			if (!(err < bound))
				fail_msg("%s-%s, %d of %d layers on %s%s: NMSE %.2e vs the CPU (bound %.1e)", cases[c].arch,
					 cases[c].type, n_dev, nl, name, step == 1 ? ", token by token" : "", err, bound);
			for (int32_t i = 0; i < N_POS; i++) {
				const float *a = one + (size_t)i * nv, *b = got + (size_t)i * nv;
				if (test_top2_gap(a, nv) >= margin && test_argmax(a, nv) != test_argmax(b, nv))
					fail_msg("%s-%s, %d layers on %s: position %d's top-1 differs where the CPU's gap is %.3f",
						 cases[c].arch, cases[c].type, n_dev, name, i, test_top2_gap(a, nv));
			}
			worst = err > worst ? err : worst;
		}
		printf("%-17s %-5s %d layers: half, all + output (batched, token by token) on %s: NMSE <= %.1e vs the "
		       "CPU\n",
		       cases[c].arch, cases[c].type, nl, name, worst);
		free(one);
		free(got);
		tern_model_free(m);
	}
	tern_backend_free(gpu);
	tern_backend_free(cpu);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_offload_synth),
		cmocka_unit_test(test_offload_alloc_failure),
	};
	const struct CMUnitTest device_tests[] = {cmocka_unit_test(test_offload_device)};
	const char *dev = getenv("TERN_TEST_DEVICE");
	if (dev && *dev)
		return cmocka_run_group_tests_name(dev, device_tests, NULL, NULL);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
