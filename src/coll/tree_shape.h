// The two binary trees of a double-binary-tree allreduce (NCCL's idea): each carries half of the
// data, and a rank that is a leaf in one is, where the count allows, inside the other, so that
// every rank sends and receives about as much in total. Trees are in-order binary trees over
// positions 1..n; the second tree renumbers ranks (mirrored for even n, shifted by one for odd n)
// so that the first tree's leaves (odd positions) land on even positions.
#pragma once
#include <cstddef>
#include <vector>

namespace efacoll {

struct TreeNode {
  int parent = -1;            // rank, or -1 at the root
  std::vector<int> children;  // ranks, at most two
};

// Rank r's place in tree t (0 or 1) of n ranks.
TreeNode tree_node(int n, int tree, int r);

// The tree pipelines in small chunks (about 32 per vector, from 4 KiB up to max_chunk) so that
// filling its 2 x depth stages costs little; the builder (through the registry) and the cost
// model both use this.
size_t tree_chunk_bytes(size_t bytes, size_t max_chunk);

}  // namespace efacoll
