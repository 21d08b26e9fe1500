#include "transport/provider_quirks.h"

namespace efacoll {

ProviderQuirks& ProviderQuirks::operator|=(const ProviderQuirks& o) {
  peek_never_completes |= o.peek_never_completes;
  truncation_stops |= o.truncation_stops;
  matches_whole_tag |= o.matches_whole_tag;
  hides_truncation |= o.hides_truncation;
  needs_posting_order |= o.needs_posting_order;
  return *this;
}

bool ProviderQuirks::operator==(const ProviderQuirks& o) const {
  return peek_never_completes == o.peek_never_completes && truncation_stops == o.truncation_stops &&
         matches_whole_tag == o.matches_whole_tag && hides_truncation == o.hides_truncation &&
         needs_posting_order == o.needs_posting_order;
}

std::string ProviderQuirks::text() const {
  std::string t;
  auto add = [&t](bool on, const char* what) {
    if (on) t += (t.empty() ? "" : ", ") + std::string(what);
  };
  add(peek_never_completes, "FI_PEEK never completes");
  add(truncation_stops, "a truncation stops it");
  add(matches_whole_tag, "early messages match on the whole tag");
  add(hides_truncation, "truncations unreported");
  add(needs_posting_order, "loses messages received out of posting order");
  return t;
}

ProviderQuirks quirks_of(const std::string& provider) {
  ProviderQuirks q;
  const bool shm = provider == "shm";
  q.peek_never_completes = shm;
  q.truncation_stops = shm;
  q.matches_whole_tag = shm;
  q.hides_truncation = provider.rfind("udp", 0) == 0;
  // The loss is ofi_rxd's (over udp here; it would sit over verbs too).
  q.needs_posting_order = provider.find("ofi_rxd") != std::string::npos;
  return q;
}

}  // namespace efacoll
