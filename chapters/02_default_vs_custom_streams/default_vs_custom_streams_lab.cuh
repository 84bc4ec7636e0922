// Chapter 02's measurement machinery: not the lesson, and a reader may skip this file. KernelLog
// keeps where the spin kernels write when they ran (the timelines are drawn from those records,
// so drawing them adds no work to the streams); then the timing loops, the model of turns behind
// the bars, and the seed parts' inputs and CPU checks. This header is compiled into the program,
// so in the per-thread build a 0 stream here is the calling thread's default stream too.
#pragma once

#include <algorithm>
#include <atomic>
#include <initializer_list>
#include <random>
#include <string>
#include <thread>
#include <utility>
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

// a / b, or 0 when b is not positive (no ratio is printed from a meaningless division).
inline double ratio(double a, double b) {
  return b > 0 ? a / b : 0.0;
}

// What every part needs to know (make_setup() below fills it in).
struct Setup {
  int device = 0;
  cudaDeviceProp prop{};
  cs::LaunchEnvironment env;
  double kernel_ms = 2.0;
  unsigned long long kernel_ns = 2000000;  // kernel_ms in ns, what spin_kernel takes
  int warmup = 1, repeats = 5;
  std::string timing_skip;  // "" or why timed checks are skipped (--no-timing)
  const cs::CommonOptions* common = nullptr;
  bool concurrent_kernels() const { return prop.concurrentKernels != 0; }
  int connections() const { return env.max_connections; }
};

// The records of a part's spin kernels on the device, and the host's count of its launches.
class KernelLog {
 public:
  explicit KernelLog(int slots) : launches_(size_t(slots), 0), requested_ns_(size_t(slots), 0) {
    CS_CHECK(cudaMalloc(&records_, bytes()));
    CS_CHECK(cudaMemset(records_, 0, bytes()));
    CS_CHECK(cudaDeviceSynchronize());  // a stream-0 memset does not order non-blocking streams
  }
  ~KernelLog() { cudaFree(records_); }
  KernelLog(const KernelLog&) = delete;
  KernelLog& operator=(const KernelLog&) = delete;

  // The arguments of one launch into record `slot`, counted (threads may use different slots).
  SpinTask task(int slot, unsigned long long duration_ns) {
    ++launches_.at(size_t(slot));
    requested_ns_[size_t(slot)] = duration_ns;
    return {duration_ns, records_ + slot};
  }

  // Waits for all work and copies the records back. CHECK <name>_runs: each kernel ran once per
  // launch; <name>_spins: none ended before its time. Returns the records, for a timeline.
  std::vector<KernelRecord> verify(const std::string& name) const {
    CS_CHECK(cudaDeviceSynchronize());
    std::vector<KernelRecord> records(launches_.size());
    CS_CHECK(cudaMemcpy(records.data(), records_, bytes(), cudaMemcpyDeviceToHost));
    std::vector<unsigned int> runs;
    int short_spins = 0;
    double shortest = 1;  // the shortest spin, as a share of its time on the global timer
    for (size_t i = 0; i < records.size(); ++i) {
      runs.push_back(records[i].runs);
      const double spun = double(records[i].end_ns - records[i].start_ns);
      if (launches_[i] > 0 && spun < requested_ns_[i])
        ++short_spins, shortest = std::min(shortest, spun / requested_ns_[i]);
    }
    cs::verify(name + "_runs", runs, launches_);
    std::string detail = cs::format("%d of %zu kernels ended before their time on the global timer",
                                    short_spins, records.size());
    if (short_spins > 0)  // then the iteration bound ended them, not the timer
      detail += cs::format(", by the iteration bound (the shortest %.0f%%)", 100 * shortest);
    cs::check_that(name + "_spins", short_spins == 0, detail);
    return records;
  }

 private:
  size_t bytes() const { return launches_.size() * sizeof(KernelRecord); }
  KernelRecord* records_ = nullptr;
  std::vector<unsigned int> launches_;
  std::vector<unsigned long long> requested_ns_;
};

// One kernel to draw: its record, its row, and its kind (whose first letter is its ASCII glyph).
struct Placement {
  int slot;
  std::string row;
  std::string kind;
};

// Draws each group of kernels in ms since the earliest start within that group, then publishes
// the chart (and --trace, --svg).
inline void publish_timeline(const Setup& setup, const std::vector<KernelRecord>& records,
                             const std::vector<std::vector<Placement>>& groups,
                             const std::string& title) {
  cs::TimelineData data;
  for (const std::vector<Placement>& placed : groups) {
    unsigned long long origin = ~0ull;
    for (const Placement& p : placed) origin = std::min(origin, records[size_t(p.slot)].start_ns);
    for (const Placement& p : placed) {
      auto found = std::find(data.rows.begin(), data.rows.end(), p.row);
      const int row = int(found - data.rows.begin());
      if (found == data.rows.end()) data.rows.push_back(p.row);
      const KernelRecord& r = records[size_t(p.slot)];
      const double start_ms = r.start_ns >= origin ? (r.start_ns - origin) * 1e-6 : 0.0;
      const double end_ms =
          r.end_ns >= r.start_ns ? start_ms + (r.end_ns - r.start_ns) * 1e-6 : 0.0;
      data.spans.push_back({row, p.kind, "", start_ms, end_ms});
    }
  }
  cs::publish_timeline(data, *setup.common, title);
}

// The turns `threads` host threads take when each needs a core while its kernel runs (it spins in
// its synchronize): one core stays with the timing thread, and the OS packs the rest up to one
// turn looser than perfectly (on the H200's 16-core host, 32 threads took four turns, not three).
inline int host_turns(int threads) {
  const int cores = std::max(1, int(std::thread::hardware_concurrency()) - 1);
  return threads <= cores ? 1 : (threads + cores - 1) / cores + 1;
}

// "; N host threads on M cores" when the cores, not the queues, set the turns; else "".
inline std::string cores_note(int threads) {
  if (host_turns(threads) == 1) return "";
  return cs::format("; %d host threads on %u cores", threads, std::thread::hardware_concurrency());
}

// The speedup of `count` kernels over running them one after another, when they run in `turns`
// turns after `issue_ms` to issue them (an allowance, not a measured time, so that launches that
// serialize do not lower their own bar), and the words beside a bar that is a share of it.
inline double ideal_speedup(int count, double kernel_ms, int turns, double issue_ms) {
  return ratio(count * kernel_ms, turns * kernel_ms + issue_ms);
}
inline std::string ideal_why(double share, double ideal, int kernels, int turns, const Setup& setup,
                             double issue_ms) {
  return cs::format("%.2f x ideal %.2fx: %d kernels in %d turn%s on %d queue%s%s, %.3f ms to issue",
                    share, ideal, kernels, turns, turns == 1 ? "" : "s", setup.connections(),
                    setup.connections() == 1 ? "" : "s",
                    setup.concurrent_kernels() ? "" : " (concurrentKernels = 0)", issue_ms);
}

// Why a check that needs kernels to run at once is skipped, or "" (concurrent_skip); overlap_skip
// adds CUDA_LAUNCH_BLOCKING=1, for one host thread issuing into a second stream ahead of the GPU.
inline std::string concurrent_skip(const Setup& setup) {
  return cs::first_reason({setup.timing_skip, setup.concurrent_kernels()
                                                  ? ""
                                                  : "concurrentKernels = 0: one kernel at a time"});
}
inline std::string overlap_skip(const Setup& setup) {
  return cs::first_reason({concurrent_skip(setup), cs::no_overlap_reason(setup.env)});
}

// cs::time_device_ms(), and the median time the host took to issue `work`.
struct Timed {
  cs::Stats time;
  double issue_ms = 0;
};
template <class Work>
Timed time_and_issue_ms(const Setup& setup, Work work) {
  std::vector<double> issue;
  Timed timed;
  timed.time = cs::time_device_ms(setup.warmup, setup.repeats, [&] {
    const double begin = cs::host_now_ms();
    work();
    issue.push_back(cs::host_now_ms() - begin);
  });
  timed.issue_ms = cs::median(issue);
  return timed;
}

// Times `threads` host threads released at once, each running prepare(t) before the clock starts
// and work(t) after; the time runs until the last work(t) has returned.
template <class Prepare, class Work>
cs::Stats time_host_threads_ms(const Setup& setup, int threads, Prepare prepare, Work work) {
  std::vector<double> samples;
  for (int round = 0; round < setup.warmup + setup.repeats; ++round) {
    std::atomic<int> ready{0}, done{0};
    std::atomic<bool> go{false};
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t) {
      pool.emplace_back([&, t] {
        prepare(t);
        ready.fetch_add(1);
        while (!go.load()) std::this_thread::yield();
        work(t);
        done.fetch_add(1);
      });
    }
    while (ready.load() < threads) std::this_thread::yield();
    const double begin = cs::host_now_ms();
    go.store(true);
    while (done.load() < threads) std::this_thread::yield();
    const double elapsed = cs::host_now_ms() - begin;
    for (std::thread& thread : pool) thread.join();
    if (round >= setup.warmup) samples.push_back(elapsed);
  }
  return cs::summarize(samples);
}

// "  label      12.34 ms" lines, then the speedup when one is given.
inline void print_times(std::initializer_list<std::pair<std::string, double>> rows,
                        double speedup = -1) {
  for (const auto& row : rows) std::printf("  %-52s %9.2f ms\n", row.first.c_str(), row.second);
  if (speedup >= 0) std::printf("  %-52s %9.2fx\n", "speedup", speedup);
}

// Part 1's timeline: the default stream's kernels (records 0..N-1), then the streams' (N..2N-1).
inline void publish_concurrency_timeline(const Setup& setup,
                                         const std::vector<KernelRecord>& records, int kernels) {
  std::vector<Placement> in_stream0, in_streams;
  for (int i = 0; i < kernels; ++i) {
    in_stream0.push_back({i, cs::format("default stream, kernel %d", i + 1), "serial"});
    in_streams.push_back(
        {kernels + i, cs::format("stream %d, kernel %d", i + 1, i + 1), "concurrent"});
  }
  publish_timeline(
      setup, records, {in_stream0, in_streams},
      cs::format("Timeline: the default stream runs them in turn; %d streams run them together",
                 kernels));
}

// Part 2's timeline of its first two runs: blocking A, tiny, B (records 0..2), then non-blocking.
inline void publish_legacy_timeline(const Setup& setup, const std::vector<KernelRecord>& records,
                                    const char* build_name) {
  publish_timeline(setup, records,
                   {{{0, "run 1: blocking A", "kernel"},
                     {1, "run 1: stream 0", "tiny kernel in stream 0"},
                     {2, "run 1: blocking B", "kernel"}},
                    {{3, "run 2: non-blocking A", "kernel"},
                     {4, "run 2: stream 0", "tiny kernel in stream 0"},
                     {5, "run 2: non-blocking B", "kernel"}}},
                   cs::format("Timeline: A, a tiny kernel in stream 0, B (%s)", build_name));
}

// Part 3's timeline: one row per host thread (records 0..T-1).
inline void publish_threads_timeline(const Setup& setup, const std::vector<KernelRecord>& records,
                                     int threads, const char* build_name) {
  std::vector<Placement> rows;
  for (int t = 0; t < threads; ++t)
    rows.push_back({t, cs::format("host thread %d", t + 1), "kernel"});
  publish_timeline(
      setup, records, {rows},
      cs::format("Timeline: %d host threads launching into stream 0 (%s)", threads, build_name));
}

// One row of part 2's table; returns its ratio: blocking time / non-blocking time, or under
// CUDA_LAUNCH_BLOCKING=1 / one kernel's time (the non-blocking pair then takes turns too).
inline double legacy_row(const Setup& setup, const char* middle, double blocking_ms,
                         double free_ms) {
  const double r = ratio(blocking_ms, setup.env.launch_blocking ? setup.kernel_ms : free_ms);
  std::printf("  %-30s %15.2f ms %19.2f ms %7.2fx\n", middle, blocking_ms, free_ms, r);
  return r;
}

// Part 4's first line: the hardware queues and how many streams share each.
inline void print_queues(const Setup& setup, int sharing) {
  std::printf(
      "  CUDA_DEVICE_MAX_CONNECTIONS = %d (%s): %d hardware queue%s, up to %d stream%s "
      "per queue\n",
      setup.connections(),
      setup.env.connections_from_env ? "from the environment" : "unset: the default",
      setup.connections(), setup.connections() == 1 ? "" : "s", sharing, sharing == 1 ? "" : "s");
}

// Part 4's table: each layout's time against one stream alone and against the ideal.
inline void print_connections_table(double alone_ms, double ideal_ms, const Timed& depth,
                                    double breadth_ms, const Timed& single, int streams) {
  std::printf("  %-40s %9s %9s %9s\n", "layout", "time", "/ alone", "/ ideal");
  for (auto [label, ms] : {std::pair<const char*, double>{"one stream alone (A then B)", alone_ms},
                           {"ideal: every stream at once", ideal_ms},
                           {"depth-first   (A1 B1 A2 B2 ...)", depth.time.median},
                           {"breadth-first (A1 A2 ... B1 B2 ...)", breadth_ms}})
    std::printf("  %-40s %6.2f ms %8.2fx %8.2fx\n", label, ms, ratio(ms, alone_ms),
                ratio(ms, ideal_ms));
  std::printf("  (ideal = alone + %.3f ms allowed to issue the %d launches; they took %.3f ms)\n",
              ideal_ms - alone_ms, 2 * streams, depth.issue_ms);
  const double single_ideal_ms = ideal_ms / 2;  // half the kernels, half the launches
  std::printf(
      "  For comparison, kernel A alone in every stream: %.2f ms, %.2fx its ideal of %.2f ms\n",
      single.time.median, ratio(single.time.median, single_ideal_ms), single_ideal_ms);
}

// Part 4's timelines of the depth-first (layout 2) and breadth-first (layout 3) runs, one row per
// stream (the first 32); records are [layout][stream][A, B].
inline void publish_connections_timelines(const Setup& setup,
                                          const std::vector<KernelRecord>& records, int streams) {
  const int shown = std::min(streams, 32);
  for (int layout : {2, 3}) {
    std::vector<Placement> placed;
    for (int s = 0; s < shown; ++s) {
      const int slot = (layout * streams + s) * 2;
      placed.push_back({slot, cs::format("stream %d", s + 1), "A (first kernel)"});
      placed.push_back({slot + 1, cs::format("stream %d", s + 1), "B (second kernel)"});
    }
    const std::string first = shown < streams ? cs::format(" (first %d streams)", shown) : "";
    publish_timeline(setup, records, {placed},
                     cs::format("Timeline: %s issue, %d streams on %d queues%s",
                                layout == 2 ? "depth-first" : "breadth-first", streams,
                                setup.connections(), first.c_str()));
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

// Copies the n x n product back, prints two corners of it and checks it against m x m in double
// precision on the CPU: every entry of a small matrix, else 4096 (the corners, then entries picked
// at random).
inline void verify_square(const std::string& name, const std::string& of, const std::string& what,
                          const std::vector<float>& m, const float* device_product, int n,
                          double tolerance) {
  const size_t count = m.size(), edge = size_t(n);
  std::vector<float> product(count);
  CS_CHECK(
      cudaMemcpy(product.data(), device_product, count * sizeof(float), cudaMemcpyDeviceToHost));
  std::printf("  %s: [%d, %d], [0][0] = %.4f, [%d][%d] = %.4f\n", what.c_str(), n, n, product[0],
              n - 1, n - 1, product[count - 1]);
  const size_t samples = count <= 65536 ? count : 4096;
  std::mt19937 picker(1);
  std::uniform_int_distribution<size_t> any(0, count - 1);
  std::vector<double> got, want;
  for (size_t s = 0; s < samples; ++s) {
    const size_t i = samples == count ? s : s == 0 ? 0 : s == 1 ? count - 1 : any(picker);
    double sum = 0;
    for (size_t k = 0; k < edge; ++k)
      sum += double(m[i / edge * edge + k]) * m[k * edge + i % edge];
    got.push_back(product[i]);
    want.push_back(sum);
  }
  cs::verify(cs::format("%s (%zu entries of %s)", name.c_str(), samples, of.c_str()), got, want,
             tolerance);
}

// Copies `device_out` back and checks it is host_in * factor, element by element.
inline void verify_scaled(const std::string& name, const float* device_out,
                          const std::vector<float>& host_in, float factor) {
  std::vector<float> got(host_in.size()), want(host_in.size());
  CS_CHECK(cudaMemcpy(got.data(), device_out, got.size() * sizeof(float), cudaMemcpyDeviceToHost));
  for (size_t i = 0; i < host_in.size(); ++i) want[i] = host_in[i] * factor;
  cs::verify(name, got, want);
}

// Why seed_mm_two_streams skips: --no-timing, or an mm of fewer blocks than SMs, which does not
// fill the GPU (the check's premise).
inline std::string mm_skip(const Setup& setup, unsigned blocks) {
  if (!setup.timing_skip.empty() || blocks >= unsigned(setup.prop.multiProcessorCount))
    return setup.timing_skip;
  return cs::format("--matrix: %u blocks, fewer than the %d SMs: the mm does not fill the GPU",
                    blocks, setup.prop.multiProcessorCount);
}

// The setup every part reads (--no-timing: one run, no warm-up, timed checks skipped).
inline Setup make_setup(const cs::CommonOptions& common, const cs::LaunchEnvironment& env,
                        double kernel_ms, int repeats) {
  Setup setup;
  setup.env = env;
  setup.device = common.device;
  setup.prop = cs::select_device(common.device);
  setup.kernel_ms = kernel_ms;
  setup.kernel_ns = static_cast<unsigned long long>(kernel_ms * 1e6 + 0.5);
  setup.warmup = common.no_timing ? 0 : 1;
  setup.repeats = common.no_timing ? 1 : repeats;
  setup.timing_skip = common.timing_skip_reason();
  setup.common = &common;
  return setup;
}

// The lines under the device line: the build, the queues, the environment, the timing.
inline void print_setup(const Setup& setup, const char* build_name, bool per_thread) {
  std::printf("Build: %s (stream 0 is %s)\n", build_name,
              per_thread ? "each host thread's own default stream"
                         : "the legacy default stream, shared by all host threads");
  std::printf("concurrentKernels = %d, CUDA_DEVICE_MAX_CONNECTIONS = %d (%s)\n",
              setup.prop.concurrentKernels, setup.connections(),
              setup.env.connections_from_env ? "from the environment" : "unset: the default");
  cs::print_launch_environment(setup.env);
  std::printf("Times are medians of %d run%s after %d warm-up run%s.\n", setup.repeats,
              setup.repeats == 1 ? "" : "s", setup.warmup, setup.warmup == 1 ? "" : "s");
}

}  // namespace lab
