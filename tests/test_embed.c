/* test_embed.c - sentence embeddings (lib/llm/embed.h) against llama.cpp.
 *
 *   tests/data/llm_ref/embed/{model}.json: llama.cpp's pooled embeddings
 *   (no normalisation) of the inputs of inputs.txt, for the file's pooling
 *   and overrides, on the synthetic models of scripts/gen_synth_llm.c
 *   (bert, nomic-bert; llama-mean and qwen3-last, decoders with a
 *   pooling_type), each in f32, q8_0, q4_0 and q4_k. Each input: tern's
 *   tokens are llama.cpp's, and the cosine of the two embeddings is at
 *   least the case's bound (struct ref_case), the median over the inputs
 *   at least a tighter one; under every SIMD variant this CPU runs
 *   (quant_cpu_force; scalar where there is none); the poolings of one
 *   model are far apart, so a wrong choice cannot pass;
 *
 *   the reference backend against the optimized one (the non-causal
 *   attention of the encoders included), a micro-batch smaller than the
 *   input (decoders pool across chunks), the normalisations of
 *   --embd-normalize, and the errors: no pooling in the file, rank, an
 *   empty or too long input, a context beyond bert's position table, a
 *   backend batch that cannot hold an encoder's input. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/cpu/backend.h"
#include "lib/llm/embed.h"
#include "quant/cpu.h"
#include "quant/quant.h"
#include "tests/llm_synth.h"
#include "tokenizer/tok.h"

#define REF_DIR "tests/data/llm_ref/embed"
/* The bounds, per file: the least cosine over the inputs (issue 14's bar
 * is 0.9999), and the median over the inputs, which tells whether tern
 * rounds as llama.cpp does. The quantized files' embeddings are computed
 * in ggml's order, the same bits under every SIMD variant (lib/llm/embed.c:
 * products, norms, RoPE and attention as ggml's AVX-512 build rounds
 * them), so they agree with llama.cpp's to a cosine of 1 within 5e-9 on
 * every input and pooling; the f32 files, whose products tern sums in its
 * own order, less closely. Measured on x86-64 under avx512 / avx2 /
 * scalar, least (least median):
 *   f32: bert 0.99999994 (0.99999998), nomic-bert 0.99999995 (0.99999997),
 *        llama-mean 0.99999991 (0.99999997), qwen3-last 0.99999988
 *        (0.99999994)
 *   q8_0, q4_0, q4_k, every model    1.00000000 (1.00000000)
 * Before the products, norms and attention were summed in ggml's order,
 * the least cosines were 0.99988 (qwen3-last q8_0 and q4_k) to 0.99998
 * and the medians 0.99993 to 0.99999: each file's least-cosine bound is
 * the 0.9999 (a product's input rounded to 8-bit levels turns a
 * one-ulp difference upstream into ~1e-4, so a tighter bound would hold
 * on this libm only), each median bound 0.9999999 sits between before
 * and after. */
struct ref_case {
	const char *arch, *type;
	double min_cos, min_median;
};
static const struct ref_case cases[] = {
	{"bert", "f32", 0.9999995, 0.9999999},       {"bert", "q8_0", 0.9999, 0.9999999},
	{"bert", "q4_0", 0.9999, 0.9999999},         {"bert", "q4_k", 0.9999, 0.9999999},
	{"nomic-bert", "f32", 0.9999995, 0.9999999}, {"nomic-bert", "q8_0", 0.9999, 0.9999999},
	{"nomic-bert", "q4_0", 0.9999, 0.9999999},   {"nomic-bert", "q4_k", 0.9999, 0.9999999},
	{"llama-mean", "f32", 0.9999995, 0.9999999}, {"llama-mean", "q8_0", 0.9999, 0.9999999},
	{"llama-mean", "q4_0", 0.9999, 0.9999999},   {"llama-mean", "q4_k", 0.9999, 0.9999999},
	{"qwen3-last", "f32", 0.9999995, 0.9999999}, {"qwen3-last", "q8_0", 0.9999, 0.9999999},
	{"qwen3-last", "q4_0", 0.9999, 0.9999999},   {"qwen3-last", "q4_k", 0.9999, 0.9999999},
};

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

struct loaded {
	tern_mf *mf;
	struct tern_embed *em;
	tok_vocab *v;
	struct tern_backend *be;
};

/* the backends an embedder runs on: the optimized CPU's (2 threads), the
 * reference, and the optimized CPU's without ggml's rounding (its
 * TERN_BACKEND_GGML_NUMERICS masked off, as a GPU backend lacks it) */
enum { BE_CPU, BE_REF, BE_PLAIN };

/* model ARCH-TYPE (written by the generator), its vocabulary, an embedder
 * with pooling on a backend of kind BE_* */
static int open_embed(struct loaded *L, const char *arch, const char *type, int pooling, int kind, int32_t n_ubatch,
		      tern_err *e)
{
	char path[512];
	*L = (struct loaded){0};
	if (!synth_path(arch, type, path, sizeof path))
		fail_msg("cannot write %s-%s", arch, type);
	int rc = tern_mf_open(&L->mf, path, NULL, e);
	rc = rc ? rc : tok_vocab_load(&L->v, tern_mf_gguf(L->mf), e);
	rc = rc ? rc : tern_embed_load(&L->em, L->mf, e);
	if (rc)
		return rc;
	struct tern_embed_opts o = tern_embed_opts_default();
	o.pooling = pooling;
	o.n_ubatch = n_ubatch;
	int64_t need = tern_embed_batch_needed(L->em, &o);
	struct cpu_backend_opts bo = {.n_threads = 2, .max_tokens = need > 0 ? need : 512};
	rc = kind == BE_REF ? cpu_ref_backend_new(&L->be, &bo, e) : cpu_backend_new(&L->be, &bo, e);
	if (!rc && kind == BE_PLAIN)
		L->be->caps &= ~(unsigned)TERN_BACKEND_GGML_NUMERICS;
	return rc ? rc : tern_embed_init(L->em, L->be, &o, e);
}

static void close_embed(struct loaded *L)
{
	tern_embed_free(L->em);
	tern_backend_free(L->be);
	tok_vocab_free(L->v);
	tern_mf_close(L->mf);
}

static json_t *load_ref(const char *model)
{
	char path[512];
	snprintf(path, sizeof path, REF_DIR "/%s.json", model);
	json_error_t je;
	json_t *j = json_load_file(path, 0, &je);
	if (!j)
		fail_msg("%s: %s", path, je.text);
	return j;
}

/* row i of a JSON array of arrays into out[n] */
static void ref_row(json_t *rows, size_t i, float *out, int32_t n)
{
	json_t *r = json_array_get(rows, i);
	assert_int_equal(json_array_size(r), n);
	for (int32_t k = 0; k < n; k++)
		out[k] = (float)json_number_value(json_array_get(r, (size_t)k));
}

/* tern's ids for input text must be llama.cpp's */
static int32_t tokens_of(const tok_vocab *v, json_t *input, int32_t *ids, size_t cap)
{
	const char *text = json_string_value(json_object_get(input, "text"));
	json_t *want = json_object_get(input, "ids");
	size_t n = 0;
	tern_err e = {0};
	if (tok_tokenize(v, text, strlen(text), true, true, ids, cap, &n, NULL, &e))
		fail_msg("%s", e.msg);
	assert_int_equal(n, json_array_size(want));
	for (size_t i = 0; i < n; i++)
		if (ids[i] != json_integer_value(json_array_get(want, i)))
			fail_msg("'%s': token %zu is %d, llama.cpp's %lld", text, i, ids[i],
				 (long long)json_integer_value(json_array_get(want, i)));
	return (int32_t)n;
}

/* Every input of model's JSON, every pooling recorded: tokens and cosine.
 * Returns the number of bounds missed, each printed. */
static int check_model(const struct ref_case *rc, const char *isa)
{
	int missed = 0;
	const char *arch = rc->arch, *type = rc->type;
	char model[96];
	snprintf(model, sizeof model, "%s-%s", arch, type);
	json_t *j = load_ref(model);
	json_t *inputs = json_object_get(j, "inputs"), *embs = json_object_get(j, "embeddings");
	int32_t d = (int32_t)json_integer_value(json_object_get(j, "n_embd"));
	const char *file_pool = json_string_value(json_object_get(embs, "file_pooling"));
	assert_non_null(file_pool);
	float *ref = malloc(sizeof(float) * (size_t)d), *got = malloc(sizeof(float) * (size_t)d);
	const char *key;
	json_t *rows;
	json_object_foreach(embs, key, rows) {
		if (!json_is_array(rows))
			continue;
		int pooling = strcmp(key, "file") == 0 ? TERN_POOLING_UNSPECIFIED : tern_pooling_by_name(key);
		struct loaded L;
		tern_err e = {0};
		if (open_embed(&L, arch, type, pooling, BE_CPU, 0, &e))
			fail_msg("%s: %s", model, e.msg);
		assert_int_equal(tern_embed_info(L.em)->n_embd, d);
		if (pooling == TERN_POOLING_UNSPECIFIED) /* the file's choice is llama.cpp's */
			assert_string_equal(tern_pooling_name(tern_embed_pooling(L.em)), file_pool);
		double worst = 1, cos[64];
		size_t n_in = json_array_size(inputs);
		assert_true(n_in >= 1 && n_in <= 64);
		for (size_t i = 0; i < n_in; i++) {
			int32_t ids[512];
			int32_t n = tokens_of(L.v, json_array_get(inputs, i), ids, 512);
			if (tern_embed_run(L.em, ids, n, got, &e))
				fail_msg("%s: %s", model, e.msg);
			ref_row(rows, i, ref, d);
			double c = tern_embed_cosine(got, ref, d), ng = 0, nr = 0;
			worst = c < worst ? c : worst;
			cos[i] = c;
			for (int32_t k = 0; k < d; k++) {
				ng += (double)got[k] * got[k];
				nr += (double)ref[k] * ref[k];
			}
			/* not normalised: the lengths agree too (the cosine cannot see a scale) */
			if (!(fabs(sqrt(ng / nr) - 1) < 0.01))
				fail_msg("%s pooling %s input %zu: length %.5g, llama.cpp's %.5g", model, key, i, sqrt(ng),
					 sqrt(nr));
			if (!(c >= rc->min_cos)) {
				printf("FAIL: %s pooling %s input %zu (%s): cosine %.8f < %.8g\n", model, key, i, isa, c,
				       rc->min_cos);
				missed++;
			}
		}
		qsort(cos, n_in, sizeof cos[0], cmp_double);
		double median = n_in % 2 ? cos[n_in / 2] : (cos[n_in / 2 - 1] + cos[n_in / 2]) / 2;
		printf("%-16s %-5s %-6s worst cosine %.8f, median %.8f over %zu inputs\n", model, key, isa, worst, median,
		       n_in);
		if (!(median >= rc->min_median)) {
			printf("FAIL: %s pooling %s (%s): median cosine %.8f < %.8g: not rounded as llama.cpp\n", model,
			       key, isa, median, rc->min_median);
			missed++;
		}
		close_embed(&L);
	}
	/* the recorded poolings are far apart: a wrong choice cannot pass */
	const char *k1, *k2;
	json_t *r1, *r2;
	json_object_foreach(embs, k1, r1) {
		json_object_foreach(embs, k2, r2) {
			if (!json_is_array(r1) || !json_is_array(r2) || strcmp(k1, k2) >= 0)
				continue;
			bool same = strcmp(k1, "file") == 0 ? strcmp(k2, file_pool) == 0
				  : strcmp(k2, "file") == 0 ? strcmp(k1, file_pool) == 0 : false;
			if (same)
				continue;
			ref_row(r1, 1, ref, d);
			ref_row(r2, 1, got, d);
			double c = tern_embed_cosine(ref, got, d);
			if (!(c < 0.99))
				fail_msg("%s: poolings %s and %s are too close (cosine %.5f) to tell apart", model, k1, k2, c);
		}
	}
	free(ref);
	free(got);
	json_decref(j);
	return missed;
}

/* the cases of arch under every SIMD variant this CPU runs (the scalar
 * code only where there is none: it is 3 times slower than both x86
 * variants together, and its numbers are in the table above), then the
 * automatic choice again; the bounds missed */
static int check_arch(const char *arch)
{
	static const char *const isas[] = {"avx512", "avx2", "neon", "scalar"};
	int missed = 0, ran = 0;
	for (size_t v = 0; v < sizeof isas / sizeof isas[0]; v++) {
		if ((ran && strcmp(isas[v], "scalar") == 0) || quant_cpu_force(isas[v]))
			continue;
		ran++;
		for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
			if (strcmp(cases[i].arch, arch) == 0)
				missed += check_model(&cases[i], isas[v]);
	}
	assert_int_equal(quant_cpu_force("auto"), 0);
	return missed;
}

static void check_archs(const char *const *archs, size_t n)
{
	int missed = 0;
	for (size_t i = 0; i < n; i++)
		missed += check_arch(archs[i]);
	if (missed)
		fail_msg("%d bounds missed (the FAIL lines above)", missed);
}

static void test_encoders(void **state)
{
	(void)state;
	static const char *const a[] = {"bert", "nomic-bert"};
	check_archs(a, 2);
}

static void test_decoders(void **state)
{
	(void)state;
	static const char *const a[] = {"llama-mean", "qwen3-last"};
	check_archs(a, 2);
}

/* the reference backend against the optimized one; a decoder in chunks of
 * 3 tokens against one pass */
static void test_backends(void **state)
{
	(void)state;
	static const char *const archs[] = {"bert", "nomic-bert", "llama-mean", "qwen3-last"};
	json_t *j = load_ref("bert-f32");
	json_t *inputs = json_object_get(j, "inputs");
	for (size_t a = 0; a < sizeof archs / sizeof archs[0]; a++) {
		struct loaded opt, ref, chunked;
		tern_err e = {0};
		if (open_embed(&opt, archs[a], "f32", TERN_POOLING_MEAN, BE_CPU, 0, &e) ||
		    open_embed(&ref, archs[a], "f32", TERN_POOLING_MEAN, BE_REF, 0, &e))
			fail_msg("%s: %s", archs[a], e.msg);
		bool dec = !tern_embed_info(opt.em)->encoder;
		if (dec && open_embed(&chunked, archs[a], "f32", TERN_POOLING_MEAN, BE_CPU, 3, &e))
			fail_msg("%s: %s", archs[a], e.msg);
		int32_t d = (int32_t)tern_embed_info(opt.em)->n_embd;
		float *x = malloc(sizeof(float) * (size_t)d), *y = malloc(sizeof(float) * (size_t)d);
		for (size_t i = 0; i < json_array_size(inputs); i++) {
			const char *text = json_string_value(json_object_get(json_array_get(inputs, i), "text"));
			int32_t ids[512];
			size_t n = 0;
			if (tok_tokenize(opt.v, text, strlen(text), true, true, ids, 512, &n, NULL, &e) ||
			    tern_embed_run(opt.em, ids, (int32_t)n, x, &e) || tern_embed_run(ref.em, ids, (int32_t)n, y, &e))
				fail_msg("%s: %s", archs[a], e.msg);
			double c = tern_embed_cosine(x, y, d);
			if (!(c > 0.99999))
				fail_msg("%s input %zu: optimized vs reference backend: cosine %.7f", archs[a], i, c);
			if (dec) {
				if (tern_embed_run(chunked.em, ids, (int32_t)n, y, &e))
					fail_msg("%s: %s", archs[a], e.msg);
				c = tern_embed_cosine(x, y, d);
				if (!(c > 0.99999))
					fail_msg("%s input %zu: chunks of 3 vs one pass: cosine %.7f", archs[a], i, c);
			}
		}
		free(x);
		free(y);
		close_embed(&opt);
		close_embed(&ref);
		if (dec)
			close_embed(&chunked);
	}
	json_decref(j);
}

/* A backend without ggml's rounding (TERN_BACKEND_GGML_NUMERICS masked off
 * the CPU's, as a GPU's lacks it) runs the plain f32 ops: no ggml request
 * reaches it (its sync would fail), the embeddings differ from the
 * default's (the roundings were chosen from the backend) and stay close
 * to them and to llama.cpp's. The bound: a quantized product moves an
 * input that differs by d across about d / step of its 8-bit levels (an
 * error of about sqrt(d * step), lib/llm/embed.c), so the f32 ops land
 * 1e-4 (mean pooling: bert-q4_k 0.99988) to 5e-4 (last-token pooling,
 * one row that no mean averages: qwen3-last-q4_k 0.99947) from the
 * ggml-rounded embeddings, which are within 1e-7 of llama.cpp's: 1e-3
 * bounds both distances, twice the worst measured; f32 files, whose
 * products round nothing to 8 bits, within 1e-5 (measured 1.2e-6). */
static void test_plain_numerics(void **state)
{
	(void)state;
	static const char *const archs[] = {"bert", "nomic-bert", "llama-mean", "qwen3-last"};
	static const char *const types[] = {"f32", "q8_0", "q4_k"};
	for (size_t a = 0; a < sizeof archs / sizeof archs[0]; a++)
		for (size_t t = 0; t < sizeof types / sizeof types[0]; t++) {
			char model[96];
			snprintf(model, sizeof model, "%s-%s", archs[a], types[t]);
			json_t *j = load_ref(model);
			json_t *inputs = json_object_get(j, "inputs");
			json_t *rows = json_object_get(json_object_get(j, "embeddings"), "file"); /* the file's pooling */
			assert_non_null(rows);
			struct loaded gg, plain;
			tern_err e = {0};
			if (open_embed(&gg, archs[a], types[t], TERN_POOLING_UNSPECIFIED, BE_CPU, 0, &e) ||
			    open_embed(&plain, archs[a], types[t], TERN_POOLING_UNSPECIFIED, BE_PLAIN, 0, &e))
				fail_msg("%s: %s", model, e.msg);
			int32_t d = (int32_t)tern_embed_info(gg.em)->n_embd;
			float *x = malloc(sizeof(float) * (size_t)d), *y = malloc(sizeof(float) * (size_t)d);
			float *ref = malloc(sizeof(float) * (size_t)d);
			const double bound = strcmp(types[t], "f32") == 0 ? 0.99999 : 0.999;
			double worst = 1, worst_ref = 1;
			bool differ = false;
			for (size_t i = 0; i < json_array_size(inputs); i++) {
				int32_t ids[512];
				int32_t n = tokens_of(gg.v, json_array_get(inputs, i), ids, 512);
				if (tern_embed_run(gg.em, ids, n, x, &e) || tern_embed_run(plain.em, ids, n, y, &e))
					fail_msg("%s input %zu: %s", model, i, e.msg);
				ref_row(rows, i, ref, d);
				differ = differ || memcmp(x, y, sizeof(float) * (size_t)d) != 0;
				double c = tern_embed_cosine(x, y, d), cr = tern_embed_cosine(y, ref, d);
				worst = c < worst ? c : worst;
				worst_ref = cr < worst_ref ? cr : worst_ref;
			}
			printf("%-16s plain f32 ops: worst cosine %.8f to the ggml rounding, %.8f to llama.cpp\n", model,
			       worst, worst_ref);
			if (!(worst >= bound && worst_ref >= bound))
				fail_msg("%s: plain f32 ops: cosine %.7f to the default, %.7f to llama.cpp (bound %.5f)",
					 model, worst, worst_ref, bound);
			assert_true(differ);
			free(x);
			free(y);
			free(ref);
			close_embed(&gg);
			close_embed(&plain);
			json_decref(j);
		}
}

/* --embd-normalize's modes, against their definitions */
static void test_normalize(void **state)
{
	(void)state;
	float v[5] = {3, -4, 0, 1, -2}, w[5];
	double l1 = 10, l2 = sqrt(30.0), l3 = cbrt(27 + 64 + 1 + 8.0);
	int modes[] = {-1, 0, 1, 2, 3};
	for (size_t m = 0; m < sizeof modes / sizeof modes[0]; m++) {
		memcpy(w, v, sizeof v);
		tern_embed_normalize(w, 5, modes[m]);
		double k = modes[m] == -1 ? 1 : modes[m] == 0 ? 32760.0 / 4 : modes[m] == 1 ? 1 / l1
			 : modes[m] == 2 ? 1 / l2 : 1 / l3;
		for (int i = 0; i < 5; i++)
			assert_float_equal(w[i], v[i] * k, 1e-5 * fabs(v[i] * k) + 1e-7);
	}
	float z[5] = {0};
	tern_embed_normalize(z, 5, 2);
	assert_true(z[0] == 0 && z[1] == 0 && z[4] == 0);
	assert_float_equal(tern_embed_cosine(v, v, 5), 1.0, 1e-12);
	assert_float_equal(tern_embed_cosine(v, z, 5), 0.0, 0);
	/* names */
	for (int p = TERN_POOLING_NONE; p <= TERN_POOLING_RANK; p++)
		assert_int_equal(tern_pooling_by_name(tern_pooling_name(p)), p);
	assert_int_equal(tern_pooling_by_name("max"), -2);
}

static void test_errors(void **state)
{
	(void)state;
	struct loaded L;
	tern_err e = {0};
	/* a decoder without pooling_type: an error that says so, unless chosen */
	assert_int_equal(open_embed(&L, "llama", "f32", TERN_POOLING_UNSPECIFIED, BE_CPU, 0, &e), TERN_EINVAL);
	assert_non_null(strstr(e.msg, "pooling"));
	close_embed(&L);
	assert_int_equal(open_embed(&L, "llama", "f32", TERN_POOLING_RANK, BE_CPU, 0, &e), TERN_EINVAL);
	close_embed(&L);
	assert_int_equal(open_embed(&L, "llama", "f32", TERN_POOLING_LAST, BE_CPU, 0, &e), 0);
	float out[256];
	int32_t ids[300] = {1, 5, 7};
	assert_int_equal(tern_embed_run(L.em, ids, 0, out, &e), TERN_EINVAL);
	assert_int_equal(tern_embed_run(L.em, ids, 257, out, &e), TERN_ERANGE); /* context 256 */
	ids[1] = 320;
	assert_int_equal(tern_embed_run(L.em, ids, 3, out, &e), TERN_EINVAL);
	close_embed(&L);

	/* bert: 128 positions; longer inputs and contexts are refused */
	assert_int_equal(open_embed(&L, "bert", "f32", TERN_POOLING_UNSPECIFIED, BE_CPU, 0, &e), 0);
	assert_int_equal(tern_embed_n_ctx(L.em), 128);
	for (int i = 0; i < 300; i++)
		ids[i] = 104 + i % 50;
	assert_int_equal(tern_embed_run(L.em, ids, 129, out, &e), TERN_ERANGE);
	assert_non_null(strstr(e.msg, "longer than the context of 128"));
	assert_int_equal(tern_embed_run(L.em, ids, 128, out, &e), 0);
	struct tern_embed_opts o = tern_embed_opts_default();
	o.n_ctx = 200;
	struct tern_embed *em2 = NULL;
	assert_int_equal(tern_embed_load(&em2, L.mf, &e), 0);
	assert_int_equal(tern_embed_init(em2, L.be, &o, &e), TERN_ERANGE);
	tern_embed_free(em2);
	/* a backend that takes fewer tokens than the context */
	struct tern_backend *small = NULL;
	struct cpu_backend_opts bo = {.n_threads = 1, .max_tokens = 16};
	assert_int_equal(cpu_backend_new(&small, &bo, &e), 0);
	assert_int_equal(tern_embed_load(&em2, L.mf, &e), 0);
	assert_int_equal(tern_embed_init(em2, small, NULL, &e), TERN_EINVAL);
	tern_embed_free(em2);
	tern_backend_free(small);
	close_embed(&L);
}

int main(void)
{
	(void)synth_open; /* llm_synth.h's, for the LLM tests */
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_normalize), cmocka_unit_test(test_encoders), cmocka_unit_test(test_decoders),
		cmocka_unit_test(test_backends),  cmocka_unit_test(test_plain_numerics), cmocka_unit_test(test_errors),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
