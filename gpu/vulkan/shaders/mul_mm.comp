#version 450
// types: f32 f16 bf16 q4_0 q4_1 q5_0 q5_1 q8_0 q2_k q3_k q4_k q5_k q6_k iq4_nl iq4_xs mxfp4 iq2_xxs iq2_xs iq2_s iq3_xxs iq3_s iq1_s iq1_m tq1_0 tq2_0
/* mul_mm.comp - y = W x for a batch (lib/backend.h mat_mul, and per head
 * mat_mul_heads: workgroup z is the head, each with its own offsets): a
 * tiled GEMM, a 64-row x BN-token tile of y per workgroup of 256
 * invocations, each accumulating 4 x TN outputs (TN = SPEC1: 1, 2 or 4,
 * BN = 16 TN; a small batch takes a narrow tile rather than padding to
 * 64 tokens). The K dimension goes by
 * 32 columns: the weight tile is decoded once into shared memory (one
 * 8-element unit per invocation for the block types), the activation
 * tile copied beside it, then every invocation runs its 4 x 4 outer
 * products over the 32 columns. x holds the activations as actq.comp left
 * them (for the float types, x itself). */
#include "common.glsl"

#if defined(TYPE_Q4_1) || defined(TYPE_Q5_1)
#define NO_MIN
#endif
#define WBIND 0
#include "weights.glsl"
#include "dequant.glsl"

layout(binding = 1) readonly buffer X { float x[]; };
layout(binding = 2) writeonly buffer Y { float y[]; };

layout(push_constant) uniform PC {
	uint rows, cols, ntok;
	uint ow, nb1;        /* bytes: row 0 in the binding, a row */
	uint ox, xstride;    /* floats: token 0, a token */
	uint oy, ystride;    /* floats */
	uint sofs;           /* Q8_1 block sums: floats after a token's start */
	uint wz, xz, yz;     /* per workgroup z: bytes of W, floats of x and y */
} pc;

#define BM 64u
#define TN SPEC1
#define BN (16u * TN)
#define BK 32u
shared float As[BK][BM + 1u];
shared float Bs[BK][64u + 1u];
#ifdef NO_MIN
shared float Ms[BM], Ss[64];
#endif

void main()
{
	uint tid = gl_LocalInvocationID.x;
	uint m0 = gl_WorkGroupID.x * BM, n0 = gl_WorkGroupID.y * BN, z = gl_WorkGroupID.z;
	uint ow = pc.ow + z * pc.wz, ox = pc.ox + z * pc.xz, oy = pc.oy + z * pc.yz;
	uint tx = tid % 16u, ty = tid / 16u;
	float acc[4][4];
	[[unroll]] for (uint i = 0u; i < 4u; i++)
		[[unroll]] for (uint j = 0u; j < 4u; j++)
			acc[i][j] = 0.0;
	/* TN of the 4 token columns are used */
	for (uint k0 = 0u; k0 < pc.cols; k0 += BK) {
		/* the weight tile, decoded once */
		for (uint i = tid * UNIT; i < BM * BK; i += 256u * UNIT) {
			uint r = i / BK, k = i % BK;
			float v[UNIT];
			if (m0 + r < pc.rows && k0 + k < pc.cols)
				decu(ow + (m0 + r) * pc.nb1, k0 + k, v);
			else
				[[unroll]] for (uint u = 0u; u < UNIT; u++)
					v[u] = 0.0;
			[[unroll]] for (uint u = 0u; u < UNIT; u++)
				As[k + u][r] = v[u];
		}
		for (uint i = tid; i < BN * BK; i += 256u) {
			uint t = i / BK, k = i % BK;
			Bs[k][t] = n0 + t < pc.ntok && k0 + k < pc.cols ? x[ox + (n0 + t) * pc.xstride + k0 + k] : 0.0;
		}
#ifdef NO_MIN
		/* BK is one block: its minimum per row, its sum per token */
		if (tid < BM)
			Ms[tid] = m0 + tid < pc.rows ? block_min(ow + (m0 + tid) * pc.nb1 + k0 / BLCK * BSIZE) : 0.0;
		else if (tid < BM + BN)
			Ss[tid - BM] = n0 + tid - BM < pc.ntok ? x[ox + (n0 + tid - BM) * pc.xstride + pc.sofs + k0 / BLCK] : 0.0;
#endif
		barrier();
		for (uint k = 0u; k < BK; k++) {
			float a[4], b[4];
			[[unroll]] for (uint i = 0u; i < 4u; i++) {
				a[i] = As[k][tx + 16u * i];
				b[i] = i < TN ? Bs[k][ty + 16u * i] : 0.0;
			}
			[[unroll]] for (uint i = 0u; i < 4u; i++)
				[[unroll]] for (uint j = 0u; j < TN; j++)
					acc[i][j] += a[i] * b[j];
		}
#ifdef NO_MIN
		[[unroll]] for (uint i = 0u; i < 4u; i++)
			[[unroll]] for (uint j = 0u; j < TN; j++)
				acc[i][j] += Ms[tx + 16u * i] * Ss[ty + 16u * j];
#endif
		barrier();
	}
	[[unroll]] for (uint j = 0u; j < TN; j++) {
		uint t = n0 + ty + 16u * j;
		[[unroll]] for (uint i = 0u; i < 4u; i++) {
			uint r = m0 + tx + 16u * i;
			if (r < pc.rows && t < pc.ntok)
				y[oy + t * pc.ystride + r] = acc[i][j];
		}
	}
}
