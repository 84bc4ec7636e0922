#include "cuda_streams/report.hpp"

#include <cmath>
#include <cstdio>

namespace cs {
namespace {
int g_checks_run = 0;
int g_checks_failed = 0;
int g_checks_skipped = 0;

std::string format_number(double value, const std::string& unit) {
  char text[64];
  const double magnitude = std::fabs(value);
  const char* format = magnitude >= 100                      ? "%.1f"
                       : magnitude >= 0.01 || magnitude == 0 ? "%.2f"
                                                             : "%.3g";
  std::snprintf(text, sizeof text, format, value);
  return text + unit;
}
}  // namespace

std::string format_check(const std::string& name, double measured, Compare compare, double bar,
                         const std::string& unit, const std::string& why, bool passed) {
  std::string line = "CHECK " + name + ": " + format_number(measured, unit) +
                     (compare == Compare::at_least ? " >= " : " <= ") + format_number(bar, unit);
  if (!why.empty()) line += " (" + why + ")";
  line += passed ? " ... PASS" : " ... FAIL";
  return line;
}

bool check(const std::string& name, double measured, Compare compare, double bar,
           const std::string& unit, const std::string& why) {
  const bool passed =
      !std::isnan(measured) && (compare == Compare::at_least ? measured >= bar : measured <= bar);
  ++g_checks_run;
  if (!passed) ++g_checks_failed;
  std::printf("%s\n", format_check(name, measured, compare, bar, unit, why, passed).c_str());
  std::fflush(stdout);
  return passed;
}

bool check_that(const std::string& name, bool passed, const std::string& detail) {
  ++g_checks_run;
  if (!passed) ++g_checks_failed;
  std::printf("CHECK %s: %s ... %s\n", name.c_str(), detail.c_str(), passed ? "PASS" : "FAIL");
  std::fflush(stdout);
  return passed;
}

void check_skipped(const std::string& name, const std::string& reason) {
  ++g_checks_skipped;
  std::printf("CHECK %s: skipped (%s)\n", name.c_str(), reason.c_str());
  std::fflush(stdout);
}

bool check_or_skip(const std::string& skip_reason, const std::string& name, double measured,
                   Compare compare, double bar, const std::string& unit, const std::string& why) {
  if (!skip_reason.empty()) {
    check_skipped(name, skip_reason);
    return true;
  }
  return check(name, measured, compare, bar, unit, why);
}

bool check_that_or_skip(const std::string& skip_reason, const std::string& name, bool passed,
                        const std::string& detail) {
  if (!skip_reason.empty()) {
    check_skipped(name, skip_reason);
    return true;
  }
  return check_that(name, passed, detail);
}

std::string first_reason(std::initializer_list<std::string> reasons) {
  for (const std::string& reason : reasons) {
    if (!reason.empty()) return reason;
  }
  return "";
}

int checks_run() {
  return g_checks_run;
}
int checks_failed() {
  return g_checks_failed;
}
int checks_skipped() {
  return g_checks_skipped;
}

void reset_checks() {
  g_checks_run = 0;
  g_checks_failed = 0;
  g_checks_skipped = 0;
}

int finish() {
  const int passed = g_checks_run - g_checks_failed;
  if (g_checks_run == 0) {
    // A run that proved nothing is not a pass: it fails unless every check said why it skipped.
    std::printf("\nNo check ran; %d skipped.\n", g_checks_skipped);
    std::fflush(stdout);
    return g_checks_skipped > 0 ? 0 : 1;
  }
  if (g_checks_failed == 0) {
    std::printf("\nAll %d checks passed.\n", g_checks_run);
  } else {
    std::printf("\n%d of %d checks passed; %d FAILED.\n", passed, g_checks_run, g_checks_failed);
  }
  std::fflush(stdout);
  return g_checks_failed == 0 ? 0 : 1;
}

}  // namespace cs
