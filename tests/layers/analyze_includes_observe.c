/* Must NOT compile: analyze/ is pure and never sees the observers; their
 * samples reach it as plain series (record/). */
#include "observe/observer.h"
int im_layers_case(void);
int im_layers_case(void) { return 0; }
