#include "mpi_gpu_data.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <type_traits>

namespace gputest {
namespace {

template <typename T>
struct Cplx {
  T re, im;
};
template <typename T>
struct IsCplx : std::false_type {};
template <typename T>
struct IsCplx<Cplx<T>> : std::true_type {};

// Calls f(T()) with the C++ type that holds one element of `t`.
template <typename F>
auto dispatch(const TypeDesc& t, F&& f) {
  switch (t.kind) {
    case Kind::kSigned:
      if (t.size == 1) return f(int8_t());
      if (t.size == 2) return f(int16_t());
      if (t.size == 4) return f(int32_t());
      return f(int64_t());
    case Kind::kUnsigned:
      if (t.size == 1) return f(uint8_t());
      if (t.size == 2) return f(uint16_t());
      if (t.size == 4) return f(uint32_t());
      return f(uint64_t());
    case Kind::kFloat:
      if (t.size == 4) return f(float());
      return f(double());
    case Kind::kComplex:
      if (t.size == 8) return f(Cplx<float>());
      return f(Cplx<double>());
    case Kind::kBool:
    case Kind::kByte:
      break;
  }
  return f(uint8_t());
}

int64_t in_range(uint64_t h, int64_t lo, int64_t hi) {
  return lo + static_cast<int64_t>(h % static_cast<uint64_t>(hi - lo + 1));
}

// A small integer for `op` (signed ranges for signed and floating types).
int64_t small_value(Op op, uint64_t h, bool is_unsigned) {
  static const int64_t kProdSigned[4] = {-1, 1, 1, 2}, kProdUnsigned[4] = {1, 1, 2, 3};
  switch (op) {
    case Op::kSum:
      return is_unsigned ? in_range(h, 0, 16) : in_range(h, -8, 8);
    case Op::kProd:
      return is_unsigned ? kProdUnsigned[h % 4] : kProdSigned[h % 4];
    case Op::kMin:
    case Op::kMax:
      return is_unsigned ? in_range(h, 0, 200) : in_range(h, -100, 100);
    default:  // logical ops: zero one time in four, otherwise 1..3
      return in_range(h, 0, 3);
  }
}

template <typename T>
T value(Kind kind, Op op, uint64_t seed, int rank, uint64_t i) {
  const uint64_t h = mix(seed, static_cast<uint64_t>(rank), i);
  T v{};
  if constexpr (IsCplx<T>::value) {
    using R = decltype(v.re);
    if (op == Op::kNone) {
      uint64_t bits[2] = {h, mix(h, 1, i)};
      std::memcpy(&v, bits, sizeof(T));
    } else {
      const int64_t lim = op == Op::kProd ? 1 : 8;
      v.re = static_cast<R>(in_range(h, -lim, lim));
      v.im = static_cast<R>(in_range(h >> 20, -lim, lim));
    }
  } else {
    if (kind == Kind::kBool) {
      v = static_cast<T>(h & 1);
    } else if (op == Op::kNone || op == Op::kBand || op == Op::kBor || op == Op::kBxor) {
      std::memcpy(&v, &h, sizeof(T));
    } else {
      v = static_cast<T>(small_value(op, h, std::is_unsigned<T>::value));
    }
  }
  return v;
}

// a op b, integers wrapping like the hardware (computed in 64-bit unsigned).
template <typename T>
T apply(Op op, T a, T b) {
  if constexpr (IsCplx<T>::value) {
    if (op == Op::kSum) return T{a.re + b.re, a.im + b.im};
    return T{a.re * b.re - a.im * b.im, a.re * b.im + a.im * b.re};
  } else {
    switch (op) {
      case Op::kSum:
        if constexpr (std::is_integral<T>::value)
          return static_cast<T>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
        else
          return a + b;
      case Op::kProd:
        if constexpr (std::is_integral<T>::value)
          return static_cast<T>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
        else
          return a * b;
      case Op::kMin:
        return b < a ? b : a;
      case Op::kMax:
        return b > a ? b : a;
      case Op::kLand:
        return static_cast<T>(a != 0 && b != 0);
      case Op::kLor:
        return static_cast<T>(a != 0 || b != 0);
      case Op::kLxor:
        return static_cast<T>((a != 0) != (b != 0));
      default:
        break;
    }
    if constexpr (std::is_integral<T>::value) {
      if (op == Op::kBand) return static_cast<T>(a & b);
      if (op == Op::kBor) return static_cast<T>(a | b);
      if (op == Op::kBxor) return static_cast<T>(a ^ b);
    }
    std::fprintf(stderr, "mpi_gpu_test: no reference for op %d\n", static_cast<int>(op));
    std::abort();
  }
}

template <typename T>
bool equal_by_value(const uint8_t* a, const uint8_t* b) {
  T x, y;
  std::memcpy(&x, a, sizeof(T));
  std::memcpy(&y, b, sizeof(T));
  if constexpr (IsCplx<T>::value)
    return x.re == y.re && x.im == y.im;
  else
    return x == y;
}

}  // namespace

const std::vector<TypeDesc>& reduce_types() {
  static const std::vector<TypeDesc> kTypes = {
      {MPI_CHAR, "MPI_CHAR", 1, Kind::kSigned},  // as signed char, as both MPIs reduce it
      {MPI_SIGNED_CHAR, "MPI_SIGNED_CHAR", sizeof(signed char), Kind::kSigned},
      {MPI_UNSIGNED_CHAR, "MPI_UNSIGNED_CHAR", sizeof(unsigned char), Kind::kUnsigned},
      {MPI_SHORT, "MPI_SHORT", sizeof(short), Kind::kSigned},
      {MPI_UNSIGNED_SHORT, "MPI_UNSIGNED_SHORT", sizeof(unsigned short), Kind::kUnsigned},
      {MPI_INT, "MPI_INT", sizeof(int), Kind::kSigned},
      {MPI_UNSIGNED, "MPI_UNSIGNED", sizeof(unsigned), Kind::kUnsigned},
      {MPI_LONG, "MPI_LONG", sizeof(long), Kind::kSigned},
      {MPI_UNSIGNED_LONG, "MPI_UNSIGNED_LONG", sizeof(unsigned long), Kind::kUnsigned},
      {MPI_LONG_LONG, "MPI_LONG_LONG", sizeof(long long), Kind::kSigned},
      {MPI_UNSIGNED_LONG_LONG, "MPI_UNSIGNED_LONG_LONG", sizeof(unsigned long long),
       Kind::kUnsigned},
      {MPI_INT8_T, "MPI_INT8_T", 1, Kind::kSigned},
      {MPI_INT16_T, "MPI_INT16_T", 2, Kind::kSigned},
      {MPI_INT32_T, "MPI_INT32_T", 4, Kind::kSigned},
      {MPI_INT64_T, "MPI_INT64_T", 8, Kind::kSigned},
      {MPI_UINT8_T, "MPI_UINT8_T", 1, Kind::kUnsigned},
      {MPI_UINT16_T, "MPI_UINT16_T", 2, Kind::kUnsigned},
      {MPI_UINT32_T, "MPI_UINT32_T", 4, Kind::kUnsigned},
      {MPI_UINT64_T, "MPI_UINT64_T", 8, Kind::kUnsigned},
      {MPI_AINT, "MPI_AINT", sizeof(MPI_Aint), Kind::kSigned},
      {MPI_OFFSET, "MPI_OFFSET", sizeof(MPI_Offset), Kind::kSigned},
      {MPI_COUNT, "MPI_COUNT", sizeof(MPI_Count), Kind::kSigned},
      {MPI_FLOAT, "MPI_FLOAT", sizeof(float), Kind::kFloat},
      {MPI_DOUBLE, "MPI_DOUBLE", sizeof(double), Kind::kFloat},
      {MPI_C_BOOL, "MPI_C_BOOL", 1, Kind::kBool},
      {MPI_C_FLOAT_COMPLEX, "MPI_C_FLOAT_COMPLEX", 2 * sizeof(float), Kind::kComplex},
      {MPI_C_DOUBLE_COMPLEX, "MPI_C_DOUBLE_COMPLEX", 2 * sizeof(double), Kind::kComplex},
      {MPI_BYTE, "MPI_BYTE", 1, Kind::kByte},
  };
  return kTypes;
}

const TypeDesc& type_named(const char* name) {
  for (const TypeDesc& t : reduce_types()) {
    if (std::strcmp(t.name, name) == 0) return t;
  }
  std::fprintf(stderr, "mpi_gpu_test: unknown type %s\n", name);
  std::abort();
}

const OpDesc& op_of(Op id) {
  static const OpDesc kOps[] = {
      {MPI_SUM, "MPI_SUM", Op::kSum},    {MPI_PROD, "MPI_PROD", Op::kProd},
      {MPI_MIN, "MPI_MIN", Op::kMin},    {MPI_MAX, "MPI_MAX", Op::kMax},
      {MPI_LAND, "MPI_LAND", Op::kLand}, {MPI_LOR, "MPI_LOR", Op::kLor},
      {MPI_LXOR, "MPI_LXOR", Op::kLxor}, {MPI_BAND, "MPI_BAND", Op::kBand},
      {MPI_BOR, "MPI_BOR", Op::kBor},    {MPI_BXOR, "MPI_BXOR", Op::kBxor},
  };
  for (const OpDesc& o : kOps) {
    if (o.id == id) return o;
  }
  std::fprintf(stderr, "mpi_gpu_test: no MPI op for %d\n", static_cast<int>(id));
  std::abort();
}

std::vector<std::pair<const TypeDesc*, const OpDesc*>> allowed_pairs() {
  std::vector<std::pair<const TypeDesc*, const OpDesc*>> pairs;
  for (const TypeDesc& t : reduce_types()) {
    std::vector<Op> ops;
    switch (t.kind) {
      case Kind::kSigned:
      case Kind::kUnsigned:
        ops = {Op::kSum, Op::kProd, Op::kMin,  Op::kMax, Op::kLand,
               Op::kLor, Op::kLxor, Op::kBand, Op::kBor, Op::kBxor};
        break;
      case Kind::kFloat:
        ops = {Op::kSum, Op::kProd, Op::kMin, Op::kMax};
        break;
      case Kind::kBool:
        ops = {Op::kLand, Op::kLor, Op::kLxor};
        break;
      case Kind::kComplex:
        ops = {Op::kSum, Op::kProd};
        break;
      case Kind::kByte:
        ops = {Op::kBand, Op::kBor, Op::kBxor};
        break;
    }
    for (Op op : ops) pairs.emplace_back(&t, &op_of(op));
  }
  return pairs;
}

uint64_t mix(uint64_t seed, uint64_t rank, uint64_t index) {
  uint64_t z = seed ^ (rank * 0x9E3779B97F4A7C15ull) ^ (index * 0xC2B2AE3D27D4EB4Full);
  z += 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

uint64_t seed_of(const std::string& text) {
  uint64_t h = 1469598103934665603ull;  // FNV-1a
  for (unsigned char c : text) h = (h ^ c) * 1099511628211ull;
  return h;
}

Bytes generate(const TypeDesc& t, Op op, uint64_t seed, int rank, size_t first, size_t count) {
  Bytes out(count * t.size);
  dispatch(t, [&](auto tag) {
    using T = decltype(tag);
    for (size_t i = 0; i < count; ++i) {
      T v = value<T>(t.kind, op, seed, rank, first + i);
      std::memcpy(&out[i * sizeof(T)], &v, sizeof(T));
    }
    return 0;
  });
  return out;
}

Bytes reduce_reference(const TypeDesc& t, Op op, uint64_t seed, const std::vector<int>& ranks,
                       size_t first, size_t count) {
  Bytes out(count * t.size);
  dispatch(t, [&](auto tag) {
    using T = decltype(tag);
    for (size_t i = 0; i < count; ++i) {
      T acc = value<T>(t.kind, op, seed, ranks[0], first + i);
      for (size_t r = 1; r < ranks.size(); ++r) {
        acc = apply<T>(op, acc, value<T>(t.kind, op, seed, ranks[r], first + i));
      }
      std::memcpy(&out[i * sizeof(T)], &acc, sizeof(T));
    }
    return 0;
  });
  return out;
}

long first_mismatch(const TypeDesc& t, const uint8_t* got, const uint8_t* want, size_t count,
                    bool bitwise) {
  const bool by_value = !bitwise && (t.kind == Kind::kFloat || t.kind == Kind::kComplex);
  if (!by_value) {
    if (count == 0 || std::memcmp(got, want, count * t.size) == 0) return -1;
    for (size_t i = 0; i < count; ++i) {
      if (std::memcmp(got + i * t.size, want + i * t.size, t.size) != 0)
        return static_cast<long>(i);
    }
    return -1;
  }
  return dispatch(t, [&](auto tag) -> long {
    using T = decltype(tag);
    for (size_t i = 0; i < count; ++i) {
      if (!equal_by_value<T>(got + i * sizeof(T), want + i * sizeof(T)))
        return static_cast<long>(i);
    }
    return -1;
  });
}

std::string format_elem(const TypeDesc& t, const uint8_t* buf, size_t i) {
  return dispatch(t, [&](auto tag) -> std::string {
    using T = decltype(tag);
    T v;
    std::memcpy(&v, buf + i * sizeof(T), sizeof(T));
    char text[96];
    if constexpr (IsCplx<T>::value) {
      const int digits = sizeof(v.re) == 4 ? 9 : 17;  // enough to tell any two values apart
      std::snprintf(text, sizeof(text), "(%.*g, %.*g)", digits, static_cast<double>(v.re), digits,
                    static_cast<double>(v.im));
    } else if constexpr (std::is_floating_point<T>::value) {
      std::snprintf(text, sizeof(text), "%.*g", sizeof(T) == 4 ? 9 : 17, static_cast<double>(v));
    } else if constexpr (std::is_signed<T>::value) {
      std::snprintf(text, sizeof(text), "%lld", static_cast<long long>(v));
    } else {
      std::snprintf(text, sizeof(text), "%llu (0x%llx)", static_cast<unsigned long long>(v),
                    static_cast<unsigned long long>(v));
    }
    return text;
  });
}

}  // namespace gputest
