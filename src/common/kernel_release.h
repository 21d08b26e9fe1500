// The Linux kernel's release string and comparisons of it: several of EFA's rules depend on the
// kernel (dma-buf import from 5.12, pinned pages copied on fork from 5.13).
#pragma once
#include <string>

namespace efacoll {

// uname's release, e.g. "5.15.0-1051-aws"; "" where it cannot be read.
std::string running_kernel_release();

// Whether `release` reads as major.minor or later; false where it does not read at all.
bool kernel_release_at_least(const std::string& release, int major, int minor);

}  // namespace efacoll
