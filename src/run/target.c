/* `infermeter run` and its target before the run: discovery, the API key,
 * redaction of secrets, the manifest. */
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

#include "run/run_int.h"
#include "run/urls.h"
#include "im_version.h"
#include "core/buf.h"
#include "core/clock.h"
#include "core/log.h"

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

static json_t *command_line_json(int n, const char *const *words) {
  json_t *a = json_array();
  for (int i = 0; i < n; i++) {
    const char *arg = words[i];
    char buf[2048];
    if (i > 0 && !strcmp(words[i - 1], "--header") && secret_header(arg)) {
      snprintf(buf, sizeof buf, "%.*s: REDACTED", (int)strcspn(arg, ":"), arg);
      arg = buf;
    } else if (!strncmp(arg, "--header=", 9) && secret_header(arg + 9)) {
      snprintf(buf, sizeof buf, "--header=%.*s: REDACTED", (int)strcspn(arg + 9, ":"), arg + 9);
      arg = buf;
    } else if (i > 0 && (!strcmp(words[i - 1], "--url") || !strcmp(words[i - 1], "--proxy"))) {
      im_url_redact(arg, buf, sizeof buf);
      arg = buf;
    } else if (!strncmp(arg, "--url=", 6) || !strncmp(arg, "--proxy=", 8)) {
      size_t k = strcspn(arg, "=") + 1;
      char red[2000];
      im_url_redact(arg + k, red, sizeof red);
      snprintf(buf, sizeof buf, "%.*s%s", (int)k, arg, red);
      arg = buf;
    }
    json_array_append_new(a, json_string(arg));
  }
  return a;
}

static const char *sched_name(enum im_sched_kind k) {
  return k == IM_SCHED_GAMMA ? "gamma" : k == IM_SCHED_CONSTANT ? "constant"
         : k == IM_SCHED_RAMP ? "ramp" : k == IM_SCHED_RAMP_REQ_LINEAR ? "vllm-ramp-linear"
         : k == IM_SCHED_RAMP_REQ_EXP ? "vllm-ramp-exponential" : "poisson";
}

json_t *im__run_manifest_json(const struct im_run_config *o, const char *url, bool builtin, const char *model, json_t *models, json_t *version,
                             int64_t wall_start_ns, const char *salt) {
  char ts[64], red[2048];
  time_t secs = (time_t)(wall_start_ns / 1000000000);
  struct tm tm;
  gmtime_r(&secs, &tm);
  strftime(ts, sizeof ts, "%Y-%m-%dT%H:%M:%SZ", &tm);
  im_url_redact(url, red, sizeof red);
  json_t *m = json_object();
  json_object_set_new(m, "tool", json_string("infermeter"));
  json_object_set_new(m, "version", json_string(IM_VERSION));
  json_object_set_new(m, "git", json_string(IM_GIT_HASH));
  json_object_set_new(m, "command_line", command_line_json(o->n_command_words, o->command_words));
  json_object_set_new(m, "started_at", json_string(ts));
  json_object_set_new(m, "seed", json_integer((json_int_t)o->seed));
  json_object_set_new(m, "run_salt", json_string(salt));
  json_object_set_new(m, "target", json_pack("{s:s, s:s, s:s, s:b}", "url", red, "backend",
                                             o->backend == IM_BACKEND_CHAT ? "openai-chat"
                                                                           : "openai-completions",
                                             "model", model, "builtin_server", builtin));
  /* How the target was reached (docs/tls.md): verification off is a caveat
   * the audit repeats (docs/audit.md, tls_verification). */
  char proxy[2048] = "";
  if (o->net.proxy)
    im_url_redact(o->net.proxy, proxy, sizeof proxy);
  if (o->n_urls > 1) { /* several targets: records' `target` indexes this */
    json_t *urls = json_array();
    for (uint32_t i = 0; i < o->n_urls; i++) {
      char u[2048], r[2048];
      im_url_normalize(o->urls[i], u, sizeof u);
      im_url_redact(u, r, sizeof r);
      json_array_append_new(urls, json_string(r));
    }
    json_object_set_new(json_object_get(m, "target"), "urls", urls);
  }
  json_object_set_new(json_object_get(m, "target"), "transport",
                      json_pack("{s:b, s:b, s:s*, s:b, s:s*, s:s*}", "insecure", o->net.insecure,
                                "http2", o->http2, "cacert", o->net.cacert, "client_cert",
                                o->net.cert != NULL, "proxy", o->net.proxy ? proxy : NULL,
                                "unix_socket", o->net.unix_socket));
  /* The HTTP client the load engine uses (--transport). */
  char twhy[320];
  int tr = im__run_transport(o, url, twhy, sizeof twhy);
  json_object_set_new(json_object_get(json_object_get(m, "target"), "transport"), "client",
                      json_string(im_load_transport_name(tr < 0 ? IM_TRANSPORT_CURL : tr)));
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
    bool burst = isinf(o->rate); /* --rate inf: every request due at once */
    json_object_set_new(sched, "kind", json_string(burst ? "burst" : sched_name(o->sched_kind)));
    if (!burst) /* a burst has no rate: the key stays a number where present */
      json_object_set_new(sched, "rate", json_real(o->rate));
    if (o->sched_kind == IM_SCHED_GAMMA || o->sched_kind >= IM_SCHED_RAMP_REQ_LINEAR)
      json_object_set_new(sched, "burstiness", json_real(o->burstiness));
    if (o->sched_kind >= IM_SCHED_RAMP)
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
  json_object_set_new(wl, "perturb", json_boolean(o->perturb));
  if (o->dataset && strcmp(o->dataset, "synthetic") && strcmp(o->dataset, "random")) {
    json_object_set_new(wl, "dataset", json_string(o->dataset));
    json_object_set_new(wl, "dataset_path", json_string(o->dataset_path));
    json_object_set_new(wl, "trace_speed", json_real(o->trace_speed));
  }
  json_object_set_new(wl, "prefix_groups", json_integer(o->prefix_groups));
  json_object_set_new(wl, "prefix_len", json_integer(o->prefix_len));
  json_object_set_new(wl, "prefix_share", json_real(!o->prefix_groups ? 0 : isnan(o->prefix_share) ? 1 : o->prefix_share));
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

void im__run_verbose_manifest(const json_t *m) {
  if (im_log_get_level() < IM_LOG_INFO || !m)
    return;
  static const char *const keys[] = {"target", "seed", "schedule", "workload", "slo", "tags"};
  for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
    const json_t *v = json_object_get(m, keys[i]);
    char *s = v ? json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY | JSON_REAL_PRECISION(10)) : NULL;
    if (s)
      im_info("%s: %s", keys[i], s);
    free(s);
  }
}
