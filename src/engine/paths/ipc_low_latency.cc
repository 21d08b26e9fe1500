// Small GPU calls inside one node: the low-latency protocol (gpu/ll_protocol.h). One kernel a
// call, nothing through the host: the blocking call costs one launch and one wait.
#include <vector>

#include "core/call_signature.h"
#include "engine/lock_lent.h"
#include "engine/paths/ipc_paths.h"
#include "gpu/gpu_runtime.h"
#include "gpu/ll_protocol.h"

namespace efacoll {

// Same answer on every rank: it depends only on the call's shape, which all ranks share. The
// plan (sizes, offsets, segments) is what run_low_latency then fills with buffers.
bool IpcPaths::low_latency_plan(const CollArgs& args, LlCall* call) const {
  const size_t slot = ll_slot_bytes(services_.config->ipc_ll_max_bytes, size_);
  return slot > 0 && ll_plan(args.kind, dtype_size(args.dtype), args.count, args.recvcounts, rank_,
                             size_, args.inplace, slot, call);
}

// Every GPU call inside the node takes the next sequence, whichever protocol it runs: ranks
// whose calls differ (one small enough for this protocol, one not) stay in step after the error.
Status IpcPaths::advance_sequence() {
  IpcState& s = state_;
  uint64_t next = s.ll_seq + 1;
  if (static_cast<uint32_t>(next) == 0) {
    // Packed words and keys carry the low 32 bits of the sequence. Before they wrap, every rank
    // clears its region's data (between two barriers), so that no word left 2^32 calls ago can
    // pass for a new one; then 0 (cleared memory) is skipped, by 2 so that the parity still
    // alternates.
    uint8_t token = 1;
    std::vector<uint8_t> tokens(size_);
    EFACOLL_RETURN_IF_ERROR(services_.allgather(&token, 1, tokens.data()));
    EFACOLL_RETURN_IF_ERROR(s.gpu->zero(s.ll(rank_), s.ll_region.flags_offset()));
    EFACOLL_RETURN_IF_ERROR(services_.allgather(&token, 1, tokens.data()));
    next += 2;
  }
  s.ll_seq = next;
  return Status::ok();
}

Status IpcPaths::run_low_latency(const CollArgs& args, LlCall& call) {
  IpcState& s = state_;
  call.dtype = args.dtype;
  call.op = args.op;
  const size_t esize = dtype_size(args.dtype);
  call.recv = args.recvbuf;
  call.send = args.inplace ? args.recvbuf : args.sendbuf;
  if (args.kind == CollKind::kAllgather && args.inplace) {
    call.send = static_cast<uint8_t*>(args.recvbuf) + rank_ * args.count * esize;
  }
  for (int p = 0; p < size_; ++p) call.regions[p] = s.ll(p);
  uint64_t whole = 0;  // the whole vector's elements, as every rank's call names them
  for (int p = 0; p < size_; ++p) whole += call.bytes_to[p] / esize;
  if (args.kind == CollKind::kAllreduce) whole = args.count;
  const uint32_t signature = given_signature(args.abandoned, args.kind, args.dtype, args.op, whole);
  call.key = ll_call_key(signature, whole);
  call.seq = s.ll_seq;
  call.timeout_ns = static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(services_.config->timeout).count());
  // The lock is lent while the kernel waits for the peers, as fabric calls lend it: the peers'
  // threads may run another communicator's call first, and this process's thread for that call
  // must get in meanwhile (the runtime gives each call streams of its own).
  std::unique_lock<std::mutex>* lock =
      services_.config->ipc_ll_lend ? services_.lendable_lock() : nullptr;
  call.lends_lock = lock != nullptr;
  LlFault fault;
  Status st;
  // Counted while the kernel may run (IpcPathServices::kernel_started).
  services_.kernel_started();
  {
    LockLent lent(lock);
    st = s.gpu->run_ll(s.device, call, &fault);
  }
  services_.kernel_ended();
  const std::string what = std::string(coll_name(args.kind)) + " on communicator " +
                           std::to_string(services_.comm_id) + ": ";
  if (st.code() == Code::kTimeout) return Status(Code::kTimeout, what + st.message());
  if (st.code() == Code::kMismatch) {
    std::string why = describe_ll_mismatch(signature, whole, fault.their_key, fault.peer);
    // A peer off the protocol waits in its exchange: this rank's key goes there too.
    IpcCallKey key;
    key.count = whole;
    key.signature = signature;
    Status joined = join_peers_exchange(key);
    if (!joined.is_ok()) why += "; then, joining its exchange: " + joined.message();
    return Status(Code::kMismatch,
                  what + why + " (low-latency protocol; every rank must make the same call)");
  }
  return st;
}

}  // namespace efacoll
