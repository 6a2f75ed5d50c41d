/* Must NOT compile: results/ never uses run/ (a directory is reported the
 * same whoever wrote it). Built only by the CTest case
 * layers_results_includes_run, which expects failure. */
#include "run/run.h"
int im_layers_case(void);
int im_layers_case(void) { return 0; }
