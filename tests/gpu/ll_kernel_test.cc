// The low-latency protocol's kernel on one GPU: P "ranks" are P concurrent launches in one
// process, each with its own region (plain device memory, as CUDA IPC would map it), so every
// path of the kernel (packed words and flagged segments, every collective, in place, uneven
// reduce-scatter blocks, unaligned buffers, both parities) runs where one GPU is all there is.
// Results against the independent host reference (tests/unit/reference.h).
#include "gpu/ll_kernel.h"

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <numeric>
#include <string>
#include <vector>

#include "core/call_signature.h"
#include "gpu/ll_protocol.h"
#include "gpu_test_util.h"
#include "ll_test_base.h"
#include "reference.h"

namespace efacoll {
namespace {

using testing::Bytes;

struct Shape {
  CollKind kind;
  DType type;
  ROp op;
  int nranks;
  size_t count;  // allreduce: the vector; allgather: a block; reduce-scatter: rank 0's block
  bool inplace;
  size_t offset_elems;  // buffers this many elements past a 256-byte boundary
};

std::string name(const Shape& s) {
  return std::string(coll_name(s.kind)) + " " + dtype_name(s.type) + " " + op_name(s.op) +
         " P=" + std::to_string(s.nranks) + " count=" + std::to_string(s.count) +
         (s.inplace ? " in-place" : "") + (s.offset_elems ? " offset" : "");
}

// Reduce-scatter blocks of uneven sizes, one of them empty when there are three ranks or more.
std::vector<size_t> rs_counts(const Shape& s) {
  std::vector<size_t> c(s.nranks);
  for (int r = 0; r < s.nranks; ++r) c[r] = (r == 1 && s.nranks > 2) ? 0 : s.count + 3 * r;
  return c;
}

class LlKernel : public testing::LlTestBase {
 protected:
  // Runs `calls` consecutive collectives of one shape (sequence numbers continue across them,
  // so both parities and slot reuse are exercised) and checks every rank's result each time.
  void run(const Shape& s, int calls) {
    SCOPED_TRACE(name(s));
    const int P = s.nranks;
    const size_t es = dtype_size(s.type), slot = ll_slot_bytes(size_t(2) << 20, P);
    LlRegion region;
    region.slot_bytes = slot;
    region.nranks = P;
    std::vector<void*> regions(P);
    for (int r = 0; r < P; ++r) regions[r] = device(region.total_bytes());
    std::vector<LlSignal> signals(P);
    for (int r = 0; r < P; ++r) signals[r] = signal();
    const std::vector<size_t> counts = rs_counts(s);
    const size_t rs_total = std::accumulate(counts.begin(), counts.end(), size_t(0));
    const size_t in_elems = s.kind == CollKind::kReduceScatter ? rs_total : s.count;
    const size_t out_elems = s.kind == CollKind::kAllgather       ? s.count * P
                             : s.kind == CollKind::kReduceScatter ? (s.inplace ? rs_total : 0)
                                                                  : s.count;
    const size_t pad = s.offset_elems * es;
    std::vector<uint8_t*> sends(P), recvs(P);
    std::vector<Bytes> inputs(P);
    for (int r = 0; r < P; ++r) {
      inputs[r] = testing::make_input(s.type, s.op, r, in_elems);
      const size_t out_bytes = std::max(out_elems, counts[r]) * es;
      sends[r] = static_cast<uint8_t*>(device(256 + in_elems * es)) + pad;
      recvs[r] = static_cast<uint8_t*>(device(256 + out_bytes + in_elems * es)) + pad;
    }
    for (int call = 1; call <= calls; ++call) {
      // Fresh inputs each call: in place, the last call overwrote them.
      for (int r = 0; r < P; ++r) {
        uint8_t* in = sends[r];
        if (s.inplace) {
          in = s.kind == CollKind::kAllgather ? recvs[r] + r * s.count * es : recvs[r];
        }
        ASSERT_CUDA(cudaMemcpy(in, inputs[r].data(), inputs[r].size(), cudaMemcpyHostToDevice));
      }
      for (int r = 0; r < P; ++r) {
        LlCall c;
        ASSERT_TRUE(ll_plan(s.kind, es, s.count, counts.data(), r, P, s.inplace, slot, &c));
        c.dtype = s.type;
        c.op = s.op;
        c.seq = call;
        c.key = ll_call_key(call_signature(s.kind, s.type, s.op, s.count), s.count);
        c.timeout_ns = 2ull * 1000 * 1000 * 1000;  // a missed flag fails fast
        c.recv = recvs[r];
        c.send = s.inplace
                     ? (s.kind == CollKind::kAllgather ? recvs[r] + r * s.count * es : recvs[r])
                     : sends[r];
        for (int q = 0; q < P; ++q) c.regions[q] = regions[q];
        if (c.split) {
          ASSERT_TRUE(ll_launch(c, kLlPush, signals[r], stream(r)).is_ok());
          ASSERT_TRUE(ll_launch(c, kLlFinish, signals[r], stream(r)).is_ok());
        } else {
          ASSERT_TRUE(ll_launch(c, kLlPush | kLlFinish, signals[r], stream(r)).is_ok());
        }
      }
      for (int r = 0; r < P; ++r) ASSERT_CUDA(cudaStreamSynchronize(stream(r)));
      for (int r = 0; r < P; ++r) {
        EXPECT_EQ(*signals[r].fault, 0u) << "rank " << r << " stopped waiting";
        if (in_elems && (s.kind != CollKind::kReduceScatter || rs_total)) {
          EXPECT_EQ(*signals[r].done, static_cast<uint64_t>(call)) << "rank " << r;
        }
        check(s, r, recvs[r], counts, call);
      }
    }
  }

  void check(const Shape& s, int r, const uint8_t* recv, const std::vector<size_t>& counts,
             int call) {
    const int P = s.nranks;
    const size_t es = dtype_size(s.type);
    Bytes want;
    if (s.kind == CollKind::kAllgather) {
      for (int q = 0; q < P; ++q) {
        Bytes b = testing::make_input(s.type, s.op, q, s.count);
        want.insert(want.end(), b.begin(), b.end());
      }
    } else if (s.kind == CollKind::kAllreduce) {
      want = testing::expected_reduction(s.type, s.op, P, s.count);
    } else {
      const size_t total = std::accumulate(counts.begin(), counts.end(), size_t(0));
      Bytes all = testing::expected_reduction(s.type, s.op, P, total);
      size_t first = 0;
      for (int q = 0; q < r; ++q) first += counts[q];
      want.assign(all.begin() + first * es, all.begin() + (first + counts[r]) * es);
    }
    Bytes got(want.size());
    ASSERT_CUDA(cudaMemcpy(got.data(), recv, got.size(), cudaMemcpyDeviceToHost));
    EXPECT_EQ(testing::compare(got, want, s.type), "") << "rank " << r << ", call " << call;
  }
};

TEST_F(LlKernel, EveryAllowedPairOfAllreduce) {
  for (auto [type, op] : testing::allowed_pairs()) {
    run({CollKind::kAllreduce, type, op, 3, 1001, false, 0}, 2);
  }
}

TEST_F(LlKernel, EveryCollectiveSizeAndLayout) {
  const size_t counts[] = {1, 7, 1001, 4096, 5000, 60001};  // 4096 floats: packed; 5000: not
  for (int P : {2, 3, 4}) {
    for (size_t n : counts) {
      for (bool inplace : {false, true}) {
        for (size_t offset : {size_t(0), size_t(1)}) {
          run({CollKind::kAllreduce, DType::kFloat32, ROp::kSum, P, n, inplace, offset}, 3);
          run({CollKind::kReduceScatter, DType::kInt32, ROp::kMax, P, n, inplace, offset}, 3);
          run({CollKind::kAllgather, DType::kInt16, ROp::kSum, P, n, inplace, offset}, 3);
        }
      }
    }
  }
}

TEST_F(LlKernel, WideAndNarrowElements) {
  for (size_t n : {size_t(3), size_t(999), size_t(9000)}) {
    run({CollKind::kAllreduce, DType::kComplex128, ROp::kProd, 2, n, false, 0}, 2);
    run({CollKind::kAllreduce, DType::kInt8, ROp::kBxor, 4, n, true, 1}, 2);
    run({CollKind::kReduceScatter, DType::kFloat16, ROp::kSum, 3, n, false, 1}, 2);
  }
}

}  // namespace
}  // namespace efacoll
