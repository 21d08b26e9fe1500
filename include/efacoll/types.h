// The data types, reduction ops and collectives the engine knows, independent of MPI.
#pragma once
#include <cstddef>
#include <cstdint>

namespace efacoll {

enum class DType : uint8_t {
  kInt8,
  kInt16,
  kInt32,
  kInt64,
  kUint8,
  kUint16,
  kUint32,
  kUint64,
  kFloat32,
  kFloat64,
  kBool,        // C _Bool, one byte
  kComplex64,   // float _Complex
  kComplex128,  // double _Complex
  kByte,        // MPI_BYTE: bitwise ops only
  kFloat16,     // IEEE half (MPIX_C_FLOAT16 where the MPI defines it)
  kBFloat16,    // bfloat16 (MPIX_BFLOAT16)
  kCount
};

enum class ROp : uint8_t {
  kSum,
  kProd,
  kMin,
  kMax,
  kLand,
  kLor,
  kLxor,
  kBand,
  kBor,
  kBxor,
  kCount
};

enum class CollKind : uint8_t { kAllreduce, kAllgather, kReduceScatter, kCount };

enum class MemKind : uint8_t { kHost, kPinnedHost, kDevice, kManaged };
inline bool is_gpu(MemKind k) { return k == MemKind::kDevice || k == MemKind::kManaged; }

size_t dtype_size(DType type);
const char* dtype_name(DType type);
const char* op_name(ROp op);
const char* coll_name(CollKind kind);

// Exactly the (type, op) pairs the MPI standard allows for predefined reductions.
bool op_allowed(DType type, ROp op);

}  // namespace efacoll
