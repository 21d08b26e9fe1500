// efacoll_mpi_gpu_tests: the MPI types and ops under test, random inputs that any rank can
// regenerate for any (case, rank, index), and host references computed from them (no MPI).
#pragma once
#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace gputest {

using Bytes = std::vector<uint8_t>;

enum class Kind { kSigned, kUnsigned, kFloat, kBool, kComplex, kByte };
enum class Op { kSum, kProd, kMin, kMax, kLand, kLor, kLxor, kBand, kBor, kBxor, kNone };

struct TypeDesc {
  MPI_Datatype type;
  const char* name;
  size_t size;  // bytes per element (a complex element is two floating values)
  Kind kind;
};

struct OpDesc {
  MPI_Op op;
  const char* name;
  Op id;
};

// Every predefined type efacoll reduces itself (MPI-3.1 §5.9.2: C integer and multi-language
// integer types, MPI_FLOAT, MPI_DOUBLE, MPI_C_BOOL, C complex, MPI_BYTE).
const std::vector<TypeDesc>& reduce_types();
const TypeDesc& type_named(const char* name);
const OpDesc& op_of(Op id);
// Every (type, op) pair the standard allows among those.
std::vector<std::pair<const TypeDesc*, const OpDesc*>> allowed_pairs();

// A counter-based generator (splitmix64 over seed, rank and index): element i of a rank's data
// is a pure function, so the reference (and sparse checks of huge buffers) need no sequence.
uint64_t mix(uint64_t seed, uint64_t rank, uint64_t index);
uint64_t seed_of(const std::string& text);

// Elements [first, first + count) of world rank `rank`'s input. Values are integers in small
// ranges chosen per op so that every result is exact (Op::kNone: arbitrary bits, for moves).
Bytes generate(const TypeDesc& t, Op op, uint64_t seed, int rank, size_t first, size_t count);
// Elements [first, first + count) of the reduction over `ranks` (world ranks, in order).
Bytes reduce_reference(const TypeDesc& t, Op op, uint64_t seed, const std::vector<int>& ranks,
                       size_t first, size_t count);

// First differing element or -1. Floating and complex data compare by value (the sign of a
// zero may depend on the order of reduction) unless `bitwise`.
long first_mismatch(const TypeDesc& t, const uint8_t* got, const uint8_t* want, size_t count,
                    bool bitwise);
std::string format_elem(const TypeDesc& t, const uint8_t* buf, size_t i);

}  // namespace gputest
