/* The shards of one plan as one run directory (results/merge.h). */
#include "results/merge.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "core/buf.h"
#include "record/reader.h"
#include "record/record.h"
#include "record/rundir.h"
#include "record/rundir_merge.h"

struct sdir {
  const char *dir;
  struct im_rundir rd;
  uint32_t index, count;
  char digest[40];
  const char *verdict;   /* the shard's own client self-check (NULL: no results.json) */
  json_t *results;       /* its results.json (owns verdict) */
  uint64_t records, bad;
};

static int by_index(const void *a, const void *b) {
  const struct sdir *x = a, *y = b;
  return x->index < y->index ? -1 : x->index > y->index;
}

/* The worst client self-check verdict of a results.json (one stage or many). */
static const char *verdict_of(const json_t *res) {
  const char *v = NULL;
  json_t *stages = json_object_get(res, "stages");
  size_t n = json_is_array(stages) ? json_array_size(stages) : 0;
  for (size_t i = 0; i <= n; i++) {
    const json_t *st = i < n ? json_array_get(stages, i) : res;
    const char *s = json_string_value(
        json_object_get(json_object_get(json_object_get(st, "audit"), "client_check"), "verdict"));
    if (s && (!v || !strcmp(s, "INVALID")))
      v = s;
  }
  return v;
}

static enum im_err read_shard(struct sdir *s, char *err, size_t err_len) {
  char path[4200];
  if (im_rundir_read(s->dir, &s->rd, err, err_len))
    return IM_IO;
  json_t *sh = json_object_get(s->rd.manifest, "shard");
  json_t *idx = json_object_get(sh, "index"), *cnt = json_object_get(sh, "count");
  const char *dg = json_string_value(json_object_get(sh, "plan_digest"));
  if (!json_is_integer(idx) || !json_is_integer(cnt) || !dg || json_integer_value(cnt) < 1 ||
      json_integer_value(idx) < 0 || json_integer_value(idx) >= json_integer_value(cnt) ||
      json_integer_value(cnt) > 65536) {
    return im_errf(err, err_len, IM_INVAL, "%s is not a shard of a plan (its manifest has no "
                   "\"shard\": run with --shard i/N or under mpirun)", s->dir);
  }
  s->index = (uint32_t)json_integer_value(idx);
  s->count = (uint32_t)json_integer_value(cnt);
  snprintf(s->digest, sizeof s->digest, "%s", dg);
  snprintf(path, sizeof path, "%s/results.json", s->dir);
  s->results = json_load_file(path, 0, NULL);
  s->verdict = s->results ? verdict_of(s->results) : NULL;
  return IM_OK;
}

/* The plans agree, every shard once; the missing ones into *missing. */
static enum im_err check_plan(struct sdir *v, size_t n, bool partial, json_t *missing,
                              char *err, size_t err_len) {
  for (size_t i = 1; i < n; i++) {
    if (strcmp(v[i].digest, v[0].digest) || v[i].count != v[0].count)
      return im_errf(err, err_len, IM_INVAL,
                     "%s and %s come from different plans (plan digest %s of %" PRIu32
                     " shards vs %s of %" PRIu32 "): not merged",
                     v[0].dir, v[i].dir, v[0].digest, v[0].count, v[i].digest, v[i].count);
  }
  qsort(v, n, sizeof *v, by_index);
  for (size_t i = 1; i < n; i++)
    if (v[i].index == v[i - 1].index)
      return im_errf(err, err_len, IM_INVAL, "%s and %s are both shard %" PRIu32, v[i - 1].dir,
                     v[i].dir, v[i].index);
  for (uint32_t k = 0, j = 0; k < v[0].count; k++) {
    if (j < n && v[j].index == k)
      j++;
    else
      json_array_append_new(missing, json_integer(k));
  }
  size_t nm = json_array_size(missing);
  if (nm && !partial) {
    char list[400] = "";
    size_t at = 0;
    for (size_t i = 0; i < nm && i < 32 && at < sizeof list; i++)
      at += (size_t)snprintf(list + at, sizeof list - at, " %" JSON_INTEGER_FORMAT,
                             json_integer_value(json_array_get(missing, i)));
    return im_errf(err, err_len, IM_NOTFOUND,
                   "%zu of %" PRIu32 " shards missing:%s%s (--partial merges the others, "
                   "marked incomplete)",
                   nm, v[0].count, list, nm > 32 ? " ..." : "");
  }
  return IM_OK;
}

/* Stage s's offset of shard v (its t0's wall clock minus the reference's). */
static int64_t offset_of(const struct sdir *v, const struct im_rundir_stage *ref, size_t s) {
  if (s >= v->rd.n_st || !v->rd.st[s].has_t0 || !ref || !ref->has_t0 ||
      v->rd.st[s].wall_start_ns < 0 || ref->wall_start_ns < 0)
    return 0;
  return v->rd.st[s].wall_start_ns - ref->wall_start_ns;
}

static const struct im_rundir_stage *reference(const struct sdir *v, size_t n, size_t s) {
  for (size_t i = 0; i < n; i++)
    if (s < v[i].rd.n_st && v[i].rd.st[s].has_t0)
      return &v[i].rd.st[s];
  return NULL;
}

static void shift(int64_t *t, int64_t d) {
  if (*t >= 0)
    *t += d;
}

/* Shard v's records, each with "shard" and its stage's offset, to out. */
static int copy_records(struct sdir *v, const int64_t *offsets, size_t n_off, FILE *out) {
  char path[4200];
  snprintf(path, sizeof path, "%s/requests.jsonl", v->dir);
  FILE *f = fopen(path, "r");
  if (!f)
    return errno == ENOENT ? 0 : -1; /* a shard killed before its first record */
  struct im_jsonl_reader *rd = NULL;
  struct im_buf b;
  im_buf_init(&b, IM_RECORD_LINE_MAX + 64);
  struct im_record r = {0};
  int rc = im_jsonl_open(f, IM_RECORD_LINE_MAX, &rd) == IM_OK ? 0 : -1;
  const char *line;
  size_t len;
  uint64_t lineno;
  enum im_err e;
  while (!rc && (e = im_jsonl_next(rd, &line, &len, &lineno)) != IM_NOTFOUND) {
    if (e == IM_IO) {
      rc = -1;
      break;
    }
    im_record_reset(&r);
    if (e != IM_OK || im_record_from_json(line, len, &r, NULL, 0) != IM_OK) {
      v->bad++;
      continue;
    }
    int64_t d = r.stage < n_off ? offsets[r.stage] : 0;
    int64_t *ts[] = {&r.t_sched, &r.t_sched_first, &r.t_dispatch, &r.t_start, &r.t_send,
                     &r.t_hdr, &r.t_first, &r.t_answer, &r.t_last, &r.t_end};
    for (size_t i = 0; d && i < sizeof ts / sizeof ts[0]; i++)
      shift(ts[i], d);
    b.len = 0;
    if (im_record_to_jsonl(&r, &b) != IM_OK || b.len < 2) {
      rc = -1;
      break;
    }
    /* "...}\n" -> "...,"shard":K}\n" */
    b.len -= 2;
    if (im_buf_printf(&b, ",\"shard\":%" PRIu32 "}\n", v->index) != IM_OK ||
        fwrite(b.data, 1, b.len, out) != b.len)
      rc = -1;
    v->records++;
  }
  im_record_cleanup(&r);
  im_buf_cleanup(&b);
  im_jsonl_close(rd);
  fclose(f);
  return rc;
}

static int copy_file(const char *from, const char *to) {
  int in = open(from, O_RDONLY | O_CLOEXEC);
  if (in < 0)
    return errno == ENOENT ? 0 : -1;
  int out = open(to, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  char buf[65536];
  ssize_t n = 0;
  while (out >= 0 && (n = read(in, buf, sizeof buf)) > 0)
    if (write(out, buf, (size_t)n) != n) {
      n = -1;
      break;
    }
  close(in);
  if (out >= 0)
    close(out);
  return out < 0 || n < 0 ? -1 : 0;
}

/* stages.jsonl of the merged run; the offsets of each shard's stages into
 * off[shard * n_stages + stage]. */
static int write_stages(struct sdir *v, size_t n, const char *out, size_t n_stages, int64_t *off,
                        bool missing) {
  char path[4200];
  snprintf(path, sizeof path, "%s/stages.jsonl", out);
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0)
    return -1;
  int rc = 0;
  bool stopped = false, interrupted = missing;
  for (size_t s = 0; s < n_stages && !rc; s++) {
    struct im_rundir_stage m = {0};
    const struct im_rundir_stage *ref = reference(v, n, s);
    for (size_t i = 0; i < n && !rc; i++) {
      off[i * n_stages + s] = offset_of(&v[i], ref, s);
      if (s < v[i].rd.n_st && v[i].rd.st[s].started &&
          im_rundir_stage_merge(&m, &v[i].rd.st[s], off[i * n_stages + s], m.threads) != IM_OK)
        rc = -1;
    }
    if (!rc && m.started)
      rc = im_rundir_stage_write(fd, &m, s);
    im_rundir_stage_cleanup(&m);
  }
  for (size_t i = 0; i < n; i++) {
    stopped |= v[i].rd.stopped_early;
    interrupted |= v[i].rd.run_interrupted || !v[i].rd.run_ended;
  }
  /* The run ended when every shard's did (an aborted one stays open). */
  if (!rc && !interrupted)
    rc = im_rundir_append(fd, im_rundir_run_end_json(stopped, false));
  else if (!rc && missing)
    rc = im_rundir_append(fd, im_rundir_run_end_json(stopped, true));
  if (close(fd))
    rc = -1;
  return rc;
}

static json_t *merged_json(const struct sdir *v, size_t n, json_t *missing) {
  json_t *shards = json_array();
  for (size_t i = 0; shards && i < n; i++) {
    json_t *sh = json_object_get(v[i].rd.manifest, "shard");
    json_t *o = json_pack("{s:I, s:s, s:I, s:I, s:s?}", "index", (json_int_t)v[i].index, "dir",
                          v[i].dir, "records", (json_int_t)v[i].records, "records_skipped",
                          (json_int_t)v[i].bad, "client_check", v[i].verdict);
    const char *keys[] = {"clock", "clock_offset_ns", "clock_rtt_ns", "wall_to_monotonic_error_ns",
                          "start_at_unix_ns"};
    for (size_t k = 0; o && k < sizeof keys / sizeof keys[0]; k++)
      if (json_object_get(sh, keys[k]))
        json_object_set(o, keys[k], json_object_get(sh, keys[k]));
    json_array_append_new(shards, o);
  }
  /* Shards whose run did not end (a rank killed, a job aborted). */
  json_t *cut = json_array();
  for (size_t i = 0; cut && i < n; i++)
    if (!v[i].rd.run_ended)
      json_array_append_new(cut, json_integer(v[i].index));
  char why[240] = "";
  json_t *lists[2] = {missing, cut};
  const char *says[2] = {" lost", " cut short"};
  for (size_t l = 0; l < 2; l++) {
    size_t nl = json_array_size(lists[l]);
    const char *head = nl > 1 ? "shards " : "shard ";
    for (size_t i = 0; i < nl && strlen(why) < 150; i++)
      snprintf(why + strlen(why), sizeof why - strlen(why), "%s%s%" JSON_INTEGER_FORMAT,
               i ? "" : why[0] ? "; " : "", i ? ", " : head,
               json_integer_value(json_array_get(lists[l], i)));
    if (nl)
      snprintf(why + strlen(why), sizeof why - strlen(why), "%s", says[l]);
  }
  return json_pack("{s:I, s:s, s:o, s:O, s:o, s:s?}", "count", (json_int_t)v[0].count,
                   "plan_digest", v[0].digest, "shards", shards ? shards : json_array(), "missing",
                   missing, "cut_short", cut ? cut : json_array(), "incomplete",
                   why[0] ? why : NULL);
}

/* Writes the merged run directory c->out from the n shards v. */
static enum im_err merge_into(struct sdir *v, size_t n, const struct im_merge_config *c,
                              char *err, size_t err_len) {
  json_t *missing = json_array();
  if (!missing)
    return im_errf(err, err_len, IM_NOMEM, "out of memory");
  enum im_err e = check_plan(v, n, c->partial, missing, err, err_len);
  if (e) {
    json_decref(missing);
    return e;
  }
  size_t n_stages = 0;
  for (size_t i = 0; i < n; i++)
    n_stages = v[i].rd.n_st > n_stages ? v[i].rd.n_st : n_stages;
  int64_t *off = calloc(n * (n_stages ? n_stages : 1), sizeof *off);
  char path[4200], from[4200];
  FILE *req = NULL;
  json_t *m = NULL;
  e = IM_IO;
  if (!off) {
    e = im_errf(err, err_len, IM_NOMEM, "out of memory");
    goto out;
  }
  if (mkdir(c->out, 0755) && errno != EEXIST) {
    im_errf(err, err_len, e, "--out: cannot create %s: %s", c->out, strerror(errno));
    goto out;
  }
  if (write_stages(v, n, c->out, n_stages, off, json_array_size(missing) > 0)) {
    im_errf(err, err_len, e, "cannot write %s/stages.jsonl: %s", c->out, strerror(errno));
    goto out;
  }
  snprintf(path, sizeof path, "%s/requests.jsonl", c->out);
  if (!(req = fopen(path, "w"))) {
    im_errf(err, err_len, e, "cannot write %s: %s", path, strerror(errno));
    goto out;
  }
  for (size_t i = 0; i < n; i++)
    if (copy_records(&v[i], off + i * n_stages, n_stages, req)) {
      im_errf(err, err_len, e, "%s/requests.jsonl: %s", v[i].dir, strerror(errno));
      goto out;
    }
  int closed = fclose(req);
  req = NULL;
  if (closed) {
    im_errf(err, err_len, e, "cannot write %s: %s", path, strerror(errno));
    goto out;
  }
  /* The observers' files: shard 0's (the others run none). */
  const char *files[] = {"series.jsonl", "scrapes.prom"};
  for (size_t k = 0; k < 2; k++) {
    snprintf(from, sizeof from, "%s/%s", v[0].dir, files[k]);
    snprintf(path, sizeof path, "%s/%s", c->out, files[k]);
    if (v[0].index == 0 && copy_file(from, path)) {
      im_errf(err, err_len, e, "cannot copy %s: %s", from, strerror(errno));
      goto out;
    }
  }
  m = json_deep_copy(v[0].rd.manifest);
  if (m) {
    json_object_del(m, "shard");
    json_object_set_new(m, "merged", merged_json(v, n, missing));
  }
  if (!m || im_rundir_write_manifest(c->out, m, &v[0].rd.an)) {
    im_errf(err, err_len, e, "cannot write %s/manifest.json: %s", c->out, strerror(errno));
    goto out;
  }
  e = IM_OK;
out:
  if (req)
    fclose(req);
  json_decref(m);
  free(off);
  json_decref(missing);
  return e;
}

enum im_err im_results_merge(const struct im_merge_config *c, struct im_merge_outcome *o,
                             char *err, size_t err_len) {
  if (!c || !o || !c->out || !c->n_dirs)
    return im_errf(err, err_len, IM_INVAL, "merge: no shards or no output directory");
  memset(o, 0, sizeof *o);
  struct sdir *v = calloc(c->n_dirs, sizeof *v);
  if (!v)
    return im_errf(err, err_len, IM_NOMEM, "out of memory");
  enum im_err e = IM_OK;
  size_t n = 0;
  while (n < c->n_dirs && !e) {
    v[n].dir = c->dirs[n];
    e = read_shard(&v[n++], err, err_len);
  }
  if (!e && (e = merge_into(v, n, c, err, err_len)) == IM_OK) {
    o->merged = n;
    o->count = v[0].count;
    snprintf(o->digest, sizeof o->digest, "%s", v[0].digest);
  }
  for (size_t i = 0; i < n; i++) {
    im_rundir_free(&v[i].rd);
    json_decref(v[i].results);
  }
  free(v);
  return e;
}
