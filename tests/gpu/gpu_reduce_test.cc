// efacoll::gpu_reduce on a real GPU against the host reference (tests/unit/reference.h), and the
// launch geometry on the host. Without a usable GPU every GPU test is skipped with the reason;
// the geometry tests and the argument checks that never reach CUDA run everywhere.
#include "gpu/gpu_reduce.h"

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <ostream>
#include <string>
#include <vector>

#include "gpu/launch_geometry.h"
#include "gpu_test_util.h"
#include "reference.h"

namespace efacoll {

// How gtest (and ctest's discovered names) print a (type, op) parameter; found by ADL.
void PrintTo(const std::pair<DType, ROp>& p, std::ostream* os) {
  *os << dtype_name(p.first) << " " << op_name(p.second);
}

namespace {

using testing::Bytes;

constexpr unsigned char kPoison = 0xA5;
constexpr size_t kGuard = 64;  // poisoned bytes after every buffer, checked after each call

std::string hex(const uint8_t* p, size_t n) {
  std::string s;
  char buf[4];
  for (size_t i = 0; i < n; ++i) {
    std::snprintf(buf, sizeof(buf), "%02x", p[i]);
    s += buf;
  }
  return s;
}

// "" when equal; else the first differing element with both values in hex.
std::string describe_difference(const Bytes& got, const Bytes& want, DType type) {
  std::string diff = testing::compare(got, want, type);
  if (diff.empty() || got.size() != want.size()) return diff;
  const size_t esize = dtype_size(type);
  for (size_t i = 0; i < got.size(); i += esize) {
    Bytes g(got.begin() + i, got.begin() + i + esize),
        w(want.begin() + i, want.begin() + i + esize);
    if (!testing::compare(g, w, type).empty()) {
      return diff + ": index " + std::to_string(i / esize) + " got 0x" + hex(g.data(), esize) +
             " expected 0x" + hex(w.data(), esize) + " (little-endian bytes)";
    }
  }
  return diff;
}

// One device allocation of offset + bytes + kGuard, the region starting at `offset`.
class DeviceBuffer {
 public:
  ~DeviceBuffer() {
    if (base_) cudaFree(base_);
  }
  cudaError_t allocate(size_t offset, size_t bytes) {
    offset_ = offset;
    bytes_ = bytes;
    return cudaMalloc(&base_, offset + bytes + kGuard);
  }
  uint8_t* data() const { return base_ + offset_; }
  size_t total() const { return offset_ + bytes_ + kGuard; }
  size_t offset() const { return offset_; }
  size_t bytes() const { return bytes_; }

 private:
  uint8_t* base_ = nullptr;
  size_t offset_ = 0, bytes_ = 0;
};

enum class Layout {
  kAligned,       // three separate buffers, 256-byte aligned
  kAllOffset,     // every pointer one element past alignment
  kOneOffset,     // only b is off: the vector path must not be taken
  kDstIsA,        // dst == a, three inputs folded in turn: a = a op in1; a = a op in2
  kDstIsBOffset,  // dst == b, all one element off
};

const char* layout_name(Layout l) {
  switch (l) {
    case Layout::kAligned:
      return "aligned";
    case Layout::kAllOffset:
      return "all pointers offset by one element";
    case Layout::kOneOffset:
      return "b offset by one element";
    case Layout::kDstIsA:
      return "dst aliases a (3 inputs folded)";
    case Layout::kDstIsBOffset:
      return "dst aliases b, offset by one element";
  }
  return "?";
}

class GpuReduce : public ::testing::TestWithParam<std::pair<DType, ROp>> {
 protected:
  void SetUp() override {
    SKIP_WITHOUT_GPU();
    ASSERT_CUDA(cudaSetDevice(0));
    ASSERT_CUDA(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  }
  void TearDown() override {
    if (stream_) cudaStreamDestroy(stream_);
  }

  // Poisons the whole allocation, then uploads `input` (may be empty) into the region.
  void fill(const DeviceBuffer& buf, const Bytes& input) {
    ASSERT_CUDA(cudaMemsetAsync(buf.data() - buf.offset(), kPoison, buf.total(), stream_));
    if (!input.empty()) {
      ASSERT_CUDA(
          cudaMemcpyAsync(buf.data(), input.data(), input.size(), cudaMemcpyHostToDevice, stream_));
    }
  }

  // Reduces with the layout's pointers; checks the result region and that nothing else changed.
  void run_case(DType type, ROp op, size_t count, Layout layout) {
    const size_t esize = dtype_size(type), bytes = count * esize;
    const bool offset_all = layout == Layout::kAllOffset || layout == Layout::kDstIsBOffset;
    const size_t off_a = offset_all ? esize : 0;
    const size_t off_b = (offset_all || layout == Layout::kOneOffset) ? esize : 0;
    const size_t off_d = offset_all ? esize : 0;
    const int inputs = layout == Layout::kDstIsA ? 3 : 2;
    std::vector<Bytes> in;
    for (int r = 0; r < inputs; ++r) in.push_back(testing::make_input(type, op, r, count));
    const Bytes want = testing::expected_reduction(type, op, inputs, count);
    ASSERT_EQ(want.size(), bytes) << "reference size";

    DeviceBuffer a, b, d, extra;
    ASSERT_CUDA(a.allocate(off_a, bytes));
    ASSERT_CUDA(b.allocate(off_b, bytes));
    ASSERT_NO_FATAL_FAILURE(fill(a, in[0]));
    ASSERT_NO_FATAL_FAILURE(fill(b, in[1]));
    const DeviceBuffer* dst = &d;
    if (layout == Layout::kDstIsA) {
      dst = &a;
      ASSERT_CUDA(extra.allocate(0, bytes));
      ASSERT_NO_FATAL_FAILURE(fill(extra, in[2]));
    } else if (layout == Layout::kDstIsBOffset) {
      dst = &b;
    } else {
      ASSERT_CUDA(d.allocate(off_d, bytes));
      ASSERT_NO_FATAL_FAILURE(fill(d, Bytes()));
    }

    Status st = gpu_reduce(dst->data(), a.data(), b.data(), count, type, op, stream_);
    ASSERT_TRUE(st.is_ok()) << "gpu_reduce: " << st.to_string();
    if (layout == Layout::kDstIsA) {
      st = gpu_reduce(a.data(), a.data(), extra.data(), count, type, op, stream_);
      ASSERT_TRUE(st.is_ok()) << "gpu_reduce (second fold): " << st.to_string();
    }
    ASSERT_CUDA(cudaStreamSynchronize(stream_));
    ASSERT_CUDA(cudaGetLastError());

    Bytes whole(dst->total());
    ASSERT_CUDA(cudaMemcpy(whole.data(), dst->data() - dst->offset(), whole.size(),
                           cudaMemcpyDeviceToHost));
    const Bytes got(whole.begin() + dst->offset(), whole.begin() + dst->offset() + bytes);
    EXPECT_EQ(describe_difference(got, want, type), "");
    for (size_t i = 0; i < whole.size(); ++i) {
      if (i >= dst->offset() && i < dst->offset() + bytes) continue;
      if (whole[i] != kPoison) {
        ADD_FAILURE() << "byte " << static_cast<long>(i) - static_cast<long>(dst->offset())
                      << " relative to dst (outside the " << bytes << "-byte result) changed: 0x"
                      << hex(&whole[i], 1) << " instead of 0xa5";
        break;
      }
    }
  }

  cudaStream_t stream_ = nullptr;
};

TEST_P(GpuReduce, MatchesHostReference) {
  const auto [type, op] = GetParam();
  for (size_t count : {size_t(1), size_t(7), size_t(1000), size_t(65537)}) {
    for (Layout layout : {Layout::kAligned, Layout::kAllOffset, Layout::kOneOffset, Layout::kDstIsA,
                          Layout::kDstIsBOffset}) {
      SCOPED_TRACE(std::string(dtype_name(type)) + " " + op_name(op) + ", count " +
                   std::to_string(count) + ", " + layout_name(layout));
      run_case(type, op, count, layout);
      if (HasFatalFailure()) return;
    }
  }
}

std::string pair_name(const ::testing::TestParamInfo<std::pair<DType, ROp>>& info) {
  return std::string(dtype_name(info.param.first)) + "_" + op_name(info.param.second);
}

INSTANTIATE_TEST_SUITE_P(AllowedPairs, GpuReduce, ::testing::ValuesIn(testing::allowed_pairs()),
                         pair_name);

// Many launches queued on one stream before a single synchronisation: results stay ordered.
TEST(GpuReduceStream, QueuedLaunchesStayOrdered) {
  SKIP_WITHOUT_GPU();
  ASSERT_CUDA(cudaSetDevice(0));
  cudaStream_t stream = nullptr;
  ASSERT_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  const size_t count = (size_t(1) << 22) + 3;
  std::vector<int32_t> one(count, 1);
  DeviceBuffer acc, inc;
  ASSERT_CUDA(acc.allocate(0, count * 4));
  ASSERT_CUDA(inc.allocate(0, count * 4));
  ASSERT_CUDA(cudaMemsetAsync(acc.data(), 0, count * 4, stream));
  ASSERT_CUDA(cudaMemcpyAsync(inc.data(), one.data(), count * 4, cudaMemcpyHostToDevice, stream));
  const int kLaunches = 50;
  for (int i = 0; i < kLaunches; ++i) {
    Status st =
        gpu_reduce(acc.data(), acc.data(), inc.data(), count, DType::kInt32, ROp::kSum, stream);
    ASSERT_TRUE(st.is_ok()) << "launch " << i << ": " << st.to_string();
  }
  std::vector<int32_t> got(count);
  ASSERT_CUDA(cudaMemcpyAsync(got.data(), acc.data(), count * 4, cudaMemcpyDeviceToHost, stream));
  ASSERT_CUDA(cudaStreamSynchronize(stream));
  cudaStreamDestroy(stream);
  for (size_t i = 0; i < count; ++i) {
    ASSERT_EQ(got[i], kLaunches) << "index " << i;
  }
}

// Argument checks that return before any CUDA call: these run without a GPU too.
TEST(GpuReduceArguments, RejectsPairsTheStandardForbids) {
  for (auto [type, op] :
       {std::make_pair(DType::kFloat32, ROp::kBand), std::make_pair(DType::kBool, ROp::kSum),
        std::make_pair(DType::kByte, ROp::kSum), std::make_pair(DType::kComplex64, ROp::kMax)}) {
    Status st = gpu_reduce(nullptr, nullptr, nullptr, 16, type, op, nullptr);
    EXPECT_EQ(st.code(), Code::kUnsupported) << dtype_name(type) << " " << op_name(op);
  }
}

TEST(GpuReduceArguments, ZeroCountLaunchesNothing) {
  Status st = gpu_reduce(nullptr, nullptr, nullptr, 0, DType::kFloat32, ROp::kSum, nullptr);
  EXPECT_TRUE(st.is_ok()) << st.to_string();
}

// --- launch geometry (host only) ---

const void* at(uintptr_t address) { return reinterpret_cast<const void*>(address); }

TEST(ReduceGeometry, VectorWidthWhenEveryPointerIs16Aligned) {
  for (size_t esize : {1, 2, 4, 8, 16}) {
    LaunchGeometry g = reduce_geometry(1000, esize, at(0x10000), at(0x20000), at(0x30000), 132);
    EXPECT_EQ(g.vector_width, 16 / esize) << "element size " << esize;
  }
}

TEST(ReduceGeometry, ScalarWhenAnyPointerIsMisaligned) {
  for (size_t esize : {1, 2, 4, 8, 16}) {
    const uintptr_t off = esize < 16 ? esize : 8;
    for (int which = 0; which < 3; ++which) {
      uintptr_t p[3] = {0x10000, 0x20000, 0x30000};
      p[which] += off;
      LaunchGeometry g = reduce_geometry(1000, esize, at(p[0]), at(p[1]), at(p[2]), 132);
      EXPECT_EQ(g.vector_width, 1u)
          << "element size " << esize << ", pointer " << which << " offset by " << off;
    }
  }
}

TEST(ReduceGeometry, ScalarWhenElementsDoNotTile16Bytes) {
  LaunchGeometry g = reduce_geometry(1000, 12, at(0x10000), at(0x20000), at(0x30000), 132);
  EXPECT_EQ(g.vector_width, 1u);
}

TEST(ReduceGeometry, ZeroCountLaunchesNothing) {
  for (size_t esize : {1, 4, 16}) {
    EXPECT_EQ(reduce_geometry(0, esize, at(0x10000), at(0x20000), at(0x30000), 132).blocks, 0u);
  }
}

TEST(ReduceGeometry, BlocksCappedAtFourPerSm) {
  for (int sms : {1, 8, 132}) {
    LaunchGeometry g =
        reduce_geometry(size_t(1) << 32, 4, at(0x10000), at(0x20000), at(0x30000), sms);
    EXPECT_EQ(g.blocks, 4u * sms) << sms << " SMs";
  }
  // A driver that reports no SM count still gets a grid.
  LaunchGeometry g = reduce_geometry(size_t(1) << 32, 4, at(0x10000), at(0x20000), at(0x30000), 0);
  EXPECT_GE(g.blocks, 1u);
  EXPECT_LE(g.blocks, 4u);
}

TEST(ReduceGeometry, EnoughThreadsForTheCountAndNoMore) {
  const uintptr_t misaligned = 0x10001;
  for (bool aligned : {true, false}) {
    for (size_t esize : {1, 2, 4, 8, 16}) {
      for (size_t count : {1, 7, 255, 256, 257, 1000, 4096, 65537, 1 << 20}) {
        const int sms = 1 << 14;  // never the limit here
        LaunchGeometry g = reduce_geometry(count, esize, at(aligned ? 0x10000 : misaligned),
                                           at(0x20000), at(0x30000), sms);
        SCOPED_TRACE("count " + std::to_string(count) + ", element size " + std::to_string(esize) +
                     (aligned ? ", aligned" : ", misaligned"));
        ASSERT_GE(g.blocks, 1u);
        ASSERT_GE(g.threads, 1u);
        ASSERT_GE(g.vector_width, 1u);
        const size_t per_block = size_t(g.threads) * g.vector_width;
        EXPECT_GE(size_t(g.blocks) * per_block, count);
        EXPECT_LT(size_t(g.blocks - 1) * per_block, count) << "a block with nothing to do";
      }
    }
  }
}

}  // namespace
}  // namespace efacoll
