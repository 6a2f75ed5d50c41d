/* A flat view of one JSON object: the members of a requests.jsonl line,
 * found without building a tree (internal to the record module).
 *
 * Reading a run's records back is the bulk of the work after a run: with
 * jansson, a 900-byte record cost about 180,000 instructions (a tree of
 * allocated values, a hash table per object). Records are flat objects of
 * scalars and integer arrays, so im__fobj_scan reads that shape directly,
 * in place, without allocating. Anything else (escapes, non-ASCII text,
 * nested values, numbers beyond 18 digits, duplicate keys, bad syntax) is
 * refused with IM_PARSE, and the caller then loads the line with jansson
 * and views it through im__fobj_from_json: the same members, so both paths
 * give the same record, and every error is still jansson's verdict. */
#ifndef IM_RECORD_FOBJ_H
#define IM_RECORD_FOBJ_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/err.h"

enum im__fv_type {
  IM__FV_NULL,
  IM__FV_TRUE,
  IM__FV_FALSE,
  IM__FV_INT,   /* i */
  IM__FV_REAL,  /* d */
  IM__FV_STR,   /* s[n], not terminated (may hold NUL on the jansson path) */
  IM__FV_ARR,   /* n elements: read them with im__fv_iter */
  IM__FV_OTHER, /* an object */
};

struct im__fv {
  const char *key;
  size_t klen;
  enum im__fv_type t;
  int64_t i;
  double d;
  const char *s; /* IM__FV_STR: the bytes; IM__FV_ARR (scanned): the text after '[' */
  size_t n;
  json_t *j;     /* IM__FV_ARR (jansson path): the array */
};

#define IM__FOBJ_SMALL 96

struct im__fobj {
  struct im__fv *m; /* members in the line's order */
  size_t n;
  bool indexed;     /* slot is an index by key (up to IM__FOBJ_SMALL members) */
  uint8_t slot[256]; /* 1 + a member's index, 0 empty */
  struct im__fv small[IM__FOBJ_SMALL];
};

/* Scans line[len] (no terminator needed); pointers into line stay valid
 * while line does. IM_OK, or IM_PARSE when the line is not of the simple
 * shape above (nothing to clean up in either case). */
enum im_err im__fobj_scan(struct im__fobj *o, const char *line, size_t len)
    __attribute__((warn_unused_result));

/* Views an object loaded by jansson (root must outlive the view).
 * IM_NOMEM when over IM__FOBJ_SMALL members cannot be allocated. */
enum im_err im__fobj_from_json(struct im__fobj *o, json_t *root)
    __attribute__((warn_unused_result));

void im__fobj_cleanup(struct im__fobj *o);

/* The member named key, or NULL. */
const struct im__fv *im__fobj_get(struct im__fobj *o, const char *key);

/* The elements of an array, in order. */
struct im__fv_iter {
  const struct im__fv *v;
  size_t i;
  const char *p;
};

void im__fv_iter_init(struct im__fv_iter *it, const struct im__fv *arr);

/* The next element (the caller stops at v->n): true with *out set when it
 * is an integer, false otherwise. */
bool im__fv_next_int(struct im__fv_iter *it, int64_t *out);

/* im_record_from_json by the jansson path alone (the tests compare the
 * two paths). */
struct im_record;
enum im_err im__record_from_tree(const char *line, size_t len, struct im_record *r, char *msg,
                                 size_t msg_len) __attribute__((warn_unused_result));

#endif
