/* mel.c - Whisper's log-mel spectrogram (see mel.h for the definition).
 *
 * The FFT is FFTW3's single-precision real transform (one plan per front
 * end, made once). The filter bank is sparse - each triangular filter
 * covers a few bins - so each filter keeps the range of its non-zero bins
 * and the product touches only those (about 3% of the dense 80 x 201). */
#include "lib/speech/mel.h"

#include <fftw3.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define PAD_FRONT (TERN_MEL_N_FFT / 2) /* reflected samples before the signal */
#define LOG_FLOOR (-10.0f)             /* log10(1e-10) */

struct tern_mel {
	uint32_t n_mel;
	float *filters;   /* [n_mel][TERN_MEL_BINS] */
	uint16_t *lo, *hi; /* non-zero bins of filter j: [lo[j], hi[j]) */
	float window[TERN_MEL_N_FFT];
	float *in;          /* fftwf_malloc'd [TERN_MEL_N_FFT] */
	fftwf_complex *out; /* [TERN_MEL_BINS] */
	float power[TERN_MEL_BINS];
	fftwf_plan plan;
};

/* FFTW's planner is not thread-safe: plans are made and destroyed under
 * one lock, executing them needs none. */
static pthread_mutex_t plan_lock = PTHREAD_MUTEX_INITIALIZER;

static float rd_f32le(const unsigned char *p)
{
	uint32_t u = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
	float f;
	memcpy(&f, &u, 4);
	return f;
}

int tern_mel_new(struct tern_mel **out, uint32_t n_mel, uint32_t n_bins, const void *filters, tern_err *e)
{
	*out = NULL;
	if (n_bins != TERN_MEL_BINS)
		return tern_errf(e, TERN_EINVAL, "mel filter bank has %u bins per filter, expected %d", n_bins,
				 TERN_MEL_BINS);
	if (n_mel == 0 || n_mel > 512)
		return tern_errf(e, TERN_EINVAL, "mel filter bank has %u filters, expected 1 to 512", n_mel);
	struct tern_mel *m = calloc(1, sizeof(*m));
	if (!m)
		return tern_errf(e, TERN_ENOMEM, "out of memory for the mel front end");
	m->n_mel = n_mel;
	m->filters = malloc((size_t)n_mel * TERN_MEL_BINS * sizeof(float));
	m->lo = malloc(n_mel * sizeof(uint16_t));
	m->hi = malloc(n_mel * sizeof(uint16_t));
	if (!m->filters || !m->lo || !m->hi) {
		tern_mel_free(m);
		return tern_errf(e, TERN_ENOMEM, "out of memory for the mel filter bank");
	}
	const unsigned char *src = filters;
	for (uint32_t j = 0; j < n_mel; j++) {
		uint16_t lo = TERN_MEL_BINS, hi = 0;
		for (uint32_t k = 0; k < TERN_MEL_BINS; k++) {
			float v = rd_f32le(src + 4 * ((size_t)j * TERN_MEL_BINS + k));
			if (!isfinite(v) || v < 0) {
				tern_mel_free(m);
				return tern_errf(e, TERN_EINVAL, "mel filter %u, bin %u: %g is not a filter weight", j,
						 k, (double)v);
			}
			m->filters[(size_t)j * TERN_MEL_BINS + k] = v;
			if (v != 0) {
				if (lo == TERN_MEL_BINS)
					lo = (uint16_t)k;
				hi = (uint16_t)(k + 1);
			}
		}
		m->lo[j] = lo == TERN_MEL_BINS ? 0 : lo;
		m->hi[j] = hi;
	}
	/* periodic Hann window, as torch.hann_window and whisper.cpp make it */
	for (int i = 0; i < TERN_MEL_N_FFT; i++)
		m->window[i] = (float)(0.5 * (1.0 - cosf((float)(2.0 * M_PI * i / TERN_MEL_N_FFT))));
	pthread_mutex_lock(&plan_lock);
	m->in = fftwf_malloc(TERN_MEL_N_FFT * sizeof(float));
	m->out = fftwf_malloc(TERN_MEL_BINS * sizeof(fftwf_complex));
	if (m->in && m->out)
		m->plan = fftwf_plan_dft_r2c_1d(TERN_MEL_N_FFT, m->in, m->out, FFTW_ESTIMATE);
	pthread_mutex_unlock(&plan_lock);
	if (!m->plan) {
		tern_mel_free(m);
		return tern_errf(e, TERN_ENOMEM, "cannot make the FFT plan of the mel front end");
	}
	*out = m;
	return 0;
}

void tern_mel_free(struct tern_mel *m)
{
	if (!m)
		return;
	pthread_mutex_lock(&plan_lock);
	if (m->plan)
		fftwf_destroy_plan(m->plan);
	fftwf_free(m->in);
	fftwf_free(m->out);
	pthread_mutex_unlock(&plan_lock);
	free(m->filters);
	free(m->lo);
	free(m->hi);
	free(m);
}

uint32_t tern_mel_n_mel(const struct tern_mel *m)
{
	return m->n_mel;
}

size_t tern_mel_n_frames(size_t n)
{
	return (n + (size_t)TERN_MEL_PAD_S * TERN_MEL_RATE) / TERN_MEL_HOP;
}

/* Sample p of the padded signal: x[200 - p] reflected in front, then x,
 * then zeros. A signal shorter than the reflection reads zeros where
 * whisper.cpp would read past its end. */
static inline float padded_at(const float *pcm, size_t n, size_t p)
{
	if (p < PAD_FRONT) {
		size_t i = PAD_FRONT - p;
		return i < n ? pcm[i] : 0.0f;
	}
	p -= PAD_FRONT;
	return p < n ? pcm[p] : 0.0f;
}

float tern_mel_log(struct tern_mel *m, const float *pcm, size_t n, size_t f0, size_t nf, float *out, size_t stride)
{
	/* frames starting past the signal and its front padding hold only
	 * zeros: whisper.cpp computes frames up to (n + 200) / 160 */
	const size_t n_live = (n + PAD_FRONT) / TERN_MEL_HOP + 1;
	float vmax = LOG_FLOOR;
	for (size_t f = f0; f < f0 + nf; f++) {
		float *col = out + (f - f0);
		if (f >= n_live) {
			for (uint32_t j = 0; j < m->n_mel; j++)
				col[(size_t)j * stride] = LOG_FLOOR;
			continue;
		}
		size_t off = f * TERN_MEL_HOP;
		if (off >= PAD_FRONT && off - PAD_FRONT + TERN_MEL_N_FFT <= n) {
			const float *x = pcm + (off - PAD_FRONT);
			for (int i = 0; i < TERN_MEL_N_FFT; i++)
				m->in[i] = m->window[i] * x[i];
		} else {
			for (int i = 0; i < TERN_MEL_N_FFT; i++)
				m->in[i] = m->window[i] * padded_at(pcm, n, off + (size_t)i);
		}
		fftwf_execute(m->plan);
		for (int k = 0; k < TERN_MEL_BINS; k++)
			m->power[k] = m->out[k][0] * m->out[k][0] + m->out[k][1] * m->out[k][1];
		for (uint32_t j = 0; j < m->n_mel; j++) {
			const float *w = m->filters + (size_t)j * TERN_MEL_BINS;
			double sum = 0;
			for (int k = m->lo[j]; k < m->hi[j]; k++)
				sum += (double)(m->power[k] * w[k]);
			float v = (float)log10(sum > 1e-10 ? sum : 1e-10);
			col[(size_t)j * stride] = v;
			if (v > vmax)
				vmax = v;
		}
	}
	return vmax;
}

void tern_mel_normalize(float *v, size_t count, float max)
{
	const float lo = (float)((double)max - 8.0);
	for (size_t i = 0; i < count; i++) {
		float x = v[i] < lo ? lo : v[i];
		v[i] = (float)(((double)x + 4.0) / 4.0);
	}
}

int tern_mel_compute(struct tern_mel *m, const float *pcm, size_t n, float **out, size_t *n_len, tern_err *e)
{
	*out = NULL;
	*n_len = 0;
	size_t nf = tern_mel_n_frames(n);
	/* one buffer of at most 4 GiB (about 3.7 hours at 80 filters) */
	if (n > SIZE_MAX / 2 || nf > ((size_t)1 << 30) / m->n_mel)
		return tern_errf(e, TERN_ERANGE, "%zu samples are too many for one mel spectrogram", n);
	float *buf = malloc(nf * m->n_mel * sizeof(float));
	if (!buf)
		return tern_errf(e, TERN_ENOMEM, "out of memory for a mel spectrogram of %zu frames", nf);
	float vmax = tern_mel_log(m, pcm, n, 0, nf, buf, nf);
	tern_mel_normalize(buf, nf * m->n_mel, vmax);
	*out = buf;
	*n_len = nf;
	return 0;
}
