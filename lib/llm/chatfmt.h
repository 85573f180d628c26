/* chatfmt.h - built-in chat formatters: a conversation (role + content
 * messages) turned into the prompt text a chat model was trained on.
 *
 * These are the formats llama.cpp hard-codes in llama-chat.cpp (its
 * LLM_CHAT_TEMPLATES, spelled as it spells them), reproduced byte for byte
 * (tests/test_chatfmt.c compares with llama.cpp's llama_chat_apply_template
 * on every format, and with jinja2's rendering of real templates where the
 * two agree). tern-run uses them now; once a Jinja engine renders a file's
 * own template they stay as named fallbacks (--chat-template NAME).
 *
 * The formats (tern_chat_fmt_names() lists them for help text):
 *   chatml             <|im_start|>ROLE\nCONTENT<|im_end|>\n  Qwen 2/2.5/3,
 *                      SmolLM2, Hermes, any template with <|im_start|>
 *   llama2             [INST] user [/INST]answer</s>  (system text + "\n")
 *   llama2-sys         the same with <<SYS>>\n...\n<</SYS>>\n\n
 *   llama2-sys-bos     ... and "<s>[INST] " opening later turns
 *   llama2-sys-strip   ... contents trimmed
 *   mistral-v1, mistral-v3, mistral-v3-tekken, mistral-v7, mistral-v7-tekken
 *   llama3             <|start_header_id|>ROLE<|end_header_id|>\n\n...<|eot_id|>
 *   gemma              <start_of_turn>user|model ... <end_of_turn>\n; Gemma
 *                      1/2/3 (a system message is merged into the next user turn)
 *   phi3, phi4, falcon3, zephyr, monarch, orion, openchat, vicuna,
 *   vicuna-orca, deepseek, deepseek2, deepseek3, deepseek-ocr, command-r,
 *   chatglm3, chatglm4, glmedge, minicpm, exaone3, exaone4, exaone-moe,
 *   rwkv-world, granite, granite-4.0, granite-4.1, gigachat, megrez, yandex,
 *   bailing, bailing-think, bailing2, llama4, smolvlm, dots1, hunyuan-moe,
 *   gpt-oss, hunyuan-dense, hunyuan-vl, kimi-k2, seed_oss, grok-2,
 *   pangu-embedded, solar-open
 *
 * BOS. The formatters never write the model's BOS token at the start: the
 * tokenizer adds it when the file says so (tokenizer.ggml.add_bos_token).
 * The caller tokenizes the result with add_special and parse_special on,
 * as llama.cpp's llama-completion (the former llama-cli) does with these
 * formatters: common_tokenize(ctx, prompt, true, true). A few
 * formats write a BOS-like marker that is part of the format itself, as
 * llama.cpp does: "<s>" before later turns in llama2-sys-bos and monarch,
 * "<s>" at the start of gigachat, "<|im_start|>" at the start of smolvlm,
 * "<｜hy_begin▁of▁sentence｜>" at the start of hunyuan-vl. When a Jinja
 * template renders "{{ bos_token }}" itself, llama.cpp strips that leading
 * BOS text if the tokenizer adds one; the test data for real templates is
 * prepared the same way.
 *
 * Names. llama.cpp detects dots1 but gives it no name; tern calls it
 * "dots1" for tern_chat_fmt_by_name, while tern_chat_fmt_detect keeps
 * llama.cpp's answer (the text "dots1" is no template). A file without a
 * template is the caller's choice: llama.cpp falls back to chatml.
 *
 * Roles. "system", "user", "assistant" and "tool" are accepted; a role or
 * content that is NULL, an empty role or any other role is TERN_EINVAL
 * (naming the message), because roles are pasted into the prompt verbatim
 * by several formats and a role such as "user<|im_end|>" would forge turns.
 * Content is the caller's text, copied as is (special-token text inside it
 * is not escaped: tokenizing with special parsing is the caller's choice). */
#ifndef TERN_LLM_CHATFMT_H
#define TERN_LLM_CHATFMT_H

#include <stdbool.h>
#include <stddef.h>

#include "lib/core/error.h"
#include "lib/core/str.h"
#include "lib/format/modelfile.h"

struct tern_chat_msg {
	const char *role;    /* "system", "user", "assistant" or "tool" */
	const char *content; /* NUL-terminated UTF-8 */
};

enum tern_chat_fmt {
	TERN_CHAT_UNKNOWN = 0,
	TERN_CHAT_CHATML,
	TERN_CHAT_LLAMA2,
	TERN_CHAT_LLAMA2_SYS,
	TERN_CHAT_LLAMA2_SYS_BOS,
	TERN_CHAT_LLAMA2_SYS_STRIP,
	TERN_CHAT_MISTRAL_V1,
	TERN_CHAT_MISTRAL_V3,
	TERN_CHAT_MISTRAL_V3_TEKKEN,
	TERN_CHAT_MISTRAL_V7,
	TERN_CHAT_MISTRAL_V7_TEKKEN,
	TERN_CHAT_PHI3,
	TERN_CHAT_PHI4,
	TERN_CHAT_FALCON3,
	TERN_CHAT_ZEPHYR,
	TERN_CHAT_MONARCH,
	TERN_CHAT_GEMMA,
	TERN_CHAT_ORION,
	TERN_CHAT_OPENCHAT,
	TERN_CHAT_VICUNA,
	TERN_CHAT_VICUNA_ORCA,
	TERN_CHAT_DEEPSEEK,
	TERN_CHAT_DEEPSEEK2,
	TERN_CHAT_DEEPSEEK3,
	TERN_CHAT_DEEPSEEK_OCR,
	TERN_CHAT_COMMAND_R,
	TERN_CHAT_LLAMA3,
	TERN_CHAT_CHATGLM3,
	TERN_CHAT_CHATGLM4,
	TERN_CHAT_GLMEDGE,
	TERN_CHAT_MINICPM,
	TERN_CHAT_EXAONE3,
	TERN_CHAT_EXAONE4,
	TERN_CHAT_EXAONE_MOE,
	TERN_CHAT_RWKV_WORLD,
	TERN_CHAT_GRANITE,
	TERN_CHAT_GRANITE_4_0,
	TERN_CHAT_GRANITE_4_1,
	TERN_CHAT_GIGACHAT,
	TERN_CHAT_MEGREZ,
	TERN_CHAT_YANDEX,
	TERN_CHAT_BAILING,
	TERN_CHAT_BAILING_THINK,
	TERN_CHAT_BAILING2,
	TERN_CHAT_LLAMA4,
	TERN_CHAT_SMOLVLM,
	TERN_CHAT_DOTS1,
	TERN_CHAT_HUNYUAN_MOE,
	TERN_CHAT_GPT_OSS,
	TERN_CHAT_HUNYUAN_DENSE,
	TERN_CHAT_HUNYUAN_VL,
	TERN_CHAT_KIMI_K2,
	TERN_CHAT_SEED_OSS,
	TERN_CHAT_GROK2,
	TERN_CHAT_PANGU_EMBED,
	TERN_CHAT_SOLAR_OPEN,
	TERN_CHAT_N_FMT /* count, not a format */
};

/* More messages than this in one call is TERN_ERANGE (a count that large is
 * a caller bug, not a conversation). */
#define TERN_CHAT_MAX_MSGS ((size_t)1 << 20)

/* The format called name (exact spelling, e.g. "llama2-sys"), or -1. */
int tern_chat_fmt_by_name(const char *name);
/* Name of a format; NULL for TERN_CHAT_UNKNOWN or an out-of-range value. */
const char *tern_chat_fmt_name(int fmt);
/* The text that ends a turn in format fmt ("<|im_end|>" for chatml,
 * "<|eot_id|>" for llama3, ...), or NULL where a format has none that
 * simple. A model that does not know it as a token (a base model given
 * chatml) writes it as text: tern-chat stops there. */
const char *tern_chat_fmt_turn_end(int fmt);
/* Every name, ", "-separated, for help text and error messages. */
const char *tern_chat_fmt_names(void);

/* The format a Jinja template's text stands for, found as llama.cpp's
 * llm_chat_detect_template finds it (a template that is exactly a format's
 * name is that format; otherwise marker strings, tested in llama.cpp's
 * order); TERN_CHAT_UNKNOWN when nothing matches. The _n form takes a
 * length (GGUF strings are not NUL-terminated). */
int tern_chat_fmt_detect(const char *tmpl);
int tern_chat_fmt_detect_n(const char *tmpl, size_t len);

/* Format msgs[0..n) in format fmt; add_generation_prompt appends the
 * opening of an assistant turn (for the formats that have one: llama.cpp
 * ignores it in llama2*, mistral*, orion, minicpm, rwkv-world, hunyuan-*,
 * deepseek-ocr, which end a user turn ready for the answer anyway).
 *
 * Writes the text and a NUL into buf[0..cap) and its length (without the
 * NUL) into *n_out (may be NULL). buf may be NULL when cap is 0, to ask for
 * the length. Returns 0; TERN_ERANGE when cap <= length (then *n_out still
 * gets the length needed, buf holds a truncated NUL-terminated prefix if
 * cap > 0, like snprintf), or when n > TERN_CHAT_MAX_MSGS or the length
 * overflows size_t; TERN_EINVAL for an unknown fmt, msgs NULL with n > 0,
 * or a bad message (see "Roles" above). */
int tern_chat_fmt_apply(int fmt, const struct tern_chat_msg *msgs, size_t n,
			bool add_generation_prompt, char *buf, size_t cap,
			size_t *n_out, tern_err *e);

/* The same into a malloc'd, NUL-terminated *out of exactly the length
 * needed (the caller frees it); TERN_ENOMEM if that fails. */
int tern_chat_fmt_apply_alloc(int fmt, const struct tern_chat_msg *msgs,
			      size_t n, bool add_generation_prompt, char **out,
			      size_t *n_out, tern_err *e);

/* The model's chat template: the string tokenizer.chat_template, or
 * tokenizer.chat_template.NAME when name is not NULL (llama.cpp's named
 * templates, e.g. "tool_use"). A view into the file; {NULL, 0} when the
 * key is absent or not a string. */
struct tern_str tern_chat_template_of(const tern_mf *m, const char *name);

/* The names of the file's named templates (the NAME of each string
 * tokenizer.chat_template.NAME), in file order, one per call: *it starts
 * at 0 and is advanced; {NULL, 0} when there are no more. Views into the
 * file. */
struct tern_str tern_chat_template_next_name(const tern_mf *m, uint64_t *it);

#endif
