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

#include "lib/core/mapfile.h"
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

	size_t *kv_hash;           /* [kv_cap] index + 1, 0 = empty */
	size_t kv_cap;
	size_t *t_hash;            /* [t_cap] index + 1, 0 = empty */
	size_t t_cap;
};

/* ---- small helpers ------------------------------------------------------ */

static uint16_t le16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }
static uint32_t le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static uint64_t le64(const uint8_t *p) { return (uint64_t)le32(p) | (uint64_t)le32(p + 4) << 32; }

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

static uint64_t hash_bytes(const char *p, uint64_t n)
{
	uint64_t h = 1469598103934665603ull;
	for (uint64_t i = 0; i < n; i++) {
		h ^= (uint8_t)p[i];
		h *= 1099511628211ull;
	}
	return h;
}

/* Printable, bounded rendering of a (possibly hostile) name for messages. */
static const char *show(struct tern_str s, char *buf, size_t cap)
{
	size_t o = 0;
	for (uint64_t i = 0; i < s.len && o + 5 < cap; i++) {
		unsigned char c = (unsigned char)s.ptr[i];
		if (c >= 0x20 && c < 0x7f && c != '\'') {
			buf[o++] = (char)c;
		} else {
			static const char hex[] = "0123456789abcdef";
			buf[o++] = '\\';
			buf[o++] = 'x';
			buf[o++] = hex[c >> 4];
			buf[o++] = hex[c & 15];
		}
	}
	if (o + 5 >= cap && s.len)
		memcpy(buf + (o = cap - 4), "...", 3), o += 3;
	buf[o] = 0;
	return buf;
}

/* ---- parsing ------------------------------------------------------------ */

struct rd {
	const uint8_t *p;
	size_t size;
	size_t off;
	tern_err *e;
	const struct gguf_open_opts *opts;
	int problems;
};

static size_t left(const struct rd *r) { return r->size - r->off; }

static int need(struct rd *r, size_t n, const char *what)
{
	if (n > left(r))
		return tern_errf(r->e, TERN_EFORMAT,
				 "truncated at offset %zu: %s needs %zu bytes, %zu left",
				 r->off, what, n, left(r));
	return 0;
}

static int rd_u32(struct rd *r, uint32_t *v, const char *what)
{
	int rc = need(r, 4, what);
	if (rc)
		return rc;
	*v = le32(r->p + r->off);
	r->off += 4;
	return 0;
}

static int rd_u64(struct rd *r, uint64_t *v, const char *what)
{
	int rc = need(r, 8, what);
	if (rc)
		return rc;
	*v = le64(r->p + r->off);
	r->off += 8;
	return 0;
}

static int rd_str(struct rd *r, struct tern_str *s, const char *what)
{
	uint64_t n;
	size_t at = r->off;
	int rc = rd_u64(r, &n, what);
	if (rc)
		return rc;
	if (n > left(r))
		return tern_errf(r->e, TERN_EFORMAT,
				 "%s at offset %zu: length %llu runs past the end of the file (%zu bytes left)",
				 what, at, (unsigned long long)n, left(r));
	s->ptr = (const char *)r->p + r->off;
	s->len = n;
	r->off += (size_t)n;
	return 0;
}

/* Report a problem that does not stop parsing. Strict mode: it becomes the
 * error. Lenient mode: passed to the callback, parsing goes on. */
static int problem(struct rd *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int problem(struct rd *r, const char *fmt, ...)
{
	char msg[TERN_ERR_MSG_MAX];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	r->problems++;
	if (r->opts && r->opts->lenient) {
		if (r->opts->problem)
			r->opts->problem(r->opts->ud, msg);
		return 0;
	}
	return tern_errf(r->e, TERN_EFORMAT, "%s", msg);
}

/* Parse one value body of `type` at the cursor into v. `ctx` names the key
 * for messages. Nested arrays recurse with depth + 1. */
static int parse_value(struct rd *r, uint32_t type, int depth, struct gguf_value *v,
		       const char *ctx)
{
	memset(v, 0, sizeof *v);
	if (type >= GGUF_T_COUNT)
		return tern_errf(r->e, TERN_EFORMAT, "key '%s' at offset %zu: unknown value type %u",
				 ctx, r->off, type);
	v->type = (enum gguf_vtype)type;
	size_t start = r->off;
	if (type == GGUF_T_STRING) {
		char what[128];
		snprintf(what, sizeof what, "key '%s': string value", ctx);
		int rc = rd_str(r, &v->s, what);
		if (rc)
			return rc;
		v->p = r->p + start;
		v->size = r->off - start;
		return 0;
	}
	if (type != GGUF_T_ARRAY) {
		if (need(r, vtype_size[type], "value"))
			return tern_errf(r->e, TERN_EFORMAT,
					 "key '%s': truncated %s value at offset %zu", ctx,
					 vtype_names[type], r->off);
		if (type == GGUF_T_BOOL && r->p[r->off] > 1)
			return tern_errf(r->e, TERN_EFORMAT,
					 "key '%s' at offset %zu: bool value %u is neither 0 nor 1",
					 ctx, r->off, r->p[r->off]);
		v->p = r->p + r->off;
		v->size = vtype_size[type];
		r->off += vtype_size[type];
		return 0;
	}

	if (depth >= GGUF_MAX_DEPTH)
		return tern_errf(r->e, TERN_EFORMAT,
				 "key '%s' at offset %zu: arrays nested deeper than %d levels",
				 ctx, r->off, GGUF_MAX_DEPTH);
	uint32_t elem;
	uint64_t n;
	if (rd_u32(r, &elem, "array element type") || rd_u64(r, &n, "array length"))
		return tern_errf(r->e, TERN_EFORMAT, "key '%s': truncated array header at offset %zu",
				 ctx, start);
	if (elem >= GGUF_T_COUNT)
		return tern_errf(r->e, TERN_EFORMAT,
				 "key '%s' at offset %zu: unknown array element type %u", ctx, start, elem);
	v->elem = (enum gguf_vtype)elem;
	v->n = n;
	v->p = r->p + r->off;
	/* Smallest encoding of one element: bounds the count before any walk. */
	size_t min_elem = vtype_size[elem] ? vtype_size[elem] : elem == GGUF_T_STRING ? 8 : 12;
	if (n > left(r) / min_elem)
		return tern_errf(r->e, TERN_EFORMAT,
				 "key '%s' at offset %zu: array of %llu %s elements runs past the end of the file",
				 ctx, start, (unsigned long long)n, vtype_names[elem]);
	if (vtype_size[elem]) {
		if (elem == GGUF_T_BOOL)
			for (uint64_t i = 0; i < n; i++)
				if (r->p[r->off + i] > 1)
					return tern_errf(r->e, TERN_EFORMAT,
							 "key '%s' at offset %zu: bool value %u is neither 0 nor 1",
							 ctx, r->off + (size_t)i, r->p[r->off + i]);
		r->off += (size_t)n * vtype_size[elem];
	} else {
		for (uint64_t i = 0; i < n; i++) {
			struct gguf_value sub;
			int rc = parse_value(r, elem, depth + 1, &sub, ctx);
			if (rc)
				return rc;
		}
	}
	v->size = (uint64_t)(r->p + r->off - v->p);
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

static int hash_build(size_t **tab, size_t *cap, uint64_t n, const struct tern_str *(*name)(const gguf_file *, uint64_t),
		      const gguf_file *f, struct rd *r, const char *what)
{
	size_t c = 16;
	while (c < n * 2)
		c *= 2;
	*tab = calloc(c, sizeof **tab);
	if (!*tab)
		return tern_errf(r->e, TERN_ENOMEM, "out of memory for the %s index", what);
	*cap = c;
	for (uint64_t i = 0; i < n; i++) {
		const struct tern_str *s = name(f, i);
		size_t h = (size_t)hash_bytes(s->ptr, s->len) & (c - 1);
		for (;;) {
			size_t j = (*tab)[h];
			if (!j) {
				(*tab)[h] = (size_t)i + 1;
				break;
			}
			const struct tern_str *o = name(f, j - 1);
			if (o->len == s->len && memcmp(o->ptr, s->ptr, s->len) == 0) {
				char b[96];
				int rc = problem(r, "duplicate %s '%s' (entries %zu and %llu)", what,
						 show(*s, b, sizeof b), j - 1, (unsigned long long)i);
				if (rc)
					return rc;
				break;
			}
			h = (h + 1) & (c - 1);
		}
	}
	return 0;
}

static const struct tern_str *kv_name(const gguf_file *f, uint64_t i) { return &f->kv[i].key; }
static const struct tern_str *t_name(const gguf_file *f, uint64_t i) { return &f->t[i].name; }

static int parse_kvs(gguf_file *f, struct rd *r, uint64_t n_kv)
{
	uint64_t cap = 0;
	for (uint64_t i = 0; i < n_kv; i++) {
		int rc = grow((void **)&f->kv, &cap, i, sizeof *f->kv);
		if (rc)
			return tern_errf(r->e, rc, "out of memory reading key %llu", (unsigned long long)i);
		struct gguf_kv *kv = &f->kv[i];
		memset(kv, 0, sizeof *kv);
		kv->offset = r->off;
		char what[64];
		snprintf(what, sizeof what, "key %llu of %llu", (unsigned long long)i, (unsigned long long)n_kv);
		if ((rc = rd_str(r, &kv->key, what)))
			return rc;
		char kb[96];
		show(kv->key, kb, sizeof kb);
		if (kv->key.len > MAX_KEY_LEN)
			return tern_errf(r->e, TERN_EFORMAT, "key at offset %llu is %llu bytes long (limit %u)",
					 (unsigned long long)kv->offset, (unsigned long long)kv->key.len, MAX_KEY_LEN);
		uint32_t type;
		if (rd_u32(r, &type, "value type"))
			return tern_errf(r->e, TERN_EFORMAT, "key '%s': truncated value type at offset %zu", kb, r->off);
		rc = parse_value(r, type, 0, &kv->v, kb);
		if (rc)
			return rc;
		f->n_kv = i + 1;
		if (kv->v.type == GGUF_T_ARRAY && kv->v.elem == GGUF_T_STRING && kv->v.n) {
			/* n strings already proved to fit: n * 8 <= bytes parsed. */
			uint64_t *off = malloc((size_t)kv->v.n * sizeof *off);
			if (!off)
				return tern_errf(r->e, TERN_ENOMEM, "out of memory indexing key '%s'", kb);
			const uint8_t *p = kv->v.p;
			for (uint64_t k = 0; k < kv->v.n; k++) {
				off[k] = (uint64_t)(p - kv->v.p);
				p += 8 + le64(p);
			}
			kv->str_off = off;
		}
	}
	return 0;
}

static int parse_tensors(gguf_file *f, struct rd *r, uint64_t n_t)
{
	uint64_t cap = 0;
	for (uint64_t i = 0; i < n_t; i++) {
		int rc = grow((void **)&f->t, &cap, i, sizeof *f->t);
		if (rc)
			return tern_errf(r->e, rc, "out of memory reading tensor %llu", (unsigned long long)i);
		struct tern_tensor_view *t = &f->t[i];
		memset(t, 0, sizeof *t);
		t->info_offset = r->off;
		char what[64];
		snprintf(what, sizeof what, "name of tensor %llu of %llu", (unsigned long long)i,
			 (unsigned long long)n_t);
		if ((rc = rd_str(r, &t->name, what)))
			return rc;
		char nb[96];
		show(t->name, nb, sizeof nb);
		if (t->name.len > MAX_TENSOR_NAME &&
		    (rc = problem(r, "tensor '%s' at offset %llu: name is %llu bytes long (limit %d)", nb,
				  (unsigned long long)t->info_offset, (unsigned long long)t->name.len, MAX_TENSOR_NAME)))
			return rc;
		if (rd_u32(r, &t->n_dims, "n_dims"))
			return tern_errf(r->e, TERN_EFORMAT, "tensor '%s': truncated n_dims at offset %zu", nb, r->off);
		if (t->n_dims == 0 || t->n_dims > GGUF_MAX_DIMS)
			return tern_errf(r->e, TERN_EFORMAT, "tensor '%s' at offset %llu: n_dims %u (must be 1..%d)",
					 nb, (unsigned long long)t->info_offset, t->n_dims, GGUF_MAX_DIMS);
		for (int d = 0; d < GGUF_MAX_DIMS; d++)
			t->ne[d] = 1;
		for (uint32_t d = 0; d < t->n_dims; d++)
			if (rd_u64(r, &t->ne[d], "dimension"))
				return tern_errf(r->e, TERN_EFORMAT, "tensor '%s': truncated dimensions at offset %zu",
						 nb, r->off);
		if (rd_u32(r, &t->type, "tensor type") || rd_u64(r, &t->offset, "tensor offset"))
			return tern_errf(r->e, TERN_EFORMAT, "tensor '%s': truncated type/offset at offset %zu",
					 nb, r->off);
		f->n_tensors = i + 1;
	}
	return 0;
}

/* Per-tensor checks that need the data section: shape, type, size, placement. */
static int check_tensors(gguf_file *f, struct rd *r)
{
	for (uint64_t i = 0; i < f->n_tensors; i++) {
		struct tern_tensor_view *t = &f->t[i];
		char nb[96];
		show(t->name, nb, sizeof nb);
		int rc = 0;
		bool ok = true;
		uint64_t nel = 1;
		for (uint32_t d = 0; d < t->n_dims && ok; d++) {
			if (t->ne[d] == 0 || t->ne[d] > (uint64_t)INT64_MAX) {
				rc = problem(r, "tensor '%s': dimension %u is %llu", nb, d,
					     (unsigned long long)t->ne[d]);
				ok = false;
			} else if (nel > (uint64_t)INT64_MAX / t->ne[d]) {
				rc = problem(r, "tensor '%s': element count overflows (shape too large)", nb);
				ok = false;
			} else {
				nel *= t->ne[d];
			}
		}
		if (rc)
			return rc;
		const struct quant_type_info *ti = quant_type_info(t->type);
		if (ok && !quant_type_valid(t->type)) {
			if (ti)
				rc = problem(r, "tensor '%s': type %u (%s) was removed from the format", nb,
					     t->type, ti->name);
			else
				rc = problem(r, "tensor '%s': unknown tensor type %u", nb, t->type);
			ok = false;
		}
		if (rc)
			return rc;
		if (ok && t->ne[0] % ti->blck) {
			rc = problem(r, "tensor '%s': row length %llu is not a multiple of the %s block size %u",
				     nb, (unsigned long long)t->ne[0], ti->name, ti->blck);
			ok = false;
		}
		if (rc)
			return rc;
		if (ok) {
			bool rok;
			uint64_t row = quant_row_size(t->type, t->ne[0], &rok);
			uint64_t rows = nel / t->ne[0];
			if (!rok || (row && rows > UINT64_MAX / row)) {
				rc = problem(r, "tensor '%s': byte size overflows", nb);
				ok = false;
			} else {
				t->nbytes = row * rows;
			}
		}
		if (rc)
			return rc;
		if (t->offset % f->alignment) {
			rc = problem(r, "tensor '%s': data offset %llu is not a multiple of the alignment %u",
				     nb, (unsigned long long)t->offset, f->alignment);
			ok = false;
		}
		if (rc)
			return rc;
		if (ok) {
			uint64_t avail = f->data_offset <= f->size ? f->size - f->data_offset : 0;
			if (t->offset > avail || t->nbytes > avail - t->offset) {
				rc = problem(r, "tensor '%s': data [%llu, +%llu) lies outside the file (data section has %llu bytes)",
					     nb, (unsigned long long)t->offset, (unsigned long long)t->nbytes,
					     (unsigned long long)avail);
				ok = false;
			}
		}
		if (rc)
			return rc;
		t->data = ok ? f->base + f->data_offset + t->offset : NULL;
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

static int check_overlap(gguf_file *f, struct rd *r)
{
	if (f->n_tensors < 2)
		return 0;
	struct span *sp = malloc((size_t)f->n_tensors * sizeof *sp);
	if (!sp)
		return tern_errf(r->e, TERN_ENOMEM, "out of memory checking tensor placement");
	size_t n = 0;
	for (uint64_t i = 0; i < f->n_tensors; i++)
		if (f->t[i].data)
			sp[n++] = (struct span){f->t[i].offset, f->t[i].offset + f->t[i].nbytes, i};
	qsort(sp, n, sizeof *sp, cmp_span);
	int rc = 0;
	size_t far = 0; /* span reaching furthest so far */
	for (size_t k = 1; k < n && !rc; k++) {
		if (sp[k].off < sp[far].end) {
			char na[96], nb[96];
			const struct tern_tensor_view *a = &f->t[sp[far].i], *b = &f->t[sp[k].i];
			rc = problem(r, "tensors '%s' and '%s' overlap (data at %llu+%llu and %llu)",
				     show(a->name, na, sizeof na), show(b->name, nb, sizeof nb),
				     (unsigned long long)a->offset, (unsigned long long)a->nbytes,
				     (unsigned long long)b->offset);
		}
		if (sp[k].end > sp[far].end)
			far = k;
	}
	free(sp);
	return rc;
}

static int parse(gguf_file *f, struct rd *r)
{
	if (r->size < 4 || memcmp(r->p, GGUF_MAGIC, 4) != 0) {
		if (r->size >= 4 && memcmp(r->p, "FUGG", 4) == 0)
			return tern_errf(r->e, TERN_EUNSUPPORTED, "big-endian GGUF file (magic 'FUGG'); only little-endian files are supported");
		return tern_errf(r->e, TERN_EFORMAT, "not a GGUF file (bad magic%s)",
				 r->size < 4 ? ": file shorter than 4 bytes" : "");
	}
	r->off = 4;
	if (rd_u32(r, &f->version, "version"))
		return TERN_EFORMAT;
	uint32_t v = f->version;
	if (v == 0x02000000u || v == 0x03000000u || v == 0x01000000u)
		return tern_errf(r->e, TERN_EUNSUPPORTED,
				 "big-endian GGUF file (version field reads 0x%08x); only little-endian files are supported", v);
	if (v == 1)
		return tern_errf(r->e, TERN_EUNSUPPORTED, "GGUF version 1 is not supported (only 2 and 3)");
	if (v != 2 && v != 3)
		return tern_errf(r->e, TERN_EUNSUPPORTED, "unsupported GGUF version %u (only 2 and 3)", v);
	uint64_t n_t, n_kv;
	if (rd_u64(r, &n_t, "tensor count") || rd_u64(r, &n_kv, "key count"))
		return TERN_EFORMAT;
	/* A key needs >= 13 bytes (length, type, 1 byte of value), a tensor info >= 32. */
	if (n_kv > left(r) / 13)
		return tern_errf(r->e, TERN_EFORMAT, "truncated or corrupt: key count %llu at offset 16 cannot fit in the %zu bytes left",
				 (unsigned long long)n_kv, left(r));
	if (n_t > left(r) / 32)
		return tern_errf(r->e, TERN_EFORMAT, "truncated or corrupt: tensor count %llu at offset 8 cannot fit in the %zu bytes left",
				 (unsigned long long)n_t, left(r));
	int rc = parse_kvs(f, r, n_kv);
	if (rc)
		return rc;
	rc = hash_build(&f->kv_hash, &f->kv_cap, f->n_kv, kv_name, f, r, "key");
	if (rc)
		return rc;

	f->alignment = GGUF_DEFAULT_ALIGNMENT;
	const struct gguf_kv *al = gguf_find(f, "general.alignment");
	if (al) {
		if (al->v.type != GGUF_T_U32)
			return tern_errf(r->e, TERN_EFORMAT, "key 'general.alignment': type %s, expected u32",
					 gguf_vtype_name(al->v.type));
		uint32_t a = le32(al->v.p);
		if (a == 0 || (a & (a - 1)))
			return tern_errf(r->e, TERN_EFORMAT,
					 "key 'general.alignment': %u is not a power of two", a);
		f->alignment = a;
	}

	rc = parse_tensors(f, r, n_t);
	if (rc)
		return rc;
	rc = hash_build(&f->t_hash, &f->t_cap, f->n_tensors, t_name, f, r, "tensor name");
	if (rc)
		return rc;
	uint64_t pad = (f->alignment - r->off % f->alignment) % f->alignment;
	f->data_offset = (uint64_t)r->off + pad;
	if (f->n_tensors && f->data_offset > r->size)
		return tern_errf(r->e, TERN_EFORMAT,
				 "truncated: data section would start at %llu, past the end of the file (%zu bytes)",
				 (unsigned long long)f->data_offset, r->size);
	rc = check_tensors(f, r);
	if (rc)
		return rc;
	return check_overlap(f, r);
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
	struct rd r = {.p = buf, .size = size, .e = e, .opts = opts};
	int rc = parse(f, &r);
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
	free(f->kv_hash);
	free(f->t_hash);
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

static size_t lookup(const size_t *tab, size_t cap, const char *name,
		     const struct tern_str *(*get)(const gguf_file *, uint64_t), const gguf_file *f)
{
	if (!tab)
		return 0;
	size_t n = strlen(name);
	size_t h = (size_t)hash_bytes(name, n) & (cap - 1);
	for (;;) {
		size_t j = tab[h];
		if (!j)
			return 0;
		const struct tern_str *s = get(f, j - 1);
		if (s->len == n && memcmp(s->ptr, name, n) == 0)
			return j;
		h = (h + 1) & (cap - 1);
	}
}

const struct gguf_kv *gguf_find(const gguf_file *f, const char *key)
{
	size_t j = lookup(f->kv_hash, f->kv_cap, key, kv_name, f);
	return j ? &f->kv[j - 1] : NULL;
}

const struct tern_tensor_view *gguf_find_tensor(const gguf_file *f, const char *name)
{
	size_t j = lookup(f->t_hash, f->t_cap, name, t_name, f);
	return j ? &f->t[j - 1] : NULL;
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
	case GGUF_T_U16: return le16(p);
	case GGUF_T_I16: return (int16_t)le16(p);
	case GGUF_T_U32: return le32(p);
	case GGUF_T_I32: return (int32_t)le32(p);
	case GGUF_T_U64: return (int64_t)le64(p);
	case GGUF_T_I64: return (int64_t)le64(p);
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
		return le64(v->p);
	return (uint64_t)gguf_value_i64(v);
}

double gguf_value_f64(const struct gguf_value *v)
{
	if (v->type == GGUF_T_F32) {
		uint32_t b = le32(v->p);
		float x;
		memcpy(&x, &b, 4);
		return x;
	}
	if (v->type == GGUF_T_F64) {
		uint64_t b = le64(v->p);
		double x;
		memcpy(&x, &b, 8);
		return x;
	}
	if (v->type == GGUF_T_U64)
		return (double)le64(v->p);
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
	if (kv->v.type == GGUF_T_U64 && le64(kv->v.p) > (uint64_t)INT64_MAX)
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
		return 8 + le64(p);
	uint32_t elem = le32(p);
	uint64_t n = le64(p + 4), s = 12;
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
		out->s.len = le64(p);
		out->s.ptr = (const char *)p + 8;
		out->p = p;
		out->size = 8 + out->s.len;
	} else if (type == GGUF_T_ARRAY) {
		out->elem = (enum gguf_vtype)le32(p);
		out->n = le64(p + 4);
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
	const uint8_t *p = kv->v.p + kv->str_off[i];
	s.len = le64(p);
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
		rc = tern_errf(e, TERN_EIO, "%s: cannot create: %s", path, strerror(errno));
	} else {
		if (fwrite(buf, 1, size, fp) != size)
			rc = tern_errf(e, TERN_EIO, "%s: write failed: %s", path, strerror(errno));
		if (fclose(fp) != 0 && !rc)
			rc = tern_errf(e, TERN_EIO, "%s: write failed: %s", path, strerror(errno));
	}
	free(buf);
	return rc;
}
