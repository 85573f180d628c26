/* gguf.h - validating GGUF reader and a GGUF v3 writer.
 *
 * The reader maps the file read-only and validates every count, length and
 * offset against the file size before use; keys, values, tensor names and
 * tensor data are views into the mapping (never NUL-terminated: use the
 * lengths). Keys and tensor names are found in O(1) through hash tables.
 *
 * Files are little-endian GGUF v2 or v3. Big-endian files are recognised and
 * refused (TERN_EUNSUPPORTED). */
#ifndef TERN_GGUF_H
#define TERN_GGUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/core/error.h"
#include "lib/core/str.h"
#include "lib/format/tensor.h"

enum gguf_vtype {
	GGUF_T_U8 = 0,
	GGUF_T_I8 = 1,
	GGUF_T_U16 = 2,
	GGUF_T_I16 = 3,
	GGUF_T_U32 = 4,
	GGUF_T_I32 = 5,
	GGUF_T_F32 = 6,
	GGUF_T_BOOL = 7,
	GGUF_T_STRING = 8,
	GGUF_T_ARRAY = 9,
	GGUF_T_U64 = 10,
	GGUF_T_I64 = 11,
	GGUF_T_F64 = 12,
	GGUF_T_COUNT = 13,
};

#define GGUF_DEFAULT_ALIGNMENT 32
#define GGUF_MAX_DIMS TERN_MAX_DIMS
#define GGUF_MAX_DEPTH 8 /* nesting of arrays inside arrays */

/* A value view. For scalars `p` points at the little-endian bytes; for
 * strings `s` is set; for arrays `elem` is the element type, `n` the count,
 * and `p` points at the first element's encoding. */
struct gguf_value {
	enum gguf_vtype type;
	enum gguf_vtype elem;   /* arrays only */
	uint64_t n;             /* arrays only: element count */
	const uint8_t *p;       /* scalars and arrays: encoded bytes */
	uint64_t size;          /* bytes of the whole encoding at p */
	struct tern_str s;      /* strings only */
};

struct gguf_kv {
	struct tern_str key;
	struct gguf_value v;
	uint64_t offset;        /* file offset of the key's length field */
	/* string arrays: byte offset of each element from v.p, uint32_t
	 * where the array's bytes allow (gguf_str_index_width), else uint64_t
	 * (str_off64): half the memory for a vocabulary's 262144 tokens */
	const void *str_off;
	bool str_off64;
};


typedef struct gguf_file gguf_file;

/* Problems found while validating (duplicate names, overlapping or
 * misaligned tensors, ...). In lenient mode they are reported through
 * `problem` and the open still succeeds, so a checker can list them all;
 * otherwise the first one fails the open with TERN_EFORMAT. Structural
 * errors (truncation, impossible counts) always fail the open. */
struct gguf_open_opts {
	bool lenient;
	void (*problem)(void *ud, const char *msg);
	void *ud;
};

/* Map and validate a file. opts may be NULL. On error *out is NULL and e
 * holds a message with the offset, key or tensor concerned. */
int gguf_open(gguf_file **out, const char *path,
	      const struct gguf_open_opts *opts, tern_err *e);

/* Validate a caller-owned buffer (kept, not copied; used by fuzzers and
 * tests). */
int gguf_open_mem(gguf_file **out, const void *buf, size_t size,
		  const struct gguf_open_opts *opts, tern_err *e);

void gguf_close(gguf_file *f);

uint32_t gguf_version(const gguf_file *f);
uint32_t gguf_alignment(const gguf_file *f);
uint64_t gguf_data_offset(const gguf_file *f);
uint64_t gguf_file_size(const gguf_file *f);
const uint8_t *gguf_base(const gguf_file *f);

uint64_t gguf_n_kv(const gguf_file *f);
const struct gguf_kv *gguf_kv_at(const gguf_file *f, uint64_t i);
/* NULL if absent. The first occurrence wins if a key repeats. */
const struct gguf_kv *gguf_find(const gguf_file *f, const char *key);

uint64_t gguf_n_tensors(const gguf_file *f);
const struct tern_tensor_view *gguf_tensor_at(const gguf_file *f, uint64_t i);
const struct tern_tensor_view *gguf_find_tensor(const gguf_file *f, const char *name);

/* Typed getters: 0, TERN_ENOTFOUND or TERN_ETYPE (message names the key).
 * Integer getters accept any integer type whose value fits. */
int gguf_get_u32(const gguf_file *f, const char *key, uint32_t *out, tern_err *e);
int gguf_get_i64(const gguf_file *f, const char *key, int64_t *out, tern_err *e);
int gguf_get_u64(const gguf_file *f, const char *key, uint64_t *out, tern_err *e);
int gguf_get_f32(const gguf_file *f, const char *key, float *out, tern_err *e); /* f32 or f64 */
int gguf_get_bool(const gguf_file *f, const char *key, bool *out, tern_err *e);
int gguf_get_str(const gguf_file *f, const char *key, struct tern_str *out, tern_err *e);
/* Array of `elem` type (GGUF_T_COUNT: any element type). */
int gguf_get_arr(const gguf_file *f, const char *key, enum gguf_vtype elem,
		 const struct gguf_value **out, tern_err *e);

/* Element access on an array value. Fixed-size elements and elements of a
 * top-level string array (through kv->str_off) are O(1); nested arrays and
 * strings inside them are walked. Return 0 or TERN_ERANGE/TERN_ETYPE. */
int gguf_arr_elem(const struct gguf_value *arr, uint64_t i, struct gguf_value *out);
/* Sequential access in O(1) per element, for any element type: *pos starts
 * at 0 and is advanced past the element written to out. Returns 0, or
 * TERN_ERANGE when the array is exhausted. */
int gguf_arr_next(const struct gguf_value *arr, uint64_t *i, uint64_t *pos, struct gguf_value *out);
/* i-th string of a string-array key in O(1). */
struct tern_str gguf_kv_arr_str(const struct gguf_kv *kv, uint64_t i);
/* Bytes of each offset in the index of a string array whose encoding
 * takes size bytes: 4 when every element's offset fits 32 bits, else 8. */
unsigned gguf_str_index_width(uint64_t size);

/* Scalar decoding (value must be of a numeric or bool type). */
int64_t gguf_value_i64(const struct gguf_value *v);
uint64_t gguf_value_u64(const struct gguf_value *v);
double gguf_value_f64(const struct gguf_value *v);
bool gguf_value_is_int(const struct gguf_value *v);

const char *gguf_vtype_name(uint32_t t);
/* Encoded size of one element of a fixed-size type, 0 for string/array. */
size_t gguf_vtype_size(uint32_t t);

/* ---- writer ----------------------------------------------------------- */

typedef struct gguf_writer gguf_writer;

gguf_writer *gguf_writer_new(void);
void gguf_writer_free(gguf_writer *w);
/* Alignment of the data section (power of two); also written as
 * general.alignment if set to anything but 32. */
int gguf_writer_set_alignment(gguf_writer *w, uint32_t align);

/* Metadata setters: keys are written in the order they are set. */
int gguf_writer_u8(gguf_writer *w, const char *key, uint8_t v);
int gguf_writer_i8(gguf_writer *w, const char *key, int8_t v);
int gguf_writer_u16(gguf_writer *w, const char *key, uint16_t v);
int gguf_writer_i16(gguf_writer *w, const char *key, int16_t v);
int gguf_writer_u32(gguf_writer *w, const char *key, uint32_t v);
int gguf_writer_i32(gguf_writer *w, const char *key, int32_t v);
int gguf_writer_u64(gguf_writer *w, const char *key, uint64_t v);
int gguf_writer_i64(gguf_writer *w, const char *key, int64_t v);
int gguf_writer_f32(gguf_writer *w, const char *key, float v);
int gguf_writer_f64(gguf_writer *w, const char *key, double v);
int gguf_writer_bool(gguf_writer *w, const char *key, bool v);
int gguf_writer_str(gguf_writer *w, const char *key, const char *v);
int gguf_writer_strn(gguf_writer *w, const char *key, const char *v, uint64_t len);
/* Array of a fixed-size type; `data` holds n little-endian elements. */
int gguf_writer_arr(gguf_writer *w, const char *key, enum gguf_vtype elem,
		    const void *data, uint64_t n);
int gguf_writer_arr_str(gguf_writer *w, const char *key,
			const char *const *v, uint64_t n);
/* Any value given as its already-encoded bytes (type-specific body, e.g.
 * an array of arrays); used by tests to build unusual files. */
int gguf_writer_raw(gguf_writer *w, const char *key, enum gguf_vtype type,
		    const void *body, size_t size);

/* Add a tensor; data (nbytes implied by type and shape) is copied. */
int gguf_writer_tensor(gguf_writer *w, const char *name, uint32_t type,
		       uint32_t n_dims, const uint64_t *ne, const void *data);

/* Serialise to a file, or to a malloc'd buffer (*buf, *size). Writer
 * functions return 0 or a negative code; the first error sticks and is
 * reported here with its message. */
int gguf_writer_write(gguf_writer *w, const char *path, tern_err *e);
int gguf_writer_write_mem(gguf_writer *w, void **buf, size_t *size, tern_err *e);

#endif
