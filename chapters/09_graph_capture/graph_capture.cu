// Chapter 09: capturing streams into CUDA graphs
//
// Stream capture (cudaStreamBeginCapture .. cudaStreamEndCapture) does not run the work issued
// into a stream: it records it as a graph. Other streams join the capture by waiting on an event
// recorded in it, so a fork/join across several streams becomes one graph, which is instantiated
// once and replayed many times, each replay one launch. This is the raw CUDA under PyTorch's
// "multistream capture" (torch.cuda.graph around work that forks onto side streams; chapter 11).
//
// Build and run
//   cmake --preset default && cmake --build --preset default && build/bin/09_graph_capture
// clang-format off
//   nvcc -std=c++17 -arch=native -Icommon/include chapters/09_graph_capture/graph_capture.cu common/src/*.cpp -o 09_graph_capture
// clang-format on
//   build/bin/09_graph_capture --part update   # one part: capture, replay, branches, update, ...
//   build/bin/09_graph_capture --help          # every flag
//
// What to expect (graph_capture_lab.cuh holds measurement machinery; a reader may skip it): the
// captured graph's shape (streams + 2 kernel nodes; the events became edges), replays equal to the
// CPU's result, branches side by side (4 spins of 1 ms in ~1 ms), updates in place, a fraction of
// the launch cost per kernel, and the pitfalls (sync during capture, capture modes). Every property
// ends in a CHECK line; the exit status is 0 when all pass.

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "cuda_streams.hpp"
#include "cuda_streams/device_clock.cuh"
#include "graph_capture_lab.cuh"

namespace lab = graph_capture_lab;

constexpr int kBlock = 256;
constexpr unsigned kFirstIncrement = 1;      // the argument captured into the graph
constexpr unsigned kSetParamsIncrement = 7;  // set with cudaGraphExecKernelNodeSetParams
constexpr unsigned kUpdateIncrement = 13;    // re-captured and applied with cudaGraphExecUpdate
constexpr int kWarmup = 2;                   // untimed runs before each timing
constexpr int kRepeats = 10;                 // timed runs; the median is reported

// Kernels: one round of the fork/join is prepare, one branch per stream, combine.

__global__ void prepare(unsigned* x, int n, unsigned increment) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    x[i] = (x[i] + increment) % lab::kModulus;
  }
}

__global__ void branch(const unsigned* x, unsigned* partial, int n, unsigned branch_index) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    partial[i] = (x[i] * (branch_index + 2) + branch_index) % lab::kModulus;
  }
}

__global__ void combine(unsigned* x, const unsigned* partials, int n, int branches) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    unsigned sum = 0;
    for (int b = 0; b < branches; ++b) sum += partials[static_cast<std::size_t>(b) * n + i];
    x[i] = sum % lab::kModulus;
  }
}

// As small as a kernel gets: its launch is all that it costs.
__global__ void tick(int* counter) {
  *counter += 1;
}

// Waits `ns` on the GPU's nanosecond clock (cs::globaltimer_ns()); writes its start and end.
__global__ void spin(unsigned long long ns, unsigned long long* times) {
  const unsigned long long start = cs::globaltimer_ns();
  unsigned long long now = start;
  while (now - start < ns) now = cs::globaltimer_ns();
  times[0] = start;
  times[1] = now;
}

// One round of the fork/join, issued into the streams. The same code runs from the streams and
// under capture. The fork and the join are events:
//   origin:   prepare, record fork, branch 0, wait every join, combine
//   stream s: wait fork, branch s, record join s
// `timeline` draws a run from the streams (under capture its events would become part of the
// graph); `observe` is called after the fork is recorded and after the other streams waited.
void issue_fork_join(lab::ForkJoin& fj, unsigned increment, cs::Timeline* timeline = nullptr,
                     const std::function<void(const char*)>& observe = nullptr) {
  cudaStream_t origin = fj.origin();
  const int grid = std::min((fj.n + kBlock - 1) / kBlock, 1024);
  auto row = [](int s) { return s == 0 ? std::string("origin") : cs::format("stream %d", s); };
  cs::TimelineSpan span;
  if (timeline) span = timeline->span(row(0), "kernel", origin, "prepare");
  prepare<<<grid, kBlock, 0, origin>>>(fj.x, fj.n, increment);  // core: capture (21 lines)
  CS_CHECK_LAUNCH();
  span.end();
  CS_CHECK(cudaEventRecord(fj.fork, origin));  // fork
  if (observe) observe("after BeginCapture");
  for (int s = 1; s < fj.branches(); ++s) CS_CHECK(cudaStreamWaitEvent(fj.streams[s], fj.fork, 0));
  if (observe) observe("stream 1 waited on 'fork'");
  for (int s = 0; s < fj.branches(); ++s) {
    if (timeline) span = timeline->span(row(s), "kernel", fj.streams[s], "branch");
    branch<<<grid, kBlock, 0, fj.streams[s]>>>(
        fj.x, fj.partials + static_cast<std::size_t>(s) * fj.n, fj.n, static_cast<unsigned>(s));
    CS_CHECK_LAUNCH();
    span.end();
  }
  for (int s = 1; s < fj.branches(); ++s) {  // join
    CS_CHECK(cudaEventRecord(fj.joins[s], fj.streams[s]));
    CS_CHECK(cudaStreamWaitEvent(origin, fj.joins[s], 0));
  }
  if (timeline) span = timeline->span(row(0), "kernel", origin, "combine");
  combine<<<grid, kBlock, 0, origin>>>(fj.x, fj.partials, fj.n, fj.branches());
  CS_CHECK_LAUNCH();
}

// Part 1: a fork/join over several streams, run from the streams, then captured into one graph
void part_capture(lab::ForkJoin& fj, const std::string& dot_path, const cs::CommonOptions& common) {
  cudaStream_t origin = fj.origin();
  lab::reset(fj);
  cs::Timeline timeline;
  timeline.start(origin);
  issue_fork_join(fj, kFirstIncrement, &timeline);
  cs::publish_timeline(timeline.collect(), common,
                       "The fork/join issued into streams (prepare, branches, combine):");
  lab::run_on_cpu(fj, kFirstIncrement, 1);
  lab::verify("eager_results", fj);

  // cudaStreamIsCapturing for the origin and stream 1 at each step; a stream joins the capture
  // when it waits on an event recorded in it, and EndCapture ends it for every stream.
  std::vector<std::string> seen;
  auto observe = [&](const char* step) {
    cudaStreamCaptureStatus in_origin = cudaStreamCaptureStatusNone, in_1 = in_origin;
    CS_CHECK(cudaStreamIsCapturing(origin, &in_origin));
    CS_CHECK(cudaStreamIsCapturing(fj.streams[1], &in_1));
    std::printf("   %-27s %-8s %s\n", step, lab::status_name(in_origin), lab::status_name(in_1));
    seen.push_back(std::string(lab::status_name(in_origin)) + "/" + lab::status_name(in_1));
  };
  std::printf("\n   cudaStreamIsCapturing       origin   stream 1\n");
  observe("before BeginCapture");
  CS_CHECK(cudaStreamBeginCapture(origin, cudaStreamCaptureModeGlobal));
  issue_fork_join(fj, kFirstIncrement, nullptr, observe);
  cudaGraph_t graph = nullptr;
  CS_CHECK(cudaStreamEndCapture(origin, &graph));
  observe("after EndCapture");
  const std::vector<std::string> documented = {"None/None", "Active/None", "Active/Active",
                                               "None/None"};
  cs::check_that("capture_status", seen == documented,
                 "a stream joins the capture when it waits on an event recorded in it, and "
                 "EndCapture ends it for all");

  // Every kernel becomes a node; every wait on an event becomes edges: prepare -> each branch,
  // each branch -> combine. The events themselves are not nodes.
  const lab::GraphShape shape = lab::shape_of(graph);
  lab::print_shape(shape);
  const std::size_t streams = static_cast<std::size_t>(fj.branches());
  const std::size_t want_nodes = streams + 2;
  const std::size_t want_edges = 2 * streams;
  cs::check_that("graph_shape",
                 shape.nodes == want_nodes && shape.kernel_nodes == want_nodes &&
                     shape.edges == want_edges && shape.roots == 1 && shape.leaves == 1 &&
                     shape.middle == streams,
                 cs::format("prepare -> %zu parallel branches -> combine: %zu kernel nodes, "
                            "%zu edges",
                            streams, want_nodes, want_edges));
  if (!dot_path.empty()) lab::write_dot(graph, dot_path);  // cudaGraphDebugDotPrint
  CS_CHECK(cudaGraphDestroy(graph));
}

// Part 2: instantiate once, replay many times
void part_replay(lab::ForkJoin& fj, int replays) {
  cudaStream_t origin = fj.origin();
  lab::reset(fj);
  cudaGraph_t graph = nullptr;  // core: replay (8 lines)
  CS_CHECK(cudaStreamBeginCapture(origin, cudaStreamCaptureModeGlobal));
  issue_fork_join(fj, kFirstIncrement);
  CS_CHECK(cudaStreamEndCapture(origin, &graph));
  // Instantiation checks the graph and prepares all of its launches, once.
  cudaGraphExec_t graph_exec = nullptr;
  CS_CHECK(cudaGraphInstantiate(&graph_exec, graph, 0));
  for (int r = 0; r < replays; ++r) CS_CHECK(cudaGraphLaunch(graph_exec, origin));
  // The CPU runs `replays` rounds, not one more: the capture itself ran nothing.
  lab::run_on_cpu(fj, kFirstIncrement, replays);
  lab::verify("replay_results", fj);
  CS_CHECK(cudaGraphExecDestroy(graph_exec));
  CS_CHECK(cudaGraphDestroy(graph));
}

// Part 3: a replay runs the graph's branches side by side
void part_branches(lab::ForkJoin& fj, const cs::CommonOptions& common) {
  // Each branch spins 1 ms, far longer than a launch: a fork's time says how many ran at once.
  constexpr unsigned long long kBranchNs = 1000000;
  const double branch_ms = static_cast<double>(kBranchNs) / 1e6;
  const int branches = fj.branches();
  cudaStream_t origin = fj.origin();
  unsigned long long* times = nullptr;  // each branch's start and end on the global timer
  const std::size_t times_bytes = 2 * sizeof(*times) * static_cast<std::size_t>(branches);
  CS_CHECK(cudaMalloc(&times, times_bytes));
  auto fork_of_waits = [&] {  // core: branches (19 lines)
    CS_CHECK(cudaEventRecord(fj.fork, origin));
    for (int s = 0; s < branches; ++s) {
      if (s > 0) CS_CHECK(cudaStreamWaitEvent(fj.streams[s], fj.fork, 0));
      spin<<<1, 1, 0, fj.streams[s]>>>(kBranchNs, times + 2 * s);
      CS_CHECK_LAUNCH();
    }
    for (int s = 1; s < branches; ++s) {
      CS_CHECK(cudaEventRecord(fj.joins[s], fj.streams[s]));
      CS_CHECK(cudaStreamWaitEvent(origin, fj.joins[s], 0));
    }
  };
  cudaGraph_t graph = nullptr;
  CS_CHECK(cudaStreamBeginCapture(origin, cudaStreamCaptureModeGlobal));
  fork_of_waits();
  CS_CHECK(cudaStreamEndCapture(origin, &graph));
  cudaGraphExec_t graph_exec = nullptr;
  CS_CHECK(cudaGraphInstantiate(&graph_exec, graph, 0));
  auto replay = [&] { CS_CHECK(cudaGraphLaunch(graph_exec, origin)); };
  // Timed by events in the origin stream, which waits for every branch (the join).
  const double streams_ms = cs::time_on_stream_ms(origin, kWarmup, kRepeats, fork_of_waits).median;
  const double graph_ms = cs::time_on_stream_ms(origin, kWarmup, kRepeats, replay).median;
  const double graph_at_once = graph_ms > 0 ? branches * branch_ms / graph_ms : 0;
  lab::print_branches(branches, branch_ms, kRepeats, streams_ms, graph_ms);
  // One more replay, its spins' clock readings cleared first: did every branch spin its time?
  CS_CHECK(cudaMemsetAsync(times, 0, times_bytes, origin));
  replay();
  const double shortest_ms = lab::shortest_spin_ms(times, branches, origin);
  cs::check_that("graph_branches_spun", shortest_ms >= branch_ms,
                 cs::format("each of the %d branches' spin kernels ran 1.00 ms or more on the "
                            "global timer in a replay (shortest %.3f ms)",
                            branches, shortest_ms));
  // The graph runs its independent branches side by side: at least half of them at once (one SM
  // each; the device has far more), never more than all (5% for the timers' steps).
  const std::string skip = common.timing_skip_reason();
  cs::check_or_skip(skip, "graph_branches_concurrent", graph_at_once, cs::Compare::at_least,
                    0.5 * branches, "", "branches at once in a replay: branches x 1 ms / its time");
  cs::check_or_skip(skip, "graph_branches_within_ideal", graph_at_once, cs::Compare::at_most,
                    1.05 * branches, "", "all branches at once: a replay lasts a branch at least");
  CS_CHECK(cudaFree(times));
  CS_CHECK(cudaGraphExecDestroy(graph_exec));
  CS_CHECK(cudaGraphDestroy(graph));
}

// Part 4: change the instantiated graph without instantiating it again
void part_update(lab::ForkJoin& fj, int replays) {
  cudaStream_t origin = fj.origin();
  lab::reset(fj);
  cudaGraph_t graph = nullptr;
  CS_CHECK(cudaStreamBeginCapture(origin, cudaStreamCaptureModeGlobal));
  issue_fork_join(fj, kFirstIncrement);
  CS_CHECK(cudaStreamEndCapture(origin, &graph));
  cudaGraphExec_t graph_exec = nullptr;
  CS_CHECK(cudaGraphInstantiate(&graph_exec, graph, 0));

  // One node: the root is the prepare kernel; its third argument is the increment. The function
  // stays prepare; only the arguments change, and the runtime copies them now.
  cudaKernelNodeParams params{};  // core: update (13 lines)
  const cudaGraphNode_t root = lab::shape_of(graph).root;
  CS_CHECK(cudaGraphKernelNodeGetParams(root, &params));
  unsigned* x_argument = fj.x;
  int n_argument = fj.n;
  unsigned increment_argument = kSetParamsIncrement;
  void* arguments[] = {&x_argument, &n_argument, &increment_argument};
  params.func = reinterpret_cast<void*>(prepare);
  params.kernelParams = arguments;
  params.extra = nullptr;
  CS_CHECK(cudaGraphExecKernelNodeSetParams(graph_exec, root, &params));
  lab::print_set_params(params, kSetParamsIncrement, kFirstIncrement);
  for (int r = 0; r < replays; ++r) CS_CHECK(cudaGraphLaunch(graph_exec, origin));
  lab::run_on_cpu(fj, kSetParamsIncrement, replays);
  lab::verify("set_params_results", fj);

  // The whole graph: capture the same fork/join with another argument and copy its parameters
  // into the executable graph. The topology must be the same; the result says whether it was.
  cudaGraph_t recaptured = nullptr;
  CS_CHECK(cudaStreamBeginCapture(origin, cudaStreamCaptureModeGlobal));
  issue_fork_join(fj, kUpdateIncrement);
  CS_CHECK(cudaStreamEndCapture(origin, &recaptured));
  cudaGraphExecUpdateResultInfo info{};
  const cudaError_t update_status = cudaGraphExecUpdate(graph_exec, recaptured, &info);
  const bool updated = update_status == cudaSuccess && info.result == cudaGraphExecUpdateSuccess;
  if (!updated) (void)cudaGetLastError();
  cs::check_that("exec_update", updated, lab::update_detail(kUpdateIncrement, update_status, info));
  if (updated) {
    for (int r = 0; r < replays; ++r) CS_CHECK(cudaGraphLaunch(graph_exec, origin));
    lab::run_on_cpu(fj, kUpdateIncrement, replays);
    lab::verify("exec_update_results", fj);
  }
  CS_CHECK(cudaGraphDestroy(recaptured));
  CS_CHECK(cudaGraphExecDestroy(graph_exec));
  CS_CHECK(cudaGraphDestroy(graph));
}

// Part 5: launch cost: a launch per kernel into a stream against one graph launch
void part_cost(cudaStream_t stream, int kernels, const cs::CommonOptions& common) {
  int* counter = nullptr;
  CS_CHECK(cudaMalloc(&counter, sizeof(int)));
  CS_CHECK(cudaMemsetAsync(counter, 0, sizeof(int), stream));
  long long chains_run = 0;
  auto launch_chain_into_stream = [&] {
    for (int k = 0; k < kernels; ++k) tick<<<1, 1, 0, stream>>>(counter);
    CS_CHECK_LAUNCH();
    ++chains_run;
  };
  cudaGraph_t chain = nullptr;  // core: cost (12 lines)
  CS_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
  for (int k = 0; k < kernels; ++k) tick<<<1, 1, 0, stream>>>(counter);
  CS_CHECK_LAUNCH();
  CS_CHECK(cudaStreamEndCapture(stream, &chain));
  cudaGraphExec_t chain_exec = nullptr;
  CS_CHECK(cudaGraphInstantiate(&chain_exec, chain, 0));
  CS_CHECK(cudaGraphUpload(chain_exec, stream));  // its first launch then costs no upload
  auto replay_chain = [&] {
    CS_CHECK(cudaGraphLaunch(chain_exec, stream));
    ++chains_run;
  };
  // Host clock around the launches + cudaDeviceSynchronize: the launches are what is measured.
  const int repeats = common.no_timing ? 1 : kRepeats;  // --no-timing: once each, not checked
  const double stream_ms = cs::time_device_ms(kWarmup, repeats, launch_chain_into_stream).median;
  const double graph_ms = cs::time_device_ms(kWarmup, repeats, replay_chain).median;
  lab::print_costs(kernels, stream_ms, graph_ms, repeats);
  const double ratio = stream_ms > 0 ? graph_ms / stream_ms : 0;
  // A replay must at least halve the cost per kernel of launches one by one; on an H200 it gets
  // to about a fifth. Below 100 kernels the launch and the sync that both pay dominate instead.
  constexpr double kGraphCostRatioMax = 0.5;
  constexpr int kKernelsForBar = 100;
  const std::string too_short =
      kernels < kKernelsForBar ? cs::format("fewer than %d kernels", kKernelsForBar) : "";
  cs::check_or_skip(cs::first_reason({common.timing_skip_reason(), too_short,
                                      ratio > 0 ? "" : "a chain took no time"}),
                    "graph_launch_cost", ratio, cs::Compare::at_most, kGraphCostRatioMax, "x",
                    "graph cost per kernel / stream cost per kernel");
  int counted = 0;
  CS_CHECK(cudaMemcpy(&counted, counter, sizeof(int), cudaMemcpyDeviceToHost));
  cs::check_that("chain_results", counted == chains_run * kernels,
                 cs::format("the counter reached %d = %lld chains x %d kernels: every launched "
                            "and replayed kernel ran",
                            counted, chains_run, kernels));
  CS_CHECK(cudaGraphExecDestroy(chain_exec));
  CS_CHECK(cudaGraphDestroy(chain));
  CS_CHECK(cudaFree(counter));
}

// Part 6: a synchronizing call during capture is refused, and spoils the capture
void part_sync(cudaStream_t stream, bool no_error_demos) {
  if (no_error_demos)
    return lab::skip_error_demos({"sync_rejected_during_capture", "error_not_sticky"});
  int* scratch = nullptr;
  CS_CHECK(cudaMalloc(&scratch, sizeof(int)));
  CS_CHECK(cudaMemsetAsync(scratch, 0, sizeof(int), stream));
  CS_CHECK(cudaStreamSynchronize(stream));
  // Nothing in a capturing stream has run, so there is nothing to wait for: the runtime refuses
  // the synchronization and invalidates the capture.
  CS_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));  // core: sync (12 lines)
  tick<<<1, 1, 0, stream>>>(scratch);
  CS_CHECK_LAUNCH();
  const cudaError_t sync_status = cudaStreamSynchronize(stream);
  cudaStreamCaptureStatus status_after_sync = cudaStreamCaptureStatusNone;
  CS_CHECK(cudaStreamIsCapturing(stream, &status_after_sync));
  cudaGraph_t spoiled = nullptr;
  const cudaError_t end_status = cudaStreamEndCapture(stream, &spoiled);
  const bool spoiled_graph = spoiled != nullptr;
  if (spoiled) CS_CHECK(cudaGraphDestroy(spoiled));
  const cudaError_t first_read = cudaGetLastError();  // the error, once
  const cudaError_t second_read = cudaGetLastError();
  lab::print_spoiled_capture(sync_status, status_after_sync, end_status, spoiled_graph, first_read,
                             second_read);
  cs::check_that("sync_rejected_during_capture",
                 sync_status != cudaSuccess && end_status != cudaSuccess && !spoiled_graph,
                 cs::format("the sync returned %s, the capture ended with %s",
                            cudaGetErrorName(sync_status), cudaGetErrorName(end_status)));
  // The stream works again at once: the captured tick never ran, this one does.
  tick<<<1, 1, 0, stream>>>(scratch);
  CS_CHECK_LAUNCH();
  int ticks = -1;
  CS_CHECK(cudaMemcpyAsync(&ticks, scratch, sizeof(int), cudaMemcpyDeviceToHost, stream));
  CS_CHECK(cudaStreamSynchronize(stream));
  cs::check_that("error_not_sticky", second_read == cudaSuccess && ticks == 1,
                 cs::format("after the failed capture a kernel ran (%d of 1 ticks; the captured "
                            "one never ran): capture errors are not sticky",
                            ticks));
  CS_CHECK(cudaFree(scratch));
}

// Part 7: capture modes decide which threads may make an "unsafe" call such as cudaMalloc
void part_modes(cudaStream_t stream, int device, bool no_error_demos) {
  if (no_error_demos) return lab::skip_error_demos({"capture_modes"});
  constexpr std::size_t kMallocBytes = 1 << 20;  // what each capture tries to allocate
  int* scratch = nullptr;
  CS_CHECK(cudaMalloc(&scratch, sizeof(int)));
  lab::HelperThread helper;  // the "other thread"
  lab::bind_to_device(helper, device);
  lab::ModeTally tally;  // prints the table, compares each cell with the documented rules
  for (const lab::ModeRow& row : lab::kModeRows) {  // core: modes (16 lines)
    for (bool other_thread : {false, true}) {
      CS_CHECK(cudaStreamBeginCapture(stream, row.mode));
      tick<<<1, 1, 0, stream>>>(scratch);
      CS_CHECK_LAUNCH();
      void* allocation = nullptr;
      auto allocate = [&] { return cudaMalloc(&allocation, kMallocBytes); };
      const cudaError_t malloc_status = other_thread ? helper.call(allocate) : allocate();
      cudaStreamCaptureStatus status_after = cudaStreamCaptureStatusNone;
      CS_CHECK(cudaStreamIsCapturing(stream, &status_after));
      cudaGraph_t graph = nullptr;
      const cudaError_t end_status = cudaStreamEndCapture(stream, &graph);
      lab::clean_up_after_capture(graph, allocation, helper);
      tally.add(row, other_thread, malloc_status, status_after, end_status);
    }
  }
  cs::check_that("capture_modes", tally.as_documented(), tally.detail());
  CS_CHECK(cudaFree(scratch));
}

int main(int argc, char** argv) {
  lab::Flags f;  // --streams, --elements, --replays, --kernels, --dot, --no-error-demos
  cs::CommonOptions common;
  cs::Options options("09_graph_capture",
                      "Capture a fork/join over several streams into a CUDA graph, replay it, "
                      "measure launch cost, and meet the pitfalls of capture.");
  cs::Parts parts(options, {{"capture", "a fork/join over streams, captured into one graph"},
                            {"replay", "instantiate once, replay many times"},
                            {"branches", "a replay runs the graph's branches side by side"},
                            {"update", "new arguments for the instantiated graph, in place"},
                            {"cost", "one graph launch against a launch per kernel"},
                            {"sync", "a synchronizing call during capture spoils it"},
                            {"modes", "the capture mode decides who may call cudaMalloc"}});
  lab::add_flags(options, &f);
  cs::add_common_options(options, &common);
  cs::parse_or_exit(options, argc, argv);
  lab::require_writable_dot(f);
  const cs::LaunchEnvironment env = cs::launch_environment();  // before the first CUDA call

  cs::select_device(common.device);
  cs::print_launch_environment(env);
  lab::ForkJoin fj = lab::make_fork_join(f.streams, f.elements);
  if (parts.begin("capture")) part_capture(fj, f.dot_path, common);
  if (parts.begin("replay")) part_replay(fj, f.replays);
  if (parts.begin("branches")) part_branches(fj, common);
  if (parts.begin("update")) part_update(fj, f.replays);
  if (parts.begin("cost")) part_cost(fj.origin(), f.kernels, common);
  if (parts.begin("sync")) part_sync(fj.origin(), f.no_error_demos);
  if (parts.begin("modes")) part_modes(fj.origin(), common.device, f.no_error_demos);
  lab::destroy(fj);
  return cs::finish();
}
