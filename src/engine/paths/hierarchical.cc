// GPU collectives across nodes, composed of collectives on two sub-communicators: the ranks of
// this node (CUDA IPC over NVLink) and the ranks of the same local index on every node (the
// fabric, each GPU over its own NICs). Each phase picks its own protocol (low-latency, direct,
// rounds, staged fabric) as a flat call of that shape would.
//   allreduce:      reduce-scatter in the node -> allreduce of the slice across -> allgather in
//   allgather:      allgather across -> allgather in the node -> blocks into rank order
//   reduce-scatter: blocks into node-major order -> reduce-scatter in the node -> across
// Ranks are numbered node by node (rank = node * L + local), as equal_contiguous_nodes found.
#include "engine/paths/hierarchical.h"

#include <algorithm>
#include <cstring>
#include <functional>
#include <vector>

#include "coll/ring_layout.h"
#include "common/log.h"
#include "efacoll/bootstrap.h"
#include "engine/paths/ipc_state.h"
#include "gpu/gpu_runtime.h"

namespace efacoll {
namespace {

// Members of a subset of a communicator meet through the whole communicator's allgather: every
// member of the parent takes part (each for its own subset), then keeps its subset's blobs.
class SubsetBootstrap : public Bootstrap {
 public:
  using Gather = std::function<Status(const void*, size_t, void*)>;
  SubsetBootstrap(Gather gather, int parent_size, std::vector<int> members, int rank)
      : gather_(std::move(gather)),
        parent_size_(parent_size),
        members_(std::move(members)),
        rank_(rank) {}
  int rank() const override { return rank_; }
  int size() const override { return static_cast<int>(members_.size()); }
  Status allgather(const void* in, size_t bytes, void* out) override {
    std::vector<uint8_t> all(bytes * parent_size_);
    EFACOLL_RETURN_IF_ERROR(gather_(in, bytes, all.data()));
    for (size_t i = 0; i < members_.size(); ++i) {
      std::memcpy(static_cast<uint8_t*>(out) + i * bytes, &all[members_[i] * bytes], bytes);
    }
    return Status::ok();
  }

 private:
  Gather gather_;
  int parent_size_;
  std::vector<int> members_;
  int rank_;
};

}  // namespace

HierarchicalPath::HierarchicalPath(HierarchicalServices services)
    : services_(std::move(services)),
      rank_(services_.rank),
      size_(services_.size),
      per_node_(services_.per_node) {}

// A node whose GPUs cannot reach each other sends the whole communicator down the staged fabric
// path.
void HierarchicalPath::set_up(int device) {
  device_ = device;
  const int local = rank_ % per_node_, node = rank_ / per_node_;
  std::vector<int> node_members, cross_members;
  for (int i = 0; i < per_node_; ++i) node_members.push_back(node * per_node_ + i);
  for (int k = 0; k < size_ / per_node_; ++k) cross_members.push_back(k * per_node_ + local);
  std::vector<int> everyone(size_);
  for (int r = 0; r < size_; ++r) everyone[r] = r;
  SubsetBootstrap node_boot(services_.allgather, size_, node_members, local);
  SubsetBootstrap cross_boot(services_.allgather, size_, cross_members, node);
  // Under MPI_THREAD_MULTIPLE another thread's creation can make one subset take more rounds
  // to agree on an id than another, and each round is an allgather of the whole parent.
  SubsetBootstrap parent_boot(services_.allgather, size_, everyone, rank_);
  Status st = services_.make_sub(node_boot, parent_boot, &node_);
  Status st2 = services_.make_sub(cross_boot, parent_boot, &cross_);
  struct Blob {
    int32_t ok;
    char uuid[16];
  } mine = {};
  mine.ok = st.is_ok() && st2.is_ok() && services_.ipc_wanted && node_->ipc_in_node(device);
  std::string uuid;
  if (services_.gpu->device_uuid(device, &uuid).is_ok()) {
    std::memcpy(mine.uuid, uuid.data(), std::min(uuid.size(), sizeof(mine.uuid)));
  }
  std::vector<Blob> all(size_);
  if (!services_.allgather(&mine, sizeof(mine), all.data()).is_ok()) return;
  usable_ = std::all_of(all.begin(), all.end(), [](const Blob& b) { return b.ok != 0; });
  // Nodes declared on one machine share its GPUs: a low-latency kernel spinning on one GPU would
  // hold off another node's kernel on the same GPU (processes' kernels take turns).
  if (usable_ && any_gpu_shared(all)) node_->turn_off_low_latency();
  EFACOLL_INFO(kColl, "communicator %u: %d nodes of %d; GPU collectives %s", services_.comm_id,
               size_ / per_node_, per_node_,
               usable_ ? "inside nodes over CUDA IPC, across them over the fabric"
                       : "staged over the fabric (a node's GPUs cannot use CUDA IPC)");
}

bool HierarchicalPath::fits(const CollArgs& args, int nranks) {
  if (args.kind != CollKind::kReduceScatter) return true;
  for (int r = 1; r < nranks; ++r) {
    if (args.recvcounts[r] != args.recvcounts[0]) return false;
  }
  return true;
}

// The phases of one hierarchical call, on the node and cross-node sub-communicators. Once one
// fails on this rank, the later ones still run, abandoned: peers that wait in them stop as on a
// mismatch instead of at EFACOLL_TIMEOUT (a rank of another node whose own phases matched), and
// every sub-communicator's sequence advances alike on all its ranks. The first error is the
// call's.
class PhaseRunner {
 public:
  void run(CommCore& sub, CollArgs args) {
    args.abandoned = !first_.is_ok();
    local(sub.run_phase(args));
  }
  void local(const Status& st) {
    if (first_.is_ok()) first_ = st;
  }
  bool ok() const { return first_.is_ok(); }
  const Status& result() const { return first_; }

 private:
  Status first_;
};

Status HierarchicalPath::run(const CollArgs& args) {
  switch (args.kind) {
    case CollKind::kAllgather:
      return run_allgather(args);
    case CollKind::kReduceScatter:
      return run_reduce_scatter(args);
    default:
      return run_allreduce(args);
  }
}

Status HierarchicalPath::run_allgather(const CollArgs& args) {
  GpuRuntime* gpu = services_.gpu;
  const int per_node = per_node_, nodes = size_ / per_node;
  const size_t block = args.count * dtype_size(args.dtype);
  auto* recv = static_cast<uint8_t*>(args.recvbuf);
  EFACOLL_RETURN_IF_ERROR(services_.grow(slice_, args.device, block * nodes));
  EFACOLL_RETURN_IF_ERROR(services_.grow(gathered_, args.device, block * size_));
  // Taken now: a phase that fails retires what it received into (comm_late_writes.cc), and the
  // later phases, abandoned, still run in the same memory.
  void* const slice = slice_.ptr;
  void* const gathered_ptr = gathered_.ptr;
  const uint64_t slice_id = slice_.buffer_id, gathered_id = gathered_.buffer_id;

  CollArgs across = args;  // my block from every node: [node]
  across.sendbuf = args.inplace ? recv + rank_ * block : args.sendbuf;
  across.send_buffer_id = args.inplace ? args.recv_buffer_id : args.send_buffer_id;
  across.send_mem = args.inplace ? args.recv_mem : args.send_mem;
  across.inplace = false;
  across.recvbuf = slice;
  across.recv_buffer_id = slice_id;
  across.recv_mem = MemKind::kDevice;
  PhaseRunner phases;
  phases.run(*cross_, across);

  CollArgs inside = across;  // every local rank's bundle: [local][node]
  inside.count = args.count * nodes;
  inside.sendbuf = slice;
  inside.send_buffer_id = slice_id;
  inside.send_mem = MemKind::kDevice;
  inside.recvbuf = gathered_ptr;
  inside.recv_buffer_id = gathered_id;
  phases.run(*node_, inside);
  EFACOLL_RETURN_IF_ERROR(phases.result());

  // [local][node] -> rank order [node][local].
  const auto* gathered = static_cast<const uint8_t*>(gathered_ptr);
  for (int l = 0; l < per_node; ++l) {
    EFACOLL_RETURN_IF_ERROR(gpu->copy_2d(recv + l * block, per_node * block,
                                         gathered + l * nodes * block, block, block, nodes));
  }
  return Status::ok();
}

Status HierarchicalPath::run_reduce_scatter(const CollArgs& args) {
  GpuRuntime* gpu = services_.gpu;
  const int per_node = per_node_, nodes = size_ / per_node;
  const size_t count = args.recvcounts[0], block = count * dtype_size(args.dtype);
  const auto* input = static_cast<const uint8_t*>(args.inplace ? args.recvbuf : args.sendbuf);
  EFACOLL_RETURN_IF_ERROR(services_.grow(gathered_, args.device, block * size_));
  EFACOLL_RETURN_IF_ERROR(services_.grow(slice_, args.device, block * nodes));
  // Taken now: a phase that fails retires what it received into (comm_late_writes.cc), and the
  // later phases, abandoned, still run in the same memory.
  void* const slice = slice_.ptr;
  void* const gathered_ptr = gathered_.ptr;
  const uint64_t slice_id = slice_.buffer_id, gathered_id = gathered_.buffer_id;

  // Rank order [node][local] -> [local][node]: each local rank's share is then contiguous.
  auto* gathered = static_cast<uint8_t*>(gathered_ptr);
  PhaseRunner phases;
  for (int l = 0; l < per_node && phases.ok(); ++l) {
    phases.local(gpu->copy_2d(gathered + l * nodes * block, block, input + l * block,
                              per_node * block, block, nodes));
  }
  const std::vector<size_t> inside_counts(per_node, count * nodes);
  CollArgs inside = args;
  inside.recvcounts = inside_counts.data();
  inside.sendbuf = gathered_ptr;
  inside.send_buffer_id = gathered_id;
  inside.send_mem = MemKind::kDevice;
  inside.inplace = false;
  inside.recvbuf = slice;
  inside.recv_buffer_id = slice_id;
  inside.recv_mem = MemKind::kDevice;
  phases.run(*node_, inside);

  // The input is no longer read: in place, the result may now land at the start of recvbuf.
  const std::vector<size_t> across_counts(nodes, count);
  CollArgs across = inside;
  across.recvcounts = across_counts.data();
  across.sendbuf = slice;
  across.send_buffer_id = slice_id;
  across.recvbuf = args.recvbuf;
  across.recv_buffer_id = args.recv_buffer_id;
  across.recv_mem = args.recv_mem;
  phases.run(*cross_, across);
  return phases.result();
}

Status HierarchicalPath::run_allreduce(const CollArgs& args) {
  GpuRuntime* gpu = services_.gpu;
  const int per_node = per_node_, local = rank_ % per_node;
  const size_t esize = dtype_size(args.dtype);
  // even_blocks puts the larger blocks first: every block fits in blocks[0].
  const std::vector<size_t> blocks = even_blocks(args.count, per_node);
  const size_t widest = blocks[0] * esize;
  EFACOLL_RETURN_IF_ERROR(services_.grow(slice_, args.device, widest));
  // Taken now: a phase that fails retires what it received into (comm_late_writes.cc), and the
  // later phases, abandoned, still run in the same memory.
  void* const slice = slice_.ptr;
  const uint64_t slice_id = slice_.buffer_id;

  CollArgs rs = args;
  rs.kind = CollKind::kReduceScatter;
  rs.recvcounts = blocks.data();
  rs.sendbuf = args.inplace ? args.recvbuf : args.sendbuf;
  rs.send_buffer_id = args.inplace ? args.recv_buffer_id : args.send_buffer_id;
  rs.send_mem = args.inplace ? args.recv_mem : args.send_mem;
  rs.inplace = false;
  rs.recv_mem = MemKind::kDevice;
  rs.recvbuf = slice;
  rs.recv_buffer_id = slice_id;
  PhaseRunner phases;
  phases.run(*node_, rs);

  if (blocks[local] > 0) {
    CollArgs ar = args;
    ar.recvbuf = slice;
    ar.recv_buffer_id = slice_id;
    ar.sendbuf = nullptr;
    ar.inplace = true;
    ar.count = blocks[local];
    phases.run(*cross_, ar);
  }

  // Equal blocks gather straight into the result; uneven ones gather padded, then close up.
  const bool even = args.count % per_node == 0;
  CollArgs ag = args;
  ag.kind = CollKind::kAllgather;
  ag.sendbuf = slice;
  ag.send_mem = MemKind::kDevice;
  ag.send_buffer_id = slice_id;
  ag.inplace = false;
  ag.count = blocks[0];
  if (!even) {
    EFACOLL_RETURN_IF_ERROR(services_.grow(gathered_, args.device, widest * per_node));
    ag.recvbuf = gathered_.ptr;
    ag.recv_buffer_id = gathered_.buffer_id;
  }
  phases.run(*node_, ag);
  EFACOLL_RETURN_IF_ERROR(phases.result());
  if (even) return Status::ok();
  size_t at = 0;
  for (int q = 0; q < per_node; ++q) {
    auto* dst = static_cast<uint8_t*>(args.recvbuf) + at;
    const auto* src = static_cast<const uint8_t*>(gathered_.ptr) + q * widest;
    if (blocks[q]) EFACOLL_RETURN_IF_ERROR(gpu->copy(dst, src, blocks[q] * esize));
    at += blocks[q] * esize;
  }
  return Status::ok();
}

std::vector<std::pair<GrowingDeviceBuffer*, const char*>> HierarchicalPath::buffers() {
  return {{&slice_, "hierarchical slice"}, {&gathered_, "hierarchical gather buffer"}};
}

}  // namespace efacoll
