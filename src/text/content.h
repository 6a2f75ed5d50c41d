/* Content classes of synthetic prompts: prose and source code.
 *
 * Latency depends on what a prompt holds (code tokenizes into more, shorter
 * tokens, and speculative decoding accepts more of it), so a workload can mix
 * classes (--mix code=0.3,text=0.7) and the report can break latency down per
 * class. This module parses the mix, picks a class per request and produces
 * each class's text deterministically from a seed.
 *
 * Every generated text is printable ASCII plus '\n' (no tabs, no other
 * control bytes, no non-ASCII) and never holds '<' unless followed by a
 * space, '=' or '<' (" < ", " <= ", " << "), so it cannot contain the
 * added-token strings of the common model families (all of the form "<|...",
 * "<｜...", "<think>", "</think>", "<s>", "</s>"); see docs/workloads.md. */
#ifndef INFERMETER_CONTENT_H
#define INFERMETER_CONTENT_H

#include <stddef.h>
#include <stdint.h>

#include "core/err.h"
#include "core/rng.h"
#include "text/textgen.h"

enum im_content { IM_CONTENT_TEXT, IM_CONTENT_CODE, IM_CONTENT_COUNT_ };

/* "text", "code"; "?" outside the enum. */
const char *im_content_name(enum im_content c);

/* Parses a class name ("text", also "prose"; "code"); IM_PARSE otherwise. */
enum im_err im_content_parse(const char *name, size_t len, enum im_content *out) IM_WUR;

/* Weights of the classes, summing to 1. */
struct im_mix {
  double weight[IM_CONTENT_COUNT_];
};

/* Parses "code=0.3,text=0.7": comma-separated class=weight parts in any
 * order; a weight is a finite decimal number >= 0; a class left out has
 * weight 0; at least one weight must be > 0; the weights are normalised to
 * sum 1. Spaces around names and numbers are allowed. Returns IM_OK, or
 * IM_PARSE (a part that is not class=number, an unknown class, a class given
 * twice, an empty spec; out unchanged) or IM_INVAL (a negative or non-finite
 * weight, all weights 0; out unchanged), with a message in err (errlen > 0)
 * naming the part at fault, e.g. "--mix: 'cod=0.3': unknown class 'cod'
 * (known: text, code)". */
enum im_err im_mix_parse(const char *spec, struct im_mix *out, char *err, size_t errlen) IM_WUR;

/* The class for u in [0, 1): the first class whose cumulative weight
 * exceeds u, in enum order; never a class of weight 0 (u outside [0, 1) is
 * clamped). */
enum im_content im_mix_pick(const struct im_mix *m, double u);

/* A deterministic text source for one class: successive pieces of text,
 * about one token each (a word with its leading space, a punctuation mark,
 * an indentation run, a newline). The same (class, seed) always gives the
 * same pieces. The first piece starts with a letter (no leading whitespace).
 * Prose comes from the text generator the simulated server also uses (text/textgen.h,
 * temperature 1, top_p 1); code from a generator of C-like and Python-like
 * functions in content.c. Caller-embedded; no resources to release. */
struct im_content_gen {
  enum im_content cls;
  struct im_rng rng;
  /* Private to content.c. */
  struct im_textgen prose_; /* prose */
  char line_[400];     /* code: the line being emitted */
  uint16_t ends_[128]; /* code: end offsets of its pieces */
  uint16_t n_pieces_, pos_;
  uint8_t lang_;  /* code: 0 C-like, 1 Python-like */
  uint8_t depth_; /* code: open blocks in the function */
  uint8_t state_; /* code: where in the function */
  uint16_t left_; /* code: statements left in the function */
  uint8_t first_; /* no piece emitted yet */
};

void im_content_gen_init(struct im_content_gen *g, enum im_content c, uint64_t seed);

/* Next piece (len >= 1), valid until the next call on g. */
void im_content_gen_next(struct im_content_gen *g, const char **piece, size_t *len);

#endif
