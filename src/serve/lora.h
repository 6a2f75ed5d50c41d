/* LoRA adapters in the simulated engine (docs/agents.md "LoRA adapters in
 * serve"), after vLLM's behaviour:
 *   - adapters are named at start (--lora-modules name=path; the path is a
 *     label only) and requested by their name as the model;
 *   - at most max_loras distinct adapters are in a batch (vLLM's
 *     --max-loras, default 1): the scheduler skips a waiting request whose
 *     adapter would exceed it and admits later ones (vLLM V1 scheduler);
 *   - GPU slots hold max_loras adapters, least recently used evicted: an
 *     adapter that is not resident when its batch starts is swapped in,
 *     costing swap_s of step time (loading its weights from host memory);
 *   - each distinct adapter in a batch adds step_cost_s to the step (the
 *     LoRA kernels run once per adapter segment).
 * Defaults: step cost 0.5 ms, swap 25 ms (documented assumptions for a
 * rank-16 adapter of a large model, not measurements), before --time-scale.
 * Single-threaded (the engine's loop). */
#ifndef IM_SERVE_LORA_H
#define IM_SERVE_LORA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/buf.h"
#include "core/err.h"

#define IM_LORA_MAX 64

struct im_lora_config {
  const char *names[IM_LORA_MAX]; /* borrowed */
  const char *paths[IM_LORA_MAX];
  size_t n;
  uint32_t max_loras; /* >= 1 */
  double step_cost_s, swap_s;
};

void im_lora_config_default(struct im_lora_config *c);
/* Parses "name=path[,name=path...]" into c (strings point into spec, which
 * must outlive c). -1 with a message in err. */
int im_lora_config_parse(struct im_lora_config *c, char *spec, char *err, size_t errlen);

struct im_lora;

enum im_err im_lora_new(struct im_lora **out, const struct im_lora_config *c) IM_WUR;
void im_lora_free(struct im_lora *l);
const struct im_lora_config *im_lora_config(const struct im_lora *l);
/* The adapter id of a model name (1..n), 0 when it is not an adapter. */
uint32_t im_lora_find(const struct im_lora *l, const char *name);

/* One engine step's scheduling: begin, note the adapter of every running
 * sequence, then ask admit() for each waiting one (true: admitted, its
 * adapter joins the batch's set); cost() gives the step's added seconds
 * (distinct adapters, swaps) and updates the resident slots. Id 0 (the
 * base model) always fits and costs nothing. */
void im_lora_begin(struct im_lora *l);
void im_lora_note(struct im_lora *l, uint32_t id);
bool im_lora_admit(struct im_lora *l, uint32_t id);
double im_lora_cost(struct im_lora *l);

struct im_lora_stats {
  uint64_t swaps;    /* adapters loaded into a slot */
  uint32_t in_batch; /* distinct adapters of the last step */
};
void im_lora_stats(const struct im_lora *l, struct im_lora_stats *out);
/* Appends the comma-separated names of the adapters of ids (each id once). */
enum im_err im_lora_names(const struct im_lora *l, const uint32_t *ids, size_t n,
                          struct im_buf *out) IM_WUR;

/* vllm:lora_requests_info (labels max_lora, running_lora_adapters,
 * waiting_lora_adapters; value now_s, as vLLM sets it to the current time)
 * and infermeter_sim_lora_swaps_total, Prometheus text, appended to b. */
enum im_err im_lora_prom(struct im_buf *b, const struct im_lora *l, const char *running,
                         const char *waiting, double now_s) IM_WUR;

#endif
