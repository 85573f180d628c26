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
#include <errno.h>
#include <fcntl.h>
#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cmd/common/cli.h"
#include "cmd/common/device.h"
#include "lib/audio/audio.h"
#include "lib/speech/mel.h"
#include "lib/speech/mel_spool.h"
#include "lib/speech/vad.h"
#include "lib/speech/whisper.h"
#include "lib/speech/whisper_full.h"

/* ---- options ----------------------------------------------------------- */

static const char *o_model, *o_lang = "en", *o_prompt;
static struct cli_list o_files, o_of;
static bool o_nt, o_otxt, o_osrt, o_ovtt, o_ocsv, o_oj, o_ojf, o_olrc, o_json, o_tr, o_nf, o_threads_seen;
static bool o_dl, o_sow, o_vad, o_vmsd_seen;
static int64_t o_threads = 4, o_bs = 5, o_bo = 5, o_mc = -1, o_ot = 0, o_d = 0, o_ml = 0;
static double o_tp = 0.0, o_tpi = 0.2, o_et = 2.4, o_lpt = -1.0, o_nth = 0.6, o_crt = 0.0, o_wt = 0.01;
static const char *o_vm;
static int64_t o_vspd = 250, o_vsd = 100, o_vp = 30;
static double o_vt = 0.5, o_vmsd = 0.0, o_vo = 0.1;
static struct cli_common common;

static const struct cli_opt opts[] = {
	{.lng = "model", .shrt = 'm', .kind = CLI_FILE, .dst = &o_model, .arg = "FILE", .ext = "bin",
	 .help = "the Whisper model, a whisper.cpp ggml file (default: $TERN_WHISPER_MODEL)"},
	{.lng = "file", .shrt = 'f', .kind = CLI_LIST, .dst = &o_files, .arg = "FILE",
	 .help = "an input file, as whisper-cli spells it; these come before the FILE arguments"},
	{.lng = "threads", .shrt = 't', .kind = CLI_INT, .dst = &o_threads, .arg = "N", .min = 1, .max = 256,
	 .seen = &o_threads_seen, .help = "threads (default: 4, or fewer when fewer CPUs are available)"},
	DEV_OPTS,
	{.lng = "language", .shrt = 'l', .kind = CLI_STR, .dst = &o_lang, .arg = "LANG",
	 .help = "spoken language, a code (en, de, fr, ...) or a name (french), or auto to detect it (multilingual "
		 "models; default en)"},
	{.lng = "detect-language", .alias = "dl", .kind = CLI_FLAG, .dst = &o_dl,
	 .excludes = "output-txt|output-vtt|output-srt|output-csv|output-json|output-json-full|output-lrc",
	 .help = "print each file's language probabilities and stop (multilingual models)"},
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
		 "(2.4 there), and a window that fails at every temperature gives no text (default: 0, off, as "
		 "whisper-cli)"},
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
	{.lng = "max-len", .alias = "ml", .kind = CLI_INT, .dst = &o_ml, .arg = "N", .min = 0, .max = 1000000,
	 .help = "split segments longer than N characters at token times (0: no limit; 1: a word a segment with -sow)"},
	{.lng = "split-on-word", .alias = "sow", .kind = CLI_FLAG, .dst = &o_sow, .needs = "max-len",
	 .help = "split -ml segments only where a word starts"},
	{.lng = "word-thold", .alias = "wt", .kind = CLI_FLOAT, .dst = &o_wt, .arg = "P",
	 .help = "timestamp probability a token needs to get its own time (default: 0.01)"},
	{.lng = "vad", .kind = CLI_FLAG, .dst = &o_vad,
	 .help = "transcribe only the speech Silero VAD finds (-vm), with times in the original audio"},
	{.lng = "vad-model", .alias = "vm", .kind = CLI_FILE, .dst = &o_vm, .arg = "FILE", .ext = "bin", .needs = "vad",
	 .help = "the Silero VAD model, whisper.cpp's ggml file (default: $TERN_VAD_MODEL)"},
	{.lng = "vad-threshold", .alias = "vt", .kind = CLI_FLOAT, .dst = &o_vt, .arg = "X", .needs = "vad",
	 .help = "speech probability that starts a segment, 0..1 (default: 0.5; it ends below X - 0.15)"},
	{.lng = "vad-min-speech-duration-ms", .alias = "vspd", .kind = CLI_INT, .dst = &o_vspd, .arg = "MS",
	 .min = 0, .max = INT32_MAX, .needs = "vad", .help = "drop speech shorter than this (default: 250)"},
	{.lng = "vad-min-silence-duration-ms", .alias = "vsd", .kind = CLI_INT, .dst = &o_vsd, .arg = "MS",
	 .min = 0, .max = INT32_MAX, .needs = "vad", .help = "silence that ends a speech segment (default: 100)"},
	{.lng = "vad-max-speech-duration-s", .alias = "vmsd", .kind = CLI_FLOAT, .dst = &o_vmsd, .arg = "S",
	 .seen = &o_vmsd_seen, .needs = "vad", .help = "cut speech segments longer than this (default: no limit)"},
	{.lng = "vad-speech-pad-ms", .alias = "vp", .kind = CLI_INT, .dst = &o_vp, .arg = "MS", .min = 0,
	 .max = INT32_MAX, .needs = "vad", .help = "widen each speech segment by this on both sides (default: 30)"},
	{.lng = "vad-samples-overlap", .alias = "vo", .kind = CLI_FLOAT, .dst = &o_vo, .arg = "S", .needs = "vad",
	 .help = "seconds of audio kept past each speech segment but the last (default: 0.1)"},
	{.lng = "output-txt", .alias = "otxt", .kind = CLI_FLAG, .dst = &o_otxt, .help = "also write BASE.txt"},
	{.lng = "output-vtt", .alias = "ovtt", .kind = CLI_FLAG, .dst = &o_ovtt, .help = "also write BASE.vtt (WebVTT)"},
	{.lng = "output-srt", .alias = "osrt", .kind = CLI_FLAG, .dst = &o_osrt, .help = "also write BASE.srt (SubRip)"},
	{.lng = "output-csv", .alias = "ocsv", .kind = CLI_FLAG, .dst = &o_ocsv,
	 .help = "also write BASE.csv (start and end in ms, text)"},
	{.lng = "output-lrc", .alias = "olrc", .kind = CLI_FLAG, .dst = &o_olrc,
	 .help = "also write BASE.lrc (LRC lyrics: [mm:ss.xx] and the text)"},
	{.lng = "output-json", .alias = "oj", .kind = CLI_FLAG, .dst = &o_oj,
	 .help = "also write BASE.json as whisper-cli writes it"},
	{.lng = "output-json-full", .alias = "ojf", .kind = CLI_FLAG, .dst = &o_ojf,
	 .help = "also write BASE.json with every token (id, probability, times) and the decoding's statistics"},
	{.lng = "output-file", .alias = "of", .kind = CLI_LIST, .dst = &o_of, .arg = "BASE",
	 .needs = "output-txt|output-vtt|output-srt|output-csv|output-json|output-json-full|output-lrc",
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
	 "With several FILEs each line starts with the file's name and a colon (\"talk.wav: [00:00:00.000 --> "
	 "...\"), as tern-vad's, where whisper-cli prints the files one after another with nothing to tell them "
	 "apart. With -nt the text is decoded without timestamps and printed as it comes, one file's text "
	 "(after its name, with several) followed by a newline (whisper-cli adds none). -ml N splits segments longer than N characters at the tokens' own "
	 "times, with -sow only before a word, as whisper-cli does. --json prints instead one document: "
	 "\"model\" (path, type, multilingual, vocab), \"params\" (language, translate, beam_size, best_of, "
	 "threads), \"files\": per file \"file\", \"language\" (and \"language_probs\" when detected), "
	 "\"duration\" (seconds), with --vad \"vad\" (\"segments\", \"speech\" seconds, \"map\": [processed, "
	 "original] seconds), \"segments\": [{\"t0\", \"t1\" (seconds), \"text\", \"no_speech_prob\", "
	 "\"avg_logprob\", \"compression_ratio\", \"temperature\" (of the window's decoding), \"tokens\": "
	 "[{\"id\", \"text\", \"p\", \"plog\", \"t\" (the likeliest timestamp, seconds), \"t0\", \"t1\" (the "
	 "token's own times, whisper.cpp's token timestamps, seconds)}]}], \"timings\" (ms: \"decode_audio\", "
	 "\"mel\", \"encode\", \"decode\", \"sample\", \"total\"), or \"error\" for a file that failed. "
	 "With -dl standard output carries one line per file, its name, a colon and the five likeliest "
	 "languages first with their probabilities (those of at least 0.001; --json gives every language's), "
	 "and nothing is transcribed:\n"
	 "\n"
	 "  talk.wav: de 0.9412 en 0.0311 nl 0.0102\n"
	 "\n"
	 "(--json: \"language\" and \"language_probs\" of every language per file).\n"
	 "\n"
	 "-otxt, -ovtt, -osrt, -ocsv, -olrc and -oj write BASE.txt (one segment text a line), BASE.vtt, "
	 "BASE.srt, BASE.csv (start,end in ms,\"text\"), BASE.lrc ([mm:ss.xx]text) and BASE.json "
	 "(whisper-cli's -oj document) as whisper-cli does; -ojf writes whisper-cli's full JSON (each segment's "
	 "tokens with text, times, id, p) and adds \"plog\" per token, \"avg_logprob\", \"compression_ratio\", "
	 "\"temperature\" and \"no_speech_prob\" per segment and \"language_probs\" when the language was "
	 "detected. Token times are those of the transcribed audio (as whisper-cli's, also under --vad). "
	 "BASE is the file's own name (jfk.wav gives jfk.wav.txt) unless -of BASE is given; -of may be "
	 "repeated, the first for the first FILE and so on. Standard input (-) needs an -of.\n"
	 "\n"
	 "Standard error: errors and warnings; with -l auto the language detected per file (\"talk.wav: "
	 "auto-detected language: de (p = 0.953)\", as whisper-cli says it; not with -q); on a terminal (and "
	 "without -q) a progress bar per file; with -v "
	 "the model, each file's format and duration, the times "
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
	 "(-tpi steps up to 1.0), with -bo samples; with -crt a window that fails at every temperature is dropped "
	 "(whisper-cli prints its loop). With -bs 1 the transcript equals whisper-cli -bs 1's; beam "
	 "search gives whisper-cli's words, with timestamps that may differ by one step (20 ms) where a random "
	 "draw falls on the other side of a probability that differs by float rounding."},
	{"VOICE ACTIVITY DETECTION",
	 "--vad runs Silero VAD (-vm, whisper.cpp's ggml file, as tern-vad) over the file first and transcribes "
	 "only its speech, as whisper-cli --vad does: the speech segments (-vt, -vspd, -vsd, -vmsd, -vp as in "
	 "tern-vad) are cut out, each but the last with -vo seconds more, joined with 0.1 s of silence, and "
	 "transcribed; segment times are mapped back to the original audio. Music, noise and long silences then "
	 "never reach the decoder, which ends the repetition loops Whisper falls into there. The audio is kept in "
	 "a temporary file meanwhile (64 kB per second)."},
	{"INPUT",
	 "Any file libsndfile reads: WAV, FLAC, Ogg/Vorbis, Ogg/Opus, MP3, AIFF and more; channels are "
	 "averaged and other rates converted to 16 kHz. FILE - reads standard input (refused, exit 2, when it is a terminal). The audio is read in "
	 "blocks and its spectrogram kept in a temporary file ($TMPDIR, 32 kB per second of audio), so memory "
	 "does not grow with the length of the file."},
	{"DEVICES", DEV_OPTS_TEXT " Whisper runs whole on one device: on the GPU when it fits (or -ngl says so), "
		    "else on the CPU; should the GPU refuse the memory, the load goes again on the CPU, with a warning."},
	{"EXIT STATUS",
	 "0 success; 1 runtime error (the model or a FILE cannot be opened or read, an output file cannot be "
	 "written); 2 usage error (unknown option, a value out of range, an unknown language, no model, no "
	 "FILE); 65 a FILE is not audio libsndfile can decode, or the model is not a Whisper model; 130 interrupted "
	 "by Ctrl-C (SIGINT): the decoding stops before its next window or token, the segments transcribed so far "
	 "are kept, printed and written to the output files (--json: \"interrupted\": true on that file), and the "
	 "FILEs after it are not started. With several FILEs every file is tried and the status is the worst one "
	 "met."},
	{"ENVIRONMENT", "TERN_WHISPER_MODEL: the model when -m is not given."},
	{"EXAMPLES",
	 "  tern-transcribe -m ggml-tiny.en.bin jfk.wav\n"
	 "  tern-transcribe -m ggml-base.bin -l auto -osrt -of talk talk.flac\n"
	 "  tern-transcribe -m ggml-base.bin -dl *.wav\n"
	 "  tern-transcribe -m ggml-tiny.en.bin --vad -vm ggml-silero-v5.1.2.bin -ml 42 -sow -osrt lecture.mp3\n"
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
	double t_audio, t_mel, t_vad, t_total;
	bool printed_any;
	int64_t seek_start;
	/* --vad: the speech segments, the samples transcribed, the time map */
	int n_vad_segs;
	size_t speech_samples;
	struct whisper_time_point *map;
	int n_map;
	/* language detection (multilingual models with -l auto or -dl) */
	bool detected;
	float lang_probs[128];
};

static const struct whisper_model *model;
static const char *model_path;
static void bar_clear(void);

/* more than one FILE: their lines on standard output carry the name */
static bool several_files;

static int on_segment(void *ctx, const struct whisper_result *r, int i, tern_err *e)
{
	(void)e;
	struct job *j = ctx;
	if (o_json)
		return 0;
	bar_clear();
	if (!j->printed_any)
		fputc('\n', stdout);
	j->printed_any = true;
	const struct whisper_segment *s = &r->seg[i];
	if (o_nt) {
		if (several_files && i == 0)
			printf("%s: ", j->path);
		fputs(s->text, stdout);
	} else {
		char a[32], b[32];
		fmt_ts(a, sizeof a, s->t0, false);
		fmt_ts(b, sizeof b, s->t1, false);
		/* several files: each line says whose it is, as tern-vad's */
		if (several_files)
			printf("%s: ", j->path);
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

static void write_lrc(FILE *f, const struct job *j)
{
	fputs("[by:whisper.cpp]\n", f);
	for (int i = 0; i < j->res.n_seg; i++) {
		const int64_t ms = j->res.seg[i].t0 * 10;
		fprintf(f, "[%02d:%02d.%02d]%s\n", (int)(ms / 60000), (int)(ms / 1000 % 60), (int)(ms % 1000 / 10),
			j->res.seg[i].text);
	}
}

/* the UTF-8 bytes still missing from the last character of s[len] */
static int utf8_missing(const char *s, size_t len)
{
	size_t i = len;
	while (i > 0 && ((unsigned char)s[i - 1] & 0xC0) == 0x80)
		i--;
	if (i == 0)
		return 0;
	const unsigned char c = (unsigned char)s[i - 1];
	const int want = c < 0x80 ? 1 : (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : (c & 0xF8) == 0xF0 ? 4 : 0;
	const int have = (int)(len - (i - 1));
	return want > have ? want - have : 0;
}

/* the languages, likeliest first, those above 0.001 (at least one) */
static void print_langs(FILE *f, const struct job *j)
{
	int idx[128], n = model->ids.n_langs < 128 ? model->ids.n_langs : 128;
	int m = 0;
	for (int i = 0; i < n; i++)
		if (whisper_lang_code(i))
			idx[m++] = i;
	for (int a = 1; a < m; a++) /* insertion sort, stable: token order among equals */
		for (int b = a; b > 0 && j->lang_probs[idx[b]] > j->lang_probs[idx[b - 1]]; b--) {
			int t = idx[b];
			idx[b] = idx[b - 1], idx[b - 1] = t;
		}
	fprintf(f, "%s:", j->path);
	/* five: a line that fits a terminal (--json has them all) */
	for (int i = 0; i < m && i < 5 && (i == 0 || j->lang_probs[idx[i]] >= 0.001f); i++)
		fprintf(f, " %s %.4f", whisper_lang_code(idx[i]), (double)j->lang_probs[idx[i]]);
	fputc('\n', f);
}

static void jstr(FILE *f, const char *s)
{
	cli_json_str(f, s, strlen(s));
}

/* -ojf: a segment's tokens as whisper-cli writes them (tokens that end
 * inside a UTF-8 character joined with the next ones), then what
 * whisper-cli does not write: the window's average log-probability,
 * compression ratio and temperature, and the no-speech probability */
static void write_json_tokens(FILE *f, const struct whisper_segment *s)
{
	fputs(",\n\t\t\t\"tokens\": [\n", f);
	for (int k = 0; k < s->n_tokens;) {
		const struct whisper_token_data *t = &s->tokens[k];
		char nb[32], txt[256];
		struct tern_str x = whisper_token_str(model, t->id, nb);
		size_t len = x.len < sizeof txt ? x.len : sizeof txt - 1;
		memcpy(txt, x.ptr, len);
		int64_t t1 = t->t1;
		for (k++; k < s->n_tokens && utf8_missing(txt, len) > 0; k++) {
			x = whisper_token_str(model, s->tokens[k].id, nb);
			size_t c = x.len < sizeof txt - 1 - len ? x.len : sizeof txt - 1 - len;
			memcpy(txt + len, x.ptr, c);
			len += c;
			if (s->tokens[k].t1 > -1)
				t1 = s->tokens[k].t1;
		}
		txt[len] = 0;
		fputs("\t\t\t\t{\n\t\t\t\t\t\"text\": ", f);
		cli_json_str(f, txt, len);
		fputs(",\n", f);
		if (t->t0 > -1 && t1 > -1) {
			char a[32], b[32];
			fmt_ts(a, sizeof a, t->t0, true);
			fmt_ts(b, sizeof b, t1, true);
			fprintf(f,
				"\t\t\t\t\t\"timestamps\": {\n\t\t\t\t\t\t\"from\": \"%s\",\n\t\t\t\t\t\t\"to\": "
				"\"%s\"\n\t\t\t\t\t},\n\t\t\t\t\t\"offsets\": {\n\t\t\t\t\t\t\"from\": %" PRId64
				",\n\t\t\t\t\t\t\"to\": %" PRId64 "\n\t\t\t\t\t},\n",
				a, b, t->t0 * 10, t1 * 10);
		}
		fprintf(f, "\t\t\t\t\t\"id\": %d,\n\t\t\t\t\t\"p\": %g,\n\t\t\t\t\t\"plog\": %g,\n", t->id,
			(double)t->p, (double)t->plog);
		fputs("\t\t\t\t\t\"t_dtw\": -1\n\t\t\t\t}", f);
		fputs(k < s->n_tokens ? ",\n" : "\n", f);
	}
	fputs("\t\t\t],\n\t\t\t\"avg_logprob\": ", f);
	cli_json_f32(f, s->avg_logprob);
	fputs(",\n\t\t\t\"compression_ratio\": ", f);
	cli_json_f32(f, s->compression_ratio);
	fputs(",\n\t\t\t\"temperature\": ", f);
	cli_json_f32(f, s->temperature);
	fputs(",\n\t\t\t\"no_speech_prob\": ", f);
	cli_json_f32(f, s->no_speech_prob);
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
	if (o_ojf && j->detected) {
		/* beyond whisper-cli: the languages' probabilities */
		fputs(",\n\t\t\"language_probs\": {", f);
		for (int i = 0, first = 1; i < model->ids.n_langs && whisper_lang_code(i); i++, first = 0) {
			fprintf(f, "%s\"%s\": ", first ? "" : ", ", whisper_lang_code(i));
			cli_json_f32(f, j->lang_probs[i]);
		}
		fputs("}", f);
	}
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
		if (o_ojf)
			write_json_tokens(f, s);
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
	if (j->detected) {
		fputs(", \"language_probs\": {", f);
		for (int i = 0, first = 1; i < model->ids.n_langs && whisper_lang_code(i); i++, first = 0) {
			fprintf(f, "%s\"%s\": ", first ? "" : ", ", whisper_lang_code(i));
			cli_json_f32(f, j->lang_probs[i]);
		}
		fputs("}", f);
	}
	if (o_dl) {
		fputs("}", f);
		return;
	}
	if (o_vad) {
		fprintf(f, ", \"vad\": {\"segments\": %d, \"speech\": %.3f, \"map\": [", j->n_vad_segs,
			(double)j->speech_samples / TERN_MEL_RATE);
		for (int i = 0; i < j->n_map; i++)
			fprintf(f, "%s[%.2f, %.2f]", i ? ", " : "", (double)j->map[i].processed / 100,
				(double)j->map[i].original / 100);
		fputs("]}", f);
	}
	if (j->res.cancelled) /* Ctrl-C: the segments before it */
		fputs(", \"interrupted\": true", f);
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
		fputs(", \"avg_logprob\": ", f);
		cli_json_f32(f, s->avg_logprob);
		fputs(", \"compression_ratio\": ", f);
		cli_json_f32(f, s->compression_ratio);
		fputs(", \"temperature\": ", f);
		cli_json_f32(f, s->temperature);
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
			if (t->tid >= model->ids.beg) /* none when every timestamp was suppressed */
				fprintf(f, ", \"t\": %.2f", (double)(t->tid - model->ids.beg) * 0.02);
			else
				fputs(", \"t\": null", f);
			/* the token's own times, in the file's time (whisper-cli's -ojf
			 * leaves them in the transcribed audio's under --vad) */
			if (t->t0 > -1 && t->t1 > -1) {
				const struct whisper_time_map map = {.pt = j->map, .n = j->n_map};
				fprintf(f, ", \"t0\": %.2f, \"t1\": %.2f",
					(double)whisper_time_map_apply(&map, t->t0) / 100,
					(double)whisper_time_map_apply(&map, t->t1) / 100);
			}
			fputs("}", f);
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
		cli_error("%s: cannot write: %s", path, strerror(errno));
		return EXIT_RUNTIME;
	}
	fn(f, j);
	if (ferror(f) | fclose(f)) {
		cli_error("%s: cannot write: %s", path, strerror(errno ? errno : EIO));
		return EXIT_RUNTIME;
	}
	if (common.verbose)
		fprintf(stderr, "%s: saved %s\n", cli_progname(), path);
	return 0;
}

/* Whether base.ext can be written, found before anything is transcribed:
 * 0 or the errno. An existing file is opened for writing without being
 * truncated; a new one is created and removed again. */
static int writable(const char *base, const char *ext)
{
	char path[4096];
	if (snprintf(path, sizeof path, "%s.%s", base, ext) >= (int)sizeof path)
		return ENAMETOOLONG;
	int fd = open(path, O_WRONLY);
	if (fd < 0 && errno == ENOENT && (fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0666)) >= 0)
		unlink(path);
	if (fd < 0)
		return errno;
	close(fd);
	return 0;
}

/* ---- the audio into the spectrogram ------------------------------------------- */

/* whisper.cpp's token times read the signal's energy near its start only
 * (see whisper_full_token_times): the first 40 s are kept for it */
#define ENERGY_SAMPLES (40 * TERN_MEL_RATE)

/* where the samples to transcribe go: the spool, and the head of the
 * signal for the energy */
struct feed {
	struct tern_mel_spool *sp;
	float *head; /* [ENERGY_SAMPLES + 32] or NULL */
	size_t n_head;
	double *t_mel;
};

static int feed_push(struct feed *f, const float *x, size_t n, tern_err *e)
{
	if (f->head && f->n_head < ENERGY_SAMPLES + 32) {
		size_t k = ENERGY_SAMPLES + 32 - f->n_head;
		k = k < n ? k : n;
		memcpy(f->head + f->n_head, x, k * sizeof(float));
		f->n_head += k;
	}
	double t = cli_now_ms();
	int rc = tern_mel_spool_push(f->sp, x, n, e);
	*f->t_mel += cli_now_ms() - t;
	return rc;
}

static struct tern_silero *vad_model;
static struct tern_vad *vad;

/* the audio in blocks (one file at a time) */
static float block[1 << 16];
#define BLOCK_LEN (sizeof block / sizeof block[0])

/* a speech probability appended to *probs (grown as needed) */
static int probs_push(float **probs, size_t *n, size_t *cap, float p, tern_err *e)
{
	if (*n == *cap) {
		size_t c = *cap ? 2 * *cap : 1024;
		float *np = realloc(*probs, c * sizeof(float));
		if (!np)
			return tern_errf(e, TERN_ENOMEM, "out of memory for the speech probabilities");
		*probs = np;
		*cap = c;
	}
	(*probs)[(*n)++] = p;
	return 0;
}

/* --vad, first pass: the file into tf and through Silero, window by window
 * (the last zero-padded, as whisper.cpp does): the probabilities and the
 * samples read (j->n_samples) */
static int vad_probs(struct job *j, struct tern_audio *a, FILE *tf, float **probs, size_t *n_probs, tern_err *e)
{
	float win[TERN_VAD_WINDOW];
	size_t n_win = 0, cap = 0;
	int rc = 0;
	tern_vad_reset(vad);
	for (;;) {
		size_t got = 0;
		double ta = cli_now_ms();
		rc = tern_audio_read(a, block, BLOCK_LEN, &got, e);
		j->t_audio += cli_now_ms() - ta;
		if (rc || got == 0)
			break;
		if (fwrite(block, sizeof(float), got, tf) != got)
			return tern_errf(e, TERN_EIO, "cannot write the temporary file");
		j->n_samples += got;
		double tv = cli_now_ms();
		for (size_t i = 0; i < got && !rc; i++) {
			win[n_win++] = block[i];
			if (n_win < TERN_VAD_WINDOW)
				continue;
			n_win = 0;
			rc = probs_push(probs, n_probs, &cap, tern_vad_window(vad, win), e);
		}
		j->t_vad += cli_now_ms() - tv;
		if (rc)
			break;
	}
	if (!rc && n_win > 0) {
		memset(win + n_win, 0, (TERN_VAD_WINDOW - n_win) * sizeof(float));
		rc = probs_push(probs, n_probs, &cap, tern_vad_window(vad, win), e);
	}
	return rc;
}

/* samples [s0, s1) of tf into the spool */
static int vad_copy(FILE *tf, struct feed *fd, int64_t s0, int64_t s1, tern_err *e)
{
	if (fseeko(tf, (off_t)s0 * (off_t)sizeof(float), SEEK_SET))
		return tern_errf(e, TERN_EIO, "cannot read the temporary file");
	int rc = 0;
	for (int64_t k = s0; k < s1 && !rc;) {
		size_t want = (size_t)(s1 - k) < BLOCK_LEN ? (size_t)(s1 - k) : BLOCK_LEN;
		if (fread(block, sizeof(float), want, tf) != want)
			rc = tern_errf(e, TERN_EIO, "cannot read the temporary file");
		else
			rc = feed_push(fd, block, want, e);
		k += (int64_t)want;
	}
	return rc;
}

/* --vad, second pass: what whisper.cpp's whisper_vad transcribes (each
 * segment, the overlap after all but the last, 0.1 s of silence between
 * them) from tf into the spool, with the time map back to the file's */
static int vad_splice(struct job *j, FILE *tf, struct feed *fd, const struct tern_vad_segment *segs, size_t n_segs,
		      tern_err *e)
{
	if (n_segs > 0 && !(j->map = malloc(sizeof(*j->map) * 4 * n_segs)))
		return tern_errf(e, TERN_ENOMEM, "out of memory for the time map");
	/* whisper.cpp works in centiseconds here: the segments are rounded to
	 * them and back, and cut at the last sample */
	const int64_t last = (int64_t)j->n_samples - 1, overlap = (int64_t)((float)o_vo * TERN_MEL_RATE),
		      silence = TERN_MEL_RATE / 10;
	int64_t offset = 0;
	int rc = 0;
	for (size_t i = 0; i < n_segs && !rc; i++) {
		const int64_t cs0 = tern_vad_samples_to_cs(segs[i].start), cs1 = tern_vad_samples_to_cs(segs[i].end);
		int64_t s0 = tern_vad_cs_to_samples(cs0), s1 = tern_vad_cs_to_samples(cs1);
		s0 = s0 < last ? s0 : last;
		s1 = s1 < last ? s1 : last;
		const int64_t len_orig = s1 - s0;
		const bool more = i + 1 < n_segs;
		if (more)
			s1 = s1 + overlap < last ? s1 + overlap : last;
		if (s1 - s0 <= 0)
			continue;
		struct whisper_time_point *m = j->map;
		m[j->n_map++] = (struct whisper_time_point){tern_vad_samples_to_cs(offset), cs0};
		m[j->n_map++] = (struct whisper_time_point){tern_vad_samples_to_cs(offset + len_orig), cs1};
		j->speech_samples += (size_t)(s1 - s0);
		rc = vad_copy(tf, fd, s0, s1, e);
		offset += s1 - s0;
		if (more && !rc) {
			m[j->n_map++] = (struct whisper_time_point){tern_vad_samples_to_cs(offset), cs1};
			m[j->n_map++] = (struct whisper_time_point){tern_vad_samples_to_cs(offset + silence),
								   tern_vad_samples_to_cs(segs[i + 1].start)};
			memset(block, 0, (size_t)silence * sizeof(float));
			rc = feed_push(fd, block, (size_t)silence, e);
			offset += silence;
		}
	}
	/* in order already; whisper.cpp keeps the first of equal times */
	int k = 0;
	for (int i = 0; i < j->n_map; i++)
		if (k == 0 || j->map[k - 1].processed != j->map[i].processed)
			j->map[k++] = j->map[i];
	j->n_map = k;
	return rc;
}

/* --vad: the whole file through Silero into a temporary file, its speech
 * segments (-vt, -vspd, ...), then their audio into the spool */
static int vad_feed(struct job *j, struct tern_audio *a, struct feed *fd, tern_err *e)
{
	FILE *tf = tmpfile();
	if (!tf)
		return tern_errf(e, TERN_EIO, "no temporary file for the audio");
	float *probs = NULL;
	size_t n_probs = 0, n_segs = 0;
	struct tern_vad_segment *segs = NULL;
	int rc = vad_probs(j, a, tf, &probs, &n_probs, e);
	if (!rc) {
		struct tern_vad_params vp;
		tern_vad_params_default(&vp);
		vp.threshold = (float)o_vt;
		vp.min_speech_ms = (int32_t)o_vspd;
		vp.min_silence_ms = (int32_t)o_vsd;
		vp.max_speech_s = o_vmsd_seen ? (float)o_vmsd : FLT_MAX;
		vp.speech_pad_ms = (int32_t)o_vp;
		vp.samples_overlap = (float)o_vo;
		rc = tern_vad_segments(probs, n_probs, j->n_samples, &vp, &segs, &n_segs, e);
	}
	free(probs);
	j->n_vad_segs = (int)n_segs;
	if (!rc)
		rc = vad_splice(j, tf, fd, segs, n_segs, e);
	free(segs);
	fclose(tf);
	return rc;
}

/* ---- progress -------------------------------------------------------------------- */

static bool show_progress;
static bool bar_drawn;

static void bar_clear(void)
{
	if (bar_drawn) {
		fputs("\r\033[K", stderr);
		bar_drawn = false;
	}
}

struct progress {
	struct job *j;
	double t0;
	int last_pct;
};

static void on_progress(void *ctx, int64_t seek, int64_t seek_end)
{
	struct progress *pr = ctx;
	const struct job *j = pr->j;
	const int64_t start = j->seek_start;
	const double f = seek_end > start ? (double)(seek - start) / (double)(seek_end - start) : 1.0;
	const int pct = (int)(f * 100.0 + 1e-9);
	const int width = cli_width(stderr) - 40 > 10 ? (cli_width(stderr) - 40 < 50 ? cli_width(stderr) - 40 : 50) : 10;
	const int fill = (int)(f * width);
	char bar[64];
	for (int i = 0; i < width; i++)
		bar[i] = i < fill ? '#' : '-';
	bar[width] = 0;
	const double el = (cli_now_ms() - pr->t0) / 1e3, eta = f > 0 ? el / f - el : 0;
	const char *name = strrchr(j->path, '/') ? strrchr(j->path, '/') + 1 : j->path;
	fprintf(stderr, "\r\033[K%.20s [%s] %3d%% %4.0fs left", name, bar, pct, eta);
	fflush(stderr);
	bar_drawn = true;
	pr->last_pct = pct;
}

/* ---- one file ---------------------------------------------------------------- */

/* exit status of a run stopped by Ctrl-C, as a shell reports SIGINT */
#define EXIT_INTERRUPTED 130

static volatile sig_atomic_t interrupted;

static void on_sigint(int sig)
{
	(void)sig;
	interrupted = 1;
}

static int job_fail(struct job *j, int code, const tern_err *e)
{
	j->status = cli_exit_status(code);
	snprintf(j->err, sizeof j->err, "%s", e->msg);
	return j->status;
}

/* What comes before the decoding: an empty file (or one shorter than
 * Whisper decodes) said, no error but no silent success either; with -l
 * auto or -dl the language detected into pp->lang_id, and said on stderr
 * by default, as whisper-cli does (-dl prints its list on standard output
 * instead). */
static int before_decoding(struct job *j, struct whisper_full *w, const struct whisper_mel_src *src,
			   struct whisper_full_params *pp, bool nothing, tern_err *e)
{
	if (j->n_samples < TERN_MEL_RATE / 10 && !common.quiet)
		cli_warn("%s: %.3f s of audio, less than the 0.1 s Whisper decodes: nothing to transcribe", j->path,
			 (double)j->n_samples / TERN_MEL_RATE);
	if (nothing || !model->ids.multilingual || (!o_dl && strcmp(o_lang, "auto")))
		return 0;
	int rc = whisper_full_detect_language(w, src, pp->offset_cs, j->lang_probs, &pp->lang_id, e);
	j->detected = !rc;
	if (!rc && !o_dl && !common.quiet)
		fprintf(stderr, "%s: %s: auto-detected language: %s (p = %.3f)\n", cli_progname(), j->path,
			whisper_lang_code(pp->lang_id), j->lang_probs[pp->lang_id]);
	return rc;
}

/* the whole file, block by block */
static int read_plain(struct job *j, struct tern_audio *a, struct feed *fd, tern_err *e)
{
	for (;;) {
		size_t got = 0;
		double ta = cli_now_ms();
		int rc = tern_audio_read(a, block, BLOCK_LEN, &got, e);
		j->t_audio += cli_now_ms() - ta;
		if (rc || got == 0)
			return rc;
		j->n_samples += got;
		if ((rc = feed_push(fd, block, got, e)))
			return rc;
	}
}

/* The file's audio in blocks into the spectrogram's spool (fd->sp, the
 * caller frees it and fd->head): memory stays bounded however long the
 * file. With --vad its speech only. */
static int read_file(struct job *j, struct tern_mel *mel, struct feed *fd, bool want_energy, tern_err *e)
{
	struct tern_audio *a = NULL;
	int rc = tern_audio_open(&a, j->path, TERN_MEL_RATE, e);
	if (rc)
		return rc;
	j->info = *tern_audio_info(a);
	rc = tern_mel_spool_new(&fd->sp, mel, 2 * (size_t)model->hp.n_audio_ctx, e);
	if (!rc && want_energy && !(fd->head = malloc((ENERGY_SAMPLES + 32) * sizeof(float))))
		rc = tern_errf(e, TERN_ENOMEM, "out of memory for the signal's energy");
	if (!rc)
		rc = o_vad ? vad_feed(j, a, fd, e) : read_plain(j, a, fd, e);
	tern_audio_close(a);
	double t1 = cli_now_ms();
	if (!rc)
		rc = tern_mel_spool_finish(fd->sp, e);
	j->t_mel += cli_now_ms() - t1;
	return rc;
}

/* the energy of the head of the n samples transcribed (token times), in
 * *energy (the caller frees it); fd->head freed */
static int energy_make(struct feed *fd, size_t n, struct whisper_energy *en, float **energy, tern_err *e)
{
	const size_t n_out = n <= fd->n_head ? n : fd->n_head - 32;
	int rc = 0;
	*energy = malloc((n_out ? n_out : 1) * sizeof(float));
	if (!*energy) {
		rc = tern_errf(e, TERN_ENOMEM, "out of memory for the signal's energy");
	} else {
		whisper_signal_energy(fd->head, fd->n_head, n, *energy, n_out);
		*en = (struct whisper_energy){.e = *energy, .n_have = n_out, .n = (int64_t)n};
	}
	free(fd->head);
	fd->head = NULL;
	return rc;
}

/* -otxt, -ovtt, ...: every one tried; the job fails when one cannot be written */
static void write_outputs(struct job *j)
{
	const struct {
		bool on;
		const char *ext;
		void (*fn)(FILE *, const struct job *);
	} outs[] = {{o_otxt, "txt", write_txt},	      {o_ovtt, "vtt", write_vtt}, {o_osrt, "srt", write_srt},
		    {o_ocsv, "csv", write_csv},	      {o_oj || o_ojf, "json", write_json_cli},
		    {o_olrc, "lrc", write_lrc}};
	int st = 0, s;
	for (size_t k = 0; k < sizeof outs / sizeof *outs; k++)
		if (outs[k].on && (s = write_file(j, outs[k].ext, outs[k].fn)))
			st = s;
	if (st)
		j->status = st, snprintf(j->err, sizeof j->err, "cannot write an output file");
}

/* -v: where the time went */
static void print_timings(const struct job *j)
{
	const struct whisper_full_stats *ws = &j->res.stats;
	double dur = (double)j->n_samples / TERN_MEL_RATE;
	if (o_vad)
		fprintf(stderr, "%s: %s: VAD %.1f ms: %d speech segments, %.2f s of %.2f s transcribed\n", cli_progname(),
			j->path, j->t_vad, j->n_vad_segs, (double)j->speech_samples / TERN_MEL_RATE, dur);
	fprintf(stderr,
		"%s: %s: %s, %.2f s; audio %.1f ms, mel %.1f ms, encode %.1f ms (%d, %.1f GFLOPS), decode "
		"%.1f ms (%d passes, %.2f ms/token), sample %.1f ms, fallbacks %d p / %d h, %d windows dropped, "
		"total %.1f ms, RTF %.3f%s\n",
		cli_progname(), j->path, j->info.format, dur, j->t_audio, j->t_mel, ws->t_encode_s * 1e3, ws->n_encode,
		ws->t_encode_s > 0 ? whisper_encoder_flops(model) * ws->n_encode / ws->t_encode_s / 1e9 : 0.0,
		ws->t_decode_s * 1e3, ws->n_decode, ws->n_decode ? ws->t_decode_s * 1e3 / ws->n_decode : 0.0,
		ws->t_sample_s * 1e3, ws->n_fallback_p, ws->n_fallback_h, ws->n_dropped, j->t_total,
		dur > 0 ? j->t_total / 1e3 / dur : 0.0, j->res.cancelled ? "; interrupted" : "");
}

static void run_file(struct job *j, struct whisper_full *w, struct tern_mel *mel, struct whisper_full_params *p)
{
	tern_err e = {0};
	double t0 = cli_now_ms();
	float *energy = NULL;
	struct feed fd = {.t_mel = &j->t_mel};
	int rc = read_file(j, mel, &fd, p->token_timestamps, &e);
	/* what is transcribed: the file, or with --vad its speech */
	const size_t n = rc ? 0 : tern_mel_spool_samples(fd.sp);
	struct whisper_mel_src src = rc ? (struct whisper_mel_src){0} : tern_mel_spool_src(fd.sp);
	struct whisper_energy en = {0};
	if (!rc && fd.head)
		rc = energy_make(&fd, n, &en, &energy, &e);
	struct whisper_full_params pp = *p;
	pp.energy = &en;
	struct whisper_time_map map = {.pt = j->map, .n = j->n_map};
	pp.time_map = j->n_map > 0 ? &map : NULL;
	j->seek_start = pp.offset_cs;
	struct progress pr = {.j = j, .t0 = cli_now_ms(), .last_pct = -1};
	if (show_progress) {
		pp.progress = on_progress;
		pp.progress_ctx = &pr;
	}
	const bool nothing = o_vad && n == 0; /* no speech: nothing to transcribe */
	if (!rc)
		rc = before_decoding(j, w, &src, &pp, nothing, &e);
	j->res.lang_id = pp.lang_id;
	if (!rc && !nothing && !o_dl)
		rc = whisper_full_run(w, &pp, &src, &j->res, on_segment, j, &e);
	bar_clear();
	tern_mel_spool_free(fd.sp);
	free(fd.head);
	free(energy);
	j->t_total = cli_now_ms() - t0;
	if (o_nt && j->printed_any && !o_json)
		fputc('\n', stdout);
	if (rc) {
		job_fail(j, rc, &e);
		return;
	}
	if (o_dl) {
		if (!o_json)
			print_langs(stdout, j);
		return;
	}
	/* after Ctrl-C too: the segments transcribed are what it was for */
	write_outputs(j);
	if (common.verbose)
		print_timings(j);
}

/* The jobs of the FILEs (-f's first, then the arguments), checked before
 * anything loads: standard input once and not a terminal, and each output
 * file's place writable. NULL after a message (usage errors exit 2). */
static struct job *make_jobs(const char **pos, int n_files, bool any_out)
{
	struct job *jobs = calloc((size_t)n_files, sizeof(*jobs));
	if (!jobs) {
		cli_error("out of memory");
		return NULL;
	}
	const struct {
		bool on;
		const char *ext;
	} outs[] = {{o_otxt, "txt"}, {o_ovtt, "vtt"}, {o_osrt, "srt"}, {o_ocsv, "csv"},
		    {o_oj || o_ojf, "json"}, {o_olrc, "lrc"}};
	int n_stdin = 0;
	several_files = n_files > 1;
	for (int i = 0; i < n_files; i++) {
		jobs[i].path = i < o_files.n ? o_files.v[i] : pos[i - o_files.n];
		jobs[i].base = i < o_of.n ? o_of.v[i] : jobs[i].path;
		if (any_out && !strcmp(jobs[i].base, "-"))
			cli_usage_error("standard input needs -of BASE for its output files");
		if (!strcmp(jobs[i].path, "-") && ++n_stdin > 1)
			cli_usage_error("standard input (-) can be read only once");
		if (!strcmp(jobs[i].path, "-") && cli_isatty(stdin))
			cli_usage_error("FILE - reads standard input, which is a terminal; pipe audio into it");
		for (size_t k = 0; k < sizeof outs / sizeof *outs && !o_dl; k++) {
			int err = outs[k].on ? writable(jobs[i].base, outs[k].ext) : 0;
			if (err) {
				cli_error("%s.%s: cannot write: %s", jobs[i].base, outs[k].ext, strerror(err));
				free(jobs);
				return NULL;
			}
		}
	}
	return jobs;
}

/* the options' values that the table's ranges cannot check (usage errors
 * exit 2); the language's index into *lang_id (-1: auto) */
static void check_options(int n_files, int *lang_id)
{
	if (!o_threads_seen) {
		int c = cli_default_threads();
		o_threads = c < 4 ? c : 4;
	}
	if (!o_model)
		o_model = getenv("TERN_WHISPER_MODEL");
	if (!o_model || !*o_model)
		cli_usage_error("no model: give -m MODEL or set TERN_WHISPER_MODEL");
	if (n_files == 0)
		cli_usage_error("no input: give FILE arguments, -f FILE, or - to read standard input");
	if (o_of.n > n_files)
		cli_usage_error("%d -of names for %d files", o_of.n, n_files);
	if (!(o_tp >= 0 && o_tp <= 10) || !(o_tpi >= 0 && o_tpi <= 10) || !isfinite(o_et) || !isfinite(o_lpt) ||
	    !(o_nth >= 0 && o_nth <= 1) || !(o_crt >= 0 && o_crt <= 1000) || !(o_wt >= 0 && o_wt <= 1))
		cli_usage_error("a temperature outside 0..10, a threshold that is not a number, or -nth outside 0..1");
	if (!(o_vt >= 0 && o_vt <= 1) || !(o_vo >= 0 && o_vo <= 3600) || (o_vmsd_seen && !(o_vmsd >= 0)))
		cli_usage_error("a VAD threshold outside 0..1, or a negative VAD duration");
	if (o_vad && !o_vm)
		o_vm = getenv("TERN_VAD_MODEL");
	if (o_vad && (!o_vm || !*o_vm))
		cli_usage_error("--vad needs a Silero model: give -vm FILE or set TERN_VAD_MODEL");
	*lang_id = whisper_lang_find(o_lang);
	if (*lang_id < 0 && strcmp(o_lang, "auto"))
		cli_usage_error("unknown language '%s' (a code or a name such as en, de, french, or auto)", o_lang);
}

/* what every file is transcribed with */
struct engine {
	struct whisper_model *m;
	struct dev_ctx dev;
	struct whisper_full *w;
	struct tern_mel *mel;
	int32_t *prompt; /* --prompt's tokens */
	double t_load;	 /* ms */
};

static void engine_close(struct engine *en)
{
	free(en->prompt);
	tern_vad_free(vad);
	tern_silero_free(vad_model);
	tern_mel_free(en->mel);
	whisper_full_free(en->w);
	dev_close(&en->dev);
	whisper_model_free(en->m);
}

/* The model, the VAD model, the device, the transcriber and the
 * spectrogram's plan: 0, or the exit status after a message (the caller
 * closes en either way). */
static int engine_open(struct engine *en, int lang_id)
{
	double t0 = cli_now_ms();
	tern_err e = {0};
	int rc = whisper_model_load(&en->m, o_model, &e);
	if (rc)
		return cli_fail(o_model, rc, &e);
	model = en->m;
	model_path = o_model;
	if (o_dl && !en->m->ids.multilingual) {
		cli_error("%s is English-only: it has no languages to detect", o_model);
		return EXIT_USAGE;
	}
	if (o_vad && ((rc = tern_silero_load(&vad_model, o_vm, &e)) || (rc = tern_vad_new(&vad, vad_model, &e))))
		return cli_fail(o_vm, rc, &e);
	if (!en->m->ids.multilingual && ((lang_id != 0 && strcmp(o_lang, "auto")) || o_tr) && !common.quiet)
		cli_warn("%s is English-only: ignoring the language and translation options", o_model);
	/* the whole model on one device: Whisper is small beside a GPU's
	 * memory (the file and its encoder's activations, about as much) */
	struct tern_backend *be = NULL;
	struct tern_device_opts dopt = {.n_threads = (int)o_threads, .max_tokens = 512};
	struct stat st_model;
	uint64_t whole = stat(o_model, &st_model) == 0 ? 2 * (uint64_t)st_model.st_size : 0;
	rc = dev_open(&en->dev, NULL, NULL, &dopt, &e);
	if (!rc)
		rc = dev_whole(&en->dev, &common, whole, &be, &e);
	if (!rc)
		rc = whisper_full_new(&en->w, en->m, be, &e);
	if (rc && dev_whole_retry(&en->dev, rc, &be, &e))
		rc = whisper_full_new(&en->w, en->m, be, &e);
	if (!rc)
		rc = tern_mel_new(&en->mel, en->m->n_mel_filters, en->m->n_fft_bins, en->m->mel_filters, &e);
	if (rc)
		return cli_fail(o_model, rc, &e);
	en->t_load = cli_now_ms() - t0;
	if (common.verbose)
		fprintf(stderr, "%s: %s: %s model (%s), loaded in %.1f ms, %d threads\n", cli_progname(), o_model,
			whisper_model_size_name(en->m), en->m->ids.multilingual ? "multilingual" : "English-only",
			en->t_load, (int)o_threads);
	return 0;
}

/* the decoding's parameters from the options; --prompt tokenized into
 * en->prompt (0, or the exit status after a message) */
static int make_params(struct engine *en, int lang_id, struct whisper_full_params *p)
{
	const struct whisper_model *m = en->m;
	*p = whisper_full_default_params();
	p->beam_size = (int)o_bs;
	p->n_threads = (int)o_threads;
	p->best_of = (int)o_bo;
	p->temperature = (float)o_tp;
	p->temperature_inc = o_nf ? 0.0f : (float)o_tpi;
	p->entropy_thold = (float)o_et;
	p->logprob_thold = (float)o_lpt;
	p->no_speech_thold = (float)o_nth;
	p->compression_ratio_thold = (float)o_crt;
	p->no_timestamps = o_nt;
	p->translate = o_tr && m->ids.multilingual;
	p->lang_id = lang_id < 0 ? 0 : lang_id;
	if (o_mc >= 0)
		p->n_max_text_ctx = (int)o_mc;
	p->offset_cs = o_ot / 10;
	p->duration_cs = o_d / 10;
	/* token times: for -ojf, --json and the splitting of -ml */
	p->token_timestamps = o_ojf || o_json || o_ml > 0;
	p->thold_pt = (float)o_wt;
	p->max_len = (int)o_ml;
	p->split_on_word = o_sow;
	p->cancel = &interrupted;
	if (!o_prompt || !*o_prompt)
		return 0;
	tern_err e = {0};
	int rc = whisper_tokenize(m, o_prompt, &en->prompt, &p->n_prompt, &e);
	if (rc)
		return cli_fail(o_model, rc, &e);
	p->prompt = en->prompt;
	return 0;
}

/* --json: the document's head, before the files */
static void json_head(const struct engine *en, const struct whisper_full_params *p)
{
	const struct whisper_model *m = en->m;
	fputs("{\"model\": {\"path\": ", stdout);
	jstr(stdout, o_model);
	printf(", \"type\": \"%s\", \"multilingual\": %s, \"vocab\": %d},\n \"params\": {\"language\": ",
	       whisper_model_size_name(m), m->ids.multilingual ? "true" : "false", m->hp.n_vocab);
	jstr(stdout, o_lang);
	printf(", \"translate\": %s, \"timestamps\": %s, \"beam_size\": %d, \"best_of\": %d, "
	       "\"threads\": %d},\n \"load_ms\": %.3f,\n \"files\": [\n",
	       p->translate ? "true" : "false", o_nt ? "false" : "true", p->beam_size, p->best_of, (int)o_threads,
	       en->t_load);
}

/* Every file in turn; after Ctrl-C the file in progress keeps (and
 * writes) what it had, and the files after it are not started. The worst
 * status met. */
static int run_jobs(struct job *jobs, int n_files, struct engine *en, struct whisper_full_params *p)
{
	int worst = 0, n_run = 0;
	if (o_json)
		json_head(en, p);
	for (int i = 0; i < n_files && !interrupted; i++, n_run++) {
		struct job *j = &jobs[i];
		run_file(j, en->w, en->mel, p);
		if (j->status)
			cli_error("%s: %s", j->path, j->err);
		if (o_json) {
			write_json_file(stdout, j);
			fputs(i + 1 < n_files && !interrupted ? ",\n" : "\n", stdout);
		}
		worst = j->status > worst ? j->status : worst;
		whisper_result_free(&j->res);
		free(j->map);
	}
	if (o_json)
		fputs(" ]}\n", stdout);
	if (interrupted && n_run < n_files && !common.quiet)
		cli_warn("interrupted: %d of %d files not started", n_files - n_run, n_files);
	if (fflush(stdout) && !worst) {
		cli_error("cannot write standard output");
		worst = EXIT_RUNTIME;
	}
	return worst;
}

int main(int argc, char **argv)
{
	const char **pos;
	int npos, lang_id;
	cli_parse(&prog, argc, argv, &common, &pos, &npos);
	dev_opts_check(&common);
	int n_files = o_files.n + npos;
	check_options(n_files, &lang_id);
	const bool any_out = o_otxt || o_ovtt || o_osrt || o_ocsv || o_oj;
	struct job *jobs = make_jobs(pos, n_files, any_out);
	if (!jobs) {
		free(pos);
		return EXIT_RUNTIME;
	}
	/* A Ctrl-C from here on (SIGINT; also from `kill -INT`, in the
	 * background) is noted: the decoding stops before its next window or
	 * token, and the segments so far are printed and written. A second one
	 * kills at once (SA_RESETHAND). */
	struct sigaction sa = {0};
	sa.sa_handler = on_sigint;
	sa.sa_flags = SA_RESETHAND | SA_RESTART;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);

	struct engine en = {0};
	struct whisper_full_params p;
	show_progress = cli_isatty(stderr) && !common.quiet;
	int status = engine_open(&en, lang_id);
	if (!status)
		status = make_params(&en, lang_id, &p);
	if (!status)
		status = run_jobs(jobs, n_files, &en, &p);
	if (status == EXIT_OK && interrupted)
		status = EXIT_INTERRUPTED;
	engine_close(&en);
	free(jobs);
	free(pos);
	return status;
}
