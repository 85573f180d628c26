#version 450
// types: f32 f16 bf16 q4_0 q4_1 q5_0 q5_1 q8_0 q2_k q3_k q4_k q5_k q6_k iq4_nl iq4_xs mxfp4 iq2_xxs iq2_xs iq2_s iq3_xxs iq3_s iq1_s iq1_m tq1_0 tq2_0
// nosg: no
/* mul_mm_cm.comp - mul_mm.comp's GEMM (the same tiles, push constants and
 * grid: a 64-row x BN-token tile of y per workgroup, BN = 16 TN, TN =
 * SPEC1, workgroup z a head) on the tensor units, through
 * VK_NV_cooperative_matrix: 16 x 16 x 16 products of f16 matrices into f32
 * accumulators, a workgroup of 128 invocations, each subgroup (a warp of
 * 32 on NVIDIA) taking 16 rows of the tile across its BN tokens.
 *
 * f16 holds 11 bits; the weights as decoded (d q, d an f16 and q up to 8
 * bits) and the activations (actq.comp's d q) need more. With SPEC2 = 3
 * each operand is split into a high and a low f16 (v = hi + lo, lo the
 * rounded remainder) and the tile takes hi hi + lo hi + hi lo: the product
 * is then good to about 2^-22 relative, as an f32 sum is, and this shader
 * holds to the op test's thresholds (tests/test_backend_ops.c nmse_max).
 * SPEC2 = 1 takes hi hi alone (llama.cpp's f16 GEMM; NMSE ~1e-7), three
 * times fewer tensor operations. The block types' values are scaled by
 * 2^8 before the split (and the sums by 2^-8 after, both exact), so that
 * small weights' low halves stay above f16's subnormals.
 *
 * Q4_1 / Q5_1 (NO_MIN): the block minimum is left out of the decoded
 * weights and added as the reference does, m s per block (s the Q8_1
 * block sum), in f32 by the invocation that writes the output.
 *
 * Never run on lavapipe (it has no cooperative matrices); a device that
 * has them checks this shader against mul_mm.comp when the backend opens
 * (vk_products.c vk_coopmat_check) and falls back to it on disagreement. */
#extension GL_NV_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
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
#define WG 128u
#define SPLIT (SPEC2 == 3u)
/* strides in elements: rows of 16-byte multiples, as the loads want */
#define LDA (BK + 8u)
#define LDC (BM + 4u)
const float WSCALE = UNIT == 8u ? 256.0 : 1.0, WUNSCALE = 1.0 / WSCALE;

shared float16_t Ah[BM * LDA], Al[BM * LDA]; /* W tile, row-major: (r, k) at r LDA + k */
shared float16_t Bh[64u * LDA], Bl[64u * LDA]; /* x tile: (k, t) at t LDA + k, column-major */
shared float Cs[64u * LDC];                     /* y tile: (r, t) at t LDC + r */
#ifdef NO_MIN
shared float Ms[BM], Ss[64];
#endif

#define MAT16 fcoopmatNV<16, gl_ScopeSubgroup, 16, 16>
#define MAT32 fcoopmatNV<32, gl_ScopeSubgroup, 16, 16>

void put_split(float v, out float16_t h, out float16_t l)
{
	h = float16_t(v);
	if (SPLIT)
		l = float16_t(v - float(h));
}

void main()
{
	uint tid = gl_LocalInvocationID.x;
	uint m0 = gl_WorkGroupID.x * BM, n0 = gl_WorkGroupID.y * BN, z = gl_WorkGroupID.z;
	uint ow = pc.ow + z * pc.wz, ox = pc.ox + z * pc.xz, oy = pc.oy + z * pc.yz;
	MAT32 acc[4];
	[[unroll]] for (uint j = 0u; j < 4u; j++)
		acc[j] = MAT32(0.0);
#ifdef NO_MIN
	/* the minima's sums of the outputs this invocation writes */
	float macc[BM * 64u / WG];
	[[unroll]] for (uint q = 0u; q < BM * 64u / WG; q++)
		macc[q] = 0.0;
#endif
	if (gl_NumSubgroups < BM / 16u) {
		/* strips summed into Cs as they go (below) */
		for (uint i = tid; i < 64u * LDC; i += WG)
			Cs[i] = 0.0;
	}
	for (uint k0 = 0u; k0 < pc.cols; k0 += BK) {
		for (uint i = tid * UNIT; i < BM * BK; i += WG * UNIT) {
			uint r = i / BK, k = i % BK;
			float v[UNIT];
			if (m0 + r < pc.rows && k0 + k < pc.cols)
				decu(ow + (m0 + r) * pc.nb1, k0 + k, v);
			else
				[[unroll]] for (uint u = 0u; u < UNIT; u++)
					v[u] = 0.0;
			[[unroll]] for (uint u = 0u; u < UNIT; u++)
				put_split(v[u] * WSCALE, Ah[r * LDA + k + u], Al[r * LDA + k + u]);
		}
		for (uint i = tid; i < BN * BK; i += WG) {
			uint t = i / BK, k = i % BK;
			float v = n0 + t < pc.ntok && k0 + k < pc.cols ? x[ox + (n0 + t) * pc.xstride + k0 + k] : 0.0;
			put_split(v, Bh[t * LDA + k], Bl[t * LDA + k]);
		}
#ifdef NO_MIN
		/* BK is one block: its minimum per row, its sum per token */
		if (tid < BM)
			Ms[tid] = m0 + tid < pc.rows ? block_min(ow + (m0 + tid) * pc.nb1 + k0 / BLCK * BSIZE) : 0.0;
		else if (tid < BM + BN)
			Ss[tid - BM] = n0 + tid - BM < pc.ntok ? x[ox + (n0 + tid - BM) * pc.xstride + pc.sofs + k0 / BLCK] : 0.0;
#endif
		barrier();
		/* each subgroup its 16-row strips of the tile */
		for (uint s = gl_SubgroupID; s < BM / 16u; s += gl_NumSubgroups) {
			/* a subgroup owning several strips (fewer than 4
			 * subgroups: a subgroup of 64) keeps their sums in Cs,
			 * taking each strip's up again here */
			if (gl_NumSubgroups < BM / 16u)
				[[unroll]] for (uint j = 0u; j < 4u; j++)
					if (j < TN)
						coopMatLoadNV(acc[j], Cs, j * 16u * LDC + s * 16u, LDC, true);
			for (uint kk = 0u; kk < BK; kk += 16u) {
				MAT16 ah, al;
				coopMatLoadNV(ah, Ah, s * 16u * LDA + kk, LDA, false);
				if (SPLIT)
					coopMatLoadNV(al, Al, s * 16u * LDA + kk, LDA, false);
				[[unroll]] for (uint j = 0u; j < 4u; j++) {
					if (j >= TN)
						break;
					MAT16 bh, bl;
					coopMatLoadNV(bh, Bh, j * 16u * LDA + kk, LDA, true);
					acc[j] = coopMatMulAddNV(ah, bh, acc[j]);
					if (SPLIT) {
						coopMatLoadNV(bl, Bl, j * 16u * LDA + kk, LDA, true);
						acc[j] = coopMatMulAddNV(al, bh, acc[j]);
						acc[j] = coopMatMulAddNV(ah, bl, acc[j]);
					}
				}
			}
			if (gl_NumSubgroups < BM / 16u)
				[[unroll]] for (uint j = 0u; j < 4u; j++)
					if (j < TN)
						coopMatStoreNV(acc[j], Cs, j * 16u * LDC + s * 16u, LDC, true);
		}
#ifdef NO_MIN
		[[unroll]] for (uint q = 0u; q < BM * 64u / WG; q++) {
			uint o = tid + q * WG, r = o % BM, t = o / BM;
			if (t < BN)
				macc[q] += Ms[r] * Ss[t];
		}
#endif
		barrier();
	}
	if (gl_NumSubgroups >= BM / 16u) {
		uint s = gl_SubgroupID;
		if (s < BM / 16u)
			[[unroll]] for (uint j = 0u; j < 4u; j++) {
				if (j >= TN)
					break;
				coopMatStoreNV(acc[j], Cs, j * 16u * LDC + s * 16u, LDC, true);
			}
	}
	barrier();
	[[unroll]] for (uint q = 0u; q < BM * 64u / WG; q++) {
		uint o = tid + q * WG, r = o % BM, t = o / BM;
		if (t < BN && m0 + r < pc.rows && n0 + t < pc.ntok) {
			float v = Cs[t * LDC + r] * WUNSCALE;
#ifdef NO_MIN
			v += macc[q];
#endif
			y[oy + (n0 + t) * pc.ystride + m0 + r] = v;
		}
	}
}
