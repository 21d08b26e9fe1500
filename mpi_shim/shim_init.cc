// MPI_Init / MPI_Init_thread / MPI_Finalize: steer the host MPI onto EFA, open the fabric
// (EFA unless another provider is named), and tear everything down before MPI goes away.
#include <algorithm>
#include <cstdlib>
#include <fstream>

#include "common/log.h"
#include "gpu/gpu_runtime.h"
#include "gpu/memory_kind.h"
#include "mpi_shim/shim.h"
#include "policy/efa_presence.h"
#include "policy/fork_safety.h"
#include "policy/gdr_policy.h"
#include "policy/gdr_trial.h"
#include "policy/host_mpi_steering.h"
#include "policy/provider_policy.h"
#include "topo/topology.h"
#include "transport/fabric/fabric_info.h"
#include "transport/fabric/fabric_transport.h"
#include "transport/multirail/multirail_transport.h"
#include "transport/transport.h"
#include "tune/algo.h"
#include "tune/cost_model.h"
#include "tune/trials.h"

namespace efacoll {
namespace shim {
namespace {

// MPI_Get_library_version's text (callable before MPI_Init), read once.
const std::string& mpi_library_version() {
  static const std::string version = [] {
    char text[MPI_MAX_LIBRARY_VERSION_STRING] = "";
    int len = 0;
    PMPI_Get_library_version(text, &len);
    return std::string(text);
  }();
  return version;
}

void configure_before_mpi(const EnvMap& env) {
  State& s = state();
  s.params = std::make_unique<Params>(Params::from_env(env));
  const Params& p = *s.params;
  log_configure(parse_log_config(p.text(Param::kDebug), p.text(Param::kDebugSubsys),
                                 p.text(Param::kDebugFile)));
  for (const auto& problem : p.problems()) EFACOLL_WARN(kEnv, "%s", problem.c_str());
  if (!p.flag(Param::kEnable)) return;
  // The application's own CUDA context, read before anything loads libfabric: efa's GPUDirect
  // probe (the host MPI's in PMPI_Init, ours in open_transport) makes device 0 current.
  rank_gpu_from_context();

  // Before PMPI_Init: the MPI's own libfabric reads these once, and so does ours later. Still
  // a single thread here, so setenv races with no getenv.
  std::vector<std::string> efa = efa_devices("/sys");
  SteeringPlan fork = plan_fork_safety(!efa.empty(), env);
  for (const auto& kv : fork.set) setenv(kv.first.c_str(), kv.second.c_str(), 0);
  for (const auto& m : fork.messages) EFACOLL_INFO(kEnv, "%s", m.c_str());
  if (!p.flag(Param::kSteerMpi)) return;

  SteeringPlan plan =
      plan_host_mpi_steering(detect_mpi_flavor(mpi_library_version()), !efa.empty(), env);
  for (const auto& kv : plan.set) setenv(kv.first.c_str(), kv.second.c_str(), 0);
  for (const auto& m : plan.messages) EFACOLL_INFO(kEnv, "host MPI: %s", m.c_str());
}

// What open_transport found, for the INFO lines.
struct FabricFound {
  std::string nic_why;
  std::string hmem_why;          // why GPU data is staged though the provider offered FI_HMEM
  std::string gpu_registration;  // how the trial registered GPU memory ("dma-buf", "address")
};

Status fabric_options(const Params& p, GpuRuntime* gpu, FabricOptions* options) {
  const std::string protocol = p.text(Param::kProtocol);
  if (protocol == "send")
    options->protocol = Protocol::kSendRecv;
  else if (protocol == "rdma")
    options->protocol = Protocol::kRdma;
  else if (protocol != "auto")
    return Status(Code::kInvalid, "EFACOLL_PROTOCOL must be auto, send or rdma");
  options->rdma_threshold =
      static_cast<size_t>(std::max<int64_t>(1, p.integer(Param::kRdmaThreshold)));
  std::string why_not;
  if (gpu && !register_gpu_memory_by_dmabuf(current_cuda_device(), options, &why_not))
    EFACOLL_INFO(kNet, "GPU memory registers by address: %s", why_not.c_str());
  return Status::ok();
}

// One endpoint on each of `domains` (the provider's first where empty), messages striped over
// several by tag; FI_HMEM asked where `hmem`.
Status open_rails(const std::string& provider, const std::vector<std::string>& domains, bool hmem,
                  const FabricOptions& options, std::unique_ptr<Transport>* out) {
  std::vector<std::unique_ptr<Transport>> rails;
  for (size_t d = 0; d < std::max<size_t>(1, domains.size()); ++d) {
    FiInfoPtr info;
    EFACOLL_RETURN_IF_ERROR(
        find_provider(provider, &info, hmem, domains.empty() ? "" : domains[d]));
    rails.emplace_back();
    EFACOLL_RETURN_IF_ERROR(open_fabric_transport(info.get(), options, &rails.back()));
  }
  if (rails.size() == 1)
    *out = std::move(rails[0]);
  else
    *out = std::make_unique<MultiRailTransport>(std::move(rails));
  return Status::ok();
}

// FI_HMEM is asked of every provider where GPU buffers may come (EFACOLL_HMEM), and used only
// where a GPU registration through it succeeds; else the transport opens again without it, so
// that host traffic runs on the provider's ordinary endpoint.
Status choose_hmem(const Params& p, GpuRuntime* gpu, const std::string& provider,
                   const std::vector<std::string>& domains, const FabricOptions& options,
                   std::unique_ptr<Transport>* out, FabricFound* found) {
  const std::string mode = p.text(Param::kHmem);
  if (mode != "auto" && mode != "on" && mode != "off")
    return Status(Code::kInvalid, "EFACOLL_HMEM=" + mode + ": expected auto, on or off");
  if (mode == "on" && !gpu)
    return Status(Code::kUnsupported, "EFACOLL_HMEM=on, but this process has no usable GPU");
  if (!gpu || mode == "off") return open_rails(provider, domains, false, options, out);
  EFACOLL_RETURN_IF_ERROR(open_rails(provider, domains, true, options, out));
  const TransportInfo& ti = (*out)->info();
  std::string why_not;
  if (!ti.hmem) {
    why_not = ti.hmem_note.empty()
                  ? "offers no FI_HMEM with libfabric " + ti.version +
                        " (tcp and udp have none; shm and efa need a libfabric built with CUDA)"
                  : ti.hmem_note;
  } else {
    // The application's device where it chose one before MPI_Init (shim_nic.cc), else the one
    // its local rank will take: no context is made on device 0 for every rank.
    const int app_device = rank_gpu_from_context().empty() ? -1 : current_cuda_device();
    const int device = trial_device(app_device, state().local_rank, cuda_device_count());
    GpuRegistrationTrial trial = try_gpu_registration(out->get(), gpu, device);
    if (trial.ok) {
      found->gpu_registration = trial.how;
      return Status::ok();
    }
    why_not = "offers FI_HMEM, but registering GPU memory (device " + std::to_string(device) +
              ") through it failed: " + trial.error;
  }
  if (mode == "on")
    return Status(Code::kUnsupported, "EFACOLL_HMEM=on, but provider " + provider + " " + why_not);
  found->hmem_why = why_not;
  // An endpoint opened from an info without FI_HMEM is the ordinary one already.
  if (!ti.hmem && ti.hmem_note.empty()) return Status::ok();
  out->reset();
  return open_rails(provider, domains, false, options, out);
}

// The provider the policy allows, opened; or the one clear error.
Status open_transport(const Params& p, GpuRuntime* gpu, const Topology& topo,
                      std::unique_ptr<Transport>* out, FabricFound* found) {
  const std::string requested = p.text(Param::kProvider);
  const std::vector<std::string> domains = offered_domains(requested);
  const NicChoice nic = choose_rank_nic(p.text(Param::kNic), domains, topo);
  found->nic_why = nic.why;
  for (const std::string& d : nic.domains) {
    if (std::find(domains.begin(), domains.end(), d) != domains.end()) continue;
    std::string list;
    for (const std::string& o : domains) list += (list.empty() ? "" : ", ") + o;
    return Status(Code::kUnsupported,
                  "EFACOLL_NIC=" + d + ": provider " + requested +
                      " has no such domain (it offers: " + (list.empty() ? "none" : list) + ")");
  }
  FiInfoPtr info;
  const std::string first_domain = nic.domains.empty() ? "" : nic.domains[0];
  Status offered = find_provider(requested, &info, false, first_domain);
  const char* fi_provider = std::getenv("FI_PROVIDER");
  ProviderDecision decision = decide_provider(requested, offered.is_ok(), offered_providers(),
                                              fi_provider ? fi_provider : "");
  if (!decision.ok) return Status(Code::kUnsupported, decision.error);
  if (!decision.warning.empty() && state().world_rank == 0) {
    EFACOLL_WARN(kInit, "%s", decision.warning.c_str());
  }
  FabricOptions options;
  EFACOLL_RETURN_IF_ERROR(fabric_options(p, gpu, &options));
  return choose_hmem(p, gpu, requested, nic.domains, options, out, found);
}

// EFACOLL_TUNE: the cost model's source. product: the EC2 instance type, when known.
Status tune_config(const std::string& tune, const std::string& product, EngineConfig* config) {
  if (tune == "off") {
    config->tune = false;
    return Status::ok();
  }
  if (tune == "calibrate") {
    config->calibrate = true;
    return platform_model("local", &config->model);  // until each communicator has measured
  }
  if (tune == "auto") {
    const std::string platform = product.rfind("p5", 0) == 0    ? "p5"
                                 : product.rfind("p4d", 0) == 0 ? "p4d"
                                                                : "local";
    return platform_model(platform, &config->model);
  }
  if (tune.rfind("file:", 0) == 0) {
    Status st = load_model_file(tune.substr(5), &config->model);
    if (!st.is_ok()) return Status(Code::kInvalid, "EFACOLL_TUNE=" + tune + ": " + st.message());
    return Status::ok();
  }
  Status st = platform_model(tune, &config->model);
  if (!st.is_ok()) {
    return Status(Code::kInvalid, "EFACOLL_TUNE=" + tune + ": expected auto, off, calibrate, " +
                                      "p4d, p5, local or file:PATH");
  }
  return Status::ok();
}

// kInvalid when EFACOLL_ALGO cannot be read: MPI_Init reports it rather than guess.
Status engine_config(const Params& p, const Topology& topo, EngineConfig* out) {
  EngineConfig& config = *out;
  EFACOLL_RETURN_IF_ERROR(parse_algo_overrides(p.text(Param::kAlgo), &config.algo));
  EFACOLL_RETURN_IF_ERROR(tune_config(p.text(Param::kTune), topo.product, &config));
  EFACOLL_RETURN_IF_ERROR(parse_tune_trials(p.text(Param::kTuneTrials),
                                            config.tune && config.calibrate, &config.tune_trials));
  config.chunk_bytes = static_cast<size_t>(std::max<int64_t>(1, p.integer(Param::kChunkSize)));
  config.chunk_forced = p.is_set(Param::kChunkSize);
  if (p.integer(Param::kChannels) < 0 || p.integer(Param::kChannels) > 64) {
    return Status(Code::kInvalid, "EFACOLL_CHANNELS=" + p.text(Param::kChannels) +
                                      ": expected 0 (the tuner picks) to 64");
  }
  config.channels = static_cast<int>(p.integer(Param::kChannels));
  config.rd_max_bytes = static_cast<size_t>(p.integer(Param::kRdMaxBytes));
  config.timeout = std::chrono::milliseconds(p.integer(Param::kTimeout) * 1000);
  config.force_mr_local = p.flag(Param::kForceMrLocal);
  config.mr_cache_entries =
      static_cast<size_t>(std::max<int64_t>(1, p.integer(Param::kMrCacheEntries)));
  config.stage_slots = static_cast<int>(std::max<int64_t>(1, p.integer(Param::kStageSlots)));
  const std::string flush = p.text(Param::kGdrFlush);
  if (flush == "auto")
    config.gdr_flush = EngineConfig::GdrFlush::kAuto;
  else if (flush == "1")
    config.gdr_flush = EngineConfig::GdrFlush::kOn;
  else if (flush == "0")
    config.gdr_flush = EngineConfig::GdrFlush::kOff;
  else
    return Status(Code::kInvalid, "EFACOLL_GDR_FLUSH=" + flush + ": expected auto, 1 or 0");
  config.gpu_host_path_max = static_cast<size_t>(p.integer(Param::kGpuHostPathMax));
  config.ipc_chunk_bytes = static_cast<size_t>(p.integer(Param::kIpcChunkSize));
  config.ipc_direct = p.flag(Param::kIpcDirect);
  config.hier_ipc = p.flag(Param::kHierIpc);
  config.ipc_ll_seq_start =
      static_cast<uint64_t>(std::max<int64_t>(0, p.integer(Param::kIpcLlSeqStart)));
  config.ipc_ll_max_bytes = static_cast<size_t>(p.integer(Param::kIpcLlMax));
  config.ipc_ll_lend = p.flag(Param::kIpcLlLend);
  config.idle_progress =
      std::chrono::microseconds(std::max<int64_t>(0, p.integer(Param::kIdleProgressUs)));
  // Calls of several threads at once: the user's under MPI_THREAD_MULTIPLE, and at every level
  // the workers of nonblocking calls (call_queue.h) beside the caller's blocking calls on other
  // communicators, which the ranks may order differently: a call waiting for its peers lends the
  // engine's lock. (The shim itself takes no lock below MPI_THREAD_MULTIPLE, engine_lock().)
  config.concurrent = true;
  return Status::ok();
}

// The GPU path on the fabric, in words: GPUDirect RDMA only where EFA said so.
std::string fabric_gpu_path(const TransportInfo& ti, const FabricFound& found) {
  if (!ti.hmem) return "staged through pinned host memory";
  const std::string registered = " (GPU memory registered by " + found.gpu_registration + ")";
  if (ti.gpudirect) return "direct, GPUDirect RDMA" + registered;
  return "direct, device pointers to the provider" + registered;
}

void log_what_is_used(const Params& p, const std::string& gpu_note, const FabricFound& found) {
  const TransportInfo& ti = state().engine->transport_info();
  const std::string& version = mpi_library_version();
  const std::string mpi = version.substr(0, version.find_first_of(",\n"));
  const bool gpu = state().engine->gpu() != nullptr;
  std::string hmem = ti.hmem ? "yes" : "no";
  if (!found.hmem_why.empty())
    hmem += " (" + found.hmem_why + ")";
  else if (!ti.hmem_note.empty())
    hmem += " (" + ti.hmem_note + ")";
  EFACOLL_INFO(kInit,
               "efacoll %s: provider %s, fabric %s, domain %s, libfabric %s, FI_HMEM %s, "
               "protocol %s, GPU path %s, MR local %s, inject %zu B, host buffers %s, MPI %s%s",
               "0.1.0", ti.provider.c_str(), ti.fabric.c_str(), ti.domain.c_str(),
               ti.version.c_str(), hmem.c_str(), ti.rdma ? "RDMA write + send" : "send",
               !gpu ? gpu_note.c_str() : fabric_gpu_path(ti, found).c_str(),
               ti.needs_local_mr ? "yes" : (config_force_mr_local() ? "forced" : "no"),
               ti.inject_size, p.flag(Param::kHostBuffers) ? "yes" : "no (MPI)", mpi.c_str(),
               mpi_is_cuda_aware() ? " (CUDA-aware)" : "");
}

void report_topology(const Params& p, const Topology& topo) {
  const std::string dump = p.text(Param::kTopoDumpFile);
  if (dump.empty() && !log_enabled(LogLevel::kInfo, kTopo)) return;
  std::string text = topo.describe();
  EFACOLL_INFO(kTopo, "%s", text.substr(0, text.find('\n')).c_str());
  if (dump.empty()) return;
  const std::string path = expand_path_pattern(dump);
  std::ofstream out(path);
  out << text;
  if (!out) EFACOLL_WARN(kTopo, "cannot write EFACOLL_TOPO_DUMP_FILE %s", path.c_str());
}

// Returns the MPI error code to report from MPI_Init, or MPI_SUCCESS.
int open_engine() {
  State& s = state();
  const Params& p = *s.params;
  std::string gpu_note;
  std::unique_ptr<GpuRuntime> gpu;
  if (p.flag(Param::kGpu)) gpu = make_gpu_runtime(&gpu_note);
  if (!gpu && gpu_note.empty()) gpu_note = "EFACOLL_GPU=0";
  if (!gpu) gpu_note = "none (" + gpu_note + ")";

  const Topology topo = detect_topology("/sys");
  std::unique_ptr<Transport> transport;
  FabricFound found;
  EngineConfig config;
  Status st = engine_config(p, topo, &config);
  if (st.is_ok()) st = open_transport(p, gpu.get(), topo, &transport, &found);
  if (st.is_ok()) {
    const TransportInfo& ti = transport->info();
    GdrDecision gdr =
        decide_gdr(ti.provider, ti.hmem, gpu != nullptr, topo.product, p.flag(Param::kRequireGdr),
                   found.hmem_why.empty() ? ti.hmem_note : found.hmem_why);
    if (!gdr.ok) st = Status(Code::kUnsupported, gdr.error);
    if (!gdr.warning.empty() && s.world_rank == 0) EFACOLL_WARN(kInit, "%s", gdr.warning.c_str());
  }
  // All ranks go on or all fail: a rank that went on alone would wait forever in its first
  // collective for ranks that failed here. Usually all fail alike, and rank 0 says why in one
  // line; where rank 0 is well, each failing rank says why. Printed before any rank's (by
  // default fatal) error handler can end the job.
  int well[2] = {st.is_ok(), s.world_rank != 0 || st.is_ok()};  // [all ranks, rank 0]
  int all_well[2] = {1, 1};
  PMPI_Allreduce(well, all_well, 2, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (!all_well[0]) {
    if (!st.is_ok() && (s.world_rank == 0 || all_well[1])) {
      EFACOLL_ERROR(kInit, "%s", st.message().c_str());
    }
    if (st.is_ok()) {
      st = Status(Code::kUnsupported, "another rank could not start efacoll (it says why)");
      if (s.world_rank == 0) EFACOLL_ERROR(kInit, "%s", st.message().c_str());
    }
    PMPI_Barrier(MPI_COMM_WORLD);
    return raise_error(MPI_COMM_WORLD, st, false);
  }
  if (p.integer(Param::kNodeSize) > 0) {
    config.node_name =
        "declared node " + std::to_string(s.world_rank / p.integer(Param::kNodeSize));
  }
  s.engine = std::make_unique<Engine>(std::move(transport), config, std::move(gpu));
  log_what_is_used(p, gpu_note, found);
  EFACOLL_INFO(kNet, "NIC: domain %s (%s)", s.engine->transport_info().domain.c_str(),
               found.nic_why.c_str());
  report_topology(p, topo);
  return MPI_SUCCESS;
}

int after_mpi_init(int rc, int provided) {
  State& s = state();
  if (rc != MPI_SUCCESS || !s.params->flag(Param::kEnable)) return rc;
  PMPI_Comm_rank(MPI_COMM_WORLD, &s.world_rank);
  log_set_rank(s.world_rank);
  MPI_Comm node;
  PMPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
  PMPI_Comm_rank(node, &s.local_rank);
  PMPI_Comm_free(&node);
  s.thread_level = provided;
  comm_cache_init();
  routing_init();
  errors_init();
  args_init();
  return open_engine();
}

}  // namespace

bool config_force_mr_local() {
  State& s = state();
  return s.engine && s.engine->config().force_mr_local;
}

}  // namespace shim
}  // namespace efacoll

using namespace efacoll;
using namespace efacoll::shim;

EFACOLL_EXPORT int MPI_Init(int* argc, char*** argv) {
  try {
    configure_before_mpi(environment_snapshot());
    int rc = PMPI_Init(argc, argv);
    int provided = MPI_THREAD_SINGLE;
    if (rc == MPI_SUCCESS) PMPI_Query_thread(&provided);
    return after_mpi_init(rc, provided);
  } catch (...) {
    return raise_exception(MPI_COMM_NULL, "MPI_Init");
  }
}

EFACOLL_EXPORT int MPI_Init_thread(int* argc, char*** argv, int required, int* provided) {
  try {
    configure_before_mpi(environment_snapshot());
    int rc = PMPI_Init_thread(argc, argv, required, provided);
    return after_mpi_init(rc, *provided);
  } catch (...) {
    return raise_exception(MPI_COMM_NULL, "MPI_Init_thread");
  }
}

EFACOLL_EXPORT int MPI_Finalize(void) {
  try {
    State& s = state();
    if (s.engine) {
      requests_finish_all();  // nonblocking calls never waited for: their workers end first
      stats_print_if_enabled();
      auto lock = engine_lock();
      comm_cache_release_all();
      s.finalized = true;
      s.engine.reset();
    }
    args_release();
  } catch (...) {
  }
  return PMPI_Finalize();
}
