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
#include "lib/core/mapfile.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "quant/quant.h"

#define HP_NAME_MAX 32
/* Sanity bounds far above real models (Silero: 4 layers, 15 tensors;
 * Whisper: 51,866 tokens, ~1,300 tensors) so that memory stays bounded
 * whatever the file size. */
#define SILERO_MAX_LAYERS 1024
#define MAX_TOKENS (1u << 24)
#define MAX_TENSORS (1u << 20)
#define NAME_SHOW_MAX 64       /* bytes of a name quoted in a message */

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
	uint64_t *hash; /* [hash_cap] tensor index + 1, 0 = empty */
	uint64_t hash_cap;
};

/* ---- cursor --------------------------------------------------------------- */

struct rd {
	const uint8_t *b;
	uint64_t size, pos;
	tern_err *e;
};

static uint32_t le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t left(const struct rd *r)
{
	return r->size - r->pos;
}

static int rd_u32(struct rd *r, const char *what, uint32_t *out)
{
	if (left(r) < 4)
		return tern_errf(r->e, TERN_EFORMAT,
				 "offset %llu: file truncated in %s (need 4 bytes, %llu left)",
				 (unsigned long long)r->pos, what, (unsigned long long)left(r));
	*out = le32(r->b + r->pos);
	r->pos += 4;
	return 0;
}

static int rd_i32(struct rd *r, const char *what, int32_t *out)
{
	uint32_t u = 0;
	int rc = rd_u32(r, what, &u);
	if (rc)
		return rc;
	*out = (int32_t)u;
	return 0;
}

/* An int32 that must be >= 0 (a count or a size). */
static int rd_count(struct rd *r, const char *what, int32_t *out)
{
	uint64_t at = r->pos;
	int rc = rd_i32(r, what, out);
	if (rc)
		return rc;
	if (*out < 0)
		return tern_errf(r->e, TERN_EFORMAT, "offset %llu: %s = %d is negative",
				 (unsigned long long)at, what, *out);
	return 0;
}

/* Quote up to NAME_SHOW_MAX bytes of a name with non-printable bytes
 * escaped, so that a message stays one readable line. */
static const char *show(char *buf, size_t cap, const uint8_t *p, uint64_t n)
{
	size_t o = 0;
	for (uint64_t i = 0; i < n && o + 5 < cap; i++) {
		if (i == NAME_SHOW_MAX) {
			o += (size_t)snprintf(buf + o, cap - o, "...");
			break;
		}
		uint8_t c = p[i];
		if (c >= 0x20 && c < 0x7f && c != '\'' && c != '\\')
			buf[o++] = (char)c;
		else
			o += (size_t)snprintf(buf + o, cap - o, "\\x%02x", c);
	}
	buf[o < cap ? o : cap - 1] = 0;
	return buf;
}

/* ---- hyperparameters ------------------------------------------------------ */

static int hp_alloc(ggml_legacy *m, size_t n, tern_err *e)
{
	m->hp = calloc(n ? n : 1, sizeof *m->hp);
	if (!m->hp)
		return tern_errf(e, TERN_ENOMEM, "out of memory for %zu hyperparameters", n);
	return 0;
}

static int hp_read(ggml_legacy *m, struct rd *r, const char *name)
{
	struct hparam *h = &m->hp[m->n_hp];
	snprintf(h->name, sizeof h->name, "%s", name);
	int32_t v = 0;
	int rc = rd_count(r, h->name, &v);
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

static uint64_t name_hash(const char *p, uint64_t n)
{
	uint64_t h = 1469598103934665603ull;
	for (uint64_t i = 0; i < n; i++)
		h = (h ^ (uint8_t)p[i]) * 1099511628211ull;
	return h;
}

static bool name_eq(struct tern_str a, struct tern_str b)
{
	return a.len == b.len && memcmp(a.ptr, b.ptr, a.len) == 0;
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
	if (!m->n_t)
		return 0;
	uint64_t cap = 16;
	while (cap < m->n_t * 2)
		cap *= 2;
	m->hash = calloc(cap, sizeof *m->hash);
	if (!m->hash)
		return tern_errf(e, TERN_ENOMEM, "out of memory for the tensor index");
	m->hash_cap = cap;
	for (uint64_t i = 0; i < m->n_t; i++) {
		const struct tern_tensor_view *t = &m->t[i];
		uint64_t h = name_hash(t->name.ptr, t->name.len) & (cap - 1);
		while (m->hash[h]) {
			const struct tern_tensor_view *o = &m->t[m->hash[h] - 1];
			if (name_eq(o->name, t->name)) {
				char nb[NAME_SHOW_MAX * 4 + 8];
				return tern_errf(e, TERN_EFORMAT,
						 "offset %llu: tensor '%s': duplicate tensor name (first at offset %llu)",
						 (unsigned long long)t->info_offset,
						 show(nb, sizeof nb, (const uint8_t *)t->name.ptr, t->name.len),
						 (unsigned long long)o->info_offset);
			}
			h = (h + 1) & (cap - 1);
		}
		m->hash[h] = i + 1;
	}
	return 0;
}

static int read_tensor(ggml_legacy *m, struct rd *r, tern_err *e)
{
	struct tern_tensor_view t = {0};
	unsigned long long at = r->pos;
	unsigned long long k = m->n_t;
	char nb[NAME_SHOW_MAX * 4 + 8];
	int32_t n_dims = 0, name_len = 0, type = 0;
	int rc;

	if (left(r) < 12)
		return tern_errf(e, TERN_EFORMAT,
				 "offset %llu: tensor #%llu: header truncated (%llu trailing bytes, need 12)",
				 at, k, (unsigned long long)left(r));
	if ((rc = rd_i32(r, "tensor n_dims", &n_dims)) || (rc = rd_i32(r, "tensor name length", &name_len)) ||
	    (rc = rd_i32(r, "tensor type", &type)))
		return rc;
	if (n_dims < 0 || n_dims > GGUF_MAX_DIMS)
		return tern_errf(e, TERN_EFORMAT, "offset %llu: tensor #%llu: n_dims = %d (expected 0..%d)",
				 at, k, n_dims, GGUF_MAX_DIMS);
	if (name_len <= 0)
		return tern_errf(e, TERN_EFORMAT, "offset %llu: tensor #%llu: name length %d (expected > 0)",
				 at, k, name_len);
	t.n_dims = (uint32_t)n_dims;
	for (int i = 0; i < GGUF_MAX_DIMS; i++)
		t.ne[i] = 1;
	for (int i = 0; i < n_dims; i++) {
		int32_t ne = 0;
		if ((rc = rd_i32(r, "tensor dimension", &ne)))
			return rc;
		if (ne <= 0)
			return tern_errf(e, TERN_EFORMAT, "offset %llu: tensor #%llu: dimension ne[%d] = %d (expected > 0)",
					 at, k, i, ne);
		t.ne[i] = (uint64_t)ne;
	}
	if ((uint64_t)name_len > left(r))
		return tern_errf(e, TERN_EFORMAT,
				 "offset %llu: tensor #%llu: name length %d past end of file (%llu bytes left)",
				 at, k, name_len, (unsigned long long)left(r));
	t.name.ptr = (const char *)r->b + r->pos;
	t.name.len = (uint64_t)name_len;
	r->pos += (uint64_t)name_len;
	show(nb, sizeof nb, (const uint8_t *)t.name.ptr, t.name.len);

	if (type < 0 || type >= QT_COUNT)
		return tern_errf(e, TERN_EUNSUPPORTED, "offset %llu: tensor '%s': unknown tensor type %d",
				 at, nb, type);
	if (!quant_type_valid((uint32_t)type))
		return tern_errf(e, TERN_EFORMAT, "offset %llu: tensor '%s': removed tensor type %d (%s)",
				 at, nb, type, quant_type_name((uint32_t)type));
	t.type = (uint32_t)type;

	const struct quant_type_info *ti = quant_type_info(t.type);
	if (t.ne[0] % ti->blck)
		return tern_errf(e, TERN_EFORMAT,
				 "offset %llu: tensor '%s': row length ne[0] = %llu is not a multiple of the %s block size %u",
				 at, nb, (unsigned long long)t.ne[0], ti->name, ti->blck);
	bool ok;
	uint64_t nbytes = quant_row_size(t.type, t.ne[0], &ok);
	for (int i = 1; ok && i < GGUF_MAX_DIMS; i++)
		ok = !__builtin_mul_overflow(nbytes, t.ne[i], &nbytes);
	if (!ok)
		return tern_errf(e, TERN_EFORMAT, "offset %llu: tensor '%s': size of shape [%llu, %llu, %llu, %llu] overflows",
				 at, nb, (unsigned long long)t.ne[0], (unsigned long long)t.ne[1],
				 (unsigned long long)t.ne[2], (unsigned long long)t.ne[3]);
	if (nbytes > left(r))
		return tern_errf(e, TERN_EFORMAT,
				 "offset %llu: tensor '%s': data of %llu bytes at offset %llu extends past end of file (size %llu)",
				 at, nb, (unsigned long long)nbytes, (unsigned long long)r->pos,
				 (unsigned long long)r->size);
	t.nbytes = nbytes;
	t.offset = r->pos;
	t.info_offset = at;
	t.data = r->b + r->pos;
	r->pos += nbytes;
	return tensor_push(m, &t, e);
}

static int read_tensors(ggml_legacy *m, struct rd *r, tern_err *e)
{
	while (left(r) > 0) {
		int rc = read_tensor(m, r, e);
		if (rc)
			return rc;
	}
	return tensor_index(m, e);
}

/* ---- the two kinds -------------------------------------------------------- */

static const char *const whisper_hp[] = {
	"n_vocab", "n_audio_ctx", "n_audio_state", "n_audio_head", "n_audio_layer", "n_text_ctx",
	"n_text_state", "n_text_head", "n_text_layer", "n_mels", "ftype",
};
#define N_WHISPER_HP (sizeof whisper_hp / sizeof whisper_hp[0])

static int read_whisper(ggml_legacy *m, struct rd *r, tern_err *e)
{
	int rc;
	if ((rc = hp_alloc(m, N_WHISPER_HP, e)))
		return rc;
	for (size_t i = 0; i < N_WHISPER_HP; i++)
		if ((rc = hp_read(m, r, whisper_hp[i])))
			return rc;

	int32_t n_mel = 0, n_fft = 0;
	uint64_t at = r->pos;
	if ((rc = rd_count(r, "mel filter n_mel", &n_mel)) || (rc = rd_count(r, "mel filter n_fft", &n_fft)))
		return rc;
	uint64_t mel_bytes = (uint64_t)n_mel * (uint64_t)n_fft * 4; /* < 2^64: both < 2^31 */
	if (mel_bytes > left(r))
		return tern_errf(e, TERN_EFORMAT,
				 "offset %llu: mel filter bank %d x %d (%llu bytes) extends past end of file (%llu bytes left)",
				 (unsigned long long)at, n_mel, n_fft, (unsigned long long)mel_bytes,
				 (unsigned long long)left(r));
	m->n_mel = (uint32_t)n_mel;
	m->n_fft = (uint32_t)n_fft;
	m->mel = r->b + r->pos;
	r->pos += mel_bytes;

	int32_t n_vocab = 0;
	at = r->pos;
	if ((rc = rd_count(r, "vocabulary size", &n_vocab)))
		return rc;
	/* Every token takes at least its 4-byte length: this bounds the index. */
	if ((uint64_t)n_vocab > left(r) / 4)
		return tern_errf(e, TERN_EFORMAT,
				 "offset %llu: vocabulary size %d cannot fit in the %llu bytes left",
				 (unsigned long long)at, n_vocab, (unsigned long long)left(r));
	if ((uint32_t)n_vocab > MAX_TOKENS)
		return tern_errf(e, TERN_EFORMAT, "offset %llu: vocabulary size %d (more than %u tokens)",
				 (unsigned long long)at, n_vocab, MAX_TOKENS);
	m->tok_off = malloc(((size_t)n_vocab ? (size_t)n_vocab : 1) * sizeof *m->tok_off);
	if (!m->tok_off)
		return tern_errf(e, TERN_ENOMEM, "out of memory for %d tokens", n_vocab);
	for (int32_t i = 0; i < n_vocab; i++) {
		uint32_t len = 0;
		at = r->pos;
		if ((rc = rd_u32(r, "token length", &len)))
			return rc;
		if (len > left(r))
			return tern_errf(e, TERN_EFORMAT,
					 "offset %llu: token %d: length %u past end of file (%llu bytes left)",
					 (unsigned long long)at, i, len, (unsigned long long)left(r));
		m->tok_off[i] = at;
		r->pos += len;
	}
	m->n_vocab = (uint64_t)n_vocab;
	return read_tensors(m, r, e);
}

static int read_silero(ggml_legacy *m, struct rd *r, tern_err *e)
{
	int rc;
	int32_t len = 0;
	uint64_t at = r->pos;
	if ((rc = rd_count(r, "model type length", &len)))
		return rc;
	if ((uint64_t)len > left(r))
		return tern_errf(e, TERN_EFORMAT, "offset %llu: model type length %d past end of file",
				 (unsigned long long)at, len);
	m->model_type.ptr = (const char *)r->b + r->pos;
	m->model_type.len = (uint64_t)len;
	r->pos += (uint64_t)len;

	/* n_encoder_layers sits after 5 ints; peek at it to size the table. */
	if (left(r) < 6 * 4)
		return tern_errf(e, TERN_EFORMAT, "offset %llu: file truncated in the Silero hyperparameters",
				 (unsigned long long)r->pos);
	int32_t n_layers = (int32_t)le32(r->b + r->pos + 5 * 4);
	if (n_layers < 0 || n_layers > SILERO_MAX_LAYERS || (uint64_t)n_layers * 12 > left(r) - 6 * 4)
		return tern_errf(e, TERN_EFORMAT, "offset %llu: n_encoder_layers = %d (expected 0..%d and inside the file)",
				 (unsigned long long)(r->pos + 5 * 4), n_layers, SILERO_MAX_LAYERS);
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
	return read_tensors(m, r, e);
}

/* A Silero file puts a short "silero..." string where Whisper has n_vocab. */
static bool looks_silero(const uint8_t *b, uint64_t size)
{
	if (size < 8)
		return false;
	uint32_t len = le32(b + 4);
	return len >= 6 && len <= 256 && 8 + (uint64_t)len <= size && memcmp(b + 8, "silero", 6) == 0;
}

/* ---- open / close --------------------------------------------------------- */

bool ggml_legacy_probe(const void *buf, size_t size)
{
	return buf && size >= 4 && le32(buf) == GGML_LEGACY_MAGIC;
}

static int parse(ggml_legacy *m, tern_err *e)
{
	struct rd r = {m->base, m->size, 0, e};
	if (m->size < 4)
		return tern_errf(e, TERN_EFORMAT, "file too small for a ggml header (%llu bytes)",
				 (unsigned long long)m->size);
	if (le32(m->base) != GGML_LEGACY_MAGIC) {
		char nb[32];
		if (memcmp(m->base, "ggml", 4) == 0)
			return tern_errf(e, TERN_EUNSUPPORTED,
					 "offset 0: big-endian legacy ggml file (magic 'ggml'); only little-endian files are supported");
		return tern_errf(e, TERN_EFORMAT, "offset 0: bad magic '%s' (expected 'lmgg', a legacy ggml file)",
				 show(nb, sizeof nb, m->base, 4));
	}
	r.pos = 4;
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
	free(m->hash);
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
	return (struct tern_str){(const char *)p + 4, le32(p)};
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
	if (!m->hash_cap || !name)
		return NULL;
	uint64_t n = strlen(name);
	uint64_t h = name_hash(name, n) & (m->hash_cap - 1);
	while (m->hash[h]) {
		const struct tern_tensor_view *t = &m->t[m->hash[h] - 1];
		if (t->name.len == n && memcmp(t->name.ptr, name, n) == 0)
			return t;
		h = (h + 1) & (m->hash_cap - 1);
	}
	return NULL;
}
