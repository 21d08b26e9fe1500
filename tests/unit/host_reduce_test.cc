#include "core/host_reduce.h"

#include <gtest/gtest.h>

#include <complex>
#include <cstring>

#include "core/half.h"
#include "reference.h"

namespace efacoll {
namespace {

TEST(OpAllowed, MatchesTheStandardsTable) {
  auto allowed = testing::allowed_pairs();
  for (int t = 0; t < static_cast<int>(DType::kCount); ++t) {
    for (int o = 0; o < static_cast<int>(ROp::kCount); ++o) {
      auto pair = std::make_pair(static_cast<DType>(t), static_cast<ROp>(o));
      bool listed = std::find(allowed.begin(), allowed.end(), pair) != allowed.end();
      EXPECT_EQ(op_allowed(pair.first, pair.second), listed)
          << dtype_name(pair.first) << " " << op_name(pair.second);
    }
  }
}

TEST(HostReduce, EveryAllowedPairAgainstReference) {
  for (auto [type, op] : testing::allowed_pairs()) {
    const size_t n = 101;
    auto a = testing::make_input(type, op, 0, n), b = testing::make_input(type, op, 1, n);
    testing::Bytes out(a.size());
    ASSERT_TRUE(host_reduce(out.data(), a.data(), b.data(), n, type, op).is_ok());
    EXPECT_EQ(testing::compare(out, testing::expected_reduction(type, op, 2, n), type), "")
        << dtype_name(type) << " " << op_name(op);
  }
}

TEST(HostReduce, DestinationMayAliasAnOperand) {
  int32_t a[3] = {1, 2, 3}, b[3] = {10, 20, 30};
  ASSERT_TRUE(host_reduce(a, a, b, 3, DType::kInt32, ROp::kSum).is_ok());
  EXPECT_EQ(a[0], 11);
  EXPECT_EQ(a[2], 33);
}

TEST(HostReduce, UnalignedBuffers) {
  alignas(8) uint8_t raw_a[8 * 5 + 1], raw_b[8 * 5 + 1], raw_d[8 * 5 + 1];
  for (int i = 0; i < 5; ++i) {
    double x = i, y = 2 * i;
    std::memcpy(raw_a + 1 + 8 * i, &x, 8);
    std::memcpy(raw_b + 1 + 8 * i, &y, 8);
  }
  ASSERT_TRUE(host_reduce(raw_d + 1, raw_a + 1, raw_b + 1, 5, DType::kFloat64, ROp::kSum).is_ok());
  for (int i = 0; i < 5; ++i) {
    double d;
    std::memcpy(&d, raw_d + 1 + 8 * i, 8);
    EXPECT_EQ(d, 3.0 * i);
  }
}

TEST(HostReduce, IntegerOverflowWrapsLikeHardware) {
  int8_t a = 100, b = 100, d = 0;
  ASSERT_TRUE(host_reduce(&d, &a, &b, 1, DType::kInt8, ROp::kSum).is_ok());
  EXPECT_EQ(d, static_cast<int8_t>(200 - 256));
  int64_t x = INT64_MAX, y = 2, z = 0;
  ASSERT_TRUE(host_reduce(&z, &x, &y, 1, DType::kInt64, ROp::kProd).is_ok());
  EXPECT_EQ(z, -2);
}

TEST(HostReduce, ComplexProduct) {
  std::complex<double> a(1, 2), b(3, -1), d;
  ASSERT_TRUE(host_reduce(&d, &a, &b, 1, DType::kComplex128, ROp::kProd).is_ok());
  EXPECT_EQ(d, std::complex<double>(5, 5));
}

TEST(Half, KnownEncodings) {
  // IEEE binary16 and bfloat16 bit patterns from their specifications.
  EXPECT_EQ(float_to_half(1.0f), 0x3c00);
  EXPECT_EQ(float_to_half(-2.0f), 0xc000);
  EXPECT_EQ(float_to_half(65504.0f), 0x7bff);
  EXPECT_EQ(float_to_half(1e6f), 0x7c00);           // overflow to inf
  EXPECT_EQ(float_to_half(5.9604645e-8f), 0x0001);  // smallest subnormal
  EXPECT_EQ(float_to_half(1.0009765625f), 0x3c01);
  EXPECT_EQ(float_to_half(1.00048828125f), 0x3c00);  // tie rounds to even
  EXPECT_EQ(half_to_float(0x3555), 0.333251953125f);
  EXPECT_EQ(half_to_float(0x0001), 5.9604645e-8f);
  EXPECT_EQ(float_to_bf16(1.0f), 0x3f80);
  EXPECT_EQ(float_to_bf16(-3.0f), 0xc040);
  EXPECT_EQ(bf16_to_float(0x4049), 3.140625f);
  for (uint32_t h = 0; h < 0x7c00; ++h) {
    ASSERT_EQ(float_to_half(half_to_float(static_cast<uint16_t>(h))), h) << "round trip of " << h;
  }
}

TEST(HostReduce, RejectsPairsTheStandardForbids) {
  float a = 1, b = 2, d = 0;
  EXPECT_EQ(host_reduce(&d, &a, &b, 1, DType::kFloat32, ROp::kBand).code(), Code::kUnsupported);
  EXPECT_EQ(d, 0.0f);
}

}  // namespace
}  // namespace efacoll
