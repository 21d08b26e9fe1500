// The fabric's algorithms, written down once: for each (algorithm, collective) its schedule
// builder, its name and where it applies. The engine builds every call's schedule through it,
// the tuner asks it what applies and what splits into channels, and the schedule tests iterate
// it, so an algorithm added here is built, tuned and checked everywhere.
#pragma once
#include <vector>

#include "coll/ring_layout.h"
#include "core/schedule.h"
#include "efacoll/algo.h"
#include "efacoll/status.h"
#include "efacoll/types.h"

namespace efacoll {

struct ScheduleBuilder {
  Algo algo = Algo::kRing;
  CollKind kind = CollKind::kAllreduce;
  // For TRACE lines and efacoll_last_algorithm ("ring", "double binary tree", ...).
  const char* name = "";
  // Its ring order is what rotating channels across nodes changes.
  bool ring = false;
  // Only across several nodes of equal size (ranks_per_node > 0).
  bool needs_nodes = false;
  // Can be split into channels at all (the hierarchical schedule cannot: its three phases take a
  // quarter of the message ids each, which channels would divide again).
  bool splits = true;
  // One schedule over `args` (the whole call, or one channel's share of it), chunked as given.
  Status (*build)(const RingArgs& args, int ranks_per_node, Schedule* out) = nullptr;
  // The chunk this algorithm pipelines a call of `bytes` in, given the configured one (null:
  // the configured one).
  size_t (*chunk_for)(size_t bytes, size_t chunk) = nullptr;
};

// Every builder, in a fixed order.
const std::vector<ScheduleBuilder>& schedule_builders();
// The builder of `algo` for `kind` (null: that algorithm does not exist for that collective).
const ScheduleBuilder* find_schedule_builder(Algo algo, CollKind kind);
// Whether the algorithm exists for the collective on this communicator.
bool builder_applies(const ScheduleBuilder& b, bool multi_node);
// Whether a call with this builder can be split into channels (channels_apply).
bool builder_takes_channels(const ScheduleBuilder& b, bool inplace);
// The chunk a call of `bytes` runs with under this builder.
size_t builder_chunk(const ScheduleBuilder& b, size_t bytes, size_t chunk);

// The call's schedule: `b` on `channels` channels (1 where it cannot split), rings rotated
// across nodes of `ranks_per_node` (0: one node). Where a call has more chunks than a tag can
// number, its chunk grows until they fit: args.chunk_bytes is the chunk it runs with.
Status build_call_schedule(const ScheduleBuilder& b, RingArgs& args, int ranks_per_node,
                           int channels, Schedule* out);

}  // namespace efacoll
