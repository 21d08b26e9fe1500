#include "transport/mr_cache.h"

#include <gtest/gtest.h>

#include <set>

namespace efacoll {
namespace {

// Counts registrations; each region's desc is a distinct fake pointer.
class CountingTransport : public Transport {
 public:
  const TransportInfo& info() const override { return info_; }
  std::vector<uint8_t> local_address() const override { return {}; }
  Status insert_peers(const std::vector<std::vector<uint8_t>>&, std::vector<PeerAddr>*) override {
    return Status::ok();
  }
  Status register_memory(void* ptr, size_t, MemKind, int, MemRegion* out) override {
    out->desc = reinterpret_cast<void*>(++next_);
    out->base = reinterpret_cast<uintptr_t>(ptr);
    out->handle = out->desc;
    live.insert(out->handle);
    return Status::ok();
  }
  void deregister_memory(MemRegion* region) override {
    EXPECT_EQ(live.erase(region->handle), 1u) << "deregistered twice or never registered";
    *region = MemRegion();
  }
  Status send(PeerAddr, const void*, size_t, uint64_t, const MemRegion*, Completion*) override {
    return Status::ok();
  }
  Status recv(PeerAddr, void*, size_t, uint64_t, const MemRegion*, Completion*) override {
    return Status::ok();
  }
  Status progress(int* n) override { return *n = 0, Status::ok(); }
  void cancel(Completion*) override {}

  std::set<void*> live;

 private:
  TransportInfo info_;
  uintptr_t next_ = 0x1000;
};

TEST(MrCache, ReusesRegistrationsOfTheSameAllocation) {
  CountingTransport t;
  char buf[4096] = {};
  {
    MrCache cache(&t, 4);
    MrCache::Call call;
    const MemRegion *d1, *d2;
    ASSERT_TRUE(cache.acquire(&call, buf, sizeof(buf), 7, MemKind::kHost, -1, &d1).is_ok());
    ASSERT_TRUE(cache.acquire(&call, buf + 100, 200, 7, MemKind::kHost, -1, &d2)
                    .is_ok());  // inside the first
    EXPECT_EQ(d1->desc, d2->desc);
    EXPECT_EQ(cache.registrations(), 1u);
    cache.end_call(&call);
    EXPECT_EQ(t.live.size(), 1u) << "cached registrations outlive the call";
  }
  EXPECT_TRUE(t.live.empty()) << "the cache releases everything it holds";
}

TEST(MrCache, ANewAllocationAtTheSameAddressIsRegisteredAgain) {
  CountingTransport t;
  MrCache cache(&t, 4);
  MrCache::Call call;
  char buf[64] = {};
  const MemRegion* r;
  ASSERT_TRUE(cache.acquire(&call, buf, 64, 1, MemKind::kHost, -1, &r).is_ok());
  void* first = r->desc;
  cache.end_call(&call);
  cache.forget(1);  // freed
  ASSERT_TRUE(cache.acquire(&call, buf, 64, 2, MemKind::kHost, -1, &r).is_ok());
  EXPECT_NE(r->desc, first);
  EXPECT_EQ(t.live.size(), 1u);
}

TEST(MrCache, UnidentifiedMemoryLivesForOneCall) {
  CountingTransport t;
  MrCache cache(&t, 4);
  MrCache::Call call;
  char buf[64] = {};
  const MemRegion* d;
  ASSERT_TRUE(cache.acquire(&call, buf, 64, 0, MemKind::kHost, -1, &d).is_ok());
  ASSERT_TRUE(cache.acquire(&call, buf, 64, 0, MemKind::kHost, -1, &d).is_ok());
  EXPECT_EQ(cache.registrations(), 2u);
  EXPECT_EQ(cache.cached(), 0u);
  cache.end_call(&call);
  EXPECT_TRUE(t.live.empty());
}

TEST(MrCache, EvictsLeastRecentlyUsedBeyondCapacity) {
  CountingTransport t;
  MrCache cache(&t, 2);
  MrCache::Call call;
  char a[8] = {}, b[8] = {}, c[8] = {};
  const MemRegion* d;
  ASSERT_TRUE(cache.acquire(&call, a, 8, 1, MemKind::kHost, -1, &d).is_ok());
  ASSERT_TRUE(cache.acquire(&call, b, 8, 2, MemKind::kHost, -1, &d).is_ok());
  ASSERT_TRUE(
      cache.acquire(&call, a, 8, 1, MemKind::kHost, -1, &d).is_ok());  // a is now the most recent
  ASSERT_TRUE(cache.acquire(&call, c, 8, 3, MemKind::kHost, -1, &d).is_ok());
  EXPECT_EQ(cache.cached(), 3u) << "nothing is evicted while the call may still use it";
  cache.end_call(&call);  // evicts b, the least recently used
  EXPECT_EQ(cache.cached(), 2u);
  EXPECT_EQ(t.live.size(), 2u);
  uint64_t before = cache.registrations();
  ASSERT_TRUE(cache.acquire(&call, a, 8, 1, MemKind::kHost, -1, &d).is_ok());
  EXPECT_EQ(cache.registrations(), before);
  ASSERT_TRUE(cache.acquire(&call, b, 8, 2, MemKind::kHost, -1, &d).is_ok());
  EXPECT_EQ(cache.registrations(), before + 1);
}

// Under MPI_THREAD_MULTIPLE another communicator's call ends while this one still runs.
TEST(MrCache, AnotherCallsEndKeepsWhatThisCallHolds) {
  CountingTransport t;
  MrCache cache(&t, 1);
  char a[8] = {}, b[8] = {}, user[8] = {};
  const MemRegion *ra, *rb, *ru;
  MrCache::Call first, second;
  ASSERT_TRUE(cache.acquire(&first, a, 8, 1, MemKind::kHost, -1, &ra).is_ok());
  ASSERT_TRUE(cache.acquire(&first, user, 8, 0, MemKind::kHost, -1, &ru).is_ok());
  ASSERT_TRUE(cache.acquire(&second, b, 8, 2, MemKind::kHost, -1, &rb).is_ok());
  void* a_handle = ra->handle;
  cache.end_call(&second);  // over capacity, but a is held: b (most recent, free) goes instead
  EXPECT_EQ(cache.cached(), 1u);
  EXPECT_EQ(t.live.count(a_handle), 1u);
  EXPECT_EQ(t.live.count(ru->handle), 1u) << "the first call's own registration survives";
  cache.end_call(&first);
  EXPECT_EQ(t.live.size(), 1u);
  EXPECT_EQ(cache.cached_bytes(), 8u);
}

TEST(MrCache, EmptyRangesNeedNoRegistration) {
  CountingTransport t;
  MrCache cache(&t, 2);
  MrCache::Call call;
  const MemRegion* d = reinterpret_cast<const MemRegion*>(1);
  ASSERT_TRUE(cache.acquire(&call, nullptr, 0, 1, MemKind::kHost, -1, &d).is_ok());
  EXPECT_EQ(d, nullptr);
  EXPECT_EQ(cache.registrations(), 0u);
}

// A retired allocation keeps its registration open, out of use, until the cache closes: a
// late write lands in it rather than meeting a closed key.
TEST(MrCache, RetiredRegistrationsStayOpenUnusedUntilTheCacheCloses) {
  CountingTransport t;
  char buf[4096] = {}, other[4096] = {};
  {
    MrCache cache(&t, 1);
    MrCache::Call call;
    const MemRegion *held, *again, *evicting;
    ASSERT_TRUE(cache.acquire(&call, buf, sizeof(buf), 7, MemKind::kHost, -1, &held).is_ok());
    cache.retire(7);
    EXPECT_EQ(held->desc, reinterpret_cast<void*>(0x1001)) << "a call still holding it keeps it";
    cache.end_call(&call);
    EXPECT_EQ(cache.cached(), 0u);
    EXPECT_EQ(cache.retired(), 1u);
    ASSERT_TRUE(cache.acquire(&call, buf, sizeof(buf), 7, MemKind::kHost, -1, &again).is_ok());
    EXPECT_NE(again->desc, reinterpret_cast<void*>(0x1001)) << "never handed out again";
    cache.end_call(&call);
    ASSERT_TRUE(
        cache.acquire(&call, other, sizeof(other), 8, MemKind::kHost, -1, &evicting).is_ok());
    cache.end_call(&call);
    cache.forget(7);
    EXPECT_EQ(t.live.count(reinterpret_cast<void*>(0x1001)), 1u)
        << "neither eviction nor forget closes it";
  }
  EXPECT_TRUE(t.live.empty()) << "the cache closes retired registrations too";
}

TEST(MrCache, RetiredRegistrationsCloseOnlyWhenNoCallHoldsThem) {
  CountingTransport t;
  char buf[4096] = {}, other[4096] = {};
  MrCache cache(&t, 4);
  MrCache::Call call, kept;
  const MemRegion *held, *cached;
  ASSERT_TRUE(cache.acquire(&call, buf, sizeof(buf), 7, MemKind::kHost, -1, &held).is_ok());
  ASSERT_TRUE(cache.acquire(&kept, other, sizeof(other), 8, MemKind::kHost, -1, &cached).is_ok());
  cache.end_call(&kept);
  cache.retire(7);
  EXPECT_FALSE(cache.close_retired()) << "a call still holds it";
  EXPECT_EQ(t.live.count(held->desc), 1u);
  cache.end_call(&call);
  EXPECT_TRUE(cache.close_retired());
  EXPECT_EQ(cache.retired(), 0u);
  EXPECT_EQ(t.live.size(), 1u) << "only the retired registration closes";
  EXPECT_EQ(t.live.count(cached->desc), 1u);
}

// A call that failed with operations that may still reach its memory (posted receives, late
// writes): neither its own registrations nor the cached ones it used close at its end, nor by
// eviction; they close with the retired ones once nothing can reach them (EFA: closing a
// registration under a posted operation is undefined).
TEST(MrCache, AFailedCallsRegistrationsStayOpenUntilNothingCanReachThem) {
  CountingTransport t;
  char own[4096] = {}, cached[4096] = {}, filler[3][4096] = {};
  MrCache cache(&t, 1);
  MrCache::Call call;
  const MemRegion *own_mr, *cached_mr;
  ASSERT_TRUE(cache.acquire(&call, own, sizeof(own), 0, MemKind::kHost, -1, &own_mr).is_ok());
  ASSERT_TRUE(
      cache.acquire(&call, cached, sizeof(cached), 9, MemKind::kHost, -1, &cached_mr).is_ok());
  void* own_handle = own_mr->handle;
  void* cached_handle = cached_mr->handle;
  cache.end_call(&call, /*still_in_use=*/true);
  EXPECT_EQ(t.live.count(own_handle), 1u) << "the call's own registration closed";
  EXPECT_EQ(t.live.count(cached_handle), 1u) << "the cached registration closed";
  EXPECT_EQ(cache.retired(), 2u);
  // Later calls fill the cache past its capacity: eviction does not reach retired entries, and
  // the retired allocation is registered anew, not reused.
  for (auto& f : filler) {
    MrCache::Call later;
    const MemRegion* r;
    ASSERT_TRUE(cache.acquire(&later, f, sizeof(f), 100 + (&f - filler), MemKind::kHost, -1, &r)
                    .is_ok());
    cache.end_call(&later);
  }
  MrCache::Call again;
  const MemRegion* fresh;
  ASSERT_TRUE(cache.acquire(&again, cached, sizeof(cached), 9, MemKind::kHost, -1, &fresh).is_ok());
  EXPECT_NE(fresh->handle, cached_handle);
  cache.end_call(&again);
  EXPECT_EQ(t.live.count(own_handle) + t.live.count(cached_handle), 2u);
  EXPECT_TRUE(cache.close_retired());
  EXPECT_EQ(t.live.count(own_handle) + t.live.count(cached_handle), 0u);
}

}  // namespace
}  // namespace efacoll
