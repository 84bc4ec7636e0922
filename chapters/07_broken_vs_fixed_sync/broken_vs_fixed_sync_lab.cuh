// Chapter 07's machinery, which a reader may skip: flags, verdicts and exit status, buffers and
// their CPU references, and this program run again under a setting. No call the chapter teaches.
#pragma once

#include <cuda_runtime.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <regex>
#include <string>
#include <vector>

#include "cuda_streams.hpp"

namespace lab {

constexpr int kBugReproducedExitCode = 3;  // --broken, and its bug showed

// Why a setting hides a race between a slow stream and a quick one (the lesson says more).
constexpr const char* kLaunchWaited = "the slow kernel's launch returned only after it had run";
constexpr const char* kOnlyTheCopyRaced = "only the copy raced the read; the host read behind it";
constexpr const char* kSharedQueue =
    "the quick side's work waited behind the slow stream's held kernel in their shared queue";

// The flags, and what the parts share: the device, the environment, the tally of broken variants.
struct Lab {
  std::string case_name = "all";                     // --case: this chapter's name for --part
  bool broken = false, fixed = false, list = false;  // --broken, --fixed, --list
  int delay_ms = 50;                                 // how long every slow side spins
  std::size_t n = 1u << 20;                          // --elements: elements of each case's buffers
  cs::CommonOptions common;
  cs::LaunchEnvironment env;
  cudaDeviceProp prop{};
  int reproduced = 0;         // broken variants whose bug showed
  std::string hidden;         // why the last hidden bug could not show
  bool queue_shared = false;  // the last probe_queues(): the two streams share a hardware queue
  bool chooses(const std::string& name) const { return case_name == "all" || case_name == name; }
  unsigned long long delay_ns() const { return delay_ms * 1000000ull; }
  int grid() const { return 4 * prop.multiProcessorCount; }  // blocks of the element-wise kernels

  // "cannot be shown under <setting>: <why>" when a setting of this run hides a race (a null why:
  // not that setting), or "". Queues: one, or measured as shared. host-read's race only narrows
  // under CUDA_LAUNCH_BLOCKING=1: it says "did not show".
  std::string hides(const char* launch_why = kLaunchWaited, const char* queue_why = kSharedQueue,
                    const char* verdict = "cannot be shown") const {
    if (env.launch_blocking && launch_why != nullptr)
      return std::string(verdict) + " under CUDA_LAUNCH_BLOCKING=1: " + launch_why;
    if (queue_why == nullptr || (env.max_connections > 1 && !queue_shared)) return "";
    return cs::format("cannot be shown under CUDA_DEVICE_MAX_CONNECTIONS=%d: %s%s",
                      env.max_connections, env.max_connections == 1 ? "" : "measured: ", queue_why);
  }
  // legacy-default has a third stream, the legacy one: with 2 queues two of the three share one,
  // and which two (seen to vary between runs) the driver does not document.
  std::string legacy_race_hidden() const {
    if (env.max_connections != 2 || !hides().empty()) return hides();
    return "cannot be shown under CUDA_DEVICE_MAX_CONNECTIONS=2: p, c and the legacy stream "
           "share 2 hardware queues";
  }
  // A broken variant's bug showed (counted; `what` is what it measured), or it did not.
  void demonstrated(bool shown, const std::string& what) {
    reproduced += shown ? 1 : 0;
    if (shown) std::printf("BUG REPRODUCED: %s\n", what.c_str());
    if (!shown) std::printf("bug NOT reproduced: the result was right: it demonstrates nothing\n");
  }
  // A setting hid the bug: a skipped check, and exit 77 with --broken if no other bug showed.
  void skip_hidden(const std::string& check, const std::string& reason) {
    hidden = reason;
    cs::check_skipped(check, reason);
  }
  // A broken variant whose bug is a wrong result: shown, hidden by a setting, or not shown.
  void bug_verdict(const std::string& check, bool shown, const std::string& what,
                   const std::string& hidden_reason = "") {
    if (!shown && !hidden_reason.empty()) return skip_hidden(check, hidden_reason);
    demonstrated(shown, what);
    cs::check_that(check, shown, shown ? "the bug showed" : "the bug did not show");
  }
};

// Declares and parses the flags, checks them together (before any CUDA call), answers --list;
// returns which variants run, broken first.
inline std::vector<bool> parse(Lab* f, cs::Options& opts, const cs::Parts& parts,
                               const std::vector<cs::Parts::Part>& cases, int argc, char** argv) {
  std::vector<std::string> names(1, "all");  // the cases, then "all"
  for (const cs::Parts::Part& c : cases) names.insert(names.end() - 1, c.name);
  opts.add_choice("case", &f->case_name, names, "which case to run (--part NAME is the same)");
  opts.add_flag("broken", &f->broken,
                "run the variant with the bug (exit 3 when it shows, 77 when a setting hides it)");
  opts.add_flag("fixed", &f->fixed, "run the corrected variant (exit 0 when it is right)");
  opts.add_flag("list", &f->list, "list the cases with one line each, then exit");
  opts.add_int("delay-ms", &f->delay_ms, 1, 10000, "how long each slow side spins, in ms");
  opts.add_size("elements", &f->n, 1024, 64u << 20, "elements of each case's buffers");
  cs::add_common_options(opts, &f->common);
  cs::parse_or_exit(opts, argc, argv);
  if (f->list) {
    for (const auto& c : cases) std::printf("  %-18s %s\n", c.name.c_str(), c.what.c_str());
    std::exit(0);
  }
  if (f->broken && f->fixed) cs::usage_error("--broken and --fixed: give one of them, not both");
  if (f->case_name != "all" && parts.chosen() != "all" && f->case_name != parts.chosen())
    cs::usage_error("--case " + f->case_name + " and --part " + parts.chosen() + ": give one");
  if (f->broken && f->common.no_timing && f->chooses("over-sync") && parts.selected("over-sync"))
    cs::usage_error("--no-timing with --broken: over-sync's bug is its running time");
  if (f->broken || f->fixed) return {f->broken};
  return {true, false};  // neither: the whole lesson, each case broken and then fixed
}

// --broken ends in 3 when the bugs showed, 77 when a setting hid every one, 1 when a check failed.
inline int exit_status(const Lab& lab, int status) {
  if (!lab.broken) return status;
  const bool hidden = lab.reproduced == 0 && !lab.hidden.empty();  // every bug hidden
  const int code = status != 0 ? 1 : hidden ? 77 : kBugReproducedExitCode;
  if (code == 1) std::printf("Exit status 1: a bug did not show, or a check failed.\n");
  if (code == 77) std::printf("SKIP: the bug %s\n", lab.hidden.c_str());
  if (code == 3) std::printf("Exit status 3: the bug was reproduced, as intended.\n");
  return code;
}

// base, base + 1, ...: what fill_kernel writes.
inline std::vector<std::uint32_t> values_from(std::uint32_t base, std::size_t n) {
  std::vector<std::uint32_t> values(n);
  for (std::size_t i = 0; i < n; ++i) values[i] = base + static_cast<std::uint32_t>(i);
  return values;
}

// A producer's buffer A (zeros until it writes) and what B = sum(A) wrote: the sum and how many
// A[i] held the producer's value i % 5 + 1 (small whole numbers: the sum is exact in any order).
struct SumBuffers {
  float* a = nullptr;
  double* sum = nullptr;
  unsigned long long* matches = nullptr;
  unsigned* counter = nullptr;  // written by legacy-default's bystander (never read there)
  std::size_t n = 0;
  explicit SumBuffers(std::size_t elements) : n(elements) {
    CS_CHECK(cudaMalloc(&a, n * sizeof(float)));
    CS_CHECK(cudaMalloc(&sum, sizeof(double)));
    CS_CHECK(cudaMalloc(&matches, sizeof(unsigned long long)));
    CS_CHECK(cudaMalloc(&counter, sizeof(unsigned)));
    CS_CHECK(cudaMemset(a, 0, n * sizeof(float)));
    CS_CHECK(cudaMemset(sum, 0, sizeof(double)));
    CS_CHECK(cudaMemset(matches, 0, sizeof(unsigned long long)));
    CS_CHECK(cudaDeviceSynchronize());
  }
  ~SumBuffers() {
    CS_CHECK(cudaFree(a));
    CS_CHECK(cudaFree(sum));
    CS_CHECK(cudaFree(matches));
    CS_CHECK(cudaFree(counter));
  }
  // Whether the consumer saw every value the producer wrote; `saw` says what it read.
  bool right(std::string* saw) const {
    double got = 0, want = 0;
    unsigned long long seen = 0;
    CS_CHECK(cudaMemcpy(&got, sum, sizeof(double), cudaMemcpyDeviceToHost));
    CS_CHECK(cudaMemcpy(&seen, matches, sizeof seen, cudaMemcpyDeviceToHost));
    for (std::size_t i = 0; i < n; ++i) want += static_cast<double>(i % 5 + 1);
    *saw = cs::format("read %llu of %zu expected values (sum %.0f", seen, n, got) +
           (got == want ? ", as on the CPU)" : cs::format(" instead of %.0f)", want));
    return seen == n && got == want;
  }
};

// Runs this program with `args` in a new process, with both variables removed and then `setting`
// ("" or "NAME=value") added; prints its exit status and its verdict, check and stream rows.
inline int run_again(const std::string& setting, const std::string& args) {
  char exe[4096] = {};
  const ssize_t length = readlink("/proc/self/exe", exe, sizeof exe - 1);
  const std::string command = "env -u CUDA_LAUNCH_BLOCKING -u CUDA_DEVICE_MAX_CONNECTIONS " +
                              setting + " '" + exe + "' " + args + " 2>&1";
  std::fflush(stdout);
  FILE* pipe = length > 0 ? popen(command.c_str(), "r") : nullptr;
  const std::regex keep("^(BUG REPRODUCED|bug NOT|CHECK cross|stream [pc] )");  // its lines shown
  std::string kept;
  char line[4096];
  while (pipe != nullptr && std::fgets(line, sizeof line, pipe) != nullptr)
    if (std::regex_search(line, keep)) kept += std::string("    ") + line;
  const int raw = pipe != nullptr ? pclose(pipe) : -1;
  const int status = pipe != nullptr && WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
  std::printf("%s%s07_broken_vs_fixed_sync %s   -> exit status %d\n%s", setting.c_str(),
              setting.empty() ? "" : " ", args.c_str(), status, kept.c_str());
  return status;
}

}  // namespace lab
