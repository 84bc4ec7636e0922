// Chapter 09: capturing streams into CUDA graphs (the lesson: README.md beside this file)
// Stream capture records the work issued into a stream as a graph instead of running it; other
// streams join by waiting on an event recorded in it. The graph is instantiated once and replayed,
// one launch each: the raw CUDA under PyTorch's "multistream capture" (chapter 11).
// clang-format off
//   nvcc -std=c++17 -arch=native -Icommon/include chapters/09_graph_capture/graph_capture.cu common/src/*.cpp -o 09_graph_capture
// clang-format on
//   build/bin/09_graph_capture --part update   # one part; --help lists every flag

#include <functional>
#include <thread>

#include "cuda_streams/device_clock.cuh"
#include "graph_capture_lab.cuh"  // and through it cuda_runtime.h, cuda_streams.hpp, <vector>, ...

namespace lab = graph_capture_lab;

constexpr int kBlock = 256;
constexpr unsigned kFirstIncrement = 1;      // the argument captured into the graph
constexpr unsigned kSetParamsIncrement = 7;  // set with cudaGraphExecKernelNodeSetParams
constexpr unsigned kUpdateIncrement = 13;    // re-captured and applied with cudaGraphExecUpdate
constexpr int kWarmup = 2;                   // untimed runs before each timing
constexpr int kRepeats = 10;                 // timed runs; the median is reported

// One round of the fork/join is prepare, one branch per stream, combine.
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

// Waits `ns` on the GPU's nanosecond clock (cs::globaltimer_ns()); writes how long it waited.
__global__ void spin(unsigned long long ns, unsigned long long* spun) {
  const unsigned long long start = cs::globaltimer_ns();
  unsigned long long now = start;
  while (now - start < ns) now = cs::globaltimer_ns();
  *spun = now - start;
}

// One round of the fork/join, from the streams or under capture. `timeline` draws a run from the
// streams (never under capture); `observe` is called after the fork and after the others waited.
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
  cs::publish_timeline(timeline.collect(), common, "The fork/join issued into streams:");
  lab::run_on_cpu(fj, kFirstIncrement, 1);
  lab::verify("eager_results", fj);
  std::string seen;
  auto observe = [&](const char* step) {
    cudaStreamCaptureStatus in_origin = cudaStreamCaptureStatusNone, in_1 = in_origin;
    CS_CHECK(cudaStreamIsCapturing(origin, &in_origin));
    CS_CHECK(cudaStreamIsCapturing(fj.streams[1], &in_1));
    std::printf("   %-27s %-8s %s\n", step, lab::status_name(in_origin), lab::status_name(in_1));
    seen += cs::format(" %s/%s", lab::status_name(in_origin), lab::status_name(in_1));
  };
  std::printf("\n   cudaStreamIsCapturing       origin   stream 1\n");
  observe("before BeginCapture");
  CS_CHECK(cudaStreamBeginCapture(origin, cudaStreamCaptureModeGlobal));
  issue_fork_join(fj, kFirstIncrement, nullptr, observe);
  cudaGraph_t graph = nullptr;
  CS_CHECK(cudaStreamEndCapture(origin, &graph));
  observe("after EndCapture");
  cs::check_that("capture_status", seen == " None/None Active/None Active/Active None/None",
                 "a stream joins the capture when it waits on an event recorded in it, and "
                 "EndCapture ends it for all");
  // Every kernel becomes a node, every wait on an event edges; the events are not nodes.
  const lab::GraphShape shape = lab::shape_of(graph);  // prints it
  const std::size_t b = fj.streams.size();             // prepare -> b branches -> combine
  cs::check_that("graph_shape",
                 shape.nodes == b + 2 && shape.kernel_nodes == b + 2 && shape.edges == 2 * b &&
                     shape.roots == 1 && shape.leaves == 1 && shape.middle == b,
                 cs::format("prepare -> %zu parallel branches -> combine: %zu kernel nodes, "
                            "%zu edges",
                            b, b + 2, 2 * b));
  if (!dot_path.empty()) {  // --dot: render it with dot -Tsvg FILE -o graph.svg
    CS_CHECK(cudaGraphDebugDotPrint(graph, dot_path.c_str(), cudaGraphDebugDotFlagsVerbose));
    std::printf("   wrote the captured graph to %s\n", dot_path.c_str());
  }
  CS_CHECK(cudaGraphDestroy(graph));
}

// Part 2: instantiate once, replay many times
void part_replay(lab::ForkJoin& fj, int replays) {
  cudaStream_t origin = fj.origin();
  lab::reset(fj);
  cudaGraph_t graph = nullptr;  // core: replay (7 lines)
  CS_CHECK(cudaStreamBeginCapture(origin, cudaStreamCaptureModeGlobal));
  issue_fork_join(fj, kFirstIncrement);
  CS_CHECK(cudaStreamEndCapture(origin, &graph));
  cudaGraphExec_t graph_exec = nullptr;
  CS_CHECK(cudaGraphInstantiate(&graph_exec, graph, 0));
  for (int r = 0; r < replays; ++r) CS_CHECK(cudaGraphLaunch(graph_exec, origin));
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
  unsigned long long* spun = nullptr;  // how long each branch spun, on the global timer
  const std::size_t spun_bytes = sizeof(*spun) * static_cast<std::size_t>(branches);
  CS_CHECK(cudaMalloc(&spun, spun_bytes));
  auto fork_of_waits = [&] {  // core: branches (19 lines)
    CS_CHECK(cudaEventRecord(fj.fork, origin));
    for (int s = 0; s < branches; ++s) {
      if (s > 0) CS_CHECK(cudaStreamWaitEvent(fj.streams[s], fj.fork, 0));
      spin<<<1, 1, 0, fj.streams[s]>>>(kBranchNs, spun + s);
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
  const double streams_ms = cs::time_on_stream_ms(origin, kWarmup, kRepeats, fork_of_waits).median;
  const double graph_ms = cs::time_on_stream_ms(origin, kWarmup, kRepeats, replay).median;
  auto at_once = [&](double ms) { return cs::ratio(branches * branch_ms, ms); };
  std::printf("   %d branches of %s each, from fork to join (events, median of %d):\n", branches,
              cs::format_ms(branch_ms).c_str(), kRepeats);
  std::printf("   issued into %2d streams   %9s -> %5.2f branches at once\n", branches,
              cs::format_ms(streams_ms).c_str(), at_once(streams_ms));
  std::printf("   one graph replay         %9s -> %5.2f branches at once\n",
              cs::format_ms(graph_ms).c_str(), at_once(graph_ms));
  // One more replay, readings cleared first (a branch that never ran leaves 0): all spun 1 ms?
  CS_CHECK(cudaMemsetAsync(spun, 0, spun_bytes, origin));
  replay();
  std::vector<unsigned long long> spun_ns(static_cast<std::size_t>(branches));
  CS_CHECK(cudaMemcpyAsync(spun_ns.data(), spun, spun_bytes, cudaMemcpyDeviceToHost, origin));
  CS_CHECK(cudaStreamSynchronize(origin));
  const double shortest_ms = *std::min_element(spun_ns.begin(), spun_ns.end()) / 1e6;
  cs::check_that("graph_branches_spun", shortest_ms >= branch_ms,
                 cs::format("each of the %d branches' spin kernels ran 1.00 ms or more on the "
                            "global timer in a replay (shortest %.3f ms)",
                            branches, shortest_ms));
  // At least half of the branches at once (one SM each), never more than all (5% for the timers).
  const std::string skip = common.timing_skip_reason();
  cs::check_or_skip(skip, "graph_branches_concurrent", at_once(graph_ms), cs::Compare::at_least,
                    0.5 * branches, "", "branches at once in a replay: branches x 1 ms / its time");
  cs::check_or_skip(skip, "graph_branches_within_ideal", at_once(graph_ms), cs::Compare::at_most,
                    1.05 * branches, "", "all branches at once: a replay lasts a branch at least");
  CS_CHECK(cudaFree(spun));
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
  // One node: the root (prepare) gets a new third argument; the runtime copies the arguments now.
  cudaGraphNode_t root = nullptr;  // core: update (16 lines)
  std::size_t roots = 1;
  CS_CHECK(cudaGraphGetRootNodes(graph, &root, &roots));
  cudaKernelNodeParams params{};
  CS_CHECK(cudaGraphKernelNodeGetParams(root, &params));
  unsigned* x_argument = fj.x;
  int n_argument = fj.n;
  unsigned increment_argument = kSetParamsIncrement;
  void* arguments[] = {&x_argument, &n_argument, &increment_argument};
  params.func = reinterpret_cast<void*>(prepare);
  params.kernelParams = arguments;
  params.extra = nullptr;
  CS_CHECK(cudaGraphExecKernelNodeSetParams(graph_exec, root, &params));
  std::printf("   cudaGraphExecKernelNodeSetParams: the root (prepare) now adds %u instead of %u\n",
              kSetParamsIncrement, kFirstIncrement);
  for (int r = 0; r < replays; ++r) CS_CHECK(cudaGraphLaunch(graph_exec, origin));
  lab::run_on_cpu(fj, kSetParamsIncrement, replays);
  lab::verify("set_params_results", fj);
  // The whole graph: re-capture with another argument; cudaGraphExecUpdate copies its parameters.
  cudaGraph_t recaptured = nullptr;
  CS_CHECK(cudaStreamBeginCapture(origin, cudaStreamCaptureModeGlobal));
  issue_fork_join(fj, kUpdateIncrement);
  CS_CHECK(cudaStreamEndCapture(origin, &recaptured));
  cudaGraphExecUpdateResultInfo info{};
  const cudaError_t update_status = cudaGraphExecUpdate(graph_exec, recaptured, &info);
  const bool updated = update_status == cudaSuccess && info.result == cudaGraphExecUpdateSuccess;
  if (!updated) (void)cudaGetLastError();
  const std::string result = info.result == cudaGraphExecUpdateSuccess
                                 ? "cudaGraphExecUpdateSuccess"
                                 : cs::format("code %d", static_cast<int>(info.result));
  cs::check_that(
      "exec_update", updated,
      cs::format("cudaGraphExecUpdate from a re-capture (increment %u) returned %s, result %s",
                 kUpdateIncrement, cudaGetErrorName(update_status), result.c_str()));
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
void part_cost(cudaStream_t stream, int kernels, const cs::CommonOptions& common,
               const cs::LaunchEnvironment& env) {
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
  const int repeats = common.no_timing ? 1 : kRepeats;
  const auto in_stream = cs::time_issue_and_device_ms(kWarmup, repeats, launch_chain_into_stream);
  const auto in_graph = cs::time_issue_and_device_ms(kWarmup, repeats, replay_chain);
  auto print = [&](const std::string& what, const cs::IssueAndDone& t) {
    std::printf("   %-35s issued %8.3f ms, done %8.3f ms -> %5.2f us per kernel\n", what.c_str(),
                t.issue.median, t.done.median, 1000.0 * t.done.median / kernels);
  };
  print(cs::format("stream: %d launches + sync", kernels), in_stream);
  print("graph:  one cudaGraphLaunch + sync", in_graph);
  const std::string skip = cs::first_reason(
      {common.timing_skip_reason(), kernels < 100 ? "fewer than 100 kernels" : ""});
  // One call issues `kernels` launches: its few us weigh under 3% from 1000 kernels on.
  const std::string few = kernels < 1000 ? "fewer than 1000 kernels" : "";
  cs::check_or_skip(cs::first_reason({skip, cs::no_overlap_reason(env), few}), "graph_issue_cost",
                    in_graph.issue.median / in_stream.issue.median, cs::Compare::at_most, 0.03, "x",
                    "host time issuing the graph / issuing the kernels one by one");
  cs::check_or_skip(skip, "graph_launch_cost", in_graph.done.median / in_stream.done.median,
                    cs::Compare::at_most, 0.75, "x", "graph time / stream time, per kernel");
  int counted = 0;
  CS_CHECK(cudaMemcpy(&counted, counter, sizeof(int), cudaMemcpyDeviceToHost));
  cs::check_that("chain_results", counted == chains_run * kernels,
                 cs::format("the counter reached %d = %lld chains x %d kernels: every one ran",
                            counted, chains_run, kernels));
  CS_CHECK(cudaGraphExecDestroy(chain_exec));
  CS_CHECK(cudaGraphDestroy(chain));
  CS_CHECK(cudaFree(counter));
}

// Part 6: a synchronizing call during capture is refused, and spoils the capture
void part_sync(cudaStream_t stream, bool no_error_demos) {
  if (no_error_demos) cs::check_skipped("sync_rejected_during_capture", "--no-error-demos");
  if (no_error_demos) return cs::check_skipped("error_not_sticky", "--no-error-demos");
  int* scratch = nullptr;
  CS_CHECK(cudaMalloc(&scratch, sizeof(int)));
  CS_CHECK(cudaMemsetAsync(scratch, 0, sizeof(int), stream));
  CS_CHECK(cudaStreamSynchronize(stream));
  // Nothing captured has run, so there is nothing to wait for: refused, and the capture spoiled.
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
  std::printf(
      "   cudaStreamSynchronize(capturing stream) returned %s\n"
      "   cudaStreamIsCapturing then said %s; cudaStreamEndCapture returned %s and %s\n"
      "   cudaGetLastError() returned %s, then %s\n",
      cudaGetErrorName(sync_status), lab::status_name(status_after_sync),
      cudaGetErrorName(end_status), spoiled_graph ? "a graph" : "no graph",
      cudaGetErrorName(first_read), cudaGetErrorName(second_read));
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
  if (no_error_demos) return cs::check_skipped("capture_modes", "--no-error-demos");
  const std::pair<const char*, cudaStreamCaptureMode> modes[] = {
      {"Global", cudaStreamCaptureModeGlobal},
      {"ThreadLocal", cudaStreamCaptureModeThreadLocal},
      {"Relaxed", cudaStreamCaptureModeRelaxed}};
  int* scratch = nullptr;
  CS_CHECK(cudaMalloc(&scratch, sizeof(int)));
  std::string mismatches;
  std::printf("   %-12s %-14s %-34s %-12s %s\n", "mode", "cudaMalloc by", "returned",
              "capture then", "EndCapture returned");
  for (const auto& [name, mode] : modes) {  // core: modes (17 lines)
    for (bool other_thread : {false, true}) {
      CS_CHECK(cudaStreamBeginCapture(stream, mode));
      tick<<<1, 1, 0, stream>>>(scratch);
      CS_CHECK_LAUNCH();
      void* allocation = nullptr;
      cudaError_t malloc_status = cudaSuccess;
      auto allocate = [&] { malloc_status = cudaMalloc(&allocation, 1 << 20); };
      auto allocate_elsewhere = [&] {
        CS_CHECK(cudaSetDevice(device));
        allocate();
      };
      other_thread ? std::thread(allocate_elsewhere).join() : allocate();  // a new host thread
      cudaStreamCaptureStatus status_after = cudaStreamCaptureStatusNone;
      CS_CHECK(cudaStreamIsCapturing(stream, &status_after));
      cudaGraph_t graph = nullptr;
      const cudaError_t end_status = cudaStreamEndCapture(stream, &graph);
      if (graph) CS_CHECK(cudaGraphDestroy(graph));
      if (allocation) CS_CHECK(cudaFree(allocation));  // as "unsafe" as cudaMalloc during capture
      (void)cudaGetLastError();                        // the refused calls' error
      std::printf("   %-12s %-14s %-34s %-12s %s\n", name,
                  other_thread ? "other thread" : "this thread", cudaGetErrorName(malloc_status),
                  lab::status_name(status_after), cudaGetErrorName(end_status));
      // The documented rules: Global refuses in all threads, ThreadLocal in this one, Relaxed none.
      const bool may =
          other_thread ? mode != cudaStreamCaptureModeGlobal : mode == cudaStreamCaptureModeRelaxed;
      if ((malloc_status == cudaSuccess) != may) {
        mismatches += cs::format(" %s/%s", name, other_thread ? "other" : "this");
      }
    }
  }
  cs::check_that("capture_modes", mismatches.empty(),
                 mismatches.empty() ? "Global refuses cudaMalloc in every thread, ThreadLocal only "
                                      "in the capturing thread, Relaxed in none, as documented"
                                    : "differs from the documented rules in:" + mismatches);
  CS_CHECK(cudaFree(scratch));
}

int main(int argc, char** argv) {
  int streams = 4, elements = 1 << 16, replays = 100, kernels = 1000;  // the flags, by default
  std::string dot_path;
  bool no_error_demos = false;
  cs::CommonOptions common;
  cs::Options options("09_graph_capture",
                      "Capture a fork/join into a CUDA graph, replay it, meet capture's pitfalls.");
  cs::Parts parts(options, {{"capture", "a fork/join over streams, captured into one graph"},
                            {"replay", "instantiate once, replay many times"},
                            {"branches", "a replay runs the graph's branches side by side"},
                            {"update", "new arguments for the instantiated graph, in place"},
                            {"cost", "one graph launch against a launch per kernel"},
                            {"sync", "a synchronizing call during capture spoils it"},
                            {"modes", "the capture mode decides who may call cudaMalloc"}});
  options.add_int("streams", &streams, 3, 16, "streams of the fork/join, the origin included");
  options.add_int("elements", &elements, 1, 1 << 26, "elements each kernel works on");
  options.add_int("replays", &replays, 1, 100000, "replays of the graph per phase");
  options.add_int("kernels", &kernels, 10, 100000, "tiny kernels in the launch-cost chain");
  options.add_output_file("dot", &dot_path, "the captured graph, via cudaGraphDebugDotPrint");
  options.add_flag("no-error-demos", &no_error_demos,
                   "skip the calls that fail on purpose (sync, modes), for compute-sanitizer");
  cs::add_common_options(options, &common);
  cs::parse_or_exit(options, argc, argv);
  const cs::LaunchEnvironment env = cs::launch_environment();  // before the first CUDA call
  cs::select_device(common.device);
  cs::print_launch_environment(env);
  lab::ForkJoin fj = lab::make_fork_join(streams, elements);
  if (parts.begin("capture")) part_capture(fj, dot_path, common);
  if (parts.begin("replay")) part_replay(fj, replays);
  if (parts.begin("branches")) part_branches(fj, common);
  if (parts.begin("update")) part_update(fj, replays);
  if (parts.begin("cost")) part_cost(fj.origin(), kernels, common, env);
  if (parts.begin("sync")) part_sync(fj.origin(), no_error_demos);
  if (parts.begin("modes")) part_modes(fj.origin(), common.device, no_error_demos);
  lab::destroy(fj);
  return cs::finish();
}
