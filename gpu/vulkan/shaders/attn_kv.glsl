/* attn_kv.glsl - what attention.comp and attention_tiled.comp share: the
 * bindings, the push constants (vk_ops.c's vk_attention fills one struct
 * for both) and the readers of a K or V cache row element (SPEC1: K's
 * type, SPEC2: V's type; 0 f32, 1 f16, 2 q8_0). */
layout(binding = 0) readonly buffer Q { float q[]; };
layout(binding = 1) readonly buffer K32 { float k32[]; };
layout(binding = 1) readonly buffer K16 { uint16_t k16[]; };
layout(binding = 1) readonly buffer K8 { int8_t k8[]; };
layout(binding = 2) readonly buffer V32 { float v32[]; };
layout(binding = 2) readonly buffer V16 { uint16_t v16[]; };
layout(binding = 2) readonly buffer V8 { int8_t v8[]; };
layout(binding = 3) readonly buffer P { int pos[]; };
layout(binding = 4) readonly buffer S { float sinks[]; };
layout(binding = 5) writeonly buffer Y { float y[]; };
layout(binding = 6) readonly buffer Sq { int seq[]; };

layout(push_constant) uniform PC {
	uint hd, hdv, nh, nkv;
	uint n_ctx, ntok, hb, L;
	uint nsplit, window, flags, oq; /* flags: 1 sinks */
	uint ok, ov, v_nb1, v_nb2;      /* bytes */
	uint opos, osink, oy, n_seq; /* n_seq 0: every token in sequence 0 */
	uint oseq, k_nb3, v_nb3;     /* bytes between sequences */
	float scale, softcap;
} pc;

float k_at(uint rb, uint i) /* rb: the row's byte offset */
{
	if (SPEC1 == 0u)
		return k32[(pc.ok + rb) / 4u + i];
	if (SPEC1 == 1u)
		return f16_bits(uint(k16[(pc.ok + rb) / 2u + i]));
	uint b = pc.ok + rb + (i / 32u) * 34u;
	return f16_bits(uint(k16[b / 2u])) * float(int(k8[b + 2u + i % 32u]));
}

float v_at(uint rb, uint i)
{
	if (SPEC2 == 0u)
		return v32[(pc.ov + rb) / 4u + i];
	if (SPEC2 == 1u)
		return f16_bits(uint(v16[(pc.ov + rb) / 2u + i]));
	uint b = pc.ov + rb + (i / 32u) * 34u;
	return f16_bits(uint(v16[b / 2u])) * float(int(v8[b + 2u + i % 32u]));
}

uint k_row_bytes()
{
	return SPEC1 == 0u ? pc.hd * 4u : SPEC1 == 1u ? pc.hd * 2u : pc.hd / 32u * 34u;
}

