// Exercise for chapter 03: a latency-sensitive kernel stuck behind a flood.
//
// The task
//   A long "flood" of low-priority work (many short blocks, about 20 ms in all) keeps every SM
//   busy. While it runs, the program submits a short, latency-sensitive kernel from a stream of its
//   own, 1 ms after the flood started, and measures when that kernel is done. It is meant to
//   finish early in the flood, but as given it finishes only when the flood does, and the CHECK
//   line fails. Find out why, using what chapter 03 measures, and fix it. The line
//   marked TODO(exercise) is where to look. Do not change the kernels, the flood or the bar.
//
// Build, run and test
//   cmake --preset exercises && cmake --build --preset exercises
//   build-exercises/bin/03_stream_priorities_exercise
//   ctest --preset exercises -R '^03_stream_priorities_exercise\.'
//
// What it prints
//   The device's priority range and the priority of each stream, the short kernel's latency, when
//   it finished and the flood's length (medians), an ASCII timeline of the last run, and the CHECK
//   lines: the short kernel's values, every flood block ran, and the short kernel finished within
//   the first half of the flood (counted from the flood's start, so that a submission held up
//   behind the flood cannot hide the wait). A device with a single priority level cannot do
//   better and reports SKIP (exit 77).

#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "cuda_streams.hpp"
#include "cuda_streams/device_clock.cuh"

namespace bars {
// When the short kernel finished, counted from the flood's start, over the flood's length. Behind
// the whole flood it is 1; served as soon as flood blocks free their slots it is the 1 ms before
// its submission plus tens of microseconds, about 0.05 of a 20 ms flood on an H200.
constexpr double kFinishedOfFloodMax = 0.5;
}  // namespace bars

constexpr int kThreads = 128;       // per block, for the flood and the short kernel alike
constexpr int kShortWorkUs = 10;    // how long each block of the short kernel runs
constexpr int kSettleUs = 1000;     // once the flood runs, wait this long before submitting
constexpr int kMinFloodWaves = 10;  // the flood must keep blocks waiting, not only running
constexpr int kFloodCounters = 32;  // the flood counts its blocks on a few addresses, not one
constexpr double kStartTimeoutMs = 60000;

using cs::globaltimer_ns;  // the GPU's nanosecond clock, from cuda_streams/device_clock.cuh

__device__ void spin_for(unsigned long long ns) {
  const unsigned long long start = globaltimer_ns();
  while (globaltimer_ns() - start < ns) {
  }
}

__host__ __device__ int short_value(int request, int i) {
  return request * 1000000 + i;
}

// Every block holds its SM slot for block_ns, then counts itself; block 0 tells the host, through
// mapped pinned memory, that the flood has reached the GPU.
__global__ void flood_kernel(unsigned long long block_ns, volatile int* started,
                             unsigned int* blocks_done) {
  if (threadIdx.x == 0) {
    if (blockIdx.x == 0) {
      *started = 1;
      __threadfence_system();
    }
    spin_for(block_ns);
    atomicAdd(&blocks_done[blockIdx.x % kFloodCounters], 1u);
  }
  __syncthreads();  // the whole block keeps its slot until thread 0 is done
}

// The latency-sensitive work: a short fixed time per block, then one value per thread.
__global__ void short_kernel(unsigned long long work_ns, int request, int* out) {
  if (threadIdx.x == 0) spin_for(work_ns);
  __syncthreads();
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  out[i] = short_value(request, i);
}

double elapsed_ms(cudaEvent_t from, cudaEvent_t to) {
  float ms = 0;
  CS_CHECK(cudaEventElapsedTime(&ms, from, to));
  return ms;
}

int priority_of(cudaStream_t stream) {
  int priority = 0;
  CS_CHECK(cudaStreamGetPriority(stream, &priority));
  return priority;
}

int main(int argc, char** argv) {
  int flood_ms = 20;
  int block_us = 20;
  int repeats = 5;
  cs::CommonOptions common;
  cs::Options options("03_stream_priorities_exercise",
                      "Exercise: a short kernel submitted during a flood must not wait for it.");
  options.add_int("flood-ms", &flood_ms, 5, 200, "how long the flood keeps every SM busy, in ms");
  options.add_int("block-us", &block_us, 10, 1000, "how long each flood block runs, in us");
  options.add_int("repeats", &repeats, 1, 20, "timed runs (the median is reported)");
  cs::add_common_options(options, &common);
  cs::parse_or_exit(options, argc, argv);
  if (static_cast<long long>(block_us) * kMinFloodWaves > flood_ms * 1000LL) {
    cs::usage_error("--block-us " + std::to_string(block_us) + " with --flood-ms " +
                    std::to_string(flood_ms) + ": the flood needs at least " +
                    std::to_string(kMinFloodWaves) + " waves of blocks, so --block-us must be " +
                    "at most " + std::to_string(flood_ms * 1000 / kMinFloodWaves));
  }

  const cudaDeviceProp prop = cs::select_device(common.device);
  int least = 0;
  int greatest = 0;
  CS_CHECK(cudaDeviceGetStreamPriorityRange(&least, &greatest));
  std::printf("Stream priorities of this device: %d (greatest) .. %d (least)\n", greatest, least);
  if (least == greatest) {
    cs::skip("this device has one stream priority level, so no stream can go ahead of the flood");
  }

  // The flood's stream, at the least priority.
  cudaStream_t flood_stream = nullptr;
  CS_CHECK(cudaStreamCreateWithPriority(&flood_stream, cudaStreamNonBlocking, least));
  // The stream of the latency-sensitive kernel.
  // TODO(exercise): the short kernel waits for the whole flood. How does the block scheduler
  // choose between the flood's waiting blocks and this stream's, and what did we tell it?
  cudaStream_t urgent = nullptr;
  CS_CHECK(cudaStreamCreate(&urgent));
  std::printf("flood stream priority %d, short kernel's stream priority %d\n",
              priority_of(flood_stream), priority_of(urgent));

  int per_sm = 0;
  CS_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, flood_kernel, kThreads, 0));
  const int wave = per_sm * prop.multiProcessorCount;
  const long long waves = flood_ms * 1000LL / block_us;
  const int flood_blocks = static_cast<int>(waves * wave);
  const int short_blocks = prop.multiProcessorCount;
  const std::size_t out_count = static_cast<std::size_t>(short_blocks) * kThreads;
  std::printf(
      "flood: %lld waves x %d blocks (%d per SM by occupancy) of %d us each; short kernel: "
      "%d blocks of %d us, submitted %d us after the flood started\n",
      waves, wave, per_sm, block_us, short_blocks, kShortWorkUs, kSettleUs);

  int* started_host = nullptr;
  int* started_device = nullptr;
  CS_CHECK(cudaHostAlloc(&started_host, sizeof(int), cudaHostAllocMapped));
  CS_CHECK(cudaHostGetDevicePointer(&started_device, started_host, 0));
  unsigned int* blocks_done = nullptr;
  int* out = nullptr;
  CS_CHECK(cudaMalloc(&blocks_done, kFloodCounters * sizeof(unsigned int)));
  CS_CHECK(cudaMalloc(&out, out_count * sizeof(int)));
  cudaEvent_t flood_start, flood_end, submitted, finished;
  for (cudaEvent_t* event : {&flood_start, &flood_end, &submitted, &finished}) {
    CS_CHECK(cudaEventCreate(event));
  }
  volatile int* started = started_host;

  std::vector<double> latencies;
  std::vector<double> finish_times;
  std::vector<double> floods;
  std::vector<double> submit_times;
  int complete_floods = 0;
  cs::Comparison results;
  const int runs = repeats + 1;  // the first one is a warm-up
  for (int run = 0; run < runs; ++run) {
    const int request = run + 1;
    CS_CHECK(cudaMemsetAsync(blocks_done, 0, kFloodCounters * sizeof(unsigned int), flood_stream));
    CS_CHECK(cudaMemsetAsync(out, 0xff, out_count * sizeof(int), flood_stream));
    CS_CHECK(cudaStreamSynchronize(flood_stream));
    *started = 0;

    CS_CHECK(cudaEventRecord(flood_start, flood_stream));
    flood_kernel<<<flood_blocks, kThreads, 0, flood_stream>>>(block_us * 1000ull, started_device,
                                                              blocks_done);
    CS_CHECK_LAUNCH();
    CS_CHECK(cudaEventRecord(flood_end, flood_stream));

    // Submit only once the flood holds the SMs and has blocks waiting.
    const double give_up = cs::host_now_ms() + kStartTimeoutMs;
    while (*started == 0) {
      if (cs::host_now_ms() > give_up) {
        std::fprintf(stderr, "error: the flood kernel did not start within %.0f s\n",
                     kStartTimeoutMs / 1000);
        return cs::kFailExitCode;
      }
    }
    const double settle_until = cs::host_now_ms() + kSettleUs / 1000.0;
    while (cs::host_now_ms() < settle_until) {
    }

    CS_CHECK(cudaEventRecord(submitted, urgent));
    short_kernel<<<short_blocks, kThreads, 0, urgent>>>(kShortWorkUs * 1000ull, request, out);
    CS_CHECK_LAUNCH();
    CS_CHECK(cudaEventRecord(finished, urgent));
    CS_CHECK(cudaStreamSynchronize(urgent));
    CS_CHECK(cudaStreamSynchronize(flood_stream));

    std::vector<unsigned int> counts(kFloodCounters);
    CS_CHECK(cudaMemcpy(counts.data(), blocks_done, kFloodCounters * sizeof(unsigned int),
                        cudaMemcpyDeviceToHost));
    long long counted = 0;
    for (unsigned int c : counts) counted += c;
    if (counted == flood_blocks) ++complete_floods;
    std::vector<int> got(out_count);
    std::vector<int> want(out_count);
    CS_CHECK(cudaMemcpy(got.data(), out, out_count * sizeof(int), cudaMemcpyDeviceToHost));
    for (std::size_t i = 0; i < out_count; ++i) want[i] = short_value(request, static_cast<int>(i));
    const cs::Comparison one = cs::compare(got.data(), want.data(), out_count);
    results.total += one.total;
    results.wrong += one.wrong;
    for (const cs::Mismatch& m : one.first) {
      if (results.first.size() < 5) results.first.push_back(m);
    }
    if (run == 0) continue;
    latencies.push_back(elapsed_ms(submitted, finished));
    floods.push_back(elapsed_ms(flood_start, flood_end));
    submit_times.push_back(elapsed_ms(flood_start, submitted));
    finish_times.push_back(elapsed_ms(flood_start, finished));
  }

  const double latency = cs::median(latencies);
  const double flood = cs::median(floods);
  const double finished_at = cs::median(finish_times);
  std::printf(
      "short kernel: submitted %.3f ms and finished %.3f ms after the flood began (latency %.3f "
      "ms); the flood lasted %.2f ms; medians of %d runs\n",
      cs::median(submit_times), finished_at, latency, flood, repeats);

  cs::TimelineData timeline;
  timeline.rows = {"flood, priority " + std::to_string(priority_of(flood_stream)),
                   "short, priority " + std::to_string(priority_of(urgent))};
  timeline.spans.push_back({0, "flood", "", 0.0, elapsed_ms(flood_start, flood_end)});
  timeline.spans.push_back({1, "short kernel, submit to finish", "",
                            elapsed_ms(flood_start, submitted), elapsed_ms(flood_start, finished)});
  cs::publish_timeline(timeline, common, "The last run:");

  cs::report_comparison("short_kernel_results", results);
  cs::check_that("every_flood_block_ran", complete_floods == runs,
                 std::to_string(complete_floods) + " of " + std::to_string(runs) +
                     " floods counted every one of their blocks");
  if (common.no_timing) {
    cs::check_skipped("short_kernel_finished", "--no-timing");
  } else {
    cs::check("short_kernel_finished", finished_at / flood, cs::Compare::at_most,
              bars::kFinishedOfFloodMax, "x",
              "when the short kernel finished, from the flood's start, / the flood's length: it "
              "must not wait for the flood");
  }

  for (cudaEvent_t event : {flood_start, flood_end, submitted, finished}) {
    CS_CHECK(cudaEventDestroy(event));
  }
  CS_CHECK(cudaFree(out));
  CS_CHECK(cudaFree(blocks_done));
  CS_CHECK(cudaFreeHost(started_host));
  CS_CHECK(cudaStreamDestroy(urgent));
  CS_CHECK(cudaStreamDestroy(flood_stream));
  return cs::finish();
}
