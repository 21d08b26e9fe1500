// NVLink peers of each GPU, from NVML (libnvidia-ml loaded at run time) or from a fixture file.
#pragma once
#include <map>
#include <set>
#include <string>
#include <vector>

namespace efacoll {

// For each GPU (by PCI address) the PCI addresses at the far end of its active NVLinks.
// Links that end in an NVSwitch are reported as "nvswitch".
using NvlinkMap = std::map<std::string, std::set<std::string>>;

// From NVML; empty (with the reason) where NVML or NVLink is missing.
NvlinkMap nvlinks_from_nvml(std::string* why_not);
// From "bdf: peer peer ..." lines.
NvlinkMap nvlinks_from_file(const std::string& path);
// "00000000:53:00.0" or "0000:53:00.0" -> "0000:53:00.0", lower case.
std::string normalize_bdf(const std::string& bdf);

}  // namespace efacoll
