/* testutil.c - helpers shared by the cmocka tests (see testutil.h). */
#include "tests/testutil.h"

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
