/* error.c - error messages and codes shared by the whole library. */
#include "lib/core/error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

int tern_errf(tern_err *e, int code, const char *fmt, ...)
{
	if (e) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(e->msg, sizeof e->msg, fmt, ap);
		va_end(ap);
		e->code = code;
	}
	return code;
}

void tern_err_prefix(tern_err *e, const char *prefix)
{
	char tmp[TERN_ERR_MSG_MAX];
	if (!e || !prefix)
		return;
	size_t pl = strlen(prefix);
	if (pl > sizeof tmp - 3)
		pl = sizeof tmp - 3;
	memcpy(tmp, prefix, pl);
	memcpy(tmp + pl, ": ", 2);
	size_t ml = strlen(e->msg);
	if (ml > sizeof tmp - pl - 3)
		ml = sizeof tmp - pl - 3;
	memcpy(tmp + pl + 2, e->msg, ml);
	tmp[pl + 2 + ml] = 0;
	memcpy(e->msg, tmp, sizeof tmp);
}

void tern_err_prefixf(tern_err *e, const char *fmt, ...)
{
	char prefix[TERN_ERR_MSG_MAX];
	if (!e)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(prefix, sizeof prefix, fmt, ap);
	va_end(ap);
	tern_err_prefix(e, prefix);
}

const char *tern_strerror(int code)
{
	switch (code) {
	case TERN_OK: return "ok";
	case TERN_EIO: return "input/output error";
	case TERN_ENOMEM: return "out of memory";
	case TERN_EFORMAT: return "malformed input";
	case TERN_EUNSUPPORTED: return "unsupported input";
	case TERN_EINVAL: return "invalid argument";
	case TERN_ENOTFOUND: return "not found";
	case TERN_ETYPE: return "wrong type";
	case TERN_ERANGE: return "out of range";
	}
	return "unknown error";
}
