// Exercise for chapter 09: a fork/join capture that does not end.
//
// The task
//   A round of work is a fork/join over several streams: a `prepare` kernel in the origin stream,
//   then one `branch` kernel per stream, side by side, each on its own part of the data, then a
//   `combine` kernel in the origin stream once every branch is done. The program captures one
//   round into a CUDA graph, instantiates it once and replays it many times. As given,
//   cudaStreamEndCapture refuses to end the capture, there is no graph to replay, and the CHECK
//   lines say so. Find out why from the error it returns, using what chapter 09 shows, and fix
//   the capture so that it ends with a graph of the right shape and the replays match the CPU.
//   The line marked TODO(exercise) is where to look. Do not change the kernels or the checks.
//
// Build, run and test
//   cmake --preset exercises && cmake --build --preset exercises
//   build-exercises/bin/09_graph_capture_exercise
//   ctest --preset exercises -R '^09_graph_capture_exercise\.'
//
// What it prints
//   What cudaStreamEndCapture returned, the captured graph's nodes, edges, roots and leaves, and
//   the CHECK lines: the capture ended, the graph is prepare -> one branch per stream -> combine,
//   and the data after all replays equals the CPU's.

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <set>
#include <string>
#include <vector>

#include "cuda_streams.hpp"

constexpr int kBlock = 256;

__global__ void prepare(std::uint32_t* data, std::size_t n) {
  const std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) data[i] += 1u;
}

// Branch `part` of `parts` works on its own contiguous part of the data.
__global__ void branch(std::uint32_t* data, std::size_t n, int part, int parts) {
  const std::size_t first = n * static_cast<std::size_t>(part) / static_cast<std::size_t>(parts);
  const std::size_t last = n * static_cast<std::size_t>(part + 1) / static_cast<std::size_t>(parts);
  const std::size_t i = first + static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < last) data[i] = 3u * data[i] + static_cast<std::uint32_t>(part);
}

__host__ __device__ std::uint32_t mix(std::uint32_t x) {
  return x ^ (x >> 7);
}

__global__ void combine(std::uint32_t* data, std::size_t n) {
  const std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) data[i] = mix(data[i]);
}

// The same round on the CPU.
void round_on_cpu(std::vector<std::uint32_t>& data, int parts) {
  const std::size_t n = data.size();
  for (std::uint32_t& x : data) x += 1u;
  for (int part = 0; part < parts; ++part) {
    const std::size_t first = n * static_cast<std::size_t>(part) / static_cast<std::size_t>(parts);
    const std::size_t last =
        n * static_cast<std::size_t>(part + 1) / static_cast<std::size_t>(parts);
    for (std::size_t i = first; i < last; ++i)
      data[i] = 3u * data[i] + static_cast<std::uint32_t>(part);
  }
  for (std::uint32_t& x : data) x = mix(x);
}

int main(int argc, char** argv) {
  int stream_count = 4;
  std::size_t elements = 1 << 16;
  int replays = 100;
  cs::CommonOptions common;
  cs::Options options("09_graph_capture_exercise",
                      "Exercise: capture a fork/join over several streams into one graph.");
  options.add_int("streams", &stream_count, 2, 16, "streams of the fork/join (the origin too)");
  options.add_size("elements", &elements, 16, 1 << 24, "values the kernels work on");
  options.add_int("replays", &replays, 1, 10000, "replays of the instantiated graph");
  cs::add_common_options(options, &common);
  cs::parse_or_exit(options, argc, argv);

  cs::select_device(common.device);
  const auto streams_n = static_cast<std::size_t>(stream_count);
  const std::size_t bytes = elements * sizeof(std::uint32_t);
  const unsigned grid = static_cast<unsigned>((elements + kBlock - 1) / kBlock);
  std::vector<std::uint32_t> host(elements);
  for (std::size_t i = 0; i < elements; ++i) host[i] = static_cast<std::uint32_t>(i * 40503u);
  std::uint32_t* data = nullptr;
  CS_CHECK(cudaMalloc(&data, bytes));
  CS_CHECK(cudaMemcpy(data, host.data(), bytes, cudaMemcpyHostToDevice));
  CS_CHECK(cudaDeviceSynchronize());  // a pageable copy may return before its data lands

  std::vector<cudaStream_t> streams(streams_n);
  for (cudaStream_t& stream : streams) {
    CS_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  }
  cudaStream_t origin = streams[0];
  cudaEvent_t fork = nullptr;
  std::vector<cudaEvent_t> joins(streams_n);
  CS_CHECK(cudaEventCreateWithFlags(&fork, cudaEventDisableTiming));
  for (cudaEvent_t& join : joins) CS_CHECK(cudaEventCreateWithFlags(&join, cudaEventDisableTiming));

  // One round, captured: prepare, fork, a branch per stream, join, combine.
  CS_CHECK(cudaStreamBeginCapture(origin, cudaStreamCaptureModeGlobal));
  prepare<<<grid, kBlock, 0, origin>>>(data, elements);
  CS_CHECK_LAUNCH();
  CS_CHECK(cudaEventRecord(fork, origin));
  for (int s = 1; s < stream_count; ++s) {
    CS_CHECK(cudaStreamWaitEvent(streams[static_cast<std::size_t>(s)], fork, 0));
  }
  const unsigned branch_grid =
      static_cast<unsigned>((elements / streams_n + 1 + kBlock - 1) / kBlock);
  for (int s = 0; s < stream_count; ++s) {
    branch<<<branch_grid, kBlock, 0, streams[static_cast<std::size_t>(s)]>>>(data, elements, s,
                                                                             stream_count);
    CS_CHECK_LAUNCH();
  }
  // TODO(exercise): cudaStreamEndCapture below refuses to end the capture. Read the error it
  // returns; then compare the streams that joined the capture with the streams that leave it.
  for (int s = 1; s < stream_count; ++s) {
    CS_CHECK(
        cudaEventRecord(joins[static_cast<std::size_t>(s)], streams[static_cast<std::size_t>(s)]));
  }
  for (int s = 1; s < stream_count - 1; ++s) {
    CS_CHECK(cudaStreamWaitEvent(origin, joins[static_cast<std::size_t>(s)], 0));
  }
  combine<<<grid, kBlock, 0, origin>>>(data, elements);
  CS_CHECK_LAUNCH();
  cudaGraph_t graph = nullptr;
  const cudaError_t ended = cudaStreamEndCapture(origin, &graph);
  std::printf("cudaStreamEndCapture returned %s (%s)\n", cudaGetErrorName(ended),
              cudaGetErrorString(ended));
  if (!cs::check_that("capture_ended", ended == cudaSuccess && graph != nullptr,
                      "the fork/join over " + std::to_string(stream_count) +
                          " streams was captured into one graph")) {
    std::printf("No graph: nothing to instantiate or replay.\n");
    cudaGetLastError();  // the capture's error is not sticky; clear it before leaving
    return cs::finish();
  }

  // The graph's shape, from its nodes and edges.
  std::size_t node_count = 0;
  CS_CHECK(cudaGraphGetNodes(graph, nullptr, &node_count));
  std::vector<cudaGraphNode_t> nodes(node_count);
  CS_CHECK(cudaGraphGetNodes(graph, nodes.data(), &node_count));
  int kernel_nodes = 0;
  for (cudaGraphNode_t node : nodes) {
    cudaGraphNodeType type{};
    CS_CHECK(cudaGraphNodeGetType(node, &type));
    kernel_nodes += type == cudaGraphNodeTypeKernel;
  }
  std::size_t edge_count = 0;
#if CUDART_VERSION >= 13000
  CS_CHECK(cudaGraphGetEdges(graph, nullptr, nullptr, nullptr, &edge_count));
  std::vector<cudaGraphNode_t> from(edge_count), to(edge_count);
  CS_CHECK(cudaGraphGetEdges(graph, from.data(), to.data(), nullptr, &edge_count));
#else
  CS_CHECK(cudaGraphGetEdges(graph, nullptr, nullptr, &edge_count));
  std::vector<cudaGraphNode_t> from(edge_count), to(edge_count);
  CS_CHECK(cudaGraphGetEdges(graph, from.data(), to.data(), &edge_count));
#endif
  const std::set<cudaGraphNode_t> has_parent(to.begin(), to.end());
  const std::set<cudaGraphNode_t> has_child(from.begin(), from.end());
  int roots = 0;
  int leaves = 0;
  for (cudaGraphNode_t node : nodes) {
    roots += has_parent.count(node) == 0;
    leaves += has_child.count(node) == 0;
  }
  std::printf("The captured graph: %zu nodes (%d kernels), %zu edges, %d root%s, %d lea%s\n",
              node_count, kernel_nodes, edge_count, roots, roots == 1 ? "" : "s", leaves,
              leaves == 1 ? "f" : "ves");
  const std::size_t want_nodes = streams_n + 2;
  const std::size_t want_edges = 2 * streams_n;
  cs::check_that("graph_shape",
                 node_count == want_nodes && kernel_nodes == static_cast<int>(want_nodes) &&
                     edge_count == want_edges && roots == 1 && leaves == 1,
                 "prepare -> " + std::to_string(stream_count) +
                     " parallel branches -> combine: " + std::to_string(want_nodes) +
                     " kernel nodes, " + std::to_string(want_edges) + " edges, one root, one leaf");

  // Instantiate once, replay many times.
  cudaGraphExec_t exec = nullptr;
  CS_CHECK(cudaGraphInstantiate(&exec, graph, 0));
  for (int r = 0; r < replays; ++r) CS_CHECK(cudaGraphLaunch(exec, origin));
  std::vector<std::uint32_t> got(elements);
  CS_CHECK(cudaStreamSynchronize(origin));
  CS_CHECK(cudaMemcpy(got.data(), data, bytes, cudaMemcpyDeviceToHost));
  for (int r = 0; r < replays; ++r) round_on_cpu(host, stream_count);
  cs::verify("replay_results", got, host);

  CS_CHECK(cudaGraphExecDestroy(exec));
  CS_CHECK(cudaGraphDestroy(graph));
  for (cudaEvent_t join : joins) CS_CHECK(cudaEventDestroy(join));
  CS_CHECK(cudaEventDestroy(fork));
  for (cudaStream_t stream : streams) CS_CHECK(cudaStreamDestroy(stream));
  CS_CHECK(cudaFree(data));
  return cs::finish();
}
