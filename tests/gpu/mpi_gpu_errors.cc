// efacoll_mpi_gpu_tests: bad input on GPU buffers, one argument at a time. Each call must fail
// with the class the standard names (the table in mpi_shim/shim_args.cc) and efacoll's message,
// leave every byte of the buffers as it was (no device pointer may reach the MPI, which is not
// CUDA-aware), run nothing and pass nothing to MPI; the next valid call on the communicator
// must work.
#include <cstring>
#include <functional>

#include "mpi_gpu_cases.h"

namespace gputest {
namespace {

constexpr int kItems = 16;  // per rank

// The call under test. Buffers point into one allocation: the send region, then the receive
// region (`region` bytes each).
struct BadCall {
  Coll coll = Coll::kAllreduce;
  const void* send = nullptr;
  void* recv = nullptr;
  int count = kItems;  // allreduce count, block, or allgather send count
  std::vector<int> counts;
  const int* counts_arg = nullptr;  // reduce_scatter's recvcounts
  MPI_Datatype type = MPI_INT;      // allgather: the send type
  MPI_Datatype rtype = MPI_INT;     // allgather only
  int rcount = kItems;              // allgather only
  MPI_Op op = MPI_SUM;
  MPI_Comm comm = MPI_COMM_NULL;
};

int make_call(const BadCall& c) {
  switch (c.coll) {
    case Coll::kAllreduce:
      return MPI_Allreduce(c.send, c.recv, c.count, c.type, c.op, c.comm);
    case Coll::kReduceScatterBlock:
      return MPI_Reduce_scatter_block(c.send, c.recv, c.count, c.type, c.op, c.comm);
    case Coll::kReduceScatter:
      return MPI_Reduce_scatter(c.send, c.recv, c.counts_arg, c.type, c.op, c.comm);
    case Coll::kAllgather:
      return MPI_Allgather(c.send, c.count, c.type, c.recv, c.rcount, c.rtype, c.comm);
  }
  return MPI_ERR_OTHER;
}

struct Fixture {
  uint8_t* base = nullptr;  // the allocation's region under test
  size_t region = 0;
  int rank = 0;
  MPI_Datatype loose = MPI_DATATYPE_NULL;  // contiguous(2, MPI_INT), never committed
  MPI_Op user_op = MPI_OP_NULL;
};

constexpr int bit(Coll c) { return 1 << static_cast<int>(c); }
constexpr int kReduceScatterOnly = bit(Coll::kReduceScatter);
constexpr int kGather = bit(Coll::kAllgather);
constexpr int kReductions =
    bit(Coll::kAllreduce) | bit(Coll::kReduceScatterBlock) | kReduceScatterOnly;
constexpr int kAll = kReductions | kGather;

struct Bad {
  const char* id;
  int error_class;
  int applies;  // bit(coll) of the collectives it applies to
  std::function<void(BadCall&, const Fixture&)> apply;
};

const std::vector<Bad>& bad_inputs() {
  static const std::vector<Bad> bad = {
      {"negative-count", MPI_ERR_COUNT, kAll,
       [](BadCall& c, const Fixture&) {
         c.count = c.rcount = -1;
         if (!c.counts.empty()) c.counts.back() = -1;
       }},
      {"null-recvcounts", MPI_ERR_COUNT, kReduceScatterOnly,
       [](BadCall& c, const Fixture&) { c.counts.clear(); }},
      {"null-sendbuf", MPI_ERR_BUFFER, kAll, [](BadCall& c, const Fixture&) { c.send = nullptr; }},
      {"null-recvbuf", MPI_ERR_BUFFER, kAll, [](BadCall& c, const Fixture&) { c.recv = nullptr; }},
      {"datatype-null", MPI_ERR_TYPE, kAll,
       [](BadCall& c, const Fixture&) { c.type = c.rtype = MPI_DATATYPE_NULL; }},
      {"uncommitted", MPI_ERR_TYPE, kAll,
       [](BadCall& c, const Fixture& f) {
         c.type = c.rtype = f.loose;
         c.count = c.rcount = kItems / 2;
         c.op = f.user_op;
       }},
      {"uncommitted-recvtype", MPI_ERR_TYPE, kGather,
       [](BadCall& c, const Fixture& f) {
         c.rtype = f.loose;
         c.rcount = kItems / 2;
       }},
      {"op-null", MPI_ERR_OP, kReductions, [](BadCall& c, const Fixture&) { c.op = MPI_OP_NULL; }},
      {"float-band", MPI_ERR_OP, kReductions,
       [](BadCall& c, const Fixture&) {
         c.type = MPI_FLOAT;
         c.op = MPI_BAND;
       }},
      {"byte-sum", MPI_ERR_OP, kReductions, [](BadCall& c, const Fixture&) { c.type = MPI_BYTE; }},
      {"comm-null", MPI_ERR_COMM, kAll, [](BadCall& c, const Fixture&) { c.comm = MPI_COMM_NULL; }},
      {"same-buffer", MPI_ERR_BUFFER, kAll, [](BadCall& c, const Fixture& f) { c.recv = f.base; }},
      {"overlap", MPI_ERR_BUFFER, kAll,
       [](BadCall& c, const Fixture& f) {
         if (c.coll == Coll::kAllgather) {
           c.send = f.base + f.region + static_cast<size_t>(f.rank) * kItems * sizeof(int);
         } else {
           c.recv = f.base + sizeof(int);
         }
       }},
      {"recvbuf-in-place", MPI_ERR_BUFFER, kAll,
       [](BadCall& c, const Fixture&) { c.recv = MPI_IN_PLACE; }},
      {"both-in-place", MPI_ERR_BUFFER, kAll,
       [](BadCall& c, const Fixture&) { c.send = c.recv = MPI_IN_PLACE; }},
  };
  return bad;
}

// Never called: nothing reaches MPI.
void no_op(void*, void*, int*, MPI_Datatype*) {}

void one_bad_call(const CommUnderTest& cu, Coll coll, const Bad& bad, const Fixture& f,
                  TestBuf& buf) {
  const std::string name = std::string(coll_label(coll)) + " " + cu.name + " bad input: " + bad.id;
  if (filtered_out(name)) return;
  // The same bytes on every rank would hide nothing; a pattern per rank and case.
  const TypeDesc& byte_t = type_named("MPI_BYTE");
  const Bytes pattern =
      generate(byte_t, Op::kNone, seed_of(name), g_ctx.world_rank, 0, buf.bytes());
  std::string err = buf.upload(pattern);
  if (!check(err.empty(), name, "setup: " + err)) return;

  BadCall c;
  c.coll = coll;
  c.comm = cu.comm;
  c.send = f.base;
  c.recv = f.base + f.region;
  if (coll == Coll::kReduceScatter) c.counts.assign(cu.size, kItems);
  bad.apply(c, f);
  c.counts_arg = c.counts.empty() ? nullptr : c.counts.data();
  if (coll == Coll::kAllgather) c.op = MPI_OP_NULL;

  const CounterSnapshot before = counters_now();
  const int rc = make_call(c);
  int cls = rc;
  char text[MPI_MAX_ERROR_STRING] = "";
  int len = 0;
  if (rc != MPI_SUCCESS) {
    MPI_Error_class(rc, &cls);
    MPI_Error_string(rc, text, &len);
  }
  if (!check(cls == bad.error_class, name,
             "returned " + mpi_error_text(rc) + ", expected class " +
                 std::to_string(bad.error_class))) {
    return;
  }
  const std::string prefix = std::string("efacoll: ") + coll_label(coll) + ": ";
  check(std::strncmp(text, prefix.c_str(), prefix.size()) == 0, name,
        std::string("error string \"") + text + "\", expected \"" + prefix + "...\"");
  const std::string counted = counted_none(before);
  check(counted.empty(), name, counted);
  Bytes whole;
  err = buf.download(&whole);
  if (!check(err.empty(), name, err)) return;
  size_t changed = 0;
  while (changed < pattern.size() && whole[buf.offset() + changed] == pattern[changed]) ++changed;
  check(changed == pattern.size(), name,
        "buffer byte " + std::to_string(changed) +
            " changed (send region: " + std::to_string(f.region) + " bytes)");
}

}  // namespace

void bad_input(const std::vector<const CommUnderTest*>& comms) {
  Fixture f;
  MPI_Type_contiguous(2, MPI_INT, &f.loose);
  MPI_Op_create(no_op, 1, &f.user_op);
  const Coll colls[] = {Coll::kAllreduce, Coll::kReduceScatterBlock, Coll::kReduceScatter,
                        Coll::kAllgather};
  for (const CommUnderTest* cu : comms) {
    f.rank = cu->rank;
    // Room for kItems items of up to 8 bytes from every rank, on either side.
    f.region = static_cast<size_t>(kItems) * 8 * cu->size;
    TestBuf buf;
    std::string err = buf.allocate(Where::kDevice, 0, 2 * f.region);
    if (!check(err.empty(), "bad input " + cu->name, "setup: " + err)) continue;
    f.base = buf.ptr();
    for (Coll coll : colls) {
      const bool gather = coll == Coll::kAllgather;
      for (const Bad& bad : bad_inputs()) {
        if (!(bad.applies & bit(coll))) continue;
        one_bad_call(*cu, coll, bad, f, buf);
        // The next valid call on the communicator works.
        Case ok =
            make_case(coll, type_named("MPI_INT"), gather ? Op::kNone : Op::kSum, 1001, false, *cu);
        ok.label = std::string("after ") + bad.id;
        run_case(ok);
      }
    }
  }
  MPI_Type_free(&f.loose);
  MPI_Op_free(&f.user_op);
}

}  // namespace gputest
