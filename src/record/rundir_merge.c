/* Merging the stage events of several run directories: see rundir_merge.h. */
#include "record/rundir_merge.h"

#include <stdlib.h>
#include <string.h>

#include "record/hist_json.h"

enum im_err im_rundir_stage_merge(struct im_rundir_stage *dst, const struct im_rundir_stage *src,
                                  int64_t offset_ns, uint32_t thread_base) {
  if (!dst->started) {
    memcpy(dst->label, src->label, sizeof dst->label);
    dst->params = src->params ? json_incref(src->params) : NULL;
    dst->rule = src->rule;
    dst->by_class = src->by_class;
    dst->sessions = src->sessions;
    dst->has_t0 = src->has_t0;
    dst->t0_mono = src->t0_mono;
    dst->wall_start_ns = src->wall_start_ns;
    dst->ended = true;
    dst->started = true;
    dst->rule.elapsed_ns = 0;
    dst->rule.interrupted = false;
  }
  if (!dst->first_error[0])
    memcpy(dst->first_error, src->first_error, sizeof dst->first_error);
  if (!dst->error[0])
    memcpy(dst->error, src->error, sizeof dst->error);
  dst->ended &= src->ended;
  dst->threads += src->threads ? src->threads : 1;
  dst->counters.scheduled += src->counters.scheduled;
  dst->counters.dispatched += src->counters.dispatched;
  dst->counters.fd_exhausted += src->counters.fd_exhausted;
  dst->counters.port_exhausted += src->counters.port_exhausted;
  if (src->counters.cpu_share > dst->counters.cpu_share)
    dst->counters.cpu_share = src->counters.cpu_share;
  dst->connections_opened += src->connections_opened;
  if (src->elapsed_ns + offset_ns > dst->elapsed_ns)
    dst->elapsed_ns = src->elapsed_ns + offset_ns;
  dst->rule.interrupted |= src->rule.interrupted;
  if (src->rule.elapsed_ns + offset_ns > dst->rule.elapsed_ns)
    dst->rule.elapsed_ns = src->rule.elapsed_ns + offset_ns;
  if (src->has_receive_lag) {
    if (!dst->has_receive_lag) {
      if (im_hist_init_default(&dst->receive_lag) != IM_OK)
        return IM_NOMEM;
      dst->has_receive_lag = true;
    }
    enum im_err e = im_hist_merge(&dst->receive_lag, &src->receive_lag);
    if (e != IM_OK)
      return e;
  }
  if (src->has_host) {
    /* The probes of several processes: counts add, stalls on dst's clock. */
    struct im_hostlat h = src->host;
    h.stalls = src->host.n_stalls ? malloc(src->host.n_stalls * sizeof *h.stalls) : NULL;
    if (src->host.n_stalls && !h.stalls)
      return IM_NOMEM;
    h.cap_stalls = h.n_stalls;
    for (uint32_t i = 0; i < h.n_stalls; i++)
      h.stalls[i] = (struct im_host_stall){src->host.stalls[i].t + offset_ns,
                                           src->host.stalls[i].late_ns};
    if (!dst->has_host)
      im_hostlat_init(&dst->host, 0);
    dst->has_host = true;
    enum im_err e = im_hostlat_merge(&dst->host, &h);
    im_hostlat_cleanup(&h);
    if (e != IM_OK)
      return e;
  }
  if (src->n_samples) {
    struct im_client_sample *v =
        realloc(dst->samples, (dst->n_samples + src->n_samples) * sizeof *v);
    if (!v)
      return IM_NOMEM;
    dst->samples = v;
    for (size_t i = 0; i < src->n_samples; i++) {
      struct im_client_sample s = src->samples[i];
      s.thread += thread_base;
      s.t += offset_ns;
      v[dst->n_samples++] = s;
    }
  }
  return IM_OK;
}

void im_rundir_stage_cleanup(struct im_rundir_stage *s) {
  json_decref(s->params);
  free(s->samples);
  if (s->has_receive_lag)
    im_hist_cleanup(&s->receive_lag);
  im_hostlat_cleanup(&s->host);
  memset(s, 0, sizeof *s);
}

int im_rundir_stage_write(int fd, const struct im_rundir_stage *s, size_t index) {
  if (im_rundir_append(fd, im_rundir_start_json(index, s->label, s->params, &s->rule, s->threads,
                                                 s->by_class, s->sessions)))
    return -1;
  if (s->has_t0 && im_rundir_append(fd, im_rundir_t0_json(index, s->t0_mono, s->wall_start_ns)))
    return -1;
  if (!s->ended)
    return 0;
  json_t *end = im_rundir_end_json(index, s->elapsed_ns, s->rule.interrupted, &s->counters,
                                   s->connections_opened, s->first_error, s->samples, s->n_samples);
  json_t *rl = NULL;
  if (end && s->has_receive_lag && im_hist_to_json(&s->receive_lag, &rl) == IM_OK)
    json_object_set_new(end, "receive_lag", rl);
  if (end && s->has_host)
    json_object_set_new(end, "host", im_rundir_host_json(&s->host));
  if (end && s->error[0])
    json_object_set_new(end, "error", json_string(s->error));
  return im_rundir_append(fd, end);
}
