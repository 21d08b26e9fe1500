#include "check_pattern.h"

#include <algorithm>
#include <cstring>

namespace efacoll_bench {
namespace {

constexpr size_t kMaxMinPeriod = 101;  // prime: misplaced blocks rarely line up
constexpr size_t kBitwisePeriod = 64;
constexpr int64_t kLargestSummand = 7;

// The largest integer each type holds exactly, in DataType's order (uint64's is int64's: the
// reference is int64).
const int64_t kLargestExact[] = {INT8_MAX,  UINT8_MAX, INT32_MAX,        UINT32_MAX,
                                 INT64_MAX, INT64_MAX, int64_t{1} << 24, int64_t{1} << 53};

int floor_log2(int64_t v) {
  int bits = 0;
  while (v > 1) v >>= 1, ++bits;
  return bits;
}

uint64_t mix(uint64_t x) {  // splitmix64's finaliser
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

int64_t combine(ReduceOp op, int64_t a, int64_t b) {
  switch (op) {
    case ReduceOp::kSum:
      return a + b;
    case ReduceOp::kProd:
      return a * b;
    case ReduceOp::kMax:
      return std::max(a, b);
    case ReduceOp::kMin:
      return std::min(a, b);
    case ReduceOp::kBand:
      return a & b;
    case ReduceOp::kBor:
      return a | b;
    default:
      return a ^ b;
  }
}

// Calls fn(T{}) with the C++ type of t.
template <typename Fn>
void with_type(DataType t, Fn&& fn) {
  switch (t) {
    case DataType::kInt8:
      return fn(int8_t{});
    case DataType::kUint8:
      return fn(uint8_t{});
    case DataType::kInt32:
      return fn(int32_t{});
    case DataType::kUint32:
      return fn(uint32_t{});
    case DataType::kInt64:
      return fn(int64_t{});
    case DataType::kUint64:
      return fn(uint64_t{});
    case DataType::kFloat:
      return fn(float{});
    case DataType::kDouble:
      return fn(double{});
  }
}

template <typename T>
T element(const void* data, size_t i) {
  T v;
  std::memcpy(&v, static_cast<const char*>(data) + i * sizeof(T), sizeof(T));
  return v;
}

// Compares n elements of `data` with want(i), in the type.
template <typename Want>
CheckResult compare(DataType type, const void* data, size_t n, Want want) {
  CheckResult r;
  with_type(type, [&](auto zero) {
    using T = decltype(zero);
    for (size_t i = 0; i < n; ++i) {
      const T got = element<T>(data, i), expected = static_cast<T>(want(i));
      if (got != expected && r.wrong++ == 0) {
        r.first = i;
        r.got = static_cast<double>(got);
        r.want = static_cast<double>(expected);
      }
    }
  });
  return r;
}

}  // namespace

CheckPattern::CheckPattern(Collective collective, DataType type, ReduceOp op, int nranks)
    : type_(type), op_(op), nranks_(nranks) {
  if (!reduces(collective) || (is_floating(type) && is_bitwise(op))) op_ = ReduceOp::kMax;
  // One below the largest: the poison (the largest unsigned value) is never a right answer.
  const int64_t limit = kLargestExact[static_cast<int>(type)] - 1;
  switch (op_) {
    case ReduceOp::kSum:  // nranks * (modulus - 1) <= limit
      sum_modulus_ = std::min<int64_t>(kLargestSummand + 1, limit / nranks + 1);
      period_ = static_cast<size_t>(sum_modulus_);
      break;
    case ReduceOp::kProd: {  // factors of 2 at every stride-th rank: at most log2(limit) of them
      const int64_t twos = floor_log2(limit);
      prod_stride_ = std::max<int64_t>(2, (nranks + twos - 1) / twos);
      period_ = static_cast<size_t>(prod_stride_);
      break;
    }
    case ReduceOp::kMax:
    case ReduceOp::kMin:
      period_ = kMaxMinPeriod;
      break;
    default:
      period_ = kBitwisePeriod;
      break;
  }
  reduced_.resize(period_);
  for (size_t k = 0; k < period_; ++k) {
    int64_t acc = input(0, k);
    for (int r = 1; r < nranks_; ++r) acc = combine(op_, acc, input(r, k));
    reduced_[k] = acc;
  }
}

int64_t CheckPattern::input(int rank, size_t index) const {
  const auto r = static_cast<int64_t>(rank);
  const auto k = static_cast<int64_t>(index % period_);
  switch (op_) {
    case ReduceOp::kSum:
      return (3 * r + k) % sum_modulus_;
    case ReduceOp::kProd:
      return (r + k) % prod_stride_ == 0 ? 2 : 1;
    case ReduceOp::kMax:
    case ReduceOp::kMin: {
      // Negative values where the type has them (a signed comparison is checked), else the top
      // half of uint8 (an unsigned one is); never -1, the poison.
      const int64_t h = (31 * r + 7 * k) % static_cast<int64_t>(kMaxMinPeriod);
      if (!is_signed(type_)) return h + 100;
      return h == 49 ? 51 : h - 50;
    }
    default: {  // any bits but the top one: the poison has it
      const int bits = static_cast<int>(8 * type_size(type_)) - 1;
      const uint64_t mask = (uint64_t{1} << bits) - 1;
      return static_cast<int64_t>(mix(static_cast<uint64_t>(r) * kBitwisePeriod + k) & mask);
    }
  }
}

void CheckPattern::write_inputs(int rank, size_t first, size_t n, void* out) const {
  with_type(type_, [&](auto zero) {
    using T = decltype(zero);
    T* data = static_cast<T*>(out);
    for (size_t i = 0; i < n; ++i) data[i] = static_cast<T>(input(rank, first + i));
  });
}

CheckResult CheckPattern::check_reduced(const void* result, size_t first, size_t n) const {
  return compare(type_, result, n, [&](size_t i) { return reduced(first + i); });
}

CheckResult CheckPattern::check_gathered(const void* result, size_t count) const {
  const size_t n = count * static_cast<size_t>(nranks_);
  return compare(type_, result, n,
                 [&](size_t i) { return input(static_cast<int>(i / count), i % count); });
}

}  // namespace efacoll_bench
