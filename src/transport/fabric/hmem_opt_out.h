// What an FI_HMEM endpoint's answer to FI_OPT_CUDA_API_PERMITTED means. Libfabric knowledge,
// kept in the transport: the provider policy (policy/gdr_policy.h) reads the outcome from
// TransportInfo (hmem, gpudirect, hmem_note) as data.
#pragma once
#include <string>

namespace efacoll {

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
