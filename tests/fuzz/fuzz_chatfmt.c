/* fuzz_chatfmt.c - libFuzzer target for the chat formats (lib/llm/chatfmt.h).
 *
 * The whole input is first a template text for detection. Then byte 0
 * picks the format (out-of-range values included), byte 1 bit 0 the
 * generation prompt and the rest of byte 1 a buffer capacity; the rest is
 * messages separated by 0x01, each opening with a byte that picks its role
 * (a few invalid ones included). Every result must agree between the
 * allocating and the bounded form, a short buffer must hold a NUL-terminated
 * prefix of the full text, and nothing may be written past the capacity. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lib/llm/chatfmt.h"

#define MAX_M 64

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	int d = tern_chat_fmt_detect_n((const char *)data, size);
	if (d < 0 || d >= TERN_CHAT_N_FMT)
		abort();
	if (size < 2)
		return 0;
	static const char *roles[] = {"system", "user", "assistant", "tool", "", "robot", NULL};
	int fmt = (int)data[0] % (TERN_CHAT_N_FMT + 2) - 1;
	bool ag = data[1] & 1;
	size_t cap = data[1] >> 1;

	/* one copy of the rest, cut into NUL-terminated contents in place */
	size_t rest = size - 2;
	char *text = malloc(rest + 1);
	if (!text)
		return 0;
	memcpy(text, data + 2, rest);
	text[rest] = 0;
	struct tern_chat_msg m[MAX_M];
	size_t n = 0, start = 0;
	for (size_t i = 0; i <= rest && n < MAX_M; i++) {
		if (i < rest && text[i] != 1)
			continue;
		text[i] = 0;
		if (i > start) {
			unsigned char r = (unsigned char)text[start];
			m[n].role = roles[r % (sizeof roles / sizeof roles[0])];
			m[n].content = (r & 0x80) ? NULL : text + start + 1;
			n++;
		}
		start = i + 1;
	}

	char *full = NULL;
	size_t len = 0, len2 = 0;
	tern_err e = {0};
	int rc = tern_chat_fmt_apply_alloc(fmt, m, n, ag, &full, &len, &e);
	char *buf = malloc(cap + 16);
	if (!buf) {
		free(full);
		free(text);
		return 0;
	}
	memset(buf, 0x5a, cap + 16);
	int rc2 = tern_chat_fmt_apply(fmt, m, n, ag, buf, cap, &len2, &e);
	if (rc) {
		if (full || rc2 != rc)
			abort();
	} else {
		if (!full || strlen(full) != len || len2 != len)
			abort();
		if (rc2 != (len < cap ? 0 : TERN_ERANGE))
			abort();
		if (cap > 0) {
			size_t kept = len < cap ? len : cap - 1;
			if (memcmp(buf, full, kept) != 0 || buf[kept] != 0)
				abort();
		}
		for (size_t i = cap; i < cap + 16; i++)
			if ((unsigned char)buf[i] != 0x5a)
				abort();
	}
	free(buf);
	free(full);
	free(text);
	return 0;
}
