// Built without the CUDA toolkit: no GPU buffers. gpu_select fails; the rest is never reached.
#include "device.h"

namespace efacoll_bench {

bool gpu_select(int, std::string* error) {
  *error = "efacoll-bench was built without CUDA";
  return false;
}
int gpu_count() { return 0; }
std::string gpu_describe() { return "no GPU"; }
void* gpu_alloc(size_t) { return nullptr; }
void gpu_free(void*) {}
void* pinned_alloc(size_t) { return nullptr; }
void pinned_free(void*) {}
bool gpu_copy(void*, const void*, size_t) { return false; }
bool gpu_fill(void*, unsigned char, size_t) { return false; }
void* gpu_stream_create() { return nullptr; }
bool gpu_stream_synchronize(void*) { return false; }
void gpu_stream_destroy(void*) {}
const char* gpu_last_error() { return "built without CUDA"; }

}  // namespace efacoll_bench
