#include "transport/fabric/fabric_transport.h"

#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_tagged.h>

#include <atomic>
#include <deque>
#include <map>
#include <mutex>
#include <vector>

#include "common/log.h"

namespace efacoll {
namespace {

// Closes any libfabric object; members declared in opening order close in reverse.
template <typename T>
class Fid {
 public:
  Fid() = default;
  ~Fid() { reset(); }
  Fid(const Fid&) = delete;
  Fid& operator=(const Fid&) = delete;
  T** out() { return &p_; }
  T* get() const { return p_; }
  void reset() {
    if (p_) fi_close(&p_->fid);
    p_ = nullptr;
  }

 private:
  T* p_ = nullptr;
};

Status fabric_error(const char* what, int rc) {
  return Status(Code::kFabric,
                std::string(what) + ": " + fi_strerror(-rc) + " (" + std::to_string(rc) + ")");
}

struct Request {
  fi_context2 context;  // first member: the CQ entry's op_context points here
  Completion* completion = nullptr;
  size_t bytes = 0;
  bool is_recv = false;
};

class FabricTransport : public Transport {
 public:
  Status open(const fi_info* info);
  ~FabricTransport() override {
    ep_.reset();
    av_.reset();
    cq_.reset();
    domain_.reset();
    fabric_.reset();
  }

  const TransportInfo& info() const override { return info_; }
  std::vector<uint8_t> local_address() const override { return address_; }
  Status insert_peers(const std::vector<std::vector<uint8_t>>& addresses,
                      std::vector<PeerAddr>* out) override;
  Status register_memory(void* ptr, size_t bytes, MemKind kind, int device,
                         MemRegion* out) override;
  void deregister_memory(MemRegion* region) override;
  Status send(PeerAddr peer, const void* buf, size_t bytes, uint64_t tag, void* desc,
              Completion* completion) override;
  Status recv(PeerAddr peer, void* buf, size_t bytes, uint64_t tag, void* desc,
              Completion* completion) override;
  Status progress(int* completed) override;
  void cancel(Completion* completion) override;

 private:
  Request* get_request(Completion* c, size_t bytes, bool is_recv);
  void put_request(Request* r);
  void complete(Request* r, const Status& status, size_t bytes);

  Fid<fid_fabric> fabric_;
  Fid<fid_domain> domain_;
  Fid<fid_cq> cq_;
  Fid<fid_av> av_;
  Fid<fid_ep> ep_;
  TransportInfo info_;
  uint64_t mr_mode_ = 0;
  std::vector<uint8_t> address_;
  std::map<std::vector<uint8_t>, fi_addr_t> known_peers_;
  std::mutex mutex_;  // requests pool and inject completions
  std::vector<std::unique_ptr<Request>> pool_;
  std::vector<Request*> free_;
  std::deque<Request*> injected_;  // finished at post time; reported in progress()
  std::atomic<uint64_t> next_key_{1};
};

Status FabricTransport::open(const fi_info* fi) {
  info_.provider = fi->fabric_attr->prov_name ? fi->fabric_attr->prov_name : "?";
  info_.fabric = fi->fabric_attr->name ? fi->fabric_attr->name : "?";
  info_.domain = fi->domain_attr->name ? fi->domain_attr->name : "?";
  info_.version = fabric_library_version();
  info_.hmem = (fi->caps & FI_HMEM) != 0;
  mr_mode_ = fi->domain_attr->mr_mode;
  info_.needs_local_mr = (mr_mode_ & FI_MR_LOCAL) != 0;
  info_.inject_size = fi->tx_attr->inject_size;
  info_.max_msg_size = fi->ep_attr->max_msg_size ? fi->ep_attr->max_msg_size : SIZE_MAX;

  int rc = fi_fabric(fi->fabric_attr, fabric_.out(), nullptr);
  if (rc) return fabric_error("fi_fabric", rc);
  rc = fi_domain(fabric_.get(), const_cast<fi_info*>(fi), domain_.out(), nullptr);
  if (rc) return fabric_error("fi_domain", rc);

  fi_cq_attr cq_attr = {};
  cq_attr.format = FI_CQ_FORMAT_TAGGED;
  // EFA does not guard the CQ against overrun: room for every operation that can be queued.
  cq_attr.size = fi->tx_attr->size + fi->rx_attr->size;
  rc = fi_cq_open(domain_.get(), &cq_attr, cq_.out(), nullptr);
  if (rc) return fabric_error("fi_cq_open", rc);

  fi_av_attr av_attr = {};
  av_attr.type = FI_AV_TABLE;
  rc = fi_av_open(domain_.get(), &av_attr, av_.out(), nullptr);
  if (rc) return fabric_error("fi_av_open", rc);

  rc = fi_endpoint(domain_.get(), const_cast<fi_info*>(fi), ep_.out(), nullptr);
  if (rc) return fabric_error("fi_endpoint", rc);
  rc = fi_ep_bind(ep_.get(), &cq_.get()->fid, FI_TRANSMIT | FI_RECV);
  if (rc) return fabric_error("fi_ep_bind(cq)", rc);
  rc = fi_ep_bind(ep_.get(), &av_.get()->fid, 0);
  if (rc) return fabric_error("fi_ep_bind(av)", rc);
  rc = fi_enable(ep_.get());
  if (rc) return fabric_error("fi_enable", rc);

  size_t len = 0;
  rc = fi_getname(&ep_.get()->fid, nullptr, &len);
  if (rc != -FI_ETOOSMALL && rc != 0) return fabric_error("fi_getname", rc);
  address_.resize(len);
  rc = fi_getname(&ep_.get()->fid, address_.data(), &len);
  if (rc) return fabric_error("fi_getname", rc);
  address_.resize(len);
  return Status::ok();
}

Status FabricTransport::insert_peers(const std::vector<std::vector<uint8_t>>& addresses,
                                     std::vector<PeerAddr>* out) {
  out->clear();
  std::lock_guard<std::mutex> lock(mutex_);
  for (const auto& a : addresses) {
    auto it = known_peers_.find(a);
    if (it == known_peers_.end()) {
      fi_addr_t fa = FI_ADDR_NOTAVAIL;
      int n = fi_av_insert(av_.get(), a.data(), 1, &fa, 0, nullptr);
      if (n != 1) return fabric_error("fi_av_insert", n < 0 ? n : -FI_EINVAL);
      it = known_peers_.emplace(a, fa).first;
    }
    out->push_back(it->second);
  }
  return Status::ok();
}

Status FabricTransport::register_memory(void* ptr, size_t bytes, MemKind kind, int device,
                                        MemRegion* out) {
  *out = MemRegion();
  const bool gpu = is_gpu(kind);
  if (gpu && !info_.hmem) {
    return Status(Code::kUnsupported,
                  "provider " + info_.provider + " cannot register GPU memory (no FI_HMEM)");
  }
  iovec iov = {ptr, bytes};
  fi_mr_attr attr = {};
  attr.mr_iov = &iov;
  attr.iov_count = 1;
  attr.access = FI_SEND | FI_RECV;
  // Providers that choose keys ignore ours; the others (tcp, shm) want each key unique.
  attr.requested_key = (mr_mode_ & FI_MR_PROV_KEY) ? 0 : next_key_++;
  attr.iface = gpu ? FI_HMEM_CUDA : FI_HMEM_SYSTEM;
  if (gpu) attr.device.cuda = device;
  fid_mr* mr = nullptr;
  int rc = fi_mr_regattr(domain_.get(), &attr, 0, &mr);
  if (rc) return fabric_error(gpu ? "fi_mr_regattr(FI_HMEM_CUDA)" : "fi_mr_regattr", rc);
  if (mr_mode_ & FI_MR_ENDPOINT) {
    rc = fi_mr_bind(mr, &ep_.get()->fid, 0);
    if (rc == 0) rc = fi_mr_enable(mr);
    if (rc) {
      fi_close(&mr->fid);
      return fabric_error("fi_mr_bind/enable", rc);
    }
  }
  out->handle = mr;
  out->desc = fi_mr_desc(mr);
  return Status::ok();
}

void FabricTransport::deregister_memory(MemRegion* region) {
  if (region->handle) fi_close(&static_cast<fid_mr*>(region->handle)->fid);
  *region = MemRegion();
}

Request* FabricTransport::get_request(Completion* c, size_t bytes, bool is_recv) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (free_.empty()) {
    pool_.push_back(std::make_unique<Request>());
    free_.push_back(pool_.back().get());
  }
  Request* r = free_.back();
  free_.pop_back();
  r->completion = c;
  r->bytes = bytes;
  r->is_recv = is_recv;
  c->transport_request = r;
  return r;
}

void FabricTransport::put_request(Request* r) {
  std::lock_guard<std::mutex> lock(mutex_);
  r->completion->transport_request = nullptr;
  r->completion = nullptr;
  free_.push_back(r);
}

void FabricTransport::complete(Request* r, const Status& status, size_t bytes) {
  Completion* c = r->completion;
  put_request(r);
  c->fn(c, status, bytes);
}

Status FabricTransport::send(PeerAddr peer, const void* buf, size_t bytes, uint64_t tag, void* desc,
                             Completion* completion) {
  Request* r = get_request(completion, bytes, false);
  if (bytes <= info_.inject_size) {
    // Inject: the buffer is reusable on return and no completion is generated.
    ssize_t rc = fi_tinject(ep_.get(), buf, bytes, peer, tag);
    if (rc == 0) {
      std::lock_guard<std::mutex> lock(mutex_);
      injected_.push_back(r);
      return Status::ok();
    }
    if (rc != -FI_EAGAIN) {
      put_request(r);
      return fabric_error("fi_tinject", static_cast<int>(rc));
    }
    put_request(r);
    return Status(Code::kAgain, "tx queue full");
  }
  ssize_t rc = fi_tsend(ep_.get(), buf, bytes, desc, peer, tag, &r->context);
  if (rc == 0) return Status::ok();
  put_request(r);
  if (rc == -FI_EAGAIN) return Status(Code::kAgain, "tx queue full");
  return fabric_error("fi_tsend", static_cast<int>(rc));
}

Status FabricTransport::recv(PeerAddr, void* buf, size_t bytes, uint64_t tag, void* desc,
                             Completion* completion) {
  Request* r = get_request(completion, bytes, true);
  // The tag names the sender, so any source may match (tcp has no FI_DIRECTED_RECV).
  ssize_t rc = fi_trecv(ep_.get(), buf, bytes, desc, FI_ADDR_UNSPEC, tag, 0, &r->context);
  if (rc == 0) return Status::ok();
  put_request(r);
  if (rc == -FI_EAGAIN) return Status(Code::kAgain, "rx queue full");
  return fabric_error("fi_trecv", static_cast<int>(rc));
}

Status FabricTransport::progress(int* completed) {
  *completed = 0;
  std::deque<Request*> injected;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    injected.swap(injected_);
  }
  for (Request* r : injected) {
    complete(r, Status::ok(), r->bytes);
    ++*completed;
  }
  fi_cq_tagged_entry entries[32];
  for (;;) {
    ssize_t n = fi_cq_read(cq_.get(), entries, 32);
    if (n == -FI_EAGAIN) break;
    if (n == -FI_EAVAIL) {
      fi_cq_err_entry err = {};
      ssize_t rc = fi_cq_readerr(cq_.get(), &err, 0);
      if (rc < 0) return fabric_error("fi_cq_readerr", static_cast<int>(rc));
      auto* r = static_cast<Request*>(err.op_context);
      // Providers disagree on the sign of err (shm reports -FI_ETRUNC).
      const int code = err.err < 0 ? -err.err : err.err;
      Status st;
      if (code == FI_ECANCELED) {
        st = Status(Code::kFabric, "canceled");
      } else if (code == FI_ETRUNC) {
        st = Status(Code::kTruncate, "message larger than its receive buffer (" +
                                         std::to_string(r->bytes) + " bytes)");
      } else {
        char buf[256] = "";
        const char* detail =
            fi_cq_strerror(cq_.get(), err.prov_errno, err.err_data, buf, sizeof(buf));
        st = Status(Code::kFabric,
                    std::string(fi_strerror(code)) + " (" + (detail ? detail : "") + ")");
      }
      if (r) {
        complete(r, st, err.len);
        ++*completed;
      } else {
        return st;
      }
      continue;
    }
    if (n < 0) return fabric_error("fi_cq_read", static_cast<int>(n));
    for (ssize_t i = 0; i < n; ++i) {
      auto* r = static_cast<Request*>(entries[i].op_context);
      complete(r, Status::ok(), r->is_recv ? entries[i].len : r->bytes);
    }
    *completed += static_cast<int>(n);
    if (n < 32) break;
  }
  return Status::ok();
}

void FabricTransport::cancel(Completion* completion) {
  auto* r = static_cast<Request*>(completion->transport_request);
  if (r) fi_cancel(&ep_.get()->fid, &r->context);
}

}  // namespace

Status open_fabric_transport(const fi_info* info, std::unique_ptr<Transport>* out) {
  auto t = std::make_unique<FabricTransport>();
  EFACOLL_RETURN_IF_ERROR(t->open(info));
  *out = std::move(t);
  return Status::ok();
}

}  // namespace efacoll
