// The buffers of the largest size, in the memory --mem asks for, and where one call's input and
// result lie in them. In place, one buffer holds both, laid out as MPI (MPI_IN_PLACE) or NCCL
// (pointers into the same buffer) expect: they differ for reduce_scatter.
#ifndef EFACOLL_BENCH_BUFFERS_H
#define EFACOLL_BENCH_BUFFERS_H

#include <cstddef>
#include <string>
#include <vector>

#include "check_pattern.h"
#include "options.h"

namespace efacoll_bench {

struct CallLayout {
  bool in_place = false;
  char* input = nullptr;  // input elements [0, input_elems) of this rank
  size_t input_elems = 0;
  char* result = nullptr;
  size_t result_elems = 0;
  const void* send = nullptr;  // the call's arguments; nullptr: MPI_IN_PLACE
  void* recv = nullptr;
};

enum class InPlaceStyle { kMpi, kNccl };

class Buffers {
 public:
  Buffers(const Options& options, int rank, int nranks, size_t max_count);
  ~Buffers();
  Buffers(const Buffers&) = delete;
  Buffers& operator=(const Buffers&) = delete;

  // false, with *error, when memory ran out. `staging`: also pinned host copies of the same
  // layout, for a host MPI that cannot take GPU buffers.
  bool allocate(bool staging, std::string* error);

  CallLayout layout(size_t count, InPlaceStyle style) const;
  CallLayout staging_layout(size_t count) const;

  // For checks, whichever memory the layout is in. false on a GPU failure.
  bool write_inputs(const CallLayout& l, const CheckPattern& pattern);
  // Poisons the result where it is not also the input (CheckPattern::kPoisonByte).
  bool poison_result(const CallLayout& l);
  // The result, readable by the host; nullptr on a GPU failure.
  const void* result_on_host(const CallLayout& l);

  // The staged host MPI's copies: the input to the staging buffers, the result back.
  bool stage_in(const CallLayout& from, const CallLayout& to);
  bool stage_out(const CallLayout& from, const CallLayout& to);

 private:
  struct Set {
    char* send = nullptr;  // out of place only
    char* recv = nullptr;
  };
  CallLayout layout_in(const Set& set, size_t count, InPlaceStyle style) const;
  size_t send_elems(size_t count) const;
  size_t recv_elems(size_t count) const;
  bool copy(void* dst, const void* src, size_t bytes);
  bool fill(void* dst, unsigned char byte, size_t bytes);

  Options options_;
  int rank_, nranks_;
  size_t max_count_, elem_size_;
  bool on_gpu_;
  Set main_, staging_;
  std::vector<char> scratch_;  // host copy of GPU data for checks
};

}  // namespace efacoll_bench

#endif
