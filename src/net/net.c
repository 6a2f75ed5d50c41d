/* Network paths to the target (net.h). */
#include "net/net.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

void im_net_apply(CURL *e, const struct im_net *n, bool to_target) {
  if (!n)
    return;
  if (n->insecure) {
    curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, 0L);
    curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, 0L);
  }
  if (n->cacert)
    curl_easy_setopt(e, CURLOPT_CAINFO, n->cacert);
  if (n->cert) {
    curl_easy_setopt(e, CURLOPT_SSLCERT, n->cert);
    curl_easy_setopt(e, CURLOPT_SSLCERTTYPE, "PEM");
  }
  if (n->key) {
    curl_easy_setopt(e, CURLOPT_SSLKEY, n->key);
    curl_easy_setopt(e, CURLOPT_SSLKEYTYPE, "PEM");
  }
  if (n->proxy)
    curl_easy_setopt(e, CURLOPT_PROXY, n->proxy);
  if (to_target && n->unix_socket)
    curl_easy_setopt(e, CURLOPT_UNIX_SOCKET_PATH, n->unix_socket);
}

int im_net_check_file(const char *flag, const char *path, char *msg, size_t cap) {
  if (!path)
    return 0;
  if (!*path) {
    snprintf(msg, cap, "%s: an empty path", flag);
    return -1;
  }
  if (access(path, R_OK) != 0) {
    snprintf(msg, cap, "%s %s: cannot read it: %s", flag, path, strerror(errno));
    return -1;
  }
  return 0;
}

int im_net_check(const struct im_net *n, char *msg, size_t cap) {
  if (!n)
    return 0;
  if (im_net_check_file("--cacert", n->cacert, msg, cap) || im_net_check_file("--cert", n->cert, msg, cap) ||
      im_net_check_file("--key", n->key, msg, cap))
    return -1;
  if (!n->cert != !n->key) {
    snprintf(msg, cap, "%s without %s: a client certificate needs both (PEM files)",
             n->cert ? "--cert" : "--key", n->cert ? "--key" : "--cert");
    return -1;
  }
  if (n->unix_socket && !*n->unix_socket) {
    snprintf(msg, cap, "--unix-socket: an empty path");
    return -1;
  }
  return 0;
}

void im_net_describe(CURLcode res, const char *detail, char *out, size_t cap) {
  const char *what = curl_easy_strerror(res);
  const char *fix = "";
  switch (res) {
  case CURLE_PEER_FAILED_VERIFICATION:
#if LIBCURL_VERSION_NUM < 0x073e00
  case CURLE_SSL_CACERT:
#endif
  case CURLE_SSL_CACERT_BADFILE:
    fix = "; the server's certificate is not trusted: pass --cacert FILE (the CA that signed "
          "it, PEM), or --insecure to skip verification";
    break;
  case CURLE_SSL_CONNECT_ERROR:
    fix = "; the TLS handshake failed (a gateway that asks for a client certificate needs "
          "--cert FILE --key FILE)";
    break;
  case CURLE_SSL_CERTPROBLEM:
    fix = "; check --cert and --key (PEM files, the key matching the certificate)";
    break;
  case CURLE_COULDNT_RESOLVE_PROXY:
    fix = "; check --proxy";
    break;
  default:
    break;
  }
  if (detail && *detail && strcmp(detail, what))
    snprintf(out, cap, "%s (%s)%s", what, detail, fix);
  else
    snprintf(out, cap, "%s%s", what, fix);
}
