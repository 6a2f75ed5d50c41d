/* `infermeter run` around the load: waiting for a target that is still
 * starting (--ready-timeout, vLLM's --ready-check-timeout-sec) and asking
 * it to record a profile of the load (--profile-server, vLLM's --profile).
 *
 * The profiler endpoints are vLLM's and SGLang's (facts from their API
 * servers): POST /start_profile and POST /stop_profile, no body needed;
 * vLLM registers them only when VLLM_TORCH_PROFILER_DIR is set (else 404),
 * SGLang always. */
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "run/run_int.h"
#include "core/clock.h"

int im__run_wait_ready(const char *url, const char *api_key, const struct im_net *net,
                       int64_t timeout_ns, bool tty) {
  int64_t deadline = im_now_ns() + timeout_ns;
  for (int tries = 1;; tries++) {
    char err[1024] = "";
    json_t *body = NULL;
    long st = im_http_get_json(url, "/v1/models", api_key, net, &body, err, sizeof err);
    json_decref(body);
    if (st == 200) {
      if (tries > 1 && tty)
        im__run_say(IM_RUN_SAY_STATUS, "the target is ready (after %d checks)          \n",
                    tries);
      return 0;
    }
    int64_t now = im_now_ns();
    if (now >= deadline) {
      char red[2048];
      im_url_redact(url, red, sizeof red);
      im__run_say(IM_RUN_SAY_ERROR, "%s not ready after --ready-timeout %.0f s: %s", red,
              (double)timeout_ns / 1e9,
              st ? "GET /v1/models did not answer 200" : err);
      return -1;
    }
    if (tty)
      im__run_say(IM_RUN_SAY_STATUS, "waiting for the target (%s; %.0f s left)   ",
              st ? "not 200 yet" : "unreachable", (double)(deadline - now) / 1e9);
    /* One check a second, as vLLM's ready check polls. */
    int64_t wait = deadline - now < 1000000000 ? deadline - now : 1000000000;
    struct timespec ts = {.tv_sec = wait / 1000000000, .tv_nsec = wait % 1000000000};
    while (nanosleep(&ts, &ts) && im__run_interrupted == 0)
      ;
    if (im__run_interrupted)
      return -1;
  }
}

bool im__run_profile(const char *url, const char *api_key, const struct im_net *net, bool start) {
  char err[1024] = "";
  const char *path = start ? "/start_profile" : "/stop_profile";
  json_t *body = NULL;
  long st = im_http_json(url, path, "{}", api_key, net, &body, err, sizeof err);
  json_decref(body);
  if (st >= 200 && st < 300)
    return true;
  if (st == 404)
    im__run_say(IM_RUN_SAY_INFO, "--profile-server: the target has no %s (vLLM registers it only "
                    "with VLLM_TORCH_PROFILER_DIR set); no profile is recorded", path);
  else
    im__run_say(IM_RUN_SAY_INFO, "--profile-server: POST %s: %s", path,
            st ? "the server refused it" : err);
  return false;
}
