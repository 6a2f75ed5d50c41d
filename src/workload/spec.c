/* See workload/spec.h. */
#include "workload/spec.h"

#include <stdlib.h>

void im_req_spec_cleanup(struct im_req_spec *s) {
  free(s->prompt);
  free(s->messages_json);
  free(s->extra_json);
  s->prompt = s->messages_json = s->extra_json = NULL;
}
