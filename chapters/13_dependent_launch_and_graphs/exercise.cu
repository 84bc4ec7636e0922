// Exercise for chapter 13: a PDL consumer that reads too early.
//
// The task
//   A slow producer (it waits 5 ms on the GPU, then writes values that differ in every round)
//   lets its dependent launch at once (cudaTriggerProgrammaticLaunchCompletion). The consumer is
//   launched with programmatic dependent launch, so it starts while the producer still waits. As
//   given it reads the producer's output before cudaGridDependencySynchronize, and every value it
//   computes is stale. Make the results right and keep the PDL launch. The line marked
//   TODO(exercise) is where to look. Do not change the producer, the launch or the check.
//
// Build, run and test
//   cmake --preset exercises && cmake --build --preset exercises
//   build-exercises/bin/13_dependent_launch_and_graphs_exercise
//   ctest --preset exercises -R '^13_dependent_launch_and_graphs_exercise\.'
//
// It needs compute capability 9.0 (Hopper) or newer; elsewhere it says SKIP: and exits 77. Built
// without compute_90 code (nvcc with no -arch, or CMake for older architectures only), it fails
// its pdl_device_code check and says how to build it: -arch=native, or
// -DCMAKE_CUDA_ARCHITECTURES=90.

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "cuda_streams.hpp"
#include "cuda_streams/device_clock.cuh"

constexpr int kThreads = 128;
constexpr int kBlocks = 8;

__host__ __device__ unsigned int produced_value(int round, int i) {
  return static_cast<unsigned int>(round + 1) * 1000003u + static_cast<unsigned int>(i);
}

__global__ void producer(unsigned int* data, int n, unsigned long long delay_ns, int round) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  cudaTriggerProgrammaticLaunchCompletion();  // the consumer may launch now
#endif
  if (threadIdx.x == 0) {
    const unsigned long long start = cs::globaltimer_ns();
    while (cs::globaltimer_ns() - start < delay_ns) {
    }
  }
  __syncthreads();
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) data[i] = produced_value(round, i);
}

__global__ void consumer(const unsigned int* data, unsigned int* out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  const unsigned int x = data[i];   // TODO(exercise): is the producer's value there yet?
  cudaGridDependencySynchronize();  // waits for the producer's end and its writes
#else
  const unsigned int x{data[i]};  // before Hopper: no PDL, plain stream order
#endif
  out[i] = 3u * x + 1u;
}

int main(int argc, char** argv) {
  int rounds = 4;
  cs::CommonOptions common;
  cs::Options options("13_dependent_launch_and_graphs_exercise",
                      "A PDL consumer that reads its producer's output too early.");
  options.add_int("rounds", &rounds, 1, 50, "producer/consumer rounds");
  cs::add_common_options(options, &common);
  cs::parse_or_exit(options, argc, argv);
  const cudaDeviceProp prop = cs::select_device(common.device);
  if (prop.major < 9) cs::skip("PDL needs compute capability 9.0 or newer");
  // PDL's device calls above exist only in code compiled for compute_90 or newer. A binary
  // without it (no -arch, or older architectures run from their PTX) runs kernels that neither
  // trigger nor wait, and the exercise would pass unsolved: refuse it, naming the fix.
  cudaFuncAttributes producer_code{}, consumer_code{};
  CS_CHECK(cudaFuncGetAttributes(&producer_code, producer));
  CS_CHECK(cudaFuncGetAttributes(&consumer_code, consumer));
  const int ptx = std::min(producer_code.ptxVersion, consumer_code.ptxVersion);
  const int sass = std::min(producer_code.binaryVersion, consumer_code.binaryVersion);
  if (!cs::check_that("pdl_device_code", ptx >= 90 && sass >= 90,
                      cs::format("the kernels run as sm_%d code compiled for compute_%d; PDL's "
                                 "device calls need compute_90 or newer",
                                 sass, ptx))) {
    std::printf("Build for this GPU: nvcc -arch=native, or cmake -DCMAKE_CUDA_ARCHITECTURES=90\n");
    return cs::finish();
  }

  const int n = kBlocks * kThreads;
  unsigned int *data = nullptr, *out = nullptr;
  cudaStream_t stream = nullptr;
  CS_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  CS_CHECK(cudaMalloc(&data, n * sizeof(unsigned int)));
  CS_CHECK(cudaMalloc(&out, n * sizeof(unsigned int)));
  std::vector<unsigned int> got(n), want(n);
  cs::Comparison results;
  for (int round = 0; round < rounds; ++round) {
    CS_CHECK(cudaMemsetAsync(data, 0, n * sizeof(unsigned int), stream));
    producer<<<kBlocks, kThreads, 0, stream>>>(data, n, 5000000ull, round);
    CS_CHECK_LAUNCH();
    cudaLaunchAttribute attribute{};
    attribute.id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attribute.val.programmaticStreamSerializationAllowed = 1;
    cudaLaunchConfig_t config{};
    config.gridDim = dim3(kBlocks);
    config.blockDim = dim3(kThreads);
    config.stream = stream;
    config.attrs = &attribute;
    config.numAttrs = 1;
    CS_CHECK(cudaLaunchKernelEx(&config, consumer, static_cast<const unsigned int*>(data), out, n));
    CS_CHECK(
        cudaMemcpyAsync(got.data(), out, n * sizeof(unsigned int), cudaMemcpyDeviceToHost, stream));
    CS_CHECK(cudaStreamSynchronize(stream));
    for (int i = 0; i < n; ++i) want[i] = 3u * produced_value(round, i) + 1u;
    cs::accumulate(results, cs::compare(got.data(), want.data(), n));
  }
  cs::report_comparison("consumer_results", results);
  CS_CHECK(cudaFree(data));
  CS_CHECK(cudaFree(out));
  CS_CHECK(cudaStreamDestroy(stream));
  return cs::finish();
}
