/* types.c - the GGML type table: block geometry of every type id 0..39.
 * Block sizes come from qimpl.h, which the kernels use too; the static
 * asserts below derive each from the fields of its block struct (d/m
 * scales as fp16 unless noted), so that a type added to one place and not
 * the other, or a size changed in one, fails the build. */
#include "quant/quant.h"
#include "quant/qimpl.h"

#include <stdio.h>
#include <strings.h>

static const struct quant_type_info types[] = {
	[QT_F32] = {"f32", 1, 4, false},
	[QT_F16] = {"f16", 1, 2, false},
	[QT_Q4_0] = {"q4_0", 32, Q4_0_B, false},
	[QT_Q4_1] = {"q4_1", 32, Q4_1_B, false},
	[4] = {"q4_2", 0, 0, true},
	[5] = {"q4_3", 0, 0, true},
	[QT_Q5_0] = {"q5_0", 32, Q5_0_B, false},
	[QT_Q5_1] = {"q5_1", 32, Q5_1_B, false},
	[QT_Q8_0] = {"q8_0", 32, Q8_0_B, false},
	[QT_Q8_1] = {"q8_1", 32, Q8_1_B, false},
	[QT_Q2_K] = {"q2_K", QK_K, Q2_K_B, false},
	[QT_Q3_K] = {"q3_K", QK_K, Q3_K_B, false},
	[QT_Q4_K] = {"q4_K", QK_K, Q4_K_B, false},
	[QT_Q5_K] = {"q5_K", QK_K, Q5_K_B, false},
	[QT_Q6_K] = {"q6_K", QK_K, Q6_K_B, false},
	[QT_Q8_K] = {"q8_K", QK_K, Q8_K_B, false},
	[QT_IQ2_XXS] = {"iq2_xxs", QK_K, IQ2_XXS_B, false},
	[QT_IQ2_XS] = {"iq2_xs", QK_K, IQ2_XS_B, false},
	[QT_IQ3_XXS] = {"iq3_xxs", QK_K, IQ3_XXS_B, false},
	[QT_IQ1_S] = {"iq1_s", QK_K, IQ1_S_B, false},
	[QT_IQ4_NL] = {"iq4_nl", 32, IQ4_NL_B, false},
	[QT_IQ3_S] = {"iq3_s", QK_K, IQ3_S_B, false},
	[QT_IQ2_S] = {"iq2_s", QK_K, IQ2_S_B, false},
	[QT_IQ4_XS] = {"iq4_xs", QK_K, IQ4_XS_B, false},
	[QT_I8] = {"i8", 1, 1, false},
	[QT_I16] = {"i16", 1, 2, false},
	[QT_I32] = {"i32", 1, 4, false},
	[QT_I64] = {"i64", 1, 8, false},
	[QT_F64] = {"f64", 1, 8, false},
	[QT_IQ1_M] = {"iq1_m", QK_K, IQ1_M_B, false},
	[QT_BF16] = {"bf16", 1, 2, false},
	[31] = {"q4_0_4_4", 0, 0, true},
	[32] = {"q4_0_4_8", 0, 0, true},
	[33] = {"q4_0_8_8", 0, 0, true},
	[QT_TQ1_0] = {"tq1_0", QK_K, TQ1_0_B, false},
	[QT_TQ2_0] = {"tq2_0", QK_K, TQ2_0_B, false},
	[36] = {"iq4_nl_4_4", 0, 0, true},
	[37] = {"iq4_nl_4_8", 0, 0, true},
	[38] = {"iq4_nl_8_8", 0, 0, true},
	[QT_MXFP4] = {"mxfp4", 32, MXFP4_B, false},
};

_Static_assert(sizeof types / sizeof types[0] == QT_COUNT, "one entry per type id");
_Static_assert(Q4_0_B == 2 + 16, "q4_0: d, 32 nibbles");
_Static_assert(Q4_1_B == 2 + 2 + 16, "q4_1: d, m, nibbles");
_Static_assert(Q5_0_B == 2 + 4 + 16, "q5_0: d, qh, qs");
_Static_assert(Q5_1_B == 2 + 2 + 4 + 16, "q5_1: d, m, qh, qs");
_Static_assert(Q8_0_B == 2 + 32, "q8_0: d, 32 int8");
_Static_assert(Q8_1_B == 2 + 2 + 32, "q8_1: d, s, 32 int8");
_Static_assert(Q2_K_B == 16 + 64 + 2 + 2, "q2_K: scales, qs, d, dmin");
_Static_assert(Q3_K_B == 32 + 64 + 12 + 2, "q3_K: hmask, qs, scales, d");
_Static_assert(Q4_K_B == 2 + 2 + 12 + 128, "q4_K: d, dmin, scales, qs");
_Static_assert(Q5_K_B == 2 + 2 + 12 + 32 + 128, "q5_K: d, dmin, scales, qh, qs");
_Static_assert(Q6_K_B == 128 + 64 + 16 + 2, "q6_K: ql, qh, scales, d");
_Static_assert(Q8_K_B == 4 + 256 + 32, "q8_K: f32 d, qs, bsums[16]");
_Static_assert(IQ2_XXS_B == 2 + 64, "iq2_xxs: d, qs[32] u16");
_Static_assert(IQ2_XS_B == 2 + 64 + 8, "iq2_xs: d, qs[32] u16, scales");
_Static_assert(IQ3_XXS_B == 2 + 96, "iq3_xxs: d, qs[3*QK_K/8]");
_Static_assert(IQ1_S_B == 2 + 32 + 16, "iq1_s: d, qs, qh[8] u16");
_Static_assert(IQ4_NL_B == 2 + 16, "iq4_nl: d, nibbles");
_Static_assert(IQ3_S_B == 2 + 64 + 8 + 32 + 4, "iq3_s: d, qs, qh, signs, scales");
_Static_assert(IQ2_S_B == 2 + 64 + 8 + 8, "iq2_s: d, qs, qh, scales");
_Static_assert(IQ4_XS_B == 2 + 2 + 4 + 128, "iq4_xs: d, scales_h, scales_l, qs");
_Static_assert(IQ1_M_B == 32 + 16 + 8, "iq1_m: qs, qh, scales");
_Static_assert(TQ1_0_B == 48 + 4 + 2, "tq1_0: qs, qh, d");
_Static_assert(TQ2_0_B == 64 + 2, "tq2_0: qs, d");
_Static_assert(MXFP4_B == 1 + 16, "mxfp4: e8m0 scale, nibbles");

const struct quant_type_info *quant_type_info(uint32_t t)
{
	return t < QT_COUNT ? &types[t] : NULL;
}

bool quant_type_valid(uint32_t t)
{
	return t < QT_COUNT && !types[t].removed;
}

const char *quant_type_name(uint32_t t)
{
	return t < QT_COUNT ? types[t].name : "?";
}

int quant_type_from_name(const char *name)
{
	for (int t = 0; t < QT_COUNT; t++)
		if (!types[t].removed && strcasecmp(types[t].name, name) == 0)
			return t;
	return -1;
}

size_t quant_row_size(uint32_t t, uint64_t n, bool *ok)
{
	if (ok)
		*ok = false;
	if (!quant_type_valid(t))
		return 0;
	const struct quant_type_info *ti = &types[t];
	if (n % ti->blck)
		return 0;
	uint64_t nb = n / ti->blck;
	if (nb > SIZE_MAX / ti->size)
		return 0;
	if (ok)
		*ok = true;
	return (size_t)(nb * ti->size);
}
