#include "fault_data.h"

#include <algorithm>
#include <cstring>
#include <type_traits>

namespace efacoll {
namespace fault {
namespace {

// splitmix64's finaliser: neighbouring indices get unrelated values.
uint64_t mix(int rank, size_t index) {
  uint64_t z = (static_cast<uint64_t>(rank) << 48) ^ (index + 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

template <typename T>
T value(const CallSpec& call, int rank, size_t index) {
  const uint64_t h = mix(rank, index);
  if (call.op == ROp::kBxor) return static_cast<T>(h & 0xff);
  if (call.op == ROp::kMax) return static_cast<T>(static_cast<int64_t>(h & 0x7fffffff) - (1 << 30));
  return static_cast<T>(h & 0x7fffffff);  // sums of 64 stay below 2^37: exact in double
}

template <typename T>
T combine(T a, T b, ROp op) {
  if (op == ROp::kMax) return std::max(a, b);
  if constexpr (std::is_integral<T>::value) {
    if (op == ROp::kBxor) return static_cast<T>(a ^ b);
  }
  return a + b;
}

// Elements [first, first + count) of rank's vector (all ranks: the reduction over them).
template <typename T>
Bytes elements(const CallSpec& call, int rank, int nranks, size_t first, size_t count) {
  Bytes out(count * sizeof(T));
  for (size_t i = 0; i < count; ++i) {
    T v = value<T>(call, rank < 0 ? 0 : rank, first + i);
    for (int r = 1; rank < 0 && r < nranks; ++r)
      v = combine(v, value<T>(call, r, first + i), call.op);
    std::memcpy(&out[i * sizeof(T)], &v, sizeof(T));
  }
  return out;
}

Bytes typed(const CallSpec& call, int rank, int nranks, size_t first, size_t count) {
  switch (call.dtype) {
    case DType::kFloat64:
      return elements<double>(call, rank, nranks, first, count);
    case DType::kInt32:
      return elements<int32_t>(call, rank, nranks, first, count);
    case DType::kUint8:
      return elements<uint8_t>(call, rank, nranks, first, count);
    default:
      return elements<int64_t>(call, rank, nranks, first, count);
  }
}

constexpr int kAllRanks = -1;

}  // namespace

CallSpec call_for(CollKind kind, size_t bytes, size_t index) {
  static const DType types[] = {DType::kInt64, DType::kFloat64, DType::kInt32, DType::kUint8};
  static const ROp ops[] = {ROp::kSum, ROp::kSum, ROp::kMax, ROp::kBxor};
  CallSpec call;
  call.kind = kind;
  call.dtype = types[index % 4];
  call.op = ops[index % 4];
  call.count = std::max<size_t>(1, bytes / dtype_size(call.dtype));
  return call;
}

std::string describe(const CallSpec& call) {
  return std::string(coll_name(call.kind)) + " " + std::to_string(call.count) + " x " +
         dtype_name(call.dtype) + " " + op_name(call.op);
}

Bytes call_input(const CallSpec& call, int rank, int nranks) {
  switch (call.kind) {
    case CollKind::kAllgather:
      return typed(call, rank, nranks, rank * call.count, call.count);
    case CollKind::kReduceScatter:
      return typed(call, rank, nranks, 0, call.count * nranks);
    default:
      return typed(call, rank, nranks, 0, call.count);
  }
}

Bytes call_expected(const CallSpec& call, int rank, int nranks) {
  switch (call.kind) {
    case CollKind::kAllgather: {
      Bytes all;
      for (int r = 0; r < nranks; ++r) {
        Bytes part = typed(call, r, nranks, r * call.count, call.count);
        all.insert(all.end(), part.begin(), part.end());
      }
      return all;
    }
    case CollKind::kReduceScatter:
      return typed(call, kAllRanks, nranks, rank * call.count, call.count);
    default:
      return typed(call, kAllRanks, nranks, 0, call.count);
  }
}

std::string first_difference(const Bytes& got, const Bytes& want, DType type) {
  if (got.size() != want.size())
    return std::to_string(got.size()) + " bytes, expected " + std::to_string(want.size());
  const size_t width = dtype_size(type);
  for (size_t k = 0; k < got.size(); k += width) {
    if (std::memcmp(&got[k], &want[k], width) != 0)
      return "element " + std::to_string(k / width) + " differs (first of the call's " +
             std::to_string(got.size() / width) + ")";
  }
  return "";
}

}  // namespace fault
}  // namespace efacoll
