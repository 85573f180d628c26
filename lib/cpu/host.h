/* host.h - what the CPU backends alone share beyond lib/backend_host.h:
 * ggml's f16 attention arguments and GELU table (ggml's CPU rounding,
 * TERN_BACKEND_GGML_NUMERICS). Internal to lib/cpu. */
#ifndef TERN_CPU_HOST_H
#define TERN_CPU_HOST_H

#include "lib/backend_host.h"

/* The arguments of ggml's f16 attention (tern_attn.f16_split > 0) after
 * tern_host_attention_args accepted the operands: false (recorded) when
 * the caches are not f16 or the head not a multiple of 16. */
struct cpu_attn_args;
bool cpu_host_attn_f16_args(struct tern_backend *be, const struct tern_buf *q, const struct tern_buf *k,
			    const struct tern_buf *v, const struct tern_buf *pos, const struct tern_buf *y,
			    const struct tern_attn *p, struct cpu_attn_args *a);

/* TERN_UNARY_GELU_F16's table (backend.h), built on first use: [65536],
 * the value for the half of bits h at h (x <= -10 and x >= 10 are not
 * looked up: 0 and x) */
const float *cpu_host_gelu_f16_table(void);

#endif
