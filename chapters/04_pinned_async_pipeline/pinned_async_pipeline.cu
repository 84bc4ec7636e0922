// Chapter 04: pinned memory and the asynchronous copy/compute pipeline
//
// A copy and a kernel run at the same time only when they are in different streams and the copy
// is asynchronous, which needs pinned (page-locked) host memory. This program starts from the
// CUDA guide's two-stream example and turns it into a measured pipeline, one part per idea:
//   seed      the guide's example as written: cudaMallocHost, per stream a cudaMemcpyAsync in,
//             MyKernel<<<100, 512, 0, stream[i]>>>, a cudaMemcpyAsync back, cudaStreamDestroy
//   pinned    pageable vs pinned memory: cudaMemcpy bandwidth, and the host time inside one
//             cudaMemcpyAsync (the whole copy from pageable memory, microseconds from pinned)
//   register  cudaHostRegister pins a buffer you already have: it copies at the pinned rate
//   pipeline  S streams x C chunks, each chunk copied in, processed and copied out in its
//             stream: serial time, overlapped time, the bound from the measured stages; issue
//             order depth-first vs breadth-first on the timeline
//   chunks    overlapped time against chunk count (1 to 1024): fill and drain against the fixed
//             cost of each operation; the best chunk count
// The measurement machinery (stage timing, calibration, the bound model, the SVG curve) is in
// pinned_async_pipeline_lab.cuh, which a reader may skip.
//
// Build and run
//   cmake --preset default && cmake --build --preset default
//   build/bin/04_pinned_async_pipeline                         # every part
//   build/bin/04_pinned_async_pipeline --part chunks --chunks-svg chunks.svg
//   build/bin/04_pinned_async_pipeline --help                  # the flags and the parts
// Without CMake, from the repository's root:
//   nvcc -std=c++17 -Icommon/include chapters/04_pinned_async_pipeline/pinned_async_pipeline.cu
//        common/src/*.cpp -o 04_pinned_async_pipeline       (one line)
//
// What to expect
//   A heading per part, its measurements with units, and a CHECK line per property (the
//   measured ratio beside its bar); three ASCII timelines (H = H2D, K = kernel, D = D2H) and a
//   table of time against chunk count; "All N checks passed". Exit status 0; 1 if a check
//   fails; 2 for a bad command line; 77 (with a SKIP: line) where there is no CUDA device.

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "cuda_streams.hpp"
#include "pinned_async_pipeline_lab.cuh"

namespace {

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

// The pipeline's kernel: `iterations` dependent multiply-adds per element. Its time grows with
// `iterations` while its memory traffic stays one read and one write, so it does not compete
// with the copies for bandwidth.
__global__ void scramble(std::uint32_t* output, const std::uint32_t* input, std::size_t count,
                         int iterations, std::uint32_t multiplier, std::uint32_t increment) {
  const std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= count) return;
  std::uint32_t x = input[i];
  for (int k = 0; k < iterations; ++k) x = x * multiplier + increment;
  output[i] = x;
}

constexpr int kBlock = 256;
unsigned blocks_for(std::size_t count) {
  return static_cast<unsigned>((count + kBlock - 1) / kBlock);
}

// The pipeline's kernel on elements [at, at + n), for the measurements in the lab header.
lab::Launch scramble_launcher(const lab::Buffers& b) {
  return [&b](std::size_t at, std::size_t n, int iterations, cudaStream_t stream) {
    scramble<<<blocks_for(n), kBlock, 0, stream>>>(b.dev_out + at, b.dev_in + at, n, iterations,
                                                   lab::kMultiplier, lab::kIncrement);
    CS_CHECK_LAUNCH();
  };
}

// What every part needs from the command line and the environment.
struct Run {
  int chunks = 32, streams = 4, repeats = 5;
  std::string chunks_svg;
  cs::CommonOptions common;
  std::string skip;         // why every timed check is skipped here ("" when they run)
  std::string calls_block;  // why an asynchronous copy cannot return before its copy is done
  std::string no_overlap;   // why streams issued from this thread cannot overlap as they should
  bool measure() const { return !common.no_timing; }
};

// One copy, four ways to time it: plain cudaMemcpy (its bandwidth), then one cudaMemcpyAsync into
// an idle stream, with a host clock around the call and events around the copy.
struct Copy {
  const char* name;
  void* dst;
  const void* src;
  cudaMemcpyKind kind;
  double gbps = 0, call_ms = 0, copy_ms = 0;
};
void measure_copy(Copy& copy, std::size_t bytes, int repeats) {
  copy.gbps = lab::gb_per_s(bytes, cs::time_on_stream_ms(nullptr, 1, repeats, [&] {
                                     CS_CHECK(cudaMemcpy(copy.dst, copy.src, bytes, copy.kind));
                                   }).median);
  cudaStream_t stream;
  cudaEvent_t start, stop;
  CS_CHECK(cudaStreamCreate(&stream));
  CS_CHECK(cudaEventCreate(&start));
  CS_CHECK(cudaEventCreate(&stop));
  std::vector<double> calls, copies;
  for (int i = -1; i < repeats; ++i) {  // one warm-up
    CS_CHECK(cudaEventRecord(start, stream));
    const double before = cs::host_now_ms();
    CS_CHECK(cudaMemcpyAsync(copy.dst, copy.src, bytes, copy.kind, stream));
    const double after = cs::host_now_ms();
    CS_CHECK(cudaEventRecord(stop, stream));
    CS_CHECK(cudaEventSynchronize(stop));
    float ms = 0;
    CS_CHECK(cudaEventElapsedTime(&ms, start, stop));
    if (i >= 0) calls.push_back(after - before), copies.push_back(ms);
  }
  copy.call_ms = cs::median(calls);
  copy.copy_ms = cs::median(copies);
  std::printf("    %-16s %8.1f GB/s   %11.3f ms   %11.3f ms   %8.3f\n", copy.name, copy.gbps,
              copy.call_ms, copy.copy_ms, lab::ratio(copy.call_ms, copy.copy_ms));
  CS_CHECK(cudaEventDestroy(start));
  CS_CHECK(cudaEventDestroy(stop));
  CS_CHECK(cudaStreamDestroy(stream));
}
const char* kCopyHeader =
    "  copy             cudaMemcpy      one cudaMemcpyAsync: inside the call  the copy  "
    "call/copy\n";

void part_seed(std::size_t total_elements) {
  // The guide uses `size` both as an element offset (hostPtr + i * size) and as a byte count
  // (cudaMallocHost(&hostPtr, 2 * size)). Read consistently, `size` is the number of floats each
  // stream handles, and every byte count is size * sizeof(float).
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
  for (std::size_t j = 0; j < want.size(); ++j) want[j] = 2.0f * (j % 1024) + 1.0f;
  cs::verify("seed_two_streams", hostPtr, want.data(), want.size());
  std::printf(
      "  Each stream's copy in, kernel and copy back run in order; the two streams are\n"
      "  independent, so stream 1's copy in can overlap stream 0's kernel.\n");
  CS_CHECK(cudaFreeHost(hostPtr));
  CS_CHECK(cudaFree(inputDevPtr));
  CS_CHECK(cudaFree(outputDevPtr));
}

void part_pinned(lab::Buffers& b, const Run& run) {
  // Correctness first: pageable -> device -> pinned gives back the same words.
  CS_CHECK(cudaMemcpy(b.dev_in, b.pageable.data(), b.bytes, cudaMemcpyHostToDevice));
  std::fill(b.host_out, b.host_out + b.elements, 0u);
  CS_CHECK(cudaMemcpy(b.host_out, b.dev_in, b.bytes, cudaMemcpyDeviceToHost));
  cs::verify("pageable_round_trip", b.host_out, b.pageable.data(), b.elements);

  Copy pageable[2] = {{"pageable H2D", b.dev_in, b.pageable.data(), cudaMemcpyHostToDevice},
                      {"pageable D2H", b.pageable.data(), b.dev_in, cudaMemcpyDeviceToHost}};
  Copy pinned[2] = {{"pinned H2D", b.dev_in, b.host_in, cudaMemcpyHostToDevice},
                    {"pinned D2H", b.host_out, b.dev_in, cudaMemcpyDeviceToHost}};
  if (run.measure()) {
    std::printf("%s", kCopyHeader);
    for (Copy* copy : {&pageable[0], &pageable[1], &pinned[0], &pinned[1]})
      measure_copy(*copy, b.bytes, run.repeats);
  }
  const char* dir[] = {"h2d", "d2h"};
  // Pageable copies go through a staging copy on the CPU, then the same DMA as pinned memory.
  constexpr double kPinnedOverPageable = 1.10;
  for (int i = 0; i < 2; ++i) {
    cs::check_or_skip(run.skip, cs::format("pinned_vs_pageable_%s", dir[i]),
                      lab::ratio(pinned[i].gbps, pageable[i].gbps), cs::Compare::at_least,
                      kPinnedOverPageable, "x", "pinned / pageable cudaMemcpy bandwidth");
  }
  std::printf(
      "  Pageable memory can be paged out, so the DMA engine cannot read it directly: the\n"
      "  driver first copies it, piece by piece, into a pinned staging buffer.\n");
  // From pageable memory the call holds the host for most of the copy (it stages the data)...
  constexpr double kPageableCallShare = 0.50;
  for (int i = 0; i < 2; ++i) {
    cs::check_or_skip(run.skip, cs::format("pageable_async_call_blocks_%s", dir[i]),
                      lab::ratio(pageable[i].call_ms, pageable[i].copy_ms), cs::Compare::at_least,
                      kPageableCallShare, "x", "host time inside the call / the copy's time");
  }
  // ...from pinned memory it only queues the DMA: a small share of the pageable call's time.
  constexpr double kPinnedCallVsPageable = 0.10;
  for (int i = 0; i < 2; ++i) {
    cs::check_or_skip(cs::first_reason({run.skip, run.calls_block}),
                      cs::format("pinned_async_call_returns_%s", dir[i]),
                      lab::ratio(pinned[i].call_ms, pageable[i].call_ms), cs::Compare::at_most,
                      kPinnedCallVsPageable, "x", "pinned call time / pageable call time");
  }
  std::printf(
      "  From pageable memory cudaMemcpyAsync is asynchronous in name only: the host is busy\n"
      "  staging the data (H2D) or waits for it to arrive (D2H). From pinned memory the call\n"
      "  only queues the DMA and returns, and the host is free while the copy runs.\n");
  if (!run.calls_block.empty()) {
    std::printf(
        "  Under CUDA_LAUNCH_BLOCKING=1 the pinned call waits for its copy too (call/copy near 1\n"
        "  above): the debugging setting takes away what pinned memory gives.\n");
  }
}

void part_register(lab::Buffers& b, const Run& run) {
  Copy before{"vector, before", b.dev_in, b.pageable.data(), cudaMemcpyHostToDevice};
  if (run.measure()) std::printf("%s", kCopyHeader), measure_copy(before, b.bytes, run.repeats);
  cudaPointerAttributes was{}, is{};
  CS_CHECK(cudaPointerGetAttributes(&was, b.pageable.data()));
  CS_CHECK(cudaHostRegister(b.pageable.data(), b.bytes, cudaHostRegisterDefault));
  CS_CHECK(cudaPointerGetAttributes(&is, b.pageable.data()));
  cs::check_that("registered_pointer_is_pinned",
                 was.type == cudaMemoryTypeUnregistered && is.type == cudaMemoryTypeHost,
                 cs::format("cudaPointerGetAttributes type: %s before, %s after",
                            was.type == cudaMemoryTypeUnregistered ? "unregistered" : "other",
                            is.type == cudaMemoryTypeHost ? "host (pinned)" : "other"));
  // Correctness: device -> registered vector gives back the input words.
  CS_CHECK(cudaMemcpy(b.dev_in, b.host_in, b.bytes, cudaMemcpyHostToDevice));
  std::fill(b.pageable.begin(), b.pageable.end(), 0u);
  CS_CHECK(cudaMemcpy(b.pageable.data(), b.dev_in, b.bytes, cudaMemcpyDeviceToHost));
  cs::verify("registered_round_trip", b.pageable.data(), b.host_in, b.elements);

  Copy registered[2] = {{"registered H2D", b.dev_in, b.pageable.data(), cudaMemcpyHostToDevice},
                        {"registered D2H", b.pageable.data(), b.dev_in, cudaMemcpyDeviceToHost}};
  Copy pinned[2] = {{"cudaMallocHost H2D", b.dev_in, b.host_in, cudaMemcpyHostToDevice},
                    {"cudaMallocHost D2H", b.host_out, b.dev_in, cudaMemcpyDeviceToHost}};
  if (run.measure()) {
    for (Copy* copy : {&registered[0], &registered[1], &pinned[0], &pinned[1]})
      measure_copy(*copy, b.bytes, run.repeats);
  }
  CS_CHECK(cudaHostUnregister(b.pageable.data()));

  // A registered buffer is pinned memory: it copies at the rate of a cudaMallocHost buffer.
  constexpr double kRegisteredVsPinned = 0.90, kH200RegisteredVsPinned = 0.95;
  const char* dir[] = {"h2d", "d2h"};
  for (int i = 0; i < 2; ++i) {
    cs::check_or_skip(run.skip, cs::format("registered_vs_pinned_%s", dir[i]),
                      lab::ratio(registered[i].gbps, pinned[i].gbps), cs::Compare::at_least,
                      kRegisteredVsPinned, "x",
                      "registered / cudaMallocHost bandwidth; any GPU; " +
                          lab::h200_target(">=", kH200RegisteredVsPinned));
  }
  // Once registered, the call only queues the DMA, as from cudaMallocHost memory.
  constexpr double kCallAfterVsBefore = 0.10;
  cs::check_or_skip(cs::first_reason({run.skip, run.calls_block}),
                    "registered_async_call_returns_h2d",
                    lab::ratio(registered[0].call_ms, before.call_ms), cs::Compare::at_most,
                    kCallAfterVsBefore, "x", "call time after / before cudaHostRegister");
  std::printf(
      "  cudaHostRegister page-locks the vector's pages and maps them for the GPU: from then\n"
      "  on the driver treats them like cudaMallocHost memory. Registering costs time (every\n"
      "  page is locked), so register once and reuse; cudaHostUnregister before freeing.\n");
}

// The kernel is sized to 0.9 of one chunk's copy: the copy engines pace the pipeline, and the
// kernel's own jitter does not.
constexpr double kKernelShare = 0.9;
enum class Order { serial, depth_first, breadth_first };

void part_pipeline(lab::Buffers& b, const cudaDeviceProp& prop, const Run& run) {
  const int C = run.chunks, S = run.streams, engines = prop.asyncEngineCount;
  lab::print_shape(b, C, S);
  std::vector<cudaStream_t> streams(S);
  for (cudaStream_t& stream : streams) CS_CHECK(cudaStreamCreate(&stream));
  lab::Model m;  // stage times, the kernel's size, the fixed cost of one operation
  if (run.measure()) {
    m = lab::measure_model(b, C, engines, run.repeats, kKernelShare, streams[0],
                           scramble_launcher(b));
    lab::print_model(m, b, C, engines);
  }
  // The pipeline. Chunk c goes to stream c % S (every chunk to stream 0 in the serial run); in
  // its stream its H2D, kernel and D2H run in order, and different streams overlap. Depth-first
  // issues chunk by chunk; breadth-first takes a wave of one chunk per stream and issues its
  // H2Ds, then its kernels, then its D2Hs.
  auto issue = [&](int i, cs::Timeline* timeline) {
    const Order order = Order(i);
    const int wave = order == Order::breadth_first ? S : 1;
    auto row = [&](int c) { return order == Order::serial ? 0 : c % S; };
    auto on = [&](int c) { return streams[row(c)]; };
    auto span = [&](int c, const char* kind) {  // drawn on the timeline, when there is one
      return timeline ? timeline->span(cs::format("stream %d", row(c)), kind, on(c))
                      : cs::TimelineSpan();
    };
    auto at = [&](int c) { return b.begin(c, C); };
    auto n = [&](int c) { return b.begin(c + 1, C) - b.begin(c, C); };
    for (int first = 0; first < C; first += wave) {
      const int last = std::min(C, first + wave);
      for (int c = first; c < last; ++c) {
        auto drawn = span(c, "H2D");
        CS_CHECK(cudaMemcpyAsync(b.dev_in + at(c), b.host_in + at(c), n(c) * sizeof(std::uint32_t),
                                 cudaMemcpyHostToDevice, on(c)));
      }
      for (int c = first; c < last; ++c) {
        auto drawn = span(c, "kernel");
        scramble<<<blocks_for(n(c)), kBlock, 0, on(c)>>>(b.dev_out + at(c), b.dev_in + at(c), n(c),
                                                         m.iterations, lab::kMultiplier,
                                                         lab::kIncrement);
        CS_CHECK_LAUNCH();
      }
      for (int c = first; c < last; ++c) {
        auto drawn = span(c, "D2H");
        CS_CHECK(cudaMemcpyAsync(b.host_out + at(c), b.dev_out + at(c),
                                 n(c) * sizeof(std::uint32_t), cudaMemcpyDeviceToHost, on(c)));
      }
    }
  };
  const char* names[] = {"serial", "depth_first", "breadth_first"};
  // Each order timed, then run once more on a timeline and checked element by element.
  const std::vector<std::uint32_t> want = lab::expected_output(b.elements, m.iterations);
  double ms[3] = {};
  cs::TimelineData drawn[3];
  lab::run_orders(
      b, streams, run.repeats, run.measure(), issue,
      [&](int i) {
        cs::verify(std::string("pipeline_") + names[i], b.host_out, want.data(), b.elements);
      },
      ms, drawn);
  const lab::Bound bound = lab::pipeline_bound(m.stages, C, S, engines, ms[0], m.cost);
  if (run.measure())
    lab::print_bound(bound, C, S, engines), lab::print_orders(names, ms, bound, drawn);
  for (int i = 0; i < 3; ++i) cs::publish_timeline(drawn[i], run.common, lab::kOrderTitles[i]);
  // The overlapped run within this factor of the bound (other GPUs differ; the H200's target is
  // a median over runs), and faster than serial: three stages at once allow nearly 3x, one copy
  // engine nearly 2x.
  constexpr double kOverlapVsBound = 1.25, kH200OverlapVsBound = 1.03, kH200Speedup = 2.5;
  const double speedup_bar = engines >= 2 ? 1.8 : 1.5;
  const std::string bound_skip = cs::first_reason({run.skip, run.no_overlap});
  const std::string speedup_skip =
      cs::first_reason({bound_skip, lab::speedup_limits(engines, S, C)});
  for (int i = 1; i < 3; ++i) {
    cs::check_or_skip(bound_skip, std::string("bound_") + names[i], lab::ratio(ms[i], bound.ms()),
                      cs::Compare::at_most, kOverlapVsBound, "x",
                      "overlapped / bound; any GPU; " +
                          lab::h200_target("<=", kH200OverlapVsBound) + " (median)");
    cs::check_or_skip(speedup_skip, std::string("speedup_") + names[i], lab::ratio(ms[0], ms[i]),
                      cs::Compare::at_least, speedup_bar, "x",
                      cs::format("serial / overlapped; asyncEngineCount %d; ", engines) +
                          lab::h200_target(">=", kH200Speedup));
  }
  std::printf(
      "  Several streams keep the copy engines and the SMs busy on different chunks at once. Both\n"
      "  orders give each stream the same work in the same order, so they overlap alike.\n");
  if (!run.no_overlap.empty() && run.measure()) {
    std::printf(
        "  Here, %s:\n  depth-first takes %.2fx and breadth-first %.2fx of the serial time.\n",
        run.no_overlap.c_str(), lab::ratio(ms[1], ms[0]), lab::ratio(ms[2], ms[0]));
  }
  for (cudaStream_t stream : streams) CS_CHECK(cudaStreamDestroy(stream));
}

void part_chunks(lab::Buffers& b, const cudaDeviceProp& prop, const Run& run) {
  const int S = run.streams, engines = prop.asyncEngineCount;
  std::vector<cudaStream_t> streams(S);
  for (cudaStream_t& stream : streams) CS_CHECK(cudaStreamCreate(&stream));
  // The kernel is sized once, at --chunks: every chunk count below does the same work.
  lab::Model m;
  if (run.measure())
    m = lab::measure_model(b, run.chunks, engines, run.repeats, kKernelShare, streams[0],
                           scramble_launcher(b));
  // C copies in one stream against one plain cudaMemcpy of all the bytes plus C fixed costs (or
  // the host's time to issue C calls, if longer): chunking costs nothing more than that.
  constexpr double kChunkedVsExpected = 0.85, kH200ChunkedVsExpected = 0.95;
  const double chunked_ms[2] = {m.stages.h2d_ms, m.stages.d2h_ms};
  for (int i = 0; i < 2; ++i) {
    cs::check_or_skip(
        run.skip, i == 0 ? "chunked_async_rate_h2d" : "chunked_async_rate_d2h",
        lab::ratio(lab::expected_chunked_copy_ms(m.plain_ms[i], run.chunks, m.cost), chunked_ms[i]),
        cs::Compare::at_least, kChunkedVsExpected, "x",
        "stage's rate / (plain cudaMemcpy + C fixed costs); any GPU; " +
            lab::h200_target(">=", kH200ChunkedVsExpected));
  }

  // The pipeline at C chunks, depth-first over the S streams (all in stream 0 for serial).
  auto issue = [&](int C, bool serial) {
    for (int c = 0; c < C; ++c) {
      cudaStream_t stream = streams[serial ? 0 : c % S];
      const std::size_t at = b.begin(c, C), n = b.begin(c + 1, C) - at;
      CS_CHECK(cudaMemcpyAsync(b.dev_in + at, b.host_in + at, n * sizeof(std::uint32_t),
                               cudaMemcpyHostToDevice, stream));
      scramble<<<blocks_for(n), kBlock, 0, stream>>>(b.dev_out + at, b.dev_in + at, n, m.iterations,
                                                     lab::kMultiplier, lab::kIncrement);
      CS_CHECK_LAUNCH();
      CS_CHECK(cudaMemcpyAsync(b.host_out + at, b.dev_out + at, n * sizeof(std::uint32_t),
                               cudaMemcpyDeviceToHost, stream));
    }
  };
  const lab::Sweep sweep = lab::sweep_chunk_counts(b, streams, engines, std::min(run.repeats, 3),
                                                   run.measure(), m, scramble_launcher(b), issue);
  cs::check_that("chunks_results", sweep.wrong == 0,
                 cs::format("%d of %zu chunk counts differ from the CPU reference", sweep.wrong,
                            sweep.counts.size()));
  const auto& over = sweep.over_bound;
  const double worst = over.empty() ? 0 : *std::max_element(over.begin(), over.end());
  if (run.measure()) {
    std::printf("  best: %d chunks, %.3f ms; time / bound: median %.2fx, worst %.2fx\n",
                sweep.counts[sweep.best], sweep.overlapped_ms[sweep.best], cs::median(over), worst);
  }
  // The bound includes the fixed cost of every operation, so it holds at every chunk count.
  constexpr double kOverlapVsBound = 1.25, kH200OverlapVsBound = 1.03;
  const std::string bound_skip = cs::first_reason({run.skip, run.no_overlap});
  cs::check_or_skip(bound_skip, "chunks_bound_worst", worst, cs::Compare::at_most, kOverlapVsBound,
                    "x",
                    "the worst chunk count's overlapped / bound; any GPU; median " +
                        lab::h200_target("<=", kH200OverlapVsBound));
  // Chunks are what let the stages overlap: the best count beats one chunk by the speedup bar.
  const double speedup_bar = engines >= 2 ? 1.8 : 1.5;
  cs::check_or_skip(
      cs::first_reason({bound_skip, lab::speedup_limits(engines, S, 1024)}), "chunks_best_vs_one",
      over.empty() ? 0 : lab::ratio(sweep.overlapped_ms[0], sweep.overlapped_ms[sweep.best]),
      cs::Compare::at_least, speedup_bar, "x", "one chunk's time / the best chunk count's");
  std::printf(
      "  Few chunks: filling and draining (one chunk's other stages) weigh on the run. Many:\n"
      "  every call and operation has a fixed cost that small chunks do not hide.\n");
  if (!run.chunks_svg.empty() && run.measure()) lab::write_sweep_svg(run.chunks_svg, b, S, sweep);
  for (cudaStream_t stream : streams) CS_CHECK(cudaStreamDestroy(stream));
}

}  // namespace

int main(int argc, char** argv) {
  Run run;
  int mib = 256;
  cs::Options options("04_pinned_async_pipeline",
                      "Pageable vs pinned copies, cudaHostRegister, and a copy/compute pipeline "
                      "over S streams and C chunks");
  cs::Parts parts(options, {{"seed", "the CUDA guide's two-stream example"},
                            {"pinned", "pageable vs pinned host memory"},
                            {"register", "cudaHostRegister pins a buffer you already have"},
                            {"pipeline", "S streams x C chunks against the bound"},
                            {"chunks", "overlapped time against chunk count"}});
  options.add_int("mib", &mib, 1, 65536,
                  "data size in MiB: the seed's two halves, the copies and the pipeline's buffer");
  options.add_int("chunks", &run.chunks, 1, 1024,
                  "pieces the pipeline cuts the data into (need not divide it)");
  options.add_int("streams", &run.streams, 1, 64, "streams the chunks are dealt to, round robin");
  options.add_int("repeats", &run.repeats, 1, 1000,
                  "timed repeats after one warm-up (the median is reported)");
  options.add_string("chunks-svg", &run.chunks_svg, "FILE",
                     "write part chunks' curve (time against chunk count) as an SVG picture");
  cs::add_common_options(options, &run.common);
  cs::parse_or_exit(options, argc, argv);
  const cs::LaunchEnvironment env = cs::launch_environment();  // before the first CUDA call

  // Every size is checked before the GPU is touched, except what only the device can say.
  const std::string mib_flag = cs::format("--mib %d", mib);
  lab::Buffers b;
  b.bytes = static_cast<std::size_t>(mib) << 20;
  b.elements = b.bytes / sizeof(std::uint32_t);  // >= 262144: always at least one per chunk
  lab::require_fits_in_host_memory(4 * b.bytes, mib_flag);
  const cudaDeviceProp prop = cs::select_device(run.common.device);
  cs::print_launch_environment(env);
  cs::require_fits_on_device(2 * b.bytes, mib_flag);

  // Below 32 MiB the copies are too short to time reliably.
  constexpr int kMinTimedMib = 32;
  run.skip = cs::first_reason(
      {run.common.timing_skip_reason(),
       mib < kMinTimedMib ? cs::format("--mib below %d is too small to time reliably", kMinTimedMib)
                          : ""});
  run.calls_block =
      env.launch_blocking ? "CUDA_LAUNCH_BLOCKING=1: every cudaMemcpyAsync waits for its copy" : "";
  run.no_overlap = lab::no_overlap_reason(env);
  std::printf("Data: %s (%zu 4-byte words); timing: %s\n",
              cs::format_bytes(static_cast<double>(b.bytes)).c_str(), b.elements,
              run.measure()
                  ? cs::format("%d repeats after 1 warm-up, medians shown", run.repeats).c_str()
                  : "off (--no-timing)");

  if (parts.begin("seed")) part_seed(b.elements);
  if (parts.chosen() == "seed") return cs::finish();
  CS_CHECK(cudaMallocHost(&b.host_in, b.bytes));
  CS_CHECK(cudaMallocHost(&b.host_out, b.bytes));
  CS_CHECK(cudaMalloc(&b.dev_in, b.bytes));
  CS_CHECK(cudaMalloc(&b.dev_out, b.bytes));
  CS_CHECK(cudaMemset(b.dev_out, 0, b.bytes));
  b.pageable.resize(b.elements);
  for (std::size_t i = 0; i < b.elements; ++i) b.host_in[i] = b.pageable[i] = lab::input_word(i);

  if (parts.begin("pinned")) part_pinned(b, run);
  if (parts.begin("register")) part_register(b, run);
  if (parts.begin("pipeline")) part_pipeline(b, prop, run);
  if (parts.begin("chunks")) part_chunks(b, prop, run);

  CS_CHECK(cudaFreeHost(b.host_in));
  CS_CHECK(cudaFreeHost(b.host_out));
  CS_CHECK(cudaFree(b.dev_in));
  CS_CHECK(cudaFree(b.dev_out));
  return cs::finish();
}
