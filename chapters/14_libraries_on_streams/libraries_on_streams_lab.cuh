// Chapter 14's machinery: its flags, the status check of the libraries' calls, the test data
// and its CPU references (sampled GEMM entries, a DFT of a few points), the versions line and
// why a timed check cannot show here.
// None of it is the lesson; a reader may skip this file. Every library call the chapter teaches
// (cublasSetStream, curandSetStream, thrust::cuda::par_nosync, cub::DeviceReduce::Sum,
// cufftSetStream, the capture) is written out in libraries_on_streams.cu.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cufft.h>
#include <curand.h>
#include <thrust/version.h>

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstdio>
#include <cstdlib>
#include <cub/version.cuh>
#include <string>
#include <vector>

#include "cuda_streams.hpp"

namespace libraries_on_streams_lab {

// The chapter's flags, with their defaults (see add_flags).
struct Flags {
  int streams = 4, size = 1024, gemms = 8, elements = 1 << 20, fft_size = 1024, chunks = 8;
  int replays = 20;
  bool broken = false, fixed = false;
};

inline void add_flags(cs::Options& options, Flags* f) {
  options.add_int("streams", &f->streams, 2, 8, "streams, one cuBLAS handle each (part cublas)");
  options.add_int("size", &f->size, 128, 1024, "n of the n x n x n SGEMMs");
  options.add_int("gemms", &f->gemms, 1, 32, "SGEMMs per stream (parts cublas, shared_handle)");
  options.add_int("elements", &f->elements, 2, 1 << 22, "values (curand, thrust, cub, capture)");
  options.add_int("fft-size", &f->fft_size, 8, 16384, "points per FFT (part cufft)");
  options.add_int("chunks", &f->chunks, 4, 32, "chunks of 2 MiB, copied in and out (part cufft)");
  options.add_int("replays", &f->replays, 1, 100, "graph replays (part capture)");
  options.add_flag("broken", &f->broken, "each library on the wrong stream or policy");
  options.add_flag("fixed", &f->fixed, "leave out part curand's race and part capture's refusal");
}

// cuBLAS, cuRAND and cuFFT return their own status enums, each with 0 for success.
inline void check_status(int status, const char* call, const char* file, int line) {
  if (status == 0) return;
  std::fprintf(stderr, "%s:%d: %s failed with status %d\n", file, line, call, status);
  std::exit(1);
}
#define LIB_CHECK(call) \
  ::libraries_on_streams_lab::check_status(static_cast<int>(call), #call, __FILE__, __LINE__)

// The versions of the libraries (the program's first line).
inline void print_versions() {
  cublasHandle_t handle = nullptr;
  int cublas = 0, curand = 0, cufft = 0;
  LIB_CHECK(cublasCreate(&handle));
  LIB_CHECK(cublasGetVersion(handle, &cublas));
  LIB_CHECK(cublasDestroy(handle));
  LIB_CHECK(curandGetVersion(&curand));
  LIB_CHECK(cufftGetVersion(&cufft));
  std::printf("Libraries: cuBLAS %d, cuRAND %d, cuFFT %d, Thrust %d.%d.%d, CUB %d.%d.%d\n", cublas,
              curand, cufft, THRUST_MAJOR_VERSION, THRUST_MINOR_VERSION, THRUST_SUBMINOR_VERSION,
              CUB_MAJOR_VERSION, CUB_MINOR_VERSION, CUB_SUBMINOR_VERSION);
}

// Why part cublas's speedup cannot show here, or "".
inline std::string gemm_skip(const Flags& f, const cs::LaunchEnvironment& env, bool concurrent,
                             double gemm_us, double issue_us) {
  if (env.max_connections < f.streams)
    return cs::format(
        "CUDA_DEVICE_MAX_CONNECTIONS=%d: %d streams share the hardware queues, "
        "where a GEMM waiting for its stream holds up the others",
        env.max_connections, f.streams);
  if (!concurrent) return "the device runs one kernel at a time (concurrentKernels = 0)";
  if (gemm_us < 2 * issue_us)
    return cs::format("a GEMM runs %.1f us, issuing one takes %.1f us: the host sets the pace",
                      gemm_us, issue_us);
  return "";
}

// Why part curand's race cannot show here, or "".
inline std::string race_skip(const Flags& f, const cs::LaunchEnvironment& env) {
  if (f.fixed) return "--fixed was given";
  if (env.launch_blocking)
    return "CUDA_LAUNCH_BLOCKING=1: the generator was done before the consumer launched";
  if (env.max_connections < 2)
    return "CUDA_DEVICE_MAX_CONNECTIONS=1: the consumer queues behind the generator";
  return "";
}

// Why part cufft's overlap cannot show here, or "".
inline std::string fft_skip(const cs::LaunchEnvironment& env, int copy_engines) {
  if (env.max_connections < 2) return "CUDA_DEVICE_MAX_CONNECTIONS=1: both streams share a queue";
  return copy_engines < 2 ? "one copy engine: copies in and out take turns" : "";
}

// A GEMM's operands: A and B hold small integers, so every product and sum is exact in FP32
// (and in TF32), and `outputs` result matrices C.
struct Gemm {
  int n = 0;
  std::vector<float> a, b;
  float *da = nullptr, *db = nullptr;
  std::vector<float*> dc;
  Gemm(int size, int outputs) : n(size), a(std::size_t(size) * size), b(a.size()), dc(outputs) {
    for (std::size_t i = 0; i < a.size(); ++i) a[i] = float(int(i * 7 % 5) - 2);
    for (std::size_t i = 0; i < b.size(); ++i) b[i] = float(int(i * 3 % 7) - 3);
    CS_CHECK(cudaMalloc(&da, a.size() * sizeof(float)));
    CS_CHECK(cudaMalloc(&db, b.size() * sizeof(float)));
    CS_CHECK(cudaMemcpy(da, a.data(), a.size() * sizeof(float), cudaMemcpyHostToDevice));
    CS_CHECK(cudaMemcpy(db, b.data(), b.size() * sizeof(float), cudaMemcpyHostToDevice));
    for (float*& c : dc) CS_CHECK(cudaMalloc(&c, a.size() * sizeof(float)));
    for (float* c : dc) CS_CHECK(cudaMemset(c, 0, a.size() * sizeof(float)));
    // The copies and memsets above went to the legacy stream, which non-blocking streams do not
    // wait for (a pageable cudaMemcpy may return before its data lands): finish them here.
    CS_CHECK(cudaDeviceSynchronize());
  }
  ~Gemm() {
    for (float* p : dc) CS_CHECK(cudaFree(p));
    for (float* p : {da, db}) CS_CHECK(cudaFree(p));
  }
  Gemm(const Gemm&) = delete;  // owns device memory: a copy would free it twice
  Gemm& operator=(const Gemm&) = delete;
  // Every result against the CPU's product (cs::compare_product: all entries up to 256 x 256,
  // else 4096). cuBLAS stores them column-major: row-major views of B, A multiply to C's.
  cs::Comparison compare() const {
    std::vector<float> c(a.size());
    cs::Comparison all;
    for (float* out : dc) {
      CS_CHECK(cudaMemcpy(c.data(), out, c.size() * sizeof(float), cudaMemcpyDeviceToHost));
      cs::accumulate(all, cs::compare_product(b.data(), a.data(), c.data(), n));
    }
    return all;
  }
};

// The host's fastest time inside `call` over `repeats` runs (a busy host only adds time);
// `after` runs once each is timed (a synchronization).
template <class Call, class After>
double host_ms(int repeats, Call&& call, After&& after) {
  std::vector<double> samples;
  for (int r = 0; r < repeats; ++r) {
    const double begin = cs::host_now_ms();
    call();
    samples.push_back(cs::host_now_ms() - begin);
    after();
  }
  return cs::summarize(samples).min;
}

// Part cufft's results at 4 frequencies of 3 transforms against a CPU DFT of their inputs `in`
// (real: imaginary parts 0).
inline void verify_fft(const float2* in, const float2* out, int fft_size, std::size_t transforms) {
  std::vector<double> got, want;
  for (std::size_t t : {std::size_t(0), transforms / 2, transforms - 1})
    for (int k : {0, 1, fft_size / 2, fft_size - 1}) {
      std::complex<double> sum = 0;
      for (int x = 0; x < fft_size; ++x)
        sum += double(in[t * fft_size + x].x) * std::polar(1.0, -2.0 * M_PI * k * x / fft_size);
      got.insert(got.end(), {out[t * fft_size + k].x, out[t * fft_size + k].y});
      want.insert(want.end(), {sum.real(), sum.imag()});
    }
  cs::verify("fft_points", got, want, 1e-3);
}

}  // namespace libraries_on_streams_lab
