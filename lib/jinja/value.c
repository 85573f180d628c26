/* value.c - the render arena and Jinja's values as Python sees them:
 * truthiness, ==, <, str() and repr() (so that {{ [1, 'a'] }} prints
 * "[1, 'a']" and 1.0 prints "1.0"), and the JSON both ways: the context
 * read with jansson (key order kept, integers kept apart from reals) and
 * tojson written as json.dumps(ensure_ascii=False) writes it. */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/jinja/jinja_int.h"

/* ---- arena --------------------------------------------------------------- */
struct jj_block {
	struct jj_block *next;
	size_t used, cap;
	max_align_t data[];
};

#define JJ_BLOCK (64u << 10)

void *jj_alloc(struct jj_arena *a, size_t n)
{
	n = (n + 15) & ~(size_t)15;
	if (n == 0)
		n = 16;
	struct jj_block *b = a->head;
	if (!b || b->cap - b->used < n) {
		size_t cap = n > JJ_BLOCK / 4 ? n : JJ_BLOCK;
		if (a->limit && (cap > a->limit || a->total > a->limit - cap)) {
			a->refused = true;
			return NULL;
		}
		b = malloc(sizeof *b + cap);
		if (!b)
			return NULL;
		a->total += cap;
		b->cap = cap;
		b->used = 0;
		if (n > JJ_BLOCK / 4 && a->head) {
			/* a big one goes behind the current block, which keeps filling */
			b->next = a->head->next;
			a->head->next = b;
		} else {
			b->next = a->head;
			a->head = b;
		}
	}
	void *p = (char *)b->data + b->used;
	b->used += n;
	memset(p, 0, n);
	return p;
}

void jj_arena_free(struct jj_arena *a)
{
	for (struct jj_block *b = a->head, *nx; b; b = nx) {
		nx = b->next;
		free(b);
	}
	a->head = NULL;
	a->total = 0;
}

int jj_fail(struct jj_ctx *c, int code, const char *fmt, ...)
{
	char msg[400];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	return tern_errf(c->e, code, "line %u, column %u: %s", c->line, c->col, msg);
}

int jj_oom(struct jj_ctx *c)
{
	if (c->a.refused)
		return jj_fail(c, TERN_ERANGE, "the template took more than %zu bytes of memory", c->a.limit);
	return jj_fail(c, TERN_ENOMEM, "out of memory");
}

/* ---- values -------------------------------------------------------------- */
int jv_strdup(struct jj_ctx *c, const char *p, size_t n, struct jv *out)
{
	if (n > c->max_output)
		return jj_fail(c, TERN_ERANGE, "a string longer than the output limit (%zu bytes)", c->max_output);
	char *s = jj_alloc(&c->a, n + 1);
	if (!s)
		return jj_oom(c);
	if (n)
		memcpy(s, p, n);
	*out = jv_str(s, n);
	return 0;
}

int jv_new_list(struct jj_ctx *c, size_t cap, struct jv *out)
{
	struct jj_list *l = jj_alloc(&c->a, sizeof *l);
	if (!l)
		return jj_oom(c);
	if (cap) {
		if (cap > SIZE_MAX / sizeof(struct jv) / 4 || !(l->v = jj_alloc(&c->a, cap * sizeof *l->v)))
			return jj_oom(c);
		l->cap = cap;
	}
	*out = (struct jv){.t = JV_LIST};
	out->u.l = l;
	return 0;
}

int jv_list_push(struct jj_ctx *c, struct jv *list, struct jv x)
{
	struct jj_list *l = list->u.l;
	if (l->n == l->cap) {
		size_t cap = l->cap ? 2 * l->cap : 8;
		struct jv *v = jj_alloc(&c->a, cap * sizeof *v);
		if (!v)
			return jj_oom(c);
		if (l->n)
			memcpy(v, l->v, l->n * sizeof *v);
		l->v = v;
		l->cap = cap;
	}
	l->v[l->n++] = x;
	return 0;
}

int jv_new_dict(struct jj_ctx *c, size_t cap, struct jv *out)
{
	struct jj_dict *d = jj_alloc(&c->a, sizeof *d);
	if (!d)
		return jj_oom(c);
	if (cap) {
		d->k = jj_alloc(&c->a, cap * sizeof *d->k);
		d->v = jj_alloc(&c->a, cap * sizeof *d->v);
		if (!d->k || !d->v)
			return jj_oom(c);
		d->cap = cap;
	}
	*out = (struct jv){.t = JV_DICT};
	out->u.d = d;
	return 0;
}

static bool key_eq(struct jv a, struct jv b)
{
	if (a.t == JV_STR && b.t == JV_STR)
		return a.u.s.n == b.u.s.n && (a.u.s.n == 0 || memcmp(a.u.s.p, b.u.s.p, a.u.s.n) == 0);
	if (jv_is_num(a) && jv_is_num(b))
		return jv_num(a) == jv_num(b);
	if (a.t == JV_NONE && b.t == JV_NONE)
		return true;
	return false;
}

const struct jv *jv_dict_get(const struct jj_dict *d, struct jv k)
{
	for (size_t i = 0; i < d->n; i++)
		if (key_eq(d->k[i], k))
			return &d->v[i];
	return NULL;
}

const struct jv *jv_dict_getn(const struct jj_dict *d, const char *k, size_t n)
{
	for (size_t i = 0; i < d->n; i++)
		if (d->k[i].t == JV_STR && d->k[i].u.s.n == n && memcmp(d->k[i].u.s.p, k, n) == 0)
			return &d->v[i];
	return NULL;
}

int jv_dict_set(struct jj_ctx *c, struct jj_dict *d, struct jv k, struct jv x)
{
	for (size_t i = 0; i < d->n; i++)
		if (key_eq(d->k[i], k)) {
			d->v[i] = x;
			return 0;
		}
	if (d->n == d->cap) {
		size_t cap = d->cap ? 2 * d->cap : 8;
		struct jv *kk = jj_alloc(&c->a, cap * sizeof *kk), *vv = jj_alloc(&c->a, cap * sizeof *vv);
		if (!kk || !vv)
			return jj_oom(c);
		if (d->n) {
			memcpy(kk, d->k, d->n * sizeof *kk);
			memcpy(vv, d->v, d->n * sizeof *vv);
		}
		d->k = kk;
		d->v = vv;
		d->cap = cap;
	}
	d->k[d->n] = k;
	d->v[d->n++] = x;
	return 0;
}

bool jv_truthy(struct jv v)
{
	switch (v.t) {
	case JV_UNDEF: case JV_NONE: return false;
	case JV_BOOL: return v.u.b;
	case JV_INT: return v.u.i != 0;
	case JV_FLOAT: return v.u.f != 0;
	case JV_STR: return v.u.s.n != 0;
	case JV_LIST: return v.gen == JG_GEN || v.u.l->n != 0;
	case JV_DICT: return v.u.d->n != 0;
	default: return true;
	}
}

bool jv_is_num(struct jv v) { return v.t == JV_INT || v.t == JV_FLOAT || v.t == JV_BOOL; }

double jv_num(struct jv v)
{
	return v.t == JV_FLOAT ? v.u.f : v.t == JV_INT ? (double)v.u.i : v.t == JV_BOOL ? v.u.b : 0;
}

const char *jv_type_name(struct jv v)
{
	switch (v.t) {
	case JV_UNDEF: return "Undefined";
	case JV_NONE: return "NoneType";
	case JV_BOOL: return "bool";
	case JV_INT: return "int";
	case JV_FLOAT: return "float";
	case JV_STR: return "str";
	case JV_LIST:
		switch (v.gen) {
		case JG_GEN: return "generator";
		case JG_ITEMS: return "dict_items";
		case JG_KEYS: return "dict_keys";
		case JG_VALUES: return "dict_values";
		default: return v.tuple ? "tuple" : "list";
		}
	case JV_DICT: return "dict";
	case JV_NS: return "Namespace";
	case JV_MACRO: return "Macro";
	case JV_FUNC: return "function";
	case JV_METHOD: return "builtin_function_or_method";
	default: return "LoopContext";
	}
}

int jv_equal(struct jj_ctx *c, struct jv a, struct jv b, bool *eq)
{
	if (jv_is_num(a) && jv_is_num(b)) {
		if (a.t != JV_FLOAT && b.t != JV_FLOAT)
			*eq = (a.t == JV_INT ? a.u.i : a.u.b) == (b.t == JV_INT ? b.u.i : b.u.b);
		else
			*eq = jv_num(a) == jv_num(b);
		return 0;
	}
	*eq = false;
	if (a.t != b.t)
		return 0;
	switch (a.t) {
	case JV_UNDEF: case JV_NONE: *eq = true; return 0;
	case JV_STR: *eq = key_eq(a, b); return 0;
	case JV_LIST:
		if (a.gen == JG_GEN || b.gen == JG_GEN) {
			*eq = a.u.l == b.u.l;
			return 0;
		}
		if (a.tuple != b.tuple || a.u.l->n != b.u.l->n)
			return 0;
		if (++c->depth > c->max_depth)
			return jj_fail(c, TERN_ERANGE, "values nested deeper than %u", c->max_depth);
		for (size_t i = 0; i < a.u.l->n; i++) {
			int rc = jv_equal(c, a.u.l->v[i], b.u.l->v[i], eq);
			if (rc || !*eq) {
				c->depth--;
				return rc;
			}
		}
		c->depth--;
		*eq = true;
		return 0;
	case JV_DICT:
		if (a.u.d->n != b.u.d->n)
			return 0;
		if (++c->depth > c->max_depth)
			return jj_fail(c, TERN_ERANGE, "values nested deeper than %u", c->max_depth);
		for (size_t i = 0; i < a.u.d->n; i++) {
			const struct jv *o = jv_dict_get(b.u.d, a.u.d->k[i]);
			if (!o) {
				c->depth--;
				return 0;
			}
			int rc = jv_equal(c, a.u.d->v[i], *o, eq);
			if (rc || !*eq) {
				c->depth--;
				return rc;
			}
		}
		c->depth--;
		*eq = true;
		return 0;
	default:
		*eq = memcmp(&a.u, &b.u, sizeof a.u) == 0;
		return 0;
	}
}

int jv_less(struct jj_ctx *c, struct jv a, struct jv b, bool *lt)
{
	if (jv_is_num(a) && jv_is_num(b)) {
		if (a.t != JV_FLOAT && b.t != JV_FLOAT)
			*lt = (a.t == JV_INT ? a.u.i : a.u.b) < (b.t == JV_INT ? b.u.i : b.u.b);
		else
			*lt = jv_num(a) < jv_num(b);
		return 0;
	}
	if (a.t == JV_STR && b.t == JV_STR) {
		size_t n = a.u.s.n < b.u.s.n ? a.u.s.n : b.u.s.n;
		int r = n ? memcmp(a.u.s.p, b.u.s.p, n) : 0;
		*lt = r < 0 || (r == 0 && a.u.s.n < b.u.s.n);
		return 0;
	}
	if (a.t == JV_LIST && b.t == JV_LIST) {
		if (++c->depth > c->max_depth)
			return jj_fail(c, TERN_ERANGE, "values nested deeper than %u", c->max_depth);
		size_t n = a.u.l->n < b.u.l->n ? a.u.l->n : b.u.l->n;
		for (size_t i = 0; i < n; i++) {
			bool eq;
			int rc = jv_equal(c, a.u.l->v[i], b.u.l->v[i], &eq);
			if (!rc && !eq)
				rc = jv_less(c, a.u.l->v[i], b.u.l->v[i], lt);
			if (rc || !eq) {
				c->depth--;
				return rc;
			}
		}
		c->depth--;
		*lt = a.u.l->n < b.u.l->n;
		return 0;
	}
	return jj_fail(c, TERN_EFORMAT, "'<' not supported between instances of '%s' and '%s'",
		       jv_type_name(a), jv_type_name(b));
}

/* ---- text ---------------------------------------------------------------- */
static int buf_grow(struct jj_ctx *c, struct jj_buf *b, size_t more)
{
	if (b->n + more > c->max_output)
		return jj_fail(c, TERN_ERANGE, "output longer than the limit (%zu bytes)", c->max_output);
	if (b->n + more + 1 <= b->cap)
		return 0;
	size_t cap = b->cap ? b->cap : 64;
	while (cap < b->n + more + 1)
		cap *= 2;
	char *p = jj_alloc(&c->a, cap);
	if (!p)
		return jj_oom(c);
	if (b->n)
		memcpy(p, b->p, b->n);
	b->p = p;
	b->cap = cap;
	return 0;
}

int jj_buf_put(struct jj_ctx *c, struct jj_buf *b, const char *p, size_t n)
{
	if (n == 0)
		return 0;
	int rc = buf_grow(c, b, n);
	if (rc)
		return rc;
	memcpy(b->p + b->n, p, n);
	b->n += n;
	b->p[b->n] = 0;
	return 0;
}

int jj_buf_putc(struct jj_ctx *c, struct jj_buf *b, char ch) { return jj_buf_put(c, b, &ch, 1); }

int jj_buf_printf(struct jj_ctx *c, struct jj_buf *b, const char *fmt, ...)
{
	char tmp[256];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
	va_end(ap);
	if (n < 0)
		n = 0;
	if ((size_t)n >= sizeof tmp)
		n = sizeof tmp - 1;
	return jj_buf_put(c, b, tmp, (size_t)n);
}

int jj_buf_str(struct jj_ctx *c, struct jj_buf *b, struct jv *out)
{
	if (!b->p) {
		*out = jv_str("", 0);
		return 0;
	}
	*out = jv_str(b->p, b->n);
	return 0;
}

size_t jj_float_repr(double f, char buf[40])
{
	if (isnan(f))
		return (size_t)snprintf(buf, 40, "nan");
	if (isinf(f))
		return (size_t)snprintf(buf, 40, f < 0 ? "-inf" : "inf");
	char tmp[40];
	for (int prec = 1; prec <= 17; prec++) {
		snprintf(tmp, sizeof tmp, "%.*e", prec - 1, f);
		if (strtod(tmp, NULL) == f)
			break;
	}
	/* tmp: [-]d[.ddd]e[+-]XX -> sign, digits, exponent */
	const char *s = tmp;
	bool neg = *s == '-';
	if (neg)
		s++;
	char dig[24];
	int nd = 0;
	for (; *s && *s != 'e'; s++)
		if (*s != '.')
			dig[nd++] = *s;
	int ex = atoi(s + 1);
	while (nd > 1 && dig[nd - 1] == '0')
		nd--;
	size_t o = 0;
	if (neg)
		buf[o++] = '-';
	if (ex >= -4 && ex < 16) {
		if (ex >= 0) {
			for (int i = 0; i <= ex; i++)
				buf[o++] = i < nd ? dig[i] : '0';
			buf[o++] = '.';
			if (nd > ex + 1)
				for (int i = ex + 1; i < nd; i++)
					buf[o++] = dig[i];
			else
				buf[o++] = '0';
		} else {
			buf[o++] = '0';
			buf[o++] = '.';
			for (int i = 0; i < -ex - 1; i++)
				buf[o++] = '0';
			for (int i = 0; i < nd; i++)
				buf[o++] = dig[i];
		}
	} else {
		buf[o++] = dig[0];
		if (nd > 1) {
			buf[o++] = '.';
			for (int i = 1; i < nd; i++)
				buf[o++] = dig[i];
		}
		o += (size_t)snprintf(buf + o, 40 - o, "e%c%02d", ex < 0 ? '-' : '+', ex < 0 ? -ex : ex);
	}
	buf[o] = 0;
	return o;
}

static uint32_t dec_utf8(const unsigned char *p, size_t n, size_t *len)
{
	unsigned char b = p[0];
	int k = b < 0x80 ? 1 : (b >> 5) == 6 ? 2 : (b >> 4) == 14 ? 3 : (b >> 3) == 30 ? 4 : 0;
	if (k == 0 || (size_t)k > n) {
		*len = 1;
		return 0xFFFD;
	}
	uint32_t cp = k == 1 ? b : k == 2 ? (b & 0x1Fu) : k == 3 ? (b & 0x0Fu) : (b & 0x07u);
	for (int i = 1; i < k; i++) {
		if ((p[i] & 0xC0) != 0x80) {
			*len = 1;
			return 0xFFFD;
		}
		cp = (cp << 6) | (p[i] & 0x3Fu);
	}
	*len = (size_t)k;
	return cp;
}

size_t jj_utf8_count(const char *p, size_t n)
{
	size_t c = 0;
	for (size_t i = 0; i < n; i++)
		c += ((unsigned char)p[i] & 0xC0) != 0x80;
	return c;
}

size_t jj_utf8_offset(const char *p, size_t n, size_t cp)
{
	size_t c = 0;
	for (size_t i = 0; i < n; i++)
		if (((unsigned char)p[i] & 0xC0) != 0x80) {
			if (c == cp)
				return i;
			c++;
		}
	return n;
}

/* Python's str.isprintable, approximated for the code points that matter
 * in chat text: controls, the odd spaces and format characters. */
static bool py_printable(uint32_t cp)
{
	if (cp < 0x20 || (cp >= 0x7F && cp <= 0xA0) || cp == 0xAD)
		return false;
	if ((cp >= 0x2000 && cp <= 0x200F) || (cp >= 0x2028 && cp <= 0x202F) ||
	    (cp >= 0x205F && cp <= 0x206F) || cp == 0x3000 || cp == 0xFEFF || cp == 0x1680 ||
	    (cp >= 0xFFF9 && cp <= 0xFFFB) || (cp >= 0xE000 && cp <= 0xF8FF) || (cp >= 0xD800 && cp <= 0xDFFF) ||
	    cp >= 0xF0000 || (cp >= 0xE0000 && cp <= 0xE007F))
		return false;
	return true;
}

static int write_pystr(struct jj_ctx *c, struct jj_buf *b, const char *p, size_t n)
{
	bool sq = memchr(p, '\'', n) != NULL, dq = memchr(p, '"', n) != NULL;
	char q = (sq && !dq) ? '"' : '\'';
	int rc = jj_buf_putc(c, b, q);
	size_t i = 0;
	while (!rc && i < n) {
		size_t run = i;
		while (run < n && (unsigned char)p[run] >= 0x20 && (unsigned char)p[run] < 0x7F && p[run] != '\\' &&
		       p[run] != q)
			run++;
		if (run > i) {
			rc = jj_buf_put(c, b, p + i, run - i);
			i = run;
			continue;
		}
		size_t len;
		uint32_t cp = dec_utf8((const unsigned char *)p + i, n - i, &len);
		if (cp == '\\' || cp == (uint32_t)q)
			rc = jj_buf_printf(c, b, "\\%c", (char)cp);
		else if (cp == '\n')
			rc = jj_buf_put(c, b, "\\n", 2);
		else if (cp == '\r')
			rc = jj_buf_put(c, b, "\\r", 2);
		else if (cp == '\t')
			rc = jj_buf_put(c, b, "\\t", 2);
		else if (py_printable(cp))
			rc = jj_buf_put(c, b, p + i, len);
		else if (cp < 0x100)
			rc = jj_buf_printf(c, b, "\\x%02x", cp);
		else if (cp < 0x10000)
			rc = jj_buf_printf(c, b, "\\u%04x", cp);
		else
			rc = jj_buf_printf(c, b, "\\U%08x", cp);
		i += len;
	}
	return rc ? rc : jj_buf_putc(c, b, q);
}

int jv_write_repr(struct jj_ctx *c, struct jj_buf *b, struct jv v, uint32_t depth)
{
	if (depth > c->max_depth)
		return jj_fail(c, TERN_ERANGE, "values nested deeper than %u", c->max_depth);
	int rc = 0;
	switch (v.t) {
	case JV_STR:
		return write_pystr(c, b, v.u.s.p, v.u.s.n);
	case JV_LIST:
		if (v.gen == JG_GEN)
			return jj_buf_put(c, b, "<generator object>", 18);
		if (v.gen) {
			struct jv l = v;
			l.gen = JG_LIST;
			if ((rc = jj_buf_printf(c, b, "%s(", jv_type_name(v))) || (rc = jv_write_repr(c, b, l, depth)))
				return rc;
			return jj_buf_putc(c, b, ')');
		}
		rc = jj_buf_putc(c, b, v.tuple ? '(' : '[');
		for (size_t i = 0; !rc && i < v.u.l->n; i++) {
			if (i)
				rc = jj_buf_put(c, b, ", ", 2);
			if (!rc)
				rc = jv_write_repr(c, b, v.u.l->v[i], depth + 1);
		}
		if (!rc && v.tuple && v.u.l->n == 1)
			rc = jj_buf_putc(c, b, ',');
		return rc ? rc : jj_buf_putc(c, b, v.tuple ? ')' : ']');
	case JV_DICT:
	case JV_NS:
		rc = jj_buf_put(c, b, v.t == JV_NS ? "<Namespace {" : "{", v.t == JV_NS ? 12 : 1);
		for (size_t i = 0; !rc && i < v.u.d->n; i++) {
			if (i)
				rc = jj_buf_put(c, b, ", ", 2);
			if (!rc)
				rc = jv_write_repr(c, b, v.u.d->k[i], depth + 1);
			if (!rc)
				rc = jj_buf_put(c, b, ": ", 2);
			if (!rc)
				rc = jv_write_repr(c, b, v.u.d->v[i], depth + 1);
		}
		return rc ? rc : jj_buf_put(c, b, v.t == JV_NS ? "}>" : "}", v.t == JV_NS ? 2 : 1);
	case JV_UNDEF:
		return 0;
	default:
		return jv_write_str(c, b, v);
	}
}

int jv_write_str(struct jj_ctx *c, struct jj_buf *b, struct jv v)
{
	char tmp[40];
	switch (v.t) {
	case JV_UNDEF: return 0;
	case JV_NONE: return jj_buf_put(c, b, "None", 4);
	case JV_BOOL: return v.u.b ? jj_buf_put(c, b, "True", 4) : jj_buf_put(c, b, "False", 5);
	case JV_INT: return jj_buf_printf(c, b, "%lld", (long long)v.u.i);
	case JV_FLOAT: return jj_buf_put(c, b, tmp, jj_float_repr(v.u.f, tmp));
	case JV_STR: return jj_buf_put(c, b, v.u.s.p, v.u.s.n);
	case JV_LIST: case JV_DICT: case JV_NS: return jv_write_repr(c, b, v, 0);
	case JV_MACRO: return jj_buf_printf(c, b, "<Macro '%s'>", v.u.m->def->name ? v.u.m->def->name : "caller");
	case JV_FUNC: return jj_buf_put(c, b, "<function>", 10);
	/* Python adds " at 0x...", an address no one can depend on */
	case JV_METHOD:
		return jj_buf_printf(c, b, "<built-in method %s of %s object>", v.u.bm->name, jv_type_name(v.u.bm->obj));
	default: return jj_buf_printf(c, b, "<LoopContext %zu/%zu>", v.u.loop->i + 1, v.u.loop->n);
	}
}

int jv_to_str(struct jj_ctx *c, struct jv v, struct jv *out)
{
	if (v.t == JV_STR) {
		*out = v;
		return 0;
	}
	struct jj_buf b = {0};
	int rc = jv_write_str(c, &b, v);
	return rc ? rc : jj_buf_str(c, &b, out);
}

/* ---- JSON ---------------------------------------------------------------- */
static int from_json(struct jj_ctx *c, json_t *j, struct jv *out, uint32_t depth)
{
	if (depth > 4096)
		return jj_fail(c, TERN_ERANGE, "context nested too deeply");
	int rc;
	switch (json_typeof(j)) {
	case JSON_OBJECT: {
		if ((rc = jv_new_dict(c, json_object_size(j), out)))
			return rc;
		const char *k;
		json_t *x;
		json_object_foreach(j, k, x) {
			struct jv kv, vv;
			if ((rc = jv_strdup(c, k, strlen(k), &kv)) || (rc = from_json(c, x, &vv, depth + 1)))
				return rc;
			struct jj_dict *d = out->u.d;
			d->k[d->n] = kv; /* keys are unique in a jansson object */
			d->v[d->n++] = vv;
		}
		return 0;
	}
	case JSON_ARRAY: {
		size_t n = json_array_size(j);
		if ((rc = jv_new_list(c, n, out)))
			return rc;
		for (size_t i = 0; i < n; i++) {
			struct jv vv;
			if ((rc = from_json(c, json_array_get(j, i), &vv, depth + 1)))
				return rc;
			out->u.l->v[out->u.l->n++] = vv;
		}
		return 0;
	}
	case JSON_STRING:
		return jv_strdup(c, json_string_value(j), json_string_length(j), out);
	case JSON_INTEGER: *out = jv_int((int64_t)json_integer_value(j)); return 0;
	case JSON_REAL: *out = jv_float(json_real_value(j)); return 0;
	case JSON_TRUE: *out = jv_bool(true); return 0;
	case JSON_FALSE: *out = jv_bool(false); return 0;
	default: *out = jv_none(); return 0;
	}
}

int jv_from_json(struct jj_ctx *c, const char *text, size_t len, struct jv *out)
{
	json_error_t je;
	json_t *j = json_loadb(text, len, JSON_ALLOW_NUL, &je);
	if (!j)
		return tern_errf(c->e, TERN_EINVAL, "context: line %d, column %d: %s", je.line, je.column, je.text);
	if (!json_is_object(j)) {
		json_decref(j);
		return tern_errf(c->e, TERN_EINVAL, "context: not a JSON object");
	}
	int rc = from_json(c, j, out, 0);
	json_decref(j);
	return rc;
}

static int json_str(struct jj_ctx *c, struct jj_buf *b, const char *p, size_t n, bool ascii)
{
	int rc = jj_buf_putc(c, b, '"');
	size_t i = 0;
	while (!rc && i < n) {
		size_t run = i;
		while (run < n && (unsigned char)p[run] >= 0x20 && p[run] != '"' && p[run] != '\\' &&
		       !(ascii && (unsigned char)p[run] >= 0x7F))
			run++;
		if (run > i) {
			rc = jj_buf_put(c, b, p + i, run - i);
			i = run;
			continue;
		}
		unsigned char ch = (unsigned char)p[i];
		const char *esc = ch == '"' ? "\\\"" : ch == '\\' ? "\\\\" : ch == '\n' ? "\\n" : ch == '\r' ? "\\r"
				  : ch == '\t' ? "\\t" : ch == '\b' ? "\\b" : ch == '\f' ? "\\f" : NULL;
		if (esc) {
			rc = jj_buf_put(c, b, esc, 2);
			i++;
		} else if (ch < 0x80) {
			rc = jj_buf_printf(c, b, "\\u%04x", ch);
			i++;
		} else {
			size_t len;
			uint32_t cp = dec_utf8((const unsigned char *)p + i, n - i, &len);
			if (cp >= 0x10000) {
				cp -= 0x10000;
				rc = jj_buf_printf(c, b, "\\u%04x\\u%04x", 0xD800 + (cp >> 10), 0xDC00 + (cp & 0x3FF));
			} else {
				rc = jj_buf_printf(c, b, "\\u%04x", cp);
			}
			i += len;
		}
	}
	return rc ? rc : jj_buf_putc(c, b, '"');
}

static int json_newline(struct jj_ctx *c, struct jj_buf *b, const struct jj_json_opts *o, uint32_t level)
{
	int rc = jj_buf_putc(c, b, '\n');
	for (uint64_t i = 0; !rc && i < (uint64_t)o->indent * level; i++)
		rc = jj_buf_putc(c, b, ' ');
	return rc;
}

struct kv_sort {
	struct jv k, v;
};

static int json_key(struct jj_ctx *c, struct jj_buf *b, struct jv k, const struct jj_json_opts *o)
{
	char tmp[40];
	switch (k.t) {
	case JV_STR: return json_str(c, b, k.u.s.p, k.u.s.n, o->ascii);
	case JV_INT: return jj_buf_printf(c, b, "\"%lld\"", (long long)k.u.i);
	case JV_FLOAT: jj_float_repr(k.u.f, tmp); return jj_buf_printf(c, b, "\"%s\"", tmp);
	case JV_BOOL: return jj_buf_printf(c, b, "\"%s\"", k.u.b ? "true" : "false");
	case JV_NONE: return jj_buf_put(c, b, "\"null\"", 6);
	default:
		return jj_fail(c, TERN_EFORMAT, "keys must be str, int, float, bool or None, not %s", jv_type_name(k));
	}
}

/* Python's json.dumps spells the non-finite floats as JavaScript does. */
static int json_float(struct jj_ctx *c, struct jj_buf *b, double f)
{
	char tmp[40];
	if (isnan(f))
		return jj_buf_put(c, b, "NaN", 3);
	if (isinf(f))
		return f < 0 ? jj_buf_put(c, b, "-Infinity", 9) : jj_buf_put(c, b, "Infinity", 8);
	return jj_buf_put(c, b, tmp, jj_float_repr(f, tmp));
}

static const char *json_item_sep(const struct jj_json_opts *o)
{
	/* with an indent, the newline follows the comma: no trailing space */
	return o->item_sep ? o->item_sep : o->indent >= 0 ? "," : ", ";
}

/* What goes before item i of a container at `depth`: the separator, then
 * the newline and indent when indenting. */
static int json_item_start(struct jj_ctx *c, struct jj_buf *b, const struct jj_json_opts *o, size_t i,
			   uint32_t depth)
{
	const char *isep = json_item_sep(o);
	int rc = i ? jj_buf_put(c, b, isep, strlen(isep)) : 0;
	if (!rc && o->indent >= 0)
		rc = json_newline(c, b, o, depth + 1);
	return rc;
}

/* The closing bracket, on its own line when indenting. */
static int json_close(struct jj_ctx *c, struct jj_buf *b, const struct jj_json_opts *o, uint32_t depth,
		      char close)
{
	int rc = o->indent >= 0 ? json_newline(c, b, o, depth) : 0;
	return rc ? rc : jj_buf_putc(c, b, close);
}

static int json_list(struct jj_ctx *c, struct jj_buf *b, struct jv v, const struct jj_json_opts *o,
		     uint32_t depth)
{
	if (v.gen)
		return jj_fail(c, TERN_EFORMAT, "Object of type %s is not JSON serializable", jv_type_name(v));
	if (v.u.l->n == 0)
		return jj_buf_put(c, b, "[]", 2);
	int rc = jj_buf_putc(c, b, '[');
	for (size_t i = 0; !rc && i < v.u.l->n; i++) {
		rc = json_item_start(c, b, o, i, depth);
		if (!rc)
			rc = jv_write_json(c, b, v.u.l->v[i], o, depth + 1);
	}
	return rc ? rc : json_close(c, b, o, depth, ']');
}

/* The order a dict's items are written in: insertion order, or the keys'
 * order with sort_keys. Insertion sort: dicts are small. */
static int json_key_order(struct jj_ctx *c, const struct jj_dict *d, bool sort, size_t **out)
{
	size_t *ord = jj_alloc(&c->a, d->n * sizeof *ord);
	if (!ord)
		return jj_oom(c);
	for (size_t i = 0; i < d->n; i++)
		ord[i] = i;
	for (size_t i = 1; sort && i < d->n; i++)
		for (size_t j = i; j > 0; j--) {
			bool lt;
			int rc = jv_less(c, d->k[ord[j]], d->k[ord[j - 1]], &lt);
			if (rc)
				return rc;
			if (!lt)
				break;
			size_t t = ord[j];
			ord[j] = ord[j - 1];
			ord[j - 1] = t;
		}
	*out = ord;
	return 0;
}

static int json_dict(struct jj_ctx *c, struct jj_buf *b, const struct jj_dict *d, const struct jj_json_opts *o,
		     uint32_t depth)
{
	const char *ksep = o->key_sep ? o->key_sep : ": ";
	if (d->n == 0)
		return jj_buf_put(c, b, "{}", 2);
	size_t *ord = NULL;
	int rc = json_key_order(c, d, o->sort_keys, &ord);
	if (rc)
		return rc;
	rc = jj_buf_putc(c, b, '{');
	for (size_t i = 0; !rc && i < d->n; i++) {
		rc = json_item_start(c, b, o, i, depth);
		if (!rc)
			rc = json_key(c, b, d->k[ord[i]], o);
		if (!rc)
			rc = jj_buf_put(c, b, ksep, strlen(ksep));
		if (!rc)
			rc = jv_write_json(c, b, d->v[ord[i]], o, depth + 1);
	}
	return rc ? rc : json_close(c, b, o, depth, '}');
}

int jv_write_json(struct jj_ctx *c, struct jj_buf *b, struct jv v, const struct jj_json_opts *o,
		  uint32_t depth)
{
	if (depth > c->max_depth)
		return jj_fail(c, TERN_ERANGE, "values nested deeper than %u", c->max_depth);
	switch (v.t) {
	case JV_NONE: return jj_buf_put(c, b, "null", 4);
	case JV_BOOL: return v.u.b ? jj_buf_put(c, b, "true", 4) : jj_buf_put(c, b, "false", 5);
	case JV_INT: return jj_buf_printf(c, b, "%lld", (long long)v.u.i);
	case JV_FLOAT: return json_float(c, b, v.u.f);
	case JV_STR: return json_str(c, b, v.u.s.p, v.u.s.n, o->ascii);
	case JV_LIST: return json_list(c, b, v, o, depth);
	case JV_DICT: return json_dict(c, b, v.u.d, o, depth);
	default:
		return jj_fail(c, TERN_EFORMAT, "Object of type %s is not JSON serializable", jv_type_name(v));
	}
}
