#include "schedule_runner.h"

#include <thread>

#include "core/executor.h"
#include "reference.h"
#include "transport/loopback/loopback_transport.h"

namespace efacoll {
namespace testing {

std::vector<std::string> run_allreduce_schedules(const ScheduleRun& run) {
  const int n = run.nranks;
  auto fabric = make_loopback_fabric();
  std::vector<std::unique_ptr<Transport>> transports;
  std::vector<std::vector<uint8_t>> addresses;
  for (int r = 0; r < n; ++r) {
    transports.push_back(make_loopback_transport(fabric));
    addresses.push_back(transports.back()->local_address());
  }
  std::vector<std::string> failures(n);
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r) {
    threads.emplace_back([&, r] {
      std::vector<PeerAddr> peers;
      transports[r]->insert_peers(addresses, &peers);
      Schedule s = run.build(r);
      Bytes in = make_input(run.type, run.op, r, run.count);
      Bytes out = run.inplace ? in : Bytes(in.size(), 0xA5);
      std::vector<uint8_t> scratch(s.scratch_bytes), stage(run.stage_bytes);
      HostLocalOps local;
      ExecContext ctx;
      ctx.transport = transports[r].get();
      ctx.local = &local;
      ctx.peers = &peers;
      ctx.rank = r;
      ctx.dtype = run.type;
      ctx.op = run.op;
      ctx.timeout = std::chrono::milliseconds(20000);
      ctx.what = "test schedule";
      ExecBuffers bufs;
      bufs.send = run.inplace ? out.data() : in.data();
      bufs.recv = out.data();
      bufs.scratch = scratch.data();
      bufs.stage = stage.data();
      bufs.send_on_gpu = bufs.recv_on_gpu = bufs.scratch_on_gpu = run.all_gpu;
      Status st = execute_schedule(s, ctx, bufs);
      failures[r] = st.is_ok()
                        ? compare(out, expected_reduction(run.type, run.op, n, run.count), run.type)
                        : st.to_string();
    });
  }
  for (auto& t : threads) t.join();
  return failures;
}

}  // namespace testing
}  // namespace efacoll
