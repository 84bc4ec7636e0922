#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <vector>

#include "cuda_streams/device.hpp"
#include "cuda_streams/options.hpp"

namespace {

using cs::ParseResult;

// Runs parse() on "prog" followed by @p words.
ParseResult parse(cs::Options& options, std::vector<const char*> words) {
  words.insert(words.begin(), "prog");
  return options.parse(static_cast<int>(words.size()), words.data());
}

struct Fixture : ::testing::Test {
  int streams = 8;
  std::size_t bytes = 1 << 20;
  double ms = 1.5;
  bool verbose = false;
  std::string mode = "fast";
  std::string file;
  std::vector<int> devices;
  cs::Options options{"prog", "a test program"};
  void SetUp() override {
    options.add_int("streams", &streams, 1, 64, "how many streams");
    options.add_size("bytes", &bytes, 1, std::size_t{1} << 34, "buffer size");
    options.add_double("ms", &ms, 0.1, 20, "kernel duration");
    options.add_flag("verbose", &verbose, "say more");
    options.add_choice("mode", &mode, {"fast", "slow"}, "which mode");
    options.add_string("out", &file, "FILE", "output file");
    options.add_int_list("devices", &devices, 0, 63, "devices to use");
  }
};

TEST_F(Fixture, DefaultsStayWhenNothingIsGiven) {
  EXPECT_EQ(parse(options, {}).status, ParseResult::Status::ok);
  EXPECT_EQ(streams, 8);
  EXPECT_EQ(bytes, std::size_t{1} << 20);
  EXPECT_FALSE(verbose);
}

TEST_F(Fixture, AcceptsSpaceAndEqualsForms) {
  ASSERT_EQ(
      parse(options, {"--streams", "4", "--ms=2.5", "--verbose", "--mode=slow", "--out", "x.json"})
          .status,
      ParseResult::Status::ok);
  EXPECT_EQ(streams, 4);
  EXPECT_DOUBLE_EQ(ms, 2.5);
  EXPECT_TRUE(verbose);
  EXPECT_EQ(mode, "slow");
  EXPECT_EQ(file, "x.json");
}

TEST_F(Fixture, SizesTakeBinarySuffixes) {
  ASSERT_EQ(parse(options, {"--bytes", "64M"}).status, ParseResult::Status::ok);
  EXPECT_EQ(bytes, std::size_t{64} << 20);
  ASSERT_EQ(parse(options, {"--bytes=2k"}).status, ParseResult::Status::ok);
  EXPECT_EQ(bytes, std::size_t{2048});
  ASSERT_EQ(parse(options, {"--bytes", "1G"}).status, ParseResult::Status::ok);
  EXPECT_EQ(bytes, std::size_t{1} << 30);
}

TEST_F(Fixture, IntListParsesDistinctValues) {
  ASSERT_EQ(parse(options, {"--devices", "0,2,1"}).status, ParseResult::Status::ok);
  EXPECT_EQ(devices, (std::vector<int>{0, 2, 1}));
}

struct BadInput {
  const char* name;  // names the test case
  std::vector<const char*> words;
  const char* message_part;
};

class Rejects : public Fixture, public ::testing::WithParamInterface<BadInput> {};

TEST_P(Rejects, WithAMessageNamingTheFlag) {
  const ParseResult result = parse(options, GetParam().words);
  EXPECT_EQ(result.status, ParseResult::Status::error);
  EXPECT_NE(result.message.find(GetParam().message_part), std::string::npos) << result.message;
}

INSTANTIATE_TEST_SUITE_P(
    BadCommandLines, Rejects,
    ::testing::Values(
        BadInput{"unknown_flag", {"--no-such-flag"}, "unknown flag '--no-such-flag'"},
        BadInput{"zero", {"--streams", "0"}, "--streams expects an integer from 1 to 64, got '0'"},
        BadInput{"negative", {"--streams", "-3"}, "got '-3'"},
        BadInput{"above_max", {"--streams", "65"}, "got '65'"},
        BadInput{"not_a_number", {"--streams", "abc"}, "got 'abc'"},
        BadInput{"trailing_text", {"--streams", "4x"}, "got '4x'"},
        BadInput{"overflow", {"--streams", "99999999999999999999"}, "--streams expects"},
        BadInput{"missing_value", {"--streams"}, "--streams needs a value"},
        BadInput{"size_zero", {"--bytes", "0"}, "--bytes expects a whole number"},
        BadInput{"size_negative", {"--bytes", "-1M"}, "got '-1M'"},
        BadInput{"size_suffix_only", {"--bytes", "M"}, "got 'M'"},
        BadInput{"size_too_big", {"--bytes", "20G"}, "got '20G'"},
        BadInput{"nan", {"--ms", "nan"}, "--ms expects a number"},
        BadInput{"below_min", {"--ms", "0.05"}, "got '0.05'"},
        BadInput{"unknown_choice",
                 {"--mode", "medium"},
                 "--mode expects one of fast, slow, got 'medium'"},
        BadInput{"empty_string", {"--out="}, "--out expects a non-empty FILE"},
        BadInput{"switch_with_value", {"--verbose=yes"}, "--verbose takes no value"},
        BadInput{"duplicate_list_item", {"--devices", "0,0"}, "distinct"},
        BadInput{"empty_list_item", {"--devices", "0,,1"}, "--devices expects"},
        BadInput{"list_item_too_big", {"--devices", "64"}, "--devices expects"},
        BadInput{"stray_word", {"stray"}, "unexpected argument 'stray'"}),
    [](const ::testing::TestParamInfo<BadInput>& param_info) {
      return std::string(param_info.param.name);
    });

TEST_F(Fixture, HelpIsRecognisedAndListsEveryFlagWithItsDefault) {
  EXPECT_EQ(parse(options, {"--help"}).status, ParseResult::Status::help);
  const std::string usage = options.usage();
  for (const char* expected : {"--streams N", "(default: 8)", "--bytes", "--ms X", "(default: 1.5)",
                               "--verbose", "(default: off)", "--mode WORD", "one of fast, slow",
                               "--out FILE", "--devices", "--help", "Exit status"}) {
    EXPECT_NE(usage.find(expected), std::string::npos) << "missing " << expected << " in\n"
                                                       << usage;
  }
}

// An output file is checked when parsed: an unwritable path stops the program before it runs,
// and the check leaves no file behind.
TEST(OutputFile, IsCheckedWhenParsedAndLeavesNothingBehind) {
  std::string path;
  cs::Options options("prog", "summary");
  options.add_output_file("dot", &path, "a graph");
  const ParseResult bad = parse(options, {"--dot", "/nonexistent-directory/g.dot"});
  EXPECT_EQ(bad.status, ParseResult::Status::error);
  EXPECT_EQ(bad.message, "--dot /nonexistent-directory/g.dot: cannot write this file");
  EXPECT_EQ(parse(options, {"--dot="}).message, "--dot expects a non-empty FILE");
  const std::string fresh = ::testing::TempDir() + "output_file_check.dot";
  std::remove(fresh.c_str());
  ASSERT_EQ(parse(options, {"--dot", fresh.c_str()}).status, ParseResult::Status::ok);
  EXPECT_EQ(path, fresh);
  EXPECT_FALSE(std::ifstream(fresh).is_open()) << "the check left " << fresh << " behind";
  // A file that is there stays, even one the program may write but not read (for a user other
  // than root, who may read it anyway).
  const std::string kept = ::testing::TempDir() + "output_file_write_only.dot";
  std::ofstream(kept) << "keep me";
  std::filesystem::permissions(kept, std::filesystem::perms::owner_write);
  ASSERT_EQ(parse(options, {"--dot", kept.c_str()}).status, ParseResult::Status::ok);
  EXPECT_TRUE(std::filesystem::exists(kept)) << "the check removed " << kept;
  std::remove(kept.c_str());
  // A link to a file not yet there stays a link.
  const std::string link = ::testing::TempDir() + "output_file_link.dot";
  const std::string target = ::testing::TempDir() + "output_file_link_target.dot";
  std::remove(link.c_str());
  std::remove(target.c_str());
  std::filesystem::create_symlink(target, link);
  ASSERT_EQ(parse(options, {"--dot", link.c_str()}).status, ParseResult::Status::ok);
  EXPECT_TRUE(std::filesystem::is_symlink(link)) << "the check removed the link " << link;
  EXPECT_FALSE(std::filesystem::exists(target)) << "the check left " << target << " behind";
  std::remove(link.c_str());
  std::remove(target.c_str());
  // /dev/null is written as it is, never opened or removed by the check.
  ASSERT_EQ(parse(options, {"--dot", "/dev/null"}).status, ParseResult::Status::ok);
  EXPECT_TRUE(std::filesystem::exists("/dev/null"));
  // Nor is a pipe: opening one that has no reader would wait for one (this test would hang).
  const std::string fifo = ::testing::TempDir() + "output_file_fifo.dot";
  std::remove(fifo.c_str());
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  ASSERT_EQ(parse(options, {"--dot", fifo.c_str()}).status, ParseResult::Status::ok);
  EXPECT_TRUE(std::filesystem::is_fifo(fifo)) << "the check removed the pipe " << fifo;
  std::remove(fifo.c_str());
}

TEST(CommonOptions, DeclaresTheFlagsEveryChapterHas) {
  cs::Options options("prog", "summary");
  cs::CommonOptions common;
  cs::add_common_options(options, &common);
  std::vector<const char*> words = {"prog",   "--device", "1",     "--trace",
                                    "t.json", "--svg",    "t.svg", "--no-timing"};
  ASSERT_EQ(options.parse(static_cast<int>(words.size()), words.data()).status,
            ParseResult::Status::ok);
  EXPECT_EQ(common.device, 1);
  EXPECT_EQ(common.trace_path, "t.json");
  EXPECT_EQ(common.svg_path, "t.svg");
  EXPECT_TRUE(common.no_timing);
}

}  // namespace

// A usage error found after parsing (a flag combination, a device that does not exist) reads
// like one parse_or_exit() reports: the program's name, then the message; exit status 2.
TEST(UsageError, NamesTheProgramOnceParseOrExitHasRun) {
  EXPECT_EXIT(cs::usage_error("--a and --b: give one"), ::testing::ExitedWithCode(2),
              "^error: --a and --b: give one\n$");
  cs::Options options{"prog", "a test program"};
  std::vector<const char*> words = {"prog"};
  cs::parse_or_exit(options, static_cast<int>(words.size()), const_cast<char**>(words.data()));
  EXPECT_EXIT(cs::usage_error("--a and --b: give one"), ::testing::ExitedWithCode(2),
              "^prog: error: --a and --b: give one\n$");
}

// A size no machine holds is refused with the flag's name before anything is allocated; a small
// one passes. (Where the size of memory is unknown, nothing is checked: not testable here.)
TEST(RequireFitsInHostMemory, RefusesMoreThanHalfOfMemory) {
  cs::require_fits_in_host_memory(1 << 20, "--small");
  EXPECT_EXIT(cs::require_fits_in_host_memory(1e30, "--mib 9"), ::testing::ExitedWithCode(2),
              "error: --mib 9: needs .* of host memory, more than half of this machine's ");
}
