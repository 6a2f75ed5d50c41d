/* A workload read from a dataset or trace file (src/workload/dataset.h):
 * request i uses item order[i % n]. Prompts and chat messages are sent as
 * written, after the run's salt (so runs stay isolated unless
 * --shared-cache); items that only give lengths (traces) get vocabulary
 * text of that many tokens, where Mooncake's hash_ids become shared blocks
 * of 512 tokens (the same id, the same text), so the trace's prefix reuse
 * reaches the server's cache. */
#ifndef IM_LOAD_DSWORKLOAD_H
#define IM_LOAD_DSWORKLOAD_H

#include <stddef.h>

#include "workload/dataset.h"
#include "core/err.h"
#include "workload/spec.h"
#include "workload/synth.h"

struct im_dsw {
  const struct im_dataset *ds;
  const size_t *order;            /* item index per request (time order), NULL: file order */
  const struct im_synth *synth;   /* salt, seed, defaults for missing lengths and sampling */
};

/* An im_workload_fn: ctx is a struct im_dsw. */
enum im_err im_dsw_request(void *ctx, uint64_t index, struct im_req_spec *spec) IM_WUR;

/* Mooncake's block size in tokens (its trace's hash_ids each cover 512). */
#define IM_DSW_BLOCK_TOKENS 512

#endif
