/* lex.c - Jinja source text to tokens, with jinja2's whitespace rules as
 * transformers configures them: newlines normalised to "\n" and one
 * trailing newline dropped (keep_trailing_newline off), trim_blocks (the
 * newline after a block or comment tag goes), lstrip_blocks (the spaces
 * before a block or comment tag that starts its line go), "-" on a tag
 * side strips all whitespace on that side, "+" turns lstrip/trim off.
 * Inside a tag, `}}` and `%}` end it only when no bracket is open, as in
 * jinja2 (so `{{ {'a': {'b': 1}} }}` works). */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/core/utf8.h"
#include "lib/jinja/jinja_int.h"

struct lexer {
	struct jj_arena *a;
	tern_err *e;
	const char *s; /* normalised source */
	size_t n, pos;
	uint32_t line;
	size_t line_start;
	struct jj_token *t;
	size_t nt, cap;
	bool line_starting; /* the last tag's end consumed a newline (or at start) */
};

static void advance_to(struct lexer *L, size_t to)
{
	for (size_t i = L->pos; i < to; i++)
		if (L->s[i] == '\n') {
			L->line++;
			L->line_start = i + 1;
		}
	L->pos = to;
}

static int lex_err(struct lexer *L, size_t at, const char *msg)
{
	uint32_t line = L->line;
	size_t ls = L->line_start;
	for (size_t i = L->pos; i < at && i < L->n; i++)
		if (L->s[i] == '\n') {
			line++;
			ls = i + 1;
		}
	return tern_errf(L->e, TERN_EFORMAT, "line %u, column %zu: %s", line, at - ls + 1, msg);
}

static struct jj_token *push(struct lexer *L, int type, size_t at)
{
	if (L->nt == L->cap) {
		size_t cap = L->cap ? 2 * L->cap : 256;
		struct jj_token *t = realloc(L->t, cap * sizeof *t);
		if (!t)
			return NULL;
		L->t = t;
		L->cap = cap;
	}
	struct jj_token *k = &L->t[L->nt++];
	memset(k, 0, sizeof *k);
	k->type = (uint8_t)type;
	k->line = L->line;
	size_t ls = L->line_start;
	uint32_t line = L->line;
	for (size_t i = L->pos; i < at; i++)
		if (L->s[i] == '\n') {
			line++;
			ls = i + 1;
		}
	k->line = line;
	k->col = (uint32_t)(at - ls + 1);
	return k;
}

static bool is_ws(char ch)
{
	return ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r' || ch == '\f' || ch == '\v';
}

static bool is_name0(unsigned char ch)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || ch == '_';
}

static bool is_digit(char ch) { return ch >= '0' && ch <= '9'; }

/* Append text s[from, to) as a data token, stripped as the next tag asks. */
static int emit_text(struct lexer *L, size_t from, size_t to, char tagkind, char sign)
{
	if (sign == '-') {
		while (to > from && is_ws(L->s[to - 1]))
			to--;
	} else if (sign != '+' && (tagkind == '%' || tagkind == '#')) {
		size_t l = to;
		while (l > from && L->s[l - 1] != '\n')
			l--;
		if (l > from || L->line_starting) {
			size_t k = l;
			while (k < to && is_ws(L->s[k]))
				k++;
			if (k == to)
				to = l;
		}
	}
	if (to > from) {
		struct jj_token *k = push(L, JT_TEXT, from);
		if (!k)
			return TERN_ENOMEM;
		k->p = L->s + from;
		k->n = to - from;
	}
	return 0;
}

/* After a tag's end at L->pos: trim as its closing sign says. */
static void after_end(struct lexer *L, char sign, bool block)
{
	size_t p = L->pos;
	if (sign == '-') {
		while (p < L->n && is_ws(L->s[p]))
			p++;
	} else if (sign != '+' && block && p < L->n && L->s[p] == '\n') {
		p++;
	}
	L->line_starting = p > 0 && L->s[p - 1] == '\n';
	advance_to(L, p);
}

static int hexval(char ch)
{
	if (ch >= '0' && ch <= '9')
		return ch - '0';
	if (ch >= 'a' && ch <= 'f')
		return ch - 'a' + 10;
	if (ch >= 'A' && ch <= 'F')
		return ch - 'A' + 10;
	return -1;
}

/* A string literal at L->pos (quote q); decodes Python's escapes. */
static int lex_string(struct lexer *L, struct jj_token *k)
{
	char q = L->s[L->pos];
	size_t i = L->pos + 1;
	while (i < L->n && L->s[i] != q) {
		if (L->s[i] == '\\' && i + 1 < L->n)
			i++;
		i++;
	}
	if (i >= L->n)
		return lex_err(L, L->pos, "unterminated string");
	size_t end = i;
	char *o = jj_alloc(L->a, (end - L->pos) + 1);
	if (!o)
		return TERN_ENOMEM;
	size_t n = 0;
	for (i = L->pos + 1; i < end; i++) {
		char ch = L->s[i];
		if (ch != '\\') {
			o[n++] = ch;
			continue;
		}
		char x = L->s[++i];
		int width = 0;
		switch (x) {
		case 'n': o[n++] = '\n'; break;
		case 't': o[n++] = '\t'; break;
		case 'r': o[n++] = '\r'; break;
		case 'a': o[n++] = '\a'; break;
		case 'b': o[n++] = '\b'; break;
		case 'f': o[n++] = '\f'; break;
		case 'v': o[n++] = '\v'; break;
		case '\\': o[n++] = '\\'; break;
		case '\'': o[n++] = '\''; break;
		case '"': o[n++] = '"'; break;
		case '\n': break;
		case 'x': width = 2; break;
		case 'u': width = 4; break;
		case 'U': width = 8; break;
		default:
			if (x >= '0' && x <= '7') {
				uint32_t v = 0;
				int d = 0;
				while (d < 3 && i < end && L->s[i] >= '0' && L->s[i] <= '7') {
					v = v * 8 + (uint32_t)(L->s[i] - '0');
					i++;
					d++;
				}
				i--;
				n += tern_utf8_encode(o + n, v);
			} else {
				o[n++] = '\\';
				o[n++] = x;
			}
		}
		if (width) {
			uint32_t v = 0;
			for (int d = 0; d < width; d++) {
				int h = i + 1 + (size_t)d < end ? hexval(L->s[i + 1 + (size_t)d]) : -1;
				if (h < 0)
					return lex_err(L, i - 1, "truncated \\x, \\u or \\U escape in a string");
				v = v * 16 + (uint32_t)h;
			}
			if (v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF))
				return lex_err(L, i - 1, "escape out of the Unicode range in a string");
			i += (size_t)width;
			n += tern_utf8_encode(o + n, v);
		}
	}
	o[n] = 0;
	k->p = o;
	k->n = n;
	advance_to(L, end + 1);
	return 0;
}

/* A number's text without its '_' separators, for strtod / strtoull. */
struct numtext {
	char b[128];
	size_t n;
};

/* Appends ch when `room` bytes would still be left; an overlong number
 * fills the buffer and is refused as malformed. */
static void num_put(struct numtext *t, char ch, size_t room)
{
	if (t->n < sizeof t->b - room)
		t->b[t->n++] = ch;
}

/* Digits (hex ones too when `hex`) and '_' from s[i]; returns the index
 * after them. */
static size_t take_digits(const struct lexer *L, size_t i, bool hex, struct numtext *t)
{
	const char *s = L->s;
	while (i < L->n && ((hex ? hexval(s[i]) >= 0 : is_digit(s[i])) || s[i] == '_')) {
		if (s[i] != '_')
			num_put(t, s[i], 1);
		i++;
	}
	return i;
}

/* A decimal number from s[i]: the integer digits, then a fraction and an
 * exponent unless the number follows a dot (`x.0.1` is two subscripts). */
static size_t take_decimal(const struct lexer *L, size_t i, bool after_dot, struct numtext *t, bool *isfloat)
{
	const char *s = L->s;
	i = take_digits(L, i, false, t);
	if (after_dot)
		return i;
	if (i + 1 < L->n && s[i] == '.' && is_digit(s[i + 1])) {
		*isfloat = true;
		num_put(t, '.', 1);
		i = take_digits(L, i + 1, false, t);
	}
	if (i < L->n && (s[i] == 'e' || s[i] == 'E')) {
		size_t j = i + 1;
		if (j < L->n && (s[j] == '+' || s[j] == '-'))
			j++;
		if (j < L->n && is_digit(s[j])) {
			*isfloat = true;
			num_put(t, 'e', 2);
			if (s[i + 1] == '-')
				num_put(t, '-', 1);
			i = take_digits(L, j, false, t);
		}
	}
	return i;
}

static int lex_number(struct lexer *L, struct jj_token *k, bool after_dot)
{
	const char *s = L->s;
	size_t i = L->pos;
	struct numtext t = {0};
	bool isfloat = false;
	int base = 10;
	if (s[i] == '0' && i + 1 < L->n && strchr("xXoObB", s[i + 1])) {
		base = (s[i + 1] == 'x' || s[i + 1] == 'X') ? 16 : (s[i + 1] == 'o' || s[i + 1] == 'O') ? 8 : 2;
		i = take_digits(L, i + 2, true, &t);
	} else {
		i = take_decimal(L, i, after_dot, &t, &isfloat);
	}
	t.b[t.n] = 0;
	if (t.n == 0 || t.n >= sizeof t.b - 1)
		return lex_err(L, L->pos, "malformed number");
	char *end = NULL;
	if (isfloat) {
		k->type = JT_FLOAT;
		k->f = strtod(t.b, &end);
	} else {
		k->type = JT_INT;
		unsigned long long v = strtoull(t.b, &end, base);
		if (*end || v > (unsigned long long)INT64_MAX || (v == ULLONG_MAX))
			return lex_err(L, L->pos, "integer literal too large");
		k->i = (int64_t)v;
	}
	advance_to(L, i);
	return 0;
}

/* Tokens inside a tag until its end; kind '{' for {{ }}, '%' for {% %}. */
/* The tag's end at L->pos ("%}" or "}}", maybe signed), looked for only
 * with no bracket open? Then its token is pushed, the text after it
 * trimmed, and *done set. "+}}" is no end: only blocks take "+". */
static int lex_tag_end(struct lexer *L, char kind, bool *done)
{
	const char *s = L->s + L->pos;
	size_t left = L->n - L->pos;
	char endc = kind == '%' ? '%' : '}';
	char sign = 0;
	size_t skip = 0;
	if (left >= 2 && s[0] == endc && s[1] == '}')
		skip = 2;
	else if (left >= 3 && (s[0] == '-' || s[0] == '+') && s[1] == endc && s[2] == '}')
		sign = s[0], skip = 3;
	if (!skip || (sign == '+' && kind != '%'))
		return 0;
	struct jj_token *k = push(L, kind == '%' ? JT_BLOCK_END : JT_VAR_END, L->pos);
	if (!k)
		return TERN_ENOMEM;
	advance_to(L, L->pos + skip);
	after_end(L, sign, kind == '%');
	*done = true;
	return 0;
}

/* An operator or bracket at L->pos into k. *balance counts the brackets
 * open, so that "}}" inside a dict literal does not end the tag; *dot says
 * whether it was a lone '.', after which a number takes no fraction. */
static int lex_op(struct lexer *L, struct jj_token *k, int *balance, bool *dot)
{
	static const char *const two[] = {"//", "**", "==", "!=", ">=", "<="};
	const char *s = L->s + L->pos;
	size_t left = L->n - L->pos;
	unsigned char ch = (unsigned char)s[0];
	size_t len = 0;
	for (size_t j = 0; j < sizeof two / sizeof two[0]; j++)
		if (left >= 2 && s[0] == two[j][0] && s[1] == two[j][1])
			len = 2;
	if (!len && strchr("+-/*%~[](){}><=.:|,;", ch) && ch)
		len = 1;
	if (!len) {
		char msg[64];
		snprintf(msg, sizeof msg, "unexpected character '%c' in a tag", ch >= 32 && ch < 127 ? ch : '?');
		return lex_err(L, L->pos, msg);
	}
	if (ch == '(' || ch == '[' || ch == '{')
		(*balance)++;
	else if (len == 1 && (ch == ')' || ch == ']' || ch == '}')) {
		if (*balance == 0)
			return lex_err(L, L->pos, "unexpected closing bracket");
		(*balance)--;
	}
	*dot = len == 1 && ch == '.';
	k->p = s;
	k->n = len;
	advance_to(L, L->pos + len);
	return 0;
}

static void lex_name(struct lexer *L, struct jj_token *k)
{
	const char *s = L->s + L->pos;
	size_t left = L->n - L->pos;
	size_t i = 1;
	while (i < left && (is_name0((unsigned char)s[i]) || is_digit(s[i])))
		i++;
	k->type = JT_NAME;
	k->p = s;
	k->n = i;
	advance_to(L, L->pos + i);
}

/* Tokens inside a tag until its end; kind '{' for {{ }}, '%' for {% %}. */
static int lex_tag(struct lexer *L, char kind, size_t open_at)
{
	int balance = 0;
	bool prev_dot = false;
	for (;;) {
		while (L->pos < L->n && is_ws(L->s[L->pos]))
			advance_to(L, L->pos + 1);
		if (L->pos >= L->n)
			return lex_err(L, open_at, kind == '%' ? "unclosed block tag '{%'" : "unclosed variable tag '{{'");
		bool done = false;
		int rc = balance == 0 ? lex_tag_end(L, kind, &done) : 0;
		if (rc || done)
			return rc;
		struct jj_token *k = push(L, JT_OP, L->pos);
		if (!k)
			return TERN_ENOMEM;
		unsigned char ch = (unsigned char)L->s[L->pos];
		bool dot = false;
		if (is_name0(ch)) {
			lex_name(L, k);
		} else if (is_digit((char)ch)) {
			rc = lex_number(L, k, prev_dot);
		} else if (ch == '\'' || ch == '"') {
			k->type = JT_STRING;
			rc = lex_string(L, k);
		} else {
			rc = lex_op(L, k, &balance, &dot);
		}
		if (rc)
			return rc;
		prev_dot = dot;
	}
}

/* "{% raw %}" at pos (after the "{%" and its sign)? returns the byte after "%}" or 0 */
static size_t match_word_tag(const char *s, size_t n, size_t i, const char *word, char *endsign)
{
	while (i < n && is_ws(s[i]))
		i++;
	size_t wl = strlen(word);
	if (i + wl > n || memcmp(s + i, word, wl) != 0)
		return 0;
	i += wl;
	if (i < n && (is_name0((unsigned char)s[i]) || is_digit(s[i])))
		return 0;
	while (i < n && is_ws(s[i]))
		i++;
	*endsign = 0;
	if (i < n && (s[i] == '-' || s[i] == '+'))
		*endsign = s[i++];
	if (i + 2 <= n && s[i] == '%' && s[i + 1] == '}')
		return i + 2;
	return 0;
}

/* A comment from L->pos (after "{#" and its sign) to its "#}". */
static int lex_comment(struct lexer *L, size_t open_at)
{
	const char *s = L->s;
	size_t j = L->pos;
	while (j + 1 < L->n && !(s[j] == '#' && s[j + 1] == '}'))
		j++;
	if (j + 1 >= L->n)
		return lex_err(L, open_at, "unclosed comment '{#'");
	char esign = (j > L->pos && (s[j - 1] == '-' || s[j - 1] == '+')) ? s[j - 1] : 0;
	advance_to(L, j + 2);
	after_end(L, esign, true);
	return 0;
}

/* A "{% raw %}" block from L->pos (after the "{%" and its sign), if the
 * block tag is one: its body becomes text as it stands. *raw says whether
 * it was. */
static int lex_raw(struct lexer *L, size_t open_at, bool *raw)
{
	const char *s = L->s;
	char esign = 0;
	size_t body = match_word_tag(s, L->n, L->pos, "raw", &esign);
	if (!body || esign == '+')
		return 0;
	*raw = true;
	/* jinja2 takes no "+" there, and trims no newline after the opening
	 * tag (only after {% endraw %}) */
	advance_to(L, body);
	after_end(L, esign, false);
	/* the body runs to the first {% endraw %} */
	size_t j = L->pos, endtag = 0;
	char osign = 0;
	for (; j + 1 < L->n; j++) {
		if (s[j] != '{' || s[j + 1] != '%')
			continue;
		size_t k = j + 2;
		osign = (k < L->n && (s[k] == '-' || s[k] == '+')) ? s[k] : 0;
		endtag = match_word_tag(s, L->n, k + (osign ? 1 : 0), "endraw", &esign);
		if (endtag)
			break;
	}
	if (!endtag)
		return lex_err(L, open_at, "unclosed raw block: no '{% endraw %}'");
	int rc = emit_text(L, L->pos, j, '%', osign);
	if (rc)
		return rc;
	advance_to(L, endtag);
	after_end(L, esign, true);
	return 0;
}

/* From L->pos: the text up to the next tag, comment or raw block, then it. */
static int lex_piece(struct lexer *L)
{
	const char *s = L->s;
	size_t from = L->pos, i = L->pos;
	while (i + 1 < L->n && !(s[i] == '{' && (s[i + 1] == '{' || s[i + 1] == '%' || s[i + 1] == '#')))
		i++;
	if (i + 1 >= L->n) { /* no tag: text to the end */
		int rc = emit_text(L, from, L->n, 0, 0);
		if (!rc)
			advance_to(L, L->n);
		return rc;
	}
	char kind = s[i + 1];
	char sign = (i + 2 < L->n && (s[i + 2] == '-' || s[i + 2] == '+')) ? s[i + 2] : 0;
	if (kind == '{' && sign == '+')
		sign = 0;
	int rc = emit_text(L, from, i, kind, sign);
	if (rc)
		return rc;
	size_t open_at = i;
	advance_to(L, i + 2 + (sign ? 1 : 0));
	if (kind == '#')
		return lex_comment(L, open_at);
	bool raw = false;
	if (kind == '%' && ((rc = lex_raw(L, open_at, &raw)) || raw))
		return rc;
	if (!push(L, kind == '%' ? JT_BLOCK_BEGIN : JT_VAR_BEGIN, open_at))
		return TERN_ENOMEM;
	return lex_tag(L, kind == '%' ? '%' : '{', open_at);
}

int jj_lex(struct jj_arena *a, const char *src, size_t len, struct jj_token **out, size_t *nout,
	   tern_err *e)
{
	/* newlines normalised, one trailing newline dropped */
	char *s = jj_alloc(a, len + 1);
	if (!s)
		return tern_errf(e, TERN_ENOMEM, "out of memory for the template");
	size_t n = 0;
	for (size_t i = 0; i < len; i++) {
		if (src[i] == '\r') {
			s[n++] = '\n';
			if (i + 1 < len && src[i + 1] == '\n')
				i++;
		} else {
			s[n++] = src[i];
		}
	}
	if (n > 0 && s[n - 1] == '\n')
		n--;
	s[n] = 0;
	struct lexer L = {.a = a, .e = e, .s = s, .n = n, .line = 1, .line_starting = true};
	int rc = 0;
	while (!rc && L.pos < L.n)
		rc = lex_piece(&L);
	if (!rc && !push(&L, JT_EOF, L.n))
		rc = TERN_ENOMEM;
	if (rc) {
		if (rc == TERN_ENOMEM)
			tern_errf(e, rc, "out of memory while reading the template");
		free(L.t);
		return rc;
	}
	*out = L.t;
	*nout = L.nt;
	return 0;
}
