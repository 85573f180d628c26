/* fuzz_gguf.c - libFuzzer target for the GGUF reader: open any bytes in
 * strict and in lenient mode, then touch everything a caller may touch:
 * every key and value (arrays walked element by element, recursively, under
 * a budget), the typed getters for every key, every tensor's info and, where
 * the reader hands out a data view, its first and last byte. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "lib/format/gguf.h"

static volatile uint64_t sink;
static uint64_t acc;
static long budget; /* element visits left for this input */

#define CHECK(c) do { if (!(c)) __builtin_trap(); } while (0)

static bool in_file(const gguf_file *f, const void *p, uint64_t n)
{
	const uint8_t *b = gguf_base(f), *q = p;
	return q >= b && (uint64_t)(q - b) <= gguf_file_size(f) && n <= gguf_file_size(f) - (uint64_t)(q - b);
}

static void walk_value(const gguf_file *f, const struct gguf_value *v, int depth)
{
	CHECK(depth <= GGUF_MAX_DEPTH + 1);
	if (--budget < 0)
		return;
	switch (v->type) {
	case GGUF_T_STRING:
		CHECK(in_file(f, v->s.ptr, v->s.len));
		if (v->s.len)
			acc += (uint8_t)v->s.ptr[0] + (uint8_t)v->s.ptr[v->s.len - 1];
		return;
	case GGUF_T_ARRAY: {
		CHECK(v->elem < GGUF_T_COUNT);
		struct gguf_value el;
		CHECK(gguf_arr_elem(v, v->n, &el) != 0);
		for (uint64_t i = 0; i < v->n && budget > 0; i++) {
			/* the first few, then the last one */
			uint64_t k = i < 16 ? i : v->n - 1;
			CHECK(gguf_arr_elem(v, k, &el) == 0);
			CHECK(el.type == v->elem);
			walk_value(f, &el, depth + 1);
			if (k == v->n - 1)
				break;
		}
		return;
	}
	default:
		CHECK(v->type < GGUF_T_COUNT);
		CHECK(in_file(f, v->p, gguf_vtype_size(v->type)));
		{
			double d = gguf_value_f64(v);
			uint64_t bits;
			memcpy(&bits, &d, sizeof bits);
			acc += (uint64_t)gguf_value_i64(v) + gguf_value_u64(v) + bits + gguf_value_is_int(v);
		}
	}
}

static void getters(const gguf_file *f, const struct gguf_kv *kv)
{
	char key[256];
	if (kv->key.len >= sizeof key || memchr(kv->key.ptr, 0, kv->key.len))
		return;
	memcpy(key, kv->key.ptr, kv->key.len);
	key[kv->key.len] = 0;
	const struct gguf_kv *first = gguf_find(f, key);
	CHECK(first && first <= kv && tern_str_eq(first->key, key));
	tern_err e = {0};
	uint32_t u32;
	int64_t i64;
	uint64_t u64;
	float f32;
	bool b;
	struct tern_str s;
	const struct gguf_value *arr;
	int rc[7] = {
		gguf_get_u32(f, key, &u32, &e), gguf_get_i64(f, key, &i64, &e), gguf_get_u64(f, key, &u64, &e),
		gguf_get_f32(f, key, &f32, &e), gguf_get_bool(f, key, &b, &e),  gguf_get_str(f, key, &s, &e),
		gguf_get_arr(f, key, GGUF_T_COUNT, &arr, &e),
	};
	for (int i = 0; i < 7; i++)
		CHECK(rc[i] == 0 || rc[i] == TERN_ETYPE || rc[i] == TERN_ERANGE);
	if (rc[5] == 0)
		CHECK(in_file(f, s.ptr, s.len));
	if (first->v.type == GGUF_T_ARRAY && first->v.elem == GGUF_T_STRING && first->v.n) {
		uint64_t idx[2] = {0, first->v.n - 1};
		for (int i = 0; i < 2; i++) {
			struct tern_str t = gguf_kv_arr_str(first, idx[i]);
			CHECK(in_file(f, t.ptr, t.len));
			acc += t.len;
		}
	}
}

static void walk(const gguf_file *f)
{
	budget = 4096;
	acc += gguf_version(f) + gguf_alignment(f) + gguf_data_offset(f);
	for (uint64_t i = 0; i < gguf_n_kv(f); i++) {
		const struct gguf_kv *kv = gguf_kv_at(f, i);
		CHECK(kv && in_file(f, kv->key.ptr, kv->key.len));
		walk_value(f, &kv->v, 0);
		if (i < 256)
			getters(f, kv);
	}
	CHECK(gguf_kv_at(f, gguf_n_kv(f)) == NULL);
	for (uint64_t i = 0; i < gguf_n_tensors(f); i++) {
		const struct tern_tensor_view *t = gguf_tensor_at(f, i);
		CHECK(t && t->n_dims <= GGUF_MAX_DIMS && in_file(f, t->name.ptr, t->name.len));
		acc += tern_tensor_nelements(t);
		if (t->data) {
			CHECK(in_file(f, t->data, t->nbytes));
			CHECK((const uint8_t *)t->data == gguf_base(f) + gguf_data_offset(f) + t->offset);
			if (t->nbytes)
				acc += ((const uint8_t *)t->data)[0] + ((const uint8_t *)t->data)[t->nbytes - 1];
		}
		char name[256];
		if (i < 256 && t->name.len < sizeof name && !memchr(t->name.ptr, 0, t->name.len)) {
			memcpy(name, t->name.ptr, t->name.len);
			name[t->name.len] = 0;
			const struct tern_tensor_view *ft = gguf_find_tensor(f, name);
			CHECK(ft && tern_str_eq(ft->name, name));
		}
	}
	CHECK(gguf_tensor_at(f, gguf_n_tensors(f)) == NULL);
}

static void count_problem(void *ud, const char *msg)
{
	CHECK(msg && msg[0] && !strchr(msg, '\n'));
	++*(int *)ud;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	gguf_file *f = NULL;
	tern_err e = {0};
	int strict = gguf_open_mem(&f, data, size, NULL, &e);
	if (strict == 0) {
		walk(f);
		gguf_close(f);
	} else {
		CHECK(f == NULL && e.msg[0] && !strchr(e.msg, '\n'));
		CHECK(strict == TERN_EFORMAT || strict == TERN_EUNSUPPORTED || strict == TERN_ENOMEM);
	}

	int problems = 0;
	struct gguf_open_opts o = {true, count_problem, &problems};
	f = NULL;
	int lenient = gguf_open_mem(&f, data, size, &o, &e);
	if (lenient == 0) {
		/* strict succeeds exactly when lenient succeeds without problems */
		CHECK((strict == 0) == (problems == 0));
		walk(f);
		gguf_close(f);
	} else {
		CHECK(strict != 0);
	}
	sink = acc;
	return 0;
}
