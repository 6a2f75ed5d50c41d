/* A blocking HTTP client of JSON answers (the target's /v1/models,
 * /version, /props, /tokenize, a profiler's /start_profile) and the URL
 * helpers every layer above shares: loopback or not, credentials redacted,
 * the engine's form of a base URL, the address to sample TCP states of.
 *
 * Errors: a request returns the HTTP status, 0 when no answer came, with
 * err saying why (libcurl's reason in words, net/net.h). Secrets: the API
 * key is sent as a Bearer header and never written into err.
 * Threads: each call uses its own libcurl handle; curl_global_init must
 * have run (main does it). */
#ifndef IM_NET_HTTP_JSON_H
#define IM_NET_HTTP_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>

#include <jansson.h>

#include "net/net.h"

/* GET base+path (post NULL) or POST of that JSON: the HTTP status (0 when
 * unreachable, err says why) and the body as JSON in *out (NULL when not
 * JSON; the caller decrefs). */
long im_http_json(const char *base, const char *path, const char *post, const char *api_key,
                  const struct im_net *net, json_t **out, char *err, size_t err_len);
/* The same, GET. */
long im_http_get_json(const char *base, const char *path, const char *api_key,
                      const struct im_net *net, json_t **out, char *err, size_t err_len);

/* Whether url's host is 127.x, localhost or [::1]. */
bool im_url_is_loopback(const char *url);
/* The URL without credentials (user:pass@ -> REDACTED@), for outputs. */
void im_url_redact(const char *url, char *out, size_t cap);
/* The base URL as the engine uses it: in without trailing slashes and
 * without a final /v1, into out. */
void im_url_normalize(const char *in, char *out, size_t cap);
/* host:port of the URL resolved once (port 80/443 by scheme when absent);
 * 0, or -1 when it does not resolve. */
int im_url_resolve(const char *url, struct sockaddr_storage *out, socklen_t *len);

#endif
