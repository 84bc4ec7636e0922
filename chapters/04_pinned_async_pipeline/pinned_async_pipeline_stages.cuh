// Chapter 04's measurements without the pipeline, which a reader may skip (the lesson's part 4
// says what they are): each stage's time alone, both copy directions at once, the kernel's
// calibration, and the fixed cost of one operation; lab::Model holds them, lab::Bound uses them.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "cuda_streams.hpp"
#include "pinned_async_pipeline_lab.cuh"

namespace lab {

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
  return cs::time_on_stream_ms(on, 1, repeats, all_chunks).median;
}

// The fixed costs, on 3 rounds of 200 copies of `bytes` and 200 empty launches.
inline void measure_op_costs(Model& m, const Buffers& b, std::size_t bytes, double plain_gbps,
                             cudaStream_t stream) {
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
    for (int i = 0; i < kOps; ++i) {
      scramble<<<1, kBlock, 0, stream>>>(b.dev_out, b.dev_in, 1, 0, kMultiplier, kIncrement);
      CS_CHECK_LAUNCH();
    }
    host_launch.push_back((cs::host_now_ms() - t0) / kOps);
    // On the GPU: hold the stream (ns) until the host has queued every copy, then time them.
    hold_stream<<<1, 1, 0, stream>>>(1e6 * (0.5 + 4 * kOps * host_copy.back()));
    CS_CHECK_LAUNCH();
    CS_CHECK(cudaEventRecord(start, stream));
    copies();
    CS_CHECK(cudaEventRecord(stop, stream));
    CS_CHECK(cudaEventSynchronize(stop));
    float ms = 0;
    CS_CHECK(cudaEventElapsedTime(&ms, start, stop));
    gpu_copy.push_back(std::max(0.0, ms / kOps - ratio(1.0 * bytes, plain_gbps * 1e6)));
  }
  CS_CHECK(cudaEventDestroy(start));
  CS_CHECK(cudaEventDestroy(stop));
  // The host's costs enter a floor: the fastest round (a median put one above a run's time).
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
    CS_CHECK(cudaEventDestroy(start));
    CS_CHECK(cudaEventDestroy(up_done));
    CS_CHECK(cudaEventDestroy(down_done));
    for (int d = 0; d < 2; ++d) m.both[d] = cs::median(times[d]);
    for (int d = 0; d < 2 && calibrated; ++d) m.alone[2 * d] = m.plain_ms[d] + C * m.gpu_copy_ms;
  }
  if (calibrated) m.alone[1] = stage_alone_ms(b, C, 1, m.iterations, up, repeats);
  return m;
}

// Times the copies of a C-chunk pipeline (C = --chunks), sizes the kernel to 0.9 of one chunk's
// copy inside the pipeline (so that the copy engines pace it), then times the kernel stage and
// the fixed cost of one operation.
inline Model measure_model(const Buffers& b, const Run& run, cudaStream_t up) {
  Model m;
  if (!run.measure()) return m;  // the defaults: nothing is timed
  const int C = run.chunks, repeats = run.repeats, engines = run.engines;
  cudaStream_t pair[2];  // the copies of both directions at once: two streams created together
  for (cudaStream_t& stream : pair) CS_CHECK(cudaStreamCreate(&stream));
  auto h2d = [&] { CS_CHECK(cudaMemcpy(b.dev_in, b.host_in, b.bytes, cudaMemcpyHostToDevice)); };
  auto d2h = [&] { CS_CHECK(cudaMemcpy(b.host_out, b.dev_out, b.bytes, cudaMemcpyDeviceToHost)); };
  m.plain_ms[0] = cs::time_on_stream_ms(nullptr, 1, repeats, h2d).median;
  m.plain_ms[1] = cs::time_on_stream_ms(nullptr, 1, repeats, d2h).median;
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
  m.iterations = 1024;
  for (int round = 0; round < 3; ++round) {
    const double ms = kernel_ms(b.size(0, C), m.iterations, 1, 5);
    const double scaled = ms > 0 ? m.iterations * (0.9 * m.copy_pace_ms) / ms : 1 << 20;
    m.iterations = static_cast<int>(std::min<double>(1 << 20, std::max(1.0, std::round(scaled))));
  }
  m.alone[1] = stage_alone_ms(b, C, 1, m.iterations, up, repeats);
  // The fixed cost of one operation, on copies of one chunk but 8 MiB at most.
  const std::size_t cost_bytes = std::min(4 * b.begin(1, C), std::size_t{8} << 20);
  measure_op_costs(m, b, cost_bytes, ratio(1.0 * b.bytes, m.plain_ms[0] * 1e6), up);
  for (cudaStream_t stream : pair) CS_CHECK(cudaStreamDestroy(stream));
  return m;
}

}  // namespace lab
