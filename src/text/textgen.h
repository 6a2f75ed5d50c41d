/* Generated output of the simulated model: its length and its text.
 *
 * Text is made of real vocabulary pieces (English words and subwords with
 * their leading spaces, punctuation, newlines; a code flavour for prompts
 * that look like code), drawn from a Zipf-like frequency. Low top_p makes
 * the output repetitive: the generator falls into loops that copy an
 * earlier span, so the 4-gram repetition rate (docs/metrics.md §7) exceeds 0.45
 * at top_p <= 0.3 and stays below 0.15 at top_p >= 0.9. Everything is
 * deterministic given the seed. */
#ifndef IM_SERVE_TEXTGEN_H
#define IM_SERVE_TEXTGEN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/rng.h"

/* Per-request generator state, embedded in the request. */
struct im_textgen {
  struct im_rng rng;
  double temperature;
  double top_p;
  bool code;            /* code flavour */
  uint32_t hist[64];    /* ring of the last generated piece indexes */
  uint32_t n_hist;
  int32_t loop_from;    /* >= 0 while copying an earlier span */
  uint32_t loop_left;
  /* Private to textgen.c. */
  double zipf_s;        /* Zipf exponent after temperature */
  double degenerate;    /* 0..1: how readily the output loops (from top_p) */
  uint16_t queue[64];   /* pieces of the sentence or code line being emitted */
  uint8_t q_len, q_pos;
  uint8_t indent;       /* code flavour: block depth */
  bool close_next;      /* code flavour: the next line closes a block */
};

/* How readily output loops under these sampling parameters, 0..1: 0 from
 * top_p >= 0.8 (and temperature >= 0.3), 1 at top_p <= 0.3; also rises as
 * temperature falls below 0.3 (greedy decoding). Out-of-range top_p counts
 * as 1.0 (no nucleus cut). */
double im_textgen_degeneracy(double temperature, double top_p);
/* The log-probabilities of the n most likely pieces of a typical word
 * class (256 words) under g's sampling law (Zipf-Mandelbrot, exponent from
 * the temperature, renormalised inside the top_p nucleus), most likely
 * first, into out[0..n): what a server would report as top_logprobs. Their
 * entropy grows with temperature. */
void im_textgen_top_logprobs(const struct im_textgen *g, uint32_t n, double *out);
/* Starts a generator. code selects the code flavour. */
void im_textgen_init(struct im_textgen *g, uint64_t seed, double temperature, double top_p,
                     bool code);
/* Next piece: returns its token id and sets *text and *len to static storage. */
uint32_t im_textgen_next(struct im_textgen *g, const char **text, size_t *len);

/* Number of distinct pieces, and the text of piece index (< the count) as
 * static storage; for tests and for tools that list the vocabulary. */
size_t im_textgen_vocab_size(void);
const char *im_textgen_piece(uint32_t index, size_t *len);

/* Output length without ignore_eos: log-normal whose mean is
 * mean_at_t1 * (0.5 + 0.5 * temperature) and whose sigma is
 * 0.4 + 0.3 * temperature, at least 1; capped at max_tokens, in which case
 * *capped is set (finish_reason "length"). max_tokens 0 means no cap;
 * capped may be NULL. */
uint32_t im_textgen_sample_len(struct im_rng *rng, double mean_at_t1, double temperature,
                               uint32_t max_tokens, bool *capped);

/* 1 - distinct 4-grams / total 4-grams of ids (0 when fewer than 4). */
double im_repetition_rate(const uint32_t *ids, size_t n);

/* Heuristic: does this prompt look like source code? (braces, semicolons,
 * keywords such as def/return/#include at line starts). */
bool im_text_looks_like_code(const char *text, size_t len);

#endif
