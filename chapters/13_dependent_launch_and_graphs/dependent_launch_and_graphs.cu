// Chapter 13: programmatic dependent launch and conditional graph nodes
//
// In a stream a kernel starts only after the one before it has ended, and a loop whose end the
// GPU decides costs the host a round trip per iteration. CUDA 12.3 and later (Hopper for the
// first) take both waits out: programmatic dependent launch (PDL) lets a kernel start before its
// predecessor ends (here several kernels' prologues run at once), and it must then call
// cudaGridDependencySynchronize before it reads the predecessor's output; a conditional while
// node runs a loop inside one graph launch, the GPU deciding when to stop. Chapter 12 showed the
// other two answers to what priorities cannot give: green contexts and stream memory operations.
//
// Build and run
//   cmake --preset default && cmake --build --preset default
//   build/bin/13_dependent_launch_and_graphs
// clang-format off
//   nvcc -std=c++17 -arch=native -Icommon/include chapters/13_dependent_launch_and_graphs/dependent_launch_and_graphs.cu common/src/*.cpp -o 13_dependent_launch_and_graphs
// clang-format on
// (-arch=native: code for this machine's GPU; PDL needs sm_90 code, so elsewhere -arch=sm_90)
//   build/bin/13_dependent_launch_and_graphs --part pdl   # one part: pdl or graph
//   build/bin/13_dependent_launch_and_graphs --help       # every flag
//
// What to expect (dependent_launch_and_graphs_lab.cuh: the flags and tables; may be skipped)
//   1. pdl: a chain of kernels with a prologue each runs faster with PDL (several prologues run
//      at once); captured in a graph, PDL becomes programmatic edges; long kernels gain nothing;
//      reading the predecessor's output before cudaGridDependencySynchronize reads stale data,
//      after it the right data.
//   2. graph: a while loop in one graph launch (a conditional node) against a host loop that
//      synchronizes every iteration to decide whether to go on.
// A part the device or driver cannot run says SKIP: and why (alone, with --part, exit 77). The
// exit status is 0 when all checks pass.

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "cuda_streams.hpp"
#include "cuda_streams/device_clock.cuh"
#include "dependent_launch_and_graphs_lab.cuh"

using lab::kThreads;

// Kernels

__device__ void spin_for(unsigned long long ns) {  // wall time, whatever the clock rate
  const unsigned long long start = cs::globaltimer_ns();
  while (cs::globaltimer_ns() - start < ns) {
  }
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
// loading weights or setting up shared memory), then the work that does: out = in + 1, and
// work_ns more of it (a long kernel).
__global__ void chain_step(const unsigned int* in, unsigned int* out, int n,
                           unsigned long long prologue_ns, unsigned long long work_ns) {
  let_dependent_launch();  // first: the next kernel may start now, in turn the one after it...
  if (threadIdx.x == 0 && prologue_ns > 0) spin_for(prologue_ns);
  __syncthreads();
  wait_for_predecessor();
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    out[i] = in[i] + 1u;
  }
  if (threadIdx.x == 0 && work_ns > 0) spin_for(work_ns);
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

// Part 1: programmatic dependent launch: a kernel starts before its predecessor ends

// Launches `kernel` into `stream`; with pdl, it may start as soon as every block of the kernel
// before it has called cudaTriggerProgrammaticLaunchCompletion (or exited).
template <class... Params, class... Args>
void launch(bool pdl, int blocks, cudaStream_t stream, void (*kernel)(Params...), Args... args) {
  cudaLaunchAttribute attribute{};  // core: pdl (10 lines)
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
                    int repeats, bool fixed_only, const cs::LaunchEnvironment& env) {
  std::vector<unsigned int> host(n), want(n);
  constexpr unsigned long long kProducerNs = 2000000;  // 2 ms: the early read loses every time
  cs::Comparison broken, fixed;
  // Round 0 (a fixed one) loads both kernels: a first launch may wait for its kernel to load,
  // and the producer would end before the consumer starts, so no broken round goes first.
  for (int round = 0; round <= 2 * repeats; ++round) {
    const bool read_early = round % 2 == 0 && round > 0;
    if (read_early && fixed_only) continue;
    CS_CHECK(cudaMemsetAsync(data, 0xff, n * sizeof(unsigned int), stream));  // stale data
    slow_producer<<<blocks, kThreads, 0, stream>>>(data, n, kProducerNs, round);
    CS_CHECK_LAUNCH();
    launch(true, blocks, stream, consumer, data, out, n, read_early);
    // In the consumer's stream: a plain cudaMemcpy (legacy default stream) would not wait for
    // a non-blocking stream, and could copy `out` before the consumer wrote it.
    CS_CHECK(cudaMemcpyAsync(host.data(), out, n * sizeof(unsigned int), cudaMemcpyDeviceToHost,
                             stream));
    CS_CHECK(cudaStreamSynchronize(stream));
    for (int i = 0; i < n; ++i) want[i] = 3u * produced_value(round, i) + 1u;
    cs::accumulate(read_early ? broken : fixed, cs::compare(host.data(), want.data(), n));
  }
  std::printf(
      "Reading the producer's output before cudaGridDependencySynchronize: %zu of %zu values "
      "stale.\n",
      broken.wrong, broken.total);
  cs::report_comparison("read_after_sync_results", fixed);
  const std::string skip = cs::first_reason(
      {fixed_only ? "--fixed: the broken consumer did not run" : "",
       env.launch_blocking
           ? "CUDA_LAUNCH_BLOCKING=1: the producer ended before the consumer launched"
           : ""});
  cs::check_that_or_skip(skip, "read_before_sync_is_stale", broken.wrong > 0,
                         cs::format("%zu of %zu values stale", broken.wrong, broken.total));
}

// The chain's launches captured into a graph. `programmatic` gets how many of the graph's edges
// are programmatic (a PDL launch kept by the capture) rather than full-completion edges.
template <class Launches>
cudaGraphExec_t capture(cudaStream_t stream, int kernels, Launches launches,
                        std::size_t* programmatic) {
  cudaGraph_t graph = nullptr;
  CS_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  launches();
  CS_CHECK(cudaStreamEndCapture(stream, &graph));
  std::size_t edges = kernels;  // room for more than a chain has (kernels - 1)
  std::vector<cudaGraphNode_t> from(edges), to(edges);
  std::vector<cudaGraphEdgeData> data(edges);
  CS_CHECK(cudaGraphGetEdges(graph, from.data(), to.data(), data.data(), &edges));
  *programmatic = std::count_if(data.begin(), data.begin() + edges, [](cudaGraphEdgeData e) {
    return e.type == cudaGraphDependencyTypeProgrammatic;
  });
  cudaGraphExec_t exec = nullptr;
  CS_CHECK(cudaGraphInstantiate(&exec, graph, 0));
  CS_CHECK(cudaGraphDestroy(graph));
  return exec;
}

// Without compute_90 code the device calls above are compiled out: no trigger, no wait, no PDL.
bool has_pdl_device_code(const cudaDeviceProp& prop) {
  cudaFuncAttributes kernel{};
  CS_CHECK(cudaFuncGetAttributes(&kernel, chain_step));  // ptxVersion: the arch compiled for
  if (kernel.ptxVersion >= 90) return true;
  cs::check_that("pdl_device_code", false,
                 cs::format("the PDL kernels were compiled for compute_%d; PDL's device calls "
                            "need compute_90 or newer, and this device is %d.%d",
                            kernel.ptxVersion, prop.major, prop.minor));
  std::printf("Build for this GPU: nvcc -arch=native, or cmake -DCMAKE_CUDA_ARCHITECTURES=90\n");
  return false;
}

void part_pdl(const lab::Flags& f, const cudaDeviceProp& prop, const cs::LaunchEnvironment& env,
              const cs::CommonOptions& common, const cs::Parts& parts) {
  if (prop.major < 9)
    return lab::skip_part(parts, "PDL needs compute capability 9.0, this is " +
                                     std::to_string(prop.major) + "." + std::to_string(prop.minor));
  if (!has_pdl_device_code(prop)) return;  // said so, and failed
  constexpr int kBlocks = 4, n = kBlocks * kThreads;
  cudaStream_t stream = nullptr;
  CS_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  unsigned int *buf[2] = {nullptr, nullptr}, *init = nullptr;
  for (auto** p : {&buf[0], &buf[1], &init}) CS_CHECK(cudaMalloc(p, n * sizeof(unsigned int)));
  std::vector<unsigned int> host(n), want(n);
  for (int i = 0; i < n; ++i) host[i] = i;
  CS_CHECK(cudaMemcpyAsync(init, host.data(), n * sizeof(unsigned int), cudaMemcpyHostToDevice,
                           stream));  // in stream order: the chains below copy `init` from it
  const int long_chain = std::min(f.chain, lab::kLongChainMax);  // 50 us each: 100 time it well
  const lab::PdlCase cases[lab::kPdlCases] = {{false, f.prologue_us * 1000ull, 0, f.chain},
                                              {true, 0, 0, f.chain},
                                              {false, 0, lab::kLongKernelUs * 1000ull, long_chain}};
  cs::Comparison results;
  double per_kernel_us[lab::kPdlCases][2] = {};  // [case][with PDL]
  std::size_t programmatic[2] = {};              // edges of the captured chain [with PDL]
  for (int c = 0; c < lab::kPdlCases; ++c) {
    const int kernels = cases[c].kernels;
    for (int i = 0; i < n; ++i) want[i] = i + kernels;
    for (int pdl = 0; pdl < 2; ++pdl) {
      auto chain = [&] {
        for (int k = 0; k < kernels; ++k)
          launch(pdl, kBlocks, stream, chain_step, buf[k % 2], buf[(k + 1) % 2], n,
                 cases[c].prologue_ns, cases[c].work_ns);
      };
      cudaGraphExec_t exec =
          cases[c].in_graph ? capture(stream, kernels, chain, &programmatic[pdl]) : nullptr;
      const cs::Stats t = cs::time_on_stream_ms(stream, 1, f.repeats, [&] {
        CS_CHECK(cudaMemcpyAsync(buf[0], init, n * sizeof(unsigned int), cudaMemcpyDeviceToDevice,
                                 stream));
        if (exec != nullptr)
          CS_CHECK(cudaGraphLaunch(exec, stream));
        else
          chain();
      });
      per_kernel_us[c][pdl] = t.median * 1e3 / kernels;
      CS_CHECK(cudaMemcpy(host.data(), buf[kernels % 2], n * sizeof(unsigned int),
                          cudaMemcpyDeviceToHost));
      cs::accumulate(results, cs::compare(host.data(), want.data(), n));
      if (exec != nullptr) CS_CHECK(cudaGraphExecDestroy(exec));
    }
  }
  lab::print_pdl(f.chain, f.prologue_us, long_chain, per_kernel_us);
  cs::report_comparison("chain_results", results);
  // Prologues run while predecessors run: per kernel at most 0.9 of the plain chain's time.
  // Under CUDA_LAUNCH_BLOCKING=1 each launch returns after its kernel: nothing can overlap. A
  // prologue of a few us is too short to save a tenth of a kernel's time (H200, 1 us: 0.91x).
  constexpr double kPdlGainMax = 0.9;
  constexpr int kMinPrologueUs = 5;
  const std::string skip = cs::first_reason(
      {common.timing_skip_reason(), cs::no_overlap_reason(env),
       f.prologue_us < kMinPrologueUs
           ? cs::format("a %d us prologue is too short to hide a tenth of a kernel's time; the "
                        "bar needs %d us or more",
                        f.prologue_us, kMinPrologueUs)
           : ""});
  cs::check_or_skip(skip, "pdl_prologue_overlap",
                    cs::ratio(per_kernel_us[0][1], per_kernel_us[0][0]), cs::Compare::at_most,
                    kPdlGainMax, "x",
                    "per kernel with PDL / without, in a stream, with a prologue");
  cs::check_that("pdl_edges_in_graph", programmatic[1] == f.chain - 1u && programmatic[0] == 0,
                 cs::format("the capture kept PDL: %zu of the chain's %d edges programmatic (%zu "
                            "without PDL)",
                            programmatic[1], f.chain - 1, programmatic[0]));
  // Kernels of 50 us: PDL removes the gap between them (microseconds), under a tenth of each.
  constexpr double kPdlNoGainMin = 0.9;
  cs::check_or_skip(common.timing_skip_reason(), "pdl_no_gain_long_kernels",
                    cs::ratio(per_kernel_us[2][1], per_kernel_us[2][0]), cs::Compare::at_least,
                    kPdlNoGainMin, "x", "per kernel with PDL / without, 50 us kernels");

  pdl_early_read(buf[0], buf[1], n, kBlocks, stream, f.repeats, f.fixed, env);
  for (unsigned int* p : {buf[0], buf[1], init}) CS_CHECK(cudaFree(p));
  CS_CHECK(cudaStreamDestroy(stream));
}

// Part 2: a while loop inside one graph launch

// The graph of part 2: one conditional while node; its body graph, made by the node, holds one
// kernel that counts the iteration and sets the condition. Returns why this driver cannot (older
// than CUDA 12.3, or cudaErrorNotSupported), or ""; any other error fails, naming the call.
std::string build_while_loop(unsigned int* data, int n, unsigned int* counter,
                             unsigned int iterations, cudaGraph_t* graph, cudaGraphExec_t* exec) {
  int driver = 0;
  CS_CHECK(cudaDriverGetVersion(&driver));
  if (driver < 12030)
    return cs::format("no conditional graph nodes: driver %d.%d older than CUDA 12.3",
                      driver / 1000, driver % 1000 / 10);
  CS_CHECK(cudaGraphCreate(graph, 0));    // core: graph (15 lines)
  cudaGraphConditionalHandle handle = 0;  // 1 at every launch: the body runs at least once
  const char* call = "cudaGraphConditionalHandleCreate(&handle, graph, 1, ...)";
  cudaError_t made =
      cudaGraphConditionalHandleCreate(&handle, *graph, 1, cudaGraphCondAssignDefault);
  cudaGraphNodeParams params{};  // zero: every field this program does not set
  params.type = cudaGraphNodeTypeConditional;
  params.conditional.handle = handle;
  params.conditional.type = cudaGraphCondTypeWhile;
  params.conditional.size = 1;  // one body graph
  cudaGraphNode_t loop = nullptr, step = nullptr;
  if (made == cudaSuccess) {
    call = "cudaGraphAddNode(&loop, graph, ..., &params) (a while node)";
    made = cudaGraphAddNode(&loop, *graph, nullptr, nullptr, 0, &params);
  }
  if (made == cudaErrorNotSupported) {
    (void)cudaGetLastError();  // not sticky: clear it
    CS_CHECK(cudaGraphDestroy(*graph));
    return cs::format("no conditional graph nodes here: %s says cudaErrorNotSupported", call);
  }
  cs::detail::check_cuda(made, call, __FILE__, __LINE__);  // any other error: exit 1
  cudaGraph_t body = params.conditional.phGraph_out[0];    // owned by the node
  unsigned int* no_go_on = nullptr;  // the graph's loop decides through the handle
  void* args[] = {&data, &n, &counter, &iterations, &handle, &no_go_on};
  cudaKernelNodeParams kernel{};  // the node copies the arguments: the locals may go
  kernel.func = reinterpret_cast<void*>(loop_body);
  kernel.gridDim = dim3(n / kThreads);
  kernel.blockDim = dim3(kThreads);
  kernel.kernelParams = args;
  CS_CHECK(cudaGraphAddKernelNode(&step, body, nullptr, 0, &kernel));
  CS_CHECK(cudaGraphInstantiate(exec, *graph, 0));
  return "";
}

void part_graph(const lab::Flags& f, const cs::LaunchEnvironment& env,
                const cs::CommonOptions& common, const cs::Parts& parts) {
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

  cudaGraph_t graph = nullptr;  // the loop, built by build_while_loop() above
  cudaGraphExec_t exec = nullptr;
  const std::string missing = build_while_loop(data, n, counter, iterations, &graph, &exec);
  if (!missing.empty()) {
    for (unsigned int* p : {data, counter}) CS_CHECK(cudaFree(p));
    CS_CHECK(cudaFreeHost(host_go_on));
    CS_CHECK(cudaStreamDestroy(stream));
    return lab::skip_part(parts, missing);
  }

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
  std::vector<double> graph_ms, host_ms, launch_ms;  // launch_ms: the host in cudaGraphLaunch
  for (int r = 0; r <= f.repeats; ++r) {             // r == 0 warms up
    reset();
    double from = cs::host_now_ms();
    CS_CHECK(cudaGraphLaunch(exec, stream));  // every iteration, and the decisions, on the GPU
    if (r > 0) launch_ms.push_back(cs::host_now_ms() - from);
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
  const double host_loop_ms = cs::median(host_ms), graph_launch_ms = cs::median(launch_ms);
  const double graph_us = cs::median(graph_ms) * 1e3 / iterations;
  const double host_us = host_loop_ms * 1e3 / iterations, launch_us = graph_launch_ms * 1e3;
  std::printf("%u iterations, per iteration (medians of %d runs):\n", iterations, f.repeats);
  lab::print_row("while node in one graph launch (cudaGraphSetConditional)", graph_us);
  lab::print_row("host loop: launch, copy the decision back, synchronize", host_us);
  lab::print_row("the host in the graph's one cudaGraphLaunch (whole loop)", launch_us);
  cs::report_comparison("loop_results", results);
  // The GPU decides, not a round trip to the host per iteration (12-13 us on the hosts measured,
  // against 4.7 us per iteration in the graph): 0.75 leaves faster hosts room.
  const std::string skip = cs::first_reason(
      {common.timing_skip_reason(),
       iterations >= 100 ? ""
                         : cs::format("%u iterations cannot hide the graph launch's own cost "
                                      "(about 10 us); the bar needs 100 or more",
                                      iterations)});
  cs::check_or_skip(skip, "graph_loop_ratio", graph_us / host_us, cs::Compare::at_most, 0.75, "x",
                    "per iteration in the graph / in the host loop");
  // The host's part: one call, not a round trip per iteration (unless the launch waits).
  cs::check_or_skip(cs::first_reason({skip, cs::no_overlap_reason(env)}), "graph_loop_host_time",
                    graph_launch_ms / host_loop_ms, cs::Compare::at_most, 0.03, "x",
                    "host time launching the graph / in the host loop");
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
  cs::Options options("13_dependent_launch_and_graphs",
                      "PDL (compute capability 9.0+) and a conditional while node (CUDA 12.3+).");
  cs::Parts parts(options, {{"pdl", "programmatic dependent launch: where it helps, where not"},
                            {"graph", "a while loop in one graph launch against a host loop"}});
  lab::add_flags(options, &f);
  cs::add_common_options(options, &common);
  cs::parse_or_exit(options, argc, argv);  // stdout is line-buffered from here on
  const cs::LaunchEnvironment env = cs::launch_environment();  // before the first CUDA call

  const cudaDeviceProp prop = cs::select_device(common.device);
  cs::print_launch_environment(env);

  if (parts.begin("pdl")) part_pdl(f, prop, env, common, parts);
  if (parts.begin("graph")) part_graph(f, env, common, parts);
  return cs::finish();
}
