// The public Engine and Comm (include/efacoll/engine.h): handles that forward to the
// implementation, so that its state stays out of the public header.
#include "efacoll/engine.h"
#include "engine/comm_core.h"
#include "engine/engine_core.h"
#include "gpu/gpu_runtime.h"
#include "transport/transport.h"

namespace efacoll {

Engine::Engine(std::unique_ptr<Transport> transport, const EngineConfig& config)
    : Engine(std::move(transport), config, nullptr) {}

Engine::Engine(std::unique_ptr<Transport> transport, const EngineConfig& config,
               std::unique_ptr<GpuRuntime> gpu)
    : core_(std::make_unique<EngineCore>(std::move(transport), config, std::move(gpu))) {}

Engine::~Engine() = default;

Status Engine::create_comm(Bootstrap& bootstrap, std::unique_ptr<Comm>* out) {
  std::unique_ptr<CommCore> core;
  EFACOLL_RETURN_IF_ERROR(core_->create_comm(bootstrap, &core));
  *out = std::make_unique<Comm>(std::move(core));
  return Status::ok();
}

const TransportInfo& Engine::transport_info() const { return core_->transport_info(); }
GpuRuntime* Engine::gpu() const { return core_->gpu(); }
const EngineConfig& Engine::config() const { return core_->config(); }
Status Engine::set_algo(const std::string& spec) { return core_->set_algo(spec); }
const char* Engine::last_algorithm() const { return core_->last_algorithm(); }
TunedChoice Engine::last_choice() const { return core_->last_choice(); }
ResourceUsage Engine::resource_usage() { return core_->resource_usage(); }

Comm::Comm(std::unique_ptr<CommCore> core) : core_(std::move(core)) {}
Comm::~Comm() = default;
int Comm::rank() const { return core_->rank(); }
int Comm::size() const { return core_->size(); }
uint32_t Comm::id() const { return core_->id(); }
Status Comm::run(const CollArgs& args) { return core_->run(args); }

}  // namespace efacoll
