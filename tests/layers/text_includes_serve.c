/* Must NOT compile: text/ sits below serve/ (docs/architecture.md). Built
 * only by the CTest case layers_text_includes_serve, which expects failure. */
#include "serve/server.h"
int im_layers_case(void);
int im_layers_case(void) { return 0; }
