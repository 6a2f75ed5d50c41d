/* results/merge.h: the shards of one plan as one run directory. Shards are
 * made from the single-run fixture (tests/fixtures/rundirs/single) by
 * giving its manifest a "shard"; the merged directory holds every shard's
 * records, each marked with its shard, and a manifest whose "merged" says
 * which shards came and which were lost. Refusals come back as an error
 * with a message, nothing printed: directories of different plans, one
 * shard twice, missing shards without partial, a directory that is not a
 * shard. */
#include "check.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "results/merge.h"

#define FIX "tests/fixtures/rundirs/single"

static int sh(const char *cmd) { return system(cmd); }

/* A copy of the fixture at tmp/name as shard index of count of plan dg. */
static void make_shard(const char *tmp, const char *name, int index, int count, const char *dg,
                       char *dir, size_t dlen) {
  snprintf(dir, dlen, "%s/%s", tmp, name);
  char cmd[1200], path[600];
  snprintf(cmd, sizeof cmd, "rm -rf '%s' && cp -r " FIX " '%s'", dir, dir);
  CHECK_EQ(sh(cmd), 0);
  snprintf(path, sizeof path, "%s/manifest.json", dir);
  json_t *m = json_load_file(path, 0, NULL);
  CHECK(m != NULL);
  if (index >= 0)
    json_object_set_new(m, "shard", json_pack("{s:i, s:i, s:s}", "index", index, "count", count,
                                              "plan_digest", dg));
  CHECK_EQ(json_dump_file(m, path, 0), 0);
  json_decref(m);
}

static size_t lines_with(const char *path, const char *needle) {
  FILE *f = fopen(path, "r");
  if (!f)
    return 0;
  char line[1 << 16];
  size_t n = 0;
  while (fgets(line, sizeof line, f))
    n += strstr(line, needle) != NULL;
  fclose(f);
  return n;
}

int main(void) {
  char tmp[] = "/tmp/im-test-merge.XXXXXX";
  if (!mkdtemp(tmp))
    return 1;
  char a[512], b[512], c[512], d[512], none[512], out[600], path[700], err[512];
  make_shard(tmp, "a", 0, 2, "d1", a, sizeof a);
  make_shard(tmp, "b", 1, 2, "d1", b, sizeof b);
  make_shard(tmp, "c", 1, 2, "d2", c, sizeof c);
  make_shard(tmp, "d", 0, 3, "d3", d, sizeof d);
  make_shard(tmp, "none", -1, 0, "", none, sizeof none);
  size_t per_shard = lines_with(FIX "/requests.jsonl", "\"id\"");
  CHECK(per_shard > 0);

  /* Both shards: every record, each with its shard; the manifest merged. */
  snprintf(out, sizeof out, "%s/out", tmp);
  const char *both[] = {b, a}; /* any order */
  struct im_merge_config cfg = {.dirs = both, .n_dirs = 2, .out = out};
  struct im_merge_outcome o;
  CHECK_EQ(im_results_merge(&cfg, &o, err, sizeof err), IM_OK);
  CHECK_EQ(o.merged, 2);
  CHECK_EQ(o.count, 2);
  CHECK_STR(o.digest, "d1");
  snprintf(path, sizeof path, "%s/requests.jsonl", out);
  CHECK_EQ(lines_with(path, "\"shard\":0}"), per_shard);
  CHECK_EQ(lines_with(path, "\"shard\":1}"), per_shard);
  snprintf(path, sizeof path, "%s/manifest.json", out);
  json_t *m = json_load_file(path, 0, NULL);
  CHECK(m && !json_object_get(m, "shard"));
  json_t *mg = json_object_get(m, "merged");
  CHECK_EQ(json_integer_value(json_object_get(mg, "count")), 2);
  CHECK_EQ(json_array_size(json_object_get(mg, "shards")), 2);
  CHECK_EQ(json_array_size(json_object_get(mg, "missing")), 0);
  CHECK(json_is_null(json_object_get(mg, "incomplete"))); /* complete */
  json_decref(m);
  snprintf(path, sizeof path, "%s/stages.jsonl", out);
  CHECK(lines_with(path, "run_end") == 1);

  /* Different plans, one shard twice, not a shard at all. */
  const char *diff[] = {a, c};
  cfg.dirs = diff;
  CHECK_EQ(im_results_merge(&cfg, &o, err, sizeof err), IM_INVAL);
  CHECK(strstr(err, "different plans") != NULL);
  const char *twice[] = {a, a};
  cfg.dirs = twice;
  CHECK_EQ(im_results_merge(&cfg, &o, err, sizeof err), IM_INVAL);
  CHECK(strstr(err, "both shard 0") != NULL);
  const char *notshard[] = {a, none};
  cfg.dirs = notshard;
  CHECK_EQ(im_results_merge(&cfg, &o, err, sizeof err), IM_INVAL);
  CHECK(strstr(err, "not a shard of a plan") != NULL);
  const char *absent[] = {"/nonexistent/im-merge"};
  cfg.dirs = absent;
  cfg.n_dirs = 1;
  CHECK(im_results_merge(&cfg, &o, err, sizeof err) != IM_OK);
  CHECK(strstr(err, "/nonexistent/im-merge") != NULL);

  /* Two of three missing: refused, then merged with partial and said. */
  const char *one[] = {d};
  cfg.dirs = one;
  snprintf(out, sizeof out, "%s/part", tmp);
  cfg.out = out;
  CHECK_EQ(im_results_merge(&cfg, &o, err, sizeof err), IM_NOTFOUND);
  CHECK(strstr(err, "2 of 3 shards missing: 1 2") != NULL);
  cfg.partial = true;
  CHECK_EQ(im_results_merge(&cfg, &o, err, sizeof err), IM_OK);
  snprintf(path, sizeof path, "%s/manifest.json", out);
  m = json_load_file(path, 0, NULL);
  mg = json_object_get(m, "merged");
  CHECK_EQ(json_array_size(json_object_get(mg, "missing")), 2);
  const char *why = json_string_value(json_object_get(mg, "incomplete"));
  CHECK(why && strstr(why, "shards 1, 2 lost"));
  json_decref(m);
  CHECK_EQ(im_results_merge(NULL, &o, err, sizeof err), IM_INVAL);

  char cmd[600];
  snprintf(cmd, sizeof cmd, "rm -rf %s", tmp);
  (void)sh(cmd);
  return CHECK_DONE();
}
