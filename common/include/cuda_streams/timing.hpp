/**
 * @file timing.hpp
 * @brief Event timers, warm-up and repeats, the statistics of the samples, and a host wait for
 * a flag in mapped memory.
 *
 * Timing on a shared GPU is noisy. Every measurement in the chapters runs a
 * few warm-up iterations (module loading, first-touch page mapping and clock
 * ramp-up stay out of the numbers), then several timed repeats. Stats holds
 * their median, which a single slow outlier cannot move, and their minimum,
 * the fastest run, which is what counts where noise can only add time (a time
 * that starts before the timed work is issued, on the host's clock or at an
 * event recorded ahead of the work).
 */
#pragma once

#include <cuda_runtime.h>

#include <chrono>
#include <string>
#include <vector>

#include "cuda_streams/check.hpp"

namespace cs {

/// A summary of repeated measurements, all in the samples' unit.
struct Stats {
  double median = 0;  ///< the middle sample (mean of the two middle ones for an even count)
  double min = 0;     ///< the fastest sample
  double max = 0;     ///< the slowest sample
  int count = 0;      ///< how many samples
};

/// The median of @p samples; throws std::invalid_argument when it is empty.
double median(std::vector<double> samples);

/// Median, minimum, maximum and count of @p samples; throws std::invalid_argument when empty.
Stats summarize(const std::vector<double>& samples);

/// @p a / @p b, or 0 when @p b is not positive: a ratio of measurements that is never negative or
/// infinite (where nothing was timed, it is 0).
inline double ratio(double a, double b) {
  return b > 0 ? a / b : 0;
}

/// Milliseconds on the host's steady clock since an arbitrary origin.
inline double host_now_ms() {
  using namespace std::chrono;
  return duration<double, std::milli>(steady_clock::now().time_since_epoch()).count();
}

/// Waits on the host until a GPU (or another thread) stores @p value into @p flag, polling mapped
/// host memory; true when it came, false after @p timeout_ms (a flag that never comes is a bug to
/// report, not a reason to hang).
bool wait_for_flag(const volatile unsigned int* flag, unsigned int value, double timeout_ms);

/// A pair of CUDA events that time the work issued between start() and stop() on one stream.
class EventTimer {
 public:
  EventTimer();
  ~EventTimer();
  EventTimer(const EventTimer&) = delete;
  EventTimer& operator=(const EventTimer&) = delete;

  /// Records the start event on @p stream.
  void start(cudaStream_t stream = nullptr);
  /// Records the stop event on @p stream.
  void stop(cudaStream_t stream = nullptr);
  /// Waits for the stop event and returns the milliseconds between the two events.
  double elapsed_ms();

 private:
  cudaEvent_t start_ = nullptr;
  cudaEvent_t stop_ = nullptr;
};

/**
 * @brief Times @p work with events on @p stream: @p warmup untimed runs, then @p repeats timed
 * ones.
 *
 * @p work must issue its GPU work into @p stream (or into streams that
 * @p stream waits on before the stop event). A launch error in any run exits, naming it: it stays
 * in cudaGetLastError() until read, and no synchronize reports it, so a kernel that never ran
 * would otherwise be timed as a fast one.
 */
template <class Work>
Stats time_on_stream_ms(cudaStream_t stream, int warmup, int repeats, Work&& work) {
  for (int i = 0; i < warmup; ++i) work();
  CS_CHECK(cudaStreamSynchronize(stream));
  EventTimer timer;
  std::vector<double> samples;
  for (int i = 0; i < repeats; ++i) {
    timer.start(stream);
    work();
    timer.stop(stream);
    samples.push_back(timer.elapsed_ms());
  }
  CS_CHECK_LAUNCH();
  return summarize(samples);
}

/// Host times of one piece of work: until its calls returned, and until the device finished it.
struct IssueAndDone {
  Stats issue;  ///< from the first call to the return of the last one
  Stats done;   ///< from the first call to the end of cudaDeviceSynchronize()
};

/**
 * @brief Times @p work on the host clock between two cudaDeviceSynchronize() calls, and the
 * part of that time spent issuing it (until @p work returns).
 *
 * Issue time is the host's share: launches that return at once cost the host little however
 * long the work runs; a host that launches one kernel at a time pays per launch. A launch error
 * in any run exits, naming it (see time_on_stream_ms()).
 */
template <class Work>
IssueAndDone time_issue_and_device_ms(int warmup, int repeats, Work&& work) {
  for (int i = 0; i < warmup; ++i) work();
  CS_CHECK(cudaDeviceSynchronize());
  std::vector<double> issued, done;
  for (int i = 0; i < repeats; ++i) {
    const double begin = host_now_ms();
    work();
    issued.push_back(host_now_ms() - begin);
    CS_CHECK(cudaDeviceSynchronize());
    done.push_back(host_now_ms() - begin);
  }
  CS_CHECK_LAUNCH();
  return {summarize(issued), summarize(done)};
}

/**
 * @brief Times @p work on the host clock between two cudaDeviceSynchronize() calls.
 *
 * For work spread over many streams, where no single stream sees it all.
 * The time includes the host's launch overhead, which is part of what such
 * work costs.
 */
template <class Work>
Stats time_device_ms(int warmup, int repeats, Work&& work) {
  return time_issue_and_device_ms(warmup, repeats, work).done;
}

}  // namespace cs
