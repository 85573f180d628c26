/* vad.c - tern-vad: speech segments of audio files with Silero VAD.
 *
 * For each file: open it (lib/audio: any format libsndfile reads, mixed
 * down and converted to 16 kHz), feed it window by window (512 samples)
 * to the model, keep only the probabilities (4 bytes per 32 ms: memory
 * does not grow with the audio otherwise), turn them into segments
 * (whisper.cpp's algorithm, lib/speech/vad.h) and print them: plain lines,
 * CSV or one JSON document on stdout, and the files of -oj/-ocsv/-osrt.
 * With -t N, up to N files are processed at once; the output keeps the
 * order of the arguments. A file that fails is reported (one line on
 * stderr) and the others still run. */
#include <errno.h>
#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cmd/common/cli.h"
#include "lib/audio/audio.h"
#include "lib/speech/vad.h"

/* ---- options ----------------------------------------------------------- */

static const char *o_model;
static bool o_json, o_csv, o_probs, o_oj, o_ocsv, o_osrt, o_max_seen;
static struct cli_list o_of, o_files;
static int64_t o_threads = 1, o_min_speech = 250, o_min_silence = 100, o_pad = 30;
static double o_threshold = 0.5, o_max_speech = 0, o_overlap = 0.1;
static struct cli_common common;

static const struct cli_opt opts[] = {
	{.lng = "model", .shrt = 'm', .alias = "vm", .kind = CLI_FILE, .dst = &o_model, .arg = "FILE", .ext = "bin",
	 .help = "the Silero VAD model, whisper.cpp's ggml file (default: $TERN_VAD_MODEL)"},
	{.lng = "file", .shrt = 'f', .kind = CLI_LIST, .dst = &o_files, .arg = "FILE",
	 .help = "an input file, as whisper-cli spells it; these come before the FILE arguments"},
	{.lng = "json", .kind = CLI_FLAG, .dst = &o_json, .excludes = "csv",
	 .help = "print one JSON document: files, parameters, segments in seconds and samples, speech ratio, timings"},
	{.lng = "csv", .kind = CLI_FLAG, .dst = &o_csv, .help = "print CSV: a header, then file,start,end per segment"},
	{.lng = "probs", .kind = CLI_FLAG, .dst = &o_probs,
	 .help = "print each window's speech probability with its time instead of the segments (--json: both)"},
	{.lng = "output-file", .alias = "of", .kind = CLI_LIST, .dst = &o_of, .arg = "BASE",
	 .needs = "output-json|output-csv|output-srt",
	 .help = "base name of the -oj/-ocsv/-osrt files of the next FILE (default: FILE itself)"},
	{.lng = "output-json", .alias = "oj", .kind = CLI_FLAG, .dst = &o_oj,
	 .help = "also write BASE.json for each FILE (what --json prints for that file)"},
	{.lng = "output-csv", .alias = "ocsv", .kind = CLI_FLAG, .dst = &o_ocsv,
	 .help = "also write BASE.csv for each FILE"},
	{.lng = "output-srt", .alias = "osrt", .kind = CLI_FLAG, .dst = &o_osrt,
	 .help = "also write BASE.srt for each FILE: one subtitle cue per speech segment"},
	{.lng = "vad-threshold", .alias = "vt", .kind = CLI_FLOAT, .dst = &o_threshold, .arg = "X",
	 .help = "speech probability that starts a segment, 0..1 (default: 0.5; it ends below X - 0.15)"},
	{.lng = "vad-min-speech-duration-ms", .alias = "vspd", .kind = CLI_INT, .dst = &o_min_speech, .arg = "MS",
	 .min = 0, .max = INT32_MAX, .help = "drop segments shorter than this (default: 250)"},
	{.lng = "vad-min-silence-duration-ms", .alias = "vsd", .kind = CLI_INT, .dst = &o_min_silence, .arg = "MS",
	 .min = 0, .max = INT32_MAX, .help = "silence that ends a segment (default: 100)"},
	{.lng = "vad-max-speech-duration-s", .alias = "vmsd", .kind = CLI_FLOAT, .dst = &o_max_speech, .arg = "S",
	 .seen = &o_max_seen, .help = "cut segments longer than this, as whisper.cpp does (default: no limit)"},
	{.lng = "vad-speech-pad-ms", .alias = "vp", .kind = CLI_INT, .dst = &o_pad, .arg = "MS", .min = 0,
	 .max = INT32_MAX, .help = "widen each segment by this on both sides (default: 30)"},
	{.lng = "vad-samples-overlap", .alias = "vo", .kind = CLI_FLOAT, .dst = &o_overlap, .arg = "S",
	 .help = "overlap in seconds when segments are cut out for transcription; reported, not used here (default: 0.1)"},
	{.lng = "threads", .shrt = 't', .kind = CLI_INT, .dst = &o_threads, .arg = "N", .min = 1, .max = 256,
	 .help = "files processed at once (default: 1; the model runs one window after another)"},
	{0},
};

static const struct cli_section sections[] = {
	{"OUTPUT",
	 "Standard output carries only the result. By default one line per speech segment, its start and end in "
	 "seconds with millisecond precision:\n"
	 "\n"
	 "  0.320 --> 2.270\n"
	 "\n"
	 "With several FILEs each line starts with the file name and a colon (\"jfk.wav: 0.320 --> 2.270\"). "
	 "--csv prints a header line \"file,start,end\" then one line per segment (seconds; a file name with a "
	 "comma, a quote or a newline is quoted as RFC 4180 says). --probs prints, instead of the segments, one "
	 "line per 512-sample window (32 ms): its start time in seconds and the speech probability (\"0.032 "
	 "0.012345\"; with --csv: file,time,prob); with several files each file's block starts with a line "
	 "\"# FILE\" and blocks are separated by a blank line (gnuplot reads them as data sets).\n"
	 "\n"
	 "--json prints one document: \"model\" (path), \"model_version\", \"parameters\" (threshold, "
	 "min_speech_duration_ms, min_silence_duration_ms, max_speech_duration_s (null: no limit), speech_pad_ms, "
	 "samples_overlap), \"sample_rate\" (16000), \"window\" (512) and \"files\": per file \"file\", \"format\", "
	 "\"source_rate\", \"channels\", \"samples\" (at 16 kHz), \"duration\" (seconds), \"windows\", \"speech\" "
	 "(seconds in segments), \"speech_ratio\" (speech over duration, 4 decimals), \"segments\": [{\"start\", \"end\" "
	 "(seconds), \"start_sample\", \"end_sample\" (16 kHz, end exclusive)}], \"timings\": {\"decode_ms\", "
	 "\"vad_ms\"} and with --probs \"probs\" (one per window). A file that failed has \"file\" and \"error\" "
	 "only.\n"
	 "\n"
	 "-oj, -ocsv and -osrt write BASE.json, BASE.csv and BASE.srt for each FILE as whisper-cli does: BASE is "
	 "the file's own name (jfk.wav gives jfk.wav.json) unless -of BASE is given; -of may be repeated, the "
	 "first for the first FILE and so on. Standard input (-) needs an -of. The SRT has one cue per segment, "
	 "with the text \"[speech]\". stdout still gets the result.\n"
	 "\n"
	 "Segments are whisper.cpp's (whisper_vad_segments_from_probs): speech starts where a window's "
	 "probability reaches the threshold and ends after --vad-min-silence-duration-ms below threshold - 0.15; "
	 "shorter segments than the minimum are dropped, longer than the maximum are split, each is widened by "
	 "the padding. Times are samples at 16 kHz (a segment never ends past the audio). whisper.cpp reports the "
	 "same segments in centiseconds.\n"
	 "\n"
	 "Standard error: errors, warnings, and with -v per file the format, the duration, the segment count, "
	 "the decoding and model times and the real-time factor (processing time over audio duration)."},
	{"INPUT",
	 "Any file libsndfile reads: WAV (8, 16, 24, 32-bit integer, float, u-law, A-law, ADPCM), FLAC, "
	 "Ogg/Vorbis, Ogg/Opus, MP3, AIFF and more. Channels are averaged; other rates are converted to 16 kHz "
	 "with libsamplerate (best quality). FILE - reads standard input (read whole first: into memory up to 8 "
	 "MiB, into a temporary file beyond). The audio is read in blocks: memory does not grow with the length "
	 "of the file except for the probabilities (4 bytes per 32 ms, 450 KB per hour)."},
	{"EXIT STATUS",
	 "0 success; 1 runtime error (the model or a FILE cannot be opened or read, an output file cannot be "
	 "written); 2 usage error (unknown option, a value out of range: a threshold outside 0..1, a negative "
	 "duration, NaN; no model; no FILE); 65 a FILE is not audio libsndfile can decode, is empty or has an "
	 "absurd header, or the model file is not a Silero model. With several FILEs every file is tried and "
	 "the status is the worst one met. Errors are one line on stderr: tern-vad: FILE: what is wrong. A "
	 "closed standard output (tern-vad ... | head -1) ends the run quietly with status 0."},
	{"ENVIRONMENT", "TERN_VAD_MODEL: the model when -m is not given."},
	{"EXAMPLES",
	 "  tern-vad -m silero-v6.2.0-ggml.bin jfk.wav\n"
	 "  export TERN_VAD_MODEL=silero-v6.2.0-ggml.bin; tern-vad --json talk.flac > talk.json\n"
	 "  tern-vad -vt 0.6 -vsd 300 -osrt -of talk talk.ogg\n"
	 "  tern-vad --probs jfk.wav > probs.txt; gnuplot -e \"plot 'probs.txt' with lines\" -p\n"
	 "  ffmpeg -i video.mkv -f wav - | tern-vad -\n"
	 "  tern-vad --csv -t 4 *.mp3"},
	{NULL, NULL},
};

static const struct cli_prog prog = {
	.name = "vad",
	.summary = "find the speech in audio files (Silero voice activity detection)",
	.usage = "[-m MODEL] [OPTIONS] FILE...",
	.description =
		"tern-vad runs the Silero voice activity detector over audio files and prints where speech is: "
		"one start --> end line per segment, CSV, the per-window probabilities, or JSON, and optionally "
		"SRT, CSV and JSON files beside the input as whisper-cli writes them. It computes what whisper.cpp's "
		"VAD computes (the same model file, windows, probabilities and segments); the segment options are "
		"spelt as whisper-cli's.",
	.opts = opts,
	.pos_name = "FILE",
	.pos_ext = "wav|flac|ogg|opus|mp3|aiff|au",
	.min_pos = 0,
	.max_pos = -1,
	.sections = sections,
};

/* ---- helpers ------------------------------------------------------------- */

/* Milliseconds of a sample position, rounded half up. */
static int64_t ms_of(int64_t samples)
{
	return (samples * 1000 + TERN_VAD_RATE / 2) / TERN_VAD_RATE;
}

/* "12.345" for a sample position. */
static void put_secs(FILE *f, int64_t samples)
{
	int64_t ms = ms_of(samples);
	fprintf(f, "%" PRId64 ".%03" PRId64, ms / 1000, ms % 1000);
}

static void csv_field(FILE *f, const char *s)
{
	if (!strpbrk(s, ",\"\r\n")) {
		fputs(s, f);
		return;
	}
	fputc('"', f);
	for (; *s; s++) {
		if (*s == '"')
			fputc('"', f);
		fputc(*s, f);
	}
	fputc('"', f);
}

/* ---- one file ------------------------------------------------------------- */

struct result {
	const char *path;
	int status;     /* exit status of this file: 0, 1 or 65 */
	char err[TERN_ERR_MSG_MAX + 64];
	struct tern_audio_info info;
	int64_t n_samples; /* at 16 kHz */
	float *probs;   /* [n_probs] */
	size_t n_probs;
	struct tern_vad_segment *segs; /* [n_segs] */
	size_t n_segs;
	double decode_ms, vad_ms;
};

static const struct tern_silero *model;
static struct tern_vad_params params;

static int fail(struct result *r, int code, const tern_err *e)
{
	r->status = cli_exit_status(code);
	snprintf(r->err, sizeof r->err, "%s", e->msg);
	return r->status;
}

/* Decode r->path window by window through v; keep the probabilities. */
static void process(struct result *r, struct tern_vad *v)
{
	tern_err e = {0};
	struct tern_audio *a;
	double t0 = cli_now_ms();
	int rc = tern_audio_open(&a, r->path, TERN_VAD_RATE, &e);
	r->decode_ms += cli_now_ms() - t0;
	if (rc) {
		fail(r, rc, &e);
		return;
	}
	r->info = *tern_audio_info(a);
	tern_vad_reset(v);
	size_t cap = 0;
	float win[TERN_VAD_WINDOW];
	for (;;) {
		size_t got;
		double t1 = cli_now_ms();
		rc = tern_audio_read(a, win, TERN_VAD_WINDOW, &got, &e);
		double t2 = cli_now_ms();
		r->decode_ms += t2 - t1;
		if (rc || got == 0)
			break;
		r->n_samples += (int64_t)got;
		if (got < TERN_VAD_WINDOW) /* the last window, zero-padded as whisper.cpp does */
			memset(win + got, 0, (TERN_VAD_WINDOW - got) * sizeof *win);
		if (r->n_probs == cap) {
			size_t ncap = cap ? cap * 2 : 1024;
			float *p = realloc(r->probs, ncap * sizeof *p);
			if (!p) {
				rc = tern_errf(&e, TERN_ENOMEM, "out of memory for %zu probabilities", ncap);
				break;
			}
			r->probs = p, cap = ncap;
		}
		r->probs[r->n_probs++] = tern_vad_window(v, win);
		r->vad_ms += cli_now_ms() - t2;
		if (got < TERN_VAD_WINDOW)
			break;
	}
	tern_audio_close(a);
	if (rc) {
		fail(r, rc, &e);
		return;
	}
	double t3 = cli_now_ms();
	rc = tern_vad_segments(r->probs, r->n_probs, (size_t)r->n_samples, &params, &r->segs, &r->n_segs, &e);
	r->vad_ms += cli_now_ms() - t3;
	if (rc) {
		fail(r, rc, &e);
		return;
	}
	/* whisper.cpp measures the audio in whole windows: a segment that runs
	 * to the end may end in the zero padding; it ends with the audio here */
	for (size_t i = 0; i < r->n_segs; i++) {
		if (r->segs[i].end > r->n_samples)
			r->segs[i].end = r->n_samples;
		if (r->segs[i].start > r->segs[i].end)
			r->segs[i].start = r->segs[i].end;
	}
}

static int64_t speech_samples(const struct result *r)
{
	int64_t s = 0;
	for (size_t i = 0; i < r->n_segs; i++)
		s += r->segs[i].end - r->segs[i].start;
	return s;
}

/* ---- writers -------------------------------------------------------------- */

static void write_text(FILE *f, const struct result *r, bool name)
{
	if (o_probs) {
		if (name)
			fprintf(f, "# %s\n", r->path);
		for (size_t i = 0; i < r->n_probs; i++) {
			put_secs(f, (int64_t)i * TERN_VAD_WINDOW);
			fprintf(f, " %.6f\n", r->probs[i]);
		}
		return;
	}
	for (size_t i = 0; i < r->n_segs; i++) {
		if (name)
			fprintf(f, "%s: ", r->path);
		put_secs(f, r->segs[i].start);
		fputs(" --> ", f);
		put_secs(f, r->segs[i].end);
		fputc('\n', f);
	}
}

static void write_csv(FILE *f, const struct result *r)
{
	if (o_probs) {
		for (size_t i = 0; i < r->n_probs; i++) {
			csv_field(f, r->path);
			fputc(',', f);
			put_secs(f, (int64_t)i * TERN_VAD_WINDOW);
			fprintf(f, ",%.6f\n", r->probs[i]);
		}
		return;
	}
	for (size_t i = 0; i < r->n_segs; i++) {
		csv_field(f, r->path);
		fputc(',', f);
		put_secs(f, r->segs[i].start);
		fputc(',', f);
		put_secs(f, r->segs[i].end);
		fputc('\n', f);
	}
}

static void csv_header(FILE *f)
{
	fputs(o_probs ? "file,time,prob\n" : "file,start,end\n", f);
}

static void json_secs(FILE *f, int64_t samples)
{
	put_secs(f, samples);
}

static void write_json_file(FILE *f, const struct result *r)
{
	fputs("    {\"file\": ", f);
	cli_json_str(f, r->path, strlen(r->path));
	if (r->status) {
		fputs(", \"error\": ", f);
		cli_json_str(f, r->err, strlen(r->err));
		fputs("}", f);
		return;
	}
	fputs(", \"format\": ", f);
	cli_json_str(f, r->info.format, strlen(r->info.format));
	fprintf(f, ", \"source_rate\": %d, \"channels\": %d, \"samples\": %" PRId64 ", \"duration\": ", r->info.src_rate,
		r->info.src_channels, r->n_samples);
	json_secs(f, r->n_samples);
	int64_t sp = speech_samples(r);
	fprintf(f, ", \"windows\": %zu, \"speech\": ", r->n_probs);
	json_secs(f, sp);
	/* four decimals, as the seconds beside it have three: a share to
	 * 0.01%, not 17 digits */
	fprintf(f, ", \"speech_ratio\": %.4f", r->n_samples ? (double)sp / (double)r->n_samples : 0.0);
	fputs(",\n     \"segments\": [", f);
	for (size_t i = 0; i < r->n_segs; i++) {
		fputs(i ? ",\n       {\"start\": " : "\n       {\"start\": ", f);
		json_secs(f, r->segs[i].start);
		fputs(", \"end\": ", f);
		json_secs(f, r->segs[i].end);
		fprintf(f, ", \"start_sample\": %" PRId64 ", \"end_sample\": %" PRId64 "}", r->segs[i].start, r->segs[i].end);
	}
	fputs(r->n_segs ? "\n     ],\n" : "],\n", f);
	fprintf(f, "     \"timings\": {\"decode_ms\": %.3f, \"vad_ms\": %.3f}", r->decode_ms, r->vad_ms);
	if (o_probs) {
		fputs(",\n     \"probs\": [", f);
		for (size_t i = 0; i < r->n_probs; i++) {
			if (i)
				fputs(i % 8 ? ", " : ",\n       ", f);
			cli_json_f32(f, r->probs[i]);
		}
		fputs("]", f);
	}
	fputs("}", f);
}

static void json_head(FILE *f, const char *model_path)
{
	fputs("{\"model\": ", f);
	cli_json_str(f, model_path, strlen(model_path));
	fputs(", \"model_version\": ", f);
	const char *ver = tern_silero_version(model);
	cli_json_str(f, ver, strlen(ver));
	fputs(",\n \"parameters\": {\"threshold\": ", f);
	cli_json_f32(f, params.threshold);
	fprintf(f, ", \"min_speech_duration_ms\": %d, \"min_silence_duration_ms\": %d, \"max_speech_duration_s\": ",
		(int)params.min_speech_ms, (int)params.min_silence_ms);
	if (o_max_seen)
		cli_json_f32(f, params.max_speech_s);
	else
		fputs("null", f);
	fprintf(f, ", \"speech_pad_ms\": %d, \"samples_overlap\": ", (int)params.speech_pad_ms);
	cli_json_f32(f, params.samples_overlap);
	fprintf(f, "},\n \"sample_rate\": %d, \"window\": %d,\n \"files\": [\n", TERN_VAD_RATE, TERN_VAD_WINDOW);
}

static void json_tail(FILE *f)
{
	fputs("\n ]}\n", f);
}

static void write_srt(FILE *f, const struct result *r)
{
	for (size_t i = 0; i < r->n_segs; i++) {
		int64_t t[2] = {ms_of(r->segs[i].start), ms_of(r->segs[i].end)};
		fprintf(f, "%zu\n", i + 1);
		for (int k = 0; k < 2; k++)
			fprintf(f, "%02" PRId64 ":%02" PRId64 ":%02" PRId64 ",%03" PRId64 "%s", t[k] / 3600000,
				t[k] / 60000 % 60, t[k] / 1000 % 60, t[k] % 1000, k ? "\n" : " --> ");
		fputs("[speech]\n\n", f);
	}
}

/* -oj/-ocsv/-osrt for one file; 0 or EXIT_RUNTIME (reported). */
static int write_outputs(const struct result *r, const char *base, const char *model_path)
{
	const struct {
		bool on;
		const char *ext;
	} outs[] = {{o_oj, "json"}, {o_ocsv, "csv"}, {o_osrt, "srt"}};
	int status = 0;
	for (int k = 0; k < 3; k++) {
		if (!outs[k].on)
			continue;
		char path[4096];
		if ((size_t)snprintf(path, sizeof path, "%s.%s", base, outs[k].ext) >= sizeof path) {
			cli_error("%s: the output name is too long", base);
			status = EXIT_RUNTIME;
			continue;
		}
		FILE *f = fopen(path, "w");
		if (!f) {
			cli_error("%s: cannot create: %s", path, strerror(errno));
			status = EXIT_RUNTIME;
			continue;
		}
		if (k == 0) {
			json_head(f, model_path);
			write_json_file(f, r);
			json_tail(f);
		} else if (k == 1) {
			csv_header(f);
			write_csv(f, r);
		} else {
			write_srt(f, r);
		}
		bool bad = ferror(f);
		if (fclose(f) != 0 || bad) {
			cli_error("%s: cannot write: %s", path, strerror(errno));
			status = EXIT_RUNTIME;
		}
	}
	return status;
}

/* ---- files in parallel ------------------------------------------------------ */

/* Workers take files in order; the main thread prints each as soon as it
 * and every file before it are done. */
struct pool {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct result *res;
	bool *done;
	int n, next;
	int err; /* a worker could not start its model state */
	char errmsg[TERN_ERR_MSG_MAX];
};

static void *worker(void *arg)
{
	struct pool *p = arg;
	struct tern_vad *v = NULL;
	tern_err e = {0};
	if (tern_vad_new(&v, model, &e)) {
		pthread_mutex_lock(&p->mu);
		p->err = e.code;
		snprintf(p->errmsg, sizeof p->errmsg, "%s", e.msg);
	} else {
		pthread_mutex_lock(&p->mu);
	}
	for (;;) {
		if (p->next >= p->n)
			break;
		int i = p->next++;
		pthread_mutex_unlock(&p->mu);
		if (v)
			process(&p->res[i], v);
		else
			snprintf(p->res[i].err, sizeof p->res[i].err, "%s", p->errmsg), p->res[i].status = EXIT_RUNTIME;
		pthread_mutex_lock(&p->mu);
		p->done[i] = true;
		pthread_cond_broadcast(&p->cv);
	}
	pthread_mutex_unlock(&p->mu);
	tern_vad_free(v);
	return NULL;
}

/* ---- main ------------------------------------------------------------------ */

static void verbose_line(const struct result *r)
{
	if (!common.verbose || common.quiet || r->status)
		return;
	double dur = (double)r->n_samples / TERN_VAD_RATE, t = (r->decode_ms + r->vad_ms) / 1e3;
	int64_t sp = speech_samples(r);
	fprintf(stderr,
		"%s: %s: %.3f s of audio (%s, %d Hz, %d channel%s): %zu segment%s, %.3f s of speech (%.1f%%); "
		"decode %.1f ms, vad %.1f ms, RTF %.4f\n",
		cli_progname(), r->path, dur, r->info.format, r->info.src_rate, r->info.src_channels,
		r->info.src_channels == 1 ? "" : "s", r->n_segs, r->n_segs == 1 ? "" : "s", (double)sp / TERN_VAD_RATE,
		dur > 0 ? 100.0 * (double)sp / (double)r->n_samples : 0.0, r->decode_ms, r->vad_ms, dur > 0 ? t / dur : 0);
}

static void check_options(int npos, const char **pos)
{
	if (!isfinite(o_threshold) || o_threshold < 0 || o_threshold > 1)
		cli_usage_error("option '--vad-threshold': %g is not in 0..1", o_threshold);
	if (o_max_seen && (!isfinite(o_max_speech) || o_max_speech <= 0))
		cli_usage_error("option '--vad-max-speech-duration-s': %g is not a positive number of seconds", o_max_speech);
	if (!isfinite(o_overlap) || o_overlap < 0)
		cli_usage_error("option '--vad-samples-overlap': %g is not a number of seconds (0 or more)", o_overlap);
	if (o_of.n > npos)
		cli_usage_error("%d -of names for %d FILEs", o_of.n, npos);
	int stdin_uses = 0;
	for (int i = 0; i < npos; i++) {
		if (strcmp(pos[i], "-") != 0)
			continue;
		if (++stdin_uses > 1)
			cli_usage_error("standard input (-) can be read only once");
		if ((o_oj || o_ocsv || o_osrt) && i >= o_of.n)
			cli_usage_error("FILE - (standard input) has no name for -oj/-ocsv/-osrt: give it an -of BASE");
		if (cli_isatty(stdin))
			cli_usage_error("FILE - reads standard input, which is a terminal; pipe audio into it");
	}
	tern_vad_params_default(&params);
	params.threshold = (float)o_threshold;
	params.min_speech_ms = (int32_t)o_min_speech;
	params.min_silence_ms = (int32_t)o_min_silence;
	params.max_speech_s = o_max_seen ? (float)o_max_speech : FLT_MAX;
	params.speech_pad_ms = (int32_t)o_pad;
	params.samples_overlap = (float)o_overlap;
}

/* the inputs: -f FILE ones, then the FILE arguments; NULL: out of memory */
static const char **gather_inputs(const char **args, int nargs, int *npos)
{
	*npos = o_files.n + nargs;
	const char **pos = calloc((size_t)*npos + 1, sizeof *pos);
	if (!pos)
		return NULL;
	for (int i = 0; i < o_files.n; i++)
		pos[i] = o_files.v[i];
	for (int i = 0; i < nargs; i++)
		pos[o_files.n + i] = args[i];
	return pos;
}

static const char *model_path_or_exit(void)
{
	const char *model_path = o_model;
	if (!model_path) {
		const char *env = getenv("TERN_VAD_MODEL");
		model_path = env && *env ? env : NULL;
	}
	if (!model_path)
		cli_usage_error("no model: give -m FILE or set TERN_VAD_MODEL");
	return model_path;
}

/* What main has printed so far, and how it went. */
struct printer {
	const char *model_path;
	bool several, pipe_closed;
	int write_err; /* errno of a failed write to stdout */
	int status;    /* the exit status so far */
};

/* File i's result on stdout, in the format asked, as long as stdout takes it. */
static void print_stdout(struct printer *pr, const struct result *r, int i, int npos)
{
	if (pr->pipe_closed || pr->write_err) {
		/* nothing more can be printed */
	} else if (o_json) {
		if (i)
			fputs(",\n", stdout);
		write_json_file(stdout, r);
	} else if (!r->status) {
		if (o_csv)
			write_csv(stdout, r);
		else {
			if (o_probs && pr->several && i)
				fputc('\n', stdout);
			write_text(stdout, r, pr->several);
		}
	}
	if (i + 1 == npos && o_json && !pr->pipe_closed && !pr->write_err)
		json_tail(stdout);
}

/* File i, once its worker is done: its error or its files and verbose
 * line, then its part of stdout; its results freed. */
static void report(struct pool *p, struct printer *pr, int i)
{
	pthread_mutex_lock(&p->mu);
	while (!p->done[i])
		pthread_cond_wait(&p->cv, &p->mu);
	pthread_mutex_unlock(&p->mu);
	struct result *r = &p->res[i];
	if (r->status) {
		cli_error("%s: %s", r->path, r->err);
		pr->status = r->status > pr->status ? r->status : pr->status;
	} else {
		verbose_line(r);
		const char *base = i < o_of.n ? o_of.v[i] : r->path;
		int st = write_outputs(r, base, pr->model_path);
		pr->status = st > pr->status ? st : pr->status;
	}
	print_stdout(pr, r, i, p->n);
	errno = 0;
	if (!pr->pipe_closed && !pr->write_err && (fflush(stdout) != 0 || ferror(stdout))) {
		if (errno == EPIPE) {
			/* the reader went away (| head): stop quietly, start no more files */
			pr->pipe_closed = true;
			pthread_mutex_lock(&p->mu);
			p->next = p->n;
			pthread_mutex_unlock(&p->mu);
		} else {
			pr->write_err = errno ? errno : EIO;
		}
	}
	free(r->probs);
	free(r->segs);
	r->probs = NULL, r->segs = NULL;
}

int main(int argc, char **argv)
{
	const char **args;
	int nargs, npos;
	cli_parse(&prog, argc, argv, &common, &args, &nargs);
	const char **pos = gather_inputs(args, nargs, &npos);
	if (!pos) {
		cli_error("out of memory");
		return EXIT_RUNTIME;
	}
	free(args);
	if (npos == 0)
		cli_usage_error("no FILE: give the audio files to read (- for standard input)");
	check_options(npos, pos);
	const char *model_path = model_path_or_exit();
	/* a closed stdout shows as EPIPE from the writes, not as a signal */
	signal(SIGPIPE, SIG_IGN);

	tern_err e = {0};
	struct tern_silero *m;
	int rc = tern_silero_load(&m, model_path, &e);
	if (rc) {
		free(pos);
		return cli_fail(model_path, rc, &e);
	}
	model = m;

	struct pool p = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER, .n = npos};
	p.res = calloc((size_t)npos, sizeof *p.res);
	p.done = calloc((size_t)npos, sizeof *p.done);
	if (!p.res || !p.done) {
		cli_error("out of memory");
		return EXIT_RUNTIME;
	}
	for (int i = 0; i < npos; i++)
		p.res[i].path = pos[i];
	int nt = (int)o_threads < npos ? (int)o_threads : npos;
	pthread_t th[256];
	int started = 0;
	for (int i = 0; i < nt; i++)
		if (pthread_create(&th[started], NULL, worker, &p) == 0)
			started++;
	if (started == 0)
		worker(&p); /* no thread could start: this one does the work */

	struct printer pr = {.model_path = model_path, .several = npos > 1};
	if (o_json)
		json_head(stdout, model_path);
	else if (o_csv)
		csv_header(stdout);
	for (int i = 0; i < npos && !pr.pipe_closed; i++)
		report(&p, &pr, i);
	for (int i = 0; i < started; i++)
		pthread_join(th[i], NULL);
	for (int i = 0; i < npos; i++)
		free(p.res[i].probs), free(p.res[i].segs);
	if (pr.write_err) {
		cli_error("cannot write to standard output: %s", strerror(pr.write_err));
		pr.status = pr.status > EXIT_RUNTIME ? pr.status : EXIT_RUNTIME;
	}
	tern_silero_free(m);
	free(p.res);
	free(p.done);
	free(pos);
	return pr.status;
}
