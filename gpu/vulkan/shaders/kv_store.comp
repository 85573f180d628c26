#version 450
/* kv_store.comp - lib/backend.h kv_store: cache row pos[t] = x row t for
 * every KV head, converted to the cache's type (SPEC1: 0 f32, 1 f16, 2
 * q8_0 as quant/quantize.c encodes it: d = amax / 127 in f16, q =
 * round(x / d) half away from zero). One invocation per element (f32,
 * f16) or per block of 32 (q8_0). The cache holds n_seq sequences of n_ctx
 * positions; token t goes to sequence seq[t]. */
#include "common.glsl"

layout(binding = 0) readonly buffer X { float x[]; };
layout(binding = 1) readonly buffer P { int pos[]; };
layout(binding = 3) readonly buffer Sq { int seq[]; };
layout(binding = 2) writeonly buffer C32 { float c32[]; };
layout(binding = 2) writeonly buffer C16 { uint16_t c16[]; };
layout(binding = 2) writeonly buffer C8 { int8_t c8[]; };

layout(push_constant) uniform PC {
	uint hd, nkv, ntok, n_ctx;
	uint ox, opos, oc; /* oc: bytes */
	uint n_seq, oseq;  /* n_seq 0: no seq buffer, every token in sequence 0 */
} pc;

void main()
{
	uint per_tok = pc.nkv * pc.hd / (SPEC1 == 2u ? 32u : 1u);
	uint i = flat_id();
	if (i >= per_tok * pc.ntok)
		return;
	uint t = i / per_tok, e = i % per_tok;
	int p = pos[pc.opos + t];
	if (p < 0 || uint(p) >= pc.n_ctx) {
		flag_bad(ST_KV_STORE, p);
		return;
	}
	uint sq = 0u;
	if (pc.n_seq != 0u) {
		int sv = seq[pc.oseq + t];
		if (sv < 0 || uint(sv) >= pc.n_seq) {
			flag_bad(ST_KV_STORE | ST_SEQUENCE, sv);
			return;
		}
		sq = uint(sv);
	}
	/* elements before position p of sequence sq */
	uint row = (sq * pc.n_ctx + uint(p)) * pc.nkv * pc.hd;
	uint src = pc.ox + t * pc.nkv * pc.hd;
	if (SPEC1 == 0u) {
		c32[pc.oc / 4u + row + e] = x[src + e];
	} else if (SPEC1 == 1u) {
		c16[pc.oc / 2u + row + e] = uint16_t(packHalf2x16(vec2(x[src + e], 0.0)) & 0xffffu);
	} else {
		uint s = src + e * 32u;
		float amax = 0.0;
		for (uint j = 0u; j < 32u; j++)
			amax = max(amax, abs(x[s + j]));
		float d = amax / 127.0;
		float id = 0.0;
		if (d != 0.0) {
			/* 1 / d correctly rounded: GLSL's division is only
			 * accurate to 2.5 ulp; one Newton step with fma fixes it */
			id = 1.0 / d;
			id = fma(id, fma(-d, id, 1.0), id);
		}
		uint b = pc.oc + (row / 32u + e) * 34u;
		uint dh = packHalf2x16(vec2(d, 0.0)) & 0xffffu;
		/* the block's scale: two bytes, little-endian (blocks are 34 bytes: not 2-aligned in general? they are) */
		c16[b / 2u] = uint16_t(dh);
		for (uint j = 0u; j < 32u; j++) {
			float v = x[s + j] * id;
			float q = sign(v) * floor(abs(v) + 0.5);
			c8[b + 2u + j] = int8_t(int(q));
		}
	}
}
