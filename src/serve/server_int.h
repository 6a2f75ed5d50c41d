/* Internals of the built-in server shared by its two files: server.c (the
 * loop, connections, input and output, lifecycle) and server_api.c (the
 * endpoints and the streams they feed from the engine). Not a public API:
 * names carry the im__srv_ prefix. */
#ifndef IM_SERVE_SERVER_INT_H
#define IM_SERVE_SERVER_INT_H

#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

#include "core/buf.h"
#include "core/rng.h"
#include "proto/oai_api.h"
#include "serve/engine.h"
#include "serve/fault.h"
#include "serve/http.h"
#include "serve/outbatch.h"
#include "proto/oai_encode.h"
#include "serve/server.h"
#include "serve/sim_metrics.h"
#include "serve/uring.h"

/* Bytes one connection may have waiting to be written (a client that does
 * not read is cut off there), and the cap of the server's scratch buffers:
 * a response is at most a 4 MiB body's answer, well below. */
#define IM_SERVE_OUT_MAX ((size_t)64 << 20)

struct stream;

struct conn {
  union {                       /* first member: handle pointers cast back */
    uv_tcp_t tcp;               /* a stream either way (uv_stream_t casts) */
    uv_pipe_t pipe;             /* serve --unix-socket */
  };
  struct im_server *srv;
  struct conn *prev, *next;     /* all connections */
  struct conn *ready_next;      /* pending-input list */
  struct conn *fail_next;       /* failed, to be closed after this loop turn */
  bool on_ready;
  bool failing;
  uint64_t id;
  struct im_http_parser parser;
  enum im_err pstate;           /* last parser result */
  bool head_checked;
  struct stream *stream;        /* request being answered, or NULL */
  struct im_buf pending, inflight;
  uv_write_t wreq;
  uv_shutdown_t sreq;
  bool writing, closing, draining, close_after_write, shut;
  int64_t last_activity, drain_since;
  uint32_t n_requests;          /* requests begun on this connection */
  struct im_outref oref;        /* its bytes gathered in this engine step */
};

/* A chunk written during an engine step, recorded (truth log, lateness
 * histogram) once the step's output is sent (im__srv_chunks_sent). */
struct sent_chunk {
  uint32_t slot;                /* in the server's outbatch */
  uint32_t index, n;
  int64_t deadline;
  char id[96];                  /* the request's id (truth log only) */
};

struct stream {
  struct stream *prev, *next;   /* active streams */
  struct conn *c;
  struct im_seq *seq;
  struct im_oai_ctx oai;
  char id[48];
  char req_id[96];
  bool streaming, include_usage, continuous, chunked, role_sent;
  bool insufficient;            /* ends with insufficient_system_resource (deepseek-api) */
  struct im_sim_usage usage;
  int64_t last_keepalive, t_prev_token;
  struct im_buf text, rtext;    /* non-streaming answer */
  struct im_fault_plan plan;
  bool logprobs;                /* the request asked for logprobs */
  uint32_t lp_n;                /* alternatives per token (0..20) */
  double lp_alt[20];            /* their logprobs under the sequence's sampling law */
  struct im_agent_answer agent; /* tool call / JSON answer (serve/toolcalls.h) */
};

struct im_server {
  struct im_server_config cfg;
  char model[128];
  uv_loop_t loop;
  bool loop_init;
  union {
    uv_tcp_t listener;
    uv_pipe_t listener_pipe;    /* serve --unix-socket */
  };
  uv_async_t stop_async;
  uv_poll_t engine_poll;
  uv_timer_t sweep_timer, hiccup_timer, shrink_timer;
  int tfd;
  int64_t armed_at;
  struct im_engine *engine;
  struct im_lora *lora;         /* LoRA adapters, or NULL */
  struct im_sim_metrics metrics;
  struct im_fault *faults;
  size_t n_faults;
  bool conn_close_fault;
  double conn_close_prob;
  int64_t conn_setup_ns;        /* connection-close@ms: a new connection's setup (simulated) */
  struct im_rng rng;
  double bucket;                /* rate-limit tokens */
  int64_t bucket_t;
  int64_t t0;
  struct conn *conns;
  struct conn *ready;
  struct conn *failing;         /* see conn_fail */
  uv_check_t reaper;
  struct stream *streams;
  uint64_t next_conn, next_req;
  uint64_t profile_starts, profile_stops; /* POST /start_profile, /stop_profile */
  bool overflow_answered;       /* serve --engine llamacpp: the first oversize
                                   request was answered by a plain 400 */
  int port;
  bool stopping;
  bool bound_unix;              /* the unix socket file is ours to remove */
  struct im_buf scratch, frame;
  /* Output (serve --io): an engine step's writes, gathered and sent at its
   * end, by io_uring when uring is not NULL, else write() per connection. */
  struct im_outbatch ob;
  bool batching;                /* inside im_engine_tick */
  struct im_uring *uring;
  struct im_uring_send *sends;
  uint32_t *send_slot;
  size_t sends_cap;
  struct sent_chunk *chunks;    /* this step's, until sent */
  size_t n_chunks, chunks_cap;
  char readbuf[65536];
};

/* server.c */
int64_t im__srv_sim_now(const struct im_server *s, int64_t now);
void im__srv_arm_engine(struct im_server *s);
void im__srv_conn_write(struct conn *c, const char *data, size_t len);
void im__srv_conn_flush(struct conn *c);
void im__srv_flush(struct im_server *s);
void im__srv_response_done(struct conn *c);
bool im__srv_decide_keep_alive(struct conn *c);
void im__srv_respond(struct conn *c, int status, const char *ctype, const char *body, size_t len,
                     const char *extra);
void im__srv_respond_error(struct conn *c, int status, const char *msg, const char *extra);
void im__srv_respond_error_close(struct conn *c, int status, const char *msg);
void im__srv_conn_fail(struct conn *c);
void im__srv_conn_close(struct conn *c);
void im__srv_on_conn_closed(uv_handle_t *h); /* frees the connection */

/* server_api.c */
void im__srv_handle_request(struct conn *c);
void im__srv_stream_free(struct stream *st);
void im__srv_stream_send(struct stream *st, const char *data, size_t len);
void im__srv_chunks_sent(struct im_server *s);
void im__srv_on_request_end(void *ctx, const struct im_seq *seq, enum im_finish why);
void im__srv_on_step(void *ctx, const struct im_step_cost *cost, double wall_s,
                     const struct im_moe_step_stats *moe, uint32_t n_seqs, uint32_t n_tokens);

/* server_api.c: the built-in /metrics page (vLLM V1's names and the
 * simulator's extras), appended to b. */
enum im_err im__srv_metrics_page(struct im_server *s, struct im_buf *b);

/* imitate.c: serve --engine (server.h enum im_serve_engine). */
/* Answers the imitated engine's GET endpoints (/metrics, /version and the
 * declaration endpoints); false when the request is not one of them (or the
 * server wears its own identity). */
bool im__srv_imitate_route(struct conn *c);
/* owned_by of /v1/models. */
const char *im__srv_imitate_owner(const struct im_server *s);
/* Whether /v1/models carries max_model_len (vLLM, SGLang, infermeter). */
bool im__srv_imitate_lists_len(const struct im_server *s);
/* Whether the connection is closed after every streamed response while the
 * head announced keep-alive (llama.cpp). */
bool im__srv_imitate_close_after_stream(const struct im_server *s);
/* A prompt of n_prompt tokens asking *max_tokens (<= 0: absent) against a
 * context of max_len: true when it does not fit and was answered with the
 * engine's error (status, wording, shape); false when it may run, *max_tokens
 * then possibly lowered to what fits (llama.cpp stops at its context). */
bool im__srv_imitate_overflow(struct conn *c, bool streaming, uint32_t n_prompt,
                              int64_t *max_tokens, uint32_t max_len);

#endif
