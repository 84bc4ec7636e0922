// Chapter 04: pinned memory and the asynchronous copy/compute pipeline
//
// A copy and a kernel run at the same time only when they are in different streams and the copy
// is asynchronous, which needs pinned (page-locked) host memory. The program starts from the CUDA
// guide's two-stream example (part seed) and turns it into a measured pipeline: pageable vs
// pinned copies (pinned), cudaHostRegister (register), S streams x C chunks against a bound from
// the measured stages (pipeline), and the time against the chunk count (chunks). Parts pipeline
// and chunks share issue(), the pipeline's loop. A reader may skip pinned_async_pipeline_lab.cuh:
// the flags, buffers, bound and sweep, and the measurements the bound is computed from (stage
// timing, calibration, fixed costs).
//
// Build and run (the lesson, README.md, has the expected output)
//   cmake --preset default && cmake --build --preset default
// clang-format off
//   nvcc -std=c++17 -arch=native -Icommon/include chapters/04_pinned_async_pipeline/pinned_async_pipeline.cu common/src/*.cpp -o 04_pinned_async_pipeline
// clang-format on
//   build/bin/04_pinned_async_pipeline [--part seed|pinned|register|pipeline|chunks] [--help]
// It prints a heading per part, a line of figures per measurement, three ASCII timelines and a
// CHECK line per property. Exit status 0; 1 if a check fails; 2 for a bad command line; 77 (with a
// SKIP: line) where there is no CUDA device.

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "cuda_streams.hpp"
#include "pinned_async_pipeline_lab.cuh"

// The seed's MyKernel (the guide does not show its body): exact in floating point for the small
// integers it gets. <<<100, 512>>> is far fewer threads than elements: each strides the array.
__global__ void MyKernel(float* output, const float* input, std::size_t size) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < size;
       i += stride)
    output[i] = 2.0f * input[i] + 1.0f;
}

// Holds its stream for `ns` nanoseconds (lab::measure_op_costs times copies queued behind it).
__global__ void hold_stream(unsigned long long ns) {
  const unsigned long long start = cs::globaltimer_ns();
  while (cs::globaltimer_ns() - start < ns) continue;
}

// The pipeline's kernel: `iterations` dependent multiply-adds per element; its time grows with
// `iterations`, its memory traffic does not (it does not compete with the copies for bandwidth).
// With `multiplier` and `increment` as constants the compiler would fold four steps into one.
__global__ void scramble(std::uint32_t* output, const std::uint32_t* input, std::size_t count,
                         int iterations, std::uint32_t multiplier, std::uint32_t increment) {
  const std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= count) return;
  std::uint32_t x = input[i];
  for (int k = 0; k < iterations; ++k) x = x * multiplier + increment;
  output[i] = x;
}

// One more pass over one copy of b.bytes (when timed), keeping the fastest figures in `best`:
// plain cudaMemcpy's bandwidth, then one cudaMemcpyAsync into an idle stream, with a host clock
// around the call and events around the copy. Every time here starts before its work is issued,
// so a busy host only adds to it.
void measure_copy(lab::Copy& best, void* dst, const void* src, cudaMemcpyKind kind,
                  const lab::Buffers& b, const lab::Run& run) {
  if (!run.measure()) return;
  auto plain = [&] { CS_CHECK(cudaMemcpy(dst, src, b.bytes, kind)); };
  const double plain_ms = cs::time_on_stream_ms(nullptr, 1, run.repeats, plain).min;
  best.gbps = std::max(best.gbps, cs::ratio(b.bytes, 1e6 * plain_ms));
  cudaStream_t stream;
  cudaEvent_t start, stop;
  CS_CHECK(cudaStreamCreate(&stream));
  CS_CHECK(cudaEventCreate(&start));
  CS_CHECK(cudaEventCreate(&stop));
  // core: pinned
  for (int i = -1; i < run.repeats; ++i) {  // one warm-up
    CS_CHECK(cudaEventRecord(start, stream));
    const double before = cs::host_now_ms();
    CS_CHECK(cudaMemcpyAsync(dst, src, b.bytes, kind, stream));
    const double after = cs::host_now_ms();
    CS_CHECK(cudaEventRecord(stop, stream));
    CS_CHECK(cudaEventSynchronize(stop));
    float ms = 0;
    CS_CHECK(cudaEventElapsedTime(&ms, start, stop));
    if (i >= 0) best.call_ms = std::min(best.call_ms, after - before);
    if (i >= 0) best.copy_ms = std::min<double>(best.copy_ms, ms);
  }
  // end core
  CS_CHECK(cudaEventDestroy(start));
  CS_CHECK(cudaEventDestroy(stop));
  CS_CHECK(cudaStreamDestroy(stream));
}

// One more pass over both directions between b.dev_in and host memory: [0] H2D from `from`, [1]
// D2H into `to`. With a `name`, prints the fastest figures so far.
void both_ways(lab::Copy (&best)[2], const char* name, std::uint32_t* from, std::uint32_t* to,
               const lab::Buffers& b, const lab::Run& run) {
  measure_copy(best[0], b.dev_in, from, cudaMemcpyHostToDevice, b, run);
  measure_copy(best[1], to, b.dev_in, cudaMemcpyDeviceToHost, b, run);
  for (int i = 0; i < 2 && name && run.measure(); ++i)
    lab::print_copy(std::string(name) + (i == 0 ? " H2D" : " D2H"), best[i]);
}

void part_seed(std::size_t total_elements) {
  // The guide's `size`, read consistently: the floats each stream handles (the lesson says why).
  const std::size_t size = total_elements / 2;
  float *inputDevPtr = nullptr, *outputDevPtr = nullptr;
  CS_CHECK(cudaMalloc(&inputDevPtr, 2 * size * sizeof(float)));
  CS_CHECK(cudaMalloc(&outputDevPtr, 2 * size * sizeof(float)));

  // core: seed
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
  // end core

  std::vector<float> want(2 * size);
  for (std::size_t j = 0; j < want.size(); ++j) want[j] = 2.0f * (j % 1024) + 1.0f;
  cs::verify("seed_two_streams", hostPtr, want.data(), want.size());
  CS_CHECK(cudaFreeHost(hostPtr));
  CS_CHECK(cudaFree(inputDevPtr));
  CS_CHECK(cudaFree(outputDevPtr));
}

void part_pinned(lab::Buffers& b, const lab::Run& run) {
  // Correctness first: pageable -> device -> pinned gives back the same words.
  CS_CHECK(cudaMemcpy(b.dev_in, b.pageable.data(), b.bytes, cudaMemcpyHostToDevice));
  std::fill(b.host_out, b.host_out + b.elements, 0u);
  CS_CHECK(cudaMemcpy(b.host_out, b.dev_in, b.bytes, cudaMemcpyDeviceToHost));
  cs::verify("pageable_round_trip", b.host_out, b.pageable.data(), b.elements);

  lab::Copy pageable[2], pinned[2];
  for (int pass = 1; pass <= lab::kPasses; ++pass) {  // the last pass prints
    const bool last = pass == lab::kPasses;
    both_ways(pageable, last ? "pageable" : nullptr, b.pageable.data(), b.pageable.data(), b, run);
    both_ways(pinned, last ? "pinned" : nullptr, b.host_in, b.host_out, b, run);
  }
  // Pageable copies go through a staging copy on the CPU, then the same DMA as pinned memory.
  lab::check_directions(run.skip, "pinned_vs_pageable", cs::Compare::at_least, 1.10,
                        "pinned / pageable cudaMemcpy bandwidth",
                        [&](int i) { return cs::ratio(pinned[i].gbps, pageable[i].gbps); });
  // From pageable memory the call holds the host for most of the copy (it stages the data)...
  lab::check_directions(run.skip, "pageable_async_call_blocks", cs::Compare::at_least, 0.50,
                        "host time inside the call / the copy's time",
                        [&](int i) { return cs::ratio(pageable[i].call_ms, pageable[i].copy_ms); });
  // ...from pinned memory it only queues the DMA: a small share of the pageable call's time.
  lab::check_directions(run.skip, "pinned_async_call_returns", cs::Compare::at_most, 0.10,
                        "pinned call time / pageable call time",
                        [&](int i) { return cs::ratio(pinned[i].call_ms, pageable[i].call_ms); });
}

void part_register(lab::Buffers& b, const lab::Run& run) {
  lab::Copy before;
  measure_copy(before, b.dev_in, b.pageable.data(), cudaMemcpyHostToDevice, b, run);
  if (run.measure()) lab::print_copy("vector, before", before);
  // core: register
  cudaPointerAttributes was{}, is{};
  CS_CHECK(cudaPointerGetAttributes(&was, b.pageable.data()));
  CS_CHECK(cudaHostRegister(b.pageable.data(), b.bytes, cudaHostRegisterDefault));
  CS_CHECK(cudaPointerGetAttributes(&is, b.pageable.data()));
  cs::check_that("registered_pointer_is_pinned",
                 was.type == cudaMemoryTypeUnregistered && is.type == cudaMemoryTypeHost,
                 cs::format("cudaPointerGetAttributes type: %s before, %s after",
                            was.type == cudaMemoryTypeUnregistered ? "unregistered" : "other",
                            is.type == cudaMemoryTypeHost ? "host (pinned)" : "other"));
  // end core
  // Correctness: device -> registered vector gives back the input words.
  CS_CHECK(cudaMemcpy(b.dev_in, b.host_in, b.bytes, cudaMemcpyHostToDevice));
  std::fill(b.pageable.begin(), b.pageable.end(), 0u);
  CS_CHECK(cudaMemcpy(b.pageable.data(), b.dev_in, b.bytes, cudaMemcpyDeviceToHost));
  cs::verify("registered_round_trip", b.pageable.data(), b.host_in, b.elements);

  lab::Copy registered[2], pinned[2];
  for (int pass = 1; pass <= lab::kPasses; ++pass) {  // the last pass prints
    const bool last = pass == lab::kPasses;
    both_ways(registered, last ? "registered" : nullptr, b.pageable.data(), b.pageable.data(), b,
              run);
    both_ways(pinned, last ? "cudaMallocHost" : nullptr, b.host_in, b.host_out, b, run);
  }
  CS_CHECK(cudaHostUnregister(b.pageable.data()));

  // A registered buffer is pinned memory: about a cudaMallocHost buffer's rate (0.97-1.00x on an
  // H100), far above pageable memory's (0.15-0.30x of pinned there, in part 2).
  lab::check_directions(run.skip, "registered_vs_pinned", cs::Compare::at_least, 0.80,
                        "registered / cudaMallocHost bandwidth: the pinned rate, not pageable's",
                        [&](int i) { return cs::ratio(registered[i].gbps, pinned[i].gbps); });
  // Once registered, the call only queues the DMA, as from cudaMallocHost memory.
  cs::check_or_skip(run.skip, "registered_async_call_returns_h2d",
                    cs::ratio(registered[0].call_ms, before.call_ms), cs::Compare::at_most, 0.10,
                    "x", "call time after / before cudaHostRegister");
}

// Zeroes every buffer the pipeline writes, so that only the next run's work can pass a check.
void clear_outputs(const lab::Buffers& b) {
  CS_CHECK(cudaMemset(b.dev_in, 0, b.bytes));
  CS_CHECK(cudaMemset(b.dev_out, 0, b.bytes));
  std::fill(b.host_out, b.host_out + b.elements, 0u);
  CS_CHECK(cudaDeviceSynchronize());
}

// The bars are the lesson's: time / floor at least 0.95x; time / bound within 1.4x, or 2.0x where
// the host's issue time is 75% of the bound or more: the host and the GPU then pace the run
// together, and the jitter of either adds to the time (1024 chunks on the H200: 1.26x and 1.27x,
// once 1.47x; without overlap it is 3.2x there).
constexpr double kFloorHolds = 0.95;
double overlap_bar(const lab::Bound& bound) {
  return bound.host_ms >= 0.75 * bound.ms() ? 2.0 : 1.4;
}

// The orders the pipeline's calls can be issued in, named as their checks are.
enum Order { kSerial, kDepthFirst, kBreadthFirst };
const char* const kOrderNames[] = {"serial", "depth_first", "breadth_first"};

// The pipeline at C chunks in `order`: serial (all in streams[0]), depth-first (chunk by chunk,
// chunk c in stream c % S) or breadth-first (per wave of one chunk per stream: its H2Ds, its
// kernels, its D2Hs). With `joins` (an event per stream), streams[0] forks the others before and
// joins them after, so that events on streams[0] time all of them. Drawn on `timeline`.
void issue(const lab::Buffers& b, const std::vector<cudaStream_t>& streams, int C, Order order,
           int iterations, const std::vector<cudaEvent_t>* joins = nullptr,
           cs::Timeline* timeline = nullptr) {
  const int S = static_cast<int>(streams.size()), wave = order == kBreadthFirst ? S : 1;
  auto row = [&](int c) { return order == kSerial ? 0 : c % S; };
  auto on = [&](int c) { return streams[row(c)]; };
  auto span = [&](int c, const char* kind) {
    return timeline ? timeline->span(cs::format("stream %d", row(c)), kind, on(c))
                    : cs::TimelineSpan();
  };
  auto at = [&](int c) { return b.begin(c, C); };
  auto n = [&](int c) { return b.size(c, C); };  // chunk c's words (4 bytes each)
  if (joins) CS_CHECK(cudaEventRecord((*joins)[0], streams[0]));
  for (int s = 1; joins && s < S; ++s) CS_CHECK(cudaStreamWaitEvent(streams[s], (*joins)[0], 0));
  // core: pipeline
  for (int first = 0; first < C; first += wave) {
    const int last = std::min(C, first + wave);
    for (int c = first; c < last; ++c) {
      auto drawn = span(c, "H2D");
      CS_CHECK(cudaMemcpyAsync(b.dev_in + at(c), b.host_in + at(c), 4 * n(c),
                               cudaMemcpyHostToDevice, on(c)));
    }
    for (int c = first; c < last; ++c) {
      auto drawn = span(c, "kernel");
      scramble<<<lab::blocks_for(n(c)), lab::kBlock, 0, on(c)>>>(
          b.dev_out + at(c), b.dev_in + at(c), n(c), iterations, lab::kMultiplier, lab::kIncrement);
      CS_CHECK_LAUNCH();
    }
    for (int c = first; c < last; ++c) {
      auto drawn = span(c, "D2H");
      CS_CHECK(cudaMemcpyAsync(b.host_out + at(c), b.dev_out + at(c), 4 * n(c),
                               cudaMemcpyDeviceToHost, on(c)));
    }
  }
  // end core
  for (int s = 1; joins && s < S; ++s) {
    CS_CHECK(cudaEventRecord((*joins)[s], streams[s]));
    CS_CHECK(cudaStreamWaitEvent(streams[0], (*joins)[s], 0));
  }
}

void part_pipeline(lab::Buffers& b, const lab::Run& run) {
  const int C = run.chunks, S = run.streams;
  std::printf("  %d chunk(s) of %s over %d stream(s)%s%s\n", C,
              cs::format_bytes(4.0 * b.begin(1, C)).c_str(), S,
              b.elements % C ? " (sizes differ by one element at most)" : "",
              S > C ? cs::format(" (only %d of the %d streams get a chunk)", C, S).c_str() : "");
  std::vector<cudaStream_t> streams(S);
  std::vector<cudaEvent_t> joins(S);
  for (cudaStream_t& stream : streams) CS_CHECK(cudaStreamCreate(&stream));
  lab::Model m = lab::measure_model(b, run, streams[0]);  // stages, kernel, fixed costs
  const std::vector<std::uint32_t> want = lab::expected_output(b.elements, m.iterations);
  for (cudaEvent_t& e : joins) CS_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  // Each order timed in every pass (the stages again from the second), then run once more on a
  // timeline and checked against the CPU's reference.
  double ms[3] = {HUGE_VAL, HUGE_VAL, HUGE_VAL};
  for (int pass = 1; pass <= lab::kPasses && run.measure(); ++pass) {
    if (pass > 1) m = lab::fastest(m, lab::measure_model(b, run, streams[0], m.iterations));
    for (int i = kSerial; i <= kBreadthFirst; ++i)
      ms[i] = std::min(ms[i], cs::time_on_stream_ms(streams[0], 1, run.repeats, [&] {
                                issue(b, streams, C, Order(i), m.iterations, &joins);
                              }).min);
  }
  for (int i = kSerial; i <= kBreadthFirst; ++i) {
    clear_outputs(b);
    cs::Timeline timeline;
    timeline.start(streams[0]);
    issue(b, streams, C, Order(i), m.iterations, &joins, &timeline);
    cs::publish_timeline(timeline.collect(), run.common, lab::kOrderTitles[i]);
    CS_CHECK(cudaDeviceSynchronize());
    cs::verify(std::string("pipeline_") + kOrderNames[i], b.host_out, want.data(), b.elements);
  }
  const lab::Bound bound(m, C, S, run.engines, ms[kSerial]);
  if (run.measure())
    std::printf(
        "  kernel calibrated once: %d multiply-adds per element, %.3f ms (copy %.3f)\n"
        "  bound: %.3f ms (paced by the %s); serial %.3f ms; depth-first takes %.2fx and "
        "breadth-first %.2fx of the serial time\n",
        m.iterations, m.alone[1] / C, m.copy_pace_ms, bound.ms(), bound.pacer(), ms[kSerial],
        cs::ratio(ms[kDepthFirst], ms[kSerial]), cs::ratio(ms[kBreadthFirst], ms[kSerial]));
  cs::check_or_skip(run.pipeline_holds_skip, "bound_holds",
                    cs::ratio(std::min(ms[kDepthFirst], ms[kBreadthFirst]), bound.floor_ms),
                    cs::Compare::at_least, kFloorHolds, "x",
                    cs::format("the faster order's time / the floor, %.3f ms", bound.floor_ms));
  const std::string host_share = cs::format("overlapped / bound; host issue %.0f%% of it",
                                            100 * cs::ratio(bound.host_ms, bound.ms()));
  const std::string engines = cs::format("serial / overlapped; asyncEngineCount %d", run.engines);
  for (int i = kDepthFirst; i <= kBreadthFirst; ++i) {
    const std::string order = kOrderNames[i];
    cs::check_or_skip(run.overlap_skip, "bound_" + order, cs::ratio(ms[i], bound.ms()),
                      cs::Compare::at_most, overlap_bar(bound), "x", host_share);
    cs::check_or_skip(cs::first_reason({run.overlap_skip, run.speedup_limits(C)}),
                      "speedup_" + order, cs::ratio(ms[kSerial], ms[i]), cs::Compare::at_least,
                      run.speedup_bar(), "x", engines);
  }
  for (cudaEvent_t e : joins) CS_CHECK(cudaEventDestroy(e));
  for (cudaStream_t stream : streams) CS_CHECK(cudaStreamDestroy(stream));
}

void part_chunks(lab::Buffers& b, const lab::Run& run) {
  const int S = run.streams, repeats = std::min(run.repeats, 3);
  std::vector<cudaStream_t> streams(S);
  std::vector<cudaEvent_t> joins(S);
  for (cudaStream_t& stream : streams) CS_CHECK(cudaStreamCreate(&stream));
  // The kernel is sized once, at --chunks: every chunk count below does the same work.
  lab::Model m = lab::measure_model(b, run, streams[0]);
  for (int pass = 2; pass <= lab::kPasses && run.measure(); ++pass)
    m = lab::fastest(m, lab::measure_model(b, run, streams[0], m.iterations));
  // C copies in one stream against one plain cudaMemcpy plus C fixed costs (or C calls' issue).
  lab::check_directions(run.skip, "chunked_async_rate", cs::Compare::at_least, 0.85,
                        "stage's rate / (plain cudaMemcpy + C fixed costs)", [&](int i) {
                          const double C = run.chunks, copies = m.plain_ms[i] + C * m.gpu_copy_ms;
                          return cs::ratio(std::max(C * m.host_copy_ms, copies), m.alone[2 * i]);
                        });
  // core: chunks
  // The same pipeline at 1, 2, 4, ... 1024 chunks: stages, serial and depth-first time, bound.
  for (cudaEvent_t& e : joins) CS_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  cudaStream_t pair[2];  // the copies of both directions at once: two streams created together
  for (cudaStream_t& stream : pair) CS_CHECK(cudaStreamCreate(&stream));
  const std::vector<std::uint32_t> want = lab::expected_output(b.elements, m.iterations);
  lab::Sweep sweep;  // a line per timed chunk count
  // The fastest time of `work` on streams[0]: one warm-up, then at most three timed runs.
  auto fastest_ms = [&](auto&& work) {
    return cs::time_on_stream_ms(streams[0], 1, repeats, work).min;
  };
  const int kCounts = lab::Sweep::kCounts;  // 1, 2, 4, ... 1024 chunks, each timed in every pass
  bool wrong[kCounts] = {};
  for (int pass = 1; pass <= lab::kPasses; ++pass)
    for (int i = 0, C = 1; i < kCounts; ++i, C *= 2) {
      if (run.measure()) {
        const lab::Model st =
            lab::measure_stages(m, b, C, pair[0], pair[1], run.engines, repeats, true);
        const double s = fastest_ms([&] { issue(b, streams, C, kSerial, m.iterations); });
        clear_outputs(b);  // what chunks_results checks is the depth-first runs' output alone
        const double t =
            fastest_ms([&] { issue(b, streams, C, kDepthFirst, m.iterations, &joins); });
        // end core
        sweep.keep(pass, i, st, s, t);
      } else {
        clear_outputs(b), issue(b, streams, C, kDepthFirst, m.iterations);
      }
      CS_CHECK(cudaDeviceSynchronize());
      wrong[i] |= !std::equal(b.host_out, b.host_out + b.elements, want.begin());
    }
  for (int i = 0, C = 1; i < kCounts && run.measure(); ++i, C *= 2) {
    // No issue time of the runs it bounds: a host that issued slowly must not raise its bound.
    const lab::Bound bound(sweep.stages[i], C, S, run.engines, sweep.serial[i]);
    sweep.add(C, sweep.serial[i], sweep.ms[i], bound, overlap_bar(bound));
  }
  for (cudaStream_t stream : pair) CS_CHECK(cudaStreamDestroy(stream));
  const int bad = static_cast<int>(std::count(wrong, wrong + kCounts, true));  // chunk counts
  cs::check_that("chunks_results", bad == 0,
                 cs::format("%d of %d chunk counts differ from the CPU reference", bad, kCounts));
  if (run.measure()) std::printf("  best: %d chunks, %.3f ms\n", sweep.best, sweep.best_ms);
  cs::check_or_skip(run.holds_skip, "chunks_bound_holds", sweep.lowest_over_floor,
                    cs::Compare::at_least, kFloorHolds, "x", "the lowest overlapped / floor");
  cs::check_or_skip(
      run.overlap_skip, "chunks_bound_worst", sweep.worst_over_bound, cs::Compare::at_most,
      sweep.worst_bar, "x",
      cs::format("overlapped / bound at %d chunks, nearest its bar; host issue %.0f%% of it",
                 sweep.worst_chunks, 100 * sweep.worst_host_share));
  cs::check_or_skip(cs::first_reason({run.overlap_skip, run.speedup_limits(1024)}),
                    "chunks_best_vs_one", cs::ratio(sweep.one_ms, sweep.best_ms),
                    cs::Compare::at_least, run.speedup_bar(), "x",
                    "one chunk's time / the best chunk count's");
  if (!run.chunks_svg.empty() && run.measure()) sweep.write_svg(run.chunks_svg);
  for (cudaEvent_t e : joins) CS_CHECK(cudaEventDestroy(e));
  for (cudaStream_t stream : streams) CS_CHECK(cudaStreamDestroy(stream));
}

int main(int argc, char** argv) {
  lab::Run run;  // the flags and why checks skip
  cs::Options options("04_pinned_async_pipeline",
                      "Pinned copies, cudaHostRegister, and a copy/compute pipeline in chunks");
  cs::Parts parts(options, {{"seed", "the CUDA guide's two-stream example"},
                            {"pinned", "pageable vs pinned host memory"},
                            {"register", "cudaHostRegister pins a buffer you already have"},
                            {"pipeline", "S streams x C chunks against the bound"},
                            {"chunks", "overlapped time against chunk count"}});
  run.add_flags(options);
  cs::parse_or_exit(options, argc, argv);
  const cs::LaunchEnvironment env = cs::launch_environment();  // before the first CUDA call

  // Every size is checked before the GPU is touched, except what only the device can say.
  lab::Buffers b(run.mib);  // refuses what host memory cannot hold
  const cudaDeviceProp prop = cs::select_device(run.common.device);
  cs::print_launch_environment(env);
  run.prepare(env, prop, b.bytes);  // what fits on the device, why checks skip

  if (parts.begin("seed")) part_seed(b.elements);
  if (parts.chosen() == "seed") return cs::finish();
  CS_CHECK(cudaMallocHost(&b.host_in, b.bytes));
  CS_CHECK(cudaMallocHost(&b.host_out, b.bytes));
  CS_CHECK(cudaMalloc(&b.dev_in, b.bytes));
  CS_CHECK(cudaMalloc(&b.dev_out, b.bytes));
  CS_CHECK(cudaMemset(b.dev_out, 0, b.bytes));
  b.pageable.resize(b.elements);  // the same input words in host_in (pinned) and pageable
  for (std::size_t i = 0; i < b.elements; ++i) b.host_in[i] = b.pageable[i] = lab::input_word(i);

  if (parts.begin("pinned")) part_pinned(b, run);
  if (parts.begin("register")) part_register(b, run);
  if (parts.begin("pipeline")) part_pipeline(b, run);
  if (parts.begin("chunks")) part_chunks(b, run);

  CS_CHECK(cudaFreeHost(b.host_in));
  CS_CHECK(cudaFreeHost(b.host_out));
  CS_CHECK(cudaFree(b.dev_in));
  CS_CHECK(cudaFree(b.dev_out));
  return cs::finish();
}
