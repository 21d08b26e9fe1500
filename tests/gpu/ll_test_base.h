// What the low-latency kernel tests share: "ranks" are concurrent launches on GPU 0, each with
// its device memory, signal words and stream, all released when the test ends.
#pragma once
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <vector>

#include "gpu/ll_kernel.h"
#include "gpu_test_util.h"

namespace efacoll {
namespace testing {

class LlTestBase : public ::testing::Test {
 protected:
  void SetUp() override {
    SKIP_WITHOUT_GPU();
    ASSERT_CUDA(cudaSetDevice(0));
  }
  void TearDown() override {
    for (void* p : device_) cudaFree(p);
    for (void* p : host_) cudaFreeHost(p);
    for (cudaStream_t s : streams_) cudaStreamDestroy(s);
  }

  // Zeroed device memory.
  void* device(size_t bytes) {
    void* p = nullptr;
    EXPECT_EQ(cudaMalloc(&p, bytes), cudaSuccess);
    EXPECT_EQ(cudaMemset(p, 0, bytes), cudaSuccess);
    device_.push_back(p);
    return p;
  }

  // A new signal: the done and fault words host-mapped, the arrivals counter on the device;
  // with `heartbeat`, the host-mapped count the test raises while it waits (LlSignal).
  LlSignal signal(bool heartbeat = false) {
    void* words = nullptr;
    EXPECT_EQ(cudaHostAlloc(&words, 24, cudaHostAllocMapped | cudaHostAllocPortable), cudaSuccess);
    host_.push_back(words);
    LlSignal s;
    s.done = static_cast<uint64_t*>(words);
    s.fault = s.done + 1;
    *s.done = *s.fault = s.done[2] = 0;
    if (heartbeat) s.heartbeat = s.done + 2;
    s.arrivals = static_cast<unsigned*>(device(sizeof(unsigned)));
    return s;
  }

  // Rank r's stream, made at its first use and kept for the whole test.
  cudaStream_t stream(int r) {
    while (static_cast<int>(streams_.size()) <= r) {
      cudaStream_t s = nullptr;
      EXPECT_EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
      streams_.push_back(s);
    }
    return streams_[r];
  }

 private:
  std::vector<void*> device_, host_;
  std::vector<cudaStream_t> streams_;
};

}  // namespace testing
}  // namespace efacoll
