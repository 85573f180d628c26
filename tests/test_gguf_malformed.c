/* test_gguf_malformed.c - a corpus of malformed and odd-but-valid GGUF files,
 * built byte by byte (tests/robust_bytes.h, not the library writer), fed to
 * gguf_open_mem in strict and lenient mode.
 *
 * Malformed files must fail with TERN_EFORMAT or TERN_EUNSUPPORTED and a
 * message naming the problem (one of the case's keywords); in lenient mode
 * they must either fail the same way or report the problem through the
 * callback. Odd-but-valid files must open cleanly in both modes.
 *
 *   test_gguf_malformed            run the cmocka tests
 *   test_gguf_malformed --write D  write the corpus as D/bad/NAME.gguf and
 *                                  D/good/NAME.gguf (used by cli_malformed.sh)
 *   test_gguf_malformed --show     print what the reader says about each case */
#include <ctype.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "lib/format/gguf.h"
#include "quant/quant.h"
#include "tests/robust_bytes.h"

/* ---- GGUF pieces ----------------------------------------------------------- */

static void g_hdr(struct bb *b, uint32_t version, uint64_t n_tensors, uint64_t n_kv)
{
	bb_raw(b, "GGUF", 4);
	bb_u32(b, version);
	bb_u64(b, n_tensors);
	bb_u64(b, n_kv);
}

static void g_strn(struct bb *b, const void *s, size_t n)
{
	bb_u64(b, n);
	bb_raw(b, s, n);
}

static void g_str(struct bb *b, const char *s)
{
	g_strn(b, s, strlen(s));
}

static void g_key(struct bb *b, const char *key, uint32_t type)
{
	g_str(b, key);
	bb_u32(b, type);
}

static void g_kv_u32(struct bb *b, const char *key, uint32_t v)
{
	g_key(b, key, GGUF_T_U32);
	bb_u32(b, v);
}

static void g_kv_str(struct bb *b, const char *key, const char *v)
{
	g_key(b, key, GGUF_T_STRING);
	g_str(b, v);
}

static void g_arr_hdr(struct bb *b, const char *key, uint32_t elem, uint64_t n)
{
	g_key(b, key, GGUF_T_ARRAY);
	bb_u32(b, elem);
	bb_u64(b, n);
}

struct ti {
	const char *name;
	uint32_t n_dims;
	uint64_t ne[4];
	uint32_t type;
	uint64_t offset;
};

static void g_tinfo(struct bb *b, const struct ti *t)
{
	g_str(b, t->name);
	bb_u32(b, t->n_dims);
	for (uint32_t i = 0; i < t->n_dims && i < 8; i++)
		bb_u64(b, t->ne[i]);
	bb_u32(b, t->type);
	bb_u64(b, t->offset);
}

/* A whole file: optional general.alignment, tensor infos, padding, then
 * data_bytes of data (a simple ramp so that views differ). */
static void g_tensors(struct bb *b, uint32_t version, const struct ti *t, int n, uint64_t data_bytes,
		      uint32_t align)
{
	g_hdr(b, version, (uint64_t)n, align ? 1 : 0);
	if (align)
		g_kv_u32(b, "general.alignment", align);
	for (int i = 0; i < n; i++)
		g_tinfo(b, &t[i]);
	bb_align(b, align ? align : 32);
	for (uint64_t i = 0; i < data_bytes; i++)
		bb_u8(b, (uint8_t)i);
}

/* ---- the small valid file, with its field boundaries ---------------------- */

struct marks {
	size_t at[64];
	const char *what[64];
	int n;
};

static void mark(struct marks *m, const struct bb *b, const char *what)
{
	if (m && m->n < 64) {
		m->at[m->n] = b->n;
		m->what[m->n++] = what;
	}
}

/* 4 keys (string, u8 array, string array, f32) and two tensors (f32 [4,2]
 * and q8_0 [32]) whose data ends exactly at the end of the file. */
static void small_valid(struct bb *b, uint32_t version, struct marks *m)
{
	mark(m, b, "magic");
	bb_raw(b, "GGUF", 4);
	mark(m, b, "version");
	bb_u32(b, version);
	mark(m, b, "n_tensors");
	bb_u64(b, 2);
	mark(m, b, "n_kv");
	bb_u64(b, 4);
	mark(m, b, "key0_len");
	bb_u64(b, 20);
	mark(m, b, "key0");
	bb_raw(b, "general.architecture", 20);
	mark(m, b, "key0_type");
	bb_u32(b, GGUF_T_STRING);
	mark(m, b, "val0_len");
	bb_u64(b, 5);
	mark(m, b, "val0");
	bb_raw(b, "llama", 5);
	mark(m, b, "key1");
	g_str(b, "a.u8");
	mark(m, b, "key1_type");
	bb_u32(b, GGUF_T_ARRAY);
	mark(m, b, "arr1_elem");
	bb_u32(b, GGUF_T_U8);
	mark(m, b, "arr1_n");
	bb_u64(b, 3);
	mark(m, b, "arr1_data");
	bb_raw(b, "\x01\x02\x03", 3);
	mark(m, b, "key2");
	g_str(b, "a.strs");
	bb_u32(b, GGUF_T_ARRAY);
	mark(m, b, "arr2_elem");
	bb_u32(b, GGUF_T_STRING);
	bb_u64(b, 2);
	mark(m, b, "arr2_s0");
	g_str(b, "x");
	mark(m, b, "arr2_s1");
	g_str(b, "yz");
	mark(m, b, "key3");
	g_key(b, "a.f32", GGUF_T_F32);
	mark(m, b, "val3");
	bb_f32(b, 1.5f);
	mark(m, b, "tensor0_name");
	g_str(b, "t0");
	mark(m, b, "tensor0_n_dims");
	bb_u32(b, 2);
	mark(m, b, "tensor0_ne");
	bb_u64(b, 4);
	bb_u64(b, 2);
	mark(m, b, "tensor0_type");
	bb_u32(b, QT_F32);
	mark(m, b, "tensor0_offset");
	bb_u64(b, 0);
	mark(m, b, "tensor1_name");
	g_tinfo(b, &(struct ti){"t1", 1, {32}, QT_Q8_0, 32});
	mark(m, b, "padding");
	bb_align(b, 32);
	mark(m, b, "data");
	for (int i = 0; i < 8; i++)
		bb_f32(b, (float)i);
	mark(m, b, "tensor1_data");
	bb_u16(b, 0x3c00); /* d = 1.0 */
	for (int i = 0; i < 32; i++)
		bb_u8(b, (uint8_t)(i - 16));
}

/* ---- the cases ------------------------------------------------------------- */

/* Keywords: alternatives separated by '|', matched case-insensitively. */
#define K_TRUNC "truncat|past|end of the file|end of file|cannot fit|outside|exceed|beyond|too small|empty|short"
#define K_LEN K_TRUNC "|long|limit|length"

struct gcase {
	const char *name;
	void (*build)(struct bb *b, uint64_t arg);
	uint64_t arg;
	const char *kw; /* NULL: an odd but valid file */
};

static void c_bad_magic(struct bb *b, uint64_t a)
{
	small_valid(b, 3, NULL);
	memcpy(b->p, a ? "GGUG" : "\0\0\0\0", 4);
}

static void c_empty(struct bb *b, uint64_t a)
{
	bb_raw(b, "GGUF", (size_t)a);
}

static void c_version(struct bb *b, uint64_t v)
{
	small_valid(b, 3, NULL);
	bb_put_le(b, 4, v, 4);
}

static void c_big_endian(struct bb *b, uint64_t full)
{
	small_valid(b, 3, NULL);
	bb_put_le(b, 4, 0x03000000u, 4); /* version 3 written big-endian */
	if (full) {
		memcpy(b->p, "FUGG", 4);
		bb_put_le(b, 8, 0x0200000000000000ull, 8);
		bb_put_le(b, 16, 0x0400000000000000ull, 8);
	}
}

static void c_n_tensors(struct bb *b, uint64_t n)
{
	small_valid(b, 3, NULL);
	bb_put_le(b, 8, n, 8);
}

static void c_n_kv(struct bb *b, uint64_t n)
{
	small_valid(b, 3, NULL);
	bb_put_le(b, 16, n, 8);
}

static void c_key_len(struct bb *b, uint64_t n)
{
	small_valid(b, 3, NULL);
	bb_put_le(b, 24, n, 8);
}

static void c_str_len(struct bb *b, uint64_t n)
{
	g_hdr(b, 3, 0, 1);
	g_key(b, "s", GGUF_T_STRING);
	bb_u64(b, n);
	bb_raw(b, "abcdefgh", 8);
}

static void c_arr_len(struct bb *b, uint64_t elem)
{
	g_hdr(b, 3, 0, 1);
	/* a count whose byte size wraps to a small number */
	uint64_t n = elem == GGUF_T_U32 ? 1ull << 62 : elem == GGUF_T_U64 ? 1ull << 61
		   : elem == GGUF_T_U8 ? 1000 : 1ull << 61;
	g_arr_hdr(b, "a", (uint32_t)elem, n);
	bb_zeros(b, 16);
}

static void c_arr_str_elem(struct bb *b, uint64_t len)
{
	g_hdr(b, 3, 0, 1);
	g_arr_hdr(b, "a", GGUF_T_STRING, 2);
	g_str(b, "ok");
	bb_u64(b, len);
	bb_raw(b, "abc", 3);
}

static void c_arr_inner_count(struct bb *b, uint64_t n)
{
	g_hdr(b, 3, 0, 1);
	g_arr_hdr(b, "a", GGUF_T_ARRAY, 2);
	bb_u32(b, GGUF_T_U8);
	bb_u64(b, 1);
	bb_u8(b, 7);
	bb_u32(b, GGUF_T_U16);
	bb_u64(b, n);
	bb_zeros(b, 6);
}

static void c_vtype(struct bb *b, uint64_t t)
{
	g_hdr(b, 3, 0, 2);
	g_kv_u32(b, "ok", 1);
	g_key(b, "bad", (uint32_t)t);
	bb_zeros(b, 16);
}

static void c_elem_type(struct bb *b, uint64_t t)
{
	g_hdr(b, 3, 0, 1);
	g_arr_hdr(b, "a", (uint32_t)t, 1);
	bb_zeros(b, 16);
}

static void c_inner_elem_type(struct bb *b, uint64_t t)
{
	g_hdr(b, 3, 0, 1);
	g_arr_hdr(b, "a", GGUF_T_ARRAY, 1);
	bb_u32(b, (uint32_t)t);
	bb_u64(b, 1);
	bb_zeros(b, 16);
}

/* depth levels of arrays, each holding one element; the innermost holds a u8 */
static void c_nested(struct bb *b, uint64_t depth)
{
	g_hdr(b, 3, 0, 1);
	g_key(b, "deep", GGUF_T_ARRAY);
	for (uint64_t d = 1; d < depth; d++) {
		bb_u32(b, GGUF_T_ARRAY);
		bb_u64(b, 1);
	}
	bb_u32(b, GGUF_T_U8);
	bb_u64(b, 1);
	bb_u8(b, 42);
}

static void c_dup_key(struct bb *b, uint64_t n)
{
	g_hdr(b, 3, 0, n);
	for (uint64_t i = 0; i < n; i++)
		g_kv_u32(b, "general.dup", (uint32_t)i);
}

static void c_align_val(struct bb *b, uint64_t a)
{
	g_hdr(b, 3, 1, 1);
	g_kv_u32(b, "general.alignment", (uint32_t)a);
	g_tinfo(b, &(struct ti){"t", 1, {8}, QT_F32, 0});
	bb_align(b, 32);
	bb_zeros(b, 32);
}

static void c_align_type(struct bb *b, uint64_t t)
{
	g_hdr(b, 3, 1, 1);
	g_key(b, "general.alignment", (uint32_t)t);
	if (t == GGUF_T_STRING)
		g_str(b, "32");
	else if (t == GGUF_T_U64)
		bb_u64(b, 32);
	else if (t == GGUF_T_F32)
		bb_f32(b, 32.0f);
	else
		bb_u16(b, 32);
	g_tinfo(b, &(struct ti){"t", 1, {8}, QT_F32, 0});
	bb_align(b, 32);
	bb_zeros(b, 32);
}

static void c_n_dims(struct bb *b, uint64_t n)
{
	struct ti t = {"t", (uint32_t)n, {4, 1, 1, 1}, QT_F32, 0};
	g_hdr(b, 3, 1, 0);
	g_str(b, t.name);
	bb_u32(b, t.n_dims);
	for (uint64_t i = 0; i < n && i < 8; i++)
		bb_u64(b, i ? 1 : 4);
	bb_u32(b, QT_F32);
	bb_u64(b, 0);
	bb_align(b, 32);
	bb_zeros(b, 64);
}

static const struct ti shape_cases[] = {
	{"zero", 1, {0}, QT_F32, 0},
	{"zero2", 2, {4, 0}, QT_F32, 0},
	{"ovf3", 3, {1ull << 32, 1ull << 32, 1ull << 32}, QT_F32, 0},
	{"ovf2", 2, {1ull << 32, 1ull << 32}, QT_F32, 0},
	{"ovf_bytes", 1, {1ull << 63}, QT_F32, 0},
	{"ovf_bytes2", 2, {1ull << 62, 4}, QT_F16, 0},
};

static void c_shape(struct bb *b, uint64_t i)
{
	g_tensors(b, 3, &shape_cases[i], 1, 64, 0);
}

static void c_ttype(struct bb *b, uint64_t type)
{
	g_tensors(b, 3, &(struct ti){"t", 1, {256}, (uint32_t)type, 0}, 1, 1024, 0);
}

static void c_block(struct bb *b, uint64_t type)
{
	g_tensors(b, 3, &(struct ti){"rows", 2, {type == QT_Q4_0 ? 33 : 32, 2}, (uint32_t)type, 0}, 1, 1024, 0);
}

enum { P_MISALIGNED, P_PAST_EOF, P_OFFSET_WRAP, P_SIZE_PAST_EOF, P_OVERLAP, P_OVERLAP_SAME, P_DUP_NAME,
       P_NAME_PAST_EOF, P_NAME_HUGE, P_OVERLAP_ONE, P_OVERLAP_ONE_AFTER, P_ADJACENT };

static void c_place(struct bb *b, uint64_t kind)
{
	struct ti t[2] = {{"a", 1, {8}, QT_F32, 0}, {"b", 1, {8}, QT_F32, 32}};
	uint64_t data = 64;
	uint32_t align = 0;
	switch (kind) {
	case P_MISALIGNED: t[1].offset = 36; data = 96; break;
	case P_PAST_EOF: t[1].offset = 1024; break;
	case P_OFFSET_WRAP: t[1].offset = UINT64_MAX - 31; break;
	case P_SIZE_PAST_EOF: t[1].ne[0] = 1024; break;
	case P_OVERLAP: t[1].offset = 0; t[0].ne[0] = 16; break;
	case P_OVERLAP_SAME: t[1].offset = 0; break;
	case P_DUP_NAME: t[1].name = "a"; break;
	/* With alignment 1 any offset is allowed: "a" (7 f32, bytes
	 * [0, 28)) and "b" share exactly byte 27, or just touch. */
	case P_OVERLAP_ONE: t[0].ne[0] = 7; t[1].offset = 27; align = 1; break;
	case P_OVERLAP_ONE_AFTER: /* the same, listed the other way round */
		t[0] = (struct ti){"a", 1, {8}, QT_F32, 27};
		t[1] = (struct ti){"b", 1, {7}, QT_F32, 0};
		align = 1;
		break;
	case P_ADJACENT: t[0].ne[0] = 7; t[1].offset = 28; align = 1; break;
	}
	if (kind == P_NAME_PAST_EOF || kind == P_NAME_HUGE) {
		g_hdr(b, 3, 1, 0);
		bb_u64(b, kind == P_NAME_HUGE ? 1ull << 63 : 1000);
		bb_raw(b, "name", 4);
		bb_zeros(b, 40);
		return;
	}
	g_tensors(b, 3, t, 2, data, align);
}

/* A tensor name of n bytes (the GGUF spec allows at most 64). */
static void c_name_len(struct bb *b, uint64_t n)
{
	char name[256];
	memset(name, 'n', sizeof name);
	snprintf(name, sizeof name, "blk.0.");
	name[6] = 'x';
	name[n] = 0;
	g_tensors(b, 3, &(struct ti){name, 1, {8}, QT_F32, 0}, 1, 32, 0);
}

/* Many tensors all placed at offset 0: overlap checking must not be quadratic. */
static void c_many_overlaps(struct bb *b, uint64_t n)
{
	g_hdr(b, 3, n, 0);
	for (uint64_t i = 0; i < n; i++) {
		char name[32];
		snprintf(name, sizeof name, "t%llu", (unsigned long long)i);
		g_tinfo(b, &(struct ti){name, 1, {8}, QT_F32, 0});
	}
	bb_align(b, 32);
	bb_zeros(b, 32);
}

/* ---- odd but valid ---- */

static void v_small(struct bb *b, uint64_t version)
{
	small_valid(b, (uint32_t)version, NULL);
}

static void v_empty(struct bb *b, uint64_t a)
{
	g_hdr(b, 3, 0, 0);
}

static void v_strings(struct bb *b, uint64_t a)
{
	static const char bad_utf8[] = "ok \xff\xfe \xc3\x28 \xed\xa0\x80 \xf8\x88\x80\x80\x80 \xc0\xaf end\xe2\x82";
	static const char ctrl[] = "a\x01\x02\x1b[31mred\x1b[0m\n\t\r\x7f\"\\ \0nul";
	g_hdr(b, 3, 0, 5);
	g_key(b, "odd.invalid_utf8", GGUF_T_STRING);
	g_strn(b, bad_utf8, sizeof bad_utf8 - 1);
	g_key(b, "odd.control", GGUF_T_STRING);
	g_strn(b, ctrl, sizeof ctrl - 1);
	g_kv_str(b, "odd.\xc3\xa9t\xc3\xa9.\xd0\xba\xd0\xbb\xd1\x8e\xd1\x87", "utf-8 key");
	g_arr_hdr(b, "odd.strs", GGUF_T_STRING, 3);
	g_strn(b, bad_utf8, sizeof bad_utf8 - 1);
	g_strn(b, ctrl, sizeof ctrl - 1);
	g_str(b, "");
	g_kv_str(b, "odd.empty", "");
}

static void v_no_tensors(struct bb *b, uint64_t a)
{
	g_hdr(b, 3, 0, 2);
	g_kv_str(b, "general.architecture", "llama");
	g_kv_u32(b, "llama.context_length", 4096);
}

static void v_empty_arrays(struct bb *b, uint64_t a)
{
	g_hdr(b, 3, 0, 4);
	g_arr_hdr(b, "e.u8", GGUF_T_U8, 0);
	g_arr_hdr(b, "e.str", GGUF_T_STRING, 0);
	g_arr_hdr(b, "e.arr", GGUF_T_ARRAY, 0);
	g_arr_hdr(b, "e.inner", GGUF_T_ARRAY, 2);
	bb_u32(b, GGUF_T_F32);
	bb_u64(b, 0);
	bb_u32(b, GGUF_T_STRING);
	bb_u64(b, 0);
}

static void v_large_arrays(struct bb *b, uint64_t n)
{
	g_hdr(b, 3, 0, 3);
	g_arr_hdr(b, "big.u32", GGUF_T_U32, n);
	for (uint64_t i = 0; i < n; i++)
		bb_u32(b, (uint32_t)i);
	g_arr_hdr(b, "big.str", GGUF_T_STRING, n / 8);
	for (uint64_t i = 0; i < n / 8; i++)
		g_str(b, i % 2 ? "ab" : "");
	g_arr_hdr(b, "big.arr", GGUF_T_ARRAY, n / 16);
	for (uint64_t i = 0; i < n / 16; i++) {
		bb_u32(b, GGUF_T_U8);
		bb_u64(b, 0);
	}
}

static void v_align(struct bb *b, uint64_t align)
{
	uint64_t off = align >= 32 ? align : 32;
	struct ti t[2] = {{"a", 1, {8}, QT_F32, 0}, {"b", 2, {32, 2}, QT_Q8_0, off}};
	g_tensors(b, 3, t, 2, off + 68, (uint32_t)align);
}

static void v_nested(struct bb *b, uint64_t depth)
{
	c_nested(b, depth);
}

static void v_mixed_nested(struct bb *b, uint64_t a)
{
	g_hdr(b, 3, 0, 1);
	g_arr_hdr(b, "n", GGUF_T_ARRAY, 3);
	bb_u32(b, GGUF_T_STRING); /* [["a", "bc"], */
	bb_u64(b, 2);
	g_str(b, "a");
	g_str(b, "bc");
	bb_u32(b, GGUF_T_ARRAY); /* [[1, 2]], */
	bb_u64(b, 1);
	bb_u32(b, GGUF_T_I16);
	bb_u64(b, 2);
	bb_u16(b, 1);
	bb_u16(b, 2);
	bb_u32(b, GGUF_T_F64); /* [0.5]] */
	bb_u64(b, 1);
	bb_u64(b, 0x3fe0000000000000ull);
}

static void v_scalars(struct bb *b, uint64_t a)
{
	g_hdr(b, 3, 0, 15);
	g_key(b, "s.u8", GGUF_T_U8), bb_u8(b, 255);
	g_key(b, "s.i8", GGUF_T_I8), bb_u8(b, 0x80);
	g_key(b, "s.u16", GGUF_T_U16), bb_u16(b, 65535);
	g_key(b, "s.i16", GGUF_T_I16), bb_u16(b, 0x8000);
	g_key(b, "s.u32", GGUF_T_U32), bb_u32(b, UINT32_MAX);
	g_key(b, "s.i32", GGUF_T_I32), bb_u32(b, 0x80000000u);
	g_key(b, "s.f32", GGUF_T_F32), bb_f32(b, -0.0f);
	g_key(b, "s.bool", GGUF_T_BOOL), bb_u8(b, 1);
	g_key(b, "s.u64", GGUF_T_U64), bb_u64(b, UINT64_MAX);
	g_key(b, "s.i64", GGUF_T_I64), bb_u64(b, 1ull << 63);
	g_key(b, "s.f64", GGUF_T_F64), bb_u64(b, 0x7fefffffffffffffull); /* DBL_MAX */
	g_key(b, "s.nan", GGUF_T_F32), bb_u32(b, 0x7fc00000u);
	g_key(b, "s.inf", GGUF_T_F64), bb_u64(b, 0xfff0000000000000ull);
	g_key(b, "s.denormal", GGUF_T_F32), bb_u32(b, 1);
	g_arr_hdr(b, "s.nan_arr", GGUF_T_F32, 3);
	bb_u32(b, 0x7f800000u);
	bb_u32(b, 0xffc00001u);
	bb_f32(b, 1.0f);
}

static void v_all_types(struct bb *b, uint64_t a)
{
	struct ti t[QT_COUNT];
	static char names[QT_COUNT][16];
	int n = 0;
	uint64_t off = 0;
	for (uint32_t ty = 0; ty < QT_COUNT; ty++) {
		if (!quant_type_valid(ty))
			continue;
		bool ok;
		size_t row = quant_row_size(ty, 256, &ok);
		snprintf(names[n], sizeof names[n], "%s", quant_type_name(ty));
		t[n] = (struct ti){names[n], 2, {256, 2}, ty, off};
		off += (2 * row + 31) / 32 * 32;
		n++;
	}
	g_tensors(b, 3, t, n, off, 0);
}

static void v_4d_tail(struct bb *b, uint64_t a)
{
	struct ti t = {"four.d", 4, {2, 3, 4, 5}, QT_F16, 0};
	g_tensors(b, 3, &t, 1, 240 + 17, 0); /* 17 bytes of slack after the data */
}

static void v_long_string(struct bb *b, uint64_t n)
{
	g_hdr(b, 2, 0, 1);
	g_key(b, "tokenizer.chat_template", GGUF_T_STRING);
	bb_u64(b, n);
	for (uint64_t i = 0; i < n; i++)
		bb_u8(b, (uint8_t)"{% for m in messages %}\n"[i % 24]);
}

static const struct gcase cases[] = {
	{"bad_magic", c_bad_magic, 1, "magic"},
	{"bad_magic_zero", c_bad_magic, 0, "magic"},
	{"empty_file", c_empty, 0, K_TRUNC "|magic"},
	{"magic_only", c_empty, 4, K_TRUNC},
	{"version_0", c_version, 0, "version"},
	{"version_1", c_version, 1, "version"},
	{"version_4", c_version, 4, "version"},
	{"version_huge", c_version, 0x7fffffff, "version"},
	{"version_max", c_version, 0xffffffff, "version"},
	{"big_endian", c_big_endian, 0, "big-endian|big endian"},
	{"big_endian_full", c_big_endian, 1, "big-endian|big endian"},
	{"n_tensors_2p63", c_n_tensors, 1ull << 63, "count|tensor|" K_TRUNC},
	{"n_tensors_max", c_n_tensors, UINT64_MAX, "count|tensor|" K_TRUNC},
	{"n_tensors_2p40", c_n_tensors, 1ull << 40, "count|tensor|" K_TRUNC},
	{"n_tensors_3", c_n_tensors, 3, K_TRUNC "|n_dims|tensor"},
	{"n_kv_2p63", c_n_kv, 1ull << 63, "count|key|" K_TRUNC},
	{"n_kv_max", c_n_kv, UINT64_MAX, "count|key|" K_TRUNC},
	{"n_kv_5", c_n_kv, 5, K_TRUNC "|type|key"},
	{"key_len_past_eof", c_key_len, 1000, K_LEN},
	{"key_len_2p63", c_key_len, 1ull << 63, K_LEN},
	{"key_len_max", c_key_len, UINT64_MAX, K_LEN},
	{"str_len_past_eof", c_str_len, 9, K_LEN},
	{"str_len_max", c_str_len, UINT64_MAX, K_LEN},
	{"arr_u8_past_eof", c_arr_len, GGUF_T_U8, K_LEN},
	{"arr_u32_wraps", c_arr_len, GGUF_T_U32, K_LEN},
	{"arr_u64_wraps", c_arr_len, GGUF_T_U64, K_LEN},
	{"arr_str_count", c_arr_len, GGUF_T_STRING, K_LEN},
	{"arr_arr_count", c_arr_len, GGUF_T_ARRAY, K_LEN},
	{"arr_str_elem_past_eof", c_arr_str_elem, 1000, K_LEN},
	{"arr_str_elem_max", c_arr_str_elem, UINT64_MAX, K_LEN},
	{"arr_inner_count", c_arr_inner_count, 1ull << 63, K_LEN},
	{"vtype_13", c_vtype, 13, "type"},
	{"vtype_max", c_vtype, UINT32_MAX, "type"},
	{"elem_type_13", c_elem_type, 13, "type"},
	{"elem_type_max", c_elem_type, UINT32_MAX, "type"},
	{"inner_elem_type", c_inner_elem_type, 99, "type"},
	{"nested_depth_20", c_nested, 20, "depth|nest|deep"},
	{"nested_depth_10000", c_nested, 10000, "depth|nest|deep"},
	{"dup_key", c_dup_key, 2, "duplicate"},
	{"dup_key_many", c_dup_key, 20000, "duplicate"},
	{"align_0", c_align_val, 0, "align"},
	{"align_3", c_align_val, 3, "align"},
	{"align_48", c_align_val, 48, "align"},
	{"align_2p31", c_align_val, 1u << 31, "align|" K_TRUNC},
	{"align_type_u64", c_align_type, GGUF_T_U64, "align"},
	{"align_type_str", c_align_type, GGUF_T_STRING, "align"},
	{"align_type_f32", c_align_type, GGUF_T_F32, "align"},
	{"align_type_u16", c_align_type, GGUF_T_U16, "align"},
	{"n_dims_0", c_n_dims, 0, "n_dims|dimensions"},
	{"n_dims_5", c_n_dims, 5, "n_dims|dimensions"},
	{"n_dims_max", c_n_dims, UINT32_MAX, "n_dims|dimensions"},
	{"dim_zero", c_shape, 0, "dimension|zero|ne["},
	{"dim_zero_second", c_shape, 1, "dimension|zero|ne["},
	{"dims_overflow_3", c_shape, 2, "overflow|too large"},
	{"dims_overflow_wrap", c_shape, 3, "overflow|too large"},
	{"dim_bytes_overflow", c_shape, 4, "overflow|too large|dimension|" K_TRUNC},
	{"dim_bytes_overflow_f16", c_shape, 5, "overflow|too large|" K_TRUNC},
	{"ttype_4", c_ttype, 4, "type"},
	{"ttype_5", c_ttype, 5, "type"},
	{"ttype_31", c_ttype, 31, "type"},
	{"ttype_32", c_ttype, 32, "type"},
	{"ttype_33", c_ttype, 33, "type"},
	{"ttype_36", c_ttype, 36, "type"},
	{"ttype_37", c_ttype, 37, "type"},
	{"ttype_38", c_ttype, 38, "type"},
	{"ttype_40", c_ttype, 40, "type"},
	{"ttype_1000", c_ttype, 1000, "type"},
	{"ttype_max", c_ttype, UINT32_MAX, "type"},
	{"block_q4_0", c_block, QT_Q4_0, "block|multiple"},
	{"block_q4_K", c_block, QT_Q4_K, "block|multiple"},
	{"block_iq4_xs", c_block, QT_IQ4_XS, "block|multiple"},
	{"tensor_misaligned", c_place, P_MISALIGNED, "align"},
	{"tensor_past_eof", c_place, P_PAST_EOF, K_TRUNC},
	{"tensor_offset_wraps", c_place, P_OFFSET_WRAP, K_TRUNC "|overflow"},
	{"tensor_size_past_eof", c_place, P_SIZE_PAST_EOF, K_TRUNC},
	{"tensor_overlap", c_place, P_OVERLAP, "overlap"},
	{"tensor_overlap_same", c_place, P_OVERLAP_SAME, "overlap"},
	{"tensor_overlap_one_byte", c_place, P_OVERLAP_ONE, "overlap"},
	{"tensor_overlap_one_byte_after", c_place, P_OVERLAP_ONE_AFTER, "overlap"},
	{"tensor_dup_name", c_place, P_DUP_NAME, "duplicate"},
	{"tensor_name_past_eof", c_place, P_NAME_PAST_EOF, K_LEN},
	{"tensor_name_2p63", c_place, P_NAME_HUGE, K_LEN},
	{"tensor_overlap_many", c_many_overlaps, 20000, "overlap"},
	{"tensor_name_65", c_name_len, 65, "name"},
	{"tensor_name_200", c_name_len, 200, "name"},

	{"small", v_small, 3, NULL},
	{"small_v2", v_small, 2, NULL},
	{"empty_header", v_empty, 0, NULL},
	{"strings_utf8_control", v_strings, 0, NULL},
	{"no_tensors", v_no_tensors, 0, NULL},
	{"empty_arrays", v_empty_arrays, 0, NULL},
	{"large_arrays", v_large_arrays, 1u << 20, NULL},
	{"align_64", v_align, 64, NULL},
	{"align_1", v_align, 1, NULL},
	{"nested_depth_3", v_nested, 3, NULL},
	{"nested_mixed", v_mixed_nested, 0, NULL},
	{"scalars", v_scalars, 0, NULL},
	{"all_tensor_types", v_all_types, 0, NULL},
	{"tensor_4d_tail", v_4d_tail, 0, NULL},
	{"long_string_v2", v_long_string, 100000, NULL},
	{"tensor_name_63", c_name_len, 63, NULL},
	{"tensors_adjacent_align_1", c_place, P_ADJACENT, NULL},
};
#define N_CASES (sizeof cases / sizeof cases[0])

/* ---- checking -------------------------------------------------------------- */

static bool has_keyword(const char *msg, const char *kw)
{
	char lower[TERN_ERR_MSG_MAX];
	size_t i;
	for (i = 0; msg[i] && i < sizeof lower - 1; i++)
		lower[i] = (char)tolower((unsigned char)msg[i]);
	lower[i] = 0;
	const char *p = kw;
	while (*p) {
		const char *bar = strchr(p, '|');
		size_t n = bar ? (size_t)(bar - p) : strlen(p);
		char want[64];
		if (n >= sizeof want)
			n = sizeof want - 1;
		for (i = 0; i < n; i++)
			want[i] = (char)tolower((unsigned char)p[i]);
		want[n] = 0;
		if (strstr(lower, want))
			return true;
		p += n + (bar ? 1 : 0);
	}
	return false;
}

struct problems {
	int n;
	bool matched;
	const char *kw;
	char first[TERN_ERR_MSG_MAX];
};

static void on_problem(void *ud, const char *msg)
{
	struct problems *p = ud;
	if (!p->n)
		snprintf(p->first, sizeof p->first, "%s", msg);
	p->n++;
	if (p->kw && has_keyword(msg, p->kw))
		p->matched = true;
}

/* Touch everything a reader of the file may touch. */
static void walk(const gguf_file *f, bool strict)
{
	for (uint64_t i = 0; i < gguf_n_kv(f); i++) {
		const struct gguf_kv *kv = gguf_kv_at(f, i);
		assert_non_null(kv);
		assert_true(kv->v.p == NULL || (kv->v.p >= gguf_base(f) && kv->v.p + kv->v.size <= gguf_base(f) + gguf_file_size(f)));
		if (kv->v.type != GGUF_T_ARRAY && kv->v.type != GGUF_T_STRING) {
			/* decoders must be defined for every value, NaN and DBL_MAX included */
			volatile int64_t vi = gguf_value_i64(&kv->v);
			volatile uint64_t vu = gguf_value_u64(&kv->v);
			volatile double vd = gguf_value_f64(&kv->v);
			(void)vi, (void)vu, (void)vd;
		}
		if (kv->v.type == GGUF_T_ARRAY && kv->v.n) {
			struct gguf_value el;
			assert_int_equal(gguf_arr_elem(&kv->v, kv->v.n - 1, &el), 0);
			assert_int_not_equal(gguf_arr_elem(&kv->v, kv->v.n, &el), 0);
		}
	}
	for (uint64_t i = 0; i < gguf_n_tensors(f); i++) {
		const struct tern_tensor_view *t = gguf_tensor_at(f, i);
		assert_non_null(t);
		if (strict) {
			assert_true(gguf_data_offset(f) + t->offset + t->nbytes <= gguf_file_size(f));
			char name[256];
			if (t->name.len < sizeof name && !memchr(t->name.ptr, 0, t->name.len)) {
				memcpy(name, t->name.ptr, t->name.len);
				name[t->name.len] = 0;
				const struct tern_tensor_view *ft = gguf_find_tensor(f, name);
				assert_non_null(ft);
				assert_true(tern_str_eq(ft->name, name));
			}
		}
	}
}

static void build(const struct gcase *c, struct bb *b)
{
	*b = (struct bb){0};
	c->build(b, c->arg);
}

static void check_case(const struct gcase *c, const uint8_t *p, size_t n)
{
	gguf_file *f = NULL;
	tern_err e = {0};
	int rc = gguf_open_mem(&f, p, n, NULL, &e);
	if (!c->kw) {
		if (rc)
			fail_msg("%s: valid file refused: %s", c->name, e.msg);
		assert_int_equal(gguf_n_tensors(f), p[8] | (uint64_t)p[9] << 8 | (uint64_t)p[10] << 16);
		assert_int_equal(gguf_n_kv(f), p[16] | (uint64_t)p[17] << 8 | (uint64_t)p[18] << 16);
		walk(f, true);
		gguf_close(f);
		struct problems pr = {0};
		struct gguf_open_opts o = {true, on_problem, &pr};
		rc = gguf_open_mem(&f, p, n, &o, &e);
		if (rc || pr.n)
			fail_msg("%s: lenient open: rc %d, %d problems (%s%s)", c->name, rc, pr.n, pr.first, e.msg);
		gguf_close(f);
		return;
	}
	if (rc != TERN_EFORMAT && rc != TERN_EUNSUPPORTED)
		fail_msg("%s: rc %d (%s), want EFORMAT or EUNSUPPORTED", c->name, rc, rc ? e.msg : "opened");
	assert_null(f);
	if (!has_keyword(e.msg, c->kw))
		fail_msg("%s: message '%s' names none of '%s'", c->name, e.msg, c->kw);
	assert_null(strchr(e.msg, '\n'));

	struct problems pr = {.kw = c->kw};
	struct gguf_open_opts o = {true, on_problem, &pr};
	tern_err e2 = {0};
	rc = gguf_open_mem(&f, p, n, &o, &e2);
	if (rc == 0) {
		if (!pr.matched)
			fail_msg("%s: lenient open succeeded with %d problems, none naming '%s' (%s)", c->name, pr.n,
				 c->kw, pr.first);
		walk(f, false);
		gguf_close(f);
	} else {
		if (rc != TERN_EFORMAT && rc != TERN_EUNSUPPORTED)
			fail_msg("%s: lenient rc %d (%s)", c->name, rc, e2.msg);
		if (!has_keyword(e2.msg, c->kw) && !pr.matched)
			fail_msg("%s: lenient message '%s' names none of '%s'", c->name, e2.msg, c->kw);
	}
}

static void test_case(void **state)
{
	const struct gcase *c = *state;
	struct bb b;
	build(c, &b);
	check_case(c, b.p, b.n);
	bb_free(&b);
}

/* Every proper prefix of the small file is malformed (its last tensor ends at
 * the end of the file). The prefix is copied to its own allocation so that
 * ASan catches any read past it. */
static void test_truncate_every_byte(void **state)
{
	for (uint32_t version = 2; version <= 3; version++) {
		struct bb b = {0};
		small_valid(&b, version, NULL);
		for (size_t cut = 0; cut < b.n; cut++) {
			uint8_t *p = malloc(cut ? cut : 1);
			assert_non_null(p);
			memcpy(p, b.p, cut);
			char name[64];
			snprintf(name, sizeof name, "v%u cut at %zu", version, cut);
			struct gcase c = {name, NULL, 0, K_TRUNC "|magic"};
			check_case(&c, p, cut);
			free(p);
		}
		struct gcase ok = {"small", NULL, 0, NULL};
		check_case(&ok, b.p, b.n);
		bb_free(&b);
	}
}

/* Every byte of the small file set to a few values: open must never crash,
 * and whatever opens must be walkable. */
static void test_mutate_every_byte(void **state)
{
	static const uint8_t vals[] = {0x00, 0x01, 0x7f, 0x80, 0xff};
	struct bb b = {0};
	small_valid(&b, 3, NULL);
	uint8_t *p = malloc(b.n);
	assert_non_null(p);
	for (size_t i = 0; i < b.n; i++)
		for (size_t k = 0; k < sizeof vals; k++) {
			memcpy(p, b.p, b.n);
			p[i] = vals[k];
			for (int lenient = 0; lenient < 2; lenient++) {
				gguf_file *f = NULL;
				tern_err e = {0};
				struct problems pr = {0};
				struct gguf_open_opts o = {lenient, on_problem, &pr};
				int rc = gguf_open_mem(&f, p, b.n, &o, &e);
				if (rc == 0) {
					walk(f, !lenient);
					gguf_close(f);
				} else if (rc != TERN_EFORMAT && rc != TERN_EUNSUPPORTED) {
					fail_msg("byte %zu = 0x%02x: rc %d (%s)", i, vals[k], rc, e.msg);
				}
			}
		}
	free(p);
	bb_free(&b);
}

/* ---- writing the corpus ---------------------------------------------------- */

static int write_file(const char *dir, const char *sub, const char *name, const void *p, size_t n)
{
	char path[4096];
	snprintf(path, sizeof path, "%s/%s", dir, sub);
	if (mkdir(path, 0777) && errno != EEXIST) {
		fprintf(stderr, "%s: %s\n", path, strerror(errno));
		return 1;
	}
	snprintf(path, sizeof path, "%s/%s/%s.gguf", dir, sub, name);
	FILE *f = fopen(path, "wb");
	bool ok = f && (!n || fwrite(p, 1, n, f) == n);
	if (f && fclose(f))
		ok = false;
	if (!ok) {
		fprintf(stderr, "%s: cannot write\n", path);
		return 1;
	}
	return 0;
}

static int write_corpus(const char *dir)
{
	if (mkdir(dir, 0777) && errno != EEXIST) {
		fprintf(stderr, "%s: %s\n", dir, strerror(errno));
		return 1;
	}
	int rc = 0, n_bad = 0, n_good = 0;
	for (size_t i = 0; i < N_CASES; i++) {
		struct bb b;
		build(&cases[i], &b);
		rc |= write_file(dir, cases[i].kw ? "bad" : "good", cases[i].name, b.p, b.n);
		*(cases[i].kw ? &n_bad : &n_good) += 1;
		bb_free(&b);
	}
	/* truncation of the small file at every field boundary */
	struct bb b = {0};
	struct marks m = {0};
	small_valid(&b, 3, &m);
	for (int i = 0; i < m.n; i++) {
		size_t cuts[2] = {m.at[i], m.at[i] + 1};
		for (int k = 0; k < 2; k++) {
			if (cuts[k] >= b.n || (k && i + 1 < m.n && m.at[i + 1] == cuts[k]))
				continue;
			char name[96];
			snprintf(name, sizeof name, "trunc_%zu_%s%s", cuts[k], m.what[i], k ? "_plus1" : "");
			rc |= write_file(dir, "bad", name, b.p, cuts[k]);
			n_bad++;
		}
	}
	rc |= write_file(dir, "bad", "trunc_last_byte", b.p, b.n - 1);
	bb_free(&b);
	printf("wrote %d malformed and %d valid files under %s\n", n_bad + 1, n_good, dir);
	return rc;
}

/* One line per case: what the reader says about it. */
static int show_corpus(void)
{
	for (size_t i = 0; i < N_CASES; i++) {
		struct bb b;
		build(&cases[i], &b);
		gguf_file *f = NULL;
		tern_err e = {0};
		int rc = gguf_open_mem(&f, b.p, b.n, NULL, &e);
		printf("%-26s %7zu bytes  %-18s %s\n", cases[i].name, b.n, rc ? tern_strerror(rc) : "ok",
		       rc ? e.msg : "");
		gguf_close(f);
		bb_free(&b);
	}
	return 0;
}

/* Lenient mode lists every overlap, including one with a tensor that is
 * not the previous one in offset order: "a" [0,128) holds "b" [32,64) and
 * "c" [96,128); c overlaps a but not b. A check against the previous span
 * alone (not the furthest-reaching one) would miss it. */
struct overlaps {
	int n;
	char msg[2][TERN_ERR_MSG_MAX];
};

static void on_overlap(void *ud, const char *msg)
{
	struct overlaps *o = ud;
	if (o->n < 2)
		snprintf(o->msg[o->n], sizeof o->msg[0], "%s", msg);
	o->n++;
}

static void test_overlap_not_previous(void **state)
{
	(void)state;
	struct bb b = {0};
	struct ti t[3] = {{"a", 1, {32}, QT_F32, 0}, {"b", 1, {8}, QT_F32, 32}, {"c", 1, {8}, QT_F32, 96}};
	g_tensors(&b, 3, t, 3, 128, 0);
	struct overlaps o = {0};
	struct gguf_open_opts opts = {.lenient = true, .problem = on_overlap, .ud = &o};
	gguf_file *f = NULL;
	tern_err e = {0};
	assert_int_equal(gguf_open_mem(&f, b.p, b.n, &opts, &e), 0);
	assert_int_equal(o.n, 2);
	assert_non_null(strstr(o.msg[0], "tensors 'a' and 'b' overlap"));
	assert_non_null(strstr(o.msg[1], "tensors 'a' and 'c' overlap"));
	gguf_close(f);
	bb_free(&b);
}

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "--write"))
		return write_corpus(argv[2]);
	if (argc == 2 && !strcmp(argv[1], "--show"))
		return show_corpus();
	if (argc != 1) {
		fprintf(stderr, "usage: %s [--write DIR | --show]\n", argv[0]);
		return 2;
	}
	static struct CMUnitTest tests[N_CASES + 3];
	for (size_t i = 0; i < N_CASES; i++)
		tests[i] = (struct CMUnitTest){cases[i].name, test_case, NULL, NULL, (void *)&cases[i]};
	tests[N_CASES] = (struct CMUnitTest)cmocka_unit_test(test_truncate_every_byte);
	tests[N_CASES + 1] = (struct CMUnitTest)cmocka_unit_test(test_mutate_every_byte);
	tests[N_CASES + 2] = (struct CMUnitTest)cmocka_unit_test(test_overlap_not_previous);
	return _cmocka_run_group_tests("gguf_malformed", tests, N_CASES + 3, NULL, NULL);
}
