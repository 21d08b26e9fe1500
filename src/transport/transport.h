// What algorithms need from a network: tagged two-sided messages between peers, memory
// registration, and completions delivered through callbacks. Knows nothing of collectives.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "common/completion.h"
#include "efacoll/status.h"
#include "efacoll/types.h"
#include "transport/provider_clock.h"
#include "transport/provider_quirks.h"

namespace efacoll {

using PeerAddr = uint64_t;

// A registration of local memory; `desc` is what the provider wants with each operation
// (nullptr where it asks for none).
struct MemRegion {
  void* desc = nullptr;
  void* handle = nullptr;
  uintptr_t base = 0;  // what was registered: [base, base + bytes)
  size_t bytes = 0;
  // GPU memory (FI_HMEM): never injected, since an inject carries no descriptor and the provider
  // reads the buffer as host memory (EFA's fi_tinject would fault on a device pointer).
  bool on_gpu = false;
  bool by_dmabuf = false;  // registered through a dma-buf file descriptor, not the address
};

struct TransportInfo {
  std::string provider;
  std::string fabric;
  std::string domain;
  std::string version;     // libfabric's
  bool hmem = false;       // FI_HMEM: device memory can be handed to the provider
  bool gpudirect = false;  // and the NIC reaches it directly (EFA's answer, gdr_policy.h)
  std::string hmem_note;   // what the provider said of GPUDirect RDMA (policy/gdr_policy.h)
  bool needs_local_mr = false;
  size_t inject_size = 0;
  size_t max_msg_size = SIZE_MAX;
  // Sends and receives one endpoint may have posted at once (the provider's queue sizes, halved:
  // a one-sided receive also posts its clear-to-send). More fail with ENOMEM on some providers.
  size_t max_posted = SIZE_MAX;
  // One-sided protocol: messages of at least rdma_threshold bytes are written into the
  // receiver's registered buffer (every buffer then needs a registration).
  bool rdma = false;
  size_t rdma_threshold = SIZE_MAX;
  // The provider's faults that efacoll works around (provider_quirks.h).
  ProviderQuirks quirks;
  bool needs_registration() const { return needs_local_mr || rdma; }
};

class Transport {
 public:
  virtual ~Transport() = default;

  virtual const TransportInfo& info() const = 0;
  virtual std::vector<uint8_t> local_address() const = 0;
  // Inserting an address already known returns the same PeerAddr.
  virtual Status insert_peers(const std::vector<std::vector<uint8_t>>& addresses,
                              std::vector<PeerAddr>* out) = 0;

  // Registration is needed where info().needs_local_mr, and for device memory with FI_HMEM.
  // device: CUDA ordinal for device/managed memory.
  virtual Status register_memory(void* ptr, size_t bytes, MemKind kind, int device,
                                 MemRegion* out) = 0;
  virtual void deregister_memory(MemRegion* region) = 0;

  // kAgain: queue full; progress() and post again.
  // region: the registration covering buf, or nullptr where none is needed.
  virtual Status send(PeerAddr peer, const void* buf, size_t bytes, uint64_t tag,
                      const MemRegion* region, Completion* completion) = 0;
  virtual Status recv(PeerAddr peer, void* buf, size_t bytes, uint64_t tag, const MemRegion* region,
                      Completion* completion) = 0;

  // Looks, without taking it, for a message that arrived and no receive has taken, whose tag
  // equals `tag` outside `ignore` (FI_PEEK). Completes in progress(): ok with the tag found in
  // completion->tag and its length, or Code::kAgain when there is none. `peer`: the sender where
  // the tag names one (a multi-rail transport finds the rail by it). kUnsupported where the
  // provider cannot look.
  virtual Status peek(PeerAddr /*peer*/, uint64_t /*tag*/, uint64_t /*ignore*/,
                      Completion* /*completion*/) {
    return Status(Code::kUnsupported, "this transport cannot peek");
  }

  // Runs the callbacks of finished operations; *completed counts them.
  virtual Status progress(int* completed) = 0;
  // Asks for a posted operation to end; its callback still runs (with an error) in progress().
  virtual void cancel(Completion* completion) = 0;
  // The call into the provider, by any thread, in progress longest; false when none is.
  virtual bool oldest_provider_call(ProviderCall* /*out*/) const { return false; }
  // Whether the provider still holds operations it would neither finish nor cancel: then it
  // stays open when the transport is destroyed, and so must the memory those operations name.
  virtual bool holds_operations() const { return false; }
  // Canceled one-sided receives whose senders may still write (Completion::may_still_be_written)
  // and have not yet: while any is left, the memory such receives named may still change.
  virtual size_t late_writes_awaited() const { return 0; }
  // A message a failed call left, taken by a plain receive (engine/comm_stale.cc). Where it is
  // a receiver's clear-to-send, answers it with a write without data (into the receiver's own
  // pad, not the receive's buffer) to peers[the receiver's rank], so that the receiver stops
  // awaiting a write that will never come; `completion` runs once the answer is done. kUnsupported:
  // not a clear-to-send, or no one-sided protocol here.
  virtual Status answer_stale(const void* /*message*/, size_t /*bytes*/,
                              const std::vector<PeerAddr>& /*peers*/, Completion* /*completion*/) {
    return Status(Code::kUnsupported, "no clear-to-sends on this transport");
  }
};

}  // namespace efacoll
