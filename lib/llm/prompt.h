/* prompt.h - a conversation turned into the text a chat model reads, by
 * the template the user chose: shared by tern-run and tern-chat.
 *
 * The conversation is JSON text: an array of OpenAI-style messages
 * ({"role": ..., "content": ..., and for tool-using templates
 * "tool_calls", "name", "tool_call_id"}), the format of tern-run
 * --messages and of tern-chat's /save. Tools are a JSON array of tool
 * definitions, handed to templates that use them.
 *
 * The choice (struct tern_prompt_opts), in llama.cpp's terms:
 *   default        the file's tokenizer.chat_template through the Jinja
 *                  engine (lib/jinja), with the context transformers
 *                  gives it: messages, add_generation_prompt, bos_token,
 *                  eos_token (the text of the vocabulary's BOS and EOS
 *                  tokens), tools when given (absent otherwise, as in
 *                  llama.cpp: a template that iterates None fails);
 *   builtin NAME   a built-in formatter (lib/llm/chatfmt.h);
 *   text           a Jinja template given by the caller (a file);
 *   no_jinja       the built-in formatter detected from the file's
 *                  template text (what tern-run did before the engine).
 * "The file's template" is tokenizer.chat_template.NAME when a name is
 * given ("default": tokenizer.chat_template when no template has that
 * name; TERN_ENOTFOUND when the file has none of that name), else with
 * tools tokenizer.chat_template.tool_use when the file has it (as
 * llama.cpp chooses), else tokenizer.chat_template.
 * A file without a template falls back to chatml (as llama.cpp does) and
 * tern_prompt_warning says so; a template the detection does not know
 * with no_jinja is TERN_EUNSUPPORTED.
 *
 * BOS: when the rendered text starts with the BOS token's text and the
 * tokenizer adds BOS itself, that text is removed (llama.cpp does the
 * same), so the caller tokenizes with add_special and parse_special on
 * and gets one BOS. */
#ifndef TERN_LLM_PROMPT_H
#define TERN_LLM_PROMPT_H

#include <stdbool.h>
#include <stddef.h>

#include "lib/core/error.h"
#include "lib/format/modelfile.h"
#include "tokenizer/tok.h"

struct tern_prompt_opts {
	const char *builtin;   /* a built-in format's name (chatfmt.h), or NULL */
	const char *text;      /* a Jinja template's text (text_len bytes), or NULL */
	size_t text_len;
	const char *text_name; /* where text came from, for messages ("FILE") */
	bool no_jinja;         /* the built-in format detected from the file's template */
	const char *name;      /* the file's named template tokenizer.chat_template.NAME, or NULL */
	bool tools;            /* tools will be given: the file's tool_use template when it has one */
};

enum tern_prompt_kind {
	TERN_PROMPT_JINJA,   /* a Jinja template: the file's or the caller's */
	TERN_PROMPT_BUILTIN, /* a built-in formatter */
};

struct tern_prompt;

/* Choose the template for model file mf (borrowed) and vocabulary v
 * (borrowed; both must outlive the prompt) and parse it. Errors:
 * TERN_EINVAL for an unknown built-in name, TERN_EFORMAT "chat template
 * (SOURCE): line L, column C: ..." for a template the engine cannot
 * parse, TERN_EUNSUPPORTED for no_jinja and a template no built-in
 * format matches, TERN_ENOMEM. */
int tern_prompt_new(struct tern_prompt **out, const tern_mf *mf, const tok_vocab *v,
		    const struct tern_prompt_opts *o, tern_err *e);
void tern_prompt_free(struct tern_prompt *p);

enum tern_prompt_kind tern_prompt_kind(const struct tern_prompt *p);
/* The built-in format (chatfmt.h) of a TERN_PROMPT_BUILTIN prompt, else
 * TERN_CHAT_UNKNOWN. */
int tern_prompt_fmt(const struct tern_prompt *p);
/* What was chosen, for -v and JSON: "jinja (the file's template)",
 * "jinja (FILE)", "chatml (built-in, --chat-template)", ... */
const char *tern_prompt_describe(const struct tern_prompt *p);
/* A short name: "jinja" or the built-in format's name. */
const char *tern_prompt_name(const struct tern_prompt *p);
/* A warning the caller should show (the chatml fallback), or NULL. */
const char *tern_prompt_warning(const struct tern_prompt *p);

/* Render messages (the JSON array text msgs[len]) and tools (a JSON
 * array text, or NULL) into *out (malloc'd, NUL-terminated, *out_len
 * bytes; out_len may be NULL). Errors: TERN_EFORMAT for JSON that is not
 * an array of message objects ("message 3: 'role' is not a string"),
 * for tools that are not an array, and for a template that fails while
 * rendering ("chat template: line L, column C: ..."); TERN_EINVAL for a
 * role a built-in format does not know; TERN_ERANGE from the engine's
 * limits; TERN_ENOMEM. */
int tern_prompt_render(const struct tern_prompt *p, const char *msgs, size_t len, const char *tools,
		       bool add_generation_prompt, char **out, size_t *out_len, tern_err *e);

/* Check that msgs[len] is a JSON array of message objects with a string
 * "role" and a string, null or array "content" (what render accepts);
 * TERN_EFORMAT naming the message otherwise. */
int tern_prompt_check_messages(const char *msgs, size_t len, tern_err *e);

#endif
