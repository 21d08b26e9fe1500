// efacoll-bench's check data: inputs exact and in range for every type and op, the expected
// results right, the poison never a right answer, and a wrong element always found.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "check_pattern.h"

namespace efacoll_bench {
namespace {

const DataType kTypes[] = {DataType::kInt8,   DataType::kUint8, DataType::kInt32,
                           DataType::kUint32, DataType::kInt64, DataType::kUint64,
                           DataType::kFloat,  DataType::kDouble};
const ReduceOp kOps[] = {ReduceOp::kSum,  ReduceOp::kProd, ReduceOp::kMax, ReduceOp::kMin,
                         ReduceOp::kBand, ReduceOp::kBor,  ReduceOp::kBxor};

// The largest value each type holds exactly (64-bit types: the int64 reference's, less one bit).
long double largest(DataType t) {
  switch (t) {
    case DataType::kInt8:
      return 127;
    case DataType::kUint8:
      return 255;
    case DataType::kInt32:
      return 2147483647.0L;
    case DataType::kUint32:
      return 4294967295.0L;
    case DataType::kFloat:
      return 16777216.0L;
    case DataType::kDouble:
      return 9007199254740992.0L;
    default:
      return 9223372036854775807.0L;
  }
}

TEST(BenchCheckPattern, SumOfInt8OnFourRanksByHand) {
  // input(r, k) = (3r + k) % 8: at k = 0 the ranks give 0, 3, 6, 1.
  CheckPattern p(Collective::kAllreduce, DataType::kInt8, ReduceOp::kSum, 4);
  EXPECT_EQ(p.input(2, 0), 6);
  EXPECT_EQ(p.input(3, 0), 1);
  EXPECT_EQ(p.reduced(0), 10);
  EXPECT_EQ(p.reduced(8), 10);  // period 8
}

TEST(BenchCheckPattern, Int8SumStaysInRangeOnManyRanks) {
  // 200 ranks of int8: only zeros fit a sum; the check then checks that much.
  CheckPattern p(Collective::kAllreduce, DataType::kInt8, ReduceOp::kSum, 200);
  for (size_t k = 0; k < 16; ++k) EXPECT_EQ(p.reduced(k), 0);
  CheckPattern q(Collective::kAllreduce, DataType::kUint8, ReduceOp::kSum, 40);
  for (size_t k = 0; k < 16; ++k) EXPECT_LE(q.reduced(k), 254);
}

TEST(BenchCheckPattern, ProductOfInt8HasAtMostSixTwos) {
  // 20 ranks: a factor 2 at every 4th rank, so 5 of them: 32.
  CheckPattern p(Collective::kAllreduce, DataType::kInt8, ReduceOp::kProd, 20);
  for (size_t k = 0; k < 8; ++k) EXPECT_EQ(p.reduced(k), 32);
}

TEST(BenchCheckPattern, SignedMaxAndMinSeeNegativesButNeverThePoison) {
  CheckPattern p(Collective::kAllreduce, DataType::kInt8, ReduceOp::kMin, 5);
  bool negative = false;
  for (int r = 0; r < 5; ++r) {
    for (size_t k = 0; k < 101; ++k) {
      negative = negative || p.input(r, k) < 0;
      EXPECT_NE(p.input(r, k), -1);
    }
  }
  EXPECT_TRUE(negative);
  // Unsigned: above 127, where a signed comparison of uint8 would go wrong.
  CheckPattern u(Collective::kAllreduce, DataType::kUint8, ReduceOp::kMax, 5);
  EXPECT_GT(u.reduced(0), 127);
}

template <typename T>
void put(char* at, int64_t v) {
  const T x = static_cast<T>(v);
  std::memcpy(at, &x, sizeof(x));
}

// Stores v as element i of a buffer of type t.
void store(DataType t, std::vector<char>* buf, size_t i, int64_t v) {
  using Put = void (*)(char*, int64_t);
  static const Put kPuts[] = {put<int8_t>,  put<uint8_t>,  put<int32_t>, put<uint32_t>,
                              put<int64_t>, put<uint64_t>, put<float>,   put<double>};
  kPuts[static_cast<int>(t)](buf->data() + i * type_size(t), v);
}

// The reduction of input element k over n ranks, done here on its own.
long double reduce_here(const CheckPattern& p, ReduceOp op, int n, size_t k) {
  long double acc = static_cast<long double>(p.input(0, k));
  int64_t bits = p.input(0, k);
  for (int r = 1; r < n; ++r) {
    const int64_t v = p.input(r, k);
    const long double x = static_cast<long double>(v);
    if (op == ReduceOp::kSum) acc += x;
    if (op == ReduceOp::kProd) acc *= x;
    if (op == ReduceOp::kMax && x > acc) acc = x;
    if (op == ReduceOp::kMin && x < acc) acc = x;
    if (op == ReduceOp::kBand) bits &= v;
    if (op == ReduceOp::kBor) bits |= v;
    if (op == ReduceOp::kBxor) bits ^= v;
  }
  return is_bitwise(op) ? static_cast<long double>(bits) : acc;
}

// For every type, op and a few rank counts: inputs and results in range and exact, results equal
// to the reduction done here, a right buffer passes, a poisoned one fails everywhere and one
// changed element is found where it is.
TEST(BenchCheckPattern, EveryTypeAndOp) {
  for (DataType t : kTypes) {
    for (ReduceOp op : kOps) {
      if (is_floating(t) && is_bitwise(op)) continue;
      for (int n : {1, 2, 3, 8, 64}) {
        SCOPED_TRACE(std::string(type_name(t)) + " " + op_name(op) + " n=" + std::to_string(n));
        const CheckPattern p(Collective::kReduceScatterBlock, t, op, n);
        const size_t first = 1000, count = 300;
        std::vector<char> result(count * type_size(t));
        for (size_t i = 0; i < count; ++i) {
          for (int r = 0; r < n; ++r) {
            ASSERT_LE(p.input(r, first + i), largest(t));
            if (!is_signed(t)) {
              ASSERT_GE(p.input(r, first + i), 0);
            }
          }
          const long double want = reduce_here(p, op, n, first + i);
          ASSERT_EQ(want, static_cast<long double>(p.reduced(first + i)));
          ASSERT_LE(want, largest(t));
          store(t, &result, i, p.reduced(first + i));
        }
        EXPECT_EQ(p.check_reduced(result.data(), first, count).wrong, 0u);

        std::vector<char> changed = result;
        store(t, &changed, 123, p.reduced(first + 123) + 1);
        const CheckResult one = p.check_reduced(changed.data(), first, count);
        EXPECT_EQ(one.wrong, 1u);
        EXPECT_EQ(one.first, 123u);

        std::vector<char> poisoned(result.size(), static_cast<char>(CheckPattern::kPoisonByte));
        EXPECT_EQ(p.check_reduced(poisoned.data(), first, count).wrong, count);
      }
    }
  }
}

TEST(BenchCheckPattern, GatheredBlocksAreEachRanksInputs) {
  const int n = 3;
  const size_t count = 50;
  const CheckPattern p(Collective::kAllgather, DataType::kInt32, ReduceOp::kSum, n);
  std::vector<char> result(n * count * sizeof(int32_t));
  for (int r = 0; r < n; ++r) p.write_inputs(r, 0, count, result.data() + r * count * 4);
  EXPECT_EQ(p.check_gathered(result.data(), count).wrong, 0u);
  // Blocks 0 and 1 swapped: a misplaced block is wrong almost everywhere.
  std::vector<char> swapped = result;
  std::memcpy(swapped.data(), result.data() + count * 4, count * 4);
  std::memcpy(swapped.data() + count * 4, result.data(), count * 4);
  EXPECT_GT(p.check_gathered(swapped.data(), count).wrong, count);
}

}  // namespace
}  // namespace efacoll_bench
