// The libfabric RDM transport's internals, shared by its two halves: fabric_transport.cc
// (endpoint, registration, tagged messages, completion dispatch) and fabric_rdma.cc (the
// one-sided protocol).
#pragma once
#include <rdma/fabric.h>
#include <rdma/fi_domain.h>

#include <atomic>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "common/kept_alive.h"
#include "efacoll/status.h"
#include "transport/fabric/fabric_transport.h"

namespace efacoll {

// Closes any libfabric object; the endpoint closes its members in reverse order of opening.
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
  // Leaves the object open for good: one the provider still works on (see ~FabricTransport).
  void keep_open() {
    keep_alive_pointer(p_);
    p_ = nullptr;
  }

 private:
  T* p_ = nullptr;
};

Status fabric_error(const char* what, int rc);

// Whether a message may go by inject (fi_tinject: no descriptor, no completion, the buffer read
// as host memory before the call returns): short enough, and not GPU memory, which EFA's inject
// would read as host memory (a fault inside libfabric). aws-ofi-nccl never injects at all.
inline bool may_inject(size_t bytes, size_t inject_size, const MemRegion* region) {
  return bytes <= inject_size && !(region && region->on_gpu);
}

// Clear-to-send: where the receiver wants a one-sided message written. 4-byte completion ids:
// EFA carries only 4 bytes of remote CQ data from libfabric 1.18 on.
struct ClearToSend {
  uint64_t addr;  // virtual address, or offset in the registration (no FI_MR_VIRT_ADDR)
  uint64_t key;
  uint64_t bytes;
  uint32_t completion_id;
  uint32_t receiver;  // kClearToSendMark | the receiving rank (Transport::answer_stale)
  // Where an answer without data goes (answer_stale): the receiving transport's answer pad,
  // whose key stays open, unlike the receive buffer's (a user's buffer's closes with its call,
  // and a write that meets a closed key breaks tcp's connection and stalls udp).
  uint64_t answer_addr;
  uint64_t answer_key;
};
constexpr uint32_t kClearToSendMark = 0xc7500000;
constexpr uint32_t kReceiverRankMask = 0xfffff;

enum class ReqKind : uint8_t {
  kSend,        // two-sided tagged send
  kRecv,        // two-sided tagged receive
  kInjected,    // finished when posted; reported at the next progress()
  kAwaitCts,    // one-sided send: waiting for the receiver's clear-to-send
  kWrite,       // one-sided send: the write is posted
  kAwaitWrite,  // one-sided receive: clear-to-send sent, waiting for the remote write
  kPeek,        // FI_PEEK: a look at the unexpected messages
  kBounceRecv   // two-sided receive through a bounce buffer (fabric_bounce.cc)
};

struct Request {
  fi_context2 context;  // first member: a CQ entry's op_context points here
  ReqKind kind = ReqKind::kSend;
  Completion* completion = nullptr;
  const void* owner = nullptr;  // the transport that posted it (several rails may share a caller)
  size_t bytes = 0;
  uint64_t tag = 0;  // as posted
  // A receive's (or peek's) tag and ignore mask as the provider got them: what it can match.
  uint64_t match_tag = 0;
  uint64_t match_ignore = 0;
  // One-sided protocol.
  const void* buf = nullptr;
  void* desc = nullptr;
  PeerAddr peer = 0;
  ClearToSend cts = {};
  uint32_t completion_id = 0;
  void* cts_desc = nullptr;  // registration of this request's cts (FI_MR_LOCAL)
  bool truncated = false;    // the receiver asked for another length: sent what fits, marked
  size_t own_bytes = 0;      // then: the length this side had to send
  // Bounce receive: where the message goes once it is in `bounce`, a buffer of the pool.
  void* dest = nullptr;
  struct Bounce* bounce = nullptr;
  Status deferred_status;  // reported by progress() for requests on the deferred list
};

// Whether a CQ entry (its flags and tag) can be the completion of `r`, the request its context
// names. udp;ofi_rxd 1.17 was seen to report one clear-to-send twice, the second time after the
// request had gone on to its write: taken as the write's completion, it let the request be reused
// while the write was in flight, and the write's own entry then found a free request (SIGSEGV)
// or another operation's. Such entries are dropped, not trusted.
bool cq_entry_fits(const Request& r, uint64_t flags, uint64_t tag);

// The longest two-sided message on a provider that a truncation stops, under the two-sided
// protocol: the engine's default chunk, so its pipelines keep their shape (fabric_bounce.cc).
constexpr size_t kTwoSidedBounceBytes = size_t(1) << 19;

// A receive buffer as long as any two-sided message can be (fabric_bounce.cc).
struct Bounce {
  std::unique_ptr<uint8_t[]> mem;
  fid_mr* mr = nullptr;
};

// Requests come in registered slabs: a clear-to-send is received into one, and providers with
// FI_MR_LOCAL want a descriptor for every receive buffer.
struct RequestSlab {
  Request requests[256];
  fid_mr* mr = nullptr;
};

class FabricTransport : public Transport {
 public:
  Status open(const fi_info* info, const FabricOptions& options);
  ~FabricTransport() override;
  size_t held_operations() const;  // neither finished nor canceled

  const TransportInfo& info() const override { return info_; }
  std::vector<uint8_t> local_address() const override { return address_; }
  Status insert_peers(const std::vector<std::vector<uint8_t>>& addresses,
                      std::vector<PeerAddr>* out) override;
  Status register_memory(void* ptr, size_t bytes, MemKind kind, int device,
                         MemRegion* out) override;
  void deregister_memory(MemRegion* region) override;
  Status send(PeerAddr peer, const void* buf, size_t bytes, uint64_t tag, const MemRegion* region,
              Completion* completion) override;
  Status recv(PeerAddr peer, void* buf, size_t bytes, uint64_t tag, const MemRegion* region,
              Completion* completion) override;
  Status peek(PeerAddr peer, uint64_t tag, uint64_t ignore, Completion* completion) override;
  Status progress(int* completed) override;
  void cancel(Completion* completion) override;
  bool oldest_provider_call(ProviderCall* out) const override { return clock_.oldest(out); }
  bool holds_operations() const override { return held_operations() > 0; }
  size_t late_writes_awaited() const override;
  Status answer_stale(const void* message, size_t bytes, const std::vector<PeerAddr>& peers,
                      Completion* completion) override;

 private:
  Status choose_protocol(const fi_info* fi, const FabricOptions& options);
  void judge_hmem();
  // FI_MR_DMABUF registration of GPU memory; false where it did not register (then by address).
  bool register_dmabuf(void* ptr, size_t bytes, fi_mr_attr attr, fid_mr** mr);
  Request* get_request(Completion* c, size_t bytes, ReqKind kind);
  void put_request(Request* r);
  void complete(Request* r, const Status& status, size_t bytes);
  void defer(Request* r, const Status& status);
  Status on_completion(Request* r, size_t len, uint64_t tag, size_t sent);
  Status read_cq_error(int* completed);
  void note_stray_entry(uint64_t flags, uint64_t tag);

  // fabric_tags.cc: every tagged send and receive goes through these.
  // call_seq: Completion::call_seq of the operation.
  ssize_t post_tsend(const void* buf, size_t len, void* desc, fi_addr_t peer, uint64_t tag,
                     uint32_t call_seq, void* context);
  ssize_t post_tinject(const void* buf, size_t len, fi_addr_t peer, uint64_t tag,
                       uint32_t call_seq);
  // Posts `r`'s receive, noting what it can match (Request::match_tag).
  ssize_t post_trecv(void* buf, size_t len, void* desc, uint64_t tag, uint64_t ignore,
                     uint32_t call_seq, Request* r);
  // The tag as its sender posted it, from a receive's completion (its signature
  // kStaleSignature where the sender's call was another than the receive's, `call_seq`).
  uint64_t arrived_tag(uint64_t tag, uint64_t flags, uint64_t data, uint32_t call_seq) const;
  // The length the sender sent, where the CQ data carries it (else `len`, what arrived).
  size_t sent_length(uint64_t flags, uint64_t data, size_t len) const;
  uint64_t cq_data(uint64_t tag, size_t len, uint32_t call_seq) const;
  // The tag the provider matches on: where the signature travels as CQ data, more of the
  // call's sequence in its place.
  uint64_t matched_tag(uint64_t tag, uint32_t call_seq) const;

  // fabric_bounce.cc
  void plan_bounce();
  // Whether a receive of `bytes` into `region` goes through a bounce buffer.
  bool bounces(size_t bytes, const MemRegion* region) const;
  Status bounce_recv(void* buf, size_t bytes, uint64_t tag, Completion* completion);
  void finish_bounce(Request* r, size_t len);
  void release_bounce(Request* r);  // with mutex_ held
  void free_bounces();

  // fabric_rdma.cc
  Status rdma_send(PeerAddr peer, const void* buf, size_t bytes, uint64_t tag,
                   const MemRegion* region, Completion* completion);
  Status rdma_recv(PeerAddr peer, void* buf, size_t bytes, uint64_t tag, const MemRegion* region,
                   Completion* completion);
  Status on_clear_to_send(Request* r);
  Status post_write(Request* r);
  Status retry_writes();
  void on_remote_write(uint64_t data);
  bool cancel_awaited_write(Request* r);

  Fid<fid_fabric> fabric_;
  Fid<fid_domain> domain_;
  Fid<fid_cq> cq_;
  Fid<fid_av> av_;
  Fid<fid_ep> ep_;
  TransportInfo info_;
  uint64_t mr_mode_ = 0;
  // GPU memory registers through dma-bufs while this holds (cleared at the first refusal).
  std::function<Status(const void*, size_t, DmabufRange*)> export_dmabuf_;
  std::atomic<bool> try_dmabuf_{false};
  // The quirk, or a peek refused at run time.
  bool peek_unsupported_ = false;
  // quirks.matches_whole_tag: a message of a mismatched call (another signature) would never be
  // taken. The signature bits travel as CQ data instead, and more of the call's sequence in
  // their place (fabric_tags.cc).
  bool signature_in_data_ = false;
  // quirks.hides_truncation: ranks in calls of other counts would take part of a message as all
  // of it. The sender's length travels as CQ data too, and such a receive reports the truncation.
  bool length_in_data_ = false;
  // Two-sided receives go through bounce buffers of this size (0: straight to their buffers).
  size_t bounce_bytes_ = 0;
  std::vector<std::unique_ptr<Bounce>> bounces_;  // all, for closing
  std::vector<Bounce*> free_bounces_;
  std::vector<uint8_t> address_;
  std::map<std::vector<uint8_t>, fi_addr_t> known_peers_;
  mutable std::mutex mutex_;  // request pool and the deferred lists
  std::vector<std::unique_ptr<RequestSlab>> slabs_;
  std::vector<Request*> free_;
  std::deque<Request*> deferred_;        // finished without a CQ entry (injected, canceled)
  std::deque<Request*> pending_writes_;  // clear-to-send arrived, write refused with EAGAIN
  // By completion id; nullptr for a canceled receive whose write may still come.
  std::unordered_map<uint32_t, Request*> awaited_writes_;
  size_t late_writes_awaited_ = 0;  // the nullptr entries of awaited_writes_
  uint32_t next_completion_id_ = 1;
  // Written, never read, by peers' answers without data (ClearToSend::answer_key); the source
  // of this side's answers too. Registered where the one-sided protocol runs; its registration
  // travels with it, kept with it where the endpoint is left open.
  struct AnswerPad {
    uint64_t words[8] = {};
    MemRegion mr;
  };
  std::unique_ptr<AnswerPad> answer_pad_;
  std::atomic<uint64_t> next_key_{1};
  std::atomic<uint64_t> stray_entries_{0};  // CQ entries no request could have (cq_entry_fits)
  // Marks the calls that make the provider progress: the completion queue's reads and the posts.
  ProviderClock clock_;
};

}  // namespace efacoll
