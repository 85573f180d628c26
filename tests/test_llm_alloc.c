/* test_llm_alloc.c - nothing is allocated in the decode loop (issue 9:
 * "No allocation in the decode loop (prove it in a test)").
 *
 * The binary is linked with -Wl,--wrap for malloc, calloc, realloc,
 * aligned_alloc, posix_memalign and free (Makefile: TEST_LDFLAGS_*), so
 * every call that libtern.a and this file make goes through the counters
 * below (calls made inside libc itself, e.g. by qsort or strdup, are not
 * seen: the library uses neither in the paths measured). Counting is
 * switched on after the first decoded token and off after N more steps:
 *   - tern_llm_decode, one token at a time, on the optimized backend with
 *     2 threads (the workers' calls are counted too: the counters are
 *     atomic) and each KV cache type;
 *   - tern_gen_run's per-token loop: from the first token callback to the
 *     return, with sampling, logprobs, a stop string and the text
 *     callback in play.
 * Under SANITIZE=1 the wrapped calls reach ASan's allocator through
 * __real_*, so the test runs there as well. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/cpu/backend.h"
#include "lib/llm/generate.h"
#include "lib/llm/llm.h"
#include "lib/llm/sample.h"
#include "quant/quant.h"
#include "tests/llm_synth.h"
#include "tokenizer/tok.h"

/* ---- the interposed allocator ------------------------------------------------ */

static atomic_bool counting;
static atomic_long n_calls;

void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t s);
void *__real_realloc(void *p, size_t n);
void *__real_aligned_alloc(size_t a, size_t n);
int __real_posix_memalign(void **p, size_t a, size_t n);
void __real_free(void *p);

static void count(void)
{
	if (atomic_load_explicit(&counting, memory_order_relaxed))
		atomic_fetch_add(&n_calls, 1);
}

void *__wrap_malloc(size_t n);
void *__wrap_malloc(size_t n)
{
	count();
	return __real_malloc(n);
}

void *__wrap_calloc(size_t n, size_t s);
void *__wrap_calloc(size_t n, size_t s)
{
	count();
	return __real_calloc(n, s);
}

void *__wrap_realloc(void *p, size_t n);
void *__wrap_realloc(void *p, size_t n)
{
	count();
	return __real_realloc(p, n);
}

void *__wrap_aligned_alloc(size_t a, size_t n);
void *__wrap_aligned_alloc(size_t a, size_t n)
{
	count();
	return __real_aligned_alloc(a, n);
}

int __wrap_posix_memalign(void **p, size_t a, size_t n);
int __wrap_posix_memalign(void **p, size_t a, size_t n)
{
	count();
	return __real_posix_memalign(p, a, n);
}

void __wrap_free(void *p);
void __wrap_free(void *p)
{
	count();
	__real_free(p);
}

static void start(void)
{
	atomic_store(&n_calls, 0);
	atomic_store(&counting, true);
}

static long stop(void)
{
	atomic_store(&counting, false);
	return atomic_load(&n_calls);
}

/* ---- the tests ------------------------------------------------------------------ */

#define N_STEPS 24

static const int32_t prompt_ids[12] = {1, 263, 104, 300, 72, 265, 119, 281, 259, 45, 318, 200};

/* The counter itself: calls in this file are seen (else the zeros below
 * would prove nothing); the library's are checked below (tern_llm_new). */
static void test_counter_works(void **state)
{
	(void)state;
	start();
	void *volatile p = malloc(16);
	free(p);
	void *q = NULL;
	assert_int_equal(posix_memalign(&q, 64, 64), 0);
	free(q);
	assert_int_equal(stop(), 4);
}

static void test_decode_no_alloc(void **state)
{
	(void)state;
	/* llama q4_0: its ffn_down (512 columns) takes the interleaved copy
	 * (lib/cpu/matmul.h) where the CPU has the kernel */
	static const char *const models[][2] = {{"llama", "q4_k"}, {"gemma3", "q8_0"}, {"qwen2", "f32"},
						{"deepseek2-yarn", "q8_0"}, {"deepseek2-v3", "f32"}, {"llama", "q4_0"}};
	static const uint32_t caches[] = {QT_F16, QT_F32, QT_Q8_0};
	for (size_t mi = 0; mi < sizeof models / sizeof models[0]; mi++) {
		struct tern_model *m = synth_open(models[mi][0], models[mi][1]);
		assert_non_null(m);
		struct tern_backend *be = NULL;
		tern_err e = {0};
		struct cpu_backend_opts bo = {.n_threads = 2, .max_tokens = 16};
		assert_int_equal(cpu_backend_new(&be, &bo, &e), 0);
		for (size_t c = 0; c < sizeof caches / sizeof caches[0]; c++) {
			struct tern_llm *l = NULL;
			struct tern_llm_opts o = tern_llm_opts_default();
			o.n_ctx = 64;
			o.n_ubatch = 16;
			o.type_k = o.type_v = caches[c];
			start();
			assert_int_equal(tern_llm_new(&l, m, be, &o, &e), 0);
			assert_true(stop() > 0); /* libtern.a's calls are counted too */
			/* the estimate callers check memory with: the cache exactly as made */
			uint64_t kv = 0, all = tern_llm_memory_estimate(&m->cfg, 64, 16, caches[c], caches[c], false, &kv);
			assert_int_equal(kv, tern_llm_kv_bytes(l));
			assert_true(all > kv);
			assert_int_equal(tern_llm_decode(l, prompt_ids, 12, &e), 0);
			int32_t t = 5;
			assert_int_equal(tern_llm_decode(l, &t, 1, &e), 0); /* the first decoded token */
			start();
			for (int s = 0; s < N_STEPS; s++) {
				const float *lg = tern_llm_logits(l, -1);
				t = lg[7] > lg[9] ? 7 : 9;
				if (tern_llm_decode(l, &t, 1, &e))
					break;
			}
			long calls = stop();
			/* a prompt again (rewound): the batched path allocates nothing either */
			tern_llm_rewind(l, 0);
			start();
			int rc = tern_llm_decode(l, prompt_ids, 12, &e);
			long calls_batch = stop();
			assert_int_equal(rc, 0);
			printf("%s-%s, %s cache: %ld allocator calls in %d decode steps, %ld in a 12-token prefill\n",
			       models[mi][0], models[mi][1], quant_type_name(caches[c]), calls, N_STEPS, calls_batch);
			assert_int_equal(tern_llm_n_past(l), 12);
			assert_int_equal(calls, 0);
			assert_int_equal(calls_batch, 0);
			tern_llm_free(l);
		}
		tern_backend_free(be);
		tern_model_free(m);
	}
}

struct cb_state {
	int n_tok;
	size_t n_text;
};

static void on_token(void *ud, const struct tern_gen_token *t)
{
	struct cb_state *s = ud;
	(void)t;
	if (s->n_tok++ == 0)
		start(); /* the first generated token: the per-token loop begins */
}

static int on_text(void *ud, const char *p, size_t n)
{
	struct cb_state *s = ud;
	(void)p;
	s->n_text += n;
	return 0;
}

static void test_gen_no_alloc(void **state)
{
	(void)state;
	struct tern_model *m = synth_open("qwen2", "q8_0");
	assert_non_null(m);
	tern_err e = {0};
	tok_vocab *v = NULL;
	assert_int_equal(tok_vocab_load(&v, tern_mf_gguf(m->mf), &e), 0);
	struct tern_backend *be = NULL;
	struct cpu_backend_opts bo = {.n_threads = 2, .max_tokens = 16};
	assert_int_equal(cpu_backend_new(&be, &bo, &e), 0);
	struct tern_llm *l = NULL;
	struct tern_llm_opts o = tern_llm_opts_default();
	o.n_ctx = 64;
	o.n_ubatch = 16;
	assert_int_equal(tern_llm_new(&l, m, be, &o, &e), 0);

	/* greedy and sampled (penalties, top-k/p, min-p: the whole chain) */
	for (int sampled = 0; sampled < 2; sampled++) {
		struct tern_sample_opts so = tern_sample_opts_default();
		if (sampled) {
			so.repeat_penalty = 1.1f;
			so.frequency_penalty = 0.2f;
			so.presence_penalty = 0.1f;
			so.seed = 9;
		} else {
			so.temp = 0;
		}
		struct tern_sampler *s = NULL;
		assert_int_equal(tern_sampler_new(&s, tern_llm_n_vocab(l), &so, &e), 0);
		const char *stops[] = {"never in this text", "zq"};
		struct tern_gen_opts go = {.n_predict = N_STEPS + 1, .ignore_eos = true, .n_logprobs = 5,
					   .stop = stops, .n_stop = 2};
		struct tern_gen *g = NULL;
		assert_int_equal(tern_gen_new(&g, l, v, s, &go, &e), 0);
		tern_llm_rewind(l, 0);
		struct cb_state cs = {0};
		struct tern_gen_cb cb = {.text = on_text, .token = on_token, .ud = &cs};
		struct tern_gen_stats st;
		int rc = tern_gen_run(g, prompt_ids, 12, &cb, &st, &e);
		long calls = stop();
		assert_int_equal(rc, 0);
		printf("tern_gen_run (%s): %ld allocator calls from the first token to the end of %d tokens (%zu bytes of text)\n",
		       sampled ? "sampled" : "greedy", calls, cs.n_tok, cs.n_text);
		assert_true(cs.n_tok >= N_STEPS);
		assert_int_equal(calls, 0);
		tern_gen_free(g);
		tern_sampler_free(s);
	}
	tern_llm_free(l);
	tern_backend_free(be);
	tok_vocab_free(v);
	tern_model_free(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_counter_works),
		cmocka_unit_test(test_decode_no_alloc),
		cmocka_unit_test(test_gen_no_alloc),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
