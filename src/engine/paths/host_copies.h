// The host-copies path: a small GPU call is copied into pinned host memory, a fabric schedule
// runs there, and the result is copied back (two copies cost less than staging every step).
// Owns its pinned memory, grown as calls need and kept across calls; after a failed call whose
// receives may still be written, the memory is retired instead of reused.
#pragma once
#include <cstddef>
#include <functional>
#include <mutex>

#include "efacoll/engine.h"
#include "efacoll/status.h"

namespace efacoll {

class GpuRuntime;
struct GpuMemoryToFree;

class HostCopiesPath {
 public:
  // What the path needs of the engine: the GPU runtime, and where its memory goes back.
  HostCopiesPath(GpuRuntime* gpu, std::function<void(GpuMemoryToFree)> give_back)
      : gpu_(gpu), give_back_(std::move(give_back)) {}
  HostCopiesPath(const HostCopiesPath&) = delete;
  HostCopiesPath& operator=(const HostCopiesPath&) = delete;

  // Pinned memory for `bytes` (send then receive copies); allocated with `lent` lent, since an
  // allocation may wait for other threads' kernels.
  Status prepare(size_t bytes, std::unique_lock<std::mutex>* lent);
  // Copies in (synchronously, after the caller's work on the legacy default stream), runs
  // `schedule` on the pinned copies (arguments as the fabric sees them), copies `result_bytes`
  // back. The send copy takes send_bytes, the receive copy recv_bytes.
  Status run(const CollArgs& args, size_t send_bytes, size_t recv_bytes, size_t result_bytes,
             const std::function<Status(const CollArgs& on_host)>& schedule);
  // After a failed call: where `buffer` lies in this path's memory, that memory is handed to
  // `retired` (true, with its size) and the next call allocates anew.
  bool retire_if_holds(const void* buffer, GpuMemoryToFree* retired, size_t* bytes);
  // Its memory, for the communicator's end.
  void give_memory(GpuMemoryToFree* out);

 private:
  GpuRuntime* gpu_;
  std::function<void(GpuMemoryToFree)> give_back_;
  void* pinned_ = nullptr;
  size_t pinned_bytes_ = 0;
};

}  // namespace efacoll
