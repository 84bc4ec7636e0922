#include "cuda_streams/options.hpp"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

#include "cuda_streams/device.hpp"

namespace cs {
namespace {

// Parses a whole decimal integer; false on anything else (empty, trailing text, overflow).
bool parse_integer(const std::string& text, long long* out) {
  if (text.empty()) return false;
  errno = 0;
  char* end = nullptr;
  const long long value = std::strtoll(text.c_str(), &end, 10);
  if (errno == ERANGE || end == text.c_str() || *end != '\0') return false;
  *out = value;
  return true;
}

// Parses a non-negative integer with an optional K, M or G suffix (powers of 1024).
bool parse_size(const std::string& text, unsigned long long* out) {
  if (text.empty() || text[0] == '-' || text[0] == '+') return false;
  std::string digits = text;
  unsigned long long scale = 1;
  const char suffix = static_cast<char>(std::toupper(static_cast<unsigned char>(digits.back())));
  if (suffix == 'K' || suffix == 'M' || suffix == 'G') {
    scale = suffix == 'K' ? 1ull << 10 : suffix == 'M' ? 1ull << 20 : 1ull << 30;
    digits.pop_back();
  }
  if (digits.empty()) return false;
  errno = 0;
  char* end = nullptr;
  const unsigned long long value = std::strtoull(digits.c_str(), &end, 10);
  if (errno == ERANGE || end == digits.c_str() || *end != '\0') return false;
  if (value > std::numeric_limits<unsigned long long>::max() / scale) return false;
  *out = value * scale;
  return true;
}

bool parse_real(const std::string& text, double* out) {
  if (text.empty()) return false;
  errno = 0;
  char* end = nullptr;
  const double value = std::strtod(text.c_str(), &end);
  if (errno == ERANGE || end == text.c_str() || *end != '\0' || !std::isfinite(value)) return false;
  *out = value;
  return true;
}

std::string format_real(double value) {
  std::ostringstream out;
  out << value;
  return out.str();
}

std::string join(const std::vector<std::string>& words, const std::string& separator) {
  std::string text;
  for (std::size_t i = 0; i < words.size(); ++i) text += (i ? separator : "") + words[i];
  return text;
}

}  // namespace

Options::Options(std::string program, std::string summary)
    : program_(std::move(program)), summary_(std::move(summary)) {}

void Options::add(Flag flag) {
  for (const Flag& existing : flags_) {
    if (existing.name == flag.name) {
      std::fprintf(stderr, "internal error: flag %s declared twice\n", flag.name.c_str());
      std::abort();
    }
  }
  flags_.push_back(std::move(flag));
}

void Options::add_int(const std::string& name, int* value, int min, int max,
                      const std::string& help) {
  const std::string range = std::to_string(min) + ".." + std::to_string(max);
  add({"--" + name, "N", help, "an integer in " + range, std::to_string(*value),
       [=](const std::string& text) -> std::string {
         long long parsed = 0;
         if (!parse_integer(text, &parsed) || parsed < min || parsed > max) {
           return "--" + name + " expects an integer from " + std::to_string(min) + " to " +
                  std::to_string(max) + ", got '" + text + "'";
         }
         *value = static_cast<int>(parsed);
         return "";
       }});
}

void Options::add_size(const std::string& name, std::size_t* value, std::size_t min,
                       std::size_t max, const std::string& help) {
  const std::string range = std::to_string(min) + ".." + std::to_string(max);
  add({"--" + name, "N[K|M|G]", help,
       "a whole number in " + range + " (K, M, G: x1024, x1024^2, x1024^3)", std::to_string(*value),
       [=](const std::string& text) -> std::string {
         unsigned long long parsed = 0;
         if (!parse_size(text, &parsed) || parsed < min || parsed > max) {
           return "--" + name + " expects a whole number from " + std::to_string(min) + " to " +
                  std::to_string(max) + " (suffixes K, M, G allowed), got '" + text + "'";
         }
         *value = static_cast<std::size_t>(parsed);
         return "";
       }});
}

void Options::add_double(const std::string& name, double* value, double min, double max,
                         const std::string& help) {
  add({"--" + name, "X", help, "a number in [" + format_real(min) + ", " + format_real(max) + "]",
       format_real(*value), [=](const std::string& text) -> std::string {
         double parsed = 0;
         if (!parse_real(text, &parsed) || parsed < min || parsed > max) {
           return "--" + name + " expects a number from " + format_real(min) + " to " +
                  format_real(max) + ", got '" + text + "'";
         }
         *value = parsed;
         return "";
       }});
}

void Options::add_flag(const std::string& name, bool* value, const std::string& help) {
  add({"--" + name, "", help, "", *value ? "on" : "off", [=](const std::string&) -> std::string {
         *value = true;
         return "";
       }});
}

void Options::add_string(const std::string& name, std::string* value, const std::string& metavar,
                         const std::string& help) {
  add({"--" + name, metavar, help, "", value->empty() ? "none" : *value,
       [=](const std::string& text) -> std::string {
         if (text.empty()) return "--" + name + " expects a non-empty " + metavar;
         *value = text;
         return "";
       }});
}

void Options::add_output_file(const std::string& name, std::string* value,
                              const std::string& help) {
  add({"--" + name, "FILE", help, "", value->empty() ? "none" : *value,
       [=](const std::string& text) -> std::string {
         if (text.empty()) return "--" + name + " expects a non-empty FILE";
         namespace fs = std::filesystem;
         std::error_code error;
         // What the name leads to, not opened (a write-only file is there; a link to nothing is
         // not, and opening it creates its target).
         const fs::file_status target = fs::status(text, error);
         // A device or a pipe is written as it is (opening a pipe here could wait for a reader).
         const bool special = fs::is_other(target);
         const bool writable =
             special || std::ofstream(text, std::ios::app).is_open();  // creates a new file
         // Removes the file that opening created, and only that: a link itself stays.
         if (writable && !fs::exists(target)) fs::remove(fs::canonical(text, error), error);
         if (!writable) return "--" + name + " " + text + ": cannot write this file";
         *value = text;
         return "";
       }});
}

void Options::add_choice(const std::string& name, std::string* value,
                         const std::vector<std::string>& choices, const std::string& help) {
  add({"--" + name, "WORD", help, "one of " + join(choices, ", "), *value,
       [=](const std::string& text) -> std::string {
         if (std::find(choices.begin(), choices.end(), text) == choices.end()) {
           return "--" + name + " expects one of " + join(choices, ", ") + ", got '" + text + "'";
         }
         *value = text;
         return "";
       }});
}

void Options::add_int_list(const std::string& name, std::vector<int>* value, int min, int max,
                           const std::string& help) {
  std::vector<std::string> defaults;
  for (int v : *value) defaults.push_back(std::to_string(v));
  add({"--" + name, "N,N,...", help,
       "distinct integers in " + std::to_string(min) + ".." + std::to_string(max),
       defaults.empty() ? "all" : join(defaults, ","), [=](const std::string& text) -> std::string {
         const std::string problem = "--" + name + " expects a comma-separated list of distinct " +
                                     "integers from " + std::to_string(min) + " to " +
                                     std::to_string(max) + ", got '" + text + "'";
         std::vector<int> parsed;
         std::size_t begin = 0;
         while (true) {
           const std::size_t comma = text.find(',', begin);
           const std::string item =
               text.substr(begin, comma == std::string::npos ? std::string::npos : comma - begin);
           long long number = 0;
           if (!parse_integer(item, &number) || number < min || number > max) return problem;
           if (std::find(parsed.begin(), parsed.end(), number) != parsed.end()) return problem;
           parsed.push_back(static_cast<int>(number));
           if (comma == std::string::npos) break;
           begin = comma + 1;
         }
         *value = parsed;
         return "";
       }});
}

ParseResult Options::parse(int argc, const char* const* argv) {
  for (int i = 1; i < argc; ++i) {
    std::string argument = argv[i];
    if (argument == "--help" || argument == "-h") return {ParseResult::Status::help, ""};
    if (argument.rfind("--", 0) != 0) {
      return {ParseResult::Status::error,
              "unexpected argument '" + argument + "' (flags start with --; see --help)"};
    }
    std::string name = argument;
    std::string inline_value;
    bool has_inline_value = false;
    const std::size_t equals = argument.find('=');
    if (equals != std::string::npos) {
      name = argument.substr(0, equals);
      inline_value = argument.substr(equals + 1);
      has_inline_value = true;
    }
    const auto flag =
        std::find_if(flags_.begin(), flags_.end(), [&](const Flag& f) { return f.name == name; });
    if (flag == flags_.end()) {
      return {ParseResult::Status::error,
              "unknown flag '" + name + "' (run with --help to list the flags)"};
    }
    std::string text;
    if (flag->metavar.empty()) {
      if (has_inline_value) {
        return {ParseResult::Status::error, name + " takes no value, got '" + inline_value + "'"};
      }
    } else if (has_inline_value) {
      text = inline_value;
    } else if (i + 1 < argc) {
      text = argv[++i];
    } else {
      return {ParseResult::Status::error, name + " needs a value (" + flag->accepted + ")"};
    }
    const std::string problem = flag->assign(text);
    if (!problem.empty()) return {ParseResult::Status::error, problem};
  }
  return {ParseResult::Status::ok, ""};
}

std::string Options::usage() const {
  std::ostringstream out;
  out << "Usage: " << program_ << " [flags]\n" << summary_ << "\n\nFlags:\n";
  std::size_t width = 0;
  for (const Flag& flag : flags_) {
    width =
        std::max(width, flag.name.size() + (flag.metavar.empty() ? 0 : flag.metavar.size() + 1));
  }
  width = std::max<std::size_t>(width, 6);
  auto line = [&](const std::string& left, const std::string& right) {
    out << "  " << left << std::string(width - left.size() + 2, ' ') << right << "\n";
  };
  for (const Flag& flag : flags_) {
    std::string left = flag.name + (flag.metavar.empty() ? "" : " " + flag.metavar);
    std::string right = flag.help;
    if (!flag.accepted.empty()) right += "; " + flag.accepted;
    right += " (default: " + flag.default_text + ")";
    line(left, right);
  }
  line("--help", "print this help and exit");
  out << "\nExit status: 0 all checks passed, 1 a check failed, 2 bad command line, "
         "77 cannot run here (SKIP).\n";
  return out.str();
}

void parse_or_exit(Options& options, int argc, char** argv) {
  // Line by line, also into a file or a pipe: what a program printed before it crashed or was
  // killed by a test's timeout still reaches the log.
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  set_program_name(options.program());  // later usage errors name it too
  const ParseResult result = options.parse(argc, argv);
  switch (result.status) {
    case ParseResult::Status::ok:
      return;
    case ParseResult::Status::help:
      std::printf("%s", options.usage().c_str());
      std::exit(0);
    case ParseResult::Status::error:
      usage_error(result.message);  // "<program>: error: <message>", exit status 2
  }
}

void add_common_options(Options& options, CommonOptions* common) {
  options.add_int("device", &common->device, 0, 1023, "the CUDA device to run on");
  options.add_output_file("trace", &common->trace_path,
                          "write the timeline as Chrome trace-event JSON (open in Perfetto)");
  options.add_output_file("svg", &common->svg_path, "write the timeline as an SVG picture");
  options.add_flag("no-timing", &common->no_timing,
                   "verify the results but skip the timing checks (for slow tools such as "
                   "compute-sanitizer)");
}

}  // namespace cs
