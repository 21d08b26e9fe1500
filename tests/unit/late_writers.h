// Transports that stand in for a provider's late one-sided writes, for the tests of what the
// engine retires after a failed call (late_write_test.cc, late_write_hier_test.cc).
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <utility>
#include <vector>

#include "forwarding_transport.h"

namespace efacoll {
namespace testing {

// Buffers a provider may still write: (start, bytes).
using Targets = std::vector<std::pair<uint8_t*, size_t>>;

// Remembers the buffer of each receive posted, by its completion, until that completion is
// posted again as a send or a look: the buffer a provider could still write for it.
class ReceiveBuffers : public ForwardingTransport {
 public:
  using ForwardingTransport::ForwardingTransport;
  Status recv(PeerAddr peer, void* buf, size_t bytes, uint64_t tag, const MemRegion* region,
              Completion* c) override {
    {
      std::lock_guard<std::mutex> lock(buffers_mutex_);
      buffers_[c] = {static_cast<uint8_t*>(buf), bytes};
    }
    return ForwardingTransport::recv(peer, buf, bytes, tag, region, c);
  }
  Status send(PeerAddr peer, const void* buf, size_t bytes, uint64_t tag, const MemRegion* region,
              Completion* c) override {
    forget(c);
    return ForwardingTransport::send(peer, buf, bytes, tag, region, c);
  }
  Status peek(PeerAddr peer, uint64_t tag, uint64_t ignore, Completion* c) override {
    forget(c);
    return ForwardingTransport::peek(peer, tag, ignore, c);
  }

 protected:
  // The receive's buffer, or false where `c` was not last posted as a receive.
  bool receive_buffer(Completion* c, std::pair<uint8_t*, size_t>* out) {
    std::lock_guard<std::mutex> lock(buffers_mutex_);
    auto it = buffers_.find(c);
    if (it == buffers_.end()) return false;
    *out = it->second;
    return true;
  }

 private:
  void forget(Completion* c) {
    std::lock_guard<std::mutex> lock(buffers_mutex_);
    buffers_.erase(c);
  }
  std::mutex buffers_mutex_;
  std::unordered_map<Completion*, std::pair<uint8_t*, size_t>> buffers_;
};

// Where a canceled receive says it may still be written, writes into its buffer at every later
// progress: a write that lands at any moment, after any other, as EFA allows. Memory efacoll
// retired absorbs them; memory it reused would show them in a result.
// With `left`, it also says that the provider still holds operations (as one that could not
// cancel them does), and hands its targets, written once more, to `left` when it is destroyed:
// memory the provider may still write after the engine is gone. With `writes_each`, each
// target's write has come after that many progresses; otherwise it never has.
class LateWriter : public ReceiveBuffers {
 public:
  LateWriter(std::unique_ptr<Transport> inner, std::atomic<int>* targets, Targets* left,
             int writes_each)
      : ReceiveBuffers(std::move(inner)),
        targets_(targets),
        left_(left),
        writes_each_(writes_each) {}
  ~LateWriter() override {
    if (!left_) return;
    for (auto& [buf, bytes] : late_) std::memset(buf, 0x5a, bytes);
    *left_ = late_;
  }
  bool holds_operations() const override { return left_ != nullptr; }
  size_t late_writes_awaited() const override {
    std::lock_guard<std::mutex> lock(mutex_);
    return ForwardingTransport::late_writes_awaited() + late_.size();
  }
  // Every canceled receive marked as one its sender may still write, as if the provider said
  // so (a provider that cannot tell which of them a sender has begun to write).
  void mark_every_canceled_receive() { every_canceled_receive_ = true; }
  void cancel(Completion* c) override {
    std::pair<uint8_t*, size_t> target;
    const bool receive = receive_buffer(c, &target);
    if (receive && every_canceled_receive_) c->may_still_be_written = true;
    ForwardingTransport::cancel(c);
    if (!receive || !c->may_still_be_written) return;
    std::lock_guard<std::mutex> lock(mutex_);
    late_.push_back(target);
    writes_left_.push_back(writes_each_);
    ++*targets_;
  }
  Status progress(int* completed) override {
    Status st = ForwardingTransport::progress(completed);
    std::lock_guard<std::mutex> lock(mutex_);
    for (size_t i = 0; i < late_.size();) {
      std::memset(late_[i].first, 0x5a, late_[i].second);
      if (writes_each_ > 0 && --writes_left_[i] == 0) {
        late_.erase(late_.begin() + static_cast<std::ptrdiff_t>(i));
        writes_left_.erase(writes_left_.begin() + static_cast<std::ptrdiff_t>(i));
      } else {
        ++i;
      }
    }
    return st;
  }

 private:
  std::atomic<int>* targets_;
  Targets* left_;
  const int writes_each_;
  bool every_canceled_receive_ = false;
  mutable std::mutex mutex_;
  Targets late_;
  std::vector<int> writes_left_;  // per target of late_
};

// A provider that takes GPU buffers (FI_HMEM, as EFA with GPUDirect RDMA does), for GPU buffers
// that are host memory (HostGpuRuntime): they are registered as host memory. GPU calls then run
// their schedules in the GPU buffers themselves, efacoll's own among them, as on EFA.
class HmemOnHost : public ForwardingTransport {
 public:
  explicit HmemOnHost(std::unique_ptr<Transport> inner) : ForwardingTransport(std::move(inner)) {
    info_ = ForwardingTransport::info();
    info_.hmem = true;
  }
  const TransportInfo& info() const override { return info_; }
  Status register_memory(void* ptr, size_t bytes, MemKind kind, int device,
                         MemRegion* out) override {
    if (kind == MemKind::kDevice)
      return ForwardingTransport::register_memory(ptr, bytes, MemKind::kHost, -1, out);
    return ForwardingTransport::register_memory(ptr, bytes, kind, device, out);
  }

 private:
  TransportInfo info_;
};

}  // namespace testing
}  // namespace efacoll
