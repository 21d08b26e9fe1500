// Element operators for every (type, op) pair op_allowed() accepts, and one dispatcher from the
// run-time (type, op) to a typed functor, shared by every kernel that reduces.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <string>
#include <type_traits>

#include "efacoll/status.h"
#include "efacoll/types.h"

namespace efacoll {
namespace reduce_ops {

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

// Calls fn(static_cast<T*>(nullptr), functor) for the element type T and operator of (type, op);
// kUnsupported for a pair MPI does not define.
template <typename Fn>
Status with_reduction(DType type, ROp op, Fn&& fn) {
  if (!op_allowed(type, op)) {
    return Status(Code::kUnsupported,
                  std::string("reduction ") + op_name(op) + " on " + dtype_name(type));
  }
  // Sum, product, min and max for every type; logical and bitwise ones for integers only.
  auto by_op = [&](auto* tag) -> Status {
    using T = std::remove_pointer_t<decltype(tag)>;
    switch (op) {
      case ROp::kSum:
        return fn(tag, Sum<T>());
      case ROp::kProd:
        return fn(tag, Prod<T>());
      case ROp::kMin:
        return fn(tag, Min<T>());
      case ROp::kMax:
        return fn(tag, Max<T>());
      default:
        break;
    }
    if constexpr (std::is_integral<T>::value) {
      switch (op) {
        case ROp::kLand:
          return fn(tag, Land<T>());
        case ROp::kLor:
          return fn(tag, Lor<T>());
        case ROp::kLxor:
          return fn(tag, Lxor<T>());
        case ROp::kBand:
          return fn(tag, Band<T>());
        case ROp::kBor:
          return fn(tag, Bor<T>());
        case ROp::kBxor:
          return fn(tag, Bxor<T>());
        default:
          break;
      }
    }
    return Status(Code::kUnsupported, "op");
  };
  switch (type) {
    case DType::kInt8:
      return by_op(static_cast<int8_t*>(nullptr));
    case DType::kInt16:
      return by_op(static_cast<int16_t*>(nullptr));
    case DType::kInt32:
      return by_op(static_cast<int32_t*>(nullptr));
    case DType::kInt64:
      return by_op(static_cast<int64_t*>(nullptr));
    case DType::kUint8:
    case DType::kByte:
    case DType::kBool:
      return by_op(static_cast<uint8_t*>(nullptr));
    case DType::kUint16:
      return by_op(static_cast<uint16_t*>(nullptr));
    case DType::kUint32:
      return by_op(static_cast<uint32_t*>(nullptr));
    case DType::kUint64:
      return by_op(static_cast<uint64_t*>(nullptr));
    case DType::kFloat32:
      return by_op(static_cast<float*>(nullptr));
    case DType::kFloat64:
      return by_op(static_cast<double*>(nullptr));
    case DType::kFloat16:
      return fn(static_cast<__half*>(nullptr), Via32<__half, FloatToHalf, HalfToFloat>{op});
    case DType::kBFloat16:
      return fn(static_cast<__nv_bfloat16*>(nullptr),
                Via32<__nv_bfloat16, FloatToBf16, Bf16ToFloat>{op});
    case DType::kComplex64:
      return op == ROp::kSum ? fn(static_cast<float2*>(nullptr), Complex64Sum())
                             : fn(static_cast<float2*>(nullptr), Complex64Prod());
    case DType::kComplex128:
      return op == ROp::kSum ? fn(static_cast<double2*>(nullptr), Complex128Sum())
                             : fn(static_cast<double2*>(nullptr), Complex128Prod());
    default:
      return Status(Code::kUnsupported, "unknown type");
  }
}

}  // namespace reduce_ops
}  // namespace efacoll
