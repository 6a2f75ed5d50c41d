/* Output entropy from the log-probabilities a server streams (--logprobs N,
 * docs/metrics.md §7): for each generated token with alternatives listed,
 * the entropy of the listed alternatives renormalised to sum 1,
 * H = -sum q_i ln q_i with q_i = p_i / sum_j p_j, p_i = exp(logprob_i), in
 * nats. The mass outside the top N is not known; renormalising keeps H
 * between 0 (one alternative holds all) and ln N (all equally likely), rising
 * as sampling flattens (higher temperature). Comparable only at equal N.
 *
 * Shapes read (OpenAI's API, as vLLM, SGLang and llama.cpp stream it):
 *   chat:        {"content": [{"token", "logprob", "top_logprobs": [{"token",
 *                "logprob"}, ...]}, ...]}
 *   completions: {"top_logprobs": [{"<token>": logprob, ...}, ...], ...}
 * Tokens without alternatives are skipped; anything else is ignored. Parsed
 * with jansson: this runs only when --logprobs asked for them. */
#ifndef IM_PROTO_OAI_LOGPROBS_H
#define IM_PROTO_OAI_LOGPROBS_H

#include <stddef.h>
#include <stdint.h>

#include "core/err.h"

/* Adds the entropy of each token of the choice's "logprobs" object (raw
 * JSON, json[0..len)) to *h_sum and counts it in *n. IM_PARSE when json is
 * not a JSON object (nothing added). */
enum im_err im_oai_logprobs_entropy(const char *json, size_t len, double *h_sum,
                                    uint32_t *n) IM_WUR;

#endif
