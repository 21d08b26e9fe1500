// Endpoints of libfabric's shm provider that live in one process (ranks as threads, a pair of
// endpoints in one test) must be introduced both ways before they talk.
//
// Why: shm (seen on libfabric 2.6.0; 1.17 does not need it) records where a receiver mapped a
// sender's region only when the receiver handles the sender's connection request, or maps the
// sender's region through the path for other processes. A region of this process is found in the
// provider's own list instead, and that path records nothing; so once A has heard from B, B's first
// returned-command message to A (any large send, any fi_writedata) names an address in A that is
// an offset, and A crashes in smr_progress_cmd. Across processes — every MPI job — the mapping
// path records the region and nothing is needed. The cure here: every pair posts a send each way
// before either endpoint progresses, so each sends the other its connection request.
#pragma once
#include <string>
#include <vector>

#include "efacoll/status.h"
#include "transport/transport.h"

namespace efacoll {
namespace testing {

// Whether in-process endpoints of `provider` need introduce_in_process().
bool needs_in_process_introduction(const std::string& provider);

// Exchanges one small message each way between every pair of `transports`, in this thread; the
// addresses it inserts are the ones a later insert_peers returns (Transport::insert_peers).
Status introduce_in_process(const std::vector<Transport*>& transports);

}  // namespace testing
}  // namespace efacoll
