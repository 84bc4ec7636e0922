// Chapter 12: beyond priorities
//
// Chapter 03 showed what a stream priority cannot do: a high-priority kernel still waits for the
// blocks already running. CUDA 12.4 and later (Hopper for some of it) offer four tools that do
// what priorities cannot: green contexts give a kernel SMs of its own; programmatic dependent
// launch (PDL) lets a kernel start before its predecessor ends; stream memory operations let a
// flag in memory hold and release a stream, without events; a conditional graph node runs a
// loop on the GPU, without a round trip to the host per iteration.
//
// Build and run
//   cmake --preset default && cmake --build --preset default && build/bin/12_beyond_priorities
// clang-format off
//   nvcc -std=c++17 -arch=native -Icommon/include chapters/12_beyond_priorities/beyond_priorities.cu common/src/*.cpp -o 12_beyond_priorities
// clang-format on
//   build/bin/12_beyond_priorities --part green   # one part: green, pdl, memops or graph
//   build/bin/12_beyond_priorities --help         # every flag
//
// What to expect (beyond_priorities_lab.cuh holds flags and helpers; a reader may skip it)
//   1. green: a 20 us kernel submitted into a flood of 20 ms blocks waits for them at the
//      highest priority, and only tens of microseconds in a green context of its own 16 SMs;
//      the flood, left with the other SMs, takes more waves.
//   2. pdl: a chain of kernels whose prologue overlaps the predecessor's tail runs faster with
//      PDL; a chain captured in a graph without a prologue does not; reading the predecessor's
//      output before cudaGridDependencySynchronize reads stale data.
//   3. memops: cuStreamWaitValue32 holds a stream until the host (or another stream, with
//      cuStreamWriteValue32) writes a flag; a wait that nobody satisfies is ended by a watchdog.
//   4. graph: a while loop in one graph launch (a conditional node) against a host loop that
//      synchronizes every iteration to decide whether to go on.
// A part the device or driver cannot run says SKIP: and why. The exit status is 0 when all
// checks pass.

#include <cuda.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "beyond_priorities_lab.cuh"
#include "cuda_streams.hpp"
#include "cuda_streams/device_clock.cuh"

using lab::kThreads;
constexpr int kFloodMaxRegisters = 32;  // 2048 threads x 32 = the 64K registers of an SM

// Kernels

__device__ void spin_for(unsigned long long ns) {  // wall time, whatever the clock rate
  const unsigned long long start = cs::globaltimer_ns();
  while (cs::globaltimer_ns() - start < ns) {
  }
}

// The flood: every block holds its SM slot for block_ns. Block 0 raises `started` (mapped host
// memory) so the host knows the flood runs; `span` collects its first start and its last end.
__global__ void __maxnreg__(kFloodMaxRegisters)
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

__host__ __device__ unsigned int short_value(unsigned int run, int i) {
  return run * 100003u + i;
}

__global__ void short_kernel(unsigned long long work_ns, unsigned int run, unsigned int* out) {
  if (threadIdx.x == 0) spin_for(work_ns);
  __syncthreads();
  out[blockIdx.x * blockDim.x + threadIdx.x] =
      short_value(run, blockIdx.x * blockDim.x + threadIdx.x);
}

// PDL's two device calls exist from compute capability 9.0 (griddepcontrol); without a PDL
// launch they return at once, so the same kernels also run in plain stream order.
__device__ void let_dependent_launch() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  cudaTriggerProgrammaticLaunchCompletion();  // the next kernel may start now (no visibility)
#endif
}
__device__ void wait_for_predecessor() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  cudaGridDependencySynchronize();  // the predecessor has finished, its writes are visible
#endif
}

// One link of a chain: a prologue that does not need the predecessor's output (a stand-in for
// loading weights or setting up shared memory), then the work that does: out = in + 1.
__global__ void chain_step(const unsigned int* in, unsigned int* out, int n,
                           unsigned long long prologue_ns) {
  let_dependent_launch();
  if (threadIdx.x == 0 && prologue_ns > 0) spin_for(prologue_ns);
  __syncthreads();
  wait_for_predecessor();
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    out[i] = in[i] + 1u;
  }
}

__host__ __device__ unsigned int produced_value(unsigned int round, int i) {
  return round * 2654435761u + i;
}

// A producer made slow on purpose, so that a consumer that reads too early loses every time.
__global__ void slow_producer(unsigned int* data, int n, unsigned long long delay_ns,
                              unsigned int round) {
  let_dependent_launch();  // at once: a PDL consumer may start while this one still waits
  if (threadIdx.x == 0) spin_for(delay_ns);
  __syncthreads();
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    data[i] = produced_value(round, i);
  }
}

// out = 3 * data + 1, one element per thread. read_early: reads data before the wait (the bug).
__global__ void consumer(const unsigned int* data, unsigned int* out, int n, bool read_early) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  unsigned int x = (read_early && i < n) ? data[i] : 0u;
  wait_for_predecessor();
  if (i < n) out[i] = 3u * (read_early ? x : data[i]) + 1u;
}

__host__ __device__ unsigned int lcg(unsigned int x) {
  return x * 1664525u + 1013904223u;
}

// One loop iteration: every value takes one step; one thread counts the iteration and decides
// whether to go on, into the conditional node's handle (graph) or into `go_on` (host loop).
__global__ void loop_body(unsigned int* data, int n, unsigned int* counter, unsigned int iterations,
                          cudaGraphConditionalHandle handle, unsigned int* go_on) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    data[i] = lcg(data[i]);
  }
  if (blockIdx.x == 0 && threadIdx.x == 0) {
    const unsigned int more = ++*counter < iterations ? 1u : 0u;
    if (go_on != nullptr)
      *go_on = more;
    else
      cudaGraphSetConditional(handle, more);  // 0 ends the while loop
  }
}

// Part 1: green contexts: SMs of its own for a latency-critical kernel

struct GreenBench {                 // what every run of part 1 shares
  unsigned int* started = nullptr;  // mapped host memory
  unsigned int* blocks_done = nullptr;
  unsigned long long* span = nullptr;
  unsigned int* out = nullptr;
  cs::Comparison results;
  int floods_complete = 0;
};

// One run: the flood into flood_stream; once it holds its SMs, the short kernel into
// short_stream, timed on the host from its launch until cudaStreamSynchronize returns.
std::pair<double, double> flood_and_short(GreenBench& b, cudaStream_t flood_stream,
                                          cudaStream_t short_stream, int flood_blocks,
                                          int short_blocks, const lab::Flags& f, unsigned int run) {
  const unsigned long long span_init[2] = {~0ull, 0ull};
  CS_CHECK(cudaMemcpy(b.span, span_init, sizeof span_init, cudaMemcpyHostToDevice));
  CS_CHECK(cudaMemset(b.blocks_done, 0, sizeof(unsigned int)));
  flood_kernel<<<flood_blocks, kThreads, 0, flood_stream>>>(f.flood_ms * 1000000ull, b.started, run,
                                                            b.blocks_done, b.span);
  CS_CHECK_LAUNCH();
  if (!lab::wait_for_flag(b.started, run)) cs::check_that("flood_started", false, "no flood");
  std::this_thread::sleep_for(std::chrono::milliseconds(1));  // every flood block is running
  const double submitted = cs::host_now_ms();
  short_kernel<<<short_blocks, kThreads, 0, short_stream>>>(f.short_us * 1000ull, run, b.out);
  CS_CHECK_LAUNCH();
  CS_CHECK(cudaStreamSynchronize(short_stream));
  const double latency_ms = cs::host_now_ms() - submitted;
  CS_CHECK(cudaStreamSynchronize(flood_stream));
  unsigned long long span[2] = {0, 0};
  unsigned int done = 0;
  std::vector<unsigned int> got(short_blocks * kThreads), want(got.size());
  CS_CHECK(cudaMemcpy(span, b.span, sizeof span, cudaMemcpyDeviceToHost));
  CS_CHECK(cudaMemcpy(&done, b.blocks_done, sizeof done, cudaMemcpyDeviceToHost));
  CS_CHECK(
      cudaMemcpy(got.data(), b.out, got.size() * sizeof(unsigned int), cudaMemcpyDeviceToHost));
  for (std::size_t i = 0; i < want.size(); ++i) want[i] = short_value(run, static_cast<int>(i));
  cs::accumulate(b.results, cs::compare(got.data(), want.data(), want.size()));
  b.floods_complete += done == static_cast<unsigned int>(flood_blocks) ? 1 : 0;
  return {latency_ms, span[1] > span[0] ? (span[1] - span[0]) / 1e6 : 0.0};
}

void part_green(const lab::Flags& f, int device, int per_sm, const cs::LaunchEnvironment& env,
                const cs::CommonOptions& common, const cs::Parts& parts) {
  if (drv::cuGreenCtxCreate == nullptr)
    return lab::skip_part(parts, "this driver has no green contexts");
  CUdevice dev = 0;
  CU_CHECK(drv::cuDeviceGet(&dev, device));
  CUdevResource all{}, mine{}, rest{};  // the device's SMs; the short kernel's; the flood's
  const CUresult got = drv::cuDeviceGetDevResource(dev, &all, CU_DEV_RESOURCE_TYPE_SM);
  if (got != CUDA_SUCCESS)
    return lab::skip_part(parts, "no green contexts here: " + lab::driver_error(got));
  unsigned int groups = 1;
  const CUresult split = drv::cuDevSmResourceSplitByCount(&mine, &groups, &all, &rest, 0, f.sms);
  if (split != CUDA_SUCCESS || groups != 1 || rest.sm.smCount == 0) {
    cs::usage_error(
        cs::format("--sms %d: this device's %u SMs cannot be split into that many and a "
                   "rest (%s)",
                   f.sms, all.sm.smCount, lab::driver_error(split).c_str()));
  }
  CUdevResourceDesc mine_desc = nullptr, rest_desc = nullptr;
  CU_CHECK(drv::cuDevResourceGenerateDesc(&mine_desc, &mine, 1));
  CU_CHECK(drv::cuDevResourceGenerateDesc(&rest_desc, &rest, 1));
  CUgreenCtx mine_ctx = nullptr, rest_ctx = nullptr;
  CU_CHECK(drv::cuGreenCtxCreate(&mine_ctx, mine_desc, dev, CU_GREEN_CTX_DEFAULT_STREAM));
  CU_CHECK(drv::cuGreenCtxCreate(&rest_ctx, rest_desc, dev, CU_GREEN_CTX_DEFAULT_STREAM));
  CUstream mine_stream = nullptr, rest_stream = nullptr;  // a CUstream is a cudaStream_t
  CU_CHECK(drv::cuGreenCtxStreamCreate(&mine_stream, mine_ctx, CU_STREAM_NON_BLOCKING, 0));
  CU_CHECK(drv::cuGreenCtxStreamCreate(&rest_stream, rest_ctx, CU_STREAM_NON_BLOCKING, 0));
  CUdevResource granted{};  // what the green context really holds
  CU_CHECK(drv::cuGreenCtxGetDevResource(mine_ctx, &granted, CU_DEV_RESOURCE_TYPE_SM));
  std::printf(
      "SMs: %u on the device (partitions of at least %u, in steps of %u); asked %d, the\n"
      "short kernel's green context got %u, the flood's %u.\n",
      all.sm.smCount, all.sm.minSmPartitionSize, all.sm.smCoscheduledAlignment, f.sms,
      granted.sm.smCount, rest.sm.smCount);

  int least = 0, greatest = 0;  // chapter 03's answer: the flood low, the short kernel high
  CS_CHECK(cudaDeviceGetStreamPriorityRange(&least, &greatest));
  cudaStream_t low = nullptr, high = nullptr;
  CS_CHECK(cudaStreamCreateWithPriority(&low, cudaStreamNonBlocking, least));
  CS_CHECK(cudaStreamCreateWithPriority(&high, cudaStreamNonBlocking, greatest));
  GreenBench b;
  CS_CHECK(cudaHostAlloc(&b.started, sizeof(unsigned int), cudaHostAllocMapped));
  CS_CHECK(cudaMalloc(&b.blocks_done, sizeof(unsigned int)));
  CS_CHECK(cudaMalloc(&b.span, 2 * sizeof(unsigned long long)));
  const int flood_blocks = per_sm * static_cast<int>(all.sm.smCount);  // one wave on every SM
  const int short_blocks = static_cast<int>(granted.sm.smCount);
  CS_CHECK(cudaMalloc(&b.out, short_blocks * kThreads * sizeof(unsigned int)));
  std::vector<double> prio_ms, green_ms, full_flood, green_flood;
  unsigned int run = 0;
  for (int r = 0; r <= f.repeats; ++r) {  // r == 0 warms both pairs of streams up
    auto p = flood_and_short(b, low, high, flood_blocks, short_blocks, f, ++run);
    auto g = flood_and_short(b, rest_stream, mine_stream, flood_blocks, short_blocks, f, ++run);
    if (r == 0) continue;
    prio_ms.push_back(p.first), full_flood.push_back(p.second);
    green_ms.push_back(g.first), green_flood.push_back(g.second);
  }
  const double prio = cs::median(prio_ms), green = cs::median(green_ms);
  const int waves = (flood_blocks + per_sm * rest.sm.smCount - 1) / (per_sm * rest.sm.smCount);
  std::printf("A %d us kernel submitted into %d flood blocks of %d ms (medians of %d runs):\n",
              f.short_us, flood_blocks, f.flood_ms, f.repeats);
  lab::print_row(cs::format("highest priority (%d), flood at %d, all SMs shared", greatest, least),
                 prio * 1e3);
  lab::print_row(cs::format("own green context of %u SMs, flood on the other %u",
                            granted.sm.smCount, rest.sm.smCount),
                 green * 1e3);
  std::printf("The flood took %s on all SMs and %s on its %u (%d waves of blocks).\n",
              cs::format_ms(cs::median(full_flood)).c_str(),
              cs::format_ms(cs::median(green_flood)).c_str(), rest.sm.smCount, waves);
  cs::report_comparison("short_kernel_results", b.results);
  cs::check_that(
      "every_flood_block_ran", b.floods_complete == 2 * (f.repeats + 1),
      cs::format("%d of %d floods ran every block", b.floods_complete, 2 * (f.repeats + 1)));
  // Its own SMs: the short kernel waits for no flood block, tens of microseconds against the
  // flood blocks' milliseconds (0.0025 on an H200). With one hardware queue it may wait behind
  // the flood anyway, and under CUDA_LAUNCH_BLOCKING=1 the flood ended before it was submitted.
  constexpr double kGreenLatencyRatioMax = 0.01;
  const double ratio = prio > 0 ? green / prio : 0;
  const std::string one_queue =
      env.max_connections == 1 && ratio > kGreenLatencyRatioMax
          ? "one hardware queue: the short kernel waited behind the flood in it"
          : "";
  cs::check_or_skip(
      cs::first_reason({common.timing_skip_reason(), cs::no_overlap_reason(env), one_queue}),
      "green_latency_ratio", ratio, cs::Compare::at_most, kGreenLatencyRatioMax, "x",
      "latency in a green context / at the highest priority");
  for (cudaStream_t s : {low, high}) CS_CHECK(cudaStreamDestroy(s));
  for (CUstream s : {mine_stream, rest_stream}) CU_CHECK(drv::cuStreamDestroy(s));
  for (CUgreenCtx g : {mine_ctx, rest_ctx}) CU_CHECK(drv::cuGreenCtxDestroy(g));
  CS_CHECK(cudaFreeHost(b.started));
  for (void* p :
       {static_cast<void*>(b.blocks_done), static_cast<void*>(b.span), static_cast<void*>(b.out)})
    CS_CHECK(cudaFree(p));
}

// Part 2: programmatic dependent launch: a kernel starts before its predecessor ends

// Launches `kernel` into `stream`; with pdl, it may start as soon as every block of the kernel
// before it has called cudaTriggerProgrammaticLaunchCompletion (or exited).
template <class... Params, class... Args>
void launch(bool pdl, int blocks, cudaStream_t stream, void (*kernel)(Params...), Args... args) {
  cudaLaunchAttribute attribute{};
  attribute.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attribute.val.programmaticStreamSerializationAllowed = pdl ? 1 : 0;
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(blocks);
  config.blockDim = dim3(kThreads);
  config.stream = stream;
  config.attrs = &attribute;
  config.numAttrs = 1;
  CS_CHECK(cudaLaunchKernelEx(&config, kernel, args...));
}

// Broken and fixed: a PDL consumer reads its producer's output before, or after,
// cudaGridDependencySynchronize.
void pdl_early_read(unsigned int* data, unsigned int* out, int n, int blocks, cudaStream_t stream,
                    int repeats, const cs::LaunchEnvironment& env) {
  std::vector<unsigned int> host(n), want(n);
  constexpr unsigned long long kProducerNs = 2000000;  // 2 ms: the early read loses every time
  cs::Comparison broken, fixed;
  for (int round = 0; round < 2 * repeats; ++round) {
    const bool read_early = round % 2 == 0;
    CS_CHECK(cudaMemsetAsync(data, 0xff, n * sizeof(unsigned int), stream));  // stale data
    slow_producer<<<blocks, kThreads, 0, stream>>>(data, n, kProducerNs, round);
    CS_CHECK_LAUNCH();
    launch(true, blocks, stream, consumer, data, out, n, read_early);
    CS_CHECK(cudaMemcpy(host.data(), out, n * sizeof(unsigned int), cudaMemcpyDeviceToHost));
    for (int i = 0; i < n; ++i) want[i] = 3u * produced_value(round, i) + 1u;
    cs::accumulate(read_early ? broken : fixed, cs::compare(host.data(), want.data(), n));
  }
  std::printf(
      "Reading the producer's output before cudaGridDependencySynchronize: %zu of %zu values "
      "stale.\n",
      broken.wrong, broken.total);
  cs::report_comparison("read_after_sync_results", fixed);
  const std::string blocking =
      env.launch_blocking
          ? "CUDA_LAUNCH_BLOCKING=1: the producer ended before the consumer launched"
          : "";
  if (blocking.empty())
    cs::check_that("read_before_sync_is_stale", broken.wrong > 0,
                   cs::format("%zu of %zu values stale", broken.wrong, broken.total));
  else
    cs::check_skipped("read_before_sync_is_stale", blocking);
}

void part_pdl(const lab::Flags& f, const cudaDeviceProp& prop, const cs::LaunchEnvironment& env,
              const cs::CommonOptions& common, const cs::Parts& parts) {
  if (prop.major < 9)
    return lab::skip_part(parts, "PDL needs compute capability 9.0, this is " +
                                     std::to_string(prop.major) + "." + std::to_string(prop.minor));
  constexpr int kBlocks = 4, n = kBlocks * kThreads;
  cudaStream_t stream = nullptr;
  CS_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  unsigned int *buf[2] = {nullptr, nullptr}, *init = nullptr;
  for (auto** p : {&buf[0], &buf[1], &init}) CS_CHECK(cudaMalloc(p, n * sizeof(unsigned int)));
  std::vector<unsigned int> host(n), want(n);
  for (int i = 0; i < n; ++i) host[i] = i, want[i] = i + f.chain;
  CS_CHECK(cudaMemcpy(init, host.data(), n * sizeof(unsigned int), cudaMemcpyHostToDevice));
  auto chain = [&](bool pdl, unsigned long long prologue_ns) {
    for (int k = 0; k < f.chain; ++k)
      launch(pdl, kBlocks, stream, chain_step, buf[k % 2], buf[(k + 1) % 2], n, prologue_ns);
  };
  cs::Comparison results;
  double per_kernel_us[2][2] = {};  // [in a graph][with PDL]
  for (int in_graph = 0; in_graph < 2; ++in_graph) {
    for (int pdl = 0; pdl < 2; ++pdl) {
      const unsigned long long prologue_ns = in_graph ? 0 : f.prologue_us * 1000ull;
      cudaGraphExec_t exec = nullptr;
      if (in_graph) {  // the same launches, captured: PDL becomes a programmatic edge
        cudaGraph_t graph = nullptr;
        CS_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
        chain(pdl, prologue_ns);
        CS_CHECK(cudaStreamEndCapture(stream, &graph));
        CS_CHECK(cudaGraphInstantiate(&exec, graph, 0));
        CS_CHECK(cudaGraphDestroy(graph));
      }
      const cs::Stats t = cs::time_on_stream_ms(stream, 1, f.repeats, [&] {
        CS_CHECK(cudaMemcpyAsync(buf[0], init, n * sizeof(unsigned int), cudaMemcpyDeviceToDevice,
                                 stream));
        if (in_graph)
          CS_CHECK(cudaGraphLaunch(exec, stream));
        else
          chain(pdl, prologue_ns);
      });
      per_kernel_us[in_graph][pdl] = t.median * 1e3 / f.chain;
      CS_CHECK(cudaMemcpy(host.data(), buf[f.chain % 2], n * sizeof(unsigned int),
                          cudaMemcpyDeviceToHost));
      cs::accumulate(results, cs::compare(host.data(), want.data(), n));
      if (exec != nullptr) CS_CHECK(cudaGraphExecDestroy(exec));
    }
  }
  lab::print_pdl(f.chain, f.prologue_us, per_kernel_us);
  cs::report_comparison("chain_results", results);
  const double with_prologue =
      per_kernel_us[0][0] > 0 ? per_kernel_us[0][1] / per_kernel_us[0][0] : 0;
  const double in_graph = per_kernel_us[1][0] > 0 ? per_kernel_us[1][1] / per_kernel_us[1][0] : 0;
  // The prologue overlaps the predecessor: per kernel at most 0.9 of the plain chain's time.
  // Under CUDA_LAUNCH_BLOCKING=1 each launch returns after its kernel: nothing can overlap.
  constexpr double kPdlGainMax = 0.9;
  const std::string skip =
      cs::first_reason({common.timing_skip_reason(), cs::no_overlap_reason(env)});
  cs::check_or_skip(skip, "pdl_prologue_overlap", with_prologue, cs::Compare::at_most, kPdlGainMax,
                    "x", "per kernel with PDL / without, in a stream, with a prologue");
  // No prologue, in a graph (launches already cheap): nothing to overlap, PDL gains under 10%.
  constexpr double kPdlNoGainMin = 0.9;
  cs::check_or_skip(common.timing_skip_reason(), "pdl_no_gain_in_graph", in_graph,
                    cs::Compare::at_least, kPdlNoGainMin, "x",
                    "per kernel with PDL / without, in a graph, no prologue");

  pdl_early_read(buf[0], buf[1], n, kBlocks, stream, f.repeats, env);
  for (unsigned int* p : {buf[0], buf[1], init}) CS_CHECK(cudaFree(p));
  CS_CHECK(cudaStreamDestroy(stream));
}

// Part 3: stream memory operations: a flag in memory holds and releases a stream

void part_memops(const lab::Flags& f, int device, const cs::CommonOptions& common,
                 const cs::Parts& parts) {
  if (drv::cuStreamWaitValue32 == nullptr)
    return lab::skip_part(parts, "this driver has no stream memory operations");
  cudaStream_t a = nullptr, b = nullptr;
  CS_CHECK(cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking));
  CS_CHECK(cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking));
  unsigned int* flags = nullptr;  // [0] host release, [1] ack, [2] stream release, [3] never
  CS_CHECK(cudaHostAlloc(&flags, 4 * sizeof(unsigned int), cudaHostAllocMapped));
  volatile unsigned int* vflags = flags;
  unsigned int* device_flags = nullptr;
  CS_CHECK(cudaHostGetDevicePointer(&device_flags, flags, 0));
  auto flag = [&](int k) { return reinterpret_cast<CUdeviceptr>(device_flags + k); };
  for (int k = 0; k < 4; ++k) vflags[k] = 0;
  const CUresult probe = drv::cuStreamWriteValue32(a, flag(1), 0, CU_STREAM_WRITE_VALUE_DEFAULT);
  if (probe != CUDA_SUCCESS)
    return lab::skip_part(parts, "no stream memory operations here: " + lab::driver_error(probe));
  (void)device;

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
    const bool acked = lab::wait_for_flag(&vflags[1], r);
    release_us.push_back((cs::host_now_ms() - from) * 1e3);
    guard.cancel();
    fired += guard.fired() || !acked ? 1 : 0;
  }
  CS_CHECK(cudaStreamSynchronize(a));
  const double median_us = cs::median(release_us);
  std::printf("Host writes the flag -> the stream's write arrives back, median of %zu: %.1f us\n",
              release_us.size(), median_us);
  // A stream parked on cuStreamWaitValue32 polls the flag: a release costs microseconds (10 on
  // an H200, a round trip over PCIe included), far below a host synchronization's wake-up.
  constexpr double kReleaseUsMax = 100;
  cs::check_or_skip(
      cs::first_reason({common.timing_skip_reason(),
                        fired ? "the watchdog had to release the wait: the host was blocked" : ""}),
      "release_latency", median_us, cs::Compare::at_most, kReleaseUsMax, " us",
      "host write to the stream's acknowledgement");

  // One stream releases another: B produces, then writes flag 2; A waits for it, then consumes.
  constexpr int n = 4 * kThreads;
  unsigned int *data = nullptr, *out = nullptr;
  CS_CHECK(cudaMalloc(&data, n * sizeof(unsigned int)));
  CS_CHECK(cudaMalloc(&out, n * sizeof(unsigned int)));
  std::vector<unsigned int> got(n), want(n);
  cs::Comparison results;
  bool watchdog_released = false;
  for (unsigned int round = 1; round <= 3; ++round) {
    lab::Watchdog guard(&vflags[2], round, f.watchdog_ms);
    CS_CHECK(cudaMemsetAsync(data, 0xff, n * sizeof(unsigned int), b));
    slow_producer<<<4, kThreads, 0, b>>>(data, n, 2000000ull, round);  // 2 ms
    CS_CHECK_LAUNCH();
    CU_CHECK(drv::cuStreamWriteValue32(b, flag(2), round, CU_STREAM_WRITE_VALUE_DEFAULT));
    CU_CHECK(drv::cuStreamWaitValue32(a, flag(2), round, CU_STREAM_WAIT_VALUE_GEQ));
    consumer<<<4, kThreads, 0, a>>>(data, out, n, false);
    CS_CHECK_LAUNCH();
    CS_CHECK(cudaMemcpyAsync(got.data(), out, n * sizeof(unsigned int), cudaMemcpyDeviceToHost, a));
    CS_CHECK(cudaStreamSynchronize(a));
    guard.cancel();
    watchdog_released = watchdog_released || guard.fired();
    for (int i = 0; i < n; ++i) want[i] = 3u * produced_value(round, i) + 1u;
    cs::accumulate(results, cs::compare(got.data(), want.data(), n));
  }
  CS_CHECK(cudaStreamSynchronize(b));
  cs::report_comparison("stream_release_results", results);
  cs::check_that("released_by_stream", !watchdog_released,
                 "cuStreamWriteValue32 in stream B released stream A, no event");

  // A wait nobody satisfies: without the watchdog, cudaStreamSynchronize would never return.
  lab::Watchdog guard(&vflags[3], 1, f.watchdog_ms);
  CU_CHECK(drv::cuStreamWaitValue32(a, flag(3), 1, CU_STREAM_WAIT_VALUE_GEQ));
  CU_CHECK(drv::cuStreamWriteValue32(a, flag(1), 777, CU_STREAM_WRITE_VALUE_DEFAULT));
  const double from = cs::host_now_ms();
  CS_CHECK(cudaStreamSynchronize(a));
  const double waited = cs::host_now_ms() - from;
  guard.cancel();
  std::printf(
      "A wait for a flag nobody writes: the watchdog wrote it after %d ms; the stream\n"
      "waited %s, then ran the work behind the wait.\n",
      f.watchdog_ms, cs::format_ms(waited).c_str());
  cs::check_that("watchdog_ended_wait", guard.fired() && vflags[1] == 777,
                 "the stream went on after the watchdog's write, and only then");
  CS_CHECK(cudaFree(data));
  CS_CHECK(cudaFree(out));
  CS_CHECK(cudaFreeHost(flags));
  for (cudaStream_t s : {a, b}) CS_CHECK(cudaStreamDestroy(s));
}

// Part 4: a while loop inside one graph launch

void part_graph(const lab::Flags& f, const cs::CommonOptions& common) {
  constexpr int kBlocks = 4, n = kBlocks * kThreads;
  const unsigned int iterations = f.iterations;
  cudaStream_t stream = nullptr;
  CS_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  unsigned int *data = nullptr, *counter = nullptr, *go_on = nullptr, *host_go_on = nullptr;
  CS_CHECK(cudaMalloc(&data, n * sizeof(unsigned int)));
  CS_CHECK(cudaMalloc(&counter, 2 * sizeof(unsigned int)));
  go_on = counter + 1;
  CS_CHECK(cudaMallocHost(&host_go_on, sizeof(unsigned int)));
  std::vector<unsigned int> init(n), want(n), got(n);
  for (int i = 0; i < n; ++i) init[i] = i, want[i] = i;
  for (unsigned int k = 0; k < iterations; ++k)
    for (auto& x : want) x = lcg(x);

  // The graph: one conditional while node; its body graph, made by the node, holds the kernel.
  cudaGraph_t graph = nullptr;
  CS_CHECK(cudaGraphCreate(&graph, 0));
  cudaGraphConditionalHandle handle = 0;  // 1 at every launch: the body runs at least once
  CS_CHECK(cudaGraphConditionalHandleCreate(&handle, graph, 1, cudaGraphCondAssignDefault));
  cudaGraphNodeParams params{};
  params.type = cudaGraphNodeTypeConditional;
  params.conditional.handle = handle;
  params.conditional.type = cudaGraphCondTypeWhile;
  params.conditional.size = 1;
  cudaGraphNode_t loop = nullptr, step = nullptr;
  CS_CHECK(cudaGraphAddNode(&loop, graph, nullptr, nullptr, 0, &params));
  cudaGraph_t body = params.conditional.phGraph_out[0];
  unsigned int* no_go_on = nullptr;
  int count = n;
  void* args[] = {&data,   &count,   &counter, const_cast<unsigned int*>(&iterations),
                  &handle, &no_go_on};
  cudaKernelNodeParams kernel{};
  kernel.func = reinterpret_cast<void*>(loop_body);
  kernel.gridDim = dim3(kBlocks);
  kernel.blockDim = dim3(kThreads);
  kernel.kernelParams = args;
  CS_CHECK(cudaGraphAddKernelNode(&step, body, nullptr, 0, &kernel));
  cudaGraphExec_t exec = nullptr;
  CS_CHECK(cudaGraphInstantiate(&exec, graph, 0));

  cs::Comparison results;
  auto reset = [&] {
    CS_CHECK(cudaMemcpyAsync(data, init.data(), n * sizeof(unsigned int), cudaMemcpyHostToDevice,
                             stream));
    CS_CHECK(cudaMemsetAsync(counter, 0, sizeof(unsigned int), stream));
    CS_CHECK(cudaStreamSynchronize(stream));
  };
  auto verify = [&] {
    CS_CHECK(cudaMemcpy(got.data(), data, n * sizeof(unsigned int), cudaMemcpyDeviceToHost));
    cs::accumulate(results, cs::compare(got.data(), want.data(), n));
  };
  std::vector<double> graph_ms, host_ms;
  for (int r = 0; r <= f.repeats; ++r) {  // r == 0 warms up
    reset();
    double from = cs::host_now_ms();
    CS_CHECK(cudaGraphLaunch(exec, stream));  // every iteration, and the decisions, on the GPU
    CS_CHECK(cudaStreamSynchronize(stream));
    if (r > 0) graph_ms.push_back(cs::host_now_ms() - from);
    verify();
    reset();
    from = cs::host_now_ms();
    do {  // the host decides: launch, copy the decision back, wait for it, read it
      loop_body<<<kBlocks, kThreads, 0, stream>>>(data, n, counter, iterations, 0, go_on);
      CS_CHECK_LAUNCH();
      CS_CHECK(
          cudaMemcpyAsync(host_go_on, go_on, sizeof(unsigned int), cudaMemcpyDeviceToHost, stream));
      CS_CHECK(cudaStreamSynchronize(stream));
    } while (*host_go_on != 0);
    if (r > 0) host_ms.push_back(cs::host_now_ms() - from);
    verify();
  }
  const double graph_us = cs::median(graph_ms) * 1e3 / iterations;
  const double host_us = cs::median(host_ms) * 1e3 / iterations;
  std::printf("%u iterations, per iteration (medians of %d runs):\n", iterations, f.repeats);
  lab::print_row("while node in one graph launch (cudaGraphSetConditional)", graph_us);
  lab::print_row("host loop: launch, copy the decision back, synchronize", host_us);
  cs::report_comparison("loop_results", results);
  // The GPU decides without a round trip to the host per iteration: at most half its time.
  constexpr double kGraphLoopRatioMax = 0.5;
  cs::check_or_skip(common.timing_skip_reason(), "graph_loop_ratio",
                    host_us > 0 ? graph_us / host_us : 0, cs::Compare::at_most, kGraphLoopRatioMax,
                    "x", "per iteration in the graph / in the host loop");
  CS_CHECK(cudaGraphExecDestroy(exec));
  CS_CHECK(cudaGraphDestroy(graph));
  CS_CHECK(cudaFreeHost(host_go_on));
  CS_CHECK(cudaFree(data));
  CS_CHECK(cudaFree(counter));
  CS_CHECK(cudaStreamDestroy(stream));
}

int main(int argc, char** argv) {
  lab::Flags f;
  cs::CommonOptions common;
  cs::Options options("12_beyond_priorities",
                      "Beyond priorities: green contexts, programmatic dependent launch, stream "
                      "memory operations and conditional graph nodes.");
  cs::Parts parts(options,
                  {{"green", "SMs of its own: a green context against the highest priority"},
                   {"pdl", "programmatic dependent launch: where it helps, where not"},
                   {"memops", "a flag in memory holds and releases a stream"},
                   {"graph", "a while loop in one graph launch against a host loop"}});
  lab::add_flags(options, &f);
  cs::add_common_options(options, &common);
  cs::parse_or_exit(options, argc, argv);
  const cs::LaunchEnvironment env = cs::launch_environment();  // before the first CUDA call

  const cudaDeviceProp prop = cs::select_device(common.device);
  cs::print_launch_environment(env);
  drv::load();     // the driver API functions, from the driver the runtime loaded
  int per_sm = 0;  // flood blocks one SM holds at once
  CS_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, flood_kernel, kThreads, 0));

  if (parts.begin("green")) part_green(f, common.device, per_sm, env, common, parts);
  if (parts.begin("pdl")) part_pdl(f, prop, env, common, parts);
  if (parts.begin("memops")) part_memops(f, common.device, common, parts);
  if (parts.begin("graph")) part_graph(f, common);
  return cs::finish();
}
