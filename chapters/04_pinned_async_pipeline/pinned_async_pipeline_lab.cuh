// Chapter 04's measurement machinery: a reader may skip this file.
//
// What is here is not the lesson: the flags and the setup they need, the buffers the parts
// share, the CPU reference, timing the stages of the pipeline alone, warming the clocks and
// calibrating the kernel, measuring the fixed cost of one operation, the bound model, reading a
// timeline, the tables the parts print, and a small SVG line chart.
// The calls the chapter teaches (cudaMallocHost, cudaHostRegister, cudaMemcpyAsync, the kernel
// launch into a stream) are written out in pinned_async_pipeline.cu.
#pragma once

#include <cuda_runtime.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "cuda_streams.hpp"
#include "cuda_streams/device_clock.cuh"

namespace lab {

// A 32-bit linear congruential step, x -> a * x + c (mod 2^32): the pipeline kernel's work.
constexpr std::uint32_t kMultiplier = 1664525u;
constexpr std::uint32_t kIncrement = 1013904223u;
constexpr int kWarmup = 1;

inline std::uint32_t input_word(std::size_t i) {
  return static_cast<std::uint32_t>(i) * 2654435761u + 12345u;
}

// What `iterations` steps of x -> a * x + c do to input_word(i): again an affine map, so the CPU
// reference costs one multiply-add per element.
inline std::vector<std::uint32_t> expected_output(std::size_t elements, int iterations) {
  std::uint32_t multiplier = 1, increment = 0;
  for (int k = 0; k < iterations; ++k) {
    multiplier *= kMultiplier;
    increment = increment * kMultiplier + kIncrement;
  }
  std::vector<std::uint32_t> want(elements);
  for (std::size_t i = 0; i < elements; ++i) want[i] = multiplier * input_word(i) + increment;
  return want;
}

inline double gb_per_s(std::size_t bytes, double ms) {
  return ms > 0 ? static_cast<double>(bytes) / (ms * 1e6) : 0;
}
// a / b, or 0 when b is not positive: no ratio printed is negative or infinite.
inline double ratio(double a, double b) {
  return b > 0 ? a / b : 0;
}
inline std::string h200_target(const char* op, double value) {
  return cs::format("H200 target %s %.2fx", op, value);
}

// The chapter's flags, and what every part needs from them and from the environment.
struct Run {
  int mib = 256, chunks = 32, streams = 4, repeats = 5;
  std::string chunks_svg;
  cs::CommonOptions common;
  std::string skip;           // why every timed check is skipped here ("" when they run)
  std::string no_overlap;     // why streams issued from this thread cannot overlap as they should
  cs::LaunchEnvironment env;  // the launch settings this run is under
  bool measure() const { return !common.no_timing; }
};

inline void add_flags(cs::Options& options, Run* run) {
  options.add_int("mib", &run->mib, 1, 65536,
                  "data size in MiB: the seed's two halves, the copies and the pipeline's buffer");
  options.add_int("chunks", &run->chunks, 1, 1024,
                  "pieces the pipeline cuts the data into (need not divide it)");
  options.add_int("streams", &run->streams, 1, 64, "streams the chunks are dealt to, round robin");
  options.add_int("repeats", &run->repeats, 1, 100,
                  "timed repeats after one warm-up (the median is reported)");
  options.add_string("chunks-svg", &run->chunks_svg, "FILE",
                     "write part chunks' curve (time against chunk count) as an SVG picture");
  cs::add_common_options(options, &run->common);
}

// check_or_skip() of `<name>_h2d`, then of `<name>_d2h`, in "x": value(i) is [0] H2D, [1] D2H.
template <class Value>
void check_directions(const std::string& skip, const std::string& name, cs::Compare compare,
                      double bar, const std::string& why, Value&& value) {
  const char* dir[] = {"h2d", "d2h"};
  for (int i = 0; i < 2; ++i)
    cs::check_or_skip(skip, name + "_" + dir[i], value(i), compare, bar, "x", why);
}

// The buffers the parts after the seed share.
struct Buffers {
  std::size_t elements = 0;
  std::size_t bytes = 0;
  std::uint32_t* host_in = nullptr;     // pinned (cudaMallocHost): the pipeline's input
  std::uint32_t* host_out = nullptr;    // pinned (cudaMallocHost): the pipeline's output
  std::vector<std::uint32_t> pageable;  // ordinary memory holding the same input words
  std::uint32_t* dev_in = nullptr;
  std::uint32_t* dev_out = nullptr;
  // Chunk c of C: elements [begin(c, C), begin(c + 1, C)); sizes differ by one element at most.
  std::size_t begin(int c, int chunks) const {
    return elements * static_cast<std::size_t>(c) / static_cast<std::size_t>(chunks);
  }
  std::size_t size(int c, int chunks) const { return begin(c + 1, chunks) - begin(c, chunks); }
};

// The buffers' sizes from --mib (262144 elements or more: at least one per chunk). Two pinned
// buffers, a pageable one and the CPU reference must fit in host memory: exits 2, before the GPU
// is touched, when they would take more than half of it.
inline Buffers sized_buffers(const Run& run) {
  Buffers b;
  b.bytes = static_cast<std::size_t>(run.mib) << 20;
  b.elements = b.bytes / sizeof(std::uint32_t);
  const long pages = sysconf(_SC_PHYS_PAGES), page_size = sysconf(_SC_PAGE_SIZE);
  const double physical = pages > 0 && page_size > 0 ? 1.0 * pages * page_size : 0;  // 0: unknown
  if (physical > 0 && 4.0 * b.bytes > 0.5 * physical) {
    cs::usage_error(cs::format("--mib %d: needs ", run.mib) + cs::format_bytes(4.0 * b.bytes) +
                    " of host memory (two pinned buffers, a pageable one and the CPU reference), "
                    "more than half of this machine's " +
                    cs::format_bytes(physical));
  }
  return b;
}

// Why a bound_holds check skips: `skip`, or one hardware queue, where the two streams that time
// both copy directions at once wait for each other (the pipeline's streams still overlap there).
// With more streams than copy engines + 1, copies of one direction from several streams are in
// flight together, and the model's one engine per direction no longer bounds them (on the H200,
// 32 streams ran at 0.95x of it).
inline std::string holds_skip(const std::string& skip, const cs::LaunchEnvironment& env,
                              int streams = 0, int engines = 0) {
  return cs::first_reason(
      {skip,
       env.max_connections == 1 ? "CUDA_DEVICE_MAX_CONNECTIONS=1: the streams that time both "
                                  "copy directions at once wait for each other in one queue"
                                : "",
       streams > engines + 1 && engines > 0
           ? cs::format("%d streams on %d copy engines: copies of one direction overlap, which "
                        "the model's one engine per direction does not bound",
                        streams, engines)
           : ""});
}

// Once the device is chosen: exits 2 when it cannot hold the buffers, sets why checks skip, and
// prints the "Data:" line.
inline void prepare_run(Run& run, const cs::LaunchEnvironment& env, const Buffers& b) {
  cs::require_fits_on_device(2 * b.bytes, cs::format("--mib %d", run.mib));
  // Below 32 MiB the copies are too short to time reliably.
  constexpr int kMinTimedMib = 32;
  run.skip = cs::first_reason(
      {run.common.timing_skip_reason(),
       run.mib < kMinTimedMib
           ? cs::format("--mib below %d is too small to time reliably", kMinTimedMib)
           : ""});
  run.no_overlap = cs::no_overlap_reason(env);  // not one queue: see holds_skip()
  run.env = env;
  std::printf("Data: %s (%zu 4-byte words); timing: %s\n",
              cs::format_bytes(static_cast<double>(b.bytes)).c_str(), b.elements,
              run.measure()
                  ? cs::format("%d repeats after 1 warm-up, medians shown", run.repeats).c_str()
                  : "off (--no-timing)");
}

// One copy of parts pinned and register, and its times: cudaMemcpy's bandwidth, the host's time
// inside one cudaMemcpyAsync, and that copy's time on the GPU.
struct Copy {
  const char* name;
  void* dst;
  const void* src;
  cudaMemcpyKind kind;
  double gbps = 0, call_ms = 0, copy_ms = 0;
};
const char* const kCopyHeader =
    "  copy             cudaMemcpy      one cudaMemcpyAsync: inside the call  the copy  "
    "call/copy\n";

// cudaPointerGetAttributes' memory type before and after cudaHostRegister, in words.
inline std::string memory_types(const cudaPointerAttributes& was, const cudaPointerAttributes& is) {
  return cs::format("cudaPointerGetAttributes type: %s before, %s after",
                    was.type == cudaMemoryTypeUnregistered ? "unregistered" : "other",
                    is.type == cudaMemoryTypeHost ? "host (pinned)" : "other");
}

// Launches the pipeline's kernel on elements [begin, begin + count) with `iterations` steps.
using Launch =
    std::function<void(std::size_t begin, std::size_t count, int iterations, cudaStream_t stream)>;

// Lets events on streams[0] time work spread over all streams: fork() makes every stream wait
// for this point of streams[0]; join() makes streams[0] wait for all of them.
class ForkJoin {
 public:
  explicit ForkJoin(std::size_t streams) : events_(streams, nullptr) {
    for (cudaEvent_t& e : events_) CS_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  }
  ~ForkJoin() {
    for (cudaEvent_t e : events_) cudaEventDestroy(e);
  }
  ForkJoin(const ForkJoin&) = delete;
  ForkJoin& operator=(const ForkJoin&) = delete;
  void fork(const std::vector<cudaStream_t>& streams) {
    CS_CHECK(cudaEventRecord(events_[0], streams[0]));
    for (std::size_t s = 1; s < streams.size(); ++s)
      CS_CHECK(cudaStreamWaitEvent(streams[s], events_[0], 0));
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

// Every chunk's copy in one direction, all in one stream: the stage's total time alone.
inline double copies_alone_ms(const Buffers& b, int chunks, cudaMemcpyKind kind,
                              cudaStream_t stream, int repeats) {
  const bool h2d = kind == cudaMemcpyHostToDevice;  // host_in -> dev_in, else dev_out -> host_out
  return cs::time_on_stream_ms(stream, kWarmup, repeats,
                               [&] {
                                 for (int c = 0; c < chunks; ++c) {
                                   const std::size_t at = b.begin(c, chunks),
                                                     bytes = b.size(c, chunks) * sizeof *b.dev_in;
                                   CS_CHECK(cudaMemcpyAsync(h2d ? b.dev_in + at : b.host_out + at,
                                                            h2d ? b.host_in + at : b.dev_out + at,
                                                            bytes, kind, stream));
                                 }
                               })
      .median;
}

// Every chunk's H2D in `up` and every chunk's D2H in `down` at the same time: each direction's
// total while the other one runs too (they share the PCIe link and host memory).
struct BothWays {
  double h2d_ms = 0;
  double d2h_ms = 0;
};
inline BothWays copies_both_ways_ms(const Buffers& b, int chunks, cudaStream_t up,
                                    cudaStream_t down, int repeats) {
  cudaEvent_t start, up_done, down_done;
  CS_CHECK(cudaEventCreate(&start));
  CS_CHECK(cudaEventCreate(&up_done));
  CS_CHECK(cudaEventCreate(&down_done));
  std::vector<double> ups, downs;
  for (int i = -kWarmup; i < repeats; ++i) {
    CS_CHECK(cudaEventRecord(start, up));
    CS_CHECK(cudaStreamWaitEvent(down, start, 0));
    for (int c = 0; c < chunks; ++c) {  // interleaved, so that both streams start together
      const std::size_t at = b.begin(c, chunks), n = b.size(c, chunks);
      CS_CHECK(cudaMemcpyAsync(b.dev_in + at, b.host_in + at, n * sizeof *b.dev_in,
                               cudaMemcpyHostToDevice, up));
      CS_CHECK(cudaMemcpyAsync(b.host_out + at, b.dev_out + at, n * sizeof *b.dev_in,
                               cudaMemcpyDeviceToHost, down));
    }
    CS_CHECK(cudaEventRecord(up_done, up));
    CS_CHECK(cudaEventRecord(down_done, down));
    CS_CHECK(cudaEventSynchronize(up_done));
    CS_CHECK(cudaEventSynchronize(down_done));
    float up_ms = 0, down_ms = 0;
    CS_CHECK(cudaEventElapsedTime(&up_ms, start, up_done));
    CS_CHECK(cudaEventElapsedTime(&down_ms, start, down_done));
    if (i >= 0) ups.push_back(up_ms), downs.push_back(down_ms);
  }
  CS_CHECK(cudaEventDestroy(start));
  CS_CHECK(cudaEventDestroy(up_done));
  CS_CHECK(cudaEventDestroy(down_done));
  return {cs::median(ups), cs::median(downs)};
}

// Every chunk's kernel, all in one stream: the kernel stage's total time alone.
inline double kernels_alone_ms(const Buffers& b, int chunks, int iterations, cudaStream_t stream,
                               int repeats, const Launch& launch) {
  return cs::time_on_stream_ms(stream, kWarmup, repeats,
                               [&] {
                                 for (int c = 0; c < chunks; ++c)
                                   launch(b.begin(c, chunks), b.size(c, chunks), iterations,
                                          stream);
                               })
      .median;
}

// The stages of a C-chunk pipeline, each a total over all chunks.
struct Stages {
  double h2d_ms = 0, kernel_ms = 0, d2h_ms = 0;  // each alone, in one stream
  double h2d_both_ms = 0, d2h_both_ms = 0;       // the copies with both directions at once
};

// GPUs lower their clocks while idle and raise them again under load within tens of
// milliseconds: keep the SMs busy for about 100 ms before the kernel is calibrated and timed.
inline void raise_clocks(const Buffers& b, cudaStream_t stream, const Launch& launch) {
  cs::EventTimer timer;
  double busy_ms = 0;
  for (int i = 0; i < 200 && busy_ms < 100; ++i) {
    timer.start(stream);
    launch(0, b.elements, 1024, stream);
    timer.stop(stream);
    busy_ms += timer.elapsed_ms();
  }
}

// The iteration count that makes one chunk's kernel take `target_ms`: time a guess and scale,
// three times, to absorb the launch's fixed cost.
inline int calibrate_iterations(const Buffers& b, int chunks, cudaStream_t stream, double target_ms,
                                const Launch& launch) {
  int iterations = 1024;
  for (int round = 0; round < 3; ++round) {
    const double ms = cs::time_on_stream_ms(stream, kWarmup, 5, [&] {
                        launch(0, b.size(0, chunks), iterations, stream);
                      }).median;
    const double scaled = ms > 0 ? iterations * target_ms / ms : 1 << 20;
    iterations = static_cast<int>(std::min<double>(1 << 20, std::max(1.0, std::round(scaled))));
  }
  return iterations;
}

// The stages of a C-chunk pipeline at `iterations`: the copies each alone (`alone`; else only
// both directions at once, where two copy engines allow it) and the kernels in one stream.
inline Stages measure_stages(const Buffers& b, int chunks, cudaStream_t up, cudaStream_t down,
                             int engines, int repeats, int iterations, bool alone,
                             const Launch& launch) {
  Stages s;
  if (alone || engines < 2) {
    s.h2d_ms = s.h2d_both_ms = copies_alone_ms(b, chunks, cudaMemcpyHostToDevice, up, repeats);
    s.d2h_ms = s.d2h_both_ms = copies_alone_ms(b, chunks, cudaMemcpyDeviceToHost, up, repeats);
  }
  if (engines >= 2) {
    const BothWays both = copies_both_ways_ms(b, chunks, up, down, repeats);
    s.h2d_both_ms = both.h2d_ms;
    s.d2h_both_ms = both.d2h_ms;
  }
  if (iterations > 0) s.kernel_ms = kernels_alone_ms(b, chunks, iterations, up, repeats, launch);
  return s;
}

// The fixed cost of one operation, measured on 200 copies of `bytes` and 200 empty launches.
struct OpCosts {
  double host_copy_ms = 0;    // the host's time inside one cudaMemcpyAsync from pinned memory
  double host_launch_ms = 0;  // the host's time inside one kernel launch
  double gpu_copy_ms = 0;     // on the GPU, what one copy costs beyond its bytes / bandwidth
};
__global__ void hold_stream(unsigned long long ns) {
  const unsigned long long start = cs::globaltimer_ns();
  while (cs::globaltimer_ns() - start < ns) {
  }
}
inline OpCosts measure_op_costs(const Buffers& b, std::size_t bytes, double plain_gbps,
                                cudaStream_t stream, const Launch& launch) {
  constexpr int kOps = 200;
  std::vector<double> host_copy, host_launch, gpu_copy;
  cudaEvent_t start, stop;
  CS_CHECK(cudaEventCreate(&start));
  CS_CHECK(cudaEventCreate(&stop));
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
    for (int i = 0; i < kOps; ++i) launch(0, 1, 0, stream);
    host_launch.push_back((cs::host_now_ms() - t0) / kOps);
    // On the GPU: hold the stream until the host has queued every copy, then time them back to
    // back, so that the host's pace does not enter the number.
    const double hold_ms = 0.5 + 4 * kOps * host_copy.back();
    hold_stream<<<1, 1, 0, stream>>>(static_cast<unsigned long long>(hold_ms * 1e6));
    CS_CHECK_LAUNCH();
    CS_CHECK(cudaEventRecord(start, stream));
    copies();
    CS_CHECK(cudaEventRecord(stop, stream));
    CS_CHECK(cudaEventSynchronize(stop));
    float ms = 0;
    CS_CHECK(cudaEventElapsedTime(&ms, start, stop));
    const double bytes_ms = plain_gbps > 0 ? static_cast<double>(bytes) / (plain_gbps * 1e6) : 0;
    gpu_copy.push_back(std::max(0.0, ms / kOps - bytes_ms));
  }
  CS_CHECK(cudaEventDestroy(start));
  CS_CHECK(cudaEventDestroy(stop));
  return {cs::median(host_copy), cs::median(host_launch), cs::median(gpu_copy)};
}

// What the pipeline and chunks parts measure before they run the pipeline.
struct Model {
  int iterations = 64;      // the kernel's multiply-adds per element (64 when nothing is timed)
  double copy_pace_ms = 0;  // one chunk's copy as it runs inside the pipeline
  double plain_ms[2] = {};  // one plain cudaMemcpy of all the bytes: [0] H2D, [1] D2H
  Stages stages;            // at the calibrated kernel
  OpCosts cost;             // per operation
};

// Times the copies of a C-chunk pipeline (C = --chunks), sizes the kernel to `kernel_share` of one
// chunk's copy inside the pipeline (both directions at once where two copy engines allow it, else
// the two in turn), then times the kernel stage and the fixed cost of one operation.
inline Model measure_model(const Buffers& b, const Run& run, int engines, double kernel_share,
                           cudaStream_t up, const Launch& launch) {
  Model m;
  if (!run.measure()) return m;  // the defaults: nothing is timed
  const int chunks = run.chunks, repeats = run.repeats;
  cudaStream_t pair[2];  // the copies of both directions at once: two streams created together
  for (cudaStream_t& stream : pair) CS_CHECK(cudaStreamCreate(&stream));
  for (int i = 0; i < 2; ++i) {
    m.plain_ms[i] =
        cs::time_on_stream_ms(nullptr, kWarmup, repeats, [&] {
          if (i == 0) {
            CS_CHECK(cudaMemcpy(b.dev_in, b.host_in, b.bytes, cudaMemcpyHostToDevice));
          } else {
            CS_CHECK(cudaMemcpy(b.host_out, b.dev_out, b.bytes, cudaMemcpyDeviceToHost));
          }
        }).median;
  }
  m.stages = measure_stages(b, chunks, pair[0], pair[1], engines, repeats, 0, true, launch);
  m.copy_pace_ms = (engines >= 2 ? std::max(m.stages.h2d_both_ms, m.stages.d2h_both_ms)
                                 : m.stages.h2d_ms + m.stages.d2h_ms) /
                   chunks;
  raise_clocks(b, up, launch);
  m.iterations = calibrate_iterations(b, chunks, up, kernel_share * m.copy_pace_ms, launch);
  m.stages.kernel_ms = kernels_alone_ms(b, chunks, m.iterations, up, repeats, launch);
  // The fixed cost of one operation, on copies of one chunk but 8 MiB at most: 1200 copies of a
  // 256 MiB chunk would take seconds, and the cost beyond the bytes drowns in their time.
  constexpr std::size_t kCostCopyBytesMax = std::size_t{8} << 20;
  const std::size_t chunk_bytes = b.begin(1, chunks) * sizeof *b.dev_in;
  m.cost = measure_op_costs(b, std::min(chunk_bytes, kCostCopyBytesMax),
                            gb_per_s(b.bytes, m.plain_ms[0]), up, launch);
  for (cudaStream_t stream : pair) CS_CHECK(cudaStreamDestroy(stream));
  return m;
}

// The chunked copies' stage (all C in one stream; [0] H2D, [1] D2H) against what it cannot beat:
// the host's time to issue C calls, or one plain copy of all the bytes plus C fixed costs.
inline double chunked_rate_vs_expected(const Model& m, int chunks, int i) {
  const double expected =
      std::max(chunks * m.cost.host_copy_ms, m.plain_ms[i] + chunks * m.cost.gpu_copy_ms);
  return ratio(expected, i == 0 ? m.stages.h2d_ms : m.stages.d2h_ms);
}

inline void print_model(const Model& m, const Buffers& b, int chunks, int engines) {
  const Stages& s = m.stages;
  if (engines >= 2) {
    std::printf(
        "  copies of all chunks, both directions at once: H2D %.1f GB/s + D2H %.1f GB/s = %.1f"
        " GB/s\n",
        gb_per_s(b.bytes, s.h2d_both_ms), gb_per_s(b.bytes, s.d2h_both_ms),
        gb_per_s(b.bytes, s.h2d_both_ms) + gb_per_s(b.bytes, s.d2h_both_ms));
  }
  std::printf(
      "  kernel calibrated once: %d multiply-adds per element make one chunk's kernel take"
      " %.3f ms\n  (one chunk's copy inside the pipeline: %.3f ms)\n",
      m.iterations, s.kernel_ms / chunks, m.copy_pace_ms);
  std::printf("  stage times, each alone (all %d chunks in one stream):\n", chunks);
  std::printf("    H2D     %8.3f ms  (%.1f GB/s)\n", s.h2d_ms, gb_per_s(b.bytes, s.h2d_ms));
  std::printf("    kernel  %8.3f ms\n", s.kernel_ms);
  std::printf("    D2H     %8.3f ms  (%.1f GB/s)\n", s.d2h_ms, gb_per_s(b.bytes, s.d2h_ms));
  std::printf(
      "  fixed cost of one operation: %.2f us of host time per cudaMemcpyAsync, %.2f us per"
      " launch;\n  %.2f us of GPU time per copy beyond its bytes\n",
      1e3 * m.cost.host_copy_ms, 1e3 * m.cost.host_launch_ms, 1e3 * m.cost.gpu_copy_ms);
}

// The least time the overlapped pipeline can take, from the stages measured without it.
struct Bound {
  double engines_ms = 0;  // what the copy engines and the SMs allow
  double streams_ms = 0;  // each stream runs its own chunks one after another
  double host_ms = 0;     // the host issues three calls per chunk, one after another
  // A floor no run can beat: each stage at the rate it reached alone, no model of the bus.
  double floor_ms = 0;
  double ms() const { return std::max({engines_ms, streams_ms, host_ms}); }
  const char* pacer() const {
    return ms() == host_ms ? "host" : ms() == streams_ms ? "streams" : "engines";
  }
};
inline Bound pipeline_bound(const Stages& s, int chunks, int streams, int engines, double serial_ms,
                            const OpCosts& cost) {
  const double c = chunks, H = s.h2d_ms, K = s.kernel_ms, D = s.d2h_ms;  // each stage alone
  const double h = H / c, k = K / c, d = D / c;                          // one chunk's
  Bound bound;
  if (engines >= 2) {
    // Each stage's total, after the first chunk's earlier stages, before the last chunk's later.
    bound.floor_ms = bound.engines_ms = std::max({H + k + d, h + K + d, h + k + D});
    // The bus: no D2H before the first chunk's H2D and kernel, no H2D after the last chunk's;
    // each direction alone at its own pace there, both at once (slower each) in between.
    const double fill = h + k, drain = k + d, up = std::max(0.0, 1 - fill / H) * s.h2d_both_ms,
                 down = std::max(0.0, 1 - drain / D) * s.d2h_both_ms;
    const double rest =
        up > down ? (up - down) / s.h2d_both_ms * H : (down - up) / s.d2h_both_ms * D;
    bound.engines_ms =
        std::max(bound.engines_ms, std::min(H + D, fill + std::min(up, down) + rest + drain));
  } else if (engines == 1) {  // one copy engine does H2D and D2H in turn
    bound.engines_ms = std::max(H + D, K) + h + d + k - std::max(h + d, k);
  } else {
    bound.engines_ms = H + K + D;  // copies cannot overlap kernels
  }
  // The serial run measured one stream's chain (with the waits between engines) for C chunks.
  bound.streams_ms = serial_ms * std::ceil(c / streams) / c;
  // The last chunk's D2H still runs after the host issued it.
  bound.host_ms = c * (2 * cost.host_copy_ms + cost.host_launch_ms) + d;
  if (engines < 2) bound.floor_ms = bound.engines_ms;  // no bus model there
  bound.floor_ms = std::max({bound.floor_ms, bound.streams_ms, bound.host_ms});
  return bound;
}

// The share of a run during which an H2D, a kernel and a D2H were all in progress at once.
inline double share_with_all_stages_busy(const cs::TimelineData& data) {
  struct Edge {
    double at;
    int stage, delta;
  };
  std::vector<Edge> edges;
  double first = std::numeric_limits<double>::max(), last = 0;
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
  double busy = 0, previous = first;
  for (const Edge& edge : edges) {
    if (active[0] > 0 && active[1] > 0 && active[2] > 0) busy += edge.at - previous;
    previous = edge.at;
    active[edge.stage] += edge.delta;
  }
  return last > first ? busy / (last - first) : 0;
}

// Zeroes every buffer the pipeline writes, so that only the next run's work can pass a check.
inline void clear_outputs(const Buffers& b) {
  CS_CHECK(cudaMemset(b.dev_in, 0, b.bytes));
  CS_CHECK(cudaMemset(b.dev_out, 0, b.bytes));
  std::fill(b.host_out, b.host_out + b.elements, 0u);
  CS_CHECK(cudaDeviceSynchronize());
}

// Why the speedup over serial cannot reach its bar with this pipeline's shape, or "": it needs a
// stream for each of the three stages, and chunks enough that filling and draining weigh little.
inline std::string speedup_limits(int engines, int streams, int chunks) {
  constexpr int kMinStreams = 3, kMinChunks = 8;
  if (engines == 0) return "asyncEngineCount 0: this device cannot overlap copies with kernels";
  if (streams < kMinStreams) return cs::format("needs --streams %d or more", kMinStreams);
  if (chunks < kMinChunks) return cs::format("needs --chunks %d or more", kMinChunks);
  return "";
}

// Part pipeline's figures: the bound's three limits, then each order's time against it.
inline void print_pipeline(const Bound& bound, int chunks, int streams, const char* const* names,
                           const double* ms, const cs::TimelineData* drawn) {
  std::printf(
      "    engines allow %.3f ms; %d stream%s, each running its chunks in order, allow %.3f ms;\n"
      "    the host, issuing 3 calls per chunk, allows %.3f ms\n",
      bound.engines_ms, streams, streams == 1 ? "" : "s", bound.streams_ms, bound.host_ms);
  std::printf("    bound: %.3f ms (paced by the %s) for %d chunks\n", bound.ms(), bound.pacer(),
              chunks);
  std::printf("  order            time ms   speedup over serial   time / bound   all 3 busy\n");
  for (int i = 0; i < 3; ++i) {
    std::printf("    %-14s %8.3f   %12.2fx         %8.2fx       %5.0f%% of the run\n", names[i],
                ms[i], ratio(ms[0], ms[i]), ratio(ms[i], bound.ms()),
                100.0 * share_with_all_stages_busy(drawn[i]));
  }
}

// Times the pipeline in each of the three orders (medians, when timing is on), then runs each
// once more on a timeline and checks its output against the CPU's (CHECK pipeline_<order>).
// issue(order, timeline) queues the whole pipeline in that order (timeline may be null).
template <class Issue>
void run_orders(const Buffers& b, const std::vector<cudaStream_t>& streams, const Run& run,
                const char* const* names, int iterations, Issue&& issue, double* ms,
                cs::TimelineData* drawn) {
  const std::vector<std::uint32_t> want = expected_output(b.elements, iterations);
  ForkJoin fork_join(streams.size());  // so that events on streams[0] see all streams
  for (int i = 0; i < 3 && run.measure(); ++i) {
    ms[i] = cs::time_on_stream_ms(streams[0], kWarmup, run.repeats, [&] {
              fork_join.fork(streams), issue(i, nullptr), fork_join.join(streams);
            }).median;
  }
  for (int i = 0; i < 3; ++i) {
    clear_outputs(b);
    cs::Timeline timeline;
    timeline.start(streams[0]);
    fork_join.fork(streams), issue(i, &timeline), fork_join.join(streams);
    drawn[i] = timeline.collect();
    CS_CHECK(cudaDeviceSynchronize());
    cs::verify(std::string("pipeline_") + names[i], b.host_out, want.data(), b.elements);
  }
}

// Part chunks' sweep: the same pipeline at 1, 2, 4, ... 1024 chunks. At each count: the stages,
// the serial and the overlapped time, the bound, and whether the output matches the CPU's.
// issue(C, serial) queues the pipeline at C chunks over the streams (all in streams[0] if serial).
struct Sweep {
  std::vector<int> counts;
  std::vector<double> overlapped_ms, bound_ms, over_bound, over_floor;
  int wrong = 0;         // chunk counts whose output differs from the CPU reference
  std::size_t best = 0;  // index of the fastest chunk count
  // The worst overlapped / bound, the lowest overlapped / floor, and one chunk's time / the best
  // count's (0 when nothing was timed).
  double worst() const {
    return over_bound.empty() ? 0 : *std::max_element(over_bound.begin(), over_bound.end());
  }
  double lowest() const {  // of overlapped / floor
    return over_floor.empty() ? 0 : *std::min_element(over_floor.begin(), over_floor.end());
  }
  double best_vs_one() const {
    return over_bound.empty() ? 0 : ratio(overlapped_ms[0], overlapped_ms[best]);
  }
};
template <class Issue>
Sweep sweep_chunk_counts(const Buffers& b, const std::vector<cudaStream_t>& streams, int engines,
                         int repeats, bool measure, const Model& m, const Launch& launch,
                         Issue&& issue) {
  Sweep sweep;
  ForkJoin fork_join(streams.size());
  cudaStream_t pair[2];  // the copies of both directions at once: two streams created together
  for (cudaStream_t& stream : pair) CS_CHECK(cudaStreamCreate(&stream));
  const std::vector<std::uint32_t> want = expected_output(b.elements, m.iterations);
  if (measure)
    std::printf(
        "  chunks  chunk size   serial ms  overlapped ms   bound ms  paced by  time/bound\n");
  for (int c = 1; c <= 1024; c *= 2) {
    clear_outputs(b);
    if (measure) {
      Stages st =
          measure_stages(b, c, pair[0], pair[1], engines, repeats, m.iterations, false, launch);
      if (engines >= 2)  // each direction alone: the plain copy plus C fixed costs on the GPU
        for (int i = 0; i < 2; ++i)
          (i == 0 ? st.h2d_ms : st.d2h_ms) = m.plain_ms[i] + c * m.cost.gpu_copy_ms;
      const double serial =
          cs::time_on_stream_ms(streams[0], kWarmup, repeats, [&] { issue(c, true); }).median;
      sweep.overlapped_ms.push_back(cs::time_on_stream_ms(streams[0], kWarmup, repeats, [&] {
                                      fork_join.fork(streams), issue(c, false);
                                      fork_join.join(streams);
                                    }).median);
      // No issue time of the runs it bounds: a host that issued slowly must not raise its bound.
      const Bound bound =
          pipeline_bound(st, c, static_cast<int>(streams.size()), engines, serial, m.cost);
      sweep.bound_ms.push_back(bound.ms());
      sweep.over_bound.push_back(ratio(sweep.overlapped_ms.back(), bound.ms()));
      sweep.over_floor.push_back(ratio(sweep.overlapped_ms.back(), bound.floor_ms));
      std::printf("  %6d  %10s  %10.3f  %13.3f  %9.3f  %-8s  %9.2fx\n", c,
                  cs::format_bytes(4.0 * b.begin(1, c)).c_str(), serial, sweep.overlapped_ms.back(),
                  bound.ms(), bound.pacer(), sweep.over_bound.back());
      if (sweep.overlapped_ms.back() < sweep.overlapped_ms[sweep.best])
        sweep.best = sweep.overlapped_ms.size() - 1;
    } else {
      issue(c, false);
    }
    CS_CHECK(cudaDeviceSynchronize());
    sweep.wrong += std::equal(b.host_out, b.host_out + b.elements, want.begin()) ? 0 : 1;
    sweep.counts.push_back(c);
  }
  for (cudaStream_t stream : pair) CS_CHECK(cudaStreamDestroy(stream));
  return sweep;
}

// Part chunks' curve for --chunks-svg: overlapped time and bound (ms) against the chunk counts,
// drawn evenly spaced; exits 2 naming the flag when the file cannot be written.
inline void write_sweep_svg(const std::string& path, const Buffers& b, int streams,
                            const Sweep& sweep) {
  const double width = 640, height = 360, left = 60, top = 40, plot_w = 430, plot_h = 270;
  const std::vector<double>* curves[] = {&sweep.overlapped_ms, &sweep.bound_ms};
  const char* names[] = {"overlapped", "bound"};
  const char* colors[] = {"#1f77b4", "#ff7f0e"};
  const std::vector<int>& xs = sweep.counts;
  double top_ms = 0;
  for (const std::vector<double>* curve : curves)
    for (double v : *curve) top_ms = std::max(top_ms, v);
  // Round ticks: a step of 1, 2, 2.5 or 5 times a power of ten, at most five intervals.
  const double raw_step = top_ms > 0 ? top_ms / 5 : 0.2;
  const double power = std::pow(10.0, std::floor(std::log10(raw_step)));
  double step = 10 * power;
  for (double mantissa : {5.0, 2.5, 2.0, 1.0})
    if (mantissa * power >= raw_step) step = mantissa * power;
  top_ms = std::max(1, static_cast<int>(std::ceil(top_ms / step - 1e-9))) * step;
  auto px = [&](std::size_t i) {
    return left + (xs.size() > 1 ? plot_w * i / (xs.size() - 1) : plot_w / 2);
  };
  auto py = [&](double ms) { return top + plot_h * (1 - ms / top_ms); };
  std::string svg = cs::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"100%%\" viewBox=\"0 0 %.0f %.0f\" "
      "style=\"max-width:%.0fpx;height:auto\" font-family=\"sans-serif\" font-size=\"12\">\n"
      "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n"
      "<text x=\"%.0f\" y=\"22\" font-size=\"14\">Pipeline time against chunk count (%s, %d "
      "streams)</text>\n<text x=\"%.0f\" y=\"%.0f\" text-anchor=\"middle\">chunks</text>\n"
      "<text x=\"14\" y=\"%.0f\" transform=\"rotate(-90 14 %.0f)\" "
      "text-anchor=\"middle\">ms</text>\n",
      width, height, width, left, cs::format_bytes(static_cast<double>(b.bytes)).c_str(), streams,
      left + plot_w / 2, height - 10, top + plot_h / 2, top + plot_h / 2);
  for (int t = 0; t * step <= top_ms + 1e-9; ++t) {  // the time axis: round ticks, grid lines
    svg += cs::format(
        "<line x1=\"%.0f\" y1=\"%.1f\" x2=\"%.0f\" y2=\"%.1f\" stroke=\"#ddd\"/>"
        "<text x=\"%.0f\" y=\"%.1f\" text-anchor=\"end\">%g</text>\n",
        left, py(t * step), left + plot_w, py(t * step), left - 6, py(t * step) + 4, t * step);
  }
  for (std::size_t i = 0; i < xs.size(); ++i) {
    svg += cs::format("<text x=\"%.1f\" y=\"%.0f\" text-anchor=\"middle\">%d</text>\n", px(i),
                      top + plot_h + 18, xs[i]);
  }
  for (int c = 0; c < 2; ++c) {
    std::string points;
    for (std::size_t i = 0; i < curves[c]->size() && i < xs.size(); ++i) {
      points += cs::format("%.1f,%.1f ", px(i), py((*curves[c])[i]));
      svg += cs::format("<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"%s\"/>\n", px(i),
                        py((*curves[c])[i]), colors[c]);
    }
    const double y = top + 10 + 20.0 * c, x = left + plot_w;  // the legend, right of the plot
    svg += cs::format(
        "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\" points=\"%s\"/>\n"
        "<line x1=\"%.0f\" y1=\"%.0f\" x2=\"%.0f\" y2=\"%.0f\" stroke=\"%s\" stroke-width=\"2\"/>"
        "<text x=\"%.0f\" y=\"%.0f\">%s</text>\n",
        colors[c], points.c_str(), x + 12, y, x + 32, y, colors[c], x + 38, y + 4, names[c]);
  }
  svg += "</svg>\n";
  FILE* file = std::fopen(path.c_str(), "w");
  const bool written = file && std::fwrite(svg.data(), 1, svg.size(), file) == svg.size();
  if (file) std::fclose(file);
  if (!written) cs::usage_error("--chunks-svg " + path + ": cannot write the file");
  std::printf("  Curve written to %s\n", path.c_str());
}

inline void print_best(const Sweep& s) {
  std::printf("  best: %d chunks, %.3f ms; time / bound: lowest %.2fx, median %.2fx, worst %.2fx\n",
              s.counts[s.best], s.overlapped_ms[s.best],
              *std::min_element(s.over_bound.begin(), s.over_bound.end()), cs::median(s.over_bound),
              s.worst());
}

// Part pipeline's figures where the streams cannot overlap as the bound assumes.
inline void print_no_overlap(const std::string& reason, const double* ms) {
  std::printf(
      "  Here, %s:\n  depth-first takes %.2fx and breadth-first %.2fx of the serial time.\n",
      reason.c_str(), ratio(ms[1], ms[0]), ratio(ms[2], ms[0]));
}

inline void print_shape(const Buffers& b, int chunks, int streams) {
  std::printf("  %d chunk%s of %s%s over %d stream%s\n", chunks, chunks == 1 ? "" : "s",
              cs::format_bytes(4.0 * b.begin(1, chunks)).c_str(),
              b.elements % chunks ? " (sizes differ by one element at most)" : "", streams,
              streams == 1 ? "" : "s");
  if (streams > chunks) std::printf("  (only %d of the %d streams get a chunk)\n", chunks, streams);
}

const char* const kOrderTitles[] = {
    "Serial: every chunk in stream 0, nothing overlaps",
    "Depth-first: for each chunk, its H2D, kernel and D2H in its stream",
    "Breadth-first: for each wave of one chunk per stream, all H2Ds, all kernels, all D2Hs"};

}  // namespace lab
