/* cu_prod.cuh - the products' launchers, shared by the files that hold
 * their kernels: cu_products.cu (the ops: activations, get_rows, copy,
 * the dispatch), cu_mmv.cu (the mat-vec of one token and small batches)
 * and cu_mm.cu (the tiled GEMM of larger batches). Split so that nvcc
 * builds the kernels of every type in parallel.
 *
 * The activations as the quantized products read them (cu_products.cu
 * k_actq): each row of x quantized to the weight type's activation type
 * (Q8_0, Q8_1, Q8_K: quant_vec_dot_type) exactly as quant/quantize.c
 * does, and decoded back to f32 (d q), in the scratch; for Q8_1 the
 * block sums s = fp16(d sum q) follow a row's values (from sofs). The
 * kernels then sum decoded weights times those values in f32, so that
 * they differ from the reference's double sums of the same terms by
 * rounding alone (the Vulkan backend's way: vk_products.c). The float
 * types (F32, F16, BF16) read x itself.
 *
 * The int form (the mat-vec's integer dot, cu_dot.cuh: where the device
 * has dp4a, the types it knows, 1..8 tokens) keeps the levels instead,
 * per row in 32-bit words: the int8 levels 4 to a word (element 4 i + j
 * in byte j of word i), from word cols / 4 the block scales d as f32 (for
 * Q8_0 / Q8_1 the fp16 value), and for Q8_1 from word cols / 4 + cols / 32
 * the block sums s (f32 of the fp16 value): gpu/vulkan/shaders/actq.comp's
 * int form. Its rows are shorter than the float form's: the scratch sized
 * for the float form holds them. */
#ifndef TERN_CU_PROD_CUH
#define TERN_CU_PROD_CUH

#include "gpu/cuda/cu_impl.cuh"

namespace tern_cu {

/* tokens the mat-vec takes in one pass over the weights; more go to the GEMM */
#define CU_MV_MAX_TOK 8

/* one weight of a mat-vec launch and its output */
struct mv_w {
	const uint8_t *w; /* row 0 */
	float *y;         /* token 0, row 0 */
	int64_t rows, nb1;
	int64_t ys;       /* floats from a token of y to the next */
};

/* A mat-vec launch: grid y the weight (n_w of them, one type), grid z
 * a batch of independent products (the heads: w, x, y advanced by wz
 * bytes, xz and yz floats each; or, with ids, the slots of mat_mul_id:
 * slot s takes expert ids[s], x row (s / k) n_x + (n_x == 1 ? 0 : s % k)
 * of xz floats, y row s of yz floats). */
struct mv_args {
	mv_w w[4];
	int n_w, ntok;
	int64_t cols;
	const float *x;
	int64_t xs, sofs; /* floats: a token to the next; the Q8_1 sums after a row's start */
	int64_t wz, xz, yz;
	const int32_t *ids;
	int k, n_x, n_exp;
	const float *bias; /* {rows, n_expert} or NULL */
	int *status;
	bool ints; /* x in the int form (32-bit words; the strides in words): the integer dot */
};
/* nz: grid z */
void cu_mmv_launch(cuk_ctx *c, uint32_t type, const mv_args &a, unsigned nz);

/* A GEMM launch: y = w x over ntok tokens, per grid z (heads) as mv_args;
 * with ids (mat_mul_id's batches), a block per tile of rows and expert
 * gathers the slots that chose its expert (nslots = k ntok of them) and
 * takes them as its tokens. */
struct mm_args {
	const uint8_t *w;
	int64_t rows, cols, nb1;
	const float *x;
	int64_t xs, sofs;
	float *y;
	int64_t ys;
	int64_t ntok;
	int64_t wz, xz, yz;
	const int32_t *ids;
	int k, n_x, n_exp;
	int64_t nslots;
	const float *bias;
	int *status;
};
void cu_mm_launch(cuk_ctx *c, uint32_t type, const mm_args &a, unsigned nz);

} // namespace tern_cu

#endif
