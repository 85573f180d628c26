/* ggml_legacy.h - validating reader for whisper.cpp's legacy ggml files.
 *
 * Two kinds of file share the magic 0x67676d6c ("lmgg" on disk):
 *   - Whisper models: hyperparameters, the mel filter bank, the vocabulary,
 *     then tensors until end of file;
 *   - Silero VAD models: a model-type string ("silero-16k"), version and
 *     hyperparameters, then tensors until end of file.
 * The file is mapped read-only; tokens, the filter bank and tensor data are
 * views into the mapping (little-endian, possibly unaligned). Every count,
 * length and offset is checked against the file size before use. */
#ifndef TERN_GGML_LEGACY_H
#define TERN_GGML_LEGACY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/core/error.h"
#include "lib/format/gguf.h"

#define GGML_LEGACY_MAGIC 0x67676d6cu

enum ggml_legacy_kind { GGML_LEGACY_WHISPER, GGML_LEGACY_SILERO };

/* One hyperparameter as stored in the file (all are int32 on disk today;
 * is_float is there so that callers print any future float correctly). */
struct ggml_legacy_hparam {
	const char *name;
	bool is_float;
	int64_t i;
	double f;
};

typedef struct ggml_legacy ggml_legacy;

/* Map and validate a file / a caller-owned buffer (kept, not copied).
 * On error *out is NULL and e holds a message naming the offset, field or
 * tensor: TERN_EFORMAT for malformed data, TERN_EUNSUPPORTED for unknown
 * tensor types, TERN_EIO, TERN_ENOMEM. */
int ggml_legacy_open(ggml_legacy **out, const char *path, tern_err *e);
int ggml_legacy_open_mem(ggml_legacy **out, const void *buf, size_t size, tern_err *e);
void ggml_legacy_close(ggml_legacy *m);

/* True if buf starts with the legacy magic (nothing else is checked). */
bool ggml_legacy_probe(const void *buf, size_t size);

enum ggml_legacy_kind ggml_legacy_kind(const ggml_legacy *m);
const char *ggml_legacy_kind_name(const ggml_legacy *m); /* "whisper" / "silero" */
uint64_t ggml_legacy_file_size(const ggml_legacy *m);
const uint8_t *ggml_legacy_base(const ggml_legacy *m);

/* Silero: the model-type string ("silero-16k"); Whisper: empty. */
struct tern_str ggml_legacy_model_type(const ggml_legacy *m);

size_t ggml_legacy_n_hparams(const ggml_legacy *m);
const struct ggml_legacy_hparam *ggml_legacy_hparam(const ggml_legacy *m, size_t i);
/* Hyperparameter by name, NULL if absent. */
const struct ggml_legacy_hparam *ggml_legacy_find_hparam(const ggml_legacy *m, const char *name);

/* Whisper only (Silero: TERN_ENOTFOUND / 0 / empty). */
int ggml_legacy_mel(const ggml_legacy *m, uint32_t *n_mel, uint32_t *n_fft,
		    const void **data /* [n_mel][n_fft] LE f32, possibly unaligned */);
uint64_t ggml_legacy_n_vocab(const ggml_legacy *m);
struct tern_str ggml_legacy_token(const ggml_legacy *m, uint64_t i); /* view; {NULL,0} if out of range */

/* Tensors, in file order. offset = absolute file offset of the data;
 * info_offset = file offset of the tensor's header; data = view (possibly
 * unaligned). n_dims may be 0 (a scalar; the converter squeezes [1] shapes). */
uint64_t ggml_legacy_n_tensors(const ggml_legacy *m);
const struct tern_tensor_view *ggml_legacy_tensor_at(const ggml_legacy *m, uint64_t i);
const struct tern_tensor_view *ggml_legacy_find_tensor(const ggml_legacy *m, const char *name);

#endif
