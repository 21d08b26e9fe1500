// The low-latency protocol (gpu/ll_protocol.h) run by the calling thread on host memory, for
// ranks that are threads of one process: the same regions, parities, keys and flags as the
// kernel, so that the engine's path through it (lock lending, sequences, mismatches) runs in CI.
// Data always moves as plain bytes with one flag per sender: the kernel's packed words and
// segments are the GPU tests' (tests/gpu/ll_kernel_test.cc).
#pragma once
#include "efacoll/status.h"
#include "gpu/ll_protocol.h"

namespace efacoll {
namespace testing {

// As GpuRuntime::run_ll: kTimeout names a peer whose key or data did not come within
// call.timeout_ns; kMismatch, a peer whose key differs (then in *fault).
Status run_ll_on_host(const LlCall& call, LlFault* fault);

}  // namespace testing
}  // namespace efacoll
