// Structural checks of the CUDA IPC paths' schedules (coll/node_schedule.h), every rank at once,
// as schedule_invariants_test.cc checks the fabric's: in each phase no two ranks touch the same
// bytes with one of them writing; nothing is read that was never written; every workspace byte
// written is read before it is overwritten or the call ends; and, run symbolically (each
// element a set of the ranks' contributions), every rank's result holds each contribution
// exactly once, in the right place.
#include "coll/node_schedule.h"

#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "gpu/ll_protocol.h"

namespace efacoll {
namespace {

constexpr size_t kElem = 4;

// An element's symbolic value: which element of the inputs, summed over which ranks.
struct Val {
  long index = -1;  // -1: never written
  uint64_t ranks = 0;
  bool operator==(const Val& o) const { return index == o.index && ranks == o.ranks; }
};

using MemKey = std::pair<int, NodeSpace>;  // (owner rank, space)

std::string where(const MemKey& m, size_t elem) {
  static const char* const kSpaces[] = {"send", "recv", "workspace in", "workspace out"};
  return "rank " + std::to_string(m.first) + " " + kSpaces[static_cast<int>(m.second)] +
         " element " + std::to_string(elem);
}

struct Checker {
  NodeCall shape;  // rank is set per rank
  std::map<MemKey, std::vector<Val>> mem;
  std::map<MemKey, std::vector<bool>> unread;  // workspace elements written, not yet read
  std::vector<std::string> errors;

  std::vector<Val>& at(const NodeRef& r, size_t elems) {
    std::vector<Val>& m = mem[{r.rank, r.space}];
    if (m.size() < r.offset / kElem + elems) m.resize(r.offset / kElem + elems);
    return m;
  }
  void error(const std::string& e) {
    if (errors.size() < 5) errors.push_back(e);
  }

  // Every rank's schedule, phase by phase; ops of one phase apply in rank order (the race check
  // makes that order immaterial).
  void run(const std::vector<std::vector<NodePhase>>& ranks) {
    const size_t phases = ranks[0].size();
    for (const auto& r : ranks) {
      if (r.size() != phases) return error("ranks run different numbers of phases");
      for (size_t i = 0; i < phases; ++i)
        if (r[i].barrier_after != ranks[0][i].barrier_after)
          return error("ranks meet after different phases");
    }
    for (size_t i = 0; i < phases; ++i) {
      check_races(ranks, i);
      for (size_t r = 0; r < ranks.size(); ++r)
        for (const NodeOp& op : ranks[r][i].ops) apply(op);
      if (!ranks[0][i].barrier_after && i + 1 != phases)
        error("phase " + std::to_string(i) + " ends without a barrier before another");
    }
    for (const auto& [m, flags] : unread)
      for (size_t e = 0; e < flags.size(); ++e)
        if (flags[e]) error("written, never read: " + where(m, e));
  }

  void check_races(const std::vector<std::vector<NodePhase>>& ranks, size_t phase) {
    struct Touch {
      int rank;
      size_t begin, end;
      bool write;
    };
    std::map<MemKey, std::vector<Touch>> touches;
    auto key = [&](const NodeRef& r) {
      // In place, the input is the receive buffer.
      const NodeSpace s = shape.inplace && r.space == NodeSpace::kSend ? NodeSpace::kRecv : r.space;
      return MemKey{r.rank, s};
    };
    for (size_t r = 0; r < ranks.size(); ++r) {
      for (const NodeOp& op : ranks[r][phase].ops) {
        touches[key(op.dst)].push_back({int(r), op.dst.offset, op.dst.offset + op.bytes, true});
        for (const NodeRef& s : op.srcs)
          touches[key(s)].push_back({int(r), s.offset, s.offset + op.bytes, false});
      }
    }
    for (const auto& [m, list] : touches)
      for (const Touch& a : list)
        for (const Touch& b : list)
          if (a.rank < b.rank && (a.write || b.write) && a.begin < b.end && b.begin < a.end)
            error("phase " + std::to_string(phase) + ": ranks " + std::to_string(a.rank) + " and " +
                  std::to_string(b.rank) + " race on " + where(m, a.begin / kElem));
  }

  void apply(const NodeOp& op) {
    const size_t n = op.bytes / kElem;
    std::vector<std::vector<Val>> in;
    for (const NodeRef& s : op.srcs) {
      std::vector<Val>& m = at(s, n);
      std::vector<bool>& u = unread[{s.rank, s.space}];
      std::vector<Val> vals(m.begin() + s.offset / kElem, m.begin() + s.offset / kElem + n);
      for (size_t e = 0; e < n; ++e) {
        if (vals[e].index < 0)
          error("reads what was never written: " + where({s.rank, s.space}, s.offset / kElem + e));
        if (u.size() > s.offset / kElem + e) u[s.offset / kElem + e] = false;
      }
      in.push_back(std::move(vals));
    }
    std::vector<Val> out = in[0];
    for (size_t k = 1; k < in.size(); ++k) {
      for (size_t e = 0; e < n; ++e) {
        if (in[k][e].index != out[e].index) error("reduces different elements together");
        if (in[k][e].ranks & out[e].ranks) error("counts a rank's contribution twice");
        out[e].ranks |= in[k][e].ranks;
      }
    }
    std::vector<Val>& d = at(op.dst, n);
    const bool workspace = op.dst.space == NodeSpace::kWsIn || op.dst.space == NodeSpace::kWsOut;
    std::vector<bool>& u = unread[{op.dst.rank, op.dst.space}];
    if (workspace && u.size() < d.size()) u.resize(d.size());
    for (size_t e = 0; e < n; ++e) {
      const size_t i = op.dst.offset / kElem + e;
      if (workspace && u[i])
        error("overwritten before it was read: " + where({op.dst.rank, op.dst.space}, i));
      d[i] = out[e];
      if (workspace) u[i] = true;
    }
  }
};

struct Shape {
  CollKind kind;
  int n;
  size_t count;  // allreduce: elements; allgather: each rank's; reduce-scatter: total
  bool inplace;
  size_t half_elems;
};

std::string name(const Shape& s) {
  return std::string(coll_name(s.kind)) + " n=" + std::to_string(s.n) +
         " count=" + std::to_string(s.count) + (s.inplace ? " in place" : "") +
         " half=" + std::to_string(s.half_elems);
}

void check(const Shape& s, bool direct) {
  SCOPED_TRACE(std::string(direct ? "IPC direct: " : "IPC rounds: ") + name(s));
  Checker c;
  c.shape.kind = s.kind;
  c.shape.nranks = s.n;
  c.shape.elem_size = kElem;
  c.shape.count = s.count;
  c.shape.inplace = s.inplace;
  c.shape.half = s.half_elems * kElem;
  for (int r = 0; r < s.n; ++r)
    c.shape.blocks.push_back(s.count / s.n + (size_t(r) < s.count % s.n));
  // The inputs: element i of rank r's input is (i, {r}); in place it lies in the receive buffer
  // (allgather: at the rank's own block).
  const size_t in_elems = s.kind == CollKind::kAllgather ? s.count : s.count;
  for (int r = 0; r < s.n; ++r) {
    NodeRef in;
    in.rank = r;
    in.space = s.inplace ? NodeSpace::kRecv : NodeSpace::kSend;
    in.offset = s.inplace && s.kind == CollKind::kAllgather ? r * s.count * kElem : 0;
    std::vector<Val>& m = c.at(in, in_elems);
    for (size_t i = 0; i < in_elems; ++i) m[in.offset / kElem + i] = {long(i), uint64_t(1) << r};
  }
  std::vector<std::vector<NodePhase>> ranks;
  for (int r = 0; r < s.n; ++r) {
    NodeCall call = c.shape;
    call.rank = r;
    ranks.push_back(direct ? ipc_direct_schedule(call) : ipc_rounds_schedule(call));
  }
  c.run(ranks);
  const uint64_t all = (uint64_t(1) << s.n) - 1;
  for (int r = 0; r < s.n; ++r) {
    NodeRef out;
    out.rank = r;
    out.space = NodeSpace::kRecv;
    if (s.kind == CollKind::kAllreduce) {
      std::vector<Val>& m = c.at(out, s.count);
      for (size_t i = 0; i < s.count; ++i)
        if (!(m[i] == Val{long(i), all}))
          c.error("rank " + std::to_string(r) + " result " + std::to_string(i) + " wrong");
    } else if (s.kind == CollKind::kAllgather) {
      std::vector<Val>& m = c.at(out, s.n * s.count);
      for (int p = 0; p < s.n; ++p)
        for (size_t i = 0; i < s.count; ++i)
          if (!(m[p * s.count + i] == Val{long(i), uint64_t(1) << p}))
            c.error("rank " + std::to_string(r) + " block " + std::to_string(p) + " element " +
                    std::to_string(i) + " wrong");
    } else {
      size_t begin = 0;
      for (int p = 0; p < r; ++p) begin += c.shape.blocks[p];
      std::vector<Val>& m = c.at(out, c.shape.blocks[r]);
      for (size_t i = 0; i < c.shape.blocks[r]; ++i)
        if (!(m[i] == Val{long(begin + i), all}))
          c.error("rank " + std::to_string(r) + " result " + std::to_string(i) + " wrong");
    }
  }
  for (const std::string& e : c.errors) ADD_FAILURE() << e;
}

std::vector<Shape> shapes() {
  std::vector<Shape> out;
  for (CollKind kind : {CollKind::kAllreduce, CollKind::kAllgather, CollKind::kReduceScatter})
    for (int n : {2, 3, 4, 5, 8})
      for (size_t count : {size_t(0), size_t(1), size_t(n - 1), size_t(7), size_t(37)})
        for (bool inplace : {false, true})
          for (size_t half : {size_t(1), size_t(3), size_t(64)})
            out.push_back({kind, n, count, inplace, half});
  return out;
}

TEST(NodeSchedule, IpcRoundsAreRaceFreeAndExact) {
  for (const Shape& s : shapes()) check(s, false);
}

TEST(NodeSchedule, IpcDirectIsRaceFreeAndExact) {
  for (const Shape& s : shapes()) {
    // The engine leaves in-place reduce-scatter to the rounds (its result would overwrite input
    // a peer may still read): the check below proves why.
    if (s.kind == CollKind::kReduceScatter && s.inplace) continue;
    check(s, true);
  }
}

// IPC direct maps of each peer only what its schedule touches: reduce-scatter reads the peers'
// inputs, allgather writes their results, allreduce both (in place: their receive buffers only).
TEST(NodeSchedule, IpcDirectTouchesOnlyWhatItsCollectiveNeeds) {
  struct Want {
    CollKind kind;
    bool inplace, send, recv;
  };
  for (const Want& w : {Want{CollKind::kAllreduce, false, true, true},
                        Want{CollKind::kAllreduce, true, false, true},
                        Want{CollKind::kAllgather, false, false, true},
                        Want{CollKind::kAllgather, true, false, true},
                        Want{CollKind::kReduceScatter, false, true, false}}) {
    NodeCall c;
    c.kind = w.kind;
    c.nranks = 3;
    c.elem_size = kElem;
    c.count = 12;
    c.blocks = {4, 4, 4};
    c.inplace = w.inplace;
    const std::vector<NodePhase> phases = ipc_direct_schedule(c);
    for (int peer : {1, 2}) {
      SCOPED_TRACE(std::string(coll_name(w.kind)) + (w.inplace ? " in place" : ""));
      EXPECT_EQ(node_schedule_touches(phases, peer, NodeSpace::kSend), w.send);
      EXPECT_EQ(node_schedule_touches(phases, peer, NodeSpace::kRecv), w.recv);
    }
  }
}

// The checks can fail: in-place reduce-scatter on IPC direct races (rank r's result overwrites
// the start of its input, which other ranks read in the same phase).
TEST(NodeSchedule, TheChecksCatchInPlaceReduceScatterOnIpcDirect) {
  ::testing::TestPartResultArray failures;
  {
    ::testing::ScopedFakeTestPartResultReporter reporter(
        ::testing::ScopedFakeTestPartResultReporter::INTERCEPT_ONLY_CURRENT_THREAD, &failures);
    check({CollKind::kReduceScatter, 3, 9, true, 64}, true);
  }
  ASSERT_GT(failures.size(), 0);
  EXPECT_NE(std::string(failures.GetTestPartResult(0).message()).find("race"), std::string::npos)
      << failures.GetTestPartResult(0).message();
}

// The low-latency protocol runs as one kernel, so its structure is checked on its plans
// (gpu/ll_protocol.h), every rank's at once: all ranks take the protocol or none; every flag a
// receiver waits for (one per sender and segment: the kernel's grid) is one its sender writes;
// what a sender pushes into a receiver's slot is what the receiver reads there, from the same
// part of the vector, and fits the slot.
TEST(NodeSchedule, LowLatencyPlansMatchAcrossRanks) {
  const size_t slot = ll_slot_bytes(size_t(2) << 20, 4);
  int compared = 0;
  for (CollKind kind : {CollKind::kAllreduce, CollKind::kAllgather, CollKind::kReduceScatter}) {
    for (int n : {2, 3, 4, 8, 16}) {
      for (size_t count :
           {size_t(0), size_t(1), size_t(5), size_t(4097), size_t(60000), size_t(200000)}) {
        for (bool inplace : {false, true}) {
          SCOPED_TRACE(std::string(coll_name(kind)) + " n=" + std::to_string(n) +
                       " count=" + std::to_string(count) + (inplace ? " in place" : ""));
          std::vector<size_t> blocks(n);
          for (int r = 0; r < n; ++r) blocks[r] = count / n + (size_t(r) < count % n) * (r + 1);
          std::vector<LlCall> plans(n);
          std::vector<bool> fits(n);
          for (int r = 0; r < n; ++r)
            fits[r] = ll_plan(kind, kElem, count, blocks.data(), r, n, inplace, slot, &plans[r]);
          for (int r = 1; r < n; ++r) ASSERT_EQ(fits[r], fits[0]) << "ranks disagree on taking it";
          if (!fits[0]) continue;
          ++compared;
          const LlCall& first = plans[0];
          for (const LlCall& c : plans) {
            ASSERT_EQ(c.segments, first.segments) << "flags waited for that nobody writes";
            ASSERT_EQ(c.segment_bytes, first.segment_bytes);
            ASSERT_EQ(c.packed, first.packed);
            ASSERT_EQ(c.split, first.split);
          }
          for (int s = 0; s < n; ++s) {
            for (int r = 0; r < n; ++r) {
              if (s == r && !plans[s].split) continue;  // own data read in place
              const size_t pushed = plans[s].bytes_to[r];
              const size_t read =
                  kind == CollKind::kAllgather ? plans[r].bytes_to[s] : plans[r].bytes_to[r];
              EXPECT_EQ(pushed, read) << "rank " << s << " to rank " << r;
              if (kind != CollKind::kAllgather) {
                EXPECT_EQ(plans[s].offset_to[r], plans[r].offset_to[r]) << "another part";
              }
              EXPECT_GE(first.segments * first.segment_bytes, pushed) << "bytes past the grid";
              EXPECT_LE(first.packed ? 2 * ((pushed + 3) / 4 * 4) : pushed,
                        first.packed ? slot / 2 : slot)
                  << "past the slot";
            }
          }
        }
      }
    }
  }
  EXPECT_GT(compared, 50);
}

}  // namespace
}  // namespace efacoll
