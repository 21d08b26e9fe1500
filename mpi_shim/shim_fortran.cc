// The Fortran bindings of the four collectives, and of MPI_Init(_thread), MPI_Finalize and
// MPI_Comm_free. Open MPI's Fortran library calls PMPI_* itself (MPI-3.1 section 14.2 lets it), so
// a Fortran code never reaches efacoll's C entry points: the Fortran symbols are defined here too
// and lead to them.
// mpif.h and `use mpi` call one of four manglings of the name (mpi_allreduce_ for gfortran); `use
// mpi_f08` calls Open MPI's ompi_allreduce_f, through which its own mpif.h binding also goes.
// Handles, counts, and Fortran's MPI_IN_PLACE and MPI_BOTTOM become C's; errors go through the
// communicator's error handler in the C call, and its code is returned in ierr. Open MPI only:
// other MPIs' Fortran libraries have other internals, and their Fortran calls are left to them.
#include <dlfcn.h>

#include <initializer_list>
#include <type_traits>
#include <vector>

#include "mpi_shim/shim.h"

#if defined(OPEN_MPI) && OPEN_MPI

namespace {

// Fortran's MPI_IN_PLACE and MPI_BOTTOM are Open MPI variables, named as each compiler mangles
// common blocks; an argument at one of their addresses stands for the constant.
struct Sentinels {
  std::vector<const void*> in_place, bottom;
};

// The addresses of those of `names` that are defined.
std::vector<const void*> addresses_of(std::initializer_list<const char*> names) {
  std::vector<const void*> found;
  for (const char* name : names) {
    if (const void* a = dlsym(RTLD_DEFAULT, name)) found.push_back(a);
  }
  return found;
}

const Sentinels& sentinels() {
  static const Sentinels s{addresses_of({"MPI_FORTRAN_IN_PLACE", "mpi_fortran_in_place",
                                         "mpi_fortran_in_place_", "mpi_fortran_in_place__"}),
                           addresses_of({"MPI_FORTRAN_BOTTOM", "mpi_fortran_bottom",
                                         "mpi_fortran_bottom_", "mpi_fortran_bottom__"})};
  return s;
}

bool is_one_of(const void* buf, const std::vector<const void*>& addresses) {
  for (const void* a : addresses) {
    if (buf == a) return true;
  }
  return false;
}

void* c_buffer(void* buf) { return is_one_of(buf, sentinels().bottom) ? MPI_BOTTOM : buf; }

void* c_send_buffer(void* buf) {
  return is_one_of(buf, sentinels().in_place) ? MPI_IN_PLACE : c_buffer(buf);
}

void set_ierr(MPI_Fint* ierr, int rc) {
  if (ierr) *ierr = static_cast<MPI_Fint>(rc);  // `use mpi_f08` may leave ierror out
}

// Runs the C call and returns its code in ierr; nothing thrown crosses into Fortran.
template <typename CCall>
void fortran_call(MPI_Fint* ierr, CCall&& c_call) {
  try {
    set_ierr(ierr, c_call());
  } catch (...) {
    // The C entry points catch their own; this covers converting the arguments.
    set_ierr(ierr, efacoll::shim::raise_exception(MPI_COMM_NULL, "a Fortran entry point"));
  }
}

// recvcounts as C ints: copied only where Fortran's INTEGER is not C's int.
int reduce_scatter_c(void* sendbuf, void* recvbuf, const MPI_Fint* recvcounts, MPI_Datatype type,
                     MPI_Op op, MPI_Comm comm) {
  if (std::is_same<MPI_Fint, int>::value || recvcounts == nullptr) {
    return MPI_Reduce_scatter(sendbuf, recvbuf, reinterpret_cast<const int*>(recvcounts), type, op,
                              comm);
  }
  int size = 0;
  if (PMPI_Comm_size(comm, &size) != MPI_SUCCESS) {
    return MPI_Reduce_scatter(sendbuf, recvbuf, nullptr, type, op, comm);  // MPI's error
  }
  std::vector<int> counts(recvcounts, recvcounts + size);
  return MPI_Reduce_scatter(sendbuf, recvbuf, counts.data(), type, op, comm);
}

}  // namespace

extern "C" {

// MPI_INIT, MPI_INIT_THREAD and MPI_FINALIZE too: otherwise efacoll never starts in a Fortran
// program (every collective would pass to MPI) and never prints its statistics.
EFACOLL_EXPORT void ompi_init_f(MPI_Fint* ierr) {
  fortran_call(ierr, [] {
    int argc = 0;
    char** argv = nullptr;
    return MPI_Init(&argc, &argv);
  });
}

EFACOLL_EXPORT void ompi_init_thread_f(MPI_Fint* required, MPI_Fint* provided, MPI_Fint* ierr) {
  fortran_call(ierr, [&] {
    int argc = 0, c_provided = MPI_THREAD_SINGLE;
    char** argv = nullptr;
    const int rc = MPI_Init_thread(&argc, &argv, static_cast<int>(*required), &c_provided);
    *provided = static_cast<MPI_Fint>(c_provided);
    return rc;
  });
}

EFACOLL_EXPORT void ompi_finalize_f(MPI_Fint* ierr) {
  fortran_call(ierr, [] { return MPI_Finalize(); });
}

// Through efacoll's MPI_Comm_free, which remembers the value freed: a C copy of the handle,
// kept by mixed-language code, is then caught as stale (shim_freed_comms.cc).
EFACOLL_EXPORT void ompi_comm_free_f(MPI_Fint* comm, MPI_Fint* ierr) {
  fortran_call(ierr, [&] {
    MPI_Comm c_comm = MPI_Comm_f2c(*comm);
    const int rc = MPI_Comm_free(&c_comm);
    if (rc == MPI_SUCCESS) *comm = MPI_Comm_c2f(c_comm);
    return rc;
  });
}

EFACOLL_EXPORT void ompi_allreduce_f(char* sendbuf, char* recvbuf, MPI_Fint* count,
                                     MPI_Fint* datatype, MPI_Fint* op, MPI_Fint* comm,
                                     MPI_Fint* ierr) {
  fortran_call(ierr, [&] {
    return MPI_Allreduce(c_send_buffer(sendbuf), c_buffer(recvbuf), static_cast<int>(*count),
                         MPI_Type_f2c(*datatype), MPI_Op_f2c(*op), MPI_Comm_f2c(*comm));
  });
}

EFACOLL_EXPORT void ompi_allgather_f(char* sendbuf, MPI_Fint* sendcount, MPI_Fint* sendtype,
                                     char* recvbuf, MPI_Fint* recvcount, MPI_Fint* recvtype,
                                     MPI_Fint* comm, MPI_Fint* ierr) {
  fortran_call(ierr, [&] {
    return MPI_Allgather(c_send_buffer(sendbuf), static_cast<int>(*sendcount),
                         MPI_Type_f2c(*sendtype), c_buffer(recvbuf), static_cast<int>(*recvcount),
                         MPI_Type_f2c(*recvtype), MPI_Comm_f2c(*comm));
  });
}

EFACOLL_EXPORT void ompi_reduce_scatter_f(char* sendbuf, char* recvbuf, MPI_Fint* recvcounts,
                                          MPI_Fint* datatype, MPI_Fint* op, MPI_Fint* comm,
                                          MPI_Fint* ierr) {
  fortran_call(ierr, [&] {
    return reduce_scatter_c(c_send_buffer(sendbuf), c_buffer(recvbuf), recvcounts,
                            MPI_Type_f2c(*datatype), MPI_Op_f2c(*op), MPI_Comm_f2c(*comm));
  });
}

EFACOLL_EXPORT void ompi_reduce_scatter_block_f(char* sendbuf, char* recvbuf, MPI_Fint* recvcount,
                                                MPI_Fint* datatype, MPI_Fint* op, MPI_Fint* comm,
                                                MPI_Fint* ierr) {
  fortran_call(ierr, [&] {
    return MPI_Reduce_scatter_block(c_send_buffer(sendbuf), c_buffer(recvbuf),
                                    static_cast<int>(*recvcount), MPI_Type_f2c(*datatype),
                                    MPI_Op_f2c(*op), MPI_Comm_f2c(*comm));
  });
}

// mpif.h and `use mpi`: every mangling a Fortran compiler may give the name.
#define EFACOLL_FORTRAN_NAMES(upper, lower, target, params)            \
  EFACOLL_EXPORT void upper params __attribute__((alias(#target)));    \
  EFACOLL_EXPORT void lower params __attribute__((alias(#target)));    \
  EFACOLL_EXPORT void lower##_ params __attribute__((alias(#target))); \
  EFACOLL_EXPORT void lower##__ params __attribute__((alias(#target)));

EFACOLL_FORTRAN_NAMES(MPI_INIT, mpi_init, ompi_init_f, (MPI_Fint*))
EFACOLL_FORTRAN_NAMES(MPI_INIT_THREAD, mpi_init_thread, ompi_init_thread_f,
                      (MPI_Fint*, MPI_Fint*, MPI_Fint*))
EFACOLL_FORTRAN_NAMES(MPI_FINALIZE, mpi_finalize, ompi_finalize_f, (MPI_Fint*))
EFACOLL_FORTRAN_NAMES(MPI_COMM_FREE, mpi_comm_free, ompi_comm_free_f, (MPI_Fint*, MPI_Fint*))
EFACOLL_FORTRAN_NAMES(MPI_ALLREDUCE, mpi_allreduce, ompi_allreduce_f,
                      (char*, char*, MPI_Fint*, MPI_Fint*, MPI_Fint*, MPI_Fint*, MPI_Fint*))
EFACOLL_FORTRAN_NAMES(MPI_ALLGATHER, mpi_allgather, ompi_allgather_f,
                      (char*, MPI_Fint*, MPI_Fint*, char*, MPI_Fint*, MPI_Fint*, MPI_Fint*,
                       MPI_Fint*))
EFACOLL_FORTRAN_NAMES(MPI_REDUCE_SCATTER, mpi_reduce_scatter, ompi_reduce_scatter_f,
                      (char*, char*, MPI_Fint*, MPI_Fint*, MPI_Fint*, MPI_Fint*, MPI_Fint*))
EFACOLL_FORTRAN_NAMES(MPI_REDUCE_SCATTER_BLOCK, mpi_reduce_scatter_block,
                      ompi_reduce_scatter_block_f,
                      (char*, char*, MPI_Fint*, MPI_Fint*, MPI_Fint*, MPI_Fint*, MPI_Fint*))

#undef EFACOLL_FORTRAN_NAMES

}  // extern "C"

#endif  // OPEN_MPI
