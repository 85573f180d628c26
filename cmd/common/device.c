/* device.c - device choice, the plan and the load with retries, shared
 * by the model tools (cmd/common/device.h). */
#include "cmd/common/device.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct dev_opts dev_o;

const char *dev_fmt_bytes(char *buf, size_t cap, uint64_t v)
{
	static const char *const unit[] = {"B", "KiB", "MiB", "GiB", "TiB"};
	double x = (double)v;
	int u = 0;
	while (x >= 1024 && u < 4) {
		x /= 1024;
		u++;
	}
	snprintf(buf, cap, u ? "%.1f %s" : "%.0f %s", x, unit[u]);
	return buf;
}

/* TERN_TEST_DEVICE="SIZE[,LIMIT]": the test device of gpu/device.h with
 * SIZE of memory, refusing allocations past LIMIT (the CLI tests). The
 * library reads no environment: the programs hand it over here. */
static void test_device_env(struct tern_device_opts *o)
{
	const char *s = getenv("TERN_TEST_DEVICE");
	if (!s || !*s)
		return;
	char mem[64] = "", lim[64] = "";
	const char *comma = strchr(s, ',');
	snprintf(mem, sizeof mem, "%.*s", comma ? (int)(comma - s) : (int)strlen(s), s);
	if (comma)
		snprintf(lim, sizeof lim, "%s", comma + 1);
	if (tern_plan_parse_size(mem, &o->test_mem) || (comma && tern_plan_parse_size(lim, &o->test_alloc_limit)))
		cli_usage_error("TERN_TEST_DEVICE: '%.60s' is not SIZE[,LIMIT]", s);
}

int dev_check(const char *name, tern_err *e)
{
	struct tern_device_opts o = {.n_threads = 1, .max_tokens = 1};
	test_device_env(&o);
	struct tern_device_info d;
	return tern_device_find(name, &o, &d, e);
}

static void list_devices(void)
{
	struct tern_device_opts o = {.n_threads = 1, .max_tokens = 1};
	test_device_env(&o);
	struct tern_device_info d[TERN_DEVICE_MAX];
	tern_err e = {0};
	int n = tern_device_list(d, TERN_DEVICE_MAX, &o, &e);
	if (n < 0)
		exit(cli_fail(NULL, n, &e));
	char b1[32], b2[32], b3[32];
	for (int i = 0; i < n; i++) {
		printf("%-8s %s\n", d[i].name, d[i].desc);
		printf("         driver %s, API %s, memory %s free of %s (largest allocation %s)%s%s\n", d[i].driver,
		       d[i].api, dev_fmt_bytes(b1, sizeof b1, d[i].mem_budget), dev_fmt_bytes(b2, sizeof b2, d[i].mem_total),
		       dev_fmt_bytes(b3, sizeof b3, d[i].max_alloc), d[i].uma ? ", unified" : "",
		       d[i].software ? ", software (never chosen by auto)" : "");
		printf("         fp16 %s, integer dot %s, cooperative matrix %s, subgroup %d\n", d[i].fp16 ? "yes" : "no",
		       d[i].int_dot ? "yes" : "no", d[i].coopmat ? "yes" : "no", d[i].subgroup);
	}
	fflush(stdout);
	exit(ferror(stdout) ? EXIT_RUNTIME : EXIT_OK);
}

void dev_opts_check(const struct cli_common *cc)
{
	(void)cc;
	int32_t ngl;
	uint64_t lim;
	if (dev_o.ngl && tern_plan_parse_ngl(dev_o.ngl, &ngl))
		cli_usage_error("option '-ngl': '%.40s' is not a layer count, auto or all", dev_o.ngl);
	if (dev_o.mem_limit && tern_plan_parse_size(dev_o.mem_limit, &lim))
		cli_usage_error("option '--gpu-mem-limit': '%.40s' is not a size such as 512M or 2G", dev_o.mem_limit);
	if (dev_o.device && !*dev_o.device)
		cli_usage_error("option '-dev': the name is empty (cpu, auto, vulkan0, ...)");
	if (dev_o.list)
		list_devices();
}

static void plan_drop(struct dev_ctx *d);

void dev_close(struct dev_ctx *d)
{
	plan_drop(d);
	tern_backend_free(d->dev);
	tern_backend_free(d->host);
	d->dev = d->host = NULL;
}

int dev_open(struct dev_ctx *d, const char *device, const char *ngl, const struct tern_device_opts *o, tern_err *e)
{
	*d = (struct dev_ctx){.ngl = TERN_NGL_AUTO};
	const char *name = device ? device : dev_o.device ? dev_o.device : "auto";
	const char *n = ngl ? ngl : dev_o.ngl;
	if (n && tern_plan_parse_ngl(n, &d->ngl))
		return tern_errf(e, TERN_EINVAL, "-ngl '%.40s' is not a layer count, auto or all", n);
	if (dev_o.mem_limit && tern_plan_parse_size(dev_o.mem_limit, &d->limit))
		return tern_errf(e, TERN_EINVAL, "--gpu-mem-limit '%.40s' is not a size", dev_o.mem_limit);
	d->opts = *o;
	d->auto_dev = !strcmp(name, "auto");
	test_device_env(&d->opts);
	const char *prof = getenv("TERN_GPU_PROFILE"); /* developers: time per shader on stderr at exit */
	d->opts.profile = prof && *prof && strcmp(prof, "0") != 0;
	const char *idot = getenv("TERN_VK_INT_DOT"); /* developers: Vulkan's integer dot where not accelerated */
	d->opts.int_dot = idot && *idot && strcmp(idot, "0") != 0;
	const char *graphs = getenv("TERN_CUDA_GRAPHS"); /* developers: 0 launches CUDA steps without graphs */
	d->opts.no_graphs = graphs && !strcmp(graphs, "0");
	int rc = tern_device_find(name, &d->opts, &d->info, e);
	if (!rc)
		rc = tern_backend_open("cpu", &d->opts, &d->host, e);
	if (!rc && !tern_device_is_cpu(&d->info))
		rc = tern_backend_open(d->info.name, &d->opts, &d->dev, e);
	if (rc && d->host && !strcmp(name, "auto")) {
		/* auto never fails for want of a GPU: a device that cannot start
		 * (a driver too old for the shaders) leaves the CPU */
		cli_warn("%s; running on the CPU", e->msg);
		rc = tern_device_find("cpu", &d->opts, &d->info, e);
	}
	if (rc)
		dev_close(d);
	return rc;
}

/* the -v line of a plan */
static void plan_info(const struct dev_ctx *d, const struct cli_common *cc, uint32_t n_layer)
{
	char ask[16], tot[32], use[32], w[32], kv[32], out[32], s[32];
	snprintf(ask, sizeof ask, d->ngl == TERN_NGL_AUTO ? "auto" : d->ngl == TERN_NGL_ALL ? "all" : "%d", d->ngl);
	const struct tern_plan *p = &d->plan;
	cli_info(cc,
		 "device %s (%s): -ngl %s: %d of %u layers%s on it%s, %s of %s usable (weights %s, KV cache %s, "
		 "output %s, buffers %s)",
		 d->info.name, d->info.desc, ask, p->n_dev_layers, n_layer, p->output ? " and the output head" : "",
		 d->retries ? " after retries" : "", dev_fmt_bytes(tot, sizeof tot, p->total),
		 dev_fmt_bytes(use, sizeof use, p->usable), dev_fmt_bytes(w, sizeof w, p->weights),
		 dev_fmt_bytes(kv, sizeof kv, p->kv), dev_fmt_bytes(out, sizeof out, p->output_bytes),
		 dev_fmt_bytes(s, sizeof s, p->scratch));
}

static void plan_drop(struct dev_ctx *d)
{
	free((void *)d->req.weights);
	d->req = (struct tern_plan_req){0};
	d->planned = false;
}

int dev_llm_plan(struct dev_ctx *d, const struct tern_model *m, const struct tern_llm_opts *lo, tern_err *e)
{
	plan_drop(d);
	d->plan = (struct tern_plan){0};
	if (!d->dev) {
		d->planned = true;
		return 0;
	}
	const uint32_t nl = m->cfg.n_layer;
	uint64_t *w = calloc(2 * (size_t)(nl ? nl : 1), sizeof *w), out_b = 0, scratch = 0;
	if (!w)
		return tern_errf(e, TERN_ENOMEM, "out of memory");
	int64_t mt = d->dev->max_tokens < d->host->max_tokens ? d->dev->max_tokens : d->host->max_tokens;
	int rc = tern_llm_offload_sizes(m, lo, mt, w, w + nl, &out_b, &scratch, e);
	d->req = (struct tern_plan_req){.n_layer = (int32_t)nl, .weights = w, .kv = w + nl, .output = out_b,
					.scratch = scratch, .budget = tern_device_budget(&d->info, d->limit),
					.ngl = d->ngl};
	if (!rc && (rc = tern_plan_make(&d->req, &d->plan, e)) != 0)
		tern_err_prefixf(e, "device %s", d->info.name);
	if (rc)
		plan_drop(d);
	else
		d->planned = true;
	return rc;
}

int dev_llm_new(struct dev_ctx *d, const struct cli_common *cc, const struct tern_model *m,
		struct tern_llm_opts *lo, struct tern_llm **out, tern_err *e)
{
	*out = NULL;
	d->retries = 0;
	lo->dev = NULL;
	lo->n_dev_layers = 0;
	lo->dev_output = false;
	int rc = d->planned ? 0 : dev_llm_plan(d, m, lo, e);
	if (rc)
		return rc;
	if (!d->dev) {
		plan_drop(d);
		char why[512] = "";
		if (d->auto_dev)
			tern_device_why_none(why, sizeof why);
		cli_info(cc, "device %s (%s): every layer on the CPU%s%s", d->info.name, d->info.desc, why[0] ? "; " : "",
			 why);
		return tern_llm_new(out, m, d->host, lo, e);
	}
	for (int32_t step = 1; !rc; step = step < (1 << 20) ? 2 * step : step) {
		lo->dev = d->dev;
		lo->n_dev_layers = d->plan.n_dev_layers;
		lo->dev_output = d->plan.output;
		rc = tern_llm_new(out, m, d->host, lo, e);
		if (rc != TERN_ENOMEM || d->plan.ngl == 0)
			break;
		/* the budget promised more than the device gives: fewer layers,
		 * as many as its budget asked again holds, at least step fewer
		 * (1, 2, 4, ...), down to none */
		struct tern_device_info now;
		tern_err qe = {0};
		uint64_t budget = tern_device_find(d->info.name, &d->opts, &now, &qe)
					  ? d->req.budget
					  : tern_device_budget(&now, d->limit);
		struct tern_plan next = tern_plan_retry(&d->req, d->plan.ngl, budget, step);
		cli_warn("%s: loading with -ngl %d failed (%s): loading again with -ngl %d", d->info.name, d->plan.ngl,
			 e->msg, next.ngl);
		d->plan = next;
		d->retries++;
		rc = 0;
	}
	plan_drop(d);
	if (!rc)
		plan_info(d, cc, m->cfg.n_layer);
	return rc;
}

int dev_whole(struct dev_ctx *d, const struct cli_common *cc, uint64_t bytes, struct tern_backend **be,
	      tern_err *e)
{
	*be = d->host;
	d->plan = (struct tern_plan){0};
	if (!d->dev) {
		cli_info(cc, "device %s (%s)", d->info.name, d->info.desc);
		return 0;
	}
	uint64_t budget = tern_device_budget(&d->info, d->limit), usable = budget - tern_plan_margin(budget);
	char need[32], avail[32];
	dev_fmt_bytes(need, sizeof need, bytes);
	dev_fmt_bytes(avail, sizeof avail, usable);
	if (d->ngl == 0) {
		cli_info(cc, "device %s: -ngl 0: the model runs on the CPU", d->info.name);
		return 0;
	}
	if (bytes > usable && d->ngl == TERN_NGL_AUTO) {
		cli_info(cc, "device %s (%s): the model needs %s and %s are usable: it runs on the CPU", d->info.name,
			 d->info.desc, need, avail);
		return 0;
	}
	if (bytes > usable)
		return tern_errf(e, TERN_ENOMEM,
				 "device %s: the model needs %llu bytes (%s) and %llu are available (%s); it runs "
				 "whole on one device: try -ngl 0 or -dev cpu",
				 d->info.name, (unsigned long long)bytes, need, (unsigned long long)usable, avail);
	*be = d->dev;
	d->plan.ngl = TERN_NGL_ALL;
	d->plan.total = bytes;
	d->plan.budget = budget;
	d->plan.usable = usable;
	cli_info(cc, "device %s (%s): the whole model, %s of %s usable", d->info.name, d->info.desc, need, avail);
	return 0;
}

bool dev_whole_retry(struct dev_ctx *d, int rc, struct tern_backend **be, tern_err *e)
{
	if (rc != TERN_ENOMEM || !d->dev || *be != d->dev)
		return false;
	cli_warn("%s: loading the model failed (%s): loading it again on the CPU", d->info.name, e->msg);
	*be = d->host;
	d->plan = (struct tern_plan){0};
	d->retries++;
	*e = (tern_err){0};
	return true;
}

void dev_report_steps(const struct dev_ctx *d, const struct cli_common *cc)
{
	struct tern_step_stats st;
	if (!d->dev || !tern_backend_step_stats(d->dev, &st) || !st.steps)
		return;
	if (st.capture_failed)
		cli_info(cc, "device %s: a decode step could not be captured into a %s: %llu steps ran as plain launches, "
			 "%llu kernels a step", d->info.name, "CUDA graph", (unsigned long long)st.steps,
			 (unsigned long long)st.launches);
	else
		cli_info(cc, "device %s: %llu decode steps, %llu replayed from a %s, %llu recorded; %llu kernels a step",
			 d->info.name, (unsigned long long)st.steps, (unsigned long long)st.replays, st.how,
			 (unsigned long long)st.recorded, (unsigned long long)st.launches);
}
