/* `infermeter run`'s network-path flags (run_net.h). */
#include "cli/run_net.h"

#include <string.h>

int im__run_net_opt(struct im_net *n, int code, const char *arg) {
  switch (code) {
  case O_CACERT: n->cacert = arg; break;
  case O_CERT: n->cert = arg; break;
  case O_KEY: n->key = arg; break;
  case O_PROXY:
    if (!*arg || strchr(arg, ' ')) {
      fprintf(stderr, "infermeter run: --proxy: a proxy URL, e.g. http://127.0.0.1:3128\n");
      return -1;
    }
    n->proxy = arg;
    break;
  case O_UNIX_SOCKET: n->unix_socket = arg; break;
  default: return -1;
  }
  char msg[512];
  static const char *const flag[] = {"--cacert", "--cert", "--key"};
  if (code <= O_KEY && im_net_check_file(flag[code - O_CACERT], arg, msg, sizeof msg)) {
    fprintf(stderr, "infermeter run: %s\n", msg);
    return -1;
  }
  return 0;
}

void im__run_net_help(FILE *o) {
  fprintf(o,
"Network path (docs/tls.md):\n"
"  --cacert FILE             trust the CAs in FILE (PEM) for the target's TLS\n"
"                            certificate, instead of the system's\n"
"  --cert FILE --key FILE    client certificate and its key (PEM), for gateways\n"
"                            that require one (mutual TLS)\n"
"  --proxy URL               send through this proxy (libcurl's syntax, e.g.\n"
"                            http://127.0.0.1:3128; default: $https_proxy etc.)\n"
"  --unix-socket PATH        connect to the unix socket PATH instead of the\n"
"                            URL's host and port (the URL still gives the Host)\n"
"\n");
}
