/* generate.h - the generation loop shared by tern-run and tern-chat:
 * feed a prompt, then sample, stream and stop.
 *
 * Stops (finish reasons as llama.cpp's server names them):
 *   "stop"    an end-of-generation token of the vocabulary (never
 *             printed; ignore_eos turns this off), or one of the stop
 *             strings (matched across token boundaries; neither it nor
 *             anything after it is printed);
 *   "length"  n_predict tokens generated, or the context is full;
 *   "cancel"  *cancel became nonzero (Ctrl-C) or the text callback
 *             asked to stop (a closed pipe).
 *
 * Streaming: text reaches the callback as soon as it is final: never a
 * part of a UTF-8 character (tok_stream holds incomplete sequences back)
 * and never a part that may still turn out to begin a stop string (held
 * back until it cannot). When the loop ends, what is held is released
 * (minus a matched stop string).
 *
 * The prompt tokens are appended to the llm's sequence at its n_past (a
 * chat passes only the new turn's tokens); the prompt and the generated
 * tokens are pushed into the sampler's penalty window. Prompt tokens go
 * through the model n_batch at a time (the llm cuts those into its
 * n_ubatch), *cancel being checked between batches.
 *
 * No allocation per token: tern_gen_new sizes everything. */
#ifndef TERN_GENERATE_H
#define TERN_GENERATE_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/core/error.h"
#include "lib/llm/llm.h"
#include "lib/llm/sample.h"
#include "tokenizer/tok.h"

#define TERN_GEN_MAX_STOP 16       /* stop strings */
#define TERN_GEN_MAX_STOP_LEN 256  /* bytes of one stop string */
#define TERN_GEN_MAX_LOGPROBS 100  /* alternatives per token */

enum tern_finish {
	TERN_FINISH_NONE,   /* not finished (internal) */
	TERN_FINISH_STOP,   /* end-of-generation token or stop string */
	TERN_FINISH_LENGTH, /* n_predict reached or context full */
	TERN_FINISH_CANCEL, /* *cancel or the callback */
};
const char *tern_finish_name(enum tern_finish f); /* "stop", "length", "cancel" */

struct tern_gen_opts {
	int32_t n_predict;             /* tokens to generate at most (0: only feed the prompt); < 0: until a stop or a full context */
	int32_t n_batch;               /* prompt tokens per decode call; <= 0: 512 */
	bool ignore_eos;               /* end-of-generation tokens are never sampled (their logits -inf, as llama.cpp) */
	const char *const *stop;       /* n_stop stop strings (non-empty, <= TERN_GEN_MAX_STOP_LEN bytes) */
	int n_stop;                    /* 0..TERN_GEN_MAX_STOP */
	int32_t n_logprobs;            /* 0: no per-token report; N > 0: token_cb gets the top N alternatives */
	bool print_special;            /* control tokens (other than the EOG that stops) are printed as their text */
	volatile sig_atomic_t *cancel; /* may be NULL */
};

struct tern_gen_alt {
	int32_t id;
	float logprob; /* log-softmax of the raw logits */
};

/* One generated token, for --logprobs. */
struct tern_gen_token {
	int32_t id;
	float logprob;                   /* of the chosen token, log-softmax of the raw logits */
	const struct tern_gen_alt *top;  /* n_top best by logprob, highest first, ties to the lower id */
	int32_t n_top;
	const char *piece;               /* the token's bytes (tok_token_bytes), not terminated */
	size_t piece_len;
};

struct tern_gen_cb {
	/* Final text, len > 0 bytes of whole UTF-8 characters. Return
	 * nonzero to stop (finish "cancel"). May be NULL. */
	int (*text)(void *ud, const char *s, size_t len);
	/* Every generated token that is kept (not the stopping EOG), in
	 * order, when n_logprobs > 0. May be NULL. */
	void (*token)(void *ud, const struct tern_gen_token *t);
	void *ud;
};

struct tern_gen_stats {
	enum tern_finish finish;
	int32_t n_prompt;  /* prompt tokens fed */
	int32_t n_gen;     /* tokens generated (the stopping EOG included, as llama.cpp counts) */
	double prompt_ms;  /* feeding the prompt, up to its logits */
	double gen_ms;     /* the rest: sampling and decoding the generated tokens */
};

struct tern_gen;

/* A generator for llm (borrowed), vocabulary v (borrowed) and sampler s
 * (borrowed). Errors: TERN_EINVAL for bad options (too many or too long
 * stop strings, n_logprobs out of range). */
int tern_gen_new(struct tern_gen **out, struct tern_llm *llm, const tok_vocab *v, struct tern_sampler *s,
		 const struct tern_gen_opts *o, tern_err *e);
void tern_gen_free(struct tern_gen *g);

/* Feed prompt[n_prompt] (n_prompt >= 1 unless the llm already holds a
 * sequence whose last logits are current) and generate. Errors: TERN_ERANGE
 * when the prompt does not fit the context ("prompt of N tokens does not
 * fit the context of M"), what decoding reports. *st is filled in every
 * case (finish NONE on error). */
int tern_gen_run(struct tern_gen *g, const int32_t *prompt, int32_t n_prompt, const struct tern_gen_cb *cb,
		 struct tern_gen_stats *st, tern_err *e);

#endif
