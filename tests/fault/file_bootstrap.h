// A Bootstrap between processes through files in one directory. Network namespaces share the
// file system, so communicator set-up and the test's own barriers keep working while the network
// under test is delayed, lossy or cut.
#pragma once
#include <chrono>
#include <string>

#include "efacoll/bootstrap.h"

namespace efacoll {
namespace fault {

class FileBootstrap : public Bootstrap {
 public:
  // dir: shared by every rank of the group, empty at the start. A rank that has not arrived
  // after `patience` makes allgather fail (kTimeout), naming the missing ranks.
  FileBootstrap(std::string dir, int rank, int size, std::chrono::milliseconds patience);
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  Status allgather(const void* in, size_t bytes, void* out) override;
  Status barrier();

 private:
  std::string path(unsigned round, int rank) const;

  std::string dir_;
  int rank_, size_;
  std::chrono::milliseconds patience_;
  unsigned round_ = 0;
};

}  // namespace fault
}  // namespace efacoll
