/* bench_moe_bytes.c - the bytes of a model file that one decode step
 * reads, measured through the page cache, against the active-parameter
 * weight size: the check that a mixture of experts reads only the experts
 * its router selected.
 *
 *   bench_moe_bytes MODEL.gguf [THREADS] [--readahead]
 *
 * The file is evicted from the page cache (posix_fadvise DONTNEED; nothing
 * else may hold it open), the model is loaded (which reads the header, not
 * the weights), the file evicted again, then one token goes through the decode path (n_ubatch 1)
 * at position 0. mincore() then says which pages of each tensor came into
 * memory: that is what the step read. The kernel's read-ahead would
 * bring in more than was touched (up to read_ahead_kb around each fault:
 * 8 MiB on some disks), so the model's mapping is marked MADV_RANDOM
 * first (pass --readahead to keep the kernel's default and see what the
 * disk delivers instead). The expectation:
 * every tensor once, one row of the token embedding (unless it is also
 * the output), and of each expert stack n_expert_used / n_expert.
 *
 * Build: cc -O2 -std=c11 -I. scripts/bench_moe_bytes.c build/release/libtern.a
 *        $(pkg-config --libs libpcre2-8 libutf8proc) -lpthread -lm */
#define _DEFAULT_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "lib/cpu/backend.h"
#include "lib/llm/llm.h"
#include "lib/llm/model.h"

static long page;

/* resident bytes of [off, off + n) of the file mapped at base */
static uint64_t resident(const uint8_t *base, uint64_t size, uint64_t off, uint64_t n)
{
	uint64_t a = off / (uint64_t)page * (uint64_t)page, b = off + n;
	if (b > size)
		b = size;
	size_t np = (size_t)((b - a + (uint64_t)page - 1) / (uint64_t)page);
	unsigned char *v = malloc(np ? np : 1);
	uint64_t r = 0;
	if (np && mincore((void *)(base + a), (size_t)(b - a), v) == 0)
		for (size_t i = 0; i < np; i++)
			r += (v[i] & 1) ? (uint64_t)page : 0;
	free(v);
	return r;
}

static int is_stack(const struct tern_model *m, const struct tern_tensor_view *t)
{
	for (uint32_t il = 0; il < m->cfg.n_layer; il++) {
		const struct tern_model_layer *L = &m->w.layers[il];
		if (t == L->ffn_gate_exps || t == L->ffn_up_exps || t == L->ffn_down_exps ||
		    t == L->ffn_gate_up_exps)
			return 1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: bench_moe_bytes MODEL.gguf [THREADS]\n");
		return 2;
	}
	page = sysconf(_SC_PAGESIZE);
	int fd = open(argv[1], O_RDONLY);
	if (fd < 0) {
		perror(argv[1]);
		return 1;
	}
	uint64_t size = (uint64_t)lseek(fd, 0, SEEK_END);
	posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
	const uint8_t *base = mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0);
	if (base == MAP_FAILED) {
		perror("mmap");
		return 1;
	}
	struct tern_model *m = NULL;
	tern_err e = {0};
	if (tern_model_open(&m, argv[1], &e)) {
		fprintf(stderr, "%s\n", e.msg);
		return 1;
	}
	struct tern_backend *be = NULL;
	struct cpu_backend_opts bo = {.n_threads = argc > 2 ? atoi(argv[2]) : 2, .max_tokens = 1};
	struct tern_llm *l = NULL;
	struct tern_llm_opts o = tern_llm_opts_default();
	o.n_ctx = 16;
	o.n_ubatch = 1;
	if (cpu_backend_new(&be, &bo, &e) || tern_llm_new(&l, m, be, &o, &e)) {
		fprintf(stderr, "%s\n", e.msg);
		return 1;
	}
	const tern_mf *mf = m->mf;
	uint64_t n = tern_mf_n_tensors(mf), d0 = tern_mf_data_offset(mf);
	if (!(argc > 3 && strcmp(argv[3], "--readahead") == 0) && n) {
		/* the model's own mapping: where its first tensor's offset says */
		const struct tern_tensor_view *t0 = tern_mf_tensor_at(mf, 0);
		uintptr_t mb = (uintptr_t)t0->data - (uintptr_t)(d0 + t0->offset);
		uintptr_t a = mb / (uintptr_t)page * (uintptr_t)page;
		if (madvise((void *)a, (size_t)(size + (mb - a)), MADV_RANDOM) != 0)
			perror("madvise");
	}
	/* the load read the header, and the kernel's read-ahead may still be
	 * bringing in what follows it: wait, then evict everything again */
	sleep(1);
	posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
	uint64_t *before = calloc(n, sizeof *before);
	for (uint64_t i = 0; i < n; i++) {
		const struct tern_tensor_view *t = tern_mf_tensor_at(mf, i);
		before[i] = resident(base, size, d0 + t->offset, t->nbytes);
	}
	int32_t tok = 1;
	if (tern_llm_decode(l, &tok, 1, &e)) {
		fprintf(stderr, "%s\n", e.msg);
		return 1;
	}
	const struct tern_model_config *c = &m->cfg;
	double read = 0, expect = 0, read_exp = 0, expect_exp = 0, all = 0;
	for (uint64_t i = 0; i < n; i++) {
		const struct tern_tensor_view *t = tern_mf_tensor_at(mf, i);
		double got = (double)resident(base, size, d0 + t->offset, t->nbytes) - (double)before[i];
		double want = (double)t->nbytes;
		all += want;
		if (t == m->w.token_embd && !c->tied_output)
			want /= (double)t->ne[1];
		if (is_stack(m, t)) {
			want = want / c->moe.n_expert * c->moe.n_expert_used;
			read_exp += got;
			expect_exp += want;
		}
		read += got;
		expect += want;
	}
	printf("%s: %u of %u experts per token\n", argv[1], c->moe.n_expert_used, c->moe.n_expert);
	printf("  file weights        %10.2f MiB\n", all / 1048576);
	printf("  active weights      %10.2f MiB (expert stacks %.2f MiB)\n", expect / 1048576, expect_exp / 1048576);
	printf("  read by one step    %10.2f MiB (expert stacks %.2f MiB)\n", read / 1048576, read_exp / 1048576);
	printf("  read / active       %10.3f (expert stacks %.3f)\n", read / expect,
	       expect_exp > 0 ? read_exp / expect_exp : 0.0);
	tern_llm_free(l);
	tern_backend_free(be);
	tern_model_free(m);
	free(before);
	munmap((void *)base, size);
	close(fd);
	return 0;
}
