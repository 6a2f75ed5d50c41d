/* See proto/oai_logprobs.h. */
#include "proto/oai_logprobs.h"

#include <jansson.h>
#include <math.h>
#include <stdbool.h>

/* The entropy of the alternatives being summed: sum of p and of p ln p. */
struct acc {
  double p, plp;
  unsigned n;
};

/* One logprob; what is not a number is skipped, a positive one (a broken
 * server) counts as p = 1. */
static void add(struct acc *a, const json_t *lp) {
  if (!json_is_number(lp))
    return;
  double l = json_number_value(lp);
  if (!(l < 0.0))
    l = 0.0;
  double p = exp(l);
  a->p += p;
  a->plp += p * l;
  a->n++;
}

/* H of the alternatives renormalised to sum 1: with q = p / P,
 * -sum q ln q = ln P - (sum p ln p) / P. */
static bool entropy(const struct acc *a, double *h) {
  if (!a->n || !(a->p > 0.0))
    return false;
  double v = log(a->p) - a->plp / a->p;
  *h = v > 0.0 ? v : 0.0; /* rounding below 0 for one alternative */
  return true;
}

enum im_err im_oai_logprobs_entropy(const char *json, size_t len, double *h_sum, uint32_t *n) {
  json_t *o = json_loadb(json, len, 0, NULL);
  if (!json_is_object(o)) {
    json_decref(o);
    return IM_PARSE;
  }
  const json_t *content = json_object_get(o, "content");
  const json_t *top = json_object_get(o, "top_logprobs");
  size_t i;
  const json_t *tok;
  if (json_is_array(content)) {
    json_array_foreach(content, i, tok) {
      const json_t *alts = json_object_get(tok, "top_logprobs");
      if (!json_is_array(alts) || !json_array_size(alts))
        continue;
      struct acc a = {0};
      size_t j;
      const json_t *alt;
      json_array_foreach(alts, j, alt) add(&a, json_object_get(alt, "logprob"));
      double h;
      if (entropy(&a, &h))
        *h_sum += h, (*n)++;
    }
  } else if (json_is_array(top)) {
    json_array_foreach(top, i, tok) {
      if (!json_is_object(tok) || !json_object_size(tok))
        continue;
      struct acc a = {0};
      const char *k;
      const json_t *lp;
      json_object_foreach((json_t *)tok, k, lp) add(&a, lp);
      (void)k;
      double h;
      if (entropy(&a, &h))
        *h_sum += h, (*n)++;
    }
  }
  json_decref(o);
  return IM_OK;
}
