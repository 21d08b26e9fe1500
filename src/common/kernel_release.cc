#include "common/kernel_release.h"

#include <sys/utsname.h>

#include <cstdio>

namespace efacoll {

std::string running_kernel_release() {
  utsname u = {};
  return uname(&u) == 0 ? u.release : "";
}

bool kernel_release_at_least(const std::string& release, int major, int minor) {
  int have_major = 0, have_minor = 0;
  if (std::sscanf(release.c_str(), "%d.%d", &have_major, &have_minor) != 2) return false;
  return have_major > major || (have_major == major && have_minor >= minor);
}

}  // namespace efacoll
