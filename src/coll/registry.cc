#include "coll/registry.h"

#include "coll/builders.h"
#include "coll/channels.h"
#include "coll/hier_allreduce.h"
#include "coll/tree_shape.h"

namespace efacoll {
namespace {

template <Status (*Build)(const RingArgs&, Schedule*)>
Status flat(const RingArgs& args, int, Schedule* out) {
  return Build(args, out);
}

Status hierarchical(const RingArgs& args, int ranks_per_node, Schedule* out) {
  HierArgs h;
  h.rank = args.rank;
  h.nranks = args.nranks;
  h.ranks_per_node = ranks_per_node;
  for (size_t c : args.block_counts) h.count += c;
  h.elem_size = args.elem_size;
  h.inplace = args.inplace;
  h.chunk_bytes = args.chunk_bytes;
  return build_hier_allreduce(h, out);
}

std::vector<ScheduleBuilder> make_builders() {
  constexpr CollKind kAr = CollKind::kAllreduce, kAg = CollKind::kAllgather,
                     kRs = CollKind::kReduceScatter;
  std::vector<ScheduleBuilder> all;
  auto add = [&](Algo algo, CollKind kind, const char* name, bool ring,
                 Status (*build)(const RingArgs&, int, Schedule*)) {
    ScheduleBuilder b;
    b.algo = algo;
    b.kind = kind;
    b.name = name;
    b.ring = ring;
    b.build = build;
    all.push_back(b);
    return &all.back();
  };
  add(Algo::kRing, kAr, "ring", true, flat<build_ring_allreduce>);
  add(Algo::kRing, kAg, "ring", true, flat<build_ring_allgather>);
  add(Algo::kRing, kRs, "ring", true, flat<build_ring_reduce_scatter>);
  add(Algo::kTree, kAr, "double binary tree", false, flat<build_tree_allreduce>)->chunk_for =
      tree_chunk_bytes;
  add(Algo::kRecursive, kAr, "recursive doubling", false, flat<build_rd_allreduce>);
  add(Algo::kRecursive, kAg, "recursive doubling", false, flat<build_rd_allgather>);
  add(Algo::kRecursive, kRs, "recursive halving", false, flat<build_rh_reduce_scatter>);
  ScheduleBuilder* hier = add(Algo::kHier, kAr, "hierarchical", false, hierarchical);
  hier->needs_nodes = true;
  hier->splits = false;
  return all;
}

}  // namespace

const std::vector<ScheduleBuilder>& schedule_builders() {
  static const std::vector<ScheduleBuilder> all = make_builders();
  return all;
}

const ScheduleBuilder* find_schedule_builder(Algo algo, CollKind kind) {
  for (const ScheduleBuilder& b : schedule_builders())
    if (b.algo == algo && b.kind == kind) return &b;
  return nullptr;
}

bool builder_applies(const ScheduleBuilder& b, bool multi_node) {
  return !b.needs_nodes || multi_node;
}

bool builder_takes_channels(const ScheduleBuilder& b, bool inplace) {
  return b.splits && channels_apply(b.kind, b.ring, inplace);
}

size_t builder_chunk(const ScheduleBuilder& b, size_t bytes, size_t chunk) {
  return b.chunk_for ? b.chunk_for(bytes, chunk) : chunk;
}

Status build_call_schedule(const ScheduleBuilder& b, RingArgs& args, int ranks_per_node,
                           int channels, Schedule* out) {
  ChannelArgs ca;
  ca.kind = b.kind;
  ca.channels = builder_takes_channels(b, args.inplace) ? channels : 1;
  ca.ranks_per_node = ranks_per_node;
  ca.rotate_ring = b.ring;
  const ChannelBuilder one = [&](const RingArgs& sub, Schedule* s) -> Status {
    RingArgs shaped = sub;
    shaped.chunk_bytes = builder_chunk(b, call_bytes(sub), sub.chunk_bytes);
    return b.build(shaped, ranks_per_node, s);
  };
  for (;;) {
    Status st = build_channels(ca, args, one, out);
    if (st.is_ok()) out->algorithm = b.name;
    if (st.code() != Code::kInvalid || args.chunk_bytes >= (size_t(1) << 40)) return st;
    args.chunk_bytes *= 2;
  }
}

}  // namespace efacoll
