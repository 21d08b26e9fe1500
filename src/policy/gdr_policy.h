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

// hmem_lost: why the provider's FI_HMEM is not used though offered (judge_cuda_api_opt_out).
GdrDecision decide_gdr(const std::string& provider, bool hmem, bool have_gpu,
                       const std::string& product_name, bool require_gdr,
                       const std::string& hmem_lost = "");

// An FI_HMEM endpoint is asked, before it is enabled, to make no CUDA calls of its own, as
// aws-ofi-nccl asks: efa then moves GPU data only NIC<->GPU. Without GPUDirect it would copy
// through the host with CUDA calls inside efacoll's progress loop, one message at a time,
// where efacoll's own staging pipelines; and its answer is the only proof of GPUDirect that
// libfabric >= 1.18 gives. Judged from fi_setopt's return code:
struct HmemOptOut {
  bool keep_hmem = true;
  std::string note;  // for the log line: what was learnt, or why FI_HMEM goes unused
};
HmemOptOut judge_cuda_api_opt_out(int setopt_rc);

}  // namespace efacoll
