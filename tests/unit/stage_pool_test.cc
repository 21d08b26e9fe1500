#include "engine/stage_pool.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <vector>

namespace efacoll {
namespace {

// Pinned memory as the pool sees it: allocations, frees and forgotten registrations counted.
struct FakeMemory {
  std::map<void*, size_t> live;  // what each allocation's size was
  std::vector<uint64_t> forgotten;
  uint64_t next = 1;
  bool fail = false;
  StagePool::Memory memory() {
    StagePool::Memory m;
    m.alloc = [this](size_t bytes, void** out) {
      if (fail) return Status(Code::kInternal, "out of pinned memory");
      *out = std::malloc(bytes);
      live[*out] = bytes;
      return Status::ok();
    };
    m.free = [this](void* p, size_t bytes) {
      auto it = live.find(p);
      ASSERT_NE(it, live.end()) << "freed twice or never allocated";
      EXPECT_EQ(it->second, bytes) << "freed with another size than allocated";
      live.erase(it);
      std::free(p);
    };
    m.next_id = [this] { return next++; };
    m.forget = [this](uint64_t id) { forgotten.push_back(id); };
    return m;
  }
};

// Calls under way together (threads on different communicators) never share slots.
TEST(StagePool, CallsUnderWayTogetherGetSetsOfTheirOwn) {
  FakeMemory mem;
  StagePool pool(mem.memory());
  StageSet* a = nullptr;
  StageSet* b = nullptr;
  ASSERT_TRUE(pool.acquire(4096, &a).is_ok());
  ASSERT_TRUE(pool.acquire(4096, &b).is_ok());
  EXPECT_NE(a->ptr, b->ptr);
  EXPECT_NE(a->id, b->id);
  EXPECT_EQ(pool.sets(), 2u);
  pool.release(a);
  StageSet* c = nullptr;
  ASSERT_TRUE(pool.acquire(1024, &c).is_ok());
  EXPECT_EQ(c, a) << "a released set is taken again";
  EXPECT_EQ(pool.sets(), 2u);
}

TEST(StagePool, AFreeSetTooSmallGrowsAndItsRegistrationIsForgotten) {
  FakeMemory mem;
  StagePool pool(mem.memory());
  StageSet* s = nullptr;
  ASSERT_TRUE(pool.acquire(1024, &s).is_ok());
  const uint64_t old_id = s->id;
  pool.release(s);
  ASSERT_TRUE(pool.acquire(8192, &s).is_ok());
  EXPECT_GE(s->bytes, 8192u);
  EXPECT_NE(s->id, old_id) << "new memory, new identity for the registration cache";
  EXPECT_EQ(mem.forgotten, std::vector<uint64_t>{old_id});
  EXPECT_EQ(pool.sets(), 1u);
  EXPECT_EQ(mem.live.size(), 1u);
}

TEST(StagePool, TheSmallestFreeSetThatFitsIsTaken) {
  FakeMemory mem;
  StagePool pool(mem.memory());
  StageSet* big = nullptr;
  StageSet* small = nullptr;
  ASSERT_TRUE(pool.acquire(1 << 20, &big).is_ok());
  ASSERT_TRUE(pool.acquire(4096, &small).is_ok());
  pool.release(big);
  pool.release(small);
  StageSet* s = nullptr;
  ASSERT_TRUE(pool.acquire(2048, &s).is_ok());
  EXPECT_EQ(s, small);
}

TEST(StagePool, ARetiredSetLeavesThePoolAndItsMemoryIsTheCallers) {
  FakeMemory mem;
  void* retired = nullptr;
  {
    StagePool pool(mem.memory());
    StageSet* s = nullptr;
    ASSERT_TRUE(pool.acquire(4096, &s).is_ok());
    retired = pool.retire(s);
    EXPECT_EQ(pool.sets(), 0u);
    StageSet* next = nullptr;
    ASSERT_TRUE(pool.acquire(4096, &next).is_ok());
    EXPECT_NE(next->ptr, retired) << "late writes may still reach the retired memory";
  }
  ASSERT_EQ(mem.live.size(), 1u) << "the pool freed all but the retired set";
  EXPECT_EQ(mem.live.begin()->first, retired);
  mem.memory().free(retired, 4096);
}

TEST(StagePool, AFailedAllocationLeavesNoSetBehind) {
  FakeMemory mem;
  StagePool pool(mem.memory());
  mem.fail = true;
  StageSet* s = nullptr;
  EXPECT_EQ(pool.acquire(4096, &s).code(), Code::kInternal);
  EXPECT_EQ(pool.sets(), 0u);
  mem.fail = false;
  ASSERT_TRUE(pool.acquire(4096, &s).is_ok());
  EXPECT_EQ(pool.sets(), 1u);
}

}  // namespace
}  // namespace efacoll
