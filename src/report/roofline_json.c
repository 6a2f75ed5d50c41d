/* metrics.roofline (contract in roofline_json.h). */
#include "report/roofline_json.h"

#include <math.h>

#include "report/jsonw.h"

static int pred_json(json_t *o, const struct im_roofline_pred *p) {
  return im_jw_num(o, "batch", p->batch, NULL) || im_jw_num(o, "context_tokens", p->context, NULL) ||
         im_jw_num(o, "distinct_experts_per_layer", p->distinct_experts, NULL) ||
         im_jw_num(o, "weight_bytes_per_gpu", p->weight_bytes_per_gpu, NULL) ||
         im_jw_num(o, "kv_bytes_per_gpu", p->kv_bytes_per_gpu, NULL) ||
         im_jw_num(o, "step_bytes_per_gpu", p->step_bytes_per_gpu, NULL) ||
         im_jw_num(o, "bandwidth_bound_step_ms", p->bw_step_s * 1e3, NULL) ||
         im_jw_num(o, "flops_per_gpu", p->flops_per_gpu, NULL) ||
         im_jw_num(o, "compute_bound_step_ms", p->compute_step_s * 1e3, NULL) ||
         json_object_set_new(o, "bound",
                             json_string(p->bandwidth_bound ? "bandwidth" : "compute"));
}

static int buckets_json(json_t *o, const struct im_roofline *rl) {
  json_t *arr = json_array();
  if (!arr || json_object_set_new(o, "by_context", arr))
    return -1;
  for (size_t i = 0; i < rl->n_buckets; i++) {
    const struct im_roofline_bucket *b = &rl->buckets[i];
    json_t *e = json_object(), *pr;
    if (!e || json_array_append_new(arr, e) || im_jw_uint(e, "prompt_tokens_from", b->lo) ||
        json_object_set_new(e, "prompt_tokens_to", b->hi ? json_integer(b->hi) : json_null()) ||
        im_jw_uint(e, "requests", b->n) || im_jw_num(e, "context_mean", b->context_mean, NULL) ||
        im_jw_num(e, "tpot_mean_ms", b->tpot_mean_s * 1e3, NULL) ||
        im_jw_num(e, "decode_tok_per_s", b->decode_tok_s, NULL) ||
        !(pr = im_jw_child(e, "predicted")) || pred_json(pr, &b->pred) ||
        im_jw_num(e, "achieved_bandwidth_utilisation", b->bw_util, "no TPOT"))
      return -1;
  }
  return 0;
}

static int inflight_json(json_t *o, const struct im_roofline *rl) {
  const char *keys[] = {"t_s", "in_flight", "decoding", "min", "max", "mean", "std"};
  json_t *s = im_jw_child(o, "inflight_context");
  if (!s)
    return -1;
  for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++) {
    json_t *a = json_array();
    if (!a || json_object_set_new(s, keys[k], a))
      return -1;
    for (size_t i = 0; i < rl->n_inflight; i++) {
      const struct im_inflight_pt *p = &rl->inflight[i];
      double v[] = {p->t_s, p->n, p->decoding, p->min, p->max, p->mean, p->std};
      if (json_array_append_new(a, k == 1 || k == 2 ? json_integer((json_int_t)v[k])
                                                    : json_real(isfinite(v[k]) ? v[k] : 0)))
        return -1;
    }
  }
  return 0;
}

enum im_err im_roofline_json(const struct im_roofline *rl, double dram_util,
                             const char *dram_why, json_t *metrics) {
  if (!rl || !metrics)
    return IM_INVAL;
  json_t *o = im_jw_child(metrics, "roofline");
  if (!o)
    return IM_NOMEM;
  if (rl->not_collected && !(rl->sys->model && rl->sys->hw))
    return json_object_set_new(o, "not_collected", json_string(rl->not_collected)) ? IM_NOMEM
                                                                                    : IM_OK;
  const struct im_roofline_sys *s = rl->sys;
  json_t *kv = im_jw_child(o, "kv"), *pu, *pr;
  if (!kv || json_object_set_new(kv, "formula", json_string(rl->kv_formula)) ||
      im_jw_num(kv, "bytes_per_token", rl->kv_bytes_per_token, NULL) ||
      im_jw_num(kv, "bytes_per_token_per_gpu", rl->kv_bytes_per_token_per_gpu, NULL) ||
      im_jw_num(kv, "bytes_per_1k_tokens", rl->kv_bytes_per_1k_tokens, NULL) ||
      im_jw_num(kv, "residency_mean", rl->kv_residency_mean, NULL) ||
      im_jw_num(kv, "residency_max", rl->kv_residency_max, NULL) ||
      im_jw_num(kv, "residency_ref", s->kv_residency_ref, NULL))
    return IM_NOMEM;
  if (im_jw_num(o, "output_tok_per_s", rl->output_tok_s, NULL) ||
      im_jw_num(o, "output_tok_per_s_per_gpu", rl->output_tok_s_per_gpu, NULL) ||
      im_jw_num(o, "mfu", rl->mfu, "no output throughput") ||
      im_jw_num(o, "mfu_ref", s->mfu_ref, NULL) ||
      im_jw_num(o, "bw_util_ref", s->bw_util_ref, NULL))
    return IM_NOMEM;
  if (rl->not_collected)
    return json_object_set_new(o, "not_collected", json_string(rl->not_collected)) ? IM_NOMEM
                                                                                    : IM_OK;
  if (im_jw_num(o, "batch_mean", rl->batch_mean, NULL) ||
      im_jw_num(o, "context_mean", rl->context_mean, NULL) ||
      im_jw_num(o, "tpot_mean_ms", rl->tpot_mean_s * 1e3, NULL) ||
      im_jw_num(o, "itl_median_ms", rl->itl_median_s * 1e3, "no inter-token gap") ||
      im_jw_num(o, "decode_tok_per_s", rl->decode_tok_s, "no inter-token gap") ||
      !(pr = im_jw_child(o, "predicted")) || pred_json(pr, &rl->pred) ||
      im_jw_num(o, "achieved_bandwidth_utilisation", rl->bw_util, "no TPOT") ||
      im_jw_num(o, "measured_dram_bw_util", dram_util, dram_why) ||
      !(pu = im_jw_child(o, "per_user_output_tok_per_s")) || im_jw_uint(pu, "requests", rl->n_users) ||
      im_jw_num(pu, "mean", rl->user_tok_s_mean, NULL) ||
      im_jw_num(pu, "p10", rl->user_tok_s_p10, NULL) ||
      im_jw_num(pu, "p50", rl->user_tok_s_p50, NULL) ||
      im_jw_num(pu, "p90", rl->user_tok_s_p90, NULL) || buckets_json(o, rl) ||
      inflight_json(o, rl))
    return IM_NOMEM;
  return IM_OK;
}

void im_roofline_text(FILE *f, const struct im_roofline *rl) {
  if (!f || rl->not_collected)
    return;
  const struct im_roofline_sys *s = rl->sys;
  fprintf(f,
          "Roofline (%s on %ux %s): batch %.1f, context %.0f tokens: predicted step %.2f ms "
          "bandwidth-bound, %.2f ms compute-bound (%s-bound); TPOT %.2f ms\n",
          s->model->name, s->gpus ? s->gpus : 1, s->hw->name, rl->batch_mean, rl->context_mean,
          rl->pred.bw_step_s * 1e3, rl->pred.compute_step_s * 1e3,
          rl->pred.bandwidth_bound ? "bandwidth" : "compute", rl->tpot_mean_s * 1e3);
  fprintf(f,
          "  achieved bandwidth utilisation %.2f (ref %.2f), MFU %.3f (ref %.2f), %.1f output "
          "tok/s per GPU, %.1f tok/s per user (median); KV %.1f MB per 1K tokens, residency "
          "max %.3f (ref %.2f)\n",
          rl->bw_util, s->bw_util_ref, rl->mfu, s->mfu_ref, rl->output_tok_s_per_gpu,
          rl->user_tok_s_p50, rl->kv_bytes_per_1k_tokens / 1e6, rl->kv_residency_max,
          s->kv_residency_ref);
}

static const char *bound_name(int b) {
  return b == 1 ? "bandwidth" : b == 0 ? "compute" : NULL;
}

static json_t *knee_point_json(const struct im_knee_point *p) {
  json_t *o = json_object();
  const char *b = bound_name(p->bound);
  if (!o || im_jw_uint(o, "stage", p->stage) || im_jw_num(o, "input_len", p->input_len, NULL) ||
      im_jw_num(o, "context_mean", p->context_mean, NULL) ||
      im_jw_num(o, "decode_tok_per_s", p->decode_tok_s, "nothing decoded in the window") ||
      json_object_set_new(o, "bound", b ? json_string(b) : json_null())) {
    json_decref(o);
    return NULL;
  }
  return o;
}

json_t *im_knee_json(const struct im_knee_point *pts, size_t n, double drop,
                     const struct im_knee *k) {
  json_t *o = json_object(), *arr = json_array(), *knee = NULL;
  if (!o || !arr || json_object_set_new(o, "param", json_string("input_len")) ||
      json_object_set_new(o, "drop", json_real(drop)) || json_object_set_new(o, "points", arr))
    goto oom;
  for (size_t i = 0; i < n; i++)
    if (json_array_append_new(arr, knee_point_json(&pts[i])))
      goto oom;
  if (!k->found)
    return json_object_set_new(o, "knee", json_null()) ||
                   json_object_set_new(o, "reason", json_string(k->reason))
               ? (json_decref(o), NULL)
               : o;
  if (!(knee = knee_point_json(&pts[k->at])) || json_object_set_new(o, "knee", knee) ||
      im_jw_num(knee, "plateau_tok_per_s", k->plateau_tok_s, NULL) ||
      im_jw_num(knee, "kv_bytes_per_sequence", k->kv_bytes_per_sequence > 0
                                                   ? k->kv_bytes_per_sequence : NAN,
                "model not described"))
    goto oom;
  return o;
oom:
  json_decref(o);
  return NULL;
}

void im_knee_text(FILE *f, const struct im_knee_point *pts, double drop, const struct im_knee *k) {
  if (!f)
    return;
  if (!k->found) {
    fprintf(f, "Bandwidth knee: none (%s)\n", k->reason);
    return;
  }
  const struct im_knee_point *p = &pts[k->at];
  const char *b = bound_name(p->bound);
  fprintf(f,
          "Bandwidth knee: input %.0f tokens (stage %zu): decode %.1f tok/s, more than %.0f %% "
          "below the plateau %.1f tok/s of the shorter contexts; KV %.1f MB per sequence%s%s\n",
          p->input_len, p->stage, p->decode_tok_s, drop * 100, k->plateau_tok_s,
          k->kv_bytes_per_sequence / 1e6, b ? "; the roofline predicts the step " : "",
          b ? (p->bound ? "bandwidth-bound" : "compute-bound") : "");
}
