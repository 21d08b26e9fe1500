#include "common/kept_alive.h"

#include <mutex>
#include <vector>

namespace efacoll {

void keep_alive_pointer(const void* object) {
  if (object == nullptr) return;
  // Never destroyed: what they point to must outlive every static destructor too.
  static auto* kept = new std::vector<const void*>();
  static auto* m = new std::mutex();
  std::lock_guard<std::mutex> lock(*m);
  kept->push_back(object);
}

}  // namespace efacoll
