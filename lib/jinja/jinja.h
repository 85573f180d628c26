/* jinja.h - a Jinja2 engine for chat templates: the part of the language
 * that real `tokenizer.chat_template` texts use, rendered exactly as
 * Hugging Face transformers renders them (jinja2 with trim_blocks and
 * lstrip_blocks on, `tojson` as json.dumps(ensure_ascii=False),
 * raise_exception and strftime_now as transformers defines them).
 *
 * Templates come from downloaded files: they are untrusted. Parsing and
 * rendering are bounded (nesting depth, loop iterations, evaluation steps,
 * output size: struct tern_jinja_limits), touch no file, environment or
 * process, and every failure is one message with the template's line and
 * column ("line 3, column 14: unknown filter 'foo'") - never a crash.
 *
 * The context is handed over as the text of a JSON object (messages,
 * add_generation_prompt, bos_token, eos_token, tools, ...): one neutral
 * format that callers already hold (--messages files, /save) and that maps
 * onto Jinja's values without a second value API. JSON objects keep their
 * key order (Python dicts do), integers stay integers. */
#ifndef TERN_JINJA_H
#define TERN_JINJA_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "lib/core/error.h"

struct tern_jinja; /* a parsed template, immutable, may be rendered many times */

/* Defaults: depth 256, 10M steps, 16 MiB of output. The output limit also
 * bounds every string a template builds, and a render's memory is bounded
 * by 4 x max_output + 64 MiB. range() is refused beyond 100000 items, as
 * jinja2's sandbox does. */
struct tern_jinja_limits {
	uint32_t max_depth;   /* nesting of macro calls and of values; 0: default (parsing: always 256) */
	uint64_t max_steps;   /* evaluation steps (loop iterations included); 0: default */
	size_t max_output;    /* bytes of rendered text; 0: default */
};

struct tern_jinja_opts {
	const struct tern_jinja_limits *limits; /* NULL: defaults (generous for any real template) */
	time_t now;       /* what strftime_now formats (local time); 0: the current time */
};

/* Parse src[len] (UTF-8). Errors: TERN_EFORMAT "line L, column C: ..."
 * for syntax errors, TERN_ERANGE when a limit is exceeded, TERN_ENOMEM. */
int tern_jinja_parse(struct tern_jinja **out, const char *src, size_t len, tern_err *e);
void tern_jinja_free(struct tern_jinja *t);

/* Render t with the JSON object ctx_json[ctx_len] as its variables.
 * *out is malloc'd, NUL-terminated, *out_len bytes (the caller frees it;
 * NULL and 0 on error). Errors: TERN_EINVAL when the context is not a
 * JSON object; TERN_EFORMAT "line L, column C: ..." for errors while
 * rendering (an undefined callable, a type error), and for
 * raise_exception ("line L, column C: raise_exception: MESSAGE");
 * TERN_ERANGE when a limit is exceeded; TERN_ENOMEM. */
int tern_jinja_render(const struct tern_jinja *t, const char *ctx_json, size_t ctx_len,
		      const struct tern_jinja_opts *o, char **out, size_t *out_len, tern_err *e);

#endif
