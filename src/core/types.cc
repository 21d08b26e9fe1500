#include "efacoll/types.h"

namespace efacoll {

size_t dtype_size(DType type) {
  switch (type) {
    case DType::kInt8:
    case DType::kUint8:
    case DType::kBool:
    case DType::kByte:
      return 1;
    case DType::kInt16:
    case DType::kUint16:
    case DType::kFloat16:
    case DType::kBFloat16:
      return 2;
    case DType::kInt32:
    case DType::kUint32:
    case DType::kFloat32:
      return 4;
    case DType::kInt64:
    case DType::kUint64:
    case DType::kFloat64:
    case DType::kComplex64:
      return 8;
    case DType::kComplex128:
      return 16;
    case DType::kCount:
      break;
  }
  return 0;
}

const char* dtype_name(DType type) {
  static const char* const kNames[] = {
      "int8",    "int16",   "int32", "int64",     "uint8",      "uint16", "uint32",  "uint64",
      "float32", "float64", "bool",  "complex64", "complex128", "byte",   "float16", "bfloat16"};
  auto i = static_cast<size_t>(type);
  return i < sizeof(kNames) / sizeof(kNames[0]) ? kNames[i] : "?";
}

const char* op_name(ROp op) {
  static const char* const kNames[] = {"sum", "prod", "min",  "max", "land",
                                       "lor", "lxor", "band", "bor", "bxor"};
  auto i = static_cast<size_t>(op);
  return i < sizeof(kNames) / sizeof(kNames[0]) ? kNames[i] : "?";
}

const char* coll_name(CollKind kind) {
  switch (kind) {
    case CollKind::kAllreduce:
      return "allreduce";
    case CollKind::kAllgather:
      return "allgather";
    case CollKind::kReduceScatter:
      return "reduce_scatter";
    case CollKind::kCount:
      break;
  }
  return "?";
}

namespace {
enum class Group { kInteger, kFloating, kLogical, kComplex, kByte };

Group group_of(DType type) {
  switch (type) {
    case DType::kFloat32:
    case DType::kFloat64:
    case DType::kFloat16:
    case DType::kBFloat16:
      return Group::kFloating;
    case DType::kBool:
      return Group::kLogical;
    case DType::kComplex64:
    case DType::kComplex128:
      return Group::kComplex;
    case DType::kByte:
      return Group::kByte;
    default:
      return Group::kInteger;
  }
}
}  // namespace

// MPI-3.1 §5.9.2: MIN/MAX: integer, floating; SUM/PROD: integer, floating, complex;
// LAND/LOR/LXOR: integer, logical; BAND/BOR/BXOR: integer, byte.
bool op_allowed(DType type, ROp op) {
  if (type >= DType::kCount || op >= ROp::kCount) return false;
  Group g = group_of(type);
  switch (op) {
    case ROp::kMin:
    case ROp::kMax:
      return g == Group::kInteger || g == Group::kFloating;
    case ROp::kSum:
    case ROp::kProd:
      return g == Group::kInteger || g == Group::kFloating || g == Group::kComplex;
    case ROp::kLand:
    case ROp::kLor:
    case ROp::kLxor:
      return g == Group::kInteger || g == Group::kLogical;
    case ROp::kBand:
    case ROp::kBor:
    case ROp::kBxor:
      return g == Group::kInteger || g == Group::kByte;
    case ROp::kCount:
      break;
  }
  return false;
}

}  // namespace efacoll
