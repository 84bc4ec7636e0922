// Chapter 02's measurement machinery: not the lesson, and a reader may skip this file.
//
// - KernelLog: where the spin kernels write when they started and ended, and the host's count of
//   what it launched, so that a part can check every kernel ran once per launch, for its time.
// - add_spans(): a timeline drawn from those records (the kernels time themselves on the GPU's
//   global timer, so drawing a timeline adds no work to the streams).
// - turns(), ideal_speedup(): how many turns independent kernels may have to take on the hardware
//   queues (CUDA_DEVICE_MAX_CONNECTIONS), and the ideal speedup that follows.
// - time_and_issue_ms(), time_host_threads_ms(): timing loops around work the parts write out.
// - The seed part's inputs and CPU reference, and the closing table of what stream 0 means.
//
// This header is compiled into the chapter's program, so in the per-thread build a 0 stream here
// is the calling thread's default stream too.
#pragma once

#include <algorithm>
#include <atomic>
#include <functional>
#include <initializer_list>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "cuda_streams.hpp"

namespace lab {

// What a spin kernel leaves behind: when it started and ended, and how often it ran.
struct KernelRecord {
  unsigned long long start_ns;
  unsigned long long end_ns;
  unsigned int runs;
};

// One launch's arguments: how long to spin and where to write the record.
struct SpinTask {
  unsigned long long duration_ns;
  KernelRecord* record;
};

// a / b, or 0 when b is not positive (no ratio is printed from a meaningless division).
inline double ratio(double a, double b) {
  return b > 0 ? a / b : 0.0;
}

// What every part needs to know.
struct Setup {
  int device = 0;
  cudaDeviceProp prop{};
  cs::LaunchEnvironment env;
  double kernel_ms = 2.0;
  unsigned long long kernel_ns = 2000000;  // kernel_ms in ns, what spin_kernel takes
  int warmup = 1;
  int repeats = 5;
  std::string timing_skip;  // "" or why timed checks are skipped (--no-timing)
  const cs::CommonOptions* common = nullptr;
  bool concurrent_kernels() const { return prop.concurrentKernels != 0; }
  int connections() const { return env.max_connections; }
};

// The records of a part's spin kernels on the device, and the host's own log of its launches.
class KernelLog {
 public:
  explicit KernelLog(int slots)
      : launches_(static_cast<size_t>(slots), 0), requested_ns_(static_cast<size_t>(slots), 0) {
    CS_CHECK(cudaMalloc(&records_, bytes()));
    CS_CHECK(cudaMemset(records_, 0, bytes()));
    // A memset in stream 0 does not order itself before non-blocking streams: finish it first.
    CS_CHECK(cudaDeviceSynchronize());
  }
  ~KernelLog() { cudaFree(records_); }
  KernelLog(const KernelLog&) = delete;
  KernelLog& operator=(const KernelLog&) = delete;

  // The arguments for one launch of spin_kernel into record `slot`; counts the launch.
  // Threads may call it at the same time for different slots.
  SpinTask task(int slot, unsigned long long duration_ns) {
    ++launches_.at(static_cast<size_t>(slot));
    requested_ns_[static_cast<size_t>(slot)] = duration_ns;
    return {duration_ns, records_ + slot};
  }

  // Waits for all work, then copies the records back.
  std::vector<KernelRecord> fetch() const {
    CS_CHECK(cudaDeviceSynchronize());
    std::vector<KernelRecord> records(launches_.size());
    CS_CHECK(cudaMemcpy(records.data(), records_, bytes(), cudaMemcpyDeviceToHost));
    return records;
  }

  // CHECK <name>_runs: each kernel ran once per launch; <name>_spins: none ended early.
  void verify(const std::string& name) const {
    const std::vector<KernelRecord> records = fetch();
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
  }

 private:
  size_t bytes() const { return launches_.size() * sizeof(KernelRecord); }
  KernelRecord* records_ = nullptr;
  std::vector<unsigned int> launches_;
  std::vector<unsigned long long> requested_ns_;
};

// One kernel to draw: its record, its timeline row, and its kind (the kind's first letter is its
// glyph in the ASCII chart).
struct Placement {
  int slot;
  std::string row;
  std::string kind;
};

// `count` kernels in records first_slot.., kernel i on the row row_name(i).
inline std::vector<Placement> placements(int first_slot, int count,
                                         const std::function<std::string(int)>& row_name,
                                         const std::string& kind) {
  std::vector<Placement> out;
  for (int i = 0; i < count; ++i) out.push_back({first_slot + i, row_name(i), kind});
  return out;
}

// Adds the placed kernels to `data`, in milliseconds since the earliest start among them.
inline void add_spans(cs::TimelineData& data, const std::vector<KernelRecord>& records,
                      const std::vector<Placement>& placed) {
  unsigned long long origin = ~0ull;
  for (const Placement& p : placed) {
    origin = std::min(origin, records[static_cast<size_t>(p.slot)].start_ns);
  }
  for (const Placement& p : placed) {
    auto found = std::find(data.rows.begin(), data.rows.end(), p.row);
    const int row = static_cast<int>(found - data.rows.begin());
    if (found == data.rows.end()) data.rows.push_back(p.row);
    const KernelRecord& r = records[static_cast<size_t>(p.slot)];
    const double start_ms = r.start_ns >= origin ? (r.start_ns - origin) * 1e-6 : 0.0;
    const double end_ms = r.end_ns >= r.start_ns ? start_ms + (r.end_ns - r.start_ns) * 1e-6 : 0.0;
    data.spans.push_back({row, p.kind, "", start_ms, end_ms});
  }
}

// The number of turns `count` independent one-kernel streams must take: `count` when the device
// runs one kernel at a time, else one. A hardware queue dispatches the next kernel as soon as the
// one before it has been dispatched when nothing orders them, so shared queues do not make
// independent kernels take turns (on the H200: 8 kernels on 1 queue, and 32 on 8 queues, all ran
// at once); only a kernel that must wait holds its queue (part connections). `count` stays far
// below the 128 kernels a device of compute capability 7.0 or newer runs at once.
inline int turns(const Setup& setup, int count) {
  return setup.concurrent_kernels() ? 1 : count;
}

// The turns `threads` host threads take when each needs a core while its kernel runs (it spins in
// its synchronize): one core stays with the thread that times them, past the rest the threads
// wait for a core, and the OS packs them up to one turn looser than perfectly (on the H200's
// 16-core host, 32 threads took four turns where perfect packing gives three).
inline int host_turns(int threads) {
  const int cores = std::max(1, static_cast<int>(std::thread::hardware_concurrency()) - 1);
  return threads <= cores ? 1 : (threads + cores - 1) / cores + 1;
}

// Why seed_mm_two_streams skips: --no-timing, or an mm of fewer blocks than SMs, which does not
// fill the GPU (the check's premise), and at one block lasts microseconds.
inline std::string mm_skip(const Setup& setup, unsigned blocks) {
  if (!setup.timing_skip.empty() || blocks >= unsigned(setup.prop.multiProcessorCount)) {
    return setup.timing_skip;
  }
  return cs::format("--matrix: %u blocks, fewer than the %d SMs: the mm does not fill the GPU",
                    blocks, setup.prop.multiProcessorCount);
}

// "; N host threads on M cores" when the cores, not the queues, set the turns; else "".
inline std::string cores_note(int threads) {
  if (host_turns(threads) == 1) return "";
  return cs::format("; %d host threads on %u cores", threads, std::thread::hardware_concurrency());
}

// Streams per hardware queue when `streams` streams are dealt out over the queues in turn.
inline int streams_per_queue(const Setup& setup, int streams) {
  return (streams + setup.connections() - 1) / setup.connections();
}

// The speedup of `count` kernels of `kernel_ms` each over running them one after another, when
// issuing them is allowed `issue_ms` (not a measured time, so that launches that serialize do
// not lower their own bar) and they run in `turns_needed` turns.
inline double ideal_speedup(int count, double kernel_ms, int turns_needed, double issue_ms) {
  return ratio(count * kernel_ms, turns_needed * kernel_ms + issue_ms);
}

// Why a check that needs kernels to run at once is skipped here, or "": --no-timing, a device
// without concurrentKernels.
inline std::string concurrent_skip(const Setup& setup) {
  return cs::first_reason({setup.timing_skip, setup.concurrent_kernels()
                                                  ? ""
                                                  : "concurrentKernels = 0: one kernel at a time"});
}

// ... and also CUDA_LAUNCH_BLOCKING=1, for a check that needs one host thread to issue work into
// two streams before the first has finished.
inline std::string overlap_skip(const Setup& setup) {
  return cs::first_reason({concurrent_skip(setup), cs::no_overlap_reason(setup.env)});
}

// The words beside a "serializes" bar of part 2.
inline std::string serial_why(const Setup& setup) {
  return setup.env.launch_blocking ? "blocking time / one kernel's: A and B take turns"
                                   : "ideal 2x: B waits for the tiny kernel, which waits for A";
}

// The words beside part 4's bars when every stream has a queue of its own.
inline std::string own_queue_why(const Setup& setup, int n) {
  return cs::format("every stream has a queue of its own: %d >= %d streams", setup.connections(),
                    n);
}

// The words beside part 4's false-dependency bar.
inline std::string false_dependency_why(double share, double predicted, int sharing) {
  return cs::format(
      "depth-first / one stream alone, %.1f x predicted %.1fx: %d streams per "
      "queue, each B holds its queue until its A ends",
      share, predicted, sharing);
}

// The words beside a bar that is a share of the ideal speedup.
inline std::string ideal_why(double share, double ideal, int kernels, int turns_needed,
                             const Setup& setup, double issue_ms) {
  return cs::format("%.2f x ideal %.2fx: %d kernels in %d turn%s on %d queue%s%s, %.3f ms to issue",
                    share, ideal, kernels, turns_needed, turns_needed == 1 ? "" : "s",
                    setup.connections(), setup.connections() == 1 ? "" : "s",
                    setup.concurrent_kernels() ? "" : " (concurrentKernels = 0)", issue_ms);
}

// A time, and how long the host took to issue the work inside it (median of each).
struct Timed {
  cs::Stats time;
  double issue_ms = 0;
};

// cs::time_device_ms(), also timing on the host how long `work` takes to issue.
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

// Times `threads` host threads released at once: each runs prepare(t) before the clock starts
// (the clock starts once every thread has run it),
// then work(t); the time runs until the last work(t) has returned.
template <class Prepare, class Work>
cs::Stats time_host_threads_ms(const Setup& setup, int threads, Prepare prepare, Work work) {
  std::vector<double> samples;
  for (int round = 0; round < setup.warmup + setup.repeats; ++round) {
    std::atomic<int> ready{0};
    std::atomic<int> done{0};
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

// "label (0.50x serial)".
inline std::string format_ratio(const char* label, double ms, double serial_ms) {
  return cs::format("%s (%.2fx serial)", label, ratio(ms, serial_ms));
}

// Prints one "  label      12.34 ms" line per row, then the speedup when one is given.
inline void print_times(std::initializer_list<std::pair<std::string, double>> rows,
                        double speedup = -1) {
  for (const auto& row : rows) std::printf("  %-52s %9.2f ms\n", row.first.c_str(), row.second);
  if (speedup >= 0) std::printf("  %-52s %9.2fx\n", "speedup", speedup);
}

// Part 1's timeline: the default stream's kernels (records 0..N-1), then the streams' (N..2N-1).
inline void publish_concurrency_timeline(const std::vector<KernelRecord>& records,
                                         const Setup& setup, int kernels) {
  cs::TimelineData timeline;
  add_spans(timeline, records,
            placements(
                0, kernels, [](int i) { return cs::format("default stream, kernel %d", i + 1); },
                "serial"));
  add_spans(
      timeline, records,
      placements(
          kernels, kernels, [](int i) { return cs::format("stream %d, kernel %d", i + 1, i + 1); },
          "concurrent"));
  cs::publish_timeline(
      timeline, *setup.common,
      cs::format("Timeline: the default stream runs them in turn; %d streams run them together",
                 kernels));
}

// Part 2's table (times[m][0]: blocking A and B, [1]: non-blocking) and the timeline of its
// first row (records 0..5: blocking A, tiny, B, then non-blocking A, tiny, B).
inline void report_legacy(bool per_thread, const double times[3][2], const double ratios[3],
                          const std::vector<KernelRecord>& records, const Setup& setup,
                          const char* build_name) {
  const char* labels[] = {per_thread ? "0 (this build: per-thread)" : "0 (this build: legacy)",
                          "cudaStreamLegacy", "cudaStreamPerThread"};
  std::printf("  %-30s %18s %22s %8s\n", "middle kernel's stream", "blocking A and B",
              "non-blocking A and B", "ratio");
  for (int m = 0; m < 3; ++m) {
    std::printf("  %-30s %15.2f ms %19.2f ms %7.2fx\n", labels[m], times[m][0], times[m][1],
                ratios[m]);
  }
  std::printf(
      "  (blocking: cudaStreamCreate; non-blocking: cudaStreamCreateWithFlags(..., "
      "cudaStreamNonBlocking))\n");
  cs::TimelineData timeline;
  add_spans(timeline, records,
            {{0, "run 1: blocking A", "kernel"},
             {1, "run 1: stream 0", "tiny kernel in stream 0"},
             {2, "run 1: blocking B", "kernel"}});
  add_spans(timeline, records,
            {{3, "run 2: non-blocking A", "kernel"},
             {4, "run 2: stream 0", "tiny kernel in stream 0"},
             {5, "run 2: non-blocking B", "kernel"}});
  cs::publish_timeline(timeline, *setup.common,
                       cs::format("Timeline: A, a tiny kernel in stream 0, B (%s)", build_name));
}

// Part 3's timeline: one row per host thread (records 0..T-1).
inline void publish_threads_timeline(const std::vector<KernelRecord>& records, const Setup& setup,
                                     int threads, const char* build_name) {
  cs::TimelineData timeline;
  add_spans(timeline, records,
            placements(
                0, threads, [](int t) { return cs::format("host thread %d", t + 1); }, "kernel"));
  cs::publish_timeline(
      timeline, *setup.common,
      cs::format("Timeline: %d host threads launching into stream 0 (%s)", threads, build_name));
}

// Part 6's table: both blocks in one stream, the seed's synchronize inside each, the fix.
inline void print_sync_table(double serial_ms, double inside_ms, double once_ms) {
  print_times(
      {{"both blocks in one stream (serial)", serial_ms},
       {format_ratio("the seed: synchronize inside each block", inside_ms, serial_ms), inside_ms},
       {format_ratio("the fix: issue both, synchronize once", once_ms, serial_ms), once_ms}});
}

// Part 4's table: each layout's time against one stream alone and against the ideal.
inline void print_connections_table(double alone_ms, double ideal_ms, const Timed& depth,
                                    double breadth_ms, const Timed& single, int streams) {
  std::printf("  %-40s %9s %9s %9s\n", "layout", "time", "/ alone", "/ ideal");
  auto row = [&](const char* label, double time_ms) {
    std::printf("  %-40s %6.2f ms %8.2fx %8.2fx\n", label, time_ms, ratio(time_ms, alone_ms),
                ratio(time_ms, ideal_ms));
  };
  row("one stream alone (A then B)", alone_ms);
  row("ideal: every stream at once", ideal_ms);
  row("depth-first   (A1 B1 A2 B2 ...)", depth.time.median);
  row("breadth-first (A1 A2 ... B1 B2 ...)", breadth_ms);
  std::printf("  (ideal = alone + %.3f ms allowed to issue the %d launches; they took %.3f ms)\n",
              ideal_ms - alone_ms, 2 * streams, depth.issue_ms);
  const double single_ideal_ms = ideal_ms / 2;  // half the kernels, half the launches
  std::printf(
      "  For comparison, kernel A alone in every stream: %.2f ms, %.2fx its ideal of %.2f ms\n",
      single.time.median, ratio(single.time.median, single_ideal_ms), single_ideal_ms);
}

// Part 4's timelines of the last depth-first (layout 2) and breadth-first (layout 3) runs, one
// row per stream; records are [layout][stream][A, B].
inline void publish_connections_timelines(const std::vector<KernelRecord>& records,
                                          const Setup& setup, int streams) {
  const int shown = std::min(streams, 32);
  for (int layout : {2, 3}) {
    std::vector<Placement> placed;
    for (int s = 0; s < shown; ++s) {
      const int slot = (layout * streams + s) * 2;
      placed.push_back({slot, cs::format("stream %d", s + 1), "A (first kernel)"});
      placed.push_back({slot + 1, cs::format("stream %d", s + 1), "B (second kernel)"});
    }
    cs::TimelineData timeline;
    add_spans(timeline, records, placed);
    cs::publish_timeline(
        timeline, *setup.common,
        cs::format("Timeline: %s issue, %d streams on %d queues%s",
                   layout == 2 ? "depth-first" : "breadth-first", streams, setup.connections(),
                   shown < streams ? cs::format(" (first %d streams)", shown).c_str() : ""));
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

// Copies the n x n product `device_product` back, prints two corners, and checks it against
// m x m computed in double precision on the CPU: every entry of a small matrix, else 4096
// entries spread at random. CHECK "<name> (K entries of <what>)".
inline void verify_square(const std::string& name, const std::string& of, const std::string& what,
                          const std::vector<float>& m, const float* device_product, int n,
                          double tolerance) {
  const size_t count = m.size();
  const size_t edge = static_cast<size_t>(n);
  std::vector<float> product(count);
  CS_CHECK(
      cudaMemcpy(product.data(), device_product, count * sizeof(float), cudaMemcpyDeviceToHost));
  std::printf("  %s: [%d, %d], [0][0] = %.4f, [%d][%d] = %.4f\n", what.c_str(), n, n, product[0],
              n - 1, n - 1, product[count - 1]);
  std::vector<size_t> sample;
  if (count <= 65536) {
    for (size_t i = 0; i < count; ++i) sample.push_back(i);
  } else {
    std::mt19937 picker(1);
    std::uniform_int_distribution<size_t> any(0, count - 1);
    sample = {0, count - 1};
    while (sample.size() < 4096) sample.push_back(any(picker));
  }
  std::vector<double> got;
  std::vector<double> want;
  for (size_t index : sample) {
    const size_t row = index / edge;
    const size_t col = index % edge;
    double sum = 0;
    for (size_t k = 0; k < edge; ++k) {
      sum += static_cast<double>(m[row * edge + k]) * m[k * edge + col];
    }
    got.push_back(product[index]);
    want.push_back(sum);
  }
  cs::verify(cs::format("%s (%zu entries of %s)", name.c_str(), sample.size(), of.c_str()), got,
             want, tolerance);
}

// Copies `device_out` back and checks it is host_in * factor, element by element.
inline void verify_scaled(const std::string& name, const float* device_out,
                          const std::vector<float>& host_in, float factor) {
  std::vector<float> got(host_in.size());
  std::vector<float> want(host_in.size());
  CS_CHECK(cudaMemcpy(got.data(), device_out, got.size() * sizeof(float), cudaMemcpyDeviceToHost));
  for (size_t i = 0; i < host_in.size(); ++i) want[i] = host_in[i] * factor;
  cs::verify(name, got, want);
}

// The setup every part reads: device, launch environment, timing (--no-timing: one run, no
// warm-up, timed checks skipped).
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

// What each part's numbers mean, and what CUDA_LAUNCH_BLOCKING=1 or one hardware queue changed.
inline void explain_concurrency(const Setup& setup) {
  std::printf(
      "  Stream 0 orders each kernel after the one before; created streams carry no order "
      "between them.\n");
  if (setup.env.launch_blocking) {
    std::printf(
        "  Under CUDA_LAUNCH_BLOCKING=1 each launch returned only when its kernel had "
        "ended, so the streams\n  ran one after another: streams overlap only when the "
        "host issues ahead of the GPU.\n");
  }
  if (setup.connections() == 1) {
    std::printf(
        "  With one hardware queue the launches reach the GPU in issue order, yet these "
        "kernels still ran\n  together: nothing orders them, so the queue starts each one "
        "as soon as the one before has started.\n");
  }
}

inline void explain_legacy(const Setup& setup) {
  std::printf(
      "  The legacy default stream waits for earlier work in blocking streams, and they "
      "wait for it.\n  Non-blocking streams and the per-thread default stream are "
      "exempt.\n");
  if (setup.env.launch_blocking) {
    std::printf(
        "  Under CUDA_LAUNCH_BLOCKING=1 A and B take turns in every row, so the ratio is "
        "blocking time / one\n  kernel's %.2f ms: the serialization is still there, the "
        "exemption cannot show.\n",
        setup.kernel_ms);
  }
}

inline void explain_threads(const Setup& setup, bool per_thread) {
  std::printf("  %s\n", per_thread ? "Per-thread build: each host thread's stream 0 is its own "
                                     "stream, so their kernels overlap."
                                   : "Legacy build: every host thread's stream 0 is the one "
                                     "legacy stream, so their kernels take turns.");
  if (setup.env.launch_blocking) {
    std::printf(
        "  CUDA_LAUNCH_BLOCKING=1 blocks only the thread that launched: kernels from "
        "several host threads\n  can still overlap, when their streams let them.\n");
  }
}

inline void print_queues(const Setup& setup, int streams) {
  const int sharing = streams_per_queue(setup, streams);
  std::printf(
      "  CUDA_DEVICE_MAX_CONNECTIONS = %d (%s): %d hardware queue%s, up to %d stream%s "
      "per queue\n",
      setup.connections(),
      setup.env.connections_from_env ? "from the environment" : "unset: the default",
      setup.connections(), setup.connections() == 1 ? "" : "s", sharing, sharing == 1 ? "" : "s");
}

inline void explain_connections(const Setup& setup, int streams) {
  std::printf(
      "  Each hardware queue runs its work in order. When streams outnumber the queues, a kernel\n"
      "  that must wait for its own stream also holds back the other streams' work queued behind\n"
      "  it. Issuing breadth-first puts independent kernels next to each other in each queue.\n"
      "  Set CUDA_DEVICE_MAX_CONNECTIONS (1..32) before the program starts to change the count.\n");
  if (setup.connections() == 1) {
    std::printf(
        "  With one hardware queue all %d streams share it: issue order is run order, and "
        "each B that waits\n  for its A blocks every launch queued after it.\n",
        streams);
  }
  if (setup.env.launch_blocking) {
    std::printf(
        "  Under CUDA_LAUNCH_BLOCKING=1 each launch waited for its kernel, so no queue "
        "ever held two kernels:\n  both orders ran one kernel at a time, with no sharing "
        "to measure.\n");
  }
}

inline void explain_seed_sync(const Setup& setup) {
  std::printf(
      "  stream.synchronize() makes the host wait, so the second stream gets its work "
      "only after the first\n  has finished: two streams, serial time. Synchronize once, "
      "after issuing both.\n");
  if (setup.env.launch_blocking) {
    std::printf(
        "  Under CUDA_LAUNCH_BLOCKING=1 every launch already waits like a synchronize, so "
        "the fix runs serial too.\n");
  }
}

// The closing table: what part 2 and part 3 measured, with the bars that classify it.
struct Summary {
  struct Row {
    double measured = -1;  // < 0: the part did not run
    double bar = 0;        // legacy: at least this serializes; threads: at most this is shared
    double other = 0;      // legacy: at most this lets A and B overlap; threads: the thread count
  };
  Row stream0;  // part 2: time with a stream-0 kernel between blocking A and B, ratio
  Row threads;  // part 3: speedup of host threads launching into stream 0
};

inline void print_summary(const Summary& s, const char* build_name) {
  if (s.stream0.measured < 0 && s.threads.measured < 0) return;
  std::printf("\n== What stream 0 means in this build (%s)\n", build_name);
  std::printf("  %-56s %9s   %s\n", "experiment", "measured", "so stream 0");
  if (s.stream0.measured >= 0) {
    const double r = s.stream0.measured;
    std::printf("  %-56s %8.2fx   %s\n", "time with a stream-0 kernel between blocking A and B", r,
                r >= s.stream0.bar     ? "serializes A and B"
                : r <= s.stream0.other ? "lets A and B overlap"
                                       : "partly serializes A and B");
  }
  if (s.threads.measured >= 0) {
    std::printf("  %-56s %8.2fx   %s\n",
                cs::format("speedup of %d host threads launching into stream 0",
                           static_cast<int>(s.threads.other))
                    .c_str(),
                s.threads.measured,
                s.threads.measured <= s.threads.bar ? "is one stream shared by all threads"
                                                    : "is a separate stream in each thread");
  }
}

}  // namespace lab
