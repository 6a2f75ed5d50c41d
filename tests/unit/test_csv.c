/* The CSV writer (report/csv.h): RFC 4180 quoting of each special
 * character, CRLF rows, every row as wide as the header, requests.jsonl's
 * columns in order of first appearance (a key missing from a line: an
 * empty field; arrays left out; nested objects flattened), bad lines
 * skipped, derived latencies by docs/metrics.md §1, and summary.csv's one
 * row per stage with the text results.json would hold. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "check.h"
#include "report/csv.h"

/* What f holds, as a string (heap). */
static char *slurp(FILE *f) {
  long n = ftell(f);
  char *s = calloc(1, (size_t)n + 1);
  rewind(f);
  if (s && fread(s, 1, (size_t)n, f) != (size_t)n)
    s[0] = '\0';
  return s;
}

static char *field(const char *in) {
  FILE *f = tmpfile();
  CHECK_OK(im_csv_field(f, in, strlen(in)));
  char *s = slurp(f);
  fclose(f);
  return s;
}

static void test_field(void) {
  struct { const char *in, *out; } cases[] = {
      {"plain", "plain"},
      {"", ""},
      {"a,b", "\"a,b\""},
      {"say \"hi\"", "\"say \"\"hi\"\"\""},
      {"two\nlines", "\"two\nlines\""},
      {"cr\r", "\"cr\r\""},
      {"\"", "\"\"\"\""},
      {" spaces kept ", " spaces kept "},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char *s = field(cases[i].in);
    CHECK_STR(s, cases[i].out);
    free(s);
  }
}

static void test_requests(void) {
  char path[] = "/tmp/test_csv_XXXXXX";
  int fd = mkstemp(path);
  CHECK(fd >= 0);
  const char *jsonl =
      "{\"id\":1,\"kind\":\"measured\",\"t_start\":1000000,\"t_first\":21000000,"
      "\"t_last\":61000000,\"output_tokens\":5,\"finish_reason\":\"a,b \\\"q\\\"\\nend\","
      "\"chunks_us\":[1,2,3],\"x\":{\"y\":1.5}}\n"
      "not json at all\n"
      "{\"id\":2,\"kind\":\"warmup\",\"t_start\":0,\"t_first\":null,\"t_last\":null,"
      "\"output_tokens\":0,\"error\":\"connect\",\"late\":true,\"big\":160.0}\n";
  CHECK_EQ(write(fd, jsonl, strlen(jsonl)), (long long)strlen(jsonl));
  close(fd);
  FILE *f = tmpfile();
  size_t rows = 99;
  char why[256] = "";
  CHECK_OK(im_csv_requests(path, f, &rows, why, sizeof why));
  CHECK_EQ(rows, 2);
  char *s = slurp(f);
  const char *want =
      "id,kind,t_start,t_first,t_last,output_tokens,finish_reason,x.y,error,late,big,"
      "ttft_ms,tpot_ms,e2el_ms\r\n"
      "1,measured,1000000,21000000,61000000,5,\"a,b \"\"q\"\"\nend\",1.5,,,,20.0,10.0,60.0\r\n"
      "2,warmup,0,,,0,,,connect,true,160.0,,,\r\n";
  CHECK_STR(s, want);
  free(s);
  fclose(f);

  /* A file that is not there: an error naming it. */
  unlink(path);
  f = tmpfile();
  CHECK_EQ(im_csv_requests(path, f, &rows, why, sizeof why), IM_IO);
  CHECK(strstr(why, path) != NULL);
  fclose(f);
}

static void test_summary(void) {
  /* One stage: the root's summary, results.json's number text. */
  json_t *one = json_pack("{s:{s:f, s:i, s:n, s:{s:s}, s:f}}", "summary", "request_throughput",
                          17.093730211550056, "completed", 10, "request_goodput",
                          "null_reasons", "request_goodput", "no SLO given", "p99.9_ttft_ms",
                          81.5);
  FILE *f = tmpfile();
  CHECK_OK(im_csv_summary(one, f));
  char *s = slurp(f);
  CHECK_STR(s, "stage,label,request_throughput,completed,request_goodput,"
               "null_reasons.request_goodput,p99.9_ttft_ms\r\n"
               "0,,17.09373021,10,,no SLO given,81.5\r\n");
  free(s);
  fclose(f);
  json_decref(one);

  /* Stages: one row each, the union of their keys. */
  json_t *two = json_pack("{s:[{s:i, s:s, s:{s:i}}, {s:i, s:s, s:{s:i, s:f}}]}", "stages",
                          "index", 0, "label", "rate=1", "summary", "completed", 3, "index", 1,
                          "label", "rate=2, \"fast\"", "summary", "completed", 4, "extra", 2.0);
  f = tmpfile();
  CHECK_OK(im_csv_summary(two, f));
  s = slurp(f);
  CHECK_STR(s, "stage,label,completed,extra\r\n0,rate=1,3,\r\n1,\"rate=2, \"\"fast\"\"\",4,2.0\r\n");
  free(s);
  fclose(f);
  json_decref(two);
}

int main(void) {
  test_field();
  test_requests();
  test_summary();
  return CHECK_DONE();
}
