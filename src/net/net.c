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

void im_net_describe(CURLcode res, const char *detail, const struct im_net *n, bool tls,
                     char *out, size_t cap) {
  const char *what = curl_easy_strerror(res);
  const char *fix = "";
  bool no_cert = !n || !n->cert;
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
    if (no_cert)
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
  /* TLS 1.3 sends the refusal of a missing client certificate after the
   * handshake: it surfaces as a receive error when the alert is read, or as
   * a broken connection when the request was being written. */
  if (detail && strstr(detail, "certificate required"))
    fix = "; the server asks for a client certificate: pass --cert FILE --key FILE";
  else if (tls && no_cert && (res == CURLE_SEND_ERROR || res == CURLE_RECV_ERROR ||
                       res == CURLE_HTTP2 || res == CURLE_GOT_NOTHING))
    fix = "; the server closed the connection: if it requires a client certificate (mutual "
          "TLS), pass --cert FILE --key FILE";
  if (detail && *detail && strcmp(detail, what))
    snprintf(out, cap, "%s (%s)%s", what, detail, fix);
  else
    snprintf(out, cap, "%s%s", what, fix);
}
