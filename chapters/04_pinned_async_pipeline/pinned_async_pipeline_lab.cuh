// Chapter 04's run, which a reader may skip: flags and why checks skip, buffers and the CPU's
// reference, the bound's figures (lesson part 4), part chunks' figures and chart, calibration.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "cuda_streams.hpp"

__global__ void scramble(std::uint32_t* output, const std::uint32_t* input, std::size_t count,
                         int iterations, std::uint32_t multiplier, std::uint32_t increment);

namespace lab {

constexpr std::uint32_t kMultiplier = 1664525u, kIncrement = 1013904223u;  // x -> a * x + c
constexpr int kBlock = 256;

inline unsigned blocks_for(std::size_t count) {
  return static_cast<unsigned>((count + kBlock - 1) / kBlock);
}
inline std::uint32_t input_word(std::size_t i) {
  return static_cast<std::uint32_t>(i) * 2654435761u + 12345u;
}
// `iterations` steps of x -> a * x + c are again an affine map: one multiply-add per element.
inline std::vector<std::uint32_t> expected_output(std::size_t elements, int iterations) {
  std::uint32_t multiplier = 1, increment = 0;
  for (int k = 0; k < iterations; ++k)
    multiplier *= kMultiplier, increment = increment * kMultiplier + kIncrement;
  std::vector<std::uint32_t> want(elements);
  for (std::size_t i = 0; i < elements; ++i) want[i] = multiplier * input_word(i) + increment;
  return want;
}

// The flags, asyncEngineCount, why checks skip: timed ones (skip), overlap ones (overlap_skip).
struct Run {
  int mib = 256, chunks = 32, streams = 4, repeats = 5, engines = 0;
  cs::CommonOptions common;
  std::string chunks_svg, skip, overlap_skip;
  bool measure() const { return !common.no_timing; }
  double speedup_bar() const { return engines >= 2 ? 1.8 : 1.5; }  // serial / overlapped
  void add_flags(cs::Options& options) {
    options.add_int("mib", &mib, 1, 65536, "data size in MiB (the seed's, copies', pipeline's)");
    options.add_int("chunks", &chunks, 1, 1024, "pieces the pipeline cuts the data into");
    options.add_int("streams", &streams, 1, 64, "streams the chunks are dealt to, round robin");
    options.add_int("repeats", &repeats, 1, 100,
                    "timed runs after one warm-up, the fastest counting (chunk sweep: 3 at most)");
    options.add_output_file("chunks-svg", &chunks_svg, "part chunks' times as an SVG chart");
    cs::add_common_options(options, &common);
  }
  // Once the device is chosen: exits 2 when it cannot hold `bytes` twice; says why checks skip.
  void prepare(const cs::LaunchEnvironment& env, const cudaDeviceProp& prop, std::size_t bytes) {
    cs::require_fits_on_device(2 * bytes, cs::format("--mib %d", mib));
    engines = prop.asyncEngineCount;
    const char* small = mib < 32 ? "--mib below 32 is too small to time reliably" : "";
    skip = cs::first_reason({common.timing_skip_reason(), small});
    overlap_skip = cs::first_reason({skip, cs::no_overlap_reason(env)});
  }
  // Why the speedup over serial at C chunks cannot reach its bar.
  std::string speedup_limits(int C) const {
    if (engines == 0) return "asyncEngineCount 0: this device cannot overlap copies with kernels";
    return streams < 3 ? "needs --streams 3 or more" : C < 8 ? "needs --chunks 8 or more" : "";
  }
};

// The buffers the parts after the seed share. Chunk c of C: [begin(c, C), begin(c + 1, C)).
struct Buffers {
  std::size_t elements = 0, bytes = 0;
  // host_in and host_out are pinned (cudaMallocHost), dev_in and dev_out device memory
  std::uint32_t *host_in = nullptr, *host_out = nullptr, *dev_in = nullptr, *dev_out = nullptr;
  std::vector<std::uint32_t> pageable;  // ordinary memory holding the same input words
  std::size_t begin(int c, int chunks) const { return elements * c / chunks; }
  std::size_t size(int c, int chunks) const { return begin(c + 1, chunks) - begin(c, chunks); }
  // Exits 2 before the GPU is touched if two pinned buffers, a pageable one and the reference
  // would take over half of host memory.
  explicit Buffers(int mib) : bytes(static_cast<std::size_t>(mib) << 20) {
    elements = bytes / sizeof(std::uint32_t);
    cs::require_fits_in_host_memory(4.0 * bytes, cs::format("--mib %d", mib));
  }
};

// check_or_skip() of `<name>_h2d` with value(0), then of `<name>_d2h` with value(1), in "x".
template <class Value>
void check_directions(const std::string& skip, const std::string& name, cs::Compare compare,
                      double bar, const std::string& why, Value&& value) {
  for (int i = 0; i < 2; ++i)
    cs::check_or_skip(skip, name + (i == 0 ? "_h2d" : "_d2h"), value(i), compare, bar, "x", why);
}

// The orders the pipeline's calls can be issued in, named as their checks are, and their titles.
enum Order { kSerial, kDepthFirst, kBreadthFirst };
const char* const kOrderNames[] = {"serial", "depth_first", "breadth_first"};
const char* const kOrderTitles[] = {
    "Serial: every chunk in stream 0, nothing overlaps",
    "Depth-first: for each chunk, its H2D, kernel and D2H in its stream",
    "Breadth-first: for each wave of one chunk per stream, all H2Ds, all kernels, all D2Hs"};

// One copy's figures (part pinned): cudaMemcpy's bandwidth, cudaMemcpyAsync's call and copy times.
struct Copy {
  double gbps = 0, call_ms = 0, copy_ms = 0;
};

// time / bound at least 0.95x: below it disproves the bound (two timings of one schedule differ).
constexpr double kBoundHolds = 0.95;

// The least time of the pipeline at C chunks over S streams (lesson part 4): the same calls with
// less work take no longer. copies_ms: kernels of no work; kernels_ms: copies of one word but the
// first in and last out; streams_ms: each stream's chunks in turn; host_ms: the host's issue time.
struct Bound {
  double copies_ms = 0, kernels_ms = 0, streams_ms = 0, host_ms = 0;
  double ms() const { return std::max({copies_ms, kernels_ms, streams_ms}); }
  const char* pacer() const {
    return ms() == streams_ms ? "streams" : ms() == kernels_ms ? "kernels" : "copies";
  }
  // The bar of time / bound: 1.4, or 2.0 where the host's issue time is 75% of the bound or more:
  // the host and the GPU then pace the run together, and the jitter of either adds to the time.
  double bar() const { return host_ms >= 0.75 * ms() ? 2.0 : 1.4; }
  double host_share() const { return cs::ratio(host_ms, ms()); }
};

// Part chunks' figures and chart (--chunks-svg): the serial time, then per count the measured time
// with its bound over it (drawn again if shorter); the worst count comes nearest its bar.
struct Sweep {
  double lowest_over_bound = HUGE_VAL, worst_over_bound = 0, worst_bar = 1, worst_host_share = 0;
  double one_ms = 0, best_ms = 0;
  int best = 1, worst_chunks = 0;
  cs::TimelineData chart{{"serial"}, {}};
  void add(int chunks, double serial, double ms, const Bound& bound) {
    std::printf("  %d chunks: serial %.3f ms, overlapped %.3f ms, bound %.3f ms (%s)\n", chunks,
                serial, ms, bound.ms(), bound.pacer());
    if (chunks == 1) one_ms = best_ms = ms;
    if (chunks == 1) chart.spans.push_back({0, "serial, no overlap (1 chunk)", "", 0, serial});
    const double over = cs::ratio(ms, bound.ms());
    lowest_over_bound = std::min(lowest_over_bound, over);
    if (over / bound.bar() > worst_over_bound / worst_bar)
      worst_over_bound = over, worst_bar = bound.bar(), worst_chunks = chunks,
      worst_host_share = bound.host_share();
    if (ms < best_ms) best = chunks, best_ms = ms;
    const cs::Span measured{static_cast<int>(chart.rows.size()), "overlapped, measured", "", 0, ms};
    chart.rows.push_back(cs::format("%d chunk%s", chunks, chunks == 1 ? "" : "s"));
    chart.spans.push_back(measured);
    chart.spans.push_back(
        {measured.row, "lower bound: the same calls with less work", "", 0, bound.ms()});
    if (ms < bound.ms()) chart.spans.push_back(measured);  // it beat the bound
  }
  // The sweep's three checks (the lesson's part 5 gives their bars).
  void check(const Run& run) const {
    if (run.measure()) std::printf("  best: %d chunks, %.3f ms\n", best, best_ms);
    cs::check_or_skip(run.skip, "chunks_bound_holds", lowest_over_bound, cs::Compare::at_least,
                      kBoundHolds, "x",
                      "the lowest overlapped / bound over the chunk counts: below it would "
                      "disprove the bound");
    cs::check_or_skip(run.overlap_skip, "chunks_bound_worst", worst_over_bound,
                      cs::Compare::at_most, worst_bar, "x",
                      cs::format("overlapped / bound at the count nearest its bar, %d chunks; host "
                                 "issue %.0f%% of it",
                                 worst_chunks, 100 * worst_host_share));
    cs::check_or_skip(cs::first_reason({run.overlap_skip, run.speedup_limits(1024)}),
                      "chunks_best_vs_one", cs::ratio(one_ms, best_ms), cs::Compare::at_least,
                      run.speedup_bar(), "x", "one chunk's time / the best chunk count's");
  }
  void write_svg(const std::string& path) const {
    const char* title =
        "Time by chunk count; lower bound = max(kernels of no work, one-word copies, "
        "each stream's chunks in turn)";
    cs::write_file(path, cs::render_svg(chart, title).text, "--chunks-svg chart");
    std::printf("  Curve written to %s\n", path.c_str());
  }
};

// Multiply-adds per element for one chunk's kernel (of C) to take 0.9 of `pace_ms`, one chunk's
// share of the copies: the copies then pace the pipeline, not the kernel's jitter. Clocks rise
// under load: keep the SMs busy ~100 ms, then time and scale a guess 3 times (`chunk_ms`: last).
inline int calibrate_iterations(const Buffers& b, int C, double pace_ms, cudaStream_t stream,
                                double* chunk_ms) {
  auto kernel_ms = [&](std::size_t n, int iterations, int warmup, int timed) {
    auto launch = [&] {
      scramble<<<blocks_for(n), kBlock, 0, stream>>>(b.dev_out, b.dev_in, n, iterations,
                                                     kMultiplier, kIncrement);
      CS_CHECK_LAUNCH();
    };
    return cs::time_on_stream_ms(stream, warmup, timed, launch).median;
  };
  double busy_ms = 0;
  for (int i = 0; i < 200 && busy_ms < 100; ++i) busy_ms += kernel_ms(b.elements, 1024, 0, 1);
  int iterations = 1024;
  for (int round = 0; round < 3; ++round) {
    *chunk_ms = kernel_ms(b.size(0, C), iterations, 1, 5);
    const double scaled = *chunk_ms > 0 ? iterations * (0.9 * pace_ms) / *chunk_ms : 1 << 20;
    iterations = static_cast<int>(std::min<double>(1 << 20, std::max(1.0, std::round(scaled))));
  }
  return iterations;
}

}  // namespace lab
