/* bench_ops.c - milliseconds per call of the CPU backend's non-product ops
 * (lib/backend.h) at the shapes of the forward pass: one layer's norm,
 * RoPE of Q and K, their Q/K norms and RoPE as four calls and as one
 * (norm_rope), the f16 KV store, attention over an f16 cache, the
 * SwiGLU / GeGLU, the residual add and the embedding row, for one token
 * (decode at position POS) and for a prompt of 512 tokens, on the
 * TinyLlama-1.1B, SmolLM2-135M and Gemma 3 270M shapes. Each op is timed
 * over several rounds; the median is printed.
 *
 *   make && cc -O2 -std=c11 -D_GNU_SOURCE -I. scripts/bench_ops.c build/release/libtern.a -lpthread -lm -o /tmp/bench_ops
 *   /tmp/bench_ops [THREADS] [ROUNDS] [POS]       defaults: 2 15 511 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lib/backend.h"
#include "lib/cpu/backend.h"
#include "quant/quant.h"

struct shape {
	const char *name;
	int64_t embd, nh, nkv, hd, ff;
	int32_t window;
	int glu;
	int rope_mode;
};

static const struct shape shapes[] = {
	{"tinyllama-1.1b", 2048, 32, 4, 64, 5632, 0, TERN_GLU_SWIGLU, TERN_ROPE_NORMAL},
	{"smollm2-135m", 576, 9, 3, 64, 1536, 0, TERN_GLU_SWIGLU, TERN_ROPE_NEOX},
	{"gemma3-270m", 640, 4, 1, 256, 2048, 512, TERN_GLU_GEGLU, TERN_ROPE_NEOX},
};

static double now_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static struct tern_backend *be;

static struct tern_buf buf(uint32_t t, int n, int64_t a, int64_t b, int64_t c)
{
	struct tern_buf x;
	int64_t ne[3] = {a, b, c};
	tern_err e = {0};
	if (be->buf_alloc(be, &x, t, n, ne, &e)) {
		fprintf(stderr, "bench_ops: %s\n", e.msg);
		exit(1);
	}
	size_t nb = tern_buf_nbytes(&x);
	uint8_t *h = malloc(nb);
	if (t == QT_F32) {
		float *f = (float *)(void *)h;
		for (size_t i = 0; i < nb / 4; i++)
			f[i] = (float)((double)((i * 2654435761u) % 2001) / 1000.0 - 1.0);
	} else {
		memset(h, 0, nb);
	}
	be->upload(be, &x, 0, h, nb);
	free(h);
	return x;
}

enum { OP_NORM, OP_ROPE, OP_QK4, OP_QK1, OP_KV, OP_ATTN, OP_GLU, OP_ADD, OP_GETROWS, OP_N };
static const char *op_names[] = {"norm+res", "rope q+k", "qk norm+rope", "norm_rope", "kv_store k+v",
				 "attention", "glu", "add", "get_rows q8_0"};

int main(int argc, char **argv)
{
	int nth = argc > 1 ? atoi(argv[1]) : 2, rounds = argc > 2 ? atoi(argv[2]) : 15;
	int32_t dpos = argc > 3 ? atoi(argv[3]) : 511;
	tern_err e = {0};
	struct cpu_backend_opts o = {.n_threads = nth, .max_tokens = 512};
	if (cpu_backend_new(&be, &o, &e)) {
		fprintf(stderr, "bench_ops: %s\n", e.msg);
		return 1;
	}
	printf("%d threads, median of %d rounds, ms per call; decode at position %d, prompt of 512 from 0\n", nth,
	       rounds, dpos);
	printf("%-16s %-6s", "shape", "tokens");
	for (int i = 0; i < OP_N; i++)
		printf(" %13s", op_names[i]);
	printf("\n");
	for (size_t si = 0; si < sizeof shapes / sizeof *shapes; si++) {
		const struct shape *s = &shapes[si];
		int64_t n_ctx = 1024;
		for (int pass = 0; pass < 2; pass++) {
			int64_t ntok = pass ? 512 : 1;
			int32_t *pos = malloc(sizeof(int32_t) * (size_t)ntok);
			for (int64_t t = 0; t < ntok; t++)
				pos[t] = pass ? (int32_t)t : dpos;
			struct tern_buf x = buf(QT_F32, 2, s->embd, ntok, 1), r = buf(QT_F32, 2, s->embd, ntok, 1);
			struct tern_buf w = buf(QT_F32, 1, s->embd, 1, 1), y = buf(QT_F32, 2, s->embd, ntok, 1);
			struct tern_buf hw = buf(QT_F32, 1, s->hd, 1, 1); /* a Q/K norm's weight */
			struct tern_buf q = buf(QT_F32, 3, s->hd, s->nh, ntok), k = buf(QT_F32, 3, s->hd, s->nkv, ntok);
			struct tern_buf v = buf(QT_F32, 3, s->hd, s->nkv, ntok), qo = buf(QT_F32, 3, s->hd, s->nh, ntok);
			struct tern_buf kc = buf(QT_F16, 3, s->hd, s->nkv, n_ctx), vc = buf(QT_F16, 3, s->hd, s->nkv, n_ctx);
			struct tern_buf g = buf(QT_F32, 2, s->ff, ntok, 1), u = buf(QT_F32, 2, s->ff, ntok, 1);
			struct tern_buf emb = buf(QT_Q8_0, 2, s->embd, 1000, 1);
			int64_t pne[1] = {ntok};
			struct tern_buf pb, ids;
			be->buf_alloc(be, &pb, QT_I32, 1, pne, &e);
			be->buf_alloc(be, &ids, QT_I32, 1, pne, &e);
			be->upload(be, &pb, 0, pos, sizeof(int32_t) * (size_t)ntok);
			be->upload(be, &ids, 0, pos, sizeof(int32_t) * (size_t)ntok);
			/* fill the whole cache once: attention reads rows 0..pos */
			{
				int32_t *all = malloc(sizeof(int32_t) * (size_t)n_ctx);
				for (int64_t i = 0; i < n_ctx; i++)
					all[i] = (int32_t)i;
				struct tern_buf ab, kx = buf(QT_F32, 3, s->hd, s->nkv, n_ctx);
				be->buf_alloc(be, &ab, QT_I32, 1, (int64_t[]){n_ctx}, &e);
				be->upload(be, &ab, 0, all, sizeof(int32_t) * (size_t)n_ctx);
				be->kv_store(be, &kc, &kx, &ab, NULL);
				be->kv_store(be, &vc, &kx, &ab, NULL);
				be->buf_free(be, &ab);
				be->buf_free(be, &kx);
				free(all);
			}
			struct tern_norm np = {TERN_NORM_RMS, 1e-6f, false};
			struct tern_rope rp = {.mode = s->rope_mode, .n_rot = (int)s->hd, .freq_base = 10000, .freq_scale = 1};
			struct tern_attn ap = {1.0f / sqrtf((float)s->hd), s->window, 0};
			double *t = malloc(sizeof(double) * (size_t)rounds), med[OP_N];
			for (int op = 0; op < OP_N; op++) {
				for (int rd = 0; rd < rounds; rd++) {
					/* decode calls are microseconds: time a batch of them */
					int reps = pass ? 1 : 50;
					double t0 = now_s();
					for (int rep = 0; rep < reps; rep++) {
						switch (op) {
						case OP_NORM: be->norm(be, &x, &r, &w, NULL, &y, &np); break;
						case OP_ROPE:
							be->rope(be, &q, &pb, NULL, &rp);
							be->rope(be, &k, &pb, NULL, &rp);
							break;
						case OP_QK4:
							be->norm(be, &q, NULL, &hw, NULL, &q, &np);
							be->norm(be, &k, NULL, &hw, NULL, &k, &np);
							be->rope(be, &q, &pb, NULL, &rp);
							be->rope(be, &k, &pb, NULL, &rp);
							break;
						case OP_QK1: be->norm_rope(be, &q, &k, &hw, &hw, &pb, NULL, &np, &rp); break;
						case OP_KV:
							be->kv_store(be, &kc, &k, &pb, NULL);
							be->kv_store(be, &vc, &v, &pb, NULL);
							break;
						case OP_ATTN: be->attention(be, &q, &kc, &vc, &pb, NULL, &qo, &ap); break;
						case OP_GLU: be->glu(be, &g, &u, &g, s->glu); break;
						case OP_ADD: be->add(be, &x, &r, &y); break;
						default: be->get_rows(be, &emb, &ids, &y);
						}
					}
					if (be->sync(be, &e)) {
						fprintf(stderr, "bench_ops: %s\n", e.msg);
						return 1;
					}
					t[rd] = (now_s() - t0) * 1e3 / reps;
					/* keep the values bounded: glu in place would overflow */
					if (op == OP_GLU)
						be->upload(be, &g, 0, tern_buf_host(&u), tern_buf_nbytes(&u));
				}
				qsort(t, (size_t)rounds, sizeof *t, cmp_d);
				med[op] = t[rounds / 2];
			}
			printf("%-16s %-6lld", s->name, (long long)ntok);
			for (int op = 0; op < OP_N; op++)
				printf(" %13.4f", med[op]);
			printf("\n");
			free(t);
			free(pos);
			struct tern_buf *all[] = {&x, &r, &w, &hw, &y, &q, &k, &v, &qo, &kc, &vc, &g, &u, &emb, &pb, &ids};
			for (size_t i = 0; i < sizeof all / sizeof *all; i++)
				be->buf_free(be, all[i]);
		}
	}
	tern_backend_free(be);
	return 0;
}
