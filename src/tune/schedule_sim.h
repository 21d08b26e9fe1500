// Runs every rank's schedule of one collective in simulated time, on the cost model's link: a
// send and its receive meet once both are ready (after their dependencies) and the sender's
// outgoing and the receiver's incoming link are free; reductions and copies take the local
// reduction rate. Shows that the schedules complete together (no deadlock, every message met)
// and how long they would take, to compare with the analytic model.
#pragma once
#include <string>
#include <vector>

#include "core/schedule.h"
#include "efacoll/algo.h"
#include "efacoll/status.h"

namespace efacoll {

struct SimResult {
  double finish_us = 0;  // when the last rank's last operation ends
  size_t ops = 0;
};

// kInternal naming the operations left waiting when the schedules cannot all complete.
Status simulate_schedules(const std::vector<Schedule>& ranks, const LinkCost& link,
                          const CostModel& model, SimResult* out);

}  // namespace efacoll
