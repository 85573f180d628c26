/* types.c - the GGML type table: block geometry of every type id 0..39.
 * Sizes follow the block structs of each format (d/m scales as fp16 unless
 * noted); the comments give the layout that produces each size. */
#include "quant/quant.h"

#include <stdio.h>
#include <strings.h>

static const struct quant_type_info types[QT_COUNT] = {
	[QT_F32] = {"f32", 1, 4, false},
	[QT_F16] = {"f16", 1, 2, false},
	[QT_Q4_0] = {"q4_0", 32, 2 + 16, false},                 /* d, 32 nibbles */
	[QT_Q4_1] = {"q4_1", 32, 2 + 2 + 16, false},             /* d, m, nibbles */
	[4] = {"q4_2", 0, 0, true},
	[5] = {"q4_3", 0, 0, true},
	[QT_Q5_0] = {"q5_0", 32, 2 + 4 + 16, false},             /* d, qh, qs */
	[QT_Q5_1] = {"q5_1", 32, 2 + 2 + 4 + 16, false},         /* d, m, qh, qs */
	[QT_Q8_0] = {"q8_0", 32, 2 + 32, false},                 /* d, 32 int8 */
	[QT_Q8_1] = {"q8_1", 32, 2 + 2 + 32, false},             /* d, s, 32 int8 */
	[QT_Q2_K] = {"q2_K", QK_K, 16 + 64 + 2 + 2, false},      /* scales, qs, d, dmin */
	[QT_Q3_K] = {"q3_K", QK_K, 32 + 64 + 12 + 2, false},     /* hmask, qs, scales, d */
	[QT_Q4_K] = {"q4_K", QK_K, 2 + 2 + 12 + 128, false},     /* d, dmin, scales, qs */
	[QT_Q5_K] = {"q5_K", QK_K, 2 + 2 + 12 + 32 + 128, false},/* d, dmin, scales, qh, qs */
	[QT_Q6_K] = {"q6_K", QK_K, 128 + 64 + 16 + 2, false},    /* ql, qh, scales, d */
	[QT_Q8_K] = {"q8_K", QK_K, 4 + 256 + 32, false},         /* f32 d, qs, bsums[16] */
	[QT_IQ2_XXS] = {"iq2_xxs", QK_K, 2 + 64, false},         /* d, qs[32] u16 */
	[QT_IQ2_XS] = {"iq2_xs", QK_K, 2 + 64 + 8, false},       /* d, qs[32] u16, scales */
	[QT_IQ3_XXS] = {"iq3_xxs", QK_K, 2 + 96, false},         /* d, qs[3*QK_K/8] */
	[QT_IQ1_S] = {"iq1_s", QK_K, 2 + 32 + 16, false},        /* d, qs, qh[8] u16 */
	[QT_IQ4_NL] = {"iq4_nl", 32, 2 + 16, false},             /* d, nibbles */
	[QT_IQ3_S] = {"iq3_s", QK_K, 2 + 64 + 8 + 32 + 4, false},/* d, qs, qh, signs, scales */
	[QT_IQ2_S] = {"iq2_s", QK_K, 2 + 64 + 8 + 8, false},     /* d, qs, qh, scales */
	[QT_IQ4_XS] = {"iq4_xs", QK_K, 2 + 2 + 4 + 128, false},  /* d, scales_h, scales_l, qs */
	[QT_I8] = {"i8", 1, 1, false},
	[QT_I16] = {"i16", 1, 2, false},
	[QT_I32] = {"i32", 1, 4, false},
	[QT_I64] = {"i64", 1, 8, false},
	[QT_F64] = {"f64", 1, 8, false},
	[QT_IQ1_M] = {"iq1_m", QK_K, 32 + 16 + 8, false},        /* qs, qh, scales */
	[QT_BF16] = {"bf16", 1, 2, false},
	[31] = {"q4_0_4_4", 0, 0, true},
	[32] = {"q4_0_4_8", 0, 0, true},
	[33] = {"q4_0_8_8", 0, 0, true},
	[QT_TQ1_0] = {"tq1_0", QK_K, 48 + 4 + 2, false},         /* qs, qh, d */
	[QT_TQ2_0] = {"tq2_0", QK_K, 64 + 2, false},             /* qs, d */
	[36] = {"iq4_nl_4_4", 0, 0, true},
	[37] = {"iq4_nl_4_8", 0, 0, true},
	[38] = {"iq4_nl_8_8", 0, 0, true},
	[QT_MXFP4] = {"mxfp4", 32, 1 + 16, false},               /* e8m0 scale, nibbles */
};

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
