// Exercise for chapter 01: a 2D launch that must visit every element exactly once.
//
// The task
//   This program counts, on the GPU, how often each element of a width x height array is visited
//   by one launch of `visit` (one thread per element, blocks of block x block threads, in a
//   created stream), and compares the counts with a CPU reference of ones. The default size,
//   1000 x 777, is not a multiple of the 16 x 16 block. As given, some elements are never
//   visited and its CHECK line fails. Find out why, using what part 2 of chapter 01 says about
//   Dg and Db, and fix the launch. The two places marked TODO(exercise) are where to look: the
//   grid, and the kernel. Do not change the reference, the array's size or the block.
//
// Build, run and test
//   cmake --preset exercises && cmake --build --preset exercises
//   build-exercises/bin/01_launch_config_exercise
//   ctest --preset exercises -R '^01_launch_config_exercise\.'
//
// What it prints
//   The launch configuration, then `CHECK coverage_2d: N of M values differ from the CPU
//   reference`: an element visited twice or never counts as a difference. Exit status 0 once the
//   exercise is solved, for every size and block the flags accept.

#include <cuda_runtime.h>

#include <cstdio>
#include <vector>

#include "cuda_streams.hpp"

// One thread per element: thread (x, y) counts one visit to element (x, y) of a width x height
// array stored row after row.
__global__ void visit(unsigned* visits, int width, int height) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x;
  const int y = blockIdx.y * blockDim.y + threadIdx.y;
  // TODO(exercise): which threads may count a visit?
  atomicAdd(&visits[y * width + x], 1u);
}

int main(int argc, char** argv) {
  int width = 1000;
  int height = 777;
  int block = 16;
  cs::CommonOptions common;
  cs::Options options("01_launch_config_exercise",
                      "Exercise: a 2D launch that visits every element exactly once.");
  options.add_int("width", &width, 1, 8192, "elements in x");
  options.add_int("height", &height, 1, 8192, "elements in y");
  options.add_int("block", &block, 1, 32, "threads per block in x and in y (block x block)");
  cs::add_common_options(options, &common);
  cs::parse_or_exit(options, argc, argv);
  cs::select_device(common.device);

  const auto count = static_cast<std::size_t>(width) * static_cast<std::size_t>(height);
  unsigned* visits = nullptr;
  CS_CHECK(cudaMalloc(&visits, count * sizeof(unsigned)));
  cudaStream_t stream = nullptr;
  CS_CHECK(cudaStreamCreate(&stream));
  CS_CHECK(cudaMemsetAsync(visits, 0, count * sizeof(unsigned), stream));

  // Dg and Db: one thread per element.
  const dim3 threads(block, block);
  // TODO(exercise): does this grid reach the last columns and rows?
  const dim3 blocks(width / block, height / block);
  std::printf("%d x %d elements: visit<<<dim3(%u, %u), dim3(%u, %u), 0, stream>>>\n", width, height,
              blocks.x, blocks.y, threads.x, threads.y);
  if (blocks.x > 0 && blocks.y > 0) {  // a grid of 0 blocks is an invalid configuration
    visit<<<blocks, threads, 0, stream>>>(visits, width, height);
    CS_CHECK_LAUNCH();
  }

  std::vector<unsigned> got(count);
  CS_CHECK(cudaMemcpyAsync(got.data(), visits, count * sizeof(unsigned), cudaMemcpyDeviceToHost,
                           stream));
  CS_CHECK(cudaStreamSynchronize(stream));  // `got` is complete only after this
  cs::verify("coverage_2d", got, std::vector<unsigned>(count, 1u));
  std::printf(
      "Every element must be visited once: a grid that stops short leaves elements at 0, and a\n"
      "thread past the edge of a row counts a visit to an element of the next row.\n");

  CS_CHECK(cudaStreamDestroy(stream));
  CS_CHECK(cudaFree(visits));
  return cs::finish();
}
