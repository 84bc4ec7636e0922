// Chapter 04's run, which a reader may skip: passes, copy figures, flags and skip reasons, buffers,
// the CPU's reference, the bound, part chunks' sweep (parts 4 and 5) and the measurements behind.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "cuda_streams.hpp"
#include "cuda_streams/device_clock.cuh"

__global__ void scramble(std::uint32_t* output, const std::uint32_t* input, std::size_t count,
                         int iterations, std::uint32_t multiplier, std::uint32_t increment);
__global__ void hold_stream(unsigned long long ns);

namespace lab {

constexpr std::uint32_t kMultiplier = 1664525u, kIncrement = 1013904223u;  // x -> a * x + c
constexpr int kBlock = 256;

// Every timed figure is measured in kPasses passes, a while apart, and keeps its fastest: on a
// shared machine a busy moment of the host or the bus (tens of ms) can slow every run of a pass.
constexpr int kPasses = 2;

// One copy's figures, [0] H2D and [1] D2H in part 2 and 3's pairs.
struct Copy {
  double gbps = 0, call_ms = HUGE_VAL, copy_ms = HUGE_VAL;  // the fastest figures so far
};
inline void print_copy(const std::string& name, const Copy& copy) {
  std::printf("  %s: %.1f GB/s, call %.3f ms, copy %.3f ms\n", name.c_str(), copy.gbps,
              copy.call_ms, copy.copy_ms);
}

// Part pipeline's timelines, one per order of issue (serial, depth-first, breadth-first).
constexpr const char* kOrderTitles[] = {
    "Serial: every chunk in stream 0, nothing overlaps",
    "Depth-first: for each chunk, its H2D, kernel and D2H in its stream",
    "Breadth-first: for each wave of one chunk per stream, all H2Ds, all kernels, all D2Hs"};

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

// The flags, asyncEngineCount, and why checks skip (bound_holds and chunks_bound_holds: part 4).
struct Run {
  int mib = 256, chunks = 32, streams = 4, repeats = 5, engines = 0;
  cs::CommonOptions common;
  std::string chunks_svg, skip, overlap_skip, holds_skip, pipeline_holds_skip;
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
    const char* queue = "CUDA_DEVICE_MAX_CONNECTIONS=1: both copy directions wait in one queue";
    holds_skip = cs::first_reason({overlap_skip, env.max_connections == 1 ? queue : ""});
    const std::string shared = cs::format(
        "%d streams on %d copy engines: copies of one direction overlap", streams, engines);
    pipeline_holds_skip =
        cs::first_reason({holds_skip, streams > engines + 1 && engines > 0 ? shared : ""});
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
  std::uint32_t *host_in = nullptr, *host_out = nullptr;  // pinned (cudaMallocHost)
  std::uint32_t *dev_in = nullptr, *dev_out = nullptr;
  std::vector<std::uint32_t> pageable;  // ordinary memory holding the same input words
  std::size_t begin(int c, int chunks) const { return elements * c / chunks; }
  std::size_t size(int c, int chunks) const { return begin(c + 1, chunks) - begin(c, chunks); }
  // Exits 2 before the GPU is touched when two pinned buffers, a pageable one and the CPU
  // reference would take more than half of host memory.
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

// Measured before the pipeline runs: the kernel's multiply-adds per element (64 untimed), one
// chunk's copy inside it, a plain cudaMemcpy ([0] H2D, [1] D2H), the fixed costs (host: one copy
// call, one launch; GPU: one copy beyond bytes / rate), and the stage totals at C chunks: alone[0]
// H2D, [1] kernel, [2] D2H, each alone in one stream; both[0] H2D, [1] D2H, both directions at
// once.
struct Model {
  int iterations = 64;
  double copy_pace_ms = 0, plain_ms[2] = {}, host_copy_ms = 0, host_launch_ms = 0, gpu_copy_ms = 0;
  double alone[3] = {}, both[2] = {};
};
// Two measurements of one model (the same kernel), each figure the faster of the two.
inline Model fastest(Model a, const Model& b) {
  for (int i = 0; i < 3; ++i) a.alone[i] = std::min(a.alone[i], b.alone[i]);
  for (int i = 0; i < 2; ++i) a.both[i] = std::min(a.both[i], b.both[i]);
  for (int i = 0; i < 2; ++i) a.plain_ms[i] = std::min(a.plain_ms[i], b.plain_ms[i]);
  a.host_copy_ms = std::min(a.host_copy_ms, b.host_copy_ms);
  a.host_launch_ms = std::min(a.host_launch_ms, b.host_launch_ms);
  a.gpu_copy_ms = std::min(a.gpu_copy_ms, b.gpu_copy_ms);
  return a;
}

// The least time the pipeline can take at C chunks over S streams, from the stages measured
// without it: the largest of the engines', streams' and host's limits; the floor leaves out the
// bus.
struct Bound {
  double engines_ms = 0, streams_ms = 0, host_ms = 0, floor_ms = 0;
  double ms() const { return std::max({engines_ms, streams_ms, host_ms}); }
  const char* pacer() const {
    return ms() == host_ms ? "host" : ms() == streams_ms ? "streams" : "engines";
  }
  Bound(const Model& m, int C, int S, int engines, double serial_ms) {
    const double c = C, H = m.alone[0], K = m.alone[1], D = m.alone[2];  // each stage alone
    const double h = H / c, k = K / c, d = D / c;                        // one chunk's
    // No copy engine: nothing overlaps; one: it does H2D and D2H in turn; two or more: each
    // stage's total, after the first chunk's earlier stages, before the last chunk's later.
    engines_ms = engines == 0 ? H + K + D : std::max(H + D, K) + h + d + k - std::max(h + d, k);
    if (engines >= 2) engines_ms = std::max({H + k + d, h + K + d, h + k + D});
    streams_ms = serial_ms * std::ceil(c / S) / c;              // each stream's chunks in turn
    host_ms = c * (2 * m.host_copy_ms + m.host_launch_ms) + d;  // the issue loop
    floor_ms = ms();
    if (engines >= 2) {  // the bus: each direction alone at its own pace, both at once in between
      const double fill = h + k, drain = k + d, up = std::max(0.0, 1 - fill / H) * m.both[0],
                   down = std::max(0.0, 1 - drain / D) * m.both[1];
      const double rest = up > down ? (up - down) / m.both[0] * H : (down - up) / m.both[1] * D;
      engines_ms = std::max(engines_ms, std::min(H + D, fill + std::min(up, down) + rest + drain));
    }
  }
};

// Part chunks' figures and chart (--chunks-svg): the serial time, then per count the measured time
// with its bound over it (drawn again if shorter); the worst count comes nearest its bar.
struct Sweep {
  static constexpr int kCounts = 11;  // 1, 2, 4, ... 1024 chunks
  Model stages[kCounts];              // per count, the fastest of every pass's
  double serial[kCounts] = {}, ms[kCounts] = {};
  void keep(int pass, int i, const Model& st, double serial_ms, double overlapped_ms) {
    stages[i] = pass == 1 ? st : fastest(stages[i], st);
    serial[i] = pass == 1 ? serial_ms : std::min(serial[i], serial_ms);
    ms[i] = pass == 1 ? overlapped_ms : std::min(ms[i], overlapped_ms);
  }
  double lowest_over_floor = HUGE_VAL, worst_over_bound = 0, worst_bar = 1, worst_host_share = 0;
  double one_ms = 0, best_ms = 0;
  int best = 1, worst_chunks = 0;
  cs::TimelineData chart{{"serial"}, {}};
  void add(int chunks, double serial, double ms, const Bound& bound, double bar) {
    std::printf("  %d chunks: serial %.3f ms, overlapped %.3f ms, bound %.3f ms (%s)\n", chunks,
                serial, ms, bound.ms(), bound.pacer());
    if (chunks == 1) one_ms = best_ms = ms;
    if (chunks == 1) chart.spans.push_back({0, "serial, no overlap (1 chunk)", "", 0, serial});
    lowest_over_floor = std::min(lowest_over_floor, cs::ratio(ms, bound.floor_ms));
    if (cs::ratio(ms, bound.ms()) / bar > worst_over_bound / worst_bar)
      worst_over_bound = cs::ratio(ms, bound.ms()), worst_bar = bar, worst_chunks = chunks,
      worst_host_share = cs::ratio(bound.host_ms, bound.ms());
    if (ms < best_ms) best = chunks, best_ms = ms;
    const cs::Span measured{static_cast<int>(chart.rows.size()), "overlapped, measured", "", 0, ms};
    chart.rows.push_back(cs::format("%d chunk%s", chunks, chunks == 1 ? "" : "s"));
    chart.spans.push_back(measured);
    chart.spans.push_back({measured.row, "lower bound from the stages' times", "", 0, bound.ms()});
    if (ms < bound.ms()) chart.spans.push_back(measured);  // it beat the bound
  }
  void write_svg(const std::string& path) const {
    const char* title =
        "Time by chunk count; lower bound = max(engines: stage times + fill/drain, "
        "streams: chunks in turn, host: issue)";
    cs::write_file(path, cs::render_svg(chart, title).text, "--chunks-svg chart");
    std::printf("  Curve written to %s\n", path.c_str());
  }
};

// The measurements for Model (part 4 says what they are). Each stage time is the fastest of its
// runs: a busy host only lengthens a run, and a bound from a lengthened stage is no lower bound.

// Every chunk's `stage` (0 H2D, 1 kernel, 2 D2H) in one stream: that stage's total time alone.
inline double stage_alone_ms(const Buffers& b, int C, int stage, int iterations, cudaStream_t on,
                             int repeats) {
  auto all_chunks = [&] {
    for (int c = 0; c < C; ++c) {
      const std::size_t at = b.begin(c, C), n = b.size(c, C);
      if (stage == 0)
        CS_CHECK(cudaMemcpyAsync(b.dev_in + at, b.host_in + at, 4 * n, cudaMemcpyHostToDevice, on));
      if (stage == 1) {
        scramble<<<blocks_for(n), kBlock, 0, on>>>(b.dev_out + at, b.dev_in + at, n, iterations,
                                                   kMultiplier, kIncrement);
        CS_CHECK_LAUNCH();
      }
      if (stage == 2)
        CS_CHECK(
            cudaMemcpyAsync(b.host_out + at, b.dev_out + at, 4 * n, cudaMemcpyDeviceToHost, on));
    }
  };
  return cs::time_on_stream_ms(on, 1, repeats, all_chunks).min;
}

// The fixed costs, on 3 rounds of 200 empty launches and 200 copies of 256 KiB (one chunk of 1024
// at the default size: C costs weigh most there). On the GPU a copy of n bytes takes g + n / rate:
// each round solves for g with a copy of the whole buffer just before the 200; the median counts.
inline void measure_op_costs(Model& m, const Buffers& b, cudaStream_t stream) {
  constexpr long long kOps = 200, bytes = 256 << 10;  // a quarter of the buffer at most (--mib 1)
  std::vector<double> host_copy, host_launch, gpu_copy;
  cudaEvent_t start, stop, whole;
  CS_CHECK(cudaEventCreate(&start));
  CS_CHECK(cudaEventCreate(&stop));
  CS_CHECK(cudaEventCreate(&whole));
  auto copies = [&] {
    for (int i = 0; i < kOps; ++i)
      CS_CHECK(cudaMemcpyAsync(b.dev_in, b.host_in, bytes, cudaMemcpyHostToDevice, stream));
  };
  for (int round = 0; round < 3; ++round) {
    CS_CHECK(cudaStreamSynchronize(stream));
    double t0 = cs::host_now_ms();
    copies();
    host_copy.push_back((cs::host_now_ms() - t0) / kOps);
    CS_CHECK(cudaStreamSynchronize(stream));
    t0 = cs::host_now_ms();
    for (int i = 0; i < kOps; ++i) {
      scramble<<<1, kBlock, 0, stream>>>(b.dev_out, b.dev_in, 1, 0, kMultiplier, kIncrement);
      CS_CHECK_LAUNCH();
    }
    host_launch.push_back((cs::host_now_ms() - t0) / kOps);
    // On the GPU: hold the stream (ns) until the host has queued every copy, then time them.
    hold_stream<<<1, 1, 0, stream>>>(1e6 * (0.5 + 4 * (kOps + 1) * host_copy.back()));
    CS_CHECK_LAUNCH();
    CS_CHECK(cudaEventRecord(whole, stream));
    CS_CHECK(cudaMemcpyAsync(b.dev_in, b.host_in, b.bytes, cudaMemcpyHostToDevice, stream));
    CS_CHECK(cudaEventRecord(start, stream));
    copies();
    CS_CHECK(cudaEventRecord(stop, stream));
    CS_CHECK(cudaEventSynchronize(stop));
    float whole_ms = 0, ms = 0;
    CS_CHECK(cudaEventElapsedTime(&whole_ms, whole, start));
    CS_CHECK(cudaEventElapsedTime(&ms, start, stop));
    const double each = ms / kOps, B = b.bytes, n = bytes;  // n < B: two equations, two unknowns
    gpu_copy.push_back(std::max(0.0, (each * B - whole_ms * n) / (B - n)));
  }
  for (cudaEvent_t e : {start, stop, whole}) CS_CHECK(cudaEventDestroy(e));
  m.host_copy_ms = cs::summarize(host_copy).min, m.host_launch_ms = cs::summarize(host_launch).min;
  m.gpu_copy_ms = cs::median(gpu_copy);
}

// m with its stages at C chunks: the copies each alone (unless `calibrated` with two copy engines:
// then each direction alone is m's plain copy plus C fixed costs on the GPU); with two copy engines
// every H2D in `up` and every D2H in `down` at once; if `calibrated`, the kernels in one stream.
inline Model measure_stages(Model m, const Buffers& b, int C, cudaStream_t up, cudaStream_t down,
                            int engines, int repeats, bool calibrated) {
  for (int i = 0; i < 2 && (!calibrated || engines < 2); ++i)
    m.alone[2 * i] = m.both[i] = stage_alone_ms(b, C, 2 * i, 0, up, repeats);
  if (engines >= 2) {
    cudaEvent_t start, up_done, down_done;
    CS_CHECK(cudaEventCreate(&start));
    CS_CHECK(cudaEventCreate(&up_done));
    CS_CHECK(cudaEventCreate(&down_done));
    std::vector<double> times[2];
    for (int i = -1; i < repeats; ++i) {  // one warm-up
      CS_CHECK(cudaEventRecord(start, up));
      CS_CHECK(cudaStreamWaitEvent(down, start, 0));
      for (int c = 0; c < C; ++c) {  // interleaved, so that both streams start together
        const std::size_t at = b.begin(c, C), bytes = 4 * b.size(c, C);
        CS_CHECK(cudaMemcpyAsync(b.dev_in + at, b.host_in + at, bytes, cudaMemcpyHostToDevice, up));
        CS_CHECK(
            cudaMemcpyAsync(b.host_out + at, b.dev_out + at, bytes, cudaMemcpyDeviceToHost, down));
      }
      CS_CHECK(cudaEventRecord(up_done, up));
      CS_CHECK(cudaEventRecord(down_done, down));
      CS_CHECK(cudaEventSynchronize(up_done));
      CS_CHECK(cudaEventSynchronize(down_done));
      float ms[2] = {};
      CS_CHECK(cudaEventElapsedTime(&ms[0], start, up_done));
      CS_CHECK(cudaEventElapsedTime(&ms[1], start, down_done));
      if (i >= 0) times[0].push_back(ms[0]), times[1].push_back(ms[1]);
    }
    for (cudaEvent_t e : {start, up_done, down_done}) CS_CHECK(cudaEventDestroy(e));
    for (int d = 0; d < 2; ++d) m.both[d] = cs::summarize(times[d]).min;
    for (int d = 0; d < 2 && calibrated; ++d) m.alone[2 * d] = m.plain_ms[d] + C * m.gpu_copy_ms;
  }
  if (calibrated) m.alone[1] = stage_alone_ms(b, C, 1, m.iterations, up, repeats);
  return m;
}

// Times the copies of a C-chunk pipeline (C = --chunks), sizes the kernel to 0.9 of one chunk's
// copy inside the pipeline (so that the copy engines pace it) unless `iterations` is given, then
// times the kernel stage and the fixed cost of one operation.
inline Model measure_model(const Buffers& b, const Run& run, cudaStream_t up, int iterations = 0) {
  Model m;
  if (!run.measure()) return m;  // the defaults: nothing is timed
  const int C = run.chunks, repeats = run.repeats, engines = run.engines;
  cudaStream_t pair[2];  // the copies of both directions at once: two streams created together
  for (cudaStream_t& stream : pair) CS_CHECK(cudaStreamCreate(&stream));
  auto h2d = [&] { CS_CHECK(cudaMemcpy(b.dev_in, b.host_in, b.bytes, cudaMemcpyHostToDevice)); };
  auto d2h = [&] { CS_CHECK(cudaMemcpy(b.host_out, b.dev_out, b.bytes, cudaMemcpyDeviceToHost)); };
  m.plain_ms[0] = cs::time_on_stream_ms(nullptr, 1, repeats, h2d).min;
  m.plain_ms[1] = cs::time_on_stream_ms(nullptr, 1, repeats, d2h).min;
  m = measure_stages(m, b, C, pair[0], pair[1], engines, repeats, false);
  m.copy_pace_ms = (engines >= 2 ? std::max(m.both[0], m.both[1]) : m.alone[0] + m.alone[2]) / C;
  // GPUs raise their clocks under load within tens of milliseconds: keep the SMs busy for about
  // 100 ms, then time a guess at one chunk's kernel and scale it to the target, three times.
  auto kernel_ms = [&](std::size_t n, int iterations, int warmup, int timed) {
    auto launch = [&] {
      scramble<<<blocks_for(n), kBlock, 0, up>>>(b.dev_out, b.dev_in, n, iterations, kMultiplier,
                                                 kIncrement);
      CS_CHECK_LAUNCH();
    };
    return cs::time_on_stream_ms(up, warmup, timed, launch).median;
  };
  double busy_ms = 0;
  for (int i = 0; i < 200 && busy_ms < 100; ++i) busy_ms += kernel_ms(b.elements, 1024, 0, 1);
  m.iterations = iterations > 0 ? iterations : 1024;
  for (int round = 0; round < 3 && iterations == 0; ++round) {
    const double ms = kernel_ms(b.size(0, C), m.iterations, 1, 5);
    const double scaled = ms > 0 ? m.iterations * (0.9 * m.copy_pace_ms) / ms : 1 << 20;
    m.iterations = static_cast<int>(std::min<double>(1 << 20, std::max(1.0, std::round(scaled))));
  }
  m.alone[1] = stage_alone_ms(b, C, 1, m.iterations, up, repeats);
  measure_op_costs(m, b, up);
  for (cudaStream_t stream : pair) CS_CHECK(cudaStreamDestroy(stream));
  return m;
}

}  // namespace lab
