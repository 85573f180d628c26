/* fuzz_ggml_legacy.c - libFuzzer target for the legacy ggml reader: open any
 * bytes, then touch everything a caller may touch (hyperparameters, filter
 * bank, every token, every tensor's name, shape and first/last data byte);
 * then the Whisper model checks over the same bytes (every tensor they
 * accept lies inside the input, a refusal is one line). */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "lib/format/ggml_legacy.h"
#include "lib/speech/whisper.h"

static volatile uint64_t sink;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	ggml_legacy *m = NULL;
	tern_err e = {0};
	if (ggml_legacy_open_mem(&m, data, size, &e) != 0) {
		if (m || !e.msg[0] || memchr(e.msg, '\n', strlen(e.msg)))
			__builtin_trap();
		return 0;
	}
	uint64_t acc = ggml_legacy_kind(m) + strlen(ggml_legacy_kind_name(m)) + ggml_legacy_file_size(m);
	struct tern_str mt = ggml_legacy_model_type(m);
	for (uint64_t i = 0; i < mt.len; i++)
		acc += (uint8_t)mt.ptr[i];
	for (size_t i = 0; i < ggml_legacy_n_hparams(m); i++) {
		const struct ggml_legacy_hparam *h = ggml_legacy_hparam(m, i);
		acc += strlen(h->name) + (uint64_t)h->i;
		if (ggml_legacy_find_hparam(m, h->name) == NULL)
			__builtin_trap();
	}
	uint32_t n_mel = 0, n_fft = 0;
	const void *mel = NULL;
	if (ggml_legacy_mel(m, &n_mel, &n_fft, &mel) == 0 && n_mel && n_fft) {
		const uint8_t *p = mel;
		acc += p[0] + p[(uint64_t)n_mel * n_fft * 4 - 1];
	}
	for (uint64_t i = 0; i < ggml_legacy_n_vocab(m); i++) {
		struct tern_str t = ggml_legacy_token(m, i);
		if (t.len)
			acc += (uint8_t)t.ptr[0] + (uint8_t)t.ptr[t.len - 1];
	}
	for (uint64_t i = 0; i < ggml_legacy_n_tensors(m); i++) {
		const struct tern_tensor_view *t = ggml_legacy_tensor_at(m, i);
		const uint8_t *p = t->data;
		if (t->offset + t->nbytes > size || p != data + t->offset || t->nbytes == 0)
			__builtin_trap();
		acc += p[0] + p[t->nbytes - 1] + t->ne[0] + t->type;
		char name[128];
		if (t->name.len < sizeof name && !memchr(t->name.ptr, 0, t->name.len)) {
			memcpy(name, t->name.ptr, t->name.len);
			name[t->name.len] = 0;
			if (ggml_legacy_find_tensor(m, name) != t)
				__builtin_trap();
		}
	}
	sink = acc;
	ggml_legacy_close(m);

	struct whisper_model *w = NULL;
	if (whisper_model_load_mem(&w, data, size, &e) != 0) {
		if (w || !e.msg[0] || memchr(e.msg, '\n', strlen(e.msg)))
			__builtin_trap();
		return 0;
	}
	const struct tern_tensor_view *last = w->dec[w->hp.n_text_layer - 1].xattn_ln_b;
	if ((const uint8_t *)last->data + last->nbytes > data + size || w->ids.beg >= w->hp.n_vocab)
		__builtin_trap();
	whisper_model_free(w);
	return 0;
}
