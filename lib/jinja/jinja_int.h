/* jinja_int.h - what the files of lib/jinja share: the arena every parse and
 * render allocates from, the token and syntax-tree types, the value type and
 * the render state. Not a public header: only the lib/jinja sources include it.
 *
 * Memory: a parse owns one arena (tokens are transient, the tree lives until
 * tern_jinja_free); a render owns another, freed when it returns. Values are
 * never freed one by one - templates run for microseconds, and the arena's
 * byte limit (derived from max_output) bounds what a hostile one can take. */
#ifndef TERN_JINJA_INT_H
#define TERN_JINJA_INT_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "lib/core/error.h"
#include "lib/jinja/jinja.h"

#define JJ_DEF_DEPTH 256u
#define JJ_DEF_STEPS 10000000u
#define JJ_DEF_OUTPUT (16u << 20)
#define JJ_MAX_RANGE 100000 /* jinja2's sandbox refuses longer ranges */

/* ---- arena --------------------------------------------------------------- */
struct jj_block;
struct jj_arena {
	struct jj_block *head;
	size_t total, limit; /* bytes taken from malloc; 0: no limit */
	bool refused;        /* an allocation failed for the limit, not for malloc */
};
void *jj_alloc(struct jj_arena *a, size_t n); /* zeroed; NULL: out of memory or over limit */
void jj_arena_free(struct jj_arena *a);

/* ---- tokens and syntax tree ---------------------------------------------- */
enum jj_tok {
	JT_EOF, JT_TEXT, JT_VAR_BEGIN, JT_VAR_END, JT_BLOCK_BEGIN, JT_BLOCK_END,
	JT_NAME, JT_STRING, JT_INT, JT_FLOAT, JT_OP,
};

struct jj_token {
	uint8_t type;
	uint32_t line, col;
	const char *p; /* text, name, decoded string or operator; [n] */
	size_t n;
	int64_t i;
	double f;
};

enum jj_kind {
	/* expressions */
	JN_LIT, JN_NAME, JN_LIST, JN_TUPLE, JN_DICT, JN_ATTR, JN_ITEM, JN_SLICE, JN_CALL,
	JN_FILTER, JN_TEST, JN_NOT, JN_NEG, JN_POS, JN_AND, JN_OR, JN_BIN, JN_CMP, JN_COND,
	JN_CONCAT,
	/* statements */
	JN_TEXT, JN_PRINT, JN_IF, JN_FOR, JN_SET, JN_SETBLOCK, JN_MACRO, JN_CALLBLOCK,
	JN_FILTERBLOCK, JN_BREAK, JN_CONTINUE, JN_BODY, JN_WITH,
};

struct jv;
struct jj_node;

/* a list of nodes (statement bodies, call arguments, list items) */
struct jj_nodes {
	struct jj_node **v;
	size_t n;
};

struct jj_list;
struct jj_dict;
struct jj_macro;
struct jj_loop;
struct jj_bound;

enum jv_type {
	JV_UNDEF, JV_NONE, JV_BOOL, JV_INT, JV_FLOAT, JV_STR, JV_LIST, JV_DICT,
	JV_NS, JV_MACRO, JV_FUNC, JV_LOOP, JV_METHOD,
};

struct jv {
	uint8_t t;
	bool tuple;  /* a list made by (a, b): printed with parentheses */
	bool safe;   /* JV_STR that is markupsafe's Markup (from |safe, |escape) */
	uint8_t gen; /* JV_LIST that Python holds as another iterable (JG_*) */
	union {
		bool b;
		int64_t i;
		double f;
		struct { const char *p; size_t n; } s; /* JV_STR; JV_UNDEF: the name or NULL */
		struct jj_list *l;
		struct jj_dict *d; /* JV_DICT, JV_NS */
		struct jj_macro *m;
		int fn;            /* JV_FUNC: a global function */
		struct jj_loop *loop;
		struct jj_bound *bm; /* JV_METHOD */
	} u;
};

/* A method taken as an attribute and not (yet) called: `d.items` is
 * Python's bound method, as jinja2's getattr finds it before the key. */
struct jj_bound {
	struct jv obj;
	const char *name; /* NUL-terminated */
};

/* What a JV_LIST stands for when jinja2 would hand out a lazy iterable:
 * map/select/... give generators (no len(), always true, not JSON), the
 * dict methods give views. They iterate like lists. */
enum { JG_LIST, JG_GEN, JG_ITEMS, JG_KEYS, JG_VALUES };

struct jj_list {
	struct jv *v;
	size_t n, cap;
};

struct jj_dict {
	struct jv *k, *v;
	size_t n, cap;
};

struct jj_node {
	uint8_t kind;
	uint8_t op;        /* JN_BIN/JN_CMP operator, JN_TEST negation, flags */
	uint32_t line, col;
	const char *name;  /* NUL-terminated: variable, attribute, filter, test, macro */
	size_t name_n;
	struct jv lit;     /* JN_LIT */
	struct jj_node *a, *b, *c; /* operands; JN_SLICE: start, stop, step */
	struct jj_nodes args;      /* call/filter/test arguments, list items, dict keys */
	struct jj_nodes kwvals;    /* keyword argument values / dict values */
	const char **kwnames;      /* [kwvals.n] */
	struct jj_nodes body, orelse; /* statements */
	struct jj_nodes elifs;     /* JN_IF: alternating condition, JN_BODY */
	struct jj_nodes targets;   /* JN_FOR/JN_SET: names (JN_NAME or JN_ATTR) */
	struct jj_node *filter;    /* JN_FOR: `if` condition; block filters */
	struct jj_nodes stores;    /* scopes: the names the scope itself assigns */
};

/* binary operators (JN_BIN) and comparisons (JN_CMP) */
enum { JO_ADD, JO_SUB, JO_MUL, JO_DIV, JO_FDIV, JO_MOD, JO_POW,
       JO_EQ, JO_NE, JO_LT, JO_LE, JO_GT, JO_GE, JO_IN, JO_NOTIN };

struct tern_jinja {
	struct jj_arena a;
	struct jj_nodes body;
	struct jj_nodes stores; /* the names the template's top level assigns */
	uint32_t max_depth_seen;
};

int jj_lex(struct jj_arena *a, const char *src, size_t len, struct jj_token **out, size_t *n,
	   tern_err *e);
int jj_parse_tokens(struct tern_jinja *t, const struct jj_token *tok, size_t n, uint32_t max_depth,
		    tern_err *e);

/* ---- render state -------------------------------------------------------- */
struct jj_buf {
	char *p;
	size_t n, cap;
};

struct jj_var {
	const char *name;
	size_t n;
	struct jv v;
};

struct jj_frame {
	struct jj_frame *parent;
	struct jj_var *v;
	size_t n, cap;
	const struct jj_nodes *stores; /* the scope's assigned names; NULL: none */
};

struct jj_macro {
	const struct jj_node *def; /* JN_MACRO, or JN_CALLBLOCK for caller() */
	struct jj_frame *closure;
	struct jv caller;          /* what `caller` names inside, JV_UNDEF if none */
};

struct jj_loop {
	const struct jv *items;
	size_t i, n;
	uint32_t depth0;
};

struct jj_ctx {
	struct jj_arena a;
	tern_err *e;
	uint64_t steps, max_steps;
	uint32_t depth, max_depth;
	uint32_t rec, max_rec; /* C recursion of the evaluator: bounds its stack */
	size_t max_output;
	time_t now;
	uint32_t line, col; /* where the expression being evaluated is */
	struct jj_frame *globals;
	struct jj_frame *frame;   /* the innermost scope */
	const struct jv *leaf;    /* the block text a {% filter %} chain starts from */
	struct jj_buf *out;
};

/* errors: "line L, column C: ..." at the current position */
int jj_fail(struct jj_ctx *c, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* an arena allocation failed: TERN_ERANGE at the memory limit, else TERN_ENOMEM */
int jj_oom(struct jj_ctx *c);

/* values */
static inline struct jv jv_undef(const char *name)
{
	struct jv v = {.t = JV_UNDEF};
	v.u.s.p = name;
	v.u.s.n = 0;
	return v;
}
static inline struct jv jv_none(void) { return (struct jv){.t = JV_NONE}; }
static inline struct jv jv_bool(bool b) { struct jv v = {.t = JV_BOOL}; v.u.b = b; return v; }
static inline struct jv jv_int(int64_t i) { struct jv v = {.t = JV_INT}; v.u.i = i; return v; }
static inline struct jv jv_float(double f) { struct jv v = {.t = JV_FLOAT}; v.u.f = f; return v; }
static inline struct jv jv_str(const char *p, size_t n)
{
	struct jv v = {.t = JV_STR};
	v.u.s.p = p;
	v.u.s.n = n;
	return v;
}
int jv_strdup(struct jj_ctx *c, const char *p, size_t n, struct jv *out);
int jv_new_list(struct jj_ctx *c, size_t cap, struct jv *out);
int jv_list_push(struct jj_ctx *c, struct jv *list, struct jv x);
int jv_new_dict(struct jj_ctx *c, size_t cap, struct jv *out);
int jv_dict_set(struct jj_ctx *c, struct jj_dict *d, struct jv k, struct jv x);
const struct jv *jv_dict_get(const struct jj_dict *d, struct jv k);
const struct jv *jv_dict_getn(const struct jj_dict *d, const char *k, size_t n);

bool jv_truthy(struct jv v);
bool jv_is_num(struct jv v); /* int, float or bool (Python's bool is an int) */
double jv_num(struct jv v);
const char *jv_type_name(struct jv v); /* as Python names it: 'str', 'int', 'dict' */
/* Python ==; depth-bounded for self-referential values */
int jv_equal(struct jj_ctx *c, struct jv a, struct jv b, bool *eq);
/* Python <: *lt; error on types that do not order */
int jv_less(struct jj_ctx *c, struct jv a, struct jv b, bool *lt);

/* text building */
int jj_buf_put(struct jj_ctx *c, struct jj_buf *b, const char *p, size_t n);
int jj_buf_putc(struct jj_ctx *c, struct jj_buf *b, char ch);
int jj_buf_printf(struct jj_ctx *c, struct jj_buf *b, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
int jj_buf_str(struct jj_ctx *c, struct jj_buf *b, struct jv *out); /* the text as a value */
/* str(v) appended to b: what {{ v }} prints */
int jv_write_str(struct jj_ctx *c, struct jj_buf *b, struct jv v);
/* repr(v) appended to b */
int jv_write_repr(struct jj_ctx *c, struct jj_buf *b, struct jv v, uint32_t depth);
/* str(v) as a value (strings themselves are returned as they are) */
int jv_to_str(struct jj_ctx *c, struct jv v, struct jv *out);
/* Python's repr of a float */
size_t jj_float_repr(double f, char buf[40]);

/* JSON: the context in, tojson out */
int jv_from_json(struct jj_ctx *c, const char *text, size_t len, struct jv *out);
struct jj_json_opts {
	int indent;      /* <0: none (single line) */
	bool ascii;      /* ensure_ascii */
	bool sort_keys;
	const char *item_sep, *key_sep; /* NULL: Python's defaults for the indent */
};
int jv_write_json(struct jj_ctx *c, struct jj_buf *b, struct jv v, const struct jj_json_opts *o,
		  uint32_t depth);

/* UTF-8 helpers: code points of a string */
size_t jj_utf8_count(const char *p, size_t n);
size_t jj_utf8_offset(const char *p, size_t n, size_t cp); /* byte offset of code point cp */

/* builtins (builtins.c); args are positional, kw names parallel kwv */
struct jj_args {
	const struct jv *pos;
	size_t npos;
	const char *const *kwn;
	const struct jv *kwv;
	size_t nkw;
};
int jj_filter(struct jj_ctx *c, const char *name, struct jv in, const struct jj_args *a,
	      struct jv *out);
int jj_test(struct jj_ctx *c, const char *name, struct jv in, const struct jj_args *a, bool *out);
/* whether obj's type has a method of that name (what Python's getattr finds) */
bool jj_has_method(struct jv obj, const char *name);
/* one of them that would change the object: the immutable sandbox refuses it */
bool jj_method_unsafe(struct jv obj, const char *name);
/* obj.name(args): string, dict, list and loop methods; -1 - no such method */
int jj_method(struct jj_ctx *c, struct jv obj, const char *name, const struct jj_args *a,
	      struct jv *out);
/* the global functions: range, namespace, dict, raise_exception, strftime_now, ... */
int jj_global_lookup(const char *name, size_t n, struct jv *out);
int jj_call_global(struct jj_ctx *c, int fn, const struct jj_args *a, struct jv *out);
bool jj_filter_exists(const char *name);
bool jj_test_exists(const char *name);
/* a filter applied through map(name)/select(test): evaluator entry points */
int jj_iter_list(struct jj_ctx *c, struct jv v, struct jv *list); /* list(v) */
int jj_attr(struct jj_ctx *c, struct jv obj, const char *name, size_t n, struct jv *out);
int jj_item(struct jj_ctx *c, struct jv obj, struct jv key, struct jv *out);
int jj_step(struct jj_ctx *c);

#endif
