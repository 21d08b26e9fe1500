#include "mpi_gpu_harness.h"

#include <cuda_runtime.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace gputest {

Context g_ctx;

bool check(bool ok, const std::string& case_name, const std::string& detail) {
  if (ok) {
    g_ctx.passed++;
    return true;
  }
  g_ctx.failed++;
  if (g_ctx.failed <= g_ctx.max_reports) {
    std::printf("FAIL %s rank %d: %s\n", case_name.c_str(), g_ctx.world_rank, detail.c_str());
    if (g_ctx.failed == g_ctx.max_reports) {
      std::printf("rank %d: further failures are counted, not printed\n", g_ctx.world_rank);
    }
    std::fflush(stdout);
  }
  return false;
}

std::string mpi_error_text(int rc) {
  char text[MPI_MAX_ERROR_STRING] = "";
  int len = 0;
  if (MPI_Error_string(rc, text, &len) != MPI_SUCCESS) return "MPI error " + std::to_string(rc);
  return "MPI error " + std::to_string(rc) + " (" + text + ")";
}

std::string cuda_text(const char* what, int cuda_error) {
  auto err = static_cast<cudaError_t>(cuda_error);
  if (err == cudaSuccess) return "";
  return std::string(what) + ": " + cudaGetErrorName(err) + " (" + cudaGetErrorString(err) + ")";
}

CounterSnapshot counters_now() {
  CounterSnapshot s;
  if (!g_ctx.get_counters) return s;
  s.valid = true;
  for (int k = 0; k < EFACOLL_NUM_COLLECTIVES; ++k) {
    if (g_ctx.get_counters(static_cast<efacoll_collective>(k), &s.c[k]) != 0) s.valid = false;
  }
  return s;
}

namespace {
// "" when the counters moved by exactly `want_engine` and `want_mpi` calls of `coll` since
// `before`, and by nothing else.
std::string counted(const CounterSnapshot& before, efacoll_collective coll,
                    unsigned long long want_engine, unsigned long long want_mpi) {
  if (!g_ctx.get_counters) return "";
  if (!before.valid) return "efacoll_get_counters failed before the call";
  CounterSnapshot now = counters_now();
  if (!now.valid) return "efacoll_get_counters failed after the call";
  static const char* const kNames[] = {"allreduce", "allgather", "reduce_scatter"};
  std::string why;
  for (int k = 0; k < EFACOLL_NUM_COLLECTIVES; ++k) {
    unsigned long long de = now.c[k].engine_calls - before.c[k].engine_calls;
    unsigned long long dm = now.c[k].mpi_calls - before.c[k].mpi_calls;
    unsigned long long want_e = k == coll ? want_engine : 0;
    unsigned long long want_m = k == coll ? want_mpi : 0;
    if (de != want_e || dm != want_m) {
      why += std::string(why.empty() ? "" : "; ") + "efacoll counters of " + kNames[k] +
             ": engine_calls +" + std::to_string(de) + " (want +" + std::to_string(want_e) +
             "), mpi_calls +" + std::to_string(dm) + " (want +" + std::to_string(want_m) + ")";
    }
  }
  if (!why.empty() && want_engine) {
    why += " [run with EFACOLL_STATS=1 to see why efacoll passed it to MPI]";
  }
  return why;
}
}  // namespace

std::string counted_once(const CounterSnapshot& before, efacoll_collective coll, bool engine) {
  return counted(before, coll, engine ? 1 : 0, engine ? 0 : 1);
}

std::string counted_none(const CounterSnapshot& before) {
  return counted(before, EFACOLL_ALLREDUCE, 0, 0);
}

const char* where_name(Where w) {
  switch (w) {
    case Where::kDevice:
      return "device";
    case Where::kOtherDevice:
      return "other-device";
    case Where::kHost:
      return "host";
    case Where::kPinned:
      return "pinned";
  }
  return "?";
}

namespace {
// Makes a buffer's GPU current for the CUDA calls on it (it may live on another GPU).
class OnDevice {
 public:
  explicit OnDevice(int device) : switched_(device != g_ctx.device) {
    if (switched_) cudaSetDevice(device);
  }
  ~OnDevice() {
    if (switched_) cudaSetDevice(g_ctx.device);
  }

 private:
  bool switched_;
};
}  // namespace

TestBuf::~TestBuf() {
  if (!base_) return;
  switch (where_) {
    case Where::kDevice:
    case Where::kOtherDevice: {
      OnDevice on(device_);
      device_free(alloc_, base_);
      break;
    }
    case Where::kPinned:
      cudaFreeHost(base_);
      break;
    case Where::kHost:
      std::free(base_);
      break;
  }
}

std::string TestBuf::allocate(Where where, size_t offset, size_t bytes) {
  if (g_ctx.host_memory) where = Where::kHost;
  where_ = where;
  offset_ = offset;
  bytes_ = bytes;
  const size_t n = total();
  cudaError_t err = cudaSuccess;
  void* p = nullptr;
  alloc_ = g_ctx.device_alloc;
  std::string device_error;
  switch (where) {
    case Where::kDevice:
      device_ = g_ctx.device;
      device_error = device_alloc(alloc_, n, &p);
      break;
    case Where::kOtherDevice:
      device_ = (g_ctx.device + 1) % g_ctx.device_count;
      err = cudaSetDevice(device_);
      if (err == cudaSuccess) device_error = device_alloc(alloc_, n, &p);
      cudaSetDevice(g_ctx.device);
      break;
    case Where::kPinned:
      err = cudaMallocHost(&p, n);
      break;
    case Where::kHost:
      p = std::malloc(n);
      if (!p) return "malloc(" + std::to_string(n) + ") failed";
      break;
  }
  if (err != cudaSuccess) {
    return cuda_text(
        ("allocating " + std::to_string(n) + " bytes of " + where_name(where) + " memory").c_str(),
        err);
  }
  if (!device_error.empty()) {
    return "allocating " + std::to_string(n) + " bytes of " + device_alloc_name(alloc_) + " " +
           where_name(where) + " memory: " + device_error;
  }
  base_ = static_cast<uint8_t*>(p);
  return "";
}

std::string TestBuf::poison() {
  if (where_ == Where::kHost || where_ == Where::kPinned) {
    std::memset(base_, kPoison, total());
    return "";
  }
  // cudaMemset may return before it is done: synchronise, as an application must before MPI.
  OnDevice on(device_);
  std::string e = cuda_text("cudaMemset (poison)", cudaMemset(base_, kPoison, total()));
  if (e.empty()) e = cuda_text("cudaDeviceSynchronize after poison", cudaDeviceSynchronize());
  return e;
}

std::string TestBuf::upload(const Bytes& data, size_t at) {
  if (data.empty()) return "";
  if (at + data.size() > bytes_) return "upload past the end of the buffer (test bug)";
  if (where_ == Where::kHost || where_ == Where::kPinned) {
    std::memcpy(ptr() + at, data.data(), data.size());
    return "";
  }
  OnDevice on(device_);
  std::string e = cuda_text("cudaMemcpy host to device",
                            cudaMemcpy(ptr() + at, data.data(), data.size(), cudaMemcpyDefault));
  if (e.empty()) e = cuda_text("cudaDeviceSynchronize after upload", cudaDeviceSynchronize());
  return e;
}

std::string TestBuf::download(Bytes* whole) const {
  whole->resize(total());
  if (where_ == Where::kHost || where_ == Where::kPinned) {
    std::memcpy(whole->data(), base_, total());
    return "";
  }
  OnDevice on(device_);
  return cuda_text("cudaMemcpy device to host",
                   cudaMemcpy(whole->data(), base_, total(), cudaMemcpyDefault));
}

std::string guard_intact(const Bytes& whole, size_t from, size_t to, size_t offset) {
  for (size_t i = 0; i < whole.size(); ++i) {
    if (i >= from && i < to) continue;
    if (whole[i] != kPoison) {
      char text[160];
      std::snprintf(text, sizeof(text),
                    "byte %ld (relative to the buffer pointer) outside the written range "
                    "[%zu, %zu) changed: 0x%02x instead of 0x%02x",
                    static_cast<long>(i) - static_cast<long>(offset), from - offset, to - offset,
                    whole[i], kPoison);
      return text;
    }
  }
  return "";
}

bool check_elements(const std::string& case_name, const char* what, const TypeDesc& t,
                    const uint8_t* got, const Bytes& want, size_t count, bool bitwise,
                    size_t index_base) {
  long bad = first_mismatch(t, got, want.data(), count, bitwise);
  if (bad < 0) return check(true, case_name, "");
  size_t differing = 0;
  for (size_t i = static_cast<size_t>(bad); i < count; ++i) {
    if (first_mismatch(t, got + i * t.size, want.data() + i * t.size, 1, bitwise) >= 0) {
      ++differing;
    }
  }
  const size_t b = static_cast<size_t>(bad);
  return check(false, case_name,
               std::string(what) + ": first bad index " + std::to_string(index_base + b) + " got " +
                   format_elem(t, got, b) + " expected " + format_elem(t, want.data(), b) + " (" +
                   std::to_string(differing) + " of " + std::to_string(count) +
                   " elements differ)");
}

void check_sampled(const std::string& case_name, const TypeDesc& t, const uint8_t* got,
                   size_t count, uint64_t seed, const std::function<Bytes(size_t)>& expected_at) {
  std::vector<size_t> idx;
  for (size_t k = 0; k < 64 && k < count; ++k) {
    idx.push_back(k);
    idx.push_back(count - 1 - k);
  }
  for (size_t k = 0; k < 4096 && count > 0; ++k) idx.push_back(mix(seed, 7777, k) % count);
  for (size_t i : idx) {
    const Bytes want = expected_at(i);
    if (first_mismatch(t, got + i * t.size, want.data(), 1, false) >= 0) {
      check_elements(case_name, "sampled element", t, got + i * t.size, want, 1, false, i);
      return;
    }
  }
  uint8_t poison_elem[16];
  std::memset(poison_elem, kPoison, sizeof(poison_elem));
  for (size_t i = 0; i < count; ++i) {
    if (std::memcmp(got + i * t.size, poison_elem, t.size) == 0) {
      check(false, case_name, "element " + std::to_string(i) + " still holds the poison pattern");
      return;
    }
  }
  check(true, case_name, "");
}

bool all_true(MPI_Comm comm, bool mine) {
  int in = mine ? 1 : 0, out = 0;
  PMPI_Allreduce(&in, &out, 1, MPI_INT, MPI_MIN, comm);
  return out != 0;
}

void section(const char* title, const std::function<void()>& body) {
  const long before = g_ctx.passed + g_ctx.failed, failed = g_ctx.failed;
  if (g_ctx.world_rank == 0) {
    std::printf("== %s\n", title);
    std::fflush(stdout);
  }
  auto t0 = std::chrono::steady_clock::now();
  body();
  PMPI_Barrier(MPI_COMM_WORLD);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (g_ctx.world_rank == 0) {
    std::printf("   %s: %ld checks on rank 0, %ld failed there, %.1f s\n", title,
                g_ctx.passed + g_ctx.failed - before, g_ctx.failed - failed, s);
    std::fflush(stdout);
  }
}

int finish() {
  long local[2] = {g_ctx.passed, g_ctx.failed}, total[2] = {0, 0};
  PMPI_Allreduce(local, total, 2, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
  if (g_ctx.world_rank == 0) {
    std::printf("%ld passed, %ld failed\n", total[0], total[1]);
    std::fflush(stdout);
  }
  return total[1] == 0 ? 0 : 1;
}

}  // namespace gputest
