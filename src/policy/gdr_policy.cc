#include "policy/gdr_policy.h"

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

}  // namespace efacoll
