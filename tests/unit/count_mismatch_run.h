// A failed call that leaves clear-to-sends unanswered, then exact calls: rank 1 calls a ring
// allreduce (one-sided from 1 KiB, 4 KiB chunks) with a quarter of rank 0's count, then both
// make 40 exact calls, past the 32 after which a failed call's leftovers are dropped
// (engine/comm_stale.cc).
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "thread_ranks.h"

namespace efacoll {
namespace testing {

struct CountMismatchRun {
  static constexpr int kRanks = 2;
  static constexpr int kExactCalls = 40;
  RankSetup setup;  // transport and any fault injection; the protocol and sizes are set here
  // Called on each rank after each exact call.
  std::function<void(int rank, int call)> after_call;
  std::vector<ResourceUsage> after_mismatch, at_end;  // per rank
};

// Every failure the ranks reported (empty: the mismatch failed and every later call was exact).
std::vector<std::string> run_count_mismatch_then_exact_calls(CountMismatchRun* run);

}  // namespace testing
}  // namespace efacoll
