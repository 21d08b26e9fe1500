// Ranks of one node that share a GPU (without MPS, processes take turns on it): IPC direct and
// the fabric timed at a few sizes per collective when such a communicator first runs on GPU
// buffers and the tuner chooses, then each call's way picked from those times
// (tune/shared_gpu_paths.h). Collective: every member reaches it at the same call, since whether
// ranks share a GPU was agreed at IPC's set-up, and every rank takes the slowest rank's times.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "common/log.h"
#include "efacoll/engine.h"
#include "engine/growing_device_buffer.h"
#include "engine/ipc_state.h"
#include "engine/ring_plan.h"
#include "transport/transport.h"
#include "tune/algo.h"
#include "tune/cost_model.h"
#include "tune/shared_gpu_paths.h"
#include "tune/trials.h"

namespace efacoll {
namespace {

// Repeats per way and size, the ways interleaved batch by batch so that a slow stretch falls on
// both; a batch's calls make one sample (their mean).
constexpr int kRepeats = 7;
constexpr int kBatch = 3;

// A call shape's key among the picks kept: its bytes, collective, whether in place and whether
// the fabric takes it through host copies (a reduce-scatter's uneven blocks change that alone).
uint64_t pick_key(size_t bytes, CollKind kind, bool inplace, bool via_host) {
  return static_cast<uint64_t>(bytes) << 4 | static_cast<uint64_t>(kind) << 2 |
         (inplace ? 2u : 0u) | (via_host ? 1u : 0u);
}

}  // namespace

Status Comm::shared_gpu_way(const CollArgs& args, const RingPlan& plan, double ipc_model_us,
                            NodePath* path) {
  const size_t bytes = call_bytes(plan.ring);
  const bool via_host = takes_host_copies(args.kind, plan.ring);
  const uint64_t key = pick_key(bytes, args.kind, args.inplace, via_host);
  // Kept per call shape, as the tuner's picks: predicting the fabric's candidates takes longer
  // than a small IPC direct call under MPS (a 2 MiB allreduce on one H200: 67 us against 46).
  auto it = ipc_->shared_picks.find(key);
  if (it == ipc_->shared_picks.end()) {
    const double fabric_us = fabric_model_us(args.kind, plan.ring);
    if (ipc_->shared_picks.size() >= kSharedPickShapes) ipc_->shared_picks.clear();
    const SharedGpuPick pick =
        pick_shared_gpu_path(ipc_->shared_paths, shared_gpu_shape(args.kind, args.inplace), bytes,
                             via_host, ipc_model_us, fabric_us);
    it = ipc_->shared_picks.emplace(key, pick).first;
  }
  const SharedGpuPick& pick = it->second;
  EFACOLL_TRACE(kTune,
                "%s %zu B on %d ranks sharing GPUs: IPC direct %.1f us, the fabric (%s) %.1f us "
                "(measured extras added)",
                coll_name(args.kind), bytes, size_, pick.ipc_us,
                via_host ? "host copies" : "staged", pick.fabric_us);
  if (pick.fabric_faster) {
    *path = NodePath::kFabric;
    node_fabric_extra_us_ = pick.fabric_extra_us;  // the fabric's choice is recorded when planned
    return Status::ok();
  }
  *path = NodePath::kIpcDirect;
  engine_->last_choice_ = TunedChoice();
  engine_->last_choice_.algo = Algo::kIpc;
  engine_->last_choice_.predicted_us = pick.ipc_us;
  engine_->last_algorithm_ = ipc_direct_possible(args) ? "IPC direct" : "IPC rounds";
  return Status::ok();
}

std::vector<TunedChoice> Comm::fabric_candidates(CollKind kind, const RingArgs& ring) const {
  const EngineConfig& config = engine_->config_;
  const AlgoInputs in = algo_inputs(kind, ring, hier_per_node_, config);
  if (config.tune_trials > 0 && in.bytes > 0) return near_candidates(model_, in, kTrialMargin);
  return {tune_algo(model_, in, config.algo, false)};
}

Status Comm::measure_shared_gpu(int device) {
  SharedGpuPaths& paths = ipc_->shared_paths;
  const EngineConfig& config = engine_->config_;
  std::vector<size_t> points[kNumSharedGpuShapes];
  size_t most = 0;
  for (int k = 0; k < kNumSharedGpuShapes; ++k) {
    points[k] = shared_gpu_points(kSharedGpuShapes[k].kind, size_, config.gpu_host_path_max);
    most = std::max(most, points[k].back());
  }
  // Kept for the communicator's life, never grown: peers keep them mapped by buffer id, and a
  // buffer freed while a peer keeps its mapping is undefined for CUDA.
  GrowingDeviceBuffer& send = ipc_->probe_send;
  GrowingDeviceBuffer& recv = ipc_->probe_recv;
  Status st = grow(send, device, most);
  if (st.is_ok()) st = grow(recv, device, most);
  // Zeros: garbage floats may be denormals, which the host copies' reduction runs slowly.
  if (st.is_ok()) st = engine_->gpu_->zero(send.ptr, most);
  // Every rank learns whether all could: none times a call that a peer will not join.
  int32_t ready = st.is_ok();
  std::vector<int32_t> readies(size_);
  EFACOLL_RETURN_IF_ERROR(host_allgather(&ready, sizeof(ready), readies.data()));
  paths.measured = true;
  std::string unready;
  for (int r = 0; r < size_; ++r) {
    if (!readies[r]) unready += (unready.empty() ? "" : ", ") + std::to_string(r);
  }
  if (!unready.empty()) {
    paths.given_up = true;
    EFACOLL_WARN(kTune,
                 "communicator %u, ranks sharing GPUs: rank(s) %s could not make the "
                 "measurement's buffers%s%s; small calls go through host copies, larger ones IPC "
                 "direct",
                 id_, unready.c_str(),
                 st.is_ok() ? "" : ", here: ", st.is_ok() ? "" : st.to_string().c_str());
    return Status::ok();
  }
  const bool was_user_call = user_call_;
  user_call_ = false;  // not the user's: no online trials start here
  const size_t chunk = std::min(config.chunk_bytes, engine_->transport_->info().max_msg_size);
  // Per collective and size: IPC direct's time, then each fabric candidate's; the predictions of
  // IPC direct and of the model's fabric pick.
  std::vector<double> times, predicted, sizes;
  std::vector<int32_t> via_host_at;
  std::vector<int32_t> direct_at;  // per point: IPC direct, or IPC's rounds
  std::vector<size_t> ways_at;     // per point: IPC and the fabric's candidates
  std::vector<Algo> fabric_algos;  // the candidates, point after point
  std::vector<size_t> recvcounts(size_);
  for (int k = 0; k < kNumSharedGpuShapes && st.is_ok(); ++k) {
    const CollKind kind = kSharedGpuShapes[k].kind;
    for (size_t point : points[k]) {
      const size_t floats = point / sizeof(float);
      const size_t per_rank = std::max<size_t>(floats / size_, 1);
      CollArgs a;
      a.kind = kind;
      a.inplace = kSharedGpuShapes[k].inplace;  // the input in recv
      a.sendbuf = a.inplace ? nullptr : send.ptr;
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
      const bool direct = ipc_direct_possible(a);
      const bool via_host = takes_host_copies(kind, plan.ring);
      const std::vector<TunedChoice> fabric = fabric_candidates(kind, plan.ring);
      // Way 0 is IPC (direct, or in rounds where it cannot), way 1 + i the fabric's candidate i.
      const size_t ways = 1 + fabric.size();
      std::vector<std::vector<double>> t(ways);
      for (int rep = -1; rep < kRepeats && st.is_ok(); ++rep) {  // -1: a warm-up
        for (size_t way = 0; way < ways && st.is_ok(); ++way) {
          timed_choice_ = way ? &fabric[way - 1] : nullptr;
          const auto start = std::chrono::steady_clock::now();
          for (int b = 0; b < kBatch && st.is_ok(); ++b) {
            RingPlan p = plan;
            if (way == 0) {
              st = direct ? run_ipc_direct(a, p.ring) : run_ipc(a, p.ring);
            } else if (via_host) {
              st = run_gpu_via_host(a, p.ring, p.send_bytes, p.recv_bytes, p.result_bytes);
            } else {
              st = run_planned_schedule(a, p);
            }
          }
          const std::chrono::duration<double, std::micro> spent =
              std::chrono::steady_clock::now() - start;
          if (rep >= 0) t[way].push_back(spent.count() / kBatch);
        }
      }
      timed_choice_ = nullptr;
      if (!st.is_ok()) break;
      for (std::vector<double>& way : t) {
        std::sort(way.begin(), way.end());
        times.push_back(way[way.size() / 2]);
      }
      ways_at.push_back(ways);
      direct_at.push_back(direct);
      for (const TunedChoice& c : fabric) fabric_algos.push_back(c.algo);
      predicted.push_back(predict_node_us(model_, Algo::kIpc, in));
      predicted.push_back(fabric_model_us(kind, plan.ring));
      sizes.push_back(static_cast<double>(in.bytes));
      via_host_at.push_back(via_host);
    }
  }
  user_call_ = was_user_call;
  // The timed calls' picks, cached per shape, were the model's alone: the user's calls of those
  // shapes must still reach the online trials (a 32 KiB allreduce kept recursive doubling,
  // 1.12-1.24x the ring, where the trials had kept the ring).
  tuned_.clear();
  // A timed call that failed here fails its peers' too (they wait for this rank until the
  // timeout, or end as a mismatch), and the gathering after it: every rank ends here with an
  // error, gives up and keeps the rule, instead of measuring again at every call.
  if (st.is_ok()) {
    std::vector<double> all(times.size() * size_);
    st = host_allgather(times.data(), times.size() * sizeof(double), all.data());
    if (st.is_ok()) times.swap(all);
  }
  if (!st.is_ok()) {
    paths.given_up = true;
    return st;
  }
  const std::vector<double>& all = times;
  const size_t per_rank = all.size() / static_cast<size_t>(size_);
  std::string text;
  size_t first = 0, at = 0;  // the point's first time in a rank's; the point
  for (int k = 0; k < kNumSharedGpuShapes; ++k) {
    const CollKind kind = kSharedGpuShapes[k].kind;
    for (size_t n = 0; n < points[k].size(); ++n, first += ways_at[at], ++at) {
      std::vector<double> slowest(ways_at[at], 0);
      for (size_t way = 0; way < slowest.size(); ++way) {
        for (int r = 0; r < size_; ++r)
          slowest[way] = std::max(slowest[way], all[r * per_rank + first + way]);
      }
      // The fabric as the user's calls will run it: the candidate the trials would keep.
      const std::vector<double> fabric(slowest.begin() + 1, slowest.end());
      const size_t kept = trial_winner(fabric);
      const double ipc_predicted = predicted[2 * at], fabric_predicted = predicted[2 * at + 1];
      paths.ipc[k].add(sizes[at], slowest[0] - ipc_predicted);
      (via_host_at[at] ? paths.host_copies[k] : paths.staged[k])
          .add(sizes[at], fabric[kept] - fabric_predicted);
      char part[240];
      std::snprintf(
          part, sizeof(part), "%s%s%s %s: %s %.1f us (predicted %.1f), fabric %s %.1f (%.1f) by %s",
          text.empty() ? "" : ", ", coll_name(kind), kSharedGpuShapes[k].inplace ? " in place" : "",
          size_text(static_cast<size_t>(sizes[at])).c_str(),
          direct_at[at] ? "IPC direct" : "IPC rounds", slowest[0], ipc_predicted,
          via_host_at[at] ? "host copies" : "staged", fabric[kept], fabric_predicted,
          algo_name(fabric_algos[first - at + kept], kind));
      text += part;
      if (fabric.size() > 1) text += " of " + std::to_string(fabric.size()) + " on trial";
    }
  }
  EFACOLL_INFO(kTune, "communicator %u, ranks sharing GPUs, measured: %s", id_, text.c_str());
  return Status::ok();
}

}  // namespace efacoll
