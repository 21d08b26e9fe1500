// Channels (NCCL's word): one collective as several independent schedules over disjoint parts
// of the data, each with its own chunk stream, merged into one schedule for the executor.
// - Channel c's message ids are c modulo the channel count. Rails are chosen by message id
//   modulo rails, so with as many channels as rails (or a multiple) channel c keeps to rail c.
// - Across nodes, channel c's ring enters every node at local rank c: each channel crosses the
//   fabric from a different GPU, through that GPU's own NICs, so that all of a node's NICs
//   carry a ring's inter-node traffic instead of one.
#pragma once
#include <functional>
#include <vector>

#include "coll/ring_layout.h"
#include "core/schedule.h"
#include "efacoll/status.h"
#include "efacoll/types.h"

namespace efacoll {

struct ChannelArgs {
  CollKind kind = CollKind::kAllreduce;
  int channels = 1;
  // Nodes of this many consecutive ranks (0: one node): rotates each channel's ring order.
  int ranks_per_node = 0;
  bool rotate_ring = false;  // the builder is a ring (its order is what rotation changes)
};

using ChannelBuilder = std::function<Status(const RingArgs&, Schedule*)>;

// Whether a call can be split into channels. Allreduce always (each channel owns a slice of the
// vector). Allgather and reduce-scatter split every rank's block, which needs a builder whose
// messages stay inside one block (the ring) and, for reduce-scatter, a separate receive buffer
// (in place, the result overwrites the input other channels still read).
bool channels_apply(CollKind kind, bool ring_builder, bool inplace);

// Ring position -> rank for channel c: node-major, each node's ranks rotated by c.
std::vector<int> channel_ring_order(int nranks, int ranks_per_node, int channel);

// `args` describe the whole call (as for one schedule); `build` makes one channel's schedule.
// kInvalid when a channel's message ids do not fit beside the others (raise the chunk size).
Status build_channels(const ChannelArgs& ch, const RingArgs& args, const ChannelBuilder& build,
                      Schedule* out);

}  // namespace efacoll
