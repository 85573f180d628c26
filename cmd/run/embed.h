/* embed.h - tern-run --embedding: sentence embeddings of the input lines
 * (lib/llm/embed.h), written as JSON lines, one JSON array of arrays,
 * an OpenAI-style JSON object, text or raw float32 (see run.c's EMBEDDINGS
 * section for the formats and the statuses). cmd/run.c parses the
 * options and reads the input; this runs the mode and returns the exit
 * status. */
#ifndef TERN_RUN_EMBED_H
#define TERN_RUN_EMBED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cmd/common/cli.h"

struct embed_cli {
	const char *model;     /* the path */
	const char *text;      /* the inputs, separated by sep (a final sep ends the last input) */
	size_t len;
	const char *sep;       /* --embd-separator (default "\n") */
	const char *pooling;   /* --pooling NAME, or NULL: the file's */
	int normalize;         /* --embd-normalize: -1 none, 0 int16 range, 1 taxicab, 2 L2, p > 2 */
	const char *format;    /* jsonl | array | json | raw | f32 */
	int64_t ctx;           /* -c (-1: default) */
	int64_t ubatch;        /* -ub */
	int threads;
	const char *ctk, *ctv; /* decoders' cache types */
	bool parse_special;    /* special-token text becomes its token (default) */
	bool verbose, quiet;
	const struct cli_common *common; /* for the device's -v line */
};

int embed_main(const struct embed_cli *c);

#endif
