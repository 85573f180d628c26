/* cli.h - the command-line framework shared by every executable.
 *
 * Each executable describes itself with one struct cli_prog: its option
 * table drives argument parsing, --help, the man page (--help-man, used by
 * `make man`) and the bash/zsh/fish completions (--completion SHELL), so they
 * cannot drift apart. This layer (cmd/) is the only one that prints or
 * exits.
 *
 * Exit statuses: 0 ok, 1 runtime error, 2 usage error, 65 bad input data. */
#ifndef TERN_CLI_H
#define TERN_CLI_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "lib/core/error.h"

enum { EXIT_OK = 0, EXIT_RUNTIME = 1, EXIT_USAGE = 2, EXIT_DATAERR = 65 };

enum cli_kind {
	CLI_FLAG,   /* no argument: *(bool *)dst = true */
	CLI_INT,    /* int64 argument, range-checked: *(int64_t *)dst */
	CLI_FLOAT,  /* double argument: *(double *)dst */
	CLI_STR,    /* string argument: *(const char **)dst */
	CLI_FILE,   /* like CLI_STR, completed as a file (by `ext` if set) */
	CLI_CHOICE, /* one of `choices` ("a|b|c"): *(const char **)dst */
	CLI_LIST,   /* string argument, repeatable: appended to *(struct cli_list *)dst */
};

/* The values of a repeatable option, in the order given. More than
 * CLI_LIST_MAX is a usage error. */
#define CLI_LIST_MAX 64
struct cli_list {
	int n;
	const char *v[CLI_LIST_MAX];
};

struct cli_opt {
	const char *lng;     /* "threads" for --threads (NULL: short only) */
	char shrt;           /* 't' for -t, 0 if none */
	const char *alias;   /* extra single-dash spelling users know, e.g. "ngl" */
	enum cli_kind kind;
	void *dst;           /* where the parsed value goes */
	const char *arg;     /* argument name in help, e.g. "N" */
	const char *help;    /* one line */
	const char *ext;     /* CLI_FILE: completion extensions "gguf|bin" */
	const char *choices; /* CLI_CHOICE: "auto|always|never" */
	int64_t min, max;    /* CLI_INT range (both 0: any non-negative) */
	bool *seen;          /* optional: set when the option is given */
	/* Rules between options, by long name, '|'-separated; the parser
	 * enforces them (one-line usage error, exit 2) and --help and the man
	 * page state them. Exclusion is symmetric: naming it on one side is
	 * enough. */
	const char *needs;    /* at least one of these must be given too: "tokenize|tokenize-file" */
	const char *excludes; /* none of these may be given too: "json|values" */
};

struct cli_section {
	const char *title;   /* "EXIT STATUS", "EXAMPLES", ... */
	const char *text;    /* roff-safe plain text; lines starting with "  " are literal */
};

struct cli_prog {
	const char *name;        /* "inspect" (installed as tern-inspect) */
	const char *summary;     /* one line for NAME */
	const char *usage;       /* "[OPTIONS] FILE" */
	const char *description; /* paragraph(s) for DESCRIPTION, blank line separated */
	const struct cli_opt *opts; /* terminated by an entry with lng == NULL && shrt == 0 */
	const char *pos_name;    /* "FILE" */
	const char *pos_ext;     /* completion extensions for positional args */
	int min_pos, max_pos;    /* positional argument count (max -1: any) */
	const struct cli_section *sections; /* terminated by title == NULL */
};

/* Common options every program has, filled by cli_parse. */
struct cli_common {
	bool verbose, quiet;
	const char *color;       /* auto|always|never */
	bool use_color;          /* resolved for stderr (cli_color(stdout) for stdout) */
};

/* Parse argv. Handles --help, --version, --help-man and --completion itself
 * (prints and exits 0). On a usage error prints one line and exits 2.
 * Positional arguments are returned in pos (array of argc entries, owned by
 * the caller's argv) and their count in *npos. */
void cli_parse(const struct cli_prog *p, int argc, char **argv,
	       struct cli_common *common, const char ***pos, int *npos);

/* "tern-inspect: " prefixed message on stderr (one line). */
void cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void cli_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* A -v line on stderr ("tern-run: ..."), printed only with -v and without -q. */
void cli_info(const struct cli_common *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Process exit status for a library code: 0 ok, 65 bad input data
 * (TERN_EFORMAT, TERN_EUNSUPPORTED), 1 for everything else. Usage errors
 * (2) are decided by the option parser. */
int cli_exit_status(int code);
/* Print the message of a library error and return its exit status. */
int cli_fail(const char *path, int code, const tern_err *e);
/* Usage error: one line, exit 2. */
_Noreturn void cli_usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Name of the running program as installed ("tern-inspect"). */
const char *cli_progname(void);

/* Colour: whether f (stdout or stderr) gets escape sequences, as --color
 * decided (auto: f is a terminal, NO_COLOR is unset or empty and TERM is
 * not "dumb"). cli_sgr returns the sequence, or "" when f gets no colour. */
#define CLI_RESET "\033[0m"
#define CLI_BOLD "\033[1m"
#define CLI_DIM "\033[2m"
#define CLI_RED "\033[1;31m"
#define CLI_GREEN "\033[32m"
#define CLI_YELLOW "\033[33m"
bool cli_color(FILE *f);
const char *cli_sgr(FILE *f, const char *seq);

/* Width to lay text out for on f: $COLUMNS if set, else the terminal's
 * width when f is a terminal, else 80 (never below 40). */
int cli_width(FILE *f);
/* Whether f is a terminal. */
bool cli_isatty(FILE *f);

/* The CPUs this process may run on (its affinity mask), 1..256: the
 * default thread count. */
int cli_default_threads(void);
/* A /proc/meminfo entry ("MemTotal", "MemAvailable") in bytes, 0 when
 * unknown. */
uint64_t cli_meminfo(const char *key);
/* The memory a model may take: TERN_MEM_AVAILABLE (bytes) when set, else
 * MemAvailable; 0 when unknown, which turns the memory checks off. */
uint64_t cli_mem_available(void);

/* JSON string output: always valid UTF-8 JSON. Each maximal ill-formed
 * subsequence of the input becomes one U+FFFD (the policy Python's
 * decode(errors="replace") follows), control characters are escaped. */
void cli_json_str(FILE *f, const char *s, uint64_t len);
/* Write a string for a text listing: printable UTF-8 kept, control bytes and
 * invalid sequences escaped C-style (\n, \x1b). */
void cli_text_str(FILE *f, const char *s, uint64_t len);
/* Write a number as JSON so that it reads back exactly (NaN/Inf: null). */
void cli_json_num(FILE *f, double v);
void cli_json_f32(FILE *f, float v);
/* Shortest decimal form of v that reads back exactly (may be inf/nan). */
void cli_fmt_f32(char *buf, size_t cap, float v);
/* Edit distance (insertions, deletions, substitutions, adjacent swaps)
 * between two names of up to 63 bytes (longer: 99), for "did you mean". */
int cli_distance(const char *a, const char *b);

/* Milliseconds of the monotonic clock (for the programs' -v timings). */
double cli_now_ms(void);

/* A growing, always NUL-terminated byte buffer (p NULL until the first add;
 * the owner frees p). */
struct cli_buf {
	char *p;
	size_t len, cap;
};
/* Append n bytes of s; false when out of memory (the buffer is unchanged). */
bool cli_buf_add(struct cli_buf *b, const char *s, size_t n);

#endif
