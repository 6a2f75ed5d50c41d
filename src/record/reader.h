/* Reading requests.jsonl back, bounded and streaming: the file is read in
 * blocks, one line at a time, never more than a line's cap in memory; a
 * line that is too long, does not parse, or is cut short at the end of the
 * file (a run killed mid-write) is skipped and reported with its line
 * number, never a crash. `report DIR` and the tests read records this way.
 *
 * Thread safety: a reader belongs to one thread. */
#ifndef IM_RECORD_READER_H
#define IM_RECORD_READER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "core/err.h"
#include "record/record.h"

/* One JSONL stream. */
struct im_jsonl_reader;

/* Reads f (not closed by the reader) with lines of at most line_max bytes
 * (the newline excluded; 1 .. IM_RECORD_LINE_MAX). IM_INVAL, IM_NOMEM. */
enum im_err im_jsonl_open(FILE *f, size_t line_max, struct im_jsonl_reader **out) IM_WUR;
/* The next complete line: *line (not NUL-terminated, valid until the next
 * call) of *len bytes, its 1-based number in *lineno. Empty lines are
 * skipped. IM_OK; IM_NOTFOUND at the end; IM_LIMIT for a line over the cap
 * (skipped: the next call goes on after it; *lineno names it); IM_PARSE
 * for a last line without its newline (a cut write; *lineno names it; the
 * next call returns IM_NOTFOUND); IM_IO on a read error. */
enum im_err im_jsonl_next(struct im_jsonl_reader *r, const char **line, size_t *len,
                          uint64_t *lineno) IM_WUR;
void im_jsonl_close(struct im_jsonl_reader *r);

/* What reading a records file found besides the records. */
#define IM_READ_MAX_NOTES 8
struct im_read_report {
  uint64_t lines;             /* non-empty lines seen */
  uint64_t bad;               /* lines skipped: over the cap or not a record */
  bool truncated_tail;        /* the last line was cut short (counted in bad) */
  size_t n_notes;             /* the first IM_READ_MAX_NOTES problems ... */
  char notes[IM_READ_MAX_NOTES][160]; /* ... "line 17: field 'kind': ..." */
};

/* Reads every record of a requests.jsonl stream into *recs (an array of
 * *n records the caller frees with im_records_free), skipping and
 * reporting bad lines in *rep. IM_OK even when lines were skipped;
 * IM_NOMEM, IM_IO (the records read so far are kept and returned). */
enum im_err im_records_read(FILE *f, struct im_record **recs, size_t *n,
                            struct im_read_report *rep) IM_WUR;
/* The same from a path; IM_IO when it cannot be opened (errno kept),
 * IM_INVAL when it is not a regular file (a device would never end). */
enum im_err im_records_read_path(const char *path, struct im_record **recs, size_t *n,
                                 struct im_read_report *rep) IM_WUR;
/* Frees n records and the array (NULL-safe). */
void im_records_free(struct im_record *recs, size_t n);

#endif
