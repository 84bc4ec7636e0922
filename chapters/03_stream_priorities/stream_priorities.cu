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
//   1. range: the device's range beside the seed's (an H200: 0 .. -5, six levels); streams created
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
#include <string>
#include <vector>

#include "cuda_streams.hpp"
#include "cuda_streams/device_clock.cuh"
#include "stream_priorities_lab.cuh"

using lab::kThreads;
constexpr int kFloodMaxRegisters = 32;  // 2048 threads x 32 = the 64K registers of an SM

// Kernels

// Holds the calling thread for `ns` nanoseconds of wall time, whatever the clock rate
// (cs::globaltimer_ns() is the GPU's nanosecond clock, from cuda_streams/device_clock.cuh).
__device__ void spin_for(unsigned long long ns) {
  const unsigned long long start = cs::globaltimer_ns();
  while (cs::globaltimer_ns() - start < ns) {
  }
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
    atomicAdd(&blocks_done[blockIdx.x % lab::kFloodCounters], 1u);
  }
  __syncthreads();  // the whole block keeps its slot until thread 0 is done
}

// The latency-sensitive work: a short fixed time per block, then one value per thread.
__global__ void short_kernel(unsigned long long work_ns, int request, int* out) {
  if (threadIdx.x == 0) spin_for(work_ns);
  __syncthreads();
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  out[i] = lab::short_value(request, i);
}

// Part 1: the device's range, and what a stream really gets

int priority_of(cudaStream_t stream) {
  int priority = 0;
  CS_CHECK(cudaStreamGetPriority(stream, &priority));
  return priority;
}

void part_range() {
  // core: range
  int least = 0, greatest = 0;
  CS_CHECK(cudaDeviceGetStreamPriorityRange(&least, &greatest));
  lab::print_range(least, greatest);  // beside the seed's -1 .. 0

  // Every level (or both ends and their neighbours on a device with many), and far outside.
  lab::RangeTable table{least, greatest};  // prints a row per p; counts what the checks need
  for (int p : lab::priorities_to_ask(least, greatest)) {
    cudaStream_t stream = nullptr;
    CS_CHECK(cudaStreamCreateWithPriority(&stream, cudaStreamNonBlocking, p));
    int got = 0;
    CS_CHECK(cudaStreamGetPriority(stream, &got));
    CS_CHECK(cudaStreamDestroy(stream));
    table.add(p, got);
  }
  // end core
  cudaStream_t plain = nullptr;
  CS_CHECK(cudaStreamCreate(&plain));
  std::printf("   cudaStreamCreate (no priority given) gives %d\n", priority_of(plain));
  CS_CHECK(cudaStreamDestroy(plain));

  // A priority inside the range is kept as asked; one outside goes to the nearest end.
  cs::check_that("every_level_kept", table.levels_kept == table.levels_asked, table.kept_note());
  cs::check_that("clamp_to_greatest", table.for_minus_100 == greatest,
                 lab::gave_note(-100, table.for_minus_100, "greatest", greatest));
  cs::check_that("clamp_to_least", table.for_plus_100 == least,
                 lab::gave_note(+100, table.for_plus_100, "least", least));
}

// Part 2: PyTorch's priorities on this device (pure host arithmetic)

// PyTorch keeps stream pools for at most this many priorities (c10/cuda/CUDAStream.h,
// max_compile_time_stream_priorities in recent releases).
constexpr int kPyTorchPriorityPools = 4;

// PyTorch's rule (c10/cuda/CUDAStream.cpp, recent releases): pools of streams at CUDA priorities
// 0, -1, ..., -(pools - 1), pools = min(4, the device's levels); torch.cuda.Stream(priority=p)
// takes a stream from pool clamp(-p, 0, pools - 1).
int pytorch_priority(int requested, int levels) {
  return -std::clamp(-requested, 0, std::min(kPyTorchPriorityPools, levels) - 1);
}

void part_pytorch() {
  int least = 0, greatest = 0;
  CS_CHECK(cudaDeviceGetStreamPriorityRange(&least, &greatest));
  const int levels = least - greatest + 1;
  lab::print_pytorch_header();
  int lost = 0;  // PyTorch priorities that CUDA would not keep as asked on this device
  // core: pytorch
  for (int p : {100, 1, 0, -1, -2, -3, -4, -5, -6, -100}) {
    cudaStream_t stream = nullptr;  // what CUDA itself gives for the same p (part 1's clamp)
    CS_CHECK(cudaStreamCreateWithPriority(&stream, cudaStreamNonBlocking, p));
    int cuda_gives = 0;
    CS_CHECK(cudaStreamGetPriority(stream, &cuda_gives));
    CS_CHECK(cudaStreamDestroy(stream));
    const int torch_gives = pytorch_priority(p, levels);
    lab::print_pytorch_row(p, torch_gives, cuda_gives);
    CS_CHECK(cudaStreamCreateWithPriority(&stream, cudaStreamNonBlocking, torch_gives));
    lost += priority_of(stream) != torch_gives;
    CS_CHECK(cudaStreamDestroy(stream));
  }
  // end core
  cs::check_that("torch_levels_kept", !lost, cs::format("%d of 10 not kept by CUDA", lost));
  // What priority_range() reports: the highest pool, beside this device's own range.
  lab::explain_pytorch(pytorch_priority(-100, levels), least, greatest, kPyTorchPriorityPools);
}

// Part 3: a short kernel behind a low-priority flood, from a high and a low priority stream

// One run: the flood (flood_blocks blocks of block_ns each) from flood_stream, then, once it
// holds the SMs, the short kernel from short_stream, between two events in its own stream;
// drawn on a timeline when `trace` names one.
lab::Run run_once(lab::Bench& b, const lab::Setup& setup, cudaStream_t flood_stream,
                  int flood_blocks, unsigned long long block_ns, cudaStream_t short_stream,
                  const lab::Trace& trace = {}) {
  // core: latency
  const int request = b.prepare(flood_stream);  // clear this run's buffers; the GPU goes idle
  {
    auto span = trace.span(trace.flood_row, "flood", flood_stream);
    CS_CHECK(cudaEventRecord(b.flood_start, flood_stream));
    flood_kernel<<<flood_blocks, kThreads, 0, flood_stream>>>(block_ns, b.started, b.blocks_done);
    CS_CHECK_LAUNCH();
    CS_CHECK(cudaEventRecord(b.flood_end, flood_stream));
  }
  b.wait_until_started();  // the flood's block 0 raised the flag; then --settle-us more
  {
    auto span = trace.span(trace.short_row, "short kernel, submit to finish", short_stream);
    CS_CHECK(cudaEventRecord(b.submitted, short_stream));
    short_kernel<<<setup.sms, kThreads, 0, short_stream>>>(setup.short_ns, request, b.short_out);
    CS_CHECK_LAUNCH();
    CS_CHECK(cudaEventRecord(b.finished, short_stream));
  }
  CS_CHECK(cudaStreamSynchronize(short_stream));
  CS_CHECK(cudaStreamSynchronize(flood_stream));
  // end core
  return b.finish(request, flood_blocks);  // checks both kernels' work, returns the times
}

void part_latency(const lab::Setup& setup, const cs::LaunchEnvironment& env,
                  const cs::CommonOptions& common) {
  int least = 0, greatest = 0;
  CS_CHECK(cudaDeviceGetStreamPriorityRange(&least, &greatest));
  // The short kernel's streams must not share a hardware queue with the flood's, or they would
  // wait behind it before priority could act. On the devices measured, the runtime hands its
  // hardware queues (CUDA_DEVICE_MAX_CONNECTIONS, 8 by default) to new streams in turn (not
  // documented), so three streams created back to back got three different ones.
  // With fewer queues (CUDA_DEVICE_MAX_CONNECTIONS below 3) the check is skipped; where two
  // share one anyway, a short kernel reaches its stream only late in the flood, and it fails.
  // --same-priority (a control) gives the "high" stream the least priority too.
  cudaStream_t flood_stream = nullptr, high = nullptr, low = nullptr;
  CS_CHECK(cudaStreamCreateWithPriority(&flood_stream, cudaStreamNonBlocking, least));
  CS_CHECK(cudaStreamCreateWithPriority(&high, cudaStreamNonBlocking,
                                        setup.same_priority ? least : greatest));
  CS_CHECK(cudaStreamCreateWithPriority(&low, cudaStreamNonBlocking, least));
  const std::string high_name = cs::format("priority %d", priority_of(high));
  const std::string low_name = cs::format("priority %d", priority_of(low));
  lab::print_flood(setup, low_name);

  lab::Bench bench(setup.sms, setup.settle_us);
  // Load both kernels before anything is timed.
  flood_kernel<<<1, kThreads, 0, flood_stream>>>(0, bench.started, bench.blocks_done);
  short_kernel<<<setup.sms, kThreads, 0, flood_stream>>>(0, 0, bench.short_out);
  CS_CHECK_LAUNCH();
  CS_CHECK(cudaStreamSynchronize(flood_stream));
  {
    cs::Timeline timeline;
    timeline.start(flood_stream);
    run_once(bench, setup, flood_stream, setup.flood.blocks, setup.block_ns, high,
             {&timeline, "flood, " + low_name, "short, " + high_name});
    run_once(bench, setup, flood_stream, setup.flood.blocks, setup.block_ns, low,
             {&timeline, "flood, " + low_name, "short, " + low_name});
    lab::publish_latency_timeline(timeline.collect(), common);
  }
  std::vector<lab::Run> high_runs, low_runs;
  for (int i = 0; i < 2 * setup.repeats; ++i) {  // high, low, low, high, ...: drift touches both
    const bool from_high = i % 2 == i / 2 % 2;
    cudaStream_t stream = from_high ? high : low;
    lab::Run run = run_once(bench, setup, flood_stream, setup.flood.blocks, setup.block_ns, stream);
    (from_high ? high_runs : low_runs).push_back(run);
  }
  const lab::Summary hi = lab::summarize(high_runs), lo = lab::summarize(low_runs);
  lab::print_summaries(high_name, hi, low_name, lo, setup.repeats);

  // With several levels, the high-priority kernel's blocks go ahead of the flood's waiting
  // ones: tens of microseconds against the rest of the flood (about 0.002 on an H200). A
  // high-priority kernel held behind the flood in a shared queue would pass for the wrong
  // reason (its latency starts only when the flood ends): that run fails.
  constexpr double kLatencyRatioMax = 0.5;
  const std::string skip = lab::latency_skip_reason(common, env, least - greatest + 1);
  const std::string held = lab::held_up_reason(hi, "high-priority");
  const double ratio = lo.latency.median > 0 ? hi.latency.median / lo.latency.median : 1;
  if (skip.empty() && !held.empty()) cs::check_that("priority_latency_ratio", false, held);
  if (!skip.empty() || held.empty()) {
    cs::check_or_skip(skip, "priority_latency_ratio", ratio, cs::Compare::at_most, kLatencyRatioMax,
                      "x", lab::latency_ratio_note(least - greatest + 1));
  }
  lab::explain_latency(env, ratio, kLatencyRatioMax, hi, lo, setup.block_us);
  bench.report_results();
  for (cudaStream_t stream : {flood_stream, high, low}) CS_CHECK(cudaStreamDestroy(stream));
}

// Part 4: running blocks are not preempted

void part_preemption(const lab::Setup& setup, const cs::LaunchEnvironment& env,
                     const cs::CommonOptions& common) {
  int least = 0, greatest = 0;
  CS_CHECK(cudaDeviceGetStreamPriorityRange(&least, &greatest));
  // core: preemption
  cudaStream_t wave_stream = nullptr, high = nullptr;  // back to back: two queues (part 3 says why)
  CS_CHECK(cudaStreamCreateWithPriority(&wave_stream, cudaStreamNonBlocking, least));
  CS_CHECK(cudaStreamCreateWithPriority(&high, cudaStreamNonBlocking, greatest));
  const lab::Flood& f = setup.flood;
  lab::print_wave(setup, priority_of(high));

  lab::Bench bench(setup.sms, setup.settle_us);
  // The first run loads both kernels; it is not timed.
  run_once(bench, setup, wave_stream, f.resident, setup.running_ns, high);
  std::vector<lab::Run> runs;
  for (int r = 0; r < setup.repeats; ++r) {
    runs.push_back(run_once(bench, setup, wave_stream, f.resident, setup.running_ns, high));
  }
  // end core
  const lab::Summary s = lab::summarize(runs);
  lab::print_wave_latency(s, setup.repeats);

  // Not preempted: the latency is the time the running blocks had left (about 1.0 on an H200);
  // were they preempted, it would be near 0. A short kernel that reached its stream only after
  // the wave (a shared queue) met no running blocks: its fraction is 0, and the check fails.
  constexpr double kNoPreemptionMin = 0.9;
  const std::string skip = lab::preemption_skip_reason(common, env, least - greatest + 1, f);
  const double fraction = s.flood_left.median > 0 ? s.latency.median / s.flood_left.median : 0;
  cs::check_or_skip(skip, "running_blocks_not_preempted", fraction, cs::Compare::at_least,
                    kNoPreemptionMin, "x",
                    "latency / time the running blocks had left: the highest priority waited");
  lab::explain_preemption(env, s, fraction >= kNoPreemptionMin);
  bench.report_results();
  for (cudaStream_t stream : {wave_stream, high}) CS_CHECK(cudaStreamDestroy(stream));
}

int main(int argc, char** argv) {
  lab::Flags flags;
  cs::CommonOptions common;
  cs::Options options("03_stream_priorities", lab::kSummary);  // shown by --help
  cs::Parts parts(options,
                  {{"range", "the device's priority range; out-of-range values are clamped"},
                   {"pytorch", "what torch.cuda.Stream(priority=p) gives on this device"},
                   {"latency", "a short kernel behind a low-priority flood, high vs low"},
                   {"preemption", "running blocks are not preempted"}});
  lab::add_flags(options, &flags);
  cs::add_common_options(options, &common);
  cs::parse_or_exit(options, argc, argv);
  lab::validate(flags);
  const cs::LaunchEnvironment env = cs::launch_environment();  // before the first CUDA call

  const cudaDeviceProp prop = cs::select_device(common.device);
  cs::print_launch_environment(env);
  int per_sm = 0;  // flood blocks one SM holds at once
  CS_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, flood_kernel, kThreads, 0));
  const lab::Setup setup = lab::make_setup(prop, per_sm, flags);

  if (parts.begin("range")) part_range();
  if (parts.begin("pytorch")) part_pytorch();
  if (parts.begin("latency")) part_latency(setup, env, common);
  if (parts.begin("preemption")) part_preemption(setup, env, common);
  return cs::finish();
}
