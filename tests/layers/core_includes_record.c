/* Must NOT compile: core/ depends on nothing of ours. */
#include "record/record.h"
int im_layers_case(void);
int im_layers_case(void) { return 0; }
