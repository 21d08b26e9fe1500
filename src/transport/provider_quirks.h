// Faults of particular providers that efacoll works around, declared in one place: the fabric
// transport sets them when it opens (quirks_of) and the code that works around each reads the
// flag, never the provider's name. What each fault is, and which libfabric showed it, is said
// here; docs/architecture.md ("Faults") says how the engine copes.
#pragma once
#include <string>

namespace efacoll {

struct ProviderQuirks {
  // FI_PEEK is accepted but never completes (shm, libfabric 1.17): messages a failed call left
  // are found by call cards instead of by looking (comm_stale.cc).
  bool peek_never_completes = false;
  // A message longer than its receive stops the provider for good (shm, 1.17 and 2.6): every
  // two-sided receive into host memory goes through a bounce buffer as long as any message
  // (fabric_bounce.cc), and the one-sided protocol is the default.
  bool truncation_stops = false;
  // A message that arrived before its receive is matched on its whole tag, whatever the
  // receive's ignore mask (shm, 1.17): the call's signature travels as CQ data instead
  // (fabric_tags.cc).
  bool matches_whole_tag = false;
  // The first bytes of a message longer than its receive arrive with no truncation reported
  // (udp;ofi_rxd, 1.17): the sender's length travels as CQ data too (fabric_tags.cc).
  bool hides_truncation = false;
  // Multi-packet messages from a peer that arrive in another order than their receives were
  // posted are lost (ofi_rxd, 1.17): the executor posts each peer's sends, and its receives from
  // each peer, in schedule order (executor_state.h).
  bool needs_posting_order = false;

  bool any() const {
    return peek_never_completes || truncation_stops || matches_whole_tag || hides_truncation ||
           needs_posting_order;
  }
  // Several rails: the union of theirs.
  ProviderQuirks& operator|=(const ProviderQuirks& o);
  bool operator==(const ProviderQuirks& o) const;
  // "peek never completes, truncation stops it, ..." (empty: none), for log lines.
  std::string text() const;
};

// The quirks of a provider by the name libfabric gives it ("shm", "tcp", "udp;ofi_rxd", ...).
ProviderQuirks quirks_of(const std::string& provider);

}  // namespace efacoll
