#include "mpi_gpu_cases.h"

#include <cstring>
#include <tuple>

namespace gputest {

const char* coll_label(Coll c) {
  switch (c) {
    case Coll::kAllreduce:
      return "MPI_Allreduce";
    case Coll::kReduceScatterBlock:
      return "MPI_Reduce_scatter_block";
    case Coll::kReduceScatter:
      return "MPI_Reduce_scatter";
    case Coll::kAllgather:
      return "MPI_Allgather";
  }
  return "?";
}

efacoll_collective counter_of(Coll c) {
  if (c == Coll::kAllreduce) return EFACOLL_ALLREDUCE;
  if (c == Coll::kAllgather) return EFACOLL_ALLGATHER;
  return EFACOLL_REDUCE_SCATTER;
}

std::string case_name(const Case& c) {
  std::string n = std::string(coll_label(c.coll)) + " " + c.cu->name + " " + c.t->name;
  if (c.coll != Coll::kAllgather && c.label.empty()) n += std::string(" ") + op_of(c.op).name;
  if (!c.label.empty()) n += " " + c.label;
  n += " count=" + std::to_string(c.count);
  if (c.inplace) n += " in-place";
  if (c.nonblocking) n += " nonblocking";
  if (c.send_where != Where::kDevice || c.recv_where != Where::kDevice) {
    n += std::string(" send=") + where_name(c.send_where) + " recv=" + where_name(c.recv_where);
  }
  for (size_t r = 0; r < c.by_rank.size(); ++r) {
    n += std::string(r ? "," : " by rank ") + where_name(c.by_rank[r].first) + "/" +
         where_name(c.by_rank[r].second);
  }
  if (c.offset_elems) n += " offset=" + std::to_string(c.offset_elems);
  return n;
}

std::string g_filter;

bool filtered_out(const std::string& name) {
  if (g_filter.empty()) return false;
  size_t begin = 0;
  for (;;) {
    const size_t end = g_filter.find('|', begin);
    const std::string word = g_filter.substr(begin, end == std::string::npos ? end : end - begin);
    if (!word.empty() && name.find(word) != std::string::npos) return false;
    if (end == std::string::npos) return true;
    begin = end + 1;
  }
}

size_t irregular_count(size_t base, int comm_rank) {
  return base == 0 || comm_rank % 3 == 1 ? 0 : base + 3 * static_cast<size_t>(comm_rank);
}

void run_case(const Case& c) {
  const std::string name = case_name(c);
  if (filtered_out(name)) return;
  const CommUnderTest& cu = *c.cu;
  const TypeDesc& t = *c.t;
  const int n = cu.size, me = cu.rank;
  const size_t items = c.count, es = t.size, ipi = c.per_item;
  std::vector<int> counts(n, static_cast<int>(items));
  size_t in_items = items, out_items = items, out_first = 0;
  if (c.coll == Coll::kReduceScatterBlock) {
    in_items = items * n;
    out_first = items * me;
  } else if (c.coll == Coll::kReduceScatter) {
    in_items = 0;
    for (int r = 0; r < n; ++r) {
      counts[r] = static_cast<int>(irregular_count(items, r));
      if (r < me) out_first += counts[r];
      in_items += counts[r];
    }
    out_items = counts[me];
  } else if (c.coll == Coll::kAllgather) {
    out_items = items * n;
  }
  const size_t in_bytes = in_items * ipi * es, out_bytes = out_items * ipi * es;
  const uint64_t seed = seed_of(name);
  const bool gather = c.coll == Coll::kAllgather;
  const Bytes input = generate(t, c.op, seed, g_ctx.world_rank, 0, in_items * ipi);

  // Buffers: poisoned, the input uploaded (in place: into the receive buffer).
  const size_t off = c.offset_elems * es;
  const size_t recv_bytes = c.inplace && !gather ? in_bytes : out_bytes;
  const size_t input_at = c.inplace && gather ? items * ipi * es * me : 0;
  TestBuf send, recv;
  std::string err;
  Where send_where = c.send_where, recv_where = c.recv_where;
  if (!c.by_rank.empty()) std::tie(send_where, recv_where) = c.by_rank[me % c.by_rank.size()];
  if (!c.inplace) {
    err = send.allocate(send_where, off, in_bytes);
    if (err.empty()) err = send.poison();
    if (err.empty()) err = send.upload(input);
  }
  if (err.empty()) err = recv.allocate(recv_where, off, recv_bytes);
  if (err.empty()) err = recv.poison();
  if (err.empty() && c.inplace) err = recv.upload(input, input_at);
  if (!err.empty()) check(false, name, "setup: " + err);
  if (!all_true(cu.comm, err.empty())) return;

  if (g_ctx.verbose && g_ctx.world_rank == 0) {
    std::printf("RUN %s\n", name.c_str());
    std::fflush(stdout);
  }
  const void* sbuf = c.inplace ? MPI_IN_PLACE : send.ptr();
  const MPI_Datatype dt = c.call_type != MPI_DATATYPE_NULL ? c.call_type : t.type;
  const CounterSnapshot before = counters_now();
  int rc = MPI_ERR_OTHER;
  MPI_Request request = MPI_REQUEST_NULL;
  MPI_Request* req = c.nonblocking ? &request : nullptr;
  switch (c.coll) {
    case Coll::kAllreduce:
      rc = req ? MPI_Iallreduce(sbuf, recv.ptr(), static_cast<int>(items), dt, c.mpi_op, cu.comm,
                                req)
               : MPI_Allreduce(sbuf, recv.ptr(), static_cast<int>(items), dt, c.mpi_op, cu.comm);
      break;
    case Coll::kReduceScatterBlock:
      rc = req ? MPI_Ireduce_scatter_block(sbuf, recv.ptr(), static_cast<int>(items), dt, c.mpi_op,
                                           cu.comm, req)
               : MPI_Reduce_scatter_block(sbuf, recv.ptr(), static_cast<int>(items), dt, c.mpi_op,
                                          cu.comm);
      break;
    case Coll::kReduceScatter:
      rc = req ? MPI_Ireduce_scatter(sbuf, recv.ptr(), counts.data(), dt, c.mpi_op, cu.comm, req)
               : MPI_Reduce_scatter(sbuf, recv.ptr(), counts.data(), dt, c.mpi_op, cu.comm);
      break;
    case Coll::kAllgather:
      rc = req ? MPI_Iallgather(sbuf, static_cast<int>(items), dt, recv.ptr(),
                                static_cast<int>(items), dt, cu.comm, req)
               : MPI_Allgather(sbuf, static_cast<int>(items), dt, recv.ptr(),
                               static_cast<int>(items), dt, cu.comm);
      break;
  }
  if (req && rc == MPI_SUCCESS) rc = MPI_Wait(req, MPI_STATUS_IGNORE);
  if (!check(rc == MPI_SUCCESS, name, "returned " + mpi_error_text(rc))) return;
  std::string counted = counted_once(before, counter_of(c.coll), c.expect_engine);
  if (c.engine_or_mpi && !counted.empty())
    counted = counted_once(before, counter_of(c.coll), false);
  check(counted.empty(), name, counted);

  Bytes whole;
  err = recv.download(&whole);
  if (!check(err.empty(), name, err)) return;
  const uint8_t* got = whole.data() + off;
  const size_t out_elems = out_items * ipi;
  if (gather) {
    if (c.sampled) {
      check_sampled(name, t, got, out_elems, seed, [&](size_t i) {
        const size_t block = items * ipi;
        return generate(t, c.op, seed, cu.members[i / block], i % block, 1);
      });
    } else {
      Bytes want;
      for (int r = 0; r < n; ++r) {
        Bytes part = generate(t, c.op, seed, cu.members[r], 0, items * ipi);
        want.insert(want.end(), part.begin(), part.end());
      }
      check_elements(name, "result", t, got, want, out_elems, true);
    }
  } else if (c.sampled) {
    check_sampled(name, t, got, out_elems, seed, [&](size_t i) {
      return reduce_reference(t, c.op, seed, cu.members, out_first * ipi + i, 1);
    });
  } else {
    const Bytes want = reduce_reference(t, c.op, seed, cu.members, out_first * ipi, out_elems);
    check_elements(name, "result", t, got, want, out_elems, false);
  }
  err = guard_intact(whole, off, off + recv_bytes, off);
  check(err.empty(), name, "receive buffer: " + err);
  if (!c.inplace && !c.sampled) {
    err = send.download(&whole);
    if (err.empty()) {
      if (!input.empty() && std::memcmp(whole.data() + off, input.data(), input.size()) != 0) {
        err = "the send buffer was modified";
      } else {
        err = guard_intact(whole, off, off + in_bytes, off);
      }
    }
    check(err.empty(), name, "send buffer: " + err);
  }
}

Case make_case(Coll coll, const TypeDesc& t, Op op, size_t count, bool inplace,
               const CommUnderTest& cu) {
  Case c;
  c.coll = coll;
  c.t = &t;
  c.op = op;
  if (op != Op::kNone) c.mpi_op = op_of(op).op;
  c.count = count;
  c.inplace = inplace;
  c.cu = &cu;
  return c;
}

}  // namespace gputest
