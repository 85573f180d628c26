/* whisper_full.c - the decoding loop (whisper_full.h): the facts of
 * whisper.cpp's whisper_full_with_state, whisper_process_logits and
 * whisper_sample_token*, written over our encoder and decoder.
 *
 * The points that decide the output, which we keep as whisper.cpp has
 * them so that the same model gives the same transcript:
 *   - a timestamp token "counts" (moves the window, ends a segment) only
 *     when it is above <|0.00|>;
 *   - beam search draws its candidates from the distribution (k draws with
 *     the decoder's own mt19937) rather than taking the top k, ranks them
 *     by their summed log-probability and skips a candidate equal to the
 *     previous one;
 *   - the window advances to the last timestamp, or by the whole window
 *     when the text ends with a single timestamp;
 *   - the no-speech probability is read from the first logits, before any
 *     filter. */
#include "lib/speech/whisper_full.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#define CHUNK_CS 3000	/* a window: 30 s in frames */
#define DELTA_MIN 10	/* less than 100 ms of audio is not decoded */
#define COND_TEMP_CUTOFF 0.5f /* no conditioning on past text at or above this temperature */

static const char *const lang_codes[] = {
	"en", "zh", "de", "es", "ru", "ko", "fr", "ja", "pt", "tr", "pl", "ca", "nl", "ar", "sv", "it", "id",
	"hi", "fi", "vi", "he", "uk", "el", "ms", "cs", "ro", "da", "hu", "ta", "no", "th", "ur", "hr", "bg",
	"lt", "la", "mi", "ml", "cy", "sk", "te", "fa", "lv", "bn", "sr", "az", "sl", "kn", "et", "mk", "br",
	"eu", "is", "hy", "ne", "mn", "bs", "kk", "sq", "sw", "gl", "mr", "pa", "si", "km", "sn", "yo", "so",
	"af", "oc", "ka", "be", "tg", "sd", "gu", "am", "yi", "lo", "uz", "fo", "ht", "ps", "tk", "nn", "mt",
	"sa", "lb", "my", "bo", "tl", "mg", "as", "tt", "haw", "ln", "ha", "ba", "jw", "su", "yue"};
#define N_LANG_CODES ((int)(sizeof(lang_codes) / sizeof(lang_codes[0])))
/* their names, as Whisper's tokenizer (and whisper.cpp's -l) spells them */
static const char *const lang_names[] = {
	"english", "chinese", "german", "spanish", "russian", "korean", "french", "japanese", "portuguese",
	"turkish", "polish", "catalan", "dutch", "arabic", "swedish", "italian", "indonesian", "hindi",
	"finnish", "vietnamese", "hebrew", "ukrainian", "greek", "malay", "czech", "romanian", "danish",
	"hungarian", "tamil", "norwegian", "thai", "urdu", "croatian", "bulgarian", "lithuanian", "latin",
	"maori", "malayalam", "welsh", "slovak", "telugu", "persian", "latvian", "bengali", "serbian",
	"azerbaijani", "slovenian", "kannada", "estonian", "macedonian", "breton", "basque", "icelandic",
	"armenian", "nepali", "mongolian", "bosnian", "kazakh", "albanian", "swahili", "galician", "marathi",
	"punjabi", "sinhala", "khmer", "shona", "yoruba", "somali", "afrikaans", "occitan", "georgian",
	"belarusian", "tajik", "sindhi", "gujarati", "amharic", "yiddish", "lao", "uzbek", "faroese",
	"haitian creole", "pashto", "turkmen", "nynorsk", "maltese", "sanskrit", "luxembourgish", "myanmar",
	"tibetan", "tagalog", "malagasy", "assamese", "tatar", "hawaiian", "lingala", "hausa", "bashkir",
	"javanese", "sundanese", "cantonese"};
_Static_assert(sizeof lang_names == sizeof lang_codes, "a name per code");

const char *whisper_lang_code(int i)
{
	return i >= 0 && i < N_LANG_CODES ? lang_codes[i] : NULL;
}

int whisper_lang_find(const char *code)
{
	for (int i = 0; i < N_LANG_CODES; i++)
		if (!strcmp(lang_codes[i], code) || !strcasecmp(lang_names[i], code))
			return i;
	return -1;
}

/* whisper-cli's default thread count: min(4, the CPUs online) */
static int default_threads(void)
{
	long c = sysconf(_SC_NPROCESSORS_ONLN);
	return c < 1 ? 1 : c < 4 ? (int)c : 4;
}

struct whisper_full_params whisper_full_default_params(void)
{
	return (struct whisper_full_params){
		.beam_size = 5,
		.best_of = 5,
		.temperature = 0.0f,
		.temperature_inc = 0.2f,
		.entropy_thold = 2.4f,
		.logprob_thold = -1.0f,
		.no_speech_thold = 0.6f,
		.max_initial_ts = 1.0f,
		.length_penalty = -1.0f,
		.suppress_blank = true,
		.n_max_text_ctx = 16384,
		.thold_pt = 0.01f,
		.thold_ptsum = 0.01f,
		.n_threads = default_threads(),
	};
}

int64_t whisper_n_len_org(size_t n_samples)
{
	/* whisper.cpp: 1 + (n + 200 - 400) / 160, C division */
	return 1 + ((int64_t)n_samples - 200) / 160;
}

/* ---- mt19937 and libstdc++'s discrete_distribution -------------------- */

void whisper_mt_seed(struct whisper_mt *g, uint32_t seed)
{
	g->s[0] = seed;
	for (int i = 1; i < 624; i++)
		g->s[i] = 1812433253u * (g->s[i - 1] ^ (g->s[i - 1] >> 30)) + (uint32_t)i;
	g->i = 624;
}

uint32_t whisper_mt_next(struct whisper_mt *g)
{
	if (g->i >= 624) {
		for (int k = 0; k < 624; k++) {
			uint32_t y = (g->s[k] & 0x80000000u) | (g->s[(k + 1) % 624] & 0x7fffffffu);
			g->s[k] = g->s[(k + 397) % 624] ^ (y >> 1) ^ ((y & 1u) ? 0x9908b0dfu : 0u);
		}
		g->i = 0;
	}
	uint32_t y = g->s[g->i++];
	y ^= y >> 11;
	y ^= (y << 7) & 0x9d2c5680u;
	y ^= (y << 15) & 0xefc60000u;
	y ^= y >> 18;
	return y;
}

void whisper_mt_discrete_prep(const float *w, int n, double *cum)
{
	/* weights divided by their sum, then summed up; the last set to 1 */
	double sum = 0;
	for (int i = 0; i < n; i++)
		sum += w[i];
	double acc = 0;
	for (int i = 0; i < n; i++) {
		acc += w[i] / sum;
		cum[i] = acc;
	}
	cum[n - 1] = 1.0;
}

int whisper_mt_discrete(struct whisper_mt *g, const double *cum, int n)
{
	/* generate_canonical<double, 53>: two 32-bit draws, the first low */
	double lo = whisper_mt_next(g), hi = whisper_mt_next(g);
	double u = (lo + hi * 4294967296.0) / 18446744073709551616.0;
	if (u >= 1.0)
		u = nextafter(1.0, 0.0);
	/* upper_bound: the first cum > u */
	int a = 0, b = n;
	while (a < b) {
		int mid = a + (b - a) / 2;
		if (cum[mid] > u)
			b = mid;
		else
			a = mid + 1;
	}
	return a < n ? a : n - 1;
}

/* ---- the logit filters --------------------------------------------------- */

static void log_softmax(const float *logits, int n, float *logprobs)
{
	float mx = -INFINITY;
	for (int i = 0; i < n; i++)
		mx = logits[i] > mx ? logits[i] : mx;
	float sum = 0.0f;
	for (int i = 0; i < n; i++)
		if (logits[i] > -INFINITY)
			sum += expf(logits[i] - mx);
	const float lse = logf(sum) + mx;
	for (int i = 0; i < n; i++)
		logprobs[i] = logits[i] > -INFINITY ? logits[i] - lse : -INFINITY;
}

void whisper_full_filter(const struct whisper_model *m, const struct whisper_full_params *p, int32_t blank_id,
			 const struct whisper_filter_state *st, float temperature, float *logits, float *logprobs,
			 float *probs)
{
	const struct whisper_vocab_ids *v = &m->ids;
	const int n = m->hp.n_vocab;
	const bool initial = st->n_tokens == 0;
	if (temperature > 0.0f)
		for (int i = 0; i < n; i++)
			logits[i] /= temperature;
	if (p->suppress_blank && initial) {
		logits[v->eot] = -INFINITY;
		if (blank_id >= 0)
			logits[blank_id] = -INFINITY;
	}
	logits[v->not_] = -INFINITY;
	if (p->no_timestamps)
		for (int i = v->beg; i < n; i++)
			logits[i] = -INFINITY;
	logits[v->sot] = -INFINITY;
	logits[v->nosp] = -INFINITY;
	logits[v->solm] = -INFINITY;
	logits[v->translate] = -INFINITY;
	logits[v->transcribe] = -INFINITY;
	logits[v->prev] = -INFINITY;
	for (int i = 0; i < v->n_langs; i++)
		logits[v->lang0 + i] = -INFINITY;

	/* timestamps come in pairs, except right before <|endoftext|> */
	const bool last_ts = st->n_tokens > 0 && st->tokens[st->n_tokens - 1] >= v->beg;
	const bool penult_ts = st->n_tokens < 2 || st->tokens[st->n_tokens - 2] >= v->beg;
	if (last_ts) {
		if (penult_ts)
			for (int i = v->beg; i < n; i++)
				logits[i] = -INFINITY;
		else
			for (int i = 0; i < v->eot; i++)
				logits[i] = -INFINITY;
	}
	/* the first timestamp is at most max_initial_ts */
	if (initial && p->max_initial_ts > 0.0f) {
		const float precision = 30.0f / (float)m->hp.n_audio_ctx;
		const int tid0 = (int)roundf(p->max_initial_ts / precision);
		for (int i = v->beg + tid0 + 1; i < n; i++)
			logits[i] = -INFINITY;
	}
	/* timestamps do not go back */
	if (st->has_ts)
		for (int i = v->beg; i < v->beg + st->seek_delta / 2 && i < n; i++)
			logits[i] = -INFINITY;

	log_softmax(logits, n, logprobs);

	/* when the timestamps together are likelier than any text token, a
	 * timestamp it is */
	float ts_lp = -INFINITY, ts_max = -INFINITY;
	for (int i = v->beg; i < n; i++)
		ts_max = logprobs[i] > ts_max ? logprobs[i] : ts_max;
	float lse = 0.0f;
	for (int i = v->beg; i < n; i++)
		if (logprobs[i] > -INFINITY)
			lse += expf(logprobs[i] - ts_max);
	if (lse > 0.0f)
		ts_lp = logf(lse) + ts_max;
	float text_max = -INFINITY;
	for (int i = 0; i < v->beg; i++)
		text_max = logprobs[i] > text_max ? logprobs[i] : text_max;
	if (ts_lp > text_max)
		for (int i = 0; i < v->beg; i++)
			logits[i] = logprobs[i] = -INFINITY;

	for (int i = 0; i < n; i++)
		probs[i] = logits[i] == -INFINITY ? 0.0f : expf(logprobs[i]);
}

double whisper_full_compression_ratio(const char *text, size_t len)
{
	if (len == 0)
		return 0.0;
	unsigned char buf[4096];
	z_stream z = {0};
	if (deflateInit(&z, Z_DEFAULT_COMPRESSION) != Z_OK)
		return 0.0;
	z.next_in = (unsigned char *)(uintptr_t)text;
	z.avail_in = (uInt)len;
	size_t out = 0;
	int rc;
	do {
		z.next_out = buf;
		z.avail_out = sizeof(buf);
		rc = deflate(&z, Z_FINISH);
		out += sizeof(buf) - z.avail_out;
	} while (rc == Z_OK);
	deflateEnd(&z);
	return rc == Z_STREAM_END && out > 0 ? (double)len / (double)out : 0.0;
}

double whisper_full_entropy(const int32_t *tokens, int n)
{
	const int first = n > 32 ? n - 32 : 0, cnt = n - first;
	double h = 0;
	for (int i = first; i < n; i++) {
		bool seen = false;
		for (int j = first; j < i && !seen; j++)
			seen = tokens[j] == tokens[i];
		if (seen)
			continue;
		int c = 0;
		for (int j = i; j < n; j++)
			c += tokens[j] == tokens[i];
		const double q = c / (double)cnt;
		h -= q * log(q);
	}
	return h;
}

bool whisper_full_repetitive(const struct whisper_full_params *p, int result_len, double entropy)
{
	return result_len > 32 && entropy < p->entropy_thold;
}

bool whisper_full_needs_fallback(const struct whisper_full_params *p, bool failed, double avg_logprob,
				 float no_speech_prob)
{
	return failed || (avg_logprob < p->logprob_thold && no_speech_prob < p->no_speech_thold);
}

bool whisper_full_is_no_speech(const struct whisper_full_params *p, double avg_logprob, float no_speech_prob)
{
	return no_speech_prob > p->no_speech_thold && avg_logprob < p->logprob_thold;
}

/* ---- language probabilities ------------------------------------------------ */

int whisper_full_lang_probs(const struct whisper_model *m, const float *logits, float *probs)
{
	const struct whisper_vocab_ids *v = &m->ids;
	const int nl = v->n_langs < N_LANG_CODES ? v->n_langs : N_LANG_CODES;
	int best = 0;
	float mx = -INFINITY;
	for (int i = 0; i < nl; i++)
		if (logits[v->lang0 + i] > mx)
			mx = logits[v->lang0 + i], best = i;
	/* whisper.cpp: exp in float, the sum in double */
	double sum = 0.0;
	for (int i = 0; i < nl; i++)
		sum += expf(logits[v->lang0 + i] - mx);
	for (int i = 0; probs && i < nl; i++)
		probs[i] = (float)(expf(logits[v->lang0 + i] - mx) / sum);
	return best;
}

/* ---- token-level timestamps ------------------------------------------------- */

struct tern_str whisper_token_str(const struct whisper_model *m, int32_t id, char buf[32])
{
	if (id >= 0 && (uint64_t)id < ggml_legacy_n_vocab(m->file))
		return ggml_legacy_token(m->file, (uint64_t)id);
	const struct whisper_vocab_ids *v = &m->ids;
	const char *name = NULL;
	if (id > v->beg)
		snprintf(buf, 32, "[_TT_%d]", id - v->beg);
	else if (id == v->eot)
		name = "[_EOT_]";
	else if (id == v->sot)
		name = "[_SOT_]";
	else if (id == v->translate)
		name = "[_TRANSLATE_]";
	else if (id == v->transcribe)
		name = "[_TRANSCRIBE_]";
	else if (id == v->solm)
		name = "[_SOLM_]";
	else if (id == v->prev)
		name = "[_PREV_]";
	else if (id == v->nosp)
		name = "[_NOSP_]";
	else if (id == v->not_)
		name = "[_NOT_]";
	else if (id == v->beg)
		name = "[_BEG_]";
	else if (id > v->sot && id <= v->sot + v->n_langs && whisper_lang_code(id - v->sot - 1))
		snprintf(buf, 32, "[_LANG_%s]", whisper_lang_code(id - v->sot - 1));
	else
		snprintf(buf, 32, "[_extra_token_%d]", id);
	if (name)
		snprintf(buf, 32, "%s", name);
	return (struct tern_str){buf, strlen(buf)};
}

/* a segment's text: its text tokens' bytes */
static int segment_text(const struct whisper_model *m, struct whisper_segment *s, tern_err *e)
{
	size_t len = 0;
	for (int i = 0; i < s->n_tokens; i++)
		if (s->tokens[i].id < m->ids.eot)
			len += ggml_legacy_token(m->file, (uint64_t)s->tokens[i].id).len;
	char *t = malloc(len + 1);
	if (!t)
		return tern_errf(e, TERN_ENOMEM, "out of memory for the segments");
	len = 0;
	for (int i = 0; i < s->n_tokens; i++)
		if (s->tokens[i].id < m->ids.eot) {
			struct tern_str x = ggml_legacy_token(m->file, (uint64_t)s->tokens[i].id);
			memcpy(t + len, x.ptr, x.len);
			len += x.len;
		}
	t[len] = 0;
	free(s->text);
	s->text = t;
	return 0;
}

void whisper_signal_energy(const float *pcm, size_t n_pcm, size_t n, float *e, size_t n_out)
{
	/* as whisper.cpp sums it: in float, left to right, over the 65
	 * samples around i that lie inside the signal */
	const int64_t hw = 32;
	for (size_t i = 0; i < n_out; i++) {
		float sum = 0.0f;
		for (int64_t j = -hw; j <= hw; j++) {
			const int64_t k = (int64_t)i + j;
			if (k >= 0 && k < (int64_t)n && k < (int64_t)n_pcm)
				sum += fabsf(pcm[k]);
		}
		e[i] = sum / (float)(2 * hw + 1);
	}
}

/* a cost that grows with the time a text takes to say */
static float voice_length(struct tern_str s)
{
	float r = 0.0f;
	for (size_t i = 0; i < s.len; i++) {
		const char c = s.ptr[i];
		if (c == ' ')
			r += 0.01f;
		else if (c == ',')
			r += 2.0f;
		else if (c == '.' || c == '!' || c == '?' || (c >= '0' && c <= '9'))
			r += 3.0f;
		else
			r += 1.0f;
	}
	return r;
}

static float energy_at(const struct whisper_energy *en, int64_t k)
{
	return k >= 0 && (size_t)k < en->n_have ? en->e[k] : 0.0f;
}

/* a time to a sample index counted from the segment's start, clamped to
 * the signal: whisper.cpp reads the energy so, from the signal's start
 * whatever the segment's time, and we follow it so that the times agree */
static int64_t time_to_sample(int64_t t, int64_t seg_t0, int64_t n)
{
	int64_t s = ((t - seg_t0) * 16000) / 100;
	return s < 0 ? 0 : s > n - 1 ? n - 1 : s;
}

/* where the timestamp distribution is sure of itself and moves on: the
 * token's start there, the one before's end */
static void times_confident(const struct whisper_model *m, struct whisper_segment *seg, float thold_pt,
			    float thold_ptsum, int64_t *t_beg, int64_t *t_last, int32_t *tid_last)
{
	const int32_t beg = m->ids.beg;
	struct whisper_token_data *tk = seg->tokens;
	const int n = seg->n_tokens;
	const int64_t t0 = seg->t0, t1 = seg->t1;
	for (int j = 0; j < n; j++) {
		if (j == 0) {
			if (tk[0].id == beg) {
				tk[0].t0 = tk[0].t1 = tk[1].t0 = t0;
				*t_beg = *t_last = t0;
				*tid_last = beg;
			} else {
				tk[0].t0 = *t_last;
			}
		}
		const int64_t tt = *t_beg + 2 * (int64_t)(tk[j].tid - beg);
		char nb[32];
		tk[j].vlen = voice_length(whisper_token_str(m, tk[j].id, nb));
		if (tk[j].pt > thold_pt && tk[j].ptsum > thold_ptsum && tk[j].tid > *tid_last && tt <= t1) {
			if (j > 0)
				tk[j - 1].t1 = tt;
			tk[j].t0 = tt;
			*tid_last = tk[j].tid;
		}
	}
	tk[n - 2].t1 = t1;
	tk[n - 1].t0 = tk[n - 1].t1 = t1;
	*t_last = t1;
}

/* runs of tokens without an end: their span split by voice length */
static void times_split_runs(struct whisper_token_data *tk, int n)
{
	for (int p0 = 0, p1 = 0;;) {
		while (p1 < n && tk[p1].t1 < 0)
			p1++;
		if (p1 >= n)
			p1--;
		if (p1 > p0) {
			double psum = 0.0;
			for (int j = p0; j <= p1; j++)
				psum += tk[j].vlen;
			const double dt = (double)(tk[p1].t1 - tk[p0].t0);
			for (int j = p0 + 1; j <= p1; j++) {
				const double ct = (double)tk[j - 1].t0 + dt * tk[j - 1].vlen / psum;
				tk[j - 1].t1 = (int64_t)ct;
				tk[j].t0 = (int64_t)ct;
			}
		}
		p1++;
		p0 = p1;
		if (p1 >= n)
			break;
	}
}

/* no token starts before the one before it ends */
static void times_no_overlap(struct whisper_token_data *tk, int n)
{
	for (int j = 0; j < n - 1; j++) {
		if (tk[j].t1 < 0)
			tk[j + 1].t0 = tk[j].t1;
		if (j > 0 && tk[j - 1].t1 > tk[j].t0) {
			tk[j].t0 = tk[j - 1].t1;
			tk[j].t1 = tk[j].t1 > tk[j].t0 ? tk[j].t1 : tk[j].t0;
		}
	}
}

/* text token j's edges moved to where the energy crosses half its mean
 * over the token and 1/8 s around */
static void times_energy(const struct whisper_segment *seg, int j, const struct whisper_energy *en)
{
	struct whisper_token_data *tk = seg->tokens;
	const int n = seg->n_tokens;
	const int64_t hw = 16000 / 8, ns_all = en->n;
	int64_t s0 = time_to_sample(tk[j].t0, seg->t0, ns_all);
	int64_t s1 = time_to_sample(tk[j].t1, seg->t0, ns_all);
	const int64_t ss0 = s0 - hw > 0 ? s0 - hw : 0;
	const int64_t ss1 = s1 + hw < ns_all ? s1 + hw : ns_all;
	float sum = 0.0f;
	for (int64_t k = ss0; k < ss1; k++)
		sum += energy_at(en, k);
	const float thold = ss1 > ss0 ? (float)(0.5 * sum / (double)(ss1 - ss0)) : NAN;
	int64_t k = s0;
	if (energy_at(en, k) > thold && j > 0) {
		while (k > 0 && energy_at(en, k) > thold)
			k--;
		tk[j].t0 = (100 * k) / 16000 + seg->t0;
		if (tk[j].t0 < tk[j - 1].t1)
			tk[j].t0 = tk[j - 1].t1;
		else
			s0 = k;
	} else {
		while (energy_at(en, k) < thold && k < s1)
			k++;
		s0 = k;
		tk[j].t0 = (100 * k) / 16000 + seg->t0;
	}
	k = s1;
	if (energy_at(en, k) > thold) {
		while (k < ns_all - 1 && energy_at(en, k) > thold)
			k++;
		tk[j].t1 = (100 * k) / 16000 + seg->t0;
		if (j < n - 1 && tk[j].t1 > tk[j + 1].t0)
			tk[j].t1 = tk[j + 1].t0;
	} else {
		while (energy_at(en, k) < thold && k > s0)
			k--;
		tk[j].t1 = (100 * k) / 16000 + seg->t0;
	}
}

void whisper_full_token_times(const struct whisper_model *m, struct whisper_segment *seg, float thold_pt,
			      float thold_ptsum, const struct whisper_energy *en, int64_t *t_beg, int64_t *t_last,
			      int32_t *tid_last)
{
	struct whisper_token_data *tk = seg->tokens;
	const int n = seg->n_tokens;
	if (!en || en->n == 0 || n == 0)
		return;
	if (n == 1) {
		tk[0].t0 = seg->t0;
		tk[0].t1 = seg->t1;
		return;
	}
	times_confident(m, seg, thold_pt, thold_ptsum, t_beg, t_last, tid_last);
	times_split_runs(tk, n);
	times_no_overlap(tk, n);
	for (int j = 0; j < n; j++)
		if (tk[j].id < m->ids.eot)
			times_energy(seg, j, en);
}

/* UTF-8 characters: the bytes that do not continue one */
static int utf8_chars(struct tern_str s)
{
	int c = 0;
	for (size_t i = 0; i < s.len; i++)
		c += ((unsigned char)s.ptr[i] & 0xC0) != 0x80;
	return c;
}

int whisper_full_wrap_segment(const struct whisper_model *m, struct whisper_result *r, int max_len,
			      bool split_on_word, tern_err *e)
{
	int pieces = 1;
	for (;;) {
		struct whisper_segment *s = &r->seg[r->n_seg - 1];
		int acc = 0, cut = -1;
		for (int i = 0; i < s->n_tokens && cut < 0; i++) {
			if (s->tokens[i].id >= m->ids.eot)
				continue;
			struct tern_str t = ggml_legacy_token(m->file, (uint64_t)s->tokens[i].id);
			const int cur = utf8_chars(t);
			if (acc + cur > max_len && i > 0 && (!split_on_word || (t.len > 0 && t.ptr[0] == ' ')))
				cut = i;
			else
				acc += cur;
		}
		if (cut < 0)
			break;
		/* s becomes tokens [0, cut), a new segment the rest */
		if (r->n_seg == r->cap) {
			int cap = r->cap ? 2 * r->cap : 16;
			struct whisper_segment *ns = realloc(r->seg, sizeof(*ns) * (size_t)cap);
			if (!ns)
				return tern_errf(e, TERN_ENOMEM, "out of memory for the segments");
			r->seg = ns;
			r->cap = cap;
			s = &r->seg[r->n_seg - 1];
		}
		struct whisper_segment *t = &r->seg[r->n_seg];
		*t = *s;
		const int nt = s->n_tokens - cut;
		t->tokens = malloc(sizeof(*t->tokens) * (size_t)nt);
		t->text = NULL;
		if (!t->tokens)
			return tern_errf(e, TERN_ENOMEM, "out of memory for the segments");
		memcpy(t->tokens, s->tokens + cut, sizeof(*t->tokens) * (size_t)nt);
		t->n_tokens = nt;
		t->t0 = s->tokens[cut].t0;
		s->t1 = s->tokens[cut].t0;
		s->n_tokens = cut;
		r->n_seg++;
		pieces++;
		int rc = segment_text(m, s, e);
		if (!rc)
			rc = segment_text(m, t, e);
		if (rc)
			return rc;
	}
	return pieces;
}

int64_t whisper_time_map_apply(const struct whisper_time_map *m, int64_t t)
{
	if (!m || m->n == 0)
		return t;
	const struct whisper_time_point *p = m->pt;
	if (t <= p[0].processed)
		return p[0].original;
	if (t >= p[m->n - 1].processed)
		return p[m->n - 1].original;
	/* the first point at or after t; then linear between it and the one before */
	int a = 0, b = m->n;
	while (a < b) {
		int mid = a + (b - a) / 2;
		if (p[mid].processed < t)
			a = mid + 1;
		else
			b = mid;
	}
	if (p[a].processed == t)
		return p[a].original;
	const int64_t dp = p[a].processed - p[a - 1].processed, dor = p[a].original - p[a - 1].original;
	if (dp == 0)
		return p[a - 1].original;
	return p[a - 1].original + ((t - p[a - 1].processed) * dor) / dp;
}

/* ---- the transcriber ------------------------------------------------------- */

struct dec_state {
	struct whisper_token_data *tok; /* [n_max] the sampled tokens */
	int32_t *ids;			/* [n_max] their ids */
	int n, result_len;
	double sum_all, sum_logprobs, avg_logprobs, entropy, score;
	int seek_delta;
	bool has_ts, failed, completed;
	int slot; /* the decoder sequence holding this one's cache */
	struct whisper_mt rng;
	float *logits, *logprobs, *probs; /* [n_vocab] */
};

struct cand {
	int dec;
	struct whisper_token_data t;
	double sum_all;
	int order; /* the order of drawing, for a stable sort */
};

struct whisper_full {
	const struct whisper_model *m;
	struct tern_backend *be;
	struct whisper_encoder *enc;
	struct whisper_decoder *dec;
	int n_vocab, n_max, n_text_ctx;
	int n_threads; /* whisper.cpp's, for its numerics: the last run's, else the default */
	int32_t blank_id;
	struct dec_state d[WHISPER_FULL_MAX_DECODERS];
	/* scratch */
	struct whisper_token_data *next_tok[WHISPER_FULL_MAX_DECODERS];
	int32_t *next_ids[WHISPER_FULL_MAX_DECODERS];
	struct cand *cands; /* [MAX_DECODERS^2] */
	double *cum;	    /* [n_vocab] */
	float *raw;	    /* [n_vocab] */
	int32_t *prompt, *past; /* [n_text_ctx] */
	int n_past;
	char *text;
	size_t text_cap;
	int64_t t_beg, t_last; /* the token times' state, carried from segment to segment */
	int32_t tid_last;
};

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void whisper_full_free(struct whisper_full *w)
{
	if (!w)
		return;
	for (int j = 0; j < WHISPER_FULL_MAX_DECODERS; j++) {
		free(w->d[j].tok);
		free(w->d[j].ids);
		free(w->d[j].logits);
		free(w->d[j].logprobs);
		free(w->d[j].probs);
		free(w->next_tok[j]);
		free(w->next_ids[j]);
	}
	free(w->cands);
	free(w->cum);
	free(w->raw);
	free(w->prompt);
	free(w->past);
	free(w->text);
	whisper_decoder_free(w->dec);
	whisper_encoder_free(w->enc);
	free(w);
}

int whisper_full_new(struct whisper_full **out, const struct whisper_model *m, struct tern_backend *be, tern_err *e)
{
	*out = NULL;
	struct whisper_full *w = calloc(1, sizeof(*w));
	if (!w)
		return tern_errf(e, TERN_ENOMEM, "out of memory for the transcriber");
	w->m = m;
	w->be = be;
	w->n_vocab = m->hp.n_vocab;
	w->n_text_ctx = m->hp.n_text_ctx;
	w->n_max = m->hp.n_text_ctx / 2 - 4;
	w->n_threads = default_threads();
	if (w->n_max < 1) {
		free(w);
		return tern_errf(e, TERN_EINVAL, "a text context of %d is too short", m->hp.n_text_ctx);
	}
	const size_t nv = (size_t)w->n_vocab, nm = (size_t)w->n_max;
	bool ok = true;
	for (int j = 0; j < WHISPER_FULL_MAX_DECODERS && ok; j++) {
		struct dec_state *d = &w->d[j];
		d->tok = malloc(nm * sizeof(*d->tok));
		d->ids = malloc(nm * sizeof(*d->ids));
		d->logits = malloc(nv * sizeof(float));
		d->logprobs = malloc(nv * sizeof(float));
		d->probs = malloc(nv * sizeof(float));
		w->next_tok[j] = malloc(nm * sizeof(*w->next_tok[j]));
		w->next_ids[j] = malloc(nm * sizeof(*w->next_ids[j]));
		ok = d->tok && d->ids && d->logits && d->logprobs && d->probs && w->next_tok[j] && w->next_ids[j];
	}
	w->cands = malloc(sizeof(*w->cands) * WHISPER_FULL_MAX_DECODERS * WHISPER_FULL_MAX_DECODERS);
	w->cum = malloc(nv * sizeof(double));
	w->raw = malloc(nv * sizeof(float));
	w->prompt = malloc((size_t)w->n_text_ctx * sizeof(int32_t));
	w->past = malloc((size_t)w->n_text_ctx * sizeof(int32_t));
	if (!ok || !w->cands || !w->cum || !w->raw || !w->prompt || !w->past) {
		whisper_full_free(w);
		return tern_errf(e, TERN_ENOMEM, "out of memory for the transcriber");
	}
	/* the " " token, suppressed at the start */
	w->blank_id = -1;
	for (uint64_t i = 0; i < ggml_legacy_n_vocab(m->file) && i < (uint64_t)m->ids.eot; i++) {
		struct tern_str t = ggml_legacy_token(m->file, i);
		if (t.len == 1 && t.ptr[0] == ' ') {
			w->blank_id = (int32_t)i;
			break;
		}
	}
	int rc = whisper_encoder_new(&w->enc, m, be, e);
	if (!rc)
		rc = whisper_decoder_new(&w->dec, m, be, e);
	if (rc) {
		whisper_full_free(w);
		return rc;
	}
	*out = w;
	return 0;
}

void whisper_result_free(struct whisper_result *r)
{
	for (int i = 0; i < r->n_seg; i++) {
		free(r->seg[i].text);
		free(r->seg[i].tokens);
	}
	free(r->seg);
	memset(r, 0, sizeof(*r));
}

/* ---- spectrogram sources --------------------------------------------------- */

static int mem_window(void *ctx, int64_t f0, const float **mel, size_t *stride, int64_t *first, tern_err *e)
{
	(void)f0;
	(void)e;
	const struct whisper_mel_mem *m = ctx;
	*mel = m->mel;
	*stride = m->n_len;
	*first = 0;
	return 0;
}

struct whisper_mel_src whisper_mel_src_mem(struct whisper_mel_mem *m, int64_t n_len_org)
{
	return (struct whisper_mel_src){.window = mem_window, .ctx = m, .n_len_org = n_len_org};
}

static int encode_at(struct whisper_full *w, const struct whisper_mel_src *src, int64_t f0,
		     struct whisper_full_stats *st, tern_err *e)
{
	const float *mel = NULL;
	size_t stride = 0;
	int64_t first = 0;
	int rc = src->window(src->ctx, f0, &mel, &stride, &first, e);
	if (rc)
		return rc;
	if (first > f0)
		return tern_errf(e, TERN_EINVAL, "the spectrogram source gave frames from %lld for %lld",
				 (long long)first, (long long)f0);
	double t = now_s();
	rc = whisper_encode(w->enc, mel, stride, (size_t)(f0 - first), e);
	if (!rc)
		rc = whisper_decoder_set_audio(w->dec, whisper_encoder_output(w->enc), e);
	if (st) {
		st->t_encode_s += now_s() - t;
		st->n_encode++;
	}
	return rc;
}

/* decode tokens[n] from position 0 into sequence slot, in batches */
static int decode_prompt(struct whisper_full *w, int slot, const int32_t *tokens, int n, float *logits, tern_err *e)
{
	const int nb = w->be->max_tokens > 0 ? (int)w->be->max_tokens : 1;
	for (int i = 0; i < n; i += nb) {
		int k = n - i < nb ? n - i : nb;
		whisper_decoder_set_split(w->dec, w->n_threads);
		int rc = whisper_decode_seq(w->dec, slot, tokens + i, k, i, logits, e);
		if (rc)
			return rc;
	}
	return 0;
}

int whisper_full_detect_language(struct whisper_full *w, const struct whisper_mel_src *src, int64_t f0,
				 float *probs, int *lang_id, tern_err *e)
{
	const struct whisper_vocab_ids *v = &w->m->ids;
	if (!v->multilingual)
		return tern_errf(e, TERN_EINVAL, "an English-only model cannot detect the language");
	int rc = encode_at(w, src, f0, NULL, e);
	if (!rc)
	{
		whisper_decoder_set_split(w->dec, w->n_threads);
		rc = whisper_decode_seq(w->dec, 0, &v->sot, 1, 0, w->raw, e);
	}
	if (rc)
		return rc;
	const int best = whisper_full_lang_probs(w->m, w->raw, probs);
	*lang_id = best;
	return 0;
}

/* the timestamp summary of a distribution, and the token drawn or chosen */
static struct whisper_token_data token_data(const struct whisper_full *w, const struct dec_state *d, int id)
{
	const int beg = w->m->ids.beg;
	struct whisper_token_data t = {.id = id, .tid = 0, .t0 = -1, .t1 = -1};
	double sum = 0, mx = 0;
	for (int i = beg; i < w->n_vocab; i++) {
		sum += d->probs[i];
		if (mx < d->probs[i]) {
			mx = d->probs[i];
			t.tid = i;
		}
	}
	t.pt = (float)(mx / (sum + 1e-10));
	t.ptsum = (float)sum;
	t.p = d->probs[id];
	t.plog = d->logprobs[id];
	if (id >= beg) {
		t.tid = id;
		t.pt = t.p;
	}
	return t;
}

static int argmax_prob(const float *probs, int n)
{
	int best = 0;
	float p = 0.0f;
	for (int i = 0; i < n; i++)
		if (p < probs[i]) {
			p = probs[i];
			best = i;
		}
	return best;
}

static void process(struct whisper_full *w, const struct whisper_full_params *p, struct dec_state *d, float t)
{
	const struct whisper_filter_state fs = {
		.tokens = d->ids, .n_tokens = d->n, .has_ts = d->has_ts, .seek_delta = d->seek_delta};
	whisper_full_filter(w->m, p, w->blank_id, &fs, t, d->logits, d->logprobs, d->probs);
}

static void score(const struct whisper_full_params *p, struct dec_state *d)
{
	if (d->result_len == 0)
		return;
	double sum = 0;
	for (int i = 0; i < d->result_len; i++)
		sum += d->tok[i].plog;
	d->sum_logprobs = sum;
	d->avg_logprobs = sum / d->result_len;
	double pen = d->result_len;
	if (p->length_penalty > 0.0f)
		pen = pow((5.0 + pen) / 6.0, p->length_penalty);
	d->score = sum / pen;
	d->entropy = whisper_full_entropy(d->ids, d->result_len);
}

static int text_append(struct whisper_full *w, size_t *len, struct tern_str s, tern_err *e);

/* the compression ratio of a result's text */
static double text_ratio(struct whisper_full *w, const struct dec_state *d)
{
	size_t len = 0;
	for (int i = 0; i < d->result_len; i++)
		if (d->ids[i] < w->m->ids.eot &&
		    text_append(w, &len, ggml_legacy_token(w->m->file, (uint64_t)d->ids[i]), NULL))
			return 0.0;
	return whisper_full_compression_ratio(w->text, len);
}

static int cand_cmp(const void *a, const void *b)
{
	const struct cand *x = a, *y = b;
	if (x->sum_all != y->sum_all)
		return x->sum_all > y->sum_all ? -1 : 1;
	if (x->dec != y->dec)
		return x->dec < y->dec ? -1 : 1;
	return x->order < y->order ? -1 : x->order > y->order;
}

static bool cand_equal(const struct whisper_full *w, const struct cand *a, const struct cand *b)
{
	const struct dec_state *da = &w->d[a->dec], *db = &w->d[b->dec];
	if (da->n != db->n || a->t.id != b->t.id)
		return false;
	return !memcmp(da->ids, db->ids, sizeof(int32_t) * (size_t)da->n);
}

/* beam search: give each running decoder the next best candidate, its
 * sequence and its cache (n_pos positions) */
static int beam_select(struct whisper_full *w, int n_cur, int n_cand, int i, int n_pos, tern_err *e)
{
	qsort(w->cands, (size_t)n_cand, sizeof(*w->cands), cand_cmp);
	int pick[WHISPER_FULL_MAX_DECODERS];
	int c = 0;
	for (int j = 0; j < n_cur; j++) {
		pick[j] = -1;
		if (w->d[j].completed || w->d[j].failed)
			continue;
		if (c >= n_cand)
			c = 0;
		const int cur = c++;
		while (n_cand > c && i > 0 && cand_equal(w, &w->cands[c], &w->cands[cur]))
			c++;
		pick[j] = cur;
	}
	/* the sequences, through scratch so that a source can feed several */
	for (int j = 0; j < n_cur; j++) {
		if (pick[j] < 0)
			continue;
		const struct cand *k = &w->cands[pick[j]];
		const struct dec_state *s = &w->d[k->dec];
		memcpy(w->next_tok[j], s->tok, sizeof(*s->tok) * (size_t)s->n);
		memcpy(w->next_ids[j], s->ids, sizeof(int32_t) * (size_t)s->n);
		w->next_tok[j][s->n] = k->t;
		w->next_ids[j][s->n] = k->t.id;
	}
	/* the caches: a source slot goes to its first taker, the others copy
	 * it into a slot nobody holds */
	const int n_slots = whisper_decoder_n_seq(w->dec);
	bool held[2 * WHISPER_FULL_MAX_DECODERS] = {0}, src_claimed[2 * WHISPER_FULL_MAX_DECODERS] = {0};
	int new_slot[WHISPER_FULL_MAX_DECODERS], src_slot[WHISPER_FULL_MAX_DECODERS];
	int nseq[WHISPER_FULL_MAX_DECODERS], rl[WHISPER_FULL_MAX_DECODERS], sd[WHISPER_FULL_MAX_DECODERS];
	bool hts[WHISPER_FULL_MAX_DECODERS];
	double sa[WHISPER_FULL_MAX_DECODERS];
	for (int j = 0; j < n_cur; j++) {
		new_slot[j] = w->d[j].slot;
		if (pick[j] < 0) {
			held[w->d[j].slot] = true;
			continue;
		}
		const struct cand *k = &w->cands[pick[j]];
		const struct dec_state *s = &w->d[k->dec];
		src_slot[j] = s->slot;
		nseq[j] = s->n + 1;
		rl[j] = s->result_len;
		sd[j] = s->seek_delta;
		hts[j] = s->has_ts;
		sa[j] = k->sum_all;
		new_slot[j] = -1;
	}
	for (int j = 0; j < n_cur; j++)
		if (pick[j] >= 0 && !src_claimed[src_slot[j]]) {
			src_claimed[src_slot[j]] = true;
			held[src_slot[j]] = true;
			new_slot[j] = src_slot[j];
		}
	for (int j = 0; j < n_cur; j++) {
		if (pick[j] < 0 || new_slot[j] >= 0)
			continue;
		int f = 0;
		while (f < n_slots && held[f])
			f++;
		if (f == n_slots)
			return tern_errf(e, TERN_EINVAL, "beam search ran out of decoder caches");
		held[f] = true;
		int rc = whisper_decoder_copy_seq(w->dec, src_slot[j], f, n_pos, e);
		if (rc)
			return rc;
		new_slot[j] = f;
	}
	for (int j = 0; j < n_cur; j++) {
		if (pick[j] < 0)
			continue;
		struct dec_state *d = &w->d[j];
		struct whisper_token_data *tt = d->tok;
		int32_t *ti = d->ids;
		d->tok = w->next_tok[j];
		d->ids = w->next_ids[j];
		w->next_tok[j] = tt;
		w->next_ids[j] = ti;
		d->n = nseq[j];
		d->result_len = rl[j];
		d->seek_delta = sd[j];
		d->has_ts = hts[j];
		d->sum_all = sa[j];
		d->slot = new_slot[j];
	}
	return 0;
}

static int text_append(struct whisper_full *w, size_t *len, struct tern_str s, tern_err *e)
{
	if (*len + s.len + 1 > w->text_cap) {
		size_t cap = (*len + s.len + 1) * 2;
		char *t = realloc(w->text, cap);
		if (!t)
			return tern_errf(e, TERN_ENOMEM, "out of memory for the text");
		w->text = t;
		w->text_cap = cap;
	}
	memcpy(w->text + *len, s.ptr, s.len);
	*len += s.len;
	w->text[*len] = 0;
	return 0;
}

/* what a window's decoding was, for its segments */
struct win_info {
	float nsp, avg_logprob, compression_ratio, temperature;
};

static int push_segment(struct whisper_full *w, struct whisper_result *r, int64_t t0, int64_t t1, size_t text_len,
			const struct whisper_token_data *tok, int n_tok, const struct win_info *wi, tern_err *e)
{
	if (r->n_seg == r->cap) {
		int cap = r->cap ? 2 * r->cap : 16;
		struct whisper_segment *s = realloc(r->seg, sizeof(*s) * (size_t)cap);
		if (!s)
			return tern_errf(e, TERN_ENOMEM, "out of memory for the segments");
		r->seg = s;
		r->cap = cap;
	}
	struct whisper_segment *s = &r->seg[r->n_seg];
	memset(s, 0, sizeof(*s));
	s->text = malloc(text_len + 1);
	s->tokens = malloc(sizeof(*tok) * (size_t)(n_tok > 0 ? n_tok : 1));
	if (!s->text || !s->tokens) {
		free(s->text);
		free(s->tokens);
		return tern_errf(e, TERN_ENOMEM, "out of memory for the segments");
	}
	memcpy(s->text, w->text, text_len);
	s->text[text_len] = 0;
	memcpy(s->tokens, tok, sizeof(*tok) * (size_t)n_tok);
	s->n_tokens = n_tok;
	s->t0 = t0;
	s->t1 = t1;
	s->no_speech_prob = wi->nsp;
	s->avg_logprob = wi->avg_logprob;
	s->compression_ratio = wi->compression_ratio;
	s->temperature = wi->temperature;
	r->n_seg++;
	return 0;
}

/* a segment made: its token times, its pieces (-ml), its times in the
 * original audio (--vad), the callback for each piece */
static int seg_done(struct whisper_full *w, const struct whisper_full_params *p, struct whisper_result *r,
		    whisper_segment_cb cb, void *cb_ctx, tern_err *e)
{
	int n_new = 1;
	if (p->token_timestamps) {
		whisper_full_token_times(w->m, &r->seg[r->n_seg - 1], p->thold_pt, p->thold_ptsum, p->energy, &w->t_beg,
					 &w->t_last, &w->tid_last);
		if (p->max_len > 0) {
			n_new = whisper_full_wrap_segment(w->m, r, p->max_len, p->split_on_word, e);
			if (n_new < 0)
				return n_new;
		}
	}
	for (int i = r->n_seg - n_new; i < r->n_seg; i++) {
		struct whisper_segment *s = &r->seg[i];
		if (p->time_map) {
			/* whisper.cpp: at least 10 cs long once mapped */
			s->t0 = whisper_time_map_apply(p->time_map, s->t0);
			s->t1 = whisper_time_map_apply(p->time_map, s->t1);
			if (s->t1 - s->t0 < 10)
				s->t1 = s->t0 + 10;
		}
		int rc = cb ? cb(cb_ctx, r, i, e) : 0;
		if (rc)
			return rc;
	}
	return 0;
}

/* the segments of one window's tokens */
static int emit(struct whisper_full *w, const struct whisper_full_params *p, struct whisper_result *r,
		const struct dec_state *d, int n_tok, int64_t seek, int seek_delta, const struct win_info *wi,
		whisper_segment_cb cb, void *cb_ctx, tern_err *e)
{
	const struct whisper_vocab_ids *v = &w->m->ids;
	const struct whisper_token_data *tk = d->tok;
	int i0 = 0, rc = 0;
	int64_t t0 = seek + 2 * (tk[0].tid - v->beg);
	size_t len = 0;
	if (w->text_cap == 0 && (rc = text_append(w, &len, (struct tern_str){"", 0}, e)))
		return rc;
	w->text[0] = 0;
	for (int i = 0; i < n_tok; i++) {
		if (tk[i].id < v->eot && (rc = text_append(w, &len, ggml_legacy_token(w->m->file, (uint64_t)tk[i].id), e)))
			return rc;
		if (tk[i].id > v->beg) {
			const int64_t t1 = seek + 2 * (tk[i].tid - v->beg);
			if (len > 0) {
				rc = push_segment(w, r, t0, t1, len, tk + i0, i - i0 + 1, wi, e);
				if (!rc)
					rc = seg_done(w, p, r, cb, cb_ctx, e);
				if (rc)
					return rc;
			}
			len = 0;
			t0 = t1;
			while (i + 1 < n_tok && tk[i + 1].id > v->beg) {
				i++;
				t0 = seek + 2 * (tk[i].tid - v->beg);
			}
			i0 = i + 1;
		}
	}
	if (len > 0) {
		rc = push_segment(w, r, t0, seek + seek_delta, len, tk + i0, n_tok - i0, wi, e);
		if (!rc)
			rc = seg_done(w, p, r, cb, cb_ctx, e);
	}
	return rc;
}

/* ---- the decoding loop --------------------------------------------------------- */

/* a stop asked through p->cancel, inside the loop: positive, so that it
 * never reads as a TERN_E* code */
#define STOPPED 1

/* one run's settings, fixed before its first window */
struct run {
	const struct whisper_full_params *p;
	const struct whisper_mel_src *src;
	struct whisper_result *res;
	whisper_segment_cb cb;
	void *cb_ctx;
	bool beam;
	int64_t seek_start, seek_end;
	float temps[64]; /* the fallback's temperatures, the first try's first */
	int n_temps;
	int32_t init[4]; /* <|startoftranscript|>, language, task, <|notimestamps|> */
	int n_init;
	int max_prompt_ctx; /* tokens of past text a prompt may carry */
};

/* one window's decoding: the best decoder (carried from one temperature
 * to the next when every decoder of a try fails, as whisper.cpp does),
 * the prompt of the last try, its no-speech probability and temperature */
struct window {
	int64_t seek;
	int best, n_prompt;
	float no_speech, t_used;
};

static bool stop_asked(const struct whisper_full_params *p)
{
	return p->cancel && *p->cancel;
}

/* the parameters checked, the part of the audio to decode (*nothing when
 * it is too short), the result's language, the threads */
static int run_check(struct whisper_full *w, struct run *r, bool *nothing, tern_err *e)
{
	const struct whisper_full_params *p = r->p;
	const struct whisper_vocab_ids *v = &w->m->ids;
	r->beam = p->beam_size > 1;
	int n_dec = r->beam ? (p->best_of > p->beam_size ? p->best_of : p->beam_size) : p->best_of;
	n_dec = n_dec < 1 ? 1 : n_dec;
	if (n_dec > WHISPER_FULL_MAX_DECODERS)
		return tern_errf(e, TERN_EINVAL, "%d decoders (beam size, best of): at most %d", n_dec,
				 WHISPER_FULL_MAX_DECODERS);
	if (p->temperature < 0.0f || p->temperature_inc < 0.0f || p->offset_cs < 0 || p->duration_cs < 0)
		return tern_errf(e, TERN_EINVAL, "a negative temperature, offset or duration");
	if (v->multilingual && (p->lang_id < 0 || p->lang_id >= v->n_langs))
		return tern_errf(e, TERN_EINVAL, "language %d of %d", p->lang_id, v->n_langs);
	r->res->lang_id = v->multilingual ? p->lang_id : 0;
	w->n_threads = p->n_threads > 0 ? p->n_threads : default_threads();
	r->seek_start = p->offset_cs;
	r->seek_end = p->duration_cs == 0 ? r->src->n_len_org : r->seek_start + p->duration_cs;
	*nothing = r->seek_end < r->seek_start + DELTA_MIN;
	return 0;
}

/* the temperatures, the decoders and their generators, the text to
 * condition on (the initial prompt, then each window's), the tokens every
 * prompt ends with */
static int run_prepare(struct whisper_full *w, struct run *r, tern_err *e)
{
	const struct whisper_full_params *p = r->p;
	const struct whisper_vocab_ids *v = &w->m->ids;
	r->n_temps = 0;
	if (p->temperature_inc > 0.0f)
		for (float t = p->temperature; t < 1.0f + 1e-6f && r->n_temps < 64; t += p->temperature_inc)
			r->temps[r->n_temps++] = t;
	if (r->n_temps == 0)
		r->temps[r->n_temps++] = p->temperature;

	int n_dec = r->beam ? (p->best_of > p->beam_size ? p->best_of : p->beam_size) : p->best_of;
	n_dec = n_dec < 1 ? 1 : n_dec;
	int rc = whisper_decoder_set_n_seq(w->dec, r->beam ? 2 * n_dec : n_dec, e);
	if (rc)
		return rc;
	whisper_mt_seed(&w->d[0].rng, p->seed);
	for (int j = 1; j < n_dec; j++)
		whisper_mt_seed(&w->d[j].rng, (uint32_t)j);

	r->max_prompt_ctx = p->n_max_text_ctx < w->n_text_ctx / 2 ? p->n_max_text_ctx : w->n_text_ctx / 2;
	w->n_past = 0;
	if (p->prompt && p->n_prompt > 0) {
		int k = p->n_prompt < w->n_text_ctx / 2 ? p->n_prompt : w->n_text_ctx / 2;
		memcpy(w->past, p->prompt + (p->n_prompt - k), sizeof(int32_t) * (size_t)k);
		w->n_past = k;
	}
	r->n_init = 0;
	r->init[r->n_init++] = v->sot;
	if (v->multilingual) {
		r->init[r->n_init++] = v->lang0 + p->lang_id;
		r->init[r->n_init++] = p->translate ? v->translate : v->transcribe;
	}
	if (p->no_timestamps)
		r->init[r->n_init++] = v->not_;
	w->t_beg = w->t_last = 0;
	w->tid_last = 0;
	return 0;
}

static void decoders_reset(struct whisper_full *w, int n_cur)
{
	for (int j = 0; j < n_cur; j++) {
		struct dec_state *d = &w->d[j];
		d->n = d->result_len = 0;
		d->sum_all = 0;
		d->sum_logprobs = d->avg_logprobs = d->score = -INFINITY;
		d->entropy = 0;
		d->seek_delta = 100 * 30;
		d->failed = d->completed = d->has_ts = false;
		d->slot = j;
	}
}

/* a try's prompt in w->prompt: <|startofprev|> and the tail of the past
 * text when conditioning (not at high temperatures), then the initial
 * tokens; its length */
static int prompt_make(struct whisper_full *w, const struct run *r, float t)
{
	const struct whisper_full_params *p = r->p;
	int n = 0;
	if (p->n_max_text_ctx > 0 && t < COND_TEMP_CUTOFF && r->max_prompt_ctx > 0 && w->n_past > 0) {
		w->prompt[n++] = w->m->ids.prev;
		int k = r->max_prompt_ctx - 1 < w->n_past ? r->max_prompt_ctx - 1 : w->n_past;
		memcpy(w->prompt + n, w->past + (w->n_past - k), sizeof(int32_t) * (size_t)k);
		n += k;
	}
	memcpy(w->prompt + n, r->init, sizeof(int32_t) * (size_t)r->n_init);
	return n + r->n_init;
}

/* the prompt through decoder 0, its cache copied to the others: every
 * decoder's first distribution, and the window's no-speech probability */
static int prompt_decode(struct whisper_full *w, const struct run *r, struct window *win, int n_cur, float t,
			 tern_err *e)
{
	struct whisper_full_stats *st = &r->res->stats;
	double t_dec = now_s();
	int rc = decode_prompt(w, 0, w->prompt, win->n_prompt, w->raw, e);
	if (rc)
		return rc;
	st->t_decode_s += now_s() - t_dec;
	st->n_decode++;
	float *lp = w->d[0].logprobs;
	log_softmax(w->raw, w->n_vocab, lp);
	win->no_speech = expf(lp[w->m->ids.nosp]);
	memcpy(w->d[0].logits, w->raw, sizeof(float) * (size_t)w->n_vocab);
	process(w, r->p, &w->d[0], t);
	for (int j = 1; j < n_cur; j++) {
		if ((rc = whisper_decoder_copy_seq(w->dec, 0, j, win->n_prompt, e)))
			return rc;
		memcpy(w->d[j].logits, w->d[0].logits, sizeof(float) * (size_t)w->n_vocab);
		memcpy(w->d[j].logprobs, w->d[0].logprobs, sizeof(float) * (size_t)w->n_vocab);
		memcpy(w->d[j].probs, w->d[0].probs, sizeof(float) * (size_t)w->n_vocab);
	}
	return 0;
}

static bool dec_live(const struct dec_state *d)
{
	return !d->completed && !d->failed;
}

/* decoder j's beam_size candidates, drawn from its distribution */
static void beam_draw(struct whisper_full *w, const struct whisper_full_params *p, int j, int *n_cand)
{
	struct dec_state *d = &w->d[j];
	whisper_mt_discrete_prep(d->probs, w->n_vocab, w->cum);
	for (int k = 0; k < p->beam_size; k++) {
		int id = whisper_mt_discrete(&d->rng, w->cum, w->n_vocab);
		struct cand *c = &w->cands[*n_cand];
		c->dec = j;
		c->t = token_data(w, d, id);
		c->sum_all = d->sum_all + c->t.plog;
		c->order = (*n_cand)++;
	}
}

/* a decoder's next token: the likeliest at temperature 0, else drawn */
static void dec_take(struct whisper_full *w, struct dec_state *d, float t)
{
	int id;
	if (t < 1e-6f) {
		id = argmax_prob(d->probs, w->n_vocab);
	} else {
		whisper_mt_discrete_prep(d->probs, w->n_vocab, w->cum);
		id = whisper_mt_discrete(&d->rng, w->cum, w->n_vocab);
	}
	d->tok[d->n] = token_data(w, d, id);
	d->ids[d->n] = id;
	d->n++;
	d->sum_all += d->tok[d->n - 1].plog;
}

/* step i's tokens: each live decoder's own, or the beams beam_select keeps */
static int sample_step(struct whisper_full *w, const struct run *r, int n_cur, float t, int i, int n_prompt,
		       tern_err *e)
{
	int n_cand = 0;
	for (int j = 0; j < n_cur; j++) {
		if (!dec_live(&w->d[j]))
			continue;
		if (r->beam)
			beam_draw(w, r->p, j, &n_cand);
		else
			dec_take(w, &w->d[j], t);
	}
	return r->beam ? beam_select(w, n_cur, n_cand, i, n_prompt + i, e) : 0;
}

/* a live decoder's state after its token of step i: finished, failed
 * (timestamps going back, no timestamp before the end, stuck repeating
 * itself), where its window ends */
static void dec_update(const struct whisper_full *w, const struct run *r, struct dec_state *d, int64_t seek, int i)
{
	const struct whisper_vocab_ids *v = &w->m->ids;
	const struct whisper_full_params *p = r->p;
	const int64_t seek_end = r->seek_end;
	const struct whisper_token_data *tk = &d->tok[d->n - 1];
	if (tk->id > v->beg) {
		const int sdn = 2 * (tk->id - v->beg);
		if (d->has_ts && d->seek_delta > sdn && d->result_len < i) {
			d->failed = true;
			return;
		}
		d->seek_delta = sdn;
		d->result_len = i + 1;
		d->has_ts = true;
	}
	if (tk->id == v->eot || (d->has_ts && seek + d->seek_delta + DELTA_MIN >= seek_end)) {
		if (d->result_len == 0 && !p->no_timestamps) {
			if (seek + d->seek_delta + DELTA_MIN < seek_end) {
				d->failed = true;
				return;
			}
			d->result_len = i + 1;
		}
		if (p->no_timestamps) {
			d->result_len = i + 1;
			d->seek_delta = 100 * 30;
		}
		d->completed = true;
		return;
	}
	if (i == w->n_max - 1 && (d->result_len == 0 || d->seek_delta < CHUNK_CS / 2))
		d->failed = true;
}

/* the next logits: the step's live decoders in one batch, as whisper.cpp
 * does (its numbers differ for a token alone: split) */
static int decode_step(struct whisper_full *w, const struct run *r, int n_cur, int pos, tern_err *e)
{
	int seqs[WHISPER_FULL_MAX_DECODERS], live = 0;
	int32_t toks[WHISPER_FULL_MAX_DECODERS], at[WHISPER_FULL_MAX_DECODERS];
	float *outs[WHISPER_FULL_MAX_DECODERS];
	for (int j = 0; j < n_cur; j++) {
		struct dec_state *d = &w->d[j];
		if (!dec_live(d))
			continue;
		seqs[live] = d->slot;
		toks[live] = d->ids[d->n - 1];
		at[live] = pos;
		outs[live++] = d->logits;
	}
	whisper_decoder_set_split(w->dec, live == 1 ? r->p->n_threads : 1);
	int rc = live ? whisper_decode_multi(w->dec, live, seqs, toks, at, outs, e) : 0;
	if (!rc)
		r->res->stats.n_decode += live;
	return rc;
}

/* the decoders' tokens, step by step, until each has finished or failed */
static int decode_tokens(struct whisper_full *w, const struct run *r, const struct window *win, int n_cur, float t,
			 tern_err *e)
{
	struct whisper_full_stats *st = &r->res->stats;
	for (int i = 0; i < w->n_max; i++) {
		if (stop_asked(r->p))
			return STOPPED;
		double t_s = now_s();
		int rc = sample_step(w, r, n_cur, t, i, win->n_prompt, e);
		if (rc)
			return rc;
		bool all = true;
		for (int j = 0; j < n_cur; j++) {
			if (dec_live(&w->d[j]))
				dec_update(w, r, &w->d[j], win->seek, i);
			all = all && !dec_live(&w->d[j]);
		}
		st->t_sample_s += now_s() - t_s;
		if (all)
			break;
		double t_dec = now_s();
		if ((rc = decode_step(w, r, n_cur, win->n_prompt + i, e)))
			return rc;
		st->t_decode_s += now_s() - t_dec;
		t_s = now_s();
		for (int j = 0; j < n_cur; j++)
			if (dec_live(&w->d[j]))
				process(w, r->p, &w->d[j], t);
		st->t_sample_s += now_s() - t_s;
	}
	return 0;
}

/* the try's best result into win->best (kept when every one failed);
 * results that loop (entropy, compression ratio) fail here */
static void pick_best(struct whisper_full *w, const struct run *r, struct window *win, int n_cur)
{
	const struct whisper_full_params *p = r->p;
	double best_score = -INFINITY;
	for (int j = 0; j < n_cur; j++) {
		struct dec_state *d = &w->d[j];
		if (d->failed)
			continue;
		d->n = d->result_len;
		score(p, d);
		if (whisper_full_repetitive(p, d->result_len, d->entropy) ||
		    (p->compression_ratio_thold > 0.0f && text_ratio(w, d) > p->compression_ratio_thold)) {
			d->failed = true;
			r->res->stats.n_fallback_h++;
			continue;
		}
		if (best_score < d->score) {
			best_score = d->score;
			win->best = j;
		}
	}
}

/* one try at temperature t: best_of samples above 0, else the beams or one
 * greedy decoder */
static int decode_try(struct whisper_full *w, const struct run *r, struct window *win, float t, tern_err *e)
{
	const struct whisper_full_params *p = r->p;
	int n_cur = t > 0.0f ? p->best_of : (r->beam ? p->beam_size : 1);
	n_cur = n_cur < 1 ? 1 : n_cur;
	decoders_reset(w, n_cur);
	win->n_prompt = prompt_make(w, r, t);
	int rc = prompt_decode(w, r, win, n_cur, t, e);
	if (!rc)
		rc = decode_tokens(w, r, win, n_cur, t, e);
	if (!rc)
		pick_best(w, r, win, n_cur);
	return rc;
}

/* the window decoded at rising temperatures until a result looks right
 * (or none is left) */
static int window_decode(struct whisper_full *w, const struct run *r, struct window *win, tern_err *e)
{
	const struct whisper_full_params *p = r->p;
	win->t_used = r->temps[0];
	for (int it = 0; it < r->n_temps; it++) {
		win->t_used = r->temps[it];
		int rc = decode_try(w, r, win, r->temps[it], e);
		if (rc)
			return rc;
		if (it == r->n_temps - 1)
			break;
		const struct dec_state *b = &w->d[win->best];
		if (!whisper_full_needs_fallback(p, b->failed, b->avg_logprobs, win->no_speech))
			break;
		r->res->stats.n_fallback_p++;
	}
	return 0;
}

/* the text the next window is conditioned on: this prompt's past text,
 * then (unless the window is silence) the window's tokens */
static void past_update(struct whisper_full *w, const struct run *r, const struct window *win,
			const struct dec_state *b, bool silent)
{
	int n_keep = 0;
	if (win->n_prompt > 0 && w->prompt[0] == w->m->ids.prev) {
		n_keep = win->n_prompt - 1 - r->n_init;
		memmove(w->past, w->prompt + 1, sizeof(int32_t) * (size_t)n_keep);
	}
	w->n_past = n_keep;
	if (silent)
		return;
	for (int i = 0; i < b->result_len; i++) {
		if (w->n_past == w->n_text_ctx) { /* only the tail is ever used */
			memmove(w->past, w->past + w->n_text_ctx / 2, sizeof(int32_t) * (size_t)(w->n_text_ctx / 2));
			w->n_past -= w->n_text_ctx / 2;
		}
		w->past[w->n_past++] = b->ids[i];
	}
}

/* the window's best result made segments, the text to condition on, and
 * where the next window starts (*seek) */
static int window_commit(struct whisper_full *w, const struct run *r, const struct window *win, int64_t *seek,
			 tern_err *e)
{
	const struct whisper_full_params *p = r->p;
	const struct whisper_vocab_ids *v = &w->m->ids;
	const struct dec_state *b = &w->d[win->best];
	int seek_delta = b->seek_delta;
	bool silent = whisper_full_is_no_speech(p, b->avg_logprobs, win->no_speech);
	/* with the compression-ratio check on, a window that failed at every
	 * temperature (its last result too is a loop, or stuck) is dropped
	 * rather than printed: what whisper.cpp and openai-whisper then print
	 * is the repetition loop users see on music and noise */
	if (!silent && p->compression_ratio_thold > 0.0f && b->failed) {
		silent = true;
		r->res->stats.n_dropped++;
	}
	past_update(w, r, win, b, silent);
	if (b->n > 0 && !silent) {
		const struct win_info wi = {.nsp = win->no_speech,
					    .avg_logprob = (float)b->avg_logprobs,
					    .compression_ratio = (float)text_ratio(w, b),
					    .temperature = win->t_used};
		int rc = emit(w, p, r->res, b, b->n, *seek, seek_delta, &wi, r->cb, r->cb_ctx, e);
		if (rc)
			return rc;
	}
	if (b->n > 1 && b->ids[b->n - 2] < v->beg && b->ids[b->n - 1] > v->beg)
		seek_delta = (int)(r->seek_end - *seek < CHUNK_CS ? r->seek_end - *seek : CHUNK_CS);
	*seek += seek_delta;
	return 0;
}

int whisper_full_run(struct whisper_full *w, const struct whisper_full_params *p, const struct whisper_mel_src *src,
		     struct whisper_result *res, whisper_segment_cb cb, void *cb_ctx, tern_err *e)
{
	struct run r = {.p = p, .src = src, .res = res, .cb = cb, .cb_ctx = cb_ctx};
	bool nothing = false;
	int rc = run_check(w, &r, &nothing, e);
	if (rc || nothing)
		return rc;
	if ((rc = run_prepare(w, &r, e)))
		return rc;
	int64_t seek = r.seek_start;
	while (seek + DELTA_MIN < r.seek_end && !rc) {
		if (stop_asked(p)) {
			rc = STOPPED;
			break;
		}
		struct window win = {.seek = seek};
		rc = encode_at(w, src, seek, &res->stats, e);
		/* the last few seconds are decoded without the past text */
		if (!rc && seek > r.seek_start && seek + 500 >= r.seek_end)
			w->n_past = 0;
		if (!rc)
			rc = window_decode(w, &r, &win, e);
		if (!rc)
			rc = window_commit(w, &r, &win, &seek, e);
		if (!rc && p->progress)
			p->progress(p->progress_ctx, seek < r.seek_end ? seek : r.seek_end, r.seek_end);
	}
	if (rc == STOPPED)
		res->cancelled = true;
	return rc == STOPPED ? 0 : rc;
}
