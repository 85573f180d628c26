/* device.h - device choice in every model tool (tern-run, tern-chat,
 * tern-bench, tern-transcribe, tern-run --embedding), with llama.cpp's
 * spellings: -dev/--device NAME, --list-devices, -ngl/--gpu-layers
 * N|auto|all, --gpu-mem-limit SIZE. Each program puts DEV_OPTS (or the
 * entries it takes) in its option table; this module opens the backends,
 * plans the layers (gpu/plan.h), loads the model with retries, and says
 * what it chose in one -v line. */
#ifndef TERN_CMD_DEVICE_H
#define TERN_CMD_DEVICE_H

#include <stdbool.h>
#include <stdint.h>

#include "cmd/common/cli.h"
#include "gpu/registry.h"
#include "gpu/plan.h"
#include "lib/llm/llm.h"

struct dev_opts {
	const char *device;    /* -dev: NULL is auto */
	const char *ngl;       /* -ngl: NULL is auto */
	const char *mem_limit; /* --gpu-mem-limit */
	bool list;             /* --list-devices */
};
extern struct dev_opts dev_o;

#define DEV_OPT_DEVICE \
	{.lng = "device", .alias = "dev", .kind = CLI_STR, .dst = &dev_o.device, .arg = "NAME", \
	 .help = "run on device NAME: cpu, vulkan0, vulkan1, ..., or auto, the GPU with the most free memory " \
		 "else the CPU (default: auto; --list-devices lists them)"}, \
	DEV_OPT_LIST_LIMIT

/* --list-devices and --gpu-mem-limit (tern-bench has its own -dev) */
#define DEV_OPT_LIST_LIMIT \
	{.lng = "list-devices", .kind = CLI_FLAG, .dst = &dev_o.list, \
	 .help = "list the devices (name, description, driver, API, memory, features) and exit"}, \
	{.lng = "gpu-mem-limit", .kind = CLI_STR, .dst = &dev_o.mem_limit, .arg = "SIZE", \
	 .help = "use at most SIZE of the device's memory, e.g. 512M or 2G (default: its free memory)"}

#define DEV_OPT_NGL \
	{.lng = "gpu-layers", .alias = "ngl", .kind = CLI_STR, .dst = &dev_o.ngl, .arg = "N|auto|all", \
	 .help = "layers on the device: the last N, all (the output head too), or auto, as many as fit " \
		 "(default: auto)"}

#define DEV_OPTS DEV_OPT_DEVICE, DEV_OPT_NGL

#define DEV_OPTS_TEXT \
	"Devices: -dev picks where the model runs: cpu, a GPU by name (vulkan0, ...; --list-devices lists " \
	"them with their memory and features), or auto (the default), the GPU with the most free memory, " \
	"else the CPU; a device named that is absent or cannot start is an error (auto then runs on the CPU, " \
	"with a warning). On a GPU, -ngl N puts the last N " \
	"layers there with their KV cache and, for N above the layer count, the output head too (llama.cpp's " \
	"rule; the token embedding stays on the CPU); the other layers run on the CPU. Before anything is " \
	"allocated, the layers' weights, KV cache and buffers are weighed against the device's free memory " \
	"(or --gpu-mem-limit) less a margin of 1/8, at most 256 MiB: -ngl auto (the default) places as many " \
	"layers as fit, and an -ngl N that does not fit is an error that says how many bytes it needs and " \
	"how many are available. Should the device still refuse an allocation, the model is loaded again " \
	"with fewer layers (as many as the device's free memory, asked again, holds, and at least 1, 2, 4, " \
	"... fewer on each failure), down to the CPU, and a warning says so. -v shows the device and the plan."

/* The checks the parser cannot make (a bad -ngl or --gpu-mem-limit: one
 * line, exit 2), then --list-devices: the list on stdout, exit 0. */
void dev_opts_check(const struct cli_common *cc);

/* What was opened: the CPU backend for the host's part, the device's
 * backend (NULL when the device is the CPU), and the plan. */
struct dev_ctx {
	struct tern_device_info info;
	struct tern_device_opts opts;
	struct tern_backend *host, *dev;
	struct tern_plan plan;
	int32_t ngl;      /* as asked: TERN_NGL_AUTO, TERN_NGL_ALL or N */
	uint64_t limit;   /* --gpu-mem-limit, 0 none */
	int retries;      /* loads retried with fewer layers */
	bool planned;     /* dev_llm_plan made plan from req */
	bool auto_dev;    /* the device was "auto" (-v then says why no GPU was found) */
	struct tern_plan_req req; /* its sizes (req.weights, req.kv: owned) */
};

/* Open -dev's device (or `device` when not NULL: tern-bench's; auto falls
 * back to the CPU, with a warning, when its GPU cannot start) and the
 * host's CPU backend, with o's threads, batch bound and CPU choices (the
 * test device's fields come from TERN_TEST_DEVICE). ngl overrides -ngl
 * when not NULL (tern-bench's list). On error, d holds nothing. */
int dev_open(struct dev_ctx *d, const char *device, const char *ngl, const struct tern_device_opts *o, tern_err *e);
void dev_close(struct dev_ctx *d);

/* Plan model m's layers for options lo (d->plan; with no device the plan
 * places nothing): what the host must hold follows from it. An explicit
 * -ngl that cannot fit: TERN_ENOMEM with needed and available bytes. */
int dev_llm_plan(struct dev_ctx *d, const struct tern_model *m, const struct tern_llm_opts *lo, tern_err *e);

/* tern_llm_new on the backends with dev_llm_plan's plan (made here when
 * it was not), retrying with one layer fewer while the device refuses
 * (a warning each time); the -v line says the device and the plan. */
int dev_llm_new(struct dev_ctx *d, const struct cli_common *cc, const struct tern_model *m,
		struct tern_llm_opts *lo, struct tern_llm **out, tern_err *e);

/* For the tools that keep a whole model on one backend (Whisper, the
 * embeddings): the device's backend when the model's `bytes` fit its
 * budget (or -ngl asks for the device: then it must fit), else the CPU,
 * which -v says; *be is borrowed from d. */
int dev_whole(struct dev_ctx *d, const struct cli_common *cc, uint64_t bytes, struct tern_backend **be,
	      tern_err *e);

/* After a load on the device dev_whole chose failed with rc: when for want
 * of device memory (its budget promised more than it gives), the load is
 * to go again on the CPU: a warning says so, *be becomes the host's
 * backend, e is cleared, and true is returned. False for any other
 * failure, or a load that was on the CPU already. */
bool dev_whole_retry(struct dev_ctx *d, int rc, struct tern_backend **be, tern_err *e);

/* Whether device `name` is present (auto always is; the test device as
 * TERN_TEST_DEVICE makes it): 0, or TERN_ENOTFOUND naming those present. */
int dev_check(const char *name, tern_err *e);

/* With -v: one stderr line on the device's decode steps (how many were
 * replayed from a recording, the kernels of a step); nothing for the CPU. */
void dev_report_steps(const struct dev_ctx *d, const struct cli_common *cc);

/* "1.2 GiB", "310.0 MiB", "12.0 KiB" into buf */
const char *dev_fmt_bytes(char *buf, size_t cap, uint64_t v);

#endif
