/* testutil.c - helpers shared by the cmocka tests (see testutil.h). */
#include "tests/testutil.h"

#include <math.h>

#include <sndfile.h>
#include <stdio.h>
#include <stdlib.h>

const char *test_data_dir(void)
{
	const char *d = getenv("TERN_DATA");
	return d && *d ? d : "../shared/data";
}

char *test_read_file(const char *path, size_t *size)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	char *p = NULL;
	long n = -1;
	if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0 &&
	    (p = malloc((size_t)n + 1)) && fread(p, 1, (size_t)n, f) == (size_t)n) {
		p[n] = 0;
		*size = (size_t)n;
	} else {
		free(p);
		p = NULL;
	}
	fclose(f);
	return p;
}

float *test_read_audio(const char *path, size_t *n, int *rate)
{
	SF_INFO info = {0};
	SNDFILE *f = sf_open(path, SFM_READ, &info);
	if (!f)
		return NULL;
	float *pcm = NULL;
	if (info.channels == 1 && info.frames > 0 && (pcm = malloc((size_t)info.frames * sizeof(float))) &&
	    sf_readf_float(f, pcm, info.frames) == info.frames) {
		*n = (size_t)info.frames;
		if (rate)
			*rate = info.samplerate;
	} else {
		free(pcm);
		pcm = NULL;
	}
	sf_close(f);
	return pcm;
}

int32_t test_argmax(const float *x, int32_t n)
{
	int32_t b = 0;
	for (int32_t i = 1; i < n; i++)
		if (x[i] > x[b])
			b = i;
	return b;
}

double test_top2_gap(const float *x, int32_t n)
{
	int32_t b = test_argmax(x, n);
	double s = -INFINITY;
	for (int32_t i = 0; i < n; i++)
		if (i != b && x[i] > s)
			s = x[i];
	return x[b] - s;
}
