// The completion side of the fabric transport: reading the completion queue and its error
// entries, matching each entry to its request, running callbacks, and cancellation.
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_tagged.h>

#include <deque>
#include <mutex>
#include <string>

#include "common/log.h"
#include "transport/fabric/fabric_endpoint.h"

namespace efacoll {

// A request's CQ entry arrived (two-sided, or a step of the one-sided protocol).
Status FabricTransport::on_completion(Request* r, size_t len, uint64_t tag, size_t sent) {
  switch (r->kind) {
    case ReqKind::kAwaitCts:
      r->completion->tag = tag;
      return on_clear_to_send(r);
    case ReqKind::kRecv:
    case ReqKind::kPeek:
      r->completion->tag = tag;
      if (r->kind == ReqKind::kRecv && sent > len) {
        complete(r,
                 Status(Code::kTruncate, "message of " + std::to_string(sent) +
                                             " bytes, longer than its receive (" +
                                             std::to_string(len) + ")"),
                 len);
        return Status::ok();
      }
      complete(r, Status::ok(), len);
      return Status::ok();
    case ReqKind::kBounceRecv:
      r->completion->tag = tag;
      finish_bounce(r, len);
      return Status::ok();
    default:
      complete(r,
               r->truncated ? Status(Code::kTruncate,
                                     "it asked for " + std::to_string(r->cts.bytes) +
                                         " bytes, this message has " + std::to_string(r->own_bytes))
                            : Status::ok(),
               r->bytes);
      return Status::ok();
  }
}

Status FabricTransport::read_cq_error(int* completed) {
  fi_cq_err_entry err = {};
  ssize_t rc;
  {
    ProviderClock::Scope timed(clock_, "fi_cq_readerr");
    rc = fi_cq_readerr(cq_.get(), &err, 0);
  }
  if (rc < 0) return fabric_error("fi_cq_readerr", static_cast<int>(rc));
  // Providers disagree on the sign of err (shm reports -FI_ETRUNC).
  const int code = err.err < 0 ? -err.err : err.err;
  Status st;
  if (code == FI_ECANCELED) {
    st = Status(Code::kFabric, "canceled");
  } else if (code == FI_ENOMSG) {
    st = Status(Code::kAgain, "no such message");  // a peek that found nothing
  } else if (code == FI_ETRUNC) {
    st = Status(Code::kTruncate, "message larger than its receive buffer");
  } else {
    char buf[256] = "";
    const char* detail = fi_cq_strerror(cq_.get(), err.prov_errno, err.err_data, buf, sizeof(buf));
    st =
        Status(Code::kFabric, std::string(fi_strerror(code)) + " (" + (detail ? detail : "") + ")");
  }
  if (err.op_context == nullptr || ((err.flags & FI_REMOTE_CQ_DATA) && !(err.flags & FI_RECV)))
    return st;
  auto* r = static_cast<Request*>(err.op_context);
  // Only the first of cq_entry_fits's tests: an error entry may carry no tag (rxd's for a
  // canceled receive does not), and a canceled receive must still complete.
  if (r->completion == nullptr) {
    note_stray_entry(err.flags, err.tag);
    return Status::ok();
  }
  // An error entry need not carry the sender's CQ data: then the signature that came is not
  // known, and the tag as posted (this call's) lets the length speak instead.
  if (r->kind == ReqKind::kRecv || r->kind == ReqKind::kBounceRecv) {
    r->completion->tag = signature_in_data_ && !(err.flags & FI_REMOTE_CQ_DATA)
                             ? r->tag
                             : arrived_tag(err.tag, err.flags, err.data, r->completion->call_seq);
  }
  complete(r, st, err.len);
  ++*completed;
  return Status::ok();
}

bool cq_entry_fits(const Request& r, uint64_t flags, uint64_t tag) {
  if (r.completion == nullptr) return false;  // complete already, and not posted again
  const bool receive = r.kind == ReqKind::kRecv || r.kind == ReqKind::kAwaitCts ||
                       r.kind == ReqKind::kPeek || r.kind == ReqKind::kBounceRecv;
  if (flags & FI_RECV) return receive && ((tag ^ r.match_tag) & ~r.match_ignore) == 0;
  if (flags & (FI_SEND | FI_WRITE)) return !receive;
  return true;  // a provider that names no operation: nothing to compare
}

void FabricTransport::note_stray_entry(uint64_t flags, uint64_t tag) {
  const uint64_t seen = ++stray_entries_;
  // Once, then at every power of two: a provider that keeps doing it must not flood the log.
  if ((seen & (seen - 1)) != 0) return;
  EFACOLL_WARN(kNet,
               "provider %s reported a completion that no operation in flight can have (flags "
               "%#llx, tag %#llx): ignored; %llu so far",
               info_.provider.c_str(), static_cast<unsigned long long>(flags),
               static_cast<unsigned long long>(tag), static_cast<unsigned long long>(seen));
}

Status FabricTransport::progress(int* completed) {
  *completed = 0;
  std::deque<Request*> deferred;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    deferred.swap(deferred_);
  }
  for (Request* r : deferred) {
    complete(r, r->deferred_status, r->bytes);
    ++*completed;
  }
  EFACOLL_RETURN_IF_ERROR(retry_writes());
  fi_cq_tagged_entry entries[32];
  for (;;) {
    ssize_t n;
    {
      ProviderClock::Scope timed(clock_, "fi_cq_read");
      n = fi_cq_read(cq_.get(), entries, 32);
    }
    if (n == -FI_EAGAIN) break;
    if (n == -FI_EAVAIL) {
      EFACOLL_RETURN_IF_ERROR(read_cq_error(completed));
      continue;
    }
    if (n < 0) return fabric_error("fi_cq_read", static_cast<int>(n));
    int n_ours = static_cast<int>(n);
    for (ssize_t i = 0; i < n; ++i) {
      // A remote write's completion carries our id in its data, not a context of ours.
      const fi_cq_tagged_entry& e = entries[i];
      if ((e.flags & FI_REMOTE_CQ_DATA) && !(e.flags & FI_RECV)) {
        on_remote_write(e.data);
      } else if (auto* r = static_cast<Request*>(e.op_context);
                 !cq_entry_fits(*r, e.flags, e.tag)) {
        note_stray_entry(e.flags, e.tag);
        --n_ours;
      } else {
        EFACOLL_RETURN_IF_ERROR(
            on_completion(r, e.len, arrived_tag(e.tag, e.flags, e.data, r->completion->call_seq),
                          sent_length(e.flags, e.data, e.len)));
      }
    }
    *completed += n_ours;
    if (n < 32) break;
  }
  return Status::ok();
}

void FabricTransport::cancel(Completion* completion) {
  auto* r = static_cast<Request*>(completion->transport_request);
  if (r == nullptr || r->owner != this || r->kind == ReqKind::kInjected) return;
  if (r->kind == ReqKind::kAwaitWrite) {
    if (cancel_awaited_write(r)) defer(r, Status(Code::kFabric, "canceled"));
    return;
  }
  fi_cancel(&ep_.get()->fid, &r->context);
}

}  // namespace efacoll
