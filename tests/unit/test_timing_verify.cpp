#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <stdexcept>
#include <thread>
#include <vector>

#include "cuda_streams/report.hpp"
#include "cuda_streams/timing.hpp"
#include "cuda_streams/verify.hpp"

namespace {

TEST(Median, OddEvenAndUnsortedInput) {
  EXPECT_DOUBLE_EQ(cs::median({3.0}), 3.0);
  EXPECT_DOUBLE_EQ(cs::median({5.0, 1.0, 3.0}), 3.0);
  EXPECT_DOUBLE_EQ(cs::median({4.0, 1.0, 3.0, 2.0}), 2.5);
  EXPECT_DOUBLE_EQ(cs::median({1.0, 1.0, 100.0}), 1.0);  // one outlier does not move it
}

TEST(Median, RefusesNoSamples) {
  EXPECT_THROW(cs::median({}), std::invalid_argument);
}

TEST(Summarize, MinMaxCount) {
  const cs::Stats stats = cs::summarize({2.0, 9.0, 4.0, 1.0, 5.0});
  EXPECT_DOUBLE_EQ(stats.median, 4.0);
  EXPECT_DOUBLE_EQ(stats.min, 1.0);
  EXPECT_DOUBLE_EQ(stats.max, 9.0);
  EXPECT_EQ(stats.count, 5);
  EXPECT_THROW(cs::summarize({}), std::invalid_argument);
}

TEST(Ratio, ZeroWhenTheDenominatorIsNotPositive) {
  EXPECT_DOUBLE_EQ(cs::ratio(3.0, 2.0), 1.5);
  EXPECT_DOUBLE_EQ(cs::ratio(3.0, 0.0), 0.0);   // nothing timed: 0, not infinity
  EXPECT_DOUBLE_EQ(cs::ratio(3.0, -1.0), 0.0);  // never negative
}

TEST(WaitForFlag, ReturnsWhenAnotherThreadStoresTheValue) {
  volatile unsigned int flag = 0;
  std::thread writer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    flag = 7;
  });
  const double from = cs::host_now_ms();
  EXPECT_TRUE(cs::wait_for_flag(&flag, 7, 10000));
  EXPECT_GE(cs::host_now_ms() - from, 15.0);  // it waited for the store, not past it
  writer.join();
}

TEST(WaitForFlag, GivesUpAfterTheTimeoutOnAnotherValue) {
  volatile unsigned int flag = 6;  // a value other than the one awaited never satisfies the wait
  const double from = cs::host_now_ms();
  EXPECT_FALSE(cs::wait_for_flag(&flag, 7, 30));
  EXPECT_GE(cs::host_now_ms() - from, 30.0);
}

TEST(Compare, FindsEveryMismatchAndKeepsTheFirst) {
  const std::vector<int> want = {0, 1, 2, 3, 4, 5, 6, 7};
  std::vector<int> got = want;
  got[1] = 10;
  got[6] = -6;
  const cs::Comparison result = cs::compare(got.data(), want.data(), got.size(), 0.0, 1);
  EXPECT_EQ(result.total, 8u);
  EXPECT_EQ(result.wrong, 2u);
  ASSERT_EQ(result.first.size(), 1u);
  EXPECT_EQ(result.first[0].index, 1u);
  EXPECT_DOUBLE_EQ(result.first[0].got, 10.0);
  EXPECT_DOUBLE_EQ(result.first[0].want, 1.0);
}

TEST(Compare, ToleranceIsRelativeAboveOneAndNaNNeverMatches) {
  const std::vector<float> want = {1000.0f, 0.5f, 1.0f};
  const std::vector<float> close = {1000.5f, 0.5004f, 1.0f};
  EXPECT_EQ(cs::compare(close.data(), want.data(), 3, 1e-3).wrong, 0u);
  EXPECT_EQ(cs::compare(close.data(), want.data(), 3, 1e-5).wrong, 2u);
  const std::vector<float> nan = {1000.0f, std::nanf(""), 1.0f};
  EXPECT_EQ(cs::compare(nan.data(), want.data(), 3, 1.0).wrong, 1u);
}

TEST(Accumulate, AddsRunsAndKeepsTheFirstMismatches) {
  const std::vector<int> want = {1, 2, 3};
  const std::vector<int> one_wrong = {1, 0, 3};
  const std::vector<int> all_wrong = {0, 0, 0};
  cs::Comparison all;
  cs::accumulate(all, cs::compare(one_wrong.data(), want.data(), 3), 2);
  cs::accumulate(all, cs::compare(all_wrong.data(), want.data(), 3), 2);
  EXPECT_EQ(all.total, 6u);
  EXPECT_EQ(all.wrong, 4u);
  ASSERT_EQ(all.first.size(), 2u);
  EXPECT_EQ(all.first[0].index, 1u);
  EXPECT_EQ(all.first[1].index, 0u);
}

TEST(CompareProduct, EveryEntryOfASmallProductAndTheTransposeFails) {
  const std::size_t n = 3;
  const std::vector<float> a = {1, 2, 3, 4, 5, 6, 7, 8, 9}, b = {0, 1, 0, 2, 0, 1, 1, 1, 3};
  std::vector<float> product(n * n), transposed(n * n);
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = 0; j < n; ++j)
      for (std::size_t k = 0; k < n; ++k) product[i * n + j] += a[i * n + k] * b[k * n + j];
  for (std::size_t i = 0; i < n * n; ++i) transposed[i] = product[i % n * n + i / n];
  EXPECT_EQ(cs::compare_product(a.data(), b.data(), product.data(), n).total, 9u);
  EXPECT_EQ(cs::compare_product(a.data(), b.data(), product.data(), n).wrong, 0u);
  const cs::Comparison wrong = cs::compare_product(a.data(), b.data(), transposed.data(), n);
  EXPECT_GT(wrong.wrong, 0u);
  ASSERT_FALSE(wrong.first.empty());
  EXPECT_EQ(wrong.first[0].index, 1u);  // entry (0, 1) holds (1, 0)'s 16 where 4 is right
}

TEST(CompareProduct, SamplesALargeProductReachingTheLastEntryAndEveryRow) {
  const std::size_t n = 300;  // 90000 entries: 4096 sampled
  const std::vector<float> identity = [&] {
    std::vector<float> m(n * n);
    for (std::size_t i = 0; i < n; ++i) m[i * n + i] = 1;
    return m;
  }();
  std::vector<float> b(n * n);
  for (std::size_t i = 0; i < b.size(); ++i) b[i] = float(i % 97);
  std::vector<float> product = b;  // I x B = B
  EXPECT_EQ(cs::compare_product(identity.data(), b.data(), product.data(), n).total, 4096u);
  EXPECT_EQ(cs::compare_product(identity.data(), b.data(), product.data(), n).wrong, 0u);
  product.back() += 1;  // the last entry is always among the samples
  const cs::Comparison last = cs::compare_product(identity.data(), b.data(), product.data(), n);
  ASSERT_EQ(last.wrong, 1u);
  EXPECT_EQ(last.first[0].index, n * n - 1);
  std::vector<float> scrambled(n * n, -1.0f);  // every entry wrong: every sample fails
  EXPECT_EQ(cs::compare_product(identity.data(), b.data(), scrambled.data(), n).wrong, 4096u);
}

TEST(Verify, CountsAsACheckAndFailsOnMismatch) {
  cs::reset_checks();
  EXPECT_TRUE(cs::verify("same", std::vector<int>{1, 2}, std::vector<int>{1, 2}));
  EXPECT_FALSE(cs::verify("different", std::vector<int>{1, 3}, std::vector<int>{1, 2}));
  EXPECT_FALSE(cs::verify("lengths", std::vector<int>{1}, std::vector<int>{1, 2}));
  EXPECT_FALSE(cs::verify("empty", std::vector<int>{}, std::vector<int>{}));
  EXPECT_EQ(cs::checks_run(), 4);
  EXPECT_EQ(cs::checks_failed(), 3);
  cs::reset_checks();
}

}  // namespace
