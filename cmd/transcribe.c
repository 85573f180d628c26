/* transcribe.c - tern-transcribe: speech to text with a Whisper model
 * (whisper.cpp's ggml files), with whisper-cli's options and outputs.
 *
 * The model is loaded once; each FILE is read in blocks (lib/audio: any
 * format libsndfile reads, converted to 16 kHz mono) into a log-mel
 * spectrogram spooled to a temporary file (lib/speech/mel_spool.h), then
 * transcribed window by window (lib/speech/whisper_full.h): memory does
 * not grow with the length of the audio. Segments are printed as they come, as
 * whisper-cli prints them; -otxt/-osrt/-ovtt/-ocsv/-oj write files
 * beside, --json prints one document with every token. A file that fails
 * is reported on stderr and the others still run. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cmd/common/cli.h"
#include "lib/audio/audio.h"
#include "lib/cpu/backend.h"
#include "lib/speech/mel.h"
#include "lib/speech/mel_spool.h"
#include "lib/speech/whisper.h"
#include "lib/speech/whisper_full.h"

/* ---- options ----------------------------------------------------------- */

static const char *o_model, *o_lang = "en", *o_prompt;
static struct cli_list o_files, o_of;
static bool o_nt, o_otxt, o_osrt, o_ovtt, o_ocsv, o_oj, o_json, o_tr, o_nf, o_threads_seen;
static int64_t o_threads = 4, o_bs = 5, o_bo = 5, o_mc = -1, o_ot = 0, o_d = 0;
static double o_tp = 0.0, o_tpi = 0.2, o_et = 2.4, o_lpt = -1.0, o_nth = 0.6, o_crt = 0.0;
static struct cli_common common;

static const struct cli_opt opts[] = {
	{.lng = "model", .shrt = 'm', .kind = CLI_FILE, .dst = &o_model, .arg = "FILE", .ext = "bin",
	 .help = "the Whisper model, a whisper.cpp ggml file (default: $TERN_WHISPER_MODEL)"},
	{.lng = "file", .shrt = 'f', .kind = CLI_LIST, .dst = &o_files, .arg = "FILE",
	 .help = "an input file, as whisper-cli spells it (repeatable; these come before the FILE arguments)"},
	{.lng = "threads", .shrt = 't', .kind = CLI_INT, .dst = &o_threads, .arg = "N", .min = 1, .max = 256,
	 .seen = &o_threads_seen, .help = "threads (default: 4, or fewer when fewer CPUs are available)"},
	{.lng = "language", .shrt = 'l', .kind = CLI_STR, .dst = &o_lang, .arg = "LANG",
	 .help = "spoken language, a code (en, de, fr, ...) or auto to detect it (multilingual models; default en)"},
	{.lng = "translate", .alias = "tr", .kind = CLI_FLAG, .dst = &o_tr,
	 .help = "translate into English (multilingual models)"},
	{.lng = "no-timestamps", .alias = "nt", .kind = CLI_FLAG, .dst = &o_nt,
	 .help = "print the text only, decoded without timestamps"},
	{.lng = "beam-size", .alias = "bs", .kind = CLI_INT, .dst = &o_bs, .arg = "N", .min = 1, .max = 8,
	 .help = "beam width at temperature 0; 1 decodes greedily (default: 5)"},
	{.lng = "best-of", .alias = "bo", .kind = CLI_INT, .dst = &o_bo, .arg = "N", .min = 1, .max = 8,
	 .help = "candidates sampled at each temperature above 0 (default: 5)"},
	{.lng = "temperature", .alias = "tp", .kind = CLI_FLOAT, .dst = &o_tp, .arg = "T",
	 .help = "the first sampling temperature (default: 0)"},
	{.lng = "temperature-inc", .alias = "tpi", .kind = CLI_FLOAT, .dst = &o_tpi, .arg = "T",
	 .help = "the temperature step of the fallback, up to 1.0 (default: 0.2)"},
	{.lng = "no-fallback", .alias = "nf", .kind = CLI_FLAG, .dst = &o_nf, .excludes = "temperature-inc",
	 .help = "no temperature fallback"},
	{.lng = "entropy-thold", .alias = "et", .kind = CLI_FLOAT, .dst = &o_et, .arg = "X",
	 .help = "a result of more than 32 tokens whose last 32 have less entropy is retried hotter (default: 2.4)"},
	{.lng = "logprob-thold", .alias = "lpt", .kind = CLI_FLOAT, .dst = &o_lpt, .arg = "X",
	 .help = "a result with a lower average log-probability is retried hotter (default: -1.0)"},
	{.lng = "compression-ratio-thold", .alias = "crt", .kind = CLI_FLOAT, .dst = &o_crt, .arg = "X",
	 .help = "a result whose text zlib compresses more than X times is retried hotter, as openai-whisper does "
		 "(2.4 there; default: 0, off, as whisper-cli)"},
	{.lng = "no-speech-thold", .alias = "nth", .kind = CLI_FLOAT, .dst = &o_nth, .arg = "P",
	 .help = "no-speech probability above which a poor window counts as silence (default: 0.6)"},
	{.lng = "prompt", .kind = CLI_STR, .dst = &o_prompt, .arg = "TEXT",
	 .help = "initial prompt: text the first window is conditioned on (names, spelling, style)"},
	{.lng = "max-context", .alias = "mc", .kind = CLI_INT, .dst = &o_mc, .arg = "N", .min = -1, .max = 16384,
	 .help = "tokens of the previous text to condition on; -1: as many as fit (224 on every model)"},
	{.lng = "offset-t", .alias = "ot", .kind = CLI_INT, .dst = &o_ot, .arg = "MS", .min = 0, .max = INT32_MAX,
	 .help = "start this many milliseconds into the audio (default: 0)"},
	{.lng = "duration", .shrt = 'd', .kind = CLI_INT, .dst = &o_d, .arg = "MS", .min = 0, .max = INT32_MAX,
	 .help = "transcribe this many milliseconds (default: 0, to the end)"},
	{.lng = "output-txt", .alias = "otxt", .kind = CLI_FLAG, .dst = &o_otxt, .help = "also write BASE.txt"},
	{.lng = "output-vtt", .alias = "ovtt", .kind = CLI_FLAG, .dst = &o_ovtt, .help = "also write BASE.vtt (WebVTT)"},
	{.lng = "output-srt", .alias = "osrt", .kind = CLI_FLAG, .dst = &o_osrt, .help = "also write BASE.srt (SubRip)"},
	{.lng = "output-csv", .alias = "ocsv", .kind = CLI_FLAG, .dst = &o_ocsv,
	 .help = "also write BASE.csv (start and end in ms, text)"},
	{.lng = "output-json", .alias = "oj", .kind = CLI_FLAG, .dst = &o_oj,
	 .help = "also write BASE.json as whisper-cli writes it"},
	{.lng = "output-file", .alias = "of", .kind = CLI_LIST, .dst = &o_of, .arg = "BASE",
	 .needs = "output-txt|output-vtt|output-srt|output-csv|output-json",
	 .help = "base name of the output files of the next FILE (default: FILE itself)"},
	{.lng = "json", .kind = CLI_FLAG, .dst = &o_json,
	 .help = "print one JSON document instead: every file's segments with their tokens and the timings"},
	{0},
};

static const struct cli_section sections[] = {
	{"OUTPUT",
	 "Standard output carries the transcript as whisper-cli prints it: for each file an empty line, then "
	 "one line per segment, its start and end (hours:minutes:seconds.milliseconds), two spaces and the "
	 "text, which starts with its own space:\n"
	 "\n"
	 "  [00:00:00.000 --> 00:00:08.000]   And so my fellow Americans ask not what your country can do for you\n"
	 "\n"
	 "With -nt the text is decoded without timestamps and printed as it comes, one file's text followed by "
	 "a newline (whisper-cli adds none). --json prints instead one document: \"model\" (path, type, "
	 "multilingual, vocab), \"params\" (language, translate, beam_size, best_of, threads), \"files\": per "
	 "file \"file\", \"language\", \"duration\" (seconds), \"segments\": [{\"t0\", \"t1\" (seconds), "
	 "\"text\", \"no_speech_prob\", \"tokens\": [{\"id\", \"text\", \"p\", \"plog\", \"t\" (the likeliest "
	 "timestamp, seconds)}]}], \"timings\" (ms: \"decode_audio\", \"mel\", \"encode\", \"decode\", "
	 "\"sample\", \"total\"), or \"error\" for a file that failed.\n"
	 "\n"
	 "-otxt, -ovtt, -osrt, -ocsv and -oj write BASE.txt (one segment text a line), BASE.vtt, BASE.srt, "
	 "BASE.csv (start,end in ms,\"text\") and BASE.json (whisper-cli's -oj document) as whisper-cli does: "
	 "BASE is the file's own name (jfk.wav gives jfk.wav.txt) unless -of BASE is given; -of may be "
	 "repeated, the first for the first FILE and so on. Standard input (-) needs an -of.\n"
	 "\n"
	 "Standard error: errors and warnings; with -v the model, each file's format and duration, the times "
	 "of loading, reading the audio, the spectrogram, the encoder and the decoder, the fallbacks, and the "
	 "real-time factor (processing time over audio duration)."},
	{"DECODING",
	 "Decoding is whisper.cpp's: each 30 s window is encoded, the text is decoded under Whisper's rules "
	 "(timestamps in pairs, increasing, the first within 1 s; a timestamp whenever the timestamps together "
	 "are likelier than any text token), the window advances to the last timestamp, and the text so far "
	 "conditions the next window (-mc). At temperature 0 the search is greedy (-bs 1) or a beam search of "
	 "-bs beams whose candidates are drawn from the distribution, as whisper.cpp draws them (mt19937, the "
	 "same seeds). A window whose result repeats itself (entropy below -et) or has an average "
	 "log-probability below -lpt (and is not silence by -nth), or with -crt whose text compresses too "
	 "well, is decoded again at the next temperature "
	 "(-tpi steps up to 1.0), with -bo samples. With -bs 1 the transcript equals whisper-cli -bs 1's; beam "
	 "search gives whisper-cli's words, with timestamps that may differ by one step (20 ms) where a random "
	 "draw falls on the other side of a probability that differs by float rounding."},
	{"INPUT",
	 "Any file libsndfile reads: WAV, FLAC, Ogg/Vorbis, Ogg/Opus, MP3, AIFF and more; channels are "
	 "averaged and other rates converted to 16 kHz. FILE - reads standard input. The audio is read in "
	 "blocks and its spectrogram kept in a temporary file ($TMPDIR, 32 kB per second of audio), so memory "
	 "does not grow with the length of the file."},
	{"EXIT STATUS",
	 "0 success; 1 runtime error (the model or a FILE cannot be opened or read, an output file cannot be "
	 "written); 2 usage error (unknown option, a value out of range, an unknown language, no model, no "
	 "FILE); 65 a FILE is not audio libsndfile can decode, or the model is not a Whisper model. With several "
	 "FILEs every file is tried and the status is the worst one met."},
	{"ENVIRONMENT", "TERN_WHISPER_MODEL: the model when -m is not given."},
	{"EXAMPLES",
	 "  tern-transcribe -m ggml-tiny.en.bin jfk.wav\n"
	 "  tern-transcribe -m ggml-base.bin -l auto -osrt -of talk talk.flac\n"
	 "  export TERN_WHISPER_MODEL=ggml-tiny.en.bin; tern-transcribe -bs 1 -nt *.wav\n"
	 "  ffmpeg -i video.mkv -f wav - | tern-transcribe -m ggml-small.bin -ovtt -of video -"},
	{NULL, NULL},
};

static const struct cli_prog prog = {
	.name = "transcribe",
	.summary = "transcribe speech with a Whisper model (whisper.cpp's ggml files)",
	.usage = "[-m MODEL] [OPTIONS] FILE...",
	.description =
		"tern-transcribe turns speech into text with OpenAI's Whisper models in whisper.cpp's ggml files "
		"(tiny to large-v3, quantized or not). Options, printed segments and output files are spelt as "
		"whisper-cli's, and the decoding follows whisper.cpp's, so the same model gives the same "
		"transcript.",
	.opts = opts,
	.pos_name = "FILE",
	.pos_ext = "wav|flac|ogg|opus|mp3|aiff|au",
	.min_pos = 0,
	.max_pos = -1,
	.sections = sections,
};

/* ---- helpers --------------------------------------------------------------- */

static double now_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

/* whisper.cpp's to_timestamp: centiseconds as HH:MM:SS.mmm (or ,mmm) */
static void fmt_ts(char *buf, size_t cap, int64_t cs, bool comma)
{
	int64_t ms = cs * 10;
	snprintf(buf, cap, "%02d:%02d:%02d%c%03d", (int)(ms / 3600000), (int)(ms / 60000 % 60), (int)(ms / 1000 % 60),
		 comma ? ',' : '.', (int)(ms % 1000));
}

struct job {
	const char *path, *base;
	int status;
	char err[TERN_ERR_MSG_MAX + 64];
	struct tern_audio_info info;
	size_t n_samples;
	struct whisper_result res;
	double t_audio, t_mel, t_total;
	bool printed_any;
};

static const struct whisper_model *model;
static const char *model_path;

static int on_segment(void *ctx, const struct whisper_result *r, int i, tern_err *e)
{
	(void)e;
	struct job *j = ctx;
	if (o_json)
		return 0;
	if (!j->printed_any)
		fputc('\n', stdout);
	j->printed_any = true;
	const struct whisper_segment *s = &r->seg[i];
	if (o_nt) {
		fputs(s->text, stdout);
	} else {
		char a[32], b[32];
		fmt_ts(a, sizeof a, s->t0, false);
		fmt_ts(b, sizeof b, s->t1, false);
		printf("[%s --> %s]  %s\n", a, b, s->text);
	}
	fflush(stdout);
	return 0;
}

/* ---- writers ----------------------------------------------------------------- */

static void write_txt(FILE *f, const struct job *j)
{
	for (int i = 0; i < j->res.n_seg; i++)
		fprintf(f, "%s\n", j->res.seg[i].text);
}

static void write_vtt(FILE *f, const struct job *j)
{
	fputs("WEBVTT\n\n", f);
	for (int i = 0; i < j->res.n_seg; i++) {
		char a[32], b[32];
		fmt_ts(a, sizeof a, j->res.seg[i].t0, false);
		fmt_ts(b, sizeof b, j->res.seg[i].t1, false);
		fprintf(f, "%s --> %s\n%s\n\n", a, b, j->res.seg[i].text);
	}
}

static void write_srt(FILE *f, const struct job *j)
{
	for (int i = 0; i < j->res.n_seg; i++) {
		char a[32], b[32];
		fmt_ts(a, sizeof a, j->res.seg[i].t0, true);
		fmt_ts(b, sizeof b, j->res.seg[i].t1, true);
		fprintf(f, "%d\n%s --> %s\n%s\n\n", i + 1, a, b, j->res.seg[i].text);
	}
}

static void write_csv(FILE *f, const struct job *j)
{
	/* whisper-cli: a backslash before each " and \ of the text */
	fputs("start,end,text\n", f);
	for (int i = 0; i < j->res.n_seg; i++) {
		const struct whisper_segment *s = &j->res.seg[i];
		fprintf(f, "%" PRId64 ",%" PRId64 ",\"", s->t0 * 10, s->t1 * 10);
		for (const char *c = s->text; *c; c++) {
			if (*c == '"' || *c == '\\')
				fputc('\\', f);
			fputc(*c, f);
		}
		fputs("\"\n", f);
	}
}

static void jstr(FILE *f, const char *s)
{
	cli_json_str(f, s, strlen(s));
}

/* whisper-cli's -oj document (without its build's system information) */
static void write_json_cli(FILE *f, const struct job *j)
{
	const struct whisper_hparams *h = &model->hp;
	const char *lang = model->ids.multilingual ? whisper_lang_code(j->res.lang_id) : "en";
	/* whisper-cli names the size without ".en" */
	const char *size = whisper_model_size_name(model);
	int size_len = (int)(strchr(size, '.') ? (size_t)(strchr(size, '.') - size) : strlen(size));
	fprintf(f, "{\n\t\"systeminfo\": \"tern %s\",\n\t\"model\": {\n\t\t\"type\": \"%.*s\",\n", TERN_VERSION,
		size_len, size);
	fprintf(f, "\t\t\"multilingual\": %s,\n\t\t\"vocab\": %d,\n", model->ids.multilingual ? "true" : "false",
		h->n_vocab);
	fprintf(f,
		"\t\t\"audio\": {\n\t\t\t\"ctx\": %d,\n\t\t\t\"state\": %d,\n\t\t\t\"head\": %d,\n\t\t\t\"layer\": "
		"%d\n\t\t},\n",
		h->n_audio_ctx, h->n_audio_state, h->n_audio_head, h->n_audio_layer);
	fprintf(f,
		"\t\t\"text\": {\n\t\t\t\"ctx\": %d,\n\t\t\t\"state\": %d,\n\t\t\t\"head\": %d,\n\t\t\t\"layer\": "
		"%d\n\t\t},\n",
		h->n_text_ctx, h->n_text_state, h->n_text_head, h->n_text_layer);
	fprintf(f, "\t\t\"mels\": %d,\n\t\t\"ftype\": %d\n\t},\n", h->n_mels, h->ftype % 1000);
	fputs("\t\"params\": {\n\t\t\"model\": ", f);
	jstr(f, model_path);
	fputs(",\n\t\t\"language\": ", f);
	jstr(f, lang);
	fprintf(f, ",\n\t\t\"translate\": %s\n\t},\n", o_tr ? "true" : "false");
	fputs("\t\"result\": {\n\t\t\"language\": ", f);
	jstr(f, lang);
	fputs("\n\t},\n\t\"transcription\": [\n", f);
	for (int i = 0; i < j->res.n_seg; i++) {
		const struct whisper_segment *s = &j->res.seg[i];
		char a[32], b[32];
		fmt_ts(a, sizeof a, s->t0, true);
		fmt_ts(b, sizeof b, s->t1, true);
		fprintf(f,
			"\t\t{\n\t\t\t\"timestamps\": {\n\t\t\t\t\"from\": \"%s\",\n\t\t\t\t\"to\": \"%s\"\n\t\t\t},\n"
			"\t\t\t\"offsets\": {\n\t\t\t\t\"from\": %" PRId64 ",\n\t\t\t\t\"to\": %" PRId64
			"\n\t\t\t},\n\t\t\t\"text\": ",
			a, b, s->t0 * 10, s->t1 * 10);
		jstr(f, s->text);
		fprintf(f, "\n\t\t}%s\n", i + 1 < j->res.n_seg ? "," : "");
	}
	fputs("\t]\n}\n", f);
}

/* one file's entry of the --json document */
static void write_json_file(FILE *f, const struct job *j)
{
	fputs("    {\"file\": ", f);
	jstr(f, j->path);
	if (j->status) {
		fputs(", \"error\": ", f);
		jstr(f, j->err);
		fputs("}", f);
		return;
	}
	fputs(", \"language\": ", f);
	jstr(f, model->ids.multilingual ? whisper_lang_code(j->res.lang_id) : "en");
	fputs(", \"format\": ", f);
	jstr(f, j->info.format);
	fprintf(f, ", \"duration\": %.3f,\n     \"segments\": [", (double)j->n_samples / TERN_MEL_RATE);
	for (int i = 0; i < j->res.n_seg; i++) {
		const struct whisper_segment *s = &j->res.seg[i];
		fprintf(f, "%s\n      {\"t0\": %.2f, \"t1\": %.2f, \"text\": ", i ? "," : "", (double)s->t0 / 100,
			(double)s->t1 / 100);
		jstr(f, s->text);
		fputs(", \"no_speech_prob\": ", f);
		cli_json_f32(f, s->no_speech_prob);
		fputs(",\n       \"tokens\": [", f);
		for (int k = 0; k < s->n_tokens; k++) {
			const struct whisper_token_data *t = &s->tokens[k];
			struct tern_str txt = ggml_legacy_token(model->file, (uint64_t)t->id);
			fprintf(f, "%s{\"id\": %d, \"text\": ", k ? ", " : "", t->id);
			if (t->id < model->ids.eot)
				cli_json_str(f, txt.ptr, txt.len);
			else
				fputs("\"\"", f);
			fputs(", \"p\": ", f);
			cli_json_f32(f, t->p);
			fputs(", \"plog\": ", f);
			cli_json_f32(f, t->plog);
			fprintf(f, ", \"t\": %.2f}", (double)(t->tid - model->ids.beg) * 0.02);
		}
		fputs("]}", f);
	}
	const struct whisper_full_stats *st = &j->res.stats;
	fprintf(f,
		"],\n     \"timings\": {\"decode_audio\": %.3f, \"mel\": %.3f, \"encode\": %.3f, \"decode\": %.3f, "
		"\"sample\": %.3f, \"total\": %.3f},\n     \"fallbacks\": %d}",
		j->t_audio, j->t_mel, st->t_encode_s * 1e3, st->t_decode_s * 1e3, st->t_sample_s * 1e3, j->t_total,
		st->n_fallback_p + st->n_fallback_h);
}

static int write_file(struct job *j, const char *ext, void (*fn)(FILE *, const struct job *))
{
	char path[4096];
	if (snprintf(path, sizeof path, "%s.%s", j->base, ext) >= (int)sizeof path) {
		cli_error("%s.%s: name too long", j->base, ext);
		return EXIT_RUNTIME;
	}
	FILE *f = fopen(path, "w");
	if (!f) {
		cli_error("%s: cannot write", path);
		return EXIT_RUNTIME;
	}
	fn(f, j);
	if (fclose(f)) {
		cli_error("%s: cannot write", path);
		return EXIT_RUNTIME;
	}
	if (common.verbose)
		fprintf(stderr, "%s: saved %s\n", cli_progname(), path);
	return 0;
}

/* ---- one file ---------------------------------------------------------------- */

static int job_fail(struct job *j, int code, const tern_err *e)
{
	j->status = cli_exit_status(code);
	snprintf(j->err, sizeof j->err, "%s", e->msg);
	return j->status;
}

static void run_file(struct job *j, struct whisper_full *w, struct tern_mel *mel, struct whisper_full_params *p)
{
	tern_err e = {0};
	double t0 = now_ms();
	struct tern_audio *a = NULL;
	struct tern_mel_spool *sp = NULL;
	int rc = tern_audio_open(&a, j->path, TERN_MEL_RATE, &e);
	if (rc) {
		job_fail(j, rc, &e);
		return;
	}
	j->info = *tern_audio_info(a);
	/* the audio in blocks into the spectrogram's spool: memory stays
	 * bounded however long the file */
	rc = tern_mel_spool_new(&sp, mel, 2 * (size_t)model->hp.n_audio_ctx, &e);
	static float block[1 << 16];
	while (!rc) {
		size_t got = 0;
		double ta = now_ms();
		rc = tern_audio_read(a, block, sizeof block / sizeof block[0], &got, &e);
		double tb = now_ms();
		j->t_audio += tb - ta;
		if (rc || got == 0)
			break;
		rc = tern_mel_spool_push(sp, block, got, &e);
		j->t_mel += now_ms() - tb;
	}
	tern_audio_close(a);
	double t1 = now_ms();
	if (!rc)
		rc = tern_mel_spool_finish(sp, &e);
	j->t_mel += now_ms() - t1;
	if (rc) {
		tern_mel_spool_free(sp);
		job_fail(j, rc, &e);
		return;
	}
	const size_t n = tern_mel_spool_samples(sp);
	j->n_samples = n;
	struct whisper_mel_src src = tern_mel_spool_src(sp);
	if (model->ids.multilingual && !strcmp(o_lang, "auto")) {
		float probs[128];
		rc = whisper_full_detect_language(w, &src, p->offset_cs, probs, &p->lang_id, &e);
		if (!rc && common.verbose)
			fprintf(stderr, "%s: %s: detected language %s (p = %.3f)\n", cli_progname(), j->path,
				whisper_lang_code(p->lang_id), probs[p->lang_id]);
	}
	if (!rc)
		rc = whisper_full_run(w, p, &src, &j->res, on_segment, j, &e);
	tern_mel_spool_free(sp);
	j->t_total = now_ms() - t0;
	if (o_nt && j->printed_any && !o_json)
		fputc('\n', stdout);
	if (rc) {
		job_fail(j, rc, &e);
		return;
	}
	int st = 0, s;
	if (o_otxt && (s = write_file(j, "txt", write_txt)))
		st = s;
	if (o_ovtt && (s = write_file(j, "vtt", write_vtt)))
		st = s;
	if (o_osrt && (s = write_file(j, "srt", write_srt)))
		st = s;
	if (o_ocsv && (s = write_file(j, "csv", write_csv)))
		st = s;
	if (o_oj && (s = write_file(j, "json", write_json_cli)))
		st = s;
	if (st)
		j->status = st, snprintf(j->err, sizeof j->err, "cannot write an output file");
	if (common.verbose) {
		const struct whisper_full_stats *ws = &j->res.stats;
		double dur = (double)n / TERN_MEL_RATE;
		fprintf(stderr,
			"%s: %s: %s, %.2f s; audio %.1f ms, mel %.1f ms, encode %.1f ms (%d, %.1f GFLOPS), decode "
			"%.1f ms (%d passes, %.2f ms/token), sample %.1f ms, fallbacks %d p / %d h, total %.1f ms, "
			"RTF %.3f\n",
			cli_progname(), j->path, j->info.format, dur, j->t_audio, j->t_mel, ws->t_encode_s * 1e3,
			ws->n_encode,
			ws->t_encode_s > 0 ? whisper_encoder_flops(model) * ws->n_encode / ws->t_encode_s / 1e9 : 0.0,
			ws->t_decode_s * 1e3, ws->n_decode, ws->n_decode ? ws->t_decode_s * 1e3 / ws->n_decode : 0.0,
			ws->t_sample_s * 1e3, ws->n_fallback_p, ws->n_fallback_h, j->t_total,
			dur > 0 ? j->t_total / 1e3 / dur : 0.0);
	}
}

int main(int argc, char **argv)
{
	const char **pos;
	int npos;
	cli_parse(&prog, argc, argv, &common, &pos, &npos);
	if (!o_threads_seen) {
		int c = cli_default_threads();
		o_threads = c < 4 ? c : 4;
	}
	if (!o_model)
		o_model = getenv("TERN_WHISPER_MODEL");
	if (!o_model || !*o_model)
		cli_usage_error("no model: give -m MODEL or set TERN_WHISPER_MODEL");
	int n_files = o_files.n + npos;
	if (n_files == 0)
		cli_usage_error("no input: give FILE arguments or -f FILE");
	if (o_of.n > n_files)
		cli_usage_error("%d -of names for %d files", o_of.n, n_files);
	const bool any_out = o_otxt || o_ovtt || o_osrt || o_ocsv || o_oj;
	if (!(o_tp >= 0 && o_tp <= 10) || !(o_tpi >= 0 && o_tpi <= 10) || !isfinite(o_et) || !isfinite(o_lpt) ||
	    !(o_nth >= 0 && o_nth <= 1) || !(o_crt >= 0 && o_crt <= 1000))
		cli_usage_error("a temperature outside 0..10, a threshold that is not a number, or -nth outside 0..1");
	int lang_id = whisper_lang_find(o_lang);
	if (lang_id < 0 && strcmp(o_lang, "auto"))
		cli_usage_error("unknown language '%s' (a code such as en, de, fr, or auto)", o_lang);

	struct job *jobs = calloc((size_t)n_files, sizeof(*jobs));
	if (!jobs) {
		cli_error("out of memory");
		return EXIT_RUNTIME;
	}
	int n_stdin = 0;
	for (int i = 0; i < n_files; i++) {
		jobs[i].path = i < o_files.n ? o_files.v[i] : pos[i - o_files.n];
		jobs[i].base = i < o_of.n ? o_of.v[i] : jobs[i].path;
		if (any_out && !strcmp(jobs[i].base, "-"))
			cli_usage_error("standard input needs -of BASE for its output files");
		if (!strcmp(jobs[i].path, "-") && ++n_stdin > 1)
			cli_usage_error("standard input (-) can be read only once");
	}

	double t0 = now_ms();
	tern_err e = {0};
	struct whisper_model *m = NULL;
	int rc = whisper_model_load(&m, o_model, &e);
	if (rc) {
		free(jobs);
		free(pos);
		return cli_fail(o_model, rc, &e);
	}
	model = m;
	model_path = o_model;
	if (!m->ids.multilingual && ((lang_id != 0 && strcmp(o_lang, "auto")) || o_tr) && !common.quiet)
		cli_warn("%s is English-only: ignoring the language and translation options", o_model);
	struct tern_backend *be = NULL;
	struct cpu_backend_opts bo = {.n_threads = (int)o_threads, .max_tokens = 512};
	struct whisper_full *w = NULL;
	struct tern_mel *mel = NULL;
	rc = cpu_backend_new(&be, &bo, &e);
	if (!rc)
		rc = whisper_full_new(&w, m, be, &e);
	if (!rc)
		rc = tern_mel_new(&mel, m->n_mel_filters, m->n_fft_bins, m->mel_filters, &e);
	if (rc) {
		int st = cli_fail(o_model, rc, &e);
		whisper_full_free(w);
		tern_backend_free(be);
		whisper_model_free(m);
		free(jobs);
		free(pos);
		return st;
	}
	double t_load = now_ms() - t0;
	if (common.verbose)
		fprintf(stderr, "%s: %s: %s model (%s), loaded in %.1f ms, %d threads\n", cli_progname(), o_model,
			whisper_model_size_name(m), m->ids.multilingual ? "multilingual" : "English-only", t_load,
			(int)o_threads);

	struct whisper_full_params p = whisper_full_default_params();
	p.beam_size = (int)o_bs;
	p.n_threads = (int)o_threads;
	p.best_of = (int)o_bo;
	p.temperature = (float)o_tp;
	p.temperature_inc = o_nf ? 0.0f : (float)o_tpi;
	p.entropy_thold = (float)o_et;
	p.logprob_thold = (float)o_lpt;
	p.no_speech_thold = (float)o_nth;
	p.compression_ratio_thold = (float)o_crt;
	p.no_timestamps = o_nt;
	p.translate = o_tr && m->ids.multilingual;
	p.lang_id = lang_id < 0 ? 0 : lang_id;
	if (o_mc >= 0)
		p.n_max_text_ctx = (int)o_mc;
	p.offset_cs = o_ot / 10;
	p.duration_cs = o_d / 10;

	int32_t *prompt = NULL;
	if (o_prompt && *o_prompt) {
		rc = whisper_tokenize(m, o_prompt, &prompt, &p.n_prompt, &e);
		if (rc) {
			int st = cli_fail(o_model, rc, &e);
			tern_mel_free(mel);
			whisper_full_free(w);
			tern_backend_free(be);
			whisper_model_free(m);
			free(jobs);
			free(pos);
			return st;
		}
		p.prompt = prompt;
	}

	int worst = 0;
	if (o_json) {
		fputs("{\"model\": {\"path\": ", stdout);
		jstr(stdout, o_model);
		printf(", \"type\": \"%s\", \"multilingual\": %s, \"vocab\": %d},\n \"params\": {\"language\": ",
		       whisper_model_size_name(m), m->ids.multilingual ? "true" : "false", m->hp.n_vocab);
		jstr(stdout, o_lang);
		printf(", \"translate\": %s, \"timestamps\": %s, \"beam_size\": %d, \"best_of\": %d, "
		       "\"threads\": %d},\n \"load_ms\": %.3f,\n \"files\": [\n",
		       p.translate ? "true" : "false", o_nt ? "false" : "true", p.beam_size, p.best_of, (int)o_threads,
		       t_load);
	}
	for (int i = 0; i < n_files; i++) {
		struct job *j = &jobs[i];
		run_file(j, w, mel, &p);
		if (j->status)
			cli_error("%s: %s", j->path, j->err);
		if (o_json) {
			write_json_file(stdout, j);
			fputs(i + 1 < n_files ? ",\n" : "\n", stdout);
		}
		worst = j->status > worst ? j->status : worst;
		whisper_result_free(&j->res);
	}
	if (o_json)
		fputs(" ]}\n", stdout);
	if (fflush(stdout) && !worst) {
		cli_error("cannot write standard output");
		worst = EXIT_RUNTIME;
	}
	free(prompt);
	tern_mel_free(mel);
	whisper_full_free(w);
	tern_backend_free(be);
	whisper_model_free(m);
	free(jobs);
	free(pos);
	return worst;
}
