#include "in_process_peers.h"

#include <chrono>
#include <memory>

#include "transport/tag.h"
#include "waiter.h"

namespace efacoll {
namespace testing {
namespace {

// Tags of a communicator id no test creates, so nothing else can take a greeting.
uint64_t greeting_tag(size_t sender, size_t receiver) {
  return make_tag(kMaxCommIds - 1, 0, static_cast<uint32_t>(sender),
                  static_cast<uint32_t>(receiver));
}

}  // namespace

bool needs_in_process_introduction(const std::string& provider) { return provider == "shm"; }

Status introduce_in_process(const std::vector<Transport*>& transports) {
  const size_t n = transports.size();
  std::vector<std::vector<uint8_t>> addresses;
  for (Transport* t : transports) addresses.push_back(t->local_address());
  std::vector<std::vector<PeerAddr>> peers(n);
  for (size_t i = 0; i < n; ++i) {
    Status st = transports[i]->insert_peers(addresses, &peers[i]);
    if (!st.is_ok()) return st;
  }
  // One byte each way per ordered pair; [i * n + j]: i's message to j, and j's receive of it.
  std::vector<uint8_t> out(n * n, 1), in(n * n, 0);
  auto sends = std::make_unique<Waiter[]>(n * n);
  auto recvs = std::make_unique<Waiter[]>(n * n);
  std::vector<bool> posted(n * n, false);
  auto post_sends = [&]() -> Status {
    for (size_t i = 0; i < n; ++i) {
      for (size_t j = 0; j < n; ++j) {
        const size_t k = i * n + j;
        if (i == j || posted[k]) continue;
        Status st = transports[i]->send(peers[i][j], &out[k], 1, greeting_tag(i, j), nullptr,
                                        &sends[k]);
        if (st.is_ok()) posted[k] = true;
        else if (st.code() != Code::kAgain) return st;
      }
    }
    return Status();
  };
  // Every send is posted once before any endpoint progresses: each sends its connection request.
  Status st = post_sends();
  if (!st.is_ok()) return st;
  for (size_t i = 0; i < n; ++i) {
    for (size_t j = 0; j < n; ++j) {
      if (i == j) continue;
      const size_t k = i * n + j;
      st = transports[j]->recv(peers[j][i], &in[k], 1, greeting_tag(i, j), nullptr, &recvs[k]);
      if (!st.is_ok()) return st;
    }
  }
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (std::chrono::steady_clock::now() < until) {
    int completed = 0;
    for (Transport* t : transports) {
      st = t->progress(&completed);
      if (!st.is_ok()) return st;
    }
    st = post_sends();
    if (!st.is_ok()) return st;
    bool all = true;
    for (size_t k = 0; k < n * n; ++k) {
      if (k / n == k % n) continue;
      if (sends[k].done && !sends[k].status.is_ok()) return sends[k].status;
      if (recvs[k].done && !recvs[k].status.is_ok()) return recvs[k].status;
      all = all && sends[k].done && recvs[k].done;
    }
    if (all) return Status();
  }
  return Status(Code::kTimeout, "in-process endpoints were not introduced within 20 s");
}

}  // namespace testing
}  // namespace efacoll
