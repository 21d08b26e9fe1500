#include "buffers.h"

#include <cstdlib>
#include <cstring>

#include "device.h"

namespace efacoll_bench {

Buffers::Buffers(const Options& options, int rank, int nranks, size_t max_count)
    : options_(options),
      rank_(rank),
      nranks_(nranks),
      max_count_(max_count),
      elem_size_(type_size(options.type)),
      on_gpu_(options.memory == MemoryKind::kDevice) {}

Buffers::~Buffers() {
  // GPU buffers stay: efacoll may hold registrations of them until MPI_Finalize, and the process
  // ends right after it.
  if (!on_gpu_) {
    std::free(main_.send);
    std::free(main_.recv);
  }
}

size_t Buffers::send_elems(size_t count) const {
  const bool whole = options_.collective == Collective::kReduceScatter ||
                     options_.collective == Collective::kReduceScatterBlock;
  return whole ? count * nranks_ : count;
}

size_t Buffers::recv_elems(size_t count) const {
  return options_.collective == Collective::kAllgather ? count * nranks_ : count;
}

bool Buffers::allocate(bool staging, std::string* error) {
  const size_t send = send_elems(max_count_) * elem_size_;
  const size_t recv = recv_elems(max_count_) * elem_size_;
  // In place, one buffer holds the larger of the two.
  const size_t one = options_.in_place ? (send > recv ? send : recv) : recv;
  auto alloc = [&](size_t bytes, bool pinned) -> char* {
    if (pinned) return static_cast<char*>(pinned_alloc(bytes));
    if (on_gpu_) return static_cast<char*>(gpu_alloc(bytes));
    // Every page touched now, so that no first-touch cost is timed.
    char* p = static_cast<char*>(std::malloc(bytes ? bytes : 1));
    if (p) std::memset(p, 0, bytes);
    return p;
  };
  main_.recv = alloc(one, false);
  if (!options_.in_place) main_.send = alloc(send, false);
  bool ok = main_.recv && (options_.in_place || main_.send);
  if (ok && staging) {
    staging_.recv = alloc(one, true);
    if (!options_.in_place) staging_.send = alloc(send, true);
    ok = staging_.recv && (options_.in_place || staging_.send);
  }
  if (ok && on_gpu_) scratch_.resize(send > recv ? send : recv);
  if (!ok)
    *error = "out of " + std::string(on_gpu_ ? "GPU" : "host") + " memory for " +
             std::to_string(send + recv) + " bytes";
  return ok;
}

CallLayout Buffers::layout(size_t count, InPlaceStyle style) const {
  return layout_in(main_, count, style);
}

CallLayout Buffers::staging_layout(size_t count) const {
  return layout_in(staging_, count, InPlaceStyle::kMpi);
}

CallLayout Buffers::layout_in(const Set& set, size_t count, InPlaceStyle style) const {
  CallLayout l;
  l.in_place = options_.in_place;
  l.input_elems = send_elems(count);
  l.result_elems = recv_elems(count);
  if (!l.in_place) {
    l.input = set.send;
    l.result = set.recv;
    l.send = set.send;
    l.recv = set.recv;
    return l;
  }
  char* const own_block = set.recv + static_cast<size_t>(rank_) * count * elem_size_;
  l.input = l.result = set.recv;
  l.recv = set.recv;
  l.send = style == InPlaceStyle::kMpi ? nullptr : set.recv;
  switch (options_.collective) {
    case Collective::kAllgather:  // this rank's block of the result is its input
      l.input = own_block;
      if (style == InPlaceStyle::kNccl) l.send = own_block;
      break;
    case Collective::kReduceScatter:
    case Collective::kReduceScatterBlock:
      // MPI leaves the result at the start of the buffer; NCCL in this rank's block.
      if (style == InPlaceStyle::kNccl) {
        l.result = own_block;
        l.recv = own_block;
      }
      break;
    default:
      break;
  }
  return l;
}

bool Buffers::copy(void* dst, const void* src, size_t bytes) {
  if (!on_gpu_) {
    std::memcpy(dst, src, bytes);
    return true;
  }
  return gpu_copy(dst, src, bytes);
}

bool Buffers::fill(void* dst, unsigned char byte, size_t bytes) {
  if (!on_gpu_) {
    std::memset(dst, byte, bytes);
    return true;
  }
  return gpu_fill(dst, byte, bytes);
}

bool Buffers::write_inputs(const CallLayout& l, const CheckPattern& pattern) {
  if (!on_gpu_) {
    pattern.write_inputs(rank_, 0, l.input_elems, l.input);
    return true;
  }
  pattern.write_inputs(rank_, 0, l.input_elems, scratch_.data());
  return gpu_copy(l.input, scratch_.data(), l.input_elems * elem_size_);
}

bool Buffers::poison_result(const CallLayout& l) {
  char* const end = l.result + l.result_elems * elem_size_;
  if (!l.in_place) return fill(l.result, CheckPattern::kPoisonByte, end - l.result);
  // In place the input either holds the result or lies inside it: poison what is around it.
  char* const input_end = l.input + l.input_elems * elem_size_;
  bool ok = true;
  if (l.input > l.result) ok = fill(l.result, CheckPattern::kPoisonByte, l.input - l.result);
  if (ok && input_end < end) ok = fill(input_end, CheckPattern::kPoisonByte, end - input_end);
  return ok;
}

const void* Buffers::result_on_host(const CallLayout& l) {
  if (!on_gpu_) return l.result;
  return gpu_copy(scratch_.data(), l.result, l.result_elems * elem_size_) ? scratch_.data()
                                                                          : nullptr;
}

bool Buffers::stage_in(const CallLayout& from, const CallLayout& to) {
  return gpu_copy(to.input, from.input, from.input_elems * elem_size_);
}

bool Buffers::stage_out(const CallLayout& from, const CallLayout& to) {
  return gpu_copy(to.result, from.result, from.result_elems * elem_size_);
}

}  // namespace efacoll_bench
