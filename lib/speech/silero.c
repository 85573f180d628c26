/* silero.c - the Silero VAD model (v5 and v6, whisper.cpp's legacy ggml
 * file): load, check, and the forward pass of one 512-sample window, as
 * whisper.cpp computes it (src/whisper.cpp, whisper_vad_build_graph):
 *
 *   window [512] --reflect pad 64|64--> [640]
 *   STFT: conv with the stored basis [258][256], stride 128 -> 4 frames x
 *         258; magnitude sqrt(re^2 + im^2) of the 129 bins -> [4][129]
 *   encoder: conv k3 pad1 129->128 s1, 128->64 s2, 64->64 s2, 64->128 s1,
 *         each + bias, ReLU -> [1][128]
 *   LSTM cell (gates i f g o, state h, c carried from window to window)
 *   decoder: ReLU, conv k1 128->1, + bias, sigmoid -> the probability.
 *
 * ggml's conv (im2col to f16, then an f16 product) rounds every conv input
 * to f16; we round the same values (the padded window, the magnitudes, the
 * ReLU outputs feeding a conv, the LSTM output feeding the decoder). The
 * LSTM input is not rounded (its weights are f32 and so is that product).
 * Because of those roundings, a sum that differs from whisper.cpp's by one
 * f32 ulp may land on the next f16 and the difference grows through the
 * layers (to ~3e-4 in a probability on jfk.wav); so every product sums its
 * terms in the order of ggml's dot (silero_kern.h), and the elementwise
 * steps are whisper.cpp's, operation for operation (this file is compiled
 * as ISO C: no FMA contraction).
 *
 * Where it runs: on the CPU, in plain C with an AVX2 table of the three
 * kernels (silero_kern.h), not on the backend operation table. The table
 * has no reflection pad, im2col conv, ReLU, sigmoid, tanh or LSTM cell,
 * vad.h's API takes no backend (models reach a backend only through one
 * the caller passes), and a window is 0.7 MFLOP: far too little to leave
 * the CPU (whisper.cpp, too, forces its VAD onto the CPU).
 *
 * Weights: copied once at load time into f32 panels (1.25 MB, 16 rows
 * interleaved so that the rows of a block fill the SIMD lanes); converting
 * the file's f16 on the fly would cost a conversion per weight per token.
 * The file is unmapped after loading.
 *
 * Batches: the STFT and the encoder do not depend on the LSTM state, so
 * tern_vad_probs runs them (and the LSTM's input product) for up to
 * SILERO_CHUNK windows at a time as matrix products; only the LSTM's
 * hidden product and the cell run window after window. */
#include "lib/speech/vad.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/core/quote.h"
#include "lib/format/ggml_legacy.h"
#include "lib/speech/silero_kern.h"
#include "quant/cpu.h"
#include "quant/quant.h"

#define N_FFT 256                /* STFT frame */
#define HOP 128                  /* STFT stride (whisper.cpp reads it as lstm_input_size) */
#define PAD 64                   /* reflection padding on each side */
#define PADDED (TERN_VAD_WINDOW + 2 * PAD)
#define N_FRAMES 4               /* (640 - 256) / 128 + 1 */
#define N_BINS 129               /* N_FFT / 2 + 1 */
#define N_STFT (2 * N_BINS)      /* real parts, then imaginary parts */
#define HID 128                  /* LSTM hidden size */
#define N_GATES (4 * HID)
#define SILERO_CHUNK 32          /* windows per batch of tern_vad_probs */

/* ---- the model -------------------------------------------------------------- */

/* One conv layer of the encoder: kernel 3, padding 1. */
struct conv {
	int in, out, stride;
	const float *w; /* panel [out][in * 3], as ggml's im2col: c = i * 3 + k */
	const float *b; /* [out] */
};

struct tern_silero {
	char version[8];  /* "v5", "v6" */
	float *mem;       /* every array below, one allocation */
	const float *basis; /* panel [N_STFT][N_FFT] */
	struct conv enc[4];
	const float *w_ih, *w_hh; /* panels [N_GATES][HID], gates i f g o */
	const float *b_ih, *b_hh; /* [N_GATES] */
	const float *dec_w;       /* panel [1][HID] */
	float dec_b;
};

static const struct {
	int in, out, stride;
} enc_shape[4] = {{N_BINS, 128, 1}, {128, 64, 2}, {64, 64, 2}, {64, HID, 1}};

enum {
	T_BASIS, T_E0W, T_E0B, T_E1W, T_E1B, T_E2W, T_E2B, T_E3W, T_E3B,
	T_WIH, T_WHH, T_BIH, T_BHH, T_DECW, T_DECB, T_COUNT
};

/* Names, types and shapes as whisper.cpp's loader expects them
 * (whisper-arch.h, whisper_vad_init_with_params). */
static const struct tspec {
	const char *name;
	uint32_t type;
	uint64_t ne[3];
} specs[T_COUNT] = {
	[T_BASIS] = {"_model.stft.forward_basis_buffer", QT_F16, {N_FFT, 1, N_STFT}},
	[T_E0W] = {"_model.encoder.0.reparam_conv.weight", QT_F16, {3, N_BINS, 128}},
	[T_E0B] = {"_model.encoder.0.reparam_conv.bias", QT_F32, {128, 1, 1}},
	[T_E1W] = {"_model.encoder.1.reparam_conv.weight", QT_F16, {3, 128, 64}},
	[T_E1B] = {"_model.encoder.1.reparam_conv.bias", QT_F32, {64, 1, 1}},
	[T_E2W] = {"_model.encoder.2.reparam_conv.weight", QT_F16, {3, 64, 64}},
	[T_E2B] = {"_model.encoder.2.reparam_conv.bias", QT_F32, {64, 1, 1}},
	[T_E3W] = {"_model.encoder.3.reparam_conv.weight", QT_F16, {3, 64, HID}},
	[T_E3B] = {"_model.encoder.3.reparam_conv.bias", QT_F32, {HID, 1, 1}},
	[T_WIH] = {"_model.decoder.rnn.weight_ih", QT_F32, {HID, N_GATES, 1}},
	[T_WHH] = {"_model.decoder.rnn.weight_hh", QT_F32, {HID, N_GATES, 1}},
	[T_BIH] = {"_model.decoder.rnn.bias_ih", QT_F32, {N_GATES, 1, 1}},
	[T_BHH] = {"_model.decoder.rnn.bias_hh", QT_F32, {N_GATES, 1, 1}},
	[T_DECW] = {"_model.decoder.decoder.2.weight", QT_F16, {HID, 1, 1}},
	[T_DECB] = {"_model.decoder.decoder.2.bias", QT_F32, {1, 1, 1}},
};

/* The hyperparameters the computation above is written for. */
static int check_hparams(const ggml_legacy *f, tern_err *e)
{
	struct want {
		char name[40];
		int64_t v;
	} w[4 + 3 * 4 + 4] = {{"n_window", TERN_VAD_WINDOW}, {"n_encoder_layers", 4}};
	size_t n = 2;
	for (int i = 0; i < 4; i++) {
		snprintf(w[n].name, sizeof w[n].name, "encoder.%d.in_channels", i);
		w[n++].v = enc_shape[i].in;
		snprintf(w[n].name, sizeof w[n].name, "encoder.%d.out_channels", i);
		w[n++].v = enc_shape[i].out;
		snprintf(w[n].name, sizeof w[n].name, "encoder.%d.kernel_size", i);
		w[n++].v = 3;
	}
	static const struct {
		const char *name;
		int v;
	} tail[] = {{"lstm_input_size", HOP}, {"lstm_hidden_size", HID}, {"final_conv_in", HID}, {"final_conv_out", 1}};
	for (size_t i = 0; i < sizeof tail / sizeof tail[0]; i++) {
		snprintf(w[n].name, sizeof w[n].name, "%s", tail[i].name);
		w[n++].v = tail[i].v;
	}
	for (size_t i = 0; i < n; i++) {
		const struct ggml_legacy_hparam *h = ggml_legacy_find_hparam(f, w[i].name);
		if (!h)
			return tern_errf(e, TERN_EFORMAT, "hyperparameter %s missing", w[i].name);
		if (h->is_float || h->i != w[i].v)
			return tern_errf(e, TERN_EUNSUPPORTED, "hyperparameter %s = %lld (Silero v5/v6 have %lld)",
					 w[i].name, (long long)h->i, (long long)w[i].v);
	}
	return 0;
}

static int check_tensors(const ggml_legacy *f, const struct tern_tensor_view *t[T_COUNT], tern_err *e)
{
	char q[TERN_QUOTE_MAX];
	for (int i = 0; i < T_COUNT; i++) {
		const struct tspec *s = &specs[i];
		t[i] = ggml_legacy_find_tensor(f, s->name);
		if (!t[i])
			return tern_errf(e, TERN_EFORMAT, "tensor '%s' missing", s->name);
		if (t[i]->type != s->type)
			return tern_errf(e, TERN_EFORMAT, "tensor '%s': type %s, expected %s", s->name,
					 quant_type_name(t[i]->type), quant_type_name(s->type));
		if (t[i]->ne[0] != s->ne[0] || t[i]->ne[1] != s->ne[1] || t[i]->ne[2] != s->ne[2] || t[i]->ne[3] != 1)
			return tern_errf(e, TERN_EFORMAT,
					 "tensor '%s': shape [%llu, %llu, %llu, %llu], expected [%llu, %llu, %llu]",
					 s->name, (unsigned long long)t[i]->ne[0], (unsigned long long)t[i]->ne[1],
					 (unsigned long long)t[i]->ne[2], (unsigned long long)t[i]->ne[3],
					 (unsigned long long)s->ne[0], (unsigned long long)s->ne[1],
					 (unsigned long long)s->ne[2]);
	}
	/* whisper.cpp refuses a tensor it does not know; so do we */
	for (uint64_t i = 0; i < ggml_legacy_n_tensors(f); i++) {
		const struct tern_tensor_view *v = ggml_legacy_tensor_at(f, i);
		bool known = false;
		for (int j = 0; j < T_COUNT && !known; j++)
			known = v->name.len == strlen(specs[j].name) && !memcmp(v->name.ptr, specs[j].name, v->name.len);
		if (!known)
			return tern_errf(e, TERN_EFORMAT, "unexpected tensor '%s' in a Silero model",
					 tern_quote_str(q, sizeof q, v->name));
	}
	return 0;
}

/* Element i of a tensor (f16 or f32, little-endian, possibly unaligned). */
static float elem(const struct tern_tensor_view *t, size_t i)
{
	const uint8_t *p = t->data;
	if (t->type == QT_F16) {
		uint16_t h = (uint16_t)(p[2 * i] | p[2 * i + 1] << 8);
		return quant_fp16_to_f32(h);
	}
	uint32_t u = (uint32_t)p[4 * i] | (uint32_t)p[4 * i + 1] << 8 | (uint32_t)p[4 * i + 2] << 16 |
		     (uint32_t)p[4 * i + 3] << 24;
	float v;
	memcpy(&v, &u, sizeof v);
	return v;
}

static size_t panel_floats(int rows, int cols)
{
	return (size_t)(rows + SILERO_PANEL - 1) / SILERO_PANEL * SILERO_PANEL * (size_t)cols;
}

/* dst = panel of the [rows][cols] matrix t (rows cols apart); pad rows zero. */
static void pack(float *dst, const struct tern_tensor_view *t, int rows, int cols)
{
	size_t nblk = (size_t)(rows + SILERO_PANEL - 1) / SILERO_PANEL;
	memset(dst, 0, nblk * SILERO_PANEL * (size_t)cols * sizeof *dst);
	for (int r = 0; r < rows; r++) {
		float *blk = dst + (size_t)(r / SILERO_PANEL) * cols * SILERO_PANEL + r % SILERO_PANEL;
		for (int c = 0; c < cols; c++)
			blk[(size_t)c * SILERO_PANEL] = elem(t, (size_t)r * (size_t)cols + (size_t)c);
	}
}

static int load_file(struct tern_silero **out, ggml_legacy *f, tern_err *e)
{
	*out = NULL;
	if (ggml_legacy_kind(f) != GGML_LEGACY_SILERO)
		return tern_errf(e, TERN_EFORMAT, "not a Silero VAD model (a %s model)", ggml_legacy_kind_name(f));
	struct tern_str type = ggml_legacy_model_type(f);
	char q[TERN_QUOTE_MAX];
	if (type.len != 10 || memcmp(type.ptr, "silero-16k", 10))
		return tern_errf(e, TERN_EUNSUPPORTED, "model type '%s' (only silero-16k)",
				 tern_quote_str(q, sizeof q, type));
	const struct ggml_legacy_hparam *maj = ggml_legacy_find_hparam(f, "version_major");
	if (!maj)
		return tern_errf(e, TERN_EFORMAT, "hyperparameter version_major missing");
	if (maj->i != 5 && maj->i != 6)
		return tern_errf(e, TERN_EUNSUPPORTED, "Silero version %lld (5 and 6 are supported)", (long long)maj->i);
	int rc = check_hparams(f, e);
	if (rc)
		return rc;
	const struct tern_tensor_view *t[T_COUNT];
	if ((rc = check_tensors(f, t, e)))
		return rc;

	struct tern_silero *m = calloc(1, sizeof *m);
	if (!m)
		return tern_errf(e, TERN_ENOMEM, "out of memory");
	snprintf(m->version, sizeof m->version, "v%d", (int)maj->i);
	size_t sz[T_COUNT] = {0};
	sz[T_BASIS] = panel_floats(N_STFT, N_FFT);
	for (int i = 0; i < 4; i++) {
		sz[T_E0W + 2 * i] = panel_floats(enc_shape[i].out, 3 * enc_shape[i].in);
		sz[T_E0B + 2 * i] = (size_t)enc_shape[i].out;
	}
	sz[T_WIH] = sz[T_WHH] = panel_floats(N_GATES, HID);
	sz[T_BIH] = sz[T_BHH] = N_GATES;
	sz[T_DECW] = panel_floats(1, HID);
	size_t off[T_COUNT], total = 0;
	for (int i = 0; i < T_COUNT; i++) {
		off[i] = total;
		total += (sz[i] + 15) & ~(size_t)15; /* each array 64-byte aligned */
	}
	m->mem = aligned_alloc(64, total * sizeof(float));
	if (!m->mem) {
		free(m);
		return tern_errf(e, TERN_ENOMEM, "out of memory for %zu bytes of weights", total * sizeof(float));
	}
	float *p = m->mem;
	pack(p + off[T_BASIS], t[T_BASIS], N_STFT, N_FFT);
	m->basis = p + off[T_BASIS];
	for (int i = 0; i < 4; i++) {
		int in = enc_shape[i].in, o = enc_shape[i].out;
		float *w = p + off[T_E0W + 2 * i], *b = p + off[T_E0B + 2 * i];
		pack(w, t[T_E0W + 2 * i], o, 3 * in);
		for (int r = 0; r < o; r++)
			b[r] = elem(t[T_E0B + 2 * i], (size_t)r);
		m->enc[i] = (struct conv){.in = in, .out = o, .stride = enc_shape[i].stride, .w = w, .b = b};
	}
	pack(p + off[T_WIH], t[T_WIH], N_GATES, HID);
	pack(p + off[T_WHH], t[T_WHH], N_GATES, HID);
	m->w_ih = p + off[T_WIH];
	m->w_hh = p + off[T_WHH];
	float *bih = p + off[T_BIH], *bhh = p + off[T_BHH], *dw = p + off[T_DECW];
	for (int r = 0; r < N_GATES; r++) {
		bih[r] = elem(t[T_BIH], (size_t)r);
		bhh[r] = elem(t[T_BHH], (size_t)r);
	}
	pack(dw, t[T_DECW], 1, HID);
	m->b_ih = bih;
	m->b_hh = bhh;
	m->dec_w = dw;
	m->dec_b = elem(t[T_DECB], 0);
	*out = m;
	return 0;
}

int tern_silero_load(struct tern_silero **out, const char *path, tern_err *e)
{
	*out = NULL;
	ggml_legacy *f = NULL;
	int rc = ggml_legacy_open(&f, path, e);
	if (rc)
		return rc;
	rc = load_file(out, f, e);
	ggml_legacy_close(f);
	return rc;
}

int tern_silero_load_mem(struct tern_silero **out, const void *buf, size_t size, tern_err *e)
{
	*out = NULL;
	ggml_legacy *f = NULL;
	int rc = ggml_legacy_open_mem(&f, buf, size, e);
	if (rc)
		return rc;
	rc = load_file(out, f, e);
	ggml_legacy_close(f);
	return rc;
}

void tern_silero_free(struct tern_silero *m)
{
	if (!m)
		return;
	free(m->mem);
	free(m);
}

const char *tern_silero_version(const struct tern_silero *m) { return m->version; }

/* ---- the plain C kernels (the reference of silero_avx2.c) ------------------ */

/* One ggml dot (see silero_kern.h): x[cols] with the column of a panel
 * block whose elements are w[k * SILERO_PANEL]. */
static float dot_ggml(const float *x, const float *w, int cols)
{
	float p[SILERO_DOT_PARTS] = {0}, s[16], t[8], u[4];
	int np = cols & ~(SILERO_DOT_PARTS - 1);
	for (int i = 0; i < np; i += SILERO_DOT_PARTS)
		for (int m = 0; m < SILERO_DOT_PARTS; m++)
			p[m] = fmaf(x[i + m], w[(size_t)(i + m) * SILERO_PANEL], p[m]);
	for (int l = 0; l < 16; l++)
		s[l] = (p[l] + p[l + 32]) + (p[l + 16] + p[l + 48]);
	for (int l = 0; l < 8; l++)
		t[l] = s[l] + s[l + 8];
	for (int l = 0; l < 4; l++)
		u[l] = t[l] + t[l + 4];
	double d = (u[0] + u[2]) + (u[1] + u[3]);
	for (int k = np; k < cols; k++)
		d += (double)(x[k] * w[(size_t)k * SILERO_PANEL]);
	return (float)d;
}

static void gemm_c(const float *panel, int nblk, int cols, const float *const *x, int n, float *y, size_t ldy)
{
	for (int b = 0; b < nblk; b++) {
		const float *w = panel + (size_t)b * cols * SILERO_PANEL;
		for (int j = 0; j < n; j++)
			for (int r = 0; r < SILERO_PANEL; r++)
				y[(size_t)j * ldy + (size_t)b * SILERO_PANEL + (size_t)r] = dot_ggml(x[j], w + r, cols);
	}
}

static void round_f16_c(float *x, size_t n)
{
	for (size_t i = 0; i < n; i++)
		x[i] = quant_fp16_to_f32(quant_f32_to_fp16(x[i]));
}

static const struct silero_kern kern_c = {.gemm = gemm_c, .round_f16 = round_f16_c};

static const struct silero_kern *pick_kern(void)
{
#if defined(__x86_64__)
	if (quant_isa() == QUANT_ISA_AVX2 || quant_isa() == QUANT_ISA_AVX512) {
		const struct quant_cpu *c = quant_cpu();
		if (c->avx2 && c->fma && c->f16c)
			return &silero_kern_avx2;
	}
#endif
	return &kern_c;
}

/* ---- one stream ------------------------------------------------------------- */

/* Activations of a batch of up to SILERO_CHUNK windows, window after
 * window; a conv's input rows are [time][channels]. */
struct tern_vad {
	const struct tern_silero *m;
	const struct silero_kern *k;
	float h[HID], c[HID];       /* LSTM state */
	float *mem;                 /* everything below */
	float *pad;                 /* [CHUNK][PADDED] windows, reflection-padded, f16-rounded */
	float *mag;                 /* [CHUNK][N_FRAMES][N_BINS] */
	float *y1;                  /* [CHUNK][4][128] */
	float *y2;                  /* [CHUNK][2][64] */
	float *y3;                  /* [CHUNK][1][64] */
	float *x;                   /* [CHUNK][HID] LSTM input */
	float *gih;                 /* [CHUNK][N_GATES] W_ih x */
	float *col;                 /* [CHUNK * N_FRAMES][3 * N_BINS] im2col rows */
	float *out;                 /* [CHUNK * N_FRAMES][STFT_LD] products */
	const float **rows;         /* [CHUNK * N_FRAMES] row pointers */
	float win[TERN_VAD_WINDOW]; /* a zero-padded last window */
};

#define STFT_LD ((N_STFT + SILERO_PANEL - 1) / SILERO_PANEL * SILERO_PANEL)

int tern_vad_new(struct tern_vad **out, const struct tern_silero *m, tern_err *e)
{
	*out = NULL;
	struct tern_vad *v = calloc(1, sizeof *v);
	const size_t C = SILERO_CHUNK;
	size_t n_pad = C * PADDED, n_mag = C * N_FRAMES * N_BINS, n_y1 = C * 4 * 128, n_y2 = C * 2 * 64,
	       n_y3 = C * 64, n_x = C * HID, n_gih = C * N_GATES, n_col = C * N_FRAMES * 3 * N_BINS,
	       n_out = C * N_FRAMES * STFT_LD;
	size_t total = n_pad + n_mag + n_y1 + n_y2 + n_y3 + n_x + n_gih + n_col + n_out;
	if (v) {
		v->mem = aligned_alloc(64, (total * sizeof(float) + 63) & ~(size_t)63);
		v->rows = malloc(C * N_FRAMES * sizeof *v->rows);
	}
	if (!v || !v->mem || !v->rows) {
		tern_vad_free(v);
		return tern_errf(e, TERN_ENOMEM, "out of memory for the VAD state");
	}
	memset(v->mem, 0, total * sizeof(float));
	float *p = v->mem;
	v->pad = p, p += n_pad;
	v->mag = p, p += n_mag;
	v->y1 = p, p += n_y1;
	v->y2 = p, p += n_y2;
	v->y3 = p, p += n_y3;
	v->x = p, p += n_x;
	v->gih = p, p += n_gih;
	v->col = p, p += n_col;
	v->out = p;
	v->m = m;
	v->k = pick_kern();
	*out = v;
	return 0;
}

void tern_vad_reset(struct tern_vad *v)
{
	memset(v->h, 0, sizeof v->h);
	memset(v->c, 0, sizeof v->c);
}

void tern_vad_free(struct tern_vad *v)
{
	if (!v)
		return;
	free(v->mem);
	free(v->rows);
	free(v);
}

static float sigmoid(float x) { return 1.0f / (1.0f + expf(-x)); }

/* One conv of nw windows: each window's input is [t_in][c->in]; row t of
 * its im2col holds input (t * stride - 1 + k, i) at i * 3 + k (ggml's
 * order), zero outside; the product goes to v->out [nw * t_out][c->out]. */
static void conv(struct tern_vad *v, const struct conv *c, const float *in, int t_in, int t_out, int nw)
{
	size_t K = 3 * (size_t)c->in;
	for (int w = 0; w < nw; w++) {
		const float *a = in + (size_t)w * t_in * c->in;
		for (int t = 0; t < t_out; t++) {
			float *row = v->col + (size_t)(w * t_out + t) * K;
			for (int kk = 0; kk < 3; kk++) {
				int j = t * c->stride - 1 + kk;
				for (int i = 0; i < c->in; i++)
					row[3 * i + kk] = j >= 0 && j < t_in ? a[(size_t)j * c->in + i] : 0.0f;
			}
			v->rows[w * t_out + t] = row;
		}
	}
	v->k->gemm(c->w, c->out / SILERO_PANEL, (int)K, v->rows, nw * t_out, v->out, (size_t)c->out);
}

/* dst[j][r] = ReLU(v->out[j][r] + b[r]) for n rows of nr, f16-rounded if
 * a conv reads them next. */
static void bias_relu(struct tern_vad *v, const float *b, int nr, int n, float *dst, bool round)
{
	for (int j = 0; j < n; j++) {
		const float *o = v->out + (size_t)j * nr;
		float *d = dst + (size_t)j * nr;
		for (int r = 0; r < nr; r++) {
			float s = o[r] + b[r];
			d[r] = s > 0 ? s : 0;
		}
		if (round)
			v->k->round_f16(d, (size_t)nr);
	}
}

/* The probabilities of nw windows (win[i] points at 512 samples). */
static void forward(struct tern_vad *v, const float *const *win, int nw, float *probs)
{
	const struct tern_silero *m = v->m;
	const struct silero_kern *k = v->k;
	const float **rows = v->rows;

	/* STFT: the frames are slices of the padded windows */
	for (int w = 0; w < nw; w++) {
		float *p = v->pad + (size_t)w * PADDED;
		memcpy(p + PAD, win[w], TERN_VAD_WINDOW * sizeof *p);
		k->round_f16(p + PAD, TERN_VAD_WINDOW);
		for (int i = 1; i <= PAD; i++) {
			p[PAD - i] = p[PAD + i];
			p[PAD + TERN_VAD_WINDOW - 1 + i] = p[PAD + TERN_VAD_WINDOW - 1 - i];
		}
		for (int f = 0; f < N_FRAMES; f++)
			rows[w * N_FRAMES + f] = p + f * HOP;
	}
	k->gemm(m->basis, STFT_LD / SILERO_PANEL, N_FFT, rows, nw * N_FRAMES, v->out, STFT_LD);
	for (int j = 0; j < nw * N_FRAMES; j++) {
		const float *o = v->out + (size_t)j * STFT_LD;
		float *d = v->mag + (size_t)j * N_BINS;
		for (int i = 0; i < N_BINS; i++) {
			float re2 = o[i] * o[i], im2 = o[N_BINS + i] * o[N_BINS + i];
			d[i] = sqrtf(re2 + im2);
		}
		k->round_f16(d, N_BINS);
	}

	/* the encoder: 4 -> 4 -> 2 -> 1 -> 1 positions */
	conv(v, &m->enc[0], v->mag, N_FRAMES, 4, nw);
	bias_relu(v, m->enc[0].b, 128, nw * 4, v->y1, true);
	conv(v, &m->enc[1], v->y1, 4, 2, nw);
	bias_relu(v, m->enc[1].b, 64, nw * 2, v->y2, true);
	conv(v, &m->enc[2], v->y2, 2, 1, nw);
	bias_relu(v, m->enc[2].b, 64, nw, v->y3, true);
	conv(v, &m->enc[3], v->y3, 1, 1, nw);
	bias_relu(v, m->enc[3].b, HID, nw, v->x, false); /* the LSTM's f32 product: not rounded */

	/* the LSTM's input product for the whole batch */
	for (int w = 0; w < nw; w++)
		rows[w] = v->x + (size_t)w * HID;
	k->gemm(m->w_ih, N_GATES / SILERO_PANEL, HID, rows, nw, v->gih, N_GATES);

	/* the cell, window after window, with whisper.cpp's operations:
	 * (W_ih x + b_ih) + (W_hh h + b_hh), c = f * c + i * g, h = o * tanh(c),
	 * then ReLU, the decoder's f16 product, + bias, sigmoid */
	float hh[N_GATES], y[HID];
	const float *hrow[1] = {v->h}, *yrow[1] = {y};
	for (int w = 0; w < nw; w++) {
		const float *gi = v->gih + (size_t)w * N_GATES;
		k->gemm(m->w_hh, N_GATES / SILERO_PANEL, HID, hrow, 1, hh, 0);
		for (int r = 0; r < N_GATES; r++)
			hh[r] = (gi[r] + m->b_ih[r]) + (hh[r] + m->b_hh[r]);
		for (int r = 0; r < HID; r++) {
			float ig = sigmoid(hh[r]), fg = sigmoid(hh[HID + r]);
			float gg = tanhf(hh[2 * HID + r]), og = sigmoid(hh[3 * HID + r]);
			float fc = fg * v->c[r], ic = ig * gg;
			v->c[r] = fc + ic;
			v->h[r] = og * tanhf(v->c[r]);
			y[r] = v->h[r] > 0 ? v->h[r] : 0;
		}
		k->round_f16(y, HID);
		float z[SILERO_PANEL];
		k->gemm(m->dec_w, 1, HID, yrow, 1, z, 0);
		probs[w] = sigmoid(z[0] + m->dec_b);
	}
}

float tern_vad_window(struct tern_vad *v, const float window[TERN_VAD_WINDOW])
{
	const float *const w[1] = {window};
	float p;
	forward(v, w, 1, &p);
	return p;
}

int tern_vad_probs(struct tern_vad *v, const float *pcm, size_t n, float *probs, tern_err *e)
{
	if (n && (!pcm || !probs))
		return tern_errf(e, TERN_EINVAL, "vad: %zu samples without a buffer", n);
	tern_vad_reset(v);
	size_t nw = (n + TERN_VAD_WINDOW - 1) / TERN_VAD_WINDOW;
	const float *win[SILERO_CHUNK];
	for (size_t i0 = 0; i0 < nw; i0 += SILERO_CHUNK) {
		int nb = nw - i0 < SILERO_CHUNK ? (int)(nw - i0) : SILERO_CHUNK;
		for (int j = 0; j < nb; j++) {
			size_t s = (i0 + (size_t)j) * TERN_VAD_WINDOW;
			if (n - s >= TERN_VAD_WINDOW) {
				win[j] = pcm + s;
			} else {
				memset(v->win, 0, sizeof v->win);
				memcpy(v->win, pcm + s, (n - s) * sizeof *pcm);
				win[j] = v->win;
			}
		}
		forward(v, win, nb, probs + i0);
	}
	return 0;
}
