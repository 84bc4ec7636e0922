// Exercise for chapter 02: kernels that should run side by side.
//
// The task
//   This program launches the same N single-block kernels (each waits 2 ms on the GPU's global
//   timer) twice. The reference run issues them one after another into one stream on purpose. The
//   concurrent run is meant to let all N run at the same time, so that it takes about one kernel's
//   time, N times less than the reference. As given, it takes as long as the reference, and its
//   CHECK line fails. Find out why, using what chapter 02 measures, and fix the concurrent run.
//   The line marked TODO(exercise) is where to look. Do not change the reference run, the
//   kernel or the bar.
//
// Build, run and test
//   cmake --preset exercises && cmake --build --preset exercises
//   build-exercises/bin/02_default_vs_custom_streams_exercise
//   ctest --preset exercises -R '^02_default_vs_custom_streams_exercise\.'
//
// What it prints
//   The median time of both runs and the speedup, a timeline of both runs drawn from the times at
//   which the kernels themselves started and ended, and the CHECK lines: every kernel ran once and
//   for its full time, and the speedup is at least 0.75 of the ideal (N kernels in
//   ceil(N / CUDA_DEVICE_MAX_CONNECTIONS) turns). Exit status 0 once the exercise is solved.

#include <cstdio>
#include <string>
#include <vector>

#include "cuda_streams.hpp"
#include "cuda_streams/device_clock.cuh"

constexpr int kSpinThreads = 32;  // one warp: each kernel occupies one slot on one SM

// When one kernel started and ended on the global timer, and how often it ran.
struct KernelRecord {
  unsigned long long start_ns;
  unsigned long long end_ns;
  unsigned int runs;
};

using cs::globaltimer_ns;  // the GPU's nanosecond clock, from cuda_streams/device_clock.cuh

// Waits `duration_ns` on the global timer and writes down when it ran.
__global__ void spin_kernel(KernelRecord* record, unsigned long long duration_ns) {
  const unsigned long long start = globaltimer_ns();
  unsigned long long now = start;
  while (now - start < duration_ns) now = globaltimer_ns();
  if (threadIdx.x == 0) {
    record->start_ns = start;
    record->end_ns = now;
    atomicAdd(&record->runs, 1u);
  }
}

// Destroys the streams of the concurrent run; a handle that names a default stream is left alone.
void release_stream(cudaStream_t stream) {
  if (stream != 0 && stream != cudaStreamLegacy && stream != cudaStreamPerThread) {
    CS_CHECK(cudaStreamDestroy(stream));
  }
}

// One run's kernels on a timeline, in ms since the first of them started.
cs::TimelineData run_timeline(const std::vector<KernelRecord>& records, std::size_t first,
                              std::size_t count, bool one_row, const std::string& kind) {
  cs::TimelineData data;
  unsigned long long origin = records[first].start_ns;
  for (std::size_t i = first; i < first + count; ++i) {
    if (records[i].start_ns < origin) origin = records[i].start_ns;
  }
  for (std::size_t i = 0; i < count; ++i) {
    if (i == 0 || !one_row) {
      data.rows.push_back(one_row ? std::string("reference stream")
                                  : cs::format("streams[%zu]", i));
    }
    const KernelRecord& r = records[first + i];
    data.spans.push_back({one_row ? 0 : static_cast<int>(i), kind, "",
                          static_cast<double>(r.start_ns - origin) * 1e-6,
                          static_cast<double>(r.end_ns - origin) * 1e-6});
  }
  return data;
}

int main(int argc, char** argv) {
  int kernels = 8;
  double kernel_ms = 2.0;
  int repeats = 5;
  cs::CommonOptions common;
  cs::Options options("02_default_vs_custom_streams_exercise",
                      "Exercise: make N independent kernels run side by side.");
  options.add_int("kernels", &kernels, 2, 32, "kernels in each run");
  options.add_double("kernel-ms", &kernel_ms, 0.5, 20.0, "how long each kernel runs, in ms");
  options.add_int("repeats", &repeats, 1, 20, "timed repeats of each run (median)");
  cs::add_common_options(options, &common);
  cs::parse_or_exit(options, argc, argv);
  // The driver reads CUDA_DEVICE_MAX_CONNECTIONS (its hardware queues) at the first CUDA call.
  const int connections = cs::launch_environment().max_connections;

  const cudaDeviceProp prop = cs::select_device(common.device);
  const auto kernel_ns = static_cast<unsigned long long>(kernel_ms * 1e6);
  const int warmup = common.no_timing ? 0 : 1;
  if (common.no_timing) repeats = 1;
  const auto count = static_cast<std::size_t>(kernels);

  // Slots 0..N-1 for the reference run, N..2N-1 for the concurrent one.
  KernelRecord* records = nullptr;
  const std::size_t record_bytes = 2 * count * sizeof(KernelRecord);
  CS_CHECK(cudaMalloc(&records, record_bytes));
  CS_CHECK(cudaMemset(records, 0, record_bytes));
  cudaStream_t reference_stream = nullptr;
  CS_CHECK(cudaStreamCreate(&reference_stream));
  CS_CHECK(cudaDeviceSynchronize());

  // The reference: one stream, so each kernel waits for the one before it.
  const cs::Stats serial = cs::time_device_ms(warmup, repeats, [&] {
    for (std::size_t i = 0; i < count; ++i) {
      spin_kernel<<<1, kSpinThreads, 0, reference_stream>>>(records + i, kernel_ns);
      CS_CHECK_LAUNCH();
    }
  });

  // The concurrent run: kernel i is launched into streams[i].
  // TODO(exercise): this run takes as long as the reference. Which stream does each kernel go
  // to, and what does chapter 02 say about work in that stream?
  std::vector<cudaStream_t> streams(count);
  for (cudaStream_t& stream : streams) stream = 0;
  std::vector<double> issue_ms;
  const cs::Stats concurrent = cs::time_device_ms(warmup, repeats, [&] {
    const double begin = cs::host_now_ms();
    for (std::size_t i = 0; i < count; ++i) {
      spin_kernel<<<1, kSpinThreads, 0, streams[i]>>>(records + count + i, kernel_ns);
      CS_CHECK_LAUNCH();
    }
    issue_ms.push_back(cs::host_now_ms() - begin);
  });
  const double speedup = serial.median / concurrent.median;
  const double issue = cs::median(issue_ms);

  std::printf("%d kernels of %.2f ms each, medians of %d run%s:\n", kernels, kernel_ms, repeats,
              repeats == 1 ? "" : "s");
  std::printf("  reference, one stream   %8.2f ms\n", serial.median);
  std::printf("  concurrent run          %8.2f ms   (launches issued in %.3f ms)\n",
              concurrent.median, issue);
  std::printf("  speedup                 %8.2fx\n", speedup);

  // What the kernels recorded: each ran once per launch, and for its full time.
  std::vector<KernelRecord> got(2 * count);
  CS_CHECK(cudaMemcpy(got.data(), records, record_bytes, cudaMemcpyDeviceToHost));
  const auto launches = static_cast<unsigned int>(warmup + repeats);
  std::vector<unsigned int> runs;
  int short_spins = 0;
  for (const KernelRecord& record : got) {
    runs.push_back(record.runs);
    if (record.end_ns - record.start_ns < kernel_ns) ++short_spins;
  }
  cs::verify("kernel_runs", runs, std::vector<unsigned int>(runs.size(), launches));
  cs::check_that("kernel_spins", short_spins == 0,
                 cs::format("%d of %zu kernels ended before their time on the global timer",
                            short_spins, got.size()));

  cs::publish_timeline(run_timeline(got, 0, count, true, "reference"), common,
                       "The last reference run:");
  cs::publish_timeline(run_timeline(got, count, count, false, "concurrent"), common,
                       "The last concurrent run, one row per entry of streams:");

  if (common.no_timing) {
    cs::check_skipped("concurrency_speedup", "--no-timing");
  } else if (prop.concurrentKernels == 0) {
    cs::check_skipped("concurrency_speedup",
                      "concurrentKernels = 0: this device runs one kernel at a time");
  } else {
    // N kernels on Q hardware queues take ceil(N / Q) turns, after the launches were issued,
    // allowing 10 us per launch (twice the H200's; not this run's issue time, which launches
    // that serialize would raise, lowering their own bar).
    constexpr double kLaunchMs = 0.010;
    const int turns = (kernels + connections - 1) / connections;
    const double ideal = kernels * kernel_ms / (turns * kernel_ms + kernels * kLaunchMs);
    // 75% of the ideal leaves room for launch jitter and the kernels' start-up on the SMs.
    constexpr double kOfIdeal = 0.75;
    cs::check("concurrency_speedup", speedup, cs::Compare::at_least, kOfIdeal * ideal, "x",
              cs::format("%.2f x ideal %.2fx: %d kernels in %d turn%s on %d hardware queues",
                         kOfIdeal, ideal, kernels, turns, turns == 1 ? "" : "s", connections));
  }
  std::printf(
      "Kernels in one stream run in issue order. Kernels in different created streams carry no\n"
      "order between them, so one-block kernels can share the GPU's SMs at the same time.\n");

  for (cudaStream_t stream : streams) release_stream(stream);
  CS_CHECK(cudaStreamDestroy(reference_stream));
  CS_CHECK(cudaFree(records));
  return cs::finish();
}
