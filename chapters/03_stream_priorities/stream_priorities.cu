// Chapter 03: stream priorities
//
// A stream's priority tells the GPU's block scheduler whose *pending* blocks to start first when
// a slot on an SM frees up. It does not stop blocks that are already running. The seed's
// "priority from -1 (high) to 0 (low)" is one particular range (the two levels that older PyTorch
// releases used); every device reports its own through cudaDeviceGetStreamPriorityRange, and a
// value outside it is clamped.
//
// Build and run
//   cmake --preset default && cmake --build --preset default && build/bin/03_stream_priorities
// clang-format off
//   nvcc -std=c++17 -arch=native -Icommon/include chapters/03_stream_priorities/stream_priorities.cu common/src/*.cpp -o 03_stream_priorities
// clang-format on
//   build/bin/03_stream_priorities --part latency   # one part: range, pytorch, latency, preemption
//   build/bin/03_stream_priorities --help           # every flag
//
// What to expect (stream_priorities_lab.cuh holds measurement machinery; a reader may skip it)
//   1. range: the device's range (an H200: 0 .. -5, six levels, not the seed's two); streams
//   created
//      at every level and far outside it, read back: out-of-range values are clamped.
//   2. pytorch: the CUDA priority torch.cuda.Stream(priority=p) gives on this device.
//   3. latency: a short kernel submitted during a 20 ms low-priority flood of short blocks
//      finishes in tens of microseconds from a high-priority stream, after the whole flood from
//      a low-priority one.
//   4. preemption: against one wave of long running blocks even the highest priority waits.
// Every property ends in a CHECK line; the exit status is 0 when all pass.

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <numeric>
#include <string>
#include <vector>

#include "cuda_streams.hpp"
#include "cuda_streams/device_clock.cuh"
#include "stream_priorities_lab.cuh"

constexpr int kFloodMaxRegisters = 32;  // 2048 threads x 32 = the 64K registers of an SM
constexpr int kFloodCounters = 32;      // the flood counts its blocks on a few addresses
constexpr std::size_t kCounterBytes = kFloodCounters * sizeof(unsigned int);
constexpr int kStartTimeoutS = 60;  // generous: compute-sanitizer starts kernels slowly

// Kernels

// Holds the calling thread for `ns` nanoseconds of wall time, whatever the clock rate
// (cs::globaltimer_ns() is the GPU's nanosecond clock, from cuda_streams/device_clock.cuh).
__device__ void spin_for(unsigned long long ns) {
  const unsigned long long start = cs::globaltimer_ns();
  while (cs::globaltimer_ns() - start < ns) continue;
}

// The flood: every block holds its SM slot for block_us, then counts itself. Block 0 raises
// `started` in mapped host memory, so that the host knows the flood is on the GPU, and notes when
// it began in stamps[0] (the picture's time zero on the GPU's clock). Capping its
// registers makes the SM's thread slots, not its registers, limit how many of its blocks fit: a
// full wave of flood blocks then leaves no room for any other block.
__global__ void __maxnreg__(kFloodMaxRegisters)
    flood_kernel(int block_us, volatile unsigned int* started, unsigned int* blocks_done,
                 unsigned long long* stamps) {
  if (threadIdx.x == 0) {
    if (blockIdx.x == 0) {
      stamps[0] = cs::globaltimer_ns();
      *started = 1u;
      __threadfence_system();
    }
    spin_for(block_us * 1000ull);
    atomicAdd(&blocks_done[blockIdx.x % kFloodCounters], 1u);
  }
  __syncthreads();  // the whole block keeps its slot until thread 0 is done
}

// The latency-sensitive work: a short fixed time per block, then one value per thread (for
// request number `request`, which the host checks). stamps[1] keeps when its first block began.
__global__ void short_kernel(int work_us, int request, int* out, unsigned long long* stamps) {
  if (threadIdx.x == 0) atomicMin(&stamps[1], cs::globaltimer_ns());
  if (threadIdx.x == 0) spin_for(work_us * 1000ull);
  __syncthreads();
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  out[i] = request * 1000000 + i;
}

// Part 1: the device's range, and what a stream really gets

void part_range() {
  // core: range
  int least = 0, greatest = 0, inside = 0, kept = 0;  // priorities asked inside, and kept as asked
  CS_CHECK(cudaDeviceGetStreamPriorityRange(&least, &greatest));
  std::printf("   this device says:  %d (greatest) .. %d (least), %d levels\n", greatest, least,
              least - greatest + 1);
  std::printf("   asked (p)   cudaStreamCreateWithPriority(p) gives\n");
  auto ask = [&](int p) {
    cudaStream_t stream = nullptr;
    CS_CHECK(cudaStreamCreateWithPriority(&stream, cudaStreamNonBlocking, p));
    int got = 0;
    CS_CHECK(cudaStreamGetPriority(stream, &got));
    CS_CHECK(cudaStreamDestroy(stream));
    std::printf("   %+9d   %4d%s\n", p, got, got == p ? "" : "  clamped");
    if (p <= least && p >= greatest) inside++, kept += got == p;
    return got;
  };
  const int for_plus_100 = ask(100);
  for (int p = least + 1; p >= greatest - 1; --p) ask(p);  // every level, and one past each end
  const int for_minus_100 = ask(-100);
  // end core
  cudaStream_t plain = nullptr;
  int plain_priority = 0;
  CS_CHECK(cudaStreamCreate(&plain));
  CS_CHECK(cudaStreamGetPriority(plain, &plain_priority));
  CS_CHECK(cudaStreamDestroy(plain));
  std::printf("   cudaStreamCreate (no priority given) gives %d\n", plain_priority);

  // A priority inside the range is kept as asked; one outside goes to the nearest end.
  cs::check_that("every_level_kept", kept == inside,
                 cs::format("%d of the %d priorities asked inside %d .. %d were kept", kept, inside,
                            greatest, least));
  cs::check_that(
      "clamp_to_greatest", for_minus_100 == greatest,
      cs::format("cudaStreamCreateWithPriority(-100) gave %d, the greatest priority is %d",
                 for_minus_100, greatest));
  cs::check_that("clamp_to_least", for_plus_100 == least,
                 cs::format("cudaStreamCreateWithPriority(+100) gave %d, the least priority is %d",
                            for_plus_100, least));
}

// Part 2: PyTorch's priorities on this device (pure host arithmetic)

// PyTorch's rule (c10/cuda/CUDAStream.cpp, recent releases): pools of streams at CUDA priorities
// 0, -1, ..., -(pools - 1), pools = min(4, the device's levels) (4 is
// max_compile_time_stream_priorities); torch.cuda.Stream(priority=p) takes a stream from pool
// clamp(-p, 0, pools - 1).
int pytorch_priority(int requested, int levels) {
  return -std::clamp(-requested, 0, std::min(4, levels) - 1);
}

void part_pytorch() {
  int least = 0, greatest = 0, lost = 0;  // lost: PyTorch priorities CUDA would not keep as asked
  CS_CHECK(cudaDeviceGetStreamPriorityRange(&least, &greatest));
  const int levels = least - greatest + 1;
  std::printf("   asked (p)   torch.cuda.Stream(priority=p)   cudaStreamCreateWithPriority(p)\n");
  // core: pytorch
  for (int p : {100, 1, 0, -1, -2, -3, -4, -5, -6, -100}) {
    cudaStream_t stream = nullptr;  // what CUDA itself gives for the same p (part 1's clamp)
    CS_CHECK(cudaStreamCreateWithPriority(&stream, cudaStreamNonBlocking, p));
    int cuda_gives = 0, torch_kept = 0;
    CS_CHECK(cudaStreamGetPriority(stream, &cuda_gives));
    CS_CHECK(cudaStreamDestroy(stream));
    const int torch_gives = pytorch_priority(p, levels);
    std::printf("   %+9d   %4d%32d\n", p, torch_gives, cuda_gives);
    CS_CHECK(cudaStreamCreateWithPriority(&stream, cudaStreamNonBlocking, torch_gives));
    CS_CHECK(cudaStreamGetPriority(stream, &torch_kept));
    CS_CHECK(cudaStreamDestroy(stream));
    lost += torch_kept != torch_gives;
  }
  // end core
  cs::check_that("torch_levels_kept", !lost, cs::format("%d of 10 not kept by CUDA", lost));
  std::printf(
      "   torch.cuda.Stream.priority_range() would return (0, %d); this device's is (%d, %d)\n",
      pytorch_priority(-100, levels), least, greatest);
}

// Part 3: a short kernel behind a low-priority flood, from a high and a low priority stream

// The buffers and events every run shares, and the tally of what the runs computed.
struct Bench {
  explicit Bench(int short_blocks) : out_count(short_blocks * kThreads) {
    CS_CHECK(cudaHostAlloc(&started_host, sizeof(unsigned int), cudaHostAllocMapped));
    CS_CHECK(cudaHostGetDevicePointer(&started, const_cast<unsigned int*>(started_host), 0));
    CS_CHECK(cudaMalloc(&blocks_done, kCounterBytes));
    CS_CHECK(cudaMalloc(&short_out, out_count * sizeof(int)));
    CS_CHECK(cudaMalloc(&stamps, 2 * sizeof(unsigned long long)));
    // Set now, not only before each run: the warm-up launches count a block and note their start.
    CS_CHECK(cudaMemset(blocks_done, 0, kCounterBytes));
    CS_CHECK(cudaMemset(stamps, 0xff, 2 * sizeof(unsigned long long)));
    CS_CHECK(cudaDeviceSynchronize());  // a legacy-stream memset: non-blocking streams don't wait
    CS_CHECK(cudaEventCreate(&flood_start));
    CS_CHECK(cudaEventCreate(&flood_end));
    CS_CHECK(cudaEventCreate(&submitted));
    CS_CHECK(cudaEventCreate(&finished));
  }
  ~Bench() {
    CS_CHECK(cudaEventDestroy(flood_start));
    CS_CHECK(cudaEventDestroy(flood_end));
    CS_CHECK(cudaEventDestroy(submitted));
    CS_CHECK(cudaEventDestroy(finished));
    CS_CHECK(cudaFree(short_out));
    CS_CHECK(cudaFree(stamps));
    CS_CHECK(cudaFree(blocks_done));
    CS_CHECK(cudaFreeHost(const_cast<unsigned int*>(started_host)));
  }
  Bench(const Bench&) = delete;  // owns its buffers and events

  // Waits until the flood's block 0 has raised the flag, then settle_us more.
  void wait_until_started(int settle_us) const {
    if (!cs::wait_for_flag(started_host, 1u, kStartTimeoutS * 1000.0)) {
      std::fprintf(stderr, "error: the flood kernel did not start within %d s\n", kStartTimeoutS);
      std::exit(cs::kFailExitCode);
    }
    const double settle_until = cs::host_now_ms() + settle_us / 1000.0;
    while (cs::host_now_ms() < settle_until) continue;
  }

  // After a run (both streams synchronized): tallies the flood's blocks and the short kernel's
  // values, and returns the run's times.
  lab::Run finish(int request, int flood_blocks) {
    std::vector<unsigned int> counts(kFloodCounters);
    CS_CHECK(cudaMemcpy(counts.data(), blocks_done, kCounterBytes, cudaMemcpyDeviceToHost));
    full += std::accumulate(counts.begin(), counts.end(), 0LL) == flood_blocks;
    std::vector<int> got(out_count), want(out_count);
    CS_CHECK(cudaMemcpy(got.data(), short_out, out_count * sizeof(int), cudaMemcpyDeviceToHost));
    for (int i = 0; i < out_count; ++i) want[i] = request * 1000000 + i;  // as short_kernel
    cs::accumulate(results, cs::compare(got.data(), want.data(), out_count));
    float at[3] = {};  // submitted, finished, the flood's end
    CS_CHECK(cudaEventElapsedTime(&at[0], flood_start, submitted));
    CS_CHECK(cudaEventElapsedTime(&at[1], flood_start, finished));
    CS_CHECK(cudaEventElapsedTime(&at[2], flood_start, flood_end));
    unsigned long long began[2] = {};  // the flood's block 0, the short kernel's first block
    CS_CHECK(cudaMemcpy(began, stamps, sizeof(began), cudaMemcpyDeviceToHost));
    return {at[0], at[1], at[2], (began[1] - began[0]) * 1e-6};
  }

  // The CHECK lines of every run so far: the short kernel's values, every flood block counted.
  void report() const {
    cs::report_comparison("short_kernel_results", results);
    cs::check_that("every_flood_block_ran", full == runs,
                   cs::format("%d of %d floods counted every one of their blocks", full, runs));
  }

  // The short kernel's threads; the runs (floods) so far, and the floods that counted every one
  // of their blocks.
  int out_count, runs = 0, full = 0;
  unsigned int* started = nullptr;                // the mapped "flood started" flag, for the device
  volatile unsigned int* started_host = nullptr;  // the same flag, for the host
  unsigned int* blocks_done = nullptr;            // the flood's block counters
  int* short_out = nullptr;                       // the short kernel's output
  unsigned long long* stamps = nullptr;           // when the two kernels began (see the kernels)
  // Around the flood, in its stream; around the short kernel, in its own.
  cudaEvent_t flood_start = nullptr, flood_end = nullptr, submitted = nullptr, finished = nullptr;
  cs::Comparison results;
};

// One run: the flood (flood_blocks blocks of block_us each) from flood_stream, then, once it
// holds the SMs, the short kernel from short_stream, between two events in its own stream.
lab::Run run_once(Bench& b, const lab::Setup& setup, cudaStream_t flood_stream, int flood_blocks,
                  int block_us, cudaStream_t short_stream) {
  // Clear the flood's counters, the short kernel's output and its start (to the largest value),
  // let the GPU go idle, lower the flag.
  CS_CHECK(cudaMemsetAsync(b.blocks_done, 0, kCounterBytes, flood_stream));
  CS_CHECK(cudaMemsetAsync(b.short_out, 0xff, b.out_count * sizeof(int), flood_stream));
  CS_CHECK(cudaMemsetAsync(b.stamps, 0xff, 2 * sizeof(unsigned long long), flood_stream));
  CS_CHECK(cudaStreamSynchronize(flood_stream));
  *b.started_host = 0;
  const int request = ++b.runs;  // this run's number, which the short kernel writes
  // core: latency
  CS_CHECK(cudaEventRecord(b.flood_start, flood_stream));
  flood_kernel<<<flood_blocks, kThreads, 0, flood_stream>>>(block_us, b.started, b.blocks_done,
                                                            b.stamps);
  CS_CHECK_LAUNCH();
  CS_CHECK(cudaEventRecord(b.flood_end, flood_stream));
  b.wait_until_started(setup.settle_us);  // the flood's block 0 raised the flag; then settle
  CS_CHECK(cudaEventRecord(b.submitted, short_stream));
  short_kernel<<<setup.sms, kThreads, 0, short_stream>>>(setup.short_us, request, b.short_out,
                                                         b.stamps);
  CS_CHECK_LAUNCH();
  CS_CHECK(cudaEventRecord(b.finished, short_stream));
  CS_CHECK(cudaStreamSynchronize(short_stream));
  CS_CHECK(cudaStreamSynchronize(flood_stream));
  // end core
  return b.finish(request, flood_blocks);  // checks both kernels' work, returns the times
}

void part_latency(const lab::Setup& setup, const cs::LaunchEnvironment& env,
                  const cs::CommonOptions& common) {
  int least = 0, greatest = 0, high_priority = 0, low_priority = 0;
  CS_CHECK(cudaDeviceGetStreamPriorityRange(&least, &greatest));
  const int high_asked = setup.same_priority ? least : greatest;  // --same-priority: a control
  // Created back to back, the three streams got three hardware queues on the devices measured;
  // the lesson says why that matters.
  cudaStream_t flood_stream = nullptr, high = nullptr, low = nullptr;
  CS_CHECK(cudaStreamCreateWithPriority(&flood_stream, cudaStreamNonBlocking, least));
  CS_CHECK(cudaStreamCreateWithPriority(&high, cudaStreamNonBlocking, high_asked));
  CS_CHECK(cudaStreamCreateWithPriority(&low, cudaStreamNonBlocking, least));
  CS_CHECK(cudaStreamGetPriority(high, &high_priority));
  CS_CHECK(cudaStreamGetPriority(low, &low_priority));
  // Lower numbers are higher priorities: the names say which end of the range each one is.
  auto name = [&](int p) {
    return cs::format("priority %d (%s)", p, p == least ? "lowest" : "highest");
  };
  const std::string high_name = name(high_priority), low_name = name(low_priority);
  std::printf(
      "   flood (priority %d): %d waves x %d blocks (%d per SM x %d SMs) of %d threads, "
      "each running %d us\n   short kernel: %d blocks, each running %s, submitted %d us after "
      "the flood's first block started\n",
      low_priority, setup.waves, setup.resident, setup.per_sm, setup.sms, kThreads, setup.block_us,
      setup.sms, cs::format_ms(setup.short_us / 1e3).c_str(), setup.settle_us);

  Bench bench(setup.sms);
  // Load both kernels before anything is timed.
  flood_kernel<<<1, kThreads, 0, flood_stream>>>(0, bench.started, bench.blocks_done, bench.stamps);
  short_kernel<<<setup.sms, kThreads, 0, flood_stream>>>(0, 0, bench.short_out, bench.stamps);
  CS_CHECK_LAUNCH();
  CS_CHECK(cudaStreamSynchronize(flood_stream));
  // One run of each case, drawn: the short kernel waits for SM slots, then runs.
  lab::publish_run(run_once(bench, setup, flood_stream, setup.blocks, setup.block_us, high),
                   low_name, high_name, common);
  lab::publish_run(run_once(bench, setup, flood_stream, setup.blocks, setup.block_us, low),
                   low_name, low_name, common);
  std::vector<lab::Run> high_runs, low_runs;
  for (int i = 0; i < 2 * setup.repeats; ++i) {  // high, low, low, high, ...: drift touches both
    const bool from_high = i % 2 == i / 2 % 2;
    (from_high ? high_runs : low_runs)
        .push_back(run_once(bench, setup, flood_stream, setup.blocks, setup.block_us,
                            from_high ? high : low));
  }
  const lab::Summary hi = lab::summarize(high_runs), lo = lab::summarize(low_runs);
  lab::print_table({{high_name, hi}, {low_name, lo}}, setup.repeats);

  // With several levels, the high-priority kernel's blocks go ahead of the flood's waiting
  // ones: tens of microseconds against the rest of the flood (about 0.002 on an H200). A
  // high-priority kernel held behind the flood in a shared queue would pass for the wrong
  // reason (its latency starts only when the flood ends): that run fails.
  constexpr double kLatencyRatioMax = 0.5;
  const std::string skip = lab::skip_reason(common, env, 3, least - greatest + 1);
  const double ratio = lo.latency > 0 ? hi.latency / lo.latency : 1;
  if (skip.empty() && hi.submitted > 0.75 * hi.flood) {  // held in a shared queue
    cs::check_that("priority_latency_ratio", false,
                   "the high-priority short kernel reached its stream only " +
                       cs::format_ms(hi.submitted) + " into a " + cs::format_ms(hi.flood) +
                       " flood: it waited in the flood's queue");
  } else {
    cs::check_or_skip(skip, "priority_latency_ratio", ratio, cs::Compare::at_most, kLatencyRatioMax,
                      "x", "high-priority latency / low-priority latency");
  }
  bench.report();
  CS_CHECK(cudaStreamDestroy(flood_stream));
  CS_CHECK(cudaStreamDestroy(high));
  CS_CHECK(cudaStreamDestroy(low));
}

// Part 4: running blocks are not preempted

void part_preemption(const lab::Setup& setup, const cs::LaunchEnvironment& env,
                     const cs::CommonOptions& common) {
  int least = 0, greatest = 0, high_priority = 0;
  CS_CHECK(cudaDeviceGetStreamPriorityRange(&least, &greatest));
  std::printf(
      "   one wave of %d blocks, each running %s, holds %s of every SM's thread slots; the short "
      "kernel is submitted %d us after it started\n",
      setup.resident, cs::format_ms(setup.running_ms).c_str(),
      setup.fills_threads ? "all" : "not all", setup.settle_us);
  // core: preemption
  cudaStream_t wave_stream = nullptr, high = nullptr;  // back to back: two queues (part 3 says why)
  CS_CHECK(cudaStreamCreateWithPriority(&wave_stream, cudaStreamNonBlocking, least));
  CS_CHECK(cudaStreamCreateWithPriority(&high, cudaStreamNonBlocking, greatest));
  CS_CHECK(cudaStreamGetPriority(high, &high_priority));
  Bench bench(setup.sms);
  const int wave_us = setup.running_ms * 1000;  // how long each block of the wave runs
  run_once(bench, setup, wave_stream, setup.resident, wave_us, high);  // warm-up, untimed
  std::vector<lab::Run> runs;
  for (int r = 0; r < setup.repeats; ++r) {
    runs.push_back(run_once(bench, setup, wave_stream, setup.resident, wave_us, high));
  }
  // end core
  const lab::Summary s = lab::summarize(runs);
  lab::print_table({{cs::format("priority %d", high_priority), s}}, setup.repeats);

  // Not preempted: the latency is the time the running blocks had left (about 1.0 on an H200);
  // were they preempted, it would be near 0. A short kernel that reached its stream only after
  // the wave (a shared queue) met no running blocks: its fraction is 0, and the check fails.
  constexpr double kNoPreemptionMin = 0.9;
  const std::string skip = cs::first_reason(
      {lab::skip_reason(common, env, 2, least - greatest + 1),
       setup.fills_threads ? "" : "one wave of flood blocks leaves thread slots free here"});
  const double fraction = cs::ratio(s.latency, s.flood_left);
  cs::check_or_skip(skip, "running_blocks_not_preempted", fraction, cs::Compare::at_least,
                    kNoPreemptionMin, "x", "latency / time the running blocks had left");
  bench.report();
  CS_CHECK(cudaStreamDestroy(wave_stream));
  CS_CHECK(cudaStreamDestroy(high));
}

int main(int argc, char** argv) {
  lab::Setup setup;
  cs::CommonOptions common;
  cs::Options options("03_stream_priorities",  // the summary is shown by --help
                      "Stream priorities: range, clamping, PyTorch's mapping, latency in a flood.");
  cs::Parts parts(options,
                  {{"range", "the device's priority range; out-of-range values are clamped"},
                   {"pytorch", "what torch.cuda.Stream(priority=p) gives on this device"},
                   {"latency", "a short kernel behind a low-priority flood, high vs low"},
                   {"preemption", "running blocks are not preempted"}});
  lab::add_flags(options, &setup);
  cs::add_common_options(options, &common);
  cs::parse_or_exit(options, argc, argv);
  lab::validate(setup);
  const cs::LaunchEnvironment env = cs::launch_environment();  // before the first CUDA call

  const cudaDeviceProp prop = cs::select_device(common.device);
  cs::print_launch_environment(env);
  // How many flood blocks one SM holds at once; the flood is sized from it.
  CS_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&setup.per_sm, flood_kernel, kThreads, 0));
  lab::size_flood(prop, &setup);

  if (parts.begin("range")) part_range();
  if (parts.begin("pytorch")) part_pytorch();
  if (parts.begin("latency")) part_latency(setup, env, common);
  if (parts.begin("preemption")) part_preemption(setup, env, common);
  return cs::finish();
}
