/* infermeter run: drive load at a server (by default a built-in one started
 * in-process), record every attempt, write results, print the summary. */
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <jansson.h>
#include <netdb.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "cli/args.h"
#include "cli/cli.h"
#include "im_version.h"
#include "infermeter/clock.h"
#include "infermeter/log.h"
#include "infermeter/rng.h"
#include "infermeter/sched.h"
#include "infermeter/stats.h"
#include "infermeter/summary.h"
#include "load/loader.h"
#include "load/synth.h"
#include "observe/observer.h"
#include "report/results.h"
#include "serve/server.h"

#define MAX_TAGS 64
#define MAX_HEADERS 32

enum { EXIT_OK = 0, EXIT_USAGE = 1, EXIT_UNREACHABLE = 2, EXIT_INVALID = 3, EXIT_SLO = 99,
       EXIT_INTERRUPTED = 130 };

struct run_opts {
  const char *url;
  enum im_backend backend;
  const char *model;
  double rate, burstiness, rate_end;
  enum im_sched_kind sched_kind;
  uint32_t concurrency, max_concurrency, max_connections;
  int64_t duration_ns;
  uint64_t requests;
  int64_t warmup_ns;
  uint64_t warmup_requests;
  int64_t grace_ns;
  uint64_t seed;
  bool seed_given;
  const char *out_dir;
  uint32_t input_len, output_len;
  double range_ratio;
  bool ignore_eos, ignore_eos_given;
  double temperature, top_p;
  struct im_summary_config scfg;
  double slo_target;
  const char *tags[MAX_TAGS];
  size_t n_tags;
  const char *headers[MAX_HEADERS + 1];
  size_t n_headers;
  uint32_t retries;
  int64_t t_connect, t_ttft, t_idle, t_total;
  uint64_t max_total_tokens;
  bool yes, insecure, keepalive, http2, cache_salt, shared_cache, quiet, no_progress;
  const char *api_key_file;
  uint32_t threads;
  const char *scrape[8];
  size_t n_scrape;
  bool no_scrape, no_sockstat, no_gpu;
  const char *dcgm;
  int64_t scrape_interval_ns;
  double kv_residency_ref, bw_util_ref;
  uint32_t prefix_groups, prefix_len;
  double prefix_share;
  double kv_bytes_per_token, gpu_memory;
};

static void usage(FILE *o) {
  fprintf(o,
"usage: infermeter run [OPTIONS]\n"
"\n"
"Drives an open-loop (or closed-loop) load at an OpenAI-compatible server and\n"
"records every request with microsecond token timing. Without --url it starts\n"
"the built-in simulated server (infermeter serve, default profile) in-process\n"
"on a free loopback port and tests that, with --ignore-eos.\n"
"\n"
"Target:\n"
"  --url URL                 base URL of the server, e.g. http://10.0.0.5:8000\n"
"  --backend NAME            openai-chat (default) or openai-completions\n"
"  --model NAME              model to request (default: first id of /v1/models)\n"
"  --api-key-file FILE       API key (else $INFERMETER_API_KEY, else $OPENAI_API_KEY);\n"
"                            sent as Bearer, never written anywhere\n"
"  --header 'K: V'           extra request header (repeatable)\n"
"  --insecure                do not verify TLS certificates\n"
"  --http2                   use HTTP/2 over TLS when the server offers it\n"
"  --keepalive on|off        reuse connections (default on); off: a new\n"
"                            connection per request, closed by the client\n"
"  --max-connections N       cap on open connections (default: no cap)\n"
"\n"
"Schedule:\n"
"  --rate R                  open loop, R requests/s (default 2)\n"
"  --burstiness B            gamma-distributed gaps of shape B (1 = Poisson, the\n"
"                            default; larger = smoother), as vLLM's --burstiness\n"
"  --schedule KIND           poisson (default), gamma, constant, or ramp (with --rate-end)\n"
"  --rate-end R              ramp: the rate at the end of --duration\n"
"  --concurrency C           closed loop instead: C requests always in flight\n"
"  --max-concurrency N       at most N in flight; the rest wait on the client (the\n"
"                            wait is measured as queue_wait, never hidden)\n"
"  --duration DUR            length of the schedule (default 30s)\n"
"  --requests N              send N requests instead of a duration\n"
"  --warmup DUR|N            warm-up inside the schedule: requests scheduled in the\n"
"                            first DUR (default 5s), or the first N, are recorded as\n"
"                            warmup and excluded from the figures\n"
"  --grace DUR               after the last arrival, wait this long for requests in\n"
"                            flight (default 10s); then they are recorded aborted\n"
"  --seed N                  seed of the schedule and the prompts (default: random,\n"
"                            recorded in results.json)\n"
"  --threads N               event-loop threads (default 1)\n");
  fprintf(o,
"\n"
"Workload (built-in synthetic prompts):\n"
"  --input-len N             prompt tokens (default 1024)\n"
"  --output-len N            max_tokens (default 128)\n"
"  --range-ratio R           lengths uniform in [L(1-R), L(1+R)] (default 0)\n"
"  --ignore-eos              send ignore_eos so every request generates exactly\n"
"                            --output-len tokens (vLLM extension)\n"
"  --temperature T, --top-p P  sampling parameters to send (default: not sent)\n"
"  --prefix-groups N --prefix-len L --prefix-share F\n"
"                            a share F of the prompts starts with one of N shared\n"
"                            system prompts of L tokens (default: none shared)\n"
"  --cache-salt              send vLLM's cache_salt with a per-run salt\n"
"  --shared-cache            let this run hit a previous run's prefix cache (by\n"
"                            default every prompt starts with a per-run salt)\n"
"\n"
"Limits and verdicts:\n"
"  --slo ttft=500ms,tpot=50ms,e2el=10s   SLOs for goodput and the exit code\n"
"  --slo-target P            an SLO passes when at least P of requests meet it\n"
"                            (default 0.99)\n"
"  --percentiles LIST        percentiles to report (default 50,90,95,99,99.9)\n"
"  --retries N               retry failed attempts (429, 5xx, connect, reset before\n"
"                            any token) with backoff and Retry-After (default 0)\n"
"  --timeout connect=5s,ttft=60s,idle=30s,total=10m\n"
"  --max-total-tokens N      refuse a plan above N tokens (prompt + output)\n"
"  --yes                     start against a non-loopback target without asking\n"
"\n"
"Observers (METRICS.md §5; sampled on the run's clock, never fail the run):\n"
"  --scrape URL              a /metrics page to sample (repeatable; default: the\n"
"                            target's /metrics); --no-scrape: none\n"
"  --scrape-interval DUR     sampling period (default 1s, at least 100ms)\n"
"  --scrape-dcgm URL         a DCGM exporter's /metrics (GPU counters)\n"
"  --no-sockstat             do not sample TCP states toward the target\n"
"  --no-gpu                  do not read GPU counters through NVML\n"
"  --kv-residency-ref F, --bw-util-ref F   reference lines (0.68, 0.78)\n"
"  --kv-bytes-per-token N    KV bytes one GPU holds per token (DeepSeek-V3 MLA:\n"
"                            70272), for KV residency\n"
"  --gpu-memory SIZE         memory of one GPU (default: from NVML), e.g. 141G\n"
"\n"
"Output:\n"
"  --out DIR                 results directory (default results/run-YYYYmmdd-HHMMSS):\n"
"                            requests.jsonl (one line per attempt, written as each\n"
"                            ends) and results.json\n"
"  --tag key=value           declared server setting, e.g. torch_compile=on, tp=8\n"
"                            (repeatable; recorded in the manifest)\n"
"  --quiet                   no summary table;  --no-progress: no progress line\n"
"\n"
"Exit status: 130 interrupted, 2 target unreachable, 1 usage or configuration\n"
"error, 3 client self-check INVALID, 99 an SLO failed, 0 otherwise.\n");
}

/* ---- signals ------------------------------------------------------------ */

static volatile int interrupted;
static int wake_fd = -1;

static void on_signal(int sig) {
  (void)sig;
  interrupted++;
  if (wake_fd >= 0) {
    uint64_t one = 1;
    ssize_t r = write(wake_fd, &one, sizeof one);
    (void)r;
  }
}

/* ---- option parsing ----------------------------------------------------- */

/* Parses "name=DURATION,..." where every name is one of names[0..n). Sets
 * out_ns[i] and seen[i] for each name given. Returns 0, or -1 after saying
 * what is wrong with which part. */
static int parse_durations(const char *flag, const char *arg, const char *const *names, size_t n,
                           int64_t *out_ns, bool *seen) {
  char buf[256];
  snprintf(buf, sizeof buf, "%s", arg);
  for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
    char *eq = strchr(tok, '=');
    int64_t ns;
    if (!eq || im_parse_duration(eq + 1, &ns)) {
      fprintf(stderr, "infermeter: %s: expected NAME=DURATION (e.g. %s=500ms), got '%s'\n", flag,
              names[0], tok);
      return -1;
    }
    *eq = '\0';
    size_t i = 0;
    while (i < n && strcmp(tok, names[i]))
      i++;
    if (i == n) {
      fprintf(stderr, "infermeter: %s: unknown name '%s' (one of:", flag, tok);
      for (size_t j = 0; j < n; j++)
        fprintf(stderr, " %s", names[j]);
      fprintf(stderr, ")\n");
      return -1;
    }
    out_ns[i] = ns;
    seen[i] = true;
  }
  return 0;
}

static int parse_slo(const char *arg, struct im_summary_config *c) {
  static const char *const names[] = {"ttft", "tpot", "e2el"};
  int64_t ns[3] = {0};
  bool seen[3] = {false};
  if (parse_durations("--slo", arg, names, 3, ns, seen))
    return -1;
  c->has_slo_ttft |= seen[0];
  c->has_slo_tpot |= seen[1];
  c->has_slo_e2el |= seen[2];
  if (seen[0])
    c->slo_ttft_ms = (double)ns[0] / 1e6;
  if (seen[1])
    c->slo_tpot_ms = (double)ns[1] / 1e6;
  if (seen[2])
    c->slo_e2el_ms = (double)ns[2] / 1e6;
  return 0;
}

static int parse_timeouts(const char *arg, struct run_opts *o) {
  static const char *const names[] = {"connect", "ttft", "idle", "total"};
  int64_t ns[4] = {o->t_connect, o->t_ttft, o->t_idle, o->t_total};
  bool seen[4] = {false};
  if (parse_durations("--timeout", arg, names, 4, ns, seen))
    return -1;
  o->t_connect = ns[0];
  o->t_ttft = ns[1];
  o->t_idle = ns[2];
  o->t_total = ns[3];
  return 0;
}

static int parse_percentiles(const char *arg, struct im_summary_config *c) {
  char buf[256];
  snprintf(buf, sizeof buf, "%s", arg);
  c->n_percentiles = 0;
  for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
    double p;
    if (c->n_percentiles == IM_MAX_PERCENTILES) {
      fprintf(stderr, "infermeter: --percentiles: at most %d\n", IM_MAX_PERCENTILES);
      return -1;
    }
    if (im_arg_double("--percentiles", tok, 1e-9, 100, &p))
      return -1;
    c->percentiles[c->n_percentiles++] = p;
  }
  return c->n_percentiles ? 0 : -1;
}

enum {
  O_URL = 256, O_BACKEND, O_MODEL, O_RATE, O_BURST, O_SCHED, O_RATE_END, O_CONC, O_MAXCONC,
  O_MAXCONN, O_DURATION, O_REQUESTS, O_WARMUP, O_GRACE, O_SEED, O_OUT, O_INLEN, O_OUTLEN, O_RANGE,
  O_IGNORE_EOS, O_TEMP, O_TOPP, O_SLO, O_SLO_TARGET, O_PCT, O_TAG, O_HEADER, O_RETRIES, O_TIMEOUT,
  O_MAXTOK, O_YES, O_KEYFILE, O_INSECURE, O_KEEPALIVE, O_HTTP2, O_CACHE_SALT, O_SHARED, O_QUIET,
  O_NOPROG, O_THREADS, O_SCRAPE, O_NOSCRAPE, O_SCRAPE_INT, O_DCGM, O_NOSOCK, O_NOGPU, O_KVREF,
  O_BWREF, O_PGROUPS, O_PLEN, O_PSHARE, O_KVBPT, O_GPUMEM
};

static const struct option options[] = {
    {"url", required_argument, 0, O_URL}, {"backend", required_argument, 0, O_BACKEND},
    {"model", required_argument, 0, O_MODEL}, {"rate", required_argument, 0, O_RATE},
    {"burstiness", required_argument, 0, O_BURST}, {"schedule", required_argument, 0, O_SCHED},
    {"rate-end", required_argument, 0, O_RATE_END}, {"concurrency", required_argument, 0, O_CONC},
    {"max-concurrency", required_argument, 0, O_MAXCONC},
    {"max-connections", required_argument, 0, O_MAXCONN},
    {"duration", required_argument, 0, O_DURATION}, {"requests", required_argument, 0, O_REQUESTS},
    {"warmup", required_argument, 0, O_WARMUP}, {"grace", required_argument, 0, O_GRACE},
    {"seed", required_argument, 0, O_SEED}, {"out", required_argument, 0, O_OUT},
    {"input-len", required_argument, 0, O_INLEN}, {"output-len", required_argument, 0, O_OUTLEN},
    {"range-ratio", required_argument, 0, O_RANGE}, {"ignore-eos", no_argument, 0, O_IGNORE_EOS},
    {"temperature", required_argument, 0, O_TEMP}, {"top-p", required_argument, 0, O_TOPP},
    {"slo", required_argument, 0, O_SLO}, {"slo-target", required_argument, 0, O_SLO_TARGET},
    {"percentiles", required_argument, 0, O_PCT}, {"tag", required_argument, 0, O_TAG},
    {"header", required_argument, 0, O_HEADER}, {"retries", required_argument, 0, O_RETRIES},
    {"timeout", required_argument, 0, O_TIMEOUT},
    {"max-total-tokens", required_argument, 0, O_MAXTOK}, {"yes", no_argument, 0, O_YES},
    {"api-key-file", required_argument, 0, O_KEYFILE}, {"insecure", no_argument, 0, O_INSECURE},
    {"keepalive", required_argument, 0, O_KEEPALIVE}, {"http2", no_argument, 0, O_HTTP2},
    {"cache-salt", no_argument, 0, O_CACHE_SALT}, {"shared-cache", no_argument, 0, O_SHARED},
    {"quiet", no_argument, 0, O_QUIET}, {"no-progress", no_argument, 0, O_NOPROG},
    {"threads", required_argument, 0, O_THREADS}, {"scrape", required_argument, 0, O_SCRAPE},
    {"no-scrape", no_argument, 0, O_NOSCRAPE},
    {"scrape-interval", required_argument, 0, O_SCRAPE_INT},
    {"scrape-dcgm", required_argument, 0, O_DCGM}, {"no-sockstat", no_argument, 0, O_NOSOCK},
    {"no-gpu", no_argument, 0, O_NOGPU}, {"kv-residency-ref", required_argument, 0, O_KVREF},
    {"bw-util-ref", required_argument, 0, O_BWREF},
    {"prefix-groups", required_argument, 0, O_PGROUPS},
    {"prefix-len", required_argument, 0, O_PLEN},
    {"prefix-share", required_argument, 0, O_PSHARE},
    {"kv-bytes-per-token", required_argument, 0, O_KVBPT},
    {"gpu-memory", required_argument, 0, O_GPUMEM}, {"help", no_argument, 0, 'h'},
    {0, 0, 0, 0}};

static void opts_default(struct run_opts *o) {
  memset(o, 0, sizeof *o);
  o->rate = 2.0;
  o->burstiness = 1.0;
  o->sched_kind = IM_SCHED_POISSON;
  o->duration_ns = 30 * 1000000000LL;
  o->warmup_ns = 5 * 1000000000LL;
  o->grace_ns = 10 * 1000000000LL;
  o->input_len = 1024;
  o->output_len = 128;
  o->temperature = NAN;
  o->top_p = NAN;
  o->slo_target = 0.99;
  o->keepalive = true;
  o->threads = 1;
  o->t_connect = 5 * 1000000000LL;
  o->t_ttft = 60 * 1000000000LL;
  o->t_idle = 30 * 1000000000LL;
  o->t_total = 600 * 1000000000LL;
  o->scrape_interval_ns = 1000000000;
  o->kv_residency_ref = 0.68; /* METRICS.md §9 reference lines */
  o->bw_util_ref = 0.78;
  static const double pct[] = {50, 90, 95, 99, 99.9};
  memcpy(o->scfg.percentiles, pct, sizeof pct);
  o->scfg.n_percentiles = 5;
}

static int apply(struct run_opts *o, int opt, const char *arg, bool *rate_given) {
  int64_t ns;
  uint64_t u;
  switch (opt) {
  case O_URL: o->url = arg; return 0;
  case O_BACKEND:
    if (!strcmp(arg, "openai-chat"))
      o->backend = IM_BACKEND_CHAT;
    else if (!strcmp(arg, "openai-completions"))
      o->backend = IM_BACKEND_COMPLETIONS;
    else {
      fprintf(stderr, "infermeter: --backend: expected openai-chat or openai-completions\n");
      return -1;
    }
    return 0;
  case O_MODEL: o->model = arg; return 0;
  case O_RATE: *rate_given = true; return im_arg_double("--rate", arg, 1e-6, 1e7, &o->rate);
  case O_BURST:
    o->sched_kind = IM_SCHED_GAMMA;
    return im_arg_double("--burstiness", arg, 1e-3, 1e6, &o->burstiness);
  case O_SCHED:
    if (!strcmp(arg, "poisson"))
      o->sched_kind = IM_SCHED_POISSON;
    else if (!strcmp(arg, "gamma"))
      o->sched_kind = IM_SCHED_GAMMA;
    else if (!strcmp(arg, "constant"))
      o->sched_kind = IM_SCHED_CONSTANT;
    else if (!strcmp(arg, "ramp"))
      o->sched_kind = IM_SCHED_RAMP;
    else {
      fprintf(stderr, "infermeter: --schedule: expected poisson, gamma, constant or ramp\n");
      return -1;
    }
    return 0;
  case O_RATE_END: return im_arg_double("--rate-end", arg, 1e-6, 1e7, &o->rate_end);
  case O_CONC: return im_arg_u32("--concurrency", arg, 1, 1000000, &o->concurrency);
  case O_MAXCONC: return im_arg_u32("--max-concurrency", arg, 1, 1000000, &o->max_concurrency);
  case O_MAXCONN: return im_arg_u32("--max-connections", arg, 1, 1000000, &o->max_connections);
  case O_DURATION:
    if (im_arg_duration("--duration", arg, &o->duration_ns) || o->duration_ns <= 0) {
      if (o->duration_ns <= 0)
        fprintf(stderr, "infermeter: --duration: must be positive\n");
      return -1;
    }
    return 0;
  case O_REQUESTS:
    if (im_arg_u64("--requests", arg, &o->requests) || !o->requests) {
      if (!o->requests)
        fprintf(stderr, "infermeter: --requests: must be at least 1\n");
      return -1;
    }
    return 0;
  case O_WARMUP:
    if (strspn(arg, "0123456789") == strlen(arg) && *arg) {
      o->warmup_ns = 0;
      return im_arg_u64("--warmup", arg, &o->warmup_requests);
    }
    o->warmup_requests = 0;
    return im_arg_duration("--warmup", arg, &o->warmup_ns);
  case O_GRACE: return im_arg_duration("--grace", arg, &o->grace_ns);
  case O_SEED: o->seed_given = true; return im_arg_u64("--seed", arg, &o->seed);
  case O_OUT: o->out_dir = arg; return 0;
  case O_INLEN: return im_arg_u32("--input-len", arg, 1, 10000000, &o->input_len);
  case O_OUTLEN: return im_arg_u32("--output-len", arg, 1, 10000000, &o->output_len);
  case O_RANGE: return im_arg_double("--range-ratio", arg, 0, 0.999, &o->range_ratio);
  case O_IGNORE_EOS: o->ignore_eos = o->ignore_eos_given = true; return 0;
  case O_TEMP: return im_arg_double("--temperature", arg, 0, 2, &o->temperature);
  case O_TOPP: return im_arg_double("--top-p", arg, 1e-9, 1, &o->top_p);
  case O_SLO: return parse_slo(arg, &o->scfg);
  case O_SLO_TARGET: return im_arg_double("--slo-target", arg, 0, 1, &o->slo_target);
  case O_PCT: return parse_percentiles(arg, &o->scfg);
  case O_TAG:
    if (!strchr(arg, '=') || arg[0] == '=') {
      fprintf(stderr, "infermeter: --tag: expected key=value, got '%s'\n", arg);
      return -1;
    }
    if (o->n_tags == MAX_TAGS) {
      fprintf(stderr, "infermeter: --tag: at most %d\n", MAX_TAGS);
      return -1;
    }
    o->tags[o->n_tags++] = arg;
    return 0;
  case O_HEADER:
    if (!strchr(arg, ':') || o->n_headers == MAX_HEADERS) {
      fprintf(stderr, "infermeter: --header: expected 'Name: value' (at most %d)\n", MAX_HEADERS);
      return -1;
    }
    o->headers[o->n_headers++] = arg;
    return 0;
  case O_RETRIES: return im_arg_u32("--retries", arg, 0, 100, &o->retries);
  case O_TIMEOUT: return parse_timeouts(arg, o);
  case O_MAXTOK: return im_arg_u64("--max-total-tokens", arg, &o->max_total_tokens);
  case O_YES: o->yes = true; return 0;
  case O_KEYFILE: o->api_key_file = arg; return 0;
  case O_INSECURE: o->insecure = true; return 0;
  case O_KEEPALIVE:
    if (strcmp(arg, "on") && strcmp(arg, "off")) {
      fprintf(stderr, "infermeter: --keepalive: expected on or off\n");
      return -1;
    }
    o->keepalive = !strcmp(arg, "on");
    return 0;
  case O_HTTP2: o->http2 = true; return 0;
  case O_CACHE_SALT: o->cache_salt = true; return 0;
  case O_SHARED: o->shared_cache = true; return 0;
  case O_QUIET: o->quiet = true; return 0;
  case O_NOPROG: o->no_progress = true; return 0;
  case O_THREADS: return im_arg_u32("--threads", arg, 1, 256, &o->threads);
  case O_SCRAPE:
    if (o->n_scrape == 8) {
      fprintf(stderr, "infermeter: --scrape: at most 8 URLs\n");
      return -1;
    }
    o->scrape[o->n_scrape++] = arg;
    return 0;
  case O_NOSCRAPE: o->no_scrape = true; return 0;
  case O_SCRAPE_INT:
    if (im_arg_duration("--scrape-interval", arg, &o->scrape_interval_ns) ||
        o->scrape_interval_ns < 100000000) {
      if (o->scrape_interval_ns < 100000000)
        fprintf(stderr, "infermeter: --scrape-interval: at least 100ms\n");
      return -1;
    }
    return 0;
  case O_DCGM: o->dcgm = arg; return 0;
  case O_NOSOCK: o->no_sockstat = true; return 0;
  case O_NOGPU: o->no_gpu = true; return 0;
  case O_KVREF: return im_arg_double("--kv-residency-ref", arg, 0, 1, &o->kv_residency_ref);
  case O_BWREF: return im_arg_double("--bw-util-ref", arg, 0, 1, &o->bw_util_ref);
  case O_PGROUPS: return im_arg_u32("--prefix-groups", arg, 0, 1000000, &o->prefix_groups);
  case O_PLEN: return im_arg_u32("--prefix-len", arg, 0, 10000000, &o->prefix_len);
  case O_PSHARE: return im_arg_double("--prefix-share", arg, 0, 1, &o->prefix_share);
  case O_KVBPT: return im_arg_double("--kv-bytes-per-token", arg, 1, 1e9, &o->kv_bytes_per_token);
  case O_GPUMEM:
    if (im_arg_size("--gpu-memory", arg, &u))
      return -1;
    o->gpu_memory = (double)u;
    return 0;
  default: return -1;
  }
  (void)ns;
  (void)u;
}

/* ---- target discovery ---------------------------------------------------- */

struct fetch {
  struct im_buf body;
};

static size_t fetch_write(char *d, size_t s, size_t n, void *ud) {
  struct fetch *f = ud;
  return im_buf_append(&f->body, d, s * n) == IM_OK ? s * n : 0;
}

/* GET base+path; returns the HTTP status (0 when unreachable) and the body
 * parsed as JSON in *out (NULL when not JSON). */
static long http_get_json(const char *base, const char *path, const char *api_key, bool insecure,
                          json_t **out, char *err, size_t err_len) {
  *out = NULL;
  struct fetch f;
  im_buf_init(&f.body, 1u << 20);
  char url[2048];
  snprintf(url, sizeof url, "%s%s", base, path);
  CURL *e = curl_easy_init();
  if (!e)
    return 0;
  struct curl_slist *h = NULL;
  char auth[4200];
  if (api_key) {
    snprintf(auth, sizeof auth, "Authorization: Bearer %s", api_key);
    h = curl_slist_append(h, auth);
  }
  curl_easy_setopt(e, CURLOPT_URL, url);
  curl_easy_setopt(e, CURLOPT_HTTPHEADER, h);
  curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, fetch_write);
  curl_easy_setopt(e, CURLOPT_WRITEDATA, &f);
  curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, 10000L);
  curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
  if (insecure) {
    curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, 0L);
    curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, 0L);
  }
  long status = 0;
  CURLcode rc = curl_easy_perform(e);
  if (rc == CURLE_OK) {
    curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &status);
    if (f.body.len)
      *out = json_loadb(f.body.data, f.body.len, 0, NULL);
  } else {
    snprintf(err, err_len, "%s", curl_easy_strerror(rc));
  }
  curl_easy_cleanup(e);
  curl_slist_free_all(h);
  im_buf_cleanup(&f.body);
  return status;
}

static bool is_loopback_url(const char *url) {
  const char *p = strstr(url, "://");
  p = p ? p + 3 : url;
  const char *end = p + strcspn(p, "/?#");
  const char *at = memchr(p, '@', (size_t)(end - p));
  if (at)
    p = at + 1;
  return !strncmp(p, "127.", 4) || !strncmp(p, "localhost", 9) || !strncmp(p, "[::1]", 5);
}

/* The URL without credentials, for outputs. */
static void redact_url(const char *url, char *out, size_t cap) {
  const char *scheme = strstr(url, "://");
  const char *host = scheme ? scheme + 3 : url;
  const char *end = host + strcspn(host, "/?#");
  const char *at = memchr(host, '@', (size_t)(end - host));
  if (at)
    snprintf(out, cap, "%.*sREDACTED@%s", (int)(host - url), url, at + 1);
  else
    snprintf(out, cap, "%s", url);
}

static bool secret_header(const char *h) {
  static const char *const words[] = {"auth", "key", "token", "secret", "cookie", "password"};
  size_t n = strcspn(h, ":");
  for (size_t i = 0; i < sizeof words / sizeof words[0]; i++) {
    size_t w = strlen(words[i]);
    for (size_t j = 0; j + w <= n; j++)
      if (!strncasecmp(h + j, words[i], w))
        return true;
  }
  return false;
}

static char *read_key_file(const char *path) {
  FILE *f = fopen(path, "r");
  if (!f) {
    fprintf(stderr, "infermeter: --api-key-file: cannot read %s: %s\n", path, strerror(errno));
    return NULL;
  }
  char buf[4096];
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = '\0';
  buf[strcspn(buf, "\r\n")] = '\0';
  if (!buf[0]) {
    fprintf(stderr, "infermeter: --api-key-file: %s is empty\n", path);
    return NULL;
  }
  return strdup(buf);
}

/* ---- the built-in server on its own thread ------------------------------- */

struct builtin {
  struct im_server *srv;
  pthread_t thread;
  bool running;
};

static void *server_main(void *arg) {
  struct builtin *b = arg;
  if (im_server_run(b->srv) != IM_OK)
    im_warn("built-in server stopped with an error");
  return NULL;
}

static int builtin_start(struct builtin *b, uint64_t seed) {
  struct im_server_config cfg;
  im_server_config_default(&cfg);
  cfg.port = 0;
  cfg.quiet = true;
  cfg.engine.seed = seed;
  if (im_server_new(&b->srv, &cfg) != IM_OK)
    return -1;
  if (pthread_create(&b->thread, NULL, server_main, b) != 0) {
    im_server_free(b->srv);
    return -1;
  }
  b->running = true;
  return im_server_port(b->srv);
}

static void builtin_stop(struct builtin *b) {
  if (!b->running)
    return;
  im_server_stop(b->srv);
  pthread_join(b->thread, NULL);
  im_server_free(b->srv);
  b->running = false;
}

/* ---- loader threads ------------------------------------------------------ */

struct shard {
  struct im_load_config cfg;
  struct im_load_result res;
  int64_t *times;
  enum im_err err;
  pthread_t thread;
};

static void *shard_main(void *arg) {
  struct shard *s = arg;
  s->err = im_load_run(&s->cfg, &s->res);
  return NULL;
}

/* The observers' final sample comes when the last loader has drained, while
 * its connections are still open (the TCP states then show them). */
struct drain {
  pthread_mutex_t mu;
  uint32_t left;
  struct im_observer *obs;
};

static void on_drained(void *ctx) {
  struct drain *d = ctx;
  pthread_mutex_lock(&d->mu);
  if (d->left && --d->left == 0)
    im_observer_stop(d->obs);
  pthread_mutex_unlock(&d->mu);
}

/* ---- manifest ------------------------------------------------------------ */

static json_t *host_json(void) {
  struct utsname u;
  json_t *h = json_object();
  if (uname(&u) == 0) {
    json_object_set_new(h, "hostname", json_string(u.nodename));
    json_object_set_new(h, "kernel", json_sprintf("%s %s", u.sysname, u.release));
    json_object_set_new(h, "machine", json_string(u.machine));
  }
  FILE *f = fopen("/proc/cpuinfo", "r");
  char line[512];
  while (f && fgets(line, sizeof line, f)) {
    if (!strncmp(line, "model name", 10)) {
      char *v = strchr(line, ':');
      if (v) {
        v += 2;
        v[strcspn(v, "\n")] = '\0';
        json_object_set_new(h, "cpu", json_string(v));
      }
      break;
    }
  }
  if (f)
    fclose(f);
  json_object_set_new(h, "cpus", json_integer(sysconf(_SC_NPROCESSORS_ONLN)));
  return h;
}

static json_t *command_line_json(int argc, char **argv) {
  json_t *a = json_array();
  for (int i = 0; i < argc; i++) {
    const char *arg = argv[i];
    char buf[2048];
    if (i > 0 && !strcmp(argv[i - 1], "--header") && secret_header(arg)) {
      snprintf(buf, sizeof buf, "%.*s: REDACTED", (int)strcspn(arg, ":"), arg);
      arg = buf;
    } else if (!strncmp(arg, "--header=", 9) && secret_header(arg + 9)) {
      snprintf(buf, sizeof buf, "--header=%.*s: REDACTED", (int)strcspn(arg + 9, ":"), arg + 9);
      arg = buf;
    } else if (i > 0 && !strcmp(argv[i - 1], "--url")) {
      redact_url(arg, buf, sizeof buf);
      arg = buf;
    }
    json_array_append_new(a, json_string(arg));
  }
  return a;
}

static const char *sched_name(enum im_sched_kind k) {
  return k == IM_SCHED_GAMMA ? "gamma" : k == IM_SCHED_CONSTANT ? "constant"
         : k == IM_SCHED_RAMP ? "ramp" : "poisson";
}

static json_t *manifest_json(const struct run_opts *o, int argc, char **argv, const char *url,
                             bool builtin, const char *model, json_t *models, json_t *version,
                             int64_t wall_start_ns, const char *salt) {
  char ts[64], red[2048];
  time_t secs = (time_t)(wall_start_ns / 1000000000);
  struct tm tm;
  gmtime_r(&secs, &tm);
  strftime(ts, sizeof ts, "%Y-%m-%dT%H:%M:%SZ", &tm);
  redact_url(url, red, sizeof red);
  json_t *m = json_object();
  json_object_set_new(m, "tool", json_string("infermeter"));
  json_object_set_new(m, "version", json_string(IM_VERSION));
  json_object_set_new(m, "git", json_string(IM_GIT_HASH));
  json_object_set_new(m, "command_line", command_line_json(argc, argv));
  json_object_set_new(m, "started_at", json_string(ts));
  json_object_set_new(m, "seed", json_integer((json_int_t)o->seed));
  json_object_set_new(m, "run_salt", json_string(salt));
  json_object_set_new(m, "target", json_pack("{s:s, s:s, s:s, s:b}", "url", red, "backend",
                                             o->backend == IM_BACKEND_CHAT ? "openai-chat"
                                                                           : "openai-completions",
                                             "model", model, "builtin_server", builtin));
  json_object_set_new(m, "server", json_pack("{s:O?, s:O?}", "models", models, "version", version));
  json_t *tags = json_object();
  for (size_t i = 0; i < o->n_tags; i++) {
    const char *eq = strchr(o->tags[i], '=');
    char key[256];
    snprintf(key, sizeof key, "%.*s", (int)(eq - o->tags[i]), o->tags[i]);
    json_object_set_new(tags, key, json_string(eq + 1));
  }
  json_object_set_new(m, "tags", tags);
  json_t *sched = json_object();
  if (o->concurrency) {
    json_object_set_new(sched, "kind", json_string("closed"));
    json_object_set_new(sched, "concurrency", json_integer(o->concurrency));
  } else {
    json_object_set_new(sched, "kind", json_string(sched_name(o->sched_kind)));
    json_object_set_new(sched, "rate", json_real(o->rate));
    if (o->sched_kind == IM_SCHED_GAMMA)
      json_object_set_new(sched, "burstiness", json_real(o->burstiness));
    if (o->sched_kind == IM_SCHED_RAMP)
      json_object_set_new(sched, "rate_end", json_real(o->rate_end));
  }
  json_object_set_new(sched, "duration_s", o->requests ? json_null() : json_real((double)o->duration_ns / 1e9));
  json_object_set_new(sched, "requests", o->requests ? json_integer((json_int_t)o->requests) : json_null());
  json_object_set_new(sched, "warmup_s", json_real((double)o->warmup_ns / 1e9));
  json_object_set_new(sched, "warmup_requests", json_integer((json_int_t)o->warmup_requests));
  json_object_set_new(sched, "grace_s", json_real((double)o->grace_ns / 1e9));
  json_object_set_new(sched, "max_concurrency", o->max_concurrency ? json_integer(o->max_concurrency) : json_null());
  json_object_set_new(sched, "threads", json_integer(o->threads));
  json_object_set_new(m, "schedule", sched);
  json_object_set_new(m, "workload",
                      json_pack("{s:s, s:i, s:i, s:f, s:b, s:o, s:o, s:b}", "dataset", "synthetic",
                                "input_len", (json_int_t)o->input_len, "output_len",
                                (json_int_t)o->output_len, "range_ratio", o->range_ratio,
                                "ignore_eos", o->ignore_eos,
                                "temperature", isnan(o->temperature) ? json_null() : json_real(o->temperature),
                                "top_p", isnan(o->top_p) ? json_null() : json_real(o->top_p),
                                "shared_cache", o->shared_cache));
  json_t *wl = json_object_get(m, "workload");
  json_object_set_new(wl, "prefix_groups", json_integer(o->prefix_groups));
  json_object_set_new(wl, "prefix_len", json_integer(o->prefix_len));
  json_object_set_new(wl, "prefix_share", json_real(o->prefix_groups ? o->prefix_share : 0));
  json_t *slo = json_object();
  if (o->scfg.has_slo_ttft)
    json_object_set_new(slo, "ttft_ms", json_real(o->scfg.slo_ttft_ms));
  if (o->scfg.has_slo_tpot)
    json_object_set_new(slo, "tpot_ms", json_real(o->scfg.slo_tpot_ms));
  if (o->scfg.has_slo_e2el)
    json_object_set_new(slo, "e2el_ms", json_real(o->scfg.slo_e2el_ms));
  json_object_set_new(slo, "target", json_real(o->slo_target));
  json_object_set_new(m, "slo", slo);
  json_object_set_new(m, "host", host_json());
  json_object_set_new(m, "client", json_pack("{s:s, s:i}", "libcurl", curl_version_info(CURLVERSION_NOW)->version,
                                             "threads", (json_int_t)o->threads));
  return m;
}

/* The target's address, for the TCP-state sampler: host and port of the URL,
 * resolved once. Returns 0 on success. */
static int target_addr(const char *url, struct sockaddr_storage *out, socklen_t *len) {
  const char *p = strstr(url, "://");
  bool tls = !strncmp(url, "https", 5);
  p = p ? p + 3 : url;
  const char *end = p + strcspn(p, "/?#");
  const char *at = memchr(p, '@', (size_t)(end - p));
  if (at)
    p = at + 1;
  char host[256], port[16];
  const char *colon;
  if (*p == '[') {
    const char *rb = memchr(p, ']', (size_t)(end - p));
    if (!rb)
      return -1;
    snprintf(host, sizeof host, "%.*s", (int)(rb - p - 1), p + 1);
    colon = rb + 1 < end && rb[1] == ':' ? rb + 1 : NULL;
  } else {
    colon = memchr(p, ':', (size_t)(end - p));
    snprintf(host, sizeof host, "%.*s", (int)((colon ? colon : end) - p), p);
  }
  if (colon)
    snprintf(port, sizeof port, "%.*s", (int)(end - colon - 1), colon + 1);
  else
    snprintf(port, sizeof port, "%s", tls ? "443" : "80");
  struct addrinfo hints, *ai = NULL;
  memset(&hints, 0, sizeof hints);
  hints.ai_socktype = SOCK_STREAM;
  if (getaddrinfo(host, port, &hints, &ai) != 0 || !ai)
    return -1;
  memcpy(out, ai->ai_addr, ai->ai_addrlen);
  *len = ai->ai_addrlen;
  freeaddrinfo(ai);
  return 0;
}

/* ---- the run ------------------------------------------------------------- */

static double lag_p99_ms(const struct im_record *r, size_t n) {
  double *v = malloc((n ? n : 1) * sizeof *v);
  size_t k = 0;
  if (!v)
    return NAN;
  for (size_t i = 0; i < n; i++)
    if (r[i].t_dispatch >= 0 && r[i].t_sched >= 0)
      v[k++] = (double)(r[i].t_dispatch - r[i].t_sched) / 1e6;
  im_stats_sort(v, k);
  double p = k ? im_stats_pct_nearest(v, k, 0.99) : 0.0;
  free(v);
  return p;
}

static int write_results(const char *dir, json_t *root) {
  char path[4096], tmp[4200];
  snprintf(path, sizeof path, "%s/results.json", dir);
  snprintf(tmp, sizeof tmp, "%s.tmp", path);
  if (json_dump_file(root, tmp, JSON_INDENT(2) | JSON_REAL_PRECISION(10)) != 0 ||
      rename(tmp, path) != 0) {
    fprintf(stderr, "infermeter: cannot write %s: %s\n", path, strerror(errno));
    return -1;
  }
  return 0;
}

static int make_out_dir(struct run_opts *o, char *buf, size_t cap) {
  if (!o->out_dir) {
    time_t t = time(NULL);
    struct tm tm;
    localtime_r(&t, &tm);
    char name[64];
    strftime(name, sizeof name, "results/run-%Y%m%d-%H%M%S", &tm);
    mkdir("results", 0755);
    snprintf(buf, cap, "%s", name);
  } else {
    snprintf(buf, cap, "%s", o->out_dir);
  }
  if (mkdir(buf, 0755) != 0 && errno != EEXIST) {
    fprintf(stderr, "infermeter: --out: cannot create %s: %s\n", buf, strerror(errno));
    return -1;
  }
  struct stat st;
  if (stat(buf, &st) != 0 || !S_ISDIR(st.st_mode)) {
    fprintf(stderr, "infermeter: --out: %s is not a directory\n", buf);
    return -1;
  }
  o->out_dir = buf;
  return 0;
}

int im_cli_run(int argc, char **argv) {
  struct run_opts o;
  opts_default(&o);
  bool rate_given = false;
  int opt;
  optind = 1;
  while ((opt = getopt_long(argc, argv, "h", options, NULL)) != -1) {
    if (opt == 'h') {
      usage(stdout);
      return EXIT_OK;
    }
    if (opt == '?' || apply(&o, opt, optarg, &rate_given)) {
      fprintf(stderr, "see: infermeter run --help\n");
      return EXIT_USAGE;
    }
  }
  if (optind < argc) {
    fprintf(stderr, "infermeter run: unexpected argument '%s' (see --help)\n", argv[optind]);
    return EXIT_USAGE;
  }
  if (o.concurrency && rate_given) {
    fprintf(stderr, "infermeter run: --rate and --concurrency exclude each other\n");
    return EXIT_USAGE;
  }
  if (o.sched_kind == IM_SCHED_RAMP && o.rate_end <= 0) {
    fprintf(stderr, "infermeter run: --schedule ramp needs --rate-end\n");
    return EXIT_USAGE;
  }
  if (!o.seed_given)
    o.seed = im_mix64((uint64_t)im_wall_ns() ^ ((uint64_t)getpid() << 32));
  bool builtin = o.url == NULL;
  if (builtin && !o.ignore_eos_given)
    o.ignore_eos = true;
  if (o.requests)
    o.duration_ns = 0;

  /* Descriptors: raise the soft limit, and refuse what it cannot hold. */
  uint64_t fd_limit = im_raise_fd_limit();
  uint64_t want_fds = (uint64_t)(o.concurrency ? o.concurrency : 0) + o.max_concurrency + 64;
  if (fd_limit && want_fds > fd_limit) {
    fprintf(stderr,
            "infermeter run: %" PRIu64 " connections need about %" PRIu64
            " file descriptors, but the limit is %" PRIu64 " (raise it with ulimit -n)\n",
            want_fds - 64, want_fds, fd_limit);
    return EXIT_USAGE;
  }

  /* API key: never printed, never recorded. */
  char *api_key = NULL;
  if (o.api_key_file) {
    if (!(api_key = read_key_file(o.api_key_file)))
      return EXIT_USAGE;
  } else if (getenv("INFERMETER_API_KEY") && *getenv("INFERMETER_API_KEY")) {
    api_key = strdup(getenv("INFERMETER_API_KEY"));
  } else if (getenv("OPENAI_API_KEY") && *getenv("OPENAI_API_KEY")) {
    api_key = strdup(getenv("OPENAI_API_KEY"));
  }

  curl_global_init(CURL_GLOBAL_DEFAULT);
  int rc = EXIT_USAGE;
  struct builtin srv = {0};
  char url_buf[2048], outbuf[4096], salt[40];
  json_t *models = NULL, *version = NULL, *root = NULL;
  int64_t *times = NULL;
  size_t n_times = 0;
  struct shard *shards = NULL;
  int jsonl_fd = -1, raw_fd = -1;
  struct im_observer *obs = NULL;
  char scrape_default[2100];
  const char *url = o.url;
  char model_buf[512];
  const char *model = o.model;

  if (builtin) {
    int port = builtin_start(&srv, o.seed);
    if (port < 0) {
      fprintf(stderr, "infermeter run: cannot start the built-in server\n");
      goto out;
    }
    snprintf(url_buf, sizeof url_buf, "http://127.0.0.1:%d", port);
    url = url_buf;
  } else {
    snprintf(url_buf, sizeof url_buf, "%s", o.url);
    size_t n = strlen(url_buf);
    while (n && url_buf[n - 1] == '/')
      url_buf[--n] = '\0';
    if (n > 3 && !strcmp(url_buf + n - 3, "/v1"))
      url_buf[n - 3] = '\0';
    url = url_buf;
  }

  /* The schedule, computed ahead. */
  if (!o.concurrency) {
    struct im_sched_spec spec = {.kind = o.sched_kind, .rate = o.rate, .rate_end = o.rate_end,
                                 .burstiness = o.burstiness, .duration_ns = o.duration_ns,
                                 .max_requests = o.requests, .seed = o.seed};
    if (o.sched_kind == IM_SCHED_POISSON && o.burstiness != 1.0)
      spec.kind = IM_SCHED_GAMMA;
    const char *why = im_sched_check(&spec);
    if (why || im_sched_generate(&spec, &times, &n_times) != IM_OK) {
      fprintf(stderr, "infermeter run: bad schedule: %s\n", why ? why : "out of memory");
      goto out;
    }
  }
  /* Against a remote target, the plan is shown (and confirmed) before
   * anything at all is sent to it. */
  uint64_t planned = o.concurrency ? (o.requests ? o.requests : 0) : n_times;
  uint64_t planned_tokens = planned * ((uint64_t)o.input_len + o.output_len);

  if (!is_loopback_url(url)) {
    char red[2048];
    redact_url(url, red, sizeof red);
    if (planned)
      fprintf(stderr, "infermeter run: plan for %s: %" PRIu64 " requests, about %" PRIu64
                      " tokens (%u in + %u out each)\n", red, planned, planned_tokens,
              o.input_len, o.output_len);
    else
      fprintf(stderr, "infermeter run: plan for %s: closed loop of %u for %.0f s\n", red,
              o.concurrency, (double)o.duration_ns / 1e9);
    if (o.max_total_tokens && (!planned || planned_tokens > o.max_total_tokens)) {
      fprintf(stderr, "infermeter run: the plan exceeds --max-total-tokens %" PRIu64
                      "; lower --rate, --duration or --requests\n", o.max_total_tokens);
      goto out;
    }
    if (!o.yes) {
      if (!isatty(STDIN_FILENO)) {
        fprintf(stderr, "infermeter run: not a terminal: add --yes to start against a remote target\n");
        goto out;
      }
      fprintf(stderr, "start? [y/N] ");
      char ans[16] = "";
      if (!fgets(ans, sizeof ans, stdin) || (ans[0] != 'y' && ans[0] != 'Y'))
        goto out;
    }
  }

  /* Discovery: the server's model list and version go into the manifest. */
  char err[256] = "";
  int64_t t_disc = im_now_ns();
  long st = http_get_json(url, "/v1/models", api_key, o.insecure, &models, err, sizeof err);
  if (st == 0) {
    char red[2048];
    redact_url(url, red, sizeof red);
    fprintf(stderr, "infermeter run: target %s unreachable: %s\n", red, err);
    rc = EXIT_UNREACHABLE;
    goto out;
  }
  http_get_json(url, "/version", api_key, o.insecure, &version, err, sizeof err);
  double discovery_ms = (double)(im_now_ns() - t_disc) / 1e6;
  if (!model) {
    json_t *id = json_object_get(json_array_get(json_object_get(models, "data"), 0), "id");
    if (!json_is_string(id)) {
      fprintf(stderr, "infermeter run: %s/v1/models answered %ld without a model id; pass --model\n",
              builtin ? "the built-in server" : "the target", st);
      rc = EXIT_UNREACHABLE;
      goto out;
    }
    snprintf(model_buf, sizeof model_buf, "%s", json_string_value(id));
    model = model_buf;
  }

  if (make_out_dir(&o, outbuf, sizeof outbuf))
    goto out;
  char jpath[4200];
  snprintf(jpath, sizeof jpath, "%s/requests.jsonl", o.out_dir);
  jsonl_fd = open(jpath, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644);
  if (jsonl_fd < 0) {
    fprintf(stderr, "infermeter run: cannot write %s: %s\n", jpath, strerror(errno));
    goto out;
  }

  /* Every run gets its own salt: prompts never hit a previous run's cache. */
  snprintf(salt, sizeof salt, "%016" PRIx64, o.shared_cache ? o.seed : im_mix64(o.seed ^ (uint64_t)im_wall_ns()));
  struct im_synth synth = {.input_len = o.input_len, .output_len = o.output_len,
                           .range_ratio = o.range_ratio, .ignore_eos = o.ignore_eos,
                           .temperature = o.temperature, .top_p = o.top_p, .seed = o.seed,
                           .prefix_groups = o.prefix_groups, .prefix_len = o.prefix_len,
                           .prefix_share = o.prefix_groups && o.prefix_len && o.prefix_share == 0
                                               ? 1.0 : o.prefix_share};
  snprintf(synth.salt, sizeof synth.salt, "%.12s", o.shared_cache ? "shared" : salt);

  /* Signals: stop dispatching on the first, abort in-flight on the second;
   * installed whatever the inherited disposition (a background job starts
   * with SIGINT ignored). */
  wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);
  signal(SIGPIPE, SIG_IGN);

  shards = calloc(o.threads, sizeof *shards);
  if (!shards)
    goto out;
  bool tty = isatty(STDERR_FILENO);
  for (uint32_t k = 0; k < o.threads; k++) {
    struct shard *s = &shards[k];
    struct im_load_config *c = &s->cfg;
    im_load_config_default(c);
    c->base_url = url;
    c->backend = o.backend;
    c->model = model;
    c->api_key = api_key;
    c->headers = o.headers;
    c->insecure = o.insecure;
    c->keepalive = o.keepalive;
    c->max_connections = o.max_connections ? (o.max_connections + o.threads - 1) / o.threads : 0;
    c->http2 = o.http2;
    c->continuous_usage = builtin;
    c->cache_salt = o.cache_salt ? salt : NULL;
    c->run_salt = salt;
    c->shard = k;
    c->n_shards = o.threads;
    if (!o.concurrency) {
      /* Deal the global schedule round-robin: the union is exact. */
      size_t mine = n_times / o.threads + (k < n_times % o.threads);
      s->times = malloc((mine ? mine : 1) * sizeof *s->times);
      if (!s->times)
        goto out;
      for (size_t i = k, j = 0; i < n_times; i += o.threads)
        s->times[j++] = times[i];
      c->times = s->times;
      c->n_times = mine;
    } else {
      c->concurrency = o.concurrency / o.threads + (k < o.concurrency % o.threads);
      c->duration_ns = o.duration_ns;
      c->max_requests = o.requests ? o.requests / o.threads + (k < o.requests % o.threads) : 0;
    }
    c->max_concurrency = o.max_concurrency ? (o.max_concurrency + o.threads - 1) / o.threads : 0;
    c->warmup_ns = o.warmup_ns;
    c->warmup_requests = o.warmup_requests;
    c->grace_ns = o.grace_ns;
    c->retries = o.retries;
    c->timeout_connect_ns = o.t_connect;
    c->timeout_ttft_ns = o.t_ttft;
    c->timeout_idle_ns = o.t_idle;
    c->timeout_total_ns = o.t_total;
    c->workload = im_synth_request;
    c->workload_ctx = &synth;
    c->jsonl_fd = jsonl_fd;
    c->interrupt = &interrupted;
    c->wake_fd = k == 0 ? wake_fd : -1;
    c->progress_tty = k == 0 && tty && !o.no_progress;
    c->progress_plain = k == 0 && !tty && !o.no_progress;
  }
  /* Observers: a baseline sample now, before the load. */
  struct im_observer_config ocfg;
  im_observer_config_default(&ocfg);
  if (!o.no_scrape) {
    if (o.n_scrape) {
      for (size_t i = 0; i < o.n_scrape; i++)
        ocfg.scrape_urls[ocfg.n_scrape++] = o.scrape[i];
    } else {
      snprintf(scrape_default, sizeof scrape_default, "%s/metrics", url);
      ocfg.scrape_urls[ocfg.n_scrape++] = scrape_default;
    }
  }
  ocfg.dcgm_url = o.dcgm;
  ocfg.interval_ns = o.scrape_interval_ns;
  ocfg.api_key = api_key;
  ocfg.insecure = o.insecure;
  ocfg.sockstat = !o.no_sockstat && target_addr(url, &ocfg.target, &ocfg.target_len) == 0;
  ocfg.gpu = !o.no_gpu;
  char rpath[4200];
  snprintf(rpath, sizeof rpath, "%s/scrapes.prom", o.out_dir);
  if (ocfg.n_scrape || ocfg.dcgm_url) {
    raw_fd = open(rpath, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644);
    ocfg.raw_fd = raw_fd;
  }
  if (im_observer_start(&obs, &ocfg) != IM_OK) {
    im_warn("observers could not start; the run goes on without them");
    obs = NULL;
  }

  struct drain drain = {.mu = PTHREAD_MUTEX_INITIALIZER, .left = o.threads, .obs = obs};
  for (uint32_t k = 0; k < o.threads && obs; k++) {
    shards[k].cfg.on_drained = on_drained;
    shards[k].cfg.on_drained_ctx = &drain;
  }
  if (!o.quiet)
    fprintf(stderr, "infermeter: %s %s, model %s, results in %s\n",
            builtin ? "built-in server at" : "target", url, model, o.out_dir);
  for (uint32_t k = 1; k < o.threads; k++)
    pthread_create(&shards[k].thread, NULL, shard_main, &shards[k]);
  shard_main(&shards[0]);
  for (uint32_t k = 1; k < o.threads; k++)
    pthread_join(shards[k].thread, NULL);
  im_observer_stop(obs); /* no-op when on_drained did it (the usual case) */
  for (uint32_t k = 0; k < o.threads; k++) {
    if (shards[k].err) {
      fprintf(stderr, "infermeter run: load engine failed: %s\n", im_strerror(shards[k].err));
      goto out;
    }
  }

  /* Merge the shards. */
  struct im_load_result all = {0};
  double cpu_share = 0;
  size_t total = 0;
  for (uint32_t k = 0; k < o.threads; k++)
    total += shards[k].res.n_records;
  all.records = calloc(total ? total : 1, sizeof *all.records);
  if (!all.records)
    goto out;
  for (uint32_t k = 0; k < o.threads; k++) {
    struct im_load_result *r = &shards[k].res;
    memcpy(all.records + all.n_records, r->records, r->n_records * sizeof *r->records);
    all.n_records += r->n_records;
    free(r->records);
    r->records = NULL;
    r->n_records = 0;
    all.scheduled += r->scheduled;
    all.dispatched += r->dispatched;
    all.fd_exhausted += r->fd_exhausted;
    all.port_exhausted += r->port_exhausted;
    all.interrupted |= r->interrupted;
    if (r->elapsed_ns > all.elapsed_ns)
      all.elapsed_ns = r->elapsed_ns;
    double share = r->elapsed_ns ? r->cpu_s / ((double)r->elapsed_ns / 1e9) : 0;
    cpu_share = share > cpu_share ? share : cpu_share;
    if (k == 0) {
      all.wall_start_ns = r->wall_start_ns;
      memcpy(all.first_error, r->first_error, sizeof all.first_error);
    }
  }

  /* The measured window: end of warm-up to the last scheduled arrival. */
  struct im_summary_config *sc = &o.scfg;
  sc->window_start_ns = o.warmup_ns;
  if (o.warmup_requests && times && o.warmup_requests < n_times)
    sc->window_start_ns = times[o.warmup_requests];
  int64_t last_sched = 0;
  for (size_t i = 0; i < all.n_records; i++)
    if (all.records[i].t_sched > last_sched && all.records[i].kind != IM_KIND_RETRY)
      last_sched = all.records[i].t_sched;
  sc->window_end_ns = o.concurrency ? (o.duration_ns ? o.duration_ns : last_sched) : last_sched;
  if (all.interrupted && sc->window_end_ns > all.elapsed_ns)
    sc->window_end_ns = all.elapsed_ns;
  if (sc->window_end_ns <= sc->window_start_ns)
    sc->window_start_ns = 0;

  struct im_summary sum;
  if (im_summary_compute(all.records, all.n_records, sc, &sum) != IM_OK) {
    fprintf(stderr, "infermeter run: out of memory computing the summary\n");
    goto out;
  }
  sum.scheduled = all.scheduled;
  sum.dispatched = all.dispatched;
  struct im_client_check check;
  im_client_check_compute(lag_p99_ms(all.records, all.n_records), all.scheduled, all.dispatched,
                          sc->slo_ttft_ms, sc->has_slo_ttft, cpu_share, all.fd_exhausted,
                          all.port_exhausted, &check);

  root = json_object();
  json_object_set_new(root, "schema", json_string("infermeter/results/v1"));
  json_t *manifest = manifest_json(&o, argc, argv, url, builtin, model, models, version,
                                   all.wall_start_ns, salt);
  json_object_set_new(manifest, "discovery_ms", json_real(discovery_ms));
  /* Record times are relative to this CLOCK_MONOTONIC instant; with it they
   * join a server's truth log on the same machine. */
  json_object_set_new(manifest, "t0_monotonic_ns", json_integer((json_int_t)shards[0].res.t0_mono));
  json_object_set_new(manifest, "interrupted", json_boolean(all.interrupted));
  json_object_set_new(root, "manifest", manifest);
  json_t *summary = json_object(), *metrics = json_object(), *audit = json_object();
  json_object_set_new(root, "summary", summary);
  json_object_set_new(root, "metrics", metrics);
  json_object_set_new(root, "audit", audit);
  if (im_summary_vllm_json(&sum, sc, summary) || im_summary_metrics_json(&sum, sc, metrics) ||
      im_client_check_json(&check, audit)) {
    fprintf(stderr, "infermeter run: out of memory writing results\n");
    goto out;
  }
  if (obs) {
    struct im_observer_context octx = {
        .t0_mono = shards[0].res.t0_mono,
        .window_start_ns = sc->window_start_ns,
        .window_end_ns = sc->window_end_ns,
        .client_ttft_p50_ms = NAN,
        .client_ttft_p99_ms = NAN,
        .output_tokens = sum.window_output_tok_rate * sum.window_s,
        .attempts = all.n_records,
        .kv_residency_ref = o.kv_residency_ref,
        .kv_bytes_per_token = o.kv_bytes_per_token,
        .gpu_memory_bytes = o.gpu_memory,
        .bw_util_ref = o.bw_util_ref,
    };
    for (uint32_t k = 0; k < o.threads; k++)
      octx.connections_opened += shards[k].res.connections_opened;
    for (size_t i = 0; i < sc->n_percentiles && sum.ttft.n; i++) {
      if (sc->percentiles[i] == 50)
        octx.client_ttft_p50_ms = sum.ttft.pct[i];
      if (sc->percentiles[i] == 99)
        octx.client_ttft_p99_ms = sum.ttft.pct[i];
    }
    json_t *series = json_object();
    json_object_set_new(root, "series", series);
    if (im_observer_json(obs, &octx, metrics, series) != IM_OK)
      im_warn("out of memory writing the observers' figures");
  }
  /* The generator's own samples, per thread. */
  json_t *self = json_array();
  for (uint32_t k = 0; k < o.threads; k++) {
    const struct im_load_result *r = &shards[k].res;
    json_t *t = json_array(), *cpu = json_array(), *lag = json_array(), *inf = json_array();
    for (size_t i = 0; i < r->n_samples; i++) {
      json_array_append_new(t, json_real((double)r->samples[i].t / 1e9));
      json_array_append_new(cpu, json_real(r->samples[i].cpu_share));
      json_array_append_new(lag, json_real(r->samples[i].lag_max_ms));
      json_array_append_new(inf, json_integer(r->samples[i].in_flight));
    }
    json_array_append_new(self, json_pack("{s:o, s:o, s:o, s:o}", "t_s", t, "cpu_share", cpu,
                                          "dispatch_lag_max_ms", lag, "in_flight", inf));
  }
  json_t *series_root = json_object_get(root, "series");
  if (!series_root) {
    series_root = json_object();
    json_object_set_new(root, "series", series_root);
  }
  json_object_set_new(series_root, "client", self);
  /* What the responses say about the cache (usage.prompt_tokens_details,
   * DeepSeek's prompt_cache_hit_tokens, llama.cpp's timings.cache_n). */
  uint64_t ctok = 0, ptok = 0;
  for (size_t i = 0; i < all.n_records; i++) {
    const struct im_record *r = &all.records[i];
    if (r->kind == IM_KIND_MEASURED && r->error == IM_EC_NONE) {
      ctok += r->cached_tokens;
      ptok += r->prompt_tokens;
    }
  }
  json_object_set_new(metrics, "cache_client",
                      json_pack("{s:I, s:I, s:o}", "prompt_tokens", (json_int_t)ptok,
                                "cached_tokens", (json_int_t)ctok, "hit_rate",
                                ptok ? json_real((double)ctok / (double)ptok) : json_null()));
  json_t *client = json_pack("{s:f, s:I, s:I, s:I, s:f, s:I}", "elapsed_s",
                             (double)all.elapsed_ns / 1e9, "scheduled", (json_int_t)all.scheduled,
                             "dispatched", (json_int_t)all.dispatched, "attempts",
                             (json_int_t)all.n_records, "cpu_share", cpu_share, "threads",
                             (json_int_t)o.threads);
  json_object_set_new(metrics, "client", client);
  if (write_results(o.out_dir, root))
    goto out;

  if (!o.quiet) {
    im_report_text(stdout, &sum, sc, &check);
    if (all.first_error[0] && sum.failed)
      fprintf(stdout, "First error: %s\n", all.first_error);
    fprintf(stdout, "Results: %s/results.json, %s/requests.jsonl\n", o.out_dir, o.out_dir);
  }
  bool slo_failed = (sc->has_slo_ttft && sum.slo_ttft_attain < o.slo_target) ||
                    (sc->has_slo_tpot && sum.slo_tpot_attain < o.slo_target) ||
                    (sc->has_slo_e2el && sum.slo_e2el_attain < o.slo_target);
  rc = all.interrupted ? EXIT_INTERRUPTED
       : sum.completed == 0 && all.n_records && all.first_error[0] && !strncmp(all.first_error, "connect", 7)
           ? EXIT_UNREACHABLE
       : !check.valid ? EXIT_INVALID
       : slo_failed ? EXIT_SLO
                    : EXIT_OK;
  im_load_result_cleanup(&all);
out:
  if (shards) {
    for (uint32_t k = 0; k < o.threads; k++) {
      im_load_result_cleanup(&shards[k].res);
      free(shards[k].times);
    }
    free(shards);
  }
  if (jsonl_fd >= 0)
    close(jsonl_fd);
  im_observer_free(obs);
  if (raw_fd >= 0)
    close(raw_fd);
  builtin_stop(&srv);
  json_decref(models);
  json_decref(version);
  json_decref(root);
  free(times);
  if (api_key) {
    memset(api_key, 0, strlen(api_key));
    free(api_key);
  }
  if (wake_fd >= 0)
    close(wake_fd);
  wake_fd = -1;
  curl_global_cleanup();
  return rc;
}
