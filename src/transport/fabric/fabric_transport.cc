#include "transport/fabric/fabric_transport.h"

#include <rdma/fi_cm.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_tagged.h>
#include <unistd.h>

#include <algorithm>
#include <type_traits>

#include "common/log.h"
#include "transport/fabric/fabric_endpoint.h"
#include "transport/fabric/hmem_opt_out.h"
#include "transport/fabric/shm_name.h"

namespace efacoll {
namespace {

// FI_OPT_CUDA_API_PERMITTED (libfabric >= 1.18; an enum value, so no #ifdef can see it).
constexpr int kOptCudaApiPermitted = 10;

}  // namespace

Status fabric_error(const char* what, int rc) {
  return Status(Code::kFabric,
                std::string(what) + ": " + fi_strerror(-rc) + " (" + std::to_string(rc) + ")");
}

FabricTransport::~FabricTransport() {
  // Operations the provider would neither finish nor cancel (sends to a peer that died or behind
  // a link that went down) are still its own: closing the endpoint makes it flush them, into
  // requests and buffers about to be freed, and tcp;ofi_rxm 1.17 crashes doing so. After such a
  // failure the process is usually about to end: the endpoint and what it uses stay open.
  const size_t held = held_operations();
  if (held > 0) {
    EFACOLL_WARN(kNet, "%zu operations still held by provider %s: its endpoint is left open", held,
                 info_.provider.c_str());
    for (auto& slab : slabs_) keep_alive(std::move(slab));
    for (auto& b : bounces_) keep_alive(std::move(b));
    keep_alive(std::move(answer_pad_));
    ep_.keep_open();
    av_.keep_open();
    cq_.keep_open();
    domain_.keep_open();
    fabric_.keep_open();
    return;
  }
  ep_.reset();
  for (auto& slab : slabs_) {
    if (slab->mr) fi_close(&slab->mr->fid);
  }
  free_bounces();
  if (answer_pad_) deregister_memory(&answer_pad_->mr);
  av_.reset();
  cq_.reset();
  domain_.reset();
  fabric_.reset();
}

size_t FabricTransport::held_operations() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return slabs_.size() * std::extent<decltype(RequestSlab::requests)>::value - free_.size() -
         deferred_.size();
}

Status FabricTransport::open(const fi_info* fi, const FabricOptions& options) {
  info_.provider = fi->fabric_attr->prov_name ? fi->fabric_attr->prov_name : "?";
  info_.fabric = fi->fabric_attr->name ? fi->fabric_attr->name : "?";
  info_.domain = fi->domain_attr->name ? fi->domain_attr->name : "?";
  info_.version = fabric_library_version();
  info_.hmem = (fi->caps & FI_HMEM) != 0;
  mr_mode_ = fi->domain_attr->mr_mode;
  info_.needs_local_mr = (mr_mode_ & FI_MR_LOCAL) != 0;
  info_.inject_size = fi->tx_attr->inject_size;
  info_.max_msg_size = fi->ep_attr->max_msg_size ? fi->ep_attr->max_msg_size : SIZE_MAX;
  info_.quirks = quirks_of(info_.provider);
  peek_unsupported_ = info_.quirks.peek_never_completes;
  signature_in_data_ = info_.quirks.matches_whole_tag && fi->domain_attr->cq_data_size >= 2;
  length_in_data_ = info_.quirks.hides_truncation && fi->domain_attr->cq_data_size >= 8;
  if (fi->tx_attr->size && fi->rx_attr->size)
    info_.max_posted = std::max<size_t>(1, std::min(fi->tx_attr->size, fi->rx_attr->size) / 2);

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
  if (info_.hmem) judge_hmem();
#ifdef FI_MR_DMABUF
  export_dmabuf_ = options.export_dmabuf;
  try_dmabuf_ = info_.hmem && export_dmabuf_ && fabric_api_version() >= FI_VERSION(1, 20);
#endif
  if (info_.provider == "shm") {
    const std::string name = unique_shm_name();
    rc = fi_setname(&ep_.get()->fid, const_cast<char*>(name.c_str()), name.size() + 1);
    if (rc) EFACOLL_INFO(kNet, "shm keeps its own region name: fi_setname: %s", fi_strerror(-rc));
  }
  rc = fi_enable(ep_.get());
  if (rc) return fabric_error("fi_enable", rc);
  EFACOLL_RETURN_IF_ERROR(choose_protocol(fi, options));
  if (info_.rdma) {
    answer_pad_ = std::make_unique<AnswerPad>();
    EFACOLL_RETURN_IF_ERROR(register_memory(answer_pad_->words, sizeof(answer_pad_->words),
                                            MemKind::kHost, -1, &answer_pad_->mr));
  }
  plan_bounce();

  size_t len = 0;
  rc = fi_getname(&ep_.get()->fid, nullptr, &len);
  if (rc != -FI_ETOOSMALL && rc != 0) return fabric_error("fi_getname", rc);
  address_.resize(len);
  rc = fi_getname(&ep_.get()->fid, address_.data(), &len);
  if (rc) return fabric_error("fi_getname", rc);
  address_.resize(len);
  return Status::ok();
}

// EFA is asked, before its endpoint is enabled, to make no CUDA calls of its own
// (transport/fabric/hmem_opt_out.h): its answer is the only proof of GPUDirect RDMA that libfabric
// >= 1.18 gives. Other providers take device pointers by copying them with CUDA themselves (shm:
// its answer to the same question is always no); that is what FI_HMEM means there.
void FabricTransport::judge_hmem() {
  if (info_.provider != "efa") {
    info_.hmem_note = "device pointers go to " + info_.provider +
                      ", which copies them with CUDA itself: not GPUDirect RDMA";
    return;
  }
  const bool permitted = false;
  const HmemOptOut v = judge_cuda_api_opt_out(fi_setopt(
      &ep_.get()->fid, FI_OPT_ENDPOINT, kOptCudaApiPermitted, &permitted, sizeof(permitted)));
  info_.hmem = v.keep_hmem;
  info_.gpudirect = v.keep_hmem;
  info_.hmem_note = v.note;
  if (!v.note.empty()) EFACOLL_INFO(kNet, "%s: %s", info_.provider.c_str(), v.note.c_str());
}

Status FabricTransport::insert_peers(const std::vector<std::vector<uint8_t>>& addresses,
                                     std::vector<PeerAddr>* out) {
  out->clear();
  std::lock_guard<std::mutex> lock(mutex_);
  for (const auto& a : addresses) {
    auto it = known_peers_.find(a);
    if (it == known_peers_.end()) {
      fi_addr_t fa = FI_ADDR_NOTAVAIL;
      int n;
      {
        ProviderClock::Scope timed(clock_, "fi_av_insert");
        n = fi_av_insert(av_.get(), a.data(), 1, &fa, 0, nullptr);
      }
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
  if (info_.rdma) attr.access |= FI_WRITE | FI_REMOTE_WRITE;
  // Providers that choose keys ignore ours; the others (tcp, shm) want each key unique.
  attr.requested_key = (mr_mode_ & FI_MR_PROV_KEY) ? 0 : next_key_++;
  attr.iface = gpu ? FI_HMEM_CUDA : FI_HMEM_SYSTEM;
  if (gpu) attr.device.cuda = device;
  fid_mr* mr = nullptr;
  const bool by_dmabuf = gpu && try_dmabuf_ && register_dmabuf(ptr, bytes, attr, &mr);
  if (!by_dmabuf) {
    int rc;
    {
      ProviderClock::Scope timed(clock_, "fi_mr_regattr");
      rc = fi_mr_regattr(domain_.get(), &attr, 0, &mr);
    }
    if (rc) return fabric_error(gpu ? "fi_mr_regattr(FI_HMEM_CUDA)" : "fi_mr_regattr", rc);
  }
  if (mr_mode_ & FI_MR_ENDPOINT) {
    int rc = fi_mr_bind(mr, &ep_.get()->fid, 0);
    if (rc == 0) rc = fi_mr_enable(mr);
    if (rc) {
      fi_close(&mr->fid);
      return fabric_error("fi_mr_bind/enable", rc);
    }
  }
  out->handle = mr;
  out->desc = fi_mr_desc(mr);
  out->base = reinterpret_cast<uintptr_t>(ptr);
  out->bytes = bytes;
  out->on_gpu = gpu;
  out->by_dmabuf = by_dmabuf;
  return Status::ok();
}

// As aws-ofi-nccl does where the driver exports dma-bufs: the registration then needs no
// peer-memory kernel module. A provider or driver that refuses it once is not asked again.
bool FabricTransport::register_dmabuf(void* ptr, size_t bytes, fi_mr_attr attr, fid_mr** mr) {
#ifdef FI_MR_DMABUF
  DmabufRange range;
  Status exported = export_dmabuf_(ptr, bytes, &range);
  int rc = 0;
  if (exported.is_ok()) {
    fi_mr_dmabuf dmabuf = {};
    dmabuf.fd = range.fd;
    dmabuf.offset = range.offset;
    dmabuf.len = range.bytes;
    dmabuf.base_addr = range.base;
    attr.dmabuf = &dmabuf;
    {
      ProviderClock::Scope timed(clock_, "fi_mr_regattr(FI_MR_DMABUF)");
      rc = fi_mr_regattr(domain_.get(), &attr, FI_MR_DMABUF, mr);
    }
    close(range.fd);  // the registration holds its own reference to the dma-buf
    if (rc == 0) return true;
  }
  if (try_dmabuf_.exchange(false)) {
    EFACOLL_INFO(
        kNet, "%s: GPU memory registers by address, not dma-buf: %s", info_.provider.c_str(),
        exported.is_ok() ? fabric_error("fi_mr_regattr(FI_MR_DMABUF)", rc).message().c_str()
                         : exported.message().c_str());
  }
  *mr = nullptr;
  return false;
#else
  (void)ptr, (void)bytes, (void)attr, (void)mr;
  return false;
#endif
}

void FabricTransport::deregister_memory(MemRegion* region) {
  if (region->handle) {
    ProviderClock::Scope timed(clock_, "fi_close(memory region)");
    fi_close(&static_cast<fid_mr*>(region->handle)->fid);
  }
  *region = MemRegion();
}

Request* FabricTransport::get_request(Completion* c, size_t bytes, ReqKind kind) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (free_.empty()) {
    auto slab = std::make_unique<RequestSlab>();
    if (info_.needs_local_mr) {
      // Clear-to-send messages are received into requests: the slab is a receive buffer.
      MemRegion region;
      if (register_memory(slab->requests, sizeof(slab->requests), MemKind::kHost, -1, &region)
              .is_ok()) {
        slab->mr = static_cast<fid_mr*>(region.handle);
      }
    }
    for (Request& r : slab->requests) {
      r.cts_desc = slab->mr ? fi_mr_desc(slab->mr) : nullptr;
      free_.push_back(&r);
    }
    slabs_.push_back(std::move(slab));
  }
  Request* r = free_.back();
  free_.pop_back();
  r->kind = kind;
  r->completion = c;
  r->owner = this;
  r->bytes = bytes;
  r->truncated = false;
  c->transport_request = r;
  return r;
}

void FabricTransport::put_request(Request* r) {
  std::lock_guard<std::mutex> lock(mutex_);
  r->completion->transport_request = nullptr;
  r->completion = nullptr;
  release_bounce(r);
  free_.push_back(r);
}

void FabricTransport::complete(Request* r, const Status& status, size_t bytes) {
  Completion* c = r->completion;
  put_request(r);
  c->fn(c, status, bytes);
}

void FabricTransport::defer(Request* r, const Status& status) {
  std::lock_guard<std::mutex> lock(mutex_);
  r->deferred_status = status;
  deferred_.push_back(r);
}

Status FabricTransport::send(PeerAddr peer, const void* buf, size_t bytes, uint64_t tag,
                             const MemRegion* region, Completion* completion) {
  if (info_.rdma && bytes >= info_.rdma_threshold) {
    return rdma_send(peer, buf, bytes, tag, region, completion);
  }
  Request* r = get_request(completion, bytes, ReqKind::kSend);
  completion->tag = r->tag = tag;
  ssize_t rc;
  if (may_inject(bytes, info_.inject_size, region)) {
    // Inject: the buffer is reusable on return and no completion is generated.
    rc = post_tinject(buf, bytes, peer, tag, completion->call_seq);
    if (rc == 0) {
      r->kind = ReqKind::kInjected;
      defer(r, Status::ok());
      return Status::ok();
    }
  } else {
    rc = post_tsend(buf, bytes, region ? region->desc : nullptr, peer, tag, completion->call_seq,
                    &r->context);
    if (rc == 0) return Status::ok();
  }
  put_request(r);
  if (rc == -FI_EAGAIN) return Status(Code::kAgain, "tx queue full");
  return fabric_error("fi_tsend", static_cast<int>(rc));
}

Status FabricTransport::recv(PeerAddr peer, void* buf, size_t bytes, uint64_t tag,
                             const MemRegion* region, Completion* completion) {
  // Both sides choose the protocol from the size alone, so they always agree.
  if (info_.rdma && bytes >= info_.rdma_threshold) {
    return rdma_recv(peer, buf, bytes, tag, region, completion);
  }
  if (bounces(bytes, region)) return bounce_recv(buf, bytes, tag, completion);
  Request* r = get_request(completion, bytes, ReqKind::kRecv);
  r->tag = tag;
  ssize_t rc = post_trecv(buf, bytes, region ? region->desc : nullptr, tag, completion->ignore,
                          completion->call_seq, r);
  if (rc == 0) return Status::ok();
  put_request(r);
  if (rc == -FI_EAGAIN) return Status(Code::kAgain, "rx queue full");
  return fabric_error("fi_trecv", static_cast<int>(rc));
}

Status FabricTransport::peek(PeerAddr, uint64_t tag, uint64_t ignore, Completion* completion) {
  if (peek_unsupported_)
    return Status(Code::kUnsupported, "provider " + info_.provider + " cannot peek");
  Request* r = get_request(completion, 0, ReqKind::kPeek);
  r->tag = r->match_tag = tag;
  r->match_ignore = ignore;
  fi_msg_tagged msg = {};
  msg.addr = FI_ADDR_UNSPEC;
  msg.tag = tag;
  msg.ignore = ignore;
  msg.context = &r->context;
  ssize_t rc;
  {
    ProviderClock::Scope timed(clock_, "fi_trecvmsg(FI_PEEK)");
    rc = fi_trecvmsg(ep_.get(), &msg, FI_PEEK);
  }
  if (rc == 0) return Status::ok();
  put_request(r);
  if (rc == -FI_EAGAIN) return Status(Code::kAgain, "rx queue full");
  if (rc == -FI_ENOSYS || rc == -FI_EOPNOTSUPP || rc == -FI_EINVAL) {
    peek_unsupported_ = true;
    return Status(Code::kUnsupported, "provider " + info_.provider + " cannot peek");
  }
  return fabric_error("fi_trecvmsg(FI_PEEK)", static_cast<int>(rc));
}

Status open_fabric_transport(const fi_info* info, const FabricOptions& options,
                             std::unique_ptr<Transport>* out) {
  auto t = std::make_unique<FabricTransport>();
  EFACOLL_RETURN_IF_ERROR(t->open(info, options));
  *out = std::move(t);
  return Status::ok();
}

}  // namespace efacoll
