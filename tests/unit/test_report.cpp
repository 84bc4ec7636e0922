#include <gtest/gtest.h>

#include <cmath>

#include "cuda_streams/report.hpp"

namespace {

TEST(FormatCheck, ShowsMeasuredOperatorBarReasonAndVerdict) {
  EXPECT_EQ(cs::format_check("concurrency_speedup", 7.913, cs::Compare::at_least, 6.0, "x",
                             "0.75 x 8 streams", true),
            "CHECK concurrency_speedup: 7.91x >= 6.00x (0.75 x 8 streams) ... PASS");
  EXPECT_EQ(cs::format_check("latency_ratio", 0.5, cs::Compare::at_most, 0.15, "", "", false),
            "CHECK latency_ratio: 0.50 <= 0.15 ... FAIL");
  EXPECT_EQ(cs::format_check("bandwidth", 55.25, cs::Compare::at_least, 40, " GB/s", "", true),
            "CHECK bandwidth: 55.25 GB/s >= 40.00 GB/s ... PASS");
  EXPECT_EQ(cs::format_check("big", 1234.5, cs::Compare::at_most, 2000, " us", "", true),
            "CHECK big: 1234.5 us <= 2000.0 us ... PASS");
}

TEST(Check, ComparesInTheStatedDirectionAndCounts) {
  cs::reset_checks();
  EXPECT_TRUE(cs::check("a", 2.0, cs::Compare::at_least, 2.0, "x"));
  EXPECT_FALSE(cs::check("b", 1.99, cs::Compare::at_least, 2.0, "x"));
  EXPECT_TRUE(cs::check("c", 0.1, cs::Compare::at_most, 0.15, ""));
  EXPECT_FALSE(cs::check("d", 0.2, cs::Compare::at_most, 0.15, ""));
  EXPECT_FALSE(cs::check("nan never passes", std::nan(""), cs::Compare::at_most, 1.0, ""));
  EXPECT_TRUE(cs::check_that("fact", true, "it holds"));
  cs::check_skipped("skipped", "no reason to run");
  EXPECT_EQ(cs::checks_run(), 6);
  EXPECT_EQ(cs::checks_failed(), 3);
  EXPECT_EQ(cs::finish(), 1);
  cs::reset_checks();
  EXPECT_TRUE(cs::check_that("alone", true, "ok"));
  EXPECT_EQ(cs::finish(), 0);
  cs::reset_checks();
}

TEST(Check, ThatOrSkipRunsOnlyWithoutAReason) {
  cs::reset_checks();
  EXPECT_TRUE(cs::check_that_or_skip("", "ran", true, "holds"));
  EXPECT_FALSE(cs::check_that_or_skip("", "ran and failed", false, "does not hold"));
  EXPECT_TRUE(cs::check_that_or_skip("--no-timing", "not run", false, "would not hold"));
  EXPECT_EQ(cs::checks_run(), 2);
  EXPECT_EQ(cs::checks_failed(), 1);
  EXPECT_EQ(cs::checks_skipped(), 1);
  cs::reset_checks();
}

TEST(Check, NoCheckRunIsNoPass) {
  cs::reset_checks();
  EXPECT_EQ(cs::finish(), 1);  // proved nothing and said nothing
  cs::check_skipped("timed", "--no-timing");
  EXPECT_EQ(cs::checks_skipped(), 1);
  EXPECT_EQ(cs::checks_run(), 0);
  EXPECT_EQ(cs::finish(), 0);  // every check said why it could not run here
  cs::reset_checks();
}

}  // namespace
