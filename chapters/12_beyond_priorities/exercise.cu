// Exercise for chapter 12: a stream memory wait that lets its consumer through too early.
//
// The task
//   Stream B runs a slow producer (it waits 5 ms on the GPU, then writes values that differ in
//   every round) and then, with cuStreamWriteValue32, writes round + 1 into a flag in mapped
//   host memory. Stream A waits on that flag with cuStreamWaitValue32(..., GEQ) and then runs
//   the consumer, with no event between the streams. As given, A waits for a value the flag
//   already holds, so the consumer reads the data before the producer wrote it, and every
//   value it computes is wrong. Make the results right, with the same two streams and the flag
//   (no event, no synchronization of B: here to see what the flag alone does; real code should
//   also order the streams with an event, see the lesson). The line marked TODO(exercise) is
//   where to look. Do not change the producer, stream B's work or the check. A wait for a value
//   nobody ever writes does not hang the program: after 2 s the host releases it and the
//   program says so.
//
// Build, run and test
//   cmake --preset exercises && cmake --build --preset exercises
//   build-exercises/bin/12_beyond_priorities_exercise
//   ctest --preset exercises -R '^12_beyond_priorities_exercise\.'
//
// It needs a driver with stream memory operations: where the driver is older than CUDA 11.7, lacks
// the functions or answers CUDA_ERROR_NOT_SUPPORTED, it says SKIP: and exits 77; any other error
// of those calls fails with the call's and the error's name.

#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "cuda_streams.hpp"
#include "cuda_streams/device_clock.cuh"

constexpr int kThreads = 128;
constexpr int kBlocks = 8;
constexpr double kDeadlineMs = 2000;  // a wait still blocked after this was waiting for nothing

__host__ __device__ unsigned int produced_value(int round, int i) {
  return static_cast<unsigned int>(round + 1) * 1000003u + static_cast<unsigned int>(i);
}

__global__ void producer(unsigned int* data, int n, unsigned long long delay_ns, int round) {
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
  if (i < n) out[i] = 3u * data[i] + 1u;
}

// A driver function at the version whose signature cudaTypedefs.h gives. A driver older than
// that version, or without the function, cannot run this exercise (SKIP); any other error fails.
template <class F>
F driver_function(const char* name, int version) {
  int driver = 0;
  CS_CHECK(cudaDriverGetVersion(&driver));
  if (driver < version) {
    cs::skip(cs::format("this driver is CUDA %d.%d; %s of CUDA %d.%d needs that version or newer",
                        driver / 1000, driver % 1000 / 10, name, version / 1000,
                        version % 1000 / 10));
  }
  void* address = nullptr;
  cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
  CS_CHECK(cudaGetDriverEntryPointByVersion(name, &address, version, cudaEnableDefault, &found));
  if (found != cudaDriverEntryPointSuccess || address == nullptr)
    cs::skip(std::string("this driver has no stream memory operations (no ") + name + ")");
  return reinterpret_cast<F>(address);
}

// A stream memory operation's result: CUDA_ERROR_NOT_SUPPORTED means this device or platform has
// none (SKIP); any other error fails with the call's name and the error's name.
void check_memop(CUresult result, const char* call, PFN_cuGetErrorName_v6000 error_name) {
  if (result == CUDA_SUCCESS) return;
  const char* name = nullptr;
  if (error_name(result, &name) != CUDA_SUCCESS || name == nullptr) name = "an unknown CUresult";
  if (result == CUDA_ERROR_NOT_SUPPORTED)
    cs::skip(std::string("stream memory operations are not supported here (") + call + ": " + name +
             ")");
  std::fflush(stdout);
  std::fprintf(stderr, "error: %s returned %s (%d)\n", call, name, static_cast<int>(result));
  std::exit(cs::kFailExitCode);
}

int main(int argc, char** argv) {
  int rounds = 4;
  cs::CommonOptions common;
  cs::Options options("12_beyond_priorities_exercise",
                      "A stream memory wait that lets its consumer through too early.");
  options.add_int("rounds", &rounds, 1, 50, "producer/consumer rounds");
  cs::add_common_options(options, &common);
  cs::parse_or_exit(options, argc, argv);
  cs::select_device(common.device);
  const auto wait_value =
      driver_function<PFN_cuStreamWaitValue32_v11070>("cuStreamWaitValue32", 11070);
  const auto write_value =
      driver_function<PFN_cuStreamWriteValue32_v11070>("cuStreamWriteValue32", 11070);
  const auto error_name = driver_function<PFN_cuGetErrorName_v6000>("cuGetErrorName", 6000);

  const int n = kBlocks * kThreads;
  unsigned int *data = nullptr, *out = nullptr, *flag = nullptr, *device_flag = nullptr;
  cudaStream_t a = nullptr, b = nullptr;
  CS_CHECK(cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking));
  CS_CHECK(cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking));
  CS_CHECK(cudaMalloc(&data, n * sizeof(unsigned int)));
  CS_CHECK(cudaMalloc(&out, n * sizeof(unsigned int)));
  CS_CHECK(cudaHostAlloc(&flag, sizeof(unsigned int), cudaHostAllocMapped));
  CS_CHECK(cudaHostGetDevicePointer(&device_flag, flag, 0));
  volatile unsigned int* host_flag = flag;
  *host_flag = 0;
  const CUdeviceptr flag_address = reinterpret_cast<CUdeviceptr>(device_flag);
  std::vector<unsigned int> got(n), want(n);
  cs::Comparison results;
  bool hung = false;
  for (int round = 0; round < rounds && !hung; ++round) {
    // Stream B: stale data, the slow producer, then the flag says "round + 1 is ready".
    CS_CHECK(cudaMemsetAsync(data, 0, n * sizeof(unsigned int), b));
    producer<<<kBlocks, kThreads, 0, b>>>(data, n, 5000000ull, round);
    CS_CHECK_LAUNCH();
    check_memop(write_value(b, flag_address, round + 1, CU_STREAM_WRITE_VALUE_DEFAULT),
                "cuStreamWriteValue32", error_name);
    // Stream A: wait for the flag, then consume.
    const cuuint32_t ready = round;  // TODO(exercise): which value says this round's data is there?
    check_memop(wait_value(a, flag_address, ready, CU_STREAM_WAIT_VALUE_GEQ), "cuStreamWaitValue32",
                error_name);
    consumer<<<kBlocks, kThreads, 0, a>>>(data, out, n);
    CS_CHECK_LAUNCH();
    CS_CHECK(cudaMemcpyAsync(got.data(), out, n * sizeof(unsigned int), cudaMemcpyDeviceToHost, a));
    const double from = cs::host_now_ms();  // poll with a deadline: a wait may never be met
    while (cudaStreamQuery(a) == cudaErrorNotReady && !hung)
      hung = cs::host_now_ms() - from > kDeadlineMs;
    if (hung) *host_flag = ~0u;  // release the wait that nobody would have satisfied
    CS_CHECK(cudaStreamSynchronize(a));
    CS_CHECK(cudaStreamSynchronize(b));
    for (int i = 0; i < n; ++i) want[i] = 3u * produced_value(round, i) + 1u;
    cs::accumulate(results, cs::compare(got.data(), want.data(), n));
  }
  cs::report_comparison("consumer_results", results);
  cs::check_that(
      "no_wait_hung", !hung,
      hung ? "stream A waited 2 s for a value stream B never writes" : "every wait was met");
  CS_CHECK(cudaFree(data));
  CS_CHECK(cudaFree(out));
  CS_CHECK(cudaFreeHost(flag));
  for (cudaStream_t s : {a, b}) CS_CHECK(cudaStreamDestroy(s));
  return cs::finish();
}
