#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <string>

#include "gpu/gpu_reduce.h"
#include "gpu/launch_geometry.h"
#include "gpu/reduce_ops.cuh"

namespace efacoll {
namespace {

// Vector lanes of 16 bytes when every pointer allows it (kWidth > 1), then a scalar tail.
template <typename T, int kWidth, typename F>
__global__ void reduce_kernel(T* dst, const T* a, const T* b, size_t n, F f) {
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const size_t vectors = kWidth > 1 ? n / kWidth : 0;  // width 1: everything is tail
  if constexpr (kWidth > 1) {
    struct alignas(16) Pack {
      T v[kWidth];
    };
    auto* pd = reinterpret_cast<Pack*>(dst);
    auto* pa = reinterpret_cast<const Pack*>(a);
    auto* pb = reinterpret_cast<const Pack*>(b);
    for (size_t k = i; k < vectors; k += stride) {
      Pack x = pa[k], y = pb[k], r;
#pragma unroll
      for (int j = 0; j < kWidth; ++j) r.v[j] = f(x.v[j], y.v[j]);
      pd[k] = r;
    }
  }
  for (size_t k = vectors * kWidth + i; k < n; k += stride) dst[k] = f(a[k], b[k]);
}

int sm_count() {
  static int count = [] {
    int device = 0, sms = 0;
    cudaGetDevice(&device);
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
    return sms > 0 ? sms : 1;
  }();
  return count;
}

template <typename T, typename F>
Status launch(void* dst, const void* a, const void* b, size_t n, F f, void* stream) {
  LaunchGeometry g = reduce_geometry(n, sizeof(T), dst, a, b, sm_count());
  if (g.blocks == 0) return Status::ok();
  auto s = static_cast<cudaStream_t>(stream);
  auto* d = static_cast<T*>(dst);
  auto* pa = static_cast<const T*>(a);
  auto* pb = static_cast<const T*>(b);
  switch (g.vector_width) {
    case 16:
      reduce_kernel<T, (16 / sizeof(T) == 16 ? 16 : 1)>
          <<<g.blocks, g.threads, 0, s>>>(d, pa, pb, n, f);
      break;
    case 8:
      reduce_kernel<T, (16 / sizeof(T) == 8 ? 8 : 1)>
          <<<g.blocks, g.threads, 0, s>>>(d, pa, pb, n, f);
      break;
    case 4:
      reduce_kernel<T, (16 / sizeof(T) == 4 ? 4 : 1)>
          <<<g.blocks, g.threads, 0, s>>>(d, pa, pb, n, f);
      break;
    case 2:
      reduce_kernel<T, (16 / sizeof(T) == 2 ? 2 : 1)>
          <<<g.blocks, g.threads, 0, s>>>(d, pa, pb, n, f);
      break;
    default:
      reduce_kernel<T, 1><<<g.blocks, g.threads, 0, s>>>(d, pa, pb, n, f);
      break;
  }
  cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) {
    return Status(Code::kCuda, std::string("reduction kernel launch: ") + cudaGetErrorString(err));
  }
  return Status::ok();
}

}  // namespace

Status gpu_reduce(void* dst, const void* a, const void* b, size_t count, DType type, ROp op,
                  void* stream) {
  return reduce_ops::with_reduction(type, op, [&](auto* tag, auto f) -> Status {
    using T = std::remove_pointer_t<decltype(tag)>;
    return count ? launch<T>(dst, a, b, count, f, stream) : Status::ok();
  });
}

}  // namespace efacoll
