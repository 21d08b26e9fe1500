// Structural checks of every builder's schedules, across all ranks at once: every send has
// exactly one matching receive, the graph has no cycle, and no two operations touching the
// same memory (one of them writing) can run concurrently.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include "coll/builders.h"
#include "coll/registry.h"
#include "core/staging.h"

namespace efacoll {
namespace {

// One builder of the registry (coll/registry.h) on one shape of call.
struct Case {
  const ScheduleBuilder* builder;
  int n;
  std::vector<size_t> blocks;
  bool inplace;
  int per_node = 0;  // ranks per declared node: the hierarchical schedule's, or channels' rotation
  int channels = 1;
};

RingArgs ring_args(const Case& c, int rank, size_t chunk) {
  RingArgs a;
  a.rank = rank;
  a.nranks = c.n;
  a.elem_size = 4;
  a.block_counts = c.blocks;
  a.inplace = c.inplace;
  a.chunk_bytes = chunk;
  return a;
}

// One channel: the builder with exactly this chunk (small chunks reach the multi-chunk paths).
// Several: composed as the engine composes a call (build_call_schedule).
Status build(const Case& c, int rank, size_t chunk, Schedule* s) {
  RingArgs a = ring_args(c, rank, chunk);
  if (c.channels <= 1) return c.builder->build(a, c.per_node, s);
  return build_call_schedule(*c.builder, a, c.per_node, c.channels, s);
}

std::vector<Case> cases() {
  std::vector<Case> out;
  for (int n : {1, 2, 3, 4, 5, 6, 7, 8, 16}) {
    for (bool inplace : {false, true}) {
      for (size_t count : {size_t(0), size_t(1), size_t(n - 1), size_t(37), size_t(100)}) {
        std::vector<size_t> even(n, count / n);
        for (size_t i = 0; i < count % n; ++i) ++even[i];
        std::vector<size_t> zeros(n);
        for (int r = 0; r < n; ++r) zeros[r] = r % 2 ? 0 : count;
        const std::vector<size_t> same(n, count);
        // Channels: rings rotated across declared nodes of 2 where there are several.
        const int rot = n % 2 == 0 && n > 2 ? 2 : 0;
        for (const ScheduleBuilder& b : schedule_builders()) {
          std::vector<std::vector<size_t>> shapes = {b.kind == CollKind::kAllgather ? same : even};
          if (b.kind == CollKind::kReduceScatter) shapes.push_back(zeros);
          for (const std::vector<size_t>& blocks : shapes) {
            if (b.needs_nodes) {
              for (int per_node : {2, 4})
                if (n % per_node == 0 && n > per_node)
                  out.push_back({&b, n, blocks, inplace, per_node});
              continue;
            }
            out.push_back({&b, n, blocks, inplace});
            if (builder_takes_channels(b, inplace))
              out.push_back({&b, n, blocks, inplace, rot, &blocks == &shapes[0] ? 3 : 2});
          }
        }
      }
    }
  }
  return out;
}

std::string name(const Case& c) {
  std::string s = std::string(c.builder->name) + " " + coll_name(c.builder->kind) +
                  " n=" + std::to_string(c.n) + (c.inplace ? " inplace" : "") +
                  (c.channels > 1 ? " channels " + std::to_string(c.channels) : "") + " blocks";
  for (size_t b : c.blocks) s += " " + std::to_string(b);
  return s;
}

// Reachability over the DAG (bitsets per op): small schedules only.
std::vector<std::vector<bool>> reachability(const Schedule& s, bool* acyclic) {
  const size_t n = s.ops.size();
  std::vector<uint32_t> indeg = s.num_deps, order;
  for (uint32_t i = 0; i < n; ++i)
    if (indeg[i] == 0) order.push_back(i);
  for (size_t k = 0; k < order.size(); ++k)
    for (uint32_t next : s.successors[order[k]])
      if (--indeg[next] == 0) order.push_back(next);
  *acyclic = order.size() == n;
  std::vector<std::vector<bool>> reach(n, std::vector<bool>(n, false));
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    for (uint32_t next : s.successors[*it]) {
      reach[*it][next] = true;
      for (size_t j = 0; j < n; ++j)
        if (reach[next][j]) reach[*it][j] = true;
    }
  }
  return reach;
}

struct Access {
  int space;  // in place, send and receive buffers are one memory
  size_t begin, end;
  bool write;
};

std::vector<Access> accesses(const Op& op, bool inplace) {
  auto space = [&](BufId b) { return (inplace && b == BufId::kSend) ? int(BufId::kRecv) : int(b); };
  auto range = [&](const BufRef& r, bool w) {
    return Access{space(r.buf), r.offset, r.offset + op.bytes, w};
  };
  switch (op.kind) {
    case OpKind::kSend:
      return {range(op.src, false)};
    case OpKind::kRecv:
      return {range(op.dst, true)};
    case OpKind::kReduce:
      return {range(op.src, false), range(op.src2, false), range(op.dst, true)};
    case OpKind::kCopy:
      return {range(op.src, false), range(op.dst, true)};
  }
  return {};
}

TEST(ScheduleInvariants, EverySendMatchedAcyclicAndRaceFree) {
  for (const Case& c : cases()) {
    for (size_t chunk : {size_t(4), size_t(12), size_t(1 << 20)}) {
      // The race check is quadratic in ops: one-element chunks only up to 8 ranks.
      if (c.n > 8 && chunk == 4) continue;
      SCOPED_TRACE(name(c) + " chunk " + std::to_string(chunk));
      using Key = std::tuple<int, int, uint32_t>;  // sender, receiver, msg id
      std::map<Key, size_t> sends, recvs;
      std::set<std::pair<int, uint32_t>> sender_ids;
      for (int r = 0; r < c.n; ++r) {
        Schedule s;
        ASSERT_TRUE(build(c, r, chunk, &s).is_ok());
        for (const Op& op : s.ops) {
          if (op.kind == OpKind::kSend) {
            ASSERT_TRUE(sends.emplace(Key{r, op.peer, op.msg_id}, op.bytes).second)
                << "duplicate send";
            // The tag holds the sender and the message id, not the receiver: the one-sided
            // protocol's clear-to-send would match any of two sends sharing them.
            ASSERT_TRUE(sender_ids.emplace(r, op.msg_id).second)
                << "rank " << r << " sends message id " << op.msg_id << " to two peers";
            ASSERT_GT(op.bytes, 0u);
          }
          if (op.kind == OpKind::kRecv) {
            ASSERT_TRUE(recvs.emplace(Key{op.peer, r, op.msg_id}, op.bytes).second)
                << "duplicate recv";
          }
        }
        bool acyclic = false;
        auto reach = reachability(s, &acyclic);
        ASSERT_TRUE(acyclic) << s.describe();
        for (size_t i = 0; i < s.ops.size(); ++i) {
          for (size_t j = i + 1; j < s.ops.size(); ++j) {
            if (reach[i][j] || reach[j][i]) continue;
            for (const Access& a : accesses(s.ops[i], c.inplace)) {
              for (const Access& b : accesses(s.ops[j], c.inplace)) {
                bool overlap = a.space == b.space && a.begin < b.end && b.begin < a.end;
                ASSERT_FALSE(overlap && (a.write || b.write))
                    << "rank " << r << ": ops " << i << " and " << j << " race\n"
                    << s.describe();
              }
            }
          }
        }
      }
      EXPECT_EQ(sends, recvs) << "every send needs exactly one receive of the same size";
    }
  }
}

// When each operation starts, all ranks' schedules run together in lockstep: an operation is
// ready once its dependencies are done; a local one is done at once, a send when it starts, a
// receive one step after its send started (or when it is posted, if later). Ties go by index, as
// the executor takes ready operations. in_lanes: as the executor where the transport
// needs_posting_order, a send or receive also waits until the one listed before it with the same
// peer (and direction) has started; and a send is done only once its receive is posted, as
// udp;ofi_rxd acknowledges a message only into a posted receive. Returns when each started, per
// rank and operation (-1: never).
std::vector<std::vector<int>> lockstep_ready(const std::vector<Schedule>& ranks, bool in_lanes) {
  using Key = std::tuple<int, int, uint32_t>;  // sender, receiver, msg id
  std::map<Key, int> send_start, recv_start;
  std::vector<std::vector<int>> when(ranks.size()), done(ranks.size());
  for (size_t r = 0; r < ranks.size(); ++r) {
    when[r].assign(ranks[r].ops.size(), -1);
    done[r].assign(ranks[r].ops.size(), -1);
  }
  for (bool moved = true; moved;) {
    moved = false;
    for (size_t r = 0; r < ranks.size(); ++r) {
      const Schedule& s = ranks[r];
      std::vector<int> ready(s.ops.size(), 0);
      std::vector<bool> known(s.ops.size(), true);
      for (uint32_t i = 0; i < s.ops.size(); ++i) {
        for (uint32_t next : s.successors[i]) {
          if (done[r][i] < 0) known[next] = false;
          ready[next] = std::max(ready[next], done[r][i]);
        }
      }
      std::map<std::pair<int, OpKind>, uint32_t> lane_last;
      for (uint32_t i = 0; in_lanes && i < s.ops.size(); ++i) {
        const Op& op = s.ops[i];
        if (op.kind != OpKind::kSend && op.kind != OpKind::kRecv) continue;
        auto [it, first] = lane_last.emplace(std::make_pair(op.peer, op.kind), i);
        if (first) continue;
        if (when[r][it->second] < 0) known[i] = false;
        ready[i] = std::max(ready[i], when[r][it->second]);
        it->second = i;
      }
      for (uint32_t i = 0; i < s.ops.size(); ++i) {
        const Op& op = s.ops[i];
        const Key key = op.kind == OpKind::kSend ? Key{static_cast<int>(r), op.peer, op.msg_id}
                                                 : Key{op.peer, static_cast<int>(r), op.msg_id};
        if (when[r][i] < 0 && known[i]) {
          when[r][i] = ready[i];
          if (op.kind == OpKind::kSend) send_start[key] = ready[i];
          if (op.kind == OpKind::kRecv) recv_start[key] = ready[i];
          moved = true;
        }
        if (when[r][i] < 0 || done[r][i] >= 0) continue;
        int finish = when[r][i];
        if (op.kind == OpKind::kSend && in_lanes) {
          auto it = recv_start.find(key);
          if (it == recv_start.end()) continue;
          finish = std::max(finish, it->second);
        } else if (op.kind == OpKind::kRecv) {
          auto it = send_start.find(key);
          if (it == send_start.end()) continue;
          finish = std::max(finish, it->second + 1);
        }
        done[r][i] = finish;
        moved = true;
      }
    }
  }
  return when;
}

// Each rank posts its receives from a peer in the order that peer starts the sends, where every
// message takes as long: a provider then matches each message with the first receive it tries
// (udp;ofi_rxd 1.17 loses multi-packet messages from a peer that arrive in another order than
// their receives were posted). Also with each peer's operations started in schedule order and
// sends done only once received, as where the transport's provider needs_posting_order
// (ProviderQuirks): then every schedule still runs to its end.
TEST(ScheduleInvariants, EachPeersReceivesArePostedInTheOrderItSends) {
  for (const Case& c : cases()) {
    for (auto [chunk, in_lanes] : {std::pair{size_t(4), false},
                                   {size_t(12), false},
                                   {size_t(1 << 20), false},
                                   {size_t(4), true},
                                   {size_t(12), true}}) {
      SCOPED_TRACE(name(c) + " chunk " + std::to_string(chunk) + (in_lanes ? " in lanes" : ""));
      std::vector<Schedule> ranks(c.n);
      for (int r = 0; r < c.n; ++r) ASSERT_TRUE(build(c, r, chunk, &ranks[r]).is_ok());
      const std::vector<std::vector<int>> ready = lockstep_ready(ranks, in_lanes);
      // (from, to) -> (start, rank's op index, msg id), sorted into the order of starting.
      std::map<std::pair<int, int>, std::vector<std::tuple<int, uint32_t, uint32_t>>> sent, posted;
      for (int r = 0; r < c.n; ++r) {
        for (uint32_t i = 0; i < ranks[r].ops.size(); ++i) {
          const Op& op = ranks[r].ops[i];
          ASSERT_GE(ready[r][i], 0) << "rank " << r << " op " << i << " never ran";
          if (op.kind == OpKind::kSend) sent[{r, op.peer}].emplace_back(ready[r][i], i, op.msg_id);
          if (op.kind == OpKind::kRecv)
            posted[{op.peer, r}].emplace_back(ready[r][i], i, op.msg_id);
        }
      }
      auto ids = [](auto& m) {
        std::map<std::pair<int, int>, std::vector<uint32_t>> out;
        for (auto& [pair, list] : m) {
          std::sort(list.begin(), list.end());
          for (auto& e : list) out[pair].push_back(std::get<2>(e));
        }
        return out;
      };
      EXPECT_EQ(ids(sent), ids(posted));
    }
  }
}

// The executor posts a peer's sends, and its receives from a peer, in schedule order (a lane's
// operation waits until the one listed before it is posted): so that every provider matches each
// message with the first receive it tries, each rank must list its sends to a peer in the order
// that peer lists its receives from it. Dependencies must point forward, or holding an operation
// behind an earlier one of its lane could wait on itself.
TEST(ScheduleInvariants, EachPeersSendsAreListedInTheOrderItsReceivesAre) {
  for (const Case& c : cases()) {
    for (size_t chunk : {size_t(4), size_t(12), size_t(1 << 20)}) {
      SCOPED_TRACE(name(c) + " chunk " + std::to_string(chunk));
      std::map<std::pair<int, int>, std::vector<uint32_t>> sent, posted;  // (from, to) -> ids
      for (int r = 0; r < c.n; ++r) {
        Schedule s;
        ASSERT_TRUE(build(c, r, chunk, &s).is_ok());
        for (uint32_t i = 0; i < s.ops.size(); ++i) {
          const Op& op = s.ops[i];
          if (op.kind == OpKind::kSend) sent[{r, op.peer}].push_back(op.msg_id);
          if (op.kind == OpKind::kRecv) posted[{op.peer, r}].push_back(op.msg_id);
          for (uint32_t next : s.successors[i])
            ASSERT_LT(i, next) << "rank " << r << ": op " << next << " depends on a later op";
        }
      }
      EXPECT_EQ(sent, posted);
    }
  }
}

// GPU data staged through host slots (core/staging.h) adds waits for slots; in lane order, with
// sends done only once received, every schedule still runs to its end, even on two slots a side.
TEST(ScheduleInvariants, StagedSchedulesRunToTheirEndInLaneOrder) {
  for (const Case& c : cases()) {
    if (c.n > 8) continue;
    for (int slots : {2, 8}) {
      SCOPED_TRACE(name(c) + " slots " + std::to_string(slots));
      std::vector<Schedule> ranks(c.n);
      for (int r = 0; r < c.n; ++r) {
        Schedule s;
        ASSERT_TRUE(build(c, r, 12, &s).is_ok());
        StagePlan plan;
        plan.slot_bytes = std::max<size_t>(1, largest_message(s));
        plan.send_slots = plan.recv_slots = slots;
        ranks[r] = stage_network_ops(s, GpuBuffers{true, true, true}, plan);
      }
      const std::vector<std::vector<int>> started = lockstep_ready(ranks, true);
      for (int r = 0; r < c.n; ++r) {
        for (uint32_t i = 0; i < ranks[r].ops.size(); ++i)
          ASSERT_GE(started[r][i], 0) << "rank " << r << " op " << i << " never ran";
      }
    }
  }
}

TEST(ScheduleInvariants, ReportsWhenTagsCannotNumberTheChunks) {
  RingArgs a;
  a.nranks = 4;
  a.elem_size = 1;
  a.block_counts.assign(4, size_t(1) << 20);
  a.chunk_bytes = 1;  // a million chunks per block, 8 steps: more than 20 bits of message ids
  Schedule s;
  EXPECT_EQ(build_ring_allreduce(a, &s).code(), Code::kInvalid);
}

}  // namespace
}  // namespace efacoll

namespace efacoll {
namespace {

TEST(EvenSplit, SlicesMatchTheBlocks) {
  for (size_t count : {size_t(0), size_t(1), size_t(7), size_t(100)}) {
    for (int n : {1, 3, 8}) {
      std::vector<size_t> blocks = even_blocks(count, n);
      size_t at = 0;
      for (int p = 0; p < n; ++p) {
        size_t begin, len;
        even_slice(count, n, p, &begin, &len);
        EXPECT_EQ(begin, at);
        EXPECT_EQ(len, blocks[p]);
        at += len;
      }
      EXPECT_EQ(at, count);
    }
  }
}

}  // namespace
}  // namespace efacoll
