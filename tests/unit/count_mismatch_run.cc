#include "count_mismatch_run.h"

#include <chrono>

#include "reference.h"

namespace efacoll {
namespace testing {

std::vector<std::string> run_count_mismatch_then_exact_calls(CountMismatchRun* run) {
  const int n = CountMismatchRun::kRanks;
  const size_t count = 16384;
  RankSetup& setup = run->setup;
  setup.fabric.protocol = Protocol::kRdma;
  setup.fabric.rdma_threshold = 1024;
  setup.config.chunk_bytes = 4096;
  setup.config.timeout = std::chrono::milliseconds(5000);
  run->after_mismatch.assign(n, ResourceUsage{});
  run->at_end.assign(n, ResourceUsage{});
  return run_ranks(n, setup, [&](RankContext& ctx) {
    Status forced = ctx.engine.set_algo("ring");
    if (!forced.is_ok()) return ctx.failures->push_back(forced.to_string());
    const size_t mine = ctx.rank == 1 ? count / 4 : count;
    Bytes data = make_input(DType::kInt32, ROp::kSum, ctx.rank, mine);
    CollArgs a;
    a.recvbuf = data.data();
    a.count = mine;
    a.dtype = DType::kInt32;
    a.inplace = true;
    if (ctx.comm.run(a).is_ok())
      ctx.failures->push_back("rank " + std::to_string(ctx.rank) + ": the mismatch passed");
    run->after_mismatch[ctx.rank] = ctx.engine.resource_usage();
    for (int call = 1; call <= CountMismatchRun::kExactCalls; ++call) {
      const std::string err = check_allreduce_in_place(ctx.comm, ctx.rank, n, count);
      if (!err.empty()) {
        ctx.failures->push_back("rank " + std::to_string(ctx.rank) + ", call " +
                                std::to_string(call) + ": " + err);
        return;
      }
      if (run->after_call) run->after_call(ctx.rank, call);
    }
    run->at_end[ctx.rank] = ctx.engine.resource_usage();
  });
}

}  // namespace testing
}  // namespace efacoll
