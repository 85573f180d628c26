/* registry.c - the device registry and the backend factory every program
 * goes through (gpu/registry.h): the CPU, the Vulkan devices when built
 * with TERN_HAVE_VULKAN (CUDA's join the same way), and the test device. */
#include "gpu/registry.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/cpu/backend.h"
#include "quant/cpu.h"
#ifdef TERN_HAVE_VULKAN
#include "gpu/vulkan/vk_backend.h"
#endif
#ifdef TERN_HAVE_CUDA
#include "gpu/cuda/cu_backend.h"
#endif

/* ---- the CPU ----------------------------------------------------------------- */

/* A "Key: value" line of a /proc file (cpuinfo's "model name",
 * meminfo's "MemAvailable") into out; false when absent. */
static bool proc_field(const char *path, const char *key, char *out, size_t cap)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return false;
	char line[512];
	size_t kl = strlen(key);
	bool found = false;
	while (!found && fgets(line, sizeof line, f)) {
		if (strncmp(line, key, kl) || (line[kl] != ':' && line[kl] != ' ' && line[kl] != '\t'))
			continue;
		const char *v = strchr(line + kl, ':');
		if (!v)
			continue;
		for (v++; *v == ' ' || *v == '\t'; v++)
			;
		snprintf(out, cap, "%s", v);
		out[strcspn(out, "\n")] = 0;
		found = true;
	}
	fclose(f);
	return found;
}

/* a /proc/meminfo entry in bytes (its unit is kB), 0 when unknown */
static uint64_t meminfo(const char *key)
{
	char v[64];
	return proc_field("/proc/meminfo", key, v, sizeof v) ? strtoull(v, NULL, 10) * 1024 : 0;
}

static void cpu_info(struct tern_device_info *d)
{
	*d = (struct tern_device_info){0};
	snprintf(d->name, sizeof d->name, "cpu");
	if (!proc_field("/proc/cpuinfo", "model name", d->desc, sizeof d->desc))
		snprintf(d->desc, sizeof d->desc, "CPU");
	const struct quant_cpu *f = quant_cpu();
	enum quant_isa isa = quant_isa();
	snprintf(d->driver, sizeof d->driver, "tern %s", TERN_VERSION);
	snprintf(d->api, sizeof d->api, "%s", quant_isa_name(isa));
	long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGESIZE);
	d->mem_total = meminfo("MemTotal");
	if (!d->mem_total && pages > 0 && psz > 0)
		d->mem_total = (uint64_t)pages * (uint64_t)psz;
	d->mem_budget = meminfo("MemAvailable");
	if (!d->mem_budget)
		d->mem_budget = d->mem_total;
	d->max_alloc = d->mem_total;
	d->max_binding = d->mem_total;
	d->fp16 = f->f16c || f->neon;
	d->int_dot = f->avx512vnni || f->dotprod;
	d->uma = true;
	/* f32 lanes of one vector register: what a subgroup is to a GPU */
	d->subgroup = isa == QUANT_ISA_AVX512 ? 16 : isa == QUANT_ISA_AVX2 ? 8 : isa == QUANT_ISA_NEON ? 4 : 1;
}

static int cpu_open(const struct tern_device_opts *o, struct tern_backend **be, tern_err *e)
{
	struct cpu_backend_opts co = {.n_threads = o->n_threads, .max_tokens = o->max_tokens,
				      .keep_layout = o->keep_layout};
	return (o->reference ? cpu_ref_backend_new : cpu_backend_new)(be, &co, e);
}

/* ---- the test device ----------------------------------------------------------- */

/* The optimized CPU backend behind a table of its own whose buffer calls
 * count live bytes (tern_device_opts.test_alloc_limit). Its ops run the
 * CPU's with this table: they read only be->impl and be->max_tokens,
 * which are the CPU's. */
struct test_dev {
	struct tern_backend be; /* first: the table the ops receive */
	struct tern_backend *cpu;
	uint64_t live, limit;
	struct test_live {
		const void *mem; /* a buffer's storage and offset, as buf_free sees it again */
		size_t offset;
		uint64_t bytes;
	} *bufs;
	size_t n, cap;
};

static int test_count(struct test_dev *t, const struct tern_buf *b, tern_err *e)
{
	uint64_t bytes = tern_buf_nbytes(b);
	if (t->limit && t->live + bytes > t->limit)
		return tern_errf(e, TERN_ENOMEM, "test0: %llu bytes more would exceed the injected limit of %llu "
				 "(%llu in use)", (unsigned long long)bytes, (unsigned long long)t->limit,
				 (unsigned long long)t->live);
	if (t->n == t->cap) {
		size_t cap = t->cap ? 2 * t->cap : 64;
		struct test_live *nb = realloc(t->bufs, cap * sizeof *nb);
		if (!nb)
			return tern_errf(e, TERN_ENOMEM, "test0: out of memory");
		t->bufs = nb;
		t->cap = cap;
	}
	t->bufs[t->n++] = (struct test_live){b->mem, b->offset, bytes};
	t->live += bytes;
	return 0;
}

static int test_buf_alloc(struct tern_backend *be, struct tern_buf *b, uint32_t type, int n_dims, const int64_t *ne,
			  tern_err *e)
{
	struct test_dev *t = (struct test_dev *)be;
	int rc = t->cpu->buf_alloc(be, b, type, n_dims, ne, e);
	if (!rc && (rc = test_count(t, b, e)) != 0)
		t->cpu->buf_free(be, b);
	return rc;
}

static int test_buf_weight(struct tern_backend *be, struct tern_buf *b, const struct tern_tensor_view *tv, tern_err *e)
{
	struct test_dev *t = (struct test_dev *)be;
	int rc = t->cpu->buf_weight(be, b, tv, e);
	if (!rc && (rc = test_count(t, b, e)) != 0)
		t->cpu->buf_free(be, b);
	return rc;
}

/* A view made from a counted buffer may be freed first (lib/llm frees
 * the halves of a merged stack before the stack): whichever comes first
 * releases the entry, once. */
static void test_buf_free(struct tern_backend *be, struct tern_buf *b)
{
	struct test_dev *t = (struct test_dev *)be;
	for (size_t i = 0; b->mem && i < t->n; i++)
		if (t->bufs[i].mem == b->mem && t->bufs[i].offset == b->offset) {
			t->live -= t->bufs[i].bytes;
			t->bufs[i] = t->bufs[--t->n];
			break;
		}
	t->cpu->buf_free(be, b);
}

static void test_free(struct tern_backend *be)
{
	struct test_dev *t = (struct test_dev *)be;
	tern_backend_free(t->cpu);
	free(t->bufs);
	free(t);
}

static void test_info(const struct tern_device_opts *o, struct tern_device_info *d)
{
	cpu_info(d);
	snprintf(d->name, sizeof d->name, "test0");
	snprintf(d->desc, sizeof d->desc, "the CPU backend as a device (tests)");
	d->mem_total = d->mem_budget = d->max_alloc = d->max_binding = o->test_mem;
	d->uma = false;
}

static int test_open(const struct tern_device_opts *o, struct tern_backend **be, tern_err *e)
{
	struct test_dev *t = calloc(1, sizeof *t);
	if (!t)
		return tern_errf(e, TERN_ENOMEM, "test0: out of memory");
	struct cpu_backend_opts co = {.n_threads = o->n_threads, .max_tokens = o->max_tokens};
	int rc = cpu_backend_new(&t->cpu, &co, e);
	if (rc) {
		free(t);
		return rc;
	}
	t->be = *t->cpu;
	t->be.name = "test0";
	t->be.free = test_free;
	t->be.buf_alloc = test_buf_alloc;
	t->be.buf_weight = test_buf_weight;
	t->be.buf_free = test_buf_free;
	t->limit = o->test_alloc_limit;
	*be = &t->be;
	return 0;
}

/* ---- the registry ---------------------------------------------------------------- */

const char *tern_device_backends(void)
{
	return "cpu"
#ifdef TERN_HAVE_CUDA
	       " cuda"
#endif
#ifdef TERN_HAVE_VULKAN
	       " vulkan"
#endif
		;
}

void tern_device_why_none(char *out, size_t cap)
{
	size_t n = 0;
	if (cap)
		out[0] = 0;
	tern_err e = {0};
	(void)e;
	(void)n;
#ifdef TERN_HAVE_CUDA
	if (cuda_device_count(&e) == 0 && n < cap)
		n += (size_t)snprintf(out + n, cap - n, "CUDA: no device (%s)", e.msg + (strncmp(e.msg, "cuda: ", 6) ? 0 : 6));
#endif
#ifdef TERN_HAVE_VULKAN
	e = (tern_err){0};
	if (vk_device_count(&e) == 0 && n < cap)
		n += (size_t)snprintf(out + n, cap - n, "%sVulkan: no device (%s)", n ? "; " : "", e.msg);
#endif
}

bool tern_device_is_cpu(const struct tern_device_info *d)
{
	return strcmp(d->name, "cpu") == 0;
}

uint64_t tern_device_budget(const struct tern_device_info *d, uint64_t limit)
{
	return limit && limit < d->mem_budget ? limit : d->mem_budget;
}

int tern_device_list(struct tern_device_info *out, int cap, const struct tern_device_opts *o, tern_err *e)
{
	struct tern_device_info all[TERN_DEVICE_MAX];
	int n = 0;
	cpu_info(&all[n++]);
#ifdef TERN_HAVE_CUDA
	/* before Vulkan's: "auto" keeps the first of equal budgets, and an
	 * NVIDIA GPU seen by both runs CUDA's kernels */
	int ncu = cuda_device_count(NULL);
	for (int i = 0; i < ncu && n < TERN_DEVICE_MAX - 1; i++) {
		int rc = cuda_device_info(i, &all[n], e);
		if (rc)
			return rc;
		n++;
	}
#endif
#ifdef TERN_HAVE_VULKAN
	/* no loader or no device: a count of 0, not an error */
	int nvk = vk_device_count(NULL);
	for (int i = 0; i < nvk && n < TERN_DEVICE_MAX - 1; i++) {
		int rc = vk_device_info(i, &all[n], e);
		if (rc)
			return rc;
		snprintf(all[n].name, sizeof all[n].name, "vulkan%d", i);
		n++;
	}
#endif
	if (o && o->test_mem)
		test_info(o, &all[n++]);
	if (o && o->extra && n < TERN_DEVICE_MAX) {
		int rc = o->extra->info(0, &all[n], e);
		if (rc)
			return rc;
		snprintf(all[n].name, sizeof all[n].name, "%s", o->extra->name);
		n++;
	}
	int k = n < cap ? n : cap;
	if (out && k > 0)
		memcpy(out, all, sizeof *out * (size_t)k);
	return n;
}

int tern_device_find(const char *name, const struct tern_device_opts *o, struct tern_device_info *out, tern_err *e)
{
	struct tern_device_info all[TERN_DEVICE_MAX];
	int n = tern_device_list(all, TERN_DEVICE_MAX, o, e);
	if (n < 0)
		return n;
	int best = -1;
	for (int i = 0; i < n; i++) {
		if (!strcmp(name, "auto") ? !tern_device_is_cpu(&all[i]) && !all[i].software &&
						    (best < 0 || all[i].mem_budget > all[best].mem_budget)
					  : !strcmp(name, all[i].name))
			best = i;
	}
	if (best < 0 && !strcmp(name, "auto"))
		best = 0;
	if (best >= 0) {
		*out = all[best];
		return 0;
	}
	char names[TERN_DEVICE_MAX * 34] = "";
	for (int i = 0; i < n; i++) {
		size_t l = strlen(names);
		snprintf(names + l, sizeof names - l, "%s%.31s", i ? ", " : "", all[i].name);
	}
	return tern_errf(e, TERN_ENOTFOUND, "no device '%.32s' (present: %s; backends built in: %s)", name, names,
			 tern_device_backends());
}

int tern_backend_read_bandwidth(struct tern_backend *be, double *gbps, tern_err *e)
{
	*gbps = 0;
#ifdef TERN_HAVE_VULKAN
	if (!strncmp(be->name, "vulkan", 6))
		return vk_read_bandwidth(be, gbps, e);
#endif
#ifdef TERN_HAVE_CUDA
	if (!strncmp(be->name, "cuda", 4))
		return cuda_read_bandwidth(be, gbps, e);
#endif
	return tern_errf(e, TERN_EUNSUPPORTED, "%s: no read-bandwidth probe", be->name);
}

bool tern_backend_step_stats(struct tern_backend *be, struct tern_step_stats *out)
{
	*out = (struct tern_step_stats){0};
#ifdef TERN_HAVE_CUDA
	if (be && !strncmp(be->name, "cuda", 4)) {
		struct cuda_stats s;
		cuda_get_stats(be, &s);
		*out = (struct tern_step_stats){s.steps, s.replays, s.captures, s.step_launches,
						s.graphs ? "CUDA graph" : "plain launches", s.capture_failures > 0};
		return true;
	}
#endif
#ifdef TERN_HAVE_VULKAN
	if (be && !strncmp(be->name, "vulkan", 6)) {
		struct vk_stats s;
		vk_get_stats(be, &s);
		*out = (struct tern_step_stats){s.replays + s.recorded, s.replays, s.recorded, s.step_dispatches,
						"command buffer", false};
		return true;
	}
#endif
	(void)be;
	return false;
}

int tern_backend_open(const char *name, const struct tern_device_opts *o, struct tern_backend **be, tern_err *e)
{
	*be = NULL;
	struct tern_device_info d;
	int rc = tern_device_find(name, o, &d, e);
	if (rc)
		return rc;
	if (tern_device_is_cpu(&d))
		rc = cpu_open(o, be, e);
	else if (!strcmp(d.name, "test0"))
		rc = test_open(o, be, e);
	else if (o->extra && !strcmp(d.name, o->extra->name))
		rc = o->extra->open(o, be, e);
#ifdef TERN_HAVE_CUDA
	else if (!strncmp(d.name, "cuda", 4)) {
		struct cuda_backend_opts co = {.device = atoi(d.name + 4), .max_tokens = o->max_tokens,
					       .no_graphs = o->no_graphs};
		rc = cuda_backend_new(be, &co, e);
	}
#endif
#ifdef TERN_HAVE_VULKAN
	else if (!strncmp(d.name, "vulkan", 6)) {
		struct vk_backend_opts vo = {.device = atoi(d.name + 6), .max_tokens = o->max_tokens,
					     .validation = o->validation, .profile = o->profile,
					     .int_dot = o->int_dot};
		rc = vk_backend_new(be, &vo, e);
	}
#endif
	else
		rc = tern_errf(e, TERN_EUNSUPPORTED, "no backend for this device");
	if (rc) {
		*be = NULL;
		tern_err_prefixf(e, "device %s (%.64s)", d.name, d.desc);
	}
	return rc;
}
