#version 450
/* attention.comp - lib/backend.h attention (online softmax, no scores
 * matrix). A workgroup takes one query token, one KV head and HB of the
 * query heads that read it (GQA: each K and V row is read once for them
 * all), and the keys of one split [s L, (s + 1) L) of the cache; with
 * several splits (decode: a long context spread over workgroups) it writes
 * its running maximum, sum and weighted V sum to partials, which
 * attn_combine.comp merges; with one it writes y.
 *
 * The keys go in chunks of 32: the scores of the HB heads x 32 keys, one
 * per invocation (q from shared memory, the K row from the cache), the
 * softmax update per head, then every invocation adds the chunk's V rows
 * into its (head, dimension) accumulators.
 *
 * Token t reads sequence seq[t] of the caches (several sequences: a
 * beam, a server's slot). SPEC1: K's type, SPEC2: V's type (0 f32, 1 f16,
 * 2 q8_0). */
#include "common.glsl"

#include "attn_kv.glsl"

#define C 32u
#define MAXQ 2048u /* hb * hd <= MAXQ and hb * hdv <= MAXQ */
#define MAXHB 16u

shared float qs[MAXQ];
shared float acc[MAXQ]; /* [hb][hdv]: the weighted sums of V (shared memory, not
			 * registers: lavapipe's compiler takes tens of seconds
			 * over a private array in these loops) */
shared float sc[MAXHB * C];
shared float m_s[MAXHB], l_s[MAXHB], corr_s[MAXHB];

void main()
{
	uint lid = gl_LocalInvocationID.x, WG = gl_WorkGroupSize.x;
	uint group = pc.nh / pc.nkv, nhb = (group + pc.hb - 1u) / pc.hb;
	uint s = gl_WorkGroupID.x, g = gl_WorkGroupID.y % pc.nkv, blk = gl_WorkGroupID.y / pc.nkv;
	uint t = gl_WorkGroupID.z;
	uint h0 = g * group + blk * pc.hb;
	uint hb = min(pc.hb, g * group + group - h0);
	int qp = pos[pc.opos + t];
	int sq = pc.n_seq != 0u ? seq[pc.oseq + t] : 0;
	bool bad = qp < 0 || uint(qp) >= pc.n_ctx || sq < 0 || (pc.n_seq != 0u && uint(sq) >= pc.n_seq);
	if (bad) { /* the whole workgroup: y keeps what it held */
		if (lid == 0u && s == 0u && blk == 0u)
			if (qp < 0 || uint(qp) >= pc.n_ctx)
				flag_bad(ST_ATTENTION, qp);
			else
				flag_bad(ST_ATTENTION | ST_SEQUENCE, sq);
		return;
	}
	int lo = pc.window > 0u ? max(0, qp - int(pc.window) + 1) : 0;
	int k0 = max(lo, int(s * pc.L)), k1 = min(qp, int(min((s + 1u) * pc.L, pc.n_ctx)) - 1);

	for (uint i = lid; i < hb * pc.hd; i += WG)
		qs[i] = q[pc.oq + (t * pc.nh + h0 + i / pc.hd) * pc.hd + i % pc.hd];
	if (lid < hb) {
		m_s[lid] = -1.0 / 0.0;
		l_s[lid] = 0.0;
	}
	for (uint i = lid; i < hb * pc.hdv; i += WG)
		acc[i] = 0.0;
	barrier();

	uint krb = k_row_bytes();
	for (int c0 = k0; c0 <= k1; c0 += int(C)) {
		for (uint i = lid; i < hb * C; i += WG) {
			uint h = i / C, j = i % C;
			int p = c0 + int(j);
			float sv = -1.0 / 0.0;
			if (p <= k1) {
				uint rb = uint(sq) * pc.k_nb3 + (uint(p) * pc.nkv + g) * krb;
				float d = 0.0;
				for (uint x = 0u; x < pc.hd; x++)
					d += qs[h * pc.hd + x] * k_at(rb, x);
				sv = d * pc.scale;
				if (pc.softcap > 0.0)
					sv = pc.softcap * tanh(clamp(sv / pc.softcap, -15.0, 15.0));
			}
			sc[h * C + j] = sv;
		}
		barrier();
		if (lid < hb) {
			float mx = m_s[lid];
			for (uint j = 0u; j < C; j++)
				mx = max(mx, sc[lid * C + j]);
			float cr = m_s[lid] == -1.0 / 0.0 ? 0.0 : exp(m_s[lid] - mx);
			float sum = 0.0;
			for (uint j = 0u; j < C; j++) {
				float w = sc[lid * C + j] == -1.0 / 0.0 ? 0.0 : exp(sc[lid * C + j] - mx);
				sc[lid * C + j] = w;
				sum += w;
			}
			l_s[lid] = l_s[lid] * cr + sum;
			m_s[lid] = mx;
			corr_s[lid] = cr;
		}
		barrier();
		int nj = min(int(C), k1 - c0 + 1);
		for (uint idx = lid; idx < hb * pc.hdv; idx += WG) {
			uint h = idx / pc.hdv, d = idx % pc.hdv;
			float a = acc[idx] * corr_s[h];
			for (int j = 0; j < nj; j++)
				a += sc[h * C + uint(j)] * v_at(uint(sq) * pc.v_nb3 + uint(c0 + j) * pc.v_nb2 + g * pc.v_nb1, d);
			acc[idx] = a;
		}
		barrier();
	}

	if (pc.nsplit == 1u) {
		if ((pc.flags & 1u) != 0u && lid < hb) {
			/* the sink joins the denominator only */
			float sk = sinks[pc.osink + h0 + lid], m = m_s[lid];
			float mx = max(m, sk);
			float cr = m == -1.0 / 0.0 ? 0.0 : exp(m - mx);
			l_s[lid] = l_s[lid] * cr + exp(sk - mx);
			corr_s[lid] = cr;
		} else if (lid < hb) {
			corr_s[lid] = 1.0;
		}
		barrier();
		for (uint idx = lid; idx < hb * pc.hdv; idx += WG) {
			uint h = idx / pc.hdv, d = idx % pc.hdv;
			y[pc.oy + (t * pc.nh + h0 + h) * pc.hdv + d] = acc[idx] * corr_s[h] / l_s[h];
		}
	} else {
		/* partials: [t][h][s] records of (m, l, acc[hdv]) */
		uint rec = pc.hdv + 2u;
		for (uint idx = lid; idx < hb * pc.hdv; idx += WG) {
			uint h = idx / pc.hdv, d = idx % pc.hdv;
			y[pc.oy + ((t * pc.nh + h0 + h) * pc.nsplit + s) * rec + 2u + d] = acc[idx];
		}
		if (lid < hb) {
			uint r = pc.oy + ((t * pc.nh + h0 + lid) * pc.nsplit + s) * rec;
			y[r] = m_s[lid];
			y[r + 1u] = l_s[lid];
		}
	}
}
