// ll_stream_bench: what one low-latency call costs through the GPU runtime (run_ll, as the engine
// makes it) with its kernel on the blocking stream, as a single-threaded MPI runs it, and on its
// own non-blocking stream ordered after the legacy stream by an event, as under
// MPI_THREAD_MULTIPLE, where the call lends efacoll's lock (LlCall::lends_lock). Two "ranks" are
// two threads of this process on GPU 0, each calling run_ll; the two ways take turns batch by
// batch, and each is the median of its batches' mean call time (rank 0's).
//   ll_stream_bench [--bytes 8,4096,65536] [--batches 7] [--calls 200]
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "gpu/gpu_runtime.h"
#include "gpu/ll_protocol.h"

namespace efacoll {
namespace {

constexpr int kRanks = 2;
constexpr size_t kPushLimit = size_t(1) << 20;

// Both threads meet here before every batch.
class Meeting {
 public:
  void meet() {
    const int round = round_.load();
    if (arrived_.fetch_add(1) + 1 == kRanks) {
      arrived_ = 0;
      round_.fetch_add(1);
      return;
    }
    while (round_.load() == round) std::this_thread::yield();
  }

 private:
  std::atomic<int> arrived_{0}, round_{0};
};

std::vector<size_t> parse_sizes(const char* text) {
  std::vector<size_t> out;
  for (const char* p = text; *p;) {
    char* end = nullptr;
    out.push_back(std::strtoull(p, &end, 10));
    p = *end == ',' ? end + 1 : end;
  }
  return out;
}

const char* arg(int argc, char** argv, const char* name, const char* fallback) {
  for (int i = 1; i + 1 < argc; ++i)
    if (!std::strcmp(argv[i], name)) return argv[i + 1];
  return fallback;
}

int run(int argc, char** argv) {
  const std::vector<size_t> sizes = parse_sizes(arg(argc, argv, "--bytes", "8,4096,65536"));
  const int batches = std::atoi(arg(argc, argv, "--batches", "7"));
  const int calls = std::atoi(arg(argc, argv, "--calls", "200"));
  std::string why;
  std::unique_ptr<GpuRuntime> rt = make_gpu_runtime(&why);
  if (!rt) {
    std::printf("SKIP: %s\n", why.c_str());
    return 77;
  }
  LlRegion region;
  region.slot_bytes = ll_slot_bytes(kPushLimit, kRanks);
  region.nranks = kRanks;
  void *regions[kRanks], *sends[kRanks], *recvs[kRanks];
  for (int r = 0; r < kRanks; ++r) {
    for (void** p : {&regions[r], &sends[r], &recvs[r]}) {
      const size_t bytes = p == &regions[r] ? region.total_bytes() : region.slot_bytes;
      if (!rt->alloc_device(0, bytes, p).is_ok() || !rt->zero(*p, bytes).is_ok()) {
        std::printf("FAIL: device memory\n");
        return 1;
      }
    }
  }
  std::printf(
      "ll_stream_bench: 2 ranks as threads on GPU 0, float sum allreduce, %d batches of "
      "%d calls, median of the batches' mean (rank 0)\n",
      batches, calls);
  std::printf("%10s %16s %16s %8s\n", "bytes", "blocking (us)", "own stream (us)", "ratio");
  uint64_t seq = 1;
  for (size_t bytes : sizes) {
    const size_t count = std::max<size_t>(1, bytes / sizeof(float));
    LlCall call[kRanks];
    for (int r = 0; r < kRanks; ++r) {
      if (!ll_plan(CollKind::kAllreduce, sizeof(float), count, nullptr, r, kRanks, false,
                   region.slot_bytes, &call[r])) {
        std::printf("%10zu too large for the slots\n", bytes);
        return 1;
      }
      call[r].dtype = DType::kFloat32;
      call[r].op = ROp::kSum;
      call[r].key = ll_call_key(0x5a5, count);
      call[r].timeout_ns = 10ull * 1000 * 1000 * 1000;
      call[r].send = sends[r];
      call[r].recv = recvs[r];
      for (int q = 0; q < kRanks; ++q) call[r].regions[q] = regions[q];
    }
    std::vector<double> us[2];
    std::atomic<bool> failed{false};
    Meeting meeting;
    auto rank_main = [&](int r) {
      for (int b = 0; b < batches; ++b) {
        for (int way = 0; way < 2; ++way) {
          LlCall c = call[r];
          c.lends_lock = way == 1;
          meeting.meet();
          const auto start = std::chrono::steady_clock::now();
          for (int i = 0; i < calls; ++i) {
            c.seq = seq + static_cast<uint64_t>((b * 2 + way) * calls + i);
            LlFault fault;
            if (!rt->run_ll(0, c, &fault).is_ok()) failed = true;
          }
          const double took =
              std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start)
                  .count();
          if (r == 0) us[way].push_back(took / calls);
        }
      }
    };
    std::thread other(rank_main, 1);
    rank_main(0);
    other.join();
    seq += static_cast<uint64_t>(batches) * 2 * calls;
    if (failed) {
      std::printf("FAIL: a call failed at %zu bytes\n", bytes);
      return 1;
    }
    for (auto& v : us) std::sort(v.begin(), v.end());
    const double blocking = us[0][us[0].size() / 2], own = us[1][us[1].size() / 2];
    std::printf("%10zu %16.2f %16.2f %8.3f\n", count * sizeof(float), blocking, own,
                own / blocking);
  }
  for (int r = 0; r < kRanks; ++r)
    for (void* p : {regions[r], sends[r], recvs[r]}) rt->free_device(0, p);
  return 0;
}

}  // namespace
}  // namespace efacoll

int main(int argc, char** argv) { return efacoll::run(argc, argv); }
