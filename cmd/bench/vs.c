/* vs.c - placeholder until the llama-bench runner lands. */
#include <stdio.h>

#include "cmd/bench/vs.h"

int vs_probe(const char *path, char *err, size_t cap)
{
	snprintf(err, cap, "%s: the llama-bench runner is not built yet", path);
	return 1;
}

int vs_run(const char *path, const struct vs_test *t, struct vs_result *r, char *err, size_t cap)
{
	(void)t;
	(void)r;
	snprintf(err, cap, "%s: the llama-bench runner is not built yet", path);
	return 1;
}
