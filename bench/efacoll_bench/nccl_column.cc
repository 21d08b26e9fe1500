#include "nccl_column.h"

#include <cstdlib>

#include "device.h"
#include "environment.h"
#include "implementations.h"

namespace efacoll_bench {

bool setup_nccl_column(const Options& o, NcclLibrary* nccl, void** stream, std::string* why) {
  if (!o.nccl) {
    *why = "--no-nccl";
    return false;
  }
  if (o.memory != MemoryKind::kDevice) {
    *why = "NCCL takes GPU buffers: --mem device";
    return false;
  }
  if (reduces(o.collective) && is_bitwise(o.op)) {
    *why = std::string("NCCL has no ") + op_name(o.op);
    return false;
  }
  // Every rank tells the same story: the check is agreed before anything is loaded.
  const int ranks = ranks_on_this_node(), gpus = gpu_count();
  if (first_failing_rank(ranks > gpus) >= 0) {
    *why = "ranks share a GPU on some node, which NCCL refuses";
    return false;
  }
  if (!load_nccl_on_every_rank(nccl)) {
    *why = "libnccl.so.2 not found on every rank";
    return false;
  }
  // NVLink SHARP needs multicast objects that some machines (2-GPU boxes among them) do not
  // give: off, whatever the environment says, and the header says so.
  setenv("NCCL_NVLS_ENABLE", "0", 1);
  std::string error;
  if (!init_nccl_world(nccl, &error)) fail("NCCL set-up", error);
  *stream = gpu_stream_create();
  if (*stream == nullptr) fail("cudaStreamCreate", gpu_last_error());
  return true;
}

}  // namespace efacoll_bench
