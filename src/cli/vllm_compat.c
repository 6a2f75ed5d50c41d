/* vLLM's benchmark flags: see cli/vllm_compat.h. */
#include "cli/vllm_compat.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "record/reader.h"
#include "record/record.h"

/* A vLLM flag taking one value, and the infermeter flag of the same meaning. */
static const struct {
  const char *vllm, *ours;
} renames[] = {
    {"--request-rate", "--rate"},          {"--num-prompts", "--requests"},
    {"--base-url", "--url"},               {"--random-input-len", "--input-len"},
    {"--random-output-len", "--output-len"}, {"--random-range-ratio", "--range-ratio"},
    {"--sharegpt-output-len", "--output-len"}, {"--served-model-name", "--model"},
    {"--num-warmups", "--warmup"},         {"--metric-percentiles", "--percentiles"},
};

/* vLLM flags infermeter does not honour, and what to use instead. */
static const struct {
  const char *flag, *instead;
} refused[] = {
    {"--top-k", "no top_k"}, {"--min-p", "no min_p"},
    {"--frequency-penalty", "no penalties"}, {"--presence-penalty", "no penalties"},
    {"--repetition-penalty", "no penalties"}, {"--append-result", "--save-result"},
    {"--plot-timeline", "the HTML report (DIR/report.html)"},
    {"--plot-dataset-stats", "the HTML report (DIR/report.html)"},
    {"--lora-modules", "no adapter mix on the command line yet"},
    {"--trust-remote-code", "--tokenizer FILE (a tokenizer.json)"},
    {"--tokenizer-mode", "--tokenizer FILE (a tokenizer.json)"},
    {"--skip-tokenizer-init", "the built-in tokenizer (the default)"},
    {"--extra-body", "a dataset's extra object (docs/datasets.md)"},
    {"--request-id-prefix", "X-Request-Id is im-<run salt>-<id>"},
};

struct out {
  char **v;
  int n, cap;
};

static int push(struct out *o, const char *s) {
  if (o->n + 2 > o->cap) {
    int cap = o->cap ? 2 * o->cap : 64;
    char **v = realloc(o->v, (size_t)cap * sizeof *v);
    if (!v)
      return -1;
    o->v = v;
    o->cap = cap;
  }
  o->v[o->n++] = (char *)s;
  o->v[o->n] = NULL;
  return 0;
}

/* A string made here, owned by v until im__vllm_free (the run's argv). */
static char *keep(struct im__vllm *v, const char *fmt, const char *a, const char *b) {
  if (v->n_owned == (int)(sizeof v->owned / sizeof v->owned[0]))
    return NULL;
  size_t n = strlen(fmt) + strlen(a) + (b ? strlen(b) : 0) + 1;
  char *s = malloc(n);
  if (s) {
    snprintf(s, n, fmt, a, b ? b : "");
    v->owned[v->n_owned++] = s;
  }
  return s;
}

void im__vllm_free(struct im__vllm *v) {
  for (int i = 0; v && i < v->n_owned; i++)
    free(v->owned[i]);
  if (v)
    v->n_owned = 0;
}

/* "--flag=value" or "--flag value": the value (NULL when missing). */
static const char *value_of(int argc, char **argv, int *i, const char *arg, size_t flen) {
  if (arg[flen] == '=')
    return arg + flen + 1;
  return *i + 1 < argc ? argv[++*i] : NULL;
}

static bool flag_is(const char *arg, const char *flag, size_t *len) {
  size_t n = strlen(flag);
  if (strncmp(arg, flag, n) || (arg[n] && arg[n] != '='))
    return false;
  *len = n;
  return true;
}

int im__vllm_translate(int argc, char **argv, int *out_argc, char ***out_argv,
                       struct im__vllm *v) {
  memset(v, 0, sizeof *v);
  struct out o = {0};
  const char *host = NULL, *port = NULL;
  const char *ramp = NULL, *ramp_start = NULL, *ramp_end = NULL;
  char slo[256] = "";
  if (push(&o, argv[0]))
    goto oom;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    size_t fl = 0;
    bool done = false;
    for (size_t k = 0; k < sizeof renames / sizeof renames[0] && !done; k++) {
      if (!flag_is(a, renames[k].vllm, &fl))
        continue;
      const char *val = value_of(argc, argv, &i, a, fl);
      if (!val) {
        fprintf(stderr, "infermeter run: %s needs a value\n", renames[k].vllm);
        goto fail;
      }
      v->used = done = true;
      /* vLLM's default rate, inf, sends everything at once: --rate inf,
       * a burst (dispatch lag is then not judged). */
      if (push(&o, renames[k].ours) || push(&o, val))
        goto oom;
    }
    for (size_t k = 0; k < sizeof refused / sizeof refused[0] && !done; k++)
      if (flag_is(a, refused[k].flag, &fl)) {
        fprintf(stderr, "infermeter run: vLLM's %s is not supported: %s\n", refused[k].flag,
                refused[k].instead);
        goto fail;
      }
    if (done)
      continue;
    const char *val;
    if (flag_is(a, "--host", &fl) || flag_is(a, "--port", &fl)) {
      bool is_host = a[2] == 'h';
      if (!(val = value_of(argc, argv, &i, a, fl)))
        goto missing;
      *(is_host ? &host : &port) = val;
      v->used = true;
    } else if (flag_is(a, "--endpoint", &fl)) {
      if (!(val = value_of(argc, argv, &i, a, fl)))
        goto missing;
      const char *be = !strcmp(val, "/v1/chat/completions") ? "openai-chat"
                       : !strcmp(val, "/v1/completions")    ? "openai-completions"
                                                            : NULL;
      if (!be) {
        fprintf(stderr, "infermeter run: --endpoint %s: only /v1/chat/completions and "
                        "/v1/completions are driven\n", val);
        goto fail;
      }
      if (push(&o, "--backend") || push(&o, be))
        goto oom;
      v->used = true;
    } else if (flag_is(a, "--backend", &fl)) {
      if (!(val = value_of(argc, argv, &i, a, fl)))
        goto missing;
      v->backend = val;
      const char *be = !strcmp(val, "openai-chat") || !strcmp(val, "openai-completions") ? val
                       : !strcmp(val, "openai") || !strcmp(val, "vllm")               ? "openai-completions"
                                                                                     : NULL;
      if (!be) {
        fprintf(stderr, "infermeter run: --backend %s: infermeter drives openai-chat and "
                        "openai-completions (vLLM's openai and vllm)\n", val);
        goto fail;
      }
      if (push(&o, "--backend") || push(&o, be))
        goto oom;
    } else if (flag_is(a, "--dataset-name", &fl)) {
      if (!(val = value_of(argc, argv, &i, a, fl)))
        goto missing;
      if (strcmp(val, "random") && strcmp(val, "sharegpt")) {
        fprintf(stderr, "infermeter run: --dataset-name %s: infermeter reads random and sharegpt "
                        "(and its own: docs/datasets.md)\n", val);
        goto fail;
      }
      /* vLLM ignores EOS on random datasets so generation runs to length. */
      if (push(&o, "--dataset") || push(&o, val) ||
          (!strcmp(val, "random") && push(&o, "--ignore-eos")))
        goto oom;
      v->used = true;
    } else if (flag_is(a, "--random-prefix-len", &fl)) {
      if (!(val = value_of(argc, argv, &i, a, fl)))
        goto missing;
      if (strcmp(val, "0") && (push(&o, "--prefix-groups") || push(&o, "1") ||
                               push(&o, "--prefix-len") || push(&o, val) ||
                               push(&o, "--prefix-share") || push(&o, "1")))
        goto oom;
      v->used = true;
    } else if (flag_is(a, "--goodput", &fl) || flag_is(a, "--metadata", &fl)) {
      bool goodput = a[2] == 'g';
      v->used = true;
      /* nargs='+': the values up to the next flag. */
      int n = 0;
      while (i + 1 < argc && strncmp(argv[i + 1], "--", 2)) {
        const char *x = argv[++i];
        n++;
        if (goodput) {
          const char *c = strchr(x, ':');
          if (!c || (strncmp(x, "ttft:", 5) && strncmp(x, "tpot:", 5) && strncmp(x, "e2el:", 5)) ||
              !c[1]) {
            fprintf(stderr, "infermeter run: --goodput %s: KEY:VALUE with KEY ttft, tpot or e2el "
                            "and VALUE in ms\n", x);
            goto fail;
          }
          size_t at = strlen(slo);
          snprintf(slo + at, sizeof slo - at, "%s%.4s=%sms", at ? "," : "", x, c + 1);
        } else {
          if (!strchr(x, '=') || v->n_metadata == 32) {
            fprintf(stderr, "infermeter run: --metadata %s: KEY=VALUE (at most 32)\n", x);
            goto fail;
          }
          v->metadata[v->n_metadata++] = x;
          if (push(&o, "--tag") || push(&o, x))
            goto oom;
        }
      }
      if (!n) {
        fprintf(stderr, "infermeter run: %s needs at least one value\n", goodput ? "--goodput" : "--metadata");
        goto fail;
      }
    } else if (flag_is(a, "--header", &fl) && strchr(a + fl, '=') == NULL && i + 1 < argc &&
               strchr(argv[i + 1], '=') && !strchr(argv[i + 1], ':')) {
      /* vLLM's KEY=VALUE header; infermeter's is "Key: value". */
      const char *x = argv[++i];
      const char *eq = strchr(x, '=');
      char key[256];
      snprintf(key, sizeof key, "%.*s", (int)(eq - x), x);
      char *h = keep(v, "%s: %s", key, eq + 1);
      if (!h || push(&o, "--header") || push(&o, h))
        goto oom;
      v->used = true;
    } else if (flag_is(a, "--ramp-up-strategy", &fl)) {
      if (!(val = value_of(argc, argv, &i, a, fl)))
        goto missing;
      if (strcmp(val, "linear") && strcmp(val, "exponential")) {
        fprintf(stderr, "infermeter run: --ramp-up-strategy %s: linear or exponential\n", val);
        goto fail;
      }
      ramp = val;
      v->used = true;
    } else if (flag_is(a, "--ramp-up-start-rps", &fl) || flag_is(a, "--ramp-up-end-rps", &fl)) {
      if (!(val = value_of(argc, argv, &i, a, fl)))
        goto missing;
      *(a[10] == 's' ? &ramp_start : &ramp_end) = val;
      v->used = true;
    } else if (flag_is(a, "--ready-check-timeout-sec", &fl)) {
      if (!(val = value_of(argc, argv, &i, a, fl)))
        goto missing;
      char *d = keep(v, "%ss", val, NULL);
      if (!d || push(&o, "--ready-timeout") || push(&o, d))
        goto oom;
      v->used = true;
    } else if (flag_is(a, "--profile", &fl) && !a[fl]) {
      if (push(&o, "--profile-server"))
        goto oom;
      v->used = true;
    } else if (flag_is(a, "--percentile-metrics", &fl)) {
      if (!(val = value_of(argc, argv, &i, a, fl)))
        goto missing;
      v->used = true; /* every metric's percentiles are reported */
    } else if (flag_is(a, "--disable-tqdm", &fl)) {
      v->used = true;
      if (push(&o, "--no-progress"))
        goto oom;
    } else if (flag_is(a, "--save-result", &fl) || flag_is(a, "--save-detailed", &fl)) {
      v->used = v->save_result = true;
      v->save_detailed |= a[7] == 'd';
    } else if (flag_is(a, "--result-dir", &fl) || flag_is(a, "--result-filename", &fl) ||
               flag_is(a, "--label", &fl)) {
      const char **dst = a[2] == 'l' ? &v->label : a[9] == 'd' ? &v->result_dir : &v->result_filename;
      if (!(val = value_of(argc, argv, &i, a, fl)))
        goto missing;
      *dst = val;
      v->used = true;
    } else if (flag_is(a, "--tokenizer", &fl)) {
      if (!(val = value_of(argc, argv, &i, a, fl)))
        goto missing;
      struct stat st;
      if (strcmp(val, "built-in") && strcmp(val, "server") && stat(val, &st)) {
        fprintf(stderr, "infermeter run: --tokenizer %s: give a tokenizer.json file (a Hugging "
                        "Face id is not downloaded)\n", val);
        goto fail;
      }
      if (push(&o, "--tokenizer") || push(&o, val))
        goto oom;
    } else if (push(&o, a)) {
      goto oom;
    }
    continue;
  missing:
    fprintf(stderr, "infermeter run: %s needs a value\n", a);
    goto fail;
  }
  /* vLLM's ramp: both rates required, the strategy steps the rate with the
   * request index (vllm/benchmarks/serve.py); --request-rate is then unused. */
  if (ramp || ramp_start || ramp_end) {
    if (!ramp || !ramp_start || !ramp_end) {
      fprintf(stderr, "infermeter run: --ramp-up-strategy needs --ramp-up-start-rps and "
                      "--ramp-up-end-rps (and they need it)\n");
      goto fail;
    }
    char *k = keep(v, "vllm-ramp-%s%s", ramp, NULL);
    if (!k || push(&o, "--schedule") || push(&o, k) || push(&o, "--rate") ||
        push(&o, ramp_start) || push(&o, "--rate-end") || push(&o, ramp_end))
      goto oom;
  }
  if (host || port) {
    char *url = keep(v, "http://%s:%s", host ? host : "127.0.0.1", port ? port : "8000");
    if (!url || push(&o, "--url") || push(&o, url))
      goto oom;
  }
  if (slo[0]) {
    char *s = keep(v, "%s%s", slo, NULL);
    if (!s || push(&o, "--slo") || push(&o, s))
      goto oom;
  }
  if (v->save_result && !v->result_dir && !v->result_filename)
    v->result_dir = ".";
  if (v->used)
    fprintf(stderr, "infermeter: vLLM flags translated (docs/migrating.md); infermeter's own "
                    "defaults kept where vLLM's differ: a 5 s warm-up excluded from the figures "
                    "(--num-warmups N or --warmup 0s to change), requests counted from the "
                    "schedule, percentiles as docs/metrics.md defines them\n");
  *out_argc = o.n;
  *out_argv = o.v;
  return 0;
oom:
  fprintf(stderr, "infermeter run: out of memory\n");
fail:
  free(o.v);
  im__vllm_free(v);
  return -1;
}

/* ---- vLLM's result file ------------------------------------------------- */

static json_t *num_or(const json_t *v) { return json_is_number(v) ? json_deep_copy(v) : json_null(); }

int im__vllm_save(const char *dir, const struct im__vllm *v) {
  char path[4200];
  snprintf(path, sizeof path, "%s/results.json", dir);
  json_error_t je;
  json_t *res = json_load_file(path, 0, &je);
  const json_t *sum = json_object_get(res, "summary"), *m = json_object_get(res, "manifest");
  if (!json_is_object(sum)) {
    fprintf(stderr, "infermeter: --save-result: %s has no one-stage summary (a sweep writes "
                    "none: vLLM's file holds one configuration)\n", path);
    json_decref(res);
    return -1;
  }
  const json_t *sch = json_object_get(m, "schedule"), *tgt = json_object_get(m, "target");
  const char *model = json_string_value(json_object_get(tgt, "model"));
  const char *backend = v->backend ? v->backend : json_string_value(json_object_get(tgt, "backend"));
  const char *tok = json_string_value(json_object_get(json_object_get(m, "workload"), "tokenizer"));
  time_t now = time(NULL);
  char date[32];
  strftime(date, sizeof date, "%Y%m%d-%H%M%S", localtime(&now));
  double rate = json_number_value(json_object_get(sch, "rate"));
  json_t *out = json_object();
  json_object_set_new(out, "date", json_string(date));
  json_object_set_new(out, "endpoint_type", json_string(backend ? backend : "openai-chat"));
  json_object_set_new(out, "backend", json_string(backend ? backend : "openai-chat"));
  json_object_set_new(out, "label", v->label ? json_string(v->label) : json_null());
  json_object_set_new(out, "model_id", json_string(model ? model : ""));
  json_object_set_new(out, "tokenizer_id", json_string(tok && strcmp(tok, "built-in") ? tok : model ? model : ""));
  json_t *np = json_object_get(sch, "requests");
  json_object_set_new(out, "num_prompts",
                      json_is_integer(np) ? json_deep_copy(np)
                                          : json_integer(json_integer_value(json_object_get(sum, "completed")) +
                                                         json_integer_value(json_object_get(sum, "failed"))));
  for (int i = 0; i < v->n_metadata; i++) {
    const char *eq = strchr(v->metadata[i], '=');
    char key[256];
    snprintf(key, sizeof key, "%.*s", (int)(eq - v->metadata[i]), v->metadata[i]);
    json_object_set_new(out, key, json_string(eq + 1));
  }
  json_object_set_new(out, "request_rate",
                      json_is_number(json_object_get(sch, "rate")) ? json_real(rate)
                                                                  : json_string("inf")); /* a burst */
  json_object_set_new(out, "burstiness", json_is_number(json_object_get(sch, "burstiness"))
                                             ? json_deep_copy(json_object_get(sch, "burstiness"))
                                             : json_real(1.0));
  json_object_set_new(out, "max_concurrency", num_or(json_object_get(sch, "max_concurrency")));
  json_object_update(out, (json_t *)sum); /* the benchmark's figures, computed vLLM's way */
  if (v->save_detailed) {
    snprintf(path, sizeof path, "%s/requests.jsonl", dir);
    struct im_record *recs = NULL;
    size_t n = 0;
    struct im_read_report rr;
    memset(&rr, 0, sizeof rr);
    json_t *in = json_array(), *ol = json_array(), *st = json_array(), *tt = json_array(),
           *it = json_array(), *gt = json_array(), *er = json_array();
    if (im_records_read_path(path, &recs, &n, &rr) == IM_OK) {
      for (size_t i = 0; i < n; i++) {
        const struct im_record *r = &recs[i];
        /* One entry per user request, as vLLM: its final attempt. */
        if (r->kind != IM_KIND_MEASURED && r->kind != IM_KIND_RETRY)
          continue;
        bool final = true;
        for (size_t k = 0; k < n && final; k++)
          final = !(recs[k].logical_id == r->logical_id && recs[k].attempt > r->attempt);
        if (!final)
          continue;
        bool ok = r->error == IM_EC_NONE && r->t_first >= 0;
        json_array_append_new(in, json_integer(r->prompt_tokens));
        json_array_append_new(ol, json_integer(ok ? r->output_tokens : 0));
        json_array_append_new(st, json_real((double)r->t_start / 1e9));
        json_array_append_new(tt, json_real(ok ? (double)(r->t_first - r->t_start) / 1e9 : 0.0));
        json_t *gaps = json_array();
        for (uint32_t k = 1; ok && r->chunk_us && k < r->n_chunks; k++)
          json_array_append_new(gaps, json_real((double)(r->chunk_us[k] - r->chunk_us[k - 1]) / 1e6));
        json_array_append_new(it, gaps);
        json_array_append_new(gt, json_string(""));
        json_array_append_new(er, json_string(ok ? "" : im_errclass_name(r->error)));
      }
    }
    im_records_free(recs, n);
    json_object_set_new(out, "input_lens", in);
    json_object_set_new(out, "output_lens", ol);
    json_object_set_new(out, "start_times", st);
    json_object_set_new(out, "ttfts", tt);
    json_object_set_new(out, "itls", it);
    json_object_set_new(out, "generated_texts", gt);
    json_object_set_new(out, "errors", er);
  }
  char file[4200];
  if (v->result_dir && mkdir(v->result_dir, 0755) && errno != EEXIST)
    fprintf(stderr, "infermeter: --result-dir %s: %s\n", v->result_dir, strerror(errno));
  if (v->result_filename && v->result_filename[0] == '/')
    snprintf(file, sizeof file, "%s", v->result_filename);
  else if (v->result_filename)
    snprintf(file, sizeof file, "%s/%s", v->result_dir ? v->result_dir : ".", v->result_filename);
  else {
    const char *base = model ? strrchr(model, '/') : NULL;
    char rs[32], conc[48] = "";
    if (!json_is_number(json_object_get(sch, "rate")) || rate >= 100000) /* a burst */
      snprintf(rs, sizeof rs, "inf");
    else
      snprintf(rs, sizeof rs, "%g", rate);
    if (json_is_integer(json_object_get(sch, "max_concurrency")))
      snprintf(conc, sizeof conc, "-concurrency%lld",
               (long long)json_integer_value(json_object_get(sch, "max_concurrency")));
    snprintf(file, sizeof file, "%s/%s-%sqps%s-%s-%s.json", v->result_dir,
             v->label ? v->label : backend ? backend : "openai-chat", rs, conc,
             base ? base + 1 : model ? model : "model", date);
  }
  int rc = json_dump_file(out, file, JSON_REAL_PRECISION(17));
  if (rc)
    fprintf(stderr, "infermeter: --save-result: cannot write %s\n", file);
  else
    fprintf(stderr, "infermeter: vLLM result file: %s\n", file);
  json_decref(out);
  json_decref(res);
  return rc ? -1 : 0;
}
