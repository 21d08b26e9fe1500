// Ranks of one node that share a GPU (without MPS, processes take turns on it): IPC and the
// fabric timed at a few sizes per call shape (tune/shared_gpu_paths.h) when such a communicator
// first runs on GPU buffers and the tuner chooses, then each call's way picked from those times.
// Collective: every member reaches it at the same call, since whether ranks share a GPU was
// agreed at IPC's set-up; every rank times the same calls and takes the slowest rank's times.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "common/log.h"
#include "engine/comm_core.h"
#include "engine/engine_core.h"
#include "engine/growing_device_buffer.h"
#include "engine/paths/ipc_paths.h"
#include "engine/ring_plan.h"
#include "engine/shared_gpu_state.h"
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

// A rank's word before the timed calls: whether it could make the buffers and plans, and a hash
// of the calls it will time (shape, size, each way, each candidate's algorithm, channels and
// chunk), which every rank must share.
struct Readiness {
  int32_t ready = 0;
  uint32_t unused = 0;
  uint64_t calls = 1469598103934665603ull;  // FNV-1a
  void mix(uint64_t v) {
    for (int i = 0; i < 8; ++i, v >>= 8) calls = (calls ^ (v & 0xff)) * 1099511628211ull;
  }
};

}  // namespace

// One timed call: its shape and size, and what each way runs.
struct CommCore::MeasuredCall {
  int shape = 0;     // in kSharedGpuShapes
  double bytes = 0;  // the point, then the call's bytes as the cost model reads them
  CollArgs args;     // args.recvcounts points into recvcounts (set again before use)
  std::vector<size_t> recvcounts;
  RingPlan plan;
  bool direct = false;              // IPC direct, else its rounds
  bool via_host = false;            // the fabric through pinned host copies, else staged
  std::vector<TunedChoice> fabric;  // the candidates the trials would try, the model's pick first
  // IPC's prediction by the model; the fabric's is its pick's, fabric.front().predicted_us.
  double ipc_predicted = 0;
};

const SharedGpuPick& CommCore::shared_gpu_pick(const CollArgs& args, const RingPlan& plan,
                                               double ipc_model_us) {
  const size_t bytes = call_bytes(plan.ring);
  const bool via_host = takes_host_copies(args.kind, plan.ring);
  const uint64_t key = pick_key(bytes, args.kind, args.inplace, via_host);
  // Kept per call shape, as the tuner's picks: predicting the fabric's candidates takes longer
  // than a small IPC direct call under MPS (a 2 MiB allreduce on one H200: 67 us against 46).
  auto it = shared_->picks.find(key);
  if (it == shared_->picks.end()) {
    const double fabric_us = fabric_model_us(args.kind, plan.ring);
    if (shared_->picks.size() >= kSharedPickShapes) shared_->picks.clear();
    const SharedGpuPick pick =
        pick_shared_gpu_path(shared_->paths, shared_gpu_shape(args.kind, args.inplace), bytes,
                             via_host, ipc_model_us, fabric_us);
    it = shared_->picks.emplace(key, pick).first;
  }
  const SharedGpuPick& pick = it->second;
  EFACOLL_TRACE(kTune,
                "%s %zu B on %d ranks sharing GPUs: IPC %s %.1f us, the fabric (%s) %.1f us "
                "(measured extras added)",
                coll_name(args.kind), bytes, size_,
                ipc_->direct_possible(args) ? "direct" : "rounds", pick.ipc_us,
                via_host ? "host copies" : "staged", pick.fabric_us);
  return pick;
}

std::vector<TunedChoice> CommCore::fabric_candidates(CollKind kind, const RingArgs& ring) const {
  const EngineConfig& config = engine_->config();
  const AlgoInputs in = algo_inputs(kind, ring, hier_per_node_, config);
  if (config.tune_trials > 0 && in.bytes > 0) return near_candidates(model_, in, kTrialMargin);
  return {tune_algo(model_, in, AlgoOverrides(), false)};
}

Status CommCore::measure_shared_gpu(int device) {
  SharedGpuPaths& paths = shared_->paths;
  const EngineConfig& config = engine_->config();
  std::vector<MeasuredCall> calls;
  size_t most = 0;
  // Every shape, even of a collective with an algorithm forced now: efacoll_set_algo may
  // give it back to the tuner later.
  for (int k = 0; k < kNumSharedGpuShapes; ++k) {
    for (size_t bytes :
         shared_gpu_points(kSharedGpuShapes[k].kind, size_, config.gpu_host_path_max)) {
      MeasuredCall c;
      c.shape = k;
      c.bytes = bytes;
      calls.push_back(c);
      most = std::max(most, bytes);
    }
  }
  // Kept for the communicator's life, never grown: peers keep them mapped by buffer id, and a
  // buffer freed while a peer keeps its mapping is undefined for CUDA.
  GrowingDeviceBuffer& send = shared_->probe_send;
  GrowingDeviceBuffer& recv = shared_->probe_recv;
  Status st = grow(send, device, most);
  if (st.is_ok()) st = grow(recv, device, most);
  // Zeros (in place, recv holds the input): garbage floats may be denormals, which the host
  // copies' reduction runs slowly. Sums of zeros keep them zeros.
  if (st.is_ok()) st = engine_->gpu()->zero(send.ptr, most);
  if (st.is_ok()) st = engine_->gpu()->zero(recv.ptr, most);
  for (MeasuredCall& c : calls) {
    if (!st.is_ok()) break;
    st = plan_measured_call(device, send, recv, &c);
  }
  // Every rank learns whether all could, and that all will time the same calls, before any
  // timed call: none times a call that a peer will not join.
  Readiness mine;
  mine.ready = st.is_ok();
  for (const MeasuredCall& c : calls) {
    mine.mix(static_cast<uint64_t>(c.shape) << 32 | static_cast<uint64_t>(c.bytes));
    mine.mix(static_cast<uint64_t>(c.direct) << 1 | static_cast<uint64_t>(c.via_host));
    for (const TunedChoice& f : c.fabric) {
      mine.mix(static_cast<uint64_t>(f.algo) << 48 | static_cast<uint64_t>(f.channels) << 32 |
               static_cast<uint64_t>(f.chunk_bytes));
    }
  }
  std::vector<Readiness> theirs(size_);
  paths.measured = true;
  Status exchanged = host_allgather(&mine, sizeof(mine), theirs.data());
  if (!exchanged.is_ok()) {
    paths.given_up = true;  // the rule stands, as where a timed call fails
    return exchanged;
  }
  std::string unready, other_calls;
  for (int r = 0; r < size_; ++r) {
    if (!theirs[r].ready) unready += (unready.empty() ? "" : ", ") + std::to_string(r);
    if (theirs[r].calls != mine.calls)
      other_calls += (other_calls.empty() ? "" : ", ") + std::to_string(r);
  }
  if (!unready.empty() || !other_calls.empty()) {
    paths.given_up = true;
    const std::string why =
        !unready.empty()
            ? "rank(s) " + unready + " could not make the measurement's buffers or plans"
            : "rank(s) " + other_calls +
                  " would time other calls than this rank (a setting differs between ranks: "
                  "EFACOLL_TUNE_TRIALS, EFACOLL_GPU_HOST_PATH_MAX, EFACOLL_IPC_DIRECT, "
                  "EFACOLL_CHUNK_SIZE...)";
    EFACOLL_WARN(kTune,
                 "communicator %u, ranks sharing GPUs: %s%s%s; small calls go through host "
                 "copies, larger ones IPC",
                 id_, why.c_str(),
                 st.is_ok() ? "" : ", here: ", st.is_ok() ? "" : st.to_string().c_str());
    return Status::ok();
  }
  // Per call: IPC's time, then each fabric candidate's.
  std::vector<double> times;
  const bool was_user_call = user_call_;
  user_call_ = false;  // not the user's: no online trials start here
  for (MeasuredCall& c : calls) {
    st = time_measured_call(c, &times);
    if (!st.is_ok()) break;
  }
  user_call_ = was_user_call;
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
  record_measured_calls(calls, times);
  return Status::ok();
}

Status CommCore::plan_measured_call(int device, const GrowingDeviceBuffer& send,
                                    const GrowingDeviceBuffer& recv, MeasuredCall* c) {
  const SharedGpuShape& shape = kSharedGpuShapes[c->shape];
  const size_t floats = c->bytes / sizeof(float);
  const size_t per_rank = std::max<size_t>(floats / size_, 1);
  c->recvcounts.assign(size_, per_rank);
  CollArgs& a = c->args;
  a.kind = shape.kind;
  a.inplace = shape.inplace;  // the input in recv
  a.sendbuf = a.inplace ? nullptr : send.ptr;
  a.recvbuf = recv.ptr;
  a.send_mem = a.recv_mem = MemKind::kDevice;
  a.send_buffer_id = send.buffer_id;
  a.recv_buffer_id = recv.buffer_id;
  a.device = device;
  a.dtype = DType::kFloat32;
  a.op = ROp::kSum;
  a.count = shape.kind == CollKind::kAllreduce ? floats : per_rank;
  a.recvcounts = c->recvcounts.data();
  const size_t chunk =
      std::min(engine_->config().chunk_bytes, engine_->transport()->info().max_msg_size);
  EFACOLL_RETURN_IF_ERROR(plan_ring(a, rank_, size_, chunk, &c->plan));
  CostInputs in;
  in.kind = shape.kind;
  in.nranks = size_;
  in.bytes = call_bytes(c->plan.ring);
  c->bytes = static_cast<double>(in.bytes);
  c->direct = ipc_->direct_possible(a);
  c->via_host = takes_host_copies(shape.kind, c->plan.ring);
  c->fabric = fabric_candidates(shape.kind, c->plan.ring);
  c->ipc_predicted = predict_node_us(model_, Algo::kIpc, in);
  return Status::ok();
}

Status CommCore::time_measured_call(MeasuredCall& c, std::vector<double>* medians) {
  c.args.recvcounts = c.recvcounts.data();
  // Way 0 is IPC (direct, or in rounds where it cannot), way 1 + i the fabric's candidate i.
  const size_t ways = 1 + c.fabric.size();
  std::vector<std::vector<double>> t(ways);
  Status st;
  for (int rep = -1; rep < kRepeats && st.is_ok(); ++rep) {  // -1: a warm-up
    for (size_t way = 0; way < ways && st.is_ok(); ++way) {
      const auto start = std::chrono::steady_clock::now();
      for (int b = 0; b < kBatch && st.is_ok(); ++b) {
        RingPlan p = c.plan;
        if (way == 0) {
          st = c.direct ? ipc_->run_direct(c.args, p.ring) : ipc_->run_rounds(c.args, p.ring);
        } else if (c.via_host) {
          st = run_gpu_via_host(c.args, p, c.fabric[way - 1], 0);
        } else {
          st = run_planned_schedule(c.args, p, c.fabric[way - 1], 0);
        }
      }
      const std::chrono::duration<double, std::micro> spent =
          std::chrono::steady_clock::now() - start;
      if (rep >= 0) t[way].push_back(spent.count() / kBatch);
    }
  }
  EFACOLL_RETURN_IF_ERROR(st);
  for (std::vector<double>& way : t) {
    std::sort(way.begin(), way.end());
    medians->push_back(way[way.size() / 2]);
  }
  return Status::ok();
}

void CommCore::record_measured_calls(const std::vector<MeasuredCall>& calls,
                                     const std::vector<double>& all) {
  SharedGpuPaths& paths = shared_->paths;
  const size_t per_rank = all.size() / static_cast<size_t>(size_);
  std::string text;
  size_t first = 0;  // the call's first time among a rank's
  for (const MeasuredCall& c : calls) {
    const size_t ways = 1 + c.fabric.size();
    std::vector<double> slowest(ways, 0);
    for (size_t way = 0; way < ways; ++way) {
      for (int r = 0; r < size_; ++r)
        slowest[way] = std::max(slowest[way], all[r * per_rank + first + way]);
    }
    first += ways;
    // The fabric as the user's calls will run it: the candidate the trials would keep. Its
    // extra is over the model's pick's prediction, which the user's calls are priced by.
    const std::vector<double> fabric(slowest.begin() + 1, slowest.end());
    const size_t kept = trial_winner(fabric);
    // The model's pick comes first among the candidates: fabric_model_us's prediction.
    const double fabric_predicted = c.fabric.front().predicted_us;
    paths.ipc[c.shape].add(c.bytes, slowest[0] - c.ipc_predicted);
    (c.via_host ? paths.host_copies[c.shape] : paths.staged[c.shape])
        .add(c.bytes, fabric[kept] - fabric_predicted);
    const SharedGpuShape& shape = kSharedGpuShapes[c.shape];
    char part[240];
    std::snprintf(
        part, sizeof(part), "%s%s%s %s: %s %.1f us (predicted %.1f), fabric %s %.1f (%.1f) by %s",
        text.empty() ? "" : ", ", coll_name(shape.kind), shape.inplace ? " in place" : "",
        size_text(static_cast<size_t>(c.bytes)).c_str(), c.direct ? "IPC direct" : "IPC rounds",
        slowest[0], c.ipc_predicted, c.via_host ? "host copies" : "staged", fabric[kept],
        fabric_predicted, algo_name(c.fabric[kept].algo, shape.kind));
    text += part;
    if (fabric.size() > 1) text += " of " + std::to_string(fabric.size()) + " on trial";
  }
  EFACOLL_INFO(kTune, "communicator %u, ranks sharing GPUs, measured: %s", id_, text.c_str());
}

}  // namespace efacoll
