// Launches the low-latency protocol's kernel (see ll_protocol.h) on a stream.
#pragma once
#include <cstdint>

#include "efacoll/status.h"
#include "gpu/ll_protocol.h"

namespace efacoll {

enum LlPhase : int { kLlPush = 1, kLlFinish = 2 };

// How the kernel reports to the host without a stream synchronisation (which costs more than the
// small calls themselves): words in host-mapped memory, and a device counter of finished blocks.
struct LlSignal {
  uint64_t* done = nullptr;  // host-mapped; the last block of the finish phase stores call.seq
  // Host-mapped, 0 before a call: a block that stopped (a peer silent past the timeout, or one
  // whose key differs) stores ll_fault_word there, in one store so that the fault and the key
  // stay of one block.
  uint64_t* fault = nullptr;
  unsigned* arrivals = nullptr;  // device memory, 0 between calls
  // Host-mapped, or nullptr: a count the host thread waiting for the kernel raises as it polls.
  // Where it stands still for over a second the process is stopped (SIGSTOP, a debugger, a
  // suspended job), and the kernel, which the GPU's clock keeps running, does not count that
  // time against the timeout: the peers' kernels may be waiting on stopped processes too.
  uint64_t* heartbeat = nullptr;
};

// stream: a cudaStream_t.
Status ll_launch(const LlCall& call, int phases, const LlSignal& signal, void* stream);

}  // namespace efacoll
