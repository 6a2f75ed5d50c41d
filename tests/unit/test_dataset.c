/* Tests of the dataset and trace readers. */
#include "workload/dataset.h"

#include "check.h"

static char msg[512];

static enum im_err load_mem(struct im_dataset *ds, enum im_ds_format fmt, const char *text,
                            const struct im_ds_opts *o) {
  return im_dataset_load_mem(ds, "t.in", text, strlen(text), fmt, o, msg, sizeof msg);
}

/* Loading text must fail with err and a message starting with want. */
static void expect_fail(enum im_ds_format fmt, const char *text, enum im_err err, const char *want,
                        const struct im_ds_opts *o, int line) {
  struct im_dataset ds;
  enum im_err r = load_mem(&ds, fmt, text, o);
  im_test_checks++;
  if (r != err || strncmp(msg, want, strlen(want)) != 0)
    IM__FAIL("line %d: got %d \"%s\", want %d \"%s...\"", line, (int)r, msg, (int)err, want);
  CHECK_EQ(ds.n, 0);
  CHECK(ds.items == NULL);
  im_dataset_cleanup(&ds);
}
#define EXPECT_FAIL(fmt, text, err, want) expect_fail(fmt, text, err, want, NULL, __LINE__)

static void test_formats(void) {
  enum im_ds_format f;
  CHECK_OK(im_ds_format_parse("mooncake", &f));
  CHECK_EQ(f, IM_DS_MOONCAKE);
  CHECK_EQ(im_ds_format_parse("csv", &f), IM_INVAL);
  CHECK_STR(im_ds_format_name(IM_DS_AZURE), "azure");
  CHECK_STR(im_ds_format_name((enum im_ds_format)42), "unknown");
  im_dataset_cleanup(NULL);
}

static void test_sharegpt_fixture(void) {
  struct im_dataset ds;
  CHECK_OK(im_dataset_load(&ds, "tests/fixtures/datasets/sharegpt-small.json", IM_DS_SHAREGPT, NULL,
                           msg, sizeof msg));
  CHECK_STR(msg, "");
  CHECK_EQ(ds.n, 4);
  CHECK_EQ(ds.n_skipped, 2);
  CHECK_EQ(ds.n_filtered, 0);
  if (ds.n == 4) {
    CHECK_STR(ds.items[0].prompt, "What is a prime number?");
    CHECK_EQ(ds.items[0].input_len, 6);   /* 23 chars / 4, rounded up */
    CHECK_EQ(ds.items[0].output_len, 23); /* 89 chars */
    CHECK_EQ(ds.items[0].line, 2);
    CHECK_EQ(ds.items[0].timestamp_ns, -1);
    CHECK(ds.items[0].messages == NULL && ds.items[0].hash_ids == NULL);
    CHECK_STR(ds.items[1].prompt, "Name a color."); /* "items" key */
    CHECK_EQ(ds.items[1].line, 11);
    CHECK_EQ(ds.items[1].output_len, 2);
    CHECK_STR(ds.items[2].prompt, "Write one sentence about the sea at night, please.");
    CHECK_EQ(ds.items[2].input_len, 13);
    CHECK_EQ(ds.items[2].output_len, 25);
    CHECK_EQ(ds.items[2].line, 18);
    /* characters, not bytes: 21 and 22 characters */
    CHECK_EQ(ds.items[3].input_len, 6);
    CHECK_EQ(ds.items[3].output_len, 6);
    CHECK_EQ(ds.items[3].line, 36);
  }
  im_dataset_cleanup(&ds);
  CHECK_EQ(ds.n, 0);
}

static size_t count_bytes(const char *s, size_t n, void *ud) {
  (void)s;
  (*(int *)ud)++;
  return n;
}

static void test_sharegpt_filters(void) {
  struct im_ds_opts o;
  struct im_dataset ds;
  int calls = 0;
  im_ds_opts_init(&o);
  o.count = count_bytes;
  o.count_ud = &calls;
  o.min_prompt_len = 14; /* drops "Name a color." (13) */
  o.max_output_len = 90; /* drops the sea answer (97) */
  o.min_output_len = 6;  /* keeps "Teal." out anyway */
  CHECK_OK(im_dataset_load(&ds, "tests/fixtures/datasets/sharegpt-small.json", IM_DS_SHAREGPT, &o,
                           msg, sizeof msg));
  CHECK_EQ(calls, 8);
  CHECK_EQ(ds.n, 2);
  CHECK_EQ(ds.n_filtered, 2);
  if (ds.n == 2) {
    CHECK_EQ(ds.items[0].input_len, 23);
    CHECK_EQ(ds.items[0].output_len, 89);
    CHECK_EQ(ds.items[1].input_len, 25); /* bytes of the UTF-8 prompt */
  }
  im_dataset_cleanup(&ds);

  im_ds_opts_init(&o);
  o.max_prompt_len = 6;
  CHECK_OK(im_dataset_load(&ds, "tests/fixtures/datasets/sharegpt-small.json", IM_DS_SHAREGPT, &o,
                           msg, sizeof msg));
  CHECK_EQ(ds.n, 3);
  im_dataset_cleanup(&ds);

  im_ds_opts_init(&o);
  o.max_items = 3;
  CHECK_EQ(im_dataset_load(&ds, "tests/fixtures/datasets/sharegpt-small.json", IM_DS_SHAREGPT, &o,
                           msg, sizeof msg),
           IM_LIMIT);
  CHECK_STR(msg, "tests/fixtures/datasets/sharegpt-small.json:36: more than 3 items (the item "
                 "limit)");
  CHECK_EQ(ds.n, 0);

  im_ds_opts_init(&o);
  o.max_file = 100;
  CHECK_EQ(im_dataset_load(&ds, "tests/fixtures/datasets/sharegpt-small.json", IM_DS_SHAREGPT, &o,
                           msg, sizeof msg),
           IM_LIMIT);
  CHECK(strstr(msg, "sharegpt-small.json:1: larger than 100 bytes") != NULL);

  CHECK_EQ(im_dataset_load(&ds, "tests/fixtures/datasets/nope.json", IM_DS_SHAREGPT, NULL, msg,
                           sizeof msg),
           IM_NOTFOUND);
  CHECK(strstr(msg, "nope.json: cannot open") != NULL);
}

static void test_sharegpt_malformed(void) {
  CHECK_OK(load_mem(&(struct im_dataset){0}, IM_DS_SHAREGPT, " [ ]\n", NULL));
  EXPECT_FAIL(IM_DS_SHAREGPT, "", IM_PARSE, "t.in:1: expected a JSON array");
  EXPECT_FAIL(IM_DS_SHAREGPT, "\n\n{\"conversations\": []}", IM_PARSE,
              "t.in:3: expected a JSON array");
  EXPECT_FAIL(IM_DS_SHAREGPT, "[\n{\"conversations\": [\n{\"from\": \"human\",", IM_PARSE,
              "t.in:3: item 0: invalid JSON");
  EXPECT_FAIL(IM_DS_SHAREGPT, "[\n{\"conversations\": []},\n", IM_PARSE,
              "t.in:3: truncated JSON: the array is not closed");
  EXPECT_FAIL(IM_DS_SHAREGPT, "[{\"conversations\": []}\n{\"a\": 1}]", IM_PARSE,
              "t.in:2: expected ',' or ']' after item 0");
  EXPECT_FAIL(IM_DS_SHAREGPT, "[{\"conversations\": []}] x", IM_PARSE,
              "t.in:1: unexpected data after the array");
  EXPECT_FAIL(IM_DS_SHAREGPT, "[\n{\"conversations\": []},\n 7]", IM_PARSE,
              "t.in:3: item 1: expected an object");
  EXPECT_FAIL(IM_DS_SHAREGPT, "[\n{\"conversations\": []},\n\n{\"id\": \"x\"}]", IM_PARSE,
              "t.in:4: item 1: missing \"conversations\"");
  EXPECT_FAIL(IM_DS_SHAREGPT, "[{\"conversations\": {}}]", IM_PARSE,
              "t.in:1: item 0: \"conversations\" must be an array");
  EXPECT_FAIL(IM_DS_SHAREGPT, "[\n {\"conversations\": [{\"from\": \"human\", \"value\": 3}]}]",
              IM_PARSE, "t.in:2: item 0: conversations[0] must be an object with string");
}

static void test_jsonl(void) {
  struct im_dataset ds;
  CHECK_OK(im_dataset_load(&ds, "scenarios/traces/example-requests.jsonl", IM_DS_JSONL, NULL, msg,
                           sizeof msg));
  CHECK_EQ(ds.n, 30);
  CHECK(ds.ts_sorted);
  if (ds.n == 30) {
    struct im_ds_item *a = &ds.items[0], *b = &ds.items[1], *z = &ds.items[29];
    CHECK_STR(a->prompt, "Explain how a hash table handles collisions.");
    CHECK_EQ(a->output_len, 67);
    CHECK_EQ(a->timestamp_ns, 0); /* 50 ms in the file, relative to the first */
    CHECK_STR(a->extra, "{\"temperature\":0.0}");
    CHECK_EQ(a->input_len, -1);
    CHECK_EQ(a->line, 1);
    CHECK(b->prompt == NULL);
    CHECK_EQ(b->n_messages, 2);
    if (b->n_messages == 2) {
      CHECK_STR(b->messages[0].role, "system");
      CHECK_STR(b->messages[1].content, "Write a haiku about autumn rain.");
    }
    CHECK_EQ(b->timestamp_ns, 250000000);
    CHECK(b->extra == NULL);
    CHECK_EQ(z->timestamp_ns, 3260LL * 1000000);
    CHECK_EQ(z->line, 30);
  }
  im_dataset_cleanup(&ds);

  /* blank lines, CRLF, fractional ms, no timestamps on some lines */
  CHECK_OK(load_mem(&ds, IM_DS_JSONL,
                    "\n{\"prompt\": \"a\", \"timestamp_ms\": 10.5}\r\n  \n"
                    "{\"prompt\": \"b\"}\n{\"prompt\": \"c\", \"timestamp_ms\": 2}",
                    NULL));
  CHECK_EQ(ds.n, 3);
  if (ds.n == 3) {
    CHECK_EQ(ds.items[0].line, 2);
    CHECK_EQ(ds.items[0].timestamp_ns, 8500000);
    CHECK_EQ(ds.items[1].timestamp_ns, -1);
    CHECK_EQ(ds.items[1].line, 4);
    CHECK_EQ(ds.items[2].timestamp_ns, 0);
  }
  CHECK(!ds.ts_sorted);
  im_dataset_cleanup(&ds);
}

static void test_jsonl_malformed(void) {
  EXPECT_FAIL(IM_DS_JSONL, "{\"prompt\": \"a\"}\n{\"prompt\": \"b\"", IM_PARSE,
              "t.in:2: invalid JSON at column");
  EXPECT_FAIL(IM_DS_JSONL, "[1]\n", IM_PARSE, "t.in:1: expected a JSON object");
  EXPECT_FAIL(IM_DS_JSONL, "{\"prompt\": \"a\"}\n\n{\"output_len\": 3}", IM_PARSE,
              "t.in:3: missing \"prompt\" or \"messages\"");
  EXPECT_FAIL(IM_DS_JSONL, "{\"prompt\": 5}", IM_PARSE, "t.in:1: \"prompt\" must be a string");
  EXPECT_FAIL(IM_DS_JSONL, "{\"prompt\": \"a\", \"output_len\": \"9\"}", IM_PARSE,
              "t.in:1: \"output_len\" must be a non-negative integer");
  EXPECT_FAIL(IM_DS_JSONL, "{\"prompt\": \"a\", \"output_len\": -1}", IM_PARSE,
              "t.in:1: \"output_len\" must be a non-negative integer");
  EXPECT_FAIL(IM_DS_JSONL, "{\"prompt\": \"a\", \"timestamp_ms\": \"now\"}", IM_PARSE,
              "t.in:1: \"timestamp_ms\" must be a non-negative number");
  EXPECT_FAIL(IM_DS_JSONL, "{\"prompt\": \"a\", \"extra\": [1]}", IM_PARSE,
              "t.in:1: \"extra\" must be an object");
  EXPECT_FAIL(IM_DS_JSONL, "{\"messages\": []}", IM_PARSE,
              "t.in:1: \"messages\" must be a non-empty array");
  EXPECT_FAIL(IM_DS_JSONL, "{\"prompt\":\"x\"}\n{\"messages\": [{\"role\": \"user\"}]}", IM_PARSE,
              "t.in:2: messages[0] must be an object");

  struct im_ds_opts o;
  im_ds_opts_init(&o);
  o.max_line = 20;
  struct im_dataset ds;
  CHECK_OK(load_mem(&ds, IM_DS_JSONL, "{\"prompt\": \"123456\"}\r\n", &o)); /* exactly 20 */
  im_dataset_cleanup(&ds);
  expect_fail(IM_DS_JSONL, "{\"prompt\": \"a\"}\n{\"prompt\": \"1234567\"}\n", IM_LIMIT,
              "t.in:2: line longer than 20 bytes", &o, __LINE__);
  o.max_items = 2;
  expect_fail(IM_DS_JSONL, "{\"prompt\": \"a\"}\n{\"prompt\": \"b\"}\n{\"prompt\": \"c\"}\n",
              IM_LIMIT, "t.in:3: more than 2 items", &o, __LINE__);
}

static void test_mooncake(void) {
  struct im_dataset ds;
  CHECK_OK(im_dataset_load(&ds, "scenarios/traces/example-mooncake.jsonl", IM_DS_MOONCAKE, NULL,
                           msg, sizeof msg));
  CHECK_EQ(ds.n, 40);
  CHECK(ds.ts_sorted);
  if (ds.n == 40) {
    struct im_ds_item *a = &ds.items[0], *b = &ds.items[1], *z = &ds.items[39];
    CHECK_EQ(a->timestamp_ns, 0);
    CHECK_EQ(a->input_len, 1535);
    CHECK_EQ(a->output_len, 343);
    CHECK_EQ(a->n_hash_ids, 3);
    if (a->n_hash_ids == 3) {
      CHECK_EQ(a->hash_ids[0], 0);
      CHECK_EQ(a->hash_ids[1], 1);
      CHECK_EQ(a->hash_ids[2], 100);
    }
    CHECK(a->prompt == NULL);
    CHECK_EQ(b->timestamp_ns, 49000000);
    CHECK_EQ(b->n_hash_ids, 2);
    CHECK_EQ(z->timestamp_ns, 15460LL * 1000000);
    CHECK_EQ(z->n_hash_ids, 10);
    if (z->n_hash_ids == 10)
      CHECK_EQ(z->hash_ids[9], 305);
  }
  im_dataset_cleanup(&ds);

  CHECK_OK(load_mem(&ds, IM_DS_MOONCAKE,
                    "{\"timestamp\": 0, \"input_length\": 1, \"output_length\": 2}\n"
                    "{\"timestamp\": 1, \"input_length\": 1, \"output_length\": 2, "
                    "\"hash_ids\": [4294967295]}\n",
                    NULL));
  CHECK_EQ(ds.n, 2);
  if (ds.n == 2) {
    CHECK_EQ(ds.items[0].n_hash_ids, 0);
    CHECK(ds.items[0].hash_ids == NULL);
    CHECK_EQ(ds.items[1].hash_ids[0], 4294967295u);
  }
  im_dataset_cleanup(&ds);

  EXPECT_FAIL(IM_DS_MOONCAKE, "{\"timestamp\": 0, \"input_length\": 1, \"output_length\": 2",
              IM_PARSE, "t.in:1: invalid JSON");
  EXPECT_FAIL(IM_DS_MOONCAKE,
              "{\"timestamp\": 0, \"input_length\": 1, \"output_length\": 2}\n"
              "{\"timestamp\": 5, \"output_length\": 2}",
              IM_PARSE, "t.in:2: missing \"input_length\"");
  EXPECT_FAIL(IM_DS_MOONCAKE, "{\"input_length\": 1, \"output_length\": 2}", IM_PARSE,
              "t.in:1: missing \"timestamp\"");
  EXPECT_FAIL(IM_DS_MOONCAKE, "{\"timestamp\": -3, \"input_length\": 1, \"output_length\": 2}",
              IM_PARSE, "t.in:1: \"timestamp\" must be a non-negative number");
  EXPECT_FAIL(IM_DS_MOONCAKE, "{\"timestamp\": 1, \"input_length\": 1.5, \"output_length\": 2}",
              IM_PARSE, "t.in:1: \"input_length\" must be a non-negative integer");
  EXPECT_FAIL(IM_DS_MOONCAKE,
              "{\"timestamp\": 1, \"input_length\": 1, \"output_length\": 2, \"hash_ids\": 7}",
              IM_PARSE, "t.in:1: \"hash_ids\" must be an array");
  EXPECT_FAIL(IM_DS_MOONCAKE,
              "{\"timestamp\": 1, \"input_length\": 1, \"output_length\": 2, "
              "\"hash_ids\": [1, 4294967296]}",
              IM_PARSE, "t.in:1: hash_ids[1] must be an integer in [0, 2^32)");
}

static void test_azure(void) {
  struct im_dataset ds;
  CHECK_OK(im_dataset_load(&ds, "scenarios/traces/example-azure.csv", IM_DS_AZURE, NULL, msg,
                           sizeof msg));
  CHECK_EQ(ds.n, 36);
  CHECK(ds.ts_sorted);
  if (ds.n == 36) {
    CHECK_EQ(ds.items[0].timestamp_ns, 0);
    CHECK_EQ(ds.items[0].input_len, 1751);
    CHECK_EQ(ds.items[0].output_len, 372);
    CHECK_EQ(ds.items[0].line, 2);
    CHECK_EQ(ds.items[1].timestamp_ns, 1276549100);
    CHECK_EQ(ds.items[35].timestamp_ns, 37265704300LL);
    CHECK_EQ(ds.items[35].line, 37);
  }
  im_dataset_cleanup(&ds);

  /* numeric seconds; lower-case header with spaces and CRLF */
  CHECK_OK(load_mem(&ds, IM_DS_AZURE,
                    "timestamp, contexttokens, generatedtokens\r\n10.5,100,20\r\n12,7,0\r\n",
                    NULL));
  CHECK_EQ(ds.n, 2);
  if (ds.n == 2) {
    CHECK_EQ(ds.items[0].timestamp_ns, 0);
    CHECK_EQ(ds.items[1].timestamp_ns, 1500000000);
    CHECK_EQ(ds.items[1].output_len, 0);
  }
  im_dataset_cleanup(&ds);

  /* date across midnight and a leap day, with a time zone suffix */
  CHECK_OK(load_mem(&ds, IM_DS_AZURE,
                    "TIMESTAMP,ContextTokens,GeneratedTokens\n"
                    "2024-02-28 23:59:59.5+00:00,1,1\n"
                    "2024-02-29T01:00:00.5Z,1,1\n"
                    "2024-03-01 02:00:00.123456789999+01:00,1,1\n",
                    NULL));
  CHECK_EQ(ds.n, 3);
  if (ds.n == 3) {
    CHECK_EQ(ds.items[1].timestamp_ns, 3601LL * 1000000000);
    CHECK_EQ(ds.items[2].timestamp_ns, (86400LL + 3600) * 1000000000 + 623456789);
  }
  im_dataset_cleanup(&ds);

  CHECK_OK(load_mem(&ds, IM_DS_AZURE, "TIMESTAMP,ContextTokens,GeneratedTokens\n", NULL));
  CHECK_EQ(ds.n, 0);
  EXPECT_FAIL(IM_DS_AZURE, "", IM_PARSE, "t.in:1: empty file");
  EXPECT_FAIL(IM_DS_AZURE, "TIMESTAMP,Context,GeneratedTokens\n1,2,3\n", IM_PARSE,
              "t.in:1: expected the header TIMESTAMP,ContextTokens,GeneratedTokens, found "
              "\"TIMESTAMP,Context,GeneratedTokens\"");
  EXPECT_FAIL(IM_DS_AZURE, "\n\nTIMESTAMP,ContextTokens\n", IM_PARSE,
              "t.in:3: expected 3 comma-separated fields, found 2");
  EXPECT_FAIL(IM_DS_AZURE, "TIMESTAMP,ContextTokens,GeneratedTokens\n1,2,3\n2,3,4,5\n", IM_PARSE,
              "t.in:3: expected 3 comma-separated fields, found 4");
  EXPECT_FAIL(IM_DS_AZURE,
              "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.68,1,1\n"
              "2023-11-16 25:00:00,1,1\n",
              IM_PARSE, "t.in:3: bad TIMESTAMP \"2023-11-16 25:00:00\"");
  EXPECT_FAIL(IM_DS_AZURE, "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-02-29 00:00:00,1,1\n",
              IM_PARSE, "t.in:2: bad TIMESTAMP");
  EXPECT_FAIL(IM_DS_AZURE, "TIMESTAMP,ContextTokens,GeneratedTokens\n9999-01-01 00:00:00,1,1\n",
              IM_PARSE, "t.in:2: bad TIMESTAMP");
  EXPECT_FAIL(IM_DS_AZURE, "TIMESTAMP,ContextTokens,GeneratedTokens\nyesterday,1,1\n", IM_PARSE,
              "t.in:2: bad TIMESTAMP \"yesterday\"");
  EXPECT_FAIL(IM_DS_AZURE, "TIMESTAMP,ContextTokens,GeneratedTokens\n-1,1,1\n", IM_PARSE,
              "t.in:2: bad TIMESTAMP \"-1\"");
  EXPECT_FAIL(IM_DS_AZURE,
              "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46,1,1\n5,1,1\n", IM_PARSE,
              "t.in:3: TIMESTAMP \"5\" is not in the first row's style");
  EXPECT_FAIL(IM_DS_AZURE, "TIMESTAMP,ContextTokens,GeneratedTokens\n1,x,1\n", IM_PARSE,
              "t.in:2: bad ContextTokens \"x\"");
  EXPECT_FAIL(IM_DS_AZURE, "TIMESTAMP,ContextTokens,GeneratedTokens\n1,1,-4\n", IM_PARSE,
              "t.in:2: bad GeneratedTokens \"-4\"");
  EXPECT_FAIL(IM_DS_AZURE, "TIMESTAMP,ContextTokens,GeneratedTokens\n1,1,\n", IM_PARSE,
              "t.in:2: bad GeneratedTokens \"\"");

  struct im_ds_opts o;
  im_ds_opts_init(&o);
  o.max_line = 40;
  expect_fail(IM_DS_AZURE,
              "TIMESTAMP,ContextTokens,GeneratedTokens\n1,1,1\n1,1,"
              "11111111111111111111111111111111111111111\n",
              IM_LIMIT, "t.in:3: line longer than 40 bytes", &o, __LINE__);
}

int main(void) {
  test_formats();
  test_sharegpt_fixture();
  test_sharegpt_filters();
  test_sharegpt_malformed();
  test_jsonl();
  test_jsonl_malformed();
  test_mooncake();
  test_azure();
  return CHECK_DONE();
}
