#include <stdio.h>

#include "cli/cli.h"

int im_cli_serve(int argc, char **argv) {
  (void)argc;
  (void)argv;
  fprintf(stderr, "infermeter serve: under construction\n");
  return 1;
}
