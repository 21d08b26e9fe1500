// A completion that remembers how it ended: what the transport tests wait on.
#pragma once
#include <cstddef>

#include "transport/transport.h"

namespace efacoll {
namespace testing {

struct Waiter : Completion {
  bool done = false;
  Status status;
  size_t bytes = 0;
  Waiter() {
    fn = [](Completion* c, const Status& st, size_t b) {
      auto* w = static_cast<Waiter*>(c);
      w->done = true;
      w->status = st;
      w->bytes = b;
    };
  }
};

}  // namespace testing
}  // namespace efacoll
