// Chapter 02: the default stream and created streams.
//
// What it teaches
//   "The default stream executes kernels serially; streams let kernels run at the same time."
//   This program measures that sentence and the rules behind it, in five parts:
//   concurrency  The same N single-block kernels issued into the default stream run one after
//                another; issued into N created streams they run together (speedup close to N).
//   legacy       The legacy default stream synchronizes with every blocking stream: one tiny
//                kernel in stream 0 between kernels in two cudaStreamCreate() streams serializes
//                them. Streams made with cudaStreamNonBlocking are not held up.
//   threads      Host threads that each launch into stream 0: in the legacy build they all share
//                one stream and take turns; built with --default-stream per-thread (the
//                02_default_vs_custom_streams_per_thread executable, from this same source) each
//                thread has its own default stream and their kernels overlap.
//   connections  Streams reach the GPU through CUDA_DEVICE_MAX_CONNECTIONS hardware queues (8
//                unless the environment says otherwise). 32 streams on 8 queues share them, and a
//                kernel that waits for its own stream blocks the kernels of the other streams
//                queued behind it (false dependencies). Depth-first and breadth-first issue order.
//   seed         The seeds' PyTorch examples in CUDA C++: torch.mm(A, A) and torch.mm(B, B) on two
//                streams, and t1 * 2 / t2 * 3 on two streams with the seed's mistake of
//                synchronizing inside each stream's block, measured against synchronizing once.
//
// Build and run
//   cmake --preset default && cmake --build --preset default
//   build/bin/02_default_vs_custom_streams                  (stream 0 = the legacy default stream)
//   build/bin/02_default_vs_custom_streams_per_thread       (stream 0 = each thread's own stream)
//   CUDA_DEVICE_MAX_CONNECTIONS=32 build/bin/02_default_vs_custom_streams --part connections
//   Flags: --part, --kernels, --kernel-ms, --threads, --streams, --matrix, --repeats, --trace FILE,
//   --svg FILE, --no-timing (see --help).
//
// What it prints
//   For each part a small table of median times (after a warm-up), the ratio that is the lesson,
//   a CHECK line with its bar, and an ASCII timeline (one row per stream, or per kernel where
//   one stream runs several). The kernels time themselves with %globaltimer, so drawing the
//   timeline adds nothing to the streams. At the end, a table of what stream 0 means in this
//   build; run both executables to see both columns.

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "cuda_streams.hpp"
#include "cuda_streams/device_clock.cuh"

#ifdef CUDA_API_PER_THREAD_DEFAULT_STREAM
constexpr bool kPerThreadBuild = true;
constexpr const char* kProgram = "02_default_vs_custom_streams_per_thread";
constexpr const char* kBuildName = "--default-stream per-thread";
#else
constexpr bool kPerThreadBuild = false;
constexpr const char* kProgram = "02_default_vs_custom_streams";
constexpr const char* kBuildName = "--default-stream legacy";
#endif

// Every bar a measurement must clear, in one place. The functions below adapt them to what the
// device reports and to the number of hardware queues the environment asked for.
namespace bars {
constexpr int kDefaultConnections = 8;     // CUDA_DEVICE_MAX_CONNECTIONS when it is not set
constexpr int kMaxConnections = 32;        // the largest value the driver accepts
constexpr double kOfIdeal = 0.75;          // a speedup must reach 75% of the ideal one
constexpr double kSerialized = 1.6;        // blocking / non-blocking time when stream 0 serializes
                                           // (ideal 2: the two kernels take turns)
constexpr double kNotSerialized = 1.25;    // ... when it does not (ideal 1)
constexpr double kThreadsShareOne = 1.25;  // legacy build: speedup of T threads at most (ideal 1)
constexpr double kWithinIdeal = 1.2;       // enough queues: time at most 1.2 x the ideal
constexpr double kOfPredictedLoss = 0.7;   // too few queues: at least 70% of the predicted loss
constexpr double kBreadthVsDepth = 1.1;    // breadth-first at most 10% slower than depth-first
constexpr double kSyncInsideMin = 0.9;     // seed's mistake: at least 0.9 x the serial time
constexpr double kSyncOnceMax = 0.6;       // one sync at the end: at most 0.6 x serial (ideal 0.5)
constexpr double kTwoStreamGemmMax = 1.2;  // two GEMMs on two streams: at most 1.2 x one stream
constexpr double kGemmTolerance = 1e-4;    // relative, float sums of 1000 products vs double

// The number of turns `count` independent one-kernel streams may have to take: one when every
// stream has a hardware queue of its own, ceil(count / connections) when queues are shared,
// `count` when the device runs one kernel at a time.
inline int turns(int count, int connections, bool concurrent_kernels) {
  if (!concurrent_kernels) return count;
  return (count + connections - 1) / connections;
}

// The speedup of `count` kernels of `kernel_ms` each over running them one after another, when
// issuing the launches takes `issue_ms` and they run in `turns` turns.
inline double ideal_speedup(int count, double kernel_ms, int turns_needed, double issue_ms) {
  return count * kernel_ms / (turns_needed * kernel_ms + issue_ms);
}
}  // namespace bars

// ---------------------------------------------------------------------------------------------
// Kernels

constexpr int kSpinThreads = 32;  // one warp: each spin kernel occupies one slot on one SM
constexpr int kTile = 16;         // the SGEMM's tile edge

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

using cs::globaltimer_ns;  // the GPU's nanosecond clock, from cuda_streams/device_clock.cuh

// Waits on the global timer, so a kernel lasts the same time on any clock speed and the
// launch cost (a few microseconds) stays small beside it. The clock64() bound only ends the wait
// if the global timer stood still; the record then shows a spin that was too short.
__global__ void spin_kernel(SpinTask task) {
  const unsigned long long start = globaltimer_ns();
  const long long first_cycle = clock64();
  const long long cycle_bound = 16 * static_cast<long long>(task.duration_ns) + 100000;
  unsigned long long now = start;
  while (now - start < task.duration_ns && clock64() - first_cycle < cycle_bound) {
    now = globaltimer_ns();
  }
  if (threadIdx.x == 0) {
    task.record->start_ns = start;
    task.record->end_ns = now;
    atomicAdd(&task.record->runs, 1u);
  }
}

// C = A x B for n x n row-major matrices: each block computes one kTile x kTile tile of C,
// staging tiles of A and B in shared memory.
__global__ void matmul_tiled(const float* a, const float* b, float* c, int n) {
  __shared__ float a_tile[kTile][kTile];
  __shared__ float b_tile[kTile][kTile];
  const int row = blockIdx.y * kTile + threadIdx.y;
  const int col = blockIdx.x * kTile + threadIdx.x;
  float sum = 0.0f;
  for (int base = 0; base < n; base += kTile) {
    const int a_col = base + threadIdx.x;
    const int b_row = base + threadIdx.y;
    a_tile[threadIdx.y][threadIdx.x] =
        (row < n && a_col < n) ? a[static_cast<size_t>(row) * n + a_col] : 0.0f;
    b_tile[threadIdx.y][threadIdx.x] =
        (b_row < n && col < n) ? b[static_cast<size_t>(b_row) * n + col] : 0.0f;
    __syncthreads();
    for (int k = 0; k < kTile; ++k) sum += a_tile[threadIdx.y][k] * b_tile[k][threadIdx.x];
    __syncthreads();
  }
  if (row < n && col < n) c[static_cast<size_t>(row) * n + col] = sum;
}

// out = in * factor, element by element (PyTorch's t1 * 2).
__global__ void scale_kernel(const float* in, float* out, float factor, size_t count) {
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += stride) {
    out[i] = in[i] * factor;
  }
}

// ---------------------------------------------------------------------------------------------
// Host helpers

__attribute__((format(printf, 1, 2))) std::string sformat(const char* pattern, ...) {
  char text[512];
  va_list args;
  va_start(args, pattern);
  std::vsnprintf(text, sizeof text, pattern, args);
  va_end(args);
  return text;
}

unsigned long long ms_to_ns(double ms) {
  return static_cast<unsigned long long>(ms * 1e6 + 0.5);
}

// The records of a part's spin kernels on the device, and the host's own log of what it launched,
// so that the part can check that every kernel ran exactly as often as it was launched.
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

  // Checks that each kernel ran once per launch and spun at least as long as it was asked to.
  void verify(const std::string& name) const {
    const std::vector<KernelRecord> records = fetch();
    std::vector<unsigned int> runs;
    int short_spins = 0;
    for (size_t i = 0; i < records.size(); ++i) {
      runs.push_back(records[i].runs);
      if (launches_[i] > 0 && records[i].end_ns - records[i].start_ns < requested_ns_[i]) {
        ++short_spins;
      }
    }
    cs::verify(name + "_runs", runs, launches_);
    cs::check_that(name + "_spins", short_spins == 0,
                   sformat("%d of %zu kernels ended before their time on the global timer",
                           short_spins, records.size()));
  }

 private:
  size_t bytes() const { return launches_.size() * sizeof(KernelRecord); }
  KernelRecord* records_ = nullptr;
  std::vector<unsigned int> launches_;
  std::vector<unsigned long long> requested_ns_;
};

// One kernel to draw: its record, the timeline row and the kind of span (the kind's first letter
// is its glyph in the ASCII chart).
struct Placement {
  int slot;
  std::string row;
  std::string kind;
};

// Adds the placed kernels to `data`, in milliseconds since the earliest start among them.
void add_spans(cs::TimelineData& data, const std::vector<KernelRecord>& records,
               const std::vector<Placement>& placements) {
  unsigned long long origin = ~0ull;
  for (const Placement& p : placements) {
    origin = std::min(origin, records[static_cast<size_t>(p.slot)].start_ns);
  }
  for (const Placement& p : placements) {
    auto found = std::find(data.rows.begin(), data.rows.end(), p.row);
    const int row = static_cast<int>(found - data.rows.begin());
    if (found == data.rows.end()) data.rows.push_back(p.row);
    const KernelRecord& r = records[static_cast<size_t>(p.slot)];
    data.spans.push_back(
        {row, p.kind, "", (r.start_ns - origin) * 1e-6, (r.end_ns - origin) * 1e-6});
  }
}

// How the parts time things.
struct Timing {
  bool enabled = true;  // false with --no-timing: run once, verify, skip the timing checks
  int warmup = 1;
  int repeats = 5;
};

// Times `work` run by `threads` host threads at once (each thread calls work(index) once), from
// the moment they are released until the last one has synchronized its default stream.
template <class Work>
cs::Stats time_host_threads_ms(int device, int threads, const Timing& timing, Work work) {
  std::vector<double> samples;
  for (int round = 0; round < timing.warmup + timing.repeats; ++round) {
    std::atomic<int> ready{0};
    std::atomic<int> done{0};
    std::atomic<bool> go{false};
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t) {
      pool.emplace_back([&, t] {
        // The current device belongs to the host thread: each new thread must choose it.
        CS_CHECK(cudaSetDevice(device));
        // Touches this thread's stream 0 (creating it in the per-thread build) before the clock
        // runs.
        CS_CHECK(cudaStreamSynchronize(0));
        ready.fetch_add(1);
        while (!go.load()) std::this_thread::yield();
        work(t);
        CS_CHECK(cudaStreamSynchronize(0));
        done.fetch_add(1);
      });
    }
    while (ready.load() < threads) std::this_thread::yield();
    const double begin = cs::host_now_ms();
    go.store(true);
    while (done.load() < threads) std::this_thread::yield();
    const double elapsed = cs::host_now_ms() - begin;
    for (std::thread& thread : pool) thread.join();
    if (round >= timing.warmup) samples.push_back(elapsed);
  }
  return cs::summarize(samples);
}

// What every part needs to know.
struct Setup {
  int device = 0;
  cudaDeviceProp prop{};
  int connections = bars::kDefaultConnections;
  double kernel_ms = 2.0;
  Timing timing;
  const cs::CommonOptions* common = nullptr;
  bool concurrent_kernels() const { return prop.concurrentKernels != 0; }
};

// The two numbers the summary table shows; negative when the part did not run.
struct Summary {
  double stream0_ratio = -1;
  double threads_speedup = -1;
  int threads = 0;
};

// ---------------------------------------------------------------------------------------------
// Part 1: the same kernels in the default stream and in created streams

void part_concurrency(const Setup& setup, int kernels) {
  const double ms = setup.kernel_ms;
  const unsigned long long work_ns = ms_to_ns(ms);
  std::printf("\n== Part 1: %d kernels of %.2f ms (1 block each): default stream vs %d streams\n",
              kernels, ms, kernels);
  std::vector<cudaStream_t> streams(static_cast<size_t>(kernels));
  for (cudaStream_t& stream : streams) CS_CHECK(cudaStreamCreate(&stream));
  KernelLog log(2 * kernels);

  // Stream 0: each kernel waits for the one before it.
  const cs::Stats serial = cs::time_device_ms(setup.timing.warmup, setup.timing.repeats, [&] {
    for (int i = 0; i < kernels; ++i) {
      spin_kernel<<<1, kSpinThreads, 0, 0>>>(log.task(i, work_ns));
      CS_CHECK_LAUNCH();
    }
  });
  // One created stream per kernel: nothing orders them, so they can share the GPU.
  std::vector<double> issue_samples;
  const cs::Stats concurrent = cs::time_device_ms(setup.timing.warmup, setup.timing.repeats, [&] {
    const double begin = cs::host_now_ms();
    for (int i = 0; i < kernels; ++i) {
      spin_kernel<<<1, kSpinThreads, 0, streams[static_cast<size_t>(i)]>>>(
          log.task(kernels + i, work_ns));
      CS_CHECK_LAUNCH();
    }
    issue_samples.push_back(cs::host_now_ms() - begin);
  });
  const double issue_ms = cs::median(issue_samples);
  const double speedup = serial.median / concurrent.median;

  std::printf("  %-40s %9.2f ms\n", "default stream (one after another)", serial.median);
  std::printf("  %-40s %9.2f ms   (launches issued in %.3f ms)\n",
              sformat("%d created streams", kernels).c_str(), concurrent.median, issue_ms);
  std::printf("  %-40s %9.2fx\n", "speedup", speedup);
  log.verify("concurrency_kernel");

  const std::vector<KernelRecord> records = log.fetch();
  cs::TimelineData timeline;
  std::vector<Placement> serial_spans;
  std::vector<Placement> concurrent_spans;
  for (int i = 0; i < kernels; ++i) {
    serial_spans.push_back({i, sformat("default stream, kernel %d", i + 1), "serial"});
  }
  for (int i = 0; i < kernels; ++i) {
    concurrent_spans.push_back(
        {kernels + i, sformat("stream %d, kernel %d", i + 1, i + 1), "concurrent"});
  }
  add_spans(timeline, records, serial_spans);
  add_spans(timeline, records, concurrent_spans);
  cs::publish_timeline(
      timeline, *setup.common,
      sformat("Timeline: the default stream runs them in turn; %d streams run them together",
              kernels));

  if (!setup.timing.enabled) {
    cs::check_skipped("concurrency_speedup", "--no-timing");
  } else {
    const int turns = bars::turns(kernels, setup.connections, setup.concurrent_kernels());
    const double ideal = bars::ideal_speedup(kernels, ms, turns, issue_ms);
    const std::string why =
        setup.concurrent_kernels()
            ? sformat("%.2f x ideal %.2fx: %d kernels in %d turn%s on %d queues, %.3f ms to issue",
                      bars::kOfIdeal, ideal, kernels, turns, turns == 1 ? "" : "s",
                      setup.connections, issue_ms)
            : sformat("%.2f x ideal %.2fx: concurrentKernels = 0, the device runs one at a time",
                      bars::kOfIdeal, ideal);
    cs::check("concurrency_speedup", speedup, cs::Compare::at_least, bars::kOfIdeal * ideal, "x",
              why);
  }
  std::printf(
      "  The default stream orders every kernel after the one before it. Created streams carry no\n"
      "  order between each other, so %d one-block kernels occupy %d SMs at the same time.\n",
      kernels, kernels);
  for (cudaStream_t stream : streams) CS_CHECK(cudaStreamDestroy(stream));
}

// ---------------------------------------------------------------------------------------------
// Part 2: the legacy default stream's implicit synchronization

void part_legacy(const Setup& setup, Summary& summary) {
  const double ms = setup.kernel_ms;
  const unsigned long long work_ns = ms_to_ns(ms);
  std::printf(
      "\n== Part 2: kernel (%.2f ms) in stream A, tiny kernel in the middle stream, kernel in "
      "stream B\n",
      ms);

  // The middle kernel's stream: 0 as this build reads it, then both explicit handles, which mean
  // the same thing in either build.
  struct Middle {
    const char* label;
    cudaStream_t stream;
  };
  const Middle middles[] = {
      {kPerThreadBuild ? "0 (this build: per-thread)" : "0 (this build: legacy)", 0},
      {"cudaStreamLegacy", cudaStreamLegacy},
      {"cudaStreamPerThread", cudaStreamPerThread},
  };
  constexpr int kMiddles = 3;

  cudaStream_t blocking[2];
  cudaStream_t non_blocking[2];
  for (cudaStream_t& stream : blocking) CS_CHECK(cudaStreamCreate(&stream));
  for (cudaStream_t& stream : non_blocking) {
    CS_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  }

  KernelLog log(kMiddles * 2 * 3);
  double times[kMiddles][2];
  for (int m = 0; m < kMiddles; ++m) {
    for (int kind = 0; kind < 2; ++kind) {
      cudaStream_t* pair = kind == 0 ? blocking : non_blocking;
      const int slot = (m * 2 + kind) * 3;
      times[m][kind] =
          cs::time_device_ms(setup.timing.warmup, setup.timing.repeats, [&] {
            spin_kernel<<<1, kSpinThreads, 0, pair[0]>>>(log.task(slot + 0, work_ns));
            CS_CHECK_LAUNCH();
            spin_kernel<<<1, kSpinThreads, 0, middles[m].stream>>>(log.task(slot + 1, 0));
            CS_CHECK_LAUNCH();
            spin_kernel<<<1, kSpinThreads, 0, pair[1]>>>(log.task(slot + 2, work_ns));
            CS_CHECK_LAUNCH();
          }).median;
    }
  }

  std::printf("  %-30s %18s %22s %8s\n", "middle kernel's stream", "blocking A and B",
              "non-blocking A and B", "ratio");
  double ratios[kMiddles];
  for (int m = 0; m < kMiddles; ++m) {
    ratios[m] = times[m][0] / times[m][1];
    std::printf("  %-30s %15.2f ms %19.2f ms %7.2fx\n", middles[m].label, times[m][0], times[m][1],
                ratios[m]);
  }
  std::printf(
      "  (blocking: cudaStreamCreate; non-blocking: cudaStreamCreateWithFlags(..., "
      "cudaStreamNonBlocking))\n");
  log.verify("legacy_kernel");

  const std::vector<KernelRecord> records = log.fetch();
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
                       sformat("Timeline: A, a tiny kernel in stream 0, B (%s)", kBuildName));

  summary.stream0_ratio = ratios[0];
  const char* stream0_check =
      kPerThreadBuild ? "stream0_does_not_serialize" : "stream0_serializes_blocking_streams";
  if (!setup.timing.enabled) {
    for (const char* name :
         {stream0_check, "cudaStreamLegacy_serializes", "cudaStreamPerThread_does_not_serialize"}) {
      cs::check_skipped(name, "--no-timing");
    }
  } else if (!setup.concurrent_kernels()) {
    for (const char* name :
         {stream0_check, "cudaStreamLegacy_serializes", "cudaStreamPerThread_does_not_serialize"}) {
      cs::check_skipped(name, "concurrentKernels = 0: every kernel already runs alone");
    }
  } else {
    const std::string serial_why = "ideal 2x: B waits for the tiny kernel, which waits for A";
    const std::string free_why = "ideal 1x: A and B overlap as if stream 0 were not there";
    if (kPerThreadBuild) {
      cs::check(stream0_check, ratios[0], cs::Compare::at_most, bars::kNotSerialized, "x",
                "per-thread stream 0, " + free_why);
    } else {
      cs::check(stream0_check, ratios[0], cs::Compare::at_least, bars::kSerialized, "x",
                "legacy stream 0, " + serial_why);
    }
    cs::check("cudaStreamLegacy_serializes", ratios[1], cs::Compare::at_least, bars::kSerialized,
              "x", serial_why);
    cs::check("cudaStreamPerThread_does_not_serialize", ratios[2], cs::Compare::at_most,
              bars::kNotSerialized, "x", free_why);
  }
  std::printf(
      "  The legacy default stream waits for all earlier work in blocking streams, and blocking\n"
      "  streams wait for it, so one tiny launch into it joins A and B into a chain. Non-blocking\n"
      "  streams and the per-thread default stream are exempt from that rule.\n");
  for (cudaStream_t stream : blocking) CS_CHECK(cudaStreamDestroy(stream));
  for (cudaStream_t stream : non_blocking) CS_CHECK(cudaStreamDestroy(stream));
}

// ---------------------------------------------------------------------------------------------
// Part 3: host threads, each launching into its default stream

void part_threads(const Setup& setup, int threads, Summary& summary) {
  const double ms = setup.kernel_ms;
  const unsigned long long work_ns = ms_to_ns(ms);
  std::printf("\n== Part 3: %d host threads, each launching one %.2f ms kernel into stream 0\n",
              threads, ms);
  KernelLog log(2 * threads);

  // The reference: one thread launches all the kernels into its stream 0.
  const cs::Stats one_thread = cs::time_device_ms(setup.timing.warmup, setup.timing.repeats, [&] {
    for (int t = 0; t < threads; ++t) {
      spin_kernel<<<1, kSpinThreads, 0, 0>>>(log.task(threads + t, work_ns));
      CS_CHECK_LAUNCH();
    }
  });
  // Each std::thread launches into "stream 0", which is its own stream only in the per-thread
  // build.
  const cs::Stats many_threads =
      time_host_threads_ms(setup.device, threads, setup.timing, [&](int t) {
        spin_kernel<<<1, kSpinThreads, 0, 0>>>(log.task(t, work_ns));
        CS_CHECK_LAUNCH();
      });
  const double speedup = one_thread.median / many_threads.median;
  std::printf("  %-48s %9.2f ms\n", sformat("1 thread, %d kernels into stream 0", threads).c_str(),
              one_thread.median);
  std::printf("  %-48s %9.2f ms\n",
              sformat("%d threads, 1 kernel each into stream 0", threads).c_str(),
              many_threads.median);
  std::printf("  %-48s %9.2fx\n", "speedup", speedup);
  log.verify("threads_kernel");

  const std::vector<KernelRecord> records = log.fetch();
  cs::TimelineData timeline;
  std::vector<Placement> spans;
  for (int t = 0; t < threads; ++t)
    spans.push_back({t, sformat("host thread %d", t + 1), "kernel"});
  add_spans(timeline, records, spans);
  cs::publish_timeline(
      timeline, *setup.common,
      sformat("Timeline: %d host threads launching into stream 0 (%s)", threads, kBuildName));

  summary.threads_speedup = speedup;
  summary.threads = threads;
  const char* name =
      kPerThreadBuild ? "threads_run_concurrently" : "threads_share_the_legacy_stream";
  if (!setup.timing.enabled) {
    cs::check_skipped(name, "--no-timing");
  } else if (kPerThreadBuild) {
    const int turns = bars::turns(threads, setup.connections, setup.concurrent_kernels());
    const double ideal = bars::ideal_speedup(threads, ms, turns, 0.0);
    cs::check(
        name, speedup, cs::Compare::at_least, bars::kOfIdeal * ideal, "x",
        sformat("%.2f x ideal %.2fx: each thread's stream 0 is its own stream%s", bars::kOfIdeal,
                ideal, setup.concurrent_kernels() ? "" : "; concurrentKernels = 0"));
  } else {
    cs::check(name, speedup, cs::Compare::at_most, bars::kThreadsShareOne, "x",
              "ideal 1x: every thread's stream 0 is the one legacy stream");
  }
  std::printf(
      "  %s\n",
      kPerThreadBuild
          ? "Built with --default-stream per-thread, stream 0 is a different stream in each host\n"
            "  thread, so the threads' kernels overlap with no stream created at all."
          : "In the legacy build every host thread's stream 0 is the same legacy default stream,\n"
            "  so the threads' kernels queue up behind each other.");
}

// ---------------------------------------------------------------------------------------------
// Part 4: more streams than hardware queues

void part_connections(const Setup& setup, int stream_count, bool from_environment) {
  const double ms = setup.kernel_ms;
  const unsigned long long work_ns = ms_to_ns(ms);
  const int connections = setup.connections;
  const int sharing = (stream_count + connections - 1) / connections;
  std::printf("\n== Part 4: %d streams, each with kernels A then B (%.2f ms each, 1 block)\n",
              stream_count, ms);
  std::printf(
      "  CUDA_DEVICE_MAX_CONNECTIONS = %d (%s): %d hardware queues, up to %d stream%s "
      "per queue\n",
      connections, from_environment ? "from the environment" : "unset: the default", connections,
      sharing, sharing == 1 ? "" : "s");

  // Created in one go, so that the driver deals them out over the queues in turn.
  std::vector<cudaStream_t> streams(static_cast<size_t>(stream_count));
  for (cudaStream_t& stream : streams) {
    CS_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  }
  const int per_layout = 2 * stream_count;
  enum Layout { kAlone = 0, kSingle = 1, kDepth = 2, kBreadth = 3, kLayouts = 4 };
  KernelLog log(kLayouts * per_layout);
  auto slot_a = [&](Layout layout, int s) { return layout * per_layout + 2 * s; };
  auto slot_b = [&](Layout layout, int s) { return layout * per_layout + 2 * s + 1; };
  const Timing& timing = setup.timing;

  // One stream's work alone: what every stream would take if none had to wait for another.
  const cs::Stats alone = cs::time_device_ms(timing.warmup, timing.repeats, [&] {
    spin_kernel<<<1, kSpinThreads, 0, streams[0]>>>(log.task(slot_a(kAlone, 0), work_ns));
    CS_CHECK_LAUNCH();
    spin_kernel<<<1, kSpinThreads, 0, streams[0]>>>(log.task(slot_b(kAlone, 0), work_ns));
    CS_CHECK_LAUNCH();
  });
  // For comparison: kernel A alone in every stream (no second kernel waiting in any queue).
  std::vector<double> single_issue;
  const cs::Stats single = cs::time_device_ms(timing.warmup, timing.repeats, [&] {
    const double begin = cs::host_now_ms();
    for (int s = 0; s < stream_count; ++s) {
      spin_kernel<<<1, kSpinThreads, 0, streams[static_cast<size_t>(s)]>>>(
          log.task(slot_a(kSingle, s), work_ns));
      CS_CHECK_LAUNCH();
    }
    single_issue.push_back(cs::host_now_ms() - begin);
  });
  // Depth-first: all of stream 1's work, then all of stream 2's, ...
  std::vector<double> issue_samples;
  const cs::Stats depth = cs::time_device_ms(timing.warmup, timing.repeats, [&] {
    const double begin = cs::host_now_ms();
    for (int s = 0; s < stream_count; ++s) {
      cudaStream_t stream = streams[static_cast<size_t>(s)];
      spin_kernel<<<1, kSpinThreads, 0, stream>>>(log.task(slot_a(kDepth, s), work_ns));
      CS_CHECK_LAUNCH();
      spin_kernel<<<1, kSpinThreads, 0, stream>>>(log.task(slot_b(kDepth, s), work_ns));
      CS_CHECK_LAUNCH();
    }
    issue_samples.push_back(cs::host_now_ms() - begin);
  });
  // Breadth-first: kernel A of every stream, then kernel B of every stream.
  const cs::Stats breadth = cs::time_device_ms(timing.warmup, timing.repeats, [&] {
    for (int s = 0; s < stream_count; ++s) {
      spin_kernel<<<1, kSpinThreads, 0, streams[static_cast<size_t>(s)]>>>(
          log.task(slot_a(kBreadth, s), work_ns));
      CS_CHECK_LAUNCH();
    }
    for (int s = 0; s < stream_count; ++s) {
      spin_kernel<<<1, kSpinThreads, 0, streams[static_cast<size_t>(s)]>>>(
          log.task(slot_b(kBreadth, s), work_ns));
      CS_CHECK_LAUNCH();
    }
  });
  const double issue_ms = cs::median(issue_samples);
  const double ideal_ms = alone.median + issue_ms;
  const double single_ideal_ms = alone.median / 2 + cs::median(single_issue);

  std::printf("  %-40s %9s %9s %9s\n", "layout", "time", "/ alone", "/ ideal");
  auto row = [&](const char* label, double time_ms) {
    std::printf("  %-40s %6.2f ms %8.2fx %8.2fx\n", label, time_ms, time_ms / alone.median,
                time_ms / ideal_ms);
  };
  row("one stream alone (A then B)", alone.median);
  row("ideal: every stream at once", ideal_ms);
  row("depth-first   (A1 B1 A2 B2 ...)", depth.median);
  row("breadth-first (A1 A2 ... B1 B2 ...)", breadth.median);
  std::printf("  (ideal = alone + %.3f ms to issue the %d launches)\n", issue_ms, 2 * stream_count);
  std::printf(
      "  For comparison, kernel A alone in every stream: %.2f ms, %.2fx its ideal of %.2f ms\n",
      single.median, single.median / single_ideal_ms, single_ideal_ms);
  log.verify("connections_kernel");

  // Timelines of the last depth-first and breadth-first runs, one row per stream.
  const std::vector<KernelRecord> records = log.fetch();
  const int shown = std::min(stream_count, 32);
  for (Layout layout : {kDepth, kBreadth}) {
    cs::TimelineData timeline;
    std::vector<Placement> spans;
    for (int s = 0; s < shown; ++s) {
      spans.push_back({slot_a(layout, s), sformat("stream %d", s + 1), "A (first kernel)"});
      spans.push_back({slot_b(layout, s), sformat("stream %d", s + 1), "B (second kernel)"});
    }
    add_spans(timeline, records, spans);
    cs::publish_timeline(
        timeline, *setup.common,
        sformat("Timeline: %s issue, %d streams on %d queues%s",
                layout == kDepth ? "depth-first" : "breadth-first", stream_count, connections,
                shown < stream_count ? sformat(" (first %d streams)", shown).c_str() : ""));
  }

  const double depth_ratio = depth.median / ideal_ms;
  const double breadth_ratio = breadth.median / ideal_ms;
  if (!timing.enabled) {
    cs::check_skipped(sharing > 1 ? "false_dependencies" : "depth_first_within_ideal",
                      "--no-timing");
  } else if (!setup.concurrent_kernels()) {
    cs::check_skipped("connections", "concurrentKernels = 0: streams cannot overlap at all");
  } else if (sharing == 1) {
    const std::string why =
        sformat("every stream has a queue of its own: %d >= %d streams", connections, stream_count);
    cs::check("depth_first_within_ideal", depth_ratio, cs::Compare::at_most, bars::kWithinIdeal,
              "x", why);
    cs::check("breadth_first_within_ideal", breadth_ratio, cs::Compare::at_most, bars::kWithinIdeal,
              "x", why);
  } else {
    // A queue holding k streams depth-first runs A1, then B1 beside A2, ..., then Bk alone:
    // at least k + 1 kernel times where one stream alone needs 2.
    const double predicted = (sharing + 1) / 2.0;
    cs::check("false_dependencies", depth.median / alone.median, cs::Compare::at_least,
              bars::kOfPredictedLoss * predicted, "x",
              sformat("depth-first / one stream alone, %.1f x predicted %.1fx: %d streams per "
                      "queue, each B holds its queue until its A ends",
                      bars::kOfPredictedLoss, predicted, sharing));
    cs::check("breadth_first_no_slower", breadth.median / depth.median, cs::Compare::at_most,
              bars::kBreadthVsDepth, "x", "breadth-first time / depth-first time");
  }
  std::printf(
      "  Each hardware queue runs its work in order. When streams outnumber the queues, a kernel\n"
      "  that must wait for its own stream also holds back the other streams' work queued behind\n"
      "  it. Issuing breadth-first puts independent kernels next to each other in each queue.\n"
      "  Set CUDA_DEVICE_MAX_CONNECTIONS (1..32) before the program starts to change the count.\n");
  for (cudaStream_t stream : streams) CS_CHECK(cudaStreamDestroy(stream));
}

// ---------------------------------------------------------------------------------------------
// Part 5: the seeds' PyTorch examples in CUDA C++

void part_seed(const Setup& setup, int n) {
  const size_t count = static_cast<size_t>(n) * n;
  const size_t bytes = count * sizeof(float);
  std::printf("\n== Part 5: the seeds' examples: torch.mm on two streams, t1 * 2 / t2 * 3\n");

  // PyTorch creates its streams non-blocking, so stream 0 never stands between them.
  cudaStream_t s1;
  cudaStream_t s2;
  CS_CHECK(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
  CS_CHECK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));

  // A = torch.rand(n, n), B = torch.rand(n, n): uniform in [0, 1), fixed seed.
  std::mt19937 generator(0);
  std::uniform_real_distribution<float> uniform(0.0f, 1.0f);
  std::vector<float> host_a(count);
  std::vector<float> host_b(count);
  for (float& x : host_a) x = uniform(generator);
  for (float& x : host_b) x = uniform(generator);
  float* a;
  float* b;
  float* c;
  float* d;
  CS_CHECK(cudaMalloc(&a, bytes));
  CS_CHECK(cudaMalloc(&b, bytes));
  CS_CHECK(cudaMalloc(&c, bytes));
  CS_CHECK(cudaMalloc(&d, bytes));
  CS_CHECK(cudaMemcpy(a, host_a.data(), bytes, cudaMemcpyHostToDevice));
  CS_CHECK(cudaMemcpy(b, host_b.data(), bytes, cudaMemcpyHostToDevice));
  CS_CHECK(cudaDeviceSynchronize());  // torch.cuda.synchronize(): the inputs are ready

  const dim3 block(kTile, kTile);
  const dim3 grid((n + kTile - 1) / kTile, (n + kTile - 1) / kTile);
  // with torch.cuda.stream(s1): C = torch.mm(A, A)
  matmul_tiled<<<grid, block, 0, s1>>>(a, a, c, n);
  CS_CHECK_LAUNCH();
  // with torch.cuda.stream(s2): D = torch.mm(B, B)
  matmul_tiled<<<grid, block, 0, s2>>>(b, b, d, n);
  CS_CHECK_LAUNCH();
  CS_CHECK(cudaDeviceSynchronize());  // wait for C and D

  std::vector<float> host_c(count);
  std::vector<float> host_d(count);
  CS_CHECK(cudaMemcpy(host_c.data(), c, bytes, cudaMemcpyDeviceToHost));
  CS_CHECK(cudaMemcpy(host_d.data(), d, bytes, cudaMemcpyDeviceToHost));
  const size_t last = count - 1;
  std::printf("  C = mm(A, A) on s1: [%d, %d], C[0][0] = %.4f, C[%d][%d] = %.4f\n", n, n, host_c[0],
              n - 1, n - 1, host_c[last]);
  std::printf("  D = mm(B, B) on s2: [%d, %d], D[0][0] = %.4f, D[%d][%d] = %.4f\n", n, n, host_d[0],
              n - 1, n - 1, host_d[last]);

  // CPU reference in double: every entry of a small matrix, else 4096 entries spread at random.
  std::vector<size_t> sample;
  if (count <= 65536) {
    for (size_t i = 0; i < count; ++i) sample.push_back(i);
  } else {
    std::mt19937 picker(1);
    std::uniform_int_distribution<size_t> any(0, last);
    sample = {0, last};
    while (sample.size() < 4096) sample.push_back(any(picker));
  }
  auto reference = [&](const std::vector<float>& m, size_t index) {
    const size_t row = index / static_cast<size_t>(n);
    const size_t col = index % static_cast<size_t>(n);
    double sum = 0;
    for (size_t k = 0; k < static_cast<size_t>(n); ++k) {
      sum += static_cast<double>(m[row * n + k]) * m[k * n + col];
    }
    return sum;
  };
  std::vector<double> got_c;
  std::vector<double> want_c;
  std::vector<double> got_d;
  std::vector<double> want_d;
  for (size_t index : sample) {
    got_c.push_back(host_c[index]);
    want_c.push_back(reference(host_a, index));
    got_d.push_back(host_d[index]);
    want_d.push_back(reference(host_b, index));
  }
  cs::verify(sformat("seed_mm_C (%zu entries of A x A)", sample.size()), got_c, want_c,
             bars::kGemmTolerance);
  cs::verify(sformat("seed_mm_D (%zu entries of B x B)", sample.size()), got_d, want_d,
             bars::kGemmTolerance);

  const Timing& timing = setup.timing;
  const cs::Stats mm_one = cs::time_device_ms(timing.warmup, timing.repeats, [&] {
    matmul_tiled<<<grid, block, 0, s1>>>(a, a, c, n);
    CS_CHECK_LAUNCH();
    matmul_tiled<<<grid, block, 0, s1>>>(b, b, d, n);
    CS_CHECK_LAUNCH();
  });
  const cs::Stats mm_two = cs::time_device_ms(timing.warmup, timing.repeats, [&] {
    matmul_tiled<<<grid, block, 0, s1>>>(a, a, c, n);
    CS_CHECK_LAUNCH();
    matmul_tiled<<<grid, block, 0, s2>>>(b, b, d, n);
    CS_CHECK_LAUNCH();
  });
  const unsigned int mm_blocks = grid.x * grid.y;
  std::printf("  both mm in s1: %.3f ms, on s1 and s2: %.3f ms (%u blocks each on %d SMs)\n",
              mm_one.median, mm_two.median, mm_blocks, setup.prop.multiProcessorCount);
  if (!timing.enabled) {
    cs::check_skipped("seed_mm_two_streams", "--no-timing");
  } else {
    cs::check("seed_mm_two_streams", mm_two.median / mm_one.median, cs::Compare::at_most,
              bars::kTwoStreamGemmMax, "x",
              "two streams / one stream: each mm fills the GPU, so streams can overlap only the "
              "tail, but must cost nothing");
  }

  // t1 = torch.randn(n, n), t2 = torch.randn(n, n); res1 = t1 * 2 on s1, res2 = t2 * 3 on s2.
  // Each stream's block also runs a spin kernel of --kernel-ms for the rest of its work: the scale
  // alone lasts microseconds, too short to see what the synchronization costs.
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> host_t1(count);
  std::vector<float> host_t2(count);
  for (float& x : host_t1) x = normal(generator);
  for (float& x : host_t2) x = normal(generator);
  float* t1;
  float* t2;
  float* res1;
  float* res2;
  CS_CHECK(cudaMalloc(&t1, bytes));
  CS_CHECK(cudaMalloc(&t2, bytes));
  CS_CHECK(cudaMalloc(&res1, bytes));
  CS_CHECK(cudaMalloc(&res2, bytes));
  CS_CHECK(cudaMemcpy(t1, host_t1.data(), bytes, cudaMemcpyHostToDevice));
  CS_CHECK(cudaMemcpy(t2, host_t2.data(), bytes, cudaMemcpyHostToDevice));
  CS_CHECK(cudaDeviceSynchronize());

  const unsigned long long work_ns = ms_to_ns(setup.kernel_ms);
  const int scale_blocks =
      static_cast<int>(std::min<size_t>((count + 255) / 256, 4u * setup.prop.multiProcessorCount));
  KernelLog log(6);
  auto block_one = [&](cudaStream_t stream, int slot) {  // with torch.cuda.stream(stream1): t1 * 2
    scale_kernel<<<scale_blocks, 256, 0, stream>>>(t1, res1, 2.0f, count);
    CS_CHECK_LAUNCH();
    spin_kernel<<<1, kSpinThreads, 0, stream>>>(log.task(slot, work_ns));
    CS_CHECK_LAUNCH();
  };
  auto block_two = [&](cudaStream_t stream, int slot) {  // with torch.cuda.stream(stream2): t2 * 3
    scale_kernel<<<scale_blocks, 256, 0, stream>>>(t2, res2, 3.0f, count);
    CS_CHECK_LAUNCH();
    spin_kernel<<<1, kSpinThreads, 0, stream>>>(log.task(slot, work_ns));
    CS_CHECK_LAUNCH();
  };
  const cs::Stats serial = cs::time_device_ms(timing.warmup, timing.repeats, [&] {
    block_one(s1, 0);
    block_two(s1, 1);
  });
  // The seed: stream1.synchronize() inside the first block, stream2.synchronize() inside the
  // second.
  const cs::Stats sync_inside = cs::time_device_ms(timing.warmup, timing.repeats, [&] {
    block_one(s1, 2);
    CS_CHECK(cudaStreamSynchronize(s1));
    block_two(s2, 3);
    CS_CHECK(cudaStreamSynchronize(s2));
  });
  // The fix: issue both blocks, then wait once (torch.cuda.synchronize()).
  const cs::Stats sync_once = cs::time_device_ms(timing.warmup, timing.repeats, [&] {
    block_one(s1, 4);
    block_two(s2, 5);
    CS_CHECK(cudaDeviceSynchronize());
  });

  // The results' shapes, as the seed prints them: print(res1.shape, res2.shape). An elementwise
  // product has the shape of its input.
  struct Shape {
    int rows;
    int cols;
  };
  const Shape t1_shape{n, n};
  const Shape t2_shape{n, n};
  const Shape res1_shape = t1_shape;
  const Shape res2_shape = t2_shape;
  std::printf("  res1.shape, res2.shape: torch.Size([%d, %d]) torch.Size([%d, %d])\n",
              res1_shape.rows, res1_shape.cols, res2_shape.rows, res2_shape.cols);
  std::vector<float> host_res1(count);
  std::vector<float> host_res2(count);
  CS_CHECK(cudaMemcpy(host_res1.data(), res1, bytes, cudaMemcpyDeviceToHost));
  CS_CHECK(cudaMemcpy(host_res2.data(), res2, bytes, cudaMemcpyDeviceToHost));
  std::vector<float> want1(count);
  std::vector<float> want2(count);
  for (size_t i = 0; i < count; ++i) {
    want1[i] = host_t1[i] * 2.0f;
    want2[i] = host_t2[i] * 3.0f;
  }
  cs::verify("seed_res1 (t1 * 2)", host_res1, want1);
  cs::verify("seed_res2 (t2 * 3)", host_res2, want2);
  log.verify("seed_kernel");

  std::printf("  %-52s %9.2f ms\n", "both blocks in one stream (serial)", serial.median);
  std::printf("  %-52s %9.2f ms %6.2fx serial\n", "the seed: synchronize inside each stream block",
              sync_inside.median, sync_inside.median / serial.median);
  std::printf("  %-52s %9.2f ms %6.2fx serial\n", "the fix: issue both, synchronize once",
              sync_once.median, sync_once.median / serial.median);
  if (!timing.enabled) {
    cs::check_skipped("seed_sync_inside_is_serial", "--no-timing");
    cs::check_skipped("seed_sync_once_overlaps", "--no-timing");
  } else {
    cs::check("seed_sync_inside_is_serial", sync_inside.median / serial.median,
              cs::Compare::at_least, bars::kSyncInsideMin, "x",
              "the host waits for s1 before it issues s2's work");
    if (setup.concurrent_kernels()) {
      cs::check("seed_sync_once_overlaps", sync_once.median / serial.median, cs::Compare::at_most,
                bars::kSyncOnceMax, "x", "ideal 0.5x: both blocks run at once");
    } else {
      cs::check_skipped("seed_sync_once_overlaps",
                        "concurrentKernels = 0: the two blocks cannot overlap");
    }
  }
  std::printf(
      "  stream.synchronize() makes the host wait, so the second stream gets its work only after\n"
      "  the first has finished: two streams, serial time. Synchronize once, after issuing "
      "both.\n");

  for (float* p : {a, b, c, d, t1, t2, res1, res2}) CS_CHECK(cudaFree(p));
  CS_CHECK(cudaStreamDestroy(s1));
  CS_CHECK(cudaStreamDestroy(s2));
}

// ---------------------------------------------------------------------------------------------

void print_summary(const Summary& summary) {
  if (summary.stream0_ratio < 0 && summary.threads_speedup < 0) return;
  std::printf("\n== What stream 0 means in this build (%s)\n", kBuildName);
  std::printf("  %-56s %9s   %s\n", "experiment", "measured", "so stream 0");
  if (summary.stream0_ratio >= 0) {
    const double r = summary.stream0_ratio;
    std::printf("  %-56s %8.2fx   %s\n", "time with a stream-0 kernel between blocking A and B", r,
                r >= bars::kSerialized      ? "serializes A and B"
                : r <= bars::kNotSerialized ? "lets A and B overlap"
                                            : "partly serializes A and B");
  }
  if (summary.threads_speedup >= 0) {
    const double s = summary.threads_speedup;
    std::printf(
        "  %-56s %8.2fx   %s\n",
        sformat("speedup of %d host threads launching into stream 0", summary.threads).c_str(), s,
        s <= bars::kThreadsShareOne ? "is one stream shared by all threads"
                                    : "is a separate stream in each thread");
  }
}

int main(int argc, char** argv) {
  std::string part = "all";
  int kernels = 8;
  double kernel_ms = 2.0;
  int threads = 4;
  int stream_count = 32;
  int matrix = 1000;
  int repeats = 5;
  cs::CommonOptions common;
  cs::Options options(kProgram,
                      "The default stream vs created streams: concurrency, the legacy default "
                      "stream, per-thread default streams, hardware queues, the seeds' examples.");
  options.add_choice("part", &part,
                     {"all", "concurrency", "legacy", "threads", "connections", "seed"},
                     "which part to run");
  options.add_int("kernels", &kernels, 1, 64, "kernels (and streams) in the concurrency part");
  options.add_double("kernel-ms", &kernel_ms, 0.1, 20.0, "how long each spin kernel runs, in ms");
  options.add_int("threads", &threads, 1, 32, "host threads in the threads part");
  options.add_int("streams", &stream_count, 1, 128, "streams in the connections part");
  options.add_int("matrix", &matrix, 16, 4096, "edge of the seed part's square matrices");
  options.add_int("repeats", &repeats, 1, 50, "timed repeats of each measurement (median)");
  cs::add_common_options(options, &common);
  cs::parse_or_exit(options, argc, argv);

  // The driver reads CUDA_DEVICE_MAX_CONNECTIONS once, when the program's first CUDA call creates
  // the context: read it here, before that call, to know what the GPU was given.
  int connections = bars::kDefaultConnections;
  const char* connections_text = std::getenv("CUDA_DEVICE_MAX_CONNECTIONS");
  const bool connections_from_environment = connections_text != nullptr;
  if (connections_from_environment) {
    char* end = nullptr;
    const long value = std::strtol(connections_text, &end, 10);
    if (*connections_text == '\0' || *end != '\0' || value < 1 || value > bars::kMaxConnections) {
      cs::usage_error(
          sformat("CUDA_DEVICE_MAX_CONNECTIONS must be an integer from 1 to %d, got '%s'",
                  bars::kMaxConnections, connections_text));
    }
    connections = static_cast<int>(value);
  }

  Setup setup;
  setup.device = common.device;
  setup.prop = cs::select_device(common.device);
  setup.connections = connections;
  setup.kernel_ms = kernel_ms;
  setup.common = &common;
  setup.timing.enabled = !common.no_timing;
  setup.timing.warmup = common.no_timing ? 0 : 1;
  setup.timing.repeats = common.no_timing ? 1 : repeats;
  if (part == "all" || part == "seed") {
    cs::require_fits_on_device(8 * static_cast<size_t>(matrix) * matrix * sizeof(float),
                               sformat("--matrix %d", matrix));
  }
  std::printf("Build: %s (stream 0 is %s)\n", kBuildName,
              kPerThreadBuild ? "each host thread's own default stream"
                              : "the legacy default stream, shared by all host threads");
  std::printf("concurrentKernels = %d, CUDA_DEVICE_MAX_CONNECTIONS = %d (%s)\n",
              setup.prop.concurrentKernels, connections,
              connections_from_environment ? "from the environment" : "unset: the default");
  std::printf("Times are medians of %d run%s after %d warm-up run%s.\n", setup.timing.repeats,
              setup.timing.repeats == 1 ? "" : "s", setup.timing.warmup,
              setup.timing.warmup == 1 ? "" : "s");

  Summary summary;
  if (part == "all" || part == "concurrency") part_concurrency(setup, kernels);
  if (part == "all" || part == "legacy") part_legacy(setup, summary);
  if (part == "all" || part == "threads") part_threads(setup, threads, summary);
  if (part == "all" || part == "connections") {
    part_connections(setup, stream_count, connections_from_environment);
  }
  if (part == "all" || part == "seed") part_seed(setup, matrix);
  print_summary(summary);
  return cs::finish();
}
