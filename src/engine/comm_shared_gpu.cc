// Ranks of one node that share a GPU (without MPS, processes take turns on it): IPC direct and
// the fabric path timed at a few sizes per collective, when such a communicator first runs on
// GPU buffers and the tuner chooses (tune/shared_gpu_paths.h). Collective: every member reaches
// it at the same call, since whether ranks share a GPU was agreed at IPC's set-up.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "common/log.h"
#include "efacoll/engine.h"
#include "engine/gpu_memory_to_free.h"
#include "engine/growing_device_buffer.h"
#include "engine/ipc_state.h"
#include "engine/ring_plan.h"
#include "transport/mr_cache.h"
#include "transport/transport.h"
#include "tune/algo.h"
#include "tune/cost_model.h"
#include "tune/shared_gpu_paths.h"

namespace efacoll {
namespace {

// Repeats per path and size, the paths interleaved batch by batch so that a slow stretch falls
// on both; a batch's calls make one sample (their mean).
constexpr int kRepeats = 7;
constexpr int kBatch = 3;
constexpr CollKind kKinds[] = {CollKind::kAllreduce, CollKind::kAllgather,
                               CollKind::kReduceScatter};

}  // namespace

Status Comm::measure_shared_gpu(int device) {
  const size_t most = kSharedGpuPointBytes[kSharedGpuPoints - 1];
  GrowingDeviceBuffer send, recv;
  Status st = grow(send, device, most);
  if (st.is_ok()) st = grow(recv, device, most);
  // Zeros: garbage floats may be denormals, which the host path's reduction runs slowly.
  if (st.is_ok()) st = engine_->gpu_->zero(send.ptr, most);
  const bool was_user_call = user_call_;
  user_call_ = false;  // not the user's: no online trials start here
  const EngineConfig& config = engine_->config_;
  const size_t chunk = std::min(config.chunk_bytes, engine_->transport_->info().max_msg_size);
  // Per collective and size: IPC direct's time and the model's prediction, then the fabric's.
  std::vector<double> times, predicted;
  std::vector<size_t> recvcounts(size_);
  for (CollKind kind : kKinds) {
    for (size_t point = 0; point < kSharedGpuPoints && st.is_ok(); ++point) {
      const size_t floats = kSharedGpuPointBytes[point] / sizeof(float);
      const size_t per_rank = std::max<size_t>(floats / size_, 1);
      CollArgs a;
      a.kind = kind;
      a.sendbuf = send.ptr;
      a.recvbuf = recv.ptr;
      a.send_mem = a.recv_mem = MemKind::kDevice;
      a.send_buffer_id = send.buffer_id;
      a.recv_buffer_id = recv.buffer_id;
      a.device = device;
      a.dtype = DType::kFloat32;
      a.op = ROp::kSum;
      a.count = kind == CollKind::kAllreduce ? floats : per_rank;
      recvcounts.assign(size_, per_rank);
      a.recvcounts = recvcounts.data();
      RingPlan plan;
      st = plan_ring(a, rank_, size_, chunk, &plan);
      if (!st.is_ok()) break;
      CostInputs in;
      in.kind = kind;
      in.nranks = size_;
      in.bytes = call_bytes(plan.ring);
      const double ipc_model = predict_node_us(model_, Algo::kIpc, in);
      const double fabric_model =
          tune_algo(model_, algo_inputs(kind, plan.ring, hier_per_node_, config), config.algo,
                    false)
              .predicted_us;
      const bool direct = ipc_direct_possible(a);
      const bool via_host = most_bytes_of_a_rank(kind, plan.ring) <= config.gpu_host_path_max;
      std::vector<double> t[2];
      for (int rep = -1; rep < kRepeats && st.is_ok(); ++rep) {  // -1: a warm-up
        for (int path = 0; path < 2 && st.is_ok(); ++path) {
          const auto start = std::chrono::steady_clock::now();
          for (int b = 0; b < kBatch && st.is_ok(); ++b) {
            RingPlan p = plan;
            if (path == 0) {
              st = direct ? run_ipc_direct(a, p.ring) : run_ipc(a, p.ring);
            } else if (via_host) {
              st = run_gpu_via_host(a, p.ring, p.send_bytes, p.recv_bytes, p.result_bytes);
            } else {
              st = run_planned_schedule(a, p);
            }
          }
          const std::chrono::duration<double, std::micro> spent =
              std::chrono::steady_clock::now() - start;
          if (rep >= 0) t[path].push_back(spent.count() / kBatch);
        }
      }
      for (int path = 0; path < 2 && st.is_ok(); ++path) {
        std::sort(t[path].begin(), t[path].end());
        times.push_back(t[path][t[path].size() / 2]);
        predicted.push_back(path == 0 ? ipc_model : fabric_model);
      }
    }
  }
  user_call_ = was_user_call;
  for (GrowingDeviceBuffer* b : {&send, &recv}) {
    if (engine_->mr_cache_ && b->buffer_id != 0) engine_->mr_cache_->forget(b->buffer_id);
    if (b->ptr)
      engine_->give_back_gpu_memory(GpuMemoryToFree::device_memory(b->device, b->ptr, b->bytes));
    b->ptr = nullptr;
  }
  EFACOLL_RETURN_IF_ERROR(st);
  // Every rank takes the slowest rank's time at each point, so that all choose alike.
  std::vector<double> all(times.size() * size_);
  EFACOLL_RETURN_IF_ERROR(host_allgather(times.data(), times.size() * sizeof(double), all.data()));
  SharedGpuPaths& paths = ipc_->shared_paths;
  std::string text;
  size_t i = 0;
  for (CollKind kind : kKinds) {
    for (size_t point = 0; point < kSharedGpuPoints; ++point) {
      double slowest[2] = {0, 0};
      for (int path = 0; path < 2; ++path) {
        for (int r = 0; r < size_; ++r)
          slowest[path] = std::max(slowest[path], all[r * times.size() + i + path]);
      }
      const double bytes = static_cast<double>(kSharedGpuPointBytes[point]);
      paths.ipc[static_cast<int>(kind)].add(bytes, slowest[0] - predicted[i]);
      paths.fabric[static_cast<int>(kind)].add(bytes, slowest[1] - predicted[i + 1]);
      char part[160];
      std::snprintf(
          part, sizeof(part), "%s%s %s: IPC direct %.1f us (predicted %.1f), fabric %.1f (%.1f)",
          text.empty() ? "" : ", ", coll_name(kind), size_text(kSharedGpuPointBytes[point]).c_str(),
          slowest[0], predicted[i], slowest[1], predicted[i + 1]);
      text += part;
      i += 2;
    }
  }
  paths.measured = true;
  EFACOLL_INFO(kTune, "communicator %u, ranks sharing GPUs, measured: %s", id_, text.c_str());
  return Status::ok();
}

}  // namespace efacoll
