// How an asynchronous operation (a transport's message, a GPU stream's reduction or copy)
// reports that it ended: the vocabulary the executor, the transports and the GPU runtime share,
// at the floor so that none of them includes another for it.
#pragma once
#include <cstddef>
#include <cstdint>

#include "efacoll/status.h"

namespace efacoll {

// Owned by whoever posts an operation; must stay alive until `fn` has run.
struct Completion {
  // bytes: the length that arrived (receives) or was sent.
  void (*fn)(Completion* self, const Status& status, size_t bytes) = nullptr;
  void* transport_request = nullptr;  // set by the transport while the operation is posted
  // Receives: tag bits that may differ from the posted tag (set before posting). On completion
  // the transport sets `tag` to the tag that arrived; for a one-sided send, to the tag of the
  // receiver's clear-to-send (other sends: the posted tag).
  uint64_t ignore = 0;
  uint64_t tag = 0;
  // The whole sequence of the call the operation belongs to, of which the tag holds 6 bits:
  // where the provider matches a queued message on its whole tag (shm), more of it keeps the
  // messages a failed call left unreceived from the calls that repeat those 6 bits.
  uint32_t call_seq = 0;
  // Set by the transport (never cleared) when it cancels a one-sided receive whose sender may
  // already hold its clear-to-send: that sender can still write the buffer, after the callback
  // has run, at any time until the endpoint closes. Whoever owns the buffer must not reuse it.
  bool may_still_be_written = false;
  // Receives: this rank, which a one-sided receive's clear-to-send carries so that a sender
  // that never meets it in its call can still answer it (Transport::answer_stale). Left as it
  // is, no sender answers (a wrong rank would end another receive's wait).
  uint32_t receiver_rank = UINT32_MAX;
};

}  // namespace efacoll
