/* `infermeter run`'s network-path flags (docs/tls.md): --cacert, --cert,
 * --key, --proxy, --unix-socket, applied to struct im_net (net/net.h). In
 * their own file so run_opts.c only routes codes here. */
#ifndef IM_CLI_RUN_NET_H
#define IM_CLI_RUN_NET_H

#include <stdio.h>

#include "net/net.h"

enum {
  O_NET_FIRST = 0x1200,
  O_CACERT = O_NET_FIRST,
  O_CERT,
  O_KEY,
  O_PROXY,
  O_UNIX_SOCKET,
  O_NET_LAST
};

/* clang-format off */
#define IM_RUN_NET_OPTIONS                                   \
  {"cacert", required_argument, 0, O_CACERT},               \
  {"cert", required_argument, 0, O_CERT},                   \
  {"key", required_argument, 0, O_KEY},                     \
  {"proxy", required_argument, 0, O_PROXY},                 \
  {"unix-socket", required_argument, 0, O_UNIX_SOCKET}
/* clang-format on */

/* Applies one option (code in [O_NET_FIRST, O_NET_LAST)); 0, or -1 with a
 * message on stderr naming the flag. */
int im__run_net_opt(struct im_net *n, int code, const char *arg);
/* The help section. */
void im__run_net_help(FILE *o);

#endif
