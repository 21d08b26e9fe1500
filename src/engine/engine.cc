#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <set>

#include "common/kept_alive.h"
#include "common/log.h"
#include "core/late_sends.h"
#include "engine/comm_core.h"
#include "engine/engine_core.h"
#include "engine/gpu_memory_to_free.h"
#include "engine/ipc_mappings.h"
#include "engine/stage_pool.h"
#include "gpu/gpu_runtime.h"
#include "transport/mr_cache.h"
#include "transport/tag.h"
#include "transport/transport.h"
#include "tune/algo.h"

namespace efacoll {
namespace {

constexpr size_t kIpcMappingsKept = 64;  // peers' user buffers kept mapped between calls
// A notice told again waits 200 ms at most (PeerWatch::tell_again_later); then its delivery.
constexpr auto kLateNoticesAtClose = std::chrono::milliseconds(500);

}  // namespace

EngineCore::EngineCore(std::unique_ptr<Transport> transport, const EngineConfig& config,
                       std::unique_ptr<GpuRuntime> gpu)
    : transport_(std::move(transport)),
      config_(config),
      gpu_(std::move(gpu)),
      late_sends_(std::make_unique<LateSends>(transport_.get())),
      retired_(std::make_unique<RetiredMemory>()) {
  config_.max_chunk_bytes = std::min(config_.max_chunk_bytes, transport_->info().max_msg_size);
  const TransportInfo& ti = transport_->info();
  // FI_MR_HMEM: device memory is always registered, even for local use.
  if (ti.needs_registration() || config_.force_mr_local || (ti.hmem && gpu_)) {
    mr_cache_ = std::make_unique<MrCache>(transport_.get(), config_.mr_cache_entries);
  }
  if (gpu_) {
    GpuRuntime* rt = gpu_.get();
    unused_gpu_memory_ = std::make_unique<GpuMemoryToFree>();
    retired_->gpu = std::make_unique<GpuMemoryToFree>();
    ipc_mappings_ = std::make_unique<IpcMappings>(
        [rt](const void* handle, void** out) { return rt->ipc_open(handle, out); },
        [this](void* mapped) { give_back_gpu_memory(GpuMemoryToFree::ipc_mapping(mapped)); },
        kIpcMappingsKept, [this] { close_ipc_mappings_now(); });
    // Unique among the engines of one node (processes, or ranks as threads in the tests).
    std::random_device entropy;
    process_key_ = (uint64_t(entropy()) << 32 | entropy()) ^ uint64_t(getpid());
    StagePool::Memory memory;
    memory.alloc = [rt](size_t bytes, void** out) { return rt->alloc_pinned(bytes, out); };
    memory.free = [this](void* ptr, size_t bytes) {
      give_back_gpu_memory(GpuMemoryToFree::pinned_memory(ptr, bytes));
    };
    memory.next_id = [this] { return next_allocation_id_++; };
    memory.forget = [this](uint64_t id) {
      if (mr_cache_) mr_cache_->forget(id);
    };
    stages_ = std::make_unique<StagePool>(std::move(memory));
  }
  if (config_.idle_progress.count() > 0)
    idle_progress_ = std::thread([this] { idle_progress_loop(); });
  if (config_.timeout.count() > 0) watchdog_ = std::thread([this] { watchdog_loop(); });
}

void EngineCore::give_back_gpu_memory(GpuMemoryToFree memory) {
  unused_gpu_memory_->append(&memory);
  free_unused_gpu_memory();
}

// Under the lock, with no low-latency kernel of this engine under way, none can start meanwhile:
// the free waits only for work that ends by itself (copies, the application's kernels).
void EngineCore::free_unused_gpu_memory() {
  if (ll_kernels_under_way_ > 0 || !unused_gpu_memory_ || unused_gpu_memory_->empty()) return;
  unused_gpu_memory_->free_all(gpu_.get());
}

void EngineCore::ll_kernel_ended() {
  --ll_kernels_under_way_;
  free_unused_gpu_memory();
}

void EngineCore::comm_freed(uint32_t id, bool nested) {
  comm_ids_in_use_[id] = false;
  if (nested) --nested_comms_;
}

void EngineCore::close_ipc_mappings_now() {
  if (unused_gpu_memory_) unused_gpu_memory_->close_ipc_mappings(gpu_.get());
}

void EngineCore::idle_progress_loop() {
  while (!stopping_.load(std::memory_order_relaxed)) {
    std::this_thread::sleep_for(config_.idle_progress);
    std::unique_lock<std::mutex> lock(busy_, std::try_to_lock);
    if (!lock.owns_lock()) continue;  // a collective is progressing it
    late_sends_->retry();
    int completed = 0;
    transport_->progress(&completed);
  }
}

// The threads stop first; registrations go before the memory and the transport, and memory
// that late writes may still reach only after the transport.
EngineCore::~EngineCore() {
  {
    std::lock_guard<std::mutex> lock(watchdog_mutex_);
    stopping_ = true;
  }
  watchdog_wake_.notify_all();
  if (idle_progress_.joinable()) idle_progress_.join();
  if (watchdog_.joinable()) watchdog_.join();
  late_sends_->flush(kLateNoticesAtClose);
  mr_cache_.reset();
  stages_.reset();        // its frees come back here (give_back_gpu_memory)
  ipc_mappings_.reset();  // and its closes
  free_unused_gpu_memory();
  if (retired_->bytes_held == 0) return;
  late_sends_.reset();
  if (transport_->holds_operations()) {
    // The provider stays open (~FabricTransport), and may still write what was retired.
    for (auto& memory : retired_->host)
      keep_alive(std::make_unique<std::vector<uint8_t>>(std::move(memory)));
    retired_->host.clear();
    return;
  }
  transport_.reset();
  free_retired_memory();
}

const TransportInfo& EngineCore::transport_info() const { return transport_->info(); }

const char* EngineCore::last_algorithm() const {
  std::lock_guard<std::mutex> lock(last_mutex_);
  return last_algorithm_;
}

TunedChoice EngineCore::last_choice() const {
  std::lock_guard<std::mutex> lock(last_mutex_);
  return last_choice_;
}

void EngineCore::record_call(const TunedChoice& choice, const char* algorithm) {
  std::lock_guard<std::mutex> lock(last_mutex_);
  last_choice_ = choice;
  last_algorithm_ = algorithm;
}

Status EngineCore::set_algo(const std::string& spec) {
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

namespace {

// busy_, for the engine's own state, unless this thread holds it already: a creation nested in
// a collective of its parent.
class StateLock {
 public:
  StateLock(std::mutex& m, bool held) : lock_(m, std::defer_lock) {
    if (!held) lock_.lock();
  }

 private:
  std::unique_lock<std::mutex> lock_;
};

// The round's choice among the ids free on every member: the lowest first; later rounds (after
// a clash with another thread's creation) a pseudo-random one, so that two creations that took
// the same id from each other on different processes part ways.
uint32_t pick_comm_id(const std::vector<uint8_t>& free_everywhere, int round, uint32_t nonce) {
  std::vector<uint32_t> ids;
  for (uint32_t i = 0; i < kMaxCommIds; ++i) {
    if (free_everywhere[i / 8] & (1u << (i % 8))) ids.push_back(i);
  }
  if (ids.empty()) return kMaxCommIds;
  if (round == 0) return ids[0];
  const uint64_t h = (static_cast<uint64_t>(nonce) + round) * 0x9E3779B97F4A7C15ull;
  return ids[(h >> 32) % ids.size()];
}

}  // namespace

void EngineCore::offer_comm_ids(uint8_t* bitmap, bool nested) {
  StateLock lock(busy_, nested);
  for (uint32_t id = 0; id < kMaxCommIds; ++id) {
    if (!comm_ids_in_use_[id] && !comm_ids_reserved_[id])
      bitmap[id / 8] |= static_cast<uint8_t>(1u << (id % 8));
  }
}

// Without concurrent creations, an id free everywhere when offered is still free. With them,
// a second round confirms that no other creation on any member took it in the meantime.
bool EngineCore::take_comm_id(Bootstrap& bootstrap, uint32_t id, bool nested, Status* st) {
  if (!config_.concurrent) {
    StateLock lock(busy_, nested);
    comm_ids_in_use_[id] = true;
    return true;
  }
  uint8_t ok = 0;
  {
    StateLock lock(busy_, nested);
    ok = !comm_ids_in_use_[id] && !comm_ids_reserved_[id];
    if (ok) comm_ids_reserved_[id] = true;
  }
  std::vector<uint8_t> oks(bootstrap.size());
  *st = bootstrap.allgather(&ok, 1, oks.data());
  const bool all = st->is_ok() && std::all_of(oks.begin(), oks.end(), [](uint8_t v) { return v; });
  StateLock lock(busy_, nested);
  if (ok) comm_ids_reserved_[id] = false;
  if (all) comm_ids_in_use_[id] = true;
  return all;
}

// Every member computes the same choice from the same blobs, so all fail or all succeed, after
// the same number of rounds.
Status EngineCore::agree_comm_id(Bootstrap& over, bool nested, const std::vector<uint8_t>& payload,
                                 std::vector<uint8_t>* payloads, uint32_t* out) {
  const int n = over.size();
  // One blob per member: which communicator ids are free there, a random number, the payload.
  const size_t id_bytes = kMaxCommIds / 8, payload_at = id_bytes + sizeof(uint32_t);
  const size_t blob_bytes = payload_at + payload.size();
  std::vector<uint8_t> mine(blob_bytes, 0), all(blob_bytes * n);
  const uint32_t nonce = static_cast<uint32_t>(std::random_device()());
  std::memcpy(&mine[id_bytes], &nonce, sizeof(nonce));
  std::copy(payload.begin(), payload.end(), mine.begin() + payload_at);
  constexpr int kIdRounds = 8;
  for (int round = 0; round < kIdRounds; ++round) {
    std::fill(mine.begin(), mine.begin() + id_bytes, 0);
    offer_comm_ids(mine.data(), nested);
    EFACOLL_RETURN_IF_ERROR(over.allgather(mine.data(), blob_bytes, all.data()));
    std::vector<uint8_t> free_everywhere(id_bytes, 0xff);
    for (int r = 0; r < n; ++r) {
      for (size_t i = 0; i < id_bytes; ++i) free_everywhere[i] &= all[blob_bytes * r + i];
    }
    uint32_t rank0_nonce = 0;
    std::memcpy(&rank0_nonce, &all[id_bytes], sizeof(rank0_nonce));
    const uint32_t pick = pick_comm_id(free_everywhere, round, rank0_nonce);
    if (pick == kMaxCommIds) break;
    Status st;
    const bool taken = take_comm_id(over, pick, nested, &st);
    EFACOLL_RETURN_IF_ERROR(st);
    if (taken) {
      payloads->resize(payload.size() * n);
      for (int r = 0; r < n; ++r) {
        std::copy_n(&all[blob_bytes * r + payload_at], payload.size(),
                    payloads->begin() + payload.size() * r);
      }
      *out = pick;
      return Status::ok();
    }
  }
  return Status(Code::kUnsupported, "no communicator id free on every member");
}

Status EngineCore::create_comm(Bootstrap& bootstrap, std::unique_ptr<CommCore>* out,
                               const CostModel* inherit, Bootstrap* ids_over) {
  const int n = bootstrap.size();
  if (static_cast<uint32_t>(n) > kMaxRanksInTag) {
    return Status(Code::kUnsupported, "communicator larger than the tag can address");
  }
  const bool nested = inherit != nullptr;
  std::vector<uint8_t> address;
  {
    StateLock lock(busy_, nested);
    address = transport_->local_address();
  }
  if (address.size() > 256) return Status(Code::kInternal, "endpoint address too long");
  // One blob per rank: the endpoint address and the node. It rides with the id's rounds where
  // the same members agree on the id; else it takes an allgather of its own afterwards.
  constexpr size_t kHostBytes = 64;
  const size_t len_at = 0, blob_bytes = sizeof(uint32_t) + 256 + kHostBytes;
  std::vector<uint8_t> mine(blob_bytes, 0), all;
  uint32_t len = static_cast<uint32_t>(address.size());
  std::memcpy(&mine[len_at], &len, sizeof(len));
  std::memcpy(&mine[len_at + sizeof(len)], address.data(), address.size());
  char host[kHostBytes] = {};
  gethostname(host, kHostBytes - 1);
  const std::string node = config_.node_name.empty() ? host : config_.node_name;
  std::memcpy(&mine[blob_bytes - kHostBytes], node.data(), std::min(node.size(), kHostBytes - 1));
  uint32_t id = kMaxCommIds;
  if (!ids_over) {
    EFACOLL_RETURN_IF_ERROR(agree_comm_id(bootstrap, nested, mine, &all, &id));
  } else {
    std::vector<uint8_t> none;
    EFACOLL_RETURN_IF_ERROR(agree_comm_id(*ids_over, nested, {}, &none, &id));
  }
  // Counted with its id: the exchange below lends the parent's lock, and a count taken meanwhile
  // must not see the id as a caller's communicator.
  if (nested) ++nested_comms_;
  if (ids_over) {
    all.resize(blob_bytes * n);
    Status exchanged = bootstrap.allgather(mine.data(), blob_bytes, all.data());
    if (!exchanged.is_ok()) {
      StateLock lock(busy_, nested);
      comm_ids_in_use_[id] = false;
      if (nested) --nested_comms_;
      return exchanged;
    }
  }

  bool one_node = true;
  std::vector<std::string> nodes(n);
  std::vector<std::vector<uint8_t>> addresses(n);
  for (int r = 0; r < n; ++r) {
    const uint8_t* blob = &all[blob_bytes * r];
    std::memcpy(&len, blob + len_at, sizeof(len));
    addresses[r].assign(blob + len_at + sizeof(len), blob + len_at + sizeof(len) + len);
    one_node = one_node && std::memcmp(blob + blob_bytes - kHostBytes,
                                       &all[blob_bytes - kHostBytes], kHostBytes) == 0;
    nodes[r] = reinterpret_cast<const char*>(blob + blob_bytes - kHostBytes);
  }

  // From here the id is ours: the communicator gives it back when it goes (comm_freed).
  CommCore::Setup setup;
  setup.rank = bootstrap.rank();
  setup.size = n;
  setup.id = id;
  setup.nested = nested;
  setup.one_node = one_node;
  setup.hier_per_node = equal_contiguous_nodes(nodes);
  setup.model = inherit ? *inherit : config_.model;
  {
    StateLock lock(busy_, nested);
    Status st = transport_->insert_peers(addresses, &setup.peers);
    if (!st.is_ok()) {
      comm_freed(id, nested);
      return st;
    }
  }
  auto comm = std::make_unique<CommCore>(this, std::move(setup));
  if (config_.tune && config_.calibrate && !inherit) {
    std::unique_lock<std::mutex> busy(busy_);
    Status st = comm->calibrate_at_creation(busy);
    busy.unlock();  // before ~CommCore on failure, which takes it
    EFACOLL_RETURN_IF_ERROR(st);
  }
  EFACOLL_INFO(kInit, "communicator %u: rank %d of %d", id, comm->rank(), n);
  *out = std::move(comm);
  return Status::ok();
}

ResourceUsage EngineCore::resource_usage() {
  std::lock_guard<std::mutex> busy(busy_);
  ResourceUsage u;
  u.communicators = comm_ids_in_use_.count() - nested_comms_;
  u.sub_communicators = nested_comms_;
  if (mr_cache_) {
    u.mr_cache_entries = mr_cache_->cached();
    u.mr_cache_bytes = mr_cache_->cached_bytes();
    u.mr_cache_capacity = mr_cache_->capacity();
    u.registrations = mr_cache_->registrations();
  }
  u.retired_bytes_held = retired_->bytes_held;
  u.retired_bytes_total = retired_->bytes_total;
  if (unused_gpu_memory_) {
    u.gpu_bytes_awaiting_free = unused_gpu_memory_->bytes();
    u.ipc_mappings_awaiting_close = unused_gpu_memory_->ipc_mappings();
  }
  if (ipc_mappings_) {
    u.ipc_mappings_cached = ipc_mappings_->cached();
    u.ipc_mappings_capacity = kIpcMappingsKept;
  }
  return u;
}

}  // namespace efacoll
