// Whether GPU data can go NIC<->GPU directly (GPUDirect RDMA, FI_HMEM) and what to say when it
// cannot. A pure function of what was found, unit-tested for each instance family.
#pragma once
#include <string>

namespace efacoll {

struct GdrDecision {
  bool ok = true;
  std::string warning;  // WARN line when ok
  std::string error;    // when !ok (EFACOLL_REQUIRE_GDR=1 and no GPUDirect)
};

// EC2 instance types whose EFA supports GPUDirect RDMA (p4d, p4de, p5, p5e, p5en, p6...).
bool instance_expects_gdr(const std::string& product_name);

// hmem_lost: why the provider's FI_HMEM is not used though offered (the transport's
// TransportInfo::hmem_note, transport/fabric/hmem_opt_out.h).
GdrDecision decide_gdr(const std::string& provider, bool hmem, bool have_gpu,
                       const std::string& product_name, bool require_gdr,
                       const std::string& hmem_lost = "");

}  // namespace efacoll
