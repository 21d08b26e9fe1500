#include <complex.h>

#include <cstdint>
#include <type_traits>

#include "mpi_shim/shim.h"

namespace efacoll {
namespace shim {
namespace {

template <typename T>
constexpr DType integer_dtype() {
  static_assert(std::is_integral<T>::value, "integer types only");
  constexpr bool s = std::is_signed<T>::value;
  switch (sizeof(T)) {
    case 1:
      return s ? DType::kInt8 : DType::kUint8;
    case 2:
      return s ? DType::kInt16 : DType::kUint16;
    case 4:
      return s ? DType::kInt32 : DType::kUint32;
    default:
      return s ? DType::kInt64 : DType::kUint64;
  }
}

struct TypeEntry {
  MPI_Datatype type;
  DType dtype;
};

// MPI-3.1 §5.9.2's C integer, floating point, logical, complex and byte groups. Fortran types
// have their own groups and ops (map_fortran_reduction); long double passes to MPI.
const TypeEntry* type_table(size_t* n) {
  static const TypeEntry kTable[] = {
      // Outside the standard's groups, but Open MPI 4.1 and MPICH 4 reduce it with all ten ops,
      // as signed char (on every platform), and OSU's benchmarks use it by default.
      {MPI_CHAR, DType::kInt8},
      {MPI_SIGNED_CHAR, integer_dtype<signed char>()},
      {MPI_UNSIGNED_CHAR, integer_dtype<unsigned char>()},
      {MPI_SHORT, integer_dtype<short>()},
      {MPI_UNSIGNED_SHORT, integer_dtype<unsigned short>()},
      {MPI_INT, integer_dtype<int>()},
      {MPI_UNSIGNED, integer_dtype<unsigned>()},
      {MPI_LONG, integer_dtype<long>()},
      {MPI_UNSIGNED_LONG, integer_dtype<unsigned long>()},
      {MPI_LONG_LONG_INT, integer_dtype<long long>()},
      {MPI_LONG_LONG, integer_dtype<long long>()},
      {MPI_UNSIGNED_LONG_LONG, integer_dtype<unsigned long long>()},
      {MPI_INT8_T, DType::kInt8},
      {MPI_INT16_T, DType::kInt16},
      {MPI_INT32_T, DType::kInt32},
      {MPI_INT64_T, DType::kInt64},
      {MPI_UINT8_T, DType::kUint8},
      {MPI_UINT16_T, DType::kUint16},
      {MPI_UINT32_T, DType::kUint32},
      {MPI_UINT64_T, DType::kUint64},
      {MPI_AINT, integer_dtype<MPI_Aint>()},
      {MPI_OFFSET, integer_dtype<MPI_Offset>()},
      {MPI_COUNT, integer_dtype<MPI_Count>()},
      {MPI_FLOAT, DType::kFloat32},
      {MPI_DOUBLE, DType::kFloat64},
      {MPI_C_BOOL, DType::kBool},
      {MPI_C_COMPLEX, DType::kComplex64},
      {MPI_C_FLOAT_COMPLEX, DType::kComplex64},
      {MPI_C_DOUBLE_COMPLEX, DType::kComplex128},
      {MPI_BYTE, DType::kByte},
  // 16-bit floats exist only where the MPI defines them (MPICH 4 and its derivatives; not
  // Open MPI 4.1).
#ifdef MPIX_C_FLOAT16
      {MPIX_C_FLOAT16, DType::kFloat16},
#endif
#ifdef MPIX_BFLOAT16
      {MPIX_BFLOAT16, DType::kBFloat16},
#endif
  };
  *n = sizeof(kTable) / sizeof(kTable[0]);
  return kTable;
}

}  // namespace

bool map_reduce_type(MPI_Datatype type, DType* out) {
  if (type == MPI_DATATYPE_NULL) return false;
  size_t n = 0;
  const TypeEntry* table = type_table(&n);
  for (size_t i = 0; i < n; ++i) {
    if (table[i].type == type) {
      *out = table[i].dtype;
      return true;
    }
  }
  return false;
}

bool map_op(MPI_Op op, ROp* out) {
  static const struct {
    MPI_Op op;
    ROp rop;
  } kOps[] = {{MPI_SUM, ROp::kSum},   {MPI_PROD, ROp::kProd}, {MPI_MIN, ROp::kMin},
              {MPI_MAX, ROp::kMax},   {MPI_LAND, ROp::kLand}, {MPI_LOR, ROp::kLor},
              {MPI_LXOR, ROp::kLxor}, {MPI_BAND, ROp::kBand}, {MPI_BOR, ROp::kBor},
              {MPI_BXOR, ROp::kBxor}};
  if (op == MPI_OP_NULL) return false;
  for (const auto& e : kOps) {
    if (e.op == op) {
      *out = e.rop;
      return true;
    }
  }
  return false;
}

namespace {

// MPI-3.1 §5.9.2's Fortran groups. Their sizes are the Fortran compiler's (-fdefault-integer-8,
// -fdefault-real-8 change them), read from MPI; LOGICAL is left to MPI (its true value is the
// compiler's), as are sizes without an engine type (REAL*16, INTEGER*16).
enum class FortranGroup { kInteger, kFloating, kComplex };

bool fortran_group(MPI_Datatype type, FortranGroup* out) {
  static const struct {
    MPI_Datatype type;
    FortranGroup group;
  } kTypes[] = {
      {MPI_INTEGER, FortranGroup::kInteger},
      {MPI_INTEGER1, FortranGroup::kInteger},
      {MPI_INTEGER2, FortranGroup::kInteger},
      {MPI_INTEGER4, FortranGroup::kInteger},
      {MPI_INTEGER8, FortranGroup::kInteger},
      {MPI_REAL, FortranGroup::kFloating},
      {MPI_DOUBLE_PRECISION, FortranGroup::kFloating},
      {MPI_REAL4, FortranGroup::kFloating},
      {MPI_REAL8, FortranGroup::kFloating},
      {MPI_COMPLEX, FortranGroup::kComplex},
      {MPI_DOUBLE_COMPLEX, FortranGroup::kComplex},
      {MPI_COMPLEX8, FortranGroup::kComplex},
      {MPI_COMPLEX16, FortranGroup::kComplex},
  };
  for (const auto& e : kTypes) {
    if (e.type == type) {
      *out = e.group;
      return true;
    }
  }
  return false;
}

// The ops the standard defines on each Fortran group; other pairs are MPI's to refuse.
bool fortran_op_allowed(FortranGroup g, ROp op) {
  switch (op) {
    case ROp::kSum:
    case ROp::kProd:
      return true;
    case ROp::kMin:
    case ROp::kMax:
      return g != FortranGroup::kComplex;
    case ROp::kBand:
    case ROp::kBor:
    case ROp::kBxor:
      return g == FortranGroup::kInteger;
    default:
      return false;
  }
}

bool fortran_dtype(FortranGroup g, int size, DType* out) {
  switch (g) {
    case FortranGroup::kInteger:
      if (size == 1) *out = DType::kInt8;
      if (size == 2) *out = DType::kInt16;
      if (size == 4) *out = DType::kInt32;
      if (size == 8) *out = DType::kInt64;
      return size == 1 || size == 2 || size == 4 || size == 8;
    case FortranGroup::kFloating:
      if (size == 4) *out = DType::kFloat32;
      if (size == 8) *out = DType::kFloat64;
      return size == 4 || size == 8;
    case FortranGroup::kComplex:
      if (size == 8) *out = DType::kComplex64;
      if (size == 16) *out = DType::kComplex128;
      return size == 8 || size == 16;
  }
  return false;
}

}  // namespace

bool map_fortran_reduction(MPI_Datatype type, MPI_Op op, DType* dtype, ROp* rop) {
  FortranGroup g;
  int size = 0;
  return type != MPI_DATATYPE_NULL && fortran_group(type, &g) && map_op(op, rop) &&
         fortran_op_allowed(g, *rop) && PMPI_Type_size(type, &size) == MPI_SUCCESS &&
         fortran_dtype(g, size, dtype);
}

bool plain_type_size(MPI_Datatype type, size_t* out) {
  if (type == MPI_DATATYPE_NULL) return false;
  int num_ints, num_addrs, num_types, combiner;
  if (PMPI_Type_get_envelope(type, &num_ints, &num_addrs, &num_types, &combiner) != MPI_SUCCESS ||
      combiner != MPI_COMBINER_NAMED) {
    return false;
  }
  int size = 0;
  MPI_Aint lb = 0, extent = 0;
  if (PMPI_Type_size(type, &size) != MPI_SUCCESS ||
      PMPI_Type_get_true_extent(type, &lb, &extent) != MPI_SUCCESS) {
    return false;
  }
  if (size <= 0 || lb != 0 || extent != size) return false;
  *out = static_cast<size_t>(size);
  return true;
}

}  // namespace shim
}  // namespace efacoll
