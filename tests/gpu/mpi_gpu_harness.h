// efacoll_mpi_gpu_tests: pass/fail bookkeeping, efacoll's counters (C API found with dlsym),
// buffers on the GPU, in pageable or pinned host memory, with poisoned guard bytes.
#pragma once
#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "device_alloc.h"
#include "efacoll/efacoll.h"
#include "mpi_gpu_data.h"

namespace gputest {

constexpr uint8_t kPoison = 0xA5;
constexpr size_t kGuard = 64;  // poisoned bytes after every buffer

struct Context {
  int world_rank = 0, world_size = 1;
  int device = 0, device_count = 0;
  bool engine_active = false;  // efacoll_provider() returned a provider
  int (*get_counters)(efacoll_collective, efacoll_counters*) = nullptr;
  long passed = 0, failed = 0;
  long max_reports = 40;     // failure lines printed per rank; later ones only counted
  bool verbose = false;      // rank 0 names each case before its call
  bool host_memory = false;  // --host-memory: every buffer is malloc'ed (self-test, no GPU)
  DeviceAlloc device_alloc = DeviceAlloc::kCudaMalloc;  // --device-memory: GPU buffers' kind
};
extern Context g_ctx;

// Counts one check; when !ok prints "FAIL <case> rank R: <detail>". Returns ok.
bool check(bool ok, const std::string& case_name, const std::string& detail);
std::string mpi_error_text(int rc);
// "" when the CUDA call succeeded, else "<what>: <name> (<text>)".
std::string cuda_text(const char* what, int cuda_error);

struct CounterSnapshot {
  bool valid = false;
  efacoll_counters c[EFACOLL_NUM_COLLECTIVES] = {};
};
CounterSnapshot counters_now();
// "" when exactly one call of `coll` (and nothing else) was counted since `before`: on efacoll
// when `engine`, passed to MPI otherwise. Vacuous without the C API.
std::string counted_once(const CounterSnapshot& before, efacoll_collective coll, bool engine);
// "" when nothing was counted since `before`: neither run nor passed to MPI (refused).
std::string counted_none(const CounterSnapshot& before);

enum class Where { kDevice, kOtherDevice, kHost, kPinned };
const char* where_name(Where w);

// offset + bytes + kGuard bytes; the region the test uses starts at `offset`.
class TestBuf {
 public:
  TestBuf() = default;
  TestBuf(const TestBuf&) = delete;
  TestBuf& operator=(const TestBuf&) = delete;
  ~TestBuf();
  // Each returns "" or what went wrong.
  std::string allocate(Where where, size_t offset, size_t bytes);
  std::string poison();                                  // every byte kPoison
  std::string upload(const Bytes& data, size_t at = 0);  // into the region, `at` bytes in
  std::string download(Bytes* whole) const;              // the whole allocation
  uint8_t* ptr() const { return base_ + offset_; }
  size_t offset() const { return offset_; }
  size_t bytes() const { return bytes_; }
  size_t total() const { return offset_ + bytes_ + kGuard; }
  Where where() const { return where_; }

 private:
  Where where_ = Where::kDevice;
  DeviceAlloc alloc_ = DeviceAlloc::kCudaMalloc;
  int device_ = 0;
  uint8_t* base_ = nullptr;
  size_t offset_ = 0, bytes_ = 0;
};

// "" when every byte of `whole` outside [from, to) still holds kPoison.
std::string guard_intact(const Bytes& whole, size_t from, size_t to, size_t offset);

// Compares `count` elements of `got` (at byte `got_at` of a download) with `want`; prints the
// first bad index, both values and how many differ. Returns ok.
bool check_elements(const std::string& case_name, const char* what, const TypeDesc& t,
                    const uint8_t* got, const Bytes& want, size_t count, bool bitwise,
                    size_t index_base = 0);

// Compares a huge result at sampled indices (ends, and 4096 chosen from `seed`) with
// expected_at(i), then scans every element for the poison pattern (data never written).
void check_sampled(const std::string& case_name, const TypeDesc& t, const uint8_t* got,
                   size_t count, uint64_t seed, const std::function<Bytes(size_t)>& expected_at);

// The same answer on every rank of `comm` (PMPI: bookkeeping is never counted by efacoll).
bool all_true(MPI_Comm comm, bool mine);

// Runs `body` under a title; rank 0 prints the title first and the checks and time after.
void section(const char* title, const std::function<void()>& body);

// Sums the counts over MPI_COMM_WORLD, prints "N passed, M failed" on rank 0; the exit code.
int finish();

}  // namespace gputest
