/* Several --url (docs/tls.md "Several targets"): replicas of one deployment
 * with no balancer in front. The load engine spreads requests (sessions)
 * round robin over them and records each attempt's target; here: the URLs
 * in the form the engine uses, the check that every target answers before
 * the run, and their /metrics pages for the observer. */
#ifndef IM_CLI_RUN_URLS_H
#define IM_CLI_RUN_URLS_H

#include <stdbool.h>
#include <stdint.h>

#include "net/http_json.h"
#include "net/net.h"
#include "record/record.h"

struct im_run_config;

struct im__run_urls {
  char *url[IM_RECORD_MAX_TARGETS];     /* without a trailing slash or /v1 */
  char *scrape[IM_RECORD_MAX_TARGETS];  /* url + "/metrics" */
  uint32_t n;                           /* 0 or 1: one target */
};

/* From o's --url list; 0, or -1 after saying why (out of memory, several
 * --url with --unix-socket). */
int im__run_urls_init(struct im__run_urls *u, const struct im_run_config *o);
/* Asks each target past the first for /v1/models: -1 when all answer 200,
 * else the exit status (2) after saying which target and why. */
int im__run_urls_check(const struct im__run_urls *u, const char *api_key, const struct im_net *net);
/* Whether every target is on loopback (true with one target: the caller
 * judges the first). */
bool im__run_urls_loopback(const struct im__run_urls *u);
void im__run_urls_free(struct im__run_urls *u);

#endif
