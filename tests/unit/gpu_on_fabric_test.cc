// GPU buffers on a fabric that takes device pointers (FI_HMEM), with ranks as threads and a
// runtime whose "device" is host memory: which buffers go to the provider themselves and which
// are staged through pinned host memory, that GPU memory is never injected, and the flush of
// GPUDirect writes on GPUs before Hopper. The real FI_HMEM path runs on the GPU machine
// (scripts/gpu_check.sh, hmem-* steps).
#include <gtest/gtest.h>

#include <cstring>
#include <mutex>
#include <vector>

#include "forwarding_transport.h"
#include "host_gpu_runtime.h"
#include "reference.h"
#include "thread_ranks.h"
#include "transport/fabric/fabric_endpoint.h"

namespace efacoll {
namespace {

using testing::ForwardingTransport;
using testing::HostGpuRuntime;
using testing::make_input;

constexpr size_t kDataBytes = 1024;  // the calls' messages are chunks of 32 KiB

// Claims FI_HMEM over the loopback transport; refuses to register GPU memory at addresses the
// test names, as a provider refuses memory GPUDirect cannot reach; notes where sends came from.
class HmemTransport : public ForwardingTransport {
 public:
  struct Log {
    std::mutex mutex;
    std::vector<const void*> refused;  // registrations of GPU memory at these addresses fail
    int refusals = 0;
    // Data messages (the engine's own small control messages aside), by the registration they
    // named.
    int gpu_sends = 0, host_sends = 0;
  };
  HmemTransport(std::unique_ptr<Transport> inner, std::shared_ptr<Log> log)
      : ForwardingTransport(std::move(inner)), log_(std::move(log)) {
    info_ = ForwardingTransport::info();
    info_.hmem = true;
  }
  const TransportInfo& info() const override { return info_; }
  Status register_memory(void* ptr, size_t bytes, MemKind kind, int device,
                         MemRegion* out) override {
    if (is_gpu(kind)) {
      std::lock_guard<std::mutex> lock(log_->mutex);
      for (const void* r : log_->refused) {
        if (r != ptr) continue;
        ++log_->refusals;
        return Status(Code::kFabric, "fi_mr_regattr(FI_HMEM_CUDA): Invalid argument (-22)");
      }
    }
    EFACOLL_RETURN_IF_ERROR(ForwardingTransport::register_memory(ptr, bytes, kind, device, out));
    out->on_gpu = is_gpu(kind);
    return Status::ok();
  }
  Status send(PeerAddr peer, const void* buf, size_t bytes, uint64_t tag, const MemRegion* region,
              Completion* c) override {
    if (bytes >= kDataBytes) {
      std::lock_guard<std::mutex> lock(log_->mutex);
      ++(region && region->on_gpu ? log_->gpu_sends : log_->host_sends);
    }
    return ForwardingTransport::send(peer, buf, bytes, tag, region, c);
  }

 private:
  TransportInfo info_;
  std::shared_ptr<Log> log_;
};

constexpr int kRanks = 2;
constexpr size_t kCount = 64 * 1024;  // 256 KiB: past the host-copy path, through the fabric

struct GpuFabricSetup {
  std::shared_ptr<HmemTransport::Log> log = std::make_shared<HmemTransport::Log>();
  std::shared_ptr<HostGpuRuntime::Counts> counts = std::make_shared<HostGpuRuntime::Counts>();
  testing::RankSetup ranks;
  GpuFabricSetup() {
    ranks.config.chunk_bytes = 32768;
    ranks.config.timeout = std::chrono::milliseconds(20000);
    auto log_copy = log;
    ranks.wrap = [log_copy](int, std::unique_ptr<Transport> t) -> std::unique_ptr<Transport> {
      return std::make_unique<HmemTransport>(std::move(t), log_copy);
    };
    auto counts_copy = counts;
    ranks.gpu = [counts_copy](int) { return std::make_unique<HostGpuRuntime>(counts_copy); };
  }
};

// An int32 sum allreduce out of place on buffers of `kind`, allocation ids given, checked.
std::string allreduce(Comm& comm, int rank, MemKind kind, uint64_t send_id, uint64_t recv_id,
                      std::vector<uint8_t>* recv, std::shared_ptr<HmemTransport::Log> refuse) {
  const std::vector<uint8_t> input = make_input(DType::kInt32, ROp::kSum, rank, kCount);
  std::vector<uint8_t> send = input;
  recv->assign(input.size(), 0x5a);
  if (refuse) {
    std::lock_guard<std::mutex> lock(refuse->mutex);
    refuse->refused.push_back(recv->data());
  }
  CollArgs a;
  a.kind = CollKind::kAllreduce;
  a.sendbuf = send.data();
  a.recvbuf = recv->data();
  a.count = kCount;
  a.dtype = DType::kInt32;
  a.op = ROp::kSum;
  a.send_mem = a.recv_mem = kind;
  a.device = 0;
  a.send_buffer_id = send_id;
  a.recv_buffer_id = recv_id;
  Status st = comm.run(a);
  if (!st.is_ok()) return st.to_string();
  if (send != input) return "the send buffer changed";
  return testing::compare(*recv, testing::expected_reduction(DType::kInt32, ROp::kSum, kRanks, kCount),
                          DType::kInt32);
}

TEST(GpuOnFabric, InjectCarriesNoGpuMemory) {
  MemRegion host, gpu;
  gpu.on_gpu = true;
  EXPECT_TRUE(may_inject(64, 4096, nullptr));
  EXPECT_TRUE(may_inject(64, 4096, &host));
  EXPECT_FALSE(may_inject(8192, 4096, &host));
  EXPECT_FALSE(may_inject(64, 4096, &gpu));
  EXPECT_FALSE(may_inject(0, 4096, &gpu));
}

// One checked allreduce on every rank, buffers of `kind` with allocation ids first_id and
// first_id + 1; each rank's failure reported.
void run_one_call(const GpuFabricSetup& s, MemKind kind, uint64_t first_id) {
  auto failures = testing::run_ranks(kRanks, s.ranks, [&](testing::RankContext& c) {
    std::vector<uint8_t> recv;
    const std::string err = allreduce(c.comm, c.rank, kind, first_id, first_id + 1, &recv, nullptr);
    if (!err.empty()) c.failures->push_back(err);
  });
  for (const auto& f : failures) ADD_FAILURE() << f;
}

TEST(GpuOnFabric, RegisteredDeviceBuffersGoToTheProviderThemselves) {
  GpuFabricSetup s;
  run_one_call(s, MemKind::kDevice, 11);
  EXPECT_GT(s.log->gpu_sends, 0);
  EXPECT_EQ(s.log->host_sends, 0) << "staged although the provider takes device pointers";
}

// Managed memory: GPUDirect RDMA cannot reach it, whatever the provider says.
TEST(GpuOnFabric, ManagedBuffersAreStaged) {
  GpuFabricSetup s;
  run_one_call(s, MemKind::kManaged, 21);
  EXPECT_EQ(s.log->gpu_sends, 0);
  EXPECT_GT(s.log->host_sends, 0);
}

// An allocation the provider refuses (VMM memory on some libfabric versions) is staged, and the
// refusal is remembered by its allocation id: the next call does not ask again.
TEST(GpuOnFabric, AnAllocationTheProviderRefusesIsStagedAndRemembered) {
  GpuFabricSetup s;
  auto failures = testing::run_ranks(kRanks, s.ranks, [&](testing::RankContext& c) {
    std::vector<uint8_t> recv;
    // The same allocation id twice; the first call's buffer address is the refused one.
    std::string err = allreduce(c.comm, c.rank, MemKind::kDevice, 31, 32, &recv, s.log);
    if (err.empty()) {
      std::vector<uint8_t> again;
      err = allreduce(c.comm, c.rank, MemKind::kDevice, 31, 32, &again, s.log);
    }
    if (!err.empty()) c.failures->push_back(err);
  });
  for (const auto& f : failures) ADD_FAILURE() << f;
  EXPECT_EQ(s.log->gpu_sends, 0) << "a refused allocation's data went to the provider";
  EXPECT_GT(s.log->host_sends, 0);
  EXPECT_EQ(s.log->refusals, kRanks) << "asked again for an allocation already refused";
}

// GPUDirect writes are flushed before GPU work reads them where asked (forced here: the host
// runtime is no GPU before Hopper), never on the staged path, never when turned off.
TEST(GpuOnFabric, NetworkWritesToGpuMemoryAreFlushedWhereAsked) {
  for (auto flush : {EngineConfig::GdrFlush::kOn, EngineConfig::GdrFlush::kOff}) {
    for (MemKind kind : {MemKind::kDevice, MemKind::kManaged}) {
      GpuFabricSetup s;
      s.ranks.config.gdr_flush = flush;
      run_one_call(s, kind, 41);
      const bool expected = flush == EngineConfig::GdrFlush::kOn && kind == MemKind::kDevice;
      if (expected)
        EXPECT_GT(s.counts->flushes.load(), 0) << "no flush on the direct path";
      else
        EXPECT_EQ(s.counts->flushes.load(), 0) << "flushed where nothing asked for it";
    }
  }
}

}  // namespace
}  // namespace efacoll
