/* modelfile.c - GGUF and legacy ggml files behind one interface (see
 * modelfile.h). GGUF entries and tensors are the reader's own views; a
 * legacy file's fields are turned into entries here, and its tensor views
 * are copied once so that their offsets follow the data-section convention. */
#include "lib/format/modelfile.h"

#include "lib/core/mapfile.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Longest legacy entry name: "whisper." or "silero." plus a hyperparameter
 * name such as "encoder.3.out_channels". */
#define LEGACY_KEY_MAX 96

struct tern_mf {
	enum tern_mf_format format;
	gguf_file *gf;
	ggml_legacy *lg;
	struct tern_mf_kv *kv;                   /* [n_kv] */
	uint64_t n_kv;
	const struct gguf_kv **gkv;              /* [n_kv] GGUF: the reader's entry; NULL for legacy */
	uint64_t vocab_kv;                       /* legacy: index of tokenizer.tokens, or UINT64_MAX */
	const struct tern_tensor_view **t;       /* [n_t] */
	struct tern_tensor_view *own_t;          /* [n_t] legacy: copies with data-section offsets */
	uint64_t n_t;
	uint64_t data_offset, file_size;
	char (*names)[LEGACY_KEY_MAX];           /* [n_kv] legacy entry names */
	uint8_t (*scalars)[8];                   /* [n_kv] legacy scalars, little-endian */
	bool mapped;                             /* opened by path: the data is tern_map_file's mapping */
};

enum tern_mf_format tern_mf_probe(const void *buf, size_t size)
{
	return ggml_legacy_probe(buf, size) ? TERN_MF_GGML : TERN_MF_GGUF;
}

static int wrap_gguf(tern_mf *m, tern_err *e)
{
	const gguf_file *f = m->gf;
	m->format = TERN_MF_GGUF;
	m->n_kv = gguf_n_kv(f);
	m->n_t = gguf_n_tensors(f);
	m->file_size = gguf_file_size(f);
	m->data_offset = m->n_t ? gguf_data_offset(f) : m->file_size;
	m->kv = calloc(m->n_kv ? (size_t)m->n_kv : 1, sizeof *m->kv);
	m->gkv = calloc(m->n_kv ? (size_t)m->n_kv : 1, sizeof *m->gkv);
	m->t = calloc(m->n_t ? (size_t)m->n_t : 1, sizeof *m->t);
	if (!m->kv || !m->gkv || !m->t)
		return tern_errf(e, TERN_ENOMEM, "out of memory for %llu entries and %llu tensors",
				 (unsigned long long)m->n_kv, (unsigned long long)m->n_t);
	for (uint64_t i = 0; i < m->n_kv; i++) {
		m->gkv[i] = gguf_kv_at(f, i);
		m->kv[i] = (struct tern_mf_kv){.key = m->gkv[i]->key, .v = m->gkv[i]->v};
	}
	for (uint64_t i = 0; i < m->n_t; i++)
		m->t[i] = gguf_tensor_at(f, i);
	return 0;
}

/* Name entry n "KIND.what" and return its key view. */
static struct tern_str legacy_name(tern_mf *m, uint64_t n, const char *kind, const char *what)
{
	int len = snprintf(m->names[n], LEGACY_KEY_MAX, "%s%s%s", kind ? kind : "", kind ? "." : "", what);
	if (len >= LEGACY_KEY_MAX)
		len = LEGACY_KEY_MAX - 1;
	return (struct tern_str){m->names[n], (uint64_t)len};
}

static int wrap_legacy(tern_mf *m, tern_err *e)
{
	const ggml_legacy *lg = m->lg;
	const char *kind = ggml_legacy_kind_name(lg);
	size_t nh = ggml_legacy_n_hparams(lg);
	size_t cap = nh + 3; /* model type, mel filters, vocabulary */
	m->format = TERN_MF_GGML;
	m->file_size = ggml_legacy_file_size(lg);
	m->n_t = ggml_legacy_n_tensors(lg);
	m->vocab_kv = UINT64_MAX;
	m->kv = calloc(cap, sizeof *m->kv);
	m->names = calloc(cap, sizeof *m->names);
	m->scalars = calloc(cap, sizeof *m->scalars);
	m->t = calloc(m->n_t ? (size_t)m->n_t : 1, sizeof *m->t);
	m->own_t = calloc(m->n_t ? (size_t)m->n_t : 1, sizeof *m->own_t);
	if (!m->kv || !m->names || !m->scalars || !m->t || !m->own_t)
		return tern_errf(e, TERN_ENOMEM, "out of memory for %llu tensors", (unsigned long long)m->n_t);

	uint64_t n = 0;
	struct tern_str mt = ggml_legacy_model_type(lg);
	if (mt.len) {
		m->kv[n] = (struct tern_mf_kv){legacy_name(m, n, kind, "model_type"), {.type = GGUF_T_STRING, .s = mt}};
		n++;
	}
	for (size_t i = 0; i < nh; i++, n++) {
		const struct ggml_legacy_hparam *h = ggml_legacy_hparam(lg, i);
		struct tern_mf_kv *kv = &m->kv[n];
		kv->key = legacy_name(m, n, kind, h->name);
		if (h->is_float) {
			memcpy(m->scalars[n], &h->f, 8);
			kv->v = (struct gguf_value){.type = GGUF_T_F64, .p = m->scalars[n], .size = 8};
		} else { /* int32 on disk */
			int32_t v = (int32_t)h->i;
			memcpy(m->scalars[n], &v, 4);
			kv->v = (struct gguf_value){.type = GGUF_T_I32, .p = m->scalars[n], .size = 4};
		}
	}
	uint32_t n_mel, n_fft;
	const void *mel;
	if (ggml_legacy_mel(lg, &n_mel, &n_fft, &mel) == 0) {
		uint64_t cnt = (uint64_t)n_mel * n_fft;
		m->kv[n] = (struct tern_mf_kv){legacy_name(m, n, kind, "mel_filters"),
					       {.type = GGUF_T_ARRAY, .elem = GGUF_T_F32, .n = cnt, .p = mel, .size = cnt * 4}};
		n++;
	}
	uint64_t nv = ggml_legacy_n_vocab(lg);
	if (nv) {
		m->kv[n] = (struct tern_mf_kv){legacy_name(m, n, NULL, "tokenizer.tokens"),
					       {.type = GGUF_T_ARRAY, .elem = GGUF_T_STRING, .n = nv}};
		m->vocab_kv = n++;
	}
	m->n_kv = n;

	m->data_offset = m->n_t ? ggml_legacy_tensor_at(lg, 0)->info_offset : m->file_size;
	for (uint64_t i = 0; i < m->n_t; i++) {
		m->own_t[i] = *ggml_legacy_tensor_at(lg, i);
		/* the reader counts from the file start; the first record is
		 * the lowest offset, so this cannot wrap */
		m->own_t[i].offset -= m->data_offset;
		m->t[i] = &m->own_t[i];
	}
	return 0;
}

static int open_common(tern_mf **out, const char *path, const void *buf, size_t size,
		       const struct gguf_open_opts *gguf_opts, tern_err *e)
{
	*out = NULL;
	tern_mf *m = calloc(1, sizeof *m);
	if (!m)
		return tern_errf(e, TERN_ENOMEM, "out of memory");
	enum tern_mf_format fmt;
	if (buf) {
		fmt = tern_mf_probe(buf, size);
	} else {
		/* Unreadable files go to the GGUF reader, whose message names
		 * the cause. */
		unsigned char head[4];
		size_t n = 0;
		FILE *f = fopen(path, "rb");
		if (f) {
			n = fread(head, 1, sizeof head, f);
			fclose(f);
		}
		fmt = tern_mf_probe(head, n);
	}
	int rc;
	if (fmt == TERN_MF_GGML) {
		rc = buf ? ggml_legacy_open_mem(&m->lg, buf, size, e) : ggml_legacy_open(&m->lg, path, e);
		if (!rc)
			rc = wrap_legacy(m, e);
	} else {
		rc = buf ? gguf_open_mem(&m->gf, buf, size, gguf_opts, e) : gguf_open(&m->gf, path, gguf_opts, e);
		if (!rc)
			rc = wrap_gguf(m, e);
	}
	if (rc) {
		tern_mf_close(m);
		return rc;
	}
	m->mapped = buf == NULL;
	*out = m;
	return 0;
}

bool tern_mf_mapped(const tern_mf *m) { return m->mapped; }

void tern_mf_drop_metadata(const tern_mf *m)
{
	if (!m->mapped || !m->gf || !gguf_base(m->gf))
		return;
	/* a file without tensors may end before its (padded) data offset:
	 * never past the mapping */
	uint64_t n = gguf_data_offset(m->gf), size = gguf_file_size(m->gf);
	tern_map_drop(gguf_base(m->gf), (size_t)(n < size ? n : size));
}

int tern_mf_open(tern_mf **out, const char *path, const struct gguf_open_opts *gguf_opts, tern_err *e)
{
	return open_common(out, path, NULL, 0, gguf_opts, e);
}

int tern_mf_open_mem(tern_mf **out, const void *buf, size_t size, const struct gguf_open_opts *gguf_opts,
		     tern_err *e)
{
	if (!buf && size)
		return tern_errf(e, TERN_EINVAL, "no buffer");
	static const unsigned char empty[1];
	return open_common(out, NULL, buf ? buf : empty, size, gguf_opts, e);
}

void tern_mf_close(tern_mf *m)
{
	if (!m)
		return;
	gguf_close(m->gf);
	ggml_legacy_close(m->lg);
	free(m->kv);
	free(m->gkv);
	free(m->t);
	free(m->own_t);
	free(m->names);
	free(m->scalars);
	free(m);
}

enum tern_mf_format tern_mf_format(const tern_mf *m) { return m->format; }
const char *tern_mf_format_name(const tern_mf *m) { return m->format == TERN_MF_GGUF ? "gguf" : "ggml"; }
const char *tern_mf_variant(const tern_mf *m) { return m->lg ? ggml_legacy_kind_name(m->lg) : NULL; }
uint32_t tern_mf_version(const tern_mf *m) { return m->gf ? gguf_version(m->gf) : 0; }
uint32_t tern_mf_alignment(const tern_mf *m) { return m->gf ? gguf_alignment(m->gf) : 0; }
uint64_t tern_mf_file_size(const tern_mf *m) { return m->file_size; }
uint64_t tern_mf_data_offset(const tern_mf *m) { return m->data_offset; }
uint64_t tern_mf_n_kv(const tern_mf *m) { return m->n_kv; }
uint64_t tern_mf_n_tensors(const tern_mf *m) { return m->n_t; }
const gguf_file *tern_mf_gguf(const tern_mf *m) { return m->gf; }
const ggml_legacy *tern_mf_legacy(const tern_mf *m) { return m->lg; }

const struct tern_mf_kv *tern_mf_kv_at(const tern_mf *m, uint64_t i)
{
	return i < m->n_kv ? &m->kv[i] : NULL;
}

const struct tern_mf_kv *tern_mf_find(const tern_mf *m, const char *key)
{
	if (m->gf) {
		const struct gguf_kv *kv = gguf_find(m->gf, key);
		return kv ? &m->kv[kv - gguf_kv_at(m->gf, 0)] : NULL;
	}
	for (uint64_t i = 0; i < m->n_kv; i++) /* a few dozen entries */
		if (tern_str_eq(m->kv[i].key, key))
			return &m->kv[i];
	return NULL;
}

struct tern_str tern_mf_arr_str(const tern_mf *m, const struct tern_mf_kv *kv, uint64_t i)
{
	struct tern_str none = {0};
	if (!kv || kv < m->kv || kv >= m->kv + m->n_kv || kv->v.type != GGUF_T_ARRAY || kv->v.elem != GGUF_T_STRING ||
	    i >= kv->v.n)
		return none;
	uint64_t idx = (uint64_t)(kv - m->kv);
	if (m->gf)
		return gguf_kv_arr_str(m->gkv[idx], i);
	if (idx == m->vocab_kv)
		return ggml_legacy_token(m->lg, i);
	return none;
}

const struct tern_tensor_view *tern_mf_tensor_at(const tern_mf *m, uint64_t i)
{
	return i < m->n_t ? m->t[i] : NULL;
}

const struct tern_tensor_view *tern_mf_find_tensor(const tern_mf *m, const char *name)
{
	if (m->gf)
		return gguf_find_tensor(m->gf, name);
	for (uint64_t i = 0; i < m->n_t; i++)
		if (tern_str_eq(m->own_t[i].name, name))
			return &m->own_t[i];
	return NULL;
}
