#include "tune/schedule_sim.h"

#include <algorithm>
#include <map>
#include <tuple>

namespace efacoll {

Status simulate_schedules(const std::vector<Schedule>& ranks, const LinkCost& link,
                          const CostModel& model, SimResult* out) {
  const int n = static_cast<int>(ranks.size());
  const double bytes_per_us = link.gbps * 1e3, reduce_per_us = model.reduce_gbps * 1e3;
  std::vector<std::vector<int>> deps_left(n);
  std::vector<std::vector<double>> ready(n), finish(n);
  std::vector<std::vector<bool>> done(n);
  // (sender, receiver, message id) -> the receive's op index at the receiver.
  std::map<std::tuple<int, int, uint32_t>, uint32_t> recv_of;
  size_t total = 0;
  for (int r = 0; r < n; ++r) {
    const Schedule& s = ranks[r];
    deps_left[r].assign(s.num_deps.begin(), s.num_deps.end());
    ready[r].assign(s.ops.size(), 0);
    finish[r].assign(s.ops.size(), 0);
    done[r].assign(s.ops.size(), false);
    total += s.ops.size();
    for (uint32_t i = 0; i < s.ops.size(); ++i) {
      if (s.ops[i].kind == OpKind::kRecv) recv_of[{s.ops[i].peer, r, s.ops[i].msg_id}] = i;
    }
  }
  std::vector<double> out_free(n, 0), in_free(n, 0), compute_free(n, 0);
  auto complete = [&](int r, uint32_t i, double t) {
    done[r][i] = true;
    finish[r][i] = t;
    for (uint32_t succ : ranks[r].successors[i]) {
      ready[r][succ] = std::max(ready[r][succ], t);
      --deps_left[r][succ];
    }
    out->finish_us = std::max(out->finish_us, t);
  };
  // List scheduling in time order: always commit the operation that can start earliest, so
  // that a link is never booked by an operation that starts later than another one waiting.
  size_t finished = 0;
  for (;;) {
    int best_rank = -1;
    uint32_t best_op = 0, best_recv = 0;
    double best_start = 0;
    for (int r = 0; r < n; ++r) {
      const Schedule& s = ranks[r];
      for (uint32_t i = 0; i < s.ops.size(); ++i) {
        if (done[r][i] || deps_left[r][i] > 0) continue;
        const Op& op = s.ops[i];
        double start;
        uint32_t j = 0;
        if (op.kind == OpKind::kRecv) continue;  // completed with its send
        if (op.kind == OpKind::kSend) {
          auto it = recv_of.find({r, op.peer, op.msg_id});
          if (it == recv_of.end()) return Status(Code::kInternal, "a send without a receive");
          j = it->second;
          if (done[op.peer][j] || deps_left[op.peer][j] > 0) continue;  // receive not posted
          start = std::max({ready[r][i] + model.per_message_us, ready[op.peer][j], out_free[r],
                            in_free[op.peer]});
        } else {
          start = std::max(ready[r][i], compute_free[r]);
        }
        if (best_rank < 0 || start < best_start) {
          best_rank = r;
          best_op = i;
          best_recv = j;
          best_start = start;
        }
      }
    }
    if (best_rank < 0) break;
    const Op& op = ranks[best_rank].ops[best_op];
    if (op.kind == OpKind::kSend) {
      const double wire = op.bytes / bytes_per_us;
      out_free[best_rank] = in_free[op.peer] = best_start + wire;
      complete(best_rank, best_op, best_start + wire);
      complete(op.peer, best_recv, best_start + link.alpha_us + wire);
      finished += 2;
    } else {
      compute_free[best_rank] = best_start + op.bytes / reduce_per_us;
      complete(best_rank, best_op, compute_free[best_rank]);
      ++finished;
    }
  }
  out->ops = finished;
  if (finished < total) {
    std::string stuck;
    for (int r = 0; r < n && stuck.size() < 200; ++r) {
      for (uint32_t i = 0; i < ranks[r].ops.size(); ++i) {
        if (!done[r][i]) {
          stuck += " rank " + std::to_string(r) + " op " + std::to_string(i);
          break;
        }
      }
    }
    return Status(Code::kInternal, std::to_string(total - finished) +
                                       " operations never complete (deadlock):" + stuck);
  }
  return Status::ok();
}

}  // namespace efacoll
