#include "core/host_reduce.h"

#include <complex>
#include <cstdint>
#include <cstring>

#include "core/half.h"

namespace efacoll {
namespace {

// Integer arithmetic wraps like the hardware (and like MPI libraries) instead of being UB:
// compute in the unsigned type of the same width.
template <typename T>
T wrap_add(T x, T y) {
  using U = std::make_unsigned_t<T>;
  return static_cast<T>(static_cast<U>(static_cast<U>(x) + static_cast<U>(y)));
}
template <typename T>
T wrap_mul(T x, T y) {
  using U = std::make_unsigned_t<T>;
  // Promote to at least unsigned int so that uint16 * uint16 cannot overflow a signed int.
  using W = std::conditional_t<(sizeof(U) < sizeof(unsigned)), unsigned, U>;
  return static_cast<T>(
      static_cast<U>(static_cast<W>(static_cast<U>(x)) * static_cast<W>(static_cast<U>(y))));
}

template <typename T, typename F>
void apply(void* dst, const void* a, const void* b, size_t n, F f) {
  // Unaligned user buffers are legal in MPI: go through memcpy'd values.
  auto* d = static_cast<unsigned char*>(dst);
  auto* pa = static_cast<const unsigned char*>(a);
  auto* pb = static_cast<const unsigned char*>(b);
  if (reinterpret_cast<uintptr_t>(d) % alignof(T) == 0 &&
      reinterpret_cast<uintptr_t>(pa) % alignof(T) == 0 &&
      reinterpret_cast<uintptr_t>(pb) % alignof(T) == 0) {
    auto* td = reinterpret_cast<T*>(d);
    auto* ta = reinterpret_cast<const T*>(pa);
    auto* tb = reinterpret_cast<const T*>(pb);
    for (size_t i = 0; i < n; ++i) td[i] = f(ta[i], tb[i]);
    return;
  }
  for (size_t i = 0; i < n; ++i) {
    T x, y;
    std::memcpy(&x, pa + i * sizeof(T), sizeof(T));
    std::memcpy(&y, pb + i * sizeof(T), sizeof(T));
    T r = f(x, y);
    std::memcpy(d + i * sizeof(T), &r, sizeof(T));
  }
}

template <typename T>
Status reduce_integer(void* dst, const void* a, const void* b, size_t n, ROp op) {
  switch (op) {
    case ROp::kSum:
      apply<T>(dst, a, b, n, [](T x, T y) { return wrap_add(x, y); });
      break;
    case ROp::kProd:
      apply<T>(dst, a, b, n, [](T x, T y) { return wrap_mul(x, y); });
      break;
    case ROp::kMin:
      apply<T>(dst, a, b, n, [](T x, T y) { return y < x ? y : x; });
      break;
    case ROp::kMax:
      apply<T>(dst, a, b, n, [](T x, T y) { return y > x ? y : x; });
      break;
    case ROp::kLand:
      apply<T>(dst, a, b, n, [](T x, T y) { return T((x != 0) && (y != 0)); });
      break;
    case ROp::kLor:
      apply<T>(dst, a, b, n, [](T x, T y) { return T((x != 0) || (y != 0)); });
      break;
    case ROp::kLxor:
      apply<T>(dst, a, b, n, [](T x, T y) { return T((x != 0) != (y != 0)); });
      break;
    case ROp::kBand:
      apply<T>(dst, a, b, n, [](T x, T y) { return T(x & y); });
      break;
    case ROp::kBor:
      apply<T>(dst, a, b, n, [](T x, T y) { return T(x | y); });
      break;
    case ROp::kBxor:
      apply<T>(dst, a, b, n, [](T x, T y) { return T(x ^ y); });
      break;
    default:
      return Status(Code::kUnsupported, "op not valid for integers");
  }
  return Status::ok();
}

template <typename T>
Status reduce_floating(void* dst, const void* a, const void* b, size_t n, ROp op) {
  switch (op) {
    case ROp::kSum:
      apply<T>(dst, a, b, n, [](T x, T y) { return x + y; });
      break;
    case ROp::kProd:
      apply<T>(dst, a, b, n, [](T x, T y) { return x * y; });
      break;
    case ROp::kMin:
      apply<T>(dst, a, b, n, [](T x, T y) { return y < x ? y : x; });
      break;
    case ROp::kMax:
      apply<T>(dst, a, b, n, [](T x, T y) { return y > x ? y : x; });
      break;
    default:
      return Status(Code::kUnsupported, "op not valid for floating point");
  }
  return Status::ok();
}

template <typename T>
Status reduce_complex(void* dst, const void* a, const void* b, size_t n, ROp op) {
  using C = std::complex<T>;
  switch (op) {
    case ROp::kSum:
      apply<C>(dst, a, b, n, [](C x, C y) { return x + y; });
      break;
    // Plain (a+bi)(c+di): std::complex's operator* adds NaN/inf recovery that C compilers
    // (and MPI libraries built with them) do not.
    case ROp::kProd:
      apply<C>(dst, a, b, n, [](C x, C y) {
        return C(x.real() * y.real() - x.imag() * y.imag(),
                 x.real() * y.imag() + x.imag() * y.real());
      });
      break;
    default:
      return Status(Code::kUnsupported, "op not valid for complex");
  }
  return Status::ok();
}

// Half and bfloat16 reduce in float and round once, as the GPU kernels do.
template <float (*ToFloat)(uint16_t), uint16_t (*FromFloat)(float)>
Status reduce_16bit_float(void* dst, const void* a, const void* b, size_t n, ROp op) {
  auto via_float = [op](uint16_t x, uint16_t y) {
    float fx = ToFloat(x), fy = ToFloat(y), r;
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
    return FromFloat(r);
  };
  switch (op) {
    case ROp::kSum:
    case ROp::kProd:
    case ROp::kMin:
    case ROp::kMax:
      apply<uint16_t>(dst, a, b, n, via_float);
      return Status::ok();
    default:
      return Status(Code::kUnsupported, "op not valid for floating point");
  }
}

Status reduce_bool(void* dst, const void* a, const void* b, size_t n, ROp op) {
  switch (op) {
    case ROp::kLand:
    case ROp::kLor:
    case ROp::kLxor:
      return reduce_integer<uint8_t>(dst, a, b, n, op);
    default:
      return Status(Code::kUnsupported, "op not valid for bool");
  }
}

}  // namespace

Status host_reduce(void* dst, const void* a, const void* b, size_t count, DType type, ROp op) {
  if (!op_allowed(type, op)) {
    return Status(Code::kUnsupported,
                  std::string("reduction ") + op_name(op) + " on " + dtype_name(type));
  }
  if (count == 0) return Status::ok();
  switch (type) {
    case DType::kInt8:
      return reduce_integer<int8_t>(dst, a, b, count, op);
    case DType::kInt16:
      return reduce_integer<int16_t>(dst, a, b, count, op);
    case DType::kInt32:
      return reduce_integer<int32_t>(dst, a, b, count, op);
    case DType::kInt64:
      return reduce_integer<int64_t>(dst, a, b, count, op);
    case DType::kUint8:
    case DType::kByte:
      return reduce_integer<uint8_t>(dst, a, b, count, op);
    case DType::kUint16:
      return reduce_integer<uint16_t>(dst, a, b, count, op);
    case DType::kUint32:
      return reduce_integer<uint32_t>(dst, a, b, count, op);
    case DType::kUint64:
      return reduce_integer<uint64_t>(dst, a, b, count, op);
    case DType::kFloat32:
      return reduce_floating<float>(dst, a, b, count, op);
    case DType::kFloat64:
      return reduce_floating<double>(dst, a, b, count, op);
    case DType::kBool:
      return reduce_bool(dst, a, b, count, op);
    case DType::kComplex64:
      return reduce_complex<float>(dst, a, b, count, op);
    case DType::kComplex128:
      return reduce_complex<double>(dst, a, b, count, op);
    case DType::kFloat16:
      return reduce_16bit_float<half_to_float, float_to_half>(dst, a, b, count, op);
    case DType::kBFloat16:
      return reduce_16bit_float<bf16_to_float, float_to_bf16>(dst, a, b, count, op);
    case DType::kCount:
      break;
  }
  return Status(Code::kUnsupported, "unknown type");
}

}  // namespace efacoll
