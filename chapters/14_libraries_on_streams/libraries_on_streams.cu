// Chapter 14: libraries on your streams
//
// cuBLAS, cuRAND, cuFFT, Thrust and CUB run their work in the stream you give them (a handle,
// generator or plan through cublasSetStream, curandSetStream or cufftSetStream, Thrust through
// its policy, CUB as each call's last argument), or quietly in the legacy default stream.
// README.md is the lesson; libraries_on_streams_lab.cuh holds machinery. --broken puts each
// library on the wrong stream or policy. Build and run (or: cmake --preset default):
// clang-format off
//   nvcc -std=c++17 -arch=native -Icommon/include chapters/14_libraries_on_streams/libraries_on_streams.cu common/src/*.cpp -lcublas -lcurand -lcufft -o 14_libraries_on_streams
// clang-format on
//   build/bin/14_libraries_on_streams --part cublas   # one part; --help lists them and every flag

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cufft.h>
#include <curand.h>
#include <thrust/execution_policy.h>
#include <thrust/reduce.h>
#include <thrust/sort.h>
#include <thrust/system_error.h>
#include <thrust/transform.h>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cub/device/device_reduce.cuh>
#include <numeric>
#include <vector>

#include "cuda_streams.hpp"
#include "cuda_streams/device_clock.cuh"
#include "libraries_on_streams_lab.cuh"

namespace lab = libraries_on_streams_lab;

constexpr int kRepeats = 5;     // timed runs of each measurement; the fastest counts
constexpr int kProducerMs = 5;  // how long a producer kernel holds its stream
constexpr std::size_t kWorkspace = std::size_t{32} << 20;  // cuBLAS's advice for Hopper
constexpr float kAlpha = 1.0f, kBeta = 0.0f;               // cublasSgemm: C = A B

// Holds one thread for `ns` nanoseconds of GPU time: a slow producer.
__global__ void spin(unsigned long long ns) {
  for (const auto start = cs::globaltimer_ns(); cs::globaltimer_ns() - start < ns;) continue;
}

// Adds the first `n` values of `x` into *sum (zeroed before): part curand's consumer, x.sum().
__global__ void sum_values(const float* x, int n, double* sum) {
  double s = 0;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) s += x[i];
  for (int lane = 16; lane > 0; lane /= 2) s += __shfl_down_sync(0xffffffffu, s, lane);
  if (threadIdx.x % 32 == 0) atomicAdd(sum, s);  // one atomic per warp
}

// Thrust's transform: 3x + 1 on every element (and on the CPU, for the reference).
struct Affine {
  __host__ __device__ unsigned operator()(unsigned x) const { return 3u * x + 1u; }
};

// Part 1: cuBLAS on a stream: a handle per stream, small GEMMs run concurrently
void part_cublas(const lab::Flags& f, const cudaDeviceProp& prop, const cs::LaunchEnvironment& env,
                 const std::string& timing) {
  const int n = f.size, count = f.streams * f.gemms;
  lab::Gemm gemm(n, f.streams);
  std::vector<cudaStream_t> stream(f.streams);
  std::vector<cublasHandle_t> handle(f.streams);
  for (int i = 0; i < f.streams; ++i) {  // core: cublas (11 lines)
    CS_CHECK(cudaStreamCreateWithFlags(&stream[i], cudaStreamNonBlocking));
    LIB_CHECK(cublasCreate(&handle[i]));
    if (!f.broken) LIB_CHECK(cublasSetStream(handle[i], stream[i]));  // the fix
  }
  auto sgemms = [&](bool one_stream) {  // breadth first: a GEMM into every stream, then the next
    for (int g = 0; g < f.gemms; ++g)
      for (int i = 0; i < f.streams; ++i)
        LIB_CHECK(cublasSgemm(handle[one_stream ? 0 : i], CUBLAS_OP_N, CUBLAS_OP_N, n, n, n,
                              &kAlpha, gemm.da, n, gemm.db, n, &kBeta, gemm.dc[i], n));
  };
  const cs::Stats serial = cs::time_device_ms(1, kRepeats, [&] { sgemms(true); });
  const cs::Stats concurrent = cs::time_device_ms(1, kRepeats, [&] { sgemms(false); });
  const double issue_ms = lab::host_ms(
      kRepeats, [&] { sgemms(false); }, [] { CS_CHECK(cudaDeviceSynchronize()); });
  const double gemm_us = 1000 * serial.min / count, issue_us = 1000 * issue_ms / count;
  std::printf("Fastest: one handle, one stream %s; %s %s\n", cs::format_ms(serial.min).c_str(),
              f.broken ? "a handle per stream, none given its stream" : "a handle per stream",
              cs::format_ms(concurrent.min).c_str());
  std::printf("One GEMM runs %.1f us alone; the host issues one in %.1f us\n", gemm_us, issue_us);
  cs::report_comparison("gemm_results", gemm.compare());
  // A 1024 x 1024 SGEMM keeps most SMs busy: what streams gain is one GEMM's ramp-up and tail
  // beside another's (1.14x with 2 streams to 1.23x with 8 on an H200). GEMMs serialized in one
  // stream (--broken) give 1.00x: the bar lies between.
  cs::check_or_skip(
      cs::first_reason({timing, lab::gemm_skip(f, env, prop.concurrentKernels, gemm_us, issue_us)}),
      "gemm_concurrency", serial.min / concurrent.min, cs::Compare::at_least, 1.08, "x",
      cs::format("one stream / %d streams", f.streams));
  for (cublasHandle_t h : handle) LIB_CHECK(cublasDestroy(h));
  for (cudaStream_t s : stream) CS_CHECK(cudaStreamDestroy(s));
}

// Part 2: one handle, two streams: a workspace per stream
void part_shared_handle(const lab::Flags& f) {
  const int n = f.size;
  lab::Gemm gemm(n, 2);
  cudaStream_t stream[2];
  void* workspace[2];
  for (cudaStream_t& s : stream) CS_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  for (void*& w : workspace) CS_CHECK(cudaMalloc(&w, kWorkspace));
  cublasHandle_t handle = nullptr;  // core: shared_handle (10 lines)
  LIB_CHECK(cublasCreate(&handle));
  for (int g = 0; g < f.gemms; ++g)
    for (int i = 0; i < 2; ++i) {
      // cublasSetStream resets the workspace to the default, which both streams would share
      LIB_CHECK(cublasSetStream(handle, stream[i]));
      LIB_CHECK(cublasSetWorkspace(handle, workspace[i], kWorkspace));
      LIB_CHECK(cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &kAlpha, gemm.da, n, gemm.db,
                            n, &kBeta, gemm.dc[i], n));
    }
  for (cudaStream_t s : stream) CS_CHECK(cudaStreamSynchronize(s));
  cs::report_comparison("shared_handle_results", gemm.compare());
  LIB_CHECK(cublasDestroy(handle));
  for (void* w : workspace) CS_CHECK(cudaFree(w));
  for (cudaStream_t s : stream) CS_CHECK(cudaStreamDestroy(s));
}

// Part 3: cuRAND in stream order: x.normal_() in stream p, x.sum() in stream c
void part_curand(const lab::Flags& f, int sms, const cs::LaunchEnvironment& env) {
  const int n = f.elements, generated = n + n % 2;      // curandGenerateNormal fills an even count
  const int grid = std::min((n + 255) / 256, 2 * sms);  // 256 threads a block
  std::vector<float> values(generated);
  cudaStream_t p = nullptr, c = nullptr;
  cudaEvent_t produced = nullptr;
  float* x = nullptr;
  double* sum = nullptr;
  for (cudaStream_t* s : {&p, &c}) CS_CHECK(cudaStreamCreateWithFlags(s, cudaStreamNonBlocking));
  CS_CHECK(cudaEventCreateWithFlags(&produced, cudaEventDisableTiming));
  CS_CHECK(cudaMalloc(&x, generated * sizeof(float)));
  CS_CHECK(cudaMalloc(&sum, sizeof(double)));
  curandGenerator_t generator = nullptr;  // core: curand (13 lines)
  LIB_CHECK(curandCreateGenerator(&generator, CURAND_RNG_PSEUDO_DEFAULT));
  LIB_CHECK(curandSetPseudoRandomGeneratorSeed(generator, 2024ull));
  LIB_CHECK(curandSetStream(generator, p));  // the generator's kernels go to stream p
  auto run_round = [&](bool wait) {
    CS_CHECK(cudaMemset(x, 0, generated * sizeof(float)));
    CS_CHECK(cudaMemset(sum, 0, sizeof(double)));
    CS_CHECK(cudaDeviceSynchronize());  // legacy-stream memsets: p and c would not wait for them
    spin<<<1, 1, 0, p>>>(kProducerMs * 1000000ull), CS_CHECK_LAUNCH();     // a slow producer in p
    LIB_CHECK(curandGenerateNormal(generator, x, generated, 0.0f, 1.0f));  // x.normal_()
    CS_CHECK(cudaEventRecord(produced, p));
    if (wait) CS_CHECK(cudaStreamWaitEvent(c, produced, 0));        // the fix: c.wait_stream(p)
    sum_values<<<grid, 256, 0, c>>>(x, n, sum), CS_CHECK_LAUNCH();  // x.sum() in stream c
    CS_CHECK(cudaDeviceSynchronize());
    double consumed = 0;
    CS_CHECK(cudaMemcpy(&consumed, sum, sizeof(double), cudaMemcpyDeviceToHost));
    CS_CHECK(cudaMemcpy(values.data(), x, generated * sizeof(float), cudaMemcpyDeviceToHost));
    return std::vector<double>{consumed, std::accumulate(values.begin(), values.begin() + n, 0.0)};
  };
  const std::vector<double> ordered = run_round(true);  // also loads the kernels before the race
  const double tolerance = 1e-9;  // the same for both: stale means what ordered would not allow
  cs::verify("ordered_consumer_sum", &ordered[0], &ordered[1], 1, tolerance);
  if (const std::string reason = lab::race_skip(f, env); !reason.empty()) {
    cs::check_skipped("unordered_consumer_is_stale", reason);
  } else {
    const std::vector<double> racy = run_round(false);
    std::printf("Without the event: consumer %.6f, generator %.6f\n", racy[0], racy[1]);
    cs::check_that(
        "unordered_consumer_is_stale", cs::compare(&racy[0], &racy[1], 1, tolerance).wrong == 1,
        "without the event the consumer summed the buffer before the generator wrote it");
  }
  LIB_CHECK(curandDestroyGenerator(generator));
  CS_CHECK(cudaEventDestroy(produced));
  for (void* d : {(void*)x, (void*)sum}) CS_CHECK(cudaFree(d));
  for (cudaStream_t s : {p, c}) CS_CHECK(cudaStreamDestroy(s));
}

// Part 4: Thrust: par.on(s) blocks the host, par_nosync.on(s) does not, but for a value
void part_thrust(const lab::Flags& f, const std::string& timing) {
  const int n = f.elements;
  std::vector<unsigned> input(n), transformed(n), got(n);
  for (int i = 0; i < n; ++i) input[i] = (2654435761u * unsigned(i)) % 1000u;
  cudaStream_t s = nullptr;
  unsigned *in = nullptr, *out = nullptr, *keys = nullptr;
  CS_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  for (unsigned** p : {&in, &out, &keys}) CS_CHECK(cudaMalloc(p, n * sizeof(unsigned)));
  for (unsigned* d : {in, keys})  // into stream s, which orders them before the calls that read
    CS_CHECK(cudaMemcpyAsync(d, input.data(), n * sizeof(unsigned), cudaMemcpyHostToDevice, s));
  // The host's time from launching a producer into s until `call` behind it returns (as in part
  // cub: a setting that makes launches wait, CUDA_LAUNCH_BLOCKING=1, shows in the clock).
  auto producer = [&] { spin<<<1, 1, 0, s>>>(kProducerMs * 1000000ull), CS_CHECK_LAUNCH(); };
  auto synchronize = [&] { CS_CHECK(cudaStreamSynchronize(s)); };
  auto timed = [&](auto call) {
    auto producer_then_call = [&] { producer(), call(); };  // both inside the clock
    return lab::host_ms(kRepeats, producer_then_call, synchronize);
  };
  // core: thrust (10 lines): per policy, each call behind a producer: host time; reduce's value
  auto measure = [&](auto policy) {
    unsigned long long value = 0;
    return std::vector<double>{
        timed([&] { thrust::transform(policy.on(s), in, in + n, out, Affine{}); }),
        timed([&] { thrust::sort(policy.on(s), keys, keys + n); }),
        timed([&] { value = thrust::reduce(policy.on(s), in, in + n, 0ull); }), double(value)};
  };
  const std::vector<double> par = measure(thrust::cuda::par);
  const std::vector<double> nosync =
      f.broken ? measure(thrust::cuda::par) : measure(thrust::cuda::par_nosync);  // the fix
  CS_CHECK(cudaMemcpy(got.data(), out, n * sizeof(unsigned), cudaMemcpyDeviceToHost));
  std::transform(input.begin(), input.end(), transformed.begin(), Affine{});
  cs::Comparison results = cs::compare(got.data(), transformed.data(), n);
  CS_CHECK(cudaMemcpy(got.data(), keys, n * sizeof(unsigned), cudaMemcpyDeviceToHost));
  std::sort(input.begin(), input.end());
  cs::accumulate(results, cs::compare(got.data(), input.data(), n));
  const double total = std::accumulate(input.begin(), input.end(), 0.0);
  for (double value : {par[3], nosync[3]}) cs::accumulate(results, cs::compare(&value, &total, 1));
  cs::report_comparison("thrust_results", results);
  // Nothing to return: par_nosync does not wait (<= 0.5 of par); reduce's value waits (>= 0.5).
  cs::check_or_skip(timing, "transform_nosync_blocked", nosync[0] / par[0], cs::Compare::at_most,
                    0.5, "x", "host blocked, par_nosync / par");
  cs::check_or_skip(timing, "sort_nosync_blocked", nosync[1] / par[1], cs::Compare::at_most, 0.5,
                    "x", "host blocked, par_nosync / par");
  cs::check_or_skip(timing, "reduce_waits_either_way", nosync[2] / par[2], cs::Compare::at_least,
                    0.5, "x", "a returned value waits for the stream");
  for (unsigned* p : {in, out, keys}) CS_CHECK(cudaFree(p));
  CS_CHECK(cudaStreamDestroy(s));
}

// Part 5: CUB's two-phase call with stream-ordered temporary storage
void part_cub(const lab::Flags& f, const std::string& timing) {
  const int n = f.elements;
  std::vector<int> input(n), sums(3);
  for (int i = 0; i < n; ++i) input[i] = i % 7;
  cudaStream_t s = nullptr;
  int *in = nullptr, *total = nullptr;
  CS_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  CS_CHECK(cudaMalloc(&in, n * sizeof(int)));
  CS_CHECK(cudaMalloc(&total, sizeof(int)));
  CS_CHECK(cudaMemcpyAsync(in, input.data(), n * sizeof(int), cudaMemcpyHostToDevice, s));
  // The host's time to issue the producer and the rest; the sum lands in sums[run].
  auto issue = [&](int run, bool stream_ordered) {
    const double begin = cs::host_now_ms();
    spin<<<1, 1, 0, s>>>(kProducerMs * 1000000ull), CS_CHECK_LAUNCH();
    void* temp = nullptr;  // core: cub (7 lines)
    std::size_t temp_bytes = 0;
    CS_CHECK(cub::DeviceReduce::Sum(nullptr, temp_bytes, in, total, n, s));  // phase 1: the size
    CS_CHECK(stream_ordered ? cudaMallocAsync(&temp, temp_bytes, s)
                            : cudaMalloc(&temp, temp_bytes));
    CS_CHECK(cub::DeviceReduce::Sum(temp, temp_bytes, in, total, n, s));  // phase 2: the sum
    CS_CHECK(stream_ordered ? cudaFreeAsync(temp, s) : cudaFree(temp));   // cudaFree waits
    const double ms = cs::host_now_ms() - begin;
    CS_CHECK(cudaMemcpyAsync(&sums[run], total, sizeof(int), cudaMemcpyDeviceToHost, s));
    CS_CHECK(cudaStreamSynchronize(s));
    return ms;
  };
  issue(0, true);  // loads the kernels
  const double ordered = issue(1, !f.broken), waited = issue(2, false);
  const char* storage = f.broken ? "cudaMalloc (--broken)" : "cudaMallocAsync/FreeAsync";
  std::printf("Host time to issue: %s with %s, %s with cudaMalloc/cudaFree\n",
              cs::format_ms(ordered).c_str(), storage, cs::format_ms(waited).c_str());
  const std::vector<int> want(3, std::accumulate(input.begin(), input.end(), 0));
  cs::verify("cub_sum_results", sums, want);
  // Stream-ordered storage: the host issues it all in <= half the producer's time; cudaFree waits.
  cs::check_or_skip(timing, "cub_issued_while_producer_ran", ordered / kProducerMs,
                    cs::Compare::at_most, 0.5, "x", "issue time / the producer's time");
  cs::check_or_skip(timing, "cudafree_waits", waited / kProducerMs, cs::Compare::at_least, 0.5, "x",
                    "issue time with cudaMalloc/cudaFree / the producer's time");
  for (int* p : {in, total}) CS_CHECK(cudaFree(p));
  CS_CHECK(cudaStreamDestroy(s));
}

// Part 6: cuFFT on a stream: FFTs in one stream overlap copies in the other
void part_cufft(const lab::Flags& f, const cudaDeviceProp& prop, const cs::LaunchEnvironment& env,
                const std::string& timing) {
  const int batch = (1 << 18) / f.fft_size;  // transforms per chunk: 2 MiB of cufftComplex
  const std::size_t chunk = std::size_t(batch) * f.fft_size, total = chunk * f.chunks;
  cufftComplex *host_in = nullptr, *host_out = nullptr, *device = nullptr;
  CS_CHECK(cudaMallocHost(&host_in, total * sizeof(cufftComplex)));
  CS_CHECK(cudaMallocHost(&host_out, total * sizeof(cufftComplex)));
  CS_CHECK(cudaMalloc(&device, total * sizeof(cufftComplex)));
  for (std::size_t i = 0; i < total; ++i) host_in[i] = {float(std::sin(0.37 * (i % 9973))), 0.0f};
  cudaStream_t stream[2];
  cufftHandle plan[2];
  for (int i = 0; i < 2; ++i) {  // core: cufft (16 lines)
    CS_CHECK(cudaStreamCreateWithFlags(&stream[i], cudaStreamNonBlocking));
    LIB_CHECK(cufftPlan1d(&plan[i], f.fft_size, CUFFT_C2C, batch));
    LIB_CHECK(cufftSetStream(plan[i], stream[i]));
  }
  auto pipeline = [&](int ways) {  // chunk k: copy in, FFT in place, copy out, in stream k % ways
    for (int k = 0; k < f.chunks; ++k) {
      const int w = k % ways;
      cufftComplex* data = device + k * chunk;
      CS_CHECK(cudaMemcpyAsync(data, host_in + k * chunk, chunk * sizeof(cufftComplex),
                               cudaMemcpyHostToDevice, stream[w]));
      LIB_CHECK(cufftExecC2C(plan[w], data, data, CUFFT_FORWARD));
      CS_CHECK(cudaMemcpyAsync(host_out + k * chunk, data, chunk * sizeof(cufftComplex),
                               cudaMemcpyDeviceToHost, stream[w]));
    }
  };
  const cs::Stats one = cs::time_device_ms(1, kRepeats, [&] { pipeline(1); });
  const cs::Stats two = cs::time_device_ms(1, kRepeats, [&] { pipeline(f.broken ? 1 : 2); });
  lab::verify_fft(host_in, host_out, f.fft_size, std::size_t(batch) * f.chunks);
  // With two copy engines chunk k + 1's copy in runs beside chunk k's copy out: <= 0.85 of one.
  cs::check_or_skip(cs::first_reason({timing, lab::fft_skip(env, prop.asyncEngineCount)}),
                    "fft_overlap", two.min / one.min, cs::Compare::at_most, 0.85, "x",
                    "two streams / one stream");
  for (cufftHandle p : plan) LIB_CHECK(cufftDestroy(p));
  for (cudaStream_t s : stream) CS_CHECK(cudaStreamDestroy(s));
  for (cufftComplex* p : {host_in, host_out}) CS_CHECK(cudaFreeHost(p));
  CS_CHECK(cudaFree(device));
}

// Part 7: capture: parts 1, 4 and 5's calls in one graph, replayed
void part_capture(const lab::Flags& f) {
  const int n = f.size, count = f.elements;
  lab::Gemm gemm(n, 1);
  std::vector<unsigned> input(count), want(count), got(count + 1);
  for (int i = 0; i < count; ++i) input[i] = unsigned(i % 100);
  cudaStream_t s = nullptr;
  unsigned *in = nullptr, *out = nullptr, *total = nullptr;
  void* workspace = nullptr;
  CS_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  for (unsigned** p : {&in, &out}) CS_CHECK(cudaMalloc(p, count * sizeof(unsigned)));
  CS_CHECK(cudaMalloc(&total, sizeof(unsigned)));
  CS_CHECK(cudaMalloc(&workspace, kWorkspace));
  CS_CHECK(cudaMemcpyAsync(in, input.data(), count * sizeof(unsigned), cudaMemcpyHostToDevice, s));
  cublasHandle_t handle = nullptr;
  LIB_CHECK(cublasCreate(&handle));
  LIB_CHECK(cublasSetStream(handle, s));
  std::size_t temp_bytes = 0;
  CS_CHECK(cub::DeviceReduce::Sum(nullptr, temp_bytes, in, total, count, s));
  LIB_CHECK(cublasSetWorkspace(handle, workspace, kWorkspace));  // core: capture (17 lines)
  auto calls = [&] {
    LIB_CHECK(cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &kAlpha, gemm.da, n, gemm.db,
                          n, &kBeta, gemm.dc[0], n));
    thrust::transform(thrust::cuda::par_nosync.on(s), in, in + count, out, Affine{});
    void* temp = nullptr;
    CS_CHECK(cudaMallocAsync(&temp, temp_bytes, s));  // captured: a memory allocation node
    CS_CHECK(cub::DeviceReduce::Sum(temp, temp_bytes, in, total, count, s));
    CS_CHECK(cudaFreeAsync(temp, s));
  };
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  std::size_t nodes = 0;
  CS_CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  calls();
  CS_CHECK(cudaStreamEndCapture(s, &graph));
  CS_CHECK(cudaGraphInstantiate(&exec, graph, 0));
  CS_CHECK(cudaGraphGetNodes(graph, nullptr, &nodes));
  CS_CHECK(cudaMemsetAsync(out, 0, count * sizeof(unsigned), s));  // only replays write it now
  auto synchronize = [&] { CS_CHECK(cudaStreamSynchronize(s)); };
  const double replay_ms = lab::host_ms(
      f.replays, [&] { CS_CHECK(cudaGraphLaunch(exec, s)); }, synchronize);
  CS_CHECK(cudaMemcpy(got.data(), out, count * sizeof(unsigned), cudaMemcpyDeviceToHost));
  CS_CHECK(cudaMemcpy(&got[count], total, sizeof(unsigned), cudaMemcpyDeviceToHost));
  std::transform(input.begin(), input.end(), want.begin(), Affine{});
  want.push_back(std::accumulate(input.begin(), input.end(), 0u));
  cs::Comparison results = gemm.compare();
  cs::accumulate(results, cs::compare(got.data(), want.data(), got.size()));
  const double eager_ms = lab::host_ms(f.replays, calls, synchronize);
  std::printf("%zu nodes; host time to issue them: %s one by one, %s as one graph launch\n", nodes,
              cs::format_ms(eager_ms).c_str(), cs::format_ms(replay_ms).c_str());
  cs::report_comparison("replay_results", results);
  CS_CHECK(cudaGraphExecDestroy(exec));
  CS_CHECK(cudaGraphDestroy(graph));
  if (!f.fixed) {  // par.on(s) synchronizes the stream, which a capture does not allow
    CS_CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
    std::string threw = "nothing";
    try {
      thrust::transform(thrust::cuda::par.on(s), in, in + count, out, Affine{});
    } catch (const thrust::system_error& e) {
      threw = e.what();
    }
    const cudaError_t ended = cudaStreamEndCapture(s, &graph);
    (void)cudaGetLastError();  // the refused capture's error is not the next call's
    cs::check_that("sync_policy_refuses_capture", threw != "nothing" && ended != cudaSuccess,
                   "par.on(s) in a capture threw " + threw +
                       "; cudaStreamEndCapture: " + cudaGetErrorName(ended));
  }
  LIB_CHECK(cublasDestroy(handle));
  for (void* p : {(void*)in, (void*)out, (void*)total, workspace}) CS_CHECK(cudaFree(p));
  CS_CHECK(cudaStreamDestroy(s));
}

int main(int argc, char** argv) {
  lab::Flags f;  // --streams, --size, --gemms, ...: see libraries_on_streams_lab.cuh
  cs::CommonOptions common;
  cs::Options options("14_libraries_on_streams",
                      "cuBLAS, cuRAND, cuFFT, Thrust and CUB on the streams you give them.");
  cs::Parts parts(options, {{"cublas", "a cuBLAS handle per stream: small GEMMs run concurrently"},
                            {"shared_handle", "one cuBLAS handle, two streams, a workspace each"},
                            {"curand", "a generator in stream p, its consumer in stream c"},
                            {"thrust", "par.on(s) against par_nosync.on(s): host time blocked"},
                            {"cub", "DeviceReduce::Sum with stream-ordered temporary storage"},
                            {"cufft", "a plan per stream: FFTs overlap copies"},
                            {"capture", "library calls captured into one graph"}});
  lab::add_flags(options, &f);
  cs::add_common_options(options, &common);
  cs::parse_or_exit(options, argc, argv);
  const cs::LaunchEnvironment env = cs::launch_environment();  // before the first CUDA call
  if (f.broken && f.fixed) cs::usage_error("--broken and --fixed exclude each other");
  const cudaDeviceProp prop = cs::select_device(common.device);
  cs::print_launch_environment(env);
  if (f.broken && (env.launch_blocking || env.max_connections < 2))
    cs::skip(cs::format(
        "the bug cannot be shown under %s: nothing overlaps with or without the fix",
        env.launch_blocking ? "CUDA_LAUNCH_BLOCKING=1" : "CUDA_DEVICE_MAX_CONNECTIONS=1"));
  const std::string timing =  // why no timed check can show here, or ""
      cs::first_reason({common.timing_skip_reason(), cs::no_overlap_reason(env)});
  lab::print_versions();
  if (parts.begin("cublas")) part_cublas(f, prop, env, timing);
  if (parts.begin("shared_handle")) part_shared_handle(f);
  if (parts.begin("curand")) part_curand(f, prop.multiProcessorCount, env);
  if (parts.begin("thrust")) part_thrust(f, timing);
  if (parts.begin("cub")) part_cub(f, timing);
  if (parts.begin("cufft")) part_cufft(f, prop, env, timing);
  if (parts.begin("capture")) part_capture(f);
  return cs::finish();
}
