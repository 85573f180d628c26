/* plan.c - how many layers go to the device (gpu/plan.h). */
#include "gpu/plan.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

uint64_t tern_plan_margin(uint64_t budget)
{
	/* 256 MiB covers what the sizes leave out at -ub 512 on the largest
	 * models: a 70B's widest f32 activation (512 x 28672) is 56 MiB and
	 * its quantized copy and a staging buffer of the same order come
	 * beside it, with per-buffer granularity on ~700 tensors; 1/8 keeps
	 * a small budget (an integrated GPU, --gpu-mem-limit) usable. */
	uint64_t m = budget / 8, cap = (uint64_t)256 << 20;
	return m < cap ? m : cap;
}

static uint64_t sat_add(uint64_t a, uint64_t b)
{
	return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

struct tern_plan tern_plan_for(const struct tern_plan_req *r, int32_t ngl)
{
	struct tern_plan p = {.ngl = ngl, .budget = r->budget};
	p.usable = r->budget - tern_plan_margin(r->budget);
	p.n_dev_layers = ngl < r->n_layer ? ngl : r->n_layer;
	p.output = ngl > r->n_layer;
	for (int32_t il = r->n_layer - p.n_dev_layers; il < r->n_layer; il++) {
		p.weights = sat_add(p.weights, r->weights[il]);
		p.kv = sat_add(p.kv, r->kv[il]);
	}
	p.output_bytes = p.output ? r->output : 0;
	p.scratch = ngl > 0 ? r->scratch : 0;
	p.total = sat_add(sat_add(p.weights, p.kv), sat_add(p.output_bytes, p.scratch));
	return p;
}

int tern_plan_make(const struct tern_plan_req *r, struct tern_plan *p, tern_err *e)
{
	*p = (struct tern_plan){0};
	if (r->n_layer < 0 || (r->n_layer && (!r->weights || !r->kv)) || r->ngl < TERN_NGL_ALL)
		return tern_errf(e, TERN_EINVAL, "plan: a request of %d layers, -ngl %d", r->n_layer, r->ngl);
	const int32_t all = r->n_layer + 1;
	if (r->ngl == TERN_NGL_AUTO) {
		/* the total grows with N: the first that does not fit ends it */
		*p = tern_plan_for(r, 0);
		for (int32_t n = 1; n <= all; n++) {
			struct tern_plan q = tern_plan_for(r, n);
			if (q.total > q.usable)
				break;
			*p = q;
		}
		return 0;
	}
	int32_t ngl = r->ngl == TERN_NGL_ALL || r->ngl > all ? all : r->ngl;
	*p = tern_plan_for(r, ngl);
	if (p->total <= p->usable)
		return 0;
	const double mib = 1048576.0;
	return tern_errf(e, TERN_ENOMEM,
			 "-ngl %d needs %llu bytes (%.1f MiB: weights %.1f, KV cache %.1f, output %.1f, buffers %.1f) "
			 "and %llu are available (%.1f MiB: a budget of %.1f less a margin of %.1f); try -ngl auto",
			 ngl, (unsigned long long)p->total, (double)p->total / mib, (double)p->weights / mib,
			 (double)p->kv / mib, (double)p->output_bytes / mib, (double)p->scratch / mib,
			 (unsigned long long)p->usable, (double)p->usable / mib, (double)p->budget / mib,
			 (double)(p->budget - p->usable) / mib);
}

struct tern_plan tern_plan_retry(const struct tern_plan_req *r, int32_t failed_ngl, uint64_t budget, int32_t step)
{
	struct tern_plan_req q = *r;
	q.budget = budget;
	q.ngl = TERN_NGL_AUTO;
	int32_t next = failed_ngl - (step > 0 ? step : 1);
	if (next < 0)
		next = 0;
	struct tern_plan fit;
	tern_err e = {0};
	if (!tern_plan_make(&q, &fit, &e) && fit.ngl < next)
		next = fit.ngl;
	return tern_plan_for(&q, next);
}

int tern_plan_parse_ngl(const char *s, int32_t *ngl)
{
	if (!s || !*s)
		return TERN_EINVAL;
	if (!strcmp(s, "auto")) {
		*ngl = TERN_NGL_AUTO;
		return 0;
	}
	if (!strcmp(s, "all")) {
		*ngl = TERN_NGL_ALL;
		return 0;
	}
	if (*s < '0' || *s > '9')
		return TERN_EINVAL;
	errno = 0;
	char *end;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || *end || v > INT32_MAX)
		return TERN_EINVAL;
	*ngl = (int32_t)v;
	return 0;
}

int tern_plan_parse_size(const char *s, uint64_t *bytes)
{
	if (!s || ((*s < '0' || *s > '9') && *s != '.'))
		return TERN_EINVAL;
	errno = 0;
	char *end;
	double v = strtod(s, &end);
	if (errno || end == s || !isfinite(v))
		return TERN_EINVAL;
	static const char units[] = "KMGT";
	const char *u = *end ? strchr(units, toupper((unsigned char)*end)) : NULL;
	if (u) {
		v *= pow(1024.0, (double)(u - units + 1));
		end++;
		if (!strcmp(end, "iB") || !strcmp(end, "B"))
			end += strlen(end);
	} else if (!strcmp(end, "B")) {
		end++;
	}
	if (*end || v < 1 || v > (double)((uint64_t)1 << 60))
		return TERN_EINVAL;
	*bytes = (uint64_t)v;
	return 0;
}
