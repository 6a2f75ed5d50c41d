/* Must NOT compile: run/ sits below cli/ (argv, option tables and the
 * terminal are the command line's). Built only by the CTest case
 * layers_run_includes_cli, which expects failure. */
#include "cli/run_cli.h"
int im_layers_case(void);
int im_layers_case(void) { return 0; }
