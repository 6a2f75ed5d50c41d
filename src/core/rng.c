#include "core/rng.h"

#include <math.h>

uint64_t im_mix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

void im_rng_seed(struct im_rng *rng, uint64_t seed) {
  uint64_t x = seed;
  for (int i = 0; i < 4; i++) {
    x += 0x9e3779b97f4a7c15ULL;
    rng->s[i] = im_mix64(x);
  }
}

static inline uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

uint64_t im_rng_u64(struct im_rng *rng) {
  uint64_t *s = rng->s;
  uint64_t result = rotl(s[1] * 5, 7) * 9;
  uint64_t t = s[1] << 17;
  s[2] ^= s[0];
  s[3] ^= s[1];
  s[1] ^= s[2];
  s[0] ^= s[3];
  s[2] ^= t;
  s[3] = rotl(s[3], 45);
  return result;
}

uint64_t im_rng_below(struct im_rng *rng, uint64_t n) {
  if (n == 0)
    return 0;
  /* Rejection of the top partial range keeps every residue equally likely. */
  uint64_t limit = UINT64_MAX - UINT64_MAX % n;
  uint64_t x;
  do {
    x = im_rng_u64(rng);
  } while (x >= limit);
  return x % n;
}

double im_rng_uniform(struct im_rng *rng) {
  return (double)(im_rng_u64(rng) >> 11) * 0x1.0p-53;
}

double im_rng_normal(struct im_rng *rng) {
  double u, v, s;
  do {
    u = 2.0 * im_rng_uniform(rng) - 1.0;
    v = 2.0 * im_rng_uniform(rng) - 1.0;
    s = u * u + v * v;
  } while (s >= 1.0 || s == 0.0);
  return u * sqrt(-2.0 * log(s) / s);
}

double im_rng_exp(struct im_rng *rng) {
  /* 1 - U is in (0, 1], so the log is finite. */
  return -log(1.0 - im_rng_uniform(rng));
}

double im_rng_gamma(struct im_rng *rng, double shape) {
  if (shape < 1.0) {
    /* Boost: Gamma(k) = Gamma(k + 1) * U^(1/k). */
    double u = im_rng_uniform(rng);
    return im_rng_gamma(rng, shape + 1.0) * pow(1.0 - u, 1.0 / shape);
  }
  double d = shape - 1.0 / 3.0, c = 1.0 / sqrt(9.0 * d);
  for (;;) {
    double x, v;
    do {
      x = im_rng_normal(rng);
      v = 1.0 + c * x;
    } while (v <= 0.0);
    v = v * v * v;
    double u = im_rng_uniform(rng);
    if (u < 1.0 - 0.0331 * x * x * x * x)
      return d * v;
    if (log(u) < 0.5 * x * x + d * (1.0 - v + log(v)))
      return d * v;
  }
}

uint64_t im_fnv1a64(const void *data, size_t len) {
  /* Offset basis and prime from the FNV specification (Fowler, Noll, Vo). */
  const unsigned char *p = data;
  uint64_t h = 0xcbf29ce484222325ULL;
  for (size_t i = 0; i < len; i++) {
    h ^= p[i];
    h *= 0x100000001b3ULL;
  }
  return h;
}
