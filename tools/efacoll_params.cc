// Prints the parameter table as Markdown (docs/configuration.md is generated from it).
#include <cstdio>

#include "common/params.h"

int main() {
  std::fputs(efacoll::params_markdown().c_str(), stdout);
  return 0;
}
