/* utf8.h - UTF-8 sequence validation shared by the JSON/text writers and the
 * streaming detokenizer. Ill-formed input is handled with the "maximal
 * subpart" policy of the Unicode standard (what Python's and Rust's lossy
 * decoders do): each maximal ill-formed subsequence becomes one U+FFFD. */
#ifndef TERN_UTF8_H
#define TERN_UTF8_H

#include <stddef.h>

#define TERN_UTF8_REPLACEMENT "\xef\xbf\xbd"

/* Classify the bytes at s (n > 0 available):
 *   > 0  a complete, valid sequence of that many bytes;
 *   0    a valid but incomplete prefix that runs to the end of the input
 *        (*bad = n: the bytes to hold, or to replace when input ends);
 *   -1   ill-formed: *bad = length of the maximal subpart to replace. */
int tern_utf8_seq(const unsigned char *s, size_t n, size_t *bad);

#endif
