/* ppl.c - tern-bench --ppl (in progress). */
#include "cmd/bench/bench.h"

int bench_ppl(const struct bench_opts *o)
{
	(void)o;
	cli_error("--ppl: not built yet");
	return EXIT_RUNTIME;
}
