#include "transport/fabric/fabric_info.h"

#include <rdma/fi_domain.h>
#include <rdma/fi_errno.h>

#include <algorithm>
#include <cstring>

namespace efacoll {

Status find_provider_with(const std::string& provider, bool hmem, bool rma,
                          const std::string& domain, FiInfoPtr* out);

uint32_t fabric_api_version() {
  return std::min<uint32_t>(FI_VERSION(FI_MAJOR_VERSION, FI_MINOR_VERSION), fi_version());
}

std::string fabric_library_version() {
  uint32_t v = fi_version();
  return std::to_string(FI_MAJOR(v)) + "." + std::to_string(FI_MINOR(v));
}

FiInfoPtr make_hints(const std::string& provider, bool hmem, bool rma, const std::string& domain) {
  FiInfoPtr hints(fi_allocinfo());
  if (!hints) return hints;
  hints->ep_attr->type = FI_EP_RDM;
  hints->caps = FI_MSG | FI_TAGGED;
  hints->mode = FI_CONTEXT | FI_CONTEXT2;  // we always pass a fi_context2 per operation
  hints->domain_attr->mr_mode =
      FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY | FI_MR_ENDPOINT;
  hints->domain_attr->threading = FI_THREAD_SAFE;
  if (rma) hints->caps |= FI_RMA | FI_WRITE | FI_REMOTE_WRITE;
  if (hmem) {
    hints->caps |= FI_HMEM;
    hints->domain_attr->mr_mode |= FI_MR_HMEM;
  }
  // No ordering asked: EFA promises none, and tags keep every message apart.
  if (!provider.empty()) {
    hints->fabric_attr->prov_name = strdup(provider.c_str());
    // libfabric 2.x lists the efa-direct fabric first; it has no tagged messages.
    if (provider == "efa") hints->fabric_attr->name = strdup("efa");
  }
  if (!domain.empty()) hints->domain_attr->name = strdup(domain.c_str());
  return hints;
}

Status find_provider(const std::string& provider, FiInfoPtr* out, bool try_hmem,
                     const std::string& domain) {
  for (bool hmem : {true, false}) {
    if (hmem && !try_hmem) continue;
    for (bool rma : {true, false}) {
      if (find_provider_with(provider, hmem, rma, domain, out).is_ok()) return Status::ok();
    }
  }
  return find_provider_with(provider, false, false, domain, out);
}

std::vector<std::string> offered_domains(const std::string& provider) {
  std::vector<std::string> names;
  FiInfoPtr hints = make_hints(provider);
  fi_info* list = nullptr;
  if (!hints || fi_getinfo(fabric_api_version(), nullptr, nullptr, 0, hints.get(), &list) != 0) {
    return names;
  }
  for (fi_info* i = list; i; i = i->next) {
    std::string name = i->domain_attr->name ? i->domain_attr->name : "";
    if (!name.empty() && std::find(names.begin(), names.end(), name) == names.end()) {
      names.push_back(name);
    }
  }
  fi_freeinfo(list);
  return names;
}

Status find_provider_with(const std::string& provider, bool hmem, bool rma,
                          const std::string& domain, FiInfoPtr* out) {
  FiInfoPtr hints = make_hints(provider, hmem, rma, domain);
  if (!hints) return Status(Code::kNoMemory, "fi_allocinfo failed");
  fi_info* list = nullptr;
  int rc = fi_getinfo(fabric_api_version(), nullptr, nullptr, 0, hints.get(), &list);
  if (rc != 0 || list == nullptr) {
    return Status(Code::kUnsupported, "fi_getinfo(" + provider +
                                          (domain.empty() ? "" : ", domain " + domain) +
                                          "): " + fi_strerror(-rc));
  }
  // The first entry, or the first of the named domain (some providers, 1.17's tcp;ofi_rxm
  // among them, do not filter by the domain hint).
  fi_info* pick = list;
  while (!domain.empty() && pick &&
         !(pick->domain_attr->name && domain == pick->domain_attr->name)) {
    pick = pick->next;
  }
  if (!pick) {
    fi_freeinfo(list);
    return Status(Code::kUnsupported, "fi_getinfo(" + provider + "): no domain " + domain);
  }
  FiInfoPtr first(fi_dupinfo(pick));
  fi_freeinfo(list);
  if (!first) return Status(Code::kNoMemory, "fi_dupinfo failed");
  *out = std::move(first);
  return Status::ok();
}

std::vector<std::string> offered_providers() {
  std::vector<std::string> names;
  FiInfoPtr hints = make_hints("");
  fi_info* list = nullptr;
  if (!hints || fi_getinfo(fabric_api_version(), nullptr, nullptr, 0, hints.get(), &list) != 0) {
    return names;
  }
  for (fi_info* i = list; i; i = i->next) {
    std::string name = i->fabric_attr->prov_name ? i->fabric_attr->prov_name : "?";
    if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
  }
  fi_freeinfo(list);
  return names;
}

}  // namespace efacoll
