#include "coll/tree_shape.h"

#include <algorithm>

namespace efacoll {
namespace {

int lowbit(int i) { return i & -i; }

// In-order binary tree on positions 1..n: position i with lowest set bit L has children
// i - L/2 and i + L/2 and parent i + L (bit 2L of i clear) or i - L (set). Positions past n
// are skipped: a parent past n is replaced by its own parent; a right child past n by that
// child's left descendants, the first of which at or below n.
int parent_pos(int n, int i) {
  int p = i;
  do {
    const int l = lowbit(p);
    p = (p & (2 * l)) ? p - l : p + l;
  } while (p > n && p < 4 * n);
  return p > n ? 0 : p;
}

void children_pos(int n, int i, std::vector<int>* out) {
  const int l = lowbit(i);
  if (l < 2) return;
  out->push_back(i - l / 2);
  int right = i + l / 2;
  while (right > n && lowbit(right) >= 2) right -= lowbit(right) / 2;
  if (right <= n && right != i) out->push_back(right);
}

// Position of rank r in tree t, and back.
int position(int n, int tree, int r) {
  if (tree == 0) return r + 1;
  return n % 2 == 0 ? n - r : (r + 1) % n + 1;
}
int rank_at(int n, int tree, int pos) {
  if (tree == 0) return pos - 1;
  return n % 2 == 0 ? n - pos : (pos - 2 + n) % n;
}

}  // namespace

TreeNode tree_node(int n, int tree, int r) {
  TreeNode node;
  if (n <= 1) return node;
  const int i = position(n, tree, r);
  // The root is the highest power of two at or below n: it has no parent within 1..n.
  int root = 1;
  while (root * 2 <= n) root *= 2;
  if (i != root) node.parent = rank_at(n, tree, parent_pos(n, i));
  std::vector<int> kids;
  children_pos(n, i, &kids);
  for (int c : kids) node.children.push_back(rank_at(n, tree, c));
  return node;
}

size_t tree_chunk_bytes(size_t bytes, size_t max_chunk) {
  return std::max<size_t>(1, std::min(max_chunk, std::max<size_t>(4096, bytes / 32)));
}

}  // namespace efacoll
