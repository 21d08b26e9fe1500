#include "thread_ranks.h"

#include <chrono>
#include <cstring>
#include <thread>

#include "gpu/gpu_runtime.h"
#include "in_process_peers.h"
#include "reference.h"
#include "transport/fabric/fabric_info.h"
#include "transport/fabric/fabric_transport.h"
#include "transport/loopback/loopback_transport.h"

namespace efacoll {
namespace testing {

void ThreadGroup::barrier() {
  std::unique_lock<std::mutex> lock(mutex_);
  unsigned gen = generation_;
  if (++arrived_ == n_) {
    arrived_ = 0;
    ++generation_;
    cv_.notify_all();
    return;
  }
  cv_.wait(lock, [&] { return generation_ != gen; });
}

Status ThreadGroup::allgather(int rank, const void* in, size_t bytes, void* out) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto* p = static_cast<const uint8_t*>(in);
    slots_[rank].assign(p, p + bytes);
  }
  barrier();
  for (int r = 0; r < n_; ++r) {
    std::memcpy(static_cast<uint8_t*>(out) + r * bytes, slots_[r].data(), bytes);
  }
  barrier();
  return Status::ok();
}

void wait_until(const std::atomic<int>& value, int at_least) {
  while (value.load() < at_least) std::this_thread::sleep_for(std::chrono::milliseconds(5));
}

bool provider_available(const std::string& name) {
  FiInfoPtr info;
  return find_provider(name, &info).is_ok();
}

std::vector<std::string> run_ranks(int n, const RankSetup& setup, const RankBody& body) {
  auto group = std::make_shared<ThreadGroup>(n);
  auto loopback = make_loopback_fabric();
  // Every rank's transport is opened here, before the ranks start, so that in-process endpoints
  // can be introduced in one thread (in_process_peers.h).
  std::vector<std::unique_ptr<Transport>> transports(n);
  std::vector<Transport*> opened;
  for (int r = 0; r < n; ++r) {
    if (setup.transport == "loopback") {
      transports[r] = make_loopback_transport(loopback);
      continue;
    }
    FiInfoPtr info;
    Status st = find_provider(setup.transport, &info);
    if (st.is_ok()) st = open_fabric_transport(info.get(), setup.fabric, &transports[r]);
    if (!st.is_ok()) return {"rank " + std::to_string(r) + ": " + st.to_string()};
    opened.push_back(transports[r].get());
  }
  if (needs_in_process_introduction(setup.transport)) {
    Status st = introduce_in_process(opened);
    if (!st.is_ok()) return {"introducing the ranks' endpoints: " + st.to_string()};
  }
  std::vector<std::vector<std::string>> failures(n);
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r) {
    threads.emplace_back([&, r] {
      std::unique_ptr<Transport> transport = std::move(transports[r]);
      if (setup.wrap) transport = setup.wrap(r, std::move(transport));
      EngineConfig config = setup.config;
      if (setup.node_size > 0) config.node_name = "node " + std::to_string(r / setup.node_size);
      if (setup.adjust) setup.adjust(r, &config);
      Engine engine(std::move(transport), config, setup.gpu ? setup.gpu(r) : nullptr);
      ThreadBootstrap bootstrap(group, r);
      std::unique_ptr<Comm> comm;
      Status st = engine.create_comm(bootstrap, &comm);
      if (!st.is_ok()) {
        failures[r].push_back("create_comm: " + st.to_string());
        return;
      }
      RankContext ctx{r, n, engine, bootstrap, *comm, &failures[r]};
      body(ctx);
      if (!setup.close_together) return;
      // Keep every endpoint open until all ranks are done with it.
      uint8_t dummy = 0;
      std::vector<uint8_t> all(n);
      bootstrap.allgather(&dummy, 1, all.data());
    });
  }
  for (auto& t : threads) t.join();
  std::vector<std::string> all;
  for (auto& f : failures) all.insert(all.end(), f.begin(), f.end());
  return all;
}

namespace {

std::string compare_int32_sum(const Bytes& got, int nranks, size_t count) {
  return compare(got, expected_reduction(DType::kInt32, ROp::kSum, nranks, count), DType::kInt32);
}

}  // namespace

Status run_int32_sum(Comm& comm, size_t count, const uint8_t* send, MemKind send_memory,
                     uint8_t* recv, MemKind recv_memory) {
  const bool in_place = send == nullptr;
  CollArgs a;
  a.kind = CollKind::kAllreduce;
  a.sendbuf = in_place ? nullptr : send;
  a.recvbuf = recv;
  a.count = count;
  a.dtype = DType::kInt32;
  a.op = ROp::kSum;
  a.inplace = in_place;
  if (!in_place) a.send_mem = send_memory;
  a.recv_mem = recv_memory;
  if (is_gpu(recv_memory) || (!in_place && is_gpu(send_memory))) a.device = 0;
  return comm.run(a);
}

std::string check_allreduce_in_place(Comm& comm, int rank, int nranks, size_t count,
                                     MemKind memory) {
  Bytes buf = make_input(DType::kInt32, ROp::kSum, rank, count);
  const Status st = run_int32_sum(comm, count, nullptr, MemKind::kHost, buf.data(), memory);
  return st.is_ok() ? compare_int32_sum(buf, nranks, count) : st.to_string();
}

std::string check_allreduce(Comm& comm, int rank, int nranks, size_t count, MemKind send_memory,
                            MemKind recv_memory) {
  const Bytes input = make_input(DType::kInt32, ROp::kSum, rank, count);
  Bytes send = input, recv(input.size(), 0x5a);
  const Status st = run_int32_sum(comm, count, send.data(), send_memory, recv.data(), recv_memory);
  if (!st.is_ok()) return st.to_string();
  if (send != input) return "the send buffer changed";
  return compare_int32_sum(recv, nranks, count);
}

std::string check_allgather(Comm& comm, int rank, int nranks, size_t count, MemKind memory) {
  const Bytes input = make_input(DType::kInt32, ROp::kSum, rank, count);
  Bytes send = input, recv(input.size() * nranks, 0x5a), want;
  for (int r = 0; r < nranks; ++r) {
    const Bytes part = make_input(DType::kInt32, ROp::kSum, r, count);
    want.insert(want.end(), part.begin(), part.end());
  }
  CollArgs a;
  a.kind = CollKind::kAllgather;
  a.sendbuf = send.data();
  a.recvbuf = recv.data();
  a.count = count;
  a.dtype = DType::kInt32;
  a.send_mem = a.recv_mem = memory;
  a.device = 0;
  const Status st = comm.run(a);
  if (!st.is_ok()) return st.to_string();
  if (send != input) return "the send buffer changed";
  return compare(recv, want, DType::kInt32);
}

}  // namespace testing
}  // namespace efacoll
