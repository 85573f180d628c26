/* parse.c - tokens to the syntax tree: jinja2's statements and its
 * expression grammar with its precedences (condexpr < or < and < not <
 * comparisons < + - < ~ < * / // % < ** < unary, then postfix . [] () and
 * the | filter / `is` test chains). Nesting is bounded by max_depth so
 * that a hostile template cannot exhaust the C stack. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/jinja/jinja_int.h"

struct parser {
	struct jj_arena *a;
	tern_err *e;
	const struct jj_token *t;
	size_t n, i;
	uint32_t depth, max_depth;
};

static const struct jj_token *cur(struct parser *P) { return &P->t[P->i]; }

static int perr(struct parser *P, const struct jj_token *k, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int perr(struct parser *P, const struct jj_token *k, const char *fmt, ...)
{
	char msg[300];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	return tern_errf(P->e, TERN_EFORMAT, "line %u, column %u: %s", k->line, k->col, msg);
}

static int nomem(struct parser *P)
{
	return tern_errf(P->e, TERN_ENOMEM, "out of memory while parsing the template");
}

static bool is_op(const struct jj_token *k, const char *op)
{
	return k->type == JT_OP && k->n == strlen(op) && memcmp(k->p, op, k->n) == 0;
}

static bool is_name(const struct jj_token *k, const char *name)
{
	return k->type == JT_NAME && k->n == strlen(name) && memcmp(k->p, name, k->n) == 0;
}

static const char *tok_desc(const struct jj_token *k, char buf[48])
{
	switch (k->type) {
	case JT_EOF: return "end of template";
	case JT_TEXT: return "template text";
	case JT_VAR_BEGIN: return "'{{'";
	case JT_VAR_END: return "'}}'";
	case JT_BLOCK_BEGIN: return "'{%'";
	case JT_BLOCK_END: return "'%}'";
	case JT_STRING: return "a string";
	case JT_INT: case JT_FLOAT: return "a number";
	default:
		snprintf(buf, 48, "'%.*s'", (int)(k->n > 40 ? 40 : k->n), k->p);
		return buf;
	}
}

static int expect_op(struct parser *P, const char *op)
{
	if (!is_op(cur(P), op)) {
		char b[48];
		return perr(P, cur(P), "expected '%s', got %s", op, tok_desc(cur(P), b));
	}
	P->i++;
	return 0;
}

static struct jj_node *node(struct parser *P, int kind, const struct jj_token *at)
{
	struct jj_node *x = jj_alloc(P->a, sizeof *x);
	if (!x)
		return NULL;
	x->kind = (uint8_t)kind;
	x->line = at->line;
	x->col = at->col;
	return x;
}

static const char *dupname(struct parser *P, const char *p, size_t n)
{
	char *s = jj_alloc(P->a, n + 1);
	if (s)
		memcpy(s, p, n);
	return s;
}

/* growable node list in the arena */
static int nl_push(struct parser *P, struct jj_nodes *l, size_t *cap, struct jj_node *x)
{
	if (l->n == *cap) {
		size_t c = *cap ? 2 * *cap : 4;
		struct jj_node **v = jj_alloc(P->a, c * sizeof *v);
		if (!v)
			return nomem(P);
		if (l->n)
			memcpy(v, l->v, l->n * sizeof *v);
		l->v = v;
		*cap = c;
	}
	l->v[l->n++] = x;
	return 0;
}

static int enter(struct parser *P)
{
	if (++P->depth > P->max_depth)
		return tern_errf(P->e, TERN_ERANGE, "line %u, column %u: nesting deeper than %u",
				 cur(P)->line, cur(P)->col, P->max_depth);
	return 0;
}

static int parse_expr(struct parser *P, struct jj_node **out, bool condexpr);
static int parse_unary(struct parser *P, struct jj_node **out, bool with_filter);

/* (args) after a call, filter or test name; at '(' */
static int parse_call_args(struct parser *P, struct jj_node *x)
{
	int rc = expect_op(P, "(");
	if (rc)
		return rc;
	size_t capa = 0, capk = 0, capn = 0;
	while (!is_op(cur(P), ")")) {
		if (x->args.n || x->kwvals.n) {
			if ((rc = expect_op(P, ",")))
				return rc;
			if (is_op(cur(P), ")"))
				break;
		}
		if (is_op(cur(P), "*") || is_op(cur(P), "**"))
			return perr(P, cur(P), "*args and **kwargs in calls are not supported");
		if (cur(P)->type == JT_NAME && is_op(&P->t[P->i + 1], "=")) {
			const struct jj_token *k = cur(P);
			P->i += 2;
			struct jj_node *v;
			if ((rc = parse_expr(P, &v, true)))
				return rc;
			if (x->kwvals.n == capn) {
				size_t c = capn ? 2 * capn : 4;
				const char **nn = jj_alloc(P->a, c * sizeof *nn);
				if (!nn)
					return nomem(P);
				if (x->kwvals.n)
					memcpy(nn, x->kwnames, x->kwvals.n * sizeof *nn);
				x->kwnames = nn;
				capn = c;
			}
			x->kwnames[x->kwvals.n] = dupname(P, k->p, k->n);
			if (!x->kwnames[x->kwvals.n])
				return nomem(P);
			if ((rc = nl_push(P, &x->kwvals, &capk, v)))
				return rc;
		} else {
			if (x->kwvals.n)
				return perr(P, cur(P), "positional argument after a keyword argument");
			struct jj_node *v;
			if ((rc = parse_expr(P, &v, true)))
				return rc;
			if ((rc = nl_push(P, &x->args, &capa, v)))
				return rc;
		}
	}
	P->i++;
	return 0;
}

/* *x called: the call node replaces *x (k is the opening parenthesis). */
static int parse_call(struct parser *P, const struct jj_token *k, struct jj_node **x)
{
	struct jj_node *c = node(P, JN_CALL, k);
	if (!c)
		return nomem(P);
	c->line = (*x)->line; /* errors point at the callee */
	c->col = (*x)->col;
	c->a = *x;
	int rc = parse_call_args(P, c);
	if (!rc)
		*x = c;
	return rc;
}

/* `name` or `name(args)` of a filter; at the name */
static int parse_filter_call(struct parser *P, struct jj_node *in, struct jj_node **out)
{
	const struct jj_token *k = cur(P);
	if (k->type != JT_NAME) {
		char b[48];
		return perr(P, k, "expected a filter name, got %s", tok_desc(k, b));
	}
	struct jj_node *f = node(P, JN_FILTER, k);
	if (!f || !(f->name = dupname(P, k->p, k->n)))
		return nomem(P);
	f->name_n = k->n;
	P->i++;
	while (is_op(cur(P), ".") && P->t[P->i + 1].type == JT_NAME)
		return perr(P, k, "dotted filter names are not supported");
	if (!jj_filter_exists(f->name))
		return perr(P, k, "no filter named '%s'", f->name);
	f->a = in;
	if (is_op(cur(P), "(")) {
		int rc = parse_call_args(P, f);
		if (rc)
			return rc;
	}
	*out = f;
	return 0;
}

static int parse_postfix(struct parser *P, struct jj_node **x);

/* the | filter, `is` test and call chain after a unary */
static int parse_filter_expr(struct parser *P, struct jj_node **x)
{
	int rc;
	uint32_t d0 = P->depth;
	for (;;) {
		const struct jj_token *k = cur(P);
		if ((is_op(k, "|") || is_name(k, "is") || is_op(k, "(")) && (rc = enter(P)))
			return rc;
		if (is_op(k, "|")) {
			P->i++;
			if ((rc = parse_filter_call(P, *x, x)))
				return rc;
		} else if (is_name(k, "is")) {
			P->i++;
			struct jj_node *t = node(P, JN_TEST, k);
			if (!t)
				return nomem(P);
			if (is_name(cur(P), "not")) {
				t->op = 1;
				P->i++;
			}
			const struct jj_token *nm = cur(P);
			if (nm->type != JT_NAME) {
				char b[48];
				return perr(P, nm, "expected a test name, got %s", tok_desc(nm, b));
			}
			P->i++;
			if (!(t->name = dupname(P, nm->p, nm->n)))
				return nomem(P);
			t->name_n = nm->n;
			if (!jj_test_exists(t->name))
				return perr(P, nm, "no test named '%s'", t->name);
			t->a = *x;
			const struct jj_token *nx = cur(P);
			if (is_op(nx, "(")) {
				if ((rc = parse_call_args(P, t)))
					return rc;
			} else if (nx->type == JT_STRING || nx->type == JT_INT || nx->type == JT_FLOAT ||
				   is_op(nx, "[") || is_op(nx, "{") || is_op(nx, "-") ||
				   (nx->type == JT_NAME && !is_name(nx, "else") && !is_name(nx, "or") &&
				    !is_name(nx, "and") && !is_name(nx, "is") && !is_name(nx, "if") &&
				    !is_name(nx, "in") && !is_name(nx, "not") && !is_name(nx, "recursive"))) {
				/* `is divisibleby 3`: one argument without parentheses */
				struct jj_node *arg;
				if ((rc = parse_unary(P, &arg, false)))
					return rc;
				if ((rc = parse_postfix(P, &arg)))
					return rc;
				size_t cap = 0;
				if ((rc = nl_push(P, &t->args, &cap, arg)))
					return rc;
			}
			*x = t;
		} else if (is_op(k, "(")) {
			if ((rc = parse_call(P, k, x)))
				return rc;
		} else {
			P->depth = d0;
			return 0;
		}
	}
}

/* one slice part or a plain subscript at '[' */
static int parse_subscript(struct parser *P, struct jj_node *obj, struct jj_node **out)
{
	const struct jj_token *k = cur(P);
	P->i++;
	struct jj_node *parts[3] = {NULL, NULL, NULL};
	int np = 0, rc;
	bool slice = false;
	for (;;) {
		if (is_op(cur(P), ":")) {
			slice = true;
			if (++np > 2)
				return perr(P, cur(P), "too many ':' in a slice");
			P->i++;
			continue;
		}
		if (is_op(cur(P), "]"))
			break;
		if (parts[np])
			return perr(P, cur(P), "expected ']'");
		if ((rc = parse_expr(P, &parts[np], true)))
			return rc;
	}
	P->i++;
	struct jj_node *x = node(P, slice ? JN_SLICE : JN_ITEM, k);
	if (!x)
		return nomem(P);
	x->a = obj;
	if (slice) {
		x->b = parts[0];
		x->c = parts[1];
		x->filter = parts[2];
	} else {
		if (!parts[0])
			return perr(P, k, "empty subscript");
		x->b = parts[0];
	}
	*out = x;
	return 0;
}

static int parse_postfix(struct parser *P, struct jj_node **x)
{
	int rc;
	uint32_t d0 = P->depth;
	for (;;) {
		const struct jj_token *k = cur(P);
		if ((is_op(k, ".") || is_op(k, "[") || is_op(k, "(")) && (rc = enter(P)))
			return rc;
		if (is_op(k, ".")) {
			P->i++;
			const struct jj_token *nm = cur(P);
			if (nm->type == JT_NAME) {
				struct jj_node *y = node(P, JN_ATTR, nm);
				if (!y || !(y->name = dupname(P, nm->p, nm->n)))
					return nomem(P);
				y->name_n = nm->n;
				y->a = *x;
				*x = y;
				P->i++;
			} else if (nm->type == JT_INT) {
				struct jj_node *y = node(P, JN_ITEM, nm), *z = node(P, JN_LIT, nm);
				if (!y || !z)
					return nomem(P);
				z->lit = jv_int(nm->i);
				y->a = *x;
				y->b = z;
				*x = y;
				P->i++;
			} else {
				char b[48];
				return perr(P, nm, "expected an attribute name, got %s", tok_desc(nm, b));
			}
		} else if (is_op(k, "[")) {
			if ((rc = parse_subscript(P, *x, x)))
				return rc;
		} else if (is_op(k, "(")) {
			if ((rc = parse_call(P, k, x)))
				return rc;
		} else {
			P->depth = d0;
			return 0;
		}
	}
}

/* A name, or one of the constants jinja2 spells as names in either case. */
static int primary_name(struct parser *P, const struct jj_token *k, struct jj_node **out)
{
	static const struct { const char *n; int t; bool b; } kw[] = {
		{"true", JV_BOOL, true}, {"True", JV_BOOL, true}, {"false", JV_BOOL, false},
		{"False", JV_BOOL, false}, {"none", JV_NONE, false}, {"None", JV_NONE, false}};
	struct jj_node *x;
	for (size_t j = 0; j < sizeof kw / sizeof kw[0]; j++)
		if (is_name(k, kw[j].n)) {
			if (!(x = node(P, JN_LIT, k)))
				return nomem(P);
			x->lit = kw[j].t == JV_BOOL ? jv_bool(kw[j].b) : jv_none();
			P->i++;
			*out = x;
			return 0;
		}
	if (!(x = node(P, JN_NAME, k)) || !(x->name = dupname(P, k->p, k->n)))
		return nomem(P);
	x->name_n = k->n;
	P->i++;
	*out = x;
	return 0;
}

/* A string literal; adjacent strings are one: 'a' 'b' */
static int primary_string(struct parser *P, const struct jj_token *k, struct jj_node **out)
{
	size_t total = 0, j = P->i;
	while (P->t[j].type == JT_STRING)
		total += P->t[j++].n;
	char *s = jj_alloc(P->a, total + 1);
	struct jj_node *x;
	if (!s || !(x = node(P, JN_LIT, k)))
		return nomem(P);
	size_t o = 0;
	for (; P->i < j; P->i++) {
		memcpy(s + o, P->t[P->i].p, P->t[P->i].n);
		o += P->t[P->i].n;
	}
	x->lit = jv_str(s, total);
	*out = x;
	return 0;
}

static int primary_number(struct parser *P, const struct jj_token *k, struct jj_node **out)
{
	struct jj_node *x = node(P, JN_LIT, k);
	if (!x)
		return nomem(P);
	x->lit = k->type == JT_INT ? jv_int(k->i) : jv_float(k->f);
	P->i++;
	*out = x;
	return 0;
}

/* `( )` is the empty tuple, `(a)` is a, `(a,)` and `(a, b)` are tuples. */
static int primary_paren(struct parser *P, const struct jj_token *k, struct jj_node **out)
{
	struct jj_node *x;
	int rc;
	P->i++;
	if (is_op(cur(P), ")")) {
		if (!(x = node(P, JN_TUPLE, k)))
			return nomem(P);
		P->i++;
		*out = x;
		return 0;
	}
	struct jj_node *first;
	if ((rc = parse_expr(P, &first, true)))
		return rc;
	if (is_op(cur(P), ",")) {
		if (!(x = node(P, JN_TUPLE, k)))
			return nomem(P);
		size_t cap = 0;
		if ((rc = nl_push(P, &x->args, &cap, first)))
			return rc;
		while (is_op(cur(P), ",")) {
			P->i++;
			if (is_op(cur(P), ")"))
				break;
			struct jj_node *y;
			if ((rc = parse_expr(P, &y, true)) || (rc = nl_push(P, &x->args, &cap, y)))
				return rc;
		}
	} else {
		x = first;
	}
	if ((rc = expect_op(P, ")")))
		return rc;
	*out = x;
	return 0;
}

static int primary_list(struct parser *P, const struct jj_token *k, struct jj_node **out)
{
	P->i++;
	struct jj_node *x = node(P, JN_LIST, k);
	if (!x)
		return nomem(P);
	size_t cap = 0;
	int rc;
	while (!is_op(cur(P), "]")) {
		if (x->args.n) { /* a trailing comma is allowed: [a, b,] */
			if ((rc = expect_op(P, ",")))
				return rc;
			if (is_op(cur(P), "]"))
				break;
		}
		struct jj_node *y;
		if ((rc = parse_expr(P, &y, true)) || (rc = nl_push(P, &x->args, &cap, y)))
			return rc;
	}
	P->i++;
	*out = x;
	return 0;
}

/* A dict display: the keys in args, the values in kwvals. */
static int primary_dict(struct parser *P, const struct jj_token *k, struct jj_node **out)
{
	P->i++;
	struct jj_node *x = node(P, JN_DICT, k);
	if (!x)
		return nomem(P);
	size_t capk = 0, capv = 0;
	int rc;
	while (!is_op(cur(P), "}")) {
		if (x->args.n) { /* a trailing comma is allowed: [a, b,] */
			if ((rc = expect_op(P, ",")))
				return rc;
			if (is_op(cur(P), "}"))
				break;
		}
		struct jj_node *kk, *vv;
		if ((rc = parse_expr(P, &kk, true)) || (rc = expect_op(P, ":")) ||
		    (rc = parse_expr(P, &vv, true)) || (rc = nl_push(P, &x->args, &capk, kk)) ||
		    (rc = nl_push(P, &x->kwvals, &capv, vv)))
			return rc;
	}
	P->i++;
	*out = x;
	return 0;
}

static int parse_primary(struct parser *P, struct jj_node **out)
{
	const struct jj_token *k = cur(P);
	if (k->type == JT_NAME)
		return primary_name(P, k, out);
	if (k->type == JT_STRING)
		return primary_string(P, k, out);
	if (k->type == JT_INT || k->type == JT_FLOAT)
		return primary_number(P, k, out);
	if (is_op(k, "("))
		return primary_paren(P, k, out);
	if (is_op(k, "["))
		return primary_list(P, k, out);
	if (is_op(k, "{"))
		return primary_dict(P, k, out);
	char b[48];
	return perr(P, k, "unexpected %s", tok_desc(k, b));
}

static int parse_unary(struct parser *P, struct jj_node **out, bool with_filter)
{
	int rc = enter(P);
	if (rc)
		return rc;
	const struct jj_token *k = cur(P);
	struct jj_node *x;
	if (is_op(k, "-") || is_op(k, "+")) {
		P->i++;
		if (!(x = node(P, is_op(k, "-") ? JN_NEG : JN_POS, k)))
			return nomem(P);
		if ((rc = parse_unary(P, &x->a, false)))
			return rc;
	} else if ((rc = parse_primary(P, &x))) {
		return rc;
	}
	if ((rc = parse_postfix(P, &x)))
		return rc;
	if (with_filter && (rc = parse_filter_expr(P, &x)))
		return rc;
	P->depth--;
	*out = x;
	return 0;
}

static int binary(struct parser *P, int kind, int op, const struct jj_token *at, struct jj_node *l,
		  struct jj_node *r, struct jj_node **out)
{
	struct jj_node *x = node(P, kind, at);
	if (!x)
		return nomem(P);
	x->op = (uint8_t)op;
	x->a = l;
	x->b = r;
	*out = x;
	return 0;
}

/* The left-associative binary levels, tightest first. The operands of a
 * level are the next tighter one's, except that `**` takes unary
 * expressions, `and` takes `not` expressions and `+`/`-` take `~` chains
 * (comparison and `not` sit between `+` and `and`). */
enum { LV_POW, LV_MUL, LV_CONCAT, LV_ADD, LV_AND, LV_OR };

static int parse_level(struct parser *P, int lv, struct jj_node **out);
static int parse_not(struct parser *P, struct jj_node **out);

static int level_operand(struct parser *P, int lv, struct jj_node **out)
{
	switch (lv) {
	case LV_POW:
		return parse_unary(P, out, true);
	case LV_AND:
		return parse_not(P, out);
	default:
		return parse_level(P, lv - 1, out);
	}
}

/* The operator of level lv at k: its node kind and JO_* (0 for concat, and,
 * or), or false. */
static bool level_op(const struct jj_token *k, int lv, int *kind, int *op)
{
	*kind = JN_BIN, *op = -1;
	switch (lv) {
	case LV_POW:
		*op = is_op(k, "**") ? JO_POW : -1;
		break;
	case LV_MUL:
		*op = is_op(k, "*") ? JO_MUL : is_op(k, "/") ? JO_DIV : is_op(k, "//") ? JO_FDIV
		      : is_op(k, "%") ? JO_MOD : -1;
		break;
	case LV_CONCAT:
		*kind = JN_CONCAT, *op = is_op(k, "~") ? 0 : -1;
		break;
	case LV_ADD:
		*op = is_op(k, "+") ? JO_ADD : is_op(k, "-") ? JO_SUB : -1;
		break;
	case LV_AND:
		*kind = JN_AND, *op = is_name(k, "and") ? 0 : -1;
		break;
	default:
		*kind = JN_OR, *op = is_name(k, "or") ? 0 : -1;
	}
	return *op >= 0;
}

/* A chain `a + b + c ...` is built in a loop but evaluated recursively down
 * its left side: every link counts as a level of nesting (the depth is
 * restored when the chain is complete). */
static int parse_level(struct parser *P, int lv, struct jj_node **out)
{
	uint32_t d0 = P->depth;
	int rc = level_operand(P, lv, out), kind, op;
	while (!rc && level_op(cur(P), lv, &kind, &op)) {
		const struct jj_token *k = cur(P);
		if ((rc = enter(P)))
			return rc;
		P->i++;
		struct jj_node *r;
		if ((rc = level_operand(P, lv, &r)))
			return rc;
		rc = binary(P, kind, op, k, *out, r, out);
	}
	if (!rc)
		P->depth = d0;
	return rc;
}

/* a < b < c is (a < b) and (b < c) with b evaluated once; kept as a chain:
 * JN_CMP nodes whose `a` is the previous comparison (op flag 0x80 on the
 * later links tells the evaluator to compare with the chain's right side) */
static int parse_compare(struct parser *P, struct jj_node **out)
{
	uint32_t d0 = P->depth;
	int rc = parse_level(P, LV_ADD, out);
	if (rc)
		return rc;
	bool chained = false;
	for (;;) {
		const struct jj_token *k = cur(P);
		int op = -1;
		if (is_op(k, "=="))
			op = JO_EQ;
		else if (is_op(k, "!="))
			op = JO_NE;
		else if (is_op(k, "<"))
			op = JO_LT;
		else if (is_op(k, "<="))
			op = JO_LE;
		else if (is_op(k, ">"))
			op = JO_GT;
		else if (is_op(k, ">="))
			op = JO_GE;
		else if (is_name(k, "in"))
			op = JO_IN;
		else if (is_name(k, "not") && is_name(&P->t[P->i + 1], "in")) {
			op = JO_NOTIN;
			P->i++;
		}
		if (op < 0) {
			P->depth = d0;
			return 0;
		}
		if ((rc = enter(P)))
			return rc;
		P->i++;
		struct jj_node *r;
		if ((rc = parse_level(P, LV_ADD, &r)))
			return rc;
		if ((rc = binary(P, JN_CMP, op | (chained ? 0x80 : 0), k, *out, r, out)))
			return rc;
		chained = true;
	}
}

static int parse_not(struct parser *P, struct jj_node **out)
{
	const struct jj_token *k = cur(P);
	if (is_name(k, "not")) {
		int rc = enter(P);
		if (rc)
			return rc;
		P->i++;
		struct jj_node *x = node(P, JN_NOT, k);
		if (!x)
			return nomem(P);
		if ((rc = parse_not(P, &x->a)))
			return rc;
		P->depth--;
		*out = x;
		return 0;
	}
	return parse_compare(P, out);
}

static int parse_expr(struct parser *P, struct jj_node **out, bool condexpr)
{
	int rc = enter(P);
	if (rc)
		return rc;
	if ((rc = parse_level(P, LV_OR, out)))
		return rc;
	while (condexpr && is_name(cur(P), "if")) {
		const struct jj_token *k = cur(P);
		P->i++;
		struct jj_node *x = node(P, JN_COND, k);
		if (!x)
			return nomem(P);
		x->a = *out;
		if ((rc = parse_level(P, LV_OR, &x->b)))
			return rc;
		if (is_name(cur(P), "else")) {
			P->i++;
			if ((rc = parse_expr(P, &x->c, true)))
				return rc;
		}
		*out = x;
	}
	P->depth--;
	return 0;
}

/* expr or a bare tuple `a, b` (statement level) */
static int parse_tuple(struct parser *P, struct jj_node **out, bool condexpr)
{
	const struct jj_token *k = cur(P);
	struct jj_node *first;
	int rc = parse_expr(P, &first, condexpr);
	if (rc)
		return rc;
	if (!is_op(cur(P), ",")) {
		*out = first;
		return 0;
	}
	struct jj_node *x = node(P, JN_TUPLE, k);
	if (!x)
		return nomem(P);
	size_t cap = 0;
	if ((rc = nl_push(P, &x->args, &cap, first)))
		return rc;
	while (is_op(cur(P), ",")) {
		P->i++;
		const struct jj_token *n = cur(P);
		if (n->type == JT_VAR_END || n->type == JT_BLOCK_END || is_name(n, "if") || is_op(n, ")"))
			break;
		struct jj_node *y;
		if ((rc = parse_expr(P, &y, condexpr)) || (rc = nl_push(P, &x->args, &cap, y)))
			return rc;
	}
	*out = x;
	return 0;
}

/* assignment targets: name [, name]* or ns.attr (with_ns) */
static int parse_targets(struct parser *P, struct jj_nodes *t, bool with_ns)
{
	size_t cap = 0;
	bool paren = false;
	if (is_op(cur(P), "(")) {
		paren = true;
		P->i++;
	}
	for (;;) {
		const struct jj_token *k = cur(P);
		if (k->type != JT_NAME) {
			char b[48];
			return perr(P, k, "expected a name to assign to, got %s", tok_desc(k, b));
		}
		P->i++;
		struct jj_node *x = node(P, JN_NAME, k);
		if (!x || !(x->name = dupname(P, k->p, k->n)))
			return nomem(P);
		x->name_n = k->n;
		if (with_ns && is_op(cur(P), ".") && P->t[P->i + 1].type == JT_NAME) {
			const struct jj_token *a = &P->t[P->i + 1];
			struct jj_node *y = node(P, JN_ATTR, a);
			if (!y || !(y->name = dupname(P, a->p, a->n)))
				return nomem(P);
			y->name_n = a->n;
			y->a = x;
			x = y;
			P->i += 2;
		}
		int rc = nl_push(P, t, &cap, x);
		if (rc)
			return rc;
		if (!is_op(cur(P), ","))
			break;
		P->i++;
	}
	if (paren)
		return expect_op(P, ")");
	return 0;
}

static int expect_block_end(struct parser *P)
{
	if (cur(P)->type != JT_BLOCK_END) {
		char b[48];
		return perr(P, cur(P), "expected '%%}', got %s", tok_desc(cur(P), b));
	}
	P->i++;
	return 0;
}

/* Statements until "{% name" where name is one of ends (NULL-terminated);
 * leaves P at that name. An end of template there is an error naming the
 * block left open (opened at `open`). */
static int parse_body(struct parser *P, struct jj_nodes *body, const char *const *ends,
		      const struct jj_token *open, const char *what);

static int parse_statement(struct parser *P, struct jj_nodes *body, size_t *cap);

static int parse_body(struct parser *P, struct jj_nodes *body, const char *const *ends,
		      const struct jj_token *open, const char *what)
{
	int rc = enter(P);
	if (rc)
		return rc;
	size_t cap = 0;
	for (;;) {
		const struct jj_token *k = cur(P);
		if (k->type == JT_EOF) {
			if (!ends)
				break;
			return perr(P, open, "unclosed '%s' block: no '{%% %s %%}' before the end of the template",
				    what, ends[0]);
		}
		if (k->type == JT_BLOCK_BEGIN && ends) {
			const struct jj_token *nm = &P->t[P->i + 1];
			bool hit = false;
			for (const char *const *e = ends; *e; e++)
				hit = hit || is_name(nm, *e);
			if (hit) {
				P->i++;
				break;
			}
		}
		if ((rc = parse_statement(P, body, &cap)))
			return rc;
	}
	P->depth--;
	return 0;
}

static int end_tag(struct parser *P, const char *name)
{
	/* at the name of an end tag */
	if (!is_name(cur(P), name)) {
		char b[48];
		return perr(P, cur(P), "expected '%s', got %s", name, tok_desc(cur(P), b));
	}
	P->i++;
	return expect_block_end(P);
}

static int parse_if(struct parser *P, struct jj_node *x)
{
	static const char *const ends[] = {"elif", "else", "endif", NULL};
	int rc;
	const struct jj_token *open = cur(P);
	if ((rc = parse_tuple(P, &x->a, true)) || (rc = expect_block_end(P)))
		return rc;
	if ((rc = parse_body(P, &x->body, ends, open, "if")))
		return rc;
	size_t cap = 0;
	while (is_name(cur(P), "elif")) {
		const struct jj_token *k = cur(P);
		P->i++;
		struct jj_node *cond, *blk = node(P, JN_BODY, k);
		if (!blk)
			return nomem(P);
		if ((rc = parse_tuple(P, &cond, true)) || (rc = expect_block_end(P)) ||
		    (rc = parse_body(P, &blk->body, ends, open, "if")) ||
		    (rc = nl_push(P, &x->elifs, &cap, cond)) || (rc = nl_push(P, &x->elifs, &cap, blk)))
			return rc;
	}
	if (is_name(cur(P), "else")) {
		static const char *const ends2[] = {"endif", NULL};
		P->i++;
		if ((rc = expect_block_end(P)) || (rc = parse_body(P, &x->orelse, ends2, open, "if")))
			return rc;
	}
	return end_tag(P, "endif");
}

static int parse_for(struct parser *P, struct jj_node *x)
{
	const struct jj_token *open = cur(P);
	int rc = parse_targets(P, &x->targets, false);
	if (rc)
		return rc;
	if (!is_name(cur(P), "in")) {
		char b[48];
		return perr(P, cur(P), "expected 'in', got %s", tok_desc(cur(P), b));
	}
	P->i++;
	if ((rc = parse_tuple(P, &x->a, false)))
		return rc;
	if (is_name(cur(P), "if")) {
		P->i++;
		if ((rc = parse_expr(P, &x->filter, true)))
			return rc;
	}
	if (is_name(cur(P), "recursive"))
		return perr(P, cur(P), "recursive loops are not supported");
	if ((rc = expect_block_end(P)))
		return rc;
	static const char *const ends[] = {"endfor", "else", NULL};
	if ((rc = parse_body(P, &x->body, ends, open, "for")))
		return rc;
	if (is_name(cur(P), "else")) {
		static const char *const ends2[] = {"endfor", NULL};
		P->i++;
		if ((rc = expect_block_end(P)) || (rc = parse_body(P, &x->orelse, ends2, open, "for")))
			return rc;
	}
	return end_tag(P, "endfor");
}

/* filters of a block set or filter block: `| f(a) | g`; the chain's
 * innermost input is NULL (the body's text) */
static int parse_block_filters(struct parser *P, struct jj_node **chain, bool need_first)
{
	int rc;
	if (need_first) {
		if ((rc = parse_filter_call(P, NULL, chain)))
			return rc;
	}
	while (is_op(cur(P), "|")) {
		P->i++;
		if ((rc = parse_filter_call(P, *chain, chain)))
			return rc;
	}
	return 0;
}

static int parse_set(struct parser *P, struct jj_node *x)
{
	const struct jj_token *open = cur(P);
	int rc = parse_targets(P, &x->targets, true);
	if (rc)
		return rc;
	if (is_op(cur(P), "=")) {
		P->i++;
		if ((rc = parse_tuple(P, &x->a, true)))
			return rc;
		return expect_block_end(P);
	}
	if (x->targets.n != 1 || x->targets.v[0]->kind != JN_NAME)
		return perr(P, open, "a block set assigns one name");
	x->kind = JN_SETBLOCK;
	if ((rc = parse_block_filters(P, &x->filter, false)) || (rc = expect_block_end(P)))
		return rc;
	static const char *const ends[] = {"endset", NULL};
	if ((rc = parse_body(P, &x->body, ends, open, "set")))
		return rc;
	return end_tag(P, "endset");
}

/* (a, b=default, ...) of a macro or a call block */
static int parse_params(struct parser *P, struct jj_node *x)
{
	int rc = expect_op(P, "(");
	if (rc)
		return rc;
	size_t capn = 0, capd = 0;
	while (!is_op(cur(P), ")")) {
		if (x->targets.n && (rc = expect_op(P, ",")))
			return rc;
		const struct jj_token *k = cur(P);
		if (k->type != JT_NAME) {
			char b[48];
			return perr(P, k, "expected a parameter name, got %s", tok_desc(k, b));
		}
		P->i++;
		struct jj_node *nm = node(P, JN_NAME, k);
		if (!nm || !(nm->name = dupname(P, k->p, k->n)))
			return nomem(P);
		nm->name_n = k->n;
		struct jj_node *def = NULL;
		if (is_op(cur(P), "=")) {
			P->i++;
			if ((rc = parse_expr(P, &def, true)))
				return rc;
		} else if (x->kwvals.n && x->kwvals.v[x->kwvals.n - 1]) {
			return perr(P, k, "parameter without a default after one with a default");
		}
		if ((rc = nl_push(P, &x->targets, &capn, nm)) || (rc = nl_push(P, &x->kwvals, &capd, def)))
			return rc;
	}
	P->i++;
	return 0;
}

static int parse_macro(struct parser *P, struct jj_node *x)
{
	const struct jj_token *open = cur(P);
	const struct jj_token *k = cur(P);
	if (k->type != JT_NAME)
		return perr(P, k, "expected a macro name");
	if (!(x->name = dupname(P, k->p, k->n)))
		return nomem(P);
	x->name_n = k->n;
	P->i++;
	int rc;
	if ((rc = parse_params(P, x)) || (rc = expect_block_end(P)))
		return rc;
	static const char *const ends[] = {"endmacro", NULL};
	if ((rc = parse_body(P, &x->body, ends, open, "macro")))
		return rc;
	return end_tag(P, "endmacro");
}

static int parse_callblock(struct parser *P, struct jj_node *x)
{
	const struct jj_token *open = cur(P);
	int rc;
	if (is_op(cur(P), "(") && (rc = parse_params(P, x)))
		return rc;
	if ((rc = parse_expr(P, &x->a, true)))
		return rc;
	if (x->a->kind != JN_CALL)
		return perr(P, open, "expected a call after '{%% call %%}'");
	if ((rc = expect_block_end(P)))
		return rc;
	static const char *const ends[] = {"endcall", NULL};
	if ((rc = parse_body(P, &x->body, ends, open, "call")))
		return rc;
	return end_tag(P, "endcall");
}

/* The name of the statement being parsed, just stepped over: a block left
 * open is reported there. */
static const struct jj_token *stmt_name(struct parser *P) { return &P->t[P->i - 1]; }

static int parse_filterblock(struct parser *P, struct jj_node *x)
{
	static const char *const ends[] = {"endfilter", NULL};
	const struct jj_token *nm = stmt_name(P);
	int rc;
	if (!(rc = parse_block_filters(P, &x->filter, true)) && !(rc = expect_block_end(P)) &&
	    !(rc = parse_body(P, &x->body, ends, nm, "filter")))
		rc = end_tag(P, "endfilter");
	return rc;
}

/* transformers' AssistantTracker: the body renders as it is */
static int parse_generation(struct parser *P, struct jj_node *x)
{
	static const char *const ends[] = {"endgeneration", NULL};
	const struct jj_token *nm = stmt_name(P);
	int rc;
	if (!(rc = expect_block_end(P)) && !(rc = parse_body(P, &x->body, ends, nm, "generation")))
		rc = end_tag(P, "endgeneration");
	return rc;
}

/* `with a = 1, b = 2`: the names in targets, their values in kwvals. */
static int parse_with(struct parser *P, struct jj_node *x)
{
	static const char *const ends[] = {"endwith", NULL};
	const struct jj_token *nm = stmt_name(P);
	size_t capt = 0, capv = 0;
	int rc = 0;
	while (!rc && cur(P)->type != JT_BLOCK_END) {
		if (x->targets.n && (rc = expect_op(P, ",")))
			break;
		struct jj_nodes t = {0};
		struct jj_node *v;
		if ((rc = parse_targets(P, &t, false)))
			break;
		if (t.n != 1)
			return perr(P, nm, "one name per assignment in 'with'");
		if ((rc = expect_op(P, "=")) || (rc = parse_expr(P, &v, true)) ||
		    (rc = nl_push(P, &x->targets, &capt, t.v[0])) || (rc = nl_push(P, &x->kwvals, &capv, v)))
			break;
	}
	if (!rc && !(rc = expect_block_end(P)) && !(rc = parse_body(P, &x->body, ends, nm, "with")))
		rc = end_tag(P, "endwith");
	return rc;
}

/* break and continue: the node's kind says which */
static int parse_loop_control(struct parser *P, struct jj_node *x)
{
	(void)x;
	return expect_block_end(P);
}

/* The statements a "{%" may open: the node each makes and what parses the
 * rest of it. */
static const struct {
	const char *name;
	int kind;
	int (*parse)(struct parser *P, struct jj_node *x);
} statements[] = {
	{"if", JN_IF, parse_if},
	{"for", JN_FOR, parse_for},
	{"set", JN_SET, parse_set},
	{"macro", JN_MACRO, parse_macro},
	{"call", JN_CALLBLOCK, parse_callblock},
	{"filter", JN_FILTERBLOCK, parse_filterblock},
	{"generation", JN_BODY, parse_generation},
	{"with", JN_WITH, parse_with},
	{"break", JN_BREAK, parse_loop_control},
	{"continue", JN_CONTINUE, parse_loop_control},
};

/* After "{%": the statement its name says. */
static int parse_block_statement(struct parser *P, struct jj_node **out)
{
	const struct jj_token *nm = cur(P);
	if (nm->type != JT_NAME)
		return perr(P, nm, "expected a statement name after '{%%'");
	P->i++;
	for (size_t j = 0; j < sizeof statements / sizeof statements[0]; j++) {
		if (!is_name(nm, statements[j].name))
			continue;
		struct jj_node *x = node(P, statements[j].kind, nm);
		if (!x)
			return nomem(P);
		*out = x;
		return statements[j].parse(P, x);
	}
	char nbuf[48];
	return perr(P, nm, "unknown tag %s", tok_desc(nm, nbuf));
}

static int parse_statement(struct parser *P, struct jj_nodes *body, size_t *cap)
{
	const struct jj_token *k = cur(P);
	struct jj_node *x = NULL;
	int rc;
	if (k->type == JT_TEXT) {
		if (!(x = node(P, JN_TEXT, k)))
			return nomem(P);
		x->lit = jv_str(k->p, k->n);
		P->i++;
		return nl_push(P, body, cap, x);
	}
	if (k->type == JT_VAR_BEGIN) {
		P->i++;
		if (!(x = node(P, JN_PRINT, k)))
			return nomem(P);
		if ((rc = parse_tuple(P, &x->a, true)))
			return rc;
		if (cur(P)->type != JT_VAR_END) {
			char b[48];
			return perr(P, cur(P), "expected '}}', got %s", tok_desc(cur(P), b));
		}
		P->i++;
		return nl_push(P, body, cap, x);
	}
	if (k->type != JT_BLOCK_BEGIN) {
		char b[48];
		return perr(P, k, "unexpected %s", tok_desc(k, b));
	}
	P->i++;
	if ((rc = parse_block_statement(P, &x)))
		return rc;
	return nl_push(P, body, cap, x);
}

/* ---- scopes ---------------------------------------------------------------
 * jinja2 decides at compile time what a name means in each scope. A name
 * that a scope assigns becomes a local of that scope, and its value before
 * the assignment depends on the scope's code in order: loaded first, or
 * first assigned inside an if -> the context's value; assigned first
 * -> undefined, unless an enclosing scope mentions the name (then the
 * enclosing value). Nested scopes see the local, so a loop that reads `x`
 * inside a scope that assigns `x` later reads undefined, not the context.
 * Each scope node keeps in `stores` the names whose value starts undefined
 * that way; the evaluator stops a lookup there. */
enum { NM_LOADED = 1, NM_STORED, NM_PARTIAL };

struct nm {
	const struct jj_node *n;
	uint8_t st;
};

struct tab {
	struct nm *v;
	size_t n, cap;
	const struct tab *parent; /* the enclosing scope's complete table */
};

static struct nm *tab_find(const struct tab *t, const char *name, size_t n)
{
	for (size_t i = 0; i < t->n; i++)
		if (t->v[i].n->name_n == n && !memcmp(t->v[i].n->name, name, n))
			return &t->v[i];
	return NULL;
}

static int tab_add(struct parser *P, struct tab *t, const struct jj_node *x, uint8_t st)
{
	if (!x->name || tab_find(t, x->name, x->name_n))
		return 0;
	if (t->n == t->cap) {
		size_t cap = t->cap ? 2 * t->cap : 16;
		struct nm *v = jj_alloc(P->a, cap * sizeof *v);
		if (!v)
			return nomem(P);
		if (t->n)
			memcpy(v, t->v, t->n * sizeof *v);
		t->v = v;
		t->cap = cap;
	}
	t->v[t->n].n = x;
	t->v[t->n++].st = st;
	return 0;
}

/* scopes met while walking one level, analysed once that level is complete */
struct pending {
	struct jj_node **v;
	size_t n, cap;
};

static int an_expr(struct parser *P, struct tab *t, const struct jj_node *x, uint32_t depth)
{
	if (!x || depth > 4 * P->max_depth + 64)
		return 0;
	int rc = 0;
	if (x->kind == JN_NAME)
		rc = tab_add(P, t, x, NM_LOADED);
	const struct jj_node *kids[] = {x->a, x->b, x->c, x->filter};
	for (size_t i = 0; !rc && i < 4; i++)
		rc = an_expr(P, t, kids[i], depth + 1);
	for (size_t i = 0; !rc && i < x->args.n; i++)
		rc = an_expr(P, t, x->args.v[i], depth + 1);
	for (size_t i = 0; !rc && i < x->kwvals.n; i++)
		rc = an_expr(P, t, x->kwvals.v[i], depth + 1);
	return rc;
}

static int pend(struct parser *P, struct pending *q, struct jj_node *x)
{
	if (q->n == q->cap) {
		size_t cap = q->cap ? 2 * q->cap : 8;
		struct jj_node **v = jj_alloc(P->a, cap * sizeof *v);
		if (!v)
			return nomem(P);
		if (q->n)
			memcpy(v, q->v, q->n * sizeof *v);
		q->v = v;
		q->cap = cap;
	}
	q->v[q->n++] = x;
	return 0;
}

static int an_body(struct parser *P, struct tab *t, const struct jj_nodes *body, struct pending *q, uint32_t depth);

static int an_if(struct parser *P, struct tab *t, const struct jj_node *x, struct pending *q, uint32_t depth)
{
	int rc = an_expr(P, t, x->a, 0);
	if (rc)
		return rc;
	/* each branch on its own, then merged as jinja2's branch_update */
	size_t nb = 2 + x->elifs.n / 2;
	struct tab *bt = jj_alloc(P->a, nb * sizeof *bt);
	if (!bt)
		return nomem(P);
	rc = an_body(P, &bt[0], &x->body, q, depth + 1);
	for (size_t k = 0; !rc && k + 1 < x->elifs.n; k += 2) {
		struct tab *b = &bt[1 + k / 2];
		if (!(rc = an_expr(P, b, x->elifs.v[k], 0)))
			rc = an_body(P, b, &x->elifs.v[k + 1]->body, q, depth + 1);
	}
	if (!rc)
		rc = an_body(P, &bt[nb - 1], &x->orelse, q, depth + 1);
	for (size_t i = 0; !rc && i < nb; i++)
		for (size_t j = 0; !rc && j < bt[i].n; j++) {
			const struct jj_node *nmn = bt[i].v[j].n;
			if (tab_find(t, nmn->name, nmn->name_n))
				continue;
			/* jinja2 starts a name assigned inside an if from the
			 * context, whether or not every branch assigns it */
			bool loaded = false;
			for (size_t k = 0; k < nb; k++) {
				const struct nm *o = tab_find(&bt[k], nmn->name, nmn->name_n);
				loaded = loaded || (o && o->st == NM_LOADED);
			}
			rc = tab_add(P, t, nmn, loaded ? NM_LOADED : NM_PARTIAL);
		}
	return rc;
}

static int an_body(struct parser *P, struct tab *t, const struct jj_nodes *body, struct pending *q, uint32_t depth)
{
	int rc = 0;
	if (depth > P->max_depth + 8)
		return 0; /* deeper than the parser allows: cannot happen */
	for (size_t i = 0; !rc && i < body->n; i++) {
		struct jj_node *x = body->v[i];
		switch (x->kind) {
		case JN_PRINT:
			rc = an_expr(P, t, x->a, 0);
			break;
		case JN_IF:
			rc = an_if(P, t, x, q, depth);
			break;
		case JN_SET:
			rc = an_expr(P, t, x->a, 0);
			for (size_t k = 0; !rc && k < x->targets.n; k++) {
				const struct jj_node *g = x->targets.v[k];
				rc = g->kind == JN_NAME ? tab_add(P, t, g, NM_STORED) : tab_add(P, t, g->a, NM_LOADED);
			}
			break;
		case JN_SETBLOCK:
			if (!(rc = an_expr(P, t, x->filter, 0)) && !(rc = tab_add(P, t, x->targets.v[0], NM_STORED)))
				rc = pend(P, q, x);
			break;
		case JN_MACRO:
			if (!(rc = tab_add(P, t, x, NM_STORED)))
				rc = pend(P, q, x);
			break;
		case JN_FOR:
		case JN_CALLBLOCK:
			if (!(rc = an_expr(P, t, x->a, 0)))
				rc = pend(P, q, x);
			break;
		case JN_FILTERBLOCK:
			if (!(rc = an_expr(P, t, x->filter, 0)))
				rc = pend(P, q, x);
			break;
		case JN_WITH:
			for (size_t k = 0; !rc && k < x->kwvals.n; k++)
				rc = an_expr(P, t, x->kwvals.v[k], 0);
			if (!rc)
				rc = pend(P, q, x);
			break;
		case JN_BODY:
			rc = pend(P, q, x);
			break;
		default:
			break;
		}
	}
	return rc;
}

static bool outer_mentions(const struct tab *t, const char *name, size_t n)
{
	for (; t; t = t->parent)
		if (tab_find(t, name, n))
			return true;
	return false;
}

/* analyse the scope whose code is body (+ extra), bound names first;
 * writes the names that start undefined into *stores */
static int an_scope(struct parser *P, const struct tab *parent, struct jj_node *x, const struct jj_nodes *body,
		    struct jj_nodes *stores, uint32_t depth)
{
	struct tab t = {.parent = parent};
	struct pending q = {0};
	int rc = 0;
	if (depth > P->max_depth + 8)
		return 0;
	if (x) {
		/* what the scope binds on entry: loop targets, parameters, with names */
		for (size_t k = 0; !rc && k < x->targets.n; k++)
			if (x->targets.v[k]->kind == JN_NAME)
				rc = tab_add(P, &t, x->targets.v[k], NM_LOADED);
		if (!rc && x->kind == JN_FOR)
			rc = an_expr(P, &t, x->filter, 0);
		for (size_t k = 0; !rc && x->kind == JN_MACRO && k < x->kwvals.n; k++)
			rc = an_expr(P, &t, x->kwvals.v[k], 0);
	}
	if (!rc)
		rc = an_body(P, &t, body, &q, depth);
	if (!rc && x && x->kind == JN_FOR)
		rc = an_body(P, &t, &x->orelse, &q, depth);
	size_t cap = 0;
	for (size_t i = 0; !rc && i < t.n; i++)
		if (t.v[i].st == NM_STORED && !outer_mentions(parent, t.v[i].n->name, t.v[i].n->name_n)) {
			struct jj_node *nm = (struct jj_node *)t.v[i].n;
			rc = nl_push(P, stores, &cap, nm);
		}
	for (size_t i = 0; !rc && i < q.n; i++)
		rc = an_scope(P, &t, q.v[i], &q.v[i]->body, &q.v[i]->stores, depth + 1);
	return rc;
}

int jj_parse_tokens(struct tern_jinja *t, const struct jj_token *tok, size_t n, uint32_t max_depth,
		    tern_err *e)
{
	struct parser P = {.a = &t->a, .e = e, .t = tok, .n = n, .max_depth = max_depth};
	int rc = parse_body(&P, &t->body, NULL, tok, "");
	return rc ? rc : an_scope(&P, NULL, NULL, &t->body, &t->stores, 0);
}
