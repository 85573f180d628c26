#version 450
/* attention_tiled.comp - lib/backend.h attention for a batch of query
 * tokens (prefill, Whisper's encoder): what attention.comp computes, with
 * the keys and values read once for BR query rows instead of once per
 * row. A workgroup takes BR consecutive tokens of one query head; the
 * keys go in chunks of BC: the chunk's K rows are copied into shared
 * memory (as f32), every invocation computes scores of (row, key) pairs
 * against it, each row's online softmax is updated, the chunk's V rows
 * replace the K rows in shared memory and every invocation adds them into
 * its (row, dimension) accumulators. The chunks cover the union of the
 * rows' key ranges (causal: up to the last row's position; windows: from
 * the first row's start); a key outside a row's own range scores -inf.
 *
 * The tile holds the first valid row's sequence; a row of another
 * sequence (a batch mixing a server's slots) reads its keys and values
 * from the cache directly, slower but the same result.
 *
 * SPEC1 / SPEC2: the K and V cache types (attn_kv.glsl); SPEC3: BR | BC
 * << 8; SPEC4: D, the largest head size the tiles hold (hd, hdv <= D).
 * vk_ops.c picks them so that the shared arrays fit the device. */
#include "common.glsl"

#include "attn_kv.glsl"

#define BR (SPEC3 & 255u)
#define BC (SPEC3 >> 8u)
#define D SPEC4
#define KS (SPEC4 + 1u) /* kv's row stride: odd, so that a subgroup's lanes reading one element of
			 * consecutive keys hit different banks */

shared float qs[BR * D];  /* the rows' queries */
shared float kv[BC * KS]; /* the chunk's K rows, then its V rows */
shared float acc[BR * D]; /* [row][hdv]: the weighted sums of V */
shared float sc[BR * BC]; /* scores, then softmax weights */
shared float m_s[BR], l_s[BR], corr_s[BR];
shared int qp_s[BR], lo_s[BR], sq_s[BR];
shared int range_s[3]; /* first key, last key, the tile's sequence */

void main()
{
	uint lid = gl_LocalInvocationID.x, WG = gl_WorkGroupSize.x;
	uint t0 = gl_WorkGroupID.x * BR, h = gl_WorkGroupID.y, g = h / (pc.nh / pc.nkv);
	uint nr = min(BR, pc.ntok - t0);
	uint krb = k_row_bytes();

	if (lid < BR) {
		int qp = -1, sq = -1, lo = 0;
		if (lid < nr) {
			uint t = t0 + lid;
			qp = pos[pc.opos + t];
			sq = pc.n_seq != 0u ? seq[pc.oseq + t] : 0;
			if (qp < 0 || uint(qp) >= pc.n_ctx) {
				if (h == 0u)
					flag_bad(ST_ATTENTION, qp);
				qp = -1;
			} else if (sq < 0 || (pc.n_seq != 0u && uint(sq) >= pc.n_seq)) {
				if (h == 0u)
					flag_bad(ST_ATTENTION | ST_SEQUENCE, sq);
				qp = -1;
			}
			lo = pc.window > 0u ? max(0, qp - int(pc.window) + 1) : 0;
		}
		qp_s[lid] = qp; /* -1: a row without output (past the batch, or bad) */
		sq_s[lid] = sq;
		lo_s[lid] = lo;
		m_s[lid] = -1.0 / 0.0;
		l_s[lid] = 0.0;
	}
	barrier();
	if (lid == 0u) {
		int k0 = int(pc.n_ctx), k1 = -1, s0 = -1;
		for (uint r = 0u; r < BR; r++)
			if (qp_s[r] >= 0) {
				k0 = min(k0, lo_s[r]);
				k1 = max(k1, qp_s[r]);
				if (s0 < 0)
					s0 = sq_s[r];
			}
		range_s[0] = k0;
		range_s[1] = k1;
		range_s[2] = s0;
	}
	for (uint i = lid; i < BR * pc.hd; i += WG) {
		uint r = i / pc.hd, x = i % pc.hd;
		qs[r * D + x] = r < nr ? q[pc.oq + ((t0 + r) * pc.nh + h) * pc.hd + x] : 0.0;
	}
	for (uint i = lid; i < BR * pc.hdv; i += WG)
		acc[(i / pc.hdv) * D + i % pc.hdv] = 0.0;
	barrier();
	int k0 = range_s[0], k1 = range_s[1], s0 = range_s[2];

	for (int c0 = k0; c0 <= k1; c0 += int(BC)) {
		int nj = min(int(BC), k1 - c0 + 1);
		/* the chunk's K rows of the tile's sequence (past its last
		 * written row where another sequence's row reaches further: never
		 * scored) */
		for (uint i = lid; i < BC * pc.hd; i += WG) {
			uint j = i / pc.hd, x = i % pc.hd;
			kv[j * KS + x] = int(j) < nj ? k_at(uint(s0) * pc.k_nb3 + (uint(c0 + int(j)) * pc.nkv + g) * krb, x) : 0.0;
		}
		barrier();
		for (uint i = lid; i < BR * BC; i += WG) {
			uint r = i / BC, j = i % BC;
			int p = c0 + int(j);
			float sv = -1.0 / 0.0;
			if (qp_s[r] >= 0 && p >= lo_s[r] && p <= qp_s[r]) {
				float d = 0.0;
				if (sq_s[r] == s0) {
					for (uint x = 0u; x < pc.hd; x++)
						d += qs[r * D + x] * kv[j * KS + x];
				} else {
					uint rb = uint(sq_s[r]) * pc.k_nb3 + (uint(p) * pc.nkv + g) * krb;
					for (uint x = 0u; x < pc.hd; x++)
						d += qs[r * D + x] * k_at(rb, x);
				}
				sv = d * pc.scale;
				if (pc.softcap > 0.0)
					sv = pc.softcap * tanh(clamp(sv / pc.softcap, -15.0, 15.0));
			}
			sc[r * BC + j] = sv;
		}
		barrier();
		/* the rows' softmax updates; the chunk's V rows meanwhile */
		if (lid < BR) {
			uint r = lid;
			float mx = m_s[r];
			for (uint j = 0u; j < BC; j++)
				mx = max(mx, sc[r * BC + j]);
			float cr = m_s[r] == -1.0 / 0.0 ? 0.0 : exp(m_s[r] - mx);
			float sum = 0.0;
			for (uint j = 0u; j < BC; j++) {
				float w = sc[r * BC + j] == -1.0 / 0.0 ? 0.0 : exp(sc[r * BC + j] - mx);
				sc[r * BC + j] = w;
				sum += w;
			}
			l_s[r] = l_s[r] * cr + sum;
			m_s[r] = mx;
			corr_s[r] = cr;
		}
		for (uint i = lid; i < BC * pc.hdv; i += WG) {
			uint j = i / pc.hdv, x = i % pc.hdv;
			kv[j * KS + x] = int(j) < nj ? v_at(uint(s0) * pc.v_nb3 + uint(c0 + int(j)) * pc.v_nb2 + g * pc.v_nb1, x)
						    : 0.0;
		}
		barrier();
		for (uint i = lid; i < BR * pc.hdv; i += WG) {
			uint r = i / pc.hdv, x = i % pc.hdv;
			float a = acc[r * D + x] * corr_s[r];
			/* only the row's own keys: the others' V rows may be cache
			 * rows never written (another sequence's positions), whose
			 * NaN a zero weight would not cancel */
			int j0 = max(0, lo_s[r] - c0), j1 = min(nj, qp_s[r] - c0 + 1);
			if (sq_s[r] == s0) {
				for (int j = j0; j < j1; j++)
					a += sc[r * BC + uint(j)] * kv[uint(j) * KS + x];
			} else {
				for (int j = j0; j < j1; j++)
					a += sc[r * BC + uint(j)] *
					     v_at(uint(sq_s[r]) * pc.v_nb3 + uint(c0 + j) * pc.v_nb2 + g * pc.v_nb1, x);
			}
			acc[r * D + x] = a;
		}
		barrier();
	}

	if (lid < BR) {
		uint r = lid;
		corr_s[r] = 1.0;
		if ((pc.flags & 1u) != 0u && qp_s[r] >= 0) {
			/* the sink joins the denominator only */
			float sk = sinks[pc.osink + h], m = m_s[r];
			float mx = max(m, sk);
			float cr = m == -1.0 / 0.0 ? 0.0 : exp(m - mx);
			l_s[r] = l_s[r] * cr + exp(sk - mx);
			corr_s[r] = cr;
		}
	}
	barrier();
	for (uint i = lid; i < nr * pc.hdv; i += WG) {
		uint r = i / pc.hdv, x = i % pc.hdv;
		if (qp_s[r] >= 0) /* a bad row's y keeps what it held */
			y[pc.oy + ((t0 + r) * pc.nh + h) * pc.hdv + x] = acc[r * D + x] * corr_s[r] / l_s[r];
	}
}
