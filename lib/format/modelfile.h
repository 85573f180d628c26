/* modelfile.h - one view over every model file tern reads.
 *
 * A GGUF file (v2, v3) and whisper.cpp's legacy ggml files (Whisper, Silero
 * VAD) are opened by probing their magic and presented alike: metadata as
 * key/value entries and tensors as struct tern_tensor_view, so that inspect
 * and the model loaders (LLM, Whisper, Silero) share one adapter.
 *
 * Legacy files have no key/value section; their fields become entries:
 *   KIND.model_type   the Silero model-type string ("silero-16k")
 *   KIND.NAME         each hyperparameter (int32 as GGUF_T_I32, floats as F64)
 *   KIND.mel_filters  Whisper's mel filter bank, an array of n_mel*n_fft f32
 *   tokenizer.tokens  Whisper's stored vocabulary, an array of strings
 * where KIND is "whisper" or "silero".
 *
 * One data-offset convention for both formats: a tensor's `offset` counts
 * from the start of the data section, tern_mf_data_offset() + offset is its
 * file offset. The data section of a GGUF file starts after the tensor
 * infos (aligned); that of a legacy file at the first tensor record (tensor
 * headers interleave with the data there). A file without tensors has no
 * data section: tern_mf_data_offset() is then the file size. */
#ifndef TERN_MODELFILE_H
#define TERN_MODELFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/core/error.h"
#include "lib/core/str.h"
#include "lib/format/ggml_legacy.h"
#include "lib/format/gguf.h"
#include "lib/format/tensor.h"

enum tern_mf_format { TERN_MF_GGUF, TERN_MF_GGML };

/* One metadata entry: a view into the file (legacy scalars: into the
 * tern_mf). String-array elements are read with tern_mf_arr_str. */
struct tern_mf_kv {
	struct tern_str key;
	struct gguf_value v;
};

typedef struct tern_mf tern_mf;

/* The reader for a buffer, from its first bytes: TERN_MF_GGML for the
 * legacy magic, TERN_MF_GGUF otherwise (the GGUF reader then says what is
 * wrong with anything else). */
enum tern_mf_format tern_mf_probe(const void *buf, size_t size);

/* Map and validate a file / a caller-owned buffer (kept, not copied).
 * gguf_opts (may be NULL) applies to GGUF files: lenient mode reports
 * problems through its callback. On error *out is NULL and e names the
 * offset, key or tensor. */
int tern_mf_open(tern_mf **out, const char *path, const struct gguf_open_opts *gguf_opts, tern_err *e);
int tern_mf_open_mem(tern_mf **out, const void *buf, size_t size, const struct gguf_open_opts *gguf_opts,
		     tern_err *e);
void tern_mf_close(tern_mf *m);

enum tern_mf_format tern_mf_format(const tern_mf *m);
const char *tern_mf_format_name(const tern_mf *m); /* "gguf" or "ggml" */
/* True if the tensors' data is the file's mapping (tern_mf_open), whose
 * pages a reader with its own copy may drop (tern_map_drop); false for a
 * caller's buffer (tern_mf_open_mem). */
bool tern_mf_mapped(const tern_mf *m);
/* Release the memory of a mapped GGUF file's metadata (the header, keys
 * and tensor infos: every whole page before the tensor data; tern_map_drop)
 * once the reader has taken what it keeps from it (the vocabulary, the
 * configuration): a 262144-token vocabulary's arrays are 6 MiB of the
 * file. Views into it stay valid: a later read maps the pages back. No-op
 * for a caller's buffer and for legacy files. */
void tern_mf_drop_metadata(const tern_mf *m);
const char *tern_mf_variant(const tern_mf *m);     /* legacy: "whisper" / "silero"; GGUF: NULL */
uint32_t tern_mf_version(const tern_mf *m);        /* GGUF: 2 or 3; legacy: 0 (unversioned) */
uint32_t tern_mf_alignment(const tern_mf *m);      /* GGUF: data alignment; legacy: 0 (none) */
uint64_t tern_mf_file_size(const tern_mf *m);
uint64_t tern_mf_data_offset(const tern_mf *m);    /* see the top of this file */

uint64_t tern_mf_n_kv(const tern_mf *m);
const struct tern_mf_kv *tern_mf_kv_at(const tern_mf *m, uint64_t i);
/* NULL if absent; the first occurrence wins if a key repeats. */
const struct tern_mf_kv *tern_mf_find(const tern_mf *m, const char *key);
/* i-th element of a string array entry in O(1) ({NULL, 0} if out of range). */
struct tern_str tern_mf_arr_str(const tern_mf *m, const struct tern_mf_kv *kv, uint64_t i);

uint64_t tern_mf_n_tensors(const tern_mf *m);
const struct tern_tensor_view *tern_mf_tensor_at(const tern_mf *m, uint64_t i);
const struct tern_tensor_view *tern_mf_find_tensor(const tern_mf *m, const char *name);

/* The reader underneath, for what only one format has (a GGUF vocabulary,
 * the legacy mel filter bank): NULL when the file is of the other format. */
const gguf_file *tern_mf_gguf(const tern_mf *m);
const ggml_legacy *tern_mf_legacy(const tern_mf *m);

#endif
