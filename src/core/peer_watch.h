// What a waiting rank learns from its peers beyond its own schedule's messages:
// - A peer in another call of another shape (another collective, another count) sends messages
//   that no receive of this call ever takes. They wait in the provider's unexpected queue with
//   the peer's call signature in their tags; a peek (FI_PEEK) finds them, and the call ends
//   saying what differed instead of at the timeout. A message with this call's signature but an
//   id or a length this rank's schedule does not have is a different count. At a one-sided
//   sender the same holds for a receiver's clear-to-send.
// - A rank that gives up on a call (a mismatch, a timeout, an error) sends every peer of its
//   schedule a zero-byte notice. A rank two hops from a dead peer then errs as soon as its
//   neighbour times out, not one timeout later, and a mismatch ends on every rank.
// - A notice can be lost where the call found the link to that peer broken: tcp;ofi_rxm drops
//   a connection that delivered a message too long for its receive, and a notice posted right
//   after may complete without arriving (seen: the peer, whose only link was that one, waited
//   out its timeout). Such peers are told once more a moment later, by the engine.
// - Where the provider cannot peek (shm), neither can be found in the queue. Call cards stand in
//   for both, matched on their whole tags: a rank that waits posts receives for the cards of the
//   peers of its schedule at its first looks. Having waited half of EFACOLL_TIMEOUT, it sends the
//   ranks it waits for its own (its call's signature in the tag, its element count in 8 bytes):
//   ranks in calls whose messages never meet (another collective, or another count whose
//   signature bits agree) then name the difference instead of timing out without it. A rank that
//   gives up sends the peers of its schedule a card that says so (for a mismatch, its own call
//   marked as found wanting, so that a rank in another call names the difference; else
//   kGaveUpSignature with the reason and the rank it found silent), which they take as they take
//   notices. Cards go out only after half the timeout or in a failed call: a card that no receive
//   ever takes (its receiver never waited) stays in the provider's queue for good.
#pragma once
#include <chrono>
#include <deque>
#include <map>
#include <memory>
#include <set>
#include <utility>
#include <vector>

#include "core/executor.h"

namespace efacoll {

enum class GiveUp : uint32_t { kMismatch = 0, kTimeout = 1, kError = 2 };

GiveUp give_up_reason(Code code);

class PeerWatch {
 public:
  PeerWatch(const Schedule& schedule, const ExecContext& ctx)
      : schedule_(schedule), ctx_(ctx), slots_(new std::deque<Slot>) {}
  ~PeerWatch();
  PeerWatch(const PeerWatch&) = delete;
  PeerWatch& operator=(const PeerWatch&) = delete;

  // Peeks at what the `silent` ranks sent, and, with `one_sided_sends`, at clear-to-sends for
  // this rank's sends. Does nothing while the previous look is still in flight.
  // `waited`: since the call last made progress.
  void look(const std::set<int>& silent, bool one_sided_sends, std::chrono::milliseconds waited);
  // What a look found: kMismatch, or the error a peer's notice stands for; ok until then.
  const Status& found() const { return found_; }
  // Sends the notice to every rank in `peers`, naming `silent` (a rank this one found
  // silent; -1: the one a notice received named, if any); best effort, completed by progress.
  void tell(const std::set<int>& peers, GiveUp why, int silent);
  // Has `late` send the notice again, once the provider has had time to reconnect, to each of
  // `peers` (links this call found broken) and each peer whose notice failed; after tell().
  // Not where notices cannot be found (shm): cards stand in there.
  void tell_again_later(const std::set<int>& peers, LateSends* late);
  // Posts again the notices a full queue turned away; whether some are still waiting.
  void retell();
  bool telling() const { return !untold_.empty(); }
  // Leaves the notices not yet posted to `late` (of this call's transport), to be posted until
  // `deadline`.
  void hand_off_untold(LateSends* late, std::chrono::steady_clock::time_point deadline);
  size_t in_flight() const { return in_flight_; }
  // Cancels the receives of cards not come: the call is over.
  void withdraw_cards();
  // The provider still holds some of ours: their storage is left to it.
  void abandon();

 private:
  enum class Kind { kPeekData, kPeekCts, kPeekNotice, kTakeNotice, kNotice, kCard, kTakeCard };
  static bool is_look(Kind k) {
    return k == Kind::kPeekData || k == Kind::kPeekCts || k == Kind::kPeekNotice;
  }
  struct Slot : Completion {
    PeerWatch* watch = nullptr;
    Kind kind = Kind::kNotice;
    int peer = -1;
    size_t bytes = 0;
    bool free = true;
    uint64_t card = 0;  // a card's element count, sent or received
  };
  Slot* slot(Kind kind, int peer);
  Status post(Slot* s, const Status& st);
  static void on_done(Completion* c, const Status& status, size_t bytes);
  void on_peek(const Slot& s);
  void on_notice(uint64_t tag);
  void await_cards(const std::set<int>& peers);
  void send_cards(const std::set<int>& peers, uint32_t signature, uint64_t count);
  void take_card(int peer);
  void on_card(int peer, uint64_t tag, uint64_t count);
  void note(const Status& st);
  void learn_schedule();

  const Schedule& schedule_;
  const ExecContext& ctx_;
  // What this call receives, by (sender, message id), and the ids it sends: learnt at the first
  // look, since most calls never wait long enough for one.
  std::map<std::pair<int, uint32_t>, size_t> receives_;
  std::set<uint32_t> sends_;
  std::set<int> peers_;  // every rank this call sends to or receives from
  bool learnt_ = false;
  std::unique_ptr<std::deque<Slot>> slots_;  // stable addresses, reused once done
  size_t in_flight_ = 0;
  size_t looks_in_flight_ = 0;
  bool cannot_peek_ = false;
  int silent_ = -1;          // named by a notice received
  std::vector<int> untold_;  // peers whose notice a full queue turned away
  std::set<int> notice_failed_;  // peers whose notice completed with an error
  uint64_t notice_tag_ = 0;
  Status found_;
  bool cards_sent_ = false;
  std::set<int> cards_awaited_;  // peers whose card a receive is posted for
  std::set<int> cards_taken_;    // peers whose first card came (a second may say it gave up)
};

}  // namespace efacoll
