// Exercise for chapter 14: a cuBLAS handle that was never given its stream.
//
// The task
//   A slow kernel prepares A and B in a non-blocking stream (it waits 5 ms on the GPU, then
//   writes them); a cuBLAS SGEMM in the same stream multiplies them; the result is copied back
//   in that stream. As given, every result is wrong: the handle's GEMM does not run where the
//   program thinks it does. Make the results right with one call, without synchronizing the
//   host. The line marked TODO(exercise) is where to look. Do not change the kernel or the check.
//
// Build, run and test
//   cmake --preset exercises && cmake --build --preset exercises
//   build-exercises/bin/14_libraries_on_streams_exercise
//   ctest --preset exercises -R '^14_libraries_on_streams_exercise\.'

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstdio>
#include <vector>

#include "cuda_streams.hpp"
#include "cuda_streams/device_clock.cuh"

// Waits `delay_ns` on the GPU, then writes A = 1 and B = 2 everywhere: C = A B is 2 n.
__global__ void prepare(float* a, float* b, int count, unsigned long long delay_ns) {
  if (threadIdx.x == 0) {
    const unsigned long long start = cs::globaltimer_ns();
    while (cs::globaltimer_ns() - start < delay_ns) {
    }
  }
  __syncthreads();
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < count; i += gridDim.x * blockDim.x) {
    a[i] = 1.0f;
    b[i] = 2.0f;
  }
}

int main(int argc, char** argv) {
  int n = 256;
  cs::CommonOptions common;
  cs::Options options("14_libraries_on_streams_exercise",
                      "A cuBLAS SGEMM after a slow producer in a non-blocking stream.");
  options.add_int("size", &n, 16, 1024, "n of the n x n x n SGEMM");
  cs::add_common_options(options, &common);
  cs::parse_or_exit(options, argc, argv);
  cs::select_device(common.device);

  const int count = n * n;
  float *a = nullptr, *b = nullptr, *c = nullptr;
  CS_CHECK(cudaMalloc(&a, count * sizeof(float)));
  CS_CHECK(cudaMalloc(&b, count * sizeof(float)));
  CS_CHECK(cudaMalloc(&c, count * sizeof(float)));
  CS_CHECK(cudaMemset(a, 0, count * sizeof(float)));
  CS_CHECK(cudaMemset(b, 0, count * sizeof(float)));
  cudaStream_t stream = nullptr;
  CS_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  cublasHandle_t handle = nullptr;
  if (cublasCreate(&handle) != CUBLAS_STATUS_SUCCESS) {
    std::printf("cublasCreate failed\n");
    return 1;
  }
  // TODO(exercise): in which stream does this handle run its GEMMs?

  const float one = 1.0f, zero = 0.0f;
  auto gemm = [&] {  // C = A B
    return cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, a, n, b, n, &zero, c, n);
  };
  // A first GEMM loads cuBLAS's kernels, so that the next one launches at once.
  if (gemm() != CUBLAS_STATUS_SUCCESS) return 1;
  CS_CHECK(cudaDeviceSynchronize());

  prepare<<<64, 256, 0, stream>>>(a, b, count, 5000000ull);
  CS_CHECK_LAUNCH();
  if (gemm() != CUBLAS_STATUS_SUCCESS) return 1;
  std::vector<float> got(count), want(count, 2.0f * n);
  CS_CHECK(cudaMemcpyAsync(got.data(), c, count * sizeof(float), cudaMemcpyDeviceToHost, stream));
  CS_CHECK(cudaStreamSynchronize(stream));
  cs::verify("gemm_results", got, want);
  cublasDestroy(handle);
  CS_CHECK(cudaStreamDestroy(stream));
  for (float* p : {a, b, c}) CS_CHECK(cudaFree(p));
  return cs::finish();
}
