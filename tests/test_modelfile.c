/* test_modelfile.c - lib/format/modelfile: GGUF files written by our writer
 * and the shared legacy files through one view; the data-offset convention
 * checked against the readers' own views and the mapped bytes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "tests/testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/format/modelfile.h"
#include "quant/quant.h"

static char *data_path(const char *rel)
{
	static char p[4][512];
	static int k;
	k = (k + 1) % 4;
	snprintf(p[k], sizeof p[k], "%s/%s", test_data_dir(), rel);
	return p[k];
}

static tern_mf *open_written(gguf_writer *w, void **buf, const struct gguf_open_opts *oo)
{
	size_t size;
	tern_err e = {0};
	assert_int_equal(gguf_writer_write_mem(w, buf, &size, &e), 0);
	tern_mf *m = NULL;
	if (tern_mf_open_mem(&m, *buf, size, oo, &e))
		fail_msg("open failed: %s", e.msg);
	return m;
}

static void test_gguf_view(void **state)
{
	(void)state;
	gguf_writer *w = gguf_writer_new();
	gguf_writer_set_alignment(w, 64);
	gguf_writer_str(w, "general.architecture", "llama");
	const char *toks[] = {"<s>", "héllo", "x"};
	gguf_writer_arr_str(w, "tokenizer.ggml.tokens", toks, 3);
	float a[8] = {1, 2, 3, 4, 5, 6, 7, 8};
	uint64_t ne_a[1] = {8}, ne_b[2] = {4, 2};
	gguf_writer_tensor(w, "a", QT_F32, 1, ne_a, a);
	gguf_writer_tensor(w, "b", QT_F32, 2, ne_b, a);
	void *buf;
	tern_mf *m = open_written(w, &buf, NULL);
	const gguf_file *g = tern_mf_gguf(m);
	assert_non_null(g);
	assert_null(tern_mf_legacy(m));
	assert_int_equal(tern_mf_format(m), TERN_MF_GGUF);
	assert_string_equal(tern_mf_format_name(m), "gguf");
	assert_null(tern_mf_variant(m));
	assert_int_equal(tern_mf_version(m), 3);
	assert_int_equal(tern_mf_alignment(m), 64);
	assert_int_equal(tern_mf_n_kv(m), gguf_n_kv(g));
	assert_int_equal(tern_mf_data_offset(m), gguf_data_offset(g));
	assert_int_equal(tern_mf_data_offset(m) % 64, 0);

	const struct tern_mf_kv *kv = tern_mf_find(m, "tokenizer.ggml.tokens");
	assert_non_null(kv);
	assert_int_equal(kv->v.n, 3);
	struct tern_str s = tern_mf_arr_str(m, kv, 1);
	assert_int_equal(s.len, strlen("héllo"));
	assert_memory_equal(s.ptr, "héllo", s.len);
	assert_null(tern_mf_arr_str(m, kv, 3).ptr);
	assert_null(tern_mf_arr_str(m, tern_mf_find(m, "general.architecture"), 0).ptr);
	assert_null(tern_mf_find(m, "no.such.key"));

	assert_int_equal(tern_mf_n_tensors(m), 2);
	const struct tern_tensor_view *b = tern_mf_find_tensor(m, "b");
	assert_ptr_equal(b, tern_mf_tensor_at(m, 1));
	assert_null(tern_mf_find_tensor(m, "c"));
	assert_null(tern_mf_tensor_at(m, 2));
	/* the convention: data offset + offset is where the bytes are */
	for (uint64_t i = 0; i < 2; i++) {
		const struct tern_tensor_view *t = tern_mf_tensor_at(m, i);
		assert_ptr_equal(t->data, gguf_base(g) + tern_mf_data_offset(m) + t->offset);
		assert_memory_equal(t->data, a, 32);
	}
	assert_int_equal(b->offset, 64); /* a's 32 bytes, aligned to 64 */
	tern_mf_close(m);
	gguf_writer_free(w);
	free(buf);
}

/* A file without tensors has no data section: its offset is the file size,
 * never past the end (GGUF aligns the would-be data section up). */
static void test_no_tensors(void **state)
{
	(void)state;
	gguf_writer *w = gguf_writer_new();
	gguf_writer_str(w, "general.name", "abc"); /* leaves the header unaligned */
	void *buf;
	tern_mf *m = open_written(w, &buf, NULL);
	assert_int_equal(tern_mf_n_tensors(m), 0);
	assert_int_equal(tern_mf_data_offset(m), tern_mf_file_size(m));
	assert_true(gguf_data_offset(tern_mf_gguf(m)) > tern_mf_file_size(m));
	tern_mf_close(m);
	gguf_writer_free(w);
	free(buf);

	tern_err e = {0};
	assert_int_equal(tern_mf_open(&m, data_path("models/whisper-vocab-only-tiny.bin"), NULL, &e), 0);
	assert_int_equal(tern_mf_n_tensors(m), 0);
	assert_int_equal(tern_mf_data_offset(m), tern_mf_file_size(m));
	assert_int_equal(tern_mf_file_size(m), 575451);
	tern_mf_close(m);
}

static int n_problems;
static void count_problem(void *ud, const char *msg)
{
	(void)ud;
	(void)msg;
	n_problems++;
}

/* The GGUF options reach the reader: lenient mode lists a duplicate key
 * and opens; strict mode refuses. */
static void test_gguf_options(void **state)
{
	(void)state;
	gguf_writer *w = gguf_writer_new();
	gguf_writer_u32(w, "general.dup", 1);
	gguf_writer_u32(w, "general.dup", 2);
	void *buf;
	size_t size;
	tern_err e = {0};
	assert_int_equal(gguf_writer_write_mem(w, &buf, &size, &e), 0);
	tern_mf *m = NULL;
	assert_int_equal(tern_mf_open_mem(&m, buf, size, NULL, &e), TERN_EFORMAT);
	assert_null(m);
	assert_non_null(strstr(e.msg, "general.dup"));
	struct gguf_open_opts oo = {.lenient = true, .problem = count_problem};
	n_problems = 0;
	assert_int_equal(tern_mf_open_mem(&m, buf, size, &oo, &e), 0);
	assert_int_equal(n_problems, 1);
	/* the first occurrence wins */
	assert_int_equal(gguf_value_u64(&tern_mf_find(m, "general.dup")->v), 1);
	tern_mf_close(m);
	gguf_writer_free(w);
	free(buf);
}

static void test_silero(void **state)
{
	(void)state;
	tern_mf *m = NULL;
	tern_err e = {0};
	const char *path = data_path("models/silero-v6.2.0-ggml.bin");
	if (tern_mf_open(&m, path, NULL, &e))
		fail_msg("%s", e.msg);
	assert_int_equal(tern_mf_format(m), TERN_MF_GGML);
	assert_string_equal(tern_mf_format_name(m), "ggml");
	assert_string_equal(tern_mf_variant(m), "silero");
	assert_int_equal(tern_mf_version(m), 0);
	assert_int_equal(tern_mf_alignment(m), 0);
	const ggml_legacy *lg = tern_mf_legacy(m);
	assert_non_null(lg);
	assert_null(tern_mf_gguf(m));
	/* entries: model type, 22 hyperparameters (tests/data/legacy/silero-v6.2.0-ggml.ref) */
	assert_int_equal(tern_mf_n_kv(m), 23);
	const struct tern_mf_kv *kv = tern_mf_find(m, "silero.model_type");
	assert_non_null(kv);
	assert_int_equal(kv->v.type, GGUF_T_STRING);
	assert_int_equal(kv->v.s.len, 10);
	assert_memory_equal(kv->v.s.ptr, "silero-16k", 10);
	kv = tern_mf_find(m, "silero.encoder.3.out_channels");
	assert_non_null(kv);
	assert_int_equal(kv->v.type, GGUF_T_I32);
	assert_int_equal(gguf_value_i64(&kv->v), 128);
	assert_int_equal(gguf_value_i64(&tern_mf_find(m, "silero.n_window")->v), 512);

	/* 15 tensors; the data section starts at the first tensor record */
	assert_int_equal(tern_mf_n_tensors(m), 15);
	const struct tern_tensor_view *t0 = tern_mf_tensor_at(m, 0);
	assert_int_equal(tern_mf_data_offset(m), ggml_legacy_tensor_at(lg, 0)->info_offset);
	assert_int_equal(tern_mf_data_offset(m), 106);
	for (uint64_t i = 0; i < 15; i++) {
		const struct tern_tensor_view *t = tern_mf_tensor_at(m, i), *r = ggml_legacy_tensor_at(lg, i);
		/* the reader counts from the file start, the view from the data section */
		assert_int_equal(tern_mf_data_offset(m) + t->offset, r->offset);
		assert_ptr_equal(t->data, ggml_legacy_base(lg) + tern_mf_data_offset(m) + t->offset);
		assert_int_equal(t->nbytes, r->nbytes);
		assert_true(t->name.len == r->name.len && memcmp(t->name.ptr, r->name.ptr, t->name.len) == 0);
	}
	assert_true(t0->offset > 0 && t0->offset < 100); /* just past the first record's header */
	const struct tern_tensor_view *bias = tern_mf_find_tensor(m, "_model.decoder.decoder.2.bias");
	assert_non_null(bias);
	float v;
	memcpy(&v, bias->data, 4);
	assert_float_equal(v, -0.624597728f, 1e-9); /* the numpy reference reader's value */
	tern_mf_close(m);
}

static void test_whisper(void **state)
{
	(void)state;
	tern_mf *m = NULL;
	tern_err e = {0};
	if (tern_mf_open(&m, data_path("models/whisper-vocab-only-tiny.en.bin"), NULL, &e))
		fail_msg("%s", e.msg);
	assert_string_equal(tern_mf_variant(m), "whisper");
	/* 11 hyperparameters, the filter bank, the vocabulary */
	assert_int_equal(tern_mf_n_kv(m), 13);
	const struct tern_mf_kv *mel = tern_mf_find(m, "whisper.mel_filters");
	assert_non_null(mel);
	assert_int_equal(mel->v.elem, GGUF_T_F32);
	assert_int_equal(mel->v.n, 80 * 201);
	const struct tern_mf_kv *tok = tern_mf_find(m, "tokenizer.tokens");
	assert_non_null(tok);
	assert_int_equal(tok->v.n, 50257);
	struct tern_str first = tern_mf_arr_str(m, tok, 0), last = tern_mf_arr_str(m, tok, 50256);
	assert_true(first.len == 1 && first.ptr[0] == '!');
	assert_true(last.len == 13 && memcmp(last.ptr, "<|endoftext|>", 13) == 0);
	assert_null(tern_mf_arr_str(m, mel, 0).ptr);
	assert_int_equal(gguf_value_i64(&tern_mf_find(m, "whisper.n_vocab")->v), 51864);
	tern_mf_close(m);
}

/* The same bytes give the same view from a path and from memory. */
static void test_open_mem_matches(void **state)
{
	(void)state;
	const char *path = data_path("models/silero-v6.2.0-ggml.bin");
	size_t size;
	char *buf = test_read_file(path, &size);
	assert_non_null(buf);
	tern_mf *a = NULL, *b = NULL;
	tern_err e = {0};
	assert_int_equal(tern_mf_open(&a, path, NULL, &e), 0);
	assert_int_equal(tern_mf_open_mem(&b, buf, size, NULL, &e), 0);
	assert_int_equal(tern_mf_n_kv(a), tern_mf_n_kv(b));
	assert_int_equal(tern_mf_data_offset(a), tern_mf_data_offset(b));
	for (uint64_t i = 0; i < tern_mf_n_tensors(a); i++)
		assert_int_equal(tern_mf_tensor_at(a, i)->offset, tern_mf_tensor_at(b, i)->offset);
	tern_mf_close(a);
	tern_mf_close(b);
	free(buf);
}

/* Dropping the metadata's pages leaves every view readable (mapped back
 * from the file) and never touches a caller's buffer (on anonymous
 * memory MADV_DONTNEED would zero it). */
static void test_drop_metadata(void **state)
{
	(void)state;
	const char *path = data_path("vocab/ggml-vocab-baichuan.gguf");
	size_t size;
	char *buf = test_read_file(path, &size), *copy = malloc(size);
	assert_true(buf && copy);
	memcpy(copy, buf, size);
	tern_mf *a = NULL, *b = NULL;
	tern_err e = {0};
	assert_int_equal(tern_mf_open(&a, path, NULL, &e), 0);
	assert_int_equal(tern_mf_open_mem(&b, buf, size, NULL, &e), 0);
	assert_true(tern_mf_data_offset(a) > 65536); /* pages to drop */
	const struct gguf_kv *ka = gguf_find(tern_mf_gguf(a), "tokenizer.ggml.tokens");
	assert_non_null(ka);
	uint64_t n = ka->v.n;
	struct tern_str last = gguf_kv_arr_str(ka, n - 1);
	char want[64];
	assert_true(last.len < sizeof want);
	memcpy(want, last.ptr, last.len);
	tern_mf_drop_metadata(a);
	tern_mf_drop_metadata(b);
	last = gguf_kv_arr_str(gguf_find(tern_mf_gguf(a), "tokenizer.ggml.tokens"), n - 1);
	assert_memory_equal(last.ptr, want, last.len);
	assert_memory_equal(buf, copy, size);
	tern_mf_close(a);
	tern_mf_close(b);
	free(buf);
	free(copy);
}

static void test_probe_and_errors(void **state)
{
	(void)state;
	assert_int_equal(tern_mf_probe("lmgg....", 8), TERN_MF_GGML);
	assert_int_equal(tern_mf_probe("GGUF....", 8), TERN_MF_GGUF);
	assert_int_equal(tern_mf_probe("lm", 2), TERN_MF_GGUF); /* too short for the legacy magic */
	tern_mf *m = (tern_mf *)1;
	tern_err e = {0};
	assert_int_equal(tern_mf_open(&m, "/nonexistent/x.gguf", NULL, &e), TERN_EIO);
	assert_null(m);
	assert_non_null(strstr(e.msg, "cannot open"));
	assert_int_equal(tern_mf_open_mem(&m, "RIFF0000WAVE", 12, NULL, &e), TERN_EFORMAT);
	assert_non_null(strstr(e.msg, "not a GGUF file"));
	assert_int_equal(tern_mf_open_mem(&m, NULL, 0, NULL, &e), TERN_EFORMAT);
	/* a legacy file cut inside its header: the legacy reader's message */
	assert_int_equal(tern_mf_open_mem(&m, "lmgg\x05\x00", 6, NULL, &e), TERN_EFORMAT);
	assert_null(m);
	tern_mf_close(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_gguf_view),
		cmocka_unit_test(test_no_tensors),
		cmocka_unit_test(test_gguf_options),
		cmocka_unit_test(test_silero),
		cmocka_unit_test(test_whisper),
		cmocka_unit_test(test_open_mem_matches),
		cmocka_unit_test(test_drop_metadata),
		cmocka_unit_test(test_probe_and_errors),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
