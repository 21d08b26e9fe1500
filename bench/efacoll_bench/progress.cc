#include "progress.h"

#include <unistd.h>

namespace efacoll_bench {
namespace {

constexpr std::chrono::seconds kQuietStart{2};
constexpr std::chrono::seconds kLogInterval{10};

}  // namespace

Progress::Progress(bool enabled, FILE* out)
    : enabled_(enabled),
      terminal_(enabled && isatty(fileno(out))),
      out_(out),
      start_(Clock::now()),
      last_line_(start_) {}

void Progress::update(size_t index, size_t total, size_t bytes) {
  if (!enabled_) return;
  const Clock::time_point now = Clock::now();
  if (now - start_ < kQuietStart) return;
  if (!terminal_ && printed_ && now - last_line_ < kLogInterval) return;
  const double elapsed = std::chrono::duration<double>(now - start_).count();
  std::fprintf(out_, "%sefacoll-bench: size %zu of %zu (%zu B), elapsed %.0f s%s",
               terminal_ ? "\r" : "", index + 1, total, bytes, elapsed,
               terminal_ ? "\033[K" : "\n");
  std::fflush(out_);
  last_line_ = now;
  printed_ = true;
  shown_ = terminal_;
}

void Progress::clear() {
  if (!shown_) return;
  std::fprintf(out_, "\r\033[K");
  std::fflush(out_);
  shown_ = false;
}

}  // namespace efacoll_bench
