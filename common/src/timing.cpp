#include "cuda_streams/timing.hpp"

#include <algorithm>
#include <stdexcept>

namespace cs {

double median(std::vector<double> samples) {
  if (samples.empty()) throw std::invalid_argument("median of no samples");
  std::sort(samples.begin(), samples.end());
  const std::size_t middle = samples.size() / 2;
  if (samples.size() % 2 == 1) return samples[middle];
  return (samples[middle - 1] + samples[middle]) / 2.0;
}

Stats summarize(const std::vector<double>& samples) {
  Stats stats;
  stats.median = median(samples);  // throws on empty
  const auto [lowest, highest] = std::minmax_element(samples.begin(), samples.end());
  stats.min = *lowest;
  stats.max = *highest;
  stats.count = static_cast<int>(samples.size());
  return stats;
}

EventTimer::EventTimer() {
  CS_CHECK(cudaEventCreate(&start_));
  CS_CHECK(cudaEventCreate(&stop_));
}

EventTimer::~EventTimer() {
  cudaEventDestroy(start_);
  cudaEventDestroy(stop_);
}

bool wait_for_flag(const volatile unsigned int* flag, unsigned int value, double timeout_ms) {
  const double from = host_now_ms();
  while (*flag != value)
    if (host_now_ms() - from > timeout_ms) return false;
  return true;
}

void EventTimer::start(cudaStream_t stream) {
  CS_CHECK(cudaEventRecord(start_, stream));
}

void EventTimer::stop(cudaStream_t stream) {
  CS_CHECK(cudaEventRecord(stop_, stream));
}

double EventTimer::elapsed_ms() {
  CS_CHECK(cudaEventSynchronize(stop_));
  float ms = 0.0f;
  CS_CHECK(cudaEventElapsedTime(&ms, start_, stop_));
  return ms;
}

}  // namespace cs
