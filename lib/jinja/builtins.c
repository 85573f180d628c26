/* builtins.c - jinja2's filters and tests, the Python str/dict methods that
 * chat templates call, and the globals (range, namespace, dict,
 * raise_exception, strftime_now). Semantics follow jinja2 3.1 and Python 3:
 * `unique`, `sort` and `dictsort` compare strings case-insensitively by
 * default, `title` splits words on whitespace and -({[<, `indent` adds a
 * newline before splitting lines, `tojson` is transformers' json.dumps.
 * Case mapping is ASCII only (Python maps all of Unicode). The immutable
 * sandbox of transformers refuses list.append and the like: so do we. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lib/core/utf8.h"
#include "lib/jinja/jinja_int.h"

/* ---- arguments ----------------------------------------------------------- */
/* argument i (positional) or named kw; false when absent */
static bool arg(const struct jj_args *a, size_t i, const char *kw, struct jv *out)
{
	if (i < a->npos) {
		*out = a->pos[i];
		return true;
	}
	for (size_t k = 0; kw && k < a->nkw; k++)
		if (!strcmp(a->kwn[k], kw)) {
			*out = a->kwv[k];
			return true;
		}
	return false;
}

static int arg_int(struct jj_ctx *c, const struct jj_args *a, size_t i, const char *kw, int64_t def, int64_t *out)
{
	struct jv v;
	*out = def;
	if (!arg(a, i, kw, &v) || v.t == JV_NONE)
		return 0;
	if (v.t == JV_INT || v.t == JV_BOOL) {
		*out = v.t == JV_INT ? v.u.i : v.u.b;
		return 0;
	}
	return jj_fail(c, TERN_EFORMAT, "argument '%s' must be an integer, not %s", kw ? kw : "?", jv_type_name(v));
}

static bool arg_bool(const struct jj_args *a, size_t i, const char *kw, bool def)
{
	struct jv v;
	return arg(a, i, kw, &v) ? jv_truthy(v) : def;
}

static int need_str(struct jj_ctx *c, struct jv v, const char *what)
{
	if (v.t != JV_STR)
		return jj_fail(c, TERN_EFORMAT, "%s must be a string, not %s", what, jv_type_name(v));
	return 0;
}

/* ---- strings ------------------------------------------------------------- */
static uint32_t cp_at(const char *p, size_t n, size_t i, size_t *len)
{
	const unsigned char *s = (const unsigned char *)p + i;
	unsigned char b = s[0];
	size_t k = b < 0x80 ? 1 : (b >> 5) == 6 ? 2 : (b >> 4) == 14 ? 3 : (b >> 3) == 30 ? 4 : 1;
	if (i + k > n)
		k = 1;
	uint32_t cp = k == 1 ? b : k == 2 ? (b & 0x1Fu) : k == 3 ? (b & 0x0Fu) : (b & 0x07u);
	for (size_t j = 1; j < k; j++)
		cp = (cp << 6) | (s[j] & 0x3Fu);
	*len = k;
	return cp;
}

/* Python's str.isspace */
static bool py_space(uint32_t cp)
{
	return (cp >= 9 && cp <= 13) || (cp >= 0x1C && cp <= 0x20) || cp == 0x85 || cp == 0xA0 || cp == 0x1680 ||
	       (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 || cp == 0x202F || cp == 0x205F ||
	       cp == 0x3000;
}

static bool in_set(uint32_t cp, const char *set, size_t n)
{
	for (size_t i = 0; i < n;) {
		size_t l;
		if (cp_at(set, n, i, &l) == cp)
			return true;
		i += l;
	}
	return false;
}

/* strip: which 1 left, 2 right, 3 both; chars NULL: whitespace */
static struct jv strip(struct jv s, int which, const char *chars, size_t cn)
{
	size_t b = 0, e = s.u.s.n;
	const char *p = s.u.s.p;
	if (which & 1)
		while (b < e) {
			size_t l;
			uint32_t cp = cp_at(p, e, b, &l);
			if (chars ? !in_set(cp, chars, cn) : !py_space(cp))
				break;
			b += l;
		}
	if (which & 2)
		while (e > b) {
			size_t k = e - 1;
			while (k > b && ((unsigned char)p[k] & 0xC0) == 0x80)
				k--;
			size_t l;
			uint32_t cp = cp_at(p, e, k, &l);
			if (chars ? !in_set(cp, chars, cn) : !py_space(cp))
				break;
			e = k;
		}
	return jv_str(p + b, e - b);
}

static char up(char ch) { return ch >= 'a' && ch <= 'z' ? (char)(ch - 32) : ch; }
static char low(char ch) { return ch >= 'A' && ch <= 'Z' ? (char)(ch + 32) : ch; }
static bool is_alpha(char ch) { return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z'); }

/* Case of the letters of Latin-1, Latin Extended-A, Greek and Cyrillic
 * (Python maps all of Unicode; chat templates touch roles and the odd
 * name). Only pairs whose UTF-8 lengths agree. */
static uint32_t cp_upper(uint32_t cp)
{
	if (cp < 0x80)
		return (uint32_t)up((char)cp);
	if ((cp >= 0xE0 && cp <= 0xFE && cp != 0xF7) || (cp >= 0x3B1 && cp <= 0x3C9 && cp != 0x3C2) ||
	    (cp >= 0x430 && cp <= 0x44F))
		return cp - 32;
	if (cp >= 0x450 && cp <= 0x45F)
		return cp - 80;
	if (cp == 0xFF)
		return 0x178;
	if (cp == 0xB5)
		return 0x39C;
	if (cp == 0x3C2)
		return 0x3A3;
	/* Latin Extended-A: pairs, upper first; the parity flips twice */
	if (((cp >= 0x101 && cp <= 0x137) || (cp >= 0x14B && cp <= 0x177)) && (cp & 1) && cp != 0x131)
		return cp - 1;
	if (((cp >= 0x13A && cp <= 0x148) || (cp >= 0x17A && cp <= 0x17E)) && !(cp & 1))
		return cp - 1;
	return cp;
}

static uint32_t cp_lower(uint32_t cp)
{
	if (cp < 0x80)
		return (uint32_t)low((char)cp);
	if ((cp >= 0xC0 && cp <= 0xDE && cp != 0xD7) || (cp >= 0x391 && cp <= 0x3A9 && cp != 0x3A2) ||
	    (cp >= 0x410 && cp <= 0x42F))
		return cp + 32;
	if (cp >= 0x400 && cp <= 0x40F)
		return cp + 80;
	if (cp == 0x178)
		return 0xFF;
	if (((cp >= 0x100 && cp <= 0x136) || (cp >= 0x14A && cp <= 0x176)) && !(cp & 1) && cp != 0x130)
		return cp + 1;
	if (((cp >= 0x139 && cp <= 0x147) || (cp >= 0x179 && cp <= 0x17D)) && (cp & 1))
		return cp + 1;
	return cp;
}

static bool cp_cased(uint32_t cp) { return cp_upper(cp) != cp || cp_lower(cp) != cp; }

/* mode: 'u' upper, 'l' lower, 'c' capitalize, 't' Python title, 'j' jinja2's title filter */
static int map_case(struct jj_ctx *c, struct jv s, char mode, struct jv *out)
{
	int rc = jv_strdup(c, s.u.s.p, s.u.s.n, out);
	if (rc)
		return rc;
	char *p = (char *)out->u.s.p;
	bool start = true;
	size_t o = 0;
	for (size_t i = 0; i < s.u.s.n;) {
		size_t l;
		uint32_t cp = cp_at(s.u.s.p, s.u.s.n, i, &l), r = cp;
		switch (mode) {
		case 'u': r = cp_upper(cp); break;
		case 'l': r = cp_lower(cp); break;
		case 'c': r = i == 0 ? cp_upper(cp) : cp_lower(cp); break;
		case 't':
			r = start ? cp_upper(cp) : cp_lower(cp);
			start = !cp_cased(cp);
			break;
		default:
			r = start ? cp_upper(cp) : cp_lower(cp);
			start = py_space(cp) || cp == '-' || cp == '(' || cp == '{' || cp == '[' || cp == '<';
		}
		/* keep the bytes when the mapping would change the length (never for the pairs above) */
		char tmp[4];
		size_t k = tern_utf8_encode(tmp, r);
		if (k == l && l > 1 && (unsigned char)s.u.s.p[i] >= 0x80)
			memcpy(p + o, tmp, k);
		else if (l == 1 && k == 1)
			p[o] = tmp[0];
		else
			memcpy(p + o, s.u.s.p + i, l);
		o += l;
		i += l;
	}
	return 0;
}

static int str_replace(struct jj_ctx *c, struct jv s, struct jv old, struct jv nw, int64_t count, struct jv *out)
{
	struct jj_buf b = {0};
	int rc = 0;
	size_t i = 0;
	int64_t done = 0;
	if (old.u.s.n == 0) {
		/* Python puts the replacement around every character */
		while (!rc && (count < 0 || done < count) && i <= s.u.s.n) {
			rc = jj_buf_put(c, &b, nw.u.s.p, nw.u.s.n);
			done++;
			if (i == s.u.s.n) {
				i++;
				break;
			}
			size_t l;
			cp_at(s.u.s.p, s.u.s.n, i, &l);
			if (!rc)
				rc = jj_buf_put(c, &b, s.u.s.p + i, l);
			i += l;
		}
		if (!rc && i < s.u.s.n)
			rc = jj_buf_put(c, &b, s.u.s.p + i, s.u.s.n - i);
		return rc ? rc : jj_buf_str(c, &b, out);
	}
	while (!rc && i < s.u.s.n) {
		const char *hit = (count < 0 || done < count) ? memmem(s.u.s.p + i, s.u.s.n - i, old.u.s.p, old.u.s.n) : NULL;
		if (!hit) {
			rc = jj_buf_put(c, &b, s.u.s.p + i, s.u.s.n - i);
			break;
		}
		size_t at = (size_t)(hit - s.u.s.p);
		if ((rc = jj_buf_put(c, &b, s.u.s.p + i, at - i)) || (rc = jj_buf_put(c, &b, nw.u.s.p, nw.u.s.n)))
			break;
		i = at + old.u.s.n;
		done++;
		if ((rc = jj_step(c)))
			break;
	}
	return rc ? rc : jj_buf_str(c, &b, out);
}

/* the parts collected from the right, appended to out in reading order */
static int push_reversed(struct jj_ctx *c, struct jv parts, struct jv *out)
{
	int rc = 0;
	for (size_t i = parts.u.l->n; !rc && i-- > 0;)
		rc = jv_list_push(c, out, parts.u.l->v[i]);
	return rc;
}

/* rsplit() on runs of whitespace; no empty parts */
static int split_ws_right(struct jj_ctx *c, const char *p, size_t n, int64_t maxsplit, struct jv *out)
{
	struct jv parts;
	int rc = jv_new_list(c, 0, &parts);
	if (rc)
		return rc;
	size_t e = n;
	for (int64_t k = 0;; k++) {
		while (e > 0 && py_space((unsigned char)p[e - 1]))
			e--;
		if (e == 0)
			break;
		size_t b = e;
		if (maxsplit >= 0 && k >= maxsplit) {
			b = 0;
		} else {
			while (b > 0 && !py_space((unsigned char)p[b - 1]))
				b--;
		}
		if ((rc = jv_list_push(c, &parts, jv_str(p + b, e - b))))
			return rc;
		e = b;
	}
	return push_reversed(c, parts, out);
}

/* the end of the run from i on of (space) or non-space code points */
static size_t skip_class(const char *p, size_t n, size_t i, bool space)
{
	while (i < n) {
		size_t l;
		if (py_space(cp_at(p, n, i, &l)) != space)
			break;
		i += l;
	}
	return i;
}

/* split() on runs of whitespace; no empty parts */
static int split_ws(struct jj_ctx *c, const char *p, size_t n, int64_t maxsplit, struct jv *out)
{
	int rc;
	size_t i = 0;
	for (int64_t k = 0;; k++) {
		i = skip_class(p, n, i, true);
		if (i >= n)
			return 0;
		size_t b = i;
		if (maxsplit >= 0 && k >= maxsplit) {
			size_t e = n;
			while (e > b && py_space((unsigned char)p[e - 1]))
				e--;
			return jv_list_push(c, out, jv_str(p + b, e - b));
		}
		i = skip_class(p, n, i, false);
		if ((rc = jv_list_push(c, out, jv_str(p + b, i - b))))
			return rc;
	}
}

/* rsplit(sep) */
static int split_sep_right(struct jj_ctx *c, const char *p, size_t n, struct jv sep, int64_t maxsplit,
			   struct jv *out)
{
	struct jv parts;
	int rc = jv_new_list(c, 0, &parts);
	if (rc)
		return rc;
	size_t e = n;
	for (int64_t k = 0;; k++) {
		const char *hit = NULL;
		if (maxsplit < 0 || k < maxsplit)
			for (size_t j = e; j >= sep.u.s.n; j--)
				if (!memcmp(p + j - sep.u.s.n, sep.u.s.p, sep.u.s.n)) {
					hit = p + j - sep.u.s.n;
					break;
				}
		if (!hit) {
			if ((rc = jv_list_push(c, &parts, jv_str(p, e))))
				return rc;
			break;
		}
		size_t at = (size_t)(hit - p);
		if ((rc = jv_list_push(c, &parts, jv_str(p + at + sep.u.s.n, e - at - sep.u.s.n))))
			return rc;
		e = at;
	}
	return push_reversed(c, parts, out);
}

/* split(sep) */
static int split_sep(struct jj_ctx *c, const char *p, size_t n, struct jv sep, int64_t maxsplit, struct jv *out)
{
	int rc;
	size_t i = 0;
	for (int64_t k = 0;; k++) {
		const char *hit = (maxsplit < 0 || k < maxsplit) ? memmem(p + i, n - i, sep.u.s.p, sep.u.s.n) : NULL;
		if (!hit)
			return jv_list_push(c, out, jv_str(p + i, n - i));
		size_t at = (size_t)(hit - p);
		if ((rc = jv_list_push(c, out, jv_str(p + i, at - i))))
			return rc;
		i = at + sep.u.s.n;
		if ((rc = jj_step(c)))
			return rc;
	}
}

static int str_split(struct jj_ctx *c, struct jv s, const struct jj_args *a, bool right, struct jv *out)
{
	struct jv sep = jv_none();
	int64_t maxsplit;
	int rc;
	arg(a, 0, "sep", &sep);
	if ((rc = arg_int(c, a, 1, "maxsplit", -1, &maxsplit)) || (rc = jv_new_list(c, 0, out)))
		return rc;
	if (sep.t == JV_NONE)
		return right ? split_ws_right(c, s.u.s.p, s.u.s.n, maxsplit, out)
			     : split_ws(c, s.u.s.p, s.u.s.n, maxsplit, out);
	if ((rc = need_str(c, sep, "the separator")))
		return rc;
	if (sep.u.s.n == 0)
		return jj_fail(c, TERN_EFORMAT, "empty separator");
	return right ? split_sep_right(c, s.u.s.p, s.u.s.n, sep, maxsplit, out)
		     : split_sep(c, s.u.s.p, s.u.s.n, sep, maxsplit, out);
}

/* Python's str.splitlines() */
static int splitlines(struct jj_ctx *c, struct jv s, struct jv *out)
{
	int rc = jv_new_list(c, 0, out);
	const char *p = s.u.s.p;
	size_t n = s.u.s.n, b = 0, i = 0;
	while (!rc && i < n) {
		size_t l;
		uint32_t cp = cp_at(p, n, i, &l);
		bool br = cp == '\n' || cp == '\r' || cp == '\v' || cp == '\f' || (cp >= 0x1C && cp <= 0x1E) ||
			  cp == 0x85 || cp == 0x2028 || cp == 0x2029;
		if (!br) {
			i += l;
			continue;
		}
		rc = jv_list_push(c, out, jv_str(p + b, i - b));
		i += l;
		if (cp == '\r' && i < n && p[i] == '\n')
			i++;
		b = i;
	}
	if (!rc && b < n)
		rc = jv_list_push(c, out, jv_str(p + b, n - b));
	return rc;
}

static int affix(struct jj_ctx *c, struct jv s, struct jv x, bool end, bool *res)
{
	*res = false;
	if (x.t == JV_LIST) {
		for (size_t i = 0; i < x.u.l->n && !*res; i++) {
			int rc = affix(c, s, x.u.l->v[i], end, res);
			if (rc)
				return rc;
		}
		return 0;
	}
	int rc = need_str(c, x, end ? "endswith's argument" : "startswith's argument");
	if (rc)
		return rc;
	*res = x.u.s.n <= s.u.s.n && !memcmp(end ? s.u.s.p + s.u.s.n - x.u.s.n : s.u.s.p, x.u.s.p, x.u.s.n);
	return 0;
}

static int join_values(struct jj_ctx *c, struct jv list, struct jv sep, bool strict, struct jv *out)
{
	struct jj_buf b = {0};
	int rc = 0;
	for (size_t i = 0; !rc && i < list.u.l->n; i++) {
		if (i)
			rc = jj_buf_put(c, &b, sep.u.s.p, sep.u.s.n);
		if (strict && list.u.l->v[i].t != JV_STR)
			return jj_fail(c, TERN_EFORMAT, "sequence item %zu: expected str instance, %s found", i,
				       jv_type_name(list.u.l->v[i]));
		if (!rc)
			rc = jv_write_str(c, &b, list.u.l->v[i]);
	}
	return rc ? rc : jj_buf_str(c, &b, out);
}

/* ---- methods ------------------------------------------------------------- */
/* Each type's methods are a table of name -> function; jj_method picks
 * the table by the object's type. */
typedef int method_fn(struct jj_ctx *c, const char *m, struct jv obj, const struct jj_args *a, struct jv *out);

static int s_strip(struct jj_ctx *c, const char *m, struct jv s, const struct jj_args *a, struct jv *out)
{
	struct jv x;
	int which = m[0] == 'l' ? 1 : m[0] == 'r' ? 2 : 3, rc;
	if (arg(a, 0, "chars", &x) && x.t != JV_NONE) {
		if ((rc = need_str(c, x, "strip's argument")))
			return rc;
		*out = strip(s, which, x.u.s.p, x.u.s.n);
	} else {
		*out = strip(s, which, NULL, 0);
	}
	return 0;
}

static int s_split(struct jj_ctx *c, const char *m, struct jv s, const struct jj_args *a, struct jv *out)
{
	return str_split(c, s, a, m[0] == 'r', out);
}

static int s_splitlines(struct jj_ctx *c, const char *m, struct jv s, const struct jj_args *a, struct jv *out)
{
	return splitlines(c, s, out);
}

static int s_affix(struct jj_ctx *c, const char *m, struct jv s, const struct jj_args *a, struct jv *out)
{
	struct jv x;
	bool r;
	int rc;
	if (!arg(a, 0, NULL, &x))
		return jj_fail(c, TERN_EFORMAT, "%s takes one argument", m);
	if ((rc = affix(c, s, x, m[0] == 'e', &r)))
		return rc;
	*out = jv_bool(r);
	return 0;
}

static int s_case(struct jj_ctx *c, const char *m, struct jv s, const struct jj_args *a, struct jv *out)
{
	return map_case(c, s, m[0] == 'u' ? 'u' : m[0] == 'l' ? 'l' : m[0] == 't' ? 't' : 'c', out);
}

static int s_replace(struct jj_ctx *c, const char *m, struct jv s, const struct jj_args *a, struct jv *out)
{
	struct jv x, y;
	int64_t count;
	int rc;
	if (!arg(a, 0, NULL, &x) || !arg(a, 1, NULL, &y))
		return jj_fail(c, TERN_EFORMAT, "replace takes two arguments");
	if ((rc = need_str(c, x, "replace's argument")) || (rc = need_str(c, y, "replace's argument")) ||
	    (rc = arg_int(c, a, 2, "count", -1, &count)))
		return rc;
	return str_replace(c, s, x, y, count, out);
}

static int s_count(struct jj_ctx *c, const char *m, struct jv s, const struct jj_args *a, struct jv *out)
{
	struct jv x;
	int rc;
	if (!arg(a, 0, NULL, &x))
		return jj_fail(c, TERN_EFORMAT, "%s takes an argument", m);
	if ((rc = need_str(c, x, "the argument")))
		return rc;
	int64_t k = 0;
	if (x.u.s.n == 0) {
		k = (int64_t)jj_utf8_count(s.u.s.p, s.u.s.n) + 1;
	} else {
		for (size_t i = 0; i + x.u.s.n <= s.u.s.n;) {
			const char *h = memmem(s.u.s.p + i, s.u.s.n - i, x.u.s.p, x.u.s.n);
			if (!h)
				break;
			k++;
			i = (size_t)(h - s.u.s.p) + x.u.s.n;
		}
	}
	*out = jv_int(k);
	return 0;
}

/* find, rfind, index: the position in code points */
static int s_find(struct jj_ctx *c, const char *m, struct jv s, const struct jj_args *a, struct jv *out)
{
	struct jv x;
	int rc;
	if (!arg(a, 0, NULL, &x))
		return jj_fail(c, TERN_EFORMAT, "%s takes an argument", m);
	if ((rc = need_str(c, x, "the argument")))
		return rc;
	const char *h = NULL;
	if (m[0] == 'r') {
		for (size_t j = s.u.s.n + 1; j-- > 0;)
			if (j + x.u.s.n <= s.u.s.n && !memcmp(s.u.s.p + j, x.u.s.p, x.u.s.n)) {
				h = s.u.s.p + j;
				break;
			}
	} else {
		h = x.u.s.n ? memmem(s.u.s.p, s.u.s.n, x.u.s.p, x.u.s.n) : s.u.s.p;
	}
	if (!h && m[0] == 'i')
		return jj_fail(c, TERN_EFORMAT, "substring not found");
	*out = jv_int(h ? (int64_t)jj_utf8_count(s.u.s.p, (size_t)(h - s.u.s.p)) : -1);
	return 0;
}

static int s_join(struct jj_ctx *c, const char *m, struct jv s, const struct jj_args *a, struct jv *out)
{
	struct jv x, l;
	int rc;
	if (!arg(a, 0, NULL, &x))
		return jj_fail(c, TERN_EFORMAT, "join takes one argument");
	if ((rc = jj_iter_list(c, x, &l)))
		return rc;
	return join_values(c, l, s, true, out);
}

/* isdigit, isalpha, ...: every character of a non-empty string is of the
 * class (ASCII); isupper and islower also need a cased character */
static int s_is(struct jj_ctx *c, const char *m, struct jv s, const struct jj_args *a, struct jv *out)
{
	bool r = s.u.s.n > 0, cased = false, up = !strcmp(m, "isupper"), low = !strcmp(m, "islower");
	bool digit = !strcmp(m, "isdigit") || !strcmp(m, "isnumeric") || !strcmp(m, "isdecimal");
	for (size_t i = 0; i < s.u.s.n; i++) {
		char ch = s.u.s.p[i];
		bool d = ch >= '0' && ch <= '9', al = is_alpha(ch);
		if (digit)
			r = r && d;
		else if (!strcmp(m, "isalpha"))
			r = r && al;
		else if (!strcmp(m, "isalnum"))
			r = r && (al || d);
		else if (!strcmp(m, "isspace"))
			r = r && py_space((unsigned char)ch);
		else if (up)
			r = r && !(ch >= 'a' && ch <= 'z'), cased = cased || (ch >= 'A' && ch <= 'Z');
		else
			r = r && !(ch >= 'A' && ch <= 'Z'), cased = cased || (ch >= 'a' && ch <= 'z');
	}
	*out = jv_bool((up || low) ? r && cased : r);
	return 0;
}

static int unsafe(struct jj_ctx *c, struct jv obj, const char *m)
{
	return jj_fail(c, TERN_EFORMAT, "access to attribute '%s' of '%s' object is unsafe.", m, jv_type_name(obj));
}

/* the methods that change a dict or a list: the immutable sandbox refuses them */
static int o_unsafe(struct jj_ctx *c, const char *m, struct jv obj, const struct jj_args *a, struct jv *out)
{
	return unsafe(c, obj, m);
}

static int items_list(struct jj_ctx *c, const struct jj_dict *d, struct jv *out)
{
	int rc = jv_new_list(c, d->n, out);
	for (size_t i = 0; !rc && i < d->n; i++) {
		struct jv pair;
		if ((rc = jv_new_list(c, 2, &pair)))
			return rc;
		pair.tuple = true;
		pair.u.l->v[0] = d->k[i];
		pair.u.l->v[1] = d->v[i];
		pair.u.l->n = 2;
		out->u.l->v[out->u.l->n++] = pair;
	}
	return rc;
}

static int d_items(struct jj_ctx *c, const char *m, struct jv obj, const struct jj_args *a, struct jv *out)
{
	int rc = items_list(c, obj.u.d, out);
	out->gen = JG_ITEMS;
	return rc;
}

/* keys, values */
static int d_view(struct jj_ctx *c, const char *m, struct jv obj, const struct jj_args *a, struct jv *out)
{
	int rc = jv_new_list(c, obj.u.d->n, out);
	if (rc)
		return rc;
	for (size_t i = 0; i < obj.u.d->n; i++)
		out->u.l->v[out->u.l->n++] = m[0] == 'k' ? obj.u.d->k[i] : obj.u.d->v[i];
	out->gen = m[0] == 'k' ? JG_KEYS : JG_VALUES;
	return 0;
}

static int d_get(struct jj_ctx *c, const char *m, struct jv obj, const struct jj_args *a, struct jv *out)
{
	struct jv k, d = jv_none();
	if (!arg(a, 0, NULL, &k))
		return jj_fail(c, TERN_EFORMAT, "get expected at least 1 argument, got 0");
	arg(a, 1, NULL, &d);
	const struct jv *v = jv_dict_get(obj.u.d, k);
	*out = v ? *v : d;
	return 0;
}

static int d_copy(struct jj_ctx *c, const char *m, struct jv obj, const struct jj_args *a, struct jv *out)
{
	int rc = jv_new_dict(c, obj.u.d->n, out);
	for (size_t i = 0; !rc && i < obj.u.d->n; i++)
		rc = jv_dict_set(c, out->u.d, obj.u.d->k[i], obj.u.d->v[i]);
	return rc;
}

/* index, count */
static int l_find(struct jj_ctx *c, const char *m, struct jv obj, const struct jj_args *a, struct jv *out)
{
	struct jv x;
	int rc;
	if (!arg(a, 0, NULL, &x))
		return jj_fail(c, TERN_EFORMAT, "%s takes one argument", m);
	int64_t k = 0;
	for (size_t i = 0; i < obj.u.l->n; i++) {
		bool eq;
		if ((rc = jv_equal(c, obj.u.l->v[i], x, &eq)))
			return rc;
		if (eq && m[0] == 'i') {
			*out = jv_int((int64_t)i);
			return 0;
		}
		k += eq;
	}
	if (m[0] == 'i')
		return jj_fail(c, TERN_EFORMAT, "value is not in list");
	*out = jv_int(k);
	return 0;
}

static int loop_cycle(struct jj_ctx *c, const char *m, struct jv obj, const struct jj_args *a, struct jv *out)
{
	if (a->npos == 0)
		return jj_fail(c, TERN_EFORMAT, "no items for cycling given");
	*out = a->pos[obj.u.loop->i % a->npos];
	return 0;
}

struct method {
	const char *name;
	method_fn *fn;
};

/* each sorted by name (strcmp order): found by bsearch */
static const struct method str_methods[] = {
	{"capitalize", s_case}, {"count", s_count},     {"endswith", s_affix},   {"find", s_find},
	{"index", s_find},      {"isalnum", s_is},      {"isalpha", s_is},       {"isdecimal", s_is},
	{"isdigit", s_is},      {"islower", s_is},      {"isnumeric", s_is},     {"isspace", s_is},
	{"isupper", s_is},      {"join", s_join},       {"lower", s_case},       {"lstrip", s_strip},
	{"replace", s_replace}, {"rfind", s_find},      {"rsplit", s_split},     {"rstrip", s_strip},
	{"split", s_split},     {"splitlines", s_splitlines}, {"startswith", s_affix}, {"strip", s_strip},
	{"title", s_case},      {"upper", s_case},
};
static const struct method dict_methods[] = {
	{"clear", o_unsafe}, {"copy", d_copy},     {"get", d_get},          {"items", d_items},
	{"keys", d_view},    {"pop", o_unsafe},    {"popitem", o_unsafe},   {"setdefault", o_unsafe},
	{"update", o_unsafe}, {"values", d_view},
};
static const struct method list_methods[] = {
	{"append", o_unsafe}, {"clear", o_unsafe},  {"count", l_find},   {"extend", o_unsafe},
	{"index", l_find},    {"insert", o_unsafe}, {"pop", o_unsafe},   {"remove", o_unsafe},
	{"reverse", o_unsafe}, {"sort", o_unsafe},
};
static const struct method loop_methods[] = {{"cycle", loop_cycle}};

/* bsearch over a table whose entries open with their name */
static int by_name(const void *key, const void *entry)
{
	return strcmp(key, *(const char *const *)entry);
}

#define FIND(table, name) bsearch((name), (table), sizeof(table) / sizeof *(table), sizeof *(table), by_name)

static const struct method *find_method(struct jv obj, const char *name)
{
	switch (obj.t) {
	case JV_STR: return FIND(str_methods, name);
	case JV_DICT: return FIND(dict_methods, name);
	case JV_LIST: return FIND(list_methods, name);
	case JV_LOOP: return FIND(loop_methods, name);
	default: return NULL;
	}
}

bool jj_has_method(struct jv obj, const char *name)
{
	return find_method(obj, name) != NULL;
}

bool jj_method_unsafe(struct jv obj, const char *name)
{
	const struct method *me = find_method(obj, name);
	return me && me->fn == o_unsafe;
}

int jj_method(struct jj_ctx *c, struct jv obj, const char *m, const struct jj_args *a, struct jv *out)
{
	const struct method *me = find_method(obj, m);
	return me ? me->fn(c, m, obj, a, out) : -1;
}

/* ---- globals ------------------------------------------------------------- */
enum { G_RANGE, G_NAMESPACE, G_DICT, G_RAISE, G_STRFTIME, G_N };
static const char *const g_names[G_N] = {"range", "namespace", "dict", "raise_exception", "strftime_now"};

int jj_global_lookup(const char *name, size_t n, struct jv *out)
{
	for (int i = 0; i < G_N; i++)
		if (strlen(g_names[i]) == n && !memcmp(g_names[i], name, n)) {
			*out = (struct jv){.t = JV_FUNC};
			out->u.fn = i;
			return 0;
		}
	return -1;
}

/* strftime with the C locale's English names whatever the process locale */
static int strftime_c(struct jj_ctx *c, const char *fmt, size_t n, const struct tm *tm, struct jv *out)
{
	static const char *const days[] = {"Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"};
	static const char *const months[] = {"January", "February", "March", "April", "May", "June", "July",
					     "August", "September", "October", "November", "December"};
	struct jj_buf b = {0};
	int rc = 0;
	for (size_t i = 0; !rc && i < n; i++) {
		if (fmt[i] != '%' || i + 1 >= n) {
			rc = jj_buf_putc(c, &b, fmt[i]);
			continue;
		}
		char d = fmt[++i];
		int wd = tm->tm_wday % 7, mo = tm->tm_mon % 12;
		if (d == '-' && i + 1 < n) {
			/* glibc's "%-d": the number without its padding */
			struct jv one;
			char f[2] = {'%', fmt[++i]};
			if ((rc = strftime_c(c, f, 2, tm, &one)))
				return rc;
			size_t k = 0;
			while (k + 1 < one.u.s.n && (one.u.s.p[k] == '0' || one.u.s.p[k] == ' '))
				k++;
			rc = jj_buf_put(c, &b, one.u.s.p + k, one.u.s.n - k);
			continue;
		}
		switch (d) {
		case 'A': rc = jj_buf_printf(c, &b, "%s", days[wd]); break;
		case 'a': rc = jj_buf_printf(c, &b, "%.3s", days[wd]); break;
		case 'B': rc = jj_buf_printf(c, &b, "%s", months[mo]); break;
		case 'b': case 'h': rc = jj_buf_printf(c, &b, "%.3s", months[mo]); break;
		case 'd': rc = jj_buf_printf(c, &b, "%02d", tm->tm_mday); break;
		case 'e': rc = jj_buf_printf(c, &b, "%2d", tm->tm_mday); break;
		case 'm': rc = jj_buf_printf(c, &b, "%02d", tm->tm_mon + 1); break;
		case 'Y': rc = jj_buf_printf(c, &b, "%d", tm->tm_year + 1900); break;
		case 'y': rc = jj_buf_printf(c, &b, "%02d", (tm->tm_year + 1900) % 100); break;
		case 'H': rc = jj_buf_printf(c, &b, "%02d", tm->tm_hour); break;
		case 'I': rc = jj_buf_printf(c, &b, "%02d", tm->tm_hour % 12 ? tm->tm_hour % 12 : 12); break;
		case 'M': rc = jj_buf_printf(c, &b, "%02d", tm->tm_min); break;
		case 'S': rc = jj_buf_printf(c, &b, "%02d", tm->tm_sec); break;
		case 'p': rc = jj_buf_put(c, &b, tm->tm_hour < 12 ? "AM" : "PM", 2); break;
		case 'j': rc = jj_buf_printf(c, &b, "%03d", tm->tm_yday + 1); break;
		case '%': rc = jj_buf_putc(c, &b, '%'); break;
		default: {
			char f[3] = {'%', d, 0}, tmp[128];
			size_t k = d ? strftime(tmp, sizeof tmp, f, tm) : 0;
			rc = jj_buf_put(c, &b, tmp, k);
		}
		}
	}
	return rc ? rc : jj_buf_str(c, &b, out);
}

int jj_call_global(struct jj_ctx *c, int fn, const struct jj_args *a, struct jv *out)
{
	int rc;
	struct jv x;
	switch (fn) {
	case G_RANGE: {
		int64_t v[3] = {0, 0, 1};
		if (a->npos == 0 || a->npos > 3 || a->nkw)
			return jj_fail(c, TERN_EFORMAT, "range expects 1 to 3 integer arguments");
		for (size_t i = 0; i < a->npos; i++) {
			struct jv p = a->pos[i];
			if (p.t != JV_INT && p.t != JV_BOOL)
				return jj_fail(c, TERN_EFORMAT, "'%s' object cannot be interpreted as an integer",
					       jv_type_name(p));
			v[a->npos == 1 ? 1 : i] = p.t == JV_INT ? p.u.i : p.u.b;
		}
		int64_t start = v[0], stop = v[1], step = v[2];
		if (step == 0)
			return jj_fail(c, TERN_EFORMAT, "range() arg 3 must not be zero");
		double cnt = step > 0 ? ceil(((double)stop - (double)start) / (double)step)
				      : ceil(((double)start - (double)stop) / (double)-step);
		if (cnt < 0)
			cnt = 0;
		if (cnt > JJ_MAX_RANGE)
			return jj_fail(c, TERN_ERANGE, "Range too big. The sandbox blocks ranges larger than MAX_RANGE (%d).",
				       JJ_MAX_RANGE);
		if ((rc = jv_new_list(c, (size_t)cnt, out)))
			return rc;
		for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step)
			out->u.l->v[out->u.l->n++] = jv_int(i);
		return 0;
	}
	case G_NAMESPACE:
	case G_DICT:
		if ((rc = jv_new_dict(c, 0, out)))
			return rc;
		if (a->npos > 1)
			return jj_fail(c, TERN_EFORMAT, "%s expected at most 1 positional argument", g_names[fn]);
		if (a->npos == 1) {
			x = a->pos[0];
			if (x.t == JV_DICT || x.t == JV_NS) {
				for (size_t i = 0; i < x.u.d->n; i++)
					if ((rc = jv_dict_set(c, out->u.d, x.u.d->k[i], x.u.d->v[i])))
						return rc;
			} else {
				return jj_fail(c, TERN_EFORMAT, "%s: cannot convert %s to a dictionary", g_names[fn],
					       jv_type_name(x));
			}
		}
		for (size_t i = 0; i < a->nkw; i++)
			if ((rc = jv_dict_set(c, out->u.d, jv_str(a->kwn[i], strlen(a->kwn[i])), a->kwv[i])))
				return rc;
		if (fn == G_NAMESPACE)
			out->t = JV_NS;
		return 0;
	case G_RAISE: {
		struct jj_buf b = {0};
		if (arg(a, 0, "message", &x) && (rc = jv_write_str(c, &b, x)))
			return rc;
		return jj_fail(c, TERN_EFORMAT, "raise_exception: %.*s", (int)(b.n > 300 ? 300 : b.n), b.p ? b.p : "");
	}
	case G_STRFTIME: {
		if (!arg(a, 0, "format", &x))
			return jj_fail(c, TERN_EFORMAT, "strftime_now takes a format");
		if ((rc = need_str(c, x, "strftime_now's format")))
			return rc;
		struct tm tm;
		time_t now = c->now;
		if (!localtime_r(&now, &tm))
			return jj_fail(c, TERN_EFORMAT, "strftime_now: the time cannot be represented");
		return strftime_c(c, x.u.s.p, x.u.s.n, &tm, out);
	}
	default:
		return jj_fail(c, TERN_EFORMAT, "unknown function");
	}
}

/* ---- tests --------------------------------------------------------------- */
/* A test is a set of value types (the `is string` kind) or a function;
 * the comparisons (eq, gt, in, ...) share one with the operator in op. */
typedef int test_fn(struct jj_ctx *c, const char *t, int op, struct jv v, const struct jj_args *a, bool *out);

static int t_bool(struct jj_ctx *c, const char *t, int op, struct jv v, const struct jj_args *a, bool *out)
{
	*out = v.t == JV_BOOL && v.u.b == (t[0] == 't');
	return 0;
}

/* `x is filter` and `x is test`: whether one of that name exists */
static int t_exists(struct jj_ctx *c, const char *t, int op, struct jv v, const struct jj_args *a, bool *out)
{
	int rc = need_str(c, v, "the name");
	if (rc)
		return rc;
	*out = t[0] == 'f' ? jj_filter_exists(v.u.s.p) : jj_test_exists(v.u.s.p);
	return 0;
}

/* Python's % on floats: value % 2 == 1, value % num == 0 */
static int parity_float(struct jj_ctx *c, const char *t, struct jv v, bool has, struct jv x, bool *out)
{
	double a0 = jv_num(v), b0 = t[0] == 'd' ? (has ? jv_num(x) : 0) : 2;
	if (!has && t[0] == 'd')
		return jj_fail(c, TERN_EFORMAT, "divisibleby needs an argument");
	if (b0 == 0 || !jv_is_num(v) || (t[0] == 'd' && !jv_is_num(x)))
		return jj_fail(c, TERN_EFORMAT, "float modulo");
	double m = fmod(a0, b0);
	if (m != 0 && ((m < 0) != (b0 < 0)))
		m += b0;
	*out = t[0] == 'o' ? m == 1 : m == 0;
	return 0;
}

/* odd, even, divisibleby */
static int t_parity(struct jj_ctx *c, const char *t, int op, struct jv v, const struct jj_args *a, bool *out)
{
	struct jv x;
	bool has = arg(a, 0, NULL, &x);
	if (v.t == JV_FLOAT || (t[0] == 'd' && has && x.t == JV_FLOAT))
		return parity_float(c, t, v, has, x, out);
	if (v.t != JV_INT && v.t != JV_BOOL)
		return jj_fail(c, TERN_EFORMAT, "test '%s' needs an integer, not %s", t, jv_type_name(v));
	int64_t i = v.t == JV_INT ? v.u.i : v.u.b, d = 2;
	if (t[0] != 'd') {
		*out = ((i % 2 + 2) % 2 == 1) == (t[0] == 'o');
		return 0;
	}
	if (!has || (x.t != JV_INT && x.t != JV_BOOL))
		return jj_fail(c, TERN_EFORMAT, "divisibleby needs an integer argument");
	d = x.t == JV_INT ? x.u.i : x.u.b;
	if (d == 0)
		return jj_fail(c, TERN_EFORMAT, "integer division or modulo by zero");
	*out = d == -1 || i % d == 0;
	return 0;
}

/* lower, upper: str(value) has cased characters, all of that case */
static int t_case(struct jj_ctx *c, const char *t, int op, struct jv v, const struct jj_args *a, bool *out)
{
	struct jv s;
	int rc = jv_to_str(c, v, &s);
	if (rc)
		return rc;
	bool cased = false, ok = true;
	for (size_t i = 0; i < s.u.s.n; i++) {
		char ch = s.u.s.p[i];
		if (ch >= 'a' && ch <= 'z')
			cased = true, ok = ok && t[0] == 'l';
		if (ch >= 'A' && ch <= 'Z')
			cased = true, ok = ok && t[0] == 'u';
	}
	*out = ok && cased;
	return 0;
}

static int t_sameas(struct jj_ctx *c, const char *t, int op, struct jv v, const struct jj_args *a, bool *out)
{
	struct jv x;
	if (!arg(a, 0, NULL, &x))
		return jj_fail(c, TERN_EFORMAT, "sameas needs an argument");
	if ((v.t == JV_NONE || v.t == JV_BOOL || v.t == JV_UNDEF) && v.t == x.t)
		*out = v.t != JV_BOOL || v.u.b == x.u.b;
	else
		*out = v.t == x.t && memcmp(&v.u, &x.u, sizeof v.u) == 0;
	return 0;
}

/* `v is in x`: the operator's rules, but a non-string left of a string
 * says so in the test's own words */
static int test_in(struct jj_ctx *c, struct jv v, struct jv x, bool *r)
{
	int rc;
	*r = false;
	if (x.t == JV_STR) {
		if ((rc = need_str(c, v, "the left side of 'in'")))
			return rc;
		*r = v.u.s.n == 0 || memmem(x.u.s.p, x.u.s.n, v.u.s.p, v.u.s.n);
	} else if (x.t == JV_LIST) {
		for (size_t i = 0; !*r && i < x.u.l->n; i++)
			if ((rc = jv_equal(c, v, x.u.l->v[i], r)))
				return rc;
	} else if (x.t == JV_DICT) {
		*r = jv_dict_get(x.u.d, v) != NULL;
	} else if (x.t != JV_UNDEF) {
		return jj_fail(c, TERN_EFORMAT, "argument of type '%s' is not iterable", jv_type_name(x));
	}
	return 0;
}

static int t_compare(struct jj_ctx *c, const char *t, int op, struct jv v, const struct jj_args *a, bool *out)
{
	struct jv x;
	int rc;
	bool lt;
	if (!arg(a, 0, NULL, &x))
		return jj_fail(c, TERN_EFORMAT, "test '%s' needs an argument", t);
	switch (op) {
	case JO_IN: return test_in(c, v, x, out);
	case JO_EQ:
	case JO_NE:
		if ((rc = jv_equal(c, v, x, out)))
			return rc;
		*out = op == JO_EQ ? *out : !*out;
		return 0;
	case JO_LT: return jv_less(c, v, x, out);
	case JO_GT: return jv_less(c, x, v, out);
	case JO_LE: rc = jv_less(c, x, v, &lt); break;
	default: rc = jv_less(c, v, x, &lt); break;
	}
	if (!rc)
		*out = !lt;
	return rc;
}

#define T(x) (1u << (x))
/* sorted by name (strcmp order): found by bsearch */
static const struct test {
	const char *name;
	test_fn *fn;    /* NULL: true when the value's type is in types */
	uint16_t types;
	int8_t op;
} tests[] = {
	{"!=", t_compare, 0, JO_NE},
	{"<", t_compare, 0, JO_LT},
	{"<=", t_compare, 0, JO_LE},
	{"==", t_compare, 0, JO_EQ},
	{">", t_compare, 0, JO_GT},
	{">=", t_compare, 0, JO_GE},
	{"boolean", NULL, T(JV_BOOL), 0},
	/* Undefined has __call__ */
	{"callable", NULL, T(JV_MACRO) | T(JV_FUNC) | T(JV_METHOD) | T(JV_UNDEF), 0},
	{"defined", NULL, (uint16_t)~T(JV_UNDEF), 0},
	{"divisibleby", t_parity, 0, 0},
	{"eq", t_compare, 0, JO_EQ},
	{"equalto", t_compare, 0, JO_EQ},
	{"escaped", NULL, 0, 0},
	{"even", t_parity, 0, 0},
	{"false", t_bool, 0, 0},
	{"filter", t_exists, 0, 0},
	{"float", NULL, T(JV_FLOAT), 0},
	{"ge", t_compare, 0, JO_GE},
	{"greaterthan", t_compare, 0, JO_GT},
	{"gt", t_compare, 0, JO_GT},
	{"in", t_compare, 0, JO_IN},
	{"integer", NULL, T(JV_INT), 0},
	{"iterable", NULL, T(JV_STR) | T(JV_LIST) | T(JV_DICT) | T(JV_UNDEF), 0},
	{"le", t_compare, 0, JO_LE},
	{"lessthan", t_compare, 0, JO_LT},
	{"lower", t_case, 0, 0},
	{"lt", t_compare, 0, JO_LT},
	{"mapping", NULL, T(JV_DICT), 0},
	{"ne", t_compare, 0, JO_NE},
	{"none", NULL, T(JV_NONE), 0},
	{"number", NULL, T(JV_INT) | T(JV_FLOAT) | T(JV_BOOL), 0},
	{"odd", t_parity, 0, 0},
	{"sameas", t_sameas, 0, 0},
	{"sequence", NULL, T(JV_STR) | T(JV_LIST) | T(JV_DICT) | T(JV_UNDEF), 0},
	{"string", NULL, T(JV_STR), 0},
	{"test", t_exists, 0, 0},
	{"true", t_bool, 0, 0},
	{"undefined", NULL, T(JV_UNDEF), 0},
	{"upper", t_case, 0, 0},
};
#undef T

static const struct test *find_test(const char *name)
{
	return FIND(tests, name);
}

bool jj_test_exists(const char *name)
{
	return find_test(name) != NULL;
}

int jj_test(struct jj_ctx *c, const char *t, struct jv v, const struct jj_args *a, bool *out)
{
	const struct test *te = find_test(t);
	if (!te) /* the parser checks names; map/select name one at run time */
		return t_compare(c, t, JO_EQ, v, a, out);
	if (!te->fn) {
		*out = (te->types >> v.t) & 1u;
		return 0;
	}
	return te->fn(c, t, te->op, v, a, out);
}

/* ---- filters ------------------------------------------------------------- */
static int length_of(struct jj_ctx *c, struct jv v, int64_t *n)
{
	switch (v.t) {
	case JV_STR: *n = (int64_t)jj_utf8_count(v.u.s.p, v.u.s.n); return 0;
	case JV_LIST:
		if (v.gen == JG_GEN)
			return jj_fail(c, TERN_EFORMAT, "object of type 'generator' has no len()");
		*n = (int64_t)v.u.l->n;
		return 0;
	case JV_DICT: case JV_NS: *n = (int64_t)v.u.d->n; return 0;
	case JV_UNDEF: *n = 0; return 0;
	default: return jj_fail(c, TERN_EFORMAT, "object of type '%s' has no len()", jv_type_name(v));
	}
}

/* attribute path "a.b.0" of an item, as jinja2's make_attrgetter */
static int getattr_path(struct jj_ctx *c, struct jv item, struct jv path, struct jv *out)
{
	if (path.t == JV_INT)
		return jj_item(c, item, path, out);
	int rc = need_str(c, path, "the attribute");
	if (rc)
		return rc;
	size_t i = 0;
	*out = item;
	while (i <= path.u.s.n) {
		const char *dot = memchr(path.u.s.p + i, '.', path.u.s.n - i);
		size_t e = dot ? (size_t)(dot - path.u.s.p) : path.u.s.n;
		struct jv key = jv_str(path.u.s.p + i, e - i);
		bool digits = e > i;
		for (size_t k = i; k < e; k++)
			digits = digits && path.u.s.p[k] >= '0' && path.u.s.p[k] <= '9';
		if (digits)
			key = jv_int(strtoll(path.u.s.p + i, NULL, 10));
		if ((rc = jj_item(c, *out, key, out)))
			return rc;
		if (!dot)
			break;
		i = e + 1;
	}
	return 0;
}

/* sort key comparison: case-insensitive for strings unless cs */
static int key_less(struct jj_ctx *c, struct jv a, struct jv b, bool cs, bool *lt)
{
	if (!cs && a.t == JV_STR && b.t == JV_STR) {
		struct jv la, lb;
		int rc;
		if ((rc = map_case(c, a, 'l', &la)) || (rc = map_case(c, b, 'l', &lb)))
			return rc;
		return jv_less(c, la, lb, lt);
	}
	return jv_less(c, a, b, lt);
}

/* stable merge sort of v[n] by keys k[n] */
static int sort_by(struct jj_ctx *c, struct jv *v, struct jv *k, size_t n, bool cs, bool rev)
{
	if (n < 2)
		return 0;
	struct jv *tv = jj_alloc(&c->a, n * sizeof *tv), *tk = jj_alloc(&c->a, n * sizeof *tk);
	if (!tv || !tk)
		return jj_oom(c);
	for (size_t w = 1; w < n; w *= 2) {
		for (size_t lo = 0; lo < n; lo += 2 * w) {
			size_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
			size_t i = lo, j = mid, o = lo;
			while (i < mid || j < hi) {
				bool take_right = false;
				if (i < mid && j < hi) {
					bool lt;
					int rc = rev ? key_less(c, k[i], k[j], cs, &lt) : key_less(c, k[j], k[i], cs, &lt);
					if (rc)
						return rc;
					take_right = lt;
				} else {
					take_right = i >= mid;
				}
				size_t s = take_right ? j++ : i++;
				tv[o] = v[s];
				tk[o++] = k[s];
			}
		}
		memcpy(v, tv, n * sizeof *v);
		memcpy(k, tk, n * sizeof *k);
		if ((c->steps += n) > c->max_steps)
			return jj_step(c);
	}
	return 0;
}

static int copy_list(struct jj_ctx *c, struct jv src, struct jv *out)
{
	int rc = jv_new_list(c, src.u.l->n, out);
	if (rc)
		return rc;
	if (src.u.l->n)
		memcpy(out->u.l->v, src.u.l->v, src.u.l->n * sizeof *src.u.l->v);
	out->u.l->n = src.u.l->n;
	return 0;
}

/* map / select / reject / selectattr / rejectattr */
static int seq_filter(struct jj_ctx *c, const char *f, struct jv in, const struct jj_args *a, struct jv *out)
{
	struct jv list, name;
	int rc = jv_truthy(in) ? jj_iter_list(c, in, &list) : jv_new_list(c, 0, &list);
	if (rc || (rc = jv_new_list(c, list.u.l->n, out)))
		return rc;
	out->gen = JG_GEN;
	bool is_map = !strcmp(f, "map"), attr = strstr(f, "attr") != NULL, rej = f[0] == 'r';
	struct jj_args rest = *a;
	struct jv attrname = jv_undef(NULL), dflt = jv_undef(NULL);
	bool has_dflt = false;
	if (is_map) {
		for (size_t k = 0; k < a->nkw; k++) {
			if (!strcmp(a->kwn[k], "attribute"))
				attrname = a->kwv[k];
			if (!strcmp(a->kwn[k], "default"))
				dflt = a->kwv[k], has_dflt = true;
		}
		if (attrname.t == JV_UNDEF && a->npos == 0)
			return jj_fail(c, TERN_EFORMAT, "map needs a filter name or attribute=");
	}
	if (attr && !arg(a, 0, NULL, &attrname))
		return jj_fail(c, TERN_EFORMAT, "%s needs an attribute name", f);
	size_t skip = attr ? 1 : 0;
	bool has_name = a->npos > skip;
	if (has_name) {
		name = a->pos[skip];
		if ((rc = need_str(c, name, "the filter or test name")))
			return rc;
		if (is_map ? !jj_filter_exists(name.u.s.p) : !jj_test_exists(name.u.s.p))
			return jj_fail(c, TERN_EFORMAT, "no %s named '%.*s'", is_map ? "filter" : "test",
				       (int)name.u.s.n, name.u.s.p);
		rest.pos = a->pos + skip + 1;
		rest.npos = a->npos - skip - 1;
	} else {
		rest.npos = 0;
	}
	if (is_map && attrname.t != JV_UNDEF)
		rest.nkw = 0;
	for (size_t i = 0; i < list.u.l->n; i++) {
		struct jv item = list.u.l->v[i], x = item;
		if ((rc = jj_step(c)))
			return rc;
		if (attrname.t != JV_UNDEF) {
			if ((rc = getattr_path(c, item, attrname, &x)))
				return rc;
			if (is_map && x.t == JV_UNDEF && has_dflt)
				x = dflt;
		}
		if (is_map) {
			if (has_name && (rc = jj_filter(c, name.u.s.p, x, &rest, &x)))
				return rc;
			out->u.l->v[out->u.l->n++] = x;
			continue;
		}
		bool ok;
		if (has_name) {
			if ((rc = jj_test(c, name.u.s.p, x, &rest, &ok)))
				return rc;
		} else {
			ok = jv_truthy(x);
		}
		if (ok != rej)
			out->u.l->v[out->u.l->n++] = item;
	}
	return 0;
}

static int escape_html(struct jj_ctx *c, struct jv s, struct jv *out)
{
	struct jj_buf b = {0};
	int rc = 0;
	for (size_t i = 0; !rc && i < s.u.s.n; i++) {
		char ch = s.u.s.p[i];
		const char *r = ch == '&' ? "&amp;" : ch == '<' ? "&lt;" : ch == '>' ? "&gt;" : ch == '"' ? "&#34;"
				: ch == '\'' ? "&#39;" : NULL;
		rc = r ? jj_buf_put(c, &b, r, strlen(r)) : jj_buf_putc(c, &b, ch);
	}
	return rc ? rc : jj_buf_str(c, &b, out);
}

/* Python int(str): optional sign, digits with single underscores, spaces around */
static bool parse_pyint(struct jv s, int base, int64_t *out)
{
	struct jv t = strip(s, 3, NULL, 0);
	const char *p = t.u.s.p;
	size_t n = t.u.s.n, i = 0;
	bool neg = false;
	if (i < n && (p[i] == '+' || p[i] == '-'))
		neg = p[i++] == '-';
	if (i + 1 < n && p[i] == '0') {
		char x = (char)(p[i + 1] | 32);
		if ((x == 'x' && base == 16) || (x == 'o' && base == 8) || (x == 'b' && base == 2))
			i += 2;
	}
	if (i >= n)
		return false;
	uint64_t v = 0;
	bool prev_us = true;
	for (; i < n; i++) {
		if (p[i] == '_' && !prev_us) {
			prev_us = true;
			continue;
		}
		int d = p[i] >= '0' && p[i] <= '9' ? p[i] - '0' : (p[i] | 32) >= 'a' && (p[i] | 32) <= 'z' ? (p[i] | 32) - 'a' + 10 : 99;
		if (d >= base)
			return false;
		if (v > (UINT64_MAX - (uint64_t)d) / (uint64_t)base)
			return false;
		v = v * (uint64_t)base + (uint64_t)d;
		prev_us = false;
	}
	if (prev_us || v > (uint64_t)INT64_MAX)
		return false;
	*out = neg ? -(int64_t)v : (int64_t)v;
	return true;
}

static bool parse_pyfloat(struct jv s, double *out)
{
	struct jv t = strip(s, 3, NULL, 0);
	char buf[64];
	if (t.u.s.n == 0 || t.u.s.n >= sizeof buf)
		return false;
	memcpy(buf, t.u.s.p, t.u.s.n);
	buf[t.u.s.n] = 0;
	char *end;
	*out = strtod(buf, &end);
	return *end == 0 && !(buf[0] == '0' && (buf[1] == 'x' || buf[1] == 'X'));
}

static int do_indent(struct jj_ctx *c, struct jv s, const struct jj_args *a, struct jv *out)
{
	struct jv w, ind;
	int rc;
	if (arg(a, 0, "width", &w) && w.t == JV_STR) {
		ind = w;
	} else {
		int64_t width;
		if ((rc = arg_int(c, a, 0, "width", 4, &width)))
			return rc;
		if (width < 0)
			width = 0;
		if ((uint64_t)width > c->max_output)
			return jj_fail(c, TERN_ERANGE, "indent width too large");
		char *sp = jj_alloc(&c->a, (size_t)width + 1);
		if (!sp)
			return jj_oom(c);
		memset(sp, ' ', (size_t)width);
		ind = jv_str(sp, (size_t)width);
	}
	bool first = arg_bool(a, 1, "first", false), blank = arg_bool(a, 2, "blank", false);
	struct jj_buf tmp = {0};
	if ((rc = jj_buf_put(c, &tmp, s.u.s.p, s.u.s.n)) || (rc = jj_buf_putc(c, &tmp, '\n')))
		return rc;
	struct jv lines, whole;
	if ((rc = jj_buf_str(c, &tmp, &whole)) || (rc = splitlines(c, whole, &lines)))
		return rc;
	struct jj_buf b = {0};
	if (first && (rc = jj_buf_put(c, &b, ind.u.s.p, ind.u.s.n)))
		return rc;
	for (size_t i = 0; !rc && i < lines.u.l->n; i++) {
		struct jv ln = lines.u.l->v[i];
		if (i) {
			if ((rc = jj_buf_putc(c, &b, '\n')))
				break;
			if ((blank || ln.u.s.n) && (rc = jj_buf_put(c, &b, ind.u.s.p, ind.u.s.n)))
				break;
		}
		rc = jj_buf_put(c, &b, ln.u.s.p, ln.u.s.n);
	}
	return rc ? rc : jj_buf_str(c, &b, out);
}

static int do_tojson(struct jj_ctx *c, struct jv v, const struct jj_args *a, struct jv *out)
{
	struct jj_json_opts o = {.indent = -1};
	struct jv x;
	int rc;
	if (arg(a, 0, "ensure_ascii", &x))
		o.ascii = jv_truthy(x);
	if (arg(a, 1, "indent", &x) && x.t != JV_NONE) {
		if (x.t != JV_INT && x.t != JV_BOOL)
			return jj_fail(c, TERN_EFORMAT, "tojson: indent must be an integer");
		int64_t i = x.t == JV_INT ? x.u.i : x.u.b;
		o.indent = i < 0 ? 0 : i > 1000 ? 1000 : (int)i;
	}
	if (arg(a, 2, "separators", &x) && x.t != JV_NONE) {
		if (x.t != JV_LIST || x.u.l->n != 2 || x.u.l->v[0].t != JV_STR || x.u.l->v[1].t != JV_STR)
			return jj_fail(c, TERN_EFORMAT, "tojson: separators must be two strings");
		struct jv s0, s1;
		if ((rc = jv_strdup(c, x.u.l->v[0].u.s.p, x.u.l->v[0].u.s.n, &s0)) ||
		    (rc = jv_strdup(c, x.u.l->v[1].u.s.p, x.u.l->v[1].u.s.n, &s1)))
			return rc;
		o.item_sep = s0.u.s.p;
		o.key_sep = s1.u.s.p;
	}
	o.sort_keys = arg_bool(a, 3, "sort_keys", false);
	struct jj_buf b = {0};
	if ((rc = jv_write_json(c, &b, v, &o, 0)))
		return rc;
	return jj_buf_str(c, &b, out);
}

static int minmax(struct jj_ctx *c, struct jv in, const struct jj_args *a, bool max, struct jv *out)
{
	struct jv list, attrname = jv_undef(NULL);
	int rc = jj_iter_list(c, in, &list);
	if (rc)
		return rc;
	bool cs = arg_bool(a, 0, "case_sensitive", false);
	arg(a, 1, "attribute", &attrname);
	*out = jv_undef("min/max of an empty sequence");
	struct jv best_key = jv_none();
	for (size_t i = 0; i < list.u.l->n; i++) {
		struct jv k = list.u.l->v[i];
		if (attrname.t != JV_UNDEF && (rc = getattr_path(c, k, attrname, &k)))
			return rc;
		bool better = i == 0, lt;
		if (i && (rc = max ? key_less(c, best_key, k, cs, &lt) : key_less(c, k, best_key, cs, &lt)))
			return rc;
		if (i)
			better = lt;
		if (better) {
			*out = list.u.l->v[i];
			best_key = k;
		}
	}
	return 0;
}

/* Each filter is a function found by name in the table below; the
 * table's flags say what happens to an undefined input before the
 * function runs and whether it works on str(value). */
typedef int filter_fn(struct jj_ctx *c, const char *f, struct jv v, const struct jj_args *a, struct jv *out);

static int f_safe(struct jj_ctx *c, const char *f, struct jv v, const struct jj_args *a, struct jv *out)
{
	int rc = jv_to_str(c, v, out);
	out->safe = true;
	return rc;
}

static int f_default(struct jj_ctx *c, const char *f, struct jv v, const struct jj_args *a, struct jv *out)
{
	struct jv d = jv_str("", 0);
	arg(a, 0, "default_value", &d);
	bool boolean = arg_bool(a, 1, "boolean", false);
	*out = (v.t == JV_UNDEF || (boolean && !jv_truthy(v))) ? d : v;
	return 0;
}

static int f_length(struct jj_ctx *c, const char *f, struct jv v, const struct jj_args *a, struct jv *out)
{
	int64_t n = 0;
	int rc = length_of(c, v, &n);
	*out = jv_int(n);
	return rc;
}

static int f_tojson(struct jj_ctx *c, const char *f, struct jv v, const struct jj_args *a, struct jv *out)
{
	return do_tojson(c, v, a, out);
}

static int f_items(struct jj_ctx *c, const char *f, struct jv v, const struct jj_args *a, struct jv *out)
{
	int rc;
	if (v.t == JV_UNDEF)
		rc = jv_new_list(c, 0, out);
	else if (v.t != JV_DICT)
		return jj_fail(c, TERN_EFORMAT, "Can only get item pairs from a mapping.");
	else
		rc = items_list(c, v.u.d, out);
	out->gen = JG_GEN;
	return rc;
}

static int f_list(struct jj_ctx *c, const char *f, struct jv v, const struct jj_args *a, struct jv *out)
{
	struct jv list;
	int rc = jj_iter_list(c, v, &list);
	return rc ? rc : copy_list(c, list, out);
}

static int f_join(struct jj_ctx *c, const char *f, struct jv v, const struct jj_args *a, struct jv *out)
{
	struct jv sep = jv_str("", 0), attrname, list;
	int rc;
	if ((rc = jj_iter_list(c, v, &list)))
		return rc;
	if (arg(a, 0, "d", &sep) && (rc = jv_to_str(c, sep, &sep)))
		return rc;
	if (arg(a, 1, "attribute", &attrname)) {
		struct jv m;
		if ((rc = jv_new_list(c, list.u.l->n, &m)))
			return rc;
		for (size_t i = 0; i < list.u.l->n; i++)
			if ((rc = getattr_path(c, list.u.l->v[i], attrname, &m.u.l->v[m.u.l->n++])))
				return rc;
		list = m;
	}
	return join_values(c, list, sep, false, out);
}

/* ---- the string filters: v is already str(value) ---- */
static int f_string(struct jj_ctx *c, const char *f, struct jv s, const struct jj_args *a, struct jv *out)
{
	*out = s;
	return 0;
}

static int f_trim(struct jj_ctx *c, const char *f, struct jv s, const struct jj_args *a, struct jv *out)
{
	struct jv x;
	int rc;
	if (arg(a, 0, "chars", &x) && x.t != JV_NONE) {
		if ((rc = need_str(c, x, "trim's chars")))
			return rc;
		*out = strip(s, 3, x.u.s.p, x.u.s.n);
	} else {
		*out = strip(s, 3, NULL, 0);
	}
	out->safe = s.safe;
	return 0;
}

/* upper, lower, capitalize: markupsafe keeps a Markup a Markup */
static int f_case(struct jj_ctx *c, const char *f, struct jv s, const struct jj_args *a, struct jv *out)
{
	int rc = map_case(c, s, f[0] == 'u' ? 'u' : f[0] == 'l' ? 'l' : 'c', out);
	out->safe = s.safe;
	return rc;
}

static int f_title(struct jj_ctx *c, const char *f, struct jv s, const struct jj_args *a, struct jv *out)
{
	return map_case(c, s, 'j', out);
}

static int f_replace(struct jj_ctx *c, const char *f, struct jv s, const struct jj_args *a, struct jv *out)
{
	struct jv o, n;
	int64_t count;
	int rc;
	if (!arg(a, 0, "old", &o) || !arg(a, 1, "new", &n))
		return jj_fail(c, TERN_EFORMAT, "replace needs old and new");
	if ((rc = jv_to_str(c, o, &o)) || (rc = jv_to_str(c, n, &n)) || (rc = arg_int(c, a, 2, "count", -1, &count)))
		return rc;
	return str_replace(c, s, o, n, count, out);
}

/* e, escape (a Markup stays as it is) and forceescape */
static int f_escape(struct jj_ctx *c, const char *f, struct jv s, const struct jj_args *a, struct jv *out)
{
	if (s.safe && f[0] == 'e') {
		*out = s;
		return 0;
	}
	int rc = escape_html(c, s, out);
	out->safe = true;
	return rc;
}

static int f_center(struct jj_ctx *c, const char *f, struct jv s, const struct jj_args *a, struct jv *out)
{
	int64_t w;
	int rc;
	if ((rc = arg_int(c, a, 0, "width", 80, &w)))
		return rc;
	int64_t len = (int64_t)jj_utf8_count(s.u.s.p, s.u.s.n);
	if (w <= len) {
		*out = s;
		return 0;
	}
	if ((uint64_t)w > c->max_output)
		return jj_fail(c, TERN_ERANGE, "center width too large");
	int64_t pad = w - len, left = pad / 2 + (pad & w & 1);
	struct jj_buf b = {0};
	for (int64_t i = 0; !rc && i < left; i++)
		rc = jj_buf_putc(c, &b, ' ');
	if (!rc)
		rc = jj_buf_put(c, &b, s.u.s.p, s.u.s.n);
	for (int64_t i = 0; !rc && i < pad - left; i++)
		rc = jj_buf_putc(c, &b, ' ');
	return rc ? rc : jj_buf_str(c, &b, out);
}

static int f_indent(struct jj_ctx *c, const char *f, struct jv s, const struct jj_args *a, struct jv *out)
{
	int rc = do_indent(c, s, a, out);
	out->safe = s.safe;
	return rc;
}

static int f_wordcount(struct jj_ctx *c, const char *f, struct jv s, const struct jj_args *a, struct jv *out)
{
	int64_t n = 0;
	bool in = false;
	for (size_t i = 0; i < s.u.s.n; i++) {
		unsigned char ch = (unsigned char)s.u.s.p[i];
		bool w = ch >= 0x80 || ch == '_' || (ch >= '0' && ch <= '9') || is_alpha((char)ch);
		n += w && !in;
		in = w;
	}
	*out = jv_int(n);
	return 0;
}

static int f_striptags(struct jj_ctx *c, const char *f, struct jv s, const struct jj_args *a, struct jv *out)
{
	struct jj_buf b = {0};
	bool tag = false;
	int rc = 0;
	for (size_t i = 0; !rc && i < s.u.s.n; i++) {
		if (s.u.s.p[i] == '<')
			tag = true;
		else if (s.u.s.p[i] == '>' && tag)
			tag = false;
		else if (!tag)
			rc = jj_buf_putc(c, &b, s.u.s.p[i]);
	}
	if (rc || (rc = jj_buf_str(c, &b, &s)))
		return rc;
	struct jv words;
	struct jj_args none = {0};
	if ((rc = str_split(c, s, &none, false, &words)))
		return rc;
	return join_values(c, words, jv_str(" ", 1), false, out);
}

static int f_truncate(struct jj_ctx *c, const char *f, struct jv s, const struct jj_args *a, struct jv *out)
{
	int64_t length, leeway;
	struct jv end = jv_str("...", 3);
	int rc;
	if ((rc = arg_int(c, a, 0, "length", 255, &length)) || (rc = arg_int(c, a, 3, "leeway", 5, &leeway)))
		return rc;
	bool kill = arg_bool(a, 1, "killwords", false);
	if (arg(a, 2, "end", &end) && (rc = need_str(c, end, "truncate's end")))
		return rc;
	int64_t len = (int64_t)jj_utf8_count(s.u.s.p, s.u.s.n), el = (int64_t)jj_utf8_count(end.u.s.p, end.u.s.n);
	if (length < el || leeway < 0)
		return jj_fail(c, TERN_EFORMAT, "truncate: bad length or leeway");
	if (len <= length + leeway) {
		*out = s;
		return 0;
	}
	size_t cut = jj_utf8_offset(s.u.s.p, s.u.s.n, (size_t)(length - el));
	if (!kill) {
		size_t k = cut;
		while (k > 0 && s.u.s.p[k - 1] != ' ')
			k--;
		if (k > 0)
			cut = k - 1;
	}
	struct jj_buf b = {0};
	if ((rc = jj_buf_put(c, &b, s.u.s.p, cut)) || (rc = jj_buf_put(c, &b, end.u.s.p, end.u.s.n)))
		return rc;
	return jj_buf_str(c, &b, out);
}

/* ---- numbers ---- */
static int f_int(struct jj_ctx *c, const char *f, struct jv v, const struct jj_args *a, struct jv *out)
{
	int64_t d, base, i;
	int rc;
	if ((rc = arg_int(c, a, 0, "default", 0, &d)) || (rc = arg_int(c, a, 1, "base", 10, &base)))
		return rc;
	double fl;
	if (v.t == JV_INT || v.t == JV_BOOL)
		*out = jv_int(v.t == JV_INT ? v.u.i : v.u.b);
	else if (v.t == JV_FLOAT && isfinite(v.u.f) && fabs(v.u.f) < 9.2e18)
		*out = jv_int((int64_t)v.u.f);
	else if (v.t == JV_STR && base >= 2 && base <= 36 && parse_pyint(v, (int)base, &i))
		*out = jv_int(i);
	else if (v.t == JV_STR && parse_pyfloat(v, &fl) && isfinite(fl) && fabs(fl) < 9.2e18)
		*out = jv_int((int64_t)fl);
	else if (!arg(a, 0, "default", out))
		*out = jv_int(d);
	return 0;
}

static int f_float(struct jj_ctx *c, const char *f, struct jv v, const struct jj_args *a, struct jv *out)
{
	double d;
	if (jv_is_num(v))
		*out = jv_float(jv_num(v));
	else if (v.t == JV_STR && parse_pyfloat(v, &d))
		*out = jv_float(d);
	else if (!arg(a, 0, "default", out))
		*out = jv_float(0);
	return 0;
}

static int f_abs(struct jj_ctx *c, const char *f, struct jv v, const struct jj_args *a, struct jv *out)
{
	if (v.t == JV_FLOAT)
		*out = jv_float(fabs(v.u.f));
	else if (v.t == JV_INT && v.u.i != INT64_MIN)
		*out = jv_int(v.u.i < 0 ? -v.u.i : v.u.i);
	else if (v.t == JV_BOOL)
		*out = jv_int(v.u.b);
	else
		return jj_fail(c, TERN_EFORMAT, "bad operand type for abs(): '%s'", jv_type_name(v));
	return 0;
}

static int f_round(struct jj_ctx *c, const char *f, struct jv v, const struct jj_args *a, struct jv *out)
{
	int64_t prec;
	struct jv method = jv_str("common", 6);
	int rc;
	if ((rc = arg_int(c, a, 0, "precision", 0, &prec)))
		return rc;
	arg(a, 1, "method", &method);
	if (!jv_is_num(v))
		return jj_fail(c, TERN_EFORMAT, "round needs a number, not %s", jv_type_name(v));
	if (method.t != JV_STR || !(method.u.s.n && (!strcmp(method.u.s.p, "common") ||
						     !strcmp(method.u.s.p, "floor") || !strcmp(method.u.s.p, "ceil"))))
		return jj_fail(c, TERN_EFORMAT, "method must be common, ceil or floor");
	prec = prec > 300 ? 300 : prec < -300 ? -300 : prec;
	double m = pow(10, (double)prec), x0 = jv_num(v) * m, r;
	if (method.u.s.p[0] == 'f')
		r = floor(x0);
	else if (method.u.s.p[0] == 'c' && method.u.s.p[1] == 'e')
		r = ceil(x0);
	else
		r = nearbyint(x0); /* Python's round: half to even */
	if (method.u.s.p[1] == 'o' && v.t != JV_FLOAT) {
		*out = jv_int(v.t == JV_INT ? v.u.i : v.u.b);
		return 0;
	}
	*out = jv_float(r / m);
	return 0;
}

static int f_sum(struct jj_ctx *c, const char *f, struct jv v, const struct jj_args *a, struct jv *out)
{
	struct jv attrname = jv_undef(NULL), acc = jv_int(0), list;
	arg(a, 0, "attribute", &attrname);
	arg(a, 1, "start", &acc);
	int rc = jj_iter_list(c, v, &list);
	if (rc)
		return rc;
	for (size_t i = 0; i < list.u.l->n; i++) {
		struct jv k = list.u.l->v[i];
		if (attrname.t != JV_UNDEF && (rc = getattr_path(c, k, attrname, &k)))
			return rc;
		if (!jv_is_num(k) || !jv_is_num(acc))
			return jj_fail(c, TERN_EFORMAT, "unsupported operand type(s) for +: '%s' and '%s'",
				       jv_type_name(acc), jv_type_name(k));
		if (acc.t == JV_FLOAT || k.t == JV_FLOAT)
			acc = jv_float(jv_num(acc) + jv_num(k));
		else if (__builtin_add_overflow(acc.t == JV_INT ? acc.u.i : acc.u.b, k.t == JV_INT ? k.u.i : k.u.b,
						&acc.u.i))
			return jj_fail(c, TERN_ERANGE, "integer overflow in sum");
		else
			acc.t = JV_INT;
	}
	*out = acc;
	return 0;
}

/* ---- sequences ---- */
static int f_first_last(struct jj_ctx *c, const char *f, struct jv v, const struct jj_args *a, struct jv *out)
{
	struct jv list;
	int rc;
	if (f[0] == 'l' && v.t == JV_LIST && v.gen == JG_GEN)
		return jj_fail(c, TERN_EFORMAT, "'generator' object is not reversible");
	if ((rc = jj_iter_list(c, v, &list)))
		return rc;
	if (list.u.l->n == 0) {
		*out = jv_undef(f[0] == 'f' ? "first of an empty sequence" : "last of an empty sequence");
		out->u.s.n = 1;
		return 0;
	}
	*out = list.u.l->v[f[0] == 'f' ? 0 : list.u.l->n - 1];
	return 0;
}

static int f_seq(struct jj_ctx *c, const char *f, struct jv v, const struct jj_args *a, struct jv *out)
{
	return seq_filter(c, f, v, a, out);
}

static int f_reverse(struct jj_ctx *c, const char *f, struct jv v, const struct jj_args *a, struct jv *out)
{
	struct jv list;
	int rc;
	if (v.t == JV_STR) {
		if ((rc = jj_iter_list(c, v, &list)))
			return rc;
		struct jj_buf b = {0};
		for (size_t i = list.u.l->n; i-- > 0;)
			if ((rc = jj_buf_put(c, &b, list.u.l->v[i].u.s.p, list.u.l->v[i].u.s.n)))
				return rc;
		return jj_buf_str(c, &b, out);
	}
	bool was_gen = v.t == JV_LIST && v.gen == JG_GEN;
	if ((rc = jj_iter_list(c, v, &list)) || (rc = jv_new_list(c, list.u.l->n, out)))
		return rc;
	for (size_t i = list.u.l->n; i-- > 0;)
		out->u.l->v[out->u.l->n++] = list.u.l->v[i];
	out->gen = was_gen ? JG_LIST : JG_GEN; /* reversed(list) is an iterator */
	return 0;
}

static int f_unique(struct jj_ctx *c, const char *f, struct jv v, const struct jj_args *a, struct jv *out)
{
	bool cs = arg_bool(a, 0, "case_sensitive", false);
	struct jv attrname = jv_undef(NULL), keys, list;
	arg(a, 1, "attribute", &attrname);
	int rc;
	if ((rc = jj_iter_list(c, v, &list)) || (rc = jv_new_list(c, list.u.l->n, out)) ||
	    (rc = jv_new_list(c, list.u.l->n, &keys)))
		return rc;
	for (size_t i = 0; i < list.u.l->n; i++) {
		struct jv k = list.u.l->v[i];
		if (attrname.t != JV_UNDEF && (rc = getattr_path(c, k, attrname, &k)))
			return rc;
		if (!cs && k.t == JV_STR && (rc = map_case(c, k, 'l', &k)))
			return rc;
		bool seen = false;
		for (size_t j = 0; !seen && j < keys.u.l->n; j++)
			if ((rc = jv_equal(c, keys.u.l->v[j], k, &seen)))
				return rc;
		if ((c->steps += keys.u.l->n) > c->max_steps)
			return jj_step(c);
		if (!seen) {
			keys.u.l->v[keys.u.l->n++] = k;
			out->u.l->v[out->u.l->n++] = list.u.l->v[i];
		}
	}
	out->gen = JG_GEN;
	return 0;
}

/* sort and dictsort */
static int f_sort(struct jj_ctx *c, const char *f, struct jv v, const struct jj_args *a, struct jv *out)
{
	bool dict = f[0] == 'd';
	bool rev = arg_bool(a, dict ? 2 : 0, "reverse", false), cs = arg_bool(a, dict ? 0 : 1, "case_sensitive", false);
	struct jv attrname = jv_undef(NULL), by = jv_str("key", 3), keys, list;
	int rc;
	if (dict) {
		arg(a, 1, "by", &by);
		if (v.t != JV_DICT)
			return jj_fail(c, TERN_EFORMAT, "dictsort needs a mapping, not %s", jv_type_name(v));
		if ((rc = items_list(c, v.u.d, &list)))
			return rc;
	} else {
		arg(a, 2, "attribute", &attrname);
		struct jv l0;
		if ((rc = jj_iter_list(c, v, &l0)) || (rc = copy_list(c, l0, &list)))
			return rc;
	}
	if ((rc = jv_new_list(c, list.u.l->n, &keys)))
		return rc;
	bool by_value = by.t == JV_STR && by.u.s.n == 5 && !memcmp(by.u.s.p, "value", 5);
	for (size_t i = 0; i < list.u.l->n; i++) {
		struct jv k = list.u.l->v[i];
		if (dict)
			k = k.u.l->v[by_value ? 1 : 0];
		else if (attrname.t != JV_UNDEF && (rc = getattr_path(c, k, attrname, &k)))
			return rc;
		keys.u.l->v[keys.u.l->n++] = k;
	}
	if ((rc = sort_by(c, list.u.l->v, keys.u.l->v, list.u.l->n, cs, rev)))
		return rc;
	*out = list;
	return 0;
}

static int f_batch(struct jj_ctx *c, const char *f, struct jv v, const struct jj_args *a, struct jv *out)
{
	int64_t n = 0;
	struct jv fill = jv_undef(NULL), list;
	int rc;
	if ((rc = arg_int(c, a, 0, "linecount", 1, &n)))
		return rc;
	if (n <= 0)
		return jj_fail(c, TERN_EFORMAT, "batch needs a positive line count");
	bool has_fill = arg(a, 1, "fill_with", &fill) && fill.t != JV_NONE;
	if ((rc = jj_iter_list(c, v, &list)) || (rc = jv_new_list(c, 0, out)))
		return rc;
	struct jv row = {0};
	for (size_t i = 0; i < list.u.l->n; i++) {
		if (i % (size_t)n == 0 && ((rc = jv_new_list(c, (size_t)n < 64 ? (size_t)n : 64, &row)) ||
					   (rc = jv_list_push(c, out, row))))
			return rc;
		if ((rc = jv_list_push(c, &out->u.l->v[out->u.l->n - 1], list.u.l->v[i])))
			return rc;
	}
	out->gen = JG_GEN;
	if (has_fill && out->u.l->n) {
		struct jv *last = &out->u.l->v[out->u.l->n - 1];
		if ((uint64_t)n - last->u.l->n > c->max_steps - c->steps)
			return jj_fail(c, TERN_ERANGE, "batch too large for the step limit");
		while (last->u.l->n < (size_t)n)
			if ((rc = jv_list_push(c, last, fill)))
				return rc;
	}
	return 0;
}

static int f_minmax(struct jj_ctx *c, const char *f, struct jv v, const struct jj_args *a, struct jv *out)
{
	return minmax(c, v, a, f[1] == 'a', out);
}

static int f_attr(struct jj_ctx *c, const char *f, struct jv v, const struct jj_args *a, struct jv *out)
{
	struct jv x;
	if (!arg(a, 0, "name", &x) || x.t != JV_STR)
		return jj_fail(c, TERN_EFORMAT, "attr needs a name");
	if (v.t == JV_DICT) {
		*out = jv_undef(NULL);
		return 0;
	}
	return jj_attr(c, v, x.u.s.p, x.u.s.n, out);
}

/* What jj_filter does before the function runs: FL_UNDEF_ERR, an
 * undefined input is an error (jinja2 touches it at once); FL_STR, the
 * function gets str(value); FL_NEED_STR, the value must be a string
 * already. */
enum { FL_UNDEF_ERR = 1, FL_STR = 2, FL_NEED_STR = 4 };

/* sorted by name (strcmp order): found by bsearch */
static const struct filter {
	const char *name;
	filter_fn *fn;
	uint8_t flags;
} filters[] = {
	{"abs", f_abs, FL_UNDEF_ERR},
	{"attr", f_attr, FL_UNDEF_ERR},
	{"batch", f_batch, 0},
	{"capitalize", f_case, FL_STR},
	{"center", f_center, FL_STR},
	{"count", f_length, 0},
	{"d", f_default, 0},
	{"default", f_default, 0},
	{"dictsort", f_sort, FL_UNDEF_ERR},
	{"e", f_escape, FL_STR},
	{"escape", f_escape, FL_STR},
	{"first", f_first_last, FL_UNDEF_ERR},
	{"float", f_float, 0},
	{"forceescape", f_escape, FL_STR},
	{"indent", f_indent, FL_STR | FL_NEED_STR},
	{"int", f_int, 0},
	{"items", f_items, 0},
	{"join", f_join, 0},
	{"last", f_first_last, FL_UNDEF_ERR},
	{"length", f_length, 0},
	{"list", f_list, 0},
	{"lower", f_case, FL_STR},
	{"map", f_seq, 0},
	{"max", f_minmax, 0},
	{"min", f_minmax, 0},
	{"reject", f_seq, 0},
	{"rejectattr", f_seq, 0},
	{"replace", f_replace, FL_STR},
	{"reverse", f_reverse, 0},
	{"round", f_round, FL_UNDEF_ERR},
	{"safe", f_safe, 0},
	{"select", f_seq, 0},
	{"selectattr", f_seq, 0},
	{"sort", f_sort, 0},
	{"string", f_string, FL_STR},
	{"striptags", f_striptags, FL_STR},
	{"sum", f_sum, 0},
	{"title", f_title, FL_STR},
	{"tojson", f_tojson, 0},
	{"trim", f_trim, FL_STR},
	{"truncate", f_truncate, FL_STR | FL_NEED_STR},
	{"unique", f_unique, 0},
	{"upper", f_case, FL_STR},
	{"wordcount", f_wordcount, FL_STR},
};

static const struct filter *find_filter(const char *name)
{
	return FIND(filters, name);
}

bool jj_filter_exists(const char *name)
{
	return find_filter(name) != NULL;
}

int jj_filter(struct jj_ctx *c, const char *f, struct jv v, const struct jj_args *a, struct jv *out)
{
	const struct filter *fl = find_filter(f);
	if (!fl)
		return jj_fail(c, TERN_EFORMAT, "no filter named '%s'", f);
	if (v.t == JV_UNDEF && (fl->flags & FL_UNDEF_ERR)) {
		struct jv u = v;
		if (!u.u.s.p)
			u.u.s.p = "value";
		return jj_fail(c, TERN_EFORMAT, u.u.s.n == 1 ? "%s" : "'%s' is undefined", u.u.s.p);
	}
	if (fl->flags & FL_STR) {
		int rc;
		if ((fl->flags & FL_NEED_STR) && v.t != JV_STR)
			return jj_fail(c, TERN_EFORMAT, "%s needs a string, not %s", f, jv_type_name(v));
		if ((rc = jv_to_str(c, v, &v)))
			return rc;
	}
	return fl->fn(c, f, v, a, out);
}
