#include "transport/fabric/hmem_opt_out.h"

#include <cerrno>

namespace efacoll {

HmemOptOut judge_cuda_api_opt_out(int rc) {
  HmemOptOut v;
  switch (-rc) {
    case 0:
      v.note = "GPUDirect RDMA: the provider makes no CUDA calls";
      break;
    case EOPNOTSUPP:
      v.keep_hmem = false;
      v.note =
          "offers FI_HMEM but cannot reach GPU memory without CUDA copies of its own "
          "(FI_OPT_CUDA_API_PERMITTED refused: no peer-to-peer between NIC and GPU; needs "
          "nvidia-peermem or dma-buf, and FI_HMEM_DISABLE_P2P unset)";
      break;
    case EINVAL:
      v.keep_hmem = false;
      v.note =
          "offers FI_HMEM but found no CUDA library or device (FI_OPT_CUDA_API_PERMITTED: "
          "invalid; is libcudart where libfabric looks, LD_LIBRARY_PATH?)";
      break;
    default:  // ENOPROTOOPT: libfabric < 1.18, where efa offers FI_HMEM only with GPUDirect
      break;
  }
  return v;
}

}  // namespace efacoll
