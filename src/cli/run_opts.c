/* Options and help of `infermeter run`. */
#include <curl/curl.h>
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "cli/args.h"
#include "export/metrics_listen.h"
#include "report/verdict.h"
#include "cli/args.h"
#include "cli/run_agents.h"
#include "cli/run_cli.h"
#include "cli/shard.h"
#include "run/urls.h"
#include "cli/run_net.h"
#include "im_version.h"
#include "core/buf.h"
#include "core/clock.h"
#include "workload/session.h"

/* The help text as data: each part's text, then the options that another
 * file keeps with their parser (reasoning and agents, the network path,
 * shards). */
struct usage_part {
  const char *text;
  void (*more)(FILE *o);
};

static const struct usage_part usage_parts[] = {
    {"usage: infermeter run [OPTIONS]\n"
"\n"
"Drives an open-loop (or closed-loop) load at an OpenAI-compatible server and\n"
"records every request with microsecond token timing. Without --url it starts\n"
"the built-in simulated server (infermeter serve, default profile) in-process\n"
"on a free loopback port and tests that, with --ignore-eos.\n"
"\n"
"Help:\n"
"  -h, --help                the first screen: examples and common options\n"
"  --help-all                every option, in groups (this text)\n"
"\n"
"Target:\n"
"  --url URL                 base URL of the server, e.g. http://10.0.0.5:8000;\n"
"                            repeatable: replicas, requests (sessions) round robin\n"
"                            over them, figures per target (docs/tls.md)\n"
"  --backend NAME            openai-chat (default) or openai-completions\n"
"  --model NAME              model to request (default: first id of /v1/models)\n"
"  --api-key-file FILE       API key (else $INFERMETER_API_KEY, else $OPENAI_API_KEY);\n"
"                            sent as Bearer, never written anywhere\n"
"  --header 'K: V'           extra request header (repeatable)\n"
"  --insecure                do not verify TLS certificates (recorded in the\n"
"                            manifest; the audit warns)\n"
"  --http2                   use HTTP/2 over TLS when the server offers it\n"
"  --keepalive on|off        reuse connections (default on); off: a new\n"
"                            connection per request, closed by the client\n"
"  --max-connections N       cap on open connections (default: no cap)\n"
"  --transport auto|curl|h1  HTTP client: h1, the built-in HTTP/1.1 client (plain\n"
"                            http:// targets; fewer instructions per token), or\n"
"                            libcurl; auto (default) takes h1 unless TLS, --http2,\n"
"                            --proxy, --unix-socket or a special --header needs\n"
"                            libcurl (docs/architecture.md, Transports)\n"
"\n"
"Schedule:\n"
"  --rate R                  open loop, R requests/s (default 2); inf: a burst, every\n"
"                            request due at once (needs --requests N; vLLM's default)\n"
"  --burstiness B            gamma-distributed gaps of shape B (1 = Poisson, the\n"
"                            default; larger = smoother), as vLLM's --burstiness\n"
"  --schedule KIND           poisson (default), gamma, constant, or ramp (with --rate-end)\n"
"  --rate-end R              ramp: the rate at the end of --duration\n"
"  --schedule vllm-ramp-linear|vllm-ramp-exponential\n"
"                            vLLM's --ramp-up-strategy: the rate goes from --rate to\n"
"                            --rate-end with the request index over --requests N\n"
"  --concurrency C           closed loop instead: C requests always in flight\n"
"  --max-concurrency N       at most N in flight; the rest wait on the client (the\n"
"                            wait is measured as queue_wait, never hidden)\n"
"  --duration DUR            length of the schedule (default 30s)\n"
"  --requests N              send N requests instead of a duration\n"
"  --warmup DUR|N            warm-up inside the schedule: requests scheduled in the\n"
"                            first DUR (default 5s), or the first N, are recorded as\n"
"                            warmup and excluded from the figures; with --requests N\n"
"                            (no sessions) the default is the first N/10 requests\n"
"  --grace DUR               after the last arrival, wait this long for requests in\n"
"                            flight (default 10s); then they are recorded aborted\n"
"  --seed N                  seed of the schedule and the prompts (default: random,\n"
"                            recorded in results.json)\n"
"  --threads N               event-loop threads (default 1)\n",
     NULL},
    {"\n"
"Workload (docs/workloads.md, docs/datasets.md):\n"
"  --input-len N             prompt tokens (default 1024)\n"
"  --output-len N            max_tokens (default 128)\n"
"  --range-ratio R           lengths uniform in [L(1-R), L(1+R)] (default 0)\n"
"  --ignore-eos              send ignore_eos so every request generates exactly\n"
"                            --output-len tokens (vLLM extension)\n"
"  --temperature T, --top-p P  sampling parameters to send (default: not sent)\n"
"  --perturb                 entropy injection (docs/metrics.md 6): per request, temperature\n"
"                            and top_p vary around T and P (default 1, 1) with a hash of\n"
"                            the request and the schedule's load; recorded per request\n"
"  --dataset NAME            random (default: exact lengths), synthetic (approximate,\n"
"                            cheaper), sharegpt, jsonl, mooncake (trace),\n"
"                            azure (trace CSV); with --dataset-path FILE. A file with\n"
"                            timestamps is replayed at them unless --rate or\n"
"                            --concurrency is given (docs/datasets.md)\n"
"  --min-input-len N, --max-input-len N, --min-output-len N, --max-output-len N\n"
"                            sharegpt: keep conversations whose prompt and answer\n"
"                            lengths (tokens, with --tokenizer; else chars/4) are\n"
"                            within these bounds (default: all)\n"
"  --trace FILE              replay a trace at its timestamps: Mooncake jsonl, Azure\n"
"                            CSV or the jsonl request format (told from the file)\n"
"  --trace-speed X           replay timestamps X times faster (default 1)\n"
"  --prefix-groups N --prefix-len L --prefix-share F\n"
"                            a share F of the prompts starts with one of N shared\n"
"                            system prompts of L tokens (default: none shared)\n"
"  --tokenizer FILE          count prompt tokens, and output tokens of streams without\n"
"                            usage, with this tokenizer.json ('built-in': the built-in\n"
"                            server's; 'server': the target's own /tokenize, cached per\n"
"                            text; default: prompts only, with the built-in one)\n"
"  --no-context-check        send prompts + max_tokens beyond the server's context\n"
"                            (max_model_len, llama.cpp n_ctx) instead of refusing\n"
"  --chat-template NAME      deepseek-v3, deepseek-r1, chatml, llama-3 or none: the\n"
"                            template the server applies, counted in prompt tokens\n"
"                            (default: deepseek-v3 against infermeter serve, else none)\n"
"  --mix code=0.3,text=0.7   content classes of the prompts, labelled per request\n"
"  --cache-salt              send vLLM's cache_salt with a per-run salt\n"
"  --shared-cache            let this run hit a previous run's prefix cache (by\n"
"                            default every prompt starts with a per-run salt)\n"
"\n",
     im__run_agent_help},
    {NULL,
     im__run_net_help},
    {"Sessions (multi-turn chat with growing contexts, docs/sessions.md):\n"
"  --sessions N              N sessions at once, an ended one replaced at once\n"
"  --session-rate R          or: sessions start as a Poisson process of R per second\n"
"  --turns N                 turns per session (default 8)\n"
"  --context-growth A:B      context tokens of the first and last turn, e.g. 5k:32k\n"
"                            (k = 1024; default: --input-len at every turn)\n"
"  --think-time DUR          between an answer and the next turn (default 0)\n"
"\n"
"Stages (docs/scenarios.md); each stage is a full run with its own figures:\n"
"  --grid NAME=V1,V2,...     temperature, top_p, output_len or input_len (repeatable):\n"
"                            every combination is a stage\n"
"  --sweep rate=1,2,4 | concurrency=1,8,32 | rate=auto\n"
"                            one stage per value; auto: a throughput stage, then\n"
"                            --sweep-steps (default 5) rates evenly below it, stopping\n"
"                            at over-saturation or a failed SLO (--sweep-all: go on);\n"
"                            reports the saturation point\n"
"  --sweep context=4k,8k,16k one stage per prompt length (k = 1024) at the given\n"
"                            concurrency; reports the bandwidth knee (docs/deepseek.md)\n"
"  --scenario FILE           settings from a JSON scenario file (keys are these long\n"
"                            option names); flags on the command line override it\n"
"\n",
     NULL},
    {"Limits and verdicts:\n"
"  --slo ttft=500ms,tpot=50ms,e2el=10s   SLOs for goodput and the exit code\n"
"  --slo-target P            an SLO passes when at least P of requests meet it\n"
"                            (default 0.99)\n"
"  --min-requests N|auto     size the run beforehand to measure at least N requests\n"
"                            (raises --requests, or --duration in an open loop); auto:\n"
"                            the fewest with which every SLO can PASS at --slo-target\n"
"                            (MLPerf early stopping: 44 for 0.9, 459 for 0.99)\n"
"  --percentiles LIST        percentiles to report (default 50,90,95,99,99.9)\n"
"  --percentile-metrics LIST the metrics of the printed vLLM table: ttft, tpot,\n"
"                            itl, e2el (default all; vLLM's --percentile-metrics)\n"
"  --retries N               retry failed attempts (429, 5xx, connect, reset before\n"
"                            any token) with backoff and Retry-After (default 0)\n"
"  --retry-backoff-max DUR   longest wait before a retry, backoff or Retry-After\n"
"                            (default 30s)\n"
"  --timeout connect=5s,ttft=60s,idle=30s,total=10m\n"
"  --max-total-tokens N      refuse a plan above N tokens (prompt + output)\n"
"  --keep-text N|off         keep the hashed 4-grams of each answer's streamed\n"
"                            pieces (at most N per request, default 4096) for its\n"
"                            repetition rate (top_p_collapse); the text itself is\n"
"                            never stored\n"
"  --segment-window W        token latency windows of W gaps (default 8) ...\n"
"  --segment-stride S        ... starting every S gaps (default 4) (docs/metrics.md §4)\n"
"  --stall-k K               a gap above K x its request's median gap is a stall\n"
"                            (default 5; also the probe-stall factor)\n"
"  --otlp URL                after the run, send its attempts as OpenTelemetry spans\n"
"                            and its GenAI client metrics to an OTLP/HTTP collector\n"
"                            (URL/v1/traces, URL/v1/metrics; docs/otlp.md)\n"
"  --otlp-sample R           head-sample that share of requests' spans (default 1)\n"
"  --otlp-protocol P         http/json (default) or http/protobuf\n"
"  --provider NAME           gen_ai.provider.name (default: deepseek for the built-in\n"
"                            server and DeepSeek URLs, else openai)\n"
"  --timeslice DUR           per-slice throughput and latency percentiles in\n"
"                            metrics.timeslices (default: about 12 slices of\n"
"                            the measured window, 100ms to 10s)\n"
"  --logprobs N              ask for the top N (1-20) log-probabilities of each token\n"
"                            (chat logprobs/top_logprobs, completions logprobs) and\n"
"                            record each answer's mean entropy (temperature evidence)\n"
"  --yes                     start against a non-loopback target without asking\n"
"\n",
     NULL},
    {"Observers (docs/metrics.md §5; sampled on the run's clock, never fail the run):\n"
"  --scrape URL              a /metrics page to sample (repeatable; default: the\n"
"                            target's /metrics); --no-scrape: none\n"
"  --scrape-interval DUR     sampling period (default 1s, at least 100ms)\n"
"  --scrape-dcgm URL         a DCGM exporter's /metrics (GPU counters)\n"
"  --no-sockstat             do not sample TCP states toward the target\n"
"  --no-gpu                  do not read GPU counters through NVML\n"
"  --metrics-listen [ADDR:]PORT  serve live Prometheus text at /metrics during the\n"
"                            run (ADDR numeric, default 127.0.0.1; docs/live.md)\n"
"  --metrics-linger DUR      after the run, keep serving until the final page has\n"
"                            been scraped once, at most DUR (default 0: stop)\n"
"  --pushgateway URL         at the end, PUT the final live figures to a Prometheus\n"
"                            Pushgateway (group job=infermeter, run=<run id>)\n"
"  --kv-residency-ref F, --bw-util-ref F   reference lines (0.68, 0.78)\n"
"  --kv-bytes-per-token N    KV bytes one GPU holds per token (DeepSeek-V3 MLA:\n"
"                            70272), for KV residency\n"
"  --gpu-memory SIZE         memory of one GPU (default: from --hardware or NVML), e.g. 141G\n"
"  --model-config FILE|NAME  the served model's shape for the roofline (metrics.roofline):\n"
"                            a preset (deepseek-ai/DeepSeek-V3, DeepSeek-R1, DeepSeek-V2-Lite,\n"
"                            DeepSeek-R1-Distill-Qwen-32B, DeepSeek-R1-Distill-Llama-70B,\n"
"                            meta-llama/Llama-3.1-8B-Instruct), a Hugging Face config.json or\n"
"                            a JSON description (docs/deepseek.md); default: what the\n"
"                            target declares (the built-in server does)\n"
"  --hardware NAME           GPU preset: A100-SXM, H100-SXM, H200, B200, MI300X\n"
"  --gpus N, --tp N, --dp N  GPUs serving, tensor-parallel degree, data-parallel attention\n"
"                            (flags override the descriptions, which override the target)\n"
"  --mfu-ref F               MFU reference line (0.32)\n"
"\n",
     im__shard_usage},
    {"\n"
"Output:\n"
"  --out DIR                 results directory (default results/run-YYYYmmdd-HHMMSS):\n"
"                            requests.jsonl (one line per attempt, written as each\n"
"                            ends) and results.json\n"
"  --tag key=value           declared server setting, e.g. torch_compile=on, tp=8\n"
"                            (repeatable; recorded in the manifest)\n"
"  -q, --quiet               only errors and the verdict line (no summary table, no\n"
"                            progress line, no warnings)\n"
"  --no-progress             no progress line\n"
"  -v, --verbose             also say what is being done: the settings used, the\n"
"                            files written\n"
"  --json                    the summary as JSON on stdout instead of the table\n"
"                            (results.json's summary; the verdict line on stderr)\n"
"  --output-format json|csv  csv: also DIR/requests.csv (one row per attempt) and\n"
"                            DIR/summary.csv (one row per stage), RFC 4180\n"
"                            (docs/cli.md); results.json is always written\n"
"  --repeat K                K independent runs of this configuration (1..100, default\n"
"                            1): DIR/run-1 .. DIR/run-K, each a full run directory\n"
"                            (own seed, own cache salt, a random 0-2 s start offset),\n"
"                            and DIR/results.json with each headline figure's mean and\n"
"                            95% CI (docs/statistics.md). With --grid/--sweep every\n"
"                            stage runs K times, in a seeded random order of stage x\n"
"                            repeat: DIR/stage-S/run-K, DIR/stage-S/results.json\n"
"  --cooldown DUR            between repeats against --url: wait until the server's\n"
"                            running and waiting requests are 0 (its /metrics, any\n"
"                            engine, or llama.cpp's /slots), at most DUR (default\n"
"                            60s); when nothing says, wait DUR (default 5s)\n"
"  --max-ci-width PCT        with --repeat K: the audit's limit on a figure's 95% CI\n"
"                            width, in % of its mean (default 8)\n"
"  --reference FILE|FIG=V    with --repeat K: test each headline figure's runs against\n"
"                            a reference (one-sample t-test, p in the table and\n"
"                            results.json): FILE a run's or a repeat set's results.json\n"
"                            (or its directory) or {\"ttft_p99_ms\": 120, ...};\n"
"                            FIG=V one figure, e.g. request_throughput=9.5 (repeatable)\n"
"  --health-interval DUR     poll GET /health (--health-path PATH) every DUR during the\n"
"                            run, as monitoring does; recorded as kind health, never in\n"
"                            throughput (docs/metrics.md §3)\n",
     NULL},
    {"  --ready-timeout DUR       wait up to DUR for the target to answer GET /v1/models\n"
"                            with 200 before the run (a server still loading its\n"
"                            weights); vLLM's --ready-check-timeout-sec\n"
"  --profile-server          ask the server to record a profile of the load: POST\n"
"                            /start_profile before the first stage, /stop_profile after\n"
"                            the last (vLLM with VLLM_TORCH_PROFILER_DIR, SGLang); a\n"
"                            server without them is named and the run goes on\n"
"  --probe-rate R            send 1-token probe requests (not streamed) at Poisson\n"
"                            instants, R per second, beside the load; recorded as kind\n"
"                            probe, never in throughput; their stalls in analysis.probes\n"
"  --history PATH            the results history (SQLite) the run is added to (default\n"
"                            $XDG_DATA_HOME/infermeter/history.db); --no-history: none\n"
"                            (infermeter history, infermeter compare ID ID)\n"
"  --publish                 a run the validity audit finds NOT_PUBLISHABLE exits 4\n"
"                            (docs/audit.md; `infermeter audit DIR` says why)\n"
"  --max-error-rate PCT      a stage with more than PCT % of its requests failed,\n"
"                            refused or aborted is a failing server: exit 6 (default 5)\n"
"\n"
"vLLM's benchmark flags (vllm bench serve; translated, docs/migrating.md):\n"
"  --request-rate R          --rate R\n"
"  --num-prompts N           --requests N\n"
"  --base-url URL, --host H --port P, --endpoint PATH\n"
"                            --url (and --backend from the endpoint)\n"
"  --served-model-name NAME  --model NAME\n"
"  --dataset-name NAME       --dataset NAME (random also sets --ignore-eos)\n"
"  --random-input-len N, --random-output-len N, --random-range-ratio R\n"
"                            --input-len, --output-len, --range-ratio\n"
"  --random-prefix-len N     one shared prefix of N tokens on every prompt\n"
"  --sharegpt-output-len N   --output-len N\n"
"  --num-warmups N           --warmup N\n"
"  --metric-percentiles L    --percentiles L\n"
"  --percentile-metrics L    which figures get percentiles (all are computed)\n"
"  --goodput KEY:MS ...      --slo\n"
"  --metadata KEY=VALUE ...  --tag\n"
"  --ramp-up-strategy S, --ramp-up-start-rps R, --ramp-up-end-rps R\n"
"                            --schedule vllm-ramp-*, --rate, --rate-end\n"
"  --ready-check-timeout-sec S  --ready-timeout\n"
"  --profile                 --profile-server\n"
"  --disable-tqdm            --no-progress\n"
"  --save-result, --save-detailed, --result-dir DIR, --result-filename F, --label L\n"
"                            also write vLLM's result file\n"
"  Refused by name with what to use instead: --top-k, --min-p, the penalties,\n"
"  --append-result, --plot-*, --lora-modules, --trust-remote-code,\n"
"  --tokenizer-mode, --skip-tokenizer-init, --extra-body, --request-id-prefix.\n"
"\n"
"Exit status: 130 interrupted, 2 target unreachable, 1 usage or configuration\n"
"error, 5 the load engine failed, 6 a failing server, 3 client self-check\n"
"INVALID, 4 not publishable (with --publish), 99 an SLO failed, 0 otherwise.\n",
     NULL},
};

/* The first screen: what to type, then the options most runs need. */
static const char run_usage_short[] =
"usage: infermeter run [OPTIONS]\n"
"\n"
"Drives load at an OpenAI-compatible server and records every request's token\n"
"timing. Without --url it tests the built-in simulated server.\n"
"\n"
"Examples:\n"
"  infermeter run                                  # 30 s at the built-in server\n"
"  infermeter run --url http://gpu1:8000 --rate 4 --duration 60s\n"
"  infermeter run --url http://gpu1:8000 --concurrency 32 --requests 500\n"
"  infermeter run --url http://gpu1:8000 --sweep rate=auto --slo ttft=500ms\n"
"  infermeter run --url http://gpu1:8000 --request-rate 4 --num-prompts 200\n"
"                                        # vllm bench serve's flags work too\n"
"\n"
"Common options:\n"
"  --url URL                 the server (default: the built-in one)\n"
"  --model NAME              model to request (default: the server's first)\n"
"  --rate R                  open loop: R requests/s, Poisson (default 2)\n"
"  --concurrency C           closed loop: C requests always in flight\n"
"  --duration DUR            length of the schedule (default 30s)\n"
"  --requests N              send N requests instead of a duration\n"
"  --input-len N             prompt tokens (default 1024)\n"
"  --output-len N            max_tokens (default 128)\n"
"  --dataset NAME            random, sharegpt, jsonl, mooncake, azure\n"
"  --dataset-path FILE       the dataset's file\n"
"  --slo ttft=500ms,tpot=50ms  SLOs for goodput and the exit status\n"
"  --sweep rate=1,2,4        one stage per value (rate=auto: find saturation)\n"
"  --repeat K                K independent runs, each figure with its 95% CI\n"
"  --out DIR                 results directory (default results/run-DATE-TIME)\n"
"  --json                    the summary as JSON on stdout\n"
"  -q, --quiet               only errors and the verdict line\n"
"\n"
"More options, in groups: Target, Schedule, Workload, Reasoning and agents,\n"
"Network path, Sessions, Stages, Limits and verdicts, Observers, Several\n"
"generators, Output, vLLM's benchmark flags. See them all with\n"
"  infermeter run --help-all      or      man infermeter\n"
"\n"
"Exit status: 0 passed, 1 usage error, 2 target unreachable, 3 the client could\n"
"not keep its schedule, 6 a failing server, 99 an SLO failed (--help-all).\n";

void im__run_usage(FILE *o) { fputs(run_usage_short, o); }

void im__run_usage_all(FILE *o) {
  for (size_t i = 0; i < sizeof usage_parts / sizeof usage_parts[0]; i++) {
    if (usage_parts[i].text)
      fputs(usage_parts[i].text, o);
    if (usage_parts[i].more)
      usage_parts[i].more(o);
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

static int parse_timeouts(const char *arg, struct im_run_config *o) {
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

/* --percentile-metrics ttft,tpot,itl,e2el: bits of analyze/summary.h. */
static int parse_pct_metrics(const char *arg, struct im_summary_config *c) {
  static const char *const names[] = {"ttft", "tpot", "itl", "e2el"};
  c->pct_metrics = 0;
  for (const char *p = arg; *p;) {
    size_t n = strcspn(p, ","), k = 0;
    while (k < 4 && (strlen(names[k]) != n || strncmp(p, names[k], n)))
      k++;
    if (k == 4) {
      fprintf(stderr, "infermeter: --percentile-metrics %s: a list of ttft, tpot, itl, e2el\n", arg);
      return -1;
    }
    c->pct_metrics |= 1u << k;
    p += n + (p[n] == ',');
  }
  return c->pct_metrics ? 0 : -1;
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
  O_IGNORE_EOS, O_TEMP, O_TOPP, O_SLO, O_SLO_TARGET, O_PCT, O_PCT_METRICS, O_TAG, O_HEADER, O_RETRIES, O_TIMEOUT,
  O_MAXTOK, O_YES, O_KEYFILE, O_INSECURE, O_KEEPALIVE, O_HTTP2, O_CACHE_SALT, O_SHARED, O_QUIET, O_PUBLISH, O_MAX_ERROR_RATE, O_REPEAT, O_COOLDOWN, O_REPEAT_INDEX, O_REPEAT_OF, O_REPEAT_STAGE, O_REFERENCE, O_MIN_REQUESTS, O_MAX_CI_WIDTH, O_HISTORY, O_NO_HISTORY, O_HEALTH_INTERVAL, O_HEALTH_PATH,
  O_NOPROG, O_THREADS, O_SCRAPE, O_NOSCRAPE, O_SCRAPE_INT, O_DCGM, O_NOSOCK, O_NOGPU, O_KVREF,
  O_BWREF, O_PGROUPS, O_PLEN, O_PSHARE, O_KVBPT, O_GPUMEM, O_DATASET, O_DSPATH, O_TSPEED, O_PERTURB,
  O_SESSIONS, O_SRATE, O_TURNS, O_GROWTH, O_THINK, O_GRID, O_SWEEP, O_SWEEP_STEPS, O_SWEEP_ALL,
  O_SCENARIO, O_TOKENIZER, O_CHAT_TMPL, O_MIX, O_TRACE, O_MIN_IN, O_MAX_IN, O_MIN_OUT, O_MAX_OUT,
  O_BACKOFF_MAX, O_KEEP_TEXT, O_PROBE_RATE, O_LOGPROBS, O_SEGW, O_SEGS, O_STALLK, O_TIMESLICE,
  O_OTLP, O_OTLP_SAMPLE, O_OTLP_PROTOCOL, O_PROVIDER, O_MODELCFG, O_HARDWARE, O_GPUS, O_TP, O_DP,
  O_MFUREF, O_METRICS_LISTEN, O_METRICS_LINGER, O_PUSHGATEWAY, O_NO_CTX_CHECK, O_READY_TIMEOUT,
  O_PROFILE_SERVER, O_TRANSPORT
};

const struct option im__run_options[] = {
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
    {"percentiles", required_argument, 0, O_PCT},
    {"percentile-metrics", required_argument, 0, O_PCT_METRICS}, {"tag", required_argument, 0, O_TAG},
    {"header", required_argument, 0, O_HEADER}, {"retries", required_argument, 0, O_RETRIES},
    {"retry-backoff-max", required_argument, 0, O_BACKOFF_MAX},
    {"timeout", required_argument, 0, O_TIMEOUT},
    {"max-total-tokens", required_argument, 0, O_MAXTOK}, {"yes", no_argument, 0, O_YES},
    {"api-key-file", required_argument, 0, O_KEYFILE}, {"insecure", no_argument, 0, O_INSECURE},
    {"keepalive", required_argument, 0, O_KEEPALIVE}, {"http2", no_argument, 0, O_HTTP2},
    {"cache-salt", no_argument, 0, O_CACHE_SALT}, {"shared-cache", no_argument, 0, O_SHARED},
    {"quiet", no_argument, 0, O_QUIET}, {"publish", no_argument, 0, O_PUBLISH},
    {"max-error-rate", required_argument, 0, O_MAX_ERROR_RATE},
    {"verbose", no_argument, 0, 'v'}, {"json", no_argument, 0, 'j'},
    {"output-format", required_argument, 0, 'F'},
    {"repeat", required_argument, 0, O_REPEAT}, {"cooldown", required_argument, 0, O_COOLDOWN},
    {"repeat-index", required_argument, 0, O_REPEAT_INDEX},
    {"repeat-of", required_argument, 0, O_REPEAT_OF},
    {"reference", required_argument, 0, O_REFERENCE},
    {"repeat-stage", required_argument, 0, O_REPEAT_STAGE},
    {"min-requests", required_argument, 0, O_MIN_REQUESTS},
    {"max-ci-width", required_argument, 0, O_MAX_CI_WIDTH},
    {"history", required_argument, 0, O_HISTORY}, {"no-history", no_argument, 0, O_NO_HISTORY},
    {"health-interval", required_argument, 0, O_HEALTH_INTERVAL},
    {"ready-timeout", required_argument, 0, O_READY_TIMEOUT},
    {"profile-server", no_argument, 0, O_PROFILE_SERVER},
    {"transport", required_argument, 0, O_TRANSPORT},
    {"health-path", required_argument, 0, O_HEALTH_PATH},
    {"keep-text", required_argument, 0, O_KEEP_TEXT},
    {"probe-rate", required_argument, 0, O_PROBE_RATE},
    {"logprobs", required_argument, 0, O_LOGPROBS},
    {"segment-window", required_argument, 0, O_SEGW},
    {"segment-stride", required_argument, 0, O_SEGS},
    {"stall-k", required_argument, 0, O_STALLK},
    {"timeslice", required_argument, 0, O_TIMESLICE},
    {"otlp", required_argument, 0, O_OTLP},
    {"otlp-sample", required_argument, 0, O_OTLP_SAMPLE},
    {"otlp-protocol", required_argument, 0, O_OTLP_PROTOCOL},
    {"provider", required_argument, 0, O_PROVIDER},
    {"metrics-listen", required_argument, 0, O_METRICS_LISTEN},
    {"metrics-linger", required_argument, 0, O_METRICS_LINGER},
    {"pushgateway", required_argument, 0, O_PUSHGATEWAY},
    {"no-progress", no_argument, 0, O_NOPROG},
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
    {"gpu-memory", required_argument, 0, O_GPUMEM},
    {"model-config", required_argument, 0, O_MODELCFG},
    {"hardware", required_argument, 0, O_HARDWARE},
    {"gpus", required_argument, 0, O_GPUS},
    {"tp", required_argument, 0, O_TP},
    {"dp", required_argument, 0, O_DP},
    {"mfu-ref", required_argument, 0, O_MFUREF},
    {"dataset", required_argument, 0, O_DATASET},
    {"dataset-path", required_argument, 0, O_DSPATH},
    {"trace-speed", required_argument, 0, O_TSPEED}, {"perturb", no_argument, 0, O_PERTURB},
    {"sessions", required_argument, 0, O_SESSIONS},
    {"session-rate", required_argument, 0, O_SRATE},
    {"turns", required_argument, 0, O_TURNS},
    {"context-growth", required_argument, 0, O_GROWTH},
    {"think-time", required_argument, 0, O_THINK},
    {"grid", required_argument, 0, O_GRID}, {"sweep", required_argument, 0, O_SWEEP},
    {"sweep-steps", required_argument, 0, O_SWEEP_STEPS},
    {"sweep-all", no_argument, 0, O_SWEEP_ALL},
    {"scenario", required_argument, 0, O_SCENARIO},
    {"tokenizer", required_argument, 0, O_TOKENIZER}, {"no-context-check", no_argument, 0, O_NO_CTX_CHECK},
    {"chat-template", required_argument, 0, O_CHAT_TMPL}, {"mix", required_argument, 0, O_MIX},
    {"trace", required_argument, 0, O_TRACE},
    {"min-input-len", required_argument, 0, O_MIN_IN},
    {"max-input-len", required_argument, 0, O_MAX_IN},
    {"min-output-len", required_argument, 0, O_MIN_OUT},
    {"max-output-len", required_argument, 0, O_MAX_OUT},
    IM_RUN_AGENT_OPTIONS,
    IM_RUN_NET_OPTIONS,
    IM_RUN_SHARD_OPTIONS,
    {"help", no_argument, 0, 'h'},
    {"help-all", no_argument, 0, 'H'},
    {0, 0, 0, 0}};

/* Two spellings of one target: equal once normalised (trailing slashes, /v1). */
static bool same_url(const char *a, const char *b) {
  char na[2048], nb[2048];
  im_url_normalize(a, na, sizeof na);
  im_url_normalize(b, nb, sizeof nb);
  return !strcmp(na, nb);
}

/* An option not of this group (im__run_apply tries the next). */
enum { NOT_MINE = 1 };

/* Target, schedule, workload lengths, limits, connections. */
static int apply_target(struct im_run_config *o, int opt, const char *arg) {
  switch (opt) {
  case O_URL: /* repeatable: several targets (docs/tls.md) */
    if (o->urls_from_scenario && !o->applying_scenario)
      o->n_urls = 0; /* the command line replaces the scenario's */
    o->urls_from_scenario = o->applying_scenario;
    for (uint32_t i = 0; i < o->n_urls; i++)
      if (same_url(o->urls[i], arg))
        return 0; /* one target given twice (e.g. --url and vLLM's --base-url) */
    if (o->n_urls == IM_RECORD_MAX_TARGETS) {
      fprintf(stderr, "infermeter run: --url: at most %d targets\n", IM_RECORD_MAX_TARGETS);
      return -1;
    }
    o->urls[o->n_urls++] = arg;
    o->url = o->urls[0];
    return 0;
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
  case O_RATE:
    o->rate_given = true;
    /* inf: a burst, every request due at once (vLLM's default). */
    if (!strcasecmp(arg, "inf") || !strcasecmp(arg, "infinity")) {
      o->rate = INFINITY;
      return 0;
    }
    return im_arg_double("--rate", arg, 1e-6, 1e7, &o->rate);
  case O_BURST:
    if (o->sched_kind < IM_SCHED_RAMP_REQ_LINEAR) /* the vLLM ramps keep it as their shape */
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
    else if (!strcmp(arg, "vllm-ramp-linear"))
      o->sched_kind = IM_SCHED_RAMP_REQ_LINEAR;
    else if (!strcmp(arg, "vllm-ramp-exponential"))
      o->sched_kind = IM_SCHED_RAMP_REQ_EXP;
    else {
      fprintf(stderr, "infermeter: --schedule: expected poisson, gamma, constant, ramp, "
                      "vllm-ramp-linear or vllm-ramp-exponential\n");
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
    o->warmup_given = true;
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
  case O_PCT_METRICS: return parse_pct_metrics(arg, &o->scfg);
  case O_TAG:
    if (!strchr(arg, '=') || arg[0] == '=') {
      fprintf(stderr, "infermeter: --tag: expected key=value, got '%s'\n", arg);
      return -1;
    }
    if (o->n_tags == IM_RUN_MAX_TAGS) {
      fprintf(stderr, "infermeter: --tag: at most %d\n", IM_RUN_MAX_TAGS);
      return -1;
    }
    o->tags[o->n_tags++] = arg;
    return 0;
  case O_HEADER:
    if (!strchr(arg, ':') || o->n_headers == IM_RUN_MAX_HEADERS) {
      fprintf(stderr, "infermeter: --header: expected 'Name: value' (at most %d)\n", IM_RUN_MAX_HEADERS);
      return -1;
    }
    o->headers[o->n_headers++] = arg;
    return 0;
  case O_RETRIES: return im_arg_u32("--retries", arg, 0, 1000000, &o->retries);
  case O_BACKOFF_MAX: return im_arg_duration("--retry-backoff-max", arg, &o->retry_backoff_max_ns);
  case O_TIMEOUT: return parse_timeouts(arg, o);
  case O_MAXTOK: return im_arg_u64("--max-total-tokens", arg, &o->max_total_tokens);
  case O_YES: o->yes = true; return 0;
  case O_KEYFILE: o->api_key_file = arg; return 0;
  case O_INSECURE: o->insecure = o->net.insecure = true; return 0;
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
  default:
    return NOT_MINE;
  }
}

/* Output, repeats, history, observers of the run, the live sinks. */
static int apply_output(struct im_run_config *o, int opt, const char *arg) {
  switch (opt) {
  case 'q': /* -q */
  case O_QUIET: o->quiet = true; return 0;
  case 'v': o->verbose = true; return 0;
  case 'j': o->json = true; return 0;
  case 'F': return im__output_format_parse("run", arg, &o->csv);
  case O_PUBLISH: o->publish = true; return 0;
  case O_MAX_ERROR_RATE: {
    double pct = 0;
    if (im_arg_double("--max-error-rate", arg, 0, 100, &pct))
      return -1;
    o->max_error_rate = pct > 0 ? pct / 100.0 : 1e-12; /* 0: any failure fails */
    return 0;
  }
  case O_REPEAT: return im_arg_u32("--repeat", arg, 1, 100, &o->repeat);
  case O_COOLDOWN: return im_arg_duration("--cooldown", arg, &o->cooldown_ns);
  case O_REPEAT_INDEX: return im_arg_u32("--repeat-index", arg, 1, 100, &o->repeat_index);
  case O_REPEAT_OF: return im_arg_u32("--repeat-of", arg, 1, 100, &o->repeat_of);
  case O_MAX_CI_WIDTH:
    if (im_arg_double("--max-ci-width", arg, 0.001, 1000, &o->max_ci_width))
      return -1;
    o->max_ci_width /= 100.0;
    return 0;
  case O_MIN_REQUESTS:
    o->min_requests_auto = !strcmp(arg, "auto");
    o->min_requests = 0;
    return o->min_requests_auto ? 0 : im_arg_u64("--min-requests", arg, &o->min_requests);
  case O_REPEAT_STAGE:
    return im_arg_u32("--repeat-stage", arg, 1, IM_REPEAT_MAX_CELLS, &o->repeat_stage);
  case O_REFERENCE:
    if (o->n_reference == sizeof o->reference / sizeof o->reference[0]) {
      fprintf(stderr, "infermeter: --reference: at most 32\n");
      return -1;
    }
    o->reference[o->n_reference++] = arg;
    return 0;
  case O_HISTORY: o->history = arg; return 0;
  case O_NO_HISTORY: o->no_history = true; return 0;
  case O_HEALTH_INTERVAL: return im_arg_duration("--health-interval", arg, &o->health_interval_ns);
  case O_READY_TIMEOUT: return im_arg_duration("--ready-timeout", arg, &o->ready_timeout_ns);
  case O_PROFILE_SERVER: o->profile_server = true; return 0;
  case O_TRANSPORT:
    for (int t = IM_TRANSPORT_AUTO; t <= IM_TRANSPORT_H1; t++)
      if (!strcmp(arg, im_load_transport_name(t))) {
        o->transport = t;
        return 0;
      }
    fprintf(stderr, "infermeter run: --transport: expected auto, curl or h1\n");
    return -1;
  case O_HEALTH_PATH:
    if (arg[0] != '/' || strlen(arg) > 200) {
      fprintf(stderr, "infermeter run: --health-path: a path starting with '/' (at most 200 "
                      "bytes), e.g. /health\n");
      return -1;
    }
    o->health_path = arg;
    return 0;
  case O_KEEP_TEXT:
    if (!strcmp(arg, "off")) {
      o->keep_ngrams = 0;
      return 0;
    }
    return im_arg_u32("--keep-text", arg, 0, 1u << 20, &o->keep_ngrams);
  case O_METRICS_LISTEN: {
    char host[64], msg[256];
    uint16_t port;
    if (im_metrics_listen_parse(arg, host, sizeof host, &port, msg, sizeof msg) != IM_OK) {
      fprintf(stderr, "infermeter run: %s\n", msg);
      return -1;
    }
    o->metrics_listen = arg;
    return 0;
  }
  case O_PUSHGATEWAY: o->pushgateway = arg; return 0;
  case O_METRICS_LINGER: return im_arg_duration("--metrics-linger", arg, &o->metrics_linger_ns);
  case O_LOGPROBS: return im_arg_u32("--logprobs", arg, 1, 20, &o->logprobs);
  case O_SEGW: return im_arg_u32("--segment-window", arg, 1, 100000, &o->segment_window);
  case O_SEGS: return im_arg_u32("--segment-stride", arg, 1, 100000, &o->segment_stride);
  case O_STALLK: return im_arg_double("--stall-k", arg, 1.000001, 1e6, &o->stall_k);
  case O_OTLP:
    if (strncmp(arg, "http://", 7) && strncmp(arg, "https://", 8)) {
      fprintf(stderr, "infermeter run: --otlp: an http:// or https:// URL (the collector's "
                      "OTLP/HTTP base, e.g. http://127.0.0.1:4318), got '%s'\n", arg);
      return -1;
    }
    o->otlp = arg;
    return 0;
  case O_OTLP_SAMPLE: return im_arg_double("--otlp-sample", arg, 1e-9, 1.0, &o->otlp_sample);
  case O_OTLP_PROTOCOL: return im__otlp_protocol("--otlp-protocol", arg, &o->otlp_protobuf);
  case O_PROVIDER: o->provider = arg; return 0;
  case O_TIMESLICE:
    if (im_arg_duration("--timeslice", arg, &o->timeslice_ns))
      return -1;
    if (o->timeslice_ns < 1000000) {
      fprintf(stderr, "infermeter run: --timeslice: at least 1ms, got '%s'\n", arg);
      return -1;
    }
    return 0;
  case O_PROBE_RATE: return im_arg_double("--probe-rate", arg, 0.0, 1000.0, &o->probe_rate);
  case O_NOPROG: o->no_progress = true; return 0;
  case O_THREADS: return im_arg_u32("--threads", arg, 1, 256, &o->threads);
  default:
    return NOT_MINE;
  }
}

/* Observers, workloads, sessions, stages, tokens, the system; then the
 * groups kept with their parsers (agents, network path, shards). */
static int apply_workload(struct im_run_config *o, int opt, const char *arg) {
  uint64_t u;
  switch (opt) {
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
  case O_DATASET:
    if (strcmp(arg, "synthetic") && strcmp(arg, "random") && strcmp(arg, "sharegpt") &&
        strcmp(arg, "jsonl") && strcmp(arg, "mooncake") && strcmp(arg, "azure")) {
      fprintf(stderr, "infermeter: --dataset: expected synthetic, sharegpt, jsonl, mooncake or "
                      "azure, got '%s'\n", arg);
      return -1;
    }
    o->dataset = arg;
    return 0;
  case O_DSPATH: o->dataset_path = arg; return 0;
  case O_PERTURB: o->perturb = true; return 0;
  case O_SESSIONS: return im_arg_u32("--sessions", arg, 1, 1000000, &o->sessions);
  case O_SRATE: return im_arg_double("--session-rate", arg, 1e-6, 1e6, &o->session_rate);
  case O_TURNS: return im_arg_u32("--turns", arg, 1, 1000, &o->turns);
  case O_GROWTH: {
    char msg[256];
    if (im_sessions_parse_growth(arg, &o->ctx_start, &o->ctx_end, msg, sizeof msg)) {
      fprintf(stderr, "infermeter: %s\n", msg);
      return -1;
    }
    return 0;
  }
  case O_THINK: return im_arg_duration("--think-time", arg, &o->think_ns);
  case O_GRID:
    if (o->grid_from_scenario && !o->applying_scenario) {
      o->n_grid = 0; /* the command line replaces the scenario's grid */
      o->grid_from_scenario = false;
    }
    if (o->n_grid == 4) {
      fprintf(stderr, "infermeter: --grid: at most 4 (one per parameter)\n");
      return -1;
    }
    o->grid[o->n_grid++] = arg;
    o->grid_from_scenario = o->applying_scenario;
    return 0;
  case O_SWEEP: o->sweep = arg; return 0;
  case O_SWEEP_STEPS: return im_arg_u32("--sweep-steps", arg, 1, 64, &o->sweep_steps);
  case O_SWEEP_ALL: o->stop_on_saturation = false; return 0;
  case O_SCENARIO: o->scenario = arg; return 0; /* loaded before the other flags */
  case O_TOKENIZER: o->tokenizer = arg; return 0;
  case O_NO_CTX_CHECK: o->no_context_check = true; return 0;
  case O_CHAT_TMPL: o->chat_template = arg; return 0;
  case O_MIX: o->mix = arg; return 0;
  case O_TRACE: o->trace = arg; return 0;
  case O_MIN_IN: return im_arg_u32("--min-input-len", arg, 0, 10000000, &o->min_in);
  case O_MAX_IN: return im_arg_u32("--max-input-len", arg, 0, 10000000, &o->max_in);
  case O_MIN_OUT: return im_arg_u32("--min-output-len", arg, 0, 10000000, &o->min_out);
  case O_MAX_OUT: return im_arg_u32("--max-output-len", arg, 0, 10000000, &o->max_out);
  case O_TSPEED: return im_arg_double("--trace-speed", arg, 1e-6, 1e6, &o->trace_speed);
  case O_MODELCFG: o->sys.model_config = arg; return 0;
  case O_HARDWARE: o->sys.hardware = arg; return 0;
  case O_GPUS: return im_arg_u32("--gpus", arg, 1, 65536, &o->sys.gpus);
  case O_TP: return im_arg_u32("--tp", arg, 1, 65536, &o->sys.tp);
  case O_DP: return im_arg_u32("--dp", arg, 1, 65536, &o->sys.dp);
  case O_MFUREF: return im_arg_double("--mfu-ref", arg, 0.001, 1, &o->sys.mfu_ref);
  case O_KVBPT: return im_arg_double("--kv-bytes-per-token", arg, 1, 1e9, &o->kv_bytes_per_token);
  case O_GPUMEM:
    if (im_arg_size("--gpu-memory", arg, &u))
      return -1;
    o->gpu_memory = (double)u;
    return 0;
  default:
    if (opt >= O_AGENT_FIRST && opt < O_AGENT_LAST)
      return im__run_agent_opt(&o->agent, opt, arg);
    if (opt >= O_NET_FIRST && opt < O_NET_LAST)
      return im__run_net_opt(&o->net, opt, arg);
    if (opt >= O_SHARD_FIRST && opt < O_SHARD_LAST)
      return im__shard_opt(&o->shard, opt, arg);
    return -1;
  }
}

int im__run_apply(struct im_run_config *o, int opt, const char *arg) {
  int rc = apply_target(o, opt, arg);
  if (rc == NOT_MINE)
    rc = apply_output(o, opt, arg);
  if (rc == NOT_MINE)
    rc = apply_workload(o, opt, arg);
  return rc;
}

