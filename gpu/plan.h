/* plan.h - the memory planner of partial offload (DESIGN.md, "Backends"):
 * before anything is allocated, how many layers go to the device. Pure
 * functions of sizes the model computes (lib/llm: tern_llm_offload_sizes)
 * and the device's budget (gpu/device.h), shared by every GPU backend.
 *
 * The layers are placed as llama.cpp places them for -ngl N: the last N
 * repeating layers (il >= n_layer - N) with their KV cache, and the
 * output head (output norm and matrix) when N > n_layer; the token
 * embedding stays on the host. N = n_layer + 1 is everything ("all"). */
#ifndef TERN_GPU_PLAN_H
#define TERN_GPU_PLAN_H

#include <stdbool.h>
#include <stdint.h>

#include "lib/core/error.h"

/* -ngl's words (any N >= 0 is itself) */
#define TERN_NGL_AUTO (-1) /* the most layers that fit */
#define TERN_NGL_ALL (-2)  /* every layer and the output head: n_layer + 1 */

/* What the device would hold. */
struct tern_plan_req {
	int32_t n_layer;
	const uint64_t *weights; /* [n_layer] bytes of each repeating layer's weights, as stored */
	const uint64_t *kv;      /* [n_layer] bytes of its KV cache at the chosen context and types */
	uint64_t output;         /* the output head: output norm (and bias) and matrix */
	uint64_t scratch;        /* the activations of one micro-batch, on a device that holds any layer */
	uint64_t budget;         /* bytes the device may take (tern_device_budget) */
	int32_t ngl;             /* TERN_NGL_AUTO, TERN_NGL_ALL or 0.. (above n_layer + 1: n_layer + 1) */
};

struct tern_plan {
	int32_t ngl;            /* as llama.cpp counts it, 0..n_layer + 1 */
	int32_t n_dev_layers;   /* min(ngl, n_layer): layers n_layer - n_dev_layers.. on the device */
	bool output;            /* the output head on the device (ngl > n_layer) */
	uint64_t weights, kv;   /* of the layers placed */
	uint64_t output_bytes;  /* 0 unless output */
	uint64_t scratch;       /* 0 when nothing is placed */
	uint64_t total;         /* the sum: what the device is asked for */
	uint64_t budget;        /* the request's budget */
	uint64_t usable;        /* budget less tern_plan_margin */
};

/* The part of a budget no plan fills: the backend's own buffers that the
 * sizes do not count (a GPU's staging and quantized-activation buffers,
 * descriptor pools, allocation granularity) and what other processes take
 * meanwhile. 1/8 of the budget, at most 256 MiB. */
uint64_t tern_plan_margin(uint64_t budget);

/* The plan for r->ngl. auto: the largest N (0..n_layer + 1) whose total
 * is within usable (0 when none fits; that plan is no error). An explicit
 * N whose total exceeds usable: TERN_ENOMEM with the bytes needed and
 * available (*p is filled anyway). TERN_EINVAL for a request out of range. */
int tern_plan_make(const struct tern_plan_req *r, struct tern_plan *p, tern_err *e);
/* The plan of exactly ngl (0..n_layer + 1) whatever the budget. */
struct tern_plan tern_plan_for(const struct tern_plan_req *r, int32_t ngl);

/* The plan to load after a load of failed_ngl layers failed for want of
 * device memory: the device's budget asked again (budget: what another
 * process took since is gone from it), the largest N that fits it, and at
 * most failed_ngl - step (a driver whose budget promises more than it
 * gives: the caller doubles step on each failure, so that a model of 80
 * layers is down to the CPU in 7 loads, not 80); never below 0. */
struct tern_plan tern_plan_retry(const struct tern_plan_req *r, int32_t failed_ngl, uint64_t budget, int32_t step);

/* -ngl's value: "auto", "all" or a count 0..INT32_MAX; TERN_EINVAL else. */
int tern_plan_parse_ngl(const char *s, int32_t *ngl);
/* A size such as "512M", "2G", "1.5GiB", "4096" (bytes): K, M, G, T are
 * powers of 1024, an optional "iB" or "B" follows; TERN_EINVAL for
 * anything else, 0 or more than 2^60. */
int tern_plan_parse_size(const char *s, uint64_t *bytes);

#endif
