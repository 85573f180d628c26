#version 450
/* eltwise.comp - the element-wise ops (lib/backend.h add, scale, glu,
 * unary) over n f32 elements: y[i] = f(a[i], b[i]); b may be one row of
 * ne0 added to every row (a bias). Offsets (o*) are in elements from the
 * start of each binding. */
#include "common.glsl"

layout(binding = 0) readonly buffer A { float a[]; };
layout(binding = 1) readonly buffer B { float b[]; };
layout(binding = 2) writeonly buffer Y { float y[]; };

layout(push_constant) uniform PC {
	uint op, n, ne0, b_row;
	uint oa, ob, oy;
	float s;
} pc;

/* pc.op, as vk_ops.c sets it */
#define OP_ADD 0u
#define OP_SCALE 1u
#define OP_SWIGLU 2u
#define OP_GEGLU 3u
#define OP_SWIGLU_OAI 4u
#define OP_GELU 5u
#define OP_GELU_ERF 6u
#define OP_SILU 7u
#define OP_SIGMOID 8u

float gelu(float x)
{
	/* 0.5 x (1 + tanh u) = x / (1 + e^(-2u)): no cancellation where tanh
	 * nears -1, and no tanh, which some drivers compute less exactly */
	float u = 0.7978845608028654 * (x + 0.044715 * x * x * x);
	return x / (1.0 + exp(min(-2.0 * u, 88.0)));
}

float erf_approx(float x)
{
	/* Abramowitz-Stegun 7.1.26 is too coarse (1.5e-7 absolute is fine,
	 * but its relative error near 0 is not): W. J. Cody's rational
	 * erf through erfc for |x| >= 0.5 is long; this is the series near
	 * 0 and the complementary continued form beyond, both in f32. */
	float ax = abs(x);
	float r;
	if (ax < 0.5) {
		float t = x * x;
		r = x * (1.1283791670955126 + t * (-0.37612638903183754 + t * (0.11283791670955126 +
		     t * (-0.026866170645131252 + t * (0.005223977625442188 + t * -0.0008548327023450852)))));
		return r;
	}
	/* erfc(ax) = exp(-ax^2) * P(ax)/Q(ax) (Numerical Recipes erfcc, relative 1.2e-7) */
	float z = ax, t = 1.0 / (1.0 + 0.5 * z);
	float e = t * exp(-z * z - 1.26551223 + t * (1.00002368 + t * (0.37409196 + t * (0.09678418 +
	          t * (-0.18628806 + t * (0.27886807 + t * (-1.13520398 + t * (1.48851587 +
	          t * (-0.82215223 + t * 0.17087277)))))))));
	r = 1.0 - e;
	return x < 0.0 ? -r : r;
}

float act(uint op, float x)
{
	switch (op) {
	case OP_GELU:
		return gelu(x);
	case OP_GELU_ERF:
		return 0.5 * x * (1.0 + erf_approx(x * 0.7071067811865476));
	case OP_SIGMOID:
		return 1.0 / (1.0 + exp(-x));
	default: /* OP_SILU */
		return x / (1.0 + exp(-x));
	}
}

void main()
{
	uint i = flat_id();
	if (i >= pc.n)
		return;
	float x = a[pc.oa + i];
	float r;
	switch (pc.op) {
	case OP_ADD:
		r = x + b[pc.ob + (pc.b_row != 0u ? i % pc.ne0 : i)];
		break;
	case OP_SCALE:
		r = x * pc.s;
		break;
	case OP_SWIGLU:
		r = act(OP_SILU, x) * b[pc.ob + i];
		break;
	case OP_GEGLU:
		r = gelu(x) * b[pc.ob + i];
		break;
	case OP_SWIGLU_OAI: {
		float g = min(x, 7.0), u = clamp(b[pc.ob + i], -7.0, 7.0);
		r = g / (1.0 + exp(-1.702 * g)) * (u + 1.0);
		break;
	}
	default:
		r = act(pc.op, x);
		break;
	}
	y[pc.oy + i] = r;
}
