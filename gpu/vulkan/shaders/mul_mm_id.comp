#version 450
// types: f32 f16 bf16 q4_0 q4_1 q5_0 q5_1 q8_0 q2_k q3_k q4_k q5_k q6_k iq4_nl iq4_xs mxfp4 iq2_xxs iq2_xs iq2_s iq3_xxs iq3_s iq1_s iq1_m tq1_0 tq2_0
/* mul_mm_id.comp - the experts' products of a batch (lib/backend.h
 * mat_mul_id): workgroup z is an expert, x a tile of 64 of its rows. The
 * workgroup first gathers the slots (token t, choice i) that selected its
 * expert, then runs mul_mm.comp's tiled GEMM over them, BN slots at a
 * time: each selected expert's weights go through the GEMM once per tile
 * of its tokens, and an expert nobody chose costs one scan of the ids.
 * The stack may be bound in pieces (experts e0..): an id outside the
 * whole stack is flagged (ST_EXPERT_ID, by the first piece's first
 * workgroup) and its row of y left. */
#include "common.glsl"

#if defined(TYPE_Q4_1) || defined(TYPE_Q5_1)
#define NO_MIN
#endif
#define WBIND 0
#include "weights.glsl"
#include "dequant.glsl"

layout(binding = 1) readonly buffer X { float x[]; };
layout(binding = 2) readonly buffer I { int ids[]; };
layout(binding = 3) readonly buffer B { float bias[]; };
layout(binding = 4) writeonly buffer Y { float y[]; };

layout(push_constant) uniform PC {
	uint rows, cols, k, n_x, nslots;
	uint ow, nb1, nb2;       /* bytes: expert e0's row 0 in the binding, a row, an expert */
	uint ox, xstride, sofs;  /* floats */
	uint oi, ob, oy;         /* elements */
	uint e0, n_exp, has_bias;
} pc;

#define BM 64u
#define BK 32u
#define TN SPEC1
#define BN (16u * TN)
/* slots one expert may take in a run (vk_products.c keeps runs within) */
#define MAX_SLOTS 1024u
shared float As[BK][BM + 1u];
shared float Bs[BK][64u + 1u];
shared uint slots[MAX_SLOTS];
shared uint n_slots;
#ifdef NO_MIN
shared float Ms[BM], Ss[64];
#endif

void main()
{
	uint tid = gl_LocalInvocationID.x, e = pc.e0 + gl_WorkGroupID.z, m0 = gl_WorkGroupID.x * BM;
	uint ow = pc.ow + gl_WorkGroupID.z * pc.nb2;
	if (tid == 0u)
		n_slots = 0u;
	barrier();
	bool flagger = pc.e0 == 0u && gl_WorkGroupID.z == 0u && gl_WorkGroupID.x == 0u;
	for (uint s = tid; s < pc.nslots; s += 256u) {
		int id = ids[pc.oi + s];
		if (id == int(e)) {
			uint at = atomicAdd(n_slots, 1u);
			if (at < MAX_SLOTS)
				slots[at] = s;
		} else if (flagger && (id < 0 || uint(id) >= pc.n_exp)) {
			flag_bad(ST_EXPERT_ID, id);
		}
	}
	barrier();
	uint n = min(n_slots, MAX_SLOTS);
	uint tx = tid % 16u, ty = tid / 16u;
	for (uint n0 = 0u; n0 < n; n0 += BN) {
		float acc[4][4];
		[[unroll]] for (uint i = 0u; i < 4u; i++)
			[[unroll]] for (uint j = 0u; j < 4u; j++)
				acc[i][j] = 0.0;
		for (uint k0 = 0u; k0 < pc.cols; k0 += BK) {
			for (uint i = tid * UNIT; i < BM * BK; i += 256u * UNIT) {
				uint r = i / BK, kk = i % BK;
				float v[UNIT];
				if (m0 + r < pc.rows && k0 + kk < pc.cols)
					decu(ow + (m0 + r) * pc.nb1, k0 + kk, v);
				else
					[[unroll]] for (uint u = 0u; u < UNIT; u++)
						v[u] = 0.0;
				[[unroll]] for (uint u = 0u; u < UNIT; u++)
					As[kk + u][r] = v[u];
			}
			for (uint i = tid; i < BN * BK; i += 256u) {
				uint t = i / BK, kk = i % BK;
				float v = 0.0;
				if (n0 + t < n && k0 + kk < pc.cols) {
					uint s = slots[n0 + t], xr = s / pc.k * pc.n_x + (pc.n_x == 1u ? 0u : s % pc.k);
					v = x[pc.ox + xr * pc.xstride + k0 + kk];
				}
				Bs[kk][t] = v;
			}
#ifdef NO_MIN
			if (tid < BM) {
				Ms[tid] = m0 + tid < pc.rows ? block_min(ow + (m0 + tid) * pc.nb1 + k0 / BLCK * BSIZE) : 0.0;
			} else if (tid < BM + BN) {
				uint t = tid - BM;
				float v = 0.0;
				if (n0 + t < n) {
					uint s = slots[n0 + t], xr = s / pc.k * pc.n_x + (pc.n_x == 1u ? 0u : s % pc.k);
					v = x[pc.ox + xr * pc.xstride + pc.sofs + k0 / BLCK];
				}
				Ss[t] = v;
			}
#endif
			barrier();
			for (uint kk = 0u; kk < BK; kk++) {
				float a[4], b[4];
				[[unroll]] for (uint i = 0u; i < 4u; i++) {
					a[i] = As[kk][tx + 16u * i];
					b[i] = i < TN ? Bs[kk][ty + 16u * i] : 0.0;
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
			if (t >= n)
				continue;
			uint s = slots[t];
			[[unroll]] for (uint i = 0u; i < 4u; i++) {
				uint r = m0 + tx + 16u * i;
				if (r < pc.rows)
					y[pc.oy + s * pc.rows + r] = acc[i][j] + (pc.has_bias != 0u ? bias[pc.ob + e * pc.rows + r] : 0.0);
			}
		}
	}
}
