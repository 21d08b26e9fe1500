// The hierarchical GPU path across nodes: each call is composed of calls on two
// sub-communicators, the ranks of this node (whose own plans take CUDA IPC) and the ranks of the
// same local index on every node (the fabric). What each phase moves: hierarchical.cc.
//
// Owns the sub-communicators and its device buffers; uses only the services below. Lifecycle:
// set_up once (collective, every rank learns the same answer), run per call on every rank alike,
// buffers() for retiring after a failed call and at the communicator's end.
#pragma once
#include <cstddef>
#include <functional>
#include <memory>
#include <utility>
#include <vector>

#include "efacoll/engine.h"
#include "efacoll/status.h"
#include "engine/comm_core.h"
#include "engine/growing_device_buffer.h"

namespace efacoll {

class Bootstrap;
class GpuRuntime;

// What the hierarchical path needs of the engine and the communicator it belongs to.
struct HierarchicalServices {
  GpuRuntime* gpu = nullptr;
  int rank = 0, size = 1;
  int per_node = 1;  // nodes of this many consecutive ranks (rank = node * per_node + local)
  uint32_t comm_id = 0;
  bool ipc_wanted = true;  // EngineConfig::ipc_chunk_bytes > 0
  // Every member's `bytes` from `in` into `out` in rank order, on the whole communicator.
  std::function<Status(const void* in, size_t bytes, void* out)> allgather;
  // A sub-communicator whose members meet through `boot` (`parent_boot`: the whole
  // communicator, for agreeing on its id); its calls run inside the communicator's calls.
  std::function<Status(Bootstrap& boot, Bootstrap& parent_boot, std::unique_ptr<CommCore>* out)>
      make_sub;
  // Grows one of the path's buffers to `want` bytes on `device` (CommCore::grow).
  std::function<Status(GrowingDeviceBuffer& buffer, int device, size_t want)> grow;
};

class HierarchicalPath {
 public:
  explicit HierarchicalPath(HierarchicalServices services);
  HierarchicalPath(const HierarchicalPath&) = delete;
  HierarchicalPath& operator=(const HierarchicalPath&) = delete;

  // Collective, at the first call that could take it: makes the sub-communicators and checks the
  // node's GPUs reach each other over CUDA IPC. Every rank learns the same answer.
  void set_up(int device);
  bool usable_on(int device) const { return usable_ && device_ == device; }
  // Reduce-scatter only with equal blocks (MPI_Reduce_scatter_block's shape); the same answer on
  // every rank, since all pass the same counts. Asked before the path is set up.
  static bool fits(const CollArgs& args, int nranks);
  Status run(const CollArgs& args);

  // Its device buffers, named for the log (retired after a failed call, given back at the end),
  // and its sub-communicators (whose memory goes with it).
  std::vector<std::pair<GrowingDeviceBuffer*, const char*>> buffers();
  std::vector<CommCore*> subs() { return {node_.get(), cross_.get()}; }

 private:
  Status run_allreduce(const CollArgs& args);
  Status run_allgather(const CollArgs& args);
  Status run_reduce_scatter(const CollArgs& args);

  HierarchicalServices services_;
  const int rank_, size_, per_node_;
  bool usable_ = false;
  int device_ = -1;
  std::unique_ptr<CommCore> node_;   // this node's ranks, in order
  std::unique_ptr<CommCore> cross_;  // one rank per node, all of the same local index
  GrowingDeviceBuffer slice_, gathered_;
};

}  // namespace efacoll
