/* Byte trie of added tokens; see tokenizer_int.h. */
#include <stdlib.h>
#include <string.h>

#include "text/tokenizer_int.h"

static uint32_t new_node(struct im__tok_trie *tr, unsigned char byte) {
  if (tr->n == tr->cap) {
    size_t c = tr->cap ? tr->cap * 2 : 64;
    struct im__tok_trie_node *q = c < UINT32_MAX ? realloc(tr->nodes, c * sizeof *q) : NULL;
    if (!q)
      return 0;
    tr->nodes = q;
    tr->cap = c;
  }
  tr->nodes[tr->n] = (struct im__tok_trie_node){0, 0, -1, byte};
  return (uint32_t)tr->n++;
}

enum im_err im__tok_trie_add(struct im__tok_trie *tr, const char *s, size_t n, int32_t value) {
  if (!n)
    return IM_INVAL;
  if (!tr->n) { /* the root, node 0 (new_node's 0 means failure only after it) */
    (void)new_node(tr, 0);
    if (!tr->n)
      return IM_NOMEM;
  }
  unsigned char b = (unsigned char)s[0];
  uint32_t cur = tr->root[b];
  if (!cur) {
    if (!(cur = new_node(tr, b)))
      return IM_NOMEM;
    tr->root[b] = cur;
    tr->nodes[cur].sibling = tr->nodes[0].child;
    tr->nodes[0].child = cur;
  }
  for (size_t i = 1; i < n; i++) {
    b = (unsigned char)s[i];
    uint32_t c = tr->nodes[cur].child;
    while (c && tr->nodes[c].byte != b)
      c = tr->nodes[c].sibling;
    if (!c) {
      if (!(c = new_node(tr, b)))
        return IM_NOMEM;
      tr->nodes[c].sibling = tr->nodes[cur].child;
      tr->nodes[cur].child = c;
    }
    cur = c;
  }
  if (tr->nodes[cur].value < 0)
    tr->nodes[cur].value = value;
  return IM_OK;
}

int32_t im__tok_trie_longest(const struct im__tok_trie *tr, const char *s, size_t n) {
  if (!n)
    return -1;
  uint32_t cur = tr->root[(unsigned char)s[0]];
  if (!cur)
    return -1;
  int32_t best = tr->nodes[cur].value;
  for (size_t i = 1; i < n; i++) {
    unsigned char b = (unsigned char)s[i];
    uint32_t c = tr->nodes[cur].child;
    while (c && tr->nodes[c].byte != b)
      c = tr->nodes[c].sibling;
    if (!c)
      break;
    cur = c;
    if (tr->nodes[cur].value >= 0)
      best = tr->nodes[cur].value;
  }
  return best;
}

void im__tok_trie_cleanup(struct im__tok_trie *tr) {
  if (!tr)
    return;
  free(tr->nodes);
  memset(tr, 0, sizeof *tr);
}
