/* join_truth: a client's chunk arrival times against the server's truth log
 * (bench/CLIENT.md).
 *
 *   join_truth TRUTH.jsonl im RUN_DIR     infermeter: RUN_DIR/requests.jsonl,
 *                                         t0 from RUN_DIR/results.json
 *   join_truth TRUTH.jsonl mr FILE        min_reader --out FILE
 *   join_truth now                        print CLOCK_MONOTONIC ns
 *   join_truth exec FILE CMD [ARG...]     write CLOCK_MONOTONIC ns to FILE, exec CMD
 *
 * For every token-bearing chunk, error = client arrival - truth `ns` (the
 * instant before the server's write, docs/serve.md). Chunks are matched by
 * request id and ordinal (the k-th chunk of a request on both sides); a
 * request whose chunk counts differ is left out and counted. Printed on one
 * line (µs): p50/p99/max of |first-chunk error| (the TTFT side) and of
 * |error[k] - error[k-1]| (the ITL side: measured gap - true gap), the
 * number of negative errors (causality violations), requests and chunks
 * joined. infermeter's arrival is t0 + t_start + chunks_us*1000, so its
 * errors carry up to 1 µs of truncation (they read low by 0.5 µs on average).
 *
 * Build: cc -O2 -o join_truth bench/join_truth.c */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

struct ent {
  uint64_t h;   /* FNV-1a of the request id */
  uint32_t ord; /* ordinal within the request after sorting */
  int64_t key;  /* truth: token index; client: chunk index */
  int64_t ns;
};

struct vec {
  struct ent *v;
  size_t n, cap;
};

static void push(struct vec *a, uint64_t h, int64_t key, int64_t ns) {
  if (a->n == a->cap) {
    a->cap = a->cap ? a->cap * 2 : 65536;
    struct ent *v = realloc(a->v, a->cap * sizeof *v);
    if (!v) {
      perror("realloc");
      exit(1);
    }
    a->v = v;
  }
  a->v[a->n++] = (struct ent){h, 0, key, ns};
}

static uint64_t fnv(const char *s, size_t n) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (size_t i = 0; i < n; i++)
    h = (h ^ (unsigned char)s[i]) * 0x100000001b3ULL;
  return h;
}

static int cmp_ent(const void *a, const void *b) {
  const struct ent *x = a, *y = b;
  if (x->h != y->h)
    return x->h < y->h ? -1 : 1;
  return x->key < y->key ? -1 : x->key > y->key;
}

static void order(struct vec *a) {
  qsort(a->v, a->n, sizeof *a->v, cmp_ent);
  for (size_t i = 0; i < a->n; i++)
    a->v[i].ord = (i && a->v[i - 1].h == a->v[i].h) ? a->v[i - 1].ord + 1 : 0;
}

/* The string value of "key":"..." in line, or NULL. */
static const char *str_field(const char *line, const char *key, size_t *len) {
  const char *p = strstr(line, key);
  if (!p)
    return NULL;
  p += strlen(key);
  const char *e = strchr(p, '"');
  if (!e)
    return NULL;
  *len = (size_t)(e - p);
  return p;
}

static int int_field(const char *line, const char *key, int64_t *v) {
  const char *p = strstr(line, key);
  if (!p)
    return -1;
  p += strlen(key);
  if (*p == 'n')
    return -1; /* null */
  *v = strtoll(p, NULL, 10);
  return 0;
}

static FILE *xopen(const char *path) {
  FILE *f = fopen(path, "r");
  if (!f) {
    perror(path);
    exit(1);
  }
  return f;
}

static void read_truth(const char *path, struct vec *t) {
  FILE *f = xopen(path);
  char *line = NULL;
  size_t cap = 0;
  while (getline(&line, &cap, f) > 0) {
    if (strncmp(line, "{\"type\":\"chunk\"", 15))
      continue;
    size_t n;
    const char *id = str_field(line, "\"id\":\"", &n);
    int64_t idx, ns;
    if (id && !int_field(line, "\"index\":", &idx) && !int_field(line, "\"ns\":", &ns))
      push(t, fnv(id, n), idx, ns);
  }
  free(line);
  fclose(f);
}

static void read_im(const char *dir, struct vec *c) {
  char path[4096];
  snprintf(path, sizeof path, "%s/results.json", dir);
  FILE *f = xopen(path);
  char *line = NULL;
  size_t cap = 0;
  int64_t t0 = -1;
  while (getdelim(&line, &cap, '\0', f) > 0)
    if (int_field(line, "\"t0_monotonic_ns\":", &t0) == 0)
      break;
  fclose(f);
  if (t0 < 0) {
    fprintf(stderr, "join_truth: no t0_monotonic_ns in %s\n", path);
    exit(1);
  }
  snprintf(path, sizeof path, "%s/requests.jsonl", dir);
  f = xopen(path);
  while (getline(&line, &cap, f) > 0) {
    size_t n;
    const char *id = str_field(line, "\"request_id\":\"", &n);
    int64_t ts;
    const char *ch = strstr(line, "\"chunks_us\":[");
    if (!id || int_field(line, "\"t_start\":", &ts) || !ch)
      continue;
    uint64_t h = fnv(id, n);
    char *p = (char *)ch + 13;
    for (int64_t k = 0; *p && *p != ']'; k++) {
      int64_t us = strtoll(p, &p, 10);
      push(c, h, k, t0 + ts + us * 1000);
      if (*p == ',')
        p++;
    }
  }
  free(line);
  fclose(f);
}

static void read_mr(const char *path, struct vec *c) {
  FILE *f = xopen(path);
  char *line = NULL;
  size_t cap = 0;
  while (getline(&line, &cap, f) > 0) {
    if (line[0] != 'C')
      continue;
    char *sp = strchr(line + 2, ' ');
    if (!sp)
      continue;
    char *p;
    int64_t idx = strtoll(sp + 1, &p, 10), ns = strtoll(p, NULL, 10);
    push(c, fnv(line + 2, (size_t)(sp - line - 2)), idx, ns);
  }
  free(line);
  fclose(f);
}

static int cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* Nearest rank. */
static double pct(double *v, size_t n, double p) {
  if (!n)
    return -1;
  size_t r = (size_t)(p / 100.0 * (double)n + 0.999999999);
  if (r < 1)
    r = 1;
  return v[(r > n ? n : r) - 1];
}

int main(int argc, char **argv) {
  if (argc >= 2 && !strcmp(argv[1], "now")) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    printf("%" PRId64 "\n", (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec);
    return 0;
  }
  if (argc >= 4 && !strcmp(argv[1], "exec")) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    FILE *f = fopen(argv[2], "w");
    if (!f || fprintf(f, "%" PRId64 "\n", (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec) < 0 ||
        fclose(f)) {
      perror(argv[2]);
      return 1;
    }
    execvp(argv[3], argv + 3);
    perror(argv[3]);
    return 127;
  }
  if (argc != 4 || (strcmp(argv[2], "im") && strcmp(argv[2], "mr"))) {
    fprintf(stderr, "usage: join_truth TRUTH.jsonl im RUN_DIR | join_truth TRUTH.jsonl mr FILE\n"
                    "       join_truth now | join_truth exec FILE CMD [ARG...]\n");
    return 1;
  }
  struct vec t = {0}, c = {0};
  read_truth(argv[1], &t);
  if (!strcmp(argv[2], "im"))
    read_im(argv[3], &c);
  else
    read_mr(argv[3], &c);
  order(&t);
  order(&c);
  double *first = malloc((c.n + 1) * sizeof *first), *gap = malloc((c.n + 1) * sizeof *gap);
  size_t nf = 0, ng = 0, neg = 0, nreq = 0, skipped = 0, nchunks = 0;
  size_t i = 0, j = 0;
  while (i < c.n) {
    size_t ie = i, je;
    while (ie < c.n && c.v[ie].h == c.v[i].h)
      ie++;
    while (j < t.n && t.v[j].h < c.v[i].h)
      j++;
    je = j;
    while (je < t.n && t.v[je].h == c.v[i].h)
      je++;
    if (ie - i != je - j) {
      skipped++;
    } else {
      nreq++;
      double prev = 0;
      for (size_t k = 0; k < ie - i; k++) {
        double e = (double)(c.v[i + k].ns - t.v[j + k].ns) / 1e3;
        neg += e < 0;
        if (k == 0)
          first[nf++] = e < 0 ? -e : e;
        else
          gap[ng++] = e - prev < 0 ? prev - e : e - prev;
        prev = e;
        nchunks++;
      }
    }
    i = ie;
    j = je;
  }
  qsort(first, nf, sizeof *first, cmp_d);
  qsort(gap, ng, sizeof *gap, cmp_d);
  printf("requests %zu chunks %zu skipped_requests %zu truth_chunks %zu negative %zu "
         "ttft_err_p50_us %.1f ttft_err_p99_us %.1f ttft_err_max_us %.1f "
         "itl_err_p50_us %.1f itl_err_p99_us %.1f itl_err_max_us %.1f\n",
         nreq, nchunks, skipped, t.n, neg, pct(first, nf, 50), pct(first, nf, 99),
         nf ? first[nf - 1] : -1, pct(gap, ng, 50), pct(gap, ng, 99), ng ? gap[ng - 1] : -1);
  return 0;
}
