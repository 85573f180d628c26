/* model.c - tern-bench -m MODEL (in progress). */
#include "cmd/bench/bench.h"

int bench_models(const struct bench_opts *o)
{
	(void)o;
	cli_error("-m: not built yet");
	return EXIT_RUNTIME;
}
