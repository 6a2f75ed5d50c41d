/* vLLM's benchmark flags: see cli/vllm_compat.h. */
#include "cli/vllm_compat.h"

#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "results/vllm_file.h"

/* A vLLM flag taking one value, and the infermeter flag of the same meaning. */
static const struct {
  const char *vllm, *ours;
} renames[] = {
    {"--base-url", "--url"},
    {"--random-output-len", "--output-len"}, {"--random-range-ratio", "--range-ratio"},
    {"--sharegpt-output-len", "--output-len"}, {"--served-model-name", "--model"},
    {"--probe-request-rate", "--probe-rate"},
};

/* infermeter's own flags that describe the load: a command line with one
 * of them keeps infermeter's defaults for what it leaves out; one without
 * any gets vLLM's (docs/migrating.md). */
static const char *const own_load[] = {
    "--rate", "--requests", "--duration", "--concurrency", "--sessions", "--session-rate",
    "--sweep", "--grid", "--scenario", "--trace", "--schedule", "--warmup", "--mix",
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
    {"--lora-assignment", "no adapter mix on the command line yet"},
    {"--chat-template-kwargs", "a dataset's extra object (docs/datasets.md)"},
    {"--timeline-itl-thresholds", "the HTML report (DIR/report.html)"},
    {"--use-beam-search", "no beam search"},
    {"--self-timed", "--trace FILE (a trace with timestamps replays at them)"},
    {"--no-self-timed", "--trace FILE with --rate R (the trace's lengths at a rate)"},
    {"--no-oversample", "--num-prompts at most the file's prompts (infermeter cycles a shorter file)"},
    {"--skip-chat-template", "nothing: the prompt is sent as the dataset writes it"},
    {"--custom-skip-chat-template", "nothing: the prompt is sent as the dataset writes it"},
    {"--no-stream", "a dataset file (--dataset-path); Hugging Face ids are not downloaded"},
    {"--hf-subset", "a dataset file; Hugging Face datasets are not downloaded"},
    {"--hf-split", "a dataset file; Hugging Face datasets are not downloaded"},
    {"--hf-name", "a dataset file; Hugging Face datasets are not downloaded"},
    {"--hf-output-len", "a dataset file; Hugging Face datasets are not downloaded"},
    {"--spec-bench-output-len", "--dataset-name custom with the prompts in a file"},
    {"--spec-bench-category", "--dataset-name custom with the prompts in a file"},
    {"--blazedit-min-distance", "--dataset-name custom with the prompts in a file"},
    {"--blazedit-max-distance", "--dataset-name custom with the prompts in a file"},
    {"--prefix-repetition-prefix-len", "--prefix-groups G --prefix-len N --prefix-share 1"},
    {"--prefix-repetition-suffix-len", "--prefix-groups G --prefix-len N --prefix-share 1"},
    {"--prefix-repetition-num-prefixes", "--prefix-groups G --prefix-len N --prefix-share 1"},
    {"--prefix-repetition-output-len", "--prefix-groups G --prefix-len N --prefix-share 1"},
    {"--random-batch-size", "no embeddings benchmark"},
    {"--no-reranker", "no reranker benchmark"},
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
  const char *host, *port;
  char slo[256];
  /* The load as vLLM's flags describe it, combined at the end. */
  const char *dataset, *dataset_path, *prompts, *warmups, *rate;
  const char *sonnet_in, *sonnet_out, *sonnet_prefix, *custom_out, *random_in, *random_prefix;
  bool own_load;                         /* one of own_load[] was given */
  bool own_dataset, own_warmup, output_len_given, backend_given;
  const char *max_conc; /* --max-concurrency's value, NULL: none */
  char said[1024];      /* what the notice says, "; "-separated */
};

enum { TR_OK, TR_FAIL, TR_OOM, TR_MISSING, TR_NOT_MINE };

/* vLLM's --percentile-metrics names infermeter computes vLLM's way. */
static bool metrics_ok(const char *list) {
  static const char *const names[] = {"ttft", "tpot", "itl", "e2el"};
  const char *p = list;
  while (*p) {
    size_t n = strcspn(p, ","), k = 0;
    while (k < 4 && (strlen(names[k]) != n || strncmp(p, names[k], n)))
      k++;
    if (k == 4)
      return false;
    p += n + (p[n] == ',');
  }
  return *list != '\0';
}

/* A vLLM flag whose value is kept until the end (the load is put together
 * there): where it goes, or NULL. *fl: the flag's length. */
static const char **saved_value(struct tr *t, const char *a, size_t *fl) {
  static const struct {
    const char *flag;
    size_t off;
  } keep_at[] = {
      {"--num-prompts", offsetof(struct tr, prompts)},
      {"--num-warmups", offsetof(struct tr, warmups)},
      {"--request-rate", offsetof(struct tr, rate)},
      {"--dataset-path", offsetof(struct tr, dataset_path)},
      {"--sonnet-input-len", offsetof(struct tr, sonnet_in)},
      {"--sonnet-output-len", offsetof(struct tr, sonnet_out)},
      {"--sonnet-prefix-len", offsetof(struct tr, sonnet_prefix)},
      {"--custom-output-len", offsetof(struct tr, custom_out)},
      {"--random-input-len", offsetof(struct tr, random_in)},
      {"--random-prefix-len", offsetof(struct tr, random_prefix)},
  };
  for (size_t k = 0; k < sizeof keep_at / sizeof keep_at[0]; k++)
    if (flag_is(a, keep_at[k].flag, fl))
      return (const char **)(void *)((char *)t + keep_at[k].off);
  return NULL;
}

/* infermeter's own flag a: notes whether it describes the load. */
static void note_own(struct tr *t, const char *a) {
  size_t fl;
  for (size_t k = 0; k < sizeof own_load / sizeof own_load[0]; k++)
    if (flag_is(a, own_load[k], &fl))
      t->own_load = true;
  t->own_warmup |= flag_is(a, "--warmup", &fl);
  t->own_dataset |= flag_is(a, "--dataset", &fl) || flag_is(a, "--trace", &fl) ||
                    flag_is(a, "--scenario", &fl);
  t->output_len_given |= flag_is(a, "--output-len", &fl);
}

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

/* The flags whose values are kept for the end or for vLLM's file:
 * TR_NOT_MINE when a is none of them. */
static int translate_kept(struct tr *t, int argc, char **argv, int *ip, const char *a) {
  size_t fl = 0;
  const char *val;
  if (flag_is(a, "--max-concurrency", &fl)) {
    if (!(val = value_of(argc, argv, ip, a, fl)))
      return TR_MISSING;
    t->max_conc = val;
    if (push(&t->o, "--max-concurrency") || push(&t->o, val))
      return TR_OOM;
  } else if (flag_is(a, "--percentile-metrics", &fl)) {
    if (!(val = value_of(argc, argv, ip, a, fl)))
      return TR_MISSING;
    if (!metrics_ok(val)) {
      fprintf(stderr, "infermeter run: --percentile-metrics %s: a comma-separated list of ttft, "
                      "tpot, itl and e2el\n", val);
      return TR_FAIL;
    }
    t->v->percentile_metrics = val; /* also infermeter's own flag: not "used" */
    if (push(&t->o, "--percentile-metrics") || push(&t->o, val))
      return TR_OOM;
  } else if (flag_is(a, "--metric-percentiles", &fl)) {
    if (!(val = value_of(argc, argv, ip, a, fl)))
      return TR_MISSING;
    t->v->metric_percentiles = val; /* checked by --percentiles */
    t->v->used = true;
    if (push(&t->o, "--percentiles") || push(&t->o, val))
      return TR_OOM;
  } else if (flag_is(a, "--disable-shuffle", &fl)) {
    t->v->used = true; /* infermeter takes a file's prompts in order, unshuffled */
  } else if (saved_value(t, a, &fl) != NULL) {
    const char **dst = saved_value(t, a, &fl);
    if (!(val = value_of(argc, argv, ip, a, fl)))
      return TR_MISSING;
    *dst = val;
    if (dst != &t->dataset_path) /* also infermeter's own */
      t->v->used = true;
  } else {
    return TR_NOT_MINE;
  }
  return TR_OK;
}

/* One argument that is not a plain rename or refusal: vLLM's flags whose
 * meaning takes more than a new name, else infermeter's own (kept). */
static int translate_flag(struct tr *t, int argc, char **argv, int *ip, const char *a) {
  size_t fl = 0;
  const char *val;
  int kept = translate_kept(t, argc, argv, ip, a);
  if (kept != TR_NOT_MINE)
    return kept;
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
    t->v->used = t->backend_given = true;
  } else if (flag_is(a, "--backend", &fl)) {
    t->backend_given = true;
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
    if (strcmp(val, "random") && strcmp(val, "sharegpt") && strcmp(val, "custom") &&
        strcmp(val, "sonnet")) {
      fprintf(stderr, "infermeter run: --dataset-name %s: infermeter reads random, sharegpt, "
                      "custom and sonnet (and its own: docs/datasets.md)\n", val);
      return TR_FAIL;
    }
    t->dataset = val;
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
    t->v->ramp = val;
    t->v->used = true;
  } else if (flag_is(a, "--ramp-up-start-rps", &fl) || flag_is(a, "--ramp-up-end-rps", &fl)) {
    if (!(val = value_of(argc, argv, ip, a, fl)))
      return TR_MISSING;
    *(a[10] == 's' ? &t->v->ramp_start : &t->v->ramp_end) = val;
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
  } else {
    note_own(t, a);
    if (push(&t->o, a))
      return TR_OOM;
  }
  return TR_OK;
}

/* Adds a part to the notice. */
static void say(struct tr *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void say(struct tr *t, const char *fmt, ...) {
  size_t at = strlen(t->said);
  if (at && at + 2 < sizeof t->said)
    at += (size_t)snprintf(t->said + at, sizeof t->said - at, "; ");
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(t->said + at, sizeof t->said - at, fmt, ap);
  va_end(ap);
}

/* A count flag's value: a whole number >= min, else -1 (said). */
static long long count_of(const char *flag, const char *val, long long min) {
  char *end = NULL;
  errno = 0;
  long long n = strtoll(val, &end, 10);
  if (errno || end == val || *end || n < min || n > 100000000) {
    fprintf(stderr, "infermeter run: %s %s: a whole number >= %lld\n", flag, val, min);
    return -1;
  }
  return n;
}

/* vLLM's --dataset-name as infermeter's dataset flags. vLLM's defaults
 * (vllm/benchmarks/serve.py and datasets.py): the dataset is random, which
 * ignores EOS; sonnet 550 input, 150 output, 200 prefix tokens; custom 256
 * output tokens. */
static int finish_dataset(struct tr *t) {
  const char *ds = t->dataset;
  if (!ds && t->v->used && !t->own_load && !t->own_dataset) {
    ds = "random";
    say(t, "random prompts of --random-input-len tokens, EOS ignored (vLLM's default "
           "--dataset-name random)");
  }
  const char *path = t->dataset_path;
  bool ok = true;
  if (ds && !strcmp(ds, "sonnet")) {
    /* Not Shakespeare: synthetic text of the same lengths with the same
     * shared prefix (what the sonnet dataset is used for). */
    path = NULL;
    ok = !push(&t->o, "--dataset") && !push(&t->o, "random") && !push(&t->o, "--input-len") &&
         !push(&t->o, t->sonnet_in ? t->sonnet_in : "550") && !push(&t->o, "--output-len") &&
         !push(&t->o, t->sonnet_out ? t->sonnet_out : "150") && !push(&t->o, "--prefix-groups") &&
         !push(&t->o, "1") && !push(&t->o, "--prefix-len") &&
         !push(&t->o, t->sonnet_prefix ? t->sonnet_prefix : "200") && !push(&t->o, "--prefix-share") &&
         !push(&t->o, "1");
    say(t, "--dataset-name sonnet: synthetic text of the sonnet lengths and shared prefix, not "
           "the lines of %s", t->dataset_path ? t->dataset_path : "sonnet.txt");
  } else if (ds && !strcmp(ds, "custom")) {
    ok = !push(&t->o, "--dataset") && !push(&t->o, "jsonl");
    if (ok && (t->custom_out || !t->output_len_given))
      ok = !push(&t->o, "--output-len") && !push(&t->o, t->custom_out ? t->custom_out : "256");
  } else if (ds) {
    /* vLLM ignores EOS on random datasets so generation runs to length. */
    ok = !push(&t->o, "--dataset") && !push(&t->o, ds) &&
         (strcmp(ds, "random") || !push(&t->o, "--ignore-eos"));
  }
  if (ok && path)
    ok = !push(&t->o, "--dataset-path") && !push(&t->o, path);
  /* vLLM's random prompt is --random-prefix-len shared tokens followed by
   * --random-input-len others (datasets.py); infermeter's --input-len
   * counts the prefix in. */
  if (ds && !strcmp(ds, "sonnet"))
    return ok ? TR_OK : TR_OOM;
  long long pre = t->random_prefix ? count_of("--random-prefix-len", t->random_prefix, 0) : 0;
  long long len = t->random_in ? count_of("--random-input-len", t->random_in, 1) : 1024;
  if (pre < 0 || len < 0)
    return TR_FAIL;
  char total[32];
  snprintf(total, sizeof total, "%lld", len + pre);
  char *in = pre > 0 ? keep(t->v, total, NULL, NULL, NULL) : (char *)t->random_in;
  if (ok && (pre > 0 || t->random_in))
    ok = in && !push(&t->o, "--input-len") && !push(&t->o, in);
  if (ok && pre > 0)
    ok = !push(&t->o, "--prefix-groups") && !push(&t->o, "1") && !push(&t->o, "--prefix-len") &&
         !push(&t->o, t->random_prefix) && !push(&t->o, "--prefix-share") && !push(&t->o, "1");
  return ok ? TR_OK : TR_OOM;
}

/* The load: vLLM's ramp, rate, prompts and warm-ups as infermeter's flags.
 * A command line that describes its load with none of infermeter's own
 * flags gets vLLM's defaults (--request-rate inf, --num-prompts 1000,
 * --num-warmups 0; vllm/benchmarks/serve.py); one with them keeps
 * infermeter's for what it leaves out. */
static int finish_load(struct tr *t) {
  struct im__vllm *v = t->v;
  v->num_prompts = -1;
  if (v->ramp || v->ramp_start || v->ramp_end) {
    /* vLLM's ramp: both rates required, the strategy steps the rate with
     * the request index; --request-rate is refused with it (serve.py). */
    if (!v->ramp || !v->ramp_start || !v->ramp_end || t->rate) {
      fprintf(stderr, "infermeter run: --ramp-up-strategy needs --ramp-up-start-rps and "
                      "--ramp-up-end-rps (and they need it), and no --request-rate\n");
      return TR_FAIL;
    }
    char *k = keep(v, "vllm-ramp-", v->ramp, NULL, NULL);
    if (!k || push(&t->o, "--schedule") || push(&t->o, k) || push(&t->o, "--rate") ||
        push(&t->o, v->ramp_start) || push(&t->o, "--rate-end") || push(&t->o, v->ramp_end))
      return TR_OOM;
  }
  bool vdefaults = v->used && !t->own_load;
  if (vdefaults && !t->backend_given) { /* serve.py: --backend openai, --endpoint /v1/completions */
    v->backend = "openai";
    if (push(&t->o, "--backend") || push(&t->o, "openai-completions"))
      return TR_OOM;
    say(t, "/v1/completions (vLLM's default --backend openai)");
  }
  const char *rate = t->rate;
  if (!rate && !v->ramp && vdefaults) {
    rate = "inf";
    if (t->max_conc)
      say(t, "every request at once, at most %s in flight (vLLM's default --request-rate inf)",
          t->max_conc);
    else
      say(t, "every request at once (vLLM's default --request-rate inf)");
  }
  if (rate && (push(&t->o, "--rate") || push(&t->o, rate)))
    return TR_OOM;
  long long n = -1, w = 0;
  if (t->prompts && (n = count_of("--num-prompts", t->prompts, 1)) < 0)
    return TR_FAIL;
  if (t->warmups && (w = count_of("--num-warmups", t->warmups, 0)) < 0)
    return TR_FAIL;
  if (!t->prompts && vdefaults) {
    n = 1000;
    say(t, "1000 requests (vLLM's default --num-prompts)");
  }
  v->num_warmups = w;
  char nb[32], wb[32];
  snprintf(nb, sizeof nb, "%lld", n + (t->own_warmup ? 0 : w));
  snprintf(wb, sizeof wb, "%lld", w);
  if (n > 0) {
    /* vLLM's N prompts are N measured requests; its warm-ups come on top. */
    v->num_prompts = n;
    char *ns = keep(v, nb, NULL, NULL, NULL), *ws = keep(v, wb, NULL, NULL, NULL);
    if (!ns || !ws || push(&t->o, "--requests") || push(&t->o, ns) ||
        (!t->own_warmup && (push(&t->o, "--warmup") || push(&t->o, ws))))
      return TR_OOM;
  } else if (t->warmups) {
    char *ws = keep(v, wb, NULL, NULL, NULL);
    if (!ws || push(&t->o, "--warmup") || push(&t->o, ws))
      return TR_OOM;
  }
  if (w > 0 && !t->own_warmup) {
    bool burst = rate && !strcmp(rate, "inf");
    say(t, "%lld warm-up request%s sent first and excluded from the figures%s", w, w == 1 ? "" : "s",
        burst && !t->max_conc ? " (in a burst they leave with the measured ones: infermeter has no "
                                "separate warm-up phase)"
                              : "");
  }
  if (v->used && t->own_load && !t->own_warmup && !t->warmups && n < 0)
    say(t, "infermeter's own warm-up applies (the first tenth of --requests, or 5 s of "
           "--duration, excluded from the figures; --warmup 0 for none)");
  if (t->said[0])
    fprintf(stderr, "infermeter: vLLM's command line (docs/migrating.md): %s\n", t->said);
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
      t.output_len_given |= !strcmp(renames[k].ours, "--output-len");
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
  int r = finish_dataset(&t);
  if (r == TR_OK)
    r = finish_load(&t);
  if (r == TR_OOM)
    goto oom;
  if (r == TR_FAIL)
    goto fail;
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

int im__vllm_save(const char *dir, const struct im__vllm *v) {
  struct im_vllm_file f = {
      .save_detailed = v->save_detailed, .result_dir = v->result_dir,
      .result_filename = v->result_filename, .backend = v->backend, .label = v->label,
      .metadata = v->metadata, .n_metadata = v->n_metadata,
      .metric_percentiles = v->metric_percentiles, .percentile_metrics = v->percentile_metrics,
      .num_prompts = v->num_prompts, .ramp = v->ramp, .ramp_start = v->ramp_start,
      .ramp_end = v->ramp_end};
  char path[4200], err[4400];
  if (im_vllm_file_write(dir, &f, path, sizeof path, err, sizeof err) != IM_OK) {
    fprintf(stderr, "infermeter: %s\n", err);
    return -1;
  }
  fprintf(stderr, "infermeter: vLLM result file: %s\n", path);
  return 0;
}
