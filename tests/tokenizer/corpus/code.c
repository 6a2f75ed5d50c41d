/* A small C program used as tokenizer test input. */
#include <stdint.h>
#include <stdio.h>

#define MAX_ITEMS 128u

struct item {
  uint32_t id;
  double weight;
  const char *name;
};

static int cmp_items(const void *a, const void *b) {
  const struct item *x = a, *y = b;
  return (x->weight > y->weight) - (x->weight < y->weight);
}

int main(int argc, char **argv) {
	struct item items[MAX_ITEMS] = {{0}};
	size_t n = 0;
	for (int i = 1; i < argc && n < MAX_ITEMS; i++) {
		items[n].id = (uint32_t)i;
		items[n].weight = 1.0 / (double)i + 0x1p-3;
		items[n++].name = argv[i];
	}
	qsort(items, n, sizeof *items, cmp_items);
	printf("%zu items, first=%s\n", n, n ? items[0].name : "(none)");
	if (n >= 2 && items[0].id != items[1].id) { x <<= 2; y >>= 3; z ^= ~w; p->q->r++; }
	return n == 0 ? 1 : 0; // done
}
