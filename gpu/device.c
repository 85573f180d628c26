/* device.c - the copy between two backends' buffers (gpu/device.h). */
#include "gpu/device.h"

int tern_backend_copy(const struct tern_buf *src, struct tern_buf *dst, void *staging, tern_err *e)
{
	size_t n = tern_buf_nbytes(src);
	if (n != tern_buf_nbytes(dst))
		return tern_errf(e, TERN_EINVAL, "copy between backends: %zu bytes into %zu", n, tern_buf_nbytes(dst));
	src->be->download(src->be, src, 0, staging, n);
	int rc = src->be->sync(src->be, e);
	if (rc)
		return rc;
	dst->be->upload(dst->be, dst, 0, staging, n);
	return 0;
}
