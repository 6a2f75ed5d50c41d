/* Bounded streaming JSONL reading: see record/reader.h. */
#include "record/reader.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define BLOCK ((size_t)64 << 10)

struct im_jsonl_reader {
  FILE *f;
  size_t line_max;
  char *buf;           /* line_max + BLOCK bytes */
  size_t cap, start, end; /* unread data is buf[start, end) */
  uint64_t lineno;
  bool eof, skipping;  /* skipping: inside a line over the cap */
};

enum im_err im_jsonl_open(FILE *f, size_t line_max, struct im_jsonl_reader **out) {
  *out = NULL;
  if (!f || line_max < 1 || line_max > IM_RECORD_LINE_MAX)
    return IM_INVAL;
  struct im_jsonl_reader *r = calloc(1, sizeof *r);
  if (!r)
    return IM_NOMEM;
  r->cap = line_max + BLOCK;
  if (!(r->buf = malloc(r->cap))) {
    free(r);
    return IM_NOMEM;
  }
  r->f = f;
  r->line_max = line_max;
  *out = r;
  return IM_OK;
}

void im_jsonl_close(struct im_jsonl_reader *r) {
  if (!r)
    return;
  free(r->buf);
  free(r);
}

/* Reads more after the unread data (moved to the front). false at EOF. */
static enum im_err fill(struct im_jsonl_reader *r) {
  if (r->start > 0) {
    memmove(r->buf, r->buf + r->start, r->end - r->start);
    r->end -= r->start;
    r->start = 0;
  }
  size_t room = r->cap - r->end;
  size_t got = fread(r->buf + r->end, 1, room < BLOCK ? room : BLOCK, r->f);
  r->end += got;
  if (got == 0) {
    if (ferror(r->f))
      return IM_IO;
    r->eof = true;
  }
  return IM_OK;
}

enum im_err im_jsonl_next(struct im_jsonl_reader *r, const char **line, size_t *len,
                          uint64_t *lineno) {
  for (;;) {
    char *nl = memchr(r->buf + r->start, '\n', r->end - r->start);
    if (nl) {
      size_t n = (size_t)(nl - (r->buf + r->start));
      const char *p = r->buf + r->start;
      r->start += n + 1;
      if (r->skipping) { /* the end of a line over the cap */
        r->skipping = false;
        continue;
      }
      r->lineno++;
      if (n == 0 || (n == 1 && p[0] == '\r'))
        continue;
      if (n > r->line_max) {
        *lineno = r->lineno;
        return IM_LIMIT;
      }
      *line = p;
      *len = n;
      *lineno = r->lineno;
      return IM_OK;
    }
    size_t pending = r->end - r->start;
    if (pending > r->line_max && !r->skipping) {
      /* No newline within the cap: drop what is buffered, skip to the next. */
      r->skipping = true;
      r->lineno++;
      r->start = r->end;
      *lineno = r->lineno;
      return IM_LIMIT;
    }
    if (r->skipping)
      r->start = r->end;
    if (r->eof) {
      if (r->end > r->start && !r->skipping) {
        r->lineno++;
        r->start = r->end;
        *lineno = r->lineno;
        return IM_PARSE;
      }
      return IM_NOTFOUND;
    }
    enum im_err err = fill(r);
    if (err)
      return err;
  }
}

__attribute__((format(printf, 2, 3))) static void note(struct im_read_report *rep,
                                                      const char *fmt, ...) {
  if (rep->n_notes >= IM_READ_MAX_NOTES)
    return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(rep->notes[rep->n_notes++], sizeof rep->notes[0], fmt, ap);
  va_end(ap);
}

void im_records_free(struct im_record *recs, size_t n) {
  for (size_t i = 0; recs && i < n; i++)
    im_record_cleanup(&recs[i]);
  free(recs);
}

/* Appends *rec to the array (taking its chunk arrays). */
static enum im_err push(struct im_record **recs, size_t *n, size_t *cap, struct im_record *rec) {
  if (*n == *cap) {
    size_t c = *cap ? *cap * 2 : 1024;
    struct im_record *v = realloc(*recs, c * sizeof *v);
    if (!v)
      return IM_NOMEM;
    *recs = v;
    *cap = c;
  }
  (*recs)[(*n)++] = *rec;
  memset(rec, 0, sizeof *rec);
  return IM_OK;
}

enum im_err im_records_read(FILE *f, struct im_record **recs, size_t *n,
                            struct im_read_report *rep) {
  struct im_jsonl_reader *rd = NULL;
  struct im_record rec;
  size_t cap = 0;
  memset(rep, 0, sizeof *rep);
  memset(&rec, 0, sizeof rec);
  *recs = NULL;
  *n = 0;
  enum im_err err = im_jsonl_open(f, IM_RECORD_LINE_MAX, &rd);
  while (!err) {
    const char *line = NULL;
    size_t len = 0;
    uint64_t no = 0;
    enum im_err e = im_jsonl_next(rd, &line, &len, &no);
    if (e == IM_NOTFOUND)
      break;
    if (e == IM_IO || e == IM_NOMEM) {
      err = e;
      break;
    }
    rep->lines++;
    if (e == IM_LIMIT || e == IM_PARSE) {
      rep->bad++;
      rep->truncated_tail |= e == IM_PARSE;
      note(rep, e == IM_LIMIT ? "line %llu: longer than %zu bytes, skipped"
                              : "line %llu: cut short (no newline at the end of the file), skipped",
           (unsigned long long)no, (size_t)IM_RECORD_LINE_MAX);
      continue;
    }
    char msg[128] = "";
    im_record_reset(&rec);
    if (im_record_from_json(line, len, &rec, msg, sizeof msg) != IM_OK) {
      rep->bad++;
      note(rep, "line %llu: %s, skipped", (unsigned long long)no, msg[0] ? msg : "not a record");
      continue;
    }
    err = push(recs, n, &cap, &rec);
  }
  im_record_cleanup(&rec);
  im_jsonl_close(rd);
  return err;
}

enum im_err im_records_read_path(const char *path, struct im_record **recs, size_t *n,
                                 struct im_read_report *rep) {
  memset(rep, 0, sizeof *rep);
  *recs = NULL;
  *n = 0;
  FILE *f = fopen(path, "rb");
  if (!f)
    return IM_IO;
  /* Only a regular file has an end: a device such as /dev/full or
   * /dev/zero reads forever. */
  struct stat st;
  if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode)) {
    fclose(f);
    errno = EINVAL;
    return IM_INVAL;
  }
  enum im_err err = im_records_read(f, recs, n, rep);
  int saved = errno;
  fclose(f);
  errno = saved;
  return err;
}
