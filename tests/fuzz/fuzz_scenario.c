/* Fuzz target for scenario files (`infermeter run --scenario FILE`,
 * src/cli/run_scenario.c), and through them every option parser of `run`:
 * a scenario's keys are run's long options and its values their arguments.
 *
 * Input: the file. Checks: loading returns 0 with the JSON kept for the
 * options to point into, or -1 (after a message) with nothing kept; never a
 * crash, a leak or an exit. Messages go to stderr; libFuzzer's -close_fd_mask
 * silences them in long runs. */
#include <jansson.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "cli/run_agents.h"
#include "cli/run_cli.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  int fd = memfd_create("scenario", 0);
  if (fd < 0)
    return 0;
  if (size && write(fd, data, size) != (ssize_t)size) {
    close(fd);
    return 0;
  }
  char path[64];
  snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
  struct im_run_config o;
  im_run_config_default(&o);
  json_t *keep = NULL;
  int rc = im__run_scenario_load(&o, path, &keep);
  REQUIRE(rc == 0 || rc == -1);
  REQUIRE((rc == 0) == (keep != NULL));
  json_decref(keep);
  im__run_agent_cleanup(&o.agent); /* what the options own, as run.c frees it */
  close(fd);
  return 0;
}
