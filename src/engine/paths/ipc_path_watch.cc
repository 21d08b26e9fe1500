// Ranks whose GPU calls inside the node took different paths: one small enough for the
// low-latency protocol (a kernel waiting on its peers' keys and data in GPU memory), another
// not (an exchange through the fabric). Neither would ever hear from the other: each would wait
// out its timeout, and the fabric sequence of the one that ran an exchange would run ahead.
// So a call off the protocol whose first exchange has waited stores its key in the peers'
// regions (ll_protocol.h, LlPath); a peer in the protocol stops at once on it and joins the
// exchange with its own call's key, and the exchange's comparison then fails on every rank.
#include <vector>

#include "core/call_signature.h"
#include "engine/paths/ipc_paths.h"
#include "gpu/gpu_runtime.h"
#include "gpu/ll_protocol.h"

namespace efacoll {

std::string describe_ll_mismatch(uint32_t signature, uint64_t count, uint32_t their_key, int peer) {
  std::string why = describe_mismatch(signature, ll_key_signature(their_key), peer);
  if (!why.empty()) return why;
  return "rank " + std::to_string(peer) + " called with another element count than this rank's " +
         std::to_string(count);
}

Status IpcPaths::read_ll_keys(std::vector<uint64_t>* words) {
  IpcState& s = state_;
  const int parity = static_cast<int>(s.ll_seq & 1);
  words->assign(size_, 0);
  return s.gpu->copy(words->data(), s.ll(rank_) + s.ll_region.key_byte_offset(parity, 0),
                     size_ * sizeof(uint64_t));
}

std::function<Status()> IpcPaths::watch_peers(CollKind kind, LlPath path, const IpcCallKey& call) {
  IpcState& s = state_;
  const uint64_t seq = s.ll_seq;
  const uint64_t word = ll_key_word(seq, ll_call_key(call.signature, call.count, path));
  bool announced = false;
  return [this, kind, path, call, seq, word, announced]() mutable -> Status {
    IpcState& s = state_;
    if (!announced) {
      announced = true;
      const size_t at = s.ll_region.key_byte_offset(static_cast<int>(seq & 1), rank_);
      for (int p = 0; p < size_; ++p) {
        if (p != rank_) EFACOLL_RETURN_IF_ERROR(s.gpu->copy(s.ll(p) + at, &word, sizeof(word)));
      }
      // A peer in the protocol joins exchanges of the IPC paths within microseconds of
      // reading this key; other paths it cannot join, so they look at once.
      if (path != LlPath::kOther) return Status::ok();
    }
    std::vector<uint64_t> words;
    EFACOLL_RETURN_IF_ERROR(read_ll_keys(&words));
    for (int p = 0; p < size_; ++p) {
      const uint32_t key = static_cast<uint32_t>(words[p]);
      if (p == rank_ || (words[p] >> 32) != static_cast<uint32_t>(seq) ||
          ll_key_path(key) != LlPath::kLowLatency)
        continue;
      return Status(Code::kMismatch,
                    std::string(coll_name(kind)) + " on communicator " +
                        std::to_string(services_.comm_id) + ": " +
                        describe_ll_mismatch(call.signature, call.count, key, p) + " (rank " +
                        std::to_string(p) +
                        " in the low-latency protocol; every rank must make the same call)");
    }
    return Status::ok();
  };
}

Status IpcPaths::join_peers_exchange(const IpcCallKey& call) {
  std::vector<uint64_t> words;
  EFACOLL_RETURN_IF_ERROR(read_ll_keys(&words));
  for (int p = 0; p < size_; ++p) {
    if (p == rank_ || (words[p] >> 32) != static_cast<uint32_t>(state_.ll_seq)) continue;
    const LlPath path = ll_key_path(static_cast<uint32_t>(words[p]));
    // What a peer on that path gives in its first exchange, with this rank's key and nothing
    // usable: the peers' comparison of keys fails, and no message is left unreceived.
    if (path == LlPath::kIpcDirect) {
      IpcDirectBlob mine = {};
      mine.key = call;
      std::vector<IpcDirectBlob> all(size_);
      return services_.allgather(&mine, sizeof(mine), all.data());
    }
    if (path == LlPath::kIpcRounds) {
      IpcCallKey mine = call;
      mine.well = 0;
      std::vector<IpcCallKey> all(size_);
      return services_.allgather(&mine, sizeof(mine), all.data());
    }
  }
  return Status::ok();
}

}  // namespace efacoll
