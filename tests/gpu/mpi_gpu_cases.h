// efacoll_mpi_gpu_tests: one collective call on chosen buffers, checked against the host
// reference: result, untouched guard bytes, unchanged send buffer, efacoll's counters.
#pragma once
#include <mpi.h>

#include <string>
#include <vector>

#include "mpi_gpu_harness.h"

namespace gputest {

struct CommUnderTest {
  MPI_Comm comm = MPI_COMM_NULL;
  std::string name;
  std::vector<int> members;  // world ranks in communicator rank order
  int rank = 0, size = 1;
};

enum class Coll { kAllreduce, kReduceScatterBlock, kReduceScatter, kAllgather };
const char* coll_label(Coll c);
efacoll_collective counter_of(Coll c);

struct Case {
  Coll coll = Coll::kAllreduce;
  const TypeDesc* t = nullptr;  // element type: data, reference and comparison
  Op op = Op::kNone;            // reference op; for allgather the values' op (kNone: any bits)
  MPI_Op mpi_op = MPI_OP_NULL;
  MPI_Datatype call_type = MPI_DATATYPE_NULL;  // what MPI is given (t->type unless derived)
  size_t per_item = 1;                         // elements of t per call_type item
  size_t count = 0;  // items: allreduce count, block, reduce_scatter base count, allgather count
  bool inplace = false;
  const CommUnderTest* cu = nullptr;
  Where send_where = Where::kDevice, recv_where = Where::kDevice;
  // Where each communicator rank's buffers lie instead (send, receive), rank r taking entry
  // r % size(); empty: send_where and recv_where on every rank.
  std::vector<std::pair<Where, Where>> by_rank;
  // Counted as efacoll's or as passed to MPI, either (a rank's buffers differ from the ranks'
  // last agreement on where calls run; the result must be right either way).
  bool engine_or_mpi = false;
  bool nonblocking = false;  // MPI_Ixxx, then MPI_Wait
  size_t offset_elems = 0;   // buffers this many elements past the allocation's alignment
  bool expect_engine = true;
  bool sampled = false;  // huge: check a sample of indices plus a scan for untouched poison
  std::string label;     // replaces the op's name in the case name
};

// A case on device buffers, with t's MPI type and op's MPI op.
Case make_case(Coll coll, const TypeDesc& t, Op op, size_t count, bool inplace,
               const CommUnderTest& cu);
std::string case_name(const Case& c);
// Cases whose name contains none of these '|'-separated substrings are not run (the same on
// every rank: mpirun gives every rank the same arguments).
extern std::string g_filter;
bool filtered_out(const std::string& name);
// Reduce_scatter's receive counts for base count `base`: some zero, the others uneven.
size_t irregular_count(size_t base, int comm_rank);
void run_case(const Case& c);

// mpi_gpu_errors.cc: bad input, one argument at a time, on device buffers; each followed by a
// valid call on the same communicator.
void bad_input(const std::vector<const CommUnderTest*>& comms);

// mpi_gpu_mismatch.cc: rank 1 calls with another op, type or count; every rank must err.
void mismatched_calls(const CommUnderTest& cu);

}  // namespace gputest
