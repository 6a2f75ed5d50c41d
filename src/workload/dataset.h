/* Dataset and trace readers: one in-memory list of request templates read
 * from a file, for the load generator to draw from.
 *
 * Formats:
 *   sharegpt  a JSON array of objects, each with "conversations" (or
 *             "items") = [{"from": "human"|"gpt", "value": "..."}]; the first
 *             human turn is the prompt and the gpt turn right after it gives
 *             output_len. Objects without such a pair are skipped (counted in
 *             n_skipped); objects outside the length filters are dropped
 *             (counted in n_filtered).
 *   jsonl     one object a line: "prompt" (string) or "messages"
 *             ([{"role", "content"}]), optional "output_len" (integer),
 *             "timestamp_ms" (number) and "extra" (object).
 *   mooncake  one object a line: "timestamp" (ms), "input_length",
 *             "output_length", optional "hash_ids" (ids of 512-token blocks).
 *   azure     CSV with the header TIMESTAMP,ContextTokens,GeneratedTokens;
 *             TIMESTAMP is a date-time ("2023-11-16 18:15:46.6805900", UTC,
 *             an optional 'T' separator and "Z"/"+HH:MM" suffix accepted) or
 *             plain numeric seconds; the style must not change between rows.
 *
 * Timestamps are made relative to the earliest one in the file, so a sorted
 * trace's first row is at 0 ns; rows keep file order (see ts_sorted).
 *
 * Bounds: a line longer than max_line, a file larger than max_file, or more
 * than max_items kept items fails with IM_LIMIT; malformed input fails with
 * IM_PARSE. Either way msg receives "FILE:LINE: what is wrong" (the line of
 * a sharegpt item is the line where its object starts). Blank lines in the
 * line formats are ignored.
 *
 * Thread safety: functions touch only their arguments. */
#ifndef INFERMETER_DATASET_H
#define INFERMETER_DATASET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/err.h"

enum im_ds_format { IM_DS_SHAREGPT, IM_DS_JSONL, IM_DS_MOONCAKE, IM_DS_AZURE };

struct im_ds_message {
  char *role;
  char *content;
};

struct im_ds_item {
  char *prompt;                   /* NUL-terminated; NULL when none */
  struct im_ds_message *messages; /* NULL when none */
  size_t n_messages;
  int64_t input_len;    /* tokens; -1 when the source gives none */
  int64_t output_len;   /* tokens; -1 when the source gives none */
  int64_t timestamp_ns; /* relative to the earliest row; -1 when none */
  uint32_t *hash_ids;   /* Mooncake prefix-block ids; NULL when none */
  size_t n_hash_ids;
  /* Compact serialized JSON object to merge into the request body (parse it
   * with json_loads); NULL when none. Kept as text so this header does not
   * depend on jansson. */
  char *extra;
  size_t line; /* 1-based source line */
};

struct im_dataset {
  struct im_ds_item *items; /* owned; freed by im_dataset_cleanup */
  size_t n;
  size_t cap;
  size_t n_skipped;  /* sharegpt objects without a human/gpt pair */
  size_t n_filtered; /* sharegpt items dropped by the length filters */
  bool ts_sorted;    /* timestamps non-decreasing in file order */
};

/* Counts the tokens of text[0..len); ud is im_ds_opts.count_ud. */
typedef size_t (*im_ds_count_fn)(const char *text, size_t len, void *ud);

struct im_ds_opts {
  size_t max_line;  /* bytes, line formats; default 1 MiB */
  size_t max_items; /* default 16,000,000 */
  size_t max_file;  /* bytes, sharegpt (read whole); default 1 GiB */
  /* Token counter for sharegpt text. NULL: an estimate of one token per 4
   * UTF-8 characters (rounded up), the usual rule of thumb for English BPE
   * vocabularies, until a tokenizer is available. */
  im_ds_count_fn count;
  void *count_ud;
  /* sharegpt length filters in tokens, inclusive; a max of 0 is no bound. */
  size_t min_prompt_len, max_prompt_len;
  size_t min_output_len, max_output_len;
};

/* Fills o with the defaults above (no filters, estimated counts). */
void im_ds_opts_init(struct im_ds_opts *o);

/* "sharegpt", "jsonl", "mooncake" or "azure" -> *out; IM_INVAL otherwise. */
enum im_err im_ds_format_parse(const char *name, enum im_ds_format *out) IM_WUR;
/* Static name of a format; "unknown" outside the enum. */
const char *im_ds_format_name(enum im_ds_format fmt);

/* Reads path in format fmt into ds (whose previous contents are ignored, not
 * freed). o may be NULL for the defaults. On failure ds is left empty (no
 * cleanup needed, though it is harmless) and msg (if msg_len > 0) says why;
 * on success msg is "". IM_NOTFOUND/IM_SYS when the file cannot be opened. */
enum im_err im_dataset_load(struct im_dataset *ds, const char *path, enum im_ds_format fmt,
                            const struct im_ds_opts *o, char *msg, size_t msg_len) IM_WUR;
/* Same, from data[0..len); name stands for the file in messages. */
enum im_err im_dataset_load_mem(struct im_dataset *ds, const char *name, const void *data,
                                size_t len, enum im_ds_format fmt, const struct im_ds_opts *o,
                                char *msg, size_t msg_len) IM_WUR;
/* Frees every item; ds is empty afterwards. NULL ok. */
void im_dataset_cleanup(struct im_dataset *ds);

#endif
