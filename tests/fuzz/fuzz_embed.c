/* fuzz_embed.c - libFuzzer target for lib/llm/embed: load any bytes as an
 * embedding model (the encoders' own loader: fused or separate Q/K/V, the
 * split views of attn_qkv, optional token types and biases, the position
 * table; decoders go through lib/llm/model as in fuzz_llm_model). A load
 * either fails with a one-line message and no embedder, or gives one
 * whose sizes are the file's; then, when the sizes are small, it runs:
 * mean pooling over a context of at most 8 on the reference or the
 * optimized CPU backend (the input's size picks), 3 ids from the input,
 * and an id outside the vocabulary and an input of 0 or 9 tokens must be
 * refused. The result may be NaN (the weights are noise), never a crash
 * or a sanitizer report. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "lib/cpu/backend.h"
#include "lib/llm/embed.h"

static volatile float sink;

#define RUN_MAX_DIM (1u << 12)

/* runs em if it is small, and frees it */
static void run(struct tern_embed *em, const uint8_t *data, size_t size)
{
	const struct tern_embed_info *in = tern_embed_info(em);
	if (in->n_embd > RUN_MAX_DIM || in->n_vocab > (1u << 16) || in->n_layer > 4 || in->n_ctx_train < 3) {
		tern_embed_free(em);
		return;
	}
	struct tern_embed_opts o = tern_embed_opts_default();
	o.pooling = TERN_POOLING_MEAN;
	o.n_ctx = in->n_ctx_train < 8 ? (int32_t)in->n_ctx_train : 8;
	o.n_ubatch = 4;
	tern_err e = {0};
	struct tern_backend *be = NULL;
	struct cpu_backend_opts bo = {.n_threads = size % 4 < 2 ? 1 : 2, .max_tokens = 8};
	if ((size % 2 ? cpu_ref_backend_new : cpu_backend_new)(&be, &bo, &e)) {
		tern_embed_free(em);
		return;
	}
	if (tern_embed_init(em, be, &o, &e) == 0) {
		float out[RUN_MAX_DIM];
		int32_t ids[9];
		for (int i = 0; i < 9; i++)
			ids[i] = (int32_t)((size > (size_t)i ? data[size - 1 - (size_t)i] : 0) % in->n_vocab);
		int rc = tern_embed_run(em, ids, 3, out, &e);
		if (rc && !e.msg[0])
			__builtin_trap();
		if (!rc)
			sink = out[0] + out[in->n_embd - 1];
		if (tern_embed_run(em, ids, 0, out, &e) != TERN_EINVAL)
			__builtin_trap();
		if (tern_embed_run(em, ids, tern_embed_n_ctx(em) + 1, out, &e) != TERN_ERANGE)
			__builtin_trap();
		ids[1] = (int32_t)in->n_vocab;
		if (tern_embed_run(em, ids, 3, out, &e) != TERN_EINVAL)
			__builtin_trap();
	} else if (!e.msg[0]) {
		__builtin_trap();
	}
	tern_embed_free(em);
	tern_backend_free(be);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	tern_mf *mf = NULL;
	tern_err e = {0};
	struct gguf_open_opts oo = {.lenient = size % 2 == 1};
	if (tern_mf_open_mem(&mf, data, size, &oo, &e) != 0)
		return 0;
	struct tern_embed *em = (struct tern_embed *)&e; /* must be reset to NULL on failure */
	int rc = tern_embed_load(&em, mf, &e);
	if (rc) {
		if (em || !e.msg[0] || memchr(e.msg, '\n', strlen(e.msg)))
			__builtin_trap();
		tern_mf_close(mf);
		return 0;
	}
	if (!tern_embed_info(em)->n_embd || !tern_embed_info(em)->n_vocab)
		__builtin_trap();
	run(em, data, size);
	tern_mf_close(mf);
	return 0;
}
