// For providers that cannot touch GPU memory: rewrites a schedule so that every send from and
// receive into a GPU buffer goes through a pinned host slot (copy to host, then send; receive,
// then copy to the GPU). Slots are reused round-robin, each reuse ordered after the previous
// user is done, so a bounded stage pipelines any amount of data. Sends and receives have
// separate slots: a receive never waits for a send to complete, which could wait on a peer.
#pragma once
#include <cstddef>

#include "core/schedule.h"

namespace efacoll {

struct StagePlan {
  size_t slot_bytes = 0;  // at least the largest message
  int send_slots = 8;
  int recv_slots = 8;
  size_t total_bytes() const { return slot_bytes * (send_slots + recv_slots); }
};

struct GpuBuffers {
  bool send = false, recv = false, scratch = false;
  bool on_gpu(BufId id) const {
    return (id == BufId::kSend && send) || (id == BufId::kRecv && recv) ||
           (id == BufId::kScratch && scratch);
  }
};

// The largest message of a schedule (the slot size a plan needs).
size_t largest_message(const Schedule& schedule);

Schedule stage_network_ops(const Schedule& in, const GpuBuffers& gpu, const StagePlan& plan);

}  // namespace efacoll
