/* utf8.h - the one UTF-8 decoder of the tree. Its callers need different
 * things from ill-formed input, so each names the policy it decodes under:
 *
 *   TERN_UTF8_STRICT     only well-formed sequences (Unicode Table 3-7: no
 *                        overlong forms, no surrogates, nothing above
 *                        U+10FFFF, nothing cut off); anything else is
 *                        refused. For text whose bytes must mean exactly
 *                        one thing: byte-level BPE pieces, input to NFC.
 *   TERN_UTF8_LOSSY      each maximal ill-formed subpart (Unicode 3.9, what
 *                        Python's and Rust's lossy decoders and WHATWG do)
 *                        is one unit standing for U+FFFD; an incomplete
 *                        sequence at the end of the input is one such
 *                        unit. For output: JSON, terminal text, the
 *                        detokenizer.
 *   TERN_UTF8_TOKENIZER  the unit boundaries llama.cpp's tokenizers use: a
 *                        lead byte C2..F4 followed by the continuation
 *                        bytes (10xxxxxx) its high bits ask for is one
 *                        character whatever its value - overlong 3- and
 *                        4-byte forms, surrogates and values up to 0x13FFFF
 *                        included - and every other byte is a unit of its
 *                        own. llama.cpp takes the length from the lead byte
 *                        alone (unicode_len_utf8); we differ only where its
 *                        rule would swallow valid text after an invalid
 *                        byte (0xFF "abc" is one 4-byte symbol there), so
 *                        that the byte falls back to its byte piece and the
 *                        text still merges. On well-formed text every
 *                        policy gives the same units.
 */
#ifndef TERN_UTF8_H
#define TERN_UTF8_H

#include <stddef.h>
#include <stdint.h>

#define TERN_UTF8_REPLACEMENT "\xef\xbf\xbd"
/* The code point of an ill-formed unit (not a Unicode value). */
#define TERN_UTF8_BAD 0xffffffffu

enum tern_utf8_policy {
	TERN_UTF8_STRICT,
	TERN_UTF8_LOSSY,
	TERN_UTF8_TOKENIZER,
};

/* Classify the bytes at s (n > 0 available) against Table 3-7:
 *   > 0  a complete, well-formed sequence of that many bytes;
 *   0    a valid but incomplete prefix that runs to the end of the input
 *        (*bad = n: the bytes to hold, or to replace when input ends);
 *   -1   ill-formed: *bad = length of the maximal subpart to replace.
 * The streaming detokenizer needs the middle case: it holds such bytes
 * until the next piece completes them. */
int tern_utf8_seq(const unsigned char *s, size_t n, size_t *bad);

/* Decode the unit at s (n > 0 available) under policy: returns its length
 * in bytes and stores its code point in *cp (cp may be NULL).
 *   STRICT:    0 where no well-formed sequence starts at s (*cp untouched);
 *   LOSSY:     >= 1; *cp = TERN_UTF8_BAD for an ill-formed unit;
 *   TOKENIZER: >= 1; *cp = the value the bits spell (which may be a
 *              surrogate, an overlong form's value or above U+10FFFF), or
 *              TERN_UTF8_BAD for a byte that stands alone. */
size_t tern_utf8_decode(const unsigned char *s, size_t n, enum tern_utf8_policy policy, uint32_t *cp);

/* Length of the unit at s under policy (tern_utf8_decode without *cp). */
static inline size_t tern_utf8_step(const unsigned char *s, size_t n, enum tern_utf8_policy policy)
{
	return tern_utf8_decode(s, n, policy, NULL);
}

/* Write cp (below 0x200000; the caller has refused or replaced what is not
 * a scalar value if it must) as 1 to 4 bytes at o; returns the count. */
size_t tern_utf8_encode(char *o, uint32_t cp);

#endif
