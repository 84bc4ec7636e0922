// Chapter 09's machinery: flags, the fork/join's streams, events and buffers, the CPU reference,
// the graph's shape. None of it is the lesson: the calls the chapter teaches are written out in
// graph_capture.cu.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "cuda_streams.hpp"

namespace graph_capture_lab {

constexpr unsigned kModulus = 1000003u;  // keeps the iterated values small and exact

// The fork/join's streams (streams[0] is the origin), events (joins[s] recorded by streams[s]),
// data x, a row of partial results per stream, and x on the CPU (`want`), every part's reference.
struct ForkJoin {
  std::vector<cudaStream_t> streams;
  cudaEvent_t fork = nullptr;
  std::vector<cudaEvent_t> joins;
  unsigned *x = nullptr, *partials = nullptr;
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
  // Non-blocking: while a blocking stream captures, any use of the legacy default stream fails
  // (cudaErrorStreamCaptureImplicit); these streams leave it usable.
  for (cudaStream_t& s : fj.streams) CS_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  CS_CHECK(cudaEventCreateWithFlags(&fj.fork, cudaEventDisableTiming));
  for (int s = 1; s < streams; ++s)
    CS_CHECK(cudaEventCreateWithFlags(&fj.joins[s], cudaEventDisableTiming));
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
  for (unsigned& v : fj.want) {
    for (int r = 0; r < rounds; ++r) {
      const unsigned prepared = (v + increment) % kModulus;
      unsigned sum = 0;
      for (unsigned b = 0; b < fj.streams.size(); ++b) sum += (prepared * (b + 2) + b) % kModulus;
      v = sum % kModulus;
    }
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
  const char* names[] = {"None", "Active", "Invalidated"};  // the enum's values 0, 1 and 2
  return status >= 0 && status <= 2 ? names[status] : "unknown";
}

// A captured graph's shape, from cudaGraphGetNodes and cudaGraphGetEdges, printed in one line.
// Roots have no dependency, nothing depends on leaves, the middle nodes have one of each.
struct GraphShape {
  std::size_t nodes = 0, kernel_nodes = 0, edges = 0, roots = 0, leaves = 0, middle = 0;
};

inline GraphShape shape_of(cudaGraph_t graph) {
  GraphShape shape;
  CS_CHECK(cudaGraphGetNodes(graph, nullptr, &shape.nodes));
  std::vector<cudaGraphNode_t> nodes(shape.nodes);
  CS_CHECK(cudaGraphGetNodes(graph, nodes.data(), &shape.nodes));
  // CUDA 13 added the edge data (ports) to cudaGraphGetEdges (CUDA 12.3+ has it as _v2);
  // under CUDA 12 the lab calls cudaGraphGetEdges without it: the shape needs only the ends.
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
  for (cudaGraphNode_t node : nodes) {
    cudaGraphNodeType type = cudaGraphNodeTypeEmpty;
    CS_CHECK(cudaGraphNodeGetType(node, &type));
    if (type == cudaGraphNodeTypeKernel) ++shape.kernel_nodes;
    const auto in = std::count(to.begin(), to.end(), node);
    const auto out = std::count(from.begin(), from.end(), node);
    if (in == 0) ++shape.roots;
    if (out == 0) ++shape.leaves;
    if (in == 1 && out == 1) ++shape.middle;
  }
  std::printf(
      "   The captured graph: %zu nodes (%zu kernels), %zu edges; %zu root, %zu leaf, "
      "%zu nodes between them side by side.\n",
      shape.nodes, shape.kernel_nodes, shape.edges, shape.roots, shape.leaves, shape.middle);
  return shape;
}

}  // namespace graph_capture_lab
