/* LoRA adapters of the simulated engine: see serve/lora.h. */
#include "serve/lora.h"

#include "proto/promexp.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct im_lora {
  struct im_lora_config cfg;
  bool in_set[IM_LORA_MAX + 1];
  uint32_t set[IM_LORA_MAX];
  uint32_t n_set;
  uint32_t *slot;      /* resident adapter per slot, 0 empty */
  uint64_t *slot_used; /* step of last use */
  uint64_t step;
  struct im_lora_stats stats;
};

void im_lora_config_default(struct im_lora_config *c) {
  memset(c, 0, sizeof *c);
  c->max_loras = 1;
  c->step_cost_s = 0.0005;
  c->swap_s = 0.025;
}

int im_lora_config_parse(struct im_lora_config *c, char *spec, char *err, size_t errlen) {
  for (char *save = NULL, *tok = strtok_r(spec, ", ", &save); tok;
       tok = strtok_r(NULL, ", ", &save)) {
    char *eq = strchr(tok, '=');
    if (!eq || eq == tok || !eq[1]) {
      snprintf(err, errlen, "expected name=path, got '%s'", tok);
      return -1;
    }
    if (c->n == IM_LORA_MAX) {
      snprintf(err, errlen, "at most %d adapters", IM_LORA_MAX);
      return -1;
    }
    *eq = '\0';
    for (size_t i = 0; i < c->n; i++)
      if (!strcmp(c->names[i], tok)) {
        snprintf(err, errlen, "adapter '%s' named twice", tok);
        return -1;
      }
    c->names[c->n] = tok;
    c->paths[c->n++] = eq + 1;
  }
  return 0;
}

enum im_err im_lora_new(struct im_lora **out, const struct im_lora_config *c) {
  *out = NULL;
  if (!c->n || c->max_loras < 1)
    return IM_INVAL;
  struct im_lora *l = calloc(1, sizeof *l);
  if (!l)
    return IM_NOMEM;
  l->cfg = *c;
  l->slot = calloc(c->max_loras, sizeof *l->slot);
  l->slot_used = calloc(c->max_loras, sizeof *l->slot_used);
  if (!l->slot || !l->slot_used) {
    im_lora_free(l);
    return IM_NOMEM;
  }
  *out = l;
  return IM_OK;
}

void im_lora_free(struct im_lora *l) {
  if (!l)
    return;
  free(l->slot);
  free(l->slot_used);
  free(l);
}

const struct im_lora_config *im_lora_config(const struct im_lora *l) {
  return &l->cfg;
}

uint32_t im_lora_find(const struct im_lora *l, const char *name) {
  for (size_t i = 0; l && name && i < l->cfg.n; i++)
    if (!strcmp(l->cfg.names[i], name))
      return (uint32_t)i + 1;
  return 0;
}

void im_lora_begin(struct im_lora *l) {
  for (uint32_t i = 0; i < l->n_set; i++)
    l->in_set[l->set[i]] = false;
  l->n_set = 0;
}

void im_lora_note(struct im_lora *l, uint32_t id) {
  if (id && id <= l->cfg.n && !l->in_set[id]) {
    l->in_set[id] = true;
    l->set[l->n_set++] = id;
  }
}

bool im_lora_admit(struct im_lora *l, uint32_t id) {
  if (!id || id > l->cfg.n || l->in_set[id])
    return true;
  if (l->n_set >= l->cfg.max_loras)
    return false; /* vLLM: the batch already holds max_loras adapters */
  im_lora_note(l, id);
  return true;
}

double im_lora_cost(struct im_lora *l) {
  l->step++;
  uint32_t swaps = 0;
  for (uint32_t i = 0; i < l->n_set; i++) {
    uint32_t id = l->set[i], best = 0;
    bool resident = false;
    for (uint32_t s = 0; s < l->cfg.max_loras && !resident; s++)
      if (l->slot[s] == id) {
        l->slot_used[s] = l->step;
        resident = true;
      }
    if (resident)
      continue;
    /* Evict the least recently used slot that this batch does not use. */
    for (uint32_t s = 0; s < l->cfg.max_loras; s++)
      if (l->slot_used[s] < l->slot_used[best] || l->slot[s] == 0) {
        best = s;
        if (l->slot[s] == 0)
          break;
      }
    l->slot[best] = id;
    l->slot_used[best] = l->step;
    swaps++;
  }
  l->stats.swaps += swaps;
  l->stats.in_batch = l->n_set;
  return l->n_set * l->cfg.step_cost_s + swaps * l->cfg.swap_s;
}

void im_lora_stats(const struct im_lora *l, struct im_lora_stats *out) {
  *out = l->stats;
}

enum im_err im_lora_names(const struct im_lora *l, const uint32_t *ids, size_t n,
                          struct im_buf *out) {
  bool seen[IM_LORA_MAX + 1] = {false};
  bool first = true;
  for (size_t i = 0; i < n; i++) {
    uint32_t id = ids[i];
    if (!id || id > l->cfg.n || seen[id])
      continue;
    seen[id] = true;
    enum im_err err = im_buf_printf(out, "%s%s", first ? "" : ",", l->cfg.names[id - 1]);
    if (err)
      return err;
    first = false;
  }
  return IM_OK;
}

enum im_err im_lora_prom(struct im_buf *b, const struct im_lora *l, const char *running,
                         const char *waiting, double now_s) {
  struct im_buf lb;
  im_buf_init(&lb, 64u << 10);
  char max[16];
  snprintf(max, sizeof max, "%u", l->cfg.max_loras);
  /* vLLM's gauge (vllm/v1/metrics/loggers.py, PrometheusStatLogger): its
   * labels name the adapters, its value is the time of the update. */
  enum im_err err = im_prom_label(&lb, "max_lora", max);
  if (!err)
    err = im_prom_label(&lb, "running_lora_adapters", running ? running : "");
  if (!err)
    err = im_prom_label(&lb, "waiting_lora_adapters", waiting ? waiting : "");
  if (!err)
    err = im_prom_family(b, "vllm:lora_requests_info", "gauge", "Running stats on lora requests.");
  if (!err)
    err = im_prom_sample(b, "vllm:lora_requests_info", lb.data, now_s);
  if (!err)
    err = im_prom_family(b, "infermeter_sim_lora_swaps_total", "counter",
                         "LoRA adapters loaded into a GPU slot (swap-ins).");
  if (!err)
    err = im_prom_sample(b, "infermeter_sim_lora_swaps_total", NULL, (double)l->stats.swaps);
  im_buf_cleanup(&lb);
  return err;
}
