#include "reference.h"

#include <complex>
#include <cstring>
#include <type_traits>

#include "core/half.h"

namespace efacoll {
namespace testing {
namespace {

// Small integers chosen per op so that no result overflows a signed type (sums, products of
// at most eight ranks) and logical ops see values other than 0 and 1.
int64_t raw_value(ROp op, int rank, size_t i) {
  switch (op) {
    case ROp::kSum:
      return static_cast<int64_t>((rank * 5 + i * 3) % 9) - 3;
    case ROp::kProd:
      return ((rank + i) % 3 == 0) ? 2 : ((rank * 7 + i) % 5 == 0 ? -1 : 1);
    case ROp::kMin:
    case ROp::kMax:
      return static_cast<int64_t>((rank * 13 + i * 7) % 23) - 11;
    case ROp::kLand:
    case ROp::kLor:
    case ROp::kLxor:
      return (rank * 3 + i) % 5 == 0 ? 0 : (i % 3) + 1;
    default:
      return static_cast<int64_t>((rank * 37 + i * 11 + 5) & 0x7f);
  }
}

template <typename T>
T typed_value(ROp op, int rank, size_t i) {
  int64_t v = raw_value(op, rank, i);
  if (std::is_same<T, bool>::value) return static_cast<T>(v != 0);
  if (std::is_unsigned<T>::value && (op == ROp::kMin || op == ROp::kMax || op == ROp::kSum)) {
    v = v < 0 ? -v : v;
  }
  return static_cast<T>(v);
}

template <typename T>
T combine(T a, T b, ROp op) {
  using W = std::conditional_t<std::is_integral<T>::value, int64_t, T>;
  switch (op) {
    case ROp::kSum:
      return static_cast<T>(static_cast<W>(a) + static_cast<W>(b));
    case ROp::kProd:
      return static_cast<T>(static_cast<W>(a) * static_cast<W>(b));
    case ROp::kMin:
      return a < b ? a : b;
    case ROp::kMax:
      return a > b ? a : b;
    default:
      break;
  }
  if constexpr (std::is_integral<T>::value) {
    switch (op) {
      case ROp::kLand:
        return static_cast<T>(a && b);
      case ROp::kLor:
        return static_cast<T>(a || b);
      case ROp::kLxor:
        return static_cast<T>(!a != !b);
      case ROp::kBand:
        return static_cast<T>(a & b);
      case ROp::kBor:
        return static_cast<T>(a | b);
      case ROp::kBxor:
        return static_cast<T>(a ^ b);
      default:
        break;
    }
  }
  return a;
}

template <typename T>
Bytes fill(ROp op, int rank, size_t count, size_t first) {
  Bytes out(count * sizeof(T));
  for (size_t i = 0; i < count; ++i) {
    T v = typed_value<T>(op, rank, first + i);
    std::memcpy(&out[i * sizeof(T)], &v, sizeof(T));
  }
  return out;
}

template <typename T>
Bytes fold(ROp op, int nranks, size_t count) {
  Bytes out(count * sizeof(T));
  for (size_t i = 0; i < count; ++i) {
    T acc = typed_value<T>(op, 0, i);
    for (int r = 1; r < nranks; ++r) acc = combine(acc, typed_value<T>(op, r, i), op);
    std::memcpy(&out[i * sizeof(T)], &acc, sizeof(T));
  }
  return out;
}

template <typename C>
C complex_value(ROp op, int rank, size_t i) {
  return C(static_cast<typename C::value_type>(raw_value(op, rank, i)),
           static_cast<typename C::value_type>(op == ROp::kProd ? 0 : raw_value(op, rank + 1, i)));
}

template <typename C>
Bytes fill_complex(ROp op, int rank, size_t count, size_t first) {
  Bytes out(count * sizeof(C));
  for (size_t i = 0; i < count; ++i) {
    C v = complex_value<C>(op, rank, first + i);
    std::memcpy(&out[i * sizeof(C)], &v, sizeof(C));
  }
  return out;
}

template <typename C>
Bytes fold_complex(ROp op, int nranks, size_t count) {
  Bytes out(count * sizeof(C));
  for (size_t i = 0; i < count; ++i) {
    C acc = complex_value<C>(op, 0, i);
    for (int r = 1; r < nranks; ++r) {
      C v = complex_value<C>(op, r, i);
      acc = op == ROp::kSum ? acc + v : acc * v;
    }
    std::memcpy(&out[i * sizeof(C)], &acc, sizeof(C));
  }
  return out;
}

template <typename F>
Bytes dispatch(DType type, F&& f) {
  switch (type) {
    case DType::kInt8:
      return f(int8_t());
    case DType::kInt16:
      return f(int16_t());
    case DType::kInt32:
      return f(int32_t());
    case DType::kInt64:
      return f(int64_t());
    case DType::kUint8:
    case DType::kByte:
      return f(uint8_t());
    case DType::kUint16:
      return f(uint16_t());
    case DType::kUint32:
      return f(uint32_t());
    case DType::kUint64:
      return f(uint64_t());
    case DType::kFloat32:
      return f(float());
    case DType::kFloat64:
      return f(double());
    case DType::kBool:
      return f(bool());
    case DType::kComplex64:
      return f(std::complex<float>());
    case DType::kComplex128:
      return f(std::complex<double>());
    default:
      return Bytes();
  }
}

template <typename T>
struct IsComplex : std::false_type {};
template <typename T>
struct IsComplex<std::complex<T>> : std::true_type {};

template <typename F>
bool equal_as(const uint8_t* a, const uint8_t* b, size_t bytes) {
  for (size_t k = 0; k < bytes; k += sizeof(F)) {
    F x, y;
    std::memcpy(&x, a + k, sizeof(F));
    std::memcpy(&y, b + k, sizeof(F));
    if (!(x == y)) return false;
  }
  return true;
}

// 16-bit floats: small integers are exact in both, so fold in float and convert once.
uint16_t to_16bit(DType type, float f) {
  return type == DType::kFloat16 ? float_to_half(f) : float_to_bf16(f);
}

Bytes fill_16bit(DType type, ROp op, int rank, size_t count, size_t first) {
  Bytes out(count * 2);
  for (size_t i = 0; i < count; ++i) {
    uint16_t v = to_16bit(type, static_cast<float>(raw_value(op, rank, first + i)));
    std::memcpy(&out[i * 2], &v, 2);
  }
  return out;
}

Bytes fold_16bit(DType type, ROp op, int nranks, size_t count) {
  Bytes out(count * 2);
  for (size_t i = 0; i < count; ++i) {
    float acc = static_cast<float>(raw_value(op, 0, i));
    for (int r = 1; r < nranks; ++r)
      acc = combine(acc, static_cast<float>(raw_value(op, r, i)), op);
    uint16_t v = to_16bit(type, acc);
    std::memcpy(&out[i * 2], &v, 2);
  }
  return out;
}

}  // namespace

Bytes make_input(DType type, ROp op, int rank, size_t count, size_t first_index) {
  if (type == DType::kFloat16 || type == DType::kBFloat16) {
    return fill_16bit(type, op, rank, count, first_index);
  }
  return dispatch(type, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (IsComplex<T>::value)
      return fill_complex<T>(op, rank, count, first_index);
    else
      return fill<T>(op, rank, count, first_index);
  });
}

Bytes expected_reduction(DType type, ROp op, int nranks, size_t count) {
  if (type == DType::kFloat16 || type == DType::kBFloat16)
    return fold_16bit(type, op, nranks, count);
  return dispatch(type, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (IsComplex<T>::value)
      return fold_complex<T>(op, nranks, count);
    else
      return fold<T>(op, nranks, count);
  });
}

std::vector<std::pair<DType, ROp>> allowed_pairs() {
  const DType integers[] = {DType::kInt8,  DType::kInt16,  DType::kInt32,  DType::kInt64,
                            DType::kUint8, DType::kUint16, DType::kUint32, DType::kUint64};
  const ROp all_ops[] = {ROp::kSum, ROp::kProd, ROp::kMin,  ROp::kMax, ROp::kLand,
                         ROp::kLor, ROp::kLxor, ROp::kBand, ROp::kBor, ROp::kBxor};
  std::vector<std::pair<DType, ROp>> pairs;
  for (DType t : integers)
    for (ROp op : all_ops) pairs.emplace_back(t, op);
  for (DType t : {DType::kFloat32, DType::kFloat64, DType::kFloat16, DType::kBFloat16})
    for (ROp op : {ROp::kSum, ROp::kProd, ROp::kMin, ROp::kMax}) pairs.emplace_back(t, op);
  for (ROp op : {ROp::kLand, ROp::kLor, ROp::kLxor}) pairs.emplace_back(DType::kBool, op);
  for (DType t : {DType::kComplex64, DType::kComplex128})
    for (ROp op : {ROp::kSum, ROp::kProd}) pairs.emplace_back(t, op);
  for (ROp op : {ROp::kBand, ROp::kBor, ROp::kBxor}) pairs.emplace_back(DType::kByte, op);
  return pairs;
}

std::string compare(const Bytes& got, const Bytes& want, DType type) {
  if (got.size() != want.size()) {
    return "size " + std::to_string(got.size()) + " != " + std::to_string(want.size());
  }
  const size_t esize = dtype_size(type);
  for (size_t i = 0; i < got.size(); i += esize) {
    bool same;
    switch (type) {
      case DType::kFloat32:
      case DType::kComplex64:
        same = equal_as<float>(&got[i], &want[i], esize);
        break;
      case DType::kFloat64:
      case DType::kComplex128:
        same = equal_as<double>(&got[i], &want[i], esize);
        break;
      default:
        same = std::memcmp(&got[i], &want[i], esize) == 0;
    }
    if (!same) return "first difference at element " + std::to_string(i / esize);
  }
  return "";
}

}  // namespace testing
}  // namespace efacoll
