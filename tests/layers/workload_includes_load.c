/* Must NOT compile: workload/ sits below load/ (it hands requests to the
 * engine through workload/spec.h and never sees the engine). */
#include "load/loader.h"
int im_layers_case(void);
int im_layers_case(void) { return 0; }
