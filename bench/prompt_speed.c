/* Cost of building one request's prompt in `infermeter run`: the
 * approximate synthetic generator (--dataset synthetic) against exact
 * lengths (--dataset random, the default) with the built-in tokenizer and,
 * when a tokenizer.json is given, with it, with DeepSeek-V3's chat template
 * counted in. The load engine builds prompts ahead of their due time (a
 * ring of prepared requests; a session's next turn in its think time), so
 * this bounds the sustained request rate one loader thread can prepare, not
 * the dispatch latency. CPU time per prompt; asserts nothing. Build against
 * the library and run from the repo root:
 *
 *   cmake --build build --target prompt_speed && build/bench/prompt_speed [tokenizer.json]
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "load/loader.h"
#include "workload/synth.h"

static double cpu_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void measure(const char *name, struct im_synth *s, uint32_t len) {
  s->input_len = len;
  int n = len >= 16384 ? 20 : len >= 4096 ? 60 : 200;
  double t0 = cpu_s();
  uint64_t toks = 0;
  for (int i = 0; i < n; i++) {
    struct im_req_spec spec;
    if (im_synth_request(s, (uint64_t)i, &spec) != IM_OK) {
      fprintf(stderr, "%s: failed at %d\n", name, i);
      return;
    }
    toks += spec.prompt_tokens;
    im_req_spec_cleanup(&spec);
  }
  double dt = cpu_s() - t0;
  printf("%-34s %6u tokens: %8.3f ms per prompt (%5.1f M tokens/s), mean count %.1f\n", name, len,
         dt / n * 1e3, (double)toks / dt / 1e6, (double)toks / n);
}

int main(int argc, char **argv) {
  struct im_synth s;
  memset(&s, 0, sizeof s);
  s.output_len = 128;
  s.temperature = s.top_p = NAN;
  s.seed = 7;
  strcpy(s.salt, "benchsalt");
  static const uint32_t lens[] = {1024, 8192, 32768};
  for (size_t i = 0; i < 3; i++) {
    s.exact = false;
    measure("synthetic (approximate)", &s, lens[i]);
    s.exact = true;
    s.chat = false;
    measure("random, built-in tokenizer", &s, lens[i]);
    s.chat = true;
    s.tmpl = IM_CHAT_DEEPSEEK_V3;
    measure("random, built-in + DeepSeek template", &s, lens[i]);
    s.chat = false;
  }
  if (argc > 1) {
    char msg[256];
    if (im_tok_load(argv[1], &s.tok, msg, sizeof msg) != IM_OK) {
      fprintf(stderr, "%s\n", msg);
      return 1;
    }
    s.exact = true;
    s.chat = true;
    s.tmpl = IM_CHAT_DEEPSEEK_V3;
    for (size_t i = 0; i < 3; i++)
      measure("random, tokenizer.json + template", &s, lens[i]);
    im_tok_free(s.tok);
  }
  return 0;
}
