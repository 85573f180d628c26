/* host.c - ggml's f16 attention arguments and GELU table, the CPU
 * backends' own (lib/cpu/host.h). */
#include "lib/cpu/host.h"

#include <math.h>
#include <pthread.h>

#include "lib/cpu/ops.h"
#include "quant/quant.h"

/* ggml's table: the f16 of the f32 tanh GELU of every half (whisper.cpp's
 * and llama.cpp's GELU), indexed by the half's bits; kept as the f32 of
 * that f16, which the vector kernels gather */
static float gelu_f16_table[65536];
static pthread_once_t gelu_f16_once = PTHREAD_ONCE_INIT;

static void gelu_f16_init(void)
{
	for (uint32_t i = 0; i < 65536; i++) {
		float x = quant_fp16_to_f32((uint16_t)i);
		float g = 0.5f * x * (1.0f + tanhf(0.79788456080286535587989211986876f * x * (1.0f + 0.044715f * x * x)));
		gelu_f16_table[i] = quant_fp16_to_f32(quant_f32_to_fp16(g));
	}
}

const float *cpu_host_gelu_f16_table(void)
{
	pthread_once(&gelu_f16_once, gelu_f16_init);
	return gelu_f16_table;
}

bool cpu_host_attn_f16_args(struct tern_backend *be, const struct tern_buf *q, const struct tern_buf *k,
			    const struct tern_buf *v, const struct tern_buf *pos, const struct tern_buf *y,
			    const struct tern_attn *p, struct cpu_attn_args *a)
{
	if (k->type != QT_F16 || v->type != QT_F16 || q->ne[0] % 16 || p->window || p->softcap > 0) {
		tern_host_fail(be, "attention: f16_split needs f16 caches, a head of 16k and no window or softcap");
		return false;
	}
	*a = (struct cpu_attn_args){
		.q = tern_buf_host(q), .y = tern_buf_host(y), .k = tern_buf_host(k), .v = tern_buf_host(v),
		.k_head = k->nb[1], .k_pos = k->nb[2], .v_head = v->nb[1], .v_pos = v->nb[2],
		.ktype = k->type, .vtype = v->type, .pos = tern_buf_host(pos), .hd = q->ne[0], .nh = q->ne[1],
		.nkv = k->ne[1], .ntok = q->ne[2], .n_ctx = k->ne[2], .scale = p->scale, .ggml = p->ggml,
	};
	a->group = a->nh / a->nkv;
	return true;
}

