/* gguf.c - validating GGUF v2/v3 reader and GGUF v3 writer.
 *
 * The reader treats the file as hostile: every length, count and offset is
 * checked against the bytes that remain before it is used, arithmetic that
 * could overflow is checked first, and arrays nest at most GGUF_MAX_DEPTH
 * deep. Tables grow with what has been parsed, never with a count the file
 * claims. The file is mapped read-only and only the header pages are read, so
 * listing a multi-gigabyte model never touches tensor data. */
#include "lib/format/gguf.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/core/cursor.h"
#include "lib/core/mapfile.h"
#include "lib/core/quote.h"
#include "lib/core/strmap.h"
#include "quant/quant.h"

#define GGUF_MAGIC "GGUF"
#define MAX_KEY_LEN 65535u
#define MAX_TENSOR_NAME 64 /* GGUF spec: a tensor name is at most 64 bytes */

struct gguf_file {
	const uint8_t *base;       /* [size] the mapping (or caller's buffer) */
	size_t size;
	bool mapped;
	uint32_t version;
	uint32_t alignment;
	uint64_t data_offset;

	struct gguf_kv *kv;        /* [n_kv] */
	uint64_t n_kv;
	struct tern_tensor_view *t;     /* [n_tensors] */
	uint64_t n_tensors;

	struct tern_strmap kv_index;  /* key name -> index */
	struct tern_strmap t_index;   /* tensor name -> index */
};

/* ---- small helpers ------------------------------------------------------ */

static const size_t vtype_size[GGUF_T_COUNT] = {
	[GGUF_T_U8] = 1, [GGUF_T_I8] = 1, [GGUF_T_U16] = 2, [GGUF_T_I16] = 2,
	[GGUF_T_U32] = 4, [GGUF_T_I32] = 4, [GGUF_T_F32] = 4, [GGUF_T_BOOL] = 1,
	[GGUF_T_STRING] = 0, [GGUF_T_ARRAY] = 0, [GGUF_T_U64] = 8, [GGUF_T_I64] = 8,
	[GGUF_T_F64] = 8,
};

static const char *const vtype_names[GGUF_T_COUNT] = {
	"u8", "i8", "u16", "i16", "u32", "i32", "f32", "bool", "str", "arr", "u64", "i64", "f64",
};

const char *gguf_vtype_name(uint32_t t) { return t < GGUF_T_COUNT ? vtype_names[t] : "?"; }
size_t gguf_vtype_size(uint32_t t) { return t < GGUF_T_COUNT ? vtype_size[t] : 0; }

/* ---- parsing ------------------------------------------------------------ */

/* Messages follow the context chain of error.h: the cursor and the value
 * parser say what is wrong at which offset, the loops over keys and
 * tensors put "key 'name'" or "tensor 'name'" in front. */
struct parser {
	gguf_file *f;
	struct tern_cur c;
	tern_err *e;
	const struct gguf_open_opts *opts;
	int problems;
};

/* Report a problem that does not stop parsing, after its context (a
 * tensor, or NULL). Strict mode: it becomes the error. Lenient mode: it is
 * passed to the callback and parsing goes on. */
static int problem(struct parser *p, const char *ctx, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int problem(struct parser *p, const char *ctx, const char *fmt, ...)
{
	char msg[TERN_ERR_MSG_MAX];
	size_t o = ctx ? (size_t)snprintf(msg, sizeof msg, "%s: ", ctx) : 0;
	if (o >= sizeof msg)
		o = sizeof msg - 1;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg + o, sizeof msg - o, fmt, ap);
	va_end(ap);
	p->problems++;
	if (p->opts && p->opts->lenient) {
		if (p->opts->problem)
			p->opts->problem(p->opts->ud, msg);
		return 0;
	}
	return tern_errf(p->e, TERN_EFORMAT, "%s", msg);
}

static int parse_array(struct parser *p, int depth, struct gguf_value *v);

/* Parse one value body of `type` (known to be < GGUF_T_COUNT) at the
 * cursor into v. Nested arrays recurse with depth + 1. */
static int parse_value(struct parser *p, uint32_t type, int depth, struct gguf_value *v)
{
	struct tern_cur *c = &p->c;
	memset(v, 0, sizeof *v);
	v->type = (enum gguf_vtype)type;
	size_t start = c->off;
	if (type == GGUF_T_ARRAY)
		return parse_array(p, depth, v);
	if (type == GGUF_T_STRING) {
		int rc = tern_cur_str64(c, &v->s, "string value");
		if (rc)
			return rc;
		v->p = c->base + start;
		v->size = c->off - start;
		return 0;
	}
	char what[16];
	snprintf(what, sizeof what, "%s value", vtype_names[type]);
	if (tern_cur_need(c, vtype_size[type], what))
		return TERN_EFORMAT;
	v->p = c->base + start;
	c->off += vtype_size[type];
	if (type == GGUF_T_BOOL && v->p[0] > 1)
		return tern_errf(p->e, TERN_EFORMAT, "offset %zu: bool value %u is neither 0 nor 1", start,
				 v->p[0]);
	v->size = vtype_size[type];
	return 0;
}

static int parse_array(struct parser *p, int depth, struct gguf_value *v)
{
	struct tern_cur *c = &p->c;
	size_t start = c->off;
	if (depth >= GGUF_MAX_DEPTH)
		return tern_errf(p->e, TERN_EFORMAT, "offset %zu: arrays nested deeper than %d levels", start,
				 GGUF_MAX_DEPTH);
	uint32_t elem;
	uint64_t n;
	int rc;
	if ((rc = tern_cur_u32(c, &elem, "array element type")) || (rc = tern_cur_u64(c, &n, "array length")))
		return rc;
	if (elem >= GGUF_T_COUNT)
		return tern_errf(p->e, TERN_EFORMAT, "offset %zu: unknown array element type %u", start, elem);
	v->elem = (enum gguf_vtype)elem;
	v->n = n;
	v->p = c->base + c->off;
	/* Smallest encoding of one element: bounds the count before any walk. */
	size_t min_elem = vtype_size[elem] ? vtype_size[elem] : elem == GGUF_T_STRING ? 8 : 12;
	if (n > tern_cur_left(c) / min_elem)
		return tern_errf(p->e, TERN_EFORMAT,
				 "offset %zu: array of %llu %s elements runs past the end of the file (%zu bytes left)",
				 start, (unsigned long long)n, vtype_names[elem], tern_cur_left(c));
	if (vtype_size[elem]) {
		if (elem == GGUF_T_BOOL)
			for (uint64_t i = 0; i < n; i++)
				if (v->p[i] > 1)
					return tern_errf(p->e, TERN_EFORMAT,
							 "offset %zu: bool value %u is neither 0 nor 1",
							 c->off + (size_t)i, v->p[i]);
		c->off += (size_t)n * vtype_size[elem];
	} else {
		for (uint64_t i = 0; i < n; i++) {
			struct gguf_value sub;
			if ((rc = parse_value(p, elem, depth + 1, &sub)))
				return rc;
		}
	}
	v->size = (uint64_t)(c->base + c->off - v->p);
	return 0;
}

static int grow(void **arr, uint64_t *cap, uint64_t n, size_t elem)
{
	if (n < *cap)
		return 0;
	uint64_t nc = *cap ? *cap * 2 : 16;
	if (nc > SIZE_MAX / elem)
		return TERN_ENOMEM;
	void *p = realloc(*arr, (size_t)(nc * elem));
	if (!p)
		return TERN_ENOMEM;
	*arr = p;
	*cap = nc;
	return 0;
}

static struct tern_str kv_name(const void *f, size_t i) { return ((const gguf_file *)f)->kv[i].key; }
static struct tern_str t_name(const void *f, size_t i) { return ((const gguf_file *)f)->t[i].name; }

/* Index n names; a repeated name is a problem (the first one is kept). */
static int index_names(struct parser *p, struct tern_strmap *m, uint64_t n, tern_strmap_key name,
		       const char *what)
{
	/* n entries were parsed, so n is bounded by the file size */
	int rc = tern_strmap_init(m, (size_t)n, name, p->f);
	if (rc)
		return tern_errf(p->e, rc, "no room for an index of %llu %ss", (unsigned long long)n, what);
	for (uint64_t i = 0; i < n; i++) {
		size_t first;
		if (tern_strmap_add(m, (size_t)i, &first) != 1)
			continue;
		char b[TERN_QUOTE_MAX];
		if ((rc = problem(p, NULL, "duplicate %s '%s' (entries %zu and %llu)", what,
				  tern_quote_str(b, sizeof b, name(p->f, (size_t)i)), first, (unsigned long long)i)))
			return rc;
	}
	return 0;
}

unsigned gguf_str_index_width(uint64_t size)
{
	/* every offset is below the size (an element takes 8 bytes at least) */
	return size <= UINT32_MAX ? 4 : 8;
}

/* Every string of a string array, found once so that gguf_kv_arr_str is
 * O(1). The n strings already proved to fit: n * 8 <= bytes parsed. */
static int index_strings(struct gguf_kv *kv, tern_err *e)
{
	const bool wide = gguf_str_index_width(kv->v.size) == 8;
	void *off = malloc((size_t)kv->v.n * (wide ? sizeof(uint64_t) : sizeof(uint32_t)));
	if (!off)
		return tern_errf(e, TERN_ENOMEM, "out of memory indexing %llu strings",
				 (unsigned long long)kv->v.n);
	uint64_t *o64 = off;
	uint32_t *o32 = off;
	const uint8_t *q = kv->v.p;
	for (uint64_t k = 0; k < kv->v.n; k++) {
		uint64_t at = (uint64_t)(q - kv->v.p);
		if (wide)
			o64[k] = at;
		else
			o32[k] = (uint32_t)at;
		q += 8 + tern_le64(q);
	}
	kv->str_off = off;
	kv->str_off64 = wide;
	return 0;
}

/* One key: name, value type, value. On failure the caller adds which key. */
static int parse_kv(struct parser *p, struct gguf_kv *kv)
{
	struct tern_cur *c = &p->c;
	int rc;
	kv->offset = c->off;
	if ((rc = tern_cur_str64(c, &kv->key, "name")))
		return rc;
	if (kv->key.len > MAX_KEY_LEN)
		return tern_errf(p->e, TERN_EFORMAT, "offset %llu: name is %llu bytes long (limit %u)",
				 (unsigned long long)kv->offset, (unsigned long long)kv->key.len, MAX_KEY_LEN);
	uint32_t type;
	size_t at = c->off;
	if ((rc = tern_cur_u32(c, &type, "value type")))
		return rc;
	if (type >= GGUF_T_COUNT)
		return tern_errf(p->e, TERN_EFORMAT, "offset %zu: unknown value type %u", at, type);
	if ((rc = parse_value(p, type, 0, &kv->v)))
		return rc;
	if (kv->v.type == GGUF_T_ARRAY && kv->v.elem == GGUF_T_STRING && kv->v.n)
		return index_strings(kv, p->e);
	return 0;
}

static int parse_kvs(struct parser *p, uint64_t n_kv)
{
	gguf_file *f = p->f;
	uint64_t cap = 0;
	for (uint64_t i = 0; i < n_kv; i++) {
		int rc = grow((void **)&f->kv, &cap, i, sizeof *f->kv);
		if (rc)
			return tern_errf(p->e, rc, "out of memory reading key %llu", (unsigned long long)i);
		struct gguf_kv *kv = &f->kv[i];
		memset(kv, 0, sizeof *kv);
		rc = parse_kv(p, kv);
		if (kv->key.ptr)
			f->n_kv = i + 1; /* its name is known: free str_off on close */
		if (rc) {
			char kb[TERN_QUOTE_MAX];
			if (kv->key.ptr)
				tern_err_prefixf(p->e, "key '%s'", tern_quote_str(kb, sizeof kb, kv->key));
			else
				tern_err_prefixf(p->e, "key %llu of %llu", (unsigned long long)i,
						 (unsigned long long)n_kv);
			return rc;
		}
	}
	return 0;
}

/* The rest of a tensor info record: shape, type and data offset. */
static int parse_tensor_info(struct parser *p, struct tern_tensor_view *t)
{
	struct tern_cur *c = &p->c;
	int rc;
	size_t at = c->off;
	if ((rc = tern_cur_u32(c, &t->n_dims, "n_dims")))
		return rc;
	if (t->n_dims == 0 || t->n_dims > GGUF_MAX_DIMS)
		return tern_errf(p->e, TERN_EFORMAT, "offset %zu: n_dims %u (must be 1..%d)", at, t->n_dims,
				 GGUF_MAX_DIMS);
	for (int d = 0; d < GGUF_MAX_DIMS; d++)
		t->ne[d] = 1;
	for (uint32_t d = 0; d < t->n_dims; d++)
		if ((rc = tern_cur_u64(c, &t->ne[d], "dimension")))
			return rc;
	if ((rc = tern_cur_u32(c, &t->type, "type")) || (rc = tern_cur_u64(c, &t->offset, "data offset")))
		return rc;
	return 0;
}

static int parse_tensors(struct parser *p, uint64_t n_t)
{
	gguf_file *f = p->f;
	uint64_t cap = 0;
	for (uint64_t i = 0; i < n_t; i++) {
		int rc = grow((void **)&f->t, &cap, i, sizeof *f->t);
		if (rc)
			return tern_errf(p->e, rc, "out of memory reading tensor %llu", (unsigned long long)i);
		struct tern_tensor_view *t = &f->t[i];
		memset(t, 0, sizeof *t);
		t->info_offset = p->c.off;
		if ((rc = tern_cur_str64(&p->c, &t->name, "name"))) {
			tern_err_prefixf(p->e, "tensor %llu of %llu", (unsigned long long)i, (unsigned long long)n_t);
			return rc;
		}
		char nb[TERN_QUOTE_MAX], ctx[TERN_QUOTE_MAX + 16];
		snprintf(ctx, sizeof ctx, "tensor '%s'", tern_quote_str(nb, sizeof nb, t->name));
		if (t->name.len > MAX_TENSOR_NAME &&
		    (rc = problem(p, ctx, "offset %llu: name is %llu bytes long (limit %d)",
				  (unsigned long long)t->info_offset, (unsigned long long)t->name.len,
				  MAX_TENSOR_NAME)))
			return rc;
		if ((rc = parse_tensor_info(p, t))) {
			tern_err_prefix(p->e, ctx);
			return rc;
		}
		f->n_tensors = i + 1;
	}
	return 0;
}

/* ---- per-tensor checks that need the data section ----------------------
 * Each step returns a negative code to stop, 1 when it reported a problem
 * that leaves the tensor unusable (lenient mode goes on without its data),
 * or 0. */

static int flaw(int rc)
{
	return rc ? rc : 1;
}

/* Every dimension > 0 and the element count representable. */
static int tensor_shape(struct parser *p, const char *ctx, const struct tern_tensor_view *t, uint64_t *nel)
{
	*nel = 1;
	for (uint32_t d = 0; d < t->n_dims; d++) {
		if (t->ne[d] == 0 || t->ne[d] > (uint64_t)INT64_MAX)
			return flaw(problem(p, ctx, "dimension %u is %llu", d, (unsigned long long)t->ne[d]));
		if (*nel > (uint64_t)INT64_MAX / t->ne[d])
			return flaw(problem(p, ctx, "element count overflows (shape too large)"));
		*nel *= t->ne[d];
	}
	return 0;
}

/* A known, current type whose block divides the row. */
static int tensor_type(struct parser *p, const char *ctx, const struct tern_tensor_view *t)
{
	const struct quant_type_info *ti = quant_type_info(t->type);
	if (!ti)
		return flaw(problem(p, ctx, "unknown tensor type %u", t->type));
	if (!quant_type_valid(t->type))
		return flaw(problem(p, ctx, "type %u (%s) was removed from the format", t->type, ti->name));
	if (t->ne[0] % ti->blck)
		return flaw(problem(p, ctx, "row length %llu is not a multiple of the %s block size %u",
				    (unsigned long long)t->ne[0], ti->name, ti->blck));
	return 0;
}

static int tensor_size(struct parser *p, const char *ctx, struct tern_tensor_view *t, uint64_t nel)
{
	bool ok;
	uint64_t row = quant_row_size(t->type, t->ne[0], &ok);
	uint64_t rows = nel / t->ne[0];
	if (!ok || (row && rows > UINT64_MAX / row))
		return flaw(problem(p, ctx, "byte size overflows"));
	t->nbytes = row * rows;
	return 0;
}

static int tensor_alignment(struct parser *p, const char *ctx, const struct tern_tensor_view *t)
{
	uint32_t a = p->f->alignment;
	if (t->offset % a)
		return flaw(problem(p, ctx, "data offset %llu is not a multiple of the alignment %u",
				    (unsigned long long)t->offset, a));
	return 0;
}

static int tensor_placement(struct parser *p, const char *ctx, const struct tern_tensor_view *t)
{
	const gguf_file *f = p->f;
	uint64_t avail = f->data_offset <= f->size ? f->size - f->data_offset : 0;
	if (t->offset > avail || t->nbytes > avail - t->offset)
		return flaw(problem(p, ctx, "data [%llu, +%llu) lies outside the file (data section has %llu bytes)",
				    (unsigned long long)t->offset, (unsigned long long)t->nbytes,
				    (unsigned long long)avail));
	return 0;
}

/* Shape, type, size, alignment and placement of one tensor; its data view
 * is set only when all of them hold. */
static int check_tensor(struct parser *p, struct tern_tensor_view *t)
{
	char nb[TERN_QUOTE_MAX], ctx[TERN_QUOTE_MAX + 16];
	snprintf(ctx, sizeof ctx, "tensor '%s'", tern_quote_str(nb, sizeof nb, t->name));
	uint64_t nel;
	int rc = tensor_shape(p, ctx, t, &nel);
	if (!rc)
		rc = tensor_type(p, ctx, t);
	if (!rc)
		rc = tensor_size(p, ctx, t, nel);
	if (rc < 0)
		return rc;
	int ra = tensor_alignment(p, ctx, t); /* reported even for a bad shape */
	if (ra < 0)
		return ra;
	if (!rc && !ra)
		rc = tensor_placement(p, ctx, t);
	if (rc < 0)
		return rc;
	t->data = !rc && !ra ? p->f->base + p->f->data_offset + t->offset : NULL;
	return 0;
}

static int check_tensors(struct parser *p)
{
	for (uint64_t i = 0; i < p->f->n_tensors; i++) {
		int rc = check_tensor(p, &p->f->t[i]);
		if (rc)
			return rc;
	}
	return 0;
}

struct span {
	uint64_t off, end, i;
};

static int cmp_span(const void *a, const void *b)
{
	const struct span *x = a, *y = b;
	return x->off < y->off ? -1 : x->off > y->off;
}

/* Tensors with data must not share a byte: sorted by start, each must
 * begin at or after the furthest end seen so far. */
static int check_overlap(struct parser *p)
{
	gguf_file *f = p->f;
	if (f->n_tensors < 2)
		return 0;
	struct span *sp = malloc((size_t)f->n_tensors * sizeof *sp);
	if (!sp)
		return tern_errf(p->e, TERN_ENOMEM, "out of memory checking tensor placement");
	size_t n = 0;
	for (uint64_t i = 0; i < f->n_tensors; i++)
		if (f->t[i].data)
			sp[n++] = (struct span){f->t[i].offset, f->t[i].offset + f->t[i].nbytes, i};
	qsort(sp, n, sizeof *sp, cmp_span);
	int rc = 0;
	size_t far = 0; /* span reaching furthest so far */
	for (size_t k = 1; k < n && !rc; k++) {
		if (sp[k].off < sp[far].end) {
			char na[TERN_QUOTE_MAX], nb[TERN_QUOTE_MAX];
			const struct tern_tensor_view *a = &f->t[sp[far].i], *b = &f->t[sp[k].i];
			rc = problem(p, NULL, "tensors '%s' and '%s' overlap (data at %llu+%llu and %llu)",
				     tern_quote_str(na, sizeof na, a->name), tern_quote_str(nb, sizeof nb, b->name),
				     (unsigned long long)a->offset, (unsigned long long)a->nbytes,
				     (unsigned long long)b->offset);
		}
		if (sp[k].end > sp[far].end)
			far = k;
	}
	free(sp);
	return rc;
}

/* Magic, version and the two counts; the counts are bounded by the bytes
 * left (a key needs >= 13 bytes: length, type, 1 byte of value; a tensor
 * info >= 32). */
static int parse_header(struct parser *p, uint64_t *n_t, uint64_t *n_kv)
{
	struct tern_cur *c = &p->c;
	gguf_file *f = p->f;
	if (c->size < 4 || memcmp(c->base, GGUF_MAGIC, 4) != 0) {
		if (c->size >= 4 && memcmp(c->base, "FUGG", 4) == 0)
			return tern_errf(p->e, TERN_EUNSUPPORTED, "big-endian GGUF file (magic 'FUGG'); only little-endian files are supported");
		return tern_errf(p->e, TERN_EFORMAT, "not a GGUF file (bad magic%s)",
				 c->size < 4 ? ": file shorter than 4 bytes" : "");
	}
	c->off = 4;
	int rc;
	if ((rc = tern_cur_u32(c, &f->version, "version")))
		return rc;
	uint32_t v = f->version;
	if (v == 0x02000000u || v == 0x03000000u || v == 0x01000000u)
		return tern_errf(p->e, TERN_EUNSUPPORTED,
				 "big-endian GGUF file (version field reads 0x%08x); only little-endian files are supported", v);
	if (v == 1)
		return tern_errf(p->e, TERN_EUNSUPPORTED, "GGUF version 1 is not supported (only 2 and 3)");
	if (v != 2 && v != 3)
		return tern_errf(p->e, TERN_EUNSUPPORTED, "unsupported GGUF version %u (only 2 and 3)", v);
	if ((rc = tern_cur_u64(c, n_t, "tensor count")) || (rc = tern_cur_u64(c, n_kv, "key count")))
		return rc;
	if (*n_kv > tern_cur_left(c) / 13)
		return tern_errf(p->e, TERN_EFORMAT, "truncated or corrupt: key count %llu at offset 16 cannot fit in the %zu bytes left",
				 (unsigned long long)*n_kv, tern_cur_left(c));
	if (*n_t > tern_cur_left(c) / 32)
		return tern_errf(p->e, TERN_EFORMAT, "truncated or corrupt: tensor count %llu at offset 8 cannot fit in the %zu bytes left",
				 (unsigned long long)*n_t, tern_cur_left(c));
	return 0;
}

static int read_alignment(struct parser *p)
{
	gguf_file *f = p->f;
	f->alignment = GGUF_DEFAULT_ALIGNMENT;
	const struct gguf_kv *al = gguf_find(f, "general.alignment");
	if (!al)
		return 0;
	if (al->v.type != GGUF_T_U32)
		return tern_errf(p->e, TERN_EFORMAT, "key 'general.alignment': type %s, expected u32",
				 gguf_vtype_name(al->v.type));
	uint32_t a = tern_le32(al->v.p);
	if (a == 0 || (a & (a - 1)))
		return tern_errf(p->e, TERN_EFORMAT, "key 'general.alignment': %u is not a power of two", a);
	f->alignment = a;
	return 0;
}

static int parse(struct parser *p)
{
	gguf_file *f = p->f;
	uint64_t n_t, n_kv;
	int rc;
	if ((rc = parse_header(p, &n_t, &n_kv)) || (rc = parse_kvs(p, n_kv)) ||
	    (rc = index_names(p, &f->kv_index, f->n_kv, kv_name, "key")) || (rc = read_alignment(p)) ||
	    (rc = parse_tensors(p, n_t)) ||
	    (rc = index_names(p, &f->t_index, f->n_tensors, t_name, "tensor name")))
		return rc;
	uint64_t pad = (f->alignment - p->c.off % f->alignment) % f->alignment;
	f->data_offset = (uint64_t)p->c.off + pad;
	if (f->n_tensors && f->data_offset > f->size)
		return tern_errf(p->e, TERN_EFORMAT,
				 "truncated: data section would start at %llu, past the end of the file (%zu bytes)",
				 (unsigned long long)f->data_offset, f->size);
	if ((rc = check_tensors(p)))
		return rc;
	return check_overlap(p);
}

static int open_buf(gguf_file **out, const uint8_t *buf, size_t size, bool mapped,
		    const struct gguf_open_opts *opts, tern_err *e)
{
	*out = NULL;
	gguf_file *f = calloc(1, sizeof *f);
	if (!f) {
		if (mapped)
			tern_unmap(&(struct tern_map){buf, size});
		return tern_errf(e, TERN_ENOMEM, "out of memory");
	}
	f->base = buf;
	f->size = size;
	f->mapped = mapped;
	struct parser p = {.f = f, .c = tern_cur_init(buf, size, e), .e = e, .opts = opts};
	int rc = parse(&p);
	if (rc) {
		if (e && e->code != rc)
			tern_errf(e, rc, "%s", tern_strerror(rc));
		gguf_close(f);
		return rc;
	}
	*out = f;
	return 0;
}

int gguf_open_mem(gguf_file **out, const void *buf, size_t size,
		  const struct gguf_open_opts *opts, tern_err *e)
{
	if (!out || (!buf && size))
		return tern_errf(e, TERN_EINVAL, "gguf_open_mem: bad arguments");
	return open_buf(out, buf, size, false, opts, e);
}

int gguf_open(gguf_file **out, const char *path, const struct gguf_open_opts *opts, tern_err *e)
{
	*out = NULL;
	struct tern_map m;
	int rc = tern_map_file(&m, path, e);
	if (rc)
		return rc;
	if (m.size == 0)
		return tern_errf(e, TERN_EFORMAT, "empty file, not a GGUF file");
	return open_buf(out, m.base, m.size, true, opts, e);
}

void gguf_close(gguf_file *f)
{
	if (!f)
		return;
	for (uint64_t i = 0; i < f->n_kv; i++)
		free((void *)f->kv[i].str_off);
	free(f->kv);
	free(f->t);
	tern_strmap_free(&f->kv_index);
	tern_strmap_free(&f->t_index);
	if (f->mapped)
		tern_unmap(&(struct tern_map){f->base, f->size});
	free(f);
}

/* ---- queries ------------------------------------------------------------ */

uint32_t gguf_version(const gguf_file *f) { return f->version; }
uint32_t gguf_alignment(const gguf_file *f) { return f->alignment; }
uint64_t gguf_data_offset(const gguf_file *f) { return f->data_offset; }
uint64_t gguf_file_size(const gguf_file *f) { return f->size; }
const uint8_t *gguf_base(const gguf_file *f) { return f->base; }
uint64_t gguf_n_kv(const gguf_file *f) { return f->n_kv; }
uint64_t gguf_n_tensors(const gguf_file *f) { return f->n_tensors; }

const struct gguf_kv *gguf_kv_at(const gguf_file *f, uint64_t i)
{
	return i < f->n_kv ? &f->kv[i] : NULL;
}

const struct tern_tensor_view *gguf_tensor_at(const gguf_file *f, uint64_t i)
{
	return i < f->n_tensors ? &f->t[i] : NULL;
}

const struct gguf_kv *gguf_find(const gguf_file *f, const char *key)
{
	size_t i = tern_strmap_find(&f->kv_index, key, strlen(key));
	return i != TERN_STRMAP_NONE ? &f->kv[i] : NULL;
}

const struct tern_tensor_view *gguf_find_tensor(const gguf_file *f, const char *name)
{
	size_t i = tern_strmap_find(&f->t_index, name, strlen(name));
	return i != TERN_STRMAP_NONE ? &f->t[i] : NULL;
}

bool gguf_value_is_int(const struct gguf_value *v)
{
	switch (v->type) {
	case GGUF_T_U8: case GGUF_T_I8: case GGUF_T_U16: case GGUF_T_I16:
	case GGUF_T_U32: case GGUF_T_I32: case GGUF_T_U64: case GGUF_T_I64:
		return true;
	default:
		return false;
	}
}

int64_t gguf_value_i64(const struct gguf_value *v)
{
	const uint8_t *p = v->p;
	switch (v->type) {
	case GGUF_T_U8: case GGUF_T_BOOL: return p[0];
	case GGUF_T_I8: return (int8_t)p[0];
	case GGUF_T_U16: return tern_le16(p);
	case GGUF_T_I16: return (int16_t)tern_le16(p);
	case GGUF_T_U32: return tern_le32(p);
	case GGUF_T_I32: return (int32_t)tern_le32(p);
	case GGUF_T_U64: return (int64_t)tern_le64(p);
	case GGUF_T_I64: return (int64_t)tern_le64(p);
	case GGUF_T_F32: case GGUF_T_F64: {
		/* saturate: converting NaN or an out-of-range double is undefined */
		double d = gguf_value_f64(v);
		if (d != d)
			return 0;
		if (d >= 9223372036854775808.0)
			return INT64_MAX;
		if (d < -9223372036854775808.0)
			return INT64_MIN;
		return (int64_t)d;
	}
	default: return 0;
	}
}

uint64_t gguf_value_u64(const struct gguf_value *v)
{
	if (v->type == GGUF_T_U64)
		return tern_le64(v->p);
	return (uint64_t)gguf_value_i64(v);
}

double gguf_value_f64(const struct gguf_value *v)
{
	if (v->type == GGUF_T_F32) {
		uint32_t b = tern_le32(v->p);
		float x;
		memcpy(&x, &b, 4);
		return x;
	}
	if (v->type == GGUF_T_F64) {
		uint64_t b = tern_le64(v->p);
		double x;
		memcpy(&x, &b, 8);
		return x;
	}
	if (v->type == GGUF_T_U64)
		return (double)tern_le64(v->p);
	return (double)gguf_value_i64(v);
}

static int get_kv(const gguf_file *f, const char *key, const struct gguf_kv **kv, tern_err *e)
{
	*kv = gguf_find(f, key);
	if (!*kv)
		return tern_errf(e, TERN_ENOTFOUND, "key '%s' not found", key);
	return 0;
}

static int wrong_type(tern_err *e, const char *key, const struct gguf_value *v, const char *want)
{
	return tern_errf(e, TERN_ETYPE, "key '%s': type %s, expected %s", key,
			 gguf_vtype_name(v->type), want);
}

int gguf_get_i64(const gguf_file *f, const char *key, int64_t *out, tern_err *e)
{
	const struct gguf_kv *kv;
	int rc = get_kv(f, key, &kv, e);
	if (rc)
		return rc;
	if (!gguf_value_is_int(&kv->v))
		return wrong_type(e, key, &kv->v, "an integer");
	if (kv->v.type == GGUF_T_U64 && tern_le64(kv->v.p) > (uint64_t)INT64_MAX)
		return tern_errf(e, TERN_ERANGE, "key '%s': value out of range", key);
	*out = gguf_value_i64(&kv->v);
	return 0;
}

int gguf_get_u64(const gguf_file *f, const char *key, uint64_t *out, tern_err *e)
{
	const struct gguf_kv *kv;
	int rc = get_kv(f, key, &kv, e);
	if (rc)
		return rc;
	if (!gguf_value_is_int(&kv->v))
		return wrong_type(e, key, &kv->v, "an integer");
	if (kv->v.type != GGUF_T_U64 && gguf_value_i64(&kv->v) < 0)
		return tern_errf(e, TERN_ERANGE, "key '%s': negative value", key);
	*out = gguf_value_u64(&kv->v);
	return 0;
}

int gguf_get_u32(const gguf_file *f, const char *key, uint32_t *out, tern_err *e)
{
	uint64_t v;
	int rc = gguf_get_u64(f, key, &v, e);
	if (rc)
		return rc;
	if (v > UINT32_MAX)
		return tern_errf(e, TERN_ERANGE, "key '%s': value %llu does not fit 32 bits", key,
				 (unsigned long long)v);
	*out = (uint32_t)v;
	return 0;
}

int gguf_get_f32(const gguf_file *f, const char *key, float *out, tern_err *e)
{
	const struct gguf_kv *kv;
	int rc = get_kv(f, key, &kv, e);
	if (rc)
		return rc;
	if (kv->v.type != GGUF_T_F32 && kv->v.type != GGUF_T_F64)
		return wrong_type(e, key, &kv->v, "f32");
	*out = (float)gguf_value_f64(&kv->v);
	return 0;
}

int gguf_get_bool(const gguf_file *f, const char *key, bool *out, tern_err *e)
{
	const struct gguf_kv *kv;
	int rc = get_kv(f, key, &kv, e);
	if (rc)
		return rc;
	if (kv->v.type != GGUF_T_BOOL)
		return wrong_type(e, key, &kv->v, "bool");
	*out = kv->v.p[0] != 0;
	return 0;
}

int gguf_get_str(const gguf_file *f, const char *key, struct tern_str *out, tern_err *e)
{
	const struct gguf_kv *kv;
	int rc = get_kv(f, key, &kv, e);
	if (rc)
		return rc;
	if (kv->v.type != GGUF_T_STRING)
		return wrong_type(e, key, &kv->v, "str");
	*out = kv->v.s;
	return 0;
}

int gguf_get_arr(const gguf_file *f, const char *key, enum gguf_vtype elem,
		 const struct gguf_value **out, tern_err *e)
{
	const struct gguf_kv *kv;
	int rc = get_kv(f, key, &kv, e);
	if (rc)
		return rc;
	if (kv->v.type != GGUF_T_ARRAY)
		return wrong_type(e, key, &kv->v, "arr");
	if (elem != GGUF_T_COUNT && kv->v.elem != elem)
		return tern_errf(e, TERN_ETYPE, "key '%s': array of %s, expected array of %s", key,
				 gguf_vtype_name(kv->v.elem), gguf_vtype_name(elem));
	*out = &kv->v;
	return 0;
}

/* Size of one validated encoded value of `type` at p. */
static uint64_t enc_size(uint32_t type, const uint8_t *p)
{
	if (vtype_size[type])
		return vtype_size[type];
	if (type == GGUF_T_STRING)
		return 8 + tern_le64(p);
	uint32_t elem = tern_le32(p);
	uint64_t n = tern_le64(p + 4), s = 12;
	if (vtype_size[elem])
		return s + n * vtype_size[elem];
	for (uint64_t i = 0; i < n; i++)
		s += enc_size(elem, p + s);
	return s;
}

/* Fill out with the value of `type` encoded at p (validated). */
static void decode_at(uint32_t type, const uint8_t *p, struct gguf_value *out)
{
	memset(out, 0, sizeof *out);
	out->type = (enum gguf_vtype)type;
	if (type == GGUF_T_STRING) {
		out->s.len = tern_le64(p);
		out->s.ptr = (const char *)p + 8;
		out->p = p;
		out->size = 8 + out->s.len;
	} else if (type == GGUF_T_ARRAY) {
		out->elem = (enum gguf_vtype)tern_le32(p);
		out->n = tern_le64(p + 4);
		out->p = p + 12;
		out->size = enc_size(type, p) - 12;
	} else {
		out->p = p;
		out->size = vtype_size[type];
	}
}

int gguf_arr_elem(const struct gguf_value *arr, uint64_t i, struct gguf_value *out)
{
	if (arr->type != GGUF_T_ARRAY)
		return TERN_ETYPE;
	if (i >= arr->n)
		return TERN_ERANGE;
	size_t es = vtype_size[arr->elem];
	if (es) {
		decode_at(arr->elem, arr->p + i * es, out);
		return 0;
	}
	const uint8_t *p = arr->p;
	for (uint64_t k = 0; k < i; k++)
		p += enc_size(arr->elem, p);
	decode_at(arr->elem, p, out);
	return 0;
}

int gguf_arr_next(const struct gguf_value *arr, uint64_t *i, uint64_t *pos, struct gguf_value *out)
{
	if (arr->type != GGUF_T_ARRAY)
		return TERN_ETYPE;
	if (*i >= arr->n)
		return TERN_ERANGE;
	const uint8_t *p = arr->p + *pos;
	decode_at(arr->elem, p, out);
	*pos += enc_size(arr->elem, p);
	(*i)++;
	return 0;
}

struct tern_str gguf_kv_arr_str(const struct gguf_kv *kv, uint64_t i)
{
	struct tern_str s = {0};
	if (kv->v.type != GGUF_T_ARRAY || kv->v.elem != GGUF_T_STRING || i >= kv->v.n || !kv->str_off)
		return s;
	const uint8_t *p = kv->v.p + (kv->str_off64 ? ((const uint64_t *)kv->str_off)[i]
						     : ((const uint32_t *)kv->str_off)[i]);
	s.len = tern_le64(p);
	s.ptr = (const char *)p + 8;
	return s;
}

/* ---- writer ------------------------------------------------------------- */

struct wbuf {
	uint8_t *p;
	size_t n, cap;
};

struct wkv {
	char *key;
	uint32_t type;
	struct wbuf body;
};

struct wtensor {
	char *name;
	uint32_t type, n_dims;
	uint64_t ne[GGUF_MAX_DIMS];
	uint64_t nbytes, offset;
	void *data;
};

struct gguf_writer {
	struct wkv *kv;
	size_t n_kv, cap_kv;
	struct wtensor *t;
	size_t n_t, cap_t;
	uint32_t alignment;
	int err;
	char msg[TERN_ERR_MSG_MAX];
};

static int wb_put(struct wbuf *b, const void *p, size_t n)
{
	if (n > SIZE_MAX - b->n)
		return TERN_ENOMEM;
	if (b->n + n > b->cap) {
		size_t c = b->cap ? b->cap : 64;
		while (c < b->n + n)
			c = c > SIZE_MAX / 2 ? b->n + n : c * 2;
		uint8_t *q = realloc(b->p, c);
		if (!q)
			return TERN_ENOMEM;
		b->p = q;
		b->cap = c;
	}
	if (n)
		memcpy(b->p + b->n, p, n);
	b->n += n;
	return 0;
}

static int wb_u32(struct wbuf *b, uint32_t v)
{
	uint8_t x[4] = {(uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24)};
	return wb_put(b, x, 4);
}

static int wb_u64(struct wbuf *b, uint64_t v)
{
	return wb_u32(b, (uint32_t)v) || wb_u32(b, (uint32_t)(v >> 32)) ? TERN_ENOMEM : 0;
}

static int wb_str(struct wbuf *b, const char *s, uint64_t n)
{
	return wb_u64(b, n) || wb_put(b, s, (size_t)n) ? TERN_ENOMEM : 0;
}

gguf_writer *gguf_writer_new(void)
{
	gguf_writer *w = calloc(1, sizeof *w);
	if (w)
		w->alignment = GGUF_DEFAULT_ALIGNMENT;
	return w;
}

void gguf_writer_free(gguf_writer *w)
{
	if (!w)
		return;
	for (size_t i = 0; i < w->n_kv; i++) {
		free(w->kv[i].key);
		free(w->kv[i].body.p);
	}
	for (size_t i = 0; i < w->n_t; i++) {
		free(w->t[i].name);
		free(w->t[i].data);
	}
	free(w->kv);
	free(w->t);
	free(w);
}

static int wfail(gguf_writer *w, int code, const char *fmt, const char *arg)
{
	if (!w->err) {
		w->err = code;
		snprintf(w->msg, sizeof w->msg, fmt, arg);
	}
	return code;
}

int gguf_writer_set_alignment(gguf_writer *w, uint32_t align)
{
	if (align == 0 || (align & (align - 1)))
		return wfail(w, TERN_EINVAL, "alignment %s is not a power of two", "");
	w->alignment = align;
	return 0;
}

static struct wkv *new_kv(gguf_writer *w, const char *key, uint32_t type)
{
	if (w->err)
		return NULL;
	if (w->n_kv == w->cap_kv) {
		size_t c = w->cap_kv ? w->cap_kv * 2 : 16;
		struct wkv *p = realloc(w->kv, c * sizeof *p);
		if (!p) {
			wfail(w, TERN_ENOMEM, "out of memory adding key '%s'", key);
			return NULL;
		}
		w->kv = p;
		w->cap_kv = c;
	}
	struct wkv *kv = &w->kv[w->n_kv];
	memset(kv, 0, sizeof *kv);
	kv->key = strdup(key);
	if (!kv->key) {
		wfail(w, TERN_ENOMEM, "out of memory adding key '%s'", key);
		return NULL;
	}
	kv->type = type;
	w->n_kv++;
	return kv;
}

static int set_scalar(gguf_writer *w, const char *key, uint32_t type, const void *le, size_t n)
{
	struct wkv *kv = new_kv(w, key, type);
	if (!kv)
		return w->err;
	if (wb_put(&kv->body, le, n))
		return wfail(w, TERN_ENOMEM, "out of memory adding key '%s'", key);
	return 0;
}

/* Scalars are stored little-endian; the hosts we build for are little-endian. */
int gguf_writer_u8(gguf_writer *w, const char *k, uint8_t v) { return set_scalar(w, k, GGUF_T_U8, &v, 1); }
int gguf_writer_i8(gguf_writer *w, const char *k, int8_t v) { return set_scalar(w, k, GGUF_T_I8, &v, 1); }
int gguf_writer_u16(gguf_writer *w, const char *k, uint16_t v) { return set_scalar(w, k, GGUF_T_U16, &v, 2); }
int gguf_writer_i16(gguf_writer *w, const char *k, int16_t v) { return set_scalar(w, k, GGUF_T_I16, &v, 2); }
int gguf_writer_u32(gguf_writer *w, const char *k, uint32_t v) { return set_scalar(w, k, GGUF_T_U32, &v, 4); }
int gguf_writer_i32(gguf_writer *w, const char *k, int32_t v) { return set_scalar(w, k, GGUF_T_I32, &v, 4); }
int gguf_writer_u64(gguf_writer *w, const char *k, uint64_t v) { return set_scalar(w, k, GGUF_T_U64, &v, 8); }
int gguf_writer_i64(gguf_writer *w, const char *k, int64_t v) { return set_scalar(w, k, GGUF_T_I64, &v, 8); }
int gguf_writer_f32(gguf_writer *w, const char *k, float v) { return set_scalar(w, k, GGUF_T_F32, &v, 4); }
int gguf_writer_f64(gguf_writer *w, const char *k, double v) { return set_scalar(w, k, GGUF_T_F64, &v, 8); }
int gguf_writer_bool(gguf_writer *w, const char *k, bool v)
{
	uint8_t b = v ? 1 : 0;
	return set_scalar(w, k, GGUF_T_BOOL, &b, 1);
}

int gguf_writer_strn(gguf_writer *w, const char *key, const char *v, uint64_t len)
{
	struct wkv *kv = new_kv(w, key, GGUF_T_STRING);
	if (!kv)
		return w->err;
	if (wb_str(&kv->body, v, len))
		return wfail(w, TERN_ENOMEM, "out of memory adding key '%s'", key);
	return 0;
}

int gguf_writer_str(gguf_writer *w, const char *key, const char *v)
{
	return gguf_writer_strn(w, key, v, strlen(v));
}

int gguf_writer_arr(gguf_writer *w, const char *key, enum gguf_vtype elem, const void *data, uint64_t n)
{
	if ((unsigned)elem >= GGUF_T_COUNT || !vtype_size[elem])
		return wfail(w, TERN_EINVAL, "key '%s': gguf_writer_arr needs a fixed-size element type", key);
	if (n > SIZE_MAX / vtype_size[elem])
		return wfail(w, TERN_ENOMEM, "key '%s': array too large", key);
	struct wkv *kv = new_kv(w, key, GGUF_T_ARRAY);
	if (!kv)
		return w->err;
	if (wb_u32(&kv->body, elem) || wb_u64(&kv->body, n) ||
	    wb_put(&kv->body, data, (size_t)n * vtype_size[elem]))
		return wfail(w, TERN_ENOMEM, "out of memory adding key '%s'", key);
	return 0;
}

int gguf_writer_arr_str(gguf_writer *w, const char *key, const char *const *v, uint64_t n)
{
	struct wkv *kv = new_kv(w, key, GGUF_T_ARRAY);
	if (!kv)
		return w->err;
	if (wb_u32(&kv->body, GGUF_T_STRING) || wb_u64(&kv->body, n))
		return wfail(w, TERN_ENOMEM, "out of memory adding key '%s'", key);
	for (uint64_t i = 0; i < n; i++)
		if (wb_str(&kv->body, v[i], strlen(v[i])))
			return wfail(w, TERN_ENOMEM, "out of memory adding key '%s'", key);
	return 0;
}

int gguf_writer_raw(gguf_writer *w, const char *key, enum gguf_vtype type, const void *body, size_t size)
{
	struct wkv *kv = new_kv(w, key, type);
	if (!kv)
		return w->err;
	if (wb_put(&kv->body, body, size))
		return wfail(w, TERN_ENOMEM, "out of memory adding key '%s'", key);
	return 0;
}

int gguf_writer_tensor(gguf_writer *w, const char *name, uint32_t type, uint32_t n_dims,
		       const uint64_t *ne, const void *data)
{
	if (w->err)
		return w->err;
	if (n_dims == 0 || n_dims > GGUF_MAX_DIMS)
		return wfail(w, TERN_EINVAL, "tensor '%s': n_dims must be 1..4", name);
	uint64_t nel = 1;
	for (uint32_t d = 0; d < n_dims; d++) {
		if (!ne[d] || nel > UINT64_MAX / ne[d])
			return wfail(w, TERN_EINVAL, "tensor '%s': bad shape", name);
		nel *= ne[d];
	}
	bool ok;
	size_t row = quant_row_size(type, ne[0], &ok);
	if (!ok || (row && nel / ne[0] > SIZE_MAX / row))
		return wfail(w, TERN_EINVAL, "tensor '%s': bad type or row length for its block size", name);
	if (w->n_t == w->cap_t) {
		size_t c = w->cap_t ? w->cap_t * 2 : 16;
		struct wtensor *p = realloc(w->t, c * sizeof *p);
		if (!p)
			return wfail(w, TERN_ENOMEM, "out of memory adding tensor '%s'", name);
		w->t = p;
		w->cap_t = c;
	}
	struct wtensor *t = &w->t[w->n_t];
	memset(t, 0, sizeof *t);
	t->type = type;
	t->n_dims = n_dims;
	for (int d = 0; d < GGUF_MAX_DIMS; d++)
		t->ne[d] = d < (int)n_dims ? ne[d] : 1;
	t->nbytes = (uint64_t)row * (nel / ne[0]);
	t->name = strdup(name);
	t->data = malloc(t->nbytes ? (size_t)t->nbytes : 1);
	if (!t->name || !t->data) {
		free(t->name);
		free(t->data);
		return wfail(w, TERN_ENOMEM, "out of memory adding tensor '%s'", name);
	}
	if (data)
		memcpy(t->data, data, (size_t)t->nbytes);
	else
		memset(t->data, 0, (size_t)t->nbytes);
	w->n_t++;
	return 0;
}

static int pad_to(struct wbuf *b, uint32_t align)
{
	static const uint8_t zero[256];
	size_t pad = (align - b->n % align) % align;
	while (pad) {
		size_t k = pad < sizeof zero ? pad : sizeof zero;
		if (wb_put(b, zero, k))
			return TERN_ENOMEM;
		pad -= k;
	}
	return 0;
}

int gguf_writer_write_mem(gguf_writer *w, void **buf, size_t *size, tern_err *e)
{
	*buf = NULL;
	*size = 0;
	if (w->err)
		return tern_errf(e, w->err, "%s", w->msg);
	bool has_align = false;
	for (size_t i = 0; i < w->n_kv; i++)
		if (strcmp(w->kv[i].key, "general.alignment") == 0)
			has_align = true;
	if (!has_align && w->alignment != GGUF_DEFAULT_ALIGNMENT &&
	    gguf_writer_u32(w, "general.alignment", w->alignment))
		return tern_errf(e, w->err, "%s", w->msg);

	struct wbuf b = {0};
	int bad = wb_put(&b, GGUF_MAGIC, 4) || wb_u32(&b, 3) || wb_u64(&b, w->n_t) || wb_u64(&b, w->n_kv);
	for (size_t i = 0; i < w->n_kv && !bad; i++) {
		struct wkv *kv = &w->kv[i];
		bad = wb_str(&b, kv->key, strlen(kv->key)) || wb_u32(&b, kv->type) ||
		      wb_put(&b, kv->body.p, kv->body.n);
	}
	uint64_t off = 0;
	for (size_t i = 0; i < w->n_t && !bad; i++) {
		struct wtensor *t = &w->t[i];
		t->offset = off;
		bad = wb_str(&b, t->name, strlen(t->name)) || wb_u32(&b, t->n_dims);
		for (uint32_t d = 0; d < t->n_dims && !bad; d++)
			bad = wb_u64(&b, t->ne[d]);
		bad = bad || wb_u32(&b, t->type) || wb_u64(&b, t->offset);
		off += (t->nbytes + w->alignment - 1) / w->alignment * w->alignment;
	}
	if (!bad && w->n_t)
		bad = pad_to(&b, w->alignment);
	for (size_t i = 0; i < w->n_t && !bad; i++) {
		bad = wb_put(&b, w->t[i].data, (size_t)w->t[i].nbytes);
		if (!bad && i + 1 < w->n_t)
			bad = pad_to(&b, w->alignment);
	}
	if (bad) {
		free(b.p);
		return tern_errf(e, TERN_ENOMEM, "out of memory serialising GGUF");
	}
	*buf = b.p;
	*size = b.n;
	return 0;
}

int gguf_writer_write(gguf_writer *w, const char *path, tern_err *e)
{
	void *buf;
	size_t size;
	int rc = gguf_writer_write_mem(w, &buf, &size, e);
	if (rc)
		return rc;
	FILE *fp = fopen(path, "wb");
	if (!fp) {
		rc = tern_errf(e, TERN_EIO, "cannot create: %s", strerror(errno));
	} else {
		if (fwrite(buf, 1, size, fp) != size)
			rc = tern_errf(e, TERN_EIO, "write failed: %s", strerror(errno));
		if (fclose(fp) != 0 && !rc)
			rc = tern_errf(e, TERN_EIO, "write failed: %s", strerror(errno));
	}
	free(buf);
	return rc;
}
