/* Seeded pseudo-random numbers: xoshiro256** (Blackman & Vigna, 2018,
 * https://prng.di.unimi.it/) seeded through splitmix64, plus the hashes the
 * project uses for deterministic per-id values (FNV-1a 64-bit).
 *
 * Each stream is a caller-embedded struct; no global state. Not thread-safe
 * per instance: give every thread its own. */
#ifndef INFERMETER_RNG_H
#define INFERMETER_RNG_H

#include <stddef.h>
#include <stdint.h>

struct im_rng {
  uint64_t s[4];
};

/* Seeds the generator; any seed (0 included) gives a valid state. */
void im_rng_seed(struct im_rng *rng, uint64_t seed);
uint64_t im_rng_u64(struct im_rng *rng);
/* Uniform in [0, n) without modulo bias; n == 0 returns 0. */
uint64_t im_rng_below(struct im_rng *rng, uint64_t n);
/* Uniform double in [0, 1), 53 random bits. */
double im_rng_uniform(struct im_rng *rng);
/* Standard normal (Marsaglia polar method). */
double im_rng_normal(struct im_rng *rng);
/* Exponential with mean 1. */
double im_rng_exp(struct im_rng *rng);
/* Gamma(shape k > 0, scale 1), Marsaglia & Tsang (2000). */
double im_rng_gamma(struct im_rng *rng, double shape);

/* FNV-1a 64-bit hash of a byte string (deterministic across platforms). */
uint64_t im_fnv1a64(const void *data, size_t len);
/* splitmix64 finaliser: a bijective 64-bit mix, for combining seeds. */
uint64_t im_mix64(uint64_t x);

#endif
