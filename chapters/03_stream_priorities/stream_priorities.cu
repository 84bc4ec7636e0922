// Chapter 03: stream priorities
//
// What it teaches
//   A stream's priority tells the GPU's block scheduler whose *pending* blocks to start first
//   when a slot on an SM frees up. It does not stop blocks that are already running. The seed's
//   "priority from -1 (high) to 0 (low)" is one particular range (the two levels that older
//   PyTorch releases used); every device reports its own through cudaDeviceGetStreamPriorityRange,
//   and a value outside it is clamped.
//     1. The device's range beside the seed's claim; streams created with
//        cudaStreamCreateWithPriority at every level and far outside the range, read back with
//        cudaStreamGetPriority; next to each, the priority PyTorch's torch.cuda.Stream(priority=p)
//        would give the stream (its documented rule, computed from this device's range).
//     2. A flood: a long kernel of many short blocks, from a low-priority stream, keeps every SM
//        busy. A short, latency-sensitive kernel submitted while it runs finishes within about one
//        flood block's time from a high-priority stream, but only after the whole flood from a
//        low-priority one. Its latency (submission to completion, timed with events in its own
//        stream) is compared as a ratio.
//     3. One wave of long blocks that fills every SM: even the highest priority waits for them to
//        finish, because running blocks are not preempted.
//
// Build and run
//   cmake --preset default && cmake --build --preset default && build/bin/03_stream_priorities
//   build/bin/03_stream_priorities --block-us 200     # longer flood blocks: a longer wait
//   build/bin/03_stream_priorities --help             # every flag
//
// What to expect
//   The range table (on an H200: 0 .. -5, six levels), then the latency of the short kernel from
//   each stream (tens of microseconds against about 20 ms), an ASCII timeline of both cases, and
//   the CHECK lines: clamping, the latency ratio (bar 0.5), no preemption (bar 0.9), the short
//   kernel's results and the flood's block count. Exit status 0 when every check passes.

#include <cuda_runtime.h>

#include <algorithm>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "cuda_streams.hpp"
#include "cuda_streams/device_clock.cuh"

namespace {

// Every bar of the chapter, in one place.
namespace bars {
// The short kernel's latency from a high-priority stream over its latency from a low-priority
// one, on a device with more than one priority level. With flood blocks of 20 us it is about
// 0.002 on an H200 (tens of microseconds against the whole flood); 0.5 holds on any recent GPU.
constexpr double kLatencyRatioMax = 0.5;
// Against one wave of running blocks, the high-priority kernel's latency over the time those
// blocks still had to run: about 1.0 when running blocks are not preempted, near 0 if they were.
constexpr double kNoPreemptionMin = 0.9;
}  // namespace bars

// The seed's range: "from -1 (high) to 0 (low)".
constexpr int kSeedGreatest = -1;
constexpr int kSeedLeast = 0;
// PyTorch keeps stream pools for at most this many priorities (c10/cuda/CUDAStream.h,
// max_compile_time_stream_priorities in recent releases).
constexpr int kPyTorchPriorityPools = 4;

constexpr int kThreads = 128;           // per block, for the flood and the short kernel alike
constexpr int kFloodMaxRegisters = 32;  // 2048 threads x 32 = the 64K registers of an SM
constexpr int kMinFloodWaves = 10;      // a flood must keep blocks waiting, not only running
constexpr int kFloodCounters = 32;      // the flood counts its blocks on a few addresses, not one
constexpr double kStartTimeoutMs = 60000;  // generous: compute-sanitizer starts kernels slowly

}  // namespace

// ---------------------------------------------------------------------------------------------
// Kernels
// ---------------------------------------------------------------------------------------------

using cs::globaltimer_ns;  // the GPU's nanosecond clock, from cuda_streams/device_clock.cuh

// Holds the calling thread for `ns` nanoseconds of wall time, whatever the clock rate.
__device__ void spin_for(unsigned long long ns) {
  const unsigned long long start = globaltimer_ns();
  while (globaltimer_ns() - start < ns) {
  }
}

// What thread i of the short kernel writes for request number `request`.
__host__ __device__ int short_value(int request, int i) {
  return request * 1000000 + i;
}

// The flood: every block holds its SM slot for block_ns, then counts itself. Block 0 raises
// `started` in mapped host memory, so that the host knows the flood is on the GPU. Capping its
// registers makes the SM's thread slots, not its registers, limit how many of its blocks fit: a
// full wave of flood blocks then leaves no room for any other block.
__global__ void __maxnreg__(kFloodMaxRegisters)
    flood_kernel(unsigned long long block_ns, volatile int* started, unsigned int* blocks_done) {
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

// ---------------------------------------------------------------------------------------------
// Host side
// ---------------------------------------------------------------------------------------------

namespace {

int priority_of(cudaStream_t stream) {
  int priority = 0;
  CS_CHECK(cudaStreamGetPriority(stream, &priority));
  return priority;
}

// What a stream created with cudaStreamCreateWithPriority(requested) really has.
int created_priority(int requested) {
  cudaStream_t stream = nullptr;
  CS_CHECK(cudaStreamCreateWithPriority(&stream, cudaStreamNonBlocking, requested));
  const int priority = priority_of(stream);
  CS_CHECK(cudaStreamDestroy(stream));
  return priority;
}

// PyTorch's documented rule (c10/cuda/CUDAStream.cpp, recent releases): it creates pools of
// streams at CUDA priorities 0, -1, ..., -(pools - 1), with pools = min(4, the device's number of
// levels), and torch.cuda.Stream(priority=p) takes a stream from pool clamp(-p, 0, pools - 1).
int pytorch_priority(int requested, int levels) {
  const int pools = std::min(kPyTorchPriorityPools, levels);
  return -std::clamp(-requested, 0, pools - 1);
}

void wait_until_started(const volatile int* started) {
  const double give_up = cs::host_now_ms() + kStartTimeoutMs;
  while (*started == 0) {
    if (cs::host_now_ms() > give_up) {
      std::fflush(stdout);
      std::fprintf(stderr, "error: the flood kernel did not start within %.0f s\n",
                   kStartTimeoutMs / 1000);
      std::exit(cs::kFailExitCode);
    }
  }
}

void host_spin_us(int us) {
  const double until = cs::host_now_ms() + us / 1000.0;
  while (cs::host_now_ms() < until) {
  }
}

double elapsed_ms(cudaEvent_t from, cudaEvent_t to) {
  float ms = 0;
  CS_CHECK(cudaEventElapsedTime(&ms, from, to));
  return ms;
}

// One run's timings, all from events.
struct Run {
  double latency_ms = 0;     // the short kernel, from its submission to its completion
  double submitted_ms = 0;   // from the flood's start to the short kernel's submission
  double flood_ms = 0;       // the flood's length
  double flood_left_ms = 0;  // from the short kernel's submission to the flood's end
};

// Everything the runs share: the flood's stream, buffers, events and the tally of results.
struct Lab {
  cudaStream_t flood_stream = nullptr;
  int short_blocks = 0;
  unsigned long long short_ns = 0;
  int settle_us = 0;
  volatile int* started_host = nullptr;  // mapped pinned memory, read by the host...
  int* started_device = nullptr;         // ...and written by the flood through this pointer
  unsigned int* blocks_done = nullptr;
  int* short_out = nullptr;
  cudaEvent_t flood_start = nullptr, flood_end = nullptr, submitted = nullptr, finished = nullptr;
  int requests = 0;
  int floods = 0;
  int complete_floods = 0;
  cs::Comparison results;  // every short kernel's output against the CPU's
};

// Floods the GPU from lab.flood_stream, waits until the flood runs, then submits the short
// kernel into short_stream and times it. With a timeline, both also become spans on it.
Run run_once(Lab& lab, int flood_blocks, unsigned long long block_ns, cudaStream_t short_stream,
             cs::Timeline* timeline, const std::string& flood_row, const std::string& short_row) {
  const int request = ++lab.requests;
  const std::size_t out_count = static_cast<std::size_t>(lab.short_blocks) * kThreads;

  // Clear what this run fills in, and let the GPU go idle before the flood.
  CS_CHECK(
      cudaMemsetAsync(lab.blocks_done, 0, kFloodCounters * sizeof(unsigned int), lab.flood_stream));
  CS_CHECK(cudaMemsetAsync(lab.short_out, 0xff, out_count * sizeof(int), lab.flood_stream));
  CS_CHECK(cudaStreamSynchronize(lab.flood_stream));
  *lab.started_host = 0;

  int flood_span = -1;
  if (timeline) flood_span = timeline->begin(flood_row, "flood", lab.flood_stream);
  CS_CHECK(cudaEventRecord(lab.flood_start, lab.flood_stream));
  flood_kernel<<<flood_blocks, kThreads, 0, lab.flood_stream>>>(block_ns, lab.started_device,
                                                                lab.blocks_done);
  CS_CHECK_LAUNCH();
  CS_CHECK(cudaEventRecord(lab.flood_end, lab.flood_stream));
  if (timeline) timeline->end(flood_span, lab.flood_stream);

  // Submit only once the flood holds the SMs and has blocks waiting.
  wait_until_started(lab.started_host);
  host_spin_us(lab.settle_us);

  int short_span = -1;
  if (timeline)
    short_span = timeline->begin(short_row, "short kernel, submit to finish", short_stream);
  CS_CHECK(cudaEventRecord(lab.submitted, short_stream));
  short_kernel<<<lab.short_blocks, kThreads, 0, short_stream>>>(lab.short_ns, request,
                                                                lab.short_out);
  CS_CHECK_LAUNCH();
  CS_CHECK(cudaEventRecord(lab.finished, short_stream));
  if (timeline) timeline->end(short_span, short_stream);

  CS_CHECK(cudaStreamSynchronize(short_stream));
  CS_CHECK(cudaStreamSynchronize(lab.flood_stream));

  Run run;
  run.latency_ms = elapsed_ms(lab.submitted, lab.finished);
  run.submitted_ms = elapsed_ms(lab.flood_start, lab.submitted);
  run.flood_ms = elapsed_ms(lab.flood_start, lab.flood_end);
  run.flood_left_ms = elapsed_ms(lab.submitted, lab.flood_end);

  // Did every flood block run, and did the short kernel compute what the CPU computes?
  std::vector<unsigned int> counts(kFloodCounters);
  CS_CHECK(cudaMemcpy(counts.data(), lab.blocks_done, kFloodCounters * sizeof(unsigned int),
                      cudaMemcpyDeviceToHost));
  long long counted = 0;
  for (unsigned int c : counts) counted += c;
  ++lab.floods;
  if (counted == flood_blocks) ++lab.complete_floods;
  std::vector<int> got(out_count);
  std::vector<int> want(out_count);
  CS_CHECK(cudaMemcpy(got.data(), lab.short_out, out_count * sizeof(int), cudaMemcpyDeviceToHost));
  for (std::size_t i = 0; i < out_count; ++i) want[i] = short_value(request, static_cast<int>(i));
  cs::accumulate(lab.results, cs::compare(got.data(), want.data(), out_count));
  return run;
}

struct Summary {
  cs::Stats latency_ms;
  cs::Stats submitted_ms;
  cs::Stats flood_ms;
};

Summary summarize(const std::vector<Run>& runs) {
  std::vector<double> latency, submitted, flood;
  for (const Run& run : runs) {
    latency.push_back(run.latency_ms);
    submitted.push_back(run.submitted_ms);
    flood.push_back(run.flood_ms);
  }
  return {cs::summarize(latency), cs::summarize(submitted), cs::summarize(flood)};
}

// "0.031 ms" or "20.3 ms": three significant figures for small values.
std::string format_ms(double ms) {
  char text[32];
  std::snprintf(text, sizeof text, ms < 1 ? "%.3f ms" : ms < 100 ? "%.2f ms" : "%.1f ms", ms);
  return text;
}

}  // namespace

int main(int argc, char** argv) {
  int flood_ms = 20;
  int block_us = 20;
  int short_us = 10;
  int running_ms = 5;
  int settle_us = 1000;
  int repeats = 10;
  cs::CommonOptions common;
  cs::Options options("03_stream_priorities",
                      "Stream priorities: the device's range, clamping, and a short kernel's "
                      "latency behind a flood of low-priority work.");
  options.add_int("flood-ms", &flood_ms, 1, 1000,
                  "how long the low-priority flood keeps every SM busy, in ms");
  options.add_int("block-us", &block_us, 5, 10000,
                  "how long each flood block runs, in us (shorter blocks let priority act sooner)");
  options.add_int("short-us", &short_us, 1, 1000,
                  "how long each block of the latency-sensitive kernel runs, in us");
  options.add_int("running-ms", &running_ms, 1, 1000,
                  "how long the single wave of blocks runs in the no-preemption test, in ms");
  options.add_int("settle-us", &settle_us, 0, 100000,
                  "how long the host waits, once the flood has started, before submitting, in us");
  options.add_int("repeats", &repeats, 1, 100, "timed runs of each case (the median is reported)");
  cs::add_common_options(options, &common);
  cs::parse_or_exit(options, argc, argv);
  if (static_cast<long long>(block_us) * kMinFloodWaves > flood_ms * 1000LL) {
    cs::usage_error("--block-us " + std::to_string(block_us) + " with --flood-ms " +
                    std::to_string(flood_ms) + ": the flood needs at least " +
                    std::to_string(kMinFloodWaves) +
                    " waves of blocks, so --block-us must be at most " +
                    std::to_string(flood_ms * 1000 / kMinFloodWaves));
  }
  if (2LL * settle_us > flood_ms * 1000LL || 2LL * settle_us > running_ms * 1000LL) {
    cs::usage_error("--settle-us " + std::to_string(settle_us) +
                    ": the short kernel must be submitted in the first half of the flood, so "
                    "--settle-us must be at most half of --flood-ms and of --running-ms (" +
                    std::to_string(std::min(flood_ms, running_ms) * 500) + " us here)");
  }

  const cudaDeviceProp prop = cs::select_device(common.device);

  // --- 1. The device's range, clamping, and PyTorch's mapping --------------------------------
  int least = 0;
  int greatest = 0;
  CS_CHECK(cudaDeviceGetStreamPriorityRange(&least, &greatest));
  const int levels = least - greatest + 1;

  // The experiment's three streams come first, so that each gets its own hardware work queue
  // (chapter 02 shows what sharing one costs).
  cudaStream_t flood_stream = nullptr;
  cudaStream_t low_stream = nullptr;
  cudaStream_t high_stream = nullptr;
  CS_CHECK(cudaStreamCreateWithPriority(&flood_stream, cudaStreamNonBlocking, least));
  CS_CHECK(cudaStreamCreateWithPriority(&low_stream, cudaStreamNonBlocking, least));
  CS_CHECK(cudaStreamCreateWithPriority(&high_stream, cudaStreamNonBlocking, greatest));

  std::printf("\n1. Stream priorities: lower numbers are higher priorities\n");
  std::printf("   the seed says:     %d (high) .. %d (low)\n", kSeedGreatest, kSeedLeast);
  std::printf(
      "   this device says:  %d (greatest) .. %d (least), %d level%s "
      "(cudaDeviceGetStreamPriorityRange)\n",
      greatest, least, levels, levels == 1 ? "" : "s");

  std::vector<int> requests = {100, least + 1};
  if (levels <= 8) {
    for (int p = least; p >= greatest; --p) requests.push_back(p);
  } else {
    requests.insert(requests.end(), {least, least - 1, greatest + 1, greatest});
  }
  requests.insert(requests.end(), {greatest - 1, -100});
  requests.erase(std::unique(requests.begin(), requests.end()), requests.end());

  std::printf("\n   %-10s  %-34s  %s\n", "priority", "cudaStreamCreateWithPriority(p)",
              "torch.cuda.Stream(priority=p)");
  std::printf("   %-10s  %-34s  %s\n", "asked (p)", "gives (cudaStreamGetPriority)",
              "gives (PyTorch's rule)");
  int got_for_plus_100 = 0;
  int got_for_minus_100 = 0;
  for (int p : requests) {
    const int got = created_priority(p);
    if (p == 100) got_for_plus_100 = got;
    if (p == -100) got_for_minus_100 = got;
    const char* note = got == p       ? ""
                       : got == least ? "  clamped to the least"
                                      : "  clamped to the greatest";
    char cuda_column[64];
    std::snprintf(cuda_column, sizeof cuda_column, "%4d%s", got, note);
    const std::string asked = (p > 0 ? "+" : "") + std::to_string(p);
    std::printf("   %9s   %-34s  %4d\n", asked.c_str(), cuda_column, pytorch_priority(p, levels));
  }
  cudaStream_t plain = nullptr;
  CS_CHECK(cudaStreamCreate(&plain));
  std::printf("   cudaStreamCreate (no priority given) gives %d\n", priority_of(plain));
  CS_CHECK(cudaStreamDestroy(plain));
  std::printf("   torch.cuda.Stream.priority_range() would return (%d, %d)\n", 0,
              std::max(-kPyTorchPriorityPools + 1, greatest));

  cs::check_that("clamp_to_greatest", got_for_minus_100 == greatest,
                 "cudaStreamCreateWithPriority(-100) gave " + std::to_string(got_for_minus_100) +
                     ", the greatest priority is " + std::to_string(greatest));
  cs::check_that("clamp_to_least", got_for_plus_100 == least,
                 "cudaStreamCreateWithPriority(+100) gave " + std::to_string(got_for_plus_100) +
                     ", the least priority is " + std::to_string(least));
  std::printf(
      "   The seed's range is the two levels older PyTorch releases offered. Recent ones keep\n"
      "   pools at CUDA priorities 0 .. -%d and map any other p to the nearest (PyTorch's\n"
      "   documentation, c10/cuda/CUDAStream.cpp); chapter 11 shows it through libtorch.\n",
      kPyTorchPriorityPools - 1);

  // --- 2. A short kernel behind a flood -----------------------------------------------------
  int blocks_per_sm = 0;
  CS_CHECK(
      cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks_per_sm, flood_kernel, kThreads, 0));
  const long long resident = static_cast<long long>(blocks_per_sm) * prop.multiProcessorCount;
  const bool fills_threads = blocks_per_sm * kThreads == prop.maxThreadsPerMultiProcessor;
  const long long waves = flood_ms * 1000LL / block_us;
  if (waves * resident > INT_MAX) {
    cs::usage_error("--flood-ms " + std::to_string(flood_ms) + " with --block-us " +
                    std::to_string(block_us) + " needs " + std::to_string(waves * resident) +
                    " blocks on this device, more than one grid holds; use a shorter flood");
  }
  const int flood_blocks = static_cast<int>(waves * resident);

  Lab lab;
  lab.flood_stream = flood_stream;
  lab.short_blocks = prop.multiProcessorCount;
  lab.short_ns = static_cast<unsigned long long>(short_us) * 1000ull;
  lab.settle_us = settle_us;
  int* started = nullptr;
  CS_CHECK(cudaHostAlloc(&started, sizeof(int), cudaHostAllocMapped));
  lab.started_host = started;
  CS_CHECK(cudaHostGetDevicePointer(&lab.started_device, started, 0));
  CS_CHECK(cudaMalloc(&lab.blocks_done, kFloodCounters * sizeof(unsigned int)));
  // The warm-up launch below counts into it too: it must start from zero.
  CS_CHECK(cudaMemset(lab.blocks_done, 0, kFloodCounters * sizeof(unsigned int)));
  CS_CHECK(cudaMalloc(&lab.short_out,
                      static_cast<std::size_t>(lab.short_blocks) * kThreads * sizeof(int)));
  for (cudaEvent_t* event : {&lab.flood_start, &lab.flood_end, &lab.submitted, &lab.finished}) {
    CS_CHECK(cudaEventCreate(event));
  }

  const std::string high_name = "priority " + std::to_string(priority_of(high_stream));
  const std::string low_name = "priority " + std::to_string(priority_of(low_stream));
  std::printf("\n2. A short kernel submitted while a low-priority flood fills the GPU\n");
  std::printf(
      "   flood (%s): %lld waves x %lld blocks (%d per SM by occupancy x %d SMs)\n"
      "     = %d blocks of %d threads, each running %d us: about %d ms of full SMs\n",
      low_name.c_str(), waves, resident, blocks_per_sm, prop.multiProcessorCount, flood_blocks,
      kThreads, block_us, flood_ms);
  std::printf(
      "   short kernel: %d blocks of %d threads, each running %d us, submitted %d us after\n"
      "     the flood's first block started, from a %s stream or a %s one\n",
      lab.short_blocks, kThreads, short_us, settle_us, high_name.c_str(), low_name.c_str());

  // Load both kernels before anything is timed.
  const unsigned long long block_ns = static_cast<unsigned long long>(block_us) * 1000ull;
  flood_kernel<<<1, kThreads, 0, flood_stream>>>(0, lab.started_device, lab.blocks_done);
  CS_CHECK_LAUNCH();
  short_kernel<<<lab.short_blocks, kThreads, 0, flood_stream>>>(0, 0, lab.short_out);
  CS_CHECK_LAUNCH();
  CS_CHECK(cudaStreamSynchronize(flood_stream));

  // One run of each case drawn as a timeline (and a warm-up for the timed runs).
  {
    cs::Timeline timeline;
    timeline.start(flood_stream);
    const std::string flood_row = "flood, " + low_name;
    run_once(lab, flood_blocks, block_ns, high_stream, &timeline, flood_row, "short, " + high_name);
    run_once(lab, flood_blocks, block_ns, low_stream, &timeline, flood_row, "short, " + low_name);
    cs::publish_timeline(timeline.collect(), common,
                         "One flood with the short kernel from the high-priority stream, then one "
                         "with it from the low-priority stream:");
  }

  std::vector<Run> high_runs;
  std::vector<Run> low_runs;
  for (int r = 0; r < repeats; ++r) {
    // Alternate the order, so that a slow drift of the machine touches both cases alike.
    if (r % 2 == 0) {
      high_runs.push_back(run_once(lab, flood_blocks, block_ns, high_stream, nullptr, "", ""));
      low_runs.push_back(run_once(lab, flood_blocks, block_ns, low_stream, nullptr, "", ""));
    } else {
      low_runs.push_back(run_once(lab, flood_blocks, block_ns, low_stream, nullptr, "", ""));
      high_runs.push_back(run_once(lab, flood_blocks, block_ns, high_stream, nullptr, "", ""));
    }
  }
  const Summary high = summarize(high_runs);
  const Summary low = summarize(low_runs);
  std::printf("\n   %-18s  %-16s %-11s %-11s %-14s %s\n", "short kernel from", "latency: median",
              "min", "max", "submitted at", "flood lasted");
  auto print_row = [](const std::string& name, const Summary& s) {
    std::printf("   %-18s  %-16s %-11s %-11s %-14s %s\n", name.c_str(),
                format_ms(s.latency_ms.median).c_str(), format_ms(s.latency_ms.min).c_str(),
                format_ms(s.latency_ms.max).c_str(), format_ms(s.submitted_ms.median).c_str(),
                format_ms(s.flood_ms.median).c_str());
  };
  print_row(high_name, high);
  print_row(low_name, low);
  std::printf(
      "   (latency: from an event recorded just before the short kernel in its own stream\n"
      "    to one just after it; medians of %d runs)\n",
      repeats);
  if (low.submitted_ms.median > 0.5 * low.flood_ms.median) {
    std::printf(
        "   NOTE: the low-priority stream's submission event itself waited for the flood:\n"
        "   that stream shares a hardware queue with the flood's (see chapter 02).\n");
  }

  const double ratio = high.latency_ms.median / low.latency_ms.median;
  const std::string levels_text = std::to_string(levels) + " priority levels";
  if (common.no_timing) {
    cs::check_skipped("priority_latency_ratio", "--no-timing");
  } else if (levels < 2) {
    cs::check_skipped("priority_latency_ratio",
                      "this device has one stream priority level (" + std::to_string(least) +
                          "): priority cannot change the order, so the bar does not apply");
  } else {
    cs::check("priority_latency_ratio", ratio, cs::Compare::at_most, bars::kLatencyRatioMax, "x",
              "high-priority latency / low-priority latency, bar for a device with " + levels_text);
  }
  std::printf("   Priority picks whose pending blocks start when an SM slot frees.");
  if (ratio <= bars::kLatencyRatioMax) {
    std::printf(
        " Here the high-priority\n"
        "   kernel's blocks went ahead of the flood's waiting ones as running flood blocks (%d us\n"
        "   each) finished, and the low-priority kernel waited behind the flood: %.2g times the\n"
        "   latency.\n",
        block_us, 1 / ratio);
  } else {
    std::printf(
        " Here the high-priority\n"
        "   kernel did not get ahead of the flood (latency ratio %.2f): this device or driver did\n"
        "   not act on the priorities.\n",
        ratio);
  }

  // --- 3. Running blocks are not preempted --------------------------------------------------
  std::printf(
      "\n3. One wave of %lld blocks, each running %d ms, holds %s of every SM's %d\n"
      "   thread slots; the high-priority kernel is submitted %d us after it has started\n",
      resident, running_ms, fills_threads ? "all" : "not all", prop.maxThreadsPerMultiProcessor,
      settle_us);
  const unsigned long long running_ns = static_cast<unsigned long long>(running_ms) * 1000000ull;
  std::vector<double> fractions;
  std::vector<double> wave_latency;
  std::vector<double> wave_left;
  for (int r = 0; r < repeats; ++r) {
    const Run run =
        run_once(lab, static_cast<int>(resident), running_ns, high_stream, nullptr, "", "");
    fractions.push_back(run.latency_ms / run.flood_left_ms);
    wave_latency.push_back(run.latency_ms);
    wave_left.push_back(run.flood_left_ms);
  }
  std::printf("   latency %s; the running blocks still had %s to go (medians of %d runs)\n",
              format_ms(cs::median(wave_latency)).c_str(), format_ms(cs::median(wave_left)).c_str(),
              repeats);
  if (common.no_timing) {
    cs::check_skipped("running_blocks_not_preempted", "--no-timing");
  } else if (levels < 2) {
    cs::check_skipped("running_blocks_not_preempted",
                      "this device has one stream priority level: there is no higher priority");
  } else if (!fills_threads) {
    cs::check_skipped("running_blocks_not_preempted",
                      "one wave of flood blocks leaves thread slots free on this device, so the "
                      "short kernel could run beside it");
  } else {
    cs::check("running_blocks_not_preempted", cs::median(fractions), cs::Compare::at_least,
              bars::kNoPreemptionMin, "x",
              "latency / time the running blocks had left: the highest priority waited for them");
  }
  if (cs::median(fractions) >= bars::kNoPreemptionMin) {
    std::printf(
        "   With no block waiting there is nothing to reorder: even the greatest priority waited\n"
        "   for the running blocks to end. The runtime's documentation says the same: priorities\n"
        "   \"do not preempt already-running work\". Keep the low-priority work's blocks "
        "short.\n\n");
  } else {
    std::printf(
        "   The high-priority kernel finished before the running blocks ended: it found free\n"
        "   slots, or running blocks were preempted.\n\n");
  }

  // --- Results -------------------------------------------------------------------------------
  std::printf("Results of all %d short-kernel runs and %d floods:\n", lab.requests, lab.floods);
  cs::report_comparison("short_kernel_results", lab.results);
  cs::check_that("every_flood_block_ran", lab.complete_floods == lab.floods,
                 std::to_string(lab.complete_floods) + " of " + std::to_string(lab.floods) +
                     " floods counted every one of their blocks");

  for (cudaEvent_t event : {lab.flood_start, lab.flood_end, lab.submitted, lab.finished}) {
    CS_CHECK(cudaEventDestroy(event));
  }
  CS_CHECK(cudaFree(lab.short_out));
  CS_CHECK(cudaFree(lab.blocks_done));
  CS_CHECK(cudaFreeHost(started));
  for (cudaStream_t stream : {flood_stream, low_stream, high_stream}) {
    CS_CHECK(cudaStreamDestroy(stream));
  }
  return cs::finish();
}
