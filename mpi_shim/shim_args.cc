// Rank-local argument checks of the four collectives, made before anything moves, so that bad
// input gets the error class the MPI standard names whatever the MPI underneath checks: Open MPI
// 4.1, for one, crashes on null buffers (and on MPI_COMM_NULL in MPI_Allgather), calls
// MPI_DATATYPE_NULL an MPI_ERR_OP in reductions, and accepts overlapping buffers, an uncommitted
// receive type in MPI_Allgather and MPI_BYTE with MPI_SUM.
//
//   bad input                                                     class
//   a negative count (sendcount, recvcount, any recvcounts[i])    MPI_ERR_COUNT
//   recvcounts a null pointer (MPI_Reduce_scatter)                MPI_ERR_COUNT (as Open MPI)
//   MPI_DATATYPE_NULL; a derived datatype not committed           MPI_ERR_TYPE
//   MPI_OP_NULL; a predefined (type, op) pair MPI-3.1 5.9.2       MPI_ERR_OP
//     does not define
//   MPI_COMM_NULL, a null handle, a stale copy of a freed one     MPI_ERR_COMM
//     (shim_freed_comms.cc; raised on MPI_COMM_WORLD)
//   a null pointer where there is data                            MPI_ERR_BUFFER
//   MPI_IN_PLACE as recvbuf, or on an inter-communicator          MPI_ERR_BUFFER
//   send and receive data that overlap (MPI_IN_PLACE is how to    MPI_ERR_BUFFER (as MPICH)
//     say "the same buffer")
//
// Left to MPI: (type, op) pairs with a derived type, a predefined type efacoll does not reduce
// (MPI_LONG_DOUBLE, MPI_2INT, MPI_LOGICAL), a Fortran type (efacoll runs only the pairs the
// standard defines on it: map_fortran_reduction) or an op it does not know (MINLOC, user ops).
// A stale copy of a freed communicator's handle is valid again once a new communicator takes its
// value: then MPI itself cannot tell the two apart, and neither can we.
#include <cctype>
#include <cstdint>

#include "common/log.h"
#include "mpi_shim/shim.h"

namespace efacoll {
namespace shim {
namespace {

// Our own MPI_COMM_SELF with MPI_ERRORS_RETURN, for the committed-type probe: the user's
// handlers are never changed. Null when the probe cannot tell committed types apart here.
MPI_Comm g_probe = MPI_COMM_NULL;

ArgError fail(int error_class, std::string message) {
  return ArgError{error_class, std::move(message)};
}

bool is_named(MPI_Datatype type) {
  int ints = 0, addrs = 0, types = 0, combiner = 0;
  return PMPI_Type_get_envelope(type, &ints, &addrs, &types, &combiner) == MPI_SUCCESS &&
         combiner == MPI_COMBINER_NAMED;
}

// MPI has no "is it committed" query; packing nothing fails on an uncommitted type in Open MPI
// 4.1 and has no other effect. args_init checks that it does on the MPI at hand.
bool committed(MPI_Datatype type) {
  if (g_probe == MPI_COMM_NULL || is_named(type)) return true;
  char out = 0;
  int position = 0;
  return PMPI_Pack(nullptr, 0, type, &out, 0, &position, g_probe) == MPI_SUCCESS;
}

std::string type_label(MPI_Datatype type) {
  char name[MPI_MAX_OBJECT_NAME] = "";
  int len = 0;
  PMPI_Type_get_name(type, name, &len);
  return len > 0 ? std::string(name, len) : "a derived datatype";
}

std::string op_label(ROp op) {
  std::string s = "MPI_";
  for (const char* c = op_name(op); *c; ++c) s += static_cast<char>(std::toupper(*c));
  return s;
}

struct CommShape {
  int rank = 0, size = 0;
  int receive_from = 0;  // ranks whose data an allgather receives: the remote group's if inter
  bool inter = false;
};

ArgError check_comm(MPI_Comm comm, CommShape* shape) {
  ArgError bad = check_comm_handle(comm, &shape->inter);
  if (!bad.ok()) return bad;
  PMPI_Comm_rank(comm, &shape->rank);
  PMPI_Comm_size(comm, &shape->size);
  shape->receive_from = shape->size;
  if (shape->inter) PMPI_Comm_remote_size(comm, &shape->receive_from);
  return {};
}

ArgError check_count(const std::string& what, MPI_Count count) {
  if (count >= 0) return {};
  return fail(MPI_ERR_COUNT, what + " is negative (" + std::to_string(count) + ")");
}

ArgError check_type(const char* what, MPI_Datatype type) {
  if (type == MPI_DATATYPE_NULL)
    return fail(MPI_ERR_TYPE, std::string(what) + " is MPI_DATATYPE_NULL");
  if (!committed(type)) {
    return fail(MPI_ERR_TYPE,
                std::string(what) + " is a derived datatype that was never committed");
  }
  return {};
}

ArgError check_op(MPI_Datatype type, MPI_Op op) {
  if (op == MPI_OP_NULL) return fail(MPI_ERR_OP, "op is MPI_OP_NULL");
  DType dtype;
  ROp rop;
  if (map_reduce_type(type, &dtype) && map_op(op, &rop) && !op_allowed(dtype, rop)) {
    return fail(MPI_ERR_OP, op_label(rop) + " is not defined on " + type_label(type) +
                                " (MPI-3.1 section 5.9.2)");
  }
  return {};
}

// One side of a call: `count` items of `type` at `buf`.
struct Side {
  const char* name;
  const void* buf;
  MPI_Aint count;
  MPI_Datatype type;
};

// The bytes a side's data covers: from its first data byte `lo`; `bytes` only where `dense`
// (every byte between is data), which is what makes overlap a byte range question.
struct Footprint {
  bool data = false;
  bool dense = false;
  uintptr_t lo = 0;
  uintptr_t bytes = 0;
};

Footprint footprint_of(const Side& s) {
  Footprint f;
  int size = 0;
  MPI_Aint lb = 0, extent = 0, true_lb = 0, true_extent = 0;
  PMPI_Type_size(s.type, &size);
  if (s.count <= 0 || size <= 0) return f;
  PMPI_Type_get_extent(s.type, &lb, &extent);
  PMPI_Type_get_true_extent(s.type, &true_lb, &true_extent);
  f.data = true;
  f.lo = reinterpret_cast<uintptr_t>(s.buf) + static_cast<uintptr_t>(true_lb);
  f.dense = true_extent == size && (s.count == 1 || extent == size);
  f.bytes = static_cast<uintptr_t>(s.count) * static_cast<uintptr_t>(size);
  return f;
}

// A null pointer is a buffer only for data at absolute addresses (MPI_BOTTOM is null in Open
// MPI and MPICH): a type whose first data byte is past address 0.
ArgError check_null(const Side& s) {
  if (s.buf != nullptr) return {};
  const Footprint f = footprint_of(s);
  if (!f.data || static_cast<intptr_t>(f.lo) > 0) return {};
  return fail(MPI_ERR_BUFFER, std::string(s.name) + " is a null pointer, with " +
                                  std::to_string(s.count) + " items of " + type_label(s.type));
}

// Send and receive data that share a byte. Types with holes may interleave without sharing
// one, so for them only a common first byte counts; nor are the extents of an
// inter-communicator's sides certain enough for more.
ArgError check_disjoint(const Side& send, const Side& recv, bool inter) {
  const Footprint s = footprint_of(send), r = footprint_of(recv);
  if (!s.data || !r.data) return {};
  bool overlap = s.lo == r.lo;
  if (!inter && s.dense && r.dense) overlap = s.lo < r.lo + r.bytes && r.lo < s.lo + s.bytes;
  if (!overlap) return {};
  return fail(MPI_ERR_BUFFER,
              "sendbuf and recvbuf overlap (pass MPI_IN_PLACE as sendbuf to work in place)");
}

ArgError check_buffers(const Side& send, const Side& recv, bool inter) {
  if (recv.buf == MPI_IN_PLACE) {
    return fail(MPI_ERR_BUFFER, "recvbuf is MPI_IN_PLACE (only sendbuf may be)");
  }
  const bool inplace = send.buf == MPI_IN_PLACE;
  if (inplace && inter) return fail(MPI_ERR_BUFFER, "MPI_IN_PLACE on an inter-communicator");
  ArgError e = inplace ? ArgError() : check_null(send);
  if (e.ok()) e = check_null(recv);
  if (e.ok() && !inplace) e = check_disjoint(send, recv, inter);
  return e;
}

// Reduce_scatter with `counts`, or (counts null) `block` items for every rank.
template <typename Count>
ArgError check_scatter(const void* sendbuf, const void* recvbuf, const Count* counts,
                       MPI_Count block, MPI_Datatype type, MPI_Op op, MPI_Comm comm) {
  CommShape shape;
  ArgError e = check_comm(comm, &shape);
  MPI_Aint total = 0, mine = 0;
  for (int i = 0; e.ok() && i < shape.size; ++i) {
    const MPI_Count c = counts ? counts[i] : block;
    e = check_count(counts ? "recvcounts[" + std::to_string(i) + "]" : "recvcount", c);
    total += c;
    if (i == shape.rank) mine = c;
  }
  if (e.ok()) e = check_type("datatype", type);
  if (e.ok()) e = check_op(type, op);
  if (e.ok()) {
    // In place, the receive buffer holds the whole input.
    const MPI_Aint received = sendbuf == MPI_IN_PLACE ? total : mine;
    e = check_buffers({"sendbuf", sendbuf, total, type}, {"recvbuf", recvbuf, received, type},
                      shape.inter);
  }
  return e;
}

}  // namespace

ArgError check_comm_handle(MPI_Comm comm, bool* inter) {
  if (comm == MPI_COMM_NULL) return fail(MPI_ERR_COMM, "the communicator is MPI_COMM_NULL");
  if (comm == MPI_Comm{}) {
    return fail(MPI_ERR_COMM,
                "the handle is no communicator (a Fortran handle of none, or of "
                "one since freed, converts to it)");
  }
  if (comm_is_stale(comm)) {
    return fail(MPI_ERR_COMM,
                "the communicator was freed: this handle is a copy of one MPI_Comm_free released");
  }
  // MPICH checks handles itself: a freed one, until a new communicator takes its value, fails
  // here (through MPI_COMM_WORLD's handler, as MPICH raises it), and is ours to report as
  // MPI_ERR_COMM. Open MPI reads the handle (a stale copy there is caught above).
  int is_inter = 0;
  if (PMPI_Comm_test_inter(comm, &is_inter) != MPI_SUCCESS) {
    return fail(MPI_ERR_COMM,
                "MPI does not know this handle as a communicator (freed, or never made)");
  }
  if (inter) *inter = is_inter != 0;
  return {};
}

bool is_intercomm(MPI_Comm comm) {
  int inter = 0;
  PMPI_Comm_test_inter(comm, &inter);
  return inter != 0;
}

void args_init() {
  MPI_Comm probe = MPI_COMM_NULL;
  if (PMPI_Comm_dup(MPI_COMM_SELF, &probe) != MPI_SUCCESS) return;
  PMPI_Comm_set_errhandler(probe, MPI_ERRORS_RETURN);
  g_probe = probe;
  // The probe must tell the two apart here (an MPI may run with its own checks off).
  MPI_Datatype loose = MPI_DATATYPE_NULL, firm = MPI_DATATYPE_NULL;
  PMPI_Type_contiguous(2, MPI_INT, &loose);
  PMPI_Type_contiguous(2, MPI_INT, &firm);
  PMPI_Type_commit(&firm);
  const bool works = !committed(loose) && committed(firm);
  PMPI_Type_free(&loose);
  PMPI_Type_free(&firm);
  if (works) return;
  EFACOLL_INFO(kInit, "uncommitted datatypes are left to MPI: MPI_Pack does not reject them here");
  args_release();
}

void args_release() {
  if (g_probe != MPI_COMM_NULL) PMPI_Comm_free(&g_probe);
  g_probe = MPI_COMM_NULL;
}

ArgError check_allreduce(const void* sendbuf, const void* recvbuf, MPI_Count count,
                         MPI_Datatype type, MPI_Op op, MPI_Comm comm) {
  CommShape shape;
  ArgError e = check_comm(comm, &shape);
  if (e.ok()) e = check_count("count", count);
  if (e.ok()) e = check_type("datatype", type);
  if (e.ok()) e = check_op(type, op);
  if (e.ok()) {
    e = check_buffers({"sendbuf", sendbuf, count, type}, {"recvbuf", recvbuf, count, type},
                      shape.inter);
  }
  return e;
}

template <typename Count>
ArgError check_reduce_scatter(const void* sendbuf, const void* recvbuf, const Count* recvcounts,
                              MPI_Datatype type, MPI_Op op, MPI_Comm comm) {
  if (comm != MPI_COMM_NULL && recvcounts == nullptr) {
    return fail(MPI_ERR_COUNT, "recvcounts is a null pointer");
  }
  return check_scatter(sendbuf, recvbuf, recvcounts, 0, type, op, comm);
}
template ArgError check_reduce_scatter(const void*, const void*, const int*, MPI_Datatype, MPI_Op,
                                       MPI_Comm);
template ArgError check_reduce_scatter(const void*, const void*, const MPI_Count*, MPI_Datatype,
                                       MPI_Op, MPI_Comm);

ArgError check_reduce_scatter_block(const void* sendbuf, const void* recvbuf, MPI_Count recvcount,
                                    MPI_Datatype type, MPI_Op op, MPI_Comm comm) {
  return check_scatter<int>(sendbuf, recvbuf, nullptr, recvcount, type, op, comm);
}

ArgError check_allgather(const void* sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                         const void* recvbuf, MPI_Count recvcount, MPI_Datatype recvtype,
                         MPI_Comm comm) {
  CommShape shape;
  ArgError e = check_comm(comm, &shape);
  // In place, the send arguments are ignored.
  const bool inplace = sendbuf == MPI_IN_PLACE;
  if (e.ok() && !inplace) e = check_count("sendcount", sendcount);
  if (e.ok()) e = check_count("recvcount", recvcount);
  if (e.ok() && !inplace) e = check_type("sendtype", sendtype);
  if (e.ok()) e = check_type("recvtype", recvtype);
  if (e.ok()) {
    const MPI_Aint received = static_cast<MPI_Aint>(recvcount) * shape.receive_from;
    e = check_buffers({"sendbuf", sendbuf, sendcount, sendtype},
                      {"recvbuf", recvbuf, received, recvtype}, shape.inter);
  }
  return e;
}

}  // namespace shim
}  // namespace efacoll
