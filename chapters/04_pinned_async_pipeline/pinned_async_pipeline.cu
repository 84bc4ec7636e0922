// Chapter 04: pinned memory and the asynchronous copy/compute pipeline
//
// What it teaches
//   1. The CUDA guide's two-stream example, as the guide writes it: cudaMallocHost, then per
//      stream a cudaMemcpyAsync in, MyKernel<<<100, 512, 0, stream[i]>>>, a cudaMemcpyAsync back,
//      and cudaStreamDestroy. Its result is checked against the CPU.
//   2. Pageable memory (a std::vector) against pinned memory (cudaMallocHost): the bandwidth of
//      plain cudaMemcpy each way, and the host time spent inside one cudaMemcpyAsync. From
//      pageable memory the call does not return before the data has been staged, so it costs the
//      host about the whole copy; from pinned memory it returns within microseconds.
//   3. cudaHostRegister pins a buffer you already have (the same std::vector): its copies now
//      run at the pinned rate, and cudaHostUnregister gives it back.
//   4. The seed generalized to S streams and C chunks: each chunk is copied in, processed and
//      copied out in its own stream, so one chunk's upload, another's kernel and a third's
//      download run at the same time. The kernel is sized at run time so that it takes as long
//      as a chunk's copy. The program measures each stage alone, derives the ideal bound from
//      asyncEngineCount, and times the pipeline in one stream (serial) and over S streams issued
//      depth-first (chunk by chunk) and breadth-first (stage by stage), drawing each on a
//      timeline with one row per stream.
//
// Build and run
//   cmake --preset default && cmake --build --preset default && build/bin/04_pinned_async_pipeline
//   build/bin/04_pinned_async_pipeline --streams 8 --chunks 16      # another pipeline shape
//   build/bin/04_pinned_async_pipeline --trace pipeline.json        # the timelines for Perfetto
//
// What to expect
//   The seed's CHECK line; a table of pageable and pinned bandwidths (pinned faster) and of the
//   host time inside cudaMemcpyAsync (about the whole copy from pageable memory, microseconds
//   from pinned); the registered buffer at the pinned rate; the stage times, the bound and its
//   formula; the serial, depth-first and breadth-first times with the speedup and the ratio to
//   the bound; three ASCII timelines (H = H2D, K = kernel, D = D2H); a CHECK line per property
//   and "All N checks passed." Exit status 0; 1 if a check fails; 2 for a bad command line; 77
//   (with a SKIP: line) where there is no CUDA device.

#include <cuda_runtime.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <string>
#include <vector>

#include "cuda_streams.hpp"

namespace {

// Every bar a timed check must clear, in one place. "any GPU" bars are the checks; the H200
// targets are what this program reaches on an NVIDIA H200 and are printed beside them.
namespace bars {
// Below this total size the copies are too short to time reliably: timing checks are skipped.
constexpr int min_timed_mib = 32;
// Pageable copies go through a staging copy on the CPU, then the same DMA as pinned memory.
constexpr double pinned_over_pageable = 1.10;
// From pageable memory the call holds the host for at least this share of the copy's time...
constexpr double pageable_call_share = 0.50;
// ...and from pinned (or registered) memory the call takes at most this share of that time.
constexpr double pinned_call_vs_pageable = 0.10;
// A registered buffer copies at the rate of a cudaMallocHost buffer.
constexpr double registered_vs_pinned = 0.90;
constexpr double h200_registered_vs_pinned = 0.95;
// C back-to-back chunked cudaMemcpyAsync calls move data nearly as fast as one big cudaMemcpy.
constexpr double chunked_vs_plain = 0.85;
constexpr double h200_chunked_vs_plain = 0.95;
// The overlapped pipeline takes at most this multiple of the ideal bound. The bound uses stage
// times measured alone; H2D and D2H slow each other a little when they run together.
constexpr double overlap_vs_bound = 1.25;
constexpr double h200_overlap_vs_bound = 1.05;
// Speedup of the overlapped pipeline over the same work in one stream.
constexpr double speedup_two_engines = 1.8;  // three stages at once: ideal is nearly 3x
constexpr double speedup_one_engine = 1.5;   // copies share one engine: ideal is nearly 2x
constexpr double h200_speedup = 2.5;
// The speedup check needs a pipeline that can show it: enough streams to hold a chunk in each
// stage, and enough chunks that filling and draining the pipeline is a small part of the run.
constexpr int min_streams_for_speedup = 3;
constexpr int min_chunks_for_speedup = 8;

inline double speedup_for(int async_engines) {
  return async_engines >= 2 ? speedup_two_engines : speedup_one_engine;
}
}  // namespace bars

constexpr int kMaxMib = 65536;
constexpr int kWarmup = 1;
// The kernel's iteration count: the first guess of the calibration, the most it may pick, and
// the fixed count used with --no-timing (where nothing is timed, e.g. under compute-sanitizer).
constexpr int kCalibrationGuess = 1024;
constexpr int kMaxIterations = 1 << 20;
constexpr int kUntimedIterations = 64;
constexpr int kBlock = 256;
// How long (at most how many launches) the SMs are kept busy before the kernel is timed.
constexpr double kClockWarmupMs = 100;
constexpr int kClockWarmupLaunches = 200;
// A 32-bit linear congruential step, x -> a * x + c (mod 2^32).
constexpr std::uint32_t kMultiplier = 1664525u;
constexpr std::uint32_t kIncrement = 1013904223u;

// ---------------------------------------------------------------------------------------------
// Kernels
// ---------------------------------------------------------------------------------------------

// The seed's MyKernel. The guide does not show its body; any per-element work will do, and this
// one is exact in floating point for the small integers it gets, so the CPU reference is exact.
// <<<100, 512>>> is 51200 threads, far fewer than the elements: each thread strides the array.
__global__ void MyKernel(float* output, const float* input, std::size_t size) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < size;
       i += stride) {
    output[i] = 2.0f * input[i] + 1.0f;
  }
}

// The pipeline's kernel: a chain of `iterations` dependent multiply-adds per element. Its time
// grows linearly with `iterations` while its memory traffic stays one read and one write, so
// it neither competes with the copies for bandwidth nor changes speed when they run. Applying
// x -> a * x + c k times is again x -> A * x + C, which lets the CPU check every element cheaply.
__global__ void scramble(std::uint32_t* output, const std::uint32_t* input, std::size_t count,
                         int iterations, std::uint32_t multiplier, std::uint32_t increment) {
  const std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= count) return;
  std::uint32_t x = input[i];
  for (int k = 0; k < iterations; ++k) x = x * multiplier + increment;
  output[i] = x;
}

// ---------------------------------------------------------------------------------------------
// Helpers for the lesson
// ---------------------------------------------------------------------------------------------

std::uint32_t input_word(std::size_t i) {
  return static_cast<std::uint32_t>(i) * 2654435761u + 12345u;
}

// The map x -> multiplier * x + increment that `iterations` steps of scramble() amount to.
struct Affine {
  std::uint32_t multiplier = 1;
  std::uint32_t increment = 0;
};
Affine compose_steps(int iterations) {
  Affine total;
  for (int k = 0; k < iterations; ++k) {
    total.multiplier = total.multiplier * kMultiplier;
    total.increment = total.increment * kMultiplier + kIncrement;
  }
  return total;
}

double gb_per_s(std::size_t bytes, double ms) {
  return static_cast<double>(bytes) / (ms * 1e6);
}

// Four pinned/pageable/registered buffers and a CPU reference must fit in host memory: refuse
// sizes that would take more than half of it before anything is allocated.
void require_fits_in_host_memory(std::size_t bytes, const std::string& what) {
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page_size = sysconf(_SC_PAGE_SIZE);
  if (pages <= 0 || page_size <= 0) return;  // unknown here: the allocations will tell
  const double physical = static_cast<double>(pages) * static_cast<double>(page_size);
  if (static_cast<double>(bytes) > 0.5 * physical) {
    cs::usage_error(what + ": needs " + cs::format_bytes(static_cast<double>(bytes)) +
                    " of host memory (two pinned buffers, a pageable one and the CPU reference), "
                    "more than half of this machine's " +
                    cs::format_bytes(physical));
  }
}

// A timing check, or its "skipped" line when timing is off or cannot be trusted in this run.
void timing_check(const std::string& skip_reason, const std::string& name, double measured,
                  cs::Compare compare, double bar, const std::string& unit,
                  const std::string& why) {
  if (!skip_reason.empty()) {
    cs::check_skipped(name, skip_reason);
  } else {
    cs::check(name, measured, compare, bar, unit, why);
  }
}

std::string h200_target(const char* op, double value, const char* unit) {
  char text[64];
  std::snprintf(text, sizeof text, "H200 target %s %.2f%s", op, value, unit);
  return text;
}

// Plain cudaMemcpy (the default stream, synchronous for the host), timed with events on the
// default stream; the median of the repeats after the warm-up.
double plain_copy_ms(void* dst, const void* src, std::size_t bytes, cudaMemcpyKind kind,
                     int repeats) {
  return cs::time_on_stream_ms(nullptr, kWarmup, repeats,
                               [&] { CS_CHECK(cudaMemcpy(dst, src, bytes, kind)); })
      .median;
}

// What one cudaMemcpyAsync costs the host (the time inside the call) and the copy itself (events
// around it in the stream), each the median of the repeats; the stream is idle before each call.
struct AsyncCall {
  double call_ms = 0;
  double copy_ms = 0;
};
AsyncCall time_async_call(void* dst, const void* src, std::size_t bytes, cudaMemcpyKind kind,
                          cudaStream_t stream, int repeats) {
  cudaEvent_t start = nullptr;
  cudaEvent_t stop = nullptr;
  CS_CHECK(cudaEventCreate(&start));
  CS_CHECK(cudaEventCreate(&stop));
  std::vector<double> calls;
  std::vector<double> copies;
  for (int i = -kWarmup; i < repeats; ++i) {
    CS_CHECK(cudaStreamSynchronize(stream));
    CS_CHECK(cudaEventRecord(start, stream));
    const double before = cs::host_now_ms();
    CS_CHECK(cudaMemcpyAsync(dst, src, bytes, kind, stream));
    const double after = cs::host_now_ms();
    CS_CHECK(cudaEventRecord(stop, stream));
    CS_CHECK(cudaEventSynchronize(stop));
    float copy_ms = 0;
    CS_CHECK(cudaEventElapsedTime(&copy_ms, start, stop));
    if (i >= 0) {
      calls.push_back(after - before);
      copies.push_back(copy_ms);
    }
  }
  CS_CHECK(cudaEventDestroy(start));
  CS_CHECK(cudaEventDestroy(stop));
  return {cs::median(calls), cs::median(copies)};
}

// The buffers every part after the seed shares.
struct Buffers {
  std::size_t elements = 0;
  std::size_t bytes = 0;
  std::uint32_t* host_in = nullptr;     // pinned (cudaMallocHost): the pipeline's input
  std::uint32_t* host_out = nullptr;    // pinned (cudaMallocHost): the pipeline's output
  std::vector<std::uint32_t> pageable;  // ordinary memory holding the same input words
  std::uint32_t* dev_in = nullptr;
  std::uint32_t* dev_out = nullptr;
};

// What part 2 measured that later parts compare against: the rates of plain cudaMemcpy from
// and to pinned memory, and the host time inside one cudaMemcpyAsync H2D from pageable memory.
struct PinnedRates {
  double h2d_gbps = 0;
  double d2h_gbps = 0;
  double pageable_h2d_call_ms = 0;
};

// ---------------------------------------------------------------------------------------------
// Part 1: the seed, as the CUDA guide writes it
// ---------------------------------------------------------------------------------------------

void run_seed(std::size_t total_elements) {
  std::printf(
      "\n1. The seed: two streams; each copies its half in, runs MyKernel<<<100, 512>>> on it"
      " and copies it back\n");
  // The seed uses `size` twice: as an element offset (hostPtr + i * size moves size floats) and
  // as a byte count (cudaMallocHost(&hostPtr, 2 * size) and the copies' third argument). Both
  // cannot hold unless elements were bytes. Read consistently, `size` is the number of floats
  // each stream handles, and every byte count is size * sizeof(float).
  const std::size_t size = total_elements / 2;
  float* inputDevPtr = nullptr;
  float* outputDevPtr = nullptr;
  CS_CHECK(cudaMalloc(&inputDevPtr, 2 * size * sizeof(float)));
  CS_CHECK(cudaMalloc(&outputDevPtr, 2 * size * sizeof(float)));

  cudaStream_t stream[2];
  for (int i = 0; i < 2; ++i) CS_CHECK(cudaStreamCreate(&stream[i]));
  float* hostPtr = nullptr;
  CS_CHECK(cudaMallocHost(&hostPtr, 2 * size * sizeof(float)));
  for (std::size_t j = 0; j < 2 * size; ++j) hostPtr[j] = static_cast<float>(j % 1024);

  for (int i = 0; i < 2; ++i) {
    CS_CHECK(cudaMemcpyAsync(inputDevPtr + i * size, hostPtr + i * size, size * sizeof(float),
                             cudaMemcpyHostToDevice, stream[i]));
    MyKernel<<<100, 512, 0, stream[i]>>>(outputDevPtr + i * size, inputDevPtr + i * size, size);
    CS_CHECK_LAUNCH();
    CS_CHECK(cudaMemcpyAsync(hostPtr + i * size, outputDevPtr + i * size, size * sizeof(float),
                             cudaMemcpyDeviceToHost, stream[i]));
  }
  // cudaStreamDestroy returns at once; the work already in the stream still runs to the end.
  for (int i = 0; i < 2; ++i) CS_CHECK(cudaStreamDestroy(stream[i]));
  // The seed stops here. Reading hostPtr needs the copies back to be finished first.
  CS_CHECK(cudaDeviceSynchronize());

  std::vector<float> want(2 * size);
  for (std::size_t j = 0; j < want.size(); ++j)
    want[j] = 2.0f * static_cast<float>(j % 1024) + 1.0f;
  cs::verify("seed_two_streams", hostPtr, want.data(), want.size());
  std::printf(
      "  Each stream's copy in, kernel and copy back run in order; the two streams are\n"
      "  independent, so stream 1's copy in can overlap stream 0's kernel.\n");
  CS_CHECK(cudaFreeHost(hostPtr));
  CS_CHECK(cudaFree(inputDevPtr));
  CS_CHECK(cudaFree(outputDevPtr));
}

// ---------------------------------------------------------------------------------------------
// Part 2: pageable vs pinned host memory
// ---------------------------------------------------------------------------------------------

PinnedRates compare_pageable_pinned(Buffers& b, int repeats, const std::string& skip_reason,
                                    bool measure) {
  std::printf("\n2. Pageable (std::vector) vs pinned (cudaMallocHost) memory, %s each way\n",
              cs::format_bytes(static_cast<double>(b.bytes)).c_str());
  // Correctness first: pageable -> device -> pinned must give back the same words.
  CS_CHECK(cudaMemcpy(b.dev_in, b.pageable.data(), b.bytes, cudaMemcpyHostToDevice));
  std::fill(b.host_out, b.host_out + b.elements, 0u);
  CS_CHECK(cudaMemcpy(b.host_out, b.dev_in, b.bytes, cudaMemcpyDeviceToHost));
  cs::verify("pageable_round_trip", b.host_out, b.pageable.data(), b.elements);

  PinnedRates pinned;
  double pageable_h2d_gbps = 0;
  double pageable_d2h_gbps = 0;
  AsyncCall pageable_up;
  AsyncCall pageable_down;
  AsyncCall pinned_up;
  AsyncCall pinned_down;
  if (measure) {
    pageable_h2d_gbps = gb_per_s(b.bytes, plain_copy_ms(b.dev_in, b.pageable.data(), b.bytes,
                                                        cudaMemcpyHostToDevice, repeats));
    pageable_d2h_gbps = gb_per_s(b.bytes, plain_copy_ms(b.pageable.data(), b.dev_in, b.bytes,
                                                        cudaMemcpyDeviceToHost, repeats));
    pinned.h2d_gbps = gb_per_s(
        b.bytes, plain_copy_ms(b.dev_in, b.host_in, b.bytes, cudaMemcpyHostToDevice, repeats));
    pinned.d2h_gbps = gb_per_s(
        b.bytes, plain_copy_ms(b.host_out, b.dev_in, b.bytes, cudaMemcpyDeviceToHost, repeats));
    std::printf("  plain cudaMemcpy        H2D GB/s   D2H GB/s\n");
    std::printf("    pageable              %8.1f   %8.1f\n", pageable_h2d_gbps, pageable_d2h_gbps);
    std::printf("    pinned                %8.1f   %8.1f\n", pinned.h2d_gbps, pinned.d2h_gbps);

    cudaStream_t stream = nullptr;
    CS_CHECK(cudaStreamCreate(&stream));
    pageable_up = time_async_call(b.dev_in, b.pageable.data(), b.bytes, cudaMemcpyHostToDevice,
                                  stream, repeats);
    pageable_down = time_async_call(b.pageable.data(), b.dev_in, b.bytes, cudaMemcpyDeviceToHost,
                                    stream, repeats);
    pinned_up =
        time_async_call(b.dev_in, b.host_in, b.bytes, cudaMemcpyHostToDevice, stream, repeats);
    pinned_down =
        time_async_call(b.host_out, b.dev_in, b.bytes, cudaMemcpyDeviceToHost, stream, repeats);
    CS_CHECK(cudaStreamDestroy(stream));
    pinned.pageable_h2d_call_ms = pageable_up.call_ms;
    std::printf("  one cudaMemcpyAsync     time inside the call   the copy (events)   call/copy\n");
    auto row = [](const char* what, const AsyncCall& a) {
      std::printf("    %-20s  %14.3f ms   %14.3f ms   %8.3f\n", what, a.call_ms, a.copy_ms,
                  a.call_ms / a.copy_ms);
    };
    row("pageable H2D", pageable_up);
    row("pageable D2H", pageable_down);
    row("pinned H2D", pinned_up);
    row("pinned D2H", pinned_down);
  }
  timing_check(skip_reason, "pinned_vs_pageable_h2d", pinned.h2d_gbps / pageable_h2d_gbps,
               cs::Compare::at_least, bars::pinned_over_pageable, "x",
               "pinned / pageable cudaMemcpy bandwidth, H2D");
  timing_check(skip_reason, "pinned_vs_pageable_d2h", pinned.d2h_gbps / pageable_d2h_gbps,
               cs::Compare::at_least, bars::pinned_over_pageable, "x",
               "pinned / pageable cudaMemcpy bandwidth, D2H");
  std::printf(
      "  Pageable memory can be paged out, so the DMA engine cannot read it directly: the\n"
      "  driver first copies it, piece by piece, into a pinned staging buffer.\n");
  timing_check(skip_reason, "pageable_async_call_blocks_h2d",
               pageable_up.call_ms / pageable_up.copy_ms, cs::Compare::at_least,
               bars::pageable_call_share, "x", "host time inside the call / the copy's time");
  timing_check(skip_reason, "pageable_async_call_blocks_d2h",
               pageable_down.call_ms / pageable_down.copy_ms, cs::Compare::at_least,
               bars::pageable_call_share, "x", "host time inside the call / the copy's time");
  timing_check(skip_reason, "pinned_async_call_returns_h2d",
               pinned_up.call_ms / pageable_up.call_ms, cs::Compare::at_most,
               bars::pinned_call_vs_pageable, "x", "pinned call time / pageable call time");
  timing_check(skip_reason, "pinned_async_call_returns_d2h",
               pinned_down.call_ms / pageable_down.call_ms, cs::Compare::at_most,
               bars::pinned_call_vs_pageable, "x", "pinned call time / pageable call time");
  std::printf(
      "  From pageable memory cudaMemcpyAsync is asynchronous in name only: the host is busy\n"
      "  staging the data (H2D) or waits for it to arrive (D2H). From pinned memory the call\n"
      "  only queues the DMA and returns, and the host is free while the copy runs.\n");
  return pinned;
}

// ---------------------------------------------------------------------------------------------
// Part 3: cudaHostRegister pins a buffer that already exists
// ---------------------------------------------------------------------------------------------

void register_existing_buffer(Buffers& b, const PinnedRates& pinned, int repeats,
                              const std::string& skip_reason, bool measure) {
  std::printf("\n3. cudaHostRegister on the std::vector of part 2 (%s)\n",
              cs::format_bytes(static_cast<double>(b.bytes)).c_str());
  cudaStream_t stream = nullptr;
  CS_CHECK(cudaStreamCreate(&stream));
  cudaPointerAttributes before{};
  CS_CHECK(cudaPointerGetAttributes(&before, b.pageable.data()));
  CS_CHECK(cudaHostRegister(b.pageable.data(), b.bytes, cudaHostRegisterDefault));
  cudaPointerAttributes after{};
  CS_CHECK(cudaPointerGetAttributes(&after, b.pageable.data()));
  cs::check_that("registered_pointer_is_pinned",
                 before.type == cudaMemoryTypeUnregistered && after.type == cudaMemoryTypeHost,
                 std::string("cudaPointerGetAttributes type: ") +
                     (before.type == cudaMemoryTypeUnregistered ? "unregistered" : "other") +
                     " before, " + (after.type == cudaMemoryTypeHost ? "host (pinned)" : "other") +
                     " after");

  // Correctness: device -> registered vector must give back the input words.
  std::fill(b.pageable.begin(), b.pageable.end(), 0u);
  CS_CHECK(cudaMemcpy(b.pageable.data(), b.dev_in, b.bytes, cudaMemcpyDeviceToHost));
  cs::verify("registered_round_trip", b.pageable.data(), b.host_in, b.elements);

  double registered_h2d_gbps = 0;
  double registered_d2h_gbps = 0;
  AsyncCall registered_up;
  if (measure) {
    registered_h2d_gbps = gb_per_s(b.bytes, plain_copy_ms(b.dev_in, b.pageable.data(), b.bytes,
                                                          cudaMemcpyHostToDevice, repeats));
    registered_d2h_gbps = gb_per_s(b.bytes, plain_copy_ms(b.pageable.data(), b.dev_in, b.bytes,
                                                          cudaMemcpyDeviceToHost, repeats));
    registered_up = time_async_call(b.dev_in, b.pageable.data(), b.bytes, cudaMemcpyHostToDevice,
                                    stream, repeats);
    std::printf("  plain cudaMemcpy        H2D GB/s   D2H GB/s\n");
    std::printf("    registered vector     %8.1f   %8.1f\n", registered_h2d_gbps,
                registered_d2h_gbps);
    std::printf("    pinned (part 2)       %8.1f   %8.1f\n", pinned.h2d_gbps, pinned.d2h_gbps);
    std::printf(
        "  one cudaMemcpyAsync H2D from the vector: %.3f ms inside the call before\n"
        "  cudaHostRegister, %.3f ms after\n",
        pinned.pageable_h2d_call_ms, registered_up.call_ms);
  }
  CS_CHECK(cudaHostUnregister(b.pageable.data()));
  CS_CHECK(cudaStreamDestroy(stream));

  timing_check(skip_reason, "registered_vs_pinned_h2d", registered_h2d_gbps / pinned.h2d_gbps,
               cs::Compare::at_least, bars::registered_vs_pinned, "x",
               "registered / cudaMallocHost bandwidth; any GPU; " +
                   h200_target(">=", bars::h200_registered_vs_pinned, "x"));
  timing_check(skip_reason, "registered_vs_pinned_d2h", registered_d2h_gbps / pinned.d2h_gbps,
               cs::Compare::at_least, bars::registered_vs_pinned, "x",
               "registered / cudaMallocHost bandwidth; any GPU; " +
                   h200_target(">=", bars::h200_registered_vs_pinned, "x"));
  timing_check(skip_reason, "registered_async_call_returns_h2d",
               registered_up.call_ms / pinned.pageable_h2d_call_ms, cs::Compare::at_most,
               bars::pinned_call_vs_pageable, "x", "call time after / before cudaHostRegister");
  std::printf(
      "  cudaHostRegister page-locks the vector's pages and maps them for the GPU: from then\n"
      "  on the driver treats them like cudaMallocHost memory. Registering costs time (every\n"
      "  page is locked), so register once and reuse; cudaHostUnregister before freeing.\n");
}

// ---------------------------------------------------------------------------------------------
// Part 4: the pipeline over S streams and C chunks
// ---------------------------------------------------------------------------------------------

struct Chunk {
  int index = 0;
  std::size_t begin = 0;  // first element
  std::size_t count = 0;  // elements
  int stream = 0;         // which of the S streams carries it
};

// C pieces whose sizes differ by at most one element (so C need not divide the data), dealt to
// the streams round robin.
std::vector<Chunk> split_into_chunks(std::size_t elements, int chunk_count, int stream_count) {
  std::vector<Chunk> chunks;
  const std::size_t parts = static_cast<std::size_t>(chunk_count);
  for (std::size_t c = 0; c < parts; ++c) {
    const std::size_t begin = elements * c / parts;
    const std::size_t end = elements * (c + 1) / parts;
    chunks.push_back({static_cast<int>(c), begin, end - begin, static_cast<int>(c) % stream_count});
  }
  return chunks;
}

enum class Stage { h2d, kernel, d2h };
const char* stage_kind(Stage stage) {
  return stage == Stage::h2d ? "H2D" : stage == Stage::kernel ? "kernel" : "D2H";
}

enum class Order { serial, depth_first, breadth_first };

struct Pipeline {
  const Buffers* buffers = nullptr;
  std::vector<Chunk> chunks;
  int iterations = kUntimedIterations;
};

void launch_scramble(const Pipeline& p, const Chunk& chunk, cudaStream_t stream, int iterations) {
  const unsigned blocks = static_cast<unsigned>((chunk.count + kBlock - 1) / kBlock);
  scramble<<<blocks, kBlock, 0, stream>>>(p.buffers->dev_out + chunk.begin,
                                          p.buffers->dev_in + chunk.begin, chunk.count, iterations,
                                          kMultiplier, kIncrement);
  CS_CHECK_LAUNCH();
}

// One stage of one chunk, queued in `stream`; drawn on `timeline` (row "stream N") when given.
void issue_stage(const Pipeline& p, Stage stage, const Chunk& chunk, cudaStream_t stream, int row,
                 cs::Timeline* timeline) {
  const Buffers& b = *p.buffers;
  const std::size_t bytes = chunk.count * sizeof(std::uint32_t);
  int span = -1;
  if (timeline) {
    span = timeline->begin("stream " + std::to_string(row), stage_kind(stage), stream,
                           "chunk " + std::to_string(chunk.index));
  }
  switch (stage) {
    case Stage::h2d:
      CS_CHECK(cudaMemcpyAsync(b.dev_in + chunk.begin, b.host_in + chunk.begin, bytes,
                               cudaMemcpyHostToDevice, stream));
      break;
    case Stage::kernel:
      launch_scramble(p, chunk, stream, p.iterations);
      break;
    case Stage::d2h:
      CS_CHECK(cudaMemcpyAsync(b.host_out + chunk.begin, b.dev_out + chunk.begin, bytes,
                               cudaMemcpyDeviceToHost, stream));
      break;
  }
  if (timeline) timeline->end(span, stream);
}

// The whole pipeline in one of three issue orders. Within each stream, a chunk's H2D, kernel and
// D2H run in order; only different streams' work may overlap.
//   serial:        every chunk in streams[0]: nothing can overlap (the reference time).
//   depth_first:   chunk by chunk: H2D, kernel, D2H of chunk 0 in its stream, then chunk 1, ...
//   breadth_first: stage by stage over a wave of S chunks (one per stream): all H2Ds, then all
//                  kernels, then all D2Hs, then the next wave. With S >= C that is the plain
//                  "all H2Ds, all kernels, all D2Hs"; with fewer streams, waves keep each
//                  stream's order H2D, kernel, D2H per chunk (see the README for why).
void issue_pipeline(const Pipeline& p, Order order, const std::vector<cudaStream_t>& streams,
                    cs::Timeline* timeline) {
  auto stage = [&](Stage s, const Chunk& chunk) {
    const int row = order == Order::serial ? 0 : chunk.stream;
    issue_stage(p, s, chunk, streams[static_cast<std::size_t>(row)], row, timeline);
  };
  if (order == Order::breadth_first) {
    const std::size_t wave = streams.size();
    for (std::size_t first = 0; first < p.chunks.size(); first += wave) {
      const std::size_t last = std::min(p.chunks.size(), first + wave);
      for (Stage s : {Stage::h2d, Stage::kernel, Stage::d2h}) {
        for (std::size_t c = first; c < last; ++c) stage(s, p.chunks[c]);
      }
    }
    return;
  }
  for (const Chunk& chunk : p.chunks) {
    stage(Stage::h2d, chunk);
    stage(Stage::kernel, chunk);
    stage(Stage::d2h, chunk);
  }
}

// Lets events on streams[0] time work spread over all streams: fork() makes every stream wait
// for the point it is called at in streams[0]; join() makes streams[0] wait for all of them.
class ForkJoin {
 public:
  explicit ForkJoin(std::size_t streams) : events_(streams, nullptr) {
    for (cudaEvent_t& event : events_) {
      CS_CHECK(cudaEventCreateWithFlags(&event, cudaEventDisableTiming));
    }
  }
  ~ForkJoin() {
    for (cudaEvent_t event : events_) cudaEventDestroy(event);
  }
  ForkJoin(const ForkJoin&) = delete;
  ForkJoin& operator=(const ForkJoin&) = delete;

  void fork(const std::vector<cudaStream_t>& streams) {
    CS_CHECK(cudaEventRecord(events_[0], streams[0]));
    for (std::size_t s = 1; s < streams.size(); ++s) {
      CS_CHECK(cudaStreamWaitEvent(streams[s], events_[0], 0));
    }
  }
  void join(const std::vector<cudaStream_t>& streams) {
    for (std::size_t s = 1; s < streams.size(); ++s) {
      CS_CHECK(cudaEventRecord(events_[s], streams[s]));
      CS_CHECK(cudaStreamWaitEvent(streams[0], events_[s], 0));
    }
  }

 private:
  std::vector<cudaEvent_t> events_;
};

// Each stage of every chunk alone, all queued in one stream: the stage's total time.
double time_stage_alone_ms(const Pipeline& p, Stage stage, cudaStream_t stream, int repeats) {
  return cs::time_on_stream_ms(stream, kWarmup, repeats,
                               [&] {
                                 for (const Chunk& chunk : p.chunks)
                                   issue_stage(p, stage, chunk, stream, 0, nullptr);
                               })
      .median;
}

// Every chunk's H2D in `up` and every chunk's D2H in `down`, at the same time: how much each
// direction slows down when the other one runs (they share the PCIe link and host memory).
struct BothWays {
  double h2d_ms = 0;
  double d2h_ms = 0;
};
BothWays time_both_directions(const Pipeline& p, cudaStream_t up, cudaStream_t down, int repeats) {
  cudaEvent_t start = nullptr;
  cudaEvent_t up_done = nullptr;
  cudaEvent_t down_done = nullptr;
  CS_CHECK(cudaEventCreate(&start));
  CS_CHECK(cudaEventCreate(&up_done));
  CS_CHECK(cudaEventCreate(&down_done));
  std::vector<double> ups;
  std::vector<double> downs;
  for (int i = -kWarmup; i < repeats; ++i) {
    CS_CHECK(cudaEventRecord(start, up));
    CS_CHECK(cudaStreamWaitEvent(down, start, 0));
    for (const Chunk& chunk : p.chunks) {  // interleaved, so that both streams start together
      issue_stage(p, Stage::h2d, chunk, up, 0, nullptr);
      issue_stage(p, Stage::d2h, chunk, down, 0, nullptr);
    }
    CS_CHECK(cudaEventRecord(up_done, up));
    CS_CHECK(cudaEventRecord(down_done, down));
    CS_CHECK(cudaEventSynchronize(up_done));
    CS_CHECK(cudaEventSynchronize(down_done));
    float up_ms = 0;
    float down_ms = 0;
    CS_CHECK(cudaEventElapsedTime(&up_ms, start, up_done));
    CS_CHECK(cudaEventElapsedTime(&down_ms, start, down_done));
    if (i >= 0) {
      ups.push_back(up_ms);
      downs.push_back(down_ms);
    }
  }
  CS_CHECK(cudaEventDestroy(start));
  CS_CHECK(cudaEventDestroy(up_done));
  CS_CHECK(cudaEventDestroy(down_done));
  return {cs::median(ups), cs::median(downs)};
}

// GPUs lower their clocks while idle and raise them again under load within tens of
// milliseconds. Parts 2 and 3 left the SMs idle, so keep them busy for a while before the
// kernel is calibrated and timed.
void raise_clocks(const Pipeline& p, cudaStream_t stream) {
  const Chunk everything{0, 0, p.buffers->elements, 0};
  cs::EventTimer timer;
  double busy_ms = 0;
  for (int launch = 0; launch < kClockWarmupLaunches && busy_ms < kClockWarmupMs; ++launch) {
    timer.start(stream);
    launch_scramble(p, everything, stream, kCalibrationGuess);
    timer.stop(stream);
    busy_ms += timer.elapsed_ms();
  }
}

// Picks the kernel's iteration count so that one chunk's kernel takes `target_ms`: time a guess,
// scale by the ratio, and twice more to absorb the launch's fixed cost.
int calibrate_iterations(const Pipeline& p, cudaStream_t stream, double target_ms) {
  const Chunk& chunk = p.chunks.front();
  int iterations = kCalibrationGuess;
  for (int round = 0; round < 3; ++round) {
    const double ms = cs::time_on_stream_ms(stream, kWarmup, 5, [&] {
                        launch_scramble(p, chunk, stream, iterations);
                      }).median;
    const double scaled = ms > 0 ? iterations * target_ms / ms : kMaxIterations;
    iterations =
        static_cast<int>(std::min<double>(kMaxIterations, std::max(1.0, std::round(scaled))));
  }
  return iterations;
}

// The share of a run during which an H2D, a kernel and a D2H were all in progress at once.
double share_with_all_stages_busy(const cs::TimelineData& data) {
  struct Edge {
    double at;
    int stage;
    int delta;
  };
  std::vector<Edge> edges;
  double first = std::numeric_limits<double>::max();
  double last = 0;
  for (const cs::Span& span : data.spans) {
    const int stage = span.kind == "H2D" ? 0 : span.kind == "kernel" ? 1 : 2;
    edges.push_back({span.start_ms, stage, +1});
    edges.push_back({span.end_ms, stage, -1});
    first = std::min(first, span.start_ms);
    last = std::max(last, span.end_ms);
  }
  std::sort(edges.begin(), edges.end(), [](const Edge& a, const Edge& b) {
    return a.at != b.at ? a.at < b.at : a.delta < b.delta;  // ends before starts at one instant
  });
  int active[3] = {0, 0, 0};
  double busy = 0;
  double previous = first;
  for (const Edge& edge : edges) {
    if (active[0] > 0 && active[1] > 0 && active[2] > 0) busy += edge.at - previous;
    previous = edge.at;
    active[edge.stage] += edge.delta;
  }
  return last > first ? busy / (last - first) : 0;
}

// The ideal time of the overlapped pipeline, from the stages' totals measured alone.
struct Bound {
  double engine_ms = 0;  // what the engines allow
  double stream_ms = 0;  // what the streams allow: each runs its own chunks one after another
  double ms() const { return std::max(engine_ms, stream_ms); }
};
Bound ideal_bound(double h2d, double kernel, double d2h, int chunk_count, int stream_count,
                  int async_engines) {
  const double c = chunk_count;
  const double h = h2d / c, k = kernel / c, d = d2h / c;  // one chunk's stages
  Bound bound;
  if (async_engines >= 2) {
    // Three engines work at once; the slowest stage paces the run, plus filling (the first
    // chunk's earlier stages) and draining (the last chunk's later ones).
    bound.engine_ms = std::max({h2d, kernel, d2h}) + (h + k + d - std::max({h, k, d}));
  } else if (async_engines == 1) {
    // One copy engine does H2D and D2H in turn: together they are one stage.
    bound.engine_ms = std::max(h2d + d2h, kernel) + (h + d + k - std::max(h + d, k));
  } else {
    bound.engine_ms = h2d + kernel + d2h;  // copies cannot overlap kernels at all
  }
  const double chunks_per_stream = std::ceil(c / stream_count);
  bound.stream_ms = chunks_per_stream * (h + k + d);
  return bound;
}

std::string bound_formula(int async_engines) {
  if (async_engines >= 2) {
    return "asyncEngineCount " + std::to_string(async_engines) +
           ": H2D and D2H have engines of their own, so all three stages run at once:\n"
           "    bound = max(H2D, kernel, D2H) + fill/drain (one chunk's other two stages)";
  }
  if (async_engines == 1) {
    return "asyncEngineCount 1: one copy engine does both directions, in turn:\n"
           "    bound = max(H2D + D2H, kernel) + fill/drain (one chunk's other stage)";
  }
  return "asyncEngineCount 0: copies cannot overlap kernels on this device:\n"
         "    bound = H2D + kernel + D2H";
}

void run_pipeline(const Buffers& b, const cudaDeviceProp& prop, int chunk_count, int stream_count,
                  int repeats, const PinnedRates& pinned, const cs::CommonOptions& common,
                  const std::string& skip_reason, bool measure) {
  const int engines = prop.asyncEngineCount;
  Pipeline p;
  p.buffers = &b;
  p.chunks = split_into_chunks(b.elements, chunk_count, stream_count);
  const bool even = b.elements % static_cast<std::size_t>(chunk_count) == 0;
  std::printf(
      "\n4. The pipeline: %d chunk%s of %s%s over %d stream%s\n", chunk_count,
      chunk_count == 1 ? "" : "s",
      cs::format_bytes(static_cast<double>(p.chunks.front().count * sizeof(std::uint32_t))).c_str(),
      even ? "" : " (sizes differ by one element at most)", stream_count,
      stream_count == 1 ? "" : "s");
  if (stream_count > chunk_count) {
    std::printf("  (only %d of the %d streams get a chunk)\n", chunk_count, stream_count);
  }

  std::vector<cudaStream_t> streams(static_cast<std::size_t>(stream_count));
  for (cudaStream_t& stream : streams) CS_CHECK(cudaStreamCreate(&stream));
  cudaStream_t probe[2];  // two streams of its own for measuring stages alone
  for (cudaStream_t& stream : probe) CS_CHECK(cudaStreamCreate(&stream));
  CS_CHECK(cudaDeviceSynchronize());

  // Stage times alone, the kernel sized to match the copies, and the bound.
  double h2d_ms = 0, kernel_ms = 0, d2h_ms = 0;
  Bound bound;
  if (measure) {
    h2d_ms = time_stage_alone_ms(p, Stage::h2d, probe[0], repeats);
    d2h_ms = time_stage_alone_ms(p, Stage::d2h, probe[0], repeats);
    double target_chunk_ms = h2d_ms / chunk_count;
    const char* target_what = "one chunk's H2D";
    if (engines >= 2) {
      const BothWays both = time_both_directions(p, probe[0], probe[1], repeats);
      std::printf(
          "  copies of all chunks, both directions at once: H2D %.1f GB/s + D2H %.1f GB/s ="
          " %.1f GB/s (alone: %.1f and %.1f)\n",
          gb_per_s(b.bytes, both.h2d_ms), gb_per_s(b.bytes, both.d2h_ms),
          gb_per_s(b.bytes, both.h2d_ms) + gb_per_s(b.bytes, both.d2h_ms),
          gb_per_s(b.bytes, h2d_ms), gb_per_s(b.bytes, d2h_ms));
      // Inside the pipeline both directions copy at once, so that is the pace to match.
      target_chunk_ms = std::max(both.h2d_ms, both.d2h_ms) / chunk_count;
      target_what = "one chunk's copy while the other direction copies too";
    } else if (engines == 1) {
      target_chunk_ms = (h2d_ms + d2h_ms) / chunk_count;
      target_what = "one chunk's H2D + D2H on the one copy engine";
    }
    raise_clocks(p, probe[0]);
    p.iterations = calibrate_iterations(p, probe[0], target_chunk_ms);
    kernel_ms = time_stage_alone_ms(p, Stage::kernel, probe[0], repeats);
    std::printf(
        "  kernel calibrated once: %d multiply-adds per element make one chunk's kernel take"
        " %.3f ms\n  (target %.3f ms: %s)\n",
        p.iterations, kernel_ms / chunk_count, target_chunk_ms, target_what);
    std::printf("  stage times, each alone (all %d chunks in one stream):\n", chunk_count);
    std::printf("    H2D     %8.3f ms  (%.1f GB/s)\n", h2d_ms, gb_per_s(b.bytes, h2d_ms));
    std::printf("    kernel  %8.3f ms\n", kernel_ms);
    std::printf("    D2H     %8.3f ms  (%.1f GB/s)\n", d2h_ms, gb_per_s(b.bytes, d2h_ms));
    bound = ideal_bound(h2d_ms, kernel_ms, d2h_ms, chunk_count, stream_count, engines);
    std::printf("  %s\n", bound_formula(engines).c_str());
    std::printf(
        "    engines allow %.3f ms; %d stream%s running %d chunk%s each in order allow %.3f ms\n",
        bound.engine_ms, stream_count, stream_count == 1 ? "" : "s",
        static_cast<int>(std::ceil(static_cast<double>(chunk_count) / stream_count)),
        chunk_count <= stream_count ? "" : "s", bound.stream_ms);
    std::printf("    ideal bound: %.3f ms\n", bound.ms());
  } else {
    std::printf("  kernel: %d multiply-adds per element (fixed: calibration needs timing)\n",
                p.iterations);
  }
  timing_check(skip_reason, "chunked_async_rate_h2d",
               measure ? gb_per_s(b.bytes, h2d_ms) / pinned.h2d_gbps : 0, cs::Compare::at_least,
               bars::chunked_vs_plain, "x",
               "H2D stage's rate / one plain pinned cudaMemcpy; any GPU; " +
                   h200_target(">=", bars::h200_chunked_vs_plain, "x"));
  timing_check(skip_reason, "chunked_async_rate_d2h",
               measure ? gb_per_s(b.bytes, d2h_ms) / pinned.d2h_gbps : 0, cs::Compare::at_least,
               bars::chunked_vs_plain, "x",
               "D2H stage's rate / one plain pinned cudaMemcpy; any GPU; " +
                   h200_target(">=", bars::h200_chunked_vs_plain, "x"));

  struct Variant {
    Order order;
    const char* name;
    const char* title;
  };
  const Variant variants[] = {
      {Order::serial, "serial", "Serial: every chunk in stream 0, nothing overlaps"},
      {Order::depth_first, "depth_first",
       "Depth-first: for each chunk, its H2D, kernel and D2H in its stream"},
      {Order::breadth_first, "breadth_first",
       "Breadth-first: for each wave of one chunk per stream, all H2Ds, all kernels, all D2Hs"},
  };
  constexpr std::size_t kVariants = sizeof variants / sizeof variants[0];
  ForkJoin fork_join(streams.size());

  // The timed runs, back to back so that the GPU's clocks stay where the calibration saw them.
  double variant_ms[kVariants] = {};
  if (measure) {
    for (std::size_t i = 0; i < kVariants; ++i) {
      variant_ms[i] = cs::time_on_stream_ms(streams[0], kWarmup, repeats, [&] {
                        fork_join.fork(streams);
                        issue_pipeline(p, variants[i].order, streams, nullptr);
                        fork_join.join(streams);
                      }).median;
    }
  }

  // One more run of each order, drawn on a timeline and checked element by element against the
  // CPU reference of the calibrated kernel.
  const Affine steps = compose_steps(p.iterations);
  std::vector<std::uint32_t> want(b.elements);
  for (std::size_t i = 0; i < b.elements; ++i) {
    want[i] = steps.multiplier * input_word(i) + steps.increment;
  }
  cs::TimelineData variant_timeline[kVariants];
  cs::Timeline timeline;
  for (std::size_t i = 0; i < kVariants; ++i) {
    // Clear every buffer the pipeline writes, so that only this run's work can pass the check.
    CS_CHECK(cudaMemset(b.dev_in, 0, b.bytes));
    CS_CHECK(cudaMemset(b.dev_out, 0, b.bytes));
    std::fill(b.host_out, b.host_out + b.elements, 0u);
    CS_CHECK(cudaDeviceSynchronize());
    timeline.start(streams[0]);
    fork_join.fork(streams);
    issue_pipeline(p, variants[i].order, streams, &timeline);
    fork_join.join(streams);
    variant_timeline[i] = timeline.collect();
    CS_CHECK(cudaDeviceSynchronize());
    cs::verify(std::string("pipeline_") + variants[i].name, b.host_out, want.data(), b.elements);
  }

  const double serial_ms = variant_ms[0];
  if (measure) {
    std::printf(
        "  order            time ms   speedup over serial   time / bound   all 3 stages busy\n");
    for (std::size_t i = 0; i < kVariants; ++i) {
      std::printf("    %-14s %8.3f   %12.2fx         %8.2fx       %5.0f%% of the run\n",
                  variants[i].name, variant_ms[i], serial_ms / variant_ms[i],
                  variant_ms[i] / bound.ms(),
                  100.0 * share_with_all_stages_busy(variant_timeline[i]));
    }
    std::printf("  (the last column is read off the timeline run below)\n");
  }
  for (std::size_t i = 0; i < kVariants; ++i) {
    cs::publish_timeline(variant_timeline[i], common, variants[i].title);
  }

  // Where the speedup bar cannot apply, say why.
  std::string speedup_skip = skip_reason;
  if (speedup_skip.empty()) {
    if (engines == 0) {
      speedup_skip = "asyncEngineCount 0: this device cannot overlap copies with kernels";
    } else if (stream_count < bars::min_streams_for_speedup) {
      speedup_skip = "needs --streams " + std::to_string(bars::min_streams_for_speedup) +
                     " or more to hold a chunk in each stage";
    } else if (chunk_count < bars::min_chunks_for_speedup) {
      speedup_skip = "needs --chunks " + std::to_string(bars::min_chunks_for_speedup) +
                     " or more, or filling and draining dominate";
    }
  }
  const double speedup_bar = bars::speedup_for(engines);
  const std::string speedup_why =
      "serial / overlapped; asyncEngineCount " + std::to_string(engines) + ", any GPU" +
      (engines >= 2 ? "; " + h200_target(">=", bars::h200_speedup, "x") : std::string());
  const std::string bound_why =
      "overlapped / ideal bound; any GPU; " + h200_target("<=", bars::h200_overlap_vs_bound, "x");
  for (std::size_t i = 1; i < kVariants; ++i) {  // the overlapped ones
    timing_check(skip_reason, std::string("bound_") + variants[i].name, variant_ms[i] / bound.ms(),
                 cs::Compare::at_most, bars::overlap_vs_bound, "x", bound_why);
    timing_check(speedup_skip, std::string("speedup_") + variants[i].name,
                 serial_ms / variant_ms[i], cs::Compare::at_least, speedup_bar, "x", speedup_why);
  }
  std::printf(
      "  With one stream every stage waits for the one before it. With several, the copy engines\n"
      "  and the SMs work on different chunks at once and the run approaches the slowest stage's\n"
      "  total. Both issue orders give each stream the same work in the same order; since Kepler\n"
      "  a few streams each get a hardware queue of their own, so both orders overlap alike. With\n"
      "  a single hardware queue (older GPUs) the order of issue decided what could overlap.\n");

  for (cudaStream_t stream : streams) CS_CHECK(cudaStreamDestroy(stream));
  for (cudaStream_t stream : probe) CS_CHECK(cudaStreamDestroy(stream));
}

}  // namespace

int main(int argc, char** argv) {
  int mib = 256;
  int chunk_count = 32;
  int stream_count = 4;
  int repeats = 5;
  cs::CommonOptions common;
  cs::Options options("04_pinned_async_pipeline",
                      "Pageable vs pinned copies, cudaHostRegister, and a copy/compute pipeline "
                      "over S streams and C chunks");
  options.add_int("mib", &mib, 1, kMaxMib,
                  "data size in MiB: the seed's two halves, the copies and the pipeline's buffer");
  options.add_int("chunks", &chunk_count, 1, 1024,
                  "pieces the pipeline cuts the data into (need not divide it)");
  options.add_int("streams", &stream_count, 1, 64, "streams the chunks are dealt to, round robin");
  options.add_int("repeats", &repeats, 1, 1000,
                  "timed repeats after one warm-up (the median is reported)");
  cs::add_common_options(options, &common);
  cs::parse_or_exit(options, argc, argv);

  // Every size is checked before the GPU is touched, except what only the device can say.
  const std::string mib_flag = "--mib " + std::to_string(mib);
  Buffers b;
  b.bytes = static_cast<std::size_t>(mib) << 20;
  b.elements = b.bytes / sizeof(std::uint32_t);  // >= 262144: always at least one per chunk
  require_fits_in_host_memory(4 * b.bytes, mib_flag);

  const cudaDeviceProp prop = cs::select_device(common.device);
  cs::require_fits_on_device(2 * b.bytes, mib_flag);

  const bool measure = !common.no_timing;
  std::string skip_reason;
  if (common.no_timing) {
    skip_reason = "--no-timing";
  } else if (mib < bars::min_timed_mib) {
    skip_reason =
        "--mib below " + std::to_string(bars::min_timed_mib) + " is too small to time reliably";
  }
  const std::string timing_text = measure ? std::to_string(repeats) + " repeats after " +
                                                std::to_string(kWarmup) + " warm-up, medians shown"
                                          : std::string("off (--no-timing)");
  std::printf("Data: %s (%zu 4-byte words); timing: %s\n",
              cs::format_bytes(static_cast<double>(b.bytes)).c_str(), b.elements,
              timing_text.c_str());

  run_seed(b.elements);

  CS_CHECK(cudaMallocHost(&b.host_in, b.bytes));
  CS_CHECK(cudaMallocHost(&b.host_out, b.bytes));
  CS_CHECK(cudaMalloc(&b.dev_in, b.bytes));
  CS_CHECK(cudaMalloc(&b.dev_out, b.bytes));
  CS_CHECK(cudaMemset(b.dev_out, 0, b.bytes));
  b.pageable.resize(b.elements);
  for (std::size_t i = 0; i < b.elements; ++i) b.host_in[i] = b.pageable[i] = input_word(i);

  const PinnedRates pinned = compare_pageable_pinned(b, repeats, skip_reason, measure);
  register_existing_buffer(b, pinned, repeats, skip_reason, measure);
  run_pipeline(b, prop, chunk_count, stream_count, repeats, pinned, common, skip_reason, measure);

  CS_CHECK(cudaFreeHost(b.host_in));
  CS_CHECK(cudaFreeHost(b.host_out));
  CS_CHECK(cudaFree(b.dev_in));
  CS_CHECK(cudaFree(b.dev_out));
  return cs::finish();
}
