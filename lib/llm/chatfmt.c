/* chatfmt.c - llama.cpp's built-in chat formats (see chatfmt.h): the name
 * table, detection from a template's text and the formatters.
 *
 * The formatters write through a bounded writer that counts the whole
 * length even when the caller's buffer is too small, so one pass both
 * sizes and fills, and nothing is allocated: the few formats that carry
 * text forward (gemma and orion hold system messages for the next user
 * turn) remember message indices instead of copying. */
#include "lib/llm/chatfmt.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const fmt_names[TERN_CHAT_N_FMT] = {
	[TERN_CHAT_CHATML] = "chatml",
	[TERN_CHAT_LLAMA2] = "llama2",
	[TERN_CHAT_LLAMA2_SYS] = "llama2-sys",
	[TERN_CHAT_LLAMA2_SYS_BOS] = "llama2-sys-bos",
	[TERN_CHAT_LLAMA2_SYS_STRIP] = "llama2-sys-strip",
	[TERN_CHAT_MISTRAL_V1] = "mistral-v1",
	[TERN_CHAT_MISTRAL_V3] = "mistral-v3",
	[TERN_CHAT_MISTRAL_V3_TEKKEN] = "mistral-v3-tekken",
	[TERN_CHAT_MISTRAL_V7] = "mistral-v7",
	[TERN_CHAT_MISTRAL_V7_TEKKEN] = "mistral-v7-tekken",
	[TERN_CHAT_PHI3] = "phi3",
	[TERN_CHAT_PHI4] = "phi4",
	[TERN_CHAT_FALCON3] = "falcon3",
	[TERN_CHAT_ZEPHYR] = "zephyr",
	[TERN_CHAT_MONARCH] = "monarch",
	[TERN_CHAT_GEMMA] = "gemma",
	[TERN_CHAT_ORION] = "orion",
	[TERN_CHAT_OPENCHAT] = "openchat",
	[TERN_CHAT_VICUNA] = "vicuna",
	[TERN_CHAT_VICUNA_ORCA] = "vicuna-orca",
	[TERN_CHAT_DEEPSEEK] = "deepseek",
	[TERN_CHAT_DEEPSEEK2] = "deepseek2",
	[TERN_CHAT_DEEPSEEK3] = "deepseek3",
	[TERN_CHAT_DEEPSEEK_OCR] = "deepseek-ocr",
	[TERN_CHAT_COMMAND_R] = "command-r",
	[TERN_CHAT_LLAMA3] = "llama3",
	[TERN_CHAT_CHATGLM3] = "chatglm3",
	[TERN_CHAT_CHATGLM4] = "chatglm4",
	[TERN_CHAT_GLMEDGE] = "glmedge",
	[TERN_CHAT_MINICPM] = "minicpm",
	[TERN_CHAT_EXAONE3] = "exaone3",
	[TERN_CHAT_EXAONE4] = "exaone4",
	[TERN_CHAT_EXAONE_MOE] = "exaone-moe",
	[TERN_CHAT_RWKV_WORLD] = "rwkv-world",
	[TERN_CHAT_GRANITE] = "granite",
	[TERN_CHAT_GRANITE_4_0] = "granite-4.0",
	[TERN_CHAT_GRANITE_4_1] = "granite-4.1",
	[TERN_CHAT_GIGACHAT] = "gigachat",
	[TERN_CHAT_MEGREZ] = "megrez",
	[TERN_CHAT_YANDEX] = "yandex",
	[TERN_CHAT_BAILING] = "bailing",
	[TERN_CHAT_BAILING_THINK] = "bailing-think",
	[TERN_CHAT_BAILING2] = "bailing2",
	[TERN_CHAT_LLAMA4] = "llama4",
	[TERN_CHAT_SMOLVLM] = "smolvlm",
	[TERN_CHAT_DOTS1] = "dots1",
	[TERN_CHAT_HUNYUAN_MOE] = "hunyuan-moe",
	[TERN_CHAT_GPT_OSS] = "gpt-oss",
	[TERN_CHAT_HUNYUAN_DENSE] = "hunyuan-dense",
	[TERN_CHAT_HUNYUAN_VL] = "hunyuan-vl",
	[TERN_CHAT_KIMI_K2] = "kimi-k2",
	[TERN_CHAT_SEED_OSS] = "seed_oss",
	[TERN_CHAT_GROK2] = "grok-2",
	[TERN_CHAT_PANGU_EMBED] = "pangu-embedded",
	[TERN_CHAT_SOLAR_OPEN] = "solar-open",
};

static int by_name_n(const char *s, size_t len)
{
	for (int f = 1; f < TERN_CHAT_N_FMT; f++) {
		size_t n = strlen(fmt_names[f]);
		if (n == len && memcmp(fmt_names[f], s, n) == 0)
			return f;
	}
	return -1;
}

int tern_chat_fmt_by_name(const char *name)
{
	return name ? by_name_n(name, strlen(name)) : -1;
}

const char *tern_chat_fmt_turn_end(int fmt)
{
	switch (fmt) {
	case TERN_CHAT_CHATML:
	case TERN_CHAT_PHI4:
		return "<|im_end|>";
	case TERN_CHAT_PHI3:
		return "<|end|>";
	case TERN_CHAT_LLAMA3:
		return "<|eot_id|>";
	case TERN_CHAT_LLAMA4:
		return "<|eot|>";
	case TERN_CHAT_GEMMA:
		return "<end_of_turn>";
	case TERN_CHAT_COMMAND_R:
		return "<|END_OF_TURN_TOKEN|>";
	default:
		return NULL;
	}
}

const char *tern_chat_fmt_name(int fmt)
{
	return fmt > TERN_CHAT_UNKNOWN && fmt < TERN_CHAT_N_FMT ? fmt_names[fmt] : NULL;
}

const char *tern_chat_fmt_names(void)
{
	/* Written out rather than built from the table, so that it is a
	 * constant (no lazily filled buffer shared between threads); a test
	 * checks that it lists exactly the table's names. */
	return "chatml, llama2, llama2-sys, llama2-sys-bos, llama2-sys-strip, "
	       "mistral-v1, mistral-v3, mistral-v3-tekken, mistral-v7, "
	       "mistral-v7-tekken, phi3, phi4, falcon3, zephyr, monarch, gemma, "
	       "orion, openchat, vicuna, vicuna-orca, deepseek, deepseek2, "
	       "deepseek3, deepseek-ocr, command-r, llama3, chatglm3, chatglm4, "
	       "glmedge, minicpm, exaone3, exaone4, exaone-moe, rwkv-world, "
	       "granite, granite-4.0, granite-4.1, gigachat, megrez, yandex, "
	       "bailing, bailing-think, bailing2, llama4, smolvlm, dots1, "
	       "hunyuan-moe, gpt-oss, hunyuan-dense, hunyuan-vl, kimi-k2, "
	       "seed_oss, grok-2, pangu-embedded, solar-open";
}

/* ---- detection ----------------------------------------------------------- */

struct hay {
	const char *p;
	size_t n;
};

static bool has(struct hay h, const char *needle)
{
	size_t m = strlen(needle);
	if (m == 0)
		return true;
	if (m > h.n)
		return false;
	const char *end = h.p + (h.n - m);
	for (const char *q = h.p; q <= end; q++) {
		q = memchr(q, needle[0], (size_t)(end - q) + 1);
		if (!q)
			return false;
		if (memcmp(q, needle, m) == 0)
			return true;
	}
	return false;
}

static bool starts(struct hay h, const char *prefix)
{
	size_t m = strlen(prefix);
	return h.n >= m && memcmp(h.p, prefix, m) == 0;
}

/* The [INST] family: mistral's official templates or llama2's variants. */
static int detect_inst(struct hay t)
{
	if (has(t, "[SYSTEM_PROMPT]"))
		return TERN_CHAT_MISTRAL_V7;
	/* "' [INST] ' + system_message" is the official v1 template;
	 * [AVAILABLE_TOOLS] appears in the official v3 and v3-tekken ones. */
	if (has(t, "' [INST] ' + system_message") || has(t, "[AVAILABLE_TOOLS]")) {
		if (has(t, " [INST]"))
			return TERN_CHAT_MISTRAL_V1;
		if (has(t, "\"[INST]\""))
			return TERN_CHAT_MISTRAL_V3_TEKKEN;
		return TERN_CHAT_MISTRAL_V3;
	}
	if (has(t, "content.strip()"))
		return TERN_CHAT_LLAMA2_SYS_STRIP;
	if (has(t, "bos_token + '[INST]"))
		return TERN_CHAT_LLAMA2_SYS_BOS;
	if (has(t, "<<SYS>>"))
		return TERN_CHAT_LLAMA2_SYS;
	return TERN_CHAT_LLAMA2;
}

int tern_chat_fmt_detect_n(const char *tmpl, size_t len)
{
	if (!tmpl)
		return TERN_CHAT_UNKNOWN;
	/* A format's name stands for itself, as llama.cpp's --chat-template
	 * NAME does; except dots1, which llama.cpp leaves out of its name
	 * table (tern names it, for tern_chat_fmt_by_name, but keeps
	 * llama.cpp's detection). */
	int byname = by_name_n(tmpl, len);
	if (byname > 0 && byname != TERN_CHAT_DOTS1)
		return byname;
	struct hay t = {tmpl, len};
	/* Order matters: templates often hold several families' markers, and
	 * the first test that matches wins, as in llama.cpp. */
	if (has(t, "<|im_start|>")) {
		if (has(t, "<|im_sep|>"))
			return TERN_CHAT_PHI4;
		/* SmolVLM opens with <|im_start|> but is not chatml. */
		if (has(t, "<end_of_utterance>"))
			return TERN_CHAT_SMOLVLM;
		return TERN_CHAT_CHATML;
	}
	if (starts(t, "mistral") || has(t, "[INST]"))
		return detect_inst(t);
	if (has(t, "<|assistant|>") && has(t, "<|end|>"))
		return TERN_CHAT_PHI3;
	if (has(t, "[gMASK]<sop>"))
		return TERN_CHAT_CHATGLM4;
	if (has(t, "<|assistant|>") && has(t, "<|user|>")) {
		if (has(t, "<|tool_declare|>"))
			return TERN_CHAT_EXAONE_MOE;
		return has(t, "</s>") ? TERN_CHAT_FALCON3 : TERN_CHAT_GLMEDGE;
	}
	if (has(t, "<|{{ item['role'] }}|>") && has(t, "<|begin_of_image|>"))
		return TERN_CHAT_GLMEDGE;
	if (has(t, "<|user|>") && has(t, "<|endoftext|>"))
		return TERN_CHAT_ZEPHYR;
	if (has(t, "bos_token + message['role']"))
		return TERN_CHAT_MONARCH;
	if (has(t, "<start_of_turn>"))
		return TERN_CHAT_GEMMA;
	if (has(t, "'\\n\\nAssistant: ' + eos_token"))
		return TERN_CHAT_ORION;
	if (has(t, "GPT4 Correct "))
		return TERN_CHAT_OPENCHAT;
	if (has(t, "USER: ") && has(t, "ASSISTANT: "))
		return has(t, "SYSTEM: ") ? TERN_CHAT_VICUNA_ORCA : TERN_CHAT_VICUNA;
	if (has(t, "### Instruction:") && has(t, "<|EOT|>"))
		return TERN_CHAT_DEEPSEEK;
	if (has(t, "<|START_OF_TURN_TOKEN|>") && has(t, "<|USER_TOKEN|>"))
		return TERN_CHAT_COMMAND_R;
	if (has(t, "<|start_header_id|>") && has(t, "<|end_header_id|>"))
		return TERN_CHAT_LLAMA3;
	if (has(t, "[gMASK]sop"))
		return TERN_CHAT_CHATGLM3;
	if (has(t, "<用户>"))
		return TERN_CHAT_MINICPM;
	if (has(t, "'Assistant: ' + message['content'] + eos_token"))
		return TERN_CHAT_DEEPSEEK2;
	if (has(t, "<｜Assistant｜>") && has(t, "<｜User｜>") && has(t, "<｜end▁of▁sentence｜>"))
		return TERN_CHAT_DEEPSEEK3;
	if (has(t, "[|system|]") && has(t, "[|assistant|]") && has(t, "[|endofturn|]"))
		return has(t, "[|tool|]") ? TERN_CHAT_EXAONE4 : TERN_CHAT_EXAONE3;
	if (has(t, "rwkv-world") || has(t, "{{- 'User: ' + message['content']|trim + '\\n\\n' -}}"))
		return TERN_CHAT_RWKV_WORLD;
	if (has(t, "<|start_of_role|>")) {
		if (has(t, "<tool_call>") || has(t, "<tools>"))
			return has(t, "g4_default_system_message") ? TERN_CHAT_GRANITE_4_0
								   : TERN_CHAT_GRANITE_4_1;
		return TERN_CHAT_GRANITE;
	}
	if (has(t, "message['role'] + additional_special_tokens[0] + message['content'] + additional_special_tokens[1]"))
		return TERN_CHAT_GIGACHAT;
	if (has(t, "<|role_start|>"))
		return TERN_CHAT_MEGREZ;
	if (has(t, " Ассистент:"))
		return TERN_CHAT_YANDEX;
	if (has(t, "<role>ASSISTANT</role>") && has(t, "'HUMAN'"))
		return TERN_CHAT_BAILING;
	if (has(t, "<role>ASSISTANT</role>") && has(t, "\"HUMAN\"") && has(t, "<think>"))
		return TERN_CHAT_BAILING_THINK;
	if (has(t, "<role>ASSISTANT</role>") && has(t, "<role>HUMAN</role>") && has(t, "<|role_end|>"))
		return TERN_CHAT_BAILING2;
	if (has(t, "<|header_start|>") && has(t, "<|header_end|>"))
		return TERN_CHAT_LLAMA4;
	if (has(t, "<|endofuserprompt|>"))
		return TERN_CHAT_DOTS1;
	if (has(t, "<|extra_0|>") && has(t, "<|extra_4|>"))
		return TERN_CHAT_HUNYUAN_MOE;
	if (has(t, "<|start|>") && has(t, "<|channel|>"))
		return TERN_CHAT_GPT_OSS;
	if (has(t, "<｜hy_Assistant｜>") && has(t, "<｜hy_begin▁of▁sentence｜>"))
		return TERN_CHAT_HUNYUAN_VL;
	if (has(t, "<｜hy_Assistant｜>") && has(t, "<｜hy_place▁holder▁no▁3｜>"))
		return TERN_CHAT_HUNYUAN_DENSE;
	if (has(t, "<|im_assistant|>assistant<|im_middle|>"))
		return TERN_CHAT_KIMI_K2;
	if (has(t, "<seed:bos>"))
		return TERN_CHAT_SEED_OSS;
	if (has(t, "'Assistant: '  + message['content'] + '<|separator|>"))
		return TERN_CHAT_GROK2;
	if (has(t, "[unused9]系统：[unused10]"))
		return TERN_CHAT_PANGU_EMBED;
	if (has(t, "<|begin|>") && has(t, "<|end|>") && has(t, "<|content|>"))
		return TERN_CHAT_SOLAR_OPEN;
	return TERN_CHAT_UNKNOWN;
}

int tern_chat_fmt_detect(const char *tmpl)
{
	return tmpl ? tern_chat_fmt_detect_n(tmpl, strlen(tmpl)) : TERN_CHAT_UNKNOWN;
}

/* ---- the bounded writer -------------------------------------------------- */

struct wr {
	char *buf;
	size_t cap;
	size_t len;    /* bytes the whole text needs, whether or not they fit */
	bool overflow; /* len would pass SIZE_MAX */
};

static void put_n(struct wr *w, const char *s, size_t n)
{
	if (w->overflow)
		return;
	if (n > SIZE_MAX - 1 - w->len) {
		w->overflow = true;
		return;
	}
	/* Copy what fits below cap - 1, keeping a byte for the NUL. */
	if (w->cap > 0 && w->len < w->cap - 1) {
		size_t room = w->cap - 1 - w->len;
		memcpy(w->buf + w->len, s, n < room ? n : room);
	}
	w->len += n;
}

static void put(struct wr *w, const char *s)
{
	put_n(w, s, strlen(s));
}

/* isspace() in the C locale, which is what llama.cpp's trim uses. */
static bool is_space(unsigned char c)
{
	return c == ' ' || (c >= '\t' && c <= '\r');
}

static void put_trim(struct wr *w, const char *s)
{
	size_t a = 0, b = strlen(s);
	while (a < b && is_space((unsigned char)s[a]))
		a++;
	while (b > a && is_space((unsigned char)s[b - 1]))
		b--;
	put_n(w, s + a, b - a);
}

static bool trim_empty(const char *s)
{
	for (; *s; s++)
		if (!is_space((unsigned char)*s))
			return false;
	return true;
}

/* Role in upper case (bailing), "user" as "HUMAN". Roles are validated to
 * be short known words before any formatter runs. */
static void put_upper_role(struct wr *w, const char *role)
{
	if (strcmp(role, "user") == 0) {
		put(w, "HUMAN");
		return;
	}
	char up[16];
	size_t n = strlen(role);
	if (n >= sizeof up)
		n = sizeof up - 1;
	for (size_t i = 0; i < n; i++)
		up[i] = (role[i] >= 'a' && role[i] <= 'z') ? (char)(role[i] - 'a' + 'A') : role[i];
	put_n(w, up, n);
}

/* ---- the formatters ------------------------------------------------------ */

#define IS(r, s) (strcmp((r), (s)) == 0)

static void fmt_mistral_v7(struct wr *w, const struct tern_chat_msg *m, size_t n, bool tekken)
{
	const char *sp = tekken ? "" : " ";
	for (size_t i = 0; i < n; i++) {
		if (IS(m[i].role, "system")) {
			put(w, "[SYSTEM_PROMPT]");
			put(w, sp);
			put(w, m[i].content);
			put(w, "[/SYSTEM_PROMPT]");
		} else if (IS(m[i].role, "user")) {
			put(w, "[INST]");
			put(w, sp);
			put(w, m[i].content);
			put(w, "[/INST]");
		} else {
			put(w, sp);
			put(w, m[i].content);
			put(w, "</s>");
		}
	}
}

static void fmt_mistral(struct wr *w, int fmt, const struct tern_chat_msg *m, size_t n)
{
	const char *lead = fmt == TERN_CHAT_MISTRAL_V1 ? " " : "";
	const char *trail = fmt == TERN_CHAT_MISTRAL_V3_TEKKEN ? "" : " ";
	bool trim_answer = fmt == TERN_CHAT_MISTRAL_V3;
	bool in_turn = false;
	for (size_t i = 0; i < n; i++) {
		if (!in_turn) {
			put(w, lead);
			put(w, "[INST]");
			put(w, trail);
			in_turn = true;
		}
		if (IS(m[i].role, "system")) {
			put(w, m[i].content);
			put(w, "\n\n");
		} else if (IS(m[i].role, "user")) {
			put(w, m[i].content);
			put(w, lead);
			put(w, "[/INST]");
		} else {
			put(w, trail);
			if (trim_answer)
				put_trim(w, m[i].content);
			else
				put(w, m[i].content);
			put(w, "</s>");
			in_turn = false;
		}
	}
}

static void fmt_llama2(struct wr *w, int fmt, const struct tern_chat_msg *m, size_t n)
{
	bool sys = fmt != TERN_CHAT_LLAMA2;
	bool bos_inside = fmt == TERN_CHAT_LLAMA2_SYS_BOS;
	bool strip = fmt == TERN_CHAT_LLAMA2_SYS_STRIP;
	bool in_turn = true; /* the opening [INST] follows the tokenizer's BOS */
	put(w, "[INST] ");
	for (size_t i = 0; i < n; i++) {
		if (!in_turn) {
			in_turn = true;
			put(w, bos_inside ? "<s>[INST] " : "[INST] ");
		}
		const char *c = m[i].content;
		if (IS(m[i].role, "system")) {
			if (sys)
				put(w, "<<SYS>>\n");
			if (strip)
				put_trim(w, c);
			else
				put(w, c);
			/* Without <<SYS>> support the text still opens the first
			 * user message, on a line of its own. */
			put(w, sys ? "\n<</SYS>>\n\n" : "\n");
		} else if (IS(m[i].role, "user")) {
			if (strip)
				put_trim(w, c);
			else
				put(w, c);
			put(w, " [/INST]");
		} else {
			if (strip)
				put_trim(w, c);
			else
				put(w, c);
			put(w, "</s>");
			in_turn = false;
		}
	}
}

/* Gemma has no system role: system messages (trimmed, concatenated) open
 * the next user turn. They are remembered as the range [pend, i) of
 * messages rather than copied. */
static void fmt_gemma(struct wr *w, const struct tern_chat_msg *m, size_t n)
{
	size_t pend = 0;
	bool have_sys = false; /* some system message in [pend, i) is non-empty after trim */
	for (size_t i = 0; i < n; i++) {
		if (IS(m[i].role, "system")) {
			if (!trim_empty(m[i].content))
				have_sys = true;
			continue;
		}
		bool model = IS(m[i].role, "assistant");
		put(w, "<start_of_turn>");
		put(w, model ? "model" : m[i].role);
		put(w, "\n");
		if (have_sys && !model) {
			for (size_t j = pend; j < i; j++)
				if (IS(m[j].role, "system"))
					put_trim(w, m[j].content);
			put(w, "\n\n");
			have_sys = false;
			pend = i + 1;
		} else if (!have_sys) {
			pend = i + 1;
		}
		put_trim(w, m[i].content);
		put(w, "<end_of_turn>\n");
	}
}

/* Orion merges system text (untrimmed) into the next user turn. */
static void fmt_orion(struct wr *w, const struct tern_chat_msg *m, size_t n)
{
	size_t pend = 0;
	bool have_sys = false;
	for (size_t i = 0; i < n; i++) {
		if (IS(m[i].role, "system")) {
			if (m[i].content[0])
				have_sys = true;
			continue;
		}
		if (IS(m[i].role, "user")) {
			put(w, "Human: ");
			if (have_sys) {
				for (size_t j = pend; j < i; j++)
					if (IS(m[j].role, "system"))
						put(w, m[j].content);
				put(w, "\n\n");
				have_sys = false;
				pend = i + 1;
			} else {
				pend = i + 1;
			}
			put(w, m[i].content);
			put(w, "\n\nAssistant: </s>");
		} else {
			put(w, m[i].content);
			put(w, "</s>");
		}
	}
}

/* One wrapper around each message: PRE + content (trimmed or not) + POST,
 * chosen by role; a NULL pre skips the message. */
struct wrap {
	const char *role, *pre, *post;
};

static void fmt_wrapped(struct wr *w, const struct tern_chat_msg *m, size_t n,
			const struct wrap *t, size_t nt, bool trim)
{
	for (size_t i = 0; i < n; i++) {
		for (size_t k = 0; k < nt; k++) {
			if (!IS(m[i].role, t[k].role))
				continue;
			put(w, t[k].pre);
			if (trim)
				put_trim(w, m[i].content);
			else
				put(w, m[i].content);
			put(w, t[k].post);
			break;
		}
	}
}

/* PRE + role + MID + content + POST for every message. */
static void fmt_role_line(struct wr *w, const struct tern_chat_msg *m, size_t n,
			  const char *pre, const char *mid, const char *post, bool trim)
{
	for (size_t i = 0; i < n; i++) {
		put(w, pre);
		put(w, m[i].role);
		put(w, mid);
		if (trim)
			put_trim(w, m[i].content);
		else
			put(w, m[i].content);
		put(w, post);
	}
}

#define N_OF(a) (sizeof(a) / sizeof((a)[0]))

static void format(struct wr *w, int fmt, const struct tern_chat_msg *m, size_t n, bool ass)
{
	switch (fmt) {
	case TERN_CHAT_CHATML:
		fmt_role_line(w, m, n, "<|im_start|>", "\n", "<|im_end|>\n", false);
		if (ass)
			put(w, "<|im_start|>assistant\n");
		break;
	case TERN_CHAT_MISTRAL_V7:
	case TERN_CHAT_MISTRAL_V7_TEKKEN:
		fmt_mistral_v7(w, m, n, fmt == TERN_CHAT_MISTRAL_V7_TEKKEN);
		break;
	case TERN_CHAT_MISTRAL_V1:
	case TERN_CHAT_MISTRAL_V3:
	case TERN_CHAT_MISTRAL_V3_TEKKEN:
		fmt_mistral(w, fmt, m, n);
		break;
	case TERN_CHAT_LLAMA2:
	case TERN_CHAT_LLAMA2_SYS:
	case TERN_CHAT_LLAMA2_SYS_BOS:
	case TERN_CHAT_LLAMA2_SYS_STRIP:
		fmt_llama2(w, fmt, m, n);
		break;
	case TERN_CHAT_PHI3:
		fmt_role_line(w, m, n, "<|", "|>\n", "<|end|>\n", false);
		if (ass)
			put(w, "<|assistant|>\n");
		break;
	case TERN_CHAT_PHI4:
		fmt_role_line(w, m, n, "<|im_start|>", "<|im_sep|>", "<|im_end|>", false);
		if (ass)
			put(w, "<|im_start|>assistant<|im_sep|>");
		break;
	case TERN_CHAT_FALCON3:
		fmt_role_line(w, m, n, "<|", "|>\n", "\n", false);
		if (ass)
			put(w, "<|assistant|>\n");
		break;
	case TERN_CHAT_ZEPHYR:
		fmt_role_line(w, m, n, "<|", "|>\n", "<|endoftext|>\n", false);
		if (ass)
			put(w, "<|assistant|>\n");
		break;
	case TERN_CHAT_MONARCH:
		/* Every message but the first opens with "<s>" (the first
		 * gets the tokenizer's BOS). */
		for (size_t i = 0; i < n; i++) {
			if (i > 0)
				put(w, "<s>");
			put(w, m[i].role);
			put(w, "\n");
			put(w, m[i].content);
			put(w, "</s>\n");
		}
		if (ass)
			put(w, "<s>assistant\n");
		break;
	case TERN_CHAT_GEMMA:
		fmt_gemma(w, m, n);
		if (ass)
			put(w, "<start_of_turn>model\n");
		break;
	case TERN_CHAT_ORION:
		fmt_orion(w, m, n);
		break;
	case TERN_CHAT_OPENCHAT:
		for (size_t i = 0; i < n; i++) {
			if (IS(m[i].role, "system")) {
				put(w, m[i].content);
			} else {
				char c0 = m[i].role[0];
				char up = (c0 >= 'a' && c0 <= 'z') ? (char)(c0 - 'a' + 'A') : c0;
				put(w, "GPT4 Correct ");
				put_n(w, &up, 1);
				put(w, m[i].role + 1);
				put(w, ": ");
				put(w, m[i].content);
			}
			put(w, "<|end_of_turn|>");
		}
		if (ass)
			put(w, "GPT4 Correct Assistant:");
		break;
	case TERN_CHAT_VICUNA:
	case TERN_CHAT_VICUNA_ORCA: {
		bool orca = fmt == TERN_CHAT_VICUNA_ORCA;
		const struct wrap t[] = {
			{"system", orca ? "SYSTEM: " : "", orca ? "\n" : "\n\n"},
			{"user", "USER: ", "\n"},
			{"assistant", "ASSISTANT: ", "</s>\n"},
		};
		fmt_wrapped(w, m, n, t, N_OF(t), false);
		if (ass)
			put(w, "ASSISTANT:");
		break;
	}
	case TERN_CHAT_DEEPSEEK: {
		const struct wrap t[] = {
			{"system", "", ""},
			{"user", "### Instruction:\n", "\n"},
			{"assistant", "### Response:\n", "\n<|EOT|>\n"},
		};
		fmt_wrapped(w, m, n, t, N_OF(t), false);
		if (ass)
			put(w, "### Response:\n");
		break;
	}
	case TERN_CHAT_COMMAND_R: {
		const struct wrap t[] = {
			{"system", "<|START_OF_TURN_TOKEN|><|SYSTEM_TOKEN|>", "<|END_OF_TURN_TOKEN|>"},
			{"user", "<|START_OF_TURN_TOKEN|><|USER_TOKEN|>", "<|END_OF_TURN_TOKEN|>"},
			{"assistant", "<|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|>", "<|END_OF_TURN_TOKEN|>"},
		};
		fmt_wrapped(w, m, n, t, N_OF(t), true);
		if (ass)
			put(w, "<|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|>");
		break;
	}
	case TERN_CHAT_LLAMA3:
		fmt_role_line(w, m, n, "<|start_header_id|>", "<|end_header_id|>\n\n", "<|eot_id|>", true);
		if (ass)
			put(w, "<|start_header_id|>assistant<|end_header_id|>\n\n");
		break;
	case TERN_CHAT_CHATGLM3:
		put(w, "[gMASK]sop");
		fmt_role_line(w, m, n, "<|", "|>\n ", "", false);
		if (ass)
			put(w, "<|assistant|>");
		break;
	case TERN_CHAT_CHATGLM4:
		put(w, "[gMASK]<sop>");
		fmt_role_line(w, m, n, "<|", "|>\n", "", false);
		if (ass)
			put(w, "<|assistant|>\n");
		break;
	case TERN_CHAT_GLMEDGE:
		fmt_role_line(w, m, n, "<|", "|>\n", "", false);
		if (ass)
			put(w, "<|assistant|>");
		break;
	case TERN_CHAT_MINICPM:
		for (size_t i = 0; i < n; i++) {
			if (IS(m[i].role, "user")) {
				put(w, "<用户>");
				put_trim(w, m[i].content);
				put(w, "<AI>");
			} else {
				put_trim(w, m[i].content);
			}
		}
		break;
	case TERN_CHAT_DEEPSEEK2: {
		const struct wrap t[] = {
			{"system", "", "\n\n"},
			{"user", "User: ", "\n\n"},
			{"assistant", "Assistant: ", "<｜end▁of▁sentence｜>"},
		};
		fmt_wrapped(w, m, n, t, N_OF(t), false);
		if (ass)
			put(w, "Assistant:");
		break;
	}
	case TERN_CHAT_DEEPSEEK3: {
		const struct wrap t[] = {
			{"system", "", "\n\n"},
			{"user", "<｜User｜>", ""},
			{"assistant", "<｜Assistant｜>", "<｜end▁of▁sentence｜>"},
		};
		fmt_wrapped(w, m, n, t, N_OF(t), false);
		if (ass)
			put(w, "<｜Assistant｜>");
		break;
	}
	case TERN_CHAT_DEEPSEEK_OCR:
		for (size_t i = 0; i < n; i++)
			put(w, m[i].content);
		break;
	case TERN_CHAT_EXAONE3:
	case TERN_CHAT_EXAONE4: {
		const struct wrap t[] = {
			{"system", "[|system|]", "[|endofturn|]\n"},
			{"user", "[|user|]", "\n"},
			{"assistant", "[|assistant|]", "[|endofturn|]\n"},
			{"tool", "[|tool|]", "[|endofturn|]\n"},
		};
		/* exaone3 knows no tool role: its messages are skipped. */
		fmt_wrapped(w, m, n, t, fmt == TERN_CHAT_EXAONE4 ? 4 : 3, true);
		if (ass)
			put(w, "[|assistant|]");
		break;
	}
	case TERN_CHAT_EXAONE_MOE: {
		const struct wrap t[] = {
			{"system", "<|system|>\n", "<|endofturn|>\n"},
			{"user", "<|user|>\n", "<|endofturn|>\n"},
			{"assistant", "<|assistant|>\n", "<|endofturn|>\n"},
			{"tool", "<|tool|>\n", "<|endofturn|>\n"},
		};
		fmt_wrapped(w, m, n, t, N_OF(t), true);
		if (ass)
			put(w, "<|assistant|>\n");
		break;
	}
	case TERN_CHAT_RWKV_WORLD:
		for (size_t i = 0; i < n; i++) {
			if (IS(m[i].role, "system")) {
				put(w, "System: ");
				put_trim(w, m[i].content);
				put(w, "\n\n");
			} else if (IS(m[i].role, "user")) {
				put(w, "User: ");
				put_trim(w, m[i].content);
				put(w, "\n\n");
				if (i == n - 1)
					put(w, "Assistant:");
			} else if (IS(m[i].role, "assistant")) {
				put(w, "Assistant: ");
				put_trim(w, m[i].content);
				put(w, "\n\n");
			}
		}
		break;
	case TERN_CHAT_GRANITE:
	case TERN_CHAT_GRANITE_4_0:
	case TERN_CHAT_GRANITE_4_1:
		/* Their only difference in llama.cpp is the role
		 * "assistant_tool_call", which tern does not accept. */
		fmt_role_line(w, m, n, "<|start_of_role|>", "<|end_of_role|>", "<|end_of_text|>\n", false);
		if (ass)
			put(w, "<|start_of_role|>assistant<|end_of_role|>");
		break;
	case TERN_CHAT_GIGACHAT: {
		size_t i = 0;
		put(w, "<s>");
		if (n > 0 && IS(m[0].role, "system")) {
			put(w, m[0].content);
			put(w, "<|message_sep|>");
			i = 1;
		}
		for (; i < n; i++) {
			if (IS(m[i].role, "user")) {
				put(w, "user<|role_sep|>");
				put(w, m[i].content);
				put(w, "<|message_sep|>available functions<|role_sep|>[]<|message_sep|>");
			} else if (IS(m[i].role, "assistant")) {
				put(w, "assistant<|role_sep|>");
				put(w, m[i].content);
				put(w, "<|message_sep|>");
			}
		}
		if (ass)
			put(w, "assistant<|role_sep|>");
		break;
	}
	case TERN_CHAT_MEGREZ:
		fmt_role_line(w, m, n, "<|role_start|>", "<|role_end|>", "<|turn_end|>", false);
		if (ass)
			put(w, "<|role_start|>assistant<|role_end|>");
		break;
	case TERN_CHAT_YANDEX: {
		const struct wrap t[] = {
			{"user", " Пользователь: ", "\n\n"},
			{"assistant", " Ассистент: ", "\n\n"},
		};
		fmt_wrapped(w, m, n, t, N_OF(t), false);
		if (ass)
			put(w, " Ассистент:[SEP]");
		break;
	}
	case TERN_CHAT_BAILING:
	case TERN_CHAT_BAILING_THINK:
	case TERN_CHAT_BAILING2: {
		bool two = fmt == TERN_CHAT_BAILING2;
		if (two && !(n > 0 && IS(m[0].role, "system")))
			put(w, "<role>SYSTEM</role>detailed thinking off<|role_end|>");
		for (size_t i = 0; i < n; i++) {
			put(w, "<role>");
			put_upper_role(w, m[i].role);
			put(w, "</role>");
			put(w, m[i].content);
			if (two)
				put(w, "<|role_end|>");
		}
		if (ass) {
			put(w, "<role>ASSISTANT</role>");
			if (fmt == TERN_CHAT_BAILING_THINK)
				put(w, "<think>");
		}
		break;
	}
	case TERN_CHAT_LLAMA4:
		fmt_role_line(w, m, n, "<|header_start|>", "<|header_end|>\n\n", "<|eot|>", true);
		if (ass)
			put(w, "<|header_start|>assistant<|header_end|>\n\n");
		break;
	case TERN_CHAT_SMOLVLM:
		put(w, "<|im_start|>");
		for (size_t i = 0; i < n; i++) {
			if (IS(m[i].role, "system")) {
				put(w, m[i].content);
				put(w, "\n\n");
			} else {
				put(w, IS(m[i].role, "user") ? "User: " : "Assistant: ");
				put(w, m[i].content);
				put(w, "<end_of_utterance>\n");
			}
		}
		if (ass)
			put(w, "Assistant:");
		break;
	case TERN_CHAT_DOTS1:
		for (size_t i = 0; i < n; i++) {
			if (IS(m[i].role, "system")) {
				put(w, "<|system|>");
				put(w, m[i].content);
				put(w, "<|endofsystem|>");
			} else if (IS(m[i].role, "user")) {
				put(w, "<|userprompt|>");
				put(w, m[i].content);
				put(w, "<|endofuserprompt|>");
			} else {
				put(w, "<|response|>");
				put(w, m[i].content);
				put(w, "<|endofresponse|>");
			}
		}
		if (ass)
			put(w, "<|response|>");
		break;
	case TERN_CHAT_HUNYUAN_MOE:
		for (size_t i = 0; i < n; i++) {
			if (IS(m[i].role, "system")) {
				put(w, "<|startoftext|>");
				put(w, m[i].content);
				put(w, "<|extra_4|>");
			} else if (IS(m[i].role, "assistant")) {
				put(w, m[i].content);
				put(w, "<|eos|>");
			} else {
				put(w, "<|startoftext|>");
				put(w, m[i].content);
				put(w, "<|extra_0|>");
			}
		}
		break;
	case TERN_CHAT_GPT_OSS:
		for (size_t i = 0; i < n; i++) {
			put(w, "<|start|>");
			put(w, m[i].role);
			put(w, "<|message|>");
			put(w, m[i].content);
			put(w, IS(m[i].role, "assistant") ? "<|return|>" : "<|end|>");
		}
		if (ass)
			put(w, "<|start|>assistant");
		break;
	case TERN_CHAT_HUNYUAN_DENSE:
		for (size_t i = 0; i < n; i++) {
			if (i == 0 && IS(m[i].role, "system")) {
				put(w, m[i].content);
				put(w, "<｜hy_place▁holder▁no▁3｜>");
			}
			if (IS(m[i].role, "assistant")) {
				put(w, "<｜hy_Assistant｜>");
				put(w, m[i].content);
				put(w, "<｜hy_place▁holder▁no▁2｜>");
			} else if (IS(m[i].role, "user")) {
				put(w, "<｜hy_User｜>");
				put(w, m[i].content);
				put(w, "<｜hy_Assistant｜>");
			}
		}
		break;
	case TERN_CHAT_HUNYUAN_VL:
		put(w, "<｜hy_begin▁of▁sentence｜>");
		for (size_t i = 0; i < n; i++) {
			if (i == 0 && IS(m[i].role, "system")) {
				put(w, m[i].content);
				put(w, "<｜hy_place▁holder▁no▁3｜>");
			} else if (IS(m[i].role, "user")) {
				put(w, m[i].content);
				put(w, "<｜hy_User｜>");
			} else if (IS(m[i].role, "assistant")) {
				put(w, m[i].content);
				put(w, "<｜hy_Assistant｜>");
			}
		}
		break;
	case TERN_CHAT_KIMI_K2:
		for (size_t i = 0; i < n; i++) {
			if (IS(m[i].role, "system"))
				put(w, "<|im_system|>system<|im_middle|>");
			else if (IS(m[i].role, "user"))
				put(w, "<|im_user|>user<|im_middle|>");
			else if (IS(m[i].role, "assistant"))
				put(w, "<|im_assistant|>assistant<|im_middle|>");
			else if (IS(m[i].role, "tool"))
				put(w, "<|im_system|>tool<|im_middle|>");
			put(w, m[i].content);
			put(w, "<|im_end|>");
		}
		if (ass)
			put(w, "<|im_assistant|>assistant<|im_middle|>");
		break;
	case TERN_CHAT_SEED_OSS:
		for (size_t i = 0; i < n; i++) {
			put(w, "<seed:bos>");
			put(w, m[i].role);
			put(w, "\n");
			if (IS(m[i].role, "assistant"))
				put_trim(w, m[i].content);
			else
				put(w, m[i].content);
			put(w, "<seed:eos>");
		}
		if (ass)
			put(w, "<seed:bos>assistant\n");
		break;
	case TERN_CHAT_GROK2:
		for (size_t i = 0; i < n; i++) {
			if (IS(m[i].role, "system")) {
				put(w, "System: ");
				put_trim(w, m[i].content);
			} else if (IS(m[i].role, "user")) {
				put(w, "Human: ");
				put_trim(w, m[i].content);
			} else if (IS(m[i].role, "assistant")) {
				put(w, "Assistant: ");
				put(w, m[i].content);
			} else {
				continue;
			}
			put(w, "<|separator|>\n\n");
		}
		if (ass)
			put(w, "Assistant:");
		break;
	case TERN_CHAT_PANGU_EMBED: {
		const struct wrap t[] = {
			{"system", "[unused9]系统：", "[unused10]"},
			{"user", "[unused9]用户：", "[unused10]"},
			{"assistant", "[unused9]助手：", "[unused10]"},
			{"tool", "[unused9]工具：", "[unused10]"},
		};
		if (n > 0 && !IS(m[0].role, "system"))
			put(w, "[unused9]系统：[unused10]");
		fmt_wrapped(w, m, n, t, N_OF(t), false);
		if (ass)
			put(w, "[unused9]助手：");
		break;
	}
	case TERN_CHAT_SOLAR_OPEN:
		fmt_role_line(w, m, n, "<|begin|>", "<|content|>", "<|end|>", false);
		if (ass)
			put(w, "<|begin|>assistant");
		break;
	default:
		break;
	}
}

static bool role_ok(const char *r)
{
	return IS(r, "system") || IS(r, "user") || IS(r, "assistant") || IS(r, "tool");
}

static int check_args(int fmt, const struct tern_chat_msg *msgs, size_t n, tern_err *e)
{
	if (fmt <= TERN_CHAT_UNKNOWN || fmt >= TERN_CHAT_N_FMT)
		return tern_errf(e, TERN_EINVAL, "chat format %d: no such format (known: %s)", fmt,
				 tern_chat_fmt_names());
	if (n > TERN_CHAT_MAX_MSGS)
		return tern_errf(e, TERN_ERANGE, "chat: %zu messages, more than the limit %zu", n,
				 TERN_CHAT_MAX_MSGS);
	if (n > 0 && !msgs)
		return tern_errf(e, TERN_EINVAL, "chat: %zu messages but no array", n);
	for (size_t i = 0; i < n; i++) {
		const char *r = msgs[i].role;
		if (!r)
			return tern_errf(e, TERN_EINVAL, "chat message %zu: no role", i);
		if (!role_ok(r))
			return tern_errf(e, TERN_EINVAL,
					 "chat message %zu: role \"%.32s\" is not system, user, assistant or tool",
					 i, r);
		if (!msgs[i].content)
			return tern_errf(e, TERN_EINVAL, "chat message %zu (%s): no content", i, r);
	}
	return 0;
}

/* Check the arguments and run the formatter into buf[0..cap) (cap may be 0);
 * *len gets the full length. Returns 0 or the error of the arguments or of
 * an overflowing length; a short buffer is the callers' business. */
static int run(int fmt, const struct tern_chat_msg *msgs, size_t n, bool ass, char *buf, size_t cap,
	       size_t *len, tern_err *e)
{
	int rc = check_args(fmt, msgs, n, e);
	if (rc)
		return rc;
	struct wr w = {buf, cap, 0, false};
	format(&w, fmt, msgs, n, ass);
	if (w.overflow)
		return tern_errf(e, TERN_ERANGE, "chat: the formatted text would exceed SIZE_MAX bytes");
	if (cap > 0)
		buf[w.len < cap ? w.len : cap - 1] = 0;
	*len = w.len;
	return 0;
}

int tern_chat_fmt_apply(int fmt, const struct tern_chat_msg *msgs, size_t n,
			bool add_generation_prompt, char *buf, size_t cap,
			size_t *n_out, tern_err *e)
{
	if (n_out)
		*n_out = 0;
	if (cap > 0 && !buf)
		return tern_errf(e, TERN_EINVAL, "chat: buffer NULL with capacity %zu", cap);
	if (cap > 0)
		buf[0] = 0;
	size_t len = 0;
	int rc = run(fmt, msgs, n, add_generation_prompt, buf, cap, &len, e);
	if (rc)
		return rc;
	if (n_out)
		*n_out = len;
	if (len >= cap)
		return tern_errf(e, TERN_ERANGE, "chat: the formatted text needs %zu bytes, the buffer has %zu",
				 len + 1, cap);
	return 0;
}

int tern_chat_fmt_apply_alloc(int fmt, const struct tern_chat_msg *msgs,
			      size_t n, bool add_generation_prompt, char **out,
			      size_t *n_out, tern_err *e)
{
	if (n_out)
		*n_out = 0;
	if (!out)
		return tern_errf(e, TERN_EINVAL, "chat: no output pointer");
	*out = NULL;
	size_t len = 0;
	int rc = run(fmt, msgs, n, add_generation_prompt, NULL, 0, &len, e);
	if (rc)
		return rc;
	/* len <= SIZE_MAX - 1 by the writer's own check. */
	char *p = malloc(len + 1);
	if (!p)
		return tern_errf(e, TERN_ENOMEM, "chat: cannot allocate %zu bytes", len + 1);
	rc = run(fmt, msgs, n, add_generation_prompt, p, len + 1, &len, e);
	if (rc) {
		free(p);
		return rc;
	}
	*out = p;
	if (n_out)
		*n_out = len;
	return 0;
}

struct tern_str tern_chat_template_of(const tern_mf *m, const char *name)
{
	struct tern_str none = {NULL, 0};
	if (!m)
		return none;
	char key[256];
	const char *k = "tokenizer.chat_template";
	if (name) {
		int r = snprintf(key, sizeof key, "tokenizer.chat_template.%s", name);
		if (r < 0 || (size_t)r >= sizeof key)
			return none;
		k = key;
	}
	const struct tern_mf_kv *kv = tern_mf_find(m, k);
	if (!kv || kv->v.type != GGUF_T_STRING)
		return none;
	return kv->v.s;
}
