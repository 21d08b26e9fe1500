#include "bench_types.h"

#include <cstring>

namespace efacoll_bench {
namespace {

const char* const kCollectiveNames[] = {"allreduce", "allgather", "reduce_scatter",
                                        "reduce_scatter_block"};
const char* const kTypeNames[] = {"int8",  "uint8",  "int32", "uint32",
                                  "int64", "uint64", "float", "double"};
const size_t kTypeSizes[] = {1, 1, 4, 4, 8, 8, 4, 8};
const char* const kOpNames[] = {"sum", "prod", "max", "min", "band", "bor", "bxor"};
const char* const kMemoryNames[] = {"host", "device"};

template <typename Enum, size_t N>
bool parse_name(const char* name, const char* const (&names)[N], Enum* out) {
  for (size_t i = 0; i < N; ++i) {
    if (std::strcmp(name, names[i]) == 0) {
      *out = static_cast<Enum>(i);
      return true;
    }
  }
  return false;
}

}  // namespace

const char* collective_name(Collective c) { return kCollectiveNames[static_cast<int>(c)]; }
const char* type_name(DataType t) { return kTypeNames[static_cast<int>(t)]; }
const char* op_name(ReduceOp op) { return kOpNames[static_cast<int>(op)]; }
const char* memory_name(MemoryKind m) { return kMemoryNames[static_cast<int>(m)]; }

size_t type_size(DataType t) { return kTypeSizes[static_cast<int>(t)]; }
bool is_floating(DataType t) { return t == DataType::kFloat || t == DataType::kDouble; }
bool is_signed(DataType t) {
  return t == DataType::kInt8 || t == DataType::kInt32 || t == DataType::kInt64 || is_floating(t);
}
bool is_bitwise(ReduceOp op) {
  return op == ReduceOp::kBand || op == ReduceOp::kBor || op == ReduceOp::kBxor;
}
bool reduces(Collective c) { return c != Collective::kAllgather; }

bool parse_collective(const char* name, Collective* out) {
  return parse_name(name, kCollectiveNames, out);
}
bool parse_type(const char* name, DataType* out) { return parse_name(name, kTypeNames, out); }
bool parse_op(const char* name, ReduceOp* out) { return parse_name(name, kOpNames, out); }
bool parse_memory(const char* name, MemoryKind* out) { return parse_name(name, kMemoryNames, out); }

}  // namespace efacoll_bench
