/* cli.c - option parsing, --help, --version, man page and completion
 * generation from one option table per executable, plus the error and JSON
 * output helpers every executable shares. */
#include "cmd/common/cli.h"

#include <errno.h>
#include <sched.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "gpu/registry.h"
#include "quant/cpu.h"
#include "lib/core/utf8.h"

extern const char tern_build_commit[];
extern const char tern_build_compiler[];
extern const char tern_build_flags[];
extern const char tern_build_programs[];

static char progname[64] = "tern";

const char *cli_progname(void) { return progname; }

/* ---- colour and terminal --------------------------------------------- */

static const char *color_mode = "auto";

bool cli_isatty(FILE *f)
{
	return isatty(fileno(f)) == 1;
}

bool cli_color(FILE *f)
{
	if (strcmp(color_mode, "always") == 0)
		return true;
	if (strcmp(color_mode, "never") == 0)
		return false;
	const char *nc = getenv("NO_COLOR"), *term = getenv("TERM");
	return cli_isatty(f) && !(nc && *nc) && !(term && strcmp(term, "dumb") == 0);
}

const char *cli_sgr(FILE *f, const char *seq)
{
	return cli_color(f) ? seq : "";
}

int cli_width(FILE *f)
{
	long w = 80;
	const char *c = getenv("COLUMNS");
	struct winsize ws;
	if (c && *c) {
		char *end;
		long v = strtol(c, &end, 10);
		if (!*end && v > 0)
			w = v;
	} else if (cli_isatty(f) && ioctl(fileno(f), TIOCGWINSZ, &ws) == 0 && ws.ws_col) {
		w = ws.ws_col;
	}
	return w < 40 ? 40 : w > 1000 ? 1000 : (int)w;
}

/* ---- messages ------------------------------------------------------------ */

/* "tern-inspect: " with the program name in the colour of the message. */
static void prefix(const char *color)
{
	fprintf(stderr, "%s%s:%s ", cli_sgr(stderr, color), progname, cli_sgr(stderr, CLI_RESET));
}

static void vmsg(const char *color, const char *kind, const char *fmt, va_list ap)
{
	prefix(color);
	fputs(kind, stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
}

void cli_error(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vmsg(CLI_RED, "", fmt, ap);
	va_end(ap);
}

void cli_warn(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vmsg(CLI_YELLOW, "warning: ", fmt, ap);
	va_end(ap);
}

void cli_info(const struct cli_common *c, const char *fmt, ...)
{
	if (!c->verbose || c->quiet)
		return;
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "%s: ", progname);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

_Noreturn void cli_usage_error(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	prefix(CLI_RED);
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, " (try '%s --help')\n", progname);
	va_end(ap);
	exit(EXIT_USAGE);
}

int cli_exit_status(int code)
{
	if (code == TERN_OK)
		return EXIT_OK;
	if (code == TERN_EFORMAT || code == TERN_EUNSUPPORTED)
		return EXIT_DATAERR;
	return EXIT_RUNTIME;
}

int cli_fail(const char *path, int code, const tern_err *e)
{
	const char *msg = e && e->msg[0] ? e->msg : tern_strerror(code);
	prefix(CLI_RED);
	if (path)
		fprintf(stderr, "%s: %s\n", path, msg);
	else
		fprintf(stderr, "%s\n", msg);
	return cli_exit_status(code);
}

/* ---- the built-in options ---------------------------------------------- */

static struct cli_common *g_common;
static bool opt_help, opt_version;
static const char *opt_help_man, *opt_completion;

#define BUILTIN_COUNT 6
static struct cli_opt builtins[BUILTIN_COUNT + 1];

static void init_builtins(struct cli_common *c)
{
	struct cli_opt b[BUILTIN_COUNT + 1] = {
		{.lng = "help", .shrt = 'h', .kind = CLI_FLAG, .dst = &opt_help, .help = "show this help and exit"},
		{.lng = "version", .kind = CLI_FLAG, .dst = &opt_version,
		 .help = "show version, commit, compiler, backends and CPU features, then exit"},
		{.lng = "verbose", .shrt = 'v', .kind = CLI_FLAG, .dst = &c->verbose, .help = "more detail (the man page says what each program adds)"},
		{.lng = "quiet", .shrt = 'q', .kind = CLI_FLAG, .dst = &c->quiet, .help = "only errors on stderr"},
		{.lng = "color", .kind = CLI_CHOICE, .dst = &c->color, .arg = "WHEN", .choices = "auto|always|never",
		 .help = "colour: auto (on a terminal, NO_COLOR unset or empty), always, never"},
		{.lng = "completion", .kind = CLI_CHOICE, .dst = &opt_completion, .arg = "SHELL",
		 .choices = "bash|zsh|fish", .help = "print a completion script for SHELL and exit"},
		{0},
	};
	memcpy(builtins, b, sizeof b);
}

/* Hidden: used by `make man`. */
static const struct cli_opt help_man_opt = {.lng = "help-man", .kind = CLI_FLAG, .dst = &opt_help_man};

/* ---- help ---------------------------------------------------------------- */

static int n_opts(const struct cli_opt *o)
{
	int n = 0;
	while (o && (o[n].lng || o[n].shrt))
		n++;
	return n;
}

/* "-t, --threads N" style spelling of an option. */
static void spell(const struct cli_opt *o, char *buf, size_t cap, bool roff)
{
	const char *dash = roff ? "\\-" : "-";
	size_t n = 0;
	buf[0] = 0;
	if (o->shrt)
		n += (size_t)snprintf(buf + n, cap - n, "%s%c", dash, o->shrt);
	if (o->alias && n < cap)
		n += (size_t)snprintf(buf + n, cap - n, "%s%s%s", n ? ", " : "", dash, o->alias);
	if (o->lng && n < cap)
		n += (size_t)snprintf(buf + n, cap - n, "%s%s%s%s", n ? ", " : "", dash, dash, o->lng);
	if (o->kind != CLI_FLAG && n < cap) {
		const char *arg = o->arg ? o->arg : o->kind == CLI_INT ? "N" : o->kind == CLI_FLOAT ? "X" : "VALUE";
		snprintf(buf + n, cap - n, " %s", arg);
	}
}

/* ---- rules between options ------------------------------------------------- */

static const struct cli_prog *g_prog;

/* Whether the '|'-separated list has name. */
static bool list_has(const char *list, const char *name)
{
	size_t n = strlen(name);
	for (const char *c = list; c && *c;) {
		const char *bar = strchr(c, '|');
		size_t k = bar ? (size_t)(bar - c) : strlen(c);
		if (k == n && strncmp(c, name, n) == 0)
			return true;
		c = bar ? bar + 1 : c + k;
	}
	return false;
}

/* Whether a and b may not be given together (either side may say so). */
static bool excluded(const struct cli_opt *a, const struct cli_opt *b)
{
	return a != b && a->lng && b->lng && (list_has(a->excludes, b->lng) || list_has(b->excludes, a->lng));
}

/* Join "--a, --b or --c" (sep_last " or " / " and ") into buf. */
static void join_names(char *buf, size_t cap, const char *const *names, int n, const char *dash,
		       const char *last)
{
	size_t len = 0;
	buf[0] = 0;
	for (int i = 0; i < n && len < cap; i++)
		len += (size_t)snprintf(buf + len, cap - len, "%s%s%s%s", i == 0 ? "" : i == n - 1 ? last : ", ", dash,
					dash, names[i]);
}

/* The options excluded by o in table order: those o names, and with
 * both_sides those that name o. */
static int excluded_names(const struct cli_opt *o, const char **names, int cap, bool both_sides)
{
	int n = 0;
	for (int i = 0; g_prog && i < n_opts(g_prog->opts) && n < cap; i++) {
		const struct cli_opt *x = &g_prog->opts[i];
		if (both_sides ? excluded(o, x) : x != o && x->lng && list_has(o->excludes, x->lng))
			names[n++] = x->lng;
	}
	return n;
}

static int split_names(const char *list, const char **names, char *store, size_t cap, int max)
{
	int n = 0;
	snprintf(store, cap, "%s", list ? list : "");
	char *save = NULL;
	for (char *t = strtok_r(store, "|", &save); t && n < max; t = strtok_r(NULL, "|", &save))
		names[n++] = t;
	return n;
}

/* Append str to the string in buf[cap], cutting it if it does not fit. */
static void append(char *buf, size_t cap, const char *str)
{
	size_t n = strlen(buf);
	if (n + 1 < cap)
		snprintf(buf + n, cap - n, "%s", str);
}

/* "(needs --tensor; not with --json or --values)" for --help, where an
 * exclusion shows on the option that declares it (so that the modes' long
 * lists are not repeated on every listing option); full sentences naming
 * both sides for the man page. Empty when o has no rules. */
static void rules_text(const struct cli_opt *o, char *buf, size_t cap, bool man)
{
	const char *dash = man ? "\\-" : "-";
	const char *need[16] = {0}, *excl[32] = {0};
	char store[256], a[512], b[512];
	int nn = split_names(o->needs, need, store, sizeof store, 16);
	int ne = excluded_names(o, excl, 32, man);
	join_names(a, sizeof a, need, nn, dash, " or ");
	join_names(b, sizeof b, excl, ne, dash, " or ");
	buf[0] = 0;
	if (!nn && !ne)
		return;
	append(buf, cap, man ? "" : " (");
	if (nn) {
		append(buf, cap, man ? " Needs " : "needs ");
		append(buf, cap, a);
		append(buf, cap, man ? "." : ne ? "; " : "");
	}
	if (ne) {
		append(buf, cap, man ? " Cannot be combined with " : "not with ");
		append(buf, cap, b);
		append(buf, cap, man ? "." : "");
	}
	append(buf, cap, man ? "" : ")");
}

/* ---- help ---------------------------------------------------------------- */

/* Write text from column *col, breaking lines only between words so that
 * nothing passes column `width`; continuation lines start at `indent`.
 * A word longer than a line stands alone on its line. */
static void wrap(FILE *f, const char *text, int *col, int indent, int width)
{
	const char *p = text;
	bool first = true;
	while (*p) {
		if (*p == ' ') {
			p++;
			continue;
		}
		size_t n = strcspn(p, " ");
		int need = (int)n + (first ? 0 : 1);
		if (!first && *col + need > width && *col > indent) {
			fprintf(f, "\n%*s", indent, "");
			*col = indent;
			need = (int)n;
		} else if (!first) {
			fputc(' ', f);
		}
		fwrite(p, 1, n, f);
		*col += need;
		p += n;
		first = false;
	}
}

#define HELP_COL 30 /* where option descriptions start */

static void print_opts(FILE *f, const struct cli_opt *o, int width)
{
	/* A narrow terminal gets descriptions under their option. */
	int indent = width - HELP_COL >= 30 ? HELP_COL : 8;
	for (int i = 0; i < n_opts(o); i++) {
		char sp[96], text[1024], rules[600];
		spell(&o[i], sp, sizeof sp, false);
		rules_text(&o[i], rules, sizeof rules, false);
		snprintf(text, sizeof text, "%s%s%s%s%s%s", o[i].help ? o[i].help : "",
			 o[i].kind == CLI_CHOICE && o[i].choices ? " [" : "",
			 o[i].kind == CLI_CHOICE && o[i].choices ? o[i].choices : "",
			 o[i].kind == CLI_CHOICE && o[i].choices ? "]" : "",
			 o[i].kind == CLI_LIST ? " (repeatable)" : "", rules);
		int col = fprintf(f, "  %s", sp);
		if (col + 1 > indent) {
			fprintf(f, "\n%*s", indent, "");
		} else {
			fprintf(f, "%*s", indent - col, "");
		}
		col = indent;
		wrap(f, text, &col, indent, width);
		fputc('\n', f);
	}
}

static void print_help(const struct cli_prog *p)
{
	int width = cli_width(stdout), col = 0;
	char line[512];
	snprintf(line, sizeof line, "usage: %s %s", progname, p->usage);
	wrap(stdout, line, &col, 7, width);
	putchar('\n');
	col = 0;
	wrap(stdout, p->summary, &col, 0, width);
	printf("\n\noptions:\n");
	print_opts(stdout, p->opts, width);
	print_opts(stdout, builtins, width);
	putchar('\n');
	col = 0;
	wrap(stdout, "exit status: 0 ok, 1 runtime error, 2 usage error, 65 malformed input.", &col, 0, width);
	printf("\nSee '%s(1)' for details.\n", progname);
}

static void print_version(void)
{
	printf("%s %s\n", progname, TERN_VERSION);
	printf("commit:   %s\n", tern_build_commit);
	printf("compiler: %s (%s)\n", tern_build_compiler, tern_build_flags);
	printf("backends: %s\n", tern_device_backends());
	printf("cpu:      %s (kernels: %s)\n", quant_cpu_features_str(), quant_isa_name(quant_isa()));
}

/* ---- man page (roff) ---------------------------------------------------- */

/* n bytes of s as roff text */
static void roff_text_n(FILE *f, const char *s, size_t n)
{
	/* Escape backslashes and dashes; a leading dot or quote gets \& so that
	 * roff does not take the line for a request. */
	bool bol = true;
	for (const char *end = s + n; s < end; s++) {
		if (bol && (*s == '.' || *s == '\''))
			fputs("\\&", f);
		if (*s == '\\')
			fputs("\\e", f);
		else if (*s == '-')
			fputs("\\-", f);
		else
			fputc(*s, f);
		bol = *s == '\n';
	}
}

static void roff_text(FILE *f, const char *s)
{
	roff_text_n(f, s, strlen(s));
}

static void roff_para(FILE *f, const char *text)
{
	/* Blank lines separate paragraphs; lines starting with two spaces are
	 * literal (examples). A line is written whole, however long. */
	const char *s = text;
	bool in_lit = false;
	while (*s) {
		const char *e = strchr(s, '\n');
		size_t n = e ? (size_t)(e - s) : strlen(s);
		if (n == 0) {
			if (in_lit)
				fputs(".EE\n", f);
			in_lit = false;
			fputs(".PP\n", f);
		} else if (n >= 2 && s[0] == ' ' && s[1] == ' ') {
			if (!in_lit)
				fputs(".EX\n", f);
			in_lit = true;
			roff_text_n(f, s + 2, n - 2);
			fputc('\n', f);
		} else {
			if (in_lit)
				fputs(".EE\n", f);
			in_lit = false;
			roff_text_n(f, s, n);
			fputc('\n', f);
		}
		s = e ? e + 1 : s + n;
	}
	if (in_lit)
		fputs(".EE\n", f);
}

static void man_opts(FILE *f, const struct cli_opt *o)
{
	for (int i = 0; i < n_opts(o); i++) {
		char sp[128], rules[600];
		spell(&o[i], sp, sizeof sp, true);
		fprintf(f, ".TP\n.B %s\n", sp);
		const char *h = o[i].help ? o[i].help : "";
		size_t n = strlen(h);
		roff_text(f, h);
		if (n && h[n - 1] != '.')
			fputc('.', f);
		if (o[i].kind == CLI_CHOICE && o[i].choices) {
			fputs(" One of: ", f);
			for (const char *c = o[i].choices; *c; c++)
				fputs(*c == '|' ? ", " : (char[2]){*c, 0}, f);
			fputc('.', f);
		}
		if (o[i].kind == CLI_LIST)
			fputs(" May be given more than once.", f);
		rules_text(&o[i], rules, sizeof rules, true);
		fputs(rules, f);
		fputc('\n', f);
	}
}

/* Variables every program reads; a program's own ENVIRONMENT section gets
 * those it does not already describe. */
static const struct {
	const char *name, *text;
} common_env[] = {
	{"NO_COLOR", "if set and not empty, \\-\\-color=auto gives no colour."},
	{"COLUMNS", "the width \\-\\-help wraps its text to (default: the terminal's width, 80 when "
		    "standard output is not a terminal)."},
	{"TERN_CPU", "force the CPU kernel variant: scalar, avx2, avx512 or neon (default: the best the CPU runs)."},
};

static void man_env(const char *own)
{
	for (size_t i = 0; i < sizeof common_env / sizeof common_env[0]; i++)
		if (!own || !strstr(own, common_env[i].name))
			printf(".TP\n.B %s\n%s\n", common_env[i].name, common_env[i].text);
}

static void print_man(const struct cli_prog *p)
{
	char up[64];
	size_t i;
	for (i = 0; progname[i] && i + 1 < sizeof up; i++)
		up[i] = (char)(progname[i] >= 'a' && progname[i] <= 'z' ? progname[i] - 32 : progname[i]);
	up[i] = 0;
	printf(".\\\" Generated by '%s --help-man' from the option table; do not edit.\n", progname);
	printf(".TH %s 1 \"\" \"tern %s\" \"tern manual\"\n", up, TERN_VERSION);
	printf(".SH NAME\n%s \\- ", progname);
	roff_text(stdout, p->summary);
	printf("\n.SH SYNOPSIS\n.B %s\n", progname);
	roff_text(stdout, p->usage);
	printf("\n.SH DESCRIPTION\n");
	roff_para(stdout, p->description ? p->description : p->summary);
	printf(".SH OPTIONS\n");
	man_opts(stdout, p->opts);
	man_opts(stdout, builtins);
	bool env = false;
	for (const struct cli_section *s = p->sections; s && s->title; s++) {
		printf(".SH %s\n", s->title);
		roff_para(stdout, s->text);
		if (strcmp(s->title, "ENVIRONMENT") == 0) {
			man_env(s->text);
			env = true;
		}
	}
	if (!env) {
		printf(".SH ENVIRONMENT\n");
		man_env(NULL);
	}
	/* Only the pages this build installs: one per program in cmd/. */
	char others[512] = "";
	size_t len = 0;
	char names[256];
	snprintf(names, sizeof names, "%s", tern_build_programs);
	char *save = NULL;
	for (char *t = strtok_r(names, " ", &save); t; t = strtok_r(NULL, " ", &save))
		if (strcmp(t, p->name) != 0 && len < sizeof others)
			len += (size_t)snprintf(others + len, sizeof others - len, "%stern\\-%s(1)", len ? ", " : "", t);
	if (len)
		printf(".SH SEE ALSO\n%s\n", others);
}

/* ---- completions --------------------------------------------------------- */

static void ext_glob(FILE *f, const char *ext, const char *fmt_each, const char *sep)
{
	/* "gguf|bin" -> each ext formatted with fmt_each, joined by sep */
	char buf[128];
	snprintf(buf, sizeof buf, "%s", ext);
	char *save = NULL;
	bool first = true;
	for (char *t = strtok_r(buf, "|", &save); t; t = strtok_r(NULL, "|", &save)) {
		if (!first)
			fputs(sep, f);
		fprintf(f, fmt_each, t);
		first = false;
	}
}

static void all_opts(const struct cli_prog *p, const struct cli_opt **list, int *n)
{
	*n = 0;
	for (int i = 0; i < n_opts(p->opts); i++)
		list[(*n)++] = &p->opts[i];
	for (int i = 0; i < n_opts(builtins); i++)
		list[(*n)++] = &builtins[i];
}

static void print_completion_bash(const struct cli_prog *p)
{
	const struct cli_opt *o[128];
	int n;
	all_opts(p, o, &n);
	char fn[80];
	snprintf(fn, sizeof fn, "_%s", progname);
	for (char *c = fn; *c; c++)
		if (*c == '-')
			*c = '_';
	printf("# bash completion for %s; generated from its option table.\n", progname);
	printf("%s()\n{\n\tlocal cur prev\n\tcur=\"${COMP_WORDS[COMP_CWORD]}\"\n\tprev=\"${COMP_WORDS[COMP_CWORD-1]}\"\n", fn);
	printf("\tcase \"$prev\" in\n");
	for (int i = 0; i < n; i++) {
		if (o[i]->kind == CLI_FLAG)
			continue;
		printf("\t");
		bool any = false;
		if (o[i]->shrt)
			printf("-%c", o[i]->shrt), any = true;
		if (o[i]->alias)
			printf("%s-%s", any ? "|" : "", o[i]->alias), any = true;
		if (o[i]->lng)
			printf("%s--%s", any ? "|" : "", o[i]->lng);
		printf(")\n\t\t");
		if (o[i]->kind == CLI_CHOICE) {
			printf("COMPREPLY=($(compgen -W \"");
			for (const char *c = o[i]->choices; *c; c++)
				putchar(*c == '|' ? ' ' : *c);
			printf("\" -- \"$cur\"))\n");
		} else if (o[i]->kind == CLI_FILE) {
			if (o[i]->ext) {
				printf("COMPREPLY=($(compgen -f -X '!*.@(");
				fputs(o[i]->ext, stdout);
				printf(")' -- \"$cur\") $(compgen -d -- \"$cur\"))\n");
			} else {
				printf("COMPREPLY=($(compgen -f -- \"$cur\"))\n");
			}
		} else {
			printf("COMPREPLY=()\n");
		}
		printf("\t\treturn ;;\n");
	}
	printf("\tesac\n\tif [[ \"$cur\" == -* ]]; then\n\t\tCOMPREPLY=($(compgen -W \"");
	for (int i = 0; i < n; i++) {
		if (o[i]->shrt)
			printf("-%c ", o[i]->shrt);
		if (o[i]->alias)
			printf("-%s ", o[i]->alias);
		if (o[i]->lng)
			printf("--%s ", o[i]->lng);
	}
	printf("\" -- \"$cur\"))\n\t\treturn\n\tfi\n");
	if (p->pos_ext)
		printf("\tCOMPREPLY=($(compgen -f -X '!*.@(%s)' -- \"$cur\") $(compgen -d -- \"$cur\"))\n", p->pos_ext);
	else
		printf("\tCOMPREPLY=($(compgen -f -- \"$cur\"))\n");
	printf("}\nshopt -s extglob 2>/dev/null\ncomplete -o filenames -F %s %s\n", fn, progname);
}

static void zsh_escape(const char *s)
{
	for (; s && *s; s++) {
		if (*s == '\'' )
			fputs("'\\''", stdout);
		else if (*s == '[' || *s == ']' || *s == ':')
			printf("\\%c", *s);
		else
			putchar(*s);
	}
}

static void zsh_action(const struct cli_opt *o)
{
	if (o->kind == CLI_FLAG)
		return;
	printf(":%s:", o->arg ? o->arg : "value");
	if (o->kind == CLI_CHOICE) {
		printf("(");
		for (const char *c = o->choices; *c; c++)
			putchar(*c == '|' ? ' ' : *c);
		printf(")");
	} else if (o->kind == CLI_FILE) {
		if (o->ext) {
			printf("_files -g \"*.(");
			fputs(o->ext, stdout);
			printf(")\"");
		} else {
			printf("_files");
		}
	}
}

static void print_completion_zsh(const struct cli_prog *p)
{
	const struct cli_opt *o[128];
	int n;
	all_opts(p, o, &n);
	printf("#compdef %s\n# zsh completion for %s; generated from its option table.\n", progname, progname);
	printf("_arguments -s \\\n");
	for (int i = 0; i < n; i++) {
		const char *forms[3];
		char sb[4], ab[64], lb[64];
		int nf = 0;
		if (o[i]->shrt) {
			snprintf(sb, sizeof sb, "-%c", o[i]->shrt);
			forms[nf++] = sb;
		}
		if (o[i]->alias) {
			snprintf(ab, sizeof ab, "-%s", o[i]->alias);
			forms[nf++] = ab;
		}
		if (o[i]->lng) {
			snprintf(lb, sizeof lb, "--%s", o[i]->lng);
			forms[nf++] = lb;
		}
		for (int k = 0; k < nf; k++) {
			printf("\t'%s%s%s[", o[i]->kind == CLI_LIST ? "*" : "", forms[k],
			       o[i]->kind != CLI_FLAG && forms[k][1] == '-' ? "=" : "");
			zsh_escape(o[i]->help);
			printf("]");
			zsh_action(o[i]);
			printf("' \\\n");
		}
	}
	if (p->pos_ext)
		printf("\t'*:%s:_files -g \"*.(%s)\"'\n", p->pos_name ? p->pos_name : "file", p->pos_ext);
	else
		printf("\t'*:%s:_files'\n", p->pos_name ? p->pos_name : "file");
}

static void fish_escape(const char *s)
{
	for (; s && *s; s++) {
		if (*s == '\'' || *s == '\\')
			putchar('\\');
		putchar(*s);
	}
}

static void print_completion_fish(const struct cli_prog *p)
{
	const struct cli_opt *o[128];
	int n;
	all_opts(p, o, &n);
	printf("# fish completion for %s; generated from its option table.\n", progname);
	if (p->pos_ext) {
		printf("complete -c %s -k -a '(__fish_complete_suffix ", progname);
		ext_glob(stdout, p->pos_ext, ".%s", ") (__fish_complete_suffix ");
		printf(")'\n");
	}
	for (int i = 0; i < n; i++) {
		printf("complete -c %s", progname);
		if (o[i]->shrt)
			printf(" -s %c", o[i]->shrt);
		if (o[i]->alias)
			printf(" -o %s", o[i]->alias);
		if (o[i]->lng)
			printf(" -l %s", o[i]->lng);
		if (o[i]->kind == CLI_CHOICE) {
			printf(" -x -a '");
			for (const char *c = o[i]->choices; *c; c++)
				putchar(*c == '|' ? ' ' : *c);
			printf("'");
		} else if (o[i]->kind == CLI_FILE) {
			if (o[i]->ext) {
				printf(" -r -k -a '(__fish_complete_suffix ");
				ext_glob(stdout, o[i]->ext, ".%s", ") (__fish_complete_suffix ");
				printf(")'");
			} else {
				printf(" -r -F");
			}
		} else if (o[i]->kind != CLI_FLAG) {
			printf(" -x");
		}
		printf(" -d '");
		fish_escape(o[i]->help);
		printf("'\n");
	}
}

/* ---- parsing ------------------------------------------------------------- */

static const struct cli_opt *find_long(const struct cli_prog *p, const char *name, size_t n)
{
	const struct cli_opt *tabs[3] = {p->opts, builtins, &help_man_opt};
	for (int t = 0; t < 3; t++) {
		int cnt = t == 2 ? 1 : n_opts(tabs[t]);
		for (int i = 0; i < cnt; i++)
			if (tabs[t][i].lng && strlen(tabs[t][i].lng) == n && strncmp(tabs[t][i].lng, name, n) == 0)
				return &tabs[t][i];
	}
	return NULL;
}

static const struct cli_opt *find_alias(const struct cli_prog *p, const char *name)
{
	const struct cli_opt *tabs[2] = {p->opts, builtins};
	for (int t = 0; t < 2; t++)
		for (int i = 0; i < n_opts(tabs[t]); i++)
			if (tabs[t][i].alias && strcmp(tabs[t][i].alias, name) == 0)
				return &tabs[t][i];
	return NULL;
}

static const struct cli_opt *find_short(const struct cli_prog *p, char c)
{
	const struct cli_opt *tabs[2] = {p->opts, builtins};
	for (int t = 0; t < 2; t++)
		for (int i = 0; i < n_opts(tabs[t]); i++)
			if (tabs[t][i].shrt == c)
				return &tabs[t][i];
	return NULL;
}

static void set_value(const struct cli_opt *o, const char *given, const char *val)
{
	switch (o->kind) {
	case CLI_FLAG:
		*(bool *)o->dst = true;
		break;
	case CLI_INT: {
		errno = 0;
		char *end;
		long long v = strtoll(val, &end, 10);
		if (!*val || *end || errno)
			cli_usage_error("option '%s': '%s' is not an integer", given, val);
		int64_t lo = o->min, hi = o->max;
		if (lo == 0 && hi == 0)
			hi = INT64_MAX;
		if (v < lo || v > hi) {
			if (hi == INT64_MAX)
				cli_usage_error("option '%s': %lld is out of range (at least %lld)", given, v, (long long)lo);
			cli_usage_error("option '%s': %lld is out of range (%lld..%lld)", given, v,
					(long long)lo, (long long)hi);
		}
		*(int64_t *)o->dst = v;
		break;
	}
	case CLI_FLOAT: {
		errno = 0;
		char *end;
		double v = strtod(val, &end);
		if (!*val || *end || errno || v != v)
			cli_usage_error("option '%s': '%s' is not a number", given, val);
		*(double *)o->dst = v;
		break;
	}
	case CLI_CHOICE: {
		size_t n = strlen(val);
		const char *c = o->choices;
		bool ok = false;
		while (c && *c) {
			const char *bar = strchr(c, '|');
			size_t k = bar ? (size_t)(bar - c) : strlen(c);
			if (k == n && strncmp(c, val, n) == 0)
				ok = true;
			c = bar ? bar + 1 : c + k;
		}
		if (!ok)
			cli_usage_error("option '%s': '%s' is not one of %s", given, val, o->choices);
		*(const char **)o->dst = val;
		break;
	}
	case CLI_STR:
	case CLI_FILE:
		*(const char **)o->dst = val;
		break;
	case CLI_LIST: {
		struct cli_list *l = o->dst;
		if (l->n >= CLI_LIST_MAX)
			cli_usage_error("option '%s' is given more than %d times", given, CLI_LIST_MAX);
		l->v[l->n++] = val;
		break;
	}
	}
	if (o->seen)
		*o->seen = true;
}

int cli_distance(const char *a, const char *b)
{
	enum { M = 64 };
	size_t n = strlen(a), m = strlen(b);
	if (n >= M || m >= M)
		return 99;
	int d[M + 1][M + 1];
	for (size_t i = 0; i <= n; i++)
		d[i][0] = (int)i;
	for (size_t j = 0; j <= m; j++)
		d[0][j] = (int)j;
	for (size_t i = 1; i <= n; i++)
		for (size_t j = 1; j <= m; j++) {
			int c = d[i - 1][j - 1] + (a[i - 1] != b[j - 1]);
			if (d[i - 1][j] + 1 < c)
				c = d[i - 1][j] + 1;
			if (d[i][j - 1] + 1 < c)
				c = d[i][j - 1] + 1;
			if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] && d[i - 2][j - 2] + 1 < c)
				c = d[i - 2][j - 2] + 1;
			d[i][j] = c;
		}
	return d[n][m];
}

/* The long option nearest to an unknown one, or NULL when none is near:
 * the only one it is a prefix of, or one within a third of its length. */
static const char *suggest(const struct cli_prog *p, const char *name)
{
	const struct cli_opt *tabs[2] = {p->opts, builtins};
	const char *best = NULL, *prefix_of = NULL;
	int best_d = 99, n_prefix = 0;
	size_t len = strlen(name);
	for (int t = 0; t < 2; t++)
		for (int i = 0; i < n_opts(tabs[t]); i++) {
			const char *l = tabs[t][i].lng;
			if (!l)
				continue;
			if (len && strncmp(l, name, len) == 0)
				prefix_of = l, n_prefix++;
			int d = cli_distance(name, l);
			if (d < best_d)
				best_d = d, best = l;
		}
	if (n_prefix == 1)
		return prefix_of;
	int limit = len < 6 ? 1 : (int)len / 3;
	return best_d <= limit ? best : NULL;
}

static _Noreturn void unknown_option(const struct cli_prog *p, const char *given)
{
	const char *near = given[0] == '-' && given[1] == '-' ? suggest(p, given + 2) : NULL;
	if (!near)
		cli_usage_error("unknown option '%.60s'", given);
	prefix(CLI_RED);
	fprintf(stderr, "unknown option '%.60s' (did you mean '--%s'?)\n", given, near);
	exit(EXIT_USAGE);
}

/* llama.cpp's and whisper-cli's multi-letter single-dash options that
 * tern does not have, named as such with what to do instead: a command
 * line from those tools is never read as a letter and a value (-cnv as -c
 * nv). Checked after the program's own aliases (tern-transcribe's -ml is
 * its own). */
static const struct {
	const char *name, *why;
} foreign_opts[] = {
	{"cnv", "llama.cpp's conversation mode: use tern-chat"},
	{"ins", "llama.cpp's instruct mode: use tern-chat"},
	{"st", "llama.cpp's single turn: tern-run answers once"},
	{"fa", "llama.cpp's flash attention switch: tern's attention is always the flash kind (online softmax)"},
	{"nfa", "whisper-cli's flash attention switch: tern's attention is always the flash kind (online softmax)"},
	{"md", "llama.cpp's draft model: tern has no speculative decoding yet"},
	{"ngld", "llama.cpp's draft model layers: tern has no speculative decoding yet"},
	{"devd", "llama.cpp's draft model device: tern has no speculative decoding yet"},
	{"nkvo", "llama.cpp's KV offload switch: a layer's KV cache lives with the layer (-ngl)"},
	{"sm", "llama.cpp's split mode: tern runs a model on one GPU (-dev) and the CPU"},
	{"ts", "llama.cpp's tensor split: tern runs a model on one GPU (-dev) and the CPU"},
	{"mg", "llama.cpp's main GPU: choose the device with -dev"},
	{"tb", "llama.cpp's batch threads: tern takes one thread count (-t)"},
	{"hf", "llama.cpp's Hugging Face download: tern reads local files (-m PATH)"},
	{"hfr", "llama.cpp's Hugging Face download: tern reads local files (-m PATH)"},
	{"mu", "llama.cpp's model download: tern reads local files (-m PATH)"},
	{"cml", "llama.cpp's ChatML switch: use --chat-template chatml"},
	{"co", "llama.cpp's color switch: use --color always"},
	{"lv", "llama.cpp's log verbosity: use -v"},
	{"ng", "whisper-cli's no-GPU switch: use -dev cpu"},
	{"di", "whisper-cli's stereo diarization: not in tern"},
	{"tdrz", "whisper-cli's tinydiarize: not in tern"},
	{"dtw", "whisper-cli's DTW token timestamps: not in tern"},
};

/* -XYZ that is neither an alias, bundled flags, nor a number attached to
 * a numeric option (-n5): one line, exit 2; llama.cpp's options named as
 * such, a near alias or long option suggested */
static _Noreturn void multi_letter_option(const struct cli_prog *p, const char *a)
{
	for (size_t i = 0; i < sizeof foreign_opts / sizeof *foreign_opts; i++)
		if (!strcmp(a + 1, foreign_opts[i].name))
			cli_usage_error("option '%.60s' is %s", a, foreign_opts[i].why);
	const struct cli_opt *tabs[2] = {p->opts, builtins};
	const char *near = NULL;
	for (int t = 0; t < 2 && !near; t++)
		for (int i = 0; i < n_opts(tabs[t]) && !near; i++)
			if (tabs[t][i].alias && cli_distance(a + 1, tabs[t][i].alias) <= 1)
				near = tabs[t][i].alias;
	if (near) {
		prefix(CLI_RED);
		fprintf(stderr, "unknown option '%.60s' (did you mean '-%s'?)\n", a, near);
		exit(EXIT_USAGE);
	}
	const char *lng = suggest(p, a + 1);
	if (!lng)
		cli_usage_error("unknown option '%.60s'", a);
	prefix(CLI_RED);
	fprintf(stderr, "unknown option '%.60s' (did you mean '--%s'?)\n", a, lng);
	exit(EXIT_USAGE);
}

/* -vq: every letter a flag */
static bool bundled_flags(const struct cli_prog *p, const char *letters)
{
	for (const char *c = letters; *c; c++) {
		const struct cli_opt *f = find_short(p, *c);
		if (!f || f->kind != CLI_FLAG)
			return false;
	}
	return true;
}

/* -n5, -t2: a numeric option with its number attached (POSIX's form;
 * for the other kinds a value is a separate argument) */
static bool number_attached(const struct cli_prog *p, const char *a)
{
	const struct cli_opt *o = find_short(p, a[1]);
	if (!o || (o->kind != CLI_INT && o->kind != CLI_FLOAT))
		return false;
	char *end;
	errno = 0;
	(void)strtod(a + 2, &end);
	return end != a + 2 && !*end;
}

/* Enforce the needs/excludes rules of the options given. */
static void check_rules(const struct cli_prog *p, const bool *given)
{
	const struct cli_opt *o = p->opts;
	int n = n_opts(o);
	for (int i = 0; i < n; i++) {
		if (!given[i])
			continue;
		for (int j = 0; j < n; j++)
			if (given[j] && j > i && excluded(&o[i], &o[j]))
				cli_usage_error("--%s cannot be combined with --%s", o[i].lng, o[j].lng);
		if (!o[i].needs)
			continue;
		bool ok = false;
		for (int j = 0; j < n; j++)
			ok = ok || (given[j] && o[j].lng && list_has(o[i].needs, o[j].lng));
		if (!ok) {
			const char *need[16];
			char store[256], names[512];
			int nn = split_names(o[i].needs, need, store, sizeof store, 16);
			join_names(names, sizeof names, need, nn, "-", " or ");
			cli_usage_error("--%s needs %s", o[i].lng, names);
		}
	}
}

/* Mark o as given when it is one of the program's own options (the rules
 * are about those). */
static void mark_given(const struct cli_prog *p, const struct cli_opt *o, bool *given_opt)
{
	if (o >= p->opts && o < p->opts + n_opts(p->opts))
		given_opt[o - p->opts] = true;
}

/* Parse the option at argv[*i] (advancing *i past its argument). */
static void parse_option(const struct cli_prog *p, int argc, char **argv, int *i, bool *given_opt)
{
	char *a = argv[*i];
	const struct cli_opt *o = NULL;
	const char *val = NULL;
	char given[80];
	if (a[1] == '-') {
		const char *name = a + 2, *eq = strchr(name, '=');
		size_t n = eq ? (size_t)(eq - name) : strlen(name);
		o = find_long(p, name, n);
		snprintf(given, sizeof given, "--%.*s", (int)(n < 60 ? n : 60), name);
		if (!o)
			unknown_option(p, a);
		if (eq) {
			if (o->kind == CLI_FLAG)
				cli_usage_error("option '%s' takes no argument", given);
			val = eq + 1;
		}
	} else if ((o = find_alias(p, a + 1))) {
		snprintf(given, sizeof given, "%.60s", a);
	} else if (a[2] && !bundled_flags(p, a + 1) && !number_attached(p, a)) {
		multi_letter_option(p, a);
	} else {
		o = find_short(p, a[1]);
		snprintf(given, sizeof given, "-%c", a[1]);
		if (!o)
			unknown_option(p, a);
		if (a[2] && o->kind == CLI_FLAG) {
			/* bundled flags: -vq */
			for (const char *c = a + 1; *c; c++) {
				const struct cli_opt *f = find_short(p, *c);
				if (!f || f->kind != CLI_FLAG)
					cli_usage_error("unknown option '%.60s'", a);
				set_value(f, given, NULL);
				mark_given(p, f, given_opt);
			}
			return;
		}
		if (a[2])
			val = a + 2;
	}
	if (o->kind != CLI_FLAG && !val) {
		if (*i + 1 >= argc)
			cli_usage_error("option '%s' needs an argument%s%s", given, o->arg ? " " : "", o->arg ? o->arg : "");
		val = argv[++*i];
	}
	set_value(o, given, val);
	mark_given(p, o, given_opt);
}

/* --help-man, --completion, --help, --version: print; true if one did
 * (the program then exits). */
static bool run_builtins(const struct cli_prog *p)
{
	if (opt_help_man)
		print_man(p);
	else if (opt_completion && strcmp(opt_completion, "bash") == 0)
		print_completion_bash(p);
	else if (opt_completion && strcmp(opt_completion, "zsh") == 0)
		print_completion_zsh(p);
	else if (opt_completion)
		print_completion_fish(p);
	else if (opt_help)
		print_help(p);
	else if (opt_version)
		print_version();
	else
		return false;
	return true;
}

/* cli_parse's positional arguments while it parses (see there): volatile,
 * or the store to a variable nothing reads would be dropped */
static const char **volatile parse_out;

void cli_parse(const struct cli_prog *p, int argc, char **argv, struct cli_common *common,
	       const char ***pos, int *npos)
{
	snprintf(progname, sizeof progname, "tern-%s", p->name);
	g_common = common;
	g_prog = p;
	memset(common, 0, sizeof *common);
	common->color = "auto";
	init_builtins(common);

	const char **out = calloc((size_t)argc + 1, sizeof *out);
	/* reachable from here on: a usage error exits from inside the loop,
	 * where the compiler need no longer keep out anywhere (LeakSanitizer
	 * would call it lost) */
	parse_out = out;
	bool given_opt[128] = {0}; /* by index in p->opts */
	if (!out || n_opts(p->opts) > 128) {
		cli_error(out ? "internal error: more than 128 options" : "out of memory");
		exit(EXIT_RUNTIME);
	}
	int np = 0;
	bool only_pos = false;
	for (int i = 1; i < argc; i++) {
		char *a = argv[i];
		if (only_pos || a[0] != '-' || a[1] == 0)
			out[np++] = a;
		else if (strcmp(a, "--") == 0)
			only_pos = true;
		else
			parse_option(p, argc, argv, &i, given_opt);
	}

	color_mode = common->color;
	if (run_builtins(p)) {
		free(out);
		exit(EXIT_OK);
	}
	check_rules(p, given_opt);
	if (np < p->min_pos)
		cli_usage_error("missing %s", p->pos_name ? p->pos_name : "argument");
	if (p->max_pos >= 0 && np > p->max_pos)
		cli_usage_error("unexpected argument '%.60s'", out[p->max_pos]);
	common->use_color = cli_color(stderr);

	const char *cpu = getenv("TERN_CPU");
	if (cpu && *cpu) {
		int rc = quant_cpu_force(cpu);
		if (rc == TERN_EINVAL)
			cli_usage_error("TERN_CPU='%.40s' is not one of scalar, avx2, avx512, neon, auto", cpu);
		if (rc)
			cli_usage_error("TERN_CPU='%.40s': this CPU cannot run that kernel variant", cpu);
	}
	*pos = out;
	*npos = np;
}

/* ---- output helpers ------------------------------------------------------- */

/* Length of the valid UTF-8 sequence at s, or 0 with *bad = the length of
 * the maximal ill-formed subpart (also at the end of the input). */
static size_t utf8_seq(const unsigned char *s, uint64_t n, size_t *bad)
{
	uint32_t cp; /* a unit is at most 4 bytes: no need to see further */
	size_t k = tern_utf8_decode(s, n < 4 ? (size_t)n : 4, TERN_UTF8_LOSSY, &cp);
	if (cp != TERN_UTF8_BAD)
		return k;
	*bad = k;
	return 0;
}

void cli_json_str(FILE *f, const char *s, uint64_t len)
{
	const unsigned char *p = (const unsigned char *)s;
	fputc('"', f);
	for (uint64_t i = 0; i < len;) {
		size_t bad = 0;
		size_t k = utf8_seq(p + i, len - i, &bad);
		if (!k) {
			fputs("\\ufffd", f);
			i += bad;
			continue;
		}
		unsigned char c = p[i];
		if (k == 1) {
			switch (c) {
			case '"': fputs("\\\"", f); break;
			case '\\': fputs("\\\\", f); break;
			case '\n': fputs("\\n", f); break;
			case '\r': fputs("\\r", f); break;
			case '\t': fputs("\\t", f); break;
			case '\b': fputs("\\b", f); break;
			case '\f': fputs("\\f", f); break;
			default:
				if (c < 0x20 || c == 0x7f)
					fprintf(f, "\\u%04x", c);
				else
					fputc(c, f);
			}
		} else {
			fwrite(p + i, 1, k, f);
		}
		i += k;
	}
	fputc('"', f);
}

void cli_text_str(FILE *f, const char *s, uint64_t len)
{
	const unsigned char *p = (const unsigned char *)s;
	for (uint64_t i = 0; i < len;) {
		size_t bad = 0;
		size_t k = utf8_seq(p + i, len - i, &bad);
		if (!k) {
			for (size_t j = 0; j < bad; j++)
				fprintf(f, "\\x%02x", p[i + j]);
			i += bad;
			continue;
		}
		unsigned char c = p[i];
		if (k == 1 && (c < 0x20 || c == 0x7f || c == '\\' || c == '"')) {
			switch (c) {
			case '"': fputs("\\\"", f); break;
			case '\n': fputs("\\n", f); break;
			case '\r': fputs("\\r", f); break;
			case '\t': fputs("\\t", f); break;
			case '\\': fputs("\\\\", f); break;
			default: fprintf(f, "\\x%02x", c);
			}
		} else {
			fwrite(p + i, 1, k, f);
		}
		i += k;
	}
}

void cli_json_num(FILE *f, double v)
{
	if (v != v || v > 1.7976931348623157e308 || v < -1.7976931348623157e308)
		fputs("null", f);
	else if (v > -9e15 && v < 9e15 && v == (double)(long long)v)
		fprintf(f, "%lld", (long long)v);
	else
		fprintf(f, "%.17g", v);
}

void cli_fmt_f32(char *buf, size_t cap, float v)
{
	/* Shortest %g form that reads back as the same float. */
	for (int prec = 6; prec <= 9; prec++) {
		snprintf(buf, cap, "%.*g", prec, (double)v);
		if (strtof(buf, NULL) == v)
			return;
	}
}

void cli_json_f32(FILE *f, float v)
{
	char b[32];
	if (v != v || v > 3.4028235e38f || v < -3.4028235e38f) {
		fputs("null", f);
		return;
	}
	cli_fmt_f32(b, sizeof b, v);
	fputs(b, f);
}

/* ---- the host ------------------------------------------------------------------ */

int cli_default_threads(void)
{
	cpu_set_t set;
	if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0)
		return CPU_COUNT(&set) > 256 ? 256 : CPU_COUNT(&set);
	long n = sysconf(_SC_NPROCESSORS_ONLN);
	return n < 1 ? 1 : n > 256 ? 256 : (int)n;
}

uint64_t cli_meminfo(const char *key)
{
	FILE *f = fopen("/proc/meminfo", "r");
	if (!f)
		return 0;
	char line[256];
	size_t kl = strlen(key);
	unsigned long long kb = 0;
	while (fgets(line, sizeof line, f))
		if (strncmp(line, key, kl) == 0 && line[kl] == ':' && sscanf(line + kl + 1, "%llu", &kb) == 1)
			break;
	fclose(f);
	return kb > UINT64_MAX / 1024 ? UINT64_MAX : (uint64_t)kb * 1024;
}

uint64_t cli_mem_available(void)
{
	const char *env = getenv("TERN_MEM_AVAILABLE");
	if (env && *env)
		return strtoull(env, NULL, 10);
	return cli_meminfo("MemAvailable");
}

double cli_now_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

bool cli_buf_add(struct cli_buf *b, const char *s, size_t n)
{
	if (n > SIZE_MAX / 2 - b->len)
		return false;
	if (b->len + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 256;
		while (cap < b->len + n + 1)
			cap *= 2;
		char *p = realloc(b->p, cap);
		if (!p)
			return false;
		b->p = p;
		b->cap = cap;
	}
	memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = 0;
	return true;
}
