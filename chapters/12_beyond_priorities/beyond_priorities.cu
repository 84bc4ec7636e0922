// Chapter 12: beyond priorities: green contexts and stream memory operations
//
// Chapter 03 showed what a stream priority cannot do: a high-priority kernel still waits for the
// blocks already running. CUDA 12.4 and later give a kernel SMs of its own: a green context is
// a context that owns only part of the device's SMs (disjoint SMs: still no promise of concurrency
// or progress, queues are shared). Stream memory operations let a 32-bit flag in memory hold and
// release a stream, an order invisible to CUDA (also order such work with events). Both are driver
// API calls (the runtime API for green contexts arrives in CUDA 13.1); the program takes them
// from the driver the runtime loaded, with cudaGetDriverEntryPointByVersion, so it needs no
// -lcuda. Chapter 13 goes on with programmatic dependent launch and conditional graph nodes.
//
// Build and run
//   cmake --preset default && cmake --build --preset default && build/bin/12_beyond_priorities
// clang-format off
//   nvcc -std=c++17 -arch=native -Icommon/include chapters/12_beyond_priorities/beyond_priorities.cu common/src/*.cpp -o 12_beyond_priorities
// clang-format on
//   build/bin/12_beyond_priorities --part green   # one part: green or memops
//   build/bin/12_beyond_priorities --help         # every flag
//
// What to expect (beyond_priorities_lab.cuh holds the driver functions, flags and helpers; a
// reader may skip it)
//   1. green: a 20 us kernel submitted into a flood of 20 ms blocks waits for them at the
//      highest priority, and only tens of microseconds in a green context of its own 16 SMs;
//      the flood, left with the other SMs, takes more waves.
//   2. memops: cuStreamWaitValue32 holds a stream until the host (or another stream, with
//      cuStreamWriteValue32) writes a flag; a wait that nobody satisfies is ended by a watchdog.
// A part the device or driver cannot run says SKIP: and why (alone, with --part, exit 77). The
// exit status is 0 when all checks pass.

#include <cuda.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "beyond_priorities_lab.cuh"
#include "cuda_streams.hpp"
#include "cuda_streams/device_clock.cuh"

constexpr int kThreads = 128;          // per block, for every kernel of the chapter
constexpr double kFlagWaitMs = 20000;  // a flag the GPU never writes is a bug: stop, not hang

// Kernels

__device__ void spin_for(unsigned long long ns) {  // wall time, whatever the clock rate
  const unsigned long long start = cs::globaltimer_ns();
  while (cs::globaltimer_ns() - start < ns) continue;
}

// The flood: every block holds its SM slot for block_ns. Block 0 raises `started` (mapped host
// memory) so the host knows the flood runs; `span` collects its first start and its last end.
__global__ void __maxnreg__(32)  // 2048 threads x 32 registers = the 64K registers of an SM
    flood_kernel(unsigned long long block_ns, volatile unsigned int* started, unsigned int run,
                 unsigned int* blocks_done, unsigned long long* span) {
  if (threadIdx.x == 0) {
    const unsigned long long begin = cs::globaltimer_ns();
    if (blockIdx.x == 0) {
      *started = run;
      __threadfence_system();
    }
    spin_for(block_ns);
    atomicMin(&span[0], begin);
    atomicMax(&span[1], cs::globaltimer_ns());
    atomicAdd(blocks_done, 1u);
  }
  __syncthreads();  // the whole block keeps its slot until thread 0 is done
}

// The latency-critical kernel: short work, its span on the GPU's clock (span[0] = first block's
// start, span[1] = last block's end) kept for the timeline; out[i] = run * 100003 + i.
__global__ void short_kernel(unsigned long long work_ns, unsigned int run, unsigned int* out,
                             unsigned long long* span) {
  if (threadIdx.x == 0) {
    const unsigned long long begin = cs::globaltimer_ns();
    spin_for(work_ns);
    atomicMin(&span[0], begin);
    atomicMax(&span[1], cs::globaltimer_ns());
  }
  __syncthreads();
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  out[i] = run * 100003u + i;
}

// A producer made slow on purpose (delay_ns), so that a consumer that does not wait loses;
// data[i] = round * 2654435761 + i.
__global__ void slow_producer(unsigned int* data, int n, unsigned long long delay_ns,
                              unsigned int round) {
  if (threadIdx.x == 0) spin_for(delay_ns);
  __syncthreads();
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    data[i] = round * 2654435761u + i;
}

// out = 3 * data + 1, one element per thread.
__global__ void consumer(const unsigned int* data, unsigned int* out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = 3u * data[i] + 1u;
}

// Part 1: green contexts: SMs of its own for a latency-critical kernel

// Part 1's green contexts and their streams: `mine` (--sms SMs), `other` (the rest, the flood's);
// and what every run shares.
struct GreenBench {
  CUdevResource all{}, granted{}, rest{};  // the device's SMs; what each context holds
  CUgreenCtx mine = nullptr, other = nullptr;
  CUstream mine_stream = nullptr, rest_stream = nullptr;  // a CUstream is a cudaStream_t
  int flood_blocks = 0, short_blocks = 0, floods_complete = 0;
  unsigned int *started = nullptr, *blocks_done = nullptr, *out = nullptr;  // started: mapped
  unsigned long long* span = nullptr;  // the flood's first start and last end, then the short's
  cs::TimelineData drawn;              // rows named in part_green, once the SMs of each are known
  cs::Comparison results;
};

// One run: the flood into stream `flood`; once it holds its SMs, the short kernel into `urgent`,
// timed on the host from its launch until cudaStreamSynchronize returns. With row >= 0 the run
// is drawn on rows row (the flood) and row + 1 (the short kernel: waiting, then running).
std::pair<double, double> flood_and_short(GreenBench& b, const lab::Flags& f, cudaStream_t flood,
                                          cudaStream_t urgent, unsigned int run, int row) {
  unsigned long long span[4] = {~0ull, 0ull, ~0ull, 0ull};
  CS_CHECK(cudaMemcpy(b.span, span, sizeof span, cudaMemcpyHostToDevice));
  CS_CHECK(cudaMemset(b.blocks_done, 0, sizeof(unsigned int)));
  CS_CHECK(cudaDeviceSynchronize());  // both in place before the flood's stream starts
  flood_kernel<<<b.flood_blocks, kThreads, 0, flood>>>(f.flood_ms * 1000000ull, b.started, run,
                                                       b.blocks_done, b.span);
  CS_CHECK_LAUNCH();
  if (!cs::wait_for_flag(b.started, run, kFlagWaitMs))
    cs::check_that("flood_started", false, "no flood");
  std::this_thread::sleep_for(std::chrono::milliseconds(1));  // every flood block is running
  const double submitted = cs::host_now_ms();
  short_kernel<<<b.short_blocks, kThreads, 0, urgent>>>(f.short_us * 1000ull, run, b.out,
                                                        b.span + 2);
  CS_CHECK_LAUNCH();
  CS_CHECK(cudaStreamSynchronize(urgent));
  const double latency_ms = cs::host_now_ms() - submitted;
  CS_CHECK(cudaStreamSynchronize(flood));
  unsigned int done = 0;
  std::vector<unsigned int> got(b.short_blocks * kThreads), want(got.size());
  CS_CHECK(cudaMemcpy(span, b.span, sizeof span, cudaMemcpyDeviceToHost));
  CS_CHECK(cudaMemcpy(&done, b.blocks_done, sizeof done, cudaMemcpyDeviceToHost));
  CS_CHECK(cudaMemcpy(got.data(), b.out, got.size() * sizeof got[0], cudaMemcpyDeviceToHost));
  for (std::size_t i = 0; i < want.size(); ++i) want[i] = run * 100003u + i;
  cs::accumulate(b.results, cs::compare(got.data(), want.data(), want.size()));
  b.floods_complete += done == static_cast<unsigned int>(b.flood_blocks) ? 1 : 0;
  auto ms = [&](int k) { return (double(span[k]) - double(span[0])) / 1e6; };  // since the flood
  // "waiting" from the launch, placed at the end less the host-timed latency (a few us early)
  if (row >= 0 && span[1] > span[0] && span[3] > span[2])
    b.drawn.spans.insert(b.drawn.spans.end(),
                         {{row, "flood", "", 0.0, ms(1)},
                          {row + 1, "waiting", "", std::max(0.0, ms(3) - latency_ms), ms(2)},
                          {row + 1, "short", "", ms(2), ms(3)}});
  return {latency_ms, span[1] > span[0] ? (span[1] - span[0]) / 1e6 : 0.0};
}

// Makes the green contexts from the device's SMs; false (having said why) where the part cannot
// run.
bool make_green_contexts(int device, int sms, const cs::Parts& parts, GreenBench& g) {
  if (!drv::green_missing.empty())  // never call a function the driver did not give
    return lab::skip_part(parts, "no green contexts: " + drv::green_missing), false;
  CUdevice dev = 0;
  CU_CHECK(drv::cuDeviceGet(&dev, device));
  const CUresult got = drv::cuDeviceGetDevResource(dev, &g.all, CU_DEV_RESOURCE_TYPE_SM);
  if (got == CUDA_ERROR_NOT_SUPPORTED)  // the driver's word for a device without them
    return lab::skip_part(parts, "no green contexts here", "cuDeviceGetDevResource"), false;
  lab::check_driver(got, "cuDeviceGetDevResource(dev, &all, SM)", __FILE__, __LINE__);
  const unsigned int least = g.all.sm.minSmPartitionSize;
  const unsigned int step = std::max(1u, g.all.sm.smCoscheduledAlignment);
  // --sms as the driver rounds it: a multiple of step, at least least
  const unsigned int asked = std::max(least, (sms + step - 1) / step * step);  // sms >= 1
  if (asked + least > g.all.sm.smCount) {  // --sms leaves none for the flood
    const std::string no_room =
        cs::format("--sms %d: the device's %u SMs cannot give %u and keep %u for the flood", sms,
                   g.all.sm.smCount, asked, least);
    for (auto check : {"short_kernel_results", "every_flood_block_ran", "green_latency_ratio"})
      cs::check_skipped(check, no_room);
    return false;
  }
  CUdevResource mine{};  // core: green (12 lines)
  unsigned int groups = 1;
  CU_CHECK(drv::cuDevSmResourceSplitByCount(&mine, &groups, &g.all, &g.rest, 0, sms));
  if (groups != 1 || g.rest.sm.smCount == 0) cs::usage_error("--sms: no group, or no SMs left");
  CUdevResourceDesc mine_desc = nullptr, rest_desc = nullptr;
  CU_CHECK(drv::cuDevResourceGenerateDesc(&mine_desc, &mine, 1));
  CU_CHECK(drv::cuDevResourceGenerateDesc(&rest_desc, &g.rest, 1));
  CU_CHECK(drv::cuGreenCtxCreate(&g.mine, mine_desc, dev, CU_GREEN_CTX_DEFAULT_STREAM));
  CU_CHECK(drv::cuGreenCtxCreate(&g.other, rest_desc, dev, CU_GREEN_CTX_DEFAULT_STREAM));
  CU_CHECK(drv::cuGreenCtxStreamCreate(&g.mine_stream, g.mine, CU_STREAM_NON_BLOCKING, 0));
  CU_CHECK(drv::cuGreenCtxStreamCreate(&g.rest_stream, g.other, CU_STREAM_NON_BLOCKING, 0));
  CU_CHECK(drv::cuGreenCtxGetDevResource(g.mine, &g.granted, CU_DEV_RESOURCE_TYPE_SM));
  std::printf("SMs: %u on the device (partitions: %u or more, steps of %u); asked %d, got %u\n",
              g.all.sm.smCount, least, g.all.sm.smCoscheduledAlignment, sms, g.granted.sm.smCount);
  return true;
}

void part_green(const lab::Flags& f, int device, int per_sm, const cs::LaunchEnvironment& env,
                const cs::CommonOptions& common, const cs::Parts& parts) {
  GreenBench b;
  if (!make_green_contexts(device, f.sms, parts, b)) return;
  int least = 0, greatest = 0;  // chapter 03's answer: the flood low, the short kernel high
  CS_CHECK(cudaDeviceGetStreamPriorityRange(&least, &greatest));
  cudaStream_t low = nullptr, high = nullptr;
  CS_CHECK(cudaStreamCreateWithPriority(&low, cudaStreamNonBlocking, least));
  CS_CHECK(cudaStreamCreateWithPriority(&high, cudaStreamNonBlocking, greatest));
  b.flood_blocks = per_sm * static_cast<int>(b.all.sm.smCount);  // one wave on every SM
  b.short_blocks = static_cast<int>(b.granted.sm.smCount);
  b.drawn.rows = {cs::format("flood, lowest priority, all %u SMs", b.all.sm.smCount),
                  cs::format("short kernel, highest priority, all %u SMs", b.all.sm.smCount),
                  cs::format("flood, the rest's green context, %u SMs", b.rest.sm.smCount),
                  cs::format("short kernel, its green context, %d SMs", b.short_blocks)};
  CS_CHECK(cudaHostAlloc(&b.started, sizeof(unsigned int), cudaHostAllocMapped));
  CS_CHECK(cudaMalloc(&b.blocks_done, sizeof(unsigned int)));
  CS_CHECK(cudaMalloc(&b.span, 4 * sizeof(unsigned long long)));
  CS_CHECK(cudaMalloc(&b.out, b.short_blocks * kThreads * sizeof(unsigned int)));
  std::vector<double> prio_ms, green_ms, full_flood, green_flood;
  for (int r = 0; r <= f.repeats; ++r) {      // r == 0 warms both pairs of streams up
    const int row = r == f.repeats ? 0 : -1;  // the last runs are drawn on the timeline
    auto p = flood_and_short(b, f, low, high, 2 * r + 1, row);  // run numbers 1, 2, 3, ...
    auto g = flood_and_short(b, f, b.rest_stream, b.mine_stream, 2 * r + 2, row < 0 ? row : 2);
    if (r == 0) continue;
    prio_ms.push_back(p.first), full_flood.push_back(p.second);
    green_ms.push_back(g.first), green_flood.push_back(g.second);
  }
  // The fastest of each: a busy host only adds time.
  const double prio = cs::summarize(prio_ms).min, green = cs::summarize(green_ms).min;
  std::printf(
      "A %d us kernel submitted into %d flood blocks of %d ms (fastest of %d runs):\n"
      "  highest priority (%d), flood at %d, all SMs shared: %s; the flood took %s\n"
      "  own green context, the flood on the other SMs: %s; the flood took %s (%u waves)\n",
      f.short_us, b.flood_blocks, f.flood_ms, f.repeats, greatest, least,
      cs::format_ms(prio).c_str(), cs::format_ms(cs::summarize(full_flood).min).c_str(),
      cs::format_ms(green).c_str(), cs::format_ms(cs::summarize(green_flood).min).c_str(),
      (b.flood_blocks + per_sm * b.rest.sm.smCount - 1) / (per_sm * b.rest.sm.smCount));
  cs::publish_timeline(b.drawn, common, "The last run of each, from its flood's first block");
  cs::report_comparison("short_kernel_results", b.results);
  const int floods = 2 * (f.repeats + 1);
  cs::check_that("every_flood_block_ran", b.floods_complete == floods,
                 cs::format("%d of %d floods ran every block", b.floods_complete, floods));
  // Its own SMs: no flood block in its way, microseconds against milliseconds (an H200's probe:
  // 0.0025). The bar holds where the short kernel and its launch (about 30 us) take at most half
  // of it against its wait at the highest priority: a flood block less the host's 1 ms. One
  // hardware queue may still hold it behind the flood; launch blocking ends the flood first.
  constexpr double kGreenLatencyRatioMax = 0.01;
  const int needed_ms = 1 + int(std::ceil((f.short_us + 30) / (500 * kGreenLatencyRatioMax)));
  const double ratio = cs::ratio(green, prio);
  const std::string too_short =
      cs::format("a %d us kernel against %d ms flood blocks: the bar needs blocks of %d ms or more",
                 f.short_us, f.flood_ms, needed_ms);
  const char* one_queue = "one hardware queue: the short kernel waited behind the flood in it";
  const std::string skip = cs::first_reason(
      {common.timing_skip_reason(), cs::no_overlap_reason(env),
       f.flood_ms >= needed_ms ? "" : too_short,
       env.max_connections == 1 && ratio > kGreenLatencyRatioMax ? one_queue : ""});
  cs::check_or_skip(skip, "green_latency_ratio", ratio, cs::Compare::at_most, kGreenLatencyRatioMax,
                    "x", "latency in a green context / at the highest priority");
  CS_CHECK(cudaStreamDestroy(low));
  CS_CHECK(cudaStreamDestroy(high));
  CU_CHECK(drv::cuStreamDestroy(b.mine_stream));
  CU_CHECK(drv::cuStreamDestroy(b.rest_stream));
  CU_CHECK(drv::cuGreenCtxDestroy(b.mine));
  CU_CHECK(drv::cuGreenCtxDestroy(b.other));
  CS_CHECK(cudaFreeHost(b.started));
  CS_CHECK(cudaFree(b.blocks_done));
  CS_CHECK(cudaFree(b.span));
  CS_CHECK(cudaFree(b.out));
}

// Part 2: stream memory operations: a flag in memory holds and releases a stream

// One stream releases another: B produces, then writes `flag`; A waits for it, then consumes.
void stream_release(cudaStream_t a, cudaStream_t b, volatile unsigned int* vflag, CUdeviceptr flag,
                    int watchdog_ms, bool broken) {
  constexpr int n = 4 * kThreads;
  unsigned int *data = nullptr, *out = nullptr;
  CS_CHECK(cudaMalloc(&data, n * sizeof(unsigned int)));
  CS_CHECK(cudaMalloc(&out, n * sizeof(unsigned int)));
  std::vector<unsigned int> got(n), want(n);
  cs::Comparison results;
  int watchdog_rounds = 0;
  for (unsigned int round = 1; round <= 3; ++round) {
    lab::Watchdog guard(vflag, round, watchdog_ms);  // core: memops (10 lines)
    CS_CHECK(cudaMemsetAsync(data, 0xff, n * sizeof(unsigned int), b));
    slow_producer<<<4, kThreads, 0, b>>>(data, n, 2000000ull, round);  // 2 ms
    CS_CHECK_LAUNCH();
    CU_CHECK(drv::cuStreamWriteValue32(b, flag, round - broken, CU_STREAM_WRITE_VALUE_DEFAULT));
    CU_CHECK(drv::cuStreamWaitValue32(a, flag, round, CU_STREAM_WAIT_VALUE_GEQ));
    consumer<<<4, kThreads, 0, a>>>(data, out, n);
    CS_CHECK_LAUNCH();
    CS_CHECK(cudaMemcpyAsync(got.data(), out, n * sizeof(unsigned int), cudaMemcpyDeviceToHost, a));
    CS_CHECK(cudaStreamSynchronize(a));
    watchdog_rounds += guard.cancel() ? 1 : 0;
    for (int i = 0; i < n; ++i) want[i] = 3u * (round * 2654435761u + i) + 1u;
    cs::accumulate(results, cs::compare(got.data(), want.data(), n));
  }
  CS_CHECK(cudaStreamSynchronize(b));
  cs::report_comparison("stream_release_results", results);
  cs::check_that("released_by_stream", watchdog_rounds == 0,
                 cs::format("%d of 3 rounds released by the watchdog", watchdog_rounds));
  CS_CHECK(cudaFree(data));
  CS_CHECK(cudaFree(out));
}

void part_memops(const lab::Flags& f, const cs::CommonOptions& common, const cs::Parts& parts) {
  if (!drv::memops_missing.empty())  // never call a function the driver did not give
    return lab::skip_part(parts, "no stream memory operations: " + drv::memops_missing);
  cudaStream_t a = nullptr, b = nullptr;
  CS_CHECK(cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking));
  CS_CHECK(cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking));
  // The flags, mapped host memory: [0] host release, [1] ack, [2] stream release, [3] never.
  unsigned int *flags = nullptr, *device_flags = nullptr;
  CS_CHECK(cudaHostAlloc(&flags, 4 * sizeof(unsigned int), cudaHostAllocMapped));
  CS_CHECK(cudaHostGetDevicePointer(&device_flags, flags, 0));
  volatile unsigned int* vflags = flags;
  auto flag = [&](int k) { return reinterpret_cast<CUdeviceptr>(device_flags + k); };
  for (int k = 0; k < 4; ++k) vflags[k] = 0;
  // 32-bit stream memory operations have no device attribute since CUDA 12.0: where the driver
  // has the functions, a device without them answers CUDA_ERROR_NOT_SUPPORTED; anything else fails.
  const CUresult probe = drv::cuStreamWriteValue32(a, flag(1), 0, CU_STREAM_WRITE_VALUE_DEFAULT);
  if (probe == CUDA_ERROR_NOT_SUPPORTED)
    return lab::skip_part(parts, "no stream memory operations here", "cuStreamWriteValue32");
  lab::check_driver(probe, "cuStreamWriteValue32 (the first, a probe)", __FILE__, __LINE__);

  // The host releases a stream: the stream waits for flag 0 >= r, then writes r into flag 1.
  std::vector<double> release_us;
  int fired = 0;
  for (unsigned int r = 1; r <= static_cast<unsigned int>(f.releases) && fired == 0; ++r) {
    lab::Watchdog guard(&vflags[0], r, f.watchdog_ms);  // armed first: the wait may block here
    CU_CHECK(drv::cuStreamWaitValue32(a, flag(0), r, CU_STREAM_WAIT_VALUE_GEQ));
    CU_CHECK(drv::cuStreamWriteValue32(a, flag(1), r, CU_STREAM_WRITE_VALUE_DEFAULT));
    std::this_thread::sleep_for(std::chrono::microseconds(200));  // the stream sits on its wait
    const double from = cs::host_now_ms();
    vflags[0] = r;
    const bool acked = cs::wait_for_flag(&vflags[1], r, kFlagWaitMs);
    release_us.push_back((cs::host_now_ms() - from) * 1e3);
    fired += guard.cancel() || !acked ? 1 : 0;
  }
  CS_CHECK(cudaStreamSynchronize(a));
  const double median_us = cs::median(release_us);
  std::printf("Host writes the flag -> the stream's write arrives back, median of %zu: %.1f us\n",
              release_us.size(), median_us);
  // A stream parked on cuStreamWaitValue32 polls the flag: a release costs microseconds (10 on
  // an H200, a round trip over PCIe included), far below a host synchronization's wake-up. A few
  // releases: one late wake-up of the host thread (the OS ran another) would decide the median.
  constexpr double kReleaseUsMax = 100;
  constexpr int kMinReleases = 5;
  const std::string few =
      cs::format("a median of %d releases: the bar needs %d or more", f.releases, kMinReleases);
  const char* blocked = "the watchdog had to release the wait: the host was blocked";
  cs::check_or_skip(cs::first_reason({common.timing_skip_reason(), fired ? blocked : "",
                                      f.releases >= kMinReleases ? "" : few}),
                    "release_latency", median_us, cs::Compare::at_most, kReleaseUsMax, " us",
                    "host write to the stream's acknowledgement");

  stream_release(a, b, &vflags[2], flag(2), f.watchdog_ms, f.broken);

  // A wait nobody satisfies (flag 3): without the watchdog, cudaStreamSynchronize would never
  // return. Behind the wait the stream writes 777 into flag 1.
  lab::Watchdog guard(&vflags[3], 1, f.watchdog_ms);
  CU_CHECK(drv::cuStreamWaitValue32(a, flag(3), 1, CU_STREAM_WAIT_VALUE_GEQ));
  CU_CHECK(drv::cuStreamWriteValue32(a, flag(1), 777, CU_STREAM_WRITE_VALUE_DEFAULT));
  const double from = cs::host_now_ms();
  CS_CHECK(cudaStreamSynchronize(a));
  const std::string waited = cs::format_ms(cs::host_now_ms() - from);
  guard.cancel();
  cs::check_that("watchdog_ended_wait", guard.fired && vflags[1] == 777,
                 cs::format("the wait ended after %s, the watchdog %s, flag 1 = %u", waited.c_str(),
                            guard.fired ? "fired" : "did not fire", vflags[1]));
  CS_CHECK(cudaFreeHost(flags));
  CS_CHECK(cudaStreamDestroy(a));
  CS_CHECK(cudaStreamDestroy(b));
}

int main(int argc, char** argv) {
  lab::Flags f;
  cs::CommonOptions common;
  cs::Options options("12_beyond_priorities",
                      "Green contexts, stream memory operations (CUDA 12.5 or newer).");
  cs::Parts parts(options,
                  {{"green", "SMs of its own: a green context against the highest priority"},
                   {"memops", "a flag in memory holds and releases a stream"}});
  options.add_int("flood-ms", &f.flood_ms, 1, 50, "green: how long each flood block runs, in ms");
  options.add_int("short-us", &f.short_us, 1, 1000, "green: how long the short kernel runs, in us");
  options.add_int("sms", &f.sms, 1, 256, "green: SMs asked for the short kernel (rounded up)");
  options.add_int("releases", &f.releases, 1, 1000, "memops: host releases of a stream timed");
  options.add_int("watchdog-ms", &f.watchdog_ms, 20, 500, "memops: ms before the watchdog fires");
  options.add_flag("broken", &f.broken, "memops: B writes the previous round's value (a control)");
  options.add_int("repeats", &f.repeats, 1, 20, "timed runs of each case (the fastest counts)");
  cs::add_common_options(options, &common);
  cs::parse_or_exit(options, argc, argv);  // stdout is line-buffered from here on
  const cs::LaunchEnvironment env = cs::launch_environment();  // before the first CUDA call

  cs::select_device(common.device);
  cs::print_launch_environment(env);
  drv::load();     // the driver API functions, from the driver the runtime loaded
  int per_sm = 0;  // flood blocks one SM holds at once
  CS_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, flood_kernel, kThreads, 0));

  if (parts.begin("green")) part_green(f, common.device, per_sm, env, common, parts);
  if (parts.begin("memops")) part_memops(f, common, parts);
  return cs::finish();
}
