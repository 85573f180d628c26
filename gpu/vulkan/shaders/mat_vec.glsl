/* mat_vec.glsl - the loops mul_mat_vec.comp and mul_mat_vec_id.comp share:
 * a group of rows, each a dot product with one token's activations. The
 * includer has included dequant.glsl (decu, and block_min with NO_MIN),
 * binds the activations as x[] and has pc.cols and pc.sofs (where the Q8_1
 * block sums start, after the cols values), and defines put(r, t): row r's
 * result t, written by one invocation.
 *
 * With INT_DOT (the integer dot product) the includer has also included
 * dot_int.glsl and binds x in actq.comp's int form: a lane takes 32
 * elements at a time (a block, or a K-quant's sub-blocks of 32), summed
 * as integers and scaled (dot32). */

#ifdef INT_DOT
#define LANE 32u /* elements a lane takes at a time */
float row_dot(uint row, uint xo, uint e0, uint step)
{
	float acc = 0.0;
	for (uint e = e0; e < pc.cols; e += step)
		acc += dot32(row, e, xo);
	return acc;
}
#else
#define LANE UNIT

/* a row (its first byte at row) times the activations at xo, over the
 * units e0, e0 + step, ... */
float row_dot(uint row, uint xo, uint e0, uint step)
{
	float acc = 0.0;
	for (uint e = e0; e < pc.cols; e += step) {
		float v[UNIT];
		decu(row, e, v);
		[[unroll]] for (uint J = 0u; J < UNIT; J++)
			acc += v[J] * x[xo + e + J];
#ifdef NO_MIN
		if (e % BLCK == 0u)
			acc += block_min(row + e / BLCK * BSIZE) * x[xo + pc.sofs + e / BLCK];
#endif
	}
	return acc;
}
#endif

/* rows r0 .. r0 + nr - 1, row r's first byte at base + r * nb1: a subgroup
 * per row, its lanes strided across it, one subgroupAdd, no barrier (a
 * workgroup's start and its barriers are what a CPU device such as
 * lavapipe pays most for); without subgroup arithmetic the whole
 * workgroup per row, summed in shared memory */
void mat_vec_rows(uint base, uint nb1, uint r0, uint nr, uint xo)
{
#ifndef NO_SUBGROUP
	for (uint r = gl_SubgroupID; r < nr; r += gl_NumSubgroups) {
		float t = subgroupAdd(row_dot(base + (r0 + r) * nb1, xo, gl_SubgroupInvocationID * LANE,
					      gl_SubgroupSize * LANE));
		if (subgroupElect())
			put(r0 + r, t);
	}
#else
	uint tid = gl_LocalInvocationID.x;
	for (uint r = 0u; r < nr; r++) {
		float t = wg_sum(row_dot(base + (r0 + r) * nb1, xo, tid * LANE, gl_WorkGroupSize.x * LANE));
		if (tid == 0u)
			put(r0 + r, t);
	}
#endif
}
