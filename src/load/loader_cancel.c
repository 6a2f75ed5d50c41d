/* Cancellation, as users abandon requests (--cancel-after, docs/agents.md
 * "Cancellation"): a planned share of the requests is dropped by the
 * client after a time or a number of tokens, closing the connection (a
 * transfer aborted mid-response cannot be reused by libcurl), so the
 * server sees the disconnect and frees the request's KV blocks. */
#include "load/loader_int.h"

void im__load_cancel_plan(const struct loader *L, struct attempt *a) {
  const struct im_load_config *c = L->cfg;
  a->cancel = false;
  if ((!c->cancel_after_ns && !c->cancel_after_tokens) || c->cancel_share <= 0)
    return;
  /* Per logical request: a retry or a session's turn has its own index. */
  uint64_t h = im_mix64(c->cancel_seed ^ im_mix64(a->index + 1));
  a->cancel = c->cancel_share >= 1 || (double)(h >> 11) * 0x1p-53 < c->cancel_share;
}

long im__load_cancel_timeout_ms(const struct loader *L, const struct attempt *a) {
  const struct im_load_config *c = L->cfg;
  int64_t ns = c->timeout_total_ns;
  if (a->cancel && c->cancel_after_ns && (ns <= 0 || c->cancel_after_ns < ns))
    ns = c->cancel_after_ns;
  long ms = (long)(ns / 1000000);
  return ns > 0 && ms == 0 ? 1 : ms;
}

void im__load_cancel_count(const struct loader *L, struct attempt *a, uint32_t n) {
  const struct im_load_config *c = L->cfg;
  if (!a->cancel || !c->cancel_after_tokens)
    return;
  a->cancel_tokens += n;
  if (a->cancel_tokens >= c->cancel_after_tokens)
    a->cancelled = true;
}

bool im__load_cancel_finish(const struct loader *L, struct attempt *a, CURLcode res) {
  const struct im_load_config *c = L->cfg;
  bool by_time = a->cancel && c->cancel_after_ns && res == CURLE_OPERATION_TIMEDOUT &&
                 (c->timeout_total_ns <= 0 || c->cancel_after_ns < c->timeout_total_ns);
  if (!a->cancelled && !by_time)
    return false;
  a->cancelled = true;
  struct im_record *r = &a->rec;
  /* A warm-up keeps its kind (kind cancelled would count it among the
   * measured requests); the record says it was let go, not cut. */
  if (r->kind == IM_KIND_MEASURED || r->kind == IM_KIND_RETRY)
    r->kind = IM_KIND_CANCELLED;
  r->cancelled = true;
  r->error = IM_EC_NONE;
  return true;
}
