// Chapter 09's machinery: flags, the fork/join's streams, events and buffers, the CPU reference,
// the graph's shape, the capture-mode table's "other thread", the lines the parts print. None of
// it is the lesson: the calls the chapter teaches are written out in graph_capture.cu.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <condition_variable>
#include <cstdio>
#include <functional>
#include <initializer_list>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "cuda_streams.hpp"

namespace graph_capture_lab {

constexpr unsigned kModulus = 1000003u;  // keeps the iterated values small and exact

// The chapter's flags, with their defaults.
struct Flags {
  int streams = 4;         // of the fork/join, the origin included
  int elements = 1 << 16;  // each kernel of the fork/join works on this many
  int replays = 100;       // replays of the graph per phase
  int kernels = 1000;      // tiny kernels in the launch-cost chain
  std::string dot_path;    // --dot FILE
  bool no_error_demos = false;
};

inline void add_flags(cs::Options& options, Flags* f) {
  options.add_int("streams", &f->streams, 3, 16, "streams of the fork/join, the origin included");
  options.add_int("elements", &f->elements, 1, 1 << 26,
                  "elements each kernel of the fork/join works on");
  options.add_int("replays", &f->replays, 1, 100000, "replays of the graph per phase");
  options.add_int("kernels", &f->kernels, 10, 100000, "tiny kernels in the launch-cost chain");
  options.add_string(
      "dot", &f->dot_path, "FILE",
      "write the captured fork/join graph in Graphviz format (cudaGraphDebugDotPrint)");
  options.add_flag("no-error-demos", &f->no_error_demos,
                   "skip the calls that fail on purpose (sync and cudaMalloc during capture), e.g. "
                   "under compute-sanitizer");
}

// Exits 2 unless --dot's file can be written; leaves no file behind that was not there before.
inline void require_writable_dot(const Flags& f) {
  if (f.dot_path.empty()) return;
  std::FILE* existing = std::fopen(f.dot_path.c_str(), "r");
  const bool existed = existing != nullptr;
  if (existing) std::fclose(existing);
  std::FILE* file = std::fopen(f.dot_path.c_str(), "a");
  if (!file) cs::usage_error("--dot " + f.dot_path + ": cannot write this file");
  std::fclose(file);
  if (!existed) std::remove(f.dot_path.c_str());
}

// The fork/join's streams (streams[0] is the origin), events (joins[s] recorded by streams[s]),
// data x, a row of partial results per stream, and x on the CPU (`want`), every part's reference.
struct ForkJoin {
  std::vector<cudaStream_t> streams;
  cudaEvent_t fork = nullptr;
  std::vector<cudaEvent_t> joins;
  unsigned* x = nullptr;
  unsigned* partials = nullptr;
  int n = 0;
  std::vector<unsigned> want;
  int branches() const { return static_cast<int>(streams.size()); }
  cudaStream_t origin() const { return streams[0]; }
};

inline ForkJoin make_fork_join(int streams, int n) {
  const std::size_t row_bytes = static_cast<std::size_t>(n) * sizeof(unsigned);
  cs::require_fits_on_device(static_cast<std::size_t>(streams + 1) * row_bytes,
                             cs::format("--elements %d --streams %d", n, streams));
  ForkJoin fj;
  fj.n = n;
  fj.streams.resize(static_cast<std::size_t>(streams));
  fj.joins.resize(static_cast<std::size_t>(streams), nullptr);
  // Non-blocking: the legacy default stream would otherwise join every capture's dependencies.
  for (cudaStream_t& stream : fj.streams) {
    CS_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  }
  CS_CHECK(cudaEventCreateWithFlags(&fj.fork, cudaEventDisableTiming));
  for (int s = 1; s < streams; ++s) {
    CS_CHECK(cudaEventCreateWithFlags(&fj.joins[s], cudaEventDisableTiming));
  }
  CS_CHECK(cudaMalloc(&fj.x, row_bytes));
  CS_CHECK(cudaMalloc(&fj.partials, static_cast<std::size_t>(streams) * row_bytes));
  return fj;
}

inline void destroy(ForkJoin& fj) {
  CS_CHECK(cudaFree(fj.x));
  CS_CHECK(cudaFree(fj.partials));
  CS_CHECK(cudaEventDestroy(fj.fork));
  for (int s = 1; s < fj.branches(); ++s) CS_CHECK(cudaEventDestroy(fj.joins[s]));
  for (cudaStream_t stream : fj.streams) CS_CHECK(cudaStreamDestroy(stream));
}

// x[i] = i on the device (in the origin stream: non-blocking streams ignore stream 0) and CPU.
inline void reset(ForkJoin& fj) {
  fj.want.resize(static_cast<std::size_t>(fj.n));
  for (int i = 0; i < fj.n; ++i) fj.want[i] = static_cast<unsigned>(i) % kModulus;
  CS_CHECK(cudaMemcpyAsync(fj.x, fj.want.data(), fj.want.size() * sizeof(unsigned),
                           cudaMemcpyHostToDevice, fj.origin()));
  CS_CHECK(cudaStreamSynchronize(fj.origin()));
}

// `rounds` rounds of the fork/join (prepare, one branch per stream, combine) on the CPU's copy.
inline void run_on_cpu(ForkJoin& fj, unsigned increment, int rounds) {
  for (unsigned& value : fj.want) {
    unsigned v = value;
    for (int r = 0; r < rounds; ++r) {
      const unsigned prepared = (v + increment) % kModulus;
      unsigned sum = 0;
      for (int b = 0; b < fj.branches(); ++b) {
        sum += (prepared * static_cast<unsigned>(b + 2) + static_cast<unsigned>(b)) % kModulus;
      }
      v = sum % kModulus;
    }
    value = v;
  }
}

// Compares the device's x with the CPU's copy: `CHECK name: 0 of N values differ ... PASS`.
inline void verify(const std::string& name, const ForkJoin& fj) {
  CS_CHECK(cudaStreamSynchronize(fj.origin()));
  std::vector<unsigned> got(fj.want.size());
  CS_CHECK(cudaMemcpy(got.data(), fj.x, got.size() * sizeof(unsigned), cudaMemcpyDeviceToHost));
  cs::verify(name, got, fj.want);
}

inline const char* status_name(cudaStreamCaptureStatus status) {
  if (status == cudaStreamCaptureStatusNone) return "None";
  if (status == cudaStreamCaptureStatusActive) return "Active";
  return status == cudaStreamCaptureStatusInvalidated ? "Invalidated" : "unknown";
}

// A captured graph's shape, from cudaGraphGetNodes and cudaGraphGetEdges.
struct GraphShape {
  std::size_t nodes = 0;
  std::size_t kernel_nodes = 0;
  std::size_t edges = 0;
  std::size_t roots = 0;   // no dependency
  std::size_t leaves = 0;  // nothing depends on it
  std::size_t middle = 0;  // exactly one dependency and one dependent
  cudaGraphNode_t root = nullptr;
};

inline GraphShape shape_of(cudaGraph_t graph) {
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
    const int in = in_degree[node], out = out_degree[node];
    if (in == 0) {
      ++shape.roots;
      shape.root = node;
    }
    if (out == 0) ++shape.leaves;
    if (in == 1 && out == 1) ++shape.middle;
  }
  return shape;
}

inline void print_shape(const GraphShape& shape) {
  std::printf(
      "   The captured graph: %zu nodes (%zu kernels), %zu edges; %zu root, %zu leaf, "
      "%zu nodes between them side by side.\n",
      shape.nodes, shape.kernel_nodes, shape.edges, shape.roots, shape.leaves, shape.middle);
}

// A host thread that runs what it is handed and returns the result: the capture-mode table's
// "other thread" (the caller waits for it on the host, outside CUDA).
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

// The helper's context is made current before any capture (a first CUDA call would be refused).
inline void bind_to_device(HelperThread& helper, int device) {
  CS_CHECK(helper.call([device] {
    const cudaError_t status = cudaSetDevice(device);
    return status != cudaSuccess ? status : cudaFree(nullptr);
  }));
}

// One row of the capture-mode table.
struct ModeRow {
  const char* name;
  cudaStreamCaptureMode mode;
  bool documented_this_thread_may;   // the rules of cudaThreadExchangeStreamCaptureMode
  bool documented_other_thread_may;  // for a thread in the default (global) mode
};
constexpr ModeRow kModeRows[] = {
    {"Global", cudaStreamCaptureModeGlobal, false, false},
    {"ThreadLocal", cudaStreamCaptureModeThreadLocal, false, true},
    {"Relaxed", cudaStreamCaptureModeRelaxed, true, true},
};

// Part modes' table and its tally: each cell printed and compared with the documented rules.
class ModeTally {
 public:
  ModeTally() {
    std::printf("   cudaMalloc during a capture, by capture mode and calling thread:\n");
    std::printf("   %-12s %-14s %-34s %-12s %s\n", "mode", "cudaMalloc by", "returned",
                "capture then", "EndCapture returned");
  }
  void add(const ModeRow& row, bool other_thread, cudaError_t malloc_status,
           cudaStreamCaptureStatus status_after, cudaError_t end_status) {
    std::printf("   %-12s %-14s %-34s %-12s %s\n", row.name,
                other_thread ? "other thread" : "this thread", cudaGetErrorName(malloc_status),
                status_name(status_after), cudaGetErrorName(end_status));
    const bool documented =
        other_thread ? row.documented_other_thread_may : row.documented_this_thread_may;
    if ((malloc_status == cudaSuccess) != documented) {
      mismatches_ += cs::format(" %s/%s", row.name, other_thread ? "other" : "this");
    }
  }
  bool as_documented() const { return mismatches_.empty(); }
  std::string detail() const {
    return as_documented() ? "Global refuses cudaMalloc in every thread, ThreadLocal only in the "
                             "capturing thread, Relaxed in none, as documented"
                           : "differs from the documented rules in:" + mismatches_;
  }

 private:
  std::string mismatches_;
};

// After one cell of part modes: the graph, the allocation (cudaFree during the capture is as
// "unsafe" as cudaMalloc) and the errors the refused calls left on each thread go.
inline void clean_up_after_capture(cudaGraph_t graph, void* allocation, HelperThread& helper) {
  if (graph) CS_CHECK(cudaGraphDestroy(graph));
  if (allocation) CS_CHECK(cudaFree(allocation));
  (void)cudaGetLastError();
  helper.call([] { return cudaGetLastError(); });
}

inline void write_dot(cudaGraph_t graph, const std::string& path) {
  CS_CHECK(cudaGraphDebugDotPrint(graph, path.c_str(), cudaGraphDebugDotFlagsVerbose));
  std::printf("   wrote the captured graph to %s (render it: dot -Tsvg %s -o graph.svg)\n",
              path.c_str(), path.c_str());
}

inline void print_set_params(const cudaKernelNodeParams& params, unsigned now, unsigned before) {
  std::printf(
      "   cudaGraphExecKernelNodeSetParams: the root node (prepare, grid %u x block %u) now adds "
      "%u instead of %u.\n",
      params.gridDim.x, params.blockDim.x, now, before);
}

// The shortest spin in `times` (start, end per branch, ns) after `stream`; 0 if one never wrote.
inline double shortest_spin_ms(const unsigned long long* times, int branches, cudaStream_t stream) {
  std::vector<unsigned long long> host(2 * static_cast<std::size_t>(branches));
  CS_CHECK(cudaMemcpyAsync(host.data(), times, host.size() * sizeof(host[0]),
                           cudaMemcpyDeviceToHost, stream));
  CS_CHECK(cudaStreamSynchronize(stream));
  double shortest = 1e300;
  for (int s = 0; s < branches; ++s) {
    shortest = std::min(shortest, static_cast<double>(host[2 * s + 1] - host[2 * s]) / 1e6);
  }
  return shortest;
}

// Part branches' table: the fork from the streams and replayed, how many branches ran at once.
inline void print_branches(int branches, double branch_ms, int repeats, double streams_ms,
                           double graph_ms) {
  auto at_once = [&](double ms) { return ms > 0 ? branches * branch_ms / ms : 0; };
  std::printf("   %d branches of %s each, from fork to join (events, median of %d):\n", branches,
              cs::format_ms(branch_ms).c_str(), repeats);
  std::printf("   issued into %2d streams   %9s -> %5.2f branches at once\n", branches,
              cs::format_ms(streams_ms).c_str(), at_once(streams_ms));
  std::printf("   one graph replay         %9s -> %5.2f branches at once\n",
              cs::format_ms(graph_ms).c_str(), at_once(graph_ms));
}

// The detail of the exec_update check: what cudaGraphExecUpdate returned.
inline std::string update_detail(unsigned increment, cudaError_t status,
                                 const cudaGraphExecUpdateResultInfo& info) {
  const std::string result = info.result == cudaGraphExecUpdateSuccess
                                 ? std::string("cudaGraphExecUpdateSuccess")
                                 : cs::format("code %d", static_cast<int>(info.result));
  return cs::format("cudaGraphExecUpdate from a re-capture (increment %u) returned %s, result %s",
                    increment, cudaGetErrorName(status), result.c_str());
}

// Part cost's table: the median time of each chain and its cost per kernel.
inline void print_costs(int kernels, double stream_ms, double graph_ms, int repeats) {
  const std::string stream_label = cs::format("stream: %d launches + sync", kernels);
  std::printf("   %-36s %9.3f ms -> %6.2f us per kernel\n", stream_label.c_str(), stream_ms,
              1000.0 * stream_ms / kernels);
  std::printf("   %-36s %9.3f ms -> %6.2f us per kernel\n", "graph:  one cudaGraphLaunch + sync",
              graph_ms, 1000.0 * graph_ms / kernels);
  std::printf("   (host clock around launch + cudaDeviceSynchronize, median of %d runs)\n",
              repeats);
}

// What part sync observed: the refused synchronization, the spoiled capture, the error's reads.
inline void print_spoiled_capture(cudaError_t sync_status, cudaStreamCaptureStatus status_after,
                                  cudaError_t end_status, bool graph_returned,
                                  cudaError_t first_read, cudaError_t second_read) {
  std::printf("   cudaStreamSynchronize(capturing stream) returned %s\n",
              cudaGetErrorName(sync_status));
  std::printf("   cudaStreamIsCapturing then said %s; cudaStreamEndCapture returned %s%s\n",
              status_name(status_after), cudaGetErrorName(end_status),
              graph_returned ? " and a graph" : " and no graph");
  std::printf("   cudaGetLastError() returned %s, then %s\n", cudaGetErrorName(first_read),
              cudaGetErrorName(second_read));
}

// --no-error-demos: the checks of the calls that fail on purpose say why they did not run.
inline void skip_error_demos(std::initializer_list<const char*> checks) {
  for (const char* name : checks) cs::check_skipped(name, "--no-error-demos");
}

}  // namespace graph_capture_lab
