/* Retry-After (retry_after.h). The date forms follow RFC 9110 §5.6.7; RFC
 * 850's two-digit year is read as the RFC says (a year more than 50 years
 * in the future is taken as the past century's), relative to now_s. */
#include "proto/retry_after.h"

#include <stdbool.h>
#include <string.h>

#include "core/clock.h"

static const char *const wkday[7] = {"Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"};
static const char *const weekday[7] = {"Monday", "Tuesday",  "Wednesday", "Thursday",
                                       "Friday", "Saturday", "Sunday"};
static const char *const months[12] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                       "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};

struct cur {
  const char *p, *end;
};

static bool lit(struct cur *c, const char *s) {
  size_t n = strlen(s);
  if ((size_t)(c->end - c->p) < n || memcmp(c->p, s, n))
    return false;
  c->p += n;
  return true;
}

/* Exactly `digits` digits (1..4). */
static bool num(struct cur *c, int digits, int *out) {
  int v = 0;
  if (c->end - c->p < digits)
    return false;
  for (int i = 0; i < digits; i++) {
    if (c->p[i] < '0' || c->p[i] > '9')
      return false;
    v = v * 10 + (c->p[i] - '0');
  }
  c->p += digits;
  *out = v;
  return true;
}

static int name_index(struct cur *c, const char *const *names, int n) {
  for (int i = 0; i < n; i++)
    if (lit(c, names[i]))
      return i;
  return -1;
}

static bool valid_date(int y, int m, int d, int hh, int mm, int ss) {
  static const int mdays[12] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
  if (m < 1 || m > 12 || d < 1 || d > mdays[m - 1] || (m == 2 && d == 29 && !leap))
    return false;
  return hh <= 23 && mm <= 59 && ss <= 60; /* 60: a leap second */
}

static bool time_of_day(struct cur *c, int *hh, int *mm, int *ss) {
  return num(c, 2, hh) && lit(c, ":") && num(c, 2, mm) && lit(c, ":") && num(c, 2, ss);
}

/* The three HTTP-date forms; *t the Unix time. */
static bool http_date(struct cur *c, int64_t now_s, int64_t *t) {
  int y = 0, m = 0, d = 0, hh = 0, mm = 0, ss = 0;
  struct cur save = *c;
  if (name_index(c, weekday, 7) >= 0 && lit(c, ", ")) { /* RFC 850 */
    int yy;
    if (!(num(c, 2, &d) && lit(c, "-") && (m = name_index(c, months, 12) + 1) > 0 && lit(c, "-") &&
          num(c, 2, &yy) && lit(c, " ") && time_of_day(c, &hh, &mm, &ss) && lit(c, " GMT")))
      return false;
    int64_t now_y = 1970 + now_s / 31556952; /* close enough to pick a century */
    y = (int)(now_y / 100 * 100) + yy;
    if (y > now_y + 50)
      y -= 100;
  } else {
    *c = save;
    if (name_index(c, wkday, 7) < 0)
      return false;
    if (lit(c, ", ")) { /* IMF-fixdate */
      if (!(num(c, 2, &d) && lit(c, " ") && (m = name_index(c, months, 12) + 1) > 0 &&
            lit(c, " ") && num(c, 4, &y) && lit(c, " ") && time_of_day(c, &hh, &mm, &ss) &&
            lit(c, " GMT")))
        return false;
    } else if (lit(c, " ")) { /* asctime: day is 2DIGIT or SP 1DIGIT */
      if ((m = name_index(c, months, 12) + 1) <= 0 || !lit(c, " "))
        return false;
      if (!(lit(c, " ") ? num(c, 1, &d) : num(c, 2, &d)))
        return false;
      if (!(lit(c, " ") && time_of_day(c, &hh, &mm, &ss) && lit(c, " ") && num(c, 4, &y)))
        return false;
    } else {
      return false;
    }
  }
  if (!valid_date(y, m, d, hh, mm, ss))
    return false;
  *t = im_days_from_civil(y, m, d) * 86400 + hh * 3600 + mm * 60 + ss;
  return true;
}

static bool ows(char ch) {
  return ch == ' ' || ch == '\t';
}

enum im_err im_retry_after_parse(const char *v, size_t n, int64_t now_s, int64_t *delay_s) {
  struct cur c = {v, v + n};
  while (c.p < c.end && ows(*c.p))
    c.p++;
  while (c.end > c.p && (ows(c.end[-1]) || c.end[-1] == '\r' || c.end[-1] == '\n'))
    c.end--;
  if (c.p == c.end)
    return IM_PARSE;
  if (*c.p >= '0' && *c.p <= '9') {
    int64_t s = 0;
    for (; c.p < c.end; c.p++) {
      if (*c.p < '0' || *c.p > '9')
        return IM_PARSE;
      if (s < IM_RETRY_AFTER_MAX_S)
        s = s * 10 + (*c.p - '0');
    }
    *delay_s = s > IM_RETRY_AFTER_MAX_S ? IM_RETRY_AFTER_MAX_S : s;
    return IM_OK;
  }
  int64_t t;
  if (!http_date(&c, now_s, &t) || c.p != c.end)
    return IM_PARSE;
  int64_t d = t - now_s;
  *delay_s = d < 0 ? 0 : d > IM_RETRY_AFTER_MAX_S ? IM_RETRY_AFTER_MAX_S : d;
  return IM_OK;
}
