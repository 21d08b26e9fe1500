// After a failed call, the memory its receives named may still be written: a one-sided sender
// that already holds its clear-to-send writes whenever it gets to it (after a stop, say), and a
// receive the provider would not give back stays posted. EFA keeps no order between writes, and
// its own registration cache can keep a key alive after we close it, so such a write could land
// after the next call's own data. Our memory is therefore retired, never reused, its registration
// left open so that such a write lands there (MrCache::retire), until the transport awaits no such
// write and holds no operation any more, or closes.
// The registrations of everything the call used, the user's buffers too, are retired with it
// (MrCache::end_call): closing a registration under a posted operation or an incoming write is
// undefined on EFA, breaks tcp's connection and stalls udp. The user's buffers may still change.
#include <string>
#include <utility>

#include "common/log.h"
#include "core/schedule.h"
#include "engine/comm_core.h"
#include "engine/engine_core.h"
#include "engine/gpu_memory_to_free.h"
#include "engine/growing_device_buffer.h"
#include "engine/paths/hierarchical.h"
#include "engine/paths/host_copies.h"
#include "engine/stage_pool.h"
#include "gpu/gpu_runtime.h"
#include "transport/mr_cache.h"

namespace efacoll {

void CommCore::retire_late_write_targets(unsigned targets, const CollArgs& args,
                                         const std::string& what, StageSet* stage) {
  auto named = [targets](BufId id) { return (targets >> static_cast<unsigned>(id)) & 1u; };
  MrCache* mrs = engine_->mr_cache();
  std::string retired;
  auto retire_note = [&](const char* what_memory, size_t bytes) {
    engine_->retired().bytes_held += bytes;
    engine_->retired().bytes_total += bytes;
    retired += std::string(retired.empty() ? "" : ", ") + what_memory + " (" +
               std::to_string(bytes) + " B)";
  };
  GpuMemoryToFree* retired_gpu = engine_->retired().gpu.get();
  // Out of use: the next call that needs it grows a new one (CommCore::grow).
  auto retire_device = [&](GrowingDeviceBuffer* b, const char* what_memory) {
    if (mrs && b->buffer_id != 0) mrs->retire(b->buffer_id);
    retired_gpu->add_device(b->device, b->ptr, b->bytes);
    retire_note(what_memory, b->bytes);
    b->ptr = nullptr;
    b->bytes = 0;
    b->buffer_id = 0;
  };
  if (named(BufId::kScratch)) {
    if (mrs) mrs->retire(scratch_id_);
    if (is_gpu(args.recv_mem)) {  // the call's scratch was the GPU's (comm_execute.cc)
      if (gpu_scratch_->ptr != nullptr) retire_device(gpu_scratch_.get(), "GPU scratch");
    } else if (!scratch_.empty()) {
      retire_note("scratch", scratch_.size());
      engine_->retired().host.push_back(std::move(scratch_));
      scratch_.clear();
    }
  }
  if (named(BufId::kStage) && stage != nullptr) {
    if (mrs) mrs->retire(stage->id);
    const size_t bytes = stage->bytes;  // retire() ends the set
    retire_note("staging slots", bytes);
    retired_gpu->add_pinned(engine_->stages()->retire(stage), bytes);
  }
  bool recv_named = named(BufId::kRecv), send_named = named(BufId::kSend) && !args.inplace;
  // The call's buffers may be ours, not the user's: a small GPU call's pinned copies
  // (run_gpu_via_host), a mixed call's device copies of the user's host buffers (run_locked), a
  // hierarchical call's slices. Retired like the scratch, not reused by the next call. A
  // hierarchical call's phases run on sub-communicators, in buffers of the communicator called.
  auto within = [](const void* p, const void* base, size_t bytes) {
    const auto* b = static_cast<const uint8_t*>(base);
    const auto* q = static_cast<const uint8_t*>(p);
    return base != nullptr && q >= b && q < b + bytes;
  };
  auto retire_ours_at = [&](const void* buffer) {
    // An abandoned phase after the one that retired it (paths/hierarchical.cc) runs there still.
    for (const GpuMemoryToFree::Block& b : retired_gpu->blocks)
      if (within(buffer, b.ptr, b.bytes)) return true;
    for (CommCore* c = this; c != nullptr; c = c->parent_) {
      size_t bytes = 0;
      if (c->host_copies_->retire_if_holds(buffer, retired_gpu, &bytes)) {
        retire_note("pinned copies of GPU buffers", bytes);
        return true;
      }
      std::vector<std::pair<GrowingDeviceBuffer*, const char*>> grown = {
          {c->recv_copy_.get(), "device copy of a host buffer"},
          {c->send_copy_.get(), "device copy of a host buffer"}};
      if (c->hier_) {
        for (auto named : c->hier_->buffers()) grown.push_back(named);
      }
      for (auto [b, what_memory] : grown) {
        if (!within(buffer, b->ptr, b->bytes)) continue;
        retire_device(b, what_memory);
        return true;
      }
    }
    return false;
  };
  if (recv_named && retired_gpu && retire_ours_at(args.recvbuf)) recv_named = false;
  if (send_named && retired_gpu && retire_ours_at(args.sendbuf)) send_named = false;
  const bool user_buffer = recv_named || send_named;
  // Out of the cache, still open until no write can reach them (MrCache::end_call retired the
  // call's own; other cached registrations of these allocations go too).
  if (mrs && is_gpu(args.recv_mem)) {
    if (recv_named && args.recv_buffer_id != 0) mrs->retire(args.recv_buffer_id);
    if (send_named && args.send_buffer_id != 0) mrs->retire(args.send_buffer_id);
  }
  EFACOLL_WARN(
      kNet,
      "%s failed with receives that their senders may still write: %s%s%s; %zu B held until "
      "their writes have come",
      what.c_str(), retired.empty() ? "" : "retired, not reused: ", retired.c_str(),
      user_buffer ? (retired.empty() ? "the user's buffer may still change"
                                     : "; the user's buffer may still change")
                  : "",
      engine_->retired().bytes_held);
}

// A sender that never meets the clear-to-send in its call (it gave up first, or its call had
// fewer messages) answers it when it drops what the failed call left (comm_stale.cc: 32 calls
// on, where the provider can peek). Until then, and for good where the sender died or the
// provider cannot peek (shm), the memory stays retired: a late sender looks the same.
void EngineCore::release_retired_memory() {
  const size_t retired_registrations = mr_cache_ ? mr_cache_->retired() : 0;
  if (retired_->bytes_held == 0 && retired_registrations == 0) return;
  if (hierarchical_calls_under_way_ > 0) return;
  if (transport_->late_writes_awaited() > 0 || transport_->holds_operations()) return;
  if (mr_cache_ && !mr_cache_->close_retired()) return;
  if (retired_->bytes_held == 0) return;  // registrations alone: nothing else to free
  EFACOLL_INFO(kNet, "released %zu B retired after failed calls: every late write has come",
               retired_->bytes_held);
  free_retired_memory();
}

void EngineCore::free_retired_memory() {
  retired_->host.clear();
  retired_->bytes_held = 0;
  if (retired_->gpu && !retired_->gpu->empty()) {
    GpuMemoryToFree memory;
    memory.append(retired_->gpu.get());
    give_back_gpu_memory(std::move(memory));
  }
}

}  // namespace efacoll
