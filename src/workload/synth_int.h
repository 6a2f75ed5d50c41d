/* Internal to synth.c and synth_server.c. */
#ifndef IM_WORKLOAD_SYNTH_INT_H
#define IM_WORKLOAD_SYNTH_INT_H

#include "workload/synth.h"

/* The request's own text after the header b->data[start..b->len) (which
 * counts `fixed` tokens to the server), sized so that the whole counts
 * `want` tokens to the server (s->server_count): generated with s->tok (or
 * the built-in tokenizer) at a body length in local tokens adjusted from the
 * server's count of each try (secant steps inside a shrinking bracket), then
 * the shortest text known to count over `want` cut at the byte where it
 * counts `want` (bisection), at most about IM__SYNTH_SERVER_TRIES counts
 * (plus the header's). Leaves the closest text found in b (under rather than
 * over on a tie) and its server count in *n_out (want when exact). Called
 * with s->tok_mu held when there is one. */
#define IM__SYNTH_SERVER_TRIES 32
enum im_err im__synth_exact_server(const struct im_synth *s, struct im_buf *b, size_t start,
                                   enum im_content cls, uint64_t tag, uint32_t want,
                                   uint32_t fixed, uint32_t *n_out) IM_WUR;

#endif
