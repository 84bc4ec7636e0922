// Chapter 02's measurement machinery: not the lesson, and a reader may skip this file. KernelLog
// keeps where the spin kernels write when they ran (parts 1 and 3 draw their timelines from those
// records, so drawing adds no work to the streams); then the timing helper and the seed parts'
// inputs (their CPU checks are common's). This header is compiled into the program, so in the
// per-thread build a 0 stream here is the calling thread's default stream too.
#pragma once

#include <algorithm>
#include <atomic>
#include <random>
#include <string>
#include <vector>

#include "cuda_streams.hpp"

namespace lab {

// What a spin kernel leaves behind, and one launch's arguments: how long to spin, where to write.
struct KernelRecord {
  unsigned long long start_ns, end_ns;
  unsigned int runs;
};
struct SpinTask {
  unsigned long long duration_ns;
  KernelRecord* record;
};

// What every part needs to know: the first four from main, the rest follows from them.
struct Setup {
  const cs::CommonOptions& common;
  cs::LaunchEnvironment env;
  double kernel_ms;
  int repeats_asked;  // --repeats; --no-timing: one run, no warm-up, timed checks skipped
  cudaDeviceProp prop = cs::select_device(common.device);
  int warmup = common.no_timing ? 0 : 1, repeats = common.no_timing ? 1 : repeats_asked;
  // Why timed checks skip: --no-timing; a check that needs kernels at once, also without
  // concurrentKernels; one host thread overlapping streams, also under CUDA_LAUNCH_BLOCKING=1.
  std::string timing_skip = common.timing_skip_reason();
  std::string concurrent_skip = cs::first_reason(
      {timing_skip, prop.concurrentKernels ? "" : "concurrentKernels = 0: one kernel at a time"});
  std::string overlap_skip = cs::first_reason({concurrent_skip, cs::no_overlap_reason(env)});
};

// One measurement (cs::time_issue_and_device_ms): setup.warmup runs (none under --no-timing), then
// setup.repeats, each on the host's clock until cudaDeviceSynchronize() has returned; a launch
// error exits. .done: the runs' times; .issue: until the last call of each run had returned.
template <class Launches>
cs::IssueAndDone time_issue_ms(const Setup& setup, Launches&& launches) {
  return cs::time_issue_and_device_ms(setup.warmup, setup.repeats, launches);
}
template <class Launches>
cs::Stats time_ms(const Setup& setup, Launches&& launches) {  // the same, its .done alone
  return time_issue_ms(setup, launches).done;
}

// Where a part's spin kernels write when they ran, one record per launch (part 4 makes the most:
// 32,742 with 128 streams and 50 repeats), and how long the host asked each launch to spin.
struct KernelLog {
  static constexpr size_t kCapacity = 1 << 16;
  unsigned long long kernel_ns;  // the length of a task(): --kernel-ms to the nearest ns
  std::vector<unsigned long long> asked_ns = std::vector<unsigned long long>(kCapacity);
  std::atomic<size_t> launched{0};  // part 3's host threads launch at once
  KernelRecord* records = nullptr;
  explicit KernelLog(const Setup& setup) : kernel_ns(setup.kernel_ms * 1e6 + 0.5) {
    CS_CHECK(cudaMalloc(&records, kCapacity * sizeof(KernelRecord)));
    CS_CHECK(cudaMemset(records, 0, kCapacity * sizeof(KernelRecord)));
    CS_CHECK(cudaDeviceSynchronize());  // a stream-0 memset does not order non-blocking streams
  }
  ~KernelLog() { cudaFree(records); }  // (std::atomic makes it impossible to copy)

  // The arguments of the next launch: spin for --kernel-ms, or for `duration_ns`.
  SpinTask task() { return task(kernel_ns); }
  SpinTask task(unsigned long long duration_ns) {
    const size_t i = launched++;
    asked_ns.at(i) = duration_ns;
    return {duration_ns, records + i};
  }

  // Waits for all work and copies the records back. CHECK <name>_runs: each launch ran once;
  // <name>_spins: none ended before its time (the iteration bound ended it, not the timer).
  // Returns the records, in launch order.
  std::vector<KernelRecord> verify(const std::string& name) const {
    CS_CHECK(cudaDeviceSynchronize());
    std::vector<KernelRecord> got(launched);
    CS_CHECK(cudaMemcpy(got.data(), records, got.size() * sizeof(got[0]), cudaMemcpyDeviceToHost));
    std::vector<unsigned int> runs, once(got.size(), 1);
    int short_spins = 0;
    for (size_t i = 0; i < got.size(); ++i)
      runs.push_back(got[i].runs), short_spins += got[i].end_ns - got[i].start_ns < asked_ns[i];
    cs::verify(name + "_runs", runs, once);
    cs::check_that(name + "_spins", short_spins == 0,
                   cs::format("%d of %zu kernels ended early", short_spins, got.size()));
    return got;
  }
};

// Kernels first[0 .. n) on rows of their own (`row` takes the kernel's number), in ms since the
// first of them started: parts 1 and 3 draw their timelines from the records, adding no work.
inline void add_kernels(cs::TimelineData& timeline, const KernelRecord* first, int n,
                        const char* row, const char* kind) {
  unsigned long long origin = first[0].start_ns;
  for (int k = 0; k < n; ++k) origin = std::min(origin, first[k].start_ns);
  for (int k = 0; k < n; ++k) {
    timeline.spans.push_back({int(timeline.rows.size()), kind, "",
                              (first[k].start_ns - origin) * 1e-6,
                              (first[k].end_ns - origin) * 1e-6});
    timeline.rows.push_back(cs::format(row, k + 1));
  }
}

// `count` values like torch.rand (uniform in [0, 1)) or torch.randn (normal), fixed seed.
inline std::vector<float> random_values(size_t count, unsigned seed, bool normal) {
  std::mt19937 generator(seed);
  std::uniform_real_distribution<float> uniform(0.0f, 1.0f);
  std::normal_distribution<float> gauss(0.0f, 1.0f);
  std::vector<float> values(count);
  for (float& x : values) x = normal ? gauss(generator) : uniform(generator);
  return values;
}

}  // namespace lab
