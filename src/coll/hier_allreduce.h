// Hierarchical allreduce over nodes of equal size (see hier_allreduce.cc).
#pragma once
#include "coll/builders.h"

namespace efacoll {

struct HierArgs {
  int rank = 0, nranks = 1;
  int ranks_per_node = 1;  // ranks r and s share a node when r / L == s / L
  size_t count = 0;        // elements
  size_t elem_size = 1;
  bool inplace = false;
  size_t chunk_bytes = 1 << 19;
};

Status build_hier_allreduce(const HierArgs& args, Schedule* out);

}  // namespace efacoll
