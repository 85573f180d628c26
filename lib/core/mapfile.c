/* mapfile.c - read-only whole-file mapping shared by the file readers. */
#include "lib/core/mapfile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

int tern_map_file(struct tern_map *m, const char *path, tern_err *e)
{
	m->base = NULL;
	m->size = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return tern_errf(e, TERN_EIO, "cannot open: %s", strerror(errno));
	struct stat st;
	int rc = 0;
	if (fstat(fd, &st) != 0)
		rc = tern_errf(e, TERN_EIO, "cannot stat: %s", strerror(errno));
	else if (!S_ISREG(st.st_mode))
		rc = tern_errf(e, TERN_EIO, "not a regular file");
	else if ((uint64_t)st.st_size > SIZE_MAX)
		rc = tern_errf(e, TERN_EIO, "file too large to map");
	else if (st.st_size > 0) {
		void *p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
		if (p == MAP_FAILED) {
			rc = tern_errf(e, TERN_EIO, "cannot map: %s", strerror(errno));
		} else {
			m->base = p;
			m->size = (size_t)st.st_size;
		}
	}
	close(fd);
	return rc;
}

void tern_map_drop(const void *p, size_t n)
{
	long pg = sysconf(_SC_PAGESIZE);
	uintptr_t ps = pg > 0 ? (uintptr_t)pg : 4096, a = ((uintptr_t)p + ps - 1) & ~(ps - 1),
		  b = ((uintptr_t)p + n) & ~(ps - 1);
	/* advice only: a failure leaves the pages mapped, which is still right */
	if (b > a)
		(void)madvise((void *)a, b - a, MADV_DONTNEED);
}

#define HUGE_PAGE ((size_t)2 << 20)

void *tern_alloc_large(size_t n)
{
	void *p = NULL;
	if (n < HUGE_PAGE)
		return posix_memalign(&p, 64, n ? n : 1) ? NULL : p;
	if (posix_memalign(&p, HUGE_PAGE, n))
		return NULL;
#ifdef MADV_HUGEPAGE
	/* advice only, before the first touch: the whole 2 MiB pieces */
	(void)madvise(p, n & ~(HUGE_PAGE - 1), MADV_HUGEPAGE);
#endif
	return p;
}

void tern_unmap(struct tern_map *m)
{
	if (m->base)
		munmap((void *)m->base, m->size);
	m->base = NULL;
	m->size = 0;
}
