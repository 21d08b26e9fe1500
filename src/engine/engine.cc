#include "efacoll/engine.h"

#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <set>

#include "common/log.h"
#include "gpu/gpu_runtime.h"
#include "transport/mr_cache.h"
#include "transport/tag.h"
#include "transport/transport.h"
#include "tune/algo.h"

namespace efacoll {

Engine::Engine(std::unique_ptr<Transport> transport, const EngineConfig& config)
    : Engine(std::move(transport), config, nullptr) {}

Engine::Engine(std::unique_ptr<Transport> transport, const EngineConfig& config,
               std::unique_ptr<GpuRuntime> gpu)
    : transport_(std::move(transport)), config_(config), gpu_(std::move(gpu)) {
  config_.max_chunk_bytes = std::min(config_.max_chunk_bytes, transport_->info().max_msg_size);
  const TransportInfo& ti = transport_->info();
  // FI_MR_HMEM: device memory is always registered, even for local use.
  if (ti.needs_registration() || config_.force_mr_local || (ti.hmem && gpu_)) {
    mr_cache_ = std::make_unique<MrCache>(transport_.get(), config_.mr_cache_entries);
  }
  if (config_.idle_progress.count() > 0)
    idle_progress_ = std::thread([this] { idle_progress_loop(); });
}

void Engine::idle_progress_loop() {
  while (!stopping_.load(std::memory_order_relaxed)) {
    std::this_thread::sleep_for(config_.idle_progress);
    std::unique_lock<std::mutex> lock(busy_, std::try_to_lock);
    if (!lock.owns_lock()) continue;  // a collective is progressing it
    int completed = 0;
    transport_->progress(&completed);
  }
}

// The progress thread stops first; registrations go before the memory and the transport.
Engine::~Engine() {
  stopping_ = true;
  if (idle_progress_.joinable()) idle_progress_.join();
  mr_cache_.reset();
  if (stage_) gpu_->free_pinned(stage_);
}

const TransportInfo& Engine::transport_info() const { return transport_->info(); }

Status Engine::set_algo(const std::string& spec) {
  AlgoOverrides algo;
  EFACOLL_RETURN_IF_ERROR(parse_algo_overrides(spec, &algo));
  std::lock_guard<std::mutex> busy(busy_);
  config_.algo = algo;
  return Status::ok();
}

// L when the members form nodes of L consecutive ranks each, with more than one node and more
// than one rank per node (what the hierarchical allreduce needs); 0 otherwise.
int equal_contiguous_nodes(const std::vector<std::string>& nodes) {
  const int n = static_cast<int>(nodes.size());
  int per_node = 1;
  while (per_node < n && nodes[per_node] == nodes[0]) ++per_node;
  if (per_node == n || per_node == 1 || n % per_node != 0) return 0;
  std::set<std::string> seen;
  for (int r = 0; r < n; ++r) {
    if (nodes[r] != nodes[(r / per_node) * per_node]) return 0;
    // Each node is one group: a name seen in an earlier group means a node split in two.
    if (r % per_node == 0 && !seen.insert(nodes[r]).second) return 0;
  }
  return per_node;
}

Status Engine::create_comm(Bootstrap& bootstrap, std::unique_ptr<Comm>* out) {
  return create_comm(bootstrap, out, nullptr);
}

Status Engine::create_comm(Bootstrap& bootstrap, std::unique_ptr<Comm>* out,
                           const CostModel* inherit) {
  const int n = bootstrap.size();
  if (static_cast<uint32_t>(n) > kMaxRanksInTag) {
    return Status(Code::kUnsupported, "communicator larger than the tag can address");
  }
  // One blob per rank: which communicator ids are free here, then the endpoint address.
  std::vector<uint8_t> address = transport_->local_address();
  const size_t id_bytes = kMaxCommIds / 8;
  constexpr size_t kHostBytes = 64;
  const size_t blob_bytes = id_bytes + sizeof(uint32_t) + 256 + kHostBytes;
  if (address.size() > 256) return Status(Code::kInternal, "endpoint address too long");
  std::vector<uint8_t> mine(blob_bytes, 0), all(blob_bytes * n);
  for (uint32_t id = 0; id < kMaxCommIds; ++id) {
    if (!comm_ids_in_use_[id]) mine[id / 8] |= static_cast<uint8_t>(1u << (id % 8));
  }
  uint32_t len = static_cast<uint32_t>(address.size());
  std::memcpy(&mine[id_bytes], &len, sizeof(len));
  std::memcpy(&mine[id_bytes + sizeof(len)], address.data(), address.size());
  char host[kHostBytes] = {};
  gethostname(host, kHostBytes - 1);
  const std::string node = config_.node_name.empty() ? host : config_.node_name;
  std::memcpy(&mine[blob_bytes - kHostBytes], node.data(), std::min(node.size(), kHostBytes - 1));
  EFACOLL_RETURN_IF_ERROR(bootstrap.allgather(mine.data(), blob_bytes, all.data()));

  std::vector<uint8_t> free_everywhere(id_bytes, 0xff);
  bool one_node = true;
  std::vector<std::string> nodes(n);
  std::vector<std::vector<uint8_t>> addresses(n);
  for (int r = 0; r < n; ++r) {
    const uint8_t* blob = &all[blob_bytes * r];
    for (size_t i = 0; i < id_bytes; ++i) free_everywhere[i] &= blob[i];
    std::memcpy(&len, blob + id_bytes, sizeof(len));
    addresses[r].assign(blob + id_bytes + sizeof(len), blob + id_bytes + sizeof(len) + len);
    one_node = one_node && std::memcmp(blob + blob_bytes - kHostBytes,
                                       &all[blob_bytes - kHostBytes], kHostBytes) == 0;
    nodes[r] = reinterpret_cast<const char*>(blob + blob_bytes - kHostBytes);
  }
  uint32_t id = kMaxCommIds;
  for (uint32_t i = 0; i < kMaxCommIds && id == kMaxCommIds; ++i) {
    if (free_everywhere[i / 8] & (1u << (i % 8))) id = i;
  }
  // Every member computed the same answer from the same blobs, so all fail or all succeed.
  if (id == kMaxCommIds)
    return Status(Code::kUnsupported, "no communicator id free on every member");

  std::unique_ptr<Comm> comm(new Comm(this, bootstrap.rank(), n, id));
  comm->one_node_ = one_node;
  comm->hier_per_node_ = equal_contiguous_nodes(nodes);
  EFACOLL_RETURN_IF_ERROR(transport_->insert_peers(addresses, &comm->peers_));
  comm_ids_in_use_[id] = true;
  comm->model_ = inherit ? *inherit : config_.model;
  if (config_.tune && config_.calibrate && !inherit) {
    std::lock_guard<std::mutex> busy(busy_);
    EFACOLL_RETURN_IF_ERROR(comm->calibrate());
    EFACOLL_RETURN_IF_ERROR(comm->calibrate_algorithms());
  }
  EFACOLL_INFO(kInit, "communicator %u: rank %d of %d", id, comm->rank_, n);
  *out = std::move(comm);
  return Status::ok();
}

}  // namespace efacoll
