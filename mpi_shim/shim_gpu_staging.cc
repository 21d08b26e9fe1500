// Calls efacoll passes to MPI while their buffers are on a GPU: unless the MPI says it is
// CUDA-aware, it gets host copies (device -> host, PMPI_*, host -> device), never a device
// pointer (a non-CUDA-aware MPI would crash on one).
#include <dlfcn.h>

#include <vector>

#include "common/log.h"
#include "gpu/memory_kind.h"
#include "mpi_shim/shim.h"

namespace efacoll {
namespace shim {

bool mpi_is_cuda_aware() {
  static const bool aware = [] {
    auto query = reinterpret_cast<int (*)()>(dlsym(RTLD_DEFAULT, "MPIX_Query_cuda_support"));
    return query != nullptr && query() == 1;
  }();
  return aware;
}

CallBuffers locate(const void* sendbuf, void* recvbuf) {
  CallBuffers b;
  b.sendbuf = sendbuf;
  b.recvbuf = recvbuf;
  b.recv = query_memory(recvbuf);
  b.send = b.inplace() ? b.recv : query_memory(sendbuf);
  return b;
}

Span span_of(size_t count, MPI_Datatype type) {
  Span s;
  if (count == 0) return s;
  MPI_Aint lb, extent, true_lb, true_extent;
  PMPI_Type_get_extent(type, &lb, &extent);
  PMPI_Type_get_true_extent(type, &true_lb, &true_extent);
  s.offset = true_lb;
  s.bytes = static_cast<size_t>(static_cast<MPI_Aint>(count - 1) * extent + true_extent);
  return s;
}

namespace {

class HostCopy {
 public:
  // Copies [ptr + span.offset, +span.bytes) to the host when `copy_in`.
  Status make(const void* ptr, const Span& span, bool copy_in) {
    data_.resize(span.bytes);
    offset_ = span.offset;
    if (!copy_in || span.bytes == 0) return Status::ok();
    return driver_copy(data_.data(), static_cast<const char*>(ptr) + span.offset, span.bytes, ptr);
  }
  // Where MPI must look: the host copy, shifted back by the type's lower bound.
  void* base() { return data_.data() - offset_; }

 private:
  std::vector<char> data_;
  MPI_Aint offset_ = 0;
};

}  // namespace

int staged_pmpi(MPI_Comm comm, const CallBuffers& b, const StagedSpans& spans,
                const std::function<int(const void*, void*)>& call) {
  if (!b.any_gpu() || mpi_is_cuda_aware()) return call(b.sendbuf, b.recvbuf);
  HostCopy send, recv;
  const void* hsend = b.sendbuf;
  void* hrecv = b.recvbuf;
  Status st;
  if (!b.inplace() && is_gpu(b.send.kind)) {
    st = send.make(b.sendbuf, spans.send, true);
    hsend = send.base();
  }
  if (st.is_ok() && is_gpu(b.recv.kind)) {
    st = recv.make(b.recvbuf, spans.recv_in, spans.recv_needs_input);
    hrecv = recv.base();
  }
  if (!st.is_ok()) return raise_error(comm, st);
  int rc = call(hsend, hrecv);
  if (rc != MPI_SUCCESS || !is_gpu(b.recv.kind) || spans.recv_out.bytes == 0) return rc;
  char* out = static_cast<char*>(hrecv) + spans.recv_out.offset;
  st = driver_copy(static_cast<char*>(b.recvbuf) + spans.recv_out.offset, out, spans.recv_out.bytes,
                   b.recvbuf);
  return st.is_ok() ? rc : raise_error(comm, st);
}

}  // namespace shim
}  // namespace efacoll
