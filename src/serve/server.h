/* The built-in OpenAI-compatible server: HTTP/1.1 on a libuv loop in front
 * of the simulated engine (engine.h). See docs/serve.md.
 *
 * Lifecycle: im_server_new() binds and listens (port 0 picks a free port);
 * im_server_run() runs the loop on the calling thread until im_server_stop()
 * (safe from any thread or a signal-handling thread) or a fatal error;
 * im_server_free() releases everything.
 *
 * Ownership: the server copies the config and its faults; it borrows
 * cfg->truth_log and cfg->tokenizer, which must outlive it (the server
 * never closes or frees them).
 *
 * Threads: one loop thread does everything (HTTP, the engine's steps, the
 * truth log, the tokenizer); no other function may be called while
 * im_server_run() runs, except im_server_stop() and im_server_port().
 *
 * Failure: a bad request or a misbehaving client is answered (4xx) or
 * dropped, never fatal; a client that stops reading is dropped once
 * max_output_backlog bytes wait for it; every input is bounded (max_head,
 * max_body, max_connections). im_server_run() returns an error only when
 * the loop itself fails; the reason is logged. */
#ifndef IM_SERVE_SERVER_H
#define IM_SERVE_SERVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "core/err.h"
#include "text/tokenizer.h"
#include "serve/toolcalls.h"
#include "serve/engine.h"
#include "serve/fault.h"

/* How an engine step's output reaches the sockets (serve --io; docs/serve.md
 * "Output"): gathered per connection during the step, then sent by one
 * io_uring submission (URING), or one write() per connection (WRITE). AUTO
 * takes io_uring when the build and the kernel allow it, else write(). */
enum im_serve_io { IM_SERVE_IO_AUTO, IM_SERVE_IO_URING, IM_SERVE_IO_WRITE };

/* Whose identity the server wears (serve --engine; docs/serve.md "Engine
 * imitation", docs/server-metrics.md "Per engine"): its metric names, its
 * declaration endpoints (/version, /get_server_info, /props, /slots,
 * /info), its error wordings and streamed-error shape, its connection
 * behaviour. The simulated engine underneath is the same. INFERMETER is the
 * built-in server's own identity (vLLM V1's names plus infermeter_sim_*). */
enum im_serve_engine {
  IM_SERVE_ENGINE_INFERMETER,
  IM_SERVE_ENGINE_VLLM,
  IM_SERVE_ENGINE_SGLANG,
  IM_SERVE_ENGINE_LLAMACPP,
  IM_SERVE_ENGINE_TGI,
  IM_SERVE_ENGINE_TRTLLM,
  IM_SERVE_ENGINE_COUNT_
};
/* "infermeter", "vllm", "sglang", "llamacpp", "tgi", "trtllm". */
const char *im_serve_engine_name(enum im_serve_engine e);
/* The engine of that name (as above), or -1. */
int im_serve_engine_parse(const char *name);

struct im_server_config {
  const char *host;              /* "127.0.0.1" */
  int port;                      /* 8000; 0 = any free port */
  const char *model;             /* served model id; NULL = profile's */
  struct im_engine_config engine;
  bool reasoning_field_new;      /* "reasoning" instead of "reasoning_content" */
  /* --dialect deepseek-api (docs/deepseek.md, "The DeepSeek API's
   * dialect"): usage with prompt_cache_hit_tokens / prompt_cache_miss_tokens,
   * reasoning_content, and a 503 for capacity answered instead as a stream
   * that ends with finish_reason "insufficient_system_resource". */
  bool dialect_deepseek;
  const struct im_fault *faults; /* copied */
  size_t n_faults;
  double rate_limit;             /* requests/s token bucket, 0 = off */
  double rate_burst;             /* bucket size, default max(1, rate_limit) */
  FILE *truth_log;               /* JSONL ground truth, or NULL */
  size_t max_body;               /* 4 MiB */
  size_t max_head;               /* 16 KiB */
  int64_t idle_timeout_ns;       /* keep-alive idle connections: 60 s */
  int64_t keepalive_comment_ns;  /* ": keep-alive" to queued streams: 2 s (simulated) */
  uint32_t max_connections;      /* 10000 */
  size_t max_output_backlog;     /* bytes queued for a slow client before it is dropped: 8 MiB */
  bool quiet;                    /* no "listening on" line */
  struct im_tok *tokenizer;      /* counts prompts (borrowed, used on the loop
                                    thread only); NULL: the built-in tokenizer */
  struct im_agent_policy agent;  /* tool calls, structured output (serve/toolcalls.h) */
  struct im_lora_config lora;    /* LoRA adapters (serve/lora.h); n 0: none */
  const char *unix_socket;       /* listen on this unix socket path instead of
                                    host:port (a stale socket file is replaced;
                                    the file is removed at exit); NULL: TCP */
  enum im_serve_io io;           /* AUTO */
  enum im_serve_engine imitate;  /* serve --engine (INFERMETER) */
  bool leak_cancelled;           /* serve --leak-cancelled: a request whose client
                                    disconnects is aborted, but stays counted as
                                    running in every gauge and /slots (an engine
                                    that does not free abandoned requests) */
  bool declare_none;             /* serve --declare none: no declaration endpoint
                                    answers and no info gauge is exported, as an
                                    engine that says nothing of its settings */
  const char *api_key;           /* borrowed: requests to /v1/... need the header
                                    "Authorization: Bearer <api_key>", else 401
                                    (vLLM's --api-key); NULL: no check */
};

void im_server_config_default(struct im_server_config *cfg);

struct im_server;

/* Creates the server and its engine, binds and listens. Errors are logged
 * with their reason (address in use, bad host...). */
enum im_err im_server_new(struct im_server **out, const struct im_server_config *cfg) IM_WUR;
/* "uring" or "write": how output is sent now (see enum im_serve_io). */
const char *im_server_io(const struct im_server *s);
/* The bound port (useful with port 0). */
int im_server_port(const struct im_server *s);
/* Runs the loop until stopped. Returns IM_OK after a stop. */
enum im_err im_server_run(struct im_server *s) IM_WUR;
/* Asks the loop to stop; thread-safe and async-signal-safe. */
void im_server_stop(struct im_server *s);
/* Releases everything; after im_server_run() has returned (or never ran).
 * NULL is a no-op. */
void im_server_free(struct im_server *s);

#endif
