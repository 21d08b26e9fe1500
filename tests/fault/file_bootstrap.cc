#include "file_bootstrap.h"

#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <vector>

namespace efacoll {
namespace fault {

FileBootstrap::FileBootstrap(std::string dir, int rank, int size,
                             std::chrono::milliseconds patience)
    : dir_(std::move(dir)), rank_(rank), size_(size), patience_(patience) {}

std::string FileBootstrap::path(unsigned round, int rank) const {
  return dir_ + "/bootstrap." + std::to_string(round) + "." + std::to_string(rank);
}

Status FileBootstrap::allgather(const void* in, size_t bytes, void* out) {
  const unsigned round = round_++;
  // Written aside, then renamed: a reader sees a whole blob or none.
  const std::string mine = path(round, rank_), partial = mine + ".partial";
  {
    std::ofstream f(partial, std::ios::binary);
    f.write(static_cast<const char*>(in), static_cast<std::streamsize>(bytes));
    if (!f.flush()) return Status(Code::kInternal, "bootstrap: cannot write " + partial);
  }
  if (std::rename(partial.c_str(), mine.c_str()) != 0)
    return Status(Code::kInternal, "bootstrap: cannot rename " + partial);

  const auto deadline = std::chrono::steady_clock::now() + patience_;
  std::vector<bool> have(size_, false);
  int missing = size_;
  while (missing > 0) {
    for (int r = 0; r < size_; ++r) {
      if (have[r]) continue;
      std::ifstream f(path(round, r), std::ios::binary);
      if (!f) continue;
      std::vector<char> blob((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
      if (blob.size() != bytes) {
        return Status(Code::kInvalid, "bootstrap round " + std::to_string(round) + ": rank " +
                                          std::to_string(r) + " sent " +
                                          std::to_string(blob.size()) + " bytes, expected " +
                                          std::to_string(bytes));
      }
      std::memcpy(static_cast<char*>(out) + r * bytes, blob.data(), bytes);
      have[r] = true;
      --missing;
    }
    if (missing == 0) break;
    if (std::chrono::steady_clock::now() > deadline) {
      std::string ranks;
      for (int r = 0; r < size_; ++r)
        if (!have[r]) ranks += (ranks.empty() ? "" : ",") + std::to_string(r);
      return Status(Code::kTimeout, "bootstrap round " + std::to_string(round) +
                                        ": ranks that did not arrive: " + ranks);
    }
    struct timespec ts = {0, 1000000};  // 1 ms: set-up only, never on a measured path
    nanosleep(&ts, nullptr);
  }
  return Status::ok();
}

Status FileBootstrap::barrier() {
  char mine = 0;
  std::vector<char> all(size_);
  return allgather(&mine, 1, all.data());
}

}  // namespace fault
}  // namespace efacoll
