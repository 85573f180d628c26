/* error.h - the library's error contract.
 *
 * Library functions return 0 on success or a negative TERN_E* code, and
 * write a one-line human message (naming the file, offset, key or tensor)
 * into a caller-owned tern_err. Nothing in the library prints or exits; the
 * executables turn codes into exit statuses (cmd/common/cli.h). */
#ifndef TERN_ERROR_H
#define TERN_ERROR_H

#include <stddef.h>

enum {
	TERN_OK = 0,
	TERN_EIO = -1,          /* cannot open / read / map / write a file */
	TERN_ENOMEM = -2,       /* out of memory */
	TERN_EFORMAT = -3,      /* malformed input data */
	TERN_EUNSUPPORTED = -4, /* well-formed but not supported (version, type) */
	TERN_EINVAL = -5,       /* bad argument from the caller */
	TERN_ENOTFOUND = -6,    /* key, tensor or token not present */
	TERN_ETYPE = -7,        /* present, but of another type */
	TERN_ERANGE = -8,       /* value out of the accepted range */
};

#define TERN_ERR_MSG_MAX 512

typedef struct tern_err {
	int code;                    /* last code set, 0 if none */
	char msg[TERN_ERR_MSG_MAX];  /* one line, no trailing newline */
} tern_err;

/* Record code and a printf-style message in e (e may be NULL); returns code
 * so that callers can write `return tern_errf(e, TERN_EFORMAT, ...)`. */
int tern_errf(tern_err *e, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Prefix the message already in e with "prefix: ". Messages form a
 * context chain, outermost first ("model.gguf: tensor 'w': dimension 1 is
 * 0"): a callee says what went wrong where it looked (an offset, a field),
 * and each caller that knows more puts its context in front - the tensor
 * or key it was reading, then the path it was given. A function that
 * takes a path does not repeat it; its caller prefixes it. */
void tern_err_prefix(tern_err *e, const char *prefix);
void tern_err_prefixf(tern_err *e, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Short name of a code, e.g. "malformed input". */
const char *tern_strerror(int code);

#endif
