// Exercise for chapter 05: a consumer that does not wait for its producer.
//
// The task
//   In every round a slow producer in non-blocking stream A (it first waits 30 ms on the GPU,
//   then writes values that differ from round to round) fills a buffer, and a consumer in
//   non-blocking stream B computes from that buffer and copies its result to the host. The host
//   only issues the work and then waits for stream B. As given, every value the consumer computes
//   is wrong, and the CHECK line says so. Make the consumer see the producer's values, without
//   making the host wait for the producer: a second CHECK line measures the host's time to issue a
//   round. The line marked TODO(exercise) is where to look. Do not change the kernels, the
//   streams or the bars.
//
// Build, run and test
//   cmake --preset exercises && cmake --build --preset exercises
//   build-exercises/bin/05_events_exercise
//   ctest --preset exercises -R '^05_events_exercise\.'
//
// What it prints
//   The producer's time (events), the host's time to issue a round, an ASCII timeline of the first
//   rounds (P = produce, C = consume and copy back), and the CHECK lines: every round's result
//   against the CPU, and issuing a round took at most half the producer's delay.

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "cuda_streams.hpp"
#include "cuda_streams/device_clock.cuh"

namespace bars {
// The host's time to issue one round over the producer's delay: a few tens of microseconds
// against 30 ms when the GPU does the waiting, about 1 when the host waits for the producer.
constexpr double kIssueOfDelayMax = 0.5;
}  // namespace bars

constexpr int kBlock = 256;
constexpr int kTimelineRounds = 3;

using cs::globaltimer_ns;  // the GPU's nanosecond clock, from cuda_streams/device_clock.cuh

__global__ void delay_kernel(unsigned long long ns) {
  const unsigned long long start = globaltimer_ns();
  while (globaltimer_ns() - start < ns) {
  }
}

__host__ __device__ std::uint32_t produced_value(int round, std::size_t i) {
  return static_cast<std::uint32_t>(round + 1) * 1000003u + static_cast<std::uint32_t>(i);
}

__host__ __device__ std::uint32_t consumed_value(std::uint32_t x) {
  return 3u * x + 1u;
}

__global__ void produce(std::uint32_t* data, std::size_t n, int round) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += stride) {
    data[i] = produced_value(round, i);
  }
}

__global__ void consume(const std::uint32_t* data, std::uint32_t* out, std::size_t n) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += stride) {
    out[i] = consumed_value(data[i]);
  }
}

int main(int argc, char** argv) {
  int rounds = 8;
  std::size_t elements = 1 << 20;
  int producer_ms = 30;
  cs::CommonOptions common;
  cs::Options options("05_events_exercise",
                      "Exercise: a consumer in another stream must wait for its producer.");
  options.add_int("rounds", &rounds, 1, 50, "rounds of produce and consume");
  options.add_size("elements", &elements, 1, 16 << 20, "values per round");
  options.add_int("producer-ms", &producer_ms, 5, 200, "how long the producer waits, in ms");
  cs::add_common_options(options, &common);
  cs::parse_or_exit(options, argc, argv);

  const cudaDeviceProp prop = cs::select_device(common.device);
  const int grid = 4 * prop.multiProcessorCount;
  const std::size_t bytes = elements * sizeof(std::uint32_t);
  std::uint32_t* data = nullptr;
  std::uint32_t* out = nullptr;
  std::uint32_t* host_out = nullptr;
  CS_CHECK(cudaMalloc(&data, bytes));
  CS_CHECK(cudaMalloc(&out, bytes));
  CS_CHECK(cudaMallocHost(&host_out, bytes));
  cudaStream_t producer_stream = nullptr;
  cudaStream_t consumer_stream = nullptr;
  CS_CHECK(cudaStreamCreateWithFlags(&producer_stream, cudaStreamNonBlocking));
  CS_CHECK(cudaStreamCreateWithFlags(&consumer_stream, cudaStreamNonBlocking));
  // For the producer's time, printed below.
  cudaEvent_t round_start = nullptr;
  cudaEvent_t produced = nullptr;
  CS_CHECK(cudaEventCreate(&round_start));
  CS_CHECK(cudaEventCreate(&produced));

  // Every kernel once before the rounds: a kernel's first launch loads its module, and loading may
  // wait for work already running, which would hide what this program is about.
  delay_kernel<<<1, 32, 0, producer_stream>>>(1000);
  produce<<<grid, kBlock, 0, producer_stream>>>(data, elements, -1);
  consume<<<grid, kBlock, 0, producer_stream>>>(data, out, elements);
  CS_CHECK_LAUNCH();
  CS_CHECK(cudaMemsetAsync(data, 0, bytes, producer_stream));
  CS_CHECK(cudaStreamSynchronize(producer_stream));

  const auto delay_ns = static_cast<unsigned long long>(producer_ms) * 1000000ull;
  std::vector<std::uint32_t> want(elements);
  cs::Comparison results;
  std::vector<double> issue_ms;
  std::vector<double> producer_times;
  cs::Timeline timeline;
  timeline.start(producer_stream);
  for (int round = 0; round < rounds; ++round) {
    cs::Timeline* draw = round < kTimelineRounds ? &timeline : nullptr;
    const double begin = cs::host_now_ms();

    const int produce_span =
        draw ? draw->begin("stream A (producer)", "produce", producer_stream) : -1;
    CS_CHECK(cudaEventRecord(round_start, producer_stream));
    delay_kernel<<<1, 32, 0, producer_stream>>>(delay_ns);
    produce<<<grid, kBlock, 0, producer_stream>>>(data, elements, round);
    CS_CHECK_LAUNCH();
    CS_CHECK(cudaEventRecord(produced, producer_stream));
    if (draw) draw->end(produce_span, producer_stream);

    // TODO(exercise): the consumer below computes from `data` before the producer has written it.
    // Chapter 05 shows how one stream waits for a point in another, with the host not blocked.
    const int consume_span =
        draw ? draw->begin("stream B (consumer)", "consume", consumer_stream) : -1;
    consume<<<grid, kBlock, 0, consumer_stream>>>(data, out, elements);
    CS_CHECK_LAUNCH();
    CS_CHECK(cudaMemcpyAsync(host_out, out, bytes, cudaMemcpyDeviceToHost, consumer_stream));
    if (draw) draw->end(consume_span, consumer_stream);
    issue_ms.push_back(cs::host_now_ms() - begin);

    // The host reads the result; the next round's producer must not start before this round's
    // consumer is done either, so the host waits for both streams before the next round.
    CS_CHECK(cudaStreamSynchronize(consumer_stream));
    CS_CHECK(cudaStreamSynchronize(producer_stream));
    for (std::size_t i = 0; i < elements; ++i) want[i] = consumed_value(produced_value(round, i));
    const cs::Comparison one = cs::compare(host_out, want.data(), elements);
    results.total += one.total;
    results.wrong += one.wrong;
    for (const cs::Mismatch& m : one.first) {
      if (results.first.size() < 5) results.first.push_back(m);
    }
    float ms = 0;
    CS_CHECK(cudaEventElapsedTime(&ms, round_start, produced));
    producer_times.push_back(ms);
  }

  cs::publish_timeline(timeline.collect(), common,
                       "The first rounds (P = produce, C = consume and copy back):");
  const double issue = cs::median(issue_ms);
  std::printf(
      "%d rounds of %zu values; the producer took %.2f ms (events, median); the host issued "
      "a round in %.4f ms (median)\n",
      rounds, elements, cs::median(producer_times), issue);
  cs::report_comparison("consumer_results", results);
  if (common.no_timing) {
    cs::check_skipped("host_not_blocked", "--no-timing");
  } else {
    cs::check("host_not_blocked", issue / producer_ms, cs::Compare::at_most, bars::kIssueOfDelayMax,
              "x", "time to issue a round / the producer's delay: the GPU does the waiting");
  }

  CS_CHECK(cudaEventDestroy(round_start));
  CS_CHECK(cudaEventDestroy(produced));
  CS_CHECK(cudaStreamDestroy(producer_stream));
  CS_CHECK(cudaStreamDestroy(consumer_stream));
  CS_CHECK(cudaFreeHost(host_out));
  CS_CHECK(cudaFree(out));
  CS_CHECK(cudaFree(data));
  return cs::finish();
}
