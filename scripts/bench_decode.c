/* bench_decode.c - a decode step's sequence of backend calls (norm, the
 * seven products of a layer, RoPE, KV store, attention, GLU, residual;
 * then the output norm and the vocabulary product) over synthetic q4_0
 * weights of a model's shape, repeated for TOKENS tokens: tokens per
 * second and the time per step. It is the load the thread pool sees in
 * decode: a few hundred short jobs per token. Run it with and without a
 * competing process on one core to see what the pool does under
 * contention:
 *
 *   cc -O2 -std=c11 -D_GNU_SOURCE -I. scripts/bench_decode.c build/release/libtern.a -lpthread -lm -o /tmp/bench_decode
 *   /tmp/bench_decode [THREADS] [SHAPE] [TOKENS] [TYPE]   defaults: 2 smollm2 64 q4_0
 *   taskset -c 1 yes > /dev/null & /tmp/bench_decode 2 smollm2 64; kill %1
 *
 * SHAPE: smollm2 (SmolLM2-135M), gemma3 (Gemma 3 270M), tinyllama. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lib/backend.h"
#include "lib/cpu/backend.h"
#include "quant/quant.h"
#include "tests/quant_util.h"

struct shape {
	const char *name;
	int64_t embd, nh, nkv, hd, ff, layers, vocab;
	int32_t window;
	int glu;
};

static const struct shape shapes[] = {
	{"smollm2", 576, 9, 3, 64, 1536, 30, 49152, 0, TERN_GLU_SWIGLU},
	{"gemma3", 640, 4, 1, 256, 2048, 18, 262144, 512, TERN_GLU_GEGLU},
	{"tinyllama", 2048, 32, 4, 64, 5632, 22, 32000, 0, TERN_GLU_SWIGLU},
};

static struct tern_backend *be;

static void die(const tern_err *e)
{
	fprintf(stderr, "bench_decode: %s\n", e->msg);
	exit(1);
}

static struct tern_buf act(int n, int64_t a, int64_t b, int64_t c)
{
	struct tern_buf x;
	tern_err e = {0};
	int64_t ne[3] = {a, b, c};
	if (be->buf_alloc(be, &x, QT_F32, n, ne, &e))
		die(&e);
	float *h = calloc((size_t)(a * b * c), sizeof(float));
	for (int64_t i = 0; i < a * b * c; i++)
		h[i] = qu_normal() * 0.1f;
	be->upload(be, &x, 0, h, sizeof(float) * (size_t)(a * b * c));
	free(h);
	return x;
}

static uint32_t wtype = QT_Q4_0;

/* a prepared weight [rows][cols]; the bytes live as long as the run */
static struct tern_buf weight(int64_t rows, int64_t cols)
{
	size_t rs = quant_row_size(wtype, (uint64_t)cols, NULL);
	uint8_t *d = malloc(rs * (size_t)rows);
	for (int64_t r = 0; r < rows; r++) /* a few distinct rows: making all of them is slow */
		if (r < 64)
			qu_make_row(wtype, d + rs * (size_t)r, cols, 0);
		else
			memcpy(d + rs * (size_t)r, d + rs * (size_t)(r % 64), rs);
	struct tern_tensor_view tv = {
		.name = {"w", 1}, .n_dims = 2, .ne = {(uint64_t)cols, (uint64_t)rows, 1, 1}, .type = wtype,
		.nbytes = rs * (uint64_t)rows, .data = d,
	};
	struct tern_buf w;
	tern_err e = {0};
	if (be->buf_weight(be, &w, &tv, &e) || be->mat_prepare(be, &w, &e))
		die(&e);
	return w;
}

static double now_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
	int nth = argc > 1 ? atoi(argv[1]) : 2;
	const char *sn = argc > 2 ? argv[2] : "smollm2";
	int ntok = argc > 3 ? atoi(argv[3]) : 64;
	if (argc > 4 && quant_type_from_name(argv[4]) < 0) {
		fprintf(stderr, "bench_decode: unknown type %s\n", argv[4]);
		return 2;
	}
	if (argc > 4)
		wtype = (uint32_t)quant_type_from_name(argv[4]);
	const struct shape *s = NULL;
	for (size_t i = 0; i < sizeof shapes / sizeof *shapes; i++)
		if (!strcmp(shapes[i].name, sn))
			s = &shapes[i];
	if (!s) {
		fprintf(stderr, "bench_decode: unknown shape %s\n", sn);
		return 2;
	}
	tern_err e = {0};
	struct cpu_backend_opts o = {.n_threads = nth, .max_tokens = 1};
	if (cpu_backend_new(&be, &o, &e))
		die(&e);
	int64_t qd = s->nh * s->hd, kvd = s->nkv * s->hd, n_ctx = 1024;
	struct tern_buf *wq = calloc((size_t)s->layers * 7, sizeof *wq);
	struct tern_buf *kc = calloc((size_t)s->layers * 2, sizeof *kc);
	for (int64_t l = 0; l < s->layers; l++) {
		struct tern_buf *w = wq + l * 7;
		w[0] = weight(qd, s->embd);
		w[1] = weight(kvd, s->embd);
		w[2] = weight(kvd, s->embd);
		w[3] = weight(s->embd, qd);
		w[4] = weight(s->ff, s->embd);
		w[5] = weight(s->ff, s->embd);
		w[6] = weight(s->embd, s->ff);
		int64_t cne[3] = {s->hd, s->nkv, n_ctx};
		for (int i = 0; i < 2; i++)
			if (be->buf_alloc(be, &kc[l * 2 + i], QT_F16, 3, cne, &e))
				die(&e);
	}
	struct tern_buf out = weight(s->vocab, s->embd), logits = act(1, s->vocab, 1, 1);
	struct tern_buf x = act(1, s->embd, 1, 1), h = act(1, s->embd, 1, 1), nw = act(1, s->embd, 1, 1);
	struct tern_buf q = act(3, s->hd, s->nh, 1), k = act(3, s->hd, s->nkv, 1), v = act(3, s->hd, s->nkv, 1);
	struct tern_buf att = act(3, s->hd, s->nh, 1), g = act(1, s->ff, 1, 1), u = act(1, s->ff, 1, 1);
	struct tern_buf pos;
	if (be->buf_alloc(be, &pos, QT_I32, 1, (int64_t[]){1}, &e))
		die(&e);
	struct tern_buf q2 = tern_buf_reshape(&q, 1, (int64_t[]){qd}), k2 = tern_buf_reshape(&k, 1, (int64_t[]){kvd});
	struct tern_buf v2 = tern_buf_reshape(&v, 1, (int64_t[]){kvd}), a2 = tern_buf_reshape(&att, 1, (int64_t[]){qd});
	struct tern_norm np = {TERN_NORM_RMS, 1e-6f, false};
	struct tern_rope rp = {.mode = TERN_ROPE_NEOX, .n_rot = (int)s->hd, .freq_base = 10000, .freq_scale = 1};
	struct tern_attn ap = {1.0f / sqrtf((float)s->hd), s->window, 0};
	double *dt = malloc(sizeof(double) * (size_t)ntok), t_all = now_s();
	/* the first 64 positions warm up the pool and the caches */
	for (int t = -64; t < ntok; t++) {
		double t0 = now_s();
		int32_t p = t + 64;
		be->upload(be, &pos, 0, &p, sizeof p);
		be->begin_step(be);
		for (int64_t l = 0; l < s->layers; l++) {
			struct tern_buf *w = wq + l * 7;
			be->norm(be, &x, NULL, &nw, NULL, &h, &np);
			be->product(be, 3, (const struct tern_buf *[]){&w[0], &w[1], &w[2]}, &h,
				    (struct tern_buf *[]){&q2, &k2, &v2});
			be->norm_rope(be, &q, &k, NULL, NULL, &pos, NULL, NULL, &rp);
			be->kv_store(be, &kc[l * 2], &k, &pos, NULL);
			be->kv_store(be, &kc[l * 2 + 1], &v, &pos, NULL);
			be->attention(be, &q, &kc[l * 2], &kc[l * 2 + 1], &pos, NULL, &att, &ap);
			tern_be_mul(be, &w[3], &a2, &h);
			be->norm(be, &x, &h, &nw, NULL, &h, &np);
			be->product(be, 2, (const struct tern_buf *[]){&w[4], &w[5]}, &h, (struct tern_buf *[]){&g, &u});
			be->glu(be, &g, &u, &g, s->glu);
			tern_be_mul(be, &w[6], &g, &h);
			be->add(be, &x, &h, &x);
		}
		be->norm(be, &x, NULL, &nw, NULL, &h, &np);
		tern_be_mul(be, &out, &h, &logits);
		be->end_step(be);
		if (be->sync(be, &e))
			die(&e);
		if (t == -1)
			t_all = now_s();
		if (t >= 0)
			dt[t] = now_s() - t0;
	}
	t_all = now_s() - t_all;
	double sum = 0;
	for (int t = 0; t < ntok; t++)
		sum += dt[t];
	printf("%s %s, %d threads: %d tokens from position 64, %.2f tok/s, %.3f ms per step\n", s->name,
	       quant_type_name(wtype), nth, ntok, ntok / t_all, sum / ntok * 1e3);
	return 0;
}
