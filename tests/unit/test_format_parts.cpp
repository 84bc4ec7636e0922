#include <gtest/gtest.h>

#include "cuda_streams/environment.hpp"
#include "cuda_streams/format.hpp"
#include "cuda_streams/options.hpp"
#include "cuda_streams/parts.hpp"
#include "cuda_streams/report.hpp"

TEST(Format, PrintfIntoString) {
  EXPECT_EQ(cs::format("%d streams, %.2f ms", 8, 1.5), "8 streams, 1.50 ms");
  EXPECT_EQ(cs::format("%s", std::string(300, 'x').c_str()).size(), 300u);
}

TEST(Format, MillisecondsPickTheirUnit) {
  EXPECT_EQ(cs::format_ms(20.46), "20.5 ms");
  EXPECT_EQ(cs::format_ms(1.234), "1.23 ms");
  EXPECT_EQ(cs::format_ms(0.0331), "33.1 us");
}

TEST(LaunchEnvironment, DefaultsWhenUnset) {
  cs::LaunchEnvironment environment;
  std::string problem;
  ASSERT_TRUE(cs::parse_launch_environment(nullptr, nullptr, &environment, &problem));
  EXPECT_FALSE(environment.launch_blocking);
  EXPECT_EQ(environment.max_connections, 8);
  EXPECT_FALSE(environment.connections_from_env);
  EXPECT_EQ(cs::no_overlap_reason(environment), "");
}

TEST(LaunchEnvironment, ReadsBothVariables) {
  cs::LaunchEnvironment environment;
  std::string problem;
  ASSERT_TRUE(cs::parse_launch_environment("1", "1", &environment, &problem));
  EXPECT_TRUE(environment.launch_blocking);
  EXPECT_EQ(environment.max_connections, 1);
  EXPECT_TRUE(environment.connections_from_env);
  EXPECT_NE(cs::no_overlap_reason(environment).find("CUDA_LAUNCH_BLOCKING=1"), std::string::npos);
  ASSERT_TRUE(cs::parse_launch_environment("0", "32", &environment, &problem));
  EXPECT_FALSE(environment.launch_blocking);
  EXPECT_EQ(environment.max_connections, 32);
}

TEST(LaunchEnvironment, RejectsConnectionsOutOfRange) {
  cs::LaunchEnvironment environment;
  std::string problem;
  EXPECT_FALSE(cs::parse_launch_environment(nullptr, "0", &environment, &problem));
  EXPECT_NE(problem.find("from 1 to 32, got '0'"), std::string::npos);
  EXPECT_FALSE(cs::parse_launch_environment(nullptr, "33", &environment, &problem));
  EXPECT_FALSE(cs::parse_launch_environment(nullptr, "eight", &environment, &problem));
}

TEST(Parts, AllByDefaultAndOneWhenChosen) {
  cs::Options options("prog", "summary");
  cs::Parts parts(options, {{"first", "the first idea"}, {"second", "the second idea"}});
  const char* none[] = {"prog"};
  ASSERT_EQ(options.parse(1, none).status, cs::ParseResult::Status::ok);
  EXPECT_TRUE(parts.selected("first"));
  EXPECT_TRUE(parts.selected("second"));
  const char* one[] = {"prog", "--part", "second"};
  ASSERT_EQ(options.parse(3, one).status, cs::ParseResult::Status::ok);
  EXPECT_FALSE(parts.selected("first"));
  EXPECT_TRUE(parts.selected("second"));
  EXPECT_NE(options.usage().find("second (the second idea)"), std::string::npos);
}

TEST(Parts, UnknownPartIsAUsageError) {
  cs::Options options("prog", "summary");
  cs::Parts parts(options, {{"first", "the first idea"}});
  const char* bad[] = {"prog", "--part", "third"};
  const cs::ParseResult result = options.parse(3, bad);
  EXPECT_EQ(result.status, cs::ParseResult::Status::error);
  EXPECT_NE(result.message.find("--part expects one of all, first, got 'third'"),
            std::string::npos);
}

TEST(Report, CheckOrSkipSkipsWithAReason) {
  cs::reset_checks();
  testing::internal::CaptureStdout();
  EXPECT_TRUE(
      cs::check_or_skip("--no-timing was given", "speedup", 0.5, cs::Compare::at_least, 2, "x"));
  const std::string printed = testing::internal::GetCapturedStdout();
  EXPECT_EQ(printed, "CHECK speedup: skipped (--no-timing was given)\n");
  EXPECT_EQ(cs::checks_run(), 0);
  EXPECT_EQ(cs::first_reason({"", "b", "c"}), "b");
  EXPECT_EQ(cs::first_reason({"", ""}), "");
}
