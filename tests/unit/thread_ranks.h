// Ranks as threads in one process: a Bootstrap over shared memory, and a runner that gives
// each rank its own Engine over a loopback or fabric transport.
#pragma once
#include <atomic>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "efacoll/bootstrap.h"
#include "efacoll/engine.h"
#include "transport/fabric/fabric_transport.h"

namespace efacoll {
namespace testing {

class ThreadGroup {
 public:
  explicit ThreadGroup(int n) : n_(n), slots_(n) {}
  int size() const { return n_; }
  Status allgather(int rank, const void* in, size_t bytes, void* out);

 private:
  void barrier();
  int n_;
  std::mutex mutex_;
  std::condition_variable cv_;
  int arrived_ = 0;
  unsigned generation_ = 0;
  std::vector<std::vector<uint8_t>> slots_;
};

class ThreadBootstrap : public Bootstrap {
 public:
  ThreadBootstrap(std::shared_ptr<ThreadGroup> group, int rank) : group_(group), rank_(rank) {}
  int rank() const override { return rank_; }
  int size() const override { return group_->size(); }
  Status allgather(const void* in, size_t bytes, void* out) override {
    return group_->allgather(rank_, in, bytes, out);
  }

 private:
  std::shared_ptr<ThreadGroup> group_;
  int rank_;
};

// "loopback", or a libfabric provider name ("tcp", "shm", "udp").
struct RankSetup {
  std::string transport = "loopback";
  EngineConfig config;
  FabricOptions fabric;
  int node_size = 0;  // >0: rank r is on declared node r / node_size
  std::function<void(int rank, EngineConfig* config)> adjust;  // one rank's own settings
  // One rank's transport, made from the one it would have (fault injection).
  std::function<std::unique_ptr<Transport>(int rank, std::unique_ptr<Transport>)> wrap;
  // One rank's GPU runtime (none: GPU buffers are refused).
  std::function<std::unique_ptr<GpuRuntime>(int rank)> gpu;
  // false: a rank's engine (and endpoint) closes as soon as its body returns, as a process that
  // ends, instead of once every rank is done.
  bool close_together = true;
};

struct RankContext {
  int rank;
  int size;
  Engine& engine;
  Bootstrap& bootstrap;
  Comm& comm;  // all n ranks
  std::vector<std::string>* failures;
};

// Runs body on n threads, each with its own engine and a communicator of all n ranks.
// Returns every failure the ranks reported (empty: all passed).
using RankBody = std::function<void(RankContext& ctx)>;
std::vector<std::string> run_ranks(int n, const RankSetup& setup, const RankBody& body);

// An int32 sum allreduce of `count` elements on `send` into `recv` (send null: in place), each
// buffer told to be the given kind (a GPU kind: a call on device 0).
Status run_int32_sum(Comm& comm, size_t count, const uint8_t* send, MemKind send_memory,
                     uint8_t* recv, MemKind recv_memory);

// Rank `rank`'s make_input (int32, sum, `count` elements) allreduced in place on `comm` and
// checked against expected_reduction over `nranks`: "" when exact, else the error or the
// difference. `memory`: what the call is told the buffer is (kDevice: a GPU call on device 0).
std::string check_allreduce_in_place(Comm& comm, int rank, int nranks, size_t count,
                                     MemKind memory = MemKind::kHost);
// The same out of place, the buffers told to be `send_memory` and `recv_memory` (one kHost, the
// other kDevice: a call that mixes host and GPU buffers). The input must stay as it was.
std::string check_allreduce(Comm& comm, int rank, int nranks, size_t count, MemKind send_memory,
                            MemKind recv_memory);

// An int32 allgather of `count` elements a rank, both buffers told to be `memory`, checked
// against every rank's make_input: "" when exact. The input must stay as it was.
std::string check_allgather(Comm& comm, int rank, int nranks, size_t count, MemKind memory);

// Waits (sleeping) until `value` is at least `at_least`: ranks meeting at a point of a test.
void wait_until(const std::atomic<int>& value, int at_least);

// A rank's arrival at such a point: counted once, at the latest when the rank leaves early (a
// failure), so that a failing rank never leaves the others waiting.
class Arrival {
 public:
  explicit Arrival(std::atomic<int>* count) : count_(count) {}
  ~Arrival() { now(); }
  Arrival(const Arrival&) = delete;
  Arrival& operator=(const Arrival&) = delete;
  void now() {
    if (!arrived_) ++*count_;
    arrived_ = true;
  }

 private:
  std::atomic<int>* count_;
  bool arrived_ = false;
};

// Whether a libfabric provider can be opened here (tests skip, saying why, when not).
bool provider_available(const std::string& name);

}  // namespace testing
}  // namespace efacoll
