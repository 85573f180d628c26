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

static int detect_im_start(struct hay t)
{
	if (has(t, "<|im_sep|>"))
		return TERN_CHAT_PHI4;
	/* SmolVLM opens with <|im_start|> but is not chatml. */
	if (has(t, "<end_of_utterance>"))
		return TERN_CHAT_SMOLVLM;
	return TERN_CHAT_CHATML;
}

static int detect_assistant_user(struct hay t)
{
	if (has(t, "<|tool_declare|>"))
		return TERN_CHAT_EXAONE_MOE;
	return has(t, "</s>") ? TERN_CHAT_FALCON3 : TERN_CHAT_GLMEDGE;
}

static int detect_vicuna(struct hay t)
{
	return has(t, "SYSTEM: ") ? TERN_CHAT_VICUNA_ORCA : TERN_CHAT_VICUNA;
}

static int detect_exaone(struct hay t)
{
	return has(t, "[|tool|]") ? TERN_CHAT_EXAONE4 : TERN_CHAT_EXAONE3;
}

static int detect_granite(struct hay t)
{
	if (has(t, "<tool_call>") || has(t, "<tools>"))
		return has(t, "g4_default_system_message") ? TERN_CHAT_GRANITE_4_0 : TERN_CHAT_GRANITE_4_1;
	return TERN_CHAT_GRANITE;
}

/* A detection rule: the template holds every marker in all (or, with
 * prefix, starts with all[0]); the format is fmt, or what refine finds
 * among the family. */
struct rule {
	const char *all[3];
	int fmt;
	int (*refine)(struct hay t);
	bool prefix;
};

/* Order matters: templates often hold several families' markers, and the
 * first rule that matches wins, as in llama.cpp. */
static const struct rule rules[] = {
	{{"<|im_start|>"}, 0, detect_im_start, false},
	{{"mistral"}, 0, detect_inst, true},
	{{"[INST]"}, 0, detect_inst, false},
	{{"<|assistant|>", "<|end|>"}, TERN_CHAT_PHI3, NULL, false},
	{{"[gMASK]<sop>"}, TERN_CHAT_CHATGLM4, NULL, false},
	{{"<|assistant|>", "<|user|>"}, 0, detect_assistant_user, false},
	{{"<|{{ item['role'] }}|>", "<|begin_of_image|>"}, TERN_CHAT_GLMEDGE, NULL, false},
	{{"<|user|>", "<|endoftext|>"}, TERN_CHAT_ZEPHYR, NULL, false},
	{{"bos_token + message['role']"}, TERN_CHAT_MONARCH, NULL, false},
	{{"<start_of_turn>"}, TERN_CHAT_GEMMA, NULL, false},
	{{"'\\n\\nAssistant: ' + eos_token"}, TERN_CHAT_ORION, NULL, false},
	{{"GPT4 Correct "}, TERN_CHAT_OPENCHAT, NULL, false},
	{{"USER: ", "ASSISTANT: "}, 0, detect_vicuna, false},
	{{"### Instruction:", "<|EOT|>"}, TERN_CHAT_DEEPSEEK, NULL, false},
	{{"<|START_OF_TURN_TOKEN|>", "<|USER_TOKEN|>"}, TERN_CHAT_COMMAND_R, NULL, false},
	{{"<|start_header_id|>", "<|end_header_id|>"}, TERN_CHAT_LLAMA3, NULL, false},
	{{"[gMASK]sop"}, TERN_CHAT_CHATGLM3, NULL, false},
	{{"<用户>"}, TERN_CHAT_MINICPM, NULL, false},
	{{"'Assistant: ' + message['content'] + eos_token"}, TERN_CHAT_DEEPSEEK2, NULL, false},
	{{"<｜Assistant｜>", "<｜User｜>", "<｜end▁of▁sentence｜>"}, TERN_CHAT_DEEPSEEK3, NULL, false},
	{{"[|system|]", "[|assistant|]", "[|endofturn|]"}, 0, detect_exaone, false},
	{{"rwkv-world"}, TERN_CHAT_RWKV_WORLD, NULL, false},
	{{"{{- 'User: ' + message['content']|trim + '\\n\\n' -}}"}, TERN_CHAT_RWKV_WORLD, NULL, false},
	{{"<|start_of_role|>"}, 0, detect_granite, false},
	{{"message['role'] + additional_special_tokens[0] + message['content'] + additional_special_tokens[1]"},
	 TERN_CHAT_GIGACHAT, NULL, false},
	{{"<|role_start|>"}, TERN_CHAT_MEGREZ, NULL, false},
	{{" Ассистент:"}, TERN_CHAT_YANDEX, NULL, false},
	{{"<role>ASSISTANT</role>", "'HUMAN'"}, TERN_CHAT_BAILING, NULL, false},
	{{"<role>ASSISTANT</role>", "\"HUMAN\"", "<think>"}, TERN_CHAT_BAILING_THINK, NULL, false},
	{{"<role>ASSISTANT</role>", "<role>HUMAN</role>", "<|role_end|>"}, TERN_CHAT_BAILING2, NULL, false},
	{{"<|header_start|>", "<|header_end|>"}, TERN_CHAT_LLAMA4, NULL, false},
	{{"<|endofuserprompt|>"}, TERN_CHAT_DOTS1, NULL, false},
	{{"<|extra_0|>", "<|extra_4|>"}, TERN_CHAT_HUNYUAN_MOE, NULL, false},
	{{"<|start|>", "<|channel|>"}, TERN_CHAT_GPT_OSS, NULL, false},
	{{"<｜hy_Assistant｜>", "<｜hy_begin▁of▁sentence｜>"}, TERN_CHAT_HUNYUAN_VL, NULL, false},
	{{"<｜hy_Assistant｜>", "<｜hy_place▁holder▁no▁3｜>"}, TERN_CHAT_HUNYUAN_DENSE, NULL, false},
	{{"<|im_assistant|>assistant<|im_middle|>"}, TERN_CHAT_KIMI_K2, NULL, false},
	{{"<seed:bos>"}, TERN_CHAT_SEED_OSS, NULL, false},
	{{"'Assistant: '  + message['content'] + '<|separator|>"}, TERN_CHAT_GROK2, NULL, false},
	{{"[unused9]系统：[unused10]"}, TERN_CHAT_PANGU_EMBED, NULL, false},
	{{"<|begin|>", "<|end|>", "<|content|>"}, TERN_CHAT_SOLAR_OPEN, NULL, false},
};

static bool rule_matches(const struct rule *r, struct hay t)
{
	if (r->prefix)
		return starts(t, r->all[0]);
	for (size_t k = 0; k < sizeof r->all / sizeof *r->all && r->all[k]; k++)
		if (!has(t, r->all[k]))
			return false;
	return true;
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
	for (size_t i = 0; i < sizeof rules / sizeof *rules; i++)
		if (rule_matches(&rules[i], t))
			return rules[i].refine ? rules[i].refine(t) : rules[i].fmt;
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

static void fmt_mistral_v7(struct wr *w, int fmt, const struct tern_chat_msg *m, size_t n)
{
	const char *sp = fmt == TERN_CHAT_MISTRAL_V7_TEKKEN ? "" : " ";
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
static void fmt_gemma(struct wr *w, int fmt, const struct tern_chat_msg *m, size_t n)
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
static void fmt_orion(struct wr *w, int fmt, const struct tern_chat_msg *m, size_t n)
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

/* Formats with a loop of their own; the others are data in the table below. */
static void fmt_monarch(struct wr *w, int fmt, const struct tern_chat_msg *m, size_t n)
{
	/* Every message but the first opens with "<s>" (the first gets the
	 * tokenizer's BOS). */
	for (size_t i = 0; i < n; i++) {
		if (i > 0)
			put(w, "<s>");
		put(w, m[i].role);
		put(w, "\n");
		put(w, m[i].content);
		put(w, "</s>\n");
	}
}

static void fmt_openchat(struct wr *w, int fmt, const struct tern_chat_msg *m, size_t n)
{
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
}

static void fmt_minicpm(struct wr *w, int fmt, const struct tern_chat_msg *m, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (IS(m[i].role, "user")) {
			put(w, "<用户>");
			put_trim(w, m[i].content);
			put(w, "<AI>");
		} else {
			put_trim(w, m[i].content);
		}
	}
}

static void fmt_content_only(struct wr *w, int fmt, const struct tern_chat_msg *m, size_t n)
{
	for (size_t i = 0; i < n; i++)
		put(w, m[i].content);
}

/* The generation prompt follows the last user message, whatever
 * add_generation_prompt says. */
static void fmt_rwkv(struct wr *w, int fmt, const struct tern_chat_msg *m, size_t n)
{
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
}

static void fmt_gigachat(struct wr *w, int fmt, const struct tern_chat_msg *m, size_t n)
{
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
}

static void fmt_bailing(struct wr *w, int fmt, const struct tern_chat_msg *m, size_t n)
{
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
}

static void fmt_smolvlm(struct wr *w, int fmt, const struct tern_chat_msg *m, size_t n)
{
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
}

/* Three wrappers: system, user, and every other role. */
static void fmt_three(struct wr *w, const struct tern_chat_msg *m, size_t n, const char *const t[3][2])
{
	for (size_t i = 0; i < n; i++) {
		int k = IS(m[i].role, "system") ? 0 : IS(m[i].role, "user") ? 1 : 2;
		put(w, t[k][0]);
		put(w, m[i].content);
		put(w, t[k][1]);
	}
}

static void fmt_dots1(struct wr *w, int fmt, const struct tern_chat_msg *m, size_t n)
{
	static const char *const t[3][2] = {
		{"<|system|>", "<|endofsystem|>"},
		{"<|userprompt|>", "<|endofuserprompt|>"},
		{"<|response|>", "<|endofresponse|>"},
	};
	fmt_three(w, m, n, t);
}

static void fmt_hunyuan_moe(struct wr *w, int fmt, const struct tern_chat_msg *m, size_t n)
{
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
}

static void fmt_gpt_oss(struct wr *w, int fmt, const struct tern_chat_msg *m, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		put(w, "<|start|>");
		put(w, m[i].role);
		put(w, "<|message|>");
		put(w, m[i].content);
		put(w, IS(m[i].role, "assistant") ? "<|return|>" : "<|end|>");
	}
}

static void fmt_hunyuan_dense(struct wr *w, int fmt, const struct tern_chat_msg *m, size_t n)
{
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
}

static void fmt_hunyuan_vl(struct wr *w, int fmt, const struct tern_chat_msg *m, size_t n)
{
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
}

static void fmt_kimi_k2(struct wr *w, int fmt, const struct tern_chat_msg *m, size_t n)
{
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
}

static void fmt_seed_oss(struct wr *w, int fmt, const struct tern_chat_msg *m, size_t n)
{
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
}

static void fmt_grok2(struct wr *w, int fmt, const struct tern_chat_msg *m, size_t n)
{
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
}

#define N_OF(a) (sizeof(a) / sizeof((a)[0]))
#define WRAPS(t) .wraps = (t), .n_wraps = N_OF(t)

static const struct wrap vicuna_w[] = {
	{"system", "", "\n\n"}, {"user", "USER: ", "\n"}, {"assistant", "ASSISTANT: ", "</s>\n"},
};
static const struct wrap vicuna_orca_w[] = {
	{"system", "SYSTEM: ", "\n"}, {"user", "USER: ", "\n"}, {"assistant", "ASSISTANT: ", "</s>\n"},
};
static const struct wrap deepseek_w[] = {
	{"system", "", ""},
	{"user", "### Instruction:\n", "\n"},
	{"assistant", "### Response:\n", "\n<|EOT|>\n"},
};
static const struct wrap command_r_w[] = {
	{"system", "<|START_OF_TURN_TOKEN|><|SYSTEM_TOKEN|>", "<|END_OF_TURN_TOKEN|>"},
	{"user", "<|START_OF_TURN_TOKEN|><|USER_TOKEN|>", "<|END_OF_TURN_TOKEN|>"},
	{"assistant", "<|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|>", "<|END_OF_TURN_TOKEN|>"},
};
static const struct wrap deepseek2_w[] = {
	{"system", "", "\n\n"}, {"user", "User: ", "\n\n"}, {"assistant", "Assistant: ", "<｜end▁of▁sentence｜>"},
};
static const struct wrap deepseek3_w[] = {
	{"system", "", "\n\n"}, {"user", "<｜User｜>", ""}, {"assistant", "<｜Assistant｜>", "<｜end▁of▁sentence｜>"},
};
/* exaone3 knows no tool role: it takes the first three, and skips tool messages */
static const struct wrap exaone_w[] = {
	{"system", "[|system|]", "[|endofturn|]\n"},
	{"user", "[|user|]", "\n"},
	{"assistant", "[|assistant|]", "[|endofturn|]\n"},
	{"tool", "[|tool|]", "[|endofturn|]\n"},
};
static const struct wrap exaone_moe_w[] = {
	{"system", "<|system|>\n", "<|endofturn|>\n"},
	{"user", "<|user|>\n", "<|endofturn|>\n"},
	{"assistant", "<|assistant|>\n", "<|endofturn|>\n"},
	{"tool", "<|tool|>\n", "<|endofturn|>\n"},
};
static const struct wrap yandex_w[] = {
	{"user", " Пользователь: ", "\n\n"}, {"assistant", " Ассистент: ", "\n\n"},
};
static const struct wrap pangu_w[] = {
	{"system", "[unused9]系统：", "[unused10]"},
	{"user", "[unused9]用户：", "[unused10]"},
	{"assistant", "[unused9]助手：", "[unused10]"},
	{"tool", "[unused9]工具：", "[unused10]"},
};

/* A built-in format: a function of its own, or messages wrapped by role
 * (wraps), or role lines (PRE role MID content POST); head opens the text
 * (head_if_no_sys: only when the first message is not a system one), gen
 * is the generation prompt. */
struct builtin {
	void (*fn)(struct wr *w, int fmt, const struct tern_chat_msg *m, size_t n);
	const struct wrap *wraps;
	size_t n_wraps;
	const char *pre, *mid, *post;
	bool trim, head_if_no_sys;
	const char *head, *gen;
};

static const struct builtin builtins[TERN_CHAT_N_FMT] = {
	[TERN_CHAT_CHATML] = {.pre = "<|im_start|>", .mid = "\n", .post = "<|im_end|>\n", .gen = "<|im_start|>assistant\n"},
	[TERN_CHAT_MISTRAL_V7] = {.fn = fmt_mistral_v7},
	[TERN_CHAT_MISTRAL_V7_TEKKEN] = {.fn = fmt_mistral_v7},
	[TERN_CHAT_MISTRAL_V1] = {.fn = fmt_mistral},
	[TERN_CHAT_MISTRAL_V3] = {.fn = fmt_mistral},
	[TERN_CHAT_MISTRAL_V3_TEKKEN] = {.fn = fmt_mistral},
	[TERN_CHAT_LLAMA2] = {.fn = fmt_llama2},
	[TERN_CHAT_LLAMA2_SYS] = {.fn = fmt_llama2},
	[TERN_CHAT_LLAMA2_SYS_BOS] = {.fn = fmt_llama2},
	[TERN_CHAT_LLAMA2_SYS_STRIP] = {.fn = fmt_llama2},
	[TERN_CHAT_PHI3] = {.pre = "<|", .mid = "|>\n", .post = "<|end|>\n", .gen = "<|assistant|>\n"},
	[TERN_CHAT_PHI4] = {.pre = "<|im_start|>", .mid = "<|im_sep|>", .post = "<|im_end|>",
			    .gen = "<|im_start|>assistant<|im_sep|>"},
	[TERN_CHAT_FALCON3] = {.pre = "<|", .mid = "|>\n", .post = "\n", .gen = "<|assistant|>\n"},
	[TERN_CHAT_ZEPHYR] = {.pre = "<|", .mid = "|>\n", .post = "<|endoftext|>\n", .gen = "<|assistant|>\n"},
	[TERN_CHAT_MONARCH] = {.fn = fmt_monarch, .gen = "<s>assistant\n"},
	[TERN_CHAT_GEMMA] = {.fn = fmt_gemma, .gen = "<start_of_turn>model\n"},
	[TERN_CHAT_ORION] = {.fn = fmt_orion},
	[TERN_CHAT_OPENCHAT] = {.fn = fmt_openchat, .gen = "GPT4 Correct Assistant:"},
	[TERN_CHAT_VICUNA] = {WRAPS(vicuna_w), .gen = "ASSISTANT:"},
	[TERN_CHAT_VICUNA_ORCA] = {WRAPS(vicuna_orca_w), .gen = "ASSISTANT:"},
	[TERN_CHAT_DEEPSEEK] = {WRAPS(deepseek_w), .gen = "### Response:\n"},
	[TERN_CHAT_COMMAND_R] = {WRAPS(command_r_w), .trim = true, .gen = "<|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|>"},
	[TERN_CHAT_LLAMA3] = {.pre = "<|start_header_id|>", .mid = "<|end_header_id|>\n\n", .post = "<|eot_id|>",
			      .trim = true, .gen = "<|start_header_id|>assistant<|end_header_id|>\n\n"},
	[TERN_CHAT_CHATGLM3] = {.head = "[gMASK]sop", .pre = "<|", .mid = "|>\n ", .post = "", .gen = "<|assistant|>"},
	[TERN_CHAT_CHATGLM4] = {.head = "[gMASK]<sop>", .pre = "<|", .mid = "|>\n", .post = "", .gen = "<|assistant|>\n"},
	[TERN_CHAT_GLMEDGE] = {.pre = "<|", .mid = "|>\n", .post = "", .gen = "<|assistant|>"},
	[TERN_CHAT_MINICPM] = {.fn = fmt_minicpm},
	[TERN_CHAT_DEEPSEEK2] = {WRAPS(deepseek2_w), .gen = "Assistant:"},
	[TERN_CHAT_DEEPSEEK3] = {WRAPS(deepseek3_w), .gen = "<｜Assistant｜>"},
	[TERN_CHAT_DEEPSEEK_OCR] = {.fn = fmt_content_only},
	[TERN_CHAT_EXAONE3] = {.wraps = exaone_w, .n_wraps = 3, .trim = true, .gen = "[|assistant|]"},
	[TERN_CHAT_EXAONE4] = {WRAPS(exaone_w), .trim = true, .gen = "[|assistant|]"},
	[TERN_CHAT_EXAONE_MOE] = {WRAPS(exaone_moe_w), .trim = true, .gen = "<|assistant|>\n"},
	[TERN_CHAT_RWKV_WORLD] = {.fn = fmt_rwkv},
	/* The granites' only difference in llama.cpp is the role
	 * "assistant_tool_call", which tern does not accept. */
	[TERN_CHAT_GRANITE] = {.pre = "<|start_of_role|>", .mid = "<|end_of_role|>", .post = "<|end_of_text|>\n",
			       .gen = "<|start_of_role|>assistant<|end_of_role|>"},
	[TERN_CHAT_GRANITE_4_0] = {.pre = "<|start_of_role|>", .mid = "<|end_of_role|>", .post = "<|end_of_text|>\n",
				   .gen = "<|start_of_role|>assistant<|end_of_role|>"},
	[TERN_CHAT_GRANITE_4_1] = {.pre = "<|start_of_role|>", .mid = "<|end_of_role|>", .post = "<|end_of_text|>\n",
				   .gen = "<|start_of_role|>assistant<|end_of_role|>"},
	[TERN_CHAT_GIGACHAT] = {.fn = fmt_gigachat, .gen = "assistant<|role_sep|>"},
	[TERN_CHAT_MEGREZ] = {.pre = "<|role_start|>", .mid = "<|role_end|>", .post = "<|turn_end|>",
			      .gen = "<|role_start|>assistant<|role_end|>"},
	[TERN_CHAT_YANDEX] = {WRAPS(yandex_w), .gen = " Ассистент:[SEP]"},
	[TERN_CHAT_BAILING] = {.fn = fmt_bailing, .gen = "<role>ASSISTANT</role>"},
	[TERN_CHAT_BAILING_THINK] = {.fn = fmt_bailing, .gen = "<role>ASSISTANT</role><think>"},
	[TERN_CHAT_BAILING2] = {.fn = fmt_bailing, .gen = "<role>ASSISTANT</role>"},
	[TERN_CHAT_LLAMA4] = {.pre = "<|header_start|>", .mid = "<|header_end|>\n\n", .post = "<|eot|>", .trim = true,
			      .gen = "<|header_start|>assistant<|header_end|>\n\n"},
	[TERN_CHAT_SMOLVLM] = {.fn = fmt_smolvlm, .gen = "Assistant:"},
	[TERN_CHAT_DOTS1] = {.fn = fmt_dots1, .gen = "<|response|>"},
	[TERN_CHAT_HUNYUAN_MOE] = {.fn = fmt_hunyuan_moe},
	[TERN_CHAT_GPT_OSS] = {.fn = fmt_gpt_oss, .gen = "<|start|>assistant"},
	[TERN_CHAT_HUNYUAN_DENSE] = {.fn = fmt_hunyuan_dense},
	[TERN_CHAT_HUNYUAN_VL] = {.fn = fmt_hunyuan_vl},
	[TERN_CHAT_KIMI_K2] = {.fn = fmt_kimi_k2, .gen = "<|im_assistant|>assistant<|im_middle|>"},
	[TERN_CHAT_SEED_OSS] = {.fn = fmt_seed_oss, .gen = "<seed:bos>assistant\n"},
	[TERN_CHAT_GROK2] = {.fn = fmt_grok2, .gen = "Assistant:"},
	[TERN_CHAT_PANGU_EMBED] = {WRAPS(pangu_w), .head = "[unused9]系统：[unused10]", .head_if_no_sys = true,
				   .gen = "[unused9]助手："},
	[TERN_CHAT_SOLAR_OPEN] = {.pre = "<|begin|>", .mid = "<|content|>", .post = "<|end|>", .gen = "<|begin|>assistant"},
};

static void format(struct wr *w, int fmt, const struct tern_chat_msg *m, size_t n, bool ass)
{
	const struct builtin *b = &builtins[fmt];
	if (b->head && (!b->head_if_no_sys || (n > 0 && !IS(m[0].role, "system"))))
		put(w, b->head);
	if (b->fn)
		b->fn(w, fmt, m, n);
	else if (b->wraps)
		fmt_wrapped(w, m, n, b->wraps, b->n_wraps, b->trim);
	else if (b->pre)
		fmt_role_line(w, m, n, b->pre, b->mid, b->post, b->trim);
	if (ass && b->gen)
		put(w, b->gen);
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

struct tern_str tern_chat_template_next_name(const tern_mf *m, uint64_t *it)
{
	static const char prefix[] = "tokenizer.chat_template.";
	const size_t np = sizeof prefix - 1;
	uint64_t n = m ? tern_mf_n_kv(m) : 0;
	while (*it < n) {
		const struct tern_mf_kv *kv = tern_mf_kv_at(m, (*it)++);
		if (kv && kv->v.type == GGUF_T_STRING && kv->key.len > np && !memcmp(kv->key.ptr, prefix, np))
			return (struct tern_str){kv->key.ptr + np, kv->key.len - np};
	}
	return (struct tern_str){NULL, 0};
}
