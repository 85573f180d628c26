/* ggml_legacy.c - validating reader for whisper.cpp's legacy ggml files.
 *
 * Layout (all integers little-endian int32 unless noted):
 *   magic 0x67676d6c
 *   Whisper: n_vocab n_audio_ctx n_audio_state n_audio_head n_audio_layer
 *            n_text_ctx n_text_state n_text_head n_text_layer n_mels ftype;
 *            n_mel n_fft, n_mel*n_fft f32 (mel filter bank);
 *            n_tokens, then per token: u32 len, len bytes
 *   Silero:  len, len bytes of model type ("silero-16k"); version major
 *            minor patch; n_window n_context; n_encoder_layers, then per
 *            layer in_channels out_channels kernel_size; lstm_input_size
 *            lstm_hidden_size final_conv_in final_conv_out
 *   then tensors until end of file: n_dims (0..4) name_len type,
 *   ne[n_dims], name, data (unaligned, size implied by type and shape).
 * Nothing is trusted: every read is checked against the bytes left, every
 * product for overflow, and allocations are bounded by the file size. */
#include "lib/format/ggml_legacy.h"


#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/core/cursor.h"
#include "lib/core/mapfile.h"
#include "lib/core/quote.h"
#include "lib/core/strmap.h"
#include "quant/quant.h"

#define HP_NAME_MAX 32
/* Sanity bounds far above real models (Silero: 4 layers, 15 tensors;
 * Whisper: 51,866 tokens, ~1,300 tensors) so that memory stays bounded
 * whatever the file size. */
#define SILERO_MAX_LAYERS 1024
#define MAX_TOKENS (1u << 24)
#define MAX_TENSORS (1u << 20)

struct hparam {
	struct ggml_legacy_hparam pub; /* pub.name points at name */
	char name[HP_NAME_MAX];
};

struct ggml_legacy {
	const uint8_t *base;
	uint64_t size;
	struct tern_map map; /* base non-NULL when we own the mapping */

	enum ggml_legacy_kind kind;
	struct tern_str model_type;

	struct hparam *hp;
	size_t n_hp;

	uint32_t n_mel, n_fft;
	const uint8_t *mel; /* [n_mel][n_fft] f32 */

	uint64_t n_vocab;
	uint64_t *tok_off; /* [n_vocab] file offset of each token's u32 length */

	struct tern_tensor_view *t;
	uint64_t n_t, cap_t;
	struct tern_strmap index; /* tensor name -> index */
};

/* ---- reading ------------------------------------------------------------- */

/* An int32 that must be >= 0 (a count or a size). */
static int rd_count(struct tern_cur *r, int32_t *out, const char *what)
{
	size_t at = r->off;
	int rc = tern_cur_i32(r, out, what);
	if (rc)
		return rc;
	if (*out < 0)
		return tern_errf(r->e, TERN_EFORMAT, "offset %zu: %s = %d is negative", at, what, *out);
	return 0;
}

/* ---- hyperparameters ------------------------------------------------------ */

static int hp_alloc(ggml_legacy *m, size_t n, tern_err *e)
{
	m->hp = calloc(n ? n : 1, sizeof *m->hp);
	if (!m->hp)
		return tern_errf(e, TERN_ENOMEM, "out of memory for %zu hyperparameters", n);
	return 0;
}

static int hp_read(ggml_legacy *m, struct tern_cur *r, const char *name)
{
	struct hparam *h = &m->hp[m->n_hp];
	snprintf(h->name, sizeof h->name, "%s", name);
	int32_t v = 0;
	int rc = rd_count(r, &v, h->name);
	if (rc)
		return rc;
	h->pub.name = h->name;
	h->pub.is_float = false;
	h->pub.i = v;
	h->pub.f = v;
	m->n_hp++;
	return 0;
}

/* ---- tensors -------------------------------------------------------------- */

static struct tern_str tensor_name(const void *m, size_t i)
{
	return ((const ggml_legacy *)m)->t[i].name;
}

static int tensor_push(ggml_legacy *m, const struct tern_tensor_view *t, tern_err *e)
{
	if (m->n_t == MAX_TENSORS)
		return tern_errf(e, TERN_EFORMAT, "offset %llu: more than %u tensors",
				 (unsigned long long)t->info_offset, MAX_TENSORS);
	if (m->n_t == m->cap_t) {
		uint64_t cap = m->cap_t ? m->cap_t * 2 : 16;
		struct tern_tensor_view *nt = realloc(m->t, cap * sizeof *nt);
		if (!nt)
			return tern_errf(e, TERN_ENOMEM, "out of memory for %llu tensors",
					 (unsigned long long)cap);
		m->t = nt;
		m->cap_t = cap;
	}
	m->t[m->n_t++] = *t;
	return 0;
}

/* Build the name index; a repeated name is malformed. */
static int tensor_index(ggml_legacy *m, tern_err *e)
{
	int rc = tern_strmap_init(&m->index, (size_t)m->n_t, tensor_name, m);
	if (rc)
		return tern_errf(e, rc, "no room for an index of %llu tensors", (unsigned long long)m->n_t);
	for (uint64_t i = 0; i < m->n_t; i++) {
		size_t first;
		if (tern_strmap_add(&m->index, (size_t)i, &first) != 1)
			continue;
		const struct tern_tensor_view *t = &m->t[i];
		char nb[TERN_QUOTE_MAX];
		return tern_errf(e, TERN_EFORMAT,
				 "tensor '%s': duplicate tensor name at offset %llu (first at offset %llu)",
				 tern_quote_str(nb, sizeof nb, t->name), (unsigned long long)t->info_offset,
				 (unsigned long long)m->t[first].info_offset);
	}
	return 0;
}

/* n_dims, name length, type, dimensions and name of the tensor at the
 * cursor. */
static int read_tensor_header(struct tern_cur *r, struct tern_tensor_view *t, int32_t *type)
{
	int32_t n_dims = 0, name_len = 0;
	size_t at = r->off;
	int rc;
	if ((rc = tern_cur_need(r, 12, "header")) || (rc = tern_cur_i32(r, &n_dims, "n_dims")) ||
	    (rc = tern_cur_i32(r, &name_len, "name length")) || (rc = tern_cur_i32(r, type, "type")))
		return rc;
	if (n_dims < 0 || n_dims > GGUF_MAX_DIMS)
		return tern_errf(r->e, TERN_EFORMAT, "offset %zu: n_dims = %d (expected 0..%d)", at, n_dims,
				 GGUF_MAX_DIMS);
	if (name_len <= 0)
		return tern_errf(r->e, TERN_EFORMAT, "offset %zu: name length %d (expected > 0)", at + 4,
				 name_len);
	t->n_dims = (uint32_t)n_dims;
	for (int i = 0; i < GGUF_MAX_DIMS; i++)
		t->ne[i] = 1;
	for (int i = 0; i < n_dims; i++) {
		int32_t ne = 0;
		size_t d_at = r->off;
		if ((rc = tern_cur_i32(r, &ne, "dimension")))
			return rc;
		if (ne <= 0)
			return tern_errf(r->e, TERN_EFORMAT, "offset %zu: dimension ne[%d] = %d (expected > 0)",
					 d_at, i, ne);
		t->ne[i] = (uint64_t)ne;
	}
	if ((uint64_t)name_len > tern_cur_left(r))
		return tern_errf(r->e, TERN_EFORMAT, "offset %zu: name length %d past end of file (%zu bytes left)",
				 at + 4, name_len, tern_cur_left(r));
	t->name.ptr = (const char *)r->base + r->off;
	t->name.len = (uint64_t)name_len;
	r->off += (size_t)name_len;
	return 0;
}

/* Type, block fit and byte size of a tensor whose header starts at `at`;
 * the data that follows the header is then placed at the cursor. */
static int read_tensor_data(struct tern_cur *r, size_t at, int32_t type, struct tern_tensor_view *t)
{
	tern_err *e = r->e;
	if (type < 0 || type >= QT_COUNT)
		return tern_errf(e, TERN_EUNSUPPORTED, "offset %zu: unknown tensor type %d", at + 8, type);
	if (!quant_type_valid((uint32_t)type))
		return tern_errf(e, TERN_EFORMAT, "offset %zu: removed tensor type %d (%s)", at + 8, type,
				 quant_type_name((uint32_t)type));
	t->type = (uint32_t)type;
	const struct quant_type_info *ti = quant_type_info(t->type);
	if (t->ne[0] % ti->blck)
		return tern_errf(e, TERN_EFORMAT,
				 "offset %zu: row length ne[0] = %llu is not a multiple of the %s block size %u",
				 at + 12, (unsigned long long)t->ne[0], ti->name, ti->blck);
	bool ok;
	uint64_t nbytes = quant_row_size(t->type, t->ne[0], &ok);
	for (int i = 1; ok && i < GGUF_MAX_DIMS; i++)
		ok = !__builtin_mul_overflow(nbytes, t->ne[i], &nbytes);
	if (!ok)
		return tern_errf(e, TERN_EFORMAT, "offset %zu: size of shape [%llu, %llu, %llu, %llu] overflows",
				 at + 12, (unsigned long long)t->ne[0], (unsigned long long)t->ne[1],
				 (unsigned long long)t->ne[2], (unsigned long long)t->ne[3]);
	if (nbytes > tern_cur_left(r))
		return tern_errf(e, TERN_EFORMAT,
				 "offset %zu: data of %llu bytes extends past end of file (size %zu; header at offset %zu)",
				 r->off, (unsigned long long)nbytes, r->size, at);
	t->nbytes = nbytes;
	t->offset = r->off;
	t->info_offset = at;
	t->data = r->base + r->off;
	r->off += (size_t)nbytes;
	return 0;
}

static int read_tensor(ggml_legacy *m, struct tern_cur *r)
{
	struct tern_tensor_view t = {0};
	size_t at = r->off;
	int32_t type = 0;
	int rc = read_tensor_header(r, &t, &type);
	if (rc) {
		tern_err_prefixf(r->e, "tensor #%llu", (unsigned long long)m->n_t);
		return rc;
	}
	if ((rc = read_tensor_data(r, at, type, &t))) {
		char nb[TERN_QUOTE_MAX];
		tern_err_prefixf(r->e, "tensor '%s'", tern_quote_str(nb, sizeof nb, t.name));
		return rc;
	}
	return tensor_push(m, &t, r->e);
}

static int read_tensors(ggml_legacy *m, struct tern_cur *r)
{
	while (tern_cur_left(r) > 0) {
		int rc = read_tensor(m, r);
		if (rc)
			return rc;
	}
	return tensor_index(m, r->e);
}

/* ---- the two kinds -------------------------------------------------------- */

static const char *const whisper_hp[] = {
	"n_vocab", "n_audio_ctx", "n_audio_state", "n_audio_head", "n_audio_layer", "n_text_ctx",
	"n_text_state", "n_text_head", "n_text_layer", "n_mels", "ftype",
};
#define N_WHISPER_HP (sizeof whisper_hp / sizeof whisper_hp[0])

/* The mel filter bank: n_mel, n_fft, then n_mel x n_fft f32. */
static int read_mel(ggml_legacy *m, struct tern_cur *r)
{
	int32_t n_mel = 0, n_fft = 0;
	size_t at = r->off;
	int rc;
	if ((rc = rd_count(r, &n_mel, "mel filter n_mel")) || (rc = rd_count(r, &n_fft, "mel filter n_fft")))
		return rc;
	uint64_t mel_bytes = (uint64_t)n_mel * (uint64_t)n_fft * 4; /* < 2^64: both < 2^31 */
	if (mel_bytes > tern_cur_left(r))
		return tern_errf(r->e, TERN_EFORMAT,
				 "offset %zu: mel filter bank %d x %d (%llu bytes) extends past end of file (%zu bytes left)",
				 at, n_mel, n_fft, (unsigned long long)mel_bytes, tern_cur_left(r));
	m->n_mel = (uint32_t)n_mel;
	m->n_fft = (uint32_t)n_fft;
	m->mel = r->base + r->off;
	r->off += (size_t)mel_bytes;
	return 0;
}

/* The vocabulary: a count, then per token a u32 length and its bytes. */
static int read_vocab(ggml_legacy *m, struct tern_cur *r)
{
	int32_t n_vocab = 0;
	size_t at = r->off;
	int rc;
	if ((rc = rd_count(r, &n_vocab, "vocabulary size")))
		return rc;
	/* Every token takes at least its 4-byte length: this bounds the index. */
	if ((uint64_t)n_vocab > tern_cur_left(r) / 4)
		return tern_errf(r->e, TERN_EFORMAT, "offset %zu: vocabulary size %d cannot fit in the %zu bytes left",
				 at, n_vocab, tern_cur_left(r));
	if ((uint32_t)n_vocab > MAX_TOKENS)
		return tern_errf(r->e, TERN_EFORMAT, "offset %zu: vocabulary size %d (more than %u tokens)", at,
				 n_vocab, MAX_TOKENS);
	m->tok_off = malloc(((size_t)n_vocab ? (size_t)n_vocab : 1) * sizeof *m->tok_off);
	if (!m->tok_off)
		return tern_errf(r->e, TERN_ENOMEM, "out of memory for %d tokens", n_vocab);
	for (int32_t i = 0; i < n_vocab; i++) {
		struct tern_str tok;
		m->tok_off[i] = r->off;
		if ((rc = tern_cur_str32(r, &tok, "token"))) {
			tern_err_prefixf(r->e, "token %d", (int)i);
			return rc;
		}
	}
	m->n_vocab = (uint64_t)n_vocab;
	return 0;
}

static int read_whisper(ggml_legacy *m, struct tern_cur *r, tern_err *e)
{
	int rc;
	if ((rc = hp_alloc(m, N_WHISPER_HP, e)))
		return rc;
	for (size_t i = 0; i < N_WHISPER_HP; i++)
		if ((rc = hp_read(m, r, whisper_hp[i])))
			return rc;
	if ((rc = read_mel(m, r)) || (rc = read_vocab(m, r)))
		return rc;
	return read_tensors(m, r);
}

static int read_silero(ggml_legacy *m, struct tern_cur *r, tern_err *e)
{
	int rc;
	int32_t len = 0;
	size_t at = r->off;
	if ((rc = rd_count(r, &len, "model type length")))
		return rc;
	if ((uint64_t)len > tern_cur_left(r))
		return tern_errf(e, TERN_EFORMAT, "offset %zu: model type length %d past end of file (%zu bytes left)",
				 at, len, tern_cur_left(r));
	m->model_type.ptr = (const char *)r->base + r->off;
	m->model_type.len = (uint64_t)len;
	r->off += (uint64_t)len;

	/* n_encoder_layers sits after 5 ints; peek at it to size the table. */
	if (tern_cur_left(r) < 6 * 4)
		return tern_errf(e, TERN_EFORMAT, "offset %zu: Silero hyperparameters truncated (needs 24 bytes, %zu left)",
				 r->off, tern_cur_left(r));
	int32_t n_layers = (int32_t)tern_le32(r->base + r->off + 5 * 4);
	if (n_layers < 0 || n_layers > SILERO_MAX_LAYERS || (uint64_t)n_layers * 12 > tern_cur_left(r) - 6 * 4)
		return tern_errf(e, TERN_EFORMAT, "offset %zu: n_encoder_layers = %d (expected 0..%d and inside the file)",
				 r->off + 5 * 4, n_layers, SILERO_MAX_LAYERS);
	if ((rc = hp_alloc(m, 6 + 3 * (size_t)n_layers + 4, e)))
		return rc;
	static const char *const head[] = {
		"version_major", "version_minor", "version_patch", "n_window", "n_context", "n_encoder_layers",
	};
	for (size_t i = 0; i < sizeof head / sizeof head[0]; i++)
		if ((rc = hp_read(m, r, head[i])))
			return rc;
	for (int32_t i = 0; i < n_layers; i++) {
		static const char *const f[] = {"in_channels", "out_channels", "kernel_size"};
		for (int j = 0; j < 3; j++) {
			char name[HP_NAME_MAX];
			snprintf(name, sizeof name, "encoder.%d.%s", (int)i, f[j]);
			if ((rc = hp_read(m, r, name)))
				return rc;
		}
	}
	static const char *const tail[] = {"lstm_input_size", "lstm_hidden_size", "final_conv_in", "final_conv_out"};
	for (size_t i = 0; i < sizeof tail / sizeof tail[0]; i++)
		if ((rc = hp_read(m, r, tail[i])))
			return rc;
	return read_tensors(m, r);
}

/* A Silero file puts a short "silero..." string where Whisper has n_vocab. */
static bool looks_silero(const uint8_t *b, uint64_t size)
{
	if (size < 8)
		return false;
	uint32_t len = tern_le32(b + 4);
	return len >= 6 && len <= 256 && 8 + (uint64_t)len <= size && memcmp(b + 8, "silero", 6) == 0;
}

/* ---- open / close --------------------------------------------------------- */

bool ggml_legacy_probe(const void *buf, size_t size)
{
	return buf && size >= 4 && tern_le32(buf) == GGML_LEGACY_MAGIC;
}

static int parse(ggml_legacy *m, tern_err *e)
{
	struct tern_cur r = tern_cur_init(m->base, m->size, e);
	if (m->size < 4)
		return tern_errf(e, TERN_EFORMAT, "file too small for a ggml header (%llu bytes)",
				 (unsigned long long)m->size);
	if (tern_le32(m->base) != GGML_LEGACY_MAGIC) {
		char nb[32];
		if (memcmp(m->base, "ggml", 4) == 0)
			return tern_errf(e, TERN_EUNSUPPORTED,
					 "offset 0: big-endian legacy ggml file (magic 'ggml'); only little-endian files are supported");
		if (memcmp(m->base, "GGUF", 4) == 0)
			return tern_errf(e, TERN_EFORMAT,
					 "a GGUF file, not a legacy ggml one (whisper.cpp's and Silero's ggml-*.bin); a GGUF "
					 "language model runs in tern-run");
		return tern_errf(e, TERN_EFORMAT, "offset 0: bad magic '%s' (expected 'lmgg', a legacy ggml file)",
				 tern_quote(nb, sizeof nb, (const char *)m->base, 4));
	}
	r.off = 4;
	if (looks_silero(m->base, m->size)) {
		m->kind = GGML_LEGACY_SILERO;
		return read_silero(m, &r, e);
	}
	m->kind = GGML_LEGACY_WHISPER;
	return read_whisper(m, &r, e);
}

void ggml_legacy_close(ggml_legacy *m)
{
	if (!m)
		return;
	tern_unmap(&m->map);
	free(m->hp);
	free(m->tok_off);
	free(m->t);
	tern_strmap_free(&m->index);
	free(m);
}

static int finish(ggml_legacy **out, ggml_legacy *m, tern_err *e)
{
	int rc = parse(m, e);
	if (rc) {
		ggml_legacy_close(m);
		return rc;
	}
	*out = m;
	return 0;
}

int ggml_legacy_open_mem(ggml_legacy **out, const void *buf, size_t size, tern_err *e)
{
	if (!out)
		return tern_errf(e, TERN_EINVAL, "no output pointer");
	*out = NULL;
	if (!buf && size)
		return tern_errf(e, TERN_EINVAL, "NULL buffer of %zu bytes", size);
	ggml_legacy *m = calloc(1, sizeof *m);
	if (!m)
		return tern_errf(e, TERN_ENOMEM, "out of memory");
	m->base = buf;
	m->size = size;
	return finish(out, m, e);
}

int ggml_legacy_open(ggml_legacy **out, const char *path, tern_err *e)
{
	if (!out || !path)
		return tern_errf(e, TERN_EINVAL, "no path or output pointer");
	*out = NULL;
	ggml_legacy *m = calloc(1, sizeof *m);
	if (!m)
		return tern_errf(e, TERN_ENOMEM, "out of memory");
	int rc = tern_map_file(&m->map, path, e);
	if (rc) {
		free(m);
		return rc;
	}
	m->base = m->map.base;
	m->size = m->map.size;
	return finish(out, m, e);
}

/* ---- accessors ------------------------------------------------------------ */

enum ggml_legacy_kind ggml_legacy_kind(const ggml_legacy *m)
{
	return m->kind;
}

const char *ggml_legacy_kind_name(const ggml_legacy *m)
{
	return m->kind == GGML_LEGACY_SILERO ? "silero" : "whisper";
}

uint64_t ggml_legacy_file_size(const ggml_legacy *m)
{
	return m->size;
}

const uint8_t *ggml_legacy_base(const ggml_legacy *m)
{
	return m->base;
}

struct tern_str ggml_legacy_model_type(const ggml_legacy *m)
{
	if (m->kind != GGML_LEGACY_SILERO)
		return (struct tern_str){"", 0};
	return m->model_type;
}

size_t ggml_legacy_n_hparams(const ggml_legacy *m)
{
	return m->n_hp;
}

const struct ggml_legacy_hparam *ggml_legacy_hparam(const ggml_legacy *m, size_t i)
{
	return i < m->n_hp ? &m->hp[i].pub : NULL;
}

const struct ggml_legacy_hparam *ggml_legacy_find_hparam(const ggml_legacy *m, const char *name)
{
	for (size_t i = 0; i < m->n_hp; i++)
		if (strcmp(m->hp[i].name, name) == 0)
			return &m->hp[i].pub;
	return NULL;
}

int ggml_legacy_mel(const ggml_legacy *m, uint32_t *n_mel, uint32_t *n_fft, const void **data)
{
	bool w = m->kind == GGML_LEGACY_WHISPER;
	if (n_mel)
		*n_mel = w ? m->n_mel : 0;
	if (n_fft)
		*n_fft = w ? m->n_fft : 0;
	if (data)
		*data = w ? m->mel : NULL;
	return w ? 0 : TERN_ENOTFOUND;
}

uint64_t ggml_legacy_n_vocab(const ggml_legacy *m)
{
	return m->n_vocab;
}

struct tern_str ggml_legacy_token(const ggml_legacy *m, uint64_t i)
{
	if (i >= m->n_vocab)
		return (struct tern_str){NULL, 0};
	const uint8_t *p = m->base + m->tok_off[i];
	return (struct tern_str){(const char *)p + 4, tern_le32(p)};
}

uint64_t ggml_legacy_n_tensors(const ggml_legacy *m)
{
	return m->n_t;
}

const struct tern_tensor_view *ggml_legacy_tensor_at(const ggml_legacy *m, uint64_t i)
{
	return i < m->n_t ? &m->t[i] : NULL;
}

const struct tern_tensor_view *ggml_legacy_find_tensor(const ggml_legacy *m, const char *name)
{
	if (!name)
		return NULL;
	size_t i = tern_strmap_find(&m->index, name, strlen(name));
	return i != TERN_STRMAP_NONE ? &m->t[i] : NULL;
}
