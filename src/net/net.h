/* How infermeter reaches a target over the network, beyond its URL: TLS
 * trust (--cacert, --insecure), a client certificate (--cert/--key, for
 * gateways that ask for one: mutual TLS), a proxy (--proxy) and a unix
 * socket (--unix-socket). docs/tls.md describes the flags.
 *
 * One description, applied the same way to every libcurl handle that talks
 * to the target (the load engine's requests, discovery, the health poller,
 * the probes, the observers' scrapes), so a run never reaches its target
 * by two different paths.
 *
 * Ownership: the strings are borrowed (the command line's); the struct is
 * filled before any thread starts and only read afterwards. */
#ifndef IM_NET_NET_H
#define IM_NET_NET_H

#include <stdbool.h>
#include <stddef.h>

#include <curl/curl.h>

struct im_net {
  bool insecure;           /* no verification of the server's certificate */
  const char *cacert;      /* PEM file of the CAs to trust (NULL: the system's) */
  const char *cert, *key;  /* client certificate and its key, PEM (NULL: none) */
  const char *proxy;       /* proxy URL, libcurl's syntax (NULL: libcurl's
                              environment variables, as curl(1)) */
  const char *unix_socket; /* path of a unix socket to connect to instead of
                              the URL's host and port (NULL: TCP) */
};

/* Sets e's options from n (NULL: nothing). to_target: e talks to the
 * target itself (the unix socket applies only then; a Pushgateway or a
 * DCGM exporter is reached by its own URL). */
void im_net_apply(CURL *e, const struct im_net *n, bool to_target);

/* Checks the files before a run: each named file is readable and --cert
 * comes with --key (and the reverse). 0, or -1 with a sentence in msg
 * (e.g. "--cacert ca.pem: cannot read it: No such file or directory"). */
int im_net_check(const struct im_net *n, char *msg, size_t cap);

/* One file of flag: 0 when readable, else -1 with the sentence in msg. */
int im_net_check_file(const char *flag, const char *path, char *msg, size_t cap);

/* A sentence for a failed transfer: libcurl's description of res, with the
 * fix where one is known (an untrusted certificate names --cacert and
 * --insecure; a refused client certificate names --cert/--key). detail:
 * libcurl's error buffer (CURLOPT_ERRORBUFFER) or NULL/"". n: the options
 * the transfer had (NULL: none), to suggest only what was not given; tls:
 * the URL was https (a closed connection then may be a refused client
 * certificate). */
void im_net_describe(CURLcode res, const char *detail, const struct im_net *n, bool tls,
                     char *out, size_t cap);

#endif
