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
	for (;;) {
		const struct jj_token *k = cur(P);
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
			struct jj_node *c = node(P, JN_CALL, k);
			if (!c)
				return nomem(P);
			c->line = (*x)->line; /* errors point at the callee */
			c->col = (*x)->col;
			c->a = *x;
			if ((rc = parse_call_args(P, c)))
				return rc;
			*x = c;
		} else {
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
	for (;;) {
		const struct jj_token *k = cur(P);
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
			struct jj_node *c = node(P, JN_CALL, k);
			if (!c)
				return nomem(P);
			c->line = (*x)->line; /* errors point at the callee */
			c->col = (*x)->col;
			c->a = *x;
			if ((rc = parse_call_args(P, c)))
				return rc;
			*x = c;
		} else {
			return 0;
		}
	}
}

static int parse_primary(struct parser *P, struct jj_node **out)
{
	const struct jj_token *k = cur(P);
	struct jj_node *x = NULL;
	int rc;
	if (k->type == JT_NAME) {
		static const struct { const char *n; int t; bool b; } kw[] = {
			{"true", JV_BOOL, true}, {"True", JV_BOOL, true}, {"false", JV_BOOL, false},
			{"False", JV_BOOL, false}, {"none", JV_NONE, false}, {"None", JV_NONE, false}};
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
	} else if (k->type == JT_STRING) {
		/* adjacent strings are one: 'a' 'b' */
		size_t total = 0, j = P->i;
		while (P->t[j].type == JT_STRING)
			total += P->t[j++].n;
		char *s = jj_alloc(P->a, total + 1);
		if (!s || !(x = node(P, JN_LIT, k)))
			return nomem(P);
		size_t o = 0;
		for (; P->i < j; P->i++) {
			memcpy(s + o, P->t[P->i].p, P->t[P->i].n);
			o += P->t[P->i].n;
		}
		x->lit = jv_str(s, total);
	} else if (k->type == JT_INT || k->type == JT_FLOAT) {
		if (!(x = node(P, JN_LIT, k)))
			return nomem(P);
		x->lit = k->type == JT_INT ? jv_int(k->i) : jv_float(k->f);
		P->i++;
	} else if (is_op(k, "(")) {
		P->i++;
		if (is_op(cur(P), ")")) {
			if (!(x = node(P, JN_TUPLE, k)))
				return nomem(P);
			P->i++;
		} else {
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
		}
	} else if (is_op(k, "[")) {
		P->i++;
		if (!(x = node(P, JN_LIST, k)))
			return nomem(P);
		size_t cap = 0;
		while (!is_op(cur(P), "]")) {
			if (x->args.n) {
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
	} else if (is_op(k, "{")) {
		P->i++;
		if (!(x = node(P, JN_DICT, k)))
			return nomem(P);
		size_t capk = 0, capv = 0;
		while (!is_op(cur(P), "}")) {
			if (x->args.n) {
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
	} else {
		char b[48];
		return perr(P, k, "unexpected %s", tok_desc(k, b));
	}
	*out = x;
	return 0;
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

static int parse_pow(struct parser *P, struct jj_node **out)
{
	int rc = parse_unary(P, out, true);
	while (!rc && is_op(cur(P), "**")) {
		const struct jj_token *k = cur(P);
		P->i++;
		struct jj_node *r;
		if ((rc = parse_unary(P, &r, true)))
			return rc;
		rc = binary(P, JN_BIN, JO_POW, k, *out, r, out);
	}
	return rc;
}

static int parse_math2(struct parser *P, struct jj_node **out)
{
	int rc = parse_pow(P, out);
	for (;;) {
		if (rc)
			return rc;
		const struct jj_token *k = cur(P);
		int op = is_op(k, "*") ? JO_MUL : is_op(k, "/") ? JO_DIV : is_op(k, "//") ? JO_FDIV
			 : is_op(k, "%") ? JO_MOD : -1;
		if (op < 0)
			return 0;
		P->i++;
		struct jj_node *r;
		if ((rc = parse_pow(P, &r)))
			return rc;
		rc = binary(P, JN_BIN, op, k, *out, r, out);
	}
}

static int parse_concat(struct parser *P, struct jj_node **out)
{
	int rc = parse_math2(P, out);
	while (!rc && is_op(cur(P), "~")) {
		const struct jj_token *k = cur(P);
		P->i++;
		struct jj_node *r;
		if ((rc = parse_math2(P, &r)))
			return rc;
		rc = binary(P, JN_CONCAT, 0, k, *out, r, out);
	}
	return rc;
}

static int parse_math1(struct parser *P, struct jj_node **out)
{
	int rc = parse_concat(P, out);
	for (;;) {
		if (rc)
			return rc;
		const struct jj_token *k = cur(P);
		int op = is_op(k, "+") ? JO_ADD : is_op(k, "-") ? JO_SUB : -1;
		if (op < 0)
			return 0;
		P->i++;
		struct jj_node *r;
		if ((rc = parse_concat(P, &r)))
			return rc;
		rc = binary(P, JN_BIN, op, k, *out, r, out);
	}
}

/* a < b < c is (a < b) and (b < c) with b evaluated once; kept as a chain:
 * JN_CMP nodes whose `a` is the previous comparison (op flag 0x80 on the
 * later links tells the evaluator to compare with the chain's right side) */
static int parse_compare(struct parser *P, struct jj_node **out)
{
	int rc = parse_math1(P, out);
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
		if (op < 0)
			return 0;
		P->i++;
		struct jj_node *r;
		if ((rc = parse_math1(P, &r)))
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

static int parse_and(struct parser *P, struct jj_node **out)
{
	int rc = parse_not(P, out);
	while (!rc && is_name(cur(P), "and")) {
		const struct jj_token *k = cur(P);
		P->i++;
		struct jj_node *r;
		if ((rc = parse_not(P, &r)))
			return rc;
		rc = binary(P, JN_AND, 0, k, *out, r, out);
	}
	return rc;
}

static int parse_or(struct parser *P, struct jj_node **out)
{
	int rc = parse_and(P, out);
	while (!rc && is_name(cur(P), "or")) {
		const struct jj_token *k = cur(P);
		P->i++;
		struct jj_node *r;
		if ((rc = parse_and(P, &r)))
			return rc;
		rc = binary(P, JN_OR, 0, k, *out, r, out);
	}
	return rc;
}

static int parse_expr(struct parser *P, struct jj_node **out, bool condexpr)
{
	int rc = enter(P);
	if (rc)
		return rc;
	if ((rc = parse_or(P, out)))
		return rc;
	while (condexpr && is_name(cur(P), "if")) {
		const struct jj_token *k = cur(P);
		P->i++;
		struct jj_node *x = node(P, JN_COND, k);
		if (!x)
			return nomem(P);
		x->a = *out;
		if ((rc = parse_or(P, &x->b)))
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
	const struct jj_token *nm = cur(P);
	if (nm->type != JT_NAME)
		return perr(P, nm, "expected a statement name after '{%%'");
	P->i++;
	if (is_name(nm, "if")) {
		if (!(x = node(P, JN_IF, nm)))
			return nomem(P);
		rc = parse_if(P, x);
	} else if (is_name(nm, "for")) {
		if (!(x = node(P, JN_FOR, nm)))
			return nomem(P);
		rc = parse_for(P, x);
	} else if (is_name(nm, "set")) {
		if (!(x = node(P, JN_SET, nm)))
			return nomem(P);
		rc = parse_set(P, x);
	} else if (is_name(nm, "macro")) {
		if (!(x = node(P, JN_MACRO, nm)))
			return nomem(P);
		rc = parse_macro(P, x);
	} else if (is_name(nm, "call")) {
		if (!(x = node(P, JN_CALLBLOCK, nm)))
			return nomem(P);
		rc = parse_callblock(P, x);
	} else if (is_name(nm, "filter")) {
		if (!(x = node(P, JN_FILTERBLOCK, nm)))
			return nomem(P);
		static const char *const ends[] = {"endfilter", NULL};
		if (!(rc = parse_block_filters(P, &x->filter, true)) && !(rc = expect_block_end(P)) &&
		    !(rc = parse_body(P, &x->body, ends, nm, "filter")))
			rc = end_tag(P, "endfilter");
	} else if (is_name(nm, "generation")) {
		/* transformers' AssistantTracker: the body renders as it is */
		if (!(x = node(P, JN_BODY, nm)))
			return nomem(P);
		static const char *const ends[] = {"endgeneration", NULL};
		if (!(rc = expect_block_end(P)) && !(rc = parse_body(P, &x->body, ends, nm, "generation")))
			rc = end_tag(P, "endgeneration");
	} else if (is_name(nm, "with")) {
		if (!(x = node(P, JN_WITH, nm)))
			return nomem(P);
		size_t capt = 0, capv = 0;
		rc = 0;
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
		static const char *const ends[] = {"endwith", NULL};
		if (!rc && !(rc = expect_block_end(P)) && !(rc = parse_body(P, &x->body, ends, nm, "with")))
			rc = end_tag(P, "endwith");
	} else if (is_name(nm, "break") || is_name(nm, "continue")) {
		if (!(x = node(P, is_name(nm, "break") ? JN_BREAK : JN_CONTINUE, nm)))
			return nomem(P);
		rc = expect_block_end(P);
	} else {
		char nbuf[48];
		return perr(P, nm, "unknown tag %s", tok_desc(nm, nbuf));
	}
	if (rc)
		return rc;
	return nl_push(P, body, cap, x);
}

int jj_parse_tokens(struct tern_jinja *t, const struct jj_token *tok, size_t n, uint32_t max_depth,
		    tern_err *e)
{
	struct parser P = {.a = &t->a, .e = e, .t = tok, .n = n, .max_depth = max_depth};
	return parse_body(&P, &t->body, NULL, tok, "");
}
