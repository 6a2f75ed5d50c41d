/* MoE routing statistics (contract in moe.h; worked examples in
 * docs/deepseek.md, checked by tests/unit/test_moe_stats.c). */
#include "analyze/moe.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/validity.h"
#include "proto/promparse.h"

double im_moe_g1(const double *v, size_t n) {
  if (n < 3)
    return 0.0;
  double mean = 0;
  for (size_t i = 0; i < n; i++)
    mean += v[i];
  mean /= (double)n;
  double m2 = 0, m3 = 0;
  for (size_t i = 0; i < n; i++) {
    double d = v[i] - mean;
    m2 += d * d;
    m3 += d * d * d;
  }
  m2 /= (double)n;
  m3 /= (double)n;
  /* pandas treats a variance at rounding level as zero (nanops.nanskew);
   * relative to the mean's square here. */
  if (!(m2 > 1e-14 * (mean * mean + 1e-300)))
    return 0.0;
  double nn = (double)n;
  return sqrt(nn * (nn - 1.0)) / (nn - 2.0) * m3 / pow(m2, 1.5);
}

double im_moe_max_over_mean(const double *v, size_t n) {
  double sum = 0, max = 0;
  for (size_t i = 0; i < n; i++) {
    sum += v[i];
    max = v[i] > max ? v[i] : max;
  }
  return sum > 0 ? max / (sum / (double)n) : 0.0;
}

/* ---- the trace accumulator -------------------------------------------- */

struct layer_acc {
  double g1_sum, mom_sum, bal_sum;
  uint64_t steps, transitions, changes;
  double jaccard_sum;
};

struct window {
  uint64_t first_step, steps, layer_steps;
  double g1_sum, bal_sum, bal_min;
  double *heat; /* n_experts */
};

#define SLOTS (2u * IM_MOE_MAX_SEQS)

struct im_moe_acc {
  uint32_t nl, ne, k;
  uint64_t steps, tokens, seqs, not_followed, window_steps;
  struct layer_acc *layer;  /* nl */
  uint64_t *total;          /* nl x ne */
  double *scratch;          /* ne */
  uint64_t slot_key[SLOTS];
  int32_t slot_pool[SLOTS]; /* -1: empty */
  uint16_t *pool;           /* followed sequences' previous ids, nl x k each */
  size_t pool_used, pool_cap;
  struct window win[IM_MOE_MAX_WINDOWS];
  size_t n_win;
  double *heat_mem;         /* IM_MOE_MAX_WINDOWS x ne */
};

enum im_err im_moe_acc_new(struct im_moe_acc **out, uint32_t window_steps) {
  *out = NULL;
  if (!window_steps)
    return IM_INVAL;
  struct im_moe_acc *a = calloc(1, sizeof *a);
  if (!a)
    return IM_NOMEM;
  a->window_steps = window_steps;
  for (size_t i = 0; i < SLOTS; i++)
    a->slot_pool[i] = -1;
  *out = a;
  return IM_OK;
}

/* Fixes the number of layers on first use. */
static enum im_err set_layers(struct im_moe_acc *a, uint32_t nl) {
  if (!nl || nl > IM_MOE_MAX_LAYERS || (a->nl && nl != a->nl))
    return IM_INVAL;
  if (!a->layer && !(a->layer = calloc(nl, sizeof *a->layer)))
    return IM_NOMEM;
  a->nl = nl;
  return IM_OK;
}

static enum im_err set_experts(struct im_moe_acc *a, uint32_t ne) {
  if (!ne || ne > IM_MOE_MAX_EXPERTS || (a->ne && ne != a->ne) || (a->k && a->k > ne))
    return IM_INVAL;
  if (a->ne)
    return IM_OK;
  a->total = calloc((size_t)a->nl * ne, sizeof *a->total);
  a->scratch = calloc(ne, sizeof *a->scratch);
  a->heat_mem = calloc((size_t)IM_MOE_MAX_WINDOWS * ne, sizeof *a->heat_mem);
  if (!a->total || !a->scratch || !a->heat_mem) {
    free(a->total);
    free(a->scratch);
    free(a->heat_mem);
    a->total = NULL;
    a->scratch = a->heat_mem = NULL;
    return IM_NOMEM;
  }
  for (size_t i = 0; i < IM_MOE_MAX_WINDOWS; i++)
    a->win[i].heat = a->heat_mem + i * ne;
  a->ne = ne;
  return IM_OK;
}

void im_moe_acc_free(struct im_moe_acc *a) {
  if (!a)
    return;
  free(a->layer);
  free(a->total);
  free(a->scratch);
  free(a->pool);
  free(a->heat_mem);
  free(a);
}

/* The series is full: merge neighbours into the first half and double the
 * window, so memory stays bounded whatever the trace's length. */
static void halve_series(struct im_moe_acc *a) {
  size_t half = a->n_win / 2;
  for (size_t i = 0; i < half; i++) {
    struct window *d = &a->win[i], *x = &a->win[2 * i], *y = &a->win[2 * i + 1];
    double *heat = d->heat;
    uint64_t first = x->first_step;
    double bmin = x->bal_min < y->bal_min ? x->bal_min : y->bal_min;
    for (uint32_t e = 0; e < a->ne; e++)
      heat[e] = x->heat[e] + y->heat[e];
    struct window m = {first, x->steps + y->steps, x->layer_steps + y->layer_steps,
                       x->g1_sum + y->g1_sum, x->bal_sum + y->bal_sum, bmin, heat};
    *d = m;
  }
  for (size_t i = half; i < IM_MOE_MAX_WINDOWS; i++) {
    a->win[i].heat = a->heat_mem + i * a->ne;
    memset(a->win[i].heat, 0, a->ne * sizeof *a->win[i].heat);
  }
  /* Keep every point's heat at its own row: after the merge row i holds
   * point i (the merged rows were written in place, in order). */
  a->n_win = half;
  a->window_steps *= 2;
}

static struct window *current_window(struct im_moe_acc *a, uint64_t step) {
  if (a->n_win && a->win[a->n_win - 1].steps < a->window_steps)
    return &a->win[a->n_win - 1];
  if (a->n_win == IM_MOE_MAX_WINDOWS)
    halve_series(a);
  if (a->n_win && a->win[a->n_win - 1].steps < a->window_steps)
    return &a->win[a->n_win - 1];
  struct window *w = &a->win[a->n_win++];
  double *heat = w->heat;
  memset(heat, 0, a->ne * sizeof *heat);
  *w = (struct window){.first_step = step, .bal_min = INFINITY, .heat = heat};
  return w;
}

enum im_err im_moe_acc_step(struct im_moe_acc *a, uint64_t step, uint32_t nl, uint32_t ne,
                            const uint32_t *counts) {
  enum im_err err = set_layers(a, nl);
  if (err || (err = set_experts(a, ne)))
    return err;
  uint64_t sum = 0;
  for (size_t i = 0; i < (size_t)a->nl * a->ne; i++)
    sum += counts[i];
  if (!sum)
    return IM_OK; /* an idle step says nothing about the load */
  struct window *w = current_window(a, step);
  w->steps++;
  a->steps++;
  for (uint32_t l = 0; l < a->nl; l++) {
    const uint32_t *c = counts + (size_t)l * a->ne;
    uint64_t lsum = 0;
    for (uint32_t e = 0; e < a->ne; e++) {
      a->scratch[e] = c[e];
      a->total[(size_t)l * a->ne + e] += c[e];
      w->heat[e] += c[e];
      lsum += c[e];
    }
    if (!lsum)
      continue;
    struct layer_acc *la = &a->layer[l];
    double g1 = im_moe_g1(a->scratch, a->ne), mom = im_moe_max_over_mean(a->scratch, a->ne);
    double bal = 1.0 / mom;
    la->g1_sum += g1;
    la->mom_sum += mom;
    la->bal_sum += bal;
    la->steps++;
    w->layer_steps++;
    w->g1_sum += g1;
    w->bal_sum += bal;
    if (bal < w->bal_min)
      w->bal_min = bal;
  }
  return IM_OK;
}

/* The followed sequence's previous ids, or a new entry (*fresh), or NULL
 * when the table is full. */
static uint16_t *seq_prev(struct im_moe_acc *a, uint64_t seq, bool *fresh) {
  size_t per = (size_t)a->nl * a->k;
  uint64_t h = seq * 0x9e3779b97f4a7c15ULL;
  for (size_t probe = 0; probe < SLOTS; probe++) {
    size_t i = (size_t)((h >> 20) + probe) % SLOTS;
    if (a->slot_pool[i] >= 0 && a->slot_key[i] == seq) {
      *fresh = false;
      return a->pool + (size_t)a->slot_pool[i] * per;
    }
    if (a->slot_pool[i] < 0) {
      if (a->pool_used == IM_MOE_MAX_SEQS)
        return NULL;
      if (a->pool_used == a->pool_cap) {
        size_t cap = a->pool_cap ? a->pool_cap * 2 : 16;
        uint16_t *p = realloc(a->pool, cap * per * sizeof *p);
        if (!p)
          return NULL;
        a->pool = p;
        a->pool_cap = cap;
      }
      a->slot_key[i] = seq;
      a->slot_pool[i] = (int32_t)a->pool_used++;
      a->seqs++;
      *fresh = true;
      return a->pool + (size_t)a->slot_pool[i] * per;
    }
  }
  return NULL;
}

enum im_err im_moe_acc_token(struct im_moe_acc *a, uint64_t seq, uint32_t nl, uint32_t k,
                             const uint16_t *ids) {
  enum im_err err = set_layers(a, nl);
  if (err)
    return err;
  if (!k || k > IM_MOE_MAX_TOPK || (a->k && k != a->k) || (a->ne && k > a->ne))
    return IM_INVAL;
  a->k = k;
  for (size_t i = 0; i < (size_t)nl * k; i++)
    if (ids[i] >= (a->ne ? a->ne : IM_MOE_MAX_EXPERTS))
      return IM_INVAL;
  bool fresh = false;
  uint16_t *prev = seq_prev(a, seq, &fresh);
  a->tokens++;
  if (!prev) {
    a->not_followed++;
    return IM_OK;
  }
  size_t per = (size_t)a->nl * a->k;
  if (!fresh) {
    for (uint32_t l = 0; l < a->nl; l++) {
      const uint16_t *x = prev + (size_t)l * a->k, *y = ids + (size_t)l * a->k;
      struct layer_acc *la = &a->layer[l];
      la->transitions++;
      la->changes += x[0] != y[0];
      /* Jaccard distance of the two top-k sets (ids within a set are
       * distinct, so |A u B| = 2k - |A n B|). */
      uint32_t both = 0;
      for (uint32_t i = 0; i < a->k; i++)
        for (uint32_t j = 0; j < a->k; j++)
          both += x[i] == y[j];
      la->jaccard_sum += 1.0 - (double)both / (double)(2 * a->k - both);
    }
  }
  memcpy(prev, ids, per * sizeof *ids);
  return IM_OK;
}

static void hottest(const uint64_t *tot, uint32_t ne, struct im_moe_layer_stats *ls) {
  uint64_t sum = 0;
  for (uint32_t e = 0; e < ne; e++)
    sum += tot[e];
  bool taken[IM_MOE_MAX_EXPERTS] = {false};
  for (int h = 0; h < IM_MOE_HOTTEST; h++) {
    uint32_t best = 0;
    bool any = false;
    for (uint32_t e = 0; e < ne; e++)
      if (!taken[e] && (!any || tot[e] > tot[best])) {
        best = e;
        any = true;
      }
    if (!any)
      break;
    taken[best] = true;
    ls->hottest[h] = best;
    ls->hottest_share[h] = sum ? (double)tot[best] / (double)sum : 0.0;
  }
}

enum im_err im_moe_acc_result(const struct im_moe_acc *a, struct im_moe_result *r) {
  memset(r, 0, sizeof *r);
  r->n_layers = a->nl;
  r->n_experts = a->ne;
  r->top_k = a->k;
  r->steps = a->steps;
  r->tokens = a->tokens;
  r->sequences = a->seqs;
  r->sequences_not_followed = a->not_followed;
  r->window_steps = a->window_steps;
  r->layers = calloc(a->nl ? a->nl : 1, sizeof *r->layers);
  r->series = calloc(a->n_win ? a->n_win : 1, sizeof *r->series);
  r->heat = calloc((a->n_win ? a->n_win : 1) * (size_t)a->ne, sizeof *r->heat);
  double *tmp = malloc((a->ne ? a->ne : 1) * sizeof *tmp);
  if (!r->layers || !r->series || !r->heat || !tmp) {
    free(tmp);
    im_moe_result_cleanup(r);
    return IM_NOMEM;
  }
  double jit = 0, jac = 0, g1 = 0, bal = 0, g1t = 0, balt = 0;
  uint64_t tr = 0, ls_steps = 0, with_total = 0;
  for (uint32_t l = 0; l < a->nl; l++) {
    const struct layer_acc *la = &a->layer[l];
    struct im_moe_layer_stats *ls = &r->layers[l];
    double st = (double)la->steps;
    ls->transitions = la->transitions;
    ls->jitter = la->transitions ? (double)la->changes / (double)la->transitions : NAN;
    ls->jaccard_distance = la->transitions ? la->jaccard_sum / (double)la->transitions : NAN;
    ls->g1_step_mean = st > 0 ? la->g1_sum / st : NAN;
    ls->max_over_mean_step_mean = st > 0 ? la->mom_sum / st : NAN;
    ls->balancedness_step_mean = st > 0 ? la->bal_sum / st : NAN;
    ls->g1_total = ls->balancedness_total = NAN;
    if (a->ne) {
      const uint64_t *tot = a->total + (size_t)l * a->ne;
      for (uint32_t e = 0; e < a->ne; e++)
        tmp[e] = (double)tot[e];
      double mom = im_moe_max_over_mean(tmp, a->ne);
      ls->g1_total = st > 0 ? im_moe_g1(tmp, a->ne) : NAN;
      ls->balancedness_total = mom > 0 ? 1.0 / mom : NAN;
      hottest(tot, a->ne, ls);
    }
    if (!isnan(ls->g1_total) && !isnan(ls->balancedness_total)) {
      g1t += ls->g1_total;
      balt += ls->balancedness_total;
      with_total++;
    }
    jit += (double)la->changes;
    jac += la->jaccard_sum;
    tr += la->transitions;
    g1 += la->g1_sum;
    bal += la->bal_sum;
    ls_steps += la->steps;
  }
  free(tmp);
  r->jitter = tr ? jit / (double)tr : NAN;
  r->jaccard_distance = tr ? jac / (double)tr : NAN;
  r->g1_step_mean = ls_steps ? g1 / (double)ls_steps : NAN;
  r->balancedness_step_mean = ls_steps ? bal / (double)ls_steps : NAN;
  r->g1_total_mean = with_total ? g1t / (double)with_total : NAN;
  r->balancedness_total_mean = with_total ? balt / (double)with_total : NAN;
  r->n_series = a->n_win;
  for (size_t i = 0; i < a->n_win; i++) {
    const struct window *w = &a->win[i];
    double ls = (double)w->layer_steps, sum = 0;
    r->series[i] = (struct im_moe_window){w->first_step, w->steps,
                                          ls > 0 ? w->g1_sum / ls : NAN,
                                          ls > 0 ? w->bal_sum / ls : NAN,
                                          ls > 0 ? w->bal_min : NAN};
    for (uint32_t e = 0; e < a->ne; e++)
      sum += w->heat[e];
    for (uint32_t e = 0; e < a->ne; e++)
      r->heat[i * a->ne + e] = sum > 0 ? w->heat[e] / sum : 0.0;
  }
  return IM_OK;
}

void im_moe_result_cleanup(struct im_moe_result *r) {
  if (!r)
    return;
  free(r->layers);
  free(r->series);
  free(r->heat);
  r->layers = NULL;
  r->series = NULL;
  r->heat = NULL;
}

/* ---- scraped gauges ------------------------------------------------------ */

/* The built-in server (serve/sim_metrics.c) exports per layer max/mean and
 * G1 of the load over its last ~128 steps; SGLang exports
 * sglang:eplb_balancedness, a summary over forward passes (SGLang
 * python/sglang/srt/metrics/collector.py, with
 * SGLANG_ENABLE_EPLB_BALANCEDNESS_METRIC). */
#define SIM_IMBALANCE "infermeter_sim_expert_window_imbalance"
#define SIM_G1 "infermeter_sim_expert_window_g1"
#define SGL_BAL "sglang:eplb_balancedness"
#define SIM_PICKS "infermeter_sim_expert_window_picks"

double im_moe_chance_max_over_mean(double picks, uint32_t n_experts) {
  if (!(picks > 0) || !n_experts || !isfinite(picks))
    return NAN;
  const double lam = picks / n_experts, e = n_experts;
  /* Start where the mass below is negligible (12 standard deviations). */
  double lo = floor(lam - 12 * sqrt(lam) - 5);
  int64_t m = lo > 0 ? (int64_t)lo : 0;
  double cdf = 0, emax = (double)m;
  /* F(m - 1), the mass below the start, is taken as 0. */
  /* Past the mean, stop once P(max > j) or the term is negligible (the
   * summed mass stays a few ulps short of 1); a bound besides. */
  for (int64_t j = m; j < m + 100000 + (int64_t)(40 * sqrt(lam)); j++) {
    double pmf = exp((double)j * log(lam) - lam - lgamma((double)j + 1));
    cdf += pmf;
    double fe = pow(cdf > 1 ? 1 : cdf, e);
    emax += 1 - fe; /* P(max > j) */
    if ((double)j > lam && (1 - fe < 1e-9 || pmf < 1e-17))
      break;
  }
  return emax / lam;
}

struct page_acc {
  struct im_moe_scrape *s;
  double mom[IM_MOE_MAX_LAYERS], g1[IM_MOE_MAX_LAYERS];
  bool has_mom[IM_MOE_MAX_LAYERS], has_g1[IM_MOE_MAX_LAYERS];
  double sgl_sum, sgl_count;
  bool sgl;
  double picks;
  uint32_t experts;
  bool has_picks;
  double frag;
  bool has_frag;
};

static enum im_err on_sample(void *ud, const struct im_prom_sample *x) {
  struct page_acc *p = ud;
  bool mom = !strcmp(x->name, SIM_IMBALANCE), g1 = !strcmp(x->name, SIM_G1);
  if (mom || g1) {
    const char *ls = im_prom_sample_label(x, "layer");
    char *end = NULL;
    unsigned long l = ls ? strtoul(ls, &end, 10) : IM_MOE_MAX_LAYERS;
    if (!ls || end == ls || *end || l >= IM_MOE_MAX_LAYERS || !isfinite(x->value))
      return IM_OK;
    if (mom) {
      p->mom[l] = x->value;
      p->has_mom[l] = true;
    } else {
      p->g1[l] = x->value;
      p->has_g1[l] = true;
    }
  } else if (!strcmp(x->name, SIM_PICKS) && isfinite(x->value)) {
    const char *es = im_prom_sample_label(x, "experts");
    char *end = NULL;
    unsigned long ne = es ? strtoul(es, &end, 10) : 0;
    if (es && end != es && !*end && ne > 0 && ne <= IM_MOE_MAX_EXPERTS) {
      p->picks = x->value;
      p->experts = (uint32_t)ne;
      p->has_picks = true;
    }
  } else if (!strcmp(x->name, "infermeter_sim_kv_fragmentation") && isfinite(x->value)) {
    p->frag = x->value;
    p->has_frag = true;
  } else if (!strcmp(x->family, SGL_BAL) && isfinite(x->value)) {
    if (x->suffix == IM_PROM_SFX_SUM) {
      p->sgl_sum += x->value;
      p->sgl = true;
    } else if (x->suffix == IM_PROM_SFX_COUNT) {
      p->sgl_count += x->value;
      p->sgl = true;
    }
  }
  return IM_OK;
}

void im_moe_scrape_init(struct im_moe_scrape *s) { memset(s, 0, sizeof *s); }

enum im_err im_moe_scrape_page(struct im_moe_scrape *s, const char *page, size_t len) {
  struct page_acc *p = calloc(1, sizeof *p);
  if (!p)
    return IM_NOMEM;
  p->s = s;
  struct im_promparse pp;
  im_promparse_init(&pp, NULL);
  struct im_promparse_cbs cbs = {.sample = on_sample, .ud = p};
  enum im_err e = im_promparse_page(&pp, page, len, &cbs, NULL);
  im_promparse_cleanup(&pp);
  if (e == IM_OK && p->has_frag) {
    s->kv_frag_pages++;
    s->kv_frag_mean += p->frag; /* a sum until im_moe_scrape_finish */
    if (p->frag > s->kv_frag_max)
      s->kv_frag_max = p->frag;
  }
  if (e == IM_OK) {
    /* A page of an idle engine (every layer's max/mean 0) says nothing. */
    bool busy = false;
    for (uint32_t l = 0; l < IM_MOE_MAX_LAYERS; l++)
      busy |= p->has_mom[l] && p->mom[l] > 0;
    if (busy) {
      s->source = "infermeter_sim";
      s->pages++;
      double c = p->has_picks ? im_moe_chance_max_over_mean(p->picks, p->experts) : NAN;
      if (!isnan(c)) {
        s->chance_pages++;
        s->picks_mean += p->picks;          /* sums until im_moe_scrape_finish */
        s->chance_max_over_mean += c;
        s->n_experts = p->experts;
      }
      for (uint32_t l = 0; l < IM_MOE_MAX_LAYERS; l++) {
        if (!p->has_mom[l])
          continue;
        if (l + 1 > s->n_layers)
          s->n_layers = l + 1;
        s->max_over_mean[l] += p->mom[l];
        s->balancedness[l] += p->mom[l] > 0 ? 1.0 / p->mom[l] : 0.0;
        s->g1[l] += p->has_g1[l] ? p->g1[l] : 0.0;
      }
    } else if (p->sgl && !s->source) {
      /* SGLang: the summary's growth over the stage (first page kept). */
      if (!s->sglang_seen) {
        s->sglang_sum0 = p->sgl_sum;
        s->sglang_count0 = p->sgl_count;
        s->sglang_seen = true;
      } else if (p->sgl_count > s->sglang_count0) {
        s->balancedness_mean =
            (p->sgl_sum - s->sglang_sum0) / (p->sgl_count - s->sglang_count0);
        s->pages++;
      }
    }
  }
  free(p);
  return e;
}

size_t im_moe_scrape_finish(struct im_moe_scrape *s, double ref, uint32_t *low, size_t max_low) {
  size_t n_low = 0;
  if (s->kv_frag_pages)
    s->kv_frag_mean /= (double)s->kv_frag_pages;
  if (s->sglang_seen && !s->source && s->pages)
    s->source = "sglang";
  if (!s->source || strcmp(s->source, "infermeter_sim") || !s->pages)
    return 0;
  double np = (double)s->pages, bal = 0, g1 = 0, mom = 0;
  s->judged_against_chance = s->chance_pages == s->pages;
  if (s->chance_pages) {
    s->picks_mean /= (double)s->chance_pages;
    s->chance_max_over_mean /= (double)s->chance_pages;
  }
  for (uint32_t l = 0; l < s->n_layers; l++) {
    s->max_over_mean[l] /= np;
    s->balancedness[l] /= np;
    s->g1[l] /= np;
    bal += s->balancedness[l];
    g1 += s->g1[l];
    mom += s->max_over_mean[l];
    if (s->balancedness[l] < s->balancedness[s->worst_layer])
      s->worst_layer = l;
    if (!(s->balancedness[l] < ref))
      continue;
    s->below_ref++;
    bool beyond = !s->judged_against_chance ||
                  s->max_over_mean[l] - 1 >= IM_MOE_CHANCE_FACTOR * (s->chance_max_over_mean - 1);
    if (beyond && n_low < max_low)
      low[n_low++] = l;
  }
  if (s->n_layers) {
    s->balancedness_mean = bal / s->n_layers;
    s->g1_mean = g1 / s->n_layers;
    s->max_over_mean_mean = mom / s->n_layers;
  }
  return n_low;
}

void im_moe_scrape_summary(const struct im_moe_scrape *s, double ref, size_t n_low, char *buf,
                           size_t len) {
  if (!s->source) {
    snprintf(buf, len, "not collected");
    return;
  }
  char chance[160] = "";
  if (s->judged_against_chance)
    snprintf(chance, sizeof chance, " (uniform routing of the %.0f picks per window: %.2f)",
             s->picks_mean, 1 / s->chance_max_over_mean);
  else if (s->n_layers)
    snprintf(chance, sizeof chance, " (not judged against chance: the server exports no count "
                                    "of routed picks)");
  if (!s->n_layers) {
    snprintf(buf, len, "expert-load balancedness %.3f (mean over the stage)", s->balancedness_mean);
    return;
  }
  if (n_low)
    snprintf(buf, len, "%zu of %u layers skewed (balancedness below %.2f%s), worst: layer %u at "
                       "%.2f%s",
             n_low, s->n_layers, ref,
             s->judged_against_chance ? ", excess over chance at least 3x" : "", s->worst_layer,
             s->balancedness[s->worst_layer], chance);
  else
    snprintf(buf, len, "balancedness %.2f over %u layers, worst: layer %u at %.2f%s; none "
                       "skewed%s",
             s->balancedness_mean, s->n_layers, s->worst_layer, s->balancedness[s->worst_layer],
             chance, s->below_ref ? " (its excess under 3x chance's)" : "");
}

bool im_moe_audit_check(const struct im_moe_scrape *s, double ref, const uint32_t *low,
                        size_t n_low, struct im_valid_check *c) {
  (void)low;
  if (!s->source)
    return false;
  memset(c, 0, sizeof *c);
  c->id = "moe_balance";
  c->status = n_low ? IM_CHECK_WARN : IM_CHECK_PASS;
  im_moe_scrape_summary(s, ref, n_low, c->evidence, sizeof c->evidence);
  if (n_low)
    snprintf(c->fix, sizeof c->fix,
             "the load is skewed over the experts: report it with the figures; expert-parallel "
             "load balancing (EPLB, redundant experts) spreads it");
  return true;
}
