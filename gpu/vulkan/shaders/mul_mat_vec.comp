#version 450
// dot types: q4_0 q4_1 q5_0 q5_1 q8_0 iq4_nl mxfp4 q2_k q3_k q4_k q5_k q6_k iq4_xs
// types: f32 f16 bf16 q4_0 q4_1 q5_0 q5_1 q8_0 q2_k q3_k q4_k q5_k q6_k iq4_nl iq4_xs mxfp4 iq2_xxs iq2_xs iq2_s iq3_xxs iq3_s iq1_s iq1_m tq1_0 tq2_0
/* mul_mat_vec.comp - y = W x for one token, for up to three weights of
 * one type at once (lib/backend.h mat_vec, mat_vec_n): workgroup z picks
 * the weight (SPEC1 weights in the dispatch: the other bindings' reads
 * fold away when it is 1), x and y the group of RW rows, taken a subgroup
 * per row (mat_vec.glsl), the weights decoded straight from their GGUF
 * blocks (dequant.glsl). x holds the activations as actq.comp left them (for the
 * float types, x itself). Built again with -DINT_DOT for the "dot types"
 * (gen.sh: NAME_dot_TYPE): x in actq.comp's int form, each block's
 * integer sum by OpSDot (dot_int.glsl). */
#include "common.glsl"

#if defined(TYPE_Q4_1) || defined(TYPE_Q5_1)
#define NO_MIN
#endif
#define RW 8u /* rows per workgroup: vk_products.c MV_NR */

layout(binding = 0) readonly buffer W0a { uint8_t w0b[]; };
layout(binding = 0) readonly buffer W0b { uint16_t w0h[]; };
layout(binding = 0) readonly buffer W0c { float w0f[]; };
layout(binding = 0) readonly buffer W0d { uint w0w[]; };
layout(binding = 1) readonly buffer W1a { uint8_t w1b[]; };
layout(binding = 1) readonly buffer W1b { uint16_t w1h[]; };
layout(binding = 1) readonly buffer W1c { float w1f[]; };
layout(binding = 1) readonly buffer W1d { uint w1w[]; };
layout(binding = 2) readonly buffer W2a { uint8_t w2b[]; };
layout(binding = 2) readonly buffer W2b { uint16_t w2h[]; };
layout(binding = 2) readonly buffer W2c { float w2f[]; };
layout(binding = 2) readonly buffer W2d { uint w2w[]; };
layout(binding = 3) readonly buffer X { float x[]; };
layout(binding = 3) readonly buffer XI { uint xw[]; }; /* INT_DOT: the levels, 4 a word */
layout(binding = 4) writeonly buffer Y0 { float y0[]; };
layout(binding = 5) writeonly buffer Y1 { float y1[]; };
layout(binding = 6) writeonly buffer Y2 { float y2[]; };

/* per weight: its rows, the byte offset of row 0 in its binding, the bytes
 * per row and y's offset in floats; sofs: where the Q8_1 block sums of x
 * start (after its cols values) */
layout(push_constant) uniform PC {
	uint cols, ox, sofs;
	uint rows[3], ow[3], nb1[3], oy[3];
} pc;

/* this workgroup's weight: uniform, so the selects below do not diverge;
 * with one weight (SPEC1 1) they are constant */
uint g_w;
bool is0() { return SPEC1 == 1u || g_w == 0u; }
bool is1() { return SPEC1 == 2u || g_w == 1u; }
uint rd_b(uint o) { return is0() ? uint(w0b[o]) : is1() ? uint(w1b[o]) : uint(w2b[o]); }
uint rd_h(uint o) { return is0() ? uint(w0h[o >> 1]) : is1() ? uint(w1h[o >> 1]) : uint(w2h[o >> 1]); }
uint rd_w(uint o) { return is0() ? w0w[o >> 2] : is1() ? w1w[o >> 2] : w2w[o >> 2]; }
float rd_f(uint o) { return is0() ? w0f[o >> 2] : is1() ? w1f[o >> 2] : w2f[o >> 2]; }
#define WB(o) rd_b(o)
#define WH(o) rd_h(o)
#define WW(o) rd_w(o)
#define WF(o) rd_f(o)
#include "dequant.glsl"
#ifdef INT_DOT
#define XW(i) xw[i]
#define XF(i) x[i]
#include "dot_int.glsl"
#endif

void put(uint r, float t)
{
	uint o = pc.oy[g_w] + r;
	if (is0())
		y0[o] = t;
	else if (is1())
		y1[o] = t;
	else
		y2[o] = t;
}
#include "mat_vec.glsl"

void main()
{
	g_w = gl_WorkGroupID.z;
	uint rows = pc.rows[g_w], r0 = (gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x) * RW;
	if (r0 >= rows)
		return; /* the whole workgroup */
	uint nr = min(RW, rows - r0);
	mat_vec_rows(pc.ow[g_w], pc.nb1[g_w], r0, nr, pc.ox);
}
