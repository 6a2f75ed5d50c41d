/* A blocking HTTP client of JSON answers and the URL helpers every layer
 * above shares (net/http_json.h). */
#include "net/http_json.h"

#include <curl/curl.h>
#include <netdb.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "core/buf.h"

struct fetch {
  struct im_buf body;
};

static size_t fetch_write(char *d, size_t s, size_t n, void *ud) {
  struct fetch *f = ud;
  return im_buf_append(&f->body, d, s * n) == IM_OK ? s * n : 0;
}

long im_http_get_json(const char *base, const char *path, const char *api_key,
                      const struct im_net *net, json_t **out, char *err, size_t err_len) {
  return im_http_json(base, path, NULL, api_key, net, out, err, err_len);
}

long im_http_json(const char *base, const char *path, const char *post, const char *api_key,
                  const struct im_net *net, json_t **out, char *err, size_t err_len) {
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
  if (post) {
    h = curl_slist_append(h, "Content-Type: application/json");
    curl_easy_setopt(e, CURLOPT_POSTFIELDS, post);
  }
  curl_easy_setopt(e, CURLOPT_URL, url);
  curl_easy_setopt(e, CURLOPT_HTTPHEADER, h);
  curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, fetch_write);
  curl_easy_setopt(e, CURLOPT_WRITEDATA, &f);
  /* A profiler may take a while to flush its trace on /stop_profile. */
  curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, post ? 60000L : 10000L);
  curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
  char detail[CURL_ERROR_SIZE] = "";
  curl_easy_setopt(e, CURLOPT_ERRORBUFFER, detail);
  im_net_apply(e, net, true);
  long status = 0;
  CURLcode rc = curl_easy_perform(e);
  if (rc == CURLE_OK) {
    curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &status);
    if (f.body.len)
      *out = json_loadb(f.body.data, f.body.len, 0, NULL);
    if (f.body.len && !*out) { /* say what came instead (a proxy's or a web server's page) */
      size_t k = 0;
      while (k < f.body.len && (f.body.data[k] == ' ' || f.body.data[k] == '\n' ||
                                f.body.data[k] == '\r' || f.body.data[k] == '\t'))
        k++;
      snprintf(err, err_len, "its body is %s",
               k < f.body.len && f.body.data[k] == '<' ? "HTML (a web page), not JSON" : "not JSON");
    }
  } else {
    im_net_describe(rc, detail, net, !strncasecmp(base, "https:", 6), err, err_len);
  }
  curl_easy_cleanup(e);
  curl_slist_free_all(h);
  im_buf_cleanup(&f.body);
  return status;
}

bool im_url_is_loopback(const char *url) {
  const char *p = strstr(url, "://");
  p = p ? p + 3 : url;
  const char *end = p + strcspn(p, "/?#");
  const char *at = memchr(p, '@', (size_t)(end - p));
  if (at)
    p = at + 1;
  return !strncmp(p, "127.", 4) || !strncmp(p, "localhost", 9) || !strncmp(p, "[::1]", 5);
}

void im_url_redact(const char *url, char *out, size_t cap) {
  const char *scheme = strstr(url, "://");
  const char *host = scheme ? scheme + 3 : url;
  const char *end = host + strcspn(host, "/?#");
  const char *at = memchr(host, '@', (size_t)(end - host));
  if (at)
    snprintf(out, cap, "%.*sREDACTED@%s", (int)(host - url), url, at + 1);
  else
    snprintf(out, cap, "%s", url);
}

void im_url_normalize(const char *in, char *out, size_t cap) {
  snprintf(out, cap, "%s", in);
  size_t n = strlen(out);
  while (n && out[n - 1] == '/')
    out[--n] = '\0';
  if (n > 3 && !strcmp(out + n - 3, "/v1"))
    out[n - 3] = '\0';
}

int im_url_resolve(const char *url, struct sockaddr_storage *out, socklen_t *len) {
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
