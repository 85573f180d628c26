/* testutil.h - small helpers shared by the cmocka tests. */
#ifndef TERN_TESTUTIL_H
#define TERN_TESTUTIL_H

#include <stddef.h>
#include <stdint.h>

/* Directory of the shared test data ($TERN_DATA, default ../shared/data). */
const char *test_data_dir(void);

/* Whole file in a malloc'd buffer with a NUL after the last byte (so text
 * files are C strings); *size gets the byte count. NULL if unreadable. */
char *test_read_file(const char *path, size_t *size);

/* Samples of a mono audio file (libsndfile, scaled to [-1, 1): s16 / 32768
 * as whisper.cpp reads them) in a malloc'd buffer; NULL if unreadable or
 * not mono. *rate gets the sample rate when rate is not NULL. */
float *test_read_audio(const char *path, size_t *n, int *rate);

/* Index of the largest of x[n] (the first of equals). */
int32_t test_argmax(const float *x, int32_t n);
/* The largest of x[n] minus the second largest (logits or
 * log-probabilities: the same gap). */
double test_top2_gap(const float *x, int32_t n);

#endif
