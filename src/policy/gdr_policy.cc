#include "policy/gdr_policy.h"

#include <cerrno>

namespace efacoll {

bool instance_expects_gdr(const std::string& product) {
  for (const char* family : {"p4d.", "p4de.", "p5.", "p5e.", "p5en.", "p6-", "p6."}) {
    if (product.rfind(family, 0) == 0) return product != "p5.4xlarge";
  }
  return false;
}

GdrDecision decide_gdr(const std::string& provider, bool hmem, bool have_gpu,
                       const std::string& product_name, bool require_gdr,
                       const std::string& hmem_lost) {
  GdrDecision d;
  if (hmem) return d;
  const std::string why =
      "provider " + provider +
      (hmem_lost.empty() ? " has no FI_HMEM (GPUDirect RDMA)" : " " + hmem_lost);
  // A provider that offered FI_HMEM and then refused it has libfabric's CUDA support already:
  // its note says what else is missing.
  const std::string fix = hmem_lost.empty()
                              ? ": install AWS's libfabric (/opt/amazon/efa) with CUDA support; "
                                "with libfabric 1.17 also set FI_EFA_USE_DEVICE_RDMA=1"
                              : "";
  if (require_gdr) {
    d.ok = false;
    d.error = "EFACOLL_REQUIRE_GDR=1 but " + why + fix;
    return d;
  }
  if (have_gpu && provider == "efa" && instance_expects_gdr(product_name)) {
    d.warning = product_name + " supports GPUDirect RDMA, but " + why +
                ": GPU data is staged through host memory (slower). " +
                (hmem_lost.empty() ? "Use AWS's libfabric with CUDA support; set" : "Set") +
                " EFACOLL_REQUIRE_GDR=1 to make this an error";
  }
  return d;
}

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
