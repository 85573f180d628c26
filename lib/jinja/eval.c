/* eval.c - the tree walker: statements write into the current output
 * buffer, expressions give values. Scopes follow jinja2: the context is
 * the outermost frame, a for loop gets a fresh frame per iteration (a
 * `set` inside does not outlive it; namespace() is the way out), a macro
 * call gets its own frame whose parent is where the macro was defined, and
 * if/else share their enclosing frame. Every node visited counts one step;
 * loop iterations and macro calls are bounded too. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/jinja/jinja_int.h"

enum { JJ_BREAK = 1, JJ_CONTINUE = 2 };

static int eval(struct jj_ctx *c, const struct jj_node *x, struct jv *out);
static int exec_body(struct jj_ctx *c, const struct jj_nodes *body, struct jj_frame *f);

int jj_step(struct jj_ctx *c)
{
	if (++c->steps > c->max_steps)
		return jj_fail(c, TERN_ERANGE, "more than %llu evaluation steps", (unsigned long long)c->max_steps);
	return 0;
}

static void at(struct jj_ctx *c, const struct jj_node *x)
{
	c->line = x->line;
	c->col = x->col;
}

/* ---- frames -------------------------------------------------------------- */
static bool stores_has(const struct jj_nodes *s, const char *name, size_t n)
{
	for (size_t i = 0; s && i < s->n; i++)
		if (s->v[i]->name_n == n && memcmp(s->v[i]->name, name, n) == 0)
			return true;
	return false;
}

static struct jv *frame_find(struct jj_frame *f, const char *name, size_t n)
{
	for (; f; f = f->parent)
		for (size_t i = f->n; i-- > 0;)
			if (f->v[i].n == n && memcmp(f->v[i].name, name, n) == 0)
				return &f->v[i].v;
	return NULL;
}

/* A name as jinja2 resolves it: the innermost binding, but a scope that
 * assigns the name somewhere hides the context from the scopes inside it
 * until it has assigned it (jinja2 compiles such a name to a local that
 * starts undefined); in its own code the name falls back to the context. */
static const struct jv *lookup(struct jj_frame *start, const char *name, size_t n, bool *hidden)
{
	*hidden = false;
	for (struct jj_frame *f = start; f; f = f->parent) {
		for (size_t i = f->n; i-- > 0;)
			if (f->v[i].n == n && memcmp(f->v[i].name, name, n) == 0)
				return &f->v[i].v;
		if (f != start && stores_has(f->stores, name, n)) {
			*hidden = true;
			return NULL;
		}
	}
	return NULL;
}

static int frame_set(struct jj_ctx *c, struct jj_frame *f, const char *name, size_t n, struct jv v)
{
	for (size_t i = 0; i < f->n; i++)
		if (f->v[i].n == n && memcmp(f->v[i].name, name, n) == 0) {
			f->v[i].v = v;
			return 0;
		}
	if (f->n == f->cap) {
		size_t cap = f->cap ? 2 * f->cap : 8;
		struct jj_var *nv = jj_alloc(&c->a, cap * sizeof *nv);
		if (!nv)
			return jj_oom(c);
		if (f->n)
			memcpy(nv, f->v, f->n * sizeof *nv);
		f->v = nv;
		f->cap = cap;
	}
	f->v[f->n].name = name;
	f->v[f->n].n = n;
	f->v[f->n].v = v;
	f->n++;
	return 0;
}

static struct jj_frame *frame_new(struct jj_ctx *c, struct jj_frame *parent)
{
	struct jj_frame *f = jj_alloc(&c->a, sizeof *f);
	if (f)
		f->parent = parent;
	else
		jj_oom(c);
	return f;
}

/* ---- undefined ----------------------------------------------------------- */
static int undefined_error(struct jj_ctx *c, struct jv u)
{
	if (u.u.s.p && u.u.s.n == 1)
		return jj_fail(c, TERN_EFORMAT, "%s", u.u.s.p);
	if (u.u.s.p)
		return jj_fail(c, TERN_EFORMAT, "'%s' is undefined", u.u.s.p);
	return jj_fail(c, TERN_EFORMAT, "undefined value");
}

static struct jv undef_attr(struct jj_ctx *c, struct jv obj, const char *name, size_t n, bool item)
{
	struct jv u = jv_undef(NULL);
	char msg[200];
	if (item)
		snprintf(msg, sizeof msg, "'%s object' has no item %.*s%.*s%.*s", jv_type_name(obj),
			 obj.t == JV_DICT ? 1 : 0, "'", (int)(n > 100 ? 100 : n), name, obj.t == JV_DICT ? 1 : 0, "'");
	else
		snprintf(msg, sizeof msg, "'%s object' has no attribute '%.*s'", jv_type_name(obj),
			 (int)(n > 100 ? 100 : n), name);
	size_t l = strlen(msg);
	char *s = jj_alloc(&c->a, l + 1);
	if (s) {
		memcpy(s, msg, l);
		u.u.s.p = s;
		u.u.s.n = 1;
	}
	return u;
}

/* ---- attributes and items ------------------------------------------------ */
static int loop_attr(struct jj_ctx *c, const struct jj_loop *L, const char *name, struct jv *out)
{
	int64_t i = (int64_t)L->i, n = (int64_t)L->n;
	if (!strcmp(name, "index"))
		*out = jv_int(i + 1);
	else if (!strcmp(name, "index0"))
		*out = jv_int(i);
	else if (!strcmp(name, "revindex"))
		*out = jv_int(n - i);
	else if (!strcmp(name, "revindex0"))
		*out = jv_int(n - i - 1);
	else if (!strcmp(name, "first"))
		*out = jv_bool(i == 0);
	else if (!strcmp(name, "last"))
		*out = jv_bool(i == n - 1);
	else if (!strcmp(name, "length"))
		*out = jv_int(n);
	else if (!strcmp(name, "depth"))
		*out = jv_int(L->depth0 + 1);
	else if (!strcmp(name, "depth0"))
		*out = jv_int(L->depth0);
	else if (!strcmp(name, "previtem"))
		*out = i > 0 ? L->items[i - 1] : jv_undef("previtem");
	else if (!strcmp(name, "nextitem"))
		*out = i + 1 < n ? L->items[i + 1] : jv_undef("nextitem");
	else {
		struct jv l = {.t = JV_LOOP};
		*out = undef_attr(c, l, name, strlen(name), false);
	}
	return 0;
}

/* Python's getattr(obj, name) for the methods of strings, dicts and lists,
 * as jinja2's sandbox gives it: the bound method, or for one that would
 * change the object, an undefined that says so. false: no such method. */
static bool method_attr(struct jj_ctx *c, struct jv obj, const char *name, size_t n, struct jv *out)
{
	char key[32];
	if (obj.t != JV_STR && obj.t != JV_DICT && !(obj.t == JV_LIST && obj.gen == JG_LIST))
		return false;
	if (n >= sizeof key || memchr(name, 0, n))
		return false;
	memcpy(key, name, n);
	key[n] = 0;
	if (!jj_has_method(obj, key))
		return false;
	if (jj_method_unsafe(obj, key)) {
		char msg[120];
		snprintf(msg, sizeof msg, "access to attribute '%s' of '%s' object is unsafe.", key, jv_type_name(obj));
		struct jv u;
		*out = jv_undef(NULL);
		if (!jv_strdup(c, msg, strlen(msg), &u)) {
			out->u.s.p = u.u.s.p;
			out->u.s.n = 1; /* the text is the message */
		}
		return true;
	}
	struct jj_bound *bm = jj_alloc(&c->a, sizeof *bm);
	struct jv nm;
	if (!bm || jv_strdup(c, key, n, &nm)) {
		*out = jv_undef(NULL); /* the arena's limit: the next allocation fails with it */
		return true;
	}
	bm->obj = obj;
	bm->name = nm.u.s.p;
	*out = (struct jv){.t = JV_METHOD};
	out->u.bm = bm;
	return true;
}

/* x.name: the attribute first (a dict's items, keys, get, ... are its
 * methods, whatever its keys), then the key, as jinja2's getattr */
int jj_attr(struct jj_ctx *c, struct jv obj, const char *name, size_t n, struct jv *out)
{
	if (method_attr(c, obj, name, n, out))
		return 0;
	switch (obj.t) {
	case JV_UNDEF:
		return undefined_error(c, obj);
	case JV_DICT:
	case JV_NS: {
		const struct jv *v = jv_dict_getn(obj.u.d, name, n);
		*out = v ? *v : undef_attr(c, obj, name, n, false);
		return 0;
	}
	case JV_LOOP:
		return loop_attr(c, obj.u.loop, name, out);
	default:
		*out = undef_attr(c, obj, name, n, false);
		return 0;
	}
}

/* x[key]: the key first, then (for a string key) the attribute, as
 * jinja2's getitem */
int jj_item(struct jj_ctx *c, struct jv obj, struct jv key, struct jv *out)
{
	switch (obj.t) {
	case JV_UNDEF:
		return undefined_error(c, obj);
	case JV_DICT:
	case JV_NS: {
		const struct jv *v = jv_dict_get(obj.u.d, key);
		if (v) {
			*out = *v;
			return 0;
		}
		break;
	}
	case JV_LIST:
		if (obj.gen)
			return jj_fail(c, TERN_EFORMAT, "'%s' object is not subscriptable", jv_type_name(obj));
		if (key.t == JV_INT || key.t == JV_BOOL) {
			int64_t i = key.t == JV_INT ? key.u.i : key.u.b, n = (int64_t)obj.u.l->n;
			if (i < 0)
				i += n;
			if (i >= 0 && i < n) {
				*out = obj.u.l->v[i];
				return 0;
			}
		}
		break;
	case JV_STR:
		if (key.t == JV_INT) {
			int64_t n = (int64_t)jj_utf8_count(obj.u.s.p, obj.u.s.n), i = key.u.i;
			if (i < 0)
				i += n;
			if (i >= 0 && i < n) {
				size_t b = jj_utf8_offset(obj.u.s.p, obj.u.s.n, (size_t)i);
				size_t e = jj_utf8_offset(obj.u.s.p, obj.u.s.n, (size_t)i + 1);
				*out = jv_str(obj.u.s.p + b, e - b);
				return 0;
			}
		}
		break;
	case JV_LOOP:
		if (key.t == JV_STR)
			return loop_attr(c, obj.u.loop, key.u.s.p, out);
		break;
	default:
		break;
	}
	if (key.t == JV_STR && obj.t != JV_DICT)
		return jj_attr(c, obj, key.u.s.p, key.u.s.n, out);
	if (key.t == JV_STR && method_attr(c, obj, key.u.s.p, key.u.s.n, out))
		return 0;
	char tmp[64] = "";
	struct jj_buf b = {0};
	if (key.t == JV_STR)
		snprintf(tmp, sizeof tmp, "%.*s", (int)(key.u.s.n > 60 ? 60 : key.u.s.n), key.u.s.p);
	else if (!jv_write_str(c, &b, key) && b.p)
		snprintf(tmp, sizeof tmp, "%.60s", b.p);
	*out = undef_attr(c, obj, tmp, strlen(tmp), true);
	return 0;
}

int jj_iter_list(struct jj_ctx *c, struct jv v, struct jv *list)
{
	int rc;
	switch (v.t) {
	case JV_LIST:
		*list = v;
		list->tuple = false;
		list->gen = JG_LIST;
		return 0;
	case JV_UNDEF:
		return jv_new_list(c, 0, list);
	case JV_DICT:
		if ((rc = jv_new_list(c, v.u.d->n, list)))
			return rc;
		for (size_t i = 0; i < v.u.d->n; i++)
			list->u.l->v[list->u.l->n++] = v.u.d->k[i];
		return 0;
	case JV_STR: {
		/* one piece per lead byte; a stray continuation byte at the start
		 * (invalid UTF-8 in a template) is a piece of its own */
		size_t n = jj_utf8_count(v.u.s.p, v.u.s.n) + 1;
		if ((rc = jv_new_list(c, n, list)))
			return rc;
		size_t i = 0;
		while (i < v.u.s.n && list->u.l->n < n) {
			size_t j = i + 1;
			while (j < v.u.s.n && ((unsigned char)v.u.s.p[j] & 0xC0) == 0x80)
				j++;
			list->u.l->v[list->u.l->n++] = jv_str(v.u.s.p + i, j - i);
			i = j;
		}
		return 0;
	}
	default:
		return jj_fail(c, TERN_EFORMAT, "'%s' object is not iterable", jv_type_name(v));
	}
}

/* ---- calls --------------------------------------------------------------- */
static int eval_args(struct jj_ctx *c, const struct jj_node *x, struct jj_args *a)
{
	memset(a, 0, sizeof *a);
	struct jv *pos = NULL, *kwv = NULL;
	if (x->args.n && !(pos = jj_alloc(&c->a, x->args.n * sizeof *pos)))
		return jj_oom(c);
	if (x->kwvals.n && !(kwv = jj_alloc(&c->a, x->kwvals.n * sizeof *kwv)))
		return jj_oom(c);
	for (size_t i = 0; i < x->args.n; i++) {
		int rc = eval(c, x->args.v[i], &pos[i]);
		if (rc)
			return rc;
	}
	for (size_t i = 0; i < x->kwvals.n; i++) {
		int rc = eval(c, x->kwvals.v[i], &kwv[i]);
		if (rc)
			return rc;
	}
	a->pos = pos;
	a->npos = x->args.n;
	a->kwn = x->kwnames;
	a->kwv = kwv;
	a->nkw = x->kwvals.n;
	return 0;
}

static int call_macro(struct jj_ctx *c, const struct jj_macro *m, const struct jj_args *a, struct jv caller,
		      struct jv *out)
{
	const struct jj_node *def = m->def;
	if (++c->depth > c->max_depth)
		return jj_fail(c, TERN_ERANGE, "macro calls nested deeper than %u", c->max_depth);
	struct jj_frame *f = frame_new(c, m->closure);
	if (!f)
		return jj_oom(c);
	f->stores = &def->stores;
	int rc = 0;
	size_t np = def->targets.n;
	struct jv varargs, kwargs;
	if ((rc = jv_new_list(c, 0, &varargs)) || (rc = jv_new_dict(c, 0, &kwargs)))
		return rc;
	varargs.tuple = true;
	for (size_t i = 0; i < a->npos; i++) {
		if (i < np)
			rc = frame_set(c, f, def->targets.v[i]->name, def->targets.v[i]->name_n, a->pos[i]);
		else
			rc = jv_list_push(c, &varargs, a->pos[i]);
		if (rc)
			return rc;
	}
	for (size_t k = 0; k < a->nkw; k++) {
		bool hit = false;
		for (size_t i = 0; i < np; i++)
			if (!strcmp(def->targets.v[i]->name, a->kwn[k])) {
				if (i < a->npos)
					return jj_fail(c, TERN_EFORMAT, "macro got multiple values for argument '%s'", a->kwn[k]);
				if ((rc = frame_set(c, f, def->targets.v[i]->name, def->targets.v[i]->name_n, a->kwv[k])))
					return rc;
				hit = true;
			}
		if (!hit) {
			struct jv kk = jv_str(a->kwn[k], strlen(a->kwn[k]));
			if ((rc = jv_dict_set(c, kwargs.u.d, kk, a->kwv[k])))
				return rc;
		}
	}
	if ((rc = frame_set(c, f, "varargs", 7, varargs)) || (rc = frame_set(c, f, "kwargs", 6, kwargs)))
		return rc;
	if (caller.t != JV_UNDEF && (rc = frame_set(c, f, "caller", 6, caller)))
		return rc;
	/* defaults of the parameters not given, evaluated in the macro's frame */
	struct jj_frame *saved = c->frame;
	c->frame = f;
	for (size_t i = 0; i < np; i++) {
		const struct jj_node *p = def->targets.v[i];
		bool given = false;
		for (size_t j = 0; j < f->n; j++)
			given = given || (f->v[j].n == p->name_n && !memcmp(f->v[j].name, p->name, p->name_n));
		if (given)
			continue;
		struct jv d = jv_undef(p->name);
		if (def->kwvals.v[i] && (rc = eval(c, def->kwvals.v[i], &d)))
			break;
		if ((rc = frame_set(c, f, p->name, p->name_n, d)))
			break;
	}
	struct jj_buf buf = {0}, *saved_out = c->out;
	c->out = &buf;
	if (!rc)
		rc = exec_body(c, &def->body, f);
	c->out = saved_out;
	c->frame = saved;
	c->depth--;
	if (rc > 0)
		rc = 0;
	if (rc)
		return rc;
	return jj_buf_str(c, &buf, out);
}

static int call_value(struct jj_ctx *c, const struct jj_node *x, struct jv fn, const struct jj_args *a,
		      struct jv caller, struct jv *out)
{
	at(c, x);
	switch (fn.t) {
	case JV_MACRO:
		return call_macro(c, fn.u.m, a, caller, out);
	case JV_FUNC:
		return jj_call_global(c, fn.u.fn, a, out);
	case JV_METHOD:
		return jj_method(c, fn.u.bm->obj, fn.u.bm->name, a, out);
	case JV_UNDEF:
		return undefined_error(c, fn);
	default:
		return jj_fail(c, TERN_EFORMAT, "'%s' object is not callable", jv_type_name(fn));
	}
}

static int eval_call(struct jj_ctx *c, const struct jj_node *x, struct jv caller, struct jv *out)
{
	int rc;
	struct jj_args a;
	if (x->a->kind == JN_ATTR) {
		struct jv obj;
		if ((rc = eval(c, x->a->a, &obj)) || (rc = eval_args(c, x, &a)))
			return rc;
		at(c, x->a);
		if (obj.t == JV_UNDEF)
			return undefined_error(c, obj);
		/* the method first, as jj_attr finds it; called at once, unbound */
		if (obj.t != JV_NS) {
			rc = jj_method(c, obj, x->a->name, &a, out);
			if (rc != -1)
				return rc;
		}
		struct jv fn;
		if ((rc = jj_attr(c, obj, x->a->name, x->a->name_n, &fn)))
			return rc;
		return call_value(c, x, fn, &a, caller, out);
	}
	struct jv fn;
	if ((rc = eval(c, x->a, &fn)) || (rc = eval_args(c, x, &a)))
		return rc;
	return call_value(c, x, fn, &a, caller, out);
}

/* ---- operators ----------------------------------------------------------- */
static const char *const op_sym[] = {"+", "-", "*", "/", "//", "%", "**"};

/* a ** b for b >= 0 by squaring: |a| >= 2 overflows within 63 steps of b */
static bool int_pow(int64_t a, int64_t b, int64_t *v)
{
	bool ovf = false;
	if (a == 0 || a == 1 || a == -1) {
		*v = b == 0 ? 1 : (a == -1 && (b & 1) == 0) ? 1 : a;
		return false;
	}
	*v = 1;
	for (int64_t base = a, e = b; e > 0 && !ovf; e >>= 1) {
		if (e & 1)
			ovf = __builtin_mul_overflow(*v, base, v);
		if (e > 1 && !ovf)
			ovf = __builtin_mul_overflow(base, base, &base);
	}
	return ovf;
}

/* Python's // and % on ints: the quotient floored, the remainder with the
 * divisor's sign */
static int int_divmod(struct jj_ctx *c, int op, int64_t a, int64_t b, int64_t *v, bool *ovf)
{
	if (b == 0)
		return jj_fail(c, TERN_EFORMAT, "integer division or modulo by zero");
	if (a == INT64_MIN && b == -1) {
		*ovf = op == JO_FDIV;
		*v = 0;
		return 0;
	}
	*v = op == JO_FDIV ? a / b : a % b;
	if (op == JO_FDIV && (a % b != 0) && ((a < 0) != (b < 0)))
		(*v)--;
	if (op == JO_MOD && *v != 0 && ((*v < 0) != (b < 0)))
		*v += b;
	return 0;
}

/* ints (and bools) with any operator but /, which gives a float */
static int int_arith(struct jj_ctx *c, int op, int64_t a, int64_t b, struct jv *out)
{
	int64_t v = 0;
	bool ovf = false;
	int rc = 0;
	switch (op) {
	case JO_ADD: ovf = __builtin_add_overflow(a, b, &v); break;
	case JO_SUB: ovf = __builtin_sub_overflow(a, b, &v); break;
	case JO_MUL: ovf = __builtin_mul_overflow(a, b, &v); break;
	case JO_FDIV:
	case JO_MOD: rc = int_divmod(c, op, a, b, &v, &ovf); break;
	case JO_POW:
		if (b < 0) {
			*out = jv_float(pow((double)a, (double)b));
			return 0;
		}
		ovf = int_pow(a, b, &v);
		break;
	}
	if (rc)
		return rc;
	if (ovf)
		return jj_fail(c, TERN_ERANGE, "integer overflow in '%s'", op_sym[op]);
	*out = jv_int(v);
	return 0;
}

static int float_arith(struct jj_ctx *c, int op, double a, double b, struct jv *out)
{
	double v = 0;
	switch (op) {
	case JO_ADD: v = a + b; break;
	case JO_SUB: v = a - b; break;
	case JO_MUL: v = a * b; break;
	case JO_DIV:
		if (b == 0)
			return jj_fail(c, TERN_EFORMAT, "division by zero");
		v = a / b;
		break;
	case JO_FDIV:
	case JO_MOD:
		if (b == 0)
			return jj_fail(c, TERN_EFORMAT, "float division or modulo by zero");
		v = fmod(a, b);
		if (v != 0 && ((v < 0) != (b < 0)))
			v += b;
		if (op == JO_FDIV) {
			/* Python's float floor division, from its divmod */
			double div = (a - v) / b, flo = floor(div);
			v = div - flo > 0.5 ? flo + 1 : flo;
		}
		break;
	case JO_POW: v = pow(a, b); break;
	}
	*out = jv_float(v);
	return 0;
}

/* str + str; markupsafe: Markup + str escapes the str, either way round */
static int str_concat(struct jj_ctx *c, struct jv l, struct jv r, struct jv *out)
{
	struct jv a = l, z = r;
	int rc;
	if (l.safe != r.safe) {
		struct jv *plain = l.safe ? &z : &a;
		struct jj_args none = {0};
		if ((rc = jj_filter(c, "escape", *plain, &none, plain)))
			return rc;
	}
	struct jj_buf b = {0};
	if ((rc = jj_buf_put(c, &b, a.u.s.p, a.u.s.n)) || (rc = jj_buf_put(c, &b, z.u.s.p, z.u.s.n)))
		return rc;
	rc = jj_buf_str(c, &b, out);
	out->safe = l.safe || r.safe;
	return rc;
}

static int list_concat(struct jj_ctx *c, struct jv l, struct jv r, struct jv *out)
{
	int rc = jv_new_list(c, l.u.l->n + r.u.l->n, out);
	if (rc)
		return rc;
	for (size_t i = 0; i < l.u.l->n; i++)
		out->u.l->v[out->u.l->n++] = l.u.l->v[i];
	for (size_t i = 0; i < r.u.l->n; i++)
		out->u.l->v[out->u.l->n++] = r.u.l->v[i];
	out->tuple = l.tuple;
	return 0;
}

/* str * k, bounded by the output limit */
static int str_repeat(struct jj_ctx *c, struct jv l, int64_t k, struct jv *out)
{
	int rc;
	if (l.u.s.n && (uint64_t)k > c->max_output / l.u.s.n)
		return jj_fail(c, TERN_ERANGE, "a string longer than the output limit (%zu bytes)", c->max_output);
	struct jj_buf b = {0};
	if (l.u.s.n == 0)
		k = 0; /* '' * 10**9 is '', at once */
	for (int64_t i = 0; i < k; i++)
		if ((rc = jj_buf_put(c, &b, l.u.s.p, l.u.s.n)))
			return rc;
	rc = jj_buf_str(c, &b, out);
	out->safe = l.safe;
	return rc;
}

/* list * k, bounded by the step limit */
static int list_repeat(struct jj_ctx *c, struct jv l, int64_t k, struct jv *out)
{
	int rc;
	if (l.u.l->n == 0)
		k = 0;
	if (l.u.l->n && (uint64_t)k > (c->max_steps - c->steps) / l.u.l->n)
		return jj_fail(c, TERN_ERANGE, "a list too long for the step limit");
	c->steps += (uint64_t)k * l.u.l->n;
	if ((rc = jv_new_list(c, (size_t)k * l.u.l->n, out)))
		return rc;
	for (int64_t i = 0; i < k; i++)
		for (size_t j = 0; j < l.u.l->n; j++)
			out->u.l->v[out->u.l->n++] = l.u.l->v[j];
	out->tuple = l.tuple;
	return 0;
}

static bool is_seq(struct jv v) { return v.t == JV_STR || v.t == JV_LIST; }
static bool is_int(struct jv v) { return v.t == JV_INT || v.t == JV_BOOL; }
static int64_t int_of(struct jv v) { return v.t == JV_INT ? v.u.i : v.u.b; }

static int binop(struct jj_ctx *c, int op, struct jv l, struct jv r, struct jv *out)
{
	if (l.t == JV_UNDEF)
		return undefined_error(c, l);
	if (r.t == JV_UNDEF)
		return undefined_error(c, r);
	if (jv_is_num(l) && jv_is_num(r)) {
		if (l.t != JV_FLOAT && r.t != JV_FLOAT && op != JO_DIV)
			return int_arith(c, op, int_of(l), int_of(r), out);
		return float_arith(c, op, jv_num(l), jv_num(r), out);
	}
	if (op == JO_ADD && l.t == JV_STR && r.t == JV_STR)
		return str_concat(c, l, r, out);
	if (op == JO_ADD && l.t == JV_LIST && r.t == JV_LIST)
		return list_concat(c, l, r, out);
	if (op == JO_MUL && is_seq(l) && is_int(r)) {
		int64_t k = int_of(r) < 0 ? 0 : int_of(r);
		return l.t == JV_STR ? str_repeat(c, l, k, out) : list_repeat(c, l, k, out);
	}
	if (op == JO_MUL && is_seq(r) && is_int(l))
		return binop(c, op, r, l, out);
	return jj_fail(c, TERN_EFORMAT, "unsupported operand type(s) for %s: '%s' and '%s'", op_sym[op],
		       jv_type_name(l), jv_type_name(r));
}

static int compare(struct jj_ctx *c, int op, struct jv l, struct jv r, bool *res)
{
	int rc;
	bool eq, lt;
	switch (op) {
	case JO_EQ:
	case JO_NE:
		if ((rc = jv_equal(c, l, r, &eq)))
			return rc;
		*res = op == JO_EQ ? eq : !eq;
		return 0;
	case JO_LT: return jv_less(c, l, r, res);
	case JO_GT: return jv_less(c, r, l, res);
	case JO_LE:
		if ((rc = jv_less(c, r, l, &lt)))
			return rc;
		*res = !lt;
		return 0;
	case JO_GE:
		if ((rc = jv_less(c, l, r, &lt)))
			return rc;
		*res = !lt;
		return 0;
	default: {
		bool in = false;
		if (r.t == JV_STR) {
			if (l.t != JV_STR)
				return jj_fail(c, TERN_EFORMAT, "'in <string>' requires string as left operand, not %s",
					       jv_type_name(l));
			in = l.u.s.n == 0 || memmem(r.u.s.p, r.u.s.n, l.u.s.p, l.u.s.n) != NULL;
		} else if (r.t == JV_LIST) {
			for (size_t i = 0; !in && i < r.u.l->n; i++)
				if ((rc = jv_equal(c, l, r.u.l->v[i], &in)))
					return rc;
		} else if (r.t == JV_DICT || r.t == JV_NS) {
			in = jv_dict_get(r.u.d, l) != NULL;
		} else if (r.t != JV_UNDEF) {
			return jj_fail(c, TERN_EFORMAT, "argument of type '%s' is not iterable", jv_type_name(r));
		}
		*res = op == JO_IN ? in : !in;
		return 0;
	}
	}
}

static int clamp_slice(int64_t *v, int64_t n, bool neg_step)
{
	if (*v < 0) {
		*v += n;
		if (*v < 0)
			*v = neg_step ? -1 : 0;
	} else if (*v >= n) {
		*v = neg_step ? n - 1 : n;
	}
	return 0;
}

static int eval_slice(struct jj_ctx *c, const struct jj_node *x, struct jv *out)
{
	struct jv obj, parts[3];
	const struct jj_node *pn[3] = {x->b, x->c, x->filter};
	int rc = eval(c, x->a, &obj);
	if (rc)
		return rc;
	for (int i = 0; i < 3; i++) {
		parts[i] = jv_none();
		if (pn[i] && (rc = eval(c, pn[i], &parts[i])))
			return rc;
		if (parts[i].t != JV_NONE && parts[i].t != JV_INT) {
			at(c, x);
			return jj_fail(c, TERN_EFORMAT, "slice indices must be integers or None");
		}
	}
	at(c, x);
	if (obj.t == JV_UNDEF)
		return undefined_error(c, obj);
	struct jv seq;
	bool is_str = obj.t == JV_STR;
	if ((obj.t != JV_STR && obj.t != JV_LIST) || (obj.t == JV_LIST && obj.gen))
		return jj_fail(c, TERN_EFORMAT, "'%s' object is not subscriptable", jv_type_name(obj));
	if ((rc = jj_iter_list(c, obj, &seq)))
		return rc;
	int64_t n = (int64_t)seq.u.l->n;
	int64_t step = parts[2].t == JV_INT ? parts[2].u.i : 1;
	if (step == 0)
		return jj_fail(c, TERN_EFORMAT, "slice step cannot be zero");
	int64_t start, stop;
	if (parts[0].t == JV_INT) {
		start = parts[0].u.i;
		clamp_slice(&start, n, step < 0);
	} else {
		start = step > 0 ? 0 : n - 1;
	}
	if (parts[1].t == JV_INT) {
		stop = parts[1].u.i;
		clamp_slice(&stop, n, step < 0);
	} else {
		stop = step > 0 ? n : -1;
	}
	struct jv res;
	if ((rc = jv_new_list(c, 0, &res)))
		return rc;
	for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step)
		if ((rc = jv_list_push(c, &res, seq.u.l->v[i])))
			return rc;
	if (!is_str) {
		res.tuple = obj.tuple;
		*out = res;
		return 0;
	}
	struct jj_buf b = {0};
	for (size_t i = 0; i < res.u.l->n; i++)
		if ((rc = jj_buf_put(c, &b, res.u.l->v[i].u.s.p, res.u.l->v[i].u.s.n)))
			return rc;
	return jj_buf_str(c, &b, out);
}

static int eval_node(struct jj_ctx *c, const struct jj_node *x, struct jv *out);

/* Every evaluation and statement level counts against max_rec: a macro
 * recursing through a deep expression would otherwise multiply the two
 * nestings on the C stack. */
static int eval(struct jj_ctx *c, const struct jj_node *x, struct jv *out)
{
	if (++c->rec > c->max_rec) {
		at(c, x);
		return jj_fail(c, TERN_ERANGE, "evaluation nested deeper than %u levels", c->max_rec);
	}
	int rc = eval_node(c, x, out);
	c->rec--;
	return rc;
}

/* ---- expressions: one function per node kind ---------------------------- */
typedef int eval_fn(struct jj_ctx *c, const struct jj_node *x, struct jv *out);

static int ev_lit(struct jj_ctx *c, const struct jj_node *x, struct jv *out)
{
	*out = x->lit;
	return 0;
}

static int ev_name(struct jj_ctx *c, const struct jj_node *x, struct jv *out)
{
	bool hidden;
	const struct jv *v = lookup(c->frame, x->name, x->name_n, &hidden);
	if (v) {
		*out = *v;
		return 0;
	}
	if (!hidden && jj_global_lookup(x->name, x->name_n, out) == 0)
		return 0;
	*out = jv_undef(x->name);
	return 0;
}

/* list and tuple displays */
static int ev_list(struct jj_ctx *c, const struct jj_node *x, struct jv *out)
{
	struct jv l;
	int rc = jv_new_list(c, x->args.n, out);
	if (rc)
		return rc;
	for (size_t i = 0; i < x->args.n; i++) {
		if ((rc = eval(c, x->args.v[i], &l)))
			return rc;
		out->u.l->v[out->u.l->n++] = l;
	}
	out->tuple = x->kind == JN_TUPLE;
	return 0;
}

static int ev_dict(struct jj_ctx *c, const struct jj_node *x, struct jv *out)
{
	struct jv l, r;
	int rc = jv_new_dict(c, x->args.n, out);
	if (rc)
		return rc;
	for (size_t i = 0; i < x->args.n; i++) {
		if ((rc = eval(c, x->args.v[i], &l)) || (rc = eval(c, x->kwvals.v[i], &r)))
			return rc;
		if (l.t == JV_LIST || l.t == JV_DICT) {
			at(c, x->args.v[i]);
			return jj_fail(c, TERN_EFORMAT, "unhashable type: '%s'", jv_type_name(l));
		}
		if ((rc = jv_dict_set(c, out->u.d, l, r)))
			return rc;
	}
	return 0;
}

static int ev_attr(struct jj_ctx *c, const struct jj_node *x, struct jv *out)
{
	struct jv l;
	int rc = eval(c, x->a, &l);
	if (rc)
		return rc;
	at(c, x);
	return jj_attr(c, l, x->name, x->name_n, out);
}

static int ev_item(struct jj_ctx *c, const struct jj_node *x, struct jv *out)
{
	struct jv l, r;
	int rc;
	if ((rc = eval(c, x->a, &l)) || (rc = eval(c, x->b, &r)))
		return rc;
	at(c, x);
	return jj_item(c, l, r, out);
}

static int ev_call(struct jj_ctx *c, const struct jj_node *x, struct jv *out)
{
	return eval_call(c, x, jv_undef(NULL), out);
}

/* value|name(args); a {% filter %} block's chain starts from its text */
static int ev_filter(struct jj_ctx *c, const struct jj_node *x, struct jv *out)
{
	struct jv l;
	struct jj_args a;
	int rc;
	if (x->a) {
		if ((rc = eval(c, x->a, &l)))
			return rc;
	} else {
		l = *c->leaf;
	}
	if ((rc = eval_args(c, x, &a)))
		return rc;
	at(c, x);
	return jj_filter(c, x->name, l, &a, out);
}

static int ev_test(struct jj_ctx *c, const struct jj_node *x, struct jv *out)
{
	struct jv l;
	struct jj_args a;
	bool b;
	int rc;
	if ((rc = eval(c, x->a, &l)) || (rc = eval_args(c, x, &a)))
		return rc;
	at(c, x);
	if ((rc = jj_test(c, x->name, l, &a, &b)))
		return rc;
	*out = jv_bool(x->op ? !b : b);
	return 0;
}

static int ev_not(struct jj_ctx *c, const struct jj_node *x, struct jv *out)
{
	struct jv l;
	int rc = eval(c, x->a, &l);
	if (rc)
		return rc;
	*out = jv_bool(!jv_truthy(l));
	return 0;
}

/* unary - and + */
static int ev_sign(struct jj_ctx *c, const struct jj_node *x, struct jv *out)
{
	struct jv l;
	int rc = eval(c, x->a, &l);
	if (rc)
		return rc;
	at(c, x);
	if (l.t == JV_UNDEF)
		return undefined_error(c, l);
	if (!jv_is_num(l))
		return jj_fail(c, TERN_EFORMAT, "bad operand type for unary %c: '%s'", x->kind == JN_NEG ? '-' : '+',
			       jv_type_name(l));
	if (x->kind == JN_POS)
		*out = l.t == JV_BOOL ? jv_int(l.u.b) : l;
	else if (l.t == JV_FLOAT)
		*out = jv_float(-l.u.f);
	else if (l.t == JV_INT && l.u.i == INT64_MIN)
		return jj_fail(c, TERN_ERANGE, "integer overflow in unary -");
	else
		*out = jv_int(l.t == JV_INT ? -l.u.i : -(int64_t)l.u.b);
	return 0;
}

/* and, or: the deciding operand itself, as Python gives it */
static int ev_logic(struct jj_ctx *c, const struct jj_node *x, struct jv *out)
{
	struct jv l;
	int rc = eval(c, x->a, &l);
	if (rc)
		return rc;
	if (jv_truthy(l) == (x->kind == JN_OR)) {
		*out = l;
		return 0;
	}
	return eval(c, x->b, out);
}

static int ev_bin(struct jj_ctx *c, const struct jj_node *x, struct jv *out)
{
	struct jv l, r;
	int rc;
	if ((rc = eval(c, x->a, &l)) || (rc = eval(c, x->b, &r)))
		return rc;
	at(c, x);
	return binop(c, x->op, l, r, out);
}

static int ev_cmp(struct jj_ctx *c, const struct jj_node *x, struct jv *out)
{
	struct jv l, r;
	bool res;
	int rc;
	if (x->op & 0x80) {
		/* a chain: the left link first, then this one from its right side */
		if ((rc = eval(c, x->a, &l)))
			return rc;
		if (!jv_truthy(l)) {
			*out = l;
			return 0;
		}
		if ((rc = eval(c, x->a->b, &l)))
			return rc;
	} else if ((rc = eval(c, x->a, &l))) {
		return rc;
	}
	if ((rc = eval(c, x->b, &r)))
		return rc;
	at(c, x);
	if ((rc = compare(c, x->op & 0x7F, l, r, &res)))
		return rc;
	*out = jv_bool(res);
	return 0;
}

/* a if b else c; without else, undefined */
static int ev_cond(struct jj_ctx *c, const struct jj_node *x, struct jv *out)
{
	struct jv l;
	int rc = eval(c, x->b, &l);
	if (rc)
		return rc;
	if (jv_truthy(l))
		return eval(c, x->a, out);
	if (x->c)
		return eval(c, x->c, out);
	*out = jv_undef(NULL);
	return 0;
}

static int ev_concat(struct jj_ctx *c, const struct jj_node *x, struct jv *out)
{
	struct jv l, r;
	int rc;
	if ((rc = eval(c, x->a, &l)) || (rc = eval(c, x->b, &r)))
		return rc;
	at(c, x);
	struct jj_buf b = {0};
	if ((rc = jv_write_str(c, &b, l)) || (rc = jv_write_str(c, &b, r)))
		return rc;
	return jj_buf_str(c, &b, out);
}

static eval_fn *const eval_fns[] = {
	[JN_LIT] = ev_lit,       [JN_NAME] = ev_name,     [JN_LIST] = ev_list,   [JN_TUPLE] = ev_list,
	[JN_DICT] = ev_dict,     [JN_ATTR] = ev_attr,     [JN_ITEM] = ev_item,   [JN_SLICE] = eval_slice,
	[JN_CALL] = ev_call,     [JN_FILTER] = ev_filter, [JN_TEST] = ev_test,   [JN_NOT] = ev_not,
	[JN_NEG] = ev_sign,      [JN_POS] = ev_sign,      [JN_AND] = ev_logic,   [JN_OR] = ev_logic,
	[JN_BIN] = ev_bin,       [JN_CMP] = ev_cmp,       [JN_COND] = ev_cond,   [JN_CONCAT] = ev_concat,
};

static int eval_node(struct jj_ctx *c, const struct jj_node *x, struct jv *out)
{
	int rc = jj_step(c);
	if (rc)
		return rc;
	if (x->kind < sizeof eval_fns / sizeof *eval_fns && eval_fns[x->kind])
		return eval_fns[x->kind](c, x, out);
	at(c, x);
	return jj_fail(c, TERN_EFORMAT, "not an expression");
}

/* ---- statements ---------------------------------------------------------- */
static int assign(struct jj_ctx *c, struct jj_frame *f, const struct jj_nodes *targets, struct jv v,
		  const struct jj_node *where)
{
	int rc;
	if (targets->n == 1) {
		const struct jj_node *t = targets->v[0];
		if (t->kind == JN_ATTR) {
			const struct jv *ns = frame_find(f, t->a->name, t->a->name_n);
			if (!ns || ns->t != JV_NS) {
				at(c, t);
				return jj_fail(c, TERN_EFORMAT, "cannot assign attribute on non-namespace object");
			}
			struct jv key;
			if ((rc = jv_strdup(c, t->name, t->name_n, &key)))
				return rc;
			return jv_dict_set(c, ns->u.d, key, v);
		}
		return frame_set(c, f, t->name, t->name_n, v);
	}
	struct jv seq;
	at(c, where);
	if (v.t == JV_UNDEF)
		return undefined_error(c, v);
	if ((rc = jj_iter_list(c, v, &seq)))
		return rc;
	if (seq.u.l->n != targets->n)
		return jj_fail(c, TERN_EFORMAT, "%s values to unpack (expected %zu, got %zu)",
			       seq.u.l->n < targets->n ? "not enough" : "too many", targets->n, seq.u.l->n);
	for (size_t i = 0; i < targets->n; i++) {
		struct jj_nodes one = {&targets->v[i], 1};
		if ((rc = assign(c, f, &one, seq.u.l->v[i], where)))
			return rc;
	}
	return 0;
}

static int exec_for(struct jj_ctx *c, const struct jj_node *x, struct jj_frame *f)
{
	struct jv it, seq;
	int rc = eval(c, x->a, &it);
	if (rc)
		return rc;
	at(c, x->a);
	if ((rc = jj_iter_list(c, it, &seq)))
		return rc;
	struct jj_frame *lf = frame_new(c, f);
	if (!lf)
		return jj_oom(c);
	lf->stores = &x->stores;
	struct jj_frame *saved = c->frame;
	c->frame = lf;
	if (x->filter) {
		struct jv kept;
		if ((rc = jv_new_list(c, 0, &kept)))
			goto out;
		for (size_t i = 0; i < seq.u.l->n; i++) {
			struct jv ok;
			lf->n = 0;
			if ((rc = assign(c, lf, &x->targets, seq.u.l->v[i], x)) || (rc = eval(c, x->filter, &ok)))
				goto out;
			if (jv_truthy(ok) && (rc = jv_list_push(c, &kept, seq.u.l->v[i])))
				goto out;
		}
		seq = kept;
	}
	struct jj_loop *L = jj_alloc(&c->a, sizeof *L);
	if (!L) {
		rc = jj_oom(c);
		goto out;
	}
	L->items = seq.u.l->v;
	L->n = seq.u.l->n;
	struct jv lv = {.t = JV_LOOP};
	lv.u.loop = L;
	for (size_t i = 0; i < L->n; i++) {
		at(c, x);
		if ((rc = jj_step(c)))
			goto out;
		L->i = i;
		lf->n = 0;
		if ((rc = frame_set(c, lf, "loop", 4, lv)) || (rc = assign(c, lf, &x->targets, L->items[i], x)))
			goto out;
		rc = exec_body(c, &x->body, lf);
		if (rc == JJ_BREAK) {
			rc = 0;
			break;
		}
		if (rc == JJ_CONTINUE)
			rc = 0;
		if (rc)
			goto out;
	}
	if (L->n == 0) {
		lf->n = 0;
		rc = exec_body(c, &x->orelse, lf);
	}
out:
	c->frame = saved;
	return rc;
}

/* text rendered by the body of x (a block set or filter block: a scope of
 * its own, as in jinja2), into a string value */
static int capture(struct jj_ctx *c, const struct jj_node *x, struct jj_frame *parent, struct jv *out)
{
	struct jj_frame *f = frame_new(c, parent);
	if (!f)
		return jj_oom(c);
	f->stores = &x->stores;
	struct jj_buf buf = {0}, *saved = c->out;
	c->out = &buf;
	int rc = exec_body(c, &x->body, f);
	c->out = saved;
	if (rc)
		return rc;
	return jj_buf_str(c, &buf, out);
}

static int apply_block_filters(struct jj_ctx *c, const struct jj_node *chain, struct jv text, struct jv *out)
{
	const struct jv *saved = c->leaf;
	c->leaf = &text;
	int rc = eval(c, chain, out);
	c->leaf = saved;
	return rc;
}

static int exec_stmt(struct jj_ctx *c, const struct jj_node *x, struct jj_frame *f)
{
	int rc = jj_step(c);
	if (rc)
		return rc;
	struct jv v;
	switch (x->kind) {
	case JN_TEXT:
		return jj_buf_put(c, c->out, x->lit.u.s.p, x->lit.u.s.n);
	case JN_PRINT:
		if ((rc = eval(c, x->a, &v)))
			return rc;
		return jv_write_str(c, c->out, v);
	case JN_IF:
		if ((rc = eval(c, x->a, &v)))
			return rc;
		if (jv_truthy(v))
			return exec_body(c, &x->body, f);
		for (size_t i = 0; i + 1 < x->elifs.n; i += 2) {
			if ((rc = eval(c, x->elifs.v[i], &v)))
				return rc;
			if (jv_truthy(v))
				return exec_body(c, &x->elifs.v[i + 1]->body, f);
		}
		return exec_body(c, &x->orelse, f);
	case JN_FOR:
		return exec_for(c, x, f);
	case JN_SET:
		if ((rc = eval(c, x->a, &v)))
			return rc;
		return assign(c, f, &x->targets, v, x);
	case JN_SETBLOCK:
		if ((rc = capture(c, x, f, &v)))
			return rc > 0 ? 0 : rc;
		if (x->filter && (rc = apply_block_filters(c, x->filter, v, &v)))
			return rc;
		return assign(c, f, &x->targets, v, x);
	case JN_MACRO: {
		struct jj_macro *m = jj_alloc(&c->a, sizeof *m);
		if (!m)
			return jj_oom(c);
		m->def = x;
		m->closure = f;
		v = (struct jv){.t = JV_MACRO};
		v.u.m = m;
		return frame_set(c, f, x->name, x->name_n, v);
	}
	case JN_CALLBLOCK: {
		struct jj_macro *m = jj_alloc(&c->a, sizeof *m);
		if (!m)
			return jj_oom(c);
		m->def = x;
		m->closure = f;
		struct jv caller = {.t = JV_MACRO};
		caller.u.m = m;
		if ((rc = eval_call(c, x->a, caller, &v)))
			return rc;
		return jv_write_str(c, c->out, v);
	}
	case JN_FILTERBLOCK:
		if ((rc = capture(c, x, f, &v)))
			return rc;
		if ((rc = apply_block_filters(c, x->filter, v, &v)))
			return rc;
		return jv_write_str(c, c->out, v);
	case JN_BODY: {
		/* {% generation %}: transformers renders it through a call block,
		 * so its assignments stay inside */
		struct jj_frame *gf = frame_new(c, f);
		if (!gf)
			return jj_oom(c);
		gf->stores = &x->stores;
		return exec_body(c, &x->body, gf);
	}
	case JN_WITH: {
		struct jj_frame *wf = frame_new(c, f);
		if (!wf)
			return jj_oom(c);
		wf->stores = &x->stores;
		struct jj_frame *saved = c->frame;
		for (size_t i = 0; i < x->targets.n; i++) {
			if ((rc = eval(c, x->kwvals.v[i], &v)))
				break;
			if ((rc = frame_set(c, wf, x->targets.v[i]->name, x->targets.v[i]->name_n, v)))
				break;
		}
		c->frame = wf;
		if (!rc)
			rc = exec_body(c, &x->body, wf);
		c->frame = saved;
		return rc;
	}
	case JN_BREAK:
		return JJ_BREAK;
	case JN_CONTINUE:
		return JJ_CONTINUE;
	default:
		at(c, x);
		return jj_fail(c, TERN_EFORMAT, "not a statement");
	}
}

static int exec_body(struct jj_ctx *c, const struct jj_nodes *body, struct jj_frame *f)
{
	if (++c->rec > c->max_rec)
		return jj_fail(c, TERN_ERANGE, "evaluation nested deeper than %u levels", c->max_rec);
	struct jj_frame *saved = c->frame;
	c->frame = f;
	int rc = 0;
	for (size_t i = 0; i < body->n && rc == 0; i++)
		rc = exec_stmt(c, body->v[i], f);
	c->frame = saved;
	c->rec--;
	return rc;
}

/* ---- the public entry points --------------------------------------------- */
static uint32_t lim_depth(const struct tern_jinja_limits *l)
{
	return l && l->max_depth ? l->max_depth : JJ_DEF_DEPTH;
}

int tern_jinja_parse(struct tern_jinja **out, const char *src, size_t len, tern_err *e)
{
	*out = NULL;
	if (!src && len)
		return tern_errf(e, TERN_EINVAL, "no template text");
	struct tern_jinja *t = calloc(1, sizeof *t);
	if (!t)
		return tern_errf(e, TERN_ENOMEM, "out of memory for the template");
	struct jj_token *tok = NULL;
	size_t n = 0;
	int rc = jj_lex(&t->a, src ? src : "", len, &tok, &n, e);
	if (!rc)
		rc = jj_parse_tokens(t, tok, n, JJ_DEF_DEPTH, e);
	free(tok);
	if (rc) {
		tern_jinja_free(t);
		return rc;
	}
	*out = t;
	return 0;
}

void tern_jinja_free(struct tern_jinja *t)
{
	if (!t)
		return;
	jj_arena_free(&t->a);
	free(t);
}

int tern_jinja_render(const struct tern_jinja *t, const char *ctx_json, size_t ctx_len,
		      const struct tern_jinja_opts *o, char **out, size_t *out_len, tern_err *e)
{
	*out = NULL;
	*out_len = 0;
	if (!t || (!ctx_json && ctx_len))
		return tern_errf(e, TERN_EINVAL, "no template or no context");
	const struct tern_jinja_limits *l = o ? o->limits : NULL;
	struct jj_ctx c = {.e = e};
	c.max_depth = lim_depth(l);
	c.max_rec = 8 * c.max_depth + 512;
	c.max_steps = l && l->max_steps ? l->max_steps : JJ_DEF_STEPS;
	c.max_output = l && l->max_output ? l->max_output : JJ_DEF_OUTPUT;
	c.a.limit = c.max_output > SIZE_MAX / 8 ? SIZE_MAX : 4 * c.max_output + (64u << 20);
	c.now = o && o->now ? o->now : time(NULL);
	c.line = 1;
	c.col = 1;
	struct jv ctx;
	int rc = jv_from_json(&c, ctx_json ? ctx_json : "{}", ctx_json ? ctx_len : 2, &ctx);
	struct jj_frame *g = NULL, *top = NULL;
	if (!rc && (!(g = frame_new(&c, NULL)) || !(top = frame_new(&c, g))))
		rc = jj_oom(&c);
	if (top)
		top->stores = &t->stores;
	for (size_t i = 0; !rc && i < ctx.u.d->n; i++)
		rc = frame_set(&c, g, ctx.u.d->k[i].u.s.p, ctx.u.d->k[i].u.s.n, ctx.u.d->v[i]);
	struct jj_buf buf = {0};
	c.out = &buf;
	c.globals = g;
	if (!rc)
		rc = exec_body(&c, &t->body, top);
	if (rc > 0)
		rc = 0; /* a break outside a loop ends the template, as jinja2 would refuse it */
	if (!rc) {
		*out = malloc(buf.n + 1);
		if (!*out) {
			rc = tern_errf(e, TERN_ENOMEM, "out of memory for the output");
		} else {
			if (buf.n)
				memcpy(*out, buf.p, buf.n);
			(*out)[buf.n] = 0;
			*out_len = buf.n;
		}
	}
	jj_arena_free(&c.a);
	return rc;
}
