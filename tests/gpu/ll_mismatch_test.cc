// The low-latency kernel when ranks' calls differ (another op, count or collective) or a rank
// never comes: every rank must stop soon, name a peer and what it saw, and never read or
// return mixed data; the next matching call must then be exact. P "ranks" are concurrent
// launches on one GPU, as in ll_kernel_test.cc.
#include <cuda_runtime.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "core/call_signature.h"
#include "gpu/gpu_runtime.h"
#include "gpu/ll_kernel.h"
#include "gpu/ll_protocol.h"
#include "gpu_test_util.h"
#include "ll_test_base.h"
#include "reference.h"

namespace efacoll {
namespace {

using testing::Bytes;

struct Call {
  CollKind kind = CollKind::kAllreduce;
  ROp op = ROp::kSum;
  size_t count = 0;  // allreduce: the vector; allgather: a block
};

constexpr DType kType = DType::kInt32;
constexpr size_t kSlotLimit = size_t(1) << 20;

class LlMismatch : public testing::LlTestBase {
 protected:
  // Fresh regions and signals for P ranks (earlier worlds' memory stays until the test ends).
  void make_world(int P, bool heartbeat = false) {
    P_ = P;
    region_.slot_bytes = ll_slot_bytes(kSlotLimit, P);
    region_.nranks = P;
    regions_.assign(P, nullptr);
    signals_.assign(P, LlSignal{});
    sends_.resize(P);
    recvs_.resize(P);
    for (int r = 0; r < P; ++r) {
      regions_[r] = device(region_.total_bytes());
      signals_[r] = signal(heartbeat);
      sends_[r] = static_cast<uint8_t*>(device(region_.slot_bytes));
      recvs_[r] = static_cast<uint8_t*>(device(region_.slot_bytes * P));
    }
  }

  // Rank r's call `c` at sequence `seq`, its input in place.
  LlCall prepare(int r, const Call& c, uint64_t seq, uint64_t timeout_ns) {
    const size_t es = dtype_size(kType);
    const Bytes in = testing::make_input(kType, c.op, r, c.count);
    EXPECT_EQ(cudaMemcpy(sends_[r], in.data(), in.size(), cudaMemcpyHostToDevice), cudaSuccess);
    *signals_[r].fault = 0;
    LlCall call;
    EXPECT_TRUE(ll_plan(c.kind, es, c.count, nullptr, r, P_, false, region_.slot_bytes, &call));
    const uint64_t whole = c.kind == CollKind::kAllgather ? c.count * P_ : c.count;
    call.dtype = kType;
    call.op = c.op;
    call.seq = seq;
    call.key = ll_call_key(call_signature(c.kind, kType, c.op, whole), whole);
    call.timeout_ns = timeout_ns;
    call.send = sends_[r];
    call.recv = recvs_[r];
    for (int q = 0; q < P_; ++q) call.regions[q] = regions_[q];
    return call;
  }

  // Rank r's call `c` at sequence `seq`, launched; nothing waited for.
  void launch(int r, const Call& c, uint64_t seq, uint64_t timeout_ns) {
    const LlCall call = prepare(r, c, seq, timeout_ns);
    ASSERT_TRUE(ll_launch(call, kLlPush | kLlFinish, signals_[r], stream(r)).is_ok());
  }

  // Seconds until every launched rank's kernel has ended.
  double wait_all(const std::vector<int>& ranks) {
    const auto start = std::chrono::steady_clock::now();
    for (int r : ranks) EXPECT_EQ(cudaStreamSynchronize(stream(r)), cudaSuccess);
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }

  // Waits as the engine's host thread does: polls, raising every rank's heartbeat, until the
  // ranks' kernels have ended, or `at_most` has passed. Seconds waited.
  double wait_beating(const std::vector<int>& ranks, std::chrono::milliseconds at_most) {
    const auto start = std::chrono::steady_clock::now();
    auto running = [&] {
      for (int r : ranks)
        if (cudaStreamQuery(stream(r)) == cudaErrorNotReady) return true;
      return false;
    };
    while (running() && std::chrono::steady_clock::now() - start < at_most) {
      for (const LlSignal& s : signals_)
        if (s.heartbeat) ++*static_cast<volatile uint64_t*>(s.heartbeat);
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }

  LlFault fault(int r) const { return ll_fault(*signals_[r].fault); }

  // A world of two ranks, and the GPU runtime the engine would run rank 0's calls with.
  std::unique_ptr<GpuRuntime> two_ranks_and_a_runtime() {
    std::string why;
    auto runtime = make_gpu_runtime(&why);
    EXPECT_NE(runtime, nullptr) << why;
    make_world(2);
    return runtime;
  }

  void expect_exact_allreduce(int r, size_t count) { expect_exact_allreduce_in(recvs_[r], count); }
  void expect_exact_allreduce_in(const void* recv, size_t count) {
    const Bytes want = testing::expected_reduction(kType, ROp::kSum, P_, count);
    Bytes got(want.size());
    ASSERT_CUDA(cudaMemcpy(got.data(), recv, got.size(), cudaMemcpyDeviceToHost));
    EXPECT_EQ(testing::compare(got, want, kType), "") << "at " << recv;
  }

  int P_ = 0;
  LlRegion region_;
  std::vector<void*> regions_;
  std::vector<LlSignal> signals_;
  std::vector<uint8_t*> sends_, recvs_;
};

constexpr uint64_t kLongTimeout = 10ull * 1000 * 1000 * 1000;

TEST_F(LlMismatch, AnotherOpCountOrCollectiveStopsEveryRankAndTheNextCallIsExact) {
  struct Case {
    const char* what;
    Call odd;
  };
  // 1000 int32: packed words; 6000: segments behind flags. The odd counts keep the signature's
  // count bits equal or not, so both the signature and the count field are exercised.
  for (size_t n : {size_t(1000), size_t(6000)}) {
    const Call usual{CollKind::kAllreduce, ROp::kSum, n};
    const Case cases[] = {
        {"another op", {CollKind::kAllreduce, ROp::kMax, n}},
        {"3x the count", {CollKind::kAllreduce, ROp::kSum, 3 * n}},
        {"count + 4", {CollKind::kAllreduce, ROp::kSum, n + 4}},
        {"a quarter of the count", {CollKind::kAllreduce, ROp::kSum, n / 4}},
        {"allgather", {CollKind::kAllgather, ROp::kSum, n / 2}},
    };
    for (int P : {2, 4}) {
      for (const Case& k : cases) {
        SCOPED_TRACE(std::string(k.what) + ", P=" + std::to_string(P) +
                     ", count=" + std::to_string(n));
        make_world(P);
        std::vector<int> all;
        for (int r = 0; r < P; ++r) {
          all.push_back(r);
          launch(r, r == 1 ? k.odd : usual, 1, kLongTimeout);
        }
        const double took = wait_all(all);
        EXPECT_LT(took, 2.0) << "the ranks waited instead of comparing calls";
        for (int r = 0; r < P; ++r) {
          const LlFault f = fault(r);
          EXPECT_EQ(f.kind, LlFault::kOtherCall) << "rank " << r;
          if (r == 1) {
            EXPECT_NE(f.peer, 1) << "rank 1 names itself";
          } else {
            EXPECT_EQ(f.peer, 1) << "rank " << r;
            const uint64_t whole =
                k.odd.kind == CollKind::kAllgather ? k.odd.count * P : k.odd.count;
            EXPECT_EQ(f.their_key,
                      ll_call_key(call_signature(k.odd.kind, kType, k.odd.op, whole), whole))
                << "rank " << r << " reports another key than rank 1's";
          }
        }
        // Then every rank alike, at the next sequence: exact.
        for (int r = 0; r < P; ++r) launch(r, usual, 2, kLongTimeout);
        wait_all(all);
        for (int r = 0; r < P; ++r) {
          EXPECT_EQ(fault(r).kind, LlFault::kNone) << "rank " << r;
          expect_exact_allreduce(r, n);
        }
      }
    }
  }
}

// A rank whose call took another path (IPC direct: too large for this protocol) stores its key
// from the host, as engine/paths/ipc_path_watch.cc does once its exchange has waited: the ranks in the
// protocol stop on it, late as it comes, and see which path it took.
TEST_F(LlMismatch, AKeyStoredLateByARankOnAnotherPathStopsTheOthers) {
  for (int P : {2, 4}) {
    SCOPED_TRACE("P=" + std::to_string(P));
    make_world(P);
    const Call usual{CollKind::kAllreduce, ROp::kSum, 1000};
    std::vector<int> waiting;
    for (int r = 0; r < P; ++r) {
      if (r == 1) continue;
      waiting.push_back(r);
      launch(r, usual, 1, kLongTimeout);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    for (int r : waiting) {
      EXPECT_EQ(cudaStreamQuery(stream(r)), cudaErrorNotReady) << "rank " << r << " did not wait";
    }
    const size_t twice = 2 * usual.count;  // rank 1's call: another count, on IPC direct
    const uint32_t key = ll_call_key(call_signature(CollKind::kAllreduce, kType, ROp::kSum, twice),
                                     twice, LlPath::kIpcDirect);
    const uint64_t word = ll_key_word(1, key);
    const size_t at = region_.keys_offset() + region_.key_index(1, 1) * sizeof(uint64_t);
    for (int r : waiting) {
      ASSERT_CUDA(cudaMemcpy(static_cast<uint8_t*>(regions_[r]) + at, &word, sizeof(word),
                             cudaMemcpyHostToDevice));
    }
    EXPECT_LT(wait_all(waiting), 2.0) << "the ranks waited on after the key came";
    for (int r : waiting) {
      const LlFault f = fault(r);
      EXPECT_EQ(f.kind, LlFault::kOtherCall) << "rank " << r;
      EXPECT_EQ(f.peer, 1) << "rank " << r;
      EXPECT_EQ(f.their_key, key) << "rank " << r;
      EXPECT_EQ(ll_key_path(f.their_key), LlPath::kIpcDirect) << "rank " << r;
    }
  }
}

TEST_F(LlMismatch, ARankThatNeverComesIsNamedAtTheTimeout) {
  make_world(3);
  const Call usual{CollKind::kAllreduce, ROp::kSum, 1000};
  launch(0, usual, 1, 300ull * 1000 * 1000);
  launch(1, usual, 1, 300ull * 1000 * 1000);
  const double took = wait_all({0, 1});
  EXPECT_LT(took, 5.0);
  for (int r : {0, 1}) {
    const LlFault f = fault(r);
    EXPECT_EQ(f.kind, LlFault::kSilent) << "rank " << r;
    EXPECT_EQ(f.peer, 2) << "rank " << r;
  }
}

// Stops this whole process `after` from now, for `stop_for` (SIGSTOP, then SIGCONT, from a
// child), as a debugger or a job scheduler that suspends jobs does. Returns the child to reap.
pid_t stop_this_process(std::chrono::milliseconds after, std::chrono::milliseconds stop_for) {
  const pid_t parent = getpid();
  const pid_t stopper = fork();
  if (stopper == 0) {
    usleep(static_cast<useconds_t>(after.count() * 1000));
    kill(parent, SIGSTOP);
    usleep(static_cast<useconds_t>(stop_for.count() * 1000));
    kill(parent, SIGCONT);
    _exit(0);
  }
  return stopper;
}

// A stop of the whole process (SIGSTOP, a debugger, a suspended job: the host polls no more)
// longer than the timeout, while rank 0's kernel waits for rank 1, whose host had not yet
// launched: the GPU's clock runs on through the stop, which must not count as rank 1's silence.
TEST_F(LlMismatch, AStopOfTheProcessIsNotCountedAgainstTheTimeout) {
  make_world(2, /*heartbeat=*/true);
  const Call usual{CollKind::kAllreduce, ROp::kSum, 1000};
  const uint64_t timeout_ns = 2ull * 1000 * 1000 * 1000;
  launch(0, usual, 1, timeout_ns);
  const pid_t stopper =
      stop_this_process(std::chrono::milliseconds(300), std::chrono::milliseconds(3000));
  ASSERT_GE(stopper, 0);
  // Until the stop has come and gone (wall time), rank 1 has not launched.
  wait_beating({0}, std::chrono::milliseconds(600));
  int status = 0;
  ASSERT_EQ(waitpid(stopper, &status, 0), stopper);
  launch(1, usual, 1, timeout_ns);
  wait_beating({0, 1}, std::chrono::seconds(20));
  for (int r : {0, 1}) {
    EXPECT_EQ(fault(r).kind, LlFault::kNone)
        << "rank " << r << " stopped on rank " << fault(r).peer;
    expect_exact_allreduce(r, usual.count);
  }
}

// A host that keeps polling is not stopped: a rank that never comes is still named at the
// timeout.
TEST_F(LlMismatch, ARankThatNeverComesIsNamedAtTheTimeoutWhileTheHostPolls) {
  make_world(3, /*heartbeat=*/true);
  const Call usual{CollKind::kAllreduce, ROp::kSum, 1000};
  launch(0, usual, 1, 300ull * 1000 * 1000);
  launch(1, usual, 1, 300ull * 1000 * 1000);
  EXPECT_LT(wait_beating({0, 1}, std::chrono::seconds(20)), 5.0);
  for (int r : {0, 1}) {
    EXPECT_EQ(fault(r).kind, LlFault::kSilent) << "rank " << r;
    EXPECT_EQ(fault(r).peer, 2) << "rank " << r;
  }
}

// The same through the GPU runtime, as the engine runs a call: rank 0 waits in run_ll, whose
// polling raises the heartbeat. A runtime that did not raise it would have its kernels stop
// counting after a second, and a peer that never comes would then hold the call for ever.
TEST_F(LlMismatch, ThroughTheRuntimeAPeerThatNeverComesStillTimesOut) {
  auto runtime = two_ranks_and_a_runtime();
  ASSERT_NE(runtime, nullptr);
  const Call usual{CollKind::kAllreduce, ROp::kSum, 1000};
  const LlCall call = prepare(0, usual, 1, 1500ull * 1000 * 1000);
  LlFault fault;
  const auto start = std::chrono::steady_clock::now();
  const Status st = runtime->run_ll(0, call, &fault);
  const double took =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(st.code(), Code::kTimeout) << st.to_string();
  EXPECT_GT(took, 1.4);
  EXPECT_LT(took, 5.0);
}

TEST_F(LlMismatch, ThroughTheRuntimeAStopOfTheProcessIsNotCountedAgainstTheTimeout) {
  auto runtime = two_ranks_and_a_runtime();
  ASSERT_NE(runtime, nullptr);
  const Call usual{CollKind::kAllreduce, ROp::kSum, 1000};
  const uint64_t timeout_ns = 2ull * 1000 * 1000 * 1000;
  const LlCall call = prepare(0, usual, 1, timeout_ns);
  // Prepared now: its input copy, on the legacy stream, would wait for rank 0's kernel, which
  // runs on the runtime's blocking stream.
  const LlCall late_call = prepare(1, usual, 1, timeout_ns);
  const pid_t stopper =
      stop_this_process(std::chrono::milliseconds(300), std::chrono::milliseconds(3000));
  ASSERT_GE(stopper, 0);
  // Rank 1 comes once the stop has come and gone.
  std::thread late([&] {
    int status = 0;
    waitpid(stopper, &status, 0);
    EXPECT_TRUE(ll_launch(late_call, kLlPush | kLlFinish, signals_[1], stream(1)).is_ok());
  });
  LlFault fault;
  const Status st = runtime->run_ll(0, call, &fault);
  late.join();
  wait_all({1});
  EXPECT_TRUE(st.is_ok()) << st.to_string();
  expect_exact_allreduce(0, usual.count);
  expect_exact_allreduce(1, usual.count);
}

// The runtime's done word is the device's, shared by every communicator, and each communicator
// counts its sequence from the same start: a call whose sequence an earlier call (another
// communicator's) had already ended found the word set and returned while its kernel still
// waited for the peers (until 2026-12-03). Here the second call's peer never comes: it must
// time out, not return at once.
TEST_F(LlMismatch, ThroughTheRuntimeACallWaitsForItsOwnKernelAfterAnotherCallOfItsSequence) {
  auto runtime = two_ranks_and_a_runtime();
  ASSERT_NE(runtime, nullptr);
  const Call usual{CollKind::kAllreduce, ROp::kSum, 1000};
  const uint64_t timeout_ns = 1500ull * 1000 * 1000;
  const LlCall first = prepare(0, usual, 1, timeout_ns);
  launch(1, usual, 1, timeout_ns);
  LlFault fault;
  ASSERT_TRUE(runtime->run_ll(0, first, &fault).is_ok());
  wait_all({1});
  expect_exact_allreduce(0, usual.count);
  make_world(2);  // another communicator: its own regions, its sequence from the same start
  const LlCall second = prepare(0, usual, 1, timeout_ns);
  // Prepared now (its input copy, on the legacy stream, would wait for rank 0's kernel), and
  // launched only where run_ll returned early: rank 0's kernel, left waiting with nobody raising
  // its heartbeat, would otherwise never end, and the test would hang instead of failing.
  const LlCall rescue = prepare(1, usual, 1, timeout_ns);
  const auto start = std::chrono::steady_clock::now();
  const Status st = runtime->run_ll(0, second, &fault);
  const double took =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(st.code(), Code::kTimeout) << st.to_string();
  EXPECT_GT(took, 1.4);
  if (st.is_ok()) {
    ASSERT_TRUE(ll_launch(rescue, kLlPush | kLlFinish, signals_[1], stream(1)).is_ok());
    wait_all({1});
  }
}

// Calls of two communicators that the ranks' threads start in opposite orders, as the engine
// runs them when it lends its lock while a kernel waits: rank 0 (through the runtime, a thread
// per call) starts A, then B; rank 1 starts B and only once B has ended, A. Each call must have a
// stream of its own: on one stream B would queue behind A, which waits for rank 1's A, which
// waits for B. A copy on the legacy stream, as another thread's call makes, must not wait for
// A's kernel either.
TEST_F(LlMismatch, ThroughTheRuntimeCallsOfTwoCommunicatorsInOppositeOrdersBothEnd) {
  auto runtime = two_ranks_and_a_runtime();
  ASSERT_NE(runtime, nullptr);
  const Call usual{CollKind::kAllreduce, ROp::kSum, 1000};
  const uint64_t timeout_ns = 3ull * 1000 * 1000 * 1000;
  // Everything prepared first: the inputs' copies go on the legacy stream.
  LlCall a0 = prepare(0, usual, 1, timeout_ns);
  const LlCall a1 = prepare(1, usual, 1, timeout_ns);
  const LlSignal a1_signal = signals_[1];
  const std::vector<uint8_t*> a_recvs = recvs_;
  make_world(2);
  LlCall b0 = prepare(0, usual, 1, timeout_ns);
  const LlCall b1 = prepare(1, usual, 1, timeout_ns);
  a0.lends_lock = b0.lends_lock = true;

  Status a_status, b_status;
  LlFault fault_a, fault_b;
  std::thread a([&] { a_status = runtime->run_ll(0, a0, &fault_a); });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  uint32_t word = 0;
  const auto copy_start = std::chrono::steady_clock::now();
  EXPECT_EQ(cudaMemcpy(&word, sends_[0], sizeof(word), cudaMemcpyDeviceToHost), cudaSuccess);
  const double copy_took =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - copy_start).count();
  EXPECT_LT(copy_took, 1.0) << "a copy on the legacy stream waited for a kernel waiting on peers";
  ASSERT_TRUE(ll_launch(b1, kLlPush | kLlFinish, signals_[1], stream(2)).is_ok());
  std::thread b([&] { b_status = runtime->run_ll(0, b0, &fault_b); });
  b.join();
  EXPECT_TRUE(b_status.is_ok()) << b_status.to_string();
  EXPECT_EQ(cudaStreamSynchronize(stream(2)), cudaSuccess);
  ASSERT_TRUE(ll_launch(a1, kLlPush | kLlFinish, a1_signal, stream(1)).is_ok());
  a.join();
  EXPECT_TRUE(a_status.is_ok()) << a_status.to_string();
  EXPECT_EQ(cudaStreamSynchronize(stream(1)), cudaSuccess);
  for (int r : {0, 1}) {
    expect_exact_allreduce_in(a_recvs[r], usual.count);
    expect_exact_allreduce(r, usual.count);
  }
}

// A call that lends the lock runs its kernel on a non-blocking stream of its own, which must still
// start after the work its caller queued on the legacy stream, as the blocking stream's kernel
// did: here rank 0's input becomes zeros on the legacy stream, behind a long memset, just before
// its call.
TEST_F(LlMismatch, ThroughTheRuntimeACallThatLendsTheLockStartsAfterTheCallersLegacyStreamWork) {
  auto runtime = two_ranks_and_a_runtime();
  ASSERT_NE(runtime, nullptr);
  const Call usual{CollKind::kAllreduce, ROp::kSum, 1000};
  LlCall call = prepare(0, usual, 1, kLongTimeout);
  call.lends_lock = true;
  const size_t long_bytes = size_t(4) << 30;
  void* long_memset = device(long_bytes);
  launch(1, usual, 1, kLongTimeout);
  ASSERT_CUDA(cudaMemsetAsync(long_memset, 1, long_bytes, cudaStreamLegacy));
  ASSERT_CUDA(cudaMemsetAsync(sends_[0], 0, usual.count * dtype_size(kType), cudaStreamLegacy));
  LlFault fault;
  const Status st = runtime->run_ll(0, call, &fault);
  wait_all({1});
  EXPECT_TRUE(st.is_ok()) << st.to_string();
  // Rank 0 added zeros: both hold rank 1's input.
  const Bytes want = testing::make_input(kType, ROp::kSum, 1, usual.count);
  for (int r : {0, 1}) {
    Bytes got(want.size());
    ASSERT_CUDA(cudaMemcpy(got.data(), recvs_[r], got.size(), cudaMemcpyDeviceToHost));
    EXPECT_EQ(testing::compare(got, want, kType), "") << "rank " << r;
  }
}

// CUDA's rule that the engine's deferred frees rest on (engine/gpu_memory_to_free.h): a cudaFree
// made while a low-latency call waits for its peer waits for that call's kernel. The peer's
// kernel is launched from another thread a second later. On the H200 (CUDA 13, 2026-12-03) that
// launch also waited for the free, so the call ended only at its timeout: within one process too,
// a free blocks the calls it waits for. Either way the free must have waited.
TEST_F(LlMismatch, ThroughTheRuntimeACudaFreeWaitsForAKernelThatWaitsForItsPeer) {
  auto runtime = two_ranks_and_a_runtime();
  ASSERT_NE(runtime, nullptr);
  const Call usual{CollKind::kAllreduce, ROp::kSum, 1000};
  const uint64_t timeout_ns = 4ull * 1000 * 1000 * 1000;
  LlCall call = prepare(0, usual, 1, timeout_ns);
  call.lends_lock = true;
  const LlCall peer_call = prepare(1, usual, 1, timeout_ns);
  void* spare = nullptr;  // freed below, not by the fixture
  ASSERT_CUDA(cudaMalloc(&spare, size_t(1) << 20));
  ASSERT_CUDA(cudaDeviceSynchronize());
  Status st;
  LlFault fault;
  const auto start = std::chrono::steady_clock::now();
  auto since_start = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  std::thread caller([&] { st = runtime->run_ll(0, call, &fault); });
  double launched_at = 0;
  std::thread peer([&] {
    std::this_thread::sleep_for(std::chrono::seconds(1));
    EXPECT_TRUE(ll_launch(peer_call, kLlPush | kLlFinish, signals_[1], stream(1)).is_ok());
    launched_at = since_start();
  });
  // The free only once the call's kernel runs: its key or flags have reached rank 1's region
  // (a legacy-stream copy does not wait for that kernel's stream).
  const size_t signals_at = region_.flags_offset();
  std::vector<uint64_t> words((region_.total_bytes() - signals_at) / sizeof(uint64_t));
  cudaError_t read = cudaSuccess;
  auto kernel_running = [&] {
    read = cudaMemcpy(words.data(), static_cast<uint8_t*>(regions_[1]) + signals_at,
                      words.size() * sizeof(uint64_t), cudaMemcpyDeviceToHost);
    if (read != cudaSuccess) return true;  // reported below
    for (uint64_t w : words)
      if (w != 0) return true;
    return false;
  };
  while (!kernel_running() && since_start() < 0.8) std::this_thread::yield();
  EXPECT_EQ(read, cudaSuccess) << cudaGetErrorString(read);
  EXPECT_LT(since_start(), 0.8) << "the call's kernel never reached rank 1's region";
  EXPECT_EQ(cudaFree(spare), cudaSuccess);
  const double freed_at = since_start();
  peer.join();
  caller.join();
  wait_all({1});
  EXPECT_GT(freed_at, 0.9) << "cudaFree did not wait for the kernel that waited for its peer";
  std::printf("cudaFree returned after %.2f s, the peer's launch after %.2f s; the call: %s\n",
              freed_at, launched_at, st.to_string().c_str());
  if (st.is_ok()) {
    expect_exact_allreduce(0, usual.count);
  } else {
    EXPECT_EQ(st.code(), Code::kTimeout) << st.to_string();
    EXPECT_GE(launched_at, freed_at - 0.05) << "the call timed out, yet the launch did not wait";
  }
  expect_exact_allreduce(1, usual.count);  // rank 0 pushed its data before it waited
}

}  // namespace
}  // namespace efacoll
