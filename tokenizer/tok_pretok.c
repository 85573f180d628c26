/* tok_pretok.c - byte-level BPE pre-tokenizers, selected by
 * tokenizer.ggml.pre.
 *
 * A pre-tokenizer is a sequence of split expressions, applied the way the
 * Hugging Face `Split(behavior = Isolated)` step applies them: each
 * expression cuts every piece left by the previous one into its matches and
 * the stretches between them, and an expression never sees past the end of
 * its piece. The expressions are the ones in the models' tokenizer.json
 * files (as also listed by llama.cpp), compiled once with PCRE2 in UTF mode
 * with Unicode properties and JIT. PCRE2_MATCH_INVALID_UTF lets invalid
 * bytes through: they never match and end up in the gaps, as bytes. */
#include "tokenizer/tok_internal.h"

#include "lib/core/utf8.h"

#include <string.h>

#ifdef TERN_HAVE_PCRE2
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#endif

enum {
	PRE_IGNORE_MERGES = 1, /* a piece that is itself a token skips merging */
	PRE_NFC = 2,           /* the tokenizer.json has an NFC normalizer */
	PRE_ADD_BOS = 4,       /* default add_bos when the file does not say */
	PRE_NO_BOS = 8,        /* no BOS token at all (chatglm) */
};

struct tok_pre {
	const char *names;             /* "|a|b|": the values of tokenizer.ggml.pre */
	const char *re[TOK_MAX_REGEX]; /* applied in order */
	unsigned flags;
};

/* The recurring expressions. */
#define RE_GPT2 "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+"
#define RE_LLAMA3 "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"
#define RE_QWEN2 "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"
#define RE_UPPER "[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]"
#define RE_LOWER "[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]"
#define RE_CONTR "(?i:'s|'t|'re|'ve|'m|'ll|'d)"
#define RE_GPT4O "[^\\r\\n\\p{L}\\p{N}]?" RE_UPPER "*" RE_LOWER "+" RE_CONTR "?|[^\\r\\n\\p{L}\\p{N}]?" RE_UPPER "+" RE_LOWER "*" RE_CONTR "?|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"
#define RE_TEKKEN "[^\\r\\n\\p{L}\\p{N}]?" RE_UPPER "*" RE_LOWER "+|[^\\r\\n\\p{L}\\p{N}]?" RE_UPPER "+" RE_LOWER "*|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"
#define RE_DS3 "[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\\r\\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+| ?[\\p{P}\\p{S}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"
#define RE_CJK_DS "[一-龥ࠀ-一가-퟿]+"
#define RE_PORO " ?[^(\\s|.,!?…。，、।۔،)]+"

static const struct tok_pre pre_table[] = {
	{"|gpt-2|phi-2|jina-es|jina-de|gigachat|jina-v2-es|jina-v2-de|a.x-4.0|mellum|modern-bert|"
	 "exaone4|jais|trillion|granite-docling|jina-v1-en|jina-v2-code|roberta-bpe|olmo|",
	 {RE_GPT2}, 0},
	/* GPT-NeoX's tokenizer.json (also used by MPT) NFC-normalises first. */
	{"|mpt|gpt-neox|", {RE_GPT2}, PRE_NFC},
	{"|llama3|llama-v3|llama-bpe|falcon3|falcon-h1|pixtral|midm-2.0|lfm2|jina-v5-nano|",
	 {RE_LLAMA3}, PRE_IGNORE_MERGES | PRE_ADD_BOS},
	{"|dbrx|smaug-bpe|", {RE_LLAMA3}, 0},
	{"|chatglm-bpe|glm4|", {RE_LLAMA3}, PRE_NO_BOS},
	{"|deepseek-llm|",
	 {"[\\r\\n]",
	  "\\s?[\\x{41}-\\x{5a}\\x{61}-\\x{7a}\\x{b5}\\x{c0}-\\x{d6}\\x{d8}-\\x{f6}\\x{f8}-\\x{1ba}\\x{1bc}-\\x{1bf}"
	  "\\x{1c4}-\\x{293}\\x{295}-\\x{2af}\\x{370}-\\x{373}\\x{376}\\x{377}\\x{37b}-\\x{37d}\\x{37f}"
	  "\\x{386}\\x{388}-\\x{38a}\\x{38c}\\x{38e}-\\x{3a1}\\x{3a3}-\\x{3f5}\\x{3f7}-\\x{481}\\x{48a}-\\x{52f}"
	  "\\x{531}-\\x{556}\\x{10a0}-\\x{10c5}\\x{13a0}-\\x{13f5}\\x{13f8}-\\x{13fd}\\x{1c90}-\\x{1cba}"
	  "\\x{1cbd}-\\x{1cbf}\\x{1d00}-\\x{1d2b}\\x{1d6b}-\\x{1d77}\\x{1d79}-\\x{1d9a}\\x{1e00}-\\x{1f15}"
	  "\\x{1f18}-\\x{1f1d}\\x{1f20}-\\x{1f45}\\x{1f48}-\\x{1f4d}\\x{1f50}-\\x{1f57}\\x{1f59}\\x{1f5b}"
	  "\\x{1f5d}\\x{1f5f}-\\x{1f7d}\\x{1f80}-\\x{1fb4}\\x{1fb6}-\\x{1fbc}\\x{1fbe}\\x{1fc2}-\\x{1fc4}"
	  "\\x{1fc6}-\\x{1fcc}\\x{1fd0}-\\x{1fd3}\\x{1fd6}-\\x{1fdb}\\x{1fe0}-\\x{1fec}\\x{1ff2}-\\x{1ff4}"
	  "\\x{1ff6}-\\x{1ffc}\\x{2102}\\x{2107}\\x{210a}-\\x{2113}\\x{2115}\\x{2119}-\\x{211d}\\x{2124}"
	  "\\x{2126}\\x{2128}\\x{212a}-\\x{212d}\\x{212f}-\\x{2134}\\x{2139}\\x{213c}-\\x{213f}\\x{2145}-\\x{2149}"
	  "\\x{214e}\\x{2183}\\x{2184}\\x{2c00}-\\x{2c7b}\\x{2c7e}-\\x{2ce4}\\x{2ceb}-\\x{2cee}\\x{2cf2}"
	  "\\x{2cf3}\\x{a640}-\\x{a66d}\\x{a680}-\\x{a69b}\\x{a722}-\\x{a76f}\\x{a771}-\\x{a787}\\x{a78b}-\\x{a78e}"
	  "\\x{ab70}-\\x{abbf}\\x{fb00}-\\x{fb06}\\x{fb13}-\\x{fb17}\\x{ff21}-\\x{ff3a}\\x{ff41}-\\x{ff5a}"
	  "\\x{10400}-\\x{1044f}\\x{104b0}-\\x{104d3}\\x{104d8}-\\x{104fb}\\x{10c80}-\\x{10cb2}\\x{10cc0}-\\x{10cf2}"
	  "\\x{118a0}-\\x{118df}\\x{1e900}-\\x{1e943}]+",
	  "\\s?[!-/:-~！-／：-～‘-‟　-。]+",
	  "\\s+$",
	  RE_CJK_DS,
	  "\\p{N}+"}, 0},
	{"|deepseek-coder|",
	 {"[\\r\\n]", "\\s?\\p{L}+", "\\s?\\p{P}+", RE_CJK_DS, "\\p{N}"}, 0},
	{"|deepseek-v3|hunyuan-dense|joyai-llm|hy_v4|",
	 {"\\p{N}{1,3}", "[一-龥぀-ゟ゠-ヿ]+", RE_DS3}, 0},
	{"|spark2_5|",
	 {"\\p{N}{1,3}", "[一-龥぀-ゟ゠-ヿ]+",
	  "[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\\r\\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+| ?[\\p{P}\\p{S}]+|[\\r\\n]|\\s+(?!\\S)|\\s+",
	  "\\p{N}"}, 0},
	/* Falcon: Punctuation, ByteLevel (GPT-2 expression), Digits, and
	 * groups of three ASCII digits. */
	{"|falcon|",
	 {"[\\p{P}\\$\\+<=>\\^~\\|`]+", RE_GPT2, "[0-9][0-9][0-9]"}, 0},
	/* StarCoder family: every digit on its own, then ByteLevel. */
	{"|starcoder|refact|smollm|codeshell|exaone|minerva-7b|mellum2|",
	 {"\\p{N}", RE_GPT2}, 0},
	{"|command-r|", {"\\p{N}", RE_GPT2}, PRE_NFC},
	{"|qwen2|deepseek-r1-qwen|kormo|f2llmv2|megrez|", {RE_QWEN2}, PRE_NFC},
	{"|stablelm2|hunyuan|solar-open|", {RE_QWEN2}, 0},
	{"|qwen35|",
	 {"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?[\\p{L}\\p{M}]+|\\p{N}| ?[^\\s\\p{L}\\p{M}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"},
	 PRE_NFC},
	{"|grok-2|", {RE_QWEN2}, 0},
	{"|ufakzeka|",
	 {"[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"}, 0},
	{"|poro-chat|bloom|gpt3-finnish|", {RE_PORO}, 0},
	{"|viking|", {RE_PORO, "\\p{N}"}, 0},
	{"|tekken|", {RE_TEKKEN}, PRE_IGNORE_MERGES | PRE_ADD_BOS},
	{"|gpt-4o|llama4|kanana2|talkie|minimax-m2|", {RE_GPT4O}, 0},
	{"|granite-embed-multi-97m|",
	 {"[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+" RE_CONTR
	  "?|[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*" RE_CONTR
	  "?|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"},
	 PRE_IGNORE_MERGES},
	{"|tiny_aya|cohere2moe|", {"\\d{1,3}(?=(?:\\d{3})*\\b)", RE_GPT4O}, 0},
	{"|chameleon|",
	 {"<sentinel:[0-9]+>", "(IMGIMG)((A|B|C|D|E|F|G|H|I){1,4})Z", "([\\t\\n]|    |  )", "\\p{N}",
	  "[\\p{P}!-/:-@\\[-`{-~]", "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)"},
	 PRE_ADD_BOS},
	{"|bailingmoe|bailingmoe2|llada-moe|",
	 {"'(?i:[sdmt]|ll|ve|re)|[^\\r\\n\\p{L}\\p{N}]?+\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]++[\\r\\n]*|\\s*[\\r\\n]|\\s+(?!\\S)|\\s+"}, 0},
	{"|seed-coder|",
	 {"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1}| ?[^\\s\\p{L}\\p{N}\\r\\n]+|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"}, 0},
	{"|minicpm5|",
	 {"\\p{N}{1,3}",
	  "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}+| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"},
	 PRE_IGNORE_MERGES},
	{"|exaone-moe|",
	 {"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?(?:\\p{L}\\p{M}*(?: \\p{L}\\p{M}*)*)+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]?|\\s*[\\r\\n]|\\s+(?!\\S)|\\s+"}, 0},
	{"|laguna|", {"[^\\n]+|[\\n]+", RE_QWEN2}, 0},
	{"|jais-2|",
	 {"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|"
	  "\\s{512}(?!\\S)|\\s{256}(?!\\S)|\\s{128}(?!\\S)|\\s{64}(?!\\S)|\\s{32}(?!\\S)|\\s{16}(?!\\S)|\\s{8}(?!\\S)|\\s{4}(?!\\S)|\\s{1,2}(?!\\S)|\\s{1}"}, 0},
	{"|youtu|",
	 {"[가-힣ㄱ-ㆎ]+|[！…“”‘’—：；，、-〿︰-﹏]+|[ㄅ-ㄯ]+|[一-龥぀-ゟ゠-ヿ]+",
	  "[^\\r\\n\\p{L}\\p{N}]?" RE_UPPER "*" RE_LOWER "+" RE_CONTR "?|[^\\r\\n\\p{L}\\p{N}]?" RE_UPPER "+" RE_LOWER "*" RE_CONTR
	  "?|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"},
	 PRE_IGNORE_MERGES},
	/* llama.cpp's fallback when a file names no pre-tokenizer. */
	{"|default|",
	 {"[\\p{P}\\$\\+<=>\\^~\\|]+", RE_GPT2, "\\p{N}+", "[0-9][0-9][0-9]"}, 0},
};

const struct tok_pre *tok_pre_find(const char *name, size_t len)
{
	if (!name || len == 0 || len > 64 || memchr(name, '|', len))
		return NULL;
	char key[68];
	key[0] = '|';
	memcpy(key + 1, name, len);
	key[len + 1] = '|';
	key[len + 2] = 0;
	for (size_t i = 0; i < sizeof pre_table / sizeof pre_table[0]; i++)
		if (strstr(pre_table[i].names, key))
			return &pre_table[i];
	return NULL;
}

void tok_pre_first_name(const struct tok_pre *p, char *buf, size_t cap)
{
	const char *s = p->names + 1, *end = strchr(s, '|');
	size_t n = (size_t)(end - s);
	if (n >= cap)
		n = cap - 1;
	memcpy(buf, s, n);
	buf[n] = 0;
}

void tok_pre_flags(const struct tok_pre *p, bool *ignore_merges, bool *nfc,
		   bool *add_bos, bool *no_bos)
{
	*ignore_merges = p->flags & PRE_IGNORE_MERGES;
	*nfc = p->flags & PRE_NFC;
	*add_bos = p->flags & PRE_ADD_BOS;
	*no_bos = p->flags & PRE_NO_BOS;
}

#ifdef TERN_HAVE_PCRE2

int tok_pre_compile(tok_vocab *v, tern_err *e)
{
	v->n_re = 0;
	for (int i = 0; i < TOK_MAX_REGEX && v->pre->re[i]; i++) {
		int err;
		PCRE2_SIZE off;
		pcre2_code *re = pcre2_compile((PCRE2_SPTR)v->pre->re[i], PCRE2_ZERO_TERMINATED,
					       PCRE2_UTF | PCRE2_UCP | PCRE2_MATCH_INVALID_UTF,
					       &err, &off, NULL);
		if (!re) {
			PCRE2_UCHAR msg[160];
			pcre2_get_error_message(err, msg, sizeof msg);
			return tern_errf(e, TERN_EUNSUPPORTED,
					 "pre-tokenizer '%s': expression %d: %s at offset %zu",
					 v->pre_name, i, (const char *)msg, (size_t)off);
		}
		/* JIT is an optimisation: without it matching still works. */
		(void)pcre2_jit_compile(re, PCRE2_JIT_COMPLETE);
		v->re[v->n_re++] = re;
	}
	return 0;
}

void tok_pre_release(tok_vocab *v)
{
	for (int i = 0; i < v->n_re; i++)
		pcre2_code_free(v->re[i]);
	v->n_re = 0;
}

void *tok_pre_match_data(const tok_vocab *v)
{
	return pcre2_match_data_create(4, NULL);
}

void tok_pre_match_data_free(void *md)
{
	pcre2_match_data_free(md);
}

static int split_level(const tok_vocab *v, pcre2_match_data *md, int level,
		       const char *p, size_t n, tok_piece_fn fn, void *ud, tern_err *e)
{
	if (n == 0)
		return 0;
	if (level == v->n_re)
		return fn(ud, p, n);
	const pcre2_code *re = v->re[level];
	PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
	size_t pos = 0, gap = 0;
	while (pos < n) {
		int rc = pcre2_match(re, (PCRE2_SPTR)p, n, pos, 0, md, NULL);
		if (rc == PCRE2_ERROR_NOMATCH)
			break;
		if (rc < 0) {
			/* Resource limits on pathological input: keep the rest
			 * of this piece whole rather than fail. */
			break;
		}
		size_t ms = ov[0], me = ov[1];
		if (me <= ms) {
			/* empty match: step over one character. None of the
			 * expressions above can match empty (their PCRE2
			 * minimum length is at least 1); this keeps a new one
			 * from looping. */
			pos = ms + tern_utf8_step((const unsigned char *)p + ms, n - ms, TERN_UTF8_TOKENIZER);
			continue;
		}
		int r;
		if (ms > gap && (r = split_level(v, md, level + 1, p + gap, ms - gap, fn, ud, e)))
			return r;
		if ((r = split_level(v, md, level + 1, p + ms, me - ms, fn, ud, e)))
			return r;
		gap = pos = me;
	}
	return split_level(v, md, level + 1, p + gap, n - gap, fn, ud, e);
}

int tok_pre_split(const tok_vocab *v, void *md, const char *text, size_t len,
		  tok_piece_fn fn, void *ud, tern_err *e)
{
	return split_level(v, md, 0, text, len, fn, ud, e);
}

#else /* no PCRE2: BPE vocabularies cannot be used */

int tok_pre_compile(tok_vocab *v, tern_err *e)
{
	return tern_errf(e, TERN_EUNSUPPORTED,
			 "BPE pre-tokenizer '%s' needs PCRE2 (built without it)",
			 v->pre_name);
}

void tok_pre_release(tok_vocab *v) { v->n_re = 0; }
void *tok_pre_match_data(const tok_vocab *v) { return NULL; }
void tok_pre_match_data_free(void *md) { (void)md; }

int tok_pre_split(const tok_vocab *v, void *md, const char *text, size_t len,
		  tok_piece_fn fn, void *ud, tern_err *e)
{
	return tern_errf(e, TERN_EUNSUPPORTED, "built without PCRE2");
}

#endif
