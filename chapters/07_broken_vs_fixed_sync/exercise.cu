// Exercise for chapter 07: copies in a second stream that race their producer.
//
// The task
//   A compute stream produces the data chunk by chunk (each chunk's kernel first waits 8 ms on the
//   GPU, then writes values that differ from round to round). To overlap the copies with the
//   computation, each chunk is copied to the host in a second stream, the copy stream, as soon as
//   that chunk is done: the copy stream waits for an event per chunk. The host waits for the copy
//   stream and then reads the host buffer. As given, the host reads old values, every time, and
//   the CHECK line says so. Fix the ordering, without making the host wait for the computation
//   (a second CHECK line measures the host's time to issue a round). The line marked
//   TODO(exercise) is where to look. Do not change the kernels, the streams or the bars.
//
// Build, run and test
//   cmake --preset exercises && cmake --build --preset exercises
//   build-exercises/bin/07_broken_vs_fixed_sync_exercise
//   ctest --preset exercises -R '^07_broken_vs_fixed_sync_exercise\.'
//
// What it prints
//   The host's time to issue a round, an ASCII timeline of the first round (K = kernel, D = copy
//   to the host), and the CHECK lines: every round's host buffer against the CPU, and issuing a
//   round took at most half of one chunk's delay.

#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "cuda_streams.hpp"
#include "cuda_streams/device_clock.cuh"

namespace bars {
// The host's time to issue a round over one chunk's delay: tens of microseconds against 8 ms when
// the GPU orders the copies; a host that waits for the kernels needs several chunks' delays.
constexpr double kIssueOfChunkDelayMax = 0.5;
}  // namespace bars

constexpr int kBlock = 256;

using cs::globaltimer_ns;  // the GPU's nanosecond clock, from cuda_streams/device_clock.cuh

__global__ void delay_kernel(unsigned long long ns) {
  const unsigned long long start = globaltimer_ns();
  while (globaltimer_ns() - start < ns) {
  }
}

__host__ __device__ std::uint32_t chunk_value(int round, std::size_t i) {
  return static_cast<std::uint32_t>(round + 1) * 7919u + 3u * static_cast<std::uint32_t>(i);
}

// Writes elements [first, first + count) of round `round`.
__global__ void fill_chunk(std::uint32_t* data, std::size_t first, std::size_t count, int round) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += stride) {
    data[first + i] = chunk_value(round, first + i);
  }
}

int main(int argc, char** argv) {
  int rounds = 3;
  int chunk_count = 4;
  std::size_t elements = 4 << 20;
  int delay_ms = 8;
  cs::CommonOptions common;
  cs::Options options("07_broken_vs_fixed_sync_exercise",
                      "Exercise: copies in a second stream must wait for the chunks they copy.");
  options.add_int("rounds", &rounds, 1, 20, "rounds of the whole pipeline");
  options.add_int("chunks", &chunk_count, 1, 32, "chunks per round");
  options.add_size("elements", &elements, 32, 64 << 20, "values per round");
  options.add_int("delay-ms", &delay_ms, 2, 100, "how long each chunk's kernel waits, in ms");
  cs::add_common_options(options, &common);
  cs::parse_or_exit(options, argc, argv);

  const cudaDeviceProp prop = cs::select_device(common.device);
  const int grid = 4 * prop.multiProcessorCount;
  const std::size_t bytes = elements * sizeof(std::uint32_t);
  const auto chunks = static_cast<std::size_t>(chunk_count);
  std::uint32_t* data = nullptr;
  std::uint32_t* host = nullptr;
  CS_CHECK(cudaMalloc(&data, bytes));
  CS_CHECK(cudaMallocHost(&host, bytes));
  cudaStream_t compute_stream = nullptr;
  cudaStream_t copy_stream = nullptr;
  CS_CHECK(cudaStreamCreateWithFlags(&compute_stream, cudaStreamNonBlocking));
  CS_CHECK(cudaStreamCreateWithFlags(&copy_stream, cudaStreamNonBlocking));
  std::vector<cudaEvent_t> computed(chunks);
  for (cudaEvent_t& event : computed) {
    CS_CHECK(cudaEventCreateWithFlags(&event, cudaEventDisableTiming));
  }

  // Every kernel once before the rounds (a first launch loads the module, and loading may wait
  // for running work); then the device buffer holds zeros.
  delay_kernel<<<1, 32, 0, compute_stream>>>(1000);
  fill_chunk<<<grid, kBlock, 0, compute_stream>>>(data, 0, elements, -1);
  CS_CHECK_LAUNCH();
  CS_CHECK(cudaMemsetAsync(data, 0, bytes, compute_stream));
  CS_CHECK(cudaStreamSynchronize(compute_stream));

  const auto delay_ns = static_cast<unsigned long long>(delay_ms) * 1000000ull;
  std::vector<std::uint32_t> want(elements);
  cs::Comparison results;
  std::vector<double> issue_ms;
  cs::Timeline timeline;
  timeline.start(compute_stream);
  for (int round = 0; round < rounds; ++round) {
    cs::Timeline* draw = round == 0 ? &timeline : nullptr;
    const double begin = cs::host_now_ms();
    for (std::size_t c = 0; c < chunks; ++c) {
      const std::size_t first = elements * c / chunks;
      const std::size_t count = elements * (c + 1) / chunks - first;
      const std::string detail = "chunk " + std::to_string(c);
      int span = draw ? draw->begin("compute stream", "kernel", compute_stream, detail) : -1;
      delay_kernel<<<1, 32, 0, compute_stream>>>(delay_ns);
      fill_chunk<<<grid, kBlock, 0, compute_stream>>>(data, first, count, round);
      CS_CHECK_LAUNCH();
      if (draw) draw->end(span, compute_stream);

      // Mark the chunk as computed, and make the copy stream wait for the mark.
      // TODO(exercise): the copy stream does wait for this event, yet the copy reads the chunk
      // before the kernels above have written it. What point does the event mark?
      CS_CHECK(cudaEventRecord(computed[c], copy_stream));
      CS_CHECK(cudaStreamWaitEvent(copy_stream, computed[c], 0));
      span = draw ? draw->begin("copy stream", "D2H", copy_stream, detail) : -1;
      CS_CHECK(cudaMemcpyAsync(host + first, data + first, count * sizeof(std::uint32_t),
                               cudaMemcpyDeviceToHost, copy_stream));
      if (draw) draw->end(span, copy_stream);
    }
    issue_ms.push_back(cs::host_now_ms() - begin);

    // The host waits for the copies, then reads; the next round may overwrite the device buffer
    // only once this round's kernels and copies are done, so it waits for both streams.
    CS_CHECK(cudaStreamSynchronize(copy_stream));
    for (std::size_t i = 0; i < elements; ++i) want[i] = chunk_value(round, i);
    const cs::Comparison one = cs::compare(host, want.data(), elements);
    results.total += one.total;
    results.wrong += one.wrong;
    for (const cs::Mismatch& m : one.first) {
      if (results.first.size() < 5) results.first.push_back(m);
    }
    CS_CHECK(cudaStreamSynchronize(compute_stream));
  }

  cs::publish_timeline(timeline.collect(), common,
                       "The first round (K = kernel, D = copy to the host):");
  const double issue = cs::median(issue_ms);
  std::printf(
      "%d rounds of %d chunks (%zu values per round), each chunk's kernel waits %d ms; "
      "the host issued a round in %.4f ms (median)\n",
      rounds, chunk_count, elements, delay_ms, issue);
  cs::report_comparison("host_buffer", results);
  if (common.no_timing) {
    cs::check_skipped("host_not_blocked", "--no-timing");
  } else {
    cs::check("host_not_blocked", issue / delay_ms, cs::Compare::at_most,
              bars::kIssueOfChunkDelayMax, "x",
              "time to issue a round / one chunk's delay: the GPU orders the copies");
  }

  for (cudaEvent_t event : computed) CS_CHECK(cudaEventDestroy(event));
  CS_CHECK(cudaStreamDestroy(copy_stream));
  CS_CHECK(cudaStreamDestroy(compute_stream));
  CS_CHECK(cudaFreeHost(host));
  CS_CHECK(cudaFree(data));
  return cs::finish();
}
