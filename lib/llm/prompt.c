/* prompt.c - choosing a chat template and rendering a conversation with
 * it (see prompt.h): the Jinja engine for the file's template or the
 * caller's, the built-in formatters for names and --no-jinja. Messages
 * arrive as JSON text and are read with jansson; the Jinja context is
 * built as a jansson object and handed over as text. */
#include "lib/llm/prompt.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/jinja/jinja.h"
#include "lib/llm/chatfmt.h"

struct tern_prompt {
	enum tern_prompt_kind kind;
	int fmt;                 /* TERN_PROMPT_BUILTIN */
	struct tern_jinja *tmpl; /* TERN_PROMPT_JINJA */
	const tok_vocab *v;
	char *bos, *eos;         /* token texts, "" when the vocabulary has none */
	char describe[160];
	char warning[200];
	const char *source;      /* for render errors: "the file's template" or the caller's name */
	char source_buf[120];
};

/* The text of special token `which`, malloc'd ("" when absent). */
static char *special_text(const tok_vocab *v, enum tok_special which)
{
	int32_t id = tok_special_id(v, which);
	struct tok_piece pc = {0};
	if (id >= 0)
		pc = tok_token_text(v, id);
	size_t n = pc.ptr ? pc.len : 0;
	char *s = malloc(n + 1);
	if (!s)
		return NULL;
	if (n)
		memcpy(s, pc.ptr, n);
	s[n] = 0;
	return s;
}

static int use_builtin(struct tern_prompt *p, int fmt, const char *why)
{
	p->kind = TERN_PROMPT_BUILTIN;
	p->fmt = fmt;
	snprintf(p->describe, sizeof p->describe, "%s (built-in, %s)", tern_chat_fmt_name(fmt), why);
	return 0;
}

static int use_jinja(struct tern_prompt *p, const char *src, size_t len, const char *source, tern_err *e)
{
	p->kind = TERN_PROMPT_JINJA;
	snprintf(p->source_buf, sizeof p->source_buf, "%s", source);
	p->source = p->source_buf;
	snprintf(p->describe, sizeof p->describe, "jinja (%s)", source);
	int rc = tern_jinja_parse(&p->tmpl, src, len, e);
	if (rc)
		tern_err_prefixf(e, "chat template (%s)", source);
	return rc;
}

/* The file's template as the options choose it (see prompt.h); *what
 * names it for messages. A name the file lacks: TERN_ENOTFOUND listing
 * the names it has. */
static int file_template(const tern_mf *mf, const struct tern_prompt_opts *o, struct tern_str *t, char *what,
			 size_t cap, tern_err *e)
{
	const char *name = o ? o->name : NULL;
	if (!name && o && o->tools && tern_chat_template_of(mf, "tool_use").ptr)
		name = "tool_use";
	*t = tern_chat_template_of(mf, name);
	/* transformers saves the unnamed one as "default" */
	if (!t->ptr && name && !strcmp(name, "default"))
		*t = tern_chat_template_of(mf, NULL);
	snprintf(what, cap, name ? "the file's template %.60s" : "the file's template", name);
	if (t->ptr || !name)
		return 0;
	char have[200] = "";
	if (tern_chat_template_of(mf, NULL).ptr)
		snprintf(have, sizeof have, "default");
	uint64_t it = 0;
	for (struct tern_str s; (s = tern_chat_template_next_name(mf, &it)).ptr;) {
		size_t k = strlen(have);
		snprintf(have + k, sizeof have - k, "%s%.*s", k ? ", " : "", (int)(s.len > 60 ? 60 : s.len), s.ptr);
	}
	return tern_errf(e, TERN_ENOTFOUND, "the file has no chat template named '%.60s' (%s%s)", name,
			 have[0] ? "it has: " : "it has no named ones", have);
}

/* The template of the options (see prompt.h); file is the file's
 * template (what names it), when no template of the caller's goes first. */
static int choose(struct tern_prompt *p, const struct tern_prompt_opts *o, struct tern_str file, const char *what,
		  tern_err *e)
{
	int rc = 0;
	if (o && o->builtin) {
		int fmt = tern_chat_fmt_by_name(o->builtin);
		rc = fmt < 0 ? tern_errf(e, TERN_EINVAL, "unknown chat template '%.40s' (built-in: %s)", o->builtin,
					 tern_chat_fmt_names())
			     : use_builtin(p, fmt, "--chat-template");
	} else if (o && o->text) {
		rc = use_jinja(p, o->text, o->text_len, o->text_name ? o->text_name : "the given template", e);
	} else if (!file.ptr) {
		use_builtin(p, TERN_CHAT_CHATML, "the file has no template");
		snprintf(p->warning, sizeof p->warning,
			 "the file has no chat template: using chatml (--chat-template NAME picks another)");
	} else if (o && o->no_jinja) {
		char why[120];
		snprintf(why, sizeof why, "detected in %s", what);
		int fmt = tern_chat_fmt_detect_n(file.ptr, (size_t)file.len);
		rc = fmt == TERN_CHAT_UNKNOWN
			     ? tern_errf(e, TERN_EUNSUPPORTED,
					 "the file's chat template is none of the built-in formats (--no-jinja): "
					 "--chat-template NAME picks one")
			     : use_builtin(p, fmt, why);
	} else {
		rc = use_jinja(p, file.ptr, (size_t)file.len, what, e);
	}
	return rc;
}

int tern_prompt_new(struct tern_prompt **out, const tern_mf *mf, const tok_vocab *v,
		    const struct tern_prompt_opts *o, tern_err *e)
{
	*out = NULL;
	struct tern_prompt *p = calloc(1, sizeof *p);
	if (!p)
		return tern_errf(e, TERN_ENOMEM, "out of memory");
	p->v = v;
	p->bos = special_text(v, TOK_BOS);
	p->eos = special_text(v, TOK_EOS);
	if (!p->bos || !p->eos) {
		tern_prompt_free(p);
		return tern_errf(e, TERN_ENOMEM, "out of memory");
	}
	struct tern_str file = {NULL, 0};
	char what[100] = "";
	int rc = o && (o->builtin || o->text) ? 0 : file_template(mf, o, &file, what, sizeof what, e);
	if (!rc)
		rc = choose(p, o, file, what, e);
	if (rc) {
		tern_prompt_free(p);
		return rc;
	}
	*out = p;
	return 0;
}

void tern_prompt_free(struct tern_prompt *p)
{
	if (!p)
		return;
	tern_jinja_free(p->tmpl);
	free(p->bos);
	free(p->eos);
	free(p);
}

enum tern_prompt_kind tern_prompt_kind(const struct tern_prompt *p) { return p->kind; }
int tern_prompt_fmt(const struct tern_prompt *p) { return p->kind == TERN_PROMPT_BUILTIN ? p->fmt : TERN_CHAT_UNKNOWN; }
const char *tern_prompt_describe(const struct tern_prompt *p) { return p->describe; }
const char *tern_prompt_warning(const struct tern_prompt *p) { return p->warning[0] ? p->warning : NULL; }

const char *tern_prompt_name(const struct tern_prompt *p)
{
	return p->kind == TERN_PROMPT_BUILTIN ? tern_chat_fmt_name(p->fmt) : "jinja";
}

/* The messages array parsed and checked; NULL with e set. */
static json_t *load_messages(const char *msgs, size_t len, tern_err *e)
{
	json_error_t je;
	json_t *a = json_loadb(msgs, len, JSON_DECODE_ANY, &je);
	if (!a) {
		tern_errf(e, TERN_EFORMAT, "messages: line %d, column %d: %s", je.line, je.column, je.text);
		return NULL;
	}
	if (!json_is_array(a)) {
		json_decref(a);
		tern_errf(e, TERN_EFORMAT, "messages: not a JSON array of messages");
		return NULL;
	}
	size_t i;
	json_t *m;
	json_array_foreach(a, i, m) {
		const char *bad = NULL;
		json_t *c = json_object_get(m, "content");
		if (!json_is_object(m))
			bad = "is not an object";
		else if (!json_is_string(json_object_get(m, "role")))
			bad = "'role' is not a string";
		else if (c && !json_is_string(c) && !json_is_null(c) && !json_is_array(c))
			bad = "'content' is not a string, an array or null";
		if (bad) {
			json_decref(a);
			tern_errf(e, TERN_EFORMAT, "messages: message %zu %s", i + 1, bad);
			return NULL;
		}
	}
	return a;
}

int tern_prompt_check_messages(const char *msgs, size_t len, tern_err *e)
{
	json_t *a = load_messages(msgs, len, e);
	json_decref(a);
	return a ? 0 : e ? e->code : TERN_EFORMAT;
}

/* A message's content as text: a string, null (""), or the "text" of the
 * parts of an array joined. Malloc'd. */
static char *content_text(json_t *m)
{
	json_t *c = json_object_get(m, "content");
	if (json_is_string(c))
		return strdup(json_string_value(c));
	size_t n = 0, i;
	json_t *part;
	json_array_foreach(c, i, part) {
		const char *t = json_string_value(json_object_get(part, "text"));
		n += t ? strlen(t) : 0;
	}
	char *s = malloc(n + 1);
	if (!s)
		return NULL;
	n = 0;
	json_array_foreach(c, i, part) {
		const char *t = json_string_value(json_object_get(part, "text"));
		size_t k = t ? strlen(t) : 0;
		if (k)
			memcpy(s + n, t, k);
		n += k;
	}
	s[n] = 0;
	return s;
}

static int render_builtin(const struct tern_prompt *p, json_t *a, bool add_gen, char **out, size_t *out_len,
			  tern_err *e)
{
	size_t n = json_array_size(a);
	struct tern_chat_msg *msgs = calloc(n ? n : 1, sizeof *msgs);
	char **texts = calloc(n ? n : 1, sizeof *texts);
	int rc = msgs && texts ? 0 : tern_errf(e, TERN_ENOMEM, "out of memory");
	for (size_t i = 0; i < n && !rc; i++) {
		json_t *m = json_array_get(a, i);
		texts[i] = content_text(m);
		if (!texts[i])
			rc = tern_errf(e, TERN_ENOMEM, "out of memory");
		msgs[i] = (struct tern_chat_msg){json_string_value(json_object_get(m, "role")), texts[i]};
	}
	if (!rc)
		rc = tern_chat_fmt_apply_alloc(p->fmt, msgs, n, add_gen, out, out_len, e);
	for (size_t i = 0; texts && i < n; i++)
		free(texts[i]);
	free(texts);
	free(msgs);
	return rc;
}

static int render_jinja(const struct tern_prompt *p, json_t *a, const char *tools, bool add_gen, char **out,
			size_t *out_len, tern_err *e)
{
	json_t *ctx = json_object();
	json_t *t = NULL;
	if (tools) {
		json_error_t je;
		t = json_loads(tools, JSON_DECODE_ANY, &je);
		if (!t)
			return json_decref(ctx),
			       tern_errf(e, TERN_EFORMAT, "tools: line %d, column %d: %s", je.line, je.column, je.text);
		if (!json_is_array(t)) {
			json_decref(t);
			json_decref(ctx);
			return tern_errf(e, TERN_EFORMAT, "tools: not a JSON array of tool definitions");
		}
	}
	/* the order transformers' apply_chat_template passes them in; tools
	 * absent when not given, as llama.cpp leaves them (transformers
	 * passes None, and templates that iterate it then fail) */
	int bad = !ctx || json_object_set(ctx, "messages", a) || (t && json_object_set_new(ctx, "tools", t)) ||
		  json_object_set_new(ctx, "add_generation_prompt", json_boolean(add_gen)) ||
		  json_object_set_new(ctx, "bos_token", json_string(p->bos)) ||
		  json_object_set_new(ctx, "eos_token", json_string(p->eos));
	char *text = bad ? NULL : json_dumps(ctx, JSON_COMPACT | JSON_PRESERVE_ORDER);
	json_decref(ctx);
	if (!text)
		return tern_errf(e, TERN_ENOMEM, "out of memory for the template's context");
	int rc = tern_jinja_render(p->tmpl, text, strlen(text), NULL, out, out_len, e);
	free(text);
	if (rc)
		tern_err_prefixf(e, "chat template (%s)", p->source);
	return rc;
}

int tern_prompt_render(const struct tern_prompt *p, const char *msgs, size_t len, const char *tools,
		       bool add_generation_prompt, char **out, size_t *out_len, tern_err *e)
{
	*out = NULL;
	size_t n = 0;
	json_t *a = load_messages(msgs, len, e);
	if (!a)
		return e ? e->code : TERN_EFORMAT;
	int rc = p->kind == TERN_PROMPT_BUILTIN ? render_builtin(p, a, add_generation_prompt, out, &n, e)
						: render_jinja(p, a, tools, add_generation_prompt, out, &n, e);
	json_decref(a);
	if (rc)
		return rc;
	/* a template that writes {{ bos_token }} and a tokenizer that adds
	 * BOS: one BOS, as llama.cpp keeps */
	size_t nb = strlen(p->bos);
	if (nb && tok_add_bos(p->v) && n >= nb && memcmp(*out, p->bos, nb) == 0) {
		memmove(*out, *out + nb, n - nb + 1);
		n -= nb;
	}
	if (out_len)
		*out_len = n;
	return 0;
}
