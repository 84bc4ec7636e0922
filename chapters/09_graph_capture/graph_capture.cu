// 09_graph_capture: record work issued into streams as a CUDA graph, then replay it.
//
// What it teaches
//   Stream capture (cudaStreamBeginCapture .. cudaStreamEndCapture) does not run the work issued
//   into a stream: it records it as a graph. Other streams join the capture by waiting on an
//   event recorded in it, so a fork/join across several streams becomes one graph:
//     origin: prepare, record "fork"        other streams: wait "fork", branch, record "join"
//     origin: branch, wait every "join", combine
//   The graph is instantiated once and replayed many times; the results are checked against the
//   CPU. The same API also makes launching cheap: a chain of tiny kernels is launched from a
//   stream and replayed as a graph, and the cost per kernel of each is measured in one run.
//   Then the pitfalls: a synchronizing call during capture is rejected and spoils the capture;
//   the capture modes (global, thread-local, relaxed) decide which threads may make "unsafe"
//   calls such as cudaMalloc; cudaStreamIsCapturing tells whether a stream is being captured;
//   and an instantiated graph can be changed without instantiating it again
//   (cudaGraphExecKernelNodeSetParams, cudaGraphExecUpdate).
//
// Build and run
//   cmake --preset default && cmake --build --preset default && build/bin/09_graph_capture
//   build/bin/09_graph_capture --streams 6 --dot fork_join.dot && dot -Tsvg fork_join.dot -o g.svg
//
// What to expect
//   The capture status of the streams before, during and after capture, the graph's shape
//   (nodes and edges), the results of the replays, the cost per kernel of stream launches and
//   graph replays, the errors that the pitfalls return, and CHECK lines that all end in PASS.

#include <cuda_runtime.h>

#include <condition_variable>
#include <cstdio>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "cuda_streams.hpp"

namespace bars {
// A graph replay must at least halve the cost per kernel of a chain of tiny kernels launched
// one by one into a stream. Any recent GPU should clear it; on an H200 the aim is a quarter.
constexpr double kGraphCostRatio = 0.5;
}  // namespace bars

namespace settings {
constexpr unsigned kModulus = 1000003u;      // keeps the iterated values small and exact
constexpr unsigned kFirstIncrement = 1;      // the argument captured into the graph
constexpr unsigned kSetParamsIncrement = 7;  // set with cudaGraphExecKernelNodeSetParams
constexpr unsigned kUpdateIncrement = 13;    // re-captured and applied with cudaGraphExecUpdate
constexpr int kWarmup = 2;
constexpr int kRepeats = 10;
constexpr std::size_t kMallocBytes = 1 << 20;  // what the capture-mode table tries to cudaMalloc
}  // namespace settings

// ---------------------------------------------------------------------------------------------
// Kernels
// ---------------------------------------------------------------------------------------------

__global__ void prepare(unsigned* x, int n, unsigned increment) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    x[i] = (x[i] + increment) % settings::kModulus;
  }
}

__global__ void branch(const unsigned* x, unsigned* partial, int n, unsigned branch_index) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    partial[i] = (x[i] * (branch_index + 2) + branch_index) % settings::kModulus;
  }
}

__global__ void combine(unsigned* x, const unsigned* partials, int n, int branches) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    unsigned sum = 0;
    for (int b = 0; b < branches; ++b) sum += partials[static_cast<std::size_t>(b) * n + i];
    x[i] = sum % settings::kModulus;
  }
}

// As small as a kernel gets: its launch is all that it costs.
__global__ void tick(int* counter) {
  *counter += 1;
}

// ---------------------------------------------------------------------------------------------
// The fork/join, the CPU reference, and small helpers
// ---------------------------------------------------------------------------------------------

struct ForkJoin {
  std::vector<cudaStream_t> streams;  // streams[0] is the origin
  cudaEvent_t fork = nullptr;
  std::vector<cudaEvent_t> joins;  // joins[b] is recorded by streams[b], b >= 1
  unsigned* x = nullptr;
  unsigned* partials = nullptr;  // streams.size() rows of n
  int n = 0;
};

// What cudaStreamIsCapturing says at the moments the lesson prints.
struct CaptureProbe {
  std::string origin_before_wait;
  std::string branch_before_wait;
  std::string origin_after_wait;
  std::string branch_after_wait;
};

int grid_for(int n) {
  return (n + 255) / 256 < 1024 ? (n + 255) / 256 : 1024;
}

std::string capture_status(cudaStream_t stream) {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  const cudaError_t error = cudaStreamIsCapturing(stream, &status);
  if (error != cudaSuccess) return std::string("(error ") + cudaGetErrorName(error) + ")";
  switch (status) {
    case cudaStreamCaptureStatusNone:
      return "None";
    case cudaStreamCaptureStatusActive:
      return "Active";
    case cudaStreamCaptureStatusInvalidated:
      return "Invalidated";
  }
  return "unknown";
}

// Issues one round of the fork/join. The same code runs eagerly and under capture; a timeline
// may watch the eager run (its events would only be captured, never recorded, under capture).
void issue_fork_join(const ForkJoin& fj, unsigned increment, cs::Timeline* timeline,
                     CaptureProbe* probe) {
  const int branches = static_cast<int>(fj.streams.size());
  cudaStream_t origin = fj.streams[0];
  const int grid = grid_for(fj.n);
  auto row = [](int s) { return s == 0 ? std::string("origin") : "stream " + std::to_string(s); };

  int span = timeline ? timeline->begin(row(0), "kernel", origin, "prepare") : -1;
  prepare<<<grid, 256, 0, origin>>>(fj.x, fj.n, increment);
  CS_CHECK_LAUNCH();
  if (timeline) timeline->end(span, origin);
  CS_CHECK(cudaEventRecord(fj.fork, origin));  // fork
  if (probe) {
    probe->origin_before_wait = capture_status(origin);
    probe->branch_before_wait = capture_status(fj.streams[1]);
  }
  for (int s = 1; s < branches; ++s) CS_CHECK(cudaStreamWaitEvent(fj.streams[s], fj.fork, 0));
  if (probe) {
    probe->origin_after_wait = capture_status(origin);
    probe->branch_after_wait = capture_status(fj.streams[1]);
  }
  for (int s = 0; s < branches; ++s) {
    span = timeline ? timeline->begin(row(s), "kernel", fj.streams[s], "branch") : -1;
    branch<<<grid, 256, 0, fj.streams[s]>>>(fj.x, fj.partials + static_cast<std::size_t>(s) * fj.n,
                                            fj.n, static_cast<unsigned>(s));
    CS_CHECK_LAUNCH();
    if (timeline) timeline->end(span, fj.streams[s]);
  }
  for (int s = 1; s < branches; ++s) {  // join
    CS_CHECK(cudaEventRecord(fj.joins[s], fj.streams[s]));
    CS_CHECK(cudaStreamWaitEvent(origin, fj.joins[s], 0));
  }
  span = timeline ? timeline->begin(row(0), "kernel", origin, "combine") : -1;
  combine<<<grid, 256, 0, origin>>>(fj.x, fj.partials, fj.n, branches);
  CS_CHECK_LAUNCH();
  if (timeline) timeline->end(span, origin);
}

cudaGraph_t capture_fork_join(const ForkJoin& fj, unsigned increment, CaptureProbe* probe) {
  CS_CHECK(cudaStreamBeginCapture(fj.streams[0], cudaStreamCaptureModeGlobal));
  issue_fork_join(fj, increment, nullptr, probe);
  cudaGraph_t graph = nullptr;
  CS_CHECK(cudaStreamEndCapture(fj.streams[0], &graph));
  return graph;
}

// `rounds` rounds of the fork/join on the CPU.
void reference_rounds(std::vector<unsigned>* x, int branches, unsigned increment, int rounds) {
  for (unsigned& value : *x) {
    unsigned v = value;
    for (int r = 0; r < rounds; ++r) {
      const unsigned prepared = (v + increment) % settings::kModulus;
      unsigned sum = 0;
      for (int b = 0; b < branches; ++b) {
        sum += (prepared * static_cast<unsigned>(b + 2) + static_cast<unsigned>(b)) %
               settings::kModulus;
      }
      v = sum % settings::kModulus;
    }
    value = v;
  }
}

std::vector<unsigned> copy_to_host(const unsigned* device, int n) {
  std::vector<unsigned> host(static_cast<std::size_t>(n));
  CS_CHECK(cudaMemcpy(host.data(), device, host.size() * sizeof(unsigned), cudaMemcpyDeviceToHost));
  return host;
}

struct GraphShape {
  std::size_t nodes = 0;
  std::size_t kernel_nodes = 0;
  std::size_t edges = 0;
  std::size_t roots = 0;   // no dependency
  std::size_t leaves = 0;  // nothing depends on it
  std::size_t middle = 0;  // exactly one dependency and one dependent
  cudaGraphNode_t root = nullptr;
};

GraphShape shape_of(cudaGraph_t graph) {
  GraphShape shape;
  CS_CHECK(cudaGraphGetNodes(graph, nullptr, &shape.nodes));
  std::vector<cudaGraphNode_t> nodes(shape.nodes);
  CS_CHECK(cudaGraphGetNodes(graph, nodes.data(), &shape.nodes));
  for (cudaGraphNode_t node : nodes) {
    cudaGraphNodeType type = cudaGraphNodeTypeEmpty;
    CS_CHECK(cudaGraphNodeGetType(node, &type));
    if (type == cudaGraphNodeTypeKernel) ++shape.kernel_nodes;
  }
  // CUDA 13 added the edge data (ports) to cudaGraphGetEdges; CUDA 12 has it as _v2.
#if CUDART_VERSION >= 13000
  CS_CHECK(cudaGraphGetEdges(graph, nullptr, nullptr, nullptr, &shape.edges));
  std::vector<cudaGraphNode_t> from(shape.edges), to(shape.edges);
  std::vector<cudaGraphEdgeData> data(shape.edges);
  CS_CHECK(cudaGraphGetEdges(graph, from.data(), to.data(), data.data(), &shape.edges));
#else
  CS_CHECK(cudaGraphGetEdges(graph, nullptr, nullptr, &shape.edges));
  std::vector<cudaGraphNode_t> from(shape.edges), to(shape.edges);
  CS_CHECK(cudaGraphGetEdges(graph, from.data(), to.data(), &shape.edges));
#endif
  std::map<cudaGraphNode_t, int> in_degree, out_degree;
  for (std::size_t e = 0; e < shape.edges; ++e) {
    ++out_degree[from[e]];
    ++in_degree[to[e]];
  }
  for (cudaGraphNode_t node : nodes) {
    const int in = in_degree.count(node) ? in_degree[node] : 0;
    const int out = out_degree.count(node) ? out_degree[node] : 0;
    if (in == 0) {
      ++shape.roots;
      shape.root = node;
    }
    if (out == 0) ++shape.leaves;
    if (in == 1 && out == 1) ++shape.middle;
  }
  return shape;
}

// Exits 2 unless `path` can be written; leaves no file behind that was not there before.
void require_writable(const std::string& flag, const std::string& path) {
  std::FILE* existing = std::fopen(path.c_str(), "r");
  const bool existed = existing != nullptr;
  if (existing) std::fclose(existing);
  std::FILE* file = std::fopen(path.c_str(), "a");
  if (!file) cs::usage_error(flag + " " + path + ": cannot write this file");
  std::fclose(file);
  if (!existed) std::remove(path.c_str());
}

// A host thread that runs what it is handed and reports the result: the "other thread" of the
// capture-mode table. The caller waits for it on the host, outside CUDA.
class HelperThread {
 public:
  HelperThread() : thread_([this] { run(); }) {}
  ~HelperThread() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    wake_.notify_all();
    thread_.join();
  }
  HelperThread(const HelperThread&) = delete;
  HelperThread& operator=(const HelperThread&) = delete;

  cudaError_t call(std::function<cudaError_t()> task) {
    std::unique_lock<std::mutex> lock(mutex_);
    task_ = std::move(task);
    done_ = false;
    wake_.notify_all();
    wake_.wait(lock, [&] { return done_; });
    return result_;
  }

 private:
  void run() {
    std::unique_lock<std::mutex> lock(mutex_);
    while (true) {
      wake_.wait(lock, [&] { return stop_ || task_; });
      if (stop_) return;
      std::function<cudaError_t()> task = std::move(task_);
      task_ = nullptr;
      lock.unlock();
      const cudaError_t result = task();
      lock.lock();
      result_ = result;
      done_ = true;
      wake_.notify_all();
    }
  }
  std::mutex mutex_;
  std::condition_variable wake_;
  std::function<cudaError_t()> task_;
  cudaError_t result_ = cudaSuccess;
  bool done_ = false;
  bool stop_ = false;
  std::thread thread_;  // last: it starts running once everything above exists
};

struct ModeCell {
  cudaError_t malloc_status = cudaSuccess;
  std::string status_after;
  cudaError_t end_status = cudaSuccess;
  bool graph_returned = false;
};

// Begins a capture in `mode`, captures one kernel, then makes a cudaMalloc from this thread or
// from the helper thread, and ends the capture. Everything it returns was observed.
ModeCell try_malloc_during_capture(cudaStream_t stream, cudaStreamCaptureMode mode,
                                   bool from_helper, HelperThread* helper, int* scratch) {
  ModeCell cell;
  CS_CHECK(cudaStreamBeginCapture(stream, mode));
  tick<<<1, 1, 0, stream>>>(scratch);
  CS_CHECK_LAUNCH();
  void* allocation = nullptr;
  auto allocate = [&] { return cudaMalloc(&allocation, settings::kMallocBytes); };
  cell.malloc_status = from_helper ? helper->call(allocate) : allocate();
  cell.status_after = capture_status(stream);
  cudaGraph_t graph = nullptr;
  cell.end_status = cudaStreamEndCapture(stream, &graph);
  cell.graph_returned = graph != nullptr;
  if (graph) CS_CHECK(cudaGraphDestroy(graph));
  // Freed after the capture: during it, cudaFree is as "unsafe" as cudaMalloc.
  if (cell.malloc_status == cudaSuccess && allocation) CS_CHECK(cudaFree(allocation));
  (void)cudaGetLastError();  // the refused calls left their error on this thread
  if (from_helper) helper->call([] { return cudaGetLastError(); });
  return cell;
}

// ---------------------------------------------------------------------------------------------

int main(int argc, char** argv) {
  int stream_count = 4;
  int elements = 1 << 16;
  int replays = 100;
  int kernels = 1000;
  std::string dot_path;
  bool no_error_demos = false;
  cs::CommonOptions common;
  cs::Options options("09_graph_capture",
                      "Capture a fork/join over several streams into a CUDA graph, replay it, "
                      "measure launch cost, and meet the pitfalls of capture.");
  options.add_int("streams", &stream_count, 3, 16, "streams of the fork/join, the origin included");
  options.add_int("elements", &elements, 1, 1 << 26,
                  "elements each kernel of the fork/join works on");
  options.add_int("replays", &replays, 1, 100000, "replays of the graph per phase");
  options.add_int("kernels", &kernels, 10, 100000, "tiny kernels in the launch-cost chain");
  options.add_string(
      "dot", &dot_path, "FILE",
      "write the captured fork/join graph in Graphviz format (cudaGraphDebugDotPrint)");
  options.add_flag("no-error-demos", &no_error_demos,
                   "skip the calls that fail on purpose (sync and cudaMalloc during capture), e.g. "
                   "under compute-sanitizer");
  cs::add_common_options(options, &common);
  cs::parse_or_exit(options, argc, argv);
  if (!dot_path.empty()) require_writable("--dot", dot_path);

  const int device = common.device;
  cs::select_device(device);
  const std::size_t bytes_per_row = static_cast<std::size_t>(elements) * sizeof(unsigned);
  cs::require_fits_on_device(
      static_cast<std::size_t>(stream_count + 1) * bytes_per_row,
      "--elements " + std::to_string(elements) + " --streams " + std::to_string(stream_count));

  ForkJoin fj;
  fj.n = elements;
  fj.streams.resize(static_cast<std::size_t>(stream_count));
  fj.joins.resize(static_cast<std::size_t>(stream_count), nullptr);
  for (cudaStream_t& stream : fj.streams) {
    CS_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  }
  CS_CHECK(cudaEventCreateWithFlags(&fj.fork, cudaEventDisableTiming));
  for (int s = 1; s < stream_count; ++s) {
    CS_CHECK(cudaEventCreateWithFlags(&fj.joins[s], cudaEventDisableTiming));
  }
  CS_CHECK(cudaMalloc(&fj.x, bytes_per_row));
  CS_CHECK(cudaMalloc(&fj.partials, static_cast<std::size_t>(stream_count) * bytes_per_row));
  std::vector<unsigned> reference(static_cast<std::size_t>(elements));
  for (int i = 0; i < elements; ++i) reference[i] = static_cast<unsigned>(i) % settings::kModulus;
  cudaStream_t origin = fj.streams[0];
  // In the origin stream, not the legacy default stream: the streams here are non-blocking and
  // would not wait for it.
  CS_CHECK(cudaMemcpyAsync(fj.x, reference.data(), bytes_per_row, cudaMemcpyHostToDevice, origin));
  CS_CHECK(cudaStreamSynchronize(origin));

  // ===== 1. A fork/join issued into streams, then captured ===================================
  std::printf("\n1. A fork/join over %d streams: issued once into the streams, then captured\n",
              stream_count);
  cs::Timeline timeline;
  timeline.start(origin);
  issue_fork_join(fj, settings::kFirstIncrement, &timeline, nullptr);
  CS_CHECK(cudaDeviceSynchronize());
  cs::publish_timeline(
      timeline.collect(), common,
      "The fork/join issued into streams (prepare, branches side by side, combine):");

  CaptureProbe probe;
  const std::string origin_before = capture_status(origin);
  const std::string branch_before = capture_status(fj.streams[1]);
  CS_CHECK(cudaStreamBeginCapture(origin, cudaStreamCaptureModeGlobal));
  issue_fork_join(fj, settings::kFirstIncrement, nullptr, &probe);
  cudaGraph_t graph = nullptr;
  CS_CHECK(cudaStreamEndCapture(origin, &graph));
  const std::string origin_after = capture_status(origin);
  const std::string branch_after = capture_status(fj.streams[1]);
  std::printf("\n   cudaStreamIsCapturing       origin   stream 1\n");
  std::printf("   before BeginCapture         %-8s %s\n", origin_before.c_str(),
              branch_before.c_str());
  std::printf("   after BeginCapture          %-8s %s\n", probe.origin_before_wait.c_str(),
              probe.branch_before_wait.c_str());
  std::printf("   stream 1 waited on 'fork'   %-8s %s\n", probe.origin_after_wait.c_str(),
              probe.branch_after_wait.c_str());
  std::printf("   after EndCapture            %-8s %s\n", origin_after.c_str(),
              branch_after.c_str());
  cs::check_that("capture_status",
                 origin_before == "None" && branch_before == "None" &&
                     probe.origin_before_wait == "Active" && probe.branch_before_wait == "None" &&
                     probe.origin_after_wait == "Active" && probe.branch_after_wait == "Active" &&
                     origin_after == "None" && branch_after == "None",
                 "a stream joins the capture when it waits on an event recorded in it, and "
                 "EndCapture ends it for all");

  const GraphShape shape = shape_of(graph);
  const std::size_t want_nodes = static_cast<std::size_t>(stream_count) + 2;
  const std::size_t want_edges = 2 * static_cast<std::size_t>(stream_count);
  std::printf(
      "\n   The captured graph: %zu nodes (%zu kernels), %zu edges; %zu root, %zu leaf, "
      "%zu nodes between them side by side.\n   The events became edges, not nodes.\n",
      shape.nodes, shape.kernel_nodes, shape.edges, shape.roots, shape.leaves, shape.middle);
  cs::check_that("graph_shape",
                 shape.nodes == want_nodes && shape.kernel_nodes == want_nodes &&
                     shape.edges == want_edges && shape.roots == 1 && shape.leaves == 1 &&
                     shape.middle == static_cast<std::size_t>(stream_count),
                 "prepare -> " + std::to_string(stream_count) +
                     " parallel branches -> combine: " + std::to_string(want_nodes) +
                     " kernel nodes, " + std::to_string(want_edges) + " edges");
  if (!dot_path.empty()) {
    CS_CHECK(cudaGraphDebugDotPrint(graph, dot_path.c_str(), cudaGraphDebugDotFlagsVerbose));
    std::printf("   wrote the captured graph to %s (render it: dot -Tsvg %s -o graph.svg)\n",
                dot_path.c_str(), dot_path.c_str());
  }

  // ===== 2. Instantiate once, replay many times =============================================
  std::printf("\n2. Instantiate once, replay %d times\n", replays);
  cudaGraphExec_t graph_exec = nullptr;
  CS_CHECK(cudaGraphInstantiate(&graph_exec, graph, 0));
  for (int r = 0; r < replays; ++r) CS_CHECK(cudaGraphLaunch(graph_exec, origin));
  CS_CHECK(cudaStreamSynchronize(origin));
  reference_rounds(&reference, stream_count, settings::kFirstIncrement, 1 + replays);
  cs::verify("replay_results", copy_to_host(fj.x, elements), reference);

  // ===== 3. Change the instantiated graph without instantiating it again ====================
  std::printf("\n3. Update the instantiated graph in place\n");
  // The root of the graph is the prepare kernel; its third argument is the increment.
  cudaKernelNodeParams params{};
  CS_CHECK(cudaGraphKernelNodeGetParams(shape.root, &params));
  unsigned* x_argument = fj.x;
  int n_argument = elements;
  unsigned increment_argument = settings::kSetParamsIncrement;
  void* arguments[] = {&x_argument, &n_argument, &increment_argument};
  // The function stays prepare; naming it here keeps the call independent of how the node
  // reports it. Only the arguments change; the runtime copies them now.
  params.func = reinterpret_cast<void*>(prepare);
  params.kernelParams = arguments;
  params.extra = nullptr;
  CS_CHECK(cudaGraphExecKernelNodeSetParams(graph_exec, shape.root, &params));
  std::printf(
      "   cudaGraphExecKernelNodeSetParams: the root node (prepare, grid %u x block %u) "
      "now adds %u instead of %u.\n",
      params.gridDim.x, params.blockDim.x, settings::kSetParamsIncrement,
      settings::kFirstIncrement);
  for (int r = 0; r < replays; ++r) CS_CHECK(cudaGraphLaunch(graph_exec, origin));
  CS_CHECK(cudaStreamSynchronize(origin));
  reference_rounds(&reference, stream_count, settings::kSetParamsIncrement, replays);
  cs::verify("set_params_results", copy_to_host(fj.x, elements), reference);

  cudaGraph_t recaptured = capture_fork_join(fj, settings::kUpdateIncrement, nullptr);
  cudaGraphExecUpdateResultInfo update_info{};
  const cudaError_t update_status = cudaGraphExecUpdate(graph_exec, recaptured, &update_info);
  const bool updated =
      update_status == cudaSuccess && update_info.result == cudaGraphExecUpdateSuccess;
  if (!updated) (void)cudaGetLastError();
  cs::check_that("exec_update", updated,
                 std::string("cudaGraphExecUpdate from a re-capture (increment ") +
                     std::to_string(settings::kUpdateIncrement) + ") returned " +
                     cudaGetErrorName(update_status) + ", result " +
                     (update_info.result == cudaGraphExecUpdateSuccess
                          ? std::string("cudaGraphExecUpdateSuccess")
                          : "code " + std::to_string(static_cast<int>(update_info.result))));
  if (updated) {
    for (int r = 0; r < replays; ++r) CS_CHECK(cudaGraphLaunch(graph_exec, origin));
    CS_CHECK(cudaStreamSynchronize(origin));
    reference_rounds(&reference, stream_count, settings::kUpdateIncrement, replays);
    cs::verify("exec_update_results", copy_to_host(fj.x, elements), reference);
  }
  CS_CHECK(cudaGraphDestroy(recaptured));

  // ===== 4. Launch cost: stream launches vs one graph replay ================================
  std::printf("\n4. Launch cost of %d tiny kernels in a chain\n", kernels);
  int* counter = nullptr;
  CS_CHECK(cudaMalloc(&counter, sizeof(int)));
  CS_CHECK(cudaMemsetAsync(counter, 0, sizeof(int), origin));
  long long chains_run = 0;
  auto launch_chain_into_stream = [&] {
    for (int k = 0; k < kernels; ++k) tick<<<1, 1, 0, origin>>>(counter);
    CS_CHECK_LAUNCH();
    ++chains_run;
  };
  cudaGraph_t chain_graph = nullptr;
  CS_CHECK(cudaStreamBeginCapture(origin, cudaStreamCaptureModeGlobal));
  for (int k = 0; k < kernels; ++k) tick<<<1, 1, 0, origin>>>(counter);
  CS_CHECK_LAUNCH();
  CS_CHECK(cudaStreamEndCapture(origin, &chain_graph));
  cudaGraphExec_t chain_exec = nullptr;
  CS_CHECK(cudaGraphInstantiate(&chain_exec, chain_graph, 0));
  CS_CHECK(cudaGraphUpload(chain_exec, origin));
  auto replay_chain = [&] {
    CS_CHECK(cudaGraphLaunch(chain_exec, origin));
    ++chains_run;
  };
  if (common.no_timing) {
    launch_chain_into_stream();
    replay_chain();
    CS_CHECK(cudaDeviceSynchronize());
    cs::check_skipped("graph_launch_cost", "--no-timing");
  } else {
    const cs::Stats stream_ms =
        cs::time_device_ms(settings::kWarmup, settings::kRepeats, launch_chain_into_stream);
    const cs::Stats graph_ms =
        cs::time_device_ms(settings::kWarmup, settings::kRepeats, replay_chain);
    const double stream_us = 1000.0 * stream_ms.median / kernels;
    const double graph_us = 1000.0 * graph_ms.median / kernels;
    const std::string stream_label = "stream: " + std::to_string(kernels) + " launches + sync";
    std::printf("   %-36s %9.3f ms -> %6.2f us per kernel\n", stream_label.c_str(),
                stream_ms.median, stream_us);
    std::printf("   %-36s %9.3f ms -> %6.2f us per kernel\n", "graph:  one cudaGraphLaunch + sync",
                graph_ms.median, graph_us);
    std::printf("   (host clock around launch + cudaDeviceSynchronize, median of %d runs)\n",
                settings::kRepeats);
    cs::check("graph_launch_cost", graph_us / stream_us, cs::Compare::at_most,
              bars::kGraphCostRatio, "x", "graph cost per kernel / stream cost per kernel");
  }
  int counted = 0;
  CS_CHECK(cudaMemcpy(&counted, counter, sizeof(int), cudaMemcpyDeviceToHost));
  const long long want_count = chains_run * kernels;
  cs::check_that("chain_results", counted == want_count,
                 "the counter reached " + std::to_string(counted) + " = " +
                     std::to_string(chains_run) + " chains x " + std::to_string(kernels) +
                     " kernels: every launched and replayed kernel ran");

  // ===== 5. Pitfalls: synchronizing during capture, capture modes ===========================
  std::printf("\n5. Pitfalls of capture\n");
  if (no_error_demos) {
    cs::check_skipped("sync_rejected_during_capture", "--no-error-demos");
    cs::check_skipped("error_not_sticky", "--no-error-demos");
    cs::check_skipped("capture_modes", "--no-error-demos");
  } else {
    int* scratch = nullptr;
    CS_CHECK(cudaMalloc(&scratch, sizeof(int)));
    CS_CHECK(cudaMemsetAsync(scratch, 0, sizeof(int), origin));
    CS_CHECK(cudaStreamSynchronize(origin));

    // A synchronizing call on a capturing stream: nothing in it has run, so there is nothing to
    // wait for; the runtime refuses, and the capture is spoiled.
    CS_CHECK(cudaStreamBeginCapture(origin, cudaStreamCaptureModeGlobal));
    tick<<<1, 1, 0, origin>>>(scratch);
    CS_CHECK_LAUNCH();
    const cudaError_t sync_status = cudaStreamSynchronize(origin);
    const std::string status_after_sync = capture_status(origin);
    cudaGraph_t spoiled = nullptr;
    const cudaError_t end_status = cudaStreamEndCapture(origin, &spoiled);
    const bool spoiled_graph = spoiled != nullptr;
    if (spoiled) CS_CHECK(cudaGraphDestroy(spoiled));
    const cudaError_t first_read = cudaGetLastError();
    const cudaError_t second_read = cudaGetLastError();
    std::printf("   cudaStreamSynchronize(capturing stream) returned %s\n     (\"%s\")\n",
                cudaGetErrorName(sync_status), cudaGetErrorString(sync_status));
    std::printf("   cudaStreamIsCapturing then said %s; cudaStreamEndCapture returned %s%s\n",
                status_after_sync.c_str(), cudaGetErrorName(end_status),
                spoiled_graph ? " and a graph" : " and no graph");
    std::printf("   cudaGetLastError() returned %s, then %s\n", cudaGetErrorName(first_read),
                cudaGetErrorName(second_read));
    cs::check_that("sync_rejected_during_capture",
                   sync_status != cudaSuccess && end_status != cudaSuccess && !spoiled_graph,
                   std::string("the sync returned ") + cudaGetErrorName(sync_status) +
                       ", the capture ended with " + cudaGetErrorName(end_status));
    tick<<<1, 1, 0, origin>>>(scratch);
    CS_CHECK_LAUNCH();
    CS_CHECK(cudaStreamSynchronize(origin));
    int scratch_value = -1;
    CS_CHECK(cudaMemcpy(&scratch_value, scratch, sizeof(int), cudaMemcpyDeviceToHost));
    cs::check_that("error_not_sticky", second_read == cudaSuccess && scratch_value == 1,
                   "after the failed capture a kernel ran (" + std::to_string(scratch_value) +
                       " of 1 ticks; the captured one never ran): capture errors are not sticky");

    // Capture modes: which threads may make a "potentially unsafe" call such as cudaMalloc.
    HelperThread helper;
    CS_CHECK(helper.call([device] {
      const cudaError_t status = cudaSetDevice(device);
      return status != cudaSuccess ? status : cudaFree(nullptr);  // its context, before capture
    }));
    struct ModeRow {
      const char* name;
      cudaStreamCaptureMode mode;
      bool documented_this_thread_may;   // the rules of cudaThreadExchangeStreamCaptureMode
      bool documented_other_thread_may;  // for a thread in the default (global) mode
    };
    const ModeRow rows[] = {
        {"Global", cudaStreamCaptureModeGlobal, false, false},
        {"ThreadLocal", cudaStreamCaptureModeThreadLocal, false, true},
        {"Relaxed", cudaStreamCaptureModeRelaxed, true, true},
    };
    std::printf("\n   cudaMalloc during a capture, by capture mode and calling thread:\n");
    std::printf("   %-12s %-14s %-34s %-12s %s\n", "mode", "cudaMalloc by", "returned",
                "capture then", "EndCapture returned");
    bool as_documented = true;
    std::string mismatches;
    for (const ModeRow& row : rows) {
      for (int from_helper = 0; from_helper < 2; ++from_helper) {
        const ModeCell cell =
            try_malloc_during_capture(origin, row.mode, from_helper != 0, &helper, scratch);
        std::printf("   %-12s %-14s %-34s %-12s %s\n", row.name,
                    from_helper ? "other thread" : "this thread",
                    cudaGetErrorName(cell.malloc_status), cell.status_after.c_str(),
                    cudaGetErrorName(cell.end_status));
        const bool allowed = cell.malloc_status == cudaSuccess;
        const bool documented =
            from_helper ? row.documented_other_thread_may : row.documented_this_thread_may;
        if (allowed != documented) {
          as_documented = false;
          mismatches += std::string(" ") + row.name + "/" + (from_helper ? "other" : "this");
        }
      }
    }
    cs::check_that("capture_modes", as_documented,
                   as_documented ? "Global refuses cudaMalloc in every thread, ThreadLocal only in "
                                   "the capturing thread, Relaxed in none, as documented"
                                 : "differs from the documented rules in:" + mismatches);
    CS_CHECK(cudaFree(scratch));
  }

  std::printf(
      "\nCapture records work instead of running it; events between streams become "
      "edges. Replaying the\ninstantiated graph costs one launch for all of its "
      "kernels, and its parameters can be changed in place.\n");

  CS_CHECK(cudaGraphExecDestroy(chain_exec));
  CS_CHECK(cudaGraphDestroy(chain_graph));
  CS_CHECK(cudaFree(counter));
  CS_CHECK(cudaGraphExecDestroy(graph_exec));
  CS_CHECK(cudaGraphDestroy(graph));
  CS_CHECK(cudaFree(fj.x));
  CS_CHECK(cudaFree(fj.partials));
  CS_CHECK(cudaEventDestroy(fj.fork));
  for (int s = 1; s < stream_count; ++s) CS_CHECK(cudaEventDestroy(fj.joins[s]));
  for (cudaStream_t stream : fj.streams) CS_CHECK(cudaStreamDestroy(stream));
  return cs::finish();
}
