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

/* The pieces (NULL: none) joined, a string owned by v until im__vllm_free
 * (the run's argv). */
static char *keep(struct im__vllm *v, const char *p0, const char *p1, const char *p2,
                  const char *p3) {
  if (v->n_owned == (int)(sizeof v->owned / sizeof v->owned[0]))
    return NULL;
  const char *p[4] = {p0 ? p0 : "", p1 ? p1 : "", p2 ? p2 : "", p3 ? p3 : ""};
  size_t n = strlen(p[0]) + strlen(p[1]) + strlen(p[2]) + strlen(p[3]) + 1;
  char *s = malloc(n);
  if (s) {
    snprintf(s, n, "%s%s%s%s", p[0], p[1], p[2], p[3]);
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

/* The translation's state: the argv being built and what is combined at
 * the end (host and port, the ramp, the SLOs of --goodput). */
struct tr {
  struct out o;
  struct im__vllm *v;
  const char *host, *port, *ramp, *ramp_start, *ramp_end;
  char slo[256];
};

enum { TR_OK, TR_FAIL, TR_OOM, TR_MISSING };

/* --goodput KEY:VALUE... (vLLM's SLOs, into t->slo) and --metadata
 * KEY=VALUE... (tags): nargs='+', the values up to the next flag. */
static int translate_multi(struct tr *t, int argc, char **argv, int *ip, const char *a) {
  bool goodput = a[2] == 'g';
  t->v->used = true;
  /* nargs='+': the values up to the next flag. */
  int n = 0;
  while (*ip + 1 < argc && strncmp(argv[*ip + 1], "--", 2)) {
    const char *x = argv[++*ip];
    n++;
    if (goodput) {
      const char *c = strchr(x, ':');
      if (!c || (strncmp(x, "ttft:", 5) && strncmp(x, "tpot:", 5) && strncmp(x, "e2el:", 5)) ||
          !c[1]) {
        fprintf(stderr, "infermeter run: --goodput %s: KEY:VALUE with KEY ttft, tpot or e2el "
                        "and VALUE in ms\n", x);
        return TR_FAIL;
      }
      size_t at = strlen(t->slo);
      snprintf(t->slo + at, sizeof t->slo - at, "%s%.4s=%sms", at ? "," : "", x, c + 1);
    } else {
      if (!strchr(x, '=') || t->v->n_metadata == 32) {
        fprintf(stderr, "infermeter run: --metadata %s: KEY=VALUE (at most 32)\n", x);
        return TR_FAIL;
      }
      t->v->metadata[t->v->n_metadata++] = x;
      if (push(&t->o, "--tag") || push(&t->o, x))
        return TR_OOM;
    }
  }
  if (!n) {
    fprintf(stderr, "infermeter run: %s needs at least one value\n", goodput ? "--goodput" : "--metadata");
    return TR_FAIL;
  }
  return TR_OK;
}

/* One argument that is not a plain rename or refusal: vLLM's flags whose
 * meaning takes more than a new name, else infermeter's own (kept). */
static int translate_flag(struct tr *t, int argc, char **argv, int *ip, const char *a) {
  size_t fl = 0;
  const char *val;
  if (flag_is(a, "--host", &fl) || flag_is(a, "--port", &fl)) {
    bool is_host = a[2] == 'h';
    if (!(val = value_of(argc, argv, ip, a, fl)))
      return TR_MISSING;
    *(is_host ? &t->host : &t->port) = val;
    t->v->used = true;
  } else if (flag_is(a, "--endpoint", &fl)) {
    if (!(val = value_of(argc, argv, ip, a, fl)))
      return TR_MISSING;
    const char *be = !strcmp(val, "/v1/chat/completions") ? "openai-chat"
                     : !strcmp(val, "/v1/completions")    ? "openai-completions"
                                                          : NULL;
    if (!be) {
      fprintf(stderr, "infermeter run: --endpoint %s: only /v1/chat/completions and "
                      "/v1/completions are driven\n", val);
      return TR_FAIL;
    }
    if (push(&t->o, "--backend") || push(&t->o, be))
      return TR_OOM;
    t->v->used = true;
  } else if (flag_is(a, "--backend", &fl)) {
    if (!(val = value_of(argc, argv, ip, a, fl)))
      return TR_MISSING;
    t->v->backend = val;
    const char *be = !strcmp(val, "openai-chat") || !strcmp(val, "openai-completions") ? val
                     : !strcmp(val, "openai") || !strcmp(val, "vllm")               ? "openai-completions"
                                                                                   : NULL;
    if (!be) {
      fprintf(stderr, "infermeter run: --backend %s: infermeter drives openai-chat and "
                      "openai-completions (vLLM's openai and vllm)\n", val);
      return TR_FAIL;
    }
    if (push(&t->o, "--backend") || push(&t->o, be))
      return TR_OOM;
  } else if (flag_is(a, "--dataset-name", &fl)) {
    if (!(val = value_of(argc, argv, ip, a, fl)))
      return TR_MISSING;
    if (strcmp(val, "random") && strcmp(val, "sharegpt")) {
      fprintf(stderr, "infermeter run: --dataset-name %s: infermeter reads random and sharegpt "
                      "(and its own: docs/datasets.md)\n", val);
      return TR_FAIL;
    }
    /* vLLM ignores EOS on random datasets so generation runs to length. */
    if (push(&t->o, "--dataset") || push(&t->o, val) ||
        (!strcmp(val, "random") && push(&t->o, "--ignore-eos")))
      return TR_OOM;
    t->v->used = true;
  } else if (flag_is(a, "--random-prefix-len", &fl)) {
    if (!(val = value_of(argc, argv, ip, a, fl)))
      return TR_MISSING;
    if (strcmp(val, "0") && (push(&t->o, "--prefix-groups") || push(&t->o, "1") ||
                             push(&t->o, "--prefix-len") || push(&t->o, val) ||
                             push(&t->o, "--prefix-share") || push(&t->o, "1")))
      return TR_OOM;
    t->v->used = true;
  } else if (flag_is(a, "--goodput", &fl) || flag_is(a, "--metadata", &fl)) {
    int r = translate_multi(t, argc, argv, ip, a);
    if (r != TR_OK)
      return r;
  } else if (flag_is(a, "--header", &fl) && strchr(a + fl, '=') == NULL && *ip + 1 < argc &&
             strchr(argv[*ip + 1], '=') && !strchr(argv[*ip + 1], ':')) {
    /* vLLM's KEY=VALUE header; infermeter's is "Key: value". */
    const char *x = argv[++*ip];
    const char *eq = strchr(x, '=');
    char key[256];
    snprintf(key, sizeof key, "%.*s", (int)(eq - x), x);
    char *h = keep(t->v, key, ": ", eq + 1, NULL);
    if (!h || push(&t->o, "--header") || push(&t->o, h))
      return TR_OOM;
    t->v->used = true;
  } else if (flag_is(a, "--ramp-up-strategy", &fl)) {
    if (!(val = value_of(argc, argv, ip, a, fl)))
      return TR_MISSING;
    if (strcmp(val, "linear") && strcmp(val, "exponential")) {
      fprintf(stderr, "infermeter run: --ramp-up-strategy %s: linear or exponential\n", val);
      return TR_FAIL;
    }
    t->ramp = val;
    t->v->used = true;
  } else if (flag_is(a, "--ramp-up-start-rps", &fl) || flag_is(a, "--ramp-up-end-rps", &fl)) {
    if (!(val = value_of(argc, argv, ip, a, fl)))
      return TR_MISSING;
    *(a[10] == 's' ? &t->ramp_start : &t->ramp_end) = val;
    t->v->used = true;
  } else if (flag_is(a, "--ready-check-timeout-sec", &fl)) {
    if (!(val = value_of(argc, argv, ip, a, fl)))
      return TR_MISSING;
    char *d = keep(t->v, val, "s", NULL, NULL);
    if (!d || push(&t->o, "--ready-timeout") || push(&t->o, d))
      return TR_OOM;
    t->v->used = true;
  } else if (flag_is(a, "--profile", &fl) && !a[fl]) {
    if (push(&t->o, "--profile-server"))
      return TR_OOM;
    t->v->used = true;
  } else if (flag_is(a, "--percentile-metrics", &fl)) {
    if (!(val = value_of(argc, argv, ip, a, fl)))
      return TR_MISSING;
    t->v->used = true; /* every metric's percentiles are reported */
  } else if (flag_is(a, "--disable-tqdm", &fl)) {
    t->v->used = true;
    if (push(&t->o, "--no-progress"))
      return TR_OOM;
  } else if (flag_is(a, "--save-result", &fl) || flag_is(a, "--save-detailed", &fl)) {
    t->v->used = t->v->save_result = true;
    t->v->save_detailed |= a[7] == 'd';
  } else if (flag_is(a, "--result-dir", &fl) || flag_is(a, "--result-filename", &fl) ||
             flag_is(a, "--label", &fl)) {
    const char **dst = a[2] == 'l' ? &t->v->label : a[9] == 'd' ? &t->v->result_dir : &t->v->result_filename;
    if (!(val = value_of(argc, argv, ip, a, fl)))
      return TR_MISSING;
    *dst = val;
    t->v->used = true;
  } else if (flag_is(a, "--tokenizer", &fl)) {
    if (!(val = value_of(argc, argv, ip, a, fl)))
      return TR_MISSING;
    struct stat st;
    if (strcmp(val, "built-in") && strcmp(val, "server") && stat(val, &st)) {
      /* "org/name" without ".json": what vLLM users type, a Hugging Face id */
      bool hf_id = strchr(val, '/') && !strstr(val, ".json") && val[0] != '/' && val[0] != '.';
      if (hf_id)
        fprintf(stderr, "infermeter run: --tokenizer %s: a Hugging Face id is not downloaded: use "
                        "--tokenizer server (the target's own /tokenize), or fetch DeepSeek-V3's "
                        "file once with `infermeter tokenize --fetch deepseek-v3` and give its "
                        "path\n", val);
      else
        fprintf(stderr, "infermeter run: --tokenizer %s: no such file (give a tokenizer.json, "
                        "'server' or 'built-in')\n", val);
      return TR_FAIL;
    }
    if (push(&t->o, "--tokenizer") || push(&t->o, val))
      return TR_OOM;
  } else if (push(&t->o, a)) {
    return TR_OOM;
  }
  return TR_OK;
}

int im__vllm_translate(int argc, char **argv, int *out_argc, char ***out_argv,
                       struct im__vllm *v) {
  memset(v, 0, sizeof *v);
  struct tr t = {.v = v};
  if (push(&t.o, argv[0]))
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
      if (push(&t.o, renames[k].ours) || push(&t.o, val))
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
    int r = translate_flag(&t, argc, argv, &i, a);
    if (r == TR_OOM)
      goto oom;
    if (r == TR_FAIL)
      goto fail;
    if (r == TR_OK)
      continue;
    fprintf(stderr, "infermeter run: %s needs a value\n", a); /* TR_MISSING */
    goto fail;
  }
  /* vLLM's ramp: both rates required, the strategy steps the rate with the
   * request index (vllm/benchmarks/serve.py); --request-rate is then unused. */
  if (t.ramp || t.ramp_start || t.ramp_end) {
    if (!t.ramp || !t.ramp_start || !t.ramp_end) {
      fprintf(stderr, "infermeter run: --ramp-up-strategy needs --ramp-up-start-rps and "
                      "--ramp-up-end-rps (and they need it)\n");
      goto fail;
    }
    char *k = keep(v, "vllm-ramp-", t.ramp, NULL, NULL);
    if (!k || push(&t.o, "--schedule") || push(&t.o, k) || push(&t.o, "--rate") ||
        push(&t.o, t.ramp_start) || push(&t.o, "--rate-end") || push(&t.o, t.ramp_end))
      goto oom;
  }
  if (t.host || t.port) {
    char *url = keep(v, "http://", t.host ? t.host : "127.0.0.1", ":", t.port ? t.port : "8000");
    if (!url || push(&t.o, "--url") || push(&t.o, url))
      goto oom;
  }
  if (t.slo[0]) {
    char *s = keep(v, t.slo, NULL, NULL, NULL);
    if (!s || push(&t.o, "--slo") || push(&t.o, s))
      goto oom;
  }
  if (v->save_result && !v->result_dir && !v->result_filename)
    v->result_dir = ".";
  if (v->used)
    fprintf(stderr, "infermeter: vLLM flags translated (docs/migrating.md); infermeter's own "
                    "defaults kept where vLLM's differ: a 5 s warm-up excluded from the figures "
                    "(--num-warmups N or --warmup 0s to change), requests counted from the "
                    "schedule, percentiles as docs/metrics.md defines them\n");
  *out_argc = t.o.n;
  *out_argv = t.o.v;
  return 0;
oom:
  fprintf(stderr, "infermeter run: out of memory\n");
fail:
  free(t.o.v);
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
