#include "core/peer_watch.h"

#include <algorithm>

#include "common/kept_alive.h"
#include "common/log.h"
#include "core/call_signature.h"
#include "core/late_sends.h"
#include "transport/tag.h"

namespace efacoll {

static_assert(kMaxMsgId < kNoticeMsgBase, "schedules' message ids stay below the notices'");

GiveUp give_up_reason(Code code) {
  if (code == Code::kMismatch || code == Code::kTruncate) return GiveUp::kMismatch;
  if (code == Code::kTimeout) return GiveUp::kTimeout;
  return GiveUp::kError;
}

namespace {

// A notice names, in its signature bits, the rank its sender found silent (kNobody: none).
constexpr uint32_t kNobody = 0xfff;
// In a card's count: its sender found the ranks' calls differ and gave up. The card still carries
// the sender's own call (signature and count), so that a rank whose call differs from it names
// the difference itself, as the sender did.
constexpr uint64_t kFoundMismatch = uint64_t{1} << 63;

Status notice_error(int peer, uint32_t reason, uint32_t silent) {
  const std::string who = "rank " + std::to_string(peer);
  switch (static_cast<GiveUp>(reason)) {
    case GiveUp::kMismatch:
      return Status(Code::kMismatch,
                    who +
                        " found that the ranks' calls differ (its error says how; every rank "
                        "must make the same call)");
    case GiveUp::kTimeout:
      return Status(Code::kTimeout,
                    who +
                        " gave up on this call after EFACOLL_TIMEOUT; ranks that did not answer: " +
                        (silent == kNobody ? std::string("see rank ") + std::to_string(peer)
                                           : std::to_string(silent) + " (seen from " + who + ")"));
    default:
      return Status(Code::kFabric,
                    who + " gave up on this call after an error (its error says which)");
  }
}

// A card's signature bits are its sender's call signature (or kGaveUpSignature).
uint64_t card_tag(const ExecContext& ctx, int sender, uint32_t signature) {
  return make_tag(ctx.comm_id, ctx.seq, sender, notice_msg_id(kCardReason, ctx.seq), signature);
}

}  // namespace

PeerWatch::~PeerWatch() {
  if (in_flight_ > 0) abandon();
}

void PeerWatch::abandon() {
  for (Slot& s : *slots_) s.fn = [](Completion*, const Status&, size_t) {};
  keep_alive(std::move(slots_));
  slots_.reset(new std::deque<Slot>);
  in_flight_ = looks_in_flight_ = 0;
}

PeerWatch::Slot* PeerWatch::slot(Kind kind, int peer) {
  Slot* s = nullptr;
  for (Slot& candidate : *slots_) {
    if (candidate.free) {
      s = &candidate;
      break;
    }
  }
  if (s == nullptr) s = &slots_->emplace_back();
  *s = Slot();
  s->fn = &PeerWatch::on_done;
  s->watch = this;
  s->kind = kind;
  s->peer = peer;
  s->free = false;
  s->call_seq = ctx_.seq;
  return s;
}

// Counts a posted operation, or gives its slot back.
Status PeerWatch::post(Slot* s, const Status& st) {
  if (st.is_ok()) {
    ++in_flight_;
    if (is_look(s->kind)) ++looks_in_flight_;
    return st;
  }
  s->free = true;
  if (st.code() == Code::kUnsupported) cannot_peek_ = true;
  return st;
}

void PeerWatch::learn_schedule() {
  learnt_ = true;
  for (const Op& op : schedule_.ops) {
    if (op.kind == OpKind::kRecv) receives_[{op.peer, op.msg_id}] = op.bytes;
    if (op.kind == OpKind::kSend) sends_.insert(op.msg_id);
    if (op.kind == OpKind::kRecv || op.kind == OpKind::kSend) peers_.insert(op.peer);
  }
}

void PeerWatch::look(const std::set<int>& silent, bool one_sided_sends,
                     std::chrono::milliseconds waited) {
  if (cannot_peek_) {
    // From every peer of the schedule, as notices are looked for: one this rank is done with
    // may give up, and its card be the only news of a rank this one waits for.
    if (!learnt_) learn_schedule();
    await_cards(peers_);
    if (!cards_sent_ && waited >= ctx_.timeout / 2) {
      cards_sent_ = true;
      send_cards(silent, ctx_.signature, ctx_.count);
    }
  }
  if (cannot_peek_ || looks_in_flight_ > 0 || !found_.is_ok()) return;
  if (!learnt_) learn_schedule();
  Transport* t = ctx_.transport;
  const uint64_t any_message = kSignatureMask | kMaxMsgIdInTag;
  for (int peer : silent) {
    const PeerAddr addr = (*ctx_.peers)[peer];
    Slot* s = slot(Kind::kPeekData, peer);
    if (!post(s, t->peek(addr, make_tag(ctx_.comm_id, ctx_.seq, peer, 0, 0), any_message, s))
             .is_ok())
      return;
  }
  // From any rank, not only the silent ones: a peer that gave up may be one this rank is done
  // with, and its notice the only news of a rank this one waits for. Apart from the looks above,
  // since a message of this call ahead of it would hide it there.
  Slot* s = slot(Kind::kPeekNotice, -1);
  const uint64_t notice = make_tag(ctx_.comm_id, ctx_.seq, 0, notice_msg_id(0, ctx_.seq), 0);
  const uint64_t any_notice = kNoticeReasonMask | kSenderMask | kSignatureMask;
  if (!post(s, t->peek((*ctx_.peers)[ctx_.rank], notice, any_notice, s)).is_ok()) return;
  if (one_sided_sends) {
    // A clear-to-send is tagged like the data it asks for: the sender's rank, which is ours.
    Slot* cts = slot(Kind::kPeekCts, -1);
    post(cts, t->peek((*ctx_.peers)[ctx_.rank], make_tag(ctx_.comm_id, ctx_.seq, ctx_.rank, 0, 0),
                      any_message, cts));
  }
}

void PeerWatch::await_cards(const std::set<int>& peers) {
  for (int peer : peers) {
    if (peer != ctx_.rank && cards_awaited_.insert(peer).second) take_card(peer);
  }
}

void PeerWatch::send_cards(const std::set<int>& peers, uint32_t signature, uint64_t count) {
  for (int peer : peers) {
    if (peer == ctx_.rank) continue;
    Slot* s = slot(Kind::kCard, peer);
    s->card = count;
    post(s, ctx_.transport->send((*ctx_.peers)[peer], &s->card, sizeof(s->card),
                                 card_tag(ctx_, ctx_.rank, signature), nullptr, s));
  }
}

void PeerWatch::take_card(int peer) {
  Slot* s = slot(Kind::kTakeCard, peer);
  s->ignore = kSignatureMask;
  post(s, ctx_.transport->recv((*ctx_.peers)[peer], &s->card, sizeof(s->card),
                               card_tag(ctx_, peer, 0), nullptr, s));
}

void PeerWatch::on_card(int peer, uint64_t tag, uint64_t count) {
  const uint32_t theirs = tag_signature(tag);
  const bool found_mismatch = (count & kFoundMismatch) != 0;
  if (theirs == kStaleSignature) return;  // an old call's, 2^18 calls back
  if (theirs == kGaveUpSignature) {
    const auto named = static_cast<uint32_t>(count & 0xfff);
    if (named != kNobody) silent_ = static_cast<int>(named);
    note(notice_error(peer, static_cast<uint32_t>(count >> 32), named));
    return;
  }
  if (found_mismatch) count &= ~kFoundMismatch;
  if (theirs == ctx_.signature && count != ctx_.count) {
    note(Status(Code::kMismatch, "rank " + std::to_string(peer) + " called with " +
                                     std::to_string(count) + " elements, this rank with " +
                                     std::to_string(ctx_.count) +
                                     ": a different count there (every rank must make the same "
                                     "call)"));
    return;
  }
  if (theirs == ctx_.signature && found_mismatch) {
    note(notice_error(peer, static_cast<uint32_t>(GiveUp::kMismatch), kNobody));
    return;
  }
  if (theirs == ctx_.signature) {
    // The same call, only slow: if it then gives up, its card saying so comes next.
    if (cards_taken_.insert(peer).second) take_card(peer);
    return;
  }
  note(Status(Code::kMismatch, describe_mismatch(ctx_.signature, theirs, peer) +
                                   " (every rank must make the same call)"));
}

void PeerWatch::withdraw_cards() {
  for (Slot& s : *slots_) {
    if (!s.free && s.kind == Kind::kTakeCard) ctx_.transport->cancel(&s);
  }
}

void PeerWatch::tell(const std::set<int>& peers, GiveUp why, int silent) {
  const uint32_t msg = notice_msg_id(static_cast<uint32_t>(why), ctx_.seq);
  if (silent < 0) silent = silent_;  // passing on a notice: the rank its sender named
  const uint32_t named = silent >= 0 && silent < static_cast<int>(kNobody) ? silent : kNobody;
  // Where notices cannot be found, ranks waiting for cards take a card saying it instead.
  if (cannot_peek_ && why == GiveUp::kMismatch)
    send_cards(peers, ctx_.signature, ctx_.count | kFoundMismatch);
  if (cannot_peek_ && why != GiveUp::kMismatch)
    send_cards(peers, kGaveUpSignature, uint64_t{static_cast<uint32_t>(why)} << 32 | named);
  notice_tag_ = make_tag(ctx_.comm_id, ctx_.seq, ctx_.rank, msg, named);
  for (int peer : peers) {
    if (peer != ctx_.rank) untold_.push_back(peer);
  }
  retell();
}

// A queue full of sends to a peer that stopped (udp;ofi_rxd's window) turns notices away for a
// while: the executor calls again as it drains.
void PeerWatch::retell() {
  std::vector<int> left;
  for (int peer : untold_) {
    Slot* s = slot(Kind::kNotice, peer);
    Status st =
        post(s, ctx_.transport->send((*ctx_.peers)[peer], nullptr, 0, notice_tag_, nullptr, s));
    if (st.code() == Code::kAgain) {
      left.push_back(peer);
    } else if (!st.is_ok()) {
      EFACOLL_TRACE(kNet, "notice to rank %d not sent: %s", peer, st.message().c_str());
    }
  }
  untold_.swap(left);
}

void PeerWatch::tell_again_later(const std::set<int>& peers, LateSends* late) {
  if (cannot_peek_) return;
  // Measured over tcp: told again after 200 ms, the peer got it in 160 runs of 160 where a
  // notice told at once was lost in about one in twenty.
  const auto after =
      std::min<std::chrono::milliseconds>(std::chrono::milliseconds(200), ctx_.timeout / 4);
  const auto now = std::chrono::steady_clock::now();
  std::set<int> to = peers;
  to.insert(notice_failed_.begin(), notice_failed_.end());
  for (int peer : to) {
    if (peer != ctx_.rank)
      late->add((*ctx_.peers)[peer], notice_tag_, ctx_.seq, now + ctx_.timeout, now + after);
  }
}

void PeerWatch::hand_off_untold(LateSends* late, std::chrono::steady_clock::time_point deadline) {
  for (int peer : untold_) late->add((*ctx_.peers)[peer], notice_tag_, ctx_.seq, deadline);
  untold_.clear();
}

void PeerWatch::on_done(Completion* c, const Status& status, size_t bytes) {
  auto* s = static_cast<Slot*>(c);
  s->bytes = bytes;
  PeerWatch* w = s->watch;
  --w->in_flight_;
  if (s->kind == Kind::kNotice && !status.is_ok()) w->notice_failed_.insert(s->peer);
  if (is_look(s->kind)) {
    --w->looks_in_flight_;
    if (status.is_ok()) w->on_peek(*s);
  }
  s->free = true;
  // After the slot is free: the card's receive for this peer may be posted again in it.
  if (s->kind == Kind::kTakeCard && status.is_ok() && bytes == sizeof(s->card))
    w->on_card(s->peer, s->tag, s->card);
}

void PeerWatch::note(const Status& st) {
  if (found_.is_ok()) found_ = st;
}

void PeerWatch::on_notice(uint64_t tag) {
  const uint32_t msg = tag_msg_id(tag);
  const uint32_t reason = (msg & kNoticeReasonMask) >> 10;
  if (msg != notice_msg_id(reason, ctx_.seq) || !found_.is_ok()) return;
  // A notice's signature bits name the rank its sender found silent.
  const uint32_t named = tag_signature(tag);
  if (named != kNobody) silent_ = static_cast<int>(named);
  note(notice_error(tag_sender(tag), reason, named));
}

void PeerWatch::on_peek(const Slot& s) {
  const uint32_t theirs = tag_signature(s.tag);
  const uint32_t msg = tag_msg_id(s.tag);
  const int sender = tag_sender(s.tag);
  if (s.kind != Kind::kPeekCts && msg >= kNoticeMsgBase &&
      sender < static_cast<int>(ctx_.peers->size())) {
    // Taken whether it is this call's or an old one's: left there, it would hide what follows.
    Slot* take = slot(Kind::kTakeNotice, sender);
    take->ignore = 0;
    post(take, ctx_.transport->recv((*ctx_.peers)[sender], nullptr, 0, s.tag, nullptr, take));
    on_notice(s.tag);
    return;
  }
  const std::string who = s.peer < 0 ? std::string("a peer") : "rank " + std::to_string(s.peer);
  std::string why;
  if (theirs != ctx_.signature) {
    why = describe_mismatch(ctx_.signature, theirs, s.peer);
  } else if (s.kind == Kind::kPeekCts) {
    if (sends_.count(msg) == 0)
      why = who + " asked for message " + std::to_string(msg) +
            ", which this call does not send: a different count there";
  } else if (auto it = receives_.find({s.peer, msg}); it == receives_.end()) {
    why = who + " sent message " + std::to_string(msg) +
          ", which this call does not receive: a different count there";
  } else if (it->second != s.bytes) {
    // Above the one-sided threshold data never comes as a message: any length is another one.
    why = "expected " + std::to_string(it->second) + " bytes from " + who + ", got " +
          std::to_string(s.bytes) + ": a different count there";
  }
  // Otherwise a message of this call that is early.
  if (!why.empty()) note(Status(Code::kMismatch, why + " (every rank must make the same call)"));
}

}  // namespace efacoll
