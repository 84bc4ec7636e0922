// Chapter 07's machinery, which a reader may skip: flags, verdicts and exit status, buffers and
// their CPU references, and this program run again under a setting. No call the chapter teaches.
#pragma once

#include <cuda_runtime.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "cuda_streams.hpp"

namespace lab {

constexpr int kBugReproducedExitCode = 3;  // --broken, and its bug showed

constexpr const char* kAbout =
    "Synchronization bugs and their fixes, each a pair: --case NAME --broken | --fixed (with "
    "neither, broken then fixed).\nExit status: 0 right; 3 --broken and the bug was reproduced; 77 "
    "--broken under a setting that hides it; 1 a check failed.";

struct Flags {
  std::string case_name = "all";  // --case: this chapter's name for --part
  bool broken = false, fixed = false, list = false;
  int delay_ms = 50;
  std::size_t elements = 1u << 20;
  bool chooses(const std::string& name) const { return case_name == "all" || case_name == name; }
};

inline void add_flags(cs::Options& options, Flags* f, const std::vector<cs::Parts::Part>& cases) {
  std::vector<std::string> names;
  for (const cs::Parts::Part& c : cases) names.push_back(c.name);
  names.push_back("all");
  options.add_choice("case", &f->case_name, names,
                     "which case to run (the same as --part; --list describes them)");
  options.add_flag("broken", &f->broken, "run the variant with the bug (exit 3 when it shows)");
  options.add_flag("fixed", &f->fixed, "run the corrected variant (exit 0 when it is right)");
  options.add_flag("list", &f->list, "list the cases with one line each, then exit");
  options.add_int("delay-ms", &f->delay_ms, 1, 10000,
                  "how long each producer spins before it writes, in ms");
  options.add_size("elements", &f->elements, 1024, 64u << 20, "elements of each case's buffers");
}

// Which variants run, broken first; checks the flags together (before any CUDA call), answers
// --list.
inline std::vector<bool> variants_or_exit(const Flags& f, const cs::Parts& parts,
                                          const std::vector<cs::Parts::Part>& cases,
                                          const cs::CommonOptions& common) {
  if (f.list) {
    std::printf("Cases (run each with --case NAME --broken or --case NAME --fixed):\n");
    for (const auto& c : cases) std::printf("  %-18s %s\n", c.name.c_str(), c.what.c_str());
    std::printf("  %-18s every case above, one after the other\n", "all");
    std::exit(0);
  }
  if (f.broken && f.fixed) cs::usage_error("--broken and --fixed: give one of them, not both");
  if (f.case_name != "all" && parts.chosen() != "all" && f.case_name != parts.chosen()) {
    cs::usage_error("--case " + f.case_name + " and --part " + parts.chosen() + ": give one");
  }
  const bool over_sync = f.chooses("over-sync") && parts.selected("over-sync");
  if (f.broken && common.no_timing && over_sync) {
    cs::usage_error(
        "--no-timing with --broken: over-sync's bug is its running time, which "
        "--no-timing does not measure");
  }
  if (f.broken) return {true};
  if (f.fixed) return {false};
  return {true, false};  // neither: the whole lesson, each case broken and then fixed
}

// Skip reasons: why a setting hides a race between a slow stream and a quick one.
constexpr const char* kLaunchWaited =
    "the slow kernel's launch returned only after it had run, so the quick side was issued too "
    "late to race it";
constexpr const char* kOnlyTheCopyRaced =  // host-read: the copy stays asynchronous
    "the kernels before the copy had run inside their launches, so only the copy itself (well "
    "under a millisecond) raced the read, and the host read behind it";
constexpr const char* kSharedQueue =
    "the quick side's work waited at the head of a hardware queue it shared with the slow stream, "
    "behind that stream's next kernel, itself held by the spin (a false dependency, chapter 02)";

// What a run shares: the sizes, the environment, and the tally of the broken variants.
struct Lab {
  Lab(const Flags& f, const cs::CommonOptions& options, const cs::LaunchEnvironment& environment,
      const cudaDeviceProp& properties)
      : n(f.elements),
        delay_ms(f.delay_ms),
        grid(4 * properties.multiProcessorCount),
        device(options.device),
        prop(properties),
        env(environment),
        common(&options) {
    cs::require_fits_on_device(3 * n * sizeof(std::uint32_t), cs::format("--elements %zu", n));
    std::printf("Each slow producer or reader spins %d ms; the other side needs microseconds.\n",
                delay_ms);
  }
  std::size_t n;  // elements of each case's buffers
  int delay_ms;   // how long every slow producer (or reader) spins
  int grid;       // blocks for the element-wise kernels
  int device;
  cudaDeviceProp prop;
  cs::LaunchEnvironment env;
  const cs::CommonOptions* common;
  int reproduced = 0;         // broken variants whose bug showed
  std::string hidden;         // why the last hidden bug could not show
  bool queue_shared = false;  // the last probe_queues(): the two streams share a hardware queue
  unsigned long long delay_ns() const { return delay_ms * 1000000ull; }

  // "cannot be shown under <setting>: <why>" when a setting of this run hides a bug (nullptr: that
  // setting does not), or "". Queues: one, or measured as shared.
  std::string hides(const char* launch_blocking_why, const char* queue_why) const {
    if (env.launch_blocking && launch_blocking_why != nullptr) {
      return std::string("cannot be shown under CUDA_LAUNCH_BLOCKING=1: ") + launch_blocking_why;
    }
    if (queue_why == nullptr || (env.max_connections > 1 && !queue_shared)) return "";
    return cs::format("cannot be shown under CUDA_DEVICE_MAX_CONNECTIONS=%d: %s%s",
                      env.max_connections, env.max_connections == 1 ? "" : "measured: ", queue_why);
  }
  // host-read's race only narrows under CUDA_LAUNCH_BLOCKING=1: "did not show" rather than
  // "cannot".
  std::string may_hide(const char* launch_blocking_why) const {
    if (!env.launch_blocking) return "";
    return std::string("did not show under CUDA_LAUNCH_BLOCKING=1: ") + launch_blocking_why;
  }
  std::string race_hidden() const { return hides(kLaunchWaited, kSharedQueue); }
  // legacy-default has a third stream, the legacy one: on fewer than 3 queues two of the three
  // share one, and which two (seen to vary between runs) the driver does not document.
  std::string legacy_race_hidden() const {
    if (!race_hidden().empty() || env.max_connections >= 3) return race_hidden();
    return cs::format(
        "cannot be shown under CUDA_DEVICE_MAX_CONNECTIONS=%d: p, c and the legacy "
        "stream share %d hardware queues; %s",
        env.max_connections, env.max_connections, kSharedQueue);
  }
  // A broken variant's bug showed (counted; `what` is what it measured), or it did not.
  void demonstrated(bool shown, const std::string& what) {
    if (shown) ++reproduced;
    if (shown) std::printf("BUG REPRODUCED: %s\n", what.c_str());
    if (!shown) std::printf("bug NOT reproduced: the result was right: it demonstrates nothing\n");
  }
  // A setting hid the bug: a skipped check, and exit 77 with --broken if no other bug showed.
  void skip_hidden(const std::string& check, const std::string& reason) {
    hidden = reason;
    cs::check_skipped(check, reason);
  }
  // over-sync: why its ratio is not measured (a skipped check says so), or "" to time it.
  std::string over_sync_skip(bool broken) {
    std::string skip =
        broken ? hides("every launch already waited for its kernel", nullptr)
               : cs::first_reason({common->timing_skip_reason(), cs::no_overlap_reason(env)});
    if (broken && skip.empty() && common->no_timing)  // the whole lesson with --no-timing
      skip = "cannot be shown with --no-timing: over-sync's bug is its running time";
    if (broken && !skip.empty()) skip_hidden("over_sync_slowdown", skip);
    if (!broken && !skip.empty())
      cs::check_skipped(common->no_timing ? "over_sync_slowdown" : "sync_once_speedup", skip);
    return skip;
  }
  // A broken variant whose bug is a wrong result: shown, hidden by a setting, or not shown.
  void bug_verdict(const std::string& check, bool shown, const std::string& what,
                   const std::string& hidden_reason) {
    if (!shown && !hidden_reason.empty()) return skip_hidden(check, hidden_reason);
    demonstrated(shown, what);
    cs::check_that(check, shown, shown ? "the bug showed" : "the bug did not show");
  }
};

// --broken ends in 3 when the bugs showed, 77 when a setting hid every one, 1 when a check failed.
inline int exit_status(const Lab& lab, const Flags& f, int status) {
  if (!f.broken) return status;
  if (status != 0) {
    std::printf("Exit status 1: a broken variant did not show its bug, or a check failed.\n");
    return 1;
  }
  if (lab.reproduced == 0 && !lab.hidden.empty()) {
    std::printf("SKIP: the bug %s\n", lab.hidden.c_str());
    return 77;
  }
  std::printf("Exit status %d: the bug was reproduced, as intended (see --help).\n",
              kBugReproducedExitCode);
  return kBugReproducedExitCode;
}

// base, base + 1, ...: what fill_kernel writes.
inline std::vector<std::uint32_t> values_from(std::uint32_t base, std::size_t n) {
  std::vector<std::uint32_t> values(n);
  for (std::size_t i = 0; i < n; ++i) values[i] = base + static_cast<std::uint32_t>(i);
  return values;
}

inline std::size_t count_equal(const std::uint32_t* got, const std::vector<std::uint32_t>& want) {
  std::size_t same = 0;
  for (std::size_t i = 0; i < want.size(); ++i) same += got[i] == want[i] ? 1 : 0;
  return same;
}

inline std::vector<std::uint32_t> download(const std::uint32_t* device, std::size_t n) {
  std::vector<std::uint32_t> host(n);
  CS_CHECK(cudaMemcpy(host.data(), device, n * sizeof(std::uint32_t), cudaMemcpyDeviceToHost));
  return host;
}

// A device buffer of n values, zeroed (what a reader that is too early finds).
struct DeviceBuffer {
  std::uint32_t* data = nullptr;
  explicit DeviceBuffer(std::size_t n) {
    CS_CHECK(cudaMalloc(&data, n * sizeof(std::uint32_t)));
    CS_CHECK(cudaMemset(data, 0, n * sizeof(std::uint32_t)));
    CS_CHECK(cudaDeviceSynchronize());
  }
  ~DeviceBuffer() { CS_CHECK(cudaFree(data)); }
};

// A producer's buffer A (zeros until it writes) and what B = sum(A) wrote: the sum and how many
// A[i] held the producer's value i % 5 + 1 (small whole numbers: the sum is exact in any order).
struct SumBuffers {
  float* a = nullptr;
  double* sum = nullptr;
  unsigned long long* matches = nullptr;
  unsigned* counter = nullptr;  // legacy-default's bystander counts steps here
  std::size_t n = 0;
  explicit SumBuffers(std::size_t elements) : n(elements) {
    CS_CHECK(cudaMalloc(&a, n * sizeof(float)));
    CS_CHECK(cudaMalloc(&sum, sizeof(double)));
    CS_CHECK(cudaMalloc(&matches, sizeof(unsigned long long)));
    CS_CHECK(cudaMalloc(&counter, sizeof(unsigned)));
    CS_CHECK(cudaMemset(counter, 0, sizeof(unsigned)));
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
    *saw = got == want ? cs::format("read %llu of %zu expected values (sum %.0f, as on the CPU)",
                                    seen, n, got)
                       : cs::format("read %llu of %zu expected values (sum %.0f instead of %.0f)",
                                    seen, n, got, want);
    return seen == n && got == want;
  }
};

// What the reader of parts 3 and 4 copied, and what the block the writer filled next holds.
struct ReaderScene {
  std::vector<std::uint32_t> seen_by_reader, overwritten;
};

// over-sync's check: element i starts at i, `work` runs the kernels (each maps x to 3x + k + 1,
// k = 0 .. kernels - 1, in its stream's order), and the result is compared with the CPU's.
template <typename Work>
void verify_steps(bool synced_after_each, std::uint32_t* data, std::size_t n, int kernels,
                  Work&& work) {
  std::vector<std::uint32_t> want = values_from(0u, n);
  CS_CHECK(cudaMemcpy(data, want.data(), n * sizeof(std::uint32_t), cudaMemcpyHostToDevice));
  CS_CHECK(cudaDeviceSynchronize());  // non-blocking streams do not wait for the legacy stream
  work();
  for (std::uint32_t& v : want) {
    for (int k = 0; k < kernels; ++k) v = 3u * v + static_cast<std::uint32_t>(k) + 1u;
  }
  cs::verify(synced_after_each ? "over_synced_result" : "synced_once_result", download(data, n),
             want);
}

// Runs this program with `args` in a new process, with both variables removed and then `setting`
// ("" or "NAME=value") added; prints its exit status and its verdict, check and stream rows.
inline int run_again(const std::string& setting, const std::string& args) {
  char exe[4096] = {};
  const ssize_t length = readlink("/proc/self/exe", exe, sizeof exe - 1);
  const std::string command = "env -u CUDA_LAUNCH_BLOCKING -u CUDA_DEVICE_MAX_CONNECTIONS " +
                              setting + " '" + std::string(exe, length > 0 ? length : 0) + "' " +
                              args + " 2>&1";
  std::fflush(stdout);
  FILE* pipe = length > 0 ? popen(command.c_str(), "r") : nullptr;
  std::vector<std::string> lines;
  char line[4096];
  while (pipe != nullptr && std::fgets(line, sizeof line, pipe) != nullptr) {
    std::string text(line);
    if (!text.empty() && text.back() == '\n') text.pop_back();
    for (const char* keep : {"BUG REPRODUCED", "bug NOT", "CHECK cross", "stream p ", "stream c "})
      if (text.rfind(keep, 0) == 0) lines.push_back(text);
  }
  const int raw = pipe != nullptr ? pclose(pipe) : -1;
  const int status = pipe != nullptr && WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
  std::printf("%s%s07_broken_vs_fixed_sync %s   -> exit status %d\n", setting.c_str(),
              setting.empty() ? "" : " ", args.c_str(), status);
  for (const std::string& kept : lines) std::printf("    %s\n", kept.c_str());
  return status;
}

}  // namespace lab
