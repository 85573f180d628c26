/* audio.c - audio input: libsndfile decodes, the channels are averaged,
 * libsamplerate converts the rate, all in fixed-size blocks.
 *
 * A source is a regular file (libsndfile reads it through its descriptor),
 * bytes in memory (libsndfile's virtual I/O: the fuzz entry and small
 * pipes), or a pipe. libsndfile seeks while it reads a header (and Ogg
 * seeks to the end for the length), which a pipe cannot do, so a pipe is
 * first read whole: into memory while it holds at most SPOOL_MEM_MAX bytes,
 * into an unlinked temporary file beyond that. Memory stays bounded by the
 * block sizes below whatever the length of the audio. */
#include "lib/audio/audio.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <samplerate.h>
#include <sndfile.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Interleaved samples per libsndfile read (frames = this / channels). */
#define BLOCK_SAMPLES 16384
/* A pipe of at most this many bytes is decoded from memory; a longer one
 * goes to a temporary file. */
#define SPOOL_MEM_MAX ((size_t)8 << 20)
/* Source rates accepted from a header; outside them a header is absurd
 * (and libsamplerate's ratio limit of 256 holds for every target rate). */
#define SRC_RATE_MIN 1000
#define SRC_RATE_MAX 768000
/* Decoded samples are clamped to this magnitude (a float file may hold
 * anything): far above full scale, low enough that no sum overflows. */
#define SAMPLE_LIMIT 1000.0f

/* Bytes in memory read through libsndfile's virtual I/O. */
struct membuf {
	const unsigned char *p;
	sf_count_t n, pos;
	unsigned char *owned; /* p when the buffer belongs to the source */
};

struct tern_audio {
	SNDFILE *sf;
	struct tern_audio_info info;
	struct membuf mem;
	FILE *file;  /* the file libsndfile reads by descriptor (a long pipe's
	              * temporary copy, or a dup of a regular file), or NULL */
	SRC_STATE *src; /* NULL when no rate conversion is needed */
	double ratio;
	int channels;
	size_t block_frames;
	float *in;     /* [block_frames * channels] frames as libsndfile gives them */
	float *mono;   /* [block_frames] their channel means, input to the resampler */
	size_t mono_len, mono_pos;
	float *out;    /* [out_cap] samples at the target rate, not yet handed out */
	size_t out_cap, out_len, out_pos;
	bool eof_in;   /* libsndfile has no more frames */
	bool done;     /* the resampler is flushed too */
};

/* ---- virtual I/O over memory --------------------------------------------- */

static sf_count_t vio_len(void *u)
{
	return ((struct membuf *)u)->n;
}

static sf_count_t vio_seek(sf_count_t off, int whence, void *u)
{
	struct membuf *m = u;
	sf_count_t base = whence == SEEK_SET ? 0 : whence == SEEK_CUR ? m->pos : m->n;
	/* no overflow: off and base are both far from the limits, or refused */
	if ((off > 0 && base > INT64_MAX - off) || base + off < 0)
		return -1;
	m->pos = base + off;
	return m->pos;
}

static sf_count_t vio_read(void *dst, sf_count_t count, void *u)
{
	struct membuf *m = u;
	if (count <= 0 || m->pos >= m->n)
		return 0;
	sf_count_t k = m->n - m->pos < count ? m->n - m->pos : count;
	memcpy(dst, m->p + m->pos, (size_t)k);
	m->pos += k;
	return k;
}

static sf_count_t vio_write(const void *src, sf_count_t count, void *u)
{
	(void)src, (void)count, (void)u;
	return 0;
}

static sf_count_t vio_tell(void *u)
{
	return ((struct membuf *)u)->pos;
}

static SF_VIRTUAL_IO vio = {vio_len, vio_seek, vio_read, vio_write, vio_tell};

/* ---- the format's name ----------------------------------------------------- */

static const char *major_name(int major)
{
	switch (major) {
	case SF_FORMAT_WAV: case SF_FORMAT_WAVEX: case SF_FORMAT_RF64: case SF_FORMAT_W64: return "WAV";
	case SF_FORMAT_AIFF: return "AIFF";
	case SF_FORMAT_AU: return "AU";
	case SF_FORMAT_FLAC: return "FLAC";
	case SF_FORMAT_OGG: return "Ogg";
	case SF_FORMAT_MPEG: return "MPEG";
	case SF_FORMAT_CAF: return "CAF";
	default: return NULL;
	}
}

static const char *sub_name(int sub)
{
	switch (sub) {
	case SF_FORMAT_PCM_S8: return "PCM 8-bit";
	case SF_FORMAT_PCM_U8: return "PCM 8-bit unsigned";
	case SF_FORMAT_PCM_16: return "PCM 16-bit";
	case SF_FORMAT_PCM_24: return "PCM 24-bit";
	case SF_FORMAT_PCM_32: return "PCM 32-bit";
	case SF_FORMAT_FLOAT: return "float 32-bit";
	case SF_FORMAT_DOUBLE: return "float 64-bit";
	case SF_FORMAT_ULAW: return "u-law";
	case SF_FORMAT_ALAW: return "A-law";
	case SF_FORMAT_VORBIS: return "Vorbis";
	case SF_FORMAT_OPUS: return "Opus";
	case SF_FORMAT_MPEG_LAYER_I: return "layer I";
	case SF_FORMAT_MPEG_LAYER_II: return "layer II";
	case SF_FORMAT_MPEG_LAYER_III: return "layer III";
	default: return NULL;
	}
}

/* libsndfile's own name of a major or sub format, up to its first space. */
static void sf_name(int format, char *buf, size_t cap)
{
	SF_FORMAT_INFO fi = {.format = format};
	if (sf_command(NULL, SFC_GET_FORMAT_INFO, &fi, sizeof fi) != 0 || !fi.name) {
		snprintf(buf, cap, "0x%x", (unsigned)format);
		return;
	}
	snprintf(buf, cap, "%.*s", (int)strcspn(fi.name, " "), fi.name);
}

static void format_name(int format, char *buf, size_t cap)
{
	char mb[32], sb[32];
	const char *m = major_name(format & SF_FORMAT_TYPEMASK), *s = sub_name(format & SF_FORMAT_SUBMASK);
	if (!m)
		sf_name(format & SF_FORMAT_TYPEMASK, mb, sizeof mb), m = mb;
	if (!s)
		sf_name(format & SF_FORMAT_SUBMASK, sb, sizeof sb), s = sb;
	snprintf(buf, cap, "%.24s (%.24s)", m, s);
}

/* ---- opening ----------------------------------------------------------------- */

void tern_audio_close(struct tern_audio *a)
{
	if (!a)
		return;
	if (a->sf)
		sf_close(a->sf);
	if (a->file)
		fclose(a->file);
	if (a->src)
		src_delete(a->src);
	free(a->mem.owned);
	free(a->in);
	if (a->out != a->mono)
		free(a->out);
	free(a->mono);
	free(a);
}

/* The common part once libsndfile has opened the source (a->sf, sfi). */
static int setup(struct tern_audio *a, const SF_INFO *sfi, int rate, tern_err *e)
{
	if (sfi->channels < 1)
		return tern_errf(e, TERN_EFORMAT, "the header gives %d channels", sfi->channels);
	if (sfi->samplerate < SRC_RATE_MIN || sfi->samplerate > SRC_RATE_MAX)
		return tern_errf(e, TERN_EFORMAT, "the header's sample rate of %d Hz is out of range (%d..%d)",
				 sfi->samplerate, SRC_RATE_MIN, SRC_RATE_MAX);
	/* libsndfile allows at most 1024 channels; a block still holds a few frames */
	a->channels = sfi->channels;
	a->block_frames = BLOCK_SAMPLES / (size_t)sfi->channels;
	if (a->block_frames < 16)
		a->block_frames = 16;
	a->info.src_rate = sfi->samplerate;
	a->info.src_channels = sfi->channels;
	a->info.src_frames = sfi->frames < 0 || sfi->frames == SF_COUNT_MAX ? -1 : (int64_t)sfi->frames;
	a->info.rate = rate;
	format_name(sfi->format, a->info.format, sizeof a->info.format);

	a->in = malloc(a->block_frames * (size_t)a->channels * sizeof *a->in);
	a->mono = malloc(a->block_frames * sizeof *a->mono);
	if (!a->in || !a->mono)
		return tern_errf(e, TERN_ENOMEM, "out of memory for the audio blocks");
	if (sfi->samplerate == rate) {
		a->out = a->mono; /* no conversion: the mono block is handed out as it is */
		return 0;
	}
	a->ratio = (double)rate / sfi->samplerate;
	if (!src_is_valid_ratio(a->ratio))
		return tern_errf(e, TERN_EFORMAT, "cannot convert %d Hz to %d Hz", sfi->samplerate, rate);
	int err = 0;
	a->src = src_new(SRC_SINC_BEST_QUALITY, 1, &err);
	if (!a->src)
		return tern_errf(e, TERN_ENOMEM, "cannot start the resampler: %s", src_strerror(err));
	a->out_cap = (size_t)ceil(a->block_frames * a->ratio) + 64;
	a->out = malloc(a->out_cap * sizeof *a->out);
	if (!a->out)
		return tern_errf(e, TERN_ENOMEM, "out of memory for the audio blocks");
	return 0;
}

static int check_rate(int rate, tern_err *e)
{
	if (rate < 1000 || rate > 384000)
		return tern_errf(e, TERN_EINVAL, "sample rate %d Hz out of range (1000..384000)", rate);
	return 0;
}

/* libsndfile's message after a failed open, as our error. */
static int open_failed(tern_err *e)
{
	return tern_errf(e, TERN_EFORMAT, "not audio that libsndfile can read (%s)", sf_strerror(NULL));
}

static int open_mem_owned(struct tern_audio **out, unsigned char *owned, const void *data, size_t size,
			  int rate, tern_err *e)
{
	*out = NULL;
	int rc = check_rate(rate, e);
	struct tern_audio *a = rc ? NULL : calloc(1, sizeof *a);
	if (!a) {
		free(owned);
		return rc ? rc : tern_errf(e, TERN_ENOMEM, "out of memory");
	}
	a->mem = (struct membuf){.p = data, .n = (sf_count_t)size, .owned = owned};
	if (size == 0) {
		tern_audio_close(a);
		return tern_errf(e, TERN_EFORMAT, "empty file");
	}
	SF_INFO sfi = {0};
	a->sf = sf_open_virtual(&vio, SFM_READ, &sfi, &a->mem);
	if (!a->sf)
		rc = open_failed(e);
	else
		rc = setup(a, &sfi, rate, e);
	if (rc) {
		tern_audio_close(a);
		return rc;
	}
	*out = a;
	return 0;
}

int tern_audio_open_mem(struct tern_audio **out, const void *data, size_t size, int rate, tern_err *e)
{
	return open_mem_owned(out, NULL, data, size, rate, e);
}

/* Read everything fd gives (a pipe): into memory up to SPOOL_MEM_MAX, then
 * into a temporary file. On success either *mem and *n or *spool_out is set. */
static int spool(int fd, unsigned char **mem, size_t *n, FILE **spool_out, tern_err *e)
{
	*mem = NULL, *n = 0, *spool_out = NULL;
	size_t cap = 65536, len = 0;
	unsigned char *buf = malloc(cap);
	if (!buf)
		return tern_errf(e, TERN_ENOMEM, "out of memory");
	FILE *tmp = NULL;
	for (;;) {
		if (!tmp && len == cap) {
			if (cap >= SPOOL_MEM_MAX) {
				/* too long for memory: what was read, and the rest, go to a file */
				tmp = tmpfile();
				if (!tmp || fwrite(buf, 1, len, tmp) != len) {
					int err = errno;
					free(buf);
					if (tmp)
						fclose(tmp);
					return tern_errf(e, TERN_EIO, "cannot write a temporary file for the input: %s",
							 strerror(err));
				}
				len = 0;
			} else {
				unsigned char *p = realloc(buf, cap * 2);
				if (!p) {
					free(buf);
					return tern_errf(e, TERN_ENOMEM, "out of memory");
				}
				buf = p, cap *= 2;
			}
		}
		ssize_t r = read(fd, buf + len, cap - len);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			int err = errno;
			free(buf);
			if (tmp)
				fclose(tmp);
			return tern_errf(e, TERN_EIO, "cannot read: %s", strerror(err));
		}
		if (r == 0)
			break;
		len += (size_t)r;
		if (tmp && len == cap) {
			if (fwrite(buf, 1, len, tmp) != len) {
				int err = errno;
				free(buf);
				fclose(tmp);
				return tern_errf(e, TERN_EIO, "cannot write a temporary file for the input: %s", strerror(err));
			}
			len = 0;
		}
	}
	if (!tmp) {
		*mem = buf, *n = len;
		return 0;
	}
	bool ok = fwrite(buf, 1, len, tmp) == len && fflush(tmp) == 0 && fseek(tmp, 0, SEEK_SET) == 0;
	int err = errno;
	free(buf);
	if (!ok) {
		fclose(tmp);
		return tern_errf(e, TERN_EIO, "cannot write a temporary file for the input: %s", strerror(err));
	}
	*spool_out = tmp;
	return 0;
}

/* A seekable file (a regular file, or a pipe's temporary copy) through
 * libsndfile, which reads its descriptor; f is closed with the source. */
static int open_seekable(struct tern_audio **out, FILE *f, int rate, tern_err *e)
{
	struct tern_audio *a = calloc(1, sizeof *a);
	if (!a) {
		fclose(f);
		return tern_errf(e, TERN_ENOMEM, "out of memory");
	}
	a->file = f;
	int fd = fileno(f);
	SF_INFO sfi = {0};
	a->sf = sf_open_fd(fd, SFM_READ, &sfi, SF_FALSE);
	int rc = a->sf ? setup(a, &sfi, rate, e) : open_failed(e);
	if (rc) {
		tern_audio_close(a);
		return rc;
	}
	*out = a;
	return 0;
}

int tern_audio_open_fd(struct tern_audio **out, int fd, int rate, tern_err *e)
{
	*out = NULL;
	int rc = check_rate(rate, e);
	if (rc)
		return rc;
	struct stat st;
	if (fstat(fd, &st) != 0)
		return tern_errf(e, TERN_EIO, "cannot open: %s", strerror(errno));
	if (S_ISDIR(st.st_mode))
		return tern_errf(e, TERN_EIO, "cannot read: is a directory");
	if (S_ISREG(st.st_mode) && lseek(fd, 0, SEEK_CUR) >= 0) {
		if (st.st_size == 0)
			return tern_errf(e, TERN_EFORMAT, "empty file");
		/* libsndfile closes what it opens: it gets its own descriptor */
		int fd2 = dup(fd);
		if (fd2 < 0)
			return tern_errf(e, TERN_EIO, "cannot open: %s", strerror(errno));
		FILE *f = fdopen(fd2, "rb");
		if (!f) {
			int err = errno;
			close(fd2);
			return tern_errf(e, TERN_EIO, "cannot open: %s", strerror(err));
		}
		return open_seekable(out, f, rate, e);
	}
	unsigned char *mem;
	size_t n;
	FILE *tmp;
	rc = spool(fd, &mem, &n, &tmp, e);
	if (rc)
		return rc;
	if (tmp)
		return open_seekable(out, tmp, rate, e);
	return open_mem_owned(out, mem, mem, n, rate, e);
}

int tern_audio_open(struct tern_audio **out, const char *path, int rate, tern_err *e)
{
	*out = NULL;
	if (strcmp(path, "-") == 0)
		return tern_audio_open_fd(out, 0, rate, e);
	int rc = check_rate(rate, e);
	if (rc)
		return rc;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return tern_errf(e, TERN_EIO, "cannot open: %s", strerror(errno));
	rc = tern_audio_open_fd(out, fd, rate, e);
	close(fd);
	return rc;
}

const struct tern_audio_info *tern_audio_info(const struct tern_audio *a)
{
	return &a->info;
}

/* ---- reading ----------------------------------------------------------------- */

/* NaN to 0, and clamped: a float file may hold anything, and the
 * resampler's ringing may carry a clamped sample a little further. */
static float tame(float v)
{
	if (!(v == v))
		return 0;
	return v > SAMPLE_LIMIT ? SAMPLE_LIMIT : v < -SAMPLE_LIMIT ? -SAMPLE_LIMIT : v;
}

/* The next block of frames from libsndfile as channel means in a->mono. */
static int read_block(struct tern_audio *a, tern_err *e)
{
	sf_count_t got = sf_readf_float(a->sf, a->in, (sf_count_t)a->block_frames);
	if (got < (sf_count_t)a->block_frames) {
		int err = sf_error(a->sf);
		if (err != SF_ERR_NO_ERROR)
			return tern_errf(e, TERN_EFORMAT, "cannot decode: %s", sf_error_number(err));
		a->eof_in = true;
	}
	if (got < 0)
		got = 0;
	const int c = a->channels;
	for (sf_count_t i = 0; i < got; i++) {
		double s = 0;
		for (int k = 0; k < c; k++)
			s += a->in[i * c + k];
		a->mono[i] = tame((float)(s / c));
	}
	a->mono_len = (size_t)got;
	a->mono_pos = 0;
	return 0;
}

/* Refill a->out with the next samples at the target rate. */
static int refill(struct tern_audio *a, tern_err *e)
{
	a->out_len = a->out_pos = 0;
	if (!a->src) {
		if (a->eof_in) {
			a->done = true;
			return 0;
		}
		int rc = read_block(a, e);
		if (rc)
			return rc;
		a->out_len = a->mono_len; /* a->out is a->mono */
		if (a->mono_len == 0)
			a->done = true;
		return 0;
	}
	while (a->out_len == 0 && !a->done) {
		if (a->mono_pos == a->mono_len && !a->eof_in) {
			int rc = read_block(a, e);
			if (rc)
				return rc;
		}
		SRC_DATA d = {
			.data_in = a->mono + a->mono_pos,
			.input_frames = (long)(a->mono_len - a->mono_pos),
			.data_out = a->out,
			.output_frames = (long)a->out_cap,
			.end_of_input = a->eof_in,
			.src_ratio = a->ratio,
		};
		int err = src_process(a->src, &d);
		if (err)
			return tern_errf(e, TERN_EFORMAT, "cannot resample: %s", src_strerror(err));
		a->mono_pos += (size_t)d.input_frames_used;
		a->out_len = (size_t)d.output_frames_gen;
		for (size_t i = 0; i < a->out_len; i++)
			a->out[i] = tame(a->out[i]);
		/* flushed: all input given with end_of_input and nothing more comes out */
		if (a->eof_in && a->mono_pos == a->mono_len && d.output_frames_gen == 0)
			a->done = true;
	}
	return 0;
}

int tern_audio_read(struct tern_audio *a, float *dst, size_t n, size_t *got, tern_err *e)
{
	*got = 0;
	while (*got < n) {
		if (a->out_pos == a->out_len) {
			if (a->done)
				break;
			int rc = refill(a, e);
			if (rc)
				return rc;
			continue;
		}
		size_t k = a->out_len - a->out_pos;
		if (k > n - *got)
			k = n - *got;
		memcpy(dst + *got, a->out + a->out_pos, k * sizeof *dst);
		a->out_pos += k;
		*got += k;
	}
	return 0;
}

/* ---- whole files -------------------------------------------------------------- */

int tern_audio_load(const char *path, int rate, size_t max_samples, float **out, size_t *n, tern_err *e)
{
	*out = NULL, *n = 0;
	struct tern_audio *a;
	int rc = tern_audio_open(&a, path, rate, e);
	if (rc)
		return rc;
	size_t len = 0, cap = 0;
	float *buf = NULL;
	for (;;) {
		if (cap - len < 4096) {
			size_t ncap = cap ? cap * 2 : 65536;
			float *p = ncap > SIZE_MAX / sizeof *p ? NULL : realloc(buf, ncap * sizeof *p);
			if (!p) {
				rc = tern_errf(e, TERN_ENOMEM, "out of memory for %zu samples", ncap);
				break;
			}
			buf = p, cap = ncap;
		}
		size_t got;
		rc = tern_audio_read(a, buf + len, cap - len, &got, e);
		if (rc)
			break;
		if (got == 0)
			break;
		len += got;
		if (max_samples && len > max_samples) {
			rc = tern_errf(e, TERN_ERANGE, "longer than %zu samples at %d Hz", max_samples, rate);
			break;
		}
	}
	tern_audio_close(a);
	if (rc) {
		free(buf);
		return rc;
	}
	*out = buf, *n = len;
	return 0;
}
