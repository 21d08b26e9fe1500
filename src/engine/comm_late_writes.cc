// After a failed call, the memory its receives named may still be written: a one-sided sender
// that already holds its clear-to-send writes whenever it gets to it (after a stop, say), and a
// receive the provider would not give back stays posted. EFA keeps no order between writes, and
// its own registration cache can keep a key alive after we close it, so such a write could land
// after the next call's own data. Our memory is therefore retired, never reused, its registration
// left open so that such a write lands there (MrCache::retire), until the transport awaits no such
// write and holds no operation any more, or closes.
// The user's GPU buffers lose their cached registration, which tcp, udp and shm then enforce, as
// they do for the user's host buffers, registered for the call alone.
#include <string>
#include <utility>

#include "common/log.h"
#include "core/schedule.h"
#include "efacoll/engine.h"
#include "engine/gpu_memory_to_free.h"
#include "engine/hier_state.h"
#include "engine/stage_pool.h"
#include "gpu/gpu_runtime.h"
#include "transport/mr_cache.h"

namespace efacoll {

void Comm::retire_late_write_targets(unsigned targets, const CollArgs& args,
                                     const std::string& what, StageSet* stage) {
  auto named = [targets](BufId id) { return (targets >> static_cast<unsigned>(id)) & 1u; };
  MrCache* mrs = engine_->mr_cache_.get();
  std::string retired;
  auto retire_note = [&](const char* what_memory, size_t bytes) {
    engine_->retired_bytes_held_ += bytes;
    engine_->retired_bytes_total_ += bytes;
    retired += std::string(retired.empty() ? "" : ", ") + what_memory + " (" +
               std::to_string(bytes) + " B)";
  };
  if (named(BufId::kScratch)) {
    if (mrs) mrs->retire(scratch_id_);
    if (is_gpu(args.recv_mem)) {  // the call's scratch was the GPU's (comm_execute.cc)
      if (gpu_scratch_ != nullptr) {
        engine_->retired_device_.emplace_back(gpu_scratch_device_, gpu_scratch_);
        retire_note("GPU scratch", gpu_scratch_bytes_);
        gpu_scratch_ = nullptr;
        gpu_scratch_bytes_ = 0;
        gpu_scratch_device_ = -1;
      }
    } else if (!scratch_.empty()) {
      retire_note("scratch", scratch_.size());
      engine_->retired_host_.push_back(std::move(scratch_));
      scratch_.clear();
    }
  }
  if (named(BufId::kStage) && stage != nullptr) {
    if (mrs) mrs->retire(stage->id);
    retire_note("staging slots", stage->bytes);
    engine_->retired_pinned_.push_back(engine_->stages_->retire(stage));
  }
  bool recv_named = named(BufId::kRecv), send_named = named(BufId::kSend) && !args.inplace;
  // A mixed call's device copies of the user's host buffers are ours (Comm::run_locked): retired
  // like the scratch, not reused by the next such call. A hierarchical call's phases receive
  // into the copies of the communicator the user called.
  const Comm* called = this;
  while (called->parent_) called = called->parent_;
  auto retire_copy_at = [&](const void* buffer) {
    for (GrowingDeviceBuffer* copy : {called->recv_copy_.get(), called->send_copy_.get()}) {
      if (copy->ptr == nullptr || copy->ptr != buffer) continue;
      engine_->retired_device_.emplace_back(copy->device, copy->ptr);
      retire_note("device copy of a host buffer", copy->bytes);
      copy->ptr = nullptr;
      copy->bytes = 0;
      return true;
    }
    return false;
  };
  if (recv_named && retire_copy_at(args.recvbuf)) recv_named = false;
  if (send_named && retire_copy_at(args.sendbuf)) send_named = false;
  const bool user_buffer = recv_named || send_named;
  if (mrs && is_gpu(args.recv_mem)) {
    if (named(BufId::kRecv) && args.recv_buffer_id != 0) mrs->forget(args.recv_buffer_id);
    if (named(BufId::kSend) && !args.inplace && args.send_buffer_id != 0)
      mrs->forget(args.send_buffer_id);
  }
  EFACOLL_WARN(
      kNet,
      "%s failed with receives that their senders may still write: %s%s%s; %zu B held until "
      "their writes have come",
      what.c_str(), retired.empty() ? "" : "retired, not reused: ", retired.c_str(),
      user_buffer ? (retired.empty() ? "the user's buffer may still change"
                                     : "; the user's buffer may still change")
                  : "",
      engine_->retired_bytes_held_);
}

// A sender that never meets the clear-to-send in its call (it gave up first, or its call had
// fewer messages) answers it when it drops what the failed call left (comm_stale.cc: 32 calls
// on, where the provider can peek). Until then, and for good where the sender died or the
// provider cannot peek (shm), the memory stays retired: a late sender looks the same.
void Engine::release_retired_memory() {
  if (transport_->late_writes_awaited() > 0 || transport_->holds_operations()) return;
  if (mr_cache_ && !mr_cache_->close_retired()) return;
  EFACOLL_INFO(kNet, "released %zu B retired after failed calls: every late write has come",
               retired_bytes_held_);
  free_retired_memory();
}

void Engine::free_retired_memory() {
  retired_host_.clear();
  GpuMemoryToFree memory;
  memory.device.swap(retired_device_);
  memory.pinned.swap(retired_pinned_);
  retired_bytes_held_ = 0;
  if (!memory.empty()) give_back_gpu_memory(std::move(memory));
}

}  // namespace efacoll
