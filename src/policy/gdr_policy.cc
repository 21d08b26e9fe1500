#include "policy/gdr_policy.h"

namespace efacoll {

bool instance_expects_gdr(const std::string& product) {
  for (const char* family : {"p4d.", "p4de.", "p5.", "p5e.", "p5en.", "p6-", "p6."}) {
    if (product.rfind(family, 0) == 0) return product != "p5.4xlarge";
  }
  return false;
}

GdrDecision decide_gdr(const std::string& provider, bool hmem, bool have_gpu,
                       const std::string& product_name, bool require_gdr) {
  GdrDecision d;
  if (hmem) return d;
  const std::string why = "provider " + provider + " has no FI_HMEM (GPUDirect RDMA)";
  if (require_gdr) {
    d.ok = false;
    d.error = "EFACOLL_REQUIRE_GDR=1 but " + why +
              ": install AWS's libfabric (/opt/amazon/efa) with CUDA support; with libfabric "
              "1.17 also set FI_EFA_USE_DEVICE_RDMA=1";
    return d;
  }
  if (have_gpu && provider == "efa" && instance_expects_gdr(product_name)) {
    d.warning = product_name + " supports GPUDirect RDMA, but " + why +
                ": GPU data is staged through host memory (slower). Use AWS's libfabric with "
                "CUDA support; set EFACOLL_REQUIRE_GDR=1 to make this an error";
  }
  return d;
}

}  // namespace efacoll
