/* Host wake-up lateness: see core/hostlat.h. */
#include "core/hostlat.h"

#include <stdlib.h>
#include <string.h>

const int64_t im_hostlat_bounds_ns[IM_HOSTLAT_NBOUNDS] = {
    100000, 500000, 1000000, 2000000, 5000000, 10000000, 50000000, 100000000};

void im_hostlat_init(struct im_hostlat *h, int64_t period_ns) {
  memset(h, 0, sizeof *h);
  h->period_ns = period_ns;
}

void im_hostlat_cleanup(struct im_hostlat *h) {
  if (!h)
    return;
  free(h->stalls);
  h->stalls = NULL;
  h->n_stalls = h->cap_stalls = 0;
}

static bool keep_stall(struct im_hostlat *h, struct im_host_stall s) {
  if (h->n_stalls == IM_HOSTLAT_MAX_STALLS)
    return false;
  if (h->n_stalls == h->cap_stalls) {
    uint32_t cap = h->cap_stalls ? h->cap_stalls * 2 : 32;
    if (cap > IM_HOSTLAT_MAX_STALLS)
      cap = IM_HOSTLAT_MAX_STALLS;
    struct im_host_stall *p = realloc(h->stalls, cap * sizeof *p);
    if (!p)
      return false;
    h->stalls = p;
    h->cap_stalls = cap;
  }
  h->stalls[h->n_stalls++] = s;
  return true;
}

void im_hostlat_add(struct im_hostlat *h, int64_t t, int64_t late_ns) {
  if (late_ns < 0)
    late_ns = 0;
  h->wakes++;
  for (int i = 0; i < IM_HOSTLAT_NBOUNDS; i++)
    h->over[i] += late_ns > im_hostlat_bounds_ns[i];
  if (late_ns > h->max_ns)
    h->max_ns = late_ns;
  if (late_ns > IM_HOSTLAT_STALL_NS) {
    h->stalls_total++;
    (void)keep_stall(h, (struct im_host_stall){t, late_ns});
  }
}

uint64_t im_hostlat_late(const struct im_hostlat *h) {
  for (int i = 0; i < IM_HOSTLAT_NBOUNDS; i++)
    if (im_hostlat_bounds_ns[i] == IM_HOSTLAT_LATE_NS)
      return h->over[i];
  return 0;
}

enum im_err im_hostlat_merge(struct im_hostlat *dst, const struct im_hostlat *src) {
  if (!dst->period_ns || (src->period_ns && src->period_ns < dst->period_ns))
    dst->period_ns = src->period_ns;
  dst->wakes += src->wakes;
  for (int i = 0; i < IM_HOSTLAT_NBOUNDS; i++)
    dst->over[i] += src->over[i];
  if (src->max_ns > dst->max_ns)
    dst->max_ns = src->max_ns;
  dst->stalls_total += src->stalls_total;
  if (!src->n_stalls)
    return IM_OK;
  uint32_t n = dst->n_stalls + src->n_stalls;
  if (n > IM_HOSTLAT_MAX_STALLS)
    n = IM_HOSTLAT_MAX_STALLS;
  struct im_host_stall *m = malloc(n * sizeof *m);
  if (!m)
    return IM_NOMEM;
  uint32_t i = 0, j = 0, k = 0;
  while (k < n && (i < dst->n_stalls || j < src->n_stalls)) {
    bool take_dst = j >= src->n_stalls || (i < dst->n_stalls && dst->stalls[i].t <= src->stalls[j].t);
    m[k++] = take_dst ? dst->stalls[i++] : src->stalls[j++];
  }
  free(dst->stalls);
  dst->stalls = m;
  dst->n_stalls = dst->cap_stalls = k;
  return IM_OK;
}

int64_t im_hostlat_stall_within(const struct im_hostlat *h, int64_t from, int64_t to) {
  int64_t best = 0;
  for (uint32_t i = 0; i < h->n_stalls; i++) {
    const struct im_host_stall *s = &h->stalls[i];
    if (s->t >= from && s->t - s->late_ns <= to && s->late_ns > best)
      best = s->late_ns;
  }
  return best;
}
