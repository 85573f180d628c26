/* fuzz_jinja.c - libFuzzer target for the Jinja engine (lib/jinja/jinja.h).
 *
 * The input is a template text, rendered over a fixed chat context
 * (messages with tool calls, tools, bos/eos, add_generation_prompt) under
 * small limits so that each run stays quick. Parse and render must never
 * crash; a success gives a NUL-terminated text within the output limit,
 * a failure gives no text and a "line L, column C: " message (the
 * context is fixed and valid, so every failure is the template's). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/jinja/jinja.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char ctx[] =
	"{\"messages\": [{\"role\": \"system\", \"content\": \"Be brief.\"},"
	" {\"role\": \"user\", \"content\": \"Hi 'there' \\\"x\\\" {{ y }} \\u4e16\\ud83c\\udf0d\"},"
	" {\"role\": \"assistant\", \"content\": \"\", \"tool_calls\": [{\"id\": \"c1\", \"type\": \"function\","
	" \"function\": {\"name\": \"f\", \"arguments\": {\"a\": 1, \"b\": [1.5, true, null]}}}]},"
	" {\"role\": \"tool\", \"content\": \"42\", \"tool_call_id\": \"c1\"},"
	" {\"role\": \"user\", \"content\": [{\"type\": \"text\", \"text\": \"parts\"}]}],"
	" \"tools\": [{\"type\": \"function\", \"function\": {\"name\": \"f\", \"parameters\": {\"type\": \"object\"}}}],"
	" \"add_generation_prompt\": true, \"bos_token\": \"<s>\", \"eos_token\": \"</s>\", \"n\": 3}";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct tern_jinja *t = NULL;
	tern_err e = {0};
	unsigned l, c;
	int rc = tern_jinja_parse(&t, (const char *)data, size, &e);
	if (rc) {
		if (t || sscanf(e.msg, "line %u, column %u: ", &l, &c) != 2)
			abort();
		return 0;
	}
	static const struct tern_jinja_limits lim = {.max_depth = 64, .max_steps = 200000, .max_output = 1 << 20};
	struct tern_jinja_opts o = {.limits = &lim, .now = 1768478400};
	char *out = NULL;
	size_t n = 0;
	rc = tern_jinja_render(t, ctx, sizeof ctx - 1, &o, &out, &n, &e);
	if (rc) {
		if (out || n || (rc != TERN_ENOMEM && sscanf(e.msg, "line %u, column %u: ", &l, &c) != 2))
			abort();
	} else {
		if (!out || out[n] != 0 || n > lim.max_output)
			abort();
	}
	free(out);
	tern_jinja_free(t);
	return 0;
}
