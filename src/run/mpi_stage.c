/* Stage boundaries of an MPI run (run/mpi.h, docs/distributed.md "Stages
 * under MPI"): after each stage rank 0 gathers every rank's stage (its
 * stages.jsonl events and its records, both already on disk) and analyses
 * their union as one process would analyse its own stage; the figures that
 * steer a sweep go back to every rank. Before each later stage rank 0 sends
 * its definition of the stage (the rate it chose) and a common start
 * instant.
 *
 * Every exchange has one shape whatever its kind, so that a rank that has
 * left its stage loop (its run failed, was interrupted, or ended) can take
 * part in whatever exchange the others are in: it says LEAVE, rank 0 answers
 * "stop", and every rank goes on to the final gather (cli/mpi.c). */
#include "run/mpi.h"

#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "analyze/stage.h"
#include "run/run_int.h"
#include "core/clock.h"
#include "record/reader.h"
#include "record/rundir.h"
#include "record/rundir_merge.h"

struct im__mpi_state im__mpi;

#ifndef IM_HAVE_MPI
int im__mpi_stage_end(const struct im_run_config *o, uint32_t stage, bool failed, struct stage_res *res) {
  (void)o, (void)stage, (void)failed, (void)res;
  return 0;
}
int im__mpi_stage_begin(uint32_t stage, struct im_stage *st, struct im_run_config *so) {
  (void)stage, (void)st, (void)so;
  return 0;
}
void im__mpi_stage_drain(void) {}
#else
#include <mpi.h>

enum { K_END = 1, K_BEGIN = 2, K_LEAVE = 3 };
enum { TAG_HDR = 81, TAG_LEN = 82, TAG_DATA = 83 };
#define CHUNK ((uint64_t)1 << 26)

struct hdr {
  uint32_t kind, stage, failed;
  uint32_t steer; /* END: the stage's figures decide the next (records sent) */
};

/* Rank 0's answer, the same size for every kind of exchange. */
struct reply {
  int32_t stop, failed;
  int64_t start_wall;          /* BEGIN: the agreed start (rank 0's CLOCK_REALTIME) */
  uint64_t records;            /* END: records merged */
  struct stage_res res;        /* END: the merged stage's figures */
  struct im_stage stage;       /* BEGIN: rank 0's definition of the stage */
  char why[240];               /* stop: why */
};

static bool done;              /* rank 0 said stop: no more exchanges */
static off_t ev_pos, rec_pos;  /* where this rank's next stage begins in its files */

/* A request completed, polled with 1 ms sleeps: a rank waiting for a
 * slower one does not spin on a core the others' loaders need. */
static void await(MPI_Request *rq) {
  int flag = 0;
  while (MPI_Test(rq, &flag, MPI_STATUS_IGNORE) == MPI_SUCCESS && !flag) {
    struct timespec ts = {.tv_sec = 0, .tv_nsec = 1000000};
    nanosleep(&ts, NULL);
  }
}

static void send_to_0(const void *p, int n, MPI_Datatype t, int tag) {
  MPI_Request rq;
  MPI_Isend(p, n, t, 0, tag, MPI_COMM_WORLD, &rq);
  await(&rq);
}

static void recv_from(void *p, int n, MPI_Datatype t, int from, int tag) {
  MPI_Request rq;
  MPI_Irecv(p, n, t, from, tag, MPI_COMM_WORLD, &rq);
  await(&rq);
}

/* n bytes to rank 0: their count, then chunks MPI's int counts can hold. */
static void send_bytes(const char *p, uint64_t n) {
  send_to_0(&n, 1, MPI_UINT64_T, TAG_LEN);
  for (uint64_t at = 0; at < n; at += CHUNK)
    send_to_0(p + at, (int)(n - at < CHUNK ? n - at : CHUNK), MPI_CHAR, TAG_DATA);
}

/* What send_bytes sent (malloc'ed; NULL when n is 0 or out of memory, the
 * bytes then received and dropped). */
static char *recv_bytes(int from, uint64_t *n) {
  recv_from(n, 1, MPI_UINT64_T, from, TAG_LEN);
  char *p = *n ? malloc(*n) : NULL;
  static char sink[1 << 16];
  for (uint64_t at = 0; at < *n; at += CHUNK) {
    int k = (int)(*n - at < CHUNK ? *n - at : CHUNK);
    if (p) {
      recv_from(p + at, k, MPI_CHAR, from, TAG_DATA);
    } else { /* out of memory: drain it in pieces */
      for (int got = 0; got < k; got += (int)sizeof sink)
        recv_from(sink, k - got < (int)sizeof sink ? k - got : (int)sizeof sink, MPI_CHAR, from,
                  TAG_DATA);
    }
  }
  if (!p)
    *n = 0;
  return p;
}

/* The complete lines of dir/name from *pos on (malloc'ed; *pos moves past
 * them). NULL with *n 0 when there are none. */
static char *read_from(const char *dir, const char *name, off_t *pos, uint64_t *n) {
  char path[4200];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  *n = 0;
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  struct stat st;
  if (fd < 0 || fstat(fd, &st) || st.st_size <= *pos) {
    if (fd >= 0)
      close(fd);
    return NULL;
  }
  size_t want = (size_t)(st.st_size - *pos), got = 0;
  char *p = malloc(want);
  while (p && got < want) {
    ssize_t k = pread(fd, p + got, want - got, *pos + (off_t)got);
    if (k <= 0)
      break;
    got += (size_t)k;
  }
  close(fd);
  while (got && p[got - 1] != '\n') /* a line being written: the next stage's */
    got--;
  if (!p || !got) {
    free(p);
    return NULL;
  }
  *pos += (off_t)got;
  *n = got;
  return p;
}

/* One rank's stage `stage` from its stages.jsonl lines, into *rd. */
static void parse_events(const char *p, uint64_t n, struct im_rundir *rd) {
  for (uint64_t at = 0; at < n;) {
    const char *nl = memchr(p + at, '\n', n - at);
    size_t len = nl ? (size_t)(nl - (p + at)) : n - at;
    json_t *ev = json_loadb(p + at, len, 0, NULL);
    if (ev)
      (void)im_rundir_apply_event(rd, ev);
    json_decref(ev);
    at += len + 1;
  }
}

/* Appends to *all the records of `stage` in one rank's requests.jsonl
 * bytes, their times moved by off (its start minus the reference's). */
static int add_records(const char *p, uint64_t n, uint32_t stage, int64_t off,
                       struct im_record **all, size_t *n_all) {
  if (!n)
    return 0;
  FILE *f = fmemopen((void *)p, n, "r");
  struct im_record *v = NULL;
  size_t nv = 0;
  struct im_read_report rep;
  int rc = f && im_records_read(f, &v, &nv, &rep) == IM_OK ? 0 : -1;
  if (f)
    fclose(f);
  struct im_record *grown = rc ? NULL : realloc(*all, (*n_all + nv + 1) * sizeof **all);
  if (!grown) {
    im_records_free(v, nv);
    return -1;
  }
  *all = grown;
  for (size_t i = 0; i < nv; i++) {
    struct im_record *r = &v[i];
    if (r->stage != stage) {
      im_record_cleanup(r);
      continue;
    }
    int64_t *ts[] = {&r->t_sched, &r->t_sched_first, &r->t_dispatch, &r->t_start, &r->t_send,
                     &r->t_hdr, &r->t_first, &r->t_answer, &r->t_last, &r->t_end};
    for (size_t k = 0; off && k < sizeof ts / sizeof ts[0]; k++)
      if (*ts[k] >= 0)
        *ts[k] += off;
    (*all)[(*n_all)++] = *r;
  }
  free(v);
  return 0;
}

/* Rank 0: the union of the ranks' stage, analysed as stage_finish
 * (stage.c) analyses one process's. 0, or -1 (why said). */
static int analyse(const struct im_run_config *o, uint32_t stage, char **ev, const uint64_t *ev_n,
                   char **rec, const uint64_t *rec_n, int size, struct reply *rp) {
  struct im_rundir_stage m = {0};
  struct im_record *all = NULL;
  size_t n_all = 0;
  int64_t ref_wall = -1;
  int rc = 0;
  for (int r = 0; r < size && !rc; r++) {
    struct im_rundir rd = {0};
    parse_events(ev[r], ev_n[r], &rd);
    if (stage >= rd.n_st || !rd.st[stage].started) {
      snprintf(rp->why, sizeof rp->why, "rank %d sent no stage %" PRIu32, r, stage);
      rc = -1;
    } else {
      const struct im_rundir_stage *s = &rd.st[stage];
      int64_t off = 0;
      if (s->has_t0 && s->wall_start_ns >= 0 && ref_wall < 0)
        ref_wall = s->wall_start_ns;
      else if (s->has_t0 && s->wall_start_ns >= 0)
        off = s->wall_start_ns - ref_wall;
      if (im_rundir_stage_merge(&m, s, off, m.threads) != IM_OK ||
          add_records(rec[r], rec_n[r], stage, off, &all, &n_all)) {
        snprintf(rp->why, sizeof rp->why, "rank 0: out of memory merging stage %" PRIu32, stage);
        rc = -1;
      }
    }
    im_rundir_free(&rd);
  }
  struct im_stage_input in = {.recs = all, .n_recs = n_all, .cfg = o->scfg,
                              .slo_target = o->slo_target, .counters = m.counters,
                              .samples = m.samples, .n_samples = m.n_samples,
                              .threads = m.threads ? m.threads : 1,
                              .receive_lag = m.has_receive_lag ? &m.receive_lag : NULL,
                              .host = m.has_host ? &m.host : NULL};
  struct im_stage_figures f;
  if (!rc) {
    im_stage_window(all, n_all, &m.rule, &in.cfg.window_start_ns, &in.cfg.window_end_ns);
    if (im_stage_analyze(&in, &f) != IM_OK) {
      snprintf(rp->why, sizeof rp->why, "rank 0: out of memory analysing stage %" PRIu32, stage);
      rc = -1;
    }
  }
  if (!rc) {
    rp->res.elapsed_ns = m.elapsed_ns;
    rp->res.interrupted = m.rule.interrupted;
    rp->res.connections_opened = m.connections_opened;
    snprintf(rp->res.first_error, sizeof rp->res.first_error, "%s", m.first_error);
    im__run_stage_res_set(&rp->res, &f, n_all, m.first_error);
    rp->records = n_all;
    im_stage_figures_cleanup(&f);
  }
  im_records_free(all, n_all);
  im_rundir_stage_cleanup(&m);
  return rc;
}

/* One exchange: every rank's header (and for END its stage's bytes) to
 * rank 0, which decides the reply (stop and why, the merged figures, or
 * the next stage and its start) and sends it to every rank. */
static void exchange(const struct im_run_config *o, const struct hdr *mine, const char *ev,
                     uint64_t ev_n, const char *rec, uint64_t rec_n, const struct im_stage *st,
                     struct reply *rp) {
  int rank = im__mpi.rank, size = im__mpi.size;
  memset(rp, 0, sizeof *rp);
  if (rank != 0) {
    send_to_0(mine, (int)sizeof *mine, MPI_BYTE, TAG_HDR);
    if (mine->kind == K_END) {
      send_bytes(ev, ev_n);
      send_bytes(rec, rec_n);
    }
  } else {
    size_t ns = (size_t)size;
    struct hdr *h = calloc(ns, sizeof *h);
    char **evs = calloc(ns, sizeof *evs), **recs = calloc(ns, sizeof *recs);
    uint64_t *evn = calloc(ns, sizeof *evn), *recn = calloc(ns, sizeof *recn);
    bool oom = !h || !evs || !recs || !evn || !recn;
    struct hdr dummy;
    for (int r = 0; r < size; r++) {
      struct hdr *hr = oom ? &dummy : &h[r];
      if (r == 0)
        *hr = *mine;
      else
        recv_from(hr, (int)sizeof *hr, MPI_BYTE, r, TAG_HDR);
      uint64_t n1 = 0, n2 = 0;
      char *b1 = NULL, *b2 = NULL;
      if (r > 0 && hr->kind == K_END) {
        b1 = recv_bytes(r, &n1);
        b2 = recv_bytes(r, &n2);
      }
      if (oom) {
        free(b1);
        free(b2);
      } else if (r > 0) {
        evs[r] = b1, evn[r] = n1, recs[r] = b2, recn[r] = n2;
      }
    }
    int left = 0, first_left = -1, first_failed = -1, odd = -1;
    uint32_t at = 0; /* the stage the ranks still in their loop are at */
    for (int r = 0; !oom && r < size; r++) {
      if (h[r].kind == K_LEAVE && !left++)
        first_left = r;
      if (h[r].kind != K_LEAVE)
        at = h[r].stage;
      if (h[r].failed && first_failed < 0)
        first_failed = r;
      if (h[r].kind != h[0].kind && h[r].kind != K_LEAVE && h[0].kind != K_LEAVE && odd < 0)
        odd = r;
    }
    if (oom) {
      rp->stop = rp->failed = 1;
      snprintf(rp->why, sizeof rp->why, "rank 0 out of memory");
    } else if (left == size) {
      rp->stop = 1; /* every rank's run has ended its stages */
    } else if (left) {
      rp->stop = rp->failed = 1;
      snprintf(rp->why, sizeof rp->why, "rank %d left the run before stage %" PRIu32 " ended",
               first_left, at);
    } else if (odd >= 0) {
      rp->stop = rp->failed = 1;
      snprintf(rp->why, sizeof rp->why, "rank %d is at another step of stage %" PRIu32, odd,
               h[odd].stage);
    } else if (first_failed >= 0) {
      rp->stop = rp->failed = 1;
      snprintf(rp->why, sizeof rp->why, "rank %d %s stage %" PRIu32, first_failed,
               mine->kind == K_END ? "failed" : "stops before", mine->stage);
    } else if (mine->kind == K_END && !mine->steer) {
      /* nothing to decide: the stage only had to end on every rank */
    } else if (mine->kind == K_END) {
      evs[0] = (char *)ev, evn[0] = ev_n, recs[0] = (char *)rec, recn[0] = rec_n;
      if (analyse(o, mine->stage, evs, evn, recs, recn, size, rp))
        rp->stop = rp->failed = 1;
      evs[0] = recs[0] = NULL;
    } else {
      rp->stage = *st;
      /* A common instant, ahead by the time a rank needs to plan a stage. */
      rp->start_wall = ((im_wall_ns() + IM__MPI_STAGE_MARGIN_NS) / 1000000 + 1) * 1000000;
    }
    for (int r = 1; !oom && r < size; r++) {
      free(evs[r]);
      free(recs[r]);
    }
    free(h), free(evs), free(recs), free(evn), free(recn);
  }
  MPI_Request rq;
  MPI_Ibcast(rp, (int)sizeof *rp, MPI_BYTE, 0, MPI_COMM_WORLD, &rq);
  await(&rq);
  if (rp->stop)
    done = true;
}

int im__mpi_stage_end(const struct im_run_config *o, uint32_t stage, bool failed, struct stage_res *res) {
  if (!im__mpi.on || done)
    return 1;
  /* Only a sweep's next stage depends on this one's figures: a grid's
   * stages, or a sweep of every rate, only have to end on every rank. */
  bool steer = o->sweep && (strstr(o->sweep, "auto") || o->stop_on_saturation);
  uint64_t ev_n = 0, rec_n = 0;
  char *ev = steer ? read_from(o->out_dir, "stages.jsonl", &ev_pos, &ev_n) : NULL;
  char *rec = steer ? read_from(o->out_dir, "requests.jsonl", &rec_pos, &rec_n) : NULL;
  struct hdr h = {.kind = K_END, .stage = stage, .failed = failed, .steer = steer};
  struct reply rp;
  int64_t t = im_now_ns();
  exchange(o, &h, ev, ev_n, rec, rec_n, NULL, &rp);
  t = im_now_ns() - t;
  free(ev);
  free(rec);
  if (rp.stop) {
    if (im__mpi.rank == 0 && rp.why[0])
      im__run_say(IM_RUN_SAY_ERROR, "MPI: the run stops: %s", rp.why);
    return 1;
  }
  if (!steer)
    return 0;
  int64_t t0 = res->t0_mono, wall = res->wall_start_ns; /* this rank's own clock */
  *res = rp.res;
  res->t0_mono = t0;
  res->wall_start_ns = wall;
  if (im__mpi.rank == 0 && im__mpi.verbose)
    im__run_say(IM_RUN_SAY_INFO,
                "MPI: stage %" PRIu32 " merged over %d ranks in %.0f ms: %" PRIu64
                " records, %.4g requests/s, %s, %s",
            stage, im__mpi.size, (double)t / 1e6, rp.records, res->throughput,
            res->oversaturated ? "over-saturated" : "not over-saturated",
            res->slo_failed ? "SLOs failed" : "SLOs met");
  return 0;
}

int im__mpi_stage_begin(uint32_t stage, struct im_stage *st, struct im_run_config *so) {
  if (!im__mpi.on || done)
    return 1;
  struct hdr h = {.kind = K_BEGIN, .stage = stage, .failed = im__run_interrupted > 0};
  struct reply rp;
  exchange(so, &h, NULL, 0, NULL, 0, st, &rp);
  if (rp.stop) {
    if (im__mpi.rank == 0 && rp.why[0])
      im__run_say(IM_RUN_SAY_ERROR, "MPI: the run stops: %s", rp.why);
    return 1;
  }
  *st = rp.stage; /* rank 0 decides (the rate of rate=auto's stage) */
  so->shard.start_at_given = true;
  so->shard.start_at_wall_ns = rp.start_wall;
  if (im__mpi.rank == 0 && im__mpi.verbose)
    im__run_say(IM_RUN_SAY_INFO, "MPI: stage %" PRIu32 " %s, on every rank at %" PRId64 ".%09" PRId64
                    "", stage, st->label, rp.start_wall / 1000000000,
            rp.start_wall % 1000000000);
  (void)im__run_shard_wait(so); /* interruptible until a second before */
  return 0;
}

void im__mpi_stage_drain(void) {
  struct hdr h = {.kind = K_LEAVE};
  struct reply rp;
  while (im__mpi.on && !done)
    exchange(NULL, &h, NULL, 0, NULL, 0, NULL, &rp);
}
#endif
