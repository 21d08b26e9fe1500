// gpu_bench: an nccl-tests style table for GPU buffers. For each size, in one process and on the
// same buffers, it times efacoll on device pointers (MPI_X with libefacoll.so preloaded), efacoll
// on pageable host buffers of the same size (what the provider moves without any GPU staging) and
// NCCL (dlopen'ed, so nothing needs it at build time). PMPI_* is only ever given host memory: the
// host MPI need not be CUDA-aware.
//   mpirun -np 2 -x LD_PRELOAD=libefacoll.so -x EFACOLL_PROVIDER=shm -x EFACOLL_HOST_BUFFERS=1
//       gpu_bench -c allreduce -b 1M -e 1G
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <mpi.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>
#include <vector>

#include "efacoll/efacoll.h"
#include "nccl_loader.h"

namespace {

enum Coll { kAllreduce, kAllgather, kReduceScatter };  // same order as efacoll_collective
enum Impl { kGpuEfacoll, kHostEfacoll, kNccl, kNumImpls };
const char* const kCollNames[] = {"allreduce", "allgather", "reduce_scatter"};
const char* const kImplNames[] = {"efacoll-gpu", "efacoll-host", "nccl"};

struct Options {
  size_t min_bytes = 8, max_bytes = size_t{1} << 30, factor = 2;
  Coll coll = kAllreduce;
  int iters = 0;  // 0: adaptive (or 200 samples with -l)
  int warmup = 2, repeats = 5;
  bool latency = false;
  bool peer_copy = false;  // physical reference: copy-engine peer copy GPU0 -> GPU1
  bool no_nccl = false;    // ranks sharing a GPU (NCCL refuses them)
};

struct Bench {
  Options opt;
  int rank = 0, nranks = 1, device = -1;
  float *dsend = nullptr, *drecv = nullptr;  // device
  float *hsend = nullptr, *hrecv = nullptr;  // pageable host, as an MPI user has
  bool usable[kNumImpls] = {false, true, false};
  NcclLibrary nccl;
  cudaStream_t nccl_stream = nullptr;
};

// Timed work per size and implementation, over all repeats; at least kMinIters calls per repeat.
constexpr double kTargetSeconds = 0.25;
constexpr int kMinIters = 3, kMaxIters = 1000, kLatencySamples = 200;

[[noreturn]] void fail(const char* what, const char* detail) {
  fprintf(stderr, "gpu_bench: %s failed: %s\n", what, detail);
  PMPI_Abort(MPI_COMM_WORLD, 2);
  std::abort();
}

void check_cuda(cudaError_t err, const char* what) {
  if (err != cudaSuccess) fail(what, cudaGetErrorString(err));
}
void check_nccl(const NcclLibrary& n, ncclResult_t rc, const char* what) {
  if (rc != kNcclSuccess) fail(what, n.error_text(rc));
}

// "256M" -> 268435456; 0 on malformed input.
size_t parse_bytes(const char* s) {
  static const char kSuffixes[] = "KMG";
  char* end = nullptr;
  unsigned long long v = strtoull(s, &end, 10);
  if (end == s) return 0;
  const char* suffix =
      *end ? strchr(kSuffixes, toupper(static_cast<unsigned char>(*end))) : nullptr;
  if (suffix) {
    v <<= 10 * (suffix - kSuffixes + 1);
    ++end;
  }
  return *end == '\0' ? static_cast<size_t>(v) : 0;
}

void usage() {
  fprintf(stderr,
          "usage: gpu_bench [-b MIN] [-e MAX] [-f N] [-c COLL] [-n N] [-w N] [-r N] [-l] [-p] [-N]\n"
          "  -b/-e  size range in bytes, K/M/G suffixes (default 8 .. 1G); float data, op sum\n"
          "  -f     size multiplication factor (default 2)\n"
          "  -c     allreduce | allgather | reduce_scatter (default allreduce)\n"
          "  -n     calls per repeat (default adaptive, ~%.2f s per size, at least %d)\n"
          "  -w     warm-up calls per size (default 2)\n"
          "  -r     repeats; the time shown is their median (default 5)\n"
          "  -l     latency: single blocking 8-byte allreduce calls (-n samples, default %d)\n"
          "  -p     also print the peer-copy bandwidth GPU0 -> GPU1 at the largest size (rank 0)\n"
          "  -N     no NCCL column (NCCL needs one GPU per rank; ranks here may share one)\n",
          kTargetSeconds, kMinIters, kLatencySamples);
}

bool parse_options(int argc, char** argv, Options* o) {
  int c;
  bool ok = true;
  while (ok && (c = getopt(argc, argv, "b:e:f:c:n:w:r:lpNh")) != -1) {
    // clang-format off
    switch (c) {
      case 'b': ok = (o->min_bytes = parse_bytes(optarg)) > 0; break;
      case 'e': ok = (o->max_bytes = parse_bytes(optarg)) > 0; break;
      case 'f': ok = (o->factor = strtoul(optarg, nullptr, 10)) >= 2; break;
      case 'n': ok = (o->iters = atoi(optarg)) > 0; break;
      case 'w': ok = (o->warmup = atoi(optarg)) >= 0; break;
      case 'r': ok = (o->repeats = atoi(optarg)) > 0; break;
      case 'l': o->latency = true; break;
      case 'p': o->peer_copy = true; break;
      case 'N': o->no_nccl = true; break;
      case 'c':
        ok = false;
        for (int i = 0; i < 3; ++i) {
          if (strcmp(optarg, kCollNames[i]) == 0) o->coll = static_cast<Coll>(i), ok = true;
        }
        break;
      default: ok = false; break;
    }
    // clang-format on
  }
  if (o->latency) o->coll = kAllreduce, o->min_bytes = o->max_bytes = 2 * sizeof(float);
  return ok && optind == argc && o->min_bytes <= o->max_bytes;
}

// The physical reference of issue-style targets: one copy-engine copy between two GPUs of this
// process (median of 5), GB/s. Needs two visible GPUs with peer access.
void print_peer_copy(size_t bytes) {
  int count = 0, previous = 0, can = 0;
  cudaGetDeviceCount(&count);
  if (count < 2 || cudaDeviceCanAccessPeer(&can, 0, 1) != cudaSuccess || !can) {
    printf("# peer copy: n/a (needs two GPUs with peer access)\n");
    return;
  }
  cudaGetDevice(&previous);
  void *src = nullptr, *dst = nullptr;
  cudaSetDevice(1);
  cudaMalloc(&dst, bytes);
  cudaSetDevice(0);
  cudaDeviceEnablePeerAccess(1, 0);
  cudaMalloc(&src, bytes);
  cudaStream_t s;
  cudaStreamCreate(&s);
  cudaEvent_t t0, t1;
  cudaEventCreate(&t0);
  cudaEventCreate(&t1);
  std::vector<float> ms;
  for (int i = 0; i < 6; ++i) {
    cudaEventRecord(t0, s);
    cudaMemcpyPeerAsync(dst, 1, src, 0, bytes, s);
    cudaEventRecord(t1, s);
    cudaEventSynchronize(t1);
    float m = 0;
    cudaEventElapsedTime(&m, t0, t1);
    if (i > 0) ms.push_back(m);  // the first warms up
  }
  std::sort(ms.begin(), ms.end());
  printf("# peer copy GPU0 -> GPU1 (copy engine), %zu B: %.1f GB/s (median of %zu)\n", bytes,
         bytes / (ms[ms.size() / 2] * 1e6), ms.size());
  cudaEventDestroy(t0);
  cudaEventDestroy(t1);
  cudaStreamDestroy(s);
  cudaFree(src);
  cudaSetDevice(1);
  cudaFree(dst);
  cudaSetDevice(previous);
}

// Node-local rank from the launcher, before MPI_Init: the device is current before efacoll starts.
int local_rank() {
  for (const char* var : {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID"}) {
    if (const char* v = getenv(var)) return atoi(v);
  }
  return 0;
}

size_t blocks(const Bench& b) { return b.opt.coll == kAllreduce ? 1 : b.nranks; }
// Sizes are totals. count: elements per rank (allgather, reduce_scatter) or all (allreduce).
size_t count_for(const Bench& b, size_t bytes) { return bytes / (sizeof(float) * blocks(b)); }
size_t total_bytes(const Bench& b, size_t count) { return count * blocks(b) * sizeof(float); }
size_t send_elems(const Bench& b, size_t n) {
  return b.opt.coll == kReduceScatter ? n * blocks(b) : n;
}
size_t recv_elems(const Bench& b, size_t n) { return b.opt.coll == kAllgather ? n * blocks(b) : n; }

double busbw_factor(const Bench& b) {
  double n = b.nranks;
  return b.opt.coll == kAllreduce ? 2 * (n - 1) / n : (n - 1) / n;
}

// One blocking call. NCCL's stream is synchronized so that all three columns time the same
// thing: a call after which the result is in place. efacoll returns with its result visible.
void run_once(Bench& b, Impl impl, size_t count) {
  const int n = static_cast<int>(count);
  if (impl == kNccl) {
    NcclLibrary& c = b.nccl;
    cudaStream_t s = b.nccl_stream;
    ncclResult_t rc =
        b.opt.coll == kAllreduce
            ? c.all_reduce(b.dsend, b.drecv, count, kNcclFloat32, kNcclSum, c.comm, s)
        : b.opt.coll == kAllgather
            ? c.all_gather(b.dsend, b.drecv, count, kNcclFloat32, c.comm, s)
            : c.reduce_scatter(b.dsend, b.drecv, count, kNcclFloat32, kNcclSum, c.comm, s);
    check_nccl(c, rc, kCollNames[b.opt.coll]);
    check_cuda(cudaStreamSynchronize(s), "cudaStreamSynchronize");
    return;
  }
  const float* send = impl == kGpuEfacoll ? b.dsend : b.hsend;
  float* recv = impl == kGpuEfacoll ? b.drecv : b.hrecv;
  int rc = b.opt.coll == kAllreduce
               ? MPI_Allreduce(send, recv, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD)
           : b.opt.coll == kAllgather
               ? MPI_Allgather(send, n, MPI_FLOAT, recv, n, MPI_FLOAT, MPI_COMM_WORLD)
               : MPI_Reduce_scatter_block(send, recv, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  if (rc != MPI_SUCCESS) fail(kCollNames[b.opt.coll], "MPI error");
}

// Mean wall time of one call over a batch of `iters`, slowest rank. Timing and checking use
// PMPI on host memory: they never measure efacoll, and every rank gets the same answer.
double time_batch(Bench& b, Impl impl, size_t count, int iters) {
  PMPI_Barrier(MPI_COMM_WORLD);
  double t0 = MPI_Wtime(), mean, slowest = 0;
  for (int i = 0; i < iters; ++i) run_once(b, impl, count);
  mean = (MPI_Wtime() - t0) / iters;
  PMPI_Allreduce(&mean, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return slowest;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : (v[m - 1] + v[m]) / 2;
}

// Untimed warm-up (first calls register memory, allocate staging), then the median of repeats.
double measure(Bench& b, Impl impl, size_t count) {
  for (int i = 0; i < b.opt.warmup; ++i) run_once(b, impl, count);
  int iters = b.opt.iters;
  if (iters == 0) {
    double probe = std::max(time_batch(b, impl, count, 1), 1e-7);
    iters = static_cast<int>(
        std::clamp(kTargetSeconds / b.opt.repeats / probe, double{kMinIters}, double{kMaxIters}));
  }
  std::vector<double> t;
  for (int r = 0; r < b.opt.repeats; ++r) t.push_back(time_batch(b, impl, count, iters));
  return median(t);
}

// Rank r's element k is (r + k) % 7: small integers, so every float sum is exact.
float input_value(int rank, size_t k) {
  return static_cast<float>((static_cast<size_t>(rank) + k) % 7);
}

// Output element i of this rank; `sum7[k % 7]` is the sum over ranks of input element k.
float expected_value(const Bench& b, const float* sum7, size_t count, size_t i) {
  if (b.opt.coll == kAllgather) return input_value(static_cast<int>(i / count), i % count);
  return sum7[(b.opt.coll == kAllreduce ? i : static_cast<size_t>(b.rank) * count + i) % 7];
}

// One efacoll call on poisoned device output, checked on a host copy (the host receive buffer,
// which is output only). Returns the wrong elements over all ranks.
long long count_wrong_gpu(Bench& b, size_t count) {
  size_t out = recv_elems(b, count);
  check_cuda(cudaMemset(b.drecv, 0xff, out * sizeof(float)), "cudaMemset");  // NaN: never right
  // efacoll works on its own non-blocking streams, which do not wait for this thread's default
  // stream: the memset must be finished before the call, or it could overwrite the result.
  check_cuda(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  run_once(b, kGpuEfacoll, count);
  check_cuda(cudaMemcpy(b.hrecv, b.drecv, out * sizeof(float), cudaMemcpyDeviceToHost),
             "cudaMemcpy");
  float sum7[7] = {0};
  for (size_t k = 0; k < 7u * b.nranks; ++k) sum7[k % 7] += input_value(k / 7, k % 7);
  long long wrong = 0, total = 0;
  size_t first = 0;
  for (size_t i = 0; i < out; ++i)
    if (b.hrecv[i] != expected_value(b, sum7, count, i) && wrong++ == 0) first = i;
  if (wrong > 0)  // where it goes wrong tells a misplaced block from a missed one
    fprintf(stderr, "gpu_bench: rank %d, count %zu: %lld wrong, first [%zu] = %g, want %g\n",
            b.rank, count, wrong, first, b.hrecv[first], expected_value(b, sum7, count, first));
  PMPI_Allreduce(&wrong, &total, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
  return total;
}

// Buffers for the largest size, every host page touched so no first-touch cost is timed.
void allocate_buffers(Bench& b, size_t max_count) {
  size_t send = send_elems(b, max_count), recv = recv_elems(b, max_count);
  b.hsend = static_cast<float*>(malloc(send * sizeof(float)));
  b.hrecv = static_cast<float*>(malloc(recv * sizeof(float)));
  if (!b.hsend || !b.hrecv) fail("malloc", "out of host memory");
  for (size_t k = 0; k < send; ++k) b.hsend[k] = input_value(b.rank, k);
  memset(b.hrecv, 0, recv * sizeof(float));
  check_cuda(cudaMalloc(reinterpret_cast<void**>(&b.dsend), send * sizeof(float)), "cudaMalloc");
  check_cuda(cudaMalloc(reinterpret_cast<void**>(&b.drecv), recv * sizeof(float)), "cudaMalloc");
  check_cuda(cudaMemcpy(b.dsend, b.hsend, send * sizeof(float), cudaMemcpyHostToDevice),
             "cudaMemcpy");
}

// NCCL, one communicator for the run, where every rank has the library.
void init_nccl(Bench& b) {
  if (!load_nccl_on_every_rank(&b.nccl)) return;
  std::string error;
  if (!init_nccl_world(&b.nccl, &error)) fail("NCCL", error.c_str());
  check_cuda(cudaStreamCreateWithFlags(&b.nccl_stream, cudaStreamNonBlocking), "cudaStreamCreate");
  b.usable[kNccl] = true;
}

void print_header(const Bench& b) {
  auto provider_fn = reinterpret_cast<const char* (*)()>(dlsym(RTLD_DEFAULT, "efacoll_provider"));
  const char* provider = provider_fn ? provider_fn() : nullptr;
  char gpu[160] = "";
  cudaDeviceProp prop;
  if (cudaGetDeviceProperties(&prop, b.device) == cudaSuccess) {
    snprintf(gpu, sizeof(gpu), "GPU %d %.96s (pci %04x:%02x:%02x)", b.device, prop.name,
             prop.pciDomainID, prop.pciBusID, prop.pciDeviceID);
  }
  std::vector<char> gpus(b.rank == 0 ? sizeof(gpu) * b.nranks : 1);
  PMPI_Gather(gpu, sizeof(gpu), MPI_CHAR, gpus.data(), sizeof(gpu), MPI_CHAR, 0, MPI_COMM_WORLD);
  if (b.rank != 0) return;
  char date[64];
  time_t now = time(nullptr);
  strftime(date, sizeof(date), "%Y-%m-%d %H:%M:%S %Z", localtime(&now));
  const char* what = b.opt.latency ? "latency (8-byte allreduce)" : kCollNames[b.opt.coll];
  printf("# gpu_bench: %s, %d ranks, float, op sum, %s\n", what, b.nranks, date);
  for (int r = 0; r < b.nranks; ++r) printf("# rank %d: %s\n", r, &gpus[sizeof(gpu) * r]);
  // Without an active efacoll the efacoll columns measure the host MPI.
  const char* state = !provider_fn ? "not loaded" : provider ? provider : "none (inactive)";
  printf("# efacoll provider: %s\n", state);
  if (!b.usable[kGpuEfacoll]) printf("# efacoll-gpu: n/a (no efacoll, MPI not CUDA-aware)\n");
  printf("# NCCL: %s\n",
         b.usable[kNccl] ? b.nccl.version.c_str() : "n/a (libnccl.so.2 not loaded)");
  const Options& o = b.opt;
  if (o.latency) return;
  std::string iters = o.iters > 0 ? std::to_string(o.iters) : "adaptive";
  printf(
      "# sizes %zu .. %zu B, factor %zu, iters %s, warmup %d, time = median of %d repeats of a "
      "batch's mean, max over ranks\n",
      o.min_bytes, o.max_bytes, o.factor, iters.c_str(), o.warmup, o.repeats);
  if (o.coll != kAllreduce) printf("# size is the total buffer: %d x per-rank bytes\n", b.nranks);
  printf("# %24s  %-28s  %-28s  %-28s\n", "", "--------- efacoll gpu -------",
         "-------- efacoll host -------", "------------ nccl ----------");
  const char* line = "# %11s %11s  %10s %8s %8s  %10s %8s %8s  %10s %8s %8s  %7s %8s %8s\n";
  printf(line, "size", "count", "time", "algbw", "busbw", "time", "algbw", "busbw", "time", "algbw",
         "busbw", "#wrong", "staging", "nccl");
  printf(line, "(B)", "(elements)", "(us)", "(GB/s)", "(GB/s)", "(us)", "(GB/s)", "(GB/s)", "(us)",
         "(GB/s)", "(GB/s)", "(gpu)", "gpu/host", "gpu/nccl");
}

// Calls efacoll passed to the MPI library, this process; -1 without efacoll.
long long passed_to_mpi(Coll coll) {
  using Fn = int (*)(efacoll_collective, efacoll_counters*);
  static auto fn = reinterpret_cast<Fn>(dlsym(RTLD_DEFAULT, "efacoll_get_counters"));
  efacoll_counters c;
  if (!fn || fn(static_cast<efacoll_collective>(coll), &c) != 0) return -1;
  return static_cast<long long>(c.mpi_calls);
}

// "n/a" where an implementation did not run.
std::string cell(double v, const char* format) {
  char s[32] = "n/a";
  if (v > 0) snprintf(s, sizeof(s), format, v);
  return s;
}

// Returns the number of wrong efacoll-gpu elements over all sizes.
long long run_sizes(Bench& b) {
  long long wrong_sum = 0, passed[kNumImpls] = {0, 0, 0};
  double log_staging = 0, log_nccl = 0;
  int rows = 0, nccl_rows = 0;
  size_t prev_bytes = 0;
  for (size_t size = b.opt.min_bytes; size <= b.opt.max_bytes; size *= b.opt.factor) {
    size_t count = count_for(b, size), bytes = total_bytes(b, count);
    if (count > 0 && bytes != prev_bytes) {
      prev_bytes = bytes;
      double t[kNumImpls] = {0, 0, 0};
      long long wrong = -1;
      for (int i = 0; i < kNumImpls; ++i) {
        if (!b.usable[i]) continue;
        long long before = passed_to_mpi(b.opt.coll);
        t[i] = measure(b, static_cast<Impl>(i), count);
        if (i == kGpuEfacoll) wrong = count_wrong_gpu(b, count);
        if (i != kNccl && before >= 0) passed[i] += passed_to_mpi(b.opt.coll) - before;
      }
      if (wrong > 0) wrong_sum += wrong;
      // busbw ratios: the bytes are the same, so they are inverse time ratios.
      auto ratio = [](double num, double den) { return num > 0 && den > 0 ? num / den : 0; };
      double staging = ratio(t[kHostEfacoll], t[kGpuEfacoll]),
             vs_nccl = ratio(t[kNccl], t[kGpuEfacoll]);
      if (staging > 0) log_staging += log(staging), ++rows;
      if (vs_nccl > 0) log_nccl += log(vs_nccl), ++nccl_rows;
      if (b.rank == 0) {
        printf("  %11zu %11zu", bytes, bytes / sizeof(float));
        for (int i = 0; i < kNumImpls; ++i) {
          double algbw = t[i] > 0 ? bytes / t[i] / 1e9 : 0;
          printf("  %10s %8s %8s", cell(t[i] * 1e6, "%.2f").c_str(), cell(algbw, "%.2f").c_str(),
                 cell(algbw * busbw_factor(b), "%.2f").c_str());
        }
        printf("  %7s %8s %8s\n", wrong >= 0 ? std::to_string(wrong).c_str() : "n/a",
               cell(staging, "%.3f").c_str(), cell(vs_nccl, "%.3f").c_str());
        fflush(stdout);
      }
    }
    if (size > b.opt.max_bytes / b.opt.factor) break;
  }
  if (b.rank == 0) {
    printf("# wrong values (efacoll-gpu): %lld\n", wrong_sum);
    if (rows) printf("# geomean busbw ratio gpu/host (staging): %.3f\n", exp(log_staging / rows));
    if (nccl_rows) printf("# geomean busbw ratio gpu/nccl: %.3f\n", exp(log_nccl / nccl_rows));
    for (int i : {kGpuEfacoll, kHostEfacoll}) {
      if (passed[i] > 0)
        printf(
            "# WARNING: rank 0 passed %lld %s calls to the host MPI (EFACOLL_STATS=1 says why)\n",
            passed[i], kImplNames[i]);
    }
  }
  return wrong_sum;
}

// Single blocking 8-byte allreduces, each alone: barrier, call, wait. Per-call times are maxed
// over ranks elementwise; the barrier's own exit skew (a few us) is part of every sample.
long long run_latency(Bench& b) {
  const size_t count = 2;
  const int samples = b.opt.iters > 0 ? b.opt.iters : kLatencySamples;
  long long wrong = b.usable[kGpuEfacoll] ? count_wrong_gpu(b, count) : -1;
  if (b.rank == 0) {
    printf("# %d samples per implementation after %d warm-up calls; barrier before each call\n",
           samples, b.opt.warmup);
    printf("# %-14s %10s %10s %10s %10s\n", "impl", "median(us)", "min(us)", "p90(us)", "#wrong");
  }
  for (int i = 0; i < kNumImpls; ++i) {
    std::vector<double> mine(samples), worst(samples);
    if (b.usable[i]) {
      for (int w = 0; w < b.opt.warmup; ++w) run_once(b, static_cast<Impl>(i), count);
      for (int s = 0; s < samples; ++s) {
        PMPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        run_once(b, static_cast<Impl>(i), count);
        mine[s] = MPI_Wtime() - t0;
      }
      PMPI_Allreduce(mine.data(), worst.data(), samples, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
      std::sort(worst.begin(), worst.end());
    }
    if (b.rank != 0) continue;
    // worst[] is sorted; all zeros (so "n/a") where the implementation did not run.
    printf("  %-14s %10s %10s %10s %10s\n", kImplNames[i],
           cell(median(worst) * 1e6, "%.2f").c_str(), cell(worst.front() * 1e6, "%.2f").c_str(),
           cell(worst[static_cast<size_t>(samples * 0.9)] * 1e6, "%.2f").c_str(),
           i == kGpuEfacoll && wrong >= 0 ? std::to_string(wrong).c_str() : "");
  }
  return wrong > 0 ? wrong : 0;
}

}  // namespace

int main(int argc, char** argv) {
  Bench b;
  int devices = 0;
  cudaError_t gpu_err = cudaGetDeviceCount(&devices);
  if (gpu_err == cudaSuccess && devices > 0) {
    b.device = local_rank() % devices;
    gpu_err = cudaSetDevice(b.device);
  }
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &b.rank);
  MPI_Comm_size(MPI_COMM_WORLD, &b.nranks);
  size_t max_count = 0;  // elements per rank and call must fit MPI's int counts
  if (!parse_options(argc, argv, &b.opt) || (max_count = count_for(b, b.opt.max_bytes)) == 0 ||
      max_count > INT_MAX) {
    if (b.rank == 0) usage();
    MPI_Finalize();
    return 2;
  }
  // Every rank needs a GPU; the lowest rank without one says why.
  int have_gpu = gpu_err == cudaSuccess && devices > 0, first_without = 0;
  int mine = have_gpu ? b.nranks : b.rank;
  PMPI_Allreduce(&mine, &first_without, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (first_without < b.nranks) {
    if (b.rank == first_without)
      printf("SKIP: no GPU (rank %d: %s)\n", b.rank,
             gpu_err != cudaSuccess ? cudaGetErrorString(gpu_err) : "no CUDA device");
    MPI_Finalize();
    return 0;
  }
  // Without efacoll, MPI_X would hand device pointers to the host MPI: only if it is CUDA-aware.
  auto cuda_aware = reinterpret_cast<int (*)()>(dlsym(RTLD_DEFAULT, "MPIX_Query_cuda_support"));
  b.usable[kGpuEfacoll] = dlsym(RTLD_DEFAULT, "efacoll_provider") != nullptr ||
                          (cuda_aware != nullptr && cuda_aware() == 1);
  allocate_buffers(b, max_count);
  if (!b.opt.no_nccl) init_nccl(b);
  print_header(b);
  if (b.opt.peer_copy && b.rank == 0) print_peer_copy(b.opt.max_bytes);
  long long wrong = b.opt.latency ? run_latency(b) : run_sizes(b);
  if (b.usable[kNccl]) {
    b.nccl.comm_destroy(b.nccl.comm);
    cudaStreamDestroy(b.nccl_stream);
  }
  // The buffers stay: efacoll may hold memory registrations on them until MPI_Finalize.
  MPI_Finalize();
  return wrong > 0;
}
