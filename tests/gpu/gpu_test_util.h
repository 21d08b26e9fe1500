// Shared by the GPU unit tests: skip with the reason where there is no GPU, assert CUDA calls.
#pragma once
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <string>

namespace efacoll {
namespace testing {

// "" when a GPU can be used, else why not (asked once).
inline const std::string& no_gpu_reason() {
  static const std::string reason = [] {
    int count = 0;
    cudaError_t err = cudaGetDeviceCount(&count);
    if (err != cudaSuccess) {
      return std::string(cudaGetErrorName(err)) + ": " + cudaGetErrorString(err);
    }
    if (count == 0) return std::string("cudaGetDeviceCount returned 0 devices");
    return std::string();
  }();
  return reason;
}

#define SKIP_WITHOUT_GPU()                                               \
  do {                                                                   \
    if (!::efacoll::testing::no_gpu_reason().empty())                    \
      GTEST_SKIP() << "no GPU: " << ::efacoll::testing::no_gpu_reason(); \
  } while (0)

// Asserts a CUDA call succeeded, naming the call and the error.
#define ASSERT_CUDA(call)                                                                  \
  do {                                                                                     \
    cudaError_t err_ = (call);                                                             \
    ASSERT_EQ(err_, cudaSuccess) << #call << " failed: " << cudaGetErrorName(err_) << " (" \
                                 << cudaGetErrorString(err_) << ")";                       \
  } while (0)

}  // namespace testing
}  // namespace efacoll
