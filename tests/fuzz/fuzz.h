/* What every fuzz target shares: libFuzzer's entry point (also called by
 * replay_main.c without libFuzzer) and REQUIRE, a check that aborts with
 * the failed condition and its place, so the fuzzer records the input. */
#ifndef IM_TESTS_FUZZ_H
#define IM_TESTS_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define REQUIRE(cond)                                                                              \
  do {                                                                                             \
    if (!(cond)) {                                                                                 \
      fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, #cond);                                   \
      abort();                                                                                     \
    }                                                                                              \
  } while (0)

#endif
