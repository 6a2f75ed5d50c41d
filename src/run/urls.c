/* Several --url: see run/urls.h. */
#include "run/urls.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "run/run_int.h"

int im__run_urls_init(struct im__run_urls *u, const struct im_run_config *o) {
  memset(u, 0, sizeof *u);
  if (o->n_urls > 1 && o->net.unix_socket) {
    im__run_say(IM_RUN_SAY_ERROR, "several --url with --unix-socket: every request would go "
                    "to the one socket; give one --url");
    return -1;
  }
  for (uint32_t i = 0; i < o->n_urls; i++) {
    size_t cap = strlen(o->urls[i]) + 1;
    u->url[i] = malloc(cap);
    u->scrape[i] = malloc(cap + 8);
    if (!u->url[i] || !u->scrape[i]) {
      u->n = i + 1;
      im__run_urls_free(u);
      im__run_say(IM_RUN_SAY_ERROR, "out of memory");
      return -1;
    }
    im_url_normalize(o->urls[i], u->url[i], cap);
    snprintf(u->scrape[i], cap + 8, "%s/metrics", u->url[i]);
  }
  u->n = o->n_urls;
  return 0;
}

int im__run_urls_check(const struct im__run_urls *u, const char *api_key, const struct im_net *net) {
  for (uint32_t i = 1; i < u->n; i++) {
    char err[1024] = "", red[2048];
    json_t *models = NULL;
    long st = im_http_get_json(u->url[i], "/v1/models", api_key, net, &models, err, sizeof err);
    json_decref(models);
    if (st == 200)
      continue;
    im_url_redact(u->url[i], red, sizeof red);
    if (st == 0)
      im__run_say(IM_RUN_SAY_ERROR, "target %u (%s) unreachable: %s", i, red, err);
    else
      im__run_say(IM_RUN_SAY_ERROR, "target %u (%s) answered GET /v1/models with HTTP %ld%s",
              i, red, st, st == 401 || st == 403 ? ": check the API key" : "");
    return EXIT_UNREACHABLE;
  }
  return -1;
}

bool im__run_urls_loopback(const struct im__run_urls *u) {
  for (uint32_t i = 1; i < u->n; i++)
    if (!im_url_is_loopback(u->url[i]))
      return false;
  return true;
}

void im__run_urls_free(struct im__run_urls *u) {
  for (uint32_t i = 0; i < u->n; i++) {
    free(u->url[i]);
    free(u->scrape[i]);
  }
  memset(u, 0, sizeof *u);
}
