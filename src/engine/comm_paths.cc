// How a communicator makes its node and hierarchical paths (engine/paths/) and what it hands
// them: its allgather through the fabric, its lock to lend, its way of growing device buffers,
// and sub-communicators made through the engine.
#include <memory>
#include <utility>

#include "coll/registry.h"
#include "efacoll/bootstrap.h"
#include "engine/comm_core.h"
#include "engine/engine_core.h"
#include "engine/paths/hierarchical.h"
#include "engine/paths/ipc_paths.h"
#include "engine/ring_plan.h"
#include "gpu/ll_protocol.h"

namespace efacoll {

Status CommCore::host_allgather(const void* in, size_t bytes, void* out, size_t chunk_bytes) {
  CollArgs a;
  a.kind = CollKind::kAllgather;
  a.sendbuf = in;
  a.recvbuf = out;
  a.count = bytes;
  a.dtype = DType::kByte;
  RingArgs ring;
  ring.rank = rank_;
  ring.nranks = size_;
  ring.elem_size = 1;
  ring.block_counts.assign(size_, bytes);
  ring.chunk_bytes = chunk_bytes ? chunk_bytes : engine_->config().chunk_bytes;
  Schedule schedule;
  EFACOLL_RETURN_IF_ERROR(build_call_schedule(
      *find_schedule_builder(Algo::kRing, CollKind::kAllgather), ring, 0, 1, &schedule));
  return run_schedule(a, schedule, bytes, bytes * size_, ring.chunk_bytes);
}

// Collective: every member calls it at the same point (the first GPU call that could use IPC).
bool CommCore::ipc_usable(int device) {
  if (!ipc_) {
    IpcPathServices services;
    services.gpu = engine_->gpu();
    services.mappings = engine_->ipc_mappings();
    services.config = &engine_->config();
    services.process_key = engine_->process_key();
    services.rank = rank_;
    services.size = size_;
    services.comm_id = id_;
    services.allgather = [this](const void* in, size_t bytes, void* out) {
      return host_allgather(in, bytes, out);
    };
    services.lendable_lock = [this] { return lendable_lock(); };
    EngineCore* engine = engine_;
    services.kernel_started = [engine] { engine->ll_kernel_started(); };
    services.kernel_ended = [engine] { engine->ll_kernel_ended(); };
    ipc_ = std::make_unique<IpcPaths>(std::move(services));
    ipc_->set_up(device);
  }
  return ipc_->usable_on(device);
}

void CommCore::turn_off_low_latency() {
  if (ipc_) ipc_->turn_off_low_latency();
}

void CommCore::watch_ll_peers(CollKind kind, LlPath path, const CollArgs& args,
                              const RingArgs& ring) {
  stall_check_ = ipc_->watch_peers(kind, path, ipc_call_key(args, ring));
}

// Collective at its first call, as ipc_usable.
bool CommCore::hier_usable(int device) {
  if (!hier_) {
    HierarchicalServices services;
    services.gpu = engine_->gpu();
    services.rank = rank_;
    services.size = size_;
    services.per_node = hier_per_node_;
    services.comm_id = id_;
    services.ipc_wanted = engine_->config().ipc_chunk_bytes > 0;
    services.allgather = [this](const void* in, size_t bytes, void* out) {
      return host_allgather(in, bytes, out);
    };
    services.make_sub = [this](Bootstrap& boot, Bootstrap& parent_boot,
                               std::unique_ptr<CommCore>* out) {
      EFACOLL_RETURN_IF_ERROR(engine_->create_comm(boot, out, &model_, &parent_boot));
      // Its calls run inside ours, and lend our call's lock as ours would.
      (*out)->parent_ = this;
      return Status::ok();
    };
    services.grow = [this](GrowingDeviceBuffer& buffer, int on, size_t want) {
      return grow(buffer, on, want);
    };
    hier_ = std::make_unique<HierarchicalPath>(std::move(services));
    hier_->set_up(device);
  }
  return hier_->usable_on(device);
}

Status CommCore::run_hierarchical(const CollArgs& args) {
  // Memory earlier calls retired is released here too when it can be, before the phases: inside
  // them nothing is (comm_late_writes.cc), and where every call is hierarchical no fabric schedule
  // runs outside them.
  engine_->release_retired_memory();
  struct UnderWay {
    explicit UnderWay(EngineCore* engine) : engine_(engine) {
      engine_->hierarchical_call_started();
    }
    ~UnderWay() { engine_->hierarchical_call_ended(); }
    EngineCore* engine_;
  } under_way(engine_);
  return hier_->run(args);
}

}  // namespace efacoll
