// The vocabulary of efacoll-bench: which collective, element type, reduction and memory. Plain
// enums with names and parsers; nothing here knows MPI, CUDA or NCCL.
#ifndef EFACOLL_BENCH_BENCH_TYPES_H
#define EFACOLL_BENCH_BENCH_TYPES_H

#include <cstddef>

namespace efacoll_bench {

enum class Collective { kAllreduce, kAllgather, kReduceScatter, kReduceScatterBlock };
enum class DataType { kInt8, kUint8, kInt32, kUint32, kInt64, kUint64, kFloat, kDouble };
enum class ReduceOp { kSum, kProd, kMax, kMin, kBand, kBor, kBxor };
enum class MemoryKind { kHost, kDevice };

const char* collective_name(Collective c);
const char* type_name(DataType t);
const char* op_name(ReduceOp op);
const char* memory_name(MemoryKind m);

size_t type_size(DataType t);
bool is_floating(DataType t);
bool is_signed(DataType t);
bool is_bitwise(ReduceOp op);
// Allgather reduces nothing: its op column reads "none", as in nccl-tests.
bool reduces(Collective c);

// Each returns false for a name it does not know and leaves *out alone.
bool parse_collective(const char* name, Collective* out);
bool parse_type(const char* name, DataType* out);
bool parse_op(const char* name, ReduceOp* out);
bool parse_memory(const char* name, MemoryKind* out);

}  // namespace efacoll_bench

#endif
