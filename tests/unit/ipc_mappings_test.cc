#include "engine/ipc_mappings.h"

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <vector>

namespace efacoll {
namespace {

// A peer allocation as its IPC handle names it: the driver chunk it lies in, and itself.
struct FakeHandle {
  int chunk;
  int allocation;
};

// The CUDA driver as IPC direct meets it: a chunk is mapped once per process, so opening an
// allocation while another mapping of its chunk is open fails with "already mapped" (kAgain).
class FakeDriver {
 public:
  Status open(const void* handle, void** out) {
    const auto* h = static_cast<const FakeHandle*>(handle);
    for (const auto& kv : open_) {
      if (kv.second.chunk == h->chunk) return Status(Code::kAgain, "already mapped");
    }
    auto* mapped = reinterpret_cast<void*>(uintptr_t(next_++) << 12);
    open_[mapped] = *h;
    ++opens;
    *out = mapped;
    return Status::ok();
  }
  void close(void* mapped) { EXPECT_EQ(open_.erase(mapped), 1u) << "closed twice or never opened"; }
  // Which allocation a mapping shows (-1: none open there).
  int allocation_at(void* mapped) const {
    auto it = open_.find(mapped);
    return it == open_.end() ? -1 : it->second.allocation;
  }
  size_t open_count() const { return open_.size(); }
  int opens = 0;

 private:
  std::map<void*, FakeHandle> open_;
  int next_ = 1;
};

std::unique_ptr<IpcMappings> mappings_over(FakeDriver* driver, size_t kept = 64) {
  return std::make_unique<IpcMappings>(
      [driver](const void* h, void** out) { return driver->open(h, out); },
      [driver](void* m) { driver->close(m); }, kept);
}

constexpr uint64_t kPeer = 11, kOtherPeer = 12;

// The soak on one H200 (2026-12-03): a peer freed a buffer that one communicator's call had
// mapped and cached, the driver gave its chunk to a new buffer, and another communicator's call
// failed to map that one ("already mapped"), since each communicator only cleared its own cache.
TEST(IpcMappings, AStaleMappingAnyCallKeptMakesWayForTheMemoryThatReplacedIt) {
  FakeDriver driver;
  auto mappings = mappings_over(&driver);
  IpcMappings::Call call;
  const FakeHandle freed{1, 100}, replacement{1, 101};
  void* a = nullptr;
  ASSERT_TRUE(mappings->map(&call, kPeer, 100, &freed, &a).is_ok());
  mappings->end_call(&call);  // kept: the next call with that buffer maps nothing
  void* b = nullptr;
  Status st = mappings->map(&call, kPeer, 101, &replacement, &b);
  ASSERT_TRUE(st.is_ok()) << st.message();
  EXPECT_EQ(driver.allocation_at(b), 101);
  EXPECT_EQ(driver.allocation_at(a), -1) << "the stale mapping was closed";
  EXPECT_EQ(mappings->cached(), 1u);
}

// The engine defers closes while its low-latency kernels run (cudaIpcCloseMemHandle waits for
// them): a mapping whose close waits is still in the way, until make_way closes it.
TEST(IpcMappings, ADeferredCloseIsMadeBeforeTheChunkIsMappedAgain) {
  FakeDriver driver;
  std::vector<void*> deferred;
  int ways_made = 0;
  IpcMappings mappings([&driver](const void* h, void** out) { return driver.open(h, out); },
                       [&deferred](void* m) { deferred.push_back(m); }, /*kept=*/0,
                       [&] {
                         ++ways_made;
                         for (void* m : deferred) driver.close(m);
                         deferred.clear();
                       });
  IpcMappings::Call call;
  const FakeHandle freed{1, 100}, replacement{1, 101};
  void* a = nullptr;
  ASSERT_TRUE(mappings.map(&call, kPeer, 100, &freed, &a).is_ok());
  mappings.end_call(&call);  // past `kept`: closed, but only later
  EXPECT_EQ(deferred.size(), 1u);
  EXPECT_EQ(driver.allocation_at(a), 100) << "the close was made at once";
  void* b = nullptr;
  const Status st = mappings.map(&call, kPeer, 101, &replacement, &b);
  ASSERT_TRUE(st.is_ok()) << st.message();
  EXPECT_EQ(ways_made, 1);
  EXPECT_EQ(driver.allocation_at(b), 101);
  EXPECT_EQ(driver.allocation_at(a), -1);
  mappings.end_call(&call);
  for (void* m : deferred) driver.close(m);
}

TEST(IpcMappings, ACachedBufferIsMappedOnce) {
  FakeDriver driver;
  auto mappings = mappings_over(&driver);
  IpcMappings::Call call;
  const FakeHandle buffer{1, 100};
  void* first = nullptr;
  void* again = nullptr;
  ASSERT_TRUE(mappings->map(&call, kPeer, 100, &buffer, &first).is_ok());
  mappings->end_call(&call);
  ASSERT_TRUE(mappings->map(&call, kPeer, 100, &buffer, &again).is_ok());
  EXPECT_EQ(first, again);
  EXPECT_EQ(driver.opens, 1);
}

// A communicator's workspace, opened after a user buffer whose memory the peer reused for it.
TEST(IpcMappings, AKeptOpeningMakesWayTooAndStaysOutOfTheCache) {
  FakeDriver driver;
  auto mappings = mappings_over(&driver);
  IpcMappings::Call call;
  const FakeHandle freed{3, 100}, workspace{3, 200};
  void* a = nullptr;
  void* w = nullptr;
  ASSERT_TRUE(mappings->map(&call, kPeer, 100, &freed, &a).is_ok());
  mappings->end_call(&call);
  ASSERT_TRUE(mappings->open_kept(kPeer, &workspace, &w).is_ok());
  EXPECT_EQ(driver.allocation_at(w), 200);
  EXPECT_EQ(mappings->cached(), 0u);
  mappings.reset();  // closes what it holds: the workspace is its caller's
  EXPECT_EQ(driver.allocation_at(w), 200);
  driver.close(w);
}

TEST(IpcMappings, WhatTheCallUsesIsNotClosedToMakeWay) {
  FakeDriver driver;
  auto mappings = mappings_over(&driver);
  IpcMappings::Call call;
  const FakeHandle send{5, 100}, recv{5, 101};  // two live buffers of one chunk
  void* s = nullptr;
  void* r = nullptr;
  ASSERT_TRUE(mappings->map(&call, kPeer, 100, &send, &s).is_ok());
  Status st = mappings->map(&call, kPeer, 101, &recv, &r);
  EXPECT_EQ(st.code(), Code::kAgain);
  EXPECT_EQ(driver.allocation_at(s), 100) << "the call's own mapping stays open";
  mappings->end_call(&call);
}

TEST(IpcMappings, MakingWayLeavesOtherProcessesMappingsOpen) {
  FakeDriver driver;
  auto mappings = mappings_over(&driver);
  IpcMappings::Call call;
  const FakeHandle other{7, 300}, freed{8, 100}, replacement{8, 101};
  void* o = nullptr;
  void* a = nullptr;
  void* b = nullptr;
  ASSERT_TRUE(mappings->map(&call, kOtherPeer, 300, &other, &o).is_ok());
  ASSERT_TRUE(mappings->map(&call, kPeer, 100, &freed, &a).is_ok());
  mappings->end_call(&call);
  ASSERT_TRUE(mappings->map(&call, kPeer, 101, &replacement, &b).is_ok());
  EXPECT_EQ(driver.allocation_at(o), 300);
  EXPECT_EQ(mappings->cached(), 2u);
}

TEST(IpcMappings, UncachedMappingsEndWithTheirCallAndTheLeastRecentGoPastTheCap) {
  FakeDriver driver;
  auto mappings = mappings_over(&driver, 2);
  IpcMappings::Call call;
  const FakeHandle h1{1, 1}, h2{2, 2}, h3{3, 3}, unnamed{4, 4};
  void* m1 = nullptr;
  void* m2 = nullptr;
  void* m3 = nullptr;
  void* mu = nullptr;
  ASSERT_TRUE(mappings->map(&call, kPeer, 1, &h1, &m1).is_ok());
  mappings->end_call(&call);
  ASSERT_TRUE(mappings->map(&call, kPeer, 2, &h2, &m2).is_ok());
  mappings->end_call(&call);
  ASSERT_TRUE(mappings->map(&call, kPeer, 1, &h1, &m1).is_ok());  // 1 is the most recent again
  ASSERT_TRUE(mappings->map(&call, kPeer, 3, &h3, &m3).is_ok());
  ASSERT_TRUE(mappings->map(&call, kPeer, 0, &unnamed, &mu).is_ok());
  EXPECT_EQ(driver.open_count(), 4u) << "nothing closes while the call runs";
  mappings->end_call(&call);
  EXPECT_EQ(driver.allocation_at(mu), -1);
  EXPECT_EQ(driver.allocation_at(m2), -1) << "the least recently used";
  EXPECT_EQ(driver.allocation_at(m1), 1);
  EXPECT_EQ(driver.allocation_at(m3), 3);
  mappings.reset();
  EXPECT_EQ(driver.open_count(), 0u);
}

// Under MPI_THREAD_MULTIPLE two GPU calls may be under way at once (each lends the engine's lock
// while it waits for its peers): one making way must not close what the other reads or writes.
TEST(IpcMappings, AnotherCallsMappingsAreNotClosedToMakeWay) {
  FakeDriver driver;
  auto mappings = mappings_over(&driver);
  IpcMappings::Call first, second;
  const FakeHandle in_use{9, 100}, same_chunk{9, 101};
  void* a = nullptr;
  void* b = nullptr;
  ASSERT_TRUE(mappings->map(&first, kPeer, 100, &in_use, &a).is_ok());
  EXPECT_EQ(mappings->map(&second, kPeer, 101, &same_chunk, &b).code(), Code::kAgain);
  EXPECT_EQ(driver.allocation_at(a), 100) << "the first call's mapping stays open";
  mappings->end_call(&second);
  mappings->end_call(&first);
  ASSERT_TRUE(mappings->map(&second, kPeer, 101, &same_chunk, &b).is_ok())
      << "once the first call ended, its mapping makes way";
  EXPECT_EQ(driver.allocation_at(b), 101);
  mappings->end_call(&second);
}

TEST(IpcMappings, TheCapSkipsMappingsACallStillUsesAndEachCallClosesOnlyItsOwn) {
  FakeDriver driver;
  auto mappings = mappings_over(&driver, 1);
  IpcMappings::Call first, second;
  const FakeHandle h1{1, 1}, h2{2, 2}, mine{3, 3}, theirs{4, 4};
  void* m1 = nullptr;
  void* m2 = nullptr;
  void* own1 = nullptr;
  void* own2 = nullptr;
  ASSERT_TRUE(mappings->map(&first, kPeer, 1, &h1, &m1).is_ok());
  ASSERT_TRUE(mappings->map(&first, kPeer, 0, &mine, &own1).is_ok());
  ASSERT_TRUE(mappings->map(&second, kPeer, 2, &h2, &m2).is_ok());
  ASSERT_TRUE(mappings->map(&second, kPeer, 0, &theirs, &own2).is_ok());
  mappings->end_call(&second);  // past the cap of 1: only the second call's mapping is idle
  EXPECT_EQ(driver.allocation_at(m1), 1) << "still used by the first call";
  EXPECT_EQ(driver.allocation_at(m2), -1);
  EXPECT_EQ(driver.allocation_at(own1), 3) << "the first call's uncached mapping";
  EXPECT_EQ(driver.allocation_at(own2), -1);
  mappings->end_call(&first);
  EXPECT_EQ(driver.allocation_at(m1), 1) << "kept: within the cap";
  EXPECT_EQ(driver.allocation_at(own1), -1);
  EXPECT_EQ(mappings->cached(), 1u);
}

}  // namespace
}  // namespace efacoll
