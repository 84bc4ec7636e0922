// Chapter 07's machinery: its flags and the choice of variants, the buffers a sum writes into,
// the words a broken variant prints when its bug showed (or could not show under a setting), the
// exit status, and running this program again under other environment settings (for part
// hidden-by-setting). None of it is the lesson; a reader may skip this file. The calls the chapter
// teaches (launches, events, waits, frees, synchronizations) are all in broken_vs_fixed_sync.cu.
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

// Exit status of a run of --broken variants that showed their bugs.
constexpr int kBugReproducedExitCode = 3;

// The program's --help text.
constexpr const char* kAbout =
    "Synchronization bugs and their fixes, each a pair: --case NAME --broken | --fixed (with "
    "neither, broken then fixed).\nExit status: 0 right; 3 --broken and the bug was reproduced; 77 "
    "--broken under a setting that hides it; 1 a check failed.";

// The chapter's flags, with their defaults.
struct Flags {
  std::string case_name = "all";  // --case: this chapter's name for --part
  bool broken = false;
  bool fixed = false;
  bool list = false;
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

// Which variants run, broken first: validates the combination of flags (before any CUDA call),
// and answers --list.
inline std::vector<bool> variants_or_exit(const Flags& f, const cs::Parts& parts,
                                          const std::vector<cs::Parts::Part>& cases,
                                          const cs::CommonOptions& common) {
  if (f.list) {
    std::printf("Cases (run each with --case NAME --broken or --case NAME --fixed):\n");
    for (const cs::Parts::Part& c : cases)
      std::printf("  %-18s %s\n", c.name.c_str(), c.what.c_str());
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

// What each case's variants do, what went wrong when a broken one lost its race (@ stands for
// what it measured), and why a fixed one is right.
struct CaseWords {
  const char *name, *broken, *fixed, *bug, *why_right;
};
inline const CaseWords& words_of(const std::string& name) {
  static const CaseWords words[] = {
      {"host-read", "read right after cudaMemcpyAsync returns",
       "cudaEventSynchronize(copied), then read",
       "the host @: it did not wait for cudaMemcpyAsync to finish",
       "cudaEventSynchronize(copied) returned only after the copy, and the slow producer queued "
       "before it, had finished (cudaStreamSynchronize(stream) would do the same)"},
      {"cross-stream", "sum() on c right after normal_() on p, no wait",
       "c waits for an event recorded on p after normal_()",
       "the consumer @: it did not wait for the producer",
       "stream c waited (cudaStreamWaitEvent) for the event recorded on stream p after "
       "normal_(), so sum() started only once A was written"},
      {"reuse", "iteration 2 overwrites the buffer at once",
       "the writer waits for an event recorded after the read",
       "the reader @ of iteration 1: the writer overwrote the buffer with iteration 2 before the "
       "reader was done with it",
       "the writer's stream waited for the event recorded after the read, so iteration 2 "
       "overwrote the buffer only when iteration 1's reader no longer needed it"},
      {"use-after-free", "cudaFreeAsync(block, owner): the allocating stream",
       "cudaFreeAsync(block, reader): the stream of the last use",
       "the reader @ of its own buffer: cudaFreeAsync on stream owner released the block while "
       "stream reader still used it, the pool handed it out again and its new owner overwrote it",
       "cudaFreeAsync in the reader's stream released the block only after the read, so the "
       "next allocation on stream owner could have it only after that"},
      {"over-sync", "cudaDeviceSynchronize after every launch",
       "one cudaDeviceSynchronize after all launches",
       "synchronizing after every launch made the same, correct work @ slower: the host waited "
       "for each kernel, so the 4 streams never overlapped",
       "stream order alone keeps each stream's kernels in order; with one synchronization at the "
       "end the host keeps launching and the streams overlap"},
      {"legacy-default", "no wait between p and c: blocking, then non-blocking streams",
       "non-blocking streams, and c waits for p's event",
       "with non-blocking streams the consumer @: only the legacy default stream had been "
       "ordering it after the producer",
       "stream c waits for an event recorded on p after the producer: the order is stated in the "
       "code, and no longer depends on a kernel that happens to sit in stream 0"},
      {"hidden-by-setting", "cross-stream --broken under each setting",
       "cross-stream --fixed under each setting",
       "the same code gave the right sum under @ and the wrong one with the defaults: a test "
       "run only under such a setting proves nothing",
       "the event wait orders sum() after normal_() whatever the launches and queues"},
  };
  for (const CaseWords& w : words) {
    if (name == w.name) return w;
  }
  std::abort();
}

// Why a setting hides the bug of a race between a slow stream and a quick one.
constexpr const char* kLaunchWaited =
    "the slow kernel's launch returned only after it had run, so the quick side was issued too "
    "late to race it";
// host-read under CUDA_LAUNCH_BLOCKING=1: the copy itself stays asynchronous, so the read can
// still lose the race, but only against the copy's last microseconds.
constexpr const char* kOnlyTheCopyRaced =
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
  const CaseWords* words = nullptr;  // the case that runs
  int reproduced = 0;                // broken variants whose bug showed
  std::string hidden;  // why the last hidden bug could not show ("cannot be shown under ...")
  bool queue_shared = false;  // the last probe_queues(): the two streams share a hardware queue
  unsigned long long delay_ns() const {
    return static_cast<unsigned long long>(delay_ms) * 1000000ull;
  }
  // "cannot be shown under <setting>: <why>" when a setting of this run hides a case's bug (the
  // case passes nullptr for a setting that does not), or "". Queues: one, or measured as shared.
  std::string hides(const char* launch_blocking_why, const char* queue_why) const {
    if (env.launch_blocking && launch_blocking_why != nullptr) {
      return std::string("cannot be shown under CUDA_LAUNCH_BLOCKING=1: ") + launch_blocking_why;
    }
    if (queue_why == nullptr || (env.max_connections > 1 && !queue_shared)) return "";
    return cs::format("cannot be shown under CUDA_DEVICE_MAX_CONNECTIONS=%d: %s%s",
                      env.max_connections, env.max_connections == 1 ? "" : "measured: ", queue_why);
  }
  // "did not show under <setting>: <why>" for a bug a setting makes unlikely (host-read), or "".
  std::string may_hide(const char* launch_blocking_why) const {
    if (!env.launch_blocking) return "";
    return std::string("did not show under CUDA_LAUNCH_BLOCKING=1: ") + launch_blocking_why;
  }
  // hides() for a race between a slow stream and a quick one.
  std::string race_hidden() const { return hides(kLaunchWaited, kSharedQueue); }
  // legacy-default's race has a third stream, the legacy one: on fewer than 3 queues two of the
  // three share one, and which two (seen to vary between runs) the driver does not document.
  std::string legacy_race_hidden() const {
    if (!race_hidden().empty() || env.max_connections >= 3) return race_hidden();
    return cs::format(
        "cannot be shown under CUDA_DEVICE_MAX_CONNECTIONS=%d: p, c and the legacy "
        "stream share %d hardware queues; %s",
        env.max_connections, env.max_connections, kSharedQueue);
  }
  // Starts a variant of case `name`: one line saying what it issues.
  void begin(const char* name, bool broken) {
    words = &words_of(name);
    std::printf("\n-- %s: %s\n", broken ? "broken" : "fixed",
                broken ? words->broken : words->fixed);
  }
  void explain() const { std::printf("Why it is right: %s\n", words->why_right); }
  // A broken variant's bug showed (counted; `detail` is what it measured), or it did not.
  void demonstrated(bool shown, const std::string& detail) {
    if (shown) ++reproduced;
    std::string bug = words->bug;
    if (shown) std::printf("BUG REPRODUCED: %s\n", bug.replace(bug.find('@'), 1, detail).c_str());
    if (!shown) std::printf("bug NOT reproduced: the result was right: it demonstrates nothing\n");
  }
  // A setting of this run hid a broken variant's bug: a skipped check, and exit 77 with --broken
  // if no other bug showed.
  void skip_hidden(const std::string& check, const std::string& reason) {
    std::printf("The result was right this time: the bug %s\n", reason.c_str());
    hidden = reason;
    cs::check_skipped(check, reason);
  }
  // over-sync: whether both versions can be timed; if not, a skipped check says why. Broken: a
  // setting that hides the slowdown. Fixed: no time measured, or no overlap possible.
  bool can_time_over_sync(bool broken) {
    std::string skip =
        broken ? hides("every launch already waited for its kernel", nullptr)
               : cs::first_reason({common->timing_skip_reason(), cs::no_overlap_reason(env)});
    if (broken && skip.empty() && common->no_timing)  // the whole lesson with --no-timing
      skip = "cannot be shown with --no-timing: over-sync's bug is its running time";
    if (!skip.empty() && broken) skip_hidden("over_sync_slowdown", skip);
    if (!skip.empty() && !broken) {
      cs::check_skipped(common->no_timing ? "over_sync_slowdown" : "sync_once_speedup", skip);
    }
    return skip.empty();
  }
  // use-after-free: what plain cudaFree's time, issued while a kernel spun delay_ms, says.
  void say_how_long_cudafree_took(double inside_ms) const {
    std::printf(
        "plain cudaFree of an unrelated buffer, issued while a %d ms kernel ran: returned "
        "after %s, so it %s\n",
        delay_ms, cs::format_ms(inside_ms).c_str(),
        env.launch_blocking           ? "found it done (the launch itself had waited)"
        : inside_ms >= 0.5 * delay_ms ? "waited for the device to finish its work"
                                      : "did not wait for the device on this system");
  }
  // The verdict of a broken variant whose bug is a wrong result: shown, hidden by a setting
  // (`hidden_reason` from hides()), or not shown.
  void bug_verdict(const std::string& check, bool shown, const std::string& detail,
                   const std::string& hidden_reason) {
    if (!shown && !hidden_reason.empty()) return skip_hidden(check, hidden_reason);
    demonstrated(shown, detail);
    cs::check_that(check, shown, shown ? "the bug showed" : "the bug did not show");
  }
};

// The exit status: --broken ends in 3 when the bugs showed, 77 when a setting hid every one of
// them, 1 when a check failed; otherwise cs::finish()'s 0 or 1.
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

// ---------------------------------------------------------------------------------------------
// Values and buffers
// ---------------------------------------------------------------------------------------------

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
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
};

// A producer's buffer A (zeros until it writes: what an early reader finds), and what the
// consumer's B = sum(A) wrote: the sum and how many A[i] held the producer's value.
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
  SumBuffers(const SumBuffers&) = delete;
  SumBuffers& operator=(const SumBuffers&) = delete;

  // The sum when every A[i] = i % 5 + 1 (the producer's values): small whole numbers, so the
  // GPU's sum is exact in any order.
  double expected_sum() const {
    double want = 0;
    for (std::size_t i = 0; i < n; ++i) want += static_cast<double>(i % 5 + 1);
    return want;
  }
  // Reads the result back; whether the consumer saw every value the producer wrote, and the
  // words that say what it saw.
  bool right(std::string* words) const {
    double got = 0;
    unsigned long long seen = 0;
    CS_CHECK(cudaMemcpy(&got, sum, sizeof(double), cudaMemcpyDeviceToHost));
    CS_CHECK(cudaMemcpy(&seen, matches, sizeof seen, cudaMemcpyDeviceToHost));
    const double want = expected_sum();
    *words = got == want ? cs::format("read %llu of %zu expected values (sum %.0f, as on the CPU)",
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

// over-sync's medians of both versions.
inline void print_medians(const cs::Stats& once, const cs::Stats& every, int launches) {
  std::printf("one sync at the end: %s; a sync after each of the %d launches: %s (medians of 7)\n",
              cs::format_ms(once.median).c_str(), launches, cs::format_ms(every.median).c_str());
}

// over-sync's check: element i starts at i, `work` runs the kernels (each maps x to 3x + k + 1,
// k = 0 .. kernels - 1, in its stream's order), and the result is compared with the CPU's.
template <typename Work>
void verify_steps(bool synced_after_each, std::uint32_t* data, std::size_t n, int kernels,
                  Work&& work) {
  std::vector<std::uint32_t> want(n);
  for (std::size_t i = 0; i < n; ++i) want[i] = static_cast<std::uint32_t>(i);
  CS_CHECK(cudaMemcpy(data, want.data(), n * sizeof(std::uint32_t), cudaMemcpyHostToDevice));
  CS_CHECK(cudaDeviceSynchronize());  // non-blocking streams do not wait for the legacy stream
  work();
  for (std::uint32_t& v : want) {
    for (int k = 0; k < kernels; ++k) v = 3u * v + static_cast<std::uint32_t>(k) + 1u;
  }
  cs::verify(synced_after_each ? "over_synced_result" : "synced_once_result", download(data, n),
             want);
}

// ---------------------------------------------------------------------------------------------
// This program, run again under other settings (part hidden-by-setting)
// ---------------------------------------------------------------------------------------------

// What a run of this program under one setting gave: its exit status and the lines that say what
// happened (the verdict, the result and the timeline's rows).
struct ChildRun {
  int status = -1;
  std::vector<std::string> lines;
};

// The runtime reads CUDA_LAUNCH_BLOCKING and CUDA_DEVICE_MAX_CONNECTIONS once, when it starts, so
// another setting needs another process: runs this program with `args`, with both variables
// removed and then `setting` ("" for the defaults, or "NAME=value") added.
inline ChildRun run_under(const std::string& setting, const std::string& args) {
  char exe[4096] = {};
  const ssize_t length = readlink("/proc/self/exe", exe, sizeof exe - 1);
  ChildRun run;
  if (length <= 0) return run;
  const std::string command = "env -u CUDA_LAUNCH_BLOCKING -u CUDA_DEVICE_MAX_CONNECTIONS " +
                              setting + " '" + std::string(exe, length) + "' " + args + " 2>&1";
  std::fflush(stdout);
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return run;
  char line[4096];
  while (std::fgets(line, sizeof line, pipe) != nullptr) {
    std::string text(line);
    if (!text.empty() && text.back() == '\n') text.pop_back();
    for (const char* keep :
         {"BUG REPRODUCED", "bug NOT", "CHECK cross", "stream p ", "stream c "}) {
      if (text.rfind(keep, 0) == 0) run.lines.push_back(text);
    }
  }
  const int raw = pclose(pipe);
  run.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
  return run;
}

// Runs this program's cross-stream case (broken or fixed, with this run's sizes) under the
// defaults, CUDA_LAUNCH_BLOCKING=1 and CUDA_DEVICE_MAX_CONNECTIONS=1, printing what each run said;
// none where the device's compute mode lets only one process use it at a time (a skipped check
// says so).
inline std::vector<ChildRun> run_under_each_setting(const Lab& lab, bool broken) {
  const std::string args =
      cs::format("--case cross-stream %s --delay-ms %d --elements %zu --device %d",
                 broken ? "--broken" : "--fixed", lab.delay_ms, lab.n, lab.device);
  int mode = 0;
  CS_CHECK(cudaDeviceGetAttribute(&mode, cudaDevAttrComputeMode, lab.device));
  if (mode != cudaComputeModeDefault) {
    cs::check_skipped("runs_under_each_setting",
                      "the device's compute mode lets one process at a time use it");
    return {};
  }
  std::vector<ChildRun> runs;
  for (const char* setting : {"", "CUDA_LAUNCH_BLOCKING=1", "CUDA_DEVICE_MAX_CONNECTIONS=1"}) {
    runs.push_back(run_under(setting, args));
    std::printf("%s%s07_broken_vs_fixed_sync %s   -> exit status %d\n", setting,
                *setting ? " " : "", args.c_str(), runs.back().status);
    for (const std::string& line : runs.back().lines) std::printf("    %s\n", line.c_str());
  }
  return runs;
}

}  // namespace lab
