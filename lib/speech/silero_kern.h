/* silero_kern.h - the products and conversions of the Silero forward pass
 * (lib/speech/silero.c), one table per instruction set: plain C in
 * silero.c (the reference, and the path of CPUs without AVX2) and AVX2 +
 * FMA + F16C in silero_avx2.c. Internal to lib/speech.
 *
 * Weights are panels: a [rows][cols] matrix stored as ceil(rows / 16)
 * blocks of [cols][16] f32 (16 consecutive rows interleaved, the pad rows
 * zero), 32-byte aligned, so that one k step of a block is two 8-lane
 * loads. Activations are rows given by pointers: a conv's im2col rows are
 * overlapping slices of one padded buffer, never copied. */
#ifndef TERN_SILERO_KERN_H
#define TERN_SILERO_KERN_H

#include <stddef.h>

#define SILERO_PANEL 16

/* ggml's dot product (ggml_vec_dot_f16 / _f32 as built for AVX-512,
 * which whisper.cpp's VAD runs on such a machine), term for term: 64
 * partial sums, partial m taking the products of k = m, m + 64, ... in
 * order (each an FMA), combined by a fixed tree: s[l] = (p[l] + p[l+32]) +
 * (p[l+16] + p[l+48]) for l < 16, then t[l] = s[l] + s[l+8] (l < 8),
 * u[l] = t[l] + t[l+4] (l < 4), r = (u[0] + u[2]) + (u[1] + u[3]); the
 * products of the k beyond the last multiple of 64 are added to r in
 * double. Every conv input is rounded to f16 (below), so one f32 ulp of
 * difference in a sum can move a value to the next f16 and the error
 * grows through the layers: the same order gives the same bits. */
#define SILERO_DOT_PARTS 64

struct silero_kern {
	/* y[j * ldy + r] = the ggml dot of row r of the panel matrix and
	 * x[j][0..cols) for j < n and r < 16 * nblk (pad rows included: ldy
	 * covers them). The result is the same bits in every table. */
	void (*gemm)(const float *panel, int nblk, int cols, const float *const *x, int n, float *y, size_t ldy);
	/* x[i] = x[i] rounded to the nearest f16 (ties to even), as ggml's
	 * im2col does to a conv's input before its f16 product. */
	void (*round_f16)(float *x, size_t n);
};

#if defined(__x86_64__)
extern const struct silero_kern silero_kern_avx2;
#endif

#endif
