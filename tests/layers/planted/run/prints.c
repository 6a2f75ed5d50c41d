/* Planted for layers_library_detects: a library file that prints must be
 * found by tests/layers/check_library.sh. Never compiled. */
#include <stdio.h>
void im_layers_planted(void);
void im_layers_planted(void) { fprintf(stderr, "a library never prints\n"); }
