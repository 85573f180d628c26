/* fuzz_modelfile.c - libFuzzer target for lib/format/modelfile and
 * lib/format/arch: open any bytes as either format, walk every entry and
 * tensor through the shared view (the data-offset convention must point
 * inside the buffer), then read and validate the hyperparameters of every
 * family, as inspect's summary and the model loaders do. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "lib/format/arch.h"

static volatile uint64_t sink;
static struct tern_arch_llm llm; /* large: not on the stack */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	tern_mf *m = NULL;
	tern_err e = {0};
	struct gguf_open_opts oo = {.lenient = size % 2 == 1};
	if (tern_mf_open_mem(&m, data, size, &oo, &e) != 0) {
		if (m || !e.msg[0] || memchr(e.msg, '\n', strlen(e.msg)))
			__builtin_trap();
		return 0;
	}
	uint64_t acc = tern_mf_file_size(m) + tern_mf_version(m) + tern_mf_alignment(m);
	if (tern_mf_file_size(m) != size || tern_mf_data_offset(m) > size)
		__builtin_trap();
	for (uint64_t i = 0; i < tern_mf_n_kv(m); i++) {
		const struct tern_mf_kv *kv = tern_mf_kv_at(m, i);
		acc += kv->key.len + kv->v.type;
		if (kv->v.type == GGUF_T_ARRAY && kv->v.elem == GGUF_T_STRING && kv->v.n) {
			struct tern_str s = tern_mf_arr_str(m, kv, kv->v.n - 1);
			if (s.len)
				acc += (uint8_t)s.ptr[s.len - 1];
		}
	}
	for (uint64_t i = 0; i < tern_mf_n_tensors(m); i++) {
		const struct tern_tensor_view *t = tern_mf_tensor_at(m, i);
		if (!t->data)
			continue; /* lenient GGUF: data outside the file is reported, not viewed */
		const uint8_t *p = t->data;
		if (p != data + tern_mf_data_offset(m) + t->offset || t->offset + t->nbytes > size - tern_mf_data_offset(m))
			__builtin_trap();
		if (t->nbytes)
			acc += p[0] + p[t->nbytes - 1];
	}
	char name[TERN_ARCH_NAME_MAX];
	struct tern_arch_whisper w;
	struct tern_arch_silero s;
	switch (tern_arch_family(m, name, sizeof name)) {
	case TERN_ARCH_LLM:
		if (tern_arch_llm_read(m, &llm, &e) == 0)
			acc += llm.n_embd + (uint64_t)tern_arch_llm_validate(&llm, &e);
		break;
	case TERN_ARCH_WHISPER:
		if (tern_arch_whisper_read(m, &w, &e) == 0)
			acc += w.n_vocab + (uint64_t)tern_arch_whisper_validate(&w, &e);
		break;
	case TERN_ARCH_SILERO:
		if (tern_arch_silero_read(m, &s, &e) == 0)
			acc += s.n_window + (uint64_t)tern_arch_silero_validate(&s, &e);
		break;
	case TERN_ARCH_NONE:
		break;
	}
	sink = acc;
	tern_mf_close(m);
	return 0;
}
