// Which completion-queue entries the fabric transport trusts as the completion of the request
// they name (cq_entry_fits). udp;ofi_rxd 1.17 reported one clear-to-send twice, the second time
// to a request that had gone on to its write; trusted, it completed the write early, and the
// write's own entry later found a free request (SIGSEGV in Mismatch.* over udp: 2 runs of 214
// before the check).
#include <gtest/gtest.h>
#include <rdma/fabric.h>

#include "transport/fabric/fabric_endpoint.h"
#include "transport/tag.h"

namespace efacoll {
namespace testing {
namespace {

constexpr uint64_t kRecvEntry = FI_TAGGED | FI_RECV;
constexpr uint64_t kWriteEntry = FI_RMA | FI_WRITE;

struct InFlight {
  Completion completion;
  Request request;
  // A request in flight as `kind`, its receive posted for `tag` with the signature ignored.
  InFlight(ReqKind kind, uint64_t tag) {
    request.kind = kind;
    request.completion = &completion;
    request.tag = request.match_tag = tag;
    request.match_ignore = kSignatureMask;
  }
};

const uint64_t kTag = make_tag(3, 17, 1, 2, 0x5);

TEST(CqEntry, AReceiveTakesWhatItsTagAndMaskMatch) {
  InFlight cts(ReqKind::kAwaitCts, kTag);
  EXPECT_TRUE(cq_entry_fits(cts.request, kRecvEntry, kTag));
  // Another signature is for the mask to let through (the executor names the mismatch).
  EXPECT_TRUE(cq_entry_fits(cts.request, kRecvEntry, with_signature(kTag, 0x9)));
  EXPECT_FALSE(cq_entry_fits(cts.request, kRecvEntry, make_tag(3, 17, 1, 3, 0x5)));  // message
  EXPECT_FALSE(cq_entry_fits(cts.request, kRecvEntry, make_tag(3, 17, 2, 2, 0x5)));  // sender
  EXPECT_FALSE(cq_entry_fits(cts.request, kRecvEntry, make_tag(3, 18, 1, 2, 0x5)));  // call
}

TEST(CqEntry, AReceiveEntryForARequestGoneOnToItsWriteIsNotTrusted) {
  InFlight send(ReqKind::kAwaitCts, kTag);
  ASSERT_TRUE(cq_entry_fits(send.request, kRecvEntry, kTag));
  send.request.kind = ReqKind::kWrite;  // what on_clear_to_send makes of it
  EXPECT_FALSE(cq_entry_fits(send.request, kRecvEntry, kTag));
  EXPECT_TRUE(cq_entry_fits(send.request, kWriteEntry, 0));
}

TEST(CqEntry, ASendOrWriteEntryForAReceiveIsNotTrusted) {
  for (ReqKind kind : {ReqKind::kRecv, ReqKind::kAwaitCts, ReqKind::kPeek, ReqKind::kBounceRecv}) {
    InFlight recv(kind, kTag);
    EXPECT_FALSE(cq_entry_fits(recv.request, kWriteEntry, 0)) << static_cast<int>(kind);
    EXPECT_FALSE(cq_entry_fits(recv.request, FI_TAGGED | FI_SEND, kTag)) << static_cast<int>(kind);
    EXPECT_TRUE(cq_entry_fits(recv.request, kRecvEntry, kTag)) << static_cast<int>(kind);
  }
  InFlight send(ReqKind::kSend, kTag);
  EXPECT_TRUE(cq_entry_fits(send.request, FI_TAGGED | FI_SEND, kTag));
}

TEST(CqEntry, AnEntryForARequestCompleteAlreadyIsNotTrusted) {
  InFlight write(ReqKind::kWrite, kTag);
  ASSERT_TRUE(cq_entry_fits(write.request, kWriteEntry, 0));
  write.request.completion = nullptr;  // what put_request leaves
  EXPECT_FALSE(cq_entry_fits(write.request, kWriteEntry, 0));
  EXPECT_FALSE(cq_entry_fits(write.request, 0, 0));
}

TEST(CqEntry, AnEntryThatNamesNoOperationIsTakenAsItsRequests) {
  InFlight recv(ReqKind::kRecv, kTag);
  EXPECT_TRUE(cq_entry_fits(recv.request, 0, 0));
}

}  // namespace
}  // namespace testing
}  // namespace efacoll
