#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <string>

#include "gpu/gpu_reduce.h"
#include "gpu/launch_geometry.h"

namespace efacoll {
namespace {

// Integer arithmetic wraps (computed in the unsigned type), as on the host.
template <typename T>
struct Sum {
  __device__ T operator()(T x, T y) const {
    if constexpr (std::is_integral<T>::value && std::is_signed<T>::value) {
      using U = std::make_unsigned_t<T>;
      return static_cast<T>(static_cast<U>(static_cast<U>(x) + static_cast<U>(y)));
    } else {
      return static_cast<T>(x + y);
    }
  }
};
template <typename T>
struct Prod {
  __device__ T operator()(T x, T y) const {
    if constexpr (std::is_integral<T>::value) {
      using U = std::make_unsigned_t<T>;
      using W = std::conditional_t<(sizeof(U) < sizeof(unsigned)), unsigned, U>;
      return static_cast<T>(
          static_cast<U>(static_cast<W>(static_cast<U>(x)) * static_cast<W>(static_cast<U>(y))));
    } else {
      return static_cast<T>(x * y);
    }
  }
};
template <typename T>
struct Min {
  __device__ T operator()(T x, T y) const { return y < x ? y : x; }
};
template <typename T>
struct Max {
  __device__ T operator()(T x, T y) const { return y > x ? y : x; }
};
template <typename T>
struct Land {
  __device__ T operator()(T x, T y) const { return T((x != 0) && (y != 0)); }
};
template <typename T>
struct Lor {
  __device__ T operator()(T x, T y) const { return T((x != 0) || (y != 0)); }
};
template <typename T>
struct Lxor {
  __device__ T operator()(T x, T y) const { return T((x != 0) != (y != 0)); }
};
template <typename T>
struct Band {
  __device__ T operator()(T x, T y) const { return T(x & y); }
};
template <typename T>
struct Bor {
  __device__ T operator()(T x, T y) const { return T(x | y); }
};
template <typename T>
struct Bxor {
  __device__ T operator()(T x, T y) const { return T(x ^ y); }
};

// 16-bit floats compute in float and round once (as the host path does).
template <typename H, typename Float2H, typename H2Float>
struct Via32 {
  ROp op;
  __device__ H operator()(H x, H y) const {
    float fx = H2Float()(x), fy = H2Float()(y), r;
    switch (op) {
      case ROp::kSum:
        r = fx + fy;
        break;
      case ROp::kProd:
        r = fx * fy;
        break;
      case ROp::kMin:
        r = fy < fx ? fy : fx;
        break;
      default:
        r = fy > fx ? fy : fx;
        break;
    }
    return Float2H()(r);
  }
};
struct HalfToFloat {
  __device__ float operator()(__half h) const { return __half2float(h); }
};
struct FloatToHalf {
  __device__ __half operator()(float f) const { return __float2half_rn(f); }
};
struct Bf16ToFloat {
  __device__ float operator()(__nv_bfloat16 h) const { return __bfloat162float(h); }
};
struct FloatToBf16 {
  __device__ __nv_bfloat16 operator()(float f) const { return __float2bfloat16_rn(f); }
};

struct Complex64Sum {
  __device__ float2 operator()(float2 x, float2 y) const {
    return make_float2(x.x + y.x, x.y + y.y);
  }
};
struct Complex64Prod {
  __device__ float2 operator()(float2 x, float2 y) const {
    return make_float2(x.x * y.x - x.y * y.y, x.x * y.y + x.y * y.x);
  }
};
struct Complex128Sum {
  __device__ double2 operator()(double2 x, double2 y) const {
    return make_double2(x.x + y.x, x.y + y.y);
  }
};
struct Complex128Prod {
  __device__ double2 operator()(double2 x, double2 y) const {
    return make_double2(x.x * y.x - x.y * y.y, x.x * y.y + x.y * y.x);
  }
};

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

template <typename T>
Status integer(void* d, const void* a, const void* b, size_t n, ROp op, void* s) {
  switch (op) {
    case ROp::kSum:
      return launch<T>(d, a, b, n, Sum<T>(), s);
    case ROp::kProd:
      return launch<T>(d, a, b, n, Prod<T>(), s);
    case ROp::kMin:
      return launch<T>(d, a, b, n, Min<T>(), s);
    case ROp::kMax:
      return launch<T>(d, a, b, n, Max<T>(), s);
    case ROp::kLand:
      return launch<T>(d, a, b, n, Land<T>(), s);
    case ROp::kLor:
      return launch<T>(d, a, b, n, Lor<T>(), s);
    case ROp::kLxor:
      return launch<T>(d, a, b, n, Lxor<T>(), s);
    case ROp::kBand:
      return launch<T>(d, a, b, n, Band<T>(), s);
    case ROp::kBor:
      return launch<T>(d, a, b, n, Bor<T>(), s);
    case ROp::kBxor:
      return launch<T>(d, a, b, n, Bxor<T>(), s);
    default:
      return Status(Code::kUnsupported, "op");
  }
}

template <typename T>
Status floating(void* d, const void* a, const void* b, size_t n, ROp op, void* s) {
  switch (op) {
    case ROp::kSum:
      return launch<T>(d, a, b, n, Sum<T>(), s);
    case ROp::kProd:
      return launch<T>(d, a, b, n, Prod<T>(), s);
    case ROp::kMin:
      return launch<T>(d, a, b, n, Min<T>(), s);
    case ROp::kMax:
      return launch<T>(d, a, b, n, Max<T>(), s);
    default:
      return Status(Code::kUnsupported, "op");
  }
}

}  // namespace

Status gpu_reduce(void* dst, const void* a, const void* b, size_t count, DType type, ROp op,
                  void* stream) {
  if (!op_allowed(type, op)) {
    return Status(Code::kUnsupported,
                  std::string("reduction ") + op_name(op) + " on " + dtype_name(type));
  }
  if (count == 0) return Status::ok();
  switch (type) {
    case DType::kInt8:
      return integer<int8_t>(dst, a, b, count, op, stream);
    case DType::kInt16:
      return integer<int16_t>(dst, a, b, count, op, stream);
    case DType::kInt32:
      return integer<int32_t>(dst, a, b, count, op, stream);
    case DType::kInt64:
      return integer<int64_t>(dst, a, b, count, op, stream);
    case DType::kUint8:
    case DType::kByte:
    case DType::kBool:
      return integer<uint8_t>(dst, a, b, count, op, stream);
    case DType::kUint16:
      return integer<uint16_t>(dst, a, b, count, op, stream);
    case DType::kUint32:
      return integer<uint32_t>(dst, a, b, count, op, stream);
    case DType::kUint64:
      return integer<uint64_t>(dst, a, b, count, op, stream);
    case DType::kFloat32:
      return floating<float>(dst, a, b, count, op, stream);
    case DType::kFloat64:
      return floating<double>(dst, a, b, count, op, stream);
    case DType::kFloat16:
      return launch<__half>(dst, a, b, count, Via32<__half, FloatToHalf, HalfToFloat>{op}, stream);
    case DType::kBFloat16:
      return launch<__nv_bfloat16>(dst, a, b, count,
                                   Via32<__nv_bfloat16, FloatToBf16, Bf16ToFloat>{op}, stream);
    case DType::kComplex64:
      return op == ROp::kSum ? launch<float2>(dst, a, b, count, Complex64Sum(), stream)
                             : launch<float2>(dst, a, b, count, Complex64Prod(), stream);
    case DType::kComplex128:
      return op == ROp::kSum ? launch<double2>(dst, a, b, count, Complex128Sum(), stream)
                             : launch<double2>(dst, a, b, count, Complex128Prod(), stream);
    default:
      break;
  }
  return Status(Code::kUnsupported, "unknown type");
}

}  // namespace efacoll
