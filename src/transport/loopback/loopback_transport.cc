#include "transport/loopback/loopback_transport.h"

#include <cstring>
#include <deque>
#include <list>

namespace efacoll {

struct LoopbackFabric {
  struct Posted {
    void* buf;
    size_t bytes;
    uint64_t tag;
    Completion* completion;
  };
  struct Unexpected {
    uint64_t tag;
    std::vector<uint8_t> data;
  };
  struct Done {
    Completion* completion;
    Status status;
    size_t bytes;
  };
  struct Mailbox {
    std::list<Posted> posted;
    std::list<Unexpected> unexpected;
    std::deque<Done> done;
  };

  std::mutex mutex;
  std::deque<Mailbox> boxes;  // deque: references stay valid as endpoints are added
};

namespace {

bool matches(const LoopbackFabric::Posted& p, uint64_t tag) {
  return ((p.tag ^ tag) & ~p.completion->ignore) == 0;
}

// A receive that meets a message: copy what fits, report truncation like FI_ETRUNC.
LoopbackFabric::Done deliver(const LoopbackFabric::Posted& p, const uint8_t* data, size_t bytes,
                             uint64_t tag) {
  p.completion->tag = tag;
  if (bytes > p.bytes) {
    std::memcpy(p.buf, data, p.bytes);
    return {p.completion,
            Status(Code::kTruncate, "message of " + std::to_string(bytes) + " bytes for a " +
                                        std::to_string(p.bytes) + "-byte receive"),
            p.bytes};
  }
  if (bytes) std::memcpy(p.buf, data, bytes);
  return {p.completion, Status::ok(), bytes};
}

class LoopbackTransport : public Transport {
 public:
  explicit LoopbackTransport(std::shared_ptr<LoopbackFabric> fabric) : fabric_(std::move(fabric)) {
    std::lock_guard<std::mutex> lock(fabric_->mutex);
    self_ = fabric_->boxes.size();
    fabric_->boxes.emplace_back();
    info_.provider = "loopback";
    info_.fabric = "loopback";
    info_.domain = "loopback";
    info_.version = "none";
  }

  const TransportInfo& info() const override { return info_; }

  std::vector<uint8_t> local_address() const override {
    std::vector<uint8_t> a(sizeof(self_));
    std::memcpy(a.data(), &self_, sizeof(self_));
    return a;
  }

  Status insert_peers(const std::vector<std::vector<uint8_t>>& addresses,
                      std::vector<PeerAddr>* out) override {
    out->clear();
    for (const auto& a : addresses) {
      if (a.size() != sizeof(PeerAddr)) return Status(Code::kInvalid, "bad loopback address");
      PeerAddr p;
      std::memcpy(&p, a.data(), sizeof(p));
      out->push_back(p);
    }
    return Status::ok();
  }

  Status register_memory(void*, size_t, MemKind, int, MemRegion* out) override {
    *out = MemRegion();
    return Status::ok();
  }
  void deregister_memory(MemRegion* region) override { *region = MemRegion(); }

  Status send(PeerAddr peer, const void* buf, size_t bytes, uint64_t tag, const MemRegion*,
              Completion* completion) override {
    std::lock_guard<std::mutex> lock(fabric_->mutex);
    if (peer >= fabric_->boxes.size()) return Status(Code::kInvalid, "unknown loopback peer");
    auto& box = fabric_->boxes[peer];
    auto* data = static_cast<const uint8_t*>(buf);
    bool matched = false;
    for (auto it = box.posted.begin(); it != box.posted.end(); ++it) {
      if (!matches(*it, tag)) continue;
      box.done.push_back(deliver(*it, data, bytes, tag));
      box.posted.erase(it);
      matched = true;
      break;
    }
    if (!matched) box.unexpected.push_back({tag, std::vector<uint8_t>(data, data + bytes)});
    completion->tag = tag;
    fabric_->boxes[self_].done.push_back({completion, Status::ok(), bytes});
    return Status::ok();
  }

  Status recv(PeerAddr, void* buf, size_t bytes, uint64_t tag, const MemRegion*,
              Completion* completion) override {
    std::lock_guard<std::mutex> lock(fabric_->mutex);
    auto& box = fabric_->boxes[self_];
    LoopbackFabric::Posted p{buf, bytes, tag, completion};
    for (auto it = box.unexpected.begin(); it != box.unexpected.end(); ++it) {
      if (!matches(p, it->tag)) continue;
      box.done.push_back(deliver(p, it->data.data(), it->data.size(), it->tag));
      box.unexpected.erase(it);
      return Status::ok();
    }
    box.posted.push_back(p);
    return Status::ok();
  }

  Status peek(PeerAddr, uint64_t tag, uint64_t ignore, Completion* completion) override {
    std::lock_guard<std::mutex> lock(fabric_->mutex);
    auto& box = fabric_->boxes[self_];
    for (const auto& u : box.unexpected) {
      if (((u.tag ^ tag) & ~ignore) != 0) continue;
      completion->tag = u.tag;
      box.done.push_back({completion, Status::ok(), u.data.size()});
      return Status::ok();
    }
    box.done.push_back({completion, Status(Code::kAgain, "no such message"), 0});
    return Status::ok();
  }

  Status progress(int* completed) override {
    std::deque<LoopbackFabric::Done> done;
    {
      std::lock_guard<std::mutex> lock(fabric_->mutex);
      done.swap(fabric_->boxes[self_].done);
    }
    for (auto& d : done) d.completion->fn(d.completion, d.status, d.bytes);
    *completed = static_cast<int>(done.size());
    return Status::ok();
  }

  void cancel(Completion* completion) override {
    std::lock_guard<std::mutex> lock(fabric_->mutex);
    auto& box = fabric_->boxes[self_];
    for (auto it = box.posted.begin(); it != box.posted.end(); ++it) {
      if (it->completion != completion) continue;
      box.done.push_back({completion, Status(Code::kFabric, "canceled"), 0});
      box.posted.erase(it);
      return;
    }
  }

 private:
  std::shared_ptr<LoopbackFabric> fabric_;
  PeerAddr self_ = 0;
  TransportInfo info_;
};

}  // namespace

std::shared_ptr<LoopbackFabric> make_loopback_fabric() {
  return std::make_shared<LoopbackFabric>();
}

std::unique_ptr<Transport> make_loopback_transport(std::shared_ptr<LoopbackFabric> fabric) {
  return std::make_unique<LoopbackTransport>(std::move(fabric));
}

}  // namespace efacoll
