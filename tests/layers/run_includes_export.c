/* Must NOT compile: run/ never includes export/ (sinks attach through
 * struct im_run_hooks). Built only by the CTest case
 * layers_run_includes_export, which expects failure. */
#include "export/otlp.h"
int im_layers_case(void);
int im_layers_case(void) { return 0; }
