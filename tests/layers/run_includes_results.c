/* Must NOT compile: run/ and results/ never use each other (the run writes
 * a directory; results/ reads it back). Built only by the CTest case
 * layers_run_includes_results, which expects failure. */
#include "results/results.h"
int im_layers_case(void);
int im_layers_case(void) { return 0; }
