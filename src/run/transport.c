/* The client transport of a run (run_int.h, im__run_transport). */
#include "run/run_int.h"
#include "load/loader.h"

int im__run_transport(const struct im_run_config *o, const char *url, char *why, size_t cap) {
  struct im_load_transport_in in = {.mode = (enum im_load_transport)o->transport,
                                    .url = url ? url : "http://127.0.0.1",
                                    .urls = o->n_urls > 1 ? o->urls : NULL,
                                    .n_urls = o->n_urls > 1 ? o->n_urls : 0,
                                    .http2 = o->http2,
                                    .net = &o->net,
                                    .headers = o->headers};
  return im_load_transport_pick(&in, why, cap);
}
