// The low-latency kernel tests run several "ranks" as concurrent kernels in this one process,
// each spinning until the others' data arrives. Under CUDA's lazy module loading (the default
// since CUDA 12.2) the first launch of a kernel loads its module, which can wait for kernels
// already running: a rank's first launch then waits on ranks that wait on it, until their
// timeout (seen: LlMismatch run alone took 20 s and failed; after other tests had loaded the
// kernels it passed). Everything is loaded at start-up instead, unless the caller chose.
#include <cstdlib>

namespace {
[[maybe_unused]] const int kEagerLoading = setenv("CUDA_MODULE_LOADING", "EAGER", /*overwrite=*/0);
}  // namespace
