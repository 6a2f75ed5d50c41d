/* Replays every file of a seed corpus folder through a fuzz target, so the
 * targets build and their seeds run under the sanitizers in builds without
 * libFuzzer (gcc). */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s CORPUS_DIR\n", argv[0]);
    return 2;
  }
  DIR *dir = opendir(argv[1]);
  if (!dir) {
    perror(argv[1]);
    return 1;
  }
  int n = 0;
  struct dirent *de;
  while ((de = readdir(dir))) {
    if (de->d_name[0] == '.')
      continue;
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", argv[1], de->d_name);
    FILE *f = fopen(path, "rb");
    if (!f)
      continue;
    uint8_t *buf = malloc(1 << 20);
    size_t len = buf ? fread(buf, 1, 1 << 20, f) : 0;
    fclose(f);
    if (!buf)
      return 1;
    LLVMFuzzerTestOneInput(buf, len);
    free(buf);
    n++;
  }
  closedir(dir);
  /* An empty corpus would make this test unable to fail. */
  printf("replayed %d inputs from %s\n", n, argv[1]);
  return n > 0 ? 0 : 1;
}
